"""Binning: exact tile counts and key emission (Triton) against the torch twin and a brute-force oracle."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like
from tests.kernels.synthetic import camera, gaussians


def project(n, width, height, device, seed=0, degree=0):
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    cam = camera(width, height).packed(device)
    return ref.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=degree)


def offsets_of(tiles_touched):
    inclusive = torch.cumsum(tiles_touched, 0, dtype=torch.int64)
    return inclusive - tiles_touched, int(inclusive[-1])


@pytest.mark.parametrize("n,size", [(1, (16, 16)), (300, (37, 53)), (3000, (128, 96))], ids=str)
def test_emit_keys_matches_reference(n, size, device):
    width, height = size
    means2d, conic_opacity, depths, colors, tiles_touched, _, _ = project(n, width, height, device)
    offsets, n_pairs = offsets_of(tiles_touched)
    want_k, want_i = ref.emit_tile_keys(means2d, conic_opacity, depths, tiles_touched, offsets, n_pairs, width, height)
    out = (nan_like(torch.empty(n_pairs + 5, dtype=torch.int64, device=device)),
           nan_like(torch.empty(n_pairs + 5, dtype=torch.int32, device=device)))  # fmt: skip
    got_k, got_i = kernels.emit_tile_keys(
        means2d, conic_opacity, depths, tiles_touched, offsets, n_pairs, width, height, out=out
    )
    assert torch.equal(got_i, want_i)
    assert torch.equal(got_k, want_k), f"{int((got_k != want_k).sum())} of {n_pairs} keys differ"
    assert (got_k != kernels.SENTINEL_KEY).all(), "every slot holds a real pair when counts agree"
    assert (out[0][n_pairs:] == -1).all(), "nothing written past the last pair"


def test_keys_cover_every_contributing_pixel(device):
    """No pair is dropped that the rasterizer would blend: brute force alpha >= 1/255 at every pixel centre."""
    width, height, tile = 64, 48, 16
    means2d, co, depths, _, tiles_touched, _, _ = project(400, width, height, device, seed=3)
    offsets, n_pairs = offsets_of(tiles_touched)
    keys, ids = kernels.emit_tile_keys(means2d, co, depths, tiles_touched, offsets, n_pairs, width, height)
    pairs = set(zip(ids.tolist(), (keys >> 32).tolist()))
    ys, xs = torch.meshgrid(torch.arange(height, device=device), torch.arange(width, device=device), indexing="ij")
    px, py = xs.flatten().float() + 0.5, ys.flatten().float() + 0.5
    n_tx = (width + tile - 1) // tile
    pix_tile = (ys.flatten() // tile) * n_tx + xs.flatten() // tile
    needed = set()
    extra_allowed = 0
    for g in torch.nonzero(tiles_touched > 0).flatten().tolist():
        a, b, c, o = co[g].tolist()
        dx, dy = means2d[g, 0] - px, means2d[g, 1] - py
        sigma = 0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
        alpha = torch.clamp_max(o * torch.exp(-sigma), 0.999)
        hit = (sigma >= 0) & (alpha >= 1 / 255)
        for t in torch.unique(pix_tile[hit]).tolist():
            needed.add((g, t))
        extra_allowed += int(tiles_touched[g])
    missing = needed - pairs
    assert not missing, f"{len(missing)} contributing pairs dropped, e.g. {sorted(missing)[:5]}"
    # tightness: the continuous test may keep a pair whose ellipse passes between pixel centres, but rarely
    spare = len(pairs) - len(needed)
    assert spare <= 0.05 * len(pairs) + 2, f"{spare} of {len(pairs)} pairs reach no pixel centre"


def test_sentinel_fill_when_walk_finds_fewer(device):
    """If a count exceeds what the walk finds, the extra slots get the sentinel key (never garbage)."""
    width, height = 37, 53
    means2d, co, depths, _, tiles_touched, _, _ = project(50, width, height, device, seed=1)
    inflated = tiles_touched + (tiles_touched > 0).to(torch.int32)  # one more slot per live Gaussian
    offsets, n_pairs = offsets_of(inflated)
    keys, ids = kernels.emit_tile_keys(means2d, co, depths, inflated, offsets, n_pairs, width, height)
    n_live = int((tiles_touched > 0).sum())
    assert int((keys == kernels.SENTINEL_KEY).sum()) == n_live
    want_k, _ = ref.emit_tile_keys(means2d, co, depths, inflated, offsets, n_pairs, width, height)
    assert torch.equal(keys, want_k)
