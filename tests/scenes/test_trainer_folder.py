"""Trainer output folders: latest iteration by default, `iteration=` to pick one, cameras.json recorded
(not parsed), and clear errors for folders that are not scenes."""

from __future__ import annotations

import json

import pytest
import torch

from scenes import SceneFormatError, load_scene, save_scene
from tests.conftest import real_scene as scene


@pytest.fixture
def model_folder(tmp_path):
    """model/point_cloud/iteration_{7000,30000}/point_cloud.ply (the 3-point scene, shifted per iteration)."""
    base = load_scene(scene("test-splat.3-points-from-train.ply"))
    model = tmp_path / "model"
    for it in (7000, 30000):
        folder = model / "point_cloud" / f"iteration_{it}"
        folder.mkdir(parents=True)
        shifted = base.subset(slice(None))
        shifted.means = base.means + it
        save_scene(shifted, folder / "point_cloud.ply")
    (model / "point_cloud" / "iteration_99999").mkdir()  # no point_cloud.ply inside: ignored
    (model / "cameras.json").write_text(json.dumps([]))
    return model


def test_latest_iteration_by_default(model_folder):
    s = load_scene(model_folder)
    assert s.extras["iteration"] == 30000 and s.extras["iterations available"] == [7000, 30000]
    assert s.extras["cameras"] == str(model_folder / "cameras.json")
    assert s.source_format == "trainer folder (ply)" and len(s) == 3 and s.sh_degree == 3
    assert float(s.means.min()) > 29000


def test_iteration_option_and_subfolders(model_folder):
    s = load_scene(model_folder, iteration=7000)
    assert s.extras["iteration"] == 7000 and float(s.means.max()) < 8000
    assert load_scene(model_folder / "point_cloud").extras["iteration"] == 30000
    s = load_scene(model_folder / "point_cloud" / "iteration_7000")
    assert s.extras["iteration"] == 7000 and s.extras["cameras"] == str(model_folder / "cameras.json")
    with pytest.raises(SceneFormatError, match="no iteration 5; available: 7000, 30000"):
        load_scene(model_folder, iteration=5)


def test_not_a_scene_folder(tmp_path):
    with pytest.raises(SceneFormatError, match="not a scene folder"):
        load_scene(tmp_path)
    (tmp_path / "point_cloud").mkdir()
    with pytest.raises(SceneFormatError, match="no iteration_N"):
        load_scene(tmp_path)


def test_no_cameras_json_is_fine(model_folder):
    (model_folder / "cameras.json").unlink()
    assert "cameras" not in load_scene(model_folder).extras
    assert torch.isfinite(load_scene(model_folder).means).all()
