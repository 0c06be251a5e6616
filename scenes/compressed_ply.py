"""PlayCanvas compressed PLY (`*.compressed.ply`, SuperSplat / splat-transform): read and write.

A binary little-endian PLY with these elements (reference: splat-transform `decompress-ply.ts` and
`write-compressed-ply.ts`):

- `element chunk C` with C = ceil(N / 256), float properties
  `min_x min_y min_z max_x max_y max_z min_scale_x min_scale_y min_scale_z max_scale_x max_scale_y
  max_scale_z`, optionally followed by `min_r min_g min_b max_r max_g max_b` (SuperSplat 2.x).
  Chunk c covers vertices [256 c, 256 c + 256). Scale bounds are log scales.
- `element vertex N`, four `uint` properties:

  | property          | bits                        | meaning                                                    |
  |-------------------|-----------------------------|------------------------------------------------------------|
  | `packed_position` | x 31-21, y 20-11, z 10-0    | unorm 11/10/11, lerp(chunk min, chunk max)                 |
  | `packed_rotation` | 31-30 index, 3 x 10 bits    | largest component index in (w, x, y, z); the other three,  |
  |                   |                             | in order, each (u - 0.5) * sqrt(2); largest = sqrt(1 - sum) |
  | `packed_scale`    | x 31-21, y 20-11, z 10-0    | unorm 11/10/11 log scale, lerp(chunk min, chunk max)       |
  | `packed_color`    | r 31-24, g, b, a 7-0        | unorm 8: colour 0.5 + SH_C0 f_dc (lerp of the chunk colour |
  |                   |                             | bounds when present, else as is); a = sigmoid(opacity)     |

- optional `element sh N`, `uchar f_rest_0 .. f_rest_{3D-1}` (D = 3, 8 or 15), channel-major like the
  INRIA PLY: byte b -> n = 0 if b == 0, 1 if b == 255, else (b + 0.5) / 256; coefficient = (n - 0.5) * 8.

Writing follows splat-transform: rows are reordered along a Morton (Z-order) curve of the centres so that
each 256-row chunk is spatially compact (`morton_order`), log scales are clamped to [-20, 20] for the
bounds, and colour bounds are always written.

Quantisation bounds of a write -> read round trip, per chunk (half a step of the chunk's range): position
(max - min) / 4094 for x and z (11 bits), (max - min) / 2046 for y (10 bits); log scale likewise over the
chunk's scale range; colour 0.5 + SH_C0 f_dc within (max - min) / 510 of the chunk's colour range, so f_dc
within that over SH_C0; opacity 0.5/255 after sigmoid; quaternion components 0.5 * sqrt(2) / 1023 = 7e-4
plus the rebuilt largest one (the sign of q is free); SH 1/32 inside [-4, 4) (coefficients outside are
clamped).
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

from .atomic import atomic_write
from .gaussians import SH_C0, GaussianScene, SceneFormatError, logit_alpha8
from .limits import check_count, check_scene_memory
from .ply import is_antialiased, map_file, page_releaser, read_elements, read_ply

CHUNK = 256
_CHUNK_PROPS = [
    "min_x", "min_y", "min_z", "max_x", "max_y", "max_z",
    "min_scale_x", "min_scale_y", "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z",
]  # fmt: skip
_COLOUR_PROPS = ["min_r", "min_g", "min_b", "max_r", "max_g", "max_b"]
_VERTEX_PROPS = ["packed_position", "packed_rotation", "packed_scale", "packed_color"]


def _unorm(v: np.ndarray, shift: int, bits: int) -> np.ndarray:
    return ((v >> shift) & ((1 << bits) - 1)).astype(np.float32) / np.float32((1 << bits) - 1)


def _lerp(lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> np.ndarray:
    return lo * (1 - t) + hi * t


def is_compressed(elements: dict[str, np.ndarray]) -> bool:
    v = elements.get("vertex")
    return v is not None and "packed_position" in (v.dtype.names or ())


def _check_types(arr: np.ndarray, names: list[str], path: str, element: str, kind: str) -> None:
    """The named properties exist and have the right kind ("f" float, "u" unsigned integer)."""
    have = arr.dtype.names or ()
    missing = [n for n in names if n not in have]
    if missing:
        raise SceneFormatError(f"{path}: compressed PLY element {element} lacks properties {missing}")
    for n in names:
        if arr.dtype[n].kind != kind:
            raise SceneFormatError(f"{path}: compressed PLY property {element}.{n} has type {arr.dtype[n]}")


def _stack(arr: np.ndarray, names: list[str], dtype) -> np.ndarray:
    return np.stack([arr[n] for n in names], axis=1).astype(dtype)


DECODE_ROWS = CHUNK * 256  # rows decoded at a time: the temporaries (~256 bytes a row) stay near 16 MB


def read_compressed_ply(path: str | os.PathLike, data: bytes | memoryview | None = None) -> GaussianScene:
    """Read a PlayCanvas compressed PLY (falls through to the INRIA reader for an ordinary PLY).

    Rows are decoded DECODE_ROWS at a time straight into the scene's arrays, and the file's pages of each
    chunk are released once decoded: reading peaks at the scene's arrays plus a chunk.
    """
    path = os.fspath(path)
    if data is None:
        data = map_file(path)
    elements, comments = read_elements(data, path)
    if not is_compressed(elements):
        return read_ply(path, data)
    vertex = elements["vertex"]
    if "chunk" not in elements:
        raise SceneFormatError(f"{path}: compressed PLY has no chunk element")
    chunk = elements["chunk"]
    _check_types(chunk, _CHUNK_PROPS, path, "chunk", "f")
    has_colour = all(p in (chunk.dtype.names or ()) for p in _COLOUR_PROPS)
    if has_colour:
        _check_types(chunk, _COLOUR_PROPS, path, "chunk", "f")
    _check_types(vertex, _VERTEX_PROPS, path, "vertex", "u")
    k = 1
    sh_el = elements.get("sh")
    if sh_el is not None:
        names = list(sh_el.dtype.names or ())
        if len(names) not in (9, 24, 45):
            raise SceneFormatError(f"{path}: compressed PLY element sh has {len(names)} properties, not 9/24/45")
        if len(sh_el) != len(vertex):
            raise SceneFormatError(f"{path}: compressed PLY element sh has {len(sh_el)} rows, vertex has {len(vertex)}")
        k = 1 + len(names) // 3
        _check_types(sh_el, [f"f_rest_{i}" for i in range(3 * (k - 1))], path, "sh", "u")
    n = check_count(len(vertex), path, "element vertex")
    check_scene_memory(n, k, path, "element vertex", buffers=DECODE_ROWS * 256)
    if len(chunk) != math.ceil(n / CHUNK):
        raise SceneFormatError(
            f"{path}: compressed PLY element chunk has {len(chunk)} rows; {n} vertices need {math.ceil(n / CHUNK)}"
        )
    bounds = _stack(chunk, _CHUNK_PROPS, np.float32)  # [C, 12]
    colour_bounds = _stack(chunk, _COLOUR_PROPS, np.float32) if has_colour else None  # [C, 6]

    scene = GaussianScene.allocate(n, k, source_format="compressed-ply", antialiased=is_antialiased(comments))
    sh = scene.sh
    releases = [page_releaser(data, el) for el in (vertex, sh_el) if el is not None]
    for a in range(0, n, DECODE_ROWS):
        b = min(n, a + DECODE_ROWS)
        ci = np.arange(a, b) >> 8
        m, q, s, o, c = _decode_rows(_stack(vertex[a:b], _VERTEX_PROPS, np.uint32), bounds[ci],
                                     None if colour_bounds is None else colour_bounds[ci])  # fmt: skip
        scene.means[a:b], scene.quats[a:b], scene.log_scales[a:b] = map(torch.from_numpy, (m, q, s))
        scene.opacity_logits[a:b] = logit_alpha8(o)
        sh[a:b, 0] = torch.from_numpy((c - 0.5) / SH_C0)
        if k > 1:
            raw = _stack(sh_el[a:b], [f"f_rest_{i}" for i in range(3 * (k - 1))], np.float32)
            nrm = np.where(raw == 0, 0.0, np.where(raw == 255, 1.0, (raw + 0.5) / 256.0))
            rest = ((nrm - 0.5) * 8.0).astype(np.float32).reshape(b - a, 3, k - 1)
            sh[a:b, 1:] = torch.from_numpy(rest).transpose(1, 2)  # channel- -> coefficient-major
        for release in releases:
            if release is not None:
                release(a, b)
    scene.extras = {
        "chunks": len(chunk),
        "colour bounds": "yes" if has_colour else "no",
        "comments": [c for c in comments if c][:4],
    }
    return scene.validate().drop_invalid(name=path, in_place=True)


def _decode_rows(packed: np.ndarray, b: np.ndarray, cb: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """Packed vertex words [R, 4] with each row's chunk bounds b [R, 12] (and colour bounds cb [R, 6]) ->
    means [R, 3], quats [R, 4] (w, x, y, z), log-scales [R, 3], alpha [R] (a byte), colour [R, 3] (0.5 + SH_C0 f_dc)."""
    r = len(packed)
    pp, pr, ps, pc = packed.T
    with np.errstate(invalid="ignore", over="ignore"):  # infinite bounds give non-finite rows: dropped, counted
        t = np.stack([_unorm(pp, 21, 11), _unorm(pp, 11, 10), _unorm(pp, 0, 11)], 1)
        means = _lerp(b[:, 0:3], b[:, 3:6], t)
        t = np.stack([_unorm(ps, 21, 11), _unorm(ps, 11, 10), _unorm(ps, 0, 11)], 1)
        log_scales = _lerp(b[:, 6:9], b[:, 9:12], t)
        rgb = np.stack([_unorm(pc, 24, 8), _unorm(pc, 16, 8), _unorm(pc, 8, 8)], 1)
        if cb is not None:
            rgb = _lerp(cb[:, 0:3], cb[:, 3:6], rgb)
    abc = (np.stack([_unorm(pr, 20, 10), _unorm(pr, 10, 10), _unorm(pr, 0, 10)], 1) - 0.5) * np.float32(math.sqrt(2))
    largest = (pr >> 30).astype(np.int64)
    quats = np.empty((r, 4), np.float32)
    # The three stored components fill the slots other than `largest`, in ascending order.
    slots = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])[largest]  # [R, 3]
    quats[np.arange(r)[:, None], slots] = abc
    quats[np.arange(r), largest] = np.sqrt(np.maximum(0.0, 1.0 - np.square(abc).sum(1)))
    return means, quats, log_scales, (pc & 0xFF).astype(np.uint8), rgb


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """10-bit integers -> their bits spaced three apart (Morton interleave helper), uint64."""
    v = v.astype(np.uint64) & np.uint64(0x3FF)
    v = (v | (v << np.uint64(16))) & np.uint64(0x030000FF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x0300F00F)
    v = (v | (v << np.uint64(4))) & np.uint64(0x030C30C3)
    v = (v | (v << np.uint64(2))) & np.uint64(0x09249249)
    return v


def morton_order(means: np.ndarray) -> np.ndarray:
    """[N] permutation sorting the centres along a 30-bit Morton curve of their bounding box."""
    lo, hi = means.min(0), means.max(0)
    extent = np.where(hi - lo > 0, hi - lo, 1.0)
    q = np.clip((means - lo) / extent * 1023.0, 0, 1023).astype(np.uint64)
    code = (_spread_bits(q[:, 0]) << np.uint64(2)) | (_spread_bits(q[:, 1]) << np.uint64(1)) | _spread_bits(q[:, 2])
    return np.argsort(code, kind="stable")


def _normalize(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(x - lo) / (hi - lo) per chunk, 0 where the chunk range is degenerate (as splat-transform does)."""
    span = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(span < 1e-5, 0.0, (x - lo) / span)
    return np.clip(t, 0.0, 1.0)


def _pack_unorm(t: np.ndarray, bits: int) -> np.ndarray:
    top = (1 << bits) - 1
    return np.clip(np.floor(t * top + 0.5), 0, top).astype(np.uint32)


def write_compressed_ply(scene: GaussianScene, path: str | os.PathLike, *, sort: bool = True) -> None:
    """Write a PlayCanvas compressed PLY (rows in Morton order unless `sort=False`)."""
    scene = scene.to("cpu")
    n, k = len(scene), scene.sh.shape[1]
    order = morton_order(scene.means.numpy()) if sort else np.arange(n)
    n_chunks = math.ceil(n / CHUNK)
    # Pad to whole chunks by repeating the last row: it cannot widen its chunk's bounds.
    padded = np.concatenate([order, np.full(n_chunks * CHUNK - n, order[-1])])

    def chunked(t: torch.Tensor) -> np.ndarray:  # [N, ...] -> [C, 256, ...] in write order
        a = t.numpy()[padded]
        return a.reshape(n_chunks, CHUNK, *a.shape[1:])

    means = chunked(scene.means)
    log_scales = np.clip(chunked(scene.log_scales), -20.0, 20.0)
    rgb = 0.5 + SH_C0 * chunked(scene.sh[:, 0])
    quats = chunked(torch.nn.functional.normalize(scene.quats, dim=1))
    alpha = chunked(torch.sigmoid(scene.opacity_logits))

    def pack_111011(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lo, hi = x.min(1, keepdims=True), x.max(1, keepdims=True)
        t = _normalize(x, lo, hi)
        packed = (_pack_unorm(t[..., 0], 11) << 21) | (_pack_unorm(t[..., 1], 10) << 11) | _pack_unorm(t[..., 2], 11)
        return packed, lo[:, 0], hi[:, 0]

    p_pos, pos_lo, pos_hi = pack_111011(means)
    p_scale, sc_lo, sc_hi = pack_111011(log_scales)
    c_lo, c_hi = rgb.min(1, keepdims=True), rgb.max(1, keepdims=True)
    t = _normalize(rgb, c_lo, c_hi)
    p_colour = (
        (_pack_unorm(t[..., 0], 8) << 24)
        | (_pack_unorm(t[..., 1], 8) << 16)
        | (_pack_unorm(t[..., 2], 8) << 8)
        | _pack_unorm(alpha, 8)
    )
    largest = np.abs(quats).argmax(-1)
    sign = np.where(np.take_along_axis(quats, largest[..., None], -1) < 0, -1.0, 1.0)
    q = quats * sign
    p_rot = largest.astype(np.uint32)
    for j in range(4):
        val = _pack_unorm(q[..., j] * (math.sqrt(2) * 0.5) + 0.5, 10)
        p_rot = np.where(largest == j, p_rot, (p_rot << 10) | val)

    chunk_rec = np.concatenate([pos_lo, pos_hi, sc_lo, sc_hi, c_lo[:, 0], c_hi[:, 0]], 1).astype("<f4")
    vertex = np.stack([p_pos, p_rot, p_scale, p_colour], -1).reshape(n_chunks * CHUNK, 4)[:n].astype("<u4")
    header = ["ply", "format binary_little_endian 1.0", "comment Generated by warpsplat"]
    if scene.antialiased:
        header.append("comment SplatRenderMode: mip")
    header += [f"element chunk {n_chunks}"] + [f"property float {p}" for p in _CHUNK_PROPS + _COLOUR_PROPS]
    header += [f"element vertex {n}"] + [f"property uint {p}" for p in _VERTEX_PROPS]
    sh_bytes = b""
    if k > 1:
        header += [f"element sh {n}"] + [f"property uchar f_rest_{i}" for i in range(3 * (k - 1))]
        rest = scene.sh[:, 1:].numpy()[order].transpose(0, 2, 1).reshape(n, 3 * (k - 1))  # -> channel-major
        sh_bytes = np.clip(np.trunc((rest / 8.0 + 0.5) * 256.0), 0, 255).astype(np.uint8).tobytes()
    header.append("end_header")
    with atomic_write(path) as f:
        f.write(("\n".join(header) + "\n").encode("ascii"))
        f.write(chunk_rec.tobytes())
        f.write(vertex.tobytes())
        f.write(sh_bytes)
