"""What the scene lists say each real scene holds: tests/data/CREDITS.md for the bundled files, and SOURCES.md
beside the unbundled scenes (tests/conftest.py unbundled_scenes) where that folder exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from tests.conftest import DATA, unbundled_scenes

ALLOWED_LICENCES = {"CC-BY-4.0", "MIT", "Apache-2.0"}  # what may be bundled


class Listed(NamedTuple):
    format: str
    bytes: int
    count: int  # Gaussians
    degree: int | None  # SH degree (None: not a trained scene)
    licence: str
    sha256: str | None  # CREDITS.md only


def _table(path: Path) -> dict[str, Listed]:
    """{file: Listed} from a markdown table whose columns begin file | format | bytes | gaussians | SH deg |
    licence, and may end in a sha256 column."""
    rows = {}
    row = r"^\| `([^`]+)` \| ([^|]+) \| (\d+) \| (\d+) \| ([\d-]+) \| ([^|]+) \|(?: `([0-9a-f]{64})` \|)?"
    for m in re.finditer(row, path.read_text(), re.M):
        name, fmt, size, count, degree, licence, sha256 = m.groups()
        rows[name] = Listed(fmt.strip(), int(size), int(count), None if degree == "-" else int(degree),
                            licence.strip(), sha256)  # fmt: skip
    return rows


def credits_table() -> dict[str, Listed]:
    return _table(DATA / "CREDITS.md")


def sources_table() -> dict[str, Listed]:
    """SOURCES.md's table, or {} where the unbundled scenes are absent."""
    folder = unbundled_scenes()
    return _table(folder / "SOURCES.md") if folder else {}
