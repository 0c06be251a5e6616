"""Where a small frame's time goes (GPU machine only): the replayed graph alone, the whole `render()` call as the
bench times it, and the host's share of that call by function (cProfile).

    python3 tests/gpu/frame_overhead.py --scene .gpu/scenes/plant.splat --path close
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics

import torch
import triton.testing

from renderer import Renderer, RenderSettings
from renderer.timing import StageTimer
from scenes import load_scene
from tools.bench_paths import object_paths


@torch.inference_mode()
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", required=True)
    p.add_argument("--path", default="close")
    p.add_argument("--frames", type=int, default=40)
    args = p.parse_args()
    scene = load_scene(args.scene)
    r = Renderer(scene, device="cuda", backend="triton")
    cams = object_paths(scene, 1920, 1080, args.frames)[args.path]
    settings = RenderSettings()
    for cam in cams[:6]:
        r.render(cam, settings, sync_stats=False)
    torch.cuda.synchronize()

    # the whole call, as `warpsplat bench` times it: events before and after, the GPU idle in between frames
    totals = []
    for cam in cams:
        t = StageTimer(torch.device("cuda"))
        r.render(cam, settings, sync_stats=False)
        t.stop()
        totals.append(t)
    call = statistics.median(t.elapsed_ms(wait=True)["total"] for t in totals)

    # the replayed graph alone, back to back (GPU-bound)
    f = next((fr for fr in r.frames.frames.values() if fr.graph is not None), next(iter(r.frames.frames.values())))
    replay = triton.testing.do_bench(f.graph.replay, warmup=10, rep=100) if f.graph is not None else float("nan")
    stages = {}
    for name in f.STAGES:
        stages[name] = triton.testing.do_bench(getattr(f, name), warmup=5, rep=50)

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        for cam in cams:
            r.render(cam, settings, sync_stats=False)
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
    print(s.getvalue())

    # the GPU's kernels, one replayed frame and one frame launched stage by stage
    from torch.profiler import ProfilerActivity, profile

    for label, fn in (("graph replay", f.graph.replay if f.graph is not None else None), ("eager", f.run)):
        if fn is None:
            continue
        with profile(activities=[ProfilerActivity.CUDA]) as prof_gpu:
            for _ in range(20):
                fn() if label == "graph replay" else fn(StageTimer(None))
            torch.cuda.synchronize()
        print(f"--- kernels, {label} (20 frames) ---")
        print(prof_gpu.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=70))
    n_calls = 5 * len(cams)
    print(f"frames: {n_calls}, graph replays so far: {r.graph_replays}")
    print(f"render() call (bench timing), median: {call:.3f} ms")
    print(f"graph replay alone (do_bench): {replay:.3f} ms")
    print("stages alone (do_bench, launched eagerly): " + ", ".join(f"{k} {v:.3f}" for k, v in stages.items()))


if __name__ == "__main__":
    main()
