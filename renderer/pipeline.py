"""The per-frame pipeline: a readable sequence of stage calls over a reusable workspace.

    1. project   per Gaussian: cull, EWA conic, depth, SH colour, exact tile count      (kernels/project.py)
                 (AdaGScale, when on: the count at a shrunken binning threshold, lossy)
    2. bin       prefix sum of counts -> one (tile | depth) key per Gaussian-tile pair   (kernels/bin.py)
    3. sort      by (tile, depth)                                                        (kernels/sort.py)
    4. ranges    [start, end) per tile                                                   (kernels/tile_ranges.py)
    5. raster    front-to-back compositing per tile, RGB float + alpha + RGBA8           (kernels/rasterize.py)

One device-to-host sync per frame: the number of pairs, to size the sort. Buffers live in the Renderer's
workspace and are reused across frames (grow-only), so a frame allocates nothing large.

Temporal reuse (renderer/temporal.py) decides, before stage 1, which Gaussians a frame projects: the whole
scene, or a window's compacted set, optionally masked by occlusion; and may return the last frame unchanged.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import torch
from torch import Tensor

from scenes import GaussianScene

from .camera import Camera
from .memory import check_fits
from .settings import RenderSettings
from .temporal import TemporalCache
from .timing import StageTimer

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
    max_tile_pairs: int  # longest tile list (load-balance indicator)
    stage_ms: dict[str, float] = field(default_factory=dict)  # per stage; "total" included
    backend: str = ""
    n_projected: int = -1  # Gaussians stage 1 ran on (fewer than n_gaussians inside a temporal window)
    source: str = "full"  # "full" | "window" (a temporal window's set) | "reused" (the last frame, unchanged)


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


class Renderer:
    """Renders one scene from any camera. Keeps a device-side prepared copy and a reusable workspace.

    Args:
        scene: the scene (any device; copied to `device` once).
        device: where to render; default CUDA when available, else CPU.
        backend: "triton" (the kernels), "torch" (kernels.reference), or "auto" (see resolve_backend).
    """

    def __init__(self, scene: GaussianScene, *, device: torch.device | str | None = None, backend: str = "auto"):
        scene = scene.validate().drop_invalid(name="scene")  # readers already did; scenes built in memory did not
        self.device = choose_device(device)
        check_fits(len(scene), scene.sh.shape[1], device=self.device)  # one-line MemoryError before any work
        self.backend = resolve_backend(backend, self.device)
        self.k = kernel_module(self.backend)
        self.scene = scene
        self.n = len(scene)
        act = scene.to(self.device).activated()
        self.means = act.means.contiguous()
        self.opacities = act.opacities.contiguous()
        self.sh = act.sh.contiguous()
        self._quats = scene.quats.to(self.device)
        self._log_scales = scene.log_scales.to(self.device)
        self._scale_modifier = 1.0
        self.covars = prepare_covariances(self._quats, self._log_scales)
        # workspace: per-Gaussian buffers (fixed N), pair buffers (grow-only), image buffers (per size)
        self._proj = self.k.project_outputs(self.n, self.device)
        self._offsets = torch.empty(self.n, dtype=torch.int64, device=self.device)
        self._pair_capacity = 0
        self._pairs: tuple[Tensor, ...] = ()
        self._image_key: tuple[int, int] | None = None
        self._image: tuple[Tensor, ...] = ()
        self._raster_ws: dict = {}  # the rasterizer's chunk buffers (grow-only)
        self.last_timer: StageTimer | None = None
        self.temporal = TemporalCache()
        self._last_output: RenderOutput | None = None
        self._depth_ws: dict = {}  # the depth pass's buffers (grow-only)
        self._zero3 = torch.zeros(3, dtype=torch.float32, device=self.device)

    @functools.cached_property
    def scene_radius(self) -> float:
        """The size that temporal reuse's distance settings scale with (computed on first use, not at load)."""
        return self.scene.robust_radius()

    # ------------------------------------------------------------------ workspace

    def _ensure_pairs(self, n_pairs: int) -> tuple[Tensor, ...]:
        if n_pairs > self._pair_capacity or not self._pairs:
            cap = max(int(n_pairs * 1.25), 1024)
            i64 = dict(dtype=torch.int64, device=self.device)
            i32 = dict(dtype=torch.int32, device=self.device)
            # keys, ids (emitted); sorted keys, permutation, sorted ids
            self._pairs = (torch.empty(cap, **i64), torch.empty(cap, **i32), torch.empty(cap, **i64),
                           torch.empty(cap, **i64), torch.empty(cap, **i32))  # fmt: skip
            self._pair_capacity = cap
        return self._pairs

    def _ensure_image(self, width: int, height: int, tile: int) -> tuple[Tensor, ...]:
        if self._image_key != (width, height, tile):
            n_tiles = ((width + tile - 1) // tile) * ((height + tile - 1) // tile)
            self._image = (
                torch.empty(height, width, 3, dtype=torch.float32, device=self.device),
                torch.empty(height, width, dtype=torch.float32, device=self.device),
                torch.empty(height, width, 4, dtype=torch.uint8, device=self.device),
                torch.empty(n_tiles, 2, dtype=torch.int32, device=self.device),
            )
            self._image_key = (width, height, tile)
        return self._image

    def _update_scale_modifier(self, modifier: float) -> None:
        if modifier != self._scale_modifier:
            self.covars = prepare_covariances(self._quats, self._log_scales, modifier)
            self._scale_modifier = modifier

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
        frame later, when the GPU has finished) and the frame performs only the one pair-count sync.
        `future`: the cameras of the next frames when they are known (a camera path), for temporal reuse."""
        if self.device.type == "cuda":  # Triton launches on the current device: make it this renderer's
            with torch.cuda.device(self.device):
                return self._render(camera, settings, sync_stats, future)
        return self._render(camera, settings, sync_stats, future)

    def _render(
        self, camera: Camera, settings: RenderSettings | None, sync_stats: bool, future: list[Camera] | None
    ) -> RenderOutput:
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
        self._last_output = None  # the workspace is about to change
        k = self.k
        W, H, tile = camera.width, camera.height, settings.tile_size
        n_tx, n_ty = (W + tile - 1) // tile, (H + tile - 1) // tile
        degree = self.scene.sh_degree if settings.sh_degree is None else min(settings.sh_degree, self.scene.sh_degree)
        self._update_scale_modifier(settings.scale_modifier)
        rgb, alpha, rgba8, ranges = self._ensure_image(W, H, tile)
        timer = StageTimer(self.device)
        self.last_timer = timer

        # 0. temporal reuse: which Gaussians this frame projects (all, or a window's set; see temporal.py)
        with timer.stage("temporal"):
            src = temporal.source(self, camera, settings, future)
        n = src.n
        proj = tuple(buf[:n] for buf in self._proj)
        offsets = self._offsets[:n]
        # 1. project: cull, conic, depth, colour, exact tile counts
        with timer.stage("project"):
            cam = camera.packed(self.device)
            means2d, conic_opacity, depths, colors, tiles_touched, extents, bin_t = k.project_gaussians(
                src.means, src.covars, src.opacities, src.sh, cam, W, H,
                sh_degree=degree, near=settings.near, far=settings.far, eps2d=settings.eps2d, tile_size=tile,
                adagscale_tau=settings.adagscale_tau if settings.adagscale else None,
                adagscale_s_min=settings.adagscale_s_min, live=src.live, out=proj,
            )  # fmt: skip
        # 2. bin: exclusive prefix sum of counts (the frame's one host sync), then keys
        with timer.stage("bin"):
            torch.cumsum(tiles_touched, 0, dtype=torch.int64, out=offsets)
            n_pairs = int(offsets[-1]) if n else 0
            offsets -= tiles_touched
            keys_buf, ids_buf, skeys_buf, perm_buf, sids_buf = self._ensure_pairs(n_pairs)
            keys, ids = k.emit_tile_keys(
                means2d, conic_opacity, depths, tiles_touched, offsets, n_pairs, W, H,
                tile_size=tile, bin_t=bin_t, out=(keys_buf, ids_buf),
            )  # fmt: skip
        # 3. sort by (tile, depth)
        with timer.stage("sort"):
            sorted_keys, sorted_ids = k.sort_pairs(keys, ids, out=(skeys_buf, perm_buf, sids_buf))
        # 4. per-tile ranges
        with timer.stage("ranges"):
            k.tile_ranges(sorted_keys, n_tx * n_ty, out=ranges)
        # 5. rasterize front to back
        with timer.stage("rasterize"):
            background = torch.tensor(settings.background, dtype=torch.float32).to(self.device, non_blocking=True)
            k.rasterize_tiles(
                sorted_ids, ranges, means2d, conic_opacity, colors, extents, background, W, H,
                out=(rgb, alpha, rgba8), marks=src.marks, **self._raster_options(settings),
            )  # fmt: skip
        temporal.end_frame(src, tiles_touched)
        depth = None
        if settings.depth:  # the same lists and weights, depth in place of colour: sum(w z), then / sum(w)
            with timer.stage("depth"):
                depth = self._render_depth(settings, n, depths, sorted_ids, ranges, means2d, conic_opacity, extents,
                                           alpha, W, H)  # fmt: skip
        timer.stop()

        tile_counts = (ranges[:, 1] - ranges[:, 0]).reshape(n_ty, n_tx)
        stats = RenderStats(n_gaussians=self.n, n_visible=-1, n_pairs=n_pairs, max_tile_pairs=-1, backend=self.backend,
                            n_projected=n, source=src.kind)  # fmt: skip
        if sync_stats:
            fill_stats(stats, tiles_touched, tile_counts, timer)
            if src.live is not None:
                temporal.stats.gaussians_skipped = n - int(src.live.sum())
        temporal.remember(camera, settings)
        self._last_output = RenderOutput(
            image=rgb,
            alpha=alpha,
            rgba8=rgba8,
            stats=stats,
            tile_counts=tile_counts,
            depth=depth,
            tiles_touched=tiles_touched,
        )
        return self._last_output

    def _raster_options(self, settings: RenderSettings) -> dict:
        """The rasterizer's scheduling from the settings, the same for the colour and the depth pass."""
        return dict(
            tile_size=settings.tile_size, variant=settings.rasterizer, workspace=self._raster_ws,
            chunk=settings.chunk_size if settings.load_balance else None, subtile=8 if settings.subtile_cull else 16,
        )  # fmt: skip

    def _render_depth(self, settings, n, depths, sorted_ids, ranges, means2d, conic_opacity, extents, alpha, W, H):
        ws = self._depth_ws
        if ws.get("n", -1) < n:
            ws["colors"] = torch.empty(max(n, 1), 3, dtype=torch.float32, device=self.device)
            ws["n"] = n
        if ws.get("size") != (W, H):
            ws["rgb"] = torch.empty(H, W, 3, dtype=torch.float32, device=self.device)
            ws["alpha"] = torch.empty(H, W, dtype=torch.float32, device=self.device)
            ws["depth"] = torch.empty(H, W, dtype=torch.float32, device=self.device)
            ws["size"] = (W, H)
        colors = ws["colors"][:n]
        colors.copy_(depths[:, None].expand(n, 3))  # rows of culled Gaussians are never read
        self.k.rasterize_tiles(
            sorted_ids, ranges, means2d, conic_opacity, colors, extents, self._zero3, W, H,
            out=(ws["rgb"], ws["alpha"], None), **self._raster_options(settings),
        )  # fmt: skip
        covered = alpha >= 1.0 / 255.0
        depth = ws["depth"]
        torch.where(covered, ws["rgb"][..., 0] / alpha.clamp_min(1.0 / 255.0), torch.zeros_like(alpha), out=depth)
        return depth


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


def fill_stats(stats: RenderStats, tiles_touched: Tensor, tile_counts: Tensor, timer: StageTimer) -> RenderStats:
    """Resolve the device-side statistics of a frame (synchronises: not for the frame loop)."""
    counts = torch.stack([(tiles_touched > 0).sum(), tile_counts.max().to(torch.int64)]).tolist()
    stats.n_visible, stats.max_tile_pairs = int(counts[0]), int(counts[1])
    stats.stage_ms = timer.elapsed_ms(wait=True) or {}
    return stats


MAX_IMAGE_SIDE = 8192


def check_image_size(width: int, height: int) -> None:
    """Refuse absurd sizes up front with a one-line message (never an allocation failure deep inside)."""
    if not (isinstance(width, int) and isinstance(height, int)) or width < 1 or height < 1:
        raise ValueError(f"image size {width}x{height}: width and height must be positive integers")
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise ValueError(f"image size {width}x{height}: each side must be at most {MAX_IMAGE_SIDE} pixels")
