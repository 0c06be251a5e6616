"""The launch side of a frame that the host decides: how many pair slots its buffers have (`Capacity`, one per
kind of frame: `Capacities`), and the kernels' launch knobs (`LaunchConfig`), both chosen from the frames before
it."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from kernels import RASTER_SLOTS, bin_config, bins_macro_tiles, culls_frustum, list_class, project_block

from .settings import RenderSettings


class Capacity:
    """The length of buffers that hold a per-frame count known only on the device (the pairs).

    The frame sizes its launches by the capacity instead of waiting for the count; at its end the count is
    read (the frame's one sync). When the count did not fit, the frame bins again once, into buffers grown
    ahead of need: to HEADROOM x the count, and at least STEP x the old size, so that a view growing denser
    frame after frame (a fly-in) grows a few times in geometric steps instead of on every few frames. Each
    growth is a new kind of frame for CUDA graphs, which costs a capture (renderer/graphs.py); each frame that
    did not fit costs one rebin. After SHRINK_AFTER frames in a row, and SHRINK_SECONDS, that used under
    1/SHRINK_BELOW of it, it shrinks to HEADROOM x their largest count (sorting idle capacity costs time); the
    next growth goes straight back to the largest size it shrank from (`high`), which a view needed before.

    Why both bounds and the way back: a shrink and each growth after it are a new kind of frame, about three slow
    frames each (a rebin or a capture, and eager frames before it). With 30 frames and steps of 1.5x, the
    interop check's fly-through (from the scene's default view 0.9 of the way in, then again from the start)
    shrank 30 frames into every pass and grew back four times: 20-28 frames of 2-3.6 ms against a median of
    0.6 in its second pass (BENCHMARKS.md, section 26). A view that stays sparse for seconds still gives the
    room back.

    NOTE: the steps trade memory for fewer growths: the capacity ends within STEP x the largest count of a path
    (x HEADROOM right after a growth), and each slot costs bytes of buffers and of the sort's scratch: a per-tile
    pair about 16 and 18, a macro-tile pair about 28 and 18, a tile-list entry 4 (renderer/memory.py)."""

    HEADROOM = 1.2
    STEP = 1.5
    SHRINK_AFTER = 30
    SHRINK_SECONDS = 3.0
    SHRINK_BELOW = 3
    MINIMUM = 1024

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = 0  # 0 until the first frame measures its need
        self.growths = 0  # times it grew (a rebin and a new kind of frame each)
        self.high = 0  # the largest size it has shrunk from: where a growth after a shrink goes at once
        self._clock = clock
        self._low_frames = 0
        self._low_since = 0.0
        self._recent = 0

    def fits(self, count: int) -> bool:
        return count <= self.size

    def grown(self, count: int) -> int:
        """The size `grow(count)` makes it (count did not fit)."""
        step = int(self.size * self.STEP) if self.size else 0
        return max(int(count * self.HEADROOM), step, self.high, self.MINIMUM)

    def grow(self, count: int) -> None:
        """Make room for `count` and more (called when it did not fit)."""
        self.size = self.grown(count)
        self.growths += 1
        self._low_frames = self._recent = 0

    def make_room(self, count: int) -> None:
        """Before the first frame that counts into it (its buffers are allocated anew): room for an expected
        `count`, so that frame need not bin again."""
        if not self.fits(count):
            self.size = self.grown(count)  # not a growth: nothing was binned into it yet

    def observe(self, count: int) -> None:
        """After a frame whose count fitted: shrink after a long enough run of frames that used little of it."""
        if count * self.SHRINK_BELOW >= self.size:
            self._low_frames = self._recent = 0
            return
        now = self._clock()
        if not self._low_frames:
            self._low_since = now
        self._low_frames += 1
        self._recent = max(self._recent, count)
        if self._low_frames >= self.SHRINK_AFTER and now - self._low_since >= self.SHRINK_SECONDS:
            self.high = max(self.high, self.size)
            self.size = max(int(self._recent * self.HEADROOM), self.MINIMUM)
            self._low_frames = self._recent = 0


class Capacities:
    """The capacities of each kind of frame: the tiles' lists (list entries, the frame's tile pairs) and the
    macro-tile pairs (kernels/bin.py). AdaGScale (each tau and s_min) keeps its own: the sort, the sentinel fill
    and the tile lists run over the whole capacity (kernels/sort.py), so a lossy frame that inherited the exact
    frames' capacity would sort as many slots as they do and gain nothing there from the pairs it removed (the
    capacity shrinks only below a third in use). Exact frames, whatever else changes, share one, as before; the
    buffers behind every capacity are the same grow-only ones."""

    def __init__(self) -> None:
        self._by_kind: dict[tuple, tuple[Capacity, Capacity]] = {}

    def of(self, settings: RenderSettings) -> tuple[Capacity, Capacity]:
        """(list capacity, pair capacity) of frames like this one."""
        s = settings
        key = (s.adagscale_tau, s.adagscale_s_min) if s.adagscale else ()
        return self._by_kind.setdefault(key, (Capacity(), Capacity()))


@dataclass(frozen=True)
class LaunchConfig:
    """The kernels' launch knobs for the next frame, chosen from the last frame's counts (measured rules in
    kernels/project.py, bin.py and rasterize.py). None of them changes what is blended: `macro` changes how the
    tiles' lists are built, not what they hold. One does not keep the image's bits: the long-list class on CUDA
    (`lists` 2) blends the longest lists in parts and composites them (kernels/rasterize.py: within 1e-4 of whole
    lists but where a pixel stops inside a later part), so a camera's image can differ with the frames before it,
    which chose the class: by up to 0.006 on 36k of the 6M overview's 2M pixels. Every other knob was changed
    alone on the composites' frames and kept every bit (BENCHMARKS.md, section 43)."""

    project_block: int = 128
    bin_block: int = 64
    bin_cols: int = 2
    lists: int = 0  # tile lists short (0), medium (1) or long (2): the rasterizer's configuration
    macro: bool = False  # bin per macro-tile (kernels/bin.py `bins_macro_tiles`), else per tile
    cull: bool = False  # project pre-culls the scene's Gaussians (kernels/project.py `culls_frustum`)

    @staticmethod
    def first(counted: bool, cuda: bool) -> LaunchConfig:
        """A renderer's first frame's configuration, before any count. On a GPU's capacity route it bins per macro-tile:
        its capacities are sized by it, and a macro-tile frame holds fewer pair bytes than a per-tile one at any
        footprint over about 1.5 tiles a Gaussian (the tiles' lists cost 4 bytes an entry there, against about 32
        per tile pair); a 4K close-up's peak went from 707 to 396 MB (BENCHMARKS.md, section 26). The frame after it
        takes its form from its footprint as if it had been binned per tile (`Renderer._fit_pairs`), so a path
        settles where it did. Counted frames size their pairs exactly and keep the per-tile default, and so does the
        CPU, whose torch reference bins macro-tiles through larger temporaries (a 131k-Gaussian file's render took
        +186 MiB of host memory with its first frame so, against +94-117 per tile)."""
        return LaunchConfig(macro=cuda and not counted).interned()

    def interned(self) -> LaunchConfig:
        """The one object of this configuration (`_launch_config`), as `after` returns them: a frame's kind keeps the
        configuration it was made with, and the straight way (renderer/pipeline.py `_NextFrame`) compares it with
        the renderer's by identity; a first frame's configuration made apart, equal to a later one, sent every frame
        of that kind the long way."""
        return _launch_config(self.project_block, self.bin_block, self.bin_cols, self.lists, self.macro, self.cull)

    @staticmethod
    def after(previous: LaunchConfig, n: int, n_visible: int, n_pairs: int, n_tiles: int, tile: int,
              lists_of: tuple[int, int] | None = None, slots: int = RASTER_SLOTS) -> LaunchConfig:  # fmt: skip
        """The configuration for a frame like this one. The list class, the bin steps' width and the binning form
        move with hysteresis (`list_class`, `bin_config`, `bins_macro_tiles`), so a frame near a threshold does not
        flip them (and re-capture the frame's graph) back and forth. `lists_of`: (pairs, longest tile list) of
        this frame, or of the last one whose longest list is known (a counted frame's is read a frame late); None,
        or a frame of fewer pairs than `slots` (whose concentration says nothing: an empty frame before a dense
        one would choose for it), leaves the list class as it was. `slots`: the tiles the GPU blends at once
        (`renderer.device.raster_slots`)."""
        footprint = n_pairs / max(n_visible, 1)
        lists = previous.lists
        if lists_of is not None and lists_of[0] >= slots:
            lists = list_class(lists_of[0], n_tiles, lists_of[1], tile, previous.lists, slots)
        block, cols = bin_config(n_visible, footprint, wide=previous.bin_cols > 4)
        return _launch_config(project_block(n), block, cols, lists, bins_macro_tiles(footprint, previous.macro),
                              culls_frustum(n, n_visible, previous.cull))  # fmt: skip

    @staticmethod
    @functools.cache
    def reachable(n: int, n_tiles: int, tile: int, *, windows: bool = False,
                  slots: int = RASTER_SLOTS) -> tuple[LaunchConfig, ...]:  # fmt: skip
        """Every configuration frames of n Gaussians on n_tiles tiles may run with: the first frame's (either
        route's), and what `after` chooses from there, its rule explored over grids of the counts (visible
        Gaussians 0..n, pairs per visible Gaussian 1..n_tiles; neighbouring pair counts at most 1.1x apart, finer
        than any of its classes) from each configuration found until no new one appears, each with every list class
        that frames' pairs and longest lists reach (a product: it may hold a few combinations no path takes, each a
        warm-up frame). The warm-up compiles every one (renderer/warmup.py), so a knob that `after` derives from
        these counts is warmed with no change here.
        `windows`: frames may project fewer than n Gaussians (a temporal window's set), which moves project_block
        alone: each configuration is also taken with every block that fewer Gaussians choose."""

        def grid(hi: int, ratio: float) -> list[float]:
            values, v = {1.0, float(hi)}, 1.0
            while v < hi:
                values.add(v)
                v *= ratio
            return sorted(values)

        # (visible, pairs): whole visible counts, pairs per visible Gaussian on a float grid; the list class is
        # explored on its own below (it turns on the pairs and the longest list alone: kernels/rasterize.py
        # `list_class`), so the longest list stays unknown here and the class where it starts
        counts = [(0, 0)] + [(int(v), int(int(v) * p)) for v in grid(n, 1.25) for p in grid(n_tiles, 1.1)]
        found, frontier = {LaunchConfig.first(False, cuda=True), LaunchConfig()}, [LaunchConfig()]
        while frontier:
            prev = frontier.pop()
            for v, p in counts:
                nxt = LaunchConfig.after(prev, n, v, p, n_tiles, tile)
                if nxt not in found:
                    found.add(nxt)
                    frontier.append(nxt)
        # the list classes: pairs on the grid, the longest list at concentrations in each class's region and
        # either side of its thresholds (a list holds a Gaussian once at most: no longer than n)
        classes, frontier = {0}, [0]
        pair_counts = sorted({int(p) for p in grid(n * n_tiles, 1.1)})
        while frontier:
            prev = frontier.pop()
            for p in pair_counts:
                for c in (0.5, 2.0, 3.0, 5.0, 7.0, 12.0, 50.0):
                    cls = list_class(p, n_tiles, min(int(c * p / slots), n, p), tile, prev, slots)
                    if cls not in classes:
                        classes.add(cls)
                        frontier.append(cls)
        found = {replace(c, lists=cls) for c in found for cls in classes}
        if windows:
            blocks = {project_block(int(m)) for m in grid(n, 2.0)}
            found |= {replace(c, project_block=b) for c in found for b in blocks}
        return tuple(sorted(found, key=lambda c: (c.lists, c.project_block, c.bin_block, c.bin_cols, c.macro, c.cull)))


@functools.cache
def _launch_config(*knobs) -> LaunchConfig:
    """One object per configuration, as `after` chooses it every frame: a frozen dataclass's construction and the
    frame's kind (renderer/frame_kind.py), compared and hashed each frame, cost less host time by identity."""
    return LaunchConfig(*knobs)
