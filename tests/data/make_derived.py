"""Writes the derived test files in tests/data with warpsplat's own writers (see CREDITS.md).

No bundlable file exists in some formats (PlayCanvas compressed PLY, SPZ v4, GLB, a SOG of warpsplat's), and the
tests want a small real scene with SH bands for the interpreter. All five are cut from the bundled
`playbot_lod2.sog` (CC-BY-4.0): the CROP Gaussians nearest the robot's body, in file order. Run from the repository
root (so that the checkout's packages are the ones imported), then update the table in CREDITS.md:

    .venv/bin/python -m tests.data.make_derived
"""

from __future__ import annotations

from pathlib import Path

import torch

from scenes import load_scene, save_scene
from scenes.spz import write_spz

DATA = Path(__file__).resolve().parent

SOURCE = "playbot_lod2.sog"
CROP = 4096  # about fruit_drops_minimal.ply's size (4,721), which these replace as "a small real SH scene"
BODY = torch.tensor([0.0, -0.7, 0.0])  # the robot's body, above the ground disc (-y is up)


def crop():
    """[CROP] Gaussians of SOURCE nearest BODY, in the file's order (SH degree 2)."""
    scene = load_scene(DATA / SOURCE)
    nearest = torch.argsort((scene.means - BODY).norm(dim=1))[:CROP]
    return scene.subset(torch.sort(nearest).values)


def main() -> None:
    scene = crop()
    save_scene(scene, DATA / "playbot_crop.ply")  # INRIA PLY, float32: the crop exactly
    save_scene(scene, DATA / "playbot_crop.compressed.ply")
    write_spz(scene, DATA / "playbot_crop.spz", version=4)
    save_scene(scene, DATA / "playbot_crop.glb")  # glTF binary with KHR_gaussian_splatting
    save_scene(scene, DATA / "playbot_crop.sog")
    for name in ("playbot_crop.ply", "playbot_crop.compressed.ply", "playbot_crop.spz", "playbot_crop.glb",
                 "playbot_crop.sog"):  # fmt: skip
        print(f"{DATA / name}: {(DATA / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
