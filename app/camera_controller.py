"""CameraController: fly and orbit navigation, training-camera snaps, keyframe recording and playback.

A plain object whose `on_*` methods are pushed onto the window (`window.push_handlers(controller)`). It
edits `state.camera` (OpenCV axes, see renderer/camera.py: +X right, +Y down, +Z forward) and marks the state
dirty; it never calls the renderer. Keys are physical positions (app/keys.py): bindings name US-QWERTY keys.

Fly mode: W/A/S/D forward/left/back/right, Q/E down/up along the camera's axes, mouse-look while a button
is held (yaw about the scene's up axis, pitch about the camera's X), Shift x4, Ctrl x1/4, scroll scales the
speed. Orbit mode: left-drag orbits the pivot, right- or middle-drag pans, scroll zooms towards the pivot;
W/A/S/D/Q/E move camera and pivot together. Z/X roll. Speeds are in scene units, scaled by the scene's size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyglet.window import key, mouse

from renderer import Camera, orthographic
from renderer.paths import SECONDS_PER_TRANSITION, Keyframe, axis_angle, interpolate_keyframes

from .keys import PhysicalKeys
from .state import FOV_RANGE, ViewerState, error_reason, keep_whole

MOVE_KEYS = {
    key.W: np.array([0.0, 0.0, 1.0]),
    key.S: np.array([0.0, 0.0, -1.0]),
    key.D: np.array([1.0, 0.0, 0.0]),
    key.A: np.array([-1.0, 0.0, 0.0]),
    key.E: np.array([0.0, -1.0, 0.0]),  # camera up is -Y
    key.Q: np.array([0.0, 1.0, 0.0]),
}
ROLL_KEYS = {key.Z: -1.0, key.X: 1.0}

# (keys, what they do): the help panel lists these; window.py adds its own.
CAMERA_HELP = [
    ("W A S D", "move forward / left / back / right"),
    ("Q / E", "move down / up"),
    ("Z / X", "roll left / right"),
    ("Shift / Ctrl", "move 4x faster / 4x slower"),
    ("mouse drag", "fly: look around; orbit: left orbits, right or middle pans"),
    ("scroll", "fly: change speed; orbit: zoom"),
    ("V", "switch fly / orbit mode"),
    ("R", "reset the view"),
    ("[ / ]", "previous / next training camera"),
    ("C", "closest training camera"),
    ("O", "orthographic / perspective view (scroll zooms an orthographic one)"),
    ("K", "add a keyframe at the current view"),
    ("Backspace", "remove the last keyframe"),
    ("Space", "play / stop the keyframe path"),
]  # F5 (save the keyframes) is in the window's help: the window names and writes the file

PLAYBACK_FPS = 30.0
SHIFT_FACTOR = 4.0
CTRL_FACTOR = 0.25


def orthonormalize(R: np.ndarray) -> np.ndarray:
    """Nearest rotation (drift from many small updates stays bounded)."""
    U, _, Vt = np.linalg.svd(R)
    out = U @ Vt
    if np.linalg.det(out) < 0:
        U[:, -1] *= -1
        out = U @ Vt
    return out


@dataclass
class SceneExtent:
    """What navigation needs to know about the scene: where it is, how big, which way is up."""

    center: np.ndarray  # [3] look-at point of the default view
    radius: float  # half the diagonal of the 1st-99th percentile box
    up: np.ndarray  # [3] unit world up


class CameraController:
    """Edits `state.camera` from keyboard and mouse input.

    Args:
        state: the shared viewer state; `state.camera` is the camera edited.
        scene: centre, size and up axis (speeds scale with the size).
        home: the reset view.
        keys: physical key translation (identity by default).
        training_cameras: dataset cameras to snap to (may be empty).
        wants_keyboard / wants_mouse: return True while the UI (imgui) takes that input.
        save_path: writes the keyframes to a camera path file (F5); returns the file written.
    """

    def __init__(
        self,
        state: ViewerState,
        scene: SceneExtent,
        home: Camera,
        *,
        keys: PhysicalKeys | None = None,
        training_cameras: list[Camera] | None = None,
        wants_keyboard: Callable[[], bool] = lambda: False,
        wants_mouse: Callable[[], bool] = lambda: False,
        save_path: Callable[[list[Camera]], str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.state = state
        self.scene = scene
        self.home = home.with_pose(home.T_world_camera)
        self.keys = keys or PhysicalKeys()
        self.training_cameras = list(training_cameras or [])
        self.wants_keyboard = wants_keyboard
        self.wants_mouse = wants_mouse
        self.save_path = save_path
        self.clock = clock
        self.mode = "fly"
        self.base_speed = 0.5 * scene.radius  # scene units per second: the box diagonal in ~4 s
        self.speed = self.base_speed
        self.look_rate = math.radians(0.25)  # radians per pixel of mouse motion
        self.roll_rate = math.radians(60.0)  # radians per second
        self.pivot = np.asarray(scene.center, np.float64).copy()
        self.keyframes: list[Camera] = []
        self.playing = False
        self.play_t = 0.0  # seconds into the path
        self._play_cameras: list[Camera] = []
        self.training_index = -1
        self._pinhole_fov = home.fov_y_deg  # the field of view an orthographic view returns to
        self._held: set[int] = set()
        self._shift = False
        self._ctrl = False
        self.last_motion = -math.inf

    # ------------------------------------------------------------------ properties

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        lo, hi = 1e-3 * self.base_speed, 1e3 * self.base_speed
        self._speed = float(min(max(value, lo), hi))

    @property
    def camera(self) -> Camera:
        return self.state.camera

    def _set_pose(self, T: np.ndarray) -> None:
        T = np.array(T, np.float64)
        T[:3, :3] = orthonormalize(T[:3, :3])
        self.state.camera = self.state.camera.with_pose(T)
        self.state.mark_dirty()
        self.last_motion = self.clock()

    def _factor(self) -> float:
        return (SHIFT_FACTOR if self._shift else 1.0) * (CTRL_FACTOR if self._ctrl else 1.0)

    # ------------------------------------------------------------------ keyboard

    def on_key_press(self, symbol: int, modifiers: int):
        self._track_modifiers(symbol, True, modifiers)
        if self.wants_keyboard():
            return None
        sym = self.keys(symbol)
        if sym in MOVE_KEYS or sym in ROLL_KEYS:
            self._held.add(sym)
            self.playing = False
            return True
        actions = {
            key.V: self.toggle_mode,
            key.R: self.reset,
            key.BRACKETRIGHT: lambda: self.snap_training(+1),
            key.BRACKETLEFT: lambda: self.snap_training(-1),
            key.C: self.snap_closest,
            key.K: self.add_keyframe,
            key.O: self.toggle_ortho,
            key.BACKSPACE: self.remove_keyframe,
            key.SPACE: self.toggle_playback,
            key.F5: self.save_keyframes,
        }
        action = actions.get(sym)
        if action is None:
            return None
        action()
        return True

    def on_key_release(self, symbol: int, modifiers: int):
        self._track_modifiers(symbol, False, modifiers)
        self._held.discard(self.keys(symbol))

    def _track_modifiers(self, symbol: int, down: bool, modifiers: int) -> None:
        if symbol in (key.LSHIFT, key.RSHIFT):
            self._shift = down
        elif symbol in (key.LCTRL, key.RCTRL):
            self._ctrl = down
        elif down:
            self._shift = bool(modifiers & key.MOD_SHIFT)
            self._ctrl = bool(modifiers & key.MOD_CTRL)

    def release_all(self) -> None:
        """Forget held keys (the window lost focus: releases will not arrive)."""
        self._held.clear()
        self._shift = self._ctrl = False

    # ------------------------------------------------------------------ mouse

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        if self.wants_mouse():
            return None
        if self.mode == "fly" or buttons & mouse.LEFT:
            self.rotate(-dx * self.look_rate, dy * self.look_rate)
        else:
            self.pan(dx, dy)
        return True

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        if self.wants_mouse():
            return None
        if self.mode == "fly":
            self.speed = self.speed * 1.2**scroll_y
            self.state.message = f"fly speed {self.speed:.3g} units/s"
        else:
            self.zoom(0.85**scroll_y)
        return True

    # ------------------------------------------------------------------ motions

    def rotate(self, yaw: float, pitch: float) -> None:
        """Yaw about the scene's up axis, pitch about the camera's X axis. Fly mode turns the camera about
        itself; orbit mode turns it about the pivot (the scene follows the cursor)."""
        T = self.camera.T_world_camera
        R_cam = T[:3, :3]
        R = axis_angle(self.scene.up, yaw) @ axis_angle(R_cam[:, 0], pitch)
        out = T.copy()
        out[:3, :3] = R @ R_cam
        if self.mode == "orbit":
            out[:3, 3] = self.pivot + R @ (T[:3, 3] - self.pivot)
        self._set_pose(out)

    def pan(self, dx: float, dy: float) -> None:
        """Move camera and pivot in the image plane so the point under the pivot follows the cursor."""
        T = self.camera.T_world_camera
        dist = 1.0 if self.ortho else float(np.linalg.norm(self.pivot - T[:3, 3]))
        k = dist / self.camera.fy  # world units a pixel at the pivot
        shift = T[:3, :3] @ np.array([-dx * k, dy * k, 0.0])
        self.pivot = self.pivot + shift
        out = T.copy()
        out[:3, 3] += shift
        self._set_pose(out)

    def zoom(self, factor: float) -> None:
        """Scale the distance to the pivot (camera keeps looking where it looks); an orthographic view, where
        distance changes nothing on screen, scales its pixels per world unit by 1 / factor instead."""
        if self.ortho:
            self.state.camera = orthographic(self.camera, factor)  # fx, fy / factor: closer is larger
            self.state.mark_dirty()
            return
        T = self.camera.T_world_camera
        dist = float(np.linalg.norm(self.pivot - T[:3, 3]))
        new = max(dist * factor, 1e-4 * self.scene.radius)
        out = T.copy()
        out[:3, 3] = self.pivot - T[:3, 2] * new
        self._set_pose(out)

    def update(self, dt: float) -> None:
        """Advance held keys and playback by dt seconds (called from the window's clock)."""
        if self.playing:
            self._advance_playback(dt)
            return
        move = sum((MOVE_KEYS[k] for k in self._held if k in MOVE_KEYS), np.zeros(3))
        roll = sum(ROLL_KEYS[k] for k in self._held if k in ROLL_KEYS)
        if not np.any(move) and not roll:
            return
        T = self.camera.T_world_camera.copy()
        if np.any(move):
            step = T[:3, :3] @ move * (self.speed * self._factor() * dt)
            T[:3, 3] += step
            self.pivot = self.pivot + step
        if roll:
            T[:3, :3] = axis_angle(T[:3, 2], roll * self.roll_rate * dt) @ T[:3, :3]
        self._set_pose(T)

    def toggle_mode(self) -> None:
        if self.mode == "fly":
            T = self.camera.T_world_camera
            ahead = float((self.scene.center - T[:3, 3]) @ T[:3, 2])
            dist = ahead if ahead > 1e-3 * self.scene.radius else self.scene.radius
            self.pivot = T[:3, 3] + T[:3, 2] * dist
            self.mode = "orbit"
        else:
            self.mode = "fly"
        self.state.message = f"{self.mode} mode"

    def reset(self) -> None:
        self._leave_ortho()
        self.playing = False
        self.pivot = np.asarray(self.scene.center, np.float64).copy()
        self.speed = self.base_speed
        self._set_pose(self.home.T_world_camera)
        self.state.camera_jumped = True
        self.state.message = "view reset"

    @property
    def ortho(self) -> bool:
        return self.state.settings.ortho

    def toggle_ortho(self) -> None:
        """Switch between the pinhole view and an orthographic one (`RenderSettings.ortho`) that keeps the scale at
        the pivot's depth (orbit) or the scene centre's (fly); back to the pinhole's field of view as it was."""
        cam = self.camera
        if self.ortho:
            self.state.camera = Camera.from_fov(cam.width, cam.height, self._pinhole_fov, cam.T_world_camera)
            self.state.settings.ortho = False
            self.state.message = "perspective view"
        else:
            target = self.pivot if self.mode == "orbit" else np.asarray(self.scene.center, np.float64)
            depth = float((target - cam.position) @ cam.T_world_camera[:3, 2])
            self._pinhole_fov = cam.fov_y_deg
            self.state.camera = orthographic(cam, max(depth, 0.1 * self.scene.radius))
            self.state.settings.ortho = True
            self.state.message = "orthographic view (O: perspective)"
        self.state.mark_dirty()

    def _leave_ortho(self) -> None:
        """Views that set a field of view (reset, snaps, playback) are pinhole views."""
        if self.ortho:
            self.toggle_ortho()

    def set_fov(self, fov_y_deg: float) -> None:
        """The vertical field of view, in degrees (FOV_RANGE), for the frames and keyframes from now on (a
        pinhole's: it leaves an orthographic view)."""
        self._leave_ortho()
        fov = float(min(max(fov_y_deg, FOV_RANGE[0]), FOV_RANGE[1]))
        cur = self.camera
        self.state.camera = Camera.from_fov(cur.width, cur.height, fov, cur.T_world_camera)
        self.state.mark_dirty()

    # ------------------------------------------------------------------ training cameras

    def _snap(self, index: int) -> None:
        self._leave_ortho()
        cam = self.training_cameras[index]
        self.training_index = index
        cur = self.camera
        self.state.camera = Camera.from_fov(cur.width, cur.height, cam.fov_y_deg, cur.T_world_camera)
        self._set_pose(cam.T_world_camera)
        self.state.camera_jumped = True
        self.state.message = f"training camera {index + 1} / {len(self.training_cameras)}"

    def snap_training(self, step: int) -> None:
        if not self.training_cameras:
            self.state.message = "no training cameras (the scene has no cameras.json)"
            return
        n = len(self.training_cameras)
        start = self.training_index if self.training_index >= 0 else (-1 if step > 0 else 0)
        self._snap((start + step) % n)

    def closest_training_index(self) -> int:
        """Nearest by distance (in scene radii) plus angle between viewing directions (SIBR's idea)."""
        T = self.camera.T_world_camera
        scores = [
            float(np.linalg.norm(c.position - T[:3, 3])) / self.scene.radius
            + (1.0 - float(c.T_world_camera[:3, 2] @ T[:3, 2]))
            for c in self.training_cameras
        ]
        return int(np.argmin(scores))

    def snap_closest(self) -> None:
        if not self.training_cameras:
            self.state.message = "no training cameras (the scene has no cameras.json)"
            return
        self._snap(self.closest_training_index())

    # ------------------------------------------------------------------ keyframes

    def add_keyframe(self) -> None:
        if self.ortho:
            self.state.message = "keyframes are perspective views: O leaves the orthographic view"
            return
        self.keyframes.append(self.camera.with_pose(self.camera.T_world_camera))
        self.state.message = f"keyframe {len(self.keyframes)} added"

    def remove_keyframe(self, index: int = -1) -> None:
        """Remove keyframe `index` (the last by default)."""
        if self.keyframes:
            self.keyframes.pop(index)
        self.state.message = f"{len(self.keyframes)} keyframes"

    def go_to_keyframe(self, index: int) -> None:
        """Show keyframe `index`: its pose and field of view, at the window's size."""
        self._leave_ortho()
        self.playing = False
        key, cur = self.keyframes[index], self.camera
        self.state.camera = Camera.from_fov(cur.width, cur.height, key.fov_y_deg, key.T_world_camera)
        self.state.camera_jumped = True
        self.state.mark_dirty()
        self.state.message = f"keyframe {index + 1} / {len(self.keyframes)}"

    def set_keyframe(self, index: int) -> None:
        """Replace keyframe `index` with the current view."""
        if self.ortho:
            self.state.message = "keyframes are perspective views: O leaves the orthographic view"
            return
        self.keyframes[index] = self.camera.with_pose(self.camera.T_world_camera)
        self.state.message = f"keyframe {index + 1} set to this view"

    def toggle_playback(self) -> None:
        if self.playing:
            self.playing = False
            self.state.message = "playback stopped"
        elif len(self.keyframes) < 2:
            self.state.message = "add at least 2 keyframes (K) to play a path"
        else:
            self._leave_ortho()
            self._play_cameras = self.path_cameras()
            self.state.camera_jumped = True  # the path starts at its first keyframe
            self.playing = True
            self.play_t = 0.0
            self.state.message = "playing"

    def path_cameras(self) -> list[Camera]:
        """The keyframe path sampled at PLAYBACK_FPS, as `save_camera_path` samples it for the file (same
        spline, same timing: SECONDS_PER_TRANSITION per key-to-key transition, spaced by distance and angle),
        so the window plays what `warpsplat render --path FILE.json` renders."""
        cam = self.camera
        n = max(round(PLAYBACK_FPS * SECONDS_PER_TRANSITION * (len(self.keyframes) - 1)), 1)
        keys = [Keyframe.from_camera(c) for c in self.keyframes]
        return interpolate_keyframes(keys, n, cam.width, cam.height, ease=False)

    def _advance_playback(self, dt: float) -> None:
        self.play_t += dt
        cams = self._play_cameras
        i = min(int(self.play_t * PLAYBACK_FPS), len(cams) - 1)
        self.state.camera = cams[i].with_pose(cams[i].T_world_camera)
        self.state.mark_dirty()
        self.last_motion = self.clock()
        if i == len(cams) - 1:
            self.playing = False
            self.state.message = "playback finished"

    def save_keyframes(self) -> None:
        if not self.keyframes:
            self.state.message = "no keyframes to save (K adds one)"
            return
        if self.save_path is None:
            self.state.message = "saving camera paths is not available"
            return
        try:
            written = self.save_path(self.keyframes)
        except (OSError, ValueError) as e:
            self.state.message = f"could not save the camera path: {error_reason(e)}"
            return
        self.state.message = f"saved {len(self.keyframes)} keyframes to {keep_whole(written)}"
