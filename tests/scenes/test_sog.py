"""SOG: decoding checked on hand-built v2 and v1 folders (values chosen, then encoded with the documented
formulas), and every structural error: missing members, bad meta.json, lying counts, lossy textures,
oversized textures and zip bombs."""

from __future__ import annotations

import io
import json
import math
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from scenes import SceneFormatError, load_scene
from scenes.gaussians import INVALID_WHAT
from tests.analytic import axis_angle_quat, quat_matrix, rodrigues
from tests.conftest import bundled

N = 5  # Gaussians in the hand-built scenes; textures are 4x2 (8 texels, 3 padding)


def _webp(rgba: np.ndarray, *, lossless: bool = True) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgba.astype(np.uint8), "RGBA").save(buf, format="WEBP", lossless=lossless, quality=100, exact=True)
    return buf.getvalue()


def _tex(values: np.ndarray, w: int = 4, h: int = 2) -> np.ndarray:
    """[N, 4] texel values -> [h, w, 4] image, row-major, padded with zeros."""
    out = np.zeros((h * w, 4), np.uint8)
    out[: len(values)] = values
    return out.reshape(h, w, 4)


def _v2_files() -> dict[str, bytes]:
    """A 5-Gaussian SOG v2 with SH band 1 and known bytes in every texture."""
    rng = np.random.default_rng(1)
    means_v = rng.integers(0, 65536, size=(N, 3))
    quats = np.concatenate([rng.integers(0, 256, size=(N, 3)), [[252], [253], [254], [255], [7]]], 1)
    scales = rng.integers(0, 256, size=(N, 3))
    sh0 = rng.integers(0, 256, size=(N, 4))
    labels = np.array([0, 1, 2, 1, 9])  # 9 is outside the 3-entry palette -> zero SH
    centroids = np.zeros((1, 64 * 3, 4), np.uint8)  # 64 entries per row, 3 texels (coefficients) each
    centroids[0, :9, :3] = rng.integers(0, 256, size=(9, 3))
    alpha = np.full((N, 1), 255)
    meta = {
        "version": 2,
        "count": N,
        "model": "antialiased",
        "means": {"mins": [-2.0, -1.0, 0.0], "maxs": [2.0, 1.0, 3.0], "files": ["means_l.webp", "means_u.webp"]},
        "scales": {"codebook": list(np.linspace(-8, 1, 256)), "files": ["scales.webp"]},
        "quats": {"files": ["quats.webp"]},
        "sh0": {"codebook": list(np.linspace(-2, 2, 256)), "files": ["sh0.webp"]},
        "shN": {"count": 3, "bands": 1, "codebook": list(np.linspace(-0.5, 0.5, 256)),
                "files": ["shN_centroids.webp", "shN_labels.webp"]},
    }  # fmt: skip
    return {
        "meta.json": json.dumps(meta).encode(),
        "means_l.webp": _webp(_tex(np.concatenate([means_v & 255, alpha], 1))),
        "means_u.webp": _webp(_tex(np.concatenate([means_v >> 8, alpha], 1))),
        "quats.webp": _webp(_tex(quats)),
        "scales.webp": _webp(_tex(np.concatenate([scales, alpha], 1))),
        "sh0.webp": _webp(_tex(sh0)),
        "shN_centroids.webp": _webp(centroids),
        "shN_labels.webp": _webp(_tex(np.stack([labels & 255, labels >> 8, 0 * labels, 255 + 0 * labels], 1))),
        "_raw": json.dumps(
            {
                "means_v": means_v.tolist(),
                "quats": quats.tolist(),
                "scales": scales.tolist(),
                "sh0": sh0.tolist(),
                "labels": labels.tolist(),
                "centroids": centroids[0, :9, :3].tolist(),
            }  # fmt: skip
        ).encode(),
    }


# five rotations, each with a different largest quaternion component (w, x, y, z, then w again but negative)
ROTATIONS = [((0.3, -0.5, 0.8), 0.6), ((1.0, 0.2, -0.1), 2.6), ((-0.2, 1.0, 0.3), 2.4), ((0.1, 0.3, 1.0), 2.8),
             ((0.6, 0.6, -0.5), -1.1)]  # fmt: skip


def _encode_quats(quats: np.ndarray) -> np.ndarray:
    """[N, 4] (w, x, y, z) -> [N, 4] SOG texels, by the format's rule: the largest component's index as the
    alpha byte 252 + i, its sign made positive, the other three in (w, x, y, z) order as (v sqrt(2) + 1) / 2
    in 255 steps."""
    out = np.zeros((len(quats), 4), np.int64)
    for n, q in enumerate(quats):
        i = int(np.argmax(np.abs(q)))
        q = q * np.sign(q[i])
        rest = np.delete(q, i)
        out[n, :3] = np.round((rest * math.sqrt(2) + 1) / 2 * 255)
        out[n, 3] = 252 + i
    return out


def _write_folder(tmp_path, files: dict[str, bytes], name: str = "sog"):
    folder = tmp_path / name
    folder.mkdir()
    for k, v in files.items():
        if not k.startswith("_"):
            (folder / k).write_bytes(v)
    return folder


def _write_zip(tmp_path, files: dict[str, bytes], name: str = "s.sog", method=zipfile.ZIP_STORED):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", method) as z:
        for k, v in files.items():
            if not k.startswith("_"):
                z.writestr(k, v)
    return path


def test_quaternions_decode_to_the_rotations_encoded(tmp_path):
    """Rotations (Rodrigues' formula) encoded by the format's rule come back as the same rotations, whichever
    component is the largest: the component order is checked through what it means, not its layout alone."""
    quats = np.stack([axis_angle_quat(axis, angle) for axis, angle in ROTATIONS])
    assert sorted(np.argmax(np.abs(quats), 1).tolist()) == [0, 0, 1, 2, 3], "every slot must be the largest once"
    files = _v2_files()
    files["quats.webp"] = _webp(_tex(_encode_quats(quats)))
    s = load_scene(_write_folder(tmp_path, files))
    got = quat_matrix(s.quats.double().numpy())
    for k, (axis, angle) in enumerate(ROTATIONS):
        # 8-bit components (steps of 0.0055) and the rebuilt largest one: a few thousandths in the matrix
        np.testing.assert_allclose(got[k], rodrigues(axis, angle), atol=0.02, err_msg=f"rotation {k}")


def test_v2_decoding_matches_the_spec(tmp_path):
    files = _v2_files()
    raw = json.loads(files["_raw"])
    meta = json.loads(files["meta.json"])
    s = load_scene(_write_folder(tmp_path, files))
    z = load_scene(_write_zip(tmp_path, files))
    assert torch.equal(s.means, z.means) and torch.equal(s.sh, z.sh)
    assert len(s) == N and s.sh_degree == 1 and s.antialiased

    v = np.array(raw["means_v"]) / 65535
    mins, maxs = np.array(meta["means"]["mins"]), np.array(meta["means"]["maxs"])
    t = mins + (maxs - mins) * v
    assert np.allclose(s.means.numpy(), np.sign(t) * (np.exp(np.abs(t)) - 1), rtol=1e-6, atol=1e-6)
    assert np.allclose(s.log_scales.numpy(), np.array(meta["scales"]["codebook"])[raw["scales"]], atol=1e-6)
    sh0 = np.array(raw["sh0"])
    assert np.allclose(s.sh[:, 0].numpy(), np.array(meta["sh0"]["codebook"])[sh0[:, :3]], atol=1e-6)
    assert np.allclose(torch.sigmoid(s.opacity_logits).numpy(), sh0[:, 3] / 255, atol=1e-5)

    q = np.array(raw["quats"])
    for i in range(N):
        tag = q[i, 3]
        if tag < 252:
            assert s.quats[i].tolist() == [1.0, 0.0, 0.0, 0.0]  # invalid tag -> identity
            continue
        abc = (q[i, :3] / 255 * 2 - 1) / math.sqrt(2)
        expect = np.insert(abc, tag - 252, math.sqrt(max(0.0, 1 - (abc**2).sum())))
        assert np.allclose(s.quats[i].numpy(), expect, atol=1e-6)

    book = np.array(meta["shN"]["codebook"])
    cen = np.array(raw["centroids"]).reshape(3, 3, 3)  # [entry, coefficient, RGB]
    for i, label in enumerate(raw["labels"]):
        expect = book[cen[label]] if label < 3 else np.zeros((3, 3))
        assert np.allclose(s.sh[i, 1:].numpy(), expect, atol=1e-6)


def test_v1_layout(tmp_path):
    """Legacy SOG: per-channel mins/maxs, sh0's alpha is a logit lerp, no version key."""
    rng = np.random.default_rng(2)
    mv = rng.integers(0, 65536, size=(N, 3))
    sc = rng.integers(0, 256, size=(N, 4))
    c0 = rng.integers(0, 256, size=(N, 4))
    quats = np.concatenate([rng.integers(0, 256, size=(N, 3)), np.full((N, 1), 252)], 1)
    meta = {
        "means": {"shape": [N, 3], "mins": [0, 0, 0], "maxs": [1, 2, 3], "files": ["means_l.webp", "means_u.webp"]},
        "scales": {"mins": [-5, -6, -7], "maxs": [0, 1, 2], "files": ["scales.webp"]},
        "quats": {"files": ["quats.webp"]},
        "sh0": {"mins": [-1, -1, -1, -4], "maxs": [1, 1, 1, 4], "files": ["sh0.webp"]},
    }
    files = {
        "meta.json": json.dumps(meta).encode(),
        "means_l.webp": _webp(_tex(np.concatenate([mv & 255, np.full((N, 1), 255)], 1))),
        "means_u.webp": _webp(_tex(np.concatenate([mv >> 8, np.full((N, 1), 255)], 1))),
        "quats.webp": _webp(_tex(quats)),
        "scales.webp": _webp(_tex(sc)),
        "sh0.webp": _webp(_tex(c0)),
    }
    s = load_scene(_write_zip(tmp_path, files))
    assert s.extras["sog version"] == 1 and len(s) == N
    assert np.allclose(s.log_scales.numpy(), np.array([-5, -6, -7]) + np.array([5, 7, 9]) * sc[:, :3] / 255, atol=1e-5)
    assert np.allclose(s.opacity_logits.numpy(), -4 + 8 * c0[:, 3] / 255, atol=1e-5)
    t = np.array([1, 2, 3]) * mv / 65535
    assert np.allclose(s.means.numpy(), np.expm1(t), rtol=1e-6)


# ------------------------------------------------------------------ bad input


def _bad(path, match: str):
    with pytest.raises(SceneFormatError, match=match) as info:
        load_scene(path)
    assert str(path) in str(info.value)


def test_not_a_zip_and_truncated_zip(tmp_path):
    (tmp_path / "a.sog").write_bytes(b"PK\x03\x04 this is not really a zip")
    _bad(tmp_path / "a.sog", "zip")
    data = bundled("playbot_lod2.sog").read_bytes()
    (tmp_path / "t.sog").write_bytes(data[: len(data) // 2])
    _bad(tmp_path / "t.sog", "zip|truncated|corrupt")


def test_missing_members_and_bad_meta(tmp_path):
    files = _v2_files()
    _bad(_write_zip(tmp_path, {k: v for k, v in files.items() if k != "meta.json"}, "a.sog"), "no meta.json")
    _bad(_write_zip(tmp_path, {k: v for k, v in files.items() if k != "quats.webp"}, "b.sog"), "missing")
    _bad(_write_zip(tmp_path, {**files, "meta.json": b"{not json"}, "c.sog"), "not valid JSON")
    meta = json.loads(files["meta.json"])
    _bad(_write_zip(tmp_path, {**files, "meta.json": json.dumps({**meta, "version": 3}).encode()}, "d.sog"), "version")
    del meta["scales"]["codebook"]
    _bad(_write_zip(tmp_path, {**files, "meta.json": json.dumps(meta).encode()}, "e.sog"), "scales.codebook")
    meta = json.loads(files["meta.json"])
    meta["means"]["files"] = ["../../etc/passwd", "means_u.webp"]
    _bad(_write_folder(tmp_path, {**files, "meta.json": json.dumps(meta).encode()}, "f"), "plain relative")


def test_lying_count(tmp_path):
    files = _v2_files()
    meta = json.loads(files["meta.json"])
    _bad(_write_zip(tmp_path, {**files, "meta.json": json.dumps({**meta, "count": 9}).encode()}, "a.sog"),
         r"meta\.json count of 9 Gaussians is more than texture means_l \(means_l\.webp\) holds: it is 4x2 = 8 "
         r"texels, one a Gaussian$")  # fmt: skip
    _bad(_write_zip(tmp_path, {**files, "meta.json": json.dumps({**meta, "count": 10**12}).encode()}, "b.sog"),
         "limit")  # fmt: skip
    _bad(_write_zip(tmp_path, {**files, "meta.json": json.dumps({**meta, "count": 0}).encode()}, "c.sog"),
         "no scene")  # fmt: skip


def test_lossy_and_oversized_textures(tmp_path):
    files = _v2_files()
    lossy = _webp(_tex(np.full((N, 4), 200)), lossless=False)
    _bad(_write_zip(tmp_path, {**files, "sh0.webp": lossy}, "a.sog"), "lossy")
    _bad(_write_zip(tmp_path, {**files, "sh0.webp": b"RIFF\x00\x00\x00\x00WEBPjunk"}, "b.sog"), "WebP")
    _bad(_write_zip(tmp_path, {**files, "sh0.webp": b"GIF89a...."}, "c.sog"), "not a WebP")
    big = _webp(np.zeros((512, 512, 4), np.uint8))  # 262k texels for 5 Gaussians
    with pytest.warns(UserWarning, match="differ in size"):
        _bad(_write_zip(tmp_path, {**files, "scales.webp": big}, "d.sog"), "far larger")


@pytest.mark.parametrize("kind", ["lossless", "lossy", "lossy-alpha"])
def test_texture_sizes_are_read_from_the_first_bytes(kind):
    """The header sizes checked before decoding (VP8L, VP8 and VP8X chunks) are Pillow's, odd sizes included."""
    from scenes.sog import _webp_size

    rgba = np.random.default_rng(0).integers(0, 256, size=(53, 37, 4), dtype=np.uint8)
    buf = io.BytesIO()
    image = Image.fromarray(rgba, "RGBA") if kind != "lossy" else Image.fromarray(rgba[..., :3], "RGB")
    image.save(buf, format="WEBP", lossless=kind == "lossless", quality=80)
    data = buf.getvalue()
    assert data[12:16] == {"lossless": b"VP8L", "lossy": b"VP8 ", "lossy-alpha": b"VP8X"}[kind]
    assert _webp_size(data[:64]) == Image.open(io.BytesIO(data)).size == (37, 53)
    assert _webp_size(b"RIFF\0\0\0\0WEBPjunk" + bytes(20)) is None and _webp_size(data[:20]) is None


def test_textures_of_different_sizes_load_with_a_warning_naming_them(tmp_path):
    """Texel i of each texture is Gaussian i: a texture of another width (8x1 against 4x2) gives the Gaussians
    of row 1 the values of other texels. Legal, so it loads, with one warning naming the file and textures."""
    files = _v2_files()
    raw = json.loads(files["_raw"])
    wide = _webp(_tex(np.array(raw["quats"]), w=8, h=1))
    path = _write_zip(tmp_path, {**files, "quats.webp": wide}, "a.sog")
    with pytest.warns(UserWarning) as rec:
        load_scene(path)
    assert [str(w.message) for w in rec] == [
        f"{path}: SOG textures differ in size (quats.webp 8x1; means_l.webp, means_u.webp, scales.webp, sh0.webp, "
        "shN_labels.webp 4x2): texel i of each is Gaussian i, so a texture of another width puts its values on "
        "other Gaussians (a resized or swapped texture?); the scene may be wrong"
    ]


def test_a_codebook_value_beyond_float32_drops_its_gaussians_without_numpy_warnings(tmp_path):
    """1e300 in a codebook is a valid JSON number that float32 cannot hold: the Gaussians that use it are dropped
    and counted in the one notice, and numpy's "overflow encountered in cast" is not shown."""
    import warnings

    files = _v2_files()
    meta = json.loads(files["meta.json"])
    raw = json.loads(files["_raw"])
    used = raw["scales"][2][0]  # Gaussian 2's x scale index
    meta["scales"]["codebook"][used] = 1e300
    uses = sum(used in row for row in raw["scales"])
    path = _write_zip(tmp_path, {**files, "meta.json": json.dumps(meta).encode()}, "a.sog")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = load_scene(path)
    assert [str(w.message).split(": ", 1)[1] for w in rec] == [
        f"dropped {uses} of {N} Gaussians with invalid values ({INVALID_WHAT})"
    ]
    assert len(back) == N - uses


def test_zip_bombs(tmp_path):
    files = _v2_files()
    # meta.json padded with 64 MiB of spaces: valid JSON, deflates to ~64 kB. Refused from its declared size.
    padded = files["meta.json"] + b" " * (64 << 20)
    _bad(_write_zip(tmp_path, {**files, "meta.json": padded}, "a.sog", zipfile.ZIP_DEFLATED), "above the")
    # A member whose central directory claims far more bytes than deflate can produce from its data (but fewer
    # than a texture of 5 Gaussians could need, so that the expansion check is the one that refuses it).
    path = _write_zip(tmp_path, files, "b.sog", zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    cd = data.rfind(b"PK\x01\x02")  # the last central-directory entry (shN_labels.webp, a few hundred bytes)
    data[cd + 24 : cd + 28] = (1 << 20).to_bytes(4, "little")  # claims 1 MiB uncompressed
    path.write_bytes(bytes(data))
    _bad(path, "zip bomb")


def test_a_member_declaring_just_past_deflates_ratio_is_refused(tmp_path):
    """DEFLATE expands at most ~1032:1 (RFC 1951: a 258-byte match costs at least two bits), so a member that
    declares 1100 times its compressed size (plus the 4 kB allowance) is lying, and refused before inflating."""
    path = _write_zip(tmp_path, _v2_files(), "c.sog", zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    cd = data.rfind(b"PK\x01\x02")
    compressed = int.from_bytes(data[cd + 20 : cd + 24], "little")
    data[cd + 24 : cd + 28] = (1100 * compressed + 4096).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    _bad(path, "zip bomb")
