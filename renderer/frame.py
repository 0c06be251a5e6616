"""One frame's stages over the renderer's workspace, one class per frame route (renderer/pipeline.py has the
routes' why):

- `Frame`: what both routes share: stage 1 (project), stages 5-6 (tile_lists, rasterize), their buffers, and
  the depth pass;
- `CapacityFrame`: order, bin, sort and the tile lists into workspace buffers of fixed capacities (macro-tile
  pairs, and the tiles' list entries); no stage waits for the host, so the whole frame can be captured as a CUDA
  graph (renderer/graphs.py);
- `CountedFrame`: order reads the visible and pair counts (its sync), and the rest of order, bin, sort and the
  tile lists run on tensors of exactly those counts, allocated each frame.

Every workspace tensor a frame holds is a view of a buffer whose address does not change while the image size,
the frame's Gaussian count and the capacities stay the same, which is what lets `run` be captured once as a
CUDA graph and replayed with new camera parameters.

Buffers are of two kinds. A slot's own (`SlotBuffers`): what a frame hands over (the image, tile counts, tiles
touched) and its totals. Shared by both slots: what a frame uses only while its own stages run (stage 1's outputs,
the order and offsets, the pairs and their sort, the ranges and the schedule). The slots' frames run one after the
other on one stream, so one set serves both: a set per slot cost 20 bytes per pair slot and 48-56 per Gaussian
more. A capacity frame binned again after the next one was launched runs its stages 1 and 2 again first, from its
own camera (renderer/pipeline.py `Renderer._fit_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from kernels import BlockOffsets, buffers, rasterizer_variants, schedule_scratch_shape, split_scratch_shape
from kernels.project import may_pre_cull

from .camera import Camera
from .memory import check_frame_pairs
from .settings import RenderSettings
from .timing import StageTimer
from .workspace import Workspace

if TYPE_CHECKING:
    from .pipeline import Renderer

# A pre-culling counted frame's projection runs programs for this many survivors a visible Gaussian of the last frame,
# and SURVIVORS_SLACK more, and for at least a SURVIVORS_FLOOR-th of the scene (`Frame._survivors_bound`)
SURVIVORS_PER_VISIBLE, SURVIVORS_SLACK, SURVIVORS_FLOOR = 2, 65536, 4

# The pair buffers' workspace names (`PairBuffers`'s first fields, in order), by how the frame bins (kernels/bin.py):
# per tile, as many slots as the list capacity, the ids as binned read through the sort's permutation being the
# lists; per macro-tile, as many as the pair capacity, then the tiles' lists (the list capacity) and the lists'
# chunk counts. Apart, so that frames of the two forms do not reallocate each other's buffers, and a path can keep
# both (renderer/pipeline.py).
TILE_PAIR_BUFFERS = ("pair_keys", "pair_ids", "sorted_keys", "sort_perm")
MACRO_PAIR_BUFFERS = ("macro_keys", "macro_entries", "sorted_macro_keys", "macro_perm", "sorted_entries", "tile_ids",
                      "list_scratch")  # fmt: skip
PAIR_BUFFERS = TILE_PAIR_BUFFERS + MACRO_PAIR_BUFFERS


class SlotBuffers:
    """The workspace's buffers of one slot: slot 0's under their names, slot k's under "name@k"."""

    def __init__(self, ws: Workspace, slot: int):
        self.ws, self.suffix = ws, f"@{slot}" if slot else ""

    def buffer(self, name: str, n: int, dtype: torch.dtype) -> Tensor:
        return self.ws.buffer(name + self.suffix, n, dtype)

    def rows(self, name: str, n: int, width: int, dtype: torch.dtype = torch.float32) -> Tensor:
        return self.ws.rows(name + self.suffix, n, width, dtype)


@dataclass
class OrderBuffers:
    """Stage 2's buffers on the capacity route (kernels/order.py `depth_order`, which takes them as `out()`)."""

    sorted_depths: Tensor | None  # [N] f32 scratch: the depths, nearest first (frames binned per tile)
    order: Tensor | None  # [N] i64 Gaussian indices, nearest first, the culled ones (+inf) last (per tile)
    offset_ends: Tensor | None  # [scan_blocks(N)] i64: per tile, the offsets' blocks' ends (`BlockOffsets`)
    offsets: Tensor  # [N] inclusive prefix sum of the counts: per tile i32 within each block, in that order; per
    # macro-tile i64, in index order (one i64 buffer: per tile, the first half of it as i32)
    totals: Tensor  # [3] i64 (visible Gaussians, tile pairs, macro-tile pairs), for the frame's one sync
    inf: Tensor  # [1] f32 +inf: the visible ones are the depths before it

    def out(self) -> tuple[Tensor, ...]:
        return self.sorted_depths, self.order, self.offset_ends, self.offsets, self.totals, self.inf


@dataclass
class PairBuffers:
    """Stages 3-5's pairs: the (key, value) pairs binned, stably sorted by key, then the tiles' lists (`ids`).
    Binned per tile, a value is a Gaussian id and the ids read through the permutation are the lists; per
    macro-tile, an entry (Gaussian id and tile mask, kernels/buffers.py), split into the lists by `tile_lists`. On
    the capacity route every field is a workspace buffer, the pairs' of the list capacity's length (per tile) or
    the pair capacity's (per macro-tile, and `ids` of the list capacity's); a counted frame's are tensors of
    exactly its counts, and the sort's own outputs. Binned per tile, nothing gathers the ids in sorted order: the
    rasterizer reads list entry i as values[perm[i]] (`ids` is `values`, `lists_perm` is `perm`), only for the
    entries it blends."""

    keys: Tensor | None  # [C] tile or macro-tile ids (int16 up to 65,535 of them, or a half's), in depth order
    values: Tensor | None  # [C] i32 Gaussian ids, or i64 entries, as binned
    sorted_keys: Tensor | None = None  # [C] the keys sorted, stable: depth order within a tile (macro-tile)
    perm: Tensor | None = None  # [C] i64 the sort's permutation (capacity route: a buffer of its own)
    sorted_values: Tensor | None = None  # [C] the values in that order
    ids: Tensor | None = None  # [L] i32 the tiles' lists of Gaussian ids: what the rasterizer reads
    scratch: Tensor | None = None  # [chunks * 32] i32 the lists' chunk counts (kernels/tile_lists.py)
    lists_perm: Tensor | None = None  # [L] i64 binned per tile: list entry i is ids[lists_perm[i]]


class Frame:
    """One frame's stages over the renderer's workspace: the list of stage calls, and nothing else. A route's
    subclass adds stages 2-4 (`order`, `bin`, `sort`) and their buffers (`_order_and_pair_buffers`)."""

    STAGES = ("project", "order", "bin", "sort", "tile_lists", "rasterize")
    counted = False  # whether order waits for the counts and the pairs are sized by them (`CountedFrame`)
    capacity = 0  # tile list entries it has room for (the list capacity when it was made; counted frames size
    # theirs per frame)
    pair_slots = 0  # macro-tile pair slots it bins into (the pair capacity when it was made)
    pairs: PairBuffers | None
    longest_list: Tensor  # [1] i64 the longest tile list, written by stage 5 (the rasterizer's launch class)
    longest: int | None = None  # it on the host, where read with the frame's counts (capacity frames' `totals`)

    def __init__(self, r: Renderer, src, camera: Camera, settings: RenderSettings, slot: int = 0):
        self.r, self.src, self.settings, self.launch, self.slot = r, src, settings, r.launch, slot
        self.graph: torch.cuda.CUDAGraph | None = None  # this frame captured, once it is replayed
        self.kind = None  # its `FrameKind` (set by `FrameCache.frame`): what CAPTURE_AFTER counts
        self.n, self.width, self.height = src.n, camera.width, camera.height
        tile = self.tile = settings.tile_size
        self.n_tx, self.n_ty = (self.width + tile - 1) // tile, (self.height + tile - 1) // tile
        self.degree = r.scene.sh_degree if settings.sh_degree is None else min(settings.sh_degree, r.scene.sh_degree)
        ws, shared, n, W, H = SlotBuffers(r.ws, slot), r.ws, self.n, self.width, self.height
        # What a frame reads only while its stages run is shared by the slots: the GPU runs a stream's frames in
        # order, one after the other, so the next frame's stage 1 overwrites it only once this frame's stages are
        # done. A capacity frame whose pairs did not fit is binned again after that (`Renderer._fit_pairs`), and
        # then runs its stages 1 and 2 again, from its own camera, where a frame was launched after it. So the
        # records, depths, macro-tile counts, binning thresholds (and on the capacity route the depth order and the
        # offsets) are one set for both slots: 40-44 bytes a Gaussian (48-56 on the capacity route) a slot less,
        # 1 GB of a 24M-Gaussian scene in flight. Its tile counts and tiles touched go out with its image
        # (`RenderOutput`): those stay the slot's.
        # stage 1, per Gaussian
        self.records = shared.rows("records", n, 8)  # the blend records (kernels/buffers.py)
        # the depths too: a frame binned per macro-tile keys its pairs by them and settles the ties in their order
        self.depths = shared.buffer("depths", n, torch.float32)
        # the pre-cull's survivors (kernels/project.py `frustum=`), where the launch configuration asks for it; a
        # window's set was culled for its cameras already, and has no extent of its own. The extents and the
        # survivors' buffer are made by the first frame of a scene that may pre-cull (FRUSTUM_FROM on, as the memory
        # estimate counts them): made by the first frame that culls, mid-flight, their allocation waited for the
        # frames in flight (the 24M fly-over's first culling frame 6.23 ms against 3.51 a pass later, the 6M's 2.61
        # against 1.20: BENCHMARKS.md section 58)
        self.frustum = self.block_bounds = None
        if src.kind == "full" and (self.launch.cull or may_pre_cull(n)):
            frustum = (r.extent, shared.buffer("survivors", n, torch.int32), shared.buffer("n_survivors", 1,
                       torch.int32))  # fmt: skip
            bounds = r.frustum_bounds  # (made with the extents: kernels/project.py `frustum_block_bounds`)
            if self.launch.cull:
                self.frustum, self.block_bounds = frustum, bounds
        # a counted frame that pre-culls gathers its visible Gaussians (`CountedFrame.order`), which are found by
        # their tile counts: of a Gaussian the pre-cull rejects, only the tile count is written
        self.tile_counts_only = self.counted and self.frustum is not None
        self.tiles_touched = ws.buffer("tiles_touched", n, torch.int32)
        # stages 2-5: the route's own; binned per macro-tile or per tile, as the launch configuration says
        self.macro = self.launch.macro
        # a counted frame binned per tile whose image has more tiles than int16 keys hold, but no more in either
        # half of its rows, bins and sorts the two halves apart with int16 keys (kernels/buffers.py `key_halves`:
        # 3840x2160): the tile row they split at, else None. Counted frames only: their pair tensors are sized by
        # the halves' counts, which the host reads with the others
        self.halves = r.k.key_halves(self.n_tx, self.n_ty) if self.counted and not self.macro else None
        # only where they are read: the macro-tile counts by frames binned per macro-tile (or, in their place, each
        # half's tiles where the frame bins its halves apart), AdaGScale's binning thresholds by its frames (exact
        # ones bin from the records' lo): 4 bytes a Gaussian each
        counts_apart = self.macro or self.halves is not None
        self.macros_touched = shared.buffer("macros_touched", n, torch.int32) if counts_apart else None
        self.bin_t = shared.buffer("bin_t", n, torch.float32) if settings.adagscale else None
        n_mx, n_my = r.k.macro_grid(self.n_tx, self.n_ty)
        self.key_dtype = r.k.MACRO_KEY_DTYPE if self.macro else r.k.key_dtype(self.n_tx * self.n_ty)
        if self.halves is not None:
            self.key_dtype = torch.int16
        self.pair_counts = self.macros_touched if counts_apart else self.tiles_touched  # order's prefix sum
        self._order_and_pair_buffers(ws, shared)
        # stages 5-6, per tile and pixel
        i32, f32 = torch.int32, torch.float32
        n_tiles = self.n_tx * self.n_ty
        self.ranges = shared.rows("ranges", n_tiles, 2, i32)
        self.tile_counts = ws.buffer("tile_counts", n_tiles, i32).view(self.n_ty, self.n_tx)
        self.schedule = None  # the tile each rasterizer program takes (longest lists first), when scheduled
        if settings.tile_schedule == "longest-first":
            self.schedule = shared.buffer("tile_schedule", n_tiles, i32)
            rows, cols = schedule_scratch_shape(n_tiles)
            self.schedule_hist = shared.buffer("tile_schedule_hist", rows * cols, i32).view(rows, cols)
        # the list class the rasterizer runs (a counted frame may take another: `CountedFrame.order`), and the
        # longest lists' parts (kernels/rasterize.py SPLIT_CONFIG), where the scalar loop splits them
        self.lists = self.launch.lists
        self.parts = self._kind_parts = self._parts_for(self.lists)
        # the images the settings ask for (`RenderSettings.outputs`): a display's frames hold 4 bytes a pixel, not 20
        floats, bytes = settings.outputs != "rgba8", settings.outputs != "float"
        self.rgb = ws.rows("rgb", H * W, 3).view(H, W, 3) if floats else None
        self.alpha = ws.buffer("alpha", H * W, f32).view(H, W) if floats else None
        self.rgba8 = ws.rows("rgba8", H * W, 4, torch.uint8).view(H, W, 4) if bytes else None
        params = r.params.on_device[slot]  # the frame's camera [24], background [3], AdaGScale's tau [1]
        self.camera, self.background, self.tau = params[:24], params[24:27], params[27:]
        self.generation = r.ws.generation  # the views above stay valid while it does not change

    def _order_and_pair_buffers(self, ws: SlotBuffers, shared: Workspace) -> None:
        raise NotImplementedError

    def _parts_for(self, lists: int) -> Tensor | None:
        """The split lists' parts buffer of list class `lists`, where this frame's rasterizer splits lists."""
        s, r = self.settings, self.r
        split = split_scratch_shape(self.tile, lists, self.n_tx * self.n_ty)
        scalar = s.rasterizer == "scalar" or (s.rasterizer == "auto" and "scalar" in rasterizer_variants())
        if split is None or self.schedule is None or not scalar or r.backend != "triton":
            return None
        return r.ws.rows("raster_parts", *split)

    @property
    def sorted_ids(self) -> Tensor | None:
        """[L] i32 the tiles' lists of Gaussian ids, in depth order within a tile (once tile_lists ran); binned per
        tile, the ids as binned, whose entry i is sorted_ids[lists_perm[i]]."""
        return self.pairs.ids if self.pairs is not None else None

    @property
    def lists_perm(self) -> Tensor | None:
        """[L] i64 the pair sort's permutation where the frame binned per tile (its lists are read through it), else
        None."""
        return self.pairs.lists_perm if self.pairs is not None else None

    def raster_options(self) -> dict:
        """The rasterizer's scheduling from the settings, and how it reads the lists (through the sort's permutation
        where the frame binned per tile): the same for the colour and the depth pass."""
        s = self.settings
        return dict(
            tile_size=s.tile_size,
            variant=s.rasterizer,
            lists=self.lists,
            schedule=self.schedule,
            parts=self.parts,
            perm=self.lists_perm,
            perm_halves=None if self.halves is None else (self.halves * self.n_tx, self.top),
            half=s.blend_precision == "fp16",
        )

    def totals(self) -> tuple[int, int, int]:
        """(visible Gaussians, tile pairs, macro-tile pairs) of the frame just run (a capacity frame's host
        sync); macro-tile pairs 0 where it binned per tile."""
        raise NotImplementedError

    def let_go(self) -> None:
        """The frame is done (rasterized, and its depth taken where asked): let go of what it allocated for itself
        alone. Capacity frames hold only workspace views: nothing."""

    def counts_of(self, totals: list[int]) -> tuple[int, int, int]:
        """`totals` as the frame's (visible, tile pairs, macro-tile pairs): order's third count is the tile pairs
        again where the frame binned per tile."""
        n_visible, n_pairs, n_binned = totals
        return n_visible, n_pairs, n_binned if self.macro else 0

    # ------------------------------------------------------------------ the stages, in frame order

    def run(self, timer: StageTimer, from_stage: str = "project") -> None:
        """Every stage from `from_stage` on, each timed under its own name. A whole frame starts with its camera's
        copy to the device (renderer/params.py `FrameParams.to_device`), which a captured graph then holds."""
        if from_stage == "project":
            self.r.params.to_device(self.slot)
        for name in self.STAGES[self.STAGES.index(from_stage) :]:
            with timer.stage(name, joined=name != from_stage):  # back to back: each begins where the last ended
                getattr(self, name)()

    def project(self, **tuning) -> None:
        s, src = self.settings, self.src
        self.r.k.project_gaussians(
            src.means, src.covars, src.opacities, src.sh, self.camera, self.width, self.height,
            sh_degree=self.degree, near=s.near, far=s.far, eps2d=s.eps2d, tile_size=self.tile,
            adagscale_tau=self.tau if s.adagscale else None, adagscale_s_min=s.adagscale_s_min,
            out=(self.records, self.depths, self.tiles_touched, self.macros_touched, self.bin_t),
            frustum=self.frustum, extent_scale=s.scale_modifier**2, halves=self.halves, ortho=s.ortho,
            only_tile_counts=self.tile_counts_only, survivors_bound=self._survivors_bound(), bounds=self.block_bounds,
            **{"block": self.launch.project_block, **tuning},
        )  # fmt: skip

    def _survivors_bound(self) -> int | None:
        """How many of a pre-culling counted frame's Gaussians its projection runs programs for
        (kernels/project.py `survivors_bound`): SURVIVORS_PER_VISIBLE times the last frame's visible ones, and some;
        more survivors are still projected, by programs that loop. At least a SURVIVORS_FLOOR-th of the scene: a
        view that jumps from an empty one to a dense one (a path's first frame after its empty end) has its
        survivors projected by a quarter of the programs of one a block, looping, where 512 programs of the
        empty view's estimate took the 24M fly-over's first frame 0.45 ms longer (BENCHMARKS.md, section 60).
        None (a program for every block of the scene) elsewhere: a capacity frame's graph holds its grid."""
        if not self.tile_counts_only:
            return None
        estimate = SURVIVORS_PER_VISIBLE * self.r._last_visible + SURVIVORS_SLACK
        return min(self.n, max(estimate, self.n // SURVIVORS_FLOOR))

    def _bin(self, order: Tensor | None, offsets: Tensor, **tuning) -> None:
        """Stage 3 over the route's order [V] (macro-tile pairs: the gathered indices, or None for all N in turn)
        and offsets [V], into `pairs.keys` and `pairs.values`."""
        self.r.k.bin_pairs(
            order, offsets, self.records, self.pair_counts, self.width, self.height,
            tile_size=self.tile, bin_t=self.bin_t,  # None: the records' t
            depths=self.depths if self.macro else None,
            out=(self.pairs.keys, self.pairs.values),
            **{"block": self.launch.bin_block, "cols": self.launch.bin_cols, **tuning},
            halves=None if self.halves is None else (self.halves, self.top),
        )  # fmt: skip

    def tile_lists(self) -> None:
        p = self.pairs
        if self.macro:
            self.r.k.tile_lists(p.sorted_keys, p.sorted_values, self.n_tx, self.n_ty,
                                out=(p.ids, self.ranges, p.scratch))  # fmt: skip
        else:  # binned per tile: the lists are the ids as binned, read through the sort's permutation
            p.ids, p.lists_perm = p.values, p.perm
        # binned per tile, the ranges of the tiles' runs of sorted keys: found by the schedule where there is one
        keys = None if self.macro else p.sorted_keys
        halves = None if self.halves is None else (self.top, self.halves * self.n_tx)
        if self.schedule is None:
            if keys is not None:
                self.r.k.tile_ranges(keys, self.n_tx * self.n_ty, out=self.ranges, halves=halves)
            torch.sub(self.ranges[:, 1], self.ranges[:, 0], out=self.tile_counts.view(-1))
            self.longest_list.copy_(self.tile_counts.amax(), non_blocking=True)  # (it may be pinned memory)
        else:  # the list lengths and the longest come with the schedule
            self.r.k.schedule_tiles(self.ranges, out=(self.schedule, self.tile_counts.view(-1), self.schedule_hist),
                                    longest=self.longest_list, sorted_keys=keys, halves=halves)  # fmt: skip

    def rasterize(self, **tuning) -> None:
        """`tuning`: launch knobs that override the settings' (variant, num_warps, step), for measuring them."""
        self.r.k.rasterize_tiles(
            self.sorted_ids, self.ranges, self.records, self.background, self.width, self.height,
            out=(self.rgb, self.alpha, self.rgba8), **{**self.raster_options(), **tuning},
        )  # fmt: skip

    # ------------------------------------------------------------------ depth output

    def render_depth(self) -> Tensor:
        """[H, W] f32: the frame's lists blended again with each record's colour replaced by its depth. The colour
        is fp16, so the depths go in divided by the largest visible one (relative precision 2^-11 either way)."""
        r, n, W, H = self.r, self.n, self.width, self.height
        records = r.ws.rows("depth_records", max(n, 1), 8)[:n]
        records.copy_(self.records)
        visible = self.tiles_touched > 0
        scale = torch.where(visible, self.depths, torch.zeros_like(self.depths)).amax().clamp_min(1e-30)
        halves = records[:, 6:8].view(torch.float16)  # rows of culled Gaussians are never read
        halves[:, 0] = torch.where(visible, self.depths / scale, torch.zeros_like(self.depths)).to(torch.float16)
        halves[:, 1:].zero_()
        rgb = r.ws.rows("depth_rgb", H * W, 3).view(H, W, 3)
        alpha = r.ws.buffer("depth_alpha", H * W, torch.float32).view(H, W)
        # float32 blending, and this pass's own coverage: the depth is the ratio of two sums of the same weights,
        # sum(w z) / sum(w), which the colour pass's fp16 pairs would take from two roundings of them (5e-3 apart
        # at a depth of 5 where float32 keeps 1e-3: tests/renderer/test_pipeline.py)
        r.k.rasterize_tiles(self.sorted_ids, self.ranges, records, r._zero3, W, H, out=(rgb, alpha, None),
                            **{**self.raster_options(), "half": False})  # fmt: skip
        depth = r.ws.buffer("depth", H * W, torch.float32).view(H, W)
        covered = alpha >= 1.0 / 255.0
        torch.where(covered, rgb[..., 0] * scale / alpha.clamp_min(1.0 / 255.0), torch.zeros_like(alpha),
                    out=depth)  # fmt: skip
        return depth


class CapacityFrame(Frame):
    """The capacity route: the pairs go into workspace buffers of `capacity` slots, and the counts stay on the
    device until `totals`, the frame's one sync, after its last stage."""

    def _order_and_pair_buffers(self, ws: SlotBuffers, shared: Workspace) -> None:
        # stage 2: per tile, per Gaussian in depth order; per macro-tile, the counts and offsets in index order
        i32, i64, f32, n = torch.int32, torch.int64, torch.float32, self.n
        offsets = shared.buffer("offsets", n, i64)
        self.ordered = OrderBuffers(
            None if self.macro else shared.buffer("sorted_depths", n, f32),
            None if self.macro else shared.buffer("order", n, i64),
            None if self.macro else shared.buffer("offset_ends", self.r.k.scan_blocks(n), i64),
            offsets if self.macro else offsets.view(i32)[:n], ws.buffer("totals", 4, i64), self.r._inf,
        )  # fmt: skip
        self.count_partials = shared.buffer("count_partials", self.r.k.count_blocks(n), i64) if self.macro else None
        # per tile, the offsets as `depth_order` writes them: the sums within blocks and the blocks' ends
        o = self.ordered
        self.tile_offsets = None if self.macro else BlockOffsets(o.offsets, o.offset_ends, buffers.SCAN_BLOCK)
        # the frame's longest tile list (stage 5) after its three counts: the one copy to the host brings all four
        self.longest_list = self.ordered.totals[3:4]
        # stages 3-5: per tile, pairs of the list capacity; per macro-tile, pairs of the pair capacity, then lists
        self.capacity = cl = self.r.pair_capacity.size
        kd = self.key_dtype
        if self.macro:
            self.pair_slots = cp = self.r.macro_capacity.size
            rows, cols = self.r.k.list_scratch_shape(cp)
            lengths, dtypes = (cp,) * 5 + (cl, rows * cols), (kd, i64, kd, i64, i64, i32, i32)
            self.pairs = PairBuffers(*(shared.buffer(name, length, dtype) for name, length, dtype in
                                       zip(MACRO_PAIR_BUFFERS, lengths, dtypes, strict=True)))  # fmt: skip
        else:
            self.pairs = PairBuffers(*(shared.buffer(name, cl, dtype) for name, dtype in
                                       zip(TILE_PAIR_BUFFERS, (kd, i32, kd, i64), strict=True)))  # fmt: skip

    def totals(self) -> tuple[int, int, int]:
        values = self.ordered.totals.tolist()
        self.longest = values[3]
        return self.counts_of(values[:3])

    def order(self) -> None:
        k, o = self.r.k, self.ordered
        if self.macro:  # the counts, and the offsets in index order: the pair keys hold the depths
            k.count_visible(self.depths, self.tiles_touched, self.pair_counts, compact=False,
                            out=(o.totals[:3], self.count_partials, None, None))  # fmt: skip
            k.index_offsets(self.pair_counts, None, out=o.offsets)
        else:
            k.depth_order(self.depths, self.tiles_touched, self.pair_counts, out=o.out())

    def bin(self, **tuning) -> None:
        self.pairs.keys.fill_(self.r.k.sentinel_key(self.key_dtype))  # the tail past the pair count sorts last
        if self.macro:
            self._bin(None, self.ordered.offsets, **tuning)
        else:
            self._bin(self.ordered.order, self.tile_offsets, **tuning)

    def sort(self) -> None:
        p = self.pairs  # binned per tile, the rasterizer reads the ids through the permutation
        self.r.k.sort_pairs(p.keys, p.values, depths=self.depths if self.macro else None,
                            out=(p.sorted_keys, p.perm, p.sorted_values), gather=self.macro)  # fmt: skip


# A counted frame of more than this many times the tile pairs of the frame whose longest list chose its list class
# takes the class of frames of about its own pairs (`CountedFrame._class_for`)
CLASS_JUMP = 4.0


class CountedFrame(Frame):
    """The counted route: order waits for the visible and pair counts, and the stages after it run on tensors of
    exactly those counts (allocated per frame from torch's caching allocator), so nothing is sorted past what the
    frame has."""

    counted = True

    def _order_and_pair_buffers(self, ws: SlotBuffers, shared: Workspace) -> None:
        self.counts: tuple[int, int, int] | None = None  # (visible, tile pairs, macro-tile pairs) once order ran
        self.pairs = PairBuffers(None, None)  # bin, sort and tile_lists put each frame's tensors in
        self.count_totals = ws.buffer("count_totals", 3, torch.int64)
        self.longest_list = self._longest_buffer = ws.buffer("longest_list", 1, torch.int64)  # stage 5's, read late
        self.count_partials = ws.buffer("count_partials", self.r.k.count_blocks(self.n), torch.int64)

    def totals(self) -> tuple[int, int, int]:
        assert self.counts is not None
        return self.counts

    def order(self) -> None:
        """The counts, and the visible Gaussians gathered (`count_visible`, queued before the wait, so the GPU
        gathers them while the host waits); the wait for the counts alone, through pinned memory (a full sync,
        with the depth sort queued before it, left the GPU idle 0.5-1 ms a frame: BENCHMARKS.md, section 21); then
        the order of exactly the visible Gaussians (`visible_order`). Where the last frame saw most of the scene
        (`DENSE_ORDER_FROM`) all N are sorted instead, queued before the wait. A frame binned per macro-tile sorts
        no Gaussians: it always gathers, and its offsets are those of the gathered ones (`index_offsets`).
        On the CPU the counts are a plain read."""
        r, n = self.r, self.n
        # frames binned per macro-tile always gather: they sort no Gaussians, so sorting the culled costs nothing to
        # save, and binning visits the visible ones alone (one launch form, warmed by the frames themselves). So do
        # frames that pre-cull (whose culled Gaussians have only their tile counts written: `tile_counts_only`),
        # which see under FRUSTUM_OFF of the scene, below the dense order's threshold anyway
        compact = self.macro or self.tile_counts_only or r._last_visible < r.dense_order_from * n
        # the visible Gaussians' depths and indices, gathered before the wait: allocated per frame, let go before
        # bin allocates the pairs (8 bytes a Gaussian, outside the frame's peak at the pair sort)
        self.gathered = (torch.empty(n if compact else 0, dtype=torch.float32, device=r.device),
                         torch.empty(n if compact else 0, dtype=torch.int32, device=r.device))  # fmt: skip
        # where kernels reach pinned memory, the counting kernel writes the totals the host reads itself, in place of
        # a copy after it (kernels/staging.py)
        mapped = r.maps_host
        totals = r.k.count_visible(self.depths, self.tiles_touched, self.pair_counts, compact=compact,
                                   out=(r.host_counts if mapped else self.count_totals, self.count_partials,
                                        *self.gathered), halves=self.halves is not None)  # fmt: skip
        if self.depths.is_cuda:
            if not mapped:
                r.host_counts.copy_(totals, non_blocking=True)
            r.counts_ready.record()
        if not compact and not self.macro:  # all N sorted: nothing waits for the counts, queued before the wait too
            self._order(self.n)
        if self.depths.is_cuda:
            r.counts_ready.synchronize()
        counts = (r.host_counts if mapped or self.depths.is_cuda else totals).tolist()
        self.counts = self.counts_of(counts)
        # its longest list (stage 5), read a frame late: written by its schedule into the pinned entry of its serial
        # where kernels reach pinned memory, else into its slot's buffer and copied there (`Renderer._counted_ran`)
        entries = r.longest_entries
        self.longest_list = entries[r._counted_frames % len(entries)] if mapped else self._longest_buffer
        self.lists, self.parts = self._class_for(counts[1]), self._kind_parts
        if self.lists != self.launch.lists:
            self.parts = self._parts_for(self.lists)
        # the pairs bin writes: tile pairs, or macro-tile pairs; binned in halves, the third count is the top's
        self.binned = counts[1] if self.halves is not None else counts[2]
        self.top = counts[2] if self.halves is not None else 0
        if self.macro:  # binned in index order: the offsets of the visible Gaussians gathered
            order = self.gathered[1][: counts[0]]
            offsets = torch.empty(counts[0], dtype=torch.int64, device=r.device)
            self.order_idx, self.offsets = order, r.k.index_offsets(self.pair_counts, order, out=offsets)
        elif compact:
            self._order(counts[0])
        self.gathered = None
        # before bin allocates the pairs, and after the order is queued: the GPU, idle since the counts, has work
        # while the host checks
        check_frame_pairs(counts[1], counts[0], self.width, self.height, self.tile, r.device, counted=True,
                          reference=r.backend == "torch", macro_pairs=self.counts[2])  # fmt: skip

    def _class_for(self, pairs: int) -> int:
        """The rasterizer's list class for this frame of `pairs` tile pairs. It comes from an earlier frame's longest
        list, read a frame or two late (the launch configuration's): at a path's dense start after its sparse end,
        or a jump into a dense region, that frame is sparse, and its class ran the 24M fly-over's densest frames at
        one warp a tile (rasterize 3.26 and 2.65 ms against 1.94 and 1.80, BENCHMARKS.md section 58). A frame of
        more than CLASS_JUMP times that frame's pairs takes the class last chosen for frames of about its own pairs
        instead (`Renderer.class_by_pairs`, by powers of two), where one was: no wait for its own longest list,
        which a second wait mid-frame cost more than it saved (section 36)."""
        r = self.r
        if pairs >= r.raster_slots and pairs > CLASS_JUMP * r.class_pairs:
            return r.class_by_pairs.get((self.n_tx * self.n_ty, pairs.bit_length()), self.launch.lists)
        return self.launch.lists

    def _order(self, m: int) -> None:
        """`visible_order` over m: the V visible Gaussians gathered, or all N. Their offsets in blocks, the sums
        within a block in int32 (a frame's pairs are at most memory.MAX_PAIRS); binned in halves, both halves' in
        one int64."""
        device, i64, k = self.r.device, torch.int64, self.r.k
        compact = m < self.n
        out = (torch.empty(m, dtype=torch.float32, device=device), torch.empty(m, dtype=i64, device=device),
               torch.empty(m if compact else 0, dtype=i64, device=device),
               torch.empty(k.scan_blocks(m), dtype=i64, device=device),
               torch.empty(m, dtype=torch.int32 if self.halves is None else i64, device=device))  # fmt: skip
        self.order_idx, self.offsets = self.r.k.visible_order(self.depths, self.pair_counts, compact=compact,
                                                              out=self.gathered + out,
                                                              halves=self.halves is not None)  # fmt: skip

    def bin(self, **tuning) -> None:
        # tensors of exactly the pair count, every slot written: no sentinel fill
        n_pairs, device, p = self.binned, self.r.device, self.pairs
        # both allocated before the last frame's are let go; its sorted pairs stay until sort replaces them
        values = torch.int64 if self.macro else torch.int32
        p.keys, p.values = (torch.empty(n_pairs, dtype=self.key_dtype, device=device),
                            torch.empty(n_pairs, dtype=values, device=device))  # fmt: skip
        self._bin(self.order_idx, self.offsets, **tuning)
        self.order_idx = self.offsets = None  # bin read them last: 16 bytes a visible Gaussian off the sort's peak

    def sort(self) -> None:
        p = self.pairs
        if self.macro:
            p.sorted_keys, p.sorted_values = self.r.k.sort_pairs(p.keys, p.values, depths=self.depths)
            p.keys = p.values = None  # the binned pairs are not read again
        else:  # the rasterizer reads the ids as binned through the permutation
            halves = None if self.halves is None else self.top
            p.sorted_keys, p.perm = self.r.k.sort_pairs(p.keys, p.values, gather=False, halves=halves)
            p.keys = None

    def let_go(self) -> None:
        """Its lists, allocated for this frame: a frame cache keeps up to MAX_FRAMES stage objects, and each held its
        last frame's lists, and its order and offsets until `bin` let go of them (the 24M fly-over's: 4 bytes a
        list entry (binned per tile: the ids and the sort's permutation, 12) and 16 a visible Gaussian, up to 300 MB
        an object), all of them counted in the renderer's peak.
        Let go once enqueued (the caching allocator hands the memory on only to work queued after it on the
        stream)."""
        p = self.pairs
        p.ids = p.sorted_values = p.values = p.perm = p.lists_perm = None

    def tile_lists(self) -> None:
        p, device = self.pairs, self.r.device
        if self.macro:
            rows, cols = self.r.k.list_scratch_shape(self.counts[2])
            p.ids = torch.empty(self.counts[1], dtype=torch.int32, device=device)
            p.scratch = torch.empty(rows * cols, dtype=torch.int32, device=device)
        super().tile_lists()
        p.sorted_keys = p.scratch = None  # the lists are what the rasterizer reads
        if self.macro:
            p.sorted_values = p.values = p.perm = None
