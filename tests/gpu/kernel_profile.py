"""Where a frame's time goes, kernel by kernel (GPU machine only): one frame of each path, rendered as the renderer
renders it (its own route: graphs for objects, counted frames for the composites), its wall time one by one,
its stage times, and every CUDA kernel's time from the torch profiler (BENCHMARKS.md, sections 18 and 19).
`--renderer higs` profiles HiGS (the speed anchor, tools/bench_higs.py) on the same paths and frames instead, at
one tile size, for a side by side view of where each spends its time.

    python3 tests/gpu/kernel_profile.py --scenes plant.splat --composites 6M,24M --scenes-dir .gpu/scenes \\
        --json out/kernels.json [--size 3840x2160] [--trace out/traces]
    PYTHONPATH=$WARPSPLAT_HIGS:$PYTHONPATH python3 tests/gpu/kernel_profile.py --renderer higs --tile 8 ...

HiGS's package is named gsplat, as gsplat 1.5.3 is: its folder goes first on the path of a process of its own.
Each path is rendered through once (capacities, launch classes and graphs settle; HiGS's JIT build), then its
middle frame (or those `--frames` names) is timed: the median wall time of 15 frames, each waited for, and the
kernels of 3 more under the profiler.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from renderer import Renderer, RenderSettings  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_gsplat import camera_tensors  # noqa: E402
from tools.bench_higs import higs_frames, make_higs_scene  # noqa: E402
from tools.bench_paths import (  # noqa: E402
    COMPOSITE_INPUTS,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)

FRAMES_PER_PATH = 8
WALL_FRAMES = 15
PROFILED_FRAMES = 3


def wall_ms(frame: Callable[[], object]) -> float:
    """The median of WALL_FRAMES calls of `frame` (one camera's frame), each waited for (its host work included)."""
    times = []
    for _ in range(WALL_FRAMES):
        torch.cuda.synchronize()
        t = time.perf_counter()
        frame()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def kernel_ms(frame: Callable[[], object], trace: str | None) -> dict[str, tuple[float, float]]:
    """{kernel name: (ms a frame, launches a frame)}, longest first, over PROFILED_FRAMES calls of `frame`."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED_FRAMES):
            frame()
        torch.cuda.synchronize()
    ms, launches = collections.defaultdict(float), collections.Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            ms[e.name[:80]] += e.device_time / 1e3 / PROFILED_FRAMES
            launches[e.name[:80]] += 1
    if trace:
        prof.export_chrome_trace(trace)
    return {k: (v, launches[k] / PROFILED_FRAMES) for k, v in sorted(ms.items(), key=lambda kv: -kv[1])}, op_ms(prof)


def op_ms(prof) -> dict[str, float]:
    """{"op > kernel": ms a frame}: each kernel, copy and memset by the host op that launched it (the innermost
    one open on the launching thread: aten::copy_ inside aten::sort, say), longest first."""
    ms = collections.defaultdict(float)
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        parents, p = [], e
        while p is not None and len(parents) < 3:
            parents.append(p.name)
            p = p.cpu_parent
        for k in e.kernels:
            ms[f"{' < '.join(parents)} > {k.name[:60]}"] += k.duration / 1e3 / PROFILED_FRAMES
    return dict(sorted(ms.items(), key=lambda kv: -kv[1]))


@torch.inference_mode()  # as the renderer: its workspace tensors are inference tensors
def profile_frame(args, r, higs, higs_scene, name: str, cams, index: int, settings) -> dict:
    """One frame of a path (camera `index`), after the path was rendered through once: its row, printed."""
    trace = (os.path.join(args.trace, f"{args.renderer}_{name.replace('/', '_')}_{index}.json")
             if args.trace else None)  # fmt: skip
    if r is not None:
        for cam in cams:
            r.render(cam, settings)
        camera = cams[index]
        out = r.render(camera, settings)  # synced: its stage times and counts
        frame = functools.partial(r.render, camera, settings, sync_stats=False)
        row = dict(path=name, frame=index, size=list(args.size), renderer="warpsplat", counted=r.counted(),
                   visible=out.stats.n_visible, pairs=out.stats.n_pairs,
                   longest_list=out.stats.max_tile_pairs, stages_ms=out.stats.stage_ms)  # fmt: skip
        what = f"{'counted' if row['counted'] else 'graph'}, {row['visible']:,} visible, {row['pairs']:,} pairs"
    else:  # HiGS on the same cameras, its inputs made before any timing (as the bench does)
        viewmats, Ks = camera_tensors(cams, "cuda")
        size = {"width": args.size[0], "height": args.size[1]}
        draw = higs_frames(higs[1], higs_scene, viewmats, Ks, size, args.tile)
        for i in range(len(cams)):
            draw(i)
        frame = functools.partial(draw, index)
        row = dict(path=name, frame=index, size=list(args.size), renderer="higs", tile_size=args.tile)
        what = f"HiGS, tile {args.tile}"
    kernels, ops = kernel_ms(frame, trace)
    row.update(wall_ms=wall_ms(frame), kernels_ms=kernels, ops_ms=ops)
    print(f"{name} frame {index} {args.size[0]}x{args.size[1]} ({what}): wall {row['wall_ms']:.3f} ms, kernels "
          f"{sum(v for v, _ in kernels.values()):.3f} ms", flush=True)  # fmt: skip
    for k, (v, n) in list(kernels.items())[:14]:
        print(f"    {v:8.4f} ms  x{n:4.1f}  {k}", flush=True)
    if args.ops:
        print("  by the op that launched them:", flush=True)
        for k, v in list(ops.items())[: args.ops]:
            print(f"    {v:8.4f} ms  {k}", flush=True)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="*", default=["plant.splat"])
    p.add_argument("--composites", default="6M,24M")
    p.add_argument("--paths", default=None, help="comma-separated path names to profile (default: every path)")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--size", type=lambda v: tuple(int(x) for x in v.split("x")), default=(1920, 1080))
    p.add_argument("--json", default=None)
    p.add_argument("--trace", default=None, help="folder for a Chrome trace of each frame")
    p.add_argument("--renderer", choices=("warpsplat", "higs"), default="warpsplat")
    p.add_argument("--tile", type=int, default=8, help="HiGS's tile size (8 or 16)")
    p.add_argument("--ops", type=int, default=0, help="also print this many kernels by the host op that launched them")
    p.add_argument(
        "--frames",
        default=str(FRAMES_PER_PATH // 2),
        help=f"comma-separated frames of each path to profile (0-{FRAMES_PER_PATH - 1}; default its middle)",
    )
    args = p.parse_args()
    try:
        frames = [int(f) for f in args.frames.split(",")]
    except ValueError:
        frames = [-1]
    if not all(0 <= f < FRAMES_PER_PATH for f in frames):
        p.error(f"--frames {args.frames}: comma-separated frame numbers from 0 to {FRAMES_PER_PATH - 1}")
    if not torch.cuda.is_available():
        print("kernel_profile: needs CUDA (run on the GPU machine)", file=sys.stderr)
        return 2
    higs = None
    if args.renderer == "higs":
        try:
            from gsplat.experimental import GaussianInferenceScene, rasterize_gaussian_inference_scene
        except ImportError as e:
            print(f"kernel_profile --renderer higs: HiGS is not importable ({e}); put its folder first on PYTHONPATH "
                  "(PYTHONPATH=$WARPSPLAT_HIGS:$PYTHONPATH)", file=sys.stderr)  # fmt: skip
            return 2
        higs = GaussianInferenceScene, rasterize_gaussian_inference_scene
    jobs = [(find_scene(n, args.scenes_dir), object_paths) for n in args.scenes]
    comps = [c for c in args.composites.split(",") if c and c != "none"]
    if comps:
        inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
        jobs += [(build_composite(c, parse_count(c), inputs, args.cache_dir), composite_paths) for c in comps]
    if args.trace:
        os.makedirs(args.trace, exist_ok=True)
    rows, settings = [], RenderSettings()
    for path, make_paths in jobs:
        scene = load_scene(path)
        r = Renderer(scene, device="cuda") if higs is None else None
        higs_scene = make_higs_scene(higs[0], scene, "cuda") if higs is not None else None
        for path_name, cams in make_paths(scene, *args.size, FRAMES_PER_PATH).items():
            if args.paths and path_name not in args.paths.split(","):
                continue
            for index in frames:
                rows.append(profile_frame(args, r, higs, higs_scene, f"{os.path.basename(path)}/{path_name}", cams,
                                          index, settings))  # fmt: skip
        del r, higs_scene
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
