"""Rendering a camera path's frames: the jobs `warpsplat render` plans, run in this process or one spawned
worker per GPU, each writing PNG frames and/or H.264 parts on a writer thread; then stitching and the closing
summary. No argument parsing here (tools/render.py) and no window or GL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .cli import CliError
from .common import open_scene
from .metrics import percentile
from .video import DEFAULT_PRESET, DEFAULT_THREADING, DEFAULT_THREADS


@dataclass
class Job:
    """Everything a worker needs to render its frames (picklable: it crosses a process boundary)."""

    scene: str | None
    up: str | None
    backend: str
    settings: object  # RenderSettings (background, switches), the same for every frame
    cameras: list  # [Camera] of this job's frames
    indices: list[int]  # frame numbers of `cameras`
    folder: str | None = None  # PNG frames go here
    video: str | None = None  # H.264 of these frames, at this (temporary) path
    alpha_video: str | None = None
    depth_video: str | None = None
    depth_range: tuple[float, float] = (1.0, 2.0)  # (near, far) of the depth video's grey scale
    fps: float = 30.0
    crf: int = 18
    preset: str = DEFAULT_PRESET
    encoder_threads: int = DEFAULT_THREADS  # x264 threads per video; 0 = libx264 chooses
    encoder_threading: str = DEFAULT_THREADING  # "frame" or "slice" (tools.video.THREADINGS)
    pad_odd: bool = False
    transparent: bool = False  # PNG frames with straight alpha (`straight_rgba8`)
    frame_names: list[str] | None = None  # the PNG name of each of `indices`' frames (default `frame_name`)
    device: str | None = None
    threads: int | None = None


@dataclass
class FrameTimes:
    """Per-frame timings collected for the closing summary."""

    stage_ms: list[dict[str, float]] = field(default_factory=list)  # the renderer's per-stage times, per frame
    write_ms: list[float] = field(default_factory=list)  # PNG + encoding time per frame (writer thread)
    wait_s: float = 0.0  # time the render loop spent waiting for the writer to free a host buffer


def frame_name(i: int) -> str:
    return f"frame_{i:05d}.png"


def _plane(what: str, rgba: np.ndarray, depth8: np.ndarray | None) -> np.ndarray:
    """The [H, W, 3] uint8 picture one video of a frame shows: its colour, its coverage or its depth (grey).
    Colour is the RGBA frame itself: the encoder ignores alpha, and a slice without it would be copied."""
    if what == "rgb":
        return rgba
    return np.repeat(rgba[..., 3:] if what == "alpha" else depth8[..., None], 3, axis=2)


def depth_grey(depth, alpha, near_far: tuple[float, float]):
    """[H, W] expected depth -> [H, W] uint8: linear from near (255) to far (1); uncovered pixels 0."""
    import torch

    near, far = near_far
    x = (far - depth) / (far - near)
    grey = (x.clamp(0, 1) * 254 + 1.5).to(torch.uint8)
    return torch.where(alpha >= 1.0 / 255.0, grey, torch.zeros_like(grey))


def path_depth_range(scene, cams) -> tuple[float, float]:
    """(near, far) for a whole path's depth video: the closest and farthest any camera is from the scene's
    robust box (1st-99th percentile), so every frame uses the same grey scale."""
    lo, hi = (v.double().numpy() for v in scene.robust_bounds())
    centre, radius = 0.5 * (lo + hi), 0.5 * float(np.linalg.norm(hi - lo))
    dist = np.array([np.linalg.norm(c.position - centre) for c in cams])
    near = max(float(dist.min()) - radius, 0.0)
    return near, max(float(dist.max()) + radius, near + 1e-6)


def frame_rgba8(out):
    """[H, W, 4] uint8 tensor of a frame, where the renderer keeps it (a view of its workspace, reused by the
    next frame), or built from the float image when the renderer made none."""
    if out.rgba8 is not None:
        return out.rgba8
    import torch

    rgb = (out.image.clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    a = (out.alpha.clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    return torch.cat([rgb, a[..., None]], dim=-1)


def straight_rgba8(out):
    """[H, W, 4] uint8 tensor of a frame rendered over a zero background, its colour unpremultiplied (what a PNG's
    alpha channel means): colour / coverage from the float image, so faint pixels keep their colour's precision.
    Pixels whose 8-bit alpha is 0 are black."""
    import torch

    alpha = out.alpha.clamp(0, 1)
    a8 = (alpha * 255 + 0.5).to(torch.uint8)
    rgb = (out.image / alpha.clamp(min=1e-12)[..., None]).clamp(0, 1)
    rgb8 = torch.where(a8[..., None] > 0, (rgb * 255 + 0.5).to(torch.uint8), torch.zeros_like(a8)[..., None])
    return torch.cat([rgb8, a8[..., None]], dim=-1)


def to_rgba8(out):
    """[H, W, 4] uint8 numpy copy of a frame (the renderer's buffers are reused by the next frame)."""
    rgba8 = frame_rgba8(out)
    host = rgba8.cpu()
    if host.data_ptr() == rgba8.data_ptr():  # already on the host: the workspace itself
        host = host.clone()
    return host.numpy()


@dataclass
class _Slot:
    """One frame's host copy, in flight from the render thread to the writer thread."""

    rgba: object  # [H, W, 4] uint8 tensor on the host, pinned when the frames come from CUDA
    depth: object | None  # [H, W] uint8 tensor (depth video) or None
    ready: object = None  # torch.cuda.Event recorded after the copy into this slot; None on the CPU
    device: object = None  # the CUDA device that event belongs to
    index: int = -1  # frame number


def _encoder_error(e: BaseException) -> BaseException:
    """An FFmpeg failure as a one-line user error. FFmpeg's OSErrors (a full disk) already are one: the command
    prints any OSError as its file and reason."""
    import av

    if isinstance(e, av.FFmpegError) and not isinstance(e, OSError):
        return CliError(f"H.264 encoding failed: {getattr(e, 'strerror', None) or e}")
    return e


class FrameSink:
    """Writes a job's frames (PNG files and/or H.264 videos) on a background thread, so the render loop does not
    wait for the encoder while a host buffer is free.

    Each frame is copied from the renderer's buffer into one of SLOTS host buffers. From CUDA the copy is
    asynchronous, into pinned memory, followed by a CUDA event: the render thread goes straight on to queue the
    next frame behind the copy (stream order keeps the renderer from overwriting its buffer first), and the
    writer thread waits for the event, converts and encodes from the slot, then hands it back. The render thread
    blocks only when every slot is still waiting for the writer, that is when the encoder is slower than the
    renderer; that time is counted (`wait_s`), so the summary can say which of the two bounds a render. PyAV
    releases the GIL while it converts and encodes, and x264 runs its own threads.

    NOTE: on one H200 (16 cores), 600 frames of 1920x1080 at crf 18, preset medium, PyAV's slice threading:
    rendering 3.3 s, encoding 21.3 s (BENCHMARKS.md, section 4): the encoder bounds such a render.
    tests/gpu/video_bench.py measures the presets and thread settings.
    """

    SLOTS = 4  # host frame buffers: bounds memory (4 x 8 MB at 1080p RGBA) while letting the encoder lag a little

    def __init__(self, job: Job):
        import queue
        import threading

        from .video import Mp4Writer

        self.folder = job.folder
        names = dict(zip(job.indices, job.frame_names, strict=True)) if job.frame_names else {}
        self.name = lambda index: names.get(index) or frame_name(index)
        self.png_channels = 4 if job.transparent else 3  # RGBA where the alpha is straight (`straight_rgba8`)
        self.writers: list[tuple[Mp4Writer, str]] = []
        w, h = job.cameras[0].width, job.cameras[0].height
        opts = dict(
            crf=job.crf,
            preset=job.preset,
            threads=job.encoder_threads,
            threading=job.encoder_threading,
            pad_odd=job.pad_odd,
        )
        try:
            for path, what in ((job.video, "rgb"), (job.alpha_video, "alpha"), (job.depth_video, "depth")):
                if path:
                    self.writers.append((Mp4Writer(path, w, h, job.fps, temp_path=path, **opts), what))
        except BaseException:
            self.abort()
            raise
        self.write_ms: list[float] = []
        self.wait_s = 0.0
        self.error: BaseException | None = None
        self._slots_made = 0
        self._free: queue.Queue = queue.Queue()  # slots the writer has finished with
        self._queue: queue.Queue = queue.Queue()  # slots to write, in frame order; None ends the thread
        self._thread = threading.Thread(target=self._loop, name="frame-writer", daemon=True)
        self._thread.start()

    def put(self, index: int, rgba, depth8=None) -> None:
        """Queue frame `index`: [H, W, 4] uint8 and, for a depth video, [H, W] uint8 grey (tensors on the
        renderer's device; the sink copies them, so the renderer may reuse its buffers for the next frame).
        Returns once the copy is queued; blocks while every host buffer waits for the writer."""
        import torch

        slot = self._free_slot()
        if slot is None:  # fewer than SLOTS made yet
            pin = rgba.is_cuda  # pinned: the only memory a device-to-host copy can fill asynchronously
            depth = None if depth8 is None else torch.empty(depth8.shape, dtype=torch.uint8, pin_memory=pin)
            slot = _Slot(torch.empty(rgba.shape, dtype=torch.uint8, pin_memory=pin), depth)
        if rgba.is_cuda:
            with torch.cuda.device(rgba.device):  # the copy and the event on the stream that rendered the frame
                slot.rgba.copy_(rgba, non_blocking=True)
                if depth8 is not None:
                    slot.depth.copy_(depth8, non_blocking=True)
                slot.ready = torch.cuda.Event(blocking=True)  # the writer sleeps on it rather than spin a core
                slot.ready.record()
                slot.device = rgba.device
        else:
            slot.rgba.copy_(rgba)
            if depth8 is not None:
                slot.depth.copy_(depth8)
        slot.index = index
        self._queue.put(slot)

    def _free_slot(self) -> _Slot | None:
        """A slot the writer has finished with, None to make a new one, or wait (counted in wait_s); raises the
        writer's error if it has failed."""
        import queue

        if self.error is not None:
            raise self.error
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        if self._slots_made < self.SLOTS:
            self._slots_made += 1
            return None
        t0 = time.perf_counter()
        try:
            while True:
                if self.error is not None:
                    raise self.error
                try:
                    return self._free.get(timeout=0.1)
                except queue.Empty:
                    continue
        finally:
            self.wait_s += time.perf_counter() - t0

    def _loop(self) -> None:
        import torch
        from PIL import Image

        from scenes.atomic import atomic_write

        while True:
            slot = self._queue.get()
            if slot is None or self.error is not None:
                return
            try:
                if slot.ready is not None:
                    with torch.cuda.device(slot.device):
                        slot.ready.synchronize()  # the frame's copy has landed
                t0 = time.perf_counter()
                rgba = slot.rgba.numpy()
                depth8 = None if slot.depth is None else slot.depth.numpy()
                if self.folder is not None:
                    with atomic_write(os.path.join(self.folder, self.name(slot.index))) as f:
                        Image.fromarray(np.ascontiguousarray(rgba[..., : self.png_channels])).save(f, format="PNG")
                for writer, what in self.writers:
                    writer.write(_plane(what, rgba, depth8))
            except BaseException as e:  # handed to the rendering thread, which raises it
                self.error = _encoder_error(e)
                return
            self.write_ms.append((time.perf_counter() - t0) * 1e3)
            self._free.put(slot)

    def finish(self) -> None:
        """Write what is queued, flush the encoders; video files stay at their temporary names."""
        self._queue.put(None)
        self._thread.join()
        if self.error is not None:
            raise self.error
        try:
            for writer, _ in self.writers:
                writer.finish()  # the caller renames (single job) or stitches (chunks)
        except BaseException as e:
            raise _encoder_error(e) from None

    def abort(self) -> None:
        """Stop the writer thread and remove partial video files."""
        self.error = self.error or KeyboardInterrupt()
        thread = getattr(self, "_thread", None)
        if thread is not None:
            with contextlib.suppress(Exception):
                while True:  # drop what is queued so the thread sees the stop
                    self._queue.get_nowait()
            with contextlib.suppress(Exception):
                self._queue.put_nowait(None)
            thread.join(10)
        for writer, _ in self.writers:
            writer.abort()


def render_job(job: Job, on_frame=None, scene=None) -> FrameTimes:
    """Render and write one job's frames (in this process); `on_frame(stage_ms)` after each frame rendered.
    `scene`: the scene if already loaded (else the job's file is read). Returns the frames' timings."""
    import torch

    from renderer import Renderer
    from renderer.warmup import warm_up

    if job.threads:
        torch.set_num_threads(job.threads)
    if scene is None:
        scene = open_scene(job.scene, job.up)
    cam = job.cameras[0]
    renderer = Renderer(scene, device=job.device, backend=job.backend, frame_size=(cam.width, cam.height))
    # the video takes the 8-bit image alone (4 bytes a pixel in each of the two frames in flight, where the three
    # outputs take 20); the depth video's frames need the float coverage that the depth divides by, and transparent
    # frames the float image and coverage that their straight colour is computed from
    if job.depth_video:
        settings = replace(job.settings, depth=True, outputs="both")
    else:
        settings = replace(job.settings, outputs="float" if job.transparent else "rgba8")
    warm_up(renderer, [(cam.width, cam.height)], [settings])  # every kernel the path may need, before its frames
    stage_ms = []
    sink = FrameSink(job)
    try:
        window = settings.temporal_window
        # the path is known: temporal reuse gets the exact cameras of the frames ahead
        futures = [job.cameras[j + 1 : j + window] if window > 1 else None for j in range(len(job.cameras))]
        # one frame in flight while the one before is handed to the writer (Renderer.render_stream)
        frames = renderer.render_stream(job.cameras, settings, futures)
        for i, out in zip(job.indices, frames, strict=True):
            depth8 = depth_grey(out.depth, out.alpha, job.depth_range) if job.depth_video else None
            sink.put(i, straight_rgba8(out) if job.transparent else frame_rgba8(out), depth8)
            stage_ms.append(out.timer.elapsed_ms(wait=True) or {})
            if on_frame is not None:
                on_frame(stage_ms[-1])
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    return FrameTimes(stage_ms, sink.write_ms, sink.wait_s)


def _worker(rank: int, jobs: list[Job], queue) -> None:
    """Entry point of a spawned worker: render jobs[rank], reporting each frame, then its write times."""
    times = render_job(jobs[rank], on_frame=lambda stage_ms: queue.put(("frame", dict(stage_ms))))
    queue.put(("done", (times.write_ms, times.wait_s)))


def run_workers(jobs: list[Job], on_frame) -> FrameTimes:
    """One spawned process per job (torch.multiprocessing); frames are reported through a queue."""
    import queue as queue_mod

    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    times = FrameTimes()

    def drain(block: bool) -> None:
        while True:
            try:
                kind, payload = q.get(timeout=0.05) if block else q.get_nowait()
            except queue_mod.Empty:
                return
            if kind == "frame":
                times.stage_ms.append(payload)
                on_frame(payload)
            else:
                times.write_ms.extend(payload[0])
                times.wait_s += payload[1]
            block = False

    # Ctrl-C reaches the whole process group. Workers still importing torch printed a KeyboardInterrupt traceback
    # each, so they start with SIGINT blocked (a signal mask is inherited, and kept across exec) and this process
    # stops them instead. Here a Ctrl-C during the start is only noted (another thread of this process may take the
    # signal, so the mask alone would not hold it back), then raised once every worker has a handle to stop it by.
    context = None
    try:
        with _interrupts_deferred():
            context = mp.start_processes(_worker, args=(jobs, q), nprocs=len(jobs), join=False, start_method="spawn")
        while not context.join(timeout=0.05):
            drain(block=True)
        drain(block=False)
    except BaseException:
        for p in context.processes if context is not None else ():  # the workers this call started, by handle
            if p.is_alive():
                p.terminate()
        for p in context.processes if context is not None else ():
            p.join(5)
        raise
    return times


@contextlib.contextmanager
def _interrupts_deferred():
    """Within: SIGINT is blocked in this thread (processes started inherit that) and a Ctrl-C is only noted, and so
    is a SIGTERM (not blocked: the workers stay stoppable by it); on leaving, a noted Ctrl-C raises KeyboardInterrupt
    and a noted SIGTERM is raised again, for the handler that was in place (`warpsplat render`'s raises
    KeyboardInterrupt): either way once every worker started has a handle to stop it by. A SIGTERM that raised in the
    middle of the start left the workers started so far running. Off the main thread, or without signal masks,
    nothing changes."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    noted = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: noted.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one pending on this thread raises here or is noted
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
    if signal.SIGTERM in noted:
        signal.raise_signal(signal.SIGTERM)  # its own handler again (the default ends the process here)
    if signal.SIGINT in noted:
        raise KeyboardInterrupt


def finish_video(parts: list[str], out: str) -> None:
    """One part: rename it. Several: remux them into `out` without re-encoding."""
    from scenes.atomic import naming_output, set_usual_permissions

    from .video import concat_mp4

    try:
        if len(parts) == 1:
            os.replace(parts[0], out)
        else:
            concat_mp4(parts, out)
    except OSError as e:
        raise naming_output(e, out) from None
    set_usual_permissions(out)


def summary(times: FrameTimes, n: int, wall_s: float, all_s: float, stitch_s: float, workers: int) -> str:
    """Per-stage frame-time statistics (median / p90 / max ms) and the end-to-end rate."""

    def stats(vals: list[float]) -> str:
        return f"{statistics.median(vals):9.2f} {percentile(vals, 90):9.2f} {max(vals):9.2f}"

    stages = [k for k in times.stage_ms[0] if k != "total"] if times.stage_ms else []
    lines = [f"{'ms per frame':<14}{'median':>9} {'p90':>9} {'max':>9}"]
    for k in stages:
        lines.append(f"  {k:<12}{stats([s.get(k, 0.0) for s in times.stage_ms])}")
    if times.stage_ms:
        lines.append(f"  {'render':<12}{stats([s.get('total', 0.0) for s in times.stage_ms])}")
    if times.write_ms:
        lines.append(f"  {'encode/write':<12}{stats(times.write_ms)}")
    render_s = sum(s.get("total", 0.0) for s in times.stage_ms) / 1e3
    write_s = sum(times.write_ms) / 1e3
    # the render loop waits only when every host buffer is still queued for the writer: a render that waited
    # for a tenth of its time or more is paced by the writer (the encoder), else by rendering
    bound = "encoding/writing" if times.wait_s >= 0.1 * wall_s * workers else "rendering"
    lines.append(
        f"{n} frames in {wall_s:.2f} s = {n / max(wall_s, 1e-9):.2f} frames/s end to end "
        f"({all_s:.2f} s with scene load and start-up); rendering {render_s:.2f} s, encoding/writing "
        f"{write_s:.2f} s on a writer thread overlapping it; the render loop waited {times.wait_s:.2f} s for the "
        f"writer, so {bound} bounds this render"
        + (f"; {workers} workers (times summed over them), stitched in {stitch_s:.2f} s" if workers > 1 else "")
    )
    return "\n".join(lines)
