"""What a frame's stage objects and their CUDA graph bake in: the key under which renderer/frame_cache.py keeps
them. A graph replays its launches exactly as captured (arguments, grid sizes, buffer addresses), so a frame
may reuse one only when everything in its `FrameKind` is equal; a setting left out would silently replay a
stale graph. The settings part is therefore derived: every `RenderSettings` field is in the kind unless it is
listed in NOT_BAKED with the reason it cannot change a frame's launches (tests/renderer/test_frame_kind.py
fails when a field is neither).
"""

from __future__ import annotations

import operator
from dataclasses import fields
from typing import NamedTuple

from .launch import LaunchConfig
from .settings import RenderSettings

# RenderSettings fields that change no launch of a frame, and why
NOT_BAKED = {
    "background": "reaches the kernels through the slot's parameter buffer (renderer/params.py), read at replay",
    "scale_modifier": "changes the covariances; their version (`covars_version`) is in the kind",
    "adagscale_budget": "only sets the frame's tau, which reaches the kernels through the parameter buffer",
    "depth": "a pass of its own after the frame's stages (`Frame.render_depth`); depth frames are never captured",
    "reuse_unchanged_frame": "decides whether a frame runs at all, not what it launches",
    "temporal_window": "decides the frame's source, whose size is in the kind (a window's frames are not captured)",
    "temporal_margin": "shapes a temporal window's cull, which runs before the frame's stages",
    "temporal_guard": "shapes a temporal window's cull, which runs before the frame's stages",
}
# The rest, in field order. Among them: the SH degree, clip planes, eps2d and AdagScale's s_min are kernel
# arguments; the tile size, rasterizer loop and tile schedule decide buffer shapes, kernels and constexprs; the
# AdaGScale switch decides whether project reads a tau; AdaGScale's tau (read from the parameter buffer) keeps
# its own pair capacity (renderer/launch.py `Capacities`), and its frames their own graphs.
BAKED = tuple(f.name for f in fields(RenderSettings) if f.name not in NOT_BAKED)
baked_settings = operator.attrgetter(*BAKED)  # settings -> the tuple of their values, in one call


class FrameKind(NamedTuple):
    """Everything a frame's stage objects and graph bake in, but the workspace slot (a stream's frames alternate
    slots and are still one kind, for CAPTURE_AFTER's count). Immutable, with named fields; a NamedTuple rather
    than a frozen dataclass because one is made, hashed and compared every frame: as a frozen dataclass that
    measured 1 us more host time per frame than the tuple it replaces, a NamedTuple 0.3 us (on a 2-core CPU)."""

    counted: bool  # the route (renderer/frame.py)
    n: int  # Gaussians projected: the frame's source (the scene, or a window's set)
    width: int
    height: int
    settings: tuple  # the values of BAKED's fields, in that order
    covars_version: int  # which covariances (a graph holds their address)
    pair_capacity: tuple[int, int]  # the lists' and the pair buffers' lengths (renderer/launch.py Capacities)
    launch: LaunchConfig  # the kernels' launch knobs
