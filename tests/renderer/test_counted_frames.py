"""Counted frames: the route that syncs for the visible and pair counts and sorts exactly those, against the
capacity route (one sync, buffers sized by the path's busiest frame). Both must give the same image."""

import numpy as np
import pytest
import torch

import kernels
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
    # from the scene's centre, about half of it behind the camera: a frame that gathers fewer than all (V < N)
    cams.append(Camera.look_at(c, c + np.array([0.0, 0.0, 1.0]), width=24, height=16))
    cams.append(Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=24, height=16))
    settings = RenderSettings(background=(0.2, 0.1, 0.0))
    by_capacity = Renderer(scene, device=device, backend=backend)
    by_capacity.frame_mode = "graph"
    counted = Renderer(scene, device=device, backend=backend)
    counted.frame_mode = "counted"
    counted.dense_order_from = dense_from
    seen = []
    for cam in cams:
        want = by_capacity.render(cam, settings)
        got = counted.render(cam, settings)
        assert got.stats.n_visible == want.stats.n_visible and got.stats.n_pairs == want.stats.n_pairs
        assert torch.equal(got.image, want.image) and torch.equal(got.alpha, want.alpha)
        assert torch.equal(got.tile_counts, want.tile_counts)
        seen.append(got.stats.n_visible)
    assert 0 < seen[-2] < len(scene), "the view from the centre sees part of the scene"
    assert counted.pair_capacity.size == counted.macro_capacity.size == 0, "counted frames use no capacity"
    assert want.stats.n_pairs == 0 and got.stats.n_pairs == 0, "the last view sees nothing"


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_counted_frames_binned_per_macro_tile(scene_path, device, monkeypatch, backend):
    """Counted frames binned per macro-tile always gather their visible Gaussians and bin them in index order
    (`CountedFrame.order`): on views that see all of the scene, part of it and none of it, the same images and
    counts as counted frames binned per tile. (The scene's footprints bin per tile: the form is forced.)"""
    import renderer.launch

    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    c = scene.center().numpy()
    cams = orbit_path(scene, 24, 16, 2)
    cams.append(Camera.look_at(c, c + np.array([0.0, 0.0, 1.0]), width=24, height=16))  # about half behind it
    cams.append(Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=24, height=16))
    cams += cams[:1]
    settings = RenderSettings(background=(0.2, 0.1, 0.0))
    per_tile = Renderer(scene, device=device, backend=backend)
    per_tile.frame_mode = "counted"
    # (counts, image, tile counts) of each: a renderer's images are its buffers, which its next frame writes
    per_tile_frames = []
    for cam in cams:
        out = per_tile.render(cam, settings)
        per_tile_frames.append((out.stats.n_visible, out.stats.n_pairs, out.image.clone(), out.tile_counts.clone()))
    monkeypatch.setattr(renderer.launch, "bins_macro_tiles", lambda footprint, previous=False: True)
    macro = Renderer(scene, device=device, backend=backend)
    macro.frame_mode = "counted"
    for cam, (visible, pairs, image, tile_counts) in zip(cams, per_tile_frames, strict=True):
        got = macro.render(cam, settings)
        assert (got.stats.n_visible, got.stats.n_pairs) == (visible, pairs)
        assert torch.equal(got.image, image) and torch.equal(got.tile_counts, tile_counts)
    assert macro.launch.macro and any(f.macro for f in macro.frames.frames.values()), "the frames binned per macro-tile"
    assert 0 < per_tile_frames[-3][0] < len(scene) and per_tile_frames[-2][0] == 0


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_counted_frames_binned_in_halves(scene_path, device, monkeypatch, backend):
    """A counted frame whose image has more tiles than int16 keys hold (3840x2160 at 8 px) bins and sorts its two
    halves of tile rows apart, each keyed by int16 ids within it (kernels/buffers.py `key_halves`). With the limit
    lowered to 10 tiles, a 40x32 image (20 tiles) splits at tile row 2: the same images, depths and counts as
    capacity frames, which sort all of its tiles' pairs in one (int32 keys) sort."""
    import kernels.bin
    import kernels.buffers

    monkeypatch.setattr(kernels.buffers, "INT16_TILES", 10)
    monkeypatch.setattr(kernels.bin, "INT16_TILES", 10)
    assert kernels.buffers.key_halves(5, 4) == 2 and kernels.buffers.key_dtype(20) == torch.int32
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    c = scene.center().numpy()
    cams = orbit_path(scene, 40, 32, 2)
    cams.append(Camera.look_at(c, c + np.array([0.0, 0.0, 1.0]), width=40, height=32))  # about half behind it
    cams.append(Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=40, height=32))
    settings = RenderSettings(background=(0.2, 0.1, 0.0), depth=True)
    by_capacity = Renderer(scene, device=device, backend=backend)
    by_capacity.frame_mode = "graph"
    halves = Renderer(scene, device=device, backend=backend)
    halves.frame_mode = "counted"
    for cam in cams:
        want = by_capacity.render(cam, settings)
        got = halves.render(cam, settings)
        assert (got.stats.n_visible, got.stats.n_pairs) == (want.stats.n_visible, want.stats.n_pairs)
        assert torch.equal(got.image, want.image) and torch.equal(got.alpha, want.alpha)
        assert torch.equal(got.depth, want.depth) and torch.equal(got.tile_counts, want.tile_counts)
    # (on a GPU a frame may bin per macro-tile, which needs no halves: int32 keys above the depth)
    per_tile = [f for f in halves.frames.frames.values() if not f.macro]
    assert per_tile and all(f.halves == 2 and f.key_dtype == torch.int16 for f in per_tile)
    per_tile = [f for f in by_capacity.frames.frames.values() if not f.macro]
    assert all(f.halves is None and f.key_dtype == torch.int32 for f in per_tile)


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


@pytest.mark.parametrize("depth", [False, True], ids=["colour", "with depth"])
def test_kept_counted_frames_hold_no_tensors_of_their_own(scene_path, device, depth, monkeypatch):
    """The frame cache keeps stage objects across frames; a counted one must let go of its frame's order, offsets
    and lists once the frame is done (each kept one held its last frame's, all counted in the renderer's peak
    memory). The depth pass, which reads the lists after the colour, still matches the capacity route's. Frames
    stream on any device here, so both hand-overs are seen: `render`'s and the stream's."""
    import renderer.pipeline

    monkeypatch.setattr(renderer.pipeline, "frames_in_flight", lambda device: True)
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    cams = orbit_path(scene, 24, 16, 3)
    settings = RenderSettings(depth=depth)
    by_capacity = Renderer(scene, device=device, backend="torch")
    by_capacity.frame_mode = "graph"
    counted = Renderer(scene, device=device, backend="torch")
    counted.frame_mode = "counted"
    for cam in cams:
        want, got = by_capacity.render(cam, settings), counted.render(cam, settings)
        assert torch.equal(got.image, want.image)
        if depth:
            assert got.depth is not None and torch.equal(got.depth, want.depth)
    assert counted.streams(RenderSettings()), "the stream's hand-over is one of the two tested"
    for _ in counted.render_stream(cams, RenderSettings()):
        pass
    kept = list(counted.frames.frames.values())
    assert kept and all(f.counted for f in kept)
    for f in kept:
        held = {name: getattr(f, name, None) for name in ("order_idx", "offsets")}
        held.update(ids=f.pairs.ids, sorted_values=f.pairs.sorted_values)
        assert all(t is None for t in held.values()), {k: tuple(t.shape) for k, t in held.items() if t is not None}


def test_a_frame_far_denser_than_its_class_source_takes_the_class_of_frames_like_it(scene_path, device, monkeypatch):
    """A counted frame's list class comes from an earlier frame's longest list, read a frame or two late. At a
    path's dense start after its sparse end that frame is sparse; a frame of more than CLASS_JUMP times its pairs
    rasterizes in the class last chosen for frames of about its own pairs instead (no wait for its own longest
    list), and frames that did not jump keep the launch configuration's."""
    import renderer.frame as frame_module
    import renderer.launch as launch_module

    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    w, h = 260, 196  # the far view's Gaussians in one tile each: the image's centre is not on a tile corner
    c = scene.center().numpy()
    far = Camera.look_at(c + np.array([0, 0, 100.0]), c, width=w, height=h)
    near = orbit_path(scene, w, h, 2)[0]
    r = Renderer(scene, device=device, backend="torch")
    r.frame_mode = "counted"
    r.raster_slots = 1  # every frame past "too few pairs to say" on an image this small
    dense = {"pairs": Renderer(scene, device=device, backend="torch").render(near).stats.n_pairs}
    sparse = Renderer(scene, device=device, backend="torch").render(far).stats.n_pairs
    assert 0 < frame_module.CLASS_JUMP * sparse < dense["pairs"], "the test needs frames far apart in pairs"

    def fake_class(n_pairs, n_tiles, longest, tile, previous=0, slots=1):  # a class the test can tell apart
        return 2 if n_pairs >= dense["pairs"] else 0

    monkeypatch.setattr(launch_module, "list_class", fake_class)
    ran = []
    real = r.k.rasterize_tiles
    monkeypatch.setattr(r.k, "rasterize_tiles", lambda *a, **k: ran.append(k["lists"]) or real(*a, **k))
    for _ in range(4):
        r.render(near)
    assert ran[-1] == 2 and r.launch.lists == 2, "dense frames chose the dense class from their own lists"
    for _ in range(4):
        r.render(far)
    assert ran[-1] == 0 and r.launch.lists == 0, "sparse frames went back to the sparse class"
    ran.clear()
    images = [r.render(near).image.clone() for _ in range(3)]
    assert r.launch.lists in (0, 2)
    assert ran == [2, 2, 2], f"the dense frames after sparse ones ran classes {ran}: the stale one is 0"
    fresh = Renderer(scene, device=device, backend="torch")
    fresh.frame_mode = "counted"
    assert torch.equal(images[0], fresh.render(near).image)


def test_counts_and_longest_lists_through_mapped_host_memory_equal_the_copies(scene_path, device, monkeypatch):
    """Where kernels reach pinned memory (`Renderer.maps_host`), the parameters go up by a kernel and the count and
    schedule kernels write a counted frame's counts and longest list into the host's buffers themselves: the same
    images, counts and longest lists (read a frame late, for the launch class) as torch's copies give, over frames
    that see all, part and none of the scene, one by one and in flight."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    cams = orbit_path(scene, 24, 16, 2)
    c = scene.center().numpy()
    cams.append(Camera.look_at(c, c + np.array([0.0, 0.0, 1.0]), width=24, height=16))
    cams.append(Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=24, height=16))
    cams += cams[:2]
    if device == "cuda":  # the GPU machine's kernels reach pinned memory: the renderer takes the mapped way there
        from renderer.device import maps_host_memory

        assert maps_host_memory(torch.cuda.current_device())
        assert Renderer(scene, device=device).maps_host
    runs = {}
    copies = []  # the parameters' copies up by the staging kernel
    real_copy = kernels.copy_to_device
    monkeypatch.setattr(kernels, "copy_to_device", lambda src, dst: copies.append(1) or real_copy(src, dst))
    for mapped in (True, False):
        r = Renderer(scene, device=device, backend="triton")
        r.frame_mode = "counted"
        r.maps_host = mapped
        copies.clear()
        frames = []
        for cam in cams:  # one by one: each frame's outputs before the next frame is rendered
            out = r.render(cam)
            frames.append((out.image.clone(), out.stats.n_visible, out.stats.n_pairs, int(out.tile_counts.max())))
        frames += [(out.image.clone(), out.stats.n_visible, out.stats.n_pairs, int(out.tile_counts.max()))
                   for out in r.render_stream(cams)]  # fmt: skip
        if device == "cuda":
            torch.cuda.synchronize()
        assert len(copies) == (2 * len(cams) if mapped else 0), "a kernel copies each frame's parameters up"
        lists = [r._counted_lists(serial) for serial in range(r._counted_frames - 3, r._counted_frames)]
        runs[mapped] = frames, lists
    (got, got_lists), (want, want_lists) = runs[True], runs[False]
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a[0], b[0]) and a[1:] == b[1:]
    assert got_lists == want_lists
    assert [longest for _, longest in got_lists] == [f[3] for f in got[-3:]], "each frame's own longest list"
    stream = got[-len(cams) :]
    assert 0 < stream[2][1] < len(scene) and stream[3][2] == 0, "frames that see part of the scene and none of it"
    assert got_lists[0][1] == 0 < got_lists[1][1], "the last three: one of none, then two of the orbit"
