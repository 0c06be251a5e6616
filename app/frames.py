"""Producing display frames: render a request, turn the output into the RGBA8 image of the chosen mode.

On CUDA a frame renders in the window's thread (a few ms) and its stage times are read a frame later from the
CUDA events (never a blocking sync). On the CPU one frame takes 0.3-5 s at a few hundred pixels across, so
frames render in a worker thread: the window keeps handling input and drawing the overlay while a frame is in
flight, and the newest request replaces any that has not started (torch releases the GIL inside its ops).
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass, replace

import torch

from renderer import Camera, Renderer, RenderSettings, RenderStats, StageTimer

# Heat-map colours from few (dark blue) to many (yellow-white) Gaussians per tile.
HEAT_COLORS = [
    (0, 0, 4), (40, 11, 84), (101, 21, 110), (159, 42, 99),
    (212, 72, 66), (245, 125, 21), (250, 193, 39), (252, 255, 164),
]  # fmt: skip


@dataclass
class FrameRequest:
    camera: Camera  # at render resolution
    settings: RenderSettings
    mode: str  # "rgb" | "alpha" | "depth" | "heatmap"
    serial: int
    jump: bool = False  # the camera jumped (snap, reset): temporal reuse must not carry anything over


@dataclass
class Frame:
    """A finished frame: the image to show and what it cost."""

    rgba8: torch.Tensor  # [H, W, 4] uint8 on the render device (a view of the workspace in "rgb" mode)
    request: FrameRequest
    stats: RenderStats
    timer: StageTimer | None  # per-stage times, readable once the device has finished
    wall_ms: float  # host time spent in render() (on CUDA: launch time, not GPU time)
    host_counts: torch.Tensor | None = None  # [1] int64 the longest tile list, in pinned host memory, valid once
    # `copied` is done (the visible count is in `stats` already: the frame's own counts, read on the host)
    copied: torch.cuda.Event | None = None  # recorded after the copy of host_counts (CUDA only)
    depth_range: tuple[float, float] | None = None  # (near, far) the depth view's colours span ("depth" mode)

    def host_counts_ready(self) -> bool:
        return self.host_counts is not None and (self.copied is None or bool(self.copied.query()))


def heat_map(tile_counts: torch.Tensor, width: int, height: int, tile: int) -> torch.Tensor:
    """[n_ty, n_tx] Gaussians per tile -> [H, W, 4] uint8, log scale, normalised by the busiest tile on the
    device (no host sync)."""
    x = torch.log1p(tile_counts.float())
    x = x / x.max().clamp_min(1e-6)
    rgba = palette_image(x)  # [n_ty, n_tx, 4]: one colour per tile, then blown up to the tiles' pixels
    return rgba.repeat_interleave(tile, 0).repeat_interleave(tile, 1)[:height, :width].contiguous()


def palette_image(x: torch.Tensor) -> torch.Tensor:
    """[H, W] values in [0, 1] -> [H, W, 4] uint8 through HEAT_COLORS (0 dark, 1 bright), linearly blended."""
    palette = torch.tensor(HEAT_COLORS, dtype=torch.float32, device=x.device)  # [P, 3]
    pos = x * (len(HEAT_COLORS) - 1)
    i0 = pos.floor().long().clamp(0, len(HEAT_COLORS) - 2)
    f = (pos - i0)[..., None]
    rgb = palette[i0] * (1 - f) + palette[i0 + 1] * f
    out = torch.empty(*x.shape, 4, dtype=torch.uint8, device=x.device)
    out[..., :3] = (rgb + 0.5).clamp(0, 255).to(torch.uint8)
    out[..., 3] = 255
    return out


# The depth view shows pixels at least this covered. The expected depth is the colour pass's depth-weighted
# sum divided by alpha: where alpha is small that quotient is the depth of a faint floater, drawn as solid as
# a surface (in one fly-through frame, 11% of the pixels had alpha under 10/255 and showed as discs RGB hides).
DEPTH_MIN_COVERAGE = 0.5
# Depth runs from the palette's second colour (far) to its last (near); black is kept for "no depth shown".
DEPTH_FAR_COLOUR = 1.0 / (len(HEAT_COLORS) - 1)


def depth_image(depth: torch.Tensor, alpha: torch.Tensor, near_far: tuple[float, float] | None = None) -> torch.Tensor:
    """[H, W] expected depth -> [H, W, 4] uint8: inverse depth between near and far through the heat-map
    palette from DEPTH_FAR_COLOUR (far, dark) to its end (near, bright); pixels covered less than
    DEPTH_MIN_COVERAGE are black. near_far defaults to this frame's 2nd and 98th percentiles of the covered
    pixels' depth (a strided sample of at most ~64k pixels)."""
    if near_far is None:
        near_far = depth_range(depth, alpha)
    near, far = near_far
    inv = (1.0 / depth.clamp_min(1e-6) - 1.0 / far) / (1.0 / near - 1.0 / far)
    image = palette_image(DEPTH_FAR_COLOUR + (1.0 - DEPTH_FAR_COLOUR) * inv.clamp(0, 1))
    image[..., :3] *= (alpha >= DEPTH_MIN_COVERAGE)[..., None].to(torch.uint8)
    return image


def depth_range(depth: torch.Tensor, alpha: torch.Tensor) -> tuple[float, float]:
    """(near, far): the 2nd and 98th percentiles of the covered pixels' depth (a host sync)."""
    step = max(1, depth.numel() // 65536)
    d = depth.reshape(-1)[::step]
    d = d[alpha.reshape(-1)[::step] >= DEPTH_MIN_COVERAGE]
    if d.numel() < 2:
        return 1.0, 2.0
    q = torch.quantile(d.float(), torch.tensor([0.02, 0.98], device=d.device)).tolist()
    near = max(q[0], 1e-4)
    return near, max(q[1], near * 1.01)


def alpha_image(alpha: torch.Tensor) -> torch.Tensor:
    """[H, W] coverage in [0, 1] -> [H, W, 4] uint8 grey."""
    a = (alpha.clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    return torch.stack([a, a, a, torch.full_like(a, 255)], dim=-1)


# The images each display mode reads (`RenderSettings.outputs`): the colour view the 8-bit image alone, 4 bytes a
# pixel where all three outputs take 20 (the heat map reads none of them: the smallest); the coverage and depth views
# the float coverage. A frame in flight keeps its own: at 3840x2160 the colour view holds 66 MB of images, not 332.
MODE_OUTPUTS = {"rgb": "rgba8", "heatmap": "rgba8", "alpha": "float", "depth": "float"}


def mode_settings(settings: RenderSettings, mode: str) -> RenderSettings:
    """The settings a display mode renders with: the outputs it reads (MODE_OUTPUTS), and depth for the depth view.
    The warm-up takes the same (app/warmup.py), so each mode's kernels are the ones it compiled."""
    return replace(settings, outputs=MODE_OUTPUTS[mode], depth=mode == "depth")


def render_frame(renderer: Renderer, request: FrameRequest, *, sync_stats: bool, copy: bool) -> Frame:
    """Render one request and convert it to its display mode. `copy` detaches the image from the renderer's
    workspace (needed when the next frame may render before this one is shown)."""
    t0 = time.perf_counter()
    settings = mode_settings(request.settings, request.mode)
    if request.jump:
        renderer.temporal.invalidate()
    out = renderer.render(request.camera, settings, sync_stats=sync_stats)
    cam = request.camera
    near_far = None
    if request.mode == "alpha":
        image = alpha_image(out.alpha)
    elif request.mode == "depth":
        near_far = depth_range(out.depth, out.alpha)
        image = depth_image(out.depth, out.alpha, near_far)
    elif request.mode == "heatmap":
        image = heat_map(out.tile_counts, cam.width, cam.height, request.settings.tile_size)
    else:
        assert out.rgba8 is not None
        image = out.rgba8.clone() if copy else out.rgba8
    counts, copied = None, None
    if not sync_stats:  # the longest tile list without a sync: copied to the host and read a frame later. The
        # visible count is the frame's own (`RenderStats.n_visible`, read on the host with its counts): counting the
        # tile counts again was a pass over every Gaussian a frame, 96 MB of a 24M-Gaussian scene
        counts = out.tile_counts.max().to(torch.int64).reshape(1)
        if counts.is_cuda:
            pinned = torch.empty(1, dtype=counts.dtype, pin_memory=True)
            pinned.copy_(counts, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record()
            counts = pinned
    wall_ms = (time.perf_counter() - t0) * 1e3
    return Frame(image, request, out.stats, renderer.last_timer, wall_ms, counts, copied, near_far)


def supersede(pending: FrameRequest | None, newer: FrameRequest) -> FrameRequest:
    """The request that replaces an unstarted one: the newer, keeping a jump the dropped one carried."""
    return replace(newer, jump=True) if pending is not None and pending.jump else newer


class FrameProducer:
    """Renders requests in the caller's thread (`threaded=False`) or in one worker thread.

    `request()` hands over the newest request (an unstarted older one is dropped); `poll()` returns a finished
    frame once, or None.
    """

    def __init__(self, renderer: Renderer, *, threaded: bool):
        self.renderer = renderer
        self.threaded = threaded
        self.sync_stats = renderer.device.type != "cuda"  # free on the CPU; a sync on the GPU
        self._cv = threading.Condition()
        self._pending: FrameRequest | None = None
        self._done: Frame | None = None
        self._busy = False
        self._closed = False
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._run, name="warpsplat-render", daemon=True)
            self._thread.start()

    @property
    def busy(self) -> bool:
        """A request is queued or rendering."""
        with self._cv:
            return self._busy or self._pending is not None

    def request(self, request: FrameRequest) -> None:
        request = replace(request, settings=replace(request.settings))  # the overlay edits its copy
        if not self.threaded:
            self._done = render_frame(self.renderer, request, sync_stats=self.sync_stats, copy=False)
            return
        with self._cv:
            self._pending = supersede(self._pending, request)
            self._cv.notify()

    def poll(self) -> Frame | None:
        with self._cv:
            if self.error is not None:
                err, self.error = self.error, None
                raise err
            frame, self._done = self._done, None
            return frame

    def wait(self, timeout: float = 60.0) -> bool:
        """Block until nothing is queued or rendering (tests, screenshots). False on timeout."""
        end = time.monotonic() + timeout
        with self._cv:
            while self._busy or self._pending is not None:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._pending = None
            self._cv.notify_all()
        if self._thread is not None:
            # a CPU frame in flight may take seconds: do not hold up closing the window for it (the thread
            # touches no GL, so it can finish after the window is gone). The process must wait for it, though:
            # at exit Python stops a daemon thread that is inside a torch op by unwinding through C++, which
            # aborts ("terminate called without an active exception", exit code 134), so join it at exit.
            self._thread.join(timeout=0.5)
            if self._thread.is_alive():
                atexit.register(self._thread.join)

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._pending is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                request, self._pending = self._pending, None
                self._busy = True
            try:
                frame = render_frame(self.renderer, request, sync_stats=self.sync_stats, copy=True)
            except Exception as e:  # surfaced in the window's thread by poll()
                with self._cv:
                    self.error = e
                    self._busy = False
                    self._cv.notify_all()
                continue
            with self._cv:
                self._done = frame
                self._busy = False
                self._cv.notify_all()
