"""`warpsplat bench`: warpsplat against two anchors on the same GPU, cameras and resolution: gsplat 1.5.3 (the
exactness contract's renderer) in this process, and HiGS (the inference renderer in gsplat's main branch) in a
child process where it is installed.

It reports; it does not pass or fail. Per camera path, at the main size (1920x1080) and, for the close orbits and
a composite overview, at a large one (3840x2160 on CUDA), each row is timed as tools/bench_timing.py describes:
warm-up, a first pass along the path, a second pass. Per row:
- frame times: the second pass's median and p90, and the worst frames (the second pass's p99, the first pass's
  p99 and maximum); wall frames/s; per-stage medians; peak GPU memory above the scene's tensors;
- warpsplat's variants are rendered as `warpsplat render` renders a path (`Renderer.render_stream`: frames in
  flight where the renderer can keep them so, else one by one), and the row "frames=one-by-one" waits for each;
  each writes the images the anchors return, the float RGB and coverage (tools/bench_variants.py BENCH_OUTPUTS),
  but the "outputs=" rows: all three, and the 8-bit image alone that the viewer and `warpsplat render` take;
- the anchors are timed one by one and back to back, on camera tensors made before their timers start; each of
  warpsplat's rows is compared with them timed the same way (ratio: anchor / warpsplat, tools/bench_report.py);
- Gaussians visible, Gaussian-tile pairs, longest tile list (from warpsplat's exact binning);
- PSNR of warpsplat's image against gsplat's on sampled frames, of each variant against the default, and of HiGS
  against both; SSIM too for the lossy variants (the exactness contract: lossy switches report their loss).

Variants: the default settings, then each renderer switch flipped alone (an ablation row per switch), and
AdaGScale (lossy) at its default tau and a small tau sweep: pairs removed, frame time, PSNR/SSIM vs exact.
Output: tables on stdout and a JSON file with GPU name, versions, commit and the exact command.
On a CPU it runs too (small sizes, no anchors) so CI exercises its code paths.

Its parts: tools/bench_paths.py (scenes, composites, camera paths), tools/bench_variants.py (the settings of
each row), tools/bench_timing.py (how frames are timed), tools/bench_gsplat.py and tools/bench_higs.py (the
anchors), tools/bench_report.py (the tables and the JSON); this module holds the command and its run loop.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import gc
import os
import statistics
import sys
import time

from .bench_higs import find_higs, higs_child
from .bench_paths import (
    COMPOSITE_INPUTS,
    DEFAULT_SCENES,
    QUICK_SCENES,
    build_composite,
    check_path_patterns,
    composite_name,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)
from .bench_report import PathResult, device_name, print_table, write_json
from .bench_timing import (
    IN_FLIGHT,
    ONE_BY_ONE,
    Passes,
    PeakMemory,
    allocated,
    host_probe_us,
    one_by_one,
    synchronize,
    time_anchor,
    timed_calls,
    warm_up,
)
from .bench_variants import TEMPORAL_K, TRITON_ONLY, is_lossy, is_temporal, knows_path, selected_variants
from .cli import CliError, add_command
from .common import add_mkdir_argument, parse_size
from .metrics import psnr, ssim

DEFAULT_COMPOSITES = "6M,24M"
DEFAULT_FRAMES, DEFAULT_WARMUP = 40, 5
# The large size and the paths run at it: the close orbits (the hardest object views) and one composite overview.
LARGE_SIZE = (3840, 2160)
LARGE_PATHS = "close,composite_6M.ply/overview"
# --quick on a CPU: the bundled scene, small and short. At 160x120 a frame of the bundled scene costs about 0.5 s
# of one core whatever the size, so the frame count sets the time: 2 frames per pass, no warm-up (nothing
# compiles on a CPU), images compared on the first frame, and no rows whose switch the torch backend does not have
# (TRITON_ONLY: their frames are the default's there). Measured: QUICK_CPU_SECONDS of CPU time on the 2-core
# machine (its renderer uses one core), which an idle machine takes as wall time.
QUICK_CPU_SIZE = (160, 120)
QUICK_CPU_FRAMES = 2
QUICK_CPU_SECONDS = 75


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "bench",
        summary="benchmark warpsplat against gsplat and HiGS on real and composite scenes",
        description=f"""
            Time warpsplat's renderer and each of its switches (an ablation row per switch) on orbits of real
            scenes and fly-overs of large composites, against gsplat 1.5.3 and HiGS (gsplat's main branch, in a
            child process) on the same cameras when CUDA and they are there: frames in flight against the
            anchors' frames back to back, one by one against one by one; worst frames and peak memory too. Prints
            tables and writes every number to a JSON file. On a CPU, --quick is a check of the bundled scene at a
            small size: about {QUICK_CPU_SECONDS} s on an idle 2-core machine.
        """,
        examples="""
            warpsplat bench --quick                               # a short run
            warpsplat bench --scenes-dir scenes/ --higs /tmp/gsplat-main --json results.json
            warpsplat bench --variants 'temporal*' --paths flyover  # a few rows, one path kind
        """,
    )
    p.add_argument("--scenes", nargs="+", default=None, help="scene files (names in --scenes-dir, or paths), or 'none'")
    p.add_argument("--scenes-dir", default=None, help="folder of real scenes (default $WARPSPLAT_SCENES)")
    p.add_argument("--size", type=parse_size, default=(1920, 1080),
                   help="WIDTHxHEIGHT of every path (default 1920x1080)")  # fmt: skip
    p.add_argument("--large-size", type=parse_large_size, default=None,
                   help=f"WIDTHxHEIGHT at which --large-paths run too, or 'none' (default {LARGE_SIZE[0]}x"
                        f"{LARGE_SIZE[1]} with CUDA unless --quick, else none)")  # fmt: skip
    p.add_argument("--large-paths", default=LARGE_PATHS,
                   help=f"patterns of the paths run at --large-size too, as for --paths (default "
                        f"'{LARGE_PATHS}')")  # fmt: skip
    p.add_argument("--frames", type=int, default=DEFAULT_FRAMES,
                   help=f"frames per path, in each of the two timed passes (default {DEFAULT_FRAMES})")  # fmt: skip
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help=f"untimed frames before each row's first pass, 0 or more (default "
                        f"{DEFAULT_WARMUP})")  # fmt: skip
    p.add_argument("--psnr-every", type=int, default=6,
                   help="compare images, and count Gaussians and pairs, on every k-th frame from the first: 1 or "
                        "more (default 6)")  # fmt: skip
    p.add_argument("--bracket", action="store_true",
                   help="time the default again right after each other variant, on the same renderer, and compare "
                        "the variant with that: a row's speed against the default then spans minutes, not the "
                        "whole run, and the table shows how far the default itself moved between its two timings "
                        "(about twice the time of the variants' rows)")  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="a short run: with CUDA, two small scenes, 20 frames, the 6M composite and no large size; "
                        f"on a CPU, the bundled scene at {QUICK_CPU_SIZE[0]}x{QUICK_CPU_SIZE[1]}, {QUICK_CPU_FRAMES} "
                        f"frames per pass, no composites (about {QUICK_CPU_SECONDS} s on an idle 2-core "
                        "machine)")  # fmt: skip
    p.add_argument("--no-gsplat", action="store_true", help="skip gsplat 1.5.3 (always skipped without CUDA)")
    p.add_argument("--higs", default=None, metavar="DIR",
                   help="folder that holds HiGS's gsplat package (gsplat's main branch), put first on its child "
                        "process's Python path; 'none' to skip (default $WARPSPLAT_HIGS, else wherever `import "
                        "gsplat` in a child finds gsplat.experimental, with CUDA)")  # fmt: skip
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
                   help="comma-separated name patterns of the variants to run, e.g. 'temporal*,adagscale*'; a "
                        "pattern that starts with ! leaves out what it matches (default: all; the default variant "
                        "always runs, as the reference, and frames=one-by-one too when an anchor runs)")  # fmt: skip
    p.add_argument(
        "--paths",
        default="*",
        help="comma-separated patterns of the paths to run, matched against the path's name (orbit, close, "
        "flyover, overview) and against SCENE/PATH, e.g. 'plant.splat/close' (default: all)",
    )
    p.add_argument("--json", default=None,
                   help="where to write the full results (default: bench.json in --cache-dir, replaced at each "
                        "run)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace the --json file if it exists")
    add_mkdir_argument(p, "--json")
    p.set_defaults(func=run)


def parse_large_size(text: str) -> tuple[int, int] | str:
    return "none" if text == "none" else parse_size(text)


def quick_on_cpu(args: argparse.Namespace) -> str:
    """--quick without CUDA: the arguments left at their defaults become the CPU's short run. Returns the line
    that says so, which `run` prints once the arguments have passed their checks."""
    from scenes import bundled_scene_path

    if args.scenes is None:
        args.scenes = [str(bundled_scene_path())]
    if args.size == (1920, 1080):
        args.size = QUICK_CPU_SIZE
    if args.frames == DEFAULT_FRAMES:
        args.frames = QUICK_CPU_FRAMES
    if args.warmup == DEFAULT_WARMUP:
        args.warmup = 0
    if args.psnr_every == 6:
        args.psnr_every = args.frames
    if args.composites == DEFAULT_COMPOSITES:
        args.composites = "none"
    if args.variants == "*" and args.backend in ("auto", "torch"):
        args.variants = "*," + ",".join(f"!{v}" for v in TRITON_ONLY)
    scenes = ", ".join(os.path.basename(s) for s in args.scenes)
    n_variants = len(selected_variants(args.variants))
    return (
        f"bench --quick on a CPU: {scenes} at {args.size[0]}x{args.size[1]}, {args.frames} frames per pass after "
        f"{args.warmup} warm-up, {n_variants} variants; no anchors (they need CUDA); results to {args.json}"
        + ("" if args.composites == "none" else f"; composites {args.composites}")
    )


def path_selected(patterns: str, scene: str, path: str) -> bool:
    """Whether one of the comma-separated patterns matches the path's name or SCENE/PATH."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(f"{scene}/{path}", p) for p in pats)


def time_path(render_fn, cams, device, warmup: int) -> tuple[list[float], float, list]:
    """Render every camera once after `warmup` untimed frames, without waiting between frames; (frame ms list, wall
    fps, per-frame extras). Each frame's time is its StageTimer's span from before the call to after it (CUDA
    events, the call's own host sync included, or the wall clock on a CPU). One pass: the bench's rows take two
    (`time_variant`); tests/gpu/adagscale_sweep.py times its variants with this."""
    extras = []
    warm_up(lambda i: render_fn(cams[i]), len(cams), warmup, device)
    timers, fps = timed_calls(lambda i: extras.append(render_fn(cams[i])), len(cams), device, wait_each=False)
    return [t.elapsed_ms(wait=True)["total"] for t in timers], fps, extras


def check_numbers(args: argparse.Namespace) -> None:
    """One-line errors for counts out of range, before any work (a bad one failed mid-run, or not at all)."""
    if args.frames < 1:
        raise CliError(f"--frames {args.frames}: must be at least 1")
    # every row's counts and images come from the sampled frames, so there is no "never": 1 is every frame
    if args.psnr_every < 1:
        raise CliError(f"--psnr-every {args.psnr_every}: must be at least 1 (every frame)")
    if args.warmup < 0:
        raise CliError(f"--warmup {args.warmup}: must be 0 or more")


def run(args: argparse.Namespace) -> int:
    import torch

    from scenes import load_scene
    from scenes.atomic import check_writable

    from .bench_gsplat import GsplatRenderer

    check_numbers(args)
    # a folder given is checked even where the run's scenes are paths, or bundled (--quick on a CPU): a typo
    # otherwise surfaced only as one scene "not found", or not at all
    if args.scenes_dir is not None and not os.path.isdir(args.scenes_dir):
        raise CliError(f"--scenes-dir {args.scenes_dir}: no such folder")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if args.json is None:  # the bench's own file, beside its composites: each run's replaces the last
        args.json = os.path.join(args.cache_dir, "bench.json")
        os.makedirs(args.cache_dir, exist_ok=True)
    else:  # the user's file: as for every output, an existing one or a missing folder is an error before any work,
        # unless --overwrite or --mkdir asks for it (results of a long run are not lost to a reused name)
        check_writable(args.json, overwrite=args.overwrite, make_parent=args.mkdir)
    quick_note = quick_on_cpu(args) if args.quick and not cuda else None
    selected_variants(args.variants)  # a pattern that matches nothing is an error before any work
    higs = find_higs(args.higs, cuda)  # and so is a --higs folder without HiGS
    use_gsplat = cuda and not args.no_gsplat
    chosen = selected_variants(args.variants, anchors=use_gsplat or higs.found)
    n_frames = 20 if args.quick and args.frames == DEFAULT_FRAMES else args.frames
    large = args.large_size or (LARGE_SIZE if cuda and not args.quick else "none")
    sizes = [args.size] + ([large] if large != "none" and large != args.size else [])
    names = args.scenes or (QUICK_SCENES if args.quick else DEFAULT_SCENES)
    if names == ["none"]:  # composites only
        names = []
    comps = [] if args.composites in ("", "none") else args.composites.split(",")
    if args.quick and args.composites == DEFAULT_COMPOSITES:
        comps = ["6M"]
    counts = {c: parse_count(c) for c in comps}
    results: list[PathResult] = []
    anchors: list[PathResult] = []

    # every file found, and --paths checked against them, before the composites are built (minutes)
    scene_files = [find_scene(name, args.scenes_dir) for name in names]
    inputs = [find_scene(name, args.scenes_dir) for name in COMPOSITE_INPUTS] if comps else []
    composite_files = [find_scene(path, None) for path in args.composite_files]
    composite_labels = [composite_name(c) for c in comps] + [os.path.basename(p) for p in composite_files]
    check_path_patterns(args.paths, [os.path.basename(p) for p in scene_files], composite_labels)
    if quick_note:  # after every check: a run refused says only why
        print(quick_note, file=sys.stderr)
    jobs = [(path, object_paths) for path in scene_files]
    jobs += [(build_composite(c, counts[c], inputs, args.cache_dir), composite_paths) for c in comps]
    jobs += [(path, composite_paths) for path in composite_files]
    for path, make_paths in jobs:
        label = os.path.basename(path)
        scene = load_scene(path)
        plan = [(f"{w}x{h}/{name}", cams) for i, (w, h) in enumerate(sizes)
                for name, cams in make_paths(scene, w, h, n_frames).items()
                if path_selected(args.paths, label, name)
                and (i == 0 or path_selected(args.large_paths, label, name))]  # fmt: skip
        if not plan:
            continue
        with contextlib.ExitStack() as stack:
            higs_paths = {}
            if higs.found:  # first, while this process holds nothing of the scene on the GPU
                higs_paths = stack.enter_context(higs_child(higs, label, path, plan, device, args.warmup,
                                                            args.psnr_every))  # fmt: skip
            gsplat = GsplatRenderer(scene, device) if use_gsplat else None
            for key, cams in plan:
                rows, anchor_rows = run_path(args, scene, label, key.split("/", 1)[1], cams, device, chosen,
                                             gsplat, higs_paths.get(key))  # fmt: skip
                results += rows
                anchors += anchor_rows
            gsplat = None
        free_memory(device)

    print_table(results, anchors, device_name(cuda), sizes[0], n_frames, higs)
    write_json(args, results, anchors, cuda, sizes, n_frames, higs)
    return 0


def free_memory(device) -> None:
    """Let go of a path's renderer before the next is made: its frames and graphs hold it in reference cycles."""
    gc.collect()
    if device.type == "cuda":
        import torch

        torch.cuda.empty_cache()


def run_path(args, scene, label, path_name, cams, device, chosen, gsplat, higs_path):
    """One path at one size: the anchors, then every chosen variant on one renderer, made for the path (so that its
    memory and its first pass are those of a renderer that has seen no other path), each variant's frames
    starting from the path's start (`time_variant`). With --bracket the default is timed again after each other
    variant (`PathResult.default_after_ms`). Returns (variant rows, anchor rows)."""
    from renderer import Renderer
    from renderer.warmup import warm_up as compile_kernels

    size = (cams[0].width, cams[0].height)
    n = len(scene)
    samples = range(0, len(cams), args.psnr_every)
    anchors, reference_images = [], {}
    if gsplat is not None:
        draw = gsplat.frames(cams)
        row = anchor_row(label, path_name, n, "gsplat", size, time_anchor(draw, len(cams), device, args.warmup))
        reference_images = {i: host_copy(draw(i)) for i in samples}
        anchors.append(row)
        print(f"  {label} {path_name} {size[0]}x{size[1]} gsplat: median {row.median():.3f} ms, back to back "
              f"{row.median(IN_FLIGHT):.3f} ms", file=sys.stderr, flush=True)  # fmt: skip
    free_memory(device)
    renderer = Renderer(scene, device=device, backend=args.backend, frame_size=size)
    baseline = allocated(device)  # the scene's tensors (and the gsplat anchor's): not the renderer's working memory
    results = []
    default: dict = {"images": {}, "pairs": {}}  # filled by the default variant, which runs first
    for vname, settings in chosen.items():
        if results:  # each row's memory its own: not the buffers and graphs of the rows before it
            renderer.release_memory()
            free_memory(device)
        res = PathResult(label, path_name, n, vname, size)
        graphs = renderer.graphs
        renderer.graphs = graphs and vname != "graphs=off"
        renderer.frame_mode = frame_mode(vname)
        compile_kernels(renderer, [size], [settings])  # as the viewer and `render` do: no compile mid-path
        time_variant(res, renderer, cams, settings, device, args.warmup, baseline)
        compare_variant(res, renderer, cams, settings, args.psnr_every, reference_images, default)
        renderer.graphs, renderer.frame_mode = graphs, "auto"
        if args.bracket and vname != "default":  # the default again, now: drift between the rows cancels
            again = PathResult(label, path_name, n, "default", size)
            time_variant(again, renderer, cams, chosen["default"], device, args.warmup, baseline)
            res.default_after_ms = again.frame_ms
        results.append(res)
        print(f"  {label} {path_name} {size[0]}x{size[1]} {vname}: median {res.median():.3f} ms ({res.timing})",
              file=sys.stderr, flush=True)  # fmt: skip
    if higs_path is not None:
        row = anchor_row(label, path_name, n, "HiGS", size, higs_path.times)
        row.tile_size, row.tile_medians = higs_path.tile_size, higs_path.tile_medians
        for i, img in higs_path.images().items():  # compared on the device: 4K images are large
            img = img.to(device)
            if i in reference_images:
                row.psnr_vs_gsplat.append(psnr(img, reference_images[i].to(device)))
            if i in default["images"]:
                row.psnr_vs_default.append(psnr(img, default["images"][i].to(device)))
        anchors.append(row)
    renderer = None
    free_memory(device)
    return results, anchors


def anchor_row(label, path_name, n, name, size, times) -> PathResult:
    return PathResult(label, path_name, n, name, size, ONE_BY_ONE, times.one_by_one.second, times.one_by_one.first,
                      times.back_to_back, times.one_by_one.wall_fps, peak_mem_mb=times.peak_mem_mb,
                      host_probe_us=times.host_probe_us, host_probe_after_us=times.host_probe_after_us)  # fmt: skip


def host_copy(image):
    """A copy of an image in host memory: kept images stay out of the GPU memory the rows measure."""
    return image.detach().to("cpu", copy=True)


def frame_mode(variant: str) -> str:
    """The renderer's frame route for a variant: "frames=graph" / "frames=counted" force one, others "auto"."""
    return variant.split("=", 1)[1] if variant in ("frames=graph", "frames=counted") else "auto"


def stream_pass(renderer, cams, settings, futures: list | None = None) -> tuple[list[float], float, list, list[str]]:
    """One pass through `Renderer.render_stream` (one frame in flight, as `warpsplat render` does, with each
    frame's cameras ahead where the variant knows the path): (handover ms per frame, wall frames/s, the frames'
    timers, how each ran: `RenderStats.ran_label`)."""
    from renderer.timing import handover_ms

    synchronize(renderer.device)
    t0 = time.perf_counter()
    timers, ran = [], []
    for out in renderer.render_stream(cams, settings, futures=futures):
        timers.append(out.timer)
        ran.append(out.stats.ran_label())
    synchronize(renderer.device)
    wall = time.perf_counter() - t0
    return handover_ms(timers), len(cams) / wall, timers, ran


def future_cameras(res: PathResult, cams) -> dict:
    """Per camera (by id), the cameras after it in its window: what a variant that knows the path is given
    (as `warpsplat render` does); None for the others (as the viewer)."""
    known = knows_path(res.variant)
    return {id(c): cams[i + 1 : i + TEMPORAL_K] if known else None for i, c in enumerate(cams)}


def time_variant(res: PathResult, renderer, cams, settings, device, warmup: int, baseline: int) -> None:
    """The timed passes (tools/bench_timing.py): frame times, wall frames/s, per-stage medians of the second pass,
    peak memory above `baseline` and temporal reuse counters. Each pass renders the path from its start with
    temporal reuse reset (window and counters), as `warpsplat render` would; the window choice measured in the
    warm-up stays, as it does in the viewer (a `warpsplat render` run pays for its trial once: three frames)."""
    from renderer.graphs import CAPTURE_AFTER
    from renderer.pipeline import SLOTS

    futures = future_cameras(res, cams)
    stream = res.variant != "frames=one-by-one" and renderer.streams(settings)
    res.timing = IN_FLIGHT if stream else ONE_BY_ONE
    timers, ran = [], []  # the pass's: each frame's timer, how each ran (`RenderStats.ran_label`)

    def frame(i):
        out = renderer.render(cams[i], settings, sync_stats=False, future=futures[id(cams[i])])
        timers.append(renderer.last_timer)
        ran.append(out.stats.ran_label())

    def timed_pass():
        renderer.temporal.reset()
        timers.clear()
        ran.clear()
        if stream:
            ms, fps, stream_timers, stream_ran = stream_pass(renderer, cams, settings, [futures[id(c)] for c in cams])
            timers.extend(stream_timers)
            ran.extend(stream_ran)
            return ms, fps
        return one_by_one(frame, len(cams), device)

    with PeakMemory(device, baseline) as memory:
        renderer.temporal.reset()
        if stream:
            # a stream alternates workspace slots, each with its graph. The first two frames size the pair capacity
            # and the launch configuration (each change is a new kind of frame); then a kind is captured on its
            # CAPTURE_AFTER-th frame in a row, in the slot that frame uses, and the next frame captures the other
            warm = max(warmup, 2 + CAPTURE_AFTER + SLOTS - 1) if warmup > 0 else 0
            for _ in renderer.render_stream([cams[i % len(cams)] for i in range(warm)], settings):
                pass
            synchronize(device)
        else:
            warm_up(frame, len(cams), warmup, device)
        res.host_probe_us = host_probe_us()
        first, _ = timed_pass()
        res.first_pass_ran = list(ran)
        second, fps = timed_pass()
        res.ran = list(ran)
        res.host_probe_after_us = host_probe_us()
    passes = Passes(first, second, fps)
    res.first_pass_ms, res.frame_ms, res.wall_fps = passes.first, passes.second, passes.wall_fps
    stage_lists: dict[str, list[float]] = {}
    for t in timers:
        for k, v in (t.elapsed_ms(wait=True) or {}).items():
            stage_lists.setdefault(k, []).append(v)
    res.stage_ms = {k: statistics.median(v) for k, v in stage_lists.items()}
    res.peak_mem_mb = memory.mb
    res.temporal = renderer.temporal.stats.as_dict() if is_temporal(settings) else {}


def compare_variant(res: PathResult, renderer, cams, settings, psnr_every: int, reference_images, default) -> None:
    """The untimed pass: counts, and images against gsplat's and the default variant's on every
    `psnr_every`-th frame. Temporal variants carry state from frame to frame, so they render the whole path
    in order and are sampled. Images kept for later comparisons are kept in host memory."""
    futures = future_cameras(res, cams)
    vis, pairs, longest, removed, projected = [], [], [], [], []
    renderer.temporal.reset()
    step = 1 if is_temporal(settings) else psnr_every
    for i in range(0, len(cams), step):
        out = renderer.render(cams[i], settings, future=futures[id(cams[i])])
        if i % psnr_every:
            continue
        vis.append(out.stats.n_visible)  # counts from the same frames for every variant
        projected.append(out.stats.n_projected)
        pairs.append(out.stats.n_pairs)
        longest.append(out.stats.max_tile_pairs)
        img = out.image
        if img is None:  # the 8-bit image alone (outputs=rgba8): against the default's, made 8-bit the same way
            img = out.rgba8[..., :3].float() / 255.0
            kept = default["images"][i].to(img.device)
            res.psnr_vs_default.append(psnr(img, (kept.clamp(0, 1) * 255.0 + 0.5).floor() / 255.0))
            continue
        if i in reference_images:
            res.psnr_vs_gsplat.append(psnr(img, reference_images[i].to(img.device)))
        if res.variant == "default":
            default["images"][i] = host_copy(img)
            default["pairs"][i] = out.stats.n_pairs
        else:
            kept = default["images"][i].to(img.device)
            res.psnr_vs_default.append(psnr(img, kept))
            if default["pairs"][i]:  # frames that see nothing remove nothing
                removed.append(1.0 - out.stats.n_pairs / default["pairs"][i])
            if is_lossy(settings):
                res.ssim_vs_default.append(ssim(img, kept))
    res.visible, res.pairs, res.max_tile = int(statistics.median(vis)), int(statistics.median(pairs)), max(longest)
    res.pairs_removed = statistics.mean(removed) if removed else 0.0
    res.projected = int(statistics.median(projected))
