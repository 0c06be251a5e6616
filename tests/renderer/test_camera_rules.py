"""Rules of renderer/camera.py that a mutation audit found no test checked. Each expected value is worked out by hand
from the module's convention (OpenCV axes: +X right, +Y down, +Z forward; pixel u = fx x / z + cx) or from a
docstring, not read back from the code."""

import math

import numpy as np
import pytest
import torch

from renderer import Camera, default_camera, orthographic, perspective, up_name, up_vector
from renderer.camera import framing_sphere
from renderer.paths import Keyframe
from scenes import load_scene
from tests.conftest import bundled


def pixel(cam: Camera, p) -> np.ndarray:
    """Where world point p lands, by the convention: into the camera frame, then u = fx x / z + cx."""
    x, y, z, _ = cam.viewmat @ np.append(np.asarray(p, np.float64), 1.0)
    return np.array([cam.fx * x / z + cam.cx, cam.fy * y / z + cam.cy])


def test_up_name_names_an_axis_only_when_the_direction_is_that_axis():
    """A scene levelled from a view (the viewer's L key) tilted by a milliradian is not "-y": its direction is kept
    to 6 decimals."""
    tilted = np.array([1e-3, -1.0, 0.0])
    name = up_name(tilted)
    assert name != "-y" and name.count(",") == 2
    np.testing.assert_allclose(up_vector(name), tilted / np.linalg.norm(tilted), atol=1e-6)


def test_look_at_refuses_an_eye_at_its_target():
    with pytest.raises(ValueError, match="coincide"):
        Camera.look_at((1.0, 2.0, 3.0), (1.0, 2.0, 3.0), width=32, height=24)


def test_a_field_of_view_of_zero_is_refused_like_any_outside_0_to_180():
    for fov in (0.0, -10.0, 180.0):
        with pytest.raises(ValueError, match="not in"):
            Camera.from_fov(32, 24, fov)


def test_look_at_takes_minus_y_as_up_by_default():
    """The INRIA/COLMAP frame, the module's default: world -Y appears up (smaller v), with no `up` given."""
    cam = Camera.look_at((0.0, 0.0, -5.0), (0.0, 0.0, 0.0), width=32, height=24)
    assert pixel(cam, (0.0, -1.0, 0.0))[1] < 12.0 < pixel(cam, (0.0, 1.0, 0.0))[1]
    assert pixel(cam, (1.0, 0.0, 0.0))[0] > 16.0  # +X right, looking down +Z


def test_K_is_the_pinhole_matrix_of_the_intrinsics():
    """K maps a camera-frame point to homogeneous pixels: (fx x + cx z, fy y + cy z, z)."""
    cam = Camera(40, 30, fx=50.0, fy=60.0, cx=18.0, cy=13.0)
    x, y, z = 0.4, -0.3, 2.0
    u, v, w = cam.K @ np.array([x, y, z])
    assert (u / w, v / w) == pytest.approx((50.0 * 0.4 / 2 + 18.0, 60.0 * -0.3 / 2 + 13.0))


def test_orthographic_scales_each_focal_length_by_its_own_and_keeps_depth_d():
    """Non-square pixels: the orthographic camera's fy is the pinhole's fy over the distance, not its fx's. A point
    at depth d lands on the same pixel in both (orthographic: u = fx x + cx)."""
    cam = Camera(40, 30, fx=80.0, fy=40.0, cx=20.0, cy=15.0)
    d = 4.0
    ortho = orthographic(cam, d)
    assert (ortho.fx, ortho.fy, ortho.cx, ortho.cy) == (20.0, 10.0, 20.0, 15.0)
    x, y = 0.5, -0.75
    assert (ortho.fx * x + ortho.cx, ortho.fy * y + ortho.cy) == pytest.approx(tuple(pixel(cam, (x, y, d))))


def test_perspective_refuses_what_orthographic_refuses():
    cam = Camera.from_fov(32, 24, 50.0)
    for distance in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive distance"):
            perspective(cam, distance)


def test_derived_cameras_do_not_share_a_pose_array():
    """`position`, `resized` and `with_pose` hand out cameras and arrays of their own: editing one in place (as the
    pose a path or control edits) moves no other camera."""
    pose = np.eye(4)
    pose[:3, 3] = (1.0, 2.0, 3.0)
    cam = Camera.from_fov(32, 24, 60.0, pose.copy())
    cam.position[:] = 0.0
    small = cam.resized(16, 12)
    small.T_world_camera[:3, 3] = 9.0
    moved = cam.with_pose(pose)
    pose[:3, 3] = -5.0
    assert np.array_equal(cam.T_world_camera[:3, 3], [1.0, 2.0, 3.0])
    assert np.array_equal(moved.T_world_camera[:3, 3], [1.0, 2.0, 3.0])


def test_an_empty_scene_still_has_a_default_view():
    """No Gaussians left (a subset of none): a unit sphere at the origin, which the default view looks at."""
    empty = load_scene(bundled("playbot_crop.ply")).subset(torch.arange(0))
    centre, radius = framing_sphere(empty)
    assert np.array_equal(centre, [0, 0, 0]) and radius > 0
    cam = default_camera(empty, 32, 24)
    assert np.all(np.isfinite(cam.T_world_camera)) and np.allclose(pixel(cam, centre), [16, 12])


@pytest.mark.parametrize("up", ["-y", "+z", "+x", "0,-1,-0.3"])
def test_the_default_view_looks_down_25_degrees_from_the_minus_z_side(up):
    """default_camera: from 25 degrees above the horizon (with respect to the up axis asked for), on the side of
    -Z (the side INRIA/COLMAP captures usually start from) where -Z is near horizontal, else of -Y: the side is the
    horizontal part of that direction (a tilted up axis, "0,-1,-0.3", leaves -Z 17 degrees off the horizon)."""
    scene = load_scene(bundled("playbot_crop.ply"))
    cam = default_camera(scene, 32, 24, up=up)
    centre, _ = framing_sphere(scene)
    back = cam.position - centre
    back /= np.linalg.norm(back)
    upv = up_vector(up)
    assert math.degrees(math.asin(back @ upv)) == pytest.approx(25.0)
    horizontal = back - (back @ upv) * upv
    side = {"-y": (0, 0, -1), "+z": (0, -1, 0), "+x": (0, 0, -1), "0,-1,-0.3": (0, -0.3, -1)}[up]
    side = np.cross(upv, np.cross(side, upv))  # its part perpendicular to up
    np.testing.assert_allclose(horizontal / np.linalg.norm(horizontal), side / np.linalg.norm(side), atol=1e-9)
    # and the up axis appears up: a point above the centre lands above the image's middle
    assert pixel(cam, centre + 0.1 * upv)[1] < 12.0


def test_the_default_view_keeps_a_sparse_pedestal_that_a_1_to_99_percent_box_cuts_off():
    """FRAMING_QUANTILES: the framing box keeps the sparse parts of an object, such as a pedestal of 1.5% of its
    Gaussians (angel.sog's and st-peter.sog's hold under 1%): every mean projects inside the image, with a margin of
    1/25 of each side, as test_camera.py's whole-object test on the real scenes."""
    from scenes import make_scene

    g = torch.Generator().manual_seed(0)
    n, k = 2000, 30
    pedestal = torch.zeros(k, 3)
    pedestal[:, 1] = torch.linspace(0.5, 2.5, k)  # a column below a unit cube (+Y is down)
    means = torch.cat([torch.rand(n - k, 3, generator=g) - 0.5, pedestal])
    scene = make_scene(means, torch.tensor([[1.0, 0, 0, 0]]).expand(n, 4), torch.full((n, 3), -6.0),
                       torch.full((n,), 4.0), torch.zeros(n, 1, 3))  # fmt: skip
    cam = default_camera(scene, 32, 24)
    uv = np.array([pixel(cam, m) for m in means.double().numpy()])
    assert uv[:, 0].min() >= 32 / 25 and uv[:, 0].max() <= 32 * 24 / 25
    assert uv[:, 1].min() >= 24 / 25 and uv[:, 1].max() <= 24 * 24 / 25


def test_a_camera_keeps_its_own_copy_of_the_pose_it_was_given():
    """A path built by filling one pose array per frame: each camera keeps the pose it was made with (they all
    followed the array, and the path rendered its last pose throughout)."""
    pose = np.eye(4)
    cams = []
    for x in (0.0, 1.0, 2.0):
        pose[0, 3] = x
        cams.append(Camera(64, 48, 50.0, 50.0, 32.0, 24.0, pose))
        cams.append(Camera.from_fov(64, 48, 60.0, pose))
    assert [c.position[0] for c in cams] == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    keys = []
    for x in (0.0, 1.0):
        pose[0, 3] = x
        keys.append(Keyframe(pose))
    assert [k.T_world_camera[0, 3] for k in keys] == [0.0, 1.0]
