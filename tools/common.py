"""Argument parsing helpers shared by the subcommands (no torch at import: see tools/cli.py)."""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING

from .cli import CliError

if TYPE_CHECKING:
    from scenes import GaussianScene


def parse_size(text: str) -> tuple[int, int]:
    """'WxH' -> (W, H), with a one-line error for anything else or absurd sizes."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (e.g. 1920x1080)")
    from renderer import MAX_IMAGE_SIDE

    w, h = int(m.group(1)), int(m.group(2))
    if not (1 <= w <= MAX_IMAGE_SIDE and 1 <= h <= MAX_IMAGE_SIDE):
        raise argparse.ArgumentTypeError(f"{text!r}: each side must be between 1 and {MAX_IMAGE_SIDE} pixels")
    return w, h


def add_scene_argument(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    help_text = "scene file or trained-output folder"
    if required:
        parser.add_argument("scene", help=help_text)
    else:
        parser.add_argument("scene", nargs="?", default=None, help=help_text + " (default: the bundled plant scene)")
    parser.add_argument("--up", default=None,
                        help="world up axis of the scene: -y (INRIA default), +y, +z, ..., or a direction X,Y,Z "
                             "(the viewer's L key levels a tilted capture and shows it)")  # fmt: skip


def open_scene(path: str | None, up: str | None = None) -> GaussianScene:
    """Load the scene a command names (or the bundled one), applying --up."""
    from scenes import bundled_scene_path, load_scene

    if path is None:
        path = str(bundled_scene_path())
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file or folder")
    scene = load_scene(path)
    if up is not None:
        from renderer import up_vector

        try:
            up_vector(up)
        except ValueError as e:
            raise CliError(str(e)) from None
        scene.up_axis = up
    return scene


def add_dataparser_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataparser-transforms", default=None, metavar="FILE",
                        help="nerfstudio's dataparser_transforms.json, for a PLY that ns-export wrote: a dataset's "
                        "cameras (transforms.json, a COLMAP model) are taken into its world (a splatfacto run's "
                        "checkpoint or folder finds its own)")  # fmt: skip


def apply_dataparser_argument(scene: GaussianScene, path: str | None) -> None:
    """--dataparser-transforms: checked, and kept where the camera-path code looks (`scene.extras`, as a splatfacto
    checkpoint keeps its own)."""
    if path is None:
        return
    from renderer.paths import CameraPathError, read_dataparser_transforms

    if not os.path.isfile(path):
        raise CliError(f"--dataparser-transforms {path}: no such file")
    try:
        read_dataparser_transforms(path)
    except (CameraPathError, FileNotFoundError) as e:
        raise CliError(f"--dataparser-transforms {e}") from None
    scene.extras = dict(scene.extras, dataparser_transforms=path)


def add_mkdir_argument(parser: argparse.ArgumentParser, what: str = "the outputs") -> None:
    parser.add_argument(
        "--mkdir",
        action="store_true",
        help=f"create missing folders above {what} (without it a missing folder is an error, so a typo in a "
        "folder name is caught rather than silently created)",
    )
