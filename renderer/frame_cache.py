"""The stage objects of recent frames (renderer/frame.py), reused, with their captured CUDA graphs, while nothing
they hold has changed: their `FrameKind` (renderer/frame_kind.py), their slot, and the workspace's buffers."""

from __future__ import annotations

from collections.abc import Callable

from .frame import Frame
from .frame_kind import FrameKind
from .workspace import Workspace

# frames' stage objects (and graphs) kept, one per image size, settings, launch configuration and slot; the least
# recently used dropped first. A fly-over's counted frames cross three list classes in two slots (six kinds), and
# its binning form or blocks besides: at 6, kept oldest-first, a looping 20-frame pass made 6-10 new ones
# (BENCHMARKS.md, section 33). A kept counted frame holds no tensors of its own (`Frame.let_go`); a capacity
# frame's graph keeps its pool (the sort's scratch), so not many more.
MAX_FRAMES = 8


class FrameCache:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.frames: dict[tuple[int, FrameKind], Frame] = {}  # by (slot, kind), least recently used first

    def frame(self, slot: int, kind: FrameKind, src, settings, make: Callable[[], Frame]) -> Frame:
        """The stage objects for a frame of this kind in this slot: a recent frame's when its buffer views are still
        valid, else `make()`'s. Any buffer that moved retires them all. The source arrays are not part of the key:
        the stages read them from `f.src` when they run, and a graph is replayed only for frames of the whole
        scene, whose arrays are the renderer's own (the covariances aside, whose version the kind holds)."""
        key = (slot, kind)
        f = self.frames.get(key)
        if f is not None and f.generation == self.ws.generation:
            f.src, f.settings = src, settings
            self.frames[key] = self.frames.pop(key)  # the most recently used last
            return f
        f = make()
        f.kind = kind  # the same kind in either slot: a stream's frames alternate slots
        if any(old.generation != self.ws.generation for old in self.frames.values()):
            self.frames.clear()  # their views (and graphs) point at buffers that moved
        while len(self.frames) >= MAX_FRAMES:
            self.frames.pop(next(iter(self.frames)))
        self.frames[key] = f
        return f

    def clear(self) -> None:
        self.frames.clear()
