"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os

import torch
from triton import knobs

# On unless WARPSPLAT_DIRECT_LAUNCH=0: `launch` calls a compiled kernel's own launcher once Triton has launched that
# specialization itself (the why is `launch`'s docstring). Read once: the frames' launches read the module global.
DIRECT = os.environ.get("WARPSPLAT_DIRECT_LAUNCH", "1") != "0"

# (kernel, device, specialization, options) -> (launcher, function handle, packed metadata) of a compiled kernel
_launchers: dict = {}


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1): launchers then pick
    wide blocks, since the interpreter's cost is per executed op, not per element."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for the launchers' host arithmetic. `triton.cdiv` is a constexpr function in Triton 3.6, whose
    every host call unwraps its arguments in Python: a few us each, a dozen a frame."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The least power of 2 >= n (n >= 1), as `triton.next_power_of_2`, in plain Python (`cdiv` says why)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def launch(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """`kernel[grid](*args, **kwargs)`: every launcher in kernels/ launches through here. With DIRECT (the default),
    a specialization Triton has compiled and launched once goes through the compiled kernel's own launcher.

    Why: the composites' sparse frames are paced by the host, not the GPU: a fly-over's frames that see little
    run their kernels in less time than the host takes to launch them, about nine Triton launches among some
    thirty operations a frame. Triton 3.6's `JITFunction.run` took 18-34 us a launch on the GPU machine, the
    compiled launcher alone 5.5-8.4 us. Alternated pass by pass in one process, the 6M fly-over in flight took 0.90x
    the time with it (1.783 -> 1.597 ms), the 24M fly-over 0.98x, the overviews the same (BENCHMARKS.md, section
    52). The binder is kept: it computes the specialization, the pointers' 16-byte alignment included, so a kernel
    compiled for aligned pointers is never launched on others; the key holds that and the launch options, as
    Triton's own does. Triton's own path still runs every first launch of a specialization (which compiles it or
    loads it from the cache), under the interpreter, and where a profiler or a pre-run hook watches launches.
    It reads Triton 3.6's internals (`device_caches`, the compiled kernel's `run`, `function`, `packed_metadata`),
    which are not an API: tests/gpu/test_direct_launch.py holds them to Triton's own launch on the GPU, and a
    Triton without them takes its own path (`_direct_parts`)."""
    if not DIRECT or interpreting() or _hooked(kernel):
        kernel[grid](*args, **kwargs)
        return
    device = torch.cuda.current_device()
    caches = getattr(kernel, "device_caches", None)
    if caches is None:  # not a Triton 3.6 JIT function: its own launch
        kernel[grid](*args, **kwargs)
        return
    binder = caches[device][4]
    bound, specialization, options = binder(*args, **kwargs)
    key = (kernel, device, tuple(specialization), tuple(options.items()))
    known = _launchers.get(key)
    if known is None:
        compiled = kernel[grid](*args, **kwargs)  # compiles, or loads from Triton's cache, and launches
        _launchers[key] = _direct_parts(compiled)
        return
    if known is False:  # a compiled kernel without the parts this route needs
        kernel[grid](*args, **kwargs)
        return
    run, function, metadata = known
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    run(grid[0], g1, g2, torch._C._cuda_getCurrentRawStream(device), function, metadata, None, None, None,
        *bound.values())  # fmt: skip


def _direct_parts(compiled) -> tuple | bool:
    """(launcher, function handle, packed metadata) of what `kernel[grid]` handed back, or False where it lacks them
    (Triton's own launch then serves that specialization)."""
    if hasattr(compiled, "result"):  # compiled asynchronously
        compiled = compiled.result()
    try:
        return compiled.run, compiled.function, compiled.packed_metadata
    except AttributeError:
        return False


def _hooked(kernel) -> bool:
    """Whether a profiler or a pre-run hook watches launches (Triton's own path then runs them)."""

    def active(hook) -> bool:  # Triton 3.6 keeps an empty chain of hooks rather than None
        return hook is not None and bool(getattr(hook, "calls", True))

    runtime = knobs.runtime
    return active(runtime.launch_enter_hook) or active(runtime.launch_exit_hook) or bool(kernel.pre_run_hooks)
