"""What SOURCES.md, beside the real scenes (tests/conftest.py scenes_dir), says each scene holds."""

from __future__ import annotations

import re

from tests.conftest import scenes_dir


def sources_table() -> dict[str, tuple[str, int, int | None]]:
    """{file: (format, gaussians, SH degree or None)} from the summary table of SOURCES.md."""
    text = (scenes_dir() / "SOURCES.md").read_text()
    rows = {}
    for m in re.finditer(r"^\| `([^`]+)` \| ([^|]+) \| (\d+) \| (\d+) \| ([\d-]+) \|", text, re.M):
        name, fmt, _, count, degree = m.groups()
        rows[name] = (fmt.strip(), int(count), None if degree == "-" else int(degree))
    return rows
