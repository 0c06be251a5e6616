"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os
import weakref

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
    Triton's own does (`launch_steady` skips it only for arguments it has bound before). Triton's own path still
    runs every first launch of a specialization (which compiles it or loads it from the cache), under the
    interpreter, and where a profiler or a pre-run hook watches launches.
    It reads Triton 3.6's internals (`device_caches`, the compiled kernel's `run`, `function`, `packed_metadata`),
    which are not an API: tests/gpu/test_direct_launch.py holds them to Triton's own launch on the GPU, and a
    Triton without them takes its own path (`_direct_parts`)."""
    if not DIRECT or INTERPRET or _hooked(kernel):
        kernel[grid](*args, **kwargs)
        return
    _bind_and_launch(kernel, grid, _current_device(), args, kwargs)


def _bind_and_launch(kernel, grid, device, args, kwargs) -> tuple | None:
    """`launch`'s direct path: (the binder's bound arguments, the compiled kernel's launch parts) where the compiled
    kernel's own launcher ran, None where Triton's own launch served."""
    caches = getattr(kernel, "device_caches", None)
    if caches is None:  # not a Triton 3.6 JIT function: its own launch
        kernel[grid](*args, **kwargs)
        return None
    bound, specialization, options = caches[device][4](*args, **kwargs)  # the binder
    # by id: a JIT function's own hash is a Python property, 3-4 us a launch; kernels live as long as their modules
    key = (id(kernel), device, tuple(specialization), tuple(options.items()))
    known = _launchers.get(key)
    if known is None:
        compiled = kernel[grid](*args, **kwargs)  # compiles, or loads from Triton's cache, and launches
        _launchers[key] = _direct_parts(compiled)
        return None
    if known is False:  # a compiled kernel without the parts this route needs
        kernel[grid](*args, **kwargs)
        return None
    _run(known, grid, device, bound.values())
    return bound, known


def _run(known: tuple, grid: tuple[int, ...], device: int, values) -> None:
    """The compiled kernel's launch (`_direct_parts`) over the bound argument values, on the current stream."""
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    stream = torch._C._cuda_getCurrentRawStream(device)
    run, function, metadata, flags = known
    if flags is None:  # through the launcher object, which allocates the kernel's scratch
        run(grid[0], g1, g2, stream, function, metadata, None, None, None, *values)
    else:  # its C launch itself: cooperative grid and PDL flags, no scratch, no hooks
        run(grid[0], g1, g2, stream, function, *flags, None, None, metadata, None, None, None, *values)


# Per kernel, the argument sets of its last few steady launches (`launch_steady`), most recent first: (device, the
# keyword arguments with their types, the positional ones' prints (a tensor by weak reference, anything else by type
# and value), the launch parts, the bound values after the positional ones). A frame's head alternates two slots'
# buffers in flight, and a viewer flips settings: four sets a kernel
_steady: dict[int, list[tuple]] = {}
STEADY_SETS = 4
_Tensor = torch.Tensor


def launch_steady(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """`launch`, for a launch whose arguments are, frame after frame, the same tensor objects and equal numbers (a
    frame's head over the workspace's views: the projection, its pre-cull, the counts). Where they are those of one of
    the kernel's last few launches, the binder's work is that launch's: the same tensors (the same objects: their
    dtype and address, and so their alignment, cannot have changed; held weakly, so nothing is kept alive) and equal
    numbers of the same types give the same specialization, so its compiled kernel is launched with the new values
    straight away. The binder of the projection's 30 arguments took 31 us of a counted frame's host time a launch,
    two launches a frame, on the fly-overs whose sparse frames the host paces (BENCHMARKS.md, section 59)."""
    if not DIRECT or INTERPRET or _hooked(kernel):
        kernel[grid](*args, **kwargs)
        return
    device = _current_device()
    keywords = tuple((k, type(v), v) for k, v in kwargs.items())
    sets = _steady.get(id(kernel))
    if sets is not None:
        for i, (dev, kw, prints, known, tail) in enumerate(sets):
            if dev == device and kw == keywords and _same(prints, args):
                if i:  # the most recent first: a stream's two slots find theirs in one or two looks
                    sets.insert(0, sets.pop(i))
                _run(known, grid, device, args + tail if tail else args)
                return
    done = _bind_and_launch(kernel, grid, device, args, kwargs)
    if done is None:
        return
    bound, known = done
    tail = tuple(bound.values())[len(args) :]  # keyword values and defaults, in the kernel's order
    if any(isinstance(v, _Tensor) for v in tail):  # held strongly: not remembered
        return
    prints = tuple(weakref.ref(a) if isinstance(a, _Tensor) else (type(a), a) for a in args)
    sets = _steady.setdefault(id(kernel), [])
    sets.insert(0, (device, keywords, prints, known, tail))
    del sets[STEADY_SETS:]


def _same(prints: tuple, args: tuple) -> bool:
    """Whether `args` are the arguments `prints` were taken of: each tensor the same object, each other value of the
    same type and equal (a NaN is never equal: such a launch binds again)."""
    if len(prints) != len(args):
        return False
    for p, a in zip(prints, args):
        if type(p) is tuple:
            if type(a) is not p[0] or a != p[1]:
                return False
        elif p() is not a:
            return False
    return True


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
