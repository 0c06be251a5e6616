"""Camera paths: sequences of `Camera` for render-to-video and the viewer's playback.

Frames: every pose here is `T_world_camera` (camera-to-world, [4, 4] float64, OpenCV axes as stated in
`renderer/camera.py`); file formats with other conventions are converted in `renderer/camera_path.py`.

Generated paths are sized to the scene through its default camera: they look at the scene's look-at point
(the centre of `camera.framing_sphere`) from the default framing distance, around the scene's
up axis.

    orbit_path       a circle (radius, height above the look-at point, turns)
    spiral_path      a circle whose height and distance swing while it turns
    flythrough_path  a smooth path through keyframes (default: a few views sized to the scene)

Keyframe interpolation (`interpolate_keyframes`):
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

from .camera import Camera, default_camera, framing_sphere, look_at_pose, up_vector

# -------------------------------------------------------------------------------------------------- keyframes


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
        self.T_world_camera = np.asarray(self.T_world_camera, dtype=np.float64).reshape(4, 4)

    @classmethod
    def from_camera(cls, camera: Camera, time_s: float | None = None) -> Keyframe:
        return cls(camera.T_world_camera.copy(), camera.fov_y_deg, time_s)


# -------------------------------------------------------------------------------------------------- generated


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
    """`n_frames` cameras circling the scene's look-at point, starting at the default view.

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
        eye = f.target + r * _rotate(f.start_dir, f.up, angle) + h * f.up
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
        horiz = _rotate(f.start_dir, f.up, angle)
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
        horiz = _rotate(f.start_dir, f.up, math.radians(az))
        e = math.radians(el)
        eye = f.target + f.distance * dist * (math.cos(e) * horiz + math.sin(e) * f.up)
        target = f.target + look * f.extent * _rotate(f.start_dir, f.up, math.radians(az + 90))
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


# ---------------------------------------------------------------------------------------------- interpolation


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
    positions = np.stack([k.T_world_camera[:3, 3] for k in keys])  # [K, 3]
    quats = quats_continuous(np.stack([rotmat_to_quat(k.T_world_camera[:3, :3]) for k in keys]))  # [K, 4]
    fovs = np.array([float(k.fov_y_deg) for k in keys])  # [K]
    if closed:  # the loop closes through a repeated first key
        positions = np.concatenate([positions, positions[:1]])
        q0 = quats[0] if quats[0] @ quats[-1] >= 0 else -quats[0]
        quats = np.concatenate([quats, q0[None]])
        fovs = np.concatenate([fovs, fovs[:1]])
    key_times = _key_times(keys, positions, quats, closed, loop_time_s)  # [K'] increasing, starts at 0

    total = key_times[-1]
    if n_frames == 1 or total <= 0:
        times = np.zeros(n_frames)
    else:
        u = np.arange(n_frames) / (n_frames if closed else n_frames - 1)  # [F] in [0, 1]
        if ease and not closed:
            u = _ease_in_out(u)
        times = total * u
    params = _monotone_cubic(key_times, np.arange(len(key_times), dtype=np.float64), times)  # [F] in [0, K'-1]

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


# ---------------------------------------------------------------------------------------------- quaternions
# Unit quaternions (w, x, y, z), Hamilton product, q and -q the same rotation.


def rotmat_to_quat(R: np.ndarray) -> np.ndarray:
    """[3, 3] rotation -> [4] unit quaternion (w, x, y, z),
    w >= 0 (Shepperd's method: stable near 180 deg)."""
    R = np.asarray(R, dtype=np.float64)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = np.array([(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quat_to_rotmat(q: np.ndarray) -> np.ndarray:
    """[4] quaternion (w, x, y, z), any norm > 0 -> [3, 3] rotation."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip


def quats_continuous(q: np.ndarray) -> np.ndarray:
    """[K, 4] -> [K, 4] with signs flipped so consecutive quaternions lie in the same hemisphere (the
    short way round between every pair of keys)."""
    q = np.array(q, dtype=np.float64)
    for i in range(1, len(q)):
        if q[i] @ q[i - 1] < 0:
            q[i] = -q[i]
    return q


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])  # fmt: skip


def _qconj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def _qlog(q: np.ndarray) -> np.ndarray:
    """Log of a unit quaternion: [3] rotation vector / 2."""
    v = q[1:]
    n = np.linalg.norm(v)
    if n < 1e-12:
        return np.zeros(3)
    return v / n * math.atan2(n, q[0])


def _qexp(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    if n < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[math.cos(n)], v / n * math.sin(n)])


def quat_slerp(q0: np.ndarray, q1: np.ndarray, t: float) -> np.ndarray:
    """Spherical linear interpolation between unit quaternions, the short way round."""
    q0 = np.asarray(q0, np.float64)
    q1 = np.asarray(q1, np.float64)
    dot = float(q0 @ q1)
    if dot < 0:
        q1, dot = -q1, -dot
    if dot > 0.9995:  # nearly equal: normalised lerp is exact to rounding and avoids 0/0
        q = q0 + t * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(dot)
    return (math.sin((1 - t) * theta) * q0 + math.sin(t * theta) * q1) / math.sin(theta)


def _squad_control(q_prev: np.ndarray, q: np.ndarray, q_next: np.ndarray) -> np.ndarray:
    """Shoemake's inner control point s_i = q_i exp(-(log(q_i^-1 q_{i+1}) + log(q_i^-1 q_{i-1})) / 4)."""
    qi = _qconj(q)
    return _qmul(q, _qexp(-(_qlog(_qmul(qi, q_next)) + _qlog(_qmul(qi, q_prev))) / 4))


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


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues rotation of v about the unit `axis`."""
    axis = axis / np.linalg.norm(axis)
    return v * math.cos(angle) + np.cross(axis, v) * math.sin(angle) + axis * float(axis @ v) * (1 - math.cos(angle))
