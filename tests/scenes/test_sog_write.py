"""Writing SOG (scenes/sog.py `write_sog`): write -> read with each field's bound, taken from the file's own
meta.json; images of the scene read back against the scene written; the same bytes for the same scene; bad
outputs; `warpsplat convert` to .sog. (splat-transform reading these files: test_splat_transform_oracle.py.)"""

from __future__ import annotations

import json
import zipfile

import pytest
import torch

from renderer import Renderer, default_camera
from renderer.paths import orbit_path
from scenes import SceneFormatError, load_scene, make_scene, save_scene
from scenes.sog import palette_size, texture_size, write_sog
from tests.conftest import bundled
from tools.metrics import psnr


def _matched(src, out):
    """src's rows in out's order (the file holds them in Morton order): each row read back against the source
    row whose centre is nearest, which must pair them one to one."""
    nearest = torch.cdist(out.means.double(), src.means.double()).argmin(1)
    assert len(torch.unique(nearest)) == len(src), "rows do not pair one to one"
    return src.subset(nearest)


def _random_scene(n: int, seed: int = 0, *, sh_rows: int = 400):
    """SH 3, its higher bands drawn from `sh_rows` distinct rows (so the palette holds them exactly)."""
    g = torch.Generator().manual_seed(seed)
    rest = (torch.rand(sh_rows, 15, 3, generator=g) - 0.5) * 0.6
    return make_scene(
        torch.randn(n, 3, generator=g) * 4,
        torch.randn(n, 4, generator=g),
        torch.randn(n, 3, generator=g) - 4,
        torch.randn(n, generator=g) * 3,
        torch.cat([torch.randn(n, 1, 3, generator=g), rest[torch.randint(0, sh_rows, (n,), generator=g)]], 1),
        antialiased=True,
    )


def _nearest_level_error(values: torch.Tensor, book: list[float]) -> torch.Tensor:
    return (values[..., None] - torch.tensor(book)).abs().amin(-1)


@pytest.mark.parametrize("which", ["random", "playbot_crop.ply"])
def test_round_trip_within_each_fields_bound(tmp_path, which):
    src = _random_scene(3000) if which == "random" else load_scene(bundled(which))
    path = tmp_path / "rt.sog"
    save_scene(src, path)
    out = load_scene(path)
    assert out.source_format == "sog" and len(out) == len(src) and out.sh_degree == src.sh_degree
    assert out.antialiased == src.antialiased
    meta = json.loads(zipfile.ZipFile(path).read("meta.json"))
    assert meta["version"] == 2 and meta["count"] == len(src)
    ref = _matched(src, out)

    def t(x):  # the positions' log transform
        return torch.sign(x.double()) * torch.log1p(x.double().abs())

    span = torch.tensor(meta["means"]["maxs"], dtype=torch.float64) - torch.tensor(meta["means"]["mins"])
    assert ((t(out.means) - t(ref.means)).abs() <= span / 131070 + 1e-6 * (1 + t(ref.means).abs())).all()
    # log scales and DC colours: each value read back is its nearest codebook level
    for got, want, book in ((out.log_scales, ref.log_scales, meta["scales"]["codebook"]),
                            (out.sh[:, 0], ref.sh[:, 0], meta["sh0"]["codebook"])):  # fmt: skip
        assert torch.allclose((got - want).abs(), _nearest_level_error(want, book), atol=1e-6)
        assert torch.isin(got, torch.tensor(book)).all()
    assert (torch.sigmoid(out.opacity_logits) - torch.sigmoid(ref.opacity_logits)).abs().max() <= 0.5 / 255 + 1e-6
    qa, qb = torch.nn.functional.normalize(out.quats, dim=1), torch.nn.functional.normalize(ref.quats, dim=1)
    qa = qa * torch.sign((qa * qb).sum(1, keepdim=True))
    # three components within sqrt(2) / 510 = 0.0028; the largest, rebuilt from them, within 0.012 (at its least,
    # 1/2, it moves by their sum over it)
    assert (qa - qb).abs().max() <= 0.012
    # the higher bands: no more distinct rows than the palette, so each value is its codebook's nearest level
    assert meta["shN"]["count"] <= palette_size(len(src))
    book = meta["shN"]["codebook"]
    assert torch.allclose((out.sh[:, 1:] - ref.sh[:, 1:]).abs(), _nearest_level_error(ref.sh[:, 1:], book), atol=1e-6)


def test_images_of_the_scene_read_back():
    """The bundled crop with its higher SH bands made distinct (noise), so the palette is k-means' (3,000 rows,
    2,048 entries): rendered from three views, the scene read back is at least 40 dB against the scene written, and
    clearly better than the same file with its higher bands dropped (what the palette is for)."""
    src = load_scene(bundled("playbot_crop.ply")).subset(torch.arange(3000))
    g = torch.Generator().manual_seed(5)
    src.sh[:, 1:] += 0.05 * torch.randn(src.sh[:, 1:].shape, generator=g)
    assert len(torch.unique(src.sh[:, 1:].reshape(3000, -1), dim=0)) > palette_size(3000)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        save_scene(src, f"{d}/x.sog")
        out = load_scene(f"{d}/x.sog")
    no_bands = out.subset(slice(None))
    no_bands.sh = out.sh.clone()
    no_bands.sh[:, 1:] = 0
    cam = default_camera(src, 64, 48)
    cams = [cam, *orbit_path(src, 64, 48, 3)[1:]]
    images = {name: [Renderer(s, device="cpu", backend="torch").render(c).image for c in cams]
              for name, s in (("src", src), ("out", out), ("no_bands", no_bands))}  # fmt: skip
    for a, b, c in zip(images["src"], images["out"], images["no_bands"], strict=True):
        assert psnr(a, b) >= 40.0, psnr(a, b)  # 44.9-48.8 dB when written
        assert psnr(a, b) > psnr(a, c) + 8.0, (psnr(a, b), psnr(a, c))  # 30.6-34.4 dB without them


def test_the_same_scene_makes_the_same_bytes(tmp_path):
    src = _random_scene(500, seed=1)
    write_sog(src, tmp_path / "a.sog")
    write_sog(src, tmp_path / "b.sog")
    assert (tmp_path / "a.sog").read_bytes() == (tmp_path / "b.sog").read_bytes()


def test_sizes():
    assert texture_size(1) == (4, 4)
    for n in (1, 17, 4096, 100_003, 5_000_000):
        w, h = texture_size(n)
        assert w % 4 == 0 and h % 4 == 0 and w * h >= n and w * h < n + 4 * (w + h) + 16
    assert [palette_size(n) for n in (100, 1024, 3000, 4096, 70_000, 10**7)] == [64, 1024, 2048, 4096, 65536, 65536]


def test_bad_outputs(tmp_path):
    src = _random_scene(10)
    with pytest.raises(SceneFormatError, match="meta.json"):
        save_scene(src, tmp_path / "meta.json")
    with pytest.raises(SceneFormatError, match="at least one Gaussian"):
        write_sog(src.subset(torch.zeros(10, dtype=torch.bool)), tmp_path / "empty.sog")
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_convert_writes_sog(tmp_path, capsys):
    from tools.cli import main

    crop = bundled("playbot_crop.ply")
    assert main(["convert", str(crop), str(tmp_path / "crop.sog")]) == 0
    assert "crop.sog: 4,096 Gaussians, SH degree 2" in capsys.readouterr().out
    out, src = load_scene(tmp_path / "crop.sog"), load_scene(crop)
    assert len(out) == len(src) and out.sh_degree == 2
    assert main(["convert", str(crop), str(tmp_path / "crop.sog")]) == 2  # kept unless --overwrite


@pytest.mark.parametrize("name", ["nan.sog", "nan.glb"])
def test_gaussians_with_non_finite_values_are_dropped_with_a_warning(tmp_path, name):
    """A scene built in memory may hold NaN or infinite values, which no reader lets through: the writers drop
    those Gaussians as the readers do, with the same one warning, and write the rest."""
    src = _random_scene(200, seed=2)
    src.log_scales[3, 1] = float("nan")
    src.means[7, 0] = float("inf")
    with pytest.warns(UserWarning, match="dropped 2 of 200 Gaussians"):
        save_scene(src, tmp_path / name)
    assert len(load_scene(tmp_path / name)) == 198
