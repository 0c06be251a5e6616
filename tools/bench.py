"""`warpsplat bench`: warpsplat against gsplat 1.5.3, same process, same GPU, same cameras and resolution.

It reports; it does not pass or fail. Per camera path it measures, after warm-up (compilation and
autotuning excluded):
- frame time of every renderer variant (CUDA events around the whole frame, host sync included), median
  and p90, wall frames/s, per-stage medians, peak GPU memory;
- gsplat 1.5.3's `rasterization()` on the same cameras (the exactness contract's call, docs/architecture.md),
  timed the same;
- Gaussians visible, Gaussian-tile pairs, longest tile list (from warpsplat's exact binning);
- PSNR of warpsplat's image against gsplat's on sampled frames, and of each variant against the default;
  SSIM too for the lossy variants (the exactness contract: lossy switches report their loss).

Variants: the default settings, then each renderer switch flipped alone (an ablation row per switch), and
AdaGScale (lossy) at its default tau and a small tau sweep: pairs removed, frame time, PSNR/SSIM vs exact.
Output: a short table on stdout and a JSON file with GPU name, versions, commit and the exact command.
On a CPU it runs too (tiny sizes, no gsplat) so CI exercises its code paths.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from .cli import CliError, add_command, gaussian_count
from .common import parse_size
from .metrics import percentile, psnr

# Real scenes of the benchmark (file names in the scenes folder) and the quick subset.
DEFAULT_SCENES = [
    "playbot_lod0.sog",
    "plant.splat",
    "winter_fountain.splat",
    "narcissus.sog",
    "fruit_drops_minimal.ply",
]
QUICK_SCENES = ["plant.splat", "fruit_drops_minimal.ply"]
# Composites (SH degree 2) of these real scenes, made by `warpsplat compose`.
COMPOSITE_INPUTS = ["playbot_lod0.sog", "narcissus.sog", "plant.splat", "winter_fountain.splat"]
DEFAULT_COMPOSITES = "6M,24M"
# --quick on a CPU: the bundled scene, small and short, so that every variant runs in about a minute (the GPU
# --quick's 1920x1080 and 6M composite had done 2 rows after 9 minutes on the 2-core machine). At 160x120 a
# frame of the bundled scene still costs about 0.4 s of one core, so the frame count sets the time: 3 timed
# frames per variant, no warm-up (nothing compiles on a CPU), images compared on the first frame. Measured:
# 58 s (52 s of CPU) on the 2-core machine.
QUICK_CPU_SIZE = (160, 120)
QUICK_CPU_FRAMES = 3


def parse_count(text: str) -> int:
    """One --composites entry: '6M' -> 6_000_000."""
    try:
        return gaussian_count(text)
    except argparse.ArgumentTypeError as e:
        raise CliError(f"--composites {e}") from None


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
                   help="comma-separated name patterns of the variants to run, e.g. 'temporal*,occlusion*' "
                        "(default: all; the default variant always runs, as the reference)")  # fmt: skip
    p.add_argument(
        "--paths",
        default="*",
        help="comma-separated name patterns of the paths to run: orbit, close, flyover, overview (default: all)",
    )
    p.add_argument("--json", default=None,
                   help="where to write the full results (default: bench.json in --cache-dir)")  # fmt: skip
    p.set_defaults(func=run)


# ----------------------------------------------------------------------------------------------- results


@dataclass
class PathResult:
    scene: str
    path: str
    n_gaussians: int
    variant: str
    frame_ms: list[float] = field(default_factory=list)
    wall_fps: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)  # medians
    visible: int = 0
    pairs: int = 0
    max_tile: int = 0
    peak_mem_mb: float = 0.0
    psnr_vs_gsplat: list[float] = field(default_factory=list)
    psnr_vs_default: list[float] = field(default_factory=list)
    ssim_vs_default: list[float] = field(default_factory=list)  # lossy variants only
    pairs_removed: float = 0.0  # fraction of the default variant's pairs this variant does not emit
    temporal: dict = field(default_factory=dict)  # temporal reuse counters over the timed pass (hit rates)
    projected: int = 0  # median Gaussians projected per frame (fewer than n_gaussians inside temporal windows)

    def median(self) -> float:
        return statistics.median(self.frame_ms) if self.frame_ms else float("nan")

    def p90(self) -> float:
        return percentile(self.frame_ms, 90)


def path_psnr(frame_psnrs: list[float]) -> float:
    """A path's PSNR from its frames' PSNRs: that of their mean squared error (exact frames count as MSE 0, so
    one bad frame is not hidden by an average of dB values, and identical frames do not make it infinite)."""
    mse = statistics.mean(10.0 ** (-p / 10.0) for p in frame_psnrs)
    return float("inf") if mse == 0 else -10.0 * math.log10(mse)


def ssim(a, b) -> float:
    """Mean SSIM (Wang et al. 2004) of two [H, W, 3] images in [0, 1]: 11x11 Gaussian window, sigma 1.5,
    K1 = 0.01, K2 = 0.03, per channel, valid region (the window shrinks to fit images under 11 pixels)."""
    import torch

    x = a.double().clamp(0, 1).permute(2, 0, 1)[:, None]  # [3, 1, H, W]
    y = b.double().clamp(0, 1).permute(2, 0, 1)[:, None]
    size = min(11, x.shape[-2], x.shape[-1])
    size -= 1 - size % 2  # odd
    g = torch.exp(-((torch.arange(size, dtype=torch.float64) - size // 2) ** 2) / (2 * 1.5**2))
    g = (g / g.sum()).to(x.device)
    win = (g[:, None] * g[None, :])[None, None]

    def blur(z):
        return torch.nn.functional.conv2d(z, win)

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(s.mean())


# ----------------------------------------------------------------------------------------------- timing


class Clock:
    """CUDA events on the GPU, wall clock on the CPU; `ms()` is read after `sync()`."""

    def __init__(self, cuda: bool):
        import torch

        self.cuda = cuda
        self.torch = torch

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def ms(self, a, b) -> float:
        return float(a.elapsed_time(b)) if self.cuda else (b - a) * 1e3


def gsplat_renderer(scene, device):
    """A callable camera -> [H,W,3] image through gsplat 1.5.3, called as the exactness contract
    (docs/architecture.md) states."""
    import torch
    from gsplat import rasterization

    act = scene.to(device).activated()
    degree = scene.sh_degree

    def render(cam):
        viewmat = torch.tensor(cam.viewmat, dtype=torch.float32, device=device)[None]
        K = torch.tensor(cam.K, dtype=torch.float32, device=device)[None]
        colors, _, _ = rasterization(
            act.means, act.quats, act.scales, act.opacities, act.sh, viewmat, K, cam.width, cam.height,
            sh_degree=degree, near_plane=0.01, far_plane=1e10, eps2d=0.3, packed=False, tile_size=16,
            rasterize_mode="classic",
        )  # fmt: skip
        return colors[0]

    return render


def time_path(render_fn, cams, clock: Clock, warmup: int) -> tuple[list[float], float, list]:
    """Render every camera once after `warmup` untimed frames; (frame ms list, wall fps, per-frame extras)."""
    for cam in cams[: max(warmup, 0)]:
        render_fn(cam)
    clock.sync()
    marks, extras = [], []
    t0 = time.perf_counter()
    for cam in cams:
        a = clock.mark()
        extras.append(render_fn(cam))
        marks.append((a, clock.mark()))
    clock.sync()
    wall = time.perf_counter() - t0
    return [clock.ms(a, b) for a, b in marks], len(cams) / wall, extras


# ----------------------------------------------------------------------------------------------- paths


# The close orbit's distance as a fraction of the default framing's: the object then overfills the frame, the
# hardest kind of object view (large footprints, long tile lists), where a renderer's speed matters most.
CLOSE_ORBIT = 0.5


def object_paths(scene, width, height, n):
    """The default orbit (the whole object in view) and a close one (the object overfilling the frame)."""
    import math

    from renderer.paths import orbit_path, scene_frame

    f = scene_frame(scene, width, height)
    elev = math.radians(f.elevation_deg)
    close = dict(radius=CLOSE_ORBIT * f.distance * math.cos(elev), rise=CLOSE_ORBIT * f.distance * math.sin(elev))
    return {"orbit": orbit_path(scene, width, height, n), "close": orbit_path(scene, width, height, n, **close)}


def composite_paths(scene, width, height, n):
    """A low fly-over crossing the grid along x, and an overview that sees all of it (the worst case).

    Composites lie in the ground plane (x-z), up is -y, each cell a normalised scene of size ~1.
    """
    import numpy as np

    from renderer import Camera, look_at_pose
    from renderer.paths import orbit_path

    lo, hi = (v.double().numpy() for v in scene.robust_bounds())
    zc = 0.5 * (lo[2] + hi[2])
    height_y = lo[1] - 0.6  # 0.6 above the tops of the objects (up is -y)
    pitch = np.radians(30.0)
    fly = []
    for i in range(n):
        x = lo[0] - 0.5 + (hi[0] - lo[0] + 1.0) * i / max(n - 1, 1)
        eye = np.array([x, height_y, zc])
        target = eye + np.array([np.cos(pitch), np.sin(pitch), 0.0])  # forward along +x, looking down
        fly.append(Camera.from_fov(width, height, 60.0, look_at_pose(eye, target, (0, -1, 0))))
    return {"flyover": fly, "overview": orbit_path(scene, width, height, n, turns=0.25)}


def build_composite(label: str, target: int, inputs: list[str], cache_dir: str) -> str:
    """A composite of real scenes made by the scene composer (cached as .ply between runs)."""
    from scenes import load_scene

    from .compose import compose

    os.makedirs(cache_dir, exist_ok=True)
    out = os.path.join(cache_dir, f"composite_{label}.ply")
    if os.path.exists(out):
        return out
    scenes = [load_scene(p) for p in inputs]
    copies = max(1, round(target / (sum(len(s) for s in scenes) / len(scenes))))
    cols = math.ceil(math.sqrt(copies))
    t0 = time.perf_counter()
    n = compose(scenes, out, grid=(cols, math.ceil(copies / cols)), target_count=target, sh_degree=2)
    print(f"  composed {label}: {n:,} Gaussians from {len(inputs)} scenes in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)  # fmt: skip
    return out


# ----------------------------------------------------------------------------------------------- main


# AdaGScale's tau sweep beside its default (pixels of colour-weighted alpha mass per Gaussian; at 1920x1080
# Gaussians cover more pixels, so a tau keeps more of each footprint than at the small test sizes).
ADAGSCALE_SWEEP = (0.3, 1.0, 3.0)


def variants():
    """The default settings, then each renderer switch flipped alone (ablation), then the lossy AdaGScale at
    its default tau and the sweep (`is_lossy` marks them)."""
    from renderer import RenderSettings

    out = {
        "default": RenderSettings(),
        "graphs=off": RenderSettings(),  # the same frames launched stage by stage (and timed per stage)
        "tile_size=16": RenderSettings(tile_size=16),
        "rasterizer=batched": RenderSettings(rasterizer="batched"),
        "adagscale": RenderSettings(adagscale=True),
    }
    for tau in ADAGSCALE_SWEEP:
        out[f"adagscale tau={tau:g}"] = RenderSettings(adagscale=True, adagscale_tau=tau)
    # temporal reuse: "known" gets the path's next cameras (as `warpsplat render` does), "predicted" does not
    # (as the viewer); both render the path in order, so their quality is measured in order too
    out[f"temporal K={TEMPORAL_K} known"] = RenderSettings(temporal_window=TEMPORAL_K)
    out[f"temporal K={TEMPORAL_K} predicted"] = RenderSettings(temporal_window=TEMPORAL_K)
    out["occlusion_cull"] = RenderSettings(occlusion_cull=True)
    out["occlusion_cull refresh=4"] = RenderSettings(occlusion_cull=True, occlusion_refresh=4)
    out[f"temporal K={TEMPORAL_K} known+occl"] = RenderSettings(temporal_window=TEMPORAL_K, occlusion_cull=True)
    return out


TEMPORAL_K = 8


def selected_variants(patterns: str) -> dict:
    """The default variant, then the others whose names match one of the comma-separated glob patterns."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = {k: v for k, v in variants().items() if k == "default" or any(fnmatch.fnmatch(k, p) for p in pats)}
    if len(chosen) == 1 and pats and pats != ["default"]:
        raise CliError(f"--variants {patterns!r}: matches no variant; known: {', '.join(variants())}")
    return chosen


def is_lossy(settings) -> bool:
    return settings.adagscale or settings.occlusion_cull


def is_temporal(settings) -> bool:
    return settings.temporal_window > 1 or settings.occlusion_cull


def find_scene(name: str, scenes_dir: str | None) -> str:
    if os.path.exists(name):
        return name
    candidates = [scenes_dir, os.environ.get("WARPSPLAT_SCENES"), os.path.join(os.getcwd(), "..", "shared", "scenes")]
    for d in candidates:
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise CliError(f"scene {name}: not found (give a path, --scenes-dir or WARPSPLAT_SCENES)")


def git_commit() -> str:
    env = os.environ.get("WARPSPLAT_COMMIT")
    if env:
        return env
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


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


def run(args: argparse.Namespace) -> int:
    import torch

    from renderer import Renderer
    from scenes import load_scene

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
    clock = Clock(cuda)
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
                ms, fps, _ = time_path(g_render, cams, clock, args.warmup)
                gsplat_results.append(PathResult(label, path_name, len(scene), "gsplat", ms, fps))
                reference_images = {i: g_render(cams[i]).clone() for i in range(0, len(cams), args.psnr_every)}
            default_images, default_pairs = {}, {}
            # the next cameras of each frame, for the variants that know the path (as `warpsplat render` does)
            futures = {id(c): cams[i + 1 : i + TEMPORAL_K] for i, c in enumerate(cams)}
            for vname, settings in chosen.items():
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                timers = []
                known = "known" in vname

                def frame(cam, settings=settings, timers=timers, renderer=renderer, known=known, futures=futures):
                    renderer.render(cam, settings, sync_stats=False, future=futures[id(cam)] if known else None)
                    timers.append(renderer.last_timer)

                graphs = renderer.graphs
                renderer.graphs = graphs and vname != "graphs=off"
                renderer.temporal.reset()
                ms, fps, _ = time_path(frame, cams, clock, args.warmup)
                res = PathResult(label, path_name, len(scene), vname, ms, fps)
                stage_lists: dict[str, list[float]] = {}
                for t in timers[-len(cams) :]:
                    for k, v in (t.elapsed_ms(wait=True) or {}).items():
                        stage_lists.setdefault(k, []).append(v)
                res.stage_ms = {k: statistics.median(v) for k, v in stage_lists.items()}
                res.peak_mem_mb = torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0
                res.temporal = renderer.temporal.stats.as_dict() if is_temporal(settings) else {}
                vis, pairs, longest, removed, projected = [], [], [], [], []
                renderer.temporal.reset()
                # temporal variants carry state from frame to frame: render the whole path in order, sample
                step = 1 if is_temporal(settings) else args.psnr_every
                for i in range(0, len(cams), step):
                    out = renderer.render(cams[i], settings, future=futures[id(cams[i])] if known else None)
                    if i % args.psnr_every:
                        continue
                    vis.append(out.stats.n_visible)
                    projected.append(out.stats.n_projected)
                    pairs.append(out.stats.n_pairs)
                    longest.append(out.stats.max_tile_pairs)
                    img = out.image.clone()
                    if i in reference_images:
                        res.psnr_vs_gsplat.append(psnr(img, reference_images[i]))
                    if vname == "default":
                        default_images[i] = img
                        default_pairs[i] = out.stats.n_pairs
                    else:
                        res.psnr_vs_default.append(psnr(img, default_images[i]))
                        if default_pairs[i]:  # frames that see nothing remove nothing
                            removed.append(1.0 - out.stats.n_pairs / default_pairs[i])
                        if is_lossy(settings):
                            res.ssim_vs_default.append(ssim(img, default_images[i]))
                res.visible, res.pairs, res.max_tile = (
                    int(statistics.median(vis)),
                    int(statistics.median(pairs)),
                    max(longest),
                )
                res.pairs_removed = statistics.mean(removed) if removed else 0.0
                res.projected = int(statistics.median(projected))
                renderer.graphs = graphs
                results.append(res)
                print(f"  {label} {path_name} {vname}: median {res.median():.3f} ms", file=sys.stderr, flush=True)
        renderer = g_render = None  # free this scene's GPU memory before the next one
        if cuda:
            torch.cuda.empty_cache()

    print_table(results, gsplat_results, device_name(cuda), width, height, n_frames)
    write_json(args, results, gsplat_results, cuda, width, height, n_frames)
    return 0


def device_name(cuda: bool) -> str:
    import torch

    return torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})"


# The renderer's stage names (renderer/pipeline.py), in frame order.
STAGES = ("cull", "project", "order", "bin", "sort", "tile_ranges", "rasterize", "depth", "total")


def print_table(results, gsplat_results, gpu, width, height, n_frames) -> None:
    g = {(r.scene, r.path): r for r in gsplat_results}
    print(f"\nwarpsplat bench on {gpu}, {width}x{height}, {n_frames} frames per path (ms per frame)")
    d = {(r.scene, r.path): r for r in results if r.variant == "default"}
    hdr = f"{'scene / path':34} {'variant':24} {'median':>8} {'p90':>8} {'gsplat':>8} {'speedup':>8} {'vs dflt':>7} " \
          f"{'visible':>9} {'pairs':>10} {'removed':>7} {'max tile':>8} {'PSNR':>7} {'mean':>7} {'SSIM':>6} " \
          f"{'MB':>7}"  # fmt: skip
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        gr = g.get((r.scene, r.path))
        gms = f"{gr.median():8.3f}" if gr else f"{'-':>8}"
        speed = f"{gr.median() / r.median():7.2f}x" if gr else f"{'-':>8}"
        ps = r.psnr_vs_gsplat if r.variant == "default" else r.psnr_vs_default
        p = f"{min(ps):7.1f} {path_psnr(ps):7.1f}" if ps else f"{'-':>7} {'-':>7}"
        ss = f"{min(r.ssim_vs_default):6.4f}" if r.ssim_vs_default else f"{'-':>6}"
        rm = f"{100 * r.pairs_removed:6.1f}%" if r.variant != "default" else f"{'-':>7}"
        dr = d.get((r.scene, r.path))
        vs = f"{dr.median() / r.median():6.2f}x" if dr and r.variant != "default" else f"{'-':>7}"
        print(f"{(r.scene + ' / ' + r.path)[:34]:34} {r.variant:24} {r.median():8.3f} {r.p90():8.3f} {gms} {speed} "
              f"{vs} {r.visible:9,} {r.pairs:10,} {rm} {r.max_tile:8,} {p} {ss} {r.peak_mem_mb:7.0f}")  # fmt: skip
    print("PSNR: min over sampled frames, and the path's (from the mean MSE of those frames), dB; default variant "
          "against gsplat, other variants against default (exact). SSIM: min, lossy variants against default. "
          "removed: pairs fewer than default. vs dflt: speed against the default variant.")  # fmt: skip
    staged = [r for r in results if "rasterize" in r.stage_ms]
    if staged:
        names = [k for k in STAGES if any(k in r.stage_ms for r in staged)]
        print("\nper-stage medians (ms), variants launched stage by stage:")
        print(f"{'scene / path':34} {'variant':24} " + " ".join(f"{k:>11}" for k in names))
        for r in staged:
            cells = " ".join(f"{r.stage_ms[k]:11.3f}" if k in r.stage_ms else f"{'-':>11}" for k in names)
            print(f"{(r.scene + ' / ' + r.path)[:34]:34} {r.variant:24} {cells}")
    temporal = [r for r in results if r.temporal]
    if temporal:
        print("\ntemporal reuse (timed pass): window hit rate, builds, occlusion refreshes; Gaussians projected per "
              "frame (median)")  # fmt: skip
        for r in temporal:
            t = r.temporal
            print(f"{(r.scene + ' / ' + r.path)[:34]:34} {r.variant:24} {100 * t['window_hit_rate']:5.1f}% "
                  f"{t['window_builds']:5d} {t['occlusion_refreshes']:5d} {r.projected:12,}")  # fmt: skip


def write_json(args, results, gsplat_results, cuda, width, height, n_frames) -> None:
    import torch
    import triton

    try:
        import gsplat

        gsplat_version = gsplat.__version__
    except ImportError:
        gsplat_version = None
    doc = {
        "command": "warpsplat " + " ".join(shlex.quote(a) for a in args.argv),
        "gpu": device_name(cuda),
        "versions": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "gsplat": gsplat_version,
            "python": platform.python_version(),
        },  # fmt: skip
        "commit": git_commit(),
        "size": [width, height],
        "frames": n_frames,
        "paths": [{**r.__dict__, "median_ms": r.median(), "p90_ms": r.p90()} for r in results + gsplat_results],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    tmp = args.json + ".part"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=float)
    os.replace(tmp, args.json)
    print(f"wrote {args.json}")
