"""The measured choice between a temporal window and plain frames (renderer/window_choice.py), driven by injected
timings: the trial order, the decision against what was timed, late timings, the re-checks, and the estimate of a
window's cost. The renderer's use of it is in tests/renderer/test_temporal.py."""

import math

import numpy as np
import pytest

from renderer import look_at_pose
from renderer.window_choice import (
    MARGIN,
    PLAIN_SAMPLES,
    RECHECK_FRAMES,
    RECHECK_MAX,
    SPEED_FRAMES,
    TRIAL_HITS,
    WindowChoice,
)

K = 8
KEY = ("size", "settings", True)


class FakeTimer:
    """A frame's timer whose total is known from the start, or only once `done` is set (a frame in flight)."""

    def __init__(self, ms, done=True):
        self.ms, self.done = ms, done

    def total_ms(self):
        return self.ms if self.done else None


def pose(i, step=0.01):
    """Frame i of a camera moving `step` scene radii per frame along x."""
    return look_at_pose((i * step, 0.0, -4.0), (i * step, 0.0, 0.0), (0, -1, 0))


class Driver:
    """Runs frames through a choice as the renderer does: ask, then record what the frame was and its time."""

    def __init__(self, costs, step=0.01):
        self.choice, self.costs, self.step, self.i = WindowChoice(), dict(costs), step, 0
        self.in_use = False  # whether a window exists (the cache builds one on a window frame without one)
        self.served = 0  # frames the current window served
        self.window_len = K  # frames a window serves before the next is built

    def frame(self, steady=True, done=True):
        use = self.choice.wants_window(KEY, pose(self.i, self.step), 1.0, K)
        if use:
            kind = "hit" if self.in_use and self.served < self.window_len else "build"
            self.served = self.served + 1 if kind == "hit" else 1
        else:
            kind = "plain"
        self.in_use = use
        timer = FakeTimer(self.costs[kind], done)
        self.choice.record(kind, timer, steady)
        self.i += 1
        return kind, timer

    def run(self, n, **kw):
        return [self.frame(**kw)[0] for _ in range(n)]


def test_the_trial_times_a_window_then_plain_frames_and_keeps_the_window_when_it_is_faster():
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})  # a window frame costs (5 + 7) / 8 = 1.5 ms
    kinds = d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 4)
    assert kinds[: 1 + TRIAL_HITS] == ["build"] + ["hit"] * TRIAL_HITS
    assert kinds[1 + TRIAL_HITS : 1 + TRIAL_HITS + PLAIN_SAMPLES] == ["plain"] * PLAIN_SAMPLES
    assert kinds[1 + TRIAL_HITS + PLAIN_SAMPLES] == "build"  # decided: a new window from then on
    assert set(kinds[1 + TRIAL_HITS + PLAIN_SAMPLES :]) <= {"build", "hit"}
    c = d.choice
    assert c.state() == "on" and c.decisions == 1 and d.i == 1 + TRIAL_HITS + PLAIN_SAMPLES + 4
    assert c.window_ms() == pytest.approx((5.0 + (K - 1) * 1.0) / K) and c.plain_ms() == 2.0


@pytest.mark.parametrize("hit", [1.9, 2.0 * (1 - MARGIN / 2)])
def test_a_window_that_is_not_faster_by_the_margin_is_declined(hit):
    """(5 + 7 hit) / 8 against 2 ms of a plain frame: 2.29 ms, and 2.23 ms (faster per hit, yet slower
    with its builds); both go plain, and stay plain."""
    d = Driver({"build": 5.0, "hit": hit, "plain": 2.0})
    kinds = d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 20)
    assert kinds[1 + TRIAL_HITS :] == ["plain"] * (PLAIN_SAMPLES + 20)
    assert d.choice.state() == "off"


def test_the_margin_decides_the_close_cases():
    """A window 1% faster than plain frames is not taken up (within the noise); 3% faster is."""
    for per_frame, want in ((0.99 * 2.0, "off"), (0.97 * 2.0, "on")):
        d = Driver({"build": per_frame, "hit": per_frame, "plain": 2.0})
        d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
        assert d.choice.state() == want, per_frame


def test_decisions_wait_for_timings_still_in_flight():
    """A plain frame's time can be read only after the next frame is launched (a stream): the decision waits for
    the times it needs, and for every window frame's, and frames meanwhile stay plain."""
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    window = [d.frame(done=False)[1] for _ in range(1 + TRIAL_HITS)]
    plain = [d.frame(done=False) for _ in range(PLAIN_SAMPLES + 3)]
    assert [k for k, _ in plain] == ["plain"] * len(plain) and d.choice.state() == "measuring"
    for _, t in plain:
        t.done = True
    assert d.frame()[0] == "plain"  # the window frames' times are still missing
    for t in window:
        t.done = True
    assert d.frame()[0] == "build" and d.choice.state() == "on"


def test_a_recheck_waits_for_the_window_frames_it_timed():
    """A re-check from "off" has its plain times at hand; it still waits for the trial window's own frames
    (which alone show whether the window's hits pay for its build) before deciding."""
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1 + RECHECK_FRAMES)
    assert d.choice.state() == "off"
    d.costs.update(build=3.0, hit=1.0)
    assert d.frame()[0] == "build"  # the window timed again: its build's time is read at once ...
    hits = [d.frame(done=False) for _ in range(TRIAL_HITS)]  # ... its hits' only later
    assert [k for k, _ in hits] == ["hit"] * TRIAL_HITS
    assert d.frame()[0] == "plain" and d.choice.state() == "measuring"
    for _, t in hits:
        t.done = True
    assert d.frame()[0] == "build" and d.choice.state() == "on"  # (3 + 7) / 8 against 2 ms


def test_unsteady_plain_frames_are_not_what_plain_frames_cost():
    """Frames that capture a graph or run before their capture (where graphs replay) are not plain samples."""
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 0.5})
    d.run(1 + TRIAL_HITS)
    d.costs["plain"] = 50.0  # eager and capturing frames: slow
    assert d.run(6, steady=False) == ["plain"] * 6 and d.choice.state() == "measuring"
    d.costs["plain"] = 0.5  # replayed frames
    d.run(PLAIN_SAMPLES + 1)
    assert d.choice.state() == "off"  # 1.5 ms a window frame against 0.5 ms replayed


def test_a_window_in_use_is_dropped_when_its_own_frames_measure_slower():
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    assert d.choice.state() == "on"
    d.costs.update(build=9.0, hit=2.5)  # the view changed: windows save nothing now
    kinds = d.run(30)
    assert d.choice.state() == "off" and kinds[-10:] == ["plain"] * 10


def test_windows_that_the_camera_leaves_early_count_as_short():
    """F is the mean length of the windows completed while in use: windows rebuilt every 2nd frame cost
    (5 + 1) / 2 = 3 ms a frame, over 2 ms of a plain one, where the trial's F = K promised 1.5 ms."""
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    assert d.choice.state() == "on"
    d.window_len = 2
    kinds = d.run(12)
    # the window of the decision served 2 frames, the next one is built: F = 2, so the frame after goes plain
    assert kinds == ["hit", "build"] + ["plain"] * 10
    assert d.choice.state() == "off"
    assert d.choice.window_ms() == pytest.approx(3.0)


def test_a_trial_window_that_serves_no_frame_costs_a_build_each():
    c = WindowChoice()
    for i in range(1 + TRIAL_HITS):
        assert c.wants_window(KEY, pose(i), 1.0, K)
        c.record("build", FakeTimer(3.0))
    for i in range(PLAIN_SAMPLES):
        assert not c.wants_window(KEY, pose(10 + i), 1.0, K)
        c.record("plain", FakeTimer(2.0))
    assert not c.wants_window(KEY, pose(20), 1.0, K)
    assert c.window_ms() == 3.0 and c.state() == "off"


def test_the_side_not_in_use_is_timed_again_after_recheck_frames():
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    assert d.choice.state() == "off"
    d.costs.update(build=3.0, hit=1.0)  # the view changed: windows pay now
    kinds = d.run(RECHECK_FRAMES + 1 + TRIAL_HITS + 2)
    assert kinds[:RECHECK_FRAMES] == ["plain"] * RECHECK_FRAMES
    # the window timed again; the plain frames just rendered are at hand, so the decision follows at once, and
    # the trial's window goes on serving
    assert kinds[RECHECK_FRAMES:] == ["build"] + ["hit"] * (TRIAL_HITS + 2)
    assert d.choice.state() == "on" and d.choice.decisions == 2
    # and from "on", plain frames are timed again after as many frames
    d.costs["plain"] = 0.5
    kinds = d.run(RECHECK_FRAMES + PLAIN_SAMPLES + 3)
    assert "plain" not in kinds[: RECHECK_FRAMES - 2] and kinds[-3:] == ["plain"] * 3
    assert d.choice.state() == "off" and d.choice.decisions == 3


def test_a_slower_camera_rechecks_at_once_and_a_single_jump_does_not():
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0}, step=0.05)
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + SPEED_FRAMES)
    assert d.choice.state() == "off" and d.choice.decisions == 1
    d.i += 400  # one jump (a path that starts over): the median speed over SPEED_FRAMES frames ignores it
    d.run(3)
    assert d.choice.state() == "off"
    d.step = 0.01  # five times slower: measured again within SPEED_FRAMES frames
    kinds = d.run(SPEED_FRAMES + TRIAL_HITS + 2)
    start = kinds.index("build")  # the window timed again at the new speed, once the median speed fell
    assert start < SPEED_FRAMES and kinds[start : start + 1 + TRIAL_HITS] == ["build"] + ["hit"] * TRIAL_HITS
    assert d.choice.decisions == 2 and d.choice.state() == "off"  # and declined again: it is still slower


def test_a_faster_camera_rechecks_a_window_in_use_but_not_one_declined():
    """A faster camera makes windows that cover more and serve fewer frames: it cannot turn a lost window into a
    win, so from "off" it is no reason to pay for a trial; from "on" the plain frames are timed again."""
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0}, step=0.01)
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + SPEED_FRAMES)
    assert d.choice.state() == "off" and d.choice.decisions == 1
    d.step = 0.05
    assert d.run(3 * SPEED_FRAMES) == ["plain"] * (3 * SPEED_FRAMES) and d.choice.decisions == 1
    on = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0}, step=0.01)
    on.run(1 + TRIAL_HITS + PLAIN_SAMPLES + SPEED_FRAMES)
    assert on.choice.state() == "on" and on.choice.decisions == 1
    on.step = 0.05
    kinds = on.run(SPEED_FRAMES + PLAIN_SAMPLES + 2)
    assert kinds.count("plain") >= PLAIN_SAMPLES and on.choice.decisions == 2


def test_each_recheck_that_declines_again_waits_twice_as_long_and_a_win_resets_the_wait():
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    assert d.choice.state() == "off" and d.choice.recheck_after == RECHECK_FRAMES
    kinds = d.run(RECHECK_FRAMES * (1 + 2 + 4 + 8 + 8) + 50)  # five re-checks from "off", each declined again
    trials = [i for i, k in enumerate(kinds) if k == "build"]
    gaps = [b - a for a, b in zip(trials, trials[1:])]
    assert len(trials) == 5 and kinds.count("hit") == 5 * TRIAL_HITS
    trial = 1 + TRIAL_HITS  # a re-check's own window frames, counted in the wait that follows them
    assert [g - trial for g in gaps] == [2 * RECHECK_FRAMES + 1, 4 * RECHECK_FRAMES + 1, RECHECK_MAX + 1,
                                         RECHECK_MAX + 1]  # fmt: skip
    d.costs.update(build=3.0, hit=1.0)  # the view changed: the next re-check takes the window up
    d.run(RECHECK_MAX + 1 + TRIAL_HITS + 2)
    assert d.choice.state() == "on" and d.choice.recheck_after == RECHECK_FRAMES


def test_a_new_key_starts_over():
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    assert d.choice.state() == "on" and d.choice.plain_ms() == 2.0
    assert d.choice.wants_window(("another size",), pose(d.i), 1.0, K)  # a window trial, from nothing
    assert d.choice.state() == "measuring" and d.choice.decisions == 0 and d.choice.plain_ms() is None


def test_speed_is_rotation_plus_translation_in_scene_radii():
    c = WindowChoice()
    p0 = look_at_pose((0, 0, -4), (0, 0, 0), (0, -1, 0))
    turned = p0.copy()
    a = math.radians(3.0)
    turned[:3, :3] = p0[:3, :3] @ np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])
    turned[:3, 3] += (0.2, 0, 0)
    c._track_speed(p0, 2.0)
    c._track_speed(turned, 2.0)
    assert c.speeds[-1] == pytest.approx(a + 0.1)


def test_a_new_path_keeps_the_measured_choice_and_forgets_the_rest():
    """`TemporalCache.reset` (a new path on the same renderer): the counters, window and poses go; the choice
    stays, so the next path does not pay for a trial again."""
    from renderer.temporal import TemporalCache

    cache = TemporalCache(ws=None)
    d = Driver({"build": 5.0, "hit": 2.5, "plain": 2.0})
    cache.choice = d.choice
    d.run(1 + TRIAL_HITS + PLAIN_SAMPLES + 1)
    cache.stats.frames, cache.last_pose = 9, pose(0)
    cache.reset()
    assert cache.choice is d.choice and cache.choice.state() == "off" and cache.choice.decisions == 1
    assert cache.stats.frames == 0 and cache.last_pose is None and cache.window is None
