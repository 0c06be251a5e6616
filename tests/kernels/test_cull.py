"""Temporal reuse's kernel part: the window cull against its torch twin, plus the properties the renderer
relies on."""

import pytest
import torch

import kernels
import kernels.reference as ref
from renderer import Camera, look_at_pose
from tests.kernels.synthetic import camera, gaussians


def window_cameras(width, height, device):
    """Three cameras of a short move, and one looking away from most of the Gaussians."""
    poses = [look_at_pose((0.3 + 0.2 * i, -0.2, -4.0 + 0.5 * i), (0.4 * i, 0, 0), (0, -1, 0)) for i in range(3)]
    poses.append(look_at_pose((0.0, 0.0, 0.0), (1.0, 0.0, 0.2), (0, -1, 0)))
    cams = [Camera.from_fov(width, height, 50.0, p) for p in poses]
    return cams, torch.stack([c.packed() for c in cams]).to(device)


@pytest.mark.parametrize("margin,guard", [(16.0, 0.0), (64.0, 0.0), (16.0, 0.8)])
def test_cull_window_matches_twin(margin, guard, device):
    means, covars, opac, sh = gaussians(4000, seed=3, device=device)
    _, packed = window_cameras(96, 64, device)
    # the camera inside the cloud alone: the only window whose guard keeps Gaussians its frustum does not (with the
    # other cameras, what lies near it is in their frustums anyway, and a twin that got the guard wrong passed)
    for cams in (packed[:1], packed[:3], packed, packed[3:]):
        want = ref.cull_window(means, covars, opac, cams, 96, 64, margin=margin, guard=guard)
        got = kernels.cull_window(means, covars, opac, cams, 96, 64, margin=margin, guard=guard)
        assert got.dtype == torch.int8 and got.shape == (4000,)
        assert torch.equal(got, want), int((got != want).sum())
    if guard:
        unguarded = ref.cull_window(means, covars, opac, packed[3:], 96, 64, margin=margin, guard=0.0)
        assert int(want.sum()) > int(unguarded.sum())


def test_cull_window_keeps_every_gaussian_its_cameras_render(device):
    """The exactness of a known-camera window: whatever a camera's project stage keeps, the cull keeps."""
    means, covars, opac, sh = gaussians(4000, seed=4, device=device)
    cams, packed = window_cameras(80, 48, device)
    keep = kernels.cull_window(means, covars, opac, packed, 80, 48, margin=16.0).bool()
    rendered = torch.zeros_like(keep)
    for cam in packed:
        tt = kernels.project_gaussians(means, covars, opac, sh, cam, 80, 48, sh_degree=0)[2]
        rendered |= tt > 0
    assert int(rendered.sum()) > 500
    assert not (rendered & ~keep).any(), int((rendered & ~keep).sum())
    # the camera inside the cloud, alone: it culls what lies behind and beside it, and is a subset of the window
    inside = kernels.cull_window(means, covars, opac, packed[3:], 80, 48, margin=16.0).bool()
    tt = kernels.project_gaussians(means, covars, opac, sh, packed[3], 80, 48, sh_degree=0)[2]
    assert not ((tt > 0) & ~inside).any()
    assert int(inside.sum()) < 2500 and not (inside & ~keep).any()


def test_guard_keeps_gaussians_near_the_camera(device):
    means, covars, opac, sh = gaussians(2000, seed=5, device=device)
    cam = camera(64, 48)
    packed = cam.packed(device)[None]
    near = (means - torch.tensor(cam.position, dtype=torch.float32, device=device)).norm(dim=1) < 1.5
    near &= opac >= 1 / 255
    keep = kernels.cull_window(means, covars, opac, packed, 64, 48, guard=1.5).bool()
    assert int(near.sum()) > 0 and not (near & ~keep).any()


def test_an_orthographic_window_keeps_what_its_cameras_render_and_matches_its_twin(device):
    """Orthographic cameras (renderer/camera.py `orthographic`, zoomed in on the cloud): the cull
    equals its twin and keeps whatever each camera's orthographic projection keeps, and not everything."""
    from renderer import orthographic

    means, covars, opac, sh = gaussians(4000, seed=6, device=device)
    cams, _ = window_cameras(80, 48, device)
    ortho = torch.stack([orthographic(c, 1.0).packed() for c in cams[:3]]).to(device)  # a unit across: zoomed in
    keep = kernels.cull_window(means, covars, opac, ortho, 80, 48, margin=16.0, ortho=True)
    assert torch.equal(keep, ref.cull_window(means, covars, opac, ortho, 80, 48, margin=16.0, ortho=True))
    rendered = torch.zeros_like(keep, dtype=torch.bool)
    for cam in ortho:
        rendered |= kernels.project_gaussians(means, covars, opac, sh, cam, 80, 48, sh_degree=0, ortho=True)[2] > 0
    assert int(rendered.sum()) > 500 and not (rendered & ~keep.bool()).any()
    assert int(keep.sum()) < 4000 - 200, int(keep.sum())
