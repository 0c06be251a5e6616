"""Temporal reuse in the pipeline: exact where it is conservative (bit-equal images), rebuilt on jumps and
setting changes (never a stale frame), and used only where it measured faster than plain frames.

The window's own tests take the measured choice out of the way (`window_always`); the choice's tests inject the
timings (`timed`), since speed is measured, never asserted."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from renderer import Camera, Renderer, RenderSettings, look_at_pose, window_choice
from renderer.paths import scene_frame
from renderer.temporal import predict_poses
from renderer.window_choice import TRIAL_WINDOW_FRAMES, WindowChoice
from scenes import load_scene
from scenes.bundled import bundled_scene_path
from tests.renderer.test_window_choice import FakeTimer

# a trial at K = 4: window frames every second frame, so a window (its 4 cameras) serves two of them
TRIAL_K4 = ["plain", "build", "plain", "hit", "plain", "build", "plain", "hit", "plain"]

W, H = 64, 48


@pytest.fixture(scope="module")
def plant():
    return load_scene(bundled_scene_path())


@pytest.fixture
def window_always(monkeypatch):
    """Every frame that asks for a window gets one, whatever was measured: for testing the window itself."""
    monkeypatch.setattr(WindowChoice, "wants_window", lambda self, *args: True)


def timed(monkeypatch, renderer, costs):
    """The renderer's frames report these times (ms by kind: "build", "hit", "plain") to its window choice."""
    cache = renderer.temporal
    real = cache.record
    monkeypatch.setattr(cache, "record", lambda timer, steady: real(FakeTimer(costs[cache.last_use]), steady))


@pytest.fixture(scope="module")
def sparse_plant(plant):
    """Every 64th Gaussian: for 14 frames under the interpreter."""
    return plant.subset(torch.arange(0, len(plant), 64))


def scene_for(backend, plant, sparse_plant):
    return plant if backend == "torch" else sparse_plant


def inside_path(scene, n, *, start_deg=0.0, step_deg=6.0, radius=0.35):
    """A camera inside the plant turning on a small circle and looking along it: each frame sees part of it."""
    f = scene_frame(scene, W, H)
    up = f.up
    a = f.start_dir
    b = np.cross(up, a)
    cams = []
    for i in range(n):
        t = math.radians(start_deg + step_deg * i)
        eye = f.target + radius * f.extent * (math.cos(t) * a + math.sin(t) * b)
        look = -math.sin(t) * a + math.cos(t) * b
        cams.append(Camera.from_fov(W, H, 60.0, look_at_pose(eye, eye + look, -up)))
    return cams


def exact_images(scene, cams, backend, settings=None):
    r = Renderer(scene, backend=backend)
    return [r.render(c, settings).image.clone() for c in cams]


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_known_camera_window_is_bit_exact(plant, sparse_plant, backend, window_always):
    plant = scene_for(backend, plant, sparse_plant)
    cams = inside_path(plant, 7)
    want = exact_images(plant, cams, backend)
    r = Renderer(plant, backend=backend, graphs=False)
    s = RenderSettings(temporal_window=3)
    sources = []
    for i, cam in enumerate(cams):
        out = r.render(cam, s, future=cams[i + 1 :])
        assert torch.equal(out.image, want[i]), f"frame {i}"
        sources.append(out.stats.n_projected)
    st = r.temporal.stats
    assert st.window_builds == 3 and st.frames_from_window == 4  # frames 0, 3, 6 build; the others hit
    assert max(sources) < len(plant) * 0.9  # the window's set is a real subset


def test_jump_outside_the_window_rebuilds_and_stays_exact(plant, window_always):
    cams = inside_path(plant, 4)
    far = inside_path(plant, 1, start_deg=180.0)[0]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=4)
    r.render(cams[0], s, future=cams[1:])
    r.render(cams[1], s, future=cams[2:])
    assert r.temporal.stats.window_builds == 1
    out = r.render(far, s, future=None)  # a snap to somewhere the window never saw
    assert r.temporal.stats.window_builds == 2
    assert torch.equal(out.image, exact_images(plant, [far], "torch")[0])


def test_predicted_window_follows_steady_motion_and_rebuilds_on_a_jump(plant, window_always):
    cams = inside_path(plant, 6, step_deg=0.2)  # small steady steps, as in the viewer
    far = inside_path(plant, 1, start_deg=120.0)[0]
    want = exact_images(plant, cams + [far], "torch")
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=4, temporal_margin=64.0, temporal_guard=0.2)
    for cam, img in zip(cams, want):
        assert torch.equal(r.render(cam, s).image, img)  # no future given: predicted from the motion
    assert r.temporal.stats.frames_from_window >= 3
    builds = r.temporal.stats.window_builds
    assert torch.equal(r.render(far, s).image, want[-1])
    assert r.temporal.stats.window_builds == builds + 1


def turned(cam, degrees, up):
    """`cam` turned in place about the world's up axis by `degrees`."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    u = np.asarray(up, dtype=np.float64) / np.linalg.norm(up)
    R = c * np.eye(3) + s * np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]]) + (1 - c) * np.outer(u, u)
    pose = cam.T_world_camera.copy()
    pose[:3, :3] = R @ pose[:3, :3]
    return cam.with_pose(pose)


@pytest.mark.parametrize("degrees", [(3.0, 6.0, 9.0), (-4.0, 2.0, -7.0)], ids=["turning", "looking-around"])
def test_predicted_window_absorbs_motion_it_did_not_predict_within_its_margin(plant, window_always, degrees):
    """A window predicted from a camera at rest covers only that pose; turns of a few degrees that it did not
    predict (within the margin's reuse angle, 17 degrees at 64 px at this size) are served from it, and are exact
    only because its cull kept every Gaussian within the margin of the frame's edges: with no margin, frames
    turned this far lost Gaussians at the edges (the steady-motion test above cannot see that: its prediction is
    exact)."""
    start = inside_path(plant, 1)[0]
    up = scene_frame(plant, W, H).up
    cams = [start, start] + [turned(start, d, up) for d in degrees]
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=5, temporal_margin=64.0, temporal_guard=0.2)
    for i, (cam, img) in enumerate(zip(cams, want, strict=True)):
        assert torch.equal(r.render(cam, s).image, img), f"frame {i}"
    st = r.temporal.stats
    assert st.window_builds == 1 and st.frames_from_window == 4, "one window built at rest served every turn"


# (the settings a window is built for, then the next frame's): each change needs Gaussians the first window culled
# (larger footprints, a nearer near plane, a farther far plane), so a window kept across it would miss them
SETTINGS_CHANGES = [({}, {"scale_modifier": 1.6}), ({}, {"eps2d": 300.0}), ({"near": 0.3}, {}), ({"far": 0.15}, {})]


@pytest.mark.parametrize("first, then", SETTINGS_CHANGES)
def test_settings_change_rebuilds_the_window(plant, window_always, first, then):
    cams = inside_path(plant, 3)
    r = Renderer(plant, backend="torch")
    r.render(cams[0], RenderSettings(temporal_window=3, **first), future=cams[1:])
    out = r.render(cams[1], RenderSettings(temporal_window=3, **then), future=cams[2:])
    assert r.temporal.stats.window_builds == 2
    want, before = (exact_images(plant, [cams[1]], "torch", RenderSettings(**kw))[0] for kw in (then, first))
    assert torch.equal(out.image, want) and not torch.equal(want, before)


def test_unchanged_view_is_reused_and_any_change_renders(plant):
    cam = inside_path(plant, 1)[0]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(reuse_unchanged_frame=True)
    first = r.render(cam, s).image.clone()
    again = r.render(cam, s)
    assert again.stats.source == "reused" and torch.equal(again.image, first)
    assert r.temporal.stats.frames_reused == 1
    other = r.render(cam, RenderSettings(reuse_unchanged_frame=True, background=(1.0, 1.0, 1.0)))
    assert other.stats.source == "full" and not torch.equal(other.image, first)
    for changed in (cam.resized(W // 2, H // 2), replace(cam, fx=cam.fx * 1.1), replace(cam, cx=cam.cx + 3.0)):
        r.render(cam, s)  # the view to re-present, if only the pose were compared
        out = r.render(changed, s)  # the same pose: a resized window, a zoom, a shifted principal point
        assert out.stats.source == "full" and out.image.shape == (changed.height, changed.width, 3)
        assert torch.equal(out.image, Renderer(plant, backend="torch").render(changed).image)
    off = Renderer(plant, backend="torch")
    off.render(cam)
    assert off.render(cam).stats.source == "full"  # off by default: a benchmark times every frame


def test_predict_poses_repeats_the_last_motion():
    p0 = look_at_pose((0, 0, -4), (0, 0, 0), (0, -1, 0))
    p1 = look_at_pose((0.1, 0, -4), (0.1, 0, 0), (0, -1, 0))
    poses = predict_poses(p0, p1, 3)
    assert np.allclose(poses[2][:3, 3], (0.3, 0, -4)) and np.allclose(poses[2][:3, :3], p1[:3, :3])
    assert len(predict_poses(None, p1, 5)) == 1
    # a camera that turns and moves at once, from a turned start: each predicted step is the last one in the camera's
    # own frame (its motion relative to itself repeats), which a step taken in the world's frame is not
    q0 = look_at_pose((1.0, -0.5, -4), (0.3, 0.2, 0), (0, -1, 0))
    q1 = q0 @ look_at_pose((0.05, 0.02, 0.1), (0.3, 0.02, 1.0), (0, -1, 0))
    poses = predict_poses(q0, q1, 4)
    assert np.allclose(poses[0], q1)
    for a, b in zip(poses, poses[1:]):
        assert np.allclose(np.linalg.inv(a) @ b, np.linalg.inv(q0) @ q1)


@pytest.mark.parametrize(
    "field,value",
    [("temporal_window", -1), ("temporal_margin", 4.0), ("temporal_guard", -1.0)],
)
def test_bad_temporal_settings_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        RenderSettings(**{field: value}).validate()


@pytest.mark.parametrize("window_faster", [True, False], ids=["window-faster", "plain-faster"])
def test_the_renderer_keeps_the_side_that_measured_faster(plant, monkeypatch, window_faster):
    """A window of 4 with the path's cameras known: the first frames alternate plain and window frames (a build,
    then the frames the window serves, each between two plain ones), then the renderer keeps the faster (here by
    injected times: 0.75 or 1.31 times a plain frame, with its builds), and every frame is the exact one either
    way."""
    cams = inside_path(plant, 15)
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    timed(monkeypatch, r, {"build": 3.0, "hit": 1.0 if window_faster else 2.5, "plain": 2.0})
    s = RenderSettings(temporal_window=4)
    kinds, projected = [], []
    for i, cam in enumerate(cams):
        out = r.render(cam, s, future=cams[i + 1 :])
        assert torch.equal(out.image, want[i]), f"frame {i}"
        kinds.append(r.temporal.last_use)
        projected.append(out.stats.n_projected)
    trial = len(TRIAL_K4)
    assert kinds[:trial] == TRIAL_K4
    st = r.temporal.stats
    assert st.plain_ms == 2.0
    if window_faster:
        assert kinds[trial:] == ["build", "hit", "hit", "hit", "build", "hit"]
        assert st.window_choice == "on" and st.window_ms == pytest.approx((3.0 + 3 * 1.0) / 4)
        assert max(projected[trial:]) < 0.9 * len(plant)
    else:
        assert kinds[trial:] == ["plain"] * (len(cams) - trial) and st.window_choice == "off"
        assert projected[trial:] == [len(plant)] * (len(cams) - trial)
    assert st.frames_window_declined == kinds.count("plain")


@pytest.mark.parametrize("known", [True, False], ids=["known-cameras", "predicted"])
def test_a_trial_window_outlives_the_plain_frames_between_its_frames(plant, monkeypatch, known):
    """A trial alternates window and plain frames: the window built on its first window frame serves the next ones
    (its cameras are the path's next 8, known or predicted from steady motion) across the whole-scene frames
    between, and every frame is the exact one. A plain frame that dropped the window made each window frame of
    the trial a build, and its builds' cost the only one timed."""
    cams = inside_path(plant, 2 * TRIAL_WINDOW_FRAMES + 1, step_deg=6.0 if known else 0.2)
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    timed(monkeypatch, r, {"build": 3.0, "hit": 1.0, "plain": 2.0})
    s = RenderSettings(temporal_window=8, temporal_margin=64.0, temporal_guard=0.2)
    kinds, projected = [], []
    for i, cam in enumerate(cams):
        out = r.render(cam, s, future=cams[i + 1 :] if known else None)
        assert torch.equal(out.image, want[i]), f"frame {i}"
        kinds.append(r.temporal.last_use)
        projected.append(out.stats.n_projected)
    assert kinds == ["plain", "build"] + ["plain", "hit"] * (TRIAL_WINDOW_FRAMES - 1) + ["plain"]
    st = r.temporal.stats
    assert st.window_builds == 1 and st.frames_from_window == TRIAL_WINDOW_FRAMES - 1
    assert projected[::2] == [len(plant)] * (TRIAL_WINDOW_FRAMES + 1)
    if known:  # the window's set is a real subset (a predicted one, with its margin and guard, may keep it all)
        assert max(projected[1::2]) < 0.9 * len(plant)


def test_a_trial_builds_a_fresh_window_for_its_first_window_frame(plant, monkeypatch):
    """A re-check from "on" (here after 2 frames, its cost let through): the window in use still covers the next
    window frame's camera, but its build was timed before the trial, or never; the trial's first window frame
    builds a fresh one, so that the trial times a build. Every frame is the exact one."""
    monkeypatch.setattr(window_choice, "RECHECK_FRAMES", 2)
    monkeypatch.setattr(window_choice, "TRIAL_BUDGET", 1.0)
    cams = inside_path(plant, 2 * TRIAL_WINDOW_FRAMES + 6, step_deg=2.0)
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    timed(monkeypatch, r, {"build": 3.0, "hit": 1.0, "plain": 2.0})
    s = RenderSettings(temporal_window=8)
    kinds, reasons = [], []
    for i, cam in enumerate(cams):
        out = r.render(cam, s, future=cams[i + 1 :])
        assert torch.equal(out.image, want[i]), f"frame {i}"
        kinds.append(r.temporal.last_use)
        reasons.append(r.temporal.stats.last_build_reason)
    trial = 2 * TRIAL_WINDOW_FRAMES + 1
    # decided "on"; a window built, serving two frames; the re-check's plain frame; its first window frame, which
    # the window in use covers (built 4 frames before, for 8 cameras)
    assert kinds[trial:] == ["build", "hit", "hit", "plain", "build"]
    assert reasons[-1] == "a trial times a fresh window" and r.temporal.stats.window_choice == "measuring"


def test_a_stream_renders_window_frames_one_by_one_between_plain_ones(plant, monkeypatch):
    """`render_stream` keeps plain frames in flight and renders the frames a window serves one by one, after
    handing over the frame in flight: the frames are the exact ones, in order, whichever the choice."""
    cams = inside_path(plant, 12)
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    r.in_flight = True  # as on a GPU (a CPU renderer keeps none: renderer/device.py `frames_in_flight`)
    assert r.streams(RenderSettings(temporal_window=4))
    timed(monkeypatch, r, {"build": 3.0, "hit": 1.0, "plain": 2.0})
    futures = [cams[i + 1 : i + 4] for i in range(len(cams))]
    sources = []
    for i, out in enumerate(r.render_stream(cams, RenderSettings(temporal_window=4), futures=futures)):
        assert torch.equal(out.image, want[i]), f"frame {i}"
        sources.append(out.stats.source)
    trial = len(TRIAL_K4)
    assert sources[:trial] == ["full" if k == "plain" else "window" for k in TRIAL_K4]
    assert sources[trial:] == ["window"] * (len(cams) - trial)
    assert r.temporal.stats.window_choice == "on"


def test_window_keeping_nearly_everything_projects_the_scene_uncopied(plant, window_always):
    """An orbit that sees the whole plant: the window's cull keeps more than WINDOW_KEEPS_AT_MOST of it, so its
    frames project the renderer's own arrays (no copy), and stay exact."""
    from renderer.paths import orbit_path

    cams = orbit_path(plant, W, H, 4)
    want = exact_images(plant, cams, "torch")
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=4)
    for i, cam in enumerate(cams):
        out = r.render(cam, s, future=cams[i + 1 :])
        assert torch.equal(out.image, want[i]), f"frame {i}"
        assert out.stats.source == "full" and out.stats.n_projected == len(plant)
    assert r.temporal.stats.window_builds == 1 and r.temporal.stats.frames_from_window == 3
    assert r.temporal.stats.gaussians_in_window > 0.9 * len(plant)
    assert "window_means" not in r.ws._buffers, "nothing was copied"


def _bookkeeping_camera():
    """A camera for the cache's bookkeeping alone (no scene is rendered)."""
    return Camera.from_fov(W, H, 60.0, look_at_pose((0.0, 0.0, -4.0), (0.0, 0.0, 0.0), (0, -1, 0)))


def _asks(cache, cam, settings, known, frames=3):
    """What `TemporalCache.wants_window` answers on `frames` frames of `cam`, each recorded as a steady frame."""
    answers = []
    for _ in range(frames):
        answers.append(cache.wants_window(cam, settings, known, 1.0))
        cache.last_use = "build" if answers[-1] else "plain"
        cache.record(FakeTimer(1.0), steady=True)
    return answers


@pytest.mark.parametrize("k", [0, 1])
def test_a_window_of_one_frame_or_none_is_no_window(k):
    """temporal_window K > 1 asks for a window (one cull per K frames); 0 and 1 ask for none: every frame is plain
    and the window choice is not consulted (its state reads "")."""
    from renderer.temporal import TemporalCache

    cache = TemporalCache(ws=None)
    assert _asks(cache, _bookkeeping_camera(), RenderSettings(temporal_window=k), known=True) == [False] * 3
    assert cache.stats.window_choice == "" and cache.choice.trials == 0


@pytest.mark.parametrize("known", [True, False], ids=["known-cameras", "predicted"])
def test_an_orthographic_window_needs_the_cameras_known(known):
    """A predicted window's motion bounds are a pinhole's: an orthographic view takes windows only where the path's
    cameras are known (the trial's second frame is a window frame), and with predicted ones asks for none."""
    from renderer.temporal import TemporalCache

    cache = TemporalCache(ws=None)
    answers = _asks(cache, _bookkeeping_camera(), RenderSettings(temporal_window=4, ortho=True), known)
    if known:
        assert answers == [False, True, False] and cache.stats.window_choice == "measuring"
    else:
        assert answers == [False] * 3 and cache.stats.window_choice == ""


def test_a_predicted_window_serves_k_frames_and_then_is_used_up(plant, window_always):
    """A camera at rest predicts itself for all K frames: its window serves K frames (the build and K - 1 hits),
    and the next frame builds a new one because the window is used up."""
    cam = inside_path(plant, 1)[0]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=3)
    want = exact_images(plant, [cam], "torch")[0]
    builds, reasons = [], []
    for _ in range(4):
        assert torch.equal(r.render(cam, s).image, want)
        builds.append(r.temporal.stats.window_builds)
        reasons.append(r.temporal.stats.last_build_reason)
    assert builds == [1, 1, 1, 2] and r.temporal.stats.frames_from_window == 2
    assert reasons[0] == "first frame" and reasons[-1] == "window used up"


def test_a_tile_size_change_rebuilds_the_window(plant, window_always):
    """The window's cull rounds footprints to the frame's tiles (`window_key` holds the tile size): a frame at
    another tile size builds its own window, and is the exact one."""
    cams = inside_path(plant, 3)
    r = Renderer(plant, backend="torch")
    r.render(cams[0], RenderSettings(temporal_window=3), future=cams[1:])
    out = r.render(cams[1], RenderSettings(temporal_window=3, tile_size=16), future=cams[2:])
    assert r.temporal.stats.window_builds == 2
    assert torch.equal(out.image, exact_images(plant, [cams[1]], "torch", RenderSettings(tile_size=16))[0])


def test_the_hit_rate_counts_rendered_frames_only():
    """Frames served from a window over frames rendered: re-presented (unchanged) frames are not rendered."""
    from renderer.temporal import TemporalStats

    st = TemporalStats(frames=10, frames_reused=5, frames_from_window=4)
    assert st.hit_rate() == 4 / 5 and st.as_dict()["window_hit_rate"] == 0.8
    assert TemporalStats(frames=3, frames_reused=3).hit_rate() == 0.0


def test_after_invalidate_a_predicted_window_does_not_predict_the_jump(plant, window_always):
    """`invalidate` (the caller knows the camera jumped): the step from the last pose to the new one is no motion
    to repeat, so the next predicted window is predicted as from a camera at rest, at the new pose."""
    a, b = inside_path(plant, 1)[0], inside_path(plant, 1, start_deg=90.0)[0]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=4)
    r.render(a, s)
    r.temporal.invalidate()
    assert torch.equal(r.render(b, s).image, exact_images(plant, [b], "torch")[0])
    w = r.temporal.window
    assert w.predicted and all(np.array_equal(p, b.T_world_camera) for p in w.poses), "predicted a repeat of the jump"


def test_a_window_predicts_the_motion_from_the_frame_before_it_plain_or_not(plant, monkeypatch):
    """A predicted window repeats the last frame's motion, whatever that frame was: after a plain frame (a trial
    alternates them with window frames), the step from that frame's camera to this one's."""
    answers = iter([False, True])  # a plain frame, then a window frame
    monkeypatch.setattr(WindowChoice, "wants_window", lambda self, *args: next(answers))
    a, b = inside_path(plant, 2, step_deg=0.2)
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=3)
    r.render(a, s)
    assert r.temporal.window is None
    r.render(b, s)
    step = np.linalg.inv(a.T_world_camera) @ b.T_world_camera
    want = [b.T_world_camera, b.T_world_camera @ step, b.T_world_camera @ step @ step]
    assert all(np.allclose(p, q) for p, q in zip(r.temporal.window.poses, want, strict=True))


def test_a_guard_of_zero_still_serves_a_camera_exactly_at_a_predicted_pose(plant, window_always):
    """temporal_guard 0 allows no translation (f d / D <= m / 2 with D = 0), but a camera at rest, exactly at the
    pose its window predicted, is within it: the window serves its K frames."""
    cam = inside_path(plant, 1)[0]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=3, temporal_guard=0.0)
    for _ in range(3):
        r.render(cam, s)
    assert r.temporal.stats.window_builds == 1 and r.temporal.stats.frames_from_window == 2


@pytest.mark.parametrize("share, served", [(0.9, True), (1.1, False)])
def test_a_predicted_window_serves_turns_up_to_its_margin_less_one_tile(plant, window_always, share, served):
    """The reuse bound of a predicted window: a turn that moves no image point by more than (m - 16)/2 pixels
    (the margin less the tile of slack every window keeps, renderer/temporal.py) is served from it; a turn past
    that, though within m/2, builds a new window."""
    start = inside_path(plant, 1)[0]
    m = 64.0
    f = max(start.fx, start.fy)
    tan2 = (0.5 * start.width / start.fx) ** 2 + (0.5 * start.height / start.fy) ** 2
    bound = 0.5 * (m - 16.0) / (f * (1.0 + tan2))  # radians: d(f tan x)/dx at the image's corner
    assert share * bound < 0.5 * m / (f * (1.0 + tan2))  # within m/2 either way: the tile of slack decides
    cams = [start, start, turned(start, math.degrees(share * bound), scene_frame(plant, W, H).up)]
    r = Renderer(plant, backend="torch")
    s = RenderSettings(temporal_window=5, temporal_margin=m, temporal_guard=0.2)
    for cam in cams:
        r.render(cam, s)
    assert r.temporal.stats.window_builds == (1 if served else 2)
