"""INRIA 3DGS PLY (`point_cloud/iteration_N/point_cloud.ply`): the lossless interchange format.

Layout (graphdeco-inria/gaussian-splatting `GaussianModel.save_ply`): `format binary_little_endian 1.0`,
one element `vertex` of N rows, every property a float32:

    x y z  [nx ny nz]  f_dc_0..2  [f_rest_0 .. f_rest_{3(K-1)-1}]  opacity  scale_0..2  rot_0..3

- f_dc_c: degree-0 SH coefficient of channel c (colour = 0.5 + SH_C0 * f_dc).
- f_rest_i: **channel-major**: f_rest_{c*(K-1)+j} is channel c, coefficient j+1. We store coefficient-major
  sh[N, K, 3], so reading reshapes (N, 3, K-1) -> transpose -> (N, K-1, 3).
- opacity: logit; scale_i: log scale; rot_0..3: quaternion (w, x, y, z), not normalised on disk.
- Variants handled: normals missing, f_rest missing (degree 0), extra properties (ignored), properties in any
  order, non-float32 property types (converted), big-endian and ASCII bodies.
- Refused: a body longer than its elements declare (mis-declared types or counts would load garbage).

The body is read through a numpy view of the mapped file, never per-row Python, in one pass: chunks of rows are
converted to float32 (a plain copy in the common all-float32 case) and copied straight into the final contiguous
arrays, and each chunk's file pages are released once copied (see the NOTE at CHUNK_BYTES). So reading peaks at
the scene's arrays plus a chunk; an ASCII body is parsed in chunks too, into records first (about twice the
scene's arrays).
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch

from .atomic import atomic_write
from .gaussians import GaussianScene, SceneFormatError
from .limits import check_count, check_memory, check_scene_memory, open_regular

_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}  # fmt: skip

MAX_HEADER_BYTES = 1 << 20  # a real header is a few kB; refuse to scan further for end_header


class PlyElement:
    """One `element NAME COUNT` of a PLY header with its scalar properties."""

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.properties: list[tuple[str, str]] = []  # (name, numpy type code without byte order)
        self.has_list = False

    def dtype(self, endian: str) -> np.dtype:
        return np.dtype([(n, endian + t) for n, t in self.properties])


def parse_header(data: bytes | memoryview, path: str) -> tuple[str, list[PlyElement], int]:
    """Parse a PLY header. Returns (format, elements, byte offset of the body)."""
    head = bytes(data[: min(len(data), MAX_HEADER_BYTES)])
    if not head.startswith(b"ply"):
        raise SceneFormatError(f"{path}: not a PLY file (no 'ply' magic)")
    end = head.find(b"end_header")
    if end < 0 and len(data) > MAX_HEADER_BYTES:
        comments = sum(1 for line in head.splitlines() if line.startswith((b"comment", b"obj_info")))
        raise SceneFormatError(
            f"{path}: PLY header runs past {MAX_HEADER_BYTES:,} bytes without reaching end_header ({comments:,} "
            "comment lines in them): warpsplat reads headers of up to 1 MiB (a scene's takes a few kB)"
        )
    if end < 0:
        raise SceneFormatError(f"{path}: PLY header has no end_header line")
    nl = head.find(b"\n", end)
    if nl < 0:
        raise SceneFormatError(f"{path}: PLY header is truncated")
    body_offset = nl + 1
    fmt = None
    elements: list[PlyElement] = []
    for raw in head[:end].decode("latin-1").splitlines()[1:]:
        parts = raw.split()
        if not parts or parts[0] in ("comment", "obj_info"):
            continue
        if parts[0] == "format" and len(parts) >= 2:
            fmt = parts[1]
        elif parts[0] == "element" and len(parts) == 3:
            try:
                count = int(parts[2])
            except ValueError:
                raise SceneFormatError(f"{path}: PLY element {parts[1]} has a bad count {parts[2]!r}") from None
            if count < 0:
                raise SceneFormatError(f"{path}: PLY element {parts[1]} has a negative count {count}")
            elements.append(PlyElement(parts[1], count))
        elif parts[0] == "property" and elements:
            if parts[1] == "list":
                elements[-1].has_list = True
                continue
            if len(parts) != 3 or parts[1] not in _PLY_TYPES:
                raise SceneFormatError(f"{path}: unsupported PLY property line {raw.strip()!r}")
            if any(parts[2] == name for name, _ in elements[-1].properties):
                raise SceneFormatError(f"{path}: PLY element {elements[-1].name} repeats property {parts[2]!r}")
            elements[-1].properties.append((parts[2], _PLY_TYPES[parts[1]]))
    if fmt not in ("binary_little_endian", "binary_big_endian", "ascii"):
        raise SceneFormatError(f"{path}: unsupported PLY format {fmt!r}")
    return fmt, elements, body_offset


def read_elements(data: bytes | memoryview, path: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read every element of a PLY file into structured numpy arrays (binary: zero-copy views).

    The body must hold exactly the declared elements: bytes (or ASCII values) left after them mean the header
    mis-declares the property types or counts, and reading on would load garbage.

    Returns ({element name: structured array}, header comment lines).
    """
    fmt, elements, offset = parse_header(data, path)
    comments = [
        ln[len("comment ") :].strip()
        for ln in bytes(data[:offset]).decode("latin-1").splitlines()
        if ln.startswith("comment ")
    ]
    for el in elements:
        if el.has_list:
            raise SceneFormatError(f"{path}: PLY element {el.name} has list properties (unsupported in splat files)")
    if fmt == "ascii":
        return _read_ascii(data, offset, elements, path), comments
    out: dict[str, np.ndarray] = {}
    endian = "<" if fmt == "binary_little_endian" else ">"
    for el in elements:
        dt = el.dtype(endian)
        need = el.count * dt.itemsize
        if offset + need > len(data):
            raise SceneFormatError(
                f"{path}: PLY body is truncated: element {el.name} declares {el.count:,} rows "
                f"({need:,} bytes) but only {max(0, len(data) - offset):,} bytes remain"
            )
        out[el.name] = np.frombuffer(data, dtype=dt, count=el.count, offset=offset)
        offset += need
    if offset != len(data):
        raise SceneFormatError(
            f"{path}: PLY body has {len(data) - offset:,} bytes after its declared elements "
            "(the header's property types or counts do not match the data)"
        )
    return out, comments


ASCII_CHUNK_BYTES = 4 << 20  # text parsed at a time: its tokens are Python objects, ~60 bytes each


def _ascii_values(data: bytes | memoryview, offset: int, path: str) -> Iterator[np.ndarray]:
    """float64 values of an ASCII PLY body, a chunk of whole lines at a time (bounded temporaries)."""
    pos, end = offset, len(data)
    while pos < end:
        stop = min(end, pos + ASCII_CHUNK_BYTES)
        text = bytes(data[pos:stop])
        if stop < end:  # cut after the last whitespace so that no number is split
            cut = max(text.rfind(c) for c in (b"\n", b"\r", b" ", b"\t"))
            if cut < 0:
                raise SceneFormatError(f"{path}: ASCII PLY body holds a token longer than {ASCII_CHUNK_BYTES:,} bytes")
            text = text[: cut + 1]
        pos += len(text)
        try:
            yield np.array(text.split(), dtype=np.float64)
        except ValueError:
            raise SceneFormatError(f"{path}: ASCII PLY body holds a non-number") from None


def _read_ascii(data: bytes | memoryview, offset: int, elements: list[PlyElement], path: str) -> dict[str, np.ndarray]:
    """Parse an ASCII body into structured arrays, element by element, in row chunks."""
    check_memory(sum(el.count * el.dtype("<").itemsize for el in elements), path, "the ASCII PLY body")
    values = _ascii_values(data, offset, path)
    pending = np.empty(0)
    out: dict[str, np.ndarray] = {}
    for el in elements:
        arr = np.empty(el.count, dtype=el.dtype("<"))
        p, row = len(el.properties), 0
        while p and row < el.count:
            if len(pending) < p:
                more = next(values, None)
                if more is None:
                    raise SceneFormatError(f"{path}: PLY body is truncated in element {el.name} (row {row:,})")
                pending = np.concatenate([pending, more])
                continue
            take = min(el.count - row, len(pending) // p)
            block = pending[: take * p].reshape(take, p)
            with np.errstate(over="ignore", invalid="ignore"):  # out-of-range values become inf / wrap, as binary
                for i, (name, _) in enumerate(el.properties):
                    arr[name][row : row + take] = block[:, i]
            pending, row = pending[take * p :], row + take
        out[el.name] = arr
    if len(pending) or any(len(v) for v in values):
        raise SceneFormatError(
            f"{path}: ASCII PLY body holds values after its declared elements "
            "(the header's counts do not match the data)"
        )
    return out


def _suffix_sorted(names: list[str], prefix: str) -> list[str]:
    """Property names `prefix<int>` sorted by the integer (f_rest_10 after f_rest_9, not before f_rest_2)."""
    pat = re.compile(re.escape(prefix) + r"(\d+)$")
    found = [(int(m.group(1)), n) for n in names if (m := pat.match(n))]
    return [n for _, n in sorted(found)]


def scene_from_vertex(
    v: np.ndarray,
    path: str,
    *,
    source_format: str = "ply",
    comments=(),
    release: Callable[[int, int], None] | None = None,
) -> GaussianScene:
    """INRIA vertex records -> GaussianScene (raw values, no activation).

    `release(row_start, row_end)`, if given, is called once those rows have been copied out (the reader uses it
    to drop the file's pages of those rows from the process's resident memory).
    """
    names = list(v.dtype.names or ())
    required = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"]
    required += ["scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"]
    missing = [n for n in required if n not in names]
    if missing:
        raise SceneFormatError(f"{path}: PLY vertex element lacks Gaussian properties {missing} (a plain point cloud?)")
    rest = _suffix_sorted(names, "f_rest_")
    if len(rest) not in (0, 9, 24, 45):
        raise SceneFormatError(f"{path}: {len(rest)} f_rest properties; expected 0, 9, 24 or 45 (SH degree 0-3)")
    check_count(len(v), path, "PLY element vertex")
    check_scene_memory(len(v), 1 + len(rest) // 3, path, "PLY element vertex", buffers=2 * CHUNK_BYTES)
    scene = _copy_fields(v, {n: i for i, n in enumerate(names)}, rest, release)
    scene.source_format, scene.antialiased = source_format, is_antialiased(comments)
    scene.extras = {"properties": len(names), "ignored properties": [p for p in names if p not in required + rest]}
    return scene.validate()


# NOTE one pass over the body, CHUNK_BYTES of rows at a time, measured on the shared 2-core CPU machine (SH degree 2
# PLYs from `warpsplat compose`, page cache warm, peak RSS including torch's own 0.24 GB):
#   gathering each field whole (a packed copy per field, then the SH transpose in numpy, whole file resident):
#     2M 0.7-1.1 s, 1.0 GB peak; 10M 6.4-6.8 s, 4.0 GB peak (scene 1.52 GB).
#   chunked copies (torch) straight into the final tensors, each chunk's mapped pages released once copied:
#     2M 0.23-0.28 s, 0.58 GB; 10M 1.4-1.8 s, 1.86 GB; 30M (4.56 GB) 5.8-8.5 s, 5.08 GB.
# The file's odd header length leaves the body unaligned, where numpy's strided SH transpose is 15x slower
# than torch's (2.7 s vs 0.17 s for 10M); 8 MiB chunks stay in cache and were as fast as 32 MiB (10M: 1.0 s vs 1.2 s).
CHUNK_BYTES = 8 << 20


def _float32_body(v: np.ndarray) -> np.ndarray | None:
    """[N, P] float32 view of vertex records whose P properties are all little-endian float32, else None."""
    dt = v.dtype
    fields = dt.fields
    if fields is None or not v.flags.c_contiguous or dt.itemsize != 4 * len(fields):
        return None
    if any(f[0] != np.dtype("<f4") or f[1] != 4 * i for i, f in enumerate(fields.values())):
        return None
    return v.view("<f4").reshape(len(v), len(fields))


def _take(block: torch.Tensor, cols: list[int]) -> torch.Tensor:
    """block[:, cols]: a strided view when the columns are consecutive (the INRIA order), else a gather."""
    if cols == list(range(cols[0], cols[0] + len(cols))):
        return block[:, cols[0] : cols[0] + len(cols)]
    return block[:, cols]


def _copy_fields(
    v: np.ndarray, col: dict[str, int], rest: list[str], release: Callable[[int, int], None] | None
) -> GaussianScene:
    """Copy each field of N vertex records once, chunk of rows by chunk, into its final contiguous tensor.

    Each chunk of records is first converted to a float32 [rows, P] staging block (`_to_float32`), so the
    final tensors plus one chunk are all that is allocated, whatever the property types.

    Returns the scene's fields, sh coefficient-major.
    """
    n, p = len(v), len(col)
    k1 = len(rest) // 3
    c_means = [col[c] for c in ("x", "y", "z")]
    c_quats = [col[f"rot_{i}"] for i in range(4)]
    c_scales = [col[f"scale_{i}"] for i in range(3)]
    c_dc = [col[f"f_dc_{i}"] for i in range(3)]
    c_rest = [col[r] for r in rest]
    c_opacity = col["opacity"]
    out = GaussianScene.allocate(n, 1 + k1)
    step = max(1, min(n, CHUNK_BYTES // (4 * p)))
    staging = np.empty((step, p), np.float32)  # aligned, writable: the mapped body is neither (odd header length)
    body = _float32_body(v)
    for a in range(0, n, step):
        b = min(n, a + step)
        if body is not None:
            staging[: b - a] = body[a:b]
        else:
            _to_float32(v[a:b], staging[: b - a])
        block = torch.from_numpy(staging[: b - a])
        out.means[a:b] = _take(block, c_means)
        out.quats[a:b] = _take(block, c_quats)
        out.log_scales[a:b] = _take(block, c_scales)
        out.opacity_logits[a:b] = block[:, c_opacity]
        out.sh[a:b, 0] = _take(block, c_dc)
        if k1:  # channel-major on disk -> coefficient-major, in the same copy
            out.sh[a:b, 1:] = _take(block, c_rest).reshape(b - a, 3, k1).transpose(1, 2)
        if release is not None:
            release(a, b)
    return out


def _to_float32(records: np.ndarray, out: np.ndarray) -> None:
    """Structured records of any property types and byte order -> out [rows, P] float32, column by column."""
    with np.errstate(over="ignore"):  # a double beyond float32's range becomes inf, and is then dropped as invalid
        for i, name in enumerate(records.dtype.names or ()):
            out[:, i] = records[name]


def read_ply(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    """Read an INRIA 3DGS PLY. `data` may hold the file's bytes already (else the file is memory-mapped)."""
    path = str(path)
    if data is None:
        data = map_file(path)
    elements, comments = read_elements(data, path)
    if "vertex" not in elements:
        raise SceneFormatError(f"{path}: PLY file has no vertex element")
    vertex = elements["vertex"]
    scene = scene_from_vertex(vertex, path, comments=comments, release=page_releaser(data, vertex))
    return scene.drop_invalid(name=path, in_place=True)


def map_file(path: str) -> memoryview:
    """Read-only view of a whole regular file through mmap: no copy until a field is gathered."""
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise SceneFormatError(f"{path}: file is empty")
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def page_releaser(data: bytes | memoryview, records: np.ndarray) -> Callable[[int, int], None] | None:
    """For records viewed from a file mapping (`map_file`): a callable that drops the mapped pages of rows
    [a, b) from this process's resident set once they have been copied, so that a load's peak memory is the
    scene plus one chunk rather than the scene plus the whole file. The page cache keeps the pages."""
    mm = data.obj if isinstance(data, memoryview) else None
    if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED") or len(records) == 0:
        return None
    base = np.frombuffer(data, np.uint8).ctypes.data
    start = records.ctypes.data - base
    row = records.dtype.itemsize
    if start < 0 or start + len(records) * row > len(data):
        return None  # parsed (ASCII) or converted records: not a view of the mapping, nothing to release

    def release(a: int, b: int) -> None:
        lo = (start + a * row) // mmap.PAGESIZE * mmap.PAGESIZE
        hi = (start + b * row) // mmap.PAGESIZE * mmap.PAGESIZE  # the page holding row b may still be needed
        if hi > lo:
            mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    return release


def write_ply(scene: GaussianScene, path: str | os.PathLike, *, with_normals: bool = True) -> None:
    """Write the INRIA layout (float32, little endian). Lossless for every GaussianScene."""
    write_ply_parts(path, [scene], len(scene), scene.sh.shape[1], antialiased=scene.antialiased,
                    with_normals=with_normals)  # fmt: skip


def write_ply_parts(
    path: str | os.PathLike,
    parts: Iterable[GaussianScene],
    total: int,
    sh_coeffs: int,
    *,
    antialiased: bool,
    with_normals: bool = True,
) -> None:
    """Write scenes one after another as one INRIA PLY of `total` Gaussians, holding one part in memory at a
    time: `warpsplat compose` streams a composite of many copies through here. Every part has `sh_coeffs` SH
    coefficients per channel; the header is written first, so the parts must add up to `total` (checked)."""
    names = ["x", "y", "z"] + (["nx", "ny", "nz"] if with_normals else [])
    names += [f"f_dc_{i}" for i in range(3)] + [f"f_rest_{i}" for i in range(3 * (sh_coeffs - 1))]
    names += ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)]
    header = ["ply", "format binary_little_endian 1.0", "comment written by warpsplat"]
    if antialiased:
        header.append("comment SplatRenderMode: mip")
    header += [f"element vertex {total}"] + [f"property float {p}" for p in names] + ["end_header"]
    written = 0
    with atomic_write(path) as f:
        f.write(("\n".join(header) + "\n").encode("ascii"))
        for part in parts:
            if part.sh.shape[1] != sh_coeffs:
                raise ValueError(f"write_ply_parts: a part has {part.sh.shape[1]} SH coefficients, not {sh_coeffs}")
            f.write(memoryview(_ply_rows(part.to("cpu"), with_normals)).cast("B"))
            written += len(part)
        if written != total:
            raise ValueError(f"write_ply_parts: the parts hold {written:,} Gaussians, the header says {total:,}")


def _ply_rows(scene: GaussianScene, with_normals: bool) -> np.ndarray:
    """[N, columns] little-endian float32 rows in write_ply_parts' property order."""
    n, k = len(scene), scene.sh.shape[1]
    cols = [scene.means.numpy()]
    if with_normals:
        cols.append(np.zeros((n, 3), np.float32))
    sh = scene.sh.numpy()
    cols += [sh[:, 0], sh[:, 1:].transpose(0, 2, 1).reshape(n, 3 * (k - 1))]  # coefficient- -> channel-major
    cols += [scene.opacity_logits.numpy()[:, None], scene.log_scales.numpy(), scene.quats.numpy()]
    return np.ascontiguousarray(np.concatenate(cols, axis=1), dtype="<f4")


def is_antialiased(comments: list[str]) -> bool:
    """Header comments that mark a scene trained with the Mip-Splatting 2D filter: `comment SplatRenderMode: mip`
    (Brush, gsplat) or `comment antialiased 1` (Postshot)."""
    return any(c.replace(" ", "").lower() in ("splatrendermode:mip", "antialiased1") for c in comments)


def is_ply(head: bytes) -> bool:
    return head.startswith(b"ply\n") or head.startswith(b"ply\r\n")
