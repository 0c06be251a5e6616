"""Stage 3, bin: pair emission in depth order (Triton) against the torch twin and a brute-force oracle."""

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import unpack_records
from tests.kernels.synthetic import bin_all, projected


@pytest.mark.parametrize("n,size,tile", [(1, (16, 16), 8), (300, (37, 53), 8), (300, (37, 53), 16),
                                         (3000, (128, 96), 8)], ids=str)  # fmt: skip
def test_bin_matches_reference(n, size, tile, device):
    width, height = size
    proj = projected(n, width, height, device, tile=tile)
    want_k, want_i, n_pairs = bin_all(ref, proj, width, height, tile=tile, capacity=None)
    got_k, got_i, got_n = bin_all(kernels, proj, width, height, tile=tile, capacity=n_pairs + 5)
    assert got_n == n_pairs
    assert torch.equal(got_i[:n_pairs], want_i)
    assert torch.equal(got_k[:n_pairs], want_k), f"{int((got_k[:n_pairs] != want_k).sum())} of {n_pairs} keys differ"
    sentinel = kernels.sentinel_key(got_k.dtype)
    assert (got_k[:n_pairs] != sentinel).all(), "every slot holds a real pair when counts agree"
    assert (got_k[n_pairs:] == sentinel).all() and (got_i[n_pairs:] == -1).all(), "nothing written past the pairs"


def test_pairs_come_in_depth_order_with_ties_by_index(device):
    """Pairs are emitted nearest Gaussian first; equal depths keep the Gaussians' index order (gsplat's ties)."""
    width, height = 64, 48
    proj = projected(500, width, height, device, seed=2)
    depths = proj[1]
    visible = torch.nonzero(proj[2] > 0).flatten()
    depths[visible[::3]] = 2.5  # a third of the visible Gaussians at one depth
    keys, ids, n_pairs = bin_all(kernels, proj, width, height)
    g = ids.long()
    d = depths[g]
    assert (d[1:] >= d[:-1]).all(), "pairs not in depth order"
    tie = d[1:] == d[:-1]
    assert bool(tie.any()) and (g[1:][tie] >= g[:-1][tie]).all(), "ties not in index order"


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "reference"])
def test_capacity_bounds_the_writes(impl, device):
    """A buffer shorter than the pair count is filled up to its end and not past it (the renderer grows it)."""
    width, height = 37, 53
    proj = projected(300, width, height, device, seed=5)
    full_k, full_i, n_pairs = bin_all(kernels, proj, width, height)
    cap = n_pairs // 2
    guard = 7
    records, depths, tt, bin_t = proj
    order, offsets, _ = impl.depth_order(depths, tt, out=impl.order_outputs(300, device))
    keys = torch.full((cap + guard,), -5, dtype=full_k.dtype, device=device)
    ids = torch.full((cap + guard,), -5, dtype=torch.int32, device=device)
    impl.bin_pairs(order, offsets, records, tt, width, height, bin_t=bin_t, out=(keys[:cap], ids[:cap]))
    assert torch.equal(keys[:cap], full_k[:cap]) and torch.equal(ids[:cap], full_i[:cap])
    assert (keys[cap:] == -5).all() and (ids[cap:] == -5).all()


@pytest.mark.parametrize("capacity", ["all", "half", "none"])
def test_reference_bins_chunk_by_chunk_as_in_one_go(capacity, monkeypatch):
    """The twin expands its pairs a chunk of Gaussians at a time (BIN_CHUNK_PAIRS), skipping the Gaussians whose
    slots all lie past the capacity: chunks of a few pairs give the keys and ids of one chunk of them all, into
    the whole capacity, half of it and none."""
    width, height = 37, 53
    proj = projected(300, width, height, "cpu", seed=5)
    _, _, n_pairs = bin_all(ref, proj, width, height)
    cap = {"all": n_pairs, "half": n_pairs // 2, "none": 0}[capacity]
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 1 << 30)
    want_k, want_i, _ = bin_all(ref, proj, width, height, capacity=cap)
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 5)  # smaller than most Gaussians' pairs: one Gaussian a chunk too
    got_k, got_i, _ = bin_all(ref, proj, width, height, capacity=cap)
    assert torch.equal(got_k, want_k) and torch.equal(got_i, want_i)
    assert n_pairs > 50 * 5  # many chunks


@pytest.mark.parametrize("tile", [8, 16])
def test_pairs_cover_every_contributing_pixel(tile, device):
    """No pair is dropped that the rasterizer would blend: brute force alpha >= 1/255 at every pixel centre."""
    width, height = 64, 48
    proj = projected(400, width, height, device, seed=3, tile=tile)
    records, _, tiles_touched, _ = proj
    means2d, conics, opacities, _ = unpack_records(records)  # what the rasterizer is given
    keys, ids, _ = bin_all(kernels, proj, width, height, tile=tile)
    pairs = set(zip(ids.tolist(), keys.tolist()))
    ys, xs = torch.meshgrid(torch.arange(height, device=device), torch.arange(width, device=device), indexing="ij")
    px, py = xs.flatten().float() + 0.5, ys.flatten().float() + 0.5
    n_tx = (width + tile - 1) // tile
    pix_tile = (ys.flatten() // tile) * n_tx + xs.flatten() // tile
    needed = set()
    for g in torch.nonzero(tiles_touched > 0).flatten().tolist():
        (a, b, c), o = conics[g].tolist(), float(opacities[g])
        dx, dy = means2d[g, 0] - px, means2d[g, 1] - py
        sigma = 0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
        alpha = torch.clamp_max(o * torch.exp(-sigma), 0.999)
        hit = (sigma >= 0) & (alpha >= 1 / 255)
        for t in torch.unique(pix_tile[hit]).tolist():
            needed.add((g, t))
    missing = needed - pairs
    assert not missing, f"{len(missing)} contributing pairs dropped, e.g. {sorted(missing)[:5]}"
    # tightness: the continuous test may keep a pair whose ellipse passes between pixel centres, but rarely
    spare = len(pairs) - len(needed)
    assert spare <= 0.08 * len(pairs) + 2, f"{spare} of {len(pairs)} pairs reach no pixel centre"


def test_sentinel_fill_when_walk_finds_fewer(device):
    """If a count exceeds what the walk finds, the extra slots get the sentinel key (never garbage)."""
    width, height = 37, 53
    records, depths, tiles_touched, bin_t = projected(50, width, height, device, seed=1)
    inflated = tiles_touched + (tiles_touched > 0).to(torch.int32)  # one more slot per live Gaussian
    proj = (records, depths, inflated, bin_t)
    keys, ids, n_pairs = bin_all(kernels, proj, width, height)
    n_live = int((tiles_touched > 0).sum())
    assert int((keys == kernels.sentinel_key(keys.dtype)).sum()) == n_live
    want_k, want_i, _ = bin_all(ref, proj, width, height)
    assert torch.equal(keys, want_k) and torch.equal(ids, want_i)


def test_key_width_follows_the_tile_count():
    assert kernels.key_dtype(240 * 135) == torch.int16  # 1920x1080 at 8 px
    assert kernels.key_dtype(32767) == torch.int16 and kernels.key_dtype(32768) == torch.int32
    assert kernels.sentinel_key(torch.int16) == 32767 > 32766
