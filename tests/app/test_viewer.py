"""The viewer in a real window under Xvfb, on the bundled scene: input moves the camera as specified, the
window shows exactly the renderer's image, screenshots, render modes, resize and imgui's input capture."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest

from renderer import RenderSettings

from .driving import open_viewer, pump, send

pytestmark = pytest.mark.gl


@pytest.fixture(scope="module")
def plant():
    from scenes import bundled_scene_path, load_scene

    return load_scene(bundled_scene_path())


@pytest.fixture
def viewer(x_display, plant, tmp_path):
    """A window of its own for each test, so no test sees another's size, settings or saved files."""
    with open_viewer(plant, tmp_path) as window:
        yield window


def test_opens_with_the_host_path_on_cpu(viewer):
    assert viewer.state.display_path == "host upload (frames are rendered on cpu)"
    assert viewer.frame_texture.size == viewer.get_framebuffer_size()
    assert viewer.state.stats is not None and viewer.state.stats.n_gaussians == len(viewer.scene)
    assert set(viewer.state.stage_ms) >= {"project", "order", "bin", "sort", "tile_lists", "rasterize", "total"}
    # the rate shown and the frame-time graph take the frame's whole time, not one stage's
    assert viewer.state.render_ms.ms[-1] == viewer.state.stage_ms["total"]
    assert viewer.state.stage_ms["total"] > max(v for k, v in viewer.state.stage_ms.items() if k != "total")


def test_key_and_mouse_events_move_the_camera(viewer):
    from pyglet.window import key, mouse

    ctl = viewer.controller
    T0 = viewer.state.camera.T_world_camera.copy()
    send(viewer, "on_key_press", key.W, 0)
    viewer.tick(0.5)
    send(viewer, "on_key_release", key.W, 0)
    np.testing.assert_allclose(viewer.state.camera.position - T0[:3, 3], T0[:3, 2] * ctl.speed * 0.5, atol=1e-9)
    send(viewer, "on_key_press", key.E, key.MOD_SHIFT)
    viewer.tick(0.25)
    send(viewer, "on_key_release", key.E, key.MOD_SHIFT)
    step = viewer.state.camera.position - T0[:3, 3] - T0[:3, 2] * ctl.speed * 0.5
    np.testing.assert_allclose(step, -T0[:3, 1] * ctl.speed * 4 * 0.25, atol=1e-9)  # up, 4x with Shift
    send(viewer, "on_mouse_drag", 32, 24, 12, 0, mouse.LEFT, 0)  # look right
    assert viewer.state.camera.T_world_camera[:3, 2] @ T0[:3, 0] > 0.02
    assert viewer.state.dirty


def test_window_shows_the_renderers_image(viewer):
    pump(viewer)
    shown = viewer.capture(overlay=False)
    camera = viewer.state.camera
    assert shown.shape == (camera.height, camera.width, 3)
    expected = viewer.renderer.render(camera, viewer.state.settings).rgba8[..., :3].numpy()
    np.testing.assert_array_equal(shown, expected)


def test_screenshot_key_writes_a_png_at_render_resolution(viewer):
    from PIL import Image
    from pyglet.window import key

    send(viewer, "on_key_press", key.P, 0)
    pump(viewer)
    shots = [f for f in os.listdir(viewer.state.output_dir) if f.endswith(".png")]
    assert len(shots) == 1, viewer.state.message
    with Image.open(os.path.join(viewer.state.output_dir, shots[0])) as im:
        assert im.size == viewer.state.render_size


def test_heat_map_mode_and_render_scale(viewer):
    from pyglet.window import key

    viewer.state.render_scale = 0.5
    send(viewer, "on_key_press", key._3, 0)
    pump(viewer)
    frame = viewer._last_frame
    assert frame.request.mode == "heatmap"
    w, h = viewer.get_framebuffer_size()
    assert tuple(frame.rgba8.shape) == (round(h * 0.5), round(w * 0.5), 4)
    assert viewer.frame_texture.size == (round(w * 0.5), round(h * 0.5))  # re-created for the new size
    assert len(np.unique(frame.rgba8[..., :3].reshape(-1, 3).numpy(), axis=0)) > 1  # one colour per tile count


def test_depth_mode_shows_the_renderers_depth(viewer):
    """Key 4: the window shows the expected depth through the palette (near bright), computed from the
    renderer's depth output for the same camera."""
    from pyglet.window import key

    from app.frames import depth_image

    send(viewer, "on_key_press", key._4, 0)
    pump(viewer)
    frame = viewer._last_frame
    assert frame.request.mode == "depth"
    out = viewer.renderer.render(frame.request.camera, RenderSettings(depth=True))
    assert out.depth is not None and float(out.depth.max()) > 0
    np.testing.assert_array_equal(frame.rgba8.numpy(), depth_image(out.depth, out.alpha).numpy())
    assert len(np.unique(frame.rgba8[..., :3].reshape(-1, 3).numpy(), axis=0)) > 8


def test_resize_keeps_the_field_of_view(viewer):
    fov = viewer.state.camera.fov_y_deg
    viewer.set_size(56, 40)
    for _ in range(20):
        viewer.dispatch_events()
        if viewer.get_framebuffer_size() == (56, 40):
            break
        time.sleep(0.02)
    viewer.on_resize(56, 40)
    cam = viewer.state.camera
    assert (cam.width, cam.height) == (56, 40)
    assert cam.fov_y_deg == pytest.approx(fov)
    assert cam.cx == pytest.approx(28) and cam.cy == pytest.approx(20)
    pump(viewer)
    assert viewer.frame_texture.size == (56, 40)


def test_keyframes_save_a_camera_path_the_renderer_reads(viewer):
    from pyglet.window import key, mouse

    from renderer.paths import load_camera_path

    start = viewer.state.camera.T_world_camera.copy()
    send(viewer, "on_key_press", key.K, 0)
    send(viewer, "on_mouse_drag", 20, 20, -15, 5, mouse.LEFT, 0)
    send(viewer, "on_key_press", key.K, 0)
    end = viewer.state.camera.T_world_camera.copy()
    send(viewer, "on_key_press", key.F5, 0)
    files = [f for f in os.listdir(viewer.state.output_dir) if f.endswith(".json")]
    assert len(files) == 1, viewer.state.message
    path = load_camera_path(os.path.join(viewer.state.output_dir, files[0]))
    assert len(path.keyframes) == 2
    np.testing.assert_allclose(path.keyframes[0].T_world_camera, start, atol=1e-6)
    np.testing.assert_allclose(path.keyframes[1].T_world_camera, end, atol=1e-6)
    np.testing.assert_allclose(path.cameras[-1].T_world_camera, end, atol=1e-6)
    send(viewer, "on_key_press", key.SPACE, 0)  # play it back in the window
    viewer.tick(0.0)
    np.testing.assert_allclose(viewer.state.camera.T_world_camera, start, atol=1e-9)
    viewer.tick(10.0)
    assert not viewer.controller.playing
    np.testing.assert_allclose(viewer.state.camera.T_world_camera, end, atol=1e-9)


def test_imgui_takes_the_mouse_over_the_overlay(viewer):
    from imgui_bundle import imgui
    from pyglet.window import mouse

    viewer.state.show_overlay = True
    pump(viewer)
    send(viewer, "on_mouse_motion", 20, viewer.height - 20, 0, 0)
    viewer.on_draw()  # imgui sees the cursor over its panel (no X events: the real pointer is elsewhere)
    assert imgui.get_io().want_capture_mouse
    T = viewer.state.camera.T_world_camera.copy()
    send(viewer, "on_mouse_press", 20, viewer.height - 20, mouse.LEFT, 0)
    send(viewer, "on_mouse_drag", 25, viewer.height - 20, 5, 0, mouse.LEFT, 0)
    send(viewer, "on_mouse_release", 25, viewer.height - 20, mouse.LEFT, 0)
    np.testing.assert_allclose(viewer.state.camera.T_world_camera, T)


def test_overlay_offers_every_renderer_switch(viewer, monkeypatch):
    """The settings panel draws with every switch on (AdaGScale shows its tau slider), each with its tooltip,
    and the next frame renders with those settings: its pair count is AdaGScale's at its frame's tau (at most
    0.3), not the exact one, and it went through temporal reuse."""
    from app import panels
    from renderer import Renderer

    s = viewer.state.settings
    s.adagscale = True
    s.adagscale_tau = 0.3
    s.temporal_window = 8
    viewer.state.show_overlay = True
    viewer.state.mark_dirty()
    pump(viewer)
    viewer.on_draw()
    frame = viewer._last_frame
    # the first frame with these settings is the window trial's first, a plain frame (renderer/window_choice.py):
    # so it bins what a fresh renderer with AdaGScale alone bins at the same tau (the frame's, scaled to its
    # Gaussians per pixel)
    tau = frame.stats.adagscale_tau
    assert 0 < tau <= 0.3
    fresh = Renderer(viewer.scene, device=viewer.renderer.device, backend=viewer.renderer.backend)
    fixed = RenderSettings(adagscale=True, adagscale_tau=tau, adagscale_budget=math.inf)
    adagscale = fresh.render(frame.request.camera, fixed).stats.n_pairs
    exact = fresh.render(frame.request.camera, RenderSettings()).stats.n_pairs
    assert frame.stats.n_pairs == adagscale < exact
    # the frame went through temporal reuse: its window choice is timing the trial that it opened
    assert viewer.renderer.temporal.stats.window_choice == "measuring"
    tips = []
    monkeypatch.setattr(panels.imgui, "set_item_tooltip", tips.append)
    viewer.on_draw()  # the overlay now shows the temporal counters, and each switch row its tooltip
    assert set(panels.SWITCH_TIPS.values()) <= set(tips), set(panels.SWITCH_TIPS.values()) - set(tips)
