"""The per-frame pipeline: a readable sequence of stage calls over a reusable workspace.

    1. project     per Gaussian: cull, EWA conic, depth, SH colour, exact tile count  Triton (kernels/project.py)
                   (AdaGScale, when on: the count at a shrunken binning threshold, lossy, with a tau
                   scaled to the frame: `adagscale_frame_tau`)
    2. order       visible Gaussians nearest first (one stable 32-bit sort), offsets   torch (kernels/order.py)
    3. bin         one (tile, Gaussian) pair per tile reached, in depth order          Triton (kernels/bin.py)
    4. sort        stable by tile id alone, int16 keys up to 32,767 tiles              torch (kernels/sort.py)
    5. tile_ranges [start, end) per tile                                               Triton (kernels/tile_ranges.py)
                   and the order the rasterizer takes the tiles in, longest first      Triton (kernels/schedule.py)
    6. rasterize   front-to-back compositing per tile, RGB float + alpha + RGBA8       Triton (kernels/rasterize.py)

Two routes through the stages (docs/architecture.md, "Two routes through the stages"):

- Capacity frames (scenes under COUNTED_FROM Gaussians). No stage waits for the host: the pair buffers have a
  capacity, every launch takes its length from the buffers, and the pair count stays on the device until the
  frame's one sync, at its end, reads it. A frame whose pairs did not fit grows the buffers ahead of need
  (`Capacity`) and bins again, once, from its stage-2 output (so it is still exact), and the capacity shrinks
  again after a run of frames that use a small part of it. Buffers live in one grow-only workspace, reused
  across frames, so such a frame allocates nothing large; with fixed shapes, a CUDA device replays the whole
  frame as one captured CUDA graph: one launch instead of about twenty.
- Counted frames (from COUNTED_FROM Gaussians on). Order syncs twice, for the visible and the pair counts,
  sorts only the visible Gaussians (or, when the last frame saw most of the scene, sorts them all and syncs
  once: DENSE_ORDER_FROM), and bin and sort run on pair tensors of exactly the pair count, allocated
  each frame (from torch's caching allocator), stage by stage.

`render` runs one frame and returns it; `render_stream` keeps one frame in flight over two workspace slots,
launching the next frame before it checks and hands over the last.

Temporal reuse (renderer/temporal.py) decides, before stage 1, which Gaussians a frame projects: the whole
scene, or a window's compacted set, whichever measured faster (renderer/window_choice.py); and may return the
last frame unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from kernels import SH_MAX, bin_config, list_class, project_block, schedule_scratch_shape, sh_layout
from scenes import GaussianScene

from .camera import Camera
from .memory import MemoryEstimate, check_fits, check_frame_pairs
from .settings import RenderSettings
from .temporal import SceneArrays, TemporalCache
from .timing import StageTimer
from .workspace import Workspace

BACKENDS = ("auto", "triton", "torch")


def resolve_backend(backend: str, device: torch.device) -> str:
    """ "auto": Triton on CUDA; the torch reference on CPU, where it is faster than Triton's interpreter
    (measured on the bundled scene at 256x256, 2 cores: see README.md)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "triton" if device.type == "cuda" else "torch"
    return backend


def kernel_module(backend: str):
    if backend == "triton":
        import kernels

        return kernels
    import kernels.reference

    return kernels.reference


@dataclass
class RenderStats:
    """What one frame cost and contained."""

    n_gaussians: int
    n_visible: int  # Gaussians that reach at least one tile
    n_pairs: int  # Gaussian-tile pairs after binning (exact, or AdaGScale's shrunken footprints when on)
    max_tile_pairs: int  # longest tile list
    stage_ms: dict[str, float] = field(default_factory=dict)  # per stage; "total" included
    backend: str = ""
    n_projected: int = -1  # Gaussians stage 1 ran on (fewer than n_gaussians inside a temporal window)
    source: str = "full"  # "full" | "window" (a temporal window's set) | "reused" (the last frame, unchanged)
    adagscale_tau: float | None = None  # the tau AdaGScale binned this frame with (`adagscale_frame_tau`)


@dataclass
class RenderOutput:
    """One frame. Tensors are views of the renderer's workspace: clone them to keep past the next frame."""

    image: Tensor  # [H, W, 3] float32, background included
    alpha: Tensor  # [H, W] float32 coverage (1 - final transmittance)
    rgba8: Tensor | None  # [H, W, 4] uint8 (RGB clamped to [0, 1], A = coverage)
    stats: RenderStats
    tile_counts: Tensor  # [n_ty, n_tx] int32 Gaussians per tile (for the heat-map view)
    depth: Tensor | None = None  # [H, W] float32 expected depth (settings.depth); 0 where coverage < 1/255
    tiles_touched: Tensor | None = None  # [n_projected] int32 tiles per projected Gaussian (0 = culled)
    timer: StageTimer | None = None  # the frame's stage times (read once the GPU has finished it)


def prepare_covariances(quats: Tensor, log_scales: Tensor, scale_modifier: float = 1.0) -> Tensor:
    """View-independent 3D covariances R S^2 R^T, upper triangle (xx, xy, xz, yy, yz, zz): [N, 6].

    Computed once at load (and when the scale modifier changes), never per frame.
    """
    q = torch.nn.functional.normalize(quats, dim=1)
    w, x, y, z = q.unbind(1)
    R = torch.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        dim=1,
    ).reshape(-1, 3, 3)  # fmt: skip
    s = torch.exp(log_scales) * scale_modifier
    M = R * s[:, None, :]  # R S
    cov = M @ M.transpose(1, 2)
    return torch.stack(
        [cov[:, 0, 0], cov[:, 0, 1], cov[:, 0, 2], cov[:, 1, 1], cov[:, 1, 2], cov[:, 2, 2]], dim=1
    ).contiguous()


PREPARE_CHUNK = 1 << 20  # Gaussians prepared at a time: bounds the load's transients (about 200 bytes a Gaussian)


def prepare_scene(scene: GaussianScene, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The renderer's prepared copy on `device`: (means [N,3], opacities [N], sh [N,K,3] SH_DTYPE (fp16), laid out
    coefficient-major (kernels/buffers.py `sh_layout`), covariances [N,6]).

    Activation, covariances and the SH copy are made PREPARE_CHUNK Gaussians at a time, so the load's
    temporaries (the raw quaternions and log-scales on the device, the rotation matrices) stay a few hundred MB
    whatever N; on a 24M-Gaussian scene, preparing it whole had needed about 5 GB beyond the prepared copy.
    Means are used as stored (no copy when the scene is already on `device`).

    The SH coefficients are kept in fp16 (kernels/buffers.py `SH_DTYPE`: half of float32's bytes, which were
    most of what stage 1 reads; the scene itself keeps its float32). A coefficient fp16 cannot hold (|c| of
    65520 and more, which it would make infinite) is clamped to +-SH_MAX (65504), with one warning giving how
    many Gaussians had one. The Gaussian is kept, as `drop_invalid` keeps an infinite opacity logit by clamping
    it: a coefficient that large saturates the colour either way (the record clamps colours to fp16's range too).
    NaN stays NaN (`drop_invalid` removes those rows first, in `Renderer`)."""
    n = len(scene)
    means = _aligned(scene.means.to(device).contiguous())
    opacities = torch.empty(n, dtype=torch.float32, device=device)
    covars = torch.empty(n, 6, dtype=torch.float32, device=device)
    sh = sh_layout(n, scene.sh.shape[1], device)  # a new tensor: 16-byte aligned
    clamped = torch.zeros((), dtype=torch.int64, device=device)  # Gaussians with a coefficient fp16 cannot hold
    for a in range(0, n, PREPARE_CHUNK):
        b = min(a + PREPARE_CHUNK, n)
        # the raw rows this step needs, on the device (the means and SH rows are not read here)
        part = replace(scene, means=scene.means[a:b], quats=scene.quats[a:b].to(device),
                       log_scales=scene.log_scales[a:b].to(device),
                       opacity_logits=scene.opacity_logits[a:b].to(device), sh=scene.sh[a:b])  # fmt: skip
        opacities[a:b] = part.activated().opacities  # the one activation (GaussianScene.activated)
        covars[a:b] = prepare_covariances(part.quats, part.log_scales)
        rows = sh[a:b]
        rows.copy_(scene.sh[a:b])  # rounded to fp16; +-inf beyond its range
        clamped += torch.isinf(rows).flatten(1).any(1).sum()
        rows.clamp_(-SH_MAX, SH_MAX)
    n_clamped = int(clamped)  # a load-time sync, once
    if n_clamped:
        warnings.warn(f"scene: {n_clamped:,} of {n:,} Gaussians have SH coefficients beyond float16's range: "
                      f"clamped to +-{SH_MAX:g}", stacklevel=2)  # fmt: skip
    return means, opacities, sh, covars


def _aligned(t: Tensor) -> Tensor:
    """t at a 16-byte aligned address: Triton compiles a kernel separately for pointers that are not (a scene that
    is a view into a larger tensor), which the warm-up's buffers would not cover (renderer/warmup.py). The SH copy
    needs no check: it is always a new fp16 tensor, and the allocator aligns those."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


# Frames of at least this many Gaussians run counted: two syncs, sorts of exactly the visible Gaussians and the
# pairs binned, launched stage by stage. Smaller ones run on capacities, one sync, replayed as CUDA graphs.
# Measured on composites (BENCHMARKS.md, section 10): graphs won by 1.1-1.6x at 1M and 2M, the two were even
# at 3M, and counted frames won the 6M and 24M fly-overs by 1.4-1.5x (overviews even).
COUNTED_FROM = 4_000_000
FRAME_MODES = ("auto", "graph", "counted")
# Counted frames whose last frame saw at least this fraction of the scene sort every depth, the culled ones last,
# instead of finding the visible ones first (kernels/order.py `depth_order_counted`): on the 24M overview, which
# sees them all, finding them (a scan, a sync, two gathers) took 0.6 ms of a 2.2 ms stage; a sort costs about
# 0.05 ms a million keys on the H200, so the culled keys cost less than that up to about half the scene culled.
DENSE_ORDER_FROM = 0.5


def runs_counted(n: int, frame_mode: str) -> bool:
    """Whether the frames of a scene of n Gaussians run counted: by its size, or as `frame_mode` forces."""
    assert frame_mode in FRAME_MODES, frame_mode
    return frame_mode == "counted" or (frame_mode == "auto" and n >= COUNTED_FROM)


def check_scene_fits(scene: GaussianScene, device: torch.device | str | None = None,
                     frame_size: tuple[int, int] | None = None) -> MemoryEstimate:  # fmt: skip
    """Raise OutOfDeviceMemoryError (one line) if a Renderer of `scene` rendering `frame_size` frames would not
    fit on `device` (None: the one a Renderer would choose); the estimate otherwise. Renderer calls it first;
    commands call it before work of their own (a window, a video encoder)."""
    device = choose_device(device)
    w, h = frame_size or (None, None)
    return check_fits(len(scene), scene.sh.shape[1], w, h, device, counted=runs_counted(len(scene), "auto"))


CAPTURE_AFTER = 3  # frames in a row of one kind before it is captured as a graph (>= 2: see Renderer._capture)
MAX_FRAMES = 6  # frames' stage objects (and graphs) kept, one per image size, settings and slot; oldest dropped first
# Workspace slots: `render` uses slot 0; `render_stream` alternates 0 and 1, so that the frame in flight and the
# frame handed over never share a buffer they hand over (scratch is shared: `_Frame`).
SLOTS = 2
# The pair buffers, as many slots as the capacity: keys and ids as binned, sorted keys, the sort's permutation,
# sorted ids (`_Frame.pairs`)
PAIR_BUFFERS = ("pair_keys", "pair_ids", "sorted_keys", "sort_perm", "sorted_ids")


class Capacity:
    """The length of buffers that hold a per-frame count known only on the device (the pairs).

    The frame sizes its launches by the capacity instead of waiting for the count; at its end the count is
    read (the frame's one sync). When the count did not fit, the frame bins again once, into buffers grown
    ahead of need: to HEADROOM x the count, and at least STEP x the old size, so that a view growing denser
    frame after frame (a fly-in) grows a few times in geometric steps instead of on every few frames. Each
    growth is a new kind of frame for CUDA graphs, which costs a capture (`Renderer._replay`); each frame that
    did not fit costs one rebin. After SHRINK_AFTER frames in a row that used under 1/SHRINK_BELOW of it, it
    shrinks to HEADROOM x their largest count (sorting idle capacity costs time).

    NOTE: the steps trade memory for fewer growths: the capacity ends within STEP x the largest count of a path
    (x HEADROOM right after a growth), and every pair slot costs 20 bytes of buffers and 18 of the sort's scratch
    (renderer/memory.py)."""

    HEADROOM = 1.2
    STEP = 1.5
    SHRINK_AFTER = 30
    SHRINK_BELOW = 3
    MINIMUM = 1024

    def __init__(self) -> None:
        self.size = 0  # 0 until the first frame measures its need
        self.growths = 0  # times it grew (a rebin and a new kind of frame each)
        self._low_frames = 0
        self._recent = 0

    def fits(self, count: int) -> bool:
        return count <= self.size

    def grown(self, count: int) -> int:
        """The size `grow(count)` makes it."""
        step = int(self.size * self.STEP) if self.size else 0
        return max(int(count * self.HEADROOM), step, self.MINIMUM)

    def grow(self, count: int) -> None:
        """Make room for `count` and more (called when it did not fit)."""
        self.size = self.grown(count)
        self.growths += 1
        self._low_frames = self._recent = 0

    def observe(self, count: int) -> None:
        """After a frame whose count fitted: shrink after a long enough run of frames that used little of it."""
        if count * self.SHRINK_BELOW >= self.size:
            self._low_frames = self._recent = 0
            return
        self._low_frames += 1
        self._recent = max(self._recent, count)
        if self._low_frames >= self.SHRINK_AFTER:
            self.size = max(int(self._recent * self.HEADROOM), self.MINIMUM)
            self._low_frames = self._recent = 0


def adagscale_frame_tau(settings: RenderSettings, width: int, height: int, visible: int) -> float:
    """AdaGScale's tau for a frame of width x height pixels in which `visible` Gaussians reach a tile:
    min(adagscale_tau, adagscale_budget x pixels / visible).

    Why it scales. A pair AdaGScale drops removes Gaussian i from every pixel p of one tile; that changes p's
    colour by T_i(p) alpha_i(p) (c_i - B_i(p)), with T_i the transmittance in front of i and B_i the colour
    composited behind it. So p's error is at most the colour-weighted alpha that p's dropped pairs carried (the
    weight w_i bounds |c_i - B_i| for colours in [0, 1]), and, summed over the frame's P pixels,
        sum_p |dC(p)| <= sum_i S_i <= V tau,
    where S_i <= tau is Gaussian i's score, the colour-weighted alpha mass of its dropped annulus in pixels
    (kernels/_device.py), and V the visible Gaussians. With a fixed tau that bound grows with V / P, the
    Gaussians per pixel: a scene drawn small, a composite seen whole. Measured, the error grew with them too
    (BENCHMARKS.md, sections 12-14: the 24M overview, 11.6 Gaussians per pixel, fell under the 40 dB floor at
    tau 0.1 where the 6M overview, 2.9 per pixel, kept 45.5 dB). A tau of budget x P / V caps the bound at
    `budget` of alpha per pixel on average, whatever the density; where the Gaussians are sparse (objects at
    1080p: 0.05 per pixel) adagscale_tau, the per-Gaussian cap, decides alone, as before.

    The bound itself is loose (occlusion and colours alike in front and behind keep the real error near 1/100
    of it), so the budget's value comes from measurements against exact frames (renderer/settings.py). V is
    the frame before's count (the kernel reads tau from the device, so a replayed graph takes the new value
    without a capture); a renderer's first frame counts every Gaussian of the scene, the safe side."""
    return min(settings.adagscale_tau, settings.adagscale_budget * width * height / max(visible, 1))


@dataclass(frozen=True)
class LaunchConfig:
    """The kernels' launch knobs for the next frame, chosen from the last frame's counts (measured rules in
    kernels/project.py, bin.py and rasterize.py). None of them changes the image."""

    project_block: int = 128
    bin_block: int = 128
    bin_cols: int = 4
    lists: int = 0  # tile lists short (0), medium (1) or long (2): the rasterizer's configuration

    @staticmethod
    def after(previous: LaunchConfig, n: int, n_visible: int, n_pairs: int, n_tiles: int, tile: int) -> LaunchConfig:
        """The configuration for a frame like this one. The list class moves with hysteresis (`list_class`), so a
        frame near a threshold does not flip the rasterizer (and re-capture the frame's graph) back and forth."""
        footprint = n_pairs / max(n_visible, 1)
        lists = list_class(n_pairs / max(n_tiles, 1), footprint, tile, previous.lists)
        block, cols = bin_config(n_visible, footprint)
        return LaunchConfig(project_block(n), block, cols, lists)

    @staticmethod
    @functools.cache
    def reachable(n: int, n_tiles: int, tile: int, *, windows: bool = False) -> tuple[LaunchConfig, ...]:
        """Every configuration frames of n Gaussians on n_tiles tiles may run with: the first frame's, and what
        `after` chooses from there, its rule explored over grids of the counts (visible Gaussians 0..n, pairs per
        visible Gaussian 1..n_tiles; neighbouring pair counts at most 1.1x apart, finer than any of its classes)
        from each configuration found until no new one appears. The warm-up compiles every one
        (renderer/warmup.py), so a knob that `after` derives from these counts is warmed with no change here.
        `windows`: frames may project fewer than n Gaussians (a temporal window's set), which moves project_block
        alone: each configuration is also taken with every block that fewer Gaussians choose."""

        def grid(hi: int, ratio: float) -> list[float]:
            values, v = {1.0, float(hi)}, 1.0
            while v < hi:
                values.add(v)
                v *= ratio
            return sorted(values)

        # (visible, pairs): whole visible counts, pairs per visible Gaussian on a float grid (the list class turns
        # on fractions of a tile per Gaussian: kernels/rasterize.py `list_class`)
        counts = [(0, 0)] + [(int(v), int(int(v) * p)) for v in grid(n, 1.25) for p in grid(n_tiles, 1.1)]
        found, frontier = {LaunchConfig()}, [LaunchConfig()]
        while frontier:
            prev = frontier.pop()
            for v, p in counts:
                nxt = LaunchConfig.after(prev, n, v, p, n_tiles, tile)
                if nxt not in found:
                    found.add(nxt)
                    frontier.append(nxt)
        if windows:
            blocks = {project_block(int(m)) for m in grid(n, 2.0)}
            found |= {replace(c, project_block=b) for c in found for b in blocks}
        return tuple(sorted(found, key=lambda c: (c.lists, c.project_block, c.bin_block, c.bin_cols)))


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
        self.graphs = (cuda and self.backend == "triton") if graphs is None else bool(graphs and cuda)
        # "auto": counted from COUNTED_FROM Gaussians on; "graph" / "counted" force one route (for measuring)
        self.frame_mode = "auto"
        self.dense_order_from = DENSE_ORDER_FROM  # counted frames sort all N from this visible fraction on
        self.ws = Workspace(self.device)
        self._capacities: dict[tuple, Capacity] = {}  # per pair kind (`_capacity_for`)
        self.pair_capacity = self._capacity_for(RenderSettings())  # slots of the pair buffers, this frame's kind
        self.launch = LaunchConfig()
        # the stage objects of recent frames, reused (with their captured graphs) while nothing they hold changed
        self._frames: dict[tuple, _Frame] = {}
        self._last_kind: tuple | None = None  # the kind of frame (`_Frame.kind`) replayed or run last
        self._kind_run = 0  # frames in a row of that kind, in either slot
        self.graph_replays = 0
        self.rebins = 0  # frames binned again because their pairs did not fit the capacity
        self._capture_stream: torch.cuda.Stream | None = None
        # per slot: the camera and background reach the device through one pinned staging copy per frame, and
        # a streamed frame's (visible, pairs) come back into pinned memory without a blocking read
        # (camera [24], background [3], AdaGScale's tau for the frame [1])
        self._host_params = [torch.empty(28, dtype=torch.float32, pin_memory=cuda) for _ in range(SLOTS)]
        self._params = [torch.empty(28, dtype=torch.float32, device=self.device) for _ in range(SLOTS)]
        self._frame_tau: list[float | None] = [None] * SLOTS  # the tau each slot's frame was given
        self._last_visible = self.n  # the last frame's visible Gaussians (AdaGScale's density; all at first)
        self._host_totals = [torch.zeros(2, dtype=torch.int64, pin_memory=cuda) for _ in range(SLOTS)]
        self.last_timer: StageTimer | None = None
        self.temporal = TemporalCache(self.ws)
        self._last_output: RenderOutput | None = None
        self._zero3 = torch.zeros(3, dtype=torch.float32, device=self.device)
        self._inf = torch.full((1,), float("inf"), dtype=torch.float32, device=self.device)

    @functools.cached_property
    def scene_radius(self) -> float:
        """The size that temporal reuse's distance settings scale with (computed on first use, not at load)."""
        return self.scene.robust_radius()

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
        the capacity route, two within order on the counted route.
        `future`: the cameras of the next frames when they are known (a camera path), for temporal reuse."""
        if self.device.type == "cuda":  # Triton launches on the current device: make it this renderer's
            with torch.cuda.device(self._device_index):
                return self._render(camera, settings, sync_stats, future)
        return self._render(camera, settings, sync_stats, future)

    def _render(
        self, camera: Camera, settings: RenderSettings | None, sync_stats: bool, future: list[Camera] | None,
        use_window: bool | None = None,
    ) -> RenderOutput:  # fmt: skip
        """One frame, waiting for its end. use_window: whether a window serves it (None: as measured)."""
        settings = (settings or RenderSettings()).validate()
        check_image_size(camera.width, camera.height)
        temporal = self.temporal
        temporal.stats.frames += 1
        if self._last_output is not None and temporal.unchanged(camera, settings):
            temporal.stats.frames_reused += 1
            last = self._last_output
            stats = RenderStats(**{**last.stats.__dict__, "stage_ms": {}, "source": "reused"})
            return RenderOutput(last.image, last.alpha, last.rgba8, stats, last.tile_counts, last.depth,
                                last.tiles_touched)  # fmt: skip
        if use_window is None:
            use_window = temporal.wants_window(camera, settings, future is not None, self.scene_radius)
        f, src, timer = self._start(camera, settings, future, slot=0, use_window=use_window)
        n_visible, n_pairs = f.totals()  # a capacity frame's one host sync (counted frames synced in order)
        f = self._fit_pairs(f, src, camera, settings, n_visible, n_pairs, timer)
        depth = None
        if settings.depth:  # the same lists and weights, depth in place of colour: sum(w z), then / sum(w)
            with timer.stage("depth"):
                depth = self._render_depth(f)
        timer.stop()

        stats = RenderStats(n_gaussians=self.n, n_visible=n_visible, n_pairs=n_pairs, max_tile_pairs=-1,
                            backend=self.backend, n_projected=f.n, source=src.kind,
                            adagscale_tau=self._frame_tau[0])  # fmt: skip
        if sync_stats:
            fill_stats(stats, f.tile_counts, timer)
        if settings.reuse_unchanged_frame:
            temporal.remember(camera, settings)
        self._last_output = RenderOutput(f.rgb, f.alpha, f.rgba8, stats, f.tile_counts, depth, f.tiles_touched,
                                         timer)  # fmt: skip
        return self._last_output

    def _start(
        self, camera: Camera, settings: RenderSettings, future: list[Camera] | None, slot: int, use_window: bool
    ) -> tuple[_Frame, object, StageTimer]:
        """A frame's work up to its host sync, enqueued in `slot`: (its stage object, its source, its timer).
        use_window: whether an asked-for temporal window serves it (`TemporalCache.wants_window`)."""
        self._last_output = None  # the workspace is about to change
        self._update_scale_modifier(settings.scale_modifier)
        timer = StageTimer(self.device)
        self.last_timer = timer
        # 0. temporal reuse: which Gaussians this frame projects (all, or a window's set; see temporal.py)
        reuse = settings.temporal_window > 1
        with timer.stage("cull") if reuse else contextlib.nullcontext():
            src = self.temporal.source(self.scene_arrays(), self.k, self.scene_radius, camera, settings, future,
                                       use_window=use_window)  # fmt: skip
        self._upload(camera, settings, slot)
        self.pair_capacity = self._capacity_for(settings)
        f = self._frame_for(src, camera, settings, slot)
        # a graph holds the whole scene's arrays: a window's frames run stage by stage
        graphs = not f.counted and self.graphs and src.kind == "full" and not settings.depth
        if graphs and self.pair_capacity.size:
            replayed = self._replay(f, timer)
        else:
            f.run(timer)
            replayed = False
        if reuse:  # its cost, for the window choice; a plain frame counts once it replays, where graphs do
            self.temporal.record(timer, steady=bool(replayed) or not graphs)
        return f, src, timer

    def _fit_pairs(self, f: _Frame, src, camera: Camera, settings: RenderSettings, n_visible: int, n_pairs: int,
                   timer: StageTimer) -> _Frame:  # fmt: skip
        """After a frame's totals are known: if its pairs did not fit, grow the capacity and bin again from stage
        2's output (still in the frame's slot), so the frame is exact; then pick the next frame's launch
        configuration. Returns the frame's stage object (a new one when it was binned again)."""
        if not f.counted:  # counted frames size their pair tensors exactly: no capacity to check
            if n_pairs > f.capacity:  # the capacity it was binned with (a streamed frame's may have grown since)
                if not self.pair_capacity.fits(n_pairs):
                    check_frame_pairs(n_pairs, n_visible, f.width, f.height, f.tile, self.device, counted=False,
                                      reference=self.backend == "torch", capacity=self.pair_capacity.grown(n_pairs),
                                      held=self.pair_capacity.size)  # fmt: skip
                    self.pair_capacity.grow(n_pairs)
                    f.pairs = f.sorted_keys = f.sorted_ids = None  # binned again below, into new buffers
                    self._release_pairs()
                f = self._frame_for(src, camera, settings, f.slot)
                f.run(timer, from_stage="bin")
                self.rebins += 1
            else:
                size = self.pair_capacity.size
                self.pair_capacity.observe(n_pairs)
                if self.pair_capacity.size < size:
                    self._release_pairs()  # the next frame allocates them at the smaller size
        self.launch = LaunchConfig.after(self.launch, f.n, n_visible, n_pairs, f.n_tx * f.n_ty, f.tile)
        self._last_visible = n_visible
        return f

    def _release_pairs(self) -> None:
        """Let go of the pair buffers before they are allocated again at another size: the frames (and graphs)
        binned into them are retired now, so that the new buffers do not come on top of the old ones (a frame
        still held elsewhere, such as a streamed one in flight, keeps its own until it is done)."""
        self._frames.clear()
        self.ws.drop(*PAIR_BUFFERS)

    def _upload(self, camera: Camera, settings: RenderSettings, slot: int = 0) -> None:
        """Camera [24], background [3] and AdaGScale's tau [1] into the slot's parameter buffer: one non-blocking
        copy from pinned memory (safe to refill when the slot is next used: by then the frame that read it was
        checked, which waits for it)."""
        host = self._host_params[slot].numpy()
        host[:24] = camera.packed_array()
        host[24:27] = settings.background
        tau = adagscale_frame_tau(settings, camera.width, camera.height, self._last_visible)
        host[27] = tau
        self._frame_tau[slot] = tau if settings.adagscale else None
        self._params[slot].copy_(self._host_params[slot], non_blocking=True)

    # ------------------------------------------------------------------ frames in flight

    def counted(self) -> bool:
        """Whether this scene's frames run counted (`runs_counted`)."""
        return runs_counted(self.n, self.frame_mode)

    def streams(self, settings: RenderSettings) -> bool:
        """Whether `render_stream` keeps frames of these settings in flight: plain frames on capacities (scenes
        under COUNTED_FROM, replayed as CUDA graphs on a GPU). Counted frames sync inside the frame anyway, and
        depth output and unchanged-frame reuse depend on the frame before: those go one by one. With a temporal
        window asked for, its plain frames stream and the frames a window serves go one by one."""
        s = settings
        return not self.counted() and not s.depth and not s.reuse_unchanged_frame

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
        settings = (settings or RenderSettings()).validate()
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
        f, src, timer = self._start(camera, settings, future, slot, use_window=False)
        self._host_totals[slot].copy_(f.order_out[4], non_blocking=True)
        timer.stop()  # recorded after the copy: once it has completed, the totals are in pinned memory
        return _Launched(f, src, camera, settings, timer, slot)

    def _finish(self, p: _Launched) -> RenderOutput:
        """Wait for a launched frame, check its pairs (binning it again if they did not fit), and hand it over.
        A frame binned again is timed to the end of that work, in its own timer, as `render` times it: its end
        then comes after the next frame's launch (whose work the GPU ran first), which `handover_ms` accounts."""
        p.timer.wait()
        n_visible, n_pairs = self._host_totals[p.slot].tolist()
        rebin = n_pairs > p.frame.capacity
        if rebin and self.device.type == "cuda":
            # the frame after it is in flight, on buffers and a graph that growing the capacity retires
            torch.cuda.synchronize(self.device)
        f = self._fit_pairs(p.frame, p.src, p.camera, p.settings, n_visible, n_pairs, p.timer)
        if rebin:
            p.timer.stop()
        stats = RenderStats(n_gaussians=self.n, n_visible=n_visible, n_pairs=n_pairs, max_tile_pairs=-1,
                            backend=self.backend, n_projected=f.n, source=p.src.kind,
                            adagscale_tau=self._frame_tau[p.slot])  # fmt: skip
        return RenderOutput(f.rgb, f.alpha, f.rgba8, stats, f.tile_counts, None, f.tiles_touched, p.timer)

    def _capacity_for(self, settings: RenderSettings) -> Capacity:
        """The pair capacity of frames like this one. AdaGScale (each tau and s_min) keeps its own: the sort,
        the sentinel fill and the tile ranges run over the whole capacity (kernels/sort.py), so a lossy frame
        that inherited the exact frames' capacity would sort as many slots as they do and gain nothing there
        from the pairs it removed (the capacity shrinks only below a third in use). Exact frames, whatever else
        changes, share one, as before; the buffers behind every capacity are the same grow-only ones."""
        s = settings
        key = (s.adagscale_tau, s.adagscale_s_min) if s.adagscale else ()
        return self._capacities.setdefault(key, Capacity())

    def _frame_for(self, src, camera: Camera, settings: RenderSettings, slot: int = 0) -> _Frame:
        """The stage objects for this frame: a recent frame's when nothing they hold has changed (buffer views,
        launch arguments, the captured graph), else new ones. Any buffer that moved retires them all. The source
        arrays are not part of the key: the stages read them from `f.src` when they run, and a graph is replayed
        only for frames of the whole scene, whose arrays are the renderer's own (the covariances aside)."""
        s = settings
        # by the scene's size, not the frame's: a window's frames of a large scene run stage by stage anyway, and
        # sort exactly what they have (on the capacity route they ran 0.8x the default, BENCHMARKS.md section 12)
        counted = self.counted()
        key = (slot, counted, src.n, camera.width, camera.height, s.sh_degree, s.near, s.far, s.eps2d, s.tile_size,
               s.rasterizer, s.tile_schedule, s.adagscale, s.adagscale_tau, s.adagscale_s_min, self._covars_version,
               self.pair_capacity.size, self.launch)  # fmt: skip
        f = self._frames.get(key)
        if f is not None and f.generation == self.ws.generation:
            f.src, f.settings = src, settings
            return f
        f = _Frame(self, src, camera, settings, counted, slot)
        f.kind = key[1:]  # the same kind in either slot: a stream's frames alternate slots
        if any(old.generation != self.ws.generation for old in self._frames.values()):
            self._frames.clear()  # their views (and graphs) point at buffers that moved
        while len(self._frames) >= MAX_FRAMES:
            self._frames.pop(next(iter(self._frames)))
        self._frames[key] = f
        return f

    # ------------------------------------------------------------------ CUDA graphs

    def _replay(self, f: _Frame, timer: StageTimer) -> bool:
        """The whole frame as one captured graph. A kind of frame is captured on its CAPTURE_AFTER-th frame in
        a row: a capture costs about one eager frame of host time, too much to pay for a configuration that a
        moving camera passes through (capturing on a kind's first or second frame left fly-overs 4-8% slower
        than no graphs). True when the frame was a replay of a graph captured before (its steady form)."""
        self._kind_run = self._kind_run + 1 if self._last_kind == f.kind else 1
        self._last_kind = f.kind
        if f.graph is None and self._kind_run < CAPTURE_AFTER:
            f.run(timer)
            return False
        captured = f.graph is None
        if captured:
            try:
                f.graph = self._capture(f)
            except Exception as e:  # a driver, torch or Triton that cannot capture: render eagerly from now on
                warnings.warn(f"CUDA graph capture failed ({str(e).splitlines()[0]}); rendering without graphs",
                              stacklevel=4)  # fmt: skip
                self.graphs = False
                f.run(timer)
                return False
        f.graph.replay()
        self.graph_replays += 1
        return not captured  # a frame that captured its graph also ran it once more: not what a replay costs

    def _capture(self, f: _Frame) -> torch.cuda.CUDAGraph:
        """Record the frame's launches as a graph, without running them.

        No warm-up run first, and not through `torch.cuda.graph`, whose entry synchronises the device and empties
        the allocator's caches (device and pinned host) on every capture: a stall of the frame in flight, and
        cudaMalloc calls again for the frames after. Neither is needed here. Every operation of the frame has
        run before the capture: the kind's earlier frames of the run ran eagerly (CAPTURE_AFTER >= 2), and the
        renderer's warm-up compiled its kernels (renderer/warmup.py). Each graph has a memory pool of its own for
        its temporaries (the sorts' scratch): one pool shared by every graph, through a handle the renderer kept,
        failed torch's allocator on the H200 once the graphs that used it had been dropped ("use_count > 0"
        asserted at the next capture: BENCHMARKS.md, section 15), and every frame then ran without graphs."""
        untimed = StageTimer(None)
        if self._capture_stream is None:
            self._capture_stream = torch.cuda.Stream(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(self._capture_stream):
            # thread_local: other threads may keep using CUDA while this one captures (render-to-video's encoder
            # thread waits on its frames' copy events; the default, "global", made that an error mid-capture)
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                f.run(untimed)
            finally:
                graph.capture_end()
        return graph

    # ------------------------------------------------------------------ depth output

    def _render_depth(self, f: _Frame) -> Tensor:
        """The frame's lists blended again with each record's colour replaced by its depth. The colour is fp16,
        so the depths go in divided by the largest visible one (relative precision 2^-11 either way)."""
        n, W, H = f.n, f.width, f.height
        records = self.ws.rows("depth_records", max(n, 1), 8)[:n]
        records.copy_(f.records)
        visible = f.tiles_touched > 0
        scale = torch.where(visible, f.depths, torch.zeros_like(f.depths)).amax().clamp_min(1e-30)
        halves = records[:, 6:8].view(torch.float16)  # rows of culled Gaussians are never read
        halves[:, 0] = torch.where(visible, f.depths / scale, torch.zeros_like(f.depths)).to(torch.float16)
        halves[:, 1:].zero_()
        rgb = self.ws.rows("depth_rgb", H * W, 3).view(H, W, 3)
        alpha = self.ws.buffer("depth_alpha", H * W, torch.float32).view(H, W)
        self.k.rasterize_tiles(
            f.sorted_ids, f.ranges, records, self._zero3, W, H, out=(rgb, alpha, None), **f.raster_options()
        )
        depth = self.ws.buffer("depth", H * W, torch.float32).view(H, W)
        covered = f.alpha >= 1.0 / 255.0
        torch.where(covered, rgb[..., 0] * scale / f.alpha.clamp_min(1.0 / 255.0), torch.zeros_like(f.alpha),
                    out=depth)  # fmt: skip
        return depth


class _Frame:
    """One frame's stages over the renderer's workspace: the list of stage calls, and nothing else.

    Every tensor is a view of a workspace buffer whose address does not change while the image size, the
    frame's Gaussian count and the capacities stay the same, which is what lets `run` be captured once as a
    CUDA graph and replayed with new camera parameters.

    Buffers are of two kinds. A slot's own (`_SlotBuffers`): what a frame hands over (the image, tile counts,
    tiles touched) and what binning it again needs after the frame after it was launched (stage 1's outputs,
    the order and offsets, the totals). Shared by both slots: the scratch that a frame uses only while its own
    stages run (the depths, the pairs and their sort, the ranges and the schedule). The slots' frames run one
    after the other on one stream (a frame binned again after the next one was launched is binned after it), so
    one set of scratch serves both: a set per slot cost 20 bytes per pair slot and 8 per Gaussian more."""

    STAGES = ("project", "order", "bin", "sort", "tile_ranges", "rasterize")

    def __init__(
        self, r: Renderer, src, camera: Camera, settings: RenderSettings, counted: bool = False, slot: int = 0
    ):
        self.r, self.src, self.settings, self.launch, self.slot = r, src, settings, r.launch, slot
        self.graph: torch.cuda.CUDAGraph | None = None  # this frame captured, once it is replayed
        self.kind: tuple = ()  # its `_frame_for` key without the slot (set there): what CAPTURE_AFTER counts
        # counted: order syncs for the visible and pair counts and the later stages size their tensors by them
        # (allocated per frame from torch's caching allocator), so nothing is sorted past what the frame has
        self.counted = counted
        self.counts: tuple[int, int] | None = None  # (visible, pairs) once a counted frame's order ran
        self.n, self.width, self.height = src.n, camera.width, camera.height
        tile = self.tile = settings.tile_size
        self.n_tx, self.n_ty = (self.width + tile - 1) // tile, (self.height + tile - 1) // tile
        self.degree = r.scene.sh_degree if settings.sh_degree is None else min(settings.sh_degree, r.scene.sh_degree)
        ws, shared, n, W, H = _SlotBuffers(r.ws, slot), r.ws, self.n, self.width, self.height
        # stage 1, per Gaussian
        self.records = ws.rows("records", n, 8)  # the blend records (kernels/buffers.py)
        self.depths = shared.buffer("depths", n, torch.float32)
        self.tiles_touched = ws.buffer("tiles_touched", n, torch.int32)
        self.bin_t = ws.buffer("bin_t", n, torch.float32)
        # stage 2, per Gaussian in depth order
        i32, i64, f32 = torch.int32, torch.int64, torch.float32
        self.key_dtype = r.k.key_dtype(self.n_tx * self.n_ty)
        self.capacity = 0  # counted frames size their pair tensors per frame
        if not counted:
            self.order_out = (
                shared.buffer("sorted_depths", n, f32), ws.buffer("order", n, i64),
                shared.buffer("ordered_counts", n, i32), ws.buffer("offsets", n, i64), ws.buffer("totals", 2, i64),
                r._inf,
            )  # fmt: skip
            # stages 3-4, per pair slot
            self.capacity = r.pair_capacity.size  # pair slots it bins into (the capacity when it was made)
            cp, kd = self.capacity, self.key_dtype
            self.pairs = tuple(shared.buffer(name, cp, dtype) for name, dtype in
                               zip(PAIR_BUFFERS, (kd, i32, kd, i64, i32), strict=True))  # fmt: skip
            self.sorted_keys, self.sorted_ids = self.pairs[2], self.pairs[4]
        # stages 5-6, per tile and pixel
        n_tiles = self.n_tx * self.n_ty
        self.ranges = shared.rows("ranges", n_tiles, 2, i32)
        self.tile_counts = ws.buffer("tile_counts", n_tiles, i32).view(self.n_ty, self.n_tx)
        self.schedule = None  # the tile each rasterizer program takes (longest lists first), when scheduled
        if settings.tile_schedule == "longest-first":
            self.schedule = shared.buffer("tile_schedule", n_tiles, i32)
            rows, cols = schedule_scratch_shape(n_tiles)
            self.schedule_hist = shared.buffer("tile_schedule_hist", rows * cols, i32).view(rows, cols)
        self.rgb = ws.rows("rgb", H * W, 3).view(H, W, 3)
        self.alpha = ws.buffer("alpha", H * W, f32).view(H, W)
        self.rgba8 = ws.rows("rgba8", H * W, 4, torch.uint8).view(H, W, 4)
        self.camera = r._params[slot][:24]
        self.background = r._params[slot][24:27]
        self.tau = r._params[slot][27:]  # AdaGScale's, for this frame
        self.generation = r.ws.generation  # the views above stay valid while it does not change

    def raster_options(self) -> dict:
        """The rasterizer's scheduling from the settings, the same for the colour and the depth pass."""
        s = self.settings
        return dict(tile_size=s.tile_size, variant=s.rasterizer, lists=self.launch.lists, schedule=self.schedule)

    def totals(self) -> tuple[int, int]:
        """(visible Gaussians, pairs) of the frame just run: the host sync (a counted frame knows them)."""
        if self.counted:
            assert self.counts is not None
            return self.counts
        n_visible, n_pairs = self.order_out[4].tolist()
        return n_visible, n_pairs

    # ------------------------------------------------------------------ the stages, in frame order

    def run(self, timer: StageTimer, from_stage: str = "project") -> None:
        """Every stage from `from_stage` on, each timed under its own name."""
        for name in self.STAGES[self.STAGES.index(from_stage) :]:
            with timer.stage(name):
                getattr(self, name)()

    def project(self, **tuning) -> None:
        s, src = self.settings, self.src
        self.r.k.project_gaussians(
            src.means, src.covars, src.opacities, src.sh, self.camera, self.width, self.height,
            sh_degree=self.degree, near=s.near, far=s.far, eps2d=s.eps2d, tile_size=self.tile,
            adagscale_tau=self.tau if s.adagscale else None, adagscale_s_min=s.adagscale_s_min,
            out=(self.records, self.depths, self.tiles_touched, self.bin_t),
            **{"block": self.launch.project_block, **tuning},
        )  # fmt: skip

    def order(self) -> None:
        if self.counted:
            # sort all N when the last frame saw most of the scene (`DENSE_ORDER_FROM`): one sync, no compaction
            compact = self.r._last_visible < self.r.dense_order_from * self.n
            self.order_idx, self.offsets, *counts = self.r.k.depth_order_counted(self.depths, self.tiles_touched,
                                                                                 compact=compact)  # fmt: skip
            self.counts = (counts[0], counts[1])
            # before bin allocates the pairs
            check_frame_pairs(counts[1], counts[0], self.width, self.height, self.tile, self.r.device, counted=True,
                              reference=self.r.backend == "torch")  # fmt: skip
            return
        self.r.k.depth_order(self.depths, self.tiles_touched, out=self.order_out)

    def bin(self, **tuning) -> None:
        if self.counted:  # tensors of exactly the pair count, every slot written: no sentinel fill
            n_pairs = self.counts[1]
            self.pairs = (torch.empty(n_pairs, dtype=self.key_dtype, device=self.r.device),
                          torch.empty(n_pairs, dtype=torch.int32, device=self.r.device))  # fmt: skip
            order, offsets = self.order_idx, self.offsets
        else:
            self.pairs[0].fill_(self.r.k.sentinel_key(self.key_dtype))  # the tail past the pair count sorts last
            order, offsets = self.order_out[1], self.order_out[3]
        self.r.k.bin_pairs(
            order, offsets, self.records, self.tiles_touched, self.width, self.height,
            tile_size=self.tile, bin_t=self.bin_t, out=self.pairs[:2],
            **{"block": self.launch.bin_block, "cols": self.launch.bin_cols, **tuning},
        )  # fmt: skip

    def sort(self) -> None:
        if self.counted:
            self.sorted_keys, self.sorted_ids = self.r.k.sort_pairs(*self.pairs[:2])
            return
        keys, ids, skeys, perm, sids = self.pairs
        self.r.k.sort_pairs(keys, ids, out=(skeys, perm, sids))
        self.sorted_keys = skeys

    def tile_ranges(self) -> None:
        self.r.k.tile_ranges(self.sorted_keys, self.n_tx * self.n_ty, out=self.ranges)
        if self.schedule is None:
            torch.sub(self.ranges[:, 1], self.ranges[:, 0], out=self.tile_counts.view(-1))
        else:  # the list lengths come with the schedule
            self.r.k.schedule_tiles(self.ranges, out=(self.schedule, self.tile_counts.view(-1), self.schedule_hist))

    def rasterize(self, **tuning) -> None:
        """`tuning`: launch knobs that override the settings' (variant, num_warps, step), for measuring them."""
        self.r.k.rasterize_tiles(
            self.sorted_ids, self.ranges, self.records, self.background, self.width, self.height,
            out=(self.rgb, self.alpha, self.rgba8), **{**self.raster_options(), **tuning},
        )  # fmt: skip


class _SlotBuffers:
    """The workspace's buffers of one slot: slot 0's under their names, slot k's under "name@k"."""

    def __init__(self, ws: Workspace, slot: int):
        self.ws, self.suffix = ws, f"@{slot}" if slot else ""

    def buffer(self, name: str, n: int, dtype: torch.dtype) -> Tensor:
        return self.ws.buffer(name + self.suffix, n, dtype)

    def rows(self, name: str, n: int, width: int, dtype: torch.dtype = torch.float32) -> Tensor:
        return self.ws.rows(name + self.suffix, n, width, dtype)


@dataclass
class _Launched:
    """A streamed frame enqueued and not yet checked (`Renderer.render_stream`)."""

    frame: _Frame
    src: object
    camera: Camera
    settings: RenderSettings
    timer: StageTimer
    slot: int


class CudaUnusableError(RuntimeError):
    """CUDA is reported available but fails at its first call (e.g. a driver older than the runtime)."""


def choose_device(device: torch.device | str | None) -> torch.device:
    """The render device: the one asked for, else CUDA when it works, else the CPU (with a warning when CUDA
    is reported available but fails its first call, as with a driver older than the runtime)."""
    if device is None:
        if not torch.cuda.is_available():
            return torch.device("cpu")
        try:
            torch.cuda.mem_get_info()
        except RuntimeError as e:
            warnings.warn(f"CUDA is unusable ({e}); rendering on the CPU", stacklevel=3)
            return torch.device("cpu")
        return torch.device("cuda")
    device = torch.device(device)
    if device.type == "cuda":
        try:
            torch.cuda.mem_get_info(device)
        except (RuntimeError, AssertionError) as e:
            raise CudaUnusableError(
                f"{device} is not usable ({str(e).splitlines()[0]}); render on the CPU with CUDA_VISIBLE_DEVICES=''"
            ) from None
    return device


def fill_stats(stats: RenderStats, tile_counts: Tensor, timer: StageTimer) -> RenderStats:
    """Resolve the device-side statistics of a frame (synchronises: not for the frame loop)."""
    stats.max_tile_pairs = int(tile_counts.max()) if tile_counts.numel() else 0
    stats.stage_ms = timer.elapsed_ms(wait=True) or {}
    return stats


MAX_IMAGE_SIDE = 8192


def check_image_size(width: int, height: int) -> None:
    """Refuse absurd sizes up front with a one-line message (never an allocation failure deep inside)."""
    if not (isinstance(width, int) and isinstance(height, int)) or width < 1 or height < 1:
        raise ValueError(f"image size {width}x{height}: width and height must be positive integers")
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise ValueError(f"image size {width}x{height}: each side must be at most {MAX_IMAGE_SIDE} pixels")
