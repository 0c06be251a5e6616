"""`.ksplat`: the GaussianSplats3D (Three.js) viewer's scene format. Read only: that viewer is no longer developed,
and the format is legacy, but files of it are still published.

All little-endian. A 4,096-byte main header, then `max sections` section headers of 1,024 bytes, then each
section's storage in turn.

| main header | field                                                                                 |
|-------------|---------------------------------------------------------------------------------------|
| u8 @0, @1   | version major 0, minor >= 1                                                           |
| u32 @4      | max sections (section headers present)                                                |
| u32 @16     | Gaussians in the file (the sections' counts add up to it)                             |
| u16 @20     | compression level: 0, 1 or 2                                                          |
| f32 @36, @40| level 2's SH range [lo, hi]; 0 stands for the defaults -1.5 and 1.5                   |

| section header | field                                                                              |
|----------------|------------------------------------------------------------------------------------|
| u32 @0, @4     | Gaussians in the section, and the rows its storage holds (>= the count)            |
| u32 @8, @12    | bucket capacity, buckets (levels 1 and 2: positions are relative to a bucket)      |
| f32 @16        | the buckets' block size                                                            |
| u16 @20        | bytes a bucket's centre takes (12: f32 x, y, z)                                    |
| u32 @24        | the positions' quantisation range; 0 stands for 32767                              |
| u32 @32, @36   | full buckets (each holds `capacity` rows), partly filled buckets                   |
| u16 @40        | SH degree, 0-2                                                                     |

A section's storage: the partly filled buckets' row counts (u32 each), the buckets' centres, then its rows. A row,
by compression level (offsets in bytes; SH values N = 0, 9 or 24):

| level | position                  | scale (linear) | rotation w, x, y, z | colour, alpha | SH              | bytes   |
|-------|---------------------------|----------------|---------------------|---------------|-----------------|---------|
| 0     | f32 x 3 @0                | f32 x 3 @12    | f32 x 4 @24         | u8 x 4 @40    | f32 x N @44     | 44 + 4N |
| 1     | u16 x 3 @0, bucket-relative| f16 x 3 @6    | f16 x 4 @12         | u8 x 4 @20    | f16 x N @24     | 24 + 2N |
| 2     | as level 1                | f16 x 3 @6     | f16 x 4 @12         | u8 x 4 @20    | u8 x N @24      | 24 + N  |

- A quantised position is `(u - range) * block / 2 / range + the bucket's centre`; rows fill the full buckets in
  order, `capacity` each, then the partly filled ones by their counts.
- Colour and alpha are 8-bit, as in `.splat`: colour = (0.5 + SH_C0 f_dc) 255, alpha = sigmoid(opacity) 255.
- The SH values are grouped by band and are channel-major within a band: degree 1 as R0-R2, G0-G2, B0-B2 (9),
  then degree 2 as R0-R4, G0-G4, B0-B4 (15). Level 2 stores each as a byte u: lo + u / 255 (hi - lo).
- The frame is the trainer's PLY frame: the viewer writes what it read without an axis change.

A scale that fp16 rounds to zero (below 2^-25) is read as 2^-25, so the Gaussian stays the flat splat that the
viewer draws rather than being dropped as degenerate. Reading checks every section's layout against the file's size
before any row is decoded, and decodes DECODE_ROWS rows at a time, so memory stays the scene plus a chunk.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

import numpy as np
import torch

from .gaussians import SH_C0, GaussianScene, SceneFormatError, logit_alpha8
from .limits import check_count, check_scene_memory
from .ply import map_file

MAIN_HEADER = 4096
SECTION_HEADER = 1024
DEFAULT_SH_RANGE = (-1.5, 1.5)  # level 2's SH range where the header leaves it 0
DEFAULT_POSITION_RANGE = 32767  # levels 1 and 2's quantisation range where a section leaves it 0
BUCKET_CENTRE_BYTES = 12
SH_VALUES = {0: 0, 1: 9, 2: 24}  # SH values a row holds, by degree
ZERO_SCALE = 2.0**-25  # what a scale stored as fp16 zero is read as (the largest value fp16 rounds to zero)
DECODE_ROWS = 1 << 16


def _row_dtype(level: int, degree: int) -> np.dtype:
    """One row of a section at `level` whose Gaussians have SH `degree`."""
    n = SH_VALUES[degree]
    if level == 0:
        fields = [("pos", "<f4", 3), ("scale", "<f4", 3), ("rot", "<f4", 4), ("rgba", "u1", 4)]
        sh = ("sh", "<f4", n)
    else:
        fields = [("pos", "<u2", 3), ("scale", "<f2", 3), ("rot", "<f2", 4), ("rgba", "u1", 4)]
        sh = ("sh", "<f2" if level == 1 else "u1", n)
    return np.dtype(fields + ([sh] if n else []))


@dataclass
class _Section:
    count: int  # Gaussians in it
    degree: int
    rows: np.ndarray  # [capacity] of _row_dtype: the section's rows as mapped from the file
    # levels 1 and 2: the positions' buckets and quantisation
    centres: np.ndarray | None = None  # [buckets, 3] f32
    in_full: int = 0  # rows in the full buckets: row r < in_full is in bucket r // capacity
    capacity: int = 0  # rows a full bucket holds
    full: int = 0  # full buckets: the partly filled ones' indices follow theirs
    partial_ends: np.ndarray | None = None  # [partly filled buckets] i64: the row (less in_full) each one ends at
    step: float = 0.0  # metres a quantisation unit
    offset: int = 0  # the quantisation range: the value that stands for the bucket's centre

    def buckets(self, a: int, b: int) -> np.ndarray:
        """[b - a] i64: the bucket of each of rows [a, b)."""
        rows = np.arange(a, b, dtype=np.int64)
        full = rows < self.in_full
        out = np.empty(b - a, np.int64)
        out[full] = rows[full] // max(self.capacity, 1)
        out[~full] = self.full + np.searchsorted(self.partial_ends, rows[~full] - self.in_full, side="right")
        return out


def _section(data, path: str, index: int, base: int, level: int) -> tuple[_Section, int]:
    """Section `index`, whose storage starts at byte `base`: (its layout, where the next section starts). Every
    field is checked against the file before anything of it is read."""
    at = MAIN_HEADER + index * SECTION_HEADER
    count, capacity, bucket_size, n_buckets = struct.unpack_from("<4I", data, at)
    (block,) = struct.unpack_from("<f", data, at + 16)
    (centre_bytes,) = struct.unpack_from("<H", data, at + 20)
    (qrange,) = struct.unpack_from("<I", data, at + 24)
    full, partial = struct.unpack_from("<2I", data, at + 32)
    (degree,) = struct.unpack_from("<H", data, at + 40)
    where = f"{path}: section {index}"
    if degree not in SH_VALUES:
        raise SceneFormatError(f"{where} declares SH degree {degree} (the format holds 0-2)")
    if count > capacity:
        raise SceneFormatError(f"{where} declares {count:,} Gaussians in room for {capacity:,}")
    dtype = _row_dtype(level, degree)
    if level > 0:  # level 0 keeps its rows' positions whole (the viewer writes its bucket fields 0)
        if centre_bytes != BUCKET_CENTRE_BYTES:
            raise SceneFormatError(f"{where}: a bucket's centre takes {centre_bytes} bytes (the format's is 12)")
        if not (math.isfinite(block) and block > 0):
            raise SceneFormatError(f"{where}: bucket block size {block} is not a positive number")
        if full + partial > n_buckets:
            raise SceneFormatError(f"{where}: {full:,} full and {partial:,} partly filled buckets of {n_buckets:,}")
    storage = 4 * partial + centre_bytes * n_buckets + dtype.itemsize * capacity
    if base + storage > len(data):
        raise SceneFormatError(f"{where} needs bytes {base:,}-{base + storage:,}, past the file's {len(data):,}")
    rows = np.frombuffer(data, dtype=dtype, count=capacity, offset=base + 4 * partial + centre_bytes * n_buckets)
    if level == 0 or count == 0:
        return _Section(count, degree, rows), base + storage
    qrange = qrange or DEFAULT_POSITION_RANGE
    ends = np.cumsum(np.frombuffer(data, dtype="<u4", count=partial, offset=base), dtype=np.int64)
    in_full = min(count, full * bucket_size)
    held = in_full + (int(ends[-1]) if partial else 0)
    if held < count:
        raise SceneFormatError(f"{where}: its buckets hold {held:,} of its {count:,} rows")
    centres = np.frombuffer(data, dtype="<f4", count=3 * n_buckets, offset=base + 4 * partial).reshape(-1, 3)
    section = _Section(count, degree, rows, centres, in_full, bucket_size, full, ends, block / 2.0 / qrange, qrange)
    return section, base + storage


def read_ksplat(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    """Read a `.ksplat` file of any compression level (0-2) and SH degree (0-2)."""
    path = os.fspath(path)
    if data is None:
        data = map_file(path)
    if len(data) < MAIN_HEADER:
        raise SceneFormatError(f"{path}: {len(data):,} bytes, shorter than a .ksplat header ({MAIN_HEADER:,})")
    major, minor = data[0], data[1]
    if major != 0 or minor < 1:
        raise SceneFormatError(f"{path}: .ksplat version {major}.{minor} is not supported (0.1 and later are)")
    (max_sections,) = struct.unpack_from("<I", data, 4)
    (declared,) = struct.unpack_from("<I", data, 16)
    (level,) = struct.unpack_from("<H", data, 20)
    sh_lo, sh_hi = struct.unpack_from("<2f", data, 36)
    if level > 2:
        raise SceneFormatError(f"{path}: compression level {level} is not one of the format's 0, 1, 2")
    n = check_count(declared, path, ".ksplat header")
    if MAIN_HEADER + max_sections * SECTION_HEADER > len(data):
        raise SceneFormatError(f"{path}: {max_sections:,} section headers do not fit in its {len(data):,} bytes")
    sections, base = [], MAIN_HEADER + max_sections * SECTION_HEADER
    for i in range(max_sections):
        section, base = _section(data, path, i, base, level)
        if section.count:
            sections.append(section)
    held = sum(s.count for s in sections)
    if held != n:
        raise SceneFormatError(f"{path}: its sections hold {held:,} Gaussians, its header declares {n:,}")
    degree = max(s.degree for s in sections)
    check_scene_memory(n, (degree + 1) ** 2, path, ".ksplat header")
    # the viewer's reading of the SH range: a value of 0 (or NaN) stands for its default
    lo = float(sh_lo) if sh_lo and not math.isnan(sh_lo) else DEFAULT_SH_RANGE[0]
    hi = float(sh_hi) if sh_hi and not math.isnan(sh_hi) else DEFAULT_SH_RANGE[1]
    scene = GaussianScene.allocate(n, (degree + 1) ** 2, source_format="ksplat")
    scene.sh.zero_()  # a section of a lower degree than the file's leaves its higher bands 0
    first = 0
    for s in sections:
        for a in range(0, s.count, DECODE_ROWS):
            b = min(s.count, a + DECODE_ROWS)
            _decode(s, a, b, scene, first + a, level, (lo, hi))
        first += s.count
    scene.extras = {"compression level": level, "sections": len(sections)}
    if level == 2 and degree > 0:
        scene.extras["sh range"] = [lo, hi]
    return scene.validate().drop_invalid(name=path, in_place=True)


def _decode(s: _Section, a: int, b: int, scene: GaussianScene, at: int, level: int, sh_range) -> None:
    """Rows [a, b) of section `s` into the scene's rows from `at`."""
    r = s.rows[a:b]
    out = slice(at, at + b - a)
    if level == 0:
        pos = r["pos"]
    else:  # in float64, then float32, as the viewer decodes them in JavaScript's doubles
        pos = (r["pos"].astype(np.float64) - s.offset) * s.step + s.centres[s.buckets(a, b)]
    scene.means[out] = torch.from_numpy(pos.astype(np.float32))
    scale = r["scale"].astype(np.float32)
    scale[scale == 0] = ZERO_SCALE  # +0 and -0
    with np.errstate(divide="ignore", invalid="ignore"):
        scene.log_scales[out] = torch.from_numpy(np.log(scale))  # negative or NaN: dropped as bad
    scene.quats[out] = torch.from_numpy(r["rot"].astype(np.float32))
    scene.sh[out, 0] = (torch.from_numpy(r["rgba"][:, :3].astype(np.float32)) / 255.0 - 0.5) / SH_C0
    scene.opacity_logits[out] = logit_alpha8(r["rgba"][:, 3])
    if s.degree == 0:
        return
    sh = r["sh"].astype(np.float64 if level == 2 else np.float32)
    if level == 2:  # in float64, as the viewer does
        lo, hi = sh_range
        sh = sh / 255.0 * (hi - lo) + lo
    sh = torch.from_numpy(sh.astype(np.float32))
    # band by band, channel-major within a band: [rows, channel, coefficient] -> scene.sh[rows, k, channel]
    scene.sh[out, 1:4] = sh[:, :9].reshape(-1, 3, 3).transpose(1, 2)
    if s.degree == 2:
        scene.sh[out, 4:9] = sh[:, 9:24].reshape(-1, 3, 5).transpose(1, 2)
