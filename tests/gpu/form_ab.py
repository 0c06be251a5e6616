"""Which binning form pays, frame by frame (GPU machine only): each bench path rendered by renderers in one
process, one forced to bin every frame per tile and one per macro-tile (kernels/bin.py `bins_macro_tiles`'s
thresholds set past either end), and with `--routes auto,graph` each form on either frame route as well
(renderer/routes.py: composites run counted unless forced onto capacities), in alternated passes. `--timing
events` times each frame between CUDA events (capacity frames replay their CUDA graphs, so the events hold the
frame's GPU time); `--timing flight` times whole passes through `Renderer.render_stream` (frames in flight, as
the bench's default rows), the wall time a frame. Prints, per path, each frame's footprint (tile pairs a visible
Gaussian) and each variant's median time, so that the thresholds can be set where the forms cross (BENCHMARKS.md,
sections 24, 40 and 41). Images are compared: the forms and routes give the same lists.

    python3 tests/gpu/form_ab.py --scenes plant.splat playbot_lod0.sog --composites none --json out/forms.json
    python3 tests/gpu/form_ab.py --scenes --composites 6M,24M --forms auto --routes auto,graph --timing flight
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

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
# (MACRO_FROM, MACRO_UNTIL) that force the form, or ("auto") the renderer's own thresholds
FORMS = {"tiles": (1e12, 1e12), "macro": (0.0, 0.0), "auto": (kernels.bin.MACRO_FROM, kernels.bin.MACRO_UNTIL)}


def force(form: str) -> None:
    kernels.bin.MACRO_FROM, kernels.bin.MACRO_UNTIL = FORMS[form]


def flight_pass(r: Renderer, cams, settings) -> list[float]:
    """The pass's wall time a frame, its frames in flight (`Renderer.render_stream`), once per camera."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in r.render_stream(cams, settings):
        pass
    torch.cuda.synchronize()
    return [(time.perf_counter() - t0) * 1e3 / len(cams)] * len(cams)


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
    p.add_argument("--routes", default="auto", help="comma-separated frame routes: auto, graph, counted")
    p.add_argument("--forms", default="tiles,macro", help="comma-separated binning forms: tiles, macro, auto")
    p.add_argument("--timing", choices=("events", "flight"), default="events")
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
    routes = args.routes.split(",")
    variants = [(form, route) for form in args.forms.split(",") for route in routes]
    passing = flight_pass if args.timing == "flight" else timed_pass
    for path, make_paths in jobs:
        scene = load_scene(path)
        for name, cams in make_paths(scene, *args.size, FRAMES).items():
            rs, stats, images, held, peaks = {}, {}, {}, {}, {}
            for form, route in variants:  # made and warmed one at a time: what each holds after its warm-up
                before = torch.cuda.memory_allocated()
                rs[form, route] = r = Renderer(scene, device="cuda")
                r.frame_mode = route
                force(form)
                outs = [r.render(cam, settings) for cam in cams]  # synced: counts, and the form it took
                stats[form, route] = [(o.stats.n_visible, o.stats.n_pairs) for o in outs]
                images[form, route] = [o.image.clone() for o in outs[:: FRAMES // 4]]
                del outs
                held_before_pass = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                passing(r, cams, settings)  # graphs captured
                peaks[form, route] = (torch.cuda.max_memory_allocated() - before) / 2**20
                held[form, route] = (held_before_pass - before) / 2**20
            first = variants[0]
            diff = max(max(float((a - b).abs().max()) for a, b in zip(images[first], images[v], strict=True))
                       for v in variants)  # fmt: skip
            times = {v: [] for v in variants}
            for _ in range(PASSES):
                for (form, route), r in rs.items():
                    force(form)
                    times[form, route].append(passing(r, cams, settings))
            medians = {v: statistics.median(statistics.median(p[i] for p in times[v]) for i in range(len(cams)))
                       for v in variants}  # fmt: skip
            per_frame = []
            for i, (visible, pairs) in enumerate(stats[first]):
                per_frame.append(dict(frame=i, visible=visible, tile_pairs=pairs, footprint=pairs / max(visible, 1),
                                      **{f"{f}/{r}_ms": statistics.median(p[i] for p in times[f, r])
                                         for f, r in variants}))  # fmt: skip
            row = dict(path=f"{os.path.basename(path)}/{name}", timing=args.timing, max_abs_diff=diff,
                       ms={f"{f}/{r}": m for (f, r), m in medians.items()},
                       pass_ms={f"{f}/{r}": [statistics.median(p) for p in times[f, r]] for f, r in variants},
                       peak_mb={f"{f}/{r}": m for (f, r), m in peaks.items()},
                       held_mb={f"{f}/{r}": m for (f, r), m in held.items()}, frames=per_frame)  # fmt: skip
            rows.append(row)
            base = medians[first]
            print(f"{row['path']} ({args.timing}): " + ", ".join(
                f"{f}/{r} {m:.3f} ms ({m / base:.3f}x, peak {peaks[f, r]:.0f} MB)" for (f, r), m in medians.items())
                + f"; images differ by at most {diff:.2e}", flush=True)  # fmt: skip
            if args.timing == "events":
                for f in per_frame[:: FRAMES // 5]:
                    print(f"    frame {f['frame']:2d}: {f['footprint']:6.2f} tiles a Gaussian, " + " / ".join(
                        f"{f[f'{a}/{b}_ms']:.3f}" for a, b in variants) + " ms", flush=True)  # fmt: skip
            del rs, r
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
