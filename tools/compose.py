"""`warpsplat compose OUT SCENE... --grid NxM`: tile many real scenes into one large scene (for benchmarks).

Each input is normalised once: centred on the per-axis median of its means and scaled so that the largest
side of its 1st-99th percentile box is 1 (log-scales shift by the log of the factor; quaternions and SH are
unchanged by a uniform scale and a translation). Copies then fill the cells of an N (along x) by M (along
z) grid, `--spacing` apart, cycling through the inputs. Scenes are in the PLY frame (up is -y), so the grid
lies in the ground plane.

With `--target-count T`, copies continue cell by cell (the grid grows by rows when it runs out of cells)
until T Gaussians are placed; the last copy keeps a seeded random subset of its rows so that the total is
exactly T. The output SH degree is the largest input degree (lower-degree inputs get zero coefficients,
which render identically) unless `--sh-degree` says otherwise.

Memory: a `.ply` output is streamed copy by copy, so peak memory is the inputs plus one copy whatever T is
(measured figures at the NOTE below). Other formats build the whole scene in memory first:
(12 + 16 + 12 + 4 + 12 K) bytes per Gaussian plus the writer's own working copies. Before composing, the memory
this needs is checked against the free memory (or WARPSPLAT_MAX_MEMORY, as the readers do), and the output's
size against the free disk where the format's size is known beforehand.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from .cli import CliError, add_command, gaussian_count, note
from .common import add_mkdir_argument

if TYPE_CHECKING:
    import torch

    from scenes import GaussianScene

# NOTE measured on the shared 2-core CPU machine: 30M Gaussians (playbot_lod0 + flowers_lod2, SH degree 2,
# a 4.56 GB .ply) composed in 26 s with a peak RSS of 0.6 GB, disk writes included.

PROGRESS_MIN_GAUSSIANS = 2_000_000
MAX_SPACING = 1000.0  # cell spacing in scene sizes: far beyond any layout, and float32 still resolves a copy

# Peak memory of an in-memory compose over the float32 arrays of its output (scenes.limits.scene_bytes), measured
# at 1-2M Gaussians: .splat 2.2-4.6, .glb 3.8-5.3, .compressed.ply 4.2-5.1, .sog 3.5-5.7, .spz 4.0-5.7 (the
# highest at SH degree 0, where the writers' per-Gaussian buffers weigh most). The parts and their concatenation
# are two of it; the rest is the writer's.
IN_MEMORY_FACTOR = 6
# Python objects per copy (its plan entry and cell offset): 250 bytes measured, 1M copies of a 3-Gaussian scene.
COPY_BYTES = 256
# Bytes a Gaussian takes in the formats with a fixed size per Gaussian (k: SH coefficients per channel), for the
# free-disk check. SPZ and SOG are entropy-coded, their size depends on the data (copies of one scene compress far
# better than a trained scene), so only their memory is checked.
OUTPUT_BYTES = {
    "ply": lambda k: 4 * (11 + 3 * k),  # float32 rows, without the normals (compose writes none)
    "glb": lambda k: 4 * (11 + 3 * k) + 4,  # float attributes and an 8-bit RGBA fallback colour
    "compressed-ply": lambda k: 16 + 3 * (k - 1) + 1,  # packed rows, 8-bit SH, 72 bytes a chunk of 256
    "splat": lambda k: 32,
}
HEADER_BYTES = 1 << 16  # room for any format's header (a few kB)


def parse_grid(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not COLUMNSxROWS (e.g. 4x4)")
    n, m = int(parts[0]), int(parts[1])
    if not (1 <= n <= 4096 and 1 <= m <= 4096):
        raise argparse.ArgumentTypeError(f"{text!r}: each side must be 1-4096")
    return n, m


def add_parser(sub) -> None:
    p = add_command(
        sub,
        "compose",
        summary="tile normalised copies of scenes on a grid into one large scene",
        description="""
            Build a large scene from real ones, for benchmarks: each input is centred and scaled to size 1,
            and copies fill the cells of a COLUMNSxROWS grid in the ground plane, cycling through the inputs.
            With --target-count, copies continue until exactly that many Gaussians are placed.
        """,
        examples="""
            warpsplat compose big.ply a.sog b.splat --grid 6x4 --target-count 6M
            warpsplat compose row.spz plant.splat --grid 3x1   # three copies side by side
        """,
    )
    p.add_argument("output", metavar="OUT", help="output file; its extension picks the format (.ply is streamed)")
    p.add_argument("scenes", nargs="+", help="input scene files or folders (used in turn)")
    p.add_argument("--grid", type=parse_grid, default=(1, 1), help="COLUMNSxROWS of the tiling (default 1x1)")
    p.add_argument("--target-count", type=gaussian_count, default=None,
                   help="add copies until exactly this many Gaussians (6M, 300k or 1500)")  # fmt: skip
    p.add_argument("--sh-degree", type=int, default=None, help="output SH degree 0-3 (default: largest input)")
    p.add_argument("--spacing", type=float, default=1.25, help="distance between cell centres (scenes are size 1)")
    p.add_argument("--seed", type=int, default=0, help="seed (0 or more) for the subset of the last, partial copy")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_mkdir_argument(p, "OUT")
    p.set_defaults(func=run)


def normalise(scene: GaussianScene) -> GaussianScene:
    """Centre on the median of the means and scale the 1-99% box's largest side to 1."""
    lo, hi = scene.robust_bounds()
    size = float((hi - lo).max())
    if not math.isfinite(size) or size <= 0:
        lo, hi = scene.bounds()
        size = float((hi - lo).max()) or 1.0
    s = 1.0 / size
    centre = scene.center()
    out = scene.subset(slice(None))
    out.means = ((scene.means - centre) * s).contiguous()
    out.log_scales = (scene.log_scales + math.log(s)).contiguous()
    return out


def _with_degree(sh: torch.Tensor, k: int) -> torch.Tensor:
    """[N, K0, 3] -> [N, k, 3]: drop bands or pad zero coefficients (zero SH adds no view dependence)."""
    import torch

    if sh.shape[1] >= k:
        return sh[:, :k]
    return torch.cat([sh, sh.new_zeros(sh.shape[0], k - sh.shape[1], 3)], 1)


def plan(counts: list[int], grid: tuple[int, int], target: int | None) -> tuple[list[tuple[int, int]], int]:
    """[(input index, rows to take)] per copy, and the number of grid rows used."""
    n, m = grid
    copies: list[tuple[int, int]] = []
    if target is None:
        copies = [(c % len(counts), counts[c % len(counts)]) for c in range(n * m)]
    else:
        total = 0
        while total < target:
            i = len(copies) % len(counts)
            take = min(counts[i], target - total)
            copies.append((i, take))
            total += take
    return copies, max(m, math.ceil(len(copies) / n))


def extent(counts: list[int], grid: tuple[int, int], target: int | None) -> tuple[int, int]:
    """(copies, Gaussians) of plan()'s composite, counted without listing the copies: the checks made before
    composing must not take the time and memory of a plan of millions of copies."""
    if target is None:
        full, rest = divmod(grid[0] * grid[1], len(counts))
        return grid[0] * grid[1], full * sum(counts) + sum(counts[:rest])
    full, rest = divmod(target, sum(counts))
    copies = full * len(counts)
    for count in counts:  # the copies of the last, partial cycle
        if rest <= 0:
            break
        copies += 1
        rest -= count
    return copies, target


def sh_coeffs(scenes: list[GaussianScene], sh_degree: int | None) -> int:
    """SH coefficients per channel of the output: of `sh_degree`, or the largest input degree."""
    degree = max(s.sh_degree for s in scenes) if sh_degree is None else sh_degree
    return (degree + 1) ** 2


def check_room(out: str, fmt: str, counts: list[int], k: int, copies: int, total: int, *, stream: bool) -> None:
    """Refuse, before composing, an output that the memory or the output folder's free disk cannot hold."""
    from scenes.limits import MEMORY_CAP_ENV, gb, memory_cap, scene_bytes

    # the inputs are loaded: what composing allocates beyond them (normalise's new means and log-scales, the plan)
    need = 24 * sum(counts) + COPY_BYTES * copies
    # streamed, one copy at a time: its arrays, its PLY rows and their pieces
    need += 3 * scene_bytes(max(counts), k) if stream else IN_MEMORY_FACTOR * scene_bytes(total, k)
    cap, source = memory_cap()
    if cap is not None and need > cap:
        hint = "" if stream else "; a .ply output is streamed, in far less"
        raise CliError(
            f"{out}: composing {total:,} Gaussians needs about {gb(need)} of memory, more than the {gb(cap)} cap "
            f"({source}; set {MEMORY_CAP_ENV} to change it){hint}"
        )
    if fmt in OUTPUT_BYTES:
        size = total * OUTPUT_BYTES[fmt](k) + HEADER_BYTES
        folder = os.path.dirname(os.path.abspath(out))  # the output is written beside OUT, then renamed
        free = shutil.disk_usage(folder).free
        if size > free:
            raise CliError(
                f"{out}: {total:,} Gaussians take about {gb(size)} on disk, more than the {gb(free)} free in {folder}"
            )


def compose(
    scenes: list[GaussianScene],
    out: str,
    *,
    grid: tuple[int, int],
    target_count: int | None = None,
    sh_degree: int | None = None,
    spacing: float = 1.25,
    seed: int = 0,
    progress: bool = False,
    stream: bool | None = None,
) -> int:
    """Compose `scenes` into `out`. Returns the Gaussian count written.

    `stream` (default: for `.ply` outputs) writes copy by copy instead of building the scene in memory.
    """
    import torch

    from scenes import make_scene, save_scene
    from scenes.io import format_for_path
    from scenes.ply import write_ply_parts

    k = sh_coeffs(scenes, sh_degree)
    normed = [normalise(s.to("cpu")) for s in scenes]
    copies, rows = plan([len(s) for s in normed], grid, target_count)
    total = sum(take for _, take in copies)
    antialiased = all(s.antialiased for s in normed)
    if any(s.antialiased for s in normed) and not antialiased:
        note("mixing antialiased and ordinary scenes; the output is marked ordinary")
    cols = grid[0]
    offsets = torch.tensor(
        [
            [((c % cols) - (cols - 1) / 2) * spacing, 0.0, ((c // cols) - (rows - 1) / 2) * spacing]
            for c in range(len(copies))
        ],
        dtype=torch.float32,
    )  # [copies, 3] cell centres in the x-z ground plane
    rng = np.random.default_rng(seed)

    def placed(c: int) -> GaussianScene:
        """Copy c: its rows (the last, partial copy an even random thinning, not a cut through the object),
        moved to its cell, with the output's SH coefficients."""
        i, take = copies[c]
        s = normed[i]
        if take < len(s):
            s = s.subset(torch.from_numpy(np.sort(rng.permutation(len(s))[:take])))
        return make_scene(s.means + offsets[c], s.quats, s.log_scales, s.opacity_logits, _with_degree(s.sh, k),
                          source_format="compose", antialiased=antialiased)  # fmt: skip

    from tqdm import tqdm

    disable = not progress or None  # None: tqdm shows the bar on a terminal only
    bar = tqdm(total=total, desc="composing", unit="G", unit_scale=True, disable=disable, file=sys.stderr, leave=False)

    def parts():
        for c in range(len(copies)):
            part = placed(c)
            yield part
            bar.update(len(part))

    fmt = format_for_path(out, for_write=True)
    if stream is None:
        stream = fmt.name == "ply"
    if stream and fmt.name != "ply":
        raise ValueError("only .ply output can be streamed")
    if stream:  # no normals, as gsplat writes them: 12 bytes a Gaussian less on multi-GB composites
        write_ply_parts(out, parts(), total, k, antialiased=antialiased, with_normals=False)
    else:
        whole = list(parts())
        bar.set_description("writing")  # the writer's part, most of the time of an in-memory format: the bar is full
        fields = ("means", "quats", "log_scales", "opacity_logits", "sh")
        cat = [torch.cat([getattr(p, name) for p in whole]) for name in fields]
        save_scene(make_scene(*cat, source_format="compose", antialiased=antialiased), out)
    bar.close()
    return total


def run(args: argparse.Namespace) -> int:
    from scenes import load_scene
    from scenes.atomic import check_writable
    from scenes.io import format_for_path
    from scenes.limits import MAX_GAUSSIANS

    if args.sh_degree is not None and not 0 <= args.sh_degree <= 3:
        raise CliError(f"--sh-degree {args.sh_degree}: must be 0-3")
    if args.target_count is not None and args.target_count <= 0:
        raise CliError(f"--target-count {args.target_count}: must be positive")
    if args.target_count is not None and args.target_count > MAX_GAUSSIANS:  # no reader would open the output
        raise CliError(f"--target-count {args.target_count:,}: above the {MAX_GAUSSIANS:,} Gaussians a scene may hold")
    if not 0 < args.spacing <= MAX_SPACING:  # nan and inf too: their output held positions no reader opens
        raise CliError(f"--spacing {args.spacing}: must be above 0 and at most {MAX_SPACING:g} (scenes are size 1; "
                       "farther apart, float32 positions would blur each copy)")  # fmt: skip
    if args.seed < 0:  # numpy's generator takes any integer from 0 up, and raises a traceback for the rest
        raise CliError(f"--seed {args.seed}: must be 0 or more")
    fmt = format_for_path(args.output, for_write=True).name
    check_writable(args.output, overwrite=args.overwrite, make_parent=args.mkdir)
    for path in args.scenes:
        if not os.path.exists(path):
            raise CliError(f"{path}: no such file or folder")
    t0 = time.perf_counter()
    scenes = [load_scene(p) for p in args.scenes]
    counts = [len(s) for s in scenes]
    copies, total = extent(counts, args.grid, args.target_count)
    if total > MAX_GAUSSIANS:  # only a grid can get here: --target-count is checked above
        cols, rows = args.grid
        raise CliError(
            f"--grid {cols}x{rows}: {total:,} Gaussians, above the {MAX_GAUSSIANS:,} a scene may hold; "
            "use a smaller grid or --target-count"
        )
    k = sh_coeffs(scenes, args.sh_degree)
    check_room(args.output, fmt, counts, k, copies, total, stream=fmt == "ply")  # compose() streams .ply alone
    big = total >= PROGRESS_MIN_GAUSSIANS  # the composite's count: a large grid of small inputs takes long too
    total = compose(
        scenes,
        args.output,
        grid=args.grid,
        target_count=args.target_count,
        sh_degree=args.sh_degree,
        spacing=args.spacing,
        seed=args.seed,
        progress=big,
    )
    dt = time.perf_counter() - t0
    print(f"wrote {args.output}: {total:,} Gaussians from {len(scenes)} scene(s) in {dt:.1f} s")
    return 0
