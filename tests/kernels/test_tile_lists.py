"""Stage 5, tile lists, for either form of stage 3. Macro-tile pairs: the sorted pairs split into the tiles' lists
(Triton) against the torch twin, and both against lists built without macro-tiles: on random pairs, each tile's
list read off the pairs one bit at a time; on binned Gaussians, the Gaussians whose tiles (walked one by one)
include the tile, in (depth, index) order. Tile pairs: `tile_ranges` against its twin, and the sorted ids in those
ranges against the same lists. And the two forms against each other: the same lists on the same projection."""

import importlib

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import LIST_CHUNK, pack_entries, unpack_entries
from kernels.constants import MACRO_COLS, MACRO_ROWS
from tests.conftest import nan_like
from tests.kernels.synthetic import (
    FORMS,
    bin_all,
    list_buffers,
    lists_of,
    projected,
    random_keys,
    random_pairs,
    tile_grid,
    tile_sets,
)

IMPLS = [pytest.param(kernels, id="triton"), pytest.param(ref, id="torch")]
GUARD = -5  # what a guard region past the list buffer holds


def run(impl, sorted_keys, sorted_entries, n_tx, n_ty, n_entries):
    """tile_lists into poisoned buffers (list entries -1), the list buffer n_entries long."""
    out = list_buffers(n_entries, n_tx * n_ty, sorted_keys.shape[0], sorted_keys.device)
    return impl.tile_lists(sorted_keys, sorted_entries, n_tx, n_ty, out=out)


def macro_tiles(sorted_keys, n_tx, n_ty):
    """[C] i64 the macro-tiles of macro-tile pair keys: their bits above the rounded depth's."""
    n_mx, n_my = kernels.macro_grid(n_tx, n_ty)
    return sorted_keys.long() >> kernels.depth_bits(n_mx * n_my)


def sorted_random_pairs(n_tx, n_ty, n, device, seed=0, macros=None, cleared=()):
    """random_pairs, sorted (as `sort_pairs` leaves them), and their set bits' count; `cleared`: (macro-tile, bit)
    whose pairs lose that bit, leaving an empty tile in a macro-tile with pairs."""
    keys, entries, depths = random_pairs(n_tx, n_ty, n, device, seed=seed, macros=macros)
    ids, masks = unpack_entries(entries)
    for unit, bit in cleared:
        masks[macro_tiles(keys, n_tx, n_ty) == unit] &= ~(1 << bit)
    entries = pack_entries(ids, masks)
    sk, se = ref.sort_pairs(keys, entries, depths=depths)
    real = sk != kernels.sentinel_key(torch.int32)
    return sk, se, sum(bin(m).count("1") for m in unpack_entries(se[real])[1].tolist())


def lists_from_pairs(sorted_keys, sorted_entries, n_tx, n_ty) -> list[list[int]]:
    """Each tile's list read off the sorted pairs one pair and one bit at a time: the ids of its macro-tile's
    pairs whose mask has the tile's bit (MACRO_COLS * row + column), in the pairs' order."""
    n_mx, n_my = kernels.macro_grid(n_tx, n_ty)
    lists: list[list[int]] = [[] for _ in range(n_tx * n_ty)]
    ids, masks = unpack_entries(sorted_entries.cpu())
    for key, g, m in zip(macro_tiles(sorted_keys, n_tx, n_ty).tolist(), ids.tolist(), masks.tolist()):
        if key >= n_mx * n_my:
            continue  # the sentinel: no macro-tile's
        by, bx = divmod(key, n_mx)
        for row in range(MACRO_ROWS):
            for col in range(MACRO_COLS):
                if (m >> (MACRO_COLS * row + col)) & 1:
                    lists[(by * MACRO_ROWS + row) * n_tx + bx * MACRO_COLS + col].append(g)
    return lists


def check_lists(ids, ranges, want, sorted_keys, n_tx, n_ty):
    """ids[start:end] is `want`'s list for every tile, and the ranges lay the lists out bit-major, back to back
    from 0: for bit 0, every macro-tile with pairs in key order, then bit 1, ...; the tiles of a macro-tile with
    no pair have [0, 0)."""
    ids, ranges = ids.tolist(), ranges.tolist()
    n_mx, n_my = kernels.macro_grid(n_tx, n_ty)
    keys = set(macro_tiles(sorted_keys, n_tx, n_ty).tolist())
    wrong = [t for t, (start, end) in enumerate(ranges) if ids[start:end] != want[t]]
    assert not wrong, f"{len(wrong)} tiles' lists differ, e.g. tile {wrong[0]}: {ids[slice(*ranges[wrong[0]])]}"
    cursor = 0
    for bit in range(MACRO_COLS * MACRO_ROWS):
        row, col = divmod(bit, MACRO_COLS)
        for key in range(n_mx * n_my):
            by, bx = divmod(key, n_mx)
            tx, ty = bx * MACRO_COLS + col, by * MACRO_ROWS + row
            if tx >= n_tx or ty >= n_ty:
                continue
            start, end = ranges[ty * n_tx + tx]
            if key not in keys:
                assert (start, end) == (0, 0), f"tile ({tx}, {ty}) of a macro-tile with no pair: {(start, end)}"
                continue
            assert start == cursor, f"tile ({tx}, {ty}) starts at {start}, not {cursor} (bit {bit}, key {key})"
            cursor = end
    assert cursor == len(ids) == sum(map(len, want)), "the lists do not fill the buffer exactly"


def check_tile_layout(ids, ranges, want):
    """ids[start:end] is `want`'s list for every tile, and the ranges lie back to back from 0 in tile order (the
    sorted tile pairs), covering the real pairs exactly; tiles of no pair have [0, 0)."""
    ids, ranges = ids.tolist(), ranges.tolist()
    wrong = [t for t, (start, end) in enumerate(ranges) if ids[start:end] != want[t]]
    assert not wrong, f"{len(wrong)} tiles' lists differ, e.g. tile {wrong[0]}: {ids[slice(*ranges[wrong[0]])]}"
    cursor = 0
    for t, (start, end) in enumerate(ranges):
        if not want[t]:
            assert (start, end) == (0, 0), f"tile {t} of no pair: {(start, end)}"
            continue
        assert start == cursor, f"tile {t} starts at {start}, not {cursor}"
        cursor = end
    assert cursor == sum(map(len, want)), "the ranges do not cover the pairs exactly"


def test_random_pairs_match_twin_and_their_tiles(device):
    """21 x 10 tiles: 3 x 3 macro-tiles, the right column 5 tiles wide and the bottom band 2 rows high; the last 2
    macro-tiles get no pair, a tenth of the pairs have an empty mask, two tiles of macro-tiles with pairs get no
    Gaussian, and 3 sentinel slots with random masks end the pairs (nothing may read them)."""
    n_tx, n_ty = 21, 10
    sk, se, n_entries = sorted_random_pairs(n_tx, n_ty, 3000, device, seed=2, macros=7,
                                            cleared=((0, 5), (4, 31)))  # fmt: skip
    got = run(kernels, sk, se, n_tx, n_ty, n_entries)
    want = run(ref, sk, se, n_tx, n_ty, n_entries)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    check_lists(*got, lists_from_pairs(sk, se, n_tx, n_ty), sk, n_tx, n_ty)
    empty_inside = (got[1][:, 0] == got[1][:, 1]) & (got[1][:, 0] > 0)
    assert int(empty_inside.sum()) == 2, "the case must hold [x, x) ranges of empty tiles"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n,size,tile,grow", [(1000, (120, 84), 8, 1.0), (1000, (120, 84), 16, 1.5),
                                              (3000, (128, 96), 8, 0.0)], ids=str)  # fmt: skip
def test_lists_are_each_tiles_gaussians_in_depth_order(impl, n, size, tile, grow, form, device):
    """Stages 2-5 of each implementation in each form, into pair buffers with a sentinel tail, give every tile the
    list of the Gaussians whose tiles include it, nearest first, equal depths by index: the tile sets from the
    twin's row walk, one tile at a time (tests/kernels/synthetic.py `tile_sets`). 120 x 84 ends in partial
    macro-tiles. Tile pairs: the sorted ids in `tile_ranges`; macro-tile pairs: `tile_lists`."""
    width, height = size
    proj = projected(n, width, height, device, seed=3, tile=tile, grow=grow)
    depths = proj[1]
    depths[torch.nonzero(proj[2] > 0).flatten()[::4]] = 2.5  # ties
    n_tx, n_ty = tile_grid(width, height, tile)
    n_pairs = int(proj[2 if form == "tiles" else 3].sum())
    keys, values, _ = bin_all(impl, proj, width, height, tile=tile, capacity=n_pairs + 37, form=form)
    sk, sv = impl.sort_pairs(keys, values, depths=depths if form == "macro-tiles" else None)
    assert (sk[-37:] == kernels.sentinel_key(sk.dtype)).all()
    d = depths.tolist()
    sets = tile_sets(proj, width, height, tile=tile)
    want: list[list[int]] = [[] for _ in range(n_tx * n_ty)]
    for g in sorted(sets, key=lambda g: (d[g], g)):
        for x, y in sets[g]:
            want[y * n_tx + x].append(g)
    if form == "tiles":
        out = nan_like(torch.empty(n_tx * n_ty, 2, dtype=torch.int32, device=device))
        ids, ranges = sv, impl.tile_ranges(sk, n_tx * n_ty, out=out)
        check_tile_layout(ids, ranges, want)
        twin = sv, ref.tile_ranges(sk, n_tx * n_ty)
    else:
        ids, ranges = run(impl, sk, sv, n_tx, n_ty, int(proj[2].sum()))
        check_lists(ids, ranges, want, sk, n_tx, n_ty)
        twin = run(ref, sk, sv, n_tx, n_ty, ids.shape[0])
    assert torch.equal(ids, twin[0]) and torch.equal(ranges, twin[1]), "the twin on the same pairs, exactly"
    lengths = [len(w) for w in want]
    assert max(lengths) > 20 and lengths.count(0) < len(lengths) // 2
    assert any(d[a] == d[b] for w in want for a, b in zip(w, w[1:])), "the case must hold ties within a list"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size,tile,grow", [((120, 84), 8, 1.0), ((120, 84), 16, 1.5), ((200, 76), 16, 1.0)],
                         ids=str)  # fmt: skip
def test_both_forms_give_the_same_lists(impl, size, tile, grow, device):
    """A projection binned per tile (the sorted ids in `tile_ranges`) and per macro-tile (`tile_lists`) gives
    every tile the same list, in the same order, equal depths included: on 120 x 84 at 8 px (15 x 11 tiles:
    the last macro-tile column 7 tiles wide, the last band 3 rows high), at 16 px (8 x 6 tiles: one macro-tile
    column, the last band 2 rows high), and 200 x 76 at 16 px (13 x 5 tiles: the last column 5 tiles wide, the
    last band 1 row high)."""
    width, height = size
    proj = projected(800, width, height, device, seed=11, tile=tile, grow=grow)
    depths = proj[1]
    depths[torch.nonzero(proj[2] > 0).flatten()[::3]] = 2.5  # ties
    n_tx, n_ty = tile_grid(width, height, tile)
    tile_ids, tile_ranges = lists_of(impl, proj, width, height, tile=tile, form="tiles")
    macro_ids, macro_ranges = lists_of(impl, proj, width, height, tile=tile, form="macro-tiles")
    per_tile = [tile_ids[s:e].tolist() for s, e in tile_ranges.tolist()]
    per_macro = [macro_ids[s:e].tolist() for s, e in macro_ranges.tolist()]
    for t in range(n_tx * n_ty):
        assert per_tile[t] == per_macro[t], f"tile {t}: {per_tile[t]} per tile, {per_macro[t]} per macro-tile"
    assert sum(map(len, per_tile)) == int(proj[2].sum()), "the lists hold every tile pair"
    # the case must hold Gaussians over several macro-tiles, long lists, and ties within them
    assert int(proj[3].max()) >= 2 and max(map(len, per_tile)) > 10
    d = depths.tolist()
    assert any(d[a] == d[b] for w in per_tile for a, b in zip(w, w[1:])), "the case must hold ties within a list"


@pytest.mark.parametrize("impl", IMPLS)
def test_a_short_list_buffer_is_filled_to_its_end(impl, device):
    """A list buffer shorter than the entries gets the entries that fall in it and nothing past its end (the
    renderer sizes it again from depth_order's totals); the ranges are those of the full lists cut to the buffer,
    so that the rasterizer, which runs before the renderer finds the overflow, reads nothing past it."""
    width, height = 120, 84
    n_tx, n_ty = tile_grid(width, height, 8)
    proj = projected(1000, width, height, device, seed=5, grow=1.0)
    keys, entries, n_pairs = bin_all(kernels, proj, width, height)
    sk, se = ref.sort_pairs(keys, entries, depths=proj[1])
    n_entries = int(proj[2].sum())
    full_ids, full_ranges = run(impl, sk, se, n_tx, n_ty, n_entries)
    short, guard = n_entries // 2, 11
    ids = torch.full((short + guard,), GUARD, dtype=torch.int32, device=device)
    _, ranges, scratch = list_buffers(0, n_tx * n_ty, n_pairs, device)
    impl.tile_lists(sk, se, n_tx, n_ty, out=(ids[:short], ranges, scratch))
    assert torch.equal(ids[:short], full_ids[:short]), "the entries before the end"
    assert (ids[short:] == GUARD).all(), "written past the list buffer"
    assert torch.equal(ranges, full_ranges.clamp(max=short)) and int(full_ranges.max()) > short


@pytest.mark.parametrize("impl", IMPLS)
def test_empty_input(impl, device):
    """No pairs: every tile's range is [0, 0), the list buffer untouched."""
    ids = torch.full((4,), GUARD, dtype=torch.int32, device=device)
    _, ranges, scratch = list_buffers(0, 6, 0, device)
    got_ids, got_ranges = impl.tile_lists(torch.empty(0, dtype=torch.int32, device=device),
                                          torch.empty(0, dtype=torch.int64, device=device), 3, 2,
                                          out=(ids, ranges, scratch))  # fmt: skip
    assert got_ranges.shape == (6, 2) and (got_ranges == 0).all() and (got_ids == GUARD).all()


@pytest.mark.parametrize("chunk", [1, 32], ids=["compiled-chunks", "interpreter-chunks"])
def test_chunks_of_either_length_with_the_nominal_scratch(chunk, device, monkeypatch):
    """The launcher counts bits over chunks of LIST_CHUNK pairs on the GPU and of 32 LIST_CHUNK in the
    interpreter, in a scratch of `list_scratch_shape(C)` (sized for the former): 20,000 pairs in 9 macro-tiles
    cross many chunk boundaries in the middle of a macro-tile's run, and 3 of the interpreter's chunks. The
    launcher picks the length by `interpreting()`, replaced here to take each. The chunk counts' scan takes 4
    at a time here (SCAN_BLOCK), so its carry from step to step is read in both; the pairs end in three chunks'
    worth of sentinel slots."""
    if chunk == 32 and device != "cpu":
        pytest.skip("the interpreter's chunk length: the compiled kernel is not built for it")
    module = importlib.import_module("kernels.tile_lists")  # the package's `tile_lists` is the launcher
    monkeypatch.setattr(module, "interpreting", lambda: chunk == 32)
    monkeypatch.setattr(module, "SCAN_BLOCK", 4)
    n_tx, n_ty, n = 20, 12, 20_000
    sk, se, n_entries = sorted_random_pairs(n_tx, n_ty, n, device, seed=4)
    # a capacity frame's unused tail: chunks that start in it are skipped (masks of every bit: nothing may read them)
    tail = 3 * LIST_CHUNK
    sk = torch.cat([sk, torch.full((tail,), kernels.sentinel_key(torch.int32), dtype=sk.dtype, device=device)])
    se = torch.cat([se, torch.full((tail,), -1, dtype=se.dtype, device=device)])
    n += tail
    assert n > 2 * 32 * LIST_CHUNK
    rows, cols = kernels.list_scratch_shape(n)
    scratch = torch.full((rows * cols,), -1, dtype=torch.int32, device=device)  # exactly the nominal size
    ids, ranges, _ = list_buffers(n_entries, n_tx * n_ty, n, device)
    got = kernels.tile_lists(sk, se, n_tx, n_ty, out=(ids, ranges, scratch))
    want = run(ref, sk, se, n_tx, n_ty, n_entries)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    check_lists(*got, lists_from_pairs(sk, se, n_tx, n_ty), sk, n_tx, n_ty)


def test_tile_ranges_match_reference_with_empty_tiles_and_sentinels(device):
    """Random sorted tile pairs: the launcher's ranges (into a poisoned buffer) are the twin's, the last 5 tiles
    (of no pair) [0, 0), the 3 sentinel slots in no range, and each range holds exactly its tile's keys."""
    n_tiles = 37
    keys, ids = random_keys(n_tiles - 5, 3000, device, seed=2)  # the last 5 tiles stay empty
    sk, _ = ref.sort_pairs(keys, ids)
    want = ref.tile_ranges(sk, n_tiles)
    got = kernels.tile_ranges(sk, n_tiles, out=nan_like(torch.empty(n_tiles, 2, dtype=torch.int32, device=device)))
    assert torch.equal(got, want)
    assert (got[-5:] == 0).all()
    assert int((got[:, 1] - got[:, 0]).sum()) == 3000 - 3, "sentinel keys belong to no tile"
    tiles = kernels.key_tiles(sk)  # int16 keys hold their tile less 32,768
    for t in range(n_tiles - 5):  # every range holds exactly that tile's keys, and all of them
        assert got[t, 1] > got[t, 0] and (tiles[got[t, 0] : got[t, 1]] == t).all()
        assert int((tiles == t).sum()) == int(got[t, 1] - got[t, 0])


@pytest.mark.parametrize("impl", IMPLS)
def test_tile_ranges_empty_input(impl, device):
    """No tile pairs: every tile's range is [0, 0), whatever the buffer held."""
    out = nan_like(torch.empty(6, 2, dtype=torch.int32, device=device))
    got = impl.tile_ranges(torch.empty(0, dtype=torch.int16, device=device), 6, out=out)
    assert got.shape == (6, 2) and (got == 0).all()
