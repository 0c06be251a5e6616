"""Every configuration of the binning and tile-list kernels compiles for sm_90 (the H200), here on the CPU. The tests
run the kernels in Triton's interpreter, which compiles nothing, so a kernel that Triton cannot lower for the GPU
passes every CPU test and fails only there: the macro-tile bin kernel did, at 4 Gaussians a program ("operand #1
does not dominate this use", Triton 3.6; BENCHMARKS.md, section 24). Triton compiles for a target it is given
without a GPU, ptxas included, so a child process with the interpreter off compiles each launch configuration the
renderer can choose (kernels/bin.py `bin_config` over its inputs, both binning forms, tile pairs at both key widths
and macro-tile pairs over all Gaussians and over the visible ones gathered, both tile sizes; tile_lists at its chunk
and warps, and its scan; stage 1 with and without the macro-tile count, over all rows or the pre-cull's survivors,
and the pre-cull itself, each for pinhole and orthographic cameras; the counted frames' count, compaction and order,
and the tile-pair sum, kernels/order.py; the sort's settling of tied macro-tile keys; the tile ranges, the tile
schedule and a temporal window's cull, for both cameras too). The rasterizer's scalar loop, a Gluon kernel, is
compiled the same way in every (tile size, list class) configuration it is launched in, in float32 and where a class
has them in fp16 pairs, for each of the outputs (both, the float pair alone, the 8-bit image alone) and in its split
form: the interpreter cannot run it at all, so this is the only CPU check that its code lowers.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import importlib, itertools, os, subprocess, sys, tempfile
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
bin_ = importlib.import_module("kernels.bin")
lists = importlib.import_module("kernels.tile_lists")
project = importlib.import_module("kernels.project")
order = importlib.import_module("kernels.order")
sort = importlib.import_module("kernels.sort")
buffers = importlib.import_module("kernels.buffers")
from kernels.buffers import LIST_CHUNK, LIST_WARPS
TARGET = GPUTarget("cuda", 90, 32)


PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


# None, or what failed; with maxnreg (a register cap, as launched), also that ptxas fits it without a spill
def compile_one(fn, signature, constexprs, num_warps=4, maxnreg=None):
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    options = dict(num_warps=num_warps, **({} if maxnreg is None else {"maxnreg": maxnreg}))
    try:
        compiled = triton.compile(src, target=TARGET, options=options)
    except Exception as e:  # noqa: BLE001 - reported
        return f"{fn.__name__} {constexprs}: {str(e).splitlines()[-1][:200]}"
    if maxnreg is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        done = subprocess.run([PTXAS, "-v", "-arch=sm_90a", ptx, "-o", os.path.join(d, "k.cubin")],
                              capture_output=True, text=True)  # fmt: skip
    spills = [line for line in done.stderr.splitlines() if "spill stores" in line]
    if done.returncode != 0 or not spills or not spills[0].strip().startswith("0 bytes stack frame, 0 bytes spill"):
        return f"{fn.__name__} {constexprs} at {maxnreg} registers: {(spills or done.stderr.splitlines())[-1:]}"
    return None


def signature(names, types):
    return dict(zip(names, types))


configs = sorted({bin_.bin_config(n, f) for n in (1, 10_000, 100_000, 3_000_000) for f in (1.0, 20.0, 100.0, 2000.0)})
failures, compiled = [], 0
scalars = ["scaled", "M", "N", "capacity", "width", "height", "sentinel"]
# tile pairs at both key widths, and (int16) binned in two halves (kernels/buffers.py `key_halves`); the order and
# offsets whole in i64, and in blocks: i32 sums (i64 in halves) and the blocks' ends (kernels/buffers.py)
forms = (("*i16", False, "*i64", 0), ("*i32", False, "*i64", 0), ("*i16", True, "*i64", buffers.SCAN_BLOCK),
         ("*i16", False, "*i32", buffers.SCAN_BLOCK), ("*i32", False, "*i32", buffers.SCAN_BLOCK))  # fmt: skip
for (block, cols), tile, (key, halves, offsets_t, scan) in itertools.product(configs, (8, 16), forms):
    sig = {"order_ptr": "*i64", "offsets_ptr": offsets_t, "ends_ptr": "*i64", "records_ptr": "*fp32",
           "bin_t_ptr": "*fp32",
           "keys_ptr": key, "ids_ptr": "*i32", **{s: "i32" for s in scalars + ["split_row", "top"]},
           "capacity": "i64", "TILE": "constexpr", "BLOCK_N": "constexpr", "COLS": "constexpr",
           "KEY_OFFSET": "constexpr", "HALVES": "constexpr", "SCAN": "constexpr"}
    failures.append(compile_one(bin_._bin_tiles_kernel, sig, {"TILE": tile, "BLOCK_N": block, "COLS": cols,
                                "KEY_OFFSET": 32768 if key == "*i16" else 0, "HALVES": halves, "SCAN": scan},
                                bin_.bin_warps(cols)))  # fmt: skip
    compiled += 1
for (block, cols), tile, indexed in itertools.product(configs, (8, 16), (False, True)):
    sig = {"order_ptr": "*i32" if indexed else "*i64", "offsets_ptr": "*i64", "records_ptr": "*fp32",
           "depths_ptr": "*fp32", "bin_t_ptr": "*fp32", "keys_ptr": "*i32", "entries_ptr": "*i64",
           **{s: "i32" for s in scalars + ["bits", "shift"]}, "capacity": "i64", "TILE": "constexpr",
           "BLOCK_N": "constexpr", "COLS": "constexpr", "INDEXED": "constexpr"}
    failures.append(compile_one(bin_._bin_macro_kernel, sig, {"TILE": tile, "BLOCK_N": block, "COLS": cols,
                                                              "INDEXED": indexed}, bin_.bin_warps(cols)))
    compiled += 1
sig = {"keys_ptr": "*i32", "entries_ptr": "*i64", "counts_ptr": "*i32", "C": "i32", "n_macros": "i32",
       "n_chunks": "i32", "shift": "i32", "CHUNK": "constexpr"}
failures.append(compile_one(lists._chunk_counts_kernel, sig, {"CHUNK": LIST_CHUNK}, LIST_WARPS))
sig = {"keys_ptr": "*i32", "entries_ptr": "*i64", "cum_ptr": "*i32", "ids_ptr": "*i32", "ranges_ptr": "*i32",
       **{s: "i32" for s in ("C", "n_macros", "n_chunks", "n_mx", "n_tx", "n_ty", "L", "shift")}, "CHUNK": "constexpr"}
failures.append(compile_one(lists._scatter_kernel, sig, {"CHUNK": LIST_CHUNK}, LIST_WARPS))
sig = {"keys_ptr": "*i32", "perm_ptr": "*i64", "entries_ptr": "*i64", "depths_ptr": "*fp32", "out_ptr": "*i64",
       "C": "i32", "sentinel": "i32", "BLOCK": "constexpr"}
failures.append(compile_one(sort._settle_kernel, sig, {"BLOCK": sort.SETTLE_BLOCK}, sort.SETTLE_WARPS))
compiled += 3
failures.append(compile_one(lists._scan_kernel, {"counts_ptr": "*i32", "n_chunks": "i32", "BLOCK": "constexpr"},
                            {"BLOCK": lists.SCAN_BLOCK}, lists.SCAN_WARPS))
compiled += 1
sig = {"means_ptr": "*fp32", "covars_ptr": "*fp32", "opacities_ptr": "*fp32", "sh_ptr": "*fp16", "camera_ptr": "*fp32",
       "records_ptr": "*fp32", "depths_ptr": "*fp32", "tiles_touched_ptr": "*i32", "macros_touched_ptr": "*i32",
       "bin_t_ptr": "*fp32", "tau_ptr": "*fp32", "survivors_ptr": "*i32", "n_survivors_ptr": "*i32", "N": "i32",
       "width": "i32", "height": "i32", "near": "fp32", "far": "fp32", "eps2d": "fp32", "s_min": "fp32", "sh_n": "i32",
       "sh_k": "i32", "sh_c": "i32", "split_row": "i32", "DEGREE": "constexpr", "TILE": "constexpr",
       "ADAGSCALE": "constexpr", "MACROS": "constexpr", "HALVES": "constexpr", "WRITE_T": "constexpr",
       "INDEXED": "constexpr", "ORTHO": "constexpr", "BLOCK_N": "constexpr"}
# the survivors' form (INDEXED) as launched, under its register cap: without a spill at SH degrees 0 and 3
for (macros, halves), adagscale, indexed, ortho, degree in itertools.product(
        ((False, False), (True, False), (False, True)), (False, True), (False, True), (False, True), (0, 3)):
    if degree == 0 and not indexed:
        continue
    failures.append(compile_one(project._project_kernel, sig, {"DEGREE": degree, "TILE": 8, "ADAGSCALE": adagscale,
                                                                "MACROS": macros, "HALVES": halves,
                                                                "WRITE_T": adagscale, "INDEXED": indexed,
                                                                "ORTHO": ortho, "BLOCK_N": 128},
                                maxnreg=project.PROJECT_REGISTERS if indexed else None))  # fmt: skip
    compiled += 1
# the pre-cull (kernels/project.py `culls_frustum`), at both tile sizes, with and without the macro-tile counts
sig = {"means_ptr": "*fp32", "extent_ptr": "*fp32", "camera_ptr": "*fp32", "depths_ptr": "*fp32",
       "tiles_touched_ptr": "*i32", "macros_touched_ptr": "*i32", "survivors_ptr": "*i32", "n_survivors_ptr": "*i32",
       "bounds_ptr": "*fp32", "N": "i32", "width": "i32", "height": "i32", "near": "fp32", "far": "fp32",
       "eps2d": "fp32", "extent_scale": "fp32", "TILE": "constexpr", "MACROS": "constexpr", "TILES_ONLY": "constexpr",
       "ORTHO": "constexpr", "BOUNDS": "constexpr", "BLOCK": "constexpr"}
for tile, macros, tiles_only, ortho, bounds in itertools.product((8, 16), (False, True), (False, True), (False, True),
                                                                 (False, True)):  # fmt: skip
    failures.append(compile_one(project._frustum_kernel, sig, {"TILE": tile, "MACROS": macros, "TILES_ONLY": tiles_only,
                                                                "ORTHO": ortho, "BOUNDS": bounds,
                                                                "BLOCK": project.FRUSTUM_BLOCK},
                                project.FRUSTUM_WARPS))  # fmt: skip
    compiled += 1
for same, halves in ((False, False), (True, False), (False, True)):
    sig = {"tiles_touched_ptr": "*i32", "pair_counts_ptr": "*i32", "partials_ptr": "*i64",
           "N": "i32", "SAME": "constexpr", "HALVES": "constexpr", "BLOCK": "constexpr"}
    failures.append(compile_one(order._count_kernel, sig, {"SAME": same, "HALVES": halves,
                                                            "BLOCK": order.COUNT_BLOCK}, 8))
    compiled += 1
for compact in (False, True):
    sig = {"depths_ptr": "*fp32", "tiles_touched_ptr": "*i32", "partials_ptr": "*i64", "totals_ptr": "*i64",
           "cdepths_ptr": "*fp32",
           "cidx_ptr": "*i32", "N": "i32", "P": "i32", "COMPACT": "constexpr", "BLOCK": "constexpr",
           "SCAN": "constexpr"}
    failures.append(compile_one(order._finish_kernel, sig, {"COMPACT": compact, "BLOCK": order.COUNT_BLOCK,
                                                             "SCAN": order.COUNT_SCAN}, 8))
failures.append(compile_one(order._sum_kernel, {"values_ptr": "*i32", "total_ptr": "*i64", "N": "i32",
                                                "BLOCK": "constexpr"}, {"BLOCK": order.SUM_BLOCK}, 8))
for indexed, halves in itertools.product((False, True), (False, True)):
    sig = {"perm_ptr": "*i64", "cidx_ptr": "*i32", "pair_counts_ptr": "*i32", "order_ptr": "*i64",
           "local_ptr": "*i64" if halves else "*i32", "ends_ptr": "*i64", "M": "i32", "INDEXED": "constexpr",
           "HALVES": "constexpr", "BLOCK": "constexpr"}
    failures.append(compile_one(order._ordered_offsets_kernel, sig, {"INDEXED": indexed, "HALVES": halves,
                                "BLOCK": buffers.SCAN_BLOCK}, order.SCAN_WARPS))  # fmt: skip
compiled += 7
# the tile ranges of tile pairs (both key widths), the rasterizer's longest-first schedule at the tile counts of
# 1080p and 4K at 8 px and 16 px, and a temporal window's cull (kernels/schedule.py, cull.py)
for key in ("*i16", "*i32"):
    sig = {"keys_ptr": key, "ranges_ptr": "*i32", "C": "i32", "limit": "i32", "tile_base": "i32", "pos_base": "i32",
           "KEY_OFFSET": "constexpr", "BLOCK": "constexpr"}
    failures.append(compile_one(lists._tile_ranges_kernel, sig, {"KEY_OFFSET": 32768 if key == "*i16" else 0,
                                                                  "BLOCK": 1024}))
    compiled += 1
schedule = importlib.import_module("kernels.schedule")
sizes = ((1920, 1080), (3840, 2160))
for n_tiles in sorted({((w + t - 1) // t) * ((h + t - 1) // t) for w, h in sizes for t in (8, 16)}):
    block = schedule.schedule_block(n_tiles)
    warps = min(8, block // 32)
    # the ranges read, or found in the sorted tile pair keys of either width
    for keys, offset in (("*i32", 0), ("*i16", buffers.key_offset(torch.int16)), ("*i32", None)):
        sig = {"ranges_ptr": "*i32", "tile_counts_ptr": "*i32", "hist_ptr": "*i32", "n_tiles": "i32",
               "keys_ptr": keys, "top": "i32", "n_keys": "i32", "split_tile": "i32", "steps": "i32",
               "CLASSES": "constexpr", "CLASS_SLOTS": "constexpr", "BLOCK": "constexpr", "FROM_KEYS": "constexpr",
               "KEY_OFFSET": "constexpr"}
        failures.append(compile_one(schedule._class_histogram_kernel, sig, {"CLASSES": schedule.CLASSES,
                                    "CLASS_SLOTS": schedule.CLASS_SLOTS, "BLOCK": block,
                                    "FROM_KEYS": offset is not None, "KEY_OFFSET": offset or 0}, warps))
    for has_longest in (False, True):
        sig = {"tile_counts_ptr": "*i32", "hist_ptr": "*i32", "schedule_ptr": "*i32",
               "longest_ptr": "*i64" if has_longest else "*i32", "n_tiles": "i32", "n_blocks": "i32",
               "CLASSES": "constexpr", "CLASS_SLOTS": "constexpr", "BLOCK": "constexpr", "ROWS": "constexpr",
               "HAS_LONGEST": "constexpr"}
        failures.append(compile_one(schedule._place_kernel, sig, {"CLASSES": schedule.CLASSES,
                                    "CLASS_SLOTS": schedule.CLASS_SLOTS, "BLOCK": block, "ROWS": 64,
                                    "HAS_LONGEST": has_longest}, warps))
    compiled += 5
cull = importlib.import_module("kernels.cull")
sig = {"means_ptr": "*fp32", "covars_ptr": "*fp32", "opacities_ptr": "*fp32", "cameras_ptr": "*fp32", "keep_ptr": "*i8",
       "N": "i32", "n_cams": "i32", "width": "i32", "height": "i32", "near": "fp32", "far": "fp32", "eps2d": "fp32",
       "margin": "fp32", "guard2": "fp32", "TILE": "constexpr", "ORTHO": "constexpr", "BLOCK_N": "constexpr"}
for tile, ortho in itertools.product((8, 16), (False, True)):
    failures.append(compile_one(cull._cull_window_kernel, sig, {"TILE": tile, "ORTHO": ortho, "BLOCK_N": 128}))
    compiled += 1
failures = [f for f in failures if f]
print(f"compiled {compiled}, failed {len(failures)}")
print("\n".join(failures))
sys.exit(1 if failures else 0)
"""


def test_binning_and_list_kernels_compile_for_sm90():
    env = {**os.environ, "TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    summary = [line for line in done.stdout.splitlines() if line]
    assert done.returncode == 0, "\n".join(summary or done.stderr.splitlines()[-5:])
    assert summary[0].startswith("compiled ") and int(summary[0].split()[1].rstrip(",")) >= 20, summary


RASTER_CHILD = r"""
import importlib, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.experimental.gluon._runtime import GluonASTSource
raster = importlib.import_module("kernels.rasterize")
TARGET = GPUTarget("cuda", 90, 32)
failures, compiled = [], 0
# the outputs (RenderSettings.outputs): both, the float pair alone, the 8-bit image alone; an output left out gets
# another's pointer (kernels/rasterize.py `rasterize_tiles`), so its element type is that one's
OUTPUTS = {"both": ("*fp32", "*fp32", "*u8", True, True), "float": ("*fp32", "*fp32", "*fp32", True, False),
           "rgba8": ("*u8", "*u8", "*u8", False, True)}
# the float32 loop in every class, and the fp16 pairs (HALF) in each class that has them (kernels/rasterize.py)
for (tile, lists), (warps, step), half in [(k, v, False) for k, v in sorted(raster.SCALAR_CONFIG.items())] + [
    (k, v, True) for k, v in sorted(raster.HALF_CONFIG.items())
]:
    parts = raster.SPLIT_CONFIG.get((tile, lists), (0, 0, 1))[2]
    # the lists read directly (macro-tile frames) or through the pair sort's permutation (frames binned per tile)
    for (rgb, alpha, rgba8, floats, bytes_), split, indirect in [
        (o, s, i) for o in OUTPUTS.values() for s in {1, parts} for i in (False, True)
    ]:
        sig = {"ids_ptr": "*i32", "perm_ptr": "*i64" if indirect else "*i32", "ranges_ptr": "*i32",
               "rec_ptr": "*fp32", "bg_ptr": "*fp32", "schedule_ptr": "*i32",
               "rgb_ptr": rgb, "alpha_ptr": alpha, "rgba8_ptr": rgba8, "parts_ptr": "*fp32" if split > 1 else rgb,
               "width": "i32", "height": "i32", "split_from": "i32", "n_split": "i32", "ids_split_tile": "i32",
               "ids_split_at": "i32", "TILE": "constexpr",
               "WARPS": "constexpr", "STEP": "constexpr", "HAS_FLOAT": "constexpr", "HAS_RGBA8": "constexpr",
               "SCHEDULED": "constexpr", "PARTS": "constexpr", "INDIRECT": "constexpr", "HALF": "constexpr"}
        cx = {"TILE": tile, "WARPS": warps, "STEP": step, "HAS_FLOAT": floats, "HAS_RGBA8": bytes_,
              "SCHEDULED": True, "PARTS": split, "INDIRECT": indirect, "HALF": half}
        try:
            triton.compile(GluonASTSource(fn=raster._rasterize_shared_kernel, signature=sig, constexprs=cx),
                           target=TARGET, options=dict(num_warps=warps))
        except Exception as e:  # noqa: BLE001 - reported
            failures.append(f"{cx}: {str(e).splitlines()[-1][:200]}")
        compiled += 1
for (tile, lists), (_, _, parts) in raster.SPLIT_CONFIG.items():
    for rgb, alpha, rgba8, floats, bytes_ in OUTPUTS.values():
        sig = {"ranges_ptr": "*i32", "schedule_ptr": "*i32", "parts_ptr": "*fp32", "bg_ptr": "*fp32",
               "rgb_ptr": rgb, "alpha_ptr": alpha, "rgba8_ptr": rgba8, "width": "i32", "height": "i32",
               "split_from": "i32", "TILE": "constexpr", "PARTS": "constexpr", "HAS_FLOAT": "constexpr",
               "HAS_RGBA8": "constexpr"}
        try:
            triton.compile(ASTSource(fn=raster._combine_parts_kernel, signature=sig,
                                     constexprs={"TILE": tile, "PARTS": parts, "HAS_FLOAT": floats,
                                                 "HAS_RGBA8": bytes_}),
                           target=TARGET, options=dict(num_warps=max(1, tile * tile // 32)))
        except Exception as e:  # noqa: BLE001 - reported
            failures.append(f"combine {tile} {rgb} {rgba8}: {str(e).splitlines()[-1][:200]}")
        compiled += 1
print(f"compiled {compiled}, failed {len(failures)}")
print("\n".join(failures))
sys.exit(1 if failures else 0)
"""


def test_the_scalar_rasterizer_compiles_for_sm90_in_every_launch_configuration():
    env = {**os.environ, "TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", RASTER_CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    summary = [line for line in done.stdout.splitlines() if line]
    assert done.returncode == 0, "\n".join(summary or done.stderr.splitlines()[-5:])
    assert summary[0].startswith("compiled ") and int(summary[0].split()[1].rstrip(",")) >= 75, summary
