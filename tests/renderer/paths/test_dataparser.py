"""A dataset's cameras taken into nerfstudio's dataparser world (renderer/paths/formats.py `dataparser_transforms`).

nerfstudio trains a splatfacto scene in a world of its own: its dataparser moves, turns and scales the dataset's
(`dataparser_transforms.json`: p' = s (R p + t)), and a COLMAP model's world is first turned as ns-process-data
turns it (y and z swapped, z flipped). The reference here is that rule applied to points, not to cameras: a point
seen by a dataset camera at pixel (u, v) and depth z must, once moved into the dataparser world, be seen by the
camera read with the transforms at the same pixel and at depth s z. The cameras are the garden test data's real
ones, from the bundled COLMAP model (pycolmap wrote it) and from a transforms.json written as ns-process-data
writes one.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from renderer.paths import CameraPathError, load_camera_path, read_dataparser_transforms
from renderer.paths.rotations import axis_angle
from tests.conftest import bundled
from tests.renderer.paths.test_formats import garden_transforms

# ns-process-data's turn of COLMAP's world, as its colmap_to_json builds it: identity rows 0, 2, 1, then row 2 negated
TURN = np.eye(4)[[0, 2, 1, 3]]
TURN[2] *= -1


def write_dataparser(folder: Path, R: np.ndarray, t: np.ndarray, scale: float) -> Path:
    """dataparser_transforms.json as nerfstudio writes it: the 3x4 transform as nested lists, and the scale."""
    path = folder / "dataparser_transforms.json"
    path.write_text(json.dumps({"transform": np.hstack([R, t[:, None]]).tolist(), "scale": scale}, indent=4))
    return path


@pytest.fixture
def world(tmp_path):
    R = axis_angle(np.array([0.3, -0.8, 0.5]) / np.linalg.norm([0.3, -0.8, 0.5]), 0.9)
    t, scale = np.array([0.4, -1.3, 2.2]), 0.137
    return write_dataparser(tmp_path, R, t, scale), R, t, scale


def seen(cam, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixels [n, 2] and depths [n] of world points under `cam` (its viewmat and intrinsics)."""
    p = (cam.viewmat[:3, :3] @ points.T + cam.viewmat[:3, 3:]).T
    return np.stack([cam.fx * p[:, 0] / p[:, 2] + cam.cx, cam.fy * p[:, 1] / p[:, 2] + cam.cy], 1), p[:, 2]


def points_before(cam, rng, n=50) -> np.ndarray:
    """Random world points in front of `cam`, at 1-10 units."""
    local = np.column_stack([rng.uniform(-1, 1, (n, 2)), np.ones(n)]) * rng.uniform(1, 10, (n, 1))
    return (cam.T_world_camera[:3, :3] @ local.T).T + cam.T_world_camera[:3, 3]


def check_moved(plain, moved, to_dataparser, scale, rng):
    """Every point seen by a plain camera at (u, v, z) is seen by its moved camera at (u, v, scale z)."""
    assert len(plain) == len(moved)
    for a, b in zip(plain, moved, strict=True):
        points = points_before(a, rng)
        uv, z = seen(a, points)
        uv2, z2 = seen(b, to_dataparser(points))
        np.testing.assert_allclose(uv2, uv, atol=1e-6 * max(a.width, a.height))
        np.testing.assert_allclose(z2, scale * z, rtol=1e-9)
        np.testing.assert_allclose(
            b.T_world_camera[:3, :3].T @ b.T_world_camera[:3, :3], np.eye(3), atol=1e-6
        )  # no scale in it


def test_a_colmap_models_cameras_meet_the_points_nerfstudio_moved(tmp_path, world):
    path, R, t, scale = world
    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path)
    plain = load_camera_path(tmp_path / "bin")
    moved = load_camera_path(tmp_path / "bin", dataparser_transforms=path)
    check_moved(plain.cameras, moved.cameras, lambda p: scale * ((R @ (TURN[:3, :3] @ p.T)).T + t), scale,
                np.random.default_rng(0))  # fmt: skip
    assert moved.notes[-1] == "taken into nerfstudio's dataparser world by dataparser_transforms.json (scale 0.137)"
    assert moved.names == plain.names
    # the keyframes (re-sampling goes through them) moved alike: one frame each, re-sampled to as many, is the same
    again = load_camera_path(tmp_path / "bin", dataparser_transforms=path, n_frames=len(moved.cameras))
    np.testing.assert_allclose([c.viewmat for c in again.cameras], [c.viewmat for c in moved.cameras], atol=1e-9)


def test_transforms_json_cameras_meet_the_points_nerfstudio_moved(tmp_path, world):
    """ns-process-data's transforms.json: the turn applied and recorded; nerfstudio moves its world as it is (the
    turn not undone). A transforms.json with no turn (instant-ngp's, Polycam's) likewise."""
    path, R, t, scale = world
    rng = np.random.default_rng(1)
    turned, viewmats, _ = garden_transforms(tmp_path, TURN[:3])
    plain = load_camera_path(turned)  # the turn undone: COLMAP's world, a 3DGS trainer's
    np.testing.assert_allclose([c.viewmat for c in plain.cameras], viewmats, atol=1e-5)
    moved = load_camera_path(turned, dataparser_transforms=path)
    check_moved(plain.cameras, moved.cameras, lambda p: scale * ((R @ (TURN[:3, :3] @ p.T)).T + t), scale, rng)
    assert len(moved.notes) == 1 and "dataparser world" in moved.notes[0]
    (tmp_path / "flat").mkdir()
    flat, _, _ = garden_transforms(tmp_path / "flat")
    check_moved(load_camera_path(flat).cameras, load_camera_path(flat, dataparser_transforms=path).cameras,
                lambda p: scale * ((R @ p.T).T + t), scale, rng)  # fmt: skip


def test_nerfstudios_own_paths_are_already_in_its_world(tmp_path, world):
    path = world[0]
    camera_path = tmp_path / "camera_path.json"
    pose = np.eye(4)
    pose[:3, 3] = (1.0, 2.0, 3.0)
    camera_path.write_text(json.dumps({"render_width": 64, "render_height": 48, "seconds": 1.0, "camera_path": [
        {"camera_to_world": pose.reshape(-1).tolist(), "fov": 50.0, "aspect": 4 / 3}]}))  # fmt: skip
    a, b = load_camera_path(camera_path), load_camera_path(camera_path, dataparser_transforms=path)
    assert np.array_equal(a.cameras[0].viewmat, b.cameras[0].viewmat) and a.notes == b.notes


@pytest.mark.parametrize(
    "content, match",
    [
        ("{", r"not valid JSON"),
        ("[1, 2]", r'expected a JSON object with "transform" and "scale"'),
        ('{"scale": 1.0}', r"transform: expected a 3x4 matrix of finite numbers"),
        ('{"transform": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "scale": 1.0}', r"transform: expected a 3x4"),
        ('{"transform": [[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], "scale": 1.0}', r"transform: rotation part"),
        ('{"transform": [[1, 0, 0, NaN], [0, 1, 0, 0], [0, 0, 1, 0]], "scale": 1.0}', r"finite numbers"),
        ('{"transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]}', r"scale: missing"),
        ('{"transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], "scale": -2}', r"scale: must be > 0, got -2"),
    ],
    ids=["malformed", "list", "no-transform", "3x3", "scaled-rotation", "nan", "no-scale", "negative-scale"],
)
def test_bad_dataparser_files_give_one_line_errors_naming_the_file(tmp_path, content, match):
    path = tmp_path / "dataparser_transforms.json"
    path.write_text(content)
    with pytest.raises(CameraPathError, match=match) as e:
        read_dataparser_transforms(path)
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)
    # through the camera path's reading too, before any camera is read
    with pytest.raises(CameraPathError, match=match):
        load_camera_path(tmp_path / "nothing.json", dataparser_transforms=path)


def test_a_large_file_is_not_read(tmp_path):
    path = tmp_path / "dataparser_transforms.json"
    path.write_text('{"scale": 1.0, "pad": "' + "x" * (1 << 20) + '"}')
    with pytest.raises(CameraPathError, match=r"1,048,\d+ bytes is not a dataparser_transforms.json"):
        read_dataparser_transforms(path)
