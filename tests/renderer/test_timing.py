"""renderer/timing.py `StageTimer`: each stage's span from its marks; a joined stage begins at the end of the stage
just closed (one mark where two were), an unjoined one at a mark of its own."""

import itertools

import renderer.timing as timing
from renderer.timing import StageTimer


def test_joined_stages_share_their_boundary_marks(monkeypatch):
    clock = itertools.count(0.0, 1.0)  # each mark one second after the last
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    t = StageTimer(timing.torch.device("cpu"))  # start: 0
    with t.stage("a"):  # not joined: begins at its own mark, 1; ends at 2
        pass
    with t.stage("b", joined=True):  # begins at a's end, 2; ends at 3
        pass
    with t.stage("c"):  # its own mark, 4; ends at 5
        pass
    # d begins at c's end, 5; e, inside it, finds no stage just closed: its own mark, 6; ends at 7
    with t.stage("d", joined=True):  # noqa: SIM117 (nested on purpose)
        with t.stage("e", joined=True):
            pass
    # d ends at 8
    t.stop()  # 9
    ms = t.elapsed_ms()
    assert ms == {"a": 1e3, "b": 1e3, "c": 1e3, "e": 1e3, "d": 3e3, "total": 9e3}
    assert [m[1] for m in t._marks] == [1.0, 2.0, 4.0, 6.0, 5.0]  # e closes (and is listed) before d


def test_a_timer_of_no_device_records_nothing():
    t = StageTimer(None)
    with t.stage("a", joined=True):
        pass
    t.stop()
    assert t._marks == [] and t.elapsed_ms() is None and t.total_ms() is None


class FakeEvent:
    """Stands in for a CUDA timing event: counts its records."""

    def __init__(self):
        self.records = 0

    def record(self):
        self.records += 1


def test_a_pool_hands_a_gone_timers_events_to_later_timers_and_no_live_ones():
    """A timer gives its events back to its pool when it goes; the next timers record those rather than new ones,
    and two live timers never share one (each would read the other's times)."""
    made = []
    pool = timing.EventPool(None, make=lambda: made.append(FakeEvent()) or made[-1])
    cuda = type("Device", (), {"type": "cuda"})()  # a timer on CUDA, without CUDA

    def frame():
        t = StageTimer(cuda, pool)
        for i, name in enumerate(("project", "order", "bin")):
            with t.stage(name, joined=i > 0):
                pass
        t.stop()
        return t

    first = frame()
    assert len(made) == 6 and len(pool) == 0  # start, the first stage's begin, three ends, stop
    second = frame()  # the first is alive: new events
    assert len(made) == 12 and not {id(e) for e in first._events} & {id(e) for e in second._events}
    del first
    assert len(pool) == 6
    third = frame()
    assert len(made) == 12 and len(pool) == 0 and all(e.records == 2 for e in third._events)
    del second, third
    assert len(pool) == 12
