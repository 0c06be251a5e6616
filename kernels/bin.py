"""Stage 3, bin: the (tile, Gaussian) or (macro-tile, Gaussian) pairs of every visible Gaussian.

The r-th Gaussian visited owns the pair slots [offsets[r] - count, offsets[r]) (offsets = inclusive prefix sum of
the counts in the order visited) and walks the same exact ellipse-tile test as `project_gaussians`. Two forms, by
the frame's launch configuration (`LaunchConfig.macro`, renderer/launch.py), told apart here by the values' dtype:

- tiles (values int32, counts = tiles_touched), the Gaussians visited in the order `depth_order` produced (nearest
  first, depth ties by Gaussian index): one pair per tile, row by row, tiles left to right,
      key = tile id      (int16 when the image has at most 65,535 tiles, less 32,768: `buffers.key_offset`; else
                         int32; counted frames of up to twice as many bin their halves apart: `halves`)
      id  = Gaussian index
  A stable sort by key then leaves each tile's pairs in depth order with ties by index, which is gsplat's order;
  the key holds no depth, so it is 2 or 4 bytes instead of the 8 of a (tile << 32 | depth) key.
- macro-tiles (values int64, counts = macros_touched), the Gaussians visited in index order (all of them, or the
  visible ones gathered): one pair per macro-tile, a block of MACRO_COLS x MACRO_ROWS tiles (8 x 4,
  kernels/constants.py), walked a band of MACRO_ROWS tile rows at a time; for each macro-tile column of the band's
  hull (`_device.band_hull`, left to right)
      key   = macro-tile id (by * macro columns + bx) << bits | the Gaussian's rounded depth   (int32)
      entry = the Gaussian index in the low 32 bits, in the high 32 the mask of the macro-tile's tiles it reaches
              (bit MACRO_COLS * row + column within the macro-tile; kernels/buffers.py `pack_entries`)
  bits = `depth_bits` of the image's macro-tiles (21 at 1080p). The one pair sort orders each macro-tile's pairs
  by depth and settles the ties exactly (kernels/sort.py), so these frames sort no Gaussians; stage 5
  (`tile_lists`) splits the lists into the tiles', the same lists. A close-up's Gaussian reaches tens of tiles but
  a few macro-tiles: several times fewer pairs to write and sort. An overview's Gaussians reach one or two tiles,
  mostly of one macro-tile: there the split costs more than the sort saves (BENCHMARKS.md, section 24), so those
  frames bin per tile.

Slots at or past `capacity` are not written: the pair buffers have a fixed size (so a frame needs no host
sync to size them, and can be replayed as a CUDA graph), and the renderer compares the true pair count with
the capacity after the frame, growing the buffers and binning again when it did not fit. Should the walk ever
find fewer tiles or macro-tiles than the count (the two kernels are compiled separately, so float contraction could
differ), the remaining slots get the sentinel key, which sorts last and which `tile_lists` ignores.

The walk is the count's: the conic as the blend record holds it (`_device.record_conic`) and the threshold
`project_gaussians` counted with: from the record's lo (`_device.record_threshold`), or AdaGScale's shrunken one
from `bin_t` where it is on.

Inputs : order [M] (tiles: i64 Gaussian indices, nearest first, an index N has no pairs; macro-tiles: i32 gathered
         indices or none), offsets (tiles: in blocks, `buffers.BlockOffsets`; macro-tiles: [M] i64), records
         [N,8] (kernels/buffers.py), counts [N] i32 (tiles or
         macro-tiles touched; the kernels take each Gaussian's from the step of its offsets, the twin from counts),
         bin_t [N] or None, depths [N] f32 (macro-tiles)
Outputs: keys [capacity] (tile ids, i16/i32; macro-tile ids above rounded depths, i32; untouched past the pair
         count), values [capacity] (i32 Gaussian ids, or i64 entries)
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ._device import (
    MACRO_COLS,
    MACRO_ROWS,
    band_hull,
    depth_key,
    record_conic,
    record_geometry,
    record_threshold,
    row_tile_span,
    tile_rows,
)
from ._launch import cdiv, interpreting, launch
from .buffers import MACRO_KEY_DTYPE, BlockOffsets, depth_bits, depth_shift, key_offset, macro_grid, sentinel_key
from .constants import INT16_TILES
from .constants import MACRO_COLS as _COLS
from .constants import MACRO_ROWS as _ROWS

assert _ROWS == 4, "the band walk below writes out its four rows"


@triton.jit
def _program_gaussians(
    order_ptr, offsets_ptr, records_ptr, bin_t_ptr, scaled, M, N, BLOCK_N: tl.constexpr, INDEXED: tl.constexpr,
    HALVES: tl.constexpr = False, ends_ptr=None, SCAN: tl.constexpr = 0,
):  # fmt: skip
    """This program's BLOCK_N Gaussians, the r-th visited being order[r] (INDEXED: in depth order, or the visible
    ones gathered) or r: (index g, pair count, first slot, live, screen mean, conic, binning threshold); idle lanes
    (past M, or culled) get no pairs and a unit conic. HALVES: the offsets are two prefix sums in one int64 (the top
    half's pairs in the low 32 bits, the bottom's above: `bin_pairs`' halves), and so is the first slot returned;
    the count is both halves'. SCAN: the offsets are sums within blocks of SCAN, and ends_ptr the blocks' ends
    (`buffers.BlockOffsets`); 0: whole.

    In depth order every read of a Gaussian's own data is a gather that fetches a 32-byte sector: the record is
    one, and all binning needs beside it. The pair count is the step of the offsets (read in order), not counts[g],
    and the threshold comes from the record's lo (`record_threshold`), not bin_t[g], unless `scaled` (AdaGScale's
    thresholds): BENCHMARKS.md, section 31."""
    pid = tl.program_id(0).to(tl.int64)
    r = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    in_range = r < M
    if INDEXED:
        g = tl.load(order_ptr + r, mask=in_range, other=0).to(tl.int64)
    else:
        g = r
    base = tl.load(offsets_ptr + r - 1, mask=in_range & (r > 0), other=0)  # the pairs before this Gaussian's
    end = tl.load(offsets_ptr + r, mask=in_range, other=0)
    if SCAN:  # each block's sums after the blocks' before it
        block = r // SCAN
        end += tl.load(ends_ptr + block - 1, mask=in_range & (block > 0), other=0)
        block = (r - 1) // SCAN
        base += tl.load(ends_ptr + block - 1, mask=in_range & (r > 0) & (block > 0), other=0)
    step = end - base
    if HALVES:
        count = ((step & 0xFFFFFFFF) + (step >> 32)).to(tl.int32)
    else:
        count = step.to(tl.int32)
    live = (count > 0) & (g < N)
    count = tl.where(live, count, 0)
    mx, my, A, B, C, lo = record_geometry(records_ptr, g, live)
    a, b, c = record_conic(tl.where(live, A, 1.0), B, tl.where(live, C, 1.0))
    if scaled:
        t = tl.load(bin_t_ptr + g, mask=live, other=1.0)
    else:
        t = tl.where(live, record_threshold(lo), 1.0)
    return g, count, base, live, mx, my, a, b, c, t, step


@triton.jit
def _fill_missing(keys_ptr, values_ptr, value, base, written, count, capacity, sentinel, COLS: tl.constexpr):
    """The sentinel key (and `value`, [BLOCK_N, 1]) in the slots a walk did not reach (see module docstring)."""
    cols = tl.arange(0, COLS)[None, :]
    missing = count - written
    for c0 in range(0, tl.max(missing, axis=0), COLS):
        col = c0 + cols
        slot = base[:, None] + (written[:, None] + col).to(tl.int64)
        m = (col < missing[:, None]) & (slot < capacity)
        tl.store(keys_ptr + slot, (sentinel + col * 0).to(keys_ptr.dtype.element_ty), mask=m)
        tl.store(values_ptr + slot, value + col * 0, mask=m)


@triton.jit
def _band_row(by, j: tl.constexpr, ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, TILE: tl.constexpr):
    """Row j of band `by`: its tiles [tx_lo, tx_lo + span), span 0 outside the Gaussian's rows."""
    ty = by * MACRO_ROWS + j
    tx_lo, span = row_tile_span(ty, mx, my, a, b, c, t, ry, n_tx, TILE)
    return tx_lo, tl.where((ty >= ty_lo) & (ty < ty_lo + rows), span, 0)


@triton.jit
def _row_bits(tx_lo, span, x0, j: tl.constexpr):
    """The mask bits of row j's tiles [tx_lo, tx_lo + span) within the macro-tile whose first column is x0."""
    s = tl.maximum(tx_lo, x0)
    n = tl.minimum(tx_lo + span, x0 + MACRO_COLS) - s
    bits = ((1 << tl.maximum(n, 0)) - 1) << tl.minimum(tl.maximum(s - x0, 0), MACRO_COLS)
    return tl.where(n > 0, bits << (MACRO_COLS * j), 0)


@triton.jit(do_not_specialize=["scaled", "M", "N", "capacity", "width", "height", "sentinel", "bits", "shift"])
def _bin_macro_kernel(
    order_ptr,  # [M] i32, the visible Gaussians' indices in index order (INDEXED; else the r-th visited is r)
    offsets_ptr,  # [M] i64, inclusive prefix sum of the macro-tile counts in that order
    records_ptr,  # [N, 8] f32 blend records
    depths_ptr,  # [N] f32
    bin_t_ptr,  # [N] f32 binning thresholds (read where `scaled`)
    keys_ptr,  # [capacity] i32 out
    entries_ptr,  # [capacity] i64 out
    scaled,  # 1: the thresholds are bin_t's (AdaGScale); 0: the records' (`record_threshold`)
    M,
    N,
    capacity,
    width,
    height,
    sentinel,
    bits,  # the keys' depth bits (kernels/buffers.py `depth_bits`)
    shift,  # `depth_shift(bits)`
    TILE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    COLS: tl.constexpr,
    INDEXED: tl.constexpr,
):
    g, count, base, live, mx, my, a, b, c, t, _ = _program_gaussians(
        order_ptr, offsets_ptr, records_ptr, bin_t_ptr, scaled, M, N, BLOCK_N, INDEXED
    )
    dq = depth_key(tl.load(depths_ptr + g, mask=live, other=0.0), bits, shift)[:, None]
    gid = g[:, None]

    n_tx = (width + TILE - 1) // TILE
    n_ty = (height + TILE - 1) // TILE
    n_mx = (n_tx + MACRO_COLS - 1) // MACRO_COLS
    ty_lo, rows, ry = tile_rows(my, a, b, c, t, live, n_ty, TILE)
    band_lo = ty_lo // MACRO_ROWS
    bands = tl.where(rows > 0, (ty_lo + rows - 1) // MACRO_ROWS - band_lo + 1, 0)
    cols = tl.arange(0, COLS)[None, :]
    written = tl.zeros([BLOCK_N], dtype=tl.int32)
    for band in range(0, tl.max(bands, axis=0)):
        by = band_lo + band
        lo0, sp0 = _band_row(by, 0, ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, TILE)
        lo1, sp1 = _band_row(by, 1, ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, TILE)
        lo2, sp2 = _band_row(by, 2, ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, TILE)
        lo3, sp3 = _band_row(by, 3, ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, TILE)
        hull_lo, hull_hi = band_hull(tl.full([BLOCK_N], 1 << 30, tl.int32), tl.full([BLOCK_N], -1, tl.int32),
                                     lo0, sp0)  # fmt: skip
        hull_lo, hull_hi = band_hull(hull_lo, hull_hi, lo1, sp1)
        hull_lo, hull_hi = band_hull(hull_lo, hull_hi, lo2, sp2)
        hull_lo, hull_hi = band_hull(hull_lo, hull_hi, lo3, sp3)
        n_cols = tl.where(hull_hi >= hull_lo, hull_hi - hull_lo + 1, 0)
        n_cols = tl.minimum(n_cols, count - written)  # never past this Gaussian's slots
        # [BLOCK_N, 1] views made before the loop (made inside it, Triton 3.6 hoisted one out of order)
        first_unit, first_x = (by * n_mx + hull_lo)[:, None], (hull_lo * MACRO_COLS)[:, None]
        first_slot, n_cols_2d = (base + written)[:, None], n_cols[:, None]
        lo0, sp0, lo1, sp1 = lo0[:, None], sp0[:, None], lo1[:, None], sp1[:, None]
        lo2, sp2, lo3, sp3 = lo2[:, None], sp2[:, None], lo3[:, None], sp3[:, None]
        for c0 in range(0, tl.max(n_cols, axis=0), COLS):
            col = c0 + cols  # [1, COLS]
            x0 = first_x + col * MACRO_COLS  # [BLOCK_N, COLS] each macro-tile's first tile column
            mask = _row_bits(lo0, sp0, x0, 0) | _row_bits(lo1, sp1, x0, 1)
            mask = mask | _row_bits(lo2, sp2, x0, 2) | _row_bits(lo3, sp3, x0, 3)
            slot = first_slot + col.to(tl.int64)
            m = (col < n_cols_2d) & (slot < capacity)
            tl.store(keys_ptr + slot, ((first_unit + col) << bits) | dq, mask=m)
            tl.store(entries_ptr + slot, (mask.to(tl.int64) << 32) | gid, mask=m)
        written += n_cols
    _fill_missing(keys_ptr, entries_ptr, gid, base, written, count, capacity, sentinel, COLS)


@triton.jit(do_not_specialize=["scaled", "M", "N", "capacity", "width", "height", "sentinel", "split_row", "top"])
def _bin_tiles_kernel(
    order_ptr,  # [M] i32/i64, Gaussian indices nearest first (N = no Gaussian)
    offsets_ptr,  # [M] inclusive prefix sum of the counts in that order: i64, or i32 within blocks of SCAN
    ends_ptr,  # [M / SCAN] i64 the blocks' ends (SCAN; `buffers.BlockOffsets`). HALVES: i64, both halves' packed
    records_ptr,  # [N, 8] f32 blend records
    bin_t_ptr,  # [N] f32 binning thresholds (read where `scaled`)
    keys_ptr,  # [capacity] i16/i32 out
    ids_ptr,  # [capacity] i32 out
    scaled,  # as in _bin_macro_kernel
    M,
    N,
    capacity,
    width,
    height,
    sentinel,
    split_row,  # HALVES: the bottom half's first tile row
    top,  # HALVES: the top half's pairs, the bottom half's first slot
    TILE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    COLS: tl.constexpr,
    KEY_OFFSET: tl.constexpr,  # a key is its tile id (in its half) less this (`buffers.key_offset`)
    HALVES: tl.constexpr,
    SCAN: tl.constexpr,  # the offsets' block (0: whole)
):
    g, count, base, live, mx, my, a, b, c, t, step = _program_gaussians(
        order_ptr, offsets_ptr, records_ptr, bin_t_ptr, scaled, M, N, BLOCK_N, True, HALVES, ends_ptr, SCAN
    )
    key_ty = keys_ptr.dtype.element_ty
    gid = g.to(tl.int32)

    n_tx = (width + TILE - 1) // TILE
    n_ty = (height + TILE - 1) // TILE
    if HALVES:  # each half's first slot and pairs: the packed offsets' two fields (`_program_gaussians`)
        first_top, first_bottom = base & 0xFFFFFFFF, top + (base >> 32)
        count_top = tl.where(live, (step & 0xFFFFFFFF).to(tl.int32), 0)
        count_bottom = count - count_top
        written_top = tl.zeros([BLOCK_N], dtype=tl.int32)
    ty_lo, rows, ry = tile_rows(my, a, b, c, t, live, n_ty, TILE)
    cols = tl.arange(0, COLS)[None, :]
    written = tl.zeros([BLOCK_N], dtype=tl.int32)  # HALVES: the bottom half's
    for row in range(0, tl.max(rows, axis=0)):
        tile_y = ty_lo + row
        tx_lo, span = row_tile_span(tile_y, mx, my, a, b, c, t, ry, n_tx, TILE)
        span = tl.where(row < rows, span, 0)
        if HALVES:  # a row's pairs go to its half's slots, keyed by the tile ids within the half
            bottom = tile_y >= split_row
            done = tl.where(bottom, written, written_top)
            span = tl.minimum(span, tl.where(bottom, count_bottom, count_top) - done)  # never past the half's slots
            first = tl.where(bottom, first_bottom, first_top) + done.to(tl.int64)
            first_tile = (tile_y - tl.where(bottom, split_row, 0)) * n_tx + tx_lo
        else:
            span = tl.minimum(span, count - written)  # never past this Gaussian's slots
            first = base + written.to(tl.int64)
            first_tile = tile_y * n_tx + tx_lo
        for c0 in range(0, tl.max(span, axis=0), COLS):
            col = c0 + cols  # [1, COLS]
            slot = first[:, None] + col.to(tl.int64)
            m = (col < span[:, None]) & (slot < capacity)  # [BLOCK_N, COLS]
            tile = first_tile[:, None] + col
            tl.store(keys_ptr + slot, (tile - KEY_OFFSET).to(key_ty), mask=m)
            tl.store(ids_ptr + slot, gid[:, None] + col * 0, mask=m)
        if HALVES:
            written += tl.where(bottom, span, 0)
            written_top += tl.where(bottom, 0, span)
        else:
            written += span
    if HALVES:
        _fill_missing(keys_ptr, ids_ptr, gid[:, None], first_top, written_top, count_top, capacity, sentinel, COLS)
        _fill_missing(keys_ptr, ids_ptr, gid[:, None], first_bottom, written, count_bottom, capacity, sentinel, COLS)
    else:
        _fill_missing(keys_ptr, ids_ptr, gid[:, None], base, written, count, capacity, sentinel, COLS)


def bin_config(n_visible: int, pairs_per_gaussian: float, wide: bool = False) -> tuple[int, int]:
    """(Gaussians per program, tiles written per step). A program walks its Gaussians' rows in lockstep, so
    fewer visible Gaussians want smaller programs, for more of them, and large footprints (an object seen
    close up) want wide steps. Measured on the H200 on real frames' orders, the narrow steps on one warp
    (`bin_warps`; BENCHMARKS.md, section 49): 64 x 2 from 1M visible Gaussians up (the composites: within 3% of
    each frame's fastest but the 24M fly-over's sparse end, 128 against 112 us), 32 x 4 below (the playbot's
    500k-Gaussian close-up 40 us, its orbit 24); and a few thousand Gaussians of a thousand tiles each want few a
    program and wide steps (fruit_drops close at 4K, 4,721 Gaussians, binned per macro-tile: 8 x 8 on two warps 85-92
    us, 4 x 32 on four 133-146, 32 x 32 on four 290-305; sections 8, 22 and 49).

    `wide`: the frame before took wide steps. It keeps them down to BIN_NARROW_BELOW tiles a Gaussian, so that
    frames near the threshold do not flip the configuration: each flip is a new kind of frame, run once without
    its graph (fruit_drops' orbit, 58-106 tiles a Gaussian, flipped twice a lap: a 1.3-1.9 ms frame where the
    others took 0.27; BENCHMARKS.md, section 25)."""
    if pairs_per_gaussian > (BIN_NARROW_BELOW if wide else BIN_WIDE_FOOTPRINT):
        return (8, 8) if n_visible < BIN_FEW_WIDE else (32, 16)
    return (32, 4) if n_visible < BIN_SMALL_SCENE else (64, 2)


def bin_warps(cols: int) -> int:
    """Warps a program of `bin_config`'s runs on. The narrow steps (4 tiles and under) take one: on four, a program
    of 32 Gaussians held each Gaussian's values in four threads, which walked its rows four times over, and the
    playbot's close-up binned in 67 us against 40 on one warp (its orbit 53 against 24; the composites 128 x 4 on four
    warps against 64 x 2 on one, 1.3-1.5x). Steps of 8 take two: fruit_drops' few huge Gaussians at 4K, 8 x 8 on two
    warps in 61-92 us against 91-146 for 4 x 32 on four (BENCHMARKS.md, section 49). The widest keep four (the many
    wide Gaussians' 32 x 16: not measured)."""
    return 1 if cols <= 4 else 2 if cols <= 8 else 4


def bins_macro_tiles(pairs_per_gaussian: float, previous: bool = False) -> bool:
    """Whether a frame whose visible Gaussians reach `pairs_per_gaussian` tiles each bins per macro-tile. The split
    into tile lists costs about as much a pair as the pair writes and the sort save, so it pays where a Gaussian
    reaches many tiles of few macro-tiles: close-ups, at 4K most (BENCHMARKS.md, section 24). Since a macro-tile
    frame sorts no Gaussians (its keys hold the depth: kernels/sort.py) it pays from fewer tiles: the forms timed
    frame by frame crossed between 3.2 tiles a Gaussian (per tile 0.91x) and 5.9 (even), and per macro-tile won at
    6.4-6.8 (0.94x) and 16-18 (0.82x) (tests/gpu/form_ab.py, section 40). A frame leaves `previous` only past the
    other threshold, so frames near one do not flip the form (and re-capture a graph)."""
    return pairs_per_gaussian >= (MACRO_UNTIL if previous else MACRO_FROM)


MACRO_FROM, MACRO_UNTIL = 6.0, 4.5  # tiles a visible Gaussian reaches, on average (12 and 9 until section 40)


def expected_macro_pairs(n_visible: int, tile_pairs: int) -> int:
    """About how many macro-tile pairs a frame of `n_visible` Gaussians reaching `tile_pairs` tiles makes, before
    it is binned so (stage 1 counts macro-tiles only for such frames): each Gaussian taken as a square of k tiles,
    k its frame's mean, which reaches (sqrt(k) / MACRO_COLS + 1) x (sqrt(k) / MACRO_ROWS + 1) blocks on average
    (and no more than its k tiles). It errs high for round Gaussians (1.25-1.4x on the bundled plant's orbit and
    close paths at 320x180 and 640x360) and low for long thin ones down a column of tiles, which reach more blocks;
    the renderer sizes the first frame binned per macro-tile with it."""
    k = tile_pairs / max(n_visible, 1)
    per_gaussian = min(k, (math.sqrt(k) / _COLS + 1) * (math.sqrt(k) / _ROWS + 1))
    return int(math.ceil(n_visible * per_gaussian))


BIN_SMALL_SCENE = 1_000_000
BIN_WIDE_FOOTPRINT = 64.0
BIN_NARROW_BELOW = 40.0  # once wide, until the footprint falls under this
BIN_FEW_WIDE = 16384  # wide Gaussians under this many: 8 a program (at most 2,048 programs)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def bin_pairs(
    order: torch.Tensor | None,  # [M] i64 depth order (tile pairs), or i32 gathered indices / None (macro-tile pairs)
    offsets: torch.Tensor | BlockOffsets,  # [M] i64 whole, or in blocks (tile pairs: kernels/order.py)
    records: torch.Tensor,  # [N, 8] f32
    counts: torch.Tensor,  # [N] i32: tiles_touched or macros_touched (checked; the kernel reads the offsets' steps)
    width: int,
    height: int,
    *,
    bin_t: torch.Tensor | None,  # [N], or None: the thresholds from the records
    depths: torch.Tensor | None = None,  # [N] f32: macro-tile pairs' keys hold them
    tile_size: int = 8,
    out: tuple[torch.Tensor, torch.Tensor],
    block: int | None = None,
    cols: int | None = None,
    warps: int | None = None,
    halves: tuple[int, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Write the pairs of every visible Gaussian into `out` = (keys, values), whose length is the capacity: tile
    pairs when values are int32 (Gaussian ids), macro-tile pairs when they are int64 (entries).

    `halves` = (split_row, top): tile pairs binned in two halves (`buffers.key_halves`), the pairs of the tile rows
    above split_row into slots [0, top) and the others' from top on, each keyed by its tile's id within its half;
    `offsets` then hold both halves' prefix sums in one int64 (`visible_order(halves=True)`).

    Tile pairs are binned in `order`, the depth order, and keyed by tile id alone. Macro-tile pairs are binned in
    index order (all N where `order` is None, else the gathered indices it lists) and keyed by macro-tile id above
    the Gaussian's rounded depth (`buffers.depth_bits`), so `sort_pairs` orders them by depth.
    The caller fills keys with `sentinel_key(keys.dtype)` first when the buffers may be longer than the pair
    count (the tail must sort last). bin_t: the per-Gaussian thresholds `project_gaussians` counted with, which
    binning needs only where they are AdaGScale's; None takes each from the Gaussian's record (`record_threshold`,
    as `project_gaussians` counted without AdaGScale), a gather less a Gaussian.
    block, cols, warps: Gaussians per program, (macro-)tiles written per step and warps a program (launch knobs;
    `bin_config`, `bin_warps`).
    """
    N = records.shape[0]
    M = N if order is None else order.shape[0]
    if isinstance(offsets, BlockOffsets):  # tile pairs: the sums within blocks and the blocks' ends
        assert out[1].dtype == torch.int32 and offsets.ends.shape[0] * offsets.block >= M, offsets.ends.shape
        offsets, ends, scan = offsets.local, offsets.ends, offsets.block
    else:
        ends, scan = offsets, 0
        assert offsets.dtype == torch.int64, offsets.dtype
    assert offsets.shape[0] >= M and (offsets.dtype == torch.int64 or halves is None), (offsets.dtype, M)
    assert records.shape == (N, 8) and counts.shape == (N,) and (bin_t is None or bin_t.shape == (N,)), records.shape
    keys, values = out
    assert keys.dtype in (torch.int16, torch.int32) and values.dtype in (torch.int32, torch.int64), values.dtype
    assert values.shape == keys.shape
    macro = values.dtype == torch.int64
    n_tx, n_ty = (width + tile_size - 1) // tile_size, (height + tile_size - 1) // tile_size
    n_mx, n_my = macro_grid(n_tx, n_ty)
    if macro:
        assert keys.dtype == MACRO_KEY_DTYPE and depths is not None and depths.shape == (N,), keys.dtype
        assert order is None or order.dtype == torch.int32, order.dtype
    else:  # every tile id of a half (or of the image) below the sentinel's
        split_row = n_ty if halves is None else halves[0]
        assert halves is None or keys.dtype == torch.int16, keys.dtype
        assert order is not None
        assert keys.dtype == torch.int32 or max(split_row, n_ty - split_row) * n_tx <= INT16_TILES, (n_tx, n_ty)
    if M == 0:
        return keys, values
    if interpreting():  # wide programs and steps: the interpreter's cost is per step, not per element
        block, cols = 2048, 16
    elif block is None or cols is None:
        block, cols = bin_config(N, 0.0)
    warps = bin_warps(cols) if warps is None else warps
    common = (records, records if bin_t is None else bin_t)
    if macro:
        bits = depth_bits(n_mx * n_my)
        launch(_bin_macro_kernel, (cdiv(M, block),),
            offsets if order is None else order, offsets, records, depths, common[1], keys, values,
            int(bin_t is not None), M, N, keys.shape[0], width, height, sentinel_key(keys.dtype), bits,
            depth_shift(bits), TILE=tile_size, BLOCK_N=block, COLS=cols, INDEXED=order is not None,
            num_warps=warps,
        )  # fmt: skip
    else:
        launch(_bin_tiles_kernel, (cdiv(M, block),),
            order, offsets, ends, *common, keys, values, int(bin_t is not None),
            M, N, keys.shape[0], width, height, sentinel_key(keys.dtype), split_row, 0 if halves is None else halves[1],
            TILE=tile_size, BLOCK_N=block, COLS=cols, KEY_OFFSET=key_offset(keys.dtype), HALVES=halves is not None,
            SCAN=scan, num_warps=warps,
        )  # fmt: skip
    return keys, values
