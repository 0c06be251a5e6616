"""Soak: render many frames of a moving camera and check that memory does not grow.

    python tests/reliability/soak.py                                   # CPU, torch backend, 300 frames, 64x48
    python tests/reliability/soak.py SCENE --device cuda --frames 10000 --size 1920x1080   # the GPU machine
    python tests/reliability/soak.py --device cuda --frames 10000 --json soak.json          # keep the samples

The camera orbits the scene twice over `--frames` frames (half each). The first orbit is the warm-up: the
renderer's grow-only buffers (pairs, rasterizer chunks, images) reach their size for these views there. The
second orbit repeats the same cameras, so any growth during it is a leak: host RSS (after gc.collect()) and, on
CUDA, torch.cuda.memory_allocated are sampled every `--every` frames, and the script exits with code 1 when
the median of the last third of the second orbit's samples exceeds that of its first third by more than the
tolerance (`--tolerance-mb`, default 16 MB for host RSS, which the allocator's caching moves by up to ~20 MB
between samples; 1 MB for CUDA allocated memory, which is exact). torch.cuda.max_memory_allocated and
memory_reserved are printed beside it.

On glibc, host RSS can swing by hundreds of MB when the torch backend allocates large temporaries: with the
reference rasterizer before cf76428 (whole tile lists at once), the bundled scene at 32x24 swung between 360
and 730 MB (malloc's dynamic mmap threshold keeps freed ~75 MB blocks in the heap), and stayed flat at 364 MB
with MALLOC_MMAP_THRESHOLD_=1048576; with the blockwise rasterizer it stays within 361-373 MB. Set that
variable to tell such swings from a leak.

Not collected by pytest (the file name does not start with `test_`); tests/reliability/test_soak_script.py runs
it for a few frames so that it keeps working.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MB = 1 << 20


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scene", nargs="?", default=None, help="scene file (default: the bundled scene)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument("--backend", default=None, help="torch or triton (default: torch on cpu, triton on cuda)")
    p.add_argument("--frames", type=int, default=300, help="frames in all, two orbits of half each (default 300)")
    p.add_argument("--size", default="64x48", help="WIDTHxHEIGHT (default 64x48)")
    p.add_argument("--every", type=int, default=None, help="sample memory every N frames (default frames/20)")
    p.add_argument("--tolerance-mb", type=float, default=None, help="allowed growth over the second orbit")
    p.add_argument("--async-stats", action="store_true", help="render(sync_stats=False), as the viewer does on CUDA")
    p.add_argument("--json", default=None, help="write the samples and the verdict to this file")
    args = p.parse_args(argv)
    if args.frames < 4:
        p.error("--frames: need at least 4")
    return args


def host_rss() -> int:
    """Resident set size of this process in bytes (/proc/self/statm; ru_maxrss where there is no /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    on_cuda = args.device.startswith("cuda")
    backend = args.backend or ("triton" if on_cuda else "torch")
    if backend == "triton" and not on_cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before the kernels are imported
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))

    import torch

    from renderer import Renderer
    from renderer.paths import orbit_path
    from scenes import bundled_scene_path, load_scene

    width, height = (int(v) for v in args.size.lower().split("x"))
    every = args.every or max(1, args.frames // 20)
    scene = load_scene(args.scene or bundled_scene_path())
    renderer = Renderer(scene, device=args.device, backend=backend)
    half = args.frames // 2
    cams = orbit_path(scene, width, height, half)
    cams = cams + cams  # the second orbit repeats the first's cameras exactly

    def sample(frame: int, elapsed: float) -> dict:
        gc.collect()
        s = {"frame": frame, "seconds": round(elapsed, 3), "rss_mb": host_rss() / MB}
        if on_cuda:
            torch.cuda.synchronize(renderer.device)
            s["cuda_allocated_mb"] = torch.cuda.memory_allocated(renderer.device) / MB
            s["cuda_max_allocated_mb"] = torch.cuda.max_memory_allocated(renderer.device) / MB
            s["cuda_reserved_mb"] = torch.cuda.memory_reserved(renderer.device) / MB
        return s

    print(
        f"soak: {len(scene):,} Gaussians, {len(cams)} frames ({half} per orbit) at {width}x{height}, "
        f"{renderer.device} ({renderer.backend}), sampling every {every} frames"
    )
    header = f"{'frame':>7} {'s':>8} {'rss MB':>9}" + (
        f" {'cuda MB':>9} {'max MB':>9} {'reserved':>9}" if on_cuda else ""
    )
    print(header)
    samples: list[dict] = []
    t0 = time.perf_counter()
    for i, cam in enumerate(cams):
        renderer.render(cam, sync_stats=not args.async_stats)
        if i + 1 == half or (i + 1) % every == 0 or i + 1 == len(cams):
            s = sample(i + 1, time.perf_counter() - t0)
            if samples and samples[-1]["frame"] == s["frame"]:
                continue
            samples.append(s)
            line = f"{s['frame']:7d} {s['seconds']:8.1f} {s['rss_mb']:9.1f}"
            if on_cuda:
                line += f" {s['cuda_allocated_mb']:9.1f} {s['cuda_max_allocated_mb']:9.1f} {s['cuda_reserved_mb']:9.1f}"
            print(line, flush=True)
    wall = time.perf_counter() - t0

    # Growth over the second orbit: the median of its last third of samples minus that of its first third
    # (from the end of the warm-up on), so that one sample caught at an allocator peak decides nothing.
    second = [s for s in samples if s["frame"] >= half]
    k = max(1, len(second) // 3)
    checks = {"rss_mb": 16.0 if args.tolerance_mb is None else args.tolerance_mb}
    if on_cuda:
        checks["cuda_allocated_mb"] = 1.0 if args.tolerance_mb is None else args.tolerance_mb
    start = {key: statistics.median(s[key] for s in second[:k]) for key in checks}
    end = {key: statistics.median(s[key] for s in second[-k:]) for key in checks}
    growth = {key: end[key] - start[key] for key in checks}
    failed = [key for key, tol in checks.items() if growth[key] > tol]
    rss = [s["rss_mb"] for s in samples]
    print(
        f"{len(cams)} frames in {wall:.1f} s ({len(cams) / wall:.1f} fps); over the second orbit "
        + ", ".join(
            f"{key} {start[key]:.1f} -> {end[key]:.1f} ({growth[key]:+.1f}, tolerance {checks[key]:g})"
            for key in checks
        )  # fmt: skip
        + f"; rss over the whole run: first {rss[0]:.1f}, min {min(rss):.1f}, max {max(rss):.1f}, last {rss[-1]:.1f}"
    )
    print("FAIL: memory grew: " + ", ".join(failed) if failed else "OK: no growth")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"argv": sys.argv, "device": str(renderer.device), "backend": renderer.backend,
                       "gaussians": len(scene), "size": [width, height], "frames": len(cams), "samples": samples,
                       "growth": growth, "tolerance": checks, "failed": failed}, f, indent=1)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
