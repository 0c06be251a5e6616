"""Fixtures shared by the tools' tests."""

import pytest
import torch

from scenes import bundled_scene_path, load_scene, save_scene


@pytest.fixture(scope="session")
def small_scene(tmp_path_factory) -> str:
    """A PLY of every 40th Gaussian of the bundled plant: small enough for many renders on the CPU."""
    scene = load_scene(bundled_scene_path())
    path = tmp_path_factory.mktemp("scene") / "small.ply"
    save_scene(scene.subset(torch.arange(0, len(scene), 40)), path)
    return str(path)
