"""The viewer's kernel warm-up (renderer/warmup.py) in a background thread, while the window shows its progress.

Two phases. First the frame size and settings the viewer starts with, under every launch configuration: the
window shows no frame until they are ready, so none of its frames stops for a compile. Then every combination of
the switches the overlay offers (SH degree, tile size, rasterizer loop, blending, AdaGScale, the depth view), one
flip away first, while the viewer runs; a switch flipped before its kernels are ready costs one pause, which the overlay
reports (`ViewerWindow` counts the compilations of each frame). A new frame size (a resized window, another
render scale) is warmed the same way, in the background, first thing.

On a CPU nothing compiles: `ready` at once, and no thread.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from renderer import RenderSettings
from renderer.warmup import needs_warm_up, switch_settings, warm_up


class BackgroundWarmUp:
    """Warms `renderer`'s kernels for `size` and `settings`, then for the switches (`scene_degree`: the SH degree
    the slider reaches), in a daemon thread. `status` is one line for the overlay; `ready` once the first phase
    is done."""

    def __init__(self, renderer, size: tuple[int, int], settings: RenderSettings, scene_degree: int):
        self.renderer = renderer
        self._settings = dataclasses.replace(settings)  # the overlay edits the viewer's settings in place
        self._degree = scene_degree
        self._cv = threading.Condition()
        self._first = tuple(size)
        self._sizes: list[tuple[int, int]] = []  # more sizes to warm, the newest first
        self._warmed: set[tuple[int, int]] = {self._first}  # warmed, or being warmed
        self._closed = False
        self._ready = threading.Event()
        self.status = ""
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        if not needs_warm_up(renderer):
            self._ready.set()
            return
        self.status = "preparing kernels"
        self.thread = threading.Thread(target=self._run, name="warpsplat-warm-up", daemon=True)
        self.thread.start()

    @property
    def ready(self) -> bool:
        """The starting size and settings are warm: frames may be shown."""
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def add_size(self, size: tuple[int, int]) -> None:
        """Warm another frame size too (ahead of the switches still to do)."""
        size = tuple(size)
        with self._cv:
            if self.thread is None or size in self._warmed:
                return
            self._warmed.add(size)
            self._sizes.insert(0, size)
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            first = self._first
            self.status = "preparing kernels"
            warm_up(self.renderer, [first], [self._settings])  # on a first start in threads (renderer/warmup.py)
            self._ready.set()
            switches = switch_settings(self._settings, self._degree)[1:]  # [0] is the settings just warmed
            # from here frames are shown while kernels compile: one thread, whose Python (Triton's code generation
            # holds the GIL) takes less from the frames' than several would
            todo = [(first, s) for s in switches]
            total = len(todo)
            while True:
                with self._cv:
                    while not (self._closed or self._sizes or todo):
                        self.status = f"kernels ready for every switch ({time.perf_counter() - t0:.1f} s)"
                        self._cv.wait()
                    if self._closed:
                        return
                    size = self._sizes.pop(0) if self._sizes else None
                if size is not None:  # a new size: the current settings now, its switches after the others
                    self.status = f"preparing kernels for {size[0]}x{size[1]}"
                    warm_up(self.renderer, [size], [self._settings], previous=switches, threads=1)
                    todo += [(size, s) for s in switches]
                    total += len(switches)
                    continue
                size, settings = todo.pop(0)
                self.status = f"preparing the switches' kernels: {total - len(todo)}/{total}"
                warm_up(self.renderer, [size], [settings], previous=switches, threads=1)
        except Exception as e:  # shown in the overlay; frames then compile as they come
            self.error = e
            self.status = f"kernel warm-up stopped: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        finally:
            self._ready.set()
