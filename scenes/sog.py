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

`write_sog` writes the `.sog` archive (v2; not the unbundled folder), with the codebooks and the SH palette of
scenes/quantize.py; its docstring gives each field's loss.

Every size is checked before anything is decoded, in this order: the dimensions of every per-Gaussian texture
(from the first bytes of its WebP header) against `count`, then `count` against the file's size
(`limits.check_compact`), then memory; and while reading, zip members' declared sizes and compression ratios,
and the palette size against its texture. Textures of different sizes are legal but suspicious (texel i of each
is Gaussian i, so one resized texture moves every Gaussian's values): they load with a warning.
"""

from __future__ import annotations

import io
import json
import math
import os
import warnings
import zipfile
import zlib
from collections.abc import Callable

import numpy as np
import torch

from .gaussians import GaussianScene, SceneFormatError, logit_alpha8
from .limits import MAX_DEFLATE_RATIO, check_compact, check_count, check_scene_memory, open_regular

MAX_META_BYTES = 1 << 20  # codebooks are 256 floats each: a real meta.json is 10-15 kB (its JSON numbers
# become Python objects, ~8x their text: 16 MiB of meta.json took 128 MB)
MAX_TEXTURE_SIDE = 16383  # the WebP format's own limit
_SH_COEFFS = {1: 3, 2: 8, 3: 15}
_V1_BANDS_BY_WIDTH = {192: 1, 512: 2, 960: 3}
_QUAT_SLOTS = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])


class _Source:
    """Reads named members of a `.sog` zip or files of a SOG folder, with size checks before reading."""

    def __init__(self, path: str):
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self.file = None
        self.base = ""
        if os.path.isdir(path):
            self.folder = path
        elif os.path.basename(path).lower() == "meta.json":
            self.folder = os.path.dirname(os.path.abspath(path))
        else:
            self.folder = None
            self.file = open_regular(path)
            try:
                self.zip = zipfile.ZipFile(self.file)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
                self.close()
                raise SceneFormatError(f"{path}: not a readable .sog zip archive ({e})") from None
            names = self.zip.namelist()
            if "meta.json" not in names:
                nested = [n for n in names if n.endswith("/meta.json")]
                if len(nested) != 1:
                    self.close()
                    if path.lower().endswith(".sog"):
                        raise SceneFormatError(f"{path}: .sog archive has no meta.json at its root")
                    raise SceneFormatError(
                        f"{path}: unknown scene format (a zip archive without meta.json, so not a SOG scene)"
                    )
                self.base = nested[0][: -len("meta.json")]

    def read(self, name: str, limit: int) -> bytes:
        """A member's bytes: at most `limit`, and never more than the archive declares for it."""
        what = f"{self.path}: SOG member {name!r}"
        if self.zip is not None:
            info = self._info(name)
            if info.file_size > limit:
                raise SceneFormatError(f"{what} declares {info.file_size:,} bytes, above the {limit:,} limit")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise SceneFormatError(f"{what} uses zip compression method {info.compress_type} (stored/deflate only)")
            if info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 4096:
                raise SceneFormatError(
                    f"{what} declares {info.file_size:,} bytes from {info.compress_size:,} compressed (zip bomb?)"
                )
            # zipfile inflates up to the amount asked for before it cuts the data at the declared size and checks
            # the CRC: asking for the declared size bounds memory by it. (Asking for more let a member that
            # declares 14 kB inflate gigabytes before its CRC error.)
            return self._read_member(info, info.file_size, name)
        with open_regular(self._file(name)) as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise SceneFormatError(f"{what} holds {size:,} bytes, above the {limit:,} limit")
            return f.read(size)

    def head(self, name: str, size: int = 64) -> bytes:
        """The first `size` bytes of a member (a texture's header), inflating no more than a block of it."""
        if self.zip is not None:
            info = self._info(name)
            return self._read_member(info, min(size, info.file_size), name)
        with open_regular(self._file(name)) as f:
            return f.read(size)

    def file_bytes(self, names: list[str]) -> int:
        """The bytes the scene takes on disk: the archive's size, or the sizes of a folder's named files."""
        if self.file is not None:
            return os.fstat(self.file.fileno()).st_size
        return sum(os.stat(self._file(n)).st_size for n in ["meta.json", *names])

    def _check_name(self, name: object) -> str:
        if not isinstance(name, str) or not name or name.startswith(("/", "\\")) or ".." in name.split("/"):
            raise SceneFormatError(f"{self.path}: SOG member {name!r}: not a plain relative file name")
        return name

    def _info(self, name: str) -> zipfile.ZipInfo:
        assert self.zip is not None
        try:
            return self.zip.getinfo(self.base + self._check_name(name))
        except KeyError:
            raise SceneFormatError(f"{self.path}: SOG member {name!r} is missing from the archive") from None

    def _read_member(self, info: zipfile.ZipInfo, size: int, name: str) -> bytes:
        assert self.zip is not None
        try:
            with self.zip.open(info) as f:
                return f.read(size)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError) as e:
            raise SceneFormatError(f"{self.path}: SOG member {name!r} is corrupt ({e})") from None

    def _file(self, name: str) -> str:
        """The path of a folder's member."""
        assert self.folder is not None
        file = os.path.join(self.folder, *self._check_name(name).split("/"))
        if not os.path.exists(file):
            raise SceneFormatError(f"{self.path}: SOG member {name!r}: no file {file}")
        return file

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()
        if self.file is not None:
            self.file.close()


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


def _webp_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first 30 bytes of a WebP file, or None when they are not a WebP header.

    The first chunk says: VP8L (lossless) holds 14-bit width - 1 and height - 1 after its signature byte 0x2f;
    VP8X (extended) holds 24-bit canvas width - 1 and height - 1; VP8 (lossy) 14-bit sizes after its start code.
    """
    if len(head) < 30 or head[:4] != b"RIFF" or head[8:12] != b"WEBP":
        return None
    tag = head[12:16]
    if tag == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if tag == b"VP8X":
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    if tag == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        return int.from_bytes(head[26:28], "little") & 0x3FFF, int.from_bytes(head[28:30], "little") & 0x3FFF
    return None


def _check_layout(src: _Source, textures: dict[str, str], count: int, count_field: str) -> None:
    """Before anything is decoded or reserved: every per-Gaussian texture ({label: member}) holds `count` texels,
    by the sizes in the headers, and `count` fits the file's size (`check_compact`). Textures of different sizes
    load with a warning naming them."""
    sizes = {}
    for label, name in textures.items():
        size = _webp_size(src.head(name))
        if size is None:
            raise SceneFormatError(f"{src.path}: SOG texture {label} ({name}) is not a WebP image (no WebP header)")
        w, h = sizes[name] = size
        if w * h < count:
            raise SceneFormatError(
                f"{src.path}: meta.json {count_field} of {count:,} Gaussians is more than texture {label} ({name}) "
                f"holds: it is {w}x{h} = {w * h:,} texels, one a Gaussian"
            )
    by_size: dict[tuple[int, int], list[str]] = {}
    for name, size in sizes.items():
        by_size.setdefault(size, []).append(name)
    if len(by_size) > 1:
        groups = sorted(by_size.items(), key=lambda kv: len(kv[1]))
        listed = "; ".join(f"{', '.join(names)} {w}x{h}" for (w, h), names in groups)
        warnings.warn(
            f"{src.path}: SOG textures differ in size ({listed}): texel i of each is Gaussian i, so a texture of "
            "another width puts its values on other Gaussians (a resized or swapped texture?); the scene may be wrong",
            stacklevel=3,
        )
    check_compact(count, src.file_bytes(list(textures.values())), src.path, f"meta.json {count_field}")


def _texture(src: _Source, name: str, count: int, *, max_texels: int, label: str) -> np.ndarray:
    """Decode one lossless WebP after checking its header dimensions. Returns [H*W, 4] uint8 RGBA."""
    from PIL import Image

    what = f"{src.path}: SOG texture {label} ({name})"
    # A lossless WebP of the largest allowed size is at most about its raw RGBA bytes (VP8L falls back to
    # plain pixels); anything far larger is not a texture of this scene.
    data = src.read(name, limit=8 * max_texels + (1 << 20))
    lossless = _is_lossless_webp(data)
    if lossless is None:
        raise SceneFormatError(f"{what} is not a WebP image")
    if not lossless:
        raise SceneFormatError(f"{what} is lossy WebP; SOG textures must be lossless")
    with warnings.catch_warnings():
        # Pillow warns above 89M pixels; the sizes are checked against the scene's count right here instead.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
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
            if im.mode != "RGBA":
                im = im.convert("RGBA")
            rgba = np.asarray(im, dtype=np.uint8)
        except Exception as e:
            raise SceneFormatError(f"{what} does not decode ({e})") from None
        finally:
            im.close()
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
    with np.errstate(over="ignore"):  # a huge range overflows to inf: such Gaussians are dropped and counted
        return (np.sign(t) * np.expm1(np.abs(t))).astype(np.float32)  # inverse of sign(x) ln(|x| + 1)


DECODE_ROWS = 1 << 16  # texels decoded at a time: the temporaries stay a few MB whatever the count


def _rows(count: int):
    """(start, end) of each chunk of DECODE_ROWS rows."""
    return ((a, min(count, a + DECODE_ROWS)) for a in range(0, count, DECODE_ROWS))


def _sh_table(src: _Source, file: str, coeffs: int, values: Callable) -> np.ndarray:
    """The shN palette as [entries, coeffs, 3] SH values (the table at the top of this module)."""
    cen = _texture(src, file, 1, max_texels=64 * coeffs * 1025, label="shN centroids")
    width = 64 * coeffs
    if len(cen) % width:
        raise SceneFormatError(f"{src.path}: SOG shN centroids width is not {width} texels for {coeffs} coefficients")
    return values(cen.reshape(len(cen) // coeffs, coeffs, 4)[:, :, :3])


def _fill_sh_rest(out: GaussianScene, src: _Source, file: str, table: np.ndarray, palette: int) -> None:
    """Palette-coded SH into sh[:, 1:] (coefficient-major); labels outside the palette leave zero SH."""
    count = len(out.sh)
    lab = _texture(src, file, count, max_texels=_texture_limit(count), label="shN labels")
    palette = min(palette, len(table))
    for a, b in _rows(count):
        labels = lab[a:b, 0].astype(np.int64) | (lab[a:b, 1].astype(np.int64) << 8)
        ok = labels < palette
        rest = np.zeros((b - a, *table.shape[1:]), np.float32)
        rest[ok] = table[labels[ok]]
        out.sh[a:b, 1:] = torch.from_numpy(rest)


def read_sog(path: str | os.PathLike) -> GaussianScene:
    """Read a `.sog` archive, a folder holding meta.json, or a meta.json path.

    The scene's arrays are allocated once and filled texture by texture, DECODE_ROWS texels at a time: reading
    peaks at the arrays plus one or two decoded textures (4 bytes a texel each).
    """
    path = os.fspath(path)
    src = _Source(path)
    try:
        try:
            meta = _Meta(json.loads(src.read("meta.json", MAX_META_BYTES)), path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise SceneFormatError(f"{path}: SOG meta.json is not valid JSON ({e})") from None
        except RecursionError:
            raise SceneFormatError(f"{path}: SOG meta.json nests too deeply to be a SOG meta.json") from None
        version = meta.get("version", None)
        if version not in (None, 2):
            raise SceneFormatError(f"{path}: SOG meta.json version {version!r} is not supported (1 or 2)")
        # meta.json's numbers are doubles: one beyond float32 (a codebook value of 1e300) decodes to inf, and the
        # Gaussians that use it are dropped and counted (drop_invalid), so numpy's overflow warnings say nothing
        with np.errstate(over="ignore", invalid="ignore"):
            return _read_v1(src, meta) if version is None else _read_v2(src, meta)
    finally:
        src.close()


def _texture_limit(count: int) -> int:
    return 2 * count + (1 << 16)  # writers pad to multiples of 4 rows/columns; anything far larger is a lie


def _check_memory(count: int, coeffs: int, path: str, field: str) -> None:
    # Besides the arrays: two decoded textures at a time (the means), each briefly twice (Pillow's and numpy's).
    check_scene_memory(count, coeffs, path, f"meta.json {field}", buffers=4 * 4 * _texture_limit(count))


def _per_gaussian_textures(meta: _Meta) -> dict[str, str]:
    """{label: member} of the textures with one texel a Gaussian (the same fields in v1 and v2)."""
    lo, hi = meta.files("means.files", 2)
    out = {"means_l": lo, "means_u": hi, "quats": meta.files("quats.files", 1)[0]}
    out |= {"scales": meta.files("scales.files", 1)[0], "sh0": meta.files("sh0.files", 1)[0]}
    if meta.get("shN", None) is not None:
        out["shN labels"] = meta.files("shN.files", 2)[1]
    return out


def _allocate(src: _Source, meta: _Meta, count: int, coeffs: int, count_field: str) -> GaussianScene:
    """The scene of either version, once its textures' sizes, the file's size and the memory are known to fit,
    with its positions and rotations read."""
    _check_layout(src, _per_gaussian_textures(meta), count, count_field)
    _check_memory(count, coeffs, src.path, count_field)
    out = GaussianScene.allocate(count, coeffs, source_format="sog")
    _fill_means_and_quats(out, src, meta)
    return out


def _fill_means_and_quats(out: GaussianScene, src: _Source, meta: _Meta) -> None:
    """Positions (16-bit, split over two textures, log-transformed) and rotations: the same in v1 and v2."""
    count = len(out.means)
    lim = _texture_limit(count)
    mins, maxs = meta.floats("means.mins", 3), meta.floats("means.maxs", 3)
    lo_name, hi_name = meta.files("means.files", 2)
    lo = _texture(src, lo_name, count, max_texels=lim, label="means_l")
    hi = _texture(src, hi_name, count, max_texels=lim, label="means_u")
    for a, b in _rows(count):
        out.means[a:b] = torch.from_numpy(_means(lo[a:b], hi[a:b], mins, maxs))
    del lo, hi
    q = _texture(src, meta.files("quats.files", 1)[0], count, max_texels=lim, label="quats")
    for a, b in _rows(count):
        out.quats[a:b] = torch.from_numpy(_decode_quats(q[a:b]))


def _read_v2(src: _Source, meta: _Meta) -> GaussianScene:
    path = src.path
    count = check_count(meta.integer("count"), path, "meta.json count")
    coeffs, extras = 1, {"sog version": 2, "container": "zip" if src.zip is not None else "folder"}
    if meta.get("shN", None) is not None:
        bands = meta.integer("shN.bands")
        if bands not in _SH_COEFFS:
            raise SceneFormatError(f"{path}: SOG meta.json field shN.bands is {bands}, not 1-3")
        coeffs = 1 + _SH_COEFFS[bands]
    out = _allocate(src, meta, count, coeffs, "count")
    lim = _texture_limit(count)
    scale_book = meta.floats("scales.codebook", 256).astype(np.float32)
    sc = _texture(src, meta.files("scales.files", 1)[0], count, max_texels=lim, label="scales")
    for a, b in _rows(count):
        out.log_scales[a:b] = torch.from_numpy(scale_book[sc[a:b, :3]])
    del sc
    colour_book = meta.floats("sh0.codebook", 256).astype(np.float32)
    c0 = _texture(src, meta.files("sh0.files", 1)[0], count, max_texels=lim, label="sh0")
    for a, b in _rows(count):
        out.sh[a:b, 0] = torch.from_numpy(colour_book[c0[a:b, :3]])
        out.opacity_logits[a:b] = logit_alpha8(c0[a:b, 3])
    del c0
    if coeffs > 1:
        sh_book = meta.floats("shN.codebook", 256).astype(np.float32)
        palette = meta.integer("shN.count")
        if not 0 < palette <= 1 << 16:
            raise SceneFormatError(f"{path}: SOG meta.json field shN.count {palette} is not 1-65536")
        files = meta.files("shN.files", 2)
        table = _sh_table(src, files[0], coeffs - 1, lambda t: sh_book[t])
        _fill_sh_rest(out, src, files[1], table, palette)
        extras["sh palette"] = palette
    model = meta.get("model", "default")
    if isinstance(meta.get("asset.generator", None), str):
        extras["generator"] = meta.get("asset.generator")
    out.antialiased, out.extras = model == "antialiased", extras
    return out.validate().drop_invalid(name=path, in_place=True)


def _read_v1(src: _Source, meta: _Meta) -> GaussianScene:
    path = src.path
    shape = meta.get("means.shape")
    if not isinstance(shape, list) or not shape or not isinstance(shape[0], int):
        raise SceneFormatError(f"{path}: SOG v1 meta.json field means.shape is not a list of integers")
    count = check_count(shape[0], path, "meta.json means.shape[0]")
    coeffs, extras = 1, {"sog version": 1, "container": "zip" if src.zip is not None else "folder"}
    if meta.get("shN", None) is not None:
        files = meta.files("shN.files", 2)
        # v1 has no band count: it follows from the centroid texture's width.
        from PIL import Image

        head = src.read(files[0], 8 * 64 * 15 * 1025 + (1 << 20))
        try:
            width = Image.open(io.BytesIO(head)).size[0]
        except Exception as e:
            raise SceneFormatError(f"{path}: SOG texture shN centroids has an unreadable header ({e})") from None
        bands = _V1_BANDS_BY_WIDTH.get(width)
        if bands is None:
            raise SceneFormatError(f"{path}: SOG v1 shN centroids width {width} is not 192, 512 or 960")
        coeffs = 1 + _SH_COEFFS[bands]
    out = _allocate(src, meta, count, coeffs, "means.shape[0]")
    lim = _texture_limit(count)

    def lerp8(field: str, channels: int) -> Callable[[np.ndarray], np.ndarray]:
        lo_, hi_ = meta.floats(f"{field}.mins", channels), meta.floats(f"{field}.maxs", channels)
        return lambda texels: (lo_ + (hi_ - lo_) * (texels[:, :channels] / 255.0)).astype(np.float32)

    scales = lerp8("scales", 3)
    sc = _texture(src, meta.files("scales.files", 1)[0], count, max_texels=lim, label="scales")
    for a, b in _rows(count):
        out.log_scales[a:b] = torch.from_numpy(scales(sc[a:b]))
    del sc
    sh0 = lerp8("sh0", 4)
    c0 = _texture(src, meta.files("sh0.files", 1)[0], count, max_texels=lim, label="sh0")
    for a, b in _rows(count):
        v = sh0(c0[a:b])
        out.sh[a:b, 0] = torch.from_numpy(v[:, :3])
        out.opacity_logits[a:b] = torch.from_numpy(v[:, 3])  # v1 stores the logit itself
    del c0
    if coeffs > 1:
        lo1, hi1 = float(meta.floats("shN.mins")[0]), float(meta.floats("shN.maxs")[0])
        table = _sh_table(src, files[0], coeffs - 1, lambda t: (lo1 + (hi1 - lo1) * (t / 255.0)).astype(np.float32))
        _fill_sh_rest(out, src, files[1], table, 1 << 16)
    out.extras = extras
    return out.validate().drop_invalid(name=path, in_place=True)


def is_sog(head: bytes) -> bool:
    """A zip archive (local file header magic). SOG is the only zip-based scene format read here."""
    return head[:4] == b"PK\x03\x04"


# ---------------------------------------------------------------------------------------------------- writing

SH_ITERATIONS = 10  # k-means iterations of the SH palette (splat-transform's default too)
_WEBP_OPTIONS = dict(lossless=True, quality=90, method=4, exact=True)  # exact: keep RGB under a texel of alpha 0


def texture_size(count: int) -> tuple[int, int]:
    """(width, height) of the per-Gaussian textures: a near-square of whole 4x4 blocks, as splat-transform lays
    them out (texel i, row-major, is Gaussian i; the rest is padding)."""
    width = max(4, math.ceil(math.sqrt(count) / 4) * 4)
    return width, max(4, math.ceil(count / width / 4) * 4)


def palette_size(count: int) -> int:
    """The SH palette's entries for `count` Gaussians: 1,024 a power of two of count / 1,024, at most 65,536 (as
    splat-transform picks it; smaller for fewer Gaussians)."""
    return int(min(64.0, 2.0 ** math.floor(math.log2(max(count, 1) / 1024))) * 1024)


def write_sog(
    scene: GaussianScene,
    path: str | os.PathLike,
    *,
    sh_iterations: int = SH_ITERATIONS,
    progress: Callable[[str, float], None] | None = None,
) -> None:
    """Write a `.sog` archive (meta.json v2 and lossless WebP textures; the table at the top of this module).

    Rows go in Morton order of their centres (compressed_ply.morton_order) so that neighbouring texels hold
    neighbouring Gaussians, which is what the WebP coding compresses. Lossy, per field, against the scene written:
    - positions: t = sign(x) ln(|x| + 1) in 16 bits between the axis' bounds, within (max - min) / 131,070 of t;
    - rotations: the unit quaternion with its largest component positive, the other three in 8 bits each (within
      sqrt(2) / 510), the largest rebuilt from them;
    - log scales and DC colours: each value's nearest level of a 256-level codebook (one per field, its axes or
      channels pooled; scenes/quantize.py `scalar_codebook`);
    - opacity: 8 bits after the sigmoid, within 0.5 / 255;
    - the higher SH bands: one palette entry a Gaussian (`palette_size` entries; scenes/quantize.py
      `vector_palette`, `sh_iterations` iterations), exact where the scene has no more distinct rows than that;
      the entries' values are their nearest levels of a 256-level codebook.
    `progress(step, fraction)`: called as the work goes."""
    from PIL import Image

    from .atomic import atomic_write
    from .compressed_ply import morton_order
    from .quantize import scalar_codebook, vector_palette

    path = os.fspath(path)
    if os.path.basename(path).lower() == "meta.json":
        raise SceneFormatError(f"{path}: warpsplat writes SOG as one .sog archive, not as a folder's meta.json")
    say = progress or (lambda step, fraction: None)
    # a non-finite value would poison a codebook (every reader drops such Gaussians already; a scene built in
    # memory may hold them): dropped here too, with the readers' warning
    scene = scene.to("cpu").drop_invalid(name=path)
    n, k = len(scene), int(scene.sh.shape[1])
    if n == 0:
        raise SceneFormatError(f"{path}: a SOG needs at least one Gaussian")
    width, height = texture_size(n)
    if max(width, height) > MAX_TEXTURE_SIDE:
        raise SceneFormatError(f"{path}: {n:,} Gaussians need {width}x{height} textures, over WebP's limit")
    say("ordering", 0.0)
    order = torch.from_numpy(morton_order(scene.means.numpy()))

    def texture(channels: list[np.ndarray], fill: int = 255) -> bytes:
        """[N] uint8 channels (up to 4; alpha `fill` where not given) -> a lossless WebP of width x height."""
        rgba = np.zeros((width * height, 4), np.uint8)
        rgba[:, 3] = fill
        for c, values in enumerate(channels):
            rgba[:n, c] = values
        return _webp(Image, rgba.reshape(height, width, 4))

    files: dict[str, bytes] = {}
    # positions: sign(x) ln(|x| + 1), 16 bits between the axis' bounds (in float64, as meta.json holds them)
    means = scene.means.double()[order]
    t = torch.sign(means) * torch.log1p(means.abs())
    mins, maxs = t.amin(0), t.amax(0)
    span = torch.where(maxs > mins, maxs - mins, torch.ones_like(maxs))
    v = torch.round((t - mins) / span * 65535).clamp(0, 65535).to(torch.int64).numpy()
    files["means_l.webp"] = texture([(v[:, a] & 0xFF).astype(np.uint8) for a in range(3)])
    files["means_u.webp"] = texture([(v[:, a] >> 8).astype(np.uint8) for a in range(3)])
    say("rotations", 0.1)
    files["quats.webp"] = texture(*_quat_texels(scene.quats[order]))
    say("scales", 0.2)
    scale_book, scale_labels = scalar_codebook(scene.log_scales[order])
    files["scales.webp"] = texture([scale_labels[:, a].to(torch.uint8).numpy() for a in range(3)])
    say("colours", 0.3)
    colour_book, colour_labels = scalar_codebook(scene.sh[order, 0])
    alpha = torch.round(torch.sigmoid(scene.opacity_logits[order].double()) * 255).clamp(0, 255).to(torch.uint8)
    files["sh0.webp"] = texture([*(colour_labels[:, c].to(torch.uint8).numpy() for c in range(3)), alpha.numpy()])
    meta: dict = {
        "version": 2,
        "asset": {"generator": "warpsplat"},
        "count": n,
        "means": {"mins": mins.tolist(), "maxs": maxs.tolist(), "files": ["means_l.webp", "means_u.webp"]},
        "scales": {"codebook": scale_book.tolist(), "files": ["scales.webp"]},
        "quats": {"files": ["quats.webp"]},
        "sh0": {"codebook": colour_book.tolist(), "files": ["sh0.webp"]},
    }
    if k > 1:
        coeffs = k - 1
        say("SH palette", 0.4)
        rest = scene.sh[order, 1:].reshape(n, coeffs * 3)  # coefficient-major: texel j holds coefficient j+1's RGB
        entries, labels = vector_palette(rest, palette_size(n), sh_iterations,
                                         progress=lambda f: say("SH palette", 0.4 + 0.5 * f))  # fmt: skip
        sh_book, sh_labels = scalar_codebook(entries)
        rows = math.ceil(len(entries) / 64)
        cen = np.zeros((rows * 64 * coeffs, 4), np.uint8)
        cen[:, 3] = 255
        cen[: len(entries) * coeffs, :3] = sh_labels.reshape(len(entries) * coeffs, 3).to(torch.uint8).numpy()
        files["shN_centroids.webp"] = _webp(Image, cen.reshape(rows, 64 * coeffs, 4))
        files["shN_labels.webp"] = texture([(labels & 0xFF).to(torch.uint8).numpy(), (labels >> 8).to(torch.uint8)
                                            .numpy()])  # fmt: skip
        bands = {3: 1, 8: 2, 15: 3}[coeffs]
        meta["shN"] = {"count": len(entries), "bands": bands, "codebook": sh_book.tolist(),
                       "files": ["shN_centroids.webp", "shN_labels.webp"]}  # fmt: skip
    if scene.antialiased:
        meta["model"] = "antialiased"
    say("writing", 0.95)
    files = {"meta.json": json.dumps(meta, separators=(",", ":")).encode(), **files}
    with atomic_write(path) as f, zipfile.ZipFile(f, "w") as z:
        for name, data in files.items():
            # a fixed date: the same scene makes the same bytes; WebP is compressed already
            member = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(member, data, zipfile.ZIP_DEFLATED if name == "meta.json" else zipfile.ZIP_STORED)
    say("done", 1.0)


def _webp(image_module, rgba: np.ndarray) -> bytes:
    buf = io.BytesIO()
    image_module.fromarray(rgba, "RGBA").save(buf, format="WEBP", **_WEBP_OPTIONS)
    return buf.getvalue()


def _quat_texels(quats: torch.Tensor) -> tuple[list[np.ndarray], int]:
    """[N, 4] (w, x, y, z) -> ([R, G, B, A] uint8 channels, 255): the three smaller components of the unit
    quaternion whose largest is positive, each 8 bits of [-1/sqrt 2, 1/sqrt 2], and A = 252 + the largest's
    slot (a zero quaternion is written as the identity)."""
    q = quats.double()
    norm = q.norm(dim=1, keepdim=True)
    q = torch.where(norm > 0, q / norm.clamp_min(1e-300), torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=q.dtype))
    largest = q.abs().argmax(1)
    q = q * torch.where(q.gather(1, largest[:, None]) < 0, -1.0, 1.0)
    others = q.gather(1, torch.from_numpy(_QUAT_SLOTS)[largest])
    code = torch.round((others * math.sqrt(2) * 0.5 + 0.5) * 255).clamp(0, 255).to(torch.uint8).numpy()
    return [code[:, 0], code[:, 1], code[:, 2], (252 + largest).to(torch.uint8).numpy()], 255
