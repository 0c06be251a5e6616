"""Orthographic frames (`RenderSettings.ortho`, renderer/camera.py `orthographic`), end to end.

An orthographic camera is the limit of a pinhole pulled far back along its view with its focal length grown to
keep the scale at one depth: so a pinhole frame 1,000 scene radii back must look like the orthographic frame (a
reference derived another way, through the pinhole path), and more so than one 10 radii back (on the plant at
96x72 with the torch twin: 32.7 dB at 10 radii, 50.8 at 100, 67.7 at 1,000; 60.6 at 10,000, float32's depths).
On the Triton pipeline and its torch twin alike.
"""

import numpy as np
import pytest
import torch

from renderer import Renderer, RenderSettings, default_camera, orthographic, perspective
from renderer.camera import framing_sphere
from scenes import load_scene
from tests.conftest import bundled
from tools.metrics import psnr


@pytest.fixture(scope="module")
def plant():
    """Every 4th Gaussian of the bundled plant: SH degree 0, so that colours do not depend on where the camera is
    (an orthographic frame's view directions are from its centre, a pulled-back pinhole's are not)."""
    scene = load_scene(bundled("plant.splat"))
    return scene.subset(torch.arange(0, len(scene), 4))


def pulled_back(cam, distance: float, back: float):
    """The pinhole `back` further back along the view, its focal length grown so that depth `distance` (from the
    original camera) keeps its scale: as back grows, its frame tends to `orthographic(cam, distance)`'s."""
    T = cam.T_world_camera.copy()
    T[:3, 3] -= back * T[:3, 2]
    k = (distance + back) / distance
    far = cam.with_pose(T)
    far.fx, far.fy = cam.fx * k, cam.fy * k
    return far


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_an_orthographic_frame_is_the_limit_of_a_pulled_back_pinhole(plant, backend, device):
    # the interpreter runs the Triton pipeline: a smaller frame of half the Gaussians keeps it to seconds
    scene = plant.subset(torch.arange(0, len(plant), 2)) if backend == "triton" else plant
    width, height = (40, 30) if backend == "triton" else (96, 72)
    cam = default_camera(scene, width, height)
    centre, radius = framing_sphere(scene)
    distance = float((centre - cam.position) @ cam.T_world_camera[:3, 2])
    r = Renderer(scene, device=device, backend=backend)
    out = r.render(orthographic(cam, distance), RenderSettings(ortho=True))
    assert out.stats.n_visible > 1000
    ortho = out.image.clone()  # the renderer's buffers hold the next frame's
    near = r.render(pulled_back(cam, distance, 10 * radius), RenderSettings()).image.clone()
    far = r.render(pulled_back(cam, distance, 1e3 * radius), RenderSettings()).image.clone()
    assert psnr(far, ortho) > 55.0, psnr(far, ortho)
    assert psnr(far, ortho) > psnr(near, ortho) + 15  # converging, not equal by accident
    assert psnr(r.render(cam, RenderSettings()).image, ortho) < 30.0  # and not the pinhole frame it came from


def test_orthographic_triton_matches_torch(plant, device):
    cam = default_camera(plant, 40, 30)
    distance = float(np.linalg.norm(framing_sphere(plant)[0] - cam.position))
    ortho = orthographic(cam, distance * 0.5)  # zoomed in: edges crossed
    settings = RenderSettings(ortho=True, blend_precision="fp32")  # the twins blend in float32
    a = Renderer(plant, device=device, backend="triton").render(ortho, settings)
    b = Renderer(plant, device=device, backend="torch").render(ortho, settings)  # each its own renderer
    assert abs(a.stats.n_pairs - b.stats.n_pairs) <= 2 and a.stats.n_visible > 500
    assert psnr(a.image, b.image) >= 60.0 and psnr(a.alpha, b.alpha) >= 60.0


def test_orthographic_and_perspective_invert_each_other():
    from renderer import Camera

    cam = Camera.from_fov(64, 48, 50.0)
    back = perspective(orthographic(cam, 3.5), 3.5)
    assert (back.fx, back.fy, back.cx, back.cy) == pytest.approx((cam.fx, cam.fy, cam.cx, cam.cy))
    with pytest.raises(ValueError, match="positive distance"):
        orthographic(cam, 0.0)
