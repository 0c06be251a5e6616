"""Atomic output files: write to a temporary name beside the target, rename when complete.

A killed conversion leaves no half-written file under the output name, and an existing output is never
overwritten unless asked.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


class OutputExistsError(FileExistsError):
    """The output path exists and overwriting was not asked for."""


def check_writable(path: str | os.PathLike, *, overwrite: bool) -> None:
    """Refuse an existing output unless `overwrite`; refuse a missing parent folder. One-line messages."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise OutputExistsError(f"{path}: output exists; pass --overwrite to replace it")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{path}: output folder {parent} does not exist")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to `path`; on success fsync and rename it over `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
