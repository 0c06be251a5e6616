"""Warm-up: every kernel a renderer's frames may launch, compiled (or loaded from Triton's cache) before the first
frame is shown, so that no frame stops for a compile.

Triton compiles a kernel the first time it is launched with a new specialization: new values of its constexprs
(the launch configuration of kernels/*.py, chosen per frame from the last frame's counts: `LaunchConfig`; and
the settings: SH degree, tile size, rasterizer loop and its blend precision, AdaGScale, depth output), new
argument types (the tile key type follows the image's tile count), and, for integer arguments not marked
`do_not_specialize`, the value 1 or divisibility by 16. A compile takes 0.3-1 s; inside a frame it is a 400 ms stutter.

The warm-up does not list kernel signatures. It runs the real pipeline (`Renderer.render`, every stage the
frame would run) on a small synthetic scene with the renderer's SH size, at the real image size, with each
setting to be warmed and each launch configuration `LaunchConfig.reachable` finds for the real scene, forced in
turn: whatever kernels a frame launches, those get compiled, including ones added later. The inputs hit the
real frames' specializations: every integer count the kernels take is `do_not_specialize`, and the pointers are
workspace buffers (16-byte aligned) in both. The synthetic scenes are prepared by the same `prepare_scene` as the
real one, so their arrays have its dtypes too (a pointer's element type is a specialization of its own: the SH
copy is fp16 in both). It runs on a renderer of its own, so the real renderer's state (capacities, graphs,
temporal caches) is untouched, and on a stream of its own, so that a viewer can run it in a background thread
while it shows progress. Two sizes of the synthetic scene cover torch.sort's two
implementations (up to 4,096 keys and above), which load their CUDA modules on first use.

On a CPU (the torch reference, or Triton's interpreter) nothing compiles and `warm_up` returns at once.
`compile_counter()` counts Triton's compilations per thread (a load from Triton's on-disk cache included), for
tests and for the viewer's overlay.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from scenes import GaussianScene

from .camera import Camera
from .settings import BLEND_PRECISIONS, RenderSettings, rasterizers

# Gaussians of the two synthetic scenes: torch.sort runs a small in-place sort up to 4,096 keys and CUB's radix
# sort above (ATen's SortStable.cu, should_use_small_sort), each a separate CUDA module
SMALL_SCENE, LARGE_SCENE = 16, 8192  # the small one's pairs stay under 4,096 too
TILE_SIZES = (8, 16)


@dataclass
class WarmUpReport:
    frames: int = 0  # synthetic frames rendered
    compiles: int = 0  # Triton compilations (or loads from its cache) they caused
    seconds: float = 0.0


def needs_warm_up(renderer) -> bool:
    """Whether the renderer's frames compile anything: Triton kernels on a GPU (not in the interpreter)."""
    return renderer.backend == "triton" and renderer.device.type == "cuda" and os.environ.get("TRITON_INTERPRET") != "1"


def synthetic_scene(n: int, sh_coeffs: int, seed: int = 0) -> GaussianScene:
    """n Gaussians in a cube, each reaching a few to some tens of 8 px tiles of a 1080p `default_camera` view
    (every stage has work; the pairs, and the warm-up's memory with them, stay small: under 40 MB)."""
    g = torch.Generator().manual_seed(seed)
    return GaussianScene(
        means=torch.rand(n, 3, generator=g) * 2.0 - 1.0,
        quats=torch.randn(n, 4, generator=g),
        log_scales=torch.full((n, 3), -4.5) + torch.rand(n, 3, generator=g),
        opacity_logits=torch.randn(n, generator=g),
        sh=torch.randn(n, sh_coeffs, 3, generator=g) * 0.2,
    )


def switch_settings(settings: RenderSettings, scene_degree: int, *, depth: bool = True) -> list[RenderSettings]:
    """`settings` with every combination of the viewer's switches: SH degree, tile size, rasterizer loop, blend
    precision, AdaGScale, the orthographic view and (with `depth`) the depth view, with the float outputs it needs;
    `settings` itself first, then the others by how many switches differ (one flip first). Switches that change no
    kernel argument (the background, AdaGScale's tau) stay. The blend precision reaches the scalar loop alone, so
    it varies where the rasterizer is "auto" and the scalar loop runs (the "scalar" combinations launch the same
    kernels): elsewhere it stays, rather than double the combinations with frames that compile nothing new."""
    loops = list(rasterizers())
    options = {
        "sh_degree": [None, *range(scene_degree + 1)],
        "tile_size": list(TILE_SIZES),
        "rasterizer": loops,
        "blend_precision": list(BLEND_PRECISIONS),
        "adagscale": [False, True],
        "ortho": [False, True],
        "depth": [False, True] if depth else [settings.depth],
    }
    combos = [{}]
    for name, values in options.items():
        combos = [{**c, name: v} for c in combos for v in values]
    for c in combos:
        if not (c["rasterizer"] == "auto" and "scalar" in loops):
            c["blend_precision"] = settings.blend_precision
    # the depth view reads the float coverage: where the settings take the 8-bit image alone, its frames take the
    # float outputs (app/frames.py `mode_settings`), whose rasterizer also serves the coverage view
    floats = {"outputs": "float"} if settings.outputs == "rgba8" else {}
    variants = [dataclasses.replace(settings, **c, **(floats if c["depth"] else {})) for c in combos]
    flips = lambda s: sum(getattr(s, k) != getattr(settings, k) for k in options)  # noqa: E731
    unique = {repr(v): v for v in sorted(variants, key=flips)}
    return list(unique.values())


def warm_up(
    renderer,
    sizes: Iterable[tuple[int, int]],
    settings: Iterable[RenderSettings],
    *,
    progress: Callable[[int, int], None] | None = None,
    previous: Iterable[RenderSettings] = (),
    force: bool = False,
    threads: int | None = None,
) -> WarmUpReport:
    """Render synthetic frames through a renderer like `renderer` (its device, backend, frame route and SH size),
    at each of `sizes` (width, height), with each of `settings`, under each launch configuration its frames may
    take: those frames of any of `settings` or `previous` may choose, since a frame's configuration comes from
    the frame before it, whatever that one's settings (another tile size). `progress(done, total)` after each
    (size, settings) pair. `force`: run where nothing compiles too (tests check what it runs). `threads`: render
    the frames from this many threads, each with renderers of its own (default `warm_up_threads()`), so that their
    compiles overlap. Safe to call from another thread while `renderer` renders."""
    from .launch import LaunchConfig
    from .pipeline import Renderer

    report = WarmUpReport()
    if not (force or needs_warm_up(renderer)):
        return report
    t0 = time.perf_counter()
    sizes, settings = list(sizes), list(settings)
    configured = settings + [s for s in previous if s not in settings]
    k = renderer.sh.shape[1]
    route = "counted" if renderer.counted() else "graph"
    threads = warm_up_threads() if threads is None else max(1, int(threads))

    def warmers() -> list:  # a small and a large synthetic scene's renderer, for one thread
        made = []
        for n in (SMALL_SCENE, LARGE_SCENE):
            w = Renderer(synthetic_scene(n, k), device=renderer.device, backend=renderer.backend, graphs=False)
            w.frame_mode = route
            made.append(w)
        return made

    crews = [warmers() for _ in range(threads)]
    cuda = renderer.device.type == "cuda"
    first = LaunchConfig.first(route == "counted", cuda=cuda)
    # the frames to render, in order: each settings' under every configuration on the large scene, then its first
    # frame's on the small one
    jobs, cams = [], {}
    for width, height in sizes:
        for which, w in enumerate(crews[0]):  # every crew's scenes are the same (seeded)
            cams[width, height, which] = _camera(w.scene, width, height)
        configs = set()
        for s in configured:
            tile = s.tile_size
            tiles = ((width + tile - 1) // tile) * ((height + tile - 1) // tile)
            # any scene may take a window (renderer/window_choice.py), whose frames project fewer Gaussians
            configs |= set(LaunchConfig.reachable(renderer.n, tiles, tile, windows=s.temporal_window > 1))
        configs = sorted(configs, key=lambda c: (c.lists, c.project_block, c.bin_block, c.bin_cols))
        for i, s in enumerate(settings):
            group = (width, height, i)
            jobs += [(group, 1, (width, height), s, c) for c in configs] + [(group, 0, (width, height), s, first)]
    left = {}
    for job in jobs:
        left[job[0]] = left.get(job[0], 0) + 1
    total, done = len(left), 0
    counter = compile_counter()
    lock = threading.Lock()
    queue = iter(jobs)
    compiles, errors = [0] * threads, []

    def work(t: int) -> None:
        """Thread t's share of the jobs, taken in order as its frames finish, on its own renderers and stream."""
        nonlocal done
        before = counter.count()
        stream = torch.cuda.Stream(renderer.device) if cuda else None
        try:
            with torch.cuda.stream(stream) if cuda else _nothing():
                while not errors:
                    with lock:
                        job = next(queue, None)
                    if job is None:
                        break
                    group, which, (width, height), s, config = job
                    _frame(crews[t][which], cams[width, height, which], s, config)
                    with lock:
                        left[group] -= 1
                        finished = left[group] == 0
                        done += finished
                        step = done
                    if finished and progress is not None:
                        progress(step, total)
                if cuda:
                    stream.synchronize()
        except BaseException as e:  # raised again in the calling thread
            errors.append(e)
        finally:
            compiles[t] = counter.count() - before

    if threads == 1:
        work(0)
    else:  # Triton compiles in the launching thread and much of a compile leaves the GIL: compiles overlap
        pool = [threading.Thread(target=work, args=(t,), name=f"warpsplat-warm-up-{t}") for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    if errors:
        raise errors[0]
    report.frames = len(jobs)
    before = counter.count()
    stream = torch.cuda.Stream(renderer.device) if cuda else None
    with torch.cuda.stream(stream) if cuda else _nothing():
        if renderer.counted():
            # frames of a size whose tile pairs bin in two halves (kernels/buffers.py `key_halves`) count and order
            # them so too, both ways: the synthetic frames take one of the ways only
            halves = any(renderer.k.key_halves(-(-w // s.tile_size), -(-h // s.tile_size)) is not None
                         for w, h in sizes for s in configured)  # fmt: skip
            _load_order_modules(renderer, halves=halves)
            if cuda:
                stream.synchronize()
    # the warm-up's renderers hold an image of every size they rendered (one slot each, at the frame size asked) and
    # their buffers, in reference cycles (their frames point back at them) that only a full garbage collection
    # undoes: let go of the buffers now, or they stay beside the real frames' (the bench's rows held two images more
    # than their own frames': BENCHMARKS.md, section 37)
    for crew in crews:
        for w in crew:
            w.release_memory()
    report.compiles = sum(compiles) + counter.count() - before
    report.seconds = time.perf_counter() - t0
    return report


# Threads of a first start's warm-up. Measured on the H200's 16 cores with an empty cache (BENCHMARKS.md, section
# 56): the bundled scene's first frame 24.9 s after start with one thread, 16.6 s with four; with a warm cache
# one thread was faster (4.2 s against 6.4: the threads load the same kernels side by side)
FIRST_START_THREADS = 4
_first_start: bool | None = None  # decided once a process, before its first compile


def warm_up_threads() -> int:
    """The warm-up's threads: WARPSPLAT_WARMUP_THREADS where set; else, in a process whose first look found none
    of warpsplat's kernels in Triton's on-disk cache (a first start, or one after the cache was cleared: every
    kernel compiles), FIRST_START_THREADS (at most the CPU's cores); else 1 (the kernels load from the cache)."""
    global _first_start
    value = os.environ.get("WARPSPLAT_WARMUP_THREADS")
    if value is not None:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"WARPSPLAT_WARMUP_THREADS={value!r}: expected a whole number of threads") from None
    if _first_start is None:
        _first_start = not triton_cache_holds_ours()
    return min(FIRST_START_THREADS, os.cpu_count() or 1) if _first_start else 1


def triton_cache_holds_ours(cache_dir: str | None = None) -> bool:
    """Whether Triton's on-disk cache (`cache_dir`, default Triton's own) holds a compiled `_project_kernel`, which
    every frame launches: a kernel of this or an earlier warpsplat. Where the cache cannot be read, True (the
    warm-up then takes one thread, as it did before threads)."""
    try:
        if cache_dir is None:
            from triton import knobs

            cache_dir = knobs.cache.dir
        with os.scandir(cache_dir) as entries:
            groups = [e.path for e in entries if e.is_dir()]
    except FileNotFoundError:
        return False
    except Exception:  # an unknown Triton or an unreadable folder
        return True
    return any(os.path.exists(os.path.join(g, "_project_kernel.json")) for g in groups)


def _load_order_modules(renderer, *, halves: bool = False) -> None:
    """Run a counted frame's order stage both ways (compacting and not), and a macro-tile frame's offsets, on
    arrays of the scene's own size, half of it culled. CUDA loads a library's kernels on their first launch
    (torch's default, CUDA_MODULE_LOADING=LAZY), and which kernels torch's sort and cumsum launch depends on the
    input's size: the synthetic scenes' thousands of Gaussians did not launch those of millions, and the 6M
    fly-over's first frame that compacts waited 12 ms in its order stage for them (BENCHMARKS.md, section 20).
    `halves`: both ways with the counts of frames binned in two halves as well (their kernels' own forms)."""
    k, n, device = renderer.k, renderer.n, renderer.device
    depths = torch.rand(n, device=device)
    depths[::2] = float("inf")  # culled
    tiles = (depths < float("inf")).to(torch.int32)
    i64 = dict(dtype=torch.int64, device=device)
    head = (torch.zeros(3, **i64), torch.zeros(k.count_blocks(n), **i64), torch.empty(n, device=device),
            torch.empty(n, dtype=torch.int32, device=device))  # fmt: skip
    for compact, apart in itertools.product((True, False), (False, True) if halves else (False,)):
        counts = tiles.clone() if apart else tiles  # a frame's halves' counts are an array of their own
        totals = k.count_visible(depths, tiles, counts, compact=compact, out=head, halves=apart)
        m = int(totals[0]) if compact else n  # the visible half, or all
        i32 = dict(dtype=torch.int32, device=device)
        tail = (torch.empty(m, **i64), torch.empty(m if compact else 0, **i64), torch.empty(k.scan_blocks(m), **i64),
                torch.empty(m, **(i64 if apart else i32)))  # fmt: skip
        k.visible_order(depths, counts, compact=compact, out=(*head[2:], torch.empty(m, device=device), *tail),
                        halves=apart)  # fmt: skip
    # a frame binned per macro-tile: the gathered half's offsets in index order (kernels/order.py `index_offsets`)
    k.index_offsets(tiles, head[3][: n // 2], out=torch.empty(n, **i64))


def _frame(r, camera: Camera, settings: RenderSettings, config) -> int:
    """One frame under a forced launch configuration (the renderer picks the next one after it: reset each time),
    rendered in full (not the last frame re-presented, not from a window built for another)."""
    r.launch = config
    r.temporal.invalidate()
    r.render(camera, dataclasses.replace(settings, reuse_unchanged_frame=False), sync_stats=False)
    return 1


def _camera(scene: GaussianScene, width: int, height: int) -> Camera:
    from .camera import default_camera

    return default_camera(scene, width, height)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class CompileCounter:
    """Triton's compilations in this process, per thread, through its `jit_post_compile_hook` (called after
    every compile, a load from the on-disk cache included). Installed once; hooks already set are still called.

    It also lets one thread at a time compile a kernel specialization, through `jit_cache_hook` (called before
    each compile): a threaded warm-up's threads render the same stages in the same order, so without it they met
    each new specialization together and compiled it side by side, each its own copy. Four threads compiled 45
    kernels where one thread compiled 25, and took 0.83x one thread's time (BENCHMARKS.md, section 55). A thread
    that finds a specialization being compiled waits for it, then loads it from Triton's on-disk cache (tens of ms
    against about a second). A compile that fails releases no one: they wait at most COMPILE_WAIT_S, then compile
    themselves."""

    COMPILE_WAIT_S = 120.0

    def __init__(self) -> None:
        import triton

        self._counts: dict[int, int] = {}
        self._lock = threading.Lock()
        self._compiling: dict[tuple, threading.Event] = {}  # specializations being compiled, each with its event
        self._previous = triton.knobs.runtime.jit_post_compile_hook
        self._previous_before = triton.knobs.runtime.jit_cache_hook
        triton.knobs.runtime.jit_post_compile_hook = self._hook
        triton.knobs.runtime.jit_cache_hook = self._before

    @staticmethod
    def _specialization(kwargs) -> tuple | None:
        """Which compile a hook's call is about: the JIT function, the device and Triton's cache key."""
        fn, compiled = kwargs.get("fn"), kwargs.get("compile") or {}
        if fn is None or "key" not in kwargs:
            return None
        return id(getattr(fn, "jit_function", fn)), compiled.get("device"), str(kwargs["key"])

    def _before(self, *args, **kwargs):
        """Before a compile: wait while another thread compiles the same specialization (then this one loads it)."""
        which = self._specialization(kwargs)
        if which is not None:
            with self._lock:
                busy = self._compiling.get(which)
                if busy is None:
                    self._compiling[which] = threading.Event()
            if busy is not None:
                busy.wait(self.COMPILE_WAIT_S)
        if self._previous_before is not None:
            return self._previous_before(*args, **kwargs)
        return False  # compile (or load) it

    def _hook(self, *args, **kwargs):
        which = self._specialization(kwargs)
        with self._lock:
            ident = threading.get_ident()
            self._counts[ident] = self._counts.get(ident, 0) + 1
            done = self._compiling.pop(which, None) if which is not None else None
        if done is not None:
            done.set()
        if self._previous is not None:
            return self._previous(*args, **kwargs)
        return None

    def count(self, thread: int | None = None) -> int:
        """Compilations so far in `thread` (default: this one); all threads' with thread=-1."""
        with self._lock:
            if thread == -1:
                return sum(self._counts.values())
            return self._counts.get(threading.get_ident() if thread is None else thread, 0)


def compile_counter() -> CompileCounter:
    """The process's one CompileCounter, installed as Triton's hook on first use (Triton's knob is where it is
    kept: the hook is process-wide state already). Install it from the main thread before others compile."""
    import triton

    hook = triton.knobs.runtime.jit_post_compile_hook
    owner = getattr(hook, "__self__", None)
    return owner if isinstance(owner, CompileCounter) else CompileCounter()
