"""Host-side rules of renderer/graphs.py (`FrameGraphs`) that a mutation audit found no test checked, with fake
frames and a fake capture (no CUDA): when a kind of frame is captured, which kinds are remembered, how a failed
capture turns graphs off, and what `replays` counts. Expected values come from the module's docstrings."""

from typing import NamedTuple

import pytest
import torch

from renderer.graphs import CAPTURE, EAGER, KINDS_REMEMBERED, REPLAY, FrameGraphs


class Kind(NamedTuple):  # FrameKind's part that matters here
    name: str
    pair_capacity: tuple[int, int] = (10, 5)


class FakeGraph:
    def __init__(self):
        self.replays = 0

    def replay(self):
        self.replays += 1


class FakeFrame:
    def __init__(self, name):
        self.kind, self.graph, self.eager = Kind(name), None, 0  # a kind equal to, not the same object as, others'

    def run(self, timer):
        self.eager += 1


def _graphs(fail=False):
    graphs = FrameGraphs(torch.device("cpu"), enabled=True)
    captures = []

    def capture(f):
        if fail:
            raise RuntimeError("operation not permitted when stream is capturing\nmore")
        captures.append(f.kind.name)
        return FakeGraph()

    graphs.capture = capture
    return graphs, captures


def test_a_new_kind_runs_its_first_two_frames_eagerly_in_either_slot():
    """Capturing on a kind's first or second frame left fly-overs slower: a new kind's first two frames in a row run
    eagerly, counted across slots (a stream's frames alternate between two frame objects of one kind), and a frame
    of another kind between them starts the count again."""
    graphs, captures = _graphs()
    slots = [FakeFrame("A"), FakeFrame("A")]
    assert [graphs.run(slots[0], None), graphs.run(slots[1], None)] == [EAGER, EAGER]
    graphs.run(FakeFrame("B"), None)
    assert [graphs.run(slots[k % 2], None) for k in range(2)] == [EAGER, EAGER] and captures == []
    assert graphs.run(slots[0], None) == CAPTURE and captures == ["A"]
    assert graphs.run(slots[1], None) == CAPTURE  # the other slot's frame: a graph of its own, the kind known now
    assert graphs.run(slots[0], None) == REPLAY


def test_replays_counts_the_frames_that_ran_a_graph():
    """A captured frame also ran its graph once (`RenderStats.ran` "capture": captured, then replayed); eager frames
    ran none."""
    graphs, _ = _graphs()
    f = FakeFrame("A")
    assert [graphs.run(f, None) for _ in range(4)] == [EAGER, EAGER, CAPTURE, REPLAY]
    assert graphs.replays == 2 == f.graph.replays and f.eager == 2


def _capture(graphs, name):
    f = FakeFrame(name)
    while graphs.run(f, None) == EAGER:
        pass
    return f


def test_the_kinds_remembered_are_the_last_captured_the_oldest_forgotten_first():
    """KINDS_REMEMBERED kinds captured before are remembered (captured again on their first frame when they come
    back), oldest first: a kind captured again becomes the newest, and one more kind forgets the oldest alone."""
    graphs, captures = _graphs()
    names = [f"K{i}" for i in range(KINDS_REMEMBERED)]
    for name in names:
        _capture(graphs, name)
    assert graphs.run(FakeFrame("K0"), None) == CAPTURE  # all remembered; K0 the newest now
    _capture(graphs, "new")  # K1, the oldest, forgotten
    assert graphs.run(FakeFrame("K1"), None) == EAGER
    graphs.run(FakeFrame("other"), None)
    for name in ["K0", "K2", names[-1], "new"]:
        assert graphs.run(FakeFrame(name), None) == CAPTURE, name


def test_a_failed_capture_runs_the_frame_eagerly_and_turns_graphs_off():
    graphs, captures = _graphs(fail=True)
    f = FakeFrame("A")
    graphs.run(f, None)
    graphs.run(f, None)
    with pytest.warns(UserWarning, match=r"CUDA graph capture failed \(operation not permitted .*capturing\);"):
        assert graphs.run(f, None) == EAGER
    assert not graphs.enabled and f.eager == 3 and f.graph is None and graphs.replays == 0


def test_a_kind_captured_ahead_replays_and_is_remembered():
    """`capture_ahead`: the frame's first run replays, and the kind counts as captured before, so another frame of it
    (the other slot's, or after its graph was retired) is captured on its first frame."""
    graphs, captures = _graphs()
    f = FakeFrame("A")
    graphs.capture_ahead(f)
    assert graphs.run(f, None) == REPLAY and f.eager == 0
    graphs.run(FakeFrame("B"), None)
    assert graphs.run(FakeFrame("A"), None) == CAPTURE and captures == ["A", "A"]


def test_a_failed_capture_ahead_turns_graphs_off():
    graphs, _ = _graphs(fail=True)
    f = FakeFrame("A")
    with pytest.warns(UserWarning, match="CUDA graph capture failed"):
        graphs.capture_ahead(f)
    assert not graphs.enabled and f.graph is None
