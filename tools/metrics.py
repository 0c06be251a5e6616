"""Image and timing measures shared by the commands and the tests."""

from __future__ import annotations

import math
import statistics


def psnr(a, b, peak: float = 1.0) -> float:
    """PSNR in dB of two images of one shape (tensors or arrays; `peak` 1 for floats in [0, 1], 255 for
    uint8); inf where they are equal."""
    import torch  # here, not at the top: the commands' --help imports this module (tools/cli.py)

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


def path_psnr(frame_psnrs: list[float]) -> float:
    """A path's PSNR from its frames' PSNRs: that of their mean squared error (exact frames count as MSE 0, so
    one bad frame is not hidden by an average of dB values, and identical frames do not make it infinite)."""
    mse = statistics.mean(10.0 ** (-p / 10.0) for p in frame_psnrs)
    return float("inf") if mse == 0 else -10.0 * math.log10(mse)


def ssim(a, b) -> float:
    """Mean SSIM (Wang et al. 2004) of two [H, W, 3] images in [0, 1]: 11x11 Gaussian window, sigma 1.5,
    K1 = 0.01, K2 = 0.03, per channel, valid region (the window shrinks to fit images under 11 pixels)."""
    import torch

    x = a.double().clamp(0, 1).permute(2, 0, 1)[:, None]  # [3, 1, H, W]
    y = b.double().clamp(0, 1).permute(2, 0, 1)[:, None]
    size = min(11, x.shape[-2], x.shape[-1])
    size -= 1 - size % 2  # odd
    g = torch.exp(-((torch.arange(size, dtype=torch.float64) - size // 2) ** 2) / (2 * 1.5**2))
    g = (g / g.sum()).to(x.device)
    win = (g[:, None] * g[None, :])[None, None]

    def blur(z):
        return torch.nn.functional.conv2d(z, win)

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(s.mean())
