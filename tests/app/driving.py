"""Driving a viewer window from tests and the soak script: opening one, input events and frame pumping."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

SIZE = (64, 48)  # small: the CPU renderer takes ~1-3 s per frame at this size on 2 shared cores


@contextlib.contextmanager
def open_viewer(scene, output_dir: str, size: tuple[int, int] = SIZE, render_scale: float = 1.0) -> Iterator:
    """A fresh viewer window on `scene` with its first frame on screen (overlay hidden, render scale 1 unless
    given), shut down and closed afterwards. One window per test: a test may resize it or change its settings
    freely."""
    import app  # noqa: F401  (pyglet options first)
    from app.window import ViewerWindow

    window = ViewerWindow(scene, size=size, render_scale=render_scale, moving_scale=render_scale,
                          output_dir=str(output_dir))  # fmt: skip
    try:
        window.state.show_overlay = False
        pump(window)
        yield window
    finally:
        window.shutdown()
        window.close()


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
