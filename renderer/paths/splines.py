"""Keyframes and the splines through them: the smooth camera motion of fly-throughs, keyframe files and the
viewer's playback.

Poses are `T_world_camera` (camera-to-world, [4, 4] float64, OpenCV axes as stated in `renderer/camera.py`).

`interpolate_keyframes`:
    positions   centripetal Catmull-Rom (no cusps or self-intersections within a segment)
    rotations   SQUAD (Shoemake's spherical quadrangle spline on unit quaternions, C1 across keyframes)
    fov         Catmull-Rom on the vertical field of view, clamped to (1, 179) degrees
    timing      monotone cubic (Fritsch-Carlson) map from time to keyframe index, so key times are hit
                exactly and the speed has no jumps; optional ease-in/out at the ends of the whole path
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..camera import Camera
from .rotations import qconj, qexp, qlog, qmul, quat_slerp, quat_to_rotmat, quats_continuous, rotmat_to_quat

# Keys without times: how long a key-to-key transition lasts by default, in the viewer's playback and in the
# keyframe files it saves (so the window plays what `warpsplat render --path FILE.json` renders).
SECONDS_PER_TRANSITION = 2.0


@dataclass
class Keyframe:
    """One key pose of a path.

    Attributes:
        T_world_camera: [4, 4] float64 camera-to-world pose, OpenCV axes.
        fov_y_deg: vertical field of view in degrees.
        time_s: when the path passes through this key (seconds from the start); None = spaced by
            `interpolate_keyframes`' default timing.
    """

    T_world_camera: np.ndarray
    fov_y_deg: float = 60.0
    time_s: float | None = None

    def __post_init__(self):
        # a copy, as a Camera keeps (renderer/camera.py): keys made from one array filled per key stay apart
        self.T_world_camera = np.array(self.T_world_camera, dtype=np.float64).reshape(4, 4)

    @classmethod
    def from_camera(cls, camera: Camera, time_s: float | None = None) -> Keyframe:
        return cls(camera.T_world_camera.copy(), camera.fov_y_deg, time_s)


def interpolate_keyframes(
    keyframes: Sequence[Keyframe],
    n_frames: int,
    width: int,
    height: int,
    *,
    ease: bool = True,
    closed: bool = False,
    loop_time_s: float | None = None,
    cx: float | None = None,
    cy: float | None = None,
) -> list[Camera]:
    """Sample `n_frames` cameras along the spline through `keyframes`.

    Timing: keys with `time_s` set are passed at those times (all keys must then have one, increasing);
    otherwise keys are spaced by the distance travelled plus the angle turned (so speed is roughly even).
    Frame i is at time T * i / (n_frames - 1) for an open path (first and last frames are the first and
    last keys) and T * i / n_frames for a closed one (the loop does not repeat its first frame). With
    `ease`, the path starts and ends at rest (a cubic ease-in/out on the whole path's time).

    Args:
        keyframes: at least 1 (1 key gives a still shot); a closed path needs at least 3.
        n_frames: cameras to produce, >= 1.
        width, height: image size of the produced cameras.
        ease: slow in and out at the ends (ignored for closed paths, which have no ends).
        closed: loop back from the last key to the first.
        loop_time_s: for a closed path with key times, when it is back at the first key; None = one mean
            key interval after the last key.
        cx, cy: principal point in pixels; None = the image centre.

    Returns:
        n_frames `Camera`s, square pixels, fx = fy from each frame's interpolated vertical field of view.
    """
    if n_frames < 1:
        raise ValueError(f"frames {n_frames}: need at least 1")
    keys = list(keyframes)
    if not keys:
        raise ValueError("keyframes: need at least one")
    if closed and len(keys) < 3:
        raise ValueError(f"closed path: need at least 3 keyframes, got {len(keys)}")
    positions, quats = _key_poses(keys, closed)  # [K', 3], [K', 4]
    fovs = np.array([float(k.fov_y_deg) for k in (keys + keys[:1] if closed else keys)])  # [K']
    knots = _key_times(keys, positions, quats, closed, loop_time_s)  # [K'] increasing, starts at 0

    total = knots[-1]
    if n_frames == 1 or total <= 0:
        times = np.zeros(n_frames)
    else:
        u = np.arange(n_frames) / (n_frames if closed else n_frames - 1)  # [F] in [0, 1]
        if ease and not closed:
            u = _ease_in_out(u)
        times = total * u
    params = _monotone_cubic(knots, np.arange(len(knots), dtype=np.float64), times)  # [F] in [0, K'-1]

    cams = []
    for s in params:
        pos = _catmull_rom(positions, s, closed)
        q = _squad(quats, s, closed)
        fov = float(np.clip(_catmull_rom(fovs[:, None], s, closed)[0], 1.0, 179.0))
        T = np.eye(4)
        T[:3, :3] = quat_to_rotmat(q)
        T[:3, 3] = pos
        cam = Camera.from_fov(width, height, fov, T)
        if cx is not None or cy is not None:
            cam.cx = cam.cx if cx is None else float(cx)
            cam.cy = cam.cy if cy is None else float(cy)
        cams.append(cam)
    return cams


def key_times(keys: Sequence[Keyframe], *, closed: bool = False, loop_time_s: float | None = None) -> np.ndarray:
    """[K'] the times at which `interpolate_keyframes` passes the keys, from 0 (K' = K, or K + 1 when closed:
    the last is the return to the first key). See `_key_times` for the rule."""
    keys = list(keys)
    positions, quats = _key_poses(keys, closed)
    return _key_times(keys, positions, quats, closed, loop_time_s)


def _key_poses(keys: list[Keyframe], closed: bool) -> tuple[np.ndarray, np.ndarray]:
    """([K', 3] positions, [K', 4] unit quaternions, each the short way from the one before); a closed path
    repeats the first key at the end, so the loop closes through it."""
    positions = np.stack([k.T_world_camera[:3, 3] for k in keys])
    quats = quats_continuous(np.stack([rotmat_to_quat(k.T_world_camera[:3, :3]) for k in keys]))
    if closed:
        positions = np.concatenate([positions, positions[:1]])
        q0 = quats[0] if quats[0] @ quats[-1] >= 0 else -quats[0]
        quats = np.concatenate([quats, q0[None]])
    return positions, quats


def _key_times(
    keys: list[Keyframe],
    positions: np.ndarray,
    quats: np.ndarray,
    closed: bool,
    loop_time_s: float | None = None,
) -> np.ndarray:
    """[K'] key times (K' = K, or K + 1 when closed). Given times are used as they are; otherwise a unit
    per segment proportional to distance + angle, the angle weighted by the path's scale (so a pure
    rotation still takes time)."""
    given = [k.time_s for k in keys]
    if any(t is not None for t in given):
        if any(t is None for t in given):
            raise ValueError("keyframes: either all or none have time_s")
        t = np.array(given, dtype=np.float64)
        if closed:
            step = np.diff(t).mean() if len(t) > 1 else 1.0
            t = np.concatenate([t, [t[0] + loop_time_s if loop_time_s is not None else t[-1] + step]])
        if np.any(np.diff(t) <= 0):
            raise ValueError("keyframes: time_s must increase strictly")
        return t - t[0]
    if len(positions) == 1:
        return np.zeros(1)
    dist = np.linalg.norm(np.diff(positions, axis=0), axis=1)  # [K'-1]
    dots = np.abs(np.sum(quats[1:] * quats[:-1], axis=1)).clip(0, 1)
    angle = 2 * np.arccos(dots)  # [K'-1] radians
    scale = max(float(np.linalg.norm(positions - positions.mean(0), axis=1).max()), 1e-9)
    seg = dist + angle * scale * 0.5
    if seg.sum() <= 0:
        seg = np.ones_like(seg)
    seg = np.maximum(seg, 0.05 * seg.mean())  # a key repeated in place still gets a moment
    return np.concatenate([[0.0], np.cumsum(seg)])


def _ease_in_out(u: np.ndarray) -> np.ndarray:
    """Cubic smoothstep: zero speed at both ends, 1.5x the mean speed in the middle."""
    return u * u * (3 - 2 * u)


def _monotone_cubic(x: np.ndarray, y: np.ndarray, xq: np.ndarray) -> np.ndarray:
    """Fritsch-Carlson monotone cubic Hermite interpolation of increasing (x, y) at xq (PCHIP-like):
    passes through every knot, never overshoots, C1."""
    if len(x) == 1:
        return np.zeros_like(xq, dtype=np.float64)
    h = np.diff(x)
    d = np.diff(y) / h  # secant slopes
    m = np.empty_like(y)
    m[0], m[-1] = d[0], d[-1]
    for i in range(1, len(x) - 1):
        if d[i - 1] * d[i] <= 0:
            m[i] = 0.0
        else:  # weighted harmonic mean (Fritsch-Butland), stays within the monotone region
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            m[i] = (w1 + w2) / (w1 / d[i - 1] + w2 / d[i])
    xq = np.clip(xq, x[0], x[-1])
    i = np.clip(np.searchsorted(x, xq, side="right") - 1, 0, len(x) - 2)
    t = (xq - x[i]) / h[i]
    t2, t3 = t * t, t * t * t
    h00, h10, h01, h11 = 2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + t, -2 * t3 + 3 * t2, t3 - t2
    return h00 * y[i] + h10 * h[i] * m[i] + h01 * y[i + 1] + h11 * h[i] * m[i + 1]


def _segment(n: int, s: float) -> tuple[int, float]:
    """Segment index and local parameter in [0, 1] for a global parameter s in [0, n - 1]."""
    if n == 1:
        return 0, 0.0
    i = min(int(math.floor(s)), n - 2)
    i = max(i, 0)
    return i, float(s - i)


def _neighbours(n: int, i: int, closed: bool) -> tuple[int, int, int, int]:
    """Indices of the 4 control points of segment i. Closed paths (last point = first) wrap around;
    open ones clamp, and the end tangents come from mirrored phantom points in the callers."""
    if closed:
        m = n - 1  # distinct points
        return (i - 1) % m, i, i + 1, (i + 2) % m
    return i - 1, i, i + 1, i + 2


def _catmull_rom(points: np.ndarray, s: float, closed: bool, alpha: float = 0.5) -> np.ndarray:
    """Centripetal (alpha = 0.5) Catmull-Rom spline through `points` [K, D] at parameter s in [0, K-1]."""
    n = len(points)
    i, t = _segment(n, s)
    if n == 1:
        return points[0].copy()
    a, b, c, d = _neighbours(n, i, closed)
    p1, p2 = points[b], points[c]
    # open ends: mirror the neighbour across the end point (a straight start / end)
    p0 = points[a] if a >= 0 else 2 * p1 - p2
    p3 = points[d] if d < n else 2 * p2 - p1

    def knot(ti: float, pa: np.ndarray, pb: np.ndarray) -> float:
        return ti + max(float(np.linalg.norm(pb - pa)), 1e-9) ** alpha

    t0 = 0.0
    t1 = knot(t0, p0, p1)
    t2 = knot(t1, p1, p2)
    t3 = knot(t2, p2, p3)
    if np.linalg.norm(p2 - p1) < 1e-12:
        return p1.copy()
    u = t1 + (t2 - t1) * t
    # Barry-Goldman pyramid
    a1 = (t1 - u) / (t1 - t0) * p0 + (u - t0) / (t1 - t0) * p1
    a2 = (t2 - u) / (t2 - t1) * p1 + (u - t1) / (t2 - t1) * p2
    a3 = (t3 - u) / (t3 - t2) * p2 + (u - t2) / (t3 - t2) * p3
    b1 = (t2 - u) / (t2 - t0) * a1 + (u - t0) / (t2 - t0) * a2
    b2 = (t3 - u) / (t3 - t1) * a2 + (u - t1) / (t3 - t1) * a3
    return (t2 - u) / (t2 - t1) * b1 + (u - t1) / (t2 - t1) * b2


def _squad_control(q_prev: np.ndarray, q: np.ndarray, q_next: np.ndarray) -> np.ndarray:
    """Shoemake's inner control point s_i = q_i exp(-(log(q_i^-1 q_{i+1}) + log(q_i^-1 q_{i-1})) / 4)."""
    qi = qconj(q)
    return qmul(q, qexp(-(qlog(qmul(qi, q_next)) + qlog(qmul(qi, q_prev))) / 4))


def _squad(quats: np.ndarray, s: float, closed: bool) -> np.ndarray:
    """SQUAD through continuous unit quaternions [K, 4] at parameter s in [0, K-1]."""
    n = len(quats)
    if n == 1:
        return quats[0].copy()
    i, t = _segment(n, s)
    if closed:
        m = n - 1
        prev_q, next_q = quats[(i - 1) % m], quats[(i + 2) % m]
    else:
        prev_q = quats[i - 1] if i >= 1 else quats[i]
        next_q = quats[i + 2] if i + 2 < n else quats[i + 1]
    q1, q2 = quats[i], quats[i + 1]
    prev_q = prev_q if prev_q @ q1 >= 0 else -prev_q
    next_q = next_q if next_q @ q2 >= 0 else -next_q
    s1 = _squad_control(prev_q, q1, q2)
    s2 = _squad_control(q1, q2, next_q)
    q = quat_slerp(quat_slerp(q1, q2, t), quat_slerp(s1, s2, t), 2 * t * (1 - t))
    return q / np.linalg.norm(q)
