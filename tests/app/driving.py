"""Driving a viewer window from tests and the soak script: input events and frame pumping."""

from __future__ import annotations

import time


def send(window, *event) -> None:
    """Deliver an input event the way the window's event loop delivers the X server's (pyglet queues events
    dispatched from outside its loop)."""
    from pyglet.event import EventDispatcher

    EventDispatcher.dispatch_event(window, *event)


def pump(window, *, frames: int = 2, timeout: float = 120.0) -> int:
    """Draw window frames until no render is queued or running and the last one is on screen; returns the
    number of frames drawn."""
    end = time.monotonic() + timeout
    n = 0
    while True:
        window.switch_to()
        window.dispatch_events()
        window.on_draw()
        window.flip()
        n += 1
        idle = not window.state.dirty and not window.producer.busy
        if idle and n >= frames and window.producer.poll() is None:
            return n
        if time.monotonic() > end:
            raise TimeoutError("the viewer did not finish its frame")
        window.producer.wait(timeout=max(end - time.monotonic(), 0.0))
