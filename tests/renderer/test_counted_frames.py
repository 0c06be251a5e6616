"""Counted frames: the route that syncs for the visible and pair counts and sorts exactly those, against the
capacity route (one sync, buffers sized by the path's busiest frame). Both must give the same image."""

import numpy as np
import pytest
import torch

import renderer.routes as routes
from renderer import Camera, Renderer, RenderSettings
from renderer.paths import orbit_path
from scenes import load_scene


@pytest.mark.parametrize("dense_from", [0.0, 2.0], ids=["all sorted", "compacted"])
@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_counted_frames_equal_capacity_frames(scene_path, device, backend, dense_from):
    """A short orbit and a view of nothing, rendered by both routes: bit-identical images and the same counts
    (counted frames sorting every depth, or the visible ones found first: `Renderer.dense_order_from`)."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    cams = orbit_path(scene, 24, 16, 2)
    c = scene.center().numpy()
    cams.append(Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=24, height=16))
    settings = RenderSettings(background=(0.2, 0.1, 0.0))
    by_capacity = Renderer(scene, device=device, backend=backend)
    by_capacity.frame_mode = "graph"
    counted = Renderer(scene, device=device, backend=backend)
    counted.frame_mode = "counted"
    counted.dense_order_from = dense_from
    for cam in cams:
        want = by_capacity.render(cam, settings)
        got = counted.render(cam, settings)
        assert got.stats.n_visible == want.stats.n_visible and got.stats.n_pairs == want.stats.n_pairs
        assert torch.equal(got.image, want.image) and torch.equal(got.alpha, want.alpha)
        assert torch.equal(got.tile_counts, want.tile_counts)
    assert counted.pair_capacity.size == counted.macro_capacity.size == 0, "counted frames use no capacity"
    assert want.stats.n_pairs == 0 and got.stats.n_pairs == 0, "the last view sees nothing"


def test_auto_mode_counts_from_the_threshold(scene_path, device, monkeypatch):
    """Mode "auto" runs scenes of COUNTED_FROM Gaussians or more counted, smaller ones on capacities."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    cam = orbit_path(scene, 32, 24, 2)[0]
    r = Renderer(scene, device=device, backend="torch")
    r.render(cam)
    assert r.pair_capacity.size > 0, "below the threshold: the capacity route"
    monkeypatch.setattr(routes, "COUNTED_FROM", len(scene))
    r2 = Renderer(scene, device=device, backend="torch")
    out = r2.render(cam)
    assert r2.pair_capacity.size == r2.macro_capacity.size == 0 and out.stats.n_pairs > 0, "at the threshold: counted"
