"""PlayCanvas SOG (Spatially Ordered Gaussians): read a `.sog` zip or an unbundled folder with `meta.json`.

A SOG is a `meta.json` plus lossless WebP textures, either zipped at the archive root (`.sog`) or side
by side in a folder. Texel i (row-major from the top left) belongs to Gaussian i; textures are at least
`count` texels. Reference: developer.playcanvas.com "The SOG Format" and splat-transform `read-sog.ts`
/ `read-sog-v1.ts`.

meta.json v2 (`version: 2`):

    {count, model?, means: {mins[3], maxs[3], files: [means_l, means_u]}, scales: {codebook[256], files},
     quats: {files}, sh0: {codebook[256], files}, shN?: {count, bands, codebook[256], files: [centroids, labels]}}

| texture       | channels | decoding                                                                          |
|---------------|----------|-----------------------------------------------------------------------------------|
| means_l/u     | RGB      | v = l + 256 u per axis; t = lerp(mins, maxs, v / 65535); x = sign(t) (e^|t| - 1)   |
| scales        | RGB      | log scale = scales.codebook[byte] per axis                                        |
| quats         | RGBA     | a, b, c = (byte / 255 * 2 - 1) / sqrt(2) fill the (w, x, y, z) slots other than   |
|               |          | A - 252 (the largest component, = sqrt(1 - a^2 - b^2 - c^2)); A < 252 -> identity  |
| sh0           | RGBA     | f_dc = sh0.codebook[byte] per channel; A / 255 = sigmoid(opacity)                  |
| shN_labels    | RG       | palette entry R + 256 G (entries >= shN.count give zero SH)                        |
| shN_centroids | RGB      | entry e occupies `coeffs` texels from (x = (e % 64) coeffs, y = e // 64); texel j  |
|               |          | holds coefficient j+1 of R, G, B as shN.codebook indices; coeffs = 3, 8, 15 by bands |

The legacy v1 layout (no `version` key; count = means.shape[0]) stores per-channel `mins`/`maxs` instead of
codebooks: scales and f_dc are lerps over 8 bits, sh0's alpha is a lerp of the opacity *logit*, and shN
values lerp between scalar mins/maxs; its SH band count follows from the centroid width (192, 512, 960).

SOG is in the PLY (RDF) frame like the PLY it was made from; `model: "antialiased"` sets the flag.
Writing SOG needs k-means codebooks and is not offered: write `.compressed.ply` for a compact PlayCanvas file.

Every size is checked before anything is decoded: zip members' declared sizes and compression ratios,
texture dimensions from the WebP header against `count`, the palette size against its texture.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
import zlib
from collections.abc import Callable

import numpy as np
import torch

from .gaussians import GaussianScene, SceneFormatError, logit, make_scene
from .limits import MAX_DEFLATE_RATIO, check_count

MAX_META_BYTES = 16 << 20  # codebooks are 256 floats each: a real meta.json is ~15 kB
MAX_TEXTURE_SIDE = 16383  # the WebP format's own limit
_SH_COEFFS = {1: 3, 2: 8, 3: 15}
_V1_BANDS_BY_WIDTH = {192: 1, 512: 2, 960: 3}
_QUAT_SLOTS = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])


class _Source:
    """Reads named members of a `.sog` zip or files of a SOG folder, with size checks before reading."""

    def __init__(self, path: str):
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self.base = ""
        if os.path.isdir(path):
            self.folder = path
        elif os.path.basename(path).lower() == "meta.json":
            self.folder = os.path.dirname(os.path.abspath(path))
        else:
            self.folder = None
            try:
                self.zip = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError, ValueError) as e:
                raise SceneFormatError(f"{path}: not a readable .sog zip archive ({e})") from None
            names = self.zip.namelist()
            if "meta.json" not in names:
                nested = [n for n in names if n.endswith("/meta.json")]
                if len(nested) != 1:
                    raise SceneFormatError(f"{path}: .sog archive has no meta.json at its root")
                self.base = nested[0][: -len("meta.json")]

    def read(self, name: str, limit: int) -> bytes:
        what = f"{self.path}: SOG member {name!r}"
        if not isinstance(name, str) or not name or name.startswith(("/", "\\")) or ".." in name.split("/"):
            raise SceneFormatError(f"{what}: not a plain relative file name")
        if self.zip is not None:
            try:
                info = self.zip.getinfo(self.base + name)
            except KeyError:
                raise SceneFormatError(f"{what} is missing from the archive") from None
            if info.file_size > limit:
                raise SceneFormatError(f"{what} declares {info.file_size:,} bytes, above the {limit:,} limit")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise SceneFormatError(f"{what} uses zip compression method {info.compress_type} (stored/deflate only)")
            if info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 4096:
                raise SceneFormatError(
                    f"{what} declares {info.file_size:,} bytes from {info.compress_size:,} compressed (zip bomb?)"
                )
            try:
                with self.zip.open(info) as f:
                    data = f.read(limit + 1)  # zipfile stops at the declared size; the cap is belt and braces
            except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError) as e:
                raise SceneFormatError(f"{what} is corrupt ({e})") from None
            return data
        assert self.folder is not None
        file = os.path.join(self.folder, *name.split("/"))
        if not os.path.isfile(file):
            raise SceneFormatError(f"{what}: no file {file}")
        size = os.path.getsize(file)
        if size > limit:
            raise SceneFormatError(f"{what} holds {size:,} bytes, above the {limit:,} limit")
        with open(file, "rb") as f:
            return f.read()

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


def _is_lossless_webp(data: bytes) -> bool | None:
    """True for VP8L, False for lossy VP8, None when the bytes are not a WebP RIFF container."""
    if len(data) < 16 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    pos = 12
    for _ in range(64):  # a handful of chunks (VP8X, ICCP, ANIM, ALPH, VP8/VP8L, EXIF, XMP)
        if pos + 8 > len(data):
            return None
        tag = data[pos : pos + 4]
        if tag == b"VP8L":
            return True
        if tag == b"VP8 ":
            return False
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        pos += 8 + size + (size & 1)
    return None


def _texture(src: _Source, name: str, count: int, *, max_texels: int, label: str) -> np.ndarray:
    """Decode one lossless WebP after checking its header dimensions. Returns [H*W, 4] uint8 RGBA."""
    from PIL import Image

    what = f"{src.path}: SOG texture {label} ({name})"
    data = src.read(name, limit=4 * MAX_TEXTURE_SIDE * MAX_TEXTURE_SIDE)
    lossless = _is_lossless_webp(data)
    if lossless is None:
        raise SceneFormatError(f"{what} is not a WebP image")
    if not lossless:
        raise SceneFormatError(f"{what} is lossy WebP; SOG textures must be lossless")
    try:
        im = Image.open(io.BytesIO(data))
        w, h = im.size  # header only: nothing decoded yet
    except Exception as e:  # Pillow raises many types (incl. DecompressionBombError) for bad headers
        raise SceneFormatError(f"{what} has an unreadable header ({e})") from None
    if not (0 < w <= MAX_TEXTURE_SIDE and 0 < h <= MAX_TEXTURE_SIDE):
        raise SceneFormatError(f"{what} is {w}x{h}, outside the WebP limit {MAX_TEXTURE_SIDE}")
    if w * h < count:
        raise SceneFormatError(f"{what} is {w}x{h} = {w * h:,} texels, fewer than the {count:,} it must hold")
    if w * h > max_texels:
        raise SceneFormatError(f"{what} is {w}x{h}, far larger than {count:,} entries need")
    try:
        rgba = np.asarray(im.convert("RGBA"), dtype=np.uint8)
    except Exception as e:
        raise SceneFormatError(f"{what} does not decode ({e})") from None
    if rgba.shape != (h, w, 4):
        raise SceneFormatError(f"{what} decoded to shape {rgba.shape}, expected ({h}, {w}, 4)")
    return rgba.reshape(h * w, 4)


class _Meta:
    """Typed access to meta.json fields; every bad field is a SceneFormatError naming it."""

    def __init__(self, meta: object, path: str):
        if not isinstance(meta, dict):
            raise SceneFormatError(f"{path}: SOG meta.json is not a JSON object")
        self.meta = meta
        self.path = path

    def get(self, dotted: str, default: object = KeyError) -> object:
        node: object = self.meta
        for key in dotted.split("."):
            if not isinstance(node, dict) or key not in node:
                if default is not KeyError:
                    return default
                raise SceneFormatError(f"{self.path}: SOG meta.json lacks field {dotted}")
            node = node[key]
        return node

    def floats(self, dotted: str, length: int | None = None) -> np.ndarray:
        value = self.get(dotted)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and length is None:
            value = [value]
        if not isinstance(value, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            raise SceneFormatError(f"{self.path}: SOG meta.json field {dotted} is not a list of numbers")
        if length is not None and len(value) != length:
            raise SceneFormatError(f"{self.path}: SOG meta.json field {dotted} has {len(value)} numbers, not {length}")
        arr = np.asarray(value, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise SceneFormatError(f"{self.path}: SOG meta.json field {dotted} holds non-finite numbers")
        return arr

    def files(self, dotted: str, n: int) -> list[str]:
        value = self.get(dotted)
        if not isinstance(value, list) or len(value) < n or not all(isinstance(v, str) for v in value[:n]):
            raise SceneFormatError(f"{self.path}: SOG meta.json field {dotted} does not name {n} files")
        return value[:n]

    def integer(self, dotted: str) -> int:
        value = self.get(dotted)
        if not isinstance(value, int) or isinstance(value, bool):
            raise SceneFormatError(f"{self.path}: SOG meta.json field {dotted} is not an integer")
        return value


def _decode_quats(q: np.ndarray) -> np.ndarray:
    """[N, 4] RGBA quats texels -> [N, 4] (w, x, y, z)."""
    n = len(q)
    abc = (q[:, :3].astype(np.float32) / 255.0 * 2.0 - 1.0) / np.float32(math.sqrt(2))
    tag = q[:, 3].astype(np.int64)
    valid = tag >= 252
    largest = np.where(valid, tag - 252, 0)
    out = np.zeros((n, 4), np.float32)
    out[np.arange(n)[:, None], _QUAT_SLOTS[largest]] = abc
    out[np.arange(n), largest] = np.sqrt(np.maximum(0.0, 1.0 - np.square(abc).sum(1)))
    out[~valid] = (1.0, 0.0, 0.0, 0.0)  # an invalid tag reads as identity, as splat-transform does
    return out


def _means(lo: np.ndarray, hi: np.ndarray, mins: np.ndarray, maxs: np.ndarray) -> np.ndarray:
    v = lo[:, :3].astype(np.float64) + 256.0 * hi[:, :3].astype(np.float64)
    span = np.where(maxs - mins != 0, maxs - mins, 1.0)  # splat-transform's `|| 1` for a flat axis
    t = mins + span * (v / 65535.0)
    return (np.sign(t) * np.expm1(np.abs(t))).astype(np.float32)  # inverse of sign(x) ln(|x| + 1)


def _sh_rest(
    src: _Source, files: list[str], labels_count: int, coeffs: int, palette: int, values: Callable
) -> np.ndarray:
    """Palette-coded SH -> [N, coeffs, 3] (coefficient-major), zero for labels outside the palette."""
    cen = _texture(src, files[0], 1, max_texels=64 * coeffs * 1025, label="shN centroids")
    lab = _texture(src, files[1], labels_count, max_texels=2 * labels_count + (1 << 16), label="shN labels")
    width = 64 * coeffs
    rows = len(cen) // width
    if len(cen) % width:
        raise SceneFormatError(f"{src.path}: SOG shN centroids width is not {width} texels for {coeffs} coefficients")
    table = values(cen.reshape(rows * 64, coeffs, 4)[:, :, :3])  # [entries, coeffs, 3]
    palette = min(palette, rows * 64)
    labels = lab[:labels_count, 0].astype(np.int64) | (lab[:labels_count, 1].astype(np.int64) << 8)
    ok = labels < palette
    out = np.zeros((labels_count, coeffs, 3), np.float32)
    out[ok] = table[labels[ok]]
    return out


def read_sog(path: str | os.PathLike) -> GaussianScene:
    """Read a `.sog` archive, a folder holding meta.json, or a meta.json path."""
    path = os.fspath(path)
    src = _Source(path)
    try:
        try:
            meta = _Meta(json.loads(src.read("meta.json", MAX_META_BYTES)), path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise SceneFormatError(f"{path}: SOG meta.json is not valid JSON ({e})") from None
        version = meta.get("version", None)
        if version is None:
            return _read_v1(src, meta)
        if version != 2:
            raise SceneFormatError(f"{path}: SOG meta.json version {version!r} is not supported (1 or 2)")
        return _read_v2(src, meta)
    finally:
        src.close()


def _texture_limit(count: int) -> int:
    return 2 * count + (1 << 16)  # writers pad to multiples of 4 rows/columns; anything far larger is a lie


def _means_and_quats(src: _Source, meta: _Meta, count: int, lim: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (16-bit, split over two textures, log-transformed) and rotations: the same in v1 and v2."""
    mins, maxs = meta.floats("means.mins", 3), meta.floats("means.maxs", 3)
    lo_name, hi_name = meta.files("means.files", 2)
    lo = _texture(src, lo_name, count, max_texels=lim, label="means_l")[:count]
    hi = _texture(src, hi_name, count, max_texels=lim, label="means_u")[:count]
    means = _means(lo, hi, mins, maxs)
    del lo, hi
    quats = _decode_quats(_texture(src, meta.files("quats.files", 1)[0], count, max_texels=lim, label="quats")[:count])
    return means, quats


def _read_v2(src: _Source, meta: _Meta) -> GaussianScene:
    path = src.path
    count = check_count(meta.integer("count"), path, "meta.json count")
    lim = _texture_limit(count)
    means, quats = _means_and_quats(src, meta, count, lim)
    scale_book = meta.floats("scales.codebook", 256).astype(np.float32)
    sc = _texture(src, meta.files("scales.files", 1)[0], count, max_texels=lim, label="scales")[:count]
    log_scales = scale_book[sc[:, :3]]
    colour_book = meta.floats("sh0.codebook", 256).astype(np.float32)
    c0 = _texture(src, meta.files("sh0.files", 1)[0], count, max_texels=lim, label="sh0")[:count]
    f_dc = colour_book[c0[:, :3]]
    alpha = torch.from_numpy(c0[:, 3].astype(np.float32) / 255.0)
    rest = None
    extras: dict = {"sog version": 2, "container": "zip" if src.zip is not None else "folder"}
    if meta.get("shN", None) is not None:
        bands = meta.integer("shN.bands")
        if bands not in _SH_COEFFS:
            raise SceneFormatError(f"{path}: SOG meta.json field shN.bands is {bands}, not 1-3")
        sh_book = meta.floats("shN.codebook", 256).astype(np.float32)
        palette = meta.integer("shN.count")
        if not 0 < palette <= 1 << 16:
            raise SceneFormatError(f"{path}: SOG meta.json field shN.count {palette} is not 1-65536")
        rest = _sh_rest(src, meta.files("shN.files", 2), count, _SH_COEFFS[bands], palette, lambda t: sh_book[t])
        extras["sh palette"] = palette
    model = meta.get("model", "default")
    if isinstance(meta.get("asset.generator", None), str):
        extras["generator"] = meta.get("asset.generator")
    return _finish(
        path, means, quats, log_scales, logit(alpha), f_dc, rest, antialiased=model == "antialiased", extras=extras
    )


def _read_v1(src: _Source, meta: _Meta) -> GaussianScene:
    path = src.path
    shape = meta.get("means.shape")
    if not isinstance(shape, list) or not shape or not isinstance(shape[0], int):
        raise SceneFormatError(f"{path}: SOG v1 meta.json field means.shape is not a list of integers")
    count = check_count(shape[0], path, "meta.json means.shape[0]")
    lim = _texture_limit(count)
    means, quats = _means_and_quats(src, meta, count, lim)

    def lerp8(field: str, texels: np.ndarray, channels: int) -> np.ndarray:
        lo_, hi_ = meta.floats(f"{field}.mins", channels), meta.floats(f"{field}.maxs", channels)
        return (lo_ + (hi_ - lo_) * (texels[:, :channels] / 255.0)).astype(np.float32)

    sc = _texture(src, meta.files("scales.files", 1)[0], count, max_texels=lim, label="scales")[:count]
    log_scales = lerp8("scales", sc, 3)
    c0 = lerp8("sh0", _texture(src, meta.files("sh0.files", 1)[0], count, max_texels=lim, label="sh0")[:count], 4)
    f_dc, opacity_logit = c0[:, :3], c0[:, 3]
    rest = None
    extras: dict = {"sog version": 1, "container": "zip" if src.zip is not None else "folder"}
    if meta.get("shN", None) is not None:
        files = meta.files("shN.files", 2)
        # v1 has no band count: it follows from the centroid texture's width.
        from PIL import Image

        head = src.read(files[0], 4 * MAX_TEXTURE_SIDE**2)
        try:
            width = Image.open(io.BytesIO(head)).size[0]
        except Exception as e:
            raise SceneFormatError(f"{path}: SOG texture shN centroids has an unreadable header ({e})") from None
        bands = _V1_BANDS_BY_WIDTH.get(width)
        if bands is None:
            raise SceneFormatError(f"{path}: SOG v1 shN centroids width {width} is not 192, 512 or 960")
        lo1, hi1 = float(meta.floats("shN.mins")[0]), float(meta.floats("shN.maxs")[0])
        rest = _sh_rest(
            src,
            files,
            count,
            _SH_COEFFS[bands],
            1 << 16,
            lambda t: (lo1 + (hi1 - lo1) * (t / 255.0)).astype(np.float32),
        )
    opacity = torch.from_numpy(np.ascontiguousarray(opacity_logit))  # v1 stores the logit itself
    return _finish(path, means, quats, log_scales, opacity, f_dc, rest, antialiased=False, extras=extras)


def _finish(path, means, quats, log_scales, opacity_logits, f_dc, rest, *, antialiased, extras) -> GaussianScene:
    n = len(means)
    k = 1 + (rest.shape[1] if rest is not None else 0)
    sh = np.empty((n, k, 3), np.float32)
    sh[:, 0] = f_dc
    if rest is not None:
        sh[:, 1:] = rest
    scene = make_scene(
        torch.from_numpy(means),
        torch.from_numpy(quats),
        torch.from_numpy(np.ascontiguousarray(log_scales)),
        opacity_logits,
        torch.from_numpy(sh),
        source_format="sog",
        up_axis="-y",
        antialiased=antialiased,
        extras=extras,
    )
    return scene.drop_invalid(name=path)


def is_sog(head: bytes) -> bool:
    """A zip archive (local file header magic). SOG is the only zip-based scene format read here."""
    return head[:4] == b"PK\x03\x04"
