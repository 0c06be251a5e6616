"""Frames in flight (`Renderer.render_stream`): frame k + 1 is launched before frame k is checked and handed
over, in the other workspace slot. Every frame must equal what `render` gives for the same camera, also when
its pairs did not fit the capacity (it is binned again before it is yielded), and an output must stay intact
until the generator is resumed, while the next frame is already running. On CUDA these run compiled, with
graphs (the GPU machine's test run); on a CPU, where a renderer keeps no frame in flight (it would overlap
nothing: renderer/device.py `frames_in_flight`), they force it, and the torch stages run the same bookkeeping."""

import itertools
from types import SimpleNamespace

import pytest
import torch

from renderer import Renderer, RenderSettings
from renderer.paths import orbit_path
from renderer.timing import handover_ms
from scenes import load_scene
from tools.metrics import psnr

SIZE = (48, 32)


@pytest.fixture(autouse=True)
def in_flight_on_any_device(monkeypatch):
    """Frames in flight on the CPU too, for their bookkeeping (renderers made in a test take it at creation)."""
    import renderer.pipeline

    monkeypatch.setattr(renderer.pipeline, "frames_in_flight", lambda device: True)


def test_a_cpu_renderer_keeps_no_frame_in_flight(scene):
    """On a CPU the host is the device: `render_stream` renders one by one, through `render`, in one slot (the
    memory estimate's one slot on a CPU: tests/reliability/test_memory.py)."""
    from renderer.device import frames_in_flight

    assert frames_in_flight(torch.device("cuda")) and not frames_in_flight(torch.device("cpu"))
    r = Renderer(scene, device="cpu", backend="torch")
    r.in_flight = frames_in_flight(r.device)  # this module forces it on: the default, as a CPU renderer has it
    cams = orbit_path(scene, *SIZE, 4)
    assert not r.streams(RenderSettings())
    launched = []
    launch = r._launch
    r._launch = lambda *a, **k: launched.append(1) or launch(*a, **k)
    want = [r.render(cam).image.clone() for cam in cams]
    got = [out.image.clone() for out in r.render_stream(cams)]
    assert not launched  # every frame through `render`, none launched ahead
    assert len(got) == 4 and all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    assert not any(name.endswith("@1") for name in r.ws._buffers)  # one slot


@pytest.fixture
def scene(scene_path):
    return load_scene(scene_path("playbot_crop.ply"))


def one_by_one(scene, cams, device, settings=None, mode="auto"):
    r = Renderer(scene, device=device)
    r.frame_mode = mode
    return [r.render(cam, settings).image.clone() for cam in cams]


ROUTES = ["auto", "counted"]  # this scene's capacity route, and counted frames (each waits for its own counts)


@pytest.mark.parametrize("mode", ROUTES)
def test_stream_matches_one_by_one(scene, device, mode):
    """Every streamed frame equals `render`'s for its camera, and is yielded in camera order, each launched
    before the one before it was handed over, on either route."""
    cams = orbit_path(scene, *SIZE, 8)
    want = one_by_one(scene, cams, device, mode=mode)
    r = Renderer(scene, device=device)
    r.frame_mode = mode
    assert r.streams(RenderSettings())
    launched = []
    launch = r._launch
    r._launch = lambda *a, **k: launched.append(1) or launch(*a, **k)
    got, ran = [], []
    for out in r.render_stream(cams):
        got.append(out.image.clone())
        ran.append(out.stats.ran)
        assert len(launched) == min(len(got) + 1, len(cams)), "the next frame was launched first"
    assert len(got) == len(cams)
    # how each frame ran (RenderStats.ran): counted frames as such; capacity frames stage by stage until their
    # kind is captured as a CUDA graph (on CUDA), then replayed
    if mode == "counted":
        assert set(ran) == {"counted"}, ran
    elif torch.device(device).type == "cuda":
        assert ran[0] == "eager" and "capture" in ran and ran[-1] == "replay", ran
    else:
        assert set(ran) == {"eager"}, ran
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert psnr(g, w) >= 100.0, (k, psnr(g, w))
    assert not torch.equal(got[0], got[4]), "the orbit's frames differ: the comparison can fail"


@pytest.mark.parametrize("mode", ROUTES)
def test_output_is_intact_while_the_next_frame_runs(scene, device, mode):
    """Consecutive outputs live in different slots, and a yielded image is not overwritten by the frame already
    launched after it (it is read here, before the generator resumes)."""
    cams = orbit_path(scene, *SIZE, 6)
    want = one_by_one(scene, cams, device, mode=mode)
    r = Renderer(scene, device=device)
    r.frame_mode = mode
    ptrs = []
    for k, out in enumerate(r.render_stream(cams)):
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()  # the next frame has been launched: let it finish before reading this one
        assert psnr(out.image, want[k]) >= 100.0, k
        ptrs.append(out.image.data_ptr())
    assert ptrs[0] != ptrs[1] and ptrs[0] == ptrs[2] and ptrs[1] == ptrs[3], "slots alternate"


@pytest.mark.parametrize("short", ["lists", "macro pairs"])
def test_overflowing_frame_is_binned_again_before_it_is_yielded(scene, device, short, monkeypatch):
    """A capacity far too small (the tiles' lists, or the macro-tile pairs of frames binned per macro-tile), set
    while a frame is in flight: that frame and the next come out exact, and the capacity grows to hold them."""
    import renderer.launch

    if short == "macro pairs":  # the path's footprints would bin per tile, which has no macro-tile pairs
        monkeypatch.setattr(renderer.launch, "bins_macro_tiles", lambda footprint, previous=False: True)
    cams = orbit_path(scene, *SIZE, 6)
    want = one_by_one(scene, cams, device)
    r = Renderer(scene, device=device)
    got, rebinned = [], []
    for k, out in enumerate(r.render_stream(cams)):
        got.append(out.image.clone())
        rebinned.append(out.stats.rebinned)
        if k == 2:  # frame 3 is in flight, with the capacity frame 2 left; frame 4 launches with this one
            rebins = r.rebins
            capacity = r.pair_capacity if short == "lists" else r.macro_capacity
            capacity.size = 64
    for k in range(len(cams)):
        assert psnr(got[k], want[k]) >= 100.0, (k, psnr(got[k], want[k]))
    assert capacity.size > 64 and r.rebins > rebins
    # the frames binned again say so, and only they: the first ones (sizing the capacities from nothing) and those
    # launched into the cut capacity (not frame 3: in flight already, binned into the buffers it had)
    assert sum(rebinned) == r.rebins and sum(rebinned[3:]) == r.rebins - rebins and rebinned[4], rebinned


@pytest.mark.parametrize("streamed", [False, True])
def test_the_list_class_after_a_rebin_comes_from_the_lists_binned_again(scene, device, streamed, monkeypatch):
    """A renderer's first frames find no capacity and are binned again. The next frame's list class
    (`LaunchConfig.after`'s lists_of) must come from each such frame's longest list as binned again, not from the
    lists that overflowed (empty then): a class chosen from those changed again a frame later, one more kind of
    frame before graphs replay, and the bench's orbits spent their first two frames after its warm-up capturing
    graphs (BENCHMARKS.md, section 36). Both ways of rendering: one by one and in flight."""
    import renderer.launch

    after = renderer.launch.LaunchConfig.after
    chosen_from = []  # lists_of of each frame's `after`: (pairs, longest tile list)
    spy = lambda *a, **k: chosen_from.append(a[6]) or after(*a, **k)  # noqa: E731
    monkeypatch.setattr(renderer.launch.LaunchConfig, "after", staticmethod(spy))
    cams = orbit_path(scene, *SIZE, 3)
    r = Renderer(scene, device=device)
    assert r.streams(RenderSettings()) and not r.counted()
    frames = r.render_stream(cams) if streamed else (r.render(c, sync_stats=False) for c in cams)
    truth, rebinned = [], []
    for out in frames:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()
        truth.append((out.stats.n_pairs, int(out.tile_counts.max())))
        rebinned.append(out.stats.rebinned)
    assert rebinned[0] and not rebinned[-1] and all(n > 0 for _, n in truth), (rebinned, truth)
    assert chosen_from == truth, (chosen_from, truth)


def test_a_frame_binned_again_keeps_its_own_binning_form(scene, device, monkeypatch):
    """Frames in flight that alternate binning form (per tile, per macro-tile: kernels/bin.py), each overflowing
    its capacities: a frame is binned again in the form its projection and order ran for, not in the form the
    frame launched after it chose (binning a per-tile frame's order per macro-tile wrote past its buffers on the
    H200). Every frame comes out exact."""
    import renderer.launch

    forms = iter([False, True] * 20)
    monkeypatch.setattr(renderer.launch, "bins_macro_tiles", lambda footprint, previous=False: next(forms))
    cams = orbit_path(scene, *SIZE, 6)
    want = one_by_one(scene, cams, device)
    r = Renderer(scene, device=device)
    got, seen = [], set()
    for out in r.render_stream(cams):
        got.append(out.image.clone())
        seen.add(r.launch.macro)
        r.pair_capacity.size = r.macro_capacity.size = 64  # the frame in flight and the next overflow both
    for k in range(len(cams)):
        assert psnr(got[k], want[k]) >= 100.0, (k, psnr(got[k], want[k]))
    assert seen == {False, True} and r.rebins >= len(cams) - 1


@pytest.mark.parametrize("mode", ROUTES)
def test_temporal_reuse_in_a_stream_gets_the_cameras_ahead(scene, device, mode, monkeypatch):
    """A stream with a temporal window asked for: its window frames are rendered through `render`, with the
    cameras ahead passed on (the trial's window is built from them), its plain frames stream; the images are
    still exact, on either route. Depth output depends on the frame it rasterizes again: it goes one by one.
    The choice alternates plain and window frames here whatever it measured (its trial waits for plain frames in
    their steady form, which with CUDA graphs come after a capture: renderer/window_choice.py)."""
    from renderer.window_choice import WindowChoice

    flips = itertools.cycle([False, True])
    monkeypatch.setattr(WindowChoice, "wants_window", lambda self, *args: next(flips))
    cams = orbit_path(scene, *SIZE, 5)
    settings = RenderSettings(temporal_window=4)
    r = Renderer(scene, device=device)
    r.frame_mode = mode
    assert r.streams(settings) and not r.streams(RenderSettings(depth=True))
    futures = [cams[i + 1 : i + 4] for i in range(len(cams))]
    got = [out.image.clone() for out in r.render_stream(cams, settings, futures)]
    want = one_by_one(scene, cams, device, mode=mode)
    assert all(psnr(g, w) >= 100.0 for g, w in zip(got, want, strict=True))
    st = r.temporal.stats
    assert st.frames == len(cams) and st.window_builds >= 1 and st.frames_window_declined == 3, st


def test_frame_times_cover_the_stream(scene, device):
    """Each output carries its timer; the frames' handover spans are non-negative and sum to the stream's span,
    from the first frame's start to the last end."""
    cams = orbit_path(scene, *SIZE, 4)
    r = Renderer(scene, device=device)
    timers = [out.timer for out in r.render_stream(cams)]
    spans = handover_ms(timers)
    assert len(spans) == len(cams) and all(s >= 0.0 for s in spans)
    whole = max(t.since_start(timers[0]) for t in timers)
    assert abs(sum(spans) - whole) < 1e-3 * max(1.0, whole)


def test_a_frame_binned_again_is_timed_to_its_end(scene, monkeypatch):
    """A fresh renderer's first streamed frames overflow its empty pair capacity and are binned again when they
    are checked, after the next frame's launch. Their timers must cover that work, and the stream's spans must
    count it. On a clock that moves only when pairs are rasterized (one second each; an empty capacity
    rasterizes nothing), every frame's timer spans at least its own second (the second frame's also the third's
    launch and the first's rebin, which ran before its own rebin), and the stream's spans sum to one second a
    frame. (Timed only to their launch, as before, the first two frames took 0 s.)"""
    import renderer.timing
    from renderer.frame import Frame

    clock = [0.0]
    monkeypatch.setattr(renderer.timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    rasterize = Frame.rasterize

    def rasterize_on_the_clock(self, **tuning):
        rasterize(self, **tuning)
        if self.counted or self.capacity > 0:
            clock[0] += 1.0

    monkeypatch.setattr(Frame, "rasterize", rasterize_on_the_clock)
    cams = orbit_path(scene, *SIZE, 4)
    r = Renderer(scene, device="cpu")  # the CPU's timers read the clock above (a GPU's are CUDA events)
    assert r.pair_capacity.size == r.macro_capacity.size == 0
    timers = [out.timer for out in r.render_stream(cams)]
    totals = [t.elapsed_ms()["total"] for t in timers]
    assert all(ms >= 1000.0 for ms in totals), totals
    spans = handover_ms(timers)
    assert sum(spans) == 1000.0 * len(cams) and all(s >= 0.0 for s in spans), spans
    assert clock[0] == len(cams), "each frame rasterized its pairs once"


def test_temporal_reuse_streams_its_plain_frames(scene, device):
    """With a window asked for, the plain frames (those the window choice declines a window) stream like the
    default's instead of going one by one (which cost objects 0.12-0.15 ms); a window's own frames go one by one
    inside the stream (tests/renderer/test_temporal.py)."""
    r = Renderer(scene, device=device)
    r.graphs = True  # as on a GPU (nothing is rendered here)
    assert r.streams(RenderSettings(temporal_window=8))
    assert not r.streams(RenderSettings(depth=True)) and not r.streams(RenderSettings(reuse_unchanged_frame=True))
    r.frame_mode = "counted"  # counted frames too, where a second slot fits
    assert r.streams(RenderSettings(temporal_window=8)) and r.streams(RenderSettings())
    r.counted_frames_fit_in_flight = False  # a second slot that does not fit the device: one by one
    assert not r.streams(RenderSettings()) and not r.streams(RenderSettings(temporal_window=8))
