"""Orchestration and state: cameras, settings, the per-frame pipeline. No Triton code, no GL."""

from .camera import Camera, default_camera, look_at_pose, up_vector
from .pipeline import MAX_IMAGE_SIDE, Renderer, RenderOutput, RenderStats, check_image_size, prepare_covariances
from .settings import RenderSettings
from .timing import StageTimer

__all__ = [
    "Camera",
    "default_camera",
    "look_at_pose",
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
