"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os

import torch

# Opt-in (WARPSPLAT_DIRECT_LAUNCH=1): `launch` calls a compiled kernel's launcher directly. Not on by default until
# measured on the GPU (BENCHMARKS.md, section 30 says what it should save and why).
DIRECT = os.environ.get("WARPSPLAT_DIRECT_LAUNCH") == "1"

# (kernel, device, specialization, options) -> (launcher, function handle, packed metadata) of a compiled kernel
_launchers: dict = {}


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1): launchers then pick
    wide blocks, since the interpreter's cost is per executed op, not per element."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def launch(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """`kernel[grid](*args, **kwargs)`; with DIRECT, through the compiled kernel's own launcher once Triton has
    compiled and launched it for the same specialization.

    Why: a frame launches about ten Triton kernels, and on the counted composites the host's launches set the
    frame's pace (BENCHMARKS.md, section 28). Triton 3.6's `JITFunction.run` took 18-34 us a launch there, of which
    the argument binder 2.4-6.5 us (kept here: it computes the specialization, the pointers' alignment included, so
    a kernel compiled for 16-byte aligned pointers is never launched on others), the cache key 1.1-1.9, the launch
    metadata 0.9-1.5 and the rest lookups and checks; the compiled launcher alone took 5.5-8.4 us.
    The key here holds the whole specialization and the launch options, as Triton's does. Profiler hooks, pre-run
    hooks and the interpreter take Triton's own path. It reads Triton 3.6's internals (`device_caches`, the compiled
    kernel's `run`, `function` and `packed_metadata`), which are not an API: tests/gpu/test_direct_launch.py checks
    them on the GPU."""
    if not DIRECT or interpreting() or _hooked(kernel):
        kernel[grid](*args, **kwargs)
        return
    device = torch.cuda.current_device()
    binder = kernel.device_caches[device][4]
    bound, specialization, options = binder(*args, **kwargs)
    key = (kernel, device, tuple(specialization), tuple(options.items()))
    known = _launchers.get(key)
    if known is None:
        compiled = kernel[grid](*args, **kwargs)
        if hasattr(compiled, "result"):  # compiled asynchronously
            compiled = compiled.result()
        _launchers[key] = (compiled.run, compiled.function, compiled.packed_metadata)
        return
    run, function, metadata = known
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    run(grid[0], g1, g2, torch._C._cuda_getCurrentRawStream(device), function, metadata, None, None, None,
        *bound.values())  # fmt: skip


def _hooked(kernel) -> bool:
    """Whether a profiler or a pre-run hook watches launches (Triton's own path then runs them)."""
    from triton import knobs

    def active(hook) -> bool:  # Triton 3.6 keeps an empty chain of hooks rather than None
        return hook is not None and bool(getattr(hook, "calls", True))

    runtime = knobs.runtime
    return active(runtime.launch_enter_hook) or active(runtime.launch_exit_hook) or bool(kernel.pre_run_hooks)
