"""COLMAP sparse models (`cameras` and `images`, binary `.bin` or text `.txt`): the cameras a scene was trained
from, for `warpsplat render --path` and the viewer's training-camera snaps.

A 3DGS trainer's PLY is in the frame of the COLMAP model it was trained on, and COLMAP's cameras use OpenCV axes,
as this project does, so poses need no change of axes. (A trainer that normalises the world, as gsplat's does by
default, exports its PLY in its own frame: its dataset's model does not line up with it.)

    images     per registered image: IMAGE_ID, QW QX QY QZ, TX TY TZ, CAMERA_ID, NAME; the quaternion (w first)
               and translation are world-to-camera, so the camera's centre is -R^T t. The text form has a
               second line per image (its 2D points), which is skipped; the binary form is
               u64 count, then per image i32 id, f64 x 7, i32 camera, the name up to a NUL byte, u64 points,
               and 24 bytes a point.
    cameras    CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]; binary: u64 count, then per camera i32 id, i32 model,
               u64 width, u64 height, f64 params (as many as the model has).

Cameras are pinholes here: a model's focal lengths and principal point are used and its distortion is not
(the note says so); an equirectangular camera is refused. A model is found from a path that is its `images` or
`cameras` file, its folder, or a dataset folder holding it in `sparse/0` or `sparse`; where both forms are
there, the binary one is read, as COLMAP does. Bad files raise `ColmapError` (a ValueError) with a one-line
message naming the file.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from .rotations import quat_to_rotmat

# model id: (name, parameter count, one focal length (f, cx, cy, ...) rather than (fx, fy, cx, cy, ...))
MODELS = {
    0: ("SIMPLE_PINHOLE", 3, True),
    1: ("PINHOLE", 4, False),
    2: ("SIMPLE_RADIAL", 4, True),
    3: ("RADIAL", 5, True),
    4: ("OPENCV", 8, False),
    5: ("OPENCV_FISHEYE", 8, False),
    6: ("FULL_OPENCV", 12, False),
    7: ("FOV", 5, False),
    8: ("SIMPLE_RADIAL_FISHEYE", 4, True),
    9: ("RADIAL_FISHEYE", 5, True),
    10: ("THIN_PRISM_FISHEYE", 12, False),
    11: ("RAD_TAN_THIN_PRISM_FISHEYE", 16, False),
    12: ("SIMPLE_DIVISION", 4, True),
    13: ("DIVISION", 5, False),
    14: ("SIMPLE_FISHEYE", 3, True),
    15: ("FISHEYE", 4, False),
    16: ("EUCM", 6, False),
}
MODEL_IDS = {name: i for i, (name, _, _) in MODELS.items()}
PINHOLES = {"SIMPLE_PINHOLE", "PINHOLE"}
POINT2D_BYTES = 24  # f64 x, f64 y, i64 point id
MAX_SIDE = 1 << 20  # a camera's width or height beyond this is a corrupt file


class ColmapError(ValueError):
    """A COLMAP model that cannot be used; the message is one line naming the file."""


@dataclass
class ColmapCamera:
    model: str
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float


@dataclass
class ColmapImage:
    name: str
    T_world_camera: np.ndarray  # [4, 4] camera-to-world, OpenCV axes
    camera: ColmapCamera


def find_model(path: str) -> tuple[str, str] | None:
    """(folder, ".bin" or ".txt") of the COLMAP model that `path` names, or None when it names none."""
    base = os.path.basename(path)
    stem, ext = os.path.splitext(base)
    if os.path.isfile(path) and stem in ("images", "cameras") and ext in (".bin", ".txt"):
        return os.path.dirname(path) or ".", ext
    if not os.path.isdir(path):
        return None
    for folder in (path, os.path.join(path, "sparse", "0"), os.path.join(path, "sparse")):
        for ext in (".bin", ".txt"):
            if os.path.isfile(os.path.join(folder, "images" + ext)):
                return folder, ext
    return None


def read_model(path: str) -> list[ColmapImage]:
    """The registered images of the COLMAP model at `path` (see `find_model`), in the file's order."""
    found = find_model(path)
    if found is None:
        raise ColmapError(f"{path}: no COLMAP model (images.bin or images.txt) in it, in sparse/0 or in sparse")
    folder, ext = found
    cameras_path, images_path = os.path.join(folder, "cameras" + ext), os.path.join(folder, "images" + ext)
    if not os.path.isfile(cameras_path):
        raise ColmapError(f"{images_path}: its cameras{ext} is missing beside it")
    if ext == ".bin":
        cameras, images = _cameras_bin(cameras_path), _images_bin(images_path)
    else:
        cameras, images = _cameras_txt(cameras_path), _images_txt(images_path)
    if not images:
        raise ColmapError(f"{images_path}: the model has no registered images")
    out = []
    for name, q, t, camera_id in images:
        if camera_id not in cameras:
            raise ColmapError(f"{images_path}: image {name!r} uses camera {camera_id}, which {cameras_path} lacks")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(t)) and np.linalg.norm(q) > 0):
            raise ColmapError(f"{images_path}: image {name!r}: its pose is not finite (or its quaternion is 0)")
        R = quat_to_rotmat(q)  # world-to-camera
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R.T, -R.T @ t
        out.append(ColmapImage(name, T, cameras[camera_id]))
    return out


def _camera(path: str, camera_id: int, model: str, width: float, height: float, params) -> ColmapCamera:
    """A camera's pinhole from its model's parameters, checked."""
    where = f"{path}: camera {camera_id}"
    if model not in MODEL_IDS:
        raise ColmapError(f"{where}: model {model} is not a perspective camera that can be drawn as a pinhole")
    _, count, single = MODELS[MODEL_IDS[model]]
    if len(params) != count:
        raise ColmapError(f"{where}: {model} takes {count} parameters, the file gives {len(params)}")
    if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE and width == int(width) and height == int(height)):
        raise ColmapError(f"{where}: size {width:g}x{height:g} is not a size in whole pixels up to {MAX_SIDE:,}")
    fx, fy, cx, cy = (params[0], params[0], params[1], params[2]) if single else tuple(params[:4])
    if not (all(math.isfinite(v) for v in (fx, fy, cx, cy)) and fx > 0 and fy > 0):
        raise ColmapError(f"{where}: focal lengths {fx:g}, {fy:g} and principal point {cx:g}, {cy:g} are not usable")
    return ColmapCamera(model, int(width), int(height), float(fx), float(fy), float(cx), float(cy))


# ------------------------------------------------------------------------------------------------ binary


class _Reader:
    """Reads a binary file's fields in order; running past its end is a ColmapError naming the file. The file is
    mapped, not read: a large reconstruction's images.bin is mostly 2D points (24 bytes each, often GBs), which
    are skipped."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self.at = 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ColmapError(f"{self.path}: ends at byte {len(self.data):,}, inside a record (truncated?)")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def count(self, least_bytes: int, what: str) -> int:
        """A u64 count of records of at least `least_bytes` each: refused when the file cannot hold them."""
        (n,) = self.take("<Q")
        if n * least_bytes > len(self.data) - self.at:
            raise ColmapError(f"{self.path}: declares {n:,} {what}, more than its {len(self.data):,} bytes hold")
        return n

    def name(self) -> str:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ColmapError(f"{self.path}: a name runs to the end of the file (truncated?)")
        name = self.data[self.at : end].decode("utf-8", errors="replace")
        self.at = end + 1
        return name

    def done(self) -> None:
        if self.at != len(self.data):
            raise ColmapError(f"{self.path}: {len(self.data) - self.at:,} bytes follow its last record")


def _cameras_bin(path: str) -> dict[int, ColmapCamera]:
    r = _Reader(path)
    cameras = {}
    for _ in range(r.count(24, "cameras")):
        camera_id, model_id, width, height = r.take("<iiQQ")
        if model_id not in MODELS:
            raise ColmapError(f"{path}: camera {camera_id}: model id {model_id} is not a perspective camera model")
        name, n_params, _ = MODELS[model_id]
        cameras[camera_id] = _camera(path, camera_id, name, width, height, r.take(f"<{n_params}d"))
    r.done()
    return cameras


def _images_bin(path: str) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    r = _Reader(path)
    images = []
    for _ in range(r.count(4 + 7 * 8 + 4 + 1 + 8, "images")):
        (_image_id, *pose, camera_id) = r.take("<i7di")
        name = r.name()
        (n_points,) = r.take("<Q")
        if n_points * POINT2D_BYTES > len(r.data) - r.at:
            raise ColmapError(f"{path}: image {name!r} declares {n_points:,} points, past the end of the file")
        r.at += n_points * POINT2D_BYTES
        images.append((name, np.array(pose[:4]), np.array(pose[4:]), camera_id))
    r.done()
    return images


# ------------------------------------------------------------------------------------------------ text


def _lines(path: str):
    """(line number, line) of a text file, one at a time: a large reconstruction's images.txt is mostly 2D points."""
    try:
        with open(path, encoding="utf-8") as f:
            yield from enumerate((line.rstrip("\r\n") for line in f), 1)
    except UnicodeDecodeError:
        raise ColmapError(f"{path}: not a text (UTF-8) file") from None


def _numbers(path: str, line_no: int, fields: list[str], what: str) -> list[float]:
    try:
        return [float(v) for v in fields]
    except ValueError:
        raise ColmapError(f"{path}: line {line_no}: {what}: expected numbers, got {' '.join(fields)[:60]!r}") from None


def _cameras_txt(path: str) -> dict[int, ColmapCamera]:
    cameras = {}
    for i, line in _lines(path):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 4:
            raise ColmapError(f"{path}: line {i}: expected CAMERA_ID MODEL WIDTH HEIGHT PARAMS...")
        camera_id = int(_numbers(path, i, fields[:1], "CAMERA_ID")[0])
        width, height, *params = _numbers(path, i, fields[2:], "WIDTH HEIGHT PARAMS")
        cameras[camera_id] = _camera(path, camera_id, fields[1], width, height, params)
    return cameras


def _images_txt(path: str) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    """Image lines: the first line of each pair that is not a comment; the line after it (the image's 2D
    points, often empty) is skipped whatever it holds."""
    images, points_next = [], False
    for i, line in _lines(path):
        if points_next:
            points_next = False
            continue
        fields = line.split(maxsplit=9)
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 10:
            raise ColmapError(f"{path}: line {i}: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME")
        values = _numbers(path, i, fields[1:9], "QW QX QY QZ TX TY TZ CAMERA_ID")
        images.append((fields[9], np.array(values[:4]), np.array(values[4:7]), int(values[7])))
        points_next = True
    return images
