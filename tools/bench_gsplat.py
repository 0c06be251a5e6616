"""gsplat 1.5.3 as `warpsplat bench` and the parity test (tests/gpu/test_gsplat_parity.py) call it: the one
place that spells out the exactness contract's `rasterization()` call (docs/architecture.md)."""

from __future__ import annotations


def gsplat_renderer(scene, device):
    """A callable camera -> [H,W,3] image through gsplat 1.5.3, called as the exactness contract
    (docs/architecture.md) states."""
    import torch
    from gsplat import rasterization

    act = scene.to(device).activated()
    degree = scene.sh_degree

    def render(cam):
        viewmat = torch.tensor(cam.viewmat, dtype=torch.float32, device=device)[None]
        K = torch.tensor(cam.K, dtype=torch.float32, device=device)[None]
        colors, _, _ = rasterization(
            act.means, act.quats, act.scales, act.opacities, act.sh, viewmat, K, cam.width, cam.height,
            sh_degree=degree, near_plane=0.01, far_plane=1e10, eps2d=0.3, packed=False, tile_size=16,
            rasterize_mode="classic",
        )  # fmt: skip
        return colors[0]

    return render
