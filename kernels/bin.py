"""Stage 3, bin: one (tile, Gaussian) pair per tile each visible Gaussian reaches, emitted in depth order.

The Gaussians are visited in the order `depth_order` produced (nearest first, depth ties by Gaussian index).
The r-th of them owns the pair slots [offsets[r] - count, offsets[r]) (offsets = inclusive prefix sum of the
counts in that order) and walks the same exact ellipse-tile test as `project_gaussians`, row by row, tiles
left to right, writing
    key = tile id      (int16 when the image has at most 32,767 tiles, else int32)
    id  = Gaussian index
A stable sort by key then leaves each tile's pairs in depth order with ties by index, which is gsplat's
order; the key holds no depth, so it is 2 or 4 bytes instead of the 8 of a (tile << 32 | depth) key.

Slots at or past `capacity` are not written: the pair buffers have a fixed size (so a frame needs no host
sync to size them, and can be replayed as a CUDA graph), and the renderer compares the true pair count with
the capacity after the frame, growing the buffers and binning again when it did not fit. Should the walk ever
find fewer tiles than the count (the two kernels are compiled separately, so float contraction could differ),
the remaining slots get the sentinel key, which sorts last and which `tile_ranges` ignores.

The walk is the count's: the conic as the blend record holds it (`_device.record_conic`) and the threshold
`bin_t` that `project_gaussians` counted with (AdaGScale's shrunken one where it is on).

Inputs : order [M] i64 (Gaussian indices, nearest first; an index N, past the last Gaussian, has no pairs),
         offsets [M] i64, records [N,8] (kernels/buffers.py), tiles_touched [N] i32, bin_t [N]
Outputs: keys [capacity] i16/i32 (tile ids; untouched past the pair count), ids [capacity] i32
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import record_conic, record_geometry, row_tile_span, tile_rows
from ._launch import interpreting
from .buffers import sentinel_key


@triton.jit(do_not_specialize=["M", "N", "capacity", "width", "height", "sentinel"])
def _bin_kernel(
    order_ptr,  # [M] i32/i64, Gaussian indices nearest first (N = no Gaussian)
    offsets_ptr,  # [M] i64, inclusive prefix sum of the counts in that order
    records_ptr,  # [N, 8] f32 blend records
    tiles_touched_ptr,  # [N] i32
    bin_t_ptr,  # [N] f32 binning thresholds
    keys_ptr,  # [capacity] i16/i32 out
    ids_ptr,  # [capacity] i32 out
    M,
    N,
    capacity,
    width,
    height,
    sentinel,
    TILE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    COLS: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    r = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    in_range = r < M
    g = tl.load(order_ptr + r, mask=in_range, other=0).to(tl.int64)
    count = tl.load(tiles_touched_ptr + g, mask=in_range & (g < N), other=0)
    live = count > 0
    base = tl.load(offsets_ptr + r, mask=live, other=0) - count
    mx, my, A, B, C, _ = record_geometry(records_ptr, g, live)
    a, b, c = record_conic(tl.where(live, A, 1.0), B, tl.where(live, C, 1.0))  # a unit conic on idle lanes
    t = tl.load(bin_t_ptr + g, mask=live, other=1.0)
    key_ty = keys_ptr.dtype.element_ty
    gid = g.to(tl.int32)

    n_tx = (width + TILE - 1) // TILE
    n_ty = (height + TILE - 1) // TILE
    ty_lo, rows, ry = tile_rows(my, a, b, c, t, live, n_ty, TILE)
    cols = tl.arange(0, COLS)[None, :]
    written = tl.zeros([BLOCK_N], dtype=tl.int32)
    for row in range(0, tl.max(rows, axis=0)):
        tile_y = ty_lo + row
        tx_lo, span = row_tile_span(tile_y, mx, my, a, b, c, t, ry, n_tx, TILE)
        span = tl.where(row < rows, span, 0)
        span = tl.minimum(span, count - written)  # never past this Gaussian's slots
        for c0 in range(0, tl.max(span, axis=0), COLS):
            col = c0 + cols  # [1, COLS]
            slot = base[:, None] + (written[:, None] + col).to(tl.int64)
            m = (col < span[:, None]) & (slot < capacity)  # [BLOCK_N, COLS]
            tile = (tile_y * n_tx + tx_lo)[:, None] + col
            tl.store(keys_ptr + slot, tile.to(key_ty), mask=m)
            tl.store(ids_ptr + slot, gid[:, None] + col * 0, mask=m)
        written += span
    # sentinel-fill any slots the walk did not reach (see module docstring)
    missing = count - written
    for c0 in range(0, tl.max(missing, axis=0), COLS):
        col = c0 + cols
        slot = base[:, None] + (written[:, None] + col).to(tl.int64)
        m = (col < missing[:, None]) & (slot < capacity)
        tl.store(keys_ptr + slot, (sentinel + col * 0).to(key_ty), mask=m)
        tl.store(ids_ptr + slot, gid[:, None] + col * 0, mask=m)


def bin_config(n_visible: int, pairs_per_gaussian: float) -> tuple[int, int]:
    """(Gaussians per program, tiles written per step). A program walks its Gaussians' rows in lockstep, so
    fewer visible Gaussians want smaller programs, for more of them, and large footprints (an object seen
    close up) want wide steps. Measured on the H200 on real frames' orders (BENCHMARKS.md, sections 8 and 22):
    128 x 4 is fastest from about 2M visible Gaussians up (the composites: 0.13 ms against 0.22 at 32 x 4 on
    the 6M fly-over); 32 x 4 below (a 418k-Gaussian close-up at 4K: 0.12 ms against 0.16); and a few thousand
    Gaussians of a thousand tiles each want 4 a program and 32 a step (fruit_drops close at 4K, 4k Gaussians
    and 5.3M pairs: 0.18 ms, where 32 x 16 took 0.66: 129 programs, one an SM)."""
    if pairs_per_gaussian > BIN_WIDE_FOOTPRINT:
        return (4, 32) if n_visible < BIN_FEW_WIDE else (32, 16)
    return (32 if n_visible < BIN_SMALL_SCENE else 128), 4


BIN_SMALL_SCENE = 1_000_000
BIN_WIDE_FOOTPRINT = 64.0
BIN_FEW_WIDE = 16384  # wide Gaussians under this many: 4 a program (at most 4,096 programs, 31 an SM)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def bin_pairs(
    order: torch.Tensor,  # [M] i64 (or i32)
    offsets: torch.Tensor,  # [M] i64
    records: torch.Tensor,  # [N, 8] f32
    tiles_touched: torch.Tensor,  # [N] i32
    width: int,
    height: int,
    *,
    bin_t: torch.Tensor,  # [N]
    tile_size: int = 8,
    out: tuple[torch.Tensor, torch.Tensor],
    block: int | None = None,
    cols: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Write the pairs of every visible Gaussian into `out` = (keys, ids), whose length is the capacity.

    The caller fills keys with `sentinel_key(keys.dtype)` first when the buffers may be longer than the pair
    count (the tail must sort last). bin_t: the per-Gaussian thresholds `project_gaussians` counted with.
    block, cols: Gaussians per program and tiles written per step (launch knobs; `bin_config` picks them).
    """
    M, N = order.shape[0], records.shape[0]
    assert order.dtype in (torch.int32, torch.int64) and offsets.shape == (M,) and offsets.dtype == torch.int64
    assert records.shape == (N, 8) and tiles_touched.shape == (N,) and bin_t.shape == (N,), records.shape
    keys, ids = out
    assert keys.dtype in (torch.int16, torch.int32) and ids.dtype == torch.int32 and ids.shape == keys.shape
    n_tiles = ((width + tile_size - 1) // tile_size) * ((height + tile_size - 1) // tile_size)
    assert n_tiles < sentinel_key(keys.dtype), (n_tiles, keys.dtype)
    if M == 0:
        return keys, ids
    if interpreting():  # wide steps: the interpreter's cost is per step, not per element
        block, cols = 256, 16
    elif block is None or cols is None:
        block, cols = bin_config(N, 0.0)
    _bin_kernel[(triton.cdiv(M, block),)](
        order, offsets, records, tiles_touched, bin_t, keys, ids,
        M, N, keys.shape[0], width, height, sentinel_key(keys.dtype),
        TILE=tile_size, BLOCK_N=block, COLS=cols,
    )  # fmt: skip
    return keys, ids
