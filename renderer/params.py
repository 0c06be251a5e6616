"""What a frame reads from the device rather than bakes in: its camera, background and AdaGScale tau, one
parameter buffer per workspace slot, so that a replayed CUDA graph renders a new view without a capture."""

from __future__ import annotations

import torch

from .camera import Camera
from .settings import RenderSettings

WIDTH = 28  # camera [24], background [3], AdaGScale's tau for the frame [1]


def adagscale_frame_tau(settings: RenderSettings, width: int, height: int, visible: int) -> float:
    """AdaGScale's tau for a frame of width x height pixels in which `visible` Gaussians reach a tile:
    min(adagscale_tau, adagscale_budget x pixels / visible).

    Why it scales. A pair AdaGScale drops removes Gaussian i from every pixel p of one tile; that changes p's
    colour by T_i(p) alpha_i(p) (c_i - B_i(p)), with T_i the transmittance in front of i and B_i the colour
    composited behind it. So p's error is at most the colour-weighted alpha that p's dropped pairs carried (the
    weight w_i bounds |c_i - B_i| for colours in [0, 1]), and, summed over the frame's P pixels,
        sum_p |dC(p)| <= sum_i S_i <= V tau,
    where S_i <= tau is Gaussian i's score, the colour-weighted alpha mass of its dropped annulus in pixels
    (kernels/_device.py), and V the visible Gaussians. With a fixed tau that bound grows with V / P, the
    Gaussians per pixel: a scene drawn small, a composite seen whole. Measured, the error grew with them too
    (BENCHMARKS.md, sections 12-14: the 24M overview, 11.6 Gaussians per pixel, fell under the 40 dB floor at
    tau 0.1 where the 6M overview, 2.9 per pixel, kept 45.5 dB). A tau of budget x P / V caps the bound at
    `budget` of alpha per pixel on average, whatever the density; where the Gaussians are sparse (objects at
    1080p: 0.05 per pixel) adagscale_tau, the per-Gaussian cap, decides alone, as before.

    The bound itself is loose (occlusion and colours alike in front and behind keep the real error near 1/100
    of it), so the budget's value comes from measurements against exact frames (renderer/settings.py). V is
    the frame before's count (the kernel reads tau from the device, so a replayed graph takes the new value
    without a capture); a renderer's first frame counts every Gaussian of the scene, the safe side."""
    return min(settings.adagscale_tau, settings.adagscale_budget * width * height / max(visible, 1))


class FrameParams:
    """Per slot: a pinned host staging copy and the device buffer the frame's kernels read (a `Frame` holds views
    of it), both [WIDTH] f32, and the tau the slot's frame was given (None with AdaGScale off)."""

    def __init__(self, device: torch.device, slots: int):
        pinned = device.type == "cuda"
        # copy(src, dst): how `to_device` copies a slot's staging buffer up, where kernels reach pinned memory
        # (kernels/staging.py `copy_to_device`: the renderer's `maps_host`); None: torch's `copy_`
        self.copy = None
        self.host = [torch.empty(WIDTH, dtype=torch.float32, pin_memory=pinned) for _ in range(slots)]
        self.on_device = [torch.empty(WIDTH, dtype=torch.float32, device=device) for _ in range(slots)]
        self._host_arrays = [h.numpy() for h in self.host]  # numpy views of the staging copies, for `fill`
        self.tau: list[float | None] = [None] * slots

    def fill(self, camera: Camera, settings: RenderSettings, slot: int, last_visible: int) -> None:
        """Camera [24], background [3] and AdaGScale's tau [1] into the slot's pinned staging copy (safe to refill
        when the slot is next used: by then the frame that read it was checked, which waits for it). The frame
        copies it to the device itself, as its first step (`to_device`), so that a replayed graph's first node
        does: torch's `copy_` from pinned memory took 35-60 us of the host's time a frame on the H200, before the
        graph's launch (BENCHMARKS.md, section 44). `last_visible`: the frame before's visible Gaussians, which set
        the tau."""
        tau = adagscale_frame_tau(settings, camera.width, camera.height, last_visible)
        self._host_arrays[slot][:] = [*camera.packed_list(), *settings.background, tau]
        self.tau[slot] = tau if settings.adagscale else None

    def to_device(self, slot: int) -> None:
        """The slot's staging copy into its device buffer: one non-blocking copy, enqueued (or captured) with the
        frame's stages (renderer/frame.py `Frame.run`): a kernel's where kernels reach pinned memory (kernels/staging.py
        says why), else torch's."""
        if self.copy is not None:
            self.copy(self.host[slot], self.on_device[slot])
        else:
            self.on_device[slot].copy_(self.host[slot], non_blocking=True)
