"""`warpsplat bench` runs its code paths on the CPU (tiny sizes, no gsplat): real scenes and a composite.

Most runs use the torch backend, which is quick here but has no load balancing, sub-tile culling or
rasterizer forms: the lossless switches are checked on the Triton kernels, in the interpreter."""

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from tools.cli import CliError, main


def test_stall_is_a_frame_against_the_same_camera_in_the_other_pass():
    """A path whose frames fall tenfold along it, alike in both passes, has no stall; one frame five times its
    other pass's is one, whichever pass it is in."""
    from tools.bench_report import PathResult

    along = [10.0, 8.0, 5.0, 3.0, 1.0]
    row = PathResult(scene="s", path="flyover", n_gaussians=1, variant="default", size=(8, 8), timing="one by one",
                     frame_ms=list(along), first_pass_ms=list(along))  # fmt: skip
    assert row.stall() == 1.0 and row.p99() > 9.0  # the p99 sees the path, the stall does not
    row.first_pass_ms[3] = 15.0
    assert row.stall() == 5.0
    row.first_pass_ms[3], row.frame_ms[1] = 3.0, 40.0
    assert row.stall() == 5.0
    assert PathResult(scene="s", path="p", n_gaussians=1, variant="default", size=(8, 8), timing="t").stall() is None


def test_slowest_names_how_each_passs_slowest_frame_ran():
    """The worst-frames table says what the slowest frame of each pass was made of (a graph capture, a rebin):
    the label of the frame at the pass's maximum, nothing where a pass's labels were not recorded (anchors)."""
    from tools.bench_report import PathResult

    row = PathResult(scene="s", path="orbit", n_gaussians=1, variant="default", size=(8, 8), timing="in flight",
                     first_pass_ms=[1.8, 1.3, 0.3, 0.3], first_pass_ran=["capture", "eager+rebin", "replay", "replay"],
                     frame_ms=[0.3, 0.3, 0.5, 0.3], ran=["replay", "replay", "eager", "replay"])  # fmt: skip
    assert row.slowest() == "capture" and row.slowest(first=False) == "eager"
    row.first_pass_ms[1] = 2.0
    assert row.slowest() == "eager+rebin"
    row.ran = []
    assert row.slowest(first=False) == ""


def test_first_pass_p99_is_the_nearest_rank_of_the_first_pass():
    """The first pass's p99 is where warm-up misses show (a compile, a growth): of 100 frames at 5 ms with one at
    30 ms and one at 250 ms, the nearest-rank p99 is the 99th of the sorted 100, 30 ms: neither the median (5 ms,
    which hides the misses) nor the maximum (reported beside it), and not the second pass's p99."""
    from tools.bench_report import PathResult

    first = [5.0] * 100
    first[0], first[40] = 250.0, 30.0  # the first frame's compile, a growth later on
    row = PathResult(scene="s", path="flyover", n_gaussians=1, variant="default", size=(8, 8), timing="one by one",
                     frame_ms=[5.0] * 100, first_pass_ms=first)  # fmt: skip
    assert row.first_p99() == 30.0 and row.first_max() == 250.0 and row.p99() == 5.0
    assert row.as_dict({})["first_p99_ms"] == 30.0


def test_vs_default_takes_the_bracketing_default_when_there_is_one():
    """A row's speed against the default: against the default timed right after it (--bracket) when it was, so
    that a drift of the run between the default's own row and this one does not count as the variant's."""
    from tools.bench_report import PathResult, vs_default

    def row(variant, ms, after=()):
        return PathResult(scene="s", path="p", n_gaussians=1, variant=variant, size=(8, 8), timing="one by one",
                          frame_ms=list(ms), default_after_ms=list(after))  # fmt: skip

    default = row("default", [2.0, 2.0, 2.0])
    assert vs_default(default, row("temporal K=8 known", [2.5, 2.5, 2.5])) == 0.8  # against the default's row
    drifted = row("temporal K=8 known", [2.5, 2.5, 2.5], after=[2.6, 2.4, 2.5])
    assert vs_default(default, drifted) == 1.0  # the run slowed down: the default right after took as long
    assert vs_default(default, default) is None and vs_default(None, drifted) is None


def test_bench_bracket_times_the_default_after_each_row(tmp_path, scene_path, capsys):
    out = tmp_path / "bench.json"
    rc = main([
        "bench", "--scenes", "lastchance.splat", "--scenes-dir", str(scene_path("lastchance.splat").parent),
        "--size", "24x16", "--frames", "2", "--warmup", "0", "--composites", "none", "--variants", "tile_size=16",
        "--bracket", "--paths", "orbit", "--cache-dir", str(tmp_path / "cache"), "--backend", "torch",
        "--json", str(out),
    ])  # fmt: skip
    assert rc == 0
    rows = {p["variant"]: p for p in json.loads(out.read_text())["paths"]}
    assert rows["default"]["default_after_ms"] == [] and len(rows["tile_size=16"]["default_after_ms"]) == 2
    assert "bracketed (--bracket)" in capsys.readouterr().out


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
    assert doc["higs"]["status"] == "needs CUDA" and "above 1, warpsplat is faster" in doc["ratio"]
    assert doc["sizes"] == [[24, 16]] and doc["commit"] != "unknown"
    for p in doc["paths"]:
        assert len(p["frame_ms"]) == 2 and len(p["first_pass_ms"]) == 2 and p["median_ms"] > 0
        assert p["first_max_ms"] == max(p["first_pass_ms"]) and p["p99_ms"] == max(p["frame_ms"])
        timed = [(a, b) for a, b in zip(p["first_pass_ms"], p["frame_ms"]) if a > 0 and b > 0]
        assert p["stall"] == (max(max(a, b) / min(a, b) for a, b in timed) if timed else None)
        assert p["vs_anchors"] == {"gsplat": None, "HiGS": None} and p["size"] == [24, 16]
        # how each frame ran: on a CPU stage by stage (no CUDA graphs), or a temporal window's unchanged frame reused
        assert len(p["ran"]) == len(p["first_pass_ran"]) == 2, p["variant"]
        assert all(re.fullmatch(r"(eager|counted|reused)(\+rebin)?", x) for x in p["ran"] + p["first_pass_ran"])
        assert p["timing"] == ("one by one" if p["variant"] == "frames=one-by-one" else p["timing"])
        lossy = p["variant"].startswith("adagscale") or "occl" in p["variant"]
        if lossy:  # reports its loss against exact
            assert len(p["ssim_vs_default"]) == 2 and all(0 < v <= 1 for v in p["ssim_vs_default"])
            assert 0 <= p["pairs_removed"] < 1
        if p["variant"].startswith("temporal"):  # hit rates of the timed pass
            assert p["temporal"]["frames"] == 2 and p["temporal"]["window_builds"] >= 1
        assert 0 <= p["projected"] <= p["n_gaussians"]
        assert p["host_probe_us"] > 0 and p["host_probe_after_us"] > 0  # the host's speed, before and after the row
        if p["variant"].endswith("known"):  # exact with the path's cameras
            assert all(v == float("inf") for v in p["psnr_vs_default"])
    overview = next(p for p in doc["paths"] if p["path"] == "overview" and p["variant"] == "default")
    assert overview["n_gaussians"] == 8_000 and overview["visible"] > 0
    from PIL import Image

    from tools.bench_plot import LEFT, PANEL, RIGHT, plot

    plot(doc, str(tmp_path / "bench.png"))
    assert Image.open(tmp_path / "bench.png").size[0] == LEFT + PANEL + RIGHT  # one panel: no anchor on a CPU
    table = capsys.readouterr().out
    assert "composite_8k.ply / flyover" in table and doc["command"].startswith("warpsplat bench")
    assert "HiGS: needs CUDA" in table and "worst frames (ms) and peak GPU memory" in table
    assert "host speed before and after each row's passes" in table and "warpsplat " in table.split("host speed")[1]


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
    from scenes import load_scene, save_scene

    out = tmp_path / "bench.json"
    crop = load_scene(scene_path("playbot_crop.ply"))
    save_scene(crop.subset(slice(0, None, 4)), tmp_path / "crop.ply")  # 1,024 real Gaussians: the interpreter is slow
    rc = main([
        "bench", "--scenes", "crop.ply", "--scenes-dir", str(tmp_path), "--size", "16x16",
        "--frames", "1", "--warmup", "0", "--composites", "none", "--paths", "orbit",
        "--variants", "graphs*,tile_size*,rasterizer*,outputs*", "--backend", "triton", "--json", str(out),
    ])  # fmt: skip
    assert rc == 0
    rows = {p["variant"]: p for p in json.loads(out.read_text())["paths"]}
    assert set(rows) == {"default", "graphs=off", "tile_size=16", "rasterizer=batched", "outputs=both", "outputs=rgba8"}
    assert rows["tile_size=16"]["pairs"] < rows["default"]["pairs"], "16 px tiles bin fewer pairs"
    # the rows' images: the float pair, as the anchors return (BENCH_OUTPUTS); the "outputs=" rows all three, and the
    # 8-bit image alone, which is compared with the default's made 8-bit the same way
    for name in ("graphs=off", "tile_size=16", "rasterizer=batched", "outputs=both", "outputs=rgba8"):
        assert len(rows[name]["psnr_vs_default"]) == 1 and rows[name]["psnr_vs_default"][0] > 100, name
    for name in ("graphs=off", "rasterizer=batched"):
        assert rows[name]["pairs"] == rows["default"]["pairs"], name


def test_every_row_writes_the_images_the_anchors_return():
    """Like for like: gsplat and HiGS return the float RGB and coverage, so every warpsplat row writes those
    (`BENCH_OUTPUTS`), but the two rows that time the renderer's other outputs."""
    from tools.bench_variants import BENCH_OUTPUTS, variants

    rows = variants()
    assert BENCH_OUTPUTS == "float"
    assert {name: s.outputs for name, s in rows.items() if name.startswith("outputs=")} == {
        "outputs=both": "both", "outputs=rgba8": "rgba8"}  # fmt: skip
    assert all(s.outputs == "float" for name, s in rows.items() if not name.startswith("outputs="))


def test_quick_on_a_cpu_is_small_and_says_so(capsys):
    """--quick without CUDA: the bundled scene, small and short, no composites, no rows whose switch the torch
    backend does not have; arguments given are kept."""
    from tools.bench import QUICK_CPU_FRAMES, QUICK_CPU_SIZE, quick_on_cpu
    from tools.bench_variants import TRITON_ONLY, selected_variants, variants
    from tools.cli import build_parser

    args = build_parser().parse_args(["bench", "--quick", "--json", "r.json"])
    note = quick_on_cpu(args)
    assert [os.path.basename(s) for s in args.scenes] == ["plant.splat"] and os.path.exists(args.scenes[0])
    assert (args.size, args.frames, args.warmup, args.composites) == (QUICK_CPU_SIZE, QUICK_CPU_FRAMES, 0, "none")
    assert set(selected_variants(args.variants)) == set(variants()) - set(TRITON_ONLY)
    assert note.startswith("bench --quick on a CPU: plant.splat at 160x120, 2 frames") and "results to r.json" in note
    args = build_parser().parse_args(["bench", "--quick", "--size", "32x24", "--frames", "5", "--variants", "tile*"])
    quick_on_cpu(args)
    assert (args.size, args.frames, args.variants) == ((32, 24), 5, "tile*")


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


def test_commit_is_the_running_codes_whatever_the_current_folder(tmp_path, monkeypatch):
    """The JSON names the commit of the checkout whose code ran, also when the bench runs from another folder
    (git in the current folder said "unknown" there)."""
    from tools.bench_report import git_commit

    monkeypatch.delenv("WARPSPLAT_COMMIT", raising=False)
    if subprocess.run(["git", "status"], cwd=REPO, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    monkeypatch.chdir(tmp_path)  # not a checkout
    assert git_commit().removesuffix("-dirty") == head.strip()


def test_every_row_times_whole_frames(tmp_path, scene_path, monkeypatch):
    """Every row's passes cover every frame's work, whichever way the row is timed: the default (frames in flight,
    on a fresh renderer whose first frames are binned again when they are checked), one by one, and AdaGScale
    (a pair capacity of its own, fresh too). On a clock that moves only when pairs are rasterized, one second each,
    every frame of every row takes one second. (With a stream's rebinning outside its frames' timers, the default's
    first pass took 0, 0 and 2 s.)"""
    import renderer.pipeline
    import renderer.timing
    from renderer.frame import Frame

    clock = [0.0]
    monkeypatch.setattr(renderer.timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    rasterize = Frame.rasterize

    def rasterize_on_the_clock(self, **tuning):
        rasterize(self, **tuning)
        if self.counted or self.capacity > 0:  # an empty capacity rasterizes nothing
            clock[0] += 1.0

    monkeypatch.setattr(Frame, "rasterize", rasterize_on_the_clock)
    monkeypatch.setattr(renderer.pipeline, "frames_in_flight", lambda device: True)  # the default as on a GPU
    out = tmp_path / "bench.json"
    rc = main([
        "bench", "--scenes", "fruit_drops_minimal.ply", "--scenes-dir", str(scene_path("lastchance.splat").parent),
        "--size", "24x16", "--frames", "3", "--warmup", "0", "--composites", "none", "--paths", "orbit",
        "--variants", "frames=one-by-one,adagscale,frames=counted", "--backend", "torch", "--json", str(out),
    ])  # fmt: skip
    assert rc == 0
    rows = {p["variant"]: p for p in json.loads(out.read_text())["paths"]}
    assert rows["default"]["timing"] == "in flight" and rows["frames=one-by-one"]["timing"] == "one by one"
    for name, p in rows.items():
        assert sum(p["first_pass_ms"]) == sum(p["frame_ms"]) == 3000.0, (name, p["first_pass_ms"], p["frame_ms"])
        assert p["frame_ms"] == [1000.0] * 3, name


def test_gsplat_inputs_are_made_before_its_frames(scene_path, monkeypatch):
    """The gsplat anchor's camera tensors are made once per path: its timed calls only index them (making a tensor
    there fails here), and call i gets camera i's world-to-camera matrix and intrinsics. (gsplat needs CUDA: a
    stand-in `gsplat` module records the calls.)"""
    import numpy as np
    import torch

    from scenes import load_scene
    from tools.bench_gsplat import GsplatRenderer
    from tools.bench_paths import object_paths

    calls = []

    def rasterization(means, quats, scales, opacities, sh, viewmats, Ks, width, height, **kw):
        calls.append((viewmats.clone(), Ks.clone(), width, height, kw))
        return torch.zeros(1, height, width, 3), None, None

    monkeypatch.setitem(sys.modules, "gsplat", SimpleNamespace(rasterization=rasterization))
    scene = load_scene(scene_path("fruit_drops_minimal.ply"))
    cams = object_paths(scene, 24, 16, 3)["orbit"]
    draw = GsplatRenderer(scene, "cpu").frames(cams)

    def no_tensors(*a, **k):
        raise AssertionError("a tensor made inside a timed call")

    monkeypatch.setattr(torch, "tensor", no_tensors)
    monkeypatch.setattr(torch, "from_numpy", no_tensors)
    for i in (2, 0, 1):
        assert draw(i).shape == (16, 24, 3)
    for (viewmats, Ks, width, height, kw), i in zip(calls, (2, 0, 1), strict=True):
        assert viewmats.shape == (1, 4, 4) and np.allclose(viewmats[0].numpy(), cams[i].viewmat, atol=1e-6)
        assert np.allclose(Ks[0].numpy(), cams[i].K) and (width, height) == (24, 16)
        assert kw["near_plane"] == 0.01 and kw["eps2d"] == 0.3 and kw["rasterize_mode"] == "classic"


def test_peak_memory_is_above_its_baseline(monkeypatch):
    """PeakMemory (CUDA's allocator counters, faked here): the peak since entry less the baseline, which is what
    was allocated at entry unless one is given (warpsplat's rows give the renderer's scene)."""
    import torch

    from tools.bench_timing import PeakMemory

    state = {"now": 300 * 2**20, "peak": 10**12}
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: state.update(peak=state["now"]))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: state["now"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: state["peak"])
    cuda = SimpleNamespace(type="cuda")
    with PeakMemory(cuda) as m:
        state["peak"] += 50 * 2**20  # a transient 50 MB above the 300 held on entry
    assert m.mb == 50.0
    with PeakMemory(cuda, baseline=100 * 2**20) as m:  # 200 of the 300 are the renderer's own
        state["peak"] += 10 * 2**20
    assert m.mb == 210.0
    with PeakMemory(SimpleNamespace(type="cpu")) as m:
        pass
    assert m.mb is None


def test_json_in_a_missing_folder_is_refused_before_any_work(tmp_path, capsys):
    """A --json in a folder that does not exist is one line naming the folder, before the bench spends minutes
    on its paths (it used to create the folder at the end, so a typo went unnoticed); nothing is created."""
    out = tmp_path / "typo" / "bench.json"
    assert main(["bench", "--quick", "--json", str(out), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and f"the folder {out.parent} does not exist; pass --mkdir" in err[0], err
    assert os.listdir(tmp_path) == [], "nothing is created"


def test_temporal_table_says_whether_the_window_is_in_use(capsys):
    """Issue 26: the bench shows the window's measured choice and the times behind it, per temporal row."""
    from tools.bench_report import print_temporal

    stats = dict(window_choice="off", window_ms=1.25, plain_ms=0.75, frames_window_declined=37,
                 window_hit_rate=0.0, window_builds=1, window_decisions=2)  # fmt: skip
    row = SimpleNamespace(scene="plant.splat", path="orbit", size=(64, 48), variant="temporal K=8 known",
                          temporal=stats, projected=1234)  # fmt: skip
    print_temporal([row, SimpleNamespace(temporal={})], (64, 48))
    lines = capsys.readouterr().out.strip().splitlines()
    assert "measured choice" in lines[0] and len(lines) == 2
    assert lines[1].split()[-8:] == ["off", "1.250", "0.750", "37", "0.0%", "1", "2", "1,234"], lines[1]


def test_host_probe_is_the_median_rounds_time_a_loop(monkeypatch):
    """`host_probe_us`: each round's clock span over its loops, in us, and the median round (a round slowed by
    another process does not move it)."""
    import tools.bench_timing as bt

    spans = iter([0.002, 0.004, 0.003, 0.050, 0.003, 0.001, 0.004, 0.003, 0.002])  # s per round: median 0.003
    clock = {"t": 0.0, "start": True}

    def perf_counter():
        if not clock["start"]:
            clock["t"] += next(spans)
        clock["start"] = not clock["start"]
        return clock["t"]

    monkeypatch.setattr(bt.time, "perf_counter", perf_counter)
    assert bt.PROBE_ROUNDS == 9
    assert bt.host_probe_us() == pytest.approx(0.003 * 1e6 / bt.PROBE_LOOPS)


def test_rows_whose_host_changed_speed_while_they_ran_are_named(capsys):
    """The host probes before and after a row's passes: the ranges take both, and a row whose two probes are more
    than PROBE_MOVED apart (the GPU machine's two speeds are 2x apart) is named with them; a steady row is not."""
    from tools.bench_report import PROBE_MOVED, PathResult, print_host_probe

    def row(variant, path, before, after):
        return PathResult(scene="s", path=path, n_gaussians=1, variant=variant, size=(8, 8), timing="in flight",
                          host_probe_us=before, host_probe_after_us=after)  # fmt: skip

    assert PROBE_MOVED == 1.3
    rows = [row("default", "orbit", 10.0, 12.0), row("default", "flyover", 11.0, 22.0), row("HiGS", "orbit", 9.0, 9.5),
            row("gsplat", "orbit", 20.0, None)]  # fmt: skip
    print_host_probe(rows)
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("warpsplat 10.0-22.0, HiGS 9.0-9.5, gsplat 20.0-20.0"), out[0]
    assert out[1].endswith("s / flyover default 11.0 -> 22.0"), out[1]
    assert "orbit" not in out[1]
    assert out[2].endswith("9.0 us): s / orbit gsplat 20.0"), out[2]  # its process slow throughout
    assert len(out) == 3


def test_rows_timed_at_the_slow_host_speed_throughout_are_named(capsys):
    """A row whose probes are both over PROBE_MOVED x the run's fastest ran at the slow speed all along: its medians
    are host-paced at that speed, and the report says so (HiGS's playbot close-up drew it in one process and took
    0.515 ms against 0.397 in another); rows at the fast speed, and a row whose speed changed, are not named here."""
    from tools.bench_report import PathResult, print_host_probe

    def row(variant, path, before, after):
        return PathResult(scene="s", path=path, n_gaussians=1, variant=variant, size=(8, 8), timing="in flight",
                          host_probe_us=before, host_probe_after_us=after)  # fmt: skip

    rows = [row("default", "orbit", 10.0, 10.8), row("HiGS", "close", 20.6, 19.9), row("HiGS", "orbit", 19.5, 11.3),
            row("default", "close", 12.9, 13.1)]  # fmt: skip
    print_host_probe(rows)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3, out
    assert out[2] == ("rows timed at the host's slow speed throughout (probes over 1.3x the run's fastest, 10.0 us): "
                      "s / close HiGS 20.6 -> 19.9"), out[2]  # fmt: skip


def test_a_stream_pass_times_to_the_end_of_the_devices_work(monkeypatch):
    """A pass's wall frames/s counts to the end of its last frame's work, which only the final sync waits for (a
    GPU's frames end after their launches return): with a sync that takes 50 ms, two frames take at least that."""
    import time

    import torch

    import tools.bench as bench
    from renderer.timing import StageTimer

    cpu = torch.device("cpu")

    def render_stream(cams, settings, futures=None):
        for _ in cams:
            timer = StageTimer(cpu)
            timer.stop()
            yield SimpleNamespace(timer=timer, stats=SimpleNamespace(ran_label=lambda: "replay"))

    monkeypatch.setattr(bench, "synchronize", lambda device: time.sleep(0.05))
    renderer = SimpleNamespace(device=cpu, render_stream=render_stream)
    handover, fps, timers, ran = bench.stream_pass(renderer, [None, None], None)
    assert len(handover) == len(timers) == 2 and ran == ["replay", "replay"]
    assert fps <= 2 / 0.05, fps


def tiny_run(tmp_path, scene: str) -> list[str]:
    """A bench run of one frame of one path at 24x16 on the torch backend: under a second on a CPU."""
    return ["bench", "--scenes", scene, "--size", "24x16", "--frames", "1", "--warmup", "0", "--composites", "none",
            "--paths", "orbit", "--variants", "default", "--backend", "torch",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip


def test_an_existing_json_is_replaced_only_with_overwrite(tmp_path, small_scene, capsys):
    """An existing --json file is one line naming it and --overwrite, before any row runs, and is kept (the bench
    replaced it without asking: an earlier run's results lost to a reused name); --overwrite replaces it, whole,
    with no temporary left. The bench's own file in --cache-dir is replaced at each run, unasked."""
    out = tmp_path / "bench.json"
    out.write_text("an earlier run's results")
    assert main([*tiny_run(tmp_path, small_scene), "--json", str(out)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err == [f"warpsplat bench: error: {out}: output exists; pass --overwrite to replace it"], err
    assert out.read_text() == "an earlier run's results"
    assert main([*tiny_run(tmp_path, small_scene), "--json", str(out), "--overwrite"]) == 0
    assert json.loads(out.read_text())["paths"][0]["variant"] == "default"
    assert sorted(os.listdir(tmp_path)) == ["bench.json"], "no temporary left, no cache folder made"
    for _ in range(2):
        assert main(tiny_run(tmp_path, small_scene)) == 0
    assert json.loads((tmp_path / "cache" / "bench.json").read_text())["paths"][0]["variant"] == "default"


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--psnr-every", "0", "--psnr-every 0: must be at least 1"),
        ("--warmup", "-1", "--warmup -1: must be 0 or more"),
        ("--scenes-dir", "/nonexistent/scenes", "--scenes-dir /nonexistent/scenes: no such folder"),
        ("--paths", "zzz", "--paths 'zzz': 'zzz' matches none of this run's paths: orbit, close (as PATH or SCENE/"),
    ],
)
def test_bad_arguments_are_one_line_before_any_work(tmp_path, small_scene, capsys, flag, value, message):
    """An argument out of range is one line naming it, before the bench renders anything: --psnr-every 0 was a
    traceback ("range() arg 3 must not be zero") once the first scene had loaded, --warmup -1 ran as 0, and a
    --scenes-dir that does not exist went unnoticed where the scenes were paths, and a --paths pattern that
    matched no path ran nothing."""
    out = tmp_path / "bench.json"
    assert main([*tiny_run(tmp_path, small_scene), "--json", str(out), flag, value]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith(f"warpsplat bench: error: {message}"), err
    assert os.listdir(tmp_path) == [], "nothing is written"


def test_quick_on_a_cpu_says_what_it_runs_only_once_its_arguments_pass(tmp_path, small_scene, capsys):
    """bench --quick on a CPU announces its short run in one line, but only for a run that goes ahead: a refused
    one printed the announcement, then the error."""
    out = tmp_path / "bench.json"
    assert main([*tiny_run(tmp_path, small_scene), "--quick", "--json", str(out), "--paths", "zzz"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("warpsplat bench: error: --paths 'zzz'"), err
    assert main([*tiny_run(tmp_path, small_scene), "--quick", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("bench --quick on a CPU: ") and f"results to {out}" in err.splitlines()[0], err


def test_path_patterns_match_this_runs_paths(small_scene):
    """--paths is checked against the paths the run will have, by name or as SCENE/PATH, before any scene is
    loaded: the names checked are those the path makers return."""
    from scenes import load_scene
    from tools.bench_paths import COMPOSITE_PATHS, OBJECT_PATHS, check_path_patterns, composite_paths, object_paths

    scene = load_scene(small_scene)
    assert tuple(object_paths(scene, 8, 8, 1)) == OBJECT_PATHS
    assert tuple(composite_paths(scene, 8, 8, 1)) == COMPOSITE_PATHS
    for ok in ("*", "close", "plant.splat/orbit", "plant*,composite_6M.ply/overview", "*/flyover"):
        check_path_patterns(ok, ["plant.splat"], ["composite_6M.ply"])
    check_path_patterns("zzz", [], [])  # a run without scenes: nothing to select from, nothing run
    for bad in ("flyover", "narcissus.sog/orbit", "orbit,composite_24M.ply/*"):  # no composite, another scene
        with pytest.raises(CliError, match="matches none of this run's paths: orbit, close "):
            check_path_patterns(bad, ["plant.splat"], [])
