"""gsplat 1.5.3 as `warpsplat bench` and the parity test (tests/gpu/test_gsplat_parity.py) call it: the one
place that spells out the exactness contract's `rasterization()` call (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable

# The contract's clipping planes and 2D dilation (docs/architecture.md), passed to both anchors.
CONTRACT = {"near_plane": 0.01, "far_plane": 1e10, "eps2d": 0.3}


def camera_tensors(cams, device) -> tuple:
    """The cameras' world-to-camera matrices [F, 4, 4] and intrinsics [F, 3, 3], float32 on the device: the anchors'
    inputs, made once per path before any timing (as warpsplat's cameras are)."""
    import numpy as np
    import torch

    viewmats = torch.from_numpy(np.stack([c.viewmat for c in cams]).astype(np.float32)).to(device)
    Ks = torch.from_numpy(np.stack([c.K for c in cams]).astype(np.float32)).to(device)
    return viewmats, Ks


class GsplatRenderer:
    """gsplat 1.5.3's `rasterization()` on one scene, called as the exactness contract (docs/architecture.md)
    states. The scene's activated tensors are made once; `frames(cams)` prepares a path's camera tensors and
    returns draw(i) -> [H, W, 3], which only indexes them; calling it with a camera renders that one camera."""

    def __init__(self, scene, device, *, camera_model: str = "pinhole"):
        import torch

        self.device = torch.device(device)
        self.act = scene.to(self.device).activated()
        self.degree = scene.sh_degree
        self.camera_model = camera_model  # "ortho": gsplat's orthographic cameras (`RenderSettings.ortho`)

    def frames(self, cams) -> Callable[[int], object]:
        viewmats, Ks = camera_tensors(cams, self.device)
        views = [(viewmats[i : i + 1], Ks[i : i + 1]) for i in range(len(cams))]  # [1, 4, 4], [1, 3, 3] views
        width, height = cams[0].width, cams[0].height
        return lambda i: self.draw(*views[i], width, height)

    def draw(self, viewmat, K, width: int, height: int):
        from gsplat import rasterization

        a = self.act
        colors, _, _ = rasterization(
            a.means, a.quats, a.scales, a.opacities, a.sh, viewmat, K, width, height, sh_degree=self.degree,
            packed=False, tile_size=16, rasterize_mode="classic", camera_model=self.camera_model, **CONTRACT,
        )  # fmt: skip
        return colors[0]

    def __call__(self, cam):
        return self.frames([cam])(0)


def gsplat_renderer(scene, device, *, camera_model: str = "pinhole") -> GsplatRenderer:
    """A callable camera -> [H, W, 3] image through gsplat 1.5.3 (`GsplatRenderer`)."""
    return GsplatRenderer(scene, device, camera_model=camera_model)
