"""`warpsplat convert`: format by extension, --sh-degree, --min-opacity, refusal to overwrite, one-line
errors (exit 2) and atomic output."""

from __future__ import annotations

import torch

from scenes import load_scene
from tests.conftest import real_scene as scene
from tools.cli import main

THREE = "test-splat.3-points-from-train.ply"


def test_convert_to_every_writable_format(tmp_path, capsys):
    src = load_scene(scene("fruit_drops_minimal.ply"))
    for name in ("out.ply", "out.compressed.ply", "out.spz", "out.splat"):
        assert main(["convert", str(scene("fruit_drops_minimal.ply")), str(tmp_path / name)]) == 0
        out = load_scene(tmp_path / name)
        assert len(out) == len(src)
        assert out.sh_degree == (0 if name.endswith(".splat") else 3)
    assert "wrote" in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.part"))  # atomic writes leave no temporaries
    lossless = load_scene(tmp_path / "out.ply")
    assert torch.equal(lossless.means, src.means) and torch.equal(lossless.sh, src.sh)


def test_sh_degree_and_min_opacity(tmp_path):
    src = load_scene(scene("fruit_drops_minimal.ply"))
    out = tmp_path / "pruned.ply"
    assert (
        main(["convert", str(scene("fruit_drops_minimal.ply")), str(out), "--sh-degree", "1", "--min-opacity", "0.5"])
        == 0
    )
    s = load_scene(out)
    keep = torch.sigmoid(src.opacity_logits) >= 0.5
    assert s.sh_degree == 1 and len(s) == int(keep.sum()) < len(src)
    assert torch.equal(s.sh, src.sh[keep][:, :4])


def test_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "x.spz"
    out.write_bytes(b"precious")
    assert main(["convert", str(scene(THREE)), str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"precious"
    assert main(["convert", str(scene(THREE)), str(out), "--overwrite"]) == 0
    assert len(load_scene(out)) == 3


def test_errors_are_one_line(tmp_path, capsys):
    cases = [
        ["convert", str(scene(THREE)), str(tmp_path / "x.unknown")],
        ["convert", str(tmp_path / "missing.ply"), str(tmp_path / "x.ply")],
        ["convert", str(scene(THREE)), str(tmp_path / "x.ply"), "--min-opacity", "1.0"],
        ["convert", str(scene(THREE)), str(tmp_path / "x.ply"), "--sh-degree", "7"],
        ["convert", str(scene(THREE)), str(tmp_path / "x.sog")],  # SOG is read-only here
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("warpsplat convert: error:") and "\n" not in err, err
    assert not (tmp_path / "x.ply").exists()


def test_trainer_folder_iteration(tmp_path, capsys):
    from scenes import save_scene

    base = load_scene(scene(THREE))
    for it in (100, 200):
        folder = tmp_path / "model" / "point_cloud" / f"iteration_{it}"
        folder.mkdir(parents=True)
        shifted = base.subset(slice(None))
        shifted.means = base.means + it
        save_scene(shifted, folder / "point_cloud.ply")
    out = tmp_path / "it100.ply"
    assert main(["convert", str(tmp_path / "model"), str(out), "--iteration", "100"]) == 0
    assert float(load_scene(out).means.max()) < 150
    assert main(["convert", str(tmp_path / "model"), str(tmp_path / "x.ply"), "--iteration", "5"]) == 2
    assert "available: 100, 200" in capsys.readouterr().err
