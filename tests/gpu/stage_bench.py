"""Per-stage GPU timings of real frames, and the rasterizer's launch configurations (GPU machine only).

For each scene and path, a few frames are rendered once by the pipeline, then every stage is timed alone with
`triton.testing.do_bench` (median) on that frame's buffers, and so is the rasterizer in each launch
configuration (warps per program, Gaussians per loop step), each checked against the default's image. The
frame as a whole is timed launched stage by stage and replayed as a CUDA graph.

    python3 tests/gpu/stage_bench.py --scenes plant.splat playbot_lod0.sog --composites 6M,24M \\
        --scenes-dir .gpu/scenes --json out/stages.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch
import triton.testing

from renderer import Renderer, RenderSettings
from renderer.frame import Frame
from renderer.timing import StageTimer
from scenes import load_scene
from tools.bench_paths import COMPOSITE_INPUTS, build_composite, composite_paths, find_scene, object_paths, parse_count
from tools.metrics import psnr

DEVICE = "cuda"
# (tile size, warps per program, Gaussians per loop step) of the scalar loop; a tile's pixels fill the warps (at
# 8 px: one warp holds two pixels a lane, two warps one)
CONFIGS = [(8, w, u) for w in (1, 2) for u in (4, 8, 16, 32)] + [(16, w, u) for w in (4, 8) for u in (8, 16, 32)]
CAP = 128  # a diagnostic: the rasterizer on lists cut to this length (not the image), to see the longest lists' share
BIN_CONFIGS = [(128, 4), (64, 8), (32, 16), (32, 4), (128, 16), (16, 16)]  # (Gaussians per program, tiles per step)
PROJECT_BLOCKS = [32, 64, 128, 256]


def frame_of(r: Renderer, cam, settings: RenderSettings) -> Frame:
    """One frame rendered (capacities and launch configuration sized for it), its stages kept for timing."""
    r.render(cam, settings)
    r.render(cam, settings)  # with the launch configuration chosen from the first
    src = r.temporal.source(r.scene_arrays(), r.k, r.scene_radius, cam, settings, None, use_window=False)
    r.params.fill(cam, settings, 0, r._last_visible)  # the frame copies it to the device (`Frame.run`)
    f = r._frame_for(src, cam, settings)
    f.run(StageTimer(None))
    return f


def bench(fn) -> float:
    return float(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))


def measure(r: Renderer, cam, sweep: bool = True) -> dict:
    """Stage and whole-frame medians (ms) of one camera at 8 and 16 px tiles, the rasterizer with its tiles in
    id order as well as longest first, and (sweep) the rasterizer's and binning's launch configurations."""
    row: dict = {}
    for tile in (8, 16):
        settings = RenderSettings(tile_size=tile)
        f = frame_of(r, cam, settings)
        torch.cuda.synchronize()
        row[f"visible_{tile}"], row[f"pairs_{tile}"] = f.totals()
        row[f"longest_{tile}"] = int((f.ranges[:, 1] - f.ranges[:, 0]).max())
        row[f"launch_{tile}"] = str(r.launch)
        for name in Frame.STAGES[:-1]:
            row[f"{name}_{tile}"] = bench(getattr(f, name))
        row[f"frame_eager_{tile}"] = bench(lambda f=f: f.run(StageTimer(None)))
        graph = r._graphs.capture(f)
        row[f"frame_graph_{tile}"] = bench(graph.replay)
        graph = None
        row[f"render_call_{tile}"] = bench(lambda s=settings: r.render(cam, s, sync_stats=False))  # host included
        f = frame_of(r, cam, settings)
        f.rasterize()
        reference = f.rgb.clone()
        f.rasterize(schedule=None)
        assert torch.equal(f.rgb, reference), "the tile schedule changed the image"
        row[f"raster_{tile}px_in_order"] = bench(lambda f=f: f.rasterize(schedule=None))
        row[f"raster_{tile}px_longest_first"] = bench(f.rasterize)
        scratch = (f.schedule, f.tile_counts.view(-1), f.schedule_hist)
        row[f"schedule_{tile}"] = bench(lambda f=f, o=scratch: r.k.schedule_tiles(f.ranges, out=o))  # in tile_lists
        if not sweep:
            continue
        if tile == 8:
            for block, cols in BIN_CONFIGS:
                row[f"bin_{block}b_{cols}c"] = bench(lambda f=f, b=block, c=cols: f.bin(block=b, cols=c))
            for block in PROJECT_BLOCKS:
                row[f"project_{block}b"] = bench(lambda f=f, b=block: f.project(block=b))
            f.bin()
        f.rasterize()
        reference = f.rgb.clone()
        for t, warps, step in CONFIGS:
            if t != tile:
                continue
            f.rasterize(num_warps=warps, step=step)
            assert psnr(f.rgb, reference) > 100.0, (t, warps, step)
            row[f"raster_{tile}px_{warps}w_{step}u"] = bench(
                lambda f=f, w=warps, s=step: f.rasterize(num_warps=w, step=s)
            )
        full = f.ranges.clone()
        f.ranges[:, 1] = torch.minimum(full[:, 1], full[:, 0] + CAP)
        row[f"raster_{tile}px_lists_cut_to_{CAP}"] = bench(f.rasterize)
        f.ranges.copy_(full)
        row[f"raster_{tile}px_batched"] = bench(lambda f=f: f.rasterize(variant="batched"))
    return row


@torch.inference_mode()  # as the renderer: its workspace tensors are inference tensors
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="*", default=["plant.splat", "playbot_lod0.sog"])
    p.add_argument("--composites", default="6M,24M")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--frames", type=int, default=3, help="frames sampled per path")
    p.add_argument("--json", default=None)
    p.add_argument("--no-sweep", action="store_true", help="skip the launch configuration sweeps")
    p.add_argument("--size", type=lambda v: tuple(int(x) for x in v.split("x")), default=(1920, 1080))
    args = p.parse_args()
    jobs = [(find_scene(n, args.scenes_dir), object_paths) for n in args.scenes]
    comps = [c for c in args.composites.split(",") if c and c != "none"]
    if comps:
        inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
        jobs += [(build_composite(c, parse_count(c), inputs, args.cache_dir), composite_paths) for c in comps]
    rows = []
    for path, make_paths in jobs:
        scene = load_scene(path)
        r = Renderer(scene, device=DEVICE, backend="triton")
        r.frame_mode = "graph"  # stage by stage on capacity buffers, and captured whole: the route it times
        for path_name, cams in make_paths(scene, *args.size, 12).items():
            if path_name == "orbit":
                continue  # the close orbit is the harder object view
            picked = range(0, len(cams), max(1, len(cams) // args.frames))
            samples = [measure(r, cams[i], not args.no_sweep) for i in picked]
            row = {k: statistics.median(s[k] for s in samples) if not isinstance(samples[0][k], str) else samples[0][k]
                   for k in samples[0]}  # fmt: skip
            row.update(scene=os.path.basename(path), path=path_name)
            rows.append(row)
            print(json.dumps(row), flush=True)
        del r
        torch.cuda.empty_cache()
    keys = [k for k in rows[0] if k not in ("scene", "path") and not k.startswith("launch")]
    print(f"\n{'stage (median ms)':28}" + "".join(f"{(r['scene'][:10] + '/' + r['path'])[:18]:>19}" for r in rows))
    for k in keys:
        print(f"{k:28}" + "".join(f"{r[k]:19.3f}" if isinstance(r[k], float) else f"{r[k]:19,}" for r in rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
