"""Codebooks for formats that store a table and an index a value (SOG, scenes/sog.py): scalars into 256 levels,
and vectors (the SH bands beyond the DC colour) into a palette of up to 65,536 entries. Both are deterministic
for a given input.

- `scalar_codebook`: one dimension, by dynamic programming over a histogram of the values (`_split_levels`): the
  best split of the sorted values into runs, one level a run. Each value's label is its nearest level (the
  midpoints between levels decide), so a value's error is its distance to the codebook.
- `vector_palette`: k-means (Lloyd's iterations) on two levels, so that a palette of P entries over N vectors of
  D dimensions costs about N (sqrt(P) + P / sqrt(P)) D an iteration rather than N P D: a coarse k-means of
  C = sqrt(P) cells, then within each cell a k-means of its share of the palette (shares by the cell's squared
  error, so that the spread-out vectors get the entries and a cell of near-equal vectors, such as the Gaussians
  whose higher SH bands are about zero, does not take entries it cannot use). A vector's label is its nearest
  entry among its cell's. Flat k-means of 65,536 entries over a million 45-float vectors is about 6 TFLOP an
  iteration: minutes a pass on a 2-core CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

LEVELS = 256  # entries of a scalar codebook: one byte an index
BINS = 1024  # the histogram a scalar codebook is fitted to: 4 bins a level
ROWS_AT_ONCE = 1 << 15  # vectors whose distances to the entries are computed at a time (bounds the temporaries)


def scalar_codebook(values: Tensor, levels: int = LEVELS, *, bins: int = BINS) -> tuple[Tensor, Tensor]:
    """values [...] -> (codebook [levels] f32 ascending, labels [...] int64 in [0, levels)): the levels that split
    a histogram of the values best (`_split_levels`), each value labelled with its nearest level. With at most
    `levels` distinct values, every one is a level and the labels are exact."""
    flat = values.detach().reshape(-1).to(torch.float64).cpu()
    if flat.numel() == 0:
        return torch.zeros(levels), torch.zeros(values.shape, dtype=torch.int64)
    distinct = torch.unique(flat)  # ascending
    if len(distinct) <= levels:
        book = torch.cat([distinct, distinct[-1:].expand(levels - len(distinct))])
    else:
        book = torch.from_numpy(_split_levels(torch.sort(flat).values.numpy(), levels, bins))
    labels = nearest_level(book, flat)
    return book.to(torch.float32), labels.reshape(values.shape)


def _split_levels(ordered: np.ndarray, levels: int, bins: int) -> np.ndarray:
    """[levels] ascending levels for sorted values [M], by dynamic programming over a histogram of `bins` bins.

    A bin's place blends the value's rank and its value (half each), so that a dense middle and a sparse tail
    both get bins. Each bin stands for its values' mean, weighted by the square root of their count: a level
    serves a run of consecutive bins, and the DP picks the runs that minimise the weighted squared error exactly
    (`best[j]`: bins 0..j in the levels so far). Weighting by the count itself would be the plain squared error,
    which leaves a long tail's few values (the largest Gaussians' scales) far from any level; the square root
    keeps them close at a small cost in the mean (on a real SH-3 scene's log scales: RMS 0.0076 against 0.0074,
    the largest error 0.029 against 0.057). Lloyd's iterations from the quantiles stopped at 0.022 and 0.62
    there: in one dimension they settle far from the best split."""
    m = len(ordered)
    lo, hi = float(ordered[0]), float(ordered[-1])
    place = 0.5 * np.arange(m) / m + 0.5 * (ordered - lo) / (hi - lo)
    b = np.minimum((place * bins).astype(np.int64), bins - 1)
    counts = np.bincount(b, minlength=bins).astype(np.float64)
    full = counts > 0
    mean = np.bincount(b, weights=ordered, minlength=bins)[full] / counts[full]
    weight = np.sqrt(counts[full])
    h = len(mean)
    w, wx, wxx = (np.concatenate([[0.0], np.cumsum(v)]) for v in (weight, weight * mean, weight * mean * mean))
    first, last = np.arange(h)[:, None], np.arange(h)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):  # runs that end before they start: inf
        run_w, run_wx = w[last + 1] - w[first], wx[last + 1] - wx[first]
        cost = np.where(last >= first, wxx[last + 1] - wxx[first] - run_wx * run_wx / run_w, np.inf)  # [first, last]
    k = min(levels, h)
    best, starts = cost[0].copy(), []  # best[j]: bins 0..j in one level
    for _ in range(1, k):  # one more level: bins 0..j as bins 0..s in the levels so far and s+1..j in the new one
        total = best[:-1, None] + cost[1:, :]  # [s, j]
        split = total.argmin(0)
        best = total[split, np.arange(h)]
        starts.append(split + 1)
    book, end = np.empty(k), h - 1
    for level in range(k - 1, -1, -1):
        start = starts[level - 1][end] if level else 0
        book[level] = (wx[end + 1] - wx[start]) / (w[end + 1] - w[start])
        end = start - 1
    book.sort()
    return np.concatenate([book, np.full(levels - k, book[-1])])


def nearest_level(book: Tensor, values: Tensor) -> Tensor:
    """values [...] -> [...] int64: the index of each value's nearest entry of an ascending codebook [L]."""
    mids = (book[:-1] + book[1:]) / 2
    return torch.searchsorted(mids.to(values.dtype).contiguous(), values.contiguous())


def vector_palette(
    x: Tensor, size: int, iterations: int = 10, *, seed: int = 0, progress: Callable[[float], None] | None = None
) -> tuple[Tensor, Tensor]:
    """x [N, D] f32 -> (palette [P, D] f32 with P <= size, labels [N] int64 into it). At most `size` distinct rows
    come back exactly (the palette is those rows); otherwise the two-level k-means of the module docstring, seeded
    by `seed`. `progress(fraction)` is called as the cells are done."""
    x = x.detach().to(torch.float32).cpu().contiguous()
    n = len(x)
    exact = _few_distinct_rows(x, size)
    if exact is not None:
        return exact
    gen = torch.Generator().manual_seed(seed)
    cells = max(1, min(int(math.isqrt(size)), size))
    # the coarse cells, fitted on a sample (64 rows a cell suffice to place them), then every row assigned once
    sample = x[torch.randperm(n, generator=gen)[: 64 * cells]]
    coarse = _kmeans(sample, cells, iterations, gen)
    cell, error = _assign(x, coarse)
    counts = torch.bincount(cell, minlength=cells)
    shares = _shares(torch.zeros(cells, dtype=torch.float64).index_add_(0, cell, error.double()), counts, size)
    order = torch.argsort(cell, stable=True)
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])
    palette, labels, used = [], torch.empty(n, dtype=torch.int64), 0
    for c in range(cells):
        rows = order[starts[c] : starts[c + 1]]
        if len(rows) == 0:
            continue
        entries = _kmeans(x[rows], int(shares[c]), iterations, gen)
        labels[rows] = _assign(x[rows], entries)[0] + used
        palette.append(entries)
        used += len(entries)
        if progress is not None:
            progress(float(starts[c + 1]) / n)
    return torch.cat(palette), labels


PRIME = 2_147_483_629  # the largest prime below 2^31: products of two residues fit an int64


def _few_distinct_rows(x: Tensor, limit: int) -> tuple[Tensor, Tensor] | None:
    """(the distinct rows of x [N, D], each row's index among them) where there are at most `limit`, else None.

    Without sorting the rows (torch.unique over rows peaked at 3.5x a 2M x 45 input): each row's bits hash to a
    62-bit key, two sums of residues times random factors mod PRIME in exact integer arithmetic, so equal rows
    always share a key; the keys are counted, and only at most `limit` of them is each row checked against its
    key's first row (a collision, about N^2 / 2^62 likely, falls back to torch.unique)."""
    gen = torch.Generator().manual_seed(1)
    bits = x.view(torch.int32)
    keys = torch.zeros(len(x), dtype=torch.int64)
    for _ in range(2):
        factors = torch.randint(1, PRIME, (x.shape[1],), generator=gen)
        h = torch.zeros(len(x), dtype=torch.int64)
        for j in range(x.shape[1]):
            h = (h + bits[:, j].long().remainder(PRIME) * factors[j]).remainder(PRIME)
        keys = keys * PRIME + h
    distinct, inverse = torch.unique(keys, return_inverse=True)
    if len(distinct) > limit:
        return None
    first = torch.full((len(distinct),), len(x), dtype=torch.int64).scatter_reduce_(
        0, inverse, torch.arange(len(x)), "amin"
    )
    rows = x[first]
    for a in range(0, len(x), ROWS_AT_ONCE):
        if not torch.equal(rows[inverse[a : a + ROWS_AT_ONCE]].view(torch.int32), bits[a : a + ROWS_AT_ONCE]):
            found, where = torch.unique(bits, dim=0, return_inverse=True)  # bits: -0.0 and 0.0 are two rows
            return (found.view(torch.float32), where) if len(found) <= limit else None
    return rows, inverse


def _shares(error: Tensor, counts: Tensor, size: int) -> Tensor:
    """[C] int64: each cell's entries out of `size`, in proportion to its squared error, at least one for a cell
    with rows and never more than its rows (largest remainders first)."""
    nonempty = counts > 0
    share = nonempty.long()  # one each
    room = counts - share
    left = size - int(share.sum())
    weight = torch.where(room > 0, error.clamp_min(0) + 1e-12, torch.zeros_like(error))
    while left > 0 and bool((room > 0).any()):
        want = weight / weight.sum() * left
        add = torch.minimum(want.floor().long(), room)
        if int(add.sum()) == 0:  # the remainders: one more each to the largest, until none is left
            rank = torch.argsort(
                torch.where(room > 0, want - want.floor(), torch.full_like(want, -1.0)), descending=True
            )
            add = torch.zeros_like(add)
            add[rank[: min(left, int((room > 0).sum()))]] = 1
        share += add
        room -= add
        left -= int(add.sum())
        weight = torch.where(room > 0, weight, torch.zeros_like(weight))
    return share


def _kmeans(x: Tensor, k: int, iterations: int, gen: torch.Generator) -> Tensor:
    """[k', D] Lloyd's centroids of x [M, D] (k' = min(k, distinct rows)), from k distinct rows picked at random;
    an entry left without members keeps its place."""
    distinct = torch.unique(x, dim=0)
    if len(distinct) <= k:
        return distinct
    entries = distinct[torch.randperm(len(distinct), generator=gen)[:k]].clone()
    for _ in range(iterations):
        label, _ = _assign(x, entries)
        sums = torch.zeros_like(entries).index_add_(0, label, x)
        counts = torch.bincount(label, minlength=k).unsqueeze(1)
        moved = torch.where(counts > 0, sums / counts.clamp_min(1), entries)
        if torch.equal(moved, entries):
            break
        entries = moved
    return entries


def _assign(x: Tensor, entries: Tensor) -> tuple[Tensor, Tensor]:
    """(labels [M] int64, squared distances [M] f32): each row's nearest entry, ROWS_AT_ONCE rows at a time."""
    sq = (entries * entries).sum(1)
    labels, errors = torch.empty(len(x), dtype=torch.int64), torch.empty(len(x))
    for a in range(0, len(x), ROWS_AT_ONCE):
        rows = x[a : a + ROWS_AT_ONCE]
        d = torch.addmm(sq, rows, entries.T, alpha=-2.0)  # |e|^2 - 2 x.e; |x|^2 is the same for every entry
        best, labels[a : a + len(rows)] = d.min(1)
        errors[a : a + len(rows)] = (best + (rows * rows).sum(1)).clamp_min(0)
    return labels, errors
