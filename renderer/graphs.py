"""CUDA graphs: a capacity frame's launches, captured once per kind of frame and replayed (one launch instead of
about twenty). Only capacity frames of the whole scene, without depth output, are captured: no stage of theirs
waits for the host, and every tensor they touch stays at its address (renderer/frame.py)."""

from __future__ import annotations

import warnings

import torch

from .frame import Frame
from .frame_kind import FrameKind
from .timing import StageTimer

CAPTURE_AFTER = 3  # frames in a row of one kind before it is captured as a graph (>= 2: see `FrameGraphs.capture`)
KINDS_REMEMBERED = 32  # kinds captured before, which are captured again on their first frame when they come back
# how a frame ran (`RenderStats.ran`): its kind's graph replayed; captured as a graph this frame (then replayed);
# stage by stage (a kind not captured yet, graphs off, a temporal window's frame); counted (renderer/routes.py)
REPLAY, CAPTURE, EAGER, COUNTED = "replay", "capture", "eager", "counted"


class FrameGraphs:
    """Runs frames as replayed graphs. `enabled` turns it off (and a capture that fails does, for good);
    `replays` counts the frames replayed."""

    def __init__(self, device: torch.device, enabled: bool):
        self.device, self.enabled = device, enabled
        self.replays = 0
        self._stream: torch.cuda.Stream | None = None  # captures run on a stream of their own
        self._last_kind = None  # the kind of frame (`Frame.kind`) replayed or run last
        self._kind_run = 0  # frames in a row of that kind, in either slot
        self._captured: dict = {}  # kinds captured before (their graphs may have been retired since), oldest first

    def run(self, f: Frame, timer: StageTimer) -> str:
        """The whole frame as one captured graph. A kind of frame is captured on its CAPTURE_AFTER-th frame in
        a row: a capture costs about one eager frame of host time, too much to pay for a configuration that a
        moving camera passes through (capturing on a kind's first or second frame left fly-overs 4-8% slower
        than no graphs). A kind captured before whose graph was retired (its buffers moved: a change of binning
        form, a growth), or captured before at other capacities, is captured again on its first frame: it came
        back, so it is a view's, not one passed through, and its eager frames were most of a fly-through's slow
        frames (BENCHMARKS.md, sections 26 and 27).
        Returns how it ran: REPLAY (a graph captured before: its steady form), CAPTURE or EAGER."""
        self._kind_run = self._kind_run + 1 if self._last_kind == f.kind else 1
        self._last_kind = f.kind
        if f.graph is None and self._kind_run < CAPTURE_AFTER and self._known(f.kind) not in self._captured:
            f.run(timer)
            return EAGER
        captured = f.graph is None
        if captured:
            known = self._known(f.kind)
            try:
                f.graph = self.capture(f)
                self._captured.pop(known, None)
                self._captured[known] = True
                while len(self._captured) > KINDS_REMEMBERED:
                    self._captured.pop(next(iter(self._captured)))
            except Exception as e:  # a driver, torch or Triton that cannot capture: render eagerly from now on
                warnings.warn(f"CUDA graph capture failed ({str(e).splitlines()[0]}); rendering without graphs",
                              stacklevel=4)  # fmt: skip
                self.enabled = False
                f.run(timer)
                return EAGER
        f.graph.replay()
        self.replays += 1
        return CAPTURE if captured else REPLAY  # a capture also ran the graph once: not what a replay costs

    def replay_again(self, f: Frame) -> str:
        """Replay the graph of the frame run last, whose kind the caller knows is unchanged (the renderer's
        `_start_again`): `run`'s bookkeeping for a frame of the same kind, without comparing kinds. Returns REPLAY."""
        assert f.graph is not None and f.kind is self._last_kind
        self._kind_run += 1
        f.graph.replay()
        self.replays += 1
        return REPLAY

    def capture_ahead(self, f: Frame) -> None:
        """Capture a frame's graph before the frame is shown (the renderer's `_capture_ahead`: a kind captured
        before, whose graph a change of the pair buffers retired); its first frame then replays. A capture that
        fails turns graphs off, as in `run`."""
        try:
            f.graph = self.capture(f)
        except Exception as e:  # a driver, torch or Triton that cannot capture: render eagerly from now on
            warnings.warn(f"CUDA graph capture failed ({str(e).splitlines()[0]}); rendering without graphs",
                          stacklevel=3)  # fmt: skip
            self.enabled = False
            return
        known = self._known(f.kind)
        self._captured.pop(known, None)
        self._captured[known] = True

    @staticmethod
    def _known(kind: FrameKind) -> FrameKind:
        """A kind as remembered: its capacities aside. A view's kind that comes back after the capacities grew
        (a fly-through's denser part) is still that view's: each such first visit ran two eager frames before its
        capture, the viewer check's second pass's slow frames (BENCHMARKS.md, section 27)."""
        return kind._replace(pair_capacity=None)

    def capture(self, f: Frame) -> torch.cuda.CUDAGraph:
        """Record the frame's launches as a graph, without running them.

        No warm-up run first, and not through `torch.cuda.graph`, whose entry synchronises the device and empties
        the allocator's caches (device and pinned host) on every capture: a stall of the frame in flight, and
        cudaMalloc calls again for the frames after. Neither is needed here. Every operation of the frame has
        run before the capture: the kind's earlier frames of the run ran eagerly (CAPTURE_AFTER >= 2), and the
        renderer's warm-up compiled its kernels (renderer/warmup.py). Each graph has a memory pool of its own for
        its temporaries (the sorts' scratch): one pool shared by every graph, through a handle the renderer kept,
        failed torch's allocator on the H200 once the graphs that used it had been dropped ("use_count > 0"
        asserted at the next capture: BENCHMARKS.md, section 15), and every frame then ran without graphs."""
        untimed = StageTimer(None)
        if self._stream is None:
            self._stream = torch.cuda.Stream(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(self._stream):
            # thread_local: other threads may keep using CUDA while this one captures (render-to-video's encoder
            # thread waits on its frames' copy events; the default, "global", made that an error mid-capture)
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                f.run(untimed)
            finally:
                graph.capture_end()
        return graph
