"""INRIA 3DGS PLY (`point_cloud/iteration_N/point_cloud.ply`): the lossless interchange format.

Layout (graphdeco-inria/gaussian-splatting `GaussianModel.save_ply`): `format binary_little_endian 1.0`,
one element `vertex` of N rows, every property a float32:

    x y z  [nx ny nz]  f_dc_0..2  [f_rest_0 .. f_rest_{3(K-1)-1}]  opacity  scale_0..2  rot_0..3

- f_dc_c: degree-0 SH coefficient of channel c (colour = 0.5 + SH_C0 * f_dc).
- f_rest_i: **channel-major**: f_rest_{c*(K-1)+j} is channel c, coefficient j+1. We store coefficient-major
  sh[N, K, 3], so reading reshapes (N, 3, K-1) -> transpose -> (N, K-1, 3).
- opacity: logit; scale_i: log scale; rot_0..3: quaternion (w, x, y, z), not normalised on disk.
- Variants handled: normals missing, f_rest missing (degree 0), extra properties (ignored), properties in any
  order, non-float32 property types (converted), big-endian and ASCII bodies (slower path, still vectorised).

The body is read through a numpy structured view of the bytes (one copy), never per-row Python.
"""

from __future__ import annotations

import os
import re

import numpy as np
import torch

from .atomic import atomic_write
from .gaussians import GaussianScene, SceneFormatError, make_scene

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

    Returns ({element name: structured array}, header comment lines).
    """
    fmt, elements, offset = parse_header(data, path)
    comments = [
        ln[len("comment ") :].strip()
        for ln in bytes(data[:offset]).decode("latin-1").splitlines()
        if ln.startswith("comment ")
    ]
    out: dict[str, np.ndarray] = {}
    if fmt == "ascii":
        text = bytes(data[offset:]).decode("latin-1").split()
        pos = 0
        for el in elements:
            if el.has_list:
                raise SceneFormatError(f"{path}: ASCII PLY element {el.name} has list properties (unsupported)")
            n_vals = el.count * len(el.properties)
            if pos + n_vals > len(text):
                raise SceneFormatError(f"{path}: PLY body is truncated in element {el.name}")
            try:
                vals = np.array(text[pos : pos + n_vals], dtype=np.float64).reshape(el.count, len(el.properties))
            except ValueError:
                raise SceneFormatError(f"{path}: ASCII PLY element {el.name} holds a non-number") from None
            arr = np.empty(el.count, dtype=el.dtype("<"))
            for i, (name, _) in enumerate(el.properties):
                arr[name] = vals[:, i]
            out[el.name] = arr
            pos += n_vals
        return out, comments
    endian = "<" if fmt == "binary_little_endian" else ">"
    for el in elements:
        if el.has_list:
            raise SceneFormatError(f"{path}: PLY element {el.name} has list properties (unsupported in splat files)")
        dt = el.dtype(endian)
        need = el.count * dt.itemsize
        if offset + need > len(data):
            raise SceneFormatError(
                f"{path}: PLY body is truncated: element {el.name} declares {el.count} rows "
                f"({need} bytes) but only {max(0, len(data) - offset)} bytes remain"
            )
        out[el.name] = np.frombuffer(data, dtype=dt, count=el.count, offset=offset)
        offset += need
    return out, comments


def _columns(arr: np.ndarray, names: list[str]) -> np.ndarray:
    """Stack named float columns into a float32 [N, len(names)] array.

    Fast path: when the columns are consecutive float32 fields in the record, take one strided view
    of the record bytes instead of one strided copy per column.
    """
    dt = arr.dtype
    fields = dt.fields
    assert fields is not None
    first = fields[names[0]]
    contiguous = all(fields[n][0] == np.dtype("<f4") and fields[n][1] == first[1] + 4 * i for i, n in enumerate(names))
    if contiguous:
        raw = arr.view(np.uint8).reshape(len(arr), dt.itemsize)
        return np.ascontiguousarray(raw[:, first[1] : first[1] + 4 * len(names)]).view("<f4")
    return np.stack([arr[n].astype(np.float32) for n in names], axis=1)


def _suffix_sorted(names: list[str], prefix: str) -> list[str]:
    """Property names `prefix<int>` sorted by the integer (f_rest_10 after f_rest_9, not before f_rest_2)."""
    pat = re.compile(re.escape(prefix) + r"(\d+)$")
    found = [(int(m.group(1)), n) for n in names if (m := pat.match(n))]
    return [n for _, n in sorted(found)]


def scene_from_vertex(v: np.ndarray, path: str, *, source_format: str = "ply", comments=()) -> GaussianScene:
    """INRIA vertex records -> GaussianScene (raw values, no activation)."""
    names = list(v.dtype.names or ())
    required = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"]
    required += ["scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"]
    missing = [n for n in required if n not in names]
    if missing:
        raise SceneFormatError(f"{path}: PLY vertex element lacks Gaussian properties {missing} (a plain point cloud?)")
    rest = _suffix_sorted(names, "f_rest_")
    if len(rest) not in (0, 9, 24, 45):
        raise SceneFormatError(f"{path}: {len(rest)} f_rest properties; expected 0, 9, 24 or 45 (SH degree 0-3)")
    n = len(v)
    means = _columns(v, ["x", "y", "z"])
    f_dc = _columns(v, ["f_dc_0", "f_dc_1", "f_dc_2"])
    sh = np.empty((n, 1 + len(rest) // 3, 3), dtype=np.float32)
    sh[:, 0] = f_dc
    if rest:
        k1 = len(rest) // 3
        sh[:, 1:] = _columns(v, rest).reshape(n, 3, k1).transpose(0, 2, 1)  # channel-major -> coefficient-major
    antialiased = any(c.replace(" ", "").lower() in ("splatrendermode:mip", "antialiased1") for c in comments)
    return make_scene(
        torch.from_numpy(means),
        torch.from_numpy(_columns(v, ["rot_0", "rot_1", "rot_2", "rot_3"])),
        torch.from_numpy(_columns(v, ["scale_0", "scale_1", "scale_2"])),
        torch.from_numpy(_columns(v, ["opacity"])[:, 0].copy()),
        torch.from_numpy(sh),
        source_format=source_format,
        up_axis="-y",
        antialiased=antialiased,
        extras={"properties": len(names), "ignored properties": [p for p in names if p not in required + rest]},
    )


def read_ply(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    """Read an INRIA 3DGS PLY. `data` may hold the file's bytes already (else the file is memory-mapped)."""
    path = str(path)
    if data is None:
        data = _map(path)
    elements, comments = read_elements(data, path)
    if "vertex" not in elements:
        raise SceneFormatError(f"{path}: PLY file has no vertex element")
    return scene_from_vertex(elements["vertex"], path, comments=comments).drop_invalid(name=path)


def _map(path: str) -> memoryview:
    """Read-only view of a whole file (np.memmap: no copy until a field is gathered)."""
    size = os.path.getsize(path)
    if size == 0:
        raise SceneFormatError(f"{path}: file is empty")
    return memoryview(np.memmap(path, dtype=np.uint8, mode="r"))


def write_ply(scene: GaussianScene, path: str | os.PathLike, *, with_normals: bool = True) -> None:
    """Write the INRIA layout (float32, little endian). Lossless for every GaussianScene."""
    scene = scene.to("cpu")
    n, k = len(scene), scene.sh.shape[1]
    names = ["x", "y", "z"] + (["nx", "ny", "nz"] if with_normals else [])
    names += [f"f_dc_{i}" for i in range(3)] + [f"f_rest_{i}" for i in range(3 * (k - 1))]
    names += ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)]
    cols = [scene.means.numpy()]
    if with_normals:
        cols.append(np.zeros((n, 3), np.float32))
    sh = scene.sh.numpy()
    cols += [sh[:, 0], sh[:, 1:].transpose(0, 2, 1).reshape(n, 3 * (k - 1))]  # coefficient- -> channel-major
    cols += [scene.opacity_logits.numpy()[:, None], scene.log_scales.numpy(), scene.quats.numpy()]
    body = np.ascontiguousarray(np.concatenate(cols, axis=1), dtype="<f4")
    header = ["ply", "format binary_little_endian 1.0", "comment written by warpsplat"]
    if scene.antialiased:
        header.append("comment SplatRenderMode: mip")
    header += [f"element vertex {n}"] + [f"property float {p}" for p in names] + ["end_header"]
    with atomic_write(path) as f:
        f.write(("\n".join(header) + "\n").encode("ascii"))
        f.write(body.tobytes())


def is_ply(head: bytes) -> bool:
    return head.startswith(b"ply\n") or head.startswith(b"ply\r\n")
