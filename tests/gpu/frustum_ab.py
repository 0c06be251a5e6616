"""The projection's frustum pre-cull (kernels/project.py `culls_frustum`) against the projection without it, in one
process (GPU machine only): per path of the composites, every frame's projection both ways (its outputs compared
bit for bit, its GPU time with CUDA events), then the whole path in flight with the pre-cull allowed and not, in
alternated passes on one renderer (a fly-over's frames are host-paced: processes differ by more than this step
moves them, so only passes beside each other compare).

    python3 tests/gpu/frustum_ab.py --composites 6M,24M --scenes-dir .gpu/scenes --json out/frustum.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

import kernels  # noqa: E402
import kernels.project  # noqa: E402
from renderer import Renderer, RenderSettings  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench import stream_pass  # noqa: E402
from tools.bench_paths import COMPOSITE_INPUTS, build_composite, composite_paths, find_scene, parse_count  # noqa: E402

REPS = 10  # projections timed a frame, each way
ROUNDS = 4  # alternated pairs of passes a path
# --sweep: the pre-cull kernel's launch (Gaussians a program, warps), timed over every frame of the fly-overs
SWEEP = [(1024, 4), (1024, 8), (1024, 16), (512, 4), (512, 8), (256, 4), (256, 2), (2048, 16)]


def project_ms(r: Renderer, cam, frustum) -> float:
    """The GPU time of one projection of `cam` (with the pre-cull where `frustum`): REPS of them queued back to back
    between two CUDA events, so that the launches' host time overlaps the kernels before them."""
    packed = cam.packed("cuda")
    out = kernels.project_outputs(r.n, "cuda")

    def once():
        kernels.project_gaussians(r.means, r.covars, r.opacities, r.sh, packed, cam.width, cam.height,
                                  sh_degree=r.scene.sh_degree, out=(*out[:4], None), frustum=frustum)  # fmt: skip

    once()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(REPS):
        once()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / REPS


def sweep(r: Renderer, cams, survivors, count) -> dict:
    """{"BLOCKxWARPS": the projection's ms over the path with the pre-cull launched so}, and "plain" without it."""
    frustum = (r.extent, survivors, count)
    result = {"plain": sum(project_ms(r, cam, None) for cam in cams)}
    default = kernels.project.FRUSTUM_BLOCK, kernels.project.FRUSTUM_WARPS
    for block, warps in SWEEP:
        kernels.project.FRUSTUM_BLOCK, kernels.project.FRUSTUM_WARPS = block, warps
        project_ms(r, cams[0], frustum)  # compiled before it is timed
        result[f"{block}x{warps}"] = sum(project_ms(r, cam, frustum) for cam in cams)
    kernels.project.FRUSTUM_BLOCK, kernels.project.FRUSTUM_WARPS = default
    return result


def project_both(r: Renderer, cam, survivors, count) -> tuple[float, float, int, bool]:
    """(ms without, ms with the pre-cull, survivors, whether the outputs are the same bit for bit) for one camera."""
    packed = cam.packed("cuda")
    n, deg = r.n, r.scene.sh_degree

    def run(frustum):
        out = kernels.project_outputs(n, "cuda")
        kernels.project_gaussians(r.means, r.covars, r.opacities, r.sh, packed, cam.width, cam.height, sh_degree=deg,
                                  out=(*out[:4], None), frustum=frustum)  # fmt: skip
        return out

    frustum = (r.extent, survivors, count)
    plain, culled = run(None), run(frustum)
    visible = plain[2] > 0
    same = (torch.equal(plain[2], culled[2]) and torch.equal(plain[3], culled[3])
            and torch.equal(plain[1][visible], culled[1][visible]) and bool(torch.isinf(culled[1][~visible]).all())
            and torch.equal(plain[0][visible], culled[0][visible]))  # fmt: skip
    times = {}
    for name, f in (("plain", None), ("culled", frustum)):
        out = kernels.project_outputs(n, "cuda")
        ms = []
        for _ in range(REPS):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            kernels.project_gaussians(r.means, r.covars, r.opacities, r.sh, packed, cam.width, cam.height,
                                      sh_degree=deg, out=(*out[:4], None), frustum=f)  # fmt: skip
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
        times[name] = statistics.median(ms)
    return times["plain"], times["culled"], int(count), same


@torch.inference_mode()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--composites", default="6M,24M")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--json", default=None)
    p.add_argument("--sweep", action="store_true", help="only the pre-cull kernel's launch sweep, on the fly-overs")
    args = p.parse_args()
    inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
    settings, rows = RenderSettings(), []
    for label in args.composites.split(","):
        scene = load_scene(build_composite(label, parse_count(label), inputs, args.cache_dir))
        r = Renderer(scene, device="cuda")
        survivors = torch.empty(r.n, dtype=torch.int32, device="cuda")
        count = torch.zeros(1, dtype=torch.int32, device="cuda")
        for path_name, cams in composite_paths(scene, 1920, 1080, args.frames).items():
            if args.sweep:
                if path_name == "flyover":
                    for cam in cams:
                        r.render(cam, settings)
                    row = dict(path=f"composite_{label}/{path_name}", n=r.n, sweep_ms=sweep(r, cams, survivors, count))
                    rows.append(row)
                    print(row, flush=True)
                continue
            frames = []
            for cam in cams:
                out = r.render(cam, settings)
                plain, culled, kept, same = project_both(r, cam, survivors, count)
                frames.append(dict(visible=out.stats.n_visible, survivors=kept, plain_ms=plain, culled_ms=culled,
                                   same=same))  # fmt: skip
            passes = {"allowed": [], "off": []}
            default_from = kernels.project.FRUSTUM_FROM
            for _ in range(ROUNDS):
                for name, threshold in (("off", 1 << 40), ("allowed", default_from)):
                    kernels.project.FRUSTUM_FROM = threshold
                    stream_pass(r, cams, settings)  # the pass before settles the launch configuration
                    handover, _, _, _ = stream_pass(r, cams, settings)
                    passes[name].append(statistics.median(handover))
            kernels.project.FRUSTUM_FROM = default_from
            row = dict(path=f"composite_{label}/{path_name}", n=r.n, frames=frames,
                       plain_ms=sum(f["plain_ms"] for f in frames), culled_ms=sum(f["culled_ms"] for f in frames),
                       all_same=all(f["same"] for f in frames), passes_ms=passes,
                       off_median=statistics.median(passes["off"]),
                       allowed_median=statistics.median(passes["allowed"]))  # fmt: skip
            rows.append(row)
            print(f"{row['path']}: projection over the path {row['plain_ms']:.3f} -> {row['culled_ms']:.3f} ms "
                  f"(pre-culled every frame), outputs the same on every frame: {row['all_same']}; in flight, "
                  f"median of {ROUNDS} alternated passes: off {row['off_median']:.3f}, allowed "
                  f"{row['allowed_median']:.3f} ms ({passes})", flush=True)  # fmt: skip
            for i, f in enumerate(frames):
                print(
                    f"  frame {i:2d}: visible {f['visible']:>10,} survivors {f['survivors']:>10,} "
                    f"project {f['plain_ms']:.3f} -> {f['culled_ms']:.3f} ms same {f['same']}"
                )
        del r
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(row.get("all_same", True) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
