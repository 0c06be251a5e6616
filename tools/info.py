"""`warpsplat info SCENE`: what a scene file holds.

Prints the count, SH degree, bounds, opacity and scale statistics, the GPU memory the renderer needs for the
scene (renderer/memory.py's estimate, the one it checks before it starts), and the format details the reader
recorded (`scene.extras`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from .cli import add_command
from .common import add_scene_argument, open_scene

if TYPE_CHECKING:
    import torch

    from scenes import GaussianScene


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "info",
        summary="print a scene's Gaussian count, SH degree, bounds and statistics",
        description="""
            Print what a scene file holds: its format, Gaussian count and SH degree, the bounds of the means
            (all of them, and the 1st-99th percentile box the default view frames), opacity and scale
            statistics, the memory rendering it needs, and what the reader noted about the file.
        """,
        examples="""
            warpsplat info                                  # the bundled plant scene
            warpsplat info point_cloud/iteration_30000/point_cloud.ply
        """,
    )
    add_scene_argument(p)
    p.set_defaults(func=run)


def _quantiles(values: torch.Tensor, qs: list[float]) -> list[float]:
    return np.quantile(values.detach().cpu().numpy(), qs).tolist()


def describe(scene: GaussianScene) -> list[str]:
    """The report lines (separate from printing so tests can check them)."""
    import torch

    from renderer.memory import NOMINAL_FRAME, estimate_bytes, free_bytes, gb
    from renderer.routes import runs_counted

    fmt3 = lambda t: "(" + ", ".join(_number(v) for v in t.tolist()) + ")"  # noqa: E731
    lo, hi = scene.bounds()
    rlo, rhi = scene.robust_bounds()
    n = len(scene)
    lines = [
        f"format:        {scene.source_format}",
        f"gaussians:     {n:,}",
        f"sh degree:     {scene.sh_degree}",
        f"bounds:        min {fmt3(lo)}  max {fmt3(hi)}",
        f"1-99% box:     min {fmt3(rlo)}  max {fmt3(rhi)}",
        f"up axis:       {scene.up_axis}{up_hint(scene, rlo, rhi)}",
        f"antialiased:   {'yes' if scene.antialiased else 'no'}",
    ]
    opacity = torch.sigmoid(scene.opacity_logits)
    o = _quantiles(opacity, [0.0, 0.01, 0.5, 0.99, 1.0])
    faint = int((opacity < 1 / 255).sum())
    lines.append(
        f"opacity:       min {o[0]:.3g}  1% {o[1]:.3g}  median {o[2]:.3g}  99% {o[3]:.3g}  max {o[4]:.3g}"
        f"  (below 1/255: {faint:,} = {100 * faint / n:.1f}%)"
    )
    # exp is monotonic: the largest and smallest axes are found on the log-scales ([N] temporaries, not [N, 3])
    largest, smallest = scene.log_scales.amax(1), scene.log_scales.amin(1)
    s = np.exp(_quantiles(largest, [0.0, 0.5, 0.99, 1.0]))
    lines.append(f"scale (max):   min {s[0]:.3g}  median {s[1]:.3g}  99% {s[2]:.3g}  max {s[3]:.3g}")
    s = np.exp(_quantiles(smallest, [0.0, 0.5, 1.0]))
    lines.append(f"scale (min):   min {s[0]:.3g}  median {s[1]:.3g}  max {s[2]:.3g}")
    aniso = largest - smallest  # log of max/min axis ratio
    del largest, smallest
    a = np.exp(_quantiles(aniso, [0.5, 0.99, 1.0]))
    lines.append(f"anisotropy:    median {a[0]:.3g}  99% {a[1]:.3g}  max {a[2]:.3g}  (largest / smallest axis)")
    # what the renderer checks before it starts (renderer/memory.py), and whether this machine's GPU has it free
    gpu = estimate_bytes(n, scene.sh.shape[1], device="cuda", counted=runs_counted(n, "auto"))
    w, h = NOMINAL_FRAME
    free = free_bytes("cuda") if torch.cuda.is_available() else None
    verdict = "" if free is None else f" ({'fits in' if gpu.total <= free else 'more than'} the {gb(free)} free)"
    lines.append(
        f"memory:        {scene.nbytes() / 2**20:,.1f} MiB as loaded (float32); up to about {gpu.total / 2**20:,.1f} "
        f"MiB on the GPU to render it at {w}x{h} (the check before rendering: its densest views' pair and image "
        f"buffers){verdict}"
    )
    for key, value in scene.extras.items():
        if isinstance(value, (list, tuple)):
            if not value:  # "ignored properties: []" says nothing
                continue
            value = ", ".join(_number(v) if isinstance(v, float) else str(v) for v in value)
        elif isinstance(value, float):
            value = _number(value)
        lines.append(f"{key + ':':<14} {value}")
    return lines


FLAT = 0.5  # an axis whose 1-99% extent is under this fraction of both others' is the scene's flattest


def up_hint(scene: GaussianScene, lo, hi) -> str:
    """A hint where the scene's flattest axis (its ground's normal, in a landscape or a room) is not its up axis:
    gsplat's and nerfstudio's trainers turn their worlds' up to +-Z. A hint only: nothing changes unasked, and
    the sign is the user's to try (the viewer's up-axis list, or --up)."""
    from renderer.camera import up_vector

    extent = (hi - lo).double()
    flat = int(extent.argmin())
    others = [extent[i] for i in range(3) if i != flat]
    up = np.abs(up_vector(scene.up_axis))
    if not all(extent[flat] < FLAT * e for e in others) or up[flat] > 0.9:
        return ""
    name = "xyz"[flat]
    return f"  (the scene is flattest along {name}: if it shows on its side, try --up +{name} or -{name})"


def _number(v: float) -> str:
    """4 significant digits; a value that rounds to zero prints as 0, never -0."""
    text = f"{v:.4g}"
    return "0" if float(text) == 0 else text


def run(args: argparse.Namespace) -> int:
    scene = open_scene(args.scene, args.up)
    for line in describe(scene):
        print(line)
    return 0
