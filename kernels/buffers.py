"""The stages' buffers and pair keys, one definition for the Triton launchers and their torch twins.

Like kernels/constants.py, this is what a kernel and its twin must agree on, not what either computes: the
shapes and dtypes of stage 1's and stage 2's outputs (the renderer allocates them once and reuses them), the
dtype of stage 1's SH input (the renderer prepares it once), the width of the pair keys and the sentinel that
marks an unused pair slot. A twin with its own copy could drift from its kernel unnoticed, since the tests hand
each implementation the buffers it asks for. torch only: no Triton import, so kernels/reference.py can read it
without reaching the Triton path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .constants import (
    DEPTH_KEY_FLOOR_BITS,
    DEPTH_KEY_SPAN,
    INT16_TILES,
    KEY16_OFFSET,
    LOG2E,
    MACRO_COLS,
    MACRO_ROWS,
)


def macro_grid(n_tx: int, n_ty: int) -> tuple[int, int]:
    """(columns, rows) of macro-tiles over an image of n_tx x n_ty tiles (kernels/constants.py MACRO_COLS)."""
    return (n_tx + MACRO_COLS - 1) // MACRO_COLS, (n_ty + MACRO_ROWS - 1) // MACRO_ROWS


def key_dtype(n_tiles: int) -> torch.dtype:
    """The narrowest tile pair key type that holds every tile id and a sentinel above them (macro-tile pairs' keys
    are MACRO_KEY_DTYPE). `n_tiles` is what one sort's keys span: a half's tiles where the frame bins its halves
    apart (`key_halves`)."""
    return torch.int16 if n_tiles <= INT16_TILES else torch.int32


def key_offset(dtype: torch.dtype) -> int:
    """What a tile pair key of `dtype` holds less than its tile id (kernels/constants.py KEY16_OFFSET: int16 keys
    span the type's whole range)."""
    return KEY16_OFFSET if dtype == torch.int16 else 0


def tile_keys(tiles: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Tile ids (each below INT16_TILES where int16) as tile pair keys of `dtype`; sorted, the keys keep the ids'
    order."""
    return (tiles.long() - key_offset(dtype)).to(dtype)


def key_tiles(keys: torch.Tensor) -> torch.Tensor:
    """[C] i64: the tile ids tile pair keys hold (the sentinel's is INT16_TILES for int16 keys)."""
    return keys.long() + key_offset(keys.dtype)


def key_halves(n_tx: int, n_ty: int) -> int | None:
    """The tile row at which a counted frame binned per tile splits its pairs in two, or None where it need not
    or cannot: where the image has more tiles than int16 keys hold (INT16_TILES) but each half of its rows has no
    more (3840x2160 at 8 px: 129,600 tiles, two halves of 64,800). The pairs of the rows above it take the pair
    slots [0, top) and the others [top, P), each half keyed by its own tile ids (a tile's id less the half's first)
    and sorted apart: two int16 sorts cost about two thirds of one int32 sort of them all on the 4K overview of a
    6M-Gaussian composite (BENCHMARKS.md, section 50). Each Gaussian's count is then two, one a half
    (kernels/project.py `halves`), so its pairs' slots in both are prefix sums of one pass."""
    if n_tx * n_ty <= INT16_TILES:
        return None
    row = (n_ty + 1) // 2
    return row if row * n_tx <= INT16_TILES and (n_ty - row) * n_tx <= INT16_TILES else None


def sentinel_key(dtype: torch.dtype) -> int:
    """The key of an unused slot: the type's maximum, above every real key, so it sorts last."""
    return torch.iinfo(dtype).max


# Macro-tile pair keys are int32 (kernels/constants.py DEPTH_KEY_FLOOR_BITS): the macro-tile above its Gaussian's
# rounded depth. Tile pairs' keys are the tile ids alone (`key_dtype`): those frames sort their Gaussians by depth.
MACRO_KEY_DTYPE = torch.int32


def depth_bits(n_macros: int) -> int:
    """The low bits of a macro-tile pair's key that hold the rounded depth, for `n_macros` macro-tiles: what their
    ids leave of 31 bits. Every id is below 2^(31 - bits) - 1, so the sentinel's (all ones) is past every real one
    and every real key is below the sentinel (1920x1080 at 8 px: 1,020 macro-tiles leave 21 bits; 3840x2160, 12
    bits of ids and 19 of depth)."""
    return 31 - int(n_macros).bit_length()


def depth_shift(bits: int) -> int:
    """How far a depth's bits (less DEPTH_KEY_FLOOR_BITS) are shifted right to fit `bits` bits."""
    return max(DEPTH_KEY_SPAN - bits, 0)


def depth_keys(depths: torch.Tensor, bits: int) -> torch.Tensor:
    """[N] int32: the rounded depths a key holds in its low `bits` bits, monotone in the depth (the twin of
    kernels/_device.py `depth_key`)."""
    raw = depths.contiguous().view(torch.int32).long() - DEPTH_KEY_FLOOR_BITS
    return (raw.clamp(min=0) >> depth_shift(bits)).clamp(max=(1 << bits) - 1).to(torch.int32)


# ----------------------------------------------------------------------------------------------- SH input
# The SH coefficients `project_gaussians` reads, [N, K, 3], arrive as fp16 (the renderer's prepared copy,
# renderer/prepare.py `prepare_scene`; the scene itself stays float32); the kernel and its twin compute in
# float32. At SH degree 2 (K = 9) they were 108 of the 148 bytes stage 1 reads per visible Gaussian; fp16 halves
# them. Its rounding (relative 2^-11; absolute 2^-25 below 2^-14) moves a colour by at most
# sum_k |Y_k(d)| max(2^-11 |c_k|, 2^-25) (a DC term |c| < 4: under 3e-4), the order of the record's own fp16
# colour; the parity with gsplat is measured on the GPU (tests/gpu/test_gsplat_parity.py).
# A coefficient fp16 cannot hold (it would make it infinite) is clamped to +-SH_MAX when the copy is made.
SH_DTYPE = torch.float16
SH_MAX = torch.finfo(SH_DTYPE).max  # 65504


def sh_layout(n: int, k: int, device: torch.device | str) -> torch.Tensor:
    """An empty [n, k, 3] SH_DTYPE tensor laid out coefficient-major, strides (1, 3 n, n): element (i, k, c) at
    (3 k + c) n + i. `project_gaussians` loads one coefficient of a program's Gaussians per load; laid out [n, k,
    3], each load's 32 lanes read 32 rows 6 k bytes apart (14 cache lines a load at SH degree 2, not one)."""
    return torch.empty(k, 3, n, dtype=SH_DTYPE, device=device).permute(2, 0, 1)


# ----------------------------------------------------------------------------------------------- extents
def gaussian_extent(covars: torch.Tensor) -> torch.Tensor:
    """[N] f32: an upper bound on the largest eigenvalue of each covariance [N, 6] (xx, xy, xz, yy, yz, zz), the
    smaller of its trace and its largest Gershgorin row sum (both bound it for a symmetric positive semidefinite
    matrix), raised by 1e-4 for their float rounding. What the projection's frustum pre-cull bounds a Gaussian's
    screen footprint with (kernels/project.py); the renderer makes it once per scene (4 bytes a Gaussian)."""
    xx, xy, xz, yy, yz, zz = covars.unbind(1)
    axy, axz, ayz = xy.abs(), xz.abs(), yz.abs()
    rows = torch.maximum(torch.maximum(xx + axy + axz, axy + yy + ayz), axz + ayz + zz)
    return torch.minimum(rows, xx + yy + zz) * 1.0001


# ----------------------------------------------------------------------------------------------- blend records
# What `project_gaussians` writes for each visible Gaussian and `bin_pairs` and `rasterize_tiles` read: one
# 32-byte row (one memory sector, four 8-byte loads in the rasterizer) of float32
#     [0] mx, [1] my        the screen mean (pixels)
#     [2] A = a log2(e)/2, [3] B = b log2(e), [4] C = c log2(e)/2
#                           the conic of Q = a dx^2 + 2 b dx dy + c dy^2 in log2 units
#     [5] lo = log2(o)      the opacity, folded into the exponent: o exp(-Q/2) = 2^(lo - (A dx^2 + B dx dy + C dy^2))
#     [6:8] the colour as four fp16 (r, g, b, 0), clamped to the fp16 range
# so a pixel costs one exp2 (kernels/rasterize.py). The colour's fp16 rounding (relative 2^-11) keeps the frames
# at 92-120 dB against float32 colours on the bench's frames (BENCHMARKS.md, section 15).
RECORD_WIDTH = 8


def project_outputs(n: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """The outputs of `project_gaussians` for n Gaussians: records [n, RECORD_WIDTH] f32, depths [n] f32,
    tiles_touched [n] i32, macros_touched [n] i32, bin_t [n] f32."""
    f32 = dict(dtype=torch.float32, device=device)
    return (
        torch.empty(n, RECORD_WIDTH, **f32),
        torch.empty(n, **f32),
        torch.empty(n, dtype=torch.int32, device=device),
        torch.empty(n, dtype=torch.int32, device=device),
        torch.empty(n, **f32),
    )


# ----------------------------------------------------------------------------------------------- pairs
# A binned macro-tile pair is a key (the macro-tile id above the rounded depth, `depth_bits`) and an int64 entry:
# the Gaussian's index in the low 32 bits and the mask of the macro-tile's tiles it reaches in the high 32 (bit
# MACRO_COLS * row + column). One int64 word, so the sort moves both with one gather.


def pack_entries(gaussian_ids: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """[C] int64 entries of ids [C] (non-negative, < 2^31) and masks [C] (int64 holding 32 bits)."""
    return (masks.long() << 32) | gaussian_ids.long()


def unpack_entries(entries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [C] int64, masks [C] int64 in [0, 2^32)) of entries [C] int64."""
    return entries & 0xFFFFFFFF, (entries >> 32) & 0xFFFFFFFF


def pack_records(means2d: torch.Tensor, conics: torch.Tensor, opacities: torch.Tensor, colors: torch.Tensor,
                 out: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """[N, RECORD_WIDTH] records from means2d [N, 2], conics [N, 3] (a, b, c), opacities [N] and colors [N, 3],
    by the arithmetic `kernels._device.write_record` does."""
    n = means2d.shape[0]
    rec = torch.empty(n, RECORD_WIDTH, dtype=torch.float32, device=means2d.device) if out is None else out
    half = torch.tensor(0.5 * LOG2E, dtype=torch.float32)
    full = torch.tensor(LOG2E, dtype=torch.float32)
    rec[:, 0:2] = means2d
    rec[:, 2] = half * conics[:, 0]
    rec[:, 3] = full * conics[:, 1]
    rec[:, 4] = half * conics[:, 2]
    rec[:, 5] = torch.log2(opacities)
    halves = torch.zeros(n, 4, dtype=torch.float16, device=means2d.device)
    halves[:, :3] = colors.clamp(max=65504.0).to(torch.float16)
    rec[:, 6:8] = halves.view(torch.float32)
    return rec


def unpack_records(records: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(means2d [N, 2], conics [N, 3] (a, b, c), opacities [N], colors [N, 3] f32) of records [N, RECORD_WIDTH]:
    the inverse of `pack_records`, up to the rounding of its products and the colour's fp16."""
    rec = records.float()
    half, full = 0.5 * LOG2E, LOG2E
    conics = torch.stack([rec[:, 2] / half, rec[:, 3] / full, rec[:, 4] / half], 1)
    colors = rec[:, 6:8].contiguous().view(torch.float16)[:, :3].float()
    return rec[:, 0:2], conics, torch.exp2(rec[:, 5]), colors


def order_outputs(n: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Buffers for `depth_order`: (sorted depths [n] f32, order [n] i64, block ends [scan_blocks(n)] i64, offsets
    [n] i32, totals [3] i64, +inf [1] f32)."""
    return (torch.empty(n, dtype=torch.float32, device=device), torch.empty(n, dtype=torch.int64, device=device),
            torch.empty(scan_blocks(n), dtype=torch.int64, device=device),
            torch.empty(n, dtype=torch.int32, device=device), torch.empty(3, dtype=torch.int64, device=device),
            torch.full((1,), float("inf"), dtype=torch.float32, device=device))  # fmt: skip


# Gaussians whose pair offsets the order stage sums in one block (kernels/order.py `_ordered_offsets_kernel`): 1,024
# on 8 warps were within 5% of the fastest of 1,024-4,096 on 4 or 8 at 0.5M, 1.2M and 6M Gaussians (BENCHMARKS.md,
# section 51)
SCAN_BLOCK = 1024


def scan_blocks(m: int) -> int:
    """The blocks of SCAN_BLOCK Gaussians the order stage sums m Gaussians' pair offsets in: its block ends' length."""
    return (m + SCAN_BLOCK - 1) // SCAN_BLOCK


class BlockOffsets(NamedTuple):
    """Pair offsets as the order stage writes them: each Gaussian's inclusive prefix sum of the pair counts within
    its block of `block` (`local`, [M] i32; i64 packed top | bottom << 32 for halves), and each block's inclusive
    end (`ends`, [blocks] i64, packed the same): Gaussian r's offset is local[r] + ends[r // block - 1]. Binning
    adds the two as it reads them (kernels/bin.py), so no pass writes the whole sum (BENCHMARKS.md, section 51)."""

    local: torch.Tensor
    ends: torch.Tensor
    block: int

    def whole(self) -> torch.Tensor:
        """[M] i64: the whole prefix sums (the torch twins and the tests)."""
        m = self.local.shape[0]
        before = torch.cat([self.ends.new_zeros(1), self.ends[: -(-m // self.block)][:-1]])
        return self.local.long() + before.repeat_interleave(self.block)[:m]

    @staticmethod
    def split(whole: torch.Tensor, local: torch.Tensor, ends: torch.Tensor, block: int) -> BlockOffsets:
        """Write whole prefix sums [M] into `local` and `ends` as blocks of `block` (the twins' form of it)."""
        m = whole.shape[0]
        n = -(-m // block)
        last = (torch.arange(n, device=whole.device) * block + block - 1).clamp(max=max(m - 1, 0))
        ends[:n].copy_(whole[last])
        before = torch.cat([ends.new_zeros(1), ends[: max(n - 1, 0)]])[:n]
        local[:m].copy_(whole - before.repeat_interleave(block)[:m])
        return BlockOffsets(local[:m], ends[:n], block)


def list_scratch_shape(capacity: int) -> tuple[int, int]:
    """(chunks, 32): the size of `tile_lists`' per-chunk tile-bit counts over `capacity` sorted macro pairs (it
    holds them bit-major, [32, chunks])."""
    return max((capacity + LIST_CHUNK - 1) // LIST_CHUNK, 1), MACRO_COLS * MACRO_ROWS


# sorted macro pairs a `tile_lists` program expands (kernels/tile_lists.py), with LIST_WARPS warps. Of 32, 64 and 128
# at 2, 4 and 8 warps, 32 at 2 split the 4K close-ups' lists fastest (78 and 138 us, from 94 and 168 at 64 and 8),
# and the 1080p close-up's within 4 us of the best (BENCHMARKS.md, section 35); at 256 and 4 warps the kernel spilled
LIST_CHUNK = 32
LIST_WARPS = 2
