"""How many threads torch uses when warpsplat renders on a CPU.

torch's CPU ops parallelise with OpenMP, whose threads meet at a barrier after every op. When there are as many
threads as cores and anything else runs (another render, a test suite, the viewer's own window thread), one
thread is descheduled and the others spin at the barrier until it returns. Measured on a 2-core machine that
others kept busy (BENCHMARKS.md, "CPU rendering"): a 320x240 frame of the bundled scene took 0.47 s with one
thread and 2.8 s with two; beside one more busy process, 0.9 s against 1.5-10 s (31 s in an earlier run).

So warpsplat leaves half the cores free: `cpu_threads(cores)` is cores // 2, at least 1. The environment's
OMP_NUM_THREADS, when set, wins (torch has already applied it). On CUDA nothing changes: the GPU renders and
the CPU only feeds it.
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cpu_threads(cores: int) -> int:
    """Torch threads for CPU rendering on a machine with `cores` cores: half of them, at least one."""
    return max(1, cores // 2)


def apply_thread_policy() -> int | None:
    """Set torch's thread count for CPU rendering; returns the count set, or None when it was left alone
    (OMP_NUM_THREADS is set, or CUDA renders)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    import torch

    # a CPU build of torch renders on the CPU: no need to ask (asking a CUDA build initialises the driver, and
    # an old one warns, so that is asked only where it can answer yes)
    if torch.version.cuda is not None and torch.cuda.is_available():
        return None
    n = cpu_threads(available_cores())
    torch.set_num_threads(n)
    return n
