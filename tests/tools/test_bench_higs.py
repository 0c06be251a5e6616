"""HiGS in `warpsplat bench` (tools/bench_higs.py): found where --higs points, timed in a child process through files,
its frames compared with the right frames of warpsplat's, and a missing or failing HiGS said so.

HiGS itself needs CUDA. Here a stand-in package named `gsplat` (written below, with HiGS's two calls) renders
through warpsplat's torch pipeline on the CPU, so the protocol runs end to end: the child receives the cameras as
world-to-camera matrices and intrinsics, and its image of frame i must be warpsplat's frame i."""

from __future__ import annotations

import json
import textwrap

import pytest

from tools.bench_higs import Higs, find_higs
from tools.cli import main

FAKE_HIGS = """
import time
import types

import numpy as np
import torch

from renderer import Camera, Renderer
from scenes import GaussianScene

SLOW_TILE = 16  # this tile size sleeps SLOW_S more per frame: the bench must keep the other
SLOW_S = 0.5
FAIL = {fail}


class GaussianInferenceScene:
    @classmethod
    def from_gaussian_tensors(cls, means, quats, scales, opacities, colors, sh_degree, sh_compression, *, id):
        assert sh_compression == "none" and colors.shape[1] == (sh_degree + 1) ** 2
        s = cls()
        scene = GaussianScene(means=means.cpu(), quats=quats.cpu(), log_scales=scales.log().cpu(),
                              opacity_logits=torch.logit(opacities.double()).float().cpu(), sh=colors.cpu())
        s.renderer = Renderer(scene, device="cpu", backend="torch")
        return s


def rasterize_gaussian_inference_scene(scene, *, viewmats, Ks, width, height, tile_size, near_plane, far_plane, eps2d):
    if FAIL:
        raise RuntimeError("the stand-in fails on purpose")
    assert viewmats.shape == (1, 4, 4) and Ks.shape == (1, 3, 3) and tile_size in (8, 16)
    K = Ks[0].double().numpy()
    cam = Camera(width, height, K[0, 0], K[1, 1], K[0, 2], K[1, 2], np.linalg.inv(viewmats[0].double().numpy()))
    if tile_size == SLOW_TILE:
        time.sleep(SLOW_S)
    return types.SimpleNamespace(frame=scene.renderer.render(cam).image.clone()[None])
"""


def fake_higs(folder, fail: bool = False) -> str:
    """A folder holding a stand-in `gsplat` package with HiGS's calls (see FAKE_HIGS)."""
    pkg = folder / "gsplat"
    (pkg / "experimental").mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "stand-in"\n')
    (pkg / "experimental" / "__init__.py").write_text(textwrap.dedent(FAKE_HIGS.format(fail=fail)))
    return str(folder)


def bench(tmp_path, scene_path, *extra) -> int:
    return main([
        "bench", "--scenes", "fruit_drops_minimal.ply", "--scenes-dir", str(scene_path("lastchance.splat").parent),
        "--size", "24x16", "--frames", "3", "--warmup", "1", "--psnr-every", "1", "--composites", "none",
        "--paths", "orbit", "--variants", "default", "--backend", "torch", "--json", str(tmp_path / "bench.json"),
        *extra,
    ])  # fmt: skip


def test_higs_is_timed_in_a_child_and_compared_frame_by_frame(tmp_path, scene_path, capsys, monkeypatch):
    """The child times both tile sizes and keeps the faster; its sampled frames come back in order (each against
    warpsplat's frame of the same index: the stand-in renders with warpsplat's pipeline, so the orbit's frames
    match only index for index); the one-by-one row runs beside the default to be compared with it."""
    import renderer.pipeline

    monkeypatch.delenv("WARPSPLAT_HIGS", raising=False)
    monkeypatch.setattr(renderer.pipeline, "frames_in_flight", lambda device: True)  # the default as on a GPU
    assert bench(tmp_path, scene_path, "--higs", fake_higs(tmp_path / "higs")) == 0
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["higs"]["status"] == "found" and doc["higs"]["detail"] == "gsplat stand-in"
    rows = {p["variant"]: p for p in doc["paths"]}
    assert set(rows) == {"default", "frames=one-by-one", "HiGS"}
    assert rows["default"]["timing"] == "in flight" and rows["frames=one-by-one"]["timing"] == "one by one"
    h = rows["HiGS"]
    assert h["tile_size"] == 8 and h["tile_medians"]["16"] > h["tile_medians"]["8"] + 250
    assert len(h["frame_ms"]) == len(h["first_pass_ms"]) == len(h["back_to_back_ms"]) == 3
    assert len(h["psnr_vs_default"]) == 3 and min(h["psnr_vs_default"]) > 60, h["psnr_vs_default"]
    assert h["host_probe_us"] > 0 and h["host_probe_after_us"] > 0  # taken in the child, where HiGS was timed
    for name in ("default", "frames=one-by-one"):
        x = rows[name]["vs_anchors"]["HiGS"]
        timing = "back_to_back_median_ms" if name == "default" else "median_ms"  # like with like
        assert x == pytest.approx(h[timing] / rows[name]["median_ms"]), name
    out = capsys.readouterr().out
    assert "against the anchors" in out and "HiGS, one by one, 24x16" in out


def test_failing_higs_child_is_reported_and_the_bench_goes_on(tmp_path, scene_path, capsys, monkeypatch):
    monkeypatch.delenv("WARPSPLAT_HIGS", raising=False)
    assert bench(tmp_path, scene_path, "--higs", fake_higs(tmp_path / "higs", fail=True)) == 0
    doc = json.loads((tmp_path / "bench.json").read_text())
    why = doc["higs"]["failures"]["fruit_drops_minimal.ply"]
    assert why.startswith("exit status 1") and "the stand-in fails on purpose" in why
    assert {p["variant"] for p in doc["paths"]} == {"default", "frames=one-by-one"}
    captured = capsys.readouterr()
    assert "HiGS's child process failed" in captured.err
    default = next(line for line in captured.out.splitlines() if " default " in line)
    assert "failed" in default  # the row's HiGS cell


def test_higs_folders_without_higs_are_errors(tmp_path, capsys, monkeypatch):
    """A folder named by --higs or $WARPSPLAT_HIGS must hold HiGS: a one-line error (exit 2) before any work."""
    monkeypatch.delenv("WARPSPLAT_HIGS", raising=False)
    assert main(["bench", "--higs", str(tmp_path / "missing"), "--scenes", "none", "--composites", "none"]) == 2
    assert "--higs" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("WARPSPLAT_HIGS", str(tmp_path / "empty"))
    assert main(["bench", "--scenes", "none", "--composites", "none"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "WARPSPLAT_HIGS" in err and "no HiGS there" in err
    assert find_higs("none", True).status == "off"  # --higs none overrides the variable


def test_higs_absent_is_said_not_an_error(monkeypatch):
    """Without --higs, a plain import in a child that finds no gsplat.experimental: 'not installed', and the HiGS
    cells say 'absent'. Without CUDA no child is started: 'needs CUDA'."""
    monkeypatch.delenv("WARPSPLAT_HIGS", raising=False)
    higs = find_higs(None, cuda=True)
    if higs.found:
        pytest.skip(f"HiGS is installed here ({higs.detail})")
    assert higs.status == "not installed" and "gsplat" in higs.detail and higs.missing("x.ply") == "absent"
    assert find_higs(None, cuda=False) == Higs("needs CUDA")
