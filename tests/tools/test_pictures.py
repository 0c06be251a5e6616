"""The README's picture of the bundled scene is what the current code renders (docs/make_pictures.py makes it)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from renderer import Renderer, default_camera
from scenes import bundled_scene_path, load_scene
from tests.conftest import REPO


def test_plant_picture_is_current():
    picture = np.asarray(Image.open(REPO / "docs" / "plant.png").convert("RGB"), dtype=np.int16)
    scene = load_scene(bundled_scene_path())
    h, w = picture.shape[:2]
    rendered = Renderer(scene, backend="torch").render(default_camera(scene, w, h)).rgba8[..., :3].numpy()
    diff = np.abs(picture - rendered)
    # exact on the machine that made it; a little slack for another CPU's float rounding
    assert diff.mean() < 0.05 and (diff > 2).mean() < 1e-3, "docs/plant.png is stale: run docs/make_pictures.py"
