"""`warpsplat bench`: warpsplat against gsplat 1.5.3, same process, same GPU, same cameras and resolution.

It reports; it does not pass or fail. Per camera path it measures, after warm-up (compilation and
autotuning excluded):
- frame time of every renderer variant, median and p90, wall frames/s, per-stage medians, peak GPU memory.
  Variants are rendered as `warpsplat render` renders a path (`Renderer.render_stream`): where the renderer
  keeps a frame in flight, a frame's time is the GPU-clock span from the end of the frame before it to its
  own end, idle gaps included; elsewhere, and in the row "frames=one-by-one", CUDA events around each
  `render` call, host sync included;
- gsplat 1.5.3's `rasterization()` on the same cameras (the exactness contract's call, docs/architecture.md),
  timed call by call (it waits for its own pair count inside each call);
- Gaussians visible, Gaussian-tile pairs, longest tile list (from warpsplat's exact binning);
- PSNR of warpsplat's image against gsplat's on sampled frames, and of each variant against the default;
  SSIM too for the lossy variants (the exactness contract: lossy switches report their loss).

Variants: the default settings, then each renderer switch flipped alone (an ablation row per switch), and
AdaGScale (lossy) at its default tau and a small tau sweep: pairs removed, frame time, PSNR/SSIM vs exact.
Output: a short table on stdout and a JSON file with GPU name, versions, commit and the exact command.
On a CPU it runs too (tiny sizes, no gsplat) so CI exercises its code paths.

Its parts: tools/bench_paths.py (scenes, composites, camera paths), tools/bench_variants.py (the settings of
each row), tools/bench_gsplat.py (the gsplat call), tools/bench_report.py (the table and the JSON); this
module holds the command and its run loop.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import statistics
import sys
import time

from .bench_paths import (
    COMPOSITE_INPUTS,
    DEFAULT_SCENES,
    QUICK_SCENES,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)
from .bench_report import PathResult, device_name, print_table, write_json
from .bench_variants import TEMPORAL_K, is_lossy, is_temporal, knows_path, selected_variants
from .cli import CliError, add_command
from .common import parse_size
from .metrics import psnr, ssim

DEFAULT_COMPOSITES = "6M,24M"
# --quick on a CPU: the bundled scene, small and short, so that every variant runs in about a minute (the GPU
# --quick's 1920x1080 and 6M composite had done 2 rows after 9 minutes on the 2-core machine). At 160x120 a
# frame of the bundled scene still costs about 0.4 s of one core, so the frame count sets the time: 3 timed
# frames per variant, no warm-up (nothing compiles on a CPU), images compared on the first frame. Measured:
# 58 s (52 s of CPU) on the 2-core machine.
QUICK_CPU_SIZE = (160, 120)
QUICK_CPU_FRAMES = 3


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "bench",
        summary="benchmark warpsplat against gsplat on real and composite scenes",
        description="""
            Time warpsplat's renderer and each of its switches (an ablation row per switch) on orbits of real
            scenes and fly-overs of large composites, against gsplat 1.5.3 on the same cameras when CUDA and
            gsplat are there. Prints a table and writes every number to a JSON file. On a CPU, --quick is a
            one-minute check of the bundled scene at a small size.
        """,
        examples="""
            warpsplat bench --quick                               # a short run (a minute on a CPU)
            warpsplat bench --scenes-dir scenes/ --json results.json
            warpsplat bench --variants 'temporal*' --paths flyover  # a few rows, one path kind
        """,
    )
    p.add_argument("--scenes", nargs="+", default=None, help="scene files (names in --scenes-dir, or paths), or 'none'")
    p.add_argument(
        "--scenes-dir", default=None, help="folder of real scenes (default $WARPSPLAT_SCENES or ../shared/scenes)"
    )
    p.add_argument("--size", type=parse_size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    p.add_argument("--frames", type=int, default=60, help="frames per path (default 60)")
    p.add_argument("--warmup", type=int, default=3, help="untimed frames before each timed path (default 3)")
    p.add_argument("--psnr-every", type=int, default=6, help="compare images on every k-th frame (default 6)")
    p.add_argument("--quick", action="store_true",
                   help="a short run: with CUDA, two small scenes, 20 frames and the 6M composite; on a CPU, the "
                        f"bundled scene at {QUICK_CPU_SIZE[0]}x{QUICK_CPU_SIZE[1]}, {QUICK_CPU_FRAMES} frames, "
                        "no composites (about a minute)")  # fmt: skip
    p.add_argument("--no-gsplat", action="store_true", help="skip gsplat (always skipped without CUDA)")
    p.add_argument("--backend", choices=("auto", "triton", "torch"), default="auto",
                   help="auto: Triton kernels on CUDA, the torch reference pipeline on a CPU")  # fmt: skip
    p.add_argument(
        "--composites",
        default=DEFAULT_COMPOSITES,
        help=f"composite sizes (Gaussian counts) to build and run (default {DEFAULT_COMPOSITES}), or 'none'",
    )
    p.add_argument("--composite-files", nargs="+", default=[], metavar="PLY",
                   help="already composed scenes to run on the composite paths (fly-over and overview)")  # fmt: skip
    p.add_argument(
        "--cache-dir",
        default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "warpsplat-bench"),
        help="where composites are kept between runs",
    )
    p.add_argument("--variants", default="*",
                   help="comma-separated name patterns of the variants to run, e.g. 'temporal*,adagscale*' "
                        "(default: all; the default variant always runs, as the reference)")  # fmt: skip
    p.add_argument(
        "--paths",
        default="*",
        help="comma-separated name patterns of the paths to run: orbit, close, flyover, overview (default: all)",
    )
    p.add_argument("--json", default=None,
                   help="where to write the full results (default: bench.json in --cache-dir)")  # fmt: skip
    p.set_defaults(func=run)


def quick_on_cpu(args: argparse.Namespace, n_variants: int) -> None:
    """--quick without CUDA: the arguments left at their defaults become the CPU's short run, said aloud."""
    from scenes import bundled_scene_path

    if args.scenes is None:
        args.scenes = [str(bundled_scene_path())]
    if args.size == (1920, 1080):
        args.size = QUICK_CPU_SIZE
    if args.frames == 60:
        args.frames = QUICK_CPU_FRAMES
    if args.warmup == 3:
        args.warmup = 0
    if args.psnr_every == 6:
        args.psnr_every = args.frames
    if args.composites == DEFAULT_COMPOSITES:
        args.composites = "none"
    scenes = ", ".join(os.path.basename(s) for s in args.scenes)
    print(
        f"bench --quick on a CPU: {scenes} at {args.size[0]}x{args.size[1]}, {args.frames} frames per path after "
        f"{args.warmup} warm-up, {n_variants} variants; no gsplat (it needs CUDA); results to {args.json}"
        + ("" if args.composites == "none" else f"; composites {args.composites}"),
        file=sys.stderr,
    )


def time_path(render_fn, cams, device, warmup: int) -> tuple[list[float], float, list]:
    """Render every camera once after `warmup` untimed frames; (frame ms list, wall fps, per-frame extras).
    Each frame is timed by a StageTimer of its own: its total is the span from before the call to after it
    (CUDA events, host sync included, or the wall clock on a CPU), read once the whole path has run."""
    from renderer.timing import StageTimer

    for cam in cams[: max(warmup, 0)]:
        render_fn(cam)
    synchronize(device)
    timers, extras = [], []
    t0 = time.perf_counter()
    for cam in cams:
        timer = StageTimer(device)
        extras.append(render_fn(cam))
        timer.stop()
        timers.append(timer)
    synchronize(device)
    wall = time.perf_counter() - t0
    return [t.elapsed_ms(wait=True)["total"] for t in timers], len(cams) / wall, extras


def synchronize(device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize()


def run(args: argparse.Namespace) -> int:
    import torch

    from renderer import Renderer
    from scenes import load_scene

    from .bench_gsplat import gsplat_renderer

    if args.frames < 1:
        raise CliError(f"--frames {args.frames}: must be at least 1")
    chosen = selected_variants(args.variants)  # a pattern matching nothing is an error before any work
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    use_gsplat = cuda and not args.no_gsplat
    if args.json is None:
        args.json = os.path.join(args.cache_dir, "bench.json")
    if args.quick and not cuda:
        quick_on_cpu(args, len(chosen))
    width, height = args.size
    n_frames = 20 if args.quick and args.frames == 60 else args.frames
    names = args.scenes or (QUICK_SCENES if args.quick else DEFAULT_SCENES)
    if names == ["none"]:  # composites only
        names = []
    comps = [] if args.composites in ("", "none") else args.composites.split(",")
    if args.quick and args.composites == DEFAULT_COMPOSITES:
        comps = ["6M"]
    counts = {c: parse_count(c) for c in comps}
    results: list[PathResult] = []
    gsplat_results: list[PathResult] = []

    jobs = [(find_scene(name, args.scenes_dir), object_paths) for name in names]
    if comps:
        inputs = [find_scene(name, args.scenes_dir) for name in COMPOSITE_INPUTS]
        jobs += [(build_composite(c, counts[c], inputs, args.cache_dir), composite_paths) for c in comps]
    jobs += [(find_scene(path, None), composite_paths) for path in args.composite_files]
    for path, make_paths in jobs:
        scene = load_scene(path)
        label = os.path.basename(path)
        renderer = Renderer(scene, device=device, backend=args.backend)
        g_render = gsplat_renderer(scene, device) if use_gsplat else None
        for path_name, cams in make_paths(scene, width, height, n_frames).items():
            if not any(fnmatch.fnmatch(path_name, pat.strip()) for pat in args.paths.split(",")):
                continue
            reference_images = {}
            if g_render is not None:
                ms, fps, _ = time_path(g_render, cams, device, args.warmup)
                gsplat_results.append(PathResult(label, path_name, len(scene), "gsplat", ms, fps))
                reference_images = {i: g_render(cams[i]).clone() for i in range(0, len(cams), args.psnr_every)}
            default: dict = {"images": {}, "pairs": {}}  # filled by the default variant, which runs first
            for vname, settings in chosen.items():
                res = PathResult(label, path_name, len(scene), vname)
                graphs = renderer.graphs
                renderer.graphs = graphs and vname != "graphs=off"
                renderer.frame_mode = frame_mode(vname)
                time_variant(res, renderer, cams, settings, device, args.warmup)
                compare_variant(res, renderer, cams, settings, args.psnr_every, reference_images, default)
                renderer.graphs, renderer.frame_mode = graphs, "auto"
                results.append(res)
                print(f"  {label} {path_name} {vname}: median {res.median():.3f} ms", file=sys.stderr, flush=True)
        renderer = g_render = None  # free this scene's GPU memory before the next one
        if cuda:
            torch.cuda.empty_cache()

    print_table(results, gsplat_results, device_name(cuda), width, height, n_frames)
    write_json(args, results, gsplat_results, cuda, width, height, n_frames)
    return 0


def frame_mode(variant: str) -> str:
    """The renderer's frame route for a variant: "frames=graph" / "frames=counted" force one, others "auto"."""
    return variant.split("=", 1)[1] if variant in ("frames=graph", "frames=counted") else "auto"


def time_stream(renderer, cams, settings, warmup: int) -> tuple[list[float], float, list]:
    """Render the path through `Renderer.render_stream` (one frame in flight, as `warpsplat render` does) after
    `warmup` untimed frames (more if both slots' graphs need them); (frame ms list, wall fps, the frames'
    timers). A frame's time is the span from the end of the frame before it to its own end, on the GPU's
    clock: what each frame adds to the stream, idle gaps included (the first frame: its own span)."""
    import torch

    from renderer.pipeline import CAPTURE_AFTER, SLOTS

    # a stream alternates workspace slots, each with its graph. The first two frames size the pair capacity and
    # the launch configuration (each change is a new kind of frame); then a kind is captured on its
    # CAPTURE_AFTER-th frame in a row, in the slot that frame uses, and the next frame captures the other slot
    warm = max(warmup, 2 + CAPTURE_AFTER + SLOTS - 1) if warmup > 0 else 0
    for _ in renderer.render_stream(cams[:warm], settings):
        pass
    if renderer.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    timers = [out.timer for out in renderer.render_stream(cams, settings)]
    timers[-1].wait()
    wall = time.perf_counter() - t0
    ms = [timers[0].elapsed_ms(wait=True)["total"]] + [b.since(a) for a, b in zip(timers, timers[1:])]
    return ms, len(cams) / wall, timers


def future_cameras(res: PathResult, cams) -> dict:
    """Per camera (by id), the cameras after it in its window: what a variant that knows the path is given
    (as `warpsplat render` does); None for the others (as the viewer)."""
    known = knows_path(res.variant)
    return {id(c): cams[i + 1 : i + TEMPORAL_K] if known else None for i, c in enumerate(cams)}


def time_variant(res: PathResult, renderer, cams, settings, device, warmup: int) -> None:
    """The timed pass: frame times, wall frames/s, per-stage medians, peak memory and temporal reuse counters."""
    import torch

    cuda = device.type == "cuda"
    futures = future_cameras(res, cams)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    timers = []

    def frame(cam):
        renderer.render(cam, settings, sync_stats=False, future=futures[id(cam)])
        timers.append(renderer.last_timer)

    renderer.temporal.reset()
    if res.variant != "frames=one-by-one" and renderer.streams(settings):
        res.frame_ms, res.wall_fps, timers = time_stream(renderer, cams, settings, warmup)
    else:
        res.frame_ms, res.wall_fps, _ = time_path(frame, cams, device, warmup)
    stage_lists: dict[str, list[float]] = {}
    for t in timers[-len(cams) :]:
        for k, v in (t.elapsed_ms(wait=True) or {}).items():
            stage_lists.setdefault(k, []).append(v)
    res.stage_ms = {k: statistics.median(v) for k, v in stage_lists.items()}
    res.peak_mem_mb = torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0
    res.temporal = renderer.temporal.stats.as_dict() if is_temporal(settings) else {}


def compare_variant(res: PathResult, renderer, cams, settings, psnr_every: int, reference_images, default) -> None:
    """The untimed pass: counts, and images against gsplat's and the default variant's on every
    `psnr_every`-th frame. Temporal variants carry state from frame to frame, so they render the whole path
    in order and are sampled."""
    futures = future_cameras(res, cams)
    vis, pairs, longest, removed, projected = [], [], [], [], []
    renderer.temporal.reset()
    step = 1 if is_temporal(settings) else psnr_every
    for i in range(0, len(cams), step):
        out = renderer.render(cams[i], settings, future=futures[id(cams[i])])
        if i % psnr_every:
            continue
        vis.append(out.stats.n_visible)
        projected.append(out.stats.n_projected)
        pairs.append(out.stats.n_pairs)
        longest.append(out.stats.max_tile_pairs)
        img = out.image.clone()
        if i in reference_images:
            res.psnr_vs_gsplat.append(psnr(img, reference_images[i]))
        if res.variant == "default":
            default["images"][i] = img
            default["pairs"][i] = out.stats.n_pairs
        else:
            res.psnr_vs_default.append(psnr(img, default["images"][i]))
            if default["pairs"][i]:  # frames that see nothing remove nothing
                removed.append(1.0 - out.stats.n_pairs / default["pairs"][i])
            if is_lossy(settings):
                res.ssim_vs_default.append(ssim(img, default["images"][i]))
    res.visible, res.pairs, res.max_tile = int(statistics.median(vis)), int(statistics.median(pairs)), max(longest)
    res.pairs_removed = statistics.mean(removed) if removed else 0.0
    res.projected = int(statistics.median(projected))
