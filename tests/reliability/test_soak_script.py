"""The soak script (tests/reliability/soak.py, not collected itself) runs end to end for a few frames."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SOAK = Path(__file__).with_name("soak.py")


def load_soak():
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_soak_runs_and_records(tmp_path, scene_path, capsys):
    soak = load_soak()
    out = tmp_path / "soak.json"
    argv = [str(scene_path("test-splat.3-points-from-train.ply")), "--frames", "8", "--size", "16x16", "--every", "2",
            "--tolerance-mb", "64", "--json", str(out)]  # fmt: skip
    assert soak.main(argv) == 0
    text = capsys.readouterr().out
    assert "OK: no growth" in text and "8 frames in" in text
    record = json.loads(out.read_text())
    assert [s["frame"] for s in record["samples"]] == [2, 4, 6, 8]
    assert record["failed"] == [] and set(record["growth"]) == {"rss_mb"}


def test_soak_reports_growth_as_exit_1(tmp_path, scene_path, monkeypatch, capsys):
    soak = load_soak()
    rss = iter(range(100 << 20, 1 << 40, 50 << 20))  # +50 MB a sample: a leak
    monkeypatch.setattr(soak, "host_rss", lambda: next(rss))
    argv = [str(scene_path("test-splat.3-points-from-train.ply")), "--frames", "8", "--size", "16x16", "--every", "2"]
    assert soak.main(argv) == 1
    assert "FAIL: memory grew: rss_mb" in capsys.readouterr().out
