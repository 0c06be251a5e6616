"""Stage 2, order: the visible Gaussians nearest first, and where each one's pairs start.

One stable sort of the N depths (32-bit float keys; culled Gaussians carry +inf from `project_gaussians`, so
they come last), then each Gaussian's pair count in that order (its macro-tiles, or its tiles where the frame bins
per tile: kernels/bin.py) and their inclusive prefix sum: where its pairs end. Stable means
equal depths keep the Gaussians' index order, which is how gsplat's (tile << 32 | depth) radix sort breaks
ties: so the pair lists `bin_pairs` emits in this order and `sort_pairs` groups by tile end up in gsplat's
order, while the only wide sort is this one over Gaussians, not the one over pairs (several times as many).

Sorting only the visible Gaussians (compacted first) measured slower on the H200, even on a fly-over that sees
half of a 24M-Gaussian scene: the compaction's scan and scatter cost more than the shorter sort saved
(BENCHMARKS.md, section 8).

torch.sort, torch.cumsum and torch.searchsorted are the implementation (CUB radix sort and scan on the GPU);
every launch takes its length from the tensors, so the stage needs no host sync and can be captured in a CUDA
graph. The visible, tile-pair and macro-pair counts stay on the device, in `totals`, for the frame's one sync to
read: the pairs size the pair buffers, the tile pairs the tiles' lists (kernels/tile_lists.py). Counted frames
count with one Triton kernel of their own (`count_totals`).

`depth_order_counted` is the same order for frames whose host waits for their counts: it reads the visible
and pair counts (reduced before the sort, read while it runs), sorts only the visible Gaussians (or, for views
that see most of the scene, all of them), and returns the counts to the host, so the pair buffers can be sized
exactly. On large scenes seen in part (a fly-over) the capacity route sorts every culled Gaussian and every
idle pair slot of the path's busiest frame, which costs more than that wait (BENCHMARKS.md, section 10).

Inputs : depths [N] f32 (+inf = culled), tiles_touched [N] i32, pair_counts [N] i32 (macros_touched or tiles_touched)
Outputs: order [N] i64 (Gaussian indices, nearest first), offsets [N] i64 (inclusive prefix sum of
         pair_counts[order]), totals [3] i64 (visible Gaussians, tile pairs, pairs)
         (counted: order and offsets [V] for the V visible, and the three counts as host ints)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def depth_order(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    pair_counts: torch.Tensor,  # [N] i32: each Gaussian's pairs (macros_touched, or tiles_touched: kernels/bin.py)
    *,
    out: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(order, offsets, totals); `out` from `buffers.order_outputs` (each buffer at least N long)."""
    N = depths.shape[0]
    assert depths.dtype == torch.float32 and tiles_touched.shape == (N,) and tiles_touched.dtype == torch.int32
    assert pair_counts.shape == (N,) and pair_counts.dtype == torch.int32
    sorted_depths, order, counts, offsets, totals, inf = out
    sorted_depths, order, counts, offsets = sorted_depths[:N], order[:N], counts[:N], offsets[:N]
    if N == 0:
        totals.zero_()
        return order, offsets, totals
    torch.sort(depths, stable=True, out=(sorted_depths, order))
    torch.index_select(pair_counts, 0, order, out=counts)
    torch.cumsum(counts, 0, dtype=torch.int64, out=offsets)
    torch.searchsorted(sorted_depths, inf, out=totals[0:1])  # the visible ones: every finite depth
    totals[2:3].copy_(offsets[-1:])
    if pair_counts is tiles_touched:  # pairs per tile: the tile pairs are the pairs, no second reduction
        totals[1:2].copy_(offsets[-1:])
    else:
        torch.sum(tiles_touched, 0, dtype=torch.int64, out=totals[1])
    return order, offsets, totals


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def depth_order_counted(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    pair_counts: torch.Tensor,  # [N] i32: each Gaussian's pairs (macros_touched, or tiles_touched)
    *,
    compact: bool = True,
    host: torch.Tensor | None = None,  # [3] i64, pinned: where the counts are read (CUDA)
) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    """(order [V] i64, offsets [V] i64, V, tile pairs, macro-tile pairs) over the V visible Gaussians.

    The counts do not depend on the order: V counts the finite depths, and the pairs are every Gaussian's tile
    (macro-tile) count summed (culled ones touch none). So they are reduced first and copied to `host` without
    blocking, and
    the host waits for that copy alone, while the sort queued behind it runs: the GPU is not left idle while the
    host reads them and launches the stages after (a full sync after the sort left it idle 0.5-1 ms a frame,
    BENCHMARKS.md section 21). Without `host` (the CPU) the counts are read with a plain sync.

    compact: sort only the visible Gaussians, found once V is known (`nonzero_static`, no sync of its own); else
    sort all N depths, the culled ones (+inf) last, queued before the wait: for views that see most of the
    scene, where finding the visible ones and gathering their depths and indices costs more than the culled keys
    they leave out of the sort. The same order either way (a stable sort of the same keys)."""
    assert depths.dtype == torch.float32 and tiles_touched.shape == depths.shape
    counts = count_totals(depths, tiles_touched, pair_counts)
    ready = None
    if host is not None and depths.is_cuda:
        host.copy_(counts, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()

    def read() -> tuple[int, int, int]:
        if ready is None:
            return tuple(counts.tolist())
        ready.synchronize()
        return tuple(host.tolist())

    if not compact:
        _, order = torch.sort(depths, stable=True)
        offsets = torch.cumsum(pair_counts[order], 0, dtype=torch.int64)
        n_visible, n_pairs, n_macro_pairs = read()
        return order[:n_visible], offsets[:n_visible], n_visible, n_pairs, n_macro_pairs
    n_visible, n_pairs, n_macro_pairs = read()
    index = torch.nonzero_static(depths < float("inf"), size=n_visible).squeeze(1)  # [V] i64, in index order
    _, by_depth = torch.sort(depths[index], stable=True)  # stable: equal depths keep index order
    order = index[by_depth]
    offsets = torch.cumsum(pair_counts[order], 0, dtype=torch.int64)
    return order, offsets, n_visible, n_pairs, n_macro_pairs


# Gaussians a counting program reads: 24M Gaussians make about 5,900 programs, three atomics each.
COUNT_BLOCK = 4096


@triton.jit(do_not_specialize=["N"])
def _count_kernel(
    depths_ptr,  # [N] f32, +inf = culled
    tiles_touched_ptr,  # [N] i32
    pair_counts_ptr,  # [N] i32 (read only when it is not tiles_touched)
    totals_ptr,  # [3] i64, zeroed: (visible, tile pairs, pairs) out
    N,
    SAME: tl.constexpr,  # pair_counts is tiles_touched
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    depth = tl.load(depths_ptr + i, mask=m, other=float("inf"))
    tiles = tl.sum(tl.load(tiles_touched_ptr + i, mask=m, other=0).to(tl.int64))
    tl.atomic_add(totals_ptr + 0, tl.sum((depth < float("inf")).to(tl.int64)))
    tl.atomic_add(totals_ptr + 1, tiles)
    if SAME:
        tl.atomic_add(totals_ptr + 2, tiles)
    else:
        tl.atomic_add(totals_ptr + 2, tl.sum(tl.load(pair_counts_ptr + i, mask=m, other=0).to(tl.int64)))


def count_totals(depths: torch.Tensor, tiles_touched: torch.Tensor, pair_counts: torch.Tensor) -> torch.Tensor:
    """[3] i64 on the device: (visible Gaussians, tile pairs, pairs), for `depth_order_counted`.

    One pass over the three arrays. In torch it took a compare, three sums that each first widen their [N]
    int32 array to int64 in a copy of its own, and a stack: eight kernels, 0.12 ms of GPU time on a 6M-Gaussian
    scene, and about 0.4 ms of the host's time while the GPU waited for the counts (BENCHMARKS.md, section 25).
    The sums are of integers, so the atomics' order changes nothing."""
    N = depths.shape[0]
    totals = torch.zeros(3, dtype=torch.int64, device=depths.device)
    if N:
        _count_kernel[(triton.cdiv(N, COUNT_BLOCK),)](depths, tiles_touched, pair_counts, totals, N,
                                                      SAME=pair_counts is tiles_touched, BLOCK=COUNT_BLOCK,
                                                      num_warps=8)  # fmt: skip
    return totals
