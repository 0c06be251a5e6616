"""Stage 6, rasterize: front-to-back alpha compositing per tile (8x8 by default), gsplat 1.5.3's rule (exactly,
but where the scalar form splits the longest lists: below).

For pixel centre p = (x + 0.5, y + 0.5) and each Gaussian of the tile's depth-sorted list:
    sigma = 0.5 (a dx^2 + c dy^2) + b dx dy,  d = mean2d - p
    alpha = min(0.999, o exp(-sigma));  skipped if sigma < 0 or alpha < 1/255
    stop (without blending) when T (1 - alpha) <= 1e-4;  else C += c alpha T,  T *= 1 - alpha
    rgb = C + T background,  alpha_out = 1 - T

The Gaussians arrive as blend records (`project_gaussians`, kernels/buffers.py `RECORD`): 32 bytes each, the
conic in log2 units with the opacity folded into the exponent,
    e(d) = lo - (A dx^2 + B dx dy + C dy^2) = log2(o) - log2(e) sigma,   alpha = min(0.999, 2^e),
    sigma >= 0  <=>  e <= lo,   alpha >= 1/255  <=>  e >= log2(1/255),
so a pixel costs one exp2 and no multiply by the opacity, and a Gaussian is one 32-byte sector (the colour is
fp16: 92-120 dB against the float32 colours on the bench's frames).

One program per tile, its pixels as lanes: a program's P pixels per thread share a column, so a Gaussian's
dx terms are computed once per column. 8x8 tiles are the default: a 64-pixel program wastes fewer evaluations
on small Gaussians than a 256-pixel one and stops sooner, which outweighs the 2-2.5x more pairs now that the
pair sort is cheap (BENCHMARKS.md has the measurements behind this).

Loop forms, the same rule:
- "scalar" (CUDA): a Gluon kernel (Triton's layout-explicit dialect), one Gaussian at a time. A step's records
  are loaded by the program together, one a thread, turned into the tile's polynomial of the exponent in the
  pixel's offset (u, v) from the tile's centre, e = c0 + c1 u + c2 v + c3 u^2 + c4 u v + c5 v^2, and the colour
  as float32 (`_tile_coefficients`), and stored to shared memory, from which every thread reads each whole; the
  next step's are in flight while one blends (BENCHMARKS.md, sections 23 and 32). A pixel then costs five
  multiply-adds for its exponent where d's form took seven, and no colour conversion; and it has no sigma >= 0
  test (`_blend_poly` says why). In the long-list class the
  longest lists are split across programs, each part blended from T = 1, and the parts composited after
  (`_combine_parts_kernel`; within 1e-4 of whole lists except where a pixel's stop falls inside a later part:
  there up to 0.006 on the 6M composite's overview, BENCHMARKS.md section 43).
  With `half` (RenderSettings.blend_precision "fp16", the default) a thread's two pixels are one fp16 pair
  (`_blend_half2`): the exponent and its ex2 in float32, then alpha, the masks, T and the colour sums as f16x2,
  each step's sums added into float32 sums at its end; one warp a tile in every class at 8 px (HALF_CONFIG).
  70-83 dB against the float32 loop's image on the bench's frames, 0.71-0.89x its time (BENCHMARKS.md, section
  61; alpha from a float32 ex2 since section 62: 0.3-0.8 dB closer, 0.96-0.99x).
- "batched" (Triton, and what Triton's interpreter runs: it cannot run Gluon): B Gaussians per step as a
  [B, pixels] block, transmittance by `tl.cumprod` along the batch. Few, wide steps. Float32 only.

Inputs : sorted gaussian_ids [C] i32 (only the ranges' entries are read), or the ids as binned and the pair
         sort's permutation [C] i64 (`perm`: entry i is ids[perm[i]]), ranges [n_tiles, 2] i32,
         records [N, 8] f32 (kernels/buffers.py), background [3]
Outputs: rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8 (optional; A = coverage)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ._device import ALPHA_MAX, LOG2_ALPHA_MIN, PIXEL_CENTRE, T_STOP, _two_halves, record_colour, record_geometry
from ._launch import interpreting, launch

# ----------------------------------------------------------------------------------------------- blending


@triton.jit
def _blend_batched(ids_ptr, perm_ptr, rec_ptr, s, end, fx, fy, T, alive, cr, cg, cb, BATCH: tl.constexpr,
                   INDIRECT: tl.constexpr):  # fmt: skip
    """Blend list entries [s, end) into the pixels' (C, T) by gsplat's rule, `alive` pixels stopping by it, BATCH
    Gaussians per step (transmittance by cumprod); pixels [1, PIX]. Entry i's Gaussian is ids[i], or ids[perm[i]]
    where INDIRECT."""
    k = tl.arange(0, BATCH)
    while (s < end) & (tl.max(tl.max(alive.to(tl.int32), axis=0), axis=0) > 0):
        in_batch = s + k < end
        at = s + k
        if INDIRECT:
            at = tl.load(perm_ptr + at, mask=in_batch, other=0)
        gid = tl.load(ids_ptr + at, mask=in_batch, other=0).to(tl.int64)
        mx, my, A, B, C, lo = record_geometry(rec_ptr, gid, in_batch)
        r, g, b = record_colour(rec_ptr, gid, in_batch)
        dx = mx[:, None] - fx  # [BATCH, PIX]
        dy = my[:, None] - fy
        e = lo[:, None] - (A[:, None] * dx * dx + dy * (B[:, None] * dx + C[:, None] * dy))
        alpha = tl.minimum(ALPHA_MAX, tl.exp2(e))
        ok = (e <= lo[:, None]) & (e >= LOG2_ALPHA_MIN) & alive
        alpha = tl.where(ok, alpha, 0.0)
        incl = tl.cumprod(1.0 - alpha, axis=0) * T  # T after each Gaussian
        keep = incl > T_STOP  # prefix-closed: incl never increases
        w = tl.where(keep, alpha * (incl / (1.0 - alpha)), 0.0)  # alpha * T before the Gaussian
        cr += tl.sum(w * r[:, None], axis=0, keep_dims=True)
        cg += tl.sum(w * g[:, None], axis=0, keep_dims=True)
        cb += tl.sum(w * b[:, None], axis=0, keep_dims=True)
        stop = alive & (tl.min(incl, axis=0, keep_dims=True) <= T_STOP)
        T = tl.min(tl.where(keep, incl, T), axis=0, keep_dims=True)
        alive = alive & ~stop
        s += BATCH
    return T, cr, cg, cb


# ----------------------------------------------------------------------------------------------- output


@triton.jit
def _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT: tl.constexpr,
                  HAS_RGBA8: tl.constexpr):  # fmt: skip
    r = cr + T * tl.load(bg_ptr + 0)
    g = cg + T * tl.load(bg_ptr + 1)
    b = cb + T * tl.load(bg_ptr + 2)
    if HAS_FLOAT:
        tl.store(rgb_ptr + pix * 3 + 0, r, mask=inside)
        tl.store(rgb_ptr + pix * 3 + 1, g, mask=inside)
        tl.store(rgb_ptr + pix * 3 + 2, b, mask=inside)
        tl.store(alpha_ptr + pix, 1.0 - T, mask=inside)
    if HAS_RGBA8:
        # the pixel's four bytes as one little-endian 32-bit word: one store where four byte stores were
        r8 = (tl.minimum(tl.maximum(r, 0.0), 1.0) * 255.0 + 0.5).to(tl.int32)
        g8 = (tl.minimum(tl.maximum(g, 0.0), 1.0) * 255.0 + 0.5).to(tl.int32)
        b8 = (tl.minimum(tl.maximum(b, 0.0), 1.0) * 255.0 + 0.5).to(tl.int32)
        a8 = (tl.minimum(tl.maximum(1.0 - T, 0.0), 1.0) * 255.0 + 0.5).to(tl.int32)
        word = r8 | (g8 << 8) | (b8 << 16) | (a8 << 24)
        tl.store(rgba8_ptr.to(tl.pointer_type(tl.int32)) + pix, word, mask=inside)


# ----------------------------------------------------------------------------------------------- kernels


@triton.jit(do_not_specialize=["width", "height", "ids_split_tile", "ids_split_at"])
def _rasterize_kernel(
    ids_ptr,  # [C] i32, sorted by tile, depth order within a tile; or as binned (INDIRECT)
    perm_ptr,  # [C] i64: list entry i is ids[perm[i]] (read when INDIRECT)
    ranges_ptr,  # [n_tiles, 2] i32
    rec_ptr,  # [N, 8] f32 blend records (kernels/buffers.py)
    bg_ptr,  # [3] f32
    schedule_ptr,  # [n_tiles] i32, the tile each program takes (read when SCHEDULED)
    rgb_ptr,  # [H, W, 3] f32 out (unused unless HAS_FLOAT)
    alpha_ptr,  # [H, W] f32 out (unused unless HAS_FLOAT)
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    ids_split_tile,  # tiles from this one on read their ids from ids_split_at on (`rasterize_tiles`' perm_halves)
    ids_split_at,
    TILE: tl.constexpr,
    STEP: tl.constexpr,
    HAS_FLOAT: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
    SCHEDULED: tl.constexpr,
    INDIRECT: tl.constexpr,
):
    """The batched form: one program per tile, its whole list front to back, STEP Gaussians a step, until every
    pixel is done. Program p takes tile schedule[p] when SCHEDULED (longest lists first, kernels/schedule.py),
    else tile p. Pixel r of the [1, TILE * TILE] block is column r % TILE, row r // TILE of the tile."""
    R: tl.constexpr = TILE * TILE
    tile_id = tl.program_id(0)
    if SCHEDULED:
        tile_id = tl.load(schedule_ptr + tile_id)
    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    if tile_id >= ids_split_tile:
        ids_ptr += ids_split_at
    n_tx = (width + TILE - 1) // TILE
    lane = tl.arange(0, R)[None, :]  # [1, R]
    px = (tile_id % n_tx) * TILE + lane % TILE
    py = (tile_id // n_tx) * TILE + lane // TILE
    inside = (px < width) & (py < height)
    pix = py.to(tl.int64) * width + px
    fx = px.to(tl.float32) + PIXEL_CENTRE
    fy = py.to(tl.float32) + PIXEL_CENTRE
    zero = tl.zeros([1, R], tl.float32)
    T, cr, cg, cb = _blend_batched(ids_ptr, perm_ptr, rec_ptr, start, end, fx, fy, zero + 1.0, inside, zero, zero, zero,
                                   STEP, INDIRECT)  # fmt: skip
    _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT, HAS_RGBA8)


# Triton device functions called from the Gluon kernel: the same code, built for Gluon's layouts.
_two_halves_gl = gluon.jit(_two_halves.fn)
_write_pixels_gl = gluon.jit(_write_pixels.fn)


@gluon.jit
def _halve(x):
    """[S, 2n] -> its even and odd columns, two [S, n]: register picks in a layout where a thread holds a row."""
    return gl.split(gl.reshape(x, [x.shape[0], x.shape[1] // 2, 2]))


@gluon.jit
def _columns(rows):
    """[S, 8] rows, each held whole by a thread -> its eight columns, each [S, 1] (no data moves)."""
    even, odd = _halve(rows)  # 0 2 4 6 | 1 3 5 7
    e0, e1 = _halve(even)  # 0 4 | 2 6
    o0, o1 = _halve(odd)  # 1 5 | 3 7
    x0, x4 = _halve(e0)
    x2, x6 = _halve(e1)
    x1, x5 = _halve(o0)
    x3, x7 = _halve(o1)
    return x0, x1, x2, x3, x4, x5, x6, x7


@gluon.jit
def _pair(a, b):
    """Two [S, 1] -> [S, 2] rows (a, b)."""
    return gl.reshape(gl.join(a, b), [a.shape[0], 2])


@gluon.jit
def _row8(w0, w1, w2, w3, w4, w5, w6, w7):
    """Eight [S, 1] -> [S, 8] rows (w0 ... w7). A join puts its operands side by side in the last dimension, so
    joining [S, 4] rows (w0 w2 w4 w6) and (w1 w3 w5 w7) interleaves them back into order."""
    evens = gl.reshape(gl.join(_pair(w0, w4), _pair(w2, w6)), [w0.shape[0], 4])  # w0 w2 w4 w6
    odds = gl.reshape(gl.join(_pair(w1, w5), _pair(w3, w7)), [w0.shape[0], 4])  # w1 w3 w5 w7
    return gl.reshape(gl.join(evens, odds), [w0.shape[0], 8])


@gluon.jit
def _tile_coefficients(records, ox, oy, HALF: gl.constexpr):
    """A step's records [S, 8] (a row a thread) -> the rows the blending loop reads, [S, 8] and [S, 2]:
    (c0, c1, c2, c3, c4, c5, r, g) and (b, 0), the colour as float32 (HALF: each channel as the fp16 pair (c, c),
    in a float32's bits). With the pixel centre at (ox + u, oy + v), d = (X - u, Y - v) for X = mx - ox,
    Y = my - oy, and the record's exponent e = lo - (A dx^2 + B dx dy + C dy^2) expands to the tile's polynomial
        e = c0 + c1 u + c2 v + c3 u^2 + c4 u v + c5 v^2,
        c0 = lo - (A X^2 + B X Y + C Y^2), c1 = 2 A X + B Y, c2 = B X + 2 C Y, c3 = -A, c4 = -B, c5 = -C,
    whose per-pixel terms (u, v, u^2, u v, v^2) a thread keeps: five multiply-adds a pixel where d took seven."""
    mx, my, A, B, C, lo, w6, w7 = _columns(records)
    X = mx - ox
    Y = my - oy
    c0 = lo - (X * (A * X + B * Y) + C * Y * Y)
    c1 = 2.0 * A * X + B * Y
    c2 = B * X + 2.0 * C * Y
    if HALF:  # each colour as the fp16 pair (c, c) that `_blend_half2` multiplies a thread's two pixels by
        rg = w6.to(gl.int32, bitcast=True)
        bx = w7.to(gl.int32, bitcast=True)
        r = ((rg & 0xFFFF) | (rg << 16)).to(gl.float32, bitcast=True)
        g = (((rg >> 16) & 0xFFFF) | (rg & -65536)).to(gl.float32, bitcast=True)
        b = ((bx & 0xFFFF) | (bx << 16)).to(gl.float32, bitcast=True)
        zero = gl.zeros_like(b)
    else:
        r, g = _two_halves_gl(w6.to(gl.int32, bitcast=True))
        b, zero = _two_halves_gl(w7.to(gl.int32, bitcast=True))
    return _row8(c0, c1, c2, -A, -B, -C, r, g), _pair(b, zero)


@gluon.jit
def _blend_poly(c0, c1, c2, c3, c4, c5, r, g, b, u, v, uu, uv, vv, T, alive, cr, cg, cb):
    """Blend one Gaussian into pixels by gsplat's rule, its exponent as the tile's polynomial
    (`_tile_coefficients`): the terms shared by a column (u, uu: [1, R]) once, then two multiply-adds a pixel.

    There is no sigma >= 0 test (e <= lo). The conic is positive definite (stage 1 culls det <= 0), so sigma < 0
    only by rounding, next to the Gaussian's centre, where alpha is o either way; and the polynomial, unlike
    lo - (A dx^2 + ...), does not round to exactly lo at the centre: the test dropped Gaussians whose centres sit
    on a pixel centre from that pixel, their most opaque one."""
    col = c0 + c1 * u + c3 * uu  # [1, R]
    k = c2 + c4 * u
    e = col + v * k + c5 * vv  # [P, R]
    alpha = gl.minimum(ALPHA_MAX, gl.exp2(e))
    ok = alive & (e >= LOG2_ALPHA_MIN)
    vis = alpha * T
    next_T = T - vis
    stop = ok & (next_T <= T_STOP)
    blend = ok & ~stop
    w = gl.where(blend, vis, 0.0)
    cr += w * r
    cg += w * g
    cb += w * b
    T = gl.where(blend, next_T, T)
    return T, alive & ~stop, cr, cg, cb


# fp16 bit patterns of gsplat's constants, as pairs (the same value in both halves): ALPHA_MAX, ALPHA_MIN (1/255)
# and T_STOP rounded to the nearest fp16 (0.99902, 0.0039215, 1.00017e-4), and 1.0
_H2_ALPHA_MAX = "0x3BFE3BFE"
_H2_ALPHA_MIN = "0x1C041C04"
_H2_T_STOP = "0x068E068E"
H2_ONE = gl.constexpr(0x3C003C00)
H2_ONE_LOW = gl.constexpr(0x3C00)
H2_ONE_HIGH = gl.constexpr(0x3C000000)

# One Gaussian blended into a thread's two pixels at once, each state an fp16 pair (low half: the thread's first
# pixel): $5, $6 the pixels' exponents (float32), $7 T, $8 alive (1.0 or 0.0 a half), $9-$11 the colour sums,
# $12-$14 the Gaussian's colour pairs; out T, alive and the sums. gsplat's rule, as `_blend_poly`, with the masks
# as 1.0 / 0.0 halves (`set` writes them) so that every step is one f16x2 instruction for both pixels. Alpha is
# each pixel's float32 ex2, packed after (two MUFU.EX2 where ex2.f16x2 takes two and a PRMT: one instruction a
# Gaussian less, and alpha rounded once where the fp16 exponent rounded before its ex2); the 1/255 skip tests it.
_BLEND_HALF2 = gl.constexpr(f"""{{
.reg .b32 t, u, a, k, m, v, n, s, w;
ex2.approx.ftz.f32 t, $5;
ex2.approx.ftz.f32 u, $6;
cvt.rn.f16x2.f32 a, u, t;
mov.b32 k, {_H2_ALPHA_MAX};
min.f16x2 a, a, k;
mov.b32 k, {_H2_ALPHA_MIN};
set.ge.f16x2.f16x2 m, a, k;
mul.rn.f16x2 m, m, $8;
mul.rn.f16x2 v, a, $7;
sub.rn.f16x2 n, $7, v;
mov.b32 k, {_H2_T_STOP};
set.le.f16x2.f16x2 s, n, k;
mul.rn.f16x2 s, s, m;
sub.rn.f16x2 m, m, s;
mul.rn.f16x2 w, v, m;
sub.rn.f16x2 n, $7, w;
sub.rn.f16x2 k, $8, s;
fma.rn.f16x2 v, w, $12, $9;
fma.rn.f16x2 a, w, $13, $10;
fma.rn.f16x2 t, w, $14, $11;
mov.b32 $0, n;
mov.b32 $1, k;
mov.b32 $2, v;
mov.b32 $3, a;
mov.b32 $4, t;
}}""")


@gluon.jit
def _blend_half2(c0, c1, c2, c3, c4, c5, r, g, b, u, v0, v1, uu, vv0, vv1, T, alive, cr, cg, cb):
    """`_blend_poly` for a thread's two pixels of one column as fp16 pairs ([1, R] int32: two fp16 halves, the
    pixel of row v0 low), the exponent and its ex2 still in float32 (its polynomial's terms cancel: fp16 would
    lose the sharp Gaussians' centres), then one f16x2 instruction for both pixels at every step after it: 28.5
    instructions a Gaussian in the step's SASS where float32 takes 37 (BENCHMARKS.md, sections 61 and 62). r, g,
    b: the colour pairs (`_tile_coefficients` with HALF), float32 containers."""
    col = c0 + c1 * u + c3 * uu  # [1, R]
    k = c2 + c4 * u
    e0 = col + v0 * k + c5 * vv0
    e1 = col + v1 * k + c5 * vv1
    return gl.inline_asm_elementwise(
        _BLEND_HALF2, "=r,=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r",
        [e0, e1, T, alive, cr, cg, cb, r.to(gl.int32, bitcast=True), g.to(gl.int32, bitcast=True),
         b.to(gl.int32, bitcast=True)],
        dtype=(gl.int32, gl.int32, gl.int32, gl.int32, gl.int32), is_pure=True, pack=1)  # fmt: skip


@gluon.jit
def _unpack_half2(x):
    """[1, R] int32 fp16 pairs -> (low, high) halves as float32."""
    return gl.inline_asm_elementwise(
        "{ .reg .b16 l, h; mov.b32 {l, h}, $2; cvt.f32.f16 $0, l; cvt.f32.f16 $1, h; }", "=r,=r,r", [x],
        dtype=(gl.float32, gl.float32), is_pure=True, pack=1)  # fmt: skip


@gluon.jit
def _store_part(parts_ptr, q, part, px, py, cr, cg, cb, T, alive, inside, TILE: gl.constexpr, PARTS: gl.constexpr):
    """A split list's part: its (C, T) for pixels (px, py) of the tile, at their row of the part's block (T negated
    where the part stopped the pixel)."""
    at = ((q * PARTS + part) * (TILE * TILE) + (py % TILE) * TILE + px % TILE) * 4
    gl.store(parts_ptr + at + 0, cr)
    gl.store(parts_ptr + at + 1, cg)
    gl.store(parts_ptr + at + 2, cb)
    gl.store(parts_ptr + at + 3, gl.where(alive | ~inside, T, -T))


@gluon.jit
def _fields(rows, L: gl.constexpr):
    """[1, 8] that every thread holds whole -> its eight fields, each [1, 1] in the pixels' layout L."""
    x0, x1, x2, x3, x4, x5, x6, x7 = _columns(rows)
    return (gl.convert_layout(x0, L, assert_trivial=True), gl.convert_layout(x1, L, assert_trivial=True),
            gl.convert_layout(x2, L, assert_trivial=True), gl.convert_layout(x3, L, assert_trivial=True),
            gl.convert_layout(x4, L, assert_trivial=True), gl.convert_layout(x5, L, assert_trivial=True),
            gl.convert_layout(x6, L, assert_trivial=True), gl.convert_layout(x7, L, assert_trivial=True))  # fmt: skip


@gluon.jit(do_not_specialize=["width", "height", "split_from", "n_split", "ids_split_tile", "ids_split_at"])
def _rasterize_shared_kernel(
    ids_ptr,  # [C] i32, sorted by tile, depth order within a tile; or as binned (INDIRECT)
    perm_ptr,  # [C] i64: list entry i is ids[perm[i]] (read when INDIRECT)
    ranges_ptr,  # [n_tiles, 2] i32
    rec_ptr,  # [N, 8] f32 blend records (kernels/buffers.py)
    bg_ptr,  # [3] f32
    schedule_ptr,  # [n_tiles] i32, the tile each program takes (read when SCHEDULED)
    rgb_ptr,  # [H, W, 3] f32 out (unused unless HAS_FLOAT)
    alpha_ptr,  # [H, W] f32 out (unused unless HAS_FLOAT)
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    parts_ptr,  # [n_split * PARTS, TILE * TILE, 4] f32 out: split lists' partial (C, T) (written when PARTS > 1)
    width,
    height,
    split_from,  # lists longer than this are split (among the schedule's first n_split tiles)
    n_split,
    ids_split_tile,  # tiles from this one on read their ids from ids_split_at on (`rasterize_tiles`' perm_halves)
    ids_split_at,
    TILE: gl.constexpr,
    WARPS: gl.constexpr,  # the program's warps (its launch's num_warps)
    STEP: gl.constexpr,
    HAS_FLOAT: gl.constexpr,
    HAS_RGBA8: gl.constexpr,
    SCHEDULED: gl.constexpr,
    PARTS: gl.constexpr,  # 1: every list whole; else the longest lists in PARTS parts (SCHEDULED only)
    INDIRECT: gl.constexpr,  # the lists' ids through the sort's permutation (frames binned per tile)
    HALF: gl.constexpr = False,  # a thread's two pixels blended as one fp16 pair (`_blend_half2`; P == 2)
):
    """The scalar form: one program per tile, one Gaussian at a time, STEP a step, until every pixel is done.

    A step's STEP records are loaded by the program together, one a thread (two 16-byte loads), into shared
    memory; every thread then reads each record whole from there (two 16-byte broadcast loads) and blends it
    into its P pixels. Loads run ahead of the blending, one level of indirection a step: while step s blends,
    step s + 1's records load (by ids that arrived during step s - 1), step s + 2's ids and, INDIRECT, step s + 3's
    permutation entries. No load waits on another within a step, so a step's memory latency overlaps the step's
    arithmetic even where a chain of steps is the frame's critical path (a long list), and a record costs no
    address arithmetic in the blending loop. INDIRECT, entry i's Gaussian is ids[perm[i]]: a frame binned per tile
    reads its lists through the pair sort's permutation, and nothing gathers them before (kernels/tile_lists.py).
    Pixel (p, r) of the [P, R] block is column r % TILE, row r // TILE + p * (R // TILE) of the tile.

    With PARTS > 1 the first PARTS x n_split programs take the schedule's first n_split tiles (the longest lists),
    PARTS programs a tile: a list longer than split_from is blended in PARTS consecutive parts, each from T = 1
    into its own partial (C, T), which `_combine_parts_kernel` then composites front to back; a shorter one is
    blended whole by its tile's first program. The rest take the remaining tiles, one each."""
    R: gl.constexpr = 32 * WARPS
    P: gl.constexpr = TILE * TILE // R  # pixels a thread, down a column
    pixels: gl.constexpr = gl.BlockedLayout([P, 1], [1, 32], [1, WARPS], [1, 0])  # [P, R]
    pairs: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, WARPS], [1, 0])  # [1, R] (HALF): a pixel pair a thread
    loading: gl.constexpr = gl.BlockedLayout([1, 8], [32, 1], [WARPS, 1], [1, 0])  # [STEP, 8]: a record a thread
    whole: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, WARPS], [1, 0])  # [1, 8] in every thread
    blues: gl.constexpr = gl.BlockedLayout([1, 2], [32, 1], [WARPS, 1], [1, 0])  # [STEP, 2]: a row a thread
    both: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [1, WARPS], [1, 0])  # [1, 2] in every thread
    # the step's rows: (c0 ... c5, r, g) then (b, 0), 40 bytes a Gaussian (`_tile_coefficients`)
    step_rows = gl.allocate_shared_memory(gl.float32, [STEP, 8], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    step_b = gl.allocate_shared_memory(gl.float32, [STEP, 2], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))

    pid = gl.program_id(0)
    q = pid  # the program's place in the schedule
    part = pid * 0
    if PARTS > 1:
        if pid < PARTS * n_split:
            q = pid // PARTS
            part = pid % PARTS
        else:
            q = pid - (PARTS - 1) * n_split
    tile_id = q
    if SCHEDULED:
        tile_id = gl.load(schedule_ptr + q)
    start = gl.load(ranges_ptr + tile_id * 2 + 0)
    end = gl.load(ranges_ptr + tile_id * 2 + 1)
    split = (PARTS > 1) & (pid < PARTS * n_split) & (end - start > split_from)
    writes = split | (part == 0)  # a short list's later programs have nothing to do
    if split:
        per = (end - start + PARTS - 1) // PARTS
        first = start + part * per
        last = first + per
        if last < end:
            end = last
        start = first
        if start > end:
            start = end
    elif part > 0:
        end = start
    if tile_id >= ids_split_tile:
        ids_ptr += ids_split_at
    n_tx = (width + TILE - 1) // TILE
    lane = gl.arange(0, R, layout=gl.SliceLayout(0, pixels))[None, :]  # [1, R]
    row = gl.arange(0, P, layout=gl.SliceLayout(1, pixels))[:, None]  # [P, 1]
    px = (tile_id % n_tx) * TILE + lane % TILE  # [1, R]
    py = (tile_id // n_tx) * TILE + lane // TILE + row * (R // TILE)  # [P, R]
    inside = (px < width) & (py < height)
    pix = py.to(gl.int64) * width + px
    # pixel centres relative to the tile's centre (ox, oy): u, v in [-TILE / 2, TILE / 2]
    ox = ((tile_id % n_tx) * TILE).to(gl.float32) + 0.5 * TILE
    oy = ((tile_id // n_tx) * TILE).to(gl.float32) + 0.5 * TILE
    u = (px.to(gl.float32) + PIXEL_CENTRE) - ox  # [1, R]
    v = (py.to(gl.float32) + PIXEL_CENTRE) - oy  # [P, R]
    uu = u * u
    uv = u * v
    vv = v * v
    if HALF:  # the thread's two pixels (rows py0 and py1 of its column) as the halves of fp16 pairs [1, R]
        gl.static_assert(P == 2)
        # a register a thread: in `pixels` a [1, R] tensor is held twice by each thread, and so blended twice
        lane = gl.arange(0, R, layout=gl.SliceLayout(0, pairs))[None, :]  # [1, R]
        px = (tile_id % n_tx) * TILE + lane % TILE
        u = (px.to(gl.float32) + PIXEL_CENTRE) - ox
        uu = u * u
        py0 = (tile_id // n_tx) * TILE + lane // TILE  # [1, R]
        py1 = py0 + R // TILE
        inside0 = (px < width) & (py0 < height)
        inside1 = (px < width) & (py1 < height)
        v0 = (py0.to(gl.float32) + PIXEL_CENTRE) - oy
        v1 = (py1.to(gl.float32) + PIXEL_CENTRE) - oy
        vv0 = v0 * v0
        vv1 = v1 * v1
        T = gl.full([1, R], H2_ONE, gl.int32, layout=pairs)
        alive = gl.where(inside0, H2_ONE_LOW, 0) | gl.where(inside1, H2_ONE_HIGH, 0)
        cr = gl.zeros([1, R], gl.int32, layout=pairs)  # a step's colour sums, fp16 pairs
        cg = cr
        cb = cr
        r0 = gl.zeros([1, R], gl.float32, layout=pairs)  # the colour sums in float32: each step's added in at its end
        r1 = r0
        g0 = r0
        g1 = r0
        b0 = r0
        b1 = r0
    else:
        T = gl.full([P, R], 1.0, gl.float32, layout=pixels)
        cr = gl.zeros([P, R], gl.float32, layout=pixels)
        cg = gl.zeros([P, R], gl.float32, layout=pixels)
        cb = gl.zeros([P, R], gl.float32, layout=pixels)
        alive = inside

    k = gl.arange(0, STEP, layout=gl.SliceLayout(1, loading))  # [STEP]: the step's entries
    field = gl.arange(0, 8, layout=gl.SliceLayout(0, loading))[None, :]  # [1, 8]
    past_end = gl.where(field == 5, float("-inf"), 0.0)  # entries past the list: lo = -inf reaches no pixel
    # the pipeline's start: step 0's records, step 1's ids, and (INDIRECT) step 2's permutation entries
    in0 = start + k < end
    in1 = start + STEP + k < end
    if INDIRECT:
        slot = gl.load(perm_ptr + start + k, mask=in0, other=0)
        gid = gl.load(ids_ptr + slot, mask=in0, other=0)
        slot = gl.load(perm_ptr + start + STEP + k, mask=in1, other=0)
        next_gid = gl.load(ids_ptr + slot, mask=in1, other=0)
        slot = gl.load(perm_ptr + start + 2 * STEP + k, mask=start + 2 * STEP + k < end, other=0)
    else:
        gid = gl.load(ids_ptr + start + k, mask=in0, other=0)
        next_gid = gl.load(ids_ptr + start + STEP + k, mask=in1, other=0)
    records = gl.load(rec_ptr + gid[:, None] * 8 + field, mask=in0[:, None], other=past_end)  # [STEP, 8]
    s = start
    while (s < end) & (gl.max(gl.max(alive.to(gl.int32), axis=1), axis=0) > 0):
        gl.thread_barrier()  # every thread is done reading the last step's records
        rows, b_rows = _tile_coefficients(records, ox, oy, HALF)
        step_rows.store(rows)
        step_b.store(gl.convert_layout(b_rows, blues))
        gl.thread_barrier()
        # in flight while this step blends: each load's address arrived a step ago
        records = gl.load(rec_ptr + next_gid[:, None] * 8 + field, mask=(s + STEP + k < end)[:, None],
                          other=past_end)  # fmt: skip
        in2 = s + 2 * STEP + k < end
        if INDIRECT:
            next_gid = gl.load(ids_ptr + slot, mask=in2, other=0)
            slot = gl.load(perm_ptr + s + 3 * STEP + k, mask=s + 3 * STEP + k < end, other=0)
        else:
            next_gid = gl.load(ids_ptr + s + 2 * STEP + k, mask=in2, other=0)
        for j in gl.static_range(STEP):
            c0, c1, c2, c3, c4, c5, r, g = _fields(step_rows.slice(j, 1, dim=0).load(whole), pairs if HALF else pixels)
            b, _ = gl.split(gl.reshape(step_b.slice(j, 1, dim=0).load(both), [1, 1, 2]))
            b = gl.convert_layout(b, pairs if HALF else pixels, assert_trivial=True)
            if HALF:
                T, alive, cr, cg, cb = _blend_half2(c0, c1, c2, c3, c4, c5, r, g, b, u, v0, v1, uu, vv0, vv1, T,
                                                    alive, cr, cg, cb)  # fmt: skip
            else:
                T, alive, cr, cg, cb = _blend_poly(c0, c1, c2, c3, c4, c5, r, g, b, u, v, uu, uv, vv, T, alive,
                                                   cr, cg, cb)  # fmt: skip
        if HALF:  # the step's fp16 sums into the float32 ones: fp16 sums over whole lists lost 8-12 dB
            lo, hi = _unpack_half2(cr)
            r0 += lo
            r1 += hi
            lo, hi = _unpack_half2(cg)
            g0 += lo
            g1 += hi
            lo, hi = _unpack_half2(cb)
            b0 += lo
            b1 += hi
            cr = gl.zeros_like(cr)
            cg = cr
            cb = cr
        s += STEP
    if HALF:  # each of the thread's two pixels, from its half of the pairs
        T0, T1 = _unpack_half2(T)
        if PARTS > 1:  # noqa: SIM102 - a constexpr, then a runtime value: Triton's branches, kept apart
            if split:
                a0, a1 = _unpack_half2(alive)
                _store_part(parts_ptr, q, part, px, py0, r0, g0, b0, T0, a0 > 0.5, inside0, TILE, PARTS)
                _store_part(parts_ptr, q, part, px, py1, r1, g1, b1, T1, a1 > 0.5, inside1, TILE, PARTS)
                writes = False
        if writes:
            _write_pixels_gl(rgb_ptr, alpha_ptr, rgba8_ptr, py0.to(gl.int64) * width + px, inside0, r0, g0, b0, T0,
                             bg_ptr, HAS_FLOAT, HAS_RGBA8)  # fmt: skip
            _write_pixels_gl(rgb_ptr, alpha_ptr, rgba8_ptr, py1.to(gl.int64) * width + px, inside1, r1, g1, b1, T1,
                             bg_ptr, HAS_FLOAT, HAS_RGBA8)  # fmt: skip
    elif PARTS == 1:
        _write_pixels_gl(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT, HAS_RGBA8)
    elif split:
        _store_part(parts_ptr, q, part, px, py, cr, cg, cb, T, alive, inside, TILE, PARTS)
    elif writes:
        _write_pixels_gl(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT, HAS_RGBA8)


@triton.jit(do_not_specialize=["width", "height", "split_from"])
def _combine_parts_kernel(
    ranges_ptr,  # [n_tiles, 2] i32
    schedule_ptr,  # [n_tiles] i32
    parts_ptr,  # [n_split * PARTS, TILE * TILE, 4] f32: each part's (C, T), from `_rasterize_shared_kernel`
    bg_ptr,  # [3] f32
    rgb_ptr,  # [H, W, 3] f32 out (unused unless HAS_FLOAT)
    alpha_ptr,  # [H, W] f32 out (unused unless HAS_FLOAT)
    rgba8_ptr,  # [H, W, 4] u8 out (unused unless HAS_RGBA8)
    width,
    height,
    split_from,
    TILE: tl.constexpr,
    PARTS: tl.constexpr,
    HAS_FLOAT: tl.constexpr,
    HAS_RGBA8: tl.constexpr,
):
    """The pixels of each split tile: its parts' (C, T) composited front to back, C += T C_k, T *= T_k, until a
    part stopped the pixel (its T stored negated) or the product reaches gsplat's stop, 1e-4.

    Not exact where a pixel's stop falls inside a part after the first: that part ran from T = 1 and did not
    see the stop, so it also blended the Gaussian that stopped the pixel and those behind it, with weights that
    sum to at most the T the pixel had left there (under 1e-4 / (1 - alpha) of that Gaussian: small unless it is
    nearly opaque). Such pixels are few; BENCHMARKS.md section 23 has the frames' PSNR against whole lists."""
    q = tl.program_id(0)
    tile_id = tl.load(schedule_ptr + q)
    start = tl.load(ranges_ptr + tile_id * 2 + 0)
    end = tl.load(ranges_ptr + tile_id * 2 + 1)
    if end - start > split_from:
        j = tl.arange(0, TILE * TILE)[None, :]  # [1, TILE * TILE]: the tile's pixels row by row
        n_tx = (width + TILE - 1) // TILE
        px = (tile_id % n_tx) * TILE + j % TILE
        py = (tile_id // n_tx) * TILE + j // TILE
        inside = (px < width) & (py < height)
        T = tl.full([1, TILE * TILE], 1.0, tl.float32)
        cr = tl.zeros([1, TILE * TILE], tl.float32)
        cg = tl.zeros([1, TILE * TILE], tl.float32)
        cb = tl.zeros([1, TILE * TILE], tl.float32)
        done = j < 0
        for k in tl.static_range(PARTS):
            at = ((q * PARTS + k) * (TILE * TILE) + j) * 4
            w = tl.where(done, 0.0, T)
            cr += w * tl.load(parts_ptr + at + 0)
            cg += w * tl.load(parts_ptr + at + 1)
            cb += w * tl.load(parts_ptr + at + 2)
            t = tl.load(parts_ptr + at + 3)
            T = tl.where(done, T, T * tl.abs(t))
            done = done | (t < 0) | (T <= T_STOP)
        pix = py.to(tl.int64) * width + px
        _write_pixels(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT, HAS_RGBA8)


# ----------------------------------------------------------------------------------------------- launcher

# (warps per program, Gaussians per loop step) of the scalar loop, by tile size and by the class of the frame's
# tile lists (`list_class`). At 8 px, measured over every third frame of every bench path, 1080p and 4K
# (BENCHMARKS.md, section 33): where a frame's rasterizing is bound by the GPU's throughput (its work spread over
# many tiles: close-ups, the fly-over's moderate frames), one warp, two pixels a thread and 32 a step (1 x 16
# within 3%, two warps 1.2-1.3x slower); where one list's chain of steps bounds it (an object seen whole, whose
# lists crowd a few thousand tiles, the composites' dense views), two warps and 64 a step, which halves the chain
# and keeps 64 records loading while 64 blend (1.15-1.5x faster there); where that chain is far the longest part of
# the frame, also its longest lists split across programs (SPLIT_CONFIG: the 24M fly-over's densest frames, 1.3-1.5x
# faster). At 16 px (section 23), with four times the pixels, the long lists gain from 128 a step.
SCALAR_CONFIG = {
    (8, 0): (1, 32), (8, 1): (2, 64), (8, 2): (2, 64),
    (16, 0): (4, 16), (16, 1): (8, 64), (16, 2): (8, 128),
}  # fmt: skip
# The same, blending a thread's two pixels as fp16 pairs (`half`): one warp at 8 px in every class, 32 a step, the
# long class still splitting its longest lists. A Gaussian there costs a thread about 29 instructions for its two
# pixels where the float32 loop takes 37 for them, or 43 at two warps' one pixel a thread: one warp's issue slots
# then serve even the chains that two warps shortened in float32 (BENCHMARKS.md, section 61: 0.71-0.89x the
# rasterizer's time of every class on the bench's frames). At 16 px, the short class only (a thread's two pixels
# at four warps); the others keep float32.
HALF_CONFIG = {(8, 0): (1, 32), (8, 1): (1, 32), (8, 2): (1, 32), (16, 0): (4, 16)}
# Mean pairs per tile at which 16 px frames' lists count as medium and long.
LIST_LENGTHS_16 = (500.0, 1000.0)
# At 8 px, the class by the frame's concentration: its longest list over the pairs one resident program would
# blend if the GPU's SLOTS programs shared them evenly. Lists run longest first (kernels/schedule.py), so a frame
# takes about max(pairs / throughput, longest x a step's latency per Gaussian): a concentration past CHAIN_FROM
# means the longest list's chain is the longer, and two warps shorten it; past SPLIT_FROM, with lists long enough to
# split (twice SPLIT_CONFIG's split_from), the chain is several times the rest and splitting it pays for the parts'
# extra programs and their combine (about 40 us a frame, which lose on short lists).
# The tiles a GPU blends side by side: its multiprocessors times the programs each holds at once. The H200's (132
# x 32), where the classes were measured; the renderer passes its own GPU's (renderer/device.py `raster_slots`).
SLOTS = 132 * 32
CHAIN_FROM = 3.0
SPLIT_FROM = (7.0, 8192)  # (concentration, longest list) at least
# A frame changes class only when it is this far past a threshold (its concentration, its mean list length at
# 16 px), so frames near one do not flip the configuration and re-capture their graph.
HYSTERESIS = 1.15


def concentration(n_pairs: int, longest: int, slots: int = SLOTS) -> float:
    """The longest list over the pairs a resident program would blend with the frame's pairs shared evenly."""
    return longest * slots / max(n_pairs, 1)


def _class_at(n_pairs: int, n_tiles: int, longest: int, tile: int, slots: int, k: float) -> int:
    """The list class by thresholds scaled by k (above 1: the higher classes are harder to reach)."""
    if tile == 16:
        medium, long = LIST_LENGTHS_16
        per_tile = n_pairs / max(n_tiles, 1)
        return 2 if per_tile >= long * k else 1 if per_tile >= medium * k else 0
    c = concentration(n_pairs, longest, slots)
    if c >= SPLIT_FROM[0] * k and longest >= SPLIT_FROM[1] * k:
        return 2
    return 1 if c >= CHAIN_FROM * k else 0


def list_class(n_pairs: int, n_tiles: int, longest: int, tile: int, previous: int = 0, slots: int = SLOTS) -> int:
    """The rasterizer's configuration class (SCALAR_CONFIG) for a frame of `n_pairs` list entries over `n_tiles`
    tiles, the longest list `longest` long, on a GPU that blends `slots` tiles at once (SLOTS). A frame leaves
    `previous` only when it is HYSTERESIS past a threshold."""
    up = _class_at(n_pairs, n_tiles, longest, tile, slots, HYSTERESIS)  # the highest class it is clearly in
    down = _class_at(n_pairs, n_tiles, longest, tile, slots, 1.0 / HYSTERESIS)  # the lowest it may still be in
    return up if up > previous else down if down < previous else previous


# Lists split across programs, by (tile size, list class): (entries above which a list is split, how many of the
# schedule's longest lists may be, parts a list). Only the scalar loop splits, and only scheduled frames (the
# longest lists come first). Measured on the H200 (BENCHMARKS.md, section 23).
SPLIT_CONFIG = {(8, 2): (4096, 2048, 8)}


def split_scratch_shape(tile_size: int, lists: int, n_tiles: int) -> tuple[int, int] | None:
    """The [split tiles x parts, pixels x 4] f32 buffer a frame of this class needs for its split lists' partial
    (C, T), or None where its lists are not split."""
    if (tile_size, lists) not in SPLIT_CONFIG:
        return None
    _, n_split, parts = SPLIT_CONFIG[tile_size, lists]
    return min(n_split, n_tiles) * parts, tile_size * tile_size * 4


def rasterizer_variants() -> tuple[str, ...]:
    """The loop forms this process can run: the scalar form is a Gluon kernel, which Triton's interpreter cannot
    run (and the interpreter is how this project runs kernels without CUDA, kernels/__init__.py)."""
    return ("batched",) if interpreting() else ("batched", "scalar")


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def rasterize_tiles(
    gaussian_ids: torch.Tensor,  # [C] i32, sorted by tile, depth order within a tile
    ranges: torch.Tensor,  # [n_tiles, 2] i32
    records: torch.Tensor,  # [N, 8] f32 blend records
    background: torch.Tensor,  # [3]
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
    """Composite every tile. Returns (rgb [H,W,3] f32, alpha [H,W] f32, rgba8 [H,W,4] u8), each None where `out`
    asked for none.

    variant: "batched", "scalar" or "auto" (batched under the interpreter, scalar when compiled).
    step: Gaussians per loop step (batch width or unroll); num_warps: warps per program; lists: 0, 1, 2 for
    short, medium, long tile lists, which pick the measured defaults (SCALAR_CONFIG). Tuning knobs: none of
    them changes the image, but the long lists' split (`parts`, below). `out` = (rgb, alpha, rgba8) buffers to
    write into: rgb and alpha both or neither (a display takes the 8-bit image alone: 4 bytes a pixel where the
    three take 20), rgba8 or None.
    schedule: optional [n_tiles] i32 permutation of the tiles, the order in which programs take them
    (`schedule_tiles`: longest lists first); None takes them in id order. The image is the same either way.
    parts: the `split_scratch_shape` buffer: with it, a scheduled scalar frame splits the longest lists by
    SPLIT_CONFIG (or `split` = (split_from, n_split, parts), a tuning knob), within 1e-4 of whole lists except
    where a pixel's stop falls inside a later part (the module docstring).
    perm: [C] i64, the pair sort's permutation: list entry i is then gaussian_ids[perm[i]] (the ids as binned,
    `sort_pairs(gather=False)`), read only for the entries blended. perm_halves = (split_tile, top): the pairs
    were binned and sorted in two halves (kernels/bin.py `halves`), and a tile from split_tile on reads entry i as
    gaussian_ids[top + perm[i]].
    half: the scalar loop blends a thread's two pixels as fp16 pairs (`_blend_half2`) where the class has that
    form (HALF_CONFIG; else float32), at 70-83 dB against float32's image (BENCHMARKS.md, section 61); the batched
    loop blends in float32 either way.
    """
    n_tx = (width + tile_size - 1) // tile_size
    n_ty = (height + tile_size - 1) // tile_size
    n_tiles = n_tx * n_ty
    assert tile_size in (8, 16), tile_size
    assert ranges.shape == (n_tiles, 2), (ranges.shape, n_tx, n_ty)
    assert records.dim() == 2 and records.shape[1] == 8 and records.dtype == torch.float32, records.shape
    assert background.shape == (3,) and background.dtype == torch.float32
    device = records.device
    if out is None:
        out = (
            torch.empty(height, width, 3, dtype=torch.float32, device=device),
            torch.empty(height, width, dtype=torch.float32, device=device),
            None,
        )
    rgb, alpha, rgba8 = out
    has_float, has_rgba8 = rgb is not None, rgba8 is not None
    assert (alpha is not None) == has_float and (has_float or has_rgba8), "rgb and alpha together, or rgba8 alone"
    # an output not asked for gets another's pointer (never written: HAS_FLOAT, HAS_RGBA8)
    some = rgb if has_float else rgba8
    outs = (rgb if has_float else some, alpha if has_float else some, rgba8 if has_rgba8 else some)
    if variant == "auto":
        variant = "batched" if interpreting() else "scalar"
    if variant not in ("batched", "scalar"):
        raise ValueError(f"unknown rasterizer variant {variant!r}")
    if variant == "scalar" and interpreting():
        raise ValueError("rasterizer variant 'scalar' is a Gluon kernel: it needs CUDA, not Triton's interpreter")
    assert schedule is None or (schedule.shape == (n_tiles,) and schedule.dtype == torch.int32), schedule
    assert perm is None or (perm.dtype == torch.int64 and perm.shape[0] <= gaussian_ids.shape[0]), perm
    indirect = perm is not None
    assert perm_halves is None or indirect, "halves are read through the permutation"
    ids_split = (n_tiles, 0) if perm_halves is None else perm_halves
    args = (gaussian_ids, perm if indirect else gaussian_ids, ranges, records, background,
            ranges if schedule is None else schedule, *outs)  # fmt: skip
    if variant == "batched":  # one row of pixels, a batch of Gaussians down the block
        launch(_rasterize_kernel, (n_tiles,),
            *args, width, height, *ids_split, TILE=tile_size, STEP=step or (64 if interpreting() else 16),
            HAS_FLOAT=has_float, HAS_RGBA8=has_rgba8, SCHEDULED=schedule is not None, INDIRECT=indirect,
            num_warps=num_warps or max(1, tile_size * tile_size // 32),
        )  # fmt: skip
    else:
        half = half and (tile_size, lists) in HALF_CONFIG
        warps, unroll = (HALF_CONFIG if half else SCALAR_CONFIG)[tile_size, lists]
        num_warps = num_warps or warps
        assert 32 * num_warps <= tile_size * tile_size, (num_warps, tile_size)  # at least a pixel a thread
        split = split or SPLIT_CONFIG.get((tile_size, lists))
        if parts is None or schedule is None or split is None:
            split_from, n_split, n_parts = 0, 0, 1
        else:
            split_from, n_split, n_parts = split
            n_split = min(n_split, n_tiles)
            assert parts.dtype == torch.float32 and parts.numel() >= n_split * n_parts * tile_size**2 * 4, parts.shape
        if half:  # a thread's two pixels as one fp16 pair
            assert tile_size * tile_size == 64 * num_warps, (half, tile_size, num_warps)
        launch(_rasterize_shared_kernel, (n_tiles + (n_parts - 1) * n_split,),
            *args, parts if n_parts > 1 else some, width, height, split_from, n_split, *ids_split, TILE=tile_size,
            WARPS=num_warps, STEP=step or unroll, HAS_FLOAT=has_float, HAS_RGBA8=has_rgba8,
            SCHEDULED=schedule is not None, PARTS=n_parts, INDIRECT=indirect, HALF=half, num_warps=num_warps,
        )  # fmt: skip
        if n_parts > 1:
            launch(_combine_parts_kernel, (n_split,),
                ranges, schedule, parts, background, *outs, width, height,
                split_from, TILE=tile_size, PARTS=n_parts, HAS_FLOAT=has_float, HAS_RGBA8=has_rgba8,
                num_warps=max(1, tile_size * tile_size // 32),
            )  # fmt: skip
    return rgb, alpha, rgba8
