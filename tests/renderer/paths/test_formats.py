"""Camera path files (renderer/paths/formats.py): conventions against hand-computed poses, real-format files
written following the documented schemas, the keyframe file round trip, and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from renderer import Camera, look_at_pose
from renderer.paths import (
    CameraPathError,
    Keyframe,
    load_camera_path,
    opencv_to_opengl,
    opengl_to_opencv,
    read_keyframes,
    save_camera_path,
)
from renderer.paths.formats import MAX_PATH_FRAMES
from tests.conftest import bundled

# A nerfstudio (OpenGL axes) camera at (1, 2, 3) turned +90 degrees about world +Y: its rotation is Ry(90),
# so it looks along -column 2 = (-1, 0, 0), its up is (0, 1, 0) and its right (0, 0, -1).
R_GL = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])
C2W_GL_ROWS = [0.0, 0, 1, 1, 0, 1, 0, 2, -1, 0, 0, 3, 0, 0, 0, 1]  # row-major, as nerfstudio flattens it
# The same camera in OpenCV axes, by hand: x right (0,0,-1), y down (0,-1,0), z forward (-1,0,0) as columns.
R_CV = np.array([[0.0, 0, -1], [0, -1, 0], [-1, 0, 0]])


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def ns_file(tmp_path: Path, **over) -> Path:
    data = {
        "camera_type": "perspective",
        "render_width": 64,
        "render_height": 48,
        "fps": 24,
        "seconds": 1.0,
        "camera_path": [
            {"camera_to_world": C2W_GL_ROWS, "fov": 50.0, "aspect": 4 / 3},
            {"camera_to_world": C2W_GL_ROWS, "fov": 40.0, "aspect": 4 / 3},
        ],
    }
    data.update(over)
    return write_json(tmp_path / "camera_path.json", data)


def test_opengl_to_opencv_by_hand():
    T_gl = np.array(C2W_GL_ROWS).reshape(4, 4)
    T = opengl_to_opencv(T_gl)
    np.testing.assert_array_equal(T[:3, :3], R_CV)
    np.testing.assert_array_equal(T[:3, 3], [1, 2, 3])
    np.testing.assert_array_equal(opencv_to_opengl(T), T_gl)


def test_nerfstudio_camera_path(tmp_path):
    cp = load_camera_path(ns_file(tmp_path))
    assert cp.kind == "nerfstudio camera_path" and len(cp.cameras) == 2
    assert cp.fps == pytest.approx(2.0)  # len(camera_path) / seconds, as ns-render computes it
    c = cp.cameras[0]
    np.testing.assert_allclose(c.T_world_camera[:3, :3], R_CV)
    np.testing.assert_allclose(c.position, [1, 2, 3])
    assert (c.width, c.height) == (64, 48)
    f = 24 / math.tan(math.radians(25))  # (H / 2) / tan(fov / 2), fov vertical
    assert (c.fx, c.fy, c.cx, c.cy) == pytest.approx((f, f, 32, 24))
    # a point 2 units in front of the GL camera (along -Z_gl = world -X) lands at the image centre, depth 2;
    # a point above it (world +Y = the GL camera's up) lands above the centre (OpenCV y down)
    for world, expect in (([-1.0, 2, 3], (32, 24, 2)), ([-1.0, 2.5, 3], (32, 24 - 0.25 * f, 2))):
        x, y, z = (c.viewmat @ np.array([*world, 1.0]))[:3]
        assert (c.fx * x / z + c.cx, c.fy * y / z + c.cy, z) == pytest.approx(expect)
    assert cp.cameras[1].fov_y_deg == pytest.approx(40.0)


def test_nerfstudio_size_and_frame_count_overrides(tmp_path):
    cp = load_camera_path(ns_file(tmp_path), width=96, height=64, n_frames=5)
    assert len(cp.cameras) == 5 and (cp.cameras[0].width, cp.cameras[0].height) == (96, 64)
    assert cp.fps == pytest.approx(5.0)  # same duration, more frames
    assert cp.cameras[0].fov_y_deg == pytest.approx(50) and cp.cameras[-1].fov_y_deg == pytest.approx(40)


def test_nerfstudio_keyframes_only(tmp_path):
    a = [1.0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 5, 0, 0, 0, 1]  # GL camera at (0, 0, 5) looking down -Z
    data = {
        "render_width": 64,
        "render_height": 48,
        "fps": 10,
        "seconds": 3.0,
        "default_fov": 60.0,
        "default_transition_sec": 1.0,
        "is_cycle": False,
        "keyframes": [
            {"matrix": a, "fov": 60.0, "aspect": 1.33},
            {"matrix": C2W_GL_ROWS, "fov": 50.0, "aspect": 1.33, "override_transition_enabled": False},
            {"matrix": a, "fov": 40.0, "aspect": 1.33},
        ],
    }
    cp = load_camera_path(write_json(tmp_path / "k.json", data))
    assert cp.kind == "nerfstudio keyframes" and len(cp.cameras) == 30 and cp.fps == 10
    np.testing.assert_allclose(cp.cameras[0].T_world_camera[:3, :3], np.diag([1.0, -1, -1]))
    np.testing.assert_allclose(cp.cameras[0].position, [0, 0, 5])
    # key 1 at 1.5 s (the 3 s are shared by 2 transitions): frame 29 * 1.5 / 3 = 14.5 -> between 14 and 15
    kf = read_keyframes(tmp_path / "k.json")
    assert [k.time_s for k in kf.keyframes] == pytest.approx([0, 1.5, 3.0])
    np.testing.assert_allclose(kf.keyframes[1].T_world_camera[:3, :3], R_CV)


def garden_cameras_json(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray, int, int]:
    """An INRIA cameras.json built from the gsplat garden test data's real cameras (viewmats are
    world-to-camera, OpenCV). Listed test-first and out of name order, as the INRIA trainer writes it."""
    d = np.load(bundled("test_garden.npz"))
    viewmats, Ks = d["viewmats"].astype(np.float64), d["Ks"].astype(np.float64)
    W, H = int(d["width"]), int(d["height"])
    entries = []
    for i, (V, K) in enumerate(zip(viewmats, Ks, strict=True)):
        R_c2w = V[:3, :3].T
        entries.append({
            "id": 0, "img_name": f"DSC{8000 + i:05d}", "width": W, "height": H,
            "position": (-R_c2w @ V[:3, 3]).tolist(), "rotation": [row.tolist() for row in R_c2w],
            "fy": float(K[1, 1]), "fx": float(K[0, 0]),
        })  # fmt: skip
    order = [2, 0, 1]
    listed = [entries[i] | {"id": j} for j, i in enumerate(order)]
    return write_json(tmp_path / "cameras.json", listed), viewmats, Ks, W, H


def test_inria_cameras_from_real_garden_poses(tmp_path):
    path, viewmats, Ks, W, H = garden_cameras_json(tmp_path)
    cp = load_camera_path(path)
    assert cp.kind == "inria cameras" and len(cp.cameras) == 3
    for cam, V, K in zip(cp.cameras, viewmats, Ks, strict=True):  # sorted back into name order
        np.testing.assert_allclose(cam.viewmat, V, atol=1e-5)  # float32 source
        assert (cam.width, cam.height) == (W, H)
        assert cam.fy == pytest.approx(K[1, 1]) and cam.fx == cam.fy  # square pixels from the vertical fov
    # more frames interpolate through the training cameras; frames 0, 2, 4 are the cameras themselves
    cp5 = load_camera_path(path, n_frames=5, width=64, height=42)
    for i, V in zip((0, 2, 4), viewmats, strict=True):
        np.testing.assert_allclose(cp5.cameras[i].viewmat, V, atol=1e-5)
    assert cp5.cameras[0].fov_y_deg == pytest.approx(math.degrees(2 * math.atan(H / 2 / Ks[0, 1, 1])))


def test_keyframe_file_round_trip(tmp_path):
    keys = [
        Keyframe(look_at_pose([0, -1, -4], [0, 0, 0], [0, -1, 0]), 50.0),
        Keyframe(look_at_pose([3, -1, -2], [0, 0, 0], [0, -1, 0]), 55.0),
        Keyframe(look_at_pose([4, -2, 2], [0, 0.5, 0], [0, -1, 0]), 60.0),
    ]
    out = tmp_path / "viewer_path.json"
    data = save_camera_path(out, keys, width=64, height=48, fps=10, seconds=2.0)
    # nerfstudio schema: row-major OpenGL matrices, vertical fov, fps, seconds, sampled camera_path
    assert data["render_width"] == 64 and data["seconds"] == 2.0 and len(data["camera_path"]) == 20
    np.testing.assert_allclose(
        np.reshape(data["keyframes"][1]["matrix"], (4, 4)), opencv_to_opengl(keys[1].T_world_camera)
    )
    np.testing.assert_allclose(
        np.reshape(data["camera_path"][0]["camera_to_world"], (4, 4)),
        opencv_to_opengl(keys[0].T_world_camera),
    )

    cp = load_camera_path(out)
    assert len(cp.cameras) == 20 and cp.fps == pytest.approx(10)
    np.testing.assert_allclose(cp.cameras[0].T_world_camera, keys[0].T_world_camera, atol=1e-12)
    np.testing.assert_allclose(cp.cameras[-1].T_world_camera, keys[-1].T_world_camera, atol=1e-12)
    back = read_keyframes(out)
    assert back.fps == 10 and back.seconds == 2.0 and not back.is_cycle and (back.width, back.height) == (64, 48)
    for a, b in zip(back.keyframes, keys, strict=True):
        np.testing.assert_allclose(a.T_world_camera, b.T_world_camera, atol=1e-12)
        assert a.fov_y_deg == b.fov_y_deg
    # the keyframes alone (a file without camera_path) give the same cameras as the sampled path
    data.pop("camera_path")
    cp2 = load_camera_path(write_json(tmp_path / "keys_only.json", data))
    for a, b in zip(cp.cameras, cp2.cameras, strict=True):
        np.testing.assert_allclose(a.T_world_camera, b.T_world_camera, atol=1e-9)
    # Cameras are accepted as keys, and a saved cycle reloads as one
    cams = [Camera.from_fov(64, 48, k.fov_y_deg, k.T_world_camera) for k in keys]
    save_camera_path(out, cams, width=64, height=48, fps=10, is_cycle=True)
    assert read_keyframes(out).is_cycle and len(load_camera_path(out).cameras) == 60  # 3 transitions of 2 s


def ns(frames: list, **extra) -> str:
    """A nerfstudio file with a valid size and the given camera_path frames."""
    return json.dumps({"render_width": 64, "render_height": 48, "camera_path": frames, **extra})


def inria(**fields) -> str:
    """An INRIA list with one camera: valid fields, then `fields` (None removes a field)."""
    cam = {"img_name": "a", "width": 64, "height": 48, "fx": 50, "fy": 50, "position": [0, 0, 0],
           "rotation": np.eye(3).tolist()} | fields  # fmt: skip
    return json.dumps([{k: v for k, v in cam.items() if v is not None}])


GOOD = {"camera_to_world": C2W_GL_ROWS, "fov": 50}
SCALED = [2.0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
MIRRORED = [-1.0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]  # orthonormal, det -1: would render mirrored


@pytest.mark.parametrize(
    "content, match",
    [
        ("{not json", r"not valid JSON \(.* at line 1"),
        ("42", "expected a JSON object"),
        ("[]", "camera list is empty"),
        (ns([]), "camera_path: missing or empty"),
        (json.dumps({"camera_path": [GOOD]}), "render_width: missing"),
        (ns([GOOD, {"fov": 50}]), r"camera_path\[1\]\.camera_to_world: missing"),
        (ns([GOOD | {"camera_to_world": [1, 0, 0]}]), r"camera_path\[0\]\.camera_to_world: expected 16 numbers"),
        (ns([GOOD | {"camera_to_world": SCALED}]), "not a rotation"),
        (ns([GOOD | {"camera_to_world": MIRRORED}]), r"not a rotation .*det = -1"),
        (ns([GOOD | {"fov": 190}]), r"camera_path\[0\]\.fov: field of view 190"),
        (ns([GOOD | {"fov": 180}]), r"camera_path\[0\]\.fov: field of view 180\.0 degrees is not in \(0, 180\)"),
        (ns([GOOD], render_width=64.5), r"render_width/render_height: expected whole pixels, got 64.5x48"),
        (ns([GOOD], camera_type="fisheye"), "camera_type: 'fisheye'"),
        (inria(position=None), r"\[0\]\.position: expected 3"),
        (inria(fy=None), r"\[0\]\.fy: missing"),
        (inria(fy=-1), r"\[0\]\.fy: must be > 0"),
        (ns([GOOD], render_width=100_000, render_height=100_000),
         r"render_width x render_height 100000x100000: each side must be at most 8192 pixels"),
        (inria(width=8193), r"\[0\]\.width x height 8193x48: each side must be at most 8192"),
        (json.dumps({"render_width": 64, "render_height": 48, "fps": 30, "seconds": 3334,
                     "keyframes": [{"matrix": C2W_GL_ROWS}, {"matrix": C2W_GL_ROWS}]}),
         r"seconds 3334 at 30 fps gives 100,020 frames, more than the 100,000 a path may have"),
        (ns([GOOD], seconds=1e12), r"1 frames over seconds 1e\+12 gives 1e-12 frames per second, outside 0\.001-1000"),
        (ns([GOOD], fps=1e9), r"fps gives 1e\+09 frames per second, outside 0\.001-1000"),
    ],
    ids=["malformed", "number", "empty-list", "no-frames", "no-size", "no-matrix", "short-matrix", "scaled-matrix",
         "mirrored-matrix", "bad-fov", "fov-180", "fractional-size", "fisheye", "inria-no-position", "inria-no-fy",
         "inria-negative-fy", "too-large", "inria-too-large", "too-many-frames", "too-slow", "too-fast"],
)  # fmt: skip
def test_bad_files_give_one_line_errors_naming_file_and_field(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CameraPathError, match=match) as e:
        load_camera_path(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path))
    assert isinstance(e.value, ValueError)


def test_the_frame_limit_at_its_boundary(tmp_path):
    """Re-sampling to one frame more than MAX_PATH_FRAMES is refused before any camera is made (the file's own
    count is checked the same way, in the bad-file cases; 100,000 cameras take a minute to build here, so the
    largest accepted count is not built)."""
    path = tmp_path / "p.json"
    keys = [{"matrix": C2W_GL_ROWS}, {"matrix": C2W_GL_ROWS}]
    path.write_text(json.dumps({"render_width": 8, "render_height": 8, "fps": 1000, "seconds": 100, "keyframes": keys}))
    with pytest.raises(CameraPathError, match=r"re-sampling gives 100,001 frames, more than the 100,000"):
        load_camera_path(path, n_frames=MAX_PATH_FRAMES + 1)
    assert len(load_camera_path(path, n_frames=10).cameras) == 10


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such camera path file"):
        load_camera_path(tmp_path / "nope.json")


def garden_transforms(tmp_path: Path, applied: np.ndarray | None = None) -> tuple[Path, np.ndarray, np.ndarray]:
    """A nerfstudio / instant-ngp transforms.json of the garden test data's real cameras, written by its documented
    convention (each frame's transform_matrix camera-to-world, OpenGL axes, rows; fl_x, fl_y, cx, cy, w, h shared),
    frames out of name order; `applied`: the 3x4 world change ns-process-data applies and records."""
    d = np.load(bundled("test_garden.npz"))
    viewmats, K = d["viewmats"].astype(np.float64), d["Ks"][0].astype(np.float64)
    frames = []
    for i in (2, 0, 1):
        c2w_gl = np.linalg.inv(viewmats[i]) @ np.diag([1.0, -1.0, -1.0, 1.0])
        if applied is not None:
            A = np.eye(4)
            A[:3] = applied
            c2w_gl = A @ c2w_gl
        frames.append({"file_path": f"images/frame_{i + 1:05d}.jpg", "transform_matrix": c2w_gl.tolist()})
    data = {"w": int(d["width"]), "h": int(d["height"]), "fl_x": K[0, 0], "fl_y": K[1, 1], "cx": K[0, 2],
            "cy": K[1, 2], "frames": frames}  # fmt: skip
    if applied is not None:
        data["applied_transform"] = applied.tolist()
    return write_json(tmp_path / "transforms.json", data), viewmats, K


def test_transforms_json_cameras_are_the_garden_cameras(tmp_path):
    path, viewmats, K = garden_transforms(tmp_path)
    cp = load_camera_path(path)
    assert cp.kind == "transforms.json" and cp.names == ["frame_00001.jpg", "frame_00002.jpg", "frame_00003.jpg"]
    for cam, V in zip(cp.cameras, viewmats, strict=True):
        np.testing.assert_allclose(cam.viewmat, V, atol=1e-5)
        assert (cam.fx, cam.fy, cam.cx, cam.cy) == pytest.approx((K[0, 0], K[1, 1], K[0, 2], K[1, 2]))
    # ns-process-data's world change (y and z swapped, then z flipped), recorded as applied_transform: undone
    applied = np.eye(4)[:3][[0, 2, 1]]
    applied[2] *= -1
    path, viewmats, _ = garden_transforms(tmp_path, applied)
    cp = load_camera_path(path)
    np.testing.assert_allclose([c.viewmat for c in cp.cameras], viewmats, atol=1e-5)
    assert cp.notes and "applied_transform undone" in cp.notes[0]


def test_blender_transforms_take_the_size_from_the_images(tmp_path):
    """NeRF-synthetic (Blender) datasets give camera_angle_x alone, and file_path without the extension: the size
    comes from each image's header, the focal length from the angle, square pixels, the principal point centred."""
    from PIL import Image

    (tmp_path / "train").mkdir()
    Image.new("RGBA", (80, 60)).save(tmp_path / "train" / "r_0.png")
    pose = look_at_pose([0, -1, -4], [0, 0, 0], [0, -1, 0])
    data = {"camera_angle_x": 0.69, "frames": [{"file_path": "./train/r_0", "transform_matrix":
                                                opencv_to_opengl(pose).tolist()}]}  # fmt: skip
    cam = load_camera_path(write_json(tmp_path / "transforms_train.json", data)).cameras[0]
    assert (cam.width, cam.height) == (80, 60) and cam.fx == pytest.approx(40 / math.tan(0.345)) and cam.fy == cam.fx
    assert (cam.cx, cam.cy) == (40, 30)
    np.testing.assert_allclose(cam.T_world_camera, pose, atol=1e-12)
    data["frames"][0]["file_path"] = "./train/missing"
    with pytest.raises(CameraPathError, match=r"frames\[0\]: no w and h, and no image at file_path .*--size WxH"):
        load_camera_path(write_json(tmp_path / "t2.json", data))
    data = {"w": 80, "h": 60, "camera_angle_x": 4.0, "frames": [{"transform_matrix": np.eye(4).tolist()}]}
    with pytest.raises(CameraPathError, match="camera_angle_x: 4.0 radians is not an angle of view"):
        load_camera_path(write_json(tmp_path / "t3.json", data))
    data = {"w": 80, "h": 60, "fl_x": 50.0, "frames": [{"file_path": "a.png"}]}
    with pytest.raises(CameraPathError, match=r"frames\[0\].transform_matrix: missing"):
        load_camera_path(write_json(tmp_path / "t4.json", data))


def test_key_times_are_kept_relative_to_the_first_key(tmp_path):
    """Keys timed from 5 s play from 0: the path lasts 3 s, not 8 (a still start of 5 s). A saved cycle with a
    given duration returns to the first key at its end: the closing transition takes what is left of it."""
    poses = [look_at_pose(e, [0, 0, 0], [0, -1, 0]) for e in ([0, -1, -4], [3, -1, -2], [4, -2, 2])]
    out = tmp_path / "timed.json"
    data = save_camera_path(out, [Keyframe(T, 50.0, t) for T, t in zip(poses, (5.0, 6.0, 8.0), strict=True)],
                            width=64, height=48, fps=10)  # fmt: skip
    assert data["seconds"] == 3.0 and len(data["camera_path"]) == 30
    assert [k.time_s for k in read_keyframes(out).keyframes] == pytest.approx([0, 1, 3])
    keys = [Keyframe(T, 50.0, t) for T, t in zip(poses, (0.0, 1.0, 2.0), strict=True)]
    data = save_camera_path(out, keys, width=64, height=48, fps=10, seconds=6.0, is_cycle=True)
    assert [k["override_transition_sec"] for k in data["keyframes"]] == pytest.approx([1, 1, 4])
    back = read_keyframes(out)
    assert back.is_cycle and back.seconds == 6.0 and [k.time_s for k in back.keyframes] == pytest.approx([0, 1, 2])


def test_a_path_with_a_repeated_keyframe_saves_and_reloads(tmp_path):
    """The viewer's K pressed twice at one view: the saved file's transitions are all > 0, so it reloads."""
    a, b = (look_at_pose(e, [0, 0, 0], [0, -1, 0]) for e in ([0, -1, -4], [3, -1, -2]))
    out = tmp_path / "repeated.json"
    save_camera_path(out, [Keyframe(a, 50.0), Keyframe(a, 50.0), Keyframe(b, 50.0)], width=64, height=48, fps=10)
    times = [k.time_s for k in read_keyframes(out).keyframes]
    assert times[0] == 0 and np.diff(times).min() > 0
    np.testing.assert_allclose(load_camera_path(out).cameras[-1].T_world_camera, b, atol=1e-9)


def test_a_looping_path_re_sampled_stays_a_loop(tmp_path):
    """Re-sampling a saved cycle to half the frames goes through the same loop: frame i of 30 is frame 2i of the
    file's 60 (same duration, half the rate), including the frames on the way back to the first key."""
    poses = [look_at_pose(e, [0, 0, 0], [0, -1, 0]) for e in ([0, -1, -4], [3, -1, -2], [4, -2, 2])]
    keys = [Keyframe(T, 50.0, t) for T, t in zip(poses, (0.0, 2.0, 4.0), strict=True)]
    out = tmp_path / "loop.json"
    save_camera_path(out, keys, width=64, height=48, fps=10, seconds=6.0, is_cycle=True)
    full, half = load_camera_path(out), load_camera_path(out, n_frames=30)
    assert len(full.cameras) == 60 and half.fps == pytest.approx(5.0)
    for i, cam in enumerate(half.cameras):
        np.testing.assert_allclose(cam.T_world_camera, full.cameras[2 * i].T_world_camera, atol=1e-9, err_msg=str(i))


def test_a_cycle_of_two_keyframes_plays_open(tmp_path):
    """nerfstudio's editor lets a path of two keys loop; a loop through two keys has no shape: it plays open,
    from the first key to the second, rather than failing."""
    a = [1.0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 5, 0, 0, 0, 1]  # GL camera at (0, 0, 5) looking down -Z
    data = {"render_width": 64, "render_height": 48, "fps": 10, "seconds": 2.0, "is_cycle": True,
            "keyframes": [{"matrix": a, "fov": 50.0}, {"matrix": C2W_GL_ROWS, "fov": 50.0}]}  # fmt: skip
    cp = load_camera_path(write_json(tmp_path / "two.json", data))
    assert cp.kind == "nerfstudio keyframes" and len(cp.cameras) == 20
    np.testing.assert_allclose(cp.cameras[0].position, [0, 0, 5], atol=1e-12)
    np.testing.assert_allclose(cp.cameras[-1].position, [1, 2, 3], atol=1e-12)
    np.testing.assert_allclose(cp.cameras[-1].T_world_camera[:3, :3], R_CV, atol=1e-12)


def test_cameras_follow_the_image_names_in_capture_order(tmp_path):
    """Image names numbered without padding (frame_2, frame_9, frame_10) are in capture order by their numbers, not
    as strings (where frame_10 comes before frame_2 and the path jumps back and forth)."""
    cams = [json.loads(inria(img_name=f"frame_{n}", position=[float(n), 0, 0]))[0] for n in (10, 2, 9)]
    cp = load_camera_path(write_json(tmp_path / "cameras.json", cams))
    assert cp.names == ["frame_2", "frame_9", "frame_10"]
    assert [c.position[0] for c in cp.cameras] == [2, 9, 10]


def test_transforms_intrinsics_per_frame_by_angle_and_at_another_size(tmp_path):
    """transforms.json: a frame's own intrinsics win over the shared ones; camera_angle_y gives fy (non-square
    pixels); at another output size the focal lengths scale with the height and the principal point keeps its
    offset from the centre, scaled (as for COLMAP's); an applied_transform that cannot be undone is refused."""
    eye = np.eye(4).tolist()
    data = {"w": 80, "h": 60, "fl_x": 50.0, "cx": 40.0, "cy": 30.0,
            "frames": [{"file_path": "a.png", "transform_matrix": eye, "fl_x": 70.0, "cx": 44.0},
                       {"file_path": "b.png", "transform_matrix": eye}]}  # fmt: skip
    path = write_json(tmp_path / "transforms.json", data)
    a, b = load_camera_path(path).cameras
    assert (a.fx, a.fy, a.cx, a.cy) == pytest.approx((70, 70, 44, 30))  # fy: square pixels from its own fl_x
    assert (b.fx, b.fy, b.cx, b.cy) == pytest.approx((50, 50, 40, 30))
    a = load_camera_path(path, width=40, height=30).cameras[0]  # half size
    assert (a.width, a.height, a.fx, a.fy, a.cx, a.cy) == pytest.approx((40, 30, 35, 35, 22, 15))
    a = load_camera_path(path, width=160, height=60).cameras[0]  # twice as wide: same height, centre moved
    assert (a.fx, a.fy, a.cx, a.cy) == pytest.approx((70, 70, 84, 30))
    angles = {"w": 80, "h": 60, "camera_angle_x": 2 * math.atan(40 / 50), "camera_angle_y": 2 * math.atan(30 / 60),
              "frames": [{"transform_matrix": eye}]}  # fmt: skip
    c = load_camera_path(write_json(tmp_path / "angles.json", angles)).cameras[0]
    assert (c.fx, c.fy) == pytest.approx((50, 60))
    data["applied_transform"] = np.zeros((3, 4)).tolist()
    with pytest.raises(CameraPathError, match="applied_transform: not invertible"):
        load_camera_path(write_json(tmp_path / "singular.json", data))
