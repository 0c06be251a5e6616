"""Atomic output files: write to a temporary name beside the target, rename when complete.

A killed conversion leaves no half-written file under the output name, and an existing output is never
overwritten unless asked.

Temporaries are named `.NAME.PID.XXXXXXXX.part` (PID: the process that writes it). A writer killed outright
(kill -9, a power cut) cannot remove its temporary, so the next write to the same output removes every
temporary of that output whose process no longer runs (`remove_stale_temps`). One whose process still runs is
being written and is left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


class OutputExistsError(FileExistsError):
    """The output path exists and overwriting was not asked for."""


class MissingFolderError(FileNotFoundError):
    """The folder an output would go in does not exist, and creating it was not asked for."""


def check_writable(path: str | os.PathLike, *, overwrite: bool, make_parent: bool = False) -> None:
    """Refuse an existing output unless `overwrite`, and a missing parent folder unless `make_parent` (which
    creates it); one-line messages.

    A link counts as existing even where it leads nowhere (the rename would replace it), and an output that is
    a folder, a pipe or a device is refused even with `overwrite`: the rename fails on a folder only after all
    the work, and would put a file in place of a device (/dev/null, for root)."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "not a regular file (a pipe, a device or a socket)"
        raise FileExistsError(f"{path}: output is {what}; only a file can be replaced")
    if os.path.lexists(path) and not overwrite:
        raise OutputExistsError(f"{path}: output exists; pass --overwrite to replace it")
    check_parent(path, make=make_parent)


def check_parent(path: str | os.PathLike, *, make: bool) -> None:
    """Refuse an output (file or folder) whose parent folder is missing, naming that folder, unless `make`,
    which creates it: a typo in a folder name must not go unnoticed as a new folder."""
    path = os.fspath(path).rstrip(os.sep) or os.sep
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise FileExistsError(f"{path}: {parent} is not a folder")
    if os.path.isdir(parent):
        return
    if not make:
        shown = os.path.dirname(path)  # as the user wrote it
        raise MissingFolderError(f"{path}: the folder {shown} does not exist; pass --mkdir to create it")
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise naming_output(e, path) from None


def set_usual_permissions(path: str) -> None:
    """Temporary files are created 0600; give a finished output the permissions a new file gets (umask)."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def naming_output(e: OSError, path: str) -> OSError:
    """The same error, naming the output the user asked for rather than its hidden temporary (or nothing):
    "[Errno 28] No space left on device" becomes "out.ply: No space left on device" at the command line."""
    return type(e)(e.errno, e.strerror or str(e), path)


# mkstemp's 8 random characters, and the suffixes used here and by the video writer (".part", ".chunkK.part")
_TEMP_TAIL = r"(\d+)\.[a-z0-9_]{8}(?:\.chunk\d+)?\.part"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        return True
    return True


def remove_stale_temps(path: str | os.PathLike) -> list[str]:
    """Remove the temporaries of `path` whose writing process no longer runs; return their names."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    pattern = re.compile(re.escape("." + os.path.basename(path) + ".") + _TEMP_TAIL)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        m = pattern.fullmatch(name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
                removed.append(name)
    return removed


def temp_path(path: str | os.PathLike, suffix: str = ".part") -> str:
    """Create an empty temporary file beside `path` (see the module docstring) and return its name."""
    path = os.fspath(path)
    remove_stale_temps(path)
    prefix = f".{os.path.basename(path)}.{os.getpid()}."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=os.path.dirname(os.path.abspath(path)))
    except OSError as e:
        raise naming_output(e, path) from None
    os.close(fd)
    return tmp


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file next to `path`; on success fsync and rename it over `path`.

    A failure to write (a full disk, a read-only folder) is an OSError naming `path`, and leaves nothing behind.
    """
    path = os.fspath(path)
    tmp = temp_path(path)
    try:
        set_usual_permissions(tmp)
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename in (None, tmp):  # not an input's error raised inside the block
            raise naming_output(e, path) from None
        raise
