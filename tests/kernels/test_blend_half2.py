"""The scalar rasterizer's fp16-pair blend (kernels/rasterize.py `_BLEND_HALF2`, PTX that CUDA alone runs) executed
instruction by instruction on the CPU, each f16x2 operation in numpy's float16 with one rounding to nearest as the
PTX ISA defines it, against gsplat's compositing rule in float64 (tests/analytic.py's constants): the same asm text
the kernel bakes in, so a wrong operand, half or comparison fails here, where CI runs, and not only on a GPU.

`ex2.approx.f16x2` is taken as 2^x rounded once to fp16; the hardware's is within 2^-9.9 of 2^x (the PTX ISA), so
these tests hold the rule and the arithmetic's form, and tests/kernels/test_rasterize.py the kernel itself (GPU).
"""

import re

import numpy as np
import pytest

from kernels.rasterize import _BLEND_HALF2, H2_ONE, H2_ONE_HIGH, H2_ONE_LOW
from tests.analytic import ALPHA_CLAMP, T_STOP

ALPHA_MIN = 1.0 / 255.0
STEP = 32  # the loop's step (kernels/rasterize.py HALF_CONFIG at 8 px): its colour sums go into float32 after each


def halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint32 words -> their (low, high) fp16 halves as float64."""
    lo = (x & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
    hi = (x >> 16).astype(np.uint16).view(np.float16).astype(np.float64)
    return lo, hi


def pack(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Two float64 arrays -> uint32 words of their fp16 roundings (to nearest, ties to even), lo in the low half."""
    lo16 = np.asarray(lo, dtype=np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)
    hi16 = np.asarray(hi, dtype=np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)
    return lo16 | (hi16 << 16)


def f16x2(op, *words):
    """An f16x2 operation on uint32 words, each half computed exactly in float64 and rounded once to fp16."""
    parts = [halves(w) for w in words]
    return pack(op(*(p[0] for p in parts)), op(*(p[1] for p in parts)))


def f32(x: np.ndarray) -> np.ndarray:
    """float64 values -> uint32 words of their float32 roundings, subnormals flushed to zero."""
    y = np.asarray(x, dtype=np.float64).astype(np.float32)
    return np.where(np.abs(y) < np.finfo(np.float32).tiny, np.float32(0), y).astype(np.float32).view(np.uint32)


def fmin(a, b):
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.minimum(a, b)))


OPS = {
    "ex2.approx.f16x2": lambda a: f16x2(np.exp2, a),
    # float32 in and out (the hardware's within 2 ulp: the PTX ISA); subnormal results flushed to zero (ftz)
    "ex2.approx.ftz.f32": lambda a: f32(np.exp2(a.view(np.float32).astype(np.float64))),
    "min.f16x2": lambda a, b: f16x2(fmin, a, b),
    "set.ge.f16x2.f16x2": lambda a, b: f16x2(lambda x, y: (x >= y).astype(np.float64), a, b),
    "set.le.f16x2.f16x2": lambda a, b: f16x2(lambda x, y: (x <= y).astype(np.float64), a, b),
    "mul.rn.f16x2": lambda a, b: f16x2(np.multiply, a, b),
    "sub.rn.f16x2": lambda a, b: f16x2(np.subtract, a, b),
    "fma.rn.f16x2": lambda a, b, c: f16x2(lambda x, y, z: x * y + z, a, b, c),  # exact in float64, then one rounding
    # d = (a, b) as fp16, a in the high half
    "cvt.rn.f16x2.f32": lambda a, b: pack(b.view(np.float32).astype(np.float64), a.view(np.float32).astype(np.float64)),
    "mov.b32": lambda a: a,
}


def run_asm(asm: str, operands: list[np.ndarray], outputs: int) -> list[np.ndarray]:
    """Execute the asm's instructions over arrays of uint32 words: operands $outputs.. in order; returns $0.."""
    regs = {f"${i + outputs}": np.asarray(v, dtype=np.uint32) for i, v in enumerate(operands)}
    for line in asm.replace("{", "\n").replace("}", "\n").split(";"):
        line = line.strip()
        if not line or line.startswith(".reg"):
            continue
        op, args = line.split(None, 1)
        assert op in OPS, f"an instruction these tests do not know: {op}"
        dst, *src = [a.strip() for a in args.split(",")]
        values = [np.full_like(regs["$" + str(outputs)], int(a, 16)) if re.fullmatch(r"0x[0-9A-Fa-f]+", a)
                  else regs[a] for a in src]  # fmt: skip
        regs[dst] = OPS[op](*values).astype(np.uint32)
    return [regs[f"${i}"] for i in range(outputs)]


def blend_half2(e0, e1, colours, inside0, inside1):
    """A thread's two pixels through a list as the kernel runs it: `_BLEND_HALF2` a Gaussian at a time, the colour
    sums added into float32 every STEP. e0, e1 [G, P] float32 exponents; colours [G, 3]; inside [P] bool.
    Returns (T, C) per pixel: ([P], [P], [P, 3], [P, 3])."""
    P = e0.shape[1]
    T = np.full(P, int(H2_ONE.value), dtype=np.uint32)
    alive = np.where(inside0, int(H2_ONE_LOW.value), 0) | np.where(inside1, int(H2_ONE_HIGH.value), 0)
    alive = alive.astype(np.uint32)
    sums = [np.zeros(P, dtype=np.uint32) for _ in range(3)]
    total = np.zeros((2, P, 3))
    for g in range(e0.shape[0]):
        pairs = [pack(np.full(P, c), np.full(P, c)) for c in colours[g]]
        words = [e0[g].astype(np.float32).view(np.uint32), e1[g].astype(np.float32).view(np.uint32), T, alive, *sums,
                 *pairs]  # fmt: skip
        T, alive, *sums = run_asm(_BLEND_HALF2.value, words, 5)
        if (g + 1) % STEP == 0 or g == e0.shape[0] - 1:  # the step's end: its fp16 sums into the float32 ones
            for c, s in enumerate(sums):
                lo, hi = halves(s)
                total[0, :, c] += lo.astype(np.float32)
                total[1, :, c] += hi.astype(np.float32)
            sums = [np.zeros(P, dtype=np.uint32) for _ in range(3)]
    t0, t1 = halves(T)
    return t0, t1, total[0], total[1]


def blend_exact(e, colours, inside):
    """gsplat's rule in float64 for one row of pixels: e [G, P] (log2 alpha before the clamp), colours [G, 3]."""
    P = e.shape[1]
    T, C, done = np.ones(P), np.zeros((P, 3)), ~inside
    for g in range(e.shape[0]):
        a = np.minimum(ALPHA_CLAMP, np.exp2(e[g].astype(np.float64)))
        ok = ~done & (a >= ALPHA_MIN)
        nxt = T * (1 - a)
        stop = ok & (nxt <= T_STOP)
        blend = ok & ~stop
        C += np.where(blend[:, None], (a * T)[:, None] * colours[g][None, :], 0.0)
        T = np.where(blend, nxt, T)
        done |= stop
    return T, C


def psnr(a, b):
    mse = float(np.mean((np.asarray(a) - np.asarray(b)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(1.0 / mse)


def lists(G=150, P=400, seed=0):
    """G Gaussians over P pixel pairs: the two rows' exponents from different spreads (a pair's halves must not be
    interchangeable), a third of them below the 1/255 skip, some near-opaque (the clamp, the stop)."""
    rng = np.random.default_rng(seed)
    e0 = rng.uniform(-9.0, -1.0, size=(G, P))  # alpha up to 0.5: T falls to the stop (1e-4) gradually
    e1 = rng.uniform(-16.0, -4.0, size=(G, P))  # faint: two thirds skipped, T stays high
    colours = rng.uniform(0.0, 1.5, size=(G, 3)).astype(np.float16).astype(np.float64)  # the records' fp16 colour
    return e0.astype(np.float32), e1.astype(np.float32), colours


def test_the_pairs_follow_gsplats_rule_within_their_floor():
    """Both halves against the float64 rule: the pixels that never stop (T above the stop) and those that do."""
    e0, e1, colours = lists()
    inside = np.ones(e0.shape[1], dtype=bool)
    t0, t1, c0, c1 = blend_half2(e0, e1, colours, inside, inside)
    w0, d0 = blend_exact(e0, colours, inside)
    w1, d1 = blend_exact(e1, colours, inside)
    assert (w0 < 2e-3).mean() > 0.3 and (w1 > 0.05).mean() > 0.3, "pixels that stop and pixels that do not"
    for got_t, got_c, want_t, want_c in ((t0, c0, w0, d0), (t1, c1, w1, d1)):
        assert psnr(got_c, want_c) >= 55.0 and psnr(got_t, want_t) >= 55.0, (psnr(got_c, want_c), psnr(got_t, want_t))
        assert np.abs(got_c - want_c).max() <= 0.01 and np.abs(got_t - want_t).max() <= 0.01
    # the halves are the rows they were given: swapped, the rows' very different spreads are far apart
    assert psnr(c0, d1) < 40.0 and psnr(c1, d0) < 40.0


def test_a_stopped_pixel_keeps_its_transmittance_and_an_outside_one_blends_nothing():
    """An opaque stack stops a pixel before the Gaussian that would take T to 1e-4 (unblended), and it keeps that T
    through the rest of the list; a pixel outside the image (alive 0) keeps T = 1 and no colour."""
    G, P = 40, 3
    e = np.full((G, P), np.log2(0.85), dtype=np.float32)  # alpha 0.85: T 0.15 ... 5.06e-4, then 7.6e-5 would stop
    colours = np.tile(np.array([[1.0, 0.5, 0.25]]), (G, 1))
    t0, t1, c0, c1 = blend_half2(e, e, colours, np.array([True, True, False]), np.array([True, False, False]))
    want_t, want_c = blend_exact(e.astype(np.float64), colours, np.ones(P, dtype=bool))
    assert want_t[0] == pytest.approx(0.15**4, rel=1e-6) and t0[0] == pytest.approx(0.15**4, rel=5e-3)
    assert c0[0] == pytest.approx(want_c[0], rel=2e-3)
    assert (t0[2], t1[1], t1[2]) == (1.0, 1.0, 1.0) and not c0[2].any() and not c1[1].any() and not c1[2].any()


def test_a_gaussian_below_the_skip_is_not_blended_and_the_clamp_holds():
    """alpha under 1/255 adds nothing (e below log2(1/255)); a Gaussian at its centre (e >= 0) blends 0.999 at most."""
    e = np.array([[-8.3], [0.2]], dtype=np.float32)  # alpha 0.0032 (skipped), then 1.15 (clamped)
    colours = np.array([[1.0, 1.0, 1.0], [0.5, 0.5, 0.5]])
    t0, _, c0, _ = blend_half2(e, e, colours, np.array([True]), np.array([True]))
    assert t0[0] == pytest.approx(1 - ALPHA_CLAMP, rel=0.2) and c0[0] == pytest.approx(0.5 * ALPHA_CLAMP, rel=1e-3)
