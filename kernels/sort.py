"""Stage 4, sort: group the pairs by macro-tile, keeping the depth order they were emitted in.

`bin_pairs` emits pairs nearest Gaussian first (see kernels/order.py), so a *stable* sort by macro-tile id alone
gives every macro-tile its list in depth order, ties by Gaussian index; `tile_lists` then splits it into the
tiles' lists, which are gsplat's (tile << 32 | depth) order. The keys are int16 up to 32,767 macro-tiles (every
image up to 16384 x 8192 at 8 px tiles) and int32 above: a radix sort's cost grows with the key width.

The sort runs over the whole buffer, whose length is the renderer's pair capacity, not the frame's pair count
(which stays on the device): unused slots hold the sentinel key, the type's maximum, and sort last.

Inputs : keys [C] i16/i32 (macro-tile ids or the sentinel), entries [C] i64 (Gaussian id and tile mask)
Outputs: sorted keys [C], entries in key order [C] i64
"""

from __future__ import annotations

import torch


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def sort_pairs(
    keys: torch.Tensor,  # [C] i16 or i32
    entries: torch.Tensor,  # [C] i64
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable sort by key. `out` = (sorted keys, permutation i64, sorted entries) buffers, each at least C long."""
    C = keys.shape[0]
    assert keys.dtype in (torch.int16, torch.int32) and entries.shape == (C,), (keys.dtype, entries.shape)
    assert entries.dtype == torch.int64, entries.dtype
    if out is None:
        sorted_keys, perm = torch.sort(keys, stable=True)
        return sorted_keys, entries[perm]
    k_buf, p_buf, e_buf = out
    sorted_keys, perm, sorted_entries = k_buf[:C], p_buf[:C], e_buf[:C]
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    torch.index_select(entries, 0, perm, out=sorted_entries)
    return sorted_keys, sorted_entries
