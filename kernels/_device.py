"""@triton.jit device functions shared by the stage kernels (scalar lanes: every argument is a block).

- `alpha_threshold_t`: the Mahalanobis^2 radius of the alpha = 1/255 contour, t = 2 ln(255 o).
- `tile_rows` / `row_tile_span`: the exact ellipse-tile test (AccuTile-style). For each tile row, the x-extent
  of the ellipse {d : d^T conic d <= t} restricted to the row's band of pixel centres is found in closed form
  (the ellipse's right boundary x_r(dy) is concave, so its maximum over a band is at the band point closest
  to the ellipse's rightmost point; symmetrically for the left boundary). A tile is kept iff that interval
  meets the tile's pixel centres. `kernels/reference.py` has the same math in torch. `tile_cols`: the columns
  of the ellipse's bounding box (with `tile_rows`, its tile box; AdaGScale's gate, below).
- `adagscale_s2`: AdaGScale's per-Gaussian, per-view scale of the binning ellipse (lossy, opt-in; see below).
- `eval_sh`: view-dependent colour from fp16 SH coefficients, in float32, gsplat 1.5.3's polynomial forms,
  degree 0..3.

AdaGScale (Jo et al. 2026, arXiv 2604.18980; the derivation below is this project's reconstruction of the
method from the paper). The pairs of a Gaussian's outer tiles carry little colour. With Q = d^T conic d, the
alpha mass (in pixels) of the elliptical annulus s^2 t <= Q <= t is the integral of o exp(-Q/2) over it,
    M(s) = 2 pi o sqrt(det Sigma) (exp(-s^2 t / 2) - exp(-t / 2)),      det Sigma = 1 / (a c - b^2),
and the peripheral score is S(s) = w M(s) with w the colour weight (brightest channel, clamped to
[WEIGHT_MIN, 1]: a dark Gaussian still hides what lies behind it). The smallest s with S(s) <= tau is, with
k = w 2 pi o sqrt(det Sigma) exp(-t/2) (so that S(s) = k (exp((1 - s^2) t / 2) - 1)),
    s^2 = 1 - (2 / t) ln(1 + tau / k),
clamped to [s_min^2, 1] (tau = 0 gives s^2 = 1 exactly, hence the exact binning bit for bit). Binning then uses
t' = s^2 t; blending keeps the full Gaussian, so a kept tile renders exactly as before and only whole tiles of
the periphery are dropped. tau is the frame's, read from the device: the renderer scales it to the Gaussians per
pixel of the view (renderer/params.py, `adagscale_frame_tau`). A second floor keeps the tile holding the mean:
the ellipse at t' must contain the square of half-width 1/2 around the mean (Q at its corners is
(a + c + 2|b|) / 4), which holds a pixel centre of the mean's tile, so a Gaussian whose mean is on screen is never
binned to nothing.

Only Gaussians that could lose a tile are scored: those whose bounding box at the full t (`tile_rows` x
`tile_cols`, clipped to the image) spans more than one tile. A box of one tile holds at most one exact tile,
which the centre floor keeps whenever the mean is on screen, so a shrink removes nothing there; such Gaussians
bin at t, their exact tiles (also when the mean is off screen, where a shrink could have dropped the one tile),
and need no colour before the walk.
"""

import triton
import triton.language as tl

from . import constants

# kernels/constants.py's values in the form a @triton.jit function can read; kernels/reference.py reads the
# same module, so kernel and twin share every number (the meaning of each is documented there).
T_MARGIN = tl.constexpr(constants.T_MARGIN)
TWO_LN2 = tl.constexpr(constants.TWO_LN2)
CLAMP_TILES = tl.constexpr(constants.CLAMP_TILES)
CENTRE_SLACK = tl.constexpr(constants.CENTRE_SLACK)
WEIGHT_MIN = tl.constexpr(constants.WEIGHT_MIN)
ALPHA_MIN = tl.constexpr(constants.ALPHA_MIN)
ALPHA_MAX = tl.constexpr(constants.ALPHA_MAX)
T_STOP = tl.constexpr(constants.T_STOP)
LOG2_ALPHA_MIN = tl.constexpr(constants.LOG2_ALPHA_MIN)
HALF_LOG2E = tl.constexpr(0.5 * constants.LOG2E)  # the record's A and C per conic a and c
LOG2E = tl.constexpr(constants.LOG2E)  # its B per conic b
# an int64 word whose high float32 is -inf and low one 0.0: the (C, lo) word past a list's end (lo = -inf)
NEG_INF_HIGH = tl.constexpr(-(1 << 55))
FP16_MAX = tl.constexpr(65504.0)  # a record's colour is fp16: larger values are clamped, not made infinite
ALPHA_MIN_INV = tl.constexpr(1.0 / constants.ALPHA_MIN)  # 255.0 exactly: t = 2 ln(o / ALPHA_MIN), as a product
MACRO_COLS = tl.constexpr(constants.MACRO_COLS)  # a macro-tile's tile columns and rows
MACRO_ROWS = tl.constexpr(constants.MACRO_ROWS)
DEPTH_KEY_FLOOR_BITS = tl.constexpr(constants.DEPTH_KEY_FLOOR_BITS)
# a tile's first pixel centre lies PIXEL_CENTRE past its start, its last one LAST_CENTRE_FROM_END before its end
PIXEL_CENTRE = tl.constexpr(constants.PIXEL_CENTRE)
LAST_CENTRE_FROM_END = tl.constexpr(1.0 - constants.PIXEL_CENTRE)
FOV_SLACK = tl.constexpr(constants.FOV_SLACK)
# SH: gsplat's polynomial forms of the basis, whose coefficients are these multiples of the table's entries
SH_C0 = tl.constexpr(constants.SH_C0)
SH_C1 = tl.constexpr(constants.SH_C1)
SH_C2_0_HALF = tl.constexpr(0.5 * constants.SH_C2[0])  # times 2xy
SH_C2_1 = tl.constexpr(constants.SH_C2[1])  # (also SH_C2[3]) times z, then y or x
SH_C2_2 = tl.constexpr(constants.SH_C2[2])  # (2z^2 - x^2 - y^2) = 3z^2 - 1 on the unit sphere
SH_C2_2_X3 = tl.constexpr(3.0 * constants.SH_C2[2])
SH_C2_4 = tl.constexpr(constants.SH_C2[4])
SH_C3_0 = tl.constexpr(constants.SH_C3[0])  # (also SH_C3[6])
SH_C3_2 = tl.constexpr(constants.SH_C3[2])  # (4z^2 - x^2 - y^2) = 5z^2 - 1; also SH_C3[4]
SH_C3_2_X5 = tl.constexpr(5.0 * constants.SH_C3[2])
SH_C3_3_X3 = tl.constexpr(3.0 * constants.SH_C3[3])  # z (2z^2 - 3x^2 - 3y^2) = z (5z^2 - 3)
SH_C3_3_X5 = tl.constexpr(5.0 * constants.SH_C3[3])
SH_C3_5 = tl.constexpr(constants.SH_C3[5])  # times z, then (x^2 - y^2) or 2xy (SH_C3[1] = 2 SH_C3[5])


@triton.jit
def alpha_threshold_t(opacity):
    """t such that o * exp(-Q/2) >= 1/255  <=>  Q <= t (Q = d^T conic d); margin included."""
    return 2.0 * tl.log(opacity * ALPHA_MIN_INV) + T_MARGIN


@triton.jit
def record_threshold(lo):
    """`alpha_threshold_t` from a record's lo = log2(o): the t that stage 1 counts tiles with and binning walks
    again (without AdaGScale), both from the same stored bits, so binning gathers nothing else of a Gaussian."""
    return (lo - LOG2_ALPHA_MIN) * TWO_LN2 + T_MARGIN


@triton.jit
def adagscale_s2(a, b, c, o, t, cr, cg, cb, tau, s_min):
    """s^2 in [s_min^2, 1] of AdaGScale's binning threshold t' = s^2 t (module docstring); rgb = (cr, cg, cb)."""
    w = tl.minimum(tl.maximum(tl.maximum(tl.maximum(cr, cg), cb), WEIGHT_MIN), 1.0)
    k = w * 6.283185307179586 * o * tl.exp(-0.5 * t) / tl.sqrt(a * c - b * b)
    s2 = 1.0 - (2.0 / t) * tl.log(1.0 + tau / k)
    centre = CENTRE_SLACK * 0.25 * (a + c + 2.0 * tl.abs(b)) / t
    return tl.minimum(tl.maximum(tl.maximum(s2, centre), s_min * s_min), 1.0)


@triton.jit
def _tile_band(m, r, n, TILE: tl.constexpr):
    """(first, count) of the n tiles along one axis whose pixel-centre band meets [m - r, m + r]; the count
    may be negative (no tile): callers clamp it."""
    lo = (m - r + LAST_CENTRE_FROM_END) / TILE - 1.0
    hi = (m + r - PIXEL_CENTRE) / TILE
    lo = tl.minimum(tl.maximum(lo, -CLAMP_TILES), n + CLAMP_TILES)
    hi = tl.minimum(tl.maximum(hi, -CLAMP_TILES), n + CLAMP_TILES)
    first = tl.maximum(tl.ceil(lo).to(tl.int32), 0)
    last = tl.minimum(tl.floor(hi).to(tl.int32), n - 1)
    return first, last - first + 1


@triton.jit
def tile_rows(my, a, b, c, t, valid, n_ty, TILE: tl.constexpr):
    """First tile row and number of tile rows whose pixel-centre band meets the ellipse."""
    det = a * c - b * b
    ry = tl.sqrt(tl.maximum(t * a / det, 0.0))
    ty_lo, count = _tile_band(my, ry, n_ty, TILE)
    ok = valid & (ry == ry) & (det > 0.0)
    rows = tl.where(ok, tl.maximum(count, 0), 0)
    return ty_lo, rows, ry


@triton.jit
def tile_cols(mx, a, b, c, t, n_tx, TILE: tl.constexpr):
    """First tile column and number of tile columns whose pixel-centre band meets the ellipse's x-extent
    [mx - rx, mx + rx]: the column twin of `tile_rows` (no validity mask; callers multiply by its rows)."""
    det = a * c - b * b
    rx = tl.sqrt(tl.maximum(t * c / det, 0.0))
    tx_lo, count = _tile_band(mx, rx, n_tx, TILE)
    return tx_lo, tl.maximum(count, 0)


@triton.jit
def row_tile_span(ty, mx, my, a, b, c, t, ry, n_tx, TILE: tl.constexpr):
    """[tx_lo, tx_lo + span) : the tiles of row `ty` whose pixel centres the ellipse can reach."""
    det = a * c - b * b
    # band of pixel-centre y offsets from the mean, clipped to the ellipse's y-extent
    y0 = tl.maximum(ty.to(tl.float32) * TILE + PIXEL_CENTRE - my, -ry)
    y1 = tl.minimum(ty.to(tl.float32) * TILE + (TILE - LAST_CENTRE_FROM_END) - my, ry)
    rx = tl.sqrt(tl.maximum(t * c / det, 0.0))
    dy_r = -(b / c) * rx  # dy of the rightmost point; the leftmost is at -dy_r
    dyr = tl.minimum(tl.maximum(dy_r, y0), y1)
    dyl = tl.minimum(tl.maximum(-dy_r, y0), y1)
    xr = (-b * dyr + tl.sqrt(tl.maximum(a * t - det * dyr * dyr, 0.0))) / a
    xl = (-b * dyl - tl.sqrt(tl.maximum(a * t - det * dyl * dyl, 0.0))) / a
    lo = (mx + xl + LAST_CENTRE_FROM_END) / TILE - 1.0
    hi = (mx + xr - PIXEL_CENTRE) / TILE
    lo = tl.minimum(tl.maximum(lo, -CLAMP_TILES), n_tx + CLAMP_TILES)
    hi = tl.minimum(tl.maximum(hi, -CLAMP_TILES), n_tx + CLAMP_TILES)
    tx_lo = tl.maximum(tl.ceil(lo).to(tl.int32), 0)
    tx_hi = tl.minimum(tl.floor(hi).to(tl.int32), n_tx - 1)
    span = tl.where(y0 <= y1, tl.maximum(tx_hi - tx_lo + 1, 0), 0)
    return tx_lo, span


@triton.jit
def band_hull(hull_lo, hull_hi, tx_lo, span):
    """The macro-tile columns [hull_lo, hull_hi] of a band of tile rows, widened by one row's tiles
    [tx_lo, tx_lo + span) (none when span is 0). Empty while hull_hi < hull_lo. One definition for the count in
    `project_gaussians` and the pairs `bin_pairs` emits, so the two agree."""
    has = span > 0
    lo = tl.where(has, tl.minimum(hull_lo, tx_lo // MACRO_COLS), hull_lo)
    hi = tl.where(has, tl.maximum(hull_hi, (tx_lo + span - 1) // MACRO_COLS), hull_hi)
    return lo, hi


@triton.jit
def ewa_footprint(camera_ptr, x, y, z, covars_ptr, offs, valid, width, height, near, far, eps2d, ORTHO: tl.constexpr):
    """World point (x, y, z) with covariance row `offs` of covars [N, 6] -> camera depth zc, screen mean
    (mx, my), conic (a, b, c) of the EWA-projected 2D covariance, and `visible` (valid, within [near, far],
    det > 0). One definition for the project and window-cull kernels, so their culls agree bit for bit.
    camera [24]: viewmat row-major [16], fx, fy, cx, cy, campos [3], pad. ORTHO: an orthographic camera (gsplat's
    camera_model="ortho"): fx, fy are pixels per world unit, the mean is (fx xc + cx, fy yc + cy) and the
    Jacobian diag(fx, fy) with no depth column."""
    # camera: viewmat rows (R | t), intrinsics, centre
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

    xc = r00 * x + r01 * y + r02 * z + t0
    yc = r10 * x + r11 * y + r12 * z + t1
    zc = r20 * x + r21 * y + r22 * z + t2
    visible = valid & (zc >= near) & (zc <= far)

    # Sigma_c = R Sigma R^T (symmetric 3x3)
    s00 = tl.load(covars_ptr + offs * 6 + 0, mask=visible, other=0.0)
    s01 = tl.load(covars_ptr + offs * 6 + 1, mask=visible, other=0.0)
    s02 = tl.load(covars_ptr + offs * 6 + 2, mask=visible, other=0.0)
    s11 = tl.load(covars_ptr + offs * 6 + 3, mask=visible, other=0.0)
    s12 = tl.load(covars_ptr + offs * 6 + 4, mask=visible, other=0.0)
    s22 = tl.load(covars_ptr + offs * 6 + 5, mask=visible, other=0.0)
    # M = R Sigma
    m00 = r00 * s00 + r01 * s01 + r02 * s02
    m01 = r00 * s01 + r01 * s11 + r02 * s12
    m02 = r00 * s02 + r01 * s12 + r02 * s22
    m10 = r10 * s00 + r11 * s01 + r12 * s02
    m11 = r10 * s01 + r11 * s11 + r12 * s12
    m12 = r10 * s02 + r11 * s12 + r12 * s22
    m20 = r20 * s00 + r21 * s01 + r22 * s02
    m21 = r20 * s01 + r21 * s11 + r22 * s12
    m22 = r20 * s02 + r21 * s12 + r22 * s22
    # C = M R^T
    c00 = m00 * r00 + m01 * r01 + m02 * r02
    c01 = m00 * r10 + m01 * r11 + m02 * r12
    c02 = m00 * r20 + m01 * r21 + m02 * r22
    c11 = m10 * r10 + m11 * r11 + m12 * r12
    c12 = m10 * r20 + m11 * r21 + m12 * r22
    c22 = m20 * r20 + m21 * r21 + m22 * r22

    if ORTHO:
        # the orthographic Jacobian diag(fx, fy): no depth column
        cov_xx = fx * fx * c00 + eps2d
        cov_xy = fx * fy * c01
        cov_yy = fy * fy * c11 + eps2d
    else:
        # perspective Jacobian, with the view-space x/z, y/z clamped to 1.3x the frustum (3DGS, gsplat)
        tan_fovx = 0.5 * width / fx
        tan_fovy = 0.5 * height / fy
        lim_x_pos = (width - cx) / fx + FOV_SLACK * tan_fovx
        lim_x_neg = cx / fx + FOV_SLACK * tan_fovx
        lim_y_pos = (height - cy) / fy + FOV_SLACK * tan_fovy
        lim_y_neg = cy / fy + FOV_SLACK * tan_fovy
        zs = tl.where(visible, zc, 1.0)
        rz = 1.0 / zs
        rz2 = rz * rz
        tx = zs * tl.minimum(lim_x_pos, tl.maximum(-lim_x_neg, xc * rz))
        ty = zs * tl.minimum(lim_y_pos, tl.maximum(-lim_y_neg, yc * rz))
        j00 = fx * rz
        j02 = -fx * tx * rz2
        j11 = fy * rz
        j12 = -fy * ty * rz2
        cov_xx = j00 * j00 * c00 + 2.0 * j00 * j02 * c02 + j02 * j02 * c22 + eps2d
        cov_xy = j00 * j11 * c01 + j00 * j12 * c02 + j02 * j11 * c12 + j02 * j12 * c22
        cov_yy = j11 * j11 * c11 + 2.0 * j11 * j12 * c12 + j12 * j12 * c22 + eps2d
    det = cov_xx * cov_yy - cov_xy * cov_xy
    visible = visible & (det > 0.0)
    det = tl.where(visible, det, 1.0)
    a = cov_yy / det
    b = -cov_xy / det
    c = cov_xx / det
    if ORTHO:
        mx = fx * xc + cx
        my = fy * yc + cy
    else:
        mx = fx * xc * rz + cx
        my = fy * yc * rz + cy
    return zc, mx, my, a, b, c, visible


@triton.jit
def _sh_load(sh_ptr, offs, k: tl.constexpr, strides, mask):
    """(r, g, b) of coefficient k of rows `offs`, stored fp16, as float32 (zeros where mask is false); element
    (i, k, c) at i s_n + k s_k + c s_c for strides = (s_n, s_k, s_c)."""
    s_n, s_k, s_c = strides
    base = sh_ptr + offs * s_n + s_k.to(tl.int64) * k
    r = tl.load(base, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(base + s_c, mask=mask, other=0.0).to(tl.float32)
    bl = tl.load(base + 2 * s_c, mask=mask, other=0.0).to(tl.float32)
    return r, g, bl


@triton.jit
def eval_sh(sh_ptr, strides, offs, mask, x, y, z, DEGREE: tl.constexpr):
    """RGB = sum_k basis_k(dir) * sh[k] for k < (DEGREE+1)^2; dir = (x, y, z) must be unit length.

    The coefficients are an [N, K, 3] fp16 tensor of any strides (kernels/buffers.py `SH_DTYPE`: half the bytes of
    float32); each is widened to float32 as it is loaded, and the sums are float32. The renderer's copy is laid
    out coefficient-major, strides (1, 3 N, N) (`sh_layout`), so that a coefficient of a program's Gaussians is
    one contiguous load, not 32 lanes 54 bytes apart.
    DEGREE <= sqrt(K) - 1 renders fewer bands.
    """
    r, g, bl = _sh_load(sh_ptr, offs, 0, strides, mask)
    r = SH_C0 * r
    g = SH_C0 * g
    bl = SH_C0 * bl
    if DEGREE >= 1:
        r1, g1, b1 = _sh_load(sh_ptr, offs, 1, strides, mask)
        r2, g2, b2 = _sh_load(sh_ptr, offs, 2, strides, mask)
        r3, g3, b3 = _sh_load(sh_ptr, offs, 3, strides, mask)
        w1 = -SH_C1 * y
        w2 = SH_C1 * z
        w3 = -SH_C1 * x
        r += w1 * r1 + w2 * r2 + w3 * r3
        g += w1 * g1 + w2 * g2 + w3 * g3
        bl += w1 * b1 + w2 * b2 + w3 * b3
    if DEGREE >= 2:
        z2 = z * z
        f_tmp0b = SH_C2_1 * z
        f_c1 = x * x - y * y
        f_s1 = 2.0 * x * y
        w4 = SH_C2_0_HALF * f_s1
        w5 = f_tmp0b * y
        w6 = SH_C2_2_X3 * z2 - SH_C2_2
        w7 = f_tmp0b * x
        w8 = SH_C2_4 * f_c1
        r4, g4, b4 = _sh_load(sh_ptr, offs, 4, strides, mask)
        r5, g5, b5 = _sh_load(sh_ptr, offs, 5, strides, mask)
        r6, g6, b6 = _sh_load(sh_ptr, offs, 6, strides, mask)
        r7, g7, b7 = _sh_load(sh_ptr, offs, 7, strides, mask)
        r8, g8, b8 = _sh_load(sh_ptr, offs, 8, strides, mask)
        r += w4 * r4 + w5 * r5 + w6 * r6 + w7 * r7 + w8 * r8
        g += w4 * g4 + w5 * g5 + w6 * g6 + w7 * g7 + w8 * g8
        bl += w4 * b4 + w5 * b5 + w6 * b6 + w7 * b7 + w8 * b8
        if DEGREE >= 3:
            f_tmp0c = SH_C3_2_X5 * z2 - SH_C3_2
            f_tmp1b = SH_C3_5 * z
            f_c2 = x * f_c1 - y * f_s1
            f_s2 = x * f_s1 + y * f_c1
            w9 = SH_C3_0 * f_s2
            w10 = f_tmp1b * f_s1
            w11 = f_tmp0c * y
            w12 = z * (SH_C3_3_X5 * z2 - SH_C3_3_X3)
            w13 = f_tmp0c * x
            w14 = f_tmp1b * f_c1
            w15 = SH_C3_0 * f_c2
            r9, g9, b9 = _sh_load(sh_ptr, offs, 9, strides, mask)
            r10, g10, b10 = _sh_load(sh_ptr, offs, 10, strides, mask)
            r11, g11, b11 = _sh_load(sh_ptr, offs, 11, strides, mask)
            r12, g12, b12 = _sh_load(sh_ptr, offs, 12, strides, mask)
            r13, g13, b13 = _sh_load(sh_ptr, offs, 13, strides, mask)
            r14, g14, b14 = _sh_load(sh_ptr, offs, 14, strides, mask)
            r15, g15, b15 = _sh_load(sh_ptr, offs, 15, strides, mask)
            r += w9 * r9 + w10 * r10 + w11 * r11 + w12 * r12 + w13 * r13 + w14 * r14 + w15 * r15
            g += w9 * g9 + w10 * g10 + w11 * g11 + w12 * g12 + w13 * g13 + w14 * g14 + w15 * g15
            bl += w9 * b9 + w10 * b10 + w11 * b11 + w12 * b12 + w13 * b13 + w14 * b14 + w15 * b15
    return r, g, bl


# ----------------------------------------------------------------------------------------------- blend records
# One 32-byte row per Gaussian, written by `project` and read by `bin` and `rasterize` (layout: kernels/buffers.py):
# (mx, my, A, B, C, lo, colour) with A = a log2(e) / 2, B = b log2(e), C = c log2(e) / 2, lo = log2(o), and
# the colour as fp16 (r, g, b, 0). Read as four 64-bit words.


@triton.jit
def _two_floats(word):
    """The (low, high) float32 halves of an int64 word."""
    return word.to(tl.int32).to(tl.float32, bitcast=True), (word >> 32).to(tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def _two_halves(word):
    """The (low, high) fp16 halves of an int32 word, as float32."""
    lo = (word & 0xFFFF).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    hi = (word >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    return lo, hi


@triton.jit
def record_geometry(rec_ptr, gid, m):
    """(mx, my, A, B, C, lo) of record gid, three 8-byte loads; where m is false, zeros and lo = -inf (a Gaussian
    that reaches no pixel). Binning and the batched rasterizer read records this way; the scalar rasterizer, a
    Gluon kernel, loads a step's records into shared memory instead (kernels/rasterize.py)."""
    w = rec_ptr.to(tl.pointer_type(tl.int64)) + gid * 4
    mx, my = _two_floats(tl.load(w + 0, mask=m, other=0))
    A, B = _two_floats(tl.load(w + 1, mask=m, other=0))
    C, lo = _two_floats(tl.load(w + 2, mask=m, other=NEG_INF_HIGH))
    return mx, my, A, B, C, lo


@triton.jit
def record_colour(rec_ptr, gid, m):
    """(r, g, b) of record gid as float32, one 8-byte load (zeros where m is false)."""
    word = tl.load(rec_ptr.to(tl.pointer_type(tl.int64)) + gid * 4 + 3, mask=m, other=0)
    r, g = _two_halves(word.to(tl.int32))
    b, _ = _two_halves((word >> 32).to(tl.int32))
    return r, g, b


@triton.jit
def record_conic(A, B, C):
    """The conic (a, b, c) of Q = a dx^2 + 2 b dx dy + c dy^2 from a record's (A, B, C). Binning walks the
    footprint of this conic, and so does the count that sized its pair slots: both from the stored record."""
    return A * (1.0 / HALF_LOG2E), B * (1.0 / LOG2E), C * (1.0 / HALF_LOG2E)


@triton.jit
def write_record(rec_ptr, offs, mask, mx, my, a, b, c, lo, cr, cg, cb):
    """Record rows `offs` from the screen mean, the conic (a, b, c), lo = log2(opacity) and the colour.

    Each lane stores its row's 32 bytes as one [8] int32 vector (two 16-byte stores), not as ten stores of its own
    fields: those left every store instruction of a warp touching 32 sectors 32 bytes apart, ten times over, and
    the stores took more than half of the projection's time (BENCHMARKS.md, section 31)."""
    w = (_bits(mx), _bits(my), _bits(a * HALF_LOG2E), _bits(b * LOG2E), _bits(c * HALF_LOG2E), _bits(lo),
         _half_bits(cr) | (_half_bits(cg) << 16), _half_bits(cb))  # fmt: skip
    # words 6 and 7: the fp16 colour, r and g at bytes 24 and 26, b and 0 at 28 and 30 (little-endian).
    # tl.join adds its new axis last, so the words that differ in the index's highest bit are joined first:
    # row[l, i, j, k] = w[4 i + 2 j + k], and row-major [l, 8] is the record's word order
    row = tl.join(tl.join(tl.join(w[0], w[4]), tl.join(w[2], w[6])), tl.join(tl.join(w[1], w[5]), tl.join(w[3], w[7])))
    row = tl.reshape(row, (mx.shape[0], 8))
    words = rec_ptr.to(tl.pointer_type(tl.int32)) + offs[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(words, row, mask=mask[:, None])


@triton.jit
def depth_key(depth, bits, shift):
    """The rounded depth a macro-tile pair's key holds in its low `bits` bits (kernels/buffers.py `depth_keys`, its
    twin): the float's bit pattern (monotone for positive floats) less DEPTH_KEY_FLOOR_BITS, shifted right by
    `shift`, clamped to [0, 2^bits - 1]. int32 throughout: a positive float's pattern is below 2^31."""
    raw = tl.maximum(depth.to(tl.int32, bitcast=True) - DEPTH_KEY_FLOOR_BITS, 0)
    return tl.minimum(raw >> shift, (1 << bits) - 1)


@triton.jit
def _bits(x):
    """A float32's bits as an int32."""
    return x.to(tl.int32, bitcast=True)


@triton.jit
def _half_bits(x):
    """min(x, FP16_MAX) as fp16 (x >= 0: a colour), its 16 bits in the low half of an int32."""
    return tl.minimum(x, FP16_MAX).to(tl.float16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
