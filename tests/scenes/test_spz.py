"""SPZ: the RUB <-> RDF frame change, the v2 reader on bytes built from the documented layout, v3/v4 round
trips with the bound per field, and every structural error."""

from __future__ import annotations

import gzip
import math
import struct

import numpy as np
import pytest
import torch
import zstandard

from kernels.reference import eval_sh
from scenes import SceneFormatError, load_scene, make_scene
from scenes.spz import MAGIC, flip_rub_rdf, read_spz, write_spz
from tests.analytic import quat_matrix
from tests.conftest import bundled

F = torch.tensor([1.0, -1.0, -1.0])  # RUB <-> RDF: diag(1, -1, -1), a 180-degree rotation about x


def _rotmat(q: torch.Tensor) -> torch.Tensor:
    """[N, 3, 3] rotations of the quaternions (w, x, y, z) from their action v -> q v q* (tests/analytic.py)."""
    return torch.from_numpy(quat_matrix(q.double().numpy()))


def test_frame_change_flips_sh_and_quaternions_consistently():
    """Colour seen along direction d in one frame equals colour along F d in the other; R -> F R F."""
    g = torch.Generator().manual_seed(0)
    n = 200
    sh = torch.randn(n, 16, 3, generator=g)
    quats = torch.randn(n, 4, generator=g)
    means = torch.randn(n, 3, generator=g)
    dirs = torch.nn.functional.normalize(torch.randn(n, 3, generator=g), dim=1)
    m2, q2, sh2 = means.numpy().copy(), quats.numpy().copy(), sh.numpy().copy()
    flip_rub_rdf(m2, q2, sh2)
    assert torch.equal(torch.from_numpy(m2), means * F)
    for degree in range(4):
        k = (degree + 1) ** 2
        a = eval_sh(sh[:, :k], dirs, degree)
        b = eval_sh(torch.from_numpy(sh2[:, :k]), dirs * F, degree)
        assert torch.allclose(a, b, atol=1e-5), degree
    Fm = torch.diag(F)
    assert torch.allclose(_rotmat(torch.from_numpy(q2)), Fm.double() @ _rotmat(quats) @ Fm.double(), atol=1e-5)


def _header(version: int, n: int, degree: int, frac: int = 12, flags: int = 0) -> bytes:
    return struct.pack("<IIIBBBB", MAGIC, version, n, degree, frac, flags, 0)


def test_v2_reader_on_bytes_built_from_the_layout(tmp_path):
    """Two Gaussians, SH degree 1, written by hand from the documented v2 layout (stored in RUB)."""
    pos = np.array([[1.5, -2.25, 0.125], [-3.0, 0.5, 2.0]])  # RUB
    fixed = np.rint(pos * 4096).astype(np.int64) & 0xFFFFFF
    pos_bytes = np.stack([fixed & 255, (fixed >> 8) & 255, fixed >> 16], -1).astype(np.uint8).tobytes()
    alphas = bytes([255, 51])  # sigmoid(opacity) * 255
    colours = bytes([128, 165, 90, 200, 60, 128])  # f_dc * 38.25 + 127.5
    scales = bytes([160, 144, 100, 0, 255, 170])  # (log + 10) * 16
    rot_xyz = np.array([[0.0, 0.0, 0.0], [0.6, 0.0, -0.8 * 0.5]])  # w >= 0 implied, xyz as q * 127.5 + 127.5
    rotations = np.rint(rot_xyz * 127.5 + 127.5).astype(np.uint8).tobytes()
    sh = np.array([[[0, 64, 128], [160, 192, 255], [1, 2, 3]], [[128] * 3] * 3], np.uint8)  # [N, 3 coeffs, RGB]
    body = _header(2, 2, 1, flags=1) + pos_bytes + alphas + colours + scales + rotations + sh.tobytes()
    path = tmp_path / "v2.spz"
    path.write_bytes(gzip.compress(body))
    s = load_scene(path)
    assert s.extras["spz version"] == 2 and s.antialiased and s.sh_degree == 1

    expect_means = pos * np.array([1, -1, -1])  # -> RDF
    assert np.allclose(s.means.numpy(), expect_means, atol=2**-13)
    assert np.allclose(torch.sigmoid(s.opacity_logits).numpy(), [1.0, 0.2], atol=1e-6)
    f_dc = (np.frombuffer(colours, np.uint8).reshape(2, 3) / 255 - 0.5) / 0.15
    assert np.allclose(s.sh[:, 0].numpy(), f_dc, atol=1e-6)
    assert np.allclose(s.log_scales.numpy(), np.frombuffer(scales, np.uint8).reshape(2, 3) / 16 - 10, atol=1e-6)
    xyz = np.frombuffer(rotations, np.uint8).reshape(2, 3) / 127.5 - 1
    wxyz = np.concatenate([np.sqrt(np.maximum(0, 1 - (xyz**2).sum(1)))[:, None], xyz], 1) * [1, 1, -1, -1]
    assert np.allclose(s.quats.numpy(), wxyz, atol=1e-6)
    rest = (sh.astype(np.float64) - 128) / 128 * np.array([-1, -1, 1])[None, :, None]  # band 1: y, z odd
    assert np.allclose(s.sh[:, 1:].numpy(), rest, atol=1e-6)


def _random_scene(n: int, degree: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(
        torch.rand(n, 3, generator=g) * 40 - 20,
        torch.randn(n, 4, generator=g),
        torch.rand(n, 3, generator=g) * 12 - 9,  # inside SPZ's [-10, 5.94]
        torch.randn(n, generator=g) * 3,
        torch.cat([torch.rand(n, 1, 3, generator=g) * 6 - 3, torch.rand(n, k - 1, 3, generator=g) * 1.8 - 0.9], 1),
        antialiased=True,
    )


@pytest.mark.parametrize("version", [3, 4])
def test_round_trip_within_quantisation(tmp_path, version):
    src = _random_scene(5000, 3)
    path = tmp_path / f"rt{version}.spz"
    write_spz(src, path, version=version)
    out = read_spz(path)
    assert out.extras["spz version"] == version and out.antialiased and out.sh_degree == 3
    # Bounds per field (module docstring): 24-bit positions with 12 fraction bits; log-scale steps of 1/16;
    # colour steps of 1/38.25; 8-bit alpha; 9-bit quaternion components (+ the rebuilt largest one);
    # SH band 1 in 5 bits (half bucket 1/32) and bands 2-3 in 4 bits (1/16), plus x * 128 rounding 1/256.
    assert (out.means - src.means).abs().max() <= 2**-13 + 1e-6
    assert (out.log_scales - src.log_scales).abs().max() <= 1 / 32 + 1e-6
    assert (out.sh[:, 0] - src.sh[:, 0]).abs().max() <= 0.5 / 38.25 + 1e-6
    assert (torch.sigmoid(out.opacity_logits) - torch.sigmoid(src.opacity_logits)).abs().max() <= 0.5 / 255 + 1e-6
    qa, qb = torch.nn.functional.normalize(out.quats, dim=1), torch.nn.functional.normalize(src.quats, dim=1)
    qa = qa * torch.sign((qa * qb).sum(1, keepdim=True))
    assert (qa - qb).abs().max() <= 2.5e-3
    assert (out.sh[:, 1:4] - src.sh[:, 1:4]).abs().max() <= 1 / 32 + 1 / 256 + 1e-6
    assert (out.sh[:, 4:] - src.sh[:, 4:]).abs().max() <= 1 / 16 + 1 / 256 + 1e-6


def test_large_coordinates_use_fewer_fraction_bits(tmp_path):
    s = _random_scene(10, 0)
    s.means = s.means * 400  # up to 8000: beyond 2048 at 12 fraction bits
    write_spz(s, tmp_path / "far.spz")
    out = read_spz(tmp_path / "far.spz")
    assert out.extras["fractional bits"] == 10
    assert (out.means - s.means).abs().max() <= 2**-11 + 1e-3


# ------------------------------------------------------------------ bad input


def _v3_bytes() -> bytes:
    return bundled("test-splat.3-points-from-train.spz").read_bytes()


def _v4_bytes() -> bytes:
    """A version-4 file of 4,096 Gaussians with SH degree 2 (written by warpsplat: tests/data/CREDITS.md)."""
    return bundled("playbot_crop.spz").read_bytes()


def _v3_payload() -> bytes:
    return gzip.decompress(_v3_bytes())


def _bad(tmp_path, data: bytes, match: str, name: str = "bad.spz"):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SceneFormatError, match=match) as info:
        load_scene(path)
    assert str(path) in str(info.value)  # the message names the file


def test_truncated(tmp_path):
    raw = _v3_bytes()
    _bad(tmp_path, raw[: len(raw) // 2], "truncated|corrupt")
    _bad(tmp_path, gzip.compress(_v3_payload()[:-5]), "truncated")
    _bad(tmp_path, gzip.compress(_v3_payload()[:10]), "header")
    v4 = _v4_bytes()
    _bad(tmp_path, v4[: len(v4) - 1000], "truncated")
    _bad(tmp_path, v4[:20], "truncated inside the 32-byte header")


def test_wrong_magic(tmp_path):
    p = bytearray(_v3_payload())
    p[0:4] = b"XXXX"
    _bad(tmp_path, gzip.compress(bytes(p)), "magic")
    _bad(tmp_path, b"hello, not a scene at all", "not an SPZ file")


def test_lying_counts(tmp_path):
    p = bytearray(_v3_payload())
    p[8:12] = struct.pack("<I", 4)  # 4 points declared, body holds 3
    _bad(tmp_path, gzip.compress(bytes(p)), "truncated")
    p[8:12] = struct.pack("<I", 2)  # 2 declared, body holds 3: the stream runs on
    _bad(tmp_path, gzip.compress(bytes(p)), "continues past")
    p[8:12] = struct.pack("<I", 50_000_000)  # far more than 120 compressed bytes can inflate to
    _bad(tmp_path, gzip.compress(bytes(p)), "lying count")
    v4 = bytearray(_v4_bytes())
    v4[8:12] = struct.pack("<I", 4097)  # one more than the streams hold
    _bad(tmp_path, bytes(v4), "declares")
    v4[8:12] = struct.pack("<I", 0)
    _bad(tmp_path, bytes(v4), "no scene")


def test_unsupported_versions(tmp_path):
    for version in (1, 5, 99):
        p = bytearray(_v3_payload())
        p[4:8] = struct.pack("<I", version)
        _bad(tmp_path, gzip.compress(bytes(p)), "version")
    v4 = bytearray(_v4_bytes())
    v4[4:8] = struct.pack("<I", 7)
    _bad(tmp_path, bytes(v4), "version")
    p = bytearray(_v3_payload())
    p[12] = 5  # SH degree 5
    _bad(tmp_path, gzip.compress(bytes(p)), "shDegree")


def test_zip_bombs_stop_at_the_declared_size(tmp_path):
    # gzip: 3 points declared, then 64 MiB of zeros (64 kB compressed). Inflating stops after the payload.
    bomb = gzip.compress(_v3_payload() + bytes(64 << 20), compresslevel=9)
    assert len(bomb) < 100_000
    _bad(tmp_path, bomb, "continues past")
    # v4: one stream's TOC says 1 byte, its zstd frame inflates to 64 MiB.
    header = struct.pack("<IIIBBBBI12x", MAGIC, 4, 1, 0, 12, 0, 5, 32)
    sizes = [9, 1, 3, 3, 4]
    frames = [zstandard.ZstdCompressor().compress(bytes(s)) for s in sizes]
    frames[1] = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    toc = b"".join(struct.pack("<QQ", len(f), s) for f, s in zip(frames, sizes))
    _bad(tmp_path, header + toc + b"".join(frames), "inflates to more than")
    # v4: the TOC declares a 2 GiB stream for a 1-point scene: refused before inflating.
    toc = b"".join(struct.pack("<QQ", len(f), s if i != 2 else 2 << 30) for i, (f, s) in enumerate(zip(frames, sizes)))
    _bad(tmp_path, header + toc + b"".join(frames), "declares")


def test_v4_structure_errors(tmp_path):
    v4 = bytearray(_v4_bytes())
    bad = bytearray(v4)
    bad[15] = 5  # five streams for SH degree 2 (the SH stream missing)
    _bad(tmp_path, bytes(bad), "numStreams")
    bad = bytearray(v4)
    bad[16:20] = struct.pack("<I", len(v4) + 10)
    _bad(tmp_path, bytes(bad), "tocByteOffset")
    bad = bytearray(v4)
    bad[128:132] = b"\0\0\0\0"  # the first stream's zstd frame magic (6 streams: the TOC ends at byte 128)
    _bad(tmp_path, bytes(bad), "corrupt")


def test_degree_4_keeps_bands_0_to_3(tmp_path):
    n, d = 2, 24
    body = _header(3, n, 4) + bytes(9 * n) + bytes([200] * n) + bytes([128] * 3 * n) + bytes([100] * 3 * n)
    body += struct.pack("<2I", 0, 0) + bytes([128 + 10] * (n * d * 3))
    with pytest.warns(UserWarning, match="keeping bands 0-3"):
        s = read_spz(tmp_path / "d4.spz", gzip.compress(body))
    assert s.sh_degree == 3 and math.isclose(abs(float(s.sh[0, 1, 0])), 10 / 128, rel_tol=1e-6)
