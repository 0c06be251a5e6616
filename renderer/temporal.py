"""Temporal reuse (CaT-GS's ideas, reconstructed): work shared across consecutive frames, each part a switch.

1. Speculative window (exact for known cameras). Every K frames one cull pass (`kernels/cull.py`) finds the
   Gaussians that any of the window's K cameras can render, and compacts them (ascending index order) into a
   cached copy of the scene's per-Gaussian arrays. Each frame of the window then projects, bins and sorts only
   that set. The image is the same bit for bit: every Gaussian a frame renders is in the set, each one's
   projection is the same computation on the same values, and the compaction keeps the original relative
   order, so the stable (tile, depth) sort breaks ties exactly as before.
   The cameras are known in `warpsplat render` (`future=` the next frames of the path). Elsewhere (the viewer)
   they are predicted by repeating the last frame's motion, and the cull adds a screen margin of m pixels and
   keeps every Gaussian within a guard distance D of a predicted camera. A frame then uses the window only if
   its camera has the window's intrinsics and lies within the motion the margin absorbs of a predicted
   camera: a rotation that moves no image point by more than (m - 16)/2 pixels, and a translation that moves no
   point beyond D by more than that (f d / D <= (m - 16) / 2): the margin less one tile (EXACT_MARGIN_PX, the
   slack that known cameras keep for float differences between cull and project). That bound is first order
   (it ignores how a footprint grows as the camera approaches), so the predicted window is near-exact, not
   proven exact; its PSNR against exact rendering is measured by `warpsplat bench`. Anything else (a jump, a
   snap, a new size) rebuilds.
   Whether a frame uses the window at all is measured, not assumed: renderer/window_choice.py times window
   frames against the plain ones beside them and keeps the faster (a declined window's frames are the plain
   ones). A window outlives the plain frames between its own (a trial alternates them): a plain frame renders
   the whole scene and leaves the window as it was, and a later frame uses it only if it covers that frame's
   camera, as above, so the window's frames stay exact whatever ran between them.
2. Unchanged view (exact): the same camera and settings as the last frame re-present the last frame's output
   without any GPU work.
Sort order is never reused across frames: every frame sorts its own pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from .camera import Camera
from .settings import RenderSettings
from .window_choice import WindowChoice
from .workspace import Workspace

EXACT_MARGIN_PX = 16.0  # known cameras: one tile of slack absorbs float differences between cull and project
# A window that keeps more than this fraction of the scene projects the whole scene instead: copying 90% of the
# arrays (about 140 bytes a Gaussian with SH degree 3, its SH in fp16) costs more than skipping the other 10% saves.
WINDOW_KEEPS_AT_MOST = 0.9


@dataclass
class TemporalStats:
    """Counters since the renderer was created (or `reset()`); read them for hit rates."""

    frames: int = 0
    frames_reused: int = 0  # unchanged view: the last output re-presented
    frames_from_window: int = 0  # projected from an existing window's set
    window_builds: int = 0  # cull passes (the first frame of each window, and every refresh)
    gaussians_in_window: int = 0  # size of the current window's set
    frames_window_declined: int = 0  # a window was asked for, and the frame was a plain one (measured faster,
    # or being timed: renderer/window_choice.py)
    last_build_reason: str = ""
    window_choice: str = ""  # "measuring", "on" (windows measured faster) or "off"; "" without a window asked for
    window_ms: float = 0.0  # the measured cost of a window's frame (build amortised), and of a plain frame; 0 =
    plain_ms: float = 0.0  # not measured yet
    window_decisions: int = 0  # decisions the choice took since the renderer was made (trials and re-checks)

    def hit_rate(self) -> float:
        """Frames served from a window (not counting re-presented ones) over frames rendered."""
        rendered = self.frames - self.frames_reused
        return self.frames_from_window / rendered if rendered else 0.0

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["window_hit_rate"] = round(self.hit_rate(), 4)
        return d


@dataclass
class SceneArrays:
    """The renderer's prepared per-Gaussian arrays, which a window compacts."""

    means: Tensor  # [N, 3]
    covars: Tensor  # [N, 6]
    opacities: Tensor  # [N]
    sh: Tensor  # [N, K, 3] fp16 (kernels.SH_DTYPE; a window's copy keeps the dtype: `compact`)


@dataclass
class FrameSource(SceneArrays):
    """The per-Gaussian arrays one frame projects (M of them: the whole scene or a window's compacted set)."""

    kind: str = "full"  # "full" | "window"

    @property
    def n(self) -> int:
        return self.means.shape[0]


@dataclass
class _Window:
    key: tuple  # settings and intrinsics the cull depended on
    poses: list[np.ndarray]  # T_world_camera of the cameras it covers
    predicted: bool
    max_angle: float  # radians a camera may deviate from a predicted pose (predicted windows)
    max_shift: float  # world units a camera may deviate from a predicted pose (predicted windows)
    frames_left: int  # window frames it may still serve (a plain frame between them does not count)
    source: FrameSource


@dataclass
class TemporalCache:
    """The cross-frame state of one Renderer (see the module docstring). `ws` is the renderer's workspace."""

    ws: Workspace
    stats: TemporalStats = field(default_factory=TemporalStats)
    window: _Window | None = None
    last_pose: np.ndarray | None = None  # the previous rendered camera's pose (for prediction)
    last_key: tuple | None = None  # the previous frame's full identity (for unchanged-view reuse)
    choice: WindowChoice = field(default_factory=WindowChoice)  # whether windows measured faster
    last_use: str = "plain"  # what the last frame's source was, for `record`: "build", "hit" or "plain"
    _settings_fields: dict = field(default_factory=dict)  # the settings `wants_window` last saw, and their repr
    _settings_repr: str = ""

    def invalidate(self) -> None:
        """Forget the window (the counters stay): the next frame rebuilds it. For callers that know the camera
        jumped (a snap, a reset, a new path) whatever the motion limits say."""
        self.window, self.last_pose = None, None

    def reset(self) -> None:
        """A new path: forget the window, the last pose and frame, and the counters. The window choice stays: what
        it measured is this scene's cost on this machine, and its re-checks keep it current (a fresh trial per
        path would cost its slow window frames each time; renderer/window_choice.py)."""
        self.window, self.last_pose, self.last_key = None, None, None
        self.stats = TemporalStats()

    # ------------------------------------------------------------------ unchanged view

    def unchanged(self, camera: Camera, settings: RenderSettings) -> bool:
        """Whether this frame equals the last rendered one exactly (same camera, same settings)."""
        return settings.reuse_unchanged_frame and self.last_key == frame_key(camera, settings)

    def remember(self, camera: Camera, settings: RenderSettings) -> None:
        """Called after a frame completed: the identity of what the workspace now holds."""
        self.last_key = frame_key(camera, settings)

    # ------------------------------------------------------------------ window

    def wants_window(self, camera: Camera, settings: RenderSettings, known: bool, scene_radius: float) -> bool:
        """Whether this frame should use a window (once per rendered frame): never without one asked for, else
        as `self.choice` measured. `known`: the path's next cameras are given (`future=`)."""
        if settings.temporal_window <= 1 or (settings.ortho and not known):
            return False  # a predicted window's motion bounds are a pinhole's (`_build`)
        # the settings' repr, again only when a field changed (a dataclass's repr took half of a declined
        # window's bookkeeping a frame, and the viewer changes its settings object in place)
        if settings.__dict__ != self._settings_fields:
            self._settings_fields, self._settings_repr = dict(settings.__dict__), repr(settings)
        key = (window_key(camera, settings), self._settings_repr, known)
        use = self.choice.wants_window(key, camera.T_world_camera, scene_radius, settings.temporal_window)
        st, c = self.stats, self.choice
        st.window_choice, st.window_ms, st.plain_ms = c.state(), c.window_ms() or 0.0, c.plain_ms() or 0.0
        st.window_decisions = c.decisions
        return use

    def record(self, timer, steady: bool) -> None:
        """The frame just launched, with its timer (read once it completes): what it cost, for the choice.
        `steady`: a plain frame in the form plain frames run in from then on (replayed, where graphs replay)."""
        self.choice.record(self.last_use, timer, steady)

    def source(
        self, scene: SceneArrays, kernels, scene_radius: float, camera: Camera, settings: RenderSettings,
        future: list[Camera] | None, *, use_window: bool,
    ) -> FrameSource:  # fmt: skip
        """The arrays to project for this frame, building a new window when the current one does not cover it,
        or when the choice asks for a fresh one (`WindowChoice.rebuild`: a trial times its build).
        `kernels`: the renderer's kernel module (its `cull_window`); `scene_radius` scales the distances.
        use_window=False (`wants_window` said so) declines an asked-for window: the whole scene is rendered,
        exactly, and the counters say so; the window stays for the next frame it covers (a trial's plain frames
        lie between its window frames)."""
        full = FrameSource(scene.means, scene.covars, scene.opacities, scene.sh)
        self.last_use = "plain"
        if settings.temporal_window <= 1:
            self.window = None
            src = full
        elif not use_window:
            self.stats.frames_window_declined += 1
            src = full
        else:
            w = self.window
            if w is None or self.choice.rebuild or not self._covers(w, camera, settings):
                reason = "first frame" if w is None else "camera or settings outside the window"
                if w is not None and w.frames_left <= 0:
                    reason = "window used up"
                if w is not None and self.choice.rebuild:
                    reason = "a trial times a fresh window"
                w = self.window = self._build(scene, kernels, scene_radius, camera, settings, future)
                self.stats.last_build_reason = reason
                self.last_use = "build"
            else:
                self.stats.frames_from_window += 1
                self.last_use = "hit"
            w.frames_left -= 1
            src = w.source
        self.last_pose = camera.T_world_camera.copy()
        return src

    def _covers(self, w: _Window, camera: Camera, settings: RenderSettings) -> bool:
        if w.frames_left <= 0 or w.key != window_key(camera, settings):
            return False
        pose = camera.T_world_camera
        if not w.predicted:
            return any(np.array_equal(pose, p) for p in w.poses)
        return any(within(pose, p, w.max_angle, w.max_shift) for p in w.poses)

    def _build(
        self, scene: SceneArrays, kernels, scene_radius: float, camera: Camera, settings: RenderSettings,
        future: list[Camera] | None,
    ) -> _Window:  # fmt: skip
        k = settings.temporal_window
        key = window_key(camera, settings)
        if future is not None:
            cams = [camera] + [c for c in future[: k - 1] if window_key(c, settings) == key]
            predicted, margin, guard = False, EXACT_MARGIN_PX, 0.0
            max_angle = max_shift = 0.0
        else:
            cams = [camera.with_pose(p) for p in predict_poses(self.last_pose, camera.T_world_camera, k)]
            predicted, margin = True, float(settings.temporal_margin)
            guard = settings.temporal_guard * scene_radius
            f = max(camera.fx, camera.fy)
            tan2 = (0.5 * camera.width / camera.fx) ** 2 + (0.5 * camera.height / camera.fy) ** 2
            max_angle = 0.5 * (margin - EXACT_MARGIN_PX) / (f * (1.0 + tan2))  # d(f tan x)/dx at the corner
            max_shift = 0.5 * (margin - EXACT_MARGIN_PX) * guard / f
        ws, n = self.ws, scene.means.shape[0]
        packed = torch.from_numpy(np.stack([c.packed_array() for c in cams])).to(ws.device)
        keep = kernels.cull_window(
            scene.means, scene.covars, scene.opacities, packed, camera.width, camera.height,
            near=settings.near, far=settings.far, eps2d=settings.eps2d, margin=margin, guard=guard,
            tile_size=settings.tile_size, out=ws.buffer("window_keep", n, torch.int8), ortho=settings.ortho,
        )  # fmt: skip
        index = torch.nonzero(keep).squeeze(1)  # ascending: the compacted set keeps the scene's order
        m = index.numel()
        if m > WINDOW_KEEPS_AT_MOST * n:  # too little left out to pay for the copy: the whole scene, uncopied
            src = FrameSource(scene.means, scene.covars, scene.opacities, scene.sh)
        else:
            src = FrameSource(*(compact(ws, "window_" + name, getattr(scene, name), index)
                                for name in ("means", "covars", "opacities", "sh")), kind="window")  # fmt: skip
        self.stats.window_builds += 1
        self.stats.gaussians_in_window = m
        poses = [c.T_world_camera.copy() for c in cams]
        frames = k if predicted else len(cams)  # a camera at rest predicts itself for all K frames
        return _Window(key, poses, predicted, max_angle, max_shift, frames, src)


def compact(ws: Workspace, name: str, array: Tensor, index: Tensor) -> Tensor:
    """array[index] into workspace buffer `name` (grown with headroom, so later windows usually fit), in the array's
    own dtype (the fp16 SH stay fp16: the kernels take that dtype alone), and the SH in the renderer's layout
    (coefficient-major: kernels/buffers.py `sh_layout`)."""
    shape = (index.numel(), *array.shape[1:])
    buf = ws.buffer(name, math.prod(shape), array.dtype, headroom=1.25)
    if array.dim() == 3:  # the SH, [m, K, 3] viewed on a [K, 3, m] buffer
        m, k, c = shape
        out = buf.view(k, c, m).permute(2, 0, 1)
        return out.copy_(torch.index_select(array, 0, index))
    return torch.index_select(array, 0, index, out=buf.view(shape))


def window_key(camera: Camera, settings: RenderSettings) -> tuple:
    """What a window's cull depends on besides the pose: image size, intrinsics, clip planes, footprint."""
    return (camera.width, camera.height, camera.fx, camera.fy, camera.cx, camera.cy, settings.near, settings.far,
            settings.eps2d, settings.scale_modifier, settings.tile_size)  # fmt: skip


def frame_key(camera: Camera, settings: RenderSettings) -> tuple:
    """Everything that determines a frame's image."""
    return window_key(camera, settings) + (camera.T_world_camera.tobytes(), repr(settings))


def within(pose: np.ndarray, other: np.ndarray, max_angle: float, max_shift: float) -> bool:
    """Whether two camera-to-world poses differ by at most max_angle radians and max_shift world units."""
    shift = float(np.linalg.norm(pose[:3, 3] - other[:3, 3]))
    cos = (np.trace(other[:3, :3].T @ pose[:3, :3]) - 1.0) / 2.0
    return shift <= max_shift and math.acos(min(1.0, max(-1.0, cos))) <= max_angle


def predict_poses(previous: np.ndarray | None, current: np.ndarray, k: int) -> list[np.ndarray]:
    """current, then k - 1 poses that repeat the last frame's motion (camera-to-world, constant velocity in the
    camera's own frame): P_i = P_0 D^i with D = P_prev^-1 P_0. Without a previous pose, the current one only."""
    if previous is None:
        return [current.copy()]
    step = np.linalg.inv(previous) @ current
    poses = [current.copy()]
    for _ in range(k - 1):
        poses.append(poses[-1] @ step)
    return poses
