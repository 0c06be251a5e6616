"""Float64 references derived from first principles, for tests of the covariance, projection and SH math.

Nothing here imports the project's geometry (renderer/paths/rotations.py, prepare_covariances, the kernels or
their twins): a reference that shared their code would share their mistakes. Rotations are built by
Rodrigues' formula and by composing elementary rotations, the projection's Jacobian by central differences of
the pinhole map, and the SH basis from associated Legendre polynomials.
"""

from __future__ import annotations

import math

import numpy as np


def rodrigues(axis, angle: float) -> np.ndarray:
    """[3, 3] rotation by `angle` radians about `axis`, right-handed: R = I + sin(a) K + (1 - cos(a)) K^2."""
    n = np.asarray(axis, dtype=np.float64)
    n = n / np.linalg.norm(n)
    K = np.array([[0.0, -n[2], n[1]], [n[2], 0.0, -n[0]], [-n[1], n[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def axis_angle_quat(axis, angle: float) -> np.ndarray:
    """(w, x, y, z) of the same rotation: (cos(a/2), sin(a/2) n), the definition of a rotation quaternion."""
    n = np.asarray(axis, dtype=np.float64)
    n = n / np.linalg.norm(n)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * n])


def elementary(axis: str, angle: float) -> np.ndarray:
    """[3, 3] right-handed rotation about a coordinate axis, written out."""
    c, s = math.cos(angle), math.sin(angle)
    return {
        "x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
        "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
        "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    }[axis].astype(np.float64)


# Written again on purpose beside renderer/paths/rotations.py's `qmul`: a reference shares none of the code.
def hamilton(p, q) -> np.ndarray:
    """Quaternion product p q (w, x, y, z): the rotation q first, then p."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return np.array([
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    ])  # fmt: skip


def covariance(R: np.ndarray, scales) -> np.ndarray:
    """[3, 3] covariance of a Gaussian with standard deviations `scales` along the columns of R (its local
    axes in the world): R diag(s^2) R^T."""
    return R @ np.diag(np.asarray(scales, dtype=np.float64) ** 2) @ R.T


def upper(S: np.ndarray) -> np.ndarray:
    """(xx, xy, xz, yy, yz, zz) of a symmetric [3, 3]: the kernels' covariance layout."""
    return np.array([S[0, 0], S[0, 1], S[0, 2], S[1, 1], S[1, 2], S[2, 2]])


def pinhole(p_cam: np.ndarray, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """Screen position (pixels; pixel centres at +0.5) of a camera-frame point, OpenCV axes."""
    x, y, z = p_cam
    return np.array([fx * x / z + cx, fy * y / z + cy])


def jacobian(f, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """[2, 3] derivative of f at p by central differences (float64: relative error ~1e-10 here)."""
    cols = []
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        cols.append((f(p + e) - f(p - e)) / (2 * h))
    return np.stack(cols, axis=1)


def ewa_conic(
    mean_world, cov_world, T_world_camera, fx, fy, cx, cy, eps2d: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """(mean2d [2], conic [2, 2]) of a world Gaussian by the EWA splatting approximation (Zwicker et al.
    2002): the pinhole map linearised at the mean, Sigma_2d = J W Sigma W^T J^T + eps2d I, conic its inverse.
    Valid where gsplat's frustum clamp of the Jacobian does not act (means inside 1.3x the view)."""
    R_wc = T_world_camera[:3, :3]
    p_cam = R_wc.T @ (np.asarray(mean_world, dtype=np.float64) - T_world_camera[:3, 3])
    sigma_cam = R_wc.T @ cov_world @ R_wc
    J = jacobian(lambda p: pinhole(p, fx, fy, cx, cy), p_cam)
    sigma_2d = J @ sigma_cam @ J.T + eps2d * np.eye(2)
    return pinhole(p_cam, fx, fy, cx, cy), np.linalg.inv(sigma_2d)


def assoc_legendre(l: int, m: int, x: float) -> float:  # noqa: E741  (l is the SH degree's usual name)
    """P_l^m(x), m >= 0, with the Condon-Shortley phase (-1)^m, by the standard upward recurrence in l."""
    pmm = 1.0
    if m > 0:
        s = math.sqrt((1.0 - x) * (1.0 + x))
        fact = 1.0
        for _ in range(m):
            pmm *= -fact * s
            fact += 2.0
    if l == m:
        return pmm
    pmm1 = x * (2 * m + 1) * pmm
    if l == m + 1:
        return pmm1
    for ll in range(m + 2, l + 1):
        pmm, pmm1 = pmm1, ((2 * ll - 1) * x * pmm1 - (ll + m - 1) * pmm) / (ll - m)
    return pmm1


def real_sh(l: int, m: int, direction) -> float:  # noqa: E741
    """Real spherical harmonic Y_l^m at a unit direction, from P_l^|m| with the Condon-Shortley phase kept:
    sqrt(2) K cos(m phi) P for m > 0, sqrt(2) K sin(|m| phi) P for m < 0, K P for m = 0, with
    K = sqrt((2l + 1) / (4 pi) (l - |m|)! / (l + |m|)!). The basis 3DGS and gsplat index as k = l^2 + l + m."""
    x, y, z = (float(v) for v in direction)
    phi = math.atan2(y, x)
    am = abs(m)
    K = math.sqrt((2 * l + 1) / (4 * math.pi) * math.factorial(l - am) / math.factorial(l + am))
    P = assoc_legendre(l, am, z)
    if m > 0:
        return math.sqrt(2.0) * K * math.cos(m * phi) * P
    if m < 0:
        return math.sqrt(2.0) * K * math.sin(am * phi) * P
    return K * P


def sh_basis(direction, degree: int) -> np.ndarray:
    """[(degree + 1)^2] real SH at a unit direction, in the order k = l^2 + l + m."""
    return np.array([real_sh(l, m, direction) for l in range(degree + 1) for m in range(-l, l + 1)])  # noqa: E741
