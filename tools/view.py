"""`warpsplat view [SCENE]`: the desktop viewer (app/).

    warpsplat view                       # the bundled scene
    warpsplat view scene.ply --size 1920x1080 --up +z

Needs a display and OpenGL 3.3; without them (or without the viewer's packages) it ends with a one-line
message and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from .cli import CliError, add_command
from .common import add_dataparser_argument, add_scene_argument, apply_dataparser_argument, open_scene, parse_size

VIEWER_PACKAGES = (("pyglet", "pyglet"), ("moderngl", "moderngl"), ("imgui_bundle", "imgui-bundle"))


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "view",
        summary="open a scene in an interactive window",
        description="""
            Open a scene in a desktop window and fly through it: W/A/S/D and the mouse move the camera, K adds
            a keyframe, F5 saves the keyframes as a camera path that `warpsplat render --path` plays, F1 lists
            every key. Drop a scene file on the window (or use the Scene panel) to open another. Needs a
            display and OpenGL 3.3. On a CPU, frames take about a second each, so the viewer renders at a
            quarter of the window's size.
        """,
        examples="""
            warpsplat view                                  # the bundled plant scene
            warpsplat view scene.ply --up +z                # a scene whose up axis is +z
            warpsplat view scene.sog --size 1920x1080 --out-dir shots/
            warpsplat view point_cloud.ply --cameras dataset/sparse/0   # snap to COLMAP's cameras ([, ], C)
        """,
    )
    add_scene_argument(p)
    add_dataparser_argument(p)
    p.add_argument("--size", type=parse_size, default=(1280, 720), help="window WIDTHxHEIGHT (default 1280x720)")
    p.add_argument("--backend", choices=("auto", "triton", "torch"), default="auto",
                   help="auto: Triton kernels on CUDA, the torch reference pipeline on CPU")  # fmt: skip
    p.add_argument("--render-scale", type=float, default=None,
                   help="render resolution / window resolution (default 1 on CUDA, 0.25 on CPU)")  # fmt: skip
    p.add_argument("--no-interop", action="store_true", help="copy frames through the host, not CUDA-GL interop")
    p.add_argument("--no-vsync", action="store_true", help="start with vsync off (F3 toggles it)")
    p.add_argument("--out-dir", default=".", help="folder for screenshots and saved camera paths (default .)")
    p.add_argument("--keyframes", default=None, metavar="FILE",
                   help="start with the keyframes of a saved camera path (F5's file, or a nerfstudio "
                        "camera_path.json), to play, edit and save again; dropping such a file on the window "
                        "does the same")  # fmt: skip
    p.add_argument("--cameras", default=None, metavar="PATH",
                   help="training cameras to snap to ([ ] and C): an INRIA cameras.json, a transforms.json or a "
                   "COLMAP model (its folder, a dataset folder with sparse/0, or images.bin/.txt); default: a "
                   "trained-output folder's cameras.json")  # fmt: skip
    p.set_defaults(func=run)


def check_viewer_packages() -> None:
    missing = []
    for module, package in VIEWER_PACKAGES:
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise CliError(f"the viewer needs {', '.join(missing)}: pip install 'warpsplat[viewer]'")


def check_display() -> None:
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
        raise CliError(
            "no display (DISPLAY is not set): run it on a desktop, over ssh -X, or under xvfb-run; "
            "`warpsplat render` makes images without a window"
        )


def open_window(scene, args: argparse.Namespace, name: str):
    """Create the viewer window for the scene called `name`, turning display and GL failures into one-line
    errors."""
    import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

    # isort: split
    import moderngl
    import pyglet
    from pyglet.display.xlib import NoSuchDisplayException

    from app.window import ViewerWindow

    try:
        return ViewerWindow(
            scene, size=args.size, up=args.up, backend=args.backend, render_scale=args.render_scale,
            allow_interop=not args.no_interop, vsync=not args.no_vsync, output_dir=args.out_dir,
            caption=f"warpsplat - {name}", scene_name=name,
        )  # fmt: skip
    except NoSuchDisplayException as e:
        display = os.environ.get("DISPLAY", "")
        raise CliError(f"cannot open the display {display!r} ({e}); a window needs an X server (or Xvfb)") from None
    except (pyglet.window.NoSuchConfigException, pyglet.gl.ContextException, moderngl.Error) as e:
        raise CliError(f"no usable OpenGL 3.3 context: {e}") from None


def run(args: argparse.Namespace) -> int:
    if args.render_scale is not None and not 0.0 < args.render_scale <= 1.0:
        raise CliError(f"--render-scale {args.render_scale}: must be in (0, 1]")
    if not os.path.isdir(args.out_dir):
        raise CliError(f"--out-dir {args.out_dir}: no such folder")
    if args.scene is not None and not os.path.exists(args.scene):
        raise CliError(f"{args.scene}: no such file or folder")
    for flag, path in (("--cameras", args.cameras), ("--keyframes", args.keyframes),
                       ("--dataparser-transforms", args.dataparser_transforms)):  # fmt: skip
        if path is not None and not os.path.exists(path):  # said before 'no display' sends the user elsewhere
            raise CliError(f"{flag} {path}: no such file")
    check_viewer_packages()
    check_display()
    scene = open_scene(args.scene, args.up)
    apply_dataparser_argument(scene, args.dataparser_transforms)
    if args.cameras is not None:
        from renderer.paths import CameraPathError, load_camera_path

        try:
            # a bad file is a one-line error before any window opens
            load_camera_path(args.cameras, dataparser_transforms=scene.extras.get("dataparser_transforms"))
        except (CameraPathError, FileNotFoundError) as e:
            raise CliError(f"--cameras {e}") from None
        scene.extras = dict(scene.extras, cameras=args.cameras)  # the window reads them from there
    if args.keyframes is not None:
        from renderer.paths import CameraPathError, read_keyframes

        try:
            read_keyframes(args.keyframes)  # a bad file is a one-line error before any window opens
        except (CameraPathError, FileNotFoundError) as e:
            raise CliError(f"--keyframes {e}") from None
    from renderer.pipeline import check_scene_fits

    check_scene_fits(scene, None, args.size)  # before a window opens (the viewer renders where a Renderer would)
    name = os.path.basename(args.scene) if args.scene else "bundled scene"
    window = open_window(scene, args, name)
    if args.keyframes is not None:
        window.open_camera_file(args.keyframes)
    import pyglet

    try:
        pyglet.app.run(interval=window.redraw_interval)
    finally:
        window.shutdown()
    return 0
