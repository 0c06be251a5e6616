"""Count Triton compilations along a camera path that crosses every launch class, after the renderer's warm-up
(run on the GPU machine: the interpreter compiles nothing). Prints one JSON line; tests/gpu/test_no_compile_after_
first_frame.py runs it in fresh processes (a process that compiled the kernels before would count nothing).

    python3 tests/gpu/compile_check.py --case graph            # 400k synthetic Gaussians, frames as CUDA graphs
    python3 tests/gpu/compile_check.py --case dense            # 3M a pixel wide at 640x360: the long-list class
    python3 tests/gpu/compile_check.py --case counted          # 4.2M synthetic Gaussians, counted frames
    python3 tests/gpu/compile_check.py --case huge             # 8k Gaussians of 100-1000 tiles each
    python3 tests/gpu/compile_check.py --case graph --no-warm-up   # the check's own check: it must count some
    python3 tests/gpu/compile_check.py --case graph --flips    # and each switch of the viewer flipped mid-path

Each case flies from far outside a cube of Gaussians to inside its near face: the tile lists go from short to
long (list classes 0, 1 and 2), and the footprints grow past the bin stage's wide-step threshold; between them
the cases take every bin configuration (bench paths do not cross them all on one scene). The graph and counted
cases then turn away from the cube and back: the projection's pre-cull goes on and off (kernels/project.py
`culls_frustum`). Counted: every
call of Triton's jit_post_compile_hook (a compile, or a load from Triton's on-disk cache: both stall a frame),
in every thread, and the kernel module loads of every launch (Triton's kernel_load_start_hook), split into
the warm-up, the first frame, and the frames after it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from renderer import Camera, Renderer, RenderSettings  # noqa: E402
from renderer.frame import CountedFrame  # noqa: E402
from renderer.warmup import compile_counter, switch_settings, warm_up  # noqa: E402
from scenes import GaussianScene  # noqa: E402

CASES = {  # Gaussians, log-scale of their axes (+ up to 0.5), camera distances from the cube's centre, frame size
    "graph": (400_000, -4.5, np.geomspace(8.0, 1.05, 48), "1920x1080"),
    # Gaussians a pixel wide, many to a tile: the long lists of small footprints (list class 2), then class 1
    "dense": (3_000_000, -6.5, np.geomspace(8.0, 1.05, 24), "640x360"),
    "counted": (4_200_000, -5.6, np.geomspace(8.0, 1.05, 24), "1920x1080"),
    # few Gaussians of a hundred tiles and more each: the bin stage's few-huge class (kernels/bin.py `bin_config`)
    "huge": (8_000, -2.5, np.geomspace(8.0, 1.05, 16), "1920x1080"),
}
# "viewer": a switch on, and the colour view's outputs, the 8-bit image alone (app/frames.py MODE_OUTPUTS)
SETTINGS = {"exact": RenderSettings(), "viewer": RenderSettings(adagscale=True, outputs="rgba8")}
FLIP_FIELDS = ("sh_degree", "tile_size", "rasterizer", "blend_precision", "adagscale", "ortho", "depth")


def cube_scene(n: int, log_scale: float, sh_coeffs: int = 4) -> GaussianScene:
    g = torch.Generator().manual_seed(0)
    return GaussianScene(
        means=torch.rand(n, 3, generator=g) * 2 - 1,
        quats=torch.randn(n, 4, generator=g),
        log_scales=torch.full((n, 3), log_scale) + 0.5 * torch.rand(n, 3, generator=g),
        opacity_logits=torch.randn(n, generator=g) + 1.0,
        sh=torch.randn(n, sh_coeffs, 3, generator=g) * 0.2,
    )


def fly_in(distances, width: int, height: int, turn: bool = False) -> list[Camera]:
    """The fly-in; `turn`: then from its last place, twice away from the cube (nothing visible: the next frame
    pre-culls) and twice back at it (all of it ahead again: the pre-cull goes off)."""
    up = np.array([0.0, -1.0, 0.0])
    cams = [Camera.look_at(np.array([0.1, 0.05, -d]), np.zeros(3), up=up, width=width, height=height)
            for d in distances]  # fmt: skip
    if turn:
        eye = np.array([0.1, 0.05, -distances[-1]])
        away = Camera.look_at(eye, eye + np.array([0.0, 0.0, -1.0]), up=up, width=width, height=height)
        cams += [away, away, cams[-1], cams[-1]]
    return cams


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), default="graph")
    parser.add_argument("--settings", choices=sorted(SETTINGS), default="exact")
    parser.add_argument("--size", default=None, help="frame size (default: the case's)")
    parser.add_argument("--no-warm-up", action="store_true", help="skip the warm-up (the check must then fail)")
    parser.add_argument("--stream", action="store_true", help="render the path through render_stream")
    flips_help = "also warm each single flip of the viewer's switches, then render the path with each"
    parser.add_argument("--flips", action="store_true", help=flips_help)
    args = parser.parse_args()
    import triton

    n, log_scale, distances, size = CASES[args.case]
    args.size = args.size or size
    width, height = map(int, args.size.split("x"))
    settings = SETTINGS[args.settings]
    counter = compile_counter()
    loads = []
    triton.knobs.runtime.kernel_load_start_hook.add(lambda *a, **k: loads.append(a[2] if len(a) > 2 else "?"))
    t0 = time.perf_counter()
    renderer = Renderer(cube_scene(n, log_scale), device="cuda", frame_size=(width, height))
    cams = fly_in(distances, width, height, turn=args.case in ("graph", "counted"))
    if args.case == "counted":  # then from far outside straight back inside: a frame far denser than the one its
        # list class came from takes the class remembered for frames like it, mid-frame (renderer/frame.py
        # `CountedFrame._class_for`)
        cams += [cams[0]] * 3 + cams[-2:]
    remembered = []  # (pairs, the class a jump frame took, the launch configuration's)
    take_class = CountedFrame._class_for

    def class_for(f, pairs):
        lists = take_class(f, pairs)
        if lists != f.launch.lists:
            remembered.append((pairs, lists, f.launch.lists))
        return lists

    CountedFrame._class_for = class_for
    # --flips: the viewer's switches one flip from the settings (renderer/warmup.py `switch_settings`, which the
    # viewer warms in the background): SH degree, tile size, rasterizer loop, blending, AdaGScale, ortho, depth
    flips = [
        v for v in switch_settings(settings, 1) if sum(getattr(v, k) != getattr(settings, k) for k in FLIP_FIELDS) == 1
    ]
    flips = flips if args.flips else []
    t_warm = time.perf_counter()
    report = None if args.no_warm_up else warm_up(renderer, [(width, height)], [settings, *flips])
    warm_s = time.perf_counter() - t_warm
    warm_compiles, warm_loads = counter.count(-1), len(loads)
    remembered.clear()  # the path's frames alone
    renderer.render(cams[0], settings)
    torch.cuda.synchronize()
    first_compiles, first_loads = counter.count(-1) - warm_compiles, len(loads) - warm_loads
    configs, frame_ms = set(), []
    if args.stream:
        outs = renderer.render_stream(cams[1:], settings)
        for _ in outs:
            configs.add(renderer.launch)
    else:
        for cam in cams[1:]:
            t = time.perf_counter()
            renderer.render(cam, settings)
            frame_ms.append((time.perf_counter() - t) * 1e3)
            configs.add(renderer.launch)
    flipped = []
    for v in flips:  # a flip mid-path, as a user's: every fourth frame of the path with it
        for cam in cams[::4]:
            renderer.render(cam, v)
        flipped.append(",".join(f"{k}={getattr(v, k)}" for k in FLIP_FIELDS if getattr(v, k) != getattr(settings, k)))
    torch.cuda.synchronize()
    after = counter.count(-1) - warm_compiles - first_compiles
    result = {
        "case": args.case, "settings": args.settings, "size": args.size, "gaussians": n, "counted": renderer.counted(),
        "warm_up": not args.no_warm_up, "warm_up_s": round(warm_s, 2), "warm_up_frames": report and report.frames,
        "warm_up_compiles": warm_compiles, "warm_up_loads": warm_loads,
        "first_frame_compiles": first_compiles, "first_frame_loads": first_loads,
        "compiles_after_first_frame": after, "loads_after_first_frame": len(loads) - warm_loads - first_loads,
        "kernels_loaded_after_first_frame": sorted(set(loads[warm_loads + first_loads :])),
        "frames": len(cams), "worst_frame_ms": round(max(frame_ms), 2) if frame_ms else None,
        "median_frame_ms": round(float(np.median(frame_ms)), 3) if frame_ms else None,
        "lists": sorted({c.lists for c in configs}), "bin_blocks": sorted({c.bin_block for c in configs}),
        "bin_cols": sorted({c.bin_cols for c in configs}), "project_blocks": sorted({c.project_block for c in configs}),
        "bins": sorted({(c.bin_block, c.bin_cols) for c in configs}), "culls": sorted({c.cull for c in configs}),
        "halves": sorted({f.halves for f in renderer.frames.frames.values() if f.halves is not None}),
        "classes_remembered": remembered, "flips": flipped, "total_s": round(time.perf_counter() - t0, 2),
    }  # fmt: skip
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
