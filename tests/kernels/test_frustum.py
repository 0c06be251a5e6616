"""Stage 1's frustum pre-cull (kernels/project.py `frustum=`): the projection's outputs are the same with it and
without it, on Gaussians placed where its bound is tightest (centres just off the image by about their own
footprint, at the near plane, behind it), and it does cull the ones that reach no tile."""

import math

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kernels
import kernels.reference as ref
from kernels.buffers import gaussian_extent
from kernels.constants import ALPHA_MIN
from kernels.project import _block_misses
from tests.analytic import covariance, quat_matrix, upper
from tests.conftest import nan_like
from tests.kernels.synthetic import PinholeCamera, camera, look_at

IMPLS = [pytest.param(kernels, id="triton"), pytest.param(ref, id="torch")]


def edge_scene(n: int, cam, seed: int = 0, device: str = "cpu"):
    """(means, covars, opacities, sh) of n Gaussians whose screen centres lie in [-0.6, 1.6] of the image each
    way (most off it), at depths from behind the camera to 30 units, with scales from needles to a fifth of a unit and
    opacities up to 1: many footprints cross an image edge, many miss it by less than their own size."""
    g = np.random.default_rng(seed)
    u = g.uniform(-0.6, 1.6, n) * cam.width
    v = g.uniform(-0.6, 1.6, n) * cam.height
    z = np.concatenate([g.uniform(-2.0, 0.05, n // 8), np.exp(g.uniform(math.log(0.02), math.log(30.0), n - n // 8))])
    g.shuffle(z)
    p_cam = np.stack([(u - cam.cx) / cam.fx * z, (v - cam.cy) / cam.fy * z, z], 1)
    T = np.asarray(cam.T_world_camera)
    means = p_cam @ T[:3, :3].T + T[:3, 3]
    scales = np.exp(g.uniform(-7.0, -1.5, (n, 3)))
    R = quat_matrix(g.normal(size=(n, 4)))
    covars = upper(covariance(R, scales))
    opac = g.uniform(0.002, 1.0, n)
    opac[:8] = 1.0  # the bound's largest t
    sh = g.normal(size=(n, 1, 3)) * 0.5
    f32 = dict(dtype=torch.float32, device=device)
    return (torch.tensor(means, **f32), torch.tensor(covars, **f32), torch.tensor(opac, **f32),
            torch.tensor(sh, dtype=kernels.SH_DTYPE, device=device))  # fmt: skip


def project(impl, scene, cam, tile, *, frustum=None, extent_scale=1.0, covar_scale=1.0, device="cpu", ortho=False):
    means, covars, opac, sh = scene
    n = means.shape[0]
    out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
    return impl.project_gaussians(means, covars * covar_scale, opac, sh, cam, 160, 120, sh_degree=0,
                                  tile_size=tile, out=out, frustum=frustum, extent_scale=extent_scale,
                                  ortho=ortho)  # fmt: skip


def scratch(n, device):
    return torch.full((n,), -1, dtype=torch.int32, device=device), torch.zeros(1, dtype=torch.int32, device=device)


def assert_same_projection(want, got):
    visible = want[2] > 0
    assert torch.equal(got[2], want[2]), f"tiles touched differ on rows {torch.nonzero(got[2] != want[2])[:8]}"
    assert torch.equal(got[3], want[3]), "macro-tiles touched differ"
    assert torch.equal(got[1][visible], want[1][visible]) and torch.isposinf(got[1][~visible]).all(), "depths"
    assert torch.equal(got[0][visible], want[0][visible]), "records of visible Gaussians"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("tile,seed,view_scale", [(8, 0, 1.0), (16, 1, 1.0), (8, 2, 1.7)], ids=str)
def test_the_pre_cull_changes_no_output_and_culls_what_reaches_no_tile(impl, tile, seed, view_scale, device):
    """The same outputs bit for bit with and without the pre-cull; the survivors hold every visible Gaussian
    and no Gaussian twice, and exclude most of those that are not (here more than half reach no tile). view_scale:
    a view matrix that scales as well as rotates (the bound takes ||W||_2 from it, not 1)."""
    n = 4000
    pose = look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0))
    cam = camera(160, 120, 55.0, pose)
    packed = cam.packed(device)
    packed[[0, 1, 2, 4, 5, 6, 8, 9, 10]] *= view_scale  # W scaled: the same picture of the scene shrunk by it
    scene = edge_scene(n, cam, seed, device)
    if view_scale != 1.0:
        means, covars, opac, sh = scene
        scene = (means / view_scale, covars / view_scale**2, opac, sh)
    extent = gaussian_extent(scene[1])
    survivors, count = scratch(n, device)
    want = project(impl, scene, packed, tile, device=device)
    got = project(impl, scene, packed, tile, frustum=(extent, survivors, count), device=device)
    assert_same_projection(want, got)
    kept = survivors[: int(count)].long()
    assert kept.unique().numel() == kept.numel() and bool((survivors[int(count) :] == -1).all())
    visible = want[2] > 0
    assert 200 < int(visible.sum()) < n // 2, "the scene should cross the image's edges"
    is_kept = torch.zeros(n, dtype=torch.bool, device=device)
    is_kept[kept] = True
    assert not bool((visible & ~is_kept).any()), "a visible Gaussian was culled"
    culled_of_invisible = int((~is_kept & ~visible).sum()) / int((~visible).sum())
    assert culled_of_invisible > 0.6, f"the pre-cull culled {culled_of_invisible:.0%} of those that reach no tile"


@pytest.mark.parametrize("impl", IMPLS)
def test_the_pre_cull_keeps_needles_that_reach_the_image_with_their_tips(impl, device):
    """The bound where it is tightest: opacity-1 needles along the camera's x axis (sd 0.2 along it, 1e-5 across),
    their ellipses about 200 px half-wide, centred from 1.1 half-widths to a pixel left of the image, so that the sweep
    crosses the centres whose far tips just reach the first tile column. The principal point is on the left edge (a
    crop's camera), so the clamped x/z term that the bound adds to cov_xx is 3.5% (53% at `camera`'s 0.44 w, room to
    spare): with T_BOUND's 1.02 shrunk to 0.9, the pre-cull culls dozens of the needles that reach a tile here
    (checked), and none of `edge_scene`'s random Gaussians. The same outputs with and without it, on a sweep most of
    which reaches the image and some of which does not."""
    n = 3000
    base = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    cam = PinholeCamera(160, 120, base.fx, base.fy, 0.0, base.cy, base.T_world_camera)
    t = -2.0 * math.log(ALPHA_MIN)  # an opacity-1 Gaussian's threshold
    half, sd = 200.0, 0.2
    z = math.sqrt(t) * cam.fx * sd / half  # the depth where the needle's ellipse is `half` px half-wide (eps2d aside)
    g = np.random.default_rng(7)
    u = np.linspace(-1.1 * half, -1.0, n)
    v = g.uniform(0.0, cam.height, n)
    p_cam = np.stack([(u - cam.cx) / cam.fx * z, (v - cam.cy) / cam.fy * z, np.full(n, z)], 1)
    T = np.asarray(cam.T_world_camera)
    means = p_cam @ T[:3, :3].T + T[:3, 3]
    covars = upper(covariance(np.broadcast_to(T[:3, :3], (n, 3, 3)), np.broadcast_to([sd, 1e-5, 1e-5], (n, 3))))
    f32 = dict(dtype=torch.float32, device=device)
    scene = (torch.tensor(means, **f32), torch.tensor(covars, **f32), torch.ones(n, **f32),
             torch.zeros(n, 1, 3, dtype=kernels.SH_DTYPE, device=device))  # fmt: skip
    packed = cam.packed(device)
    want = project(impl, scene, packed, 8, device=device)
    got = project(impl, scene, packed, 8, frustum=(gaussian_extent(scene[1]), *scratch(n, device)), device=device)
    assert_same_projection(want, got)
    reached = int((want[2] > 0).sum())
    assert n // 2 < reached < n - 100, f"{reached} of {n} needles reach a tile: the sweep should cross the bound"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("tile", [8, 16])
def test_the_pre_cull_of_an_orthographic_camera(impl, tile, device):
    """An orthographic camera (fx, fy in pixels per world unit): centres in [-0.6, 1.6] of the image each way at any
    depth, and opacity-1 needles along x whose ellipses' far tips just reach the image's left edge; the same
    outputs with and without the pre-cull, every visible Gaussian kept, most of the others culled."""
    n = 4000
    base = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    cam = PinholeCamera(160, 120, base.fx / 5.0, base.fy / 5.0, 0.0, base.cy, base.T_world_camera)
    g = np.random.default_rng(11)
    u, v = g.uniform(-0.6, 1.6, n) * cam.width, g.uniform(-0.6, 1.6, n) * cam.height
    z = np.concatenate([g.uniform(-2.0, 0.05, n // 8), g.uniform(0.05, 60.0, n - n // 8)])
    sd = np.exp(g.uniform(-7.0, -1.5, (n, 3)))
    # the needles: sd 0.2 along x, tips reaching from 1.1 half-widths left of the image to a pixel left of it
    m = n // 4
    half = math.sqrt(-2.0 * math.log(ALPHA_MIN)) * cam.fx * 0.2
    u[:m], z[:m], sd[:m] = np.linspace(-1.1 * half, -1.0, m), g.uniform(0.5, 20.0, m), [0.2, 1e-5, 1e-5]
    T = np.asarray(cam.T_world_camera)
    p_cam = np.stack([(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, z], 1)
    R = np.concatenate([np.broadcast_to(np.eye(3), (m, 3, 3)), quat_matrix(g.normal(size=(n - m, 4)))])
    opac = np.concatenate([np.ones(m), g.uniform(0.002, 1.0, n - m)])
    f32 = dict(dtype=torch.float32, device=device)
    scene = (torch.tensor(p_cam @ T[:3, :3].T + T[:3, 3], **f32),
             torch.tensor(upper(covariance(T[:3, :3] @ R, sd)), **f32), torch.tensor(opac, **f32),
             torch.zeros(n, 1, 3, dtype=kernels.SH_DTYPE, device=device))  # fmt: skip
    packed = cam.packed(device)
    survivors, count = scratch(n, device)
    want = project(impl, scene, packed, tile, device=device, ortho=True)
    got = project(impl, scene, packed, tile, frustum=(gaussian_extent(scene[1]), survivors, count), device=device,
                  ortho=True)  # fmt: skip
    assert_same_projection(want, got)
    visible = want[2] > 0
    is_kept = torch.zeros(n, dtype=torch.bool, device=device)
    is_kept[survivors[: int(count)].long()] = True
    assert not bool((visible & ~is_kept).any()), "a visible Gaussian was culled"
    assert m // 4 < int(visible[:m].sum()) < m - 50, "the needles should cross the bound"
    assert int((~is_kept & ~visible).sum()) > 0.6 * int((~visible).sum())


@pytest.mark.parametrize("impl", IMPLS)
def test_the_extent_scales_with_the_covariances(impl, device):
    """The renderer keeps one extent for the base covariances and passes the scale modifier squared: scaled
    covariances with the scaled extent give the unculled outputs; the base extent alone would not (checked: the
    scaled scene has Gaussians that only its scaled extent keeps)."""
    n = 3000
    cam = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    packed = cam.packed(device)
    scene = edge_scene(n, cam, 3, device)
    extent = gaussian_extent(scene[1])
    s2 = 9.0
    want = project(impl, scene, packed, 8, covar_scale=s2, device=device)
    got = project(impl, scene, packed, 8, frustum=(extent, *scratch(n, device)), extent_scale=s2, covar_scale=s2,
                  device=device)  # fmt: skip
    assert_same_projection(want, got)
    stale = project(impl, scene, packed, 8, frustum=(extent, *scratch(n, device)), covar_scale=s2, device=device)
    assert not torch.equal(stale[2], want[2]), "the scaled scene should need the scaled extent"


def test_the_extent_bounds_the_largest_eigenvalue():
    """gaussian_extent against numpy's eigenvalues, on covariances from needles to spheres in every orientation."""
    g = np.random.default_rng(5)
    R = quat_matrix(g.normal(size=(2000, 4)))
    S = covariance(R, np.exp(g.uniform(-8.0, 3.0, (2000, 3))))
    lam = np.linalg.eigvalsh(S)[:, -1]
    extent = gaussian_extent(torch.tensor(upper(S), dtype=torch.float32)).double().numpy()
    assert (extent >= lam).all(), float((lam / extent).max())
    assert (extent <= 3.0001 * lam).all(), "the trace bounds it within 3x"


@pytest.mark.parametrize("pre_cull", [False, True], ids=["all rows", "pre-culled"])
def test_a_gaussians_outputs_do_not_depend_on_the_others_in_its_program(pre_cull, device, monkeypatch):
    """The projection at each block the renderer may launch it with (kernels/project.py `project_block`) gives the
    same outputs bit for bit: a Gaussian's own, whichever others share its program (pre-culled, the survivors' list
    decides that, in the atomics' order on a GPU). Compiled for the H200 that held at 32 and 128 Gaussians a program
    and not at 256, two a thread, which the renderer does not launch (BENCHMARKS.md, section 43); in the interpreter
    (the kernel's logic, without the compiler's) at 256 too."""
    import os

    import kernels.project as kp

    monkeypatch.setattr(kp, "interpreting", lambda: False)  # the launcher takes the block asked for
    n = 1000
    cam = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    packed = cam.packed(device)
    means, covars, opac, sh = edge_scene(n, cam, 3, device)
    blocks = [32, 128] + ([256] if os.environ.get("TRITON_INTERPRET") == "1" else [])
    outs = []
    for block in blocks:
        frustum = (gaussian_extent(covars), *scratch(n, device)) if pre_cull else None
        out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
        outs.append(kernels.project_gaussians(means, covars, opac, sh, packed, 160, 120, sh_degree=0, out=out,
                                              frustum=frustum, block=block))  # fmt: skip
    assert 100 < int((outs[0][2] > 0).sum()) < n // 2
    for got in outs[1:]:
        assert_same_projection(outs[0], got)


def test_a_grid_for_fewer_survivors_still_projects_every_one(device, monkeypatch):
    """The survivors' projection runs programs for the launcher's estimate of them (`survivors_bound`) and each
    loops a grid's stride over the list: with one program, three, or one a block, every survivor is projected,
    each exactly once, and the outputs are those without the pre-cull bit for bit."""
    import kernels.project as kp

    monkeypatch.setattr(kp, "interpreting", lambda: False)  # the launcher takes the block asked for
    n, block = 1000, 32
    cam = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    packed = cam.packed(device)
    means, covars, opac, sh = edge_scene(n, cam, 3, device)
    want = project(kernels, (means, covars, opac, sh), packed, 8, device=device)
    counts = []
    for bound in (1, 3 * block - 5, None):
        survivors, count = scratch(n, device)
        out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
        got = kernels.project_gaussians(means, covars, opac, sh, packed, 160, 120, sh_degree=0, out=out, block=block,
                                        frustum=(gaussian_extent(covars), survivors, count),
                                        survivors_bound=bound)  # fmt: skip
        assert_same_projection(want, got)
        counts.append(int(count))
    assert counts[0] > 6 * block and len(set(counts)) == 1, counts


def cluster_scene(blocks: int, block: int, cam, seed: int = 0, device: str = "cpu", max_spread: float = 1.0):
    """(means, covars, opacities, sh) of `blocks` clusters of `block` consecutive Gaussians each (a block of the
    pre-cull's bounds): each cluster centred where `edge_scene` puts a Gaussian (most off the image, many just
    off an edge, some behind the camera or across the near plane), of a spread from a point to `max_spread`, its
    Gaussians of scales from needles to a fifth of a unit; a tenth of the clusters are a single Gaussian repeated
    (a sphere of radius 0: the bound at its tightest, only the block test's own slack beyond the Gaussian's)."""
    g = np.random.default_rng(seed)
    base = edge_scene(blocks, cam, seed)[0].double().numpy()  # the clusters' centres
    spread = np.exp(g.uniform(math.log(1e-3), math.log(max_spread), blocks))
    spread[: blocks // 10] = 0.0
    means = (base[:, None, :] + g.normal(size=(blocks, block, 3)) * spread[:, None, None]).reshape(-1, 3)
    n = blocks * block
    scales = np.exp(g.uniform(-7.0, -1.5, (n, 3)))
    R = quat_matrix(g.normal(size=(n, 4)))
    covars = upper(covariance(R, scales))
    opac = g.uniform(0.002, 1.0, n)
    single = np.repeat(np.arange(blocks) < blocks // 10, block)
    first = np.repeat(np.arange(blocks) * block, block)
    covars[single], opac[single] = covars[first[single]], 1.0
    f32 = dict(dtype=torch.float32, device=device)
    return (torch.tensor(means, **f32), torch.tensor(covars, **f32), torch.tensor(opac, **f32),
            torch.zeros(n, 1, 3, dtype=kernels.SH_DTYPE, device=device))  # fmt: skip


def block_view(view: str):
    """(packed camera, scene transform) of the block tests' views: the edge scenes' pinhole; the same with the
    principal point on the left edge (a crop: the clamped x/z term at its largest); a view matrix that scales as
    well as rotates; an orthographic camera."""
    cam = camera(160, 120, 55.0, look_at((0.4, -0.3, -5.0), (0.2, 0.1, 0.0)))
    if view in ("crop", "ortho"):
        f = 5.0 if view == "ortho" else 1.0
        cam = PinholeCamera(160, 120, cam.fx / f, cam.fy / f, 0.0, cam.cy, cam.T_world_camera)
    return cam


def scaled(view, packed, scene):
    """The "scaled view": W scaled by 1.7, the scene shrunk by it (the same picture)."""
    if view != "scaled view":
        return packed, scene
    packed = packed.clone()
    packed[[0, 1, 2, 4, 5, 6, 8, 9, 10]] *= 1.7
    means, covars, opac, sh = scene
    return packed, (means / 1.7, covars / 1.7**2, opac, sh)


VIEWS = ["pinhole", "scaled view", "crop", "ortho"]


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("block", [1, 64])
def test_a_block_the_bounds_rule_out_holds_no_survivor(view, block):
    """`block_misses` (the pre-cull's block test, twin of kernels/project.py `_block_misses`) against the pre-cull's
    own test of each Gaussian (`frustum_survivors`): no block it rules out holds a survivor, on clusters placed as
    `edge_scene` places Gaussians (many just off an edge by their own footprint, some across the near plane),
    single points among them; a block of one Gaussian is the bound at its tightest. And it is not vacuous: it rules
    out most of the blocks that hold no survivor."""
    from kernels.project import frustum_block_bounds

    blocks = 3000 if block == 1 else 400
    cam = block_view(view)
    packed, (means, covars, opac, sh) = scaled(view, cam.packed(), cluster_scene(blocks, block, cam, seed=block))
    ortho = view == "ortho"
    for tile, small in ((8, 1.0), (16, 1.0), (8, 1e-4)):  # small: footprints of a pixel, the spread decides
        extent = gaussian_extent(covars * small)
        keep = ref.frustum_survivors(means, extent, packed, 160, 120, 0.01, 1e10, 0.3, tile, ortho)
        bounds = frustum_block_bounds(means, extent, block)
        missed = ref.block_misses(bounds, packed, 160, 120, 0.01, 1e10, 0.3, tile, ortho=ortho)
        held = keep.view(blocks, block).any(1)
        assert not bool((missed & held).any()), f"{int((missed & held).sum())} blocks ruled out hold a survivor"
        empty = int((~held).sum())
        assert empty > blocks // 4, "the scene should put many blocks off the image"
        assert int(missed.sum()) > 0.6 * empty, f"ruled out {int(missed.sum())} of {empty} blocks with no survivor"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("view", VIEWS)
def test_the_pre_cull_with_block_bounds_keeps_the_same_survivors(impl, view, device, monkeypatch):
    """The pre-cull with the blocks' bounds (`bounds=`), at blocks of 64 (the launcher's block taken from
    `frustum_block`): the same survivors as without them, and the same outputs as no pre-cull, bit for bit, on
    `test_a_block_the_bounds_rule_out_holds_no_survivor`'s clusters, where a block wrongly ruled out loses
    survivors (a block not ruled out changes no output: that is the GPU's time, BENCHMARKS.md)."""
    import kernels.project as kp

    block, blocks = 64, 200
    monkeypatch.setattr(kp, "frustum_block", lambda: block)
    cam = block_view(view)
    packed, scene = scaled(view, cam.packed(device), cluster_scene(blocks, block, cam, seed=block, device=device))
    ortho, n = view == "ortho", blocks * block
    extent = gaussian_extent(scene[1])
    bounds = kp.frustum_block_bounds(scene[0], extent)
    assert bounds.shape == (blocks, 8) and bool((bounds[:, 5] == block).all())
    want = project(impl, scene, packed, 8, device=device, ortho=ortho)
    kept = []
    for b in (None, bounds):
        survivors, count = scratch(n, device)
        means, covars, opac, sh = scene
        out = tuple(nan_like(t) for t in kernels.project_outputs(n, device))
        got = impl.project_gaussians(means, covars, opac, sh, packed, 160, 120, sh_degree=0, out=out,
                                     frustum=(extent, survivors, count), bounds=b, ortho=ortho)  # fmt: skip
        assert_same_projection(want, got)
        kept.append(torch.sort(survivors[: int(count)]).values)
    assert torch.equal(kept[0], kept[1]), "the bounds changed the survivors"
    missed = ref.block_misses(bounds, packed, 160, 120, 0.01, 1e10, 0.3, 8, ortho=ortho)
    assert blocks // 5 < int(missed.sum()) < blocks, "many blocks, not all, should be ruled out"


@triton.jit
def _misses_kernel(bounds_ptr, camera_ptr, out_ptr, width, height, near, far, eps2d, extent_scale,
                   TILE: tl.constexpr, ORTHO: tl.constexpr):  # fmt: skip
    """kernels/project.py `_block_misses` for block program_id's bounds, into out (1 = ruled out)."""
    pid = tl.program_id(0)
    missed = _block_misses(bounds_ptr + pid * 8, camera_ptr, width, height, near, far, eps2d, extent_scale, TILE,
                           ORTHO)  # fmt: skip
    tl.store(out_ptr + pid, missed.to(tl.int32))


@pytest.mark.parametrize("view", VIEWS)
def test_the_kernels_block_test_is_its_twins(view, device):
    """The pre-cull kernel's block test itself (`_block_misses`, one program a block) against `block_misses` on the
    single-point blocks where the bound is tightest, and clusters: the same blocks ruled out (float32 both, in their
    own order of operations: at most a block in a thousand may differ), none of them holding a survivor."""
    from kernels.project import frustum_block_bounds

    cam = block_view(view)
    ortho = view == "ortho"
    for block, blocks, small in ((1, 1000, 1.0), (64, 200, 1.0), (64, 200, 1e-4)):  # small: footprints of a pixel
        packed, (means, covars, opac, sh) = scaled(
            view, cam.packed(device), cluster_scene(blocks, block, cam, seed=block, device=device)
        )
        covars = covars * small
        extent = gaussian_extent(covars)
        bounds = frustum_block_bounds(means, extent, block)
        got = torch.zeros(blocks, dtype=torch.int32, device=device)
        _misses_kernel[(blocks,)](bounds, packed, got, 160, 120, 0.01, 1e10, 0.3, 1.0, TILE=8, ORTHO=ortho)
        want = ref.block_misses(bounds, packed, 160, 120, 0.01, 1e10, 0.3, 8, ortho=ortho)
        assert int((got.bool() != want).sum()) <= blocks // 1000, (int(got.sum()), int(want.sum()))
        keep = ref.frustum_survivors(means, extent, packed, 160, 120, 0.01, 1e10, 0.3, 8, ortho)
        assert not bool((got.bool() & keep.view(blocks, block).any(1)).any()), "a block ruled out holds a survivor"
        assert int(got.sum()) > blocks // 5
