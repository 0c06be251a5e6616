"""Fixtures of the GPU machine's tests."""

import pytest
import torch

from scenes import load_scene


@pytest.fixture
def plant_on_gpu(scene_path):
    """The plant scene (a real object scene of 114k Gaussians), for tests that need CUDA; skipped without it."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (run on the GPU machine)")
    return load_scene(scene_path("plant.splat"))
