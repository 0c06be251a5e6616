"""How `warpsplat bench` times frames: one protocol for warpsplat's rows and for both anchors (gsplat 1.5.3 in the
bench's process, HiGS in a child process: tools/bench_higs.py).

Per path and row: `warmup` untimed frames, a first pass along the path timed frame by frame, then a second pass.
The first pass shows what a renderer does the first time it meets a view (kernel compiles, capacity growth); the
second is the steady state that the median and p90 describe. Frames are timed in one of two ways, and rows are
compared only within one:
- one by one: each frame is waited for before the next starts; CUDA events around the call (its own host sync
  included), the wall clock on a CPU;
- in flight (warpsplat's `Renderer.render_stream`) or back to back (an anchor called in a row, never waited for):
  a frame's time is its handover span (renderer.timing.handover_ms), from the end of the frames before it to its
  own end, idle gaps included.
Peak GPU memory: torch's allocator's peak while a row ran, above a baseline (what was allocated once the renderer
held its scene).
The host's speed (`host_probe_us`) is taken before each row's passes and again after them, in the process that
times it: on the GPU machine the same Python loop runs 1.9x slower in one process than in the next, whatever the
hash seed, and the rows that the host paces (a counted fly-over) move with it; within one process it changes too,
so a probe before a row alone does not say the row kept that speed (BENCHMARKS.md, section 45).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

ONE_BY_ONE = "one by one"
IN_FLIGHT = "in flight"  # warpsplat's frames in flight; an anchor's frames back to back


@dataclass
class Passes:
    """A row's frame times (ms): the first pass and the second, and the second's wall frames/s."""

    first: list[float]
    second: list[float]
    wall_fps: float


@dataclass
class AnchorTimes:
    """An anchor on one path: its frames one by one (two passes), back to back (one pass, after them), and its peak
    GPU memory above what it held before (MB; None on a CPU)."""

    one_by_one: Passes
    back_to_back: list[float]
    peak_mem_mb: float | None
    host_probe_us: float | None = None  # `host_probe_us()` before its passes, in the process that timed them
    host_probe_after_us: float | None = None  # and after them

    def median(self, timing: str = ONE_BY_ONE) -> float:
        return statistics.median(self.one_by_one.second if timing == ONE_BY_ONE else self.back_to_back)


def synchronize(device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


# `host_probe_us`'s loop and how often it is timed: about 30 ms a row
PROBE_LOOPS = 200
PROBE_ROUNDS = 9


def host_probe_us() -> float:
    """This process's host speed now: the median over PROBE_ROUNDS rounds of the time one `sum(range(1000))` takes,
    in microseconds. A row's frames that wait on the host (launches between waits) take longer where it is higher;
    the GPU's own time does not."""
    rounds = []
    for _ in range(PROBE_ROUNDS):
        t0 = time.perf_counter()
        for _ in range(PROBE_LOOPS):
            sum(range(1000))
        rounds.append((time.perf_counter() - t0) * 1e6 / PROBE_LOOPS)
    return statistics.median(rounds)


def timed_calls(draw: Callable[[int], object], n: int, device, *, wait_each: bool) -> tuple[list, float]:
    """Call draw(0) .. draw(n - 1), each inside a StageTimer of its own (waited for before the next call when
    `wait_each`); (the timers, wall frames/s)."""
    from renderer.timing import StageTimer

    synchronize(device)
    timers = []
    t0 = time.perf_counter()
    for i in range(n):
        timer = StageTimer(device)
        draw(i)
        timer.stop()
        if wait_each:
            timer.wait()
        timers.append(timer)
    synchronize(device)
    return timers, n / (time.perf_counter() - t0)


def one_by_one(draw: Callable[[int], object], n: int, device) -> tuple[list[float], float]:
    """n frames, each waited for; (ms per frame, wall frames/s)."""
    timers, fps = timed_calls(draw, n, device, wait_each=True)
    return [t.elapsed_ms(wait=True)["total"] for t in timers], fps


def back_to_back(draw: Callable[[int], object], n: int, device) -> tuple[list[float], float]:
    """n frames launched in a row; (each frame's handover span in ms, wall frames/s)."""
    from renderer.timing import handover_ms

    timers, fps = timed_calls(draw, n, device, wait_each=False)
    return handover_ms(timers), fps


def warm_up(draw: Callable[[int], object], n: int, frames: int, device) -> None:
    """`frames` untimed calls along the path (from its start, round again if it is shorter)."""
    for i in range(frames):
        draw(i % n)
    synchronize(device)


def time_anchor(draw: Callable[[int], object], n: int, device, warmup: int) -> AnchorTimes:
    """An anchor's frames on a path of n frames whose inputs draw(i) only indexes (prepared before): warm-up, two
    passes one by one, then one back to back; peak GPU memory above what was allocated before it started."""
    with PeakMemory(device) as memory:
        warm_up(draw, n, warmup, device)
        probe = host_probe_us()
        first, _ = one_by_one(draw, n, device)
        second, fps = one_by_one(draw, n, device)
        in_a_row, _ = back_to_back(draw, n, device)
        after = host_probe_us()
    return AnchorTimes(Passes(first, second, fps), in_a_row, memory.mb, probe, after)


class PeakMemory:
    """Peak GPU memory (MB) above `baseline` bytes (default: what is allocated on entry) while the block runs,
    from torch's allocator (`max_memory_allocated` after `reset_peak_memory_stats`); None on a CPU."""

    def __init__(self, device, baseline: int | None = None):
        self.device, self.baseline, self.mb = device, baseline, None

    def __enter__(self) -> PeakMemory:
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            if self.baseline is None:
                self.baseline = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(self, *exc) -> None:
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)
            self.mb = (torch.cuda.max_memory_allocated(self.device) - self.baseline) / 2**20


def allocated(device) -> int:
    """Bytes torch has allocated on the device now (0 on a CPU): a baseline for `PeakMemory`."""
    if device.type != "cuda":
        return 0
    import torch

    synchronize(device)
    return torch.cuda.memory_allocated(device)
