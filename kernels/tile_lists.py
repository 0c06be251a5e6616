"""Stage 5, tile lists: each tile's list of Gaussians, and its [start, end) in the list buffer.

A frame binned per tile (kernels/bin.py) has its lists already: the pairs' ids in the sort's order, which the
rasterizer reads through the sort's permutation (kernels/rasterize.py `perm`); `tile_ranges` finds each tile's
run in the sorted keys. A frame binned per macro-tile has the macro-tile lists that `sort_pairs` left
grouped by macro-tile in depth order (a key's macro-tile is its bits above `depth_bits`), and `tile_lists` splits
them:

A sorted pair i carries a Gaussian id and the mask of the macro-tile's 32 tiles it reaches (kernels/bin.py). Its
id goes to the list of every tile whose bit b is set, at
    position(i, b) = O_b + R_b(i),   R_b(i) = the pairs before i (in sorted order) with bit b set,
                                     O_b = the pairs with a bit below b set, summed over bits:
so the list buffer holds, for bit 0, every macro-tile's tile-0 list in macro-tile order, then those of bit 1,
and so on. Within one bit the pairs keep their sorted order, so each tile's list is contiguous and in depth
order: [O_b + R_b(first pair of its macro-tile), O_b + R_b(one past its last pair)). No second sort.

R_b is a prefix count over the sorted pairs, taken in three launches: `_chunk_counts_kernel` counts each bit over
chunks of LIST_CHUNK pairs, bit-major ([32, chunks]); `_scan_kernel` turns each bit's row into its running sum,
one program a row (torch's cumsum along the rows took 15-35 us on the close-ups, this 9-18: BENCHMARKS.md, section
35); that gives each chunk's start, from which `_scatter_kernel` counts within its chunk ([LIST_CHUNK, 32] bits, a
cumsum down the chunk), writes the ids, and, at the first and last pair of each macro-tile, its tiles' ranges.
The counts hold a chunk's bits as [32, LIST_CHUNK], the pairs along a warp's lanes (a sum within the warp); the
scatter keeps [LIST_CHUNK, 32]: laid out the other way it measured 1.7x slower (section 35). Sentinel keys (the
unused tail of the pair buffer and slots a walk did not reach) belong to no macro-tile, and a scatter program whose
chunk starts among them returns at once; positions at or past the list buffer's length are not written, and
ranges are cut to L (the renderer bins again into longer buffers: `depth_order`'s totals say how long).

Inputs : sorted keys [C] (tile ids i16/i32; or macro-tile ids above rounded depths, i32), sorted entries [C] i64
         (kernels/buffers.py `pack_entries`; macro-tile pairs)
Outputs: ids [L] i32 (the tiles' lists; none for tile pairs: their ids as binned, read through the sort's
         permutation), ranges [n_tiles, 2] i32 (tiles of no pair:
         empty)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import MACRO_COLS, MACRO_ROWS
from ._launch import cdiv, interpreting, launch
from .buffers import (
    LIST_CHUNK,
    LIST_WARPS,
    MACRO_KEY_DTYPE,
    depth_bits,
    key_offset,
    list_scratch_shape,
    macro_grid,
)

BITS = MACRO_COLS * MACRO_ROWS  # 32
# chunk counts a `_scan_kernel` step takes, with SCAN_WARPS (a 1080p close-up's 330k pair slots make 10,000 chunks:
# 5 steps; of 512, 1024 and 2048 at 4 and 8 warps, this was the fastest on every frame measured: section 35)
SCAN_BLOCK = 2048
SCAN_WARPS = 8


@triton.jit(do_not_specialize=["C", "n_macros", "n_chunks", "shift"])
def _chunk_counts_kernel(
    keys_ptr,  # [C] i32, sorted
    entries_ptr,  # [C] i64
    counts_ptr,  # [32, chunks] i32 out
    C,
    n_macros,
    n_chunks,
    shift,  # the keys' depth bits: a key's macro-tile is key >> shift
    CHUNK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * CHUNK + tl.arange(0, CHUNK)
    key = tl.load(keys_ptr + offs, mask=offs < C, other=-1) >> shift
    real = (offs < C) & (key >= 0) & (key < n_macros)
    mask = (tl.load(entries_ptr + offs, mask=real, other=0) >> 32).to(tl.int32)
    bit = tl.arange(0, MACRO_COLS * MACRO_ROWS)
    bits = (mask[None, :] >> bit[:, None]) & 1  # [32, CHUNK]: a warp's lanes along the pairs
    tl.store(counts_ptr + bit * n_chunks + pid, tl.sum(bits, axis=1))


@triton.jit(do_not_specialize=["n_chunks"])
def _scan_kernel(
    counts_ptr,  # [32, chunks] i32, in place: each row's inclusive prefix sum
    n_chunks,
    BLOCK: tl.constexpr,
):
    """One program a bit: its row of chunk counts, BLOCK at a time with the sum so far carried."""
    row = counts_ptr + tl.program_id(0).to(tl.int64) * n_chunks
    carry = tl.zeros((), dtype=tl.int32)
    for start in range(0, n_chunks, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n_chunks
        v = tl.load(row + offs, mask=m, other=0)
        tl.store(row + offs, carry + tl.cumsum(v, axis=0), mask=m)
        carry += tl.sum(v)


@triton.jit(do_not_specialize=["C", "n_macros", "n_chunks", "n_mx", "n_tx", "n_ty", "L", "shift"])
def _scatter_kernel(
    keys_ptr,  # [C] i32, sorted
    entries_ptr,  # [C] i64
    cum_ptr,  # [32, chunks] i32: inclusive cumsum over chunks of the per-chunk bit counts
    ids_ptr,  # [L] i32 out
    ranges_ptr,  # [n_tiles, 2] i32 out, zero-filled by the launcher
    C,
    n_macros,
    n_chunks,
    n_mx,
    n_tx,
    n_ty,
    L,
    shift,  # as in _chunk_counts_kernel
    CHUNK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    # the keys are sorted: a chunk that starts in the sentinel tail (a capacity frame's unused slots, a fifth of a
    # close-up's) has nothing to write
    if (tl.load(keys_ptr + pid * CHUNK) >> shift) >= n_macros:
        return
    offs = pid * CHUNK + tl.arange(0, CHUNK)
    m = offs < C
    key = tl.load(keys_ptr + offs, mask=m, other=-1) >> shift
    real = m & (key >= 0) & (key < n_macros)
    entry = tl.load(entries_ptr + offs, mask=real, other=0)
    mask = (entry >> 32).to(tl.int32)
    gid = (entry & 0xFFFFFFFF).to(tl.int32)
    bit = tl.arange(0, MACRO_COLS * MACRO_ROWS)[None, :]
    bits = (mask[:, None] >> bit) & 1  # [CHUNK, 32]
    # O_b: the list entries of the bits below b (the last chunk's inclusive cumsum holds every bit's total)
    total = tl.load(cum_ptr + bit * n_chunks + n_chunks - 1)  # [1, 32]
    before_bit = tl.cumsum(total, axis=1) - total
    # R_b at this chunk's first pair: the chunks before it
    inclusive = tl.cumsum(bits, axis=0)  # [CHUNK, 32]
    chunk_start = tl.load(cum_ptr + bit * n_chunks + pid) - tl.sum(bits, axis=0)[None, :]
    start = before_bit + chunk_start + inclusive - bits  # [CHUNK, 32] position(i, b), int32
    tl.store(ids_ptr + start, gid[:, None] + bit * 0, mask=(bits != 0) & (start < L))
    # a macro-tile's first pair opens its tiles' ranges, its last pair closes them
    prev = tl.load(keys_ptr + offs - 1, mask=m & (offs > 0), other=-1) >> shift
    nxt = tl.load(keys_ptr + offs + 1, mask=offs + 1 < C, other=-1) >> shift
    tx = (key % n_mx)[:, None] * MACRO_COLS + bit % MACRO_COLS
    ty = (key // n_mx)[:, None] * MACRO_ROWS + bit // MACRO_COLS
    tile = ty * n_tx + tx
    inside = real[:, None] & (tx < n_tx) & (ty < n_ty)
    # cut to the list buffer: a frame whose lists outgrew it is binned again after its sync, but its rasterizer,
    # which runs before, must read only the buffer (its image is discarded)
    tl.store(ranges_ptr + tile * 2 + 0, tl.minimum(start, L), mask=inside & (key != prev)[:, None])
    tl.store(ranges_ptr + tile * 2 + 1, tl.minimum(start + bits, L), mask=inside & (key != nxt)[:, None])


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def tile_lists(
    sorted_keys: torch.Tensor,  # [C] i32
    sorted_entries: torch.Tensor,  # [C] i64
    n_tx: int,
    n_ty: int,
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [L], ranges [n_tx * n_ty, 2]) from the sorted macro-tile pairs. `out` = (ids [L] i32, ranges
    [n_tiles, 2] i32, chunk scratch [at least the product of `list_scratch_shape(C)`] i32)."""
    C = sorted_keys.shape[0]
    ids, ranges, scratch = out
    assert sorted_keys.dtype == MACRO_KEY_DTYPE and sorted_entries.shape == (C,), sorted_keys.dtype
    assert sorted_entries.dtype == torch.int64 and ids.dtype == torch.int32 and ranges.shape == (n_tx * n_ty, 2)
    n_mx, n_my = macro_grid(n_tx, n_ty)
    shift = depth_bits(n_mx * n_my)
    # the interpreter's cost is per program, not per element: fewer, longer chunks (within the same scratch)
    chunk = LIST_CHUNK * (32 if interpreting() else 1)
    chunks, bits = cdiv(max(C, 1), chunk), MACRO_COLS * MACRO_ROWS
    assert scratch.numel() >= chunks * bits and scratch.numel() >= list_scratch_shape(C)[0] * bits
    counts = scratch.view(-1)[: bits * chunks].view(bits, chunks)
    ranges.zero_()
    if C == 0:
        return ids, ranges
    launch(_chunk_counts_kernel, (chunks,), sorted_keys, sorted_entries, counts, C, n_mx * n_my, chunks, shift,
           CHUNK=chunk, num_warps=LIST_WARPS)  # fmt: skip
    launch(_scan_kernel, (bits,), counts, chunks, BLOCK=SCAN_BLOCK, num_warps=SCAN_WARPS)
    launch(_scatter_kernel, (chunks,),
        sorted_keys, sorted_entries, counts, ids, ranges,
        C, n_mx * n_my, chunks, n_mx, n_tx, n_ty, ids.shape[0], shift, CHUNK=chunk, num_warps=LIST_WARPS,
    )  # fmt: skip
    return ids, ranges


@triton.jit(do_not_specialize=["C", "limit", "tile_base", "pos_base"])
def _tile_ranges_kernel(
    keys_ptr,  # [C] i16/i32, sorted
    ranges_ptr,  # [n_tiles, 2] i32 out, zero-filled by the launcher
    C,
    limit,  # the keys' tiles are below it (the sentinel's is not)
    tile_base,  # what a key's tile id is counted from (a half's first tile)
    pos_base,  # where the keys start in the pairs (a half's first pair)
    KEY_OFFSET: tl.constexpr,  # a key is its tile id (in its half) less this (`buffers.key_offset`)
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < C
    tile = tl.load(keys_ptr + offs, mask=m, other=0).to(tl.int32) + KEY_OFFSET
    prev = tl.load(keys_ptr + offs - 1, mask=m & (offs > 0), other=0).to(tl.int32) + KEY_OFFSET
    prev = tl.where(offs > 0, prev, -1)
    nxt = tl.load(keys_ptr + offs + 1, mask=m & (offs + 1 < C), other=0).to(tl.int32) + KEY_OFFSET
    nxt = tl.where(offs + 1 < C, nxt, -1)
    real = m & (tile < limit)
    at = tile_base + tile
    tl.store(ranges_ptr + at * 2 + 0, (pos_base + offs).to(tl.int32), mask=real & (tile != prev))
    tl.store(ranges_ptr + at * 2 + 1, (pos_base + offs + 1).to(tl.int32), mask=real & (tile != nxt))


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def tile_ranges(
    sorted_keys: torch.Tensor,  # [C] i16/i32
    n_tiles: int,
    *,
    out: torch.Tensor | None = None,
    halves: tuple[int, int] | None = None,
) -> torch.Tensor:
    """[n_tiles, 2] int32 ranges into the sorted tile pairs (a frame binned per tile: its lists are the ids as
    binned, read through the sort's permutation by the rasterizer). A pair starts its tile's run where the previous
    key differs and ends it where the next one does. `halves` = (top, split_tile): the keys are two sorted runs,
    [0, top) of the tiles below split_tile and [top, C) of the others, each keyed by its tile's id within its half
    (kernels/bin.py `halves`): a launch each (one launch telling the halves apart pair by pair took 58 us on the 4K
    overview of a 6M-Gaussian composite, where the whole image's int32 keys took 36: BENCHMARKS.md, section 50).

    The ids are not gathered here: this pass once wrote them in sorted order for the real pairs (section 46 of
    BENCHMARKS.md), and the gather's random reads cost more there than the rasterizer's reads through the
    permutation, of the entries it blends alone (section 48)."""
    C = sorted_keys.shape[0]
    assert sorted_keys.dtype in (torch.int16, torch.int32), sorted_keys.dtype
    if out is None:
        out = torch.empty(n_tiles, 2, dtype=torch.int32, device=sorted_keys.device)
    assert out.shape == (n_tiles, 2)
    out.zero_()
    top, split_tile = (C, n_tiles) if halves is None else halves
    block = 1024
    # (keys, their tiles' limit within the half, the half's first tile, its first pair)
    for keys, limit, tile_base, pos_base in ((sorted_keys[:top], split_tile, 0, 0),
                                             (sorted_keys[top:], n_tiles - split_tile, split_tile, top)):  # fmt: skip
        if keys.shape[0] > 0:
            launch(_tile_ranges_kernel, (cdiv(keys.shape[0], block),), keys, out, keys.shape[0], limit,
                   tile_base, pos_base, KEY_OFFSET=key_offset(keys.dtype), BLOCK=block)  # fmt: skip
    return out
