"""`warpsplat info SCENE`: what a scene file holds."""

from __future__ import annotations

import argparse

from .common import add_scene_argument, open_scene


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="print a scene's Gaussian count, SH degree, bounds and statistics")
    add_scene_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    scene = open_scene(args.scene, args.up)
    lo, hi = scene.bounds()
    rlo, rhi = scene.robust_bounds()
    fmt3 = lambda t: "(" + ", ".join(f"{v:.4g}" for v in t.tolist()) + ")"  # noqa: E731
    print(f"format:        {scene.source_format}")
    print(f"gaussians:     {len(scene):,}")
    print(f"sh degree:     {scene.sh_degree}")
    print(f"bounds:        min {fmt3(lo)}  max {fmt3(hi)}")
    print(f"1-99% box:     min {fmt3(rlo)}  max {fmt3(rhi)}")
    print(f"up axis:       {scene.up_axis}")
    print(f"antialiased:   {'yes' if scene.antialiased else 'no'}")
    return 0
