"""The direct launch (kernels/_launch.py, on unless WARPSPLAT_DIRECT_LAUNCH=0) against Triton's own, on the GPU:
the same images bit for bit on both frame routes and with graphs, and, once each kernel has been launched by Triton
once, no launch through Triton's `JITFunction.run`. Needs CUDA: run on the GPU machine."""

import pytest
import torch
from triton.runtime.jit import JITFunction

import kernels._launch as launching
from renderer import Renderer, RenderSettings
from tools.bench_paths import object_paths

pytestmark = pytest.mark.gpu


@pytest.fixture
def scene(plant_on_gpu):
    return plant_on_gpu


@pytest.mark.parametrize("mode,graphs", [("graph", False), ("graph", True), ("counted", False)])
def test_direct_launches_render_what_tritons_do(scene, monkeypatch, mode, graphs):
    cams = object_paths(scene, 640, 360, 6)["orbit"] + object_paths(scene, 640, 360, 6)["close"]
    settings = RenderSettings(background=(0.2, 0.1, 0.0))
    want = []
    monkeypatch.setattr(launching, "DIRECT", False)
    triton_own = Renderer(scene, device="cuda", graphs=graphs)
    triton_own.frame_mode = mode
    for cam in cams:
        want.append(triton_own.render(cam, settings).image.clone())
    own_runs = []
    run = JITFunction.run
    monkeypatch.setattr(JITFunction, "run", lambda self, *a, **k: own_runs.append(self) or run(self, *a, **k))
    monkeypatch.setattr(launching, "DIRECT", True)
    monkeypatch.setattr(launching, "_launchers", {})
    direct = Renderer(scene, device="cuda", graphs=graphs)
    direct.frame_mode = mode
    for _ in range(2):  # the second pass: every specialization has been launched by Triton once
        own_runs.clear()
        for cam, image in zip(cams, want, strict=True):
            assert torch.equal(direct.render(cam, settings).image, image)
    assert launching._launchers and not own_runs, [k.__name__ for k in own_runs]
    # and nearly all of them through their C launch (kernels without scratch)
    assert sum(parts and parts[3] is not None for parts in launching._launchers.values()) >= 5
