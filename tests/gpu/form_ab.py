"""Which binning form pays, frame by frame (GPU machine only): each bench path rendered by two renderers in one
process, one forced to bin every frame per tile and one per macro-tile (kernels/bin.py `bins_macro_tiles`'s
thresholds set past either end), in alternated passes, each frame timed between CUDA events (objects' frames
replay their CUDA graphs, so the events hold the frame's GPU time). Prints, per path, each frame's footprint (tile
pairs a visible Gaussian) and the two forms' median times, so that the thresholds can be set where the forms
cross (BENCHMARKS.md, sections 24 and 40). Images are compared: the two forms give the same lists.

    python3 tests/gpu/form_ab.py --scenes plant.splat playbot_lod0.sog --composites none --json out/forms.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

import kernels.bin  # noqa: E402
from renderer import Renderer, RenderSettings  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_paths import (  # noqa: E402
    COMPOSITE_INPUTS,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)

FRAMES = 20
PASSES = 3
FORMS = {"tiles": (1e12, 1e12), "macro": (0.0, 0.0)}  # (MACRO_FROM, MACRO_UNTIL) that force the form


def force(form: str) -> None:
    kernels.bin.MACRO_FROM, kernels.bin.MACRO_UNTIL = FORMS[form]


def timed_pass(r: Renderer, cams, settings) -> list[float]:
    """Each camera's frame between two CUDA events, the pass waited for at its end."""
    events = []
    for cam in cams:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        r.render(cam, settings, sync_stats=False)
        b.record()
        events.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in events]


@torch.inference_mode()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="*", default=["plant.splat", "playbot_lod0.sog"])
    p.add_argument("--composites", default="none")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--size", type=lambda v: tuple(int(x) for x in v.split("x")), default=(1920, 1080))
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("form_ab: needs CUDA (run on the GPU machine)", file=sys.stderr)
        return 2
    jobs = [(find_scene(n, args.scenes_dir), object_paths) for n in args.scenes]
    comps = [c for c in args.composites.split(",") if c and c != "none"]
    if comps:
        inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
        jobs += [(build_composite(c, parse_count(c), inputs, args.cache_dir), composite_paths) for c in comps]
    settings, rows = RenderSettings(), []
    for path, make_paths in jobs:
        scene = load_scene(path)
        for name, cams in make_paths(scene, *args.size, FRAMES).items():
            rs = {form: Renderer(scene, device="cuda") for form in FORMS}
            stats, images = {}, {}
            for form, r in rs.items():
                force(form)
                outs = [r.render(cam, settings) for cam in cams]  # synced: counts, and the form it took
                stats[form] = [(o.stats.n_visible, o.stats.n_pairs) for o in outs]
                images[form] = [o.image.clone() for o in outs[:: FRAMES // 4]]
                timed_pass(r, cams, settings)  # graphs captured
            diff = max(float((a - b).abs().max()) for a, b in zip(images["tiles"], images["macro"], strict=True))
            times = {form: [] for form in FORMS}
            for _ in range(PASSES):
                for form, r in rs.items():
                    force(form)
                    times[form].append(timed_pass(r, cams, settings))
            per_frame = []
            for i, (visible, pairs) in enumerate(stats["tiles"]):
                t = statistics.median(p[i] for p in times["tiles"])
                m = statistics.median(p[i] for p in times["macro"])
                per_frame.append(dict(frame=i, visible=visible, tile_pairs=pairs,
                                      footprint=pairs / max(visible, 1), tiles_ms=t, macro_ms=m))  # fmt: skip
            tiles_ms = statistics.median(f["tiles_ms"] for f in per_frame)
            macro_ms = statistics.median(f["macro_ms"] for f in per_frame)
            row = dict(path=f"{os.path.basename(path)}/{name}", tiles_ms=tiles_ms, macro_ms=macro_ms,
                       max_abs_diff=diff, frames=per_frame)  # fmt: skip
            rows.append(row)
            print(f"{row['path']}: per tile {tiles_ms:.3f} ms, per macro-tile {macro_ms:.3f} ms "
                  f"({macro_ms / tiles_ms:.3f}x); images differ by at most {diff:.2e}", flush=True)  # fmt: skip
            for f in per_frame[:: FRAMES // 5]:
                print(f"    frame {f['frame']:2d}: {f['footprint']:6.2f} tiles a Gaussian, {f['tiles_ms']:.3f} / "
                      f"{f['macro_ms']:.3f} ms", flush=True)  # fmt: skip
            del rs
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
