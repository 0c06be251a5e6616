"""Stage 2, order: the visible Gaussians nearest first, and where each one's pairs start.

1. compact: the visible Gaussians (tile count > 0), in index order, into a buffer of `capacity` slots (their
   depth as the key, their index as the payload); the slots past the visible count keep key +inf and the
   payload N, a Gaussian index with no tiles;
2. one stable sort of those 32-bit float depth keys;
3. each slot's Gaussian and tile count in that order, and the counts' inclusive prefix sum.
Stable means equal depths keep the Gaussians' index order, which is how gsplat's (tile << 32 | depth) radix sort
breaks ties: so the pair lists `bin_pairs` emits in this order and `sort_pairs` groups by tile end up in
gsplat's order, while the only wide sort is this one over visible Gaussians, not the one over pairs (several
times as many). Compacting first keeps the sort to what the camera sees (a fly-over sees a third of a scene).

The visible count and the pair count stay on the device (`totals`): no launch needs them, so
the stage needs no host sync and can be captured in a CUDA graph. A frame whose visible Gaussians did not fit
the capacity learns so at its end and is ordered again with a larger one (renderer/pipeline.py).

Inputs : depths [N] f32 (+inf where culled), tiles_touched [N] i32
Outputs: order [C] i32 (Gaussian indices nearest first, N past the visible ones), offsets [C] i64 (inclusive
         prefix sum of the counts in that order), totals [2] i64 (the visible count and the pair count)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["N", "capacity"])
def _compact_kernel(
    depths_ptr,  # [N] f32
    tiles_touched_ptr,  # [N] i32
    rank_ptr,  # [N] i32 inclusive prefix sum of (tiles_touched > 0)
    keys_ptr,  # [capacity] f32 out (pre-filled with +inf)
    ids_ptr,  # [capacity] i32 out (pre-filled with N)
    N,
    capacity,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    slot = tl.load(rank_ptr + offs, mask=m, other=0) - 1
    keep = m & (tl.load(tiles_touched_ptr + offs, mask=m, other=0) > 0) & (slot < capacity)
    tl.store(keys_ptr + slot, tl.load(depths_ptr + offs, mask=keep, other=0.0), mask=keep)
    tl.store(ids_ptr + slot, offs.to(tl.int32), mask=keep)


@triton.jit(do_not_specialize=["N", "capacity"])
def _gather_kernel(
    perm_ptr,  # [capacity] i64 sorted position -> compacted slot
    ids_ptr,  # [capacity] i32 compacted slot -> Gaussian (N = none)
    tiles_touched_ptr,  # [N] i32
    order_ptr,  # [capacity] i32 out
    counts_ptr,  # [capacity] i32 out
    N,
    capacity,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < capacity
    g = tl.load(ids_ptr + tl.load(perm_ptr + offs, mask=m, other=0), mask=m, other=0)
    count = tl.load(tiles_touched_ptr + g, mask=m & (g < N), other=0)
    tl.store(order_ptr + offs, g, mask=m)
    tl.store(counts_ptr + offs, count, mask=m)


def order_outputs(n: int, capacity: int, device) -> tuple[torch.Tensor, ...]:
    """Buffers for `depth_order`: (rank [n] i32, keys [C] f32, ids [C] i32, sorted keys [C] f32, perm [C] i64,
    order [C] i32, counts [C] i32, offsets [C] i64, totals [2] i64)."""
    i32, f32 = dict(dtype=torch.int32, device=device), dict(dtype=torch.float32, device=device)
    i64 = dict(dtype=torch.int64, device=device)
    return (torch.empty(n, **i32), torch.empty(capacity, **f32), torch.empty(capacity, **i32),
            torch.empty(capacity, **f32), torch.empty(capacity, **i64), torch.empty(capacity, **i32),
            torch.empty(capacity, **i32), torch.empty(capacity, **i64), torch.empty(2, **i64))  # fmt: skip


def depth_order(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    *,
    out: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(order [C] i32, offsets [C] i64, totals [2] i64) with C the capacity of `out` (see `order_outputs`)."""
    N = depths.shape[0]
    assert depths.dtype == torch.float32 and tiles_touched.shape == (N,) and tiles_touched.dtype == torch.int32
    rank, keys, ids, sorted_keys, perm, order, counts, offsets, totals = out
    C = keys.shape[0]
    assert rank.shape[0] >= N and all(t.shape[0] == C for t in out[1:-1]) and totals.shape == (2,), (N, C)
    rank = rank[:N]
    torch.cumsum(tiles_touched > 0, 0, dtype=torch.int32, out=rank)
    keys.fill_(float("inf"))
    ids.fill_(N)
    if N:
        _compact_kernel[(triton.cdiv(N, 1024),)](depths, tiles_touched, rank, keys, ids, N, C, BLOCK=1024)
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    if C:
        _gather_kernel[(triton.cdiv(C, 1024),)](perm, ids, tiles_touched, order, counts, N, C, BLOCK=1024)
    torch.cumsum(counts, 0, dtype=torch.int64, out=offsets)
    totals.zero_()
    if N:
        totals[0:1].copy_(rank[-1:])
    if C:
        totals[1:2].copy_(offsets[-1:])
    return order, offsets, totals
