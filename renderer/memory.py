"""How much memory a Renderer needs for a scene, checked before any work starts.

`estimate_bytes()` adds up, buffer by buffer, what `Renderer` allocates on its device (renderer/pipeline.py) for a
scene and a frame size; `check_fits()` compares that with what the device has free (`torch.cuda.mem_get_info`
within the process's memory fraction, or MemAvailable of /proc/meminfo on the CPU) and raises
`OutOfDeviceMemoryError`, a one-line `MemoryError`, when it does not fit. The caching allocator's rounding and
other processes are outside it (MARGIN, FIXED_BYTES); the CUDA context is outside torch's memory altogether, and
`mem_get_info` already leaves it out of the free memory.

Terms (bytes; N Gaussians, K SH coefficients per channel, X pixels, T tiles, P tile pairs (list entries), M
macro-tile pairs, C the list capacity and D the pair capacity, V the visible Gaussians, kb bytes a pair key: 4 of
a macro-tile pair, 2 of a tile pair up to 65,535 tiles, else 4 (a counted frame binned in halves holds 2, counted
here as 4); the names are pipeline.py's):

| term      | what                                                                             | bytes               |
|-----------|----------------------------------------------------------------------------------|---------------------|
| scene     | means 12 (on the CPU the renderer shares the scene's own tensor)                 | 12 N                |
| prepared  | opacities 4, covariances 24, the SH in fp16 6 K (a copy on the CPU too); from     | N (28 + 6 K)        |
|           | FRUSTUM_FROM Gaussians on, the extents 4 (kernels/project.py `culls_frustum`)     | (+ 4 N              |
|           | and the pre-cull blocks' bounds, 32 bytes a block of FRUSTUM_BLOCK               |  + 32 N / 1,024)    |
| workspace | per slot: tiles_touched 4; rgb 12, alpha 4, rgba8 4 a pixel (as `outputs` asks:   | S (4 N + 20 X + 4 T)|
|           | 16 or 4 alone; the estimate takes all three); tile_counts 4 a tile; on the        |                     |
|           | capacity route totals 32 bytes; counted, the counts and the longest list 32 bytes |                     |
|           | and 24 a counting program (4,096 Gaussians)                                       |                     |
|           | shared by the slots (Frame.__init__): records 32, depths 4, macros_touched 4      | 44 N (+ 16 N)       |
|           | (frames binned per macro-tile), bin_t 4 (AdaGScale's frames; counted in whenever  |                     |
|           | the estimate is made before the settings are known); on the capacity route        |                     |
|           | offsets 8, order 8 (frames binned per tile);                                      |                     |
|           | ranges 8 T, tile_schedule 4 T and its histogram;                                  | 12 T                |
|           | from FRUSTUM_FROM Gaussians on, the pre-cull's survivors 4                        | (+ 4 N)             |
|           | on CUDA the longest lists' parts (rasterize's SPLIT_CONFIG: 16 MB at 8 px)      | (+ 16 MB)           |
|           | on the capacity route also sorted_depths 4, the offsets' block ends (and 24 bytes |  (+ 4 N             |
|           | a counting program where frames bin per macro-tile), the pair buffers:           |                     |
|           | keys kb, entries 8, sorted keys kb, permutation 8, sorted entries 8, chunk       |   + (28 + 2 kb) D   |
|           | counts 4 a slot; the tiles' lists: ids 4 an entry                                |   + 4 C)            |
| transient | a frame's largest temporaries: see `transient_bytes`                             |                     |
| graphs    | a captured graph's own pool keeps a frame's sort scratch reserved, one per slot  | S x the sorts' scratch|
| reference | the torch reference pipeline's temporaries (CPU only; measured at 1M Gaussians)  | 250 N               |

S, the slots: 2 on a GPU's capacity route (`render_stream` keeps a frame in flight), 1 for counted frames (scenes
of COUNTED_FROM Gaussians and up: they keep a frame in flight only where the estimate with 2 fits, `in_flight`)
and on a CPU (renderer/device.py `frames_in_flight`).
torch.sort of L keys of kb' bytes, stable, with its int64 indices (ATen's SortStable.cu): its initial indices
8 L, then CUB's alternate keys and indices (kb' + 8) L.

P, M and V are not known before a frame: V is taken as N (an overview sees everything), P as
max(2 N, min(16 N, 400 T)), M as MACRO_PAIRS_PER_PAIR P. Measured at 1920x1080, 8 px tiles (BENCHMARKS.md,
sections 8 and 13): objects of
94k-500k Gaussians reach 3-15 pairs a Gaussian close up (plant close 1.72M pairs for 114k), composites' overviews
1.7-1.8 (6M: 10.9M, 24M: 40.5M), fly-overs fewer. Very large splats reach more (fruit_drops, 4.7k Gaussians:
1.3M pairs, 37 MB of pair memory this misses; FIXED_BYTES covers it). The capacity route sizes its buffers up to
Capacity.STEP x P (it grows in geometric steps, renderer/launch.py).

Not counted: the depth view's buffers (32 N + 20 X while it is shown), a temporal window's compacted copy of the
arrays (up to 0.9 N (40 + 6 K), counted scenes only: smaller ones decline windows) and a scale modifier other
than 1 (a scaled copy of the covariances, 24 N).

Frames are checked again once their pairs are counted (`check_frame_pairs`): P above is a guess, and nothing
bounds the real count but N times the frame's tiles (Gaussians large on screen reach every tile), so a frame's
pairs get memory only after their count has been checked against what is free.

`tests/gpu/memory_check.py` measures the peaks on the GPU against these terms.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from kernels import count_blocks, rasterizer_variants, scan_blocks, schedule_scratch_shape, split_scratch_shape
from kernels.buffers import LIST_CHUNK
from kernels.constants import INT16_TILES
from kernels.project import FRUSTUM_BLOCK, FRUSTUM_FROM
from scenes.limits import mem_available, set_cap  # the one reader of MemAvailable and of the memory cap

from .device import frames_in_flight

PIXEL_BYTES = {"both": 20, "float": 16, "rgba8": 4}  # a frame's images a pixel, by `RenderSettings.outputs`
MARGIN = 1.1  # x the estimate: the caching allocator's rounding and fragmentation
FIXED_BYTES = 64 << 20  # small tensors, kernel arguments, the pinned staging buffers
NOMINAL_FRAME = (1920, 1080)  # the frame assumed when no size is known
CAPACITY_STEP = 1.5  # launch.Capacity.STEP: the pair capacity is at most this many times the pairs
PAIRS_PER_GAUSSIAN = (2.0, 16.0)  # the pairs' estimate: between these many a Gaussian ...
PAIRS_PER_TILE = 400.0  # ... and otherwise this many a tile
# macro-tile pairs per tile pair: an overview's small Gaussians reach one or two tiles of mostly one macro-tile
# (0.6-0.7 measured at 6M and 24M), a close-up's tens of tiles of a few macro-tiles (0.1-0.2)
MACRO_PAIRS_PER_PAIR = 0.75
REFERENCE_PER_GAUSSIAN = 250  # the torch reference pipeline's temporaries on the CPU, measured at 1M Gaussians
# The torch reference's pair sort on the CPU (kernels/reference.py `sort_pairs`: unique int64 keys, argsort's values
# and indices): 48-56 bytes a pair slot, measured at 8M and 2M slots; CUB's is sort_scratch_bytes.
REFERENCE_SORT_PER_SLOT = 56
# Tile ranges are int32 offsets into a frame's tile lists (kernels/tile_lists.py): no frame may have more.
MAX_PAIRS = 2**31 - 1
# The pair buffers of the binning form a path leaves are kept up to this size (renderer/pipeline.py `_frame_for`):
# 1% of a 24 GB card: a 1080p close-up's per-tile buffers are 98 MB (6.1M slots of 16 bytes), its per-macro-tile
# ones 34 MB; a scene of millions seen whole per tile (20M slots and more) is let go
KEPT_FORM_BYTES = 256 << 20
# A counted frame checks its pairs every frame. Asking CUDA what is free (`mem_get_info`) and torch's allocator what
# it holds unused (`memory_reserved`, which builds every one of the allocator's statistics) took 0.1-1 ms of the
# host's time a frame on the H200, while the GPU waited for the frame's next stage (BENCHMARKS.md, section 25). So
# the answer is kept this long, and trusted for frames that need at most half of it; a larger need asks again.
FREE_KEPT_SECONDS = 1.0


class OutOfDeviceMemoryError(MemoryError):
    """A scene or frame does not fit in the device's free memory (one-line message with the estimate)."""


@dataclass
class MemoryEstimate:
    """Bytes a Renderer needs on one device, by term (the module docstring's table)."""

    scene: int
    prepared: int
    workspace: int
    transient: int
    graphs: int = 0
    reference: int = 0

    @property
    def total(self) -> int:
        return int(self.peak * MARGIN) + FIXED_BYTES

    @property
    def peak(self) -> int:
        """The terms' sum, without the margin: what the renderer's own tensors come to at a frame's peak."""
        return self.scene + self.prepared + self.workspace + self.transient + self.graphs + self.reference

    def summary(self) -> str:
        parts = ("scene", "prepared", "workspace", "transient", "graphs", "reference")
        return ", ".join(f"{p} {gb(getattr(self, p))}" for p in parts if getattr(self, p))


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def n_tiles(width: int, height: int, tile: int) -> int:
    return ((width + tile - 1) // tile) * ((height + tile - 1) // tile)


def key_bytes(tiles: int, *, macro: bool = True) -> int:
    """Bytes of a pair key for an image of `tiles` tiles: of a macro-tile pair (kernels/buffers.py MACRO_KEY_DTYPE:
    the id above the rounded depth), or of a tile pair (`macro` False: `key_dtype`)."""
    return 4 if macro or tiles > INT16_TILES else 2


def tile_pair_buffer_bytes(slots: int, tiles: int) -> int:
    """The pair buffers of a frame binned per tile: keys, ids, sorted keys and the permutation a slot (the
    rasterizer reads the ids through it: nothing holds them in sorted order)."""
    return (2 * key_bytes(tiles, macro=False) + 12) * slots


LIST_ENTRY_BYTES = 4  # the tiles' lists: an int32 Gaussian id an entry


def pair_buffer_bytes(slots: int, tiles: int) -> int:
    """The pair buffers of `slots` slots, as allocated (the chunk counts by whole chunks of LIST_CHUNK)."""
    kb = key_bytes(tiles)
    return (2 * kb + 24) * slots + 4 * 32 * max(-(-slots // LIST_CHUNK), 1)


def macro_pairs(pairs: int) -> int:
    """The macro-tile pairs assumed for `pairs` tile pairs."""
    return int(pairs * MACRO_PAIRS_PER_PAIR)


_macro_pairs = macro_pairs  # for the functions whose parameter of that name is the frame's count


def sort_scratch_bytes(length: int, key: int) -> int:
    """torch.sort's temporaries for `length` keys of `key` bytes, stable, with int64 indices."""
    return length * (8 + key + 8)


def estimated_pairs(n: int, tiles: int) -> int:
    low, high = PAIRS_PER_GAUSSIAN
    return int(max(low * n, min(high * n, PAIRS_PER_TILE * tiles)))


def workspace_bytes(
    n: int, capacity: int, width: int, height: int, tile: int, *, slots: int, counted: bool, split: bool = False,
    pair_capacity: int | None = None, macro: bool | None = None, adagscale: bool = False, outputs: str = "both",
) -> int:  # fmt: skip
    """The renderer's workspace (`Renderer.ws`) after frames of n Gaussians at W x H: exactly what its buffers
    hold when the largest frame had these sizes (the capacity route's tile lists at `capacity` entries and pair
    buffers at `pair_capacity` slots, by default `macro_pairs(capacity)`); `split`: with the buffer of the longest
    lists' parts (the scalar loop's, kernels/rasterize.py `split_scratch_shape`); `macro`: the frames bin per
    macro-tile (True) or per tile (False), or a path of both forms (None: the larger, and the smaller beside it
    where a path that leaves it keeps it); `adagscale`: frames with AdaGScale on (their binning thresholds);
    `outputs`: the images the frames write (`RenderSettings.outputs`)."""
    x, t = width * height, n_tiles(width, height, tile)
    rows, cols = schedule_scratch_shape(t)
    # records 32, depths 4 and tiles_touched 4 a Gaussian; macros_touched 4 where frames bin per macro-tile (either
    # form: `macro` None), bin_t 4 where AdaGScale is on; the slots share all but tiles_touched (renderer/frame.py
    # `Frame.__init__`)
    staged = (36 + 4 * (macro is not False) + 4 * adagscale) * n
    per_slot = 4 * n + PIXEL_BYTES[outputs] * x + 4 * t
    shared = 12 * t + 4 * rows * cols + staged
    if n >= FRUSTUM_FROM:  # the pre-cull's survivors and their count (renderer/frame.py), where frames may take it
        shared += 4 * n + 4
    if split:
        shapes = [split_scratch_shape(tile, lists, t) for lists in (0, 1, 2)]
        shared += max((4 * a * b for a, b in filter(None, shapes)), default=0)
    if counted:  # the counts, and each counting program's three (kernels/order.py `count_visible`)
        per_slot += 32 + 8 * count_blocks(n)  # and the longest list (kernels/schedule.py)
    else:
        # totals: 3 int64 and the longest list; shared: offsets 8 a Gaussian, the order 8 where frames bin per tile
        per_slot += 32
        shared += (8 if macro is True else 16) * n
        d = macro_pairs(capacity) if pair_capacity is None else pair_capacity
        # a frame binned per macro-tile, or per tile (kernels/bin.py); a path that changes form keeps the form it
        # left while that one's buffers are at most KEPT_FORM_BYTES
        forms = {True: pair_buffer_bytes(d, t) + LIST_ENTRY_BYTES * capacity,
                 False: tile_pair_buffer_bytes(capacity, t)}  # fmt: skip
        small, large = sorted(forms.values())
        both = large + (small if small <= KEPT_FORM_BYTES else 0)
        # sorted depths 4 a Gaussian, the offsets' block ends 8 a block (kernels/buffers.py `BlockOffsets`)
        shared += 4 * n + 8 * scan_blocks(n) + (both if macro is None else forms[macro])
        if macro is not False:  # frames binned per macro-tile count each block of Gaussians (kernels/order.py)
            shared += 8 * count_blocks(n)
    return slots * per_slot + shared


def transient_bytes(n: int, pairs: int, capacity: int, tiles: int, *, counted: bool, reference: bool = False) -> int:
    """A frame's largest temporaries beyond the workspace.

    Capacity route: the larger of its two sorts' scratch, the depth sort of N float keys and the pair sort of its
    macro-tile pair slots, `macro_pairs(capacity)` (`reference`: the torch reference's, REFERENCE_SORT_PER_SLOT a
    slot). Counted frames (kernels/order.py `count_visible` and `visible_order`, renderer/frame.py `CountedFrame`):
    at the depth sort the visible Gaussians gathered 8 N, the sort's outputs 12 V and scratch 20 V, the order 8 V,
    the offsets 4 V (8 V in halves) and their blocks' ends; then `counted_pair_bytes`."""
    if not counted:
        pair_sort = max(pair_sort_bytes(macro_pairs(capacity), tiles, reference=reference),
                        pair_sort_bytes(capacity, tiles, reference=reference, macro=False))  # fmt: skip
        return max(sort_scratch_bytes(n, 4), pair_sort)
    v = n  # the order 8 V (all sorted: the sort's permutation), the offsets 4 V (8 V in halves) and block ends
    depth_sort = 8 * n + 12 * v + 8 * v + 8 * v + sort_scratch_bytes(v, 4)
    return max(depth_sort, counted_pair_bytes(v, pairs, tiles, reference=reference))


def pair_sort_bytes(length: int, tiles: int, *, reference: bool, macro: bool = True) -> int:
    """The pair sort's temporaries for `length` pair slots: CUB's, or the torch reference's."""
    return REFERENCE_SORT_PER_SLOT * length if reference else sort_scratch_bytes(length, key_bytes(tiles, macro=macro))


def counted_pair_bytes(visible: int, pairs: int, tiles: int, *, reference: bool, macro_pairs: int | None = None) -> int:
    """A counted frame's memory from its binning on, for its visible Gaussians, tile pairs and macro-tile pairs
    (default `macro_pairs(pairs)`): at the binning, the order and offsets 16 V and the pairs binned, (kb + 8) M (let
    go of once bin has read them: renderer/frame.py `CountedFrame.bin`); at the sort, the pairs binned, the sort's
    outputs (kb + 8) M and scratch; at the tile lists, the sorted pairs, the lists 4 P and chunk counts."""
    kb, kt = key_bytes(tiles), key_bytes(tiles, macro=False)
    m = _macro_pairs(pairs) if macro_pairs is None else macro_pairs
    at_bin = 16 * visible + (kb + 8) * m
    at_sort = 2 * (kb + 8) * m + pair_sort_bytes(m, tiles, reference=reference)
    at_lists = (kb + 8) * m + LIST_ENTRY_BYTES * pairs + 4 * 32 * max(-(-m // LIST_CHUNK), 1)
    # binned per tile (macro_pairs 0, or not known): the pairs (kt + 4) P, the sort's outputs and scratch
    tile_sort = pair_sort_bytes(pairs, tiles, reference=reference, macro=False)
    per_tile = (16 * visible + (kt + 4) * pairs, (kt + 4) * pairs + (kt + 8) * pairs + tile_sort)
    if macro_pairs == 0:
        return max(per_tile)
    return max(at_bin, at_sort, at_lists, *(per_tile if macro_pairs is None else ()))


def estimate_bytes(
    n_gaussians: int,
    sh_coeffs: int,
    width: int | None = None,
    height: int | None = None,
    device: torch.device | str = "cpu",
    *,
    counted: bool = False,
    tile_size: int = 8,
    in_flight: bool | None = None,
) -> MemoryEstimate:
    """The memory a Renderer needs on `device` for N Gaussians with K SH coefficients per channel, rendering
    W x H frames (NOMINAL_FRAME when not given); `counted`: its frames run counted (pipeline.py
    `runs_counted`); `in_flight`: with a second frame in flight where the device keeps one (None: the capacity
    route's frames, which always stream there; counted frames stream only where that estimate fits,
    `Renderer.streams`). See the module docstring for each term."""
    n, k = int(n_gaussians), int(sh_coeffs)
    w, h = (width, height) if width and height else NOMINAL_FRAME
    cuda = torch.device(device).type == "cuda"
    tiles = n_tiles(w, h, tile_size)
    pairs = estimated_pairs(n, tiles)
    capacity = 0 if counted else int(pairs * CAPACITY_STEP)
    streams = (not counted) if in_flight is None else in_flight
    slots = 2 if frames_in_flight(torch.device(device)) and streams else 1  # the second: a frame in flight
    transient = transient_bytes(n, pairs, capacity, tiles, counted=counted, reference=not cuda)
    split = cuda and "scalar" in rasterizer_variants()
    # with AdaGScale's bin_t: the viewer may switch it on
    workspace = workspace_bytes(n, capacity, w, h, tile_size, slots=slots, counted=counted, split=split, adagscale=True)
    return MemoryEstimate(
        scene=12 * n if cuda else 0,
        # SH as fp16 (renderer/prepare.py prepare_scene); the extents where frames may pre-cull (`Renderer.extent`)
        prepared=(28 + 6 * k) * n + ((4 * n + 32 * -(-n // FRUSTUM_BLOCK)) if n >= FRUSTUM_FROM else 0),
        workspace=workspace,
        transient=transient,
        graphs=slots * transient if cuda and not counted else 0,  # a graph per slot, each with its pool
        reference=0 if cuda else REFERENCE_PER_GAUSSIAN * n,
    )


def free_memory(device: torch.device | str) -> tuple[int | None, str]:
    """(`free_bytes`, and how to say it: "is free", or on the CPU under a lower WARPSPLAT_MAX_MEMORY, "is free
    under WARPSPLAT_MAX_MEMORY=SIZE")."""
    free = free_bytes(device)
    if torch.device(device).type == "cpu":
        cap, setting = set_cap()
        if cap is not None and (free is None or cap < free):
            return cap, f"is free under {setting}"
    return free, "is free"


def free_bytes(device: torch.device | str) -> int | None:
    """Free memory on `device`: CUDA's free bytes (within the process's memory fraction, when one is set), or
    MemAvailable on the CPU (None where unknown). Refusals go by `free_memory`, which on the CPU also
    honours WARPSPLAT_MAX_MEMORY (scenes/limits.py): a memory cap set for the readers holds for rendering too."""
    device = torch.device(device)
    if device.type == "cuda":
        if device.index is None:  # torch's per-process fraction wants an index ("cuda" alone raises ValueError)
            device = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
        free, total = torch.cuda.mem_get_info(device)
        try:
            fraction = torch.cuda.get_per_process_memory_fraction(device)
        except (AttributeError, AssertionError, RuntimeError):  # an older torch; no CUDA build (tests)
            fraction = 1.0
        if fraction < 1.0:  # torch refuses allocations beyond fraction x total, counted from what it reserved
            free = min(free, int(fraction * total) - torch.cuda.memory_reserved(device))
        return int(max(free, 0))
    if device.type == "cpu":
        return mem_available()
    return None


# device -> (when, bytes free to torch then): the last answer of `_free_to_torch` on a CUDA device
_FREE_KEPT: dict[str, tuple[float, int]] = {}


def _free_to_torch(device: torch.device) -> tuple[int | None, str]:
    """`free_memory`, plus what torch's caching allocator holds unused on a CUDA device (free to its allocations);
    kept for `_known_free`."""
    free, is_free = free_memory(device)
    if free is not None and device.type == "cuda":
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        _FREE_KEPT[str(device)] = (time.monotonic(), free)
    return free, is_free


def _known_free(device: torch.device) -> int:
    """What `_free_to_torch` said on this CUDA device within FREE_KEPT_SECONDS; 0 when nothing was asked then
    (and on other devices, whose answers are cheap and may move with a test's WARPSPLAT_MAX_MEMORY)."""
    when, free = _FREE_KEPT.get(str(device), (0.0, 0))
    return free if device.type == "cuda" and time.monotonic() - when < FREE_KEPT_SECONDS else 0


def check_fits(
    n_gaussians: int,
    sh_coeffs: int,
    width: int | None = None,
    height: int | None = None,
    device: torch.device | str = "cpu",
    *,
    counted: bool = False,
    in_flight: bool | None = None,
) -> MemoryEstimate:
    """Raise OutOfDeviceMemoryError, before any allocation, if a Renderer of this scene would not fit on
    `device`; return the estimate otherwise (and where the free memory is unknown)."""
    est = estimate_bytes(n_gaussians, sh_coeffs, width, height, device, counted=counted, in_flight=in_flight)
    free, is_free = free_memory(device)
    if free is not None and est.total > free:
        w, h = (width, height) if width and height else NOMINAL_FRAME
        raise OutOfDeviceMemoryError(
            f"{n_gaussians:,} Gaussians (SH {sh_coeffs} coefficients) at {w}x{h} need about {gb(est.total)} on "
            f"{torch.device(device)} ({est.summary()}, x{MARGIN} margin) but only {gb(free)} {is_free}"
        )
    return est


def check_frame_pairs(
    pairs: int,
    visible: int,
    width: int,
    height: int,
    tile: int,
    device: torch.device | str,
    *,
    counted: bool,
    reference: bool,
    capacity: int = 0,
    held: int = 0,
    macro_pairs: int | None = None,
    pair_capacity: int | None = None,
    pairs_held: int = 0,
) -> None:
    """Raise OutOfDeviceMemoryError before a frame's pairs are given memory they would not fit in.

    A frame's pairs are known only once it has been projected and ordered, and nothing in the file bounds them
    but its Gaussian count times the frame's tiles: Gaussians large on screen reach every tile, so that a 1 MB
    file of 80,000 of them asked 1.15 billion pairs of a 1280x720 frame, and the CPU renderer was killed at
    24 GB. So the renderer checks what the pairs need when it learns their count, before it allocates for them:
    a counted frame its pair tensors and sort (`counted_pair_bytes`); a capacity frame that did not fit the
    buffers it has, the lists at their new `capacity` and the pair buffers at `pair_capacity` with their sort,
    less the `held` list entries and `pairs_held` pair slots it lets go first. `macro_pairs`: the frame's
    macro-tile pairs (default `macro_pairs(pairs)`; 0: the frame binned per tile).
    Against the device's free memory, as `check_fits` (on CUDA asked again only after FREE_KEPT_SECONDS, or for a
    frame that needs more than half of the last answer); and never more than MAX_PAIRS."""
    tiles = n_tiles(width, height, tile)
    device = torch.device(device)
    if counted:
        need = counted_pair_bytes(visible, pairs, tiles, reference=reference, macro_pairs=macro_pairs)
    elif macro_pairs == 0:  # a frame binned per tile: its pair buffers hold the lists
        need = tile_pair_buffer_bytes(capacity - held, tiles) + pair_sort_bytes(capacity, tiles, reference=reference,
                                                                                  macro=False)  # fmt: skip
    else:
        slots = _macro_pairs(capacity) if pair_capacity is None else pair_capacity
        buffers = (
            LIST_ENTRY_BYTES * (capacity - held)
            + pair_buffer_bytes(slots, tiles)
            - pair_buffer_bytes(pairs_held, tiles) * (pairs_held > 0)
        )
        need = buffers + pair_sort_bytes(slots, tiles, reference=reference)
    if pairs <= MAX_PAIRS and _known_free(device) >= 2 * need * MARGIN:
        return
    free, is_free = _free_to_torch(device)
    what = (f"a {width}x{height} frame needs {pairs:,} Gaussian-tile pairs ({pairs / max(visible, 1):,.0f} tiles "
            f"for each of its {visible:,} visible Gaussians)")  # fmt: skip
    if pairs > MAX_PAIRS:
        raise OutOfDeviceMemoryError(f"{what}, more than the {MAX_PAIRS:,} a frame can index")
    if free is not None and need * MARGIN > free:
        raise OutOfDeviceMemoryError(
            f"{what}: about {gb(need * MARGIN)} more on {device}, but only {gb(free)} {is_free} (Gaussians this large "
            "on screen need a smaller frame)"
        )
