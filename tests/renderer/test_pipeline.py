"""End to end: the Triton pipeline against the torch reference pipeline on real scenes (small images)."""

import numpy as np
import pytest
import torch

from renderer import Camera, Renderer, RenderSettings, default_camera
from renderer.paths import orbit_path
from scenes import load_scene
from tools.metrics import psnr


@pytest.mark.parametrize(
    "name,every,size",
    [
        ("playbot_crop.ply", 2, (37, 53)),  # SH degree 2, an odd size
        ("donut_fused.ply", 8, (48, 32)),  # quaternions not normalised
        ("lod1_tile_0_0.5x.ply", 4, (40, 30)),  # needle-flat splats (anisotropy up to 4e9); not bundled
    ],
)
def test_triton_matches_torch_reference_on_real_scenes(name, every, size, scene_path, device):
    scene = load_scene(scene_path(name))
    scene = scene.subset(torch.arange(0, len(scene), every))  # every k-th Gaussian: the interpreter is slow
    width, height = size
    tri = Renderer(scene, device=device, backend="triton")
    ref = Renderer(scene, device=device, backend="torch")
    exact = RenderSettings(blend_precision="fp32")  # the twins blend in float32 (a GPU's fp16 pairs: their own test)
    for cam in orbit_path(scene, width, height, 3)[1:2]:
        a, b = tri.render(cam, exact), ref.render(cam, exact)
        assert abs(a.stats.n_pairs - b.stats.n_pairs) <= 2
        assert a.stats.n_visible > 0
        assert psnr(a.image, b.image) >= 60.0, psnr(a.image, b.image)
        assert psnr(a.alpha, b.alpha) >= 60.0
        assert (a.rgba8.int() - b.rgba8.int()).abs().max() <= 1


def test_settings_background_and_sh_degree(scene_path, device):
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="torch")  # settings handling, not kernels, is under test
    cam = default_camera(scene, 32, 24)
    white = r.render(cam, RenderSettings(background=(1.0, 1.0, 1.0))).image.clone()
    black = r.render(cam, RenderSettings()).image.clone()
    alpha = r.render(cam).alpha.clone()
    # background enters as T * colour: white - black = (1 - alpha) per channel
    assert torch.allclose(white - black, (1 - alpha)[..., None].expand_as(white), atol=1e-5)
    dc_only = r.render(cam, RenderSettings(sh_degree=0)).image.clone()
    assert psnr(dc_only, black) < 60.0, "dropping SH bands must change a degree-2 scene"


def test_camera_inside_scene_and_nothing_visible(scene_path, device):
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    r = Renderer(scene, device=device, backend="triton")
    inside = Camera.look_at(scene.center().numpy(), scene.center().numpy() + np.array([0, 0, 1.0]), width=24, height=16)
    out = r.render(inside)
    assert torch.isfinite(out.image).all()
    c = scene.center().numpy()
    away = Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=24, height=16)
    out = r.render(away, RenderSettings(background=(0.2, 0.4, 0.6)))
    assert out.stats.n_pairs == 0 and out.stats.n_visible == 0
    assert torch.allclose(out.image, torch.tensor([0.2, 0.4, 0.6], device=device).expand(16, 24, 3))


def test_absurd_sizes_are_refused(scene_path):
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, backend="torch")
    for w, h in ((0, 10), (10, -1), (9000, 10)):
        with pytest.raises(ValueError, match="image size"):
            r.render(Camera.from_fov(w, h, 60.0) if w > 0 and h > 0 else Camera(w, h, 10, 10, 5, 5))


def test_first_frame_with_no_pairs(scene_path, device):
    """A fresh renderer whose first camera sees nothing renders the background (no empty workspace crash)."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="triton")
    c = scene.center().numpy()
    away = Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=16, height=16)
    out = r.render(away)
    assert out.stats.n_pairs == 0 and torch.equal(out.image, torch.zeros_like(out.image))


def test_depth_output_on_hand_built_gaussians(device):
    """Expected depth sum(w z) / sum(w): an opaque Gaussian at z = 3 in front of one at z = 5 reads ~3 where it
    covers the pixel, 5 beside it where only the far one does, and 0 where nothing is hit; the RGB frame is
    unchanged by asking for depth."""
    from renderer import look_at_pose
    from scenes import make_scene

    scene = make_scene(
        torch.tensor([[0.0, 0, 3], [0.5, 0, 5]]), torch.tensor([[1.0, 0, 0, 0]] * 2),
        torch.log(torch.tensor([[0.3] * 3, [0.6] * 3])), torch.logit(torch.tensor([0.99, 0.9])),
        torch.rand(2, 1, 3),
    )  # fmt: skip
    cam = Camera.from_fov(32, 32, 60, look_at_pose((0, 0, 0), (0, 0, 1), (0, -1, 0)))
    for backend in ("triton", "torch"):
        r = Renderer(scene, device=device, backend=backend)
        plain = r.render(cam).image.clone()
        out = r.render(cam, RenderSettings(depth=True))
        assert torch.equal(out.image, plain)
        assert 3.0 <= float(out.depth[16, 16]) < 3.1  # the far one shows through the 1.2% left
        assert abs(float(out.depth[16, 28]) - 5.0) < 1e-3
        assert float(out.depth[0, 0]) == 0.0 and float(out.alpha[0, 0]) < 1 / 255


def test_depth_triton_matches_torch_on_a_real_scene(scene_path, device):
    scene = load_scene(scene_path("playbot_lod2.sog"))  # depths of 2-4 here: a colour path clamped to 1 shows
    scene = scene.subset(torch.arange(0, len(scene), 64))  # 1,954 real Gaussians: the interpreter is slow
    cam = orbit_path(scene, 48, 32, 3)[1]
    s = RenderSettings(depth=True, blend_precision="fp32")  # the twins blend in float32
    a = Renderer(scene, device=device, backend="triton").render(cam, s)
    b = Renderer(scene, device=device, backend="torch").render(cam, s)
    covered = b.alpha > 0.5
    assert int(covered.sum()) > 100
    rel = ((a.depth - b.depth).abs() / b.depth.clamp_min(1e-6))[covered]
    assert float(rel.max()) < 1e-3, float(rel.max())


def test_tile_schedule_changes_no_pixel_and_keeps_tile_counts(scene_path, device):
    """The rasterizer's programs taking the longest lists first, or the tiles in id order: the same image bit for
    bit, and the same per-tile list lengths (which the schedule's kernels write)."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    cam = orbit_path(scene, 24, 16, 3)[1]
    r = Renderer(scene, device=device, backend="triton")
    r.render(cam)  # sizes the pair capacity and picks the launch configuration that both frames below then use
    first = r.render(cam, RenderSettings(tile_schedule="longest-first"))
    image, counts = first.image.clone(), first.tile_counts.clone()
    assert int(counts.max()) > 4 * max(1, int(counts.float().median())), "uneven lists: the order matters"
    in_order = r.render(cam, RenderSettings(tile_schedule="in-order"))
    assert torch.equal(in_order.image, image) and torch.equal(in_order.tile_counts, counts)
    with pytest.raises(ValueError, match="tile_schedule"):
        RenderSettings(tile_schedule="random").validate()


def test_blend_precision_reaches_the_rasterizer_and_is_a_kind_of_frame(scene_path, device, monkeypatch):
    """`blend_precision` reaches the rasterizer as `half` (fp16 pairs, where the scalar loop runs: a GPU) and each
    precision is a kind of frame of its own (a captured graph bakes its kernel). The batched loop, a CPU's, blends
    in float32 either way: the same image there; on a GPU the fp16 pairs' image, within their floor of it."""
    import kernels
    from renderer.frame_kind import baked_settings

    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    cam = orbit_path(scene, 24, 16, 3)[1]
    r = Renderer(scene, device=device, backend="triton")
    asked, rasterize = [], kernels.rasterize_tiles
    monkeypatch.setattr(kernels, "rasterize_tiles", lambda *a, **kw: asked.append(kw["half"]) or rasterize(*a, **kw))
    half = r.render(cam, RenderSettings(blend_precision="fp16")).image.clone()
    assert asked and all(asked)  # (the first frame may bin twice: its capacities are sized by it)
    asked.clear()
    full = r.render(cam, RenderSettings(blend_precision="fp32")).image.clone()
    assert asked and not any(asked)
    asked.clear()
    r.render(cam, RenderSettings(depth=True))  # the depth pass blends in float32 (`Frame.render_depth` says why)
    assert asked[-2:] == [True, False], asked
    assert baked_settings(RenderSettings(blend_precision="fp32")) != baked_settings(RenderSettings())
    if device == "cuda":
        assert psnr(half, full) >= 60.0 and not torch.equal(half, full)
    else:
        assert torch.equal(half, full)
    with pytest.raises(ValueError, match="blend_precision 'fp8': expected fp16 or fp32"):
        RenderSettings(blend_precision="fp8").validate()


def test_blends_in_pairs_names_the_settings_whose_precision_reaches_the_frames(monkeypatch):
    """The viewer offers the precision where it changes the frames: the scalar loop's, asked for or taken by "auto"
    where it runs; never the batched loop's."""
    import renderer.settings as settings

    for loops, auto in ((("auto", "scalar", "batched"), True), (("auto", "batched"), False)):
        monkeypatch.setattr(settings, "rasterizers", lambda loops=loops: loops)
        assert settings.blends_in_pairs(RenderSettings()) is auto
        assert settings.blends_in_pairs(RenderSettings(rasterizer="scalar", blend_precision="fp32"))
        assert not settings.blends_in_pairs(RenderSettings(rasterizer="batched"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's refusal: CUDA runs the scalar form")
def test_a_renderer_without_cuda_refuses_the_scalar_rasterizer_in_one_line(scene_path):
    """The scalar loop is a Gluon kernel, which Triton's interpreter cannot run: asked for it, a CPU renderer says
    so before any work, in both of its frame loops, and renders with the forms it has."""
    scene = load_scene(scene_path("playbot_crop.ply")).subset(torch.arange(0, 4096, 64))
    cam = orbit_path(scene, 16, 16, 2)[0]
    r = Renderer(scene, device="cpu", backend="triton")
    for run in (lambda s: r.render(cam, s), lambda s: list(r.render_stream([cam], s))):
        with pytest.raises(ValueError, match="rasterizer 'scalar' needs CUDA") as e:
            run(RenderSettings(rasterizer="scalar"))
        assert "\n" not in str(e.value) and "auto or batched" in str(e.value)
    assert torch.equal(r.render(cam, RenderSettings(rasterizer="auto")).image,
                       r.render(cam, RenderSettings(rasterizer="batched")).image)  # fmt: skip


@pytest.mark.parametrize("mode", ["auto", "counted"])
def test_release_memory_lets_go_of_every_buffer_and_the_next_frame_is_the_same(scene_path, device, mode):
    """`Renderer.release_memory` (the bench calls it between rows, so each row's peak is its own): no workspace
    buffer and no kept frame (nor graph) afterwards; the capacities keep their sizes; the next frame allocates
    again and gives the same image, on either route."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="torch")
    r.frame_mode = mode
    cams = orbit_path(scene, 32, 24, 3)
    want = [r.render(cam).image.clone() for cam in cams]
    sizes = r.pair_capacity.size, r.macro_capacity.size
    assert r.ws.nbytes() > 0 and r.frames.frames
    r.release_memory()
    assert r.ws.nbytes() == 0 and not r.ws.names() and not r.frames.frames
    assert (r.pair_capacity.size, r.macro_capacity.size) == sizes
    got = [r.render(cam).image.clone() for cam in cams]
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True)) and r.ws.nbytes() > 0


@pytest.mark.parametrize("mode", ["auto", "counted"])
def test_frames_of_other_sizes_on_one_renderer_are_each_their_own(scene_path, device, mode):
    """One renderer keeps recent frames' stage objects by kind (renderer/frame_cache.py), the image size among what
    a kind holds. Sizes with the same tile count (64x48 and 48x64: 48 tiles each, so the same capacities and launch
    configuration) and a third, visited back and forth, each give a frame of its own shape equal to a fresh
    renderer's of that size, one frame at a time and streamed; a cache that ignored the size handed back the last
    size's frame (its image 48x64 where 64x48 was asked)."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    base = default_camera(scene, 64, 48)
    sizes = [(64, 48), (48, 64), (64, 48), (64, 40), (48, 64)]
    want = {}
    for w, h in set(sizes):
        fresh = Renderer(scene, device=device, backend="torch")
        fresh.frame_mode = mode
        want[w, h] = fresh.render(base.resized(w, h)).image.clone()
    r = Renderer(scene, device=device, backend="torch")
    r.frame_mode = mode
    for w, h in sizes:
        got = r.render(base.resized(w, h)).image
        assert got.shape == (h, w, 3) and torch.equal(got, want[w, h]), (w, h)
    streamed = [out.image.clone() for out in r.render_stream([base.resized(w, h) for w, h in sizes])]
    for (w, h), got in zip(sizes, streamed, strict=True):
        assert got.shape == (h, w, 3) and torch.equal(got, want[w, h]), (w, h)
    assert {(k.width, k.height) for _, k in r.frames.frames} == set(sizes)


@pytest.mark.parametrize("mode", ["graph", "counted"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_rasterizer_class_follows_the_frames_longest_list(scene_path, device, mode, stream):
    """The next frame's list class comes from the frame's pairs and its longest tile list as stage 5 wrote it
    (kernels/schedule.py), against the longest list of the output's own tile counts: on either route (a counted
    frame's a frame late), one by one or streamed. A GPU that blends as many tiles as the image has makes its lists
    concentrated (class 1); one that blends a single tile at a time makes none of them so (class 0)."""
    from kernels import list_class

    scene = load_scene(scene_path("playbot_crop.ply"))
    cam = orbit_path(scene, 32, 24, 3)[1]
    for slots, want_class in ((12, 1), (1, 0)):
        r = Renderer(scene, device=device, backend="torch")
        r.frame_mode, r.raster_slots = mode, slots
        outs = []
        frames = [cam] * 4
        for out in r.render_stream(frames) if stream else (r.render(cam) for cam in frames):
            outs.append((out.stats.n_pairs, int(out.tile_counts.max()), r.launch.lists))
        pairs, longest, _ = outs[-1]
        assert list_class(pairs, 12, longest, 8, 0, slots) == want_class, (pairs, longest)
        assert outs[-1][2] == want_class and r.launch.lists == want_class, outs


def test_a_frame_of_few_pairs_leaves_the_list_class_as_it_was():
    """An empty or nearly empty frame (fewer pairs than the GPU blends tiles at once) says nothing about the lists
    of the frame after it: on a looping fly-over the empty last frame chose the first one's class, the densest's,
    and it ran with a warp a tile where it wanted its lists split (BENCHMARKS.md, section 33)."""
    from renderer.launch import LaunchConfig

    split = LaunchConfig(lists=2)
    for pairs, longest in ((0, 0), (100, 3), (4_000, 200)):
        assert LaunchConfig.after(split, 10**6, pairs, pairs, 32_400, 8, (pairs, longest), 4_224).lists == 2
    assert LaunchConfig.after(split, 10**6, 10**5, 10**6, 32_400, 8, (10**6, 200), 4_224).lists == 0
    assert LaunchConfig.after(split, 10**6, 10**5, 10**6, 32_400, 8, None, 4_224).lists == 2
