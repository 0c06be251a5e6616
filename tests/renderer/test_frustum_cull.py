"""The projection's frustum pre-cull in the renderer (kernels/project.py `culls_frustum`): frames that see under
half of the scene turn it on, the next frame's launch configuration says so, and their images are those of frames
without it, bit for bit, on both routes and with a scale modifier."""

import numpy as np
import pytest
import torch

import kernels.project
from renderer import Camera, Renderer, RenderSettings
from scenes import load_scene


def flight(scene, width=24, height=16):
    """From inside the scene's box outward, turning: each view sees part of it, some a small part; then twice the
    whole scene from outside (the pre-cull goes off again)."""
    c = scene.center().numpy()
    radius = float(np.linalg.norm(scene.means.numpy() - c, axis=1).max())
    cams = []
    for angle in np.linspace(0.0, 2.5, 6):
        eye = c + np.array([0.3, 0.0, 0.2]) * radius
        look = np.array([np.cos(angle), 0.15, np.sin(angle)])
        cams.append(Camera.look_at(eye, eye + look, width=width, height=height, fov_y_deg=50.0))
    outside = c + np.array([0.0, -0.5, -3.0]) * radius
    cams += [Camera.look_at(outside, c, width=width, height=height, fov_y_deg=50.0)] * 2
    return cams


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("route,modifier", [("graph", 1.0), ("counted", 1.0), ("graph", 1.6)], ids=str)
def test_pre_culled_frames_equal_plain_ones(scene_path, device, backend, route, modifier, monkeypatch):
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    settings = RenderSettings(background=(0.1, 0.2, 0.3), scale_modifier=modifier)
    plain = Renderer(scene, device=device, backend=backend)
    plain.frame_mode = route
    monkeypatch.setattr(kernels.project, "FRUSTUM_FROM", 0)  # any scene pre-culls when it sees little of itself
    culled = Renderer(scene, device=device, backend=backend)
    culled.frame_mode = route
    launched, fractions, least = [], [], len(scene)
    for cam in flight(scene):
        launched.append(culled.launch.cull)
        got = culled.render(cam, settings)
        monkeypatch.setattr(kernels.project, "FRUSTUM_FROM", 1 << 40)
        want = plain.render(cam, settings)
        monkeypatch.setattr(kernels.project, "FRUSTUM_FROM", 0)
        assert not plain.launch.cull
        assert got.stats.n_visible == want.stats.n_visible and got.stats.n_pairs == want.stats.n_pairs
        assert torch.equal(got.image, want.image) and torch.equal(got.alpha, want.alpha)
        fractions.append(want.stats.n_visible / len(scene))
        if launched[-1]:  # the survivors: every visible Gaussian, at most all
            survivors = int(culled.ws.buffer("n_survivors", 1, torch.int32))
            assert want.stats.n_visible <= survivors <= len(scene), (want.stats.n_visible, survivors)
            least = min(least, survivors)
    assert launched[0] is False and any(launched) and not launched[-1], (launched, fractions)
    assert any(f > 0 for f in fractions), "the flight should see some of the scene"
    assert least < len(scene) // 2, f"the pre-cull kept {least} of {len(scene)} at best"
    # each frame's choice follows the frame before it
    for before, now in zip(fractions, launched[1:], strict=False):
        if before < kernels.project.FRUSTUM_ON:
            assert now, (fractions, launched)
        if before > kernels.project.FRUSTUM_OFF:
            assert not now, (fractions, launched)


@pytest.mark.parametrize("route", ["graph", "counted"])
def test_a_scene_that_may_pre_cull_has_its_buffers_before_the_first_frame_that_culls(scene_path, device, route,
                                                                                    monkeypatch):  # fmt: skip
    """The extents and the survivors' buffer are made by a scene's first frame, not by its first culling frame,
    which on a GPU ran mid-flight and waited for the frames in flight while its allocation was made: a culling frame
    adds no workspace buffer and computes no extents."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    monkeypatch.setattr(kernels.project, "FRUSTUM_FROM", 0)  # any scene pre-culls when it sees little of itself
    r = Renderer(scene, device=device, backend="torch")
    r.frame_mode = route
    cams = flight(scene)
    r.render(cams[-1])  # the whole scene: no pre-cull
    assert not r.launch.cull and "extent" in r.__dict__, "the first frame made the extents"
    held = {name: r.ws.buffer(name, 1, t.dtype).data_ptr() for name, t in r.ws._buffers.items()}
    assert {"survivors", "n_survivors"} <= set(held)
    extents = r.extent
    culled = []
    for cam in cams[:-2]:
        culled.append(r.launch.cull)
        r.render(cam)
    assert any(culled), culled
    assert r.extent is extents
    for name, ptr in held.items():
        if name in ("survivors", "n_survivors", "extent"):
            assert r.ws.buffer(name, 1, r.ws._buffers[name].dtype).data_ptr() == ptr, f"{name} was made again"
