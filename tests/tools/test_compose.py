"""`warpsplat compose`: normalisation, grid placement, exact target counts, SH degree handling, and the
streamed .ply path (identical to building in memory)."""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from scenes import load_scene
from scenes.limits import MAX_GAUSSIANS
from tests.conftest import real_scene as scene
from tools.cli import main
from tools.compose import compose, extent, normalise, plan

SH0 = "donut_fused.ply"  # 45,624 Gaussians, SH 0
PLY = "playbot_crop.ply"  # 4,096 Gaussians, SH 2


def test_grid_of_normalised_copies(tmp_path, capsys):
    out = tmp_path / "grid.ply"
    assert main(["compose", str(out), str(scene(SH0)), str(scene(PLY)), "--grid", "2x2", "--spacing", "2"]) == 0
    assert "wrote" in capsys.readouterr().out
    s = load_scene(out)
    assert len(s) == 2 * (45_624 + 4_096) and s.sh_degree == 2
    # Cells in order: (x, z) = (-1, -1) donut, (1, -1) playbot, (-1, 1) donut, (1, 1) playbot.
    starts = np.cumsum([0, 45_624, 4_096, 45_624, 4_096])
    for c, (x, z) in enumerate([(-1, -1), (1, -1), (-1, 1), (1, 1)]):
        part = s.subset(slice(int(starts[c]), int(starts[c + 1])))
        lo, hi = part.robust_bounds()
        assert float((hi - lo).max()) == pytest.approx(1.0, abs=1e-3)  # unit size
        centre = part.center()
        assert centre[0].item() == pytest.approx(x, abs=1e-3) and centre[2].item() == pytest.approx(z, abs=1e-3)
        if c % 2 == 0:
            assert (part.sh[:, 1:] == 0).all()  # SH-0 input padded with zero bands


def test_target_count_is_exact_and_grows_rows(tmp_path):
    out = tmp_path / "t.ply"
    assert (
        main(["compose", str(out), str(scene(PLY)), "--grid", "2x1", "--target-count", "20k", "--sh-degree", "1"]) == 0
    )
    s = load_scene(out)
    assert len(s) == 20_000 and s.sh_degree == 1
    # 5 copies (4 whole + 1 partial) on a 2-column grid: 3 rows along z.
    zs = np.unique(np.round(s.means[:, 2].numpy() / 1.25))
    assert len(zs) >= 3


def test_target_count_forms(capsys):
    from tools.cli import gaussian_count

    assert gaussian_count("6M") == 6_000_000 and gaussian_count("30k") == 30_000 and gaussian_count("1500") == 1500
    with pytest.raises(SystemExit) as e:  # a usage error, as argparse reports them
        main(["compose", "x.ply", "y.ply", "--target-count", "lots"])
    assert e.value.code == 2
    assert "expected a Gaussian count" in capsys.readouterr().err
    for text in ("inf", "1e400", "nan", "0"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a Gaussian count"):
            gaussian_count(text)


def test_streamed_ply_equals_in_memory(tmp_path):
    scenes = [load_scene(scene(PLY)), load_scene(scene("test-splat.3-points-from-train.ply"))]
    compose(scenes, str(tmp_path / "a.ply"), grid=(3, 2), target_count=12_345, stream=True)
    compose(scenes, str(tmp_path / "b.ply"), grid=(3, 2), target_count=12_345, stream=False)
    a, b = load_scene(tmp_path / "a.ply"), load_scene(tmp_path / "b.ply")
    for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_normalise_keeps_shape():
    s = load_scene(scene(PLY))
    n = normalise(s)
    ratio = (n.means[1] - n.means[0]).norm() / (s.means[1] - s.means[0]).norm()
    assert torch.allclose(n.log_scales - s.log_scales, torch.log(ratio).expand_as(s.log_scales), atol=1e-5)
    assert torch.equal(n.quats, s.quats) and torch.equal(n.sh, s.sh)


def test_compose_3m_is_quick(tmp_path):
    """3M Gaussians from a real scene, streamed (the 30M figure is in tools/compose.py's NOTE)."""
    t = time.perf_counter()
    assert main(["compose", str(tmp_path / "big.ply"), str(scene("playbot_lod2.sog")), "--grid", "3x2",
                 "--target-count", "3000000", "--sh-degree", "0"]) == 0  # fmt: skip
    dt = time.perf_counter() - t
    print(f"\ncompose 3M (SH 0): {dt:.1f} s")
    assert (tmp_path / "big.ply").stat().st_size == pytest.approx(3_000_000 * 14 * 4, rel=1e-3)
    assert dt < 30


def _refused(argv: list[str], capsys, monkeypatch) -> str:
    """Run `warpsplat compose ARGV` expecting a one-line refusal before any input is read; return the line."""

    def no_reading(path, **options):
        raise AssertionError(f"read {path} before refusing")

    monkeypatch.setattr("scenes.load_scene", no_reading)
    assert main(["compose", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warpsplat compose: error: ") and err.count("\n") == 1, err
    return err


def test_negative_seed_is_refused(tmp_path, capsys, monkeypatch):
    out = tmp_path / "s.ply"
    assert "--seed -1" in _refused([str(out), str(scene(PLY)), "--seed", "-1"], capsys, monkeypatch)
    assert not out.exists()
    monkeypatch.undo()
    assert main(["compose", str(out), str(scene(PLY)), "--target-count", "1000", "--seed", str(2**64)]) == 0


def test_a_spacing_whose_positions_no_reader_would_open_is_refused(tmp_path, capsys, monkeypatch):
    """--spacing inf or 1e39 wrote a file of non-finite float32 positions, which every reader refuses."""
    out = tmp_path / "s.ply"
    for spacing in ("inf", "nan", "1e39", "0"):
        assert f"--spacing {float(spacing)}" in _refused([str(out), str(scene(PLY)), "--spacing", spacing], capsys,
                                                          monkeypatch)  # fmt: skip
    assert not out.exists()


def _no_composing(monkeypatch) -> None:
    """Fail a test that reaches the composing (without the check under test, it would run for minutes)."""

    def no_compose(*args, **kwargs):
        raise AssertionError("composed instead of refusing")

    monkeypatch.setattr("tools.compose.compose", no_compose)


def test_target_count_above_the_readers_limit_is_refused(tmp_path, capsys, monkeypatch):
    _no_composing(monkeypatch)
    for count in (str(MAX_GAUSSIANS + 1), "2000M"):
        err = _refused([str(tmp_path / "t.ply"), str(scene(PLY)), "--target-count", count], capsys, monkeypatch)
        assert "--target-count" in err and f"{MAX_GAUSSIANS:,}" in err


def test_grid_above_the_readers_limit_is_refused(tmp_path, capsys, monkeypatch):
    _no_composing(monkeypatch)
    assert main(["compose", str(tmp_path / "g.ply"), str(scene(PLY)), "--grid", "4096x4096"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--grid 4096x4096" in err and f"{MAX_GAUSSIANS:,}" in err


@pytest.mark.parametrize("counts", [[4096], [3, 4096], [45_624, 4_096, 3]])
@pytest.mark.parametrize("target", [None, 1, 3, 4099, 20_000, 100_003])
def test_extent_counts_the_plan(counts, target):
    for grid in [(1, 1), (2, 3), (5, 1)]:
        copies, _ = plan(counts, grid, target)
        assert extent(counts, grid, target) == (len(copies), sum(take for _, take in copies))


def _composed(monkeypatch) -> list[str]:
    """Record the outputs that reach the composing instead of composing them (the checks before are under test)."""
    outputs: list[str] = []
    monkeypatch.setattr("tools.compose.compose", lambda scenes, out, **kwargs: outputs.append(out) or 0)
    return outputs


def test_memory_check_before_composing(tmp_path, capsys, monkeypatch):
    """10M Gaussians at SH 2 built in memory (.splat) need GBs; streamed (.ply), about one copy."""
    monkeypatch.delenv("WARPSPLAT_MAX_MEMORY", raising=False)
    monkeypatch.setattr("scenes.limits.mem_available", lambda path="/proc/meminfo": 64 << 20)
    composed = _composed(monkeypatch)
    assert main(["compose", str(tmp_path / "m.splat"), str(scene(PLY)), "--target-count", "10M"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "of memory, more than the 0.07 GB cap (the free memory" in err
    assert main(["compose", str(tmp_path / "m.ply"), str(scene(PLY)), "--target-count", "10M"]) == 0
    assert composed == [str(tmp_path / "m.ply")]


def test_disk_check_before_composing(tmp_path, capsys, monkeypatch):
    """1M Gaussians at SH 2: 152 MB as .ply, more than 100 MB free. An .spz's size is unknown before it is written
    (entropy-coded), so only its memory is checked."""
    free = 100_000_000
    monkeypatch.setattr("shutil.disk_usage", lambda path: SimpleNamespace(total=10 * free, used=9 * free, free=free))
    composed = _composed(monkeypatch)
    assert main(["compose", str(tmp_path / "d.ply"), str(scene(PLY)), "--target-count", "1M"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"take about 0.15 GB on disk, more than the 0.10 GB free in {tmp_path}" in err
    assert main(["compose", str(tmp_path / "d.ply"), str(scene(PLY)), "--target-count", "600k"]) == 0
    assert main(["compose", str(tmp_path / "d.spz"), str(scene(PLY)), "--target-count", "1M"]) == 0
    assert composed == [str(tmp_path / "d.ply"), str(tmp_path / "d.spz")]


@pytest.mark.parametrize("ext", [".ply", ".glb", ".compressed.ply", ".splat"])
def test_output_bytes_bound_the_written_size(tmp_path, ext):
    """The free-disk check's sizes, against the writers: at most HEADER_BYTES under, 1 byte a Gaussian over."""
    from scenes.io import format_for_path
    from tools.compose import HEADER_BYTES, OUTPUT_BYTES

    out = tmp_path / f"o{ext}"
    assert main(["compose", str(out), str(scene(PLY)), "--target-count", "20k", "--sh-degree", "1"]) == 0
    expected = 20_000 * OUTPUT_BYTES[format_for_path(str(out)).name](4)
    assert expected <= out.stat().st_size + 20_000 and out.stat().st_size <= expected + HEADER_BYTES


def test_progress_bar_for_a_large_grid_of_small_inputs(tmp_path, monkeypatch):
    """50 copies of a 45,624-Gaussian scene: 2.28M Gaussians, over PROGRESS_MIN_GAUSSIANS, though each input is
    well under it."""
    calls = []
    monkeypatch.setattr("tools.compose.compose", lambda scenes, out, **kwargs: calls.append(kwargs) or 0)
    assert main(["compose", str(tmp_path / "p.ply"), str(scene(SH0)), "--grid", "50x1"]) == 0
    assert main(["compose", str(tmp_path / "p.ply"), str(scene(SH0)), "--grid", "40x1"]) == 0
    assert [c["progress"] for c in calls] == [True, False]
