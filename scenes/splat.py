"""antimatter15 `.splat`: 32-byte records, no header, no count, no SH.

| bytes | field    | encoding                                                              |
|-------|----------|-----------------------------------------------------------------------|
| 0-11  | position | float32 x, y, z                                                       |
| 12-23 | scale    | float32, linear (exp of the log-scale)                                |
| 24-27 | colour   | uint8 r, g, b = (0.5 + SH_C0 * f_dc) * 255, a = sigmoid(opacity) * 255 |
| 28-31 | rotation | uint8 (q / |q|) * 128 + 128, order w, x, y, z                         |

Quantisation bounds (what a write -> read round trip can lose): position and scale exact (float32);
f_dc within 0.5/255/SH_C0 = 0.007 (inside the representable colour range [0, 1]); opacity within 0.5/255 after
sigmoid; quaternion components within 1/128 after normalisation. A linear scale <= 0 is a bad Gaussian
(dropped at load with a warning).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from .atomic import atomic_write
from .gaussians import SH_C0, GaussianScene, SceneFormatError, logit, make_scene

RECORD = np.dtype([("pos", "<f4", 3), ("scale", "<f4", 3), ("rgba", "u1", 4), ("rot", "u1", 4)])
assert RECORD.itemsize == 32


def read_splat(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    path = os.fspath(path)
    if data is None:
        if os.path.getsize(path) == 0:
            raise SceneFormatError(f"{path}: file is empty")
        data = memoryview(np.memmap(path, dtype=np.uint8, mode="r"))
    if len(data) == 0:
        raise SceneFormatError(f"{path}: file is empty")
    if len(data) % RECORD.itemsize:
        raise SceneFormatError(f"{path}: .splat size {len(data)} is not a multiple of 32 bytes (truncated?)")
    rec = np.frombuffer(data, dtype=RECORD)
    rgba = torch.from_numpy(rec["rgba"].astype(np.float32)) / 255.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_scales = np.log(rec["scale"])  # linear <= 0 -> -inf / NaN: dropped below as a bad Gaussian
    quats = torch.from_numpy(rec["rot"].astype(np.float32)) - 128.0
    scene = make_scene(
        torch.from_numpy(np.ascontiguousarray(rec["pos"])),
        quats / 128.0,
        torch.from_numpy(log_scales),
        logit(rgba[:, 3]),
        ((rgba[:, :3] - 0.5) / SH_C0)[:, None, :],
        source_format="splat",
        up_axis="-y",
    )
    return scene.drop_invalid(name=path)


def write_splat(scene: GaussianScene, path: str | os.PathLike) -> None:
    """Write records sorted by size x opacity, descending (the order web viewers stream in)."""
    scene = scene.to("cpu")
    act = scene.activated()
    rec = np.empty(len(scene), dtype=RECORD)
    rec["pos"] = scene.means.numpy()
    rec["scale"] = act.scales.numpy()
    rgb = (0.5 + SH_C0 * scene.sh[:, 0]).clamp(0, 1)
    rgba = torch.cat([rgb, act.opacities[:, None]], 1)
    rec["rgba"] = (rgba * 255).round().clamp(0, 255).to(torch.uint8).numpy()
    rec["rot"] = (act.quats * 128 + 128).round().clamp(0, 255).to(torch.uint8).numpy()
    order = torch.argsort(-(scene.log_scales.sum(1).exp() * act.opacities), stable=True).numpy()
    with atomic_write(path) as f:
        f.write(rec[order].tobytes())
