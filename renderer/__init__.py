"""Orchestration and state: cameras, settings, the per-frame pipeline. No Triton code, no GL."""

from .camera import Camera, default_camera, look_at_pose, orthographic, perspective, up_name, up_vector
from .output import MAX_IMAGE_SIDE, RenderOutput, RenderStats, check_image_size
from .pipeline import Renderer
from .prepare import prepare_covariances
from .settings import RenderSettings
from .timing import StageTimer

__all__ = [
    "Camera",
    "default_camera",
    "look_at_pose",
    "orthographic",
    "perspective",
    "up_name",
    "up_vector",
    "MAX_IMAGE_SIDE",
    "Renderer",
    "RenderOutput",
    "RenderStats",
    "check_image_size",
    "prepare_covariances",
    "RenderSettings",
    "StageTimer",
]
