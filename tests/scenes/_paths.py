"""Where the real scenes are, and what SOURCES.md says each holds.

The folder is $WARPSPLAT_SCENES, else ../shared/scenes beside the checkout. A test that needs it fails
(never skips) when it is missing: the real files are the proof that the readers work.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def scenes_dir() -> Path:
    env = os.environ.get("WARPSPLAT_SCENES")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "scenes"]:
        if cand.is_dir():
            return cand
    pytest.fail("real scenes not found: set WARPSPLAT_SCENES or place shared/scenes beside the checkout")


def scene(name: str) -> Path:
    path = scenes_dir() / name
    if not path.is_file():
        pytest.fail(f"{path}: real scene file missing")
    return path


def sources_table() -> dict[str, tuple[str, int, int | None]]:
    """{file: (format, gaussians, SH degree or None)} from the summary table of SOURCES.md."""
    text = (scenes_dir() / "SOURCES.md").read_text()
    rows = {}
    for m in re.finditer(r"^\| `([^`]+)` \| ([^|]+) \| (\d+) \| (\d+) \| ([\d-]+) \|", text, re.M):
        name, fmt, _, count, degree = m.groups()
        rows[name] = (fmt.strip(), int(count), None if degree == "-" else int(degree))
    return rows
