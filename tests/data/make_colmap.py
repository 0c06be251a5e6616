"""Writes `garden_sparse.zip`: a COLMAP sparse model of the real cameras in `test_garden.npz` (gsplat's test data,
Apache-2.0), written by pycolmap 4.2.1 (COLMAP's own Python bindings), in both of COLMAP's forms: `bin/` (what
COLMAP and the INRIA trainer's `convert.py` leave in `sparse/0/`) and `txt/`. See CREDITS.md.

Three images of two cameras, so that reading is tested on what real models hold: image ids out of name order and
not contiguous; keypoints on every image (the points that readers must skip); a second camera at half the size,
with radial distortion (SIMPLE_RADIAL), for image DSC08002.JPG. The poses and intrinsics are the npz's.

Needs pycolmap, which the tests do not (38 MB): install it apart and run from the repository root, then update
the table in CREDITS.md:

    .venv/bin/pip install --no-deps --target .cache/pycolmap pycolmap==4.2.1
    PYTHONPATH=.cache/pycolmap .venv/bin/python -m tests.data.make_colmap
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent
OUT = DATA / "garden_sparse.zip"
RADIAL_K = 0.01  # the second camera's distortion
# image id, name, camera: ids not in name order, with a gap
IMAGES = [(5, "DSC08001.JPG", 1), (9, "DSC08000.JPG", 1), (7, "DSC08002.JPG", 2)]


def model(pycolmap):
    d = np.load(DATA / "test_garden.npz")
    viewmats, K = d["viewmats"].astype(np.float64), d["Ks"][0].astype(np.float64)
    W, H = int(d["width"]), int(d["height"])
    r = pycolmap.Reconstruction()
    pinhole = [K[0, 0], K[1, 1], K[0, 2], K[1, 2]]
    radial = [K[0, 0] / 2, K[0, 2] / 2, K[1, 2] / 2, RADIAL_K]  # half the size
    r.add_camera_with_trivial_rig(pycolmap.Camera(model="PINHOLE", width=W, height=H, camera_id=1, params=pinhole))
    r.add_camera_with_trivial_rig(pycolmap.Camera(model="SIMPLE_RADIAL", width=W // 2, height=H // 2, camera_id=2,
                                                  params=radial))  # fmt: skip
    rng = np.random.default_rng(0)
    for (image_id, name, camera_id), V in zip(sorted(IMAGES, key=lambda e: e[1]), viewmats, strict=True):
        size = np.array([W, H]) / camera_id
        image = pycolmap.Image(name=name, keypoints=rng.uniform(0, size, (4 + image_id, 2)), camera_id=camera_id,
                               image_id=image_id)  # fmt: skip
        r.add_image_with_trivial_frame(image, pycolmap.Rigid3d(pycolmap.Rotation3d(V[:3, :3]), V[:3, 3]))
    return r


def main() -> None:
    import pycolmap

    r = model(pycolmap)
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(OUT, "w", zipfile.ZIP_DEFLATED) as z:
        for form, write in (("bin", r.write_binary), ("txt", r.write_text)):
            (Path(tmp) / form).mkdir()
            write(str(Path(tmp) / form))
            for path in sorted((Path(tmp) / form).iterdir()):
                info = zipfile.ZipInfo(f"{form}/{path.name}", date_time=(2026, 1, 1, 0, 0, 0))
                z.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    print(f"{OUT}: {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
