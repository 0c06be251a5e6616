"""The stage objects of recent frames (renderer/frame.py), reused, with their captured CUDA graphs, while nothing
they hold has changed: their `FrameKind` (renderer/frame_kind.py), their slot, and the workspace's buffers."""

from __future__ import annotations

from collections.abc import Callable

from .frame import Frame
from .frame_kind import FrameKind
from .workspace import Workspace

# capacity frames' stage objects (and graphs) kept, one per image size, settings, launch configuration and slot;
# the least recently used dropped first. A capacity frame's graph keeps its pool (the sort's scratch), so not many.
MAX_FRAMES = 8
# counted frames' stage objects kept, apart from those: a kept counted frame holds no tensors of its own
# (`Frame.let_go`), only views of the workspace, and making one costs the host about 0.1 ms, inside the frames the
# host paces. A fly-over's counted frames cross list classes, blocks, the pre-cull and the binning form in two
# slots: the 6M fly-over's 20-frame pass made 9 new ones every pass with room for 8 (BENCHMARKS.md, section 52;
# at 6, section 33: 6-10)
MAX_COUNTED_FRAMES = 32


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
        # room among the frames of its route, the least recently used of them dropped first
        mine = [k for k, old in self.frames.items() if old.counted == f.counted]
        for k in mine[: max(0, len(mine) - (MAX_COUNTED_FRAMES if f.counted else MAX_FRAMES) + 1)]:
            del self.frames[k]
        self.frames[key] = f
        return f

    def clear(self) -> None:
        self.frames.clear()
