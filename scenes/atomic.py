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
    """Refuse an existing output unless `overwrite` (one-line message); create a missing parent folder."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise OutputExistsError(f"{path}: output exists; pass --overwrite to replace it")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise FileExistsError(f"{path}: {parent} is not a folder")
    os.makedirs(parent, exist_ok=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to `path`; on success fsync and rename it over `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=folder)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a finished output gets the usual permissions
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
