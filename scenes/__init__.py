"""Scenes: the canonical GaussianScene container and one reader/writer module per file format."""

from .bundled import bundled_scene_path
from .gaussians import SH_C0, ActivatedGaussians, GaussianScene, SceneFormatError, make_scene
from .io import FORMATS, Format, load_scene, save_scene

__all__ = [
    "SH_C0",
    "ActivatedGaussians",
    "GaussianScene",
    "SceneFormatError",
    "make_scene",
    "FORMATS",
    "Format",
    "load_scene",
    "save_scene",
    "bundled_scene_path",
]
