"""Triton kernels, one file per per-frame stage, each with a plain-torch twin in `kernels.reference`.

Knows tensors, not scenes, cameras or windows. Without a CUDA device the kernels run in Triton's CPU
interpreter: TRITON_INTERPRET must be set before any kernel module is imported, so it is set here.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from .bin import SENTINEL_KEY, emit_tile_keys  # noqa: E402
from .cull import cull_window  # noqa: E402
from .project import project_gaussians, project_outputs  # noqa: E402
from .rasterize import rasterize_tiles  # noqa: E402
from .sort import sort_pairs  # noqa: E402
from .tile_ranges import tile_ranges  # noqa: E402

__all__ = [
    "SENTINEL_KEY",
    "cull_window",
    "emit_tile_keys",
    "project_gaussians",
    "project_outputs",
    "rasterize_tiles",
    "sort_pairs",
    "tile_ranges",
]
