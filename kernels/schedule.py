"""Stage 5, second half, schedule: the order in which the rasterizer takes the tiles, longest lists first.

The rasterizer runs one program per tile, and the GPU starts programs in the order of their ids. In tile
order, a tile with a list twenty times the mean (an object's silhouette seen close up) may start in the last
wave of programs and then run alone, its loop steps a chain of memory latencies, while the rest of the GPU
idles. Started first, its chain overlaps everyone else's work: the longest-processing-time-first rule of
scheduling. Which program draws a tile changes no pixel.

Tiles are grouped by the bit length of their list length (0 for an empty tile, 1 for one entry, 2 for 2-3,
3 for 4-7, ...; the top class holds everything from 2^(CLASSES-2) entries on) and the classes are laid out
longest first. Within a class, tiles keep their id order, so the schedule is deterministic. Two kernels, no
atomics, no host sync, many small programs (a first version with 32 programs of 1024 tiles, ranking one class
at a time, cost 46 us a frame on the H200, as much as it saved):
  1. per block of tiles: the list lengths (also the frame's `tile_counts`) and the block's class histogram
     (where the frame binned per tile, the tiles' ranges first, each found in the sorted pair keys by binary
     search);
  2. per block of tiles: where each class starts (the histograms of every block, summed), where this block's
     share of it starts (the blocks before it), and each tile's rank among the block's tiles of its class
     (one cumulative sum over a [tiles, classes] one-hot matrix).

The first kernel also keeps each block's longest list in its histogram row's last slot (the classes fill fewer),
and the second writes the frame's longest list, which the renderer reads with the frame's counts: how much of a
frame's rasterizing one list's chain of steps can hold up decides the rasterizer's launch configuration
(kernels/rasterize.py `list_class`).

Inputs : ranges [n_tiles, 2] i32 (from `tile_lists`, kernels/tile_lists.py), or the sorted tile pair keys [C]
Outputs: schedule [n_tiles] i32 (the tile of program p, a permutation of the tile ids),
         tile_counts [n_tiles] i32 (list length per tile), histograms [blocks, CLASS_SLOTS] i32 (scratch),
         longest [1] i64 (the longest list; optional), ranges (from the keys)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch, next_power_of_2
from .buffers import key_offset
from .constants import SCHEDULE_CLASSES as CLASSES

CLASS_SLOTS = 32  # CLASSES rounded up to a power of two (a block's histogram row)
LONGEST_SLOT = CLASS_SLOTS - 1  # a row's last slot: the block's longest list
assert CLASSES <= LONGEST_SLOT
MAX_ROWS = 256  # blocks of tiles, at most: each program of the second kernel reads every block's histogram


@triton.jit
def _length_class(length, CLASSES: tl.constexpr):
    """Bit length of a non-negative int32 length (0 for 0), capped at CLASSES - 1: exact, from the float's
    exponent (lengths below 2^24 convert to float32 exactly)."""
    bits = length.to(tl.float32).to(tl.int32, bitcast=True)
    cls = tl.where(length > 0, ((bits >> 23) & 0xFF) - 126, 0)
    return tl.minimum(cls, CLASSES - 1)


@triton.jit
def _run_bounds(keys_ptr, base, n, tile, steps, KEY_OFFSET: tl.constexpr, m):
    """Where each lane's tile's run of keys starts and ends in the sorted keys[base : base + n]: the first key at or
    above the tile and the first above it, two binary searches of `steps` halvings taken together (their loads
    are independent). A key is its tile id less KEY_OFFSET; unused slots' keys sort after every tile."""
    lo_a = tl.zeros_like(n)
    hi_a = n
    lo_b = tl.zeros_like(n)
    hi_b = n
    for _ in range(steps):
        on_a = m & (lo_a < hi_a)
        on_b = m & (lo_b < hi_b)
        mid_a = lo_a + ((hi_a - lo_a) >> 1)  # not (lo + hi) >> 1: a frame's pairs reach 2^31 - 1 (int32)
        mid_b = lo_b + ((hi_b - lo_b) >> 1)
        key_a = tl.load(keys_ptr + base + mid_a, mask=on_a, other=0).to(tl.int32) + KEY_OFFSET
        key_b = tl.load(keys_ptr + base + mid_b, mask=on_b, other=0).to(tl.int32) + KEY_OFFSET
        lo_a = tl.where(on_a & (key_a < tile), mid_a + 1, lo_a)
        hi_a = tl.where(on_a & (key_a >= tile), mid_a, hi_a)
        lo_b = tl.where(on_b & (key_b <= tile), mid_b + 1, lo_b)
        hi_b = tl.where(on_b & (key_b > tile), mid_b, hi_b)
    return lo_a, lo_b


@triton.jit(do_not_specialize=["n_tiles", "top", "n_keys", "split_tile", "steps"])
def _class_histogram_kernel(
    ranges_ptr,  # [n_tiles, 2] i32 (FROM_KEYS: out)
    tile_counts_ptr,  # [n_tiles] i32 out
    hist_ptr,  # [blocks, CLASS_SLOTS] i32 out
    n_tiles,
    keys_ptr,  # [n_keys] i16/i32 the sorted tile pair keys (FROM_KEYS)
    top,  # keys [0, top) are the tiles' below split_tile, [top, n_keys) the others', keyed within their half
    n_keys,
    split_tile,
    steps,  # the binary searches' halvings: the bit length of the longer half's keys
    CLASSES: tl.constexpr,
    CLASS_SLOTS: tl.constexpr,
    BLOCK: tl.constexpr,
    FROM_KEYS: tl.constexpr,  # find each tile's range in the keys, and write it
    KEY_OFFSET: tl.constexpr,
):
    pid = tl.program_id(0)
    tile = pid * BLOCK + tl.arange(0, BLOCK)
    m = tile < n_tiles
    if FROM_KEYS:
        upper = tile >= split_tile
        base = tl.where(upper, top, 0)
        start, end = _run_bounds(keys_ptr, base, tl.where(upper, n_keys - top, top), tl.where(upper, tile - split_tile,
                                 tile), steps, KEY_OFFSET, m)  # fmt: skip
        length = end - start
        tl.store(ranges_ptr + tile * 2 + 0, tl.where(length > 0, base + start, 0), mask=m)  # an empty tile: [0, 0)
        tl.store(ranges_ptr + tile * 2 + 1, tl.where(length > 0, base + end, 0), mask=m)
    else:
        length = tl.load(ranges_ptr + tile * 2 + 1, mask=m, other=0) - tl.load(ranges_ptr + tile * 2 + 0, mask=m,
                                                                              other=0)  # fmt: skip
    tl.store(tile_counts_ptr + tile, length, mask=m)
    hist = tl.histogram(_length_class(length, CLASSES), CLASS_SLOTS, mask=m)
    slots = tl.arange(0, CLASS_SLOTS)
    hist = tl.where(slots == CLASS_SLOTS - 1, tl.max(tl.where(m, length, 0), axis=0), hist)
    tl.store(hist_ptr + pid * CLASS_SLOTS + slots, hist)


@triton.jit(do_not_specialize=["n_tiles", "n_blocks"])
def _place_kernel(
    tile_counts_ptr,  # [n_tiles] i32
    hist_ptr,  # [blocks, CLASS_SLOTS] i32, each row's last slot the block's longest list
    schedule_ptr,  # [n_tiles] i32 out
    longest_ptr,  # [1] i64 out: the longest list (written when HAS_LONGEST)
    n_tiles,
    n_blocks,
    CLASSES: tl.constexpr,
    CLASS_SLOTS: tl.constexpr,
    BLOCK: tl.constexpr,
    ROWS: tl.constexpr,
    HAS_LONGEST: tl.constexpr,
):
    pid = tl.program_id(0)
    slots = tl.arange(0, CLASS_SLOTS)
    # every block's histogram: the classes' totals, and the part of each class that earlier blocks hold
    total = tl.zeros([CLASS_SLOTS], tl.int32)
    before = tl.zeros([CLASS_SLOTS], tl.int32)
    longest = tl.zeros([CLASS_SLOTS], tl.int32)
    for r0 in range(0, n_blocks, ROWS):
        row = r0 + tl.arange(0, ROWS)
        h = tl.load(hist_ptr + row[:, None] * CLASS_SLOTS + slots[None, :], mask=(row < n_blocks)[:, None], other=0)
        longest = tl.maximum(longest, tl.max(h, axis=0))  # its last slot: the blocks' longest lists
        h = tl.where(slots[None, :] < CLASSES, h, 0)
        total += tl.sum(h, axis=0)
        before += tl.sum(tl.where((row < pid)[:, None], h, 0), axis=0)
    if HAS_LONGEST:  # noqa: SIM102 (a constexpr: the store is compiled only where it is asked for)
        if pid == 0:
            top = tl.sum(tl.where(slots == CLASS_SLOTS - 1, longest, 0), axis=0)
            tl.store(longest_ptr, top.to(tl.int64))
    # where this block's tiles of each class start: the longer classes first, then earlier blocks' share
    longer = slots[None, :] > slots[:, None]  # [k, j]: class j comes before class k
    first = tl.sum(tl.where(longer, total[None, :], 0), axis=1) + before  # [CLASS_SLOTS]
    tile = pid * BLOCK + tl.arange(0, BLOCK)
    m = tile < n_tiles
    cls = _length_class(tl.load(tile_counts_ptr + tile, mask=m, other=0), CLASSES)
    mine = (cls[:, None] == slots[None, :]) & m[:, None]  # [BLOCK, CLASS_SLOTS], one class per tile
    rank = tl.sum(tl.where(mine, tl.cumsum(mine.to(tl.int32), 0), 0), axis=1) - 1  # among the block's of its class
    tl.store(schedule_ptr + tl.sum(tl.where(mine, first[None, :], 0), axis=1) + rank, tile, mask=m)


def schedule_block(n_tiles: int) -> int:
    """Tiles per program: 128 up to 32,768 tiles (1920x1080 at 8 px has 32,400), more above, so that there are
    at most MAX_ROWS blocks. Many small programs: each one's work is a short chain of reductions."""
    return max(128, min(4096, next_power_of_2(cdiv(max(n_tiles, 1), MAX_ROWS))))


def schedule_scratch_shape(n_tiles: int) -> tuple[int, int]:
    """The shape of the histogram scratch buffer `schedule_tiles` needs for `n_tiles` tiles."""
    return cdiv(max(n_tiles, 1), schedule_block(n_tiles)), CLASS_SLOTS


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def schedule_tiles(
    ranges: torch.Tensor,  # [n_tiles, 2] i32
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    longest: torch.Tensor | None = None,
    sorted_keys: torch.Tensor | None = None,
    halves: tuple[int, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(schedule [n_tiles] i32, tile_counts [n_tiles] i32). `out` = (schedule, tile_counts, histograms
    schedule_scratch_shape(n_tiles)] i32) buffers to write into; `longest`: a [1] i64 buffer for the longest
    list (0 without tiles).

    `sorted_keys` [C] i16/i32: a frame binned per tile gives its sorted tile pair keys, and the first kernel finds
    each tile's run in them by binary search and writes `ranges` (`tile_ranges`'s: [0, 0) for an empty tile), so
    that no memset and no launch come before it (they cost a counted frame's host about 20 us, in its tail:
    BENCHMARKS.md, section 54). `halves` = (top, split_tile), as `tile_ranges` takes them."""
    n_tiles = ranges.shape[0]
    assert ranges.shape == (n_tiles, 2) and ranges.dtype == torch.int32, (ranges.shape, ranges.dtype)
    scratch = schedule_scratch_shape(n_tiles)
    if out is None:
        dev = ranges.device
        out = (torch.empty(n_tiles, dtype=torch.int32, device=dev), torch.empty(n_tiles, dtype=torch.int32, device=dev),
               torch.empty(scratch, dtype=torch.int32, device=dev))  # fmt: skip
    schedule, tile_counts, hist = out
    assert schedule.shape == (n_tiles,) and tile_counts.shape == (n_tiles,), (schedule.shape, tile_counts.shape)
    assert hist.shape == scratch and hist.dtype == torch.int32, hist.shape
    n_blocks = scratch[0]
    assert longest is None or (longest.shape == (1,) and longest.dtype == torch.int64), longest
    if n_tiles == 0:
        if longest is not None:
            longest.zero_()
        return schedule, tile_counts
    block = schedule_block(n_tiles)
    warps = min(8, block // 32)
    grid = (n_blocks,)
    if sorted_keys is None:
        keys, top, C, split_tile, steps, offset = ranges, 0, 0, n_tiles, 0, 0
    else:
        assert sorted_keys.dtype in (torch.int16, torch.int32), sorted_keys.dtype
        keys, C = sorted_keys, sorted_keys.shape[0]
        top, split_tile = (C, n_tiles) if halves is None else halves
        steps, offset = max(top, C - top).bit_length(), key_offset(sorted_keys.dtype)
    launch(_class_histogram_kernel, grid, ranges, tile_counts, hist, n_tiles, keys, top, C, split_tile, steps,
           CLASSES=CLASSES, CLASS_SLOTS=CLASS_SLOTS, BLOCK=block, FROM_KEYS=sorted_keys is not None,
           KEY_OFFSET=offset, num_warps=warps)  # fmt: skip
    launch(_place_kernel, grid,
        tile_counts, hist, schedule, schedule if longest is None else longest, n_tiles, n_blocks,
        CLASSES=CLASSES, CLASS_SLOTS=CLASS_SLOTS, BLOCK=block, ROWS=64, HAS_LONGEST=longest is not None,
        num_warps=warps,
    )  # fmt: skip
    return schedule, tile_counts
