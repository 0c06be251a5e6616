"""Stage 1, project: kernels.project_gaussians (Triton) against its torch twin, and both against references
derived another way (tests/analytic.py): the EWA conic of hand cases, the pixel-centre convention and the SH
basis from the real spherical harmonics' definition."""

import math

import numpy as np
import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import unpack_records
from kernels.constants import MACRO_COLS, MACRO_ROWS
from tests.analytic import covariance, ewa_conic, rodrigues, sh_basis, upper
from tests.conftest import nan_like
from tests.kernels.synthetic import PinholeCamera, assert_close_rows, camera, gaussians, look_at, tile_sets

FP16_STEP = 2.0**-10  # twice fp16's relative rounding: the colour's tolerance (it is stored in fp16)
FP16_ROUNDING = 2.0**-11  # fp16's relative rounding (unit roundoff)
FP16_SUBNORMAL_ROUNDING = 2.0**-25  # its absolute rounding below 2^-14 (half the smallest subnormal)

# a check derived independently of both implementations runs on each: they could share a mistake
IMPLS = [pytest.param(kernels, id="triton"), pytest.param(ref, id="torch")]


def run_both(n, width, height, sh_degree, device, seed=0, fov=60.0, tile=16):
    means, covars, opac, sh = gaussians(n, sh_degree=sh_degree, seed=seed, device=device)
    cam = camera(width, height, fov).packed(device)
    kw = dict(sh_degree=sh_degree, near=0.01, far=1e10, eps2d=0.3, tile_size=tile)
    want = ref.project_gaussians(means, covars, opac, sh, cam, width, height, **kw)
    poisoned = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    got = kernels.project_gaussians(means, covars, opac, sh, cam, width, height, out=poisoned, **kw)
    return want, got


@pytest.mark.parametrize(
    "n,size,degree,tile",
    [(1, (16, 16), 0, 8), (7, (37, 53), 1, 16), (1000, (128, 96), 2, 8), (1000, (37, 53), 3, 16),
     (20_011, (128, 96), 3, 8)],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v),
)  # fmt: skip
def test_project_matches_reference(n, size, degree, tile, device):
    width, height = size
    want, got = run_both(n, width, height, degree, device, tile=tile)
    tt_want, tt_got = want[2], got[2]
    # integer output: exact, except tile-boundary cases that differ by float rounding alone (bounded)
    diff = (tt_want - tt_got).abs()
    assert int((diff > 1).sum()) == 0, f"tile counts differ by more than 1 on rows {torch.nonzero(diff > 1)[:5]}"
    assert int((diff == 1).sum()) <= max(1, n // 1000), f"{int((diff == 1).sum())} rows differ by one tile"
    # a tile more or less moves the macro-tile count by one at most, and only on those rows
    macro_diff = (want[3] - got[3]).abs()
    assert int((macro_diff > 1).sum()) == 0 and not bool(((macro_diff > 0) & (diff == 0)).any()), "macro counts"
    rows = (tt_want > 0) & (tt_got > 0)
    # the records compared by what they hold; the colour is fp16 in both, so one rounding step apart at most
    names = ["means2d", "conics", "opacities", "colors", "depths", "bin_t"]
    held = [(*unpack_records(p[0]), p[1], p[4]) for p in (want, got)]
    for name, w, g in zip(names, *held):
        assert torch.isfinite(g[rows]).all(), f"{name}: non-finite values on visible rows (unwritten?)"
        assert_close_rows(name, w, g, rows, rtol=FP16_STEP if name == "colors" else 1e-4)
    # culled rows sort last in the depth order: their depth is +inf, written (not left poisoned)
    assert torch.isposinf(got[1][tt_got == 0]).all()


def test_project_reads_the_sh_by_their_strides(device):
    """The renderer's coefficient-major SH copy (kernels/buffers.py `sh_layout`) and the same coefficients laid out
    [N, K, 3] project to the same records, bit for bit: the kernel reads each coefficient by the tensor's strides."""
    n, width, height = 300, 64, 48
    means, covars, opac, sh = gaussians(n, sh_degree=2, seed=3, device=device)
    soa = kernels.sh_layout(n, sh.shape[1], device).copy_(sh)
    assert soa.stride() == (1, 3 * n, n) and torch.equal(soa, sh)
    cam = camera(width, height, 60.0).packed(device)
    kw = dict(sh_degree=2, near=0.01, far=1e10, eps2d=0.3, tile_size=8)
    aos = kernels.project_gaussians(means, covars, opac, sh.contiguous(), cam, width, height, **kw)
    got = kernels.project_gaussians(means, covars, opac, soa, cam, width, height, **kw)
    visible = aos[2] > 0
    assert int(visible.sum()) > n // 3 and torch.equal(got[2], aos[2])
    assert torch.equal(got[0][visible], aos[0][visible])


def test_project_edge_cases_culled(device):
    """Behind the camera, off-screen and sub-threshold Gaussians are culled; the huge one is kept."""
    _, got = run_both(16, 64, 48, 0, device)
    tiles = got[2].cpu()
    assert tiles[0] == 0, "behind the camera must be culled"
    assert tiles[2] == 0, "far off-screen must be culled"
    assert tiles[5] == 0, "opacity below 1/255 must be culled"
    assert tiles[3] == 12, "the huge Gaussian covers all 4x3 tiles"
    assert got[3][3] == 1, "and they lie in one macro-tile of 8x4"
    assert (got[3][[0, 2, 5]] == 0).all(), "a culled Gaussian touches no macro-tile"
    assert tiles[4] >= 1 and tiles[6] >= 1


def band_hull_count(tiles: set[tuple[int, int]]) -> int:
    """The macro-tile pairs binning emits for a tile set, counted from the set: in each band of MACRO_ROWS tile
    rows, the macro-tile columns from its leftmost tile's to its rightmost tile's, gaps included."""
    bands: dict[int, tuple[int, int]] = {}
    for x, y in tiles:
        lo, hi = bands.get(y // MACRO_ROWS, (x, x))
        bands[y // MACRO_ROWS] = (min(lo, x), max(hi, x))
    return sum(hi // MACRO_COLS - lo // MACRO_COLS + 1 for lo, hi in bands.values())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size,tile,grow", [((120, 84), 8, 1.0), ((120, 84), 16, 1.5), ((128, 96), 8, 0.0)], ids=str)
def test_macros_touched_is_the_band_hull_of_the_tiles(impl, size, tile, grow, device):
    """macros_touched against a count from each Gaussian's tile set, walked by the twin's rows on the
    implementation's own records and thresholds (tests/kernels/synthetic.py `tile_sets`) and grouped here: per
    band of MACRO_ROWS tile rows, the macro-tile columns from the leftmost tile's to the rightmost's. The image's
    15 x 11 tiles (8 x 6 at 16 px) end in partial macro-tiles; grown footprints span several bands and columns."""
    width, height = size
    n = 2000
    means, covars, opac, sh = gaussians(n, seed=4, device=device)
    cam = camera(width, height).packed(device)
    out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    proj = impl.project_gaussians(means, covars * math.exp(2 * grow), opac, sh, cam, width, height, sh_degree=0,
                                  tile_size=tile, out=out)  # fmt: skip
    sets = tile_sets(proj, width, height, tile=tile)
    tiles_touched, macros_touched = proj[2].tolist(), proj[3].tolist()
    # the torch walk on the kernel's records may round a tile boundary the other way, rarely (test_tile_walk.py)
    alike = [g for g, tiles in sets.items() if len(tiles) == tiles_touched[g]]
    assert len(sets) - len(alike) <= (0 if impl is ref else max(1, n // 1000)), "tile counts differ from the walk"
    wrong = {g: (macros_touched[g], band_hull_count(sets[g])) for g in alike}
    wrong = {g: pair for g, pair in wrong.items() if pair[0] != pair[1]}
    assert not wrong, f"{len(wrong)} Gaussians' (macros_touched, hull count), e.g. {list(wrong.items())[:5]}"
    assert all(macros_touched[g] == 0 for g in range(n) if g not in sets), "a culled Gaussian touches none"
    # the case must exercise several bands, and several columns in a band where the image has them
    bands = [len({y // MACRO_ROWS for _, y in sets[g]}) for g in alike]
    several_columns = max(macros_touched) > max(bands) or kernels.macro_grid(-(-width // tile), 1)[0] == 1
    assert len(alike) > n // 4 and max(bands) >= 2 and several_columns


def test_project_near_plane_is_inclusive(device):
    """gsplat culls z < near; a Gaussian at z == near exactly is kept (when it reaches the image)."""
    means = torch.tensor([[0.0, 0.0, 0.5]], device=device)
    covars = torch.tensor([[1e-4, 0, 0, 1e-4, 0, 1e-4]], device=device)
    opac = torch.tensor([0.9], device=device)
    sh = torch.zeros(1, 1, 3, dtype=kernels.SH_DTYPE, device=device)
    cam = camera(32, 32)
    cam.T_world_camera = np.eye(4)
    for near, expect_visible in ((0.5, True), (0.5000001, False)):
        out = kernels.project_gaussians(means, covars, opac, sh, cam.packed(device), 32, 32, sh_degree=0, near=near)
        assert (int(out[2][0]) > 0) == expect_visible, near


@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_project_far_plane_is_inclusive(impl, device):
    """gsplat culls z > far: with far = 5, Gaussians at z = 4.99 and 5 are kept and one at 5.01 is culled (+inf
    depth, no tiles); with the default far all three are kept."""
    means = torch.tensor([[0.0, 0.0, 4.99], [0.0, 0.0, 5.0], [0.0, 0.0, 5.01]], device=device)
    covars = torch.tensor([[1e-2, 0, 0, 1e-2, 0, 1e-2]] * 3, device=device)
    opac = torch.full((3,), 0.9, device=device)
    sh = torch.zeros(3, 1, 3, dtype=kernels.SH_DTYPE, device=device)
    cam = camera(32, 32)
    cam.T_world_camera = np.eye(4)
    for far, kept in ((5.0, [True, True, False]), (1e10, [True, True, True])):
        out = impl.project_gaussians(means, covars, opac, sh, cam.packed(device), 32, 32, sh_degree=0, far=far)
        assert [int(t) > 0 for t in out[2]] == kept, far
        assert [bool(torch.isfinite(d)) for d in out[1]] == kept, far


def project_one(impl, mean, cov3x3, cam: PinholeCamera, device, sh=None, sh_degree=0, ortho=False):
    """One Gaussian (opacity 0.8) through `impl`'s project on NaN-poisoned outputs: (mean2d [2], (a, b, c, o),
    depth, colour [3]) of its record and depth. `sh` [K, 3] is stored in kernels.SH_DTYPE (fp16) for both."""
    sh = torch.zeros(1, 1, 3) if sh is None else torch.as_tensor(sh, dtype=torch.float32)[None]
    sh = sh.to(kernels.SH_DTYPE)
    f32 = dict(dtype=torch.float32)
    args = (torch.tensor(np.asarray(mean)[None], **f32), torch.tensor(upper(cov3x3)[None], **f32),
            torch.tensor([0.8]), sh)  # fmt: skip
    out = tuple(nan_like(t) for t in kernels.project_outputs(1, device))
    got = impl.project_gaussians(*(t.to(device) for t in args), cam.packed(device), cam.width, cam.height,
                                 sh_degree=sh_degree, out=out, ortho=ortho)  # fmt: skip
    assert int(got[2][0]) > 0, "the test Gaussian must be visible"
    means2d, conics, opacities, colors = unpack_records(got[0])
    conic_opacity = torch.cat([conics, opacities[:, None]], 1)
    return [t[0].cpu().double().numpy() for t in (means2d, conic_opacity, got[1], colors)]


def conic_matrix(conic_opacity) -> np.ndarray:
    a, b, c, _ = conic_opacity
    return np.array([[a, b], [b, c]])


@pytest.mark.parametrize("impl", IMPLS)
def test_ewa_on_the_optical_axis_by_hand(impl, device):
    """On the axis the Jacobian is diag(fx, fy) / z (its depth column vanishes at x = y = 0), so the 2D
    covariance is the camera-frame xy block scaled by f / z, plus the 0.3 dilation on the diagonal; the mean
    lands on the principal point (cx, cy) itself, not half a pixel off."""
    fx, fy, z = 30.0, 25.0, 2.0
    cam = PinholeCamera(32, 24, fx, fy, 16.0, 12.0)  # identity pose: world = camera frame
    S = np.array([[0.04, 0.012, 0.005], [0.012, 0.02, -0.003], [0.005, -0.003, 0.03]])
    sxx = (fx / z) ** 2 * S[0, 0] + 0.3
    sxy = fx * fy / z**2 * S[0, 1]
    syy = (fy / z) ** 2 * S[1, 1] + 0.3
    det = sxx * syy - sxy * sxy
    means2d, conic_opacity, depth, *_ = project_one(impl, [0.0, 0.0, z], S, cam, device)
    np.testing.assert_allclose(conic_opacity, [syy / det, -sxy / det, sxx / det, 0.8], rtol=1e-5)
    np.testing.assert_array_equal(means2d, [16.0, 12.0])
    assert depth == z


@pytest.mark.parametrize("impl", IMPLS)
def test_ewa_off_axis_in_float64(impl, device):
    """A turned camera and a turned, elongated Gaussian off the axis: the conic against J W Sigma W^T J^T +
    0.3 I with the Jacobian from central differences of the pinhole map (tests/analytic.py)."""
    pose = np.eye(4)
    pose[:3, :3] = rodrigues((0.2, 1.0, 0.1), 0.4)
    pose[:3, 3] = (0.3, -0.5, -3.0)
    cam = PinholeCamera(40, 30, 34.0, 31.0, 19.0, 16.5, pose)
    p_cam = np.array([0.5, -0.35, 3.0])  # x/z, y/z well inside the frustum: gsplat's clamp does not act
    mean = pose[:3, :3] @ p_cam + pose[:3, 3]
    S = covariance(rodrigues((1.0, -2.0, 0.5), 1.2), (0.15, 0.05, 0.3))
    want_mean, want_conic = ewa_conic(mean, S, pose, cam.fx, cam.fy, cam.cx, cam.cy)
    means2d, conic_opacity, depth, *_ = project_one(impl, mean, S, cam, device)
    np.testing.assert_allclose(means2d, want_mean, atol=2e-4)
    np.testing.assert_allclose(conic_matrix(conic_opacity), want_conic, rtol=2e-4, atol=1e-6)
    assert abs(depth - 3.0) < 1e-5


@pytest.mark.parametrize("impl", IMPLS)
def test_ewa_orthographic_in_float64(impl, device):
    """An orthographic camera (gsplat's camera_model="ortho"), turned, and a turned, elongated Gaussian off its
    axis: the mean is (fx x + cx, fy y + cy) whatever the depth, and the conic J W Sigma W^T J^T + 0.3 I with the
    Jacobian from central differences of the orthographic map (tests/analytic.py); the depth is still z."""
    pose = np.eye(4)
    pose[:3, :3] = rodrigues((0.2, 1.0, 0.1), 0.4)
    pose[:3, 3] = (0.3, -0.5, -3.0)
    cam = PinholeCamera(40, 30, 11.0, 9.5, 19.0, 16.5, pose)  # fx, fy: pixels per world unit
    for p_cam in ([0.5, -0.35, 3.0], [0.5, -0.35, 30.0], [-1.2, 0.9, 0.5]):  # far off the pinhole's frustum too
        mean = pose[:3, :3] @ np.array(p_cam) + pose[:3, 3]
        S = covariance(rodrigues((1.0, -2.0, 0.5), 1.2), (0.15, 0.05, 0.3))
        want_mean, want_conic = ewa_conic(mean, S, pose, cam.fx, cam.fy, cam.cx, cam.cy, ortho=True)
        means2d, conic_opacity, depth, *_ = project_one(impl, mean, S, cam, device, ortho=True)
        np.testing.assert_allclose(means2d, want_mean, atol=2e-4)
        np.testing.assert_allclose(want_mean, [11.0 * p_cam[0] + 19.0, 9.5 * p_cam[1] + 16.5])
        np.testing.assert_allclose(conic_matrix(conic_opacity), want_conic, rtol=2e-4, atol=1e-6)
        assert abs(depth - p_cam[2]) < 1e-5 * p_cam[2]


def test_orthographic_project_matches_reference(device):
    """The kernel against its twin for an orthographic camera (20,011 Gaussians with the edge cases), as for the
    pinhole in `test_project_matches_reference`; and the same rows differ from the pinhole's."""
    n, width, height = 20_011, 128, 96
    means, covars, opac, sh = gaussians(n, sh_degree=2, seed=3, device=device)
    pin = camera(width, height)
    ortho = PinholeCamera(width, height, pin.fx / 4.0, pin.fy / 4.0, pin.cx, pin.cy, pin.T_world_camera)  # depth 4
    kw = dict(sh_degree=2, near=0.01, far=1e10, eps2d=0.3, tile_size=8)
    want = ref.project_gaussians(means, covars, opac, sh, ortho.packed(device), width, height, ortho=True, **kw)
    poisoned = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    got = kernels.project_gaussians(means, covars, opac, sh, ortho.packed(device), width, height, out=poisoned,
                                    ortho=True, **kw)  # fmt: skip
    diff = (want[2] - got[2]).abs()
    assert int((diff > 1).sum()) == 0 and int((diff == 1).sum()) <= n // 1000
    rows = (want[2] > 0) & (got[2] > 0)
    assert int(rows.sum()) > n // 4
    for name, w, g in zip(["means2d", "conics", "opacities", "colors"], unpack_records(want[0]),
                          unpack_records(got[0]), strict=True):  # fmt: skip
        assert_close_rows(name, w, g, rows, rtol=FP16_STEP if name == "colors" else 1e-4)
    pinhole = ref.project_gaussians(means, covars, opac, sh, pin.packed(device), width, height, **kw)
    assert not torch.allclose(unpack_records(pinhole[0])[0][rows], unpack_records(want[0])[0][rows])


DIRECTIONS = [(1, 0, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1), (1, 2, 3), (-0.4, 0.7, -0.2), (0.9, -0.1, 0.45),
              (-1, -1, 1), (0.3, 0.05, -0.95)]  # fmt: skip


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("degree,k", [(1, 4), (2, 9), (3, 16), (1, 16)], ids=["deg1", "deg2", "deg3", "deg1-of-3"])
def test_sh_colours_match_the_real_spherical_harmonics(impl, degree, k, device):
    """colour = max(0.5 + sum_k Y_k(d) c_k, 0) with d the unit vector from the camera centre to the mean and
    Y_k the real SH evaluated from their definition (associated Legendre polynomials, float64), in the
    order k = l^2 + l + m, and c_k the coefficients as the kernels take them, fp16 (their rounding is
    `test_fp16_coefficients_move_a_colour_by_at_most_their_rounding`'s). Bands above `degree` must be ignored
    even when the scene stores them."""
    g = torch.Generator().manual_seed(degree * 31 + k)
    eye = np.array([0.1, -0.2, 0.3])
    for d in DIRECTIONS:
        d = np.asarray(d, dtype=np.float64) / np.linalg.norm(d)
        coeffs = (torch.rand(k, 3, generator=g).double() - 0.5) * 0.12
        coeffs[0] = torch.tensor([2.0, 1.5, 2.5])  # DC keeps every colour above the clamp at 0
        cam = camera(16, 16, 60.0, pose=look_at(eye, eye + d, up=(0.3, -1.0, 0.2)))  # up: parallel to no d
        got = project_one(impl, eye + 2.0 * d, np.eye(3) * 0.05**2, cam, device, sh=coeffs, sh_degree=degree)[3]
        basis = sh_basis(d, 3)[: (degree + 1) ** 2]
        held = coeffs.to(kernels.SH_DTYPE).double()  # the coefficients as stored
        want = 0.5 + basis @ held[: (degree + 1) ** 2].numpy()
        assert (want > 0).all(), "the case must not hit the clamp"
        # the record holds the colour in fp16: one rounding step (2^-11 relative) from the float32 value
        np.testing.assert_allclose(got, want, rtol=FP16_STEP, atol=2e-6, err_msg=f"direction {d.tolist()}")


@pytest.mark.parametrize("impl", IMPLS)
def test_fp16_coefficients_move_a_colour_by_at_most_their_rounding(impl, device):
    """The price of the fp16 SH copy: colours from the coefficients stored in fp16 against colours from the
    float32 coefficients, evaluated in float64 from the SH's definition (tests/analytic.py). fp16 moves each
    coefficient by at most max(2^-11 |c|, 2^-25) (below 2^-14 its step is absolute), so a colour by at most
    the sum of those times |Y_k(d)|; the record's own fp16 rounding of the colour comes on top. Coefficients
    like trained scenes': DC in [-1.5, 4], the higher bands within 0.3, a few too small for fp16's normal
    range; 64 Gaussians at degree 3 in directions all over the view."""
    g = torch.Generator().manual_seed(16)
    n, k = 64, 16
    uv = torch.rand(n, 2, generator=g) * 2.0 - 1.0
    dirs = torch.nn.functional.normalize(torch.cat([uv, torch.ones(n, 1)], 1), dim=1)
    means = 2.0 * dirs  # the camera sits at the origin, looking along +Z: 100 degrees of view reach them all
    coeffs = (torch.rand(n, k, 3, generator=g) * 2.0 - 1.0) * 0.3
    coeffs[:, 0] = torch.rand(n, 3, generator=g) * 5.5 - 1.5
    coeffs[::7, 1:] *= 1e-4  # into fp16's subnormals (below 2^-14 = 6.1e-5)
    stored = coeffs.to(kernels.SH_DTYPE)
    assert (stored.float() != coeffs).float().mean() > 0.9, "the case must exercise fp16's rounding"
    f = 32.0 / np.tan(np.radians(50.0))
    cam = PinholeCamera(64, 64, f, f, 32.0, 32.0)  # identity pose
    covars = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0]).repeat(n, 1) * 0.01**2
    out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    got = impl.project_gaussians(means.to(device), covars.to(device), torch.full((n,), 0.8, device=device),
                                 stored.to(device), cam.packed(device), 64, 64, sh_degree=3, out=out)  # fmt: skip
    assert bool((got[2] > 0).all()), "every Gaussian must be visible"
    got = unpack_records(got[0])[3].cpu().double()
    unit = torch.nn.functional.normalize(means.double(), dim=1)  # the directions the kernels take, in float64
    basis = torch.from_numpy(np.stack([sh_basis(d, 3) for d in unit.numpy()]))  # [n, k]
    c = coeffs.double()  # the float32 coefficients, before fp16
    want = (0.5 + (basis[:, :, None] * c).sum(1)).clamp_min(0.0)  # [n, 3]
    step = torch.maximum(FP16_ROUNDING * c.abs(), torch.tensor(FP16_SUBNORMAL_ROUNDING))  # each coefficient's
    storage = (basis.abs()[:, :, None] * step).sum(1)  # [n, 3]: what fp16 storage may move a colour by
    bound = storage + FP16_ROUNDING * (want + storage) + 1e-6  # + the record's rounding, + float32's arithmetic
    err = (got - want).abs()
    worst = int((err - bound).amax(1).argmax())
    assert bool((err <= bound).all()), f"row {worst}: error {err[worst].tolist()} over {bound[worst].tolist()}"
