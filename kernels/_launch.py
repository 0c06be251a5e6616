"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os

import torch
from triton import knobs

# On unless WARPSPLAT_DIRECT_LAUNCH=0: `launch` calls a compiled kernel's own launcher once Triton has launched that
# specialization itself (the why is `launch`'s docstring). Read once: the frames' launches read the module global.
DIRECT = os.environ.get("WARPSPLAT_DIRECT_LAUNCH", "1") != "0"

# (id(kernel), device, specialization, options) -> how `launch` calls that compiled kernel (`_direct_parts`)
_launchers: dict = {}

# Read when kernels/ is imported, as Triton's @jit reads it to choose the interpreter (kernels/__init__.py sets it
# first where there is no CUDA device): os.environ.get took about 1.5 us a call, a dozen calls a frame.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"

# The current CUDA device: torch.cuda.current_device checks torch's lazy initialisation in Python first (a few us a
# launch); torch's CPU builds lack the binding, and never launch directly.
_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
_runtime = knobs.runtime  # Triton's launch hooks


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1): launchers then pick
    wide blocks, since the interpreter's cost is per executed op, not per element."""
    return INTERPRET


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
    52). What is left of a launch here is the binder, a dictionary look-up and the C launch: 12.1 us against 17.3
    before the device, environment, hash and launcher-object calls were cut, and Triton's own 20.5 (section 53).
    The binder is kept: it computes the specialization, the pointers' 16-byte alignment included, so a kernel
    compiled for aligned pointers is never launched on others; the key holds that and the launch options, as
    Triton's own does. Triton's own path still runs every first launch of a specialization (which compiles it or
    loads it from the cache), under the interpreter, and where a profiler or a pre-run hook watches launches.
    It reads Triton 3.6's internals (`device_caches`, the compiled kernel's `run`, `function`, `packed_metadata`),
    which are not an API: tests/gpu/test_direct_launch.py holds them to Triton's own launch on the GPU, and a
    Triton without them takes its own path (`_direct_parts`)."""
    if not DIRECT or INTERPRET or _hooked(kernel):
        kernel[grid](*args, **kwargs)
        return
    device = _current_device()
    caches = getattr(kernel, "device_caches", None)
    if caches is None:  # not a Triton 3.6 JIT function: its own launch
        kernel[grid](*args, **kwargs)
        return
    bound, specialization, options = caches[device][4](*args, **kwargs)  # the binder
    # by id: a JIT function's own hash is a Python property, 3-4 us a launch; kernels live as long as their modules
    key = (id(kernel), device, tuple(specialization), tuple(options.items()))
    known = _launchers.get(key)
    if known is None:
        compiled = kernel[grid](*args, **kwargs)  # compiles, or loads from Triton's cache, and launches
        _launchers[key] = _direct_parts(compiled)
        return
    if known is False:  # a compiled kernel without the parts this route needs
        kernel[grid](*args, **kwargs)
        return
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    stream = torch._C._cuda_getCurrentRawStream(device)
    run, function, metadata, flags = known
    if flags is None:  # through the launcher object, which allocates the kernel's scratch
        run(grid[0], g1, g2, stream, function, metadata, None, None, None, *bound.values())
    else:  # its C launch itself: cooperative grid and PDL flags, no scratch, no hooks
        run(grid[0], g1, g2, stream, function, *flags, None, None, metadata, None, None, None, *bound.values())


def _direct_parts(compiled) -> tuple | bool:
    """How `launch` calls what `kernel[grid]` handed back: (launcher, function handle, packed metadata, flags), or
    False where it lacks them (Triton's own launch then serves that specialization). Where the kernel needs no
    global or profile scratch, the launcher is the launcher object's C `launch` itself, and flags its cooperative
    grid and PDL flags: the object's `__call__` only adds those and the scratch buffers, a Python frame and two
    closures a launch (flags None: the object is called, as Triton calls it)."""
    if hasattr(compiled, "result"):  # compiled asynchronously
        compiled = compiled.result()
    try:
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
    except AttributeError:
        return False
    try:
        if run.global_scratch_size or run.profile_scratch_size:
            return run, function, metadata, None
        return run.launch, function, metadata, (run.launch_cooperative_grid, run.launch_pdl)
    except AttributeError:
        return run, function, metadata, None


def _active(hook) -> bool:
    """Whether a launch hook is set: Triton 3.6 keeps an empty chain of hooks rather than None."""
    return hook is not None and bool(getattr(hook, "calls", True))


def _hooked(kernel) -> bool:
    """Whether a profiler or a pre-run hook watches launches (Triton's own path then runs them)."""
    return _active(_runtime.launch_enter_hook) or _active(_runtime.launch_exit_hook) or bool(kernel.pre_run_hooks)


def settle_cache_keys(modules) -> int:
    """Compute the cache key of every @jit function in `modules` until none changes, so that a kernel's key does not
    depend on which kernel this process hashed first. Returns the passes taken (each hashes every function).

    Why: Triton 3.6 hashes a kernel with the global values of the functions it calls (their tl.constexpr globals go
    into the key), merging each callee's set before it has computed that callee's key: a helper hashed first gives
    its callers its globals; one hashed later gives them none. So the keys followed the launch order, and that
    differs between a first start (the warm-up's four threads) and the next (one thread, the cache warm): a warm
    start compiled the 12 binning specializations again (1.8 s of its 7.7, BENCHMARKS.md section 63), though the
    cold start had put them in the same cache under other keys. Settled at import, before any launch, every key is
    its callees' complete set, whatever hashes first. Under the interpreter `@jit` makes no such functions."""
    from triton.runtime.jit import JITCallable

    fns = {id(v): v for m in modules for v in vars(m).values() if isinstance(v, JITCallable)}
    fns = sorted(fns.values(), key=lambda f: (f.fn.__module__, f.fn.__qualname__))
    for passes in range(1, 17):  # one pass per level of calls, and one that changes nothing
        before = [f.hash for f in fns]
        for f in fns:
            f.hash = None
        for f in fns:
            f.cache_key  # noqa: B018 (computes and keeps the key)
        if [f.hash for f in fns] == before:
            return passes
    raise RuntimeError("the kernels' cache keys did not settle in 16 passes")
