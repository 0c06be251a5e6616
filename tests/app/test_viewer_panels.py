"""The overlay's panels: the render rate first, the help beside (not over) the settings."""

from __future__ import annotations

import pytest

from .driving import pump


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


# ---------------------------------------------------------------------------------------------- in a window


@pytest.fixture(scope="module")
def viewer(x_display, tmp_path_factory):
    import app  # noqa: F401  (pyglet options first)
    from app.window import ViewerWindow
    from scenes import bundled_scene_path, load_scene

    window = ViewerWindow(load_scene(bundled_scene_path()), size=(960, 600), render_scale=0.05, moving_scale=0.05,
                          output_dir=str(tmp_path_factory.mktemp("panels")))  # fmt: skip
    pump(window)
    yield window
    window.close()


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
    from app.panels import HelpPanel, SettingsPanel

    viewer.set_size(*size)
    viewer.dispatch_events()
    viewer.state.show_help = True
    try:
        draw(viewer)
        help_rect = viewer.overlay.panel(HelpPanel).rect
        for kind in (SettingsPanel,):
            rect = viewer.overlay.panel(kind).rect
            assert rect is not None and not overlaps(help_rect, rect), (kind.__name__, help_rect, rect)
        assert help_rect[0] >= 0 and help_rect[1] >= 0, "the help stays in the window"
    finally:
        viewer.state.show_help = False
