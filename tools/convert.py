"""`warpsplat convert IN OUT`: convert a scene between formats, optionally dropping SH bands or faint Gaussians,
or turning it so that its up axis becomes the PLY frame's (`--up`).

The output format follows OUT's extension (`.ply`, `.compressed.ply`, `.spz` v3 or v4, `.sog`, `.glb`,
`.splat`). The output is written atomically and an existing file is kept unless `--overwrite` is given. A progress
bar (tqdm, on a terminal) shows the read / filter / write stages for inputs over PROGRESS_MIN_BYTES.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

from .cli import CliError, add_command
from .common import add_mkdir_argument

if TYPE_CHECKING:
    from scenes import GaussianScene

PROGRESS_MIN_BYTES = 32 << 20  # smaller files convert in well under a second: no bar
# Formats that hold no SH beyond the DC colour (the rest is dropped, with a note).
SH_LESS_FORMATS = {"splat"}
# Formats with no field for the Mip-Splatting flag (`GaussianScene.antialiased`): it is dropped, with a note.
FLAGLESS_FORMATS = {"splat", "glb"}


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "convert",
        summary="convert a scene to another format (.ply, .compressed.ply, .spz, .sog, .glb, .splat)",
        description="""
            Read a scene in any supported format and write it in the format OUT's extension names, optionally
            dropping SH bands or faint Gaussians. OUT is written under a temporary name and renamed when
            complete; an existing OUT is kept unless --overwrite is given.
        """,
        examples="""
            warpsplat convert scene.ply scene.spz                  # Niantic's compressed format
            warpsplat convert scene.ply scene.sog                  # PlayCanvas's, for SuperSplat and the web
            warpsplat convert scene.ply scene.glb                  # glTF, KHR_gaussian_splatting
            warpsplat convert scene.ply small.ply --sh-degree 1 --min-opacity 0.01
            warpsplat convert output/ scene.splat --iteration 7000  # from a trainer's output folder
        """,
    )
    p.add_argument("input", metavar="IN", help="scene file or trained-output folder")
    p.add_argument("output", metavar="OUT", help="output file; its extension picks the format")
    p.add_argument("--sh-degree", type=int, default=None, help="keep SH bands up to this degree (0-3)")
    p.add_argument("--min-opacity", type=float, default=None, help="drop Gaussians with opacity below this (0-1)")
    p.add_argument(
        "--iteration", type=int, default=None, help="trainer output folder: iteration to read (default: latest)"
    )
    p.add_argument(
        "--up",
        default=None,
        help="the scene's up axis (as for view and render: +y, +z, -x, ...); the output is turned so that it "
        "points -y, the PLY frame's up. SPZ files written by splat-transform load upside down: --up +y fixes them",
    )
    p.add_argument(
        "--spz-version", type=int, choices=(3, 4), default=None, help="SPZ output: 3 (gzip, read everywhere) or 4"
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_mkdir_argument(p, "OUT")
    p.set_defaults(func=run)


def _input_bytes(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def filter_scene(scene: GaussianScene, *, sh_degree: int | None, min_opacity: float | None) -> GaussianScene:
    """Apply --sh-degree and --min-opacity (vectorised; one mask)."""
    import torch

    if sh_degree is not None and sh_degree < scene.sh_degree:
        scene = scene.with_sh_degree(sh_degree)
    if min_opacity is not None and min_opacity > 0:
        keep = torch.sigmoid(scene.opacity_logits) >= min_opacity
        n_keep = int(keep.sum())
        if n_keep == 0:
            raise CliError(f"--min-opacity {min_opacity} removes all {len(scene):,} Gaussians")
        if n_keep < len(scene):
            scene = scene.subset(keep)
    return scene


def run(args: argparse.Namespace) -> int:
    from scenes.atomic import check_writable
    from scenes.io import format_for_path, load_scene, save_scene

    src, dst = args.input, args.output
    if args.sh_degree is not None and not 0 <= args.sh_degree <= 3:
        raise CliError(f"--sh-degree {args.sh_degree}: must be 0-3")
    if args.min_opacity is not None and not 0 <= args.min_opacity <= 1:
        raise CliError(f"--min-opacity {args.min_opacity}: must be between 0 and 1")
    if not os.path.exists(src):
        raise CliError(f"{src}: no such file or folder")
    fmt = format_for_path(dst, for_write=True)  # fail on an unknown extension before the long read
    if args.spz_version is not None and fmt.name != "spz":
        raise CliError(f"--spz-version applies to .spz outputs, not {dst}")
    up = None
    if args.up is not None:
        from renderer import up_vector

        try:
            up = up_vector(args.up)
        except ValueError as e:
            raise CliError(str(e)) from None
    check_writable(dst, overwrite=args.overwrite, make_parent=args.mkdir)
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise CliError(f"{dst}: output is the input file")

    from tqdm import tqdm

    t0 = time.perf_counter()
    show = _input_bytes(src) >= PROGRESS_MIN_BYTES
    with tqdm(total=3, desc="reading", unit="stage", disable=not show or None, file=sys.stderr, leave=False) as bar:
        if args.iteration is not None and not os.path.isdir(src):
            raise CliError(f"--iteration applies to trainer output folders; {src} is a file")
        scene = load_scene(src) if args.iteration is None else load_scene(src, iteration=args.iteration)
        n_in, degree_in = len(scene), scene.sh_degree
        bar.set_description("filtering")
        bar.update()
        if args.sh_degree is not None and args.sh_degree > degree_in:
            print(f"note: {src} has SH degree {degree_in}; nothing to drop for --sh-degree {args.sh_degree}",
                  file=sys.stderr)  # fmt: skip
        scene = filter_scene(scene, sh_degree=args.sh_degree, min_opacity=args.min_opacity)
        if up is not None:
            from scenes.rotate import turn_up

            scene = turn_up(scene, up)
        bar.set_description(f"writing {fmt.name}")
        bar.update()
        if fmt.name in SH_LESS_FORMATS and scene.sh_degree > 0:
            print(f"note: .{fmt.name} holds no SH bands; degree {scene.sh_degree} -> 0", file=sys.stderr)
        if fmt.name in FLAGLESS_FORMATS and scene.antialiased:
            print(f"note: .{fmt.name} has no field for the scene's Mip-Splatting (antialiased) flag: viewers will "
                  "show it without its opacity compensation", file=sys.stderr)  # fmt: skip
        options = {"version": args.spz_version or 3} if fmt.name == "spz" else {}
        if fmt.name == "sog":  # its SH palette takes the time: the bar says how far it is
            options["progress"] = lambda step, done: bar.set_postfix_str(f"{step} {done:.0%}", refresh=False)
        save_scene(scene, dst, **options)
        bar.update()
    dt = time.perf_counter() - t0
    dropped = n_in - len(scene)
    print(
        f"wrote {dst}: {len(scene):,} Gaussians"
        + (f" ({dropped:,} below opacity {args.min_opacity} dropped)" if dropped else "")
        + f", SH degree {0 if fmt.name in SH_LESS_FORMATS else scene.sh_degree}, {os.path.getsize(dst) / 2**20:.1f} MiB"
        f" in {dt:.2f} s"
    )
    return 0
