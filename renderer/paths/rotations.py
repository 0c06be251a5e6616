"""Rotations for camera paths and the viewer's camera controller: axis-angle matrices and unit quaternions.

Quaternions are (w, x, y, z) with the Hamilton product; q and -q are the same rotation. Rotation matrices
act on column vectors (v' = R v), as `T_world_camera[:3, :3]` does (renderer/camera.py).
"""

from __future__ import annotations

import math

import numpy as np


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """[3, 3] right-handed rotation by `angle` radians about `axis` (any length > 0; Rodrigues)."""
    a = np.asarray(axis, np.float64)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)


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


def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product a b (the rotation b, then a)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])  # fmt: skip


def qconj(q: np.ndarray) -> np.ndarray:
    """The conjugate: the inverse rotation of a unit quaternion."""
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def qlog(q: np.ndarray) -> np.ndarray:
    """Log of a unit quaternion: [3] rotation vector / 2."""
    v = q[1:]
    n = np.linalg.norm(v)
    if n < 1e-12:
        return np.zeros(3)
    return v / n * math.atan2(n, q[0])


def qexp(v: np.ndarray) -> np.ndarray:
    """Exp of [3] rotation vector / 2: the unit quaternion (the inverse of `qlog`)."""
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
