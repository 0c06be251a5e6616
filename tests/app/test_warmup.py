"""The viewer's background warm-up (app/warmup.py): what it warms in which order, when frames may start, a new
size ahead of the switches, an error shown rather than raised. The warm-up itself is replaced by a recorder
(on a CPU nothing compiles; tests/renderer/test_warmup.py tests what it renders)."""

from __future__ import annotations

import threading

import app.warmup as warm
from renderer import RenderSettings


class Recorder:
    """Stands in for renderer.warmup.warm_up: records each call; the first blocks until released."""

    def __init__(self, fail_at: int | None = None):
        self.calls: list[tuple[list, list]] = []
        self.threads: list[int | None] = []  # each call's `threads` (None: the warm-up's default)
        self.release_first = threading.Event()
        self.fail_at = fail_at
        self.all_done = threading.Event()
        self.expected = None

    def __call__(self, renderer, sizes, settings, **kw):
        if not self.calls:
            self.release_first.wait(10)
        self.calls.append((list(sizes), list(settings)))
        self.threads.append(kw.get("threads"))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise RuntimeError("ptxas died\nmore lines")
        if self.expected is not None and len(self.calls) >= self.expected:
            self.all_done.set()


def start(monkeypatch, recorder, degree=1):
    monkeypatch.setattr(warm, "needs_warm_up", lambda r: True)
    monkeypatch.setattr(warm, "warm_up", recorder)
    settings = RenderSettings(adagscale=True)
    return warm.BackgroundWarmUp(object(), (640, 360), settings, degree), settings


def test_frames_wait_for_the_starting_settings_then_the_switches_follow(monkeypatch):
    rec = Recorder()
    n_switches = len(warm.switch_settings(RenderSettings(adagscale=True), 1)) - 1
    rec.expected = 1 + n_switches
    w, settings = start(monkeypatch, rec)
    assert not w.ready and w.status == "preparing kernels"
    settings.adagscale = False  # the overlay edits its settings in place: the warm-up keeps its own copy
    rec.release_first.set()
    assert w.wait(10) and rec.all_done.wait(10)
    assert rec.calls[0] == ([(640, 360)], [RenderSettings(adagscale=True)])
    warmed = [s for _, ss in rec.calls[1:] for s in ss]
    assert len(warmed) == n_switches and RenderSettings(adagscale=True) not in warmed
    # every switch combination once, not merely as many settings (one dropped and another twice would pass that)
    want = warm.switch_settings(RenderSettings(adagscale=True), 1)[1:]
    assert sorted(map(repr, warmed)) == sorted(map(repr, want))
    assert all(sizes == [(640, 360)] for sizes, _ in rec.calls)
    # before the first frame the warm-up's default (threads on a first start); while frames are shown, one thread
    assert rec.threads == [None] + [1] * n_switches
    w.close()
    w.thread.join(5)
    assert not w.thread.is_alive()


def test_a_new_size_goes_before_the_remaining_switches(monkeypatch):
    rec = Recorder()
    w, _ = start(monkeypatch, rec)
    w.add_size((800, 450))  # asked while the first phase runs
    w.add_size((640, 360))  # the starting size: nothing to add
    rec.expected = 2
    rec.release_first.set()
    assert rec.all_done.wait(10)
    w.close()
    w.thread.join(5)
    assert rec.calls[1] == ([(800, 450)], [RenderSettings(adagscale=True)])
    assert [c[0] for c in rec.calls].count([(640, 360)]) <= len(rec.calls) - 1


def test_an_error_is_shown_and_frames_go_on(monkeypatch):
    rec = Recorder(fail_at=1)
    w, _ = start(monkeypatch, rec)
    rec.release_first.set()
    assert w.wait(10)
    w.thread.join(5)
    assert w.ready and isinstance(w.error, RuntimeError)
    assert w.status == "kernel warm-up stopped: ptxas died"


def test_nothing_to_warm_on_a_cpu():
    from renderer import Renderer
    from renderer.warmup import synthetic_scene

    r = Renderer(synthetic_scene(20, 1), device="cpu", backend="torch")
    w = warm.BackgroundWarmUp(r, (64, 48), RenderSettings(), 0)
    assert w.ready and w.thread is None and w.status == ""
    w.add_size((32, 24))
    w.close()
