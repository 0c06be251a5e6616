"""The per-frame stages, one file each, each launcher with a plain-torch twin in `kernels.reference`.

project, bin, tile_lists, schedule and rasterize are Triton kernels (rasterize's compiled loop in Gluon,
Triton's layout-explicit dialect, for its shared memory); order and sort are torch's `torch.sort`
(CUB's radix sort on the GPU) with `cumsum`, `searchsorted` and `index_select`, and a Triton kernel that settles
the ties of macro-tile pairs' depth keys. kernels/constants.py holds the
numbers and kernels/buffers.py the buffers that launchers and twins share. Knows tensors, not scenes, cameras
or windows.

Without a CUDA device the kernels run in Triton's CPU interpreter: TRITON_INTERPRET must be set before any
kernel module is imported, so it is set here.
"""

import os
import sys

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from . import _launch  # noqa: E402
from .bin import bin_config, bin_pairs, bin_warps, bins_macro_tiles, expected_macro_pairs  # noqa: E402
from .buffers import (  # noqa: E402
    MACRO_KEY_DTYPE,
    SH_DTYPE,
    SH_MAX,
    BlockOffsets,
    depth_bits,
    depth_keys,
    gaussian_extent,
    key_dtype,
    key_halves,
    key_offset,
    key_tiles,
    list_scratch_shape,
    macro_grid,
    order_outputs,
    project_outputs,
    scan_blocks,
    sentinel_key,
    sh_layout,
    tile_keys,
)
from .cull import cull_window  # noqa: E402
from .order import count_blocks, count_visible, depth_order, index_offsets, visible_order  # noqa: E402
from .project import culls_frustum, frustum_block_bounds, project_block, project_gaussians  # noqa: E402
from .rasterize import SLOTS as RASTER_SLOTS  # noqa: E402
from .rasterize import list_class, rasterize_tiles, rasterizer_variants, split_scratch_shape  # noqa: E402
from .schedule import schedule_scratch_shape, schedule_tiles  # noqa: E402
from .sort import sort_pairs  # noqa: E402
from .staging import copy_to_device  # noqa: E402
from .tile_lists import tile_lists, tile_ranges  # noqa: E402

__all__ = [
    "SH_DTYPE",
    "SH_MAX",
    "bin_config",
    "bin_pairs",
    "bin_warps",
    "bins_macro_tiles",
    "copy_to_device",
    "cull_window",
    "culls_frustum",
    "expected_macro_pairs",
    "gaussian_extent",
    "frustum_block_bounds",
    "depth_order",
    "count_blocks",
    "count_visible",
    "order_outputs",
    "project_block",
    "key_dtype",
    "key_halves",
    "key_offset",
    "key_tiles",
    "tile_keys",
    "MACRO_KEY_DTYPE",
    "depth_bits",
    "depth_keys",
    "index_offsets",
    "list_class",
    "RASTER_SLOTS",
    "list_scratch_shape",
    "macro_grid",
    "sentinel_key",
    "sh_layout",
    "project_gaussians",
    "project_outputs",
    "rasterize_tiles",
    "rasterizer_variants",
    "schedule_scratch_shape",
    "schedule_tiles",
    "sort_pairs",
    "split_scratch_shape",
    "tile_lists",
    "tile_ranges",
    "BlockOffsets",
    "scan_blocks",
    "visible_order",
]

# every kernel's Triton cache key settled before any launch (kernels/_launch.py `settle_cache_keys` says why)
_launch.settle_cache_keys([m for name, m in sorted(sys.modules.items()) if name.startswith(__name__ + ".")])
