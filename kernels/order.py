"""Stage 2, order: the visible Gaussians nearest first, and where each one's pairs start.

One stable sort of the N depths (32-bit float keys; culled Gaussians carry +inf from `project_gaussians`, so
they come last), then each Gaussian's tile count in that order and their inclusive prefix sum. Stable means
equal depths keep the Gaussians' index order, which is how gsplat's (tile << 32 | depth) radix sort breaks
ties: so the pair lists `bin_pairs` emits in this order and `sort_pairs` groups by tile end up in gsplat's
order, while the only wide sort is this one over Gaussians, not the one over pairs (several times as many).

torch.sort and torch.cumsum are the implementation (CUB radix sort and scan on the GPU); every launch takes
its length from the tensors, so the stage needs no host sync and can be captured in a CUDA graph. The pair
count stays on the device (the last offset).

Inputs : depths [N] f32 (+inf = culled), tiles_touched [N] i32
Outputs: order [N] i64 (Gaussian indices, nearest first), offsets [N] i64 (inclusive prefix sum of
         tiles_touched[order]; offsets[-1] is the pair count)
"""

from __future__ import annotations

import torch


def depth_order(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(order, offsets). `out` = (sorted depths f32, order i64, counts in order i32, offsets i64), each >= N."""
    N = depths.shape[0]
    assert depths.dtype == torch.float32 and tiles_touched.shape == (N,) and tiles_touched.dtype == torch.int32
    if out is None:
        out = (torch.empty_like(depths), torch.empty(N, dtype=torch.int64, device=depths.device),
               torch.empty_like(tiles_touched), torch.empty(N, dtype=torch.int64, device=depths.device))  # fmt: skip
    sorted_depths, order, counts, offsets = (buf[:N] for buf in out)
    torch.sort(depths, stable=True, out=(sorted_depths, order))
    torch.index_select(tiles_touched, 0, order, out=counts)
    torch.cumsum(counts, 0, dtype=torch.int64, out=offsets)
    return order, offsets
