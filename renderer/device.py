"""Where and with what a Renderer renders: the device (CUDA when it works, else the CPU) and the backend (the
Triton kernels, or their torch twins in kernels/reference.py)."""

from __future__ import annotations

import functools
import warnings

import torch

from kernels import RASTER_SLOTS, copy_to_device

BACKENDS = ("auto", "triton", "torch")

# the current CUDA device's index, from C: torch.cuda.current_device checks its lazy initialisation in Python first
current_cuda_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)


def resolve_backend(backend: str, device: torch.device) -> str:
    """ "auto": Triton on CUDA; the torch reference on CPU, where it is faster than Triton's interpreter
    (measured on the bundled scene at 256x256, 2 cores: see README.md)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "triton" if device.type == "cuda" else "torch"
    return backend


def kernel_module(backend: str):
    if backend == "triton":
        import kernels

        return kernels
    import kernels.reference

    return kernels.reference


class CudaUnusableError(RuntimeError):
    """CUDA is reported available but fails at its first call (e.g. a driver older than the runtime)."""


def choose_device(device: torch.device | str | None) -> torch.device:
    """The render device: the one asked for, else CUDA when it works, else the CPU (with a warning when CUDA
    is reported available but fails its first call, as with a driver older than the runtime)."""
    if device is None:
        if not torch.cuda.is_available():
            return torch.device("cpu")
        try:
            torch.cuda.mem_get_info()
        except RuntimeError as e:
            warnings.warn(f"CUDA is unusable ({e}); rendering on the CPU", stacklevel=3)
            return torch.device("cpu")
        return torch.device("cuda")
    device = torch.device(device)
    if device.type == "cuda":
        try:
            torch.cuda.mem_get_info(device)
        except (RuntimeError, AssertionError) as e:
            raise CudaUnusableError(
                f"{device} is not usable ({str(e).splitlines()[0]}); render on the CPU with CUDA_VISIBLE_DEVICES=''"
            ) from None
    return device


def frames_in_flight(device: torch.device) -> bool:
    """Whether a renderer on `device` keeps a frame in flight in `render_stream`: on a GPU, so that the host's work
    for one frame runs beside the GPU's on the one before. On a CPU the host is the device (each stage has
    finished when its call returns): a second frame in flight overlaps nothing and holds a second slot's buffers,
    and a frame refused for its pairs (renderer/memory.py `check_frame_pairs`) was found only after the next
    frame had been projected and ordered into them: 64 MB more for the densest 1 MB file at 1280x720."""
    return device.type == "cuda"


def raster_slots(device: torch.device) -> int:
    """Tiles the GPU's rasterizer programs blend at once: its multiprocessors times the thread blocks one holds
    (32 from compute capability 8.0 on, 16 on 8.6 and 8.7, 24 on 8.9: CUDA's occupancy limits), which scales
    the list class's rule to the GPU (kernels/rasterize.py `list_class`); elsewhere the H200's, where the rule was
    measured (the CPU runs no launch configuration)."""
    if device.type != "cuda":
        return RASTER_SLOTS
    props = torch.cuda.get_device_properties(device)
    per_sm = {(8, 6): 16, (8, 7): 16, (8, 9): 24}.get((props.major, props.minor), 32)
    return props.multi_processor_count * per_sm


@functools.cache
def maps_host_memory(device_index: int) -> bool:
    """Whether Triton's kernels on CUDA device `device_index` read and write pinned host memory directly (unified
    addressing maps it into the device's address space), so that a frame's parameters go up and its counts come
    back without torch's copies (kernels/staging.py). Found by doing it once, both ways; where Triton's launcher
    refuses the pointer, or the values do not arrive, the renderer keeps torch's copies."""
    with torch.cuda.device(device_index):
        try:
            src = torch.arange(28, dtype=torch.float32).pin_memory()
            on_device = torch.zeros(28, dtype=torch.float32, device="cuda")
            back = torch.zeros(28, dtype=torch.float32).pin_memory()
            copy_to_device(src, on_device)
            copy_to_device(on_device, back)
            torch.cuda.synchronize()
        except (ValueError, RuntimeError):
            return False
        return torch.equal(back, src) and torch.equal(on_device.cpu(), src)
