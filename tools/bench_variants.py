"""The renderer settings `warpsplat bench` runs on each path: the default, an ablation row per switch, and
the lossy variants whose loss it reports."""

from __future__ import annotations

import fnmatch
import math

from .cli import CliError

# AdaGScale's tau sweep beside its default (pixels of colour-weighted alpha mass per Gaussian; at 1920x1080
# Gaussians cover more pixels, so a tau keeps more of each footprint than at the small test sizes).
ADAGSCALE_SWEEP = (0.3, 1.0, 3.0)
TEMPORAL_K = 8
# The images every row writes (`RenderSettings.outputs`) unless it names its own: what the anchors return, the
# float RGB and coverage (gsplat's and HiGS's frames), so that each renderer's frame does the same work and holds
# the same images. The "outputs=" rows time the others: all three (the renderer's default) and the 8-bit image
# alone (what the viewer's colour view and `warpsplat render` take).
BENCH_OUTPUTS = "float"
# Rows whose switch the torch backend (kernels/reference.py, the CPU's) does not have: there they render the
# default's frames (no CUDA graphs, no counted route below COUNTED_FROM, one rasterizer loop, no tile schedule).
TRITON_ONLY = ("graphs=off", "frames=graph", "rasterizer=batched", "blend_precision=fp32", "tile_schedule=in-order")


def variants():
    """The default settings, then each renderer switch flipped alone (ablation), then the lossy AdaGScale at
    its default tau and budget, with its per-Gaussian tau alone (the rule before the frame's budget), and the
    tau sweep (`is_lossy` marks them)."""
    from renderer import RenderSettings

    out = {
        "default": RenderSettings(),
        "graphs=off": RenderSettings(),  # the same frames launched stage by stage (and timed per stage)
        # the two frame routes forced (renderer/routes.py, COUNTED_FROM): capacities and graphs, or counted
        "frames=graph": RenderSettings(),
        "frames=counted": RenderSettings(),
        # frames rendered one `render` call at a time, each waiting for its own end (every variant is timed as
        # `warpsplat render` renders: `Renderer.render_stream`, one frame in flight where the renderer can)
        "frames=one-by-one": RenderSettings(),
        "tile_size=16": RenderSettings(tile_size=16),
        "rasterizer=batched": RenderSettings(rasterizer="batched"),
        # the scalar rasterizer in float32 throughout: the default blends fp16 pairs (its PSNR against this row is
        # the fp16 loop's cost in fidelity)
        "blend_precision=fp32": RenderSettings(blend_precision="fp32"),
        "tile_schedule=in-order": RenderSettings(tile_schedule="in-order"),
        "adagscale": RenderSettings(adagscale=True),
        # the fixed per-Gaussian tau, no frame budget: what the 24M overview measured under the floor with
        "adagscale budget=off": RenderSettings(adagscale=True, adagscale_budget=math.inf),
    }
    for tau in ADAGSCALE_SWEEP:
        out[f"adagscale tau={tau:g}"] = RenderSettings(adagscale=True, adagscale_tau=tau)
    # temporal reuse: "known" gets the path's next cameras (as `warpsplat render` does), "predicted" does not
    # (as the viewer); both render the path in order, so their quality is measured in order too
    out[f"temporal K={TEMPORAL_K} known"] = RenderSettings(temporal_window=TEMPORAL_K)
    out[f"temporal K={TEMPORAL_K} predicted"] = RenderSettings(temporal_window=TEMPORAL_K)
    for s in out.values():
        s.outputs = BENCH_OUTPUTS
    out["outputs=both"] = RenderSettings(outputs="both")
    out["outputs=rgba8"] = RenderSettings(outputs="rgba8")
    return out


def selected_variants(patterns: str, anchors: bool = False) -> dict:
    """The default variant, then the others that one of the comma-separated glob patterns matches and no pattern
    starting with '!' does; "frames=one-by-one" too when `anchors` run (their one-by-one frames are compared with
    it). A pattern that matches no variant is an error."""
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    names = list(variants())
    for p in pats:
        if not fnmatch.filter(names, p.removeprefix("!")):
            raise CliError(f"--variants {patterns!r}: {p!r} matches no variant; known: {', '.join(names)}")
    take = [p for p in pats if not p.startswith("!")]
    leave = [p[1:] for p in pats if p.startswith("!")]

    def chosen(name: str) -> bool:
        if name == "default" or (anchors and name == "frames=one-by-one"):
            return True
        return any(fnmatch.fnmatch(name, p) for p in take) and not any(fnmatch.fnmatch(name, p) for p in leave)

    return {k: v for k, v in variants().items() if chosen(k)}


def is_lossy(settings) -> bool:
    return settings.adagscale


def is_temporal(settings) -> bool:
    return settings.temporal_window > 1


def knows_path(name: str) -> bool:
    """A variant given the path's next cameras (`future=`), as `warpsplat render` gives them."""
    return "known" in name
