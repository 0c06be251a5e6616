"""Viewer soak: repeated window resizes and scene reloads in a real window, checking host memory and GL objects.

Opens `ViewerWindow` as tests/app/test_viewer.py does (under a private Xvfb when DISPLAY is unset; the CPU and
the torch backend by default), then for each iteration resizes the window to the next size of SIZES and draws
until that frame is on screen; every `--reload-every` iterations it loads the next scene with
`ViewerWindow.load_scene` (read from disk again each time). Every `--sample-every` iterations, after
gc.collect(), it samples:

- host RSS, then RSS after malloc_trim(0) (glibc's free heap pages returned), split into anonymous, file-backed
  and shared memory (/proc/self/status);
- live GL objects: moderngl wrappers not yet released, by type (found through the garbage collector);
- GL objects dropped without release(): the context runs in moderngl's "context_gc" mode, where a wrapper
  collected unreleased leaves its GL object in `ctx.objects` (a leak in the default mode);
- host textures created and released (the frame texture's host factory is replaced by a counting subclass);
- Python threads (each reload starts a render worker and must end the old one).

It fails (exit 1) when the median trimmed RSS of the last third of the samples exceeds that of the first third
by more than `--tolerance-mb` (default 16 MB, as tests/reliability/soak.py), when the live GL objects or threads
at the last sample exceed those at the first, when any GL object was dropped unreleased, or when a host texture
was never released. Keep `--sample-every` a multiple of `--reload-every` x the number of scenes, so that every
sample sees the same scene loaded.

Why 16 MB, and why the trim and MALLOC_MMAP_THRESHOLD_: with no leak, the untrimmed RSS of this process moves
between 480 and 590 MB over 300 resizes (freed heap pages of the scene loads stay resident), and even trimmed it
can step up by ~30 MB once and stay there: glibc's dynamic mmap threshold rises after the first large free, so
later ~MB-sized temporaries of the loads and renders land in the heap, where fragmentation keeps pages. With
MALLOC_MMAP_THRESHOLD_=1048576 the trimmed RSS medians of the thirds agree within 1 MB over 300 resizes and 60
reloads (single samples up to 42 MB above them, back at the next sample). A leak of what a reload replaces is
far larger than 16 MB over a run: the bundled scene with its renderer is 17 MB (6 + 11), loaded 30 times in
that run. A leak per resize (a frame texture or frame of ~64x36 pixels at render scale 0.25, ~10 KB) is too
small for RSS; the GL object, texture and thread counts catch those exactly.

    MALLOC_MMAP_THRESHOLD_=1048576 python tests/app/soak_viewer.py --iterations 300 --reload-every 5 --sample-every 10

Not collected by pytest (tests/app/test_soak_viewer.py runs a short version of it).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_SCENE = os.path.join(ROOT, "..", "shared", "scenes", "fruit_drops_minimal.ply")
# window sizes in screen pixels, cycled; each differs from the one before it
SIZES = [(160, 120), (224, 128), (96, 160), (200, 200), (128, 72), (256, 144), (120, 90)]


def rss_mb() -> dict[str, float]:
    """Resident memory in MB: total, anonymous (the heap: where a leak shows), file-backed, shared."""
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if line.startswith(("VmRSS", "RssAnon", "RssFile", "RssShmem")))
    return {k: int(v.split()[0]) / 1024 for k, v in fields.items()}


def trim_heap() -> None:
    """Return glibc's free heap pages to the system (malloc_trim), so RSS follows live memory."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def live_gl_objects() -> dict[str, int]:
    """Unreleased moderngl objects still referenced, by type (the default framebuffer excluded)."""
    import moderngl

    kinds = {moderngl.Texture, moderngl.Buffer, moderngl.Framebuffer, moderngl.Program, moderngl.VertexArray,
             moderngl.Renderbuffer}  # fmt: skip
    counts: dict[str, int] = {}
    for obj in gc.get_objects():  # exact types: isinstance() would touch every object's __class__
        if type(obj) in kinds and not isinstance(obj.mglo, moderngl.InvalidObject):
            if isinstance(obj, moderngl.Framebuffer) and getattr(obj, "_is_reference", False):
                continue
            name = type(obj).__name__
            counts[name] = counts.get(name, 0) + 1
    return counts


def dropped_unreleased(ctx) -> int:
    """GL objects whose wrapper was collected without release() (moderngl "context_gc" mode)."""
    import moderngl

    return sum(not isinstance(mglo, moderngl.InvalidObject) for mglo in ctx.objects)


def counting_host_texture(counts: dict[str, int]):
    from app.interop import HostTexture

    class CountingHostTexture(HostTexture):
        def __init__(self, ctx, width, height):
            super().__init__(ctx, width, height)
            counts["created"] += 1

        def release(self):
            super().release()
            counts["released"] += 1

    return CountingHostTexture


def resize(window, width: int, height: int) -> None:
    """As test_viewer.py's resize test: set_size, let the X server answer, then on_resize."""
    window.set_size(width, height)
    for _ in range(50):
        window.dispatch_events()
        if window.get_framebuffer_size() == (width, height):
            break
        time.sleep(0.01)
    window.on_resize(width, height)


def soak(args) -> int:
    import app  # noqa: F401  (pyglet options first)
    from app.window import ViewerWindow
    from scenes import bundled_scene_path, load_scene
    from tests.app.driving import pump

    paths = args.scene or [bundled_scene_path()] + ([SHARED_SCENE] if os.path.exists(SHARED_SCENE) else [])
    if args.sample_every % (args.reload_every * len(paths)):
        print(f"note: --sample-every {args.sample_every} is not a multiple of --reload-every x {len(paths)} "
              "scenes: samples see different scenes loaded, and RSS varies with the scene")  # fmt: skip
    tex_counts = {"created": 0, "released": 0}
    t_start = time.perf_counter()
    window = ViewerWindow(load_scene(paths[0]), size=SIZES[0], device="cpu", backend=args.backend,
                          render_scale=args.render_scale, moving_scale=args.render_scale)  # fmt: skip
    window.ctx.gc_mode = "context_gc"
    window.frame_texture.host_factory = counting_host_texture(tex_counts)
    window.state.show_overlay = not args.no_overlay
    pump(window)
    print(f"window open, first frame: {time.perf_counter() - t_start:.1f} s ({window.state.render_device}, "
          f"render scale {args.render_scale}, scenes: {', '.join(os.path.basename(p) for p in paths)})")  # fmt: skip

    samples = []
    frames = reloads = 0
    scene_index = 0
    t0 = time.perf_counter()

    def sample(i: int) -> None:
        gc.collect()
        raw = rss_mb()["VmRSS"]
        trim_heap()
        mem = rss_mb()
        gl = live_gl_objects()
        samples.append(dict(
            it=i, reloads=reloads, frames=frames, raw=raw, rss=mem["VmRSS"], anon=mem["RssAnon"],
            file=mem["RssFile"], shmem=mem["RssShmem"], gl=sum(gl.values()), gl_by_type=gl,
            dropped=dropped_unreleased(window.ctx), tex=tex_counts["created"] - tex_counts["released"],
            threads=threading.active_count(), s=time.perf_counter() - t0,
        ))  # fmt: skip

    sample(0)
    try:
        for i in range(1, args.iterations + 1):
            w, h = SIZES[i % len(SIZES)]
            resize(window, w, h)
            if i % args.reload_every == 0:
                scene_index = (scene_index + 1) % len(paths)
                window.load_scene(load_scene(paths[scene_index]))
                reloads += 1
            frames += pump(window)
            assert window.frame_texture.size == window.state.render_size_for(w, h), "frame not shown at the size"
            if i % args.sample_every == 0:
                sample(i)
    finally:
        elapsed = time.perf_counter() - t0
        window.shutdown()  # what closing the window does (Window.close() alone does not dispatch on_close)
        window.close()

    print(f"\n{args.iterations} resizes, {reloads} reloads, {frames} window frames in {elapsed:.1f} s")
    print(f"{'iter':>6} {'reloads':>7} {'RSS MB':>8} {'trimmed':>8} {'anon':>7} {'file':>7} {'shmem':>6} "
          f"{'GL live':>7} {'GL dropped':>10} {'textures':>8} {'threads':>7} {'s':>7}")  # fmt: skip
    for s in samples:
        print(f"{s['it']:>6} {s['reloads']:>7} {s['raw']:>8.1f} {s['rss']:>8.1f} {s['anon']:>7.1f} {s['file']:>7.1f} "
              f"{s['shmem']:>6.1f} {s['gl']:>7} {s['dropped']:>10} {s['tex']:>8} {s['threads']:>7} "
              f"{s['s']:>7.1f}")  # fmt: skip
    print(f"GL objects live at the end: {samples[-1]['gl_by_type']}")
    print(f"host textures created {tex_counts['created']}, released {tex_counts['released']} (window closed)")

    third = max(len(samples) // 3, 1)
    first = statistics.median(s["rss"] for s in samples[:third])
    last = statistics.median(s["rss"] for s in samples[-third:])
    failures = []
    if last - first > args.tolerance_mb:
        failures.append(f"RSS grew {last - first:+.1f} MB (median of the last third vs the first third)")
    if samples[-1]["gl"] > samples[0]["gl"]:
        failures.append(f"live GL objects grew from {samples[0]['gl']} to {samples[-1]['gl']}")
    if any(s["dropped"] for s in samples):
        failures.append(f"{max(s['dropped'] for s in samples)} GL objects dropped without release()")
    if samples[-1]["threads"] > samples[0]["threads"]:
        failures.append(f"threads grew from {samples[0]['threads']} to {samples[-1]['threads']}")
    if tex_counts["created"] != tex_counts["released"]:
        failures.append(f"{tex_counts['created'] - tex_counts['released']} host textures never released")
    raw_first = statistics.median(s["raw"] for s in samples[:third])
    raw_last = statistics.median(s["raw"] for s in samples[-third:])
    print(f"RSS median before trimming, first third {raw_first:.1f} MB, last third {raw_last:.1f} MB: "
          f"{raw_last - raw_first:+.1f} MB (reported, not checked)")  # fmt: skip
    print(f"RSS median, first third {first:.1f} MB, last third {last:.1f} MB: {last - first:+.1f} MB "
          f"(tolerance {args.tolerance_mb:g} MB)")  # fmt: skip
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print("OK: no growth")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300, help="window resizes, one frame each")
    parser.add_argument("--reload-every", type=int, default=5, help="load the next scene every N iterations")
    parser.add_argument("--sample-every", type=int, default=10, help="sample memory every M iterations")
    parser.add_argument("--scene", action="append", help="scenes to cycle (default: bundled + fruit_drops)")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--render-scale", type=float, default=0.25)
    parser.add_argument("--no-overlay", action="store_true", help="hide the imgui overlay")
    parser.add_argument("--tolerance-mb", type=float, default=16.0)
    args = parser.parse_args(argv)
    if args.iterations < 3 * args.sample_every:
        parser.error("need at least 3 samples (--iterations >= 3 * --sample-every)")
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from tests.app.xvfb import NoDisplay, x_display

    try:
        with x_display():
            return soak(args)
    except NoDisplay as e:
        sys.exit(str(e))


if __name__ == "__main__":
    sys.exit(main())
