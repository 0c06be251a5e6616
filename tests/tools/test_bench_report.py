"""The bench's comparison with the anchors (tools/bench_report.py `ratio`), by hand: which way the ratio goes and
which of the anchor's timings it takes. The end-to-end bench test that also checks it (tests/tools/test_bench_higs.py)
needs real scenes, which a user's clone does not have."""

import math

from tools.bench_report import PathResult, ratio
from tools.bench_timing import IN_FLIGHT, ONE_BY_ONE


def row(variant, timing, frame_ms, back_to_back_ms=()):
    return PathResult("s.ply", "orbit", 10, variant, (64, 48), timing, list(frame_ms),
                      back_to_back_ms=list(back_to_back_ms))  # fmt: skip


def test_ratio_is_the_anchors_time_over_warpsplats_timed_alike():
    """Above 1 where warpsplat is faster: an anchor taking 3 ms against warpsplat's 1 ms is 3.0. A row in flight
    is set against the anchor's frames back to back, a row one by one against its frames one by one."""
    anchor = row("HiGS", ONE_BY_ONE, [3.0, 3.0, 9.0], back_to_back_ms=[2.0, 2.0, 2.5])
    assert ratio(anchor, row("default", ONE_BY_ONE, [1.0, 1.0, 5.0])) == 3.0  # medians: 3 over 1
    assert ratio(anchor, row("default", IN_FLIGHT, [0.5, 0.5, 0.6])) == 4.0  # back to back 2 over 0.5
    assert ratio(anchor, row("default", ONE_BY_ONE, [6.0, 6.0, 6.0])) == 0.5  # the anchor faster: under 1


def test_no_ratio_without_the_anchor_or_its_timing():
    flight = row("default", IN_FLIGHT, [1.0])
    assert ratio(None, flight) is None
    assert ratio(row("gsplat", ONE_BY_ONE, [2.0]), flight) is None, "no back-to-back frames to set it against"
    assert math.isclose(ratio(row("gsplat", ONE_BY_ONE, [2.0]), row("default", ONE_BY_ONE, [4.0])), 0.5)


def test_p90_and_p99_are_the_second_passs_nearest_ranks():
    """Of the second pass's frames 1..100 ms (shuffled), nearest rank: p90 is the 90th, 90 ms, and p99 the 99th,
    99 ms; the first pass (all 1000 ms) is not in them."""
    second = [float(v) for v in range(1, 101)]
    second = second[37:] + second[:37]
    r = PathResult("s.ply", "orbit", 10, "default", (64, 48), ONE_BY_ONE, second, first_pass_ms=[1000.0] * 100)
    assert r.p90() == 90.0 and r.p99() == 99.0


def test_worst_frames_table_groups_a_paths_rows(capsys):
    """The worst-frames table lists each path's rows together (warpsplat's, then its anchors'), paths in the order
    they first came, whatever the order of the rows given."""
    from tools.bench_report import print_worst

    rows = [row("default", IN_FLIGHT, [1.0]), PathResult("s.ply", "flyover", 10, "default", (64, 48), IN_FLIGHT, [2.0]),
            row("gsplat", ONE_BY_ONE, [3.0])]  # fmt: skip
    print_worst(rows, (64, 48))
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("s.ply / ")]
    assert [(words[2], words[3]) for words in lines] == [("orbit", "default"), ("orbit", "gsplat"),
                                                         ("flyover", "default")]  # fmt: skip
