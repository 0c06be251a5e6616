"""Camera path files: nerfstudio `camera_path.json`, INRIA `cameras.json`, datasets' `transforms.json`, COLMAP
models (renderer/paths/colmap.py) and the viewer's keyframe file.

Every convention is converted here, once; what leaves this module is `Camera` / `Keyframe` in the project's
frame (`T_world_camera`, camera-to-world, OpenCV axes: +X right, +Y down, +Z forward; renderer/camera.py).

nerfstudio `camera_path.json` (written by the nerfstudio viewer and nerfview, read by ns-render camera-path):
    camera_path[i].camera_to_world   16 floats, a 4x4 camera-to-world matrix flattened ROW-major, OpenGL
                                     camera axes (+X right, +Y up, +Z backward). OpenCV rotation =
                                     R_gl @ diag(1, -1, -1); the position is unchanged.
    camera_path[i].fov               VERTICAL field of view in degrees: fy = fx = (H / 2) / tan(fov / 2),
                                     cx = W / 2, cy = H / 2 (nerfstudio's three.js focal length).
    camera_path[i].aspect            W / H of the viewer's preview (not used to render: the size is
                                     render_width x render_height, or --size).
    render_width, render_height      output size; fps = len(camera_path) / seconds (ns-render's rule).
    keyframes[k].matrix              same matrix convention as camera_to_world: the editable keys.
    keyframes[k].fov, override_transition_enabled / _sec, default_transition_sec, is_cycle
                                     key timing: key k+1 comes one transition after key k (a cycle adds a
                                     last transition back to key 0).
    Positions are in the scene's world units: nerfstudio's own paths live in its dataparser-normalised
    world and need that transform undone before they match an INRIA PLY (not done here).

INRIA `cameras.json` (gaussian-splatting model folder): a JSON list of
    {id, img_name, width, height, position [3], rotation [3][3], fx, fy}
    position is the camera centre in world coordinates; rotation is camera-to-world with the camera axes as
    COLUMNS, already OpenCV (x right, y down, z forward). The list has test cameras first, then train; the
    path visits them sorted by img_name (capture order), one frame per camera by default, interpolated
    with the splines of `renderer/paths/splines.py` when more frames are asked for.

Dataset `transforms.json` (nerfstudio's, instant-ngp's, the Blender NeRF-synthetic scenes'): frames[i].transform_matrix
is camera-to-world in OpenGL axes (rows, not flattened); fl_x, fl_y, cx, cy, w, h shared or per frame, or
camera_angle_x (radians) with the size from the image at file_path; nerfstudio's applied_transform (the change it
made to COLMAP's world) is undone, so the cameras line up with a 3DGS trainer's PLY of the same data. One frame per
image in file_path order, as for COLMAP's below.

nerfstudio's `dataparser_transforms.json` (beside a splatfacto run's `nerfstudio_models/`): {"transform": 3x4, "scale":
s}. nerfstudio trains in its dataparser's world, p' = s (R p + t) of its dataset's world (the transforms.json's, which
is ns-process-data's turn of COLMAP's); a splatfacto checkpoint, its exported PLY and the camera paths its viewer
saves are in that world. Given one (`dataparser_transforms=`), transforms.json cameras are taken into it from their
file's world, and a COLMAP model's from COLMAP's through ns-process-data's turn (y and z swapped, then z flipped:
what its COLMAP route always records as applied_transform), so a dataset's cameras line up with the checkpoint.

COLMAP sparse models (a `sparse/0` folder, its dataset folder, or its `images.bin` / `images.txt`): the images
in name order, as INRIA's cameras; one frame per image by default, each with its camera's focal lengths and
principal point (scaled to the output's height where the size differs), interpolated like INRIA's when more
frames are asked for. Distortion is not drawn: a note says which models had it.

The keyframe file the viewer saves is a nerfstudio `camera_path.json` (see `save_camera_path`): it holds the
keyframes (to reload and edit) and the sampled per-frame `camera_path` (so `ns-render camera-path` plays it
too), plus `"warpsplat": 1`. `warpsplat render --path FILE.json` plays the sampled cameras.

Bad files raise `CameraPathError` (a ValueError) with a one-line message naming the file and the field.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..camera import Camera
from .colmap import PINHOLES, ColmapError, find_model, read_model
from .splines import SECONDS_PER_TRANSITION, Keyframe, interpolate_keyframes, key_times

# right-multiplying a camera-to-world rotation by this swaps OpenGL camera axes (+Y up, +Z back) and OpenCV
# ones (+Y down, +Z forward); it is its own inverse.
GL_FROM_CV = np.diag([1.0, -1.0, -1.0])
FORMAT_VERSION = 1

# The most frames a path may give: 55 minutes at 30 fps. Its cameras are built before the first frame renders,
# at 0.7 kB and (on the 2-core test machine) 0.9 ms each: 100,000 take 67 MiB and 90 s. A file that asks for more
# (a duration of 1e12 s) is refused by name, rather than running out of memory.
MAX_PATH_FRAMES = 100_000
# Frame rates a video can be written at: its time base is fps as a fraction with a denominator of at most 1000.
MIN_FPS, MAX_FPS = 1e-3, 1000.0


class CameraPathError(ValueError):
    """A camera path file that cannot be used; the message is one line naming the file and the field."""


@dataclass
class CameraPath:
    """Cameras to render, in order, and the frame rate the file asks for.

    Attributes:
        cameras: one `Camera` per frame (OpenCV axes).
        fps: frames per second of the video (nerfstudio: len(camera_path) / seconds).
        kind: what was read: "nerfstudio camera_path", "nerfstudio keyframes", "inria cameras", "transforms.json"
            or "colmap model".
        keyframes: the file's keyframes, when it has any.
        notes: what the cameras do not reproduce of the file (one line each), for the user.
        names: the image each camera was taken for (INRIA's and COLMAP's, one frame each), else empty.
    """

    cameras: list[Camera]
    fps: float
    kind: str
    keyframes: list[Keyframe] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass
class KeyframeFile:
    """The editable content of a keyframe file, for the viewer to reload.

    Attributes:
        keyframes: keys with `time_s` set (seconds from the start), OpenCV poses.
        width, height: render size saved with the path.
        fps: frames per second.
        seconds: duration of the path.
        is_cycle: the path loops from the last key back to the first.
    """

    keyframes: list[Keyframe]
    width: int
    height: int
    fps: float
    seconds: float
    is_cycle: bool


# ------------------------------------------------------------------------------------------------ conventions


def opengl_to_opencv(T_world_camera_gl: np.ndarray) -> np.ndarray:
    """[4, 4] camera-to-world with OpenGL camera axes -> [4, 4] with OpenCV axes (same centre)."""
    T = np.array(T_world_camera_gl, dtype=np.float64).reshape(4, 4)
    T[:3, :3] = T[:3, :3] @ GL_FROM_CV
    return T


def opencv_to_opengl(T_world_camera: np.ndarray) -> np.ndarray:
    """[4, 4] camera-to-world with OpenCV camera axes -> OpenGL axes (the inverse of `opengl_to_opencv`)."""
    return opengl_to_opencv(T_world_camera)


def fov_y_from_focal(fy: float, height: float) -> float:
    """Vertical field of view in degrees of a pinhole with focal fy pixels and `height` pixels."""
    return math.degrees(2 * math.atan(0.5 * height / fy))


# ------------------------------------------------------------------------------------------------ reading


def load_camera_path(
    path: str | os.PathLike,
    *,
    width: int | None = None,
    height: int | None = None,
    n_frames: int | None = None,
    dataparser_transforms: str | os.PathLike | None = None,
) -> CameraPath:
    """Read a camera path file and return the cameras to render.

    Args:
        path: a nerfstudio `camera_path.json` (also the viewer's keyframe file) or an INRIA `cameras.json`, told
            apart by the content (a JSON object or a JSON list); or a COLMAP model (its folder, a dataset folder
            holding it in sparse/0, or its images.bin / images.txt).
        width, height: output size; None = the size the file gives (render_width/height, or the first
            INRIA camera's). A different aspect ratio keeps the vertical field of view.
        n_frames: frames to produce; None = the file's own count (nerfstudio: len(camera_path), or
            fps * seconds for a keyframe-only file; INRIA: one per camera). A different count re-samples
            the path through the file's cameras (or keyframes) over the same duration.
        dataparser_transforms: nerfstudio's `dataparser_transforms.json` of the scene (module docstring): a
            dataset's cameras (transforms.json, COLMAP) are taken into its world; other files' are left as they
            are (nerfstudio's own paths already live there).

    Raises:
        FileNotFoundError: no such file.
        CameraPathError: the file is not valid JSON or a field is missing or wrong (one-line message).
    """
    name = os.fspath(path)
    if n_frames is not None and n_frames < 1:
        raise CameraPathError(f"{name}: frames {n_frames}: need at least 1")
    if n_frames is not None:
        _check_frames(name, n_frames, "re-sampling")
    world = None if dataparser_transforms is None else read_dataparser_transforms(dataparser_transforms)
    if os.path.isdir(name) or find_model(name) is not None:
        return _load_colmap(name, width, height, n_frames, world)
    data = _read_json(name)
    if isinstance(data, list):
        return _load_inria(name, data, width, height, n_frames)
    if isinstance(data, dict) and "frames" in data and "camera_path" not in data and "keyframes" not in data:
        return _load_transforms(name, data, width, height, n_frames, world)
    if isinstance(data, dict):
        return _load_nerfstudio(name, data, width, height, n_frames)
    raise CameraPathError(
        f"{name}: expected a JSON object (nerfstudio camera_path.json) or a list "
        f"(INRIA cameras.json), got {type(data).__name__}"
    )


def read_keyframes(path: str | os.PathLike) -> KeyframeFile:
    """The keyframes of a nerfstudio-schema file (the viewer's saved path), with their times."""
    name = os.fspath(path)
    data = _read_json(name)
    if not isinstance(data, dict):
        raise CameraPathError(f'{name}: expected a JSON object with "keyframes"')
    keys, seconds, is_cycle = _parse_keyframes(name, data)
    if not keys:
        raise CameraPathError(f"{name}: keyframes: the file has no keyframes")
    width, height = _render_size(name, data, None, None)
    fps = _positive(name, data, "fps") if "fps" in data else 30.0
    return KeyframeFile(keys, width, height, fps, seconds, is_cycle)


def _read_json(name: str):
    if not os.path.exists(name):
        raise FileNotFoundError(f"{name}: no such camera path file")
    if os.path.isdir(name):
        raise CameraPathError(f"{name}: is a folder, not a camera path file")
    try:
        with open(name, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise CameraPathError(f"{name}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except UnicodeDecodeError:
        raise CameraPathError(f"{name}: not a text (UTF-8 JSON) file") from None


def _number(name: str, obj: dict, key: str, where: str) -> float:
    if key not in obj:
        raise CameraPathError(f"{name}: {where}{key}: missing")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CameraPathError(f"{name}: {where}{key}: expected a finite number, got {v!r:.40}")
    return float(v)


def _positive(name: str, obj: dict, key: str, where: str = "") -> float:
    v = _number(name, obj, key, where)
    if v <= 0:
        raise CameraPathError(f"{name}: {where}{key}: must be > 0, got {v}")
    return v


def _fov(name: str, obj: dict, key: str, where: str) -> float:
    v = _number(name, obj, key, where)
    if not 0 < v < 180:
        raise CameraPathError(f"{name}: {where}{key}: field of view {v} degrees is not in (0, 180)")
    return v


def _matrix(name: str, obj: dict, key: str, where: str) -> np.ndarray:
    """A flattened row-major 4x4 camera-to-world in OpenGL axes -> [4, 4] OpenCV camera-to-world."""
    if key not in obj:
        raise CameraPathError(f"{name}: {where}{key}: missing")
    try:
        m = np.asarray(obj[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise CameraPathError(f"{name}: {where}{key}: expected 16 numbers") from None
    if m.size != 16 or m.ndim not in (1, 2):
        raise CameraPathError(f"{name}: {where}{key}: expected 16 numbers (a row-major 4x4), got shape {m.shape}")
    m = m.reshape(4, 4)
    if not np.all(np.isfinite(m)):
        raise CameraPathError(f"{name}: {where}{key}: non-finite value")
    _check_rotation(name, m[:3, :3], f"{where}{key}")
    return opengl_to_opencv(m)


def _check_rotation(name: str, R: np.ndarray, what: str) -> None:
    # 1e-3 admits float32 round trips and 6-digit JSON; a scaled or skewed matrix would render distorted
    err = float(np.abs(R.T @ R - np.eye(3)).max())
    if err > 1e-3 or np.linalg.det(R) < 0:
        raise CameraPathError(
            f"{name}: {what}: rotation part is not a rotation (|R^T R - I| = {err:.2g}, det = {np.linalg.det(R):.3g})"
        )


def _render_size(name: str, data: dict, width: int | None, height: int | None) -> tuple[int, int]:
    if width is not None and height is not None:
        return int(width), int(height)
    for key in ("render_width", "render_height"):
        if key not in data:
            raise CameraPathError(f"{name}: {key}: missing (pass --size WxH)")
    w, h = _positive(name, data, "render_width"), _positive(name, data, "render_height")
    if w != int(w) or h != int(h):
        raise CameraPathError(f"{name}: render_width/render_height: expected whole pixels, got {w}x{h}")
    _check_size(name, "render_width x render_height", w, h)
    return int(w), int(h)


def _check_size(name: str, what: str, width: float, height: float) -> None:
    from ..output import MAX_IMAGE_SIDE

    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise CameraPathError(
            f"{name}: {what} {width:g}x{height:g}: each side must be at most {MAX_IMAGE_SIDE} pixels "
            "(--size WxH renders it at another size)"
        )


def _check_frames(name: str, count: float, what: str) -> int:
    """A frame count the file gives (or asks to re-sample to), refused above MAX_PATH_FRAMES."""
    if count > MAX_PATH_FRAMES:
        raise CameraPathError(
            f"{name}: {what} gives {count:,.0f} frames, more than the {MAX_PATH_FRAMES:,} a path may have "
            "(55 minutes at 30 fps)"
        )
    return int(count)


def _check_fps(name: str, fps: float, what: str) -> float:
    if not MIN_FPS <= fps <= MAX_FPS:
        raise CameraPathError(f"{name}: {what} gives {fps:g} frames per second, outside {MIN_FPS:g}-{MAX_FPS:g}")
    return fps


def _parse_keyframes(name: str, data: dict) -> tuple[list[Keyframe], float, bool]:
    """keyframes -> ([Keyframe with time_s], seconds, is_cycle)."""
    raw = data.get("keyframes") or []
    if not isinstance(raw, list):
        raise CameraPathError(f"{name}: keyframes: expected a list")
    is_cycle = bool(data.get("is_cycle", False))
    default_fov = _fov(name, data, "default_fov", "") if "default_fov" in data else 50.0
    default_tr = _positive(name, data, "default_transition_sec") if "default_transition_sec" in data else None
    keys, transitions = [], []
    for k, kf in enumerate(raw):
        where = f"keyframes[{k}]."
        if not isinstance(kf, dict):
            raise CameraPathError(f"{name}: keyframes[{k}]: expected an object")
        T = _matrix(name, kf, "matrix", where)
        fov = _fov(name, kf, "fov", where) if kf.get("fov") is not None else default_fov
        keys.append(Keyframe(T, fov))
        tr = None
        if kf.get("override_transition_enabled") and kf.get("override_transition_sec") is not None:
            tr = _positive(name, kf, "override_transition_sec", where)
        transitions.append(tr)
    if not keys:
        return [], 0.0, is_cycle
    n_tr = len(keys) if is_cycle else len(keys) - 1
    if default_tr is None:  # no default: share `seconds` evenly among the transitions not overridden
        seconds = _positive(name, data, "seconds") if "seconds" in data else SECONDS_PER_TRANSITION * max(n_tr, 1)
        fixed = sum(t for t in transitions[:n_tr] if t is not None)
        free = sum(1 for t in transitions[:n_tr] if t is None)
        default_tr = max(seconds - fixed, 1e-3) / free if free else 1.0
    steps = [t if t is not None else default_tr for t in transitions[:n_tr]]
    times = np.concatenate([[0.0], np.cumsum(steps)])
    for key, t in zip(keys, times, strict=False):
        key.time_s = float(t)
    seconds = float(times[-1]) if n_tr else 0.0
    if "seconds" in data:
        seconds = _positive(name, data, "seconds")
        if n_tr and abs(seconds - times[-1]) > 1e-6 * max(seconds, 1.0):
            # the file's duration wins (nerfstudio edits it apart from the transitions): scale the times
            for key in keys:
                key.time_s = float(key.time_s * seconds / times[-1])  # type: ignore[operator]
    return keys, seconds, is_cycle


def _load_nerfstudio(name: str, data: dict, width, height, n_frames) -> CameraPath:
    camera_type = data.get("camera_type", "perspective")
    if camera_type != "perspective":
        raise CameraPathError(f"{name}: camera_type: {camera_type!r} is not supported (only perspective)")
    W, H = _render_size(name, data, width, height)
    keys, key_seconds, is_cycle = _parse_keyframes(name, data)
    frames = data.get("camera_path")
    if frames is not None and not isinstance(frames, list):
        raise CameraPathError(f"{name}: camera_path: expected a list")
    frames = frames or []
    if not frames and not keys:
        raise CameraPathError(f"{name}: camera_path: missing or empty, and no keyframes to interpolate")

    if frames:
        cams = []
        for i, fr in enumerate(frames):
            where = f"camera_path[{i}]."
            if not isinstance(fr, dict):
                raise CameraPathError(f"{name}: camera_path[{i}]: expected an object")
            T = _matrix(name, fr, "camera_to_world", where)
            cams.append(Camera.from_fov(W, H, _fov(name, fr, "fov", where), T))
        if "seconds" in data:
            seconds = _positive(name, data, "seconds")
            fps = _check_fps(name, len(cams) / seconds, f"{len(cams):,} frames over seconds {seconds:g}")
        else:
            fps = _check_fps(name, _positive(name, data, "fps"), "fps") if "fps" in data else 30.0
            seconds = len(cams) / fps
        if n_frames is None or n_frames == len(cams):
            return CameraPath(cams, fps, "nerfstudio camera_path", keys)
        if keys and (len(keys) >= 3 or not is_cycle):  # re-sample from the editable keys
            cams = interpolate_keyframes(keys, n_frames, W, H, ease=False, closed=is_cycle, loop_time_s=key_seconds)
        else:  # re-sample through the sampled frames, spaced evenly in time
            samples = [Keyframe(c.T_world_camera, c.fov_y_deg, i / fps) for i, c in enumerate(cams)]
            cams = interpolate_keyframes(samples, n_frames, W, H, ease=False)
        return CameraPath(cams, n_frames / seconds, "nerfstudio camera_path", keys)

    fps = _check_fps(name, _positive(name, data, "fps"), "fps") if "fps" in data else 30.0
    count = n_frames
    if count is None:
        count = _check_frames(name, max(round(fps * key_seconds), 1), f"seconds {key_seconds:g} at {fps:g} fps")
    if is_cycle and len(keys) < 3:
        is_cycle = False  # a loop through fewer than 3 keys has no shape; play it open
    cams = interpolate_keyframes(keys, count, W, H, ease=False, closed=is_cycle, loop_time_s=key_seconds)
    return CameraPath(cams, fps if n_frames is None else count / max(key_seconds, 1e-9), "nerfstudio keyframes", keys)


def _natural_key(text: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _load_inria(name: str, data: list, width, height, n_frames) -> CameraPath:
    if not data:
        raise CameraPathError(f"{name}: the camera list is empty")
    entries = []
    for i, cam in enumerate(data):
        where = f"[{i}]."
        if not isinstance(cam, dict):
            raise CameraPathError(f"{name}: [{i}]: expected a camera object")
        img = cam.get("img_name", str(cam.get("id", i)))
        if not isinstance(img, str):
            raise CameraPathError(f"{name}: [{i}].img_name: expected a string")
        w, h = _positive(name, cam, "width", where), _positive(name, cam, "height", where)
        _check_size(name, f"[{i}].width x height", w, h)
        fy = _positive(name, cam, "fy", where)
        _positive(name, cam, "fx", where)
        try:
            pos = np.asarray(cam.get("position"), dtype=np.float64)
            R = np.asarray(cam.get("rotation"), dtype=np.float64)
        except (TypeError, ValueError):
            raise CameraPathError(f"{name}: [{i}]: position / rotation: expected numbers") from None
        if "position" not in cam or pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise CameraPathError(f"{name}: [{i}].position: expected 3 finite numbers")
        if "rotation" not in cam or R.shape != (3, 3) or not np.all(np.isfinite(R)):
            raise CameraPathError(f"{name}: [{i}].rotation: expected a 3x3 list of finite numbers")
        _check_rotation(name, R, f"[{i}].rotation")
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, pos  # columns are the camera axes: already camera-to-world, OpenCV
        entries.append((img, Keyframe(T, fov_y_from_focal(fy, h)), (int(w), int(h))))
    entries.sort(key=lambda e: _natural_key(e[0]))
    keys = [e[1] for e in entries]
    W, H = (int(width), int(height)) if width is not None and height is not None else entries[0][2]
    fps = 30.0
    for i, k in enumerate(keys):  # evenly spaced: frame i is camera i when one frame per camera
        k.time_s = i / fps
    count = n_frames if n_frames is not None else len(keys)
    cams = interpolate_keyframes(keys, count, W, H, ease=False)
    names = [e[0] for e in entries] if count == len(keys) else []
    return CameraPath(cams, fps, "inria cameras", keys, names=names)


def _image_size(name: str, frame: dict, where: str) -> tuple[int, int]:
    """A transforms.json frame's image size from its image file's header (Blender's datasets give none)."""
    from PIL import Image, UnidentifiedImageError

    rel = str(frame.get("file_path", ""))
    base = os.path.join(os.path.dirname(os.path.abspath(name)), rel)
    for path in (base, base + ".png"):  # Blender's file_path leaves out the extension
        if rel and os.path.isfile(path):
            try:
                with Image.open(path) as im:
                    return im.size
            except (OSError, UnidentifiedImageError):
                break
    raise CameraPathError(f"{name}: {where}: no w and h, and no image at file_path {rel!r} to take them from "
                          "(pass --size WxH)")  # fmt: skip


# transforms.json's intrinsics: shared at the top level, or per frame (nerfstudio, instant-ngp; Blender's datasets
# give camera_angle_x alone)
TRANSFORMS_INTRINSICS = ("w", "h", "fl_x", "fl_y", "cx", "cy", "camera_angle_x", "camera_angle_y")


def _angle_focal(name: str, fields: dict, key: str, where: str, pixels: float) -> float:
    """The focal length in pixels of a field-of-view angle in radians across `pixels`."""
    angle = _number(name, fields, key, where)
    if not 0 < angle < math.pi:
        raise CameraPathError(f"{name}: {where}{key}: {angle} radians is not an angle of view")
    return 0.5 * pixels / math.tan(0.5 * angle)


def _load_transforms(name: str, data: dict, width, height, n_frames, world: DataparserWorld | None) -> CameraPath:
    frames = data["frames"]
    if not isinstance(frames, list) or not frames:
        raise CameraPathError(f"{name}: frames: expected a non-empty list")
    shared = {k: data[k] for k in TRANSFORMS_INTRINSICS if k in data}
    undo, notes = np.eye(4), []
    if world is not None:  # into nerfstudio's dataparser world, from this file's own
        notes.append(world.note)
    elif "applied_transform" in data:  # nerfstudio's ns-process-data turned COLMAP's world by it: undone
        try:
            applied = np.asarray(data["applied_transform"], dtype=np.float64)
        except (TypeError, ValueError):
            applied = np.zeros(0)
        if applied.shape not in ((3, 4), (4, 4)) or not np.all(np.isfinite(applied)):
            raise CameraPathError(f"{name}: applied_transform: expected a 3x4 or 4x4 matrix")
        A = np.eye(4)
        A[:3] = applied[:3]
        if abs(np.linalg.det(A)) < 1e-9:
            raise CameraPathError(f"{name}: applied_transform: not invertible")
        undo = np.linalg.inv(A)
        notes.append("applied_transform undone: the cameras are in the COLMAP model's world, a 3DGS trainer's")
    entries = []
    for i, frame in enumerate(frames):
        where = f"frames[{i}]."
        if not isinstance(frame, dict):
            raise CameraPathError(f"{name}: frames[{i}]: expected an object")
        f = shared | frame  # a frame's own intrinsics win
        if "w" in f and "h" in f:
            w, h = _positive(name, f, "w", where), _positive(name, f, "h", where)
        else:
            w, h = _image_size(name, frame, f"frames[{i}]")
        _check_size(name, f"frames[{i}] w x h", w, h)
        if "fl_x" in f:
            fx = _positive(name, f, "fl_x", where)
        elif "camera_angle_x" in f:
            fx = _angle_focal(name, f, "camera_angle_x", where, w)
        else:
            raise CameraPathError(f"{name}: {where}fl_x: missing, and no camera_angle_x")
        if "fl_y" in f:
            fy = _positive(name, f, "fl_y", where)
        else:  # square pixels, unless an angle says otherwise
            fy = _angle_focal(name, f, "camera_angle_y", where, h) if "camera_angle_y" in f else fx
        cx = _number(name, f, "cx", where) if "cx" in f else w / 2
        cy = _number(name, f, "cy", where) if "cy" in f else h / 2
        T = _matrix(name, frame, "transform_matrix", where)
        T = undo @ T if world is None else world.apply(T)
        entries.append((str(frame.get("file_path", i)), T, (int(w), int(h)), (fx, fy, cx, cy)))
    entries.sort(key=lambda e: _natural_key(e[0]))
    W, H = (int(width), int(height)) if width is not None and height is not None else entries[0][2]
    fps, keys, cams = 30.0, [], []
    for i, (_, T, (w, h), (fx, fy, cx, cy)) in enumerate(entries):
        s = H / h  # as for COLMAP's: scaled to the output's height, about the centre
        cams.append(Camera(W, H, fx * s, fy * s, W / 2 + (cx - w / 2) * s, cy * s, T))
        keys.append(Keyframe(T, fov_y_from_focal(fy, h), i / fps))
    names = [os.path.basename(e[0]) for e in entries]
    if n_frames is not None and n_frames != len(entries):
        cams, names = interpolate_keyframes(keys, n_frames, W, H, ease=False), []
    return CameraPath(cams, fps, "transforms.json", keys, notes, names)


def _load_colmap(name: str, width, height, n_frames, world: DataparserWorld | None) -> CameraPath:
    try:
        images = read_model(name)
    except ColmapError as e:
        raise CameraPathError(str(e)) from None
    except OSError as e:
        raise CameraPathError(f"{name}: {e.strerror or e}") from None
    images.sort(key=lambda image: _natural_key(image.name))
    first = images[0].camera
    W, H = (int(width), int(height)) if width is not None and height is not None else (first.width, first.height)
    _check_size(name, "the first image's camera's width x height", W, H)
    keys, cams = [], []
    fps = 30.0
    for i, image in enumerate(images):
        c = image.camera
        s = H / c.height  # scaled to the output's height, about the centre (a different aspect keeps the fov)
        T = image.T_world_camera if world is None else world.apply(NS_PROCESS_DATA_TURN @ image.T_world_camera)
        cams.append(Camera(W, H, c.fx * s, c.fy * s, W / 2 + (c.cx - c.width / 2) * s, c.cy * s, T))
        keys.append(Keyframe(T, fov_y_from_focal(c.fy, c.height), i / fps))
    names = [image.name for image in images]
    if n_frames is not None and n_frames != len(images):
        cams, names = interpolate_keyframes(keys, n_frames, W, H, ease=False), []
    distorted = sorted({image.camera.model for image in images} - PINHOLES)
    notes = [f"{', '.join(distorted)} distortion not drawn: pinhole views"] if distorted else []
    if world is not None:
        notes.append(world.note)
    return CameraPath(cams, fps, "colmap model", keys, notes, names)


# nerfstudio's ns-process-data turns COLMAP's world so (y and z swapped, then z flipped) and records it as a dataset's
# applied_transform; its COLMAP dataparser turns a model's world the same way
NS_PROCESS_DATA_TURN = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
MAX_DATAPARSER_BYTES = 1 << 20  # the file holds a 3x4 matrix and a number: a larger one is not it


@dataclass(frozen=True)
class DataparserWorld:
    """nerfstudio's dataparser world (module docstring): p' = scale (rotation p + translation)."""

    rotation: np.ndarray  # [3, 3]
    translation: np.ndarray  # [3]
    scale: float
    note: str

    def apply(self, T: np.ndarray) -> np.ndarray:
        """[4, 4] camera-to-world (OpenCV axes) in the dataset's world -> in the dataparser's: the centre moved as
        a point, the axes turned; the scale moves the centre only, so the camera stays a rotation."""
        out = np.eye(4)
        out[:3, :3] = self.rotation @ T[:3, :3]
        out[:3, 3] = self.scale * (self.rotation @ T[:3, 3] + self.translation)
        return out


def read_dataparser_transforms(path: str | os.PathLike) -> DataparserWorld:
    """nerfstudio's `dataparser_transforms.json`: {"transform": [[3 x 4]], "scale": s}, checked (a rotation and
    a finite translation, a positive scale)."""
    name = os.fspath(path)
    if os.path.isfile(name) and os.path.getsize(name) > MAX_DATAPARSER_BYTES:
        raise CameraPathError(f"{name}: {os.path.getsize(name):,} bytes is not a dataparser_transforms.json")
    data = _read_json(name)
    if not isinstance(data, dict):
        raise CameraPathError(f'{name}: expected a JSON object with "transform" and "scale"')
    try:
        m = np.asarray(data.get("transform"), dtype=np.float64)
    except (TypeError, ValueError):
        m = np.zeros(0)
    if m.shape not in ((3, 4), (4, 4)) or not np.all(np.isfinite(m)):
        raise CameraPathError(f"{name}: transform: expected a 3x4 matrix of finite numbers")
    _check_rotation(name, m[:3, :3], "transform")
    scale = _positive(name, data, "scale")
    note = f"taken into nerfstudio's dataparser world by {os.path.basename(name)} (scale {scale:.6g})"
    return DataparserWorld(m[:3, :3].copy(), m[:3, 3].copy(), scale, note)


# ------------------------------------------------------------------------------------------------ writing


def save_camera_path(
    path: str | os.PathLike,
    keyframes: Sequence[Keyframe | Camera],
    *,
    width: int,
    height: int,
    fps: float = 30.0,
    seconds: float | None = None,
    is_cycle: bool = False,
    n_frames: int | None = None,
) -> dict:
    """Write a keyframe path as a nerfstudio `camera_path.json` (atomically: a temp file renamed).

    This is the file the desktop viewer saves. It plays in `warpsplat render --path FILE.json`, reloads
    with `read_keyframes` for editing, and plays in `ns-render camera-path` (which reads `camera_path`).

    Args:
        path: the .json file to write (replaced if it exists).
        keyframes: the keys in order, as `Keyframe`s (pose, vertical fov, optional time_s) or `Camera`s
            (pose and vertical fov taken from the camera; intrinsics beyond the fov are not kept).
            Poses are `T_world_camera` in OpenCV axes; they are converted to OpenGL axes in the file.
        width, height: the render size stored in the file (render_width / render_height).
        fps: frames per second.
        seconds: duration; None = the keys' last time_s (if they all have one) or SECONDS_PER_TRANSITION per
            transition. Keys without time_s are spaced by distance and angle travelled (`key_times`) over it.
        is_cycle: loop from the last key back to the first (needs >= 3 keys).
        n_frames: frames sampled into `camera_path`; None = round(fps * seconds).

    Returns:
        The JSON object written.

    Example (viewer):
        keys = [Keyframe.from_camera(c) for c in key_cameras]
        save_camera_path("path.json", keys, width=1920, height=1080, fps=30)
    """
    keys = [k if isinstance(k, Keyframe) else Keyframe.from_camera(k) for k in keyframes]
    keys = [Keyframe(k.T_world_camera.copy(), float(k.fov_y_deg), k.time_s) for k in keys]
    if not keys:
        raise ValueError("save_camera_path: need at least one keyframe")
    if is_cycle and len(keys) < 3:
        raise ValueError(f"save_camera_path: a cycle needs at least 3 keyframes, got {len(keys)}")
    if not fps > 0:
        raise ValueError(f"save_camera_path: fps {fps} must be > 0")
    n_tr = len(keys) if is_cycle else len(keys) - 1
    have_times = all(k.time_s is not None for k in keys)
    if any(k.time_s is not None for k in keys) and not have_times:
        raise ValueError("save_camera_path: either all or none of the keyframes have time_s")
    if have_times:
        times = np.array([k.time_s for k in keys], dtype=np.float64)
        times -= times[0]
        if np.any(np.diff(times) <= 0):
            raise ValueError("save_camera_path: keyframe time_s must increase strictly")
        if is_cycle:
            end = seconds if seconds is not None else times[-1] + (np.diff(times).mean() if n_tr > 1 else 1.0)
            times = np.concatenate([times, [end]])
        total = float(times[-1]) if n_tr else 0.0
        if seconds is not None and n_tr and not is_cycle:
            times *= seconds / total
            total = seconds
    else:
        total = float(seconds) if seconds is not None else SECONDS_PER_TRANSITION * n_tr
        rel = key_times(keys, closed=is_cycle) if n_tr else np.zeros(1)
        times = rel / rel[-1] * total if n_tr and rel[-1] > 0 else rel
    total = max(total, 0.0)
    if seconds is None:
        seconds = total if n_tr else 1.0
    for k, t in zip(keys, times, strict=False):
        k.time_s = float(t)
    steps = np.diff(times)[:n_tr] if n_tr else np.zeros(0)
    default_tr = float(steps.mean()) if n_tr else float(seconds)

    count = n_frames if n_frames is not None else max(int(round(fps * seconds)), 1)
    cams = (
        interpolate_keyframes(keys, count, width, height, ease=False, closed=is_cycle, loop_time_s=float(times[-1]))
        if n_tr
        else [Camera.from_fov(width, height, keys[0].fov_y_deg, keys[0].T_world_camera)] * count
    )
    aspect = width / height

    def flat(T: np.ndarray) -> list[float]:
        return [float(v) for v in opencv_to_opengl(T).reshape(-1)]  # row-major

    data = {
        "warpsplat": FORMAT_VERSION,
        "camera_type": "perspective",
        "render_width": int(width),
        "render_height": int(height),
        "fps": float(fps),
        "seconds": float(seconds),
        "is_cycle": bool(is_cycle),
        "smoothness_value": 0.5,
        "default_fov": float(keys[0].fov_y_deg),
        "default_transition_sec": default_tr,
        "keyframes": [
            {
                "matrix": flat(k.T_world_camera),
                "fov": float(k.fov_y_deg),
                "aspect": aspect,
                # every transition is written as an override so uneven timing survives nerfstudio's editor
                "override_transition_enabled": i < n_tr,
                "override_transition_sec": float(steps[i]) if i < n_tr else None,
            }
            for i, k in enumerate(keys)
        ],
        "camera_path": [
            {"camera_to_world": flat(c.T_world_camera), "fov": c.fov_y_deg, "aspect": aspect} for c in cams
        ],
    }
    from scenes.atomic import atomic_write

    with atomic_write(path) as f:
        f.write(json.dumps(data, indent=1).encode("utf-8"))
    return data
