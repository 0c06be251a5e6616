"""Keyframe splines and their timing (renderer/paths/splines.py), and the rotations under them
(renderer/paths/rotations.py).

Poses are T_world_camera, OpenCV axes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer import look_at_pose
from renderer.paths import (
    Keyframe,
    axis_angle,
    interpolate_keyframes,
    key_times,
    quat_slerp,
    quat_to_rotmat,
    rotmat_to_quat,
)

W, H = 64, 48


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


def test_key_times_given_or_from_the_distance_travelled():
    """Given times are kept (from 0); without them, equal steps with no turn take equal time, a closed path
    adds the way back to the first key, and a turn in place still takes time."""
    keys = []
    for x in (0.0, 1.0, 2.0):
        T = np.eye(4)
        T[0, 3] = x
        keys.append(Keyframe(T, 60.0))
    np.testing.assert_allclose(key_times(keys), [0, 1, 2])
    np.testing.assert_allclose(key_times(keys, closed=True)[:3], [0, 1, 2])
    assert key_times(keys, closed=True)[3] == pytest.approx(4.0)  # 2 units back to x = 0
    timed = [Keyframe(k.T_world_camera, 60.0, t) for k, t in zip(keys, (5.0, 5.5, 7.0), strict=True)]
    np.testing.assert_allclose(key_times(timed), [0, 0.5, 2.0])
    turned = [Keyframe(np.eye(4), 60.0), Keyframe(look_at_pose([0, 0, 0], [1, 0, 0], [0, -1, 0]), 60.0)]
    assert key_times(turned)[1] > 0


def test_axis_angle_by_hand_and_against_quaternions():
    np.testing.assert_allclose(axis_angle([0, 0, 1], math.pi / 2) @ [1, 0, 0], [0, 1, 0], atol=1e-15)  # x to y
    np.testing.assert_allclose(axis_angle([2, 0, 0], math.pi / 2) @ [0, 1, 0], [0, 0, 1], atol=1e-15)  # y to z
    axis, angle = np.array([1.0, -2.0, 0.5]), 0.7
    k = axis / np.linalg.norm(axis)
    q = np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * k])  # the same rotation, built another way
    np.testing.assert_allclose(axis_angle(axis, angle), quat_to_rotmat(q), atol=1e-15)


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
