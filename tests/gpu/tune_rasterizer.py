"""Time the rasterize stage alone for each loop form and tuning knob on real frames (GPU machine only).

Usage: python3 tests/gpu/tune_rasterizer.py SCENE [WIDTHxHEIGHT]. Prints a table; the image of every
configuration is checked against the default one (the knobs must not change the image).
"""

import sys

import torch
import triton.testing

import kernels
from renderer import Renderer
from renderer.paths import orbit_path
from scenes import load_scene


def main(path: str, size: str = "1920x1080", chunks: str = "") -> None:
    W, H = (int(v) for v in size.split("x"))
    scene = load_scene(path)
    r = Renderer(scene, device="cuda", backend="triton")
    cam = orbit_path(scene, W, H, 8)[1]
    if chunks:
        tune_chunks(r, cam, [int(c) for c in chunks.split(",")])
        return
    out = r.render(cam)
    ref_img = out.image.clone()
    means2d, conic_opacity, _, colors, _, extents = r._proj
    ids = r._pairs[4][: out.stats.n_pairs]
    ranges = r._image[3]
    bg = torch.zeros(3, device="cuda")
    print(f"{path} {W}x{H}: {out.stats.n_pairs:,} pairs, longest tile {out.stats.max_tile_pairs:,}")
    for variant, steps, warps in (("scalar", (4, 8, 16, 32), (2, 4, 8)), ("batched", (8, 16, 32), (4, 8))):
        for step in steps:
            for nw in warps:

                def fn(variant=variant, step=step, nw=nw):
                    kernels.rasterize_tiles(
                        ids,
                        ranges,
                        means2d,
                        conic_opacity,
                        colors,
                        bg,
                        W,
                        H,
                        variant=variant,
                        step=step,
                        num_warps=nw,
                        out=(r._image[0], r._image[1], r._image[2]),
                    )

                ms = triton.testing.do_bench(fn, warmup=5, rep=40)
                diff = (r._image[0] - ref_img).abs().max().item()
                print(f"  {variant:8} step {step:3} warps {nw}: {ms:7.3f} ms  (max |diff| vs default {diff:.1e})")


def tune_chunks(r: Renderer, cam, chunks: list[int]) -> None:
    """Whole-frame time against the load-balancing chunk size (0 = off)."""
    from renderer import RenderSettings

    base = r.render(cam, RenderSettings(load_balance=False)).image.clone()
    print(f"  pairs {r.render(cam).stats.n_pairs:,}, longest tile {r.render(cam).stats.max_tile_pairs:,}")
    for c in chunks:
        settings = RenderSettings(load_balance=c > 0, chunk_size=max(c, 16))
        ms = triton.testing.do_bench(lambda settings=settings: r.render(cam, settings, sync_stats=False), rep=100)
        diff = (r.render(cam, settings).image - base).abs().max().item()
        print(f"  chunk {c:6}: frame {ms:7.3f} ms  (max |diff| vs unbalanced {diff:.1e})")


if __name__ == "__main__":
    main(*sys.argv[1:])
