"""The viewer's start time with a cold and a warm Triton cache (run on the GPU machine; the README quotes it).

    python3 tests/gpu/start_time.py [--scene PATH] [--size 1920x1080] [--profile PREFIX] [--compile-log PREFIX]
                                    [--no-switches]

Runs the viewer's start sequence headless (the GPU machine has no display), twice, each in a fresh process, with
Triton's cache in an empty folder: the first run compiles every kernel (cold), the second loads them from that
cache (warm). The sequence is `warpsplat view`'s: import, read the scene, make the Renderer, warm its kernels for
the window's size and the viewer's starting settings (app/warmup.py's first phase: no frame is shown before it
ends), render the first frame; then the second phase, every switch's kernels, which the viewer runs in the
background while it shows frames. Prints a table; the line "time to the first frame" is the start time, and
"of them compiled" how many kernels the start compiled rather than loaded from the cache (a warm start should
compile none: tests/gpu/test_warm_start.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CompileLog:
    """Triton's compilation listener for one process: counts the kernels it compiles and the kernels it loads from its
    cache, and with `path` writes one JSON line per kernel, with what its cache key is made of (name, signature,
    constexprs, alignment attributes, options, the source and full hashes), so that a warm start's compiles can be
    matched against the cold start's: the same source hash means the same specialization."""

    def __init__(self, path: str | None = None):
        import threading

        import triton

        self.path, self.compiled, self.loaded = path, 0, 0
        self._lock = threading.Lock()  # the warm-up's threads compile side by side
        if path:
            open(path, "w").close()
        triton.knobs.compilation.listener = self

    def __call__(self, src, metadata, metadata_group, times, cache_hit):
        import threading

        with self._lock:
            if cache_hit:
                self.loaded += 1
            else:
                self.compiled += 1
            if not self.path:
                return
            options = {
                k: metadata.get(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")
            }
            row = {
                "name": src.name, "cache_hit": cache_hit, "src_hash": src.hash(), "hash": metadata.get("hash"),
                "signature": {k: str(v) for k, v in src.signature.items()},
                "constants": {str(k): str(v) for k, v in src.constants.items()},
                "attrs": {str(k): str(v) for k, v in src.attrs.items()}, "options": options,
                "thread": threading.current_thread().name,
            }  # fmt: skip
            with open(self.path, "a") as out:
                out.write(json.dumps(row) + "\n")


def one_start(scene: str | None, size: tuple[int, int], compile_log: str | None = None, switches: bool = True) -> dict:
    """The start sequence in this process (the child's side); without `switches`, up to the first frame."""
    t0 = time.perf_counter()
    sys.path.insert(0, ROOT)
    import torch

    from app.state import viewer_settings
    from renderer import Renderer, default_camera
    from renderer.warmup import compile_counter, switch_settings, warm_up, warm_up_threads
    from scenes import bundled_scene_path, load_scene

    counter = compile_counter()
    log = CompileLog(compile_log)
    t_import = time.perf_counter()
    loaded = load_scene(scene or bundled_scene_path())
    t_load = time.perf_counter()
    renderer = Renderer(loaded, frame_size=size)
    t_renderer = time.perf_counter()
    settings = viewer_settings()
    torch.cuda.reset_peak_memory_stats()
    first = warm_up(renderer, [size], [settings])
    t_warm = time.perf_counter()
    warm_up_peak = torch.cuda.max_memory_allocated()
    renderer.render(default_camera(loaded, *size), settings)
    torch.cuda.synchronize()
    t_first = time.perf_counter()
    compiled_first = log.compiled  # compiled, not loaded from Triton's cache, up to the first frame
    row = {
        "import_s": t_import - t0, "load_s": t_load - t_import, "renderer_s": t_renderer - t_load,
        "warm_up_s": t_warm - t_renderer, "warm_up_compiles": first.compiles, "warm_up_compiled": compiled_first,
        "first_frame_s": t_first - t_warm, "time_to_first_frame_s": t_first - t0,
        "warm_up_peak_mb": warm_up_peak / 2**20, "threads": warm_up_threads(),
    }  # fmt: skip
    if switches:
        switched = warm_up(renderer, [size], switch_settings(settings, loaded.sh_degree)[1:])
        row.update(switches_s=time.perf_counter() - t_first, switch_settings=switched.frames,
                   switches_compiles=switched.compiles, switches_compiled=log.compiled - compiled_first)  # fmt: skip
    row["compiles_in_all"], row["compiled_in_all"] = counter.count(-1), log.compiled
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scene", default=None, help="scene file (default: the bundled scene)")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument(
        "--profile",
        default=None,
        metavar="PREFIX",
        help="run each start under cProfile: PREFIX-cold.txt and PREFIX-warm.txt, by cumulative time",
    )
    parser.add_argument(
        "--compile-log",
        default=None,
        metavar="PREFIX",
        help="log every kernel compiled or loaded from the cache: PREFIX-cold.jsonl and PREFIX-warm.jsonl",
    )
    parser.add_argument("--no-switches", action="store_true", help="stop at the first frame (no background warm-up)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.lower().split("x"))
    if args.child:
        log = f"{args.compile_log}-{args.child}.jsonl" if args.compile_log else None
        if not args.profile:
            print(json.dumps(one_start(args.scene, size, log, not args.no_switches)))
            return 0
        import cProfile
        import io
        import pstats

        with cProfile.Profile() as prof:
            row = one_start(args.scene, size, log, not args.no_switches)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(80)
        with open(f"{args.profile}-{args.child}.txt", "w") as f:
            f.write(text.getvalue())
        print(json.dumps(row))
        return 0
    rows = {}
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        env = {**os.environ, "TRITON_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", label, "--size", args.size]
            if args.profile:
                cmd += ["--profile", args.profile]
            if args.compile_log:
                cmd += ["--compile-log", args.compile_log]
            if args.scene:
                cmd += ["--scene", args.scene]
            if args.no_switches:
                cmd += ["--no-switches"]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            rows[label] = json.loads(done.stdout.strip().splitlines()[-1])
            print(label, json.dumps(rows[label]), flush=True)  # as it comes: a run cut short keeps the cold one
    print(f"scene: {args.scene or 'bundled'}, {args.size}")
    print(f"{'':<34}{'cold cache':>12}{'warm cache':>12}")
    for key, what in [
        ("import_s", "import (torch, triton, app)"), ("load_s", "read the scene"), ("renderer_s", "make the Renderer"),
        ("warm_up_s", "warm-up, the starting settings"), ("warm_up_compiles", "  kernels compiled or loaded"),
        ("warm_up_compiled", "  of them compiled"), ("first_frame_s", "first frame"),
        ("time_to_first_frame_s", "time to the first frame"), ("switches_s", "then every switch (background)"),
        ("switches_compiles", "  kernels compiled or loaded"), ("switches_compiled", "  of them compiled"),
    ]:  # fmt: skip
        if key not in rows["cold"]:
            continue
        cold, warm = rows["cold"][key], rows["warm"][key]
        fmt = (lambda v: f"{v:>12d}") if isinstance(cold, int) else (lambda v: f"{v:>11.2f}s")
        print(f"{what:<34}{fmt(cold)}{fmt(warm)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
