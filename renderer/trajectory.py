"""Camera paths: sequences of `Camera` for render-to-video and the viewer's playback.

All generated paths are sized to the scene through its default camera (DESIGN.md): they orbit the same
look-at point at the same distance, in the plane perpendicular to the scene's up axis.
"""

from __future__ import annotations

import math

import numpy as np

from .camera import Camera, default_camera, look_at_pose, up_vector


def orbit_path(scene, width: int, height: int, n_frames: int, *, turns: float = 1.0, up: str | None = None,
               fov_y_deg: float = 60.0) -> list[Camera]:  # fmt: skip
    """`n_frames` cameras circling the scene's look-at point, starting at the default view."""
    if n_frames < 1:
        raise ValueError(f"frames {n_frames}: need at least 1")
    start = default_camera(scene, width, height, up=up, fov_y_deg=fov_y_deg)
    upv = up_vector(up or scene.up_axis)
    eye = start.position
    # the default camera looks at its target along +Z; recover the target at the framing distance
    target = scene.center().double().cpu().numpy()
    offset = eye - target
    cams = []
    for i in range(n_frames):
        angle = 2 * math.pi * turns * i / n_frames
        rotated = _rotate(offset, upv, angle)
        cams.append(start.with_pose(look_at_pose(target + rotated, target, upv)))
    return cams


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues rotation of v about the unit `axis`."""
    axis = axis / np.linalg.norm(axis)
    return (
        v * math.cos(angle)
        + np.cross(axis, v) * math.sin(angle)
        + axis * float(axis @ v) * (1 - math.cos(angle))
    )
