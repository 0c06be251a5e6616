"""Open and save scenes by path: one dispatch table, one reader/writer module per format.

Readers are chosen by the file's magic bytes where the format has one, else by its extension, and every
failure is a `SceneFormatError` (or `FileNotFoundError`) naming the path: never a traceback from numpy.
Only regular files and folders are read (`limits.open_regular`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from .atomic import naming_output
from .compressed_ply import read_compressed_ply, write_compressed_ply
from .gaussians import GaussianScene, SceneFormatError
from .glb import is_glb, read_glb, write_glb
from .gsplat_ckpt import is_zip, read_gsplat_checkpoint, read_nerfstudio_checkpoint
from .ksplat import read_ksplat
from .limits import open_regular
from .ply import is_ply, write_ply
from .sog import is_sog, read_sog, write_sog
from .splat import read_splat, write_splat
from .spz import is_spz, read_spz, write_spz
from .trainer_folder import read_folder


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]  # lower-case, with the dot; longest match wins (".compressed.ply" over ".ply")
    read: Callable[..., GaussianScene] | None
    write: Callable[..., None] | None = None
    sniff: Callable[[bytes], bool] | None = None  # recognises the format from the first 64 bytes


# Order matters for sniffing: the first format whose sniff() accepts the head wins.
# Both PLY entries read through `read_compressed_ply`, which tells the two layouts apart from the header, so
# a compressed PLY named `.ply` (or an INRIA one named `.compressed.ply`) still loads.
FORMATS: list[Format] = [
    Format("ply", (".ply",), read_compressed_ply, write_ply, is_ply),
    Format("compressed-ply", (".compressed.ply",), read_compressed_ply, write_compressed_ply, is_ply),
    Format("spz", (".spz",), read_spz, write_spz, is_spz),  # v4 sniffs as NGSP; gzip v2/v3 go by extension
    Format("sog", (".sog",), read_sog, write_sog, is_sog),
    Format("sog folder", ("meta.json",), read_sog),  # SOG unbundled: its meta.json beside the textures
    # a zip too: a .pt named so is read as one (load_scene: the extension's format sniffs the same container)
    Format("gsplat checkpoint", (".pt",), read_gsplat_checkpoint, None, is_zip),
    Format("nerfstudio checkpoint", (".ckpt",), read_nerfstudio_checkpoint, None, is_zip),
    Format("glb", (".glb",), read_glb, write_glb, is_glb),  # glTF binary with KHR_gaussian_splatting
    Format("splat", (".splat",), read_splat, write_splat),
    Format("ksplat", (".ksplat",), read_ksplat),  # GaussianSplats3D's: no magic bytes; read only (legacy)
    Format("folder", ("/",), read_folder),  # unbundled SOG (meta.json) or trainer output folder
]


def format_for_path(path: str, *, for_write: bool = False) -> Format:
    """The format an output (or input without magic) path names by its extension."""
    lower = path.lower()
    best: tuple[int, Format] | None = None
    for fmt in FORMATS:
        for ext in fmt.extensions:
            if lower.endswith(ext) and (best is None or len(ext) > best[0]):
                best = (len(ext), fmt)
    writable = ", ".join(sorted({e for f in FORMATS for e in f.extensions if f.write}))
    if best is None:
        known = sorted({e for f in FORMATS for e in f.extensions if (f.write or not for_write)})
        what = "write" if for_write else "read"
        raise SceneFormatError(f"{path}: unknown scene format (can {what}: {', '.join(known)})")
    if for_write and best[1].write is None:
        raise SceneFormatError(f"{path}: {best[1].name} is read-only in warpsplat (can write: {writable})")
    name = os.path.basename(lower)
    if for_write and len(name) == best[0]:  # "out/.ply" would be a hidden file named after its format alone
        raise SceneFormatError(f"{path}: names only the format: give the file a name (e.g. scene{name})")
    return best[1]


def load_scene(path: str | os.PathLike, **options) -> GaussianScene:
    """Read any supported scene file (or scene folder) into a GaussianScene.

    Raises:
        FileNotFoundError: the path does not exist.
        SceneFormatError: the file is unreadable as a scene (message names the file and what was wrong).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    try:
        return _load_scene(path, **options)
    except OSError as e:
        if e.filename is None and e.strerror:  # a read that failed (a disk's EIO) names no file: the scene's
            raise naming_output(e, path) from None
        raise


def _load_scene(path: str, **options) -> GaussianScene:
    if os.path.isdir(path):
        for fmt in FORMATS:
            if "/" in fmt.extensions and fmt.read is not None:  # folder readers register the extension "/"
                return fmt.read(path, **options)
        raise SceneFormatError(f"{path}: is a folder, and no folder format is known")
    with open_regular(path) as f:  # a pipe or a device is refused here, before anything blocks
        head = f.read(64)
    if not head:
        raise SceneFormatError(f"{path}: file is empty")
    lower = path.lower()
    by_ext = None
    with contextlib.suppress(SceneFormatError):
        by_ext = format_for_path(path)
    # Magic bytes beat the extension, except where the extension names a more specific variant of the
    # same container (".compressed.ply" is a PLY by magic).
    for fmt in FORMATS:
        if fmt.sniff is not None and fmt.read is not None and fmt.sniff(head):
            if by_ext is not None and by_ext.sniff is not None and by_ext.sniff(head):
                fmt = by_ext
            return fmt.read(path, **options)
    if by_ext is None or by_ext.read is None:
        raise SceneFormatError(f"{path}: unknown scene format (extension {os.path.splitext(lower)[1]!r})")
    return by_ext.read(path, **options)


def save_scene(scene: GaussianScene, path: str | os.PathLike, **options) -> None:
    """Write a scene in the format its extension names (atomically: temp file + rename)."""
    path = os.fspath(path)
    fmt = format_for_path(path, for_write=True)
    assert fmt.write is not None
    fmt.write(scene, path, **options)
