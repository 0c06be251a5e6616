"""Builders of hostile and unusual scene files, one per class of the file-reading failures found by outside testing.

Each builder writes one file (or link, or FIFO) into a folder and returns its path. The same builders feed the
per-class tests, the subprocess runs of `warpsplat info` / `render` and, with their parameters drawn by
hypothesis, the fuzz tests; their default parameters reproduce the reported case exactly (the seed of each class).
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import torch

from scenes import GaussianScene, make_scene
from scenes.compressed_ply import write_compressed_ply
from scenes.ply import write_ply
from scenes.spz import MAGIC


def cloud(n: int = 64, degree: int = 0, seed: int = 0) -> GaussianScene:
    """n trained-like Gaussians in the unit cube."""
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(torch.rand(n, 3, generator=g) * 2 - 1, torch.randn(n, 4, generator=g),
                      torch.randn(n, 3, generator=g) * 0.5 - 3, torch.randn(n, generator=g) + 1,
                      torch.randn(n, k, 3, generator=g) * 0.3)  # fmt: skip


# ------------------------------------------------------------------ 1. edge encodings (a valid file)


def opaque_ply(folder: Path, n: int = 64, opaque=(0, 5, 9), clear=(1, 33)) -> Path:
    """Opacity logits of +inf (alpha exactly 1) and -inf (alpha 0), as splat-transform writes them."""
    scene = cloud(n)
    scene.opacity_logits[list(opaque)] = float("inf")
    scene.opacity_logits[list(clear)] = float("-inf")
    path = folder / "opaque.ply"
    write_ply(scene, path)
    return path


# ------------------------------------------------------------------ 2. SPZ v4 expansion


def zstd_rle(size: int, byte: int = 0) -> bytes:
    """A zstd frame of `size` copies of `byte`, built by hand from RLE blocks (RFC 8878): 4 bytes per 128 KiB,
    zstd's largest expansion. Built in microseconds whatever the size."""
    block = 1 << 17
    header = struct.pack("<IBB", 0xFD2FB528, 0xC0, 0x38) + struct.pack("<Q", size)  # 8-byte content size, window 128K
    full, last = divmod(size, block)
    if last == 0 and full:
        full, last = full - 1, block
    rle = lambda n, end: struct.pack("<I", end | (1 << 1) | (n << 3))[:3] + bytes([byte])  # noqa: E731
    return header + rle(block, 0) * full + rle(last, 1)


def spz_v4(folder: Path, n: int = 8_000_000, degree: int = 3, name: str = "bomb.spz", cut: int = 0,
           noise: bool = False) -> Path:  # fmt: skip
    """An SPZ v4 file declaring `n` Gaussians whose zstd streams honestly inflate to zeros (16 kB for 8M at SH 3,
    266 kB for 134M: every Gaussian the same). With `cut`, each stream keeps at most its first `cut` bytes (and
    always loses its last) while the TOC keeps the sizes: a count that the data cannot back. With `noise`, the
    positions are random bytes (9 a Gaussian, as incompressible as a trained scene's), so the count is honest for
    the file's size while the other streams still expand as far as zstd can."""
    d = (degree + 1) ** 2 - 1
    sizes = [9 * n, n, 3 * n, 3 * n, 4 * n] + ([3 * d * n] if d else [])
    frames = [zstd_rle(s) for s in sizes]
    if noise:
        import zstandard

        positions = np.random.default_rng(n).integers(0, 256, sizes[0], np.uint8).tobytes()
        frames[0] = zstandard.ZstdCompressor(level=1).compress(positions)
    streams = [f[: min(cut, len(f) - 1)] for f in frames] if cut else frames
    header = struct.pack("<IIIBBBBI12x", MAGIC, 4, n, degree, 12, 0, len(sizes), 32)
    toc = np.array([[len(c), s] for c, s in zip(streams, sizes)], dtype="<u8").tobytes()
    path = folder / name
    path.write_bytes(header + toc + b"".join(streams))
    return path


# ------------------------------------------------------------------ 3. SOG expansion


def _webp(rgba: np.ndarray | tuple, size: tuple[int, int] | None = None) -> bytes:
    """[H, W, 4] uint8, or one RGBA colour filling `size` (W, H), -> lossless WebP bytes (fastest method)."""
    from PIL import Image

    buf = io.BytesIO()
    image = Image.new("RGBA", size, rgba) if size else Image.fromarray(np.asarray(rgba, np.uint8), "RGBA")
    image.save(buf, format="WEBP", lossless=True, quality=0, method=0, exact=True)
    return buf.getvalue()


SOG_TEXTURES = ("means_l", "means_u", "scales", "quats", "sh0")
_SOG_CONSTANT = {"means_l": (0, 0, 0, 255), "means_u": (128, 128, 128, 255), "scales": (100, 100, 100, 255),
                 "quats": (128, 128, 128, 252), "sh0": (200, 150, 100, 255)}  # fmt: skip


def sog(folder: Path, count: int = 16_000_000, name: str = "big.sog", *, noise: bool = False, sizes=None,
        codebook_value: float | None = None) -> Path:  # fmt: skip
    """A SOG v2 of `count` Gaussians, its textures square (the smallest side that holds `count`).

    By default every texture is constant: `count` identical Gaussians in a few kB (7 kB for 16M), the class of an
    honest count that no trained scene has. With `noise`, texels are random (as incompressible as a trained
    scene's), so the file is as large as a real one of that count.
    `sizes`: {texture: (width, height)} overrides (mixed sizes); `codebook_value`: the value of scales.codebook[255]
    (with `noise`, about 1 in 85 Gaussians uses that entry on some axis).
    """
    side = int(np.ceil(np.sqrt(count)))
    rng = np.random.default_rng(count)
    textures = {}
    for tex in SOG_TEXTURES:
        w, h = (sizes or {}).get(tex, (side, side))
        if noise:
            rgba = rng.integers(0, 256, size=(h, w, 4), dtype=np.uint8)
            rgba[..., 3] = 252 + rng.integers(0, 4, size=(h, w)) if tex == "quats" else 255
            textures[tex] = _webp(rgba)
        else:
            textures[tex] = _webp(_SOG_CONSTANT[tex], (w, h))
    scales = np.linspace(-6, 0, 256).tolist()
    if codebook_value is not None:
        scales[255] = codebook_value
    meta = {
        "version": 2,
        "count": count,
        "means": {"mins": [-1.0, -1.0, -1.0], "maxs": [1.0, 1.0, 1.0], "files": ["means_l.webp", "means_u.webp"]},
        "scales": {"codebook": scales, "files": ["scales.webp"]},
        "quats": {"files": ["quats.webp"]},
        "sh0": {"codebook": np.linspace(-2, 2, 256).tolist(), "files": ["sh0.webp"]},
    }
    path = folder / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", json.dumps(meta))  # json writes 1e300 as is: Python floats are doubles
        for tex, data in textures.items():
            z.writestr(f"{tex}.webp", data)
    return path


def sog_lying_member(folder: Path, declared: int = 14_000, actual: int = 256 << 20) -> Path:
    """A small sound SOG whose means_l texture member declares `declared` bytes (in its local header and the
    central directory) but inflates to `actual` bytes: its real WebP, then zeros. Its CRC is that of all `actual`
    bytes, so a reader that inflates it all finds no error until the end."""
    path = sog(folder, count=16, name="lying.sog")
    members = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            members[info.filename] = z.read(info)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in members.items():
            if name != "means_l.webp":
                z.writestr(name, data)
        with z.open("means_l.webp", "w", force_zip64=False) as f:
            f.write(members["means_l.webp"])
            piece = bytes(1 << 24)
            rest = actual - len(members["means_l.webp"])
            for a in range(0, rest, len(piece)):
                f.write(piece[: rest - a])
    data = bytearray(path.read_bytes())
    name = b"means_l.webp"
    cd = data.index(b"PK\x01\x02")  # the first central-directory entry
    while data[cd + 46 : cd + 46 + len(name)] != name:
        cd = data.index(b"PK\x01\x02", cd + 4)
    local = struct.unpack_from("<I", data, cd + 42)[0]
    struct.pack_into("<I", data, cd + 24, declared)  # central directory: uncompressed size
    struct.pack_into("<I", data, local + 22, declared)  # local header: uncompressed size
    path.write_bytes(bytes(data))
    return path


# ------------------------------------------------------------------ 4. tracebacks


def nested_json_sog(folder: Path, depth: int = 100_000) -> Path:
    """A SOG whose meta.json opens `depth` lists (Python's json recursion limit is about 1,000)."""
    path = folder / "nested.sog"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", "[" * depth)
    return path


def dev_zero_link(folder: Path, name: str = "z.spz") -> Path:
    """A scene name that is a link to /dev/zero: read without a bound, it never ends."""
    path = folder / name
    os.symlink("/dev/zero", path)
    return path


# ------------------------------------------------------------------ 5. special files


def fifo(folder: Path, name: str = "f.ply") -> Path:
    """A named pipe: opening it for reading waits for a writer, forever."""
    path = folder / name
    os.mkfifo(path)
    return path


# ------------------------------------------------------------------ 6. overflowing values


def overflow_ply(folder: Path, n: int = 64, scale_rows=(3,), position_rows=(7,), log_scale=89.0,
                 position=3e38) -> Path:  # fmt: skip
    """Finite values whose activation or squared length overflows float32: a log-scale of 89 (exp gives inf),
    a position near 3e38. The other Gaussians are sound."""
    scene = cloud(n)
    scene.log_scales[list(scale_rows), 0] = log_scale
    scene.means[list(position_rows)] = position
    path = folder / "overflow.ply"
    write_ply(scene, path)
    return path


def overflow_compressed_ply(folder: Path, n: int = 512, max_scale: float = 1e30) -> Path:
    """A compressed PLY whose first chunk declares max_scale_x = 1e30: its rows decode to log-scales that exp
    cannot hold."""
    scene = cloud(n)
    path = folder / "overflow.compressed.ply"
    write_compressed_ply(scene, path)
    data = bytearray(path.read_bytes())
    body = data.index(b"end_header\n") + len(b"end_header\n")
    struct.pack_into("<f", data, body + 9 * 4, max_scale)  # chunk 0, property 9: max_scale_x
    path.write_bytes(bytes(data))
    return path


# ------------------------------------------------------------------ 7. trailing bytes


def misdeclared_ply(folder: Path, n: int = 64) -> Path:
    """The opacity property declared as uchar while the body holds a float: every row is 3 bytes longer than
    the header says, so the declared elements end before the body does."""
    path = folder / "misdeclared.ply"
    write_ply(cloud(n), path)
    path.write_bytes(path.read_bytes().replace(b"property float opacity\n", b"property uchar opacity\n", 1))
    return path


# ------------------------------------------------------------------ 8. messages


def empty_ply(folder: Path) -> Path:
    """A well-formed INRIA header declaring no Gaussians."""
    path = folder / "empty.ply"
    write_ply(cloud(4), path)
    data = path.read_bytes()
    header = data[: data.index(b"end_header\n") + len(b"end_header\n")]
    path.write_bytes(header.replace(b"element vertex 4\n", b"element vertex 0\n"))
    return path


def nan_ply(folder: Path, n: int = 64, rows=(2,)) -> Path:
    """A sound PLY with NaN positions in some rows: they are dropped with one warning."""
    scene = cloud(n)
    scene.means[list(rows)] = float("nan")
    path = folder / "nan.ply"
    write_ply(scene, path)
    return path


# ------------------------------------------------------------------ 10. misleading messages


def npz(folder: Path) -> Path:
    """A numpy archive (gsplat's test data is one): a zip, but not a SOG."""
    path = folder / "test_garden.npz"
    np.savez(path, means=np.zeros((4, 3)), scales=np.zeros((4, 3)))
    return path


# ------------------------------------------------------------------ 11. squares that overflow


def huge_splat(folder: Path, n: int = 64, rows=(3,), scale: float = 3e38) -> Path:
    """A .splat whose linear scale `scale` is finite in float32 but whose square (the covariance) is not."""
    from scenes.splat import RECORD, write_splat

    path = folder / "huge.splat"
    write_splat(cloud(n), path)
    rec = np.frombuffer(path.read_bytes(), dtype=RECORD).copy()
    rec["scale"][list(rows), 0] = scale
    path.write_bytes(rec.tobytes())
    return path


# ------------------------------------------------------------------ 12. decompression judged before it is spent


def spz_gzip(folder: Path, n: int = 20_000, degree: int = 0, extra: int = 0, name: str = "run-on.spz",
             noise: bool = True) -> Path:  # fmt: skip
    """A gzip (v3) SPZ of `n` Gaussians with random positions (as incompressible as a trained scene's, so the
    count is honest for the file's size; zero without `noise`) and the other blocks zero, whose stream holds
    `extra` zero bytes more than the header's count needs: the stream runs past its declared size."""
    import gzip

    from scenes.spz import _HEADER_V3, MAGIC, _sizes

    sizes = _sizes(n, degree, 3)
    rng = np.random.default_rng(n)
    positions = rng.integers(0, 256, sizes[0], np.uint8) if noise else np.zeros(sizes[0], np.uint8)
    body = _HEADER_V3.pack(MAGIC, 3, n, degree, 12, 0, 0) + positions.tobytes()
    path = folder / name
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(body)
        zeros = bytes(1 << 24)
        for a in range(0, sum(sizes[1:]) + extra, len(zeros)):
            f.write(zeros[: sum(sizes[1:]) + extra - a])
    return path


# ------------------------------------------------------------------ 13. messages that tell the truth


def long_comment_ply(folder: Path, comment_bytes: int = (1 << 20) + 4096) -> Path:
    """A sound PLY whose header holds more than 1 MiB of comment lines before its element lines."""
    path = folder / "comments.ply"
    write_ply(cloud(16), path)
    line = b"comment " + b"x" * 91 + b"\n"  # 100 bytes
    comments = line * (comment_bytes // len(line) + 1)
    path.write_bytes(path.read_bytes().replace(b"comment written by warpsplat\n", comments, 1))
    return path


def sog_count_beyond_texels(folder: Path, count: int = 100_000_000, side: int = 64) -> Path:
    """A SOG whose meta.json count is far more than its side x side textures hold."""
    return sog(folder, count=count, name="overcount.sog", sizes={t: (side, side) for t in SOG_TEXTURES})


def sog_mixed_sizes(folder: Path) -> Path:
    """A SOG whose means_l texture is 80x80 and the others 72x68 (count 72 x 68): texel i is a different spot of
    the image in each, so the positions decode from the wrong texels."""
    sizes = {t: (72, 68) for t in SOG_TEXTURES} | {"means_l": (80, 80)}
    return sog(folder, count=72 * 68, name="mixed.sog", noise=True, sizes=sizes)


# ------------------------------------------------------------------ 14. a valid scene that must render


def point_ply(folder: Path, n: int = 1, name: str = "point.ply") -> Path:
    """`n` opaque Gaussians all at one position (one Gaussian for n = 1), of trained-like size (log-scale -3)."""
    scene = cloud(n)
    scene.means[:] = torch.tensor([0.3, -0.2, 1.5])
    scene.opacity_logits[:] = 4.0
    scene.sh[:, 0] = 1.0  # bright
    path = folder / name
    write_ply(scene, path)
    return path


# ------------------------------------------------------------------ 15. the command's other inputs


def camera_path(folder: Path, *, width: int = 64, height: int = 48, seconds: float = 1.0, fps: float = 4.0,
                name: str = "camera_path.json") -> Path:  # fmt: skip
    """A nerfstudio keyframe path (two keys, no sampled frames) of `seconds` at `fps`, `width` x `height`."""
    eye = [1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 4.0, 0, 0, 0, 1.0]
    keys = [{"matrix": eye, "fov": 50.0}, {"matrix": eye[:3] + [0.5] + eye[4:], "fov": 50.0}]
    path = folder / name
    path.write_text(json.dumps({"render_width": width, "render_height": height, "fps": fps, "seconds": seconds,
                                "keyframes": keys}))  # fmt: skip
    return path


# ------------------------------------------------------------------ 16. the most a small file admits


def densest_spz(folder: Path, n: int = 131_000, degree: int = 3, log_scale: float = -4.2,
                below: int = 1 << 20, name: str = "densest.spz") -> Path:  # fmt: skip
    """An SPZ v4 file of `n` Gaussians at SH `degree` that the readers admit with the fewest bytes a Gaussian
    (limits.MIN_BYTES_PER_GAUSSIAN): its size lies in [8 n, `below`), 131,000 Gaussians just under 1 MiB. No
    reader admits more Gaussians for a file's size: a .splat takes 32 bytes each, an uncompressed PLY at least 14
    (14 one-byte properties), a compressed PLY 16, SOG and SPZ 8. Every Gaussian has the same size (`log_scale`;
    the default reaches 2-4 tiles at 1280x720) and random positions in [-1, 1]^3 (13 bits a coordinate, about
    6.8 bytes once compressed); random colour bytes bring the file to its size, the SH bands are zero."""
    import zstandard

    rng = np.random.default_rng(n)
    fixed = rng.integers(-4096, 4096, size=(n, 3), dtype=np.int32)  # 12 fraction bits: [-1, 1)
    positions = np.stack([fixed & 0xFF, (fixed >> 8) & 0xFF, (fixed >> 16) & 0xFF], -1).astype(np.uint8)
    scale = round((log_scale + 10.0) * 16.0)
    assert 0 <= scale <= 255, log_scale
    colours = np.full(3 * n, 128, np.uint8)
    rest = [np.full(3 * n, scale, np.uint8), np.full(n, 3 << 30, "<u4")]  # scales; rotations: identity (w largest)
    rest += [np.full(3 * ((degree + 1) ** 2 - 1) * n, 128, np.uint8)] if degree else []  # zero SH coefficients
    cctx = zstandard.ZstdCompressor(level=1)
    random_colours = 0
    for _ in range(8):  # incompressible colour bytes until the file's size is in [8 n, below)
        colours[:random_colours] = rng.integers(0, 256, random_colours, np.uint8)
        blocks = [positions.tobytes(), np.full(n, 200, np.uint8).tobytes(), colours.tobytes()]
        blocks += [b.tobytes() for b in rest]
        streams = [cctx.compress(b) for b in blocks]
        header = struct.pack("<IIIBBBBI12x", MAGIC, 4, n, degree, 12, 0, len(streams), 32)
        toc = np.array([[len(c), len(b)] for c, b in zip(streams, blocks)], dtype="<u8").tobytes()
        data = header + toc + b"".join(streams)
        if 8 * n <= len(data) < below:
            break
        random_colours = min(colours.size, max(0, random_colours + min(below - 1, 8 * n + 256) - len(data)))
    assert 8 * n <= len(data) < below, f"{n} Gaussians: {len(data)} bytes, outside [{8 * n}, {below})"
    path = folder / name
    path.write_bytes(data)
    return path
