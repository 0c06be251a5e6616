"""Procedural Gaussians and cameras for kernel tests, with the edge cases the kernels must handle.

Kernel tests import no renderer code (the kernels sit below it): the cameras here are packed into the kernels'
[24] layout directly, and the covariances are built from tests/analytic.py's rotations, not from
`prepare_covariances`. The cameras have fx != fy and a principal point off the image centre, so that a
projection that mixes up fx and fy, or cx and cy, differs from its twin.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import kernels
import kernels.reference as ref
from tests.analytic import covariance, quat_matrix, upper


def look_at(eye, target, up=(0.0, -1.0, 0.0)) -> np.ndarray:
    """[4, 4] T_world_camera (OpenCV axes: +Z towards `target`, +Y down the image, as close to -`up` as the
    view allows), by Gram-Schmidt."""
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    down = -np.asarray(up, dtype=np.float64)
    down -= (down @ forward) * forward
    assert np.linalg.norm(down) > 1e-6, "look_at: the view direction is parallel to up"
    down /= np.linalg.norm(down)
    T = np.eye(4)
    T[:3, :3] = np.stack([np.cross(down, forward), down, forward], axis=1)
    T[:3, 3] = eye
    return T


class PinholeCamera:
    """A pinhole camera in pixels (pixel centres at +0.5) with a camera-to-world pose, as the kernels take it."""

    def __init__(self, width: int, height: int, fx: float, fy: float, cx: float, cy: float, T_world_camera=None):
        self.width, self.height, self.fx, self.fy, self.cx, self.cy = width, height, fx, fy, cx, cy
        self.T_world_camera = np.eye(4) if T_world_camera is None else np.asarray(T_world_camera, dtype=np.float64)

    @property
    def position(self) -> np.ndarray:
        return np.asarray(self.T_world_camera, dtype=np.float64)[:3, 3].copy()

    def packed(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """[24] f32: viewmat (world-to-camera) row-major [16], fx, fy, cx, cy, camera centre [3], pad (the
        layout kernels/project.py documents)."""
        v = np.zeros(24)
        v[:16] = np.linalg.inv(np.asarray(self.T_world_camera, dtype=np.float64)).reshape(-1)
        v[16:20] = (self.fx, self.fy, self.cx, self.cy)
        v[20:23] = self.position
        return torch.tensor(v, dtype=torch.float32, device=device)


def camera(width: int, height: int, fov_y_deg: float = 60.0, pose: np.ndarray | None = None) -> PinholeCamera:
    """A camera at (0.3, -0.2, -4) looking at the origin, -Y up (INRIA convention), about `fov_y_deg` high: its
    pixels are not square (fx = 1.12 f, fy = 0.93 f) and its principal point is off centre (0.44 w, 0.57 h)."""
    f = 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
    pose = look_at((0.3, -0.2, -4.0), (0, 0, 0)) if pose is None else pose
    return PinholeCamera(width, height, 1.12 * f, 0.93 * f, 0.44 * width, 0.57 * height, pose)


def gaussians(n: int, *, sh_degree: int = 0, seed: int = 0, device: str = "cpu", edge_cases: bool = True):
    """(means [N,3], covars [N,6], opacities [N], sh [N,K,3]) with random trained-like values; the SH in
    kernels.SH_DTYPE (fp16), the dtype `project_gaussians` takes (the renderer's prepared copy).

    With edge_cases, the first rows are: behind the camera, exactly at the near plane, far off-screen,
    huge, needle-thin, nearly transparent (below 1/255), and fully opaque.
    """
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(n, 3, generator=g) - 0.5) * torch.tensor([3.0, 2.4, 2.0])
    quats = torch.randn(n, 4, generator=g)
    log_scales = torch.randn(n, 3, generator=g) * 0.6 - 3.3
    opac = torch.rand(n, generator=g) * 0.98 + 0.02
    k = (sh_degree + 1) ** 2
    sh = torch.randn(n, k, 3, generator=g) * torch.tensor([1.0] + [0.3] * (k - 1))[None, :, None]
    if edge_cases and n >= 8:
        eye = torch.tensor([0.3, -0.2, -4.0])
        fwd = -eye / eye.norm()
        means[0] = eye - fwd * 1.0  # behind the camera
        means[1] = eye + fwd * 0.01  # exactly at the near plane (z = near)
        means[2] = torch.tensor([40.0, 0.0, 0.0])  # far off-screen
        log_scales[3] = torch.tensor([0.2, 0.1, 0.3])  # huge: covers the whole image
        means[3] = torch.tensor([0.0, 0.0, 1.0])
        log_scales[4] = torch.tensor([-0.5, -9.0, -9.0])  # needle-thin
        opac[5] = 0.5 / 255.0  # below the alpha threshold: culled
        opac[6] = 1.0  # fully opaque
        log_scales[6] = torch.tensor([-1.5, -1.5, -1.5])
    R = quat_matrix(quats.double().numpy())
    covars = torch.from_numpy(upper(covariance(R, np.exp(log_scales.double().numpy())))).float()
    return (means.to(device), covars.to(device), opac.to(device), sh.to(device, kernels.SH_DTYPE))


def projected(n, width, height, device, seed=0, degree=0, tile=8):
    """Stage 1's outputs for `gaussians(n)` seen by `camera`, from the torch twin: the input the later stages'
    tests start from, so that they test their own stage only."""
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    cam = camera(width, height).packed(device)
    return ref.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=degree, tile_size=tile)


def random_keys(n_tiles, n, device, dtype=torch.int16, seed=0):
    """(keys [n], ids [n] i32): random tile ids below n_tiles, the last 3 the unused-slot sentinel, and ids a
    random permutation (so that an order among equal keys shows)."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randint(0, n_tiles, (n,), generator=g).to(dtype)
    keys[-3:] = kernels.sentinel_key(dtype)  # unused slots sort last
    return keys.to(device), torch.randperm(n, generator=g).to(torch.int32).to(device)


def assert_close_rows(name, ref, tri, rows, rtol=1e-4, atol=1e-5):
    """Compare per-Gaussian float outputs on the given rows; report the first mismatches."""
    r, t = ref[rows].double(), tri[rows].double()
    bad = ~torch.isclose(t, r, rtol=rtol, atol=atol)
    if bad.any():
        idx = torch.nonzero(bad.reshape(bad.shape[0], -1).any(1)).flatten()[:5]
        raise AssertionError(f"{name}: {int(bad.sum())} mismatches; first rows {idx.tolist()}: "
                             f"ref {r[idx].tolist()} tri {t[idx].tolist()}")  # fmt: skip


def bin_all(impl, proj, width, height, *, tile=8, capacity=None, poison=True):
    """Stages 2-3 of either implementation on a projection: (keys, ids, n_pairs). The buffers hold `capacity`
    slots (default: exactly the pair count), filled with the sentinel first as the renderer does."""
    records, depths, tiles_touched, bin_t = proj
    n = depths.shape[0]
    order, offsets, totals = impl.depth_order(depths, tiles_touched, out=impl.order_outputs(n, depths.device))
    n_pairs = int(totals[1])
    cap = n_pairs if capacity is None else capacity
    n_tiles = ((width + tile - 1) // tile) * ((height + tile - 1) // tile)
    kd = impl.key_dtype(n_tiles)
    keys = torch.full((cap,), impl.sentinel_key(kd), dtype=kd, device=records.device)
    ids = torch.full((cap,), -1, dtype=torch.int32, device=records.device)
    impl.bin_pairs(order, offsets, records, tiles_touched, width, height, tile_size=tile, bin_t=bin_t,
                   out=(keys, ids))  # fmt: skip
    return keys, ids, n_pairs


def lists_of(impl, proj, width, height, *, tile=8):
    """Stages 2-5: (sorted ids, ranges) ready for the rasterizer."""
    keys, ids, _ = bin_all(impl, proj, width, height, tile=tile)
    sorted_keys, sorted_ids = impl.sort_pairs(keys, ids)
    n_tiles = ((width + tile - 1) // tile) * ((height + tile - 1) // tile)
    return sorted_ids, impl.tile_ranges(sorted_keys, n_tiles)
