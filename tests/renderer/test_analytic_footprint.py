"""One elongated, turned Gaussian through the Renderer against its footprint worked out analytically.

The expected image takes nothing from the project's code: the world covariance from Rodrigues' formula, the
2D covariance by EWA with a numerically differentiated pinhole map (tests/analytic.py), and at every pixel
centre (x + 0.5, y + 0.5) alpha = min(0.999, o exp(-d^T conic d / 2)), zero below 1/255, over the background.
A mistake in the covariance, the conic, the dilation or the pixel-centre convention moves the footprint. The
Gaussian is fully opaque with its mean on a pixel centre, so the 0.999 clamp decides that pixel, and the camera
has fx != fy and its principal point off centre, so a Jacobian that confuses them changes the conic.
"""

import math

import numpy as np
import pytest
import torch

from renderer import Camera, Renderer, RenderSettings
from scenes.gaussians import logit, make_scene
from tests.analytic import axis_angle_quat, covariance, ewa_conic, rodrigues

AXIS, ANGLE = (0.3, -0.2, 1.0), math.radians(35)  # mostly about the view axis: the ellipse leans in the image
SCALES = (0.4, 0.09, 0.12)
OPACITY = 1.0  # with the mean on a pixel centre: alpha there is min(0.999, 1.0 exp(0)), the clamp
CENTRE_PIXEL = (21, 14)
DC = (0.6, -0.3, 1.1)
BACKGROUND = (0.1, 0.2, 0.3)


def scene_and_camera():
    pose = np.eye(4)
    pose[:3, :3] = rodrigues((1.0, 0.4, 0.0), 0.15)
    pose[:3, 3] = (0.2, -0.1, -1.0)
    camera = Camera(40, 32, 38.0, 33.0, 18.7, 17.3, pose)
    u, v = CENTRE_PIXEL[0] + 0.5, CENTRE_PIXEL[1] + 0.5  # the mean projects onto this pixel centre, 2 units away
    p_cam = np.array([(u - camera.cx) * 2.0 / camera.fx, (v - camera.cy) * 2.0 / camera.fy, 2.0])
    mean = pose[:3, :3] @ p_cam + pose[:3, 3]
    scene = make_scene(
        torch.tensor(mean[None]), torch.tensor(axis_angle_quat(AXIS, ANGLE)[None]), torch.log(torch.tensor([SCALES])),
        logit(torch.tensor([OPACITY])), torch.tensor([[DC]]),
    )  # fmt: skip
    return scene, camera, mean


def analytic_image(camera: Camera, mean) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rgb [H, W, 3], alpha [H, W], conic [2, 2]) in float64."""
    mean2d, conic = ewa_conic(mean, covariance(rodrigues(AXIS, ANGLE), SCALES), camera.T_world_camera,
                              camera.fx, camera.fy, camera.cx, camera.cy, eps2d=0.3)  # fmt: skip
    ys, xs = np.meshgrid(np.arange(camera.height), np.arange(camera.width), indexing="ij")
    d = np.stack([xs + 0.5 - mean2d[0], ys + 0.5 - mean2d[1]], -1)
    q = np.einsum("...i,ij,...j->...", d, conic, d)
    alpha = np.minimum(0.999, OPACITY * np.exp(-0.5 * q))
    alpha[alpha < 1.0 / 255.0] = 0.0
    # the DC as the renderer holds it: the scene's float32, then its fp16 SH copy (kernels.SH_DTYPE)
    dc = np.asarray(DC, dtype=np.float32).astype(np.float16).astype(np.float64)
    colour = 0.5 + dc / (2.0 * math.sqrt(math.pi))  # degree 0: Y_0^0 = 1 / (2 sqrt(pi))
    colour = colour.astype(np.float16).astype(np.float64)  # as the blend record holds it (kernels/buffers.py)
    rgb = alpha[..., None] * colour + (1.0 - alpha[..., None]) * np.asarray(BACKGROUND)
    return rgb, alpha, conic


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("tile", [8, 16])
def test_rendered_footprint_matches_the_analytic_one(backend, tile, device):
    scene, camera, mean = scene_and_camera()
    want_rgb, want_alpha, conic = analytic_image(camera, mean)
    out = Renderer(scene, device=device, backend=backend).render(
        camera, RenderSettings(tile_size=tile, background=BACKGROUND, blend_precision="fp32")
    )
    alpha, rgb = out.alpha.cpu().double().numpy(), out.image.cpu().double().numpy()
    # the case must be a real footprint: many pixels, elongated and leaning (no symmetry hides a mistake)
    assert (want_alpha > 0).sum() > 300
    assert want_alpha[CENTRE_PIXEL[1], CENTRE_PIXEL[0]] == 0.999, "the clamp must decide the centre pixel"
    lengths = np.linalg.eigvalsh(conic)
    assert lengths[1] > 4 * lengths[0] and abs(conic[0, 1]) > 0.3 * math.sqrt(conic[0, 0] * conic[1, 1])
    # pixels within float rounding of the 1/255 cut-off may fall either side of it
    sure = np.abs(want_alpha - 1.0 / 255.0) > 1e-4
    np.testing.assert_allclose(alpha[sure], want_alpha[sure], atol=5e-5)
    np.testing.assert_allclose(rgb[sure], want_rgb[sure], atol=5e-5)
