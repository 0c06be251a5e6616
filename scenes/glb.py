"""glTF binary (`.glb`) with Khronos's `KHR_gaussian_splatting` extension: read and write.

A GLB is a 12-byte header (`glTF`, version 2, total length), a JSON chunk and a binary chunk (buffer 0). The
Gaussians are the points of primitives (mode 0, POINTS) that carry the extension, one accessor an attribute:

| attribute                                 | type   | components                           | holds                   |
|-------------------------------------------|--------|--------------------------------------|-------------------------|
| POSITION                                  | VEC3   | float                                | centre                  |
| KHR_gaussian_splatting:ROTATION           | VEC4   | float, normalized byte or short      | unit quaternion x y z w |
| KHR_gaussian_splatting:SCALE              | VEC3   | float, byte or short (normalized or  | standard deviations,    |
|                                           |        | not)                                 | linear                  |
| KHR_gaussian_splatting:OPACITY            | SCALAR | float, normalized ubyte or ushort    | opacity in [0, 1]       |
| KHR_gaussian_splatting:SH_DEGREE_l_COEF_n | VEC3   | float                                | SH coefficient l^2 + n  |
|                                           |        |                                      | (RGB), l = 0-3          |
| COLOR_0 (optional)                        | VEC4   | normalized ubyte                     | a point cloud's colour  |

A degree's coefficients come all or none, and every lower degree with them. Normalized integers decode as glTF
says: c / 255 or c / 65535 unsigned, max(c / 127, -1) or max(c / 32767, -1) signed.

Frame: glTF's is +Y up, +Z forward, +X left (LUF); the PLY frame is RDF (+Y down). The two differ by a half
turn about Z (x and y negated), done on read and on write with the SH turned with it (scenes/rotate.py). Each
primitive is placed by its nodes' transforms (matrix, or translation, rotation and scale), which may rotate,
translate and scale uniformly: a shear, a non-uniform scale or a mirror cannot move a Gaussian's SH and is
refused. splat-transform 3.7.0 writes its GLB in this frame too (the PLY's turned by the half turn), so its files
and warpsplat's load alike (tests/scenes/test_splat_transform_oracle.py).

Writing: one primitive, float attributes (lossless but for the activations: scales written as exp(log scale)
and opacities as sigmoid(logit), in float32), the COLOR_0 fallback for viewers without the extension, the
extension's `kernel: "ellipse"` and `colorSpace: "srgb_rec709_display"` (3DGS trains in display sRGB).

Reading checks every accessor against its buffer view and the view against the binary chunk before it reads the
accessor's bytes alone, into the scene's arrays (`read_glb`): memory is bounded by the file's size. External
buffers (`uri`), sparse accessors and compression extensions (`extensionsRequired`) are refused, naming what was
found.
"""

from __future__ import annotations

import json
import math
import os
import struct

import numpy as np
import torch

from .gaussians import SH_C0, GaussianScene, SceneFormatError, logit
from .limits import check_count, check_scene_memory, open_regular

MAGIC = b"glTF"
CHUNK_JSON, CHUNK_BIN = 0x4E4F534A, 0x004E4942
EXT = "KHR_gaussian_splatting"
PREFIX = EXT + ":"
MAX_JSON_BYTES = 16 << 20  # a splat GLB's JSON is a few kB (an accessor an SH coefficient)
# componentType -> (numpy dtype, the divisor of a normalized value)
COMPONENTS = {
    5120: (np.int8, 127.0),
    5121: (np.uint8, 255.0),
    5122: (np.int16, 32767.0),
    5123: (np.uint16, 65535.0),
    5125: (np.uint32, None),
    5126: (np.float32, None),
}
WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
FLOAT, UNSIGNED_BYTE = 5126, 5121
# the half turn about Z between glTF's frame and the PLY frame, and its quaternion (w, x, y, z)
HALF_TURN_Z, HALF_TURN_Z_Q = np.diag([-1.0, -1.0, 1.0]), np.array([0.0, 0.0, 0.0, 1.0])


def is_glb(head: bytes) -> bool:
    return head[:4] == MAGIC


def _sh_name(index: int) -> str:
    """The attribute of SH coefficient `index` (0-15, coefficient-major as GaussianScene.sh)."""
    degree = math.isqrt(index)
    return f"{PREFIX}SH_DEGREE_{degree}_COEF_{index - degree * degree}"


# ---------------------------------------------------------------------------------------------------- reading


def _chunks(f, path: str) -> tuple[dict, int, int]:
    """(the JSON, the binary chunk's offset and length) of an open GLB, after checking the header and chunk
    lengths against the file. The binary chunk is not read: each accessor reads its own bytes (`_Doc.accessor`)."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(12)
    if len(head) < 12 or head[:4] != MAGIC:
        raise SceneFormatError(f"{path}: not a GLB file (no glTF header)")
    version, length = struct.unpack("<II", head[4:])
    if version != 2:
        raise SceneFormatError(f"{path}: GLB version {version} is not supported (2)")
    if length > size:
        raise SceneFormatError(f"{path}: GLB header declares {length:,} bytes but the file holds {size:,}")
    chunk = f.read(8)
    if len(chunk) < 8:
        raise SceneFormatError(f"{path}: GLB file ends before its JSON chunk")
    json_len, kind = struct.unpack("<II", chunk)
    if kind != CHUNK_JSON:
        raise SceneFormatError(f"{path}: GLB's first chunk is not JSON")
    if json_len > MAX_JSON_BYTES or 20 + json_len > length:
        raise SceneFormatError(f"{path}: GLB JSON chunk declares {json_len:,} bytes, beyond the file or limit")
    try:
        doc = json.loads(f.read(json_len))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SceneFormatError(f"{path}: GLB JSON chunk is not valid JSON ({e})") from None
    except RecursionError:
        raise SceneFormatError(f"{path}: GLB JSON chunk nests too deeply") from None
    if not isinstance(doc, dict):
        raise SceneFormatError(f"{path}: GLB JSON chunk is not a JSON object")
    start = 20 + json_len + (-json_len % 4)
    if start + 8 > length:
        return doc, 0, 0
    f.seek(start)
    bin_len, kind = struct.unpack("<II", f.read(8))
    if kind != CHUNK_BIN:
        return doc, 0, 0
    if start + 8 + bin_len > length:
        raise SceneFormatError(f"{path}: GLB binary chunk declares {bin_len:,} bytes, beyond the file")
    return doc, start + 8, bin_len


class _Doc:
    """Typed access to the glTF JSON; every bad field is a SceneFormatError naming it."""

    def __init__(self, doc: dict, f, binary: tuple[int, int], path: str):
        self.doc, self.file, self.path = doc, f, path
        self.binary_at, self.binary_bytes = binary  # the binary chunk's offset in the file, and its length

    def item(self, kind: str, index: object) -> dict:
        items = self.doc.get(kind)
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(items, list):
            raise SceneFormatError(f"{self.path}: glTF {kind}[{index!r}] is not there")
        if not 0 <= index < len(items) or not isinstance(items[index], dict):
            raise SceneFormatError(f"{self.path}: glTF {kind}[{index}] is not there ({len(items)} {kind})")
        return items[index]

    def integer(self, node: dict, key: str, what: str, default: int | None = None, low: int = 0) -> int:
        value = node.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise SceneFormatError(f"{self.path}: glTF {what}.{key} is {value!r}, not an integer >= {low}")
        return value

    def accessor(self, index: object, name: str, types: tuple[str, ...], components: tuple[int, ...]) -> np.ndarray:
        """[count, width] float32 of accessor `index`, the attribute `name` (normalized integers as floats)."""
        acc = self.item("accessors", index)
        what = f"accessors[{index}] ({name})"
        if "sparse" in acc:
            raise SceneFormatError(f"{self.path}: glTF {what} is sparse, which is not supported")
        kind, ctype = acc.get("type"), acc.get("componentType")
        if kind not in types or ctype not in components:
            raise SceneFormatError(
                f"{self.path}: glTF {what} is {kind} of componentType {ctype}; expected {'/'.join(types)} of "
                f"{'/'.join(map(str, components))}"
            )
        count, width = self.integer(acc, "count", what, low=1), WIDTH[kind]
        dtype, divisor = COMPONENTS[ctype]
        item = np.dtype(dtype).itemsize
        if "bufferView" not in acc:  # glTF: an accessor without a buffer view is zeros
            return np.zeros((count, width), np.float32)
        view = self.item("bufferViews", acc["bufferView"])
        vwhat = f"bufferViews[{acc['bufferView']}]"
        if self.integer(view, "buffer", vwhat) != 0 or "uri" in self.item("buffers", 0):
            raise SceneFormatError(f"{self.path}: glTF {what} lies in an external buffer; only the GLB's own is read")
        start = self.integer(view, "byteOffset", vwhat, 0) + self.integer(acc, "byteOffset", what, 0)
        stride = self.integer(view, "byteStride", vwhat, item * width, low=item * width)
        end = start + stride * (count - 1) + item * width
        view_end = self.integer(view, "byteOffset", vwhat, 0) + self.integer(view, "byteLength", vwhat, low=1)
        if end > view_end or view_end > self.binary_bytes:
            raise SceneFormatError(
                f"{self.path}: glTF {what} needs bytes up to {end:,}, beyond its view ({view_end:,}) or the binary "
                f"chunk ({self.binary_bytes:,})"
            )
        data = os.pread(self.file.fileno(), end - start, self.binary_at + start)
        if len(data) < end - start:
            raise SceneFormatError(f"{self.path}: glTF {what}: the file ends inside its data")
        raw = np.frombuffer(data, np.uint8)
        rows = np.lib.stride_tricks.as_strided(raw, (count, item * width), (stride, 1))
        values = np.ascontiguousarray(rows).view(dtype).reshape(count, width).astype(np.float32)
        if divisor is not None and acc.get("normalized", False):
            values = np.maximum(values / np.float32(divisor), -1.0)
        return values


def _matrix(doc: _Doc, node: dict, index: int) -> np.ndarray:
    """[4, 4] a node's local transform (column-major `matrix`, or translation, rotation x y z w and scale)."""
    what = f"{doc.path}: glTF nodes[{index}]"

    def numbers(key: str, n: int, default: list[float]) -> np.ndarray:
        value = node.get(key, default)
        ok = isinstance(value, list) and len(value) == n
        ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
        if not ok:
            raise SceneFormatError(f"{what}.{key} is not {n} finite numbers")
        return np.asarray(value, np.float64)

    if "matrix" in node:
        return numbers("matrix", 16, []).reshape(4, 4).T
    t = numbers("translation", 3, [0.0, 0.0, 0.0])
    x, y, z, w = numbers("rotation", 4, [0.0, 0.0, 0.0, 1.0])
    s = numbers("scale", 3, [1.0, 1.0, 1.0])
    rot = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rot * s, t
    return m


MAX_PLACED = 4096  # nodes visited and primitives placed: a tree of shared children could list 2^64 of them


def _placed_primitives(doc: _Doc) -> list[tuple[dict, np.ndarray, str]]:
    """(primitive, world transform [4, 4], what) of every Gaussian-splat primitive the default scene shows (every
    mesh's, untransformed, where the file has no scenes). glTF forbids a node two parents; a file that gives one
    several, or nests nodes in a cycle, is stopped at MAX_PLACED nodes or 64 levels."""
    found: list[tuple[dict, np.ndarray, str]] = []

    def indices(node: dict, key: str, what: str) -> list:
        value = node.get(key, [])
        if not isinstance(value, list):
            raise SceneFormatError(f"{doc.path}: glTF {what}.{key} is not a list")
        return value

    def add(mesh_index: object, transform: np.ndarray) -> None:
        mesh = doc.item("meshes", mesh_index)
        for i, prim in enumerate(indices(mesh, "primitives", f"meshes[{mesh_index}]")):
            extensions = prim.get("extensions") if isinstance(prim, dict) else None
            if isinstance(extensions, dict) and EXT in extensions:
                found.append((prim, transform, f"meshes[{mesh_index}].primitives[{i}]"))

    scenes = doc.doc.get("scenes")
    if not scenes:
        meshes = doc.doc.get("meshes")
        for m in range(len(meshes) if isinstance(meshes, list) else 0):
            add(m, np.eye(4))
        return found
    scene = doc.item("scenes", doc.doc.get("scene", 0))
    stack = [(n, np.eye(4), 0) for n in indices(scene, "nodes", "scene")]
    visited = 0
    while stack:
        index, parent, depth = stack.pop()
        visited += 1
        if depth > 64 or visited > MAX_PLACED or len(found) > MAX_PLACED:
            raise SceneFormatError(
                f"{doc.path}: glTF nodes nest deeper than 64 or list more than {MAX_PLACED:,} (a cycle, or shared "
                "children?)"
            )
        node = doc.item("nodes", index)
        world = parent @ _matrix(doc, node, index)
        if "mesh" in node:
            add(node["mesh"], world)
        stack.extend((child, world, depth + 1) for child in indices(node, "children", f"nodes[{index}]"))
    return found


def _rigid(doc: _Doc, m: np.ndarray, what: str) -> tuple[np.ndarray, float, np.ndarray]:
    """(rotation [3, 3], uniform scale, translation [3]) of a world transform, or SceneFormatError."""
    a = m[:3, :3]
    det = float(np.linalg.det(a))
    if not np.allclose(m[3], [0, 0, 0, 1]) or det <= 0:
        raise SceneFormatError(f"{doc.path}: glTF {what} is placed by a projective or mirroring transform")
    s = det ** (1 / 3)
    rot = a / s
    if not np.allclose(rot @ rot.T, np.eye(3), atol=1e-5):
        raise SceneFormatError(
            f"{doc.path}: glTF {what} is placed with a shear or a non-uniform scale, which Gaussians' SH cannot follow"
        )
    return rot, s, m[:3, 3]


def read_glb(path: str | os.PathLike) -> GaussianScene:
    """Read the Gaussian-splat primitives of a `.glb` (the module docstring), in the PLY frame.

    The scene's arrays are allocated once and filled attribute by attribute, each read from the file alone: reading
    peaks at the arrays plus one attribute's bytes (and a primitive's copy where its nodes move it)."""
    path = os.fspath(path)
    with open_regular(path) as f:
        doc_json, *binary = _chunks(f, path)
        doc = _Doc(doc_json, f, tuple(binary), path)
        required = doc_json.get("extensionsRequired") or []
        unknown = [e for e in required if e != EXT] if isinstance(required, list) else [required]
        if unknown:
            raise SceneFormatError(
                f"{path}: GLB requires extensions warpsplat does not read: " + ", ".join(map(str, unknown))
            )
        placed = _placed_primitives(doc)
        if not placed:
            raise SceneFormatError(f"{path}: GLB holds no {EXT} primitive (a mesh or point cloud, not Gaussian splats)")
        counts, degrees = zip(*(_layout(doc, prim, what) for prim, _, what in placed), strict=True)
        total = check_count(sum(counts), path, "glTF accessors' count")
        coeffs = (min(degrees) + 1) ** 2  # primitives of different degrees: the lowest they share
        check_scene_memory(total, coeffs, path, "glTF accessors' count", buffers=4 * 64 * max(counts))
        out = GaussianScene.allocate(total, coeffs, source_format="glb")
        start = 0
        for (prim, world, what), count in zip(placed, counts, strict=True):
            rows = slice(start, start + count)
            _fill(doc, prim, what, out, rows)
            _place(doc, out, rows, _GLB_TO_PLY @ world, what)
            start += count
    asset = doc_json.get("asset") if isinstance(doc_json.get("asset"), dict) else {}
    out.extras = {"primitives": len(placed)}
    if isinstance(asset.get("generator"), str):
        out.extras["generator"] = asset["generator"]
    return out.validate().drop_invalid(name=path, in_place=True)


_GLB_TO_PLY = np.diag([-1.0, -1.0, 1.0, 1.0])  # HALF_TURN_Z as a 4x4 transform
# the half turn about z on SH coefficient (l, m): times (-1)^m, coefficient-major as GaussianScene.sh
_HALF_TURN_SH = torch.tensor([(-1.0) ** (i - math.isqrt(i) ** 2 - math.isqrt(i)) for i in range(16)])


def _layout(doc: _Doc, prim: dict, what: str) -> tuple[int, int]:
    """(Gaussians, SH degree) of a primitive, after checking its mode and attributes."""
    attrs = prim.get("attributes")
    if not isinstance(attrs, dict):
        raise SceneFormatError(f"{doc.path}: glTF {what}.attributes is not an object")
    if prim.get("mode", 4) != 0:
        raise SceneFormatError(f"{doc.path}: glTF {what} has mode {prim.get('mode', 4)}, not 0 (POINTS)")
    for name in ("POSITION", PREFIX + "ROTATION", PREFIX + "SCALE", PREFIX + "OPACITY"):
        if name not in attrs:
            raise SceneFormatError(f"{doc.path}: glTF {what} lacks the attribute {name}")
    if _sh_name(0) not in attrs and "COLOR_0" not in attrs:
        raise SceneFormatError(f"{doc.path}: glTF {what} has neither {_sh_name(0)} nor COLOR_0: no colour")
    degree = 0
    while degree < 3 and all(_sh_name(i) in attrs for i in range((degree + 1) ** 2, (degree + 2) ** 2)):
        degree += 1
    partial = [a for a in attrs if a.startswith(f"{PREFIX}SH_DEGREE_{degree + 1}_")]
    if partial:
        raise SceneFormatError(f"{doc.path}: glTF {what} has part of SH degree {degree + 1} ({partial[0]}), not all")
    return doc.integer(doc.item("accessors", attrs["POSITION"]), "count", f"{what} POSITION", low=1), degree


def _fill(doc: _Doc, prim: dict, what: str, out: GaussianScene, rows: slice) -> None:
    """A primitive's attributes, as stored (glTF's frame), into `out`'s rows."""
    attrs, count = prim["attributes"], rows.stop - rows.start

    def read(name: str, types: tuple[str, ...], components: tuple[int, ...]) -> torch.Tensor:
        values = doc.accessor(attrs[name], name, types, components)
        if len(values) != count:
            raise SceneFormatError(f"{doc.path}: glTF {what} {name} holds {len(values):,} values, POSITION {count:,}")
        return torch.from_numpy(values)

    out.means[rows] = read("POSITION", ("VEC3",), (5126,))
    out.quats[rows] = read(PREFIX + "ROTATION", ("VEC4",), (5126, 5120, 5122))[:, [3, 0, 1, 2]]
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero or negative scale: dropped by drop_invalid
        out.log_scales[rows] = torch.log(read(PREFIX + "SCALE", ("VEC3",), (5126, 5120, 5122)))
    out.opacity_logits[rows] = logit(read(PREFIX + "OPACITY", ("SCALAR",), (5126, 5121, 5123))[:, 0])
    if _sh_name(0) in attrs:
        for i in range(out.sh.shape[1]):
            out.sh[rows, i] = read(_sh_name(i), ("VEC3",), (5126,))
    else:  # the point cloud's colour: its RGB is 0.5 + SH_C0 f_dc
        out.sh[rows, 0] = (read("COLOR_0", ("VEC3", "VEC4"), (5126, 5121, 5123))[:, :3] - 0.5) / SH_C0
        out.sh[rows, 1:] = 0


def _place(doc: _Doc, out: GaussianScene, rows: slice, world: np.ndarray, what: str) -> None:
    """Move `out`'s rows by `world` (the primitive's nodes' transform, then glTF's frame to the PLY frame): the
    half turn alone in place, as sign changes; any other transform through scenes/rotate.py."""
    from .rotate import rotated

    if np.array_equal(world, _GLB_TO_PLY):
        out.means[rows, :2] *= -1
        w, x, y, z = out.quats[rows].unbind(1)
        out.quats[rows] = torch.stack([-z, -y, x, w], 1)  # q_R q, q_R = (0, 0, 0, 1): a half turn about z
        out.sh[rows] *= _HALF_TURN_SH[: out.sh.shape[1], None]
        return
    rot, s, shift = _rigid(doc, world, what)
    part = GaussianScene(*(getattr(out, f)[rows] for f in ("means", "quats", "log_scales", "opacity_logits", "sh")))
    moved = rotated(part, rot, _quaternion(rot), scale=s, shift=shift)
    for f in ("means", "quats", "log_scales", "sh"):
        getattr(out, f)[rows] = getattr(moved, f)


def _quaternion(rot: np.ndarray) -> np.ndarray:
    """[4] (w, x, y, z) of a rotation matrix (Shepperd's method: from its largest diagonal combination)."""
    t = np.trace(rot)
    cases = [t, rot[0, 0], rot[1, 1], rot[2, 2]]
    k = int(np.argmax(cases))
    if k == 0:
        w = math.sqrt(1 + t) / 2
        q = [w, (rot[2, 1] - rot[1, 2]) / (4 * w), (rot[0, 2] - rot[2, 0]) / (4 * w), (rot[1, 0] - rot[0, 1]) / (4 * w)]
    else:
        i, j, m = k - 1, k % 3, (k + 1) % 3
        v = math.sqrt(1 + rot[i, i] - rot[j, j] - rot[m, m]) / 2
        q = [0.0] * 4
        q[0] = (rot[m, j] - rot[j, m]) / (4 * v)
        q[1 + i], q[1 + j], q[1 + m] = v, (rot[j, i] + rot[i, j]) / (4 * v), (rot[m, i] + rot[i, m]) / (4 * v)
    return np.round(np.asarray(q), 12)


# ---------------------------------------------------------------------------------------------------- writing


def write_glb(scene: GaussianScene, path: str | os.PathLike) -> None:
    """Write `.glb`: one POINTS primitive with KHR_gaussian_splatting's float attributes and a COLOR_0 fallback,
    turned from the PLY frame into glTF's (the module docstring)."""
    from .atomic import atomic_write
    from .rotate import rotated

    path = os.fspath(path)
    if len(scene) == 0:
        raise SceneFormatError(f"{path}: a GLB needs at least one Gaussian")
    # a non-finite value has no place in glTF (the positions' bounds are JSON numbers): such Gaussians are dropped
    # with the readers' warning (every reader has dropped them already; a scene built in memory may hold them)
    s = rotated(scene.to("cpu").drop_invalid(name=path), HALF_TURN_Z, HALF_TURN_Z_Q)
    n, k = len(s), int(s.sh.shape[1])
    quats = torch.nn.functional.normalize(s.quats.double(), dim=1)
    quats = torch.where(quats.norm(dim=1, keepdim=True) > 0, quats, torch.tensor([1.0, 0.0, 0.0, 0.0]).double())
    alpha = torch.sigmoid(s.opacity_logits.double())
    colour = torch.cat([0.5 + SH_C0 * s.sh[:, 0].double(), alpha[:, None]], 1)
    # a log-scale below float32's exp range (-104) would be a scale of 0, which a reader takes as invalid
    scales = torch.exp(s.log_scales.double()).clamp_min(torch.finfo(torch.float32).tiny)
    arrays: list[tuple[str, np.ndarray, str, bool]] = [  # name, [N, width] values, type, normalized
        ("POSITION", s.means.numpy().astype("<f4"), "VEC3", False),
        ("COLOR_0", np.round(colour.clamp(0, 1).numpy() * 255).astype(np.uint8), "VEC4", True),
        (PREFIX + "ROTATION", quats[:, [1, 2, 3, 0]].numpy().astype("<f4"), "VEC4", False),
        (PREFIX + "SCALE", scales.numpy().astype("<f4"), "VEC3", False),
        (PREFIX + "OPACITY", alpha[:, None].numpy().astype("<f4"), "SCALAR", False),
    ]
    arrays += [(_sh_name(i), s.sh[:, i].numpy().astype("<f4"), "VEC3", False) for i in range(k)]
    views, accessors, attributes, offset = [], [], {}, 0
    for i, (name, values, kind, normalized) in enumerate(arrays):
        length = values.nbytes
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": length, "target": 34962})
        acc = {"bufferView": i, "componentType": UNSIGNED_BYTE if values.dtype == np.uint8 else FLOAT,
               "count": n, "type": kind}  # fmt: skip
        if normalized:
            acc["normalized"] = True
        if name == "POSITION":  # glTF requires the positions' bounds
            acc["min"], acc["max"] = values.min(0).tolist(), values.max(0).tolist()
        accessors.append(acc)
        attributes[name] = i
        offset += length + (-length % 4)
    extension = {"kernel": "ellipse", "colorSpace": "srgb_rec709_display", "projection": "perspective",
                 "sortingMethod": "cameraDistance"}  # fmt: skip
    doc = {
        "asset": {"version": "2.0", "generator": "warpsplat"},
        "extensionsUsed": [EXT],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": attributes, "mode": 0, "extensions": {EXT: extension}}]}],
        "buffers": [{"byteLength": offset}],
        "bufferViews": views,
        "accessors": accessors,
    }
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)  # chunks end on 4 bytes: JSON padded with spaces, binary with zeros
    with atomic_write(path) as f:
        f.write(MAGIC + struct.pack("<II", 2, 12 + 8 + len(text) + 8 + offset))
        f.write(struct.pack("<II", len(text), CHUNK_JSON) + text)
        f.write(struct.pack("<II", offset, CHUNK_BIN))
        for _, values, _, _ in arrays:
            data = values.tobytes()
            f.write(data + b"\0" * (-len(data) % 4))
