"""`warpsplat bench` runs its code paths on the CPU (tiny sizes, no gsplat): real scenes and a composite.

Most runs use the torch backend, which is quick here but has no load balancing, sub-tile culling or
rasterizer forms: the lossless switches are checked on the Triton kernels, in the interpreter."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tools.cli import main


def test_bench_cpu_smoke(tmp_path, scene_path, capsys):
    out = tmp_path / "bench.json"
    scenes_dir = scene_path("lastchance.splat").parent
    rc = main([
        "bench", "--scenes", "fruit_drops_minimal.ply", "--scenes-dir", str(scenes_dir), "--size", "24x16",
        "--frames", "2", "--warmup", "0", "--psnr-every", "1", "--composites", "8k",
        "--cache-dir", str(tmp_path / "cache"), "--backend", "torch", "--json", str(out),
    ])  # fmt: skip
    assert rc == 0
    doc = json.loads(out.read_text())
    paths = {(p["scene"], p["path"], p["variant"]) for p in doc["paths"]}
    assert ("fruit_drops_minimal.ply", "orbit", "default") in paths
    assert ("composite_8k.ply", "flyover", "default") in paths
    assert ("composite_8k.ply", "overview", "rasterizer=batched") in paths
    for p in doc["paths"]:
        assert len(p["frame_ms"]) == 2 and p["median_ms"] > 0
        lossy = p["variant"].startswith("adagscale") or "occl" in p["variant"]
        if lossy:  # reports its loss against exact
            assert len(p["ssim_vs_default"]) == 2 and all(0 < v <= 1 for v in p["ssim_vs_default"])
            assert 0 <= p["pairs_removed"] < 1
        if p["variant"].startswith("temporal"):  # hit rates of the timed pass
            assert p["temporal"]["frames"] == 2 and p["temporal"]["window_builds"] >= 1
        assert 0 <= p["projected"] <= p["n_gaussians"]
        if p["variant"].endswith("known"):  # exact with the path's cameras
            assert all(v == float("inf") for v in p["psnr_vs_default"])
    overview = next(p for p in doc["paths"] if p["path"] == "overview" and p["variant"] == "default")
    assert overview["n_gaussians"] == 8_000 and overview["visible"] > 0
    from PIL import Image

    from tools.bench_plot import plot

    plot(doc, str(tmp_path / "bench.png"))
    assert Image.open(tmp_path / "bench.png").size[0] == 1000
    table = capsys.readouterr().out
    assert "composite_8k.ply / flyover" in table and doc["command"].startswith("warpsplat bench")


def test_bench_selects_paths_and_variants(tmp_path, scene_path):
    """--scenes none --paths flyover --variants 'adagscale tau=*': only those rows (and the default, the reference)."""
    out = tmp_path / "bench.json"
    scenes_dir = scene_path("lastchance.splat").parent
    rc = main([
        "bench", "--scenes", "none", "--scenes-dir", str(scenes_dir), "--size", "24x16", "--frames", "4",
        "--warmup", "0", "--composites", "8k", "--paths", "flyover", "--variants", "adagscale tau=*,temporal K=8 known",
        "--cache-dir", str(tmp_path / "cache"), "--backend", "torch", "--json", str(out), "--psnr-every", "2",
    ])  # fmt: skip
    assert rc == 0
    paths = json.loads(out.read_text())["paths"]
    rows = {(p["path"], p["variant"]) for p in paths}
    assert rows == {("flyover", "default"), ("flyover", "adagscale tau=0.3"), ("flyover", "adagscale tau=1"),
                    ("flyover", "adagscale tau=3"), ("flyover", "temporal K=8 known")}  # fmt: skip
    # the counts come from the same frames in every row: an exact window's equal the default's
    default, known = (next(p for p in paths if p["variant"] == v) for v in ("default", "temporal K=8 known"))
    assert (known["visible"], known["pairs"]) == (default["visible"], default["pairs"])
    # every row is compared on the same sampled frames (every 2nd of 4), the temporal one too, though it renders
    # every frame in order
    for p in paths:
        if p["variant"] != "default":
            assert len(p["psnr_vs_default"]) == 2, (p["variant"], p["psnr_vs_default"])
    assert main(["bench", "--variants", "nothing-like-this", "--scenes", "none", "--composites", "none"]) == 2


def test_lossless_switches_keep_the_image(tmp_path, scene_path):
    """The lossless variants' images against the default's, on the Triton kernels (the torch backend ignores
    the loop form and has no graphs). One frame of a real scene at 16x16: one tile at 16 px, four at 8 px."""
    out = tmp_path / "bench.json"
    scenes_dir = scene_path("fruit_drops_minimal.ply").parent
    rc = main([
        "bench", "--scenes", "fruit_drops_minimal.ply", "--scenes-dir", str(scenes_dir), "--size", "16x16",
        "--frames", "1", "--warmup", "0", "--composites", "none", "--paths", "orbit",
        "--variants", "graphs*,tile_size*,rasterizer*", "--backend", "triton", "--json", str(out),
    ])  # fmt: skip
    assert rc == 0
    rows = {p["variant"]: p for p in json.loads(out.read_text())["paths"]}
    assert set(rows) == {"default", "graphs=off", "tile_size=16", "rasterizer=batched"}
    assert rows["tile_size=16"]["pairs"] < rows["default"]["pairs"], "16 px tiles bin fewer pairs"
    for name in ("graphs=off", "tile_size=16", "rasterizer=batched"):
        assert len(rows[name]["psnr_vs_default"]) == 1 and rows[name]["psnr_vs_default"][0] > 100, name
    for name in ("graphs=off", "rasterizer=batched"):
        assert rows[name]["pairs"] == rows["default"]["pairs"], name


def test_quick_on_a_cpu_is_small_and_says_so(capsys):
    """--quick without CUDA: the bundled scene, small and short, no composites; arguments given are kept."""
    from tools.bench import QUICK_CPU_FRAMES, QUICK_CPU_SIZE, quick_on_cpu
    from tools.cli import build_parser

    args = build_parser().parse_args(["bench", "--quick", "--json", "r.json"])
    quick_on_cpu(args, 13)
    assert [os.path.basename(s) for s in args.scenes] == ["plant.splat"] and os.path.exists(args.scenes[0])
    assert (args.size, args.frames, args.warmup, args.composites) == (QUICK_CPU_SIZE, QUICK_CPU_FRAMES, 0, "none")
    err = capsys.readouterr().err
    assert err.startswith("bench --quick on a CPU: plant.splat at 160x120, 3 frames") and "results to r.json" in err
    args = build_parser().parse_args(["bench", "--quick", "--size", "32x24", "--frames", "5"])
    quick_on_cpu(args, 1)
    assert (args.size, args.frames) == ((32, 24), 5)


def test_quick_on_a_cpu_writes_nothing_into_the_checkout(tmp_path):
    """Run from the checkout, as a user would: `git status` is the same after, and the JSON lands in the cache
    folder under TMPDIR. (Smaller and shorter than the real --quick, which takes a minute.)"""
    if subprocess.run(["git", "status"], cwd=REPO, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")

    def status() -> str:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout  # fmt: skip

    before = status()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "tools", "bench", "--quick", "--size", "16x12", "--frames", "1", "--variants",
           "default"]  # fmt: skip
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert status() == before
    result = tmp_path / "warpsplat-bench" / "bench.json"
    assert json.loads(result.read_text())["paths"][0]["scene"] == "plant.splat"
    assert f"wrote {result}" in r.stdout


def test_commit_names_a_changed_tree_as_dirty(tmp_path, monkeypatch):
    """Results from a tree that differs from its checkout's HEAD do not claim that HEAD."""
    import subprocess

    from tools.bench_report import git_commit

    monkeypatch.delenv("WARPSPLAT_COMMIT", raising=False)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("one")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert git_commit(str(tmp_path)) == head
    (tmp_path / "a.txt").write_text("two")
    assert git_commit(str(tmp_path)) == f"{head}-dirty"
    monkeypatch.setenv("WARPSPLAT_COMMIT", "abc1234")
    assert git_commit(str(tmp_path)) == "abc1234"
