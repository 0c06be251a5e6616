"""Shared test set-up.

TRITON_INTERPRET=1 is set here, before any kernel module is imported, and only when no CUDA device is
present: the same tests compile the kernels for real on the GPU machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def scenes_dir() -> Path:
    """The real scenes: $WARPSPLAT_SCENES, else ../shared/scenes beside the checkout. Tests that need them
    fail (never skip) when neither exists."""
    env = os.environ.get("WARPSPLAT_SCENES")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "scenes"]:
        if cand.is_dir():
            return cand
    raise FileNotFoundError("real scenes not found: set WARPSPLAT_SCENES or place shared/scenes beside the checkout")


@pytest.fixture
def scene_path():
    """scene_path("plant.splat") -> Path of a real scene file (fails if missing)."""

    def find(name: str) -> Path:
        p = scenes_dir() / name
        if not p.exists():
            raise FileNotFoundError(f"real scene {name} not found in {scenes_dir()}")
        return p

    return find


@pytest.fixture
def device() -> str:
    return DEVICE


def psnr(a: torch.Tensor, b: torch.Tensor, peak: float = 1.0) -> float:
    mse = torch.mean((a.double() - b.double()) ** 2).item()
    return float("inf") if mse == 0 else 10.0 * torch.log10(torch.tensor(peak * peak / mse)).item()


def nan_like(t: torch.Tensor) -> torch.Tensor:
    """A buffer of t's shape/dtype poisoned so unwritten elements fail comparisons (NaN; 0xFF.. for ints)."""
    out = torch.empty_like(t)
    if out.dtype.is_floating_point:
        out.fill_(float("nan"))
    else:
        out.fill_(-1 if out.dtype != torch.uint8 else 255)
    return out
