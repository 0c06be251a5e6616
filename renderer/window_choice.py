"""Whether a temporal window renders faster than plain frames: measured on the frames themselves, never assumed.

A window (renderer/temporal.py) saves the projection and ordering of the Gaussians its cameras cannot see, and
costs a cull pass at each build, its bookkeeping on every frame, and, where plain frames replay as CUDA graphs,
the graphs: its frames run stage by stage. Which side wins depends on the scene, the view and the machine
(BENCHMARKS.md, sections 12 and 14: 0.93x on one fly-over, 1.06x on another, 0.45-0.60x on objects whose
frames replay as graphs). So the renderer times both, with the CUDA events each frame records anyway
(`StageTimer`; the wall clock on a CPU), and keeps the faster:

1. window trial: one window is built and serves TRIAL_HITS frames; each frame's time is kept, by kind (the
   frame that built it, the frames it served);
2. plain trial: plain frames until PLAIN_SAMPLES of them are timed in their steady form (where they replay
   as graphs, only replayed ones count: a frame that captures a graph or runs before its capture is not
   what plain frames cost). After a re-check from "off", the plain frames just rendered are those;
3. decision: the window's cost per frame is (build + (F - 1) hit) / F (medians of the times of each kind),
   with F the frames a window serves: K until windows are in use, then the mean length of the last windows
   completed (a predicted window that the camera leaves early serves fewer). The window is taken up only if
   that is under the plain frames' median by MARGIN; once in use, it is dropped as soon as it measures above
   them by MARGIN (its own frames keep being timed).
4. re-check: the side not in use is timed again (2 or 1 above) and the decision is taken again
   - after RECHECK_FRAMES frames; each re-check from "off" that declines the window again doubles that wait, up
     to RECHECK_MAX (a trial's three window frames cost 1.5-3x a plain one each: on a core where the window
     keeps losing, re-checking every 300 frames alone cost 1-3% of the frames, BENCHMARKS.md section 26), and a
     window taken up sets it back;
   - when the camera's speed changes by SPEED_CHANGE times: either way while windows are in use (a window pays
     more the slower the camera moves), and only when it slows while they are not (a faster camera makes
     windows that cover more and serve fewer frames: a window that lost cannot win from that).
   A change of image size, settings or path knowledge starts over at 1. A new path on the same renderer does
   not (`TemporalCache.reset`): what was measured is this scene's cost on this machine, and the re-checks keep
   it current.

The timings arrive late (a frame's events complete after it is handed over), so frames are counted when they
are launched and their times when they are read; a decision waits for the times it needs. Every frame is
exact either way: a known-camera window renders the same image bit for bit, and plain frames are the default.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Protocol

import numpy as np

TRIAL_HITS = 2  # frames served by the trial window after the one that built it
PLAIN_SAMPLES = 3  # steady plain frames behind a decision
MARGIN = 0.02  # a window must be this much faster to be taken up, or this much slower to be dropped
RECHECK_FRAMES = 300
RECHECK_MAX = 8 * RECHECK_FRAMES  # the longest wait between re-checks from "off" (40 s at 60 frames/s)
SPEED_CHANGE = 3.0
SPEED_FLOOR = 1e-3  # radians (or scene radii) per frame below which the camera counts as at rest
SPEED_FRAMES = 5  # the camera's speed is the median over this many frames (one jump does not count)
KEEP = 16  # timings kept per kind


class Timed(Protocol):
    """What `record` needs of a frame's timer (renderer.timing.StageTimer): its total once it has completed."""

    def total_ms(self) -> float | None: ...


class WindowChoice:
    """The measured choice for one renderer (see the module docstring). Call `wants_window` once per rendered
    frame that asks for a window, then `record` with that frame's timer and what it was ("build", "hit" or
    "plain"; `steady` False for a plain frame not in its steady form)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.phase = "window"  # "window" | "plain" (trials), "on" | "off" (decided)
        self.times: dict[str, deque[float]] = {k: deque(maxlen=KEEP) for k in ("build", "hit", "plain")}
        self.pending: deque[tuple[str, Timed]] = deque()
        self.trial_frames = 0  # frames launched in the current trial phase
        self.since_check = 0  # frames since the last decision
        self.lengths: deque[int] = deque(maxlen=8)  # frames served by each window completed while in use
        self.current = 0  # frames served so far by the window in use
        self.k = 1  # the settings' window length, F's value until windows are in use
        self.speeds: deque[float] = deque(maxlen=SPEED_FRAMES)
        self.decided_speed: float | None = None
        self.last_pose: np.ndarray | None = None
        self.decisions = 0
        self.recheck_after = RECHECK_FRAMES  # frames from a decision to the next re-check (item 4)
        self.from_off = False  # whether the trial under way is a re-check from "off"

    # ------------------------------------------------------------------ per frame

    def wants_window(self, key: tuple, pose: np.ndarray, scene_radius: float, k: int) -> bool:
        """Whether the next frame should use the window. `key`: what the costs depend on besides the pose
        (image size, settings, whether the cameras are known); `k`: the settings' window length."""
        if key != self.key:
            self.__init__()
            self.key, self.k = key, k
        self._track_speed(pose, scene_radius)
        self._poll()
        self.since_check += 1
        if self.phase in ("on", "off") and (self.since_check > self.recheck_after or self._speed_changed()):
            self.from_off = self.phase == "off"
            self._start_trial("plain" if self.phase == "on" else "window")
        if self.phase == "window" and self.trial_frames >= 1 + TRIAL_HITS:
            # the trial window served its frames: time plain ones, unless those of the frames since the last
            # decision are at hand (a re-check from "off")
            self.phase, self.trial_frames = "plain", 0
        if self.phase == "plain" and self._ready():
            self._decide()
        self.trial_frames += 1
        return self.phase in ("window", "on")

    def record(self, kind: str, timer: Timed, steady: bool = True) -> None:
        """The frame just launched: "build" (it built a window), "hit" (a window served it) or "plain"."""
        assert kind in self.times, kind
        if kind == "plain" and not steady:
            return
        self.pending.append((kind, timer))
        if self.phase == "on" and kind == "build":
            if self.current:
                self.lengths.append(self.current)
            self.current = 1
        elif self.phase == "on" and kind == "hit":
            self.current += 1

    # ------------------------------------------------------------------ estimates

    def plain_ms(self) -> float | None:
        p = self.times["plain"]
        return statistics.median(p) if len(p) >= PLAIN_SAMPLES else None

    def window_ms(self) -> float | None:
        """A window's cost per frame: (build + (F - 1) hit) / F, F the frames a window serves."""
        builds, hits = self.times["build"], self.times["hit"]
        if not builds:
            return None
        f = statistics.mean(self.lengths) if self.lengths else self.k
        b = statistics.median(builds)
        h = statistics.median(hits) if hits else b  # a window that never served a frame costs a build each
        return (b + (f - 1.0) * h) / max(f, 1.0)

    def state(self) -> str:
        """For the overlay and the bench: "measuring", "on" or "off"."""
        return "measuring" if self.phase in ("window", "plain") else self.phase

    # ------------------------------------------------------------------ internals

    def _start_trial(self, phase: str) -> None:
        self.phase, self.trial_frames = phase, 0
        kinds = ("plain",) if phase == "plain" else ("build", "hit")
        for kind in kinds:  # the side timed again starts afresh; the other keeps its recent times
            self.times[kind].clear()
        self.pending = deque((kind, t) for kind, t in self.pending if kind not in kinds)

    def _ready(self) -> bool:
        """Both sides timed: the plain frames' times and every window frame's (a plain frame in flight may
        still be pending: a stream reads a frame's times only after the next one is launched)."""
        waiting = any(kind != "plain" for kind, _ in self.pending)
        return self.plain_ms() is not None and self.window_ms() is not None and not waiting

    def _decide(self) -> None:
        w, p = self.window_ms(), self.plain_ms()
        assert w is not None and p is not None
        self.phase = "on" if w < p * (1.0 - MARGIN) else "off"
        if self.phase == "on":
            self.recheck_after = RECHECK_FRAMES
        elif self.from_off:  # declined again: wait twice as long before the next trial
            self.recheck_after = min(2 * self.recheck_after, RECHECK_MAX)
        self.from_off = False
        self.current = 0
        self.since_check = 0
        self.decided_speed = self._speed()
        self.decisions += 1

    def _poll(self) -> None:
        """Read the times of completed frames, in launch order; drop a window in use that measures slower."""
        while self.pending:
            kind, timer = self.pending[0]
            ms = timer.total_ms()
            if ms is None:
                break
            self.pending.popleft()
            self.times[kind].append(ms)
        if self.phase == "on":
            w, p = self.window_ms(), self.plain_ms()
            if w is not None and p is not None and w > p * (1.0 + MARGIN):
                self.phase, self.since_check = "off", 0

    def _track_speed(self, pose: np.ndarray, scene_radius: float) -> None:
        if self.last_pose is not None:
            shift = float(np.linalg.norm(pose[:3, 3] - self.last_pose[:3, 3])) / max(scene_radius, 1e-12)
            cos = (np.trace(self.last_pose[:3, :3].T @ pose[:3, :3]) - 1.0) / 2.0
            self.speeds.append(shift + math.acos(min(1.0, max(-1.0, cos))))
        self.last_pose = pose.copy()

    def _speed(self) -> float:
        return max(statistics.median(self.speeds), SPEED_FLOOR) if self.speeds else SPEED_FLOOR

    def _speed_changed(self) -> bool:
        """The camera's speed moved SPEED_CHANGE times from the decision's: either way while windows are in use,
        only down while they are not (item 4)."""
        if self.decided_speed is None or len(self.speeds) < SPEED_FRAMES:
            return False
        ratio = self._speed() / self.decided_speed
        return ratio < 1.0 / SPEED_CHANGE or (ratio > SPEED_CHANGE and self.phase == "on")
