"""Stage 2, bin: emit one (tile, depth) key per Gaussian-tile pair, in the order gsplat does.

Gaussian g owns the key slots [offsets[g], offsets[g] + tiles_touched[g]) (offsets = exclusive prefix sum of
the counts from `project_gaussians`). It walks the same exact ellipse-tile test row by row and writes
    key = tile_id << 32 | float_bits(depth)      (depth > 0, so its bits order like the float)
    id  = g
Rows are visited top to bottom and tiles left to right. Should this walk ever find fewer tiles than the
count (the two kernels are compiled separately, so float contraction could differ), the remaining slots
get the sentinel key INT64_MAX, which sorts last and which `tile_ranges` ignores: a pair is never left
unwritten and a Gaussian never writes past its slots.

The walk's threshold is the one the count used: `bin_t` from `project_gaussians` when given (required when
AdaGScale shrank it), else t recomputed from the opacity exactly as project does.

Inputs : means2d [N,2], conic_opacity [N,4], depths [N], tiles_touched [N] i32, offsets [N] i64, bin_t [N] (opt.)
Outputs: keys [P] i64, gaussian_ids [P] i32  (P = sum of tiles_touched)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import alpha_threshold_t, row_tile_span, tile_rows
from ._launch import interpreting

SENTINEL_KEY = torch.iinfo(torch.int64).max


@triton.jit(do_not_specialize=["N", "width", "height"])
def _emit_keys_kernel(
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    depths_ptr,  # [N] f32
    tiles_touched_ptr,  # [N] i32
    offsets_ptr,  # [N] i64, exclusive prefix sum of tiles_touched
    bin_t_ptr,  # [N] f32 binning thresholds (read when HAS_BIN_T)
    keys_ptr,  # [P] i64 out
    ids_ptr,  # [P] i32 out
    N,
    width,
    height,
    TILE: tl.constexpr,
    HAS_BIN_T: tl.constexpr,
    BLOCK_N: tl.constexpr,
    COLS: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    in_range = offs < N
    count = tl.load(tiles_touched_ptr + offs, mask=in_range, other=0)
    live = count > 0
    base = tl.load(offsets_ptr + offs, mask=live, other=0)
    mx = tl.load(means2d_ptr + offs * 2 + 0, mask=live, other=0.0)
    my = tl.load(means2d_ptr + offs * 2 + 1, mask=live, other=0.0)
    a = tl.load(conic_opacity_ptr + offs * 4 + 0, mask=live, other=1.0)
    b = tl.load(conic_opacity_ptr + offs * 4 + 1, mask=live, other=0.0)
    c = tl.load(conic_opacity_ptr + offs * 4 + 2, mask=live, other=1.0)
    o = tl.load(conic_opacity_ptr + offs * 4 + 3, mask=live, other=1.0)
    depth = tl.load(depths_ptr + offs, mask=live, other=1.0)
    depth_bits = depth.to(tl.int32, bitcast=True).to(tl.int64)
    if HAS_BIN_T:
        t = tl.load(bin_t_ptr + offs, mask=live, other=1.0)
    else:
        t = alpha_threshold_t(o)

    n_tx = (width + TILE - 1) // TILE
    n_ty = (height + TILE - 1) // TILE
    ty_lo, rows, ry = tile_rows(my, a, b, c, t, live, n_ty, TILE)
    cols = tl.arange(0, COLS)[None, :]
    written = tl.zeros([BLOCK_N], dtype=tl.int32)
    for r in range(0, tl.max(rows, axis=0)):
        tile_y = ty_lo + r
        tx_lo, span = row_tile_span(tile_y, mx, my, a, b, c, t, ry, n_tx, TILE)
        span = tl.where(r < rows, span, 0)
        span = tl.minimum(span, count - written)  # never past this Gaussian's slots
        for c0 in range(0, tl.max(span, axis=0), COLS):
            col = c0 + cols  # [1, COLS]
            m = col < span[:, None]  # [BLOCK_N, COLS]
            tile = (tile_y * n_tx + tx_lo)[:, None] + col
            key = (tile.to(tl.int64) << 32) | depth_bits[:, None]
            slot = base[:, None] + (written[:, None] + col).to(tl.int64)
            tl.store(keys_ptr + slot, key, mask=m)
            tl.store(ids_ptr + slot, offs[:, None].to(tl.int32) + col * 0, mask=m)
        written += span
    # sentinel-fill any slots the walk did not reach (see module docstring)
    missing = count - written
    for c0 in range(0, tl.max(missing, axis=0), COLS):
        col = c0 + cols
        m = col < missing[:, None]
        slot = base[:, None] + (written[:, None] + col).to(tl.int64)
        tl.store(keys_ptr + slot, tl.full([BLOCK_N, COLS], 0x7FFFFFFFFFFFFFFF, tl.int64), mask=m)
        tl.store(ids_ptr + slot, offs[:, None].to(tl.int32) + col * 0, mask=m)


def emit_tile_keys(
    means2d: torch.Tensor,  # [N, 2]
    conic_opacity: torch.Tensor,  # [N, 4]
    depths: torch.Tensor,  # [N]
    tiles_touched: torch.Tensor,  # [N] i32
    offsets: torch.Tensor,  # [N] i64
    n_pairs: int,
    width: int,
    height: int,
    *,
    tile_size: int = 16,
    bin_t: torch.Tensor | None = None,  # [N]
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and Gaussian ids of every Gaussian-tile pair. `out` buffers may be longer than n_pairs.

    bin_t: the per-Gaussian binning thresholds `project_gaussians` counted with (its last output); None
    recomputes t = 2 ln(255 o) + margin, which matches only a count made without AdaGScale.
    """
    N = means2d.shape[0]
    assert means2d.shape == (N, 2) and conic_opacity.shape == (N, 4) and depths.shape == (N,)
    assert tiles_touched.shape == (N,) and offsets.shape == (N,) and offsets.dtype == torch.int64
    assert bin_t is None or bin_t.shape == (N,), bin_t.shape
    if out is None:
        out = (
            torch.empty(n_pairs, dtype=torch.int64, device=means2d.device),
            torch.empty(n_pairs, dtype=torch.int32, device=means2d.device),
        )
    keys, ids = out
    assert keys.shape[0] >= n_pairs and ids.shape[0] >= n_pairs
    block = 256 if interpreting() else 128
    cols = 16 if interpreting() else 4
    _emit_keys_kernel[(triton.cdiv(N, block),)](
        means2d, conic_opacity, depths, tiles_touched, offsets, depths if bin_t is None else bin_t, keys, ids,
        N, width, height, TILE=tile_size, HAS_BIN_T=bin_t is not None, BLOCK_N=block, COLS=cols,
    )  # fmt: skip
    return keys[:n_pairs], ids[:n_pairs]
