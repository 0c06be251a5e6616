"""The stages' buffers and pair keys, one definition for the Triton launchers and their torch twins.

Like kernels/constants.py, this is what a kernel and its twin must agree on, not what either computes: the
shapes and dtypes of stage 1's and stage 2's outputs (the renderer allocates them once and reuses them), the
width of the pair keys and the sentinel that marks an unused pair slot. A twin with its own copy could drift
from its kernel unnoticed, since the tests hand each implementation the buffers it asks for. torch only: no
Triton import, so kernels/reference.py can read it without reaching the Triton path.
"""

from __future__ import annotations

import torch

from .constants import INT16_TILES


def key_dtype(n_tiles: int) -> torch.dtype:
    """The narrowest key type that holds every tile id and a sentinel above them."""
    return torch.int16 if n_tiles <= INT16_TILES else torch.int32


def sentinel_key(dtype: torch.dtype) -> int:
    """The key of an unused slot: the type's maximum, above every tile id, so it sorts last."""
    return torch.iinfo(dtype).max


def project_outputs(n: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """The outputs of `project_gaussians` for n Gaussians: means2d [n, 2], conic_opacity [n, 4], depths [n],
    colors [n, 3] (f32), tiles_touched [n] i32, bin_t [n] f32."""
    f32 = dict(dtype=torch.float32, device=device)
    return (
        torch.empty(n, 2, **f32),
        torch.empty(n, 4, **f32),
        torch.empty(n, **f32),
        torch.empty(n, 3, **f32),
        torch.empty(n, dtype=torch.int32, device=device),
        torch.empty(n, **f32),
    )


def order_outputs(n: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Buffers for `depth_order`: (sorted depths [n] f32, order [n] i64, counts [n] i32, offsets [n] i64,
    totals [2] i64, +inf [1] f32)."""
    return (torch.empty(n, dtype=torch.float32, device=device), torch.empty(n, dtype=torch.int64, device=device),
            torch.empty(n, dtype=torch.int32, device=device), torch.empty(n, dtype=torch.int64, device=device),
            torch.empty(2, dtype=torch.int64, device=device),
            torch.full((1,), float("inf"), dtype=torch.float32, device=device))  # fmt: skip
