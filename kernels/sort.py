"""Stage 4, sort: group the pairs by tile or macro-tile, each group in depth order (gsplat's (tile << 32 | depth)
order: depth ties by Gaussian index).

Tile pairs: `bin_pairs` emits them nearest Gaussian first (see kernels/order.py), so a *stable* sort by the key
alone gives every tile its list in depth order, ties by index. The keys are int16 up to 65,535 tiles (1920x1080 at
8 px has 32,400, 2560x1440 57,600) and int32 above: a radix sort's cost grows with the key width (two passes
against four). Counted frames of up to twice as many tiles (3840x2160: 129,600) bin their two halves into two
runs of pair slots (kernels/bin.py `halves`), each keyed by int16 ids within its half, and sort the two apart.

Macro-tile pairs: binned in index order, their int32 keys hold the macro-tile above the Gaussian's rounded depth
(kernels/bin.py), so one radix sort of the keys (four 8-bit passes) groups the pairs by macro-tile and orders each
macro-tile's pairs by rounded depth, and no sort of the Gaussians comes before it. Pairs whose keys are equal (two
Gaussians of one macro-tile whose depths round alike: at 1080p a relative 2^-16 apart) are then put in exact
(depth, index) order by `_settle_kernel`, which also gathers the entries in the sorted order (the gather the sort
needs anyway): each pair counts the pairs of its run of equal keys that come before it in exact (depth bits,
index) order, and goes that far from the run's start. A run of k pairs costs each of its pairs k loads, so the
cost grows with the runs' lengths squared: almost every run of a macro-tile frame is one pair, but tile keys leave
too few bits for the depth (16 at 1080p) and a composite's overview made runs of hundreds, 117 ms a frame
(BENCHMARKS.md, section 40), which is why tile pairs keep the depth sort.

The sort runs over the whole buffer, whose length is the renderer's pair capacity, not the frame's pair count
(which stays on the device): unused slots hold the sentinel key, the type's maximum, and sort last (their entries
are copied in the sorted order, never settled: they may be stale).

Inputs : keys [C] i16/i32 (tile ids; or i32 macro-tile ids above rounded depths; or the sentinel), values [C] (i32
         Gaussian ids, or i64 entries: Gaussian id and tile mask), depths [N] f32 (macro-tile pairs)
Outputs: sorted keys [C], values in key order [C], runs of equal macro-tile keys in exact depth order
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch
from .buffers import MACRO_KEY_DTYPE, sentinel_key

# sorted pairs a `_settle_kernel` program takes, with SETTLE_WARPS warps: two a thread. At 1024 on 4 warps (8 a
# thread) its loops' live values took 168 registers (ptxas -v for sm_90a): three programs a multiprocessor for a
# kernel that waits on gathers; at two a thread, 48
SETTLE_BLOCK = 512
SETTLE_WARPS = 8


@triton.jit
def _exact(entries_ptr, perm_ptr, depths_ptr, j, m):
    """The exact order key of sorted pair j (where m): its Gaussian's depth bits above its index, as one int64 (a
    visible depth is positive, so its bits order as the float does)."""
    g = tl.load(entries_ptr + tl.load(perm_ptr + j, mask=m, other=0), mask=m, other=0) & 0xFFFFFFFF
    d = tl.load(depths_ptr + g, mask=m, other=0.0).to(tl.int32, bitcast=True).to(tl.int64)
    return (d << 32) | g


@triton.jit(do_not_specialize=["C", "sentinel"])
def _settle_kernel(
    keys_ptr,  # [C] i32, sorted
    perm_ptr,  # [C] i64: the sort's permutation
    entries_ptr,  # [C] i64, as binned
    depths_ptr,  # [N] f32
    out_ptr,  # [C] i64 out: the entries in sorted order, each run of equal keys in exact order
    C,
    sentinel,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < C
    key = tl.load(keys_ptr + i, mask=m, other=0)
    entry = tl.load(entries_ptr + tl.load(perm_ptr + i, mask=m, other=0), mask=m, other=0)
    prev = tl.load(keys_ptr + i - 1, mask=m & (i > 0), other=-1)
    nxt = tl.load(keys_ptr + i + 1, mask=i + 1 < C, other=-1)
    tied = m & (key != sentinel) & ((prev == key) | (nxt == key))
    place = i
    if tl.max(tied.to(tl.int32), axis=0) > 0:  # a block with no run (most of them) only gathers
        own = _exact(entries_ptr, perm_ptr, depths_ptr, i, tied)
        before = tl.zeros([BLOCK], dtype=tl.int64)  # the run's pairs before this one in sorted order
        less = tl.zeros([BLOCK], dtype=tl.int64)  # the run's pairs before this one in exact order
        back = tied & (prev == key)
        j = i - 1
        while tl.max(back.to(tl.int32), axis=0) > 0:
            less += (back & (_exact(entries_ptr, perm_ptr, depths_ptr, j, back) < own)).to(tl.int64)
            before += back.to(tl.int64)
            j -= 1
            back = back & (j >= 0) & (tl.load(keys_ptr + j, mask=back & (j >= 0), other=-1) == key)
        ahead = tied & (nxt == key)
        j = i + 1
        while tl.max(ahead.to(tl.int32), axis=0) > 0:
            less += (ahead & (_exact(entries_ptr, perm_ptr, depths_ptr, j, ahead) < own)).to(tl.int64)
            j += 1
            ahead = ahead & (j < C) & (tl.load(keys_ptr + j, mask=ahead & (j < C), other=-1) == key)
        place = i - before + less
    tl.store(out_ptr + place, entry, mask=m)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def sort_pairs(
    keys: torch.Tensor,  # [C] i16 or i32
    entries: torch.Tensor,  # [C] i32 ids or i64 entries
    *,
    depths: torch.Tensor | None = None,  # [N] f32: macro-tile pairs, whose keys hold the rounded depths
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    gather: bool = True,
    halves: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable by key, or (`depths`: macro-tile pairs keyed by depth) by key with ties settled in exact order.
    `out` = (sorted keys, permutation i64, sorted entries) buffers, each at least C long (the third may be None
    with gather=False).
    Returns (sorted keys, entries in that order); with gather=False (tile pairs) (sorted keys, the permutation
    [C] i64) and no gather: the rasterizer reads the ids through the permutation (kernels/rasterize.py `perm`).
    `halves` = top (tile pairs binned in two halves, kernels/bin.py): pairs [0, top) and [top, C) sorted apart,
    each its own permutation (the bottom's counts from top: its entry i is entries[top + perm[i]])."""
    C = keys.shape[0]
    assert keys.dtype in (torch.int16, torch.int32) and entries.shape == (C,), (keys.dtype, entries.shape)
    assert entries.dtype in (torch.int32, torch.int64), entries.dtype
    assert gather or depths is None, "macro-tile pairs are gathered as their ties are settled"
    if halves is not None:
        assert not gather and 0 <= halves <= C, (gather, halves, C)
        if out is None:
            out = (torch.empty_like(keys), torch.empty(C, dtype=torch.int64, device=keys.device), None)
        sorted_keys, perm = out[0][:C], out[1][:C]
        for a, b in ((0, halves), (halves, C)):
            torch.sort(keys[a:b], stable=True, out=(sorted_keys[a:b], perm[a:b]))
        return sorted_keys, perm
    if depths is None and out is None:
        sorted_keys, perm = torch.sort(keys, stable=True)
        return sorted_keys, entries[perm] if gather else perm
    if out is None:
        out = (torch.empty_like(keys), torch.empty(C, dtype=torch.int64, device=keys.device), torch.empty_like(entries))
    k_buf, p_buf, e_buf = out
    sorted_keys, perm = k_buf[:C], p_buf[:C]
    torch.sort(keys, stable=True, out=(sorted_keys, perm))
    if not gather:
        return sorted_keys, perm
    sorted_entries = e_buf[:C]
    if depths is None:
        torch.index_select(entries, 0, perm, out=sorted_entries)
    elif C > 0:
        assert keys.dtype == MACRO_KEY_DTYPE and entries.dtype == torch.int64 and depths.dtype == torch.float32
        launch(_settle_kernel, (cdiv(C, SETTLE_BLOCK),), sorted_keys, perm, entries, depths, sorted_entries,
               C, sentinel_key(keys.dtype), BLOCK=SETTLE_BLOCK, num_warps=SETTLE_WARPS)  # fmt: skip
    return sorted_keys, sorted_entries
