"""The bench's variants against the default in one process (GPU machine only): each variant on its own renderer of
the same scene, timed in rounds of a few passes along a path in flight, the renderers taking turns in a rotated
order each round, so the process's draw of host and clock speed falls on all of them alike.

Why: the same tree's 6M fly-over took 1.2-1.8 ms a frame from one process to the next (BENCHMARKS.md, section 31),
so alternated processes (tests/gpu/ab_bench.sh) cannot resolve a few percent there; within one process the rounds
agree to 1-5%. Ratios are the default's time over the variant's (above 1, the variant is faster), median and
range over the rounds; "control" is a second renderer with the default settings, the method's own noise.

    python3 tests/gpu/alternate.py --composites 6M,24M --variants adagscale,'temporal K=8 known' [--rounds 8]
    python3 tests/gpu/alternate.py --scenes plant.splat --variants adagscale --profile out/prof
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

from renderer import Renderer  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_paths import (  # noqa: E402
    COMPOSITE_INPUTS,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)
from tools.bench_variants import TEMPORAL_K, knows_path, selected_variants  # noqa: E402


def scenes(args) -> list[tuple[str, str, bool]]:
    """(label, file, composite) of every scene asked for."""
    out = [(name, find_scene(name, args.scenes_dir), False) for name in args.scenes]
    for label in filter(None, args.composites.split(",")):
        inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
        out.append((label, build_composite(label, parse_count(label), inputs, args.cache_dir), True))
    return out


@torch.inference_mode()
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="*", default=[], help="object scenes (names in --scenes-dir, or paths)")
    p.add_argument("--composites", default="", help="composite sizes, e.g. 6M,24M (built as the bench builds them)")
    p.add_argument("--variants", default="adagscale", help="the bench's variant patterns (tools/bench_variants.py)")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--passes", type=int, default=3, help="passes along the path a renderer's turn in a round")
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--size", default="1920x1080")
    p.add_argument("--scenes-dir", default=None)
    p.add_argument("--cache-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "warpsplat-bench"))
    p.add_argument("--profile", default=None, metavar="DIR", help="cProfile each renderer's first path here")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    chosen = selected_variants(args.variants)
    names = ["default", "control", *(n for n in chosen if n != "default")]
    settings = {n: chosen.get(n, chosen["default"]) for n in names}
    results = {}
    for label, path, composite in scenes(args):
        scene = load_scene(path)
        renderers = {n: Renderer(scene, device="cuda", backend="triton") for n in names}
        paths = (composite_paths if composite else object_paths)(scene, width, height, args.frames)
        for pname, cams in paths.items():
            futures = [cams[i + 1 : i + TEMPORAL_K] for i in range(len(cams))]

            def passes(name: str, n: int, cams=cams, futures=futures, renderers=renderers) -> None:
                fut = futures if knows_path(name) else None
                for _ in range(n):
                    for _out in renderers[name].render_stream(cams, settings[name], futures=fut):
                        pass

            for name in names:  # warm: compiles, capacities, graphs, the window choice's first trial
                passes(name, args.passes)
            torch.cuda.synchronize()
            times: dict[str, list[float]] = {n: [] for n in names}
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    passes(name, args.passes)
                    torch.cuda.synchronize()
                    times[name].append(1e3 * (time.perf_counter() - t0) / (args.passes * len(cams)))
            row = {"default_ms": statistics.median(times["default"])}
            line = f"{label} {pname}: default {row['default_ms']:.3f} ms"
            for name in names[1:]:
                ratios = [d / v for d, v in zip(times["default"], times[name], strict=True)]
                row[name] = {"ms": statistics.median(times[name]), "ratio": statistics.median(ratios),
                             "min": min(ratios), "max": max(ratios)}  # fmt: skip
                line += f" | {name} {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
            print(line, flush=True)
            results[f"{label}/{pname}"] = {"times": times, **row}
            if args.profile and pname == next(iter(paths)):
                os.makedirs(args.profile, exist_ok=True)
                for name in names:
                    prof = cProfile.Profile()
                    prof.enable()
                    passes(name, args.passes)
                    torch.cuda.synchronize()
                    prof.disable()
                    text = io.StringIO()
                    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(40)
                    safe = name.replace(" ", "_").replace("=", "-")
                    with open(os.path.join(args.profile, f"{os.path.basename(label)}_{pname}_{safe}.txt"), "w") as f:
                        f.write(text.getvalue())
        del renderers, scene
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
