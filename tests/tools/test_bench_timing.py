"""tools/bench_timing.py's protocol on a fake clock: which calls fall inside which timing window, which pass is
which, and where the wall clock starts and stops. The anchors it times need CUDA; here `draw` only moves the clock,
so every number below follows from the costs given by hand."""

from __future__ import annotations

import time

import pytest
import torch

import tools.bench_timing as bt
from tools.bench_timing import IN_FLIGHT, ONE_BY_ONE

CPU = torch.device("cpu")


def test_time_anchor_times_each_pass_on_its_own_frames(monkeypatch):
    """Warm-up frames cost 100 ms, the first pass 10/20/30, the second 1/2/3, back to back 5 each; the device's
    sync takes 50 ms. The first pass, the second and the back-to-back one come back in that order, the warm-up in
    none of them; the second pass's wall rate counts its final sync (the end of the device's work) but not the
    sync before it (the warm-up's)."""
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(bt, "synchronize", lambda device: clock.__setitem__(0, clock[0] + 0.050))
    probes = iter([7.0, 8.0])
    monkeypatch.setattr(bt, "host_probe_us", lambda: next(probes))
    costs = iter([0.100] * 2 + [0.010, 0.020, 0.030] + [0.001, 0.002, 0.003] + [0.005] * 3)
    calls = []

    def draw(i):
        calls.append(i)
        clock[0] += next(costs)

    times = bt.time_anchor(draw, 3, CPU, warmup=2)
    assert calls == [0, 1] + [0, 1, 2] * 3
    assert times.one_by_one.first == pytest.approx([10.0, 20.0, 30.0])
    assert times.one_by_one.second == pytest.approx([1.0, 2.0, 3.0])
    assert times.back_to_back == pytest.approx([5.0, 5.0, 5.0])
    assert times.one_by_one.wall_fps == pytest.approx(3 / (0.006 + 0.050))
    assert times.median(ONE_BY_ONE) == pytest.approx(2.0) and times.median(IN_FLIGHT) == pytest.approx(5.0)
    assert (times.host_probe_us, times.host_probe_after_us, times.peak_mem_mb) == (7.0, 8.0, None)


def test_warm_up_goes_round_a_short_path():
    calls = []
    bt.warm_up(calls.append, 3, 5, CPU)
    assert calls == [0, 1, 2, 0, 1]


class FakeTimer:
    """A StageTimer that logs when it starts, stops and is waited for."""

    log: list = []

    def __init__(self, device):
        self.k = sum(e == "start" for e in self.log)
        self.log.append("start")

    def stop(self):
        self.log.append("stop")

    def wait(self):
        self.log.append("wait")

    def elapsed_ms(self, wait=False):
        return {"total": 1.0}

    def since_start(self, earlier):
        return 2.0 * (self.k + 1)


def test_one_by_one_waits_for_each_frame_and_back_to_back_for_none(monkeypatch):
    """One by one: each frame's timer is stopped and waited for before the next frame starts (a GPU's frame ends
    after its launch returns). Back to back: no frame is waited for inside the pass."""
    import renderer.timing

    monkeypatch.setattr(renderer.timing, "StageTimer", FakeTimer)
    FakeTimer.log = []

    def draw(i):
        FakeTimer.log.append(f"draw{i}")

    ms, _ = bt.one_by_one(draw, 2, CPU)
    assert FakeTimer.log == ["start", "draw0", "stop", "wait", "start", "draw1", "stop", "wait"]
    assert ms == [1.0, 1.0]
    FakeTimer.log = []
    ms, _ = bt.back_to_back(draw, 2, CPU)
    assert FakeTimer.log == ["start", "draw0", "stop", "start", "draw1", "stop"]
    assert ms == [2.0, 2.0]  # handover spans: each frame's end after the one before
