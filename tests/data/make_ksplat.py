"""Writes the bundled `.ksplat` test files with GaussianSplats3D, the format's own library (see CREDITS.md), from
`playbot_crop.ply`: an outside writer, so that the reader is tested against files as that viewer writes them.
Needs Node 20 and npm (tests/scenes/gs3d.py installs the library). Run from the repository root, then update the
table in CREDITS.md:

    .venv/bin/python -m tests.data.make_ksplat
"""

from __future__ import annotations

from pathlib import Path

from tests.scenes.gs3d import write_ksplat

DATA = Path(__file__).resolve().parent
SOURCE = DATA / "playbot_crop.ply"

# name: the library's options. Together they cover every compression level and SH degree the format holds, one
# section and several, full position buckets and partly filled ones.
FILES = {
    "playbot_crop.level0.ksplat": dict(level=0, sh_degree=0),  # float32 rows, no buckets
    "playbot_crop.ksplat": dict(level=1, sh_degree=2),  # the library's defaults: fp16, 16 full buckets
    # 8-bit SH, three sections, buckets of 64 in 0.2-unit blocks: 13-18 full and 11-15 partly filled a section
    "playbot_crop.level2.ksplat": dict(level=2, sh_degree=1, section=1500, block=0.2, bucket=64),
}


def main() -> None:
    for name, options in FILES.items():
        write_ksplat(SOURCE, DATA / name, **options)
        print(f"{DATA / name}: {(DATA / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
