"""The default scene shipped inside the package (package data), so `warpsplat render` works with no file."""

from __future__ import annotations

from pathlib import Path

BUNDLED_SCENE = "plant.splat"  # "plant" by Marcel Padilla, CC-BY-4.0 (credit in README.md and data/plant.txt)


def bundled_scene_path() -> Path:
    return Path(__file__).resolve().parent / "data" / BUNDLED_SCENE
