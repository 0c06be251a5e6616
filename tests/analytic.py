"""Float64 references derived from first principles, for tests of the covariance, projection and SH math.

Nothing here imports the project's geometry or numbers (renderer/paths/rotations.py, prepare_covariances,
kernels/constants.py, the kernels or their twins): a reference that shared their code would share their
mistakes. Rotations are built by Rodrigues' formula, by composing elementary rotations and from a quaternion's
action v -> q v q*, the projection's Jacobian by central differences of the pinhole map, the SH basis from
associated Legendre polynomials, and an image by compositing every Gaussian at every pixel centre with
gsplat's rules written out.
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
    """Quaternion product p q (w, x, y, z): the rotation q first, then p. [4] each, or [..., 4] batches."""
    pw, px, py, pz = np.moveaxis(np.asarray(p, dtype=np.float64), -1, 0)
    qw, qx, qy, qz = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack([
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    ], axis=-1)  # fmt: skip


def quat_matrix(q) -> np.ndarray:
    """[..., 3, 3] rotation of the quaternion q (w, x, y, z; [4] or [..., 4], any nonzero length) by its
    definition: v -> q v q* on the pure quaternion (0, v), column i the image of the axis e_i. No closed-form
    matrix is written, so this does not share a mistake with the code's (scenes/, the renderer's covariances)."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    cols = []
    for i in range(3):
        e = np.zeros(q.shape)
        e[..., 1 + i] = 1.0
        cols.append(hamilton(hamilton(q, e), conj)[..., 1:])
    return np.stack(cols, axis=-1)


def covariance(R: np.ndarray, scales) -> np.ndarray:
    """[..., 3, 3] covariance of a Gaussian with standard deviations `scales` ([..., 3]) along the columns of
    R ([..., 3, 3]; its local axes in the world): R diag(s^2) R^T."""
    R = np.asarray(R, dtype=np.float64)
    return (R * np.asarray(scales, dtype=np.float64)[..., None, :] ** 2) @ np.swapaxes(R, -1, -2)


def upper(S: np.ndarray) -> np.ndarray:
    """(xx, xy, xz, yy, yz, zz) of a symmetric [..., 3, 3]: the kernels' covariance layout."""
    return np.stack([S[..., 0, 0], S[..., 0, 1], S[..., 0, 2], S[..., 1, 1], S[..., 1, 2], S[..., 2, 2]], axis=-1)


def pinhole(p_cam: np.ndarray, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """Screen position (pixels; pixel centres at +0.5) of a camera-frame point, OpenCV axes."""
    x, y, z = p_cam
    return np.array([fx * x / z + cx, fy * y / z + cy])


def orthographic(p_cam: np.ndarray, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """Screen position of a camera-frame point under an orthographic camera: fx, fy in pixels per world unit."""
    x, y, _ = p_cam
    return np.array([fx * x + cx, fy * y + cy])


def jacobian(f, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """[2, 3] derivative of f at p by central differences (float64: relative error ~1e-10 here)."""
    cols = []
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        cols.append((f(p + e) - f(p - e)) / (2 * h))
    return np.stack(cols, axis=1)


def ewa_conic(
    mean_world, cov_world, T_world_camera, fx, fy, cx, cy, eps2d: float = 0.3, ortho: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(mean2d [2], conic [2, 2]) of a world Gaussian by the EWA splatting approximation (Zwicker et al.
    2002): the camera's map (pinhole, or `orthographic`) linearised at the mean, Sigma_2d = J W Sigma W^T J^T +
    eps2d I, conic its inverse. Valid where gsplat's frustum clamp of the Jacobian does not act (means inside
    1.3x the view)."""
    R_wc = T_world_camera[:3, :3]
    p_cam = R_wc.T @ (np.asarray(mean_world, dtype=np.float64) - T_world_camera[:3, 3])
    sigma_cam = R_wc.T @ cov_world @ R_wc
    project = orthographic if ortho else pinhole
    J = jacobian(lambda p: project(p, fx, fy, cx, cy), p_cam)
    sigma_2d = J @ sigma_cam @ J.T + eps2d * np.eye(2)
    return project(p_cam, fx, fy, cx, cy), np.linalg.inv(sigma_2d)


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


# gsplat 1.5.3's compositing rules (docs/architecture.md, "Exactness rules"), typed here from that statement and
# not read from kernels/constants.py: a test against `composite` fails when the code's numbers change.
ALPHA_CLAMP = 0.999  # alpha = min(0.999, o exp(-sigma))
ALPHA_SKIP = 1.0 / 255.0  # a Gaussian below this alpha at a pixel centre is skipped there
T_STOP = 1e-4  # a pixel stops before the Gaussian that would take its transmittance to this or below


def composite(means2d, conics, opacities, colors, order, width: int, height: int, background):
    """(rgb [H, W, 3], alpha [H, W]) in float64: every Gaussian in `order` (nearest first) blended at every
    pixel centre (x + 0.5, y + 0.5) by the rules above, one Gaussian at a time as the definition reads; no
    tiles, no lists. means2d [N, 2], conics [N, 3] (a, b, c of Q = a dx^2 + 2 b dx dy + c dy^2), opacities [N],
    colors [N, 3], order [M] indices."""
    means2d, conics, colors = (np.asarray(v, dtype=np.float64) for v in (means2d, conics, colors))
    opacities = np.asarray(opacities, dtype=np.float64)
    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    px, py = xs.ravel() + 0.5, ys.ravel() + 0.5
    T = np.ones(px.shape)
    C = np.zeros((px.size, 3))
    alive = np.ones(px.shape, dtype=bool)
    for i in np.asarray(order).tolist():
        a, b, c = conics[i]
        dx, dy = means2d[i, 0] - px, means2d[i, 1] - py
        sigma = 0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
        alpha = np.minimum(ALPHA_CLAMP, opacities[i] * np.exp(-sigma))
        ok = alive & (sigma >= 0) & (alpha >= ALPHA_SKIP)
        nxt = T * (1 - alpha)
        stop = ok & (nxt <= T_STOP)
        blend = ok & ~stop
        C += np.where(blend, alpha * T, 0.0)[:, None] * colors[i]
        T = np.where(blend, nxt, T)
        alive &= ~stop
    rgb = C + T[:, None] * np.asarray(background, dtype=np.float64)
    return rgb.reshape(height, width, 3), (1 - T).reshape(height, width)
