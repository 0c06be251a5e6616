"""How much memory a Renderer needs for a scene, checked before any work starts.

`estimate_bytes()` adds up what `Renderer` allocates on its device (renderer/pipeline.py), per Gaussian,
per Gaussian-tile pair and per pixel; `check_fits()` compares that with what the device has free
(`torch.cuda.mem_get_info`, or MemAvailable of /proc/meminfo on the CPU) and raises `OutOfDeviceMemoryError`,
a one-line `MemoryError`, when it does not fit. It is an estimate with a margin, not an accounting: the
caching allocator, the CUDA context and other processes are outside it.

Terms (bytes; K = SH coefficients per channel, N Gaussians, P pairs, W x H pixels):

| term            | what                                                                       | bytes          |
|-----------------|----------------------------------------------------------------------------|----------------|
| scene copy      | means, SH (CUDA only: on the CPU the renderer shares the scene's tensors)  | N (12 + 12 K)  |
| prepared        | opacities 4, covariances 24; quaternions 16, log-scales 12 (CUDA only)     | N 28 (+ N 28)  |
| load transients | device scene copy, activation and covariance temporaries, freed after init | N 180          |
| per frame       | projection outputs 60, pair offsets 8 (+ the torch reference's temporaries | N 68 (+ N 250) |
|                 | on the CPU, measured at 1M Gaussians: 250)                                 |                |
| pairs           | keys 8, ids 4, sorted keys 8, permutation 8, sorted ids 4, x 1.25 capacity | P 40 + P 20    |
|                 | (grow-only), plus the sort's own output 20                                 |                |
| image           | RGB 12, alpha 4, RGBA8 4 (+ the reference's 16 of tile-padded buffers)     | W H 20 (+ 16)  |

P is not known before a frame: it is estimated as PAIRS_PER_GAUSSIAN x N. Measured: 1.3-1.9 pairs per
Gaussian for a 1M-Gaussian cloud at 64x48-640x480; small real scenes at 1080p reach 10-20 per *visible*
Gaussian (BENCHMARKS.md), but most of a large scene is then off-screen or sub-tile. The load transients are
taken as the larger of themselves and a frame's needs (they do not coexist). MARGIN covers the rest.

Checked on the CPU (torch backend, 1M-Gaussian random cloud, SH degree 2): a frame's peak above the scene was
565 B/G at 64x48 and 647 B/G at 640x480 (1.3 and 1.9 pairs per Gaussian); this estimate gives 586 B/G before
the margin. The CUDA terms are counted from the code, not measured here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scenes.limits import mem_available  # the one reader of MemAvailable: scene readers cap their memory by it too

PAIRS_PER_GAUSSIAN = 4.0
MARGIN = 1.1  # x the estimate
FIXED_BYTES = 64 << 20  # allocator rounding, kernel workspaces, small tensors
NOMINAL_FRAME = (1920, 1080)  # the frame assumed when no size is known yet (Renderer.__init__)


class OutOfDeviceMemoryError(MemoryError):
    """A scene or frame does not fit in the device's free memory (one-line message with the estimate)."""


@dataclass
class MemoryEstimate:
    """Bytes a Renderer needs on one device, by term."""

    scene: int
    prepared: int
    per_frame: int
    pairs: int
    image: int

    @property
    def total(self) -> int:
        return int((self.scene + self.prepared + self.per_frame + self.pairs + self.image) * MARGIN) + FIXED_BYTES

    def summary(self) -> str:
        parts = ("scene", "prepared", "per_frame", "pairs", "image")
        return ", ".join(f"{p.replace('_', '-')} {gb(getattr(self, p))}" for p in parts)


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def estimate_bytes(
    n_gaussians: int,
    sh_coeffs: int,
    width: int | None = None,
    height: int | None = None,
    device: torch.device | str = "cpu",
    *,
    pairs_per_gaussian: float = PAIRS_PER_GAUSSIAN,
) -> MemoryEstimate:
    """The memory a Renderer needs on `device` for N Gaussians with K SH coefficients per channel, rendering
    W x H frames (NOMINAL_FRAME when not given). See the module docstring for each term."""
    n, k = int(n_gaussians), int(sh_coeffs)
    w, h = (width, height) if width and height else NOMINAL_FRAME
    on_cpu = torch.device(device).type == "cpu"
    scene = 0 if on_cpu else n * (12 + 12 * k)
    prepared = n * (28 if on_cpu else 56)
    per_frame = n * (68 + (250 if on_cpu else 0))
    per_frame = max(per_frame, n * 180)  # load transients, or a frame: never both
    n_pairs = int(n * pairs_per_gaussian)
    pairs = n_pairs * 60
    image = w * h * (20 + (16 if on_cpu else 0)) + 8 * ((w + 15) // 16) * ((h + 15) // 16)
    return MemoryEstimate(scene, prepared, per_frame, pairs, image)


def free_bytes(device: torch.device | str) -> int | None:
    """Free memory on `device`: CUDA's free bytes, or MemAvailable on the CPU (None where unknown)."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "cpu":
        return mem_available()
    return None


def check_fits(
    n_gaussians: int,
    sh_coeffs: int,
    width: int | None = None,
    height: int | None = None,
    device: torch.device | str = "cpu",
) -> MemoryEstimate:
    """Raise OutOfDeviceMemoryError, before any allocation, if a Renderer of this scene would not fit on
    `device`; return the estimate otherwise (and where the free memory is unknown)."""
    est = estimate_bytes(n_gaussians, sh_coeffs, width, height, device)
    free = free_bytes(device)
    if free is not None and est.total > free:
        w, h = (width, height) if width and height else NOMINAL_FRAME
        raise OutOfDeviceMemoryError(
            f"{n_gaussians:,} Gaussians (SH {sh_coeffs} coefficients) at {w}x{h} need about {gb(est.total)} on "
            f"{torch.device(device)} ({est.summary()}, x{MARGIN} margin) but only {gb(free)} is free"
        )
    return est
