"""The frame's workspace: buffers reused across frames, and the capacities that replace a mid-frame sync.

A frame binned per macro-tile (kernels/bin.py) bins its macro-tile pairs into buffers of one capacity
(`Renderer.macro_capacity`), splits them into the tiles' lists in a buffer of another (`Renderer.pair_capacity`,
list entries: the frame's tile pairs), and learns both counts only at its end; when either did not fit it must
grow and bin again, once, giving the same image as a renderer that never overflowed. A frame binned per tile has
only the list capacity (its sorted pairs are the lists). Which form a frame takes follows its footprint
(`bins_macro_tiles`); the tests here force it (`form`): per macro-tile unless a test asks for both."""

import numpy as np
import pytest
import torch

import renderer.launch as launch
from renderer import Camera, Renderer, RenderSettings
from renderer.paths import orbit_path, scene_frame
from scenes import load_scene
from tools.metrics import psnr


@pytest.fixture(autouse=True, params=["macro-tiles"])
def form(request, monkeypatch):
    """Every frame binned in the form asked for (a test parametrizes `form` indirectly to run both)."""
    macro = request.param == "macro-tiles"
    monkeypatch.setattr(launch, "bins_macro_tiles", lambda footprint, previous=False: macro)
    monkeypatch.setattr(launch.LaunchConfig, "__init__", _first_frame_in(macro))
    first = staticmethod(lambda counted, cuda: launch.LaunchConfig(macro=macro))
    monkeypatch.setattr(launch.LaunchConfig, "first", first)
    return request.param


def _first_frame_in(macro: bool):
    """LaunchConfig's constructor with `macro` as the first frame's default (the default config is per tile)."""
    init = launch.LaunchConfig.__init__

    def __init__(self, *args, **kwargs):
        if len(args) < 5:  # `macro` is the fifth field
            kwargs.setdefault("macro", macro)
        init(self, *args, **kwargs)

    return __init__


def test_buffers_are_reused_across_frames(scene_path, device):
    """After the first frame sized them, every frame renders into the same storage (no allocation)."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="torch")
    cams = orbit_path(scene, 32, 32, 4)
    first = r.render(cams[0])
    image_ptr, nbytes = first.image.data_ptr(), r.ws.nbytes()
    capacities = r.pair_capacity.size, r.macro_capacity.size
    generation = r.ws.generation
    assert capacities[0] >= first.stats.n_pairs > 0 and first.stats.n_visible > 0 and capacities[1] > 0
    for cam in cams[1:]:
        out = r.render(cam)
        assert out.image.data_ptr() == image_ptr
        assert out.stats.n_pairs <= r.pair_capacity.size
    assert (r.pair_capacity.size, r.macro_capacity.size) == capacities and r.ws.nbytes() == nbytes, "no buffer grew"
    assert r.ws.generation == generation, "no buffer was replaced"


@pytest.mark.parametrize("form", ["tiles", "macro-tiles"], indirect=True)
def test_overflow_grows_and_bins_again(scene_path, device, form):
    """A capacity far too small for the frame: the frame still comes out exact, and the capacity grows."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    cam = orbit_path(scene, 40, 30, 3)[1]
    fresh = Renderer(scene, device=device, backend="triton")
    want = fresh.render(cam).image.clone()
    r = Renderer(scene, device=device, backend="triton")
    r.render(cam)
    r.pair_capacity.size = 1000  # as if the last frames had needed 1,000 pairs
    out = r.render(cam)
    assert r.pair_capacity.size >= out.stats.n_pairs > 1200
    # exact up to float rounding: the launch configuration (chosen from the last frame) may differ from the
    # fresh renderer's, and the compiled code with it
    assert psnr(out.image, want) >= 100.0, psnr(out.image, want)


def test_capacity_shrinks_after_a_run_of_small_frames(scene_path, device, monkeypatch):
    """A frame that needed many pairs, then frames that need few: the idle capacity is given back."""
    monkeypatch.setattr(launch.Capacity, "SHRINK_AFTER", 3)
    monkeypatch.setattr(launch.Capacity, "SHRINK_SECONDS", 0.0)
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="torch")
    big = r.render(orbit_path(scene, 48, 32, 2, radius=40.0)[0]).stats.n_pairs  # the whole scene in view
    grown = r.pair_capacity.size, r.macro_capacity.size
    c = scene.center().numpy()
    away = Camera.look_at(c + np.array([0, 0, 1e3]), c + np.array([0, 0, 2e3]), width=48, height=32)
    small = []
    for i in range(3):
        assert (r.pair_capacity.size, r.macro_capacity.size) == grown, f"shrank after {i} frames"
        small.append(r.render(away).stats.n_pairs)
    assert big > 10_000 and small == [0, 0, 0]
    assert r.pair_capacity.size < grown[0] and r.macro_capacity.size < grown[1], "both shrink"
    assert torch.equal(r.render(away).image, r.render(away, RenderSettings(tile_size=16)).image)


def test_adagscale_frames_keep_their_own_capacity(scene_path, device):
    """AdaGScale bins fewer pairs than exact, and the sort runs over the whole capacity: its frames size a
    capacity of their own instead of inheriting the exact frames' larger one, and switching back leaves the
    exact frames' capacity and image as they were."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    r = Renderer(scene, device=device, backend="torch")
    cam = orbit_path(scene, 96, 64, 3)[1]
    exact = r.render(cam)
    want, n_exact = exact.image.clone(), exact.stats.n_pairs
    cap_exact = r.pair_capacity.size, r.macro_capacity.size
    lossy = RenderSettings(adagscale=True, adagscale_tau=1.0)
    n_lossy = r.render(cam, lossy).stats.n_pairs
    assert n_lossy < 0.9 * n_exact, (n_lossy, n_exact)
    assert r.pair_capacity.size == max(int(n_lossy * launch.Capacity.HEADROOM), launch.Capacity.MINIMUM)
    assert r.pair_capacity.size < cap_exact[0] and r.macro_capacity.size < cap_exact[1]
    again = r.render(cam)
    assert (r.pair_capacity.size, r.macro_capacity.size) == cap_exact and torch.equal(again.image, want)
    assert r.render(cam, lossy).stats.n_pairs == n_lossy  # its capacity kept too: no regrowth


def test_capacity_grows_ahead_of_need_in_geometric_steps():
    """Headroom over the count that did not fit, and at least STEP x the old size: a count creeping up by 5%
    a frame grows the capacity a few times, not every other frame."""
    c = launch.Capacity()
    c.grow(10_000)
    assert c.size == 12_000 and c.fits(12_000) and not c.fits(12_001)
    c.grow(12_500)  # just over: the geometric step, not the headroom, decides
    assert c.size == 18_000
    c.grow(40_000)  # far over: the headroom does
    assert c.size == 48_000 and c.growths == 3
    creeping = launch.Capacity()
    count = 10_000.0
    for _ in range(60):  # x 18.7 in all
        if not creeping.fits(int(count)):
            creeping.grow(int(count))
        creeping.observe(int(count))
        count *= 1.05
    assert creeping.growths <= 9, creeping.growths  # log(18.7) / log(1.5) = 7.2, plus the first
    assert creeping.size <= launch.Capacity.STEP * launch.Capacity.HEADROOM * count


class Clock:
    """A monotonic clock the test moves by hand (seconds)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_capacity_shrinks_to_headroom_over_the_recent_need():
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(100_000)
    for k in range(launch.Capacity.SHRINK_AFTER):
        assert c.size == 120_000, k
        c.observe(5_000 + k)
        clock.t += launch.Capacity.SHRINK_SECONDS / (launch.Capacity.SHRINK_AFTER - 1)
    assert c.size == max(int((5_000 + launch.Capacity.SHRINK_AFTER - 1) * launch.Capacity.HEADROOM), 1024)


def test_a_third_in_use_is_not_idle():
    """The capacity shrinks only below a third in use (SHRINK_BELOW): frames that use exactly a third keep it,
    however long they last, and one below it starts the run."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(2_500)  # 3,000 with headroom
    assert c.size == 3_000
    for _ in range(3 * launch.Capacity.SHRINK_AFTER):
        c.observe(1_000)
        clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == 3_000
    for _ in range(launch.Capacity.SHRINK_AFTER + 1):
        c.observe(999)
        clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == 1_198


def test_capacity_shrinks_only_after_enough_frames_and_enough_time():
    """A fast renderer passes SHRINK_AFTER frames in a blink: a view that is sparse for a moment (the start of a
    fly-in) keeps the room; seconds of it give the room back; one dense frame starts the count again."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(100_000)
    for _ in range(10 * launch.Capacity.SHRINK_AFTER):  # 300 frames at 1 ms
        c.observe(1_000)
        clock.t += 1e-3
    assert c.size == 120_000
    clock.t += launch.Capacity.SHRINK_SECONDS
    c.observe(90_000)  # dense again: the sparse run is over
    c.observe(1_000)
    assert c.size == 120_000
    for _ in range(launch.Capacity.SHRINK_AFTER):
        c.observe(1_000)
    assert c.size == 120_000  # enough frames, but the run began this instant
    clock.t += launch.Capacity.SHRINK_SECONDS
    c.observe(1_000)
    assert c.size == 1_200 and c.high == 120_000


def test_a_growth_after_a_shrink_goes_back_to_the_size_it_shrank_from():
    """Flying out and back in: the room the close view needed comes back in one growth, not in steps of 1.5x
    (each a rebin and a new kind of frame)."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(1_000_000)
    clock.t = 0.0
    for _ in range(launch.Capacity.SHRINK_AFTER + 1):
        c.observe(50_000)
        clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == 60_000 and c.high == 1_200_000
    growths = c.growths
    c.grow(70_000)
    assert c.size == 1_200_000 and c.growths == growths + 1
    c.grow(2_000_000)  # more than it ever held: headroom as usual
    assert c.size == 2_400_000


def test_make_room_sizes_a_capacity_too_small_for_the_expected_count_and_leaves_a_roomy_one():
    c = launch.Capacity()
    c.make_room(10_000)
    assert c.size == 12_000 and c.growths == 0
    c.make_room(5_000)
    assert c.size == 12_000
    c.make_room(20_000)  # a form switch back to macro-tiles after the capacity shrank: room again, not a rebin
    assert c.size == 24_000 and c.growths == 0


@pytest.mark.parametrize("form", ["tiles", "macro-tiles"], indirect=True)
def test_frames_stay_exact_through_growth_with_one_rebin_each(scene_path, device, form):
    """Flying out from close up, every frame binned into a capacity sized by the frames before it: each frame
    equals a renderer's that never grew (its capacity held the whole path from the start), a frame that did not
    fit is binned again once, and the capacity grows in geometric steps, not on every frame that needs more."""
    scene = load_scene(scene_path("lastchance.splat"))
    f = scene_frame(scene, 48, 32)
    elev = np.radians(f.elevation_deg)
    eye = f.target + f.distance * (np.cos(elev) * f.start_dir + np.sin(elev) * f.up)
    cams = [Camera.look_at(f.target + (eye - f.target) * t, f.target, up=f.up, width=48, height=32)
            for t in (0.12, 0.18, 0.25, 0.35, 0.5, 0.7, 1.0)]  # fmt: skip
    roomy = Renderer(scene, device=device, backend="torch")
    roomy.pair_capacity.grow(10_000_000)
    roomy.macro_capacity.grow(10_000_000)
    growing = Renderer(scene, device=device, backend="torch")
    pairs = []
    for k, cam in enumerate(cams):
        rebins, growths = growing.rebins, growing.pair_capacity.growths + growing.macro_capacity.growths
        out = growing.render(cam)
        pairs.append(out.stats.n_pairs)
        grew = growing.pair_capacity.growths + growing.macro_capacity.growths - growths
        assert growing.rebins - rebins == (grew > 0), (k, grew)  # a rebin, once, exactly when a capacity grew
        assert out.stats.rebinned == (grew > 0), k  # and the frame says so (the bench and the overlay name it)
        assert out.stats.n_pairs <= growing.pair_capacity.size
        assert torch.equal(out.image, roomy.render(cam).image), k
    assert roomy.rebins == 0
    assert pairs[-1] > 5 * pairs[0], pairs  # the path does need room
    # a growth for every frame that needed more, had each grown only to what it needed
    needed_more = sum(b > a for a, b in zip(pairs, pairs[1:])) + 1
    assert growing.pair_capacity.growths < needed_more, (growing.pair_capacity.growths, pairs)
    assert growing.rebins < needed_more, (growing.rebins, pairs)


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("short", ["macro pairs", "lists", "both"])
def test_a_frame_that_overflows_either_capacity_is_binned_again_once(scene_path, device, short, backend):
    """After a first frame sized both capacities, one or both is cut far below the frame's need: its macro-tile
    pairs do not fit their slots while its list entries fit theirs, or the other way round, or neither fits.
    The frame is binned again exactly once, only the capacity that was cut grows, and the image equals a roomy
    renderer's (whose capacities held the frame from the start); the next frame fits without a rebin."""
    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow
    cam = orbit_path(scene, 40, 30, 3)[1]
    roomy = Renderer(scene, device=device, backend=backend)
    roomy.pair_capacity.grow(100_000)
    roomy.macro_capacity.grow(100_000)
    want = roomy.render(cam)
    assert roomy.rebins == 0
    r = Renderer(scene, device=device, backend=backend)
    r.render(cam)  # sizes both capacities (binned again from 0 once: a rebin)
    rebins = r.rebins
    fitted = []  # (the frame as binned first, its counts, the frame it became) of each frame's `_fit_pairs`
    fit_pairs = r._fit_pairs

    def spy(f, src, camera, settings, n_visible, n_pairs, n_macro_pairs, timer, longest=None):
        binned = (f.capacity, f.pair_slots)
        after = fit_pairs(f, src, camera, settings, n_visible, n_pairs, n_macro_pairs, timer, longest)
        fitted.append((binned, (n_pairs, n_macro_pairs), (after.capacity, after.pair_slots)))
        return after

    r._fit_pairs = spy
    lists, pairs = r.pair_capacity, r.macro_capacity
    cut = {"macro pairs": [pairs], "lists": [lists], "both": [lists, pairs]}[short]
    kept = [c for c in (lists, pairs) if c not in cut]
    sizes = {id(c): c.size for c in kept}
    for c in cut:
        c.size = 64  # far below this frame's 1,000s
    out = r.render(cam)
    assert out.stats.n_pairs == want.stats.n_pairs
    if backend == "torch":
        assert torch.equal(out.image, want.image) and torch.equal(out.tile_counts, want.tile_counts)
    else:  # up to float rounding: the launch configuration (from the last frame) may differ from roomy's
        assert psnr(out.image, want.image) >= 100.0, psnr(out.image, want.image)
    assert r.rebins - rebins == 1 and out.stats.rebinned
    [(binned, counts, rebinned)] = fitted
    assert all(count > 64 for count in counts), counts  # what was cut is too short
    assert all(count <= c.size for c, count in zip((lists, pairs), counts)), "and what was kept is not"
    assert binned == (lists.size if lists in kept else 64, pairs.size if pairs in kept else 64)
    assert all(c.size == sizes[id(c)] for c in kept), "the capacity that fitted did not grow"
    assert all(c.size >= max(int(1.2 * n), launch.Capacity.MINIMUM) for c, n in zip((lists, pairs), counts))
    assert rebinned == (lists.size, pairs.size), "binned again at both capacities as they are now"
    again = r.render(cam)
    assert r.rebins - rebins == 1 and len(fitted) == 2 and fitted[1][0] == fitted[1][2], "the next frame fits"
    assert not again.stats.rebinned
    assert torch.equal(again.image, out.image)


def test_the_first_frame_binned_per_macro_tile_has_room(scene_path, device, monkeypatch):
    """A view whose frames bin per tile (here its first, forced so); when its footprint moves the next frame to
    macro-tiles, the renderer makes room for the macro-tile pairs that footprint makes (`expected_macro_pairs`)
    before that frame, so it does not bin again: one rebin on the path (the first frame's), where there were two,
    each a new kind of frame that delayed the graphs' replay. The images are exact either way."""
    from kernels import expected_macro_pairs

    monkeypatch.setattr(launch.LaunchConfig, "__init__", _first_frame_in(False))
    monkeypatch.setattr(launch.LaunchConfig, "first", staticmethod(lambda counted, cuda: launch.LaunchConfig()))
    monkeypatch.setattr(launch, "bins_macro_tiles", lambda footprint, previous=False: True)
    scene = load_scene(scene_path("playbot_crop.ply"))
    cams = orbit_path(scene, 48, 32, 3)
    r = Renderer(scene, device=device, backend="torch")
    roomy = Renderer(scene, device=device, backend="torch")
    roomy.pair_capacity.grow(10_000_000)
    roomy.macro_capacity.grow(10_000_000)
    first = r.render(cams[0])
    assert not first.stats.n_pairs or r.launch.macro
    expected = expected_macro_pairs(first.stats.n_visible, first.stats.n_pairs)
    assert first.stats.n_pairs / 32 <= expected <= first.stats.n_pairs
    assert r.macro_capacity.size >= expected and r.macro_capacity.growths == 0  # room made, not grown
    for cam in cams:
        assert torch.equal(r.render(cam).image, roomy.render(cam).image)
    assert r.rebins == 1, "only the first frame, binned per tile into no room, was binned again"


def test_a_kind_captured_before_is_captured_again_on_its_first_frame():
    """renderer/graphs.py: a new kind runs eagerly until its CAPTURE_AFTER-th frame in a row; a kind whose graph
    was captured before and retired (buffers moved), or captured at other capacities, is captured at once when it
    comes back."""
    from typing import NamedTuple

    from renderer.graphs import CAPTURE, CAPTURE_AFTER, EAGER, REPLAY, FrameGraphs

    class Kind(NamedTuple):  # FrameKind's part that matters here
        name: str
        pair_capacity: tuple[int, int] = (10, 5)

    class FakeGraph:
        def replay(self):
            pass

    class FakeFrame:
        def __init__(self, name, capacities=(10, 5)):
            self.kind, self.graph, self.eager = Kind(name, capacities), None, 0

        def run(self, timer):
            self.eager += 1

    graphs = FrameGraphs(torch.device("cpu"), enabled=True)
    captures = []
    graphs.capture = lambda f: captures.append(f.kind.name) or FakeGraph()
    a = FakeFrame("A")
    assert [graphs.run(a, None) for _ in range(CAPTURE_AFTER + 1)] == [EAGER] * (CAPTURE_AFTER - 1) + [CAPTURE, REPLAY]
    assert a.eager == CAPTURE_AFTER - 1 and captures == ["A"]
    b = FakeFrame("B")  # a kind passed through: eager, never captured
    graphs.run(b, None)
    assert b.eager == 1 and captures == ["A"]
    again = FakeFrame("A")  # A's frame objects were retired; the kind comes back
    assert graphs.run(again, None) == CAPTURE and again.eager == 0 and captures == ["A", "A"]
    assert graphs.run(again, None) == REPLAY
    new = FakeFrame("C")
    graphs.run(new, None)
    assert new.eager == 1 and captures == ["A", "A"]
    grown = FakeFrame("A", (20, 8))  # A again after the capacities grew: its buffers are new, the view is not
    assert graphs.run(grown, None) == CAPTURE and grown.eager == 0 and captures == ["A", "A", "A"]


def test_the_first_frame_bins_per_macro_tile_and_the_next_takes_the_footprints_form(scene_path, device, monkeypatch):
    """`LaunchConfig.first`: a renderer's first frame (capacity route) bins per macro-tile, which sizes its
    capacities with fewer pair bytes; the next frame's form is the footprint's as if from a per-tile frame, so a view
    inside the hysteresis band (here every footprint) goes per tile, where a per-tile start would have kept it. The
    images equal a per-tile renderer's."""
    from kernels import bin as kbin

    monkeypatch.undo()  # this test runs the real rules, not the `form` fixture's
    band = (kbin.MACRO_UNTIL + kbin.MACRO_FROM) / 2
    in_band = lambda footprint, previous=False: kbin.bins_macro_tiles(band, previous)  # noqa: E731
    monkeypatch.setattr(launch, "bins_macro_tiles", in_band)
    scene = load_scene(scene_path("playbot_crop.ply"))
    cams = orbit_path(scene, 48, 32, 3)
    assert launch.LaunchConfig.first(False, cuda=True).macro  # a GPU's capacity route
    assert not launch.LaunchConfig.first(True, cuda=True).macro  # counted frames
    assert not launch.LaunchConfig.first(False, cuda=False).macro  # the CPU
    r = Renderer(scene, device=device, backend="torch")
    assert r.launch == launch.LaunchConfig.first(False, cuda=r.device.type == "cuda")
    r.launch = launch.LaunchConfig.first(False, cuda=True)  # as on a GPU, whatever runs the test
    tiles = Renderer(scene, device=device, backend="torch")
    tiles.launch = launch.LaunchConfig()
    forms = []
    for cam in cams:
        forms.append(r.launch.macro)
        assert torch.equal(r.render(cam).image, tiles.render(cam).image)
    assert forms == [True, False, False], forms
    assert tiles.launch.macro is False  # the per-tile start stays per tile in the band


@pytest.mark.parametrize("kept", [True, False], ids=["small form kept", "large form let go"])
def test_a_path_back_in_a_form_it_left_finds_its_frames_where_that_form_was_small(scene_path, device, monkeypatch,
                                                                                  kept):  # fmt: skip
    """A path that changes binning form keeps the form it left while that form's buffers are at most
    KEPT_FORM_BYTES: back in it, no buffer moved and its earlier frame (with its graph, on a GPU) is found again,
    where letting the buffers go retired every frame at each change (the viewer's fly-through paid a capture, ~3.5
    ms, at each). Past the budget (here 0 bytes) the form left is let go, as before. Images exact either way."""
    import renderer.pipeline

    if not kept:
        monkeypatch.setattr(renderer.pipeline, "KEPT_FORM_BYTES", 0)
    form = {"macro": True}
    monkeypatch.setattr(launch, "bins_macro_tiles", lambda footprint, previous=False: form["macro"])
    scene = load_scene(scene_path("playbot_crop.ply"))
    cam = orbit_path(scene, 48, 32, 3)[1]
    r = Renderer(scene, device=device, backend="torch")
    want = Renderer(scene, device=device, backend="torch").render(cam).image
    for macro in (True, False) * 2:  # each form's capacities sized by frames of it (the first change makes room)
        form["macro"] = macro
        for _ in range(3):
            assert torch.equal(r.render(cam).image, want)
    frames, generation = dict(r.frames.frames), r.ws.generation
    assert {f.macro for f in frames.values()} == ({True, False} if kept else {False})
    for macro in (True, False, True):  # back and forth: the next frame takes the form
        form["macro"] = macro
        r.render(cam)
        assert torch.equal(r.render(cam).image, want)
        assert r.launch.macro == macro
    if kept:
        assert r.ws.generation == generation, "no buffer moved"
        assert all(r.frames.frames.get(key) is f for key, f in frames.items()), "the earlier frames were found"
    else:
        assert r.ws.generation > generation and {f.macro for f in r.frames.frames.values()} == {True}


def test_kinds_a_growth_retired_are_captured_ahead_on_the_frames_that_replay(scene_path, device, monkeypatch):
    """renderer/pipeline.py `_capture_ahead`, with CUDA graphs simulated (a fake graph replays a frame by running
    it): two kinds of frame with graphs (two bin blocks: launch knobs, no buffers of their own); a growth retires
    both; the first frame after it captures its own kind again (`FrameGraphs.run`), the next, which replays, captures
    the other kind ahead without moving a buffer, and that kind's first frame then replays. Every image equals a
    renderer's without graphs."""
    import dataclasses

    from renderer.graphs import REPLAY
    from renderer.timing import StageTimer

    scene = load_scene(scene_path("playbot_crop.ply"))
    scene = scene.subset(torch.arange(0, len(scene), 4))
    cams = orbit_path(scene, 24, 16, 6)
    plain = Renderer(scene, device=device, backend="torch")
    r = Renderer(scene, device=device, backend="torch")

    class RunningGraph:
        def __init__(self, f):
            self.f = f

        def replay(self):
            self.f.run(StageTimer(None))

    captured = []
    monkeypatch.setattr(r._graphs, "capture", lambda f: captured.append(f.launch.bin_block) or RunningGraph(f))
    r.graphs = True
    own, other = 128, 32  # the two kinds' bin blocks

    def frame(cam, bin_block=None):
        if bin_block is not None:  # the launch configuration the frame takes (the renderer's own follows its counts)
            r.launch = dataclasses.replace(r.launch, bin_block=bin_block)
        out = r.render(cam)
        assert torch.equal(out.image, plain.render(cam).image)
        return out.stats.ran

    for cam in cams[:4]:  # each kind captured on its CAPTURE_AFTER-th frame in a row, then replayed
        frame(cam, own)
    for cam in cams[:4]:
        frame(cam, other)
    assert captured == [own, other], captured
    r.pair_capacity.grow(r.pair_capacity.size + 1)  # as a frame whose pairs did not fit grows it
    r._release_pairs()
    assert sorted(launch.bin_block for _, launch, *_ in r._ahead) == sorted([own, other])
    generation = r.ws.generation
    assert frame(cams[4], own) == "capture" and captured[-1] == own  # its own kind again, on its first frame
    assert frame(cams[5], own) == REPLAY and captured[-1] == other and not r._ahead  # the other one, ahead
    assert r.ws.generation == generation, "capturing ahead moved a buffer"
    assert frame(cams[0], other) == REPLAY and len(captured) == 4


def test_a_capacity_is_never_sized_below_its_minimum():
    """MINIMUM is the floor of every size a capacity takes once it is sized: grown for a handful of pairs, made
    room for, or shrunk after frames that bin none (a size of 0 reads as "not sized yet": renderer/pipeline.py
    replays graphs only at a sized capacity)."""
    clock = Clock()
    grown = launch.Capacity(clock)
    grown.grow(10)
    assert grown.size == launch.Capacity.MINIMUM
    roomy = launch.Capacity(clock)
    roomy.make_room(1)
    assert roomy.size == launch.Capacity.MINIMUM
    c = launch.Capacity(clock)
    c.grow(100_000)
    for _ in range(launch.Capacity.SHRINK_AFTER + 1):
        c.observe(0)  # an empty view
        clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == launch.Capacity.MINIMUM and c.high == 120_000


def test_a_shrink_keeps_room_for_the_largest_count_of_the_run_not_the_last():
    """A sparse run whose counts rise and fall: the capacity shrinks to HEADROOM x the largest of them, so that
    every frame of the run would still fit."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(100_000)
    counts = [1_000 + 500 * (k % 7) for k in range(launch.Capacity.SHRINK_AFTER)]  # largest 4,000, last 3,000
    for count in counts:
        c.observe(count)
        clock.t += launch.Capacity.SHRINK_SECONDS / (launch.Capacity.SHRINK_AFTER - 1)
    assert counts[-1] < max(counts) == 4_000
    assert c.size == int(max(counts) * launch.Capacity.HEADROOM) and all(c.fits(n) for n in counts)


def test_a_growth_ends_the_sparse_run():
    """The frames that shrink a capacity are SHRINK_AFTER in a row: a frame that did not fit (and grew it) ends
    the run, so the room it just made is not given back on the next sparse frame."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(100_000)
    for _ in range(launch.Capacity.SHRINK_AFTER - 1):  # sparse for long enough, one frame short of a shrink
        c.observe(1_000)
        clock.t += launch.Capacity.SHRINK_SECONDS
    c.grow(130_000)  # a spike that did not fit
    size = c.size
    assert size >= launch.Capacity.STEP * 120_000
    for k in range(launch.Capacity.SHRINK_AFTER - 1):
        c.observe(1_000)
        clock.t += launch.Capacity.SHRINK_SECONDS
        assert c.size == size, f"shrank {k + 1} sparse frames after a growth"
    c.observe(1_000)
    assert c.size == 1_200  # a whole run after the growth: given back


def test_a_shrunk_capacity_shrinks_again_after_a_sparser_run_of_its_own():
    """Each shrink starts a new run: after one, frames sparser still give back more room, after a run of their own
    (SHRINK_AFTER frames and SHRINK_SECONDS), to HEADROOM x their largest count."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(100_000)
    for _ in range(launch.Capacity.SHRINK_AFTER):
        c.observe(5_000)
        clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == 6_000
    for k in range(launch.Capacity.SHRINK_AFTER - 1):
        c.observe(1_900)  # under a third of 6,000
        clock.t += launch.Capacity.SHRINK_SECONDS
        assert c.size == 6_000, f"shrank again {k + 1} frames after the last shrink"
    c.observe(1_900)
    assert c.size == int(1_900 * launch.Capacity.HEADROOM)


def test_adagscale_capacities_are_kept_per_tau_and_s_min_and_exact_frames_share_one():
    """`Capacities`: each AdaGScale (tau, s_min) keeps its own capacities; exact frames share one whatever else
    their settings say (AdaGScale's knobs included, which exact frames ignore)."""
    caps = launch.Capacities()
    lossy = RenderSettings(adagscale=True, adagscale_tau=1.0)
    assert caps.of(lossy) is caps.of(RenderSettings(adagscale=True, adagscale_tau=1.0))
    assert caps.of(lossy) is not caps.of(RenderSettings(adagscale=True, adagscale_tau=0.3))
    assert caps.of(lossy) is not caps.of(RenderSettings(adagscale=True, adagscale_tau=1.0, adagscale_s_min=0.25))
    exact = caps.of(RenderSettings())
    assert exact is not caps.of(lossy)
    for other in (RenderSettings(adagscale_tau=1.0), RenderSettings(adagscale_s_min=0.25),
                  RenderSettings(tile_size=16, sh_degree=1)):  # fmt: skip
        assert caps.of(other) is exact, other


def test_after_two_shrinks_a_growth_goes_back_to_the_largest_size_shrunk_from():
    """Flying out in two stages (close, middle, far) and then straight back in: the room the closest view needed
    comes back in one growth, not the middle view's (which would grow again, a rebin and a new kind of frame)."""
    clock = Clock()
    c = launch.Capacity(clock)
    c.grow(1_000_000)
    for count in (200_000, 20_000):  # each a long sparse run: shrinks to HEADROOM x its largest count
        for _ in range(launch.Capacity.SHRINK_AFTER + 1):
            c.observe(count)
            clock.t += launch.Capacity.SHRINK_SECONDS
    assert c.size == 24_000 and c.high == 1_200_000
    c.grow(900_000)
    assert c.size == 1_200_000
