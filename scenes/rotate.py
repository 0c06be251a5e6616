"""Turn a scene so that a given direction points up in the PLY frame (-y): what `warpsplat convert --up` does.

A rotation R moves every Gaussian: means m -> R m, rotations q -> q_R q (so the covariance R S S R^T R^T turns
with it), log-scales and opacities unchanged. Colours must turn too: what was seen along direction d is seen
along R d after, so within each SH band the coefficients mix by that band's rotation matrix. The matrix is
found by least squares on sample directions: a band's functions span a space that rotations map onto itself,
so the fit is exact up to float rounding (checked against the renderer's SH in tests/scenes/test_rotate.py).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import torch

from .gaussians import GaussianScene

DOWN = np.array([0.0, -1.0, 0.0])  # the PLY (COLMAP) frame's up direction is -y


def _sh_basis(d: np.ndarray) -> np.ndarray:
    """[M, 3] unit directions -> [M, 15] real SH basis of bands 1-3, in the renderer's order and normalisation
    (the twin of kernels/reference.py `eval_sh`, in float64: scenes/ may not import kernels/)."""
    x, y, z = d.T
    xx, yy, zz = x * x, y * y, z * z
    return np.stack(
        [
            -0.48860251190292 * y, 0.48860251190292 * z, -0.48860251190292 * x,
            1.092548430592079 * x * y, -1.092548430592079 * y * z, 0.31539156525252005 * (2.0 * zz - xx - yy),
            -1.092548430592079 * x * z, 0.5462742152960395 * (xx - yy),
            -0.5900435899266435 * y * (3.0 * xx - yy), 2.890611442640554 * x * y * z,
            -0.4570457994644658 * y * (4.0 * zz - xx - yy), 0.3731763325901154 * z * (2.0 * zz - 3.0 * xx - 3.0 * yy),
            -0.4570457994644658 * x * (4.0 * zz - xx - yy), 1.445305721320277 * z * (xx - yy),
            -0.5900435899266435 * x * (xx - 3.0 * yy),
        ],
        axis=1,
    )  # fmt: skip


def sh_rotation(R: np.ndarray) -> list[np.ndarray]:
    """Per band 1-3, the matrix M_l with new coefficients = M_l @ old coefficients under rotation R."""
    d = np.random.default_rng(0).normal(size=(64, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    before, after = _sh_basis(d), _sh_basis(d @ R)  # after[m] = Y(R^T d_m): the old colour now seen along d_m
    mats = []
    for lo, hi in ((0, 3), (3, 8), (8, 15)):
        x = np.linalg.lstsq(before[:, lo:hi], after[:, lo:hi], rcond=None)[0]  # Y_band(R^T d) = Y_band(d) @ x
        mats.append(np.round(x, 12))  # entries such as -1 come out as -0.9999999999999998
    return mats


def rotation_to_up(up) -> tuple[np.ndarray, np.ndarray]:
    """(R [3, 3], its quaternion [4] w, x, y, z): the shortest rotation taking direction `up` to -y; a half turn
    about x when `up` is +y (the same turn as SPZ's RUB <-> RDF frame change)."""
    a = np.asarray(up, np.float64)
    a = a / np.linalg.norm(a)
    axis = np.cross(a, DOWN)
    s, c = float(np.linalg.norm(axis)), float(a @ DOWN)
    if s < 1e-12:
        axis, angle = np.array([1.0, 0.0, 0.0]), (0.0 if c > 0 else math.pi)
    else:
        axis, angle = axis / s, math.atan2(s, c)
    w, (x, y, z) = math.cos(angle / 2), axis * math.sin(angle / 2)
    R = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    return np.round(R, 12), np.round([w, x, y, z], 12)  # cos(pi / 2) comes out as 6e-17


def turn_up(scene: GaussianScene, up) -> GaussianScene:
    """A copy of `scene` turned so that direction `up` (3 numbers, in the scene's frame) points -y."""
    R, q = rotation_to_up(up)
    return rotated(scene, R, q)


def rotated(scene: GaussianScene, R: np.ndarray, q, *, scale: float = 1.0, shift=(0.0, 0.0, 0.0)) -> GaussianScene:
    """A copy of `scene` moved by x -> scale R x + shift: R [3, 3] a rotation and q [4] (w, x, y, z) its
    quaternion, `scale` > 0 uniform (log-scales grow by its log; SH, which depend on directions only, turn with R
    alone). In the PLY frame: `up_axis` "-y"."""
    f32 = dict(dtype=torch.float32, device=scene.device)
    means = (scene.means.double() @ torch.as_tensor(R.T * scale, dtype=torch.float64, device=scene.device)
             + torch.as_tensor(shift, dtype=torch.float64, device=scene.device)).to(torch.float32)  # fmt: skip
    w0, x0, y0, z0 = (float(v) for v in q)
    w, x, y, z = scene.quats.unbind(1)
    quats = torch.stack(
        [
            w0 * w - x0 * x - y0 * y - z0 * z,
            w0 * x + x0 * w + y0 * z - z0 * y,
            w0 * y - x0 * z + y0 * w + z0 * x,
            w0 * z + x0 * y - y0 * x + z0 * w,
        ],
        1,
    )  # the Hamilton product q_R q
    sh = scene.sh.clone()
    for band, (lo, hi) in zip(sh_rotation(R), ((1, 4), (4, 9), (9, 16))):
        if hi <= sh.shape[1]:
            sh[:, lo:hi] = torch.einsum("ji,nic->njc", torch.as_tensor(band, **f32), scene.sh[:, lo:hi])
    log_scales = scene.log_scales + math.log(scale) if scale != 1.0 else scene.log_scales
    return replace(scene, means=means, quats=quats, log_scales=log_scales, sh=sh, up_axis="-y",
                   extras=dict(scene.extras))  # fmt: skip
