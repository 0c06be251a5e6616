"""Numeric hostility: bad values are dropped at load (one warning with the count, by every reader), and extreme
but valid values, awkward Gaussian positions, cameras inside the scene and extreme fields of view render finite
images with both backends (Triton runs in its interpreter on CPU machines: images stay at most 32x32)."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
import torch

from renderer import Camera, Renderer, look_at_pose
from scenes import GaussianScene, load_scene, make_scene
from scenes.ply import write_ply
from scenes.splat import RECORD

# The Triton interpreter evaluates kernels in numpy, which warns on the overflows and NaNs these tests feed it.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BACKENDS = ("torch", "triton")
FIELDS = ("means", "quats", "log_scales", "opacity_logits", "sh")
N = 48
EYE = (0.0, 0.0, -3.0)  # the default camera: 3 units in front of the cloud, looking along +Z
NAN, INF = float("nan"), float("inf")
TINY = float(np.finfo(np.float32).smallest_subnormal)  # 1.4e-45


def cloud(n: int = N, *, degree: int = 1, seed: int = 0, half: float = 1.0) -> GaussianScene:
    """n trained-like Gaussians in the cube [-half, half]^3, SH degree `degree`."""
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene((torch.rand(n, 3, generator=g) * 2 - 1) * half, torch.randn(n, 4, generator=g),
                      torch.randn(n, 3, generator=g) * 0.5 - 2.5, torch.randn(n, generator=g) + 1,
                      torch.randn(n, k, 3, generator=g) * 0.3)  # fmt: skip


def camera(*, eye=EYE, target=(0.0, 0.0, 0.0), fov: float = 60.0, size=(24, 16)) -> Camera:
    return Camera.from_fov(size[0], size[1], fov, look_at_pose(eye, target, (0, -1, 0)))


def render_both(scene: GaussianScene, cam: Camera):
    """(torch output, triton output); each checked finite with its own message."""
    outs = []
    for backend in BACKENDS:
        out = Renderer(scene, device="cpu", backend=backend).render(cam)
        for name in ("image", "alpha"):
            t = getattr(out, name)
            assert torch.isfinite(t).all(), f"{backend}: {(~torch.isfinite(t)).sum().item()} non-finite {name} values"
        assert out.alpha.min() >= 0 and out.alpha.max() <= 1, backend
        outs.append(out)
    return outs


def assert_backends_agree(ref, tri):
    assert ref.stats.n_pairs == tri.stats.n_pairs
    assert (ref.rgba8.int() - tri.rgba8.int()).abs().max() <= 1


# ------------------------------------------------------------------------------------- dropped at load

# NaN/inf anywhere but in the opacity logit (an infinite logit is an opacity of 1 or 0: clamped, see below), and
# finite values whose activation or squared length overflows float32: a log-scale of 89 (exp gives inf), a position
# of 2e19 (|p|^2 gives inf), a quaternion of 1e30 (|q|^2 gives inf, so it normalises to zero).
BAD_VALUES = [
    ("means", NAN), ("means", INF), ("means", -INF), ("means", 2e19), ("means", -3.4e38),
    ("quats", NAN), ("quats", INF), ("quats", 0.0), ("quats", TINY), ("quats", 1e-20), ("quats", 1e30),
    ("log_scales", NAN), ("log_scales", INF), ("log_scales", -INF), ("log_scales", 89.0),
    ("opacity_logits", NAN),
    ("sh", NAN), ("sh", INF), ("sh", -INF),
]  # fmt: skip


def poisoned(field: str, value: float, rows=(3,), whole_row: bool = True, scene=None) -> GaussianScene:
    scene = cloud() if scene is None else scene
    t = getattr(scene, field)
    for r in rows:
        if whole_row or field == "opacity_logits":
            t[r] = value
        else:
            t.view(len(scene), -1)[r, 0] = value  # x, the first scale, the red DC coefficient
    return scene


@pytest.mark.parametrize("field,value", BAD_VALUES, ids=[f"{f}={v}" for f, v in BAD_VALUES])
def test_bad_values_dropped_at_ply_load_with_one_warning(field, value, tmp_path):
    whole_row = field == "quats"  # a quaternion is bad only when all of it is (near) zero
    scene = poisoned(field, value, rows=(0, 17, N - 1), whole_row=whole_row)
    expect = [getattr(scene, f).clone() for f in FIELDS]
    write_ply(scene, tmp_path / "bad.ply")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = load_scene(tmp_path / "bad.ply")
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and f"dropped 3 of {N} Gaussians" in messages[0], messages
    keep = torch.ones(N, dtype=torch.bool)
    keep[[0, 17, N - 1]] = False
    for name, t in zip(FIELDS, expect):
        assert torch.equal(getattr(back, name), t[keep]), name
    (ref,) = render_both(back, camera())[:1]
    assert ref.stats.n_visible > 0


@pytest.mark.parametrize("value", [INF, -INF])
def test_infinite_opacity_logits_are_clamped_not_dropped(value, tmp_path):
    """An infinite logit is an opacity of exactly 1 or 0, as splat-transform writes them: every Gaussian is kept,
    with no warning, and the logit becomes the finite MAX_OPACITY_LOGIT of that sign."""
    from scenes.gaussians import MAX_OPACITY_LOGIT

    scene = poisoned("opacity_logits", value, rows=(0, 17, N - 1))
    write_ply(scene, tmp_path / "opaque.ply")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = load_scene(tmp_path / "opaque.ply")
    assert len(back) == N
    assert back.opacity_logits[[0, 17, N - 1]].tolist() == [MAX_OPACITY_LOGIT * np.sign(value)] * 3
    assert torch.equal(back.opacity_logits[1:17], scene.opacity_logits[1:17])
    (ref,) = render_both(back, camera())[:1]
    assert ref.stats.n_visible > 0


def test_denormal_values_are_kept_and_render_finite(tmp_path):
    """Subnormal numbers are valid floats (only a quaternion that is wholly that small is unusable)."""
    scene = cloud()
    scene.means[:8] = TINY
    scene.log_scales[8:16] = TINY
    scene.opacity_logits[16:24] = TINY
    scene.sh[24:32] = TINY
    scene.quats[32:40, 1:] = TINY  # w stays: a valid rotation
    write_ply(scene, tmp_path / "denormal.ply")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = load_scene(tmp_path / "denormal.ply")
    assert len(back) == N
    assert_backends_agree(*render_both(back, camera()))


def test_every_reader_calls_drop_invalid(scene_path, tmp_path, monkeypatch):
    """Each format's reader (and the folder readers) passes its scene through drop_invalid exactly once."""
    calls = []
    original = GaussianScene.drop_invalid

    def spy(self, **kw):
        calls.append(len(self))
        return original(self, **kw)

    monkeypatch.setattr(GaussianScene, "drop_invalid", spy)
    folder = tmp_path / "model" / "point_cloud" / "iteration_7"
    folder.mkdir(parents=True)
    shutil.copy(scene_path("test-splat.3-points-from-train.ply"), folder / "point_cloud.ply")
    ascii_ply = tmp_path / "ascii.ply"
    s = cloud(4, degree=0)
    cols = [s.means, torch.zeros(4, 3), s.sh[:, 0], s.opacity_logits[:, None], s.log_scales, s.quats]
    names = ["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"]
    names += [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)]
    rows = "\n".join(" ".join(f"{v:.9g}" for v in r) for r in torch.cat(cols, 1).tolist())
    ascii_ply.write_text("ply\nformat ascii 1.0\nelement vertex 4\n" + "".join(f"property float {n}\n" for n in names)
                         + "end_header\n" + rows + "\n")  # fmt: skip
    files = [
        scene_path("donut_fused.ply"),
        scene_path("playbot_crop.compressed.ply"),
        scene_path("playbot_crop.spz"),
        scene_path("test-splat.3-points-from-train.spz"),  # gzip version 3: the other SPZ reader path
        scene_path("test-splat.3-points-from-train.splat"),
        scene_path("playbot_lod2.sog"),
        folder.parent.parent,
        ascii_ply,
    ]
    for f in files:
        calls.clear()
        scene = load_scene(f)
        assert len(calls) == 1, f"{f}: drop_invalid called {len(calls)} times"
        assert len(scene) > 0


def test_splat_bad_records_dropped_with_one_warning(tmp_path):
    """A non-PLY reader: .splat records with a NaN position, a zero scale and a zero quaternion."""
    rec = np.zeros(10, RECORD)
    rec["pos"] = np.random.default_rng(0).uniform(-1, 1, (10, 3))
    rec["scale"], rec["rgba"], rec["rot"] = 0.05, 200, (255, 128, 128, 128)
    rec["pos"][2, 1] = np.nan
    rec["scale"][5, 0] = 0.0
    rec["rot"][7] = 128  # every component (b - 128) / 128 = 0
    (tmp_path / "bad.splat").write_bytes(rec.tobytes())
    with pytest.warns(UserWarning, match="dropped 3 of 10 Gaussians") as caught:
        back = load_scene(tmp_path / "bad.splat")
    assert len(caught) == 1 and len(back) == 7


# ------------------------------------------------------------------------------------- extreme but valid


def extreme(field: str, value: float) -> GaussianScene:
    return poisoned(field, value, rows=(3, 4))


EXTREMES = {
    "tiny-scale": lambda: extreme("log_scales", -100.0),  # exp underflows to a subnormal / zero: a point
    "huge-scale": lambda: extreme("log_scales", 15.0),  # 3.3e6 units: covers the whole view
    # exp(44) ~ 1.3e19, its square 1.7e38: about the largest log-scale whose float32 covariance stays finite
    # (scenes/gaussians.py MAX_LOG_SCALE, 44.36; above it a Gaussian is dropped at load)
    "absurd-scale": lambda: extreme("log_scales", 44.0),
    "huge-quat": lambda: extreme("quats", 1e18),  # |q|^2 = 4e36: still normalisable
    "tiny-quat": lambda: extreme("quats", 1e-15),  # |q|^2 = 4e-30: normalisable
    "far-mean": lambda: extreme("means", 1e18),  # |p|^2 = 3e36: the largest positions kept
    "far-mean-one-axis": lambda: poisoned("means", 1.8e19, rows=(3,), whole_row=False),  # x^2 = 3.2e38 < max
    "huge-sh": lambda: extreme("sh", 1e30),
    "huge-opacity-logit": lambda: extreme("opacity_logits", 1e30),
    "tiny-opacity-logit": lambda: extreme("opacity_logits", -1e30),
}


@pytest.mark.parametrize("case", list(EXTREMES))
def test_extreme_valid_values_render_finite(case):
    scene = EXTREMES[case]()
    assert not scene.invalid_mask().any()
    ref, tri = render_both(scene, camera())
    assert_backends_agree(ref, tri)


def test_sh_beyond_fp16_range_is_clamped_with_one_warning():
    """The renderer keeps its SH copy in fp16 (renderer/prepare.py `prepare_scene`), whose range ends at 65504:
    a coefficient fp16 cannot hold is clamped to it, never made infinite, with one warning per renderer giving
    how many Gaussians had one. The images then equal those of the scene clamped by hand, which warns not."""
    scene = cloud()
    scene.sh[3, 0, 0] = 1e5
    scene.sh[7, 2, 1] = -7e4
    scene.sh[9, 1, 2] = 65520.0  # the smallest float that fp16 rounds to inf: clamped, counted
    scene.sh[11, 0, 2] = 65519.0  # fp16 rounds it to 65504, its largest, as it rounds every value: not counted
    with pytest.warns(UserWarning) as caught:
        outs = render_both(scene, camera())
    said = [str(w.message) for w in caught if "float16" in str(w.message)]
    assert said == ["scene: 3 of 48 Gaussians have SH coefficients beyond float16's range: clamped to +-65504"] * 2
    hand = cloud()
    hand.sh[:] = scene.sh.clamp(-65504.0, 65504.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        want = render_both(hand, camera())
    for got, ref in zip(outs, want, strict=True):
        assert torch.equal(got.image, ref.image) and torch.equal(got.alpha, ref.alpha)
    assert outs[0].stats.n_visible > 0


def near_plane_scene(z_cam: float, log_scale: float = -1.0, offset=(0.0, 0.0)) -> GaussianScene:
    scene = cloud()
    scene.means[5] = torch.tensor([offset[0], offset[1], EYE[2] + z_cam])
    scene.log_scales[5] = log_scale
    return scene


POSITIONS = {
    "at-camera-centre": lambda: near_plane_scene(0.0),
    "at-camera-centre-large": lambda: near_plane_scene(0.0, log_scale=0.0),
    "on-near-plane": lambda: near_plane_scene(0.01),
    "on-near-plane-off-axis": lambda: near_plane_scene(0.01, offset=(0.003, -0.002)),
    "just-behind-near-plane": lambda: near_plane_scene(0.0099999, log_scale=0.0),
    "just-past-near-plane": lambda: near_plane_scene(0.0100001, log_scale=0.0),
    "a-hair-behind-camera": lambda: near_plane_scene(-1e-6, log_scale=0.0),
    "a-hair-in-front": lambda: near_plane_scene(1e-6, log_scale=0.0),
}


@pytest.mark.parametrize("case", list(POSITIONS))
def test_gaussians_at_camera_centre_and_near_plane_render_finite(case):
    ref, tri = render_both(POSITIONS[case](), camera())
    assert_backends_agree(ref, tri)
    assert ref.stats.n_visible > 0


@pytest.mark.parametrize("fov", [1.0, 60.0, 179.0])
@pytest.mark.parametrize("inside", [False, True], ids=["outside", "inside"])
def test_extreme_fov_and_camera_inside_the_scene(fov, inside):
    """A camera at the centre of a cloud (Gaussians all around it, some within the near distance), and fields
    of view of 1 and 179 degrees."""
    if inside:
        scene = cloud(128, seed=1)
        cam = camera(eye=(0.01, 0.02, 0.03), target=(0.0, 0.0, 1.0), fov=fov, size=(32, 32))
    else:
        scene, cam = cloud(), camera(fov=fov, size=(32, 32))
    ref, tri = render_both(scene, cam)
    assert_backends_agree(ref, tri)
    assert ref.stats.n_visible > 0


# ------------------------------------------------------------------------------------- renderer given bad values


@pytest.mark.parametrize(
    "field,value",
    BAD_VALUES,
    ids=[f"{f}={v}" for f, v in BAD_VALUES],
)
def test_renderer_given_unchecked_bad_values_stays_finite(field, value):
    """A scene built in memory skips the readers' drop_invalid; the renderer must still give a finite image."""
    scene = poisoned(field, value, rows=(3,), whole_row=field == "quats")
    render_both(scene, camera())
