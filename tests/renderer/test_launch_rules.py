"""`LaunchConfig.after`'s rules (renderer/launch.py), each read from its docstring and the kernels' rules it
applies: the footprint is pairs per visible Gaussian, the list class moves only on frames of at least `slots`
pairs and keeps its hysteresis, the bin steps stay wide only after wide steps, and one object stands for each
configuration. Host-side arithmetic only: no frame is rendered."""

from __future__ import annotations

import dataclasses

import pytest

from kernels import bin as kbin
from kernels import list_class, project_block
from kernels import project as kproject
from renderer.launch import LaunchConfig

N, TILES, SLOTS = 10**6, 32_400, 4_224


def test_the_footprint_is_pairs_per_visible_gaussian():
    """A large scene of which few Gaussians are visible, each reaching many tiles (a close-up of part of it): the
    binning form and the bin steps follow the tiles a visible Gaussian reaches, not the pairs over the scene."""
    visible = 10_000
    per_macro = (kbin.MACRO_FROM + 1) * visible  # past the macro-tile threshold per visible Gaussian
    assert LaunchConfig.after(LaunchConfig(), N, visible, int(per_macro), TILES, 8).macro
    wide = int((kbin.BIN_WIDE_FOOTPRINT + 1) * visible)  # past the wide steps' threshold
    config = LaunchConfig.after(LaunchConfig(), N, visible, wide, TILES, 8)
    assert (config.bin_block, config.bin_cols) == kbin.bin_config(visible, wide / visible) and config.bin_cols > 4


def test_a_frame_of_exactly_slots_pairs_chooses_the_list_class():
    """Fewer pairs than `slots` leave the class as it was; `slots` pairs and more choose it (`list_class`)."""
    split = LaunchConfig(lists=2)
    want = list_class(SLOTS, TILES, 3, 8, 2, SLOTS)
    assert want != 2  # short lists: the frame would leave the split class
    assert LaunchConfig.after(split, N, SLOTS, SLOTS, TILES, 8, (SLOTS, 3), SLOTS).lists == want
    assert LaunchConfig.after(split, N, SLOTS - 1, SLOTS - 1, TILES, 8, (SLOTS - 1, 3), SLOTS).lists == 2


@pytest.mark.parametrize("tile", [8, 16])
def test_the_list_class_keeps_its_hysteresis(tile):
    """Frames near a class's threshold keep the class of the frame before (`list_class` with `previous`): from
    either side of the band, the class is the one `list_class` gives from the previous frame's class."""
    in_band = 0
    for pairs in (100_000, 400_000, 1_000_000, 16_000_000, 30_000_000):
        for longest in (50, 100, 200, 400, 800, 1_600, 3_200, 9_000, 12_000, 20_000):
            classes = {prev: list_class(pairs, TILES, longest, tile, prev, SLOTS) for prev in (0, 1, 2)}
            in_band += len(set(classes.values())) > 1
            for prev, want in classes.items():
                config = LaunchConfig.after(LaunchConfig(lists=prev), N, pairs // 20, pairs, TILES, tile,
                                            (pairs, longest), SLOTS)  # fmt: skip
                assert config.lists == want, (pairs, longest, prev)
    assert in_band >= 2, "no count near a threshold: the test would not see the hysteresis"


def test_bin_steps_stay_wide_only_after_wide_steps():
    """`bin_config`'s `wide`: the frame before took wide steps (over 4 tiles a step; 4 and under are the narrow
    ones). A footprint between BIN_NARROW_BELOW and BIN_WIDE_FOOTPRINT keeps wide steps wide and narrow ones
    narrow."""
    visible = 4_680
    footprint = (kbin.BIN_NARROW_BELOW + kbin.BIN_WIDE_FOOTPRINT) / 2
    for block, cols in ((32, 4), (64, 2), (8, 8), (32, 16)):
        config = LaunchConfig.after(LaunchConfig(bin_block=block, bin_cols=cols), N, visible,
                                    int(footprint * visible), TILES, 8)  # fmt: skip
        assert (config.bin_cols > 4) == (cols > 4), (block, cols, config)


def test_the_binning_form_and_the_pre_cull_keep_the_previous_frames_in_their_bands():
    """`bins_macro_tiles` and `culls_frustum` move with hysteresis: a footprint between MACRO_UNTIL and MACRO_FROM
    keeps the form of the frame before, and a visible share between FRUSTUM_ON and FRUSTUM_OFF its pre-cull."""
    visible = 50_000
    footprint = (kbin.MACRO_UNTIL + kbin.MACRO_FROM) / 2
    for macro in (False, True):
        config = LaunchConfig.after(LaunchConfig(macro=macro), N, visible, int(footprint * visible), TILES, 8)
        assert config.macro == macro
    share = (kproject.FRUSTUM_ON + kproject.FRUSTUM_OFF) / 2
    for cull in (False, True):
        config = LaunchConfig.after(LaunchConfig(cull=cull), N, int(share * N), 2 * N, TILES, 8)
        assert config.cull == cull


def test_the_pre_cull_and_the_project_block_follow_the_gaussians_projected():
    """`culls_frustum(n, n_visible)`: a large scene of which little is visible pre-culls; `project_block` is chosen
    by the Gaussians a frame projects (n), whatever share of them is visible."""
    assert N >= kproject.FRUSTUM_FROM and N > kproject.PROJECT_SMALL_SCENE
    config = LaunchConfig.after(LaunchConfig(), N, N // 100, N // 10, TILES, 8)
    assert config.cull and config.project_block == project_block(N)
    small = kproject.PROJECT_SMALL_SCENE // 2
    config = LaunchConfig.after(LaunchConfig(), small, small, 4 * small, TILES, 8)
    assert not config.cull and config.project_block == project_block(small) != project_block(N)


def test_each_configuration_is_one_object():
    """`after` hands the same object for the same knobs (the frame's kind compares and hashes it every frame)."""
    a = LaunchConfig.after(LaunchConfig(), N, 50_000, 400_000, TILES, 8, (400_000, 100), SLOTS)
    b = LaunchConfig.after(LaunchConfig(), N, 50_000, 400_000, TILES, 8, (400_000, 100), SLOTS)
    assert a is b and a == LaunchConfig(*(getattr(a, f) for f in a.__dataclass_fields__))


@pytest.mark.parametrize("counted,cuda", [(False, False), (True, False), (False, True), (True, True)])
def test_a_first_configuration_is_the_one_object_of_its_knobs(counted, cuda):
    """A frame's kind keeps the configuration it was made with, and the straight way compares it with the
    renderer's by identity (renderer/pipeline.py `_NextFrame.holds`): the first frame's configuration must be the
    object `after` returns for the same knobs, or every frame of that kind would take the long way."""
    first = LaunchConfig.first(counted, cuda)
    assert first is LaunchConfig.first(counted, cuda)
    assert first is dataclasses.replace(first).interned()
    settled = LaunchConfig.after(first, 100, 100, 200, 100, 8)
    assert settled is LaunchConfig.after(dataclasses.replace(first), 100, 100, 200, 100, 8)
