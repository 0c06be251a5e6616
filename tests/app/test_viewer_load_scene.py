"""`ViewerWindow.load_scene` in a real window under Xvfb: the new scene on screen, the old one let go."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .driving import open_viewer, pump, send

pytestmark = pytest.mark.gl


def small_scene():
    """200 Gaussians with SH degree 1 and +z up: nothing like the bundled scene."""
    from scenes import make_scene

    g = torch.Generator().manual_seed(0)
    n = 200
    return make_scene(torch.randn(n, 3, generator=g) + torch.tensor([5.0, 0.0, 0.0]), torch.randn(n, 4, generator=g),
                      torch.randn(n, 3, generator=g) - 3, torch.randn(n, generator=g) + 2,
                      torch.rand(n, 4, 3, generator=g), up_axis="+z")  # fmt: skip


@pytest.fixture
def viewer(x_display, tmp_path):
    from scenes import bundled_scene_path, load_scene

    with open_viewer(load_scene(bundled_scene_path()), tmp_path) as window:
        yield window


def test_load_scene_shows_the_new_scene_and_lets_the_old_one_go(viewer):
    import gc
    import weakref

    from pyglet.window import key

    from renderer import default_camera

    old_renderer, old_producer, old_controller = viewer.renderer, viewer.producer, viewer.controller
    old_texture = viewer.frame_texture.texture
    viewer.state.settings.sh_degree = 0
    scene = small_scene()
    viewer.load_scene(scene)
    assert viewer.scene is scene and viewer.renderer.n == len(scene)
    assert (viewer.renderer.device, viewer.renderer.backend) == (old_renderer.device, old_renderer.backend)
    assert old_texture.mglo.__class__.__name__ == "InvalidObject"  # released
    assert viewer.frame_texture.texture is None
    old_producer._thread.join(timeout=5)
    assert not old_producer._thread.is_alive()
    assert viewer.producer.threaded == old_producer.threaded
    assert viewer.overlay.controller is viewer.controller and viewer.overlay.scene_sh_degree == 1
    w, h = viewer.get_framebuffer_size()
    home = default_camera(scene, w, h)
    np.testing.assert_allclose(viewer.state.camera.T_world_camera, home.T_world_camera)
    np.testing.assert_allclose(viewer.controller.home.T_world_camera, home.T_world_camera)
    np.testing.assert_allclose(viewer.controller.scene.up, [0, 0, 1])
    assert viewer.state.settings.sh_degree == 0  # within the new scene's degree: kept

    pump(viewer)
    assert viewer.state.stats.n_gaussians == len(scene)
    expected = viewer.renderer.render(viewer.state.camera, viewer.state.settings).rgba8[..., :3].numpy()
    np.testing.assert_array_equal(viewer.capture(overlay=False), expected)

    # input reaches the new controller, below imgui's input (which still sees every event first)
    T0 = viewer.state.camera.T_world_camera.copy()
    send(viewer, "on_key_press", key.W, 0)
    viewer.tick(0.5)
    send(viewer, "on_key_release", key.W, 0)
    assert not np.allclose(viewer.state.camera.T_world_camera, T0)
    handlers = [frame.get("on_key_press") for frame in viewer._event_stack]
    owners = [getattr(h, "__self__", None) or getattr(h(), "__self__", None) for h in handlers if h is not None]
    assert owners.index(viewer.imgui_input) < owners.index(viewer.controller)  # index 0 is the top of the stack

    # nothing of the old scene stays referenced
    refs = [weakref.ref(o) for o in (old_renderer, old_producer, old_controller)]
    del old_renderer, old_producer, old_controller
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_loading_a_scene_frees_the_old_one_at_once(viewer):
    """The old renderer lives in reference cycles (its frames point back at it): its device memory goes back when
    the new scene is shown, not at Python's next full collection (none runs here)."""
    import gc
    import weakref

    pump(viewer)
    old = weakref.ref(viewer.renderer)
    gc.disable()
    try:
        viewer.load_scene(small_scene())
        assert old() is None
    finally:
        gc.enable()


def test_a_scene_that_fails_to_load_leaves_the_old_one(viewer):
    scene, renderer = viewer.scene, viewer.renderer
    with pytest.raises(ValueError):
        viewer.load_scene(small_scene(), up="sideways")
    assert viewer.scene is scene and viewer.renderer is renderer
    pump(viewer)
    assert viewer.state.stats.n_gaussians == len(scene)
