"""The AdaGScale sweep script (tests/gpu/adagscale_sweep.py) runs end to end on tiny frames: any device, the
torch backend on a CPU. Its timings mean something only on the GPU; here its paths, variants, JSON and tables
are checked."""

import json

from tests.gpu.adagscale_sweep import main


def test_sweep_runs_end_to_end(tmp_path, scene_path, capsys):
    scenes_dir = scene_path("lastchance.splat").parent
    rc = main([
        "--scenes", "lastchance.splat", "--scenes-dir", str(scenes_dir), "--composites", "8k",
        "--cache-dir", str(tmp_path / "cache"), "--size", "32x24", "--frames", "2", "--warmup", "1",
        "--taus", "0.1,0.8", "--paths", "lastchance orbit,8k overview", "--out-dir", str(tmp_path),
    ])  # fmt: skip
    assert rc == 0
    doc = json.loads((tmp_path / "adagscale_sweep.json").read_text())
    rows = {(r["label"], r["variant"]): r for r in doc["rows"]}
    assert set(rows) == {(p, v) for p in ("lastchance orbit", "8k overview") for v in ("exact", "tau=0.1", "tau=0.8")}
    for (_, variant), r in rows.items():
        assert len(r["frame_ms"]) == 2 and r["median_ms"] > 0 and r["pairs"] > 0
        assert set(r["stages"]) >= {"project", "bin", "sort", "rasterize"}
        if variant == "exact":
            assert r["removed"] == 0 and r["psnr"] == [] and r["speedup"] == 1.0
        else:
            assert len(r["psnr"]) == 2 and 0 < r["removed"] < 1
    assert rows[("8k overview", "tau=0.8")]["pairs"] <= rows[("8k overview", "tau=0.1")]["pairs"]
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("| 0.8 |")  # the per-tau summary comes last
    assert "| 8k overview | 8,000 |" in out
