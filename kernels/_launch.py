"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1): launchers then pick
    wide blocks, since the interpreter's cost is per executed op, not per element."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def launch(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """`kernel[grid](*args, **kwargs)`: every launcher in kernels/ launches through here.

    A route past Triton's `JITFunction.run` (18-34 us of host time a launch on the GPU machine) to the compiled
    kernel's own launcher (5.5-8.4 us) was built and measured: the same frames in one process, alternating the two
    routes pass by pass, took 0.992-0.999x the time on the composites' paths, within the runs' spread, since those
    frames wait on the GPU, not on their launches (BENCHMARKS.md, section 31). It read Triton's internals, so it
    went."""
    kernel[grid](*args, **kwargs)
