"""Frames replayed as CUDA graphs equal frames launched stage by stage, bit for bit, through size changes,
settings changes and pair-capacity changes (each of which must re-capture, never replay stale addresses).
Needs CUDA: run on the GPU machine."""

import pytest
import torch

from renderer import Renderer, RenderSettings
from tools.bench_paths import object_paths

pytestmark = pytest.mark.gpu


@pytest.fixture
def scene(plant_on_gpu):
    return plant_on_gpu


def test_graph_frames_equal_eager_frames(scene):
    graphed = Renderer(scene, device="cuda", graphs=True)
    eager = Renderer(scene, device="cuda", graphs=False)
    paths = {size: object_paths(scene, *size, 6) for size in ((640, 360), (1920, 1080))}
    plan = [((640, 360), "orbit", 8), ((1920, 1080), "close", 8), ((640, 360), "orbit", 8),  # back to a size
            ((640, 360), "close", 16), ((1920, 1080), "orbit", 8)]  # fmt: skip
    for size, kind, tile in plan:
        settings = RenderSettings(tile_size=tile, background=(0.2, 0.1, 0.0))
        for cam in paths[size][kind]:
            a = graphed.render(cam, settings).image.clone()
            b = eager.render(cam, settings).image
            assert torch.equal(a, b), (size, kind, tile)
    # the close-ups bin per macro-tile and the orbits per tile (kernels/bin.py): each change of form retires the
    # frames (and graphs) of the other, which re-capture; 16 of the 30 frames replayed on the H200 (session 5)
    assert graphed.graphs and graphed.graph_replays >= 12, f"only {graphed.graph_replays} frames were replayed"
    assert eager.graph_replays == 0


def test_graph_survives_a_capacity_change(scene):
    """A far view, then a close one with more pairs than the capacity: the overflow frame is re-binned, the
    graph re-captured, and every image still equals the eager renderer's."""
    graphed = Renderer(scene, device="cuda", graphs=True)
    eager = Renderer(scene, device="cuda", graphs=False)
    paths = object_paths(scene, 1280, 720, 4)
    for cam in paths["orbit"] + paths["close"] + paths["orbit"]:
        assert torch.equal(graphed.render(cam).image.clone(), eager.render(cam).image)


def test_adagscale_frames_replay_with_each_frames_tau(scene):
    """AdaGScale's tau is the frame's (scaled to its Gaussians per pixel from the frame before's visible count),
    read from the device: replayed frames take each frame's value and equal eager frames bit for bit."""
    graphed = Renderer(scene, device="cuda", graphs=True)
    eager = Renderer(scene, device="cuda", graphs=False)
    s = RenderSettings(adagscale=True, adagscale_budget=0.05)  # binds at 320x180: 2 Gaussians per pixel
    taus = set()
    for cam in object_paths(scene, 320, 180, 12)["orbit"]:
        a = graphed.render(cam, s)
        b = eager.render(cam, s)
        assert a.stats.adagscale_tau == b.stats.adagscale_tau < s.adagscale_tau
        assert torch.equal(a.image.clone(), b.image)
        taus.add(a.stats.adagscale_tau)
    assert graphed.graph_replays >= 6 and len(taus) > 3, (graphed.graph_replays, taus)


def test_a_scale_modifier_change_never_replays_the_old_covariances(scene):
    """A graph holds the covariances' address; a scale modifier other than 1 puts them in a new tensor. Frames that
    replayed at 1, then at 1.4, then at 1 again equal an eager renderer's at each, and the images at 1.4 differ."""
    graphed = Renderer(scene, device="cuda", graphs=True)
    eager = Renderer(scene, device="cuda", graphs=False)
    cams = object_paths(scene, 320, 180, 6)["orbit"]
    images = {}
    for m in (1.0, 1.4, 1.0):
        s = RenderSettings(scale_modifier=m)
        for cam in cams:
            a = graphed.render(cam, s).image.clone()
            assert torch.equal(a, eager.render(cam, s).image), m
        images.setdefault(m, a)
    assert not torch.equal(images[1.0], images[1.4]) and graphed.graph_replays >= 6


def test_capture_beside_a_thread_that_waits_on_events(scene):
    """As in render-to-video: while frames are captured, another thread keeps waiting on the event the render
    thread recorded after its last frame (the encoder waiting for a frame's copy). Capture must neither fail
    nor fall back to eager frames."""
    import threading

    r = Renderer(scene, device="cuda", graphs=True)
    cams = object_paths(scene, 640, 360, 12)["orbit"]
    last: list = [None]
    errors: list[BaseException] = []
    stop = threading.Event()

    def waiter():  # a busy loop, so that it overlaps the capture
        while not stop.is_set():
            try:
                if last[0] is not None:
                    last[0].synchronize()
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)
                return

    t = threading.Thread(target=waiter)
    t.start()
    try:
        for cam in cams:
            r.render(cam)
            ev = torch.cuda.Event()
            ev.record()
            last[0] = ev
    finally:
        stop.set()
        t.join()
    assert not errors, errors[0]
    assert r.graphs and r.graph_replays >= 8, "capture fell back to eager frames"


@pytest.mark.parametrize("path", ["orbit", "close"])
def test_after_the_bench_warm_up_every_frame_of_an_orbit_replays(scene, path):
    """The bench's warm-up of a row in flight (tools/bench.py `time_variant`: 2 + CAPTURE_AFTER + SLOTS - 1 frames)
    leaves both slots' graphs captured, so every frame of the timed passes replays (RenderStats.ran). The orbits'
    first two first-pass frames were captures (1.3-2.7 ms against 0.27-0.39 medians) while the rebinned first
    frames chose their list class from the lists that had overflowed (BENCHMARKS.md, section 36)."""
    from renderer.graphs import CAPTURE_AFTER
    from renderer.pipeline import SLOTS
    from renderer.warmup import warm_up

    cams = object_paths(scene, 1920, 1080, 20)[path]
    r = Renderer(scene, device="cuda", frame_size=(1920, 1080))
    warm_up(r, [(1920, 1080)], [RenderSettings()])
    warm = [out.stats.ran_label() for out in r.render_stream(cams[: 2 + CAPTURE_AFTER + SLOTS - 1])]
    for _ in range(2):  # the two timed passes, each from the path's start
        ran = [out.stats.ran_label() for out in r.render_stream(cams)]
        assert ran == ["replay"] * len(cams), (warm, ran)
    assert warm[:2] == ["eager+rebin"] * 2 and warm[-2:] == ["capture"] * 2, warm


def test_kinds_a_growth_retired_are_captured_ahead_of_their_return(scene):
    """A growth of the pair capacity moves the pair buffers and retires every kept frame with its graph. The kinds
    that had a graph are captured again ahead, one on each frame after it that replays its own, so that the path's
    next time through replays: each was otherwise captured again on its return, the viewer loop's second-pass
    captures on the playbot (BENCHMARKS.md, section 48). Here both slots of an orbit's stream had graphs; frames
    one at a time (slot 0) follow the growth, and then the stream's slot-1 frames replay from their first."""
    from renderer.graphs import CAPTURE_AFTER
    from renderer.pipeline import SLOTS
    from renderer.warmup import warm_up

    cams = object_paths(scene, 1920, 1080, 20)["orbit"]
    r = Renderer(scene, device="cuda", frame_size=(1920, 1080))
    warm_up(r, [(1920, 1080)], [RenderSettings()])
    list(r.render_stream(cams[: 2 + CAPTURE_AFTER + SLOTS - 1]))
    assert [out.stats.ran_label() for out in r.render_stream(cams)] == ["replay"] * len(cams)
    kept = {slot for slot, _ in r.frames.frames}
    assert kept == {0, 1}, kept
    # a growth, as a frame whose pairs did not fit makes it (Renderer._fit_pairs)
    r.pair_capacity.grow(r.pair_capacity.size + 1)
    r._release_pairs()
    assert {slot for slot, *_ in r._ahead} == {0, 1}, r._ahead
    # slot 0's kind captured again on its first frame, then the frames that replay capture the others ahead
    one = [r.render(cams[0]).stats.ran_label()]
    while r._ahead and len(one) < 12:
        one.append(r.render(cams[len(one)]).stats.ran_label())
    assert one[0] == "capture" and set(one[1:]) == {"replay"} and not r._ahead, one
    assert [out.stats.ran_label() for out in r.render_stream(cams)] == ["replay"] * len(cams)


def test_settings_changed_in_place_never_replay_a_stale_graph(scene):
    """One settings object changed in place between frames, as the viewer changes its own: a frame replays the
    last frame's graph straight away only while nothing the graph bakes in has changed (renderer/pipeline.py
    `_NextFrame`), so every image equals an eager renderer's, and the unchanged stretches do replay."""
    graphed = Renderer(scene, device="cuda", graphs=True)
    eager = Renderer(scene, device="cuda", graphs=False)
    cams = object_paths(scene, 640, 360, 8)["orbit"]
    s = RenderSettings()
    changes = [("sh_degree", 1), ("scale_modifier", 1.3), ("tile_size", 16), ("near", 1.5), ("sh_degree", None),
               ("background", (0.3, 0.2, 0.1)), ("scale_modifier", 1.0), ("outputs", "rgba8")]  # fmt: skip
    straight = []
    again = graphed._start_again
    graphed._start_again = lambda *a: straight.append(True) or again(*a)
    for name, value in changes:
        setattr(s, name, value)
        for cam in cams:
            a = graphed.render(cam, s).rgba8.clone()
            assert torch.equal(a, eager.render(cam, RenderSettings(**vars(s))).rgba8), (name, value)
    assert len(straight) >= 3 * len(changes), len(straight)
