"""`warpsplat convert IN OUT`: convert a scene between formats, optionally dropping SH bands or faint Gaussians,
or turning it so that its up axis becomes the PLY frame's (`--up`).

The output format follows OUT's extension (`.ply`, `.compressed.ply`, `.spz` v3 or v4, `.sog`, `.glb`,
`.splat`). The output is written atomically and an existing file is kept unless `--overwrite` is given. A progress
bar (tqdm, on a terminal) shows the read / filter / write stages for inputs over PROGRESS_MIN_BYTES.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import TYPE_CHECKING

from .cli import CliError, add_command, note
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
            dropping SH bands, faint Gaussians or those outside a box. OUT is written under a temporary name and
            renamed when complete; an existing OUT is kept unless --overwrite is given.
        """,
        examples="""
            warpsplat convert scene.ply scene.spz                  # Niantic's compressed format
            warpsplat convert scene.ply scene.sog --check          # PlayCanvas's, for the web; what it costs
            warpsplat convert scene.ply scene.glb                  # glTF, KHR_gaussian_splatting
            warpsplat convert scene.ply small.ply --sh-degree 1 --min-opacity 0.01
            warpsplat convert scene.ply trimmed.ply --crop-box=-2,-3,-2,2,1,2  # keep centres inside the box
            warpsplat convert output/ scene.splat --iteration 7000  # from a trainer's output folder
            warpsplat convert old.ksplat scene.ply                 # GaussianSplats3D's (read only)
            warpsplat convert ckpts/ckpt_29999_rank0.pt scene.ply  # a gsplat training checkpoint
            warpsplat convert nerfstudio_models/step-000029999.ckpt scene.ply  # nerfstudio's splatfacto
        """,
    )
    p.add_argument("input", metavar="IN", help="scene file or trained-output folder")
    p.add_argument("output", metavar="OUT", help="output file; its extension picks the format")
    p.add_argument("--sh-degree", type=int, default=None, help="keep SH bands up to this degree (0-3)")
    p.add_argument("--min-opacity", type=float, default=None, help="drop Gaussians with opacity below this (0-1)")
    p.add_argument(
        "--crop-box",
        default=None,
        metavar="X0,Y0,Z0,X1,Y1,Z1",
        help="keep the Gaussians whose centres lie in this box, in IN's own coordinates (before --up); "
        "`warpsplat info` prints the box of the middle 98%% of the centres, a start for trimming floaters",
    )
    p.add_argument(
        "--iteration", type=int, default=None, help="trainer output folder: iteration to read (default: latest)"
    )
    p.add_argument(
        "--up",
        default=None,
        help="the scene's up axis (as for view and render: +y, +z, -x, ..., or a direction X,Y,Z); the output is "
        "turned so that it "
        "points -y, the PLY frame's up. SPZ files written by splat-transform load upside down: --up +y fixes them",
    )
    p.add_argument(
        "--spz-version", type=int, choices=(3, 4), default=None, help="SPZ output: 3 (gzip, read everywhere) or 4"
    )
    p.add_argument("--check", action="store_true",
                   help="read OUT back and render it against the scene it was written from (after the filters and "
                        "--up): 4 orbit views at 256x192, on the GPU where there is one; prints their "
                        "PSNR, what the format's quantisation costs")  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_mkdir_argument(p, "OUT")
    p.set_defaults(func=run)


def _input_bytes(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def parse_box(text: str) -> tuple[list[float], list[float]]:
    """--crop-box's six numbers as (low corner, high corner), or CliError."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 6 or not all(math.isfinite(v) for v in values):
        raise CliError(f"--crop-box {text}: expected six numbers X0,Y0,Z0,X1,Y1,Z1")
    low, high = values[:3], values[3:]
    if any(a > b for a, b in zip(low, high, strict=True)):
        raise CliError(f"--crop-box {text}: each of X0,Y0,Z0 must be at most its X1,Y1,Z1")
    return low, high


def filter_scene(
    scene: GaussianScene, *, sh_degree: int | None, min_opacity: float | None, box=None
) -> tuple[GaussianScene, list[str]]:
    """Apply --sh-degree, --min-opacity and --crop-box (`box`: parse_box's corners; one mask): (the scene, what
    was dropped for which reason)."""
    import torch

    if sh_degree is not None and sh_degree < scene.sh_degree:
        scene = scene.with_sh_degree(sh_degree)
    keep = torch.ones(len(scene), dtype=torch.bool)
    dropped = []
    if box is not None:
        low, high = (torch.tensor(c, dtype=scene.means.dtype) for c in box)
        inside = ((scene.means >= low) & (scene.means <= high)).all(1)
        dropped += [f"{int((~inside).sum()):,} outside the crop box"] if not bool(inside.all()) else []
        keep &= inside
    if min_opacity is not None and min_opacity > 0:
        opaque = torch.sigmoid(scene.opacity_logits) >= min_opacity
        faint = int((keep & ~opaque).sum())
        dropped += [f"{faint:,} below opacity {min_opacity}"] if faint else []
        keep &= opaque
    n_keep = int(keep.sum())
    if n_keep == 0:
        asked = (("--crop-box", box is not None), ("--min-opacity", bool(min_opacity)))
        what = " and ".join(flag for flag, on in asked if on)
        raise CliError(f"{what} removes all {len(scene):,} Gaussians")
    return (scene.subset(keep) if n_keep < len(scene) else scene), dropped


CHECK_VIEWS, CHECK_SIZE = 4, (256, 192)


FIELDS = ("means", "quats", "log_scales", "opacity_logits", "sh")


def _largest_change(scene: GaussianScene, back: GaussianScene) -> str:
    """The field that changed most between `scene` and `back` (of one count), and by how much."""
    if len(back) != len(scene):
        return f"{len(back):,} Gaussians read of {len(scene):,}"
    changes = []
    for f in FIELDS:
        a, b = getattr(scene, f), getattr(back, f)
        if a.shape != b.shape:
            return f"{f} {tuple(a.shape)} read as {tuple(b.shape)}"
        d = (a.double() - b.double()).abs().nan_to_num(nan=math.inf)
        changes.append((float(d.max()) if d.numel() else 0.0, f))
    d, f = max(changes)
    return f"{f} by up to {d:.3g}"


def check_written(scene: GaussianScene, path: str) -> str:
    """`--check`: the file at `path` read back and compared with `scene`, the scene it was written from: field by
    field, and where any value changed, rendered against it on CHECK_VIEWS cameras of an orbit at CHECK_SIZE. One
    line: bit for bit, or the views' PSNR, with the largest change where the views are identical (the renderer keeps
    SH in float16, so a writer that rounded SH that far would render identically: the fields say it)."""
    import torch

    from renderer import Renderer, RenderSettings
    from renderer.paths import orbit_path
    from scenes.io import load_scene

    from .metrics import psnr

    back = load_scene(path)
    if len(back) == len(scene) and all(torch.equal(getattr(back, f), getattr(scene, f)) for f in FIELDS):
        return f"checked: {path} reads back bit for bit ({len(scene):,} Gaussians, every field)"
    cams = orbit_path(scene, *CHECK_SIZE, CHECK_VIEWS)
    ours, theirs = Renderer(scene, frame_size=CHECK_SIZE), Renderer(back, frame_size=CHECK_SIZE)
    settings = RenderSettings(outputs="float")
    values = []
    for cam in cams:
        want = ours.render(cam, settings).image.clone()  # each renderer's buffers hold its next frame
        values.append(psnr(theirs.render(cam, settings).image, want))
    where = f"{len(cams)} orbit views at {CHECK_SIZE[0]}x{CHECK_SIZE[1]}"
    if all(math.isinf(v) for v in values):
        return (f"checked: {path} reads back and renders identically ({where}), its values changed: "
                f"{_largest_change(scene, back)}")  # fmt: skip
    return f"checked: {path} reads back and renders at {psnr_range(values)} against the scene written ({where})"


def psnr_range(values: list[float]) -> str:
    """'41.2 dB PSNR', '-73.3 to -66.5 dB PSNR', '38.0 to 52.1 dB PSNR, 2 of 4 views identical' (inf: identical)."""
    finite = [v for v in values if not math.isinf(v)]
    lo, hi = min(finite), max(finite)
    text = f"{lo:.1f} dB PSNR" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f} to {hi:.1f} dB PSNR"
    same = len(values) - len(finite)
    return text + (f", {same} of {len(values)} views identical" if same else "")


def run(args: argparse.Namespace) -> int:
    from scenes.atomic import check_writable
    from scenes.io import format_for_path, load_scene, save_scene

    src, dst = args.input, args.output
    if args.sh_degree is not None and not 0 <= args.sh_degree <= 3:
        raise CliError(f"--sh-degree {args.sh_degree}: must be 0-3")
    if args.min_opacity is not None and not 0 <= args.min_opacity <= 1:
        raise CliError(f"--min-opacity {args.min_opacity}: must be between 0 and 1")
    box = parse_box(args.crop_box) if args.crop_box is not None else None
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
    if os.path.exists(dst) and os.path.samefile(src, dst):  # before check_writable, whose hint is --overwrite
        raise CliError(f"{dst}: output is the input file")
    check_writable(dst, overwrite=args.overwrite, make_parent=args.mkdir)

    from tqdm import tqdm

    t0 = time.perf_counter()
    show = _input_bytes(src) >= PROGRESS_MIN_BYTES
    with tqdm(total=3, desc="reading", unit="stage", disable=not show or None, file=sys.stderr, leave=False) as bar:
        if args.iteration is not None and not os.path.isdir(src):
            raise CliError(f"--iteration applies to trainer output folders; {src} is a file")
        scene = load_scene(src) if args.iteration is None else load_scene(src, iteration=args.iteration)
        read = scene.extras.get("point_cloud")  # the file a trainer folder's scene came from
        if read is not None and os.path.exists(dst) and os.path.samefile(read, dst):
            raise CliError(f"{dst}: output is the input file (the point_cloud.ply that {src} holds)")
        degree_in = scene.sh_degree
        bar.set_description("filtering")
        bar.update()
        if args.sh_degree is not None and args.sh_degree > degree_in:
            note(f"{src} has SH degree {degree_in}; nothing to drop for --sh-degree {args.sh_degree}")
        scene, dropped = filter_scene(scene, sh_degree=args.sh_degree, min_opacity=args.min_opacity, box=box)
        if up is not None:
            from scenes.rotate import turn_up

            scene = turn_up(scene, up)
        bar.set_description(f"writing {fmt.name}")
        bar.update()
        if fmt.name in SH_LESS_FORMATS and scene.sh_degree > 0:
            note(f".{fmt.name} holds no SH bands; degree {scene.sh_degree} -> 0")
        if fmt.name in FLAGLESS_FORMATS and scene.antialiased:
            note(f".{fmt.name} has no field for the scene's Mip-Splatting (antialiased) flag: viewers will show it "
                 "without its opacity compensation")  # fmt: skip
        options = {"version": args.spz_version or 3} if fmt.name == "spz" else {}
        if fmt.name == "sog":  # its SH palette takes the time: the bar says how far it is
            options["progress"] = lambda step, done: bar.set_postfix_str(f"{step} {done:.0%}", refresh=False)
        save_scene(scene, dst, **options)
        bar.update()
    dt = time.perf_counter() - t0
    print(
        f"wrote {dst}: {len(scene):,} Gaussians"
        + (f" ({', '.join(dropped)} dropped)" if dropped else "")
        + f", SH degree {0 if fmt.name in SH_LESS_FORMATS else scene.sh_degree}, {os.path.getsize(dst) / 2**20:.1f} MiB"
        f" in {dt:.2f} s"
    )
    if args.check:
        print(check_written(scene, dst))
    return 0
