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
from .gaussians import SH_C0, GaussianScene, SceneFormatError, logit_alpha8
from .limits import check_count, check_scene_memory
from .ply import map_file, page_releaser

RECORD = np.dtype([("pos", "<f4", 3), ("scale", "<f4", 3), ("rgba", "u1", 4), ("rot", "u1", 4)])
assert RECORD.itemsize == 32


DECODE_ROWS = 1 << 16  # records decoded at a time: the temporaries stay a few MB whatever N is


def read_splat(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    """Read a `.splat` file, DECODE_ROWS records at a time straight into the scene's arrays (the mapped file's
    pages are released as they are decoded, so reading peaks at the arrays plus a chunk)."""
    path = os.fspath(path)
    if data is None:
        data = map_file(path)
    if len(data) == 0:
        raise SceneFormatError(f"{path}: file is empty")
    if len(data) % RECORD.itemsize:
        raise SceneFormatError(f"{path}: .splat size {len(data)} is not a multiple of 32 bytes (truncated?)")
    rec = np.frombuffer(data, dtype=RECORD)
    n = check_count(len(rec), path, ".splat size")
    check_scene_memory(n, 1, path, ".splat size")
    scene = GaussianScene.allocate(n, 1, source_format="splat")
    release = page_releaser(data, rec)
    for a in range(0, n, DECODE_ROWS):
        b = min(n, a + DECODE_ROWS)
        r = rec[a:b]
        scene.means[a:b] = torch.from_numpy(r["pos"].astype(np.float32))
        with np.errstate(divide="ignore", invalid="ignore"):
            scene.log_scales[a:b] = torch.from_numpy(np.log(r["scale"]))  # linear <= 0 -> -inf / NaN: dropped as bad
        scene.opacity_logits[a:b] = logit_alpha8(r["rgba"][:, 3])
        scene.sh[a:b, 0] = (torch.from_numpy(r["rgba"][:, :3].astype(np.float32)) / 255.0 - 0.5) / SH_C0
        scene.quats[a:b] = (torch.from_numpy(r["rot"].astype(np.float32)) - 128.0) / 128.0
        if release is not None:
            release(a, b)
    return scene.validate().drop_invalid(name=path, in_place=True)


def write_splat(scene: GaussianScene, path: str | os.PathLike) -> None:
    """Write records sorted by size x opacity, descending (the order web viewers stream in)."""
    scene = scene.to("cpu")
    act = scene.activated()
    rec = np.empty(len(scene), dtype=RECORD)
    rec["pos"] = scene.means.numpy()
    rec["scale"] = act.scales.clamp_min(torch.finfo(torch.float32).tiny).numpy()  # exp(-104) is 0: refused on read
    rgb = (0.5 + SH_C0 * scene.sh[:, 0]).clamp(0, 1)
    rgba = torch.cat([rgb, act.opacities[:, None]], 1)
    rec["rgba"] = (rgba * 255).round().clamp(0, 255).to(torch.uint8).numpy()
    rec["rot"] = (act.quats * 128 + 128).round().clamp(0, 255).to(torch.uint8).numpy()
    order = torch.argsort(-(scene.log_scales.sum(1).exp() * act.opacities), stable=True).numpy()
    with atomic_write(path) as f:
        f.write(rec[order].tobytes())
