"""rasterize_tiles (both Triton loop forms) against the torch twin, on lists built by the real binning."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like, psnr
from tests.kernels.synthetic import camera, gaussians


def binned(n, width, height, device, seed=0, degree=0, opaque=False, scale_shift=0.0):
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    if opaque:
        opac = torch.full_like(opac, 0.99)
    if scale_shift:
        covars = covars * torch.exp(torch.tensor(2 * scale_shift))
    cam = camera(width, height).packed(device)
    m2, co, d, col, tt, ext, _ = ref.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=degree)
    inclusive = torch.cumsum(tt, 0, dtype=torch.int64)
    n_pairs = int(inclusive[-1]) if n else 0
    keys, ids = ref.emit_tile_keys(m2, co, d, tt, inclusive - tt, n_pairs, width, height)
    sk, si = ref.sort_pairs(keys, ids)
    n_tiles = ((width + 15) // 16) * ((height + 15) // 16)
    ranges = ref.tile_ranges(sk, n_tiles)
    return si, ranges, m2, co, col, ext


def render_pair(args, width, height, device, variant, background=(0.1, 0.2, 0.3), chunk=None, subtile=16):
    bg = torch.tensor(background, dtype=torch.float32, device=device)
    want = ref.rasterize_tiles(*args, bg, width, height)
    out = (
        nan_like(torch.empty(height, width, 3, device=device)),
        nan_like(torch.empty(height, width, device=device)),
        nan_like(torch.empty(height, width, 4, dtype=torch.uint8, device=device)),
    )
    got = kernels.rasterize_tiles(*args, bg, width, height, variant=variant, out=out, chunk=chunk, subtile=subtile)
    return want, got


def check(want, got, min_psnr=60.0):
    rgb_w, a_w, _ = want
    rgb_g, a_g, rgba8 = got
    assert torch.isfinite(rgb_g).all() and torch.isfinite(a_g).all(), "unwritten (NaN) pixels"
    assert psnr(rgb_w, rgb_g) >= min_psnr, psnr(rgb_w, rgb_g)
    assert psnr(a_w, a_g) >= min_psnr, psnr(a_w, a_g)
    expect8 = (torch.cat([rgb_w, a_w[..., None]], -1).clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    assert (rgba8.int() - expect8.int()).abs().max() <= 1


@pytest.mark.parametrize("variant", ["batched", "scalar"])
@pytest.mark.parametrize("size", [(16, 16), (37, 53)], ids=str)
def test_rasterize_matches_reference(variant, size, device):
    width, height = size
    n = 120 if variant == "scalar" else 600  # the scalar form costs one interpreter step per Gaussian
    args = binned(n, width, height, device, degree=1)
    check(*render_pair(args, width, height, device, variant))


def test_long_lists_span_many_batches(device):
    """Lists of hundreds of Gaussians per tile (several batches) composite exactly."""
    args = binned(1500, 32, 32, device, seed=4, scale_shift=0.8)
    lengths = args[1][:, 1] - args[1][:, 0]
    assert int(lengths.max()) > 4 * 64, "the case must exercise several batches"
    check(*render_pair(args, 32, 32, device, "batched"))


def test_saturating_tiles_stop_early(device):
    """Opaque, large Gaussians: every pixel reaches T <= 1e-4 and stops; result still matches."""
    args = binned(600, 32, 32, device, seed=5, opaque=True, scale_shift=3.5)
    want, got = render_pair(args, 32, 32, device, "batched", background=(1.0, 1.0, 1.0))
    check(want, got)
    # a pixel stops *before* the Gaussian that would take T to <= 1e-4, so T ends in (1e-4, ~0.1]
    assert float((got[1] > 0.999).float().mean()) > 0.9, "most pixels must saturate for this case"


def test_empty_tiles_get_background(device):
    width, height = 48, 32
    n_tiles = 3 * 2
    args = (
        torch.empty(0, dtype=torch.int32, device=device),
        torch.zeros(n_tiles, 2, dtype=torch.int32, device=device),
        torch.empty(0, 2, device=device),
        torch.empty(0, 4, device=device),
        torch.empty(0, 3, device=device),
        torch.empty(0, 4, device=device),
    )
    for variant in ("batched", "scalar"):
        want, got = render_pair(args, width, height, device, variant, background=(0.25, 0.5, 1.0))
        check(want, got)
        assert torch.allclose(got[0], torch.tensor([0.25, 0.5, 1.0], device=device).expand(height, width, 3))
        assert (got[1] == 0).all()


@pytest.mark.parametrize("variant,chunk", [("batched", 100), ("batched", 64), ("scalar", 24)])
def test_load_balanced_chunks_match_reference(variant, chunk, device):
    """Lists several chunks long, split over programs and composited front to back: same image."""
    n = 260 if variant == "scalar" else 900
    args = binned(n, 32, 32, device, seed=7, scale_shift=0.8)
    lengths = args[1][:, 1] - args[1][:, 0]
    assert int(lengths.max()) > 3 * chunk, "the case must span several chunks"
    check(*render_pair(args, 32, 32, device, variant, chunk=chunk))


@pytest.mark.parametrize("variant", ["batched", "scalar"])
def test_chunks_with_pixels_stopping_mid_list(variant, device):
    """Opaque Gaussians: pixels stop inside a middle chunk; the second pass re-blends that chunk exactly."""
    args = binned(300 if variant == "batched" else 150, 32, 32, device, seed=5, opaque=True, scale_shift=3.5)
    want, got = render_pair(args, 32, 32, device, variant, chunk=40)
    check(want, got)
    assert float((got[1] > 0.999).float().mean()) > 0.9, "most pixels must stop for this case"
    exact = ref.rasterize_tiles(*args, torch.zeros(3, device=device), 32, 32)  # reference ignores the knobs
    chunked = kernels.rasterize_tiles(*args, torch.zeros(3, device=device), 32, 32, variant=variant, chunk=40)
    assert (exact[0] - chunked[0]).abs().max() < 1e-4, "exact up to float rounding, not up to the 1e-4 tail"


def test_chunks_with_empty_and_short_tiles(device):
    """Mixed tiles: empty ones, short ones finished in one program, long ones chunked."""
    args = binned(400, 64, 48, device, seed=9, scale_shift=0.5)
    lengths = args[1][:, 1] - args[1][:, 0]
    assert int((lengths == 0).sum()) + int((lengths > 0).sum()) == lengths.numel()
    check(*render_pair(args, 64, 48, device, "batched", chunk=32))


@pytest.mark.parametrize("variant,chunk", [("batched", None), ("scalar", None), ("batched", 40), ("scalar", 40)])
def test_subtile_culling_is_lossless(variant, chunk, device):
    """8x8 sub-tile programs skip Gaussians whose box misses their block: same image, odd sizes included."""
    n = 150 if variant == "scalar" else 500
    args = binned(n, 37, 29, device, seed=11, degree=1)
    check(*render_pair(args, 37, 29, device, variant, chunk=chunk, subtile=8))


def test_subtile_culling_skips_work(device):
    """Small Gaussians touch few 8x8 blocks of their 16x16 tile: the boxes prove most skips are possible."""
    args = binned(400, 64, 64, device, seed=12, scale_shift=-0.7)
    ids, ranges, ext = args[0].long(), args[1], args[5]
    n_tx = 4
    touched = total = 0
    for t in range(ranges.shape[0]):
        g = ids[ranges[t, 0] : ranges[t, 1]]
        x0, y0 = (t % n_tx) * 16, (t // n_tx) * 16
        for sy in (0, 8):
            for sx in (0, 8):
                bx0, bx1, by0, by1 = x0 + sx + 0.5, x0 + sx + 7.5, y0 + sy + 0.5, y0 + sy + 7.5
                e = ext[g]
                hit = (e[:, 0] <= bx1) & (e[:, 2] >= bx0) & (e[:, 1] <= by1) & (e[:, 3] >= by0)
                touched += int(hit.sum())
                total += g.numel()
    assert touched < 0.6 * total, f"{touched} of {total} (Gaussian, block) pairs touched"
