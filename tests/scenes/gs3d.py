"""GaussianSplats3D, the `.ksplat` format's own viewer library (npm `@mkkellogg/gaussian-splats-3d`, with `three`),
as an outside writer of `.ksplat` files: `tests/data/make_ksplat.py` wrote the bundled ones with it, and
tests/scenes/test_ksplat_oracle.py writes more. `gs3d_ksplat.mjs` beside this file drives it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.scenes._npm import npm_install

PACKAGES = ["@mkkellogg/gaussian-splats-3d@0.4.7", "three@0.170.0"]
SCRIPT = Path(__file__).resolve().parent / "gs3d_ksplat.mjs"


def write_ksplat(ply: str | os.PathLike, out: str | os.PathLike, *, level: int, sh_degree: int, section: int = 0,
                 block: float = 5.0, bucket: int = 256) -> None:  # fmt: skip
    """Write `ply` (an INRIA PLY) as a `.ksplat` with GaussianSplats3D: compression `level` (0-2), SH degree
    `sh_degree` (0-2), sections of `section` Gaussians (0: one), position buckets of `bucket` Gaussians in blocks
    of `block` (the library's defaults 5.0 and 256)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node not found: Node 20 is needed to write .ksplat files")
    modules = npm_install("gaussian-splats-3d", PACKAGES, "@mkkellogg/gaussian-splats-3d/package.json")
    args = [str(modules), str(ply), str(out), str(level), str(sh_degree), str(section), str(block), str(bucket)]
    result = subprocess.run([node, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"GaussianSplats3D could not write {out}: {result.stderr.strip()}")
