"""`warpsplat info`: statistics and format details."""

from __future__ import annotations

from renderer.memory import estimate_bytes
from scenes import load_scene
from tests.conftest import real_scene as scene
from tools.cli import main


def test_info_reports_statistics_and_format_details(capsys):
    assert main(["info", str(scene("test-splat.3-points-from-train.spz"))]) == 0
    out = capsys.readouterr().out
    for needle in ("gaussians:     3", "sh degree:     3", "opacity:", "scale (max):", "anisotropy:", "memory:",
                   "spz version:   3", "stored frame:"):  # fmt: skip
        assert needle in out, needle
    assert main(["info", str(scene("playbot_lod2.sog"))]) == 0
    out = capsys.readouterr().out
    assert "gaussians:     125,000" in out and "sh palette:" in out
    # the renderer's own estimate (the one it checks before it starts), at the frame size it assumes
    k = load_scene(scene("playbot_lod2.sog")).sh.shape[1]
    want = estimate_bytes(125_000, k, device="cuda", counted=False).total / 2**20
    assert f"about {want:,.1f} MiB on the GPU" in out


def test_info_on_a_corrupt_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.spz"
    bad.write_bytes(b"\x1f\x8bnot really gzip")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("warpsplat info: error:") and "\n" not in err


def test_a_failed_read_names_the_file(monkeypatch, capsys):
    """A read error from the disk (EIO; simulated) carries no file name: the line said only "Input/output
    error"."""
    import errno
    import io

    import scenes.io

    class Failing(io.BytesIO):
        def read(self, *args):
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(scenes.io, "open_regular", lambda path: Failing())
    assert main(["info", str(scene("playbot_crop.ply"))]) == 2
    assert capsys.readouterr().err == f"warpsplat info: error: {scene('playbot_crop.ply')}: Input/output error\n"


def test_info_on_extreme_values_prints_no_nan_and_no_numpy_warnings(tmp_path, capsys):
    """Values at the edge of float32 that are kept (a log-scale of 44, whose covariance is about the largest a
    float32 holds, positions of +-1e18, opacities of exactly 0 and 1), next to one that is dropped (a log-scale
    of 89): statistics stay finite, and numpy says nothing."""
    import warnings

    from scenes.ply import write_ply
    from tests.reliability.hostile import cloud

    scene = cloud(64)
    scene.log_scales[0] = 44.0
    scene.means[1], scene.means[2] = 1e18, -1e18
    scene.opacity_logits[3], scene.opacity_logits[4] = float("inf"), float("-inf")
    scene.log_scales[5, 1] = 89.0  # its covariance (and exp itself) overflows: dropped, counted
    write_ply(scene, tmp_path / "edge.ply")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["info", str(tmp_path / "edge.ply")]) == 0
    captured = capsys.readouterr()
    assert "nan" not in captured.out and "inf" not in captured.out, captured.out
    assert "gaussians:     63" in captured.out and "max 1.29e+19" in captured.out  # exp(44)
    assert captured.err.count("\n") == 1 and "dropped 1 of 64" in captured.err


def test_info_prints_no_empty_lists_and_no_negative_zero():
    import torch

    from scenes import make_scene
    from tools.info import describe

    means = torch.tensor([[-0.0, -0.0, 0.0], [1.0, 2.0, 3.0]])  # minimum bounds of -0.0
    scene = make_scene(means, torch.tensor([[1.0, 0, 0, 0]] * 2), torch.zeros(2, 3), torch.zeros(2),
                       torch.zeros(2, 1, 3))  # fmt: skip
    scene.extras.update({"ignored properties": [], "comments": ["made by hand"], "sh range": [-1.5037171840667725,
                         1.3722485303878784], "scale": 0.30000001192092896})  # fmt: skip
    text = "\n".join(describe(scene))
    assert "bounds:        min (0, 0, 0)  max (1, 2, 3)" in text
    assert "-0" not in text and "ignored properties" not in text and "[]" not in text
    assert "comments:      made by hand" in text
    assert "sh range:      -1.504, 1.372" in text and "scale:         0.3\n" in text + "\n"  # 4 digits, not float32's


def test_info_hints_at_the_up_axis_of_a_scene_flat_along_another():
    """A landscape-like scene, wide in x and y and thin in z (gsplat's and nerfstudio's trainers turn their
    worlds' up to +-Z): info hints at --up +z / -z while the scene says -y, and not once it says z, nor for a
    scene of no flattest axis."""
    import torch

    from scenes import make_scene
    from tools.info import describe

    g = torch.Generator().manual_seed(0)
    n = 2000

    def scene(extent, up="-y"):
        means = (torch.rand(n, 3, generator=g) - 0.5) * torch.tensor(extent)
        s = make_scene(means, torch.tensor([[1.0, 0, 0, 0]]).repeat(n, 1), torch.full((n, 3), -3.0), torch.zeros(n),
                       torch.zeros(n, 1, 3))  # fmt: skip
        s.up_axis = up
        return "\n".join(describe(s))

    assert "flattest along z: if it shows on its side, try --up +z or -z" in scene([10.0, 8.0, 1.0])
    assert "flattest" not in scene([10.0, 8.0, 1.0], up="+z") and "flattest" not in scene([10.0, 8.0, 7.0])
    assert "flattest" not in scene([10.0, 1.0, 8.0])  # flat along y, the stated up's axis: nothing to say
