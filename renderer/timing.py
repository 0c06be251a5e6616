"""Per-stage frame timing: CUDA events on the GPU (read later, never a blocking sync in the frame loop),
wall clock on the CPU."""

from __future__ import annotations

import contextlib
import time

import torch


class StageTimer:
    """Records the time of each named stage of one frame, plus "total". StageTimer(None) records nothing
    (for work that must not record events, such as a frame being captured as a CUDA graph).

    A stage opened with `joined=True` right after another closed begins at that one's end: a frame's stages run
    back to back, so its six stages take seven events rather than twelve (each costs the host a few us inside the
    frames that the host paces; BENCHMARKS.md, section 52)."""

    def __init__(self, device: torch.device | None, pool: EventPool | None = None):
        self.off = device is None
        self.cuda = device is not None and device.type == "cuda"
        self.device = device
        self._pool = pool if self.cuda else None
        self._events: list = []  # every event this timer recorded, given back to the pool when it goes
        self._marks: list[tuple[str, object, object]] = []
        self._start = None if self.off else self._now()
        self._end = None
        self._last = None  # the end of the stage just closed, while no other has opened

    def __del__(self) -> None:
        # nothing reads a timer's events once the timer has gone: the pool's next timers record them again
        if self._pool is not None:
            self._pool.give_back(self._events)

    def _now(self):
        if self.cuda:
            # torch.Event records on the current stream in C++; torch.cuda.Event.record looks the stream up in
            # Python, which cost about 30 us per event on the GPU machine, paid inside the frames it times
            ev = torch.Event(self.device, enable_timing=True) if self._pool is None else self._pool.take()
            ev.record()
            self._events.append(ev)
            return ev
        return time.perf_counter()

    def stage(self, name: str, *, joined: bool = False) -> contextlib.AbstractContextManager:
        """Time the enclosed work as stage `name`; `joined`: begin where the stage just closed ended, if one did.
        A plain object rather than a generator's context manager, which cost the host a few us more a stage."""
        return contextlib.nullcontext() if self.off else _Stage(self, name, joined)

    def stop(self) -> None:
        if not self.off:
            self._end = self._now()

    def ready(self) -> bool:
        """True when every recorded event has completed (always on the CPU)."""
        if not self.cuda or self._end is None:
            return self._end is not None
        return bool(self._end.query())  # type: ignore[union-attr]

    def wait(self) -> None:
        """Block until the GPU has reached the end of the timed work (nothing to wait for on the CPU)."""
        if self.cuda and self._end is not None:
            self._end.synchronize()  # type: ignore[union-attr]

    def total_ms(self) -> float | None:
        """ms from the timer's creation to `stop()` once the device has finished it; None before (never waits)."""
        if self.off or not self.ready():
            return None
        if self.cuda:
            return float(self._start.elapsed_time(self._end))  # type: ignore[union-attr]
        return (self._end - self._start) * 1e3  # type: ignore[operator]

    def since_start(self, earlier: StageTimer) -> float:
        """ms from the start of `earlier` to the end of this one (the GPU's clock; the wall clock on a CPU): where
        this frame ended in a stream of frames that `earlier` began."""
        assert self._end is not None and earlier._start is not None
        if self.cuda:
            self.wait()
            return float(earlier._start.elapsed_time(self._end))  # type: ignore[union-attr]
        return (self._end - earlier._start) * 1e3  # type: ignore[operator]

    def elapsed_ms(self, *, wait: bool = False) -> dict[str, float] | None:
        """{stage: ms, ..., "total": ms}; None if the GPU has not finished and wait is False."""
        if self._end is None:
            return None
        if self.cuda:
            if not wait and not self.ready():
                return None
            self._end.synchronize()  # type: ignore[union-attr]
            span = lambda a, b: float(a.elapsed_time(b))  # noqa: E731
        else:
            span = lambda a, b: (b - a) * 1e3  # noqa: E731
        out = {name: span(a, b) for name, a, b in self._marks}
        out["total"] = span(self._start, self._end)
        return out


class EventPool:
    """Timing events that a renderer's timers take and give back when they go. A new event (and its CUDA event,
    made at its first record) cost the host 5.3 us with its record, a kept one's record 1.4: nine a frame, inside
    the frames that the host paces (BENCHMARKS.md, section 54). `make`: how a new one is made."""

    def __init__(self, device: torch.device, make=None):
        self._make = make or (lambda: torch.Event(device, enable_timing=True))
        self._free: list = []

    def take(self):
        return self._free.pop() if self._free else self._make()

    def give_back(self, events: list) -> None:
        self._free.extend(events)

    def __len__(self) -> int:
        return len(self._free)


class _Stage:
    """One `StageTimer.stage`: marked at its start (or at the end of the stage just closed, `joined`) and its end."""

    __slots__ = ("timer", "name", "joined", "begin")

    def __init__(self, timer: StageTimer, name: str, joined: bool):
        self.timer, self.name, self.joined = timer, name, joined

    def __enter__(self) -> None:
        t = self.timer
        self.begin = t._last if self.joined and t._last is not None else t._now()
        t._last = None

    def __exit__(self, kind, value, traceback) -> bool:
        if kind is None:  # a stage that raised is not timed
            t = self.timer
            t._last = end = t._now()
            t._marks.append((self.name, self.begin, end))
        return False


def handover_ms(timers: list[StageTimer]) -> list[float]:
    """Per frame of a stream, in order: ms from the moment the frames before it were all done to the moment it
    was too (the first frame: from its own start), on the GPU's clock (the wall clock on a CPU). Frames are
    handed over in order, so a frame is done when it and every frame before it have ended. A frame binned again
    after the next one was launched ends after that one (`Renderer._finish`): the next frame then adds nothing,
    and the spans still sum to the whole stream, idle gaps included."""
    out, done = [], 0.0  # done: ms from the first frame's start to the latest end so far
    for t in timers:
        end = max(done, t.since_start(timers[0]))
        out.append(end - done)
        done = end
    return out
