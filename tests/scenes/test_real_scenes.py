"""Every real scene loads with the count and SH degree its list gives (tests/data/CREDITS.md for the bundled
files, SOURCES.md beside the unbundled ones), the bundled files are the credited ones, and the cross-format
twins agree Gaussian by Gaussian (3-point set, biker) or in shape (angel pair)."""

from __future__ import annotations

import hashlib
import math
import shutil
import warnings
import zipfile

import numpy as np
import pytest
import torch

from scenes import SH_C0, load_scene
from scenes.ply import read_elements
from tests.conftest import DATA, bundled, scenes_dir
from tests.conftest import real_scene as scene

from ._paths import ALLOWED_LICENCES, credits_table, sources_table

# SfM points and cameras (SOURCES.md note 8), and a COLMAP model of the same cameras: not trained scenes
NOT_SCENES = {"test_garden.npz", "garden_sparse.zip"}
NOT_DATA = {"CREDITS.md", "make_derived.py", "make_ksplat.py", "make_colmap.py", "__pycache__"}  # scripts, not data


def test_sources_table_lists_every_file():
    table = sources_table()
    on_disk = {p.name for p in scenes_dir().iterdir() if p.name != "SOURCES.md"}
    assert len(table) == 29, sorted(table)
    assert set(table) == on_disk


def test_bundled_files_are_the_credited_ones():
    """Every file in tests/data is in CREDITS.md's table, with its size and sha256, under a licence that allows
    bundling; where SOURCES.md is at hand, it gives the copied files (and the derived files' source) such a
    licence too: a file it marks CC BY-NC-ND or 'unstated' must never be bundled."""
    table = credits_table()
    assert {p.name for p in DATA.iterdir()} - NOT_DATA == set(table)
    for name, listed in table.items():
        data = (DATA / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (listed.bytes, listed.sha256), name
        assert listed.licence in ALLOWED_LICENCES, (name, listed.licence)
    sources = sources_table()
    for name in table if sources else ():
        original = name if name in sources else "playbot_lod2.sog"  # the derived files are cut from it
        assert sources[original].licence.split()[0] in ALLOWED_LICENCES, (name, sources[original].licence)


def test_derived_ply_is_the_documented_crop():
    """playbot_crop.ply holds exactly what tests/data/make_derived.py cuts from playbot_lod2.sog."""
    from tests.data.make_derived import crop

    want, got = crop(), load_scene(bundled("playbot_crop.ply"))
    for name in ("means", "quats", "log_scales", "sh"):
        assert torch.equal(getattr(got, name), getattr(want, name)), name
    # the opacity logits come from torch.logit of each byte / 255 in float32 (scenes/gaussians.py), whose
    # vectorised log differs by one unit in the last place between CPUs (361 of 4,096 logits, 1.1e-7 relative, on
    # one machine): equal to within that, and every one within it
    ulp = torch.finfo(torch.float32).eps
    torch.testing.assert_close(got.opacity_logits, want.opacity_logits, rtol=ulp, atol=ulp)


@pytest.mark.parametrize("name", sorted((set(credits_table()) | set(sources_table())) - NOT_SCENES))
def test_real_scene_loads_with_documented_count(name):
    listed = {**sources_table(), **credits_table()}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a real file must not need any Gaussian dropped
        s = load_scene(scene(name))
    s.validate()
    assert len(s) == listed.count
    assert s.sh_degree == listed.degree
    assert not s.invalid_mask().any()
    assert s.up_axis == "-y"  # every reader delivers the PLY (RDF) frame


def _quat_close(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[N] |<a, b>| of normalised quaternions (q and -q are the same rotation)."""
    a = torch.nn.functional.normalize(a, dim=1)
    b = torch.nn.functional.normalize(b, dim=1)
    return (a * b).sum(1).abs()


def test_three_point_twins_agree():
    """test-splat.3-points-from-train.{ply,splat,spz}: the same 3 trained splats."""
    ply = load_scene(scene("test-splat.3-points-from-train.ply"))
    splat = load_scene(scene("test-splat.3-points-from-train.splat"))
    spz = load_scene(scene("test-splat.3-points-from-train.spz"))
    assert len(ply) == len(splat) == len(spz) == 3

    # .splat: float32 positions and linear scales (exact up to exp/log rounding); colour and opacity are
    # 8-bit (half a step: 0.5/255), quaternion components 8-bit over [-1, 1] (half a step: 1/256).
    assert torch.allclose(splat.means, ply.means, atol=0, rtol=0)
    assert torch.allclose(splat.log_scales, ply.log_scales, atol=1e-5)
    rgb_ply = (0.5 + SH_C0 * ply.sh[:, 0]).clamp(0, 1)
    # MetalSplatter wrote colour and alpha bytes truncating, not rounding: one full 8-bit step for both.
    assert (0.5 + SH_C0 * splat.sh[:, 0] - rgb_ply).abs().max() <= 1 / 255 + 1e-6
    assert (torch.sigmoid(splat.opacity_logits) - torch.sigmoid(ply.opacity_logits)).abs().max() <= 1 / 255 + 1e-6
    assert (_quat_close(splat.quats, ply.quats) > 1 - 1e-3).all()

    # .spz after the documented RUB -> RDF change (done by the reader): positions 24-bit with 12 fraction
    # bits (2^-13), log-scales (v + 10) * 16 (1/32), colour at 0.15 * 255 per unit (0.5 / 38.25), alpha 8 bits,
    # quaternion smallest-three 9 bits (components 0.5 * sqrt(1/2) / 511), SH band 1 in 5 bits (bucket 8 of
    # 256 over [-1, 1): 1/32) and bands 2-3 in 4 bits (1/16), each plus the 1/256 rounding of x * 128.
    assert (spz.means - ply.means).abs().max() <= 2**-13 + 1e-6
    assert (spz.log_scales - ply.log_scales).abs().max() <= 1 / 32 + 1e-6
    assert (spz.sh[:, 0] - ply.sh[:, 0]).abs().max() <= 0.5 / (0.15 * 255) + 1e-6
    assert (torch.sigmoid(spz.opacity_logits) - torch.sigmoid(ply.opacity_logits)).abs().max() <= 0.5 / 255 + 1e-6
    qs, qp = torch.nn.functional.normalize(spz.quats, dim=1), torch.nn.functional.normalize(ply.quats, dim=1)
    qs = qs * torch.sign((qs * qp).sum(1, keepdim=True))
    assert (qs - qp).abs().max() <= 2e-3  # 7e-4 per stored component, plus the reconstructed largest one
    assert (spz.sh[:, 1:4] - ply.sh[:, 1:4]).abs().max() <= 1 / 32 + 1 / 256 + 1e-6
    assert (spz.sh[:, 4:] - ply.sh[:, 4:]).abs().max() <= 1 / 16 + 1 / 256 + 1e-6


def test_biker_compressed_ply_and_spz_agree_gaussian_by_gaussian():
    """Same 152,746 splats in the same order; the SPZ is RUB (y, z negated), handled by its reader."""
    cply = load_scene(scene("biker.compressed.ply"))
    spz = load_scene(scene("biker.spz"))
    assert len(cply) == len(spz) == 152_746

    # Per-row bound: half a quantisation step of the compressed PLY's chunk range, plus SPZ's own half step.
    elements, _ = read_elements(scene("biker.compressed.ply").read_bytes(), "biker")
    ch = elements["chunk"]
    ci = np.arange(len(cply)) >> 8
    steps = np.array([2047, 1023, 2047], np.float64)
    pos_span = np.stack([ch[f"max_{a}"] - ch[f"min_{a}"] for a in "xyz"], 1)[ci]
    pos_bound = 0.5 * pos_span / steps + 2**-13 + 1e-5
    assert (np.abs((cply.means - spz.means).numpy()) <= pos_bound).all()

    # Scales: SPZ clamps log-scales to its range [-10, 5.94]; compare there.
    sc_span = np.stack([ch[f"max_scale_{a}"] - ch[f"min_scale_{a}"] for a in "xyz"], 1)[ci]
    sc_bound = 0.5 * sc_span / steps + 1 / 32 + 1e-5
    clamped = cply.log_scales.clamp(-10, 255 / 16 - 10)
    assert (np.abs((clamped - spz.log_scales).numpy()) <= sc_bound).all()

    col_span = np.stack([ch[f"max_{c}"] - ch[f"min_{c}"] for c in "rgb"], 1)[ci]
    dc_bound = 0.5 * col_span / 255 / SH_C0 + 0.5 / (0.15 * 255) + 1e-5
    clamped_dc = cply.sh[:, 0].clamp(-127.5 / 38.25, 127.5 / 38.25)  # SPZ's colour byte range
    assert (np.abs((clamped_dc - spz.sh[:, 0]).numpy()) <= dc_bound).all()
    assert (torch.sigmoid(cply.opacity_logits) - torch.sigmoid(spz.opacity_logits)).abs().max() <= 1 / 255 + 1e-6
    assert _quat_close(cply.quats, spz.quats).min() > 0.999


def test_angel_pair_agrees_after_180_degree_z_rotation():
    """angel.compressed.ply (71,377) and angel.sog (71,359) are separate exports that differ by a 180-degree
    rotation about z (x and y negated, SOURCES.md note 7). Rendering comparisons are owned by the renderer
    tests; here the robust box and the centre must agree to 1% of the statue's size."""
    cply = load_scene(scene("angel.compressed.ply"))
    sog = load_scene(scene("angel.sog"))
    assert len(cply) - len(sog) == 18
    rotated = sog.means * torch.tensor([-1.0, -1.0, 1.0])
    sog_r = sog.subset(slice(None))
    sog_r.means = rotated
    lo_c, hi_c = cply.robust_bounds()
    lo_s, hi_s = sog_r.robust_bounds()
    size = float((hi_c - lo_c).max())
    assert (lo_c - lo_s).abs().max() <= 0.01 * size
    assert (hi_c - hi_s).abs().max() <= 0.01 * size
    assert (cply.center() - sog_r.center()).abs().max() <= 0.01 * size
    # Without the rotation they clearly disagree (the check above is not vacuous).
    assert (cply.center() - sog.center()).abs().max() > 0.05 * size


def test_sog_folder_and_meta_json_load_like_the_archive(tmp_path):
    zipped = load_scene(bundled("playbot_lod2.sog"))
    with zipfile.ZipFile(bundled("playbot_lod2.sog")) as z:
        z.extractall(tmp_path / "unbundled")
    folder = load_scene(tmp_path / "unbundled")
    meta = load_scene(tmp_path / "unbundled" / "meta.json")
    for s in (folder, meta):
        assert s.extras["container"] == "folder"
        for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
            assert torch.equal(getattr(s, name), getattr(zipped, name)), name


def test_compressed_ply_named_ply_still_loads(tmp_path):
    shutil.copy(bundled("playbot_crop.compressed.ply"), tmp_path / "crop.ply")
    s = load_scene(tmp_path / "crop.ply")
    assert s.source_format == "compressed-ply" and len(s) == 4096
    shutil.copy(bundled("playbot_crop.ply"), tmp_path / "crop.compressed.ply")
    s = load_scene(tmp_path / "crop.compressed.ply")
    assert s.source_format == "ply" and s.sh_degree == 2 and math.isfinite(float(s.means.sum()))
