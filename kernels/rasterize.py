"""Stage 6, rasterize: front-to-back alpha compositing per tile (8x8 by default), gsplat 1.5.3 semantics exactly.

For pixel centre p = (x + 0.5, y + 0.5) and each Gaussian of the tile's depth-sorted list:
    sigma = 0.5 (a dx^2 + c dy^2) + b dx dy,  d = mean2d - p
    alpha = min(0.999, o exp(-sigma));  skipped if sigma < 0 or alpha < 1/255
    stop (without blending) when T (1 - alpha) <= 1e-4;  else C += c alpha T,  T *= 1 - alpha
    rgb = C + T background,  alpha_out = 1 - T

One program per tile, its pixels as lanes. 8x8 tiles are the default: a 64-pixel program wastes fewer
evaluations on small Gaussians than a 256-pixel one and stops sooner, which outweighs the 2-2.5x more pairs
now that the pair sort is cheap (BENCHMARKS.md has the measurements behind this).

Long lists are not split across programs: load balancing (chunks of a list on separate programs, composited
front to back) measured slower on every path with 8x8 tiles, where the longest list is a few times shorter than
with 16x16 ones and each extra chunk reran from T = 1 (BENCHMARKS.md, section 8).

Loop forms, identical semantics:
- "scalar": one Gaussian at a time, UNROLL per loop step, branch-free per-pixel selects, exit when every pixel
  of the tile is done. The form that compiles well for GPUs.
- "batched": B Gaussians per step as a [B, pixels] block, transmittance by `tl.cumprod` along the batch.
  Few, wide steps: the form the Triton interpreter (tests, CPU) runs fast.

Inputs : sorted gaussian_ids [C] i32 (only the ranges' entries are read), ranges [n_tiles, 2] i32,
         means2d [N,2], conic_opacity [N,4], colors [N,3], background [3]
Outputs: rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 (optional; A = coverage)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import ALPHA_MAX, ALPHA_MIN, PIXEL_CENTRE, T_STOP
from ._launch import interpreting

# ----------------------------------------------------------------------------------------------- blending


@triton.jit
def _list_id(ids_ptr, i, end):
    """The Gaussian id of list entry i (0 past `end`)."""
    return tl.load(ids_ptr + i, mask=i < end, other=0).to(tl.int64)


@triton.jit
def _gaussian(ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, i, end):
    """List entry i's Gaussian: (gid, mx, my, a, b, c, opacity, r, g, b); zeros past `end`."""
    return _gaussian_data(means2d_ptr, conic_opacity_ptr, colors_ptr, _list_id(ids_ptr, i, end), i < end)


@triton.jit
def _gaussian_data(means2d_ptr, conic_opacity_ptr, colors_ptr, gid, in_list):
    """The blending data of Gaussian `gid`, (gid, mx, my, a, b, c, opacity, r, g, b): `_gaussian` after its id."""
    return (
        gid,
        tl.load(means2d_ptr + gid * 2 + 0, mask=in_list, other=0.0),
        tl.load(means2d_ptr + gid * 2 + 1, mask=in_list, other=0.0),
        tl.load(conic_opacity_ptr + gid * 4 + 0, mask=in_list, other=0.0),
        tl.load(conic_opacity_ptr + gid * 4 + 1, mask=in_list, other=0.0),
        tl.load(conic_opacity_ptr + gid * 4 + 2, mask=in_list, other=0.0),
        tl.load(conic_opacity_ptr + gid * 4 + 3, mask=in_list, other=0.0),
        tl.load(colors_ptr + gid * 3 + 0, mask=in_list, other=0.0),
        tl.load(colors_ptr + gid * 3 + 1, mask=in_list, other=0.0),
        tl.load(colors_ptr + gid * 3 + 2, mask=in_list, other=0.0),
    )


@triton.jit
def _blend_one(g, in_list, fx, fy, T, alive, stopped, cr, cg, cb):
    """Blend one Gaussian g = (gid, mx, my, a, b, c, opacity, r, g, b) into the pixels, by gsplat's rule."""
    dx = g[1] - fx
    dy = g[2] - fy
    sigma = 0.5 * (g[3] * dx * dx + g[5] * dy * dy) + g[4] * dx * dy
    alpha = tl.minimum(ALPHA_MAX, g[6] * tl.exp(-sigma))
    ok = alive & in_list & (sigma >= 0.0) & (alpha >= ALPHA_MIN)
    next_T = T * (1.0 - alpha)
    stop = ok & (next_T <= T_STOP)
    blend = ok & ~stop
    w = tl.where(blend, alpha * T, 0.0)
    cr += w * g[7]
    cg += w * g[8]
    cb += w * g[9]
    T = tl.where(blend, next_T, T)
    return T, alive & ~stop, stopped | stop, cr, cg, cb


@triton.jit
def _blend_scalar(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, UNROLL: tl.constexpr, PREFETCH: tl.constexpr,
):  # fmt: skip
    """Blend list entries [s, end) into the pixels' (C, T); `alive` pixels stop by gsplat's rule.

    Returns (T, alive, stopped, cr, cg, cb): `stopped` marks pixels that hit the stopping rule here.

    PREFETCH: the ids are loaded a step ahead. Without it, a step's loads wait on its ids, then on the
    Gaussians they name, and the blending waits on both: two memory latencies per step. With it, one. (Also
    loading the next step's Gaussians ahead, in registers, measured slower on every path: BENCHMARKS.md,
    section 13.) Same arithmetic, same image."""
    stopped = alive & False
    if PREFETCH:
        ids = ()  # this step's ids
        for u in tl.static_range(UNROLL):
            ids = ids + (_list_id(ids_ptr, s + u, end),)
        while (s < end) & (tl.max(alive.to(tl.int32), axis=0) > 0):
            nxt = ()
            for u in tl.static_range(UNROLL):
                nxt = nxt + (_list_id(ids_ptr, s + UNROLL + u, end),)
            for u in tl.static_range(UNROLL):
                g = _gaussian_data(means2d_ptr, conic_opacity_ptr, colors_ptr, ids[u], s + u < end)
                T, alive, stopped, cr, cg, cb = _blend_one(g, s + u < end, fx, fy, T, alive, stopped, cr, cg, cb)
            ids = nxt
            s += UNROLL
    else:
        while (s < end) & (tl.max(alive.to(tl.int32), axis=0) > 0):
            for u in tl.static_range(UNROLL):
                g = _gaussian(ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s + u, end)
                T, alive, stopped, cr, cg, cb = _blend_one(g, s + u < end, fx, fy, T, alive, stopped, cr, cg, cb)
            s += UNROLL
    return T, alive, stopped, cr, cg, cb


@triton.jit
def _blend_batched(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, BATCH: tl.constexpr,
):  # fmt: skip
    """Same contract as `_blend_scalar`, BATCH Gaussians per step (transmittance by cumprod)."""
    stopped = alive & False
    k = tl.arange(0, BATCH)
    while (s < end) & (tl.max(alive.to(tl.int32), axis=0) > 0):
        in_batch = s + k < end
        gid = tl.load(ids_ptr + s + k, mask=in_batch, other=0).to(tl.int64)
        mx = tl.load(means2d_ptr + gid * 2 + 0, mask=in_batch, other=0.0)
        my = tl.load(means2d_ptr + gid * 2 + 1, mask=in_batch, other=0.0)
        ca = tl.load(conic_opacity_ptr + gid * 4 + 0, mask=in_batch, other=0.0)
        cbb = tl.load(conic_opacity_ptr + gid * 4 + 1, mask=in_batch, other=0.0)
        cc = tl.load(conic_opacity_ptr + gid * 4 + 2, mask=in_batch, other=0.0)
        op = tl.load(conic_opacity_ptr + gid * 4 + 3, mask=in_batch, other=0.0)
        dx = mx[:, None] - fx[None, :]  # [BATCH, PIX]
        dy = my[:, None] - fy[None, :]
        sigma = 0.5 * (ca[:, None] * dx * dx + cc[:, None] * dy * dy) + cbb[:, None] * dx * dy
        alpha = tl.minimum(ALPHA_MAX, op[:, None] * tl.exp(-sigma))
        ok = in_batch[:, None] & (sigma >= 0.0) & (alpha >= ALPHA_MIN) & alive[None, :]
        alpha = tl.where(ok, alpha, 0.0)
        incl = tl.cumprod(1.0 - alpha, axis=0) * T[None, :]  # T after each Gaussian
        keep = incl > T_STOP  # prefix-closed: incl never increases
        w = tl.where(keep, alpha * (incl / (1.0 - alpha)), 0.0)  # alpha * T before the Gaussian
        cr += tl.sum(w * tl.load(colors_ptr + gid * 3 + 0, mask=in_batch, other=0.0)[:, None], axis=0)
        cg += tl.sum(w * tl.load(colors_ptr + gid * 3 + 1, mask=in_batch, other=0.0)[:, None], axis=0)
        cb += tl.sum(w * tl.load(colors_ptr + gid * 3 + 2, mask=in_batch, other=0.0)[:, None], axis=0)
        stop = alive & (tl.min(incl, axis=0) <= T_STOP)
        T = tl.min(tl.where(keep, incl, T[None, :]), axis=0)
        alive = alive & ~stop
        stopped = stopped | stop
        s += BATCH
    return T, alive, stopped, cr, cg, cb


@triton.jit
def _blend(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, BATCHED: tl.constexpr, STEP: tl.constexpr, PREFETCH: tl.constexpr,
):  # fmt: skip
    if BATCHED:
        return _blend_batched(
            ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s, end, fx, fy, T, alive, cr, cg, cb, STEP,
        )  # fmt: skip
    else:
        return _blend_scalar(
            ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, s, end, fx, fy, T, alive, cr, cg, cb,
            STEP, PREFETCH,
        )  # fmt: skip


# ----------------------------------------------------------------------------------------------- output


@triton.jit
def _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8: tl.constexpr):
    r = cr + T * tl.load(bg_ptr + 0)
    g = cg + T * tl.load(bg_ptr + 1)
    b = cb + T * tl.load(bg_ptr + 2)
    tl.store(rgb_ptr + pix * 3 + 0, r, mask=inside)
    tl.store(rgb_ptr + pix * 3 + 1, g, mask=inside)
    tl.store(rgb_ptr + pix * 3 + 2, b, mask=inside)
    tl.store(alpha_ptr + pix, 1.0 - T, mask=inside)
    if HAS_RGBA8:
        r8 = (tl.minimum(tl.maximum(r, 0.0), 1.0) * 255.0 + 0.5).to(tl.uint8)
        g8 = (tl.minimum(tl.maximum(g, 0.0), 1.0) * 255.0 + 0.5).to(tl.uint8)
        b8 = (tl.minimum(tl.maximum(b, 0.0), 1.0) * 255.0 + 0.5).to(tl.uint8)
        a8 = (tl.minimum(tl.maximum(1.0 - T, 0.0), 1.0) * 255.0 + 0.5).to(tl.uint8)
        tl.store(rgba8_ptr + pix * 4 + 0, r8, mask=inside)
        tl.store(rgba8_ptr + pix * 4 + 1, g8, mask=inside)
        tl.store(rgba8_ptr + pix * 4 + 2, b8, mask=inside)
        tl.store(rgba8_ptr + pix * 4 + 3, a8, mask=inside)


@triton.jit
def _tile_pixels(tile_id, width, height, TILE: tl.constexpr):
    """Pixel centres (x + 0.5, y + 0.5) of tile `tile_id` (row-major tiles, row-major pixels), which of them
    lie inside the image, and their flat indices."""
    n_tx = (width + TILE - 1) // TILE
    lane = tl.arange(0, TILE * TILE)
    px = (tile_id % n_tx) * TILE + lane % TILE
    py = (tile_id // n_tx) * TILE + lane // TILE
    inside = (px < width) & (py < height)
    pix = py.to(tl.int64) * width + px
    return px.to(tl.float32) + PIXEL_CENTRE, py.to(tl.float32) + PIXEL_CENTRE, inside, pix


# ----------------------------------------------------------------------------------------------- kernels


@triton.jit(do_not_specialize=["width", "height"])
def _rasterize_kernel(
    ids_ptr,  # [C] i32, sorted by tile, depth order within a tile
    ranges_ptr,  # [n_tiles, 2] i32
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    colors_ptr,  # [N, 3] f32
    bg_ptr,  # [3] f32
    schedule_ptr,  # [n_tiles] i32, the tile each program takes (read when SCHEDULED)
    rgb_ptr,  # [H, W, 3] f32 out
    alpha_ptr,  # [H, W] f32 out
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    TILE: tl.constexpr,
    BATCHED: tl.constexpr,
    STEP: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
    PREFETCH: tl.constexpr,
    SCHEDULED: tl.constexpr,
):
    """One program per tile: its whole list, front to back, until every pixel is done. Program p takes tile
    schedule[p] when SCHEDULED (longest lists first, kernels/schedule.py), else tile p."""
    tile_id = tl.program_id(0)
    if SCHEDULED:
        tile_id = tl.load(schedule_ptr + tile_id)
    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    fx, fy, inside, pix = _tile_pixels(tile_id, width, height, TILE)
    zero = tl.zeros([TILE * TILE], tl.float32)
    T, alive, stopped, cr, cg, cb = _blend(
        ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, start, end, fx, fy, zero + 1.0, inside,
        zero, zero, zero, BATCHED, STEP, PREFETCH,
    )  # fmt: skip
    _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)


# ----------------------------------------------------------------------------------------------- launcher

# (warps per program, Gaussians per loop step, ids prefetched) of the scalar loop, by tile size and by how long
# the frame's tile lists are (0 short, 1 medium, 2 long). Measured on the H200 over 1-4 warps, 4-16 Gaussians
# per step, with and without loading the ids a step ahead, on real frames (BENCHMARKS.md, sections 8 and 13).
# The prefetch costs no registers at 8 per step and cut the rasterizer by 18-27% on the medium and long lists
# of the composites. Short lists (objects) are bound by their longest few lists and gain little. The
# interpreter runs the batched form with one configuration.
SCALAR_CONFIG = {
    (8, 0): (1, 8, True), (8, 1): (2, 8, True), (8, 2): (2, 16, True),
    (16, 0): (4, 8, True), (16, 1): (4, 16, True), (16, 2): (8, 16, True),
}  # fmt: skip
# Mean pairs per tile at which a frame's lists count as medium and long (the renderer decides from the last
# frame); at 8 px the measured frames had 67-100 (objects seen close), 265 (a fly-over) and 340-1250
# (overviews of 6M and 24M Gaussians).
LIST_LENGTHS = {8: (180.0, 300.0), 16: (500.0, 1000.0)}


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def rasterize_tiles(
    gaussian_ids: torch.Tensor,  # [C] i32, sorted by tile, depth order within a tile
    ranges: torch.Tensor,  # [n_tiles, 2] i32
    means2d: torch.Tensor,  # [N, 2]
    conic_opacity: torch.Tensor,  # [N, 4]
    colors: torch.Tensor,  # [N, 3]
    background: torch.Tensor,  # [3]
    width: int,
    height: int,
    *,
    tile_size: int = 8,
    variant: str = "auto",
    step: int | None = None,
    num_warps: int | None = None,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None,
    lists: int = 0,
    prefetch: bool | None = None,
    schedule: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Composite every tile. Returns (rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 or None).

    variant: "batched", "scalar" or "auto" (batched under the interpreter, scalar when compiled).
    step: Gaussians per loop step (batch width or unroll); num_warps: warps per program; prefetch: the
    scalar loop loads its ids a step ahead (`_blend_scalar`); lists: 0, 1, 2 for short, medium, long tile
    lists, which pick the measured defaults (SCALAR_CONFIG). Tuning knobs: none of them changes the image.
    `out` = (rgb, alpha, rgba8 or None) buffers to write into.
    schedule: optional [n_tiles] i32 permutation of the tiles, the order in which programs take them
    (`schedule_tiles`: longest lists first); None takes them in id order. The image is the same either way.
    """
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    n_tiles = n_tx * n_ty
    assert tile_size in (8, 16), tile_size
    assert ranges.shape == (n_tiles, 2), (ranges.shape, n_tx, n_ty)
    assert background.shape == (3,) and background.dtype == torch.float32
    device = means2d.device
    if out is None:
        out = (
            torch.empty(height, width, 3, dtype=torch.float32, device=device),
            torch.empty(height, width, dtype=torch.float32, device=device),
            None,
        )
    rgb, alpha, rgba8 = out
    has_rgba8 = rgba8 is not None
    if variant == "auto":
        variant = "batched" if interpreting() else "scalar"
    if variant not in ("batched", "scalar"):
        raise ValueError(f"unknown rasterizer variant {variant!r}")
    batched = variant == "batched"
    warps, unroll, pipelined = SCALAR_CONFIG[tile_size, lists]
    if prefetch is None:
        prefetch = pipelined
    if step is None:
        step = (64 if interpreting() else 16) if batched else unroll
    if num_warps is None:
        num_warps = max(1, tile_size * tile_size // 32) if batched else warps
    assert schedule is None or (schedule.shape == (n_tiles,) and schedule.dtype == torch.int32), schedule
    _rasterize_kernel[(n_tiles,)](
        gaussian_ids, ranges, means2d, conic_opacity, colors, background,
        ranges if schedule is None else schedule, rgb, alpha, rgba8 if has_rgba8 else alpha, width, height,
        TILE=tile_size, BATCHED=batched, STEP=step, HAS_RGBA8=has_rgba8,
        PREFETCH=bool(prefetch) and not batched, SCHEDULED=schedule is not None, num_warps=num_warps,
    )  # fmt: skip
    return rgb, alpha, rgba8
