"""kernels/_device.py's ellipse-tile test on its own, kernel (through a harness kernel) and twin, against brute
force: the tile rows a footprint's walk visits (`tile_rows`), the tiles of each row (`row_tile_span`) and the
tile columns of its box (`tile_cols`).

Binning walks every row `tile_rows` returns, in project's count and in bin's emission. A row the ellipse does
not reach costs a step of both loops and adds no tile (its span is empty), so it changes no image and no count:
only a test of the rows themselves sees it. The brute force works from the conic's inverse in float64: the
ellipse {d : d^T conic d <= t} reaches sqrt(t Sigma_yy) above and below its mean and sqrt(t Sigma_xx) to either
side, and its x-extent over a band of heights is the union of its cross-sections, sampled finely. A tile row or
column is needed iff the band of its pixel centres (first to last) meets the extent; the walk must visit exactly
those, up to DELTA px of float rounding at either edge.
"""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kernels.reference as ref
from kernels._device import row_tile_span, tile_cols, tile_rows
from kernels.buffers import unpack_records
from tests.kernels.synthetic import projected

DELTA = 1e-3  # px: float32 rounding of the kernels' extents (coordinates up to ~200 px) is ~1e-5 px


@triton.jit
def _tile_test_kernel(
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    t_ptr,  # [N] f32
    rows_ptr,  # [N, 2] i32 out: first tile row, rows walked
    cols_ptr,  # [N, 2] i32 out: first tile column, columns of the box
    spans_ptr,  # [N, MAX_ROWS, 2] i32 out: per walked row, first tile and tile count
    N,
    n_tx,
    n_ty,
    TILE: tl.constexpr,
    MAX_ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < N
    mx = tl.load(means2d_ptr + offs * 2 + 0, mask=valid, other=0.0)
    my = tl.load(means2d_ptr + offs * 2 + 1, mask=valid, other=0.0)
    a = tl.load(conic_opacity_ptr + offs * 4 + 0, mask=valid, other=1.0)
    b = tl.load(conic_opacity_ptr + offs * 4 + 1, mask=valid, other=0.0)
    c = tl.load(conic_opacity_ptr + offs * 4 + 2, mask=valid, other=1.0)
    t = tl.load(t_ptr + offs, mask=valid, other=1.0)
    ty_lo, rows, ry = tile_rows(my, a, b, c, t, valid, n_ty, TILE)
    tx_lo, cols = tile_cols(mx, a, b, c, t, n_tx, TILE)
    tl.store(rows_ptr + offs * 2 + 0, ty_lo, mask=valid)
    tl.store(rows_ptr + offs * 2 + 1, rows, mask=valid)
    tl.store(cols_ptr + offs * 2 + 0, tx_lo, mask=valid)
    tl.store(cols_ptr + offs * 2 + 1, cols, mask=valid)
    for r in range(0, MAX_ROWS):
        row_tx, span = row_tile_span(ty_lo + r, mx, my, a, b, c, t, ry, n_tx, TILE)
        tl.store(spans_ptr + (offs * MAX_ROWS + r) * 2 + 0, row_tx, mask=valid)
        tl.store(spans_ptr + (offs * MAX_ROWS + r) * 2 + 1, tl.where(r < rows, span, 0), mask=valid)


def triton_tile_test(means2d, conic_opacity, t, n_tx, n_ty, tile, max_rows):
    n = means2d.shape[0]
    rows = torch.full((n, 2), -7, dtype=torch.int32, device=means2d.device)  # poisoned: unwritten shows
    cols = torch.full_like(rows, -7)
    spans = torch.full((n, max_rows, 2), -7, dtype=torch.int32, device=means2d.device)
    _tile_test_kernel[(triton.cdiv(n, 256),)](means2d, conic_opacity, t, rows, cols, spans, n, n_tx, n_ty,
                                              TILE=tile, MAX_ROWS=max_rows, BLOCK=256)  # fmt: skip
    return rows, cols, spans


def torch_tile_test(means2d, conic_opacity, t, n_tx, n_ty, tile, max_rows):
    mx, my = means2d.unbind(1)
    a, b, c, _ = conic_opacity.unbind(1)
    ty_lo, rows, ry = ref._tile_rows(my, a, b, c, t, torch.ones_like(mx, dtype=torch.bool), n_ty, tile)
    tx_lo, cols = ref._tile_cols(mx, a, b, c, t, n_tx, tile)
    spans = []
    for r in range(max_rows):
        row_tx, span = ref._row_tile_span(ty_lo + r, mx, my, a, b, c, t, ry, n_tx, tile)
        spans.append(torch.stack([row_tx, torch.where(r < rows, span, torch.zeros_like(span))], 1))
    return torch.stack([ty_lo, rows], 1), torch.stack([tx_lo, cols], 1), torch.stack(spans, 1)


IMPLS = {"triton": triton_tile_test, "torch": torch_tile_test}


def needed_tiles(lo: np.ndarray, hi: np.ndarray, n: int, tile: int) -> np.ndarray:
    """[G, n] bool: the tiles along one axis whose band of pixel centres, [k tile + 0.5, k tile + tile - 0.5],
    meets [lo, hi] (empty where lo > hi)."""
    k = np.arange(n) * tile
    return (k[None, :] + 0.5 <= hi[:, None]) & (k[None, :] + tile - 0.5 >= lo[:, None]) & (lo <= hi)[:, None]


def walked(first: np.ndarray, count: np.ndarray, n: int) -> np.ndarray:
    """[G, n] bool: tiles first .. first + count - 1."""
    k = np.arange(n)
    return (k[None, :] >= first[:, None]) & (k[None, :] < (first + count)[:, None])


def x_extent(a, b, c, t, y_lo, y_hi, samples: int = 1001):
    """(left, right) [G] of the ellipse's cross-sections a dx^2 + 2 b dx dy + c dy^2 <= t over dy in [y_lo, y_hi]
    (relative to the mean; +inf, -inf where no height in the band meets the ellipse), by the quadratic formula
    on `samples` heights from one end of the band to the other."""
    f = np.linspace(0.0, 1.0, samples)
    dy = y_lo[:, None] + (y_hi - y_lo)[:, None] * f[None, :]  # [G, S]
    disc = (b * b)[:, None] * dy * dy - a[:, None] * (c[:, None] * dy * dy - t[:, None])
    real = (disc >= 0) & (y_lo <= y_hi)[:, None]
    root = np.sqrt(np.where(real, disc, 0.0))
    left = np.where(real, (-b[:, None] * dy - root) / a[:, None], np.inf).min(1)
    right = np.where(real, (-b[:, None] * dy + root) / a[:, None], -np.inf).max(1)
    return left, right


def footprints(width, height, tile, device):
    """The visible Gaussians of three projections (small, usual and large footprints; some reaching past the
    image's edges): (means2d, conic_opacity, t)."""
    parts = []
    for seed, grow in ((0, 0.0), (1, 1.0), (2, 2.5)):
        records, _, tt, _, bin_t = projected(700, width, height, device, seed=seed, tile=tile)
        means2d, conics, opacities, _ = unpack_records(records)
        co = torch.cat([conics, opacities[:, None]], 1)
        if grow:  # the same ellipses, scaled: Q / s^2 <= t
            co = co.clone()
            co[:, :3] /= np.exp(grow)
        live = tt > 0
        parts.append((means2d[live], co[live], bin_t[live]))
    return [torch.cat(p) for p in zip(*parts)]


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("size,tile", [((64, 48), 8), ((37, 53), 8), ((37, 53), 16)], ids=str)
def test_walk_visits_exactly_the_rows_and_tiles_the_ellipse_reaches(impl, size, tile, device):
    width, height = size
    n_tx, n_ty = -(-width // tile), -(-height // tile)
    means2d, co, t = footprints(width, height, tile, device)
    max_rows = int(torch_tile_test(means2d, co, t, n_tx, n_ty, tile, 1)[0][:, 1].max())
    rows, cols, spans = (v.cpu().numpy() for v in IMPLS[impl](means2d, co, t, n_tx, n_ty, tile, max_rows))
    mx, my = means2d.cpu().double().numpy().T
    a, b, c = co[:, :3].cpu().double().numpy().T
    t = t.cpu().double().numpy()
    inv = np.linalg.inv(np.stack([np.stack([a, b], -1), np.stack([b, c], -1)], -2))  # Sigma = conic^-1
    ry, rx = np.sqrt(t * inv[:, 1, 1]), np.sqrt(t * inv[:, 0, 0])
    assert len(t) > 1000 and max_rows >= min(6, n_ty), "the case must hold many footprints, some of many rows"

    def check(name, got, lo, hi, n):  # got between the tiles needed by the extent shrunk and grown by DELTA
        inner, outer = needed_tiles(lo + DELTA, hi - DELTA, n, tile), needed_tiles(lo - DELTA, hi + DELTA, n, tile)
        missing, extra = inner & ~got, got & ~outer
        assert not missing.any(), f"{name}: {int(missing.any(1).sum())} footprints miss a tile they reach"
        assert not extra.any(), f"{name}: {int(extra.any(1).sum())} footprints visit a tile they do not reach"

    got_rows = walked(rows[:, 0], rows[:, 1], n_ty)
    check("rows", got_rows, my - ry, my + ry, n_ty)
    check("box columns", walked(cols[:, 0], cols[:, 1], n_tx), mx - rx, mx + rx, n_tx)
    for r in range(max_rows):
        ty = rows[:, 0] + r
        on = r < rows[:, 1]
        band_lo, band_hi = ty * tile + 0.5 - my, ty * tile + tile - 0.5 - my  # the row's pixel-centre heights
        for sign in (1, -1):  # the row's tiles lie between those of the shrunken and the grown ellipse
            grow = sign * DELTA
            left, right = x_extent(a, b, c, t, np.maximum(band_lo - grow, -ry - grow),
                                   np.minimum(band_hi + grow, ry + grow))  # fmt: skip
            need = needed_tiles(mx + left - grow, mx + right + grow, n_tx, tile) & on[:, None]
            got = walked(spans[:, r, 0], spans[:, r, 1], n_tx) & on[:, None]
            wrong = need & ~got if sign < 0 else got & ~need
            what = "miss a tile they reach" if sign < 0 else "take a tile they do not reach"
            assert not wrong.any(), f"row {r} of the walk: {int(wrong.any(1).sum())} footprints {what}"
