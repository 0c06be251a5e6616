"""The per-frame pipeline: a readable sequence of stage calls over a reusable workspace.

    1. project     per Gaussian: cull, EWA conic, depth, SH colour, exact tile count  Triton (kernels/project.py)
                   (AdaGScale, when on: the count at a shrunken binning threshold, lossy, with a tau
                   scaled to the frame: `adagscale_frame_tau`)
    2. order       per macro-tile: counts and offsets in index order; per tile: the    torch (kernels/order.py)
                   visible Gaussians nearest first (one stable 32-bit sort), offsets
    3. bin         one (macro-tile, Gaussian) pair per 8x4-tile block reached, with    Triton (kernels/bin.py)
                   the mask of its tiles there, keyed by macro-tile and rounded depth
    4. sort        by the int32 keys, the ties of rounded depths settled exactly       torch + Triton (kernels/sort.py)
    5. tile_lists  each tile's list and [start, end), split from its macro-tile's      Triton (kernels/tile_lists.py)
                   and the order the rasterizer takes the tiles in, longest first      Triton (kernels/schedule.py)
    6. rasterize   front-to-back compositing per tile, RGB float + alpha + RGBA8       Triton (kernels/rasterize.py)

Two routes through the stages (docs/architecture.md, "Two routes through the stages"):

- Capacity frames (scenes under COUNTED_FROM Gaussians). No stage waits for the host: the pair buffers and the
  tiles' lists have capacities, every launch takes its length from the buffers, and the counts stay on the
  device until the frame's one sync, at its end, reads them. A frame whose pairs or lists did not fit grows the
  buffers ahead of need (`Capacity`) and bins again, once, from its stage-2 output (so it is still exact), and
  the capacity shrinks
  again after a run of frames that use a small part of it. Buffers live in one grow-only workspace, reused
  across frames, so such a frame allocates nothing large; with fixed shapes, a CUDA device replays the whole
  frame as one captured CUDA graph: one launch instead of about twenty.
- Counted frames (from COUNTED_FROM Gaussians on). Order waits once, for the visible and the pair counts
  (reduced before its sort and read through pinned memory while the sort runs), sorts only the visible
  Gaussians (or, when the last frame saw most of the scene, sorts them all: DENSE_ORDER_FROM), and bin and
  sort run on pair tensors of exactly the pair count, allocated each frame (from torch's caching allocator),
  stage by stage.

`render` runs one frame and returns it; `render_stream` keeps one frame in flight over two workspace slots,
launching the next frame before it checks and hands over the last. A `render` whose settings object, fields and
image size are the last frame's, with nothing changed on the renderer since, runs the last frame's stage objects
again straight away (its graph replayed, or its stages launched: `_NextFrame`), without making and looking up
its kind again.

Temporal reuse (renderer/temporal.py) decides, before stage 1, which Gaussians a frame projects: the whole
scene, or a window's compacted set, whichever measured faster (renderer/window_choice.py); and may return the
last frame unchanged.

This module is the Renderer: which route a frame takes, and what happens around its stages. The stages are
renderer/frame.py's (a class per route); the kept frames, keyed by everything they bake in, renderer/frame_cache.py
and renderer/frame_kind.py; their CUDA graphs renderer/graphs.py; the capacity and launch knobs renderer/launch.py.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import torch

from kernels import expected_macro_pairs, frustum_block_bounds, gaussian_extent
from scenes import GaussianScene

from .camera import Camera
from .device import (
    choose_device,
    current_cuda_device,
    frames_in_flight,
    kernel_module,
    maps_host_memory,
    raster_slots,
    resolve_backend,
)
from .frame import (
    MACRO_PAIR_BUFFERS,
    PAIR_BUFFERS,
    TILE_PAIR_BUFFERS,
    CapacityFrame,
    CountedFrame,
    Frame,
)
from .frame_cache import FrameCache
from .frame_kind import FrameKind, baked_settings
from .graphs import CAPTURE, COUNTED, EAGER, REPLAY, FrameGraphs
from .launch import Capacities, LaunchConfig
from .memory import KEPT_FORM_BYTES, MemoryEstimate, OutOfDeviceMemoryError, check_fits, check_frame_pairs
from .output import RenderOutput, RenderStats, check_image_size, fill_stats
from .params import FrameParams
from .prepare import PREPARE_CHUNK, prepare_scene
from .routes import DENSE_ORDER_FROM, runs_counted
from .settings import RenderSettings, rasterizers
from .temporal import SceneArrays, TemporalCache
from .timing import EventPool, StageTimer
from .workspace import Workspace


def check_scene_fits(scene: GaussianScene, device: torch.device | str | None = None,
                     frame_size: tuple[int, int] | None = None) -> MemoryEstimate:  # fmt: skip
    """Raise OutOfDeviceMemoryError (one line) if a Renderer of `scene` rendering `frame_size` frames would not
    fit on `device` (None: the one a Renderer would choose); the estimate otherwise. Renderer calls it first;
    commands call it before work of their own (a window, a video encoder)."""
    device = choose_device(device)
    w, h = frame_size or (None, None)
    return check_fits(len(scene), scene.sh.shape[1], w, h, device, counted=runs_counted(len(scene), "auto"))


def _fits(scene: GaussianScene, device: torch.device, frame_size: tuple[int, int] | None, *, counted: bool,
          in_flight: bool | None = None) -> bool:  # fmt: skip
    """Whether `check_scene_fits`'s estimate for the route (`counted` or not, `in_flight` or not) fits the device."""
    w, h = frame_size or (None, None)
    try:
        check_fits(len(scene), scene.sh.shape[1], w, h, device, counted=counted, in_flight=in_flight)
    except OutOfDeviceMemoryError:
        return False
    return True


# A pre-culling frame's programs test their block's bounds first (`Renderer.frustum_bounds`): on a fly-over over the
# composites most of the culled Gaussians lie in blocks that miss the view (the 24M fly-over's pass 0.983-0.986x
# its time without, BENCHMARKS.md section 62); off, every Gaussian is tested on its own. The same survivors and
# images either way.
BLOCK_CULL = True

# Workspace slots: `render` uses slot 0; `render_stream` alternates 0 and 1, so that the frame in flight and the
# frame handed over never share a buffer they hand over (scratch is shared: renderer/frame.py).
SLOTS = 2


class Renderer:
    """Renders one scene from any camera. Keeps a device-side prepared copy and a reusable workspace.

    Args:
        scene: the scene (any device; copied to `device` once).
        device: where to render; default CUDA when available, else CPU.
        backend: "triton" (the kernels), "torch" (kernels.reference), or "auto" (see resolve_backend).
        graphs: replay each frame as a captured CUDA graph where it can (default: on CUDA with Triton).
        frame_size: (width, height) of the frames to come, for the memory check (default memory.NOMINAL_FRAME).
    """

    def __init__(
        self,
        scene: GaussianScene,
        *,
        device: torch.device | str | None = None,
        backend: str = "auto",
        graphs: bool | None = None,
        frame_size: tuple[int, int] | None = None,
    ):
        scene = scene.validate().drop_invalid(name="scene")  # readers already did; scenes built in memory did not
        self.device = choose_device(device)
        check_scene_fits(scene, self.device, frame_size)  # one-line MemoryError before any work
        self._frame_size = frame_size
        self.backend = resolve_backend(backend, self.device)
        self.k = kernel_module(self.backend)
        self.scene = scene
        self.n = len(scene)
        self.means, self.opacities, self.sh, self._covars_base = prepare_scene(scene, self.device)
        self.covars = self._covars_base  # the base scaled by the settings' scale modifier (`_update_scale_modifier`)
        self._scale_modifier = 1.0
        self._covars_version = 0  # which covariances frames captured (a graph holds their address)
        cuda = self.device.type == "cuda"
        # the device the scene was copied to, as an int: torch.cuda.device(torch.device("cuda")) looked the current
        # device up in Python on every frame
        self._device_index = torch.cuda.current_device() if cuda and self.device.index is None else self.device.index
        # replay each capacity frame as a captured CUDA graph where it can (`graphs`: whether it does now)
        self._graphs = FrameGraphs(self.device, (cuda and self.backend == "triton") if graphs is None else
                                   bool(graphs and cuda))  # fmt: skip
        # "auto": counted from COUNTED_FROM Gaussians on; "graph" / "counted" force one route (for measuring)
        self.frame_mode = "auto"
        self.dense_order_from = DENSE_ORDER_FROM  # counted frames sort all N from this visible fraction on
        self.in_flight = frames_in_flight(self.device)  # whether `render_stream` keeps a frame in flight
        self.ws = Workspace(self.device)
        self._capacities = Capacities()  # per pair kind
        # this frame kind's room: list entries of the tiles' lists (tile pairs), and macro-tile pair slots
        self.pair_capacity, self.macro_capacity = self._capacities.of(RenderSettings())
        self.launch = LaunchConfig.first(self.counted(), cuda=self.device.type == "cuda")
        self._first_frame = True  # the next frame is the first: the one after it takes its form from the footprint
        self._pair_form = self.launch.macro  # the binning form whose pair buffers the workspace holds
        self.frames = FrameCache(self.ws)  # recent frames' stage objects, with their graphs
        # kinds of frame whose graphs a change of the pair buffers retired, to capture again ahead of their return
        # (`_capture_ahead`): (slot, launch configuration, settings, width, height), oldest first
        self._ahead: list[tuple] = []
        self.rebins = 0  # frames binned again because their pairs did not fit the capacity
        # per slot: the camera and background reach the device through one pinned staging copy per frame, and
        # a streamed frame's (visible, pairs) come back into pinned memory without a blocking read
        self.params = FrameParams(self.device, SLOTS)
        # kernels read and write pinned memory themselves (kernels/staging.py): the parameters' copy up and a counted
        # frame's counts and longest list down without torch's copies (`maps_host`)
        self.maps_host = cuda and self.backend == "triton" and maps_host_memory(self._device_index)
        self._last_visible = self.n  # the last frame's visible Gaussians (AdaGScale's density; all at first)
        # (and the longest tile list, which the rasterizer's launch class follows: kernels/rasterize.py `list_class`)
        self._host_totals = [torch.zeros(4, dtype=torch.int64, pin_memory=cuda) for _ in range(SLOTS)]
        # counted frames' longest lists, read a frame late (their host waits mid-frame, before stage 5): frame i's
        # goes to entry i % 3, so that neither of the two frames a stream may have in flight overwrites the one read.
        # 16 bytes an entry: a kernel writing one (`maps_host`) is given an aligned pointer, as it was compiled for
        self._host_longest = torch.zeros(3, 2, dtype=torch.int64, pin_memory=cuda)
        self.longest_entries = [self._host_longest[i, :1] for i in range(len(self._host_longest))]
        self._host_longest_read = self._host_longest.numpy()  # the same memory: an entry read without torch
        self._counted_pairs = [0] * len(self._host_longest)  # and their pairs
        self._counted_frames = 0  # counted frames launched: the next one's place in _host_longest
        # frames started (`_start`), and which one's stage 1 and 2 outputs the buffers the slots share hold
        # (renderer/frame.py): a frame binned again runs those stages again first where they are another's
        self._starts = self._staged = 0
        self.raster_slots = raster_slots(self.device)  # tiles the GPU blends at once (the launch class's rule)
        # the tile pairs of the frame whose longest list chose the current list class, and the class chosen from the
        # last frame of each image's tiles and power of two of pairs (pairs.bit_length()): a counted frame far denser
        # than the first takes its class from the second (renderer/frame.py `CountedFrame._class_for`)
        self.class_pairs = 0
        self.class_by_pairs: dict[tuple[int, int], int] = {}
        # a counted frame's (visible, pairs, macro pairs), read while its depth sort runs (kernels/order.py)
        self.host_counts = torch.zeros(3, dtype=torch.int64, pin_memory=cuda)
        # recorded after their copy, and waited for in the same frame, so one serves every counted frame: a new
        # torch.cuda.Event each frame looked its stream up in Python (BENCHMARKS.md, section 53)
        self.counts_ready = torch.Event(self.device) if cuda else None
        self._event_pool = EventPool(self.device) if cuda else None  # the frames' stage timers' events
        self.last_timer: StageTimer | None = None
        self.temporal = TemporalCache(self.ws)
        self._last_output: RenderOutput | None = None
        # the last one-by-one frame's stage objects, where the next frame may run them again straight away
        self._next_frame: _NextFrame | None = None
        self._cuda = cuda
        self._zero3 = torch.zeros(3, dtype=torch.float32, device=self.device)  # the depth pass's background
        self._inf = torch.full((1,), float("inf"), dtype=torch.float32, device=self.device)  # for order (frame.py)

    @property
    def maps_host(self) -> bool:
        """Whether kernels read and write pinned memory themselves (renderer/device.py `maps_host_memory`): the
        parameters go up through `copy_to_device`, and a counted frame's count and schedule kernels write its counts
        and longest list into the pinned buffers the host reads. Settable, for measuring and for the CPU's tests."""
        return self._maps_host

    @maps_host.setter
    def maps_host(self, on: bool) -> None:
        self._maps_host = bool(on)
        self.params.copy = self.k.copy_to_device if on else None

    @property
    def graphs(self) -> bool:
        """Whether capacity frames replay as CUDA graphs (False for good once a capture failed)."""
        return self._graphs.enabled

    @graphs.setter
    def graphs(self, on: bool) -> None:
        self._graphs.enabled = on

    @property
    def graph_replays(self) -> int:
        return self._graphs.replays

    @functools.cached_property
    def scene_radius(self) -> float:
        """The size that temporal reuse's distance settings scale with (computed on first use, not at load)."""
        return self.scene.robust_radius()

    @functools.cached_property
    def extent(self) -> torch.Tensor:
        """[N] f32: each base covariance's largest eigenvalue, bounded (kernels/buffers.py `gaussian_extent`), for
        the projection's pre-cull; made on the first frame that pre-culls (4 bytes a Gaussian), a chunk at a
        time. A scale modifier reaches it as a factor (renderer/frame.py `Frame.project`)."""
        extent = torch.empty(self.n, dtype=torch.float32, device=self.device)
        for a in range(0, self.n, PREPARE_CHUNK):
            extent[a : a + PREPARE_CHUNK] = gaussian_extent(self._covars_base[a : a + PREPARE_CHUNK])
        return extent

    @functools.cached_property
    def frustum_bounds(self) -> torch.Tensor | None:
        """[blocks, 8] f32: each pre-cull block's bounds (kernels/project.py `frustum_block_bounds`), which a
        pre-culling frame's programs test before their Gaussians; made with the extents (32 bytes a block of
        1,024). None where BLOCK_CULL is off."""
        return frustum_block_bounds(self.means, self.extent) if BLOCK_CULL else None

    def scene_arrays(self) -> SceneArrays:
        return SceneArrays(self.means, self.covars, self.opacities, self.sh)

    def _update_scale_modifier(self, modifier: float) -> None:
        """Covariances for a scale modifier m: R (m S)^2 R^T = m^2 x the base, a copy only while m != 1 (the
        quaternions and log-scales are not kept on the device to recompute them: 28 bytes a Gaussian)."""
        if modifier != self._scale_modifier:
            self.covars = self._covars_base if modifier == 1.0 else self._covars_base * (modifier * modifier)
            self._scale_modifier = modifier
            self._covars_version += 1

    # ------------------------------------------------------------------ one frame

    @torch.inference_mode()
    def render(
        self,
        camera: Camera,
        settings: RenderSettings | None = None,
        *,
        sync_stats: bool = True,
        future: list[Camera] | None = None,
    ) -> RenderOutput:
        """Render one frame. With sync_stats=False the stage times are left to `last_timer` (read them a
        frame later, when the GPU has finished) and the frame performs only its own syncs: one at its end on
        the capacity route, one within order (for the counts) on the counted route.
        `future`: the cameras of the next frames when they are known (a camera path), for temporal reuse."""
        # Triton launches on the current device: make it this renderer's where it is not (torch.cuda.device's entry
        # and exit are Python work a frame need not do; they measured a few us, BENCHMARKS.md section 57)
        if self._cuda and current_cuda_device() != self._device_index:
            with torch.cuda.device(self._device_index):
                return self._render(camera, settings, sync_stats, future)
        return self._render(camera, settings, sync_stats, future)

    def _checked(self, settings: RenderSettings | None) -> RenderSettings:
        """`settings` validated, and runnable here: the scalar rasterizer is a Gluon kernel, CUDA only."""
        settings = (settings or RenderSettings()).validate()
        # ("auto" runs everywhere: the variants' lookup, the environment's read among them, is for the others)
        if self.backend == "triton" and settings.rasterizer != "auto" and settings.rasterizer not in rasterizers():
            raise ValueError(f"rasterizer {settings.rasterizer!r} needs CUDA (a Gluon kernel); this renderer runs "
                             f"Triton's interpreter: use {' or '.join(rasterizers())}")  # fmt: skip
        return settings

    def _render(
        self, camera: Camera, settings: RenderSettings | None, sync_stats: bool, future: list[Camera] | None,
        use_window: bool | None = None,
    ) -> RenderOutput:  # fmt: skip
        """One frame, waiting for its end. use_window: whether a window serves it (None: as measured)."""
        temporal = self.temporal
        again = self._next_frame
        if again is not None and not (use_window is None and again.holds(self, camera, settings)):
            again = None
        if again is not None:
            settings = again.settings  # its fields are the ones asked for, checked
            temporal.stats.frames += 1
            f, src, timer, ran = self._start_again(camera, settings, again)
        else:
            settings = self._checked(settings)
            check_image_size(camera.width, camera.height)
            temporal.stats.frames += 1
            if self._last_output is not None and temporal.unchanged(camera, settings):
                temporal.stats.frames_reused += 1
                last = self._last_output
                stats = RenderStats(**{**last.stats.__dict__, "stage_ms": {}, "source": "reused", "ran": "reused",
                                       "rebinned": False})  # fmt: skip
                return RenderOutput(last.image, last.alpha, last.rgba8, stats, last.tile_counts, last.depth,
                                    last.tiles_touched)  # fmt: skip
            if use_window is None:
                use_window = temporal.wants_window(camera, settings, future is not None, self.scene_radius)
            f, src, timer, ran = self._start(camera, settings, future, slot=0, use_window=use_window)
        n_visible, n_pairs, n_macro_pairs = f.totals()  # a capacity frame's one host sync (counted: in order)
        # a counted frame's longest list comes a frame late: the last one's is complete (this frame waited for
        # its counts behind it)
        lists_of = self._counted_lists(self._counted_frames - 2) if f.counted else (n_pairs, f.longest)
        rebins = self.rebins
        f = self._fit_pairs(f, src, camera, settings, n_visible, n_pairs, n_macro_pairs, timer, lists_of)
        depth = None
        if settings.depth:  # the same lists and weights, depth in place of colour: sum(w z), then / sum(w)
            with timer.stage("depth"):
                depth = f.render_depth()
        f.let_go()
        timer.stop()

        stats = RenderStats(n_gaussians=self.n, n_visible=n_visible, n_pairs=n_pairs, max_tile_pairs=-1,
                            backend=self.backend, n_projected=f.n, source=src.kind,
                            adagscale_tau=self.params.tau[0], ran=ran,
                            rebinned=self.rebins > rebins)  # fmt: skip
        if sync_stats:
            fill_stats(stats, f.tile_counts, timer)
        if settings.reuse_unchanged_frame:
            temporal.remember(camera, settings)
        self._next_frame = _NextFrame.after(self, f, src, camera, settings, ran, again)
        self._last_output = RenderOutput(f.rgb, f.alpha, f.rgba8, stats, f.tile_counts, depth, f.tiles_touched,
                                         timer)  # fmt: skip
        return self._last_output

    def _start_again(
        self, camera: Camera, settings: RenderSettings, again: _NextFrame
    ) -> tuple[Frame, object, StageTimer, str]:
        """`_start` for a frame that `again` holds for: the last frame's stage objects run again with this camera
        (its graph replayed; or, counted or with graphs off, its stages launched), without the settings' checks,
        the temporal source, the frame's kind and its lookup, which the last frame settled and `_NextFrame.holds`
        found unchanged: one-by-one object frames took 23-51 us less, the 6M overview's counted frames 38-47
        (BENCHMARKS.md, section 57)."""
        f = again.frame
        self._last_output = None  # the workspace is about to change
        self._starts += 1
        self._staged = self._starts
        timer = StageTimer(self.device, self._event_pool)
        self.last_timer = timer
        self.params.fill(camera, settings, 0, self._last_visible)  # copied by the frame's first step (its graph's)
        if again.graphs and not f.counted:  # (a frame with graphs off may still hold one it captured before)
            return f, again.src, timer, self._graphs.replay_again(f)
        f.run(timer)
        if f.counted:
            self._counted_ran(f)
            return f, again.src, timer, COUNTED
        return f, again.src, timer, EAGER

    def _start(
        self, camera: Camera, settings: RenderSettings, future: list[Camera] | None, slot: int, use_window: bool
    ) -> tuple[Frame, object, StageTimer, str]:
        """A frame's work up to its host sync, enqueued in `slot`: (its stage object, its source, its timer, how it
        ran: `RenderStats.ran`).
        use_window: whether an asked-for temporal window serves it (`TemporalCache.wants_window`)."""
        self._last_output = None  # the workspace is about to change
        # nor is the last frame's record kept through this one: its frame holds views of buffers that this frame may
        # replace, which would stay allocated beside the new ones until the frame's end
        self._next_frame = None
        self._starts += 1
        self._staged = self._starts
        self._update_scale_modifier(settings.scale_modifier)
        timer = StageTimer(self.device, self._event_pool)
        self.last_timer = timer
        # 0. temporal reuse: which Gaussians this frame projects (all, or a window's set; see temporal.py)
        reuse = settings.temporal_window > 1
        # timed where a window is asked to serve it (a plain frame culls nothing: two events less a frame on the
        # composites, whose frames the host paces)
        with timer.stage("cull") if reuse and use_window else contextlib.nullcontext():
            src = self.temporal.source(self.scene_arrays(), self.k, self.scene_radius, camera, settings, future,
                                       use_window=use_window)  # fmt: skip
        self.params.fill(camera, settings, slot, self._last_visible)  # copied by the frame (`Frame.run`)
        self.pair_capacity, self.macro_capacity = self._capacities.of(settings)
        f = self._frame_for(src, camera, settings, slot)
        # a graph holds the whole scene's arrays: a window's frames run stage by stage
        graphs = not f.counted and self.graphs and src.kind == "full" and not settings.depth
        if graphs and self.pair_capacity.size and (self.macro_capacity.size or not f.macro):
            ran = self._graphs.run(f, timer)
            if self._ahead and ran == REPLAY:  # on a frame that only replays: never two captures in one frame
                self._capture_ahead(f, camera)
        else:
            f.run(timer)
            ran = COUNTED if f.counted else EAGER
        if f.counted:
            self._counted_ran(f)
        if reuse:  # its cost, for the window choice; a plain frame counts once it replays, where graphs do
            self.temporal.record(timer, steady=ran == REPLAY or not graphs)
        return f, src, timer, ran

    def _counted_ran(self, f: Frame) -> None:
        """A counted frame's pairs and longest list, kept for the launch class (`_counted_lists`). Where kernels reach
        pinned memory, its schedule wrote the longest list into its entry itself (`CountedFrame.order`)."""
        i = self._counted_frames % len(self._host_longest)
        if f.longest_list is not self.longest_entries[i]:
            self.longest_entries[i].copy_(f.longest_list, non_blocking=True)
        self._counted_pairs[i] = f.counts[1]
        self._counted_frames += 1

    def _counted_lists(self, serial: int) -> tuple[int, int] | None:
        """(pairs, longest tile list) of counted frame `serial` (0, 1, ... in launch order), which the caller knows
        has completed; None before the first."""
        if serial < 0:
            return None
        i = serial % len(self._host_longest)
        return self._counted_pairs[i], int(self._host_longest_read[i, 0])

    def _fit_pairs(self, f: Frame, src, camera: Camera, settings: RenderSettings, n_visible: int, n_pairs: int,
                   n_macro_pairs: int, timer: StageTimer, lists_of: tuple[int, int] | None = None,
                   started: int | None = None) -> Frame:  # fmt: skip
        """After a frame's totals are known: if its pairs or its tiles' lists did not fit, grow the capacities
        and bin again from stage 2's output, so the frame is exact (`started`: its `_starts` serial, None for the
        frame started last; where the stage 1 and 2 outputs the slots share are another frame's now, those stages
        run again first, from the frame's own camera in its slot); then pick the next frame's launch configuration
        (`lists_of`: its pairs and longest tile list, or a recent frame's; None: not known, the list class stays).
        Returns the frame's stage object (a new one when it was binned again)."""
        restage = started is not None and started != self._staged
        if not f.counted:  # counted frames size their pair tensors exactly: no capacity to check
            # the capacities it was binned with (a streamed frame's may have grown since)
            if n_pairs > f.capacity or n_macro_pairs > f.pair_slots:
                lists, pairs = self.pair_capacity, self.macro_capacity
                if not (lists.fits(n_pairs) and pairs.fits(n_macro_pairs)):
                    grown = (
                        lists.size if lists.fits(n_pairs) else lists.grown(n_pairs),
                        pairs.size if pairs.fits(n_macro_pairs) else pairs.grown(n_macro_pairs),
                    )
                    check_frame_pairs(n_pairs, n_visible, f.width, f.height, f.tile, self.device, counted=False,
                                      reference=self.backend == "torch", capacity=grown[0], held=lists.size,
                                      macro_pairs=n_macro_pairs, pair_capacity=grown[1],
                                      pairs_held=pairs.size)  # fmt: skip
                    for capacity, count in ((lists, n_pairs), (pairs, n_macro_pairs)):
                        if not capacity.fits(count):
                            capacity.grow(count)
                    f.pairs = None  # binned again below, into new buffers
                    self._release_pairs()
                # binned again in its own form and launch configuration: its project and order ran for them (a
                # streamed frame's may differ from the frame launched after it, which chose the current ones)
                current, self.launch = self.launch, f.launch
                try:
                    f = self._frame_for(src, camera, settings, f.slot)
                finally:
                    self.launch = current
                f.run(timer, from_stage="project" if restage else "bin")
                if restage:
                    self._staged = started
                self.rebins += 1
                if lists_of is not None and not f.counted:
                    # its longest list as binned again: the one read with its counts came from the lists that
                    # overflowed (empty on a renderer's first frames), and the list class chosen from it changed again
                    # a frame later, one more kind of frame before graphs replay: the orbits' first two frames after
                    # the bench's warm-up were graph captures (BENCHMARKS.md, section 36). A rebin waits for the GPU
                    # anyway; this waits for the frame's own stages too.
                    lists_of = (n_pairs, int(f.longest_list.item()))
            else:
                sizes = self.pair_capacity.size, self.macro_capacity.size
                self.pair_capacity.observe(n_pairs)
                if f.macro:  # frames binned per tile leave it idle: it keeps its size for the next macro-tile frames
                    self.macro_capacity.observe(n_macro_pairs)
                if (self.pair_capacity.size, self.macro_capacity.size) != sizes:
                    self._release_pairs()  # the next frame allocates them at the smaller size
        previous = self.launch
        if self._first_frame:  # binned per macro-tile for its memory alone (`LaunchConfig.first`)
            previous, self._first_frame = replace(previous, macro=False).interned(), False
        launch = LaunchConfig.after(previous, f.n, n_visible, n_pairs, f.n_tx * f.n_ty, f.tile, lists_of,
                                    self.raster_slots)  # fmt: skip
        if lists_of is not None and lists_of[0] >= self.raster_slots:  # as `after` reads it
            self.class_pairs = lists_of[0]
            self.class_by_pairs[f.n_tx * f.n_ty, lists_of[0].bit_length()] = launch.lists
        if launch.macro and not f.macro and not f.counted:
            # the first frame binned per macro-tile would otherwise find no room, bin again, and be one more kind
            # of frame before graphs replay (a close-up's first frames in flight took 2-3 ms: BENCHMARKS.md, 25)
            self.macro_capacity.make_room(expected_macro_pairs(n_visible, n_pairs))
        self.launch = launch
        self._last_visible = n_visible
        return f

    def release_memory(self) -> None:
        """Let go of what frames hold between paths: every workspace buffer, the kept frames with their graphs
        (and the graphs' memory pools) and the last output; the capacities keep their sizes, and the next frame
        allocates what it needs. `warpsplat bench` calls it between rows, so each row's peak is its own rather
        than on top of the rows before it."""
        self.frames.clear()
        self._next_frame = None
        self._ahead = []
        self.ws.drop(*self.ws.names())
        self.temporal.reset()
        self._last_output = None
        self._pair_form = self.launch.macro

    def _release_pairs(self) -> None:
        """Let go of the pair buffers before they are allocated again at another size: the frames (and graphs)
        binned into them are retired now, so that the new buffers do not come on top of the old ones (a frame
        still held elsewhere, such as a streamed one in flight, keeps its own until it is done). The kinds that
        had a graph are remembered, to be captured again ahead of their return (`_capture_ahead`)."""
        self._ahead = [(slot, f.launch, f.settings, f.width, f.height)
                       for (slot, _), f in self.frames.frames.items() if f.graph is not None]  # fmt: skip
        self.frames.clear()
        self._next_frame = None
        self.ws.drop(*PAIR_BUFFERS)

    def _capture_ahead(self, f: Frame, camera: Camera) -> None:
        """After frame `f` is enqueued: capture the graph of one kind a change of the pair buffers retired (a growth
        or a shrink of the capacities), at the capacities now, before the path shows it again. Otherwise each such
        kind is captured again on its first frame after the change (renderer/graphs.py), and a path's second time
        through met them all as captures, 3.2-3.5 ms frames against a median of 1.37 in the viewer's loop on the
        playbot (BENCHMARKS.md, section 48). One a frame, on the frames right after the change that replay their own
        graph: a capture records without running, 1.7-3.2 ms of host time. Only kinds of the frame's own size,
        settings and binning form, whose buffers the frame's kind already holds (a frame of another form or size
        would allocate buffers, and a moved buffer retires every kept frame); the rest are captured on their
        return, as before."""
        while self._ahead:
            slot, launch, settings, width, height = self._ahead.pop(0)
            if (launch.macro != f.macro or (width, height) != (f.width, f.height) or settings != f.settings
                    or launch == f.launch and slot == f.slot):  # fmt: skip
                continue
            current, self.launch = self.launch, launch
            try:  # the frame's own source: the scene's arrays as they are now (a graph holds their addresses)
                ahead = self._frame_for(f.src, camera, settings, slot)
            finally:
                self.launch = current
            if ahead.graph is None and ahead.generation == self.ws.generation:
                self._graphs.capture_ahead(ahead)
            return

    # ------------------------------------------------------------------ frames in flight

    def counted(self) -> bool:
        """Whether this scene's frames run counted (`runs_counted`)."""
        return runs_counted(self.n, self.frame_mode)

    def streams(self, settings: RenderSettings) -> bool:
        """Whether `render_stream` keeps frames of these settings in flight: on a GPU (`in_flight`, from
        renderer/device.py `frames_in_flight`), plain frames. Depth output and unchanged-frame reuse depend on the
        frame before: those go one by one. With a temporal window asked for, the plain frames stream and the
        frames a window serves go one by one (`render_stream`), so a declined window costs nothing (one by one,
        the composites' rows with a window asked for ran 4-20% slower than the default's streamed frames).

        Counted frames stream where a second slot fits the device (`counted_frames_fit_in_flight`): each waits
        for its own counts mid-frame, but the GPU then still has the frame before's stages queued, so the host's
        launches of one frame overlap the GPU's work on the other instead of leaving it idle (one by one the 6M
        fly-over took 1.7-2.0 ms for 0.97 ms of kernels: BENCHMARKS.md, section 27)."""
        s = settings
        if not self.in_flight or s.depth or s.reuse_unchanged_frame:
            return False
        return not self.counted() or self.counted_frames_fit_in_flight

    @functools.cached_property
    def counted_frames_fit_in_flight(self) -> bool:
        """Whether the counted route's estimate with a second frame in flight (a second slot's per-Gaussian and
        per-pixel buffers) fits the device: the route itself needs only one (`check_scene_fits`)."""
        return _fits(self.scene, self.device, self._frame_size, counted=True, in_flight=True)

    @torch.inference_mode()
    def render_stream(
        self, cameras: Iterable[Camera], settings: RenderSettings | None = None,
        futures: Iterable[list[Camera] | None] | None = None,
    ) -> Iterator[RenderOutput]:  # fmt: skip
        """Render `cameras` in order, with one frame in flight: frame k + 1 is launched before frame k is checked
        and handed over, so the host's work for one frame overlaps the GPU's work on the one before, and no frame
        waits on its own sync (its counts are read a frame later, from pinned memory).

        Every frame is exact, as with `render`: one whose pairs did not fit is binned again before it is yielded.
        An output is valid until the generator is resumed (as `render`'s until the next call). Settings that
        `streams` declines render one by one through `render`, with `futures` (the cameras ahead of each, for
        temporal reuse); so do the frames a temporal window serves, once the frame in flight is handed over.
        Stats are not synced: `stats.stage_ms` is empty; read `output.timer`."""
        settings = self._checked(settings)
        futures = iter(futures) if futures is not None else None
        if not self.streams(settings):
            for cam in cameras:
                yield self.render(cam, settings, sync_stats=False, future=next(futures) if futures else None)
            return
        pending = None
        cuda = self.device.type == "cuda"
        with torch.cuda.device(self._device_index) if cuda else contextlib.nullcontext():
            for cam in cameras:
                future = next(futures) if futures else None
                if self.temporal.wants_window(cam, settings, future is not None, self.scene_radius):
                    if pending is not None:
                        yield self._finish(pending)
                        pending = None
                    yield self._render(cam, settings, False, future, use_window=True)
                    continue
                launched = self._launch(cam, settings, 0 if pending is None else 1 - pending.slot, future)
                if pending is not None:
                    yield self._finish(pending)
                pending = launched
            if pending is not None:
                yield self._finish(pending)

    def _launch(
        self, camera: Camera, settings: RenderSettings, slot: int, future: list[Camera] | None = None
    ) -> _Launched:
        """A streamed frame's GPU work, enqueued in `slot` (no host sync). A streamed frame is a plain one:
        `future` (the cameras ahead) only tells the temporal cache what the frame was given."""
        check_image_size(camera.width, camera.height)
        self.temporal.stats.frames += 1
        f, src, timer, ran = self._start(camera, settings, future, slot, use_window=False)
        if f.counted:  # it has read its counts already, and will not bin again
            f.let_go()
        else:
            self._host_totals[slot].copy_(f.ordered.totals, non_blocking=True)
        timer.stop()  # recorded after the copy: once it has completed, the totals are in pinned memory
        return _Launched(f, src, camera, settings, timer, slot, ran,
                         self._counted_frames - 1 if f.counted else -1, self._starts)  # fmt: skip

    def _finish(self, p: _Launched) -> RenderOutput:
        """Wait for a launched frame, check its pairs (binning it again if they did not fit), and hand it over.
        A frame binned again is timed to the end of that work, in its own timer, as `render` times it: its end
        then comes after the next frame's launch (whose work the GPU ran first), which `handover_ms` accounts."""
        p.timer.wait()
        if p.frame.counted:  # sized by its counts: nothing to bin again; complete, so its longest list is in
            (n_visible, n_pairs, n_macro_pairs), rebin = p.frame.totals(), False
            lists_of = self._counted_lists(p.serial)
        else:
            *counts, longest = self._host_totals[p.slot].tolist()
            n_visible, n_pairs, n_macro_pairs = p.frame.counts_of(counts)
            lists_of = n_pairs, longest
            rebin = n_pairs > p.frame.capacity or n_macro_pairs > p.frame.pair_slots
        if rebin and self.device.type == "cuda":
            # the frame after it is in flight, on buffers and a graph that growing the capacity retires
            torch.cuda.synchronize(self.device)
        rebins = self.rebins
        f = self._fit_pairs(p.frame, p.src, p.camera, p.settings, n_visible, n_pairs, n_macro_pairs, p.timer,
                            lists_of, started=p.started)  # fmt: skip
        if rebin:
            p.timer.stop()
        stats = RenderStats(n_gaussians=self.n, n_visible=n_visible, n_pairs=n_pairs, max_tile_pairs=-1,
                            backend=self.backend, n_projected=f.n, source=p.src.kind,
                            adagscale_tau=self.params.tau[p.slot], ran=p.ran,
                            rebinned=self.rebins > rebins)  # fmt: skip
        return RenderOutput(f.rgb, f.alpha, f.rgba8, stats, f.tile_counts, None, f.tiles_touched, p.timer)

    def _frame_for(self, src, camera: Camera, settings: RenderSettings, slot: int = 0) -> Frame:
        """The stage objects for this frame: a recent frame's when nothing they bake in has changed (its
        `FrameKind`: buffer views, launch arguments, the captured graph), else new ones (renderer/frame_cache.py)."""
        # by the scene's size, not the frame's: a window's frames of a large scene run stage by stage anyway, and
        # sort exactly what they have (on the capacity route they ran 0.8x the default, BENCHMARKS.md section 12)
        counted = self.counted()
        kind = FrameKind(counted, src.n, camera.width, camera.height, baked_settings(settings), self._covars_version,
                         (self.pair_capacity.size, self.macro_capacity.size), self.launch)  # fmt: skip
        route = CountedFrame if counted else CapacityFrame
        if not counted and self.launch.macro != self._pair_form:
            # the two binning forms keep their pairs in buffers of their own (renderer/frame.py). The form left keeps
            # its buffers while they are small, so that a path going back to it finds its frames and their graphs
            # still valid (each change of form in the viewer's fly-through cost a capture, about 3.5 ms, and a
            # close-up's first frame per macro-tile another: BENCHMARKS.md, section 27); larger ones (4K per tile)
            # are let go rather than held beside the other form's
            left = TILE_PAIR_BUFFERS if self.launch.macro else MACRO_PAIR_BUFFERS
            if self.ws.nbytes(*left) > KEPT_FORM_BYTES:
                self._release_pairs()
            self._pair_form = self.launch.macro
        return self.frames.frame(slot, kind, src, settings, lambda: route(self, src, camera, settings, slot))


_DEFAULT_FIELDS = dict(RenderSettings().validate().__dict__)  # what `render(camera)` without settings renders with


@dataclass
class _NextFrame:
    """What a one-by-one frame leaves for the next `render`: its stage objects, run again straight away
    (`Renderer._start_again`: its graph replayed, or its stages launched) when `holds` finds that nothing the
    frame's kind bakes in has changed since, and no frame has started in between.

    Made only for a frame of the whole scene in slot 0, without depth, a temporal window or the reuse of an
    unchanged frame, that replayed or captured its graph, ran counted, or ran stage by stage with graphs off (not one
    of a kind's first frames, which `FrameGraphs.run` counts towards its capture), whose kind is the one the renderer
    would make for the next frame with the same settings and size (its launch configuration, capacities and
    covariances as the frame left them: `after`), with no graph waiting to be captured ahead. `holds` then asks only
    what can change between two calls: the settings' fields (a dict's comparison: every field, baked or not, of
    the object given, which may be another each frame, as the viewer's are), the image size, and what code outside
    may set on the renderer (its launch configuration, route, graphs switch, capacities, covariances, workspace).
    The frame then runs with the settings checked before, whose fields are the ones asked for."""

    frame: Frame
    src: object
    settings: RenderSettings  # checked (`Renderer._checked`)
    fields: dict  # a copy of its fields then
    starts: int  # the renderer's `_starts` after the frame: another frame started since, and this no longer holds
    frame_mode: str
    graphs: bool  # the renderer's graphs switch then

    @staticmethod
    def after(r: Renderer, f: Frame, src, camera: Camera, settings: RenderSettings, ran: str,
              previous: _NextFrame | None) -> _NextFrame | None:  # fmt: skip
        """For the frame `r` just rendered (`previous`: the one its `render` found holding, or None)."""
        graphs = r._graphs.enabled
        runs = (ran in (REPLAY, CAPTURE) and f.graph is not None) or ran == COUNTED or (ran == EAGER and not graphs)
        if not runs or src.kind != "full" or r._ahead:
            return None
        if settings.depth or settings.temporal_window > 1 or settings.reuse_unchanged_frame:
            return None
        k = f.kind
        if (k.launch is not r.launch or k.covars_version != r._covars_version or f.slot != 0
                or k.pair_capacity != (r.pair_capacity.size, r.macro_capacity.size)
                or (k.width, k.height) != (camera.width, camera.height)):  # fmt: skip
            return None
        if previous is not None and previous.frame is f:
            previous.starts = r._starts  # the frame ran with its settings (`Renderer._render`)
            return previous
        return _NextFrame(f, src, settings, dict(settings.__dict__), r._starts, r.frame_mode, graphs)

    def holds(self, r: Renderer, camera: Camera, settings: RenderSettings | None) -> bool:
        f, k = self.frame, self.frame.kind
        try:
            same = (_DEFAULT_FIELDS if settings is None else settings.__dict__) == self.fields
        except Exception:  # a field whose == is not a bool (an array given as the background): checked the long way
            same = False
        return (
            same
            and camera.width == k.width
            and camera.height == k.height
            and r._starts == self.starts
            and r.launch is k.launch
            and r.frame_mode == self.frame_mode
            and r._graphs.enabled == self.graphs
            and f.generation == r.ws.generation
            and k.covars_version == r._covars_version
            and k.pair_capacity == (r.pair_capacity.size, r.macro_capacity.size)
            and not r._ahead
        )


@dataclass
class _Launched:
    """A streamed frame enqueued and not yet checked (`Renderer.render_stream`)."""

    frame: Frame
    src: object
    camera: Camera
    settings: RenderSettings
    timer: StageTimer
    slot: int
    ran: str  # how it ran (`RenderStats.ran`)
    serial: int = -1  # a counted frame's place among them (`Renderer._counted_lists`)
    started: int = 0  # its serial among the frames started (`Renderer._starts`)
