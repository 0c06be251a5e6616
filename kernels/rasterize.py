"""Stage 6, rasterize: front-to-back alpha compositing per tile (8x8 by default), gsplat 1.5.3 semantics exactly.

For pixel centre p = (x + 0.5, y + 0.5) and each Gaussian of the tile's depth-sorted list:
    sigma = 0.5 (a dx^2 + c dy^2) + b dx dy,  d = mean2d - p
    alpha = min(0.999, o exp(-sigma));  skipped if sigma < 0 or alpha < 1/255
    stop (without blending) when T (1 - alpha) <= 1e-4;  else C += c alpha T,  T *= 1 - alpha
    rgb = C + T background,  alpha_out = 1 - T

One program per tile, its pixels as lanes. 8x8 tiles are the default: a 64-pixel program wastes fewer
evaluations on small Gaussians than a 256-pixel one and stops sooner, which outweighs the 2-2.5x more pairs
now that the pair sort is cheap (BENCHMARKS.md has the measurements behind this).

Load balancing (CaT-GS's tile scheduling; HiGS is the published kernel closest to it). A tile's list is cut
into chunks of CHUNK Gaussians and every (tile, chunk) is its own program, so one crowded tile no longer holds
the frame back. Phase 0 runs every tile's first chunk with early termination: a short tile, or a tile whose
pixels all stop in its first chunk, is finished there. Phase 1 runs the other chunks of the unfinished long
lists, each from T = 1, writing its partial (C, T) and whether a pixel stopped; a third kernel walks a tile's
chunks front to back: C += T C_k, T *= T_k (the "over" operator is associative).
That is exact except where a pixel stops inside chunk k: there the stop depends on the global T, so the
second kernel re-blends chunk k for those pixels from their true (C, T), with the stopping rule; the pixel is
then done. A pixel that stops inside a chunk locally (T_k <= 1e-4) always stops there globally (T <= 1).

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

from ._launch import Workspace, interpreting

T_STOP = tl.constexpr(1e-4)  # a pixel stops before the Gaussian that would take T to <= 1e-4 (gsplat)


# ----------------------------------------------------------------------------------------------- blending


@triton.jit
def _blend_scalar(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, UNROLL: tl.constexpr, MARK: tl.constexpr,
):  # fmt: skip
    """Blend list entries [s, end) into the pixels' (C, T); `alive` pixels stop by gsplat's rule.

    With MARK, mark_ptr[gid] = 1 for every Gaussian that blends into or stops at least one pixel: the others
    can be removed from the list without changing the image (temporal reuse's occlusion culling).
    Returns (T, alive, stopped, cr, cg, cb): `stopped` marks pixels that hit the stopping rule here."""
    stopped = alive & False
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
            stop = ok & (next_T <= T_STOP)
            blend = ok & ~stop
            w = tl.where(blend, alpha * T, 0.0)
            cr += w * tl.load(colors_ptr + gid * 3 + 0, mask=in_list, other=0.0)
            cg += w * tl.load(colors_ptr + gid * 3 + 1, mask=in_list, other=0.0)
            cb += w * tl.load(colors_ptr + gid * 3 + 2, mask=in_list, other=0.0)
            if MARK:  # blended somewhere, or stopped a pixel (removing it would let that pixel go on)
                tl.store(mark_ptr + gid, tl.full([], 1, tl.int8), mask=tl.max(ok.to(tl.int32), axis=0) > 0)
            T = tl.where(blend, next_T, T)
            alive = alive & ~stop
            stopped = stopped | stop
        s += UNROLL
    return T, alive, stopped, cr, cg, cb


@triton.jit
def _blend_batched(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, BATCH: tl.constexpr, MARK: tl.constexpr,
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
        alpha = tl.minimum(0.999, op[:, None] * tl.exp(-sigma))
        ok = in_batch[:, None] & (sigma >= 0.0) & (alpha >= 1.0 / 255.0) & alive[None, :]
        alpha = tl.where(ok, alpha, 0.0)
        incl = tl.cumprod(1.0 - alpha, axis=0) * T[None, :]  # T after each Gaussian
        keep = incl > T_STOP  # prefix-closed: incl never increases
        w = tl.where(keep, alpha * (incl / (1.0 - alpha)), 0.0)  # alpha * T before the Gaussian
        cr += tl.sum(w * tl.load(colors_ptr + gid * 3 + 0, mask=in_batch, other=0.0)[:, None], axis=0)
        cg += tl.sum(w * tl.load(colors_ptr + gid * 3 + 1, mask=in_batch, other=0.0)[:, None], axis=0)
        cb += tl.sum(w * tl.load(colors_ptr + gid * 3 + 2, mask=in_batch, other=0.0)[:, None], axis=0)
        if MARK:  # blended somewhere, or stopped a pixel: T before it was still above the stopping threshold
            blended = tl.max((ok & (incl / (1.0 - alpha) > T_STOP)).to(tl.int32), axis=1) > 0
            tl.store(mark_ptr + gid, tl.full([BATCH], 1, tl.int8), mask=in_batch & blended)
        stop = alive & (tl.min(incl, axis=0) <= T_STOP)
        T = tl.min(tl.where(keep, incl, T[None, :]), axis=0)
        alive = alive & ~stop
        stopped = stopped | stop
        s += BATCH
    return T, alive, stopped, cr, cg, cb


@triton.jit
def _blend(
    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, end, fx, fy, T, alive,
    cr, cg, cb, BATCHED: tl.constexpr, STEP: tl.constexpr, MARK: tl.constexpr,
):  # fmt: skip
    if BATCHED:
        return _blend_batched(
            ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, end, fx, fy, T, alive, cr, cg, cb,
            STEP, MARK,
        )  # fmt: skip
    else:
        return _blend_scalar(
            ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, end, fx, fy, T, alive, cr, cg, cb,
            STEP, MARK,
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
    return px.to(tl.float32) + 0.5, py.to(tl.float32) + 0.5, inside, pix


# ----------------------------------------------------------------------------------------------- kernels


@triton.jit(do_not_specialize=["n_tiles"])
def _fill_item_tiles_kernel(
    ranges_ptr,  # [n_tiles, 2] i32
    chunk_offsets_ptr,  # [n_tiles] i32
    item_tile_ptr,  # [n_items] i32 out: the tile of each work item
    n_tiles,
    chunk,
    BLOCK: tl.constexpr,
):
    tile_id = tl.program_id(0)
    first = tl.load(chunk_offsets_ptr + tile_id)
    n = tl.maximum(tl.cdiv(tl.load(ranges_ptr + tile_id * 2 + 1) - tl.load(ranges_ptr + tile_id * 2 + 0), chunk), 1)
    for k0 in range(0, n, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        tl.store(item_tile_ptr + first + k, tile_id + k * 0, mask=k < n)


@triton.jit(do_not_specialize=["width", "height", "chunk"])
def _rasterize_kernel(
    ids_ptr,  # [C] i32, sorted by tile, depth order within a tile
    ranges_ptr,  # [n_tiles, 2] i32
    chunk_offsets_ptr,  # [n_tiles] i32, first work item of each tile (BALANCED only)
    item_tile_ptr,  # [n_items] i32, the tile of each work item (read in PHASE 1)
    n_items_ptr,  # [1] i32, number of work items (read in PHASE 1)
    done_ptr,  # [n_tiles] i32: 1 where a tile's pixels all stopped in its first chunk (BALANCED only)
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    colors_ptr,  # [N, 3] f32
    mark_ptr,  # [N] i8 out: 1 for Gaussians blended into some pixel (written only when MARK)
    bg_ptr,  # [3] f32
    partial_ptr,  # [n_items, 4, TILE * TILE] f32 out: C rgb and T (negated where the pixel stopped)
    rgb_ptr,  # [H, W, 3] f32 out
    alpha_ptr,  # [H, W] f32 out
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    chunk,  # Gaussians per work item (BALANCED only)
    TILE: tl.constexpr,
    BATCHED: tl.constexpr,
    STEP: tl.constexpr,
    BALANCED: tl.constexpr,  # False: one program per tile, its whole list
    PHASE: tl.constexpr,  # BALANCED: 0 = the first chunk of every tile (early termination); 1 = the others
    HAS_RGBA8: tl.constexpr,
    MARK: tl.constexpr,
):
    PIX: tl.constexpr = TILE * TILE
    zero = tl.zeros([PIX], tl.float32)
    if not BALANCED:
        tile_id = tl.program_id(0)
        start = tl.load(ranges_ptr + tile_id * 2 + 0)
        end = tl.load(ranges_ptr + tile_id * 2 + 1)
        fx, fy, inside, pix = _tile_pixels(tile_id, width, height, TILE)
        T, alive, stopped, cr, cg, cb = _blend(
            ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, start, end, fx, fy, zero + 1.0, inside,
            zero, zero, zero, BATCHED, STEP, MARK,
        )  # fmt: skip
        _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)
    else:
        if PHASE == 0:
            tile_id = tl.program_id(0)
            item = tl.load(chunk_offsets_ptr + tile_id)
            live = tile_id >= 0
        else:
            item = tl.program_id(0)
            live = item < tl.load(n_items_ptr)
            tile_id = tl.load(item_tile_ptr + item, mask=live, other=0)
            first = tl.load(chunk_offsets_ptr + tile_id, mask=live, other=0)
            live = live & (item > first)  # the first chunk was phase 0's
            live = live & (tl.load(done_ptr + tile_id, mask=live, other=1) == 0)
        if live:
            k = item - tl.load(chunk_offsets_ptr + tile_id)
            start = tl.load(ranges_ptr + tile_id * 2 + 0)
            end = tl.load(ranges_ptr + tile_id * 2 + 1)
            fx, fy, inside, pix = _tile_pixels(tile_id, width, height, TILE)
            s = start + k * chunk
            e = tl.minimum(end, s + chunk)
            T, alive, stopped, cr, cg, cb = _blend(
                ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, e, fx, fy, zero + 1.0, inside,
                zero, zero, zero, BATCHED, STEP, MARK,
            )  # fmt: skip
            # A tile finishes here when its list is short, or when every pixel stopped within its first chunk
            # (the stopping rule was applied with the true T, which starts at 1): later chunks cannot matter.
            finished = (end - start <= chunk) | ((k == 0) & (tl.max(alive.to(tl.int32), axis=0) == 0))
            if PHASE == 0:
                tl.store(done_ptr + tile_id, finished.to(tl.int32))
            if finished:
                _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)
            else:
                lane = tl.arange(0, PIX)
                base = partial_ptr + item.to(tl.int64) * (4 * PIX)
                tl.store(base + lane, cr)
                tl.store(base + PIX + lane, cg)
                tl.store(base + 2 * PIX + lane, cb)
                tl.store(base + 3 * PIX + lane, tl.where(stopped, -T, T))


@triton.jit(do_not_specialize=["width", "height", "chunk"])
def _composite_chunks_kernel(
    ids_ptr,  # [C] i32
    ranges_ptr,  # [n_tiles, 2] i32
    chunk_offsets_ptr,  # [n_tiles] i32
    means2d_ptr,  # [N, 2] f32
    conic_opacity_ptr,  # [N, 4] f32
    colors_ptr,  # [N, 3] f32
    mark_ptr,  # [N] i8 out (when MARK)
    bg_ptr,  # [3] f32
    partial_ptr,  # [n_items, 4, TILE * TILE] f32
    done_ptr,  # [n_tiles] i32, from phase 0
    rgb_ptr,  # [H, W, 3] f32 out
    alpha_ptr,  # [H, W] f32 out
    rgba8_ptr,  # [H, W, 4] u8 out
    width,
    height,
    chunk,
    TILE: tl.constexpr,
    BATCHED: tl.constexpr,
    STEP: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
    MARK: tl.constexpr,
):
    PIX: tl.constexpr = TILE * TILE
    tile_id = tl.program_id(0)
    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    if (end - start > chunk) & (tl.load(done_ptr + tile_id) == 0):
        fx, fy, inside, pix = _tile_pixels(tile_id, width, height, TILE)
        lane = tl.arange(0, PIX)
        first = tl.load(chunk_offsets_ptr + tile_id)
        n_chunks = tl.cdiv(end - start, chunk)
        T = tl.full([PIX], 1.0, tl.float32)
        alive = inside
        cr = tl.zeros([PIX], tl.float32)
        cg = tl.zeros([PIX], tl.float32)
        cb = tl.zeros([PIX], tl.float32)
        k = 0
        while (k < n_chunks) & (tl.max(alive.to(tl.int32), axis=0) > 0):
            base = partial_ptr + (first + k).to(tl.int64) * (4 * PIX)
            tk = tl.load(base + 3 * PIX + lane)
            # the pixel stops inside this chunk: it stopped locally, or the global T falls to the threshold
            stops_here = alive & ((tk < 0.0) | (T * tk <= T_STOP))
            if tl.max(stops_here.to(tl.int32), axis=0) > 0:
                s = start + k * chunk
                T2, alive2, stopped2, cr2, cg2, cb2 = _blend(
                    ids_ptr, means2d_ptr, conic_opacity_ptr, colors_ptr, mark_ptr, s, tl.minimum(end, s + chunk),
                    fx, fy, T, stops_here, cr, cg, cb, BATCHED, STEP, MARK,
                )  # fmt: skip
                cr = tl.where(stops_here, cr2, cr)
                cg = tl.where(stops_here, cg2, cg)
                cb = tl.where(stops_here, cb2, cb)
                T = tl.where(stops_here, T2, T)
            go = alive & ~stops_here
            cr = tl.where(go, cr + T * tl.load(base + lane), cr)
            cg = tl.where(go, cg + T * tl.load(base + PIX + lane), cg)
            cb = tl.where(go, cb + T * tl.load(base + 2 * PIX + lane), cb)
            T = tl.where(go, T * tk, T)
            alive = go
            k += 1
        _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_RGBA8)


# ----------------------------------------------------------------------------------------------- launcher

# (warps per program, Gaussians per loop step) of the scalar loop, by tile size and by how long the frame's tile
# lists are (0 short, 1 medium, 2 long): one pixel per thread pays on longer lists (more warps in flight hide
# the loads of the Gaussians), two pixels per thread and a short unroll on short ones. Measured on the H200
# over 1-4 warps and 4-32 Gaussians per step (BENCHMARKS.md, section 8). The interpreter runs the batched form
# with one configuration.
SCALAR_CONFIG = {(8, 0): (1, 8), (8, 1): (2, 8), (8, 2): (2, 16), (16, 0): (4, 8), (16, 1): (8, 8), (16, 2): (8, 16)}
# Mean pairs per tile at which a frame's lists count as medium and long (the renderer decides from the last
# frame); at 8 px the measured frames had 67-100 (objects seen close), 265 (a fly-over) and 340-1250
# (overviews of 6M and 24M Gaussians).
LIST_LENGTHS = {8: (180.0, 300.0), 16: (500.0, 1000.0)}


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
    chunk: int | None = None,
    step: int | None = None,
    num_warps: int | None = None,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None,
    workspace: Workspace | None = None,
    marks: torch.Tensor | None = None,
    lists: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Composite every tile. Returns (rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 or None).

    variant: "batched", "scalar" or "auto" (batched under the interpreter, scalar when compiled).
    chunk: Gaussians per work item for load balancing (None/0 = one program per tile, no balancing).
    step: Gaussians per loop step (batch width or unroll); num_warps: warps per program; lists: 0, 1, 2 for
    short, medium, long tile lists, which pick the measured defaults (SCALAR_CONFIG). Tuning knobs: none of
    them changes the image.
    `out` = (rgb, alpha, rgba8 or None) buffers to write into; `workspace` = where the launcher keeps its
    chunk buffers between calls.
    marks: optional [N] int8, zeroed by the caller; set to 1 for each Gaussian that blends into or stops at
    least one pixel, so that the unmarked ones can be dropped without changing the image. With load
    balancing, a Gaussian of a later chunk is marked when it blends from that chunk's T = 1 start, so the
    marks are a superset: never a Gaussian missing that did contribute.
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
    warps, unroll = SCALAR_CONFIG[tile_size, lists]
    if step is None:
        step = (64 if interpreting() else 16) if batched else unroll
    if num_warps is None:
        num_warps = max(1, tile_size * tile_size // 32) if batched else warps
    # the pair buffer's length bounds the pair count; the count itself stays on the device
    capacity = gaussian_ids.shape[0]
    balanced = bool(chunk) and capacity > chunk
    ws = workspace if workspace is not None else Workspace(device)
    meta = dict(TILE=tile_size, BATCHED=batched, STEP=step, HAS_RGBA8=has_rgba8, MARK=marks is not None,
                num_warps=num_warps)  # fmt: skip
    mark_arg = marks if marks is not None else ranges
    rgba8_arg = rgba8 if has_rgba8 else alpha
    if not balanced:
        _rasterize_kernel[(n_tiles,)](
            gaussian_ids, ranges, ranges, ranges, ranges, ranges, means2d, conic_opacity, colors, mark_arg,
            background, rgb, rgb, alpha, rgba8_arg, width, height, 0, BALANCED=False, PHASE=0, **meta,
        )  # fmt: skip
        return rgb, alpha, rgba8
    # work items: one per tile plus one per extra chunk of a long list; n_tiles + C // chunk bounds them
    max_items = n_tiles + capacity // chunk
    lengths = ranges[:, 1] - ranges[:, 0]
    n_chunks = torch.clamp_min(torch.div(lengths + (chunk - 1), chunk, rounding_mode="floor"), 1)
    incl = torch.cumsum(n_chunks, 0, dtype=torch.int32)
    chunk_offsets = incl - n_chunks
    n_items = incl[-1:]
    item_tile = ws.buffer("raster_item_tile", max_items, torch.int32)
    partial = ws.buffer("raster_partial", max_items * 4 * tile_size * tile_size, torch.float32)
    done = ws.buffer("raster_done", n_tiles, torch.int32)
    _fill_item_tiles_kernel[(n_tiles,)](ranges, chunk_offsets, item_tile, n_tiles, chunk, BLOCK=128)
    args = (
        gaussian_ids, ranges, chunk_offsets, item_tile, n_items, done, means2d, conic_opacity, colors, mark_arg,
        background, partial, rgb, alpha, rgba8_arg, width, height, chunk,
    )  # fmt: skip
    # phase 0: every tile's first chunk, with early termination; short tiles finish here
    _rasterize_kernel[(n_tiles,)](*args, BALANCED=True, PHASE=0, **meta)
    # phase 1: the other chunks of the long lists whose tiles phase 0 did not finish, then compositing
    _rasterize_kernel[(max_items,)](*args, BALANCED=True, PHASE=1, **meta)
    _composite_chunks_kernel[(n_tiles,)](
        gaussian_ids, ranges, chunk_offsets, means2d, conic_opacity, colors, mark_arg, background, partial, done,
        rgb, alpha, rgba8_arg, width, height, chunk, **meta,
    )  # fmt: skip
    return rgb, alpha, rgba8
