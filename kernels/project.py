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
                     the rightmost one its rows' tiles reach (`_device.band_hull`); or, where the frame bins its
                     tile pairs in two halves (`halves`: the split row, kernels/buffers.py `key_halves`), in its
                     place the tiles of each half, top | bottom << 16 (each below 65,536: a half's tiles)
  record             mean, conic and opacity in the rasterizer's log2 form, colour in fp16 (kernels/buffers.py)
  AdaGScale (opt-in) the same count for the shrunken binning ellipse Q <= s^2 t, s from the colour-weighted
                     alpha mass of the dropped annulus (`_device.adagscale_s2`); lossy, tiles only. Scored
                     only where the footprint's tile box at t has more than one tile (elsewhere s = 1)

Frustum pre-cull (opt-in, `frustum=`): a Triton program runs every instruction above for all of its lanes, so a
Gaussian culled by the near plane or outside the image still costs about what a visible one does (the 6M
fly-over's projection, 1.2M visible of 6M, took 0.174 ms against the overview's 0.230 with all 6M visible:
BENCHMARKS.md, section 38). Where few are visible, a first kernel (`_frustum_kernel`) reads each Gaussian's mean
and one precomputed float, its extent (an upper bound on its covariance's largest eigenvalue, kernels/buffers.py
`gaussian_extent`), and writes the culled outputs of every Gaussian that certainly reaches no tile; the others'
indices (the survivors) go to a list, and the project kernel runs over that list alone. The bound: with t at most
2 ln(255) + T_MARGIN (opacity <= 1), the ellipse's x-extent is sqrt(t cov_xx), and
    cov_xx = j0 Sigma_c j0^T + eps2d <= (j00^2 + j02^2) lambda_max(W Sigma W^T) + eps2d,
    lambda_max(W Sigma W^T) <= ||W^T W||_inf extent          (||W||_2^2 <= any norm of W^T W; 1 for a rotation),
likewise cov_yy; a Gaussian survives unless that box, widened by 2% and 2 pixels, misses the tile grid, or it lies
behind the near plane (or past the far one) by more than its depth's rounding. Survivors are projected by the
same code as without the pre-cull, so the outputs are the same bit for bit; only the lanes' work moves. A counted
frame sizes the survivors' grid by its estimate of them (`survivors_bound`) and has a rejected Gaussian's tile
count written alone (`only_tile_counts`): its passes over all N are then the pre-cull's reads and that one write.
With the blocks' bounds (`bounds=`, `frustum_block_bounds`: per program's block of 1,024 Gaussians the sphere
holding their means and their largest extent, 32 bytes), a program first tests its block (`_block_misses`), and
a block none of whose Gaussians can reach the grid is written culled without reading its means and extents: on
the composites' fly-overs the blocks a view rules out hold nearly all the culled Gaussians (a block is one copy's
run of a scene, which lies in one cell of the grid), so the pre-cull reads about what survives.

Inputs : means [N,3], covars [N,6] (xx, xy, xz, yy, yz, zz; world frame), opacities [N] (activated),
         sh [N,K,3] fp16, camera [24] (viewmat row-major [16], fx, fy, cx, cy, campos [3], pad)
Outputs: records [N,8] (the blend records of kernels/buffers.py), depths [N] (+inf where culled, so that one
         stable sort of all N puts the visible Gaussians first, in depth order), tiles_touched [N] int32,
         macros_touched [N] int32, bin_t [N] (the binning threshold t' = s^2 t that `bin_pairs` must walk again;
         t when AdaGScale is off, which binning takes from the record instead: `_device.record_threshold`).
         Rows with tiles_touched == 0 are left unwritten except tiles_touched, macros_touched and depths (and
         those two not either where the pre-cull rejects them and `only_tile_counts` asks for that).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from . import constants
from ._device import (
    ALPHA_MIN,
    FOV_SLACK,
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
from ._launch import cdiv, interpreting, launch
from .buffers import SH_DTYPE, project_outputs

# t of the most opaque Gaussian (o = 1: `alpha_threshold_t`), with room for its float rounding
T_BOUND = tl.constexpr(1.02 * (-2.0 * math.log(constants.ALPHA_MIN) + constants.T_MARGIN))


@triton.jit
def _view_norm2(r00, r01, r02, r10, r11, r12, r20, r21, r22):
    """An upper bound on ||W||_2^2 of the view's rotation W: ||W^T W||_inf (the Gram matrix's largest row sum),
    raised for its rounding; 1 for a camera's rotation."""
    g00 = r00 * r00 + r10 * r10 + r20 * r20
    g11 = r01 * r01 + r11 * r11 + r21 * r21
    g22 = r02 * r02 + r12 * r12 + r22 * r22
    g01 = tl.abs(r00 * r01 + r10 * r11 + r20 * r21)
    g02 = tl.abs(r00 * r02 + r10 * r12 + r20 * r22)
    g12 = tl.abs(r01 * r02 + r11 * r12 + r21 * r22)
    return tl.maximum(tl.maximum(g00 + g01 + g02, g01 + g11 + g12), g02 + g12 + g22) * 1.0001


@triton.jit
def _block_misses(
    bound_ptr, camera_ptr, width, height, near, far, eps2d, extent_scale, TILE: tl.constexpr, ORTHO: tl.constexpr
):
    """Whether no Gaussian of a block can survive the pre-cull's test (`_frustum_block`), from the block's bounds
    (`frustum_block_bounds`: the sphere holding its means, its largest extent): every Gaussian behind the near
    plane or past the far one, or every one ahead of the near plane's slack with the largest footprint the
    bounds allow off one side of the tile grid. Each bound is what `_frustum_block` computes for a Gaussian, taken
    over the sphere: x/z between the tangents' from the camera, the Jacobian's norm at the sphere's nearest depth,
    the largest extent; with room for float32's rounding (its slacks, and a pixel). `reference.block_misses` is
    its twin; tests/kernels/test_project.py holds it to the Gaussian-by-Gaussian test."""
    bx = tl.load(bound_ptr + 0)
    by = tl.load(bound_ptr + 1)
    bz = tl.load(bound_ptr + 2)
    br = tl.load(bound_ptr + 3)
    blam = tl.load(bound_ptr + 4)
    r00 = tl.load(camera_ptr + 0)
    r01 = tl.load(camera_ptr + 1)
    r02 = tl.load(camera_ptr + 2)
    t0 = tl.load(camera_ptr + 3)
    r10 = tl.load(camera_ptr + 4)
    r11 = tl.load(camera_ptr + 5)
    r12 = tl.load(camera_ptr + 6)
    t1 = tl.load(camera_ptr + 7)
    r20 = tl.load(camera_ptr + 8)
    r21 = tl.load(camera_ptr + 9)
    r22 = tl.load(camera_ptr + 10)
    t2 = tl.load(camera_ptr + 11)
    fx = tl.load(camera_ptr + 16)
    fy = tl.load(camera_ptr + 17)
    cx = tl.load(camera_ptr + 18)
    cy = tl.load(camera_ptr + 19)
    w2 = _view_norm2(r00, r01, r02, r10, r11, r12, r20, r21, r22)
    # the sphere in camera space (||R||_2^2 <= w2), widened by the rounding of a mean's coordinates and the centre's
    far_coord = tl.maximum(tl.maximum(tl.abs(bx), tl.abs(by)), tl.abs(bz)) + br
    rows = tl.abs(r00) + tl.abs(r01) + tl.abs(r02) + tl.abs(r10) + tl.abs(r11) + tl.abs(r12)
    rows += tl.abs(r20) + tl.abs(r21) + tl.abs(r22)
    slack = 1e-5 * (rows * far_coord + tl.abs(t0) + tl.abs(t1) + tl.abs(t2)) + 1e-30
    X = r00 * bx + r01 * by + r02 * bz + t0
    Y = r10 * bx + r11 * by + r12 * bz + t1
    Z = r20 * bx + r21 * by + r22 * bz + t2
    rad = br * tl.sqrt(w2) * 1.0001 + slack
    # above every mean's z_slack (`_frustum_block`)
    z_slack = 1e-5 * ((tl.abs(r20) + tl.abs(r21) + tl.abs(r22)) * far_coord + tl.abs(t2)) + 1e-30
    gone = (Z + rad < near - z_slack) | (Z - rad > far + z_slack)
    front = Z - rad > near + z_slack  # none near the near plane (those are kept, `_frustum_block`)
    lam = blam * (extent_scale * w2) * 1.001
    if ORTHO:
        mx_hi = tl.maximum(fx * (X + rad), fx * (X - rad)) + cx
        mx_lo = tl.minimum(fx * (X + rad), fx * (X - rad)) + cx
        my_hi = tl.maximum(fy * (Y + rad), fy * (Y - rad)) + cy
        my_lo = tl.minimum(fy * (Y + rad), fy * (Y - rad)) + cy
        jx = fx * fx
        jy = fy * fy
    else:
        zmin = tl.where(front, Z - rad, 1.0)
        # x/z over the sphere: between the tangents from the camera, at the centre's angle -+ asin(rad / |C|)
        tb_x = rad / tl.sqrt(tl.maximum(X * X + Z * Z - rad * rad, 1e-30))
        tb_y = rad / tl.sqrt(tl.maximum(Y * Y + Z * Z - rad * rad, 1e-30))
        ta_x = X / tl.where(front, Z, 1.0)  # the centre's x/z (the where keeps a block not ahead finite)
        ta_y = Y / tl.where(front, Z, 1.0)
        dx_hi = 1.0 - ta_x * tb_x
        dx_lo = 1.0 + ta_x * tb_x
        dy_hi = 1.0 - ta_y * tb_y
        dy_lo = 1.0 + ta_y * tb_y
        big = 3.0e38
        tx_hi = tl.where(dx_hi > 1e-6, (ta_x + tb_x) / tl.maximum(dx_hi, 1e-6), big)
        tx_lo = tl.where(dx_lo > 1e-6, (ta_x - tb_x) / tl.maximum(dx_lo, 1e-6), -big)
        ty_hi = tl.where(dy_hi > 1e-6, (ta_y + tb_y) / tl.maximum(dy_hi, 1e-6), big)
        ty_lo = tl.where(dy_lo > 1e-6, (ta_y - tb_y) / tl.maximum(dy_lo, 1e-6), -big)
        tx_hi += 1e-5 * (tl.abs(tx_hi) + 1.0)
        tx_lo -= 1e-5 * (tl.abs(tx_lo) + 1.0)
        ty_hi += 1e-5 * (tl.abs(ty_hi) + 1.0)
        ty_lo -= 1e-5 * (tl.abs(ty_lo) + 1.0)
        mx_hi = tl.maximum(fx * tx_hi, fx * tx_lo) + cx
        mx_lo = tl.minimum(fx * tx_hi, fx * tx_lo) + cx
        my_hi = tl.maximum(fy * ty_hi, fy * ty_lo) + cy
        my_lo = tl.minimum(fy * ty_hi, fy * ty_lo) + cy
        # the Jacobian's row norms, (f / z)^2 (1 + clamp(x / z)^2), at most at the nearest depth and the clamp
        tan_fovx = 0.5 * width / fx
        tan_fovy = 0.5 * height / fy
        lim_x = tl.maximum((width - cx) / fx, cx / fx) + FOV_SLACK * tan_fovx
        lim_y = tl.maximum((height - cy) / fy, cy / fy) + FOV_SLACK * tan_fovy
        jx = fx * fx / (zmin * zmin) * (1.0 + lim_x * lim_x)
        jy = fy * fy / (zmin * zmin) * (1.0 + lim_y * lim_y)
    rx = tl.sqrt(T_BOUND * (jx * lam + eps2d)) + 3.0 + 1e-4 * tl.maximum(tl.abs(mx_hi), tl.abs(mx_lo))
    ry = tl.sqrt(T_BOUND * (jy * lam + eps2d)) + 3.0 + 1e-4 * tl.maximum(tl.abs(my_hi), tl.abs(my_lo))
    grid_w = ((width + TILE - 1) // TILE) * TILE
    grid_h = ((height + TILE - 1) // TILE) * TILE
    off_grid = (mx_hi + rx < 0.0) | (mx_lo - rx > grid_w) | (my_hi + ry < 0.0) | (my_lo - ry > grid_h)
    return gone | (front & off_grid)  # NaN compares false: the block is tested Gaussian by Gaussian


@triton.jit(do_not_specialize=["N", "width", "height"])
def _frustum_kernel(
    means_ptr,  # [N, 3] f32
    extent_ptr,  # [N] f32: >= the largest eigenvalue of each covariance (kernels/buffers.py gaussian_extent)
    camera_ptr,  # [24] f32
    depths_ptr,  # [N] f32 out: +inf where culled here
    tiles_touched_ptr,  # [N] i32 out: 0 where culled here
    macros_touched_ptr,  # [N] i32 out: 0 where culled here (when MACROS)
    survivors_ptr,  # [N] i32 out: the indices the project kernel takes, each program's ascending
    n_survivors_ptr,  # [1] i32: zero before the launch; the survivors' count after it
    bounds_ptr,  # [cdiv(N, BLOCK), 8] f32 (when BOUNDS): each program's block's sphere and largest extent
    N,
    width,
    height,
    near,
    far,
    eps2d,
    extent_scale,  # the scale modifier squared (the covariances are the base's times it)
    TILE: tl.constexpr,
    MACROS: tl.constexpr,
    TILES_ONLY: tl.constexpr,  # write a culled Gaussian's tile count alone (`project_gaussians`'s only_tile_counts)
    ORTHO: tl.constexpr,  # an orthographic camera (`_device.ewa_footprint`)
    BOUNDS: tl.constexpr,  # test the block's bounds first (`frustum_block_bounds`)
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    in_range = offs < N
    missed = False
    if BOUNDS:
        missed = _block_misses(bounds_ptr + pid * 8, camera_ptr, width, height, near, far, eps2d, extent_scale,
                               TILE, ORTHO)  # fmt: skip
    if missed:  # no Gaussian of the block can reach the grid: its culled outputs, without reading it
        tl.store(tiles_touched_ptr + offs, 0, mask=in_range)
        if not TILES_ONLY:
            tl.store(depths_ptr + offs, float("inf"), mask=in_range)
            if MACROS:
                tl.store(macros_touched_ptr + offs, 0, mask=in_range)
    else:
        _frustum_block(means_ptr, extent_ptr, camera_ptr, depths_ptr, tiles_touched_ptr, macros_touched_ptr,
                       survivors_ptr, n_survivors_ptr, offs, in_range, width, height, near, far, eps2d, extent_scale,
                       TILE, MACROS, TILES_ONLY, ORTHO)  # fmt: skip


@triton.jit
def _frustum_block(
    means_ptr, extent_ptr, camera_ptr, depths_ptr, tiles_touched_ptr, macros_touched_ptr, survivors_ptr,
    n_survivors_ptr, offs, in_range, width, height, near, far, eps2d, extent_scale,
    TILE: tl.constexpr, MACROS: tl.constexpr, TILES_ONLY: tl.constexpr, ORTHO: tl.constexpr,
):  # fmt: skip
    """`_frustum_kernel`'s Gaussian-by-Gaussian test of one block (`offs`)."""
    x = tl.load(means_ptr + offs * 3 + 0, mask=in_range, other=0.0)
    y = tl.load(means_ptr + offs * 3 + 1, mask=in_range, other=0.0)
    z = tl.load(means_ptr + offs * 3 + 2, mask=in_range, other=0.0)
    r00 = tl.load(camera_ptr + 0)
    r01 = tl.load(camera_ptr + 1)
    r02 = tl.load(camera_ptr + 2)
    r10 = tl.load(camera_ptr + 4)
    r11 = tl.load(camera_ptr + 5)
    r12 = tl.load(camera_ptr + 6)
    r20 = tl.load(camera_ptr + 8)
    r21 = tl.load(camera_ptr + 9)
    r22 = tl.load(camera_ptr + 10)
    fx = tl.load(camera_ptr + 16)
    fy = tl.load(camera_ptr + 17)
    cx = tl.load(camera_ptr + 18)
    cy = tl.load(camera_ptr + 19)
    xc = r00 * x + r01 * y + r02 * z + tl.load(camera_ptr + 3)
    yc = r10 * x + r11 * y + r12 * z + tl.load(camera_ptr + 7)
    t2 = tl.load(camera_ptr + 11)
    zc = r20 * x + r21 * y + r22 * z + t2
    # the project kernel computes zc apart (its float contraction may differ): within this of the near or far
    # plane, it decides
    z_slack = 1e-5 * (tl.abs(r20 * x) + tl.abs(r21 * y) + tl.abs(r22 * z) + tl.abs(t2)) + 1e-30
    ahead = in_range & (zc >= near - z_slack) & (zc <= far + z_slack)
    near_plane = zc < near + z_slack
    w2 = _view_norm2(r00, r01, r02, r10, r11, r12, r20, r21, r22)
    if ORTHO:  # the Jacobian diag(fx, fy)
        lam = tl.load(extent_ptr + offs, mask=ahead, other=0.0) * (extent_scale * w2)
        rx = tl.sqrt(T_BOUND * (fx * fx * lam + eps2d)) + 2.0
        ry = tl.sqrt(T_BOUND * (fy * fy * lam + eps2d)) + 2.0
        mx = fx * xc + cx
        my = fy * yc + cy
    else:
        # the Jacobian as `ewa_footprint` takes it (x/z, y/z clamped to 1 + FOV_SLACK of the frustum)
        tan_fovx = 0.5 * width / fx
        tan_fovy = 0.5 * height / fy
        lim_x_pos = (width - cx) / fx + FOV_SLACK * tan_fovx
        lim_x_neg = cx / fx + FOV_SLACK * tan_fovx
        lim_y_pos = (height - cy) / fy + FOV_SLACK * tan_fovy
        lim_y_neg = cy / fy + FOV_SLACK * tan_fovy
        zs = tl.where(ahead & ~near_plane, zc, 1.0)
        rz = 1.0 / zs
        tx = zs * tl.minimum(lim_x_pos, tl.maximum(-lim_x_neg, xc * rz))
        ty = zs * tl.minimum(lim_y_pos, tl.maximum(-lim_y_neg, yc * rz))
        j00 = fx * rz
        j02 = -fx * tx * rz * rz
        j11 = fy * rz
        j12 = -fy * ty * rz * rz
        lam = tl.load(extent_ptr + offs, mask=ahead, other=0.0) * (extent_scale * w2)
        rx = tl.sqrt(T_BOUND * ((j00 * j00 + j02 * j02) * lam + eps2d)) + 2.0
        ry = tl.sqrt(T_BOUND * ((j11 * j11 + j12 * j12) * lam + eps2d)) + 2.0
        mx = fx * xc * rz + cx
        my = fy * yc * rz + cy
    # the mean's own rounding, far off screen: relative
    rx += 1e-4 * tl.abs(mx)
    ry += 1e-4 * tl.abs(my)
    grid_w = ((width + TILE - 1) // TILE) * TILE
    grid_h = ((height + TILE - 1) // TILE) * TILE
    on_grid = (mx + rx >= 0.0) & (mx - rx <= grid_w) & (my + ry >= 0.0) & (my - ry <= grid_h)
    keep = ahead & (near_plane | on_grid)  # NaN compares false: culled, as `ewa_footprint` culls it
    culled = in_range & ~keep
    tl.store(tiles_touched_ptr + offs, 0, mask=culled)
    if not TILES_ONLY:
        tl.store(depths_ptr + offs, float("inf"), mask=culled)
        if MACROS:
            tl.store(macros_touched_ptr + offs, 0, mask=culled)
    # the survivors after the programs' that reserved before this one (the order across programs is the
    # atomics', which changes no output: each survivor's rows are its own). A program none of whose Gaussians
    # survives (most of them, where a pre-cull pays) skips its scan and its atomic: the 24M fly-over's frames one
    # by one took 1.3% less in all, its sparse last frames 0.07-0.2 ms less each (BENCHMARKS.md, section 42)
    k = keep.to(tl.int32)
    n_keep = tl.sum(k, axis=0)
    if n_keep > 0:
        rank = tl.cumsum(k, axis=0) - k
        base = tl.atomic_add(n_survivors_ptr, n_keep)
        tl.store(survivors_ptr + base + rank, offs.to(tl.int32), mask=keep)


@triton.jit
def _project_rows(
    offs,  # [BLOCK_N] i64: the rows this step projects
    in_range,  # [BLOCK_N]: which lanes hold one
    means_ptr,
    covars_ptr,
    opacities_ptr,
    sh_ptr,
    camera_ptr,
    records_ptr,
    depths_ptr,
    tiles_touched_ptr,
    macros_touched_ptr,
    bin_t_ptr,
    tau_ptr,
    width,
    height,
    near,
    far,
    eps2d,
    s_min,
    sh_n,
    sh_k,
    sh_c,
    split_row,
    DEGREE: tl.constexpr,
    TILE: tl.constexpr,
    ADAGSCALE: tl.constexpr,
    MACROS: tl.constexpr,
    HALVES: tl.constexpr,
    WRITE_T: tl.constexpr,
    ORTHO: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Stage 1 for one block of rows (`_project_kernel`'s arguments, which says what each is)."""
    x = tl.load(means_ptr + offs * 3 + 0, mask=in_range, other=0.0)
    y = tl.load(means_ptr + offs * 3 + 1, mask=in_range, other=0.0)
    z = tl.load(means_ptr + offs * 3 + 2, mask=in_range, other=0.0)
    zc, mx, my, a, b, c, visible = ewa_footprint(
        camera_ptr, x, y, z, covars_ptr, offs, in_range, width, height, near, far, eps2d, ORTHO
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
    macros = tl.zeros([BLOCK_N], dtype=tl.int32)  # HALVES: the top half's tiles
    hull_lo = tl.full([BLOCK_N], 1 << 30, tl.int32)
    hull_hi = tl.full([BLOCK_N], -1, tl.int32)
    for r in range(0, tl.max(rows, axis=0)):
        ty = ty_lo + r
        tx_lo, span = row_tile_span(ty, mx, my, ra, rb, rc, t_bin, ry_bin, n_tx, TILE)
        span = tl.where(r < rows, span, 0)
        count += span
        if HALVES:
            macros += tl.where(ty < split_row, span, 0)
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
    if HALVES:
        tl.store(macros_touched_ptr + offs, tl.where(visible, macros | ((count - macros) << 16), 0), mask=in_range)
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


# the SH strides are not specialised: a renderer's copy (1, 3 N, N) and a window's compacted one would otherwise
# compile apart by N's divisibility by 16, which the warm-up's synthetic scenes cannot match
@triton.jit(do_not_specialize=["N", "width", "height", "sh_n", "sh_k", "sh_c", "split_row"])
def _project_kernel(
    means_ptr,  # [N, 3] f32
    covars_ptr,  # [N, 6] f32
    opacities_ptr,  # [N] f32
    sh_ptr,  # [N, K, 3] f16 (kernels/buffers.py SH_DTYPE), strides (sh_n, sh_k, sh_c)
    camera_ptr,  # [24] f32
    records_ptr,  # [N, 8] f32 out (kernels/buffers.py)
    depths_ptr,  # [N] f32 out
    tiles_touched_ptr,  # [N] i32 out
    macros_touched_ptr,  # [N] i32 out (MACROS: macro-tiles; HALVES: each half's tiles, top | bottom << 16)
    bin_t_ptr,  # [N] f32 out (written when WRITE_T)
    tau_ptr,  # [1] f32: AdaGScale's tau for this frame (read only when ADAGSCALE)
    survivors_ptr,  # [N] i32: the rows to project, when INDEXED (`_frustum_kernel`)
    n_survivors_ptr,  # [1] i32: how many, when INDEXED
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
    split_row,  # HALVES: the bottom half's first tile row
    DEGREE: tl.constexpr,
    TILE: tl.constexpr,
    ADAGSCALE: tl.constexpr,
    MACROS: tl.constexpr,  # count macros_touched (the frame bins per macro-tile)
    HALVES: tl.constexpr,  # count each half's tiles into macros_touched (the frame bins its halves apart)
    WRITE_T: tl.constexpr,  # bin_t is given: the renderer's exact frames bin from the records and pass none
    INDEXED: tl.constexpr,  # project the survivors of `_frustum_kernel` (their list), not rows 0..N-1
    ORTHO: tl.constexpr,  # an orthographic camera (`_device.ewa_footprint`)
    BLOCK_N: tl.constexpr,
):
    if INDEXED:
        # the survivors' blocks: a program's first at its id, then a grid apart. The launcher sizes the grid by its
        # estimate of the survivors (`project_gaussians`'s survivors_bound), so that few programs find nothing to
        # do (launched for all N, the 24M fly-over's empty frames ran 187,500 programs that returned at once), and
        # a grid the estimate made too small still projects every survivor. A captured graph's grid is fixed: all
        # N, one block a program. A grid of 1,024-8,192 programs each looping over many blocks measured slower on
        # both fly-overs (BENCHMARKS.md, section 39), at the 80 registers the loop then held (88-96 now at SH
        # degree 3, against the plain form's 72): the launcher caps them at 72 (PROJECT_REGISTERS). The 24M
        # fly-over's sparse frames took 0.09-0.13 ms less each (section 60)
        n_survivors = tl.load(n_survivors_ptr)
        for blk in range(tl.program_id(0), tl.cdiv(n_survivors, BLOCK_N), tl.num_programs(0)):
            lanes = blk * BLOCK_N + tl.arange(0, BLOCK_N)
            in_range = lanes < n_survivors
            offs = tl.load(survivors_ptr + lanes, mask=in_range, other=0).to(tl.int64)
            _project_rows(
                offs, in_range, means_ptr, covars_ptr, opacities_ptr, sh_ptr, camera_ptr, records_ptr, depths_ptr,
                tiles_touched_ptr, macros_touched_ptr, bin_t_ptr, tau_ptr, width, height, near, far, eps2d, s_min,
                sh_n, sh_k, sh_c, split_row, DEGREE, TILE, ADAGSCALE, MACROS, HALVES, WRITE_T, ORTHO, BLOCK_N,
            )  # fmt: skip
    else:
        offs = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
        _project_rows(
            offs, offs < N, means_ptr, covars_ptr, opacities_ptr, sh_ptr, camera_ptr, records_ptr, depths_ptr,
            tiles_touched_ptr, macros_touched_ptr, bin_t_ptr, tau_ptr, width, height, near, far, eps2d, s_min,
            sh_n, sh_k, sh_c, split_row, DEGREE, TILE, ADAGSCALE, MACROS, HALVES, WRITE_T, ORTHO, BLOCK_N,
        )  # fmt: skip


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
    frustum: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    extent_scale: float = 1.0,
    halves: int | None = None,
    ortho: bool = False,
    only_tile_counts: bool = False,
    survivors_bound: int | None = None,
    bounds: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """Project N Gaussians for one camera.

    Args:
        adagscale_tau: None = exact binning; else AdaGScale's score threshold tau >= 0 (pixels of colour-weighted
            alpha mass; 0 keeps s = 1, the exact tiles): a float, or a [1] float32 tensor on the device that the
            kernel reads when it runs (a captured graph then replays with each frame's value).
            adagscale_s_min: the smallest binning scale, in (0, 1].
        block: Gaussians per program (a launch knob; default `project_block(N)`).
        frustum: (extent [N] f32 from kernels/buffers.py `gaussian_extent`, survivors [N] i32, n_survivors [1] i32,
            both scratch) to pre-cull (module docstring): the same outputs, the culled Gaussians' lanes skipped.
            The opacities must be at most 1 (activated ones are). extent_scale: what the covariances are the
            extent's covariances times (the scale modifier squared). only_tile_counts: of a Gaussian the pre-cull
            rejects, write tiles_touched (0) alone, not its depth and macro-tile count: for a frame whose later
            stages find the visible Gaussians by their tile counts and read the rest only there (a counted frame
            that gathers them: kernels/order.py `count_visible`); 4-8 bytes less written of each culled one.
            survivors_bound: with `frustum`, an estimate of how many survive: the projection runs programs for that
            many, each looping over a grid's stride of the list, so any number is projected in full; None: a
            program for every block of N (one block each: a captured graph's grid cannot follow the count).
            bounds: with `frustum`, `frustum_block_bounds(means, extent)`: a pre-cull program first tests its
            block's bounds, and writes a block none of whose Gaussians can survive as culled without reading its
            means and extents (the same survivors, the same outputs).
        halves: the tile row at which the frame bins its tile pairs in two halves (kernels/buffers.py
            `key_halves`): macros_touched then holds each Gaussian's tiles in either, top | bottom << 16.
        ortho: an orthographic camera, gsplat's camera_model="ortho": its fx, fy are pixels per world unit
            (`_device.ewa_footprint`); depths are still the camera-space z, colours still seen from its centre.

    Returns:
        records [N,8] (kernels/buffers.py), depths [N] (+inf where culled), tiles_touched [N] int32 (0 = culled),
        macros_touched [N] int32, bin_t [N]. Rows with tiles_touched == 0 are unspecified in the float outputs
        (with only_tile_counts, where the pre-cull rejected them, in depths and macros_touched too).
        `out` may hold None for macros_touched: a frame that bins per tile does not count them; and for bin_t
        without AdaGScale: binning then takes each threshold from the record (kernels/bin.py), and the renderer
        keeps no bin_t (4 bytes a Gaussian).
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
    macros_out = tiles_touched if macros_touched is None else macros_touched
    assert halves is None or macros_touched is not None, "a frame binned in halves counts them in macros_touched"
    survivors, n_survivors = tiles_touched, tiles_touched  # not read unless INDEXED
    if frustum is not None:
        extent, survivors, n_survivors = frustum
        assert extent.shape == (N,) and extent.dtype == torch.float32, (extent.shape, extent.dtype)
        assert survivors.shape[0] >= N and survivors.dtype == torch.int32 and n_survivors.dtype == torch.int32
        cull_block = frustum_block()
        assert bounds is None or (bounds.shape == (cdiv(N, cull_block), 8) and bounds.dtype == torch.float32), (
            None if bounds is None else bounds.shape, cull_block)  # fmt: skip
        n_survivors.zero_()
        launch(_frustum_kernel, (cdiv(N, cull_block),),
            means, extent, camera, depths, tiles_touched, macros_out, survivors, n_survivors,
            extent if bounds is None else bounds, N, width, height, near, far, eps2d, float(extent_scale),
            TILE=tile_size, MACROS=macros_touched is not None, TILES_ONLY=only_tile_counts, ORTHO=ortho,
            BOUNDS=bounds is not None, BLOCK=cull_block, num_warps=FRUSTUM_WARPS,
        )  # fmt: skip
    grid = cdiv(N, block)
    if frustum is not None and survivors_bound is not None:
        grid = max(1, min(grid, cdiv(survivors_bound, block)))
    # the survivors' loop held 88-96 registers a thread at SH degree 3 (72 without it: 7 programs of 128 lanes an
    # SM, not 5); capped at 72, ptxas fits it without a spill in every configuration
    # (tests/kernels/test_compile_sm90.py)
    regs = {} if frustum is None or interpreting() else {"maxnreg": PROJECT_REGISTERS}
    launch(_project_kernel, (grid,),
        means, covars, opacities, sh, camera,
        records, depths, tiles_touched, macros_out,
        depths if bin_t is None else bin_t, depths if adagscale_tau is None else adagscale_tau,
        survivors, n_survivors,
        N, width, height, near, far, eps2d, float(adagscale_s_min), *sh.stride(), 0 if halves is None else halves,
        DEGREE=sh_degree, TILE=tile_size, ADAGSCALE=adagscale_tau is not None,
        MACROS=macros_touched is not None and halves is None, HALVES=halves is not None,
        WRITE_T=bin_t is not None, INDEXED=frustum is not None, ORTHO=ortho, BLOCK_N=block, **regs,
    )  # fmt: skip
    return records, depths, tiles_touched, macros_touched, bin_t


# registers a thread of the survivors' projection may hold (`project_gaussians`)
PROJECT_REGISTERS = 72


def project_block(n: int) -> int:
    """Gaussians per program. Each lane walks its footprint's tile rows and a program runs as long as its
    largest footprint, so a small scene (often seen close up, with large footprints) wants small programs, for
    more of them; a large one, fewer programs. Measured on the H200 (BENCHMARKS.md, section 8)."""
    return 32 if n < PROJECT_SMALL_SCENE else 128


PROJECT_SMALL_SCENE = 65536


def culls_frustum(n: int, n_visible: int, previous: bool = False) -> bool:
    """Whether a frame of n Gaussians, after one that saw n_visible, pre-culls (`frustum=`). The pre-cull reads 16
    and writes 8-12 bytes of every Gaussian, about a fifth of what projecting it costs, and its survivors are
    some more than the visible ones; so it pays where under about half of the scene is visible (a fly-through,
    not an object's orbit). With hysteresis (on below FRUSTUM_ON, off above FRUSTUM_OFF), so that a view near
    the threshold does not flip it, and the frame's graph, back and forth. Small scenes do not: their
    projection is a few microseconds, the second launch's order."""
    if not may_pre_cull(n):
        return False
    return n_visible < (FRUSTUM_OFF if previous else FRUSTUM_ON) * n


def may_pre_cull(n: int) -> bool:
    """Whether frames of a scene of n Gaussians may pre-cull at all (`culls_frustum`): from FRUSTUM_FROM on."""
    return n >= FRUSTUM_FROM


FRUSTUM_FROM = 262144
FRUSTUM_ON, FRUSTUM_OFF = 0.45, 0.55
# Gaussians per program of the pre-cull, and its warps: 256 to 2,048 a program on 2 to 16 warps took within 6% of
# each other over the fly-overs (BENCHMARKS.md, section 38)
FRUSTUM_BLOCK = 1024
FRUSTUM_WARPS = 4


def frustum_block() -> int:
    """Gaussians per pre-cull program, and so per block of `frustum_block_bounds`: FRUSTUM_BLOCK on a GPU, 2,048
    in Triton's interpreter (few, wide programs)."""
    return 2048 if interpreting() else FRUSTUM_BLOCK


def frustum_block_bounds(means: torch.Tensor, extent: torch.Tensor, block: int | None = None) -> torch.Tensor:
    """[cdiv(N, block), 8] f32 (block: `frustum_block()`): of each block of `block` consecutive Gaussians, the
    centre of its means' bounding box (3), the largest distance of a mean from it (1), its largest extent (1),
    `block` (1) and 2 zeros; what the pre-cull's programs test first (`_block_misses`). Made once per scene, beside the
    extents, a chunk at a time (32 bytes a block: 1/32 of a byte a Gaussian). A block is worth skipping only where
    its Gaussians lie near each other: the composites' copies do, a scene in no spatial order less so."""
    block = block or frustum_block()
    N = means.shape[0]
    assert means.shape == (N, 3) and extent.shape == (N,), (means.shape, extent.shape)
    out = torch.zeros(cdiv(N, block), 8, dtype=torch.float32, device=means.device)
    chunk = block * max(1, (1 << 20) // block)
    for a in range(0, N, chunk):
        m = means[a : a + chunk].double()
        e = extent[a : a + chunk]
        pad = -m.shape[0] % block  # the last block's rows repeat its first mean (the box stays its own)
        first = m[(m.shape[0] // block) * block :][:1]
        m = torch.cat([m, first.expand(pad, 3)]).view(-1, block, 3)
        e = torch.cat([e, e[-1:].expand(pad)]).view(-1, block)
        centre = (m.amin(1) + m.amax(1)) / 2
        radius = (m - centre[:, None]).norm(dim=2).amax(1)
        rows = out[a // block : a // block + m.shape[0]]
        rows[:, :3] = centre.float()
        rows[:, 3] = (radius * (1 + 1e-6) + 1e-7 * centre.abs().amax(1)).float()  # float32's rounding, up
        rows[:, 4] = e.amax(1)
    out[:, 5] = block
    return out
