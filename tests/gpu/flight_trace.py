"""Where a path's frames in flight spend their time, GPU and host (GPU machine only): is the GPU kept busy, and if
not, what the host was doing while it waited.

Per path (the composites' fly-over and overview, as the bench renders them: `Renderer.render_stream`, one frame in
flight), after two warm passes:
- three plain passes: wall ms a frame, and the host's time a frame outside its waits for the GPU (every
  the renderer's `counts_ready` event, `torch.cuda.synchronize` and `StageTimer.wait` timed): where the host's time
  nearly fills the frame, the host sets the pace, not the GPU;
- one pass under the torch profiler, each stage marked (`StageTimer.stage` wrapped in `record_function`): the
  GPU's busy time a frame (the union of its kernels, copies and fills), its kernels' sum, its idle gaps, and for
  the longest gaps the stage the host was in when the gap began and the kernel that ended it. The Chrome trace is
  written beside the JSON.

    python3 tests/gpu/flight_trace.py --composites 6M,24M --scenes-dir .gpu/scenes --out out/flight
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

from renderer import Renderer, RenderSettings  # noqa: E402
from renderer.timing import StageTimer  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_paths import COMPOSITE_INPUTS, build_composite, composite_paths, find_scene, parse_count  # noqa: E402

PLAIN_PASSES = 3
GAP_US = 5.0  # idle intervals shorter than this are a kernel's launch latency, not a wait on the host
TOP_GAPS = 12

_waited = [0.0]  # seconds the host spent waiting for the GPU, since the last reset


def _timed_wait(fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _waited[0] += time.perf_counter() - t

    return wrapper


class TimedEvent:
    """A torch.Event (an immutable type, so not patched in place) whose waits are timed."""

    def __init__(self, event):
        self.event = event
        self.synchronize = _timed_wait(event.synchronize)

    def record(self, *args):
        self.event.record(*args)


def instrument() -> None:
    """Count the host's waits, and mark each stage for the profiler."""
    torch.cuda.Event.synchronize = _timed_wait(torch.cuda.Event.synchronize)
    torch.cuda.synchronize = _timed_wait(torch.cuda.synchronize)
    StageTimer.wait = _timed_wait(StageTimer.wait)  # the wait for a frame before it is handed over
    stage = StageTimer.stage

    @contextlib.contextmanager
    def marked(self, name, **kw):
        with record_function(f"stage:{name}"), stage(self, name, **kw):
            yield

    StageTimer.stage = marked


def plain_pass(r: Renderer, cams, settings) -> tuple[float, float]:
    """(wall ms a frame, host ms a frame outside its waits) of one pass in flight."""
    torch.cuda.synchronize()
    _waited[0] = 0.0
    t = time.perf_counter()
    for _ in r.render_stream(cams, settings):
        pass
    torch.cuda.synchronize()
    wall = time.perf_counter() - t
    return wall * 1e3 / len(cams), (wall - _waited[0]) * 1e3 / len(cams)


def gpu_intervals(trace: dict) -> list[tuple[float, float, str]]:
    """(start us, end us, name) of every kernel, copy and fill on the device, by start."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            out.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("name", "")[:70]))
    return sorted(out)


def stage_ranges(trace: dict) -> list[tuple[float, float, str]]:
    """(start us, end us, stage) of every marked stage on the host."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("stage:"):
            out.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e["name"][6:]))
    return sorted(out)


def analyse(trace: dict, frames: int) -> dict:
    """The GPU's busy and idle time over the pass, and its longest idle gaps with what the host was doing."""
    dev, stages = gpu_intervals(trace), stage_ranges(trace)
    if not dev:
        return {}
    busy, kernels, gaps, by_name = 0.0, 0.0, [], {}
    cur_start, cur_end, cur_name = dev[0]
    for s, e, name in dev:
        kernels += e - s
        by_name[name] = by_name.get(name, 0.0) + e - s
        if s > cur_end:
            busy += cur_end - cur_start
            if s - cur_end >= GAP_US:
                gaps.append((s - cur_end, cur_end, cur_name, name))
            cur_start = s
        if e > cur_end:
            cur_end, cur_name = e, name
    busy += cur_end - cur_start
    span = dev[-1][1] - dev[0][0]
    idle = sum(g[0] for g in gaps)

    def host_stage(t):
        inside = [name for s, e, name in stages if s <= t <= e]
        return inside[-1] if inside else "between stages"

    by_stage: dict[str, float] = {}
    for g, start, _, _ in gaps:
        key = host_stage(start)
        by_stage[key] = by_stage.get(key, 0.0) + g
    by_stage = dict(sorted(by_stage.items(), key=lambda kv: -kv[1]))
    host_ms: dict[str, list[float]] = {}
    for s, e, name in stages:
        host_ms.setdefault(name, []).append((e - s) / 1e3)
    top = sorted(gaps, reverse=True)[:TOP_GAPS]
    return dict(
        span_ms_per_frame=span / 1e3 / frames,
        busy_ms_per_frame=busy / 1e3 / frames,
        kernels_ms_per_frame=kernels / 1e3 / frames,
        kernel_ms_per_frame_by_name={
            k[:80]: round(v / 1e3 / frames, 4) for k, v in sorted(by_name.items(), key=lambda kv: -kv[1])[:16]
        },
        idle_ms_per_frame=idle / 1e3 / frames,
        busy_fraction=busy / span if span else 0.0,
        idle_ms_per_frame_by_host_stage={k: v / 1e3 / frames for k, v in by_stage.items()},
        host_stage_ms_median={k: statistics.median(v) for k, v in host_ms.items()},
        top_gaps=[
            dict(us=round(g, 1), host_stage=host_stage(start), after=before, before=after)
            for g, start, before, after in top
        ],  # fmt: skip
    )


@torch.inference_mode()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--composites", default="6M,24M")
    p.add_argument("--paths", default="flyover,overview")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--out", required=True, help="folder for the JSON and the traces")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("flight_trace: needs CUDA (run on the GPU machine)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    instrument()
    inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
    wanted = [w for w in args.paths.split(",") if w]
    rows, settings = [], RenderSettings()
    for c in [c for c in args.composites.split(",") if c and c != "none"]:
        scene = load_scene(build_composite(c, parse_count(c), inputs, args.cache_dir))
        r = Renderer(scene, device="cuda")
        r.counts_ready = TimedEvent(r.counts_ready)  # a counted frame's wait for its counts
        for path_name, cams in composite_paths(scene, 1920, 1080, args.frames).items():
            if path_name not in wanted:
                continue
            for _ in range(2):
                plain_pass(r, cams, settings)
            plain = [plain_pass(r, cams, settings) for _ in range(PLAIN_PASSES)]
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                plain_pass(r, cams, settings)
            name = f"composite_{c}_{path_name}"
            trace_path = os.path.join(args.out, f"{name}.json")
            prof.export_chrome_trace(trace_path)
            with open(trace_path) as fh:
                trace = json.load(fh)
            row = dict(path=name, counted=r.counted(), wall_ms=[w for w, _ in plain],
                       host_ms_outside_waits=[h for _, h in plain], **analyse(trace, len(cams)))  # fmt: skip
            rows.append(row)
            print(f"{name}: wall {statistics.median(row['wall_ms']):.3f} ms a frame, host outside waits "
                  f"{statistics.median(row['host_ms_outside_waits']):.3f}; profiled: GPU busy "
                  f"{row.get('busy_ms_per_frame', 0):.3f} of {row.get('span_ms_per_frame', 0):.3f} ms a frame "
                  f"(kernels {row.get('kernels_ms_per_frame', 0):.3f}), idle by host stage "
                  f"{ {k: round(v, 3) for k, v in row.get('idle_ms_per_frame_by_host_stage', {}).items()} }",
                  flush=True)  # fmt: skip
            for g in row.get("top_gaps", [])[:6]:
                print(f"    gap {g['us']:7.1f} us in {g['host_stage']}: after {g['after']} / before {g['before']}")
            for k, v in row.get("kernel_ms_per_frame_by_name", {}).items():
                print(f"    kernel {v:7.4f} ms a frame  {k}")
        del r, scene
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, "flight.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
