"""AdaGScale's tau scaled to the frame (renderer/params.py, `adagscale_frame_tau`): where many Gaussians share
each pixel, a fixed tau broke the 40 dB path / 35 dB frame floor; the frame's budget holds it.

The hard cases are dense views: the bundled plant drawn 96 pixels wide (16 Gaussians per pixel), and a synthetic
overview of a composite (clusters of small Gaussians with gaps between them, 20 per pixel), both rendered with the
torch twins against exact frames. `budget=inf` is the rule before: a fixed tau of 0.1 per Gaussian."""

import math

import pytest
import torch

from renderer import Camera, Renderer, RenderSettings, look_at_pose
from renderer.params import adagscale_frame_tau
from renderer.paths import orbit_path
from scenes import load_scene
from scenes.bundled import bundled_scene_path
from scenes.gaussians import GaussianScene
from tools.metrics import path_psnr, psnr

FLOOR_PATH, FLOOR_FRAME = 40.0, 35.0
FIXED_TAU = RenderSettings(adagscale=True, adagscale_budget=math.inf)  # the rule before the budget
BUDGET = RenderSettings(adagscale=True)


def overview_scene(per_cluster=2500, grid=(6, 4), seed=0) -> GaussianScene:
    """A composite seen whole, in miniature: a grid of clusters of small Gaussians (0.002-0.014 world units,
    on screen about a pixel) with random opacities and colours, and background between the clusters."""
    g = torch.Generator().manual_seed(seed)
    means, colours = [], []
    for i in range(grid[0]):
        for j in range(grid[1]):
            r = torch.rand(per_cluster, generator=g).sqrt() * 0.38
            a = torch.rand(per_cluster, generator=g) * 2 * math.pi
            h = torch.rand(per_cluster, generator=g) * 0.3
            centre = torch.tensor([i - (grid[0] - 1) / 2, 0.0, j - (grid[1] - 1) / 2])
            means.append(torch.stack([r * torch.cos(a), -h, r * torch.sin(a)], 1) + centre)
            colours.append(torch.rand(3, generator=g) + 0.35 * torch.randn(per_cluster, 3, generator=g))
    means = torch.cat(means)
    n = means.shape[0]
    log_scales = torch.log(torch.rand(n, 3, generator=g) * 0.012 + 0.002)
    quats = torch.randn(n, 4, generator=g)
    opacity = torch.rand(n, generator=g) * 0.9 + 0.05
    sh = ((torch.cat(colours) - 0.5) / 0.28209479177387814)[:, None, :]  # colour = SH_C0 dc + 0.5
    return GaussianScene(means, quats, log_scales, torch.log(opacity / (1 - opacity)), sh)


def overview_cameras(width, height):
    cams = []
    for k in range(3):
        a = math.radians(-20 + 20 * k)
        eye = (4.2 * math.sin(a), -3.2, -4.2 * math.cos(a))
        cams.append(Camera.from_fov(width, height, 60.0, look_at_pose(eye, (0, 0, 0), (0, -1, 0))))
    return cams


def fidelity(scene, cams, settings):
    """(frame PSNRs against exact, the path's PSNR, mean fraction of the pairs kept), torch twins."""
    r = Renderer(scene, backend="torch")
    values, kept = [], []
    for cam in cams:
        exact = r.render(cam)
        img, n_exact = exact.image.clone(), exact.stats.n_pairs
        out = r.render(cam, settings)  # its tau from the exact frame's visible count, as in a stream of frames
        values.append(psnr(out.image, img))
        kept.append(out.stats.n_pairs / n_exact)
    return values, path_psnr(values), sum(kept) / len(kept)


@pytest.fixture(scope="module")
def plant():
    return load_scene(bundled_scene_path())


@pytest.mark.parametrize("case", ["plant-96x72", "overview-64x48"])
def test_the_budget_holds_the_floor_where_a_fixed_tau_broke_it(plant, case):
    if case == "plant-96x72":
        scene, cams = plant, orbit_path(plant, 96, 72, 3)
    else:
        scene, cams = overview_scene(), overview_cameras(64, 48)
    frames, path, _ = fidelity(scene, cams, FIXED_TAU)
    assert path < FLOOR_PATH or min(frames) < FLOOR_FRAME, (case, frames, path)  # the old rule fails here
    frames, path, kept = fidelity(scene, cams, BUDGET)
    assert path >= FLOOR_PATH and min(frames) >= FLOOR_FRAME, (case, frames, path)
    assert kept <= 0.9, (case, kept)  # and still removes pairs


def test_sparse_frames_keep_the_per_gaussian_tau():
    """Objects at 1080p (113k Gaussians on 2M pixels) get adagscale_tau itself; the budget binds only where the
    Gaussians per pixel exceed budget / tau."""
    s = RenderSettings(adagscale=True)
    assert adagscale_frame_tau(s, 1920, 1080, 113_648) == s.adagscale_tau
    assert adagscale_frame_tau(s, 96, 72, 113_648) == pytest.approx(s.adagscale_budget * 96 * 72 / 113_648)
    assert adagscale_frame_tau(s, 96, 72, 0) == s.adagscale_tau  # a frame that saw nothing
    assert adagscale_frame_tau(RenderSettings(adagscale_budget=0.0), 96, 72, 10) == 0.0  # exact tiles


def test_each_frame_takes_its_tau_from_the_frame_before(plant):
    """The first frame counts every Gaussian of the scene (the safe side), later ones the frame before's visible
    count; the tau used is in the frame's stats, on the device for the kernel (a replayed graph reads it)."""
    cams = orbit_path(plant, 96, 72, 3)
    r = Renderer(plant, backend="torch")
    s = RenderSettings(adagscale=True)
    first = r.render(cams[0], s)
    assert first.stats.adagscale_tau == pytest.approx(adagscale_frame_tau(s, 96, 72, len(plant)))
    second = r.render(cams[1], s)
    assert second.stats.adagscale_tau == pytest.approx(adagscale_frame_tau(s, 96, 72, first.stats.n_visible))
    assert float(r.params.on_device[0][27]) == pytest.approx(second.stats.adagscale_tau)
    assert r.render(cams[1]).stats.adagscale_tau is None  # exact frames bin exactly


def test_bad_budget_is_refused():
    with pytest.raises(ValueError, match="adagscale_budget"):
        RenderSettings(adagscale_budget=-0.1).validate()
