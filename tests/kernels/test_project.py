"""kernels.project_gaussians (Triton) against kernels.reference.project_gaussians (torch)."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like
from tests.kernels.synthetic import assert_close_rows, camera, gaussians


def run_both(n, width, height, sh_degree, device, seed=0, fov=60.0, tile=16):
    means, covars, opac, sh = gaussians(n, sh_degree=sh_degree, seed=seed, device=device)
    cam = camera(width, height, fov).packed(device)
    kw = dict(sh_degree=sh_degree, near=0.01, far=1e10, eps2d=0.3, tile_size=tile)
    want = ref.project_gaussians(means, covars, opac, sh, cam, width, height, **kw)
    poisoned = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    got = kernels.project_gaussians(means, covars, opac, sh, cam, width, height, out=poisoned, **kw)
    return want, got


@pytest.mark.parametrize(
    "n,size,degree,tile",
    [(1, (16, 16), 0, 8), (7, (37, 53), 1, 16), (1000, (128, 96), 2, 8), (1000, (37, 53), 3, 16),
     (20_011, (128, 96), 3, 8)],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v),
)  # fmt: skip
def test_project_matches_reference(n, size, degree, tile, device):
    width, height = size
    want, got = run_both(n, width, height, degree, device, tile=tile)
    names = ["means2d", "conic_opacity", "depths", "colors", "bin_t"]
    tt_want, tt_got = want[4], got[4]
    # integer output: exact, except tile-boundary cases that differ by float rounding alone (bounded)
    diff = (tt_want - tt_got).abs()
    assert int((diff > 1).sum()) == 0, f"tile counts differ by more than 1 on rows {torch.nonzero(diff > 1)[:5]}"
    assert int((diff == 1).sum()) <= max(1, n // 1000), f"{int((diff == 1).sum())} rows differ by one tile"
    rows = (tt_want > 0) & (tt_got > 0)
    for name, w, g in zip(names, want[:4] + want[5:], got[:4] + got[5:]):
        assert torch.isfinite(g[rows]).all(), f"{name}: non-finite values on visible rows (unwritten?)"
        assert_close_rows(name, w, g, rows)
    # culled rows sort last in the depth order: their depth is +inf, written (not left poisoned)
    assert torch.isposinf(got[2][tt_got == 0]).all()


def test_project_edge_cases_culled(device):
    """Behind the camera, off-screen and sub-threshold Gaussians are culled; the huge one is kept."""
    _, got = run_both(16, 64, 48, 0, device)
    tiles = got[4].cpu()
    assert tiles[0] == 0, "behind the camera must be culled"
    assert tiles[2] == 0, "far off-screen must be culled"
    assert tiles[5] == 0, "opacity below 1/255 must be culled"
    assert tiles[3] == 12, "the huge Gaussian covers all 4x3 tiles"
    assert tiles[4] >= 1 and tiles[6] >= 1


def test_project_near_plane_is_inclusive(device):
    """gsplat culls z < near; a Gaussian at z == near exactly is kept (when it reaches the image)."""
    means = torch.tensor([[0.0, 0.0, 0.5]], device=device)
    covars = torch.tensor([[1e-4, 0, 0, 1e-4, 0, 1e-4]], device=device)
    opac = torch.tensor([0.9], device=device)
    sh = torch.zeros(1, 1, 3, device=device)
    cam = camera(32, 32)
    cam.T_world_camera = torch.eye(4, dtype=torch.float64).numpy()
    for near, expect_visible in ((0.5, True), (0.5000001, False)):
        out = kernels.project_gaussians(means, covars, opac, sh, cam.packed(device), 32, 32, sh_degree=0, near=near)
        assert (int(out[4][0]) > 0) == expect_visible, near
