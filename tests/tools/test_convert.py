"""`warpsplat convert`: format by extension, --sh-degree, --min-opacity, refusal to overwrite, one-line
errors (exit 2) and atomic output."""

from __future__ import annotations

import os

import numpy as np
import torch

from scenes import load_scene
from tests.conftest import bundled
from tests.conftest import real_scene as scene
from tools.cli import main

THREE = "test-splat.3-points-from-train.ply"  # 3 real Gaussians, SH degree 3
CROP = "playbot_crop.ply"  # 4,096 real Gaussians, SH degree 2


def test_convert_to_every_writable_format(tmp_path, capsys):
    src = load_scene(scene(CROP))
    for name in ("out.ply", "out.compressed.ply", "out.spz", "out.sog", "out.glb", "out.splat"):
        assert main(["convert", str(scene(CROP)), str(tmp_path / name)]) == 0
        out = load_scene(tmp_path / name)
        assert len(out) == len(src)
        assert out.sh_degree == (0 if name.endswith(".splat") else 2)
    assert "wrote" in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.part"))  # atomic writes leave no temporaries
    lossless = load_scene(tmp_path / "out.ply")
    assert torch.equal(lossless.means, src.means) and torch.equal(lossless.sh, src.sh)


def test_a_scale_below_float32s_exp_range_reads_back_from_every_format(tmp_path, capsys):
    """A log-scale of -200 is valid (a scale too small to see); .splat and .glb store the scale itself, and
    float32's exp(-200) is 0, which readers drop as invalid: the converted file lost those Gaussians on reading
    (every one here: 'all 64 Gaussians have invalid values', after convert had exited 0)."""
    from scenes.ply import write_ply
    from tests.reliability.hostile import cloud

    small = cloud(64)
    small.log_scales[:] = -200.0
    write_ply(small, tmp_path / "small.ply")
    for name in ("out.ply", "out.compressed.ply", "out.spz", "out.sog", "out.glb", "out.splat"):
        assert main(["convert", str(tmp_path / "small.ply"), str(tmp_path / name)]) == 0, name
        assert len(load_scene(tmp_path / name)) == 64, name
        assert "invalid" not in capsys.readouterr().err, name


def test_sh_degree_and_min_opacity(tmp_path):
    src = load_scene(scene(CROP))
    out = tmp_path / "pruned.ply"
    assert main(["convert", str(scene(CROP)), str(out), "--sh-degree", "1", "--min-opacity", "0.5"]) == 0
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


def test_converting_a_file_onto_itself_is_refused(tmp_path, capsys):
    """The input as the output is refused with or without --overwrite, and not with the hint to pass --overwrite
    (which the refusal then met). A trainer folder's input is the point_cloud.ply it holds: converting the folder
    onto that file (with --sh-degree 0, say) replaced the only copy of the trained scene."""
    import shutil

    ply = tmp_path / "model" / "point_cloud" / "iteration_7000" / "point_cloud.ply"
    ply.parent.mkdir(parents=True)
    shutil.copy(scene(THREE), ply)
    before = ply.read_bytes()
    for src, extra in ((ply, []), (ply, ["--overwrite"]), (tmp_path / "model", ["--overwrite", "--sh-degree", "0"])):
        assert main(["convert", str(src), str(ply), *extra]) == 2, (src, extra)
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"warpsplat convert: error: {ply}: output is the input file") and "\n" not in err, err
    assert ply.read_bytes() == before


def test_errors_are_one_line(tmp_path, capsys):
    cases = [
        ["convert", str(scene(THREE)), str(tmp_path / "x.unknown")],
        ["convert", str(tmp_path / "missing.ply"), str(tmp_path / "x.ply")],
        ["convert", str(scene(THREE)), str(tmp_path / "x.ply"), "--min-opacity", "1.0"],
        ["convert", str(scene(THREE)), str(tmp_path / "x.ply"), "--sh-degree", "7"],
        ["convert", str(scene(THREE)), str(tmp_path / "meta.json")],  # SOG is written as an archive, not a folder
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("warpsplat convert: error:") and "\n" not in err, err
    assert not (tmp_path / "x.ply").exists() and not (tmp_path / "meta.json").exists()


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


def test_read_only_and_unknown_formats_are_told_apart(tmp_path, capsys):
    assert main(["convert", str(scene(THREE)), str(tmp_path / "meta.json")]) == 2
    assert capsys.readouterr().err == (
        f"warpsplat convert: error: {tmp_path / 'meta.json'}: sog folder is read-only in warpsplat "
        "(can write: .compressed.ply, .glb, .ply, .sog, .splat, .spz)\n"
    )
    assert main(["convert", str(scene(THREE)), str(tmp_path / "x.ksplat")]) == 2
    want = "x.ksplat: ksplat is read-only in warpsplat (can write: .compressed.ply, .glb, .ply, .sog, .splat, .spz)"
    assert want in capsys.readouterr().err
    assert main(["convert", str(scene(THREE)), str(tmp_path / "x.obj")]) == 2
    want = "x.obj: unknown scene format (can write: .compressed.ply, .glb, .ply, .sog, .splat, .spz)"
    assert want in capsys.readouterr().err


def test_a_ksplat_converts_to_ply_as_it_reads(tmp_path):
    """GaussianSplats3D's .ksplat in, a float PLY out: the PLY holds exactly what the reader decoded."""
    src = bundled("playbot_crop.level2.ksplat")
    assert main(["convert", str(src), str(tmp_path / "out.ply")]) == 0
    want, got = load_scene(src), load_scene(tmp_path / "out.ply")
    for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
        assert torch.equal(getattr(got, name), getattr(want, name)), name


def test_spz_version(tmp_path, capsys):
    """SPZ is written as v3 (gzip) by default and as v4 (zstd streams) on request; both read back alike."""
    src = str(scene(CROP))
    assert main(["convert", src, str(tmp_path / "a.spz")]) == 0
    assert main(["convert", src, str(tmp_path / "b.spz"), "--spz-version", "4"]) == 0
    assert (tmp_path / "a.spz").read_bytes()[:2] == b"\x1f\x8b" and (tmp_path / "b.spz").read_bytes()[:4] == b"NGSP"
    a, b = load_scene(tmp_path / "a.spz"), load_scene(tmp_path / "b.spz")
    assert a.extras["spz version"] == 3 and b.extras["spz version"] == 4
    assert torch.equal(a.means, b.means) and torch.equal(a.sh, b.sh)
    capsys.readouterr()
    assert main(["convert", src, str(tmp_path / "c.ply"), "--spz-version", "4"]) == 2
    assert "--spz-version applies to .spz outputs" in capsys.readouterr().err


def test_up_turns_the_scene(tmp_path, capsys):
    """--up +y is the half turn about x that SPZ's frame change is (so it undoes a raw, splat-transform style read
    of an SPZ): the same positions, SH and covariances, exactly or to float rounding."""
    from scenes.spz import flip_rub_rdf
    from tests.scenes.test_rotate import covariances

    src = load_scene(scene(THREE))  # SH degree 3: every band's sign change
    assert main(["convert", str(scene(THREE)), str(tmp_path / "up.ply"), "--up", "+y"]) == 0
    out = load_scene(tmp_path / "up.ply")
    m, q, sh = src.means.numpy().copy(), src.quats.numpy().copy(), src.sh.numpy().copy()
    flip_rub_rdf(m, q, sh)
    assert torch.equal(out.means, torch.from_numpy(m)) and torch.equal(out.sh, torch.from_numpy(sh))
    flipped = src.subset(slice(None))
    flipped.quats = torch.from_numpy(q)
    assert torch.allclose(covariances(out), covariances(flipped), rtol=1e-5, atol=1e-12)
    assert main(["convert", str(scene(THREE)), str(tmp_path / "x.ply"), "--up", "sideways"]) == 2
    assert "--up 'sideways': expected one of" in capsys.readouterr().err


def test_up_takes_a_direction(tmp_path):
    """A tilted capture's up (what the viewer's level gives, as X,Y,Z): after --up it is the PLY frame's -y."""
    from scenes.rotate import rotation_to_up

    up = np.array([0.3, -0.9, 0.2]) / np.linalg.norm([0.3, -0.9, 0.2])
    src = load_scene(scene(CROP))
    assert main(["convert", str(scene(CROP)), str(tmp_path / "level.ply"), "--up", "0.3,-0.9,0.2"]) == 0
    out = load_scene(tmp_path / "level.ply")
    R, _ = rotation_to_up(up)
    np.testing.assert_allclose(R @ up, [0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(out.means.double(), src.means.double() @ torch.from_numpy(R).T, atol=1e-5)
    # a direction whose norm overflows is the same direction: it turned every Gaussian to NaN, and the PLY written
    # (exit 0) was refused on reading ("all 4,096 Gaussians have invalid values")
    assert main(["convert", str(scene(CROP)), str(tmp_path / "big.ply"), "--up", "3e307,-9e307,2e307"]) == 0
    np.testing.assert_allclose(load_scene(tmp_path / "big.ply").means, out.means, atol=1e-5)


def test_the_antialiased_flag_goes_where_a_format_has_a_field(tmp_path, capsys):
    """A Mip-Splatting scene keeps its flag in PLY, compressed PLY, SPZ and SOG; .splat and .glb have no field for
    it, and convert says so rather than drop it silently."""
    from scenes import save_scene

    src = load_scene(scene(THREE))
    src.antialiased = True
    save_scene(src, tmp_path / "mip.ply")
    for name in ("out.ply", "out.compressed.ply", "out.spz", "out.sog", "out.glb", "out.splat"):
        assert main(["convert", str(tmp_path / "mip.ply"), str(tmp_path / name)]) == 0
        kept = load_scene(tmp_path / name).antialiased
        err = capsys.readouterr().err
        note = "Mip-Splatting" in err
        assert (kept, note) == ((False, True) if name in ("out.glb", "out.splat") else (True, False)), name
        if note:  # prefixed as errors and warnings are
            assert [line for line in err.splitlines() if "Mip-Splatting" in line][0].startswith(
                "warpsplat convert: note: .splat has no field" if name == "out.splat" else "warpsplat convert: note: "
            ), err


def test_crop_box(tmp_path, capsys):
    """--crop-box keeps the Gaussians whose centres lie in the box, in the input's coordinates (before --up), and
    the summary says how many it dropped and why; a box that keeps nothing, or six numbers that are not a box, are
    one-line errors."""
    src = load_scene(scene(CROP))
    low, high = [-0.1, -0.8, -0.1], [0.2, -0.5, 0.15]
    box = ",".join(map(str, low + high))
    inside = ((src.means >= torch.tensor(low)) & (src.means <= torch.tensor(high))).all(1)
    assert 0 < int(inside.sum()) < len(src)
    out = tmp_path / "cropped.ply"
    assert main(["convert", str(scene(CROP)), str(out), f"--crop-box={box}", "--min-opacity", "0.5"]) == 0
    faint = torch.sigmoid(src.opacity_logits) < 0.5
    kept = inside & ~faint
    written = capsys.readouterr().out
    assert f"{int(kept.sum()):,} Gaussians ({int((~inside).sum()):,} outside the crop box, " in written
    assert f"{int((inside & faint).sum()):,} below opacity 0.5 dropped)" in written
    assert torch.equal(load_scene(out).means, src.means[kept])
    # in the input's coordinates: with --up +y the same Gaussians are kept, then turned
    assert main(["convert", str(scene(CROP)), str(tmp_path / "up.ply"), f"--crop-box={box}", "--up", "+y"]) == 0
    assert len(load_scene(tmp_path / "up.ply")) == int(inside.sum())
    for bad, says in (("1,2,3", "six numbers"), ("0,0,0,1,1,x", "six numbers"), ("1,0,0,0,1,1", "at most"),
                      ("5,5,5,6,6,6", "--crop-box removes all 4,096")):  # fmt: skip
        assert main(["convert", str(scene(CROP)), str(tmp_path / "bad.ply"), f"--crop-box={bad}"]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "bad.ply").exists()


def test_check_reads_the_output_back_and_says_what_it_costs(tmp_path, capsys):
    """--check renders OUT read back against the scene written: a float PLY is lossless; SPZ keeps the SH bands
    (at 12 bits' error) and .splat drops them, so its views are much further from the SH-2 crop's."""
    import re

    def checked(name: str) -> list[float] | str:
        assert main(["convert", str(scene(CROP)), str(tmp_path / name), "--check"]) == 0
        line = capsys.readouterr().out.strip().splitlines()[-1]
        if "bit for bit" in line:
            assert line == f"checked: {tmp_path / name} reads back bit for bit (4,096 Gaussians, every field)", line
            return "bit for bit"
        assert line.startswith(f"checked: {tmp_path / name} reads back and renders")
        lo, hi = re.search(r"at (-?[\d.]+)(?: to (-?[\d.]+))? dB PSNR", line).groups()
        return [float(lo), float(hi or lo)]

    assert checked("a.ply") == "bit for bit"
    spz, splat = checked("b.spz"), checked("c.splat")
    assert 30 < splat[0] <= splat[1] < spz[0] - 5, (splat, spz)


def test_check_tells_changed_values_that_render_identically(tmp_path):
    """The renderer keeps SH in float16: a file whose SH were rounded that far renders identically, and --check says
    which values changed rather than calling the file identical."""
    from scenes import save_scene
    from tools.convert import check_written

    src = load_scene(scene(CROP))
    rounded = load_scene(scene(CROP))
    rounded.sh = rounded.sh.half().float()
    assert not torch.equal(rounded.sh, src.sh)
    save_scene(rounded, tmp_path / "rounded.ply")
    line = check_written(src, str(tmp_path / "rounded.ply"))
    assert line.startswith(f"checked: {tmp_path / 'rounded.ply'} reads back and renders identically ("), line
    assert line.endswith("its values changed: sh by up to " + f"{float((src.sh - rounded.sh).abs().max()):.3g}"), line


def test_a_range_of_psnr_reads_as_one():
    """--check's line: a range says 'to' (negative values read plainly), identical views are counted apart."""
    from tools.convert import psnr_range

    assert psnr_range([41.23, 41.21]) == "41.2 dB PSNR"
    assert psnr_range([-73.3, -66.5]) == "-73.3 to -66.5 dB PSNR"
    assert psnr_range([161.0, float("inf"), 170.2, float("inf")]) == "161.0 to 170.2 dB PSNR, 2 of 4 views identical"


def test_an_output_named_only_by_its_format_is_refused(tmp_path, capsys, monkeypatch):
    """`convert in.splat .ply` wrote a hidden file named ".ply" (a name ls does not show): refused in one line,
    before any work, as is out/.compressed.ply; a name before the extension is all it takes."""
    monkeypatch.chdir(tmp_path)
    for out in (".ply", str(tmp_path / ".compressed.ply"), ".SPZ"):
        assert main(["convert", str(scene(THREE)), out]) == 2
        err = capsys.readouterr().err
        assert (
            err == f"warpsplat convert: error: {out}: names only the format: give the file a name (e.g. scene"
            f"{os.path.basename(out).lower()})\n"
        ), err
    assert os.listdir(tmp_path) == []
    assert main(["convert", str(scene(THREE)), "a.ply"]) == 0 and os.listdir(tmp_path) == ["a.ply"]
