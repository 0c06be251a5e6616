"""Stage 5, rasterize: front-to-back alpha compositing per 16x16 tile, gsplat 1.5.3 semantics exactly.

For pixel centre p = (x + 0.5, y + 0.5) and each Gaussian of the tile's depth-sorted list:
    sigma = 0.5 (a dx^2 + c dy^2) + b dx dy,  d = mean2d - p
    alpha = min(0.999, o exp(-sigma));  skipped if sigma < 0 or alpha < 1/255
    stop (without blending) when T (1 - alpha) <= 1e-4;  else C += c alpha T,  T *= 1 - alpha
    rgb = C + T background,  alpha_out = 1 - T

One program per tile, one lane per pixel. Two loop forms with identical semantics:
- `_rasterize_batched_kernel`: B Gaussians per step as a [B, pixels] block, transmittance by `tl.cumprod`
  along the batch. Few, wide steps: the form the Triton interpreter (tests, CPU) runs fast.
- `_rasterize_scalar_kernel`: one Gaussian at a time, UNROLL per loop step, per-pixel branch-free selects,
  exit when every pixel of the tile is done. The form that compiles well for GPUs (DESIGN.md, "Measuring").

Inputs : sorted gaussian_ids [P] i32, ranges [n_tiles, 2] i32, means2d [N,2], conic_opacity [N,4],
         colors [N,3], background [3]
Outputs: rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 (optional; A = coverage)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._launch import interpreting


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


@triton.jit(do_not_specialize=["width", "height"])
def _rasterize_batched_kernel(
    ids_ptr,  # [P] i32, sorted by (tile, depth)
    ranges_ptr,  # [n_tiles, 2] i32
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    colors_ptr,  # [N, 3] f32
    bg_ptr,  # [3] f32
    rgb_ptr,  # [H, W, 3] f32 out
    alpha_ptr,  # [H, W] f32 out
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    TILE: tl.constexpr,
    BATCH: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
):
    tile_id = tl.program_id(0)
    n_tx = (width + TILE - 1) // TILE
    tile_x = tile_id % n_tx
    tile_y = tile_id // n_tx
    lane = tl.arange(0, TILE * TILE)
    px = tile_x * TILE + lane % TILE
    py = tile_y * TILE + lane // TILE
    inside = (px < width) & (py < height)
    fx = px.to(tl.float32) + 0.5
    fy = py.to(tl.float32) + 0.5
    pix = py.to(tl.int64) * width + px

    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    T = tl.full([TILE * TILE], 1.0, tl.float32)
    done = ~inside
    cr = tl.zeros([TILE * TILE], tl.float32)
    cg = tl.zeros([TILE * TILE], tl.float32)
    cb = tl.zeros([TILE * TILE], tl.float32)
    k = tl.arange(0, BATCH)
    s = start
    while (s < end) & (tl.min(done.to(tl.int32), axis=0) == 0):
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
        alpha = tl.minimum(0.999, op[:, None] * tl.exp(-sigma))
        ok = in_batch[:, None] & (sigma >= 0.0) & (alpha >= 1.0 / 255.0) & (~done)[None, :]
        alpha = tl.where(ok, alpha, 0.0)
        incl = tl.cumprod(1.0 - alpha, axis=0) * T[None, :]  # T after each Gaussian
        keep = incl > 1e-4  # prefix-closed: incl never increases
        w = tl.where(keep, alpha * (incl / (1.0 - alpha)), 0.0)  # alpha * T before the Gaussian
        cr += tl.sum(w * tl.load(colors_ptr + gid * 3 + 0, mask=in_batch, other=0.0)[:, None], axis=0)
        cg += tl.sum(w * tl.load(colors_ptr + gid * 3 + 1, mask=in_batch, other=0.0)[:, None], axis=0)
        cb += tl.sum(w * tl.load(colors_ptr + gid * 3 + 2, mask=in_batch, other=0.0)[:, None], axis=0)
        done = done | (tl.min(incl, axis=0) <= 1e-4)
        T = tl.min(tl.where(keep, incl, T[None, :]), axis=0)
        s += BATCH
    _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)


@triton.jit(do_not_specialize=["width", "height"])
def _rasterize_scalar_kernel(
    ids_ptr,  # [P] i32, sorted by (tile, depth)
    ranges_ptr,  # [n_tiles, 2] i32
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    colors_ptr,  # [N, 3] f32
    bg_ptr,  # [3] f32
    rgb_ptr,  # [H, W, 3] f32 out
    alpha_ptr,  # [H, W] f32 out
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    TILE: tl.constexpr,
    UNROLL: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
):
    tile_id = tl.program_id(0)
    n_tx = (width + TILE - 1) // TILE
    tile_x = tile_id % n_tx
    tile_y = tile_id // n_tx
    lane = tl.arange(0, TILE * TILE)
    px = tile_x * TILE + lane % TILE
    py = tile_y * TILE + lane // TILE
    inside = (px < width) & (py < height)
    fx = px.to(tl.float32) + 0.5
    fy = py.to(tl.float32) + 0.5
    pix = py.to(tl.int64) * width + px

    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    T = tl.full([TILE * TILE], 1.0, tl.float32)
    alive = inside
    cr = tl.zeros([TILE * TILE], tl.float32)
    cg = tl.zeros([TILE * TILE], tl.float32)
    cb = tl.zeros([TILE * TILE], tl.float32)
    s = start
    while (s < end) & (tl.max(alive.to(tl.int32), axis=0) > 0):
        for u in tl.static_range(UNROLL):
            i = s + u
            in_list = i < end
            gid = tl.load(ids_ptr + i, mask=in_list, other=0).to(tl.int64)
            mx = tl.load(means2d_ptr + gid * 2 + 0, mask=in_list, other=0.0)
            my = tl.load(means2d_ptr + gid * 2 + 1, mask=in_list, other=0.0)
            ca = tl.load(conic_opacity_ptr + gid * 4 + 0, mask=in_list, other=0.0)
            cbb = tl.load(conic_opacity_ptr + gid * 4 + 1, mask=in_list, other=0.0)
            cc = tl.load(conic_opacity_ptr + gid * 4 + 2, mask=in_list, other=0.0)
            op = tl.load(conic_opacity_ptr + gid * 4 + 3, mask=in_list, other=0.0)
            dx = mx - fx
            dy = my - fy
            sigma = 0.5 * (ca * dx * dx + cc * dy * dy) + cbb * dx * dy
            alpha = tl.minimum(0.999, op * tl.exp(-sigma))
            ok = alive & in_list & (sigma >= 0.0) & (alpha >= 1.0 / 255.0)
            next_T = T * (1.0 - alpha)
            stop = ok & (next_T <= 1e-4)
            blend = ok & ~stop
            w = tl.where(blend, alpha * T, 0.0)
            cr += w * tl.load(colors_ptr + gid * 3 + 0, mask=in_list, other=0.0)
            cg += w * tl.load(colors_ptr + gid * 3 + 1, mask=in_list, other=0.0)
            cb += w * tl.load(colors_ptr + gid * 3 + 2, mask=in_list, other=0.0)
            T = tl.where(blend, next_T, T)
            alive = alive & ~stop
        s += UNROLL
    _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)


def rasterize_tiles(
    gaussian_ids: torch.Tensor,  # [P] i32, sorted by (tile, depth)
    ranges: torch.Tensor,  # [n_tiles, 2] i32
    means2d: torch.Tensor,  # [N, 2]
    conic_opacity: torch.Tensor,  # [N, 4]
    colors: torch.Tensor,  # [N, 3]
    background: torch.Tensor,  # [3]
    width: int,
    height: int,
    *,
    tile_size: int = 16,
    variant: str = "auto",
    step: int | None = None,
    num_warps: int | None = None,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Composite every tile. Returns (rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 or None).

    variant: "batched", "scalar" or "auto" (batched under the interpreter, scalar when compiled).
    step: Gaussians per loop step (batch width or unroll); num_warps: warps per tile program. Both are
    tuning knobs with measured defaults; neither changes the image.
    `out` = (rgb, alpha, rgba8 or None) buffers to write into.
    """
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    assert ranges.shape == (n_tx * n_ty, 2), (ranges.shape, n_tx, n_ty)
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
    args = (
        gaussian_ids, ranges, means2d, conic_opacity, colors, background,
        rgb, alpha, rgba8 if has_rgba8 else alpha, width, height,
    )  # fmt: skip
    grid = (n_tx * n_ty,)
    if variant == "batched":
        batch = step or (64 if interpreting() else 16)
        _rasterize_batched_kernel[grid](
            *args, TILE=tile_size, BATCH=batch, HAS_RGBA8=has_rgba8, num_warps=num_warps or 8
        )
    elif variant == "scalar":
        unroll = step or 16
        _rasterize_scalar_kernel[grid](
            *args, TILE=tile_size, UNROLL=unroll, HAS_RGBA8=has_rgba8, num_warps=num_warps or 4
        )
    else:
        raise ValueError(f"unknown rasterizer variant {variant!r}")
    return rgb, alpha, rgba8
