"""Stage 3, sort: order Gaussian-tile pairs by (tile, depth).

One seam, implementation swappable. Today: `torch.sort(stable=True)` on the packed int64 keys, so pairs
with equal keys keep their emission (Gaussian-index) order, as gsplat's stable radix sort does; this is
what makes ties in depth resolve identically. NOTE: a global 64-bit sort costs ~1.1 ms per 10M pairs on an
H200 (DESIGN.md, "Measuring"); a per-tile 32-bit scheme is the planned replacement.

Inputs : keys [P] i64, gaussian_ids [P] i32
Outputs: sorted keys [P] i64, gaussian ids in key order [P] i32
"""

from __future__ import annotations

import torch


def sort_pairs(
    keys: torch.Tensor,  # [P] i64
    gaussian_ids: torch.Tensor,  # [P] i32
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable sort by key. `out` = (sorted_keys, permutation i64, sorted_ids) buffers, at least P long."""
    P = keys.shape[0]
    assert keys.dtype == torch.int64 and gaussian_ids.shape == (P,), (keys.dtype, gaussian_ids.shape)
    if out is None:
        sorted_keys, perm = torch.sort(keys, stable=True)
        return sorted_keys, gaussian_ids[perm]
    k_buf, p_buf, id_buf = out
    sorted_keys, perm = k_buf[:P], p_buf[:P]
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    sorted_ids = id_buf[:P]
    torch.index_select(gaussian_ids, 0, perm, out=sorted_ids)
    return sorted_keys, sorted_ids
