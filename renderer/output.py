"""What a frame hands over (`RenderOutput`, with its `RenderStats`), and the image sizes a frame may have."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from .timing import StageTimer


@dataclass
class RenderStats:
    """What one frame cost and contained."""

    n_gaussians: int
    n_visible: int  # Gaussians that reach at least one tile
    n_pairs: int  # Gaussian-tile pairs after binning (exact, or AdaGScale's shrunken footprints when on)
    max_tile_pairs: int  # longest tile list
    stage_ms: dict[str, float] = field(default_factory=dict)  # per stage; "total" included
    backend: str = ""
    n_projected: int = -1  # Gaussians stage 1 ran on (fewer than n_gaussians inside a temporal window)
    source: str = "full"  # "full" | "window" (a temporal window's set) | "reused" (the last frame, unchanged)
    adagscale_tau: float | None = None  # the tau AdaGScale binned this frame with (`adagscale_frame_tau`)
    # how the frame ran, what its time is made of (renderer/graphs.py): "replay" (its kind's CUDA graph, the steady
    # form), "capture" (captured as a graph, then replayed: about one eager frame of host time more), "eager" (stage by
    # stage: a kind not captured yet, no graphs), "counted" (renderer/routes.py), "reused" (the frame before)
    ran: str = ""
    rebinned: bool = False  # its pairs did not fit the capacity: grown, and binned again (a growth frame)

    def ran_label(self) -> str:
        """How the frame ran, in a word: `ran`, with "+rebin" when it was binned again (the bench's worst-frames
        table and the viewer's slowest-frame line name a slow frame's cause with it)."""
        return self.ran + ("+rebin" if self.rebinned else "")


@dataclass
class RenderOutput:
    """One frame. Tensors are views of the renderer's workspace: clone them to keep past the next frame."""

    image: Tensor | None  # [H, W, 3] float32, background included (None: `RenderSettings.outputs` "rgba8")
    alpha: Tensor | None  # [H, W] float32 coverage (1 - final transmittance); None with the image
    rgba8: Tensor | None  # [H, W, 4] uint8 (RGB clamped to [0, 1], A = coverage); None: outputs "float"
    stats: RenderStats
    tile_counts: Tensor  # [n_ty, n_tx] int32 Gaussians per tile (for the heat-map view)
    depth: Tensor | None = None  # [H, W] float32 expected depth (settings.depth); 0 where coverage < 1/255
    tiles_touched: Tensor | None = None  # [n_projected] int32 tiles per projected Gaussian (0 = culled)
    timer: StageTimer | None = None  # the frame's stage times (read once the GPU has finished it)


def fill_stats(stats: RenderStats, tile_counts: Tensor, timer: StageTimer) -> RenderStats:
    """Resolve the device-side statistics of a frame (synchronises: not for the frame loop)."""
    stats.max_tile_pairs = int(tile_counts.max()) if tile_counts.numel() else 0
    stats.stage_ms = timer.elapsed_ms(wait=True) or {}
    return stats


MAX_IMAGE_SIDE = 8192


def check_image_size(width: int, height: int) -> None:
    """Refuse absurd sizes up front with a one-line message (never an allocation failure deep inside)."""
    if not (isinstance(width, int) and isinstance(height, int)) or width < 1 or height < 1:
        raise ValueError(f"image size {width}x{height}: width and height must be positive integers")
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise ValueError(f"image size {width}x{height}: each side must be at most {MAX_IMAGE_SIDE} pixels")
