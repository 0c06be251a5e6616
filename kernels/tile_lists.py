"""Stage 5, tile lists: each tile's list of Gaussians, as a [start, end) into the sorted pairs.

A frame binned per tile (kernels/bin.py) has its lists already: the sorted pairs' ids; `tile_ranges` finds each
tile's run in the sorted keys (and gathers the ids of the real pairs into the lists, through the sort's
permutation).

A frame binned per macro-tile has the macro-tile lists that `sort_pairs` left grouped by macro-tile in depth order
(a key's macro-tile is its bits above `depth_bits`), each entry a Gaussian id and the mask of the macro-tile's 32
tiles it reaches (kernels/buffers.py `pack_entries`). Those lists are not split: `tile_lists` gives every tile the
run of its macro-tile, and the rasterizer keeps, of that run, the entries whose mask has the tile's bit (bit
MACRO_COLS * row + column within the macro-tile: kernels/rasterize.py). A tile's list is those entries, in the
run's order. Splitting the runs into the tiles' own lists took three launches (a count of each bit over chunks of
pairs, a scan of the counts, a scatter of the ids) and a list buffer of 4 bytes an entry; the rasterizer reading
the runs, a tile's program scanning 256 entries at a time, took 0.83-0.89 of the split and the rasterizer together
on the bench's close-ups, the same images bit for bit (BENCHMARKS.md, section 47). A tile's range is its
macro-tile's, so its length is an upper bound of the tile's list: the schedule orders the tiles by it, and the
rasterizer writes the lists' true lengths.

Sentinel keys (the unused tail of the pair buffer and slots a walk did not reach) belong to no macro-tile: their
`key >> depth_bits` is past every macro-tile id (kernels/buffers.py). A macro-tile with no pair leaves its tiles
[0, 0).

Inputs : sorted keys [C] (tile ids i16/i32; or macro-tile ids above rounded depths, i32)
Outputs: ranges [n_tiles, 2] i32 into the sorted pairs (tiles of no pair: empty); tile pairs: the ids in sorted
         order, the tiles' lists
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import MACRO_COLS, MACRO_ROWS
from ._launch import launch
from .buffers import MACRO_KEY_DTYPE, depth_bits, macro_grid

# macro-tiles a `_macro_runs_kernel` program finds the runs of
RUNS_BLOCK = 128


@triton.jit(do_not_specialize=["C", "n_macros", "n_mx", "n_tx", "n_ty", "shift"])
def _macro_runs_kernel(
    keys_ptr,  # [C] i32, sorted
    ranges_ptr,  # [n_tiles, 2] i32 out: every tile's
    C,
    n_macros,
    n_mx,
    n_tx,
    n_ty,
    shift,  # the keys' depth bits: a key's macro-tile is key >> shift
    BLOCK: tl.constexpr,
):
    """BLOCK macro-tiles' runs, each by two binary searches over the sorted keys' macro-tiles (key >> shift, which
    never decreases: the sentinel's is past every id), written to their tiles. A pass over the pairs that marked
    each run's ends and wrote the 32 tiles' ranges there took 46 us on a 1080p close-up's 400k pair slots."""
    unit = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # [BLOCK] the macro-tiles
    live = unit < n_macros
    lo = tl.zeros([BLOCK], dtype=tl.int32)  # the first pair of the macro-tile or after it
    hi = tl.zeros([BLOCK], dtype=tl.int32) + C
    lo_next = tl.zeros([BLOCK], dtype=tl.int32)  # the first pair after the macro-tile
    hi_next = tl.zeros([BLOCK], dtype=tl.int32) + C
    while tl.max(((lo < hi) | (lo_next < hi_next)).to(tl.int32), axis=0) > 0:
        mid = (lo + hi) // 2
        below = (tl.load(keys_ptr + mid, mask=lo < hi, other=0) >> shift) < unit
        lo = tl.where((lo < hi) & below, mid + 1, lo)
        hi = tl.where((lo < hi) & ~below, mid, hi)
        mid = (lo_next + hi_next) // 2
        below = (tl.load(keys_ptr + mid, mask=lo_next < hi_next, other=0) >> shift) <= unit
        lo_next = tl.where((lo_next < hi_next) & below, mid + 1, lo_next)
        hi_next = tl.where((lo_next < hi_next) & ~below, mid, hi_next)
    some = lo_next > lo
    start = tl.where(some, lo, 0)[:, None]
    end = tl.where(some, lo_next, 0)[:, None]
    bit = tl.arange(0, MACRO_COLS * MACRO_ROWS)[None, :]
    tx = (unit % n_mx)[:, None] * MACRO_COLS + bit % MACRO_COLS  # [BLOCK, 32]
    ty = (unit // n_mx)[:, None] * MACRO_ROWS + bit // MACRO_COLS
    inside = live[:, None] & (tx < n_tx) & (ty < n_ty)
    tile = ty * n_tx + tx
    tl.store(ranges_ptr + tile * 2 + 0, start + bit * 0, mask=inside)
    tl.store(ranges_ptr + tile * 2 + 1, end + bit * 0, mask=inside)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def tile_lists(sorted_keys: torch.Tensor, n_tx: int, n_ty: int, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """[n_tx * n_ty, 2] int32: each tile's range into the sorted macro-tile pairs, its macro-tile's run (the
    module docstring: the tile's list is the run's entries with its bit)."""
    C = sorted_keys.shape[0]
    assert sorted_keys.dtype == MACRO_KEY_DTYPE, sorted_keys.dtype
    if out is None:
        out = torch.empty(n_tx * n_ty, 2, dtype=torch.int32, device=sorted_keys.device)
    assert out.shape == (n_tx * n_ty, 2) and out.dtype == torch.int32, (out.shape, out.dtype)
    n_mx, n_my = macro_grid(n_tx, n_ty)
    # every tile is its macro-tile's: all written (a macro-tile with no pair [0, 0))
    launch(_macro_runs_kernel, (triton.cdiv(n_mx * n_my, RUNS_BLOCK),), sorted_keys, out, C, n_mx * n_my, n_mx, n_tx,
           n_ty, depth_bits(n_mx * n_my), BLOCK=RUNS_BLOCK)  # fmt: skip
    return out


@triton.jit(do_not_specialize=["C", "n_tiles"])
def _tile_ranges_kernel(
    keys_ptr,  # [C] i16/i32, sorted
    ranges_ptr,  # [n_tiles, 2] i32 out, zero-filled by the launcher
    values_ptr,  # [C] i32 Gaussian ids as binned (read when GATHER)
    perm_ptr,  # [C] i64 the sort's permutation (read when GATHER)
    ids_ptr,  # [C] i32 out: the ids in sorted order, the tiles' lists (written when GATHER)
    C,
    n_tiles,
    BLOCK: tl.constexpr,
    GATHER: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < C
    tile = tl.load(keys_ptr + offs, mask=m, other=0).to(tl.int32)
    prev = tl.load(keys_ptr + offs - 1, mask=m & (offs > 0), other=0).to(tl.int32)
    prev = tl.where(offs > 0, prev, -1)
    nxt = tl.load(keys_ptr + offs + 1, mask=m & (offs + 1 < C), other=0).to(tl.int32)
    nxt = tl.where(offs + 1 < C, nxt, -1)
    real = m & (tile < n_tiles)
    tl.store(ranges_ptr + tile * 2 + 0, offs.to(tl.int32), mask=real & (tile != prev))
    tl.store(ranges_ptr + tile * 2 + 1, (offs + 1).to(tl.int32), mask=real & (tile != nxt))
    if GATHER:  # the sorted ids of the real pairs alone: a slot past the pair count (the sentinel) is never read
        src = tl.load(perm_ptr + offs, mask=real, other=0)
        tl.store(ids_ptr + offs, tl.load(values_ptr + src, mask=real, other=0), mask=real)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def tile_ranges(
    sorted_keys: torch.Tensor,  # [C] i16/i32
    n_tiles: int,
    *,
    out: torch.Tensor | None = None,
    gather: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """[n_tiles, 2] int32 ranges into the sorted tile pairs (a frame binned per tile: its sorted ids are the
    lists). A pair starts its tile's run where the previous key differs and ends it where the next one does.

    gather: (values [C] i32 as binned, the sort's permutation [C] i64, ids [C] i32 out): also write the sorted ids,
    ids[i] = values[perm[i]], for the real pairs alone (`sort_pairs(gather=False)` left them to this pass). In the
    same pass as the ranges, and not over the sentinel slots past the pair count, where torch's index_select
    gathered every slot of the capacity in a launch of its own."""
    C = sorted_keys.shape[0]
    assert sorted_keys.dtype in (torch.int16, torch.int32), sorted_keys.dtype
    if out is None:
        out = torch.empty(n_tiles, 2, dtype=torch.int32, device=sorted_keys.device)
    assert out.shape == (n_tiles, 2)
    if gather is not None:
        values, perm, ids = gather
        assert values.dtype == torch.int32 and values.shape[0] >= C and ids.dtype == torch.int32, (values, ids)
        assert perm.dtype == torch.int64 and perm.shape[0] >= C and ids.shape[0] >= C, (perm.shape, ids.shape)
    out.zero_()
    if C > 0:
        block = 1024
        values, perm, ids = gather if gather is not None else (out, out, out)  # unread unless GATHER
        launch(_tile_ranges_kernel, (triton.cdiv(C, block),), sorted_keys, out, values, perm, ids, C, n_tiles,
               BLOCK=block, GATHER=gather is not None)  # fmt: skip
    return out
