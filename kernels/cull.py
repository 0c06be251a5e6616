"""Window cull: which Gaussians can reach the image of any of K cameras (temporal reuse's speculative step).

Per Gaussian (one lane each), for each camera k of the window: the same EWA footprint as stage 1
(`_device.ewa_footprint`, one definition for both kernels), the alpha = 1/255 threshold t of its opacity, and
the bounding box of the ellipse {Q <= t}. It is kept when, for some camera, that box meets the tile grid
widened by `margin` pixels on every side, or when it lies within `guard` of the camera centre (Gaussians
close to a predicted camera move fastest on screen, and are kept whatever the prediction says).

The project kernel keeps a Gaussian only if its ellipse at t reaches a tile's pixel centres, which lies inside
that box: so with margin >= 1 pixel (absorbing float differences between the two compiled kernels) the
window's set contains every Gaussian any of its cameras renders, and rendering from the compacted set gives
the same image bit for bit (see renderer/temporal.py for why the order is preserved too).

Inputs : means [N,3], covars [N,6], opacities [N], cameras [K,24] (packed as for `project_gaussians`)
Outputs: keep [N] int8 (1 = in the window's set)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import ALPHA_MIN, alpha_threshold_t, ewa_footprint
from ._launch import cdiv, interpreting, launch


@triton.jit(do_not_specialize=["N", "n_cams", "width", "height"])
def _cull_window_kernel(
    means_ptr,  # [N, 3] f32
    covars_ptr,  # [N, 6] f32
    opacities_ptr,  # [N] f32
    cameras_ptr,  # [K, 24] f32
    keep_ptr,  # [N] i8 out
    N,
    n_cams,
    width,
    height,
    near,
    far,
    eps2d,
    margin,  # pixels added on every side of the tile grid
    guard2,  # squared guard distance (0 = no guard)
    TILE: tl.constexpr,
    ORTHO: tl.constexpr,  # orthographic cameras (`_device.ewa_footprint`)
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    in_range = offs < N
    x = tl.load(means_ptr + offs * 3 + 0, mask=in_range, other=0.0)
    y = tl.load(means_ptr + offs * 3 + 1, mask=in_range, other=0.0)
    z = tl.load(means_ptr + offs * 3 + 2, mask=in_range, other=0.0)
    o = tl.load(opacities_ptr + offs, mask=in_range, other=0.0)
    candidate = in_range & (o >= ALPHA_MIN)
    t = alpha_threshold_t(tl.where(candidate, o, 1.0))
    x_hi = ((width + TILE - 1) // TILE * TILE).to(tl.float32) + margin
    y_hi = ((height + TILE - 1) // TILE * TILE).to(tl.float32) + margin
    keep = in_range & False
    for k in range(0, n_cams):
        cam = cameras_ptr + k * 24
        zc, mx, my, a, b, c, visible = ewa_footprint(
            cam, x, y, z, covars_ptr, offs, candidate & ~keep, width, height, near, far, eps2d, ORTHO
        )
        det = tl.where(visible, a * c - b * b, 1.0)
        rx = tl.sqrt(t * c / det)
        ry = tl.sqrt(t * a / det)
        on = visible & (mx + rx >= -margin) & (mx - rx <= x_hi) & (my + ry >= -margin) & (my - ry <= y_hi)
        dx = x - tl.load(cam + 20)
        dy = y - tl.load(cam + 21)
        dz = z - tl.load(cam + 22)
        near_camera = candidate & (dx * dx + dy * dy + dz * dz < guard2)
        keep = keep | on | near_camera
    tl.store(keep_ptr + offs, keep.to(tl.int8), mask=in_range)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def cull_window(
    means: torch.Tensor,  # [N, 3]
    covars: torch.Tensor,  # [N, 6]
    opacities: torch.Tensor,  # [N]
    cameras: torch.Tensor,  # [K, 24]
    width: int,
    height: int,
    *,
    near: float = 0.01,
    far: float = 1e10,
    eps2d: float = 0.3,
    margin: float = 16.0,
    guard: float = 0.0,
    tile_size: int = 8,
    out: torch.Tensor | None = None,
    ortho: bool = False,
) -> torch.Tensor:
    """keep [N] int8: 1 for each Gaussian that some camera of the window can render (module docstring); `ortho`:
    the cameras are orthographic."""
    N = means.shape[0]
    assert cameras.ndim == 2 and cameras.shape[1] == 24 and cameras.shape[0] >= 1, cameras.shape
    assert covars.shape == (N, 6) and opacities.shape == (N,), (covars.shape, opacities.shape)
    assert margin >= 1.0 and guard >= 0.0, (margin, guard)
    if out is None:
        out = torch.empty(N, dtype=torch.int8, device=means.device)
    block = 256 if interpreting() else 128
    launch(_cull_window_kernel, (cdiv(max(N, 1), block),),
        means, covars, opacities, cameras.contiguous(), out, N, cameras.shape[0], width, height,
        near, far, eps2d, float(margin), float(guard) ** 2, TILE=tile_size, ORTHO=ortho, BLOCK_N=block,
    )  # fmt: skip
    return out
