"""The overlay's panels: the render rate first, the help beside (not over) the settings, colour legends for the
depth and heat-map views, opening another scene (path or dropped file) and changing the up axis; every panel
inside the window through resizes, long names and scene changes; the performance graph's scale; pasting from
the system clipboard; opaque dropdowns; messages that name each file once and never split a file name."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from .driving import open_viewer, pump, send


def test_performance_panel_shows_the_render_rate_first():
    from app.panels import performance_lines
    from app.state import ViewerState
    from renderer import Camera

    state = ViewerState(camera=Camera.from_fov(64, 48, 60.0))
    for _ in range(30):
        state.frame_ms.append(16.7)  # the window loop re-presents at 60 Hz ...
    for _ in range(3):
        state.render_ms.append(1250.0)  # ... while a CPU frame takes 1.25 s
    state.render_size = (320, 180)
    lines = performance_lines(state)
    assert lines[0] == "render      0.8 frames/s  (1.25 s a frame at 320x180)"
    assert lines[1].startswith("window     59.9 FPS")


def test_performance_rates_are_medians_of_the_newest_times():
    """The render rate is the median of the last 10 render times and the window rate the median of the last 30
    frame times: one slow frame (a resize, a scene change, a stall of the window system) among them must not
    move the rate shown, as a mean would (9 renders of 10 ms and one of 1 s average 109 ms: 9.2 frames/s
    where the renderer does 100). Older times, here slower ones, count no more: with them the medians would be
    1.5 s and 500 ms."""
    from app.panels import performance_lines
    from app.state import ViewerState
    from renderer import Camera

    state = ViewerState(camera=Camera.from_fov(64, 48, 60.0))
    for ms in [2000.0] * 10 + [10.0] * 9 + [1000.0]:
        state.render_ms.append(ms)
    for ms in [500.0] * 30 + [10.0] * 29 + [1000.0]:
        state.frame_ms.append(ms)
    state.render_size = (320, 180)
    lines = performance_lines(state)
    assert lines[0] == "render    100.0 frames/s  (10.00 ms a frame at 320x180)", lines
    assert lines[1] == "window    100.0 FPS       (re-presents the last frame)", lines


def test_stage_lines_put_each_stage_beside_its_own_time():
    """The overlay's per-stage profile: each stage's name beside its own time, in the frame's order, total last."""
    from app.panels import stage_lines

    stage_ms = {"project": 0.125, "order": 0.25, "bin": 0.5, "sort": 1.0, "tile_lists": 2.0, "rasterize": 4.0,
                "total": 7.875}  # fmt: skip
    lines = stage_lines(stage_ms)
    assert lines[0] == "previous frame, per stage (ms):"
    assert lines[1:] == ["  project       0.125", "  order         0.250", "  bin           0.500",
                         "  sort          1.000", "  tile_lists    2.000", "  rasterize     4.000",
                         "  total         7.875"]  # fmt: skip
    assert stage_lines({}) == []


def test_performance_panel_says_whether_the_temporal_window_is_in_use():
    from app.panels import window_line
    from renderer.temporal import TemporalStats

    t = TemporalStats(window_choice="measuring").as_dict()
    assert window_line(t) == "window     measuring: timing window frames against plain ones"
    t = TemporalStats(window_choice="on", window_ms=1.5, plain_ms=2.0, frames=10, frames_from_window=6,
                      window_builds=2).as_dict()  # fmt: skip
    assert window_line(t) == "window     in use (1.50 ms a frame against 2.00 plain); 60% hits, 2 builds"
    t = TemporalStats(window_choice="off", window_ms=2.6, plain_ms=2.0).as_dict()
    assert window_line(t) == "window     not in use: plain frames are faster (2.60 ms a frame against 2.00 plain)"


def test_legend_ticks_follow_the_views_colour_scales():
    from app.panels import legend_ticks

    # heat map: colour position log(1 + n) / log(1 + max), so the middle of the bar is sqrt(1 + max) - 1
    assert legend_ticks("heatmap", 0, 99) == [(0.0, "0"), (0.5, "9"), (1.0, "99")]
    # depth: inverse depth from far (0) to near (1); halfway in 1/depth between 1 and 4 is 1.6
    assert legend_ticks("depth", 1.0, 4.0) == [(0.0, "4"), (0.5, "1.6"), (1.0, "1")]


# ---------------------------------------------------------------------------------------------- in a window


@pytest.fixture(scope="module")
def plant():
    from scenes import bundled_scene_path, load_scene

    return load_scene(bundled_scene_path())


@pytest.fixture
def viewer(x_display, plant, tmp_path):
    """A window of its own per test, big enough for the panels; frames render at 1/20 of it (48x30)."""
    with open_viewer(plant, tmp_path, size=(960, 600), render_scale=0.05) as window:
        window.state.show_overlay = True
        yield window


def draw(window, frames: int = 3) -> None:
    for _ in range(frames):  # imgui sizes auto-resized windows over their first frames
        window.switch_to()
        window.on_draw()
        window.flip()


def overlaps(a, b) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


@pytest.mark.gl
@pytest.mark.parametrize("size", [(960, 600), (1280, 720)])
def test_help_does_not_cover_the_settings(viewer, size):
    from app.panels import HelpPanel, ScenePanel, SettingsPanel

    viewer.set_size(*size)
    viewer.dispatch_events()
    viewer.state.show_help = True
    try:
        draw(viewer)
        help_rect = viewer.overlay.panel(HelpPanel).rect
        for kind in (SettingsPanel, ScenePanel):
            rect = viewer.overlay.panel(kind).rect
            assert rect is not None and not overlaps(help_rect, rect), (kind.__name__, help_rect, rect)
        assert help_rect[0] >= 0 and help_rect[1] >= 0, "the help stays in the window"
    finally:
        viewer.state.show_help = False


@pytest.mark.gl
def test_depth_and_heat_map_views_get_a_legend(viewer):
    from pyglet.window import key

    from app.panels import LegendPanel

    legend = viewer.overlay.panel(LegendPanel)
    try:
        for symbol, mode in ((key._4, "depth"), (key._3, "heatmap")):
            send(viewer, "on_key_press", symbol, 0)
            pump(viewer)
            draw(viewer)
            assert viewer.state.render_mode == mode and legend.rect is not None, mode
            caption, low, high = legend.range()
            if mode == "depth":
                assert (low, high) == viewer._last_frame.depth_range and 0 < low < high
            else:
                assert high == viewer.state.stats.max_tile_pairs > 0
        send(viewer, "on_key_press", key._1, 0)
        pump(viewer)
        draw(viewer)
        assert legend.rect is None, "RGB has no legend"
    finally:
        send(viewer, "on_key_press", key._1, 0)
        pump(viewer)


@pytest.mark.gl
def test_up_axis_can_be_set_in_the_viewer(viewer):
    from renderer import default_camera

    old = viewer.scene.up_axis
    try:
        viewer.set_up_axis("+z")
        w, h = viewer.get_framebuffer_size()
        np.testing.assert_allclose(viewer.state.camera.T_world_camera,
                                   default_camera(viewer.scene, w, h, up="+z").T_world_camera)  # fmt: skip
        np.testing.assert_allclose(viewer.controller.scene.up, [0, 0, 1])
        assert viewer.overlay.up_axis == "+z" and viewer.state.camera_jumped
        viewer.set_up_axis("sideways")
        assert "--up 'sideways'" in viewer.state.message and viewer.overlay.up_axis == "+z"
        pump(viewer)
    finally:
        viewer.set_up_axis(old)
        pump(viewer)


@pytest.mark.gl
def test_o_toggles_an_orthographic_view_that_keeps_the_scale_at_the_scene_centre(viewer):
    """O: the frames render orthographic (`RenderSettings.ortho`), with pixels per world unit equal to the pinhole's
    at the depth of the scene's centre; scrolling (orbit) zooms it; keyframes are refused; O again restores the
    pinhole's field of view; the frames rendered along the way show the scene."""
    from pyglet.window import key

    draw(viewer)
    ctl = viewer.controller
    before = viewer.state.camera
    depth = float((np.asarray(ctl.scene.center) - before.position) @ before.T_world_camera[:3, 2])
    send(viewer, "on_key_press", key.O, 0)
    assert viewer.state.settings.ortho
    assert viewer.state.camera.fy == pytest.approx(before.fy / depth)
    pump(viewer)
    assert viewer.state.stats is not None and viewer.state.stats.n_visible > 0
    ctl.toggle_mode()  # orbit: the scroll wheel zooms
    send(viewer, "on_mouse_scroll", 300, 300, 0, 2)
    assert viewer.state.camera.fy == pytest.approx(before.fy / depth / 0.85**2)
    ctl.add_keyframe()
    assert not ctl.keyframes and "O leaves the orthographic view" in viewer.state.message
    send(viewer, "on_key_press", key.O, 0)
    assert not viewer.state.settings.ortho
    assert viewer.state.camera.fov_y_deg == pytest.approx(before.fov_y_deg)
    pump(viewer)


@pytest.mark.gl
def test_the_keyframe_list_goes_to_sets_and_removes_keyframes(viewer):
    """The Scene panel lists the keyframes: "go" shows one (pose and field of view), "set" replaces one with the
    current view, "remove" deletes that one (not the last)."""
    from app.panels import ScenePanel
    from renderer.paths import axis_angle

    ctl = viewer.controller
    poses = []
    for yaw in (0.0, 0.3, 0.6):
        T = viewer.state.camera.T_world_camera.copy()
        T[:3, :3] = axis_angle([0, 1, 0], yaw) @ T[:3, :3]
        ctl._set_pose(T)
        ctl.add_keyframe()
        poses.append(T)
    draw(viewer)
    panel = viewer.overlay.panel(ScenePanel)
    click(viewer, panel.items["go 2"])
    np.testing.assert_allclose(viewer.state.camera.T_world_camera, poses[1], atol=1e-9)
    moved = poses[1].copy()
    moved[:3, 3] += 0.25
    ctl._set_pose(moved)
    draw(viewer)
    click(viewer, panel.items["set 2"])
    np.testing.assert_allclose(ctl.keyframes[1].T_world_camera, moved, atol=1e-9)
    click(viewer, panel.items["remove 1"])
    assert len(ctl.keyframes) == 2
    np.testing.assert_allclose(ctl.keyframes[0].T_world_camera, moved, atol=1e-9)  # the first removed, not the last
    np.testing.assert_allclose(ctl.keyframes[1].T_world_camera, poses[2], atol=1e-9)


@pytest.mark.gl
def test_the_field_of_view_slider_sets_the_camera_and_the_keyframes_keep_it(viewer):
    """A click on the Scene panel's field-of-view slider sets the vertical field of view where it lands (the pose
    stays); the next frame renders with it, and a keyframe added now keeps it."""
    from app.panels import ScenePanel
    from app.state import FOV_RANGE

    draw(viewer)
    before = viewer.state.camera
    rect = viewer.overlay.panel(ScenePanel).items["field of view"]
    click(viewer, (rect[0], rect[1], 0.25 * rect[2], rect[3]))  # an eighth of the way along
    fov = viewer.state.camera.fov_y_deg
    assert FOV_RANGE[0] < fov < before.fov_y_deg - 5, (before.fov_y_deg, fov)
    np.testing.assert_array_equal(viewer.state.camera.T_world_camera, before.T_world_camera)
    pump(viewer)
    assert viewer.state.camera.fov_y_deg == pytest.approx(fov)
    viewer.controller.add_keyframe()
    assert viewer.controller.keyframes[-1].fov_y_deg == pytest.approx(fov)
    viewer.controller.set_fov(500.0)
    assert viewer.state.camera.fov_y_deg == pytest.approx(FOV_RANGE[1])


@pytest.mark.gl
def test_level_takes_a_rolled_views_roll_out_of_the_scenes_up(viewer):
    """A tilted capture: roll the view, press L (or the panel's "level" button). The scene's up loses its component
    along the view's right, so the view is level about it and keeps its pitch; it is a direction (shown as
    "custom" in the up-axis list); the view and the keyframes stay, and flying turns about the new up."""
    from pyglet.window import key

    from app.panels import UP_AXES, ScenePanel, up_axis_index
    from renderer import up_vector
    from renderer.paths import axis_angle

    old = viewer.scene.up_axis
    try:
        draw(viewer)
        viewer.controller.add_keyframe()
        T = viewer.state.camera.T_world_camera.copy()
        T[:3, :3] = T[:3, :3] @ axis_angle([0, 0, 1], np.radians(20))  # roll 20 degrees about the view axis
        viewer.controller._set_pose(T)
        before = up_vector(old)
        send(viewer, "on_key_press", key.L, 0)
        up = up_vector(viewer.scene.up_axis)
        assert abs(up @ T[:3, 0]) < 1e-5  # level in this view (the axis setting has 6 decimals)
        assert abs(np.linalg.det(np.stack([up, before, T[:3, 0]]))) < 1e-4  # the old up less its right component
        assert np.degrees(np.arccos(up @ before)) > 5  # it did turn
        np.testing.assert_allclose(viewer.state.camera.T_world_camera, T, atol=1e-12)  # the view stays
        assert len(viewer.controller.keyframes) == 1
        np.testing.assert_allclose(viewer.controller.scene.up, up)
        assert up_axis_index(viewer.overlay.up_axis) == len(UP_AXES)  # shown as "custom ..."
        pump(viewer)
        viewer.controller.rotate(np.radians(30), 0.0)  # a yaw about the new up keeps the view level
        assert abs(up @ viewer.state.camera.T_world_camera[:3, 0]) < 1e-5
        viewer.set_up_axis("-y")
        draw(viewer)
        click(viewer, viewer.overlay.panel(ScenePanel).items["level"])  # the button: the default view is level
        assert viewer.scene.up_axis == "-y"
    finally:
        viewer.set_up_axis(old)
        pump(viewer)


@pytest.mark.gl
def test_a_dropped_camera_file_gives_keyframes_or_training_cameras(viewer, tmp_path):
    """A saved camera path dropped on the window (or typed in the Scene panel) becomes the keyframes, to play,
    edit and save again; INRIA's cameras.json and a COLMAP model's images file become the training cameras; a
    broken one says why and changes nothing. The scene stays."""
    import zipfile

    from renderer import look_at_pose
    from renderer.paths import Keyframe, save_camera_path
    from tests.conftest import bundled
    from tests.renderer.paths.test_formats import garden_cameras_json

    scene = viewer.scene
    keys = [Keyframe(look_at_pose([x, -1, -4], [0, 0, 0], [0, -1, 0]), 50.0 + 5 * i) for i, x in enumerate((-1, 0, 2))]
    path = tmp_path / "camera_path.json"
    save_camera_path(path, keys, width=64, height=48, fps=10, seconds=2.0)
    send(viewer, "on_file_drop", 10, 10, [str(path)])
    got = viewer.controller.keyframes
    assert len(got) == 3 and "3 keyframes from" in viewer.state.message
    for cam, key in zip(got, keys, strict=True):
        np.testing.assert_allclose(cam.T_world_camera, key.T_world_camera, atol=1e-9)
        assert cam.fov_y_deg == pytest.approx(key.fov_y_deg)
    inria, *_ = garden_cameras_json(tmp_path)
    assert viewer.open_scene_file(str(inria)) and len(viewer.controller.training_cameras) == 3
    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    viewer.controller.training_cameras = []
    assert viewer.open_scene_file(str(tmp_path / "model" / "txt" / "images.txt"))
    assert len(viewer.controller.training_cameras) == 3
    (tmp_path / "bad.json").write_text("{not json")
    assert not viewer.open_scene_file(str(tmp_path / "bad.json"))
    assert "could not open" in viewer.state.message and "not valid JSON" in viewer.state.message
    assert len(viewer.controller.keyframes) == 3 and viewer.scene is scene


@pytest.mark.gl
def test_a_scene_opens_from_a_path_or_a_dropped_file(viewer, tmp_path):
    from scenes import make_scene, save_scene

    g = torch.Generator().manual_seed(1)
    n = 300
    small = make_scene(torch.randn(n, 3, generator=g), torch.randn(n, 4, generator=g),
                       torch.randn(n, 3, generator=g) - 3, torch.randn(n, generator=g) + 2,
                       torch.rand(n, 1, 3, generator=g))  # fmt: skip
    path = tmp_path / "small.ply"
    save_scene(small, str(path))
    bad = tmp_path / "bad.ply"
    bad.write_bytes(b"not a scene")

    before = viewer.scene
    assert not viewer.open_scene_file(str(bad))
    assert viewer.scene is before and viewer.state.message.startswith(f"could not open {bad}: ")

    send(viewer, "on_file_drop", 10, 10, [str(path)])
    assert len(viewer.scene) == n and viewer.overlay.scene_name.startswith("small.ply: 300 Gaussians")
    assert viewer.state.message == f"opened {path}"
    pump(viewer)
    assert viewer.state.stats.n_gaussians == n


def test_viewer_starts_exact():
    """No switch both pays on every bench path and holds its floor beyond the bench's views (app/state.py
    `viewer_settings`), so the viewer starts with the exact default, as `render` and `bench` do."""
    from app.state import viewer_settings
    from renderer import RenderSettings

    assert viewer_settings() == RenderSettings() and not viewer_settings().adagscale


# ---------------------------------------------------------------------------------------------- layout


def resize(window, width: int, height: int) -> None:
    """Resize and wait until the X server has done it (pyglet reports the new size through events)."""
    import time

    window.set_size(width, height)
    for _ in range(100):
        window.dispatch_events()
        if window.get_framebuffer_size() == (width, height):
            break
        time.sleep(0.02)
    assert window.get_framebuffer_size() == (width, height)
    draw(window, 4)


def assert_panels_inside(window) -> None:
    w, h = window.get_framebuffer_size()
    drawn = [(type(p).__name__, p.rect) for p in window.overlay.panels if p.rect is not None]
    assert len(drawn) >= 3, drawn  # performance, settings, scene at least
    for name, (x, y, pw, ph) in drawn:
        assert x >= 0 and y >= 0 and x + pw <= w and y + ph <= h, (name, (x, y, pw, ph), (w, h))


@pytest.mark.gl
def test_panels_stay_inside_the_window_through_resizes(viewer):
    """Shrinking, growing and squashing the window, with the help shown and hidden: every panel's rectangle
    lies inside the window (the settings used to keep the place they were first given)."""
    try:
        for size in [(960, 600), (600, 400), (1280, 720), (700, 420), (960, 600)]:
            for help_shown in (False, True):
                viewer.state.show_help = help_shown
                resize(viewer, *size)
                assert_panels_inside(viewer)
    finally:
        viewer.state.show_help = False


@pytest.mark.gl
def test_panels_stay_inside_with_long_names_and_another_scene(viewer, tmp_path):
    """A long scene name (wrapped at its spaces) and a long message keep the panels inside the window; so does
    opening another scene, and the name of the file opened stays whole on one line."""
    from app.panels import PerformancePanel
    from scenes import save_scene

    resize(viewer, 700, 420)
    viewer.overlay.scene_name = "a_scene_with_a_rather_long_file_name.ply: 1,234,567 Gaussians, SH degree 3"
    viewer.state.message = "a message with many words " * 8
    draw(viewer, 4)
    assert_panels_inside(viewer)
    path = tmp_path / "another scene with spaces in its name.ply"
    save_scene(viewer.scene.subset(torch.arange(0, len(viewer.scene), 500)), str(path))
    assert viewer.open_scene_file(str(path))
    pump(viewer)
    draw(viewer, 4)
    assert_panels_inside(viewer)
    lines = viewer.overlay.panel(PerformancePanel).message_lines
    assert any(str(path).replace(" ", "\u00a0") in line for line in lines), lines


# ---------------------------------------------------------------------------------------------- graph


def test_graph_scale_follows_the_data():
    """A CPU's 0.3-6 s renders beside a 60 Hz window loop span more than a decade: a log axis around both,
    with only the 60 FPS line in range. A GPU at 0.5 ms with vsync shows all three lines; frame times within
    a decade get a linear axis from zero."""
    from app.panels import graph_scale

    cpu = graph_scale([np.array([300.0, 1200.0, 6000.0]), np.full(100, 16.7)])
    assert cpu.log and cpu.low <= 16.7 and cpu.high >= 6000.0 and cpu.high < 20_000
    assert cpu.fps_lines == (60,)
    gpu = graph_scale([np.array([0.45, 0.55]), np.full(100, 16.7)])
    assert gpu.log and gpu.low <= 0.45 and gpu.fps_lines == (60, 120, 240)
    flat = graph_scale([np.array([10.0, 12.0]), np.array([7.0])])
    assert not flat.log and flat.low == 0.0 and 12.0 <= flat.high < 20.0 and flat.fps_lines == (120, 240)
    assert graph_scale([np.zeros(0), np.zeros(0)]) is None


def test_the_graphs_slowest_render_is_named_with_its_cause():
    """A spike on the performance graph gets a line saying what that render was made of (a CUDA graph capture, a
    growth's rebin: RenderStats.ran_label), taken from the samples the graph shows; none without a spike (within
    1.5x the median), and older samples than the graph's do not count."""
    from app.panels import GRAPH_SECONDS, slowest_line
    from app.state import FrameTimes

    now = 1000.0
    times = FrameTimes()
    assert slowest_line(times, now) is None
    times.append(90.0, at=now - GRAPH_SECONDS - 1, tag="eager")  # off the graph
    for k in range(20):
        times.append(0.40 + 0.01 * (k % 3), at=now - 10 + 0.1 * k, tag="replay")
    assert slowest_line(times, now) is None, "no spike: nothing to explain"
    times.append(2.71, at=now - 4, tag="capture")
    times.append(0.41, at=now - 3, tag="replay")
    assert times.slowest_since(now - GRAPH_SECONDS) == (2.71, now - 4, "capture")
    assert slowest_line(times, now) == "slowest     2.71 ms, 4 s ago: a CUDA graph captured"
    times.append(5.2, at=now - 1, tag="eager+rebin")
    assert slowest_line(times, now) == "slowest     5.20 ms, 1 s ago: stage by stage, binned again after a growth"
    assert slowest_line(times, now + GRAPH_SECONDS) is None


@pytest.mark.gl
def test_graph_shows_the_last_seconds_at_the_datas_scale(viewer):
    """Through the panel: samples of the last GRAPH_SECONDS are plotted, older ones are not, and the axis spans
    what is plotted (an old 50 s frame does not stretch it)."""
    import time

    from app.panels import GRAPH_SECONDS, PerformancePanel

    s = viewer.state
    now = time.perf_counter()
    s.render_ms.clear()
    s.frame_ms.clear()
    s.render_ms.append(50_000.0, at=now - GRAPH_SECONDS - 5)  # too old to show
    for k, ms in enumerate([300.0, 1200.0, 6000.0]):
        s.render_ms.append(ms, at=now - 15 + 5 * k)
    s.frame_ms.append(40_000.0, at=now - GRAPH_SECONDS - 1)
    for k in range(600):  # the last 10 s at 60 Hz
        s.frame_ms.append(16.7, at=now - 10 + k / 60)
    viewer.capture()  # draws the overlay without adding a window frame time of its own
    panel = viewer.overlay.panel(PerformancePanel)
    assert panel.plotted == {"render": 3, "window": 600}
    assert panel.slowest.startswith("slowest  6000.00 ms, 5 s ago")  # the graph's spike, named (untagged here)
    assert panel.graph.log and panel.graph.low <= 16.7 and 6000 <= panel.graph.high < 40_000
    assert panel.graph.fps_lines == (60,)


# ---------------------------------------------------------------------------------------------- clipboard

# A program holding the clipboard: it answers requests for the text from its event loop, as any program does
# (argv[2] == "hung": it never runs its loop, so never answers).
CLIPBOARD_OWNER = """
import sys, time
import pyglet
pyglet.options["shadow_window"] = False
window = pyglet.window.Window(visible=False)
window.set_clipboard_text(sys.argv[1])
print("copied", flush=True)
if sys.argv[2] == "hung":
    time.sleep(600)
pyglet.app.run()
"""


@contextlib.contextmanager
def clipboard_owner(text: str, how: str = "answers"):
    """Another X client holding `text` on the clipboard, for the duration."""
    import subprocess
    import sys

    from tests.conftest import REPO

    owner = subprocess.Popen([sys.executable, "-c", CLIPBOARD_OWNER, text, how], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        assert owner.stdout.readline().strip() == "copied"
        yield
    finally:
        owner.kill()
        owner.wait()


def click(window, rect) -> None:
    from pyglet.window import mouse

    x, y = rect[0] + rect[2] / 2, window.height - (rect[1] + rect[3] / 2)
    send(window, "on_mouse_motion", x, y, 0, 0)
    draw(window, 2)
    send(window, "on_mouse_press", x, y, mouse.LEFT, 0)
    draw(window, 2)
    send(window, "on_mouse_release", x, y, mouse.LEFT, 0)
    draw(window, 2)


def chord(window, modifier, symbol) -> None:
    """Press and release modifier+symbol, with frames between (imgui takes one key change a frame)."""
    from pyglet.window import key

    mod = {key.LCTRL: key.MOD_CTRL, key.LSHIFT: key.MOD_SHIFT}[modifier]
    send(window, "on_key_press", modifier, mod)
    draw(window, 2)
    send(window, "on_key_press", symbol, mod)
    draw(window, 2)
    send(window, "on_key_release", symbol, mod)
    send(window, "on_key_release", modifier, 0)
    draw(window, 2)


@pytest.mark.gl
def test_paste_into_the_path_field_from_the_system_clipboard(viewer, tmp_path):
    """Another X client (here a second process) holds the clipboard: Ctrl+V and Shift+Insert in the Scene
    panel's path field paste its text, and Ctrl+C copies the field back to the system clipboard."""
    from pyglet.window import key

    from app.panels import ScenePanel

    text = str(tmp_path / "copied from a file manager.ply")
    scene_panel = viewer.overlay.panel(ScenePanel)
    with clipboard_owner(text):
        draw(viewer)
        click(viewer, scene_panel.items["path"])
        chord(viewer, key.LCTRL, key.V)
        assert scene_panel.path == text
        chord(viewer, key.LSHIFT, key.INSERT)
        assert scene_panel.path == text + text
    chord(viewer, key.LCTRL, key.A)
    chord(viewer, key.LCTRL, key.C)
    assert viewer.get_clipboard_text() == text + text
    assert viewer.controller.mode == "fly", "V and C went to the field, not to the camera"


# ---------------------------------------------------------------------------------------------- dropdowns


def drawn_rect(owner_prefix: str) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of what imgui's last frame drew for the window whose name starts with the prefix."""
    import ctypes

    from imgui_bundle import imgui

    vertex = np.dtype([("pos", "<f4", 2), ("uv", "<f4", 2), ("col", "<u4")])
    for commands in imgui.get_draw_data().cmd_lists:
        if commands._owner_name.startswith(owner_prefix):
            raw = ctypes.string_at(commands.vtx_buffer.data_address(), commands.vtx_buffer.size() * vertex.itemsize)
            pos = np.frombuffer(raw, vertex)["pos"]
            return (*pos.min(0), *pos.max(0))
    raise AssertionError(f"no {owner_prefix} drawn")


@pytest.mark.gl
def test_the_blending_switch_sets_the_precision_the_next_frame_renders_with(viewer, monkeypatch):
    """Where the scalar loop blends (CUDA), the Settings panel offers the blend precision: a pick in its list sets
    it, and the next frame renders with it. Where it does not (this machine's batched loop), the row says float32
    and offers nothing to pick."""
    from app import panels
    from app.panels import SettingsPanel

    draw(viewer)
    assert "blending" not in viewer.overlay.panel(SettingsPanel).items
    assert viewer.state.settings.blend_precision == "fp16"
    monkeypatch.setattr(panels, "blends_in_pairs", lambda settings: True)  # as on CUDA
    draw(viewer)
    click(viewer, viewer.overlay.panel(SettingsPanel).items["blending"])
    x0, y0, x1, y1 = drawn_rect("##Combo")  # the open list: "fp16 pairs", then "float32"
    click(viewer, (x0, y0 + 0.75 * (y1 - y0) - 0.5, x1 - x0, 1.0))
    assert viewer.state.settings.blend_precision == "fp32"
    pump(viewer)
    assert viewer._last_frame.request.settings.blend_precision == "fp32"


@pytest.mark.gl
def test_the_up_axis_dropdown_is_opaque(viewer):
    """The open dropdown covers the Scene panel's camera lines: nothing of them shows through its entries.
    Right of the entries' labels there are two colours only: the list's background and the selected entry's."""
    from app.panels import ScenePanel

    draw(viewer)
    click(viewer, viewer.overlay.panel(ScenePanel).items["up axis"])
    image = viewer.capture()
    x0, y0, x1, y1 = (round(v) for v in drawn_rect("##Combo"))
    assert y1 - y0 > 60, "the list is open"
    inside = image[y0 + 3 : y1 - 3, x0 + 30 : x1 - 3].reshape(-1, 3)  # past the labels "+x" ... "-z"
    colours = np.unique(inside, axis=0)
    assert len(colours) <= 2, f"{len(colours)} colours: the panel behind shows through"


# ---------------------------------------------------------------------------------------------- messages


def test_wrapping_breaks_at_spaces_only():
    from app.panels import wrap_words
    from app.state import keep_whole

    name = keep_whole("/data/my scenes/camera_path-20260101-120000.json")
    lines = wrap_words(f"saved 2 keyframes to {name}", 20, len)
    assert lines == ["saved 2 keyframes to", name]  # the name whole, on a line of its own though wider
    assert wrap_words("one two three\nfour", 9, len) == ["one two", "three", "four"]


def test_moving_renders_at_the_lower_of_the_two_scales():
    """While the camera moves, frames render at moving_scale unless the still scale is lower (moving never renders
    sharper, so slower, than still); sizes are whole pixels, at least 1."""
    from app.state import ViewerState
    from renderer import Camera

    state = ViewerState(camera=Camera.from_fov(64, 48, 60.0), render_scale=0.5, moving_scale=1.0, moving=True)
    assert state.render_size_for(640, 480) == (320, 240)
    state.moving_scale = 0.25
    assert state.render_size_for(640, 480) == (160, 120)
    state.moving = False
    assert state.render_size_for(640, 480) == (320, 240)
    assert state.render_size_for(1, 1) == (1, 1)


def test_up_axis_names_as_scenes_store_them():
    """The up-axis dropdown shows a scene's axis whether it is stored with a sign or not, in either case; a direction
    that is no axis is "custom"."""
    from app.panels import UP_AXES, up_axis_index

    assert up_axis_index("y") == UP_AXES.index("+y") and up_axis_index(" Z ") == UP_AXES.index("+z")
    assert up_axis_index("-Y") == UP_AXES.index("-y") and up_axis_index("+x") == UP_AXES.index("+x")
    assert up_axis_index("0.1,0.9,0") == len(UP_AXES)


def test_frame_times_since_include_a_sample_at_the_start():
    from app.state import FrameTimes

    times = FrameTimes()
    for k in range(4):
        times.append(float(k), at=10.0 + k)
    at, ms = times.since(11.0)  # "recorded at t0 or later"
    assert at.tolist() == [11.0, 12.0, 13.0] and ms.tolist() == [1.0, 2.0, 3.0]


def test_errors_name_the_path_once():
    from app.state import error_reason
    from scenes import SceneFormatError

    path = "/data/bad.ply"
    assert error_reason(SceneFormatError(f"{path}: not a PLY file (no 'ply' magic)"), path) == (
        "not a PLY file (no 'ply' magic)"
    )
    assert error_reason(PermissionError(13, "Permission denied", path), path) == "Permission denied"
    assert error_reason(PermissionError(13, "Permission denied", "/x/y"), path) == "/x/y: Permission denied"


@pytest.mark.gl
def test_messages_name_the_file_once_and_whole(viewer, tmp_path):
    """Opening a bad or missing typed path names it once; F5's message names the file it wrote, whole on one
    line of the panel even in a narrow window, and that file is what the help (F1) says F5 writes."""
    import os
    import re

    from pyglet.window import key

    from app.panels import HelpPanel, PerformancePanel

    for bad in (tmp_path / "bad.ply", tmp_path / "missing.ply"):
        if bad.name == "bad.ply":
            bad.write_bytes(b"not a scene")
        assert not viewer.open_scene_file(str(bad))
        message = viewer.state.message
        assert message.startswith(f"could not open {bad}: ") and message.count(str(bad)) == 1, message
        assert message.count("bad.ply") + message.count("missing.ply") == 1, message

    resize(viewer, 600, 400)
    send(viewer, "on_key_press", key.K, 0)
    send(viewer, "on_key_press", key.K, 0)
    send(viewer, "on_key_press", key.F5, 0)
    (written,) = [f for f in os.listdir(tmp_path) if f.endswith(".json")]
    assert viewer.state.message == f"saved 2 keyframes to {tmp_path / written}"
    draw(viewer, 3)
    lines = viewer.overlay.panel(PerformancePanel).message_lines
    assert str(tmp_path / written) in lines or any(line.endswith(str(tmp_path / written)) for line in lines), lines

    rows = dict(viewer.overlay.panel(HelpPanel).rows)
    (named,) = re.findall(r"\S+-<date>-<time>\.json", rows["F5"])
    pattern = re.escape(named).replace(re.escape("<date>"), r"\d{8}").replace(re.escape("<time>"), r"\d{6}")
    assert re.fullmatch(pattern, written), (rows["F5"], written)


@pytest.mark.gl
def test_a_paste_from_a_hung_program_gives_up(viewer):
    """The program holding the clipboard never answers: the paste gives up after CLIPBOARD_TIMEOUT_S with a
    message, and the viewer goes on (pyglet alone would wait for ever)."""
    import time

    from pyglet.window import key

    from app.panels import ScenePanel
    from app.window import CLIPBOARD_TIMEOUT_S

    scene_panel = viewer.overlay.panel(ScenePanel)
    with clipboard_owner("never delivered", "hung"):
        draw(viewer)
        click(viewer, scene_panel.items["path"])
        t0 = time.monotonic()
        chord(viewer, key.LCTRL, key.V)
        waited = time.monotonic() - t0
    assert scene_panel.path == ""
    assert CLIPBOARD_TIMEOUT_S <= waited < CLIPBOARD_TIMEOUT_S + 30
    assert viewer.state.message.startswith("nothing pasted: the program holding the clipboard did not answer")
