"""Counted frames: the route that syncs for the visible and pair counts and sorts exactly those, against the
capacity route (one sync, buffers sized by the path's busiest frame). Both must give the same image."""

import numpy as np
import pytest
import torch

import kernels
import kernels.reference as ref
import renderer.routes as routes
from renderer import Camera, Renderer, RenderSettings
from renderer.paths import orbit_path
from scenes import load_scene
from tests.kernels.synthetic import projected


def host_counts(how: str, device) -> torch.Tensor | None:
    """Where depth_order_counted reads its counts: a plain sync (None), or a pinned buffer (CUDA only)."""
    if how == "pinned" and torch.device(device).type != "cuda":
        pytest.skip("the counts are read through pinned memory on CUDA only")
    return torch.zeros(3, dtype=torch.int64, pin_memory=True) if how == "pinned" else None


@pytest.mark.parametrize("host", ["sync", "pinned"])
@pytest.mark.parametrize("compact", [True, False], ids=["compacted", "all sorted"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "torch"])
def test_counted_order_is_the_capacity_order_cut_to_the_visible(impl, compact, host, device):
    """The same Gaussians in the same order, depth ties by index, and the same pair offsets and counts, whether
    the visible Gaussians are found first or all N are sorted, and whether the counts are read with a sync or
    through pinned memory while the sort runs."""
    _, depths, tt, mt, _ = projected(1500, 64, 48, device, seed=11)
    depths[torch.nonzero(tt > 0).flatten()[::3]] = 2.5  # ties
    order, offsets, totals = ref.depth_order(depths, tt, mt, out=ref.order_outputs(1500, device))
    n_visible, n_pairs, n_macro_pairs = totals.tolist()
    got = impl.depth_order_counted(depths, tt, mt, compact=compact, host=host_counts(host, device))
    got_order, got_offsets, *got_counts = got
    assert got_counts == [n_visible, n_pairs, n_macro_pairs] and 300 < n_visible < 1500
    assert n_macro_pairs < n_pairs, "some Gaussians reach several tiles of one macro-tile"
    assert torch.equal(got_order.long(), order[:n_visible].long())
    assert torch.equal(got_offsets, offsets[:n_visible])


@pytest.mark.parametrize("host", ["sync", "pinned"])
@pytest.mark.parametrize("compact", [True, False], ids=["compacted", "all sorted"])
def test_counted_order_of_an_empty_view(device, compact, host):
    depths = torch.full((50,), float("inf"), device=device)
    tt = torch.zeros(50, dtype=torch.int32, device=device)
    pinned = host_counts(host, device)
    for d, t in ((depths, tt), (depths[:0], tt[:0])):
        order, offsets, *counts = kernels.depth_order_counted(d, t, t, compact=compact, host=pinned)
        assert order.numel() == offsets.numel() == 0 and counts == [0, 0, 0]


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
