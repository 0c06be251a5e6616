"""A frame's few numbers between the host and the device: its camera up, its counts down, without torch's copies.

A frame's parameters (camera, background, AdaGScale's tau: 28 floats) go up from a pinned staging buffer, and a
counted frame's counts and longest tile list come back into pinned buffers that the host reads. On a GPU with unified
addressing, pinned host memory is mapped into the device's address space at the same address, so a kernel reads and
writes it directly: the counts' and the longest list's kernels write the pinned buffers themselves
(kernels/order.py `count_visible`, kernels/schedule.py `schedule_tiles`: any output may be a pinned tensor), and the
parameters go up through `copy_to_device`, one small launch, in place of torch's `copy_`. A counted frame then puts
no copy between pinned and device memory on its stream (there were three, each a host call through torch's caching
host allocator and a copy between two kernels): alternated against the copies, the overviews' frames in flight
took 0.993-0.997x their time in every round, the fly-overs' 0.986-1.017x, within their rounds' spread (0.96-1.06):
a small gain, and no loss beyond the host's noise (BENCHMARKS.md, section 59). The host reads what a kernel wrote
once an event recorded after it has completed (the kernel's writes are visible by then), as it read the copies.

Where a kernel cannot reach pinned memory (no unified addressing: Triton's launcher then refuses the pointer), the
renderer keeps torch's copies (renderer/device.py `maps_host_memory`).

Inputs : src [n] (pinned host memory, or the device's)
Outputs: dst [n] of src's dtype (the device's, or pinned host memory)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._launch import launch


# n is not specialised: one compiled kernel for every length (the renderer's check copies what its frames do)
@triton.jit(do_not_specialize=["n"])
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keep = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=keep), mask=keep)


# The most elements one copy takes: a frame's parameters are 28 floats (renderer/params.py WIDTH); one program copies
# them, with one block size for every caller (no second specialization to compile)
MAX_STAGED = 32


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def copy_to_device(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """dst[:] = src, enqueued on the current stream like a kernel (one program of MAX_STAGED lanes). src and dst are
    contiguous, of one dtype and length (at most MAX_STAGED); either may be pinned host memory. Returns dst."""
    n = src.shape[0]
    assert src.shape == dst.shape == (n,) and src.dtype == dst.dtype, (src.shape, dst.shape, src.dtype, dst.dtype)
    assert src.is_contiguous() and dst.is_contiguous() and n <= MAX_STAGED, n
    if n:
        launch(_copy_kernel, (1,), src, dst, n, BLOCK=MAX_STAGED, num_warps=1)
    return dst
