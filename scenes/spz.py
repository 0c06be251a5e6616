"""Niantic `.spz`: gzip-wrapped v2/v3 and the zstd-stream v4 container (read); v3 or v4 (write).

Containers:

- **v2/v3 (legacy)**: the whole file is one gzip stream. Decompressed, it starts with a 16-byte header

      u32 magic 0x5053474e ("NGSP") | u32 version | u32 numPoints | u8 shDegree | u8 fractionalBits
      | u8 flags (0x1 = antialiased) | u8 reserved

  followed by the attribute blocks, attribute by attribute.
- **v4**: an uncompressed 32-byte header

      u32 magic | u32 version=4 | u32 numPoints | u8 shDegree | u8 fractionalBits | u8 flags (0x1 = antialiased,
      0x2 = extensions) | u8 numStreams | u32 tocByteOffset | 12 reserved bytes

  then optional extension records, then at tocByteOffset a TOC of numStreams x (u64 compressed size,
  u64 uncompressed size), then one zstd frame per stream in TOC order. Streams are the attribute blocks.

Attribute blocks, in order (N = numPoints, D = (shDegree+1)^2 - 1 SH coefficients per channel):

| block     | bytes | encoding                                                                           |
|-----------|-------|------------------------------------------------------------------------------------|
| positions | N*9   | 3 x signed 24-bit little-endian fixed point, `fractionalBits` fraction bits         |
| alphas    | N     | uint8 sigmoid(opacity) * 255                                                       |
| colours   | N*3   | uint8 f_dc * (0.15 * 255) + 127.5 (SPZ's colour scale is 0.15, not SH_C0)           |
| scales    | N*3   | uint8 (log_scale + 10) * 16                                                        |
| rotations | N*3   | v2: uint8 x, y, z as q * 127.5 + 127.5 with w >= 0 implied                          |
|           | N*4   | v3+: u32 LE smallest-three: bits 30-31 index of the largest component (x,y,z,w     |
|           |       | order), then per other component, highest index in the lowest bits: 9-bit          |
|           |       | magnitude |q| / sqrt(1/2) * 511 and a sign bit above it; the largest is positive    |
| sh        | N*D*3 | int8 around 128 (x * 128 + 128), coefficient-major with RGB innermost              |

**Coordinate frame.** SPZ is specified in RUB (x right, y up, z back); the INRIA PLY frame is RDF (x right,
y down, z forward). The two differ by F = diag(1, -1, -1), a 180-degree rotation about x. Readers convert
RUB -> RDF once here, writers convert back, so every `GaussianScene` is in the PLY frame:

- means: y and z negate;
- quaternions (w, x, y, z) -> (w, x, -y, -z) (that is R -> F R F);
- SH: a basis function whose polynomial has odd total degree in (y, z) changes sign, so its coefficient
  does (`_RUB_SH_SIGN`, checked numerically in tests/scenes/test_spz.py).

Note that @playcanvas/splat-transform reads and writes SPZ bytes raw ("UNSPECIFIED" frame), so a file it
writes from a PLY is really in RDF; warpsplat follows the specification and the Niantic/Scaniverse
samples (`biker.spz` against `biker.compressed.ply`), so such a file loads upside down here: use `--up +y`.

Quantisation bounds of a write -> read round trip (default options): position 2^-(fractionalBits+1)
(fractionalBits = 12 unless the extent needs fewer); log-scale 1/32 (inside [-10, 5.94]); f_dc
0.5 / (0.15 * 255) = 0.0131 (inside about [-3.33, 3.33]); opacity 0.5/255 after sigmoid; quaternion
components about 0.5 * sqrt(1/2) / 511 = 7e-4 before renormalising; SH band 1 1/16 (5 bits) and bands 2-3
1/8 (4 bits), inside [-1, 127/128].
"""

from __future__ import annotations

import gzip
import math
import os
import struct
import warnings
import zlib

import numpy as np
import torch

from .atomic import atomic_write
from .gaussians import GaussianScene, SceneFormatError, logit_alpha8
from .limits import MAX_DEFLATE_RATIO, MAX_ZSTD_RATIO, check_compact, check_count, check_scene_memory, read_regular

MAGIC = 0x5053474E  # "NGSP" little endian
SPZ_COLOR_SCALE = 0.15
SUPPORTED_VERSIONS = (2, 3, 4)
_HEADER_V3 = struct.Struct("<IIIBBBB")  # 16 bytes
_HEADER_V4 = struct.Struct("<IIIBBBBI12x")  # 32 bytes
FLAG_ANTIALIASED = 0x1

# Sign of each real SH basis function (gsplat / INRIA order) under (x, y, z) -> (x, -y, -z): (-1)^(deg_y + deg_z)
# of its polynomial. Band 1: y, z, x. Band 2: xy, yz, 3z^2-1, xz, x^2-y^2. Band 3: y(3x^2-y^2), xyz,
# y(4z^2-x^2-y^2), z(2z^2-3x^2-3y^2), x(4z^2-x^2-y^2), z(x^2-y^2), x(x^2-3y^2).
# fmt: off
_RUB_SH_SIGN = np.array([1,
                         -1, -1, 1,
                         -1, 1, 1, -1, 1,
                         -1, 1, -1, -1, 1, -1, 1], dtype=np.float32)
# fmt: on


def flip_rub_rdf(means: np.ndarray, quats: np.ndarray, sh: np.ndarray) -> None:
    """Convert between SPZ's RUB frame and the PLY RDF frame, in place (the map is its own inverse).

    Args:
        means: [N, 3] positions.
        quats: [N, 4] quaternions (w, x, y, z).
        sh: [N, K, 3] SH coefficients, coefficient-major, K <= 16.
    """
    means[:, 1:] *= -1
    quats[:, 2:] *= -1
    sh *= _RUB_SH_SIGN[: sh.shape[1], None]


def _sizes(n: int, degree: int, version: int) -> list[int]:
    """Byte size of each attribute block: positions, alphas, colours, scales, rotations[, sh]."""
    d = (degree + 1) ** 2 - 1
    sizes = [n * 9, n, n * 3, n * 3, n * (3 if version == 2 else 4)]
    if d:
        sizes.append(n * d * 3)
    return sizes


def _check_header(path: str, version: int, n: int, degree: int, frac_bits: int) -> list[int]:
    """Check a header's fields; return the byte size of each attribute block."""
    if version not in SUPPORTED_VERSIONS:
        raise SceneFormatError(f"{path}: SPZ version {version} is not supported (supported: 2, 3, 4)")
    check_count(n, path, "SPZ header numPoints")
    if degree > 4:
        raise SceneFormatError(f"{path}: SPZ header shDegree {degree} is not 0-4")
    if frac_bits > 23:
        raise SceneFormatError(f"{path}: SPZ header fractionalBits {frac_bits} leaves no integer bits in 24")
    return _sizes(n, degree, version)


def _check_memory(path: str, n: int, degree: int, file_bytes: int, sizes: list[int]) -> None:
    """The file and the inflated blocks stay in memory while the arrays are decoded."""
    coeffs = min(16, (degree + 1) ** 2)
    check_scene_memory(n, coeffs, path, "SPZ header numPoints", buffers=file_bytes + sum(sizes))


def _gunzip(raw: bytes, path: str) -> tuple[tuple, list[memoryview]]:
    """Legacy container: inflate just enough for the header, check the sizes it implies, then inflate
    exactly that many bytes into one buffer (a zip bomb never expands past what the header can justify)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        head = d.decompress(raw, _HEADER_V3.size)
    except zlib.error as e:
        raise SceneFormatError(f"{path}: SPZ gzip stream is corrupt ({e})") from None
    if len(head) < _HEADER_V3.size:
        raise SceneFormatError(f"{path}: SPZ gzip stream is truncated inside the 16-byte header")
    magic, version, n, degree, frac_bits, flags, _ = _HEADER_V3.unpack(head)
    if magic != MAGIC:
        raise SceneFormatError(f"{path}: SPZ header magic {magic:#010x} is not NGSP")
    if version == 4:
        raise SceneFormatError(f"{path}: SPZ version 4 inside a gzip stream (v4 is a plain zstd container)")
    sizes = _check_header(path, version, n, degree, frac_bits)
    need = sum(sizes)
    if need > MAX_DEFLATE_RATIO * len(raw) + 4096:  # before the memory check: a lie is named as a lie
        raise SceneFormatError(
            f"{path}: SPZ header numPoints {n:,} needs {need:,} bytes, more than the {len(raw):,}-byte gzip "
            "stream can hold (lying count)"
        )
    check_compact(n, len(raw), path, "SPZ header numPoints")
    _check_memory(path, n, degree, len(raw), sizes)
    body = bytearray(need)
    got = 0
    tail = d.unconsumed_tail
    try:
        while got < need:
            chunk = d.decompress(tail, min(need - got, 1 << 24))
            tail = d.unconsumed_tail
            if not chunk:
                break
            body[got : got + len(chunk)] = chunk
            got += len(chunk)
    except zlib.error as e:
        raise SceneFormatError(f"{path}: SPZ gzip stream is corrupt ({e})") from None
    if got < need:
        raise SceneFormatError(
            f"{path}: SPZ body is truncated: header declares {n:,} points ({need:,} bytes), stream holds {got:,}"
        )
    try:
        more = d.decompress(tail, 1)
    except zlib.error:
        more = b""  # a corrupt tail after a complete payload is not worth refusing the scene for
    if more:
        raise SceneFormatError(
            f"{path}: SPZ gzip stream continues past the {need:,} bytes that {n:,} points need (lying count?)"
        )
    if not d.eof:
        raise SceneFormatError(f"{path}: SPZ gzip stream is truncated (its end and checksum are missing)")
    view = memoryview(body)
    blocks, off = [], 0
    for size in sizes:
        blocks.append(view[off : off + size])
        off += size
    return (version, n, degree, frac_bits, flags), blocks


_STREAM_NAMES = ["positions", "alphas", "colours", "scales", "rotations", "sh"]


def _unzstd_v4(raw: bytes, path: str) -> tuple[tuple, list[memoryview]]:
    """v4 container: check the TOC against the sizes the header implies, then inflate each stream into a
    buffer of its declared size (a stream that would inflate further is refused, never followed)."""
    import zstandard

    if len(raw) < _HEADER_V4.size:
        raise SceneFormatError(f"{path}: SPZ v4 file is truncated inside the 32-byte header")
    magic, version, n, degree, frac_bits, flags, n_streams, toc = _HEADER_V4.unpack_from(raw)
    if magic != MAGIC:
        raise SceneFormatError(f"{path}: SPZ header magic {magic:#010x} is not NGSP")
    if version != 4:
        raise SceneFormatError(f"{path}: SPZ version {version} in a plain (non-gzip) container; only v4 is plain")
    sizes = _check_header(path, version, n, degree, frac_bits)
    if n_streams != len(sizes):
        raise SceneFormatError(
            f"{path}: SPZ v4 header numStreams is {n_streams}; SH degree {degree} needs {len(sizes)} streams"
        )
    if toc < _HEADER_V4.size or toc + 16 * n_streams > len(raw):
        raise SceneFormatError(f"{path}: SPZ v4 tocByteOffset {toc} is outside the {len(raw)}-byte file")
    table = np.frombuffer(raw, dtype="<u8", count=2 * n_streams, offset=toc).reshape(n_streams, 2).tolist()
    # The TOC and the expansion limit first, so that a lying count is named as one before the memory check.
    off = toc + 16 * n_streams
    for i, (csize, usize) in enumerate(table[: len(sizes)]):
        name = _STREAM_NAMES[i]
        if usize != sizes[i]:
            raise SceneFormatError(
                f"{path}: SPZ v4 stream {name} declares {usize:,} bytes; {n:,} points need {sizes[i]:,}"
            )
        if off + csize > len(raw):
            raise SceneFormatError(
                f"{path}: SPZ v4 stream {name} is truncated ({csize:,} compressed bytes declared, "
                f"{max(0, len(raw) - off):,} left)"
            )
        if usize > MAX_ZSTD_RATIO * csize:
            raise SceneFormatError(
                f"{path}: SPZ v4 stream {name} declares {usize:,} bytes from {csize:,} compressed, more than zstd "
                "can expand to (lying count)"
            )
        off += csize
    check_compact(n, len(raw), path, "SPZ header numPoints")
    _check_memory(path, n, degree, len(raw), sizes)
    dctx = zstandard.ZstdDecompressor()
    blocks = []
    off = toc + 16 * n_streams
    for i, (csize, usize) in enumerate(table):
        out = bytearray(usize)
        got, more = 0, b""
        try:
            with dctx.stream_reader(raw[off : off + csize], read_across_frames=False) as reader:
                view = memoryview(out)
                while got < usize:
                    k = reader.readinto(view[got:])
                    if not k:
                        break
                    got += k
                if got == usize:
                    more = reader.read(1)
        except zstandard.ZstdError as e:
            raise SceneFormatError(f"{path}: SPZ v4 stream {_STREAM_NAMES[i]} is corrupt ({e})") from None
        if got != usize or more:
            raise SceneFormatError(
                f"{path}: SPZ v4 stream {_STREAM_NAMES[i]} inflates to {'more than ' if more else ''}{got:,} bytes, "
                f"TOC declares {usize:,}"
            )
        blocks.append(memoryview(out))
        off += csize
    return (version, n, degree, frac_bits, flags), blocks


def _decode_rotations(block: memoryview, n: int, version: int) -> np.ndarray:
    """Rotation block -> [N, 4] quaternions (w, x, y, z)."""
    if version == 2:
        xyz = np.frombuffer(block, np.uint8).reshape(n, 3).astype(np.float32) / 127.5 - 1.0
        w = np.sqrt(np.maximum(0.0, 1.0 - np.square(xyz).sum(1)))
        return np.concatenate([w[:, None], xyz], 1)
    packed = np.frombuffer(block, "<u4").astype(np.int64)
    largest = packed >> 30
    q = np.zeros((n, 4), np.float32)  # x, y, z, w (SPZ's internal order)
    for j in range(4):
        # Components are packed in ascending index order, so the highest index sits in the lowest bits.
        rank = (3 - j) - (largest > j)
        v = (packed >> (10 * rank)) & 0x3FF
        mag = (v & 0x1FF).astype(np.float32) * np.float32(math.sqrt(0.5) / 511)
        q[:, j] = np.where(largest == j, 0.0, np.where(v & 0x200, -mag, mag))
    q[np.arange(n), largest] = np.sqrt(np.maximum(0.0, 1.0 - np.square(q).sum(1)))
    return q[:, [3, 0, 1, 2]]


DECODE_ROWS = 1 << 16  # rows decoded at a time: the temporaries stay a few MB whatever N is

# Each byte's decoded value, looked up rather than computed per Gaussian (the same float32 arithmetic).
_BYTES = np.arange(256, dtype=np.float32)
_COLOUR = (_BYTES / 255.0 - 0.5) / SPZ_COLOR_SCALE  # f_dc
_LOG_SCALE = _BYTES / 16.0 - 10.0
_SH = (_BYTES - 128.0) / 128.0


def read_spz(path: str | os.PathLike, data: bytes | None = None) -> GaussianScene:
    """Read a `.spz` file (v2/v3 gzip or v4 zstd) into the PLY (RDF) frame.

    The attribute blocks are inflated into one buffer each, then decoded DECODE_ROWS rows at a time straight into
    the scene's arrays: reading peaks at the arrays plus the file and its inflated blocks (about 1.4x the arrays).
    """
    path = os.fspath(path)
    raw = read_regular(path, "the SPZ file") if data is None else bytes(data)
    if not raw:
        raise SceneFormatError(f"{path}: file is empty")
    if raw[:2] == b"\x1f\x8b":
        (version, n, degree, frac_bits, flags), blocks = _gunzip(raw, path)
        container = "gzip"
    elif raw[:4] == b"NGSP":
        (version, n, degree, frac_bits, flags), blocks = _unzstd_v4(raw, path)
        container = "zstd streams"
    else:
        raise SceneFormatError(f"{path}: not an SPZ file (neither gzip magic 1f8b nor NGSP)")
    del raw  # the compressed bytes are not needed while decoding

    d = (degree + 1) ** 2 - 1
    k = 1 + min(d, 15)
    scene = GaussianScene.allocate(n, k, source_format="spz", antialiased=bool(flags & FLAG_ANTIALIASED))
    rot_bytes = 3 if version == 2 else 4
    for a in range(0, n, DECODE_ROWS):
        b = min(n, a + DECODE_ROWS)
        m, q, c = scene.means[a:b].numpy(), scene.quats[a:b].numpy(), scene.sh[a:b].numpy()
        p = np.frombuffer(blocks[0][9 * a : 9 * b], np.uint8).reshape(b - a, 3, 3).astype(np.int32)
        fixed = p[..., 0] | (p[..., 1] << 8) | (p[..., 2] << 16)
        m[:] = ((fixed ^ 0x800000) - 0x800000).astype(np.float32) * np.float32(2.0**-frac_bits)  # sign-extend 24 bits
        scene.opacity_logits[a:b] = logit_alpha8(np.frombuffer(blocks[1][a:b], np.uint8))
        c[:, 0] = _COLOUR[np.frombuffer(blocks[2][3 * a : 3 * b], np.uint8).reshape(b - a, 3)]
        scales = np.frombuffer(blocks[3][3 * a : 3 * b], np.uint8).reshape(b - a, 3)
        scene.log_scales[a:b] = torch.from_numpy(_LOG_SCALE[scales])
        q[:] = _decode_rotations(blocks[4][rot_bytes * a : rot_bytes * b], b - a, version)
        if d:
            rest = np.frombuffer(blocks[5][3 * d * a : 3 * d * b], np.uint8).reshape(b - a, d, 3)  # RGB innermost
            c[:, 1:] = _SH[rest[:, : k - 1]]
        flip_rub_rdf(m, q, c)
    del blocks
    if degree > 3:
        warnings.warn(f"{path}: SPZ SH degree {degree}; keeping bands 0-3 (the renderer's maximum)", stacklevel=2)
    scene.extras = {
        "spz version": version,
        "container": container,
        "fractional bits": frac_bits,
        "stored frame": "RUB (converted to the PLY frame on read)",
    }
    return scene.validate().drop_invalid(name=path, in_place=True)


def _fraction_bits(max_abs: float, path: str) -> int:
    """Most fraction bits <= 12 that keep every coordinate inside a signed 24-bit integer."""
    limit = (1 << 23) - 1
    if not max_abs < limit:
        raise SceneFormatError(f"{path}: coordinates reach {max_abs:g}; SPZ's 24-bit positions stop at {limit}")
    bits = 12
    while bits > 0 and max_abs * (1 << bits) > limit - 1:
        bits -= 1
    return bits


def _quantize_sh(x: np.ndarray, bits: int) -> np.ndarray:
    """Niantic's quantizeSH: round(x * 128) + 128, snapped to buckets of 2^(8 - bits), clamped to uint8."""
    bucket = 1 << (8 - bits)
    q = np.rint(x * 128.0) + 128.0
    q = np.floor((q + bucket // 2) / bucket) * bucket
    return np.clip(q, 0, 255).astype(np.uint8)


def encode_spz_blocks(
    scene: GaussianScene, path: str, *, sh1_bits: int = 5, sh_rest_bits: int = 4
) -> tuple[tuple[int, int, int, int], list[np.ndarray]]:
    """A scene's attribute blocks (in the RUB frame) and header fields (count, SH degree, fraction bits, flags)."""
    scene = scene.to("cpu")
    n, k = len(scene), scene.sh.shape[1]
    means = scene.means.numpy().copy()
    quats = torch.nn.functional.normalize(scene.quats, dim=1).numpy().copy()
    sh = scene.sh.numpy().copy()
    flip_rub_rdf(means, quats, sh)
    frac_bits = _fraction_bits(float(np.abs(means).max()), path)
    fixed = np.rint(means.astype(np.float64) * (1 << frac_bits)).astype(np.int64) & 0xFFFFFF
    pos = np.stack([fixed & 0xFF, (fixed >> 8) & 0xFF, fixed >> 16], axis=-1).astype(np.uint8)  # [N, 3, 3]
    alpha = np.rint(torch.sigmoid(scene.opacity_logits).numpy() * 255.0).astype(np.uint8)
    colours = np.clip(np.rint(sh[:, 0] * (SPZ_COLOR_SCALE * 255.0) + 127.5), 0, 255).astype(np.uint8)
    scales = np.clip(np.rint((scene.log_scales.numpy() + 10.0) * 16.0), 0, 255).astype(np.uint8)

    xyzw = quats[:, [1, 2, 3, 0]]
    largest = np.abs(xyzw).argmax(1)
    xyzw = xyzw * np.where(xyzw[np.arange(n), largest] < 0, -1.0, 1.0)[:, None]
    packed = np.zeros(n, np.int64)
    for j in range(4):
        mag = np.minimum(np.floor(np.abs(xyzw[:, j]) * (511 / math.sqrt(0.5)) + 0.5), 511).astype(np.int64)
        val = mag | (np.signbit(xyzw[:, j]).astype(np.int64) << 9)
        packed = np.where(largest == j, packed, (packed << 10) | val)
    packed |= largest.astype(np.int64) << 30
    rotations = packed.astype("<u4")

    blocks = [pos, alpha, colours, scales, rotations]
    if k > 1:
        rest = np.empty((n, k - 1, 3), np.uint8)
        rest[:, :3] = _quantize_sh(sh[:, 1:4], sh1_bits)
        if k > 4:
            rest[:, 3:] = _quantize_sh(sh[:, 4:], sh_rest_bits)
        blocks.append(rest)
    degree = scene.sh_degree
    flags = FLAG_ANTIALIASED if scene.antialiased else 0
    return (n, degree, frac_bits, flags), blocks


def write_spz(
    scene: GaussianScene,
    path: str | os.PathLike,
    *,
    version: int = 3,
    sh1_bits: int = 5,
    sh_rest_bits: int = 4,
) -> None:
    """Write `.spz`: version 3 (one gzip stream, the widely read legacy form) or 4 (zstd streams).

    Args:
        sh1_bits / sh_rest_bits: SH precision for band 1 / bands 2-3 (Niantic's defaults, 1-8 bits).
    """
    path = os.fspath(path)
    if version not in (3, 4):
        raise ValueError(f"SPZ version {version} cannot be written (3 or 4)")
    if not (1 <= sh1_bits <= 8 and 1 <= sh_rest_bits <= 8):
        raise ValueError("SPZ SH bits must be 1-8")
    (n, degree, frac_bits, flags), blocks = encode_spz_blocks(scene, path, sh1_bits=sh1_bits, sh_rest_bits=sh_rest_bits)
    if version == 3:
        header = _HEADER_V3.pack(MAGIC, 3, n, degree, frac_bits, flags, 0)
        body = gzip.compress(header + b"".join(b.tobytes() for b in blocks), compresslevel=6, mtime=0)
        with atomic_write(path) as f:
            f.write(body)
        return
    import zstandard

    cctx = zstandard.ZstdCompressor(level=3)
    streams = [cctx.compress(b.tobytes()) for b in blocks]
    header = _HEADER_V4.pack(MAGIC, 4, n, degree, frac_bits, flags, len(streams), _HEADER_V4.size)
    toc = np.array([[len(c), b.nbytes] for c, b in zip(streams, blocks)], dtype="<u8")
    with atomic_write(path) as f:
        f.write(header)
        f.write(toc.tobytes())
        for c in streams:
            f.write(c)


def is_spz(head: bytes) -> bool:
    """v4 files start with NGSP; legacy ones are gzip (only claimed when the name says .spz)."""
    return head[:4] == b"NGSP"
