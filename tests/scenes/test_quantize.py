"""The codebooks behind SOG writing (scenes/quantize.py): scalar codebooks against a brute-force nearest level and
an exhaustive best split, vector palettes against the rows they stand for."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from scenes.quantize import _shares, _split_levels, nearest_level, scalar_codebook, vector_palette


def _heavy_tailed(n: int, seed: int = 0) -> torch.Tensor:
    """Log-scale-like values: a dense middle and a long tail on one side."""
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(n, generator=g) * 0.5 - 5, -torch.rand(n // 50, generator=g) * 6 - 6])


def test_scalar_labels_are_each_values_nearest_level():
    values = _heavy_tailed(20_000).reshape(-1, 3)[:6000]
    book, labels = scalar_codebook(values)
    assert book.shape == (256,) and labels.shape == values.shape and labels.dtype == torch.int64
    assert bool((book[1:] >= book[:-1]).all())
    got = (book[labels] - values).abs()
    brute = (values[..., None] - book).abs().amin(-1)
    assert torch.allclose(got, brute, atol=1e-6)
    assert len(torch.unique(book)) == 256  # no level wasted on a duplicate


def test_scalar_codebook_keeps_the_tail_close():
    """The square-root weighting: no value far from a level, though the tail holds 2% of them; the mean error
    within a small factor of uniform levels' over the range, and below it where values crowd."""
    values = _heavy_tailed(50_000)
    book, labels = scalar_codebook(values)
    err = (book[labels] - values).abs()
    step = float(values.max() - values.min()) / 255
    # uniform levels: half a step at most; these reach 0.96 steps, levels by the plain squared error 1.49
    assert err.max() <= 1.2 * step
    assert err.pow(2).mean().sqrt() < 0.5 * step / np.sqrt(3)  # uniform levels: step / sqrt(12)


def test_few_distinct_values_are_exact():
    values = torch.tensor([3.0, -1.0, 3.0, 0.25, 7.5, -1.0]).repeat(100)
    book, labels = scalar_codebook(values)
    assert torch.equal(book[labels], values)
    assert float(book[-1]) == 7.5  # padded with the largest


@pytest.mark.parametrize("levels", [2, 3, 4])
def test_split_is_the_best_of_every_split(levels):
    """On a few values, where every bin holds one: the DP's levels give the least weighted error of all ways to
    cut the sorted values into `levels` runs (each bin weighted by the square root of its count: 1 here)."""
    rng = np.random.default_rng(1)
    ordered = np.sort(rng.normal(size=9) * np.array([1, 1, 1, 1, 1, 1, 1, 5, 9]))
    book = _split_levels(ordered, levels, bins=1 << 20)  # fine enough that the 9 values fall in 9 bins

    def cost(cuts) -> float:
        runs = np.split(ordered, cuts)
        return sum(float(((r - r.mean()) ** 2).sum()) for r in runs)

    best = min(cost(c) for c in itertools.combinations(range(1, 9), levels - 1))
    labels = nearest_level(torch.from_numpy(book), torch.from_numpy(ordered)).numpy()
    assert np.isclose(float(((book[labels] - ordered) ** 2).sum()), best, rtol=1e-9, atol=1e-12)


def test_palette_is_exact_with_few_distinct_rows():
    g = torch.Generator().manual_seed(2)
    rows = torch.randn(300, 9, generator=g)
    x = rows[torch.randint(0, 300, (5000,), generator=g)]
    palette, labels = vector_palette(x, 512)
    assert len(palette) == 300
    assert torch.equal(palette[labels], x)


def test_palette_finds_clusters():
    """Rows drawn around 200 centres, a palette of 1024 (two-level k-means): every row ends close to its centre,
    far closer than the centres are to each other; the palette's size and labels are in range; the same input
    gives the same palette."""
    g = torch.Generator().manual_seed(3)
    centres = torch.randn(200, 24, generator=g)
    pick = torch.randint(0, 200, (20_000,), generator=g)
    x = centres[pick] + 0.01 * torch.randn(20_000, 24, generator=g)
    palette, labels = vector_palette(x, 1024, iterations=8)
    assert len(palette) <= 1024 and int(labels.min()) >= 0 and int(labels.max()) < len(palette)
    err = (palette[labels] - x).norm(dim=1)
    assert err.max() < 0.25 * torch.cdist(centres, centres).add(torch.eye(200) * 1e9).min()
    assert float(err.pow(2).mean().sqrt()) < 0.05  # the rows' own spread about their centre: 0.01 * sqrt(24)
    again = vector_palette(x, 1024, iterations=8)
    assert torch.equal(again[0], palette) and torch.equal(again[1], labels)


def test_palette_beats_a_random_palette():
    """On spread-out rows (no clusters), the palette's error is well under that of as many rows picked at random
    and used as it is."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(8000, 15, generator=g) * torch.linspace(2, 0.1, 15)
    palette, labels = vector_palette(x, 256)
    ours = (palette[labels] - x).pow(2).sum(1).mean()
    random_rows = x[torch.randperm(8000, generator=g)[:256]]
    theirs = torch.cdist(x, random_rows).amin(1).pow(2).mean()
    assert ours < 0.9 * theirs, (float(ours), float(theirs))


def test_shares_add_up():
    error = torch.tensor([0.0, 5.0, 1.0, 0.0, 100.0], dtype=torch.float64)
    counts = torch.tensor([3, 10, 0, 1, 2])
    share = _shares(error, counts, 12)
    assert share.tolist()[2] == 0  # an empty cell gets nothing
    assert bool((share[counts > 0] >= 1).all()) and bool((share <= counts).all())
    assert int(share.sum()) == min(12, int(counts.sum()))
    assert int(share[1]) > int(share[0])  # by error, where there is room


def test_few_distinct_rows_by_their_keys(monkeypatch):
    """Rows counted by a hash of their bits: the distinct rows and each row's index among them, bit for bit; None
    above the limit; and where keys collide (a prime of 2 makes nearly all collide), the check against each key's
    first row finds it and the rows are counted by sorting instead."""
    import scenes.quantize as q

    g = torch.Generator().manual_seed(8)
    rows = torch.randn(50, 7, generator=g)
    rows[3, 2] = -0.0  # and +0.0 in row 4: different bits, different rows
    rows[4] = rows[3]
    rows[4, 2] = 0.0
    x = rows[torch.randint(0, 50, (3000,), generator=g)]
    for prime in (q.PRIME, 2):
        monkeypatch.setattr(q, "PRIME", prime)
        found, index = q._few_distinct_rows(x, 64)
        assert len(found) == len(torch.unique(x.view(torch.int32), dim=0))
        assert torch.equal(found[index].view(torch.int32), x.view(torch.int32))
        assert q._few_distinct_rows(x, 10) is None
