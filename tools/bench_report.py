"""What `warpsplat bench` reports: a row per path and variant (`PathResult`), the table it prints and the
JSON it writes (read by tools/bench_plot.py), with the device, versions and commit they were measured on."""

from __future__ import annotations

import json
import os
import platform
import shlex
import statistics
import subprocess
from dataclasses import dataclass, field

from .metrics import path_psnr, percentile


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


def git_commit(cwd: str | None = None) -> str:
    """The commit the results belong to: $WARPSPLAT_COMMIT when set, else git's HEAD, with "-dirty" when tracked
    files differ from it (a working tree copied onto another machine over an older checkout reads as its
    HEAD plus changes, not as that HEAD)."""
    env = os.environ.get("WARPSPLAT_COMMIT")
    if env:
        return env
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=cwd
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}-dirty" if changed else head


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
        print("\ntemporal reuse (timed pass): window hit rate, builds; Gaussians projected per frame (median)")
        for r in temporal:
            t = r.temporal
            print(f"{(r.scene + ' / ' + r.path)[:34]:34} {r.variant:24} {100 * t['window_hit_rate']:5.1f}% "
                  f"{t['window_builds']:5d} {r.projected:12,}")  # fmt: skip


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
