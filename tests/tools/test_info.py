"""`warpsplat info`: statistics and format details."""

from __future__ import annotations

from tests.scenes._paths import scene
from tools.cli import main


def test_info_reports_statistics_and_format_details(capsys):
    assert main(["info", str(scene("test-splat.3-points-from-train.spz"))]) == 0
    out = capsys.readouterr().out
    for needle in ("gaussians:     3", "sh degree:     3", "opacity:", "scale (max):", "anisotropy:", "memory:",
                   "spz version:   3", "stored frame:"):  # fmt: skip
        assert needle in out, needle
    assert main(["info", str(scene("playbot_lod2.sog"))]) == 0
    out = capsys.readouterr().out
    assert "gaussians:     125,000" in out and "sh palette:" in out and "MiB on the GPU" in out


def test_info_on_a_corrupt_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.spz"
    bad.write_bytes(b"\x1f\x8bnot really gzip")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("warpsplat info: error:") and "\n" not in err


def test_info_prints_no_empty_lists_and_no_negative_zero():
    import torch

    from scenes import make_scene
    from tools.info import describe

    means = torch.tensor([[-0.0, -0.0, 0.0], [1.0, 2.0, 3.0]])  # minimum bounds of -0.0
    scene = make_scene(means, torch.tensor([[1.0, 0, 0, 0]] * 2), torch.zeros(2, 3), torch.zeros(2),
                       torch.zeros(2, 1, 3))  # fmt: skip
    scene.extras.update({"ignored properties": [], "comments": ["made by hand"]})
    text = "\n".join(describe(scene))
    assert "bounds:        min (0, 0, 0)  max (1, 2, 3)" in text
    assert "-0" not in text and "ignored properties" not in text and "[]" not in text
    assert "comments:      made by hand" in text
