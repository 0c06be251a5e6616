"""Stage 1, project: 3D Gaussians -> screen-space ellipses, colours, depths and exact tile counts.

Per Gaussian (one lane each), gsplat 1.5.3's `fully_fused_projection` semantics (packed=False, classic):
  camera-space mean  m_c = R m + t                       (viewmat = T_camera_world, OpenCV axes)
  cull               z < near or z > far
  EWA covariance     Sigma_2d = J (R Sigma R^T) J^T + eps2d I   (Zwicker et al. 2002 eq. 31; J clamped to
                     1.3x the frustum as in 3DGS/gsplat), conic = Sigma_2d^-1, cull if det <= 0
  opacity            cull if o < 1/255
  colour             clamp_min(SH(normalize(m - campos)) + 0.5, 0)   (visible Gaussians only; the coefficients
                     are fp16, kernels/buffers.py `SH_DTYPE`, the sum float32)
  tiles_touched      exact number of TILE x TILE tiles (8 or 16 px) whose pixel centres the alpha = 1/255
                     ellipse reaches (0 = culled; see `_device.row_tile_span`), walked with the conic as the
                     record stores it (`_device.record_conic`), as `bin_pairs` walks it again
  macros_touched     the macro-tiles (MACRO_COLS x MACRO_ROWS tiles, kernels/constants.py) `bin_pairs` emits a
                     pair for: in each band of MACRO_ROWS tile rows, the macro-tile columns from the leftmost to
                     the rightmost one its rows' tiles reach (`_device.band_hull`)
  record             mean, conic and opacity in the rasterizer's log2 form, colour in fp16 (kernels/buffers.py)
  AdaGScale (opt-in) the same count for the shrunken binning ellipse Q <= s^2 t, s from the colour-weighted
                     alpha mass of the dropped annulus (`_device.adagscale_s2`); lossy, tiles only. Scored
                     only where the footprint's tile box at t has more than one tile (elsewhere s = 1)

Inputs : means [N,3], covars [N,6] (xx, xy, xz, yy, yz, zz; world frame), opacities [N] (activated),
         sh [N,K,3] fp16, camera [24] (viewmat row-major [16], fx, fy, cx, cy, campos [3], pad)
Outputs: records [N,8] (the blend records of kernels/buffers.py), depths [N] (+inf where culled, so that one
         stable sort of all N puts the visible Gaussians first, in depth order), tiles_touched [N] int32,
         macros_touched [N] int32, bin_t [N] (the binning threshold t' = s^2 t that `bin_pairs` must walk again;
         t when AdaGScale is off, which binning takes from the record instead: `_device.record_threshold`).
         Rows with tiles_touched == 0 are left unwritten except tiles_touched, macros_touched and depths.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import (
    ALPHA_MIN,
    HALF_LOG2E,
    LOG2E,
    MACRO_ROWS,
    adagscale_s2,
    band_hull,
    eval_sh,
    ewa_footprint,
    record_conic,
    record_threshold,
    row_tile_span,
    tile_cols,
    tile_rows,
    write_record,
)
from ._launch import interpreting, launch
from .buffers import SH_DTYPE, project_outputs


# the SH strides are not specialised: a renderer's copy (1, 3 N, N) and a window's compacted one would otherwise
# compile apart by N's divisibility by 16, which the warm-up's synthetic scenes cannot match
@triton.jit(do_not_specialize=["N", "width", "height", "sh_n", "sh_k", "sh_c"])
def _project_kernel(
    means_ptr,  # [N, 3] f32
    covars_ptr,  # [N, 6] f32
    opacities_ptr,  # [N] f32
    sh_ptr,  # [N, K, 3] f16 (kernels/buffers.py SH_DTYPE), strides (sh_n, sh_k, sh_c)
    camera_ptr,  # [24] f32
    records_ptr,  # [N, 8] f32 out (kernels/buffers.py)
    depths_ptr,  # [N] f32 out
    tiles_touched_ptr,  # [N] i32 out
    macros_touched_ptr,  # [N] i32 out
    bin_t_ptr,  # [N] f32 out (written when WRITE_T)
    tau_ptr,  # [1] f32: AdaGScale's tau for this frame (read only when ADAGSCALE)
    N,
    width,
    height,
    near,
    far,
    eps2d,
    s_min,
    sh_n,
    sh_k,
    sh_c,
    DEGREE: tl.constexpr,
    TILE: tl.constexpr,
    ADAGSCALE: tl.constexpr,
    MACROS: tl.constexpr,  # count macros_touched (the frame bins per macro-tile)
    WRITE_T: tl.constexpr,  # bin_t is given: the renderer's exact frames bin from the records and pass none
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    in_range = offs < N
    x = tl.load(means_ptr + offs * 3 + 0, mask=in_range, other=0.0)
    y = tl.load(means_ptr + offs * 3 + 1, mask=in_range, other=0.0)
    z = tl.load(means_ptr + offs * 3 + 2, mask=in_range, other=0.0)
    zc, mx, my, a, b, c, visible = ewa_footprint(
        camera_ptr, x, y, z, covars_ptr, offs, in_range, width, height, near, far, eps2d
    )
    cam_x = tl.load(camera_ptr + 20)
    cam_y = tl.load(camera_ptr + 21)
    cam_z = tl.load(camera_ptr + 22)

    o = tl.load(opacities_ptr + offs, mask=visible, other=0.0)
    visible = visible & (o >= ALPHA_MIN)
    lo = tl.log2(tl.where(visible, o, 1.0))  # the record's, and the source of t (`record_threshold`)
    t = record_threshold(lo)
    n_tx = (width + TILE - 1) // TILE
    n_ty = (height + TILE - 1) // TILE
    dx = x - cam_x
    dy = y - cam_y
    dz = z - cam_z
    inorm = 1.0 / tl.sqrt(tl.maximum(dx * dx + dy * dy + dz * dz, 1e-30))

    if ADAGSCALE:
        # score only where a shrink can remove a tile: a footprint whose tile box (full t, clipped to the
        # image) is one tile keeps t, its exact tiles (`_device` docstring). The score weighs by colour, so every
        # visible Gaussian's colour comes first, once: evaluated for the scored ones here and for the others after
        # the walk, the SH's instructions ran twice a block (masked lanes still issue them), and AdaGScale's
        # projection took 0.47 ms against exact's 0.34 on the 6M fly-over (BENCHMARKS.md, section 28)
        _, box_rows, _ = tile_rows(my, a, b, c, t, visible, n_ty, TILE)
        _, box_cols = tile_cols(mx, a, b, c, t, n_tx, TILE)
        scored = visible & (box_rows * box_cols > 1)
        sr, sg, sb = eval_sh(sh_ptr, (sh_n, sh_k, sh_c), offs, visible, dx * inorm, dy * inorm, dz * inorm, DEGREE)
        sr = tl.maximum(sr + 0.5, 0.0)
        sg = tl.maximum(sg + 0.5, 0.0)
        sb = tl.maximum(sb + 0.5, 0.0)
        tau = tl.load(tau_ptr)
        s2 = adagscale_s2(a, b, c, tl.where(visible, o, 1.0), t, sr, sg, sb, tau, s_min)
        t_bin = tl.where(scored, s2 * t, t)
    else:
        t_bin = t

    # exact tile count at the binning threshold: walk the tile rows the ellipse spans, with the conic as the
    # record will hold it (a product each way), which is the conic `bin_pairs` walks again; and the macro-tiles
    # it bins to: each band of MACRO_ROWS rows adds its hull's macro-tile columns once its last row is walked
    ra, rb, rc = record_conic(HALF_LOG2E * a, LOG2E * b, HALF_LOG2E * c)
    ty_lo, rows, ry_bin = tile_rows(my, ra, rb, rc, t_bin, visible, n_ty, TILE)
    count = tl.zeros([BLOCK_N], dtype=tl.int32)
    macros = tl.zeros([BLOCK_N], dtype=tl.int32)
    hull_lo = tl.full([BLOCK_N], 1 << 30, tl.int32)
    hull_hi = tl.full([BLOCK_N], -1, tl.int32)
    for r in range(0, tl.max(rows, axis=0)):
        ty = ty_lo + r
        tx_lo, span = row_tile_span(ty, mx, my, ra, rb, rc, t_bin, ry_bin, n_tx, TILE)
        span = tl.where(r < rows, span, 0)
        count += span
        if MACROS:
            hull_lo, hull_hi = band_hull(hull_lo, hull_hi, tx_lo, span)
            band_ends = ((ty + 1) % MACRO_ROWS == 0) | (r + 1 >= rows)
            macros += tl.where(band_ends & (hull_hi >= hull_lo), hull_hi - hull_lo + 1, 0)
            hull_lo = tl.where(band_ends, 1 << 30, hull_lo)
            hull_hi = tl.where(band_ends, -1, hull_hi)
    visible = visible & (count > 0)
    tl.store(tiles_touched_ptr + offs, tl.where(visible, count, 0), mask=in_range)
    if MACROS:
        tl.store(macros_touched_ptr + offs, tl.where(visible, macros, 0), mask=in_range)
    tl.store(depths_ptr + offs, tl.where(visible, zc, float("inf")), mask=in_range)

    # view-dependent colour, only for Gaussians that reach a tile (with AdaGScale, evaluated before the walk)
    if ADAGSCALE:
        cr, cg, cb = sr, sg, sb
    else:
        cr, cg, cb = eval_sh(sh_ptr, (sh_n, sh_k, sh_c), offs, visible, dx * inorm, dy * inorm, dz * inorm, DEGREE)
        cr = tl.maximum(cr + 0.5, 0.0)
        cg = tl.maximum(cg + 0.5, 0.0)
        cb = tl.maximum(cb + 0.5, 0.0)

    write_record(records_ptr, offs, visible, mx, my, a, b, c, lo, cr, cg, cb)
    if WRITE_T:
        tl.store(bin_t_ptr + offs, t_bin, mask=visible)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def project_gaussians(
    means: torch.Tensor,  # [N, 3]
    covars: torch.Tensor,  # [N, 6]
    opacities: torch.Tensor,  # [N]
    sh: torch.Tensor,  # [N, K, 3] SH_DTYPE (fp16)
    camera: torch.Tensor,  # [24]
    width: int,
    height: int,
    *,
    sh_degree: int,
    near: float = 0.01,
    far: float = 1e10,
    eps2d: float = 0.3,
    tile_size: int = 8,
    adagscale_tau: float | torch.Tensor | None = None,
    adagscale_s_min: float = 0.5,
    out: tuple[torch.Tensor, ...] | None = None,
    block: int | None = None,
) -> tuple[torch.Tensor, ...]:
    """Project N Gaussians for one camera.

    Args:
        adagscale_tau: None = exact binning; else AdaGScale's score threshold tau >= 0 (pixels of colour-weighted
            alpha mass; 0 keeps s = 1, the exact tiles): a float, or a [1] float32 tensor on the device that the
            kernel reads when it runs (a captured graph then replays with each frame's value).
            adagscale_s_min: the smallest binning scale, in (0, 1].
        block: Gaussians per program (a launch knob; default `project_block(N)`).

    Returns:
        records [N,8] (kernels/buffers.py), depths [N] (+inf where culled), tiles_touched [N] int32 (0 = culled),
        macros_touched [N] int32, bin_t [N]. Rows with tiles_touched == 0 are unspecified in the float outputs.
        `out` may hold None for macros_touched: a frame that bins per tile does not count them; and for bin_t
        without AdaGScale: binning then takes each threshold from the record (kernels/bin.py), and the renderer
        keeps no bin_t (4 bytes a Gaussian a slot).
    """
    N = means.shape[0]
    K = sh.shape[1]
    assert means.shape == (N, 3) and covars.shape == (N, 6) and opacities.shape == (N,), (means.shape, covars.shape)
    assert sh.shape == (N, K, 3) and camera.shape == (24,), (sh.shape, camera.shape)
    # one SH dtype, so one compiled kernel (the one the renderer's warm-up compiles: renderer/warmup.py)
    assert sh.dtype == SH_DTYPE, f"sh: {sh.dtype}, expected {SH_DTYPE} (renderer/prepare.py prepare_scene)"
    assert sh_degree >= 0 and (sh_degree + 1) ** 2 <= K, (sh_degree, K)
    if adagscale_tau is not None and not isinstance(adagscale_tau, torch.Tensor):
        assert adagscale_tau >= 0, adagscale_tau
        adagscale_tau = torch.full((1,), float(adagscale_tau), dtype=torch.float32, device=means.device)
    assert adagscale_tau is None or (adagscale_tau.shape == (1,) and adagscale_tau.dtype == torch.float32)
    assert 0 < adagscale_s_min <= 1, adagscale_s_min
    if out is None:
        out = project_outputs(N, means.device)
    records, depths, tiles_touched, macros_touched, bin_t = out
    assert bin_t is not None or adagscale_tau is None, "AdaGScale's binning thresholds go to bin_t"
    block = 2048 if interpreting() else (block or project_block(N))  # the interpreter: few, wide programs
    launch(_project_kernel, (triton.cdiv(N, block),),
        means, covars, opacities, sh, camera,
        records, depths, tiles_touched, tiles_touched if macros_touched is None else macros_touched,
        depths if bin_t is None else bin_t, depths if adagscale_tau is None else adagscale_tau,
        N, width, height, near, far, eps2d, float(adagscale_s_min), *sh.stride(),
        DEGREE=sh_degree, TILE=tile_size, ADAGSCALE=adagscale_tau is not None, MACROS=macros_touched is not None,
        WRITE_T=bin_t is not None,
        BLOCK_N=block,
    )  # fmt: skip
    return records, depths, tiles_touched, macros_touched, bin_t


def project_block(n: int) -> int:
    """Gaussians per program. Each lane walks its footprint's tile rows and a program runs as long as its
    largest footprint, so a small scene (often seen close up, with large footprints) wants small programs, for
    more of them; a large one, fewer programs. Measured on the H200 (BENCHMARKS.md, section 8)."""
    return 32 if n < PROJECT_SMALL_SCENE else 128


PROJECT_SMALL_SCENE = 65536
