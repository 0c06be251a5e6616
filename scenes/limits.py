"""Limits that readers check *before* allocating or decompressing, so that a hostile or corrupt file (a lying
count, a zip bomb, an absurd texture size, a pipe or a device instead of a file) fails with a one-line
`SceneFormatError` naming the file instead of exhausting memory or blocking.

- Counts: a declared Gaussian count must be positive and at most MAX_GAUSSIANS. The largest public trained
  scenes hold tens of millions of Gaussians, and `warpsplat compose` builds benchmark scenes of about 30M.
- Memory: what reading a declared count needs (the decoded float32 arrays plus the reader's own buffers) must
  fit under a cap: the machine's free memory (MemAvailable), or WARPSPLAT_MAX_MEMORY when set (`8G`, `512M`,
  a byte count, or `none` for no cap). The renderer on the CPU takes that setting as the memory it may use
  when it is below the free memory (renderer/memory.py `free_memory`).
- Expansion: compressed streams may not declare more output than their format can produce from their size.
- Compactness: a compressed format (SPZ, SOG) may not declare more Gaussians than its file's size can hold for a
  trained scene (MIN_BYTES_PER_GAUSSIAN each), checked on the header before anything is inflated or decoded. This
  is what bounds a small file's cost whatever the machine: without it, a 16 kB SPZ of zstd zeros or a 3 kB SOG of
  constant textures decodes to millions of identical Gaussians, and the memory cap (the free memory by default)
  was the only limit.
- Files: only regular files are opened (a FIFO blocks forever; /dev/zero never ends).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import BinaryIO

MAX_GAUSSIANS = 1 << 27  # 134M Gaussians: ~33 GB as float32 at SH degree 3, beyond any one GPU we target

# DEFLATE cannot expand data by more than ~1032:1 (RFC 1951: a 258-byte match costs at least two bits).
# A gzip/zip header that declares more output than that from its compressed size is lying.
MAX_DEFLATE_RATIO = 1032

# zstd cannot expand data by more than 32768:1: its largest block (128 KiB) costs at least 4 bytes
# (a 3-byte block header and the one byte of an RLE block) (RFC 8878, section 3.1.1.2).
MAX_ZSTD_RATIO = 1 << 15

# The fewest bytes a Gaussian of a trained scene takes in a compressed file. Measured on real files: SOG v2 (the
# most compact format there is: 16-bit positions, k-means codebooks, lossless WebP) 12.7-13.0 bytes a Gaussian on
# seven SH-0 scenes of 58k-134k Gaussians, 17-29 at SH 2; SPZ 14.7 at SH 0. A trained scene's positions alone
# are noise below a few millimetres (the low byte of each 16-bit coordinate), which no lossless coder removes.
# 8 is 1.6x below the most compact real file, and bounds what a file can cost: a 1 MiB file holds at most 131k
# Gaussians, which `warpsplat render --size 16x16` draws on the CPU in 2.5 s of CPU time and 460-495 MiB of
# memory, 335 MiB of it the interpreter with torch (SH 0 and SH 3, measured on the 2-core test machine).
MIN_BYTES_PER_GAUSSIAN = 8

MEMORY_CAP_ENV = "WARPSPLAT_MAX_MEMORY"

_FILE_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _error(message: str) -> Exception:
    from .gaussians import SceneFormatError  # gaussians imports torch; keep this module light

    return SceneFormatError(message)


def scene_bytes(count: int, sh_coeffs: int) -> int:
    """Bytes of a GaussianScene's float32 arrays: means 3, quats 4, log-scales 3, opacity 1, SH 3 K."""
    return count * 4 * (11 + 3 * sh_coeffs)


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def mem_available(path: str = "/proc/meminfo") -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None off Linux or if unreadable)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_cap() -> tuple[int | None, str]:
    """(cap in bytes or None for no cap, where it comes from) for reading one scene."""
    if not os.environ.get(MEMORY_CAP_ENV, "").strip():
        return mem_available(), "the free memory"
    return set_cap()


def set_cap() -> tuple[int | None, str]:
    """WARPSPLAT_MAX_MEMORY as (bytes, or None when unset or `none`; the setting as written)."""
    text = os.environ.get(MEMORY_CAP_ENV, "").strip()
    if not text or text.lower() == "none":
        return None, f"{MEMORY_CAP_ENV}={text}"
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", text.lower())
    if not m:
        raise _error(f"{MEMORY_CAP_ENV}={text!r}: expected a size such as 8G, 512M, a byte count, or none")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2)]
    return int(float(m.group(1)) * scale), f"{MEMORY_CAP_ENV}={text}"


def check_memory(need: int, path: str, what: str) -> None:
    """Refuse, before allocating, a read that needs more than the memory cap."""
    cap, source = memory_cap()
    if cap is not None and need > cap:
        raise _error(
            f"{path}: {what} needs about {gb(need)} of memory to read, more than the {gb(cap)} cap "
            f"({source}; set {MEMORY_CAP_ENV} to change it)"
        )


def check_count(count: int, path: str, field: str) -> int:
    """A declared Gaussian count must be positive and at most MAX_GAUSSIANS."""
    if count <= 0:
        raise _error(f"{path}: {field} declares {count} Gaussians (the file holds no scene)")
    if count > MAX_GAUSSIANS:
        raise _error(f"{path}: {field} declares {count:,} Gaussians, above the {MAX_GAUSSIANS:,} limit")
    return count


def check_compact(count: int, file_bytes: int, path: str, field: str) -> None:
    """A compressed file of `file_bytes` may declare at most file_bytes / MIN_BYTES_PER_GAUSSIAN Gaussians.
    Checked on the header, before anything is inflated: the one bound on a compressed file's cost that depends
    on the file alone, not on the machine's memory."""
    if count * MIN_BYTES_PER_GAUSSIAN > file_bytes:
        raise _error(
            f"{path}: {field} declares {count:,} Gaussians in a {file_bytes:,}-byte file, "
            f"{file_bytes / count:.2g} bytes each; a trained scene takes at least {MIN_BYTES_PER_GAUSSIAN} in any "
            "compressed format (the count lies, or the Gaussians are copies of a few)"
        )


def check_scene_memory(count: int, sh_coeffs: int, path: str, field: str, *, buffers: int = 0) -> None:
    """The decoded arrays of `count` Gaussians plus the reader's own `buffers` (bytes) must fit under the
    memory cap. Checked before allocating."""
    check_memory(scene_bytes(count, sh_coeffs) + buffers, path, f"{field} of {count:,} Gaussians")


def open_regular(path: str) -> BinaryIO:
    """Open a scene file for reading; anything but a regular file is refused with a one-line error.

    Opened non-blocking and checked on the open descriptor: a plain open() of a FIFO waits for a writer, and
    a check before opening could be raced by a rename.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:  # what opening a socket gives
            raise _error(f"{path}: is a socket or device, not a regular file") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(mode) else _FILE_KINDS.get(stat.S_IFMT(mode), "a special file")
        raise _error(f"{path}: is {what}, not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path: str, what: str) -> bytes:
    """The whole of a regular file, read up to the size it had when opened (a file that grows is not followed)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        check_memory(size, path, what)
        return f.read(size)
