"""RenderSettings: everything that changes how a frame is rendered, one dataclass, switches included."""

from __future__ import annotations

from dataclasses import dataclass

from kernels import rasterizer_variants

OUTPUTS = ("both", "float", "rgba8")  # `RenderSettings.outputs`
BLEND_PRECISIONS = ("fp16", "fp32")  # `RenderSettings.blend_precision`
MAX_TEMPORAL_WINDOW = 1024  # frames per cull pass; a window's cameras are held until it ends


@dataclass
class RenderSettings:
    """Per-frame render settings.

    Attributes:
        sh_degree: SH bands to evaluate; None = all the scene has (lower = faster, view-independent at 0).
        background: RGB in [0, 1] added where transmittance remains.
        scale_modifier: multiplies every Gaussian's scale (1 = as trained); changes the prepared covariances.
        ortho: an orthographic projection (gsplat's camera_model="ortho"): the camera's fx, fy are pixels per world
            unit rather than a focal length (renderer/camera.py `orthographic`); depth order and view-dependent
            colour as for a pinhole at the camera's centre. Temporal windows serve it only with known cameras.
        near, far: clip distances along +Z (gsplat's defaults: 0.01, 1e10).
        eps2d: screen-space dilation added to the 2D covariance diagonal (0.3, as 3DGS trains with).
        tile_size: tile edge in pixels, 8 or 16 (same image either way; 8 is faster, BENCHMARKS.md).
        rasterizer: "auto" | "scalar" | "batched" loop form of the rasterizer (same image): scalar, a Gluon kernel
            that reads a step's records from shared memory, runs on CUDA only (`rasterizers()`); batched runs
            anywhere, Triton's interpreter included; auto picks scalar where it runs.
        blend_precision: "fp16" (the scalar rasterizer blends a thread's two pixels as fp16 pairs, as HiGS blends,
            with each 32 Gaussians' colour added into float32 sums: 70-83 dB against the float32 loop's frames, its
            rasterizer 0.71-0.89x the time, frames in flight 0.93-0.99x; BENCHMARKS.md section 61) or "fp32"
            (float32 throughout: 90-102 dB against gsplat 1.5.3). Either keeps the exactness floor, 50 dB against
            gsplat; the batched loop (a CPU's) blends in float32 either way.
        tile_schedule: "longest-first" (the rasterizer's programs take the tiles with the longest lists first,
            kernels/schedule.py) or "in-order" (tile id order); the same image either way.
        adagscale: AdaGScale (lossy): bin each Gaussian with a shrunken ellipse s^2 t (s in [s_min, 1]) chosen
            so that the colour-weighted alpha mass of the dropped annulus, in pixels, stays <= adagscale_tau;
            blending still uses the full Gaussian (kernels/_device.py, adagscale_s2). Off: exact binning.
        adagscale_tau: the quality knob, in pixels of colour-weighted alpha mass per Gaussian (0 = exact tiles);
            at most: a frame with many Gaussians per pixel gets less (adagscale_budget).
        adagscale_budget: the colour-weighted alpha mass per pixel of the image that a frame may drop in all,
            shared by its visible Gaussians: each frame's tau is min(adagscale_tau, budget x pixels / visible
            Gaussians), so the error does not grow with the density of the view (renderer/params.py,
            `adagscale_frame_tau`).
        adagscale_s_min: the smallest scale of the binning ellipse, in (0, 1]; it bounds what the many
            Gaussians whose whole periphery scores under tau can lose (at most exp(-s_min^2 t / 2) of their mass).
        depth: also output each pixel's expected depth, sum(w_i z_i) / sum(w_i) with the blending weights w_i
            of the colour pass (gsplat's "ED"); costs a second rasterization pass. Needs the float outputs.
        outputs: which images a frame writes: "both" (RGB and coverage as float32, 16 bytes a pixel, and the 8-bit
            RGBA, 4), "float" (the float32 pair alone, as gsplat returns) or "rgba8" (the 8-bit RGBA alone, what a
            display or a video takes: `RenderOutput.image` and `.alpha` are None). A frame in flight keeps its own,
            so at 3840x2160 "rgba8" holds 66 MB of images where "both" holds 332 MB.
        Temporal reuse (renderer/temporal.py; each part measured on its own by `warpsplat bench`):
        reuse_unchanged_frame: the same camera and settings as the last frame return the last output (exact).
        temporal_window: K > 1 = one cull pass per K frames, the frames in between project only the Gaussians it
            kept (exact with the path's cameras given, `render(future=...)`; near-exact with predicted ones).
        temporal_margin: screen margin in pixels of a predicted window's cull; the motion it absorbs decides
            whether a frame may use the window (16 of them are float slack, the rest allow deviation).
        temporal_guard: a predicted window keeps every Gaussian within this fraction of the scene radius of a
            predicted camera, whatever its footprint (the translation bound is margin x guard / focal).
    """

    sh_degree: int | None = None
    background: tuple[float, float, float] = (0.0, 0.0, 0.0)
    scale_modifier: float = 1.0
    ortho: bool = False
    near: float = 0.01
    far: float = 1e10
    eps2d: float = 0.3
    tile_size: int = 8
    rasterizer: str = "auto"
    blend_precision: str = "fp16"
    tile_schedule: str = "longest-first"
    adagscale: bool = False  # lossy: reports its PSNR/SSIM against exact in `warpsplat bench`
    # NOTE: defaults from torch-backend orbits at 160x120 (4 frames, against exact): tau 0.1, s_min 0.5 removes
    # 14-17% of the pairs at 44-53 dB mean (plant 44.0, winter_fountain 45.3, lastchance 53.4); tau 0.3 fell
    # to 40.3 dB mean / 36.8 min on plant. s_min 0.5 against 0.25 at tau 0.1: +0.2..0.9 dB for 0.3-0.6 points
    # fewer pairs removed. Small images are the hard case (error ~ visible Gaussians x tau / pixels).
    adagscale_tau: float = 0.1
    # NOTE: measured against exact with the torch twins (BENCHMARKS.md, section 16): at 0.5 the frames that broke
    # the floor at a fixed tau 0.1 (34.5-40.3 dB: the plant at 64-128 px wide, a 1.5M composite's overview at
    # 480x270 with the 24M overview's 11.6 Gaussians per pixel, a synthetic overview) measured 40.5-50 dB.
    adagscale_budget: float = 0.5
    adagscale_s_min: float = 0.5
    depth: bool = False  # also output the expected depth (a second rasterization pass with depth as colour)
    outputs: str = "both"  # "both" | "float" | "rgba8": the images a frame writes
    reuse_unchanged_frame: bool = False  # the viewer turns it on; benchmarks time every frame
    temporal_window: int = 0
    temporal_margin: float = 48.0
    temporal_guard: float = 0.05

    def validate(self) -> RenderSettings:
        # the kernels take these as float arguments: an int (near=1) would compile a kernel of its own, the value
        # 1 even one per value (Triton specializes integer arguments), in the middle of a frame
        self.near, self.far, self.eps2d = float(self.near), float(self.far), float(self.eps2d)
        if self.sh_degree is not None and not 0 <= self.sh_degree <= 3:
            raise ValueError(f"sh_degree {self.sh_degree} not in 0..3")
        if len(self.background) != 3:
            raise ValueError(f"background {self.background!r} is not an RGB triple")
        if not self.scale_modifier > 0:
            raise ValueError(f"scale_modifier {self.scale_modifier} must be > 0")
        if not 0 < self.near < self.far:
            raise ValueError(f"near {self.near} / far {self.far}: need 0 < near < far")
        if self.tile_size not in (8, 16):
            raise ValueError(f"tile_size {self.tile_size}: expected 8 or 16")
        if self.rasterizer not in ("auto", "scalar", "batched"):
            raise ValueError(f"rasterizer {self.rasterizer!r}: expected auto, scalar or batched")
        if self.blend_precision not in BLEND_PRECISIONS:
            raise ValueError(f"blend_precision {self.blend_precision!r}: expected {' or '.join(BLEND_PRECISIONS)}")
        if self.tile_schedule not in ("longest-first", "in-order"):
            raise ValueError(f"tile_schedule {self.tile_schedule!r}: expected longest-first or in-order")
        if self.outputs not in OUTPUTS:
            raise ValueError(f"outputs {self.outputs!r}: expected {', '.join(OUTPUTS)}")
        if self.depth and self.outputs == "rgba8":
            raise ValueError("depth needs the float coverage it divides by: outputs 'both' or 'float', not 'rgba8'")
        if not self.adagscale_tau >= 0:
            raise ValueError(f"adagscale_tau {self.adagscale_tau} must be >= 0")
        if not self.adagscale_budget >= 0:
            raise ValueError(f"adagscale_budget {self.adagscale_budget} must be >= 0")
        if not 0 < self.adagscale_s_min <= 1:
            raise ValueError(f"adagscale_s_min {self.adagscale_s_min} not in (0, 1]")
        if not 0 <= self.temporal_window <= MAX_TEMPORAL_WINDOW:
            raise ValueError(f"temporal_window {self.temporal_window} not in [0, {MAX_TEMPORAL_WINDOW}]")
        if not 16.0 <= self.temporal_margin <= 4096.0:
            raise ValueError(f"temporal_margin {self.temporal_margin} not in [16, 4096] pixels")
        if not 0.0 <= self.temporal_guard <= 10.0:
            raise ValueError(f"temporal_guard {self.temporal_guard} not in [0, 10] scene radii")
        return self


def blends_in_pairs(settings: RenderSettings) -> bool:
    """Whether `settings.blend_precision` reaches this process's frames: their rasterizer is the scalar loop
    (`rasterizer` "scalar", or "auto" where the scalar loop runs), which blends fp16 pairs or float32; the batched
    loop blends float32 whatever the setting."""
    return settings.rasterizer == "scalar" or (settings.rasterizer == "auto" and "scalar" in rasterizers())


def rasterizers() -> tuple[str, ...]:
    """The `rasterizer` values this process renders with on the Triton backend: "auto" and the loop forms its
    kernels run (the scalar form is a Gluon kernel: CUDA only, kernels/rasterize.py `rasterizer_variants`)."""
    return ("auto", *rasterizer_variants())
