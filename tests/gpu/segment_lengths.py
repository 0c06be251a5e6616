"""How long each macro-tile's list of pairs is on the bench's paths: the segments a per-macro-tile depth sort would
sort (issue 24's direction after BENCHMARKS.md, section 38). Counts, not times: any device will do, the CPU's torch
reference included (a few minutes at 6M Gaussians). One frame a path (its middle camera), binned per macro-tile
on the capacity route; prints the macro-tiles that hold pairs, the pairs, the segments' p50, p90, p99 and
longest, and the share of the pairs in segments longer than 1,024, 4,096 and 16,384.

    python3 tests/gpu/segment_lengths.py --scenes plant.splat playbot_lod0.sog --composites 6M --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

from kernels.buffers import depth_bits  # noqa: E402
from renderer import Renderer, RenderSettings  # noqa: E402
from renderer.launch import LaunchConfig  # noqa: E402
from scenes import load_scene  # noqa: E402
from tools.bench_paths import (  # noqa: E402
    COMPOSITE_INPUTS,
    build_composite,
    composite_paths,
    find_scene,
    object_paths,
    parse_count,
)

FRAMES = 20  # the bench's path length; the middle one is taken
LONG = (1024, 4096, 16384)


def segment_stats(sorted_keys: torch.Tensor, n_macros: int) -> dict:
    keys = sorted_keys.long() >> depth_bits(n_macros)  # the macro-tiles, above the rounded depths
    lengths = torch.bincount(keys[keys < n_macros], minlength=n_macros)
    held = lengths[lengths > 0].double()
    total = float(held.sum())
    q = torch.quantile(held, torch.tensor([0.5, 0.9, 0.99], dtype=torch.float64)).tolist() if held.numel() else [0] * 3
    return dict(macro_tiles=int(held.numel()), of=n_macros, pairs=int(total), p50=q[0], p90=q[1], p99=q[2],
                longest=int(held.max()) if held.numel() else 0,
                **{f"share_over_{n}": float(held[held > n].sum()) / max(total, 1.0) for n in LONG})  # fmt: skip


@torch.inference_mode()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="*", default=["plant.splat", "playbot_lod0.sog"])
    p.add_argument("--composites", default="6M")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--cache-dir", default="/tmp/warpsplat-bench")
    p.add_argument("--size", type=lambda v: tuple(int(x) for x in v.split("x")), default=(1920, 1080))
    p.add_argument("--device", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    jobs = [(find_scene(n, args.scenes_dir), object_paths) for n in args.scenes]
    comps = [c for c in args.composites.split(",") if c and c != "none"]
    if comps:
        inputs = [find_scene(n, args.scenes_dir) for n in COMPOSITE_INPUTS]
        jobs += [(build_composite(c, parse_count(c), inputs, args.cache_dir), composite_paths) for c in comps]
    rows = []
    for path, make_paths in jobs:
        scene = load_scene(path)
        r = Renderer(scene, device=args.device)
        r.frame_mode = "graph"  # the capacity route: its pairs stay in the workspace, by name
        for name, cams in make_paths(scene, *args.size, FRAMES).items():
            r.launch = LaunchConfig(macro=True)
            r._first_frame = False  # keep the forced form for this frame (pipeline's first frame re-chooses)
            out = r.render(cams[FRAMES // 2], RenderSettings())
            tile = 8
            n_tx, n_ty = -(-args.size[0] // tile), -(-args.size[1] // tile)
            n_mx, n_my = r.k.macro_grid(n_tx, n_ty)
            keys = r.ws.buffer("sorted_macro_keys", r.macro_capacity.size, r.k.MACRO_KEY_DTYPE)
            row = dict(path=f"{os.path.basename(path)}/{name}", visible=out.stats.n_visible,
                       tile_pairs=out.stats.n_pairs, **segment_stats(keys, n_mx * n_my))  # fmt: skip
            rows.append(row)
            print(
                f"{row['path']}: {row['visible']:,} visible, {row['tile_pairs']:,} tile pairs, {row['pairs']:,} "
                f"macro-tile pairs in {row['macro_tiles']} of {row['of']} macro-tiles; segments p50 "
                f"{row['p50']:.0f}, p90 {row['p90']:.0f}, p99 {row['p99']:.0f}, longest {row['longest']:,}; pairs "
                "in segments over " + ", ".join(f"{n:,}: {row[f'share_over_{n}']:.0%}" for n in LONG),
                flush=True,
            )
        del r
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
