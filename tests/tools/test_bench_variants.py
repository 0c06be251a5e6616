"""tools/bench_variants.py: which rows a --variants value selects, and which rows count as temporal, by hand."""

from renderer import RenderSettings
from tools.bench_variants import is_temporal, selected_variants


def test_one_by_one_row_joins_only_when_anchors_run():
    """The default always runs (the reference); "frames=one-by-one" joins unasked only when anchors run (their
    one-by-one frames are set against it)."""
    assert list(selected_variants("tile_size=16")) == ["default", "tile_size=16"]
    assert list(selected_variants("tile_size=16", anchors=True)) == ["default", "frames=one-by-one", "tile_size=16"]


def test_bang_patterns_leave_variants_out():
    assert list(selected_variants("adagscale tau=*,!adagscale tau=1")) == [
        "default", "adagscale tau=0.3", "adagscale tau=3"]  # fmt: skip


def test_a_window_of_one_frame_is_not_temporal():
    """temporal_window 0 (off) and 1 (one frame per cull: every frame culls) are plain frames; 2 and up reuse."""
    assert [is_temporal(RenderSettings(temporal_window=k)) for k in (0, 1, 2, 8)] == [False, False, True, True]
