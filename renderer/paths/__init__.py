"""Camera paths: the cameras of a video or of the viewer's playback, generated or read from a file.

    generators.py  orbit, spiral and fly-through paths sized to a scene
    splines.py     keyframes and the splines and timing through them
    formats.py     camera path files: nerfstudio camera_path.json (also the viewer's keyframe file), INRIA
                   cameras.json and COLMAP models, every axis convention converted to the project's on reading
                   and writing
    colmap.py      COLMAP sparse models (cameras and images, binary or text)
    rotations.py   axis-angle rotations and quaternions (also the viewer's camera controller's)

Everything leaving this package is a `Camera` or `Keyframe` in the project's frame: `T_world_camera`,
camera-to-world, OpenCV axes (renderer/camera.py).
"""

from .formats import (
    CameraPath,
    CameraPathError,
    KeyframeFile,
    load_camera_path,
    opencv_to_opengl,
    opengl_to_opencv,
    read_dataparser_transforms,
    read_keyframes,
    save_camera_path,
)
from .generators import SceneFrame, default_flythrough_keyframes, flythrough_path, orbit_path, scene_frame, spiral_path
from .rotations import axis_angle, quat_slerp, quat_to_rotmat, rotmat_to_quat
from .splines import SECONDS_PER_TRANSITION, Keyframe, interpolate_keyframes, key_times

__all__ = [
    "CameraPath",
    "CameraPathError",
    "KeyframeFile",
    "load_camera_path",
    "opencv_to_opengl",
    "opengl_to_opencv",
    "read_dataparser_transforms",
    "read_keyframes",
    "save_camera_path",
    "SceneFrame",
    "default_flythrough_keyframes",
    "flythrough_path",
    "orbit_path",
    "scene_frame",
    "spiral_path",
    "axis_angle",
    "quat_slerp",
    "quat_to_rotmat",
    "rotmat_to_quat",
    "SECONDS_PER_TRANSITION",
    "Keyframe",
    "interpolate_keyframes",
    "key_times",
]
