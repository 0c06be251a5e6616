"""ViewerState: everything the panels, the controller and the frame loop share, in one object.

The controller edits `camera`; the overlay edits `settings` and the display options; either sets `dirty`.
The frame loop renders when `dirty` is set and re-presents the last frame otherwise.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from renderer import Camera, RenderSettings, RenderStats

FOV_RANGE = (10.0, 120.0)  # the viewer's field-of-view control (vertical, degrees)

RENDER_MODES = ("rgb", "alpha", "heatmap", "depth")  # keys 1 2 3 4
RENDER_MODE_LABELS = {"rgb": "RGB", "depth": "depth", "alpha": "alpha", "heatmap": "Gaussians per tile"}


def viewer_settings() -> RenderSettings:
    """The viewer's starting settings: exact. A switch starts on only where it was measured faster than the exact
    frame on every bench path and its quality floor holds for the scenes a user opens. AdaGScale is now faster
    on every composite path (1.04-1.13x in alternated passes, BENCHMARKS.md section 31, since its projection
    shades each Gaussian once), but its 40 dB floor is measured on the bench's views only, and a view denser than
    the bench's 24M overview can take it under (its tau budget is a heuristic, not a bound), so it starts off, as
    temporal windows do (0.96-1.00x when asked for: the renderer declines them where they lose, but not for free).
    Each is a checkbox away."""
    return RenderSettings()


class FrameTimes:
    """Frame times in ms, each with when it was recorded (time.perf_counter() seconds) and a tag (how a render
    ran: `RenderStats.ran_label`): the newest `maxlen`.

    Iterating gives the times in ms, oldest first; `since(t0)` the samples the performance graph plots;
    `slowest_since(t0)` the worst of them with its tag.
    """

    def __init__(self, maxlen: int = 4096):  # 4096: 34 s of a 120 Hz window loop
        self.ms: collections.deque[float] = collections.deque(maxlen=maxlen)
        self.at: collections.deque[float] = collections.deque(maxlen=maxlen)
        self.tags: collections.deque[str] = collections.deque(maxlen=maxlen)

    def append(self, ms: float, at: float | None = None, tag: str = "") -> None:
        self.ms.append(float(ms))
        self.at.append(time.perf_counter() if at is None else at)
        self.tags.append(tag)

    def clear(self) -> None:
        self.ms.clear()
        self.at.clear()
        self.tags.clear()

    def __len__(self) -> int:
        return len(self.ms)

    def __iter__(self) -> Iterator[float]:
        return iter(self.ms)

    def since(self, t0: float) -> tuple[np.ndarray, np.ndarray]:
        """(when [K], ms [K]) of the samples recorded at t0 or later, oldest first."""
        at = np.fromiter(self.at, np.float64, len(self.at))
        first = int(np.searchsorted(at, t0))
        return at[first:], np.fromiter(self.ms, np.float64, len(self.ms))[first:]

    def slowest_since(self, t0: float) -> tuple[float, float, str] | None:
        """(ms, when, tag) of the slowest sample recorded at t0 or later; None when there is none."""
        at, ms = self.since(t0)
        if not ms.size:
            return None
        k = int(np.argmax(ms))
        return float(ms[k]), float(at[k]), self.tags[len(self.tags) - ms.size + k]


def keep_whole(path: str) -> str:
    """A file name for a message, its spaces made no-break spaces: the overlay wraps messages at spaces only,
    so a name is never split across lines (the overlay's font draws U+00A0 as a space)."""
    return path.replace(" ", "\u00a0")


def error_reason(e: BaseException, path: str | None = None) -> str:
    """One line saying what went wrong, for a message that names `path` itself (when given): without the path
    the readers' messages start with ("PATH: unknown scene format" -> "unknown scene format"); an OSError as its
    file (unless that is `path`) and strerror, without "[Errno N]"."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror if e.filename in (None, path) else f"{keep_whole(str(e.filename))}: {e.strerror}"
    text = " ".join(str(e).split())
    if path is not None and text.startswith(f"{path}:"):
        return text[len(path) + 1 :].lstrip()
    return text


@dataclass
class ViewerState:
    """Shared viewer state.

    Attributes:
        camera: the view at window resolution (frames render at `camera.resized(...)` of it).
        settings: renderer settings; the overlay edits them in place and sets `dirty`.
        render_scale: render resolution / window resolution when the view is still.
        moving_scale: the same while the camera moves (CPU rendering stays interactive at a lower one).
        render_mode: one of RENDER_MODES.
        dirty: something changed since the last rendered frame.
        moving: the camera moved in the last `settle_s` seconds (renders use `moving_scale`).
        vsync: swap interval 1 (True) or 0; off shows the true frame rate.
        display_path: which upload path is live ("CUDA-GL interop" or "host upload"), and why.
    """

    camera: Camera
    settings: RenderSettings = field(default_factory=RenderSettings)
    render_scale: float = 1.0
    moving_scale: float = 1.0
    render_mode: str = "rgb"
    dirty: bool = True
    moving: bool = False
    vsync: bool = True
    show_overlay: bool = True
    show_help: bool = False
    screenshot_requested: bool = False
    camera_jumped: bool = False  # set by snaps and resets: temporal reuse starts over at the next frame
    output_dir: str = "."  # screenshots and saved camera paths
    display_path: str = ""
    render_device: str = ""
    # statistics of the last finished frame
    stats: RenderStats | None = None
    stage_ms: dict[str, float] = field(default_factory=dict)  # previous frame's per-stage times
    render_size: tuple[int, int] = (0, 0)
    temporal: dict = field(default_factory=dict)  # the renderer's temporal reuse counters (hit rates)
    depth_range: tuple[float, float] | None = None  # (near, far) of the depth view on screen, for its legend
    frame_ms: FrameTimes = field(default_factory=FrameTimes)  # the window loop's frames
    render_ms: FrameTimes = field(default_factory=FrameTimes)  # finished renders
    message: str = ""  # one status line (saved files, snaps, errors); file names in it through keep_whole
    kernel_status: str = ""  # the kernel warm-up's progress (app/warmup.py)

    def mark_dirty(self) -> None:
        self.dirty = True

    def current_scale(self) -> float:
        return min(self.moving_scale, self.render_scale) if self.moving else self.render_scale

    def render_size_for(self, width: int, height: int) -> tuple[int, int]:
        """Render resolution for a window size at the current scale (at least 1x1)."""
        s = self.current_scale()
        return max(1, round(width * s)), max(1, round(height * s))
