"""The renderer's copy of a scene on its device, made once at load: activated opacities, fp16 SH and the
view-independent 3D covariances (never recomputed per frame)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import torch
from torch import Tensor

from kernels import SH_MAX, sh_layout
from scenes import GaussianScene


def prepare_covariances(quats: Tensor, log_scales: Tensor, scale_modifier: float = 1.0) -> Tensor:
    """View-independent 3D covariances R S^2 R^T, upper triangle (xx, xy, xz, yy, yz, zz): [N, 6].

    Computed once at load (and when the scale modifier changes), never per frame.
    """
    q = torch.nn.functional.normalize(quats, dim=1)
    w, x, y, z = q.unbind(1)
    R = torch.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        dim=1,
    ).reshape(-1, 3, 3)  # fmt: skip
    s = torch.exp(log_scales) * scale_modifier
    M = R * s[:, None, :]  # R S
    cov = M @ M.transpose(1, 2)
    return torch.stack(
        [cov[:, 0, 0], cov[:, 0, 1], cov[:, 0, 2], cov[:, 1, 1], cov[:, 1, 2], cov[:, 2, 2]], dim=1
    ).contiguous()


PREPARE_CHUNK = 1 << 20  # Gaussians prepared at a time: bounds the load's transients (about 200 bytes a Gaussian)


def prepare_scene(scene: GaussianScene, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The renderer's prepared copy on `device`: (means [N,3], opacities [N], sh [N,K,3] SH_DTYPE (fp16) laid out
    coefficient-major (kernels/buffers.py `sh_layout`), covariances [N,6]).

    Activation, covariances and the SH copy are made PREPARE_CHUNK Gaussians at a time, so the load's
    temporaries (the raw quaternions and log-scales on the device, the rotation matrices) stay a few hundred MB
    whatever N; on a 24M-Gaussian scene, preparing it whole had needed about 5 GB beyond the prepared copy.
    Means are used as stored (no copy when the scene is already on `device`).

    The SH coefficients are kept in fp16 (kernels/buffers.py `SH_DTYPE`: half of float32's bytes, which were
    most of what stage 1 reads; the scene itself keeps its float32). A coefficient fp16 cannot hold (|c| of
    65520 and more, which it would make infinite) is clamped to +-SH_MAX (65504), with one warning giving how
    many Gaussians had one. The Gaussian is kept, as `drop_invalid` keeps an infinite opacity logit by clamping
    it: a coefficient that large saturates the colour either way (the record clamps colours to fp16's range too).
    NaN stays NaN (`drop_invalid` removes those rows first, in `Renderer`)."""
    n = len(scene)
    means = _aligned(scene.means.to(device).contiguous())
    opacities = torch.empty(n, dtype=torch.float32, device=device)
    covars = torch.empty(n, 6, dtype=torch.float32, device=device)
    sh = sh_layout(n, scene.sh.shape[1], device)  # a new tensor: 16-byte aligned
    clamped = torch.zeros((), dtype=torch.int64, device=device)  # Gaussians with a coefficient fp16 cannot hold
    for a in range(0, n, PREPARE_CHUNK):
        b = min(a + PREPARE_CHUNK, n)
        # the raw rows this step needs, on the device (the means and SH rows are not read here)
        part = replace(scene, means=scene.means[a:b], quats=scene.quats[a:b].to(device),
                       log_scales=scene.log_scales[a:b].to(device),
                       opacity_logits=scene.opacity_logits[a:b].to(device), sh=scene.sh[a:b])  # fmt: skip
        opacities[a:b] = part.activated().opacities  # the one activation (GaussianScene.activated)
        covars[a:b] = prepare_covariances(part.quats, part.log_scales)
        rows = sh[a:b]
        rows.copy_(scene.sh[a:b])  # rounded to fp16; +-inf beyond its range
        clamped += torch.isinf(rows).flatten(1).any(1).sum()
        rows.clamp_(-SH_MAX, SH_MAX)
    n_clamped = int(clamped)  # a load-time sync, once
    if n_clamped:
        warnings.warn(f"scene: {n_clamped:,} of {n:,} Gaussians have SH coefficients beyond float16's range: "
                      f"clamped to +-{SH_MAX:g}", stacklevel=2)  # fmt: skip
    return means, opacities, sh, covars


def _aligned(t: Tensor) -> Tensor:
    """t at a 16-byte aligned address: Triton compiles a kernel separately for pointers that are not (a scene that
    is a view into a larger tensor), which the warm-up's buffers would not cover (renderer/warmup.py). The SH copy
    needs no check: it is always a new fp16 tensor, and the allocator aligns those."""
    return t if t.data_ptr() % 16 == 0 else t.clone()
