"""Generated camera paths: an orbit, a spiral and a fly-through, sized to the scene.

They are placed through the scene's default camera (`renderer.camera.default_camera`): they look at the
scene's look-at point (the centre of `renderer.camera.framing_sphere`) from the default framing distance, around
the scene's up axis. Poses are `T_world_camera`, OpenCV axes.

    orbit_path       a circle (radius, height above the look-at point, turns)
    spiral_path      a circle whose height and distance swing while it turns
    flythrough_path  a smooth path through keyframes (default: a few views sized to the scene)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..camera import Camera, default_camera, framing_sphere, look_at_pose, up_vector
from .rotations import axis_angle
from .splines import Keyframe, interpolate_keyframes


@dataclass
class SceneFrame:
    """Where generated paths are placed: the look-at point, the up axis and the default camera geometry.

    Attributes:
        target: [3] the look-at point (the centre of `framing_sphere`).
        up: [3] unit world up vector.
        start_dir: [3] unit horizontal direction from the target towards the default camera.
        distance: default framing distance (the robust box filling the field of view).
        elevation_deg: elevation of the default camera above the horizon.
        extent: the radius of `framing_sphere` (half the diagonal of the framing box).
    """

    target: np.ndarray
    up: np.ndarray
    start_dir: np.ndarray
    distance: float
    elevation_deg: float
    extent: float


def scene_frame(scene, width: int, height: int, *, up: str | None = None, fov_y_deg: float = 60.0) -> SceneFrame:
    """The frame generated paths are built in, derived from the scene's default camera."""
    start = default_camera(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    upv = up_vector(up or scene.up_axis)
    target, radius = framing_sphere(scene)
    offset = start.position - target
    distance = float(np.linalg.norm(offset))
    vertical = float(offset @ upv)
    horiz = offset - vertical * upv
    horiz /= max(np.linalg.norm(horiz), 1e-12)
    return SceneFrame(
        target=target,
        up=upv,
        start_dir=horiz,
        distance=distance,
        elevation_deg=math.degrees(math.asin(max(-1.0, min(1.0, vertical / max(distance, 1e-12))))),
        extent=radius,
    )


def orbit_path(
    scene,
    width: int,
    height: int,
    n_frames: int,
    *,
    turns: float = 1.0,
    radius: float | None = None,
    rise: float | None = None,
    up: str | None = None,
    fov_y_deg: float = 60.0,
) -> list[Camera]:
    """`n_frames` cameras circling the scene's look-at point, starting at the default view, counter-clockwise
    seen from above (right-handed about the up axis: the camera moves to its own right).

    Args:
        turns: revolutions over the path; frame i is at angle 2 pi turns i / n_frames, so a whole number of
            turns loops seamlessly (the last frame is not a repeat of the first).
        radius: horizontal distance from the up axis through the look-at point (world units);
            None = the default camera's.
        rise: camera height above the look-at point along the up axis (world units); None = the default
            camera's (25 degrees above the horizon).
    """
    if n_frames < 1:
        raise ValueError(f"frames {n_frames}: need at least 1")
    f = scene_frame(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    elev = math.radians(f.elevation_deg)
    r = f.distance * math.cos(elev) if radius is None else float(radius)
    h = f.distance * math.sin(elev) if rise is None else float(rise)
    if r <= 0 and abs(h) <= 0:
        raise ValueError("orbit: radius and rise are both zero (the camera would sit on the look-at point)")
    cams = []
    for i in range(n_frames):
        angle = 2 * math.pi * turns * i / n_frames
        eye = f.target + r * axis_angle(f.up, angle) @ f.start_dir + h * f.up
        cams.append(Camera.look_at(eye, f.target, up=f.up, width=width, height=height, fov_y_deg=fov_y_deg))
    return cams


def spiral_path(
    scene,
    width: int,
    height: int,
    n_frames: int,
    *,
    turns: float = 2.0,
    swing_deg: float = 20.0,
    zoom: float = 0.25,
    up: str | None = None,
    fov_y_deg: float = 60.0,
) -> list[Camera]:
    """`n_frames` cameras turning around the look-at point while rising and falling and moving in and out.

    The elevation follows elev0 + swing_deg sin(2 pi u) and the distance d0 (1 - zoom sin(2 pi u)) over
    u = i / n_frames in [0, 1): one full swing per path whatever `turns`, so the path closes on itself
    when `turns` is whole.

    Args:
        turns: revolutions about the up axis.
        swing_deg: amplitude of the elevation swing, degrees (kept within +-80 degrees of the horizon).
        zoom: relative amplitude of the distance change, in [0, 0.9].
    """
    if n_frames < 1:
        raise ValueError(f"frames {n_frames}: need at least 1")
    if not 0.0 <= zoom <= 0.9:
        raise ValueError(f"spiral zoom {zoom}: must be in [0, 0.9]")
    f = scene_frame(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    cams = []
    for i in range(n_frames):
        u = i / n_frames
        angle = 2 * math.pi * turns * u
        elev = math.radians(max(-80.0, min(80.0, f.elevation_deg + swing_deg * math.sin(2 * math.pi * u))))
        dist = f.distance * (1.0 - zoom * math.sin(2 * math.pi * u))
        horiz = axis_angle(f.up, angle) @ f.start_dir
        eye = f.target + dist * (math.cos(elev) * horiz + math.sin(elev) * f.up)
        cams.append(Camera.look_at(eye, f.target, up=f.up, width=width, height=height, fov_y_deg=fov_y_deg))
    return cams


def default_flythrough_keyframes(
    scene, width: int, height: int, *, up: str | None = None, fov_y_deg: float = 60.0
) -> list[Keyframe]:
    """Five keyframes sized to the scene: start far at the default view, swoop in low and around to the
    far side, and climb out above it. Each key looks at a point near the look-at point (offset a little
    so the view drifts rather than staying locked on one spot)."""
    f = scene_frame(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    # (azimuth deg, elevation deg, distance factor, look-at offset along the start direction x extent)
    plan = [
        (0, f.elevation_deg, 1.0, 0.0),
        (60, 10.0, 0.7, 0.15),
        (150, 5.0, 0.55, 0.0),
        (240, 20.0, 0.7, -0.15),
        (330, 45.0, 1.1, 0.0),
    ]
    keys = []
    for az, el, dist, look in plan:
        horiz = axis_angle(f.up, math.radians(az)) @ f.start_dir
        e = math.radians(el)
        eye = f.target + f.distance * dist * (math.cos(e) * horiz + math.sin(e) * f.up)
        target = f.target + look * f.extent * axis_angle(f.up, math.radians(az + 90)) @ f.start_dir
        keys.append(Keyframe(look_at_pose(eye, target, f.up), fov_y_deg))
    return keys


def flythrough_path(
    scene,
    width: int,
    height: int,
    n_frames: int,
    *,
    keyframes: Sequence[Keyframe] | None = None,
    up: str | None = None,
    fov_y_deg: float = 60.0,
    ease: bool = True,
    closed: bool = False,
) -> list[Camera]:
    """A smooth path through `keyframes` (default: `default_flythrough_keyframes`), see
    `interpolate_keyframes` for the splines and timing."""
    keys = (
        list(keyframes)
        if keyframes is not None
        else default_flythrough_keyframes(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    )
    return interpolate_keyframes(keys, n_frames, width, height, ease=ease, closed=closed)
