"""GaussianScene's checks and the INRIA PLY / .splat readers of the foundation: variants, round trips, bad input."""

import math

import numpy as np
import pytest
import torch

from scenes import GaussianScene, SceneFormatError, load_scene, make_scene, save_scene
from scenes.ply import read_ply, write_ply, write_ply_parts

FIELDS = ("means", "quats", "log_scales", "opacity_logits", "sh")


def tiny_scene(n=5, degree=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(torch.randn(n, 3, generator=g), torch.randn(n, 4, generator=g),
                      torch.randn(n, 3, generator=g) - 3, torch.randn(n, generator=g),
                      torch.randn(n, k, 3, generator=g))  # fmt: skip


def write_inria(path, scene, *, normals=True, extra=None):
    """A PLY written the way graphdeco's save_ply does (plus optional extra float properties)."""
    n = len(scene)
    cols = [("x", scene.means[:, 0]), ("y", scene.means[:, 1]), ("z", scene.means[:, 2])]
    if normals:
        cols += [(f"n{c}", torch.zeros(n)) for c in "xyz"]
    cols += [(f"f_dc_{i}", scene.sh[:, 0, i]) for i in range(3)]
    rest = scene.sh[:, 1:].transpose(1, 2).reshape(n, -1)  # channel-major on disk
    cols += [(f"f_rest_{i}", rest[:, i]) for i in range(rest.shape[1])]
    cols += [("opacity", scene.opacity_logits)] + [(f"scale_{i}", scene.log_scales[:, i]) for i in range(3)]
    cols += [(f"rot_{i}", scene.quats[:, i]) for i in range(4)] + list((extra or {}).items())
    body = np.stack([c.numpy() for _, c in cols], 1).astype("<f4")
    header = "ply\nformat binary_little_endian 1.0\n" + f"element vertex {n}\n"
    header += "".join(f"property float {name}\n" for name, _ in cols) + "end_header\n"
    path.write_bytes(header.encode() + body.tobytes())


@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_ply_reads_every_sh_degree_channel_major(degree, tmp_path):
    scene = tiny_scene(7, degree)
    write_inria(tmp_path / "s.ply", scene, normals=degree % 2 == 0, extra={"transform": torch.ones(7)})
    back = load_scene(tmp_path / "s.ply")
    assert back.sh_degree == degree
    for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
        assert torch.equal(getattr(back, name), getattr(scene, name)), name


def test_ply_round_trip_is_bit_exact(tmp_path):
    scene = tiny_scene(11, 3)
    write_ply(scene, tmp_path / "a.ply")
    back = read_ply(tmp_path / "a.ply")
    for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
        assert torch.equal(getattr(back, name), getattr(scene, name)), name


def test_ply_written_in_parts_is_the_ply_of_the_whole(tmp_path):
    """write_ply_parts (compose's streaming) writes the bytes write_ply writes for the parts put together, and
    refuses parts that do not add up to the count in its header, leaving no file."""
    a, b = tiny_scene(5, seed=1), tiny_scene(7, seed=2)
    whole = make_scene(*(torch.cat([getattr(a, f), getattr(b, f)]) for f in FIELDS))
    write_ply(whole, tmp_path / "whole.ply", with_normals=False)
    write_ply_parts(tmp_path / "parts.ply", [a, b], 12, 9, antialiased=False, with_normals=False)
    assert (tmp_path / "parts.ply").read_bytes() == (tmp_path / "whole.ply").read_bytes()
    with pytest.raises(ValueError, match="the parts hold 12 Gaussians, the header says 13"):
        write_ply_parts(tmp_path / "short.ply", [a, b], 13, 9, antialiased=False)
    assert not list(tmp_path.glob("*short*"))


def test_real_ply_without_normals_or_f_rest(scene_path):
    donut = load_scene(scene_path("donut_fused.ply"))  # no normals, no f_rest, unnormalised quaternions
    assert len(donut) == 45624 and donut.sh_degree == 0
    assert not torch.allclose(donut.quats.norm(dim=1), torch.ones(len(donut)))


def test_real_ply_variants_of_other_trainers(scene_path):
    fruit = load_scene(scene_path("fruit_drops_minimal.ply"))  # SH 3 plus an extra 'transform' property
    assert len(fruit) == 4721 and fruit.sh_degree == 3 and "transform" in fruit.extras["ignored properties"]
    tile = load_scene(scene_path("lod1_tile_0_0.5x.ply"))
    assert len(tile) == 14051 and tile.sh_degree == 3 and (tile.sh[:, 1:] == 0).all()


def test_bad_gaussians_dropped_with_one_warning(tmp_path):
    scene = tiny_scene(6, 0)
    scene.means[1, 0] = float("nan")
    scene.log_scales[2, 1] = float("-inf")  # a linear scale of 0
    scene.quats[3] = 0.0
    scene.sh[4, 0, 2] = float("inf")
    write_ply(scene, tmp_path / "bad.ply")
    with pytest.warns(UserWarning, match="dropped 4 of 6 Gaussians") as rec:
        back = load_scene(tmp_path / "bad.ply")
    assert len(rec) == 1 and len(back) == 2


def test_the_log_scale_bound_is_where_the_covariance_overflows():
    """MAX_LOG_SCALE (the derivation is beside it) is the largest log-scale whose float32 covariance R S^2 R^T is
    finite for every rotation: at the bound (as float32), kept, and the covariance of random and axis-aligned
    rotations is finite; one float32 step above it, dropped. The bound is tight: 1e-4 above the derived boundary
    ln(FLT_MAX) / 2 an axis-aligned Gaussian's covariance is inf, where exp alone is still finite (the old bound
    was exp = inf, 88.72)."""
    from renderer.prepare import prepare_covariances
    from scenes.gaussians import MAX_LOG_SCALE

    at = torch.tensor(MAX_LOG_SCALE, dtype=torch.float32)
    above = torch.nextafter(at, torch.tensor(float("inf")))
    assert at.item() == MAX_LOG_SCALE
    n = 1000
    g = torch.Generator().manual_seed(0)
    quats = torch.cat([torch.eye(4), torch.randn(n - 4, 4, generator=g)])  # the axis-aligned rotations, then any
    scene = make_scene(torch.zeros(n, 3), quats, torch.full((n, 3), float(at)), torch.zeros(n), torch.zeros(n, 1, 3))
    assert not scene.invalid_mask().any()
    assert torch.isfinite(prepare_covariances(scene.quats, scene.log_scales)).all()
    scene.log_scales[::2, 1] = above  # one axis one step too large: dropped
    assert torch.equal(scene.invalid_mask(), torch.arange(n) % 2 == 0)
    boundary = 0.5 * math.log(torch.finfo(torch.float32).max)
    assert abs(MAX_LOG_SCALE - boundary) < 2e-3
    over = torch.full((1, 3), boundary + 1e-4)
    assert torch.isinf(prepare_covariances(torch.tensor([[1.0, 0, 0, 0]]), over)).any()
    assert torch.isfinite(torch.exp(over)).all()


def test_all_bad_is_an_error(tmp_path):
    scene = tiny_scene(3, 0)
    scene.opacity_logits[:] = float("nan")
    write_ply(scene, tmp_path / "allbad.ply")
    with pytest.raises(SceneFormatError, match="all 3 Gaussians"):
        load_scene(tmp_path / "allbad.ply")


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda b: b[: len(b) - 10], "truncated"),
        (lambda b: b"plx" + b[3:], "not a PLY|unknown scene format"),
        (lambda b: b.replace(b"element vertex 5", b"element vertex 500"), "truncated"),
        (lambda b: b.replace(b"binary_little_endian", b"binary_middle_endian"), "unsupported PLY format"),
        (lambda b: b.replace(b"property float opacity\n", b""), "after its declared elements"),
        (lambda b: b[:40], "end_header"),
    ],
    ids=["truncated-body", "bad-magic", "lying-count", "bad-format", "missing-property", "truncated-header"],
)
def test_corrupt_ply_gives_scene_format_error(mutate, message, tmp_path):
    write_ply(tiny_scene(5, 1), tmp_path / "good.ply")
    bad = tmp_path / "bad.ply"
    bad.write_bytes(mutate((tmp_path / "good.ply").read_bytes()))
    with pytest.raises(SceneFormatError, match=message) as e:
        load_scene(bad)
    assert str(bad) in str(e.value)


def test_splat_round_trip_within_quantisation(tmp_path):
    scene = tiny_scene(50, 0)
    scene.sh[:, 0] = scene.sh[:, 0].clamp(-1.7, 1.7)  # inside the representable colour range [0, 1]
    save_scene(scene, tmp_path / "a.splat")
    back = load_scene(tmp_path / "a.splat")
    order = torch.argsort(-(scene.log_scales.sum(1).exp() * torch.sigmoid(scene.opacity_logits)), stable=True)
    s = scene.subset(order)
    assert torch.equal(back.means, s.means)
    assert torch.allclose(back.log_scales, s.log_scales, atol=1e-6)
    assert (back.sh[:, 0] - s.sh[:, 0]).abs().max() <= 0.5 / 255 / 0.28209479177387814 + 1e-6
    assert (torch.sigmoid(back.opacity_logits) - torch.sigmoid(s.opacity_logits)).abs().max() <= 0.5 / 255 + 1e-6
    qa = torch.nn.functional.normalize(back.quats, dim=1)
    qb = torch.nn.functional.normalize(s.quats, dim=1)
    assert ((qa * qb).sum(1).abs() > 1 - 2e-3).all()


def test_splat_size_not_multiple_of_32(tmp_path):
    p = tmp_path / "x.splat"
    p.write_bytes(b"\0" * 33)
    with pytest.raises(SceneFormatError, match="multiple of 32"):
        load_scene(p)


def test_validate_names_the_field():
    s = tiny_scene(4, 1)
    bad = GaussianScene(s.means, s.quats[:3], s.log_scales, s.opacity_logits, s.sh)
    with pytest.raises(SceneFormatError, match="quats"):
        bad.validate()
    with pytest.raises(SceneFormatError, match="no Gaussians"):
        tiny_scene(4).subset(torch.zeros(4, dtype=torch.bool)).validate()


def test_empty_and_unknown_files(tmp_path):
    (tmp_path / "empty.ply").write_bytes(b"")
    with pytest.raises(SceneFormatError, match="empty"):
        load_scene(tmp_path / "empty.ply")
    (tmp_path / "scene.xyz").write_bytes(b"hello world")
    with pytest.raises(SceneFormatError, match="unknown scene format"):
        load_scene(tmp_path / "scene.xyz")
    with pytest.raises(FileNotFoundError):
        load_scene(tmp_path / "missing.ply")
