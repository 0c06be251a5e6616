"""Pinhole camera. Convention (stated once, used everywhere): OpenCV axes, +X right, +Y down, +Z forward.

A `Camera` holds its pose `T_world_camera` (camera-to-world, 4x4; what controls and paths edit) and exposes
`viewmat` = `T_camera_world` (world-to-camera; what kernels take). Intrinsics fx, fy, cx, cy are in pixels
with pixel centres at +0.5, gsplat's convention, so images compare with gsplat directly.

Trained scenes in the INRIA/COLMAP frame have -Y as "up"; a scene's up axis is a setting (default "-y").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch

AXES = {"+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}


def up_vector(axis: str) -> np.ndarray:
    """World up direction for an axis name such as "-y" (INRIA default) or "+z", or a direction "X,Y,Z" (a scene
    captured tilted: the viewer's L key levels it from a view), as a unit vector."""
    key = axis.strip().lower()
    if key in ("x", "y", "z"):
        key = "+" + key
    if key in AXES:
        return np.asarray(AXES[key], dtype=np.float64)
    try:
        v = np.array([float(x) for x in key.split(",")], dtype=np.float64)
    except ValueError:
        v = np.zeros(0)
    # scaled by the largest component before the norm: the norm of 1e308,1e308,0 overflows (a zero vector, then
    # NaN Gaussians)
    if v.shape != (3,) or not np.all(np.isfinite(v)) or np.abs(v).max() < 1e-6:
        raise ValueError(f"--up {axis!r}: expected one of {', '.join(AXES)}, or a direction X,Y,Z")
    v = v / np.abs(v).max()
    return v / np.linalg.norm(v)


def up_name(v) -> str:
    """The up axis setting for direction `v`: its axis name where it is one, else "X,Y,Z" to 6 decimals."""
    v = np.asarray(v, np.float64) / np.linalg.norm(v)
    for name, axis in AXES.items():
        if np.allclose(v, axis, atol=1e-6):
            return name
    return ",".join(f"{x:.6f}" for x in v)


def orthographic(camera: Camera, distance: float) -> Camera:
    """The orthographic camera (`RenderSettings.ortho`) that shows at every depth what the pinhole `camera` shows
    at `distance` along its view: the same pose, size and principal point, fx and fy in pixels per world unit
    (the pinhole's divided by the distance). `perspective(orthographic(c, d), d)` is `c`."""
    if not (distance > 0 and math.isfinite(distance)):
        raise ValueError(f"orthographic view at distance {distance}: need a positive distance")
    return replace(camera, fx=camera.fx / distance, fy=camera.fy / distance)


def perspective(camera: Camera, distance: float) -> Camera:
    """The pinhole camera that shows at `distance` along its view what the orthographic `camera` shows (the
    inverse of `orthographic`)."""
    if not (distance > 0 and math.isfinite(distance)):
        raise ValueError(f"perspective view at distance {distance}: need a positive distance")
    return replace(camera, fx=camera.fx * distance, fy=camera.fy * distance)


def look_at_pose(eye, target, up) -> np.ndarray:
    """T_world_camera for a camera at `eye` looking at `target`, with world `up` appearing up (-Y image)."""
    eye = np.asarray(eye, np.float64)
    z = np.asarray(target, np.float64) - eye
    norm = np.linalg.norm(z)
    if norm == 0:
        raise ValueError("look_at: eye and target coincide")
    z /= norm
    down = -np.asarray(up, np.float64)
    x = np.cross(down, z)
    if np.linalg.norm(x) < 1e-9:  # looking straight along up: pick any perpendicular
        x = np.cross(down + np.array([1e-3, 2e-3, 3e-3]), z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, y, z, eye
    return T


@dataclass
class Camera:
    """A pinhole camera for one frame.

    Attributes:
        width, height: image size in pixels.
        fx, fy, cx, cy: intrinsics in pixels (pixel centres at +0.5).
        T_world_camera: [4, 4] float64 camera-to-world pose (OpenCV axes).
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    T_world_camera: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        # a copy: a caller who fills one pose array per frame and makes a camera of each would otherwise hold
        # cameras that all follow the array, and render the last pose along the whole path
        self.T_world_camera = np.array(self.T_world_camera, dtype=np.float64).reshape(4, 4)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_fov(cls, width: int, height: int, fov_y_deg: float, T_world_camera=None) -> Camera:
        """Square pixels, principal point at the image centre, vertical field of view in degrees."""
        if not 0.0 < fov_y_deg < 180.0:
            raise ValueError(f"vertical field of view {fov_y_deg} deg is not in (0, 180)")
        f = 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
        pose = np.eye(4) if T_world_camera is None else T_world_camera
        return cls(width, height, f, f, width / 2, height / 2, pose)

    @classmethod
    def look_at(cls, eye, target, *, up=(0, -1, 0), width: int, height: int, fov_y_deg: float = 60.0) -> Camera:
        return cls.from_fov(width, height, fov_y_deg, look_at_pose(eye, target, up))

    # ------------------------------------------------------------------ derived quantities

    @property
    def viewmat(self) -> np.ndarray:
        """[4, 4] T_camera_world (world-to-camera), the matrix kernels take."""
        R = self.T_world_camera[:3, :3]
        t = self.T_world_camera[:3, 3]
        V = np.eye(4)
        V[:3, :3] = R.T
        V[:3, 3] = -R.T @ t
        return V

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1]], dtype=np.float64)

    @property
    def position(self) -> np.ndarray:
        return self.T_world_camera[:3, 3].copy()

    @property
    def fov_y_deg(self) -> float:
        return math.degrees(2 * math.atan(0.5 * self.height / self.fy))

    def packed_list(self) -> list[float]:
        """The [24] values the kernels take, as Python floats: viewmat row-major [16] (R^T and -R^T t of the pose),
        fx, fy, cx, cy, the camera centre [3], pad. A frame packs them into its staging copy (renderer/params.py):
        in plain floats, since numpy's dozen operations on arrays this small were most of that step's host time
        (BENCHMARKS.md, section 44)."""
        (r00, r01, r02, x), (r10, r11, r12, y), (r20, r21, r22, z), _ = self.T_world_camera.tolist()
        return [
            r00, r10, r20, -(r00 * x + r10 * y + r20 * z),
            r01, r11, r21, -(r01 * x + r11 * y + r21 * z),
            r02, r12, r22, -(r02 * x + r12 * y + r22 * z),
            0.0, 0.0, 0.0, 1.0,
            self.fx, self.fy, self.cx, self.cy, x, y, z, 0.0,
        ]  # fmt: skip

    def packed_array(self) -> np.ndarray:
        """[24] float32 for the kernels (`packed_list`)."""
        return np.array(self.packed_list(), dtype=np.float32)

    def packed(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """`packed_array` as a tensor on `device`."""
        return torch.from_numpy(self.packed_array()).to(device)

    def resized(self, width: int, height: int) -> Camera:
        """Same pose and field of view at another resolution."""
        sx, sy = width / self.width, height / self.height
        return replace(
            self, width=width, height=height, fx=self.fx * sx, fy=self.fy * sy, cx=self.cx * sx, cy=self.cy * sy,
            T_world_camera=self.T_world_camera.copy(),
        )  # fmt: skip

    def with_pose(self, T_world_camera: np.ndarray) -> Camera:
        return replace(self, T_world_camera=np.array(T_world_camera, dtype=np.float64))


# The box a view frames: the 0.1st-99.9th percentile of the means along each axis. It leaves out the stray
# floaters of a capture, yet keeps the sparse parts of an object that a 1-99% box cuts off: the plain
# pedestals of angel.sog and st-peter.sog hold under 1% of their Gaussians.
FRAMING_QUANTILES = (0.001, 0.999)


# The smallest framing radius: 5x the renderer's near plane (RenderSettings.near, 0.01, gsplat's), so that the
# default view, at radius / sin(half the field of view) >= radius from the centre, never sits inside it. (A scene
# of Gaussians at one point had a radius of 1e-6 and a camera 2e-6 away, nearer than the near plane: an empty
# image.)
MIN_FRAMING_RADIUS = 0.05


def framing_sphere(scene) -> tuple[np.ndarray, float]:
    """(centre [3] float64, radius): the sphere around the framing box (FRAMING_QUANTILES) that a scene's
    default view fits into its field of view and generated paths circle.

    The centre is the box's, not the median of the means: where the Gaussians crowd one end (a guitar's body
    below its neck, the fuller rows of a composite) the median sits off the middle, and a view aimed at it
    cuts off the other end.

    The radius is at least the Gaussians' own extent, three times the 90th percentile of their largest standard
    deviations (what a single Gaussian, or most of many at one position, covers, when the box of their means is
    a point), and at least MIN_FRAMING_RADIUS. On the real test scenes that extent is at most a fifth of the
    box's radius (0.18 of it on fruit_drops_minimal.ply and donut_fused.ply): it frames no real scene differently.
    """
    if len(scene) == 0:
        return np.zeros(3), 1.0
    lo, hi = (v.double().cpu().numpy() for v in scene.robust_bounds(*FRAMING_QUANTILES))
    box = 0.5 * float(np.linalg.norm(hi - lo))
    largest = scene.log_scales.amax(1)
    if len(largest) > 1_000_000:  # torch.quantile's input-size limit; a strided sample is plenty (as robust_bounds)
        largest = largest[:: len(largest) // 1_000_000 + 1]
    extent = 3.0 * math.exp(float(torch.quantile(largest.double(), 0.9)))
    centre = 0.5 * (lo + hi)
    # and at least the float32 spacing of the means there: Gaussians at one point 1e18 away were framed from a
    # distance that vanished in the centre's rounding (eye == target, a ValueError traceback)
    spacing = float(np.spacing(np.float32(np.abs(centre).max())))
    return centre, max(box, extent, MIN_FRAMING_RADIUS, spacing)


def default_camera(scene, width: int, height: int, *, up: str | None = None, fov_y_deg: float = 60.0) -> Camera:
    """The view that frames a scene (docs/architecture.md): look at the centre of `framing_sphere` from where
    the sphere fills the narrower field of view, from a direction 25 degrees above the horizon (with respect to
    the scene's up axis)."""
    upv = up_vector(up or scene.up_axis)
    target, radius = framing_sphere(scene)
    half_fov = math.radians(min(fov_y_deg, fov_y_deg * width / height) / 2)
    dist = radius / math.sin(half_fov)
    # horizontal reference direction: -Z (the side INRIA/COLMAP captures usually start from), else -Y, -X
    ref = next(
        r for r in (np.array([0.0, 0, -1]), np.array([0.0, -1, 0]), np.array([-1.0, 0, 0])) if abs(r @ upv) < 0.5
    )
    horiz = ref - upv * float(ref @ upv)
    horiz /= np.linalg.norm(horiz)
    elev = math.radians(25.0)
    back = math.cos(elev) * horiz + math.sin(elev) * upv  # from target towards the eye
    eye = target + dist * back
    return Camera.look_at(eye, target, up=upv, width=width, height=height, fov_y_deg=fov_y_deg)
