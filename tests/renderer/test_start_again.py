"""A one-by-one frame runs the last frame's stage objects again straight away (its graph replayed, or its stages
launched: counted, or with graphs off) when nothing its kind bakes in has changed (renderer/pipeline.py
`_NextFrame`, `Renderer._start_again`), and takes the long way whenever something has: the
settings' fields changed in place, the image size, the renderer's route, graphs switch or launch configuration,
its workspace, or a frame of a stream between. CUDA graphs are simulated (a fake graph replays a frame by running
it, as renderer/graphs.py's captures replay the same launches), so the rules run on the CPU; every image equals
that of a renderer without graphs rendering the same camera with the same settings."""

import dataclasses

import pytest
import torch

from renderer import Renderer, RenderSettings
from renderer.graphs import REPLAY
from renderer.paths import orbit_path
from renderer.timing import StageTimer
from scenes import load_scene


class RunningGraph:
    def __init__(self, f):
        self.f = f

    def replay(self):
        self.f.run(StageTimer(None))


@pytest.fixture
def scene(scene_path):
    scene = load_scene(scene_path("playbot_crop.ply"))
    return scene.subset(torch.arange(0, len(scene), 4))


def _renderers(scene, device, monkeypatch):
    plain = Renderer(scene, device=device, backend="torch")
    r = Renderer(scene, device=device, backend="torch")
    monkeypatch.setattr(r._graphs, "capture", RunningGraph)
    r.graphs = True
    fast = []  # per frame: whether it ran through `_start_again`
    again = r._start_again
    monkeypatch.setattr(r, "_start_again", lambda *a: fast.append(True) or again(*a))
    return plain, r, fast


def _frame(r, plain, fast, cam, settings, plain_settings=None):
    """Render `cam` on both; the images must be equal. Returns (how it ran, whether it replayed straight away)."""
    before = len(fast)
    out = r.render(cam, settings)
    want = plain.render(cam, dataclasses.replace(settings) if plain_settings is None else plain_settings)
    for a, b in ((out.image, want.image), (out.alpha, want.alpha), (out.rgba8, want.rgba8)):
        assert (a is None) == (b is None) and (a is None or torch.equal(a, b))
    return out.stats.ran, len(fast) > before


def test_unchanged_frames_replay_straight_away_with_each_camera(scene, device, monkeypatch):
    """The same settings object frame after frame: once the kind is captured, each frame replays straight away, with
    its own camera (the images move with it)."""
    plain, r, fast = _renderers(scene, device, monkeypatch)
    s = RenderSettings(outputs="float", background=(0.1, 0.2, 0.3))
    cams = orbit_path(scene, 24, 16, 8)
    runs = [_frame(r, plain, fast, cam, s) for cam in cams]
    # the first frame sizes the capacities and the launch class: a new kind, captured on its third frame in a row
    assert runs[:4] == [("eager", False)] * 3 + [("capture", False)], runs
    assert runs[4:] == [(REPLAY, True)] * 4, runs
    assert not torch.equal(r.render(cams[0], s).image.clone(), r.render(cams[4], s).image)
    assert r.graph_replays == 7  # the capture's own run, then four straight away, and two more


def _settled(r, plain, fast, cams, s):
    """Frames until the last two replayed straight away."""
    runs = [_frame(r, plain, fast, cam, s) for cam in cams]
    assert runs[-1] == (REPLAY, True) and runs[-2] == (REPLAY, True), runs


@pytest.mark.parametrize("change", ["sh_degree", "outputs", "near", "scale_modifier", "ortho", "size"])
def test_a_setting_changed_in_place_takes_the_long_way(scene, device, monkeypatch, change):
    """The viewer changes its settings object in place: a field changed since the last frame (baked into the kind,
    or the covariances, or the image size) is never served by the old graph."""
    plain, r, fast = _renderers(scene, device, monkeypatch)
    s = RenderSettings(outputs="both")
    cams = orbit_path(scene, 24, 16, 8)
    _settled(r, plain, fast, cams[:6], s)
    if change == "size":
        cams = orbit_path(scene, 20, 12, 8)
    else:
        setattr(s, change, {"sh_degree": 0, "outputs": "rgba8", "near": 0.8, "scale_modifier": 1.6,
                            "ortho": True}[change])  # fmt: skip
    ran, again = _frame(r, plain, fast, cams[6], s)
    assert not again and ran != REPLAY, (change, ran)
    # and the picture did change (the check above would pass for a change nothing renders)
    old = dataclasses.replace(s, **{change: getattr(RenderSettings(), change)}) if change != "size" else s
    if change == "outputs":  # the images written changed: the float pair is gone (`_frame` compared that)
        assert r.render(cams[7], s).image is None
    elif change != "size":  # (each image read before the next render: a renderer's buffers hold its next frame)
        a = plain.render(cams[6], old).rgba8.clone()
        assert not torch.equal(a, plain.render(cams[6], dataclasses.replace(s)).rgba8), change
    _settled(r, plain, fast, cams[:6], s)  # and the new kind settles in its turn


def test_the_renderer_changed_between_frames_takes_the_long_way(scene, device, monkeypatch):
    """What code outside sets on the renderer between two frames: its route, its graphs switch, its launch
    configuration, its memory let go, and a stream's frames in between."""
    plain, r, fast = _renderers(scene, device, monkeypatch)
    s = RenderSettings(outputs="float")
    cams = orbit_path(scene, 24, 16, 8)
    _settled(r, plain, fast, cams[:6], s)
    r.frame_mode = "counted"
    assert _frame(r, plain, fast, cams[6], s) == ("counted", False)
    counted = r._counted_frames
    assert _frame(r, plain, fast, cams[7], s) == ("counted", True)  # counted frames run again straight away too
    assert r._counted_frames == counted + 1  # with their longest list kept for the launch class
    r.frame_mode = "auto"
    _settled(r, plain, fast, cams[:6], s)
    r.graphs = False
    assert _frame(r, plain, fast, cams[6], s) == ("eager", False)
    assert _frame(r, plain, fast, cams[7], s) == ("eager", True)  # with graphs off, the stages again straight away
    r.graphs = True
    assert _frame(r, plain, fast, cams[6], s)[1] is False
    _settled(r, plain, fast, cams[:6], s)
    r.launch = dataclasses.replace(r.launch, bin_block=r.launch.bin_block * 2)  # another kind of frame
    ran, again = _frame(r, plain, fast, cams[6], s)
    assert not again and ran != REPLAY, ran
    _settled(r, plain, fast, cams[:7], s)
    r.release_memory()
    ran, again = _frame(r, plain, fast, cams[6], s)
    assert not again, ran
    _settled(r, plain, fast, cams[:7], s)
    r.in_flight = True  # as on a GPU: the stream's frames alternate slots, one in flight
    for out, cam in zip(r.render_stream(cams[:3], s), cams[:3], strict=True):
        assert torch.equal(out.image, plain.render(cam, dataclasses.replace(s)).image)
    assert not _frame(r, plain, fast, cams[6], s)[1]
    assert _frame(r, plain, fast, cams[7], s) == (REPLAY, True)


def test_a_new_settings_object_of_equal_fields_takes_the_straight_way(scene, device, monkeypatch):
    """The viewer makes its settings object anew each frame: one of equal fields takes the straight way, and so does
    `render(camera)` without settings after a frame with the defaults; one whose fields differ does not."""
    plain, r, fast = _renderers(scene, device, monkeypatch)
    s = RenderSettings(outputs="float")
    cams = orbit_path(scene, 24, 16, 8)
    _settled(r, plain, fast, cams[:6], s)
    assert _frame(r, plain, fast, cams[6], dataclasses.replace(s)) == (REPLAY, True)
    assert _frame(r, plain, fast, cams[7], RenderSettings(outputs="float", near=0.02)) == ("eager", False)
    assert _frame(r, plain, fast, cams[7], RenderSettings(outputs="float", tile_size=16)) == ("eager", False)
    _settled(r, plain, fast, cams[:6], RenderSettings())
    before = len(fast)
    out = r.render(cams[6])
    assert len(fast) == before + 1 and out.stats.ran == REPLAY
    assert torch.equal(out.image, plain.render(cams[6]).image)


def test_invalid_settings_set_in_place_are_refused(scene, device, monkeypatch):
    """A field made invalid in place is checked as on any frame: the straight way does not skip the checks."""
    plain, r, fast = _renderers(scene, device, monkeypatch)
    s = RenderSettings(outputs="float")
    cams = orbit_path(scene, 24, 16, 8)
    _settled(r, plain, fast, cams[:6], s)
    s.tile_size = 12
    with pytest.raises(ValueError, match="tile_size 12"):
        r.render(cams[6], s)


def test_without_graphs_frames_run_again_straight_away(scene, device):
    """The CPU's renderer (no CUDA graphs): from the second frame of a kind on, each frame launches the last frame's
    stages again straight away, and its images equal a fresh renderer's of the same camera."""
    r = Renderer(scene, device=device, backend="torch")
    s = RenderSettings(outputs="both")
    cams = orbit_path(scene, 24, 16, 6)
    ran = []
    again = r._start_again
    r._start_again = lambda *a: ran.append(True) or again(*a)
    for i, cam in enumerate(cams):
        out = r.render(cam, s)
        fresh = Renderer(scene, device=device, backend="torch").render(cam, dataclasses.replace(s))
        assert torch.equal(out.image, fresh.image) and torch.equal(out.rgba8, fresh.rgba8), i
        assert out.stats.ran == "eager"
    # the first frame sizes the capacities and the launch class, the second is the first of its kind
    assert len(ran) == len(cams) - 2, len(ran)


def test_a_larger_frame_does_not_keep_the_last_frames_buffers_alive(scene, device):
    """A frame that outgrows the workspace's image buffer replaces it; the last frame's straight-way record (whose
    frame holds views of the old buffer) is let go as the new frame starts, so the old buffer is freed before the
    new frame's stages run rather than after its end."""
    import gc

    r = Renderer(scene, device=device, backend="torch")
    s = RenderSettings(outputs="float")
    for cam in orbit_path(scene, 24, 16, 3):
        r.render(cam, s)
    assert r._next_frame is not None
    # the old buffer's storage, weakly (a frame's views of it are made in inference mode: they share its storage
    # and do not keep the tensor object)
    old = r.ws._buffers["rgb"].untyped_storage()._weak_ref()
    alive = []
    real_fit = r._fit_pairs

    def fit(*args, **kwargs):  # after the new frame's stages ran, before its end
        gc.collect()
        alive.append(not torch.UntypedStorage._expired(old))
        return real_fit(*args, **kwargs)

    r._fit_pairs = fit
    r.render(orbit_path(scene, 96, 64, 1)[0], s)
    assert alive == [False]


def test_a_kind_first_made_with_the_first_configuration_takes_the_straight_way(scene, device, monkeypatch):
    """Where a path's configuration settles where the renderer's first frame started (its `LaunchConfig.first`),
    its frames find the first frame's stage objects, whose kind holds that configuration: it must be the object the
    renderer holds then, or `holds` (an identity check) sent every one of them the long way."""
    import renderer.pipeline

    # the configuration never moves from the first frame's (the scene's counts would move it now and then)
    monkeypatch.setattr(renderer.pipeline.LaunchConfig, "after", staticmethod(lambda previous, *a, **k: previous))
    plain, r, fast = _renderers(scene, device, monkeypatch)
    r.frame_mode = plain.frame_mode = "counted"
    # as a renderer of a counted scene starts (its first configuration came from the route it was made for: on a
    # GPU's capacity route, per macro-tile)
    r.launch = renderer.pipeline.LaunchConfig.first(True, cuda=r.device.type == "cuda")
    cams = orbit_path(scene, 24, 16, 5)
    s = RenderSettings(outputs="float")
    straight = [_frame(r, plain, fast, cam, s)[1] for cam in cams]
    assert straight == [False, True, True, True, True], straight
