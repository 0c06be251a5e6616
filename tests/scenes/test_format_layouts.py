"""Byte layouts of the scene formats, checked against hand-built files and hand-computed values.

Each test here was written because a single mutation of a reader or writer (a constant, an index order, a
bound) left every other test passing: a round trip through one format's own reader and writer cannot see an
error the two make together, so these tests build the bytes from the formats' specifications instead.
"""

import math
import struct

import numpy as np
import pytest
import torch

from scenes import make_scene
from scenes.ply import read_ply

SH_C0 = 0.28209479177387814  # the degree-0 real SH basis constant, 1 / (2 sqrt(pi))


def inria_ply_bytes(rows: np.ndarray, names: list[str], comments=()) -> bytes:
    header = ["ply", "format binary_little_endian 1.0", *(f"comment {c}" for c in comments)]
    header += [f"element vertex {len(rows)}", *(f"property float {n}" for n in names), "end_header"]
    return ("\n".join(header) + "\n").encode() + np.asarray(rows, "<f4").tobytes()


PLY_NAMES = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2"]
PLY_NAMES += ["rot_0", "rot_1", "rot_2", "rot_3"]
PLY_ROW = [0, 0, 0, 0.1, 0.2, 0.3, 0.0, -1, -2, -3, 1, 0, 0, 0]


@pytest.mark.parametrize(
    "comment, expected",
    [("antialiased 1", True), ("antialiased 0", False), ("SplatRenderMode: mip", True), (None, False)],
)
def test_ply_header_comments_mark_an_antialiased_scene(comment, expected, tmp_path):
    """Postshot writes `comment antialiased 0|1`, Brush and gsplat `comment SplatRenderMode: mip`."""
    path = tmp_path / "a.ply"
    path.write_bytes(inria_ply_bytes([PLY_ROW], PLY_NAMES, [] if comment is None else [comment]))
    assert read_ply(path).antialiased is expected


# ------------------------------------------------------------------------------------------------ .splat


def test_splat_record_written_byte_by_byte(tmp_path):
    """antimatter15 `.splat`: float32 position, linear scale, RGBA bytes (0.5 + SH_C0 f_dc, sigmoid(opacity)) and
    the unit quaternion (w, x, y, z) as q * 128 + 128, rounded; records sorted by size x opacity, descending."""
    from scenes.splat import write_splat

    dc = (np.array([0.6, 0.2, 0.9]) - 0.5) / SH_C0
    scene = make_scene(
        torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        torch.tensor([[0.6, 0.8, 0.0, 0.0], [0.0, 0.0, 3.0, 4.0]]),  # not normalised
        torch.tensor([[math.log(0.5), 0.0, math.log(2.0)], [-5.0, -5.0, -5.0]]),
        torch.tensor([math.log(0.75 / 0.25), 0.0]),  # sigmoid: 0.75, 0.5
        torch.tensor(np.array([[dc], [dc]]), dtype=torch.float32),
    )
    write_splat(scene, tmp_path / "a.splat")
    data = (tmp_path / "a.splat").read_bytes()
    assert len(data) == 64
    big, small = data[:32], data[32:]  # the first Gaussian is larger and more opaque: it comes first
    assert struct.unpack("<6f", big[:24]) == pytest.approx((1, 2, 3, 0.5, 1.0, 2.0), rel=1e-6)
    # 0.6 * 255 = 153, 0.2 * 255 = 51, 0.9 * 255 = 229.5 -> 230 (either rounding of .5 upward is allowed: 229/230)
    assert big[24:26] == bytes([153, 51]) and big[26] in (229, 230)
    assert big[27] == round(0.75 * 255)  # 191
    # q / |q| = (0.6, 0.8, 0, 0): 0.6 * 128 + 128 = 204.8 -> 205, 0.8 * 128 + 128 = 230.4 -> 230
    assert big[28:32] == bytes([205, 230, 128, 128])
    # (0, 0, 0.6, 0.8) -> y 204.8 -> 205, z 230.4 -> 230; alpha 0.5 * 255 = 127.5 -> 127 or 128
    assert small[28:32] == bytes([128, 128, 205, 230]) and small[27] in (127, 128)
    assert struct.unpack("<3f", small[12:24]) == pytest.approx([math.exp(-5.0)] * 3, rel=1e-6)


def test_splat_record_read_from_hand_built_bytes(tmp_path):
    from scenes.splat import read_splat

    rec = struct.pack("<6f", 1, -2, 3, 0.5, 1.0, 4.0) + bytes([255, 0, 128, 204]) + bytes([128, 224, 128, 32])
    (tmp_path / "a.splat").write_bytes(rec)
    s = read_splat(tmp_path / "a.splat")
    assert s.means[0].tolist() == [1, -2, 3]
    assert s.log_scales[0].tolist() == pytest.approx([math.log(0.5), 0.0, math.log(4.0)], abs=1e-6)
    assert s.sh[0, 0].tolist() == pytest.approx([0.5 / SH_C0, -0.5 / SH_C0, (128 / 255 - 0.5) / SH_C0], abs=1e-5)
    assert torch.sigmoid(s.opacity_logits[0]).item() == pytest.approx(204 / 255, abs=1e-4)
    q = s.quats[0] / s.quats[0].norm()  # (0, 96, 0, -96) / 128 = (0, 0.75, 0, -0.75): w, x, y, z
    assert q.tolist() == pytest.approx([0, 1 / math.sqrt(2), 0, -1 / math.sqrt(2)], abs=1e-6)


# ------------------------------------------------------------------------------------------------ .spz


@pytest.mark.parametrize("x", [2048.0, -2048.0, 2047.9999, 4095.99])
def test_spz_positions_at_the_edge_of_24_bits_keep_their_sign(x, tmp_path):
    """24-bit signed fixed point: at 12 fraction bits +2048 is 2^23, one past the largest value (2^23 - 1), and
    would wrap to -2048. The writer must give up a fraction bit for it (and again for ~4096)."""
    from scenes.spz import read_spz, write_spz

    scene = make_scene(torch.tensor([[x, 0.0, 0.0], [0.0, 0.0, 0.0]]), torch.tensor([[1.0, 0, 0, 0]] * 2),
                       torch.full((2, 3), -2.0), torch.zeros(2), torch.zeros(2, 1, 3))  # fmt: skip
    write_spz(scene, tmp_path / "a.spz")
    back = read_spz(tmp_path / "a.spz")
    assert back.means[0, 0].item() == pytest.approx(x, abs=2.0**-10)


# ------------------------------------------------------------------------------------------------ compressed PLY


def compressed_ply_bytes(chunk: list[float], packed: list[int], sh: list[int] | None) -> bytes:
    """One Gaussian as a PlayCanvas compressed PLY: chunk bounds (12 floats, or 18 with colour bounds), the four
    packed words, and optionally the SH bytes (channel-major f_rest)."""
    names = [f"{end}_{axis}" for end in ("min", "max") for axis in "xyz"]
    names += [f"{end}_scale_{axis}" for end in ("min", "max") for axis in "xyz"]
    names += [f"{end}_{c}" for end in ("min", "max") for c in "rgb"]
    header = ["ply", "format binary_little_endian 1.0", "element chunk 1"]
    header += [f"property float {p}" for p in names[: len(chunk)]]
    header += ["element vertex 1"]
    header += [f"property uint packed_{p}" for p in ("position", "rotation", "scale", "color")]
    if sh is not None:
        header += ["element sh 1"] + [f"property uchar f_rest_{i}" for i in range(len(sh))]
    header.append("end_header")
    body = struct.pack(f"<{len(chunk)}f", *chunk) + struct.pack("<4I", *packed) + bytes(sh or [])
    return ("\n".join(header) + "\n").encode() + body


def test_compressed_ply_fields_decoded_from_hand_built_bytes(tmp_path):
    """decompress-ply's decoding: 11/10/11-bit unorms (v / (2^bits - 1)) lerped over the chunk's bounds, the
    colour bytes r 31-24, g 23-16, b 15-8 (no colour bounds: the colour itself) and alpha 7-0, the rotation's
    largest-component index (w, x, y, z) in bits 31-30 and the other three as (u / 1023 - 0.5) sqrt 2, and
    the SH bytes channel-major, n = (b + 0.5) / 256 but 0 and 1 at the ends, coefficient (n - 0.5) 8."""
    from scenes.compressed_ply import read_compressed_ply

    position = (2047 << 21) | (0 << 11) | 1023  # x = max, y = min, z = 1023 / 2047 of the way
    scale = (0 << 21) | (1023 << 11) | 512
    colour = (255 << 24) | (0 << 16) | (128 << 8) | 204
    rotation = (0 << 30) | (1023 << 20) | (512 << 10) | 0  # largest: w; then x, y, z
    chunk = [-1.0, 2.0, 0.0, 1.0, 4.0, 8.0, -2.0, -3.0, -4.0, 2.0, 1.0, 0.0]
    sh = [0, 255, 64, 128, 128, 128, 1, 2, 3]  # R: coefficients 1-3, then G, then B
    path = tmp_path / "one.compressed.ply"
    path.write_bytes(compressed_ply_bytes(chunk, [position, rotation, scale, colour], sh))
    s = read_compressed_ply(path)

    assert s.means[0].tolist() == pytest.approx([1.0, 2.0, 8.0 * 1023 / 2047], abs=1e-6)
    assert s.log_scales[0].tolist() == pytest.approx([-2.0, 1.0, -4.0 + 4.0 * 512 / 2047], abs=1e-6)
    assert s.sh[0, 0].tolist() == pytest.approx([0.5 / SH_C0, -0.5 / SH_C0, (128 / 255 - 0.5) / SH_C0], abs=1e-5)
    assert torch.sigmoid(s.opacity_logits[0]).item() == pytest.approx(204 / 255, abs=1e-5)
    x, y, z = (1023 / 1023 - 0.5) * math.sqrt(2), (512 / 1023 - 0.5) * math.sqrt(2), (0 - 0.5) * math.sqrt(2)
    w = math.sqrt(max(0.0, 1 - x * x - y * y - z * z))
    assert (s.quats[0] / s.quats[0].norm()).tolist() == pytest.approx([w, x, y, z], abs=1e-5)
    coef = lambda b: -4.0 if b == 0 else 4.0 if b == 255 else ((b + 0.5) / 256 - 0.5) * 8
    expected = torch.tensor([[coef(sh[c * 3 + j]) for c in range(3)] for j in range(3)])  # [coefficient, channel]
    assert torch.allclose(s.sh[0, 1:], expected, atol=1e-6)


def test_compressed_ply_colour_bounds_lerp_the_colour(tmp_path):
    """With the 18-float chunk (SuperSplat 2.x) the colour bytes are lerped between min_rgb and max_rgb."""
    from scenes.compressed_ply import read_compressed_ply

    chunk = [0.0] * 3 + [1.0] * 3 + [0.0] * 3 + [1.0] * 3 + [0.2, 0.4, 0.0] + [0.6, 0.8, 1.0]
    colour = (255 << 24) | (0 << 16) | (51 << 8) | 255
    path = tmp_path / "c.compressed.ply"
    path.write_bytes(compressed_ply_bytes(chunk, [0, 0, 0, colour], None))
    rgb = 0.5 + SH_C0 * read_compressed_ply(path).sh[0, 0]
    assert rgb.tolist() == pytest.approx([0.6, 0.4, 0.2], abs=1e-5)


# ------------------------------------------------------------------------------------------------ .glb


def glb_bytes(attributes: dict[str, np.ndarray]) -> bytes:
    """A GLB of one POINTS primitive with the given float attributes ([N, width] float32), one buffer view each."""
    import json

    kinds = {1: "SCALAR", 3: "VEC3", 4: "VEC4"}
    views, accessors, attrs, blob = [], [], {}, b""
    for i, (name, values) in enumerate(attributes.items()):
        data = np.ascontiguousarray(values, "<f4").tobytes()
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)})
        accessors.append({"bufferView": i, "componentType": 5126, "count": len(values), "type": kinds[values.shape[1]]})
        if name == "POSITION":
            accessors[-1] |= {"min": values.min(0).tolist(), "max": values.max(0).tolist()}
        attrs[name] = i
        blob += data
    ext = "KHR_gaussian_splatting"
    prim = {"attributes": attrs, "mode": 0, "extensions": {ext: {"kernel": "ellipse"}}}
    doc = {"asset": {"version": "2.0"}, "extensionsUsed": [ext], "scene": 0, "scenes": [{"nodes": [0]}],
           "nodes": [{"mesh": 0}], "meshes": [{"primitives": [prim]}], "buffers": [{"byteLength": len(blob)}],
           "bufferViews": views, "accessors": accessors}  # fmt: skip
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    total = 12 + 8 + len(text) + 8 + len(blob)
    return (b"glTF" + struct.pack("<II", 2, total) + struct.pack("<II", len(text), 0x4E4F534A) + text
            + struct.pack("<II", len(blob), 0x004E4942) + blob)  # fmt: skip


def test_glb_without_sh_takes_its_colour_from_color_0(tmp_path):
    """KHR_gaussian_splatting: ROTATION x y z w, SCALE linear, OPACITY after the sigmoid; without SH_DEGREE_0 the
    COLOR_0 fallback is the base colour 0.5 + SH_C0 f_dc. glTF's frame (LUF) is the PLY frame (RDF) turned half
    a turn about z: x and y negate, and a quaternion q becomes q_z q with q_z = (w 0, x 0, y 0, z 1)."""
    from scenes.glb import read_glb

    p = "KHR_gaussian_splatting:"
    path = tmp_path / "colour.glb"
    path.write_bytes(glb_bytes({
        "POSITION": np.array([[1.0, 2.0, 3.0]]),
        p + "ROTATION": np.array([[0.0, 0.0, 0.0, 1.0]]),  # identity, x y z w
        p + "SCALE": np.array([[0.5, 1.0, 2.0]]),
        p + "OPACITY": np.array([[0.75]]),
        "COLOR_0": np.array([[0.6, 0.2, 0.9, 1.0]]),
    }))  # fmt: skip
    s = read_glb(path)
    assert s.means[0].tolist() == pytest.approx([-1.0, -2.0, 3.0])
    q = s.quats[0] / s.quats[0].norm()
    assert abs(q[0].item()) < 1e-6 and abs(q[1].item()) < 1e-6 and abs(q[2].item()) < 1e-6  # a half turn about z
    assert s.log_scales[0].tolist() == pytest.approx([math.log(0.5), 0.0, math.log(2.0)], abs=1e-6)
    assert torch.sigmoid(s.opacity_logits[0]).item() == pytest.approx(0.75, abs=1e-6)
    assert s.sh_degree == 0
    assert (0.5 + SH_C0 * s.sh[0, 0]).tolist() == pytest.approx([0.6, 0.2, 0.9], abs=1e-6)


def test_compressed_ply_with_part_of_the_colour_bounds_reads_the_colour_as_is(tmp_path):
    """Colour bounds are used only when all six are present; a chunk with some of them is read as the legacy
    layout (colour bytes as the colour) rather than failing on the missing ones."""
    from scenes.compressed_ply import read_compressed_ply

    chunk = [0.0] * 3 + [1.0] * 3 + [0.0] * 3 + [1.0] * 3 + [0.2]  # min_r alone
    colour = (255 << 24) | (0 << 16) | (51 << 8) | 255
    path = tmp_path / "c.compressed.ply"
    path.write_bytes(compressed_ply_bytes(chunk, [0, 0, 0, colour], None))
    rgb = 0.5 + SH_C0 * read_compressed_ply(path).sh[0, 0]
    assert rgb.tolist() == pytest.approx([1.0, 0.0, 0.2], abs=1e-5)


@pytest.mark.parametrize("rest", [8, 72])
def test_ply_f_rest_counts_beyond_sh_degree_3_are_refused(rest, tmp_path):
    """3 ((d + 1)^2 - 1) f_rest properties for SH degree d: 9, 24, 45 for degrees 1-3. Degree 4 (72, which SPZ
    allows) is beyond the renderer, and any other count is no SH degree at all: both are refused, naming it."""
    from scenes import SceneFormatError

    names = PLY_NAMES + [f"f_rest_{i}" for i in range(rest)]
    path = tmp_path / "a.ply"
    path.write_bytes(inria_ply_bytes([PLY_ROW + [0.0] * rest], names))
    with pytest.raises(SceneFormatError, match=f"{rest} f_rest"):
        read_ply(path)
