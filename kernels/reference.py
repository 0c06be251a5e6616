"""Plain-torch twins of every launcher in `kernels/`: same names, same signatures, same outputs.

These are the correctness oracle for the Triton kernels (tests compare each pair) and the CPU fallback
renderer. They are written for clarity, vectorised where that is natural, and never import the Triton path.
"""

from __future__ import annotations

import math

import torch

# the buffers and pair keys, from the one module both read (kernels/buffers.py)
from . import buffers
from .buffers import (
    MACRO_KEY_DTYPE,
    BlockOffsets,
    depth_bits,
    depth_keys,
    key_dtype,
    key_halves,
    key_offset,
    key_tiles,
    list_scratch_shape,
    macro_grid,
    order_outputs,
    pack_entries,
    pack_records,
    project_outputs,
    scan_blocks,
    sentinel_key,
    tile_keys,
)

# the kernels' numbers, from the one module both read (what each means is documented there)
from .constants import (
    ALPHA_MAX,
    ALPHA_MIN,
    CENTRE_SLACK,
    CLAMP_TILES,
    FOV_SLACK,
    LOG2_ALPHA_MIN,
    LOG2E,
    MACRO_COLS,
    MACRO_ROWS,
    PIXEL_CENTRE,
    SCHEDULE_CLASSES,
    SH_C0,
    SH_C1,
    SH_C2,
    SH_C3,
    T_MARGIN,
    T_STOP,
    TWO_LN2,
    WEIGHT_MIN,
)

# ----------------------------------------------------------------------------------------------- project


def eval_sh(sh: torch.Tensor, dirs: torch.Tensor, degree: int) -> torch.Tensor:
    """[N,K,3] coefficients, [N,3] unit directions -> [N,3]; standard real SH basis (3DGS / gsplat).

    The coefficients may be fp16 (the renderer's copy, kernels/buffers.py `SH_DTYPE`) or float32: the product
    with the basis promotes them to the directions' dtype (an exact widening), so the sum is float32 either way,
    and no widened copy of the whole [N,K,3] is made."""
    x, y, z = dirs.unbind(-1)
    basis = [torch.full_like(x, SH_C0)]
    if degree >= 1:
        basis += [-SH_C1 * y, SH_C1 * z, -SH_C1 * x]
    if degree >= 2:
        xx, yy, zz, xy, yz, xz = x * x, y * y, z * z, x * y, y * z, x * z
        basis += [
            SH_C2[0] * xy,
            SH_C2[1] * yz,
            SH_C2[2] * (2.0 * zz - xx - yy),
            SH_C2[3] * xz,
            SH_C2[4] * (xx - yy),
        ]
    if degree >= 3:
        basis += [
            SH_C3[0] * y * (3.0 * xx - yy),
            SH_C3[1] * xy * z,
            SH_C3[2] * y * (4.0 * zz - xx - yy),
            SH_C3[3] * z * (2.0 * zz - 3.0 * xx - 3.0 * yy),
            SH_C3[4] * x * (4.0 * zz - xx - yy),
            SH_C3[5] * z * (xx - yy),
            SH_C3[6] * x * (xx - 3.0 * yy),
        ]
    b = torch.stack(basis, dim=1)  # [N, k]
    return (b[:, :, None] * sh[:, : b.shape[1], :]).sum(1)  # [N, k, 3] in b's dtype, then summed over k


def frustum_survivors(
    means, extent, camera, width: int, height: int, near: float, far: float, eps2d: float, tile_size: int,
    ortho: bool = False,
) -> torch.Tensor:  # fmt: skip
    """[N] bool: the Gaussians the projection's pre-cull keeps (kernels/project.py's module docstring): ahead of
    the near plane within rounding, and near it or with the bounding box of the largest footprint their extent
    allows (x 1.02 in t, + 2 px, + 1e-4 of the mean's distance) meeting the tile grid."""
    viewmat, fx, fy, cx, cy, _ = _unpack_camera(camera)
    R, t = viewmat[:3, :3], viewmat[:3, 3]
    xc, yc, zc = (means @ R.T + t).unbind(-1)
    z_slack = 1e-5 * ((means * R[2]).abs().sum(-1) + t[2].abs()) + 1e-30
    ahead = (zc >= near - z_slack) & (zc <= far + z_slack)
    near_plane = zc < near + z_slack
    w2 = float((R.T @ R).abs().sum(1).max()) * 1.0001  # ||W||_2^2 <= ||W^T W||_inf
    tan_fovx, tan_fovy = 0.5 * width / fx, 0.5 * height / fy
    lim_x_pos, lim_x_neg = (width - cx) / fx + FOV_SLACK * tan_fovx, cx / fx + FOV_SLACK * tan_fovx
    lim_y_pos, lim_y_neg = (height - cy) / fy + FOV_SLACK * tan_fovy, cy / fy + FOV_SLACK * tan_fovy
    if ortho:  # the Jacobian diag(fx, fy)
        j00, j02, j11, j12 = fx, 0.0, fy, 0.0
        mx, my = fx * xc + cx, fy * yc + cy
    else:
        zs = torch.where(ahead & ~near_plane, zc, torch.ones_like(zc))
        rz = 1.0 / zs
        tx = zs * torch.clamp(xc * rz, -lim_x_neg, lim_x_pos)
        ty = zs * torch.clamp(yc * rz, -lim_y_neg, lim_y_pos)
        j00, j02 = fx * rz, -fx * tx * rz * rz
        j11, j12 = fy * rz, -fy * ty * rz * rz
        mx, my = fx * xc * rz + cx, fy * yc * rz + cy
    t_bound = 1.02 * (-2.0 * math.log(ALPHA_MIN) + T_MARGIN)
    lam = torch.where(ahead, extent, torch.zeros_like(extent)) * w2
    rx = torch.sqrt(t_bound * ((j00 * j00 + j02 * j02) * lam + eps2d)) + 2.0 + 1e-4 * mx.abs()
    ry = torch.sqrt(t_bound * ((j11 * j11 + j12 * j12) * lam + eps2d)) + 2.0 + 1e-4 * my.abs()
    grid_w = (width + tile_size - 1) // tile_size * tile_size
    grid_h = (height + tile_size - 1) // tile_size * tile_size
    on_grid = (mx + rx >= 0) & (mx - rx <= grid_w) & (my + ry >= 0) & (my - ry <= grid_h)
    return ahead & (near_plane | on_grid)


def block_misses(
    bounds, camera, width: int, height: int, near: float, far: float, eps2d: float, tile_size: int,
    extent_scale: float = 1.0, ortho: bool = False,
) -> torch.Tensor:  # fmt: skip
    """[B] bool: the blocks of `bounds` (kernels/project.py `frustum_block_bounds`) whose Gaussians none of can
    survive the pre-cull (`frustum_survivors`), so the pre-cull writes them culled unread: every one behind the
    near plane or past the far one, or every one ahead of the near plane's slack with the largest footprint the
    bounds allow off one side of the tile grid. In float32, step for step as kernels/project.py `_block_misses`."""
    f32 = torch.float32
    b = bounds.to(f32)
    bx, by, bz, br, blam = b[:, 0], b[:, 1], b[:, 2], b[:, 3], b[:, 4]
    viewmat = camera[:16].reshape(4, 4).to(f32)
    R, t = viewmat[:3, :3], viewmat[:3, 3]
    fx, fy, cx, cy = (camera[16 + i].to(f32) for i in range(4))
    w2 = (R.T @ R).abs().sum(1).max() * 1.0001
    far_coord = torch.maximum(torch.maximum(bx.abs(), by.abs()), bz.abs()) + br
    slack = 1e-5 * (R.abs().sum() * far_coord + t.abs().sum()) + 1e-30
    X = R[0, 0] * bx + R[0, 1] * by + R[0, 2] * bz + t[0]
    Y = R[1, 0] * bx + R[1, 1] * by + R[1, 2] * bz + t[1]
    Z = R[2, 0] * bx + R[2, 1] * by + R[2, 2] * bz + t[2]
    rad = br * torch.sqrt(w2) * 1.0001 + slack
    z_slack = 1e-5 * (R[2].abs().sum() * far_coord + t[2].abs()) + 1e-30
    gone = (Z + rad < near - z_slack) | (Z - rad > far + z_slack)
    front = Z - rad > near + z_slack
    lam = blam * (extent_scale * w2) * 1.001
    if ortho:
        ex, ey = torch.stack([fx * (X + rad), fx * (X - rad)]), torch.stack([fy * (Y + rad), fy * (Y - rad)])
        mx_hi, mx_lo, my_hi, my_lo = ex.amax(0) + cx, ex.amin(0) + cx, ey.amax(0) + cy, ey.amin(0) + cy
        jx, jy = fx * fx, fy * fy
    else:
        one = torch.ones_like(Z)
        zmin = torch.where(front, Z - rad, one)
        tb_x = rad / torch.sqrt(torch.clamp_min(X * X + Z * Z - rad * rad, 1e-30))
        tb_y = rad / torch.sqrt(torch.clamp_min(Y * Y + Z * Z - rad * rad, 1e-30))
        ta_x, ta_y = X / torch.where(front, Z, one), Y / torch.where(front, Z, one)
        big = torch.full_like(Z, 3.0e38)

        def tangents(ta, tb):  # tan(a + b), tan(a - b): x/z's range over the sphere
            d_hi, d_lo = 1.0 - ta * tb, 1.0 + ta * tb
            hi = torch.where(d_hi > 1e-6, (ta + tb) / torch.clamp_min(d_hi, 1e-6), big)
            lo = torch.where(d_lo > 1e-6, (ta - tb) / torch.clamp_min(d_lo, 1e-6), -big)
            return hi + 1e-5 * (hi.abs() + 1.0), lo - 1e-5 * (lo.abs() + 1.0)

        tx_hi, tx_lo = tangents(ta_x, tb_x)
        ty_hi, ty_lo = tangents(ta_y, tb_y)
        mx_hi, mx_lo = torch.maximum(fx * tx_hi, fx * tx_lo) + cx, torch.minimum(fx * tx_hi, fx * tx_lo) + cx
        my_hi, my_lo = torch.maximum(fy * ty_hi, fy * ty_lo) + cy, torch.minimum(fy * ty_hi, fy * ty_lo) + cy
        tan_fovx, tan_fovy = 0.5 * width / fx, 0.5 * height / fy
        lim_x = torch.maximum((width - cx) / fx, cx / fx) + FOV_SLACK * tan_fovx
        lim_y = torch.maximum((height - cy) / fy, cy / fy) + FOV_SLACK * tan_fovy
        jx = fx * fx / (zmin * zmin) * (1.0 + lim_x * lim_x)
        jy = fy * fy / (zmin * zmin) * (1.0 + lim_y * lim_y)
    t_bound = 1.02 * (-2.0 * math.log(ALPHA_MIN) + T_MARGIN)
    rx = torch.sqrt(t_bound * (jx * lam + eps2d)) + 3.0 + 1e-4 * torch.maximum(mx_hi.abs(), mx_lo.abs())
    ry = torch.sqrt(t_bound * (jy * lam + eps2d)) + 3.0 + 1e-4 * torch.maximum(my_hi.abs(), my_lo.abs())
    grid_w = (width + tile_size - 1) // tile_size * tile_size
    grid_h = (height + tile_size - 1) // tile_size * tile_size
    off_grid = (mx_hi + rx < 0) | (mx_lo - rx > grid_w) | (my_hi + ry < 0) | (my_lo - ry > grid_h)
    return gone | (front & off_grid)


def _unpack_camera(camera: torch.Tensor):
    viewmat = camera[:16].reshape(4, 4)
    fx, fy, cx, cy = (float(v) for v in camera[16:20])
    campos = camera[20:23]
    return viewmat, fx, fy, cx, cy, campos


def _tile_band(m, r, n, tile):
    """(first, count) of the n tiles along one axis whose pixel-centre band meets [m - r, m + r], unclamped count."""
    lo = ((m - r + (1.0 - PIXEL_CENTRE)) / tile - 1.0).clamp(-CLAMP_TILES, n + CLAMP_TILES)
    hi = ((m + r - PIXEL_CENTRE) / tile).clamp(-CLAMP_TILES, n + CLAMP_TILES)
    first = torch.ceil(lo).to(torch.int32).clamp(min=0)
    last = torch.floor(hi).to(torch.int32).clamp(max=n - 1)
    return first, last - first + 1


def _tile_rows(my, a, b, c, t, valid, n_ty, tile):
    det = a * c - b * b
    ry = torch.sqrt(torch.clamp(t * a / det, min=0.0))
    ty_lo, count = _tile_band(my, ry, n_ty, tile)
    ok = valid & (ry == ry) & (det > 0)
    rows = torch.where(ok, count.clamp(min=0), torch.zeros_like(ty_lo))
    return ty_lo, rows, ry


def _tile_cols(mx, a, b, c, t, n_tx, tile):
    det = a * c - b * b
    rx = torch.sqrt(torch.clamp(t * c / det, min=0.0))
    tx_lo, count = _tile_band(mx, rx, n_tx, tile)
    return tx_lo, count.clamp(min=0)


def _row_tile_span(ty, mx, my, a, b, c, t, ry, n_tx, tile):
    det = a * c - b * b
    tyf = ty.to(torch.float32)
    y0 = torch.maximum(tyf * tile + PIXEL_CENTRE - my, -ry)  # the row's first and last pixel centre
    y1 = torch.minimum(tyf * tile + (tile - 1.0 + PIXEL_CENTRE) - my, ry)
    rx = torch.sqrt(torch.clamp(t * c / det, min=0.0))
    dy_r = -(b / c) * rx
    dyr = torch.minimum(torch.maximum(dy_r, y0), y1)
    dyl = torch.minimum(torch.maximum(-dy_r, y0), y1)
    xr = (-b * dyr + torch.sqrt(torch.clamp(a * t - det * dyr * dyr, min=0.0))) / a
    xl = (-b * dyl - torch.sqrt(torch.clamp(a * t - det * dyl * dyl, min=0.0))) / a
    lo = ((mx + xl + (1.0 - PIXEL_CENTRE)) / tile - 1.0).clamp(-CLAMP_TILES, n_tx + CLAMP_TILES)
    hi = ((mx + xr - PIXEL_CENTRE) / tile).clamp(-CLAMP_TILES, n_tx + CLAMP_TILES)
    tx_lo = torch.ceil(lo).to(torch.int32).clamp(min=0)
    tx_hi = torch.floor(hi).to(torch.int32).clamp(max=n_tx - 1)
    span = torch.where(y0 <= y1, (tx_hi - tx_lo + 1).clamp(min=0), torch.zeros_like(tx_lo))
    return tx_lo, span


def _alpha_threshold_t(o: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.log(o * (1.0 / ALPHA_MIN)) + T_MARGIN  # 255.0 exactly, as the kernel multiplies


def _record_threshold(lo: torch.Tensor) -> torch.Tensor:
    """t from a record's lo = log2(o) (kernels/_device.py `record_threshold`): what stage 1 counts with and
    binning walks without AdaGScale."""
    return (lo - LOG2_ALPHA_MIN) * TWO_LN2 + T_MARGIN


def peripheral_score(a, b, c, o, t, weight, s):
    """AdaGScale's peripheral score: colour weight times the alpha mass (pixels) of the elliptical annulus
    between Mahalanobis radius s sqrt(t) and sqrt(t): w 2 pi o sqrt(det Sigma) (exp(-s^2 t/2) - exp(-t/2))."""
    return weight * 2.0 * torch.pi * o / torch.sqrt(a * c - b * b) * (torch.exp(-s * s * t / 2) - torch.exp(-t / 2))


def adagscale_s2(a, b, c, o, t, weight, tau: float, s_min: float):
    """s^2 of the binning threshold t' = s^2 t; the twin of `kernels._device.adagscale_s2`."""
    k = weight * (2.0 * torch.pi) * o * torch.exp(-0.5 * t) / torch.sqrt(a * c - b * b)
    s2 = 1.0 - (2.0 / t) * torch.log(1.0 + tau / k)
    centre = CENTRE_SLACK * 0.25 * (a + c + 2.0 * torch.abs(b)) / t
    s_min_t = torch.full_like(s2, s_min)
    return torch.clamp(torch.maximum(torch.maximum(s2, centre), s_min_t * s_min_t), max=1.0)


def colour_weight(colors: torch.Tensor) -> torch.Tensor:
    """[N,3] -> [N]: the brightest channel, clamped to [WEIGHT_MIN, 1] (see kernels/_device.py)."""
    return colors.amax(-1).clamp(WEIGHT_MIN, 1.0)


def ewa_footprint(
    means, covars, camera, width: int, height: int, near: float, far: float, eps2d: float, ortho: bool = False
):
    """Camera depth zc, screen mean (mx, my), EWA conic (a, b, c) and the near/far/det visibility: [N] each.
    `ortho`: an orthographic camera, whose fx, fy are pixels per world unit (the Jacobian diag(fx, fy))."""
    N = means.shape[0]
    viewmat, fx, fy, cx, cy, campos = _unpack_camera(camera)
    R, t = viewmat[:3, :3], viewmat[:3, 3]
    p_c = means @ R.T + t  # [N, 3]
    xc, yc, zc = p_c.unbind(-1)
    visible = (zc >= near) & (zc <= far)

    s = covars
    Sigma = torch.stack(
        [s[:, 0], s[:, 1], s[:, 2], s[:, 1], s[:, 3], s[:, 4], s[:, 2], s[:, 4], s[:, 5]], dim=1
    ).reshape(N, 3, 3)
    C = R @ Sigma @ R.T  # [N, 3, 3] camera-frame covariance

    tan_fovx, tan_fovy = 0.5 * width / fx, 0.5 * height / fy
    lim_x_pos, lim_x_neg = (width - cx) / fx + FOV_SLACK * tan_fovx, cx / fx + FOV_SLACK * tan_fovx
    lim_y_pos, lim_y_neg = (height - cy) / fy + FOV_SLACK * tan_fovy, cy / fy + FOV_SLACK * tan_fovy
    zs = torch.where(visible, zc, torch.ones_like(zc))
    rz = 1.0 / zs
    tx = zs * torch.clamp(xc * rz, -lim_x_neg, lim_x_pos)
    ty = zs * torch.clamp(yc * rz, -lim_y_neg, lim_y_pos)
    J = torch.zeros(N, 2, 3, dtype=means.dtype, device=means.device)
    if ortho:
        J[:, 0, 0], J[:, 1, 1] = fx, fy
        rz = torch.ones_like(zc)  # the mean below: no division by depth
    else:
        J[:, 0, 0] = fx * rz
        J[:, 0, 2] = -fx * tx * rz * rz
        J[:, 1, 1] = fy * rz
        J[:, 1, 2] = -fy * ty * rz * rz
    cov2d = J @ C @ J.transpose(1, 2)
    cxx = cov2d[:, 0, 0] + eps2d
    cxy = cov2d[:, 0, 1]
    cyy = cov2d[:, 1, 1] + eps2d
    det = cxx * cyy - cxy * cxy
    visible &= det > 0
    det = torch.where(visible, det, torch.ones_like(det))
    a, b, c = cyy / det, -cxy / det, cxx / det
    mx, my = fx * xc * rz + cx, fy * yc * rz + cy

    return zc, mx, my, a, b, c, visible


# Twin of the launcher in kernels/project.py: the same signature on purpose (see the module docstring).
def project_gaussians(
    means: torch.Tensor,  # [N, 3]
    covars: torch.Tensor,  # [N, 6]
    opacities: torch.Tensor,  # [N]
    sh: torch.Tensor,  # [N, K, 3] SH_DTYPE (fp16) as the kernel takes it; float32 is accepted too (eval_sh)
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
    only_tile_counts: bool = False,  # the kernel may leave a rejected Gaussian's depth and macro count unwritten;
    # here every row is written, which that contract allows
    survivors_bound: int | None = None,  # the kernel's grid: no output depends on it
    bounds: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    N = means.shape[0]
    if isinstance(adagscale_tau, torch.Tensor):  # [1] on the device, as the kernel reads it
        adagscale_tau = float(adagscale_tau)
    campos = camera[20:23]
    zc, mx, my, a, b, c, visible = ewa_footprint(means, covars, camera, width, height, near, far, eps2d, ortho)
    if frustum is not None:  # the pre-cull: only the survivors can be visible
        extent, survivors, n_survivors = frustum
        keep = frustum_survivors(means, extent * extent_scale, camera, width, height, near, far, eps2d, tile_size,
                                 ortho)  # fmt: skip
        if bounds is not None:  # the blocks that cannot hold a survivor (none fewer survive: tests/kernels)
            block = int(bounds[0, 5]) if N else 1  # the bounds' block (`frustum_block_bounds`)
            missed = block_misses(bounds, camera, width, height, near, far, eps2d, tile_size, extent_scale, ortho)
            keep &= ~missed.repeat_interleave(block)[:N]
        kept = torch.nonzero(keep).flatten()
        survivors[: kept.numel()] = kept.to(torch.int32)
        n_survivors.fill_(kept.numel())
        visible &= keep

    o = opacities
    visible &= o >= ALPHA_MIN
    tt = _record_threshold(torch.log2(torch.where(visible, o, torch.ones_like(o))))  # lo, as the record holds it

    dirs = torch.nn.functional.normalize(means - campos, dim=-1)
    colors = torch.clamp_min(eval_sh(sh, dirs, sh_degree) + 0.5, 0.0)
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    t_bin = tt
    if adagscale_tau is not None:  # scored only where the tile box at t holds more than one tile
        _, box_rows, _ = _tile_rows(my, a, b, c, tt, visible, n_ty, tile_size)
        _, box_cols = _tile_cols(mx, a, b, c, tt, n_tx, tile_size)
        scored = visible & (box_rows * box_cols > 1)
        s2 = adagscale_s2(a, b, c, o, tt, colour_weight(colors), adagscale_tau, adagscale_s_min)
        t_bin = torch.where(scored, s2 * tt, tt)
    if out is None:
        out = project_outputs(N, means.device)
    records, depths, tiles_touched, macros_touched, bin_t = out
    pack_records(torch.stack([mx, my], 1), torch.stack([a, b, c], 1), o, colors, out=records)
    ra, rb, rc = _record_conic(records)  # the count walks the conic as the record holds it, as binning will
    ty_lo, rows, ry = _tile_rows(my, ra, rb, rc, t_bin, visible, n_ty, tile_size)
    # row by row for every Gaussian at once (memory N, whatever the footprints): its tiles, and per band of
    # MACRO_ROWS rows the macro-tile columns from the leftmost to the rightmost tile reached
    count = torch.zeros(N, dtype=torch.int64, device=means.device)
    macros = torch.zeros(N, dtype=torch.int64, device=means.device)
    top = torch.zeros(N, dtype=torch.int64, device=means.device)  # tiles in rows above `halves`
    hull_lo = torch.full((N,), 1 << 30, dtype=torch.int64, device=means.device)
    hull_hi = torch.full((N,), -1, dtype=torch.int64, device=means.device)
    for r in range(int(rows.max()) if N else 0):
        tx_lo, span = _row_tile_span(ty_lo + r, mx, my, ra, rb, rc, t_bin, ry, n_tx, tile_size)
        span = torch.where(r < rows, span, torch.zeros_like(span)).long()
        count += span
        if halves is not None:
            top += torch.where(ty_lo + r < halves, span, torch.zeros_like(span))
        reached = span > 0
        hull_lo = torch.where(reached, torch.minimum(hull_lo, tx_lo.long() // MACRO_COLS), hull_lo)
        hull_hi = torch.where(reached, torch.maximum(hull_hi, (tx_lo.long() + span - 1) // MACRO_COLS), hull_hi)
        band_ends = ((ty_lo.long() + r + 1) % MACRO_ROWS == 0) | (r + 1 >= rows)
        macros += torch.where(band_ends & (hull_hi >= hull_lo), hull_hi - hull_lo + 1, torch.zeros_like(macros))
        hull_lo = torch.where(band_ends, torch.full_like(hull_lo, 1 << 30), hull_lo)
        hull_hi = torch.where(band_ends, torch.full_like(hull_hi, -1), hull_hi)
    visible &= count > 0
    if bin_t is not None:  # None: exact frames bin from the records (kernels/project.py)
        bin_t.copy_(t_bin)
    depths.copy_(torch.where(visible, zc, torch.full_like(zc, float("inf"))))
    tiles_touched.copy_(torch.where(visible, count, torch.zeros_like(count)))
    if halves is not None:  # each half's tiles, top | bottom << 16, in the macro-tile counts' place
        macros = top + (count - top) * 65536
    if macros_touched is not None:  # None: the frame bins per tile (kernels/project.py)
        macros_touched.copy_(torch.where(visible, macros, torch.zeros_like(macros)))
    return records, depths, tiles_touched, macros_touched, bin_t


def _row_spans(ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, tile):
    """One entry per (Gaussian, tile row it spans), Gaussians in their given order, rows top to bottom:
    (Gaussian [R] i64, tile row ty [R], first tile tx_lo [R], tiles span [R])."""
    device = mx.device
    g_of_row = torch.repeat_interleave(torch.arange(mx.numel(), device=device), rows.long())
    row_start = torch.cumsum(rows.long(), 0) - rows.long()
    r = torch.arange(g_of_row.numel(), device=device) - row_start[g_of_row]
    ty = ty_lo[g_of_row] + r.to(torch.int32)
    tx_lo, span = _row_tile_span(ty, mx[g_of_row], my[g_of_row], a[g_of_row], b[g_of_row], c[g_of_row],
                                 t[g_of_row], ry[g_of_row], n_tx, tile)  # fmt: skip
    return g_of_row, ty, tx_lo, span


def _bands(ty_lo, rows):
    """[N] i64: the bands of MACRO_ROWS tile rows each Gaussian's rows meet."""
    first = ty_lo.long() // MACRO_ROWS
    last = (ty_lo.long() + rows.long() - 1) // MACRO_ROWS
    return torch.where(rows > 0, last - first + 1, torch.zeros_like(first))


def _band_hulls(g_of_row, ty, tx_lo, span, ty_lo, rows):
    """Per (Gaussian, band) in order: (band of each row entry [R] i64 (its index among them), the band's hull of
    macro-tile columns [hull_lo, hull_hi] over its rows that reach a tile; hull_hi < hull_lo where none does)."""
    bands = _bands(ty_lo, rows)
    band_start = torch.cumsum(bands, 0) - bands
    band = band_start[g_of_row] + ty.long() // MACRO_ROWS - ty_lo.long()[g_of_row] // MACRO_ROWS
    n = int(bands.sum())
    has = span > 0
    big = torch.iinfo(torch.int64).max
    hull_lo = torch.full((n,), big, dtype=torch.int64, device=ty.device)
    hull_hi = torch.full((n,), -1, dtype=torch.int64, device=ty.device)
    hull_lo.scatter_reduce_(0, band[has], tx_lo.long()[has] // MACRO_COLS, "amin")
    hull_hi.scatter_reduce_(0, band[has], (tx_lo.long() + span.long() - 1)[has] // MACRO_COLS, "amax")
    hull_lo = torch.where(hull_hi >= 0, hull_lo, torch.zeros_like(hull_lo))
    return band, hull_lo, hull_hi


def _record_conic(records: torch.Tensor):
    """(a, b, c) from the records' (A, B, C), by the products `kernels._device.record_conic` computes."""
    half = torch.tensor(1.0 / (0.5 * LOG2E), dtype=torch.float32)
    full = torch.tensor(1.0 / LOG2E, dtype=torch.float32)
    return records[:, 2] * half, records[:, 3] * full, records[:, 4] * half


# Twin of the launcher in kernels/cull.py: the same signature on purpose (see the module docstring).
def cull_window(
    means: torch.Tensor,
    covars: torch.Tensor,
    opacities: torch.Tensor,
    cameras: torch.Tensor,  # [K, 24]
    width: int,
    height: int,
    *,
    near: float = 0.01,
    far: float = 1e10,
    eps2d: float = 0.3,
    margin: float = 16.0,
    guard: float = 0.0,
    tile_size: int = 8,
    out: torch.Tensor | None = None,
    ortho: bool = False,
) -> torch.Tensor:
    """keep [N] int8: the footprint's box meets the widened tile grid of some camera, or the Gaussian lies
    within `guard` of its centre (see kernels/cull.py)."""
    o = opacities
    candidate = o >= ALPHA_MIN
    t = _alpha_threshold_t(torch.where(candidate, o, torch.ones_like(o)))
    x_hi = -(-width // tile_size) * tile_size + margin
    y_hi = -(-height // tile_size) * tile_size + margin
    keep = torch.zeros_like(candidate)
    for cam in cameras:
        zc, mx, my, a, b, c, visible = ewa_footprint(means, covars, cam, width, height, near, far, eps2d, ortho)
        visible &= candidate
        det = torch.where(visible, a * c - b * b, torch.ones_like(a))
        rx, ry = torch.sqrt(t * c / det), torch.sqrt(t * a / det)
        on = visible & (mx + rx >= -margin) & (mx - rx <= x_hi) & (my + ry >= -margin) & (my - ry <= y_hi)
        near_camera = candidate & ((means - cam[20:23]).square().sum(1) < guard * guard)
        keep |= on | near_camera
    if out is None:
        out = torch.empty(len(means), dtype=torch.int8, device=means.device)
    return out.copy_(keep)


# ----------------------------------------------------------------------------------------------- order


# Twin of the launcher in kernels/order.py: the same signature on purpose (see the module docstring).
def depth_order(
    depths: torch.Tensor,
    tiles_touched: torch.Tensor,
    pair_counts: torch.Tensor,
    *,
    out: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, BlockOffsets, torch.Tensor]:
    """Ordered by (depth, index) through one sort of unique 64-bit keys (depth bits above the index), so no
    stability is needed: a different route to the kernel's stable float sort, with the same result; the offsets a
    running sum, then cut into blocks."""
    N = depths.shape[0]
    index = torch.arange(N, dtype=torch.int64, device=depths.device)
    order = torch.argsort((depths.contiguous().view(torch.int32).long() << 32) | index)
    offsets = torch.cumsum(pair_counts[order].long(), 0)
    out[1][:N].copy_(order)
    totals = out[4]
    totals[0] = int((tiles_touched > 0).sum())
    totals[1] = int(tiles_touched.long().sum())
    totals[2] = int(offsets[-1]) if N else 0
    return out[1][:N], BlockOffsets.split(offsets, out[3], out[2], buffers.SCAN_BLOCK), totals


def count_blocks(n: int) -> int:
    """The length of `count_visible`'s partials (kernels/order.py): three a program of 4,096 Gaussians."""
    return 3 * ((n + 4095) // 4096)


# Twin of `count_visible` in kernels/order.py: the same signature on purpose.
def count_visible(
    depths: torch.Tensor,
    tiles_touched: torch.Tensor,
    pair_counts: torch.Tensor,
    *,
    compact: bool,
    out: tuple[torch.Tensor, ...],
    halves: bool = False,
) -> torch.Tensor:
    """The visible ones found by their tile count rather than by depth, and the counts as plain sums (`halves`:
    the top half's tiles, the packed counts' low 16 bits)."""
    totals, _, cdepths, cidx = out  # the partials are the kernels' scratch
    seen = tiles_touched > 0  # a culled Gaussian's pair count may be stale (a pre-cull writes its tile count alone)
    index = torch.nonzero(seen).squeeze(1)
    pairs = torch.where(seen, pair_counts.long() % 65536 if halves else pair_counts.long(), 0)
    totals.copy_(torch.tensor([index.numel(), int(tiles_touched.long().sum()), int(pairs.sum())]))
    if compact:
        cdepths[: index.numel()].copy_(depths[index])
        cidx[: index.numel()].copy_(index)
    return totals


# Twin of `visible_order` in kernels/order.py: the same signature on purpose.
def visible_order(
    depths: torch.Tensor,
    pair_counts: torch.Tensor,
    *,
    compact: bool,
    out: tuple[torch.Tensor, ...],
    halves: bool = False,
) -> tuple[torch.Tensor, BlockOffsets]:
    """By unique (depth, index) keys over the whole scene, not a stable sort of the gathered set: the visible
    first, then (all N sorted) the culled in index order; the offsets a running sum in int64, then cut into blocks.
    `halves`: each count top | bottom << 16 widened to top + bottom 2^32 by arithmetic."""
    N, (_, _, _, perm, order, ends, local) = depths.shape[0], out
    index = torch.arange(N, dtype=torch.int64, device=depths.device)
    ranked = torch.argsort((depths.contiguous().view(torch.int32).long() << 32) | index)[: perm.shape[0]]
    visible = depths[ranked] < float("inf")
    order = order if compact else perm
    order.copy_(ranked)
    ranked_counts = pair_counts[ranked].long()
    if halves:
        ranked_counts = ranked_counts % 65536 + (ranked_counts // 65536) * 2**32
    whole = torch.cumsum(torch.where(visible, ranked_counts, 0), 0)
    return order, BlockOffsets.split(whole, local, ends, buffers.SCAN_BLOCK)


# Twin of `index_offsets` in kernels/order.py: the same signature on purpose.
def index_offsets(pair_counts: torch.Tensor, order: torch.Tensor | None, *, out: torch.Tensor) -> torch.Tensor:
    """A running sum in Python's order of the counts, without a gather first: the counts of `order`'s Gaussians
    picked by a mask over all of them (its entries ascend: the gathered visible ones in index order)."""
    counts = pair_counts.long()
    if order is not None:
        picked = torch.zeros_like(pair_counts, dtype=torch.bool)
        picked[order.long()] = True
        counts = counts[picked]
    out[: counts.numel()].copy_(torch.cumsum(counts, 0))
    return out[: counts.numel()]


# ----------------------------------------------------------------------------------------------- bin


# Pairs expanded at a time: the expansion's temporaries take about 100 bytes a tile pair (int64 indices), so
# binning in chunks of Gaussians keeps them to a few tens of MB whatever the frame's pair count.
BIN_CHUNK_PAIRS = 1 << 18


# Twin of the launcher in kernels/bin.py: the same signature on purpose (see the module docstring).
def bin_pairs(
    order: torch.Tensor | None,
    offsets: torch.Tensor,
    records: torch.Tensor,
    counts: torch.Tensor,
    width: int,
    height: int,
    *,
    bin_t: torch.Tensor | None,
    depths: torch.Tensor | None = None,
    tile_size: int = 8,
    out: tuple[torch.Tensor, torch.Tensor],
    block: int | None = None,
    cols: int | None = None,
    warps: int | None = None,
    halves: tuple[int, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Vectorised: expand (Gaussian, row) spans, then (Gaussian, tile) pairs (values int32), whose mask bits are
    summed into their (Gaussian, macro-tile) pairs (values int64), Gaussians in `order` (macro-tile pairs: or all
    in turn), in chunks of about BIN_CHUNK_PAIRS pairs; macro-tile ids are shifted above their Gaussians' rounded
    depths (`buffers.depth_keys`) once all are written.
    As the kernel, it writes only slots below the capacity, and does no work for a Gaussian whose slots all lie
    past it (a frame binned into a capacity too small for its pairs costs no more than the capacity). `block`,
    `cols` and `warps`, the kernel's launch knobs, are ignored. `halves`: binned whole (int32 keys, one run of
    slots a Gaussian), then each pair moved to its half's slots and keyed within it."""
    if isinstance(offsets, BlockOffsets):  # in blocks: whole again
        offsets = offsets.whole()
    if halves is not None:
        return _bin_halves(order, offsets, records, counts, width, height, bin_t, tile_size, out, halves)
    keys, values = out
    macro = values.dtype == torch.int64  # the kernel's two forms (kernels/bin.py)
    capacity = keys.shape[0]
    if order is None:
        order = torch.arange(records.shape[0], device=records.device)
    offsets = offsets[: order.shape[0]]
    padded = torch.cat([counts, counts.new_zeros(1)])  # index N (none) has no pairs
    has = padded[order.long()] > 0
    live = order.long()[has]  # visible Gaussians, nearest first
    base = (offsets[has] - counts[live]).long()  # each one's first slot: ascending
    inside = int(torch.searchsorted(base, capacity))  # those with a slot below the capacity
    live, base = live[:inside], base[:inside]
    ends = torch.cumsum(counts[live].long(), 0)
    a = 0
    while a < live.numel():
        done = int(ends[a - 1]) if a else 0
        b = max(a + 1, int(torch.searchsorted(ends, done + BIN_CHUNK_PAIRS, right=True)))
        chunk = _bin_macro_chunk if macro else _bin_tile_chunk
        chunk(live[a:b], base[a:b], records, counts, width, height, bin_t, tile_size, out)
        a = b
    if macro:  # the rounded depths under the ids, in every slot a Gaussian wrote (not the sentinels)
        n_mx, n_my = macro_grid((width + tile_size - 1) // tile_size, (height + tile_size - 1) // tile_size)
        bits = depth_bits(n_mx * n_my)
        real = keys != sentinel_key(keys.dtype)
        real[int(offsets[-1]) if offsets.numel() else 0 :] = False  # past the pairs: the caller's
        keys[real] = (keys[real] << bits) | depth_keys(depths, bits)[(values[real] & 0xFFFFFFFF).long()]
    return out


def _bin_halves(order, offsets, records, counts, width, height, bin_t, tile_size, out, halves):
    """`bin_pairs` in two halves (kernels/bin.py `halves`): counts top | bottom << 16, offsets the two prefix sums
    as top + bottom 2^32."""
    split_row, top = halves
    keys, ids = out
    n_tx = (width + tile_size - 1) // tile_size
    M, device = order.shape[0], records.device
    both = counts.long() % 65536 + counts.long() // 65536  # each Gaussian's tiles
    offsets = offsets[:M]
    ends_top, ends_bottom = offsets % 2**32, offsets // 2**32
    whole = ends_top + ends_bottom  # the prefix sum of both halves' counts: one run a Gaussian
    n = int(whole[-1]) if M else 0
    tmp = (torch.full((n,), sentinel_key(torch.int32), dtype=torch.int32, device=device),
           torch.full((n,), -1, dtype=torch.int32, device=device))  # fmt: skip
    bin_pairs(order, whole, records, both.to(torch.int32), width, height, bin_t=bin_t, tile_size=tile_size, out=tmp)
    padded = torch.cat([counts.long(), counts.new_zeros(1).long()])[order.long()]
    n_top, n_all = padded % 65536, padded % 65536 + padded // 65536
    r = torch.repeat_interleave(torch.arange(M, device=device), n_all)  # each pair's place in the order
    j = torch.arange(n, device=device) - (whole - n_all)[r]  # and within its Gaussian's run (rows top to bottom)
    upper = j < n_top[r]
    slot = torch.where(upper, (ends_top - n_top)[r] + j, top + (ends_bottom - (n_all - n_top))[r] + j - n_top[r])
    tile = tmp[0].long() - torch.where(upper, 0, split_row * n_tx)
    key = torch.where(tmp[0] == sentinel_key(torch.int32), sentinel_key(keys.dtype), tile_keys(tile, keys.dtype))
    fits = slot < keys.shape[0]
    keys[slot[fits]] = key[fits].to(keys.dtype)
    ids[slot[fits]] = tmp[1][fits]
    return keys, ids


def _bin_tile_chunk(live, base, records, tiles_touched, width, height, bin_t, tile_size, out) -> None:
    """bin_pairs' tile pairs for the visible Gaussians `live` (in order), whose first slots are `base`."""
    device = records.device
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    keys, ids = out
    capacity = keys.shape[0]
    mx, my = records[live, 0], records[live, 1]
    a, b, c = _record_conic(records[live])
    t = _record_threshold(records[live, 5]) if bin_t is None else bin_t[live]
    ty_lo, rows, ry = _tile_rows(my, a, b, c, t, torch.ones_like(mx, dtype=torch.bool), n_ty, tile_size)
    # one entry per (Gaussian, row)
    g_of_row = torch.repeat_interleave(torch.arange(live.numel(), device=device), rows.long())
    row_start = torch.cumsum(rows.long(), 0) - rows.long()
    r = torch.arange(g_of_row.numel(), device=device) - row_start[g_of_row]
    ty = ty_lo[g_of_row] + r.to(torch.int32)
    tx_lo, span = _row_tile_span(
        ty, mx[g_of_row], my[g_of_row], a[g_of_row], b[g_of_row], c[g_of_row], t[g_of_row], ry[g_of_row],
        n_tx, tile_size,
    )  # fmt: skip
    # one entry per (Gaussian, tile)
    row_of_pair = torch.repeat_interleave(torch.arange(g_of_row.numel(), device=device), span.long())
    span_start = torch.cumsum(span.long(), 0) - span.long()
    col = torch.arange(row_of_pair.numel(), device=device) - span_start[row_of_pair]
    tile = ty[row_of_pair].long() * n_tx + tx_lo[row_of_pair].long() + col
    g_local = g_of_row[row_of_pair]
    # slot within the Gaussian's run: pairs come out grouped by Gaussian, in emission order
    per_g = torch.bincount(g_local, minlength=live.numel())
    local_idx = torch.arange(g_local.numel(), device=device) - (torch.cumsum(per_g, 0) - per_g)[g_local]
    keep = local_idx < tiles_touched[live][g_local].long()  # never write past the Gaussian's slots
    slots = base[g_local] + local_idx
    # every slot of a visible Gaussian: its id, and the sentinel where its walk found fewer tiles (kernels/bin.py)
    all_slots = torch.repeat_interleave(base, tiles_touched[live].long()) + (
        torch.arange(int(tiles_touched[live].sum()), device=device)
        - torch.repeat_interleave(torch.cumsum(tiles_touched[live].long(), 0) - tiles_touched[live].long(),
                                  tiles_touched[live].long())
    )  # fmt: skip
    all_ids = torch.repeat_interleave(live.to(torch.int32), tiles_touched[live].long())
    fits = all_slots < capacity
    keys[all_slots[fits]] = sentinel_key(keys.dtype)
    ids[all_slots[fits]] = all_ids[fits]
    fits = keep & (slots < capacity)
    keys[slots[fits]] = tile_keys(tile[fits], keys.dtype)


def _bin_macro_chunk(live, base, records, macros_touched, width, height, bin_t, tile_size, out) -> None:
    """bin_pairs for the visible Gaussians `live` (in order), whose first slots are `base`."""
    device = records.device
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    n_mx, _ = macro_grid(n_tx, n_ty)
    keys, entries = out
    capacity = keys.shape[0]
    mx, my = records[live, 0], records[live, 1]
    a, b, c = _record_conic(records[live])
    t = _record_threshold(records[live, 5]) if bin_t is None else bin_t[live]
    ty_lo, rows, ry = _tile_rows(my, a, b, c, t, torch.ones_like(mx, dtype=torch.bool), n_ty, tile_size)
    g_of_row, ty, tx_lo, span = _row_spans(ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, tile_size)
    band, hull_lo, hull_hi = _band_hulls(g_of_row, ty, tx_lo, span, ty_lo, rows)
    # one macro-tile pair per (Gaussian, band, macro-tile column of its hull), bands top to bottom, left to right
    n_cols = (hull_hi - hull_lo + 1).clamp(min=0)
    pair_of_band = torch.cumsum(n_cols, 0) - n_cols  # each band's first pair
    band_of_pair = torch.repeat_interleave(torch.arange(n_cols.numel(), device=device), n_cols)
    bx = hull_lo[band_of_pair] + torch.arange(band_of_pair.numel(), device=device) - pair_of_band[band_of_pair]
    bands = _bands(ty_lo, rows)
    g_of_band = torch.repeat_interleave(torch.arange(live.numel(), device=device), bands)
    nth = torch.arange(g_of_band.numel(), device=device) - (torch.cumsum(bands, 0) - bands)[g_of_band]
    by = ty_lo.long()[g_of_band] // MACRO_ROWS + nth  # each band's macro-tile row
    # each tile's bit, added to its macro-tile pair's mask
    row_of_tile = torch.repeat_interleave(torch.arange(g_of_row.numel(), device=device), span.long())
    span_start = torch.cumsum(span.long(), 0) - span.long()
    tx = tx_lo.long()[row_of_tile] + torch.arange(row_of_tile.numel(), device=device) - span_start[row_of_tile]
    tile_band = band[row_of_tile]
    pair = pair_of_band[tile_band] + tx // MACRO_COLS - hull_lo[tile_band]
    bit = (ty.long()[row_of_tile] % MACRO_ROWS) * MACRO_COLS + tx % MACRO_COLS
    masks = torch.zeros(band_of_pair.numel(), dtype=torch.int64, device=device).index_add_(0, pair, 1 << bit)
    # slot within the Gaussian's run, pairs grouped by Gaussian in emission order
    g_of_pair = g_of_band[band_of_pair]
    per_g = torch.bincount(g_of_pair, minlength=live.numel())
    local = torch.arange(g_of_pair.numel(), device=device) - (torch.cumsum(per_g, 0) - per_g)[g_of_pair]
    count = macros_touched[live].long()
    keep = local < count[g_of_pair]  # never write past the Gaussian's slots
    slots = base[g_of_pair] + local
    # every slot of a visible Gaussian: its id, and the sentinel where its walk found fewer (kernels/bin.py)
    all_g = torch.repeat_interleave(torch.arange(live.numel(), device=device), count)
    all_slots = base[all_g] + torch.arange(all_g.numel(), device=device) - (torch.cumsum(count, 0) - count)[all_g]
    fits = all_slots < capacity
    keys[all_slots[fits]] = sentinel_key(keys.dtype)
    entries[all_slots[fits]] = live[all_g[fits]]
    fits = keep & (slots < capacity)
    keys[slots[fits]] = (by[band_of_pair] * n_mx + bx)[fits].to(keys.dtype)
    entries[slots[fits]] = pack_entries(live[g_of_pair], masks)[fits]


# ----------------------------------------------------------------------------------------------- sort


# Twin of the launcher in kernels/sort.py: the same signature on purpose (see the module docstring).
def sort_pairs(
    keys: torch.Tensor,
    entries: torch.Tensor,
    *,
    depths: torch.Tensor | None = None,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    gather: bool = True,
    halves: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable by construction: one sort of unique keys (the key above the position), not a stable sort. With
    `depths` (macro-tile pairs keyed by depth) the other way round from the kernel: first by the exact order
    (unique (depth bits, Gaussian index) keys), then stably by key, so the ties are left in exact order with no
    runs to settle (the rounded depth is a function of the depth)."""
    C = keys.shape[0]
    position = torch.arange(C, dtype=torch.int64, device=keys.device)
    at = None  # where the permutation's entries point (absolute positions), where they are not
    if halves is not None:  # each half's keys above their positions: sorted apart, each its own permutation
        half = (position >= halves).long()
        at = torch.argsort((half << 48) | ((keys.long() + 32768) << 32) | position)
        perm = at - half * halves
    elif depths is None:
        perm = torch.argsort((keys.long() << 32) | position)
    else:
        ids = entries.long() & 0xFFFFFFFF
        real = keys != sentinel_key(keys.dtype)
        depth = torch.zeros(C, dtype=torch.float32, device=keys.device)
        depth[real] = depths[ids[real]]
        exact = torch.where(real, (depth.view(torch.int32).long() << 32) | ids, torch.iinfo(torch.int64).max)
        first = torch.argsort(exact, stable=True)
        perm = first[torch.argsort(keys[first], stable=True)]
    assert gather or depths is None, "macro-tile pairs are gathered as their ties are settled"
    sorted_keys = keys[perm if at is None else at]
    if not gather:  # the permutation, through which the rasterizer reads the ids
        if out is not None:
            out[0][:C].copy_(sorted_keys)
            out[1][:C].copy_(perm)
            return out[0][:C], out[1][:C]
        return sorted_keys, perm
    sorted_entries = entries[perm]
    if out is not None:
        out[0][:C].copy_(sorted_keys)
        out[2][:C].copy_(sorted_entries)
        return out[0][:C], out[2][:C]
    return sorted_keys, sorted_entries


# ----------------------------------------------------------------------------------------------- tile lists


# Twin of `tile_ranges` in kernels/tile_lists.py: the same signature on purpose.
def tile_ranges(
    sorted_keys: torch.Tensor, n_tiles: int, *, out: torch.Tensor | None = None, halves: tuple[int, int] | None = None
) -> torch.Tensor:
    """By counting each tile's keys (their runs are contiguous when sorted), the bottom half's tile ids shifted
    past the top's."""
    tiles = key_tiles(sorted_keys)
    real = sorted_keys != sentinel_key(sorted_keys.dtype)
    if halves is not None:
        top, split_tile = halves
        tiles[top:] += split_tile
    real &= tiles < n_tiles
    counts = torch.bincount(tiles[real], minlength=n_tiles)[:n_tiles]
    ends = torch.cumsum(counts, 0)
    starts = ends - counts
    ranges = torch.stack([starts, ends], 1).to(torch.int32)
    ranges[counts == 0] = 0
    if out is None:
        return ranges
    out.copy_(ranges)
    return out


# Sorted pairs the twin of `tile_lists` expands at a time: its [chunk, 32] bit and position tensors take about
# 400 bytes a pair.
LIST_REF_CHUNK = 1 << 14


# Twin of the launcher in kernels/tile_lists.py: the same signature on purpose (see the module docstring).
def tile_lists(
    sorted_keys: torch.Tensor,
    sorted_entries: torch.Tensor,
    n_tx: int,
    n_ty: int,
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (set bit, pair) of the sorted pairs, ordered by bit, then by the pair's position: its rank is where
    its id goes (the kernel's layout). Here the ranks come from a pass over the pairs LIST_REF_CHUNK at a time with
    running per-bit counts (so the [chunk, 32] bit tensors stay a few MB whatever the pair count), after a first
    pass that totals each bit. A tile's range runs from the rank of its macro-tile's first pair within the bit to
    that of its last pair, plus one where that pair has the bit, cut to the list buffer's length; tiles of a
    macro-tile with no pair keep [0, 0)."""
    ids, ranges, _ = out
    device = sorted_keys.device
    n_mx, n_my = macro_grid(n_tx, n_ty)
    bits = MACRO_COLS * MACRO_ROWS
    b = torch.arange(bits, device=device)
    C, L = sorted_keys.numel(), ids.shape[0]
    units = sorted_keys.long() >> depth_bits(n_mx * n_my)  # the keys' macro-tiles, above their rounded depths

    def chunk_bits(lo: int, hi: int):
        key = units[lo:hi]
        real = (key >= 0) & (key < n_mx * n_my)
        masks = torch.where(real, (sorted_entries[lo:hi] >> 32) & 0xFFFFFFFF, torch.zeros_like(key))
        return key, real, ((masks[:, None] >> b) & 1).bool()  # [c, 32]

    totals = torch.zeros(bits, dtype=torch.int64, device=device)
    for lo in range(0, C, LIST_REF_CHUNK):
        totals += chunk_bits(lo, lo + LIST_REF_CHUNK)[2].sum(0)
    before_bit = torch.cumsum(totals, 0) - totals  # [32] the entries of the bits below
    running = torch.zeros(bits, dtype=torch.int64, device=device)  # the pairs before this chunk with the bit
    ranges.zero_()
    for lo in range(0, C, LIST_REF_CHUNK):
        hi = min(lo + LIST_REF_CHUNK, C)
        key, real, has = chunk_bits(lo, hi)
        start = before_bit + running + torch.cumsum(has.long(), 0) - has.long()  # [c, 32]: position(i, b)
        running += has.sum(0)
        pair, bit = torch.nonzero(has, as_tuple=True)
        at = start[pair, bit]
        fits = at < L
        ids[at[fits]] = (sorted_entries[lo:hi][pair[fits]] & 0xFFFFFFFF).to(torch.int32)
        prev = units[lo - 1 : lo] if lo else key.new_full((1,), -1)
        nxt = units[hi : hi + 1] if hi < C else key.new_full((1,), -1)
        first = real & (key != torch.cat([prev, key[:-1]]))
        last = real & (key != torch.cat([key[1:], nxt]))
        for where, end in ((first, 0), (last, 1)):
            i = torch.nonzero(where).squeeze(1)
            tx = (key[i] % n_mx)[:, None] * MACRO_COLS + b % MACRO_COLS
            ty = (key[i] // n_mx)[:, None] * MACRO_ROWS + b // MACRO_COLS
            inside = (tx < n_tx) & (ty < n_ty)
            value = (start[i] + (has[i].long() if end else 0)).clamp(max=L)
            ranges[(ty * n_tx + tx)[inside], end] = value[inside].to(torch.int32)
    return ids, ranges


# ----------------------------------------------------------------------------------------------- schedule


# Twin of the launcher in kernels/schedule.py: the same signature on purpose (see the module docstring).
def schedule_tiles(
    ranges: torch.Tensor,
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    longest: torch.Tensor | None = None,
    sorted_keys: torch.Tensor | None = None,
    halves: tuple[int, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiles by the bit length of their list length (capped, SCHEDULE_CLASSES), longest first, ties in id order;
    the longest list into `longest` ([1] i64) where given. From `sorted_keys`: their ranges by counting first
    (`tile_ranges`), into `ranges`."""
    if sorted_keys is not None:
        tile_ranges(sorted_keys, ranges.shape[0], out=ranges, halves=halves)
    counts = (ranges[:, 1] - ranges[:, 0]).to(torch.int64)
    if longest is not None:
        longest.fill_(int(counts.max()) if counts.numel() else 0)
    # the bit length is how many of 1, 2, 4, ... the count reaches; the top class is SCHEDULE_CLASSES - 1
    powers = 2 ** torch.arange(SCHEDULE_CLASSES - 1, device=ranges.device)
    cls = (counts[:, None] >= powers[None, :]).sum(1)
    tiles = torch.arange(counts.shape[0], device=ranges.device)
    schedule = torch.argsort(-cls * (counts.shape[0] + 1) + tiles).to(torch.int32)
    if out is None:
        return schedule, counts.to(torch.int32)
    out[0].copy_(schedule)
    out[1].copy_(counts)
    return out[0], out[1]


# ----------------------------------------------------------------------------------------------- rasterize


# Twin of the launcher in kernels/rasterize.py: the same signature on purpose (see the module docstring).
def rasterize_tiles(
    gaussian_ids: torch.Tensor,
    ranges: torch.Tensor,
    records: torch.Tensor,
    background: torch.Tensor,
    width: int,
    height: int,
    *,
    tile_size: int = 8,
    variant: str = "auto",
    step: int | None = None,
    num_warps: int | None = None,
    out: tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None] | None = None,
    lists: int = 0,
    schedule: torch.Tensor | None = None,
    parts: torch.Tensor | None = None,
    split: tuple[int, int, int] | None = None,
    perm: torch.Tensor | None = None,
    perm_halves: tuple[int, int] | None = None,
    half: bool = False,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """Per tile: the depth-sorted list in blocks of 256, transmittance by cumprod within a block and carried
    across blocks, stopping once every pixel of the tile is done. The Triton launcher's scheduling knobs
    (`variant`, `step`, `num_warps`, `lists`, `schedule`, and the split lists' `parts` and `split`, which move
    a pixel by under 1e-4) are accepted and ignored: none of them changes the image beyond that; nor is `half`
    (the scalar loop's fp16 pairs): the twin blends in float32, the image `half` approaches. The records'
    log2 form (kernels/buffers.py): alpha = min(0.999, 2^e), e = lo - (A dx^2 + B dx dy +
    C dy^2), skipped where e > lo (sigma < 0) or e < log2(1/255). With `perm` (the pair sort's permutation), list
    entry i is gaussian_ids[perm[i]]; with `perm_halves` = (split_tile, top), the entries from top on (the bottom
    half's lists) are gaussian_ids[top + perm[i]]."""
    device = records.device
    if perm is not None:
        if perm_halves is not None:
            perm = perm.clone()
            perm[perm_halves[1] :] += perm_halves[1]
        gaussian_ids = gaussian_ids[perm]
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    if out is None:
        out = (
            torch.empty(height, width, 3, dtype=torch.float32, device=device),
            torch.empty(height, width, dtype=torch.float32, device=device),
            None,
        )
    rgb, alpha_out, rgba8 = out
    colors = records[:, 6:8].contiguous().view(torch.float16)[:, :3].float()
    C = torch.zeros(n_ty * tile_size, n_tx * tile_size, 3, dtype=torch.float32, device=device)
    T_img = torch.ones(n_ty * tile_size, n_tx * tile_size, dtype=torch.float32, device=device)
    ly, lx = torch.meshgrid(
        torch.arange(tile_size, device=device), torch.arange(tile_size, device=device), indexing="ij"
    )
    block = 256
    for tile_id, (start, end) in enumerate(ranges.tolist()):
        if end <= start:
            continue
        ty, tx = divmod(tile_id, n_tx)
        px = (tx * tile_size + lx).flatten()
        py = (ty * tile_size + ly).flatten()
        done = (px >= width) | (py >= height)  # pixels outside the image need no work
        fx, fy = px.float() + PIXEL_CENTRE, py.float() + PIXEL_CENTRE
        T = torch.ones_like(fx)
        acc = torch.zeros(fx.numel(), 3, dtype=torch.float32, device=device)
        for b0 in range(start, end, block):
            g = gaussian_ids[b0 : min(end, b0 + block)].long()
            mx, my, A, B, Cq, lo = records[g, :6].unbind(-1)
            dx = mx[:, None] - fx[None]  # [B, PIX]
            dy = my[:, None] - fy[None]
            e = lo[:, None] - (A[:, None] * dx * dx + B[:, None] * dx * dy + Cq[:, None] * dy * dy)
            alpha = torch.clamp_max(torch.exp2(e), ALPHA_MAX)
            ok = (e <= lo[:, None]) & (e >= LOG2_ALPHA_MIN) & ~done[None]
            alpha = torch.where(ok, alpha, torch.zeros_like(alpha))
            incl = torch.cumprod(1.0 - alpha, dim=0) * T[None]  # T after each Gaussian
            excl = torch.cat([T[None], incl[:-1]], 0)  # T before
            keep = incl > T_STOP  # a pixel stops before the Gaussian that would take T to <= 1e-4
            w = torch.where(keep, alpha * excl, torch.zeros_like(alpha))
            acc += w.T @ colors[g]
            done |= incl.min(0).values <= T_STOP
            T = torch.where(keep, incl, T[None]).min(0).values
            if bool(done.all()):
                break
        ys, xs = ty * tile_size, tx * tile_size
        C[ys : ys + tile_size, xs : xs + tile_size] = acc.reshape(tile_size, tile_size, 3)
        T_img[ys : ys + tile_size, xs : xs + tile_size] = T.reshape(tile_size, tile_size)
    T_img = T_img[:height, :width]
    image, coverage = C[:height, :width] + T_img[..., None] * background, 1.0 - T_img
    if rgb is not None:
        rgb.copy_(image)
        alpha_out.copy_(coverage)
    if rgba8 is not None:
        rgba = torch.cat([image, coverage[..., None]], -1)
        rgba8.copy_((rgba.clamp(0, 1) * 255.0 + 0.5).to(torch.uint8))
    return rgb, alpha_out, rgba8


# ----------------------------------------------------------------------------------------------- staging


# Twin of the launcher in kernels/staging.py: the same signature on purpose (see the module docstring).
def copy_to_device(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """dst[:] = src, torch's copy (enqueued, from or into pinned memory)."""
    assert src.shape == dst.shape and src.dtype == dst.dtype, (src.shape, dst.shape)
    return dst.copy_(src, non_blocking=True)


__all__ = [
    "key_dtype",
    "key_halves",
    "key_offset",
    "key_tiles",
    "tile_keys",
    "MACRO_KEY_DTYPE",
    "depth_bits",
    "depth_keys",
    "index_offsets",
    "list_scratch_shape",
    "macro_grid",
    "sentinel_key",
    "cull_window",
    "project_outputs",
    "project_gaussians",
    "depth_order",
    "count_blocks",
    "count_visible",
    "scan_blocks",
    "visible_order",
    "order_outputs",
    "bin_pairs",
    "sort_pairs",
    "tile_lists",
    "tile_ranges",
    "schedule_tiles",
    "rasterize_tiles",
    "copy_to_device",
    "eval_sh",
]
