"""The key of kept frames and their CUDA graphs (renderer/frame_kind.py): every RenderSettings field is either in
it or exempt with a reason, and each field in it does change the key (a setting left out would replay a stale
graph)."""

from __future__ import annotations

import dataclasses

from renderer import RenderSettings
from renderer.frame_kind import BAKED, NOT_BAKED, FrameKind, baked_settings
from renderer.launch import LaunchConfig

# Stated here, not read from the module: the fields that change no launch of a frame. A new RenderSettings field
# must be classified: added here and to NOT_BAKED (with its reason), or given another value in ANOTHER_VALUE.
EXEMPT = {"background", "scale_modifier", "adagscale_budget", "depth", "reuse_unchanged_frame", "temporal_window",
          "temporal_margin", "temporal_guard"}  # fmt: skip
# A valid value other than the default for each field a frame bakes in.
ANOTHER_VALUE = {
    "sh_degree": 1, "near": 0.2, "far": 50.0, "eps2d": 0.1, "tile_size": 16, "rasterizer": "batched",
    "tile_schedule": "in-order", "adagscale": True, "adagscale_tau": 0.3, "adagscale_s_min": 0.25, "outputs": "rgba8",
    "ortho": True, "blend_precision": "fp32",
}  # fmt: skip


def kind(settings: RenderSettings, **parts) -> FrameKind:
    base = dict(counted=False, n=100, width=64, height=48, covars_version=0, pair_capacity=(1024, 768),
                launch=LaunchConfig())  # fmt: skip
    return FrameKind(settings=baked_settings(settings.validate()), **{**base, **parts})


def test_every_setting_is_classified():
    names = {f.name for f in dataclasses.fields(RenderSettings)}
    unclassified = names - EXEMPT - set(ANOTHER_VALUE)
    assert not unclassified, f"classify {sorted(unclassified)}: in the frame kind, or in NOT_BAKED with a reason"
    assert set(NOT_BAKED) == EXEMPT, "NOT_BAKED differs from the fields stated exempt here"
    assert set(BAKED) == names - EXEMPT and all(NOT_BAKED[name] for name in NOT_BAKED)


def test_each_baked_setting_changes_the_kind():
    default = kind(RenderSettings())
    for name, value in ANOTHER_VALUE.items():
        assert kind(RenderSettings(**{name: value})) != default, f"{name} is not in the frame kind"


def test_exempt_settings_leave_the_kind_alone():
    default = kind(RenderSettings())
    other = RenderSettings(background=(1.0, 0.5, 0.0), scale_modifier=2.0, adagscale_budget=0.1, depth=True,
                           reuse_unchanged_frame=True, temporal_window=4, temporal_margin=64.0,
                           temporal_guard=0.5)  # fmt: skip
    assert kind(other) == default and hash(kind(other)) == hash(default)


def test_each_part_beyond_the_settings_changes_the_kind():
    default = kind(RenderSettings())
    others = dict(counted=True, n=101, width=65, height=49, covars_version=1, pair_capacity=(2048, 768),
                  launch=LaunchConfig(lists=1))  # fmt: skip
    for part, value in others.items():
        assert kind(RenderSettings(), **{part: value}) != default, part
    assert kind(RenderSettings(), pair_capacity=(1024, 1536)) != default, "the macro-tile pair capacity"
