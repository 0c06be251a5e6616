"""Camera conventions (OpenCV: +X right, +Y down, +Z forward) and the default framing."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer import Camera, default_camera, look_at_pose, up_name, up_vector
from renderer.camera import FRAMING_QUANTILES
from scenes import load_scene

vec = st.tuples(*[st.floats(-100, 100, allow_nan=False)] * 3).map(np.array)


def project(cam: Camera, p):
    pc = cam.viewmat @ np.append(p, 1.0)
    return np.array([cam.fx * pc[0] / pc[2] + cam.cx, cam.fy * pc[1] / pc[2] + cam.cy]), pc[2]


@settings(max_examples=60, deadline=None)
@given(eye=vec, target=vec)
def test_look_at_pose_is_rigid_and_centres_the_target(eye, target):
    if np.linalg.norm(target - eye) < 1e-3:
        return
    cam = Camera.look_at(eye, target, width=64, height=48)
    T = cam.T_world_camera
    assert np.allclose(T[:3, :3].T @ T[:3, :3], np.eye(3), atol=1e-9)
    assert math.isclose(np.linalg.det(T[:3, :3]), 1.0, abs_tol=1e-9)
    assert np.allclose(T @ cam.viewmat, np.eye(4), atol=1e-6 * max(1.0, np.abs(eye).max()))
    uv, depth = project(cam, target)
    assert depth > 0
    assert np.allclose(uv, [32, 24], atol=1e-6 * max(1.0, np.abs(eye).max(), np.abs(target).max()))


@settings(max_examples=60, deadline=None)
@given(eye=vec, target=vec)
def test_packed_camera_is_the_inverse_pose_and_intrinsics(eye, target):
    """The kernels' [24] values, packed from plain floats, against the pose inverted by numpy, and against the
    numpy layout they replaced (the same float32s but where a sum rounds otherwise)."""
    if np.linalg.norm(target - eye) < 1e-3:
        return
    cam = Camera.look_at(eye, target, width=64, height=48)
    inverse = np.linalg.inv(cam.T_world_camera)
    packed = cam.packed_array()
    assert packed.dtype == np.float32 and packed.shape == (24,)
    assert np.allclose(packed[:16], inverse.reshape(-1), rtol=1e-6, atol=1e-6 * max(1.0, np.abs(eye).max()))
    expected = np.zeros(24, dtype=np.float32)
    expected[:16] = cam.viewmat.reshape(-1)
    expected[16:20] = cam.fx, cam.fy, cam.cx, cam.cy
    expected[20:23] = cam.position
    assert np.allclose(packed, expected, rtol=2e-7, atol=1e-9 * max(1.0, np.abs(eye).max()))


def test_opencv_axes_and_up():
    cam = Camera.look_at((0, 0, -5), (0, 0, 0), up=(0, -1, 0), width=100, height=100)
    # world -Y is up, so a point above the target (y = -1) lands in the upper half of the image (v < cy)
    uv, _ = project(cam, np.array([0.0, -1.0, 0.0]))
    assert uv[1] < 50
    uv, _ = project(cam, np.array([1.0, 0.0, 0.0]))  # +X world is to the right when looking down +Z
    assert uv[0] > 50


def test_from_fov_and_resized():
    cam = Camera.from_fov(200, 100, 60.0)
    assert math.isclose(cam.fov_y_deg, 60.0)
    small = cam.resized(100, 50)
    assert math.isclose(small.fov_y_deg, 60.0) and small.cx == 50 and small.cy == 25
    # each axis by its own factor (a window made square): both fields of view and the centred principal point kept
    square = cam.resized(100, 100)
    assert (square.fx, square.fy, square.cx, square.cy) == (cam.fx / 2, cam.fy, 50, 50)
    assert math.isclose(square.fov_y_deg, 60.0) and np.array_equal(square.T_world_camera, cam.T_world_camera)
    with pytest.raises(ValueError):
        Camera.from_fov(10, 10, 180.0)


def test_up_vector_names_and_directions():
    assert np.array_equal(up_vector("-y"), [0, -1, 0]) and np.array_equal(up_vector("z"), [0, 0, 1])
    np.testing.assert_allclose(up_vector(" 0.6, -0.8,0 "), [0.6, -0.8, 0])
    np.testing.assert_allclose(up_vector("3,0,-4"), [0.6, 0, -0.8])  # normalised
    np.testing.assert_allclose(up_vector("1e308,1e308,0"), [0.5**0.5, 0.5**0.5, 0])  # its norm overflows float64
    for bad in ("sideways", "0,0,0", "1,2", "1,2,nan", "1,2,3,4", ""):
        with pytest.raises(ValueError, match="expected one of .*, or a direction X,Y,Z"):
            up_vector(bad)
    assert up_name([0, -2, 0]) == "-y" and up_name([0.6, -0.8, 0]) == "0.600000,-0.800000,0.000000"
    v = np.array([0.1, -0.9, 0.3])
    np.testing.assert_allclose(up_vector(up_name(v)), v / np.linalg.norm(v), atol=1e-6)  # 6 decimals


def test_default_camera_frames_the_robust_box(scene_path):
    scene = load_scene(scene_path("plant.splat"))
    cam = default_camera(scene, 160, 120)
    lo, hi = (v.numpy().astype(np.float64) for v in scene.robust_bounds(*FRAMING_QUANTILES))
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    for c in corners:
        uv, depth = project(cam, c)
        assert depth > 0
        assert -1 <= uv[0] <= 161 and -1 <= uv[1] <= 121, "the framing box is inside the view"
    # looking at the centre of the box
    uv, _ = project(cam, 0.5 * (lo + hi))
    assert np.allclose(uv, [80, 60], atol=1e-3)


def test_stray_floaters_do_not_move_the_default_view(scene_path):
    """A capture's few stray Gaussians far from the object (here 20 of 114k, 100 times the object's size away, in
    every direction) leave the default view on the object: the framing box leaves out the outermost 0.1% of the
    means (FRAMING_QUANTILES), so the object fills the same part of the view as without them. A box of every mean
    would frame the floaters and shrink the object to a speck."""
    import torch

    from scenes.gaussians import make_scene

    scene = load_scene(scene_path("plant.splat"))
    lo, hi = scene.means.amin(0), scene.means.amax(0)
    g = torch.Generator().manual_seed(5)
    directions = torch.nn.functional.normalize(torch.randn(20, 3, generator=g), dim=1)
    far = 0.5 * (lo + hi) + 100.0 * float((hi - lo).norm()) * directions
    pick = torch.arange(20)  # the floaters take the first Gaussians' shapes and colours
    noisy = make_scene(torch.cat([scene.means, far]), torch.cat([scene.quats, scene.quats[pick]]),
                       torch.cat([scene.log_scales, scene.log_scales[pick]]),
                       torch.cat([scene.opacity_logits, scene.opacity_logits[pick]]),
                       torch.cat([scene.sh, scene.sh[pick]]), up_axis=scene.up_axis)  # fmt: skip

    def span(cam):  # the object's means in the view: the width of their 1-99% box, in pixels
        V = cam.viewmat
        p = scene.means.double().numpy() @ V[:3, :3].T + V[:3, 3]
        u = cam.fx * p[:, 0] / p[:, 2] + cam.cx
        return float(np.quantile(u, 0.99) - np.quantile(u, 0.01))

    clean, with_floaters = span(default_camera(scene, 160, 120)), span(default_camera(noisy, 160, 120))
    assert clean > 25 and abs(with_floaters - clean) < 0.05 * clean, (clean, with_floaters)


@pytest.mark.parametrize("name", ["guitar.compressed.ply", "angel.sog"])
def test_default_camera_shows_the_whole_object(scene_path, name):
    """The guitar's neck and the angel's pedestal hold few Gaussians; the view still shows all of the object:
    every mean projects inside the image, with a margin of 1/25 of each side for the Gaussians' extent."""
    scene = load_scene(scene_path(name))
    cam = default_camera(scene, 160, 120)
    V = cam.viewmat
    p = scene.means.double().numpy() @ V[:3, :3].T + V[:3, 3]
    u, v = cam.fx * p[:, 0] / p[:, 2] + cam.cx, cam.fy * p[:, 1] / p[:, 2] + cam.cy
    assert p[:, 2].min() > 0
    assert u.min() >= 160 / 25 and u.max() <= 160 * 24 / 25
    assert v.min() >= 120 / 25 and v.max() <= 120 * 24 / 25


@pytest.mark.parametrize("n", [1, 100])
def test_a_point_scene_is_framed_by_the_gaussians_own_size(n):
    """Gaussians at one position have a framing box of zero size: the sphere is three of their (90th-percentile)
    largest standard deviations, so the view sees 3 sigma around them, from outside the near plane. A scene of
    tiny Gaussians at one point is still framed from 5x the near plane."""
    import torch

    from renderer.camera import MIN_FRAMING_RADIUS, framing_sphere
    from scenes import make_scene

    g = torch.Generator().manual_seed(n)
    log_scales = torch.randn(n, 3, generator=g) * 0.5 - 3
    scene = make_scene(torch.tensor([[0.3, -0.2, 1.5]]).expand(n, 3), torch.randn(n, 4, generator=g), log_scales,
                       torch.full((n,), 4.0), torch.zeros(n, 1, 3))  # fmt: skip
    centre, radius = framing_sphere(scene)
    sigma = float(torch.quantile(log_scales.amax(1).double(), 0.9).exp())
    assert np.allclose(centre, [0.3, -0.2, 1.5]) and radius == pytest.approx(3 * sigma)
    cam = default_camera(scene, 64, 48)
    uv, depth = project(cam, centre)
    assert np.allclose(uv, [32, 24], atol=1e-3) and depth == pytest.approx(radius / math.sin(math.radians(30)))
    tiny = make_scene(scene.means, scene.quats, log_scales - 20, scene.opacity_logits, scene.sh)
    assert framing_sphere(tiny)[1] == MIN_FRAMING_RADIUS
    assert project(default_camera(tiny, 64, 48), centre)[1] >= 5 * 0.01
    far = make_scene(scene.means + 1e18, scene.quats, log_scales, scene.opacity_logits, scene.sh)
    cam = default_camera(far, 64, 48)  # raised "look_at: eye and target coincide"
    assert np.all(np.isfinite(cam.T_world_camera)) and np.linalg.norm(cam.T_world_camera[:3, 3] - 1e18) > 0


def test_look_at_degenerate_up_still_gives_a_pose():
    T = look_at_pose((0, -5, 0), (0, 0, 0), (0, -1, 0))  # looking straight along the up axis
    assert np.allclose(T[:3, :3].T @ T[:3, :3], np.eye(3), atol=1e-9)
