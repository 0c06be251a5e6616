"""Camera controller and physical keys, without a window: input events in, camera poses out."""

from __future__ import annotations

import math

import numpy as np
import pytest

import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

# isort: split
from pyglet.window import key, mouse

from app.camera_controller import CameraController, SceneExtent
from app.keys import PhysicalKeys
from app.state import ViewerState
from renderer import Camera
from tests.conftest import bundled

pytestmark = pytest.mark.gl


def make_controller(**kwargs) -> CameraController:
    home = Camera.look_at((0.0, -1.0, -5.0), (0.0, 0.0, 0.0), up=(0, -1, 0), width=64, height=48)
    state = ViewerState(camera=home)
    scene = SceneExtent(center=np.zeros(3), radius=2.0, up=np.array([0.0, -1.0, 0.0]))
    return CameraController(state, scene, home, **kwargs)


def hold(ctl: CameraController, symbol: int, seconds: float, modifiers: int = 0) -> None:
    ctl.on_key_press(symbol, modifiers)
    ctl.update(seconds)
    ctl.on_key_release(symbol, modifiers)


def test_fly_keys_move_along_camera_axes():
    ctl = make_controller()
    T0 = ctl.camera.T_world_camera.copy()
    hold(ctl, key.W, 0.5)
    step = ctl.camera.position - T0[:3, 3]
    np.testing.assert_allclose(step, T0[:3, 2] * ctl.speed * 0.5, atol=1e-9)  # forward = +Z
    assert ctl.state.dirty
    p = ctl.camera.position
    hold(ctl, key.D, 0.25)
    np.testing.assert_allclose(ctl.camera.position - p, T0[:3, 0] * ctl.speed * 0.25, atol=1e-9)  # right = +X
    p = ctl.camera.position
    hold(ctl, key.E, 0.25)
    np.testing.assert_allclose(ctl.camera.position - p, -T0[:3, 1] * ctl.speed * 0.25, atol=1e-9)  # up = -Y
    p = ctl.camera.position
    hold(ctl, key.Q, 0.25)
    np.testing.assert_allclose(ctl.camera.position - p, T0[:3, 1] * ctl.speed * 0.25, atol=1e-9)  # down = +Y
    np.testing.assert_allclose(ctl.camera.T_world_camera[:3, :3], T0[:3, :3], atol=1e-9)  # no rotation


def test_shift_and_ctrl_scale_the_speed_and_scroll_changes_it():
    ctl = make_controller()
    assert ctl.speed == pytest.approx(0.5 * 2.0)  # scales with the scene radius
    p = ctl.camera.position
    hold(ctl, key.S, 0.1, key.MOD_SHIFT)
    assert np.linalg.norm(ctl.camera.position - p) == pytest.approx(4 * ctl.speed * 0.1)
    p = ctl.camera.position
    ctl.on_key_press(key.LCTRL, 0)
    hold(ctl, key.S, 0.1, key.MOD_CTRL)
    ctl.on_key_release(key.LCTRL, 0)
    assert np.linalg.norm(ctl.camera.position - p) == pytest.approx(0.25 * ctl.speed * 0.1)
    speed = ctl.speed
    ctl.on_mouse_scroll(0, 0, 0, 2)
    assert ctl.speed == pytest.approx(speed * 1.44)


def test_mouse_look_turns_right_and_up():
    ctl = make_controller()
    T0 = ctl.camera.T_world_camera.copy()
    ctl.on_mouse_drag(10, 10, 20, 0, mouse.LEFT, 0)  # drag right: look right
    z = ctl.camera.T_world_camera[:3, 2]
    assert z @ T0[:3, 0] > 0.05
    np.testing.assert_allclose(ctl.camera.position, T0[:3, 3])  # fly mode turns in place
    ctl.reset()
    ctl.on_mouse_drag(10, 10, 0, 20, mouse.RIGHT, 0)  # drag up: look up (towards -Y of the image)
    z = ctl.camera.T_world_camera[:3, 2]
    assert z @ -T0[:3, 1] > 0.05


def test_orbit_mode_keeps_the_pivot_distance_and_pans_and_zooms():
    ctl = make_controller()
    ctl.on_key_press(key.V, 0)
    assert ctl.mode == "orbit"
    np.testing.assert_allclose(ctl.pivot, ctl.scene.center, atol=1e-12)  # looking at the centre: it is the pivot
    pivot = ctl.pivot.copy()
    d0 = np.linalg.norm(ctl.camera.position - pivot)
    ctl.on_mouse_drag(0, 0, 40, -15, mouse.LEFT, 0)
    T = ctl.camera.T_world_camera
    assert np.linalg.norm(T[:3, 3] - pivot) == pytest.approx(d0)
    to_pivot = (pivot - T[:3, 3]) / d0
    assert to_pivot @ T[:3, 2] == pytest.approx(1.0)  # still looking at the pivot
    p = ctl.camera.position
    ctl.on_mouse_drag(0, 0, 10, 0, mouse.RIGHT, 0)  # pan: camera and pivot move together, to the left
    np.testing.assert_allclose(ctl.pivot - pivot, ctl.camera.position - p, atol=1e-12)
    assert (ctl.camera.position - p) @ T[:3, 0] < 0
    p, pivot = ctl.camera.position, ctl.pivot.copy()
    ctl.on_mouse_drag(0, 0, 0, 10, mouse.RIGHT, 0)  # dragged up (pyglet's y is up): the camera moves down its +Y
    np.testing.assert_allclose(ctl.pivot - pivot, ctl.camera.position - p, atol=1e-12)
    assert (ctl.camera.position - p) @ T[:3, 1] > 0 and abs((ctl.camera.position - p) @ T[:3, 0]) < 1e-12
    # the point at the pivot follows the cursor: dragged 10 pixels right, it is seen 10 pixels right of the centre
    cam = ctl.camera
    before = ctl.pivot.copy()
    ctl.on_mouse_drag(0, 0, 10, 0, mouse.RIGHT, 0)
    x, y, z = ctl.camera.viewmat[:3, :3] @ before + ctl.camera.viewmat[:3, 3]
    assert (cam.fx * x / z + cam.cx, cam.fy * y / z + cam.cy) == pytest.approx((cam.cx + 10, cam.cy))
    d = np.linalg.norm(ctl.camera.position - ctl.pivot)
    ctl.on_mouse_scroll(0, 0, 0, 1)
    assert np.linalg.norm(ctl.camera.position - ctl.pivot) == pytest.approx(0.85 * d)


def test_roll_and_reset():
    ctl = make_controller()
    T0 = ctl.camera.T_world_camera.copy()
    hold(ctl, key.X, 0.5)
    R = ctl.camera.T_world_camera[:3, :3]
    np.testing.assert_allclose(R[:, 2], T0[:3, 2], atol=1e-9)  # roll keeps the viewing direction
    angle = math.acos(np.clip(R[:, 0] @ T0[:3, 0], -1, 1))
    assert angle == pytest.approx(ctl.roll_rate * 0.5)
    # X rolls right, as an aircraft does: the view's right side dips towards the ground (the scene's down)
    assert R[:, 0] @ -ctl.scene.up > 0.1
    ctl.on_key_press(key.R, 0)
    np.testing.assert_allclose(ctl.camera.T_world_camera, T0)


def test_imgui_capture_blocks_camera_input():
    ctl = make_controller(wants_keyboard=lambda: True, wants_mouse=lambda: True)
    T0 = ctl.camera.T_world_camera.copy()
    hold(ctl, key.W, 1.0)
    ctl.on_mouse_drag(0, 0, 50, 50, mouse.LEFT, 0)
    ctl.on_mouse_scroll(0, 0, 0, 3)
    np.testing.assert_allclose(ctl.camera.T_world_camera, T0)


def test_training_camera_snaps():
    cams = [Camera.look_at((x, 0.0, -4.0), (0, 0, 0), width=32, height=24, fov_y_deg=40) for x in (-2.0, 0.0, 2.0)]
    ctl = make_controller(training_cameras=cams)
    ctl.state.camera_jumped = False
    ctl.on_key_press(key.BRACKETRIGHT, 0)
    np.testing.assert_allclose(ctl.camera.T_world_camera, cams[0].T_world_camera)
    assert ctl.state.camera_jumped  # temporal reuse starts over at the snapped camera
    assert ctl.camera.fov_y_deg == pytest.approx(40)
    assert (ctl.camera.width, ctl.camera.height) == (64, 48)  # the window's size, the dataset's fov
    ctl.on_key_press(key.BRACKETLEFT, 0)
    np.testing.assert_allclose(ctl.camera.T_world_camera, cams[2].T_world_camera)
    ctl.reset()
    hold(ctl, key.D, 1.5)  # 1.5 units to the right: the +2 camera is closest
    ctl.on_key_press(key.C, 0)
    np.testing.assert_allclose(ctl.camera.T_world_camera, cams[2].T_world_camera)
    assert "3 / 3" in ctl.state.message
    # closest counts the viewing direction too: not the camera on the spot looking the other way, but the one a
    # little further that looks where the view looks
    here = ctl.camera
    behind = Camera.look_at(here.position, 2 * here.position, width=32, height=24)
    ahead = Camera.look_at(here.position + [0.5, 0, 0], [0.5, 0, 0], width=32, height=24)
    ctl.training_cameras = [behind, ahead]
    assert ctl.closest_training_index() == 1


def test_keyframes_play_back_through_the_keys():
    saved = []
    ctl = make_controller(save_path=lambda keys: saved.append(list(keys)) or "path.json")
    ctl.on_key_press(key.K, 0)
    hold(ctl, key.W, 1.0)
    ctl.on_mouse_drag(0, 0, 30, 0, mouse.LEFT, 0)
    ctl.on_key_press(key.K, 0)
    keys = [c.T_world_camera.copy() for c in ctl.keyframes]
    ctl.on_key_press(key.SPACE, 0)
    assert ctl.playing
    ctl.update(0.0)
    np.testing.assert_allclose(ctl.camera.T_world_camera, keys[0], atol=1e-9)
    ctl.update(1.0)  # half way through the 2 s transition: between the keys
    pos = ctl.camera.position
    assert 0.1 < np.linalg.norm(pos - keys[0][:3, 3]) / np.linalg.norm(keys[1][:3, 3] - keys[0][:3, 3]) < 0.9
    ctl.update(1.5)
    assert not ctl.playing
    np.testing.assert_allclose(ctl.camera.T_world_camera, keys[1], atol=1e-9)
    hold(ctl, key.W, 0.1)  # motion keys work again after playback
    assert not np.allclose(ctl.camera.T_world_camera, keys[1])
    ctl.on_key_press(key.F5, 0)
    assert len(saved) == 1 and len(saved[0]) == 2 and "path.json" in ctl.state.message
    # a key held down when playback starts does not move the camera off the path
    ctl.on_key_press(key.W, 0)
    ctl.on_key_press(key.SPACE, 0)
    ctl.update(0.1)  # 0.1 s in: the path's frame 3 at 30 frames a second
    np.testing.assert_allclose(ctl.camera.T_world_camera, ctl.path_cameras()[3].T_world_camera, atol=1e-12)
    ctl.on_key_release(key.W, 0)
    # Backspace removes the last keyframe
    ctl.on_key_press(key.SPACE, 0)
    ctl.on_key_press(key.K, 0)
    ctl.on_key_press(key.BACKSPACE, 0)
    np.testing.assert_allclose([c.T_world_camera for c in ctl.keyframes], keys, atol=1e-12)


def test_physical_keys_follow_the_layout():
    # AZERTY: the keys at QWERTY's Q, W, A, Z positions print a, z, q, w
    azerty = {24: ord("a"), 25: ord("z"), 38: ord("q"), 52: ord("w"), 26: ord("e")}
    keys = PhysicalKeys.from_keysym_lookup(lambda code: azerty.get(code, 0), source="test")
    assert keys(ord("z")) == key.W  # AZERTY's Z key is where QWERTY's W is: it moves forward
    assert keys(ord("q")) == key.A
    assert keys(ord("a")) == key.Q
    assert keys(ord("e")) == key.E
    # Dvorak: QWERTY's W position prints comma; upper-case keysyms are folded like pyglet does
    dvorak = {25: key.COMMA, 39: ord("O")}
    keys = PhysicalKeys.from_keysym_lookup(lambda code: dvorak.get(code, 0), source="test")
    assert keys(key.COMMA) == key.W
    assert keys(ord("o")) == key.S
    assert PhysicalKeys()(key.W) == key.W


def test_training_cameras_come_from_the_scenes_cameras_json(tmp_path):
    import json
    from types import SimpleNamespace

    from app.window import load_training_cameras

    entries = []
    for i, x in enumerate((1.0, -1.0)):
        T = Camera.look_at((x, 0.0, -3.0), (0, 0, 0), width=100, height=50).T_world_camera
        entries.append({"id": i, "img_name": f"{i:05d}", "width": 100, "height": 50, "position": T[:3, 3].tolist(),
                        "rotation": T[:3, :3].tolist(), "fx": 80.0, "fy": 80.0})  # fmt: skip
    path = tmp_path / "cameras.json"
    path.write_text(json.dumps(entries))
    cams = load_training_cameras(SimpleNamespace(extras={"cameras": str(path)}), 64, 48)
    assert [c.position[0] for c in cams] == pytest.approx([1.0, -1.0])
    assert (cams[0].width, cams[0].height) == (64, 48)
    assert cams[0].fov_y_deg == pytest.approx(math.degrees(2 * math.atan(25 / 80)))
    assert load_training_cameras(SimpleNamespace(extras={}), 64, 48) == []


def test_training_cameras_come_from_a_colmap_model(tmp_path):
    """`warpsplat view --cameras dataset/sparse/0`: the snaps go to the model's images, in name order."""
    import zipfile
    from types import SimpleNamespace

    from app.window import load_training_cameras

    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path)
    viewmats = np.load(bundled("test_garden.npz"))["viewmats"]
    cams = load_training_cameras(SimpleNamespace(extras={"cameras": str(tmp_path / "bin")}), 64, 48)
    assert len(cams) == 3 and (cams[0].width, cams[0].height) == (64, 48)
    np.testing.assert_allclose([c.viewmat for c in cams], viewmats, atol=1e-6)
