"""Seeded mutation fuzzing over real files of every format: truncation, byte flips (header-biased) and
count lies. Every case must end in a `SceneFormatError` or a valid scene (sound structure, every
Gaussian finite): never another exception, a numpy RuntimeWarning, a crash, or half a scene.

CASES_PER_FILE x len(FILES) cases run (printed with -s); the whole test stays around 30 s on one core.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import struct
import time
import warnings
import zipfile

import numpy as np
import pytest

from scenes import SceneFormatError, load_scene
from tests.conftest import real_scene as scene

CASES_PER_FILE = 40
FILES = [
    # bundled (tests/data): every format; the playbot_crop files are warpsplat's, the others other tools'
    "test-splat.3-points-from-train.ply",
    "test-splat.3-points-from-train.splat",
    "test-splat.3-points-from-train.spz",
    "playbot_crop.ply",
    "playbot_crop.compressed.ply",
    "playbot_crop.spz",
    "playbot_lod2.sog",
    "playbot_crop.glb",
    "playbot_crop.sog",
    "playbot_crop.ksplat",  # GaussianSplats3D's, from the crop (tests/data/make_ksplat.py)
    "playbot_crop.level2.ksplat",
    # written by other tools in those two formats, and an SOG of splat-transform's: not bundled (licences)
    "guitar.compressed.ply",
    "biker.spz",
    "angel.sog",
]


def _lie_about_count(name: str, data: bytes, rng: np.random.Generator) -> bytes:
    """Rewrite the declared Gaussian count (leaving the body alone)."""

    def new(n: int) -> int:
        return int(rng.choice([0, 1, n - 1, n + 1, 2 * n, n + 256, 2**31 - 1, 2**32 - 1]))

    if name.endswith(".ply"):
        field = rng.choice(["vertex", "chunk", "sh"])
        return re.sub(rf"element {field} (\d+)".encode(), lambda m: f"element {field} {new(int(m.group(1)))}".encode(),
                      data, count=1)  # fmt: skip
    if name.endswith(".spz"):
        if data[:2] == b"\x1f\x8b":
            p = bytearray(gzip.decompress(data))
            p[8:12] = struct.pack("<I", new(struct.unpack_from("<I", p, 8)[0]) % 2**32)
            return gzip.compress(bytes(p))
        p = bytearray(data)
        p[8:12] = struct.pack("<I", new(struct.unpack_from("<I", p, 8)[0]) % 2**32)
        return bytes(p)
    if name.endswith(".sog"):
        src = zipfile.ZipFile(io.BytesIO(data))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                body = src.read(info)
                if info.filename == "meta.json":
                    meta = json.loads(body)
                    meta["count"] = new(meta["count"])
                    body = json.dumps(meta).encode()
                dst.writestr(info.filename, body)
        return out.getvalue()
    if name.endswith(".glb"):  # every accessor's count, the binary chunk left alone
        from tests.scenes.test_glb import _glb, _parse

        doc, binary = _parse(data)
        for accessor in doc["accessors"]:
            accessor["count"] = new(accessor["count"])
        return _glb(doc, binary)
    if name.endswith(".ksplat"):  # the header's count, or the first section's
        p = bytearray(data)
        at = int(rng.choice([16, 4096]))
        p[at : at + 4] = struct.pack("<I", new(struct.unpack_from("<I", p, at)[0]) % 2**32)
        return bytes(p)
    return data[: len(data) - int(rng.integers(1, 32))]  # .splat has no count: break its 32-byte records


def _mutate(name: str, data: bytes, rng: np.random.Generator) -> tuple[str, bytes]:
    kind = ["truncate", "flip", "flip", "count"][int(rng.integers(0, 4))]
    if kind == "truncate":
        cut = int(rng.integers(0, min(len(data), 2048))) if rng.random() < 0.5 else int(rng.integers(0, len(data)))
        return kind, data[:cut]
    if kind == "flip":
        b = bytearray(data)
        head = rng.random() < 0.6  # structure lives in headers, TOCs and zip directories at either end
        for _ in range(int(rng.integers(1, 9))):
            if head:
                i = int(rng.integers(0, min(len(b), 512))) if rng.random() < 0.5 else len(b) - 1 - int(
                    rng.integers(0, min(len(b), 512)))  # fmt: skip
            else:
                i = int(rng.integers(0, len(b)))
            b[i] ^= 1 << int(rng.integers(0, 8))
        return kind, bytes(b)
    return kind, _lie_about_count(name, data, rng)


def _check(path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropped-Gaussian warnings are an allowed outcome
        warnings.simplefilter("error", RuntimeWarning)  # numpy warnings are not: they would reach the user
        try:
            s = load_scene(path)
        except SceneFormatError as e:
            assert str(path) in str(e) or path.name in str(e), f"error does not name the file: {e}"
            return "error"
    s.validate()
    assert len(s) > 0
    assert not s.invalid_mask().any(), "a loaded scene kept invalid Gaussians"
    return "scene"


def fuzz(name: str, data: bytes, rng: np.random.Generator, folder, cases: int) -> dict[str, int]:
    """`cases` mutations of file `name`'s bytes, each written to `folder` and checked (`_check`): how many of each
    mutation kind ended in an error and how many in a valid scene. Any other outcome fails, naming the case."""
    outcomes: dict[str, int] = {}
    for case in range(cases):
        kind, mutated = _mutate(name, data, rng)
        path = folder / f"case{case}_{name}"
        path.write_bytes(mutated)
        try:
            result = _check(path)
        except Exception as e:
            raise AssertionError(f"{name} case {case} ({kind}): {type(e).__name__}: {e}") from e
        outcomes[f"{kind}->{result}"] = outcomes.get(f"{kind}->{result}", 0) + 1
        path.unlink()
    return outcomes


@pytest.mark.parametrize("name", FILES)
def test_mutated_real_files_fail_cleanly(tmp_path, name):
    rng = np.random.default_rng(sum(name.encode()))  # seeded per file: every run repeats the same cases
    t0 = time.perf_counter()
    outcomes = fuzz(name, scene(name).read_bytes(), rng, tmp_path, CASES_PER_FILE)
    print(f"\nfuzz {name}: {CASES_PER_FILE} cases in {time.perf_counter() - t0:.1f} s: {outcomes}")
