"""Image and timing measures shared by the commands and the tests."""

from __future__ import annotations

import math

import torch


def psnr(a, b, peak: float = 1.0) -> float:
    """PSNR in dB of two images of one shape (tensors or arrays; `peak` 1 for floats in [0, 1], 255 for
    uint8); inf where they are equal."""
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    mse = torch.mean((a - b) ** 2).item()
    return float("inf") if mse == 0 else 10.0 * math.log10(peak * peak / mse)


def percentile(values, q: float) -> float:
    """The nearest-rank q-th percentile (a value that occurred, as frame-time tables report it); nan for
    no values."""
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(int(math.ceil(q / 100 * len(s))) - 1, 0))]
