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
    # closed with times and no loop time: back at the first key one mean interval (1 s) after the last
    np.testing.assert_allclose(key_times(timed, closed=True), [0, 0.5, 2.0, 3.0])
    turned = [Keyframe(np.eye(4), 60.0), Keyframe(look_at_pose([0, 0, 0], [1, 0, 0], [0, -1, 0]), 60.0)]
    assert key_times(turned)[1] > 0


def test_a_turn_in_place_takes_about_as_long_as_a_move():
    """Between keys that move, a key that only turns (90 degrees, in place) gets a share of the time like a move
    of the path's size, not the 5% moment a repeated key gets: otherwise the turn is a whip pan."""
    poses = [np.eye(4), np.eye(4), look_at_pose([1, 0, 0], [2, 0, 0], [0, -1, 0])]
    poses[1][0, 3] = 1.0
    t = key_times([Keyframe(T, 60.0) for T in poses])
    assert t[2] - t[1] > 0.2 * (t[1] - t[0])


def test_a_repeated_key_is_passed_through():
    """A key added twice at the same view (K pressed twice) gives a path that pauses there a moment (its keys'
    times still increase, as a saved file's transitions must), finite throughout."""
    a = look_at_pose([0, 0, -4], [0, 0, 0], [0, -1, 0])
    b = look_at_pose([3, -1, -2], [0, 0, 0], [0, -1, 0])
    keys = [Keyframe(a, 60.0), Keyframe(a, 60.0), Keyframe(b, 60.0)]
    assert np.diff(key_times(keys)).min() > 0
    cams = interpolate_keyframes(keys, 10, W, H, ease=False)
    assert all(np.all(np.isfinite(c.T_world_camera)) for c in cams)
    np.testing.assert_allclose(cams[0].T_world_camera, a, atol=1e-9)
    np.testing.assert_allclose(cams[-1].T_world_camera, b, atol=1e-9)


def test_a_closed_path_does_not_repeat_its_first_frame():
    """A loop of 3 s sampled at 6 frames has a frame every 0.5 s: frames 0, 2 and 4 are the keys (at 0, 1 and 2 s)
    and the last frame is half way back to the first key, so the video loops without a doubled frame."""
    eyes = ([0.0, 0, -4], [3.0, 0, -3], [4.0, -1, 0])
    keys = [Keyframe(look_at_pose(e, [0, 0, 0], [0, -1, 0]), 50.0, t) for e, t in zip(eyes, (0, 1, 2), strict=True)]
    cams = interpolate_keyframes(keys, 6, W, H, closed=True, loop_time_s=3.0)
    for k, i in zip(keys, (0, 2, 4), strict=True):
        np.testing.assert_allclose(cams[i].T_world_camera, k.T_world_camera, atol=1e-9)
    assert np.linalg.norm(cams[5].position - keys[0].T_world_camera[:3, 3]) > 1.0


def test_the_camera_never_moves_backwards_along_collinear_keys():
    """Keys on a line, unevenly spaced or unevenly timed: the camera moves along it one way only and stops at the
    ends (the centripetal spline has no overshoot within a segment; the monotone time map never runs back)."""

    def along_x(xs, times=None):
        keys = []
        for i, x in enumerate(xs):
            T = np.eye(4)
            T[0, 3] = x
            keys.append(Keyframe(T, 60.0, None if times is None else times[i]))
        return np.array([c.position[0] for c in interpolate_keyframes(keys, 200, W, H, ease=False)])

    for xs, times in (((0.0, 1.0, 1.1, 5.0), None), ((0.0, 1.0, 2.0), (0.0, 0.1, 10.0))):
        x = along_x(xs, times)
        assert np.diff(x).min() >= -1e-12, (xs, times)
        assert x.min() >= xs[0] - 1e-12 and x.max() <= xs[-1] + 1e-12


def rotation_steps(cams) -> np.ndarray:
    """[F - 1, 3] the rotation vector from each camera's orientation to the next (world frame)."""
    out = []
    for a, b in zip(cams[:-1], cams[1:], strict=True):
        R = b.T_world_camera[:3, :3] @ a.T_world_camera[:3, :3].T
        angle = math.acos(np.clip((np.trace(R) - 1) / 2, -1, 1))
        axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
        out.append(axis / max(np.linalg.norm(axis), 1e-300) * angle)
    return np.array(out)


def test_the_turn_rate_has_no_jump_at_the_keys():
    """SQUAD is C1: at every key the angular velocity going out matches the one coming in (here to 10%; the
    frames are 1/100 of a segment apart), for an open path and a loop, whose keys turn about different axes."""
    eyes = [(0, -1, -4), (3, -2, -2), (4, 0, 2), (0, -3, 4), (-3, -1, 1)]
    targets = [(0, 0, 0), (0.5, 0, 0), (0, 0.5, 0), (0, 0, 0.5), (0.2, 0.2, 0)]
    keys = [Keyframe(look_at_pose(e, t, [0, -1, 0]), 60.0, float(i)) for i, (e, t) in enumerate(zip(eyes, targets))]
    for closed, n in ((False, 401), (True, 500)):
        w = rotation_steps(interpolate_keyframes(keys, n, W, H, ease=False, closed=closed))
        for k in (100, 200, 300):  # the frames at keys 1, 2 and 3
            assert np.linalg.norm(w[k] - w[k - 1]) < 0.1 * np.linalg.norm(w[k]), (closed, k)


def test_a_loop_around_the_scene_turns_evenly_through_its_first_key():
    """Three keys around a point, 120 degrees apart, looking at it, played as a loop: the view turns at an even
    rate all the way round, across the return to the first key too (whose quaternion is on the other side of the
    sphere from the last key's)."""
    keys = [
        Keyframe(look_at_pose([4 * math.cos(a), -1, 4 * math.sin(a)], [0, 0, 0], [0, -1, 0]), 60.0)
        for a in np.radians([0, 120, 240])
    ]
    cams = interpolate_keyframes(keys, 60, W, H, closed=True)
    steps = np.linalg.norm(rotation_steps(cams + cams[:1]), axis=1)
    assert steps.max() < 1.2 * np.median(steps)


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
