"""Rendering a camera path's frames: the jobs `warpsplat render` plans, run in this process or one spawned
worker per GPU, each writing PNG frames and/or H.264 parts on a writer thread; then stitching and the closing
summary. No argument parsing here (tools/render.py) and no window or GL.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .common import open_scene
from .metrics import percentile


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
    preset: str = "medium"
    pad_odd: bool = False
    device: str | None = None
    threads: int | None = None


@dataclass
class FrameTimes:
    """Per-frame timings collected for the closing summary."""

    stage_ms: list[dict[str, float]] = field(default_factory=list)  # the renderer's per-stage times, per frame
    write_ms: list[float] = field(default_factory=list)  # PNG + encoding time per frame (writer thread)


def frame_name(i: int) -> str:
    return f"frame_{i:05d}.png"


def _plane(what: str, rgba: np.ndarray, depth8: np.ndarray | None) -> np.ndarray:
    """The [H, W, 3] uint8 picture one video of a frame shows: its colour, its coverage or its depth (grey)."""
    if what == "rgb":
        return rgba[..., :3]
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


def to_rgba8(out):
    """[H, W, 4] uint8 numpy copy of a frame (the renderer's buffers are reused by the next frame)."""
    if out.rgba8 is not None:
        host = out.rgba8.cpu()
        if host.data_ptr() == out.rgba8.data_ptr():  # already on the host: the workspace itself
            host = host.clone()
        return host.numpy()
    import torch

    rgb = (out.image.clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    a = (out.alpha.clamp(0, 1) * 255 + 0.5).to(torch.uint8)
    return torch.cat([rgb, a[..., None]], dim=-1).cpu().numpy()


class FrameSink:
    """Writes a job's frames (PNG files and/or H.264 videos) on a background thread, so encoding overlaps
    the rendering of the next frames. PyAV releases the GIL while it converts and encodes.

    NOTE: measured on the 2-core CPU machine, 1920x1080 crf 18 preset medium encodes at ~25 frames/s (one
    encoder, machine shared), slower than a GPU renders; the thread hides it up to the encoder's own rate.
    """

    QUEUE = 4  # frames in flight: bounds memory (4 x 8 MB at 1080p RGBA) while letting the encoder lag a little

    def __init__(self, job: Job):
        import queue
        import threading

        from .video import Mp4Writer

        self.folder = job.folder
        self.writers: list[tuple[Mp4Writer, str]] = []
        w, h = job.cameras[0].width, job.cameras[0].height
        opts = dict(crf=job.crf, preset=job.preset, pad_odd=job.pad_odd)
        try:
            if job.video:
                self.writers.append((Mp4Writer(job.video, w, h, job.fps, temp_path=job.video, **opts), "rgb"))
            if job.alpha_video:
                writer = Mp4Writer(job.alpha_video, w, h, job.fps, temp_path=job.alpha_video, **opts)
                self.writers.append((writer, "alpha"))
            if job.depth_video:
                writer = Mp4Writer(job.depth_video, w, h, job.fps, temp_path=job.depth_video, **opts)
                self.writers.append((writer, "depth"))
        except BaseException:
            self.abort()
            raise
        self.write_ms: list[float] = []
        self.error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue(maxsize=self.QUEUE)
        self._thread = threading.Thread(target=self._loop, name="frame-writer", daemon=True)
        self._thread.start()

    def put(self, index: int, rgba: np.ndarray, depth8: np.ndarray | None = None) -> None:
        """Queue frame `index` ([H, W, 4] uint8 and, for a depth video, [H, W] uint8 grey; owned by the sink from
        now on); blocks while the queue is full."""
        import queue

        while True:
            if self.error is not None:
                raise self.error
            try:
                self._queue.put((index, rgba, depth8), timeout=0.1)
                return
            except queue.Full:
                continue

    def _loop(self) -> None:
        from PIL import Image

        from scenes.atomic import atomic_write

        while True:
            item = self._queue.get()
            if item is None or self.error is not None:
                return
            index, rgba, depth8 = item
            t0 = time.perf_counter()
            try:
                if self.folder is not None:
                    with atomic_write(os.path.join(self.folder, frame_name(index))) as f:
                        Image.fromarray(np.ascontiguousarray(rgba[..., :3])).save(f, format="PNG")
                for writer, what in self.writers:
                    writer.write(_plane(what, rgba, depth8))
            except BaseException as e:  # handed to the rendering thread, which raises it
                self.error = e
                return
            self.write_ms.append((time.perf_counter() - t0) * 1e3)

    def finish(self) -> None:
        """Write what is queued, flush the encoders; video files stay at their temporary names."""
        self._queue.put(None)
        self._thread.join()
        if self.error is not None:
            raise self.error
        for writer, _ in self.writers:
            writer.finish()  # the caller renames (single job) or stitches (chunks)

    def abort(self) -> None:
        """Stop the writer thread and remove partial video files."""
        self.error = self.error or KeyboardInterrupt()
        thread = getattr(self, "_thread", None)
        if thread is not None:
            with contextlib.suppress(Exception):
                while True:  # unblock a full queue so the thread sees the stop
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

    if job.threads:
        torch.set_num_threads(job.threads)
    if scene is None:
        scene = open_scene(job.scene, job.up)
    renderer = Renderer(scene, device=job.device, backend=job.backend)
    settings = replace(job.settings, depth=True) if job.depth_video else job.settings
    stage_ms = []
    sink = FrameSink(job)
    try:
        window = settings.temporal_window
        for j, (i, cam) in enumerate(zip(job.indices, job.cameras, strict=True)):
            # the path is known: temporal reuse gets the exact cameras of the frames ahead
            future = job.cameras[j + 1 : j + window] if window > 1 else None
            out = renderer.render(cam, settings, future=future)
            depth8 = depth_grey(out.depth, out.alpha, job.depth_range).cpu().numpy() if job.depth_video else None
            sink.put(i, to_rgba8(out), depth8)  # host copies: the renderer reuses its buffers next frame
            stage_ms.append(dict(out.stats.stage_ms))
            if on_frame is not None:
                on_frame(stage_ms[-1])
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    return FrameTimes(stage_ms, sink.write_ms)


def _worker(rank: int, jobs: list[Job], queue) -> None:
    """Entry point of a spawned worker: render jobs[rank], reporting each frame, then its write times."""
    times = render_job(jobs[rank], on_frame=lambda stage_ms: queue.put(("frame", dict(stage_ms))))
    queue.put(("done", times.write_ms))


def run_workers(jobs: list[Job], on_frame) -> FrameTimes:
    """One spawned process per job (torch.multiprocessing); frames are reported through a queue."""
    import queue as queue_mod

    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    context = mp.start_processes(_worker, args=(jobs, q), nprocs=len(jobs), join=False, start_method="spawn")
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
                times.write_ms.extend(payload)
            block = False

    try:
        while not context.join(timeout=0.05):
            drain(block=True)
        drain(block=False)
    except BaseException:
        for p in context.processes:  # the workers this call started, by handle
            if p.is_alive():
                p.terminate()
        for p in context.processes:
            p.join(5)
        raise
    return times


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
    lines.append(
        f"{n} frames in {wall_s:.2f} s = {n / max(wall_s, 1e-9):.2f} frames/s end to end "
        f"({all_s:.2f} s with scene load and start-up); rendering {render_s:.2f} s, encoding/writing "
        f"{write_s:.2f} s on a writer thread overlapping it"
        + (f"; {workers} workers (times summed over them), stitched in {stitch_s:.2f} s" if workers > 1 else "")
    )
    return "\n".join(lines)
