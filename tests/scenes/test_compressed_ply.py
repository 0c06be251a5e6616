"""PlayCanvas compressed PLY: write -> read round trip with the bound per field, Morton ordering, and
structural errors (truncation, wrong magic, lying counts, missing properties)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scenes import SH_C0, SceneFormatError, load_scene, make_scene
from scenes.compressed_ply import morton_order, read_compressed_ply, write_compressed_ply
from scenes.ply import read_elements
from tests.conftest import bundled
from tests.conftest import real_scene as scene


def _random_scene(n: int, degree: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(
        torch.randn(n, 3, generator=g) * 3,
        torch.randn(n, 4, generator=g),
        torch.rand(n, 3, generator=g) * 8 - 7,
        torch.randn(n, generator=g) * 3,
        torch.cat([torch.randn(n, 1, 3, generator=g), torch.rand(n, k - 1, 3, generator=g) * 7.9 - 3.95], 1),
    )


@pytest.mark.parametrize("degree", [0, 3])
def test_round_trip_within_quantisation(tmp_path, degree):
    n = 3000  # 12 chunks, the last one partial (184 rows)
    src = _random_scene(n, degree)
    path = tmp_path / "rt.compressed.ply"
    write_compressed_ply(src, path)
    out = load_scene(path)
    assert out.source_format == "compressed-ply" and len(out) == n and out.sh_degree == degree
    ref = src.subset(torch.from_numpy(morton_order(src.means.numpy())))  # the writer's row order

    ch = read_elements(path.read_bytes(), str(path))[0]["chunk"]
    assert len(ch) == math.ceil(n / 256)
    ci = np.arange(n) >> 8
    steps = np.array([2047, 1023, 2047])

    def span(prefix_lo: str, prefix_hi: str, axes: str) -> np.ndarray:
        return np.stack([ch[prefix_hi + a] - ch[prefix_lo + a] for a in axes], 1)[ci]

    # Position and log-scale: half a step of 11/10/11 bits over the row's chunk range.
    pos_bound = 0.5 * span("min_", "max_", "xyz") / steps + 1e-5
    assert (np.abs((out.means - ref.means).numpy()) <= pos_bound).all()
    sc_bound = 0.5 * span("min_scale_", "max_scale_", "xyz") / steps + 1e-5
    assert (np.abs((out.log_scales - ref.log_scales).numpy()) <= sc_bound).all()
    # Colour 0.5 + SH_C0 f_dc: half an 8-bit step over the chunk's colour range.
    col_bound = 0.5 * span("min_", "max_", "rgb") / 255 / SH_C0 + 1e-4
    assert (np.abs((out.sh[:, 0] - ref.sh[:, 0]).numpy()) <= col_bound).all()
    # Opacity: 8 bits after sigmoid. Quaternion: 10-bit components over [-sqrt(1/2), sqrt(1/2)].
    assert (torch.sigmoid(out.opacity_logits) - torch.sigmoid(ref.opacity_logits)).abs().max() <= 0.5 / 255 + 1e-6
    qa, qb = torch.nn.functional.normalize(out.quats, dim=1), torch.nn.functional.normalize(ref.quats, dim=1)
    qa = qa * torch.sign((qa * qb).sum(1, keepdim=True))
    assert (qa - qb).abs().max() <= 2e-3
    # SH rest: 8 bits over [-4, 4) with truncation on write and mid-bucket on read: 1/32.
    if degree:
        assert (out.sh[:, 1:] - ref.sh[:, 1:]).abs().max() <= 1 / 32 + 1e-6


def test_morton_order_keeps_chunks_compact():
    g = torch.Generator().manual_seed(3)
    means = torch.rand(256 * 64, 3, generator=g).numpy()
    order = morton_order(means)
    assert sorted(order.tolist()) == list(range(len(means)))
    chunk_extent = np.ptp(means[order].reshape(64, 256, 3), axis=1).max(1).mean()
    assert chunk_extent < 0.5  # random order would give ~1.0 per chunk


def test_real_file_rewrite_is_stable(tmp_path):
    """Re-encoding a real compressed PLY in its own row order keeps its 256-row chunks, whose decoded values
    span at most the original chunk ranges: each value moves by at most half a step of those ranges."""
    src = load_scene(scene("guitar.compressed.ply"))
    write_compressed_ply(src, tmp_path / "g.compressed.ply", sort=False)
    out = load_scene(tmp_path / "g.compressed.ply")
    ch = read_elements(scene("guitar.compressed.ply").read_bytes(), "guitar")[0]["chunk"]
    ci = np.arange(len(src)) >> 8
    steps = np.array([2047, 1023, 2047])
    span = np.stack([ch[f"max_{a}"] - ch[f"min_{a}"] for a in "xyz"], 1)[ci]
    assert (np.abs((out.means - src.means).numpy()) <= 0.5 * span / steps + 1e-5).all()
    span = np.stack([ch[f"max_scale_{a}"] - ch[f"min_scale_{a}"] for a in "xyz"], 1)[ci]
    assert (np.abs((out.log_scales - src.log_scales).numpy()) <= 0.5 * span / steps + 1e-5).all()
    assert (torch.sigmoid(out.opacity_logits) - torch.sigmoid(src.opacity_logits)).abs().max() <= 1e-6


# ------------------------------------------------------------------ bad input


def _bad(tmp_path, data: bytes, match: str):
    path = tmp_path / "bad.compressed.ply"
    path.write_bytes(data)
    with pytest.raises(SceneFormatError, match=match) as info:
        load_scene(path)
    assert str(path) in str(info.value)


def _real() -> bytes:
    """4,096 real Gaussians in 16 chunks, SH degree 2 (written by warpsplat: tests/data/CREDITS.md)."""
    return bundled("playbot_crop.compressed.ply").read_bytes()


def test_truncated_and_wrong_magic(tmp_path):
    data = _real()
    _bad(tmp_path, data[: len(data) - 100], "truncated")
    _bad(tmp_path, data[:300], "end_header|truncated")
    _bad(tmp_path, b"plx" + data[3:], "not a PLY|unknown scene format")


def test_lying_counts(tmp_path):
    data = _real()
    _bad(tmp_path, data.replace(b"element vertex 4096", b"element vertex 4300", 1), "chunk|truncated")
    # one chunk record fewer, declared and in the body: the body's length is consistent, the chunk count is not
    body = data.index(b"end_header\n") + len(b"end_header\n")
    fewer = data[:body] + data[body : body + 15 * 72] + data[body + 16 * 72 :]
    _bad(tmp_path, fewer.replace(b"element chunk 16", b"element chunk 15", 1), "element chunk has 15 rows")
    _bad(tmp_path, data.replace(b"element chunk 16", b"element chunk 15", 1), "72 bytes after its declared elements")
    big = data.replace(b"element vertex 4096", b"element vertex 900000000", 1)
    big = big.replace(b"element chunk 16", b"element chunk 3515625", 1)
    _bad(tmp_path, big, "truncated|limit")


def test_missing_properties(tmp_path):
    data = _real()
    _bad(tmp_path, data.replace(b"property float min_scale_x", b"property float min_scale_q", 1), "min_scale_x")
    _bad(tmp_path, data.replace(b"property uint packed_scale", b"property uint packed_scalf", 1), "packed_scale")


def test_sh_element_must_match(tmp_path):
    s = _random_scene(300, 1)
    write_compressed_ply(s, tmp_path / "sh.compressed.ply")
    data = (tmp_path / "sh.compressed.ply").read_bytes()
    _bad(tmp_path, data[:-9].replace(b"element sh 300", b"element sh 299", 1), "element sh has 299 rows")
    assert len(read_compressed_ply(tmp_path / "sh.compressed.ply")) == 300
