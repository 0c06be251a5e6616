"""GPU memory: the renderer's measured peaks against renderer/memory.py's estimate, and the largest composite that
renders at 1080p within a 24 GB card's memory (run on the GPU machine; the README quotes the second).

    python3 tests/gpu/memory_check.py --scenes-dir .gpu/scenes                  # every bench path
    python3 tests/gpu/memory_check.py --scenes-dir .gpu/scenes --fit 24 --counts 8M,12M,16M,20M,24M,28M,32M

Paths (the bench's, `tools/bench_paths.py`; each scene in a fresh process, so the allocator starts empty): the
peak of torch's allocated memory (above what the process held before the Renderer) and reserved memory while
the renderer renders each path as the bench does (`render_stream`), after it was made and warmed up (the
warm-up's own peak, on renderers of its own freed after it, is printed apart), against the estimate without its
margin (`peak`) and with it (`total`, what `check_fits` compares with the free memory). The renderer's copy of
the scene on the device (its means, and its SH in fp16) is inside both.

--fit G: composites of increasing size (`build_composite`, cached in --cache-dir), each in a fresh process
limited to what a G GB card leaves free (`torch.cuda.set_per_process_memory_fraction`: G GiB less the CUDA
context this process measured), rendered at 1920x1080 along the fly-over and the overview. For each: refused by
check_fits (one line, before any work), rendered, or out of memory; the largest that rendered is the answer, and
a composite that check_fits refused but would have rendered (or let through and ran out) is a wrong estimate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def measure(path: str, kind: str, size: tuple[int, int], frames: int, fit_gb: float | None) -> dict:
    """In this (fresh) process: make, warm and run a renderer of `path` along its bench paths; the peaks."""
    import torch

    from renderer import Renderer
    from renderer.memory import OutOfDeviceMemoryError, estimate_bytes, free_bytes
    from renderer.pipeline import check_scene_fits
    from renderer.routes import runs_counted
    from renderer.warmup import warm_up
    from scenes import load_scene
    from tools.bench_paths import composite_paths, object_paths

    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    context = total - free  # the CUDA context and anything else already on the device
    if fit_gb is not None:
        torch.cuda.set_per_process_memory_fraction(max(fit_gb * 2**30 - context, 0) / total)
    scene = load_scene(path)
    n, k = len(scene), scene.sh.shape[1]
    est = estimate_bytes(n, k, *size, "cuda", counted=runs_counted(n, "auto"))
    out = {"scene": os.path.basename(path), "gaussians": n, "sh_coeffs": k, "estimate_peak": est.peak,
           "estimate_total": est.total, "estimate_terms": est.summary(), "context_bytes": context}  # fmt: skip
    try:
        check_scene_fits(scene, "cuda", size)
        out["check"] = "fits"
    except OutOfDeviceMemoryError as e:
        out["check"], out["message"] = "refused", str(e)
        if fit_gb is None:
            return {**out, "outcome": "refused"}
        out["free_bytes"] = free_bytes("cuda")  # --fit tries it anyway, to see whether the refusal was right
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    paths = (object_paths if kind == "object" else composite_paths)(scene, *size, frames)
    try:
        if out["check"] == "refused":  # --fit: past the refusal, to see whether it was right
            import renderer.pipeline

            renderer.pipeline.check_scene_fits = lambda *a, **k: None
        r = Renderer(scene, device="cuda", frame_size=size)
        out["after_renderer_bytes"] = torch.cuda.memory_allocated() - base
        warm_up(r, [size], [r_settings()])
        torch.cuda.synchronize()
        out["warm_up_peak_allocated"] = torch.cuda.max_memory_allocated() - base  # its own renderers, then freed
        torch.cuda.reset_peak_memory_stats()  # the frames' peaks from here
        per_path = {}
        for name, cams in paths.items():
            torch.cuda.synchronize()
            for _ in r.render_stream(cams, r_settings()):
                pass
            torch.cuda.synchronize()
            per_path[name] = {"allocated": torch.cuda.max_memory_allocated() - base,
                              "reserved": torch.cuda.max_memory_reserved()}  # fmt: skip
        out["paths"] = per_path
        out["workspace_bytes"] = r.ws.nbytes()
        out["pair_capacity"] = r.pair_capacity.size
    except torch.OutOfMemoryError as e:
        return {**out, "outcome": "out of memory", "message": str(e).splitlines()[0]}
    out["peak_allocated"] = torch.cuda.max_memory_allocated() - base
    out["peak_reserved"] = torch.cuda.max_memory_reserved()
    return {**out, "outcome": "rendered"}


def r_settings():
    from renderer import RenderSettings

    return RenderSettings()


def child(args: list[str]) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"outcome": "crashed", "message": done.stderr.strip().splitlines()[-1] if done.stderr else "?"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes-dir", default=None)
    parser.add_argument("--cache-dir", default=".bench-cache")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--composites", default="6M,24M", help="composites of the paths mode")
    parser.add_argument("--fit", type=float, default=None, help="find the largest composite within this many GB")
    parser.add_argument("--counts", default="8M,12M,16M,20M,24M,28M,32M", help="composite sizes tried by --fit")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="object", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.lower().split("x"))
    if args.child:
        print(json.dumps(measure(args.path, args.kind, size, args.frames, args.fit)))
        return 0

    from tools.bench_paths import COMPOSITE_INPUTS, DEFAULT_SCENES, build_composite, find_scene, parse_count

    common = ["--size", args.size, "--frames", str(args.frames)]
    inputs = [find_scene(name, args.scenes_dir) for name in COMPOSITE_INPUTS]
    if args.fit is None:
        jobs = [(find_scene(name, args.scenes_dir), "object") for name in DEFAULT_SCENES]
        jobs += [(build_composite(c, parse_count(c), inputs, args.cache_dir), "composite")
                 for c in args.composites.split(",")]  # fmt: skip
        print(f"{'scene':<28}{'path':<10}{'allocated':>12}{'reserved':>12}{'estimate':>12}{'x margin':>12}")
        for path, kind in jobs:
            r = child([*common, "--path", path, "--kind", kind])
            if r["outcome"] != "rendered":
                print(f"{os.path.basename(path):<28}{r['outcome']}: {r.get('message', '')}")
                continue
            for name, peak in r["paths"].items():
                print(f"{r['scene']:<28}{name:<10}{mb(peak['allocated']):>12}{mb(peak['reserved']):>12}"
                      f"{mb(r['estimate_peak']):>12}{mb(r['estimate_total']):>12}")  # fmt: skip
            print(f"  {r['estimate_terms']}; workspace measured {mb(r['workspace_bytes'])}, pair capacity "
                  f"{r['pair_capacity']:,}; renderer made {mb(r['after_renderer_bytes'])}, warm-up peak "
                  f"{mb(r['warm_up_peak_allocated'])}")  # fmt: skip
        return 0

    print(f"composites at {args.size} within a {args.fit:g} GB card (per-process memory fraction):")
    largest, wrong = None, []
    for label in args.counts.split(","):
        path = build_composite(label, parse_count(label), inputs, args.cache_dir)
        r = child([*common, "--fit", str(args.fit), "--path", path, "--kind", "composite"])
        peak = f", peak reserved {mb(r['peak_reserved'])}" if r["outcome"] == "rendered" else ""
        print(
            f"  {label}: {r.get('gaussians', 0):,} Gaussians: check_fits {r.get('check')}, {r['outcome']}; "
            f"estimate {mb(r.get('estimate_total', 0))}{peak}" + (f" ({r['message']})" if r.get("message") else "")
        )
        if r["outcome"] == "rendered":
            largest = label
        if r.get("check") == "fits" and r["outcome"] == "out of memory":
            wrong.append(f"{label}: check_fits let it through and it ran out of memory")
        if r.get("check") == "refused" and r["outcome"] == "rendered":
            wrong.append(f"{label}: check_fits refused it and it rendered (the estimate is too cautious)")
    print(f"largest composite rendered within {args.fit:g} GB: {largest or 'none'}")
    for w in wrong:
        print("WRONG ESTIMATE:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
