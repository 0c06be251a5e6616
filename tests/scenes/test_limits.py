"""Reading limits (scenes/limits.py): the memory cap and its default, refusal before allocating, zstd's expansion
bound, regular files only, declared zip member sizes, and the trailing-bytes rule of binary and ASCII PLY."""

from __future__ import annotations

import socket
import threading
import zipfile

import numpy as np
import pytest
import torch

import scenes.limits as limits
from scenes import SceneFormatError, load_scene
from scenes.ply import write_ply
from tests.reliability import hostile

GB = 1 << 30


def _refused(path, match: str) -> str:
    with pytest.raises(SceneFormatError, match=match) as e:
        load_scene(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    return str(e.value)


# ------------------------------------------------------------------ the memory cap


def test_default_cap_is_the_free_memory(monkeypatch, tmp_path):
    monkeypatch.delenv(limits.MEMORY_CAP_ENV, raising=False)
    monkeypatch.setattr(limits, "mem_available", lambda: 40 << 20)
    assert limits.memory_cap() == (40 << 20, "the free memory")
    # 200k Gaussians at SH 3 (an honest 1.8 MB file) need 47 MB of arrays plus 13 MB of inflated streams:
    # refused with 40 MiB free...
    path = hostile.spz_gzip(tmp_path, n=200_000, degree=3)
    message = _refused(path, r"needs about 0\.06 GB of memory to read, more than the 0\.04 GB cap")
    assert "(the free memory; set WARPSPLAT_MAX_MEMORY to change it)" in message
    # ... and a small honest file of the same kind loads
    small = hostile.spz_gzip(tmp_path, n=1000, degree=1, name="small.spz")
    assert len(load_scene(small)) == 1000


def test_cap_from_the_environment(monkeypatch):
    for text, cap in [("8G", 8 * GB), ("512M", 512 << 20), ("1.5g", int(1.5 * GB)), ("123456", 123456),
                      ("64MiB", 64 << 20), ("none", None)]:  # fmt: skip
        monkeypatch.setenv(limits.MEMORY_CAP_ENV, text)
        assert limits.memory_cap()[0] == cap, text
    monkeypatch.setenv(limits.MEMORY_CAP_ENV, "lots")
    with pytest.raises(SceneFormatError, match="WARPSPLAT_MAX_MEMORY='lots': expected a size such as 8G"):
        limits.memory_cap()
    monkeypatch.setattr(limits, "mem_available", lambda: None)  # free memory unknown: no cap
    monkeypatch.delenv(limits.MEMORY_CAP_ENV)
    assert limits.memory_cap()[0] is None


@pytest.mark.parametrize("make", ["ply", "compressed", "splat", "spz", "sog"])
def test_every_reader_refuses_before_allocating(make, monkeypatch, tmp_path):
    """With a cap below what the file's count needs, no scene-sized tensor is ever allocated."""
    from scenes import save_scene

    scene = hostile.cloud(4096, degree=1)
    if make == "sog":
        path = hostile.sog(tmp_path, count=4096, noise=True)
    else:
        path = tmp_path / {"ply": "a.ply", "compressed": "a.compressed.ply", "splat": "a.splat", "spz": "a.spz"}[make]
        save_scene(scene, path)
    monkeypatch.setenv(limits.MEMORY_CAP_ENV, "100k")
    sizes = []
    real_empty, real_zeros = torch.empty, torch.zeros

    def spy(alloc):
        def f(*shape, **kw):
            t = alloc(*shape, **kw)
            sizes.append(t.numel())
            return t

        return f

    monkeypatch.setattr(torch, "empty", spy(real_empty))
    monkeypatch.setattr(torch, "zeros", spy(real_zeros))
    _refused(path, "more than the 0.00 GB cap")
    assert max(sizes, default=0) < 4096, sizes


# ------------------------------------------------------------------ expansion


def test_zstd_streams_cannot_declare_more_than_zstd_can_expand(tmp_path):
    """The TOC's sizes are checked against 32768 x the compressed size (the largest RLE expansion) before any
    memory is reserved; an honest maximal expansion passes (beside positions as incompressible as a trained
    scene's: with every stream at zstd's largest expansion, the file is too small for its count)."""
    _refused(hostile.spz_v4(tmp_path, n=1 << 27, cut=100), "more than zstd can expand to")
    assert len(load_scene(hostile.spz_v4(tmp_path, n=300_000, degree=0, name="rle.spz", noise=True))) == 300_000
    _refused(hostile.spz_v4(tmp_path, n=300_000, degree=0, name="all-rle.spz"), "a trained scene takes at least 8")


# ------------------------------------------------------------------ what a compressed file's size can hold


@pytest.mark.parametrize("fmt", ["spz-v4", "spz-gzip", "sog"])
def test_a_count_is_judged_against_the_file_size_before_anything_is_decoded(fmt, monkeypatch, tmp_path):
    """At most file bytes / MIN_BYTES_PER_GAUSSIAN Gaussians, whatever the machine: a file of constant data that
    honestly declares more (8M in 16 kB, 20k in 0.5 kB, 16.7M in 3 kB) is refused with no memory cap at all,
    before its streams are inflated past the header or a texture is decoded."""
    import scenes.sog as sog
    import scenes.spz as spz

    monkeypatch.setenv(limits.MEMORY_CAP_ENV, "none")

    def decoding(*args, **kwargs):  # the step after the checks: reaching it is the failure
        raise AssertionError("decoding began")

    monkeypatch.setattr(spz, "_check_memory", decoding)
    monkeypatch.setattr(sog, "_texture", decoding)
    bomb = {"spz-v4": lambda: hostile.spz_v4(tmp_path), "spz-gzip": lambda: hostile.spz_gzip(tmp_path, noise=False),
            "sog": lambda: hostile.sog(tmp_path, count=16_700_000)}[fmt]()  # fmt: skip
    _refused(bomb, r"declares [\d,]+ Gaussians in a [\d,]+-byte file, [\d.e-]+ bytes each; a trained scene takes at "
                   r"least 8 in any compressed format")  # fmt: skip


def test_the_count_floor_at_its_boundary():
    n = 123_457
    limits.check_compact(n, n * limits.MIN_BYTES_PER_GAUSSIAN, "f.spz", "count")
    with pytest.raises(SceneFormatError, match=r"f\.spz: count declares 123,457 Gaussians in a 987,655-byte file"):
        limits.check_compact(n, n * limits.MIN_BYTES_PER_GAUSSIAN - 1, "f.spz", "count")


def test_zip_member_is_read_up_to_its_declared_size(tmp_path, monkeypatch):
    """A member declaring 14 kB is asked for 14 kB: zipfile inflates up to what is asked before it checks."""
    asked = []
    real_read = zipfile.ZipExtFile.read
    monkeypatch.setattr(zipfile.ZipExtFile, "read", lambda self, n=-1: asked.append(n) or real_read(self, n))
    _refused(hostile.sog_lying_member(tmp_path, actual=1 << 20), "means_l.webp' is corrupt")
    assert asked and max(asked) <= 14_000


# ------------------------------------------------------------------ regular files only


def _in_thread(fn, timeout: float = 20):
    """Run fn in a daemon thread; fail (rather than hang the suite) when it blocks."""
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as e:  # handed to the test
            result["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"still blocked after {timeout} s"
    if "error" in result:
        raise result["error"]
    return result.get("value")


def test_special_files_are_refused_without_blocking(tmp_path):
    fifo = hostile.fifo(tmp_path)
    with pytest.raises(SceneFormatError, match=r"f\.ply: is a named pipe \(FIFO\), not a regular file"):
        _in_thread(lambda: load_scene(fifo))
    zero = hostile.dev_zero_link(tmp_path)
    with pytest.raises(SceneFormatError, match=r"z\.spz: is a character device, not a regular file"):
        _in_thread(lambda: load_scene(zero))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "s.splat"))
        with pytest.raises(SceneFormatError, match=r"s\.splat: is a socket or device, not a regular file"):
            load_scene(tmp_path / "s.splat")


def test_special_files_inside_scene_folders_are_refused(tmp_path):
    """A FIFO where a SOG folder has a texture, or where a trainer folder has its point_cloud.ply."""
    sog = tmp_path / "sog"
    sog.mkdir()
    with zipfile.ZipFile(hostile.sog(tmp_path, count=16)) as z:
        z.extractall(sog)
    (sog / "quats.webp").unlink()
    hostile.fifo(sog, "quats.webp")
    with pytest.raises(SceneFormatError, match=r"quats\.webp: is a named pipe"):
        _in_thread(lambda: load_scene(sog))
    it = tmp_path / "model" / "point_cloud" / "iteration_10"
    it.mkdir(parents=True)
    hostile.fifo(it, "point_cloud.ply")
    with pytest.raises(SceneFormatError, match="no iteration_N/point_cloud.ply"):  # not a file: not an iteration
        _in_thread(lambda: load_scene(tmp_path / "model"))


# ------------------------------------------------------------------ nothing after the body


def test_binary_ply_with_trailing_bytes_is_refused(tmp_path):
    _refused(hostile.misdeclared_ply(tmp_path), r"PLY body has 192 bytes after its declared elements \(the header's "
                                               r"property types or counts do not match the data\)")  # fmt: skip
    good = tmp_path / "good.ply"
    write_ply(hostile.cloud(8), good)
    (tmp_path / "tail.ply").write_bytes(good.read_bytes() + b"\n")
    _refused(tmp_path / "tail.ply", "1 bytes after its declared elements")


def _ascii_ply(scene, extra: str = "") -> str:
    names = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity"] + [f"scale_{i}" for i in range(3)]
    names += [f"rot_{i}" for i in range(4)]
    cols = torch.cat([scene.means, scene.sh[:, 0], scene.opacity_logits[:, None], scene.log_scales, scene.quats], 1)
    rows = "\n".join(" ".join(f"{v:.9g}" for v in r) for r in cols.tolist())
    header = f"ply\nformat ascii 1.0\nelement vertex {len(scene)}\n"
    return header + "".join(f"property float {n}\n" for n in names) + "end_header\n" + rows + "\n" + extra


def test_ascii_ply_parsed_in_chunks_and_trailing_values_refused(tmp_path, monkeypatch):
    import scenes.ply as ply

    scene = hostile.cloud(300)
    (tmp_path / "a.ply").write_text(_ascii_ply(scene))
    monkeypatch.setattr(ply, "ASCII_CHUNK_BYTES", 1000)  # many chunks, rows split across them
    back = load_scene(tmp_path / "a.ply")
    assert torch.equal(back.means, scene.means) and torch.equal(back.quats, scene.quats)
    (tmp_path / "b.ply").write_text(_ascii_ply(scene, "1.5 2.5\n"))
    _refused(tmp_path / "b.ply", "ASCII PLY body holds values after its declared elements")
    (tmp_path / "c.ply").write_text(_ascii_ply(scene).rsplit("\n", 2)[0] + "\n")  # the last row missing
    _refused(tmp_path / "c.ply", r"PLY body is truncated in element vertex \(row 299\)")
    (tmp_path / "d.ply").write_text(_ascii_ply(scene).replace("end_header\n", "end_header\nx", 1))
    _refused(tmp_path / "d.ply", "ASCII PLY body holds a non-number")


def test_the_float32_fast_path_and_the_converting_path_agree(tmp_path):
    """Non-float32 properties (a double, a big-endian body) go through the same chunked copy as float32 ones."""
    scene = hostile.cloud(100, degree=2)
    write_ply(scene, tmp_path / "f.ply")
    data = (tmp_path / "f.ply").read_bytes()
    head, body = data.split(b"end_header\n", 1)
    big = head.replace(b"binary_little_endian", b"binary_big_endian") + b"end_header\n"
    big += np.frombuffer(body, "<f4").astype(">f4").tobytes()
    (tmp_path / "big.ply").write_bytes(big)
    for name in ("f.ply", "big.ply"):
        back = load_scene(tmp_path / name)
        assert torch.equal(back.sh, scene.sh) and torch.equal(back.means, scene.means), name
