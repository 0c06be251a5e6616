"""What `warpsplat bench` reports: a row per path and variant or anchor (`PathResult`), the tables it prints and the
JSON it writes (read by tools/bench_plot.py), with the device, versions and commit they were measured on.

Ratios against the anchors are always the anchor's median frame time over warpsplat's, the anchor timed as the row
was (RATIO); above 1, warpsplat is faster."""

from __future__ import annotations

import json
import os
import platform
import shlex
import statistics
import subprocess
from dataclasses import dataclass, field

from .bench_higs import REPO
from .bench_timing import IN_FLIGHT, ONE_BY_ONE
from .metrics import path_psnr, percentile

ANCHORS = ("gsplat", "HiGS")  # the variant names of the anchors' rows
RATIO = ("anchor / warpsplat: the anchor's median frame time over the row's, the anchor timed as the row was (rows "
         "in flight against its frames back to back, rows one by one against its frames one by one); above 1, "
         "warpsplat is faster")  # fmt: skip


@dataclass
class PathResult:
    scene: str
    path: str
    n_gaussians: int
    variant: str  # a warpsplat variant (tools/bench_variants.py), or an anchor (ANCHORS)
    size: tuple[int, int] = (0, 0)
    timing: str = IN_FLIGHT  # how frame_ms was timed: IN_FLIGHT or ONE_BY_ONE (tools/bench_timing.py)
    frame_ms: list[float] = field(default_factory=list)  # the second pass
    first_pass_ms: list[float] = field(default_factory=list)
    back_to_back_ms: list[float] = field(default_factory=list)  # anchors: their frames back to back (one pass)
    wall_fps: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)  # medians
    visible: int = 0
    pairs: int = 0
    max_tile: int = 0
    peak_mem_mb: float | None = None  # peak GPU memory above the scene's tensors while the row ran; None on a CPU
    psnr_vs_gsplat: list[float] = field(default_factory=list)
    psnr_vs_default: list[float] = field(default_factory=list)  # HiGS's row: against warpsplat's default
    ssim_vs_default: list[float] = field(default_factory=list)  # lossy variants only
    pairs_removed: float = 0.0  # fraction of the default variant's pairs this variant does not emit
    temporal: dict = field(default_factory=dict)  # temporal reuse counters over the second pass (hit rates)
    projected: int = 0  # median Gaussians projected per frame (fewer than n_gaussians inside temporal windows)
    tile_size: int = 0  # HiGS: the faster of its tile sizes on this path, whose times these are
    tile_medians: dict[int, float] = field(default_factory=dict)  # HiGS: each tile size's one-by-one median
    default_after_ms: list[float] = field(default_factory=list)  # --bracket: the default's frames right after this row
    ran: list[str] = field(default_factory=list)  # how each frame of the second pass ran (`RenderStats.ran_label`)
    first_pass_ran: list[str] = field(default_factory=list)  # and of the first (warpsplat's rows only)
    host_probe_us: float | None = None  # the host's speed before the row's passes (tools/bench_timing.py)
    host_probe_after_us: float | None = None  # and after them

    def key(self) -> tuple:
        return self.scene, self.path, tuple(self.size)

    def median(self, timing: str | None = None) -> float:
        """The second pass's median; an anchor's back-to-back median for timing=IN_FLIGHT."""
        ms = self.back_to_back_ms if timing == IN_FLIGHT and self.variant in ANCHORS else self.frame_ms
        return statistics.median(ms) if ms else float("nan")

    def p90(self) -> float:
        return percentile(self.frame_ms, 90)

    def p99(self) -> float:
        return percentile(self.frame_ms, 99)

    def first_p99(self) -> float:
        return percentile(self.first_pass_ms, 99)

    def first_max(self) -> float:
        return max(self.first_pass_ms, default=float("nan"))

    def slowest(self, first: bool = True) -> str:
        """How a pass's slowest frame ran (`RenderStats.ran_label`: a graph capture, a rebin, ...); "" where not
        recorded (anchors)."""
        ms, ran = (self.first_pass_ms, self.first_pass_ran) if first else (self.frame_ms, self.ran)
        if not ms or len(ran) != len(ms):
            return ""
        return ran[max(range(len(ms)), key=ms.__getitem__)]

    def stall(self) -> float | None:
        """The worst frame against the same camera's frame in the other pass: max over frames of the slower of the
        two over the faster. A path's own variety (a fly-over from a dense view to an empty one) is the same in
        both passes and stays out of it; a stall (a compile, a growth, an allocation) shows as one pass's frame
        far above the other's."""
        pairs = [(a, b) for a, b in zip(self.first_pass_ms, self.frame_ms, strict=False) if a > 0 and b > 0]
        return max((max(a, b) / min(a, b) for a, b in pairs), default=None)

    def as_dict(self, anchors: dict) -> dict:
        d = {**self.__dict__, "median_ms": self.median(), "p90_ms": self.p90(), "p99_ms": self.p99(),
             "first_p99_ms": self.first_p99(), "first_max_ms": self.first_max(), "stall": self.stall()}  # fmt: skip
        if self.variant in ANCHORS:
            d["back_to_back_median_ms"] = self.median(IN_FLIGHT)
        else:
            d["vs_anchors"] = {a: ratio(anchors.get((a, *self.key())), self) for a in ANCHORS}
        return d


def ratio(anchor: PathResult | None, row: PathResult) -> float | None:
    """The anchor's median over the row's, the anchor timed as the row was (RATIO); None without the anchor."""
    if anchor is None or (row.timing == IN_FLIGHT and not anchor.back_to_back_ms):
        return None
    return anchor.median(row.timing) / row.median()


def by_anchor(anchors: list[PathResult]) -> dict:
    """{(anchor, scene, path, size): row}."""
    return {(r.variant, *r.key()): r for r in anchors}


def git_commit(cwd: str | None = REPO) -> str:
    """The commit the results belong to: $WARPSPLAT_COMMIT when set, else the HEAD of the checkout whose code runs
    (not the current folder's), with "-dirty" when tracked files differ from it (a working tree copied onto another
    machine over an older checkout reads as its HEAD plus changes, not as that HEAD); "unknown" outside a checkout."""
    env = os.environ.get("WARPSPLAT_COMMIT")
    if env:
        return env
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=cwd
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}-dirty" if changed else head


def device_name(cuda: bool) -> str:
    import torch

    return torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})"


# The renderer's stage names (renderer/pipeline.py), in frame order.
STAGES = ("cull", "project", "order", "bin", "sort", "tile_lists", "rasterize", "depth", "total")
SHORT = {IN_FLIGHT: "flight", ONE_BY_ONE: "1-by-1"}


def label(r: PathResult, main_size: tuple[int, int], width: int = 38) -> str:
    """'scene / path', with '@WxH' when the row's size is not the run's main one."""
    at = "" if tuple(r.size) == tuple(main_size) else f" @{r.size[0]}x{r.size[1]}"
    return (f"{r.scene} / {r.path}"[: width - len(at)] + at).ljust(width)


def cell(value: float | None, width: int, missing: str = "-", digits: int = 3) -> str:
    """A number right-aligned in `width`, or `missing` for None and NaN."""
    return f"{missing:>{width}}" if value is None or value != value else f"{value:{width}.{digits}f}"


def times(value: float | None, width: int, missing: str = "-") -> str:
    """A ratio as '2.50x' right-aligned in `width`, or `missing` for None."""
    return f"{missing:>{width}}" if value is None else f"{value:{width - 1}.2f}x"


def print_table(results, anchors, gpu, main_size, n_frames, higs) -> None:
    """The variants' table, the anchors' table, the worst frames and memory, stage medians and temporal reuse."""
    a = by_anchor(anchors)
    print(f"\nwarpsplat bench on {gpu}, {n_frames} frames per pass, {main_size[0]}x{main_size[1]} unless marked "
          f"@WxH (ms per frame)")  # fmt: skip
    print(higs.summary())
    d = {r.key(): r for r in results if r.variant == "default"}
    hdr = f"{'scene / path':38} {'variant':24} {'timing':>6} {'median':>8} {'p90':>8} {'gsplat/ws':>9} " \
          f"{'HiGS/ws':>8} {'vs dflt':>7} {'visible':>10} {'pairs':>11} {'removed':>7} {'max tile':>8} " \
          f"{'PSNR':>7} {'mean':>7} {'SSIM':>6}"  # fmt: skip
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        g, h = (ratio(a.get((name, *r.key())), r) for name in ANCHORS)
        ps = r.psnr_vs_gsplat if r.variant == "default" else r.psnr_vs_default
        p = f"{min(ps):7.1f} {path_psnr(ps):7.1f}" if ps else f"{'-':>7} {'-':>7}"
        ss = f"{min(r.ssim_vs_default):6.4f}" if r.ssim_vs_default else f"{'-':>6}"
        rm = f"{100 * r.pairs_removed:6.1f}%" if r.variant != "default" else f"{'-':>7}"
        speed = vs_default(d.get(r.key()), r)
        vs = f"{speed:6.2f}x" if speed is not None else f"{'-':>7}"
        print(f"{label(r, main_size)} {r.variant:24} {SHORT[r.timing]:>6} {r.median():8.3f} {r.p90():8.3f} "
              f"{times(g, 9)} {times(h, 8, higs.missing(r.scene))} {vs} {r.visible:10,} {r.pairs:11,} {rm} "
              f"{r.max_tile:8,} {p} {ss}")  # fmt: skip
    print(f"timing: flight = frames in flight, 1-by-1 = each frame waited for. gsplat/ws, HiGS/ws: {RATIO}. "
          "PSNR: min over sampled frames, and the path's (from the mean MSE of those frames), dB; default variant "
          "against gsplat, other variants against default (exact). SSIM: min, lossy variants against default. "
          "removed: pairs fewer than default. vs dflt: speed against the default variant (with --bracket, against "
          "the default timed right after the row).")  # fmt: skip
    print_bracketed(results, main_size)
    print_anchors(results, anchors, main_size, higs)
    print_host_probe(results + anchors)
    print_worst(results + anchors, main_size)
    print_stages(results, main_size)
    print_temporal(results, main_size)


def print_anchors(results, anchors, main_size, higs) -> None:
    """Per path: warpsplat's default (its frames as `warpsplat render` renders them) against both anchors back to
    back, and warpsplat one by one against both one by one; HiGS's tile size and its images' PSNR."""
    a = by_anchor(anchors)
    rows = [r for r in results if r.variant == "default"]
    one = {r.key(): r for r in results if r.variant == "frames=one-by-one"}
    if not rows or not anchors and not higs.found:
        return
    print(f"\nagainst the anchors (medians, ms per frame; x = {RATIO})")
    hdr = f"{'scene / path':38} | {'ws dflt':>8} {'gsplat':>8} {'HiGS':>8} {'x gsplat':>8} {'x HiGS':>7} | " \
          f"{'ws 1by1':>8} {'gsplat':>8} {'HiGS':>8} {'x gsplat':>8} {'x HiGS':>7} | {'tile':>4} " \
          f"{'HiGS dB: vs gsplat':>18} {'vs ws':>6}"  # fmt: skip
    print(f"{'':38} | {'in flight (anchors back to back)':^43} | {'one by one':^43} | HiGS")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        g, h = a.get(("gsplat", *r.key())), a.get(("HiGS", *r.key()))
        miss = higs.missing(r.scene)
        cells = []
        for w, timing in ((r, r.timing), (one.get(r.key()), ONE_BY_ONE)):
            star = "*" if w is r and r.timing == ONE_BY_ONE else " "  # the default cannot keep frames in flight
            cells.append(f"{cell(w.median() if w else None, 7)}{star} {cell(g.median(timing) if g else None, 8)} "
                         f"{cell(h.median(timing) if h else None, 8, miss)} {times(w and ratio(g, w), 8)} "
                         f"{times(w and ratio(h, w), 7, miss)}")  # fmt: skip
        tile = f"{h.tile_size:4d}" if h else f"{'-':>4}"
        dbg = cell(min(h.psnr_vs_gsplat) if h and h.psnr_vs_gsplat else None, 18, digits=1)
        dbw = cell(min(h.psnr_vs_default) if h and h.psnr_vs_default else None, 6, digits=1)
        print(f"{label(r, main_size)} | {cells[0]} | {cells[1]} | {tile} {dbg} {dbw}")
    print(
        "* the default timed one by one: its frames cannot be kept in flight (depth output, unchanged-frame "
        "reuse, a counted scene with a temporal window, or a second slot that does not fit the device: "
        "Renderer.streams). HiGS dB: its worst sampled frame against gsplat 1.5.3 and against warpsplat's default."
    )
    print("ranges, anchor / warpsplat:")
    for name in ANCHORS:
        for what, rows_of in (("default (* one by one)", rows), ("one by one", list(one.values()))):
            for size in dict.fromkeys(tuple(r.size) for r in rows_of):
                xs = [x for r in rows_of if tuple(r.size) == size and (x := ratio(a.get((name, *r.key())), r))]
                if xs:
                    print(f"  {name}, {what}, {size[0]}x{size[1]}: {min(xs):.2f}-{max(xs):.2f}x over "
                          f"{len(xs)} paths")  # fmt: skip


# A row whose host probes before and after its passes differ by more than this factor changed host speed while it
# ran (the GPU machine's two speeds are about 2x apart: BENCHMARKS.md, section 45)
PROBE_MOVED = 1.3


def host_probe_ranges(rows) -> dict[str, tuple[float, float]]:
    """{warpsplat or an anchor: (lowest, highest) host probe over its rows, before and after their passes, us}, for
    the rows that took one."""
    by: dict[str, list[float]] = {}
    for r in rows:
        probes = [p for p in (r.host_probe_us, r.host_probe_after_us) if p is not None]
        if probes:
            by.setdefault(r.variant if r.variant in ANCHORS else "warpsplat", []).extend(probes)
    return {k: (min(v), max(v)) for k, v in by.items()}


def probe_moved(r) -> bool:
    """Whether the row's host changed speed between its probes (PROBE_MOVED)."""
    a, b = r.host_probe_us, r.host_probe_after_us
    return a is not None and b is not None and max(a, b) > PROBE_MOVED * min(a, b)


def probe_slow(r, fastest: float) -> bool:
    """Whether the row ran at the host's slow speed throughout: every probe it took over PROBE_MOVED x the run's
    fastest probe (`fastest`, us). Its process stayed slow, so `probe_moved` does not name it."""
    probes = [p for p in (r.host_probe_us, r.host_probe_after_us) if p is not None]
    return bool(probes) and min(probes) > PROBE_MOVED * fastest


def print_host_probe(rows) -> None:
    """The host's speed in each timing process (tools/bench_timing.py `host_probe_us`): read a host-paced row's
    ratio beside it. Rows whose host changed speed while they ran are named: their medians mix both speeds; and so
    are rows timed at the slow speed throughout (an anchor's child process that drew it made HiGS's playbot
    close-up 0.515 ms a frame against 0.397 in another process: BENCHMARKS.md, section 48)."""
    ranges = host_probe_ranges(rows)
    if ranges:
        spans = ", ".join(f"{k} {lo:.1f}-{hi:.1f}" for k, (lo, hi) in ranges.items())
        print(f"host speed before and after each row's passes, one sum(range(1000)) in us (lower is faster; HiGS "
              f"times in a process of its own): {spans}")  # fmt: skip
    moved = [r for r in rows if probe_moved(r)]
    if moved:
        names = "; ".join(f"{r.scene} / {r.path} {r.variant} {r.host_probe_us:.1f} -> {r.host_probe_after_us:.1f}"
                          for r in moved)  # fmt: skip
        print(f"rows whose host changed speed while they ran (probes over {PROBE_MOVED}x apart): {names}")
    probes = [p for r in rows for p in (r.host_probe_us, r.host_probe_after_us) if p is not None]
    slow = [r for r in rows if probes and not probe_moved(r) and probe_slow(r, min(probes))]
    if slow:
        names = "; ".join(f"{r.scene} / {r.path} {r.variant} " + " -> ".join(
            f"{p:.1f}" for p in (r.host_probe_us, r.host_probe_after_us) if p is not None) for r in slow)  # fmt: skip
        print(f"rows timed at the host's slow speed throughout (probes over {PROBE_MOVED}x the run's fastest, "
              f"{min(probes):.1f} us): {names}")  # fmt: skip


def print_worst(rows, main_size) -> None:
    print("\nworst frames (ms) and peak GPU memory above the scene (MB): median and p99 of the second pass, p99 and "
          "maximum of the first (after the warm-up); stall: the worst frame over the same camera's frame in the "
          "other pass (a path's own variety cancels; a stall does not); anchors one by one; 1st, 2nd slowest: how "
          "each pass's slowest frame ran (replay: a CUDA graph replayed, capture: captured then replayed, eager: "
          "stage by stage, counted: the counted route; +rebin: binned again after a growth)")  # fmt: skip
    hdr = f"{'scene / path':38} {'row':24} {'timing':>6} {'median':>8} {'2nd p99':>8} {'1st p99':>8} " \
          f"{'1st max':>8} {'stall':>6} {'MB':>8}  {'1st slowest':<14} {'2nd slowest':<14}"  # fmt: skip
    print(hdr)
    print("-" * len(hdr))
    order = {k: i for i, k in enumerate(dict.fromkeys(r.key() for r in rows))}
    for r in sorted(rows, key=lambda r: order[r.key()]):
        print(f"{label(r, main_size)} {r.variant:24} {SHORT[r.timing]:>6} {r.median():8.3f} {r.p99():8.3f} "
              f"{r.first_p99():8.3f} {r.first_max():8.3f} {times(r.stall(), 6)} "
              f"{cell(r.peak_mem_mb, 8, digits=0)}  {r.slowest() or '-':<14} "
              f"{r.slowest(first=False) or '-':<14}")  # fmt: skip


def print_stages(results, main_size) -> None:
    staged = [r for r in results if "rasterize" in r.stage_ms]
    if not staged:
        return
    names = [k for k in STAGES if any(k in r.stage_ms for r in staged)]
    print("\nper-stage medians (ms), variants launched stage by stage:")
    print(f"{'scene / path':38} {'variant':24} " + " ".join(f"{k:>11}" for k in names))
    for r in staged:
        cells = " ".join(f"{r.stage_ms[k]:11.3f}" if k in r.stage_ms else f"{'-':>11}" for k in names)
        print(f"{label(r, main_size)} {r.variant:24} {cells}")


def vs_default(default: PathResult | None, row: PathResult) -> float | None:
    """A variant's speed against the default: the default's median frame over the row's, the default timed right
    after the row when it was (--bracket), else in its own row."""
    if row.variant == "default" or row.variant in ANCHORS or default is None:
        return None
    base = statistics.median(row.default_after_ms) if row.default_after_ms else default.median()
    return base / row.median()


def print_bracketed(results, main_size) -> None:
    """With --bracket: each row against the default timed right after it, and how far the default moved between
    its own row and that timing (the run's noise on this path, beside the difference being measured)."""
    d = {r.key(): r for r in results if r.variant == "default"}
    rows = [r for r in results if r.default_after_ms and r.key() in d]
    if not rows:
        return
    print("\nbracketed (--bracket): the default timed right after each row; vs dflt against it, and the default "
          "itself, its own row against that timing (above 1: it ran faster in its own row)")  # fmt: skip
    for r in rows:
        after = statistics.median(r.default_after_ms)
        print(f"{label(r, main_size)} {r.variant:24} {r.median():8.3f} default after {after:8.3f}  vs dflt "
              f"{times(after / r.median(), 7)}  default's drift {times(after / d[r.key()].median(), 7)}")  # fmt: skip


def print_temporal(results, main_size) -> None:
    temporal = [r for r in results if r.temporal]
    if not temporal:
        return
    print("\ntemporal reuse (second pass): the window's measured choice (renderer/window_choice.py) and the costs "
          "behind it (ms a frame, window against plain), frames that asked for a window and ran plain, window hit "
          "rate, builds, the choice's decisions since the renderer was made (its trial, in the warm-up, and "
          "re-checks); Gaussians projected per frame (median)")  # fmt: skip
    for r in temporal:
        t = r.temporal
        choice = t.get("window_choice") or "-"
        costs = f"{t.get('window_ms', 0.0):6.3f} {t.get('plain_ms', 0.0):6.3f}"
        print(f"{label(r, main_size)} {r.variant:24} {choice:9} {costs} {t.get('frames_window_declined', 0):5d} "
              f"{100 * t['window_hit_rate']:5.1f}% {t['window_builds']:5d} "
              f"{t.get('window_decisions', 0):4d} {r.projected:12,}")  # fmt: skip


def write_json(args, results, anchors, cuda, sizes, n_frames, higs) -> None:
    import torch
    import triton

    try:
        import gsplat

        gsplat_version = gsplat.__version__
    except ImportError:
        gsplat_version = None
    a = by_anchor(anchors)
    doc = {
        "command": "warpsplat " + " ".join(shlex.quote(arg) for arg in args.argv),
        "gpu": device_name(cuda),
        "versions": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "gsplat": gsplat_version,
            "python": platform.python_version(),
        },  # fmt: skip
        "higs": higs.as_dict(),
        "commit": git_commit(),
        "size": list(sizes[0]),
        "sizes": [list(s) for s in sizes],
        "frames": n_frames,
        "ratio": RATIO,
        "timings": {IN_FLIGHT: "warpsplat's frames in flight (Renderer.render_stream), an anchor's back to back: "
                               "handover spans", ONE_BY_ONE: "each frame waited for: CUDA events around the call"},
        "passes": "frame_ms and median/p90/p99: the second pass; first_pass_ms, first_p99_ms, first_max_ms: the "
                  "first, after the warm-up; ran and first_pass_ran: how each frame ran (replay, capture, eager, "
                  "counted; +rebin: binned again after a growth)",
        "peak_mem_mb": "peak GPU memory above the scene's tensors while the row ran (torch's allocator), the "
        "renderer's buffers and graphs let go before each row",
        "paths": [r.as_dict(a) for r in results + anchors],
    }  # fmt: skip
    from scenes.atomic import atomic_write

    # its folder exists: `bench.run` checked it (or made the cache folder) first. Atomic: a run killed while
    # writing leaves the file it would replace whole
    with atomic_write(args.json) as f:
        f.write(json.dumps(doc, indent=1, default=float).encode())
    print(f"wrote {args.json}")
