"""AdaGScale's tau at 8 px tiles: speed against exact, pairs removed and fidelity, per path of the benchmark.

The paths are `warpsplat bench`'s (tools/bench_paths.py): an orbit and a close orbit of each real scene, a
fly-over and an overview of each composite. Each variant (exact, then AdaGScale at each tau) has a renderer of
its own, so each keeps its own captured graphs and pair capacity while the variants take turns frame by frame:
- timing pass: after `--warmup` untimed frames, every camera is rendered by every variant in a rotating order,
  each frame timed as the bench times it (renderer.timing.StageTimer around the whole call, host sync
  included). Interleaving spreads the machine's drift over all variants alike; `--order blocked` times one
  variant after the other instead, as the bench does (tools.bench.time_path);
- compare pass (untimed): every camera again, pairs and visible Gaussians per variant, PSNR against exact;
- stage pass (`--no-stages` skips it): the middle camera's stages, each timed alone on the GPU
  (triton.testing.do_bench, median), so that a difference in frame time can be traced to a stage.

The fidelity floor is 40 dB on a path (from its mean squared error) and 35 dB on every frame; the speed
targets are 1.3x exact on the composites and no path slower than exact. The last table says, per tau, how far
each is met. Everything goes to --out-dir/adagscale_sweep.json (and the tables to stdout).

On the GPU machine (the 24M composite takes about a minute to compose and load; `--composites 6M` skips it;
.gpu/ and its setup.sh: tests/gpu/README.md):
    source .gpu/setup.sh && python3 tests/gpu/adagscale_sweep.py --scenes-dir .gpu/scenes --out-dir "$OUT"
A check on a CPU (the torch backend, tiny frames):
    python tests/gpu/adagscale_sweep.py --size 64x48 --frames 2 --paths plant
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
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import torch  # noqa: E402

from renderer import Renderer, RenderSettings  # noqa: E402
from renderer.frame import Frame  # noqa: E402
from renderer.timing import StageTimer  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench import synchronize, time_path  # noqa: E402
from tools.bench_paths import (  # noqa: E402
    COMPOSITE_INPUTS,
    DEFAULT_SCENES,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)
from tools.bench_report import device_name, git_commit  # noqa: E402
from tools.cli import CliError  # noqa: E402
from tools.common import parse_size  # noqa: E402
from tools.metrics import path_psnr, percentile, psnr  # noqa: E402

# NOTE: from a CPU run at 1920x1080 (the torch twins, whose images equal the kernels' up to float rounding;
# s_min 0.5; frames 0/5/10/15 of the objects' 20-frame paths, 5/15 of the 6M ones, 10 of the 24M overview):
# the ten object paths keep 45.7-82 dB against exact at every tau here, removing 0.6-28% of the pairs at 0.1
# and 4-42% at 1.6; the 6M fly-over / overview 50.9 / 45.6 dB at 0.1 (18% / 27% removed) and 43.3 / 42.6 dB
# at 1.6 (37% / 31%: the overview's removal stops at s_min); the 24M overview 39.7 dB at 0.1 and 38.3 dB at
# 0.4 (27% / 29% removed), under the 40 dB path floor: hence 0.05 too.
DEFAULT_TAUS = "0.05,0.1,0.2,0.4,0.8,1.6"
FLOOR_PATH_DB, FLOOR_FRAME_DB = 40.0, 35.0
COMPOSITE_TARGET = 1.3
OBJECT_KINDS, COMPOSITE_KINDS = ("orbit", "close"), ("flyover", "overview")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="+", default=DEFAULT_SCENES, help="real scenes (names in --scenes-dir)")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--composites", default="6M,24M", help="composite sizes, e.g. '6M' (skips 24M), or 'none'")
    p.add_argument("--cache-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "warpsplat-bench"),
                   help="where composites are kept between runs (the bench's folder by default)")  # fmt: skip
    p.add_argument("--size", type=parse_size, default=(1920, 1080))
    p.add_argument("--frames", type=int, default=20, help="timed frames per path and variant (default 20)")
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed frames per path and variant first (default 5: the capacity and launch "
                        "configuration settle, and each variant's graph is captured before timing)")  # fmt: skip
    p.add_argument("--taus", default=DEFAULT_TAUS, help=f"comma-separated taus (default {DEFAULT_TAUS})")
    p.add_argument("--s-min", type=float, default=RenderSettings().adagscale_s_min)
    p.add_argument("--paths", default="*",
                   help="comma-separated patterns matched against 'SCENE KIND' labels, the scene's name or the "
                        "kind: 'plant', 'orbit', '6M*', 'winter_fountain close' (default: all)")  # fmt: skip
    p.add_argument("--order", choices=("interleaved", "blocked"), default="interleaved")
    p.add_argument("--no-stages", action="store_true", help="skip the per-stage GPU timings")
    p.add_argument("--backend", choices=("auto", "triton", "torch"), default="auto")
    p.add_argument("--out-dir", default="adagscale-sweep")
    args = p.parse_args(argv)
    args.argv = sys.argv if argv is None else [sys.argv[0], *argv]
    args.tau_list = [float(t) for t in args.taus.split(",") if t.strip()]
    if args.frames < 1 or not args.tau_list or min(args.tau_list) < 0:
        p.error("need --frames >= 1 and at least one tau >= 0")
    return args


def stem(name: str) -> str:
    """'winter_fountain.splat' -> 'winter_fountain': a real scene's name in the path labels."""
    return os.path.basename(name).split(".")[0]


def wanted(args, scene_stem: str, kind: str) -> bool:
    label = f"{scene_stem} {kind}"
    pats = [p.strip() for p in args.paths.split(",") if p.strip()]
    return any(fnmatch.fnmatch(x, pat) for pat in pats for x in (label, scene_stem, kind))


def variants(args) -> dict[str, RenderSettings]:
    out = {"exact": RenderSettings()}
    for tau in args.tau_list:
        out[f"tau={tau:g}"] = RenderSettings(adagscale=True, adagscale_tau=tau, adagscale_s_min=args.s_min)
    return out


def warm_up(renderers, settings, cams, device, warmup: int) -> None:
    """Untimed frames of every variant: kernels compiled, capacities and launch configurations settled, graphs
    captured."""
    for cam in cams[: max(warmup, 0)]:
        for v, r in renderers.items():
            r.render(cam, settings[v], sync_stats=False)
    synchronize(device)


def time_interleaved(renderers, settings, cams, device) -> dict[str, list[float]]:
    """Frame ms per variant, the variants taking turns on each camera (the order rotating by one a frame)."""
    names = list(renderers)
    timers: dict[str, list[StageTimer]] = {v: [] for v in names}
    for i, cam in enumerate(cams):
        for v in names[i % len(names) :] + names[: i % len(names)]:
            timer = StageTimer(device)
            renderers[v].render(cam, settings[v], sync_stats=False)
            timer.stop()
            timers[v].append(timer)
    synchronize(device)
    return {v: [t.elapsed_ms(wait=True)["total"] for t in ts] for v, ts in timers.items()}


def time_blocked(renderers, settings, cams, device) -> dict[str, list[float]]:
    """Frame ms per variant, one variant's whole path after the other's (the bench's order and helper)."""
    out = {}
    for v, r in renderers.items():
        out[v], _, _ = time_path(lambda cam, r=r, s=settings[v]: r.render(cam, s, sync_stats=False), cams, device, 0)
    return out


def compare(renderers, settings, cams) -> dict[str, dict]:
    """Untimed: per camera and variant, visible Gaussians, pairs and (not for exact) PSNR against exact."""
    rec = {v: {"visible": [], "pairs": [], "psnr": [], "removed": []} for v in renderers}
    for cam in cams:
        outs = {v: r.render(cam, settings[v]) for v, r in renderers.items()}  # separate workspaces: all valid
        ex = outs["exact"]
        for v, out in outs.items():
            rec[v]["visible"].append(out.stats.n_visible)
            rec[v]["pairs"].append(out.stats.n_pairs)
            if v != "exact":
                rec[v]["psnr"].append(psnr(out.image, ex.image))
                if ex.stats.n_pairs:
                    rec[v]["removed"].append(1.0 - out.stats.n_pairs / ex.stats.n_pairs)
    return rec


def stage_times(renderers, settings, cam, cuda: bool) -> dict[str, dict[str, float]]:
    """Each stage of one frame timed alone (ms, median): do_bench on the GPU, the wall clock on a CPU."""
    from tests.gpu.stage_bench import frame_of

    def bench(fn) -> float:
        if cuda:
            import triton.testing

            return float(triton.testing.do_bench(fn, warmup=5, rep=20, return_mode="median"))
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            runs.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(runs)

    out = {}
    for v, r in renderers.items():
        f = frame_of(r, cam, settings[v])
        out[v] = {name: bench(getattr(f, name)) for name in Frame.STAGES}
        out[v]["capacity"] = r.pair_capacity.size
    return out


def run_path(args, label, kind, scene_stem, renderers, settings, cams, device, cuda) -> list[dict]:
    warm_up(renderers, settings, cams, device, args.warmup)
    replays0 = {v: r.graph_replays for v, r in renderers.items()}
    timing = time_interleaved if args.order == "interleaved" else time_blocked
    frame_ms = timing(renderers, settings, cams, device)
    replays = {v: r.graph_replays - replays0[v] for v, r in renderers.items()}
    rec = compare(renderers, settings, cams)
    stages = {} if args.no_stages else stage_times(renderers, settings, cams[len(cams) // 2], cuda)
    n_tiles = math.ceil(args.size[0] / 8) * math.ceil(args.size[1] / 8)
    exact_ms = statistics.median(frame_ms["exact"])
    rows = []
    for v, s in settings.items():
        r, ms = rec[v], frame_ms[v]
        rows.append(dict(
            scene=scene_stem, path=kind, label=label, n_gaussians=renderers[v].n, variant=v,
            tau=s.adagscale_tau if s.adagscale else None, frame_ms=ms, median_ms=statistics.median(ms),
            p90_ms=percentile(ms, 90), speedup=exact_ms / statistics.median(ms), graph_replays=replays[v],
            visible=int(statistics.median(r["visible"])), pairs=int(statistics.median(r["pairs"])),
            pairs_per_tile=statistics.median(rec["exact"]["pairs"]) / n_tiles,
            removed=statistics.mean(r["removed"]) if r["removed"] else 0.0, psnr=r["psnr"],
            psnr_path=path_psnr(r["psnr"]) if r["psnr"] else math.inf, psnr_min=min(r["psnr"], default=math.inf),
            stages=stages.get(v, {}), launch=str(renderers[v].launch), capacity=renderers[v].pair_capacity.size,
        ))  # fmt: skip
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    width, height = args.size
    settings = variants(args)
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f} s] {msg}", file=sys.stderr, flush=True)

    # jobs whose paths the patterns select; composites are built (or taken from the cache) only when selected
    jobs = [(stem(n), lambda n=n: find_scene(n, args.scenes_dir), object_paths, OBJECT_KINDS) for n in args.scenes]
    comps = [c for c in args.composites.split(",") if c.strip() and c.strip() != "none"]
    for c in comps:

        def build(c=c):
            inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
            return build_composite(c, parse_count(c), inputs, args.cache_dir)

        jobs.append((c, build, composite_paths, COMPOSITE_KINDS))
    rows: list[dict] = []
    with torch.inference_mode():
        for scene_stem, locate, make_paths, kinds in jobs:
            kinds = [k for k in kinds if wanted(args, scene_stem, k)]
            if not kinds:
                continue
            try:
                scene = load_scene(locate())
            except CliError as e:  # a scene the machine lacks: the other paths still run
                log(f"skipped: {e}")
                continue
            log(f"{scene_stem}: {len(scene):,} Gaussians loaded")
            renderers = {v: Renderer(scene, device=device, backend=args.backend) for v in settings}
            for kind, cams in make_paths(scene, width, height, args.frames).items():
                if kind not in kinds:
                    continue
                label = f"{scene_stem} {kind}"
                path_rows = run_path(args, label, kind, scene_stem, renderers, settings, cams, device, cuda)
                rows += path_rows
                log(label + ": " + ", ".join(f"{r['variant']} {r['median_ms']:.3f} ms" for r in path_rows))
            renderers = scene = None
            if cuda:
                torch.cuda.empty_cache()
    if not rows:
        print(f"--paths {args.paths!r} selects no path", file=sys.stderr)
        return 2
    write_json(args, rows, cuda)
    print_tables(args, rows, device_name(cuda))
    log("done")
    return 0


def write_json(args, rows, cuda) -> None:
    import triton

    doc = dict(
        command=" ".join(shlex.quote(a) for a in args.argv), gpu=device_name(cuda), commit=git_commit(),
        versions=dict(torch=torch.__version__, triton=triton.__version__, python=platform.python_version()),
        size=list(args.size), frames=args.frames, warmup=args.warmup, order=args.order, taus=args.tau_list,
        s_min=args.s_min, rows=rows,
    )  # fmt: skip
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "adagscale_sweep.json")
    with open(path + ".part", "w") as f:
        json.dump(doc, f, indent=1, default=float)
    os.replace(path + ".part", path)
    print(f"wrote {path}", file=sys.stderr)


def print_tables(args, rows, gpu) -> None:
    taus = [v for v in variants(args) if v != "exact"]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    by = {(r["label"], r["variant"]): r for r in rows}
    staged = [r for r in rows if r["stages"]]
    w, h = args.size
    if staged:
        names = [*Frame.STAGES, "capacity"]
        print(f"\nStages of the middle frame, each timed alone (median ms; capacity in pair slots), {w}x{h}:\n")
        print("| path | variant | " + " | ".join(names) + " |")
        print("|---|---|" + "---:|" * len(names))
        for r in staged:
            cells = [f"{r['stages'][k]:.3f}" if k != "capacity" else f"{r['stages'][k]:,}" for k in names]
            print(f"| {r['label']} | {r['variant']} | " + " | ".join(cells) + " |")
    print(f"\nAdaGScale against exact on {gpu}, {w}x{h}, 8 px tiles, {args.frames} frames per path ({args.order}). "
          "Per tau: median ms (speed-up: exact's median / its median), pairs removed, PSNR against exact over the "
          "path (from the mean MSE) / on the worst frame, dB.\n")  # fmt: skip
    print("| path | N | pairs/tile | exact ms | " + " | ".join(taus) + " |")
    print("|---|---:|---:|---:|" + "---|" * len(taus))
    for lab in labels:
        e = by[(lab, "exact")]
        cells = []
        for v in taus:
            r = by[(lab, v)]
            cells.append(f"{r['median_ms']:.3f} ({r['speedup']:.2f}x), -{100 * r['removed']:.1f}%, "
                         f"{r['psnr_path']:.1f}/{r['psnr_min']:.1f}")  # fmt: skip
        print(f"| {lab} | {e['n_gaussians']:,} | {e['pairs_per_tile']:.0f} | {e['median_ms']:.3f} | "
              + " | ".join(cells) + " |")  # fmt: skip
    eager = [f"{r['label']} {r['variant']} ({r['graph_replays']}/{args.frames})" for r in rows
             if r["graph_replays"] < args.frames]  # fmt: skip
    if torch.cuda.is_available() and args.backend != "torch" and eager:
        print(f"\nTimed frames not replayed as a CUDA graph (replayed/timed): {', '.join(eager)}")
    print("\nPer tau, against the targets: fidelity floor (>= 40 dB a path, >= 35 dB every frame), no path slower "
          "than exact, 1.3x on the composites:\n")  # fmt: skip
    print("| tau | floor met on | worst path dB / frame dB | slowest path | paths < 1.00x | composites |")
    print("|---:|---|---|---|---:|---|")
    for v in taus:
        rs = [by[(lab, v)] for lab in labels]
        ok = sum(r["psnr_path"] >= FLOOR_PATH_DB and r["psnr_min"] >= FLOOR_FRAME_DB for r in rs)
        slow = min(rs, key=lambda r: r["speedup"])
        comp = [r for r in rs if r["path"] in COMPOSITE_KINDS]
        comp_txt = (f"{min(r['speedup'] for r in comp):.2f}-{max(r['speedup'] for r in comp):.2f}x "
                    f"({'met' if min(r['speedup'] for r in comp) >= COMPOSITE_TARGET else 'not met'})"
                    if comp else "-")  # fmt: skip
        print(f"| {v[4:]} | {ok}/{len(rs)} paths | {min(r['psnr_path'] for r in rs):.1f} / "
              f"{min(r['psnr_min'] for r in rs):.1f} | {slow['label']} {slow['speedup']:.2f}x | "
              f"{sum(r['speedup'] < 1.0 for r in rs)} | {comp_txt} |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
