"""rasterize_tiles (both Triton loop forms, 8 and 16 px tiles) against the torch twin, on lists built by the
real binning; and both against compositing by the definition (tests/analytic.py `composite`), where opaque
Gaussians reach the 0.999 alpha clamp and stop pixels at T = 1e-4."""

import numpy as np
import pytest
import torch

import kernels
import kernels.rasterize as rasterize
import kernels.reference as ref
from kernels.buffers import unpack_records
from tests.analytic import ALPHA_CLAMP, T_STOP, composite
from tests.conftest import nan_like
from tests.kernels.synthetic import PinholeCamera, camera, gaussians, lists_of
from tools.metrics import psnr


def binned(n, width, height, device, seed=0, degree=0, opaque=False, scale_shift=0.0, tile=8):
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    if opaque:
        opac = torch.full_like(opac, 0.99)
    if scale_shift:
        covars = covars * torch.exp(torch.tensor(2 * scale_shift))
    cam = camera(width, height).packed(device)
    proj = ref.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=degree, tile_size=tile)
    si, ranges = lists_of(ref, proj, width, height, tile=tile)
    return si, ranges, proj[0]


def render_pair(args, width, height, device, variant, background=(0.1, 0.2, 0.3), tile=8):
    bg = torch.tensor(background, dtype=torch.float32, device=device)
    want = ref.rasterize_tiles(*args, bg, width, height, tile_size=tile)
    out = (
        nan_like(torch.empty(height, width, 3, device=device)),
        nan_like(torch.empty(height, width, device=device)),
        nan_like(torch.empty(height, width, 4, dtype=torch.uint8, device=device)),
    )
    got = kernels.rasterize_tiles(*args, bg, width, height, variant=variant, out=out, tile_size=tile)
    return want, got


def check(want, got, min_psnr=60.0):
    rgb_w, a_w, _ = want
    rgb_g, a_g, rgba8 = got
    assert torch.isfinite(rgb_g).all() and torch.isfinite(a_g).all(), "unwritten (NaN) pixels"
    assert psnr(rgb_w, rgb_g) >= min_psnr, psnr(rgb_w, rgb_g)
    assert psnr(a_w, a_g) >= min_psnr, psnr(a_w, a_g)
    expect8 = (torch.cat([rgb_w, a_w[..., None]], -1).clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    assert (rgba8.int() - expect8.int()).abs().max() <= 1


# the two loop forms (kernels/rasterize.py): the batched Triton kernel, and the scalar one, a Gluon kernel, which
# Triton's interpreter cannot run: its cases run on a CUDA machine (tests/gpu/README.md) and are skipped here
CUDA_ONLY = pytest.mark.skipif(not torch.cuda.is_available(), reason="the scalar loop is a Gluon kernel: CUDA only")
FORMS = kernels.rasterizer_variants()  # the forms this process runs


def form(variant, *rest):
    return pytest.param(variant, *rest, marks=[CUDA_ONLY] if variant == "scalar" else [])


@pytest.mark.parametrize("variant", [form("batched"), form("scalar")])
@pytest.mark.parametrize("tile", [8, 16])
@pytest.mark.parametrize("size", [(16, 16), (37, 53)], ids=str)  # 37x53: sides that are not multiples of 8
def test_rasterize_matches_reference(variant, tile, size, device):
    width, height = size
    args = binned(600, width, height, device, degree=1, tile=tile)
    check(*render_pair(args, width, height, device, variant, tile=tile))


@pytest.mark.parametrize("variant,tile", [form("batched", 8), form("scalar", 8), form("batched", 16),
                                          form("scalar", 16)])  # fmt: skip
def test_long_lists_span_many_steps(variant, tile, device):
    """Lists many loop steps long (64 per batched step; 16 per scalar step at 8 px, the short lists' class)
    composite exactly."""
    args = binned(1500, 16, 16, device, seed=4, scale_shift=0.8, tile=tile)
    lengths = args[1][:, 1] - args[1][:, 0]
    assert int(lengths.max()) > 4 * 64, "the case must exercise several steps"
    check(*render_pair(args, 16, 16, device, variant, tile=tile))


@CUDA_ONLY
@pytest.mark.parametrize("tile,lists", list(rasterize.SCALAR_CONFIG))
def test_every_scalar_configuration_matches_reference(tile, lists, device):
    """Each (warps, Gaussians a step) the scalar form takes, by tile size and list class: lists several steps
    long, a pixel or more a thread, the next step's records in flight while one blends."""
    args = binned(1500, 37, 29, device, seed=6, scale_shift=0.8, tile=tile)
    bg = torch.tensor((0.3, 0.1, 0.2), device=device)
    want = ref.rasterize_tiles(*args, bg, 37, 29, tile_size=tile)
    got = kernels.rasterize_tiles(*args, bg, 37, 29, tile_size=tile, variant="scalar", lists=lists,
                                  out=(torch.empty(29, 37, 3, device=device), torch.empty(29, 37, device=device),
                                       torch.empty(29, 37, 4, dtype=torch.uint8, device=device)))  # fmt: skip
    check(want, got)


@CUDA_ONLY
@pytest.mark.parametrize("tile,lists", list(rasterize.HALF_CONFIG))
@pytest.mark.parametrize("indirect", [False, True], ids=["lists", "through the permutation"])
def test_fp16_pairs_stay_near_the_float32_loop(tile, lists, indirect, device):
    """The scalar loop's fp16 pairs (`half`: a thread's two pixels as one f16x2 lane pair) in each class that has
    them: against the twin (float32; the long class, its longest lists split, against the float32 loop's split),
    55 dB at least and every pixel within 0.15 (the bench's frames measured 70-83 dB against the float32 loop,
    BENCHMARKS.md section 61), the 8-bit image its float pair rounded, and not the float32 loop's image bit for
    bit (the pairs ran)."""
    width, height = 37, 29
    ids, ranges, records = binned(1500, width, height, device, seed=6, scale_shift=0.8, tile=tile)
    args, perm = (ids, ranges, records), None
    if indirect:
        values, perm = as_binned(ids)
        args = (values, ranges, records)
    bg = torch.tensor((0.3, 0.1, 0.2), device=device)
    want = ref.rasterize_tiles(ids, ranges, records, bg, width, height, tile_size=tile)
    schedule, _ = kernels.schedule_tiles(ranges)
    split = dict(parts=torch.full((64 * 8, tile * tile * 4), float("nan"), device=device), split=(100, 64, 8))

    def run(half):
        out = (nan_like(torch.empty(height, width, 3, device=device)),
               nan_like(torch.empty(height, width, device=device)),
               nan_like(torch.empty(height, width, 4, dtype=torch.uint8, device=device)))  # fmt: skip
        return kernels.rasterize_tiles(*args, bg, width, height, tile_size=tile, variant="scalar", lists=lists,
                                       schedule=schedule, out=out, perm=perm, half=half,
                                       **(split if lists == 2 else {}))  # fmt: skip

    half, full = run(True), run(False)
    assert int((ranges[:, 1] - ranges[:, 0]).max()) > 100, "lists several steps long"
    if lists == 2:  # split lists: against the float32 loop's split (its own bound against whole lists: above)
        want = full
    else:
        check(want, full)
    rgb, alpha, rgba8 = half
    assert torch.isfinite(rgb).all() and torch.isfinite(alpha).all(), "unwritten (NaN) pixels"
    assert psnr(want[0], rgb) >= 55.0 and psnr(want[1], alpha) >= 55.0, (psnr(want[0], rgb), psnr(want[1], alpha))
    assert float((rgb - want[0]).abs().max()) <= 0.15 and float((alpha - want[1]).abs().max()) <= 0.15
    own8 = (torch.cat([rgb, alpha[..., None]], -1).clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    assert (rgba8.int() - own8.int()).abs().max() <= 1
    assert not torch.equal(rgb, full[0]), "the fp16 pairs did not run"


def as_binned(ids, seed=0, extra=37):
    """(values, perm): the lists `ids` [C] laid out as a pair sort leaves them, list entry i at values[perm[i]]: a
    random permutation of C + `extra` slots, the slots no entry reaches holding ids of no list (a capacity
    frame's stale tail)."""
    g = torch.Generator().manual_seed(seed)
    C = ids.shape[0]
    perm = torch.randperm(C + extra, generator=g).to(ids.device)
    values = torch.randint(0, int(ids.max()) + 1, (C + extra,), generator=g, dtype=torch.int32).to(ids.device)
    values[perm[:C]] = ids
    return values, perm[:C].clone()


@pytest.mark.parametrize("variant,tile,lists", [form("batched", 8, 0), form("batched", 16, 0)] +
                         [form("scalar", t, c) for t, c in rasterize.SCALAR_CONFIG])  # fmt: skip
@pytest.mark.parametrize("scene", ["long", "saturating"])
def test_lists_read_through_the_permutation_are_the_lists(variant, tile, lists, scene, device):
    """Frames binned per tile hand the rasterizer the ids as binned and the pair sort's permutation (`perm`): the
    image is the one of the same lists gathered beforehand, bit for bit, for lists many steps long (the scalar
    form's loads run up to three steps ahead) and for tiles that stop early; the twin agrees."""
    if scene == "long":
        args = binned(1500, 37, 29, device, seed=6, scale_shift=0.8, tile=tile)
    else:
        args = binned(900, 37, 29, device, seed=2, opaque=True, scale_shift=0.5, tile=tile)
    ids, ranges, records = args
    assert int((ranges[:, 1] - ranges[:, 0]).max()) > 4 * 64, "lists of several steps"
    values, perm = as_binned(ids, seed=tile + lists)
    bg = torch.tensor((0.3, 0.1, 0.2), device=device)

    def images(lists_ids, perm=None, impl=kernels, **kw):
        out = (nan_like(torch.empty(29, 37, 3, device=device)), nan_like(torch.empty(29, 37, device=device)),
               nan_like(torch.empty(29, 37, 4, dtype=torch.uint8, device=device)))  # fmt: skip
        return impl.rasterize_tiles(lists_ids, ranges, records, bg, 37, 29, tile_size=tile, out=out, perm=perm, **kw)

    want = images(ids, variant=variant, lists=lists)
    got = images(values, perm, variant=variant, lists=lists)
    for w, g in zip(want, got, strict=True):
        assert torch.equal(w, g)
    twin = images(values, perm, impl=ref)
    for w, g in zip(images(ids, impl=ref), twin, strict=True):
        assert torch.equal(w, g)


def split_by_definition(args, schedule, width, height, tile, split_from, n_split, n_parts, bg):
    """(rgb [H, W, 3], alpha [H, W]) of the split tiles as `_combine_parts_kernel` states it, Gaussian by Gaussian
    in float64: each part blended from T = 1 by gsplat's rule (noting whether the rule stopped a pixel), then the
    parts composited until one stopped the pixel or the product reached 1e-4. NaN outside the split tiles."""
    ids, ranges, records = (a.cpu() for a in args)
    means2d, conics, opacities, colours = (t.double() for t in unpack_records(records))
    rgb = torch.full((height, width, 3), float("nan"), dtype=torch.float64)
    alpha = torch.full((height, width), float("nan"), dtype=torch.float64)
    n_tx = (width + tile - 1) // tile
    for q in range(min(n_split, ranges.shape[0])):
        t = int(schedule[q])
        start, end = (int(v) for v in ranges[t])
        if end - start <= split_from:
            continue
        ys, xs = torch.meshgrid(torch.arange(tile) + (t // n_tx) * tile, torch.arange(tile) + (t % n_tx) * tile,
                                indexing="ij")  # fmt: skip
        px, py = xs.double() + 0.5, ys.double() + 0.5
        per = (end - start + n_parts - 1) // n_parts
        T, C = torch.ones(tile, tile, dtype=torch.float64), torch.zeros(tile, tile, 3, dtype=torch.float64)
        done = torch.zeros(tile, tile, dtype=torch.bool)
        for k in range(n_parts):
            Tk, Ck = torch.ones(tile, tile, dtype=torch.float64), torch.zeros(tile, tile, 3, dtype=torch.float64)
            stopped = torch.zeros(tile, tile, dtype=torch.bool)
            for g in ids[start + k * per : min(start + (k + 1) * per, end)].tolist():
                dx, dy = means2d[g, 0] - px, means2d[g, 1] - py
                a, b, c = conics[g]
                sigma = 0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
                al = torch.clamp(opacities[g] * torch.exp(-sigma), max=ALPHA_CLAMP)
                ok = ~stopped & (sigma >= 0) & (al >= 1 / 255)
                nxt = Tk * (1 - al)
                stop = ok & (nxt <= T_STOP)
                blend = ok & ~stop
                Ck += torch.where(blend, al * Tk, 0.0)[..., None] * colours[g]
                Tk = torch.where(blend, nxt, Tk)
                stopped |= stop
            C += torch.where(done, 0.0, T)[..., None] * Ck
            T = torch.where(done, T, T * Tk)
            done |= stopped | (T <= T_STOP)
        rgb[ys.clamp(max=height - 1), xs.clamp(max=width - 1)] = torch.where(
            ((ys < height) & (xs < width))[..., None], C + T[..., None] * bg.cpu().double(), float("nan")
        )
        alpha[ys.clamp(max=height - 1), xs.clamp(max=width - 1)] = torch.where((ys < height) & (xs < width), 1 - T,
                                                                              float("nan"))  # fmt: skip
    return rgb, alpha


@CUDA_ONLY
@pytest.mark.parametrize("tile", [8, 16])
@pytest.mark.parametrize("opaque", [False, True], ids=["sparse", "saturating"])
@pytest.mark.parametrize("n_split", [2, 64], ids=["some", "all"])
def test_split_lists_stay_within_their_bound(tile, opaque, n_split, device):
    """The longest lists blended in parts, each from T = 1, then composited (kernels/rasterize.py SPLIT_CONFIG):
    a pixel that never stops gets the whole lists' colour to float rounding; one that stops inside a later part
    may also take the stopping Gaussian and those behind it (`_combine_parts_kernel`), weighing at most the T
    it had left there, which gsplat's stop rule bounds by 1e-4 / (1 - 0.999) = 0.1. With n_split = 2 only the
    two longest lists split, the rest run whole."""
    width, height = 40, 24
    args = binned(1500, width, height, device, seed=7, opaque=opaque, scale_shift=1.2, tile=tile)
    ranges = args[1]
    lengths = ranges[:, 1] - ranges[:, 0]
    assert int((lengths > 100).sum()) > 2, "the case must have lists to split"
    schedule, _ = kernels.schedule_tiles(ranges)
    bg = torch.tensor((0.3, 0.1, 0.2), device=device)

    def run(**split):
        out = (torch.full((height, width, 3), float("nan"), device=device),
               torch.full((height, width), float("nan"), device=device),
               torch.zeros(height, width, 4, dtype=torch.uint8, device=device))  # fmt: skip
        return kernels.rasterize_tiles(*args, bg, width, height, tile_size=tile, variant="scalar", lists=2,
                                       schedule=schedule, out=out, **split)  # fmt: skip

    whole = run()
    parts = torch.full((n_split * 8, tile * tile * 4), float("nan"), device=device)
    split = run(parts=parts, split=(100, n_split, 8))
    assert torch.isfinite(split[0]).all() and torch.isfinite(split[1]).all(), "unwritten pixels"
    rgb_off, alpha_off = (split[0] - whole[0]).abs().amax(-1), (split[1] - whole[1]).abs()  # [H, W]
    off = (rgb_off > 2e-4) | (alpha_off > 2e-4)
    # a pixel stops only once T (1 - alpha) <= 1e-4, alpha <= 0.999: with T <= 0.1 left, coverage 0.9 or more
    assert not (off & (whole[1] < 0.9)).any(), "a pixel that never stopped differs"
    colours = float(unpack_records(args[2])[3].abs().max())
    assert float(alpha_off.max()) <= 0.1 + 1e-5 and float(rgb_off.max()) <= 0.1 * (colours + 1.0) + 1e-5
    if opaque:
        assert float((whole[1] > 0.999).float().mean()) > 0.25, "the case must saturate pixels"
    written = parts[: min(n_split, 2) * 8]  # the two longest lists split, every part written
    assert torch.isfinite(written).all()
    # the split tiles' pixels against the rule, composited in float64 on the CPU
    want_rgb, want_alpha = split_by_definition(args, schedule.cpu(), width, height, tile, 100, n_split, 8, bg)
    have = torch.isfinite(want_alpha)
    assert int(have.sum()) > 0, "the split tiles' pixels"
    err = torch.maximum(
        (split[0].cpu().double() - want_rgb).abs().amax(-1), (split[1].cpu().double() - want_alpha).abs()
    )
    assert float(err[have].max()) < 1e-4, float(err[have].max())


@pytest.mark.parametrize("variant", [form("batched"), form("scalar")])
@pytest.mark.parametrize("outputs", ["float", "rgba8"])
def test_either_output_alone_is_what_it_is_beside_the_other(variant, outputs, device):
    """`out` with the float pair alone, or the 8-bit image alone (RenderSettings.outputs "float", "rgba8": a display
    holds 4 bytes a pixel, not 20): the same values as when all three are written, the same in the torch twin, and
    nothing written where the output left out would have gone (its pointer stands in for another's, never written).
    The scalar form with its longest lists split, so that the parts' combine writes the pixels too."""
    width, height, tile = 40, 24, 8
    args = binned(1500, width, height, device, seed=7, scale_shift=1.2, tile=tile)
    bg = torch.tensor((0.3, 0.1, 0.2), device=device)
    knobs = {}
    if variant == "scalar":
        schedule, _ = kernels.schedule_tiles(args[1])
        parts = torch.zeros(2 * 8, tile * tile * 4, device=device)
        knobs = dict(lists=2, schedule=schedule, parts=parts, split=(100, 2, 8))

    def outs(floats, bytes_):
        return (nan_like(torch.empty(height, width, 3, device=device)) if floats else None,
                nan_like(torch.empty(height, width, device=device)) if floats else None,
                torch.full((height, width, 4), 7, dtype=torch.uint8, device=device) if bytes_ else None)  # fmt: skip

    for k in (kernels, ref):
        full = k.rasterize_tiles(*args, bg, width, height, tile_size=tile, variant=variant, out=outs(True, True),
                                 **knobs)  # fmt: skip
        alone = outs(outputs == "float", outputs == "rgba8")
        got = k.rasterize_tiles(*args, bg, width, height, tile_size=tile, variant=variant, out=alone, **knobs)
        assert all(g is a for g, a in zip(got, alone)), "the buffers given, and None for those not asked for"
        if outputs == "float":
            assert got[2] is None and torch.equal(got[0], full[0]) and torch.equal(got[1], full[1])
        else:
            assert got[0] is None and got[1] is None and torch.equal(got[2], full[2])
        assert not torch.equal(full[2], torch.full_like(full[2], 7)), "the case has an image to compare"
    with pytest.raises(AssertionError, match="rgb and alpha together"):
        kernels.rasterize_tiles(*args, bg, width, height, tile_size=tile, variant=variant, out=(None, None, None),
                                **knobs)  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's refusal")
def test_the_scalar_form_is_refused_by_the_interpreter_in_one_line(device):
    args = binned(10, 16, 16, device)
    with pytest.raises(ValueError, match="Gluon kernel: it needs CUDA") as e:
        kernels.rasterize_tiles(*args, torch.zeros(3), 16, 16, variant="scalar")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("variant,tile", [form("batched", 8), form("scalar", 8), form("batched", 16)])
def test_saturating_tiles_stop_early(variant, tile, device):
    """Opaque, large Gaussians: every pixel reaches T <= 1e-4 and stops; result still matches."""
    args = binned(600, 32, 32, device, seed=5, opaque=True, scale_shift=3.5, tile=tile)
    want, got = render_pair(args, 32, 32, device, variant, background=(1.0, 1.0, 1.0), tile=tile)
    check(want, got)
    # a pixel stops *before* the Gaussian that would take T to <= 1e-4, so T ends in (1e-4, ~0.1]
    assert float((got[1] > 0.999).float().mean()) > 0.9, "most pixels must saturate for this case"


@pytest.mark.parametrize("tile", [8, 16])
def test_empty_tiles_get_background(tile, device):
    width, height = 48, 31
    n_tiles = (48 // tile) * ((31 + tile - 1) // tile)
    args = (
        torch.empty(0, dtype=torch.int32, device=device),
        torch.zeros(n_tiles, 2, dtype=torch.int32, device=device),
        torch.empty(0, 8, device=device),
    )
    for variant in FORMS:
        want, got = render_pair(args, width, height, device, variant, background=(0.25, 0.5, 1.0), tile=tile)
        check(want, got)
        assert torch.allclose(got[0], torch.tensor([0.25, 0.5, 1.0], device=device).expand(height, width, 3))
        assert (got[1] == 0).all()


def rgba8_of(rgb, alpha, device):
    """The [H, W, 4] u8 image `_write_pixels` makes of the float image it writes, (clamp(x, 0, 1) * 255 + 0.5)
    truncated in float32, for r, g, b and the coverage 1 - T: (unfused, fused). A compiled kernel may fuse the
    multiply and the add (one rounding, not two), which can carry a product just under k + 0.5 up to k + 1: on CUDA
    either is taken, byte by byte; the interpreter's is the unfused one, which the CPU (fused = unfused) demands."""
    floats = torch.cat([rgb, alpha[..., None]], -1).clamp(0, 1)
    unfused = (floats * 255.0 + 0.5).to(torch.uint8)
    fused = (floats.double() * 255.0 + 0.5).float().to(torch.uint8) if device == "cuda" else unfused
    return unfused, fused


@pytest.mark.parametrize("variant", [form("batched"), form("scalar")])
@pytest.mark.parametrize("tile", [8, 16])
def test_rgba8_is_the_float_image_rounded_to_nearest(variant, tile, device):
    """The 8-bit image exactly, not within 1 as `check` allows: from one call that writes both, each byte is the
    same call's float value rounded to nearest (+ 0.5, truncated), on a sparse frame (most 8 px tiles empty) and a
    dense one that saturates pixels. The background (0.25, 0.5, 1.0) makes an empty pixel's bytes (64, 128, 255, 0)
    by that rule, and its 0.5 * 255 = 127.5 is exact in float32: a bias of + 0.4999 gives 127 there (checked), which
    the within-1 checks and the random frames' values (rarely that close to a half) let through."""
    bg = torch.tensor((0.25, 0.5, 1.0), dtype=torch.float32, device=device)
    background8 = torch.tensor((64, 128, 255, 0), dtype=torch.uint8, device=device)
    means, covars, opac, sh = gaussians(12, seed=1, device=device, edge_cases=False)
    width, height = 48, 40
    proj = ref.project_gaussians(means, covars, opac, sh, camera(width, height).packed(device), width, height,
                                 sh_degree=0, tile_size=tile)  # fmt: skip
    sparse = (*lists_of(ref, proj, width, height, tile=tile), proj[0])
    dense = binned(1500, 40, 24, device, seed=7, scale_shift=1.2, tile=tile)
    for args, width, height in ((sparse, 48, 40), (dense, 40, 24)):
        out = (nan_like(torch.empty(height, width, 3, device=device)),
               nan_like(torch.empty(height, width, device=device)),
               nan_like(torch.empty(height, width, 4, dtype=torch.uint8, device=device)))  # fmt: skip
        rgb, alpha, rgba8 = kernels.rasterize_tiles(*args, bg, width, height, variant=variant, out=out, tile_size=tile)
        unfused, fused = rgba8_of(rgb, alpha, device)
        off = ((rgba8 != unfused) & (rgba8 != fused)).any(-1)
        assert not off.any(), f"{int(off.sum())} pixels, e.g. {rgba8[off][:4].tolist()} for {unfused[off][:4].tolist()}"
        n_tx, n_ty = (width + tile - 1) // tile, (height + tile - 1) // tile
        ranges = args[1]
        empty = (ranges[:, 1] == ranges[:, 0]).reshape(n_ty, n_tx)
        empty = empty.repeat_interleave(tile, 0).repeat_interleave(tile, 1)[:height, :width]
        assert (rgba8[empty] == background8).all(), "an empty pixel's bytes"
        if args is sparse:
            assert int(empty.sum()) > width * height // 4 and int((alpha > 0).sum()) > 100, "empty and covered pixels"
        else:
            assert float((alpha > 0.99).float().mean()) > 0.25, "the dense frame should saturate pixels"


# pixel centres holding a stack of three Gaussians: opacity 1.0 in front, centred there, a middle one of
# opacity (0.62, 0.83, 0.97) set off by a pixel or two, and opacity 1.0 behind, centred again
STACKS = [(3, 4), (10, 7), (18, 5), (6, 12), (15, 11), (21, 13), (12, 2), (1, 14)]


def opaque_stacks(device):
    """(projection, width, height) of 24 Gaussians seen by an identity-pose camera (world = camera frame): at each
    STACKS pixel centre, alpha = min(0.999, 1.0 exp(0)) = 0.999 from the front one, so the clamp decides the
    colour there, and the one behind takes T below 1e-4, so the stop does. Around the centres the middle ones
    take T across 1e-3 .. 1e-4 at generic values (no float tie with the threshold)."""
    width, height = 24, 16
    cam = PinholeCamera(width, height, 20.0, 17.0, 11.3, 8.6)
    means, sigmas, opacities, dcs = [], [], [], []
    for k, (u, v) in enumerate(STACKS):
        layers = [(2.0, 1.0, (0.0, 0.0), 2.1), (3.0, (0.62, 0.83, 0.97)[k % 3], (1.3, -0.7), 2.6),
                  (4.0, 1.0, (0.0, 0.0), 3.3)]  # (depth, opacity, offset px, sigma px)  # fmt: skip
        for j, (z, o, (du, dv), sigma) in enumerate(layers):
            px, py = u + 0.5 + du * (1 + k % 2), v + 0.5 + dv
            means.append(((px - cam.cx) * z / cam.fx, (py - cam.cy) * z / cam.fy, z))
            sigmas.append(sigma * z / cam.fx)  # about sigma pixels across
            opacities.append(o)
            dcs.append(((k + j) % 3 == 0, (k + j) % 3 == 1, (k + 2 * j) % 3 == 2))  # a distinct colour per layer
    f32 = dict(dtype=torch.float32, device=device)
    means, s = torch.tensor(means, **f32), torch.tensor(sigmas, **f32)
    covars = torch.stack([s * s, 0 * s, 0 * s, s * s, 0 * s, s * s], 1)
    sh = (torch.tensor(dcs, **f32)[:, None, :] * 2.0 - 1.0) * 1.5  # colours 0.08 or 0.92 per channel
    proj = ref.project_gaussians(means, covars, torch.tensor(opacities, **f32), sh, cam.packed(device), width,
                                 height, sh_degree=0)  # fmt: skip
    return proj, width, height


@pytest.mark.parametrize("tile", [8, 16])
def test_opaque_stacks_against_the_definition(tile, device):
    """Kernel (each loop form) and twin against compositing by the definition, which states the 0.999 clamp and
    the 1e-4 stop itself: a change to either number in kernels/constants.py fails here, though kernel and twin
    read it alike and still agree with each other."""
    proj, width, height = opaque_stacks(device)
    records, depths, tiles_touched, _, _ = proj
    assert (tiles_touched > 0).all()
    # the definition is given what the rasterizer is given: the records' mean, conic, opacity and (fp16) colour
    means2d, conics, opacities, colors = unpack_records(records)
    # the case exercises both rules: each stack's front Gaussian sits on its pixel centre, past the clamp
    centred = means2d[0::3].cpu().double().numpy() - np.array(STACKS) - 0.5
    assert np.abs(centred).max() < 1e-3 and (opacities[0::3] * 1.0 > ALPHA_CLAMP).all()
    order = torch.argsort(depths.cpu(), stable=True).numpy()  # nearest first, ties by index
    host = [t.cpu().double().numpy() for t in (means2d, conics, opacities, colors)]
    bg = (0.2, 0.5, 0.8)
    want_rgb, want_alpha = composite(*host, order, width, height, bg)
    stopped = 1.0 - want_alpha[[v for _, v in STACKS], [u for u, _ in STACKS]]
    assert (stopped < 2e-3).all() and (stopped > T_STOP).all(), "each stack's pixel stops on its back Gaussian"
    args = (*lists_of(ref, proj, width, height, tile=tile), records)
    background = torch.tensor(bg, dtype=torch.float32, device=device)
    runs = {"torch": lambda: ref.rasterize_tiles(*args, background, width, height, tile_size=tile)}
    for v in FORMS:
        runs[v] = lambda v=v: kernels.rasterize_tiles(*args, background, width, height, tile_size=tile, variant=v)
    errors = {}
    for name, run in runs.items():
        rgb, alpha, _ = run()
        errors[name] = (np.abs(rgb.cpu().double().numpy() - want_rgb).max(),
                        np.abs(alpha.cpu().double().numpy() - want_alpha).max())  # fmt: skip
    # float32 against float64: measured <= 1e-6 (rgb, alpha) for every implementation
    off = {name: e for name, e in errors.items() if max(e) >= 2e-5}
    assert not off, f"(max |rgb error|, max |alpha error|) against the definition: {off}"


@pytest.mark.parametrize("tile", [8, 16])
def test_a_gaussian_that_would_take_t_below_the_stop_is_not_blended(tile, device):
    """The stop from the other side: behind an opaque Gaussian (alpha 0.999: T = 1e-3) at a pixel centre, a
    second of opacity 0.95 there would take T to 5e-5, under 1e-4, so it is not blended and the pixel keeps the
    first one's colour and the background's 1e-3; a stop of 1e-5 would blend it (about 1e-3 of its colour). The
    opaque stacks above cross 1e-4 from far above and far below only, so they cannot tell a lower stop."""
    width, height = 8, 8
    cam = PinholeCamera(width, height, 20.0, 20.0, 4.0, 4.0)
    f32 = dict(dtype=torch.float32, device=device)
    means = torch.tensor([[0.5 * 2.0 / 20.0, 0.5 * 2.0 / 20.0, 2.0], [0.5 * 3.0 / 20.0, 0.5 * 3.0 / 20.0, 3.0]],
                         **f32)  # both centred on pixel (4, 4)  # fmt: skip
    s = torch.tensor([1.5 * 2.0 / 20.0, 1.5 * 3.0 / 20.0], **f32)  # 1.5 px across
    covars = torch.stack([s * s, 0 * s, 0 * s, s * s, 0 * s, s * s], 1)
    sh = torch.tensor([[[1.5, -1.5, -1.5]], [[-1.5, 1.5, -1.5]]], **f32)  # red in front, green behind
    proj = ref.project_gaussians(means, covars, torch.tensor([1.0, 0.95], **f32), sh, cam.packed(device), width,
                                 height, sh_degree=0)  # fmt: skip
    records, depths = proj[0], proj[1]
    means2d, conics, opacities, colors = unpack_records(records)
    host = [t.cpu().double().numpy() for t in (means2d, conics, opacities, colors)]
    T_front = 1.0 - ALPHA_CLAMP
    assert T_STOP / 10 < T_front * (1.0 - float(opacities[1])) < T_STOP, "the second would cross the stop"
    order = torch.argsort(depths.cpu(), stable=True).numpy()
    bg = (0.2, 0.5, 0.8)
    want_rgb, _ = composite(*host, order, width, height, bg)
    args = (*lists_of(ref, proj, width, height, tile=tile), records)
    background = torch.tensor(bg, **f32)
    runs = {"torch": lambda: ref.rasterize_tiles(*args, background, width, height, tile_size=tile)}
    for v in FORMS:
        runs[v] = lambda v=v: kernels.rasterize_tiles(*args, background, width, height, tile_size=tile, variant=v)
    for name, run in runs.items():
        rgb = run()[0].cpu().double().numpy()
        assert abs(rgb[4, 4, 1] - want_rgb[4, 4, 1]) < 2e-5, (name, rgb[4, 4], want_rgb[4, 4])


# frames measured on the H200 (BENCHMARKS.md, section 33): (pairs, tiles, longest list, the class whose configuration
# rasterized the frame fastest; the 24M overview's three within 1%, its long lists split as they always were)
MEASURED_CLASSES = {
    "plant orbit": (775_866, 32_400, 1_279, 1), "plant close": (1_850_923, 32_400, 903, 0),
    "plant close 4K": (5_702_307, 129_600, 730, 0), "playbot orbit": (1_626_335, 32_400, 1_612, 1),
    "playbot close": (2_357_576, 32_400, 837, 0), "6M fly-over, dense frame": (10_800_811, 32_400, 10_452, 1),
    "6M fly-over, moderate frame": (6_312_650, 32_400, 3_044, 0), "6M overview": (10_840_328, 32_400, 25_183, 2),
    "6M overview 4K": (13_036_612, 129_600, 11_492, 1), "24M fly-over, densest frame": (37_879_285, 32_400, 76_768, 2),
    "24M fly-over, sparse frame": (5_150_258, 32_400, 2_743, 0), "24M overview": (40_575_647, 32_400, 107_750, 2),
}  # fmt: skip


@pytest.mark.parametrize("frame", list(MEASURED_CLASSES))
def test_list_class_picks_the_measured_fastest(frame):
    """From any previous class, a steady view of the measured frame settles in the class that was fastest there."""
    pairs, tiles, longest, fastest = MEASURED_CLASSES[frame]
    for previous in (0, 1, 2):
        cls = previous
        for _ in range(3):
            cls = kernels.list_class(pairs, tiles, longest, 8, cls)
        assert cls == fastest, (frame, previous, cls)


def test_list_class_holds_near_a_threshold():
    """Within the hysteresis of a threshold the class stays as it was; far past it, it moves. The concentration
    is the longest list over the pairs a program's share would be (pairs / SLOTS)."""
    share = 40_000_000 / rasterize.SLOTS  # pairs a program, at 40M pairs (the longest lists 9k-80k: splittable)
    cls = lambda c, previous, longest=None: kernels.list_class(  # noqa: E731
        40_000_000, 32_400, int(c * share) if longest is None else longest, 8, previous
    )
    assert cls(3.1, 0) == 0 and cls(3.1, 1) == 1 and cls(3.5, 0) == 1 and cls(2.5, 1) == 0
    assert cls(7.5, 1) == 1 and cls(8.1, 1) == 2 and cls(6.5, 2) == 2 and cls(6.0, 2) == 1
    # split only where lists are long enough to split: not a short list, however concentrated
    few = 2_000  # pairs: a 100-entry list is 211 shares of them
    assert kernels.list_class(few, 32_400, 100, 8, 0) == 1 and kernels.list_class(few, 32_400, 100, 8, 2) == 1
    # a GPU with half the slots takes a list as half as concentrated
    assert kernels.list_class(40_000_000, 32_400, int(4 * share), 8, 0, slots=rasterize.SLOTS // 2) == 0
    # 16 px: by the mean list length
    assert kernels.list_class(1200 * 8_160, 8_160, 0, 16, 0) == 2
    assert kernels.list_class(1050 * 8_160, 8_160, 0, 16, 1) == 1
