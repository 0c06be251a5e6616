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

from tools.metrics import psnr  # noqa: E402, F401  (tests/kernels import it from here)

REPO = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def scenes_dir() -> Path:
    """The real scenes: $WARPSPLAT_SCENES, else ../shared/scenes beside the checkout. Tests that need them
    fail (never skip) when neither exists: the real files are the proof that the readers work."""
    env = os.environ.get("WARPSPLAT_SCENES")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "scenes"]:
        if cand.is_dir():
            return cand
    raise FileNotFoundError("real scenes not found: set WARPSPLAT_SCENES or place shared/scenes beside the checkout")


def real_scene(name: str) -> Path:
    """The path of a real scene file by name (fails if missing)."""
    path = scenes_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"real scene {name} not found in {scenes_dir()}")
    return path


@pytest.fixture
def scene_path():
    """scene_path("plant.splat") -> Path of a real scene file (fails if missing)."""
    return real_scene


@pytest.fixture
def device() -> str:
    return DEVICE


def nan_like(t: torch.Tensor) -> torch.Tensor:
    """A buffer of t's shape/dtype poisoned so unwritten elements fail comparisons (NaN; 0xFF.. for ints)."""
    out = torch.empty_like(t)
    if out.dtype.is_floating_point:
        out.fill_(float("nan"))
    else:
        out.fill_(-1 if out.dtype != torch.uint8 else 255)
    return out
