"""Macro-tile frames rasterized from their macro-tile lists, without the split into tile lists: a measured design
for issue 24, not the renderer's route yet (BENCHMARKS.md, section 47). GPU machine only (a Gluon kernel).

One program a tile, as the scalar rasterizer (kernels/rasterize.py `_rasterize_shared_kernel`): it reads its
macro-tile's sorted entries (Gaussian id | tile mask << 32, kernels/buffers.py) in chunks of SCAN, keeps those
whose mask has its tile's bit (an inclusive scan of the bits and a scatter of the kept ones' places, or ids, into
the program's own row of a scratch buffer), and blends them as the scalar kernel does. The kept entries are the
tile's list in the same order, and the arithmetic is the scalar kernel's, so the images must equal the split's
bit for bit. Against: the frame's own `tile_lists` (the split: chunk counts, scan, scatter) and `rasterize`, each
timed as CUDA graph replays (the host's launches off the clock).

    python3 tests/gpu/macro_raster_ab.py [--scenes plant.splat playbot_lod0.sog] [--sizes 1920x1080,3840x2160]

A configuration is warps:step:scan:prefetch:programs an SM (0: one a tile):places (1: the scratch holds each kept
entry's place in its chunk as a byte, 256 bytes a program; 0: its id, 1 KB).
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import torch  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

import kernels.bin  # noqa: E402
import renderer.graphs  # noqa: E402
from kernels._device import PIXEL_CENTRE  # noqa: E402
from kernels.buffers import depth_bits, macro_grid  # noqa: E402
from kernels.rasterize import _blend_poly, _fields, _tile_coefficients, _write_pixels_gl  # noqa: E402
from renderer import Renderer, RenderSettings  # noqa: E402
from renderer.frame import CapacityFrame  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_paths import find_scene, object_paths  # noqa: E402


@gluon.jit
def _add(a, b):
    return a + b


@gluon.jit
def _kept_id(region, entries_ptr, s, at, m, IDX8: gl.constexpr):
    """The Gaussian id of kept entry `at` of the chunk starting at s."""
    if IDX8:
        j = gl.load(region + at, mask=m, other=0).to(gl.int32)
        return gl.load(entries_ptr + s + j, mask=m, other=0).to(gl.int32)
    else:
        return gl.load(region + at, mask=m, other=0)


@gluon.jit(do_not_specialize=["width", "height"])
def _rasterize_macro_kernel(
    entries_ptr,  # [C] i64 sorted macro entries: Gaussian id (low 32 bits) | tile mask << 32
    mranges_ptr,  # [n_macros, 2] i32
    rec_ptr,
    bg_ptr,
    schedule_ptr,
    rgb_ptr,
    alpha_ptr,
    rgba8_ptr,
    scratch_ptr,  # [grid, SCAN]: each program's kept entries of one chunk, as places (u8, IDX8) or ids (i32)
    width,
    height,
    TILE: gl.constexpr,
    WARPS: gl.constexpr,
    STEP: gl.constexpr,
    SCAN: gl.constexpr,
    PREFETCH: gl.constexpr,
    IDX8: gl.constexpr,  # the scratch keeps each kept entry's place in its chunk (uint8), not its id (int32)
    HAS_FLOAT: gl.constexpr,
    HAS_RGBA8: gl.constexpr,
    SCHEDULED: gl.constexpr,
):
    R: gl.constexpr = 32 * WARPS
    P: gl.constexpr = TILE * TILE // R
    pixels: gl.constexpr = gl.BlockedLayout([P, 1], [1, 32], [1, WARPS], [1, 0])
    loading: gl.constexpr = gl.BlockedLayout([1, 8], [32, 1], [WARPS, 1], [1, 0])
    whole: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, WARPS], [1, 0])
    blues: gl.constexpr = gl.BlockedLayout([1, 2], [32, 1], [WARPS, 1], [1, 0])
    both: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [1, WARPS], [1, 0])
    scanning: gl.constexpr = gl.BlockedLayout([SCAN // R], [32], [WARPS], [0])
    step_rows = gl.allocate_shared_memory(gl.float32, [STEP, 8], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    step_b = gl.allocate_shared_memory(gl.float32, [STEP, 2], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))

    pid = gl.program_id(0)
    n_prog = gl.num_programs(0)
    n_tx = (width + TILE - 1) // TILE
    n_tiles = n_tx * ((height + TILE - 1) // TILE)
    region = scratch_ptr + pid.to(gl.int64) * SCAN
    for q in range(pid, n_tiles, n_prog):
        tile_id = q
        if SCHEDULED:
            tile_id = gl.load(schedule_ptr + q)
        tx = tile_id % n_tx
        ty = tile_id // n_tx
        n_mx = (n_tx + 7) // 8
        macro = (ty // 4) * n_mx + tx // 8
        bit = ((ty % 4) * 8 + tx % 8 + 32).to(gl.int64)
        start = gl.load(mranges_ptr + macro * 2 + 0)
        end = gl.load(mranges_ptr + macro * 2 + 1)

        lane = gl.arange(0, R, layout=gl.SliceLayout(0, pixels))[None, :]
        row = gl.arange(0, P, layout=gl.SliceLayout(1, pixels))[:, None]
        px = tx * TILE + lane % TILE
        py = ty * TILE + lane // TILE + row * (R // TILE)
        inside = (px < width) & (py < height)
        pix = py.to(gl.int64) * width + px
        ox = (tx * TILE).to(gl.float32) + 0.5 * TILE
        oy = (ty * TILE).to(gl.float32) + 0.5 * TILE
        u = (px.to(gl.float32) + PIXEL_CENTRE) - ox
        v = (py.to(gl.float32) + PIXEL_CENTRE) - oy
        uu = u * u
        uv = u * v
        vv = v * v
        T = gl.full([P, R], 1.0, gl.float32, layout=pixels)
        cr = gl.zeros([P, R], gl.float32, layout=pixels)
        cg = gl.zeros([P, R], gl.float32, layout=pixels)
        cb = gl.zeros([P, R], gl.float32, layout=pixels)
        alive = inside

        kk = gl.arange(0, SCAN, layout=scanning)
        k = gl.arange(0, STEP, layout=gl.SliceLayout(1, loading))
        field = gl.arange(0, 8, layout=gl.SliceLayout(0, loading))[None, :]
        past_end = gl.where(field == 5, float("-inf"), 0.0)
        s = start
        e = gl.load(entries_ptr + s + kk, mask=s + kk < end, other=0)
        while (s < end) & (gl.max(gl.max(alive.to(gl.int32), axis=1), axis=0) > 0):
            keep = ((e >> bit) & 1).to(gl.int32)
            at = gl.associative_scan(keep, 0, _add)  # inclusive
            n = gl.sum(keep, axis=0)
            if IDX8:
                gl.store(region + at - 1, kk.to(gl.uint8), mask=keep > 0)
            else:
                gl.store(region + at - 1, e.to(gl.int32), mask=keep > 0)  # the low 32 bits: the Gaussian id
            gl.thread_barrier()
            if PREFETCH == 2:  # the next chunk's entries in flight while this one blends
                e = gl.load(entries_ptr + s + SCAN + kk, mask=s + SCAN + kk < end, other=0)
            t = n * 0
            in_list = t + k < n
            gid = _kept_id(region, entries_ptr, s, t + k, in_list, IDX8)
            records = gl.load(rec_ptr + gid[:, None] * 8 + field, mask=in_list[:, None], other=past_end)
            while (t < n) & (gl.max(gl.max(alive.to(gl.int32), axis=1), axis=0) > 0):
                gl.thread_barrier()
                rows, b_rows = _tile_coefficients(records, ox, oy)
                step_rows.store(rows)
                step_b.store(gl.convert_layout(b_rows, blues))
                gl.thread_barrier()
                if PREFETCH > 0:
                    in_list = t + STEP + k < n
                    gid = _kept_id(region, entries_ptr, s, t + STEP + k, in_list, IDX8)
                    records = gl.load(rec_ptr + gid[:, None] * 8 + field, mask=in_list[:, None], other=past_end)
                for j in gl.static_range(STEP):
                    c0, c1, c2, c3, c4, c5, r, g = _fields(step_rows.slice(j, 1, dim=0).load(whole), pixels)
                    b, _ = gl.split(gl.reshape(step_b.slice(j, 1, dim=0).load(both), [1, 1, 2]))
                    b = gl.convert_layout(b, pixels, assert_trivial=True)
                    T, alive, cr, cg, cb = _blend_poly(c0, c1, c2, c3, c4, c5, r, g, b, u, v, uu, uv, vv, T, alive,
                                                       cr, cg, cb)  # fmt: skip
                t += STEP
                if PREFETCH == 0:
                    in_list = t + k < n
                    gid = _kept_id(region, entries_ptr, s, t + k, in_list, IDX8)
                    records = gl.load(rec_ptr + gid[:, None] * 8 + field, mask=in_list[:, None], other=past_end)
            gl.thread_barrier()  # this chunk's ids read before the next chunk's are stored
            s += SCAN
            if PREFETCH < 2:
                e = gl.load(entries_ptr + s + kk, mask=s + kk < end, other=0)
        _write_pixels_gl(rgb_ptr, alpha_ptr, rgba8_ptr, pix, inside, cr, cg, cb, T, bg_ptr, HAS_FLOAT, HAS_RGBA8)


def macro_ranges(sorted_keys, n_pairs, n_macros, shift):
    """[n_macros, 2] i32: each macro-tile's run [start, end) in the sorted pairs (a key's macro-tile is key >> shift);
    torch's searchsorted here, where a frame would use a kernel of tile_ranges' kind."""
    mids = (sorted_keys[:n_pairs] >> shift).contiguous()
    m = torch.arange(n_macros, device=mids.device, dtype=mids.dtype)
    lo = torch.searchsorted(mids, m)
    hi = torch.searchsorted(mids, m, right=True)
    return torch.stack([lo, hi], 1).to(torch.int32).contiguous()


def timed(f, reps=5, inner=20):
    """GPU time of f, us: f captured once as a CUDA graph, `inner` replays back to back between two events (so the
    host's launch time is off the clock), the median of `reps` such runs."""
    f()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        f()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / inner)
    return statistics.median(ts)


FRAMES = []  # the frame objects whose tile_lists ran, in order: the last is the frame just rendered
_tile_lists = CapacityFrame.tile_lists


def _stash(self):
    FRAMES.append(self)
    return _tile_lists(self)


def macro_schedule(ranges: torch.Tensor, n_tx: int, n_ty: int) -> torch.Tensor:
    """[n_tiles] i32: the tiles by their macro-tile's list length, longest first (what a frame without tile lists
    could schedule by)."""
    lengths = (ranges[:, 1] - ranges[:, 0]).long()
    ty, tx = torch.meshgrid(torch.arange(n_ty, device=ranges.device), torch.arange(n_tx, device=ranges.device),
                            indexing="ij")  # fmt: skip
    macro = ((ty // 4) * macro_grid(n_tx, n_ty)[0] + tx // 8).reshape(-1)
    return torch.argsort(lengths[macro], descending=True, stable=True).to(torch.int32)


def measure_frame(f, W: int, H: int, configs, sms: int) -> None:
    """One frame binned per macro-tile (its buffers hold its last run): the split and rasterize against the macro
    kernel in each configuration, images compared, GPU times printed."""
    n_vis, n_tile_pairs, n_macro_pairs = f.totals()
    p, n_tx, n_ty = f.pairs, f.n_tx, f.n_ty
    n_mx, n_my = macro_grid(n_tx, n_ty)
    shift, n_tiles = depth_bits(n_mx * n_my), n_tx * n_ty
    ref = f.rgb.clone(), f.alpha.clone()
    base = timed(lambda: (f.tile_lists(), f.rasterize()))
    split = timed(f.tile_lists)
    raster = timed(f.rasterize)
    mr = macro_ranges(p.sorted_keys, n_macro_pairs, n_mx * n_my, shift)
    t_ranges = timed(lambda: mr.copy_(macro_ranges(p.sorted_keys, n_macro_pairs, n_mx * n_my, shift)))
    msched = macro_schedule(mr, n_tx, n_ty)
    lens = (mr[:, 1] - mr[:, 0]).float()
    print(f"  {n_vis:,} visible, {n_tile_pairs:,} tile entries, {n_macro_pairs:,} macro pairs (macro lists mean "
          f"{lens.mean():.0f}, max {lens.max():.0f}); split {split:.1f} + rasterize {raster:.1f} = {base:.1f} us "
          f"together; the macro ranges by torch {t_ranges:.1f} us", flush=True)  # fmt: skip
    rgb, alpha = torch.empty_like(f.rgb), torch.empty_like(f.alpha)
    for warps, step, scan, pre, per_sm, places in configs:
        grid = n_tiles if per_sm == 0 else min(n_tiles, sms * per_sm)
        scratch = torch.empty(grid * scan, dtype=torch.uint8 if places else torch.int32, device="cuda")

        def run(sched=None, grid=grid, scratch=scratch, warps=warps, step=step, scan=scan, pre=pre, places=places):
            _rasterize_macro_kernel[(grid,)](
                p.sorted_values, mr, f.records, f.background, mr if sched is None else sched, rgb, alpha, rgb,
                scratch, W, H, TILE=8, WARPS=warps, STEP=step, SCAN=scan, PREFETCH=pre, IDX8=bool(places),
                HAS_FLOAT=True, HAS_RGBA8=False, SCHEDULED=sched is not None, num_warps=warps,
            )  # fmt: skip

        name = f"{warps}:{step}:{scan}:{pre}:{per_sm}:{places}"
        try:
            run()
            torch.cuda.synchronize()
            d = max((rgb - ref[0]).abs().max().item(), (alpha - ref[1]).abs().max().item())
            t0 = timed(run)
            t1 = timed(lambda run=run: run(f.schedule)) if f.schedule is not None else float("nan")
            t2 = timed(lambda run=run: run(msched))
            print(f"    {name}  max diff {d:.3g}  macro raster {t0:.1f} us; scheduled by the tile lists {t1:.1f}, "
                  f"by the macro lists {t2:.1f}  ->  {t0 / base:.3f} / {t1 / base:.3f} / {t2 / base:.3f} of split + "
                  f"rasterize", flush=True)  # fmt: skip
        except Exception as e:  # noqa: BLE001  (a configuration that does not compile: say so, go on)
            print(f"    {name} FAILED {type(e).__name__}: {str(e)[:2000]}", flush=True)


@torch.inference_mode()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", nargs="*", default=["plant.splat", "playbot_lod0.sog"])
    ap.add_argument("--sizes", default="1920x1080,3840x2160")
    ap.add_argument("--frames", default="4,10,16")
    ap.add_argument("--configs", default="1:16:256:1:0:1,1:16:256:1:64:1,1:16:256:1:0:0")
    args = ap.parse_args()
    kernels.bin.MACRO_FROM, kernels.bin.MACRO_UNTIL = 0.0, 0.0  # every frame per macro-tile
    CapacityFrame.tile_lists = _stash
    renderer.graphs.CAPTURE_AFTER = 10**9  # eager frames: the stages' Python runs, the buffers stay
    settings = RenderSettings()
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs.split(",")]
    print("configuration = warps:step:scan:prefetch:programs an SM (0: one a tile):places")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size in args.sizes.split(","):
        W, H = (int(x) for x in size.split("x"))
        for name in args.scenes:
            scene = load_scene(find_scene(name, None))
            r = Renderer(scene, frame_size=(W, H))
            cams = object_paths(scene, W, H, 20)["close"]
            for fi in (int(x) for x in args.frames.split(",")):
                FRAMES.clear()
                r.render(cams[fi], settings)
                r.render(cams[fi], settings)  # the capacities settled: the last run is the frame's
                torch.cuda.synchronize()
                assert FRAMES[-1].macro, "not binned per macro-tile"
                print(f"{name} close {W}x{H} frame {fi}:", flush=True)
                measure_frame(FRAMES[-1], W, H, configs, sms)
            del r


if __name__ == "__main__":
    main()
