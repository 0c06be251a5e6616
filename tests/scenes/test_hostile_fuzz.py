"""Property-based fuzzing of the hostile-file classes (tests/reliability/hostile.py). Each class has a test that
draws variants of its files with hypothesis, under a fixed seed (the class number), and whose @example is the
reported case itself (the seed of the class). Every variant must end in a one-line `SceneFormatError` naming the
file, or load with exactly the valid Gaussians kept; numpy may not warn (RuntimeWarnings are errors here).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st

from kernels.reference import eval_sh
from renderer.prepare import prepare_covariances
from scenes import SceneFormatError, load_scene
from scenes.compressed_ply import write_compressed_ply
from scenes.gaussians import INVALID_WHAT, MAX_LOG_SCALE, MAX_OPACITY_LOGIT
from scenes.limits import MEMORY_CAP_ENV, MIN_BYTES_PER_GAUSSIAN
from scenes.ply import write_ply
from scenes.rotate import turn_up
from tests.reliability import hostile

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def folder_and_cap(cap: str | None = None):
    """A fresh folder, the memory cap set (or unset) for the block, and numpy warnings as errors."""
    before = os.environ.get(MEMORY_CAP_ENV)
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # the dropped-Gaussian notice: counted by the tests instead
        if cap is None:
            os.environ.pop(MEMORY_CAP_ENV, None)
        else:
            os.environ[MEMORY_CAP_ENV] = cap
        try:
            yield Path(d)
        finally:
            if before is None:
                os.environ.pop(MEMORY_CAP_ENV, None)
            else:
                os.environ[MEMORY_CAP_ENV] = before


def refused(path: Path, match: str = "") -> str:
    with pytest.raises(SceneFormatError, match=match) as e:
        load_scene(path)
    message = str(e.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


# ------------------------------------------------------------------ 1. infinite opacity logits are kept


@seed(1)
@FUZZ
@given(n=st.integers(1, 400), data=st.data(), compressed=st.booleans())
@example(n=300, data=None, compressed=False)  # the reported case: +inf and -inf logits, as splat-transform writes
def test_1_infinite_opacity_logits_keep_every_gaussian(n, data, compressed):
    rows = list(range(0, n, 7)) if data is None else data.draw(st.lists(st.integers(0, n - 1), unique=True))
    signs = [1.0 if i % 2 else -1.0 for i in range(len(rows))]
    scene = hostile.cloud(n)
    scene.opacity_logits[rows] = torch.tensor(signs) * float("inf")
    with folder_and_cap() as d:
        path = d / ("a.compressed.ply" if compressed else "a.ply")
        (write_compressed_ply if compressed else write_ply)(scene, path)
        back = load_scene(path)
    assert len(back) == n and torch.isfinite(back.opacity_logits).all()
    if not compressed:  # compressed PLY stores alpha in a byte: +-inf come back as its clamped ends
        assert back.opacity_logits[rows].tolist() == [s * MAX_OPACITY_LOGIT for s in signs]


# ------------------------------------------------------------------ 2. SPZ v4 expansion


@seed(2)
@FUZZ
@given(n=st.integers(1, 1 << 27), degree=st.integers(0, 3), cut=st.sampled_from([0, 0, 1, 7, 100, 4096]))
@example(n=8_000_000, degree=3, cut=0)  # the reported 16 kB file: 2.4 GB to read
@example(n=1 << 27, degree=3, cut=0)  # the reported 266 kB file: 40 GB
def test_2_spz_v4_reads_what_its_streams_hold_within_the_cap(n, degree, cut):
    with folder_and_cap("16M") as d:
        path = hostile.spz_v4(d, n=n, degree=degree, cut=cut)
        need = n * 4 * (11 + 3 * (degree + 1) ** 2) + path.stat().st_size + n * (20 + 3 * ((degree + 1) ** 2 - 1))
        if cut or need > 16 << 20 or path.stat().st_size < n * MIN_BYTES_PER_GAUSSIAN:
            refused(path, "zstd|truncated|corrupt|inflates|needs about|a trained scene takes at least")
        else:
            assert len(load_scene(path)) == n


# ------------------------------------------------------------------ 3. SOG expansion


@seed(3)
@FUZZ
@given(count=st.integers(1, 5000), declared=st.integers(1, 20_000), actual=st.integers(20_001, 1 << 20))
@example(count=16, declared=14_000, actual=1 << 20)  # the reported member: declares 14 kB, holds far more
def test_3_sog_counts_and_member_sizes(count, declared, actual):
    with folder_and_cap() as d:
        assert len(load_scene(hostile.sog(d, count=count, noise=True))) == count
        refused(hostile.sog_lying_member(d, declared=declared, actual=actual), "means_l.webp")


# ------------------------------------------------------------------ 4. tracebacks


@seed(4)
@FUZZ
@given(depth=st.integers(1, 200_000), opener=st.sampled_from(["[", '{"a":', '[{"b":']))
@example(depth=100_000, opener="[")  # the reported meta.json
def test_4_deeply_nested_meta_json_is_an_error(depth, opener):
    with folder_and_cap() as d:
        path = d / "n.sog"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("meta.json", opener * depth)
        refused(path, "meta.json")


# ------------------------------------------------------------------ 5. special files


def _without_blocking(fn):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "blocked"
    return out.get("r")


@seed(5)
@FUZZ
@given(kind=st.sampled_from(["fifo", "dev-zero", "dev-null", "dev-urandom"]),
       ext=st.sampled_from([".ply", ".compressed.ply", ".spz", ".splat", ".sog", ".glb", ".ksplat", ".pt",
                            ".ckpt", ".bin"]))  # fmt: skip
@example(kind="fifo", ext=".ply")  # the reported `mkfifo f.ply`
@example(kind="dev-zero", ext=".spz")  # the reported `ln -s /dev/zero z.spz`
def test_5_only_regular_files_are_read(kind, ext):
    with folder_and_cap() as d:
        path = d / f"s{ext}"
        if kind == "fifo":
            os.mkfifo(path)
        else:
            os.symlink("/dev/" + kind[4:], path)
        message = _without_blocking(lambda: refused(path, "not a regular file"))
    assert ("named pipe" if kind == "fifo" else "character device") in message


# ------------------------------------------------------------------ 6. overflowing values


big = st.floats(min_value=1.9e19, max_value=3.4e38) | st.floats(min_value=-3.4e38, max_value=-1.9e19)


@seed(6)
@FUZZ
# 44.361: the float32 value just above MAX_LOG_SCALE (44.36042 in float32); 88: exp finite, its square not
@given(n=st.integers(1, 200), data=st.data(), log_scale=st.floats(44.361, 3.4e38), position=big)
@example(n=64, data=None, log_scale=89.0, position=3e38)  # the first reported values
@example(n=64, data=None, log_scale=88.0, position=3e38)  # the second: exp(88) is finite, its square is not
def test_6_overflowing_activations_are_dropped_and_counted(n, data, log_scale, position):
    if data is None:  # the reported cases: the scale in row 0, the position in row 1 (each must be caught alone)
        rows_scale, rows_pos = [0], [1]
    else:
        rows_scale = data.draw(st.lists(st.integers(0, n - 1), max_size=5))
        rows_pos = data.draw(st.lists(st.integers(0, n - 1), max_size=5))
    scene = hostile.cloud(n)
    scene.log_scales[rows_scale, 1] = log_scale
    scene.means[rows_pos, 2] = position
    bad = len(set(rows_scale) | set(rows_pos))
    with folder_and_cap() as d:
        write_ply(scene, d / "o.ply")
        if bad == n:
            refused(d / "o.ply", f"all {n:,} Gaussians have invalid values")
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            back = load_scene(d / "o.ply")
    assert len(back) == n - bad
    assert torch.isfinite(prepare_covariances(back.quats, back.log_scales)).all()  # every kept Gaussian drawable
    notes = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert notes == ([f"{d / 'o.ply'}: dropped {bad} of {n} Gaussians with invalid values ({INVALID_WHAT})"]
                     if bad else [])  # fmt: skip


@seed(60)
@FUZZ
@given(max_scale=st.floats(44.361, 3.4e38), chunk=st.integers(0, 1))
@example(max_scale=1e30, chunk=0)  # the reported compressed-PLY chunk
def test_6_overflowing_compressed_ply_chunks_are_dropped_and_counted(max_scale, chunk):
    scene = hostile.cloud(512)
    with folder_and_cap() as d:
        path = d / "c.compressed.ply"
        write_compressed_ply(scene, path, sort=False)
        data = bytearray(path.read_bytes())
        body = data.index(b"end_header\n") + len(b"end_header\n")
        struct.pack_into("<f", data, body + (18 * chunk + 9) * 4, max_scale)  # max_scale_x of the chunk
        path.write_bytes(bytes(data))
        back = load_scene(path)
    # expected: the rows of that chunk whose decoded log-scale x, lerp(min, max, t), is above MAX_LOG_SCALE
    lo = np.frombuffer(data, "<f4", count=1, offset=body + (18 * chunk + 6) * 4)[0]
    packed = np.frombuffer(data, "<u4", count=512 * 4, offset=body + 2 * 18 * 4).reshape(512, 4)[:, 2]
    t = ((packed >> 21) & 2047).astype(np.float32) / np.float32(2047)
    with np.errstate(over="ignore"):
        x = lo * (1 - t) + np.float32(max_scale) * t
        overflow = (np.arange(512) // 256 == chunk) & (x > np.float32(MAX_LOG_SCALE))
    assert len(back) == 512 - int(overflow.sum())
    assert torch.isfinite(prepare_covariances(back.quats, back.log_scales)).all()  # every kept Gaussian drawable


# ------------------------------------------------------------------ 7. trailing bytes


@seed(7)
@FUZZ
@given(extra=st.binary(min_size=1, max_size=4096), ascii_values=st.integers(1, 50))
@example(extra=b"\0" * 192, ascii_values=1)  # the reported file: uchar declared where a float is (3 bytes a row)
def test_7_nothing_may_follow_the_declared_elements(extra, ascii_values):
    with folder_and_cap() as d:
        write_ply(hostile.cloud(64), d / "a.ply")
        (d / "b.ply").write_bytes((d / "a.ply").read_bytes() + extra)
        refused(d / "b.ply", f"PLY body has {len(extra):,} bytes after its declared elements")
        refused(hostile.misdeclared_ply(d), "192 bytes after its declared elements")
        from tests.scenes.test_limits import _ascii_ply

        (d / "c.ply").write_text(_ascii_ply(hostile.cloud(5), " 1" * ascii_values))
        refused(d / "c.ply", "values after its declared elements")


# ------------------------------------------------------------------ 8. messages name the file


@seed(8)
@FUZZ
@given(fmt=st.sampled_from(["ply", "compressed-ply", "spz-v3", "spz-v4", "sog", "splat"]), name=st.text(
    alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12))  # fmt: skip
@example(fmt="ply", name="empty")  # the reported "ply scene: holds no Gaussians"
def test_8_a_file_declaring_no_gaussians_is_named(fmt, name):
    with folder_and_cap() as d:
        if fmt == "ply":
            path = hostile.empty_ply(d).rename(d / f"{name}.ply")
        elif fmt == "compressed-ply":
            path = d / f"{name}.compressed.ply"
            write_compressed_ply(hostile.cloud(4), path)
            path.write_bytes(path.read_bytes().split(b"end_header\n")[0].replace(b"vertex 4", b"vertex 0")
                             .replace(b"chunk 1", b"chunk 0") + b"end_header\n")  # fmt: skip
        elif fmt.startswith("spz"):
            path = hostile.spz_v4(d, n=1, name=f"{name}.spz")
            data = bytearray(path.read_bytes())
            data[8:12] = bytes(4)  # numPoints 0
            if fmt == "spz-v3":
                import gzip

                data = bytearray(gzip.compress(struct.pack("<IIIBBBB", 0x5053474E, 3, 0, 0, 12, 0, 0)))
            path.write_bytes(bytes(data))
        elif fmt == "sog":
            path = d / f"{name}.sog"
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("meta.json", json.dumps({"version": 2, "count": 0}))
        else:
            path = d / f"{name}.splat"
            path.write_bytes(b"")
        refused(path, "no scene|empty")


# ------------------------------------------------------------------ 9. stale temporaries


@seed(9)
@FUZZ
@given(base=st.text(alphabet=st.characters(categories=["L", "N"], include_characters="._-"), min_size=1,
                    max_size=20).filter(lambda s: s not in (".", "..")),
       chunk=st.booleans())  # fmt: skip
@example(base="scene.ply", chunk=False)
def test_9_only_stale_temporaries_of_the_output_are_removed(base, chunk):
    import subprocess
    import sys

    from scenes.atomic import remove_stale_temps

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    tail = ".chunk0.part" if chunk else ".part"
    with folder_and_cap() as d:
        stale = f".{base}.{gone.pid}.abc_1234{tail}"
        kept = [f".{base}.{os.getppid()}.abc_1234{tail}", f".{base}x.{gone.pid}.abc_1234{tail}",
                f".{base}.{gone.pid}.abc_123{tail}", f"{base}"]  # fmt: skip
        for n in [stale, *kept]:
            (d / n).write_bytes(b"")
        assert remove_stale_temps(d / base) == [stale]
        assert sorted(os.listdir(d)) == sorted(kept)


# ------------------------------------------------------------------ 10. misleading messages


@seed(10)
@FUZZ
@given(members=st.lists(st.sampled_from(["a.npy", "b.npy", "x/meta.txt", "readme"]), min_size=1, unique=True),
       ext=st.sampled_from([".npz", ".zip", ".sog", ".bin"]))  # fmt: skip
@example(members=["means.npy", "scales.npy"], ext=".npz")  # the reported test_garden.npz
def test_10_a_zip_without_meta_json_is_not_called_a_sog(members, ext):
    with folder_and_cap() as d:
        path = d / f"archive{ext}"
        with zipfile.ZipFile(path, "w") as z:
            for m in members:
                z.writestr(m, b"x")
        message = refused(path)
    if ext == ".sog":
        assert message.endswith(".sog archive has no meta.json at its root")
    else:
        assert "unknown scene format (a zip archive without meta.json, so not a SOG scene)" in message


# ------------------------------------------------------------------ 11. convert --up


@seed(11)
@FUZZ
@given(up=st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda v: np.linalg.norm(v) > 1e-3))
@example(up=(0.0, 1.0, 0.0))  # splat-transform's raw SPZ frame: +y up
def test_11_turned_scenes_keep_their_colours(up):
    from scenes.rotate import rotation_to_up

    scene = hostile.cloud(32, degree=3)
    out = turn_up(scene, up)
    R = torch.as_tensor(rotation_to_up(up)[0], dtype=torch.float32)
    dirs = torch.nn.functional.normalize(torch.randn(32, 3, generator=torch.Generator().manual_seed(0)), dim=1)
    assert torch.allclose(eval_sh(scene.sh, dirs, 3), eval_sh(out.sh, dirs @ R.T, 3), atol=1e-4)
