"""`warpsplat render`: render one image from the default view, or a camera path as PNG frames.

    warpsplat render [SCENE] --size 1280x720 --out image.png
    warpsplat render [SCENE] --path orbit --frames 60 --out frames/
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from .cli import CliError
from .common import add_scene_argument, open_scene, parse_size


def add_parser(sub) -> None:
    p = sub.add_parser("render", help="render an image or a camera path (no window, no GL)")
    add_scene_argument(p)
    p.add_argument("--out", required=True, help="image.png for one frame; a folder for PNG frames of a path")
    p.add_argument("--size", type=parse_size, default=(1280, 720), help="WIDTHxHEIGHT (default 1280x720)")
    p.add_argument("--path", default=None, help="camera path to render as frames: orbit")
    p.add_argument("--frames", type=int, default=60, help="number of frames of a generated path (default 60)")
    p.add_argument("--fov", type=float, default=60.0, help="vertical field of view in degrees (default 60)")
    p.add_argument("--background", default="0,0,0", help="background R,G,B in [0, 1] (default 0,0,0)")
    p.add_argument("--backend", choices=("auto", "triton", "torch"), default="auto",
                   help="auto: Triton kernels on CUDA, the torch reference pipeline on CPU (faster there)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=run)


def parse_background(text: str) -> tuple[float, float, float]:
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != 3 or not all(0.0 <= v <= 1.0 for v in vals):
        raise CliError(f"--background {text!r}: expected R,G,B with each in [0, 1]")
    return vals  # type: ignore[return-value]


def run(args: argparse.Namespace) -> int:
    import torch
    from PIL import Image

    from renderer import Renderer, RenderSettings, default_camera
    from renderer.trajectory import orbit_path
    from scenes.atomic import atomic_write, check_writable

    if not 0.0 < args.fov < 180.0:
        raise CliError(f"--fov {args.fov}: must be in (0, 180)")
    if args.frames < 1:
        raise CliError(f"--frames {args.frames}: must be at least 1")
    settings = RenderSettings(background=parse_background(args.background))
    width, height = args.size
    if args.path is None:
        if not args.out.lower().endswith(".png"):
            raise CliError(f"--out {args.out}: a single frame is written as .png (use --path for frames)")
        check_writable(args.out, overwrite=args.overwrite)
    elif args.path != "orbit":
        raise CliError(f"--path {args.path!r}: unknown path (available: orbit)")
    else:
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise CliError(f"--out {args.out}: exists and is not a folder")

    t0 = time.perf_counter()
    scene = open_scene(args.scene, args.up)
    renderer = Renderer(scene, backend=args.backend)
    load_s = time.perf_counter() - t0
    where = f"{renderer.device.type}, {'Triton kernels' if renderer.backend == 'triton' else 'torch reference pipeline'}"
    if renderer.backend == "triton" and renderer.device.type == "cpu":
        where += " in the Triton interpreter"
    print(f"scene: {len(scene):,} Gaussians, SH degree {scene.sh_degree}, loaded in {load_s:.2f} s; rendering on {where}")

    def save_png(image_rgba8: torch.Tensor, path: str) -> None:
        rgb = image_rgba8[..., :3].cpu().numpy()
        with atomic_write(path) as f:
            Image.fromarray(np.ascontiguousarray(rgb)).save(f, format="PNG")

    if args.path is None:
        cam = default_camera(scene, width, height, fov_y_deg=args.fov)
        out = renderer.render(cam, settings)
        save_png(out.rgba8, args.out)
        s = out.stats
        print(f"wrote {args.out} ({width}x{height}) in {s.stage_ms['total']:.1f} ms: "
              f"{s.n_visible:,} visible, {s.n_pairs:,} Gaussian-tile pairs")  # fmt: skip
        return 0

    os.makedirs(args.out, exist_ok=True)
    cams = orbit_path(scene, width, height, args.frames, fov_y_deg=args.fov)
    times = []
    for i, cam in enumerate(cams):
        path = os.path.join(args.out, f"frame_{i:05d}.png")
        check_writable(path, overwrite=args.overwrite)
        out = renderer.render(cam, settings)
        times.append(out.stats.stage_ms["total"])
        save_png(out.rgba8, path)
        print(f"\rframe {i + 1}/{len(cams)}  {times[-1]:.1f} ms", end="", flush=True)
    print()
    print(f"wrote {len(cams)} frames ({width}x{height}) to {args.out}/: "
          f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms per frame")  # fmt: skip
    return 0
