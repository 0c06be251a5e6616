"""What `warpsplat bench` renders: its real scenes, the composites it builds from them, and the camera paths
over each (orbits of an object; a fly-over and an overview of a composite)."""

from __future__ import annotations

import argparse
import fnmatch
import math
import os
import sys
import time

from .cli import CliError, gaussian_count

# Real scenes of the benchmark (file names in the scenes folder) and the quick subset.
DEFAULT_SCENES = [
    "playbot_lod0.sog",
    "plant.splat",
    "winter_fountain.splat",
    "narcissus.sog",
    "fruit_drops_minimal.ply",
]
QUICK_SCENES = ["plant.splat", "fruit_drops_minimal.ply"]
# Composites (SH degree 2) of these real scenes, made by `warpsplat compose`.
COMPOSITE_INPUTS = ["playbot_lod0.sog", "narcissus.sog", "plant.splat", "winter_fountain.splat"]

# The paths' names, as object_paths and composite_paths return them: --paths is checked against them up front.
OBJECT_PATHS = ("orbit", "close")
COMPOSITE_PATHS = ("flyover", "overview")

# The close orbit's distance as a fraction of the default framing's: the object then overfills the frame, the
# hardest kind of object view (large footprints, long tile lists), where a renderer's speed matters most.
CLOSE_ORBIT = 0.5


def parse_count(text: str) -> int:
    """One --composites entry: '6M' -> 6_000_000."""
    try:
        return gaussian_count(text)
    except argparse.ArgumentTypeError as e:
        raise CliError(f"--composites {e}") from None


def check_path_patterns(patterns: str, scenes: list[str], composites: list[str]) -> None:
    """Each comma-separated --paths pattern must match one of this run's paths, by its name or as SCENE/PATH
    (`scenes`, `composites`: file names), as `bench.path_selected` matches them: one that matches none selected
    nothing, silently. A run without scenes has no paths to match."""
    run = [(s, p) for s in scenes for p in OBJECT_PATHS] + [(c, p) for c in composites for p in COMPOSITE_PATHS]
    names = list(dict.fromkeys(p for _, p in run))
    known = names + [f"{s}/{p}" for s, p in run]
    for pat in (p.strip() for p in patterns.split(",")):
        if pat and run and not fnmatch.filter(known, pat):
            raise CliError(f"--paths {patterns!r}: {pat!r} matches none of this run's paths: {', '.join(names)} "
                           f"(as PATH or SCENE/PATH, SCENE one of {', '.join(scenes + composites)})")  # fmt: skip


def composite_name(label: str) -> str:
    """The file (in the cache folder) of the composite of --composites LABEL, and its SCENE in the results."""
    return f"composite_{label}.ply"


def find_scene(name: str, scenes_dir: str | None) -> str:
    if os.path.exists(name):
        return name
    for d in (scenes_dir, os.environ.get("WARPSPLAT_SCENES")):
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise CliError(f"scene {name}: not found (give a path, --scenes-dir or WARPSPLAT_SCENES)")


def object_paths(scene, width, height, n):
    """The default orbit (the whole object in view) and a close one (the object overfilling the frame)."""
    from renderer.paths import orbit_path, scene_frame

    f = scene_frame(scene, width, height)
    elev = math.radians(f.elevation_deg)
    close = dict(radius=CLOSE_ORBIT * f.distance * math.cos(elev), rise=CLOSE_ORBIT * f.distance * math.sin(elev))
    return {"orbit": orbit_path(scene, width, height, n), "close": orbit_path(scene, width, height, n, **close)}


def composite_paths(scene, width, height, n):
    """A low fly-over crossing the grid along x, and an overview that sees all of it (the worst case).

    Composites lie in the ground plane (x-z), up is -y, each cell a normalised scene of size ~1.
    """
    import numpy as np

    from renderer import Camera, look_at_pose
    from renderer.paths import orbit_path

    lo, hi = (v.double().numpy() for v in scene.robust_bounds())
    zc = 0.5 * (lo[2] + hi[2])
    height_y = lo[1] - 0.6  # 0.6 above the tops of the objects (up is -y)
    pitch = np.radians(30.0)
    fly = []
    for i in range(n):
        x = lo[0] - 0.5 + (hi[0] - lo[0] + 1.0) * i / max(n - 1, 1)
        eye = np.array([x, height_y, zc])
        target = eye + np.array([np.cos(pitch), np.sin(pitch), 0.0])  # forward along +x, looking down
        fly.append(Camera.from_fov(width, height, 60.0, look_at_pose(eye, target, (0, -1, 0))))
    return {"flyover": fly, "overview": orbit_path(scene, width, height, n, turns=0.25)}


def build_composite(label: str, target: int, inputs: list[str], cache_dir: str) -> str:
    """A composite of real scenes made by the scene composer (cached as .ply between runs)."""
    from scenes import load_scene

    from .compose import compose

    os.makedirs(cache_dir, exist_ok=True)
    out = os.path.join(cache_dir, composite_name(label))
    if os.path.exists(out):
        return out
    scenes = [load_scene(p) for p in inputs]
    copies = max(1, round(target / (sum(len(s) for s in scenes) / len(scenes))))
    cols = math.ceil(math.sqrt(copies))
    t0 = time.perf_counter()
    n = compose(scenes, out, grid=(cols, math.ceil(copies / cols)), target_count=target, sh_degree=2)
    print(f"  composed {label}: {n:,} Gaussians from {len(inputs)} scenes in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)  # fmt: skip
    return out
