"""`.ksplat` reading (scenes/ksplat.py) against files that GaussianSplats3D, the format's own library, wrote from
`playbot_crop.ply` (tests/data/make_ksplat.py): every compression level and SH degree, one section and three, full
and partly filled position buckets. Each file's Gaussians are matched to the crop's by position, and every field
must lie within what that level's encoding loses, as the library encodes it (8-bit colour and alpha rounded
down, fp16 scales and rotations, 16-bit positions about a bucket's centre, level 2's SH rounded down to 1/255 of
its range). Then bad files: each a one-line SceneFormatError naming the file and what is wrong.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from scenes import SceneFormatError, load_scene
from scenes.gaussians import SH_C0
from scenes.ksplat import ZERO_SCALE, read_ksplat
from tests.conftest import bundled

# The library's fp16 conversion (three.js `DataUtils.toHalfFloat`) drops the mantissa's low bits: it rounds toward
# zero, so a value's magnitude shrinks by less than one fp16 step, 2^-10 of it (2^-24 among the subnormals)
FP16_STEP, FP16_SUBNORMAL_STEP = 2.0**-10, 2.0**-24


def _truncated(got: torch.Tensor, true: torch.Tensor) -> bool:
    """`got` is `true` stored as fp16 by truncation: the same sign, and a magnitude less by under a step (and not
    more than float32's rounding of `true` on the way, 2^-24 of it)."""
    got, true = got.double(), true.double()
    shrink = (true.abs() - got.abs()) * (got * true >= 0)
    return bool(((shrink >= -(2.0**-24) * true.abs()) & (shrink < FP16_STEP * true.abs() + FP16_SUBNORMAL_STEP)).all())


# file: (compression level, SH degree, sections, position bucket block size)
FILES = {
    "playbot_crop.level0.ksplat": (0, 0, 1, None),
    "playbot_crop.ksplat": (1, 2, 1, 5.0),
    "playbot_crop.level2.ksplat": (2, 1, 3, 0.2),
}


@pytest.fixture(scope="module")
def crop():
    return load_scene(bundled("playbot_crop.ply"))


def _matched(scene, crop):
    """The crop's rows in the order of `scene`'s, matched by nearest position (each matched once)."""
    nearest = torch.cdist(scene.means.double(), crop.means.double()).argmin(1)
    assert len(set(nearest.tolist())) == len(crop), "positions do not pair the two scenes' Gaussians one to one"
    return crop.subset(nearest)


@pytest.mark.parametrize("name", FILES)
def test_gs3d_files_hold_the_crop_within_their_encoding(name, crop):
    level, degree, sections, block = FILES[name]
    scene = read_ksplat(bundled(name))
    assert len(scene) == len(crop) and scene.sh_degree == degree and scene.source_format == "ksplat"
    assert scene.extras["compression level"] == level and scene.extras["sections"] == sections
    src = _matched(scene, crop)

    # positions: exact, or within half a quantisation step of the bucket's block
    err = (scene.means - src.means).abs().max().item()
    step = 0.0 if level == 0 else block / 2 / 32767
    assert err <= step / 2 + 1e-6 * src.means.abs().max().item(), err
    if level > 0:
        assert err > step / 10, "positions are exact where the format quantises them: not decoded from the file"

    # scales (linear in the file): float32, or fp16 by truncation
    true, got = src.log_scales.double().exp(), scene.log_scales.double().exp()
    if level == 0:
        assert ((got - true).abs() <= 1e-6 * true).all()
    else:
        assert _truncated(got, true)

    # rotations: the library normalises them, then stores float32 or fp16
    q = torch.nn.functional.normalize(src.quats.double(), dim=1)
    if level == 0:
        assert (scene.quats - q).abs().max().item() <= 1e-6
    else:
        assert _truncated(scene.quats, q)

    # colour and alpha: 8 bits, rounded down, the colour clamped to what 8 bits hold
    colour = (0.5 + SH_C0 * src.sh[:, 0].double()).clamp(0, 1)
    got = 0.5 + SH_C0 * scene.sh[:, 0].double()
    assert ((colour - got) >= -1e-6).all() and ((colour - got) < 1 / 255 + 1e-6).all()
    alpha, got = torch.sigmoid(src.opacity_logits.double()), torch.sigmoid(scene.opacity_logits.double())
    assert ((alpha - got) >= -1e-6).all() and ((alpha - got) < 1 / 255 + 1e-6).all()

    # the higher SH bands, in our order: float32, fp16, or 8 bits rounded down within the file's range
    if degree == 0:
        return
    k = (degree + 1) ** 2
    true, got = src.sh[:, 1:k].double(), scene.sh[:, 1:k].double()
    if level == 0:
        assert torch.equal(got, true)
    elif level == 1:
        assert _truncated(got, true)
    else:
        lo, hi = scene.extras["sh range"]
        assert lo == pytest.approx(src.sh[:, 1:].min().item()) and hi == pytest.approx(src.sh[:, 1:].max().item())
        below = true.clamp(lo, hi) - got
        assert (below >= -1e-5).all() and (below < (hi - lo) / 255 + 1e-5).all()
        assert (below > (hi - lo) / 1000).any(), "no value was rounded: the 8-bit values were not decoded"


def test_load_scene_reads_ksplat_by_its_extension():
    scene = load_scene(bundled("playbot_crop.ksplat"))
    assert scene.source_format == "ksplat" and len(scene) == 4096


# ----------------------------------------------------------------------------------------------- bad files
def _level1() -> bytearray:
    """The bundled level-1 file: one section of 4,096 rows in 16 full buckets of 256, SH degree 2 (72-byte rows)."""
    return bytearray(bundled("playbot_crop.ksplat").read_bytes())


def _put(data: bytearray, fmt: str, at: int, *values) -> bytearray:
    struct.pack_into(fmt, data, at, *values)
    return data


SECTION = 4096  # the first section header's offset
ROWS = 4096 + 1024 + 16 * 12  # where the level-1 file's rows start: headers, then 16 bucket centres


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d[:4000], "shorter than a .ksplat header"),
        (lambda d: d[: len(d) - 72], "past the file's"),  # the last row cut
        (lambda d: _put(d, "<BB", 0, 0, 0), "version 0.0 is not supported"),
        (lambda d: _put(d, "<BB", 0, 1, 1), "version 1.1 is not supported"),
        (lambda d: _put(d, "<H", 20, 3), "compression level 3"),
        (lambda d: _put(d, "<I", 16, 0), "declares 0 Gaussians"),
        (lambda d: _put(d, "<I", 16, 4097), "sections hold 4,096 Gaussians, its header declares 4,097"),
        (lambda d: _put(d, "<I", 4, 2**32 - 1), "section headers do not fit"),
        (lambda d: _put(d, "<H", SECTION + 40, 3), "section 0 declares SH degree 3"),
        (lambda d: _put(d, "<I", SECTION, 4097), "4,097 Gaussians in room for 4,096"),
        (lambda d: _put(d, "<I", SECTION + 32, 15), "its buckets hold 3,840 of its 4,096 rows"),
        (lambda d: _put(d, "<I", SECTION + 36, 1), "16 full and 1 partly filled buckets of 16"),
        (lambda d: _put(d, "<H", SECTION + 20, 16), "a bucket's centre takes 16 bytes"),
        (lambda d: _put(d, "<f", SECTION + 16, 0.0), "bucket block size 0.0"),
        (lambda d: _put(d, "<f", SECTION + 16, float("nan")), "bucket block size nan"),
    ],
)
def test_bad_files_fail_in_one_line_naming_the_file(tmp_path, mutate, message):
    path = tmp_path / "bad.ksplat"
    path.write_bytes(bytes(mutate(_level1())))
    with pytest.raises(SceneFormatError) as e:
        load_scene(path)
    assert str(path) in str(e.value) and message in str(e.value) and "\n" not in str(e.value)


def test_a_scale_fp16_rounded_to_zero_is_kept_flat_and_a_negative_one_is_dropped(tmp_path):
    data = _level1()
    _put(data, "<e", ROWS + 6, 0.0)  # row 0's first scale
    _put(data, "<e", ROWS + 72 + 6, -0.5)  # row 1's first scale
    path = tmp_path / "scales.ksplat"
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="1 "):
        scene = read_ksplat(path)
    assert len(scene) == 4095  # row 1 dropped
    assert scene.log_scales[0, 0].item() == pytest.approx(np.log(ZERO_SCALE))


def test_level2_sh_range_left_zero_is_the_viewers_default(tmp_path):
    """A level-2 file whose header leaves the SH range 0 decodes its bytes over the viewer's default, -1.5..1.5."""
    data = bytearray(bundled("playbot_crop.level2.ksplat").read_bytes())
    given = read_ksplat(bundled("playbot_crop.level2.ksplat"))
    lo, hi = given.extras["sh range"]
    _put(data, "<2f", 36, 0.0, 0.0)
    path = tmp_path / "default.ksplat"
    path.write_bytes(bytes(data))
    scene = read_ksplat(path)
    assert scene.extras["sh range"] == [-1.5, 1.5]
    u = (given.sh[:, 1:].double() - lo) / (hi - lo) * 255  # each value's byte
    assert torch.allclose(scene.sh[:, 1:].double(), -1.5 + u / 255 * 3.0, atol=1e-5)
