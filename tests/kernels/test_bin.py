"""Stage 3, bin, in both forms (tile pairs in depth order, macro-tile pairs in index order keyed by depth) (Triton)
against the torch twin, the pairs against each Gaussian's tiles, walked one tile at a time
(tests/kernels/synthetic.py `tile_sets`), a brute-force pixel test, and the per-frame rule that picks the form."""

from collections import Counter

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.bin import MACRO_FROM, MACRO_UNTIL
from kernels.buffers import unpack_entries, unpack_records
from tests.kernels.synthetic import FORMS, bin_all, decode_pairs, gaussian_ids, projected, tile_grid, tile_sets

# (120, 84): 15 x 11 tiles at 8 px, 8 x 6 at 16 px, so the last macro-tile column and band are partial
CASES = [(1, (16, 16), 8, 0.0), (300, (37, 53), 8, 0.0), (300, (37, 53), 16, 0.0), (3000, (128, 96), 8, 0.0),
         (1000, (120, 84), 8, 1.0), (1000, (120, 84), 16, 1.5)]  # fmt: skip
IMPLS = [pytest.param(kernels, id="triton"), pytest.param(ref, id="reference")]


@pytest.fixture(autouse=True)
def offsets_in_small_blocks(monkeypatch):
    """The order stage's offsets in blocks of 64 Gaussians (kernels/buffers.py `BlockOffsets`): binning adds the
    blocks' ends to the sums within them, for most Gaussians of these few-thousand-Gaussian scenes."""
    import kernels.buffers as buffers_module

    monkeypatch.setattr(buffers_module, "SCAN_BLOCK", 64)


def pair_counts(proj, form):
    """[N] i32: each Gaussian's pairs in `form`, tiles_touched or macros_touched."""
    return proj[2] if form == "tiles" else proj[3]


def stage2(impl, proj, form):
    """(order, offsets, pairs, key dtype) of the form's stage 2: tile pairs in depth order (`depth_order`),
    macro-tile pairs in index order (`index_offsets`, no order)."""
    records, depths, tt, _, _ = proj
    counts, n = pair_counts(proj, form), depths.shape[0]
    if form == "tiles":
        order, offsets, totals = impl.depth_order(depths, tt, counts, out=impl.order_outputs(n, depths.device))
        return order, offsets, int(totals[2]), torch.int16
    offsets = impl.index_offsets(counts, None, out=torch.empty(n, dtype=torch.int64, device=depths.device))
    return None, offsets, int(offsets[-1]), impl.MACRO_KEY_DTYPE


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n,size,tile,grow", CASES, ids=str)
def test_bin_matches_reference(n, size, tile, grow, form, device):
    width, height = size
    proj = projected(n, width, height, device, tile=tile, grow=grow)
    want_k, want_v, n_pairs = bin_all(ref, proj, width, height, tile=tile, capacity=None, form=form)
    got_k, got_v, got_n = bin_all(kernels, proj, width, height, tile=tile, capacity=n_pairs + 5, form=form)
    assert got_n == n_pairs == int(pair_counts(proj, form).sum())
    assert torch.equal(got_v[:n_pairs], want_v)
    assert torch.equal(got_k[:n_pairs], want_k), f"{int((got_k[:n_pairs] != want_k).sum())} of {n_pairs} keys differ"
    if form == "macro-tiles":  # over the visible Gaussians gathered (a counted frame's form), the same pairs
        cmp_k, cmp_v, _ = bin_all(kernels, proj, width, height, tile=tile, form=form, gathered=True)
        assert torch.equal(cmp_k, want_k) and torch.equal(cmp_v, want_v)
    sentinel = kernels.sentinel_key(got_k.dtype)
    assert (got_k[:n_pairs] != sentinel).all(), "every slot holds a real pair when counts agree"
    assert (got_k[n_pairs:] == sentinel).all() and (got_v[n_pairs:] == -1).all(), "nothing written past the pairs"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("size,tile,grow", [((64, 48), 8, 0.0), ((120, 84), 8, 1.0), ((120, 84), 16, 1.5)], ids=str)
def test_pairs_decode_to_each_gaussians_tiles(size, tile, grow, form, device):
    """Read back tile by tile, each Gaussian's pairs hold exactly the tiles its footprint reaches, each once and
    none outside the image, tiles_touched of them; it has its count of pairs (tiles_touched, or macros_touched:
    the masks' popcounts then sum to tiles_touched), no two of them with one key."""
    width, height = size
    proj = projected(1500, width, height, device, seed=8, tile=tile, grow=grow)
    keys, values, n_pairs = bin_all(kernels, proj, width, height, tile=tile, form=form)
    n_tx, n_ty = tile_grid(width, height, tile)
    decoded = decode_pairs(keys, values, n_tx, n_ty)
    assert (decoded[:, 1] < n_tx).all() and (decoded[:, 2] < n_ty).all(), "a tile outside the image"
    got: dict[int, list[tuple[int, int]]] = {}
    for g, x, y in decoded.tolist():
        got.setdefault(g, []).append((x, y))
    want = tile_sets(proj, width, height, tile=tile)
    assert {g: sorted(t) for g, t in got.items()} == {g: sorted(t) for g, t in want.items()}
    tiles_touched, counts = proj[2].tolist(), pair_counts(proj, form).tolist()
    held = Counter(decoded[:, 0].tolist())
    assert all(held[g] == tiles_touched[g] for g in range(len(tiles_touched))), "tiles held != tiles_touched"
    ids = gaussian_ids(values).tolist()
    pairs = Counter(ids)
    assert all(pairs[g] == counts[g] for g in range(len(counts))), f"pairs != the {form}' counts"
    assert len(set(zip(ids, keys.tolist()))) == n_pairs, "a Gaussian with two pairs of one key"
    assert max(counts) >= 2, "the case must hold Gaussians of several pairs"
    if form == "macro-tiles":
        assert bool((values < 0).any()), "the case must reach bit 31, the entry's sign bit"


def test_tile_pairs_come_in_depth_order_with_ties_by_index(device):
    """Tile pairs are emitted nearest Gaussian first, each one's pairs together; equal depths keep the Gaussians'
    index order (gsplat's ties)."""
    width, height = 120, 84
    proj = projected(500, width, height, device, seed=2, grow=0.7)
    depths = proj[1]
    visible = torch.nonzero(proj[2] > 0).flatten()
    depths[visible[::3]] = 2.5  # a third of the visible Gaussians at one depth
    _, values, _ = bin_all(kernels, proj, width, height, form="tiles")
    g = gaussian_ids(values)
    d = depths[g]
    assert (d[1:] >= d[:-1]).all(), "pairs not in depth order"
    tie = d[1:] == d[:-1]
    assert bool(tie.any()) and (g[1:][tie] >= g[:-1][tie]).all(), "ties not in index order"
    runs = torch.unique_consecutive(g)
    assert runs.numel() == torch.unique(g).numel() < g.numel(), "a Gaussian's pairs not together"


def test_macro_tile_pairs_come_in_index_order_keyed_by_rounded_depth(device):
    """Macro-tile pairs are emitted a Gaussian at a time in index order, each one's pairs together, every key its
    macro-tile shifted above the Gaussian's rounded depth (`depth_keys`): what the pair sort orders by depth."""
    width, height = 120, 84
    proj = projected(500, width, height, device, seed=2, grow=0.7)
    keys, values, _ = bin_all(kernels, proj, width, height, form="macro-tiles")
    g = gaussian_ids(values)
    assert (g[1:] >= g[:-1]).all(), "pairs not in index order"
    assert torch.unique_consecutive(g).numel() == torch.unique(g).numel() < g.numel(), "a Gaussian's pairs apart"
    n_mx, n_my = kernels.macro_grid(*tile_grid(width, height, 8))
    bits = kernels.depth_bits(n_mx * n_my)
    dq = kernels.depth_keys(proj[1], bits)
    assert torch.equal(keys.long() & ((1 << bits) - 1), dq[g].long()), "the low bits are not the rounded depth"
    assert torch.unique(dq[g]).numel() > 100, "the case must hold many depths"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("impl", IMPLS)
def test_thresholds_from_the_records(impl, form, device):
    """Without AdaGScale, binning takes each Gaussian's threshold from its record's lo (bin_t=None) rather than
    gathering bin_t: the pairs are those of the thresholds stage 1 counted with, slot for slot; and they are read
    from the records: a record's lo lowered is a walk that finds fewer tiles (the sentinel in its last slots)."""
    width, height = 120, 84
    proj = projected(400, width, height, device, seed=11, grow=1.0)
    records, depths, tt, _, bin_t = proj
    counts = pair_counts(proj, form)
    order, offsets, n_pairs, kd = stage2(impl, proj, form)
    macro = form == "macro-tiles"

    def run(recs, thresholds):
        keys = torch.full((n_pairs,), impl.sentinel_key(kd), dtype=kd, device=device)
        values = torch.full((n_pairs,), -1, dtype=torch.int64 if macro else torch.int32, device=device)
        impl.bin_pairs(order, offsets, recs, counts, width, height, bin_t=thresholds, depths=depths if macro else None,
                       out=(keys, values))  # fmt: skip
        return keys, values

    given_k, given_v = run(records, bin_t)
    own_k, own_v = run(records, None)
    assert torch.equal(own_k, given_k) and torch.equal(own_v, given_v)
    assert (own_k != impl.sentinel_key(kd)).all()
    lowered = records.clone()
    lowered[:, 5] -= 3.0  # an eighth of each opacity: smaller footprints than the counts were made for
    low_k, _ = run(lowered, None)
    assert (low_k == impl.sentinel_key(kd)).any()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("impl", IMPLS)
def test_capacity_bounds_the_writes(impl, form, device):
    """A buffer shorter than the pair count, ending within a Gaussian's pairs, is filled up to its end and not
    past it (the renderer grows it)."""
    width, height = 120, 84
    proj = projected(300, width, height, device, seed=5, grow=1.0)
    full_k, full_v, n_pairs = bin_all(kernels, proj, width, height, form=form)
    ids = gaussian_ids(full_v)
    cap = next(i for i in range(n_pairs // 2, n_pairs) if ids[i] == ids[i - 1])  # cuts a Gaussian's run
    guard = 7
    records, depths, tt, _, bin_t = proj
    counts = pair_counts(proj, form)
    order, offsets, _, _ = stage2(impl, proj, form)
    keys = torch.full((cap + guard,), -5, dtype=full_k.dtype, device=device)
    values = torch.full((cap + guard,), -5, dtype=full_v.dtype, device=device)
    impl.bin_pairs(order, offsets, records, counts, width, height, bin_t=bin_t,
                   depths=depths if form == "macro-tiles" else None, out=(keys[:cap], values[:cap]))  # fmt: skip
    assert torch.equal(keys[:cap], full_k[:cap]) and torch.equal(values[:cap], full_v[:cap])
    assert (keys[cap:] == -5).all() and (values[cap:] == -5).all()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("capacity", ["all", "half", "none"])
def test_reference_bins_chunk_by_chunk_as_in_one_go(capacity, form, monkeypatch):
    """The twin expands its pairs a chunk of Gaussians at a time (BIN_CHUNK_PAIRS), skipping the Gaussians whose
    slots all lie past the capacity: chunks of two pairs give the keys and values of one chunk of them all, into
    the whole capacity, half of it and none."""
    width, height = 120, 84
    proj = projected(300, width, height, "cpu", seed=5, grow=1.0)
    _, _, n_pairs = bin_all(ref, proj, width, height, form=form)
    cap = {"all": n_pairs, "half": n_pairs // 2, "none": 0}[capacity]
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 1 << 30)
    want_k, want_v, _ = bin_all(ref, proj, width, height, capacity=cap, form=form)
    monkeypatch.setattr(ref, "BIN_CHUNK_PAIRS", 2)  # smaller than some Gaussians' pairs: one Gaussian a chunk too
    got_k, got_v, _ = bin_all(ref, proj, width, height, capacity=cap, form=form)
    assert torch.equal(got_k, want_k) and torch.equal(got_v, want_v)
    assert n_pairs > 50 * 2 and int(pair_counts(proj, form).max()) > 2  # many chunks, some of one Gaussian


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("tile", [8, 16])
def test_pairs_cover_every_contributing_pixel(tile, form, device):
    """No (Gaussian, tile) pair the pairs hold is missing that the rasterizer would blend: brute force
    alpha >= 1/255 at every pixel centre."""
    width, height = 64, 48
    proj = projected(400, width, height, device, seed=3, tile=tile)
    records, _, tiles_touched, _, _ = proj
    means2d, conics, opacities, _ = unpack_records(records)  # what the rasterizer is given
    keys, values, _ = bin_all(kernels, proj, width, height, tile=tile, form=form)
    n_tx, n_ty = tile_grid(width, height, tile)
    pairs = {(g, y * n_tx + x) for g, x, y in decode_pairs(keys, values, n_tx, n_ty).tolist()}
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


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("impl", IMPLS)
def test_sentinel_fill_when_walk_finds_fewer(impl, form, device):
    """If a count exceeds what the walk finds, the extra slots get the sentinel key and the Gaussian's id (with
    an empty mask, for macro-tile pairs): never garbage."""
    width, height = 120, 84
    exact = projected(50, width, height, device, seed=1, grow=1.0)
    records, depths, tiles_touched, macros_touched, bin_t = exact
    live = tiles_touched > 0
    if form == "tiles":  # one more slot per live Gaussian
        proj = (records, depths, tiles_touched + live.to(torch.int32), macros_touched, bin_t)
    else:
        proj = (records, depths, tiles_touched, macros_touched + live.to(torch.int32), bin_t)
    keys, values, _ = bin_all(impl, proj, width, height, form=form)
    sentinel = keys == kernels.sentinel_key(keys.dtype)
    ids = gaussian_ids(values[sentinel])
    assert sorted(ids.tolist()) == torch.nonzero(live).flatten().tolist(), "one sentinel slot per live Gaussian"
    if form == "macro-tiles":
        assert (unpack_entries(values[sentinel])[1] == 0).all(), "a sentinel slot with tiles"
    # the real pairs are those of the exact count, each Gaussian's first slots
    exact_k, exact_v, _ = bin_all(impl, exact, width, height, form=form)
    assert torch.equal(keys[~sentinel], exact_k) and torch.equal(values[~sentinel], exact_v)
    if impl is kernels:
        want_k, want_v, _ = bin_all(ref, proj, width, height, form=form)
        assert torch.equal(keys, want_k) and torch.equal(values, want_v)


def test_key_width_follows_the_tile_count_and_macro_tile_keys_are_int32():
    """Tile pair keys are int16 while every tile id and the sentinel above them fit (a key is its tile id less
    32,768: ids 0 to 65,534, the sentinel 65,535); counted frames of twice as many bin their halves apart; macro-tile
    pair keys are int32, the id above the rounded depth: the launcher refuses narrower keys."""
    assert kernels.macro_grid(240, 135) == (30, 34)  # 1920 x 1080 at 8 px: the last band of 3 tile rows
    assert kernels.macro_grid(960, 540) == (120, 135)  # 7680 x 4320 at 8 px
    assert kernels.key_dtype(240 * 135) == torch.int16  # 1920 x 1080's tiles at 8 px
    assert kernels.key_dtype(320 * 180) == torch.int16  # 2560 x 1440's
    assert kernels.key_dtype(65535) == torch.int16 and kernels.key_dtype(65536) == torch.int32
    assert kernels.sentinel_key(torch.int16) == 32767 > 32766
    tiles = torch.tensor([0, 1, 32767, 32768, 65534])
    assert kernels.tile_keys(tiles, torch.int16).tolist() == [-32768, -32767, -1, 0, 32766]
    assert torch.equal(kernels.key_tiles(kernels.tile_keys(tiles, torch.int16)), tiles)
    assert int(kernels.key_tiles(torch.tensor([32767], dtype=torch.int16))) == 65535  # the sentinel: no tile's
    assert torch.equal(kernels.tile_keys(tiles, torch.int32), tiles.int())
    # the halves: 3840 x 2160 at 8 px splits at row 135 (64,800 tiles a half); 1080p needs none; 7680 x 4320 and
    # 3840 x 4320 have too many for two halves
    assert kernels.key_halves(480, 270) == 135 and kernels.key_halves(480, 271) == 136
    assert kernels.key_halves(240, 135) is None and kernels.key_halves(960, 540) is None
    assert kernels.key_halves(480, 540) is None and kernels.key_halves(65535, 2) == 1
    assert kernels.depth_bits(30 * 34) == 21 and kernels.depth_bits(60 * 68) == 19  # 1080p, 4K
    i64, i32 = torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int32)
    tiles = (i64, i64, torch.empty(0, 8), i32)  # order, offsets, records, counts
    macro = (None, i64, torch.empty(0, 8), i32)
    k16, k32 = torch.empty(0, dtype=torch.int16), i32
    # 3840 x 2160 at 8 px: 129,600 tiles, too many for int16 keys, but for each half's
    with pytest.raises(AssertionError):
        kernels.bin_pairs(*tiles, 3840, 2160, bin_t=torch.empty(0), out=(k16, i32))
    kernels.bin_pairs(*tiles, 3840, 2160, bin_t=torch.empty(0), out=(k32, i32))
    kernels.bin_pairs(*tiles, 3840, 2160, bin_t=torch.empty(0), out=(k16, i32), halves=(135, 0))
    with pytest.raises(AssertionError):  # a half of 66,240 tiles
        kernels.bin_pairs(*tiles, 3840, 2160, bin_t=torch.empty(0), out=(k16, i32), halves=(132, 0))
    kernels.bin_pairs(*tiles, 2560, 1440, bin_t=torch.empty(0), out=(k16, i32))  # 57,600 tiles
    with pytest.raises(AssertionError):
        kernels.bin_pairs(*macro, 1920, 1080, bin_t=torch.empty(0), depths=torch.empty(0), out=(k16, i64))
    kernels.bin_pairs(*macro, 1920, 1080, bin_t=torch.empty(0), depths=torch.empty(0), out=(k32, i64))
    with pytest.raises(AssertionError):  # the depths are the keys' low bits
        kernels.bin_pairs(*macro, 1920, 1080, bin_t=torch.empty(0), out=(k32, i64))
    # 16384 x 8192 at 8 px has 256 x 256 macro-tiles: 17 bits of id, 14 of depth
    assert kernels.depth_bits(256 * 256) == 14


def test_frames_bin_per_macro_tile_from_macro_from_and_stay_down_to_macro_until():
    """`bins_macro_tiles`: a frame switches to macro-tile pairs where its visible Gaussians reach MACRO_FROM tiles
    each on average, and, once there, stays until they reach fewer than MACRO_UNTIL (hysteresis), over a run of
    frames whose footprints grow, shrink and grow again."""
    assert 1.0 < MACRO_UNTIL < MACRO_FROM
    mid = (MACRO_FROM + MACRO_UNTIL) / 2
    frames = [  # (tiles a Gaussian reaches, the form the frame bins in)
        (1.0, False), (MACRO_UNTIL, False), (mid, False), (MACRO_FROM - 0.01, False),  # tiles up to MACRO_FROM
        (MACRO_FROM, True), (2 * MACRO_FROM, True),  # from it up: macro-tiles
        (mid, True), (MACRO_UNTIL, True),  # kept down to MACRO_UNTIL
        (MACRO_UNTIL - 0.01, False), (mid, False),  # below it, tiles again, and not back in between
        (MACRO_FROM, True),
    ]  # fmt: skip
    previous = False
    for pairs_per_gaussian, want in frames:
        got = kernels.bins_macro_tiles(pairs_per_gaussian, previous)
        assert got is want, f"{pairs_per_gaussian} tiles a Gaussian after {previous}: {got}"
        previous = got
    assert kernels.bins_macro_tiles(MACRO_FROM) and not kernels.bins_macro_tiles(mid), "previous defaults to tiles"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size,tile,split", [((64, 48), 8, 3), ((120, 84), 8, 5), ((120, 84), 16, 1)], ids=str)
def test_pairs_binned_in_halves_are_each_halfs_lists(impl, size, tile, split, device):
    """A counted frame binned in two halves (kernels/buffers.py `key_halves`): stage 1 counts each Gaussian's tiles
    in either half (top | bottom << 16), stage 2 counts the top's pairs and sums both halves' offsets in one int64,
    stage 3 writes the top rows' pairs into [0, top) and the others' after, keyed within their half, stage 4 sorts
    the halves apart and stage 5 finds the ranges: every tile's list is the one of the frame binned whole (int32
    keys, one sort), Gaussian for Gaussian in order; and the kernels' pairs are the twin's, slot for slot."""
    from tests.kernels.synthetic import camera, gaussians

    width, height = size
    n_tx, n_ty = tile_grid(width, height, tile)
    means, covars, opac, sh = gaussians(1000, seed=3, device=device)
    covars = covars * 4.0  # footprints across the split
    cam = camera(width, height).packed(device)
    whole = impl.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=0, tile_size=tile)
    records, depths, tiles_touched, packed, _ = impl.project_gaussians(
        means, covars, opac, sh, cam, width, height, sh_degree=0, tile_size=tile, halves=split
    )
    visible = tiles_touched > 0  # the rows of the culled ones are unspecified
    assert torch.equal(tiles_touched, whole[2]) and torch.equal(records[visible], whole[0][visible])
    top_tiles, bottom_tiles = packed.long() % 65536, packed.long() // 65536
    assert torch.equal(top_tiles + bottom_tiles, tiles_touched.long())
    sets = tile_sets(whole, width, height, tile=tile)
    for g, tiles in sets.items():
        assert int(top_tiles[g]) == sum(1 for _, row in tiles if row < split), g
    assert int(bottom_tiles.sum()) > 0 and int(top_tiles.sum()) > 0, "pairs in both halves"
    n = depths.shape[0]
    i64 = dict(dtype=torch.int64, device=device)
    count_out = (torch.empty(3, **i64), torch.empty(impl.count_blocks(n), **i64), None, None)
    totals = impl.count_visible(depths, tiles_touched, packed, compact=False, halves=True, out=count_out)
    n_pairs, top = int(totals[1]), int(totals[2])
    assert (n_pairs, top) == (int(tiles_touched.sum()), int(top_tiles.sum()))
    empty = (torch.empty(0, device=device), torch.empty(0, dtype=torch.int32, device=device))
    order_out = (*empty, torch.empty(n, device=device), *(torch.empty(n, **i64) for _ in range(4)))
    order, offsets = impl.visible_order(depths, packed, compact=False, halves=True, out=order_out)
    keys = torch.full((n_pairs,), -7, dtype=torch.int16, device=device)
    ids = torch.full((n_pairs,), -1, dtype=torch.int32, device=device)
    impl.bin_pairs(order, offsets, records, packed, width, height, tile_size=tile, bin_t=None, out=(keys, ids),
                   halves=(split, top))  # fmt: skip
    assert (ids >= 0).all() and (keys != kernels.sentinel_key(torch.int16)).all(), "every slot written, once"
    tiles = kernels.key_tiles(keys) + torch.where(torch.arange(n_pairs, device=device) >= top, split * n_tx, 0)
    assert (tiles[:top] < split * n_tx).all() and (tiles[top:] >= split * n_tx).all(), "each pair in its half"
    if impl is kernels:
        want_k, want_v = torch.empty_like(keys), torch.empty_like(ids)
        ref.bin_pairs(order, offsets, records, packed, width, height, tile_size=tile, bin_t=None,
                      out=(want_k, want_v), halves=(split, top))  # fmt: skip
        assert torch.equal(keys, want_k) and torch.equal(ids, want_v)
    sorted_keys, perm = impl.sort_pairs(keys, ids, gather=False, halves=top)
    ranges = impl.tile_ranges(sorted_keys, n_tx * n_ty, halves=(top, split * n_tx))
    lists = ids[torch.where(torch.arange(n_pairs, device=device) >= top, perm + top, perm)]
    # the frame binned whole: depth order, one int32 sort, the ranges
    w_order, w_offsets, w_totals = impl.depth_order(
        depths, tiles_touched, tiles_touched, out=impl.order_outputs(n, device)
    )
    w_keys = torch.full((n_pairs,), kernels.sentinel_key(torch.int32), dtype=torch.int32, device=device)
    w_ids = torch.empty(n_pairs, dtype=torch.int32, device=device)
    impl.bin_pairs(w_order, w_offsets, records, tiles_touched, width, height, tile_size=tile, bin_t=None,
                   out=(w_keys, w_ids))  # fmt: skip
    w_sorted, w_perm = impl.sort_pairs(w_keys, w_ids, gather=False)
    w_ranges = impl.tile_ranges(w_sorted, n_tx * n_ty)
    assert torch.equal(ranges[:, 1] - ranges[:, 0], w_ranges[:, 1] - w_ranges[:, 0])
    for t in range(n_tx * n_ty):
        (s, e), (ws, we) = ranges[t].tolist(), w_ranges[t].tolist()
        assert torch.equal(lists[s:e], w_ids[w_perm[ws:we]]), f"tile {t}"
