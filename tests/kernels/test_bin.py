"""Stage 3, bin: macro-tile pair emission in depth order (Triton) against the torch twin, and the pairs against
each Gaussian's tiles, walked one tile at a time (tests/kernels/synthetic.py `tile_sets`), and a brute-force
pixel test."""

from collections import Counter

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import unpack_entries, unpack_records
from tests.kernels.synthetic import bin_all, decode_pairs, projected, tile_grid, tile_sets

# (120, 84): 15 x 11 tiles at 8 px, 8 x 6 at 16 px, so the last macro-tile column and band are partial
CASES = [(1, (16, 16), 8, 0.0), (300, (37, 53), 8, 0.0), (300, (37, 53), 16, 0.0), (3000, (128, 96), 8, 0.0),
         (1000, (120, 84), 8, 1.0), (1000, (120, 84), 16, 1.5)]  # fmt: skip


@pytest.mark.parametrize("n,size,tile,grow", CASES, ids=str)
def test_bin_matches_reference(n, size, tile, grow, device):
    width, height = size
    proj = projected(n, width, height, device, tile=tile, grow=grow)
    want_k, want_e, n_pairs = bin_all(ref, proj, width, height, tile=tile, capacity=None)
    got_k, got_e, got_n = bin_all(kernels, proj, width, height, tile=tile, capacity=n_pairs + 5)
    assert got_n == n_pairs
    assert torch.equal(got_e[:n_pairs], want_e)
    assert torch.equal(got_k[:n_pairs], want_k), f"{int((got_k[:n_pairs] != want_k).sum())} of {n_pairs} keys differ"
    sentinel = kernels.sentinel_key(got_k.dtype)
    assert (got_k[:n_pairs] != sentinel).all(), "every slot holds a real pair when counts agree"
    assert (got_k[n_pairs:] == sentinel).all() and (got_e[n_pairs:] == -1).all(), "nothing written past the pairs"


@pytest.mark.parametrize("size,tile,grow", [((64, 48), 8, 0.0), ((120, 84), 8, 1.0), ((120, 84), 16, 1.5)], ids=str)
def test_masks_decode_to_each_gaussians_tiles(size, tile, grow, device):
    """Read back tile by tile, each Gaussian's pairs hold exactly the tiles its footprint reaches, each once and
    none outside the image; its masks' popcounts sum to its tiles_touched, and it has macros_touched pairs, each
    in another macro-tile."""
    width, height = size
    proj = projected(1500, width, height, device, seed=8, tile=tile, grow=grow)
    keys, entries, n_pairs = bin_all(kernels, proj, width, height, tile=tile)
    n_tx, n_ty = tile_grid(width, height, tile)
    decoded = decode_pairs(keys, entries, n_tx, n_ty)
    assert (decoded[:, 1] < n_tx).all() and (decoded[:, 2] < n_ty).all(), "a bit set for a tile outside the image"
    got: dict[int, list[tuple[int, int]]] = {}
    for g, x, y in decoded.tolist():
        got.setdefault(g, []).append((x, y))
    want = tile_sets(proj, width, height, tile=tile)
    assert {g: sorted(t) for g, t in got.items()} == {g: sorted(t) for g, t in want.items()}
    ids, masks = unpack_entries(entries.cpu())
    tiles_touched, macros_touched = proj[2].tolist(), proj[3].tolist()
    popcounts = Counter()
    for g, m in zip(ids.tolist(), masks.tolist()):
        popcounts[g] += bin(m).count("1")
    assert all(popcounts[g] == tiles_touched[g] for g in range(len(tiles_touched))), "popcounts != tiles_touched"
    pairs = Counter(ids.tolist())
    assert all(pairs[g] == macros_touched[g] for g in range(len(macros_touched))), "pairs != macros_touched"
    assert len(set(zip(ids.tolist(), keys.tolist()))) == n_pairs, "a Gaussian with two pairs in one macro-tile"
    # the case must reach bit 31 (the entry's sign bit) and Gaussians of several macro-tiles
    assert bool((entries < 0).any()) and max(macros_touched) >= 2


def test_pairs_come_in_depth_order_with_ties_by_index(device):
    """Pairs are emitted nearest Gaussian first, each one's pairs together; equal depths keep the Gaussians' index
    order (gsplat's ties)."""
    width, height = 120, 84
    proj = projected(500, width, height, device, seed=2, grow=0.7)
    depths = proj[1]
    visible = torch.nonzero(proj[2] > 0).flatten()
    depths[visible[::3]] = 2.5  # a third of the visible Gaussians at one depth
    _, entries, _ = bin_all(kernels, proj, width, height)
    g = unpack_entries(entries)[0]
    d = depths[g]
    assert (d[1:] >= d[:-1]).all(), "pairs not in depth order"
    tie = d[1:] == d[:-1]
    assert bool(tie.any()) and (g[1:][tie] >= g[:-1][tie]).all(), "ties not in index order"
    runs = torch.unique_consecutive(g)
    assert runs.numel() == torch.unique(g).numel() < g.numel(), "a Gaussian's pairs not together"


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "reference"])
def test_capacity_bounds_the_writes(impl, device):
    """A buffer shorter than the pair count, ending within a Gaussian's pairs, is filled up to its end and not
    past it (the renderer grows it)."""
    width, height = 120, 84
    proj = projected(300, width, height, device, seed=5, grow=1.0)
    full_k, full_e, n_pairs = bin_all(kernels, proj, width, height)
    ids = unpack_entries(full_e)[0]
    cap = next(i for i in range(n_pairs // 2, n_pairs) if ids[i] == ids[i - 1])  # cuts a Gaussian's run
    guard = 7
    records, depths, tt, macros, bin_t = proj
    order, offsets, _ = impl.depth_order(depths, tt, macros, out=impl.order_outputs(300, device))
    keys = torch.full((cap + guard,), -5, dtype=full_k.dtype, device=device)
    entries = torch.full((cap + guard,), -5, dtype=torch.int64, device=device)
    impl.bin_pairs(order, offsets, records, macros, width, height, bin_t=bin_t, out=(keys[:cap], entries[:cap]))
    assert torch.equal(keys[:cap], full_k[:cap]) and torch.equal(entries[:cap], full_e[:cap])
    assert (keys[cap:] == -5).all() and (entries[cap:] == -5).all()


@pytest.mark.parametrize("capacity", ["all", "half", "none"])
def test_reference_bins_chunk_by_chunk_as_in_one_go(capacity, monkeypatch):
    """The twin expands its pairs a chunk of Gaussians at a time (BIN_CHUNK_PAIRS), skipping the Gaussians whose
    slots all lie past the capacity: chunks of two pairs give the keys and entries of one chunk of them all, into
    the whole capacity, half of it and none."""
    width, height = 120, 84
    proj = projected(300, width, height, "cpu", seed=5, grow=1.0)
    _, _, n_pairs = bin_all(ref, proj, width, height)
    cap = {"all": n_pairs, "half": n_pairs // 2, "none": 0}[capacity]
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 1 << 30)
    want_k, want_e, _ = bin_all(ref, proj, width, height, capacity=cap)
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 2)  # smaller than some Gaussians' pairs: one Gaussian a chunk too
    got_k, got_e, _ = bin_all(ref, proj, width, height, capacity=cap)
    assert torch.equal(got_k, want_k) and torch.equal(got_e, want_e)
    assert n_pairs > 50 * 2 and int(proj[3].max()) > 2  # many chunks, some of one Gaussian


@pytest.mark.parametrize("tile", [8, 16])
def test_pairs_cover_every_contributing_pixel(tile, device):
    """No (Gaussian, tile) pair the masks hold is missing that the rasterizer would blend: brute force
    alpha >= 1/255 at every pixel centre."""
    width, height = 64, 48
    proj = projected(400, width, height, device, seed=3, tile=tile)
    records, _, tiles_touched, _, _ = proj
    means2d, conics, opacities, _ = unpack_records(records)  # what the rasterizer is given
    keys, entries, _ = bin_all(kernels, proj, width, height, tile=tile)
    n_tx, n_ty = tile_grid(width, height, tile)
    pairs = {(g, y * n_tx + x) for g, x, y in decode_pairs(keys, entries, n_tx, n_ty).tolist()}
    ys, xs = torch.meshgrid(torch.arange(height, device=device), torch.arange(width, device=device), indexing="ij")
    px, py = xs.flatten().float() + 0.5, ys.flatten().float() + 0.5
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


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "reference"])
def test_sentinel_fill_when_walk_finds_fewer(impl, device):
    """If a macro-tile count exceeds what the walk finds, the extra slots get the sentinel key and the
    Gaussian's id with an empty mask (never garbage)."""
    width, height = 120, 84
    records, depths, tiles_touched, macros_touched, bin_t = projected(50, width, height, device, seed=1, grow=1.0)
    live = tiles_touched > 0
    inflated = macros_touched + live.to(torch.int32)  # one more slot per live Gaussian
    proj = (records, depths, tiles_touched, inflated, bin_t)
    keys, entries, _ = bin_all(impl, proj, width, height)
    sentinel = keys == kernels.sentinel_key(keys.dtype)
    ids, masks = unpack_entries(entries[sentinel])
    assert sorted(ids.tolist()) == torch.nonzero(live).flatten().tolist(), "one sentinel slot per live Gaussian"
    assert (masks == 0).all(), "a sentinel slot with tiles"
    # the real pairs are those of the exact count, each Gaussian's first macros_touched slots
    exact_k, exact_e, _ = bin_all(impl, projected(50, width, height, device, seed=1, grow=1.0), width, height)
    assert torch.equal(keys[~sentinel], exact_k) and torch.equal(entries[~sentinel], exact_e)
    if impl is kernels:
        want_k, want_e, _ = bin_all(ref, proj, width, height)
        assert torch.equal(keys, want_k) and torch.equal(entries, want_e)


def test_key_width_follows_the_macro_tile_count():
    """int16 keys while every macro-tile id and the sentinel above them fit."""
    assert kernels.macro_grid(240, 135) == (30, 34)  # 1920 x 1080 at 8 px: the last band of 3 tile rows
    assert kernels.macro_grid(960, 540) == (120, 135)  # 7680 x 4320 at 8 px
    assert kernels.key_dtype(120 * 135) == torch.int16
    assert kernels.key_dtype(32767) == torch.int16 and kernels.key_dtype(32768) == torch.int32
    assert kernels.sentinel_key(torch.int16) == 32767 > 32766
    # keys too narrow for the image's macro-tiles are refused: 16384 x 8192 at 8 px has 256 x 256 of them
    i64 = torch.empty(0, dtype=torch.int64)
    none = (i64, i64, torch.empty(0, 8), torch.empty(0, dtype=torch.int32))  # order, offsets, records, macros
    narrow = (torch.empty(0, dtype=torch.int16), i64)
    with pytest.raises(AssertionError):
        kernels.bin_pairs(*none, 16384, 8192, bin_t=torch.empty(0), out=narrow)
    kernels.bin_pairs(*none, 16384, 8192, bin_t=torch.empty(0), out=(torch.empty(0, dtype=torch.int32), i64))
