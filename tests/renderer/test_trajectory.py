"""Generated camera paths and the keyframe splines (renderer/trajectory.py).

Poses are T_world_camera, OpenCV axes: column 2 of the rotation is the viewing direction, column 1 the
image "down" direction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer import default_camera, look_at_pose
from renderer.trajectory import (
    Keyframe,
    default_flythrough_keyframes,
    flythrough_path,
    interpolate_keyframes,
    orbit_path,
    quat_slerp,
    quat_to_rotmat,
    rotmat_to_quat,
    scene_frame,
    spiral_path,
)
from scenes.gaussians import make_scene

W, H = 64, 48


@pytest.fixture(scope="module")
def scene():
    g = torch.Generator().manual_seed(0)
    n = 500
    means = torch.randn(n, 3, generator=g) * torch.tensor([1.0, 0.5, 2.0]) + torch.tensor([3.0, -1.0, 5.0])
    return make_scene(
        means,
        torch.tensor([[1.0, 0, 0, 0]]).repeat(n, 1),
        torch.full((n, 3), -3.0),
        torch.zeros(n),
        torch.rand(n, 1, 3, generator=g),
    )


def assert_rotation(R: np.ndarray) -> None:
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-9
    assert abs(np.linalg.det(R) - 1) < 1e-9


def looks_at(cam, target) -> float:
    """Angle in degrees between the camera's viewing direction and the direction to `target`."""
    d = target - cam.position
    fwd = cam.T_world_camera[:3, 2]
    return math.degrees(math.acos(np.clip(fwd @ d / np.linalg.norm(d), -1, 1)))


def test_orbit_circles_the_look_at_point(scene):
    f = scene_frame(scene, W, H)
    cams = orbit_path(scene, W, H, 12)
    assert len(cams) == 12
    # starts at the default view
    np.testing.assert_allclose(cams[0].T_world_camera, default_camera(scene, W, H).T_world_camera, atol=1e-9)
    for c in cams:
        assert_rotation(c.T_world_camera[:3, :3])
        assert looks_at(c, f.target) < 1e-4  # degrees; acos near 1 loses digits
        assert abs(np.linalg.norm(c.position - f.target) - f.distance) < 1e-9
        # image "down" has no component along world up other than negative (the up axis stays up)
        assert c.T_world_camera[:3, 1] @ f.up < 0
    # a quarter of the way round is 90 degrees about the up axis
    a = cams[0].position - f.target
    b = cams[3].position - f.target
    a_h, b_h = a - (a @ f.up) * f.up, b - (b @ f.up) * f.up
    assert math.degrees(math.acos(a_h @ b_h / np.linalg.norm(a_h) / np.linalg.norm(b_h))) == pytest.approx(90)


def test_orbit_radius_and_rise(scene):
    f = scene_frame(scene, W, H)
    cams = orbit_path(scene, W, H, 5, radius=2.0, rise=0.5, turns=0.5)
    for c in cams:
        d = c.position - f.target
        assert d @ f.up == pytest.approx(0.5)
        assert np.linalg.norm(d - (d @ f.up) * f.up) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="frames 0"):
        orbit_path(scene, W, H, 0)


def test_spiral_swings_and_zooms(scene):
    f = scene_frame(scene, W, H)
    cams = spiral_path(scene, W, H, 40, turns=2, swing_deg=20, zoom=0.25)
    dists = np.array([np.linalg.norm(c.position - f.target) for c in cams])
    elevs = np.array(
        [math.degrees(math.asin((c.position - f.target) @ f.up / d)) for c, d in zip(cams, dists, strict=True)]
    )
    assert dists.min() == pytest.approx(0.75 * f.distance, rel=1e-2)
    assert dists.max() == pytest.approx(1.25 * f.distance, rel=1e-2)
    assert elevs.max() - elevs.min() == pytest.approx(40, abs=0.5)
    assert max(looks_at(c, f.target) for c in cams) < 1e-4


def test_flythrough_hits_first_and_last_keys_and_eases(scene):
    keys = default_flythrough_keyframes(scene, W, H)
    cams = flythrough_path(scene, W, H, 50, keyframes=keys)
    np.testing.assert_allclose(cams[0].T_world_camera, keys[0].T_world_camera, atol=1e-9)
    np.testing.assert_allclose(cams[-1].T_world_camera, keys[-1].T_world_camera, atol=1e-9)
    steps = np.linalg.norm(np.diff([c.position for c in cams], axis=0), axis=1)
    # eased: starts and ends slowly; smooth: no step is a jump compared with its neighbours
    assert steps[0] < 0.3 * steps.mean() and steps[-1] < 0.3 * steps.mean()
    assert np.abs(np.diff(steps)).max() < 0.5 * steps.mean()
    for c in cams:
        assert_rotation(c.T_world_camera[:3, :3])


def test_closed_flythrough_loops_without_a_jump(scene):
    cams = flythrough_path(scene, W, H, 40, closed=True)
    pos = np.array([c.position for c in cams] + [cams[0].position])
    steps = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    assert steps[-1] < 2 * np.median(steps) and steps.max() < 2.5 * np.median(steps)


def test_keys_with_times_are_hit_exactly():
    eye = [np.array([0.0, 0, -4]), np.array([3.0, 0, -3]), np.array([4.0, -1, 0]), np.array([2.0, 0, 3])]
    keys = [
        Keyframe(look_at_pose(e, [0, 0, 0], [0, -1, 0]), fov, t)
        for e, fov, t in zip(eye, (40, 50, 60, 70), (0, 1, 3, 4), strict=True)
    ]
    cams = interpolate_keyframes(keys, 9, W, H, ease=False)  # frames every 0.5 s: keys at frames 0, 2, 6, 8
    for k, i in zip(keys, (0, 2, 6, 8), strict=True):
        np.testing.assert_allclose(cams[i].T_world_camera, k.T_world_camera, atol=1e-9)
        assert cams[i].fov_y_deg == pytest.approx(k.fov_y_deg)
    # square pixels, centred principal point
    assert cams[3].fx == cams[3].fy and (cams[3].cx, cams[3].cy) == (W / 2, H / 2)


def test_collinear_keys_give_a_straight_evenly_spaced_line():
    R = np.eye(3)
    keys = []
    for x in (0.0, 1.0, 2.0, 3.0):
        T = np.eye(4)
        T[:3, :3], T[0, 3] = R, x
        keys.append(Keyframe(T, 60.0))
    cams = interpolate_keyframes(keys, 13, W, H, ease=False)
    xs = np.array([c.position[0] for c in cams])
    np.testing.assert_allclose(xs, np.linspace(0, 3, 13), atol=1e-9)
    assert max(np.abs(c.position[1:]).max() for c in cams) < 1e-12


def test_single_key_and_bad_input():
    k = Keyframe(look_at_pose([0, 0, -1], [0, 0, 0], [0, -1, 0]), 55.0)
    cams = interpolate_keyframes([k], 3, W, H)
    assert all(np.allclose(c.T_world_camera, k.T_world_camera) for c in cams)
    with pytest.raises(ValueError, match="at least 3"):
        interpolate_keyframes([k, k], 5, W, H, closed=True)
    with pytest.raises(ValueError, match="all or none"):
        interpolate_keyframes([k, Keyframe(k.T_world_camera, 50, 1.0)], 5, W, H)


rotvecs = st.tuples(*[st.floats(-3.1, 3.1, allow_nan=False)] * 3)


def rotation_from(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    angle = np.linalg.norm(v)
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


@settings(max_examples=200, deadline=None)
@given(rotvecs)
def test_quaternion_round_trip(v):
    R = rotation_from(v)
    q = rotmat_to_quat(R)
    assert abs(np.linalg.norm(q) - 1) < 1e-12 and q[0] >= 0
    np.testing.assert_allclose(quat_to_rotmat(q), R, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(rotvecs, rotvecs, st.floats(0, 1))
def test_slerp_is_on_the_geodesic(a, b, t):
    qa, qb = rotmat_to_quat(rotation_from(a)), rotmat_to_quat(rotation_from(b))
    q = quat_slerp(qa, qb, t)
    total = 2 * math.acos(min(1.0, abs(qa @ qb)))
    da = 2 * math.acos(min(1.0, abs(qa @ q)))
    db = 2 * math.acos(min(1.0, abs(q @ qb)))
    assert da + db == pytest.approx(total, abs=1e-6)
    if total > 1e-3:
        assert da == pytest.approx(t * total, abs=1e-6)
