"""Stage 5, tile ranges: [start, end) of each tile's run in the sorted pair list.

A pair i starts its tile's run if i == 0 or the previous key differs, and ends it if i == C-1 or the next key
differs. Tiles with no pairs keep [0, 0). Sentinel keys (>= n_tiles: the unused tail of the pair buffer and
slots a walk did not reach) belong to no tile.

Inputs : sorted keys [C] i16/i32 (tile ids)
Outputs: ranges [n_tiles, 2] i32
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["C", "n_tiles"])
def _tile_ranges_kernel(
    keys_ptr,  # [C] i16/i32, sorted
    ranges_ptr,  # [n_tiles, 2] i32 out, zero-filled by the launcher
    C,
    n_tiles,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < C
    tile = tl.load(keys_ptr + offs, mask=m, other=0).to(tl.int32)
    prev = tl.load(keys_ptr + offs - 1, mask=m & (offs > 0), other=0).to(tl.int32)
    prev = tl.where(offs > 0, prev, -1)
    nxt = tl.load(keys_ptr + offs + 1, mask=m & (offs + 1 < C), other=0).to(tl.int32)
    nxt = tl.where(offs + 1 < C, nxt, -1)
    real = m & (tile < n_tiles)
    tl.store(ranges_ptr + tile * 2 + 0, offs.to(tl.int32), mask=real & (tile != prev))
    tl.store(ranges_ptr + tile * 2 + 1, (offs + 1).to(tl.int32), mask=real & (tile != nxt))


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def tile_ranges(
    sorted_keys: torch.Tensor,  # [C] i16/i32
    n_tiles: int,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """[n_tiles, 2] int32 ranges into the sorted pair list."""
    C = sorted_keys.shape[0]
    assert sorted_keys.dtype in (torch.int16, torch.int32), sorted_keys.dtype
    if out is None:
        out = torch.empty(n_tiles, 2, dtype=torch.int32, device=sorted_keys.device)
    assert out.shape == (n_tiles, 2)
    out.zero_()
    if C > 0:
        block = 1024
        _tile_ranges_kernel[(triton.cdiv(C, block),)](sorted_keys, out, C, n_tiles, BLOCK=block)
    return out
