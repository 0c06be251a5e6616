"""The one-pass PLY path: same values as the general path, chunk edges, in-place dropping, and peak memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import scenes.gaussians as gaussians
import scenes.ply as ply
from scenes import load_scene, make_scene
from scenes.ply import write_ply
from tests.conftest import REPO

FIELDS = ("means", "quats", "log_scales", "opacity_logits", "sh")


def random_scene(n, degree, seed=0):
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(torch.randn(n, 3, generator=g), torch.randn(n, 4, generator=g),
                      torch.randn(n, 3, generator=g) - 3, torch.randn(n, generator=g),
                      torch.randn(n, k, 3, generator=g))  # fmt: skip


def write_shuffled(path, scene, *, endian="<", comment="c"):
    """An INRIA PLY whose properties are in a seeded random order; `comment` sets the header's length."""
    n = len(scene)
    rest = scene.sh[:, 1:].transpose(1, 2).reshape(n, -1)
    cols = {f"{c}": scene.means[:, i] for i, c in enumerate("xyz")}
    cols |= {f"f_dc_{i}": scene.sh[:, 0, i] for i in range(3)}
    cols |= {f"f_rest_{i}": rest[:, i] for i in range(rest.shape[1])}
    cols |= {"opacity": scene.opacity_logits, "extra": torch.ones(n)}
    cols |= {f"scale_{i}": scene.log_scales[:, i] for i in range(3)} | {f"rot_{i}": scene.quats[:, i] for i in range(4)}
    names = list(cols)
    np.random.default_rng(1).shuffle(names)
    body = np.stack([cols[c].numpy() for c in names], 1).astype(endian + "f4")
    fmt = "binary_little_endian" if endian == "<" else "binary_big_endian"
    header = f"ply\nformat {fmt} 1.0\ncomment {comment}\nelement vertex {n}\n"
    header += "".join(f"property float {c}\n" for c in names) + "end_header\n"
    path.write_bytes(header.encode() + body.tobytes())


@pytest.mark.parametrize("comment", ["c", "cc", "ccc", "cccc"])  # every alignment of the body
def test_fast_path_matches_general_path_across_chunks(comment, tmp_path, monkeypatch):
    scene = random_scene(1000, 2)
    write_shuffled(tmp_path / "le.ply", scene, comment=comment)
    write_shuffled(tmp_path / "be.ply", scene, endian=">", comment=comment)  # big endian: the general path
    monkeypatch.setattr(ply, "CHUNK_BYTES", 37 * 4 * 3 + 5)  # 3 rows a chunk, last chunk partial
    le, be = load_scene(tmp_path / "le.ply"), load_scene(tmp_path / "be.ply")
    for name in FIELDS:
        assert getattr(le, name).is_contiguous(), name
        assert torch.equal(getattr(le, name), getattr(scene, name)), name
        assert torch.equal(getattr(be, name), getattr(scene, name)), name


def test_bad_rows_compacted_in_place_across_chunks(tmp_path, monkeypatch):
    scene = random_scene(500, 1)
    bad = [0, 7, 8, 9, 250, 499]
    for i, row in enumerate(bad):
        [scene.means, scene.quats, scene.log_scales, scene.sh][i % 4].view(500, -1)[row, 0] = float("nan")
    write_ply(scene, tmp_path / "bad.ply")
    monkeypatch.setattr(gaussians, "MASK_CHUNK_ROWS", 16)
    with pytest.warns(UserWarning, match="dropped 6 of 500 Gaussians"):
        back = load_scene(tmp_path / "bad.ply")
    keep = torch.ones(500, dtype=torch.bool)
    keep[bad] = False
    for name in FIELDS:
        assert torch.equal(getattr(back, name), getattr(scene, name)[keep]), name


def test_drop_invalid_copies_unless_in_place():
    scene = random_scene(40, 0)
    scene.opacity_logits[3] = float("nan")
    before = [getattr(scene, n).clone() for n in FIELDS]
    with pytest.warns(UserWarning, match="dropped 1 of 40"):
        out = scene.drop_invalid()
    assert len(out) == 39 and all(getattr(scene, n).equal(b) or n == "opacity_logits" for n, b in zip(FIELDS, before))
    assert torch.isnan(scene.opacity_logits[3]) and torch.equal(scene.opacity_logits[4:], before[3][4:])
    with pytest.warns(UserWarning, match="dropped 1 of 40"):
        inplace = scene.drop_invalid(in_place=True)
    assert all(torch.equal(getattr(inplace, n), getattr(out, n)) for n in FIELDS)
    assert inplace.means.data_ptr() == scene.means.data_ptr()


def test_denormal_quaternion_counts_as_zero():
    scene = random_scene(4, 0)
    scene.quats[1] = torch.tensor([1e-20, 0.0, 0.0, 0.0])  # squared norm 1e-40: cannot be normalised in float32
    scene.quats[2] = torch.tensor([1e-15, 0.0, 0.0, 0.0])  # tiny, but normalises fine
    assert scene.invalid_mask().tolist() == [False, True, False, False]


PEAK_SCRIPT = textwrap.dedent(
    """
    import sys
    from scenes import load_scene

    def status(key):  # kB
        return int(next(ln for ln in open("/proc/self/status") if ln.startswith(key)).split()[1])

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current RSS: the imports' own peak does not count
    base = status("VmRSS:")
    scene = load_scene(sys.argv[1])
    peak = status("VmHWM:")
    size = sum(t.numel() * t.element_size() for t in (scene.means, scene.quats, scene.log_scales,
               scene.opacity_logits, scene.sh))
    print((peak - base) * 1024, size)
    """
)


def test_load_peak_memory_is_about_the_scene(tmp_path):
    """Peak RSS above the interpreter's own, while loading a 1M SH2 PLY (152 MB), is the scene plus a bounded
    overhead (one chunk, the [N] mask, torch's first-use set-up): 1.22x the scene here."""
    n = 1_000_000
    scene = random_scene(n, 2)
    scene.log_scales[5] = float("-inf")  # one bad row: the in-place drop must not copy the scene
    write_ply(scene, tmp_path / "1m.ply", with_normals=False)
    del scene
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(tmp_path / "1m.ply")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    extra, size = map(int, out.stdout.split()[-2:])
    print(f"\n1M SH2 PLY load: peak RSS above baseline = {extra / size:.2f} x the scene")
    assert extra < 1.1 * size + (48 << 20)


def test_page_release_only_for_records_inside_the_mapping(tmp_path):
    """Parsed (ASCII) records live outside the file mapping: releasing their 'pages' must not be attempted,
    wherever the allocator happened to put them (it once raised 'madvise start out of bounds')."""
    path = tmp_path / "a.bin"
    path.write_bytes(bytes(3 * 4096))
    data = ply.map_file(str(path))
    inside = np.frombuffer(data, np.float32)[1024:2048]
    assert ply.page_releaser(data, inside) is not None
    for outside in (np.zeros(4, np.float32), np.zeros(1 << 20, np.float32)):
        assert ply.page_releaser(data, outside) is None
    ply.page_releaser(data, inside)(0, len(inside))  # in bounds: no error
