"""ViewerWindow: the pyglet window, its moderngl context and the frame loop.

Each window frame (`on_draw`): take a finished render if one arrived and copy it into the frame texture
(interop or host upload, app/interop.py); start a new render if the view changed (`state.dirty`); draw the
texture over the window (app/present.py) and the overlay (app/overlay.py). An unchanged view is re-presented,
never re-rendered. While the camera moves, frames render at `state.moving_scale`; when it settles, one frame
at `state.render_scale` follows.
"""

from __future__ import annotations

import datetime
import gc
import os
import time

import moderngl
import numpy as np
import pyglet
import torch
from imgui_bundle import imgui, implot
from pyglet.window import key

from renderer import Camera, Renderer, default_camera, up_name, up_vector
from renderer.camera import framing_sphere
from renderer.warmup import compile_counter, needs_warm_up

from .camera_controller import CAMERA_HELP, CameraController, SceneExtent
from .frames import Frame, FrameProducer, FrameRequest, mode_settings
from .imgui_gl import ImguiRenderer
from .imgui_input import ImguiInput
from .interop import FrameTexture
from .keys import PhysicalKeys
from .overlay import Overlay, apply_style
from .present import Presenter
from .state import RENDER_MODES, ViewerState, error_reason, keep_whole, viewer_settings
from .warmup import BackgroundWarmUp

# What the files the viewer writes are called: STEM-YYYYMMDD-HHMMSS.EXT in the output folder (--out-dir), with
# -N added when that name exists. The help rows name them from these, so they say what is written.
SCREENSHOT_NAME = ("warpsplat", ".png")
CAMERA_PATH_NAME = ("camera_path", ".json")
STAMP_FORMAT = "%Y%m%d-%H%M%S"


def file_pattern(name: tuple[str, str]) -> str:
    """How the help names a written file: "camera_path-<date>-<time>.json"."""
    return f"{name[0]}-<date>-<time>{name[1]}"


UI_HELP = [
    ("Tab", "show / hide the overlay"),
    ("H or F1", "show / hide this help"),
    ("1 / 2 / 3 / 4", "render mode: RGB / alpha / Gaussians per tile / depth"),
    ("P or F12", f"screenshot at render resolution, saved as {file_pattern(SCREENSHOT_NAME)}"),
    ("F5", f"save the keyframes as {file_pattern(CAMERA_PATH_NAME)}, which warpsplat render --path plays"),
    ("F3", "vsync on / off"),
    ("L", "level: the scene's up loses this view's roll (a tilted capture: roll it level with Z / X first)"),
    ("drop a file", "open that scene (or type its path in the Scene panel)"),
    ("Esc", "quit"),
]

SETTLE_S = 0.25  # the camera counts as moving this long after the last motion
CLIPBOARD_TIMEOUT_S = 2.0  # a paste gives up on a clipboard owner that does not answer after this long
CPU_RENDER_SCALE = 0.25  # CPU defaults: 320x180 in a 1280x720 window, ~1-4 s a frame on 2 cores
CPU_MOVING_SCALE = 0.125


class ViewerWindow(pyglet.window.Window):
    """A window showing one scene.

    pyglet may dispatch events (on_resize, on_draw) from inside `Window.__init__` when an event loop has run
    in the process; the handlers ignore them until the window is fully set up (`_ready`).

    Args:
        scene: the scene to show.
        size: window size in screen pixels.
        up: the scene's up axis ("-y", "+z", ...); None = the scene's own hint.
        device, backend: passed to `Renderer` (default: CUDA + Triton when available, else CPU + torch).
        render_scale / moving_scale: render resolution / window resolution, still / moving; None = 1.0 on
            CUDA, CPU_RENDER_SCALE / CPU_MOVING_SCALE on the CPU.
        allow_interop: False forces the host-upload path.
        threaded: render in a worker thread; None = on the CPU only.
        training_cameras: cameras to snap to; None = read the scene's cameras.json when it has one.
        output_dir: where screenshots and saved camera paths go.
        caption: the window title.
        visible: show the window (tests may keep it hidden).
        scene_name: what the overlay calls the scene (a file name).
    """

    _ready = False
    _closed = False
    _clipboard_deadline: float | None = None

    def __init__(
        self,
        scene,
        *,
        size: tuple[int, int] = (1280, 720),
        up: str | None = None,
        device: torch.device | str | None = None,
        backend: str = "auto",
        render_scale: float | None = None,
        moving_scale: float | None = None,
        allow_interop: bool = True,
        vsync: bool = True,
        threaded: bool | None = None,
        training_cameras: list[Camera] | None = None,
        output_dir: str = ".",
        caption: str = "warpsplat",
        visible: bool = True,
        scene_name: str = "bundled scene",
    ):
        config = pyglet.gl.Config(major_version=3, minor_version=3, forward_compatible=True, double_buffer=True)
        super().__init__(size[0], size[1], caption=caption, resizable=True, config=config, vsync=vsync,
                         visible=visible, file_drops=True)  # fmt: skip
        self.switch_to()  # pyglet leaves it current on its first window only
        self.ctx = moderngl.create_context()
        self.scene = scene
        self.up = up or scene.up_axis
        self.output_dir = output_dir
        fb_w, fb_h = self.get_framebuffer_size()
        self.renderer = Renderer(scene, device=device, backend=backend, frame_size=(fb_w, fb_h))
        on_cpu = self.renderer.device.type != "cuda"
        home = default_camera(scene, fb_w, fb_h, up=up)
        self.state = ViewerState(
            camera=home,
            settings=viewer_settings(),
            render_scale=render_scale if render_scale is not None else (CPU_RENDER_SCALE if on_cpu else 1.0),
            moving_scale=moving_scale if moving_scale is not None else (CPU_MOVING_SCALE if on_cpu else 1.0),
            vsync=vsync,
            output_dir=output_dir,
        )
        self.state.render_device = f"{self.renderer.device.type}, {self.renderer.backend} backend" + (
            ", worker thread" if (threaded if threaded is not None else on_cpu) else ""
        )
        # GL objects
        self.presenter = Presenter(self.ctx)
        self.frame_texture = FrameTexture(self.ctx, self.renderer.device, allow_interop=allow_interop)
        self.state.display_path = self.frame_texture.describe()
        self._capture_fbo: moderngl.Framebuffer | None = None
        # imgui
        imgui.create_context()
        implot.create_context()
        imgui.get_io().set_ini_filename("")  # no imgui.ini next to the user's files
        apply_style()
        self.imgui_renderer = ImguiRenderer(self.ctx)
        self._imgui_time = time.perf_counter()
        # input: imgui sees every event first and never consumes one; the controller acts unless imgui wants
        # the input; this window's own on_key_press gets the keys the controller did not take
        self.keys = PhysicalKeys.from_window(self)
        self.controller = self._make_controller(scene, home, up, training_cameras)
        help_rows = CAMERA_HELP + UI_HELP + [("", self.keys.describe())]
        self.overlay = Overlay(
            self.state, scene_sh_degree=scene.sh_degree, controller=self.controller, help_rows=help_rows,
            scene_name=self._describe_scene(scene_name), up_axis=self.up, open_scene=self.open_scene_file,
            set_up_axis=self.set_up_axis,
            level_up=self.level_up,
        )  # fmt: skip
        self.push_handlers(self.controller)
        self.imgui_input = ImguiInput(lambda: self.height, clipboard=self)
        self.push_handlers(self.imgui_input)
        # kernels: compiled before the first frame, the switches' in the background (app/warmup.py)
        self._compiles = compile_counter() if needs_warm_up(self.renderer) else None  # installed before the thread
        self.warm = self._start_warm_up(self.renderer, scene)
        # frames
        self.producer = FrameProducer(self.renderer, threaded=threaded if threaded is not None else on_cpu)
        self._serial = 0
        self._last_frame: Frame | None = None
        self._pending_timer: Frame | None = None
        self._last_draw = time.perf_counter()
        self._vsync_applied = vsync
        self._closed = False
        pyglet.clock.schedule_interval(self.tick, 1 / 120)
        self._ready = True

    def _start_warm_up(self, renderer: Renderer, scene) -> BackgroundWarmUp:
        fb_w, fb_h = self.get_framebuffer_size()
        warm = BackgroundWarmUp(
            renderer,
            self.state.render_size_for(fb_w, fb_h),
            mode_settings(self.state.settings, self.state.render_mode),
            scene.sh_degree,
        )
        self.state.kernel_status = warm.status
        return warm

    def _make_controller(self, scene, home: Camera, up: str | None, training_cameras: list[Camera] | None):
        """A camera controller for `scene` (its extent, up axis and training cameras)."""
        fb_w, fb_h = self.get_framebuffer_size()
        center, radius = framing_sphere(scene)
        frame = SceneExtent(center=center, radius=radius, up=up_vector(up or scene.up_axis))
        if training_cameras is None:
            try:
                training_cameras = load_training_cameras(scene, fb_w, fb_h)
            except (OSError, ValueError) as e:  # a broken cameras.json must not stop the viewer
                training_cameras = []
                self.state.message = f"training cameras not loaded: {error_reason(e)}"
        return CameraController(
            self.state, frame, home, keys=self.keys, training_cameras=training_cameras,
            wants_keyboard=lambda: imgui.get_io().want_capture_keyboard,
            wants_mouse=lambda: imgui.get_io().want_capture_mouse,
            save_path=self._save_path,
        )  # fmt: skip

    def load_scene(
        self, scene, *, up: str | None = None, training_cameras: list[Camera] | None = None, name: str = "scene"
    ) -> None:
        """Show another scene in this window, on the same device and backend, from its default view.

        The new renderer and view are made first (a scene that fails to load leaves the old one on screen).
        Then the old render worker is stopped and the frame texture released, and nothing of the old scene stays
        referenced: its device memory goes back with the old renderer. Keyframes and navigation start afresh.
        `name` is what the overlay calls the scene.
        """
        fb_w, fb_h = self.get_framebuffer_size()
        renderer = Renderer(scene, device=self.renderer.device, backend=self.renderer.backend,
                            frame_size=(fb_w, fb_h))  # fmt: skip
        home = default_camera(scene, fb_w, fb_h, up=up)  # also checks `up` before anything changes
        self.producer.close()
        self.warm.close()
        self.frame_texture.release()  # the next frame re-creates it; until then the background shows
        self.scene, self.renderer = scene, renderer
        self.warm = self._start_warm_up(renderer, scene)
        self.producer = FrameProducer(renderer, threaded=self.producer.threaded)
        self._last_frame = self._pending_timer = None
        self.state.camera = home
        self.state.stats, self.state.stage_ms, self.state.render_size = None, {}, (0, 0)
        self.state.depth_range = None
        self.state.render_ms.clear()
        if self.state.settings.sh_degree is not None and self.state.settings.sh_degree > scene.sh_degree:
            self.state.settings.sh_degree = None
        self.up = up or scene.up_axis
        self._replace_controller(home, training_cameras)
        self.overlay.scene_sh_degree = scene.sh_degree
        self.overlay.scene_name = self._describe_scene(name)
        self.state.mark_dirty()
        # the old renderer's frames hold it in reference cycles: without a collection now its scene and buffers
        # stay on the device beside the new scene's until Python's next full collection, which may not come for
        # minutes (a 24M-Gaussian scene's are several GB)
        gc.collect()

    def _replace_controller(self, home: Camera, training_cameras: list[Camera] | None) -> None:
        """A new camera controller for the current scene and up axis, starting at `home`."""
        # the controller's handlers go below imgui's input, as in __init__ (imgui sees every event first)
        self.remove_handlers(self.imgui_input)
        self.remove_handlers(self.controller)
        self.controller = self._make_controller(self.scene, home, self.up, training_cameras)
        self.push_handlers(self.controller)
        self.push_handlers(self.imgui_input)
        self.overlay.controller = self.controller
        self.overlay.up_axis = self.up

    def _describe_scene(self, name: str) -> str:
        return f"{keep_whole(name)}: {len(self.scene):,} Gaussians, SH degree {self.scene.sh_degree}"

    def open_scene_file(self, path: str) -> bool:
        """Open the scene at `path` in this window (the Scene panel, a dropped file); a camera file (`.json`, or a
        COLMAP model's images or cameras file) goes to `open_camera_file`. A file that cannot be read leaves the
        current scene and says why in the status line; returns whether it opened."""
        from renderer.memory import OutOfDeviceMemoryError
        from renderer.paths.colmap import find_model
        from scenes import SceneFormatError, load_scene

        base = os.path.basename(path).lower()
        if (base.endswith(".json") and base != "meta.json") or (os.path.isfile(path) and find_model(path)):
            return self.open_camera_file(path)
        self.state.message = f"opening {keep_whole(path)} ..."
        try:
            scene = load_scene(path)
            name = os.path.basename(os.path.normpath(path))
            self.load_scene(scene, name=name)  # the memory check first: a scene that does not fit leaves the old one
        except (SceneFormatError, OSError, ValueError, OutOfDeviceMemoryError) as e:
            self.state.message = f"could not open {keep_whole(path)}: {error_reason(e, path)}"
            return False
        self.set_caption(f"warpsplat - {name}")
        self.state.message = f"opened {keep_whole(path)}"
        return True

    def open_camera_file(self, path: str) -> bool:
        """A camera file: a keyframe path (the viewer's saved one, or any nerfstudio camera_path.json with keyframes)
        replaces the keyframes, to play, edit and save again; INRIA's cameras.json, a COLMAP model or a dataset's
        transforms.json becomes the training cameras that [, ] and C snap to. Returns whether it was read (else
        the status line says why)."""
        from renderer.paths import CameraPathError, load_camera_path, read_keyframes

        fb_w, fb_h = self.get_framebuffer_size()
        try:
            # validates it; one frame is enough
            loaded = load_camera_path(path, width=fb_w, height=fb_h, n_frames=1,
                                      dataparser_transforms=self.scene.extras.get("dataparser_transforms"))  # fmt: skip
            if loaded.kind in ("inria cameras", "colmap model", "transforms.json"):
                cams = [Camera.from_fov(fb_w, fb_h, k.fov_y_deg, k.T_world_camera) for k in loaded.keyframes]
                self.controller.training_cameras, self.controller.training_index = cams, -1
                self.state.message = f"{len(cams)} training cameras from {keep_whole(path)} ([ ] and C snap to them)"
                return True
            keys = read_keyframes(path).keyframes
        except (CameraPathError, OSError) as e:
            self.state.message = f"could not open {keep_whole(path)}: {error_reason(e, path)}"
            return False
        self.controller.keyframes = [Camera.from_fov(fb_w, fb_h, k.fov_y_deg, k.T_world_camera) for k in keys]
        self.state.message = f"{len(keys)} keyframes from {keep_whole(path)} (Space plays them, F5 saves)"
        return True

    def set_up_axis(self, axis: str) -> None:
        """Make `axis` ("+z", "-y", ...) the scene's up axis: the view goes back to the default framing for it,
        and navigation and generated views use it from now on."""
        try:
            up_vector(axis)
        except ValueError as e:
            self.state.message = str(e)
            return
        self.scene.up_axis = self.up = axis
        fb_w, fb_h = self.get_framebuffer_size()
        home = default_camera(self.scene, fb_w, fb_h, up=axis)
        self.state.camera = home
        self.state.camera_jumped = True
        self._replace_controller(home, self.controller.training_cameras)
        self.state.message = f"up axis {axis}"
        self.state.mark_dirty()

    def level_up(self) -> None:
        """Take the current view's roll out of the scene's up axis: the up loses its component along the view's
        right (the camera's +X), so this view's horizon is level about it and its pitch is kept. For a scene
        captured tilted, whose up lies along no axis: roll the view level (Z / X), then this. The view, the
        keyframes and the navigation mode stay; fly and orbit then turn about the new up, and R frames the
        scene for it."""
        T = self.state.camera.T_world_camera
        up = up_vector(self.up)
        up = up - (up @ T[:3, 0]) * T[:3, 0]
        if np.linalg.norm(up) < 1e-3:  # the old up along the view's right (a quarter turn of roll): the view's up
            up = -T[:3, 1]  # OpenCV axes: the camera's +Y points down the image
        axis = up_name(up)
        old = self.controller
        self.scene.up_axis = self.up = axis
        fb_w, fb_h = self.get_framebuffer_size()
        self._replace_controller(default_camera(self.scene, fb_w, fb_h, up=axis), old.training_cameras)
        self.controller.keyframes, self.controller.mode = old.keyframes, old.mode
        self.controller.pivot, self.controller.speed = old.pivot, old.speed
        self.state.message = f"up axis {axis}: level in this view"
        self.state.mark_dirty()

    def get_clipboard_text(self) -> str:
        """The system clipboard's text (imgui's paste), or "" with a message when its owner does not answer
        within CLIPBOARD_TIMEOUT_S. pyglet's X11 read waits for the owner's answer with no limit (a hung program
        holding the clipboard would freeze the viewer); it calls dispatch_platform_event while it waits, which
        ends the wait at the deadline."""
        self._clipboard_deadline = time.monotonic() + CLIPBOARD_TIMEOUT_S
        try:
            return super().get_clipboard_text()
        except ClipboardTimeout:
            self.state.message = (
                f"nothing pasted: the program holding the clipboard did not answer in {CLIPBOARD_TIMEOUT_S:g} s"
            )
            return ""
        finally:
            self._clipboard_deadline = None

    def dispatch_platform_event(self, e) -> None:
        if self._clipboard_deadline is not None and time.monotonic() > self._clipboard_deadline:
            raise ClipboardTimeout
        super().dispatch_platform_event(e)

    def on_file_drop(self, x, y, paths):
        if self._ready and paths:
            self.open_scene_file(paths[0])

    @property
    def redraw_interval(self) -> float:
        """Seconds between window frames for `pyglet.app.run`: as fast as the display allows on CUDA (vsync
        paces it; with vsync off the overlay shows the true frame rate), 60 Hz on the CPU, where the render
        worker needs the cores more than the window needs frames."""
        return 0.0 if self.renderer.device.type == "cuda" else 1 / 60

    # ------------------------------------------------------------------ clock

    def tick(self, dt: float) -> None:
        """Advance held keys and playback; track whether the camera is moving."""
        self.controller.update(dt)
        moving = time.perf_counter() - self.controller.last_motion < SETTLE_S
        if self.state.moving and not moving and self.state.moving_scale < self.state.render_scale:
            self.state.mark_dirty()  # settled: one frame at the full render scale
        self.state.moving = moving

    # ------------------------------------------------------------------ frames

    def _take_finished_frame(self) -> None:
        frame = self.producer.poll()
        if frame is None:
            return
        self.frame_texture.upload(frame.rgba8)
        self.state.display_path = self.frame_texture.describe()
        self._last_frame = frame
        self._pending_timer = frame
        self.state.stats = frame.stats
        self.state.temporal = self.renderer.temporal.stats.as_dict()
        self.state.render_size = (frame.request.camera.width, frame.request.camera.height)
        self.state.depth_range = frame.depth_range
        if frame.stats.stage_ms:  # filled synchronously (CPU)
            self.state.stage_ms = dict(frame.stats.stage_ms)
            self.state.render_ms.append(frame.stats.stage_ms.get("total", frame.wall_ms), tag=frame.stats.ran_label())
            self._pending_timer = None

    def _read_previous_times(self) -> None:
        """Per-stage GPU times of the previous frame, once its events completed (a query, never a wait)."""
        frame = self._pending_timer
        if frame is None or frame.timer is None:
            return
        ms = frame.timer.elapsed_ms()
        if ms is None or not (frame.host_counts is None or frame.host_counts_ready()):
            return
        self.state.stage_ms = ms
        self.state.render_ms.append(ms.get("total", 0.0), tag=frame.stats.ran_label())
        if frame.host_counts is not None:
            frame.stats.max_tile_pairs = int(frame.host_counts[0])
        self._pending_timer = None

    def _request_frame(self) -> None:
        self.state.kernel_status = self.warm.status
        if not self.state.dirty or self.producer.busy or not self.warm.ready:  # no frame before its kernels
            return
        fb_w, fb_h = self.get_framebuffer_size()
        rw, rh = self.state.render_size_for(fb_w, fb_h)
        self.warm.add_size((rw, rh))  # a new size (resize, render scale) is warmed in the background
        self._serial += 1
        request = FrameRequest(self.state.camera.resized(rw, rh), self.state.settings, self.state.render_mode,
                               self._serial, jump=self.state.camera_jumped)  # fmt: skip
        self.state.dirty = self.state.camera_jumped = False
        before, t0 = self._compiles and self._compiles.count(), time.perf_counter()
        self.producer.request(request)
        if self._compiles is not None and self._compiles.count() > before:  # rendered in this thread (CUDA)
            self.state.message = (
                f"this frame compiled {self._compiles.count() - before} kernel(s) for settings or a "
                f"size not prepared yet: a one-time pause ({time.perf_counter() - t0:.2f} s)"
            )

    def update_frame(self) -> None:
        """Collect a finished frame, start the next if the view changed (the non-drawing half of on_draw)."""
        self._read_previous_times()
        self._take_finished_frame()
        self._request_frame()
        if not self.producer.threaded:
            self._take_finished_frame()  # rendered in this thread: show it in this window frame
        if self.state.screenshot_requested and not self.state.dirty and not self.producer.busy:
            self.state.screenshot_requested = False
            self.save_screenshot()

    # ------------------------------------------------------------------ drawing

    def draw_frame(self, framebuffer: moderngl.Framebuffer) -> None:
        """Present the frame texture and draw the overlay into `framebuffer`."""
        fb_w, fb_h = self.get_framebuffer_size()
        framebuffer.use()
        self.ctx.viewport = (0, 0, fb_w, fb_h)
        self.ctx.clear(*self.state.settings.background, 1.0)
        if self.frame_texture.texture is not None:
            self.presenter.draw(self.frame_texture.texture, (0, 0, fb_w, fb_h))
        io = imgui.get_io()
        io.display_size = (self.width, self.height)
        io.display_framebuffer_scale = (fb_w / max(self.width, 1), fb_h / max(self.height, 1))
        now = time.perf_counter()
        io.delta_time = max(now - self._imgui_time, 1e-4)
        self._imgui_time = now
        imgui.new_frame()
        self.overlay.build()
        imgui.render()
        self.imgui_renderer.render(imgui.get_draw_data(), framebuffer)

    def on_draw(self) -> None:
        if not self._ready or self._closed:
            return
        now = time.perf_counter()
        self.state.frame_ms.append((now - self._last_draw) * 1e3, at=now)
        self._last_draw = now
        if self.state.vsync != self._vsync_applied:
            self.set_vsync(self.state.vsync)
            self._vsync_applied = self.state.vsync
        self.update_frame()
        self.draw_frame(self.ctx.screen)

    def capture(self, *, overlay: bool = True) -> np.ndarray:
        """The window's content as [H, W, 3] uint8, row 0 at the top, drawn into an offscreen framebuffer
        (reading the default framebuffer leaves a GL error pending on Mesa)."""
        fb_w, fb_h = self.get_framebuffer_size()
        if self._capture_fbo is None or self._capture_fbo.size != (fb_w, fb_h):
            if self._capture_fbo is not None:
                self.ctx.screen.use()  # never release the bound framebuffer (moderngl re-binds it later)
                self._capture_fbo.release()
            self._capture_fbo = self.ctx.simple_framebuffer((fb_w, fb_h), components=4)
        shown = self.state.show_overlay, self.state.show_help
        if not overlay:
            self.state.show_overlay = self.state.show_help = False
        try:
            self.draw_frame(self._capture_fbo)
        finally:
            self.state.show_overlay, self.state.show_help = shown
        data = self._capture_fbo.read(components=3, alignment=1)
        return np.frombuffer(data, np.uint8).reshape(fb_h, fb_w, 3)[::-1].copy()

    # ------------------------------------------------------------------ files

    def _unique_path(self, name: tuple[str, str]) -> str:
        stem, ext = name
        stamp = datetime.datetime.now().strftime(STAMP_FORMAT)
        path = os.path.join(self.state.output_dir, f"{stem}-{stamp}{ext}")
        n = 1
        while os.path.exists(path):
            path = os.path.join(self.state.output_dir, f"{stem}-{stamp}-{n}{ext}")
            n += 1
        return path

    def save_screenshot(self, path: str | None = None) -> str | None:
        """Write the frame on display as a PNG at render resolution; returns the path."""
        from PIL import Image

        if self._last_frame is None:
            self.state.message = "no frame to save yet"
            return None
        path = path or self._unique_path(SCREENSHOT_NAME)
        rgb = self._last_frame.rgba8[..., :3].cpu().numpy()
        try:
            Image.fromarray(rgb).save(path)
        except OSError as e:
            self.state.message = f"could not save the screenshot {keep_whole(path)}: {error_reason(e, path)}"
            return None
        self.state.message = f"saved the screenshot {keep_whole(path)}"
        return path

    def _save_path(self, keyframes: list[Camera]) -> str:
        from renderer.paths import save_camera_path

        path = self._unique_path(CAMERA_PATH_NAME)
        cam = self.state.camera
        save_camera_path(path, keyframes, width=cam.width, height=cam.height, fps=30.0)
        return path

    # ------------------------------------------------------------------ events

    def on_key_press(self, symbol, modifiers):
        if not self._ready or imgui.get_io().want_capture_keyboard:
            return None
        sym = self.keys(symbol)
        modes = {key._1: 0, key._2: 1, key._3: 2, key._4: 3}
        if sym == key.TAB:
            self.state.show_overlay = not self.state.show_overlay
        elif sym in (key.H, key.F1):
            self.state.show_help = not self.state.show_help
        elif sym in modes:
            self.state.render_mode = RENDER_MODES[modes[sym]]
            self.state.mark_dirty()
        elif sym in (key.P, key.F12):
            self.state.screenshot_requested = True
        elif sym == key.F3:
            self.state.vsync = not self.state.vsync
        elif sym == key.L:
            self.level_up()
        else:
            return super().on_key_press(symbol, modifiers)  # Esc closes
        return True

    def on_resize(self, width, height):
        if not self._ready:
            return
        fb_w, fb_h = self.get_framebuffer_size()
        cam = self.state.camera
        if (fb_w, fb_h) != (cam.width, cam.height) and fb_w > 0 and fb_h > 0:
            # keep the vertical field of view and the pose; the principal point stays centred
            self.state.camera = Camera.from_fov(fb_w, fb_h, cam.fov_y_deg, cam.T_world_camera)
            self.controller.home = Camera.from_fov(fb_w, fb_h, self.controller.home.fov_y_deg,
                                                   self.controller.home.T_world_camera)  # fmt: skip
            self.state.mark_dirty()

    def on_deactivate(self):
        if not self._ready:
            return
        self.controller.release_all()

    def on_close(self):
        self.shutdown()
        super().on_close()

    def close(self):
        # pyglet's close() does not dispatch on_close: shut down here too, or imgui's context (and the font atlas
        # texture it registered with this window's GL context) outlives the window and the next window's
        # overlay cannot draw its text
        self.shutdown()
        super().close()

    def shutdown(self) -> None:
        """Stop the render worker and release GL and CUDA resources (interop unregistered first)."""
        if self._closed:
            return
        self._closed = True
        pyglet.clock.unschedule(self.tick)
        self.producer.close()
        self.warm.close()
        self.frame_texture.release()
        self.imgui_renderer.release()
        self.presenter.release()
        if self._capture_fbo is not None:
            self._capture_fbo.release()
        implot.destroy_context()
        imgui.destroy_context()


class ClipboardTimeout(Exception):
    """The clipboard's owner did not answer a paste in time."""


def load_training_cameras(scene, width: int, height: int) -> list[Camera]:
    """The scene's training cameras, if it has them: `scene.extras["cameras"]`, the `cameras.json` of its
    trained-output folder or the file or COLMAP model that `warpsplat view --cameras` names."""
    path = getattr(scene, "extras", {}).get("cameras")
    if not path:
        return []
    from renderer.paths import load_camera_path

    loaded = load_camera_path(path, dataparser_transforms=scene.extras.get("dataparser_transforms"))
    return [Camera.from_fov(width, height, k.fov_y_deg, k.T_world_camera) for k in loaded.keyframes]
