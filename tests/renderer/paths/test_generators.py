"""Generated camera paths (renderer/paths/generators.py): orbit, spiral and fly-through sized to the scene.

Poses are T_world_camera, OpenCV axes: column 2 of the rotation is the viewing direction, column 1 the
image "down" direction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from renderer import default_camera
from renderer.paths import (
    default_flythrough_keyframes,
    flythrough_path,
    orbit_path,
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
    # and it turns counter-clockwise seen from above (right-handed about up): the camera moves to its own right
    assert np.cross(a, cams[1].position - f.target) @ f.up > 0
    assert (cams[1].position - cams[0].position) @ cams[0].T_world_camera[:3, 0] > 0


def test_orbit_radius_and_rise(scene):
    f = scene_frame(scene, W, H)
    cams = orbit_path(scene, W, H, 5, radius=2.0, rise=0.5, turns=0.5)
    for c in cams:
        d = c.position - f.target
        assert d @ f.up == pytest.approx(0.5)
        assert np.linalg.norm(d - (d @ f.up) * f.up) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="frames 0"):
        orbit_path(scene, W, H, 0)
    with pytest.raises(ValueError, match="radius and rise are both zero"):
        orbit_path(scene, W, H, 4, radius=0.0, rise=0.0)


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
    # d0 (1 - zoom sin(2 pi u)): in closest a quarter of the way (frame 10 of 40), furthest at three quarters
    assert dists[10] == pytest.approx(0.75 * f.distance) and dists[30] == pytest.approx(1.25 * f.distance)
    with pytest.raises(ValueError, match="zoom 1.0"):  # the camera would reach the look-at point
        spiral_path(scene, W, H, 4, zoom=1.0)


def test_a_wide_spiral_swing_stays_short_of_the_pole(scene):
    """An elevation swing past 90 degrees is held at 80: the camera never passes over the top of the look-at point
    (where its heading would flip), so it stays on the side the turn has brought it to."""
    from renderer.paths import axis_angle

    f = scene_frame(scene, W, H)
    n = 40
    cams = spiral_path(scene, W, H, n, turns=1, swing_deg=85)
    for i, c in enumerate(cams):
        d = c.position - f.target
        horiz = d - (d @ f.up) * f.up
        assert horiz @ (axis_angle(f.up, 2 * math.pi * i / n) @ f.start_dir) > 0, i
        assert math.degrees(math.asin(d @ f.up / np.linalg.norm(d))) <= 80 + 1e-9
        assert looks_at(c, f.target) < 1e-4


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
