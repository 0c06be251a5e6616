"""glTF binary with KHR_gaussian_splatting (scenes/glb.py): write -> read, the file's frame and attributes read
with a parser of the test's own, nodes' transforms, and hostile files. (splat-transform's GLB of the same scene,
and the Khronos validator on ours: test_splat_transform_oracle.py.)"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import torch

from scenes import SceneFormatError, load_scene, make_scene, save_scene
from tests.conftest import bundled

EXT = "KHR_gaussian_splatting"


def _random_scene(n: int, degree: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    k = (degree + 1) ** 2
    return make_scene(
        torch.randn(n, 3, generator=g) * 4,
        torch.randn(n, 4, generator=g),
        torch.randn(n, 3, generator=g) - 4,
        torch.randn(n, generator=g) * 3,
        torch.randn(n, k, 3, generator=g) * 0.3,
    )


def _parse(data: bytes) -> tuple[dict, bytes]:
    """(JSON, binary chunk) of a GLB, by the spec's layout (not scenes/glb.py)."""
    assert data[:4] == b"glTF" and struct.unpack_from("<II", data, 4) == (2, len(data))
    n, kind = struct.unpack_from("<II", data, 12)
    assert kind == 0x4E4F534A and n % 4 == 0
    doc = json.loads(data[20 : 20 + n])
    m, kind = struct.unpack_from("<II", data, 20 + n)
    assert kind == 0x004E4942 and m % 4 == 0
    return doc, data[28 + n : 28 + n + m]


def _attribute(doc: dict, binary: bytes, name: str) -> np.ndarray:
    acc = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"][name]]
    view = doc["bufferViews"][acc["bufferView"]]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[acc["type"]]
    dtype = {5126: "<f4", 5121: "u1"}[acc["componentType"]]
    start = view["byteOffset"] + acc.get("byteOffset", 0)
    return np.frombuffer(binary, dtype, acc["count"] * width, start).reshape(acc["count"], width)


def _glb(doc: dict, binary: bytes) -> bytes:
    """A GLB of `doc` and `binary` (padded), as a writer of the spec would make it."""
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(binary), 0x004E4942) + binary
    return b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body


@pytest.mark.parametrize("which", ["random", "playbot_crop.ply"])
def test_round_trip(tmp_path, which):
    """Lossless but for the activations the format stores: scale as exp(log scale), opacity as sigmoid(logit),
    each in float32."""
    src = _random_scene(2000) if which == "random" else load_scene(bundled(which))
    save_scene(src, tmp_path / "rt.glb")
    out = load_scene(tmp_path / "rt.glb")
    assert out.source_format == "glb" and len(out) == len(src) and out.sh_degree == src.sh_degree
    assert torch.equal(out.means, src.means) and torch.equal(out.sh, src.sh)
    qa, qb = torch.nn.functional.normalize(out.quats, dim=1), torch.nn.functional.normalize(src.quats, dim=1)
    assert (qa * torch.sign((qa * qb).sum(1, keepdim=True)) - qb).abs().max() <= 2e-7
    assert (out.log_scales - src.log_scales).abs().max() <= 1e-6
    assert (torch.sigmoid(out.opacity_logits) - torch.sigmoid(src.opacity_logits)).abs().max() <= 2e-7  # 1 ulp at 1


def _rotation(q: np.ndarray) -> np.ndarray:
    """[N, 3, 3] of unit quaternions [N, 4] (w, x, y, z)."""
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def test_the_file_is_in_gltfs_frame(tmp_path):
    """Read with the test's own parser: +Y up (the PLY frame's -y), so x and y negated, rotations turned with them
    (R_file = H R, H the half turn about z), SH coefficient (l, m) times (-1)^m; linear scales, opacities in [0, 1],
    x y z w order; the extension's required fields; COLOR_0 the base colour and opacity in bytes."""
    src = _random_scene(300)
    save_scene(src, tmp_path / "f.glb")
    doc, binary = _parse((tmp_path / "f.glb").read_bytes())
    prim = doc["meshes"][0]["primitives"][0]
    assert prim["mode"] == 0 and prim["extensions"][EXT]["kernel"] == "ellipse"
    assert prim["extensions"][EXT]["colorSpace"] == "srgb_rec709_display" and doc["extensionsUsed"] == [EXT]
    pos = _attribute(doc, binary, "POSITION")
    assert np.array_equal(pos, src.means.numpy() * [-1, -1, 1])
    acc = doc["accessors"][prim["attributes"]["POSITION"]]
    assert acc["min"] == pos.min(0).tolist() and acc["max"] == pos.max(0).tolist()
    xyzw = _attribute(doc, binary, f"{EXT}:ROTATION").astype(np.float64)
    q = torch.nn.functional.normalize(src.quats.double(), dim=1).numpy()
    assert np.allclose(_rotation(xyzw[:, [3, 0, 1, 2]]), np.diag([-1.0, -1.0, 1.0]) @ _rotation(q), atol=1e-6)
    assert np.allclose(_attribute(doc, binary, f"{EXT}:SCALE"), np.exp(src.log_scales.numpy()), rtol=1e-6)
    alpha = torch.sigmoid(src.opacity_logits).numpy()
    assert np.allclose(_attribute(doc, binary, f"{EXT}:OPACITY")[:, 0], alpha, atol=1e-7)
    for degree in range(4):
        for n in range(2 * degree + 1):
            got = _attribute(doc, binary, f"{EXT}:SH_DEGREE_{degree}_COEF_{n}")
            assert np.array_equal(got, src.sh[:, degree * degree + n].numpy() * (-1) ** (n - degree)), (degree, n)
    colour = _attribute(doc, binary, "COLOR_0").astype(np.float64) / 255
    base = np.clip(0.5 + 0.28209479177387814 * src.sh[:, 0].numpy(), 0, 1)
    assert np.abs(colour - np.concatenate([base, alpha[:, None]], 1)).max() <= 0.5 / 255 + 1e-6


def _one_primitive(src, nodes: list[dict], **prim_extra) -> bytes:
    """A GLB of `src` with the given node list (node 0 the root), written by the test from the spec, its data in
    glTF's frame: the PLY frame's x and y negated (and the rotations and SH turned)."""
    from scenes.glb import HALF_TURN_Z, HALF_TURN_Z_Q
    from scenes.rotate import rotated

    s = rotated(src, HALF_TURN_Z, HALF_TURN_Z_Q)
    q = torch.nn.functional.normalize(s.quats, dim=1)[:, [1, 2, 3, 0]]
    arrays = {"POSITION": s.means, f"{EXT}:ROTATION": q, f"{EXT}:SCALE": s.log_scales.exp(),
              f"{EXT}:OPACITY": torch.sigmoid(s.opacity_logits)[:, None]}  # fmt: skip
    arrays |= {
        f"{EXT}:SH_DEGREE_{d}_COEF_{n}": s.sh[:, d * d + n] for d in range(s.sh_degree + 1) for n in range(2 * d + 1)
    }
    binary, views, accessors, attributes = b"", [], [], {}
    for i, (name, a) in enumerate(arrays.items()):
        data = a.numpy().astype("<f4").tobytes()
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
        accessors.append({"bufferView": i, "componentType": 5126, "count": len(a),
                          "type": {1: "SCALAR", 3: "VEC3", 4: "VEC4"}[a.shape[1]]})  # fmt: skip
        attributes[name] = i
        binary += data
    prim = {"attributes": attributes, "mode": 0, "extensions": {EXT: {"kernel": "ellipse"}}} | prim_extra
    doc = {"asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}], "nodes": nodes,
           "meshes": [{"primitives": [prim]}], "buffers": [{"byteLength": len(binary)}], "bufferViews": views,
           "accessors": accessors}  # fmt: skip
    return _glb(doc, binary)


def _covariances(s) -> torch.Tensor:
    r = torch.from_numpy(_rotation(torch.nn.functional.normalize(s.quats.double(), dim=1).numpy()))
    d = torch.diag_embed(torch.exp(2 * s.log_scales.double()))
    return r @ d @ r.transpose(1, 2)


def test_nodes_place_the_gaussians(tmp_path):
    """A parent node scaled by 2 and moved, a child turned a quarter about glTF's +Y (the PLY frame's -y): every
    centre lands where the two transforms put it, every covariance is turned and scaled with it (4x)."""
    src = _random_scene(200, degree=1)
    c, s = np.cos(np.pi / 4), np.sin(np.pi / 4)
    nodes = [{"translation": [1.0, 2.0, 3.0], "scale": [2.0, 2.0, 2.0], "children": [1]},
             {"rotation": [0.0, s, 0.0, c], "mesh": 0}]  # fmt: skip
    (tmp_path / "n.glb").write_bytes(_one_primitive(src, nodes))
    out = load_scene(tmp_path / "n.glb")
    # in glTF's frame: p' = 2 Ry(90) p + t; the PLY frame is that with x and y negated
    h = np.diag([-1.0, -1.0, 1.0])
    ry = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    a = h @ (2 * ry) @ h  # the whole map, PLY frame to PLY frame
    want = src.means.double() @ torch.from_numpy(a.T) + torch.from_numpy(h @ [1.0, 2.0, 3.0])
    assert torch.allclose(out.means.double(), want, atol=1e-5)
    assert torch.allclose(_covariances(out), torch.from_numpy(a) @ _covariances(src) @ torch.from_numpy(a.T),
                          rtol=1e-4, atol=1e-9)  # fmt: skip
    # the DC colour does not turn; band 1 does (its three coefficients mix), keeping its length
    assert torch.equal(out.sh[:, 0], src.sh[:, 0])
    assert torch.allclose(out.sh[:, 1:].norm(dim=1), src.sh[:, 1:].norm(dim=1), atol=1e-5)


@pytest.mark.parametrize(
    "node, match",
    [
        ({"scale": [1.0, 2.0, 1.0], "mesh": 0}, "non-uniform scale"),
        ({"scale": [-1.0, 1.0, 1.0], "mesh": 0}, "mirroring"),
        ({"matrix": [1, 0, 0, 0, 0.5, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], "mesh": 0}, "shear"),
        ({"translation": [0, 0], "mesh": 0}, "translation is not 3 finite numbers"),
        ({"children": [0], "mesh": 0}, "deeper than 64"),
        ({"children": 3, "mesh": 0}, r"nodes\[0\].children is not a list"),
    ],
)
def test_transforms_gaussians_cannot_follow_are_refused(tmp_path, node, match):
    (tmp_path / "t.glb").write_bytes(_one_primitive(_random_scene(10), [node]))
    with pytest.raises(SceneFormatError, match=match):
        load_scene(tmp_path / "t.glb")


def test_shared_children_do_not_multiply_without_end(tmp_path):
    """glTF gives a node one parent; a file whose 40 nodes each list the next one twice would place the mesh 2^40
    times. It is stopped after MAX_PLACED nodes."""
    nodes = [{"children": [i + 1, i + 1]} for i in range(40)] + [{"mesh": 0}]
    (tmp_path / "dag.glb").write_bytes(_one_primitive(_random_scene(10), nodes))
    with pytest.raises(SceneFormatError, match="more than 4,096"):
        load_scene(tmp_path / "dag.glb")


def _hostile_cases(good: bytes) -> list[tuple[str, bytes, str]]:
    doc, binary = _parse(good)

    def edit(change) -> bytes:
        d = json.loads(json.dumps(doc))
        change(d)
        return _glb(d, binary)

    attrs = lambda d: d["meshes"][0]["primitives"][0]["attributes"]  # noqa: E731
    return [
        ("truncated", good[: len(good) // 2], "declares"),
        ("wrong magic", b"gltf" + good[4:], "no glTF header"),
        ("header only", b"glTF" + struct.pack("<II", 2, 12), "ends before its JSON chunk"),
        ("wrong version", good[:4] + struct.pack("<I", 1) + good[8:], "version 1"),
        ("json not an object", _glb([1, 2], binary), "not a JSON object"),
        ("no primitive", edit(lambda d: d["meshes"][0]["primitives"][0].pop("extensions")), "no KHR_gaussian"),
        ("extensions a number", edit(lambda d: d["meshes"][0]["primitives"][0].update(extensions=3)), "no KHR_"),
        ("primitives a number", edit(lambda d: d["meshes"][0].update(primitives=3)), "primitives is not a list"),
        ("triangles", edit(lambda d: d["meshes"][0]["primitives"][0].update(mode=4)), "not 0 \\(POINTS\\)"),
        ("no scale", edit(lambda d: attrs(d).pop(f"{EXT}:SCALE")), "lacks the attribute"),
        ("count beyond the view", edit(lambda d: d["accessors"][0].update(count=10**6)), "beyond its view"),
        ("count beyond the limit", edit(lambda d: d["accessors"][0].update(count=10**9)), "above the"),
        ("view beyond the chunk", edit(lambda d: d["bufferViews"][0].update(byteLength=10**9)), "binary chunk"),
        ("wrong type", edit(lambda d: d["accessors"][0].update(type="VEC2")), "expected VEC3"),
        ("sparse", edit(lambda d: d["accessors"][0].update(sparse={"count": 1})), "sparse"),
        ("external buffer", edit(lambda d: d["buffers"][0].update(uri="x.bin")), "external buffer"),
        ("compressed", edit(lambda d: d.update(extensionsRequired=["KHR_draco_mesh_compression"])), "draco"),
        ("counts differ", edit(lambda d: d["accessors"][2].update(count=1)), "holds 1 values"),
        ("part of a degree", edit(lambda d: attrs(d).pop(f"{EXT}:SH_DEGREE_2_COEF_1")), "part of SH degree 2"),
        ("bad index", edit(lambda d: attrs(d).update(POSITION=99)), r"accessors\[99\] is not there"),
    ]


def test_hostile_files_end_in_one_clear_error(tmp_path):
    save_scene(_random_scene(50, degree=2), tmp_path / "g.glb")
    good = (tmp_path / "g.glb").read_bytes()
    for what, data, match in _hostile_cases(good):
        path = tmp_path / f"{what.replace(' ', '_')}.glb"
        path.write_bytes(data)
        with pytest.raises(SceneFormatError, match=match) as err:
            load_scene(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value), what


def test_convert_and_info(tmp_path, capsys):
    from tools.cli import main

    crop = bundled("playbot_crop.ply")
    assert main(["convert", str(crop), str(tmp_path / "crop.glb")]) == 0
    assert load_scene(tmp_path / "crop.glb").sh_degree == 2
    assert main(["info", str(tmp_path / "crop.glb")]) == 0
    assert "4,096" in capsys.readouterr().out
    assert main(["convert", str(bundled("playbot_crop.glb")), str(tmp_path / "back.ply")]) == 0
    back, want = load_scene(tmp_path / "back.ply"), load_scene(crop)
    assert torch.equal(back.means, want.means) and torch.equal(back.sh, want.sh)


def test_quaternion_of_a_rotation():
    """scenes/glb.py `_quaternion` against the test's own quaternion -> matrix, on random rotations and the half
    turns (every branch of the method)."""
    from scenes.glb import _quaternion

    g = np.random.default_rng(6)
    qs = np.concatenate([g.normal(size=(200, 4)), np.eye(4), [[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]]])
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    for rot in _rotation(qs):
        got = _quaternion(rot)
        assert np.allclose(_rotation(got[None])[0], rot, atol=1e-9) and np.isclose(np.linalg.norm(got), 1.0)


def test_normalized_integer_attributes(tmp_path):
    """Rotations as normalized int16 and opacities as normalized uint8, as the extension allows: read as glTF
    decodes them (c / 32767, c / 255)."""
    n = 64
    g = np.random.default_rng(7)
    q = g.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    rot16 = np.round(q * 32767).astype("<i2")
    alpha8 = g.integers(1, 256, n).astype(np.uint8)
    arrays = [("POSITION", g.normal(size=(n, 3)).astype("<f4"), 5126, "VEC3"),
              (f"{EXT}:ROTATION", rot16, 5122, "VEC4"),
              (f"{EXT}:SCALE", np.full((n, 3), 0.01, "<f4"), 5126, "VEC3"),
              (f"{EXT}:OPACITY", alpha8[:, None], 5121, "SCALAR"),
              (f"{EXT}:SH_DEGREE_0_COEF_0", g.normal(size=(n, 3)).astype("<f4"), 5126, "VEC3")]  # fmt: skip
    binary, views, accessors, attributes = b"", [], [], {}
    for i, (name, a, ctype, kind) in enumerate(arrays):
        binary += b"\0" * (-len(binary) % 4)
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": a.nbytes})
        accessors.append({"bufferView": i, "componentType": ctype, "count": n, "type": kind,
                          "normalized": ctype != 5126})  # fmt: skip
        attributes[name] = i
        binary += a.tobytes()
    doc = {"asset": {"version": "2.0"}, "meshes": [{"primitives": [{"attributes": attributes, "mode": 0,
           "extensions": {EXT: {"kernel": "ellipse"}}}]}], "buffers": [{"byteLength": len(binary)}],
           "bufferViews": views, "accessors": accessors}  # fmt: skip
    (tmp_path / "q.glb").write_bytes(_glb(doc, binary))
    out = load_scene(tmp_path / "q.glb")
    assert np.allclose(torch.sigmoid(out.opacity_logits).numpy(), alpha8 / 255.0, atol=1e-6)
    # read in glTF's frame and turned into the PLY frame: R_out = H R_file
    want = np.diag([-1.0, -1.0, 1.0]) @ _rotation((rot16 / 32767.0)[:, [3, 0, 1, 2]])
    got = _rotation(torch.nn.functional.normalize(out.quats.double(), dim=1).numpy())
    assert np.allclose(got, want, atol=1e-4)


def test_random_edits_of_the_json_end_in_a_scene_or_one_error(tmp_path):
    """400 seeded edits of a real file's JSON (1-3 fields set to a value of another type, or removed): each load
    ends in a scene or in SceneFormatError, never another exception."""
    import random
    import warnings

    doc, binary = _parse(bundled("playbot_crop.glb").read_bytes())
    doc["nodes"][0]["translation"] = [1, 2, 3]  # a transform, so that nodes' fields are there to edit

    def paths(o, p=()):
        yield p
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            yield from paths(v, (*p, k))

    fields = [p for p in paths(doc) if p]
    values = [None, 0, 1, -1, 2**40, 3.5, float("nan"), "x", [], [0], {}, {"a": 1}, True, [1, 2, 3], -(2**31)]
    rng = random.Random(0)
    outcomes = {"scene": 0, "error": 0}
    for _ in range(400):
        edited = json.loads(json.dumps(doc))
        for _ in range(rng.randint(1, 3)):
            *parents, last = rng.choice(fields)
            node = edited
            try:
                for k in parents:
                    node = node[k]
                if rng.random() < 0.2 and isinstance(node, dict):
                    node.pop(last, None)
                else:
                    node[last] = rng.choice(values)
            except (KeyError, IndexError, TypeError):  # an earlier edit changed the path's way
                pass
        (tmp_path / "e.glb").write_bytes(_glb(edited, binary))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Gaussians dropped for bad values say so; not what is tested
                load_scene(tmp_path / "e.glb")
            outcomes["scene"] += 1
        except SceneFormatError:
            outcomes["error"] += 1
    assert outcomes["scene"] > 20 and outcomes["error"] > 100, outcomes
