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
