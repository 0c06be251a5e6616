"""Stage 4, sort: group the pairs by tile, keeping the depth order they were emitted in.

`bin_pairs` emits pairs nearest Gaussian first (see kernels/order.py), so a *stable* sort by tile id alone
gives every tile its list in depth order, ties by Gaussian index, as gsplat's (tile << 32 | depth) sort does.
The keys are int16 when the image has at most 32,767 tiles (1920x1080 at 8 px has 32,400) and int32 above:
a radix sort's cost grows with the key width, and pairs outnumber Gaussians several times over.

The sort runs over the whole buffer, whose length is the renderer's pair capacity, not the frame's pair count
(which stays on the device): unused slots hold the sentinel key, the type's maximum, and sort last.

Inputs : keys [C] i16/i32 (tile ids or the sentinel), gaussian_ids [C] i32
Outputs: sorted keys [C], Gaussian ids in key order [C] i32
"""

from __future__ import annotations

import torch


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def sort_pairs(
    keys: torch.Tensor,  # [C] i16 or i32
    gaussian_ids: torch.Tensor,  # [C] i32
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable sort by key. `out` = (sorted keys, permutation i64, sorted ids) buffers, each at least C long."""
    C = keys.shape[0]
    assert keys.dtype in (torch.int16, torch.int32) and gaussian_ids.shape == (C,), (keys.dtype, gaussian_ids.shape)
    if out is None:
        sorted_keys, perm = torch.sort(keys, stable=True)
        return sorted_keys, gaussian_ids[perm]
    k_buf, p_buf, id_buf = out
    sorted_keys, perm, sorted_ids = k_buf[:C], p_buf[:C], id_buf[:C]
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    torch.index_select(gaussian_ids, 0, perm, out=sorted_ids)
    return sorted_keys, sorted_ids
