"""Whether a temporal window renders faster than plain frames: measured on the frames themselves, never assumed.

A window (renderer/temporal.py) saves the projection and ordering of the Gaussians its cameras cannot see, and
costs a cull pass at each build, its bookkeeping on every frame, and, where plain frames replay as CUDA graphs,
the graphs: its frames run stage by stage. Which side wins depends on the scene, the view and the machine
(BENCHMARKS.md, sections 12 and 14: 0.93x on one fly-over, 1.06x on another, 0.45-0.60x on objects whose
frames replay as graphs). So the renderer times both, with the CUDA events each frame records anyway
(`StageTimer`; the wall clock on a CPU), and keeps the faster:

1. trial: window and plain frames alternate, plain first and last (plain, build, plain, hit, plain, ...), until
   TRIAL_WINDOW_FRAMES window frames are timed. A window frame goes only right after a plain frame in its steady
   form (where plain frames replay as graphs, a frame that captures a graph or runs before its capture is not
   what plain frames cost), and its first one builds a fresh window, which the plain frames between keep
   (renderer/temporal.py). Each window frame is timed against the mean of the steady plain frames beside it:
   on a path whose cost changes along it (a fly-over's density went from 4.8M visible Gaussians to none in 20
   frames), frames far apart differ more than a window and a plain frame do, and a window timed first against
   plain frames timed after it measured the path, not the window. Beside each other, a linear drift cancels;
2. decision: the window's cost per frame, as a ratio to plain, is (build + (F - 1) hit) / F, medians of the
   ratios of each kind, with F the frames a window serves: K until windows are in use, then the mean length of
   the last windows completed (a predicted window that the camera leaves early serves fewer). The window is
   taken up only if that is under 1 by MARGIN; once in use, it is dropped as soon as the F its windows serve
   puts it over 1 by MARGIN;
3. re-check: a new trial, when one is due and the last one is paid for:
   - due after RECHECK_FRAMES frames; each re-check from "off" that declines the window again doubles that
     wait, up to RECHECK_MAX, and a window taken up sets it back;
   - due when the camera's speed changes by SPEED_CHANGE times: either way while windows are in use (a window
     pays more the slower the camera moves), and only when it slows while they are not (a faster camera makes
     windows that cover more and serve fewer frames: a window that lost cannot win from that);
   - due while windows are in use when their own frames (still timed) cost more than the trial's plain frames
     by MARGIN: the view may have changed, and the trial says whether windows still win there;
   - paid for: a trial's cost (what its frames took beyond the side decided on: a declined window's frames
     over the plain frames beside them; the plain frames of a trial that took windows up over what windows
     would have cost) is at most TRIAL_BUDGET of the time rendered since it began. A trial's window frames
     cost 1.5-3x a plain frame each where windows lose, and a path replayed in a loop changes speed on every
     pass: re-checked at each change, a declined window cost far more than its trials could ever win back (the
     6M fly-over ran 0.96x the default with the window declined, its loss in the trial frames).
   A change of image size, settings or path knowledge starts over. A new path on the same renderer does not
   (`TemporalCache.reset`): what was measured is this scene's cost on this machine, and the re-checks keep it
   current.

The timings arrive late (a frame's events complete after it is handed over), so frames are counted when they
are launched and their times when they are read; a decision waits for the times it needs, and the frames
meanwhile are plain. Every frame is exact either way: a known-camera window renders the same image bit for bit,
and plain frames are the default.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

TRIAL_WINDOW_FRAMES = 4  # window frames a trial times: a build and 3 hits at K = 8 (median of 3 ratios)
MARGIN = 0.02  # a window must be this much faster to be taken up, or this much slower to be dropped
TRIAL_BUDGET = 0.01  # a trial's cost, as a fraction of the time rendered from its start to the next one
RECHECK_FRAMES = 300
RECHECK_MAX = 8 * RECHECK_FRAMES  # the longest wait between re-checks from "off" (40 s at 60 frames/s)
SPEED_CHANGE = 3.0
SPEED_FLOOR = 1e-3  # radians (or scene radii) per frame below which the camera counts as at rest
SPEED_FRAMES = 5  # the camera's speed is the median over this many frames (one jump does not count)
KEEP = 16  # times of window frames kept while windows are in use


class Timed(Protocol):
    """What `record` needs of a frame's timer (renderer.timing.StageTimer): its total once it has completed."""

    def total_ms(self) -> float | None: ...


@dataclass
class _Frame:
    kind: str  # "build", "hit", "plain", or "unsteady" (a plain frame not in its steady form: never read)
    timer: Timed
    ms: float | None = None  # its total, once read


class WindowChoice:
    """The measured choice for one renderer (see the module docstring). Call `wants_window` once per rendered
    frame that asks for a window, then `record` with that frame's timer and what it was ("build", "hit" or
    "plain"; `steady` False for a plain frame not in its steady form). `rebuild` tells the window's owner that
    the next window frame must build a fresh window (a trial's first: its build is timed too)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.phase = "trial"  # "trial" (measuring), "on" | "off" (decided)
        self.trial_from = "start"  # the phase a trial started from: "start", "on" or "off"
        self.trial: list[_Frame] = []  # the trial's frames, in launch order
        self.ratios: dict[str, list[float]] = {"build": [], "hit": []}  # the last trial's, window frame / plain
        self.trial_plain_ms: float | None = None  # the median of the last trial's plain frames
        self.trial_cost_ms = 0.0  # what the last trial cost beyond the side decided on (item 3)
        self.rendered_ms = 0.0  # the time of the frames read since the last trial began
        self.rebuild = True  # the next window frame builds a fresh window (a trial's first, and the very first)
        self.times: dict[str, deque[float]] = {k: deque(maxlen=KEEP) for k in ("build", "hit")}  # since deciding
        self.pending: deque[_Frame] = deque()  # frames launched whose times are not read yet
        self.since_check = 0  # frames since the last decision
        self.lengths: deque[int] = deque(maxlen=8)  # frames served by each window completed while in use
        self.current = 0  # frames served so far by the window in use
        self.k = 1  # the settings' window length, F's value until windows are in use
        self.speeds: deque[float] = deque(maxlen=SPEED_FRAMES)
        self.decided_speed: float | None = None
        self.last_pose: list[float] | None = None  # the last pose's top three rows, row by row
        self.decisions = 0
        self.trials = 0  # trials started, the first one included
        self.recheck_after = RECHECK_FRAMES  # frames from a decision to the next re-check (item 3)

    # ------------------------------------------------------------------ per frame

    def wants_window(self, key: tuple, pose: np.ndarray, scene_radius: float, k: int) -> bool:
        """Whether the next frame should use the window. `key`: what the costs depend on besides the pose
        (image size, settings, whether the cameras are known); `k`: the settings' window length."""
        if key != self.key:
            self.__init__()
            self.key, self.k, self.trials = key, k, 1
        self._track_speed(pose, scene_radius)
        self._poll()
        self.since_check += 1
        if self.phase == "trial":
            if self._trial_launched() and self._trial_read():
                self._decide()
        elif self._recheck_due():
            self._start_trial()
        if self.phase == "trial":
            return self._window_next()
        return self.phase == "on"

    def record(self, kind: str, timer: Timed, steady: bool = True) -> None:
        """The frame just launched: "build" (it built a window), "hit" (a window served it) or "plain"."""
        assert kind in ("build", "hit", "plain"), kind
        if kind == "build":
            self.rebuild = False
        if kind == "plain" and self.phase == "off" and self.trial_plain_ms is not None:
            # declined: a plain frame's time is not read, and counts towards what was rendered at the trial's
            # median (reading each frame's CUDA events was a third of the bookkeeping that a declined window
            # cost a frame; BENCHMARKS.md, section 33)
            self.rendered_ms += self.trial_plain_ms
            return
        frame = _Frame(kind if kind != "plain" or steady else "unsteady", timer)
        if frame.kind != "unsteady":
            self.pending.append(frame)
        if self.phase == "trial" and not self._trial_launched():
            self.trial.append(frame)
        if self.phase == "on" and kind == "build":
            if self.current:
                self.lengths.append(self.current)
            self.current = 1
        elif self.phase == "on" and kind == "hit":
            self.current += 1

    # ------------------------------------------------------------------ estimates

    def window_ratio(self) -> float | None:
        """A window's cost per frame over a plain frame's: (build + (F - 1) hit) / F, F the frames a window
        serves; None before a trial timed a build."""
        builds, hits = self.ratios["build"], self.ratios["hit"]
        if not builds:
            return None
        f = statistics.mean(self.lengths) if self.lengths else self.k
        b = statistics.median(builds)
        h = statistics.median(hits) if hits else b  # a window that never served a frame costs a build each
        return (b + (f - 1.0) * h) / max(f, 1.0)

    def plain_ms(self) -> float | None:
        """What a plain frame cost in the last trial (for the overlay and the bench)."""
        return self.trial_plain_ms

    def window_ms(self) -> float | None:
        """What a window's frame costs at the last trial's plain frames' (build amortised): the ratio the
        decision used, in ms, for the overlay and the bench."""
        r, p = self.window_ratio(), self.plain_ms()
        return r * p if r is not None and p is not None else None

    def state(self) -> str:
        """For the overlay and the bench: "measuring", "on" or "off"."""
        return "measuring" if self.phase == "trial" else self.phase

    # ------------------------------------------------------------------ trials

    def _start_trial(self) -> None:
        self.trial_from, self.phase, self.trial = self.phase, "trial", []
        self.rebuild = True  # the window in use (if any) was built before: its build would go untimed
        self.rendered_ms = 0.0
        self.trials += 1

    def _window_next(self) -> bool:
        """A trial's next frame: a window frame right after each steady plain frame until the trial has its
        window frames, plain frames otherwise (first, between and last)."""
        if self._trial_launched():
            return False
        return bool(self.trial) and self.trial[-1].kind == "plain" and self._window_frames() < TRIAL_WINDOW_FRAMES

    def _window_frames(self) -> int:
        return sum(f.kind in ("build", "hit") for f in self.trial)

    def _trial_launched(self) -> bool:
        """Every frame of the trial launched: its window frames, and a steady plain frame after the last one."""
        return self._window_frames() == TRIAL_WINDOW_FRAMES and self.trial[-1].kind == "plain"

    def _trial_read(self) -> bool:
        return all(f.ms is not None for f in self.trial if f.kind != "unsteady")

    def _beside(self) -> list[tuple[_Frame, float]]:
        """Each window frame of the trial with the mean of the steady plain frames before and after it."""
        out = []
        for i, f in enumerate(self.trial):
            if f.kind in ("build", "hit"):
                before = self.trial[i - 1]  # a window frame goes only right after a steady plain one
                after = next(g for g in self.trial[i + 1 :] if g.kind == "plain")
                out.append((f, 0.5 * (before.ms + after.ms)))
        return out

    def _decide(self) -> None:
        beside = self._beside()
        self.ratios = {kind: [f.ms / p for f, p in beside if f.kind == kind] for kind in ("build", "hit")}
        plain = [f.ms for f in self.trial if f.kind == "plain"]
        self.trial_plain_ms = statistics.median(plain)
        r = self.window_ratio()
        self.phase = "on" if r is not None and r < 1.0 - MARGIN else "off"
        if self.phase == "on":
            self.recheck_after = RECHECK_FRAMES
            self.trial_cost_ms = sum(plain) * (1.0 - r)  # its plain frames, where windows would have served
        else:
            if self.trial_from == "off":  # declined again: wait twice as long before the next trial
                self.recheck_after = min(2 * self.recheck_after, RECHECK_MAX)
            self.trial_cost_ms = max(0.0, sum(f.ms - p for f, p in beside))  # its window frames' extra
        for kind in self.times:  # the window frames timed from now on are those in use
            self.times[kind].clear()
        self.current = 0
        self.since_check = 0
        self.decided_speed = self._speed()
        self.decisions += 1

    def _recheck_due(self) -> bool:
        """Item 3: a trial is due, and the last one is paid for."""
        if self.trial_cost_ms > TRIAL_BUDGET * self.rendered_ms:
            return False
        if self.since_check > self.recheck_after or self._speed_changed():
            return True
        return self.phase == "on" and self._windows_slowed()

    def _windows_slowed(self) -> bool:
        """The window frames timed since the decision cost more than the trial's plain frames by MARGIN."""
        builds, hits = self.times["build"], self.times["hit"]
        f = statistics.mean(self.lengths) if self.lengths else self.k
        if not builds or (f > 1.0 and not hits) or self.trial_plain_ms is None:  # a build alone is not a window
            return False
        b = statistics.median(builds)
        h = statistics.median(hits) if hits else b
        return (b + (f - 1.0) * h) / max(f, 1.0) > self.trial_plain_ms * (1.0 + MARGIN)

    def _poll(self) -> None:
        """Read the times of completed frames, in launch order; drop windows in use whose F makes them slower."""
        while self.pending:
            frame = self.pending[0]
            ms = frame.timer.total_ms()
            if ms is None:
                break
            self.pending.popleft()
            frame.ms = ms
            self.rendered_ms += ms
            if frame.kind in self.times:
                self.times[frame.kind].append(ms)
        if self.phase == "on":
            r = self.window_ratio()
            if r is not None and r > 1.0 + MARGIN:
                self.phase, self.since_check = "off", 0

    # ------------------------------------------------------------------ camera speed

    def _track_speed(self, pose: np.ndarray, scene_radius: float) -> None:
        """The step from the last pose: its shift in scene radii plus its rotation angle. In Python floats on the
        pose's 12 numbers: numpy's norm, trace and product of 3 x 3 slices took 7 of the 12 us that a declined
        window's bookkeeping cost each frame, 2% of an object's frame in flight (BENCHMARKS.md, section 33)."""
        p = pose[:3].ravel().tolist()  # [R | t] row by row: p[4 i + j] = R[i][j], p[4 i + 3] = t[i]
        q = self.last_pose
        if q is not None:
            shift = math.sqrt((p[3] - q[3]) ** 2 + (p[7] - q[7]) ** 2 + (p[11] - q[11]) ** 2) / max(scene_radius, 1e-12)
            # trace(Rq^T Rp) = the sum of the products of the two rotations' entries
            trace = sum(p[i] * q[i] for i in (0, 1, 2, 4, 5, 6, 8, 9, 10))
            self.speeds.append(shift + math.acos(min(1.0, max(-1.0, (trace - 1.0) / 2.0))))
        self.last_pose = p

    def _speed(self) -> float:
        return max(statistics.median(self.speeds), SPEED_FLOOR) if self.speeds else SPEED_FLOOR

    def _speed_changed(self) -> bool:
        """The camera's speed moved SPEED_CHANGE times from the decision's: either way while windows are in use,
        only down while they are not (item 3)."""
        if self.decided_speed is None or len(self.speeds) < SPEED_FRAMES:
            return False
        ratio = self._speed() / self.decided_speed
        return ratio < 1.0 / SPEED_CHANGE or (ratio > SPEED_CHANGE and self.phase == "on")
