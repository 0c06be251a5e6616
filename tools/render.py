"""`warpsplat render`: render one image, or a camera path to an H.264 video or a folder of PNG frames.

    warpsplat render [SCENE] --size 1280x720 --out image.png
    warpsplat render [SCENE] --path orbit --frames 120 --fps 30 --out orbit.mp4
    warpsplat render [SCENE] --path flythrough --frames 600 --size 1920x1080 --crf 18 --out fly.mp4
    warpsplat render [SCENE] --path camera_path.json --out video.mp4        (nerfstudio, or the viewer's file)
    warpsplat render [SCENE] --path cameras.json --frames 300 --out frames/  (INRIA training cameras)
    warpsplat render [SCENE] --path dataset/sparse/0 --out frames/          (COLMAP's cameras, a frame each)
    warpsplat render [SCENE] --path spiral --out frames/ --resume          (continue a killed frame render)
    warpsplat render [SCENE] --path orbit --out orbit.mp4 --workers 2      (one process per GPU, stitched)

No window and no GL: this module never imports `app/`. Paths come from `renderer.paths` (generated or read
from a file); rendering the frames from `tools.render_jobs`, video encoding from `tools.video` (PyAV).
Outputs are written under temporary names and renamed when complete; PNG frames one by one, so `--resume`
skips the frames present.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import signal
import sys
import time

import numpy as np

from .cli import CliError, add_command
from .common import (
    add_dataparser_argument,
    add_mkdir_argument,
    add_scene_argument,
    apply_dataparser_argument,
    open_scene,
    parse_size,
)
from .render_jobs import (
    Job,
    finish_video,
    frame_name,
    path_depth_range,
    render_job,
    run_workers,
    straight_rgba8,
    summary,
    to_rgba8,
)
from .video import DEFAULT_PRESET, DEFAULT_THREADING, DEFAULT_THREADS, THREADINGS, X264_PRESETS

GENERATED_PATHS = ("orbit", "spiral", "flythrough")
QUALITY_CRF = {"draft": 28, "good": 23, "high": 18, "lossless": 0}
DEFAULT_SIZE = (1280, 720)
DEFAULT_FOV = 60.0  # degrees, vertical
MANIFEST = "render.json"  # in a frame folder: what was being rendered, so --resume can check it is the same


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "render",
        summary="render an image, a video or PNG frames of a camera path (no window, no GL)",
        description="""
            Render the scene's default view to a PNG, or a camera path to an H.264 video (--out *.mp4) or a
            folder of PNG frames. A path is generated (orbit, spiral, flythrough, sized to the scene) or read
            from a .json file (a path saved by `warpsplat view`, a nerfstudio camera_path.json or an INRIA
            cameras.json) or a COLMAP model (the cameras the scene was trained from). Runs without a display;
            outputs are renamed into place only when complete.
        """,
        examples="""
            warpsplat render --out plant.png                              # the bundled scene, 1280x720
            warpsplat render scene.ply --path orbit --frames 120 --out orbit.mp4
            warpsplat render scene.ply --path camera_path.json --out path.mp4  # a path saved in the viewer
            warpsplat render scene.ply --path spiral --out frames/ --resume   # continue a killed render
            warpsplat render scene.ply --path dataset/sparse/0 --out views/  # the training views, a PNG each
            warpsplat render scene.ply --path orbit --ortho --out turntable.mp4  # no perspective
            warpsplat render scene.ply --path camera_path.json --frame 0 --size 3840x2160 --out still.png
        """,
    )
    add_scene_argument(p)
    add_dataparser_argument(p)
    p.add_argument(
        "--out",
        required=True,
        help="image.png (one frame), video.mp4 (H.264) or a folder (PNG frames of a path)",
    )
    p.add_argument(
        "--size",
        type=parse_size,
        default=None,
        help="WIDTHxHEIGHT (default 1280x720, or the size a camera path file gives)",
    )
    p.add_argument(
        "--path",
        default=None,
        help="camera path: orbit, spiral, flythrough, a .json file (nerfstudio camera_path.json, "
        "the viewer's keyframe file, INRIA cameras.json, a dataset's transforms.json) or a COLMAP model (its "
        "folder, a dataset folder with sparse/0, or images.bin/.txt): one frame per image",
    )
    p.add_argument(
        "--frames",
        type=int,
        default=None,
        help="number of frames (default 60 for generated paths; a path file's own count). A path file is "
        "re-sampled to N frames over its own duration, so its frame rate becomes N / duration unless --fps is given",
    )
    p.add_argument("--fps", type=float, default=None,
                   help="video frame rate (default 30 for generated paths; a path file's own rate)")  # fmt: skip
    p.add_argument("--turns", type=float, default=None, help="revolutions of orbit (default 1) and spiral (2)")
    p.add_argument("--radius", type=float, default=None, help="orbit radius in world units (default: framing)")
    p.add_argument("--rise", type=float, default=None, help="orbit height above the look-at point (world units)")
    p.add_argument(
        "--fov",
        type=float,
        default=None,
        help=f"vertical field of view of generated paths and the default view (default {DEFAULT_FOV:g})",
    )
    p.add_argument("--ortho", action="store_true",
                   help="an orthographic projection: each frame shows at every depth what its camera shows at the "
                        "depth of the scene's centre (no perspective: parallel lines stay parallel)")  # fmt: skip
    p.add_argument("--background", default="0,0,0", help="background R,G,B in [0, 1] (default 0,0,0)")
    p.add_argument("--transparent", action="store_true",
                   help="PNG outputs with an alpha channel: the scene over nothing, its colour straight (not "
                        "premultiplied), for compositing; not for H.264 (see --alpha-video)")  # fmt: skip
    p.add_argument("--blend-precision", choices=("fp16", "fp32"), default="fp16",
                   help="the rasterizer's blending on a GPU: fp16 pairs, as HiGS blends (the default: 70-83 dB "
                        "against float32's frames, faster), or float32 throughout (90-102 dB against gsplat "
                        "1.5.3)")  # fmt: skip
    p.add_argument("--adagscale-tau", type=float, default=None, metavar="TAU",
                   help="AdaGScale on, with this quality knob (lossy; 0.1 is the default tau, the most a Gaussian may "
                        "drop; dense views use less; 0 is exact)")  # fmt: skip
    p.add_argument("--temporal", type=int, default=0, metavar="K",
                   help="temporal reuse: one cull pass per K frames (0: off) from the path's known cameras "
                        "(exact), used while it measures faster than plain frames")  # fmt: skip
    p.add_argument(
        "--backend",
        choices=("auto", "triton", "torch"),
        default="auto",
        help="auto: Triton kernels on CUDA, the torch reference pipeline on CPU (faster there)",
    )
    v = p.add_argument_group("video (--out *.mp4)")
    v.add_argument("--crf", type=int, default=None, help="x264 constant rate factor 0..51 (default 18)")
    v.add_argument(
        "--quality",
        choices=tuple(QUALITY_CRF),
        default=None,
        help="named crf: " + ", ".join(f"{k}={c}" for k, c in QUALITY_CRF.items()),
    )
    # checked in check_numbers rather than by argparse's choices, for a one-line error
    v.add_argument(
        "--preset",
        default=DEFAULT_PRESET,
        metavar="PRESET",
        help=f"x264 speed preset: {', '.join(X264_PRESETS)} (default {DEFAULT_PRESET}). Faster presets "
        "encode faster at the same crf, in larger files",
    )
    v.add_argument(
        "--encoder-threads",
        type=int,
        default=DEFAULT_THREADS,
        metavar="N",
        help=f"x264 threads per video, 0 = libx264 chooses from the cores (default {DEFAULT_THREADS}); "
        "with --workers, 0 shares the cores among the workers",
    )
    v.add_argument(
        "--encoder-threading",
        default=DEFAULT_THREADING,
        metavar="HOW",
        help=f"how x264 uses its threads: frame (several frames at once) or slice (one slice of each frame per "
        f"thread) (default {DEFAULT_THREADING})",
    )
    v.add_argument(
        "--odd-size",
        choices=("refuse", "pad"),
        default="refuse",
        help="H.264 needs even sizes: refuse odd ones (default) or pad them by one edge pixel",
    )
    v.add_argument(
        "--alpha-video",
        default=None,
        metavar="ALPHA.mp4",
        help="also write the coverage (alpha) as a greyscale H.264 video",
    )
    v.add_argument(
        "--depth-video",
        default=None,
        metavar="DEPTH.mp4",
        help="also write the expected depth as a greyscale H.264 video (near = white, far = dark, nothing = black; "
        "one linear range for the whole path, from the cameras' distances to the scene)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes, each rendering a contiguous chunk of frames (one per GPU on CUDA)",
    )
    p.add_argument("--frame", type=int, default=None, metavar="K",
                   help="with --path and --out IMAGE.png: render the path's frame K alone (0 is its first, as in "
                        "frame_00000.png), at --size: a still of a saved view at any size")  # fmt: skip
    p.add_argument("--name-frames", action="store_true",
                   help="name PNG frames after the images of the path's cameras (INRIA cameras.json, a COLMAP "
                        "model; one frame each): DSC08000.JPG's frame is DSC08000.png, to compare with the "
                        "photos")  # fmt: skip
    p.add_argument("--compare-to", default=None, metavar="IMAGES",
                   help="with --name-frames: compare each frame with the photo of its image in this folder (the "
                        "dataset's images/, names as the camera file gives them) and print their PSNR and "
                        "SSIM")  # fmt: skip
    p.add_argument("--resume", action="store_true", help="continue a frame-folder render, skipping frames present")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_mkdir_argument(p, "--out and the side videos (a frame folder itself is always created)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace):
    """RenderSettings from the command line: background and the renderer's switches."""
    from renderer import RenderSettings
    from renderer.settings import MAX_TEMPORAL_WINDOW

    # the two switches checked here, so that the message names the flag rather than the settings field
    if args.adagscale_tau is not None and not args.adagscale_tau >= 0:
        raise CliError(f"--adagscale-tau {args.adagscale_tau}: must be 0 (exact) or more")
    if not 0 <= args.temporal <= MAX_TEMPORAL_WINDOW:
        raise CliError(f"--temporal {args.temporal}: must be 0 (off) to {MAX_TEMPORAL_WINDOW} frames per cull pass")
    settings = RenderSettings(
        background=parse_background(args.background),
        adagscale=args.adagscale_tau is not None,
        temporal_window=args.temporal,
        ortho=args.ortho,
        blend_precision=args.blend_precision,
    )
    if args.adagscale_tau is not None:
        settings.adagscale_tau = args.adagscale_tau
    try:
        return settings.validate()
    except ValueError as e:
        raise CliError(str(e)) from None


def parse_background(text: str) -> tuple[float, float, float]:
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != 3 or not all(0.0 <= v <= 1.0 for v in vals):
        raise CliError(f"--background {text!r}: expected R,G,B with each in [0, 1]")
    return vals  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ the plan


def crf_from_args(args: argparse.Namespace) -> int:
    if args.crf is not None and args.quality is not None:
        raise CliError("--crf and --quality: give one of them")
    crf = QUALITY_CRF[args.quality] if args.quality else (18 if args.crf is None else args.crf)
    if not 0 <= crf <= 51:
        raise CliError(f"--crf {crf}: must be in 0..51")
    return crf


def ortho_views(cams, scene) -> list:
    """The cameras made orthographic (`--ortho`): each at the scale it has at the depth of the scene's centre (the
    framing sphere's), or at a tenth of the sphere's radius where the centre is nearer or behind it."""
    from renderer import orthographic
    from renderer.camera import framing_sphere

    centre, radius = framing_sphere(scene)
    return [orthographic(c, max(float((centre - c.position) @ c.T_world_camera[:3, 2]), 0.1 * radius)) for c in cams]


def build_cameras(args: argparse.Namespace, scene) -> tuple[list, float, str]:
    """The path's cameras, its frame rate, and a one-line description (the images the cameras were taken for, where
    the path file names them, go to `args.image_names`)."""
    args.image_names = []
    cams, fps, what = _path_cameras(args, scene)
    if args.ortho:
        cams, what = ortho_views(cams, scene), what + ", orthographic"
    return cams, fps, what


def frame_names(args: argparse.Namespace, n: int) -> list[str]:
    """The PNG names of a path's n frames: frame_00000.png, ..., or with --name-frames the images' (their stems,
    folders joined by _), checked to be one each and distinct."""
    if not args.name_frames:
        return [frame_name(i) for i in range(n)]
    if len(args.image_names) != n:
        raise CliError("--name-frames: the path names no image for each frame (it takes INRIA's cameras.json, a "
                       "transforms.json or a COLMAP model, one frame each: no --frames)")  # fmt: skip
    names = [os.path.splitext(name.replace("\\", "/"))[0].replace("/", "_") + ".png" for name in args.image_names]
    if len(set(names)) != n:
        raise CliError("--name-frames: two images of the path have the same name")
    return names


def _path_cameras(args: argparse.Namespace, scene) -> tuple[list, float, str]:
    from renderer.paths import CameraPathError, flythrough_path, load_camera_path, orbit_path, spiral_path

    width, height = args.size or DEFAULT_SIZE
    if args.path in GENERATED_PATHS:
        n = 60 if args.frames is None else args.frames
        fps = 30.0 if args.fps is None else args.fps
        common = dict(up=args.up, fov_y_deg=DEFAULT_FOV if args.fov is None else args.fov)
        try:
            if args.path == "orbit":
                cams = orbit_path(
                    scene,
                    width,
                    height,
                    n,
                    turns=1.0 if args.turns is None else args.turns,
                    radius=args.radius,
                    rise=args.rise,
                    **common,
                )
            elif args.path == "spiral":
                cams = spiral_path(scene, width, height, n, turns=2.0 if args.turns is None else args.turns, **common)
            else:
                cams = flythrough_path(scene, width, height, n, **common)
        except ValueError as e:
            raise CliError(f"--path {args.path}: {e}") from None
        return cams, fps, f"{args.path}, {n} frames"
    if not args.path.lower().endswith(".json") and not os.path.exists(args.path):
        raise CliError(
            f"--path {args.path!r}: not a generated path ({', '.join(GENERATED_PATHS)}), a .json file or a COLMAP model"
        )
    if not os.path.exists(args.path):
        raise CliError(f"--path {args.path}: no such file")
    size = args.size or (None, None)
    world = dict(dataparser_transforms=scene.extras.get("dataparser_transforms"))
    try:
        cp = load_camera_path(args.path, width=size[0], height=size[1], n_frames=args.frames, **world)
    except CameraPathError as e:
        raise CliError(str(e)) from None
    fps = cp.fps if args.fps is None else args.fps
    args.image_names = cp.names
    what = f"{cp.kind} from {args.path}, {len(cp.cameras)} frames"
    if args.frames is not None:
        # say what --frames did to a timed path: same duration, so a different frame rate unless --fps is given
        native = load_camera_path(args.path, width=size[0], height=size[1], **world)
        if len(native.cameras) != args.frames:
            seconds = len(native.cameras) / native.fps
            what += f" re-sampled from the file's {len(native.cameras)} over its {seconds:g} s"
            if args.fps is None:
                what += " (--fps sets another rate)"
    if cp.notes:
        what += f" ({'; '.join(cp.notes)})"
    return cp.cameras, fps, what


def cameras_digest(cams) -> str:
    """A fingerprint of the cameras (poses, intrinsics), to tell whether --resume continues the same path."""
    h = hashlib.sha256()
    for c in cams:
        h.update(np.round(np.concatenate([c.T_world_camera.reshape(-1), [c.fx, c.fy, c.cx, c.cy]]), 9).tobytes())
        h.update(f"{c.width}x{c.height}".encode())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ the command


def run(args: argparse.Namespace) -> int:
    from renderer.pipeline import check_scene_fits

    check_numbers(args)
    check_flags_apply(args)
    check_output_names(args)
    settings = settings_from_args(args)
    if args.path is None or args.frame is not None:
        return render_image(args)
    is_video = check_path_outputs(args)
    crf = crf_from_args(args)
    t0 = time.perf_counter()
    scene = open_scene(args.scene, args.up)
    apply_dataparser_argument(scene, args.dataparser_transforms)
    cams, fps, what = build_cameras(args, scene)
    width, height = cams[0].width, cams[0].height
    note = odd_size_note(args, width, height, is_video)
    cuda, backend = where_to_render(args)
    check_scene_fits(scene, None if cuda else "cpu", (width, height))  # before the folder, the encoder, the workers
    if args.name_frames and is_video:
        raise CliError("--name-frames names PNG frames: render to a folder (--out FOLDER)")
    if args.compare_to is not None and not (args.name_frames and os.path.isdir(args.compare_to)):
        raise CliError(f"--compare-to {args.compare_to}: needs --name-frames and a folder of the path's images")
    names = frame_names(args, len(cams))
    if args.compare_to is not None and not any(find_photo(args.compare_to, image) for image in args.image_names):
        raise CliError(f"--compare-to {args.compare_to}: holds none of the path's {len(cams)} images (such as "
                       f"{args.image_names[0]})")  # fmt: skip
    todo = list(range(len(cams))) if is_video else prepare_folder(args, cams, fps, names)
    if not todo:
        print(f"{args.out}/: all {len(cams)} frames present; nothing to do")
        if args.compare_to is not None:
            print(compare_to_photos(args.out, names, args.image_names, args.compare_to))
        return 0

    print(
        f"scene: {len(scene):,} Gaussians, SH degree {scene.sh_degree}; path: {what} at {fps:g} fps, "
        f"{width}x{height}; rendering on {'cuda' if cuda else 'cpu'} ({backend}), {args.workers} worker(s)"
    )
    if note:
        print(note)
    if args.resume and len(todo) < len(cams):
        print(f"resuming: {len(cams) - len(todo)} of {len(cams)} frames present, {len(todo)} to render")

    temps: list[str] = []  # every chunk file, removed whatever happens
    jobs = make_jobs(args, scene, cams, todo, settings, fps, crf, is_video=is_video, cuda=cuda, temps=temps,
                     names=None if is_video else names)  # fmt: skip
    if len(jobs) > 1:
        scene = None  # each worker process loads its own copy: let this one go first
    t_render = time.perf_counter()
    times, stitch_s = render_and_stitch(args, jobs, temps, scene, len(todo), is_video=is_video)
    wall_s = time.perf_counter() - t_render
    print(summary(times, len(todo), wall_s, time.perf_counter() - t0, stitch_s, len(jobs)))
    dest = args.out if is_video else f"{args.out}/"
    extra = "".join(f" and {v}" for v in (args.alpha_video, args.depth_video) if v)
    print(
        f"wrote {dest}{extra}: {len(cams)} frames, {width}x{height}"
        + (f" at {fps:g} fps, crf {crf}, preset {args.preset}" if is_video else "")
    )
    if args.compare_to is not None:
        print(compare_to_photos(args.out, names, args.image_names, args.compare_to))
    return 0


def compare_to_photos(folder: str, frames: list[str], images: list[str], photos: str) -> str:
    """`--compare-to`: each frame of `folder` (`frames`) against the photo `images` names in `photos` (the same
    stem with another extension will do), the photo resized to the frame where their sizes differ (bicubic);
    one line: the PSNR and SSIM over the photos found, the worst, and what was missing or resized."""
    import torch
    from PIL import Image

    from .metrics import path_psnr, psnr, ssim

    found, missing, resized = [], 0, 0
    for frame, image in zip(frames, images, strict=True):
        path = find_photo(photos, image)
        if path is None:
            missing += 1
            continue
        ours = Image.open(os.path.join(folder, frame)).convert("RGB")
        with Image.open(path) as photo:
            photo = photo.convert("RGB")
            if photo.size != ours.size:
                photo, resized = photo.resize(ours.size, Image.Resampling.BICUBIC), resized + 1
        a = torch.from_numpy(np.asarray(ours)).double() / 255
        b = torch.from_numpy(np.asarray(photo)).double() / 255
        found.append((psnr(a, b), ssim(a, b), image))
    if not found:
        return f"compared with {photos}: none of the {len(frames)} images found there"
    worst = min(found)
    mean_psnr, mean_ssim = path_psnr([f[0] for f in found]), float(np.mean([f[1] for f in found]))
    line = (f"compared with the photos in {photos}: PSNR {mean_psnr:.2f} dB, SSIM {mean_ssim:.4f} over "
            f"{len(found)} images (worst {worst[2]}: {worst[0]:.2f} dB)")  # fmt: skip
    if missing:
        line += f"; {missing} not found"
    if resized:
        line += f"; {resized} resized to the frames' size"
    return line


def find_photo(photos: str, image: str) -> str | None:
    """The photo of `image` in the folder `photos`: the file of that name, else the same stem with another
    extension (a dataset converted to PNG); None if neither is there."""
    path = os.path.join(photos, image)
    if os.path.isfile(path):
        return path
    where, stem = os.path.split(os.path.splitext(path)[0])
    others = sorted(f for f in os.listdir(where) if os.path.splitext(f)[0] == stem) if os.path.isdir(where) else []
    return os.path.join(where, others[0]) if others else None


def check_numbers(args: argparse.Namespace) -> None:
    """The numeric options, before anything is read."""
    if args.fov is not None and not 0.0 < args.fov < 180.0:
        raise CliError(f"--fov {args.fov}: must be in (0, 180)")
    for flag, value in (("--turns", args.turns), ("--radius", args.radius), ("--rise", args.rise)):
        if value is not None and not math.isfinite(value):  # nan or inf: a path of black frames
            raise CliError(f"{flag} {value}: must be a finite number")
    from renderer.paths.formats import MAX_FPS, MAX_PATH_FRAMES, MIN_FPS

    if args.frames is not None and not 1 <= args.frames <= MAX_PATH_FRAMES:
        raise CliError(f"--frames {args.frames}: must be 1 to {MAX_PATH_FRAMES:,}")
    if args.fps is not None and not (MIN_FPS <= args.fps <= MAX_FPS):
        raise CliError(f"--fps {args.fps}: must be {MIN_FPS:g} to {MAX_FPS:g}")
    if args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be at least 1")
    if args.preset not in X264_PRESETS:
        raise CliError(f"--preset {args.preset}: not an x264 preset ({', '.join(X264_PRESETS)})")
    if args.encoder_threads < 0:
        raise CliError(f"--encoder-threads {args.encoder_threads}: must be 0 (libx264 chooses) or more")
    if args.encoder_threading not in THREADINGS:
        raise CliError(f"--encoder-threading {args.encoder_threading}: must be one of {', '.join(THREADINGS)}")
    if args.transparent and parse_background(args.background) != (0.0, 0.0, 0.0):
        raise CliError("--transparent renders over nothing: drop --background and composite the PNG over any colour")


def check_flags_apply(args: argparse.Namespace) -> None:
    """Refuse a flag that this render would ignore: a flag given for nothing is a mistake (a missing --path, a
    folder where a video was meant), better caught before the render than noticed after it."""
    image = args.path is None or args.frame is not None
    generated = args.path in GENERATED_PATHS
    encodes = not image and (args.out.lower().endswith(".mp4") or bool(args.alpha_video or args.depth_video))
    given = {  # flag: given on the command line (differs from its default)
        "--frames": args.frames is not None,
        "--turns": args.turns is not None,
        "--radius": args.radius is not None,
        "--rise": args.rise is not None,
        "--fov": args.fov is not None,
        "--dataparser-transforms": args.dataparser_transforms is not None,
        "--fps": args.fps is not None,
        "--crf": args.crf is not None,
        "--quality": args.quality is not None,
        "--preset": args.preset != DEFAULT_PRESET,
        "--encoder-threads": args.encoder_threads != DEFAULT_THREADS,
        "--encoder-threading": args.encoder_threading != DEFAULT_THREADING,
        "--odd-size": args.odd_size != "refuse",
        "--workers": args.workers != 1,
        "--resume": args.resume,
        "--temporal": args.temporal != 0,
        "--name-frames": args.name_frames,
        "--compare-to": args.compare_to is not None,
        "--alpha-video": args.alpha_video is not None,
        "--depth-video": args.depth_video is not None,
    }
    rules = (  # (flags, whether this render uses them, what they apply to)
        (("--frames",), args.path is not None, "a --path render"),
        (("--turns",), args.path in ("orbit", "spiral"), "--path orbit and spiral"),
        (("--radius", "--rise"), args.path == "orbit", "--path orbit"),
        (("--fov",), args.path is None or generated, "the default view and generated paths (a path file gives its "
                                                      "cameras' own)"),
        (("--dataparser-transforms",), args.path is not None and not generated, "a path file's cameras (--path "
                                                                                 "FILE), which it takes into the "
                                                                                 "scene's world"),
        (("--fps", "--workers", "--resume", "--temporal", "--name-frames", "--compare-to", "--alpha-video",
          "--depth-video"), not image, "rendering a path's frames (--path without --frame)"),
        (("--crf", "--quality", "--preset", "--encoder-threads", "--encoder-threading", "--odd-size"),
         encodes, "a video (--path with --out *.mp4, --alpha-video or --depth-video)"),
    )  # fmt: skip
    for flags, used, what in rules:
        unused = [f for f in flags if given[f]]
        if unused and not used:
            raise CliError(f"{', '.join(unused)}: {'applies' if len(unused) == 1 else 'apply'} to {what}; this "
                           f"render would ignore {'it' if len(unused) == 1 else 'them'}")  # fmt: skip


def check_output_names(args: argparse.Namespace) -> None:
    """Refuse an output named by its format alone: `--out .mp4` wrote a hidden file that ls does not show."""
    for flag, path in (("--out", args.out), ("--alpha-video", args.alpha_video), ("--depth-video", args.depth_video)):
        name = os.path.basename(path or "").lower()
        if name in (".mp4", ".png"):
            raise CliError(f"{flag} {path}: names only the format: give the file a name (e.g. orbit{name})")


def check_path_outputs(args: argparse.Namespace) -> bool:
    """Check a path render's outputs and --path before the scene is loaded; True for a video, False for a
    frame folder."""
    from scenes.atomic import check_parent, check_writable

    out = args.out
    is_video = out.lower().endswith(".mp4")
    ends_in_slash = out.endswith(("/", os.sep))  # said so by the user: frames.v2/
    if out.lower().endswith(".png"):
        raise CliError(f"--out {out}: a path renders to a .mp4 video or a folder of PNG frames (--frame K renders one "
                       f"of its frames as {os.path.basename(out)})")  # fmt: skip
    if out.lower().endswith((".jpg", ".mov", ".mkv", ".webm", ".avi", ".gif")):
        raise CliError(f"--out {out}: a path renders to a .mp4 video or a folder of PNG frames")
    if not is_video and len(out) > 1:
        out = args.out = out.rstrip("/" + os.sep) or out  # frames/ is the folder frames (messages add the /)
    suffix = os.path.splitext(out)[1]
    if not is_video and suffix and not ends_in_slash and not os.path.isdir(out):
        # clip.m4v or orbit.mp (a typo) would otherwise become a folder of PNGs
        raise CliError(f"--out {out}: a path renders to a .mp4 video or a folder of PNG frames; for a new folder "
                       f"named with a {suffix!r} suffix, end it with /")  # fmt: skip
    if is_video and args.transparent:
        raise CliError("--transparent: H.264 has no alpha channel; render PNG frames (--out FOLDER) or write "
                       "--alpha-video beside the video")  # fmt: skip
    if args.resume and is_video:
        raise CliError("--resume: only a frame-folder render can be resumed (a video is written whole)")
    if args.resume and args.overwrite:
        raise CliError("--resume and --overwrite: give one of them")
    for flag, side in (("--alpha-video", args.alpha_video), ("--depth-video", args.depth_video)):
        if side is not None:
            if not side.lower().endswith(".mp4"):
                raise CliError(f"{flag} {side}: must end in .mp4")
            if args.resume:
                raise CliError(f"{flag} cannot be combined with --resume")
    if is_video:
        check_writable(out, overwrite=args.overwrite, make_parent=args.mkdir)
    elif os.path.exists(out) and not os.path.isdir(out):
        raise CliError(f"--out {out}: exists and is not a folder")
    else:
        check_parent(out, make=args.mkdir)  # the frame folder itself is made in prepare_folder
    written = [("--out", out)] if is_video else []
    for flag, side in (("--alpha-video", args.alpha_video), ("--depth-video", args.depth_video)):
        if side is not None:
            check_writable(side, overwrite=args.overwrite, make_parent=args.mkdir)
            same = [f for f, path in written if os.path.realpath(path) == os.path.realpath(side)]
            if same:  # the second video would be renamed over the first
                raise CliError(f"{flag} {side}: the same file as {same[0]}; give each video its own name")
            written.append((flag, side))
    if args.path not in GENERATED_PATHS and not os.path.exists(args.path):
        raise CliError(
            f"--path {args.path}: no such file"
            + ("" if args.path.lower().endswith(".json") else f" (generated: {', '.join(GENERATED_PATHS)})")
        )
    return is_video


def odd_size_note(args: argparse.Namespace, width: int, height: int, is_video: bool) -> str | None:
    """H.264 (yuv420p) needs even sizes: refuse an odd one, or say how it is padded (--odd-size pad)."""
    if not (is_video or args.alpha_video or args.depth_video) or not (width % 2 or height % 2):
        return None
    ew, eh = width + width % 2, height + height % 2
    if args.odd_size == "refuse":
        raise CliError(
            f"size {width}x{height}: H.264 (yuv420p) needs an even width and height; use "
            f"--size {ew}x{eh}, --odd-size pad (repeats the last row/column), or a PNG folder"
        )
    return f"note: {width}x{height} is odd; the video is {ew}x{eh}, the last row/column repeated"


def where_to_render(args: argparse.Namespace) -> tuple[bool, str]:
    """(CUDA or not, the backend that will run); --workers must not exceed the CUDA devices."""
    import torch

    from renderer.device import resolve_backend

    cuda = torch.cuda.is_available()
    backend = resolve_backend(args.backend, torch.device("cuda" if cuda else "cpu"))
    if cuda and args.workers > torch.cuda.device_count():
        raise CliError(f"--workers {args.workers}: only {torch.cuda.device_count()} CUDA device(s) here")
    return cuda, backend


def make_jobs(args, scene, cams, todo, settings, fps, crf, *, is_video, cuda, temps, names=None) -> list[Job]:
    """One job per worker: a contiguous chunk of the frames to render, with its own chunk files (their
    names are added to `temps`) and, on CUDA with several workers, its own device."""
    from .video import temp_path_for

    n_workers = min(args.workers, len(todo))
    chunks = [list(c) for c in np.array_split(np.array(todo), n_workers) if len(c)]

    def temp_for(final: str, k: int) -> str:
        path = temp_path_for(final, suffix=f".chunk{k}.part")
        temps.append(path)
        return path

    threads = max(1, (os.cpu_count() or 1) // n_workers) if n_workers > 1 else None
    # several workers encode at once: "auto" for each would start a full machine's worth of x264 threads apiece
    encoder_threads = args.encoder_threads or (threads or 0)
    depth_range = path_depth_range(scene, cams) if args.depth_video else (1.0, 2.0)  # one scale for all chunks
    return [
        Job(
            scene=args.scene,
            up=args.up,
            backend=args.backend,
            settings=settings,
            cameras=[cams[i] for i in chunk],
            indices=chunk,
            folder=None if is_video else args.out,
            video=temp_for(args.out, k) if is_video else None,
            alpha_video=temp_for(args.alpha_video, k) if args.alpha_video else None,
            depth_video=temp_for(args.depth_video, k) if args.depth_video else None,
            depth_range=depth_range,
            fps=fps,
            crf=crf,
            preset=args.preset,
            encoder_threads=encoder_threads,
            encoder_threading=args.encoder_threading,
            pad_odd=args.odd_size == "pad",
            transparent=args.transparent,
            frame_names=[names[i] for i in chunk] if names else None,
            device=f"cuda:{k}" if cuda and n_workers > 1 else None,
            threads=threads,
        )
        for k, chunk in enumerate(chunks)
    ]


def render_and_stitch(args, jobs: list[Job], temps: list[str], scene, n_frames: int, *, is_video: bool):
    """Render the jobs (one in this process, on `scene`; several in one worker process each) and join their
    chunk videos into the outputs. Chunk files are removed whatever happens, and SIGTERM counts as an
    interrupt so that a terminated render cleans up too. Returns (per-frame stage times, seconds stitching)."""
    from tqdm import tqdm

    from scenes.atomic import naming_output

    bar = tqdm(total=n_frames, unit="frame", desc="render", disable=args.quiet, dynamic_ncols=True)
    previous = signal.getsignal(signal.SIGTERM)
    with contextlib.suppress(ValueError):  # not the main thread: keep the default
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        on_frame = lambda stage_ms: bar.update(1)  # noqa: E731
        try:
            if len(jobs) > 1:
                times = run_workers(jobs, on_frame)
            else:
                times = render_job(jobs[0], on_frame, scene=scene)
        except OSError as e:  # a full disk while encoding names the video the user asked for, not its chunk file
            raise naming_output(e, output_of(e.filename, jobs, args)) from None
        bar.close()
        t_stitch = time.perf_counter()
        if is_video:
            finish_video([j.video for j in jobs], args.out)
        if args.alpha_video:
            finish_video([j.alpha_video for j in jobs], args.alpha_video)
        if args.depth_video:
            finish_video([j.depth_video for j in jobs], args.depth_video)
        return times, time.perf_counter() - t_stitch
    finally:
        bar.close()
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)
        for path in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def output_of(filename: str | None, jobs: list[Job], args: argparse.Namespace) -> str | None:
    """The output a job's temporary video file becomes (the file itself when it is none of them)."""
    for job in jobs:
        for temp, out in (
            (job.video, args.out),
            (job.alpha_video, args.alpha_video),
            (job.depth_video, args.depth_video),
        ):
            if temp is not None and filename == temp:
                return out
    return filename


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def prepare_folder(args: argparse.Namespace, cams, fps: float, names: list[str]) -> list[int]:
    """Create or check the frame folder for frames `names`; return the frame numbers still to render."""
    from scenes.atomic import atomic_write

    out = args.out
    manifest = {
        "path": args.path,
        "frames": len(cams),
        "size": [cams[0].width, cams[0].height],
        "background": args.background,
        "transparent": args.transparent,
        "frame names": "images" if args.name_frames else "numbers",
        "settings": repr(settings_from_args(args)),
        "cameras": cameras_digest(cams),
    }
    wanted = set(names)
    existing = (
        sorted(f for f in os.listdir(out) if (f.startswith("frame_") and f.endswith(".png")) or f in wanted)
        if os.path.isdir(out)
        else []
    )
    mpath = os.path.join(out, MANIFEST)
    if args.resume:
        if not os.path.exists(mpath):
            raise CliError(f"--resume: {out}/ has no {MANIFEST} from an earlier render; start without --resume")
        try:
            with open(mpath, encoding="utf-8") as f:
                before = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise CliError(f"--resume: {mpath}: unreadable ({e})") from None
        diff = [k for k in manifest if before.get(k) != manifest[k]]
        if diff:
            raise CliError(
                f"--resume: {out}/ holds a different render ({', '.join(diff)} differ); "
                f"use another folder or --overwrite"
            )
        present = set(existing)
        return [i for i in range(len(cams)) if names[i] not in present]
    if existing and not args.overwrite:
        raise CliError(f"--out {out}/: holds {len(existing)} frames; pass --resume to continue or --overwrite")
    if os.path.exists(mpath) and not args.overwrite and not _is_manifest(mpath):
        raise CliError(f"--out {out}/: holds a {MANIFEST} that no render wrote; move it, or pass --overwrite to "
                       "replace it")  # fmt: skip
    os.makedirs(out, exist_ok=True)  # its parent exists: check_path_outputs saw to it
    if args.overwrite:
        for f in existing:  # stale frames beyond the new count would otherwise stay
            os.unlink(os.path.join(out, f))
    with atomic_write(mpath) as f:
        f.write(json.dumps(manifest, indent=1).encode())
    return list(range(len(cams)))


def _is_manifest(path: str) -> bool:
    """Whether `path` is a frame folder's manifest (one that an earlier render wrote), so replacing it loses
    nothing of the user's."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and {"path", "frames", "cameras"} <= data.keys()


def render_image(args: argparse.Namespace) -> int:
    """The single-image mode: the default view, or frame `--frame` of `--path`, to a PNG."""
    from PIL import Image

    from renderer import Renderer, default_camera
    from scenes.atomic import atomic_write, check_writable

    if not args.out.lower().endswith(".png"):
        raise CliError(f"--out {args.out}: a single frame is written as .png (use --path for a video or frames)")
    if args.frame is not None and (args.path is None or args.frame < 0):
        raise CliError(f"--frame {args.frame}: needs --path, and a frame number from 0")
    check_writable(args.out, overwrite=args.overwrite, make_parent=args.mkdir)
    t0 = time.perf_counter()
    scene = open_scene(args.scene, args.up)
    apply_dataparser_argument(scene, args.dataparser_transforms)
    if args.frame is None:
        width, height = args.size or DEFAULT_SIZE
        cam = default_camera(scene, width, height, fov_y_deg=DEFAULT_FOV if args.fov is None else args.fov)
        if args.ortho:
            (cam,) = ortho_views([cam], scene)
        view = "the default view, which frames the scene,"
    else:
        cams, _, what = build_cameras(args, scene)
        if args.frame >= len(cams):
            raise CliError(f"--frame {args.frame}: the path has {len(cams)} frames (0 to {len(cams) - 1})")
        cam, view = cams[args.frame], f"frame {args.frame} of the path ({what})"
        width, height = cam.width, cam.height
    renderer = Renderer(scene, backend=args.backend, frame_size=(width, height))
    load_s = time.perf_counter() - t0
    kind = "Triton kernels" if renderer.backend == "triton" else "torch reference pipeline"
    where = f"{renderer.device.type}, {kind}"
    if renderer.backend == "triton" and renderer.device.type == "cpu":
        where += " in the Triton interpreter"
    print(
        f"scene: {len(scene):,} Gaussians, SH degree {scene.sh_degree}, loaded in {load_s:.2f} s; rendering on {where}"
    )
    if args.frame is not None:  # which camera of the file, and what reading it changed or left out
        print(f"camera: {view}")
    out = renderer.render(cam, settings_from_args(args))
    with atomic_write(args.out) as f:
        if args.transparent:
            Image.fromarray(straight_rgba8(out).cpu().numpy(), "RGBA").save(f, format="PNG")
        else:
            Image.fromarray(np.ascontiguousarray(to_rgba8(out)[..., :3])).save(f, format="PNG")
    s = out.stats
    print(
        f"wrote {args.out} ({width}x{height}) in {s.stage_ms['total']:.1f} ms: "
        f"{s.n_visible:,} visible, {s.n_pairs:,} Gaussian-tile pairs"
    )
    if not bool((out.alpha > 0).any()):  # the default view frames the scene: an empty image is the scene's doing
        print(
            f"warpsplat render: warning: {args.scene or 'the bundled scene'}: the image is empty: {view} "
            f"draws none of its {len(scene):,} Gaussians: {why_not_drawn(scene, cam)}",
            file=sys.stderr,
        )
    return 0


def why_not_drawn(scene, cam) -> str:
    """Why a view draws none of a scene's Gaussians, each counted under the first reason that applies: too faint
    (the renderer skips opacities below 1/255), behind the camera or nearer than the near plane, centre outside
    the image, else on screen but too small to reach a pixel centre."""
    import torch

    from kernels.constants import ALPHA_MIN
    from renderer import RenderSettings

    near = RenderSettings().near
    faint = torch.sigmoid(scene.opacity_logits.float()) < ALPHA_MIN
    viewmat = torch.as_tensor(cam.viewmat, dtype=torch.float64)
    p = scene.means.double() @ viewmat[:3, :3].T + viewmat[:3, 3]
    behind = ~faint & ~(p[:, 2] >= near)
    z = p[:, 2].clamp_min(near)
    u, v = cam.fx * p[:, 0] / z + cam.cx, cam.fy * p[:, 1] / z + cam.cy
    outside = ~faint & ~behind & ~((u >= 0) & (u <= cam.width) & (v >= 0) & (v <= cam.height))
    small = len(scene) - int(faint.sum()) - int(behind.sum()) - int(outside.sum())
    reasons = [(int(faint.sum()), "fainter than the 1/255 opacity the renderer draws"),
               (int(behind.sum()), f"behind the camera or nearer than its near plane ({near:g})"),
               (int(outside.sum()), "centred outside the image"),
               (small, "on screen but too small to reach a pixel centre")]  # fmt: skip
    return "; ".join(f"{n:,} {what}" for n, what in reasons if n)
