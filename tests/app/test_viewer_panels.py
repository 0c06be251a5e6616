"""The overlay's panels: the render rate first, the help beside (not over) the settings, colour legends for the
depth and heat-map views, opening another scene (path or dropped file) and changing the up axis."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .driving import open_viewer, pump, send


def test_performance_panel_shows_the_render_rate_first():
    from app.panels import performance_lines
    from app.state import ViewerState
    from renderer import Camera

    state = ViewerState(camera=Camera.from_fov(64, 48, 60.0))
    state.frame_ms.extend([16.7] * 30)  # the window loop re-presents at 60 Hz ...
    state.render_ms.extend([1250.0] * 3)  # ... while a CPU frame takes 1.25 s
    state.render_size = (320, 180)
    lines = performance_lines(state)
    assert lines[0] == "render      0.8 frames/s  (1.25 s a frame at 320x180)"
    assert lines[1].startswith("window     59.9 FPS")


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


def test_viewer_starts_with_the_switches_that_paid_on_the_gpu():
    """AdaGScale on where it was measured to pay at the quality floor (CUDA); everything else exact."""
    from app.state import viewer_settings
    from renderer import RenderSettings

    gpu, cpu = viewer_settings(cuda=True), viewer_settings(cuda=False)
    assert gpu.adagscale and gpu.adagscale_tau == RenderSettings().adagscale_tau
    assert not gpu.temporal_window > 1, "measured even: off"
    assert cpu == RenderSettings(), "unmeasured on a CPU: exact"
