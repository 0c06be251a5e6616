"""Stage 2, order: the visible Gaussians nearest first, and where each one's pairs start.

One stable sort of the N depths (32-bit float keys; culled Gaussians carry +inf from `project_gaussians`, so
they come last), then each Gaussian's pair count in that order (its macro-tiles, or its tiles where the frame bins
per tile: kernels/bin.py) and their inclusive prefix sum: where its pairs end, kept in blocks of 1,024 Gaussians
(`buffers.BlockOffsets`: the sums within each block, and the blocks' ends, which binning adds). Stable means
equal depths keep the Gaussians' index order, which is how gsplat's (tile << 32 | depth) radix sort breaks
ties: so the pair lists `bin_pairs` emits in this order and `sort_pairs` groups by tile end up in gsplat's
order, while the only wide sort is this one over Gaussians, not the one over pairs (several times as many).

On the capacity route, sorting only the visible Gaussians (compacted first) measured slower on the H200, even on
a fly-over that sees half of a 24M-Gaussian scene: the compaction's scan and scatter cost more than the shorter
sort saved (BENCHMARKS.md, section 8).

torch.sort, torch.cumsum and torch.searchsorted are the implementation (CUB radix sort and scan on the GPU);
every launch takes its length from the tensors, so the stage needs no host sync and can be captured in a CUDA
graph. The visible, tile-pair and macro-pair counts stay on the device, in `totals`, for the frame's one sync to
read: the pairs size the pair buffers, the tile pairs the tiles' lists (kernels/tile_lists.py).

Frames binned per macro-tile sort no Gaussians: their pair keys hold the depth (kernels/bin.py), and their stage
is the counts and `index_offsets`, the prefix sum of the pair counts in index order.

Counted frames (renderer/frame.py `CountedFrame`) split the stage around the host's one wait. Before it,
`count_visible` reduces the counts (which do not depend on the order) and gathers the visible Gaussians; the host
reads the counts, and the stages after it run on exactly them; after it, `visible_order` sorts only the visible
Gaussians (or, for views that see most of the scene, all of them). On large scenes seen in part (a fly-over)
the capacity route sorts every culled Gaussian and bins over all of them, which costs more than the wait
(BENCHMARKS.md, section 10).

Inputs : depths [N] f32 (+inf = culled), tiles_touched [N] i32, pair_counts [N] i32 (macros_touched or tiles_touched)
Outputs: order [N] i64 (Gaussian indices, nearest first), offsets (the inclusive prefix sum of pair_counts[order]
         in blocks: [N] i32 within each block, and the blocks' ends i64), totals [3] i64 (visible Gaussians, tile
         pairs, pairs) (counted: order [M] i64 and offsets over M, M = V, or N with the culled last; per macro-tile:
         offsets [M] i64 whole)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import buffers
from ._launch import cdiv, launch
from .buffers import BlockOffsets


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def depth_order(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    pair_counts: torch.Tensor,  # [N] i32: each Gaussian's pairs (macros_touched, or tiles_touched: kernels/bin.py)
    *,
    out: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, BlockOffsets, torch.Tensor]:
    """(order, offsets, totals); `out` from `buffers.order_outputs` (each buffer at least N long; the offsets in
    blocks, `buffers.BlockOffsets`, their local sums i32: a frame of more pairs than that holds is refused,
    memory.MAX_PAIRS)."""
    N = depths.shape[0]
    assert depths.dtype == torch.float32 and tiles_touched.shape == (N,) and tiles_touched.dtype == torch.int32
    assert pair_counts.shape == (N,) and pair_counts.dtype == torch.int32
    sorted_depths, order, ends, local, totals, inf = out
    block = buffers.SCAN_BLOCK
    blocks = cdiv(N, block)
    sorted_depths, order, local, ends = sorted_depths[:N], order[:N], local[:N], ends[:blocks]
    assert local.dtype == torch.int32 and ends.shape == (blocks,), (local.dtype, ends.shape)
    offsets = BlockOffsets(local, ends, block)
    if N == 0:
        totals.zero_()
        return order, offsets, totals
    torch.sort(depths, stable=True, out=(sorted_depths, order))
    # the counts in depth order, summed a block at a time, then the blocks' ends: a kernel writing the counts in
    # int64 and a torch scan of them all took longer (BENCHMARKS.md, section 51)
    launch(_ordered_offsets_kernel, (blocks,), order, pair_counts, pair_counts, order, local, ends, N,
           INDEXED=False, HALVES=False, BLOCK=block, num_warps=SCAN_WARPS)  # fmt: skip
    ends.cumsum_(0)
    torch.searchsorted(sorted_depths, inf, out=totals[0:1])  # the visible ones: every finite depth
    totals[2:3].copy_(ends[-1:])
    if pair_counts is tiles_touched:  # pairs per tile: the tile pairs are the pairs, no second reduction
        totals[1:2].copy_(ends[-1:])
    else:  # a memset and one reduction kernel: torch.sum took 13 us on a 114k-Gaussian close-up (BENCHMARKS.md, 34)
        totals[1:2].zero_()
        launch(_sum_kernel, (cdiv(N, SUM_BLOCK),), tiles_touched, totals[1:2], N, BLOCK=SUM_BLOCK, num_warps=8)
    return order, offsets, totals


# Gaussians a `_sum_kernel` program adds up (one atomic each: 28 programs for a 114k-Gaussian scene)
SUM_BLOCK = 4096


@triton.jit(do_not_specialize=["N"])
def _sum_kernel(
    values_ptr,  # [N] i32
    total_ptr,  # [1] i64, zeroed: the sum out
    N,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(values_ptr + i, mask=i < N, other=0).to(tl.int64)))


# ------------------------------------------------------------------------------------- counted frames

# Gaussians a counting (and compacting) program reads: 24M Gaussians make about 5,900 programs.
COUNT_BLOCK = 4096
# the programs' counts a finishing program reads at a time, summing the programs' before its own
COUNT_SCAN = 1024


def count_blocks(n: int) -> int:
    """The length of `count_visible`'s partials for n Gaussians: three entries per counting program."""
    return 3 * cdiv(n, COUNT_BLOCK)


@triton.jit(do_not_specialize=["N"])
def _count_kernel(
    tiles_touched_ptr,  # [N] i32: 0 = culled
    pair_counts_ptr,  # [N] i32 (read only when it is not tiles_touched, and only where tiles_touched is not 0)
    partials_ptr,  # [3, programs] i64 out: each program's (visible, tile pairs, pairs)
    N,
    SAME: tl.constexpr,  # pair_counts is tiles_touched
    HALVES: tl.constexpr,  # pair_counts are each half's tiles (top | bottom << 16): the pairs counted are the top's
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tiles = tl.load(tiles_touched_ptr + i, mask=i < N, other=0)
    # visible: a tile reached (the depth is finite exactly there); the other counts are read only there, since a
    # Gaussian a pre-cull rejected has only its tile count written (kernels/project.py `only_tile_counts`)
    seen = tiles > 0
    visible = tl.sum(seen.to(tl.int64))
    if HALVES:  # the halves' counts hold the tiles: one array read, not two
        halves = tl.load(pair_counts_ptr + i, mask=seen, other=0)
        pairs = tl.sum((halves & 0xFFFF).to(tl.int64))
        tiles = pairs + tl.sum((halves >> 16).to(tl.int64))
    else:
        tiles = tl.sum(tiles.to(tl.int64))
        if SAME:
            pairs = tiles
        else:
            pairs = tl.sum(tl.load(pair_counts_ptr + i, mask=seen, other=0).to(tl.int64))
    tl.store(partials_ptr + pid, visible)
    tl.store(partials_ptr + programs + pid, tiles)
    tl.store(partials_ptr + 2 * programs + pid, pairs)


@triton.jit(do_not_specialize=["N", "P"])
def _finish_kernel(
    depths_ptr,  # [N] f32 (read where tiles_touched is not 0)
    tiles_touched_ptr,  # [N] i32: 0 = culled
    partials_ptr,  # [3, P] i64: the counting programs' (visible, tile pairs, pairs)
    totals_ptr,  # [3] i64 out: (visible, tile pairs, pairs)
    cdepths_ptr,  # [>= visible] f32 out (COMPACT): the visible depths, in index order
    cidx_ptr,  # [>= visible] i32 out (COMPACT): their indices
    N,
    P,  # the counting programs
    COMPACT: tl.constexpr,  # a program per counting program, each placing its visible Gaussians; else one program
    BLOCK: tl.constexpr,  # the counting programs' Gaussians
    SCAN: tl.constexpr,
):
    """The last program writes the totals; with COMPACT each program also gathers its block's visible Gaussians
    after those of the programs before it, whose counts it sums itself (a few loads of SCAN from the cache: no
    scan of its own, and no zeroed totals for atomics to add into). A block with none visible is skipped at once:
    its sum and its scan of BLOCK lanes were most of a sparse frame's pass (the 24M fly-over's empty frames spent
    0.107 ms here, BENCHMARKS.md section 60)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, SCAN)
    if pid == tl.num_programs(0) - 1:
        visible = tl.zeros([SCAN], dtype=tl.int64)
        tiles = tl.zeros([SCAN], dtype=tl.int64)
        pairs = tl.zeros([SCAN], dtype=tl.int64)
        for s in range(0, P, SCAN):
            m = s + offs < P
            visible += tl.load(partials_ptr + s + offs, mask=m, other=0)
            tiles += tl.load(partials_ptr + P + s + offs, mask=m, other=0)
            pairs += tl.load(partials_ptr + 2 * P + s + offs, mask=m, other=0)
        tl.store(totals_ptr + 0, tl.sum(visible))
        tl.store(totals_ptr + 1, tl.sum(tiles))
        tl.store(totals_ptr + 2, tl.sum(pairs))
    if COMPACT:  # noqa: SIM102 - a constexpr, then a runtime value: Triton's branches, kept apart
        if tl.load(partials_ptr + pid) > 0:  # this block's visible Gaussians
            acc = tl.zeros([SCAN], dtype=tl.int64)
            for s in range(0, pid, SCAN):  # the visible Gaussians of the programs before this one
                acc += tl.load(partials_ptr + s + offs, mask=s + offs < pid, other=0)
            before = tl.sum(acc)
            i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            visible = tl.load(tiles_touched_ptr + i, mask=i < N, other=0) > 0
            depth = tl.load(depths_ptr + i, mask=visible, other=float("inf"))
            rank = tl.cumsum(visible.to(tl.int32), 0)  # inclusive, within the program
            slot = before + rank.to(tl.int64) - 1
            tl.store(cdepths_ptr + slot, depth, mask=visible)
            tl.store(cidx_ptr + slot, i.to(tl.int32), mask=visible)


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def count_visible(
    depths: torch.Tensor,  # [N] f32
    tiles_touched: torch.Tensor,  # [N] i32
    pair_counts: torch.Tensor,  # [N] i32: each Gaussian's pairs (macros_touched, or tiles_touched)
    *,
    compact: bool,
    out: tuple[torch.Tensor, ...],
    halves: bool = False,
) -> torch.Tensor:
    """A counted frame's head, before its host waits: the counts, and (`compact`) the visible Gaussians gathered.
    `halves`: pair_counts hold each half's tiles (kernels/project.py `halves`), and the pairs counted are the top
    half's (the frame's pairs are its tile pairs).

    out = (totals [3] i64, partials [>= count_blocks(N)] i64 scratch, cdepths [>= N] f32, cidx [>= N] i32). Writes
    totals = (visible Gaussians, tile pairs, pairs), which the host reads (the counts do not depend on the order: V
    counts the Gaussians that reach a tile, which are those of finite depth, and the pairs are every Gaussian's
    count summed; culled ones touch none), and, with `compact`, the V visible depths and their indices in index
    order into cdepths[:V] and cidx[:V]. Nothing here needs V on the host, so the compaction is queued before the
    host's wait and runs during it. Returns totals.

    Only the tile counts are read for every Gaussian; a depth or a pair count only where its tile count is not 0.
    So a culled Gaussian's other rows may hold anything, as they do after a pre-cull that wrote its tile count
    alone (kernels/project.py `only_tile_counts`), and the pass over a scene seen in part reads 4 bytes of most
    Gaussians, not 8-12.

    Two launches and nothing else: a pass over the three arrays counting each block's (in torch a compare, three
    widening sums and a stack: eight kernels, BENCHMARKS.md section 25), then one that writes the totals and, with
    `compact`, gathers each block's visible Gaussians after the blocks' before it. The counts' atomics into zeroed
    totals and torch's scan of the blocks' counts between the passes took the host 8.5 and 17 us a frame
    (section 53)."""
    N = depths.shape[0]
    assert depths.dtype == torch.float32 and tiles_touched.shape == (N,) and pair_counts.shape == (N,)
    totals, partials, cdepths, cidx = out
    assert totals.dtype == torch.int64 and partials.dtype == torch.int64 and partials.shape[0] >= count_blocks(N)
    if N == 0:
        totals.zero_()
        return totals
    programs = cdiv(N, COUNT_BLOCK)
    launch(_count_kernel, (programs,), tiles_touched, pair_counts, partials, N,
           SAME=pair_counts is tiles_touched, HALVES=halves, BLOCK=COUNT_BLOCK, num_warps=8)  # fmt: skip
    if compact:
        assert cdepths.shape[0] >= N and cidx.shape[0] >= N and cidx.dtype == torch.int32
    else:
        cdepths, cidx = depths, tiles_touched  # not written
    launch(_finish_kernel, (programs if compact else 1,), depths, tiles_touched, partials, totals, cdepths, cidx,
           N, programs, COMPACT=compact, BLOCK=COUNT_BLOCK, SCAN=COUNT_SCAN, num_warps=8)  # fmt: skip
    return totals


SCAN_WARPS = 8


@triton.jit(do_not_specialize=["M"])
def _ordered_offsets_kernel(
    perm_ptr,  # [M] i64: the sort's permutation
    cidx_ptr,  # [M] i32: the gathered indices (INDEXED)
    pair_counts_ptr,  # [N] i32
    order_ptr,  # [M] i64 out: Gaussian indices, nearest first (INDEXED; else the permutation is the order)
    local_ptr,  # [M] out: their pair counts' inclusive prefix sum within the block, i32 (HALVES: i64, packed)
    ends_ptr,  # [programs] i64 out: each block's pairs (HALVES: packed), summed over the blocks after it
    M,
    INDEXED: tl.constexpr,  # the sort ran over the gathered set: its indices are cidx[perm]
    HALVES: tl.constexpr,  # pair_counts are each half's, top | bottom << 16: summed as top | bottom << 32
    BLOCK: tl.constexpr,
):
    """A block of the order's Gaussians: their pair counts, read through the order, summed within the block
    (`buffers.BlockOffsets`). A block of 1,024 Gaussians of at most 129,600 tiles each sums under 2^31; halves: each
    half's field too, and a frame's (memory.MAX_PAIRS), so the packed fields never carry into each other."""
    pid = tl.program_id(0)
    j = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = j < M
    g = tl.load(perm_ptr + j, mask=m, other=0)
    if INDEXED:
        g = tl.load(cidx_ptr + g, mask=m, other=0).to(tl.int64)
        tl.store(order_ptr + j, g, mask=m)
    count = tl.load(pair_counts_ptr + g, mask=m, other=0)
    if HALVES:  # so that one sum gives both halves' slots (kernels/bin.py `halves`)
        count = (count & 0xFFFF).to(tl.int64) | ((count >> 16).to(tl.int64) << 32)
    tl.store(local_ptr + j, tl.cumsum(count, 0), mask=m)
    tl.store(ends_ptr + pid, tl.sum(count).to(tl.int64))


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def visible_order(
    depths: torch.Tensor,  # [N] f32
    pair_counts: torch.Tensor,  # [N] i32
    *,
    compact: bool,
    out: tuple[torch.Tensor, ...],
    halves: bool = False,
) -> tuple[torch.Tensor, BlockOffsets]:
    """A counted frame's order after its wait: (order [M] i64, offsets), M = V where `compact` (the gathered
    visible Gaussians sorted), else N (every depth sorted, the culled (+inf) last, owning no pairs; the order is
    the sort's permutation). The offsets in blocks (`buffers.BlockOffsets`), their local sums i32 (a frame's pairs
    are under 2^31: memory.MAX_PAIRS); `halves`: pair_counts hold each half's tiles (kernels/project.py `halves`),
    and the offsets, i64, both halves' prefix sums, the top's in the low 32 bits (kernels/bin.py `halves`).

    out = (cdepths [>= V] f32, cidx [>= V] i32 from `count_visible`, then sorted_depths [M] f32, perm [M] i64,
    order [M] i64 (compact; else empty), block ends [>= buffers.scan_blocks(M)] i64 and the local sums [M]). The
    first V entries are the visible Gaussians nearest first, equal depths in index order (the gathered set is in
    index order and the sort is stable), their offsets the inclusive prefix sum of their pair counts. A sort, one
    kernel (the order through the gathered indices, the pair counts in that order summed a block at a time) and a
    scan of the blocks' sums: a kernel writing the counts in int64 and a torch scan of them took 53 + 37 us of the
    6M overview's frame, the two-phase form about half that (BENCHMARKS.md, section 51); in torch, a compare,
    `nonzero_static`, three gathers and a widening copy of the counts took the host longer while the GPU waited
    for it (section 30)."""
    N = depths.shape[0]
    cdepths, cidx, sorted_depths, perm, order, ends, local = out
    M, block = sorted_depths.shape[0], buffers.SCAN_BLOCK
    blocks = cdiv(M, block)
    assert perm.shape == local.shape == (M,) and (order.shape == (M,) or not compact)
    assert M <= N and (compact or M == N), (M, N)
    assert local.dtype == (torch.int64 if halves else torch.int32), local.dtype
    assert (not compact or order.dtype == torch.int64) and ends.shape[0] >= blocks, ends.shape
    order, ends = order if compact else perm, ends[:blocks]
    offsets = BlockOffsets(local, ends, block)
    if M == 0:
        return order, offsets
    torch.sort(cdepths[:M] if compact else depths, stable=True, out=(sorted_depths, perm))
    launch(_ordered_offsets_kernel, (blocks,), perm, cidx, pair_counts, order, local, ends, M, INDEXED=compact,
           HALVES=halves, BLOCK=block, num_warps=SCAN_WARPS)  # fmt: skip
    ends.cumsum_(0)
    return order, offsets


# ------------------------------------------------------------------------------------- frames binned per macro-tile


# Its torch twin in kernels/reference.py has the same signature on purpose: change both together.
def index_offsets(
    pair_counts: torch.Tensor,  # [N] i32
    order: torch.Tensor | None,  # [M] i32: the Gaussians binning visits (the visible ones gathered), or None: all
    *,
    out: torch.Tensor,  # [>= M] i64
) -> torch.Tensor:
    """[M] i64 offsets for a frame binned per macro-tile, which bins in index order: the inclusive prefix sum of the
    pair counts of the Gaussians `order` lists (`count_visible`'s gathered indices), or of all N. Its pairs' keys
    hold their depths, so the one pair sort orders them (kernels/sort.py) and nothing sorts the Gaussians."""
    M = pair_counts.shape[0] if order is None else order.shape[0]
    offsets = out[:M]
    if M == 0:
        return offsets
    counts = pair_counts if order is None else torch.index_select(pair_counts, 0, order)
    torch.cumsum(counts, 0, dtype=torch.int64, out=offsets)
    return offsets
