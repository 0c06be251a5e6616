"""COLMAP sparse models as camera paths (renderer/paths/colmap.py, formats.py `load_camera_path`).

The bundled `garden_sparse.zip` (tests/data/make_colmap.py) is a model that pycolmap, COLMAP's own bindings, wrote
in both forms from the real cameras of gsplat's `test_garden.npz`: so the cameras read here must be the npz's,
pose and intrinsics, through an outside writer. Then what a user may give (the model's folder, a dataset folder,
either file), re-sampling, another output size, and bad models: one-line errors naming the file.
"""

from __future__ import annotations

import math
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from renderer.paths import CameraPathError, load_camera_path
from tests.conftest import bundled

RADIAL = 2  # the index, in name order, of the image whose camera is SIMPLE_RADIAL at half the size


@pytest.fixture(scope="module")
def garden():
    d = np.load(bundled("test_garden.npz"))
    return d["viewmats"].astype(np.float64), d["Ks"][0].astype(np.float64), int(d["width"]), int(d["height"])


@pytest.fixture
def model(tmp_path) -> Path:
    """The bundled model unpacked: tmp/bin and tmp/txt."""
    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path)
    return tmp_path


@pytest.mark.parametrize("form", ["bin", "txt"])
def test_the_cameras_are_the_ones_pycolmap_wrote(model, garden, form):
    viewmats, K, W, H = garden
    cp = load_camera_path(model / form)
    assert cp.kind == "colmap model" and len(cp.cameras) == 3 and cp.fps == 30
    assert cp.notes == ["SIMPLE_RADIAL distortion not drawn: pinhole views"]
    for i, (cam, V) in enumerate(zip(cp.cameras, viewmats, strict=True)):  # name order, not the ids' order
        np.testing.assert_allclose(cam.viewmat, V, atol=1e-6)
        assert (cam.width, cam.height) == (W, H)  # the first image's camera
        want = (K[0, 0], K[0, 0] if i == RADIAL else K[1, 1], K[0, 2], K[1, 2])  # SIMPLE_RADIAL: one focal
        assert (cam.fx, cam.fy, cam.cx, cam.cy) == pytest.approx(want, rel=1e-6)  # the half-size camera scaled x2
    # the keyframes, which re-sampling goes through, carry each image's vertical field of view
    assert cp.keyframes[0].fov_y_deg == pytest.approx(math.degrees(2 * math.atan(H / 2 / K[1, 1])))


def test_every_way_of_naming_the_model_reads_it(model, garden):
    want = [c.viewmat for c in load_camera_path(model / "bin").cameras]
    dataset = model / "dataset"
    shutil.copytree(model / "bin", dataset / "sparse" / "0")
    shutil.copytree(model / "txt", model / "flat" / "sparse")
    for path in (model / "bin" / "images.bin", model / "bin" / "cameras.bin", model / "txt" / "images.txt",
                 dataset, model / "flat"):  # fmt: skip
        got = [c.viewmat for c in load_camera_path(path).cameras]
        np.testing.assert_allclose(got, want, atol=1e-12, err_msg=str(path))
    both = model / "both"
    shutil.copytree(model / "bin", both)
    for name in ("images.txt", "cameras.txt"):  # a text model beside a binary one that differs: binary wins
        (both / name).write_text((model / "txt" / name).read_text().replace("DSC08000", "ZZZ"))
    np.testing.assert_allclose([c.viewmat for c in load_camera_path(both).cameras], want, atol=1e-12)


def test_more_frames_pass_through_the_images_and_another_size_scales_them(model, garden):
    viewmats, K, W, H = garden
    cp = load_camera_path(model / "bin", n_frames=5)
    for i, V in zip((0, 2, 4), viewmats, strict=True):
        np.testing.assert_allclose(cp.cameras[i].viewmat, V, atol=1e-6)
    half = load_camera_path(model / "bin", width=W // 2, height=H // 2)
    cam = half.cameras[0]
    assert (cam.width, cam.height) == (W // 2, H // 2)
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == pytest.approx((K[0, 0] / 2, K[1, 1] / 2, K[0, 2] / 2, K[1, 2] / 2))
    # another aspect keeps the vertical field of view and the principal point's offset from the centre, scaled
    cam = load_camera_path(model / "bin", width=W, height=H // 2).cameras[0]
    want = (K[0, 0] / 2, K[1, 1] / 2, W / 2 + (K[0, 2] - W / 2) / 2, K[1, 2] / 2)
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == pytest.approx(want)


# ----------------------------------------------------------------------------------------------- bad models
def _images_bin(*images: tuple[int, list[float], int, str, int]) -> bytes:
    """images.bin of (id, [qw qx qy qz tx ty tz], camera id, name, points)."""
    out = struct.pack("<Q", len(images))
    for image_id, pose, camera_id, name, points in images:
        out += struct.pack("<i7di", image_id, *pose, camera_id) + name.encode() + b"\0"
        out += struct.pack("<Q", points) + bytes(24 * points)
    return out


def _cameras_bin(*cameras: tuple[int, int, int, int, list[float]]) -> bytes:
    """cameras.bin of (id, model id, width, height, params)."""
    out = struct.pack("<Q", len(cameras))
    for camera_id, model_id, w, h, params in cameras:
        out += struct.pack(f"<iiQQ{len(params)}d", camera_id, model_id, w, h, *params)
    return out


IDENTITY = [1.0, 0, 0, 0, 0, 0, 0]
PINHOLE = (1, 1, 64, 48, [50.0, 50.0, 32.0, 24.0])
BIN = {"images.bin": _images_bin((1, IDENTITY, 1, "a", 0)), "cameras.bin": _cameras_bin(PINHOLE)}
TXT = {"images.txt": "1 1 0 0 0 0 0 0 1 a\n\n", "cameras.txt": "1 PINHOLE 64 48 50 50 32 24\n"}


@pytest.mark.parametrize(
    "files, message",
    [
        ({}, "no COLMAP model (images.bin or images.txt) in it, in sparse/0 or in sparse"),
        ({"images.bin": BIN["images.bin"]}, "its cameras.bin is missing beside it"),
        (BIN | {"images.bin": _images_bin()}, "the model has no registered images"),
        (BIN | {"images.bin": _images_bin((1, IDENTITY, 2, "a", 0))}, "image 'a' uses camera 2, which"),
        (BIN | {"images.bin": _images_bin((1, [0.0] * 7, 1, "a", 0))}, "image 'a': its pose is not finite"),
        (BIN | {"images.bin": _images_bin((1, IDENTITY, 1, "a", 3))[:-10]}, "declares 3 points, past the end"),
        (BIN | {"cameras.bin": BIN["cameras.bin"][:48]}, "ends at byte 48, inside a record (truncated?)"),
        (BIN | {"images.bin": _images_bin((1, IDENTITY, 1, "abcdefghijklmnop", 0))[:82]}, "a name runs to the end"),
        (BIN | {"images.bin": BIN["images.bin"] + b"x"}, "1 bytes follow its last record"),
        (BIN | {"images.bin": struct.pack("<Q", 2**40) + bytes(100)}, "declares 1,099,511,627,776 images"),
        (BIN | {"cameras.bin": _cameras_bin((1, 17, 64, 48, [64.0, 48.0]))}, "model id 17 is not a perspective"),
        (BIN | {"cameras.bin": _cameras_bin((1, 1, 0, 48, [50.0, 50, 32, 24]))}, "size 0x48 is not a size"),
        (BIN | {"cameras.bin": _cameras_bin((1, 1, 64, 48, [-50.0, 50, 32, 24]))}, "focal lengths -50, 50"),
        (TXT | {"cameras.txt": "1 EQUIRECTANGULAR 64 32 64 32\n"}, "model EQUIRECTANGULAR is not a perspective"),
        (TXT | {"cameras.txt": "1 PINHOLE 64 48 50 50 32\n"}, "PINHOLE takes 4 parameters, the file gives 3"),
        (TXT | {"cameras.txt": "1 PINHOLE 64 48 50 50 32 x\n"}, "line 1: WIDTH HEIGHT PARAMS: expected numbers"),
        (TXT | {"images.txt": "# c\n1 1 0 0 0 0 0 0 1\n\n"}, "line 2: expected IMAGE_ID QW QX QY QZ TX TY TZ"),
        (TXT | {"images.txt": b"\xff\xfe\n"}, "not a text (UTF-8) file"),
    ],
)
def test_bad_models_fail_in_one_line_naming_the_file(tmp_path, files, message):
    for name, body in files.items():
        (tmp_path / name).write_bytes(body.encode() if isinstance(body, str) else body)
    with pytest.raises(CameraPathError) as e:
        load_camera_path(tmp_path)
    assert message in str(e.value) and "\n" not in str(e.value) and str(tmp_path) in str(e.value)


def test_a_good_hand_made_model_reads(tmp_path):
    """The hand-made files above are well formed apart from what each case breaks: unbroken, they read."""
    (tmp_path / "images.txt").write_text("# c\n3 1 0 0 0 1 2 3 1 b name with spaces.png\n1.0 2.0 -1\n")
    (tmp_path / "cameras.txt").write_text("1 SIMPLE_PINHOLE 64 48 50 32 24\n")
    cam = load_camera_path(tmp_path).cameras[0]
    np.testing.assert_allclose(cam.position, [-1, -2, -3])  # centre = -R^T t
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == (50, 50, 32, 24)
    (tmp_path / "images.bin").write_bytes(_images_bin((1, [0.0, 1, 0, 0, 0, 0, 1], 1, "a", 2)))
    (tmp_path / "cameras.bin").write_bytes(_cameras_bin(PINHOLE))
    cam = load_camera_path(tmp_path).cameras[0]  # a half turn about x: the camera sits at (0, 0, 1)
    np.testing.assert_allclose(cam.position, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(cam.T_world_camera[:3, :3], np.diag([1.0, -1, -1]), atol=1e-12)


@pytest.mark.parametrize("form", ["bin", "txt"])
def test_an_opencv_camera_reads_as_its_pinhole(tmp_path, form):
    """COLMAP's OPENCV model (fx, fy, cx, cy, k1, k2, p1, p2: 8 parameters, model id 4) is the one its undistorter
    and most datasets use: its pinhole part is read, in both forms, and the note says the distortion is not drawn."""
    params = [50.0, 52.0, 30.0, 25.0, 0.1, 0.01, 0.001, 0.002]
    if form == "bin":
        (tmp_path / "images.bin").write_bytes(_images_bin((1, IDENTITY, 1, "a", 1)))
        (tmp_path / "cameras.bin").write_bytes(_cameras_bin((1, 4, 64, 48, params)))
    else:
        (tmp_path / "images.txt").write_text("1 1 0 0 0 0 0 0 1 a\n\n")
        (tmp_path / "cameras.txt").write_text("1 OPENCV 64 48 " + " ".join(map(str, params)) + "\n")
    cp = load_camera_path(tmp_path)
    cam = cp.cameras[0]
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == (50, 52, 30, 25)
    assert cp.notes == ["OPENCV distortion not drawn: pinhole views"]
