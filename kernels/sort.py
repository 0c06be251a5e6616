"""Stage 4, sort: group the pairs by tile or macro-tile, keeping the depth order they were emitted in.

`bin_pairs` emits pairs nearest Gaussian first (see kernels/order.py), so a *stable* sort by the key alone gives
every tile (macro-tile) its list in depth order, ties by Gaussian index, which is gsplat's (tile << 32 | depth)
order; macro-tile lists are then split into the tiles' lists by `tile_lists`. The keys are int16 up to 32,767
tiles (1920x1080 at 8 px has 32,400) or macro-tiles (3840x2160 at 8 px has 4,080) and int32 above: a radix
sort's cost grows with the key width.

The sort runs over the whole buffer, whose length is the renderer's pair capacity, not the frame's pair count
(which stays on the device): unused slots hold the sentinel key, the type's maximum, and sort last.

Inputs : keys [C] i16/i32 (tile or macro-tile ids, or the sentinel), values [C] (i32 Gaussian ids, or i64 entries:
         Gaussian id and tile mask)
Outputs: sorted keys [C], values in key order [C]
"""

from __future__ import annotations

import torch


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def sort_pairs(
    keys: torch.Tensor,  # [C] i16 or i32
    entries: torch.Tensor,  # [C] i32 ids or i64 entries
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable sort by key. `out` = (sorted keys, permutation i64, sorted entries) buffers, each at least C long."""
    C = keys.shape[0]
    assert keys.dtype in (torch.int16, torch.int32) and entries.shape == (C,), (keys.dtype, entries.shape)
    assert entries.dtype in (torch.int32, torch.int64), entries.dtype
    if out is None:
        sorted_keys, perm = torch.sort(keys, stable=True)
        return sorted_keys, entries[perm]
    k_buf, p_buf, e_buf = out
    sorted_keys, perm, sorted_entries = k_buf[:C], p_buf[:C], e_buf[:C]
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    torch.index_select(entries, 0, perm, out=sorted_entries)
    return sorted_keys, sorted_entries
