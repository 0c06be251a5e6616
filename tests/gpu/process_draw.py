"""Why one process draws a slow median on a host-paced path and the next a fast one (GPU machine only).

The 6M fly-over's median in flight moves between 1.1 and 1.9 ms from one process of the same tree to the next
(BENCHMARKS.md, sections 31, 38 and 41), not with the CPU set the process runs on. This starts `--processes` child
processes one after the other, alternating Python's hash seed between a fixed one and a random one (`--hashseed`),
and each child renders the path in flight after three warm passes: the wall time a frame over `PASSES` passes, the
host's own time in each stage (perf_counter around each stage call; "order" includes the counted frame's wait for
its counts), and, over one more pass under the torch profiler, the GPU's kernel time a frame. A slow process whose
kernels take as long as a fast one's waits on its host; one whose kernels take longer draws a slower GPU side.

    python3 tests/gpu/process_draw.py --composite 6M --path flyover --processes 6 --scenes-dir .gpu/scenes \\
        --cache-dir /tmp/wb --json out/draw.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

FRAMES = 20
WARM_PASSES = 3
PASSES = 6


def child(args) -> dict:
    """One process's draw: its wall time a frame in flight, host time per stage and kernel time a frame."""
    from torch.profiler import ProfilerActivity, profile

    import renderer.frame
    from renderer import Renderer, RenderSettings
    from scenes import load_scene
    from tools.bench_paths import COMPOSITE_INPUTS, build_composite, composite_paths, find_scene, parse_count

    host = collections.defaultdict(float)

    def timed_run(self, timer, from_stage="project"):  # `Frame.run`, each stage call timed on the host too
        if from_stage == "project":
            self.r.params.to_device(self.slot)  # the camera's copy, as `Frame.run` starts a whole frame
        for name in self.STAGES[self.STAGES.index(from_stage) :]:
            t0 = time.perf_counter()
            with timer.stage(name):
                getattr(self, name)()
            host[name] += time.perf_counter() - t0

    renderer.frame.Frame.run = timed_run
    inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
    scene = load_scene(build_composite(args.composite, parse_count(args.composite), inputs, args.cache_dir))
    cams = composite_paths(scene, 1920, 1080, FRAMES)[args.path]
    r, settings = Renderer(scene, device="cuda"), RenderSettings()

    def flight() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in r.render_stream(cams, settings):
            pass
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3 / len(cams)

    with torch.inference_mode():
        for _ in range(WARM_PASSES):
            flight()
        host.clear()
        walls = [flight() for _ in range(PASSES)]
        host_ms = {k: v * 1e3 / (PASSES * len(cams)) for k, v in host.items()}
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            flight()
        kernels = sum(e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return dict(hashseed=os.environ.get("PYTHONHASHSEED", "unset"), wall_ms=statistics.median(walls),
                passes_ms=[round(w, 3) for w in walls], kernels_ms=kernels / 1e3 / len(cams),
                host_ms={k: round(v, 3) for k, v in host_ms.items()})  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--composite", default="6M")
    p.add_argument("--path", choices=("flyover", "overview"), default="flyover")
    p.add_argument("--processes", type=int, default=6)
    p.add_argument("--hashseed", choices=("both", "fixed", "random"), default="both")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--json", default=None)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.processes < 1:
        p.error(f"--processes {args.processes}: at least 1")
    if not torch.cuda.is_available():
        print("process_draw: needs CUDA (run on the GPU machine)", file=sys.stderr)
        return 2
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return 0
    rows = []
    for i in range(args.processes):
        fixed = args.hashseed == "fixed" or (args.hashseed == "both" and i % 2 == 0)
        seed = "0" if fixed else str(random.randrange(1, 2**32))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--composite", args.composite, "--path",
               args.path, "--cache-dir", args.cache_dir]  # fmt: skip
        cmd += ["--scenes-dir", args.scenes_dir] if args.scenes_dir else []
        done = subprocess.run(cmd, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            print(f"process {i}: failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        row = json.loads(lines[-1])
        rows.append(row)
        stages = ", ".join(f"{k} {v:.3f}" for k, v in row["host_ms"].items())
        print(f"process {i} (hash seed {row['hashseed']}): {row['wall_ms']:.3f} ms a frame in flight (passes "
              f"{min(row['passes_ms']):.3f}-{max(row['passes_ms']):.3f}), kernels {row['kernels_ms']:.3f} ms; "
              f"host a frame: {stages}", flush=True)  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
