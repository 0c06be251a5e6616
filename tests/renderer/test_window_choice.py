"""The measured choice between a temporal window and plain frames (renderer/window_choice.py), driven by injected
timings: the trial's alternation, the decision against the plain frames beside each window frame, late timings,
the re-checks and what they may cost, and the estimate of a window's cost. The renderer's use of it is in
tests/renderer/test_temporal.py."""

import math

import numpy as np
import pytest

from renderer import look_at_pose
from renderer.window_choice import (
    MARGIN,
    RECHECK_FRAMES,
    RECHECK_MAX,
    SPEED_CHANGE,
    SPEED_FLOOR,
    SPEED_FRAMES,
    TRIAL_BUDGET,
    TRIAL_WINDOW_FRAMES,
    WindowChoice,
)

K = 8
KEY = ("size", "settings", True)
# a trial's frames at K = 8: the window built on its first window frame covers the others (every second frame)
TRIAL = ["plain", "build"] + ["plain", "hit"] * (TRIAL_WINDOW_FRAMES - 1) + ["plain"]


class FakeTimer:
    """A frame's timer whose total is known from the start, or only once `done` is set (a frame in flight)."""

    def __init__(self, ms, done=True):
        self.ms, self.done = ms, done

    def total_ms(self):
        return self.ms if self.done else None


def pose(x):
    """A camera at x scene radii along the x axis, looking along z."""
    return look_at_pose((x, 0.0, -4.0), (x, 0.0, 0.0), (0, -1, 0))


class Driver:
    """Runs frames through a choice as the renderer does: ask, then record what the frame was and its time.
    `costs`: ms by kind, each a number or a function of the frame's index (a path whose cost changes)."""

    def __init__(self, costs, step=0.01):
        self.choice, self.costs, self.step = WindowChoice(), dict(costs), step
        self.i, self.x = 0, 0.0  # the frame's index, the camera's position
        self.path = None  # a function of the frame's index to the camera's position, in place of `step`
        self.start = None  # the frame that built the window: it covers the cameras of window_len frames from there
        self.window_len = K
        self.ms: list[float] = []  # every frame's time

    def cost(self, kind):
        c = self.costs[kind]
        return c(self.i) if callable(c) else c

    def frame(self, steady=True, done=True):
        x = self.path(self.i) if self.path else self.x
        use = self.choice.wants_window(KEY, pose(x), 1.0, K)
        if use:  # as TemporalCache.source: a hit when the window covers this camera, unless a fresh one is asked
            covers = self.start is not None and self.i - self.start < self.window_len
            kind = "hit" if covers and not self.choice.rebuild else "build"
            self.start = self.i if kind == "build" else self.start
        else:
            kind = "plain"
        timer = FakeTimer(self.cost(kind), done)
        self.ms.append(timer.ms)
        self.choice.record(kind, timer, steady)
        self.i += 1
        self.x += self.step
        return kind, timer

    def run(self, n, **kw):
        return [self.frame(**kw)[0] for _ in range(n)]


def decided(costs, **kw):
    """A driver past its first trial (and the frame that decided it)."""
    d = Driver(costs, **kw)
    d.run(len(TRIAL) + 1)
    return d


def trial_starts(kinds):
    """Where each trial in `kinds` begins (the plain frame before its build)."""
    return [i - 1 for i in range(1, len(kinds)) if kinds[i : i + len(TRIAL) - 1] == TRIAL[1:]]


def test_the_trial_alternates_window_and_plain_frames_and_keeps_the_window_when_it_is_faster():
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})  # a window frame costs (5 + 7) / 8 = 1.5 ms
    kinds = d.run(len(TRIAL) + 4)
    assert kinds[: len(TRIAL)] == TRIAL
    assert kinds[len(TRIAL) :] == ["build", "hit", "hit", "hit"]  # decided: windows from then on
    c = d.choice
    assert c.state() == "on" and c.decisions == 1
    assert c.window_ratio() == pytest.approx((2.5 + (K - 1) * 0.5) / K)
    assert c.window_ms() == pytest.approx(1.5) and c.plain_ms() == 2.0


@pytest.mark.parametrize("hit", [1.9, 2.0 * (1 - MARGIN / 2)])
def test_a_window_that_is_not_faster_by_the_margin_is_declined(hit):
    """(5 + 7 hit) / 8 against 2 ms of a plain frame: 2.29 ms, and 2.23 ms (faster per hit, yet slower
    with its builds); both go plain, and stay plain."""
    d = Driver({"build": 5.0, "hit": hit, "plain": 2.0})
    kinds = d.run(len(TRIAL) + 20)
    assert kinds[len(TRIAL) :] == ["plain"] * 20
    assert d.choice.state() == "off"


def test_the_margin_decides_the_close_cases():
    """A window 1% faster than plain frames is not taken up (within the noise); 3% faster is."""
    for per_frame, want in ((0.99 * 2.0, "off"), (0.97 * 2.0, "on")):
        d = decided({"build": per_frame, "hit": per_frame, "plain": 2.0})
        assert d.choice.state() == want, per_frame


@pytest.mark.parametrize("slope", [0.5, -0.5], ids=["dearer", "cheaper"])
@pytest.mark.parametrize("window,want", [(0.9, "on"), (1.1, "off")], ids=["window-faster", "window-slower"])
def test_a_path_whose_cost_changes_frame_to_frame_is_timed_frame_against_the_frames_beside_it(slope, window, want):
    """Each frame 0.5 ms dearer (or cheaper) than the one before (a fly-over into or out of a dense part), a window
    frame 10% faster (or slower) than a plain frame of the same view. A trial that timed its window frames first
    and plain frames after measured the path: with frames getting dearer it took a window 10% slower up
    (1.8 ms against 3 ms), with frames getting cheaper it declined one 10% faster. Beside each other, the drift
    cancels, and the ratio is the window's."""

    def plain(i):
        return 1.0 + slope * (i if slope > 0 else i - 20)

    d = Driver({"plain": plain, "build": lambda i: window * plain(i), "hit": lambda i: window * plain(i)})
    kinds = d.run(len(TRIAL) + 6)
    assert d.choice.state() == want and d.choice.window_ratio() == pytest.approx(window)
    windows = len(kinds) - kinds.count("plain")  # the trial's, then every frame or none
    assert windows == TRIAL_WINDOW_FRAMES + (6 if want == "on" else 0)


def test_decisions_wait_for_timings_still_in_flight():
    """A plain frame's time can be read only after the next frame is launched (a stream): the trial's frames go on
    alternating, the decision waits for every one of their times, and frames meanwhile are plain."""
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    trial = [d.frame(done=False) for _ in TRIAL]
    assert [k for k, _ in trial] == TRIAL
    more = [d.frame(done=False) for _ in range(3)]
    assert [k for k, _ in more] == ["plain"] * 3 and d.choice.state() == "measuring"
    for kind, t in trial + more:
        t.done = kind == "plain"
    assert d.frame()[0] == "plain" and d.choice.state() == "measuring"  # the window frames' times are missing
    for _, t in trial:
        t.done = True
    assert d.frame()[0] == "build" and d.choice.state() == "on"


def test_a_window_frame_goes_only_beside_steady_plain_frames():
    """Frames that capture a graph or run before their capture (where graphs replay) are not what plain frames
    cost: no window frame follows one, and none is timed against one. Counted, these 50 ms frames would have made
    the window (1.5 ms a frame against 0.5 ms replayed) look faster."""
    d = Driver({"build": 5.0, "hit": 1.0, "plain": 50.0})
    assert d.run(3, steady=False) == ["plain"] * 3  # eager and capturing frames
    d.costs["plain"] = 0.5  # replayed frames
    assert d.run(2) == ["plain", "build"]
    d.costs["plain"] = 50.0
    assert d.run(1, steady=False) == ["plain"]  # captured again after the window frame
    d.costs["plain"] = 0.5
    assert d.run(len(TRIAL) - 2) == ["plain", "hit"] * (TRIAL_WINDOW_FRAMES - 1) + ["plain"]
    assert d.run(1) == ["plain"]
    assert d.choice.state() == "off" and d.choice.plain_ms() == 0.5
    assert d.choice.ratios["build"] == [10.0]  # 5 ms against the 0.5 ms frames before it and after the capture


def test_a_window_in_use_is_timed_again_when_its_own_frames_measure_slower():
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0})
    assert d.choice.state() == "on"
    d.costs.update(build=9.0, hit=2.5)  # the view changed: windows save nothing now
    kinds = d.run(150)
    assert trial_starts(kinds), "a trial timed the window against plain frames again"
    assert d.choice.state() == "off" and d.choice.decisions == 2 and kinds[-10:] == ["plain"] * 10


def test_windows_that_the_camera_leaves_early_count_as_short():
    """F is the mean length of the windows completed while in use: windows rebuilt every 2nd frame cost
    (2.5 + 0.5) / 2 = 1.5 times a plain frame, where the trial's F = K promised 0.75."""
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0})
    assert d.choice.state() == "on"
    d.window_len = 2
    kinds = d.run(12)
    # the window of the decision served 2 frames, the next one is built: F = 2, so the frame after goes plain
    assert kinds == ["hit", "build"] + ["plain"] * 10
    assert d.choice.state() == "off"
    assert d.choice.window_ratio() == pytest.approx(1.5) and d.choice.window_ms() == pytest.approx(3.0)


def test_a_trial_window_that_serves_no_frame_costs_a_build_each():
    d = Driver({"build": 3.0, "hit": 1.0, "plain": 2.0})
    d.window_len = 1  # every window frame builds
    kinds = d.run(len(TRIAL) + 1)
    assert kinds == ["plain", "build"] * TRIAL_WINDOW_FRAMES + ["plain", "plain"]
    assert d.choice.window_ratio() == 1.5 and d.choice.window_ms() == 3.0 and d.choice.state() == "off"


def test_the_choice_is_timed_again_after_recheck_frames_each_way():
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0})
    assert d.choice.state() == "off"
    d.costs.update(build=3.0, hit=1.0)  # the view changed: windows pay now
    kinds = d.run(RECHECK_FRAMES + len(TRIAL) + 4)
    (start,) = trial_starts(kinds)
    # RECHECK_FRAMES frames after the one that decided (the last of `decided`), the next trial begins
    assert kinds[:start] == ["plain"] * start and start == RECHECK_FRAMES
    assert kinds[start + len(TRIAL) :] == ["build", "hit", "hit", "hit"]
    assert d.choice.state() == "on" and d.choice.decisions == 2
    # and from "on" as well, after as many frames: the trial's first window frame builds a fresh window (the one in
    # use was built before the trial: its build would go untimed)
    since = len(kinds) - (start + len(TRIAL))  # frames from the one that decided to the end of the run
    d.costs["plain"] = 0.5
    kinds = d.run(RECHECK_FRAMES + len(TRIAL) + 3)
    (start,) = trial_starts(kinds)
    assert "plain" not in kinds[:start] and start == RECHECK_FRAMES + 1 - since
    assert kinds[-3:] == ["plain"] * 3 and d.choice.state() == "off" and d.choice.decisions == 3


def test_a_slower_camera_rechecks_once_the_last_trial_is_paid_for_and_a_single_jump_does_not():
    """A trial whose window lost cost its window frames' extra time: (5 - 2) + 3 (2.5 - 2) = 4.5 ms. The camera
    slows right after: the next trial waits until that is TRIAL_BUDGET of the time rendered since the last began
    (well before RECHECK_FRAMES), and then goes at once."""
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0}, step=0.05)
    assert d.choice.state() == "off" and d.choice.trial_cost_ms == pytest.approx(4.5)
    d.x += 4.0  # one jump (a path that starts over): the median speed over SPEED_FRAMES frames ignores it
    d.run(3)
    d.step = 0.01  # five times slower
    d.run(200)
    kinds = d.run(100)
    start = len(TRIAL) + 1 + 203 + trial_starts(kinds)[0]
    assert TRIAL_BUDGET * sum(d.ms[:start]) >= 4.5 > TRIAL_BUDGET * sum(d.ms[: start - 1])
    assert start < RECHECK_FRAMES
    assert d.choice.decisions == 2 and d.choice.state() == "off"  # and declined again: it is still slower


def test_a_faster_camera_rechecks_a_window_in_use_but_not_one_declined():
    """A faster camera makes windows that cover more and serve fewer frames: it cannot turn a lost window into a
    win, so from "off" it is no reason to pay for a trial; from "on" the plain frames are timed again."""
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0}, step=0.01)
    d.run(250)  # the trial paid for
    assert d.choice.state() == "off" and d.choice.decisions == 1
    d.step = 0.05
    assert d.run(3 * SPEED_FRAMES) == ["plain"] * (3 * SPEED_FRAMES) and d.choice.decisions == 1
    on = decided({"build": 5.0, "hit": 1.0, "plain": 2.0}, step=0.01)
    on.run(250)
    assert on.choice.state() == "on" and on.choice.decisions == 1
    on.step = 0.05
    kinds = on.run(SPEED_FRAMES + len(TRIAL))
    assert trial_starts(kinds) and on.choice.decisions == 2


def test_each_recheck_that_declines_again_waits_twice_as_long_and_a_win_resets_the_wait():
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0})
    assert d.choice.state() == "off" and d.choice.recheck_after == RECHECK_FRAMES
    kinds = d.run(RECHECK_FRAMES * (1 + 2 + 4 + 8 + 8) + 80)  # five re-checks from "off", each declined again
    starts = trial_starts(kinds)
    assert len(starts) == 5 and kinds.count("build") == 5 and kinds.count("hit") == 5 * (TRIAL_WINDOW_FRAMES - 1)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    trial = len(TRIAL) + 1  # a re-check's own frames, and the frame that decides it, before its wait
    assert [g - trial for g in gaps] == [2 * RECHECK_FRAMES, 4 * RECHECK_FRAMES, RECHECK_MAX, RECHECK_MAX]
    d.costs.update(build=3.0, hit=1.0)  # the view changed: the next re-check takes the window up
    d.run(RECHECK_MAX + len(TRIAL) + 2)
    assert d.choice.state() == "on" and d.choice.recheck_after == RECHECK_FRAMES


def test_a_declined_window_on_a_looping_path_costs_its_trials_at_most_the_budget():
    """A 20-frame path replayed in a loop, as the bench replays its paths: 16 frames fast, 3 five times slower (it
    eases in), then back to its start. The camera slows on every pass, and the trial that the slowdown starts ends
    in the fast part, whose speed it keeps as the decision's: re-checked at every slowdown, a window whose frames
    cost 3x (build) and 1.4x (hit) a plain one cost a trial per pass (12% of the time). Re-checks go on (now and
    then), each once the one before is paid for: in all, their window frames' extra time is at most TRIAL_BUDGET
    of the time rendered, and the last trial (not yet paid for)."""
    loop = np.cumsum([0.0] + [0.05] * 16 + [0.01] * 3)
    d = Driver({"build": 3.0, "hit": 1.4, "plain": 1.0})
    d.path = lambda i: loop[i % len(loop)]
    kinds = d.run(3000)
    extra = 2.0 * kinds.count("build") + 0.4 * kinds.count("hit")
    one_trial = 2.0 + 0.4 * (TRIAL_WINDOW_FRAMES - 1)
    assert d.choice.state() == "off" and kinds.count("build") == d.choice.trials >= 3
    assert extra <= TRIAL_BUDGET * sum(d.ms) + one_trial


def test_a_new_key_starts_over():
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0})
    assert d.choice.state() == "on" and d.choice.plain_ms() == 2.0
    assert not d.choice.wants_window(("another size",), pose(d.x), 1.0, K)  # a trial, from nothing: plain first
    assert d.choice.state() == "measuring" and d.choice.decisions == 0 and d.choice.plain_ms() is None
    assert d.choice.rebuild


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
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0})
    cache.choice = d.choice
    cache.stats.frames, cache.last_pose = 9, pose(0)
    cache.reset()
    assert cache.choice is d.choice and cache.choice.state() == "off" and cache.choice.decisions == 1
    assert cache.stats.frames == 0 and cache.last_pose is None and cache.window is None


def test_a_window_in_use_within_the_margin_of_plain_frames_is_kept_and_not_timed_again():
    """Windows of 4 frames (the camera leaves each early): the trial's ratios give (2.54 + 3 x 0.5) / 4 = 1.01 at
    that F, and their own frames cost (5.08 + 3) / 4 = 2.02 ms against the trial's 2 ms plain frames, both within
    MARGIN of plain: the window stays in use, neither dropped nor timed again (for fewer than RECHECK_FRAMES)."""
    d = Driver({"build": 5.08, "hit": 1.0, "plain": 2.0})
    d.window_len = 4
    d.run(len(TRIAL) + 1)
    c = d.choice
    assert c.state() == "on" and c.decisions == 1
    kinds = d.run(RECHECK_FRAMES - 50)
    assert 1.0 < c.window_ratio() < 1.0 + MARGIN and c.window_ratio() == pytest.approx(1.01)
    assert "plain" not in kinds and c.state() == "on" and c.decisions == 1, kinds.index("plain")


def test_a_dropped_window_waits_recheck_frames_from_the_drop():
    """Windows in use for a while, then the camera leaves them every second frame: their F puts them over plain
    frames and they are dropped at once. The drop is a decision: the next trial is due RECHECK_FRAMES after it
    (not sooner because the frames since the trial were many, nor because the dropped windows' own frames measured
    slow: they are no longer in use)."""
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0})
    d.run(200)
    assert d.choice.state() == "on" and d.choice.decisions == 1
    d.window_len = 2
    kinds = d.run(20)
    drop = kinds.index("plain")
    assert d.choice.window_ratio() > 1.0 + MARGIN and set(kinds[:drop]) == {"build", "hit"}
    assert d.choice.state() == "off"
    d.window_len = K  # the trial's windows serve K frames again
    kinds += d.run(RECHECK_FRAMES + len(TRIAL))
    (start,) = trial_starts(kinds)
    assert RECHECK_FRAMES <= start - drop <= RECHECK_FRAMES + 1, (drop, start)


def test_a_camera_at_rest_counts_as_moving_at_the_speed_floor():
    """A still camera (speed 0) decides at SPEED_FLOOR: frames at rest after it, or moving less than the floor, are
    no change of speed (no trial, no division by a zero speed); moving SPEED_CHANGE times the floor is one."""
    for costs in ({"build": 5.0, "hit": 2.5, "plain": 2.0}, {"build": 5.0, "hit": 1.0, "plain": 2.0}):
        d = decided(costs, step=0.0)
        d.run(250)  # the trial paid for
        state = d.choice.state()
        d.step = 0.1 * SPEED_FLOOR
        d.run(50)
        assert d.choice.decisions == 1 and d.choice.state() == state, costs
        if state == "on":  # a window in use is timed again when the camera speeds up
            d.step = 4 * SPEED_CHANGE * SPEED_FLOOR
            d.run(SPEED_FRAMES + 2 * len(TRIAL))
            assert d.choice.decisions == 2


def test_a_trial_prices_plain_frames_at_their_median():
    """One plain frame of the trial hitches (20 ms where the others take 2): what a plain frame costs, as the choice
    reports it and charges each declined frame, is the median of the trial's plain frames, not their mean."""
    d = Driver({"build": 5.0, "hit": 2.5, "plain": lambda i: 20.0 if i == 2 else 2.0})
    d.run(len(TRIAL) + 1)
    assert d.choice.state() == "off" and d.choice.plain_ms() == 2.0
    rendered = d.choice.rendered_ms
    d.run(10)
    assert d.choice.rendered_ms == pytest.approx(rendered + 10 * 2.0)


def test_one_jump_of_the_camera_is_no_change_of_speed_for_a_window_in_use():
    """The camera's speed is the median of the last SPEED_FRAMES steps: a path that starts over (one step of 4
    scene radii among steps of 0.01) does not make a window in use (re-checked when the camera speeds up) pay for
    a trial."""
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0}, step=0.01)
    d.run(250)  # the trial paid for
    assert d.choice.state() == "on" and d.choice.decisions == 1
    d.x += 4.0
    kinds = d.run(3 * SPEED_FRAMES)
    assert "plain" not in kinds and d.choice.decisions == 1


@pytest.mark.parametrize(
    "slower,rechecked", [(0.8 * SPEED_CHANGE, False), (1.2 * SPEED_CHANGE, True)], ids=["less", "more"]
)
def test_a_declined_window_is_timed_again_when_the_camera_slows_by_speed_change(slower, rechecked):
    """From "off", a camera that slows by more than SPEED_CHANGE times re-checks (once the last trial is paid
    for, before RECHECK_FRAMES); one that slows by less does not."""
    d = decided({"build": 5.0, "hit": 2.5, "plain": 2.0}, step=0.06)
    d.run(250)  # the trial paid for
    assert d.choice.state() == "off" and d.choice.decisions == 1
    d.step = 0.06 / slower
    kinds = d.run(SPEED_FRAMES + len(TRIAL))
    assert bool(trial_starts(kinds)) == rechecked and d.choice.decisions == 1 + rechecked


def test_a_window_cut_short_by_a_trial_is_not_counted_as_one_the_camera_left():
    """F is the mean length of the windows completed while in use: a re-check from "on" interrupts the window in
    use (its trial builds a fresh one), which says nothing about how long the camera stays in a window. Windows
    that all serve K frames keep F = K through the re-check."""
    d = decided({"build": 5.0, "hit": 1.0, "plain": 2.0})
    kinds = d.run(RECHECK_FRAMES + len(TRIAL) + K + 2)
    (start,) = trial_starts(kinds)
    assert kinds[start - 1] == "hit" and kinds[start - K : start].count("build") == 1  # a window cut short
    assert d.choice.state() == "on" and d.choice.decisions == 2
    assert d.choice.window_ratio() == pytest.approx((2.5 + (K - 1) * 0.5) / K)


def test_windows_in_use_are_judged_by_their_own_frames_not_the_trials():
    """With trials paid for at once (TRIAL_BUDGET 1): windows taken up on a trial whose hits cost 1 ms, whose own
    hits then cost 1.9 ms ((5 + 7 x 1.9) / 8 = 2.29 ms a frame against 2 ms plain), are timed again as soon as
    their own build and a hit are read: the trial's cheaper window frames are not among them."""
    import renderer.window_choice as wc

    d = Driver({"build": 5.0, "hit": 1.0, "plain": 2.0})
    d.run(len(TRIAL))
    d.costs["hit"] = 1.9
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wc, "TRIAL_BUDGET", 1.0)
        kinds = d.run(12)
    assert trial_starts(kinds) == [2] and kinds[:2] == ["build", "hit"], kinds  # the frame that reads the hit
