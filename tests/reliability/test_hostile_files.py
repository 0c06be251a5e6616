"""Hostile and unusual scene files through the real command: `warpsplat info`, `render` (and `convert`) on one file
of every class (tests/reliability/hostile.py), each in a subprocess under a safety cap on its address space
(`prlimit --as`) and a timeout. Every class ends in exit 2 with one stderr line naming the file, or loads with
every valid Gaussian kept (a dropped-Gaussian notice, or any other warning, is one line too). Peak memory is the
child's ru_maxrss: a refused file costs no more than the command's start-up (measured on a tiny sound file),
every file of the classes (all under 1 MB) costs under 500 MB and 5 s of CPU time whatever it declares, and a
sound file of every compressed format is read within twice its arrays. The command's other inputs fail in one
line naming them too: a camera path file, the output (a full disk, by `prlimit --fsize`) and the process's own
memory limit (`prlimit --as`). A write killed with SIGKILL leaves a temporary that the next write to the same
output removes. The densest file under 1 MiB that the readers admit (131,000 Gaussians) is read, converted and
rendered at the default 1280x720 within the bound; the same file of Gaussians large on screen, whose frame asks
754M pairs, is refused at the first frame's pair count.

The commands run with WARPSPLAT_MAX_MEMORY=4G, so that what a file may take does not depend on the test
machine's free memory (the free-memory default is tested in tests/scenes/test_limits.py); the compressed-file
bombs run once more with no cap at all, to show that their bound comes from the file, not the machine. The cap
holds for a render's frames on the CPU too (renderer/memory.py `free_memory`): what a frame's pairs may take is
not bounded by the file. One torch thread keeps a busy machine from stretching them past the timeout.
"""

from __future__ import annotations

import gzip
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import pytest

from scenes.gaussians import INVALID_WHAT
from tests.conftest import REPO

from . import hostile

SAFETY_CAP = 8 << 30  # bytes of address space: a runaway read fails here instead of taking the machine
TIMEOUT_S = 120
REFUSED_EXTRA_MIB = 64  # a refused file may cost this much more than the start-up (imports, argument parsing)
# What any command may cost on any file under 1 MB: 500 MB of peak memory and 5 s of CPU time. The memory is
# asserted above the command's start-up (335-354 MiB on the 2-core CPU machine, mostly torch; more where torch
# brings CUDA), as the 500 MB less that start-up: what the file itself may add.
SMALL_FILE_EXTRA_MIB = 500e6 / 2**20 - 335
SMALL_FILE_CPU_S = 5.0  # the start-up takes about 2
ENV = {"WARPSPLAT_MAX_MEMORY": "4G", "OMP_NUM_THREADS": "1"}


@dataclass
class Run:
    code: int
    out: str
    err: str
    peak_mib: float  # the command's ru_maxrss
    seconds: float
    cpu_s: float  # the command's user + system time: less stretched by a busy machine than the wall time


# The command is started by this small fresh interpreter, which reports the command's resource usage: a process's
# ru_maxrss keeps the peak of the memory it had before exec, so a command forked from pytest itself (hundreds of
# MB) would report pytest's peak, not its own.
REPORTER = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "cpu = usage.ru_utime + usage.ru_stime\n"
    "open(sys.argv[1], 'w').write(f'{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} {cpu}')\n"
)


def run(args: list, env: dict[str, str] | None = None, limits: tuple[str, ...] = (f"--as={SAFETY_CAP}",)) -> Run:
    """`warpsplat ARGS` in a subprocess under `prlimit LIMITS`, with its exit code, output and peak memory."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "usage")
        command = ["prlimit", *limits, sys.executable, "-m", "tools", *map(str, args)]
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", REPORTER, report, *command], cwd=REPO, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, **ENV, **(env or {})})  # fmt: skip
        try:
            out, err = p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the reporter and the command: a hung command must not outlive us
            p.communicate()
            pytest.fail(f"warpsplat {' '.join(map(str, args))}: still running after {TIMEOUT_S} s (a hang?)")
        seconds = time.perf_counter() - t0
        with open(report) as f:
            code, maxrss_kib, cpu_s = f.read().split()
    return Run(int(code), out, err, int(maxrss_kib) / 1024, seconds, float(cpu_s))


def least_cpu_s(r: Run, args: list, env: dict[str, str] | None, bound: float = SMALL_FILE_CPU_S) -> float:
    """The command's CPU time, `r`'s, or where that is over `bound` the least of up to two more runs: the suite's
    other worker on the same core stretches a command's CPU time (up to 1.9x measured), and noise only adds time,
    while a command that really costs more is over in every run."""
    cpu_s = r.cpu_s
    for _ in range(2):
        if cpu_s < bound:
            break
        again = run(args, env)
        assert again.code == r.code, again.err
        print(f"again: {again.cpu_s:.1f} s CPU")
        cpu_s = min(cpu_s, again.cpu_s)
    return cpu_s


@pytest.fixture(scope="module")
def startup_mib(tmp_path_factory) -> dict[str, float]:
    """Peak memory of `info` and `render` on a tiny sound file: what any run costs before reading a scene."""
    folder = tmp_path_factory.mktemp("startup")
    path = hostile.overflow_ply(folder, scale_rows=(), position_rows=())
    peaks = {}
    for command, args in COMMANDS.items():
        r = run(args(path, folder))
        assert r.code == 0, r.err
        peaks[command] = r.peak_mib
    return peaks


COMMANDS = {
    "info": lambda path, folder: ["info", path],
    "render": lambda path, folder: [
        "render",
        path,
        "--out",
        folder / "out.png",
        "--size",
        "16x16",
        "--backend",
        "torch",
        "--overwrite",
    ],  # fmt: skip
    "convert": lambda path, folder: ["convert", path, folder / "out.ply", "--overwrite"],
}
OUTPUTS = {"info": None, "render": "out.png", "convert": "out.ply"}
BOTH = ("info", "render")  # most classes: reading a file and rendering it cost differently
# a refusal (or a notice) that every command reaches through the same reader: one command each, to keep the suite
# fast (the file-size bound's test runs its bombs through all three)
ONE = {"info": ("info",), "render": ("render",), "convert": ("convert",)}


def _dropped(n: int, of: int) -> str:
    return rf"dropped {n} of {of} Gaussians with invalid values \({re.escape(INVALID_WHAT)}\)$"


# (class id, builder(folder) -> path, exit code, the one stderr line (regex; None: no stderr), extra environment,
#  the commands to run it through)
CASES = [
    ("1-infinite-opacity", hostile.opaque_ply, 0, None, {}, BOTH),
    ("2-spz-v4-bomb-134M", lambda f: hostile.spz_v4(f, n=1 << 27), 2,
     r"bomb\.spz: SPZ header numPoints declares 134,217,728 Gaussians in a 26\d,\d\d\d-byte file", {}, ONE["convert"]),
    ("2-spz-v4-lying-toc", lambda f: hostile.spz_v4(f, n=1 << 27, cut=100), 2,
     r"bomb\.spz: SPZ v4 stream positions declares 1,207,959,552 bytes from 100 compressed, more than zstd can "
     r"expand to \(lying count\)$", {}, BOTH),
    ("2-spz-gzip-runs-on", lambda f: hostile.spz_gzip(f, extra=16 << 20), 2,
     r"run-on\.spz: SPZ gzip stream continues past the 400,000 bytes that 20,000 points need \(lying count\?\)$", {},
     ONE["render"]),
    ("3-sog-lying-member", hostile.sog_lying_member, 2,
     r"lying\.sog: SOG member 'means_l\.webp' is corrupt \(Bad CRC-32 for file 'means_l\.webp'\)$", {}, BOTH),
    ("4-nested-json", hostile.nested_json_sog, 2, r"nested\.sog: SOG meta\.json nests too deeply", {}, BOTH),
    ("4-link-to-dev-zero", hostile.dev_zero_link, 2, r"z\.spz: is a character device, not a regular file$", {}, BOTH),
    ("5-fifo", hostile.fifo, 2, r"f\.ply: is a named pipe \(FIFO\), not a regular file$", {}, BOTH),
    ("6-overflow", hostile.overflow_ply, 0, r"warning: \S+overflow\.ply: " + _dropped(2, 64), {}, BOTH),
    ("6-overflow-compressed-chunk", hostile.overflow_compressed_ply, 0,
     r"warning: \S+overflow\.compressed\.ply: " + _dropped(255, 512), {}, BOTH),
    ("6-all-overflow", lambda f: hostile.overflow_ply(f, scale_rows=range(64)), 2,
     r"overflow\.ply: all 64 Gaussians have invalid values", {}, BOTH),
    ("7-misdeclared-types", hostile.misdeclared_ply, 2,
     r"misdeclared\.ply: PLY body has 192 bytes after its declared elements", {}, BOTH),
    ("8-no-gaussians", hostile.empty_ply, 2,
     r"empty\.ply: PLY element vertex declares 0 Gaussians \(the file holds no scene\)$", {}, BOTH),
    ("8-dropped-notice", hostile.nan_ply, 0, r"warning: \S+nan\.ply: dropped 1 of 64 Gaussians", {}, BOTH),
    ("10-npz", hostile.npz, 2,
     r"test_garden\.npz: unknown scene format \(a zip archive without meta\.json, so not a SOG scene\)$", {}, BOTH),
    ("11-log-scale-88", lambda f: hostile.overflow_ply(f, position_rows=(), log_scale=88.0), 0,
     r"warning: \S+overflow\.ply: " + _dropped(1, 64), {}, BOTH),
    ("11-linear-scale-3e38", hostile.huge_splat, 0, r"warning: \S+huge\.splat: " + _dropped(1, 64), {},
     ONE["render"]),
    ("13-sog-codebook-1e300", lambda f: hostile.sog(f, count=4096, noise=True, codebook_value=1e300), 0,
     r"warning: \S+big\.sog: dropped \d\d of 4,096 Gaussians with invalid values", {}, ONE["info"]),
    ("13-ply-megabyte-of-comments", hostile.long_comment_ply, 2,
     r"comments\.ply: PLY header runs past 1,048,576 bytes without reaching end_header \(10,486 comment lines in "
     r"them\): warpsplat reads headers of up to 1 MiB \(a scene's takes a few kB\)$", {}, ONE["info"]),
    ("13-sog-count-beyond-texels", hostile.sog_count_beyond_texels, 2,
     r"overcount\.sog: meta\.json count of 100,000,000 Gaussians is more than texture means_l \(means_l\.webp\) "
     r"holds: it is 64x64 = 4,096 texels, one a Gaussian$", {}, ONE["render"]),
    ("13-sog-count-beyond-texels-no-cap", hostile.sog_count_beyond_texels, 2,
     r"overcount\.sog: meta\.json count of 100,000,000 Gaussians is more than texture means_l",
     {"WARPSPLAT_MAX_MEMORY": "none"}, ONE["info"]),
    ("12-mixed-sog-texture-sizes", hostile.sog_mixed_sizes, 0,
     r"warning: \S+mixed\.sog: SOG textures differ in size \(means_l\.webp 80x80; means_u\.webp, quats\.webp, "
     r"scales\.webp, sh0\.webp 72x68\): texel i of each is Gaussian i", {}, ONE["render"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "command"), [(c, m) for c in CASES for m in c[5]],
                         ids=[f"{c[0]}-{m}" for c in CASES for m in c[5]])  # fmt: skip
def test_each_class_through_the_command(case, command, tmp_path, startup_mib):
    _, build, code, line, env, _ = case
    path = build(tmp_path)
    r = run(COMMANDS[command](path, tmp_path), env)
    print(f"\n{case[0]} {command}: exit {r.code}, {r.seconds:.1f} s ({r.cpu_s:.1f} s CPU), peak {r.peak_mib:.0f} MiB "
          f"(start-up {startup_mib[command]:.0f})")  # fmt: skip
    assert r.code == code, r.err
    lines = r.err.splitlines()
    assert "Traceback" not in r.err and "Warning:" not in r.err, r.err  # no Python warning two-liners
    if line is None:
        assert lines == [], r.err
    else:
        kind = "warning" if code == 0 else "error"
        assert len(lines) == 1 and lines[0].startswith(f"warpsplat {command}: {kind}: "), r.err
        assert re.search(line, lines[0]), lines[0]
        assert str(path) in lines[0], lines[0]
    if path.is_file() and path.stat().st_size < 1_000_000:
        assert r.peak_mib - startup_mib[command] < SMALL_FILE_EXTRA_MIB
        assert least_cpu_s(r, COMMANDS[command](path, tmp_path), env) < SMALL_FILE_CPU_S
    output = OUTPUTS[command] and tmp_path / OUTPUTS[command]
    if code == 2:
        assert r.peak_mib < startup_mib[command] + REFUSED_EXTRA_MIB
        assert output is None or not output.exists()
    elif output is not None:
        assert output.stat().st_size > 0


@pytest.mark.parametrize("bomb", ["spz-v4-8M", "sog-16.7M"])
def test_a_small_files_bound_comes_from_the_file_not_the_machine(bomb, tmp_path, startup_mib):
    """With no memory cap at all (WARPSPLAT_MAX_MEMORY=none: the suite's 4G cap hides what the machine has free), a
    16 kB SPZ and a 3 kB SOG that honestly declare 8M and 16.7M Gaussians are refused by every command at its
    start-up's cost. Before the count was judged against the file's size, they loaded: 2.6 GB (info) and 6.1 GB
    (render) for the SPZ, 1.5 and 4.6 GB for the SOG, 9-24 s of CPU, then an empty image blamed on the Gaussians."""
    path = hostile.spz_v4(tmp_path) if bomb == "spz-v4-8M" else hostile.sog(tmp_path, count=16_700_000)
    assert path.stat().st_size < 20_000
    for command in COMMANDS:
        r = run(COMMANDS[command](path, tmp_path), {"WARPSPLAT_MAX_MEMORY": "none"})
        print(f"\n{bomb} {command}, no cap: exit {r.code}, {r.cpu_s:.1f} s CPU, peak {r.peak_mib:.0f} MiB")
        assert r.code == 2 and "a trained scene takes at least 8" in r.err and len(r.err.splitlines()) == 1, r.err
        assert r.peak_mib < startup_mib[command] + REFUSED_EXTRA_MIB
        assert least_cpu_s(r, COMMANDS[command](path, tmp_path), {"WARPSPLAT_MAX_MEMORY": "none"}) < SMALL_FILE_CPU_S


def test_a_point_scene_renders_visibly(tmp_path):
    """One opaque Gaussian, and 100 at one position, fill the default view (their own size frames them), where
    they were drawn nowhere: the framing radius was 1e-6 and the camera sat inside the near plane."""
    from PIL import Image

    for n in (1, 100):
        path = hostile.point_ply(tmp_path, n=n, name=f"p{n}.ply")
        out = tmp_path / f"p{n}.png"
        r = run(["render", path, "--out", out, "--size", "32x32", "--backend", "torch"])
        assert r.code == 0 and r.err == "", r.err
        grey = np.asarray(Image.open(out).convert("L"), dtype=np.float64)
        assert grey[16, 16] > 100 and (grey > 20).mean() > 0.1, (n, grey[16, 16], (grey > 20).mean())
        edges = np.concatenate([grey[[0, -1]].ravel(), grey[:, [0, -1]].ravel()])
        assert edges.max() < 0.5 * grey[16, 16], (n, edges.max())  # framed: the whole blob, not a flat fill


def _tiny(folder):
    return hostile.overflow_ply(folder, scale_rows=(), position_rows=())


PATH_RENDER = ["--backend", "torch", "--quiet", "--overwrite"]
# (case id, arguments(folder), the one error line (regex), the input it must name (folder -> path), prlimit)
OTHER_INPUTS = [
    ("path-of-100000x100000",
     lambda f: ["render", _tiny(f), "--path", hostile.camera_path(f, width=100_000, height=100_000), "--out",
                f / "frames", *PATH_RENDER],
     r"camera_path\.json: render_width x render_height 100000x100000: each side must be at most 8192 pixels "
     r"\(--size WxH renders it at another size\)$", lambda f: f / "camera_path.json", None),
    ("path-of-1e12-seconds",
     lambda f: ["render", _tiny(f), "--path", hostile.camera_path(f, seconds=1e12), "--out", f / "frames",
                *PATH_RENDER],
     r"camera_path\.json: seconds 1e\+12 at 4 fps gives 4,000,000,000,000 frames, more than the 100,000 a path "
     r"may have \(55 minutes at 30 fps\)$", lambda f: f / "camera_path.json", None),
    ("video-onto-a-full-disk",
     lambda f: ["render", _tiny(f), "--path", "orbit", "--frames", 4, "--size", "32x32", "--out", f / "v.mp4",
                *PATH_RENDER],
     r"v\.mp4: File too large$", lambda f: f / "v.mp4", ("--fsize=2048",)),
    ("torch-allocator-under-ulimit-v",
     lambda f: ["render", _tiny(f), "--size", "8192x8192", "--out", f / "big.png", *PATH_RENDER],
     r"out of memory with \S+overflow\.ply at 8192x8192: this process may use at most 1\.60 GB of address space "
     r"\(ulimit -v\)$", lambda f: f / "overflow.ply", ("--as=1600000000",)),
]  # fmt: skip


@pytest.mark.parametrize("case", OTHER_INPUTS, ids=[c[0] for c in OTHER_INPUTS])
def test_the_commands_other_inputs_fail_in_one_line_naming_them(case, tmp_path):
    """A camera path file (a size the renderer refuses: a ValueError traceback before; a duration of 1e12 s: "out
    of memory with SCENE" before), the output (a full disk named the hidden chunk file before) and the process's
    memory limit (torch's allocator raises a RuntimeError: a traceback before)."""
    _, args, line, names, limits = case
    r = run(args(tmp_path), limits=limits or (f"--as={SAFETY_CAP}",))
    lines = r.err.splitlines()
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("warpsplat render: error: "), r.err
    assert re.search(line, lines[0]) and str(names(tmp_path)) in lines[0], lines[0]
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]  # no hidden chunk file left


def test_a_killed_write_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    """kill -9 during a write leaves `.NAME.PID.XXXXXXXX.part`; the next write to the same output removes it."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "scene.ply"
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom scenes.atomic import atomic_write\n"
         "with atomic_write(sys.argv[1]) as f:\n    f.write(b'half a scene')\n    f.flush()\n"
         "    print('writing', flush=True)\n    time.sleep(600)\n", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert writer.stdout.readline().strip() == "writing"
    writer.kill()  # SIGKILL: no clean-up runs
    writer.wait()
    left = [p.name for p in out.parent.iterdir()]
    assert len(left) == 1 and re.fullmatch(rf"\.scene\.ply\.{writer.pid}\.[a-z0-9_]{{8}}\.part", left[0]), left
    r = run(["convert", hostile.opaque_ply(tmp_path / "in"), out])
    assert r.code == 0, r.err
    assert sorted(p.name for p in out.parent.iterdir()) == ["scene.ply"]


@pytest.mark.parametrize("fmt", ["compressed.ply", "splat", "spz-v3", "spz-v4", "sog", "glb"])
def test_every_reader_peaks_under_twice_its_arrays(fmt, tmp_path):
    """Peak RSS while reading (above the interpreter's own, reset just before the read) stays under twice the
    scene's float32 arrays. Before the readers decoded chunk by chunk into the final arrays, at 1M Gaussians of SH
    degree 3: compressed PLY 5.2x, SPZ 3.5x, .splat 2.9x; a 16M SOG 2.3x; GLB 4.1x (its binary chunk read whole,
    the primitives concatenated, then turned into the PLY frame), 1.13x since."""
    from scenes import save_scene
    from scenes.spz import _HEADER_V3, MAGIC, encode_spz_blocks, write_spz
    from tests.scenes.test_ply_lean import PEAK_SCRIPT

    path = tmp_path / f"a.{fmt.split('-')[0]}"
    if fmt == "sog":
        path = hostile.sog(tmp_path, count=1_000_000, noise=True)
    else:
        scene = hostile.cloud(1_000_000, degree=0 if fmt == "splat" else 3)
        if fmt == "spz-v3":  # as write_spz writes it, but with fast gzip (its level 6 takes 20 s here)
            (n, degree, bits, flags), blocks = encode_spz_blocks(scene, str(path))
            raw = _HEADER_V3.pack(MAGIC, 3, n, degree, bits, flags, 0) + b"".join(b.tobytes() for b in blocks)
            path.write_bytes(gzip.compress(raw, compresslevel=1))
        else:
            (write_spz(scene, path, version=4) if fmt == "spz-v4" else save_scene(scene, path))
        del scene
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(path)], cwd=REPO, capture_output=True, text=True,
                         timeout=TIMEOUT_S, env={**os.environ, **ENV})  # fmt: skip
    assert out.returncode == 0, out.stderr
    extra, size = map(int, out.stdout.split()[-2:])
    print(f"\n{fmt}: read peak above start-up = {extra / size:.2f} x the arrays ({size / 2**20:.0f} MiB)")
    assert extra < 2 * size


# ------------------------------------------------------------------ the densest small file, at the default size

# Renders at the default size (1280x720) of the default view, on the CPU wherever the test runs (on a GPU host the
# command would take the GPU), through the torch reference pipeline
ON_THE_CPU = {"CUDA_VISIBLE_DEVICES": ""}


def default_size_render(path, folder) -> list:
    return ["render", path, "--out", folder / "default.png", "--backend", "torch", "--overwrite"]


@pytest.fixture(scope="module")
def default_size_startup(tmp_path_factory) -> Run:
    """A render at the default size of a tiny sound file: what such a render costs before its scene (405 MiB and
    2.1-3.2 s of CPU on the 2-core CPU machine, the more the busier it is: start-up, the frame's image buffers)."""
    folder = tmp_path_factory.mktemp("default-size")
    r = run(default_size_render(_tiny(folder), folder), ON_THE_CPU)
    assert r.code == 0, r.err
    return r


# What a small file's own render at the default size may take of CPU time above that start-up: the 5 s less the
# 2 s of a command's start-up (SMALL_FILE_CPU_S). Its absolute CPU time counts the default size's start-up, which
# the busy 2-core machine stretches past 3 s, and is printed.
SMALL_FILE_OWN_CPU_S = SMALL_FILE_CPU_S - 2.0


def test_the_densest_small_file_is_read_converted_and_rendered_at_the_default_size_within_the_bound(
    tmp_path, startup_mib, default_size_startup
):
    """The most Gaussians a file under 1 MiB can hold (hostile.densest_spz: 131,000 at SH degree 3, 8 bytes each,
    the compactness bound; 31 MB of arrays) through `info`, `convert` and a render of the default view at the
    default 1280x720, each within the small-file bound above the command's own start-up. Their size (2-4 tiles at
    that view) makes 1.24M pairs. Measured on the 2-core CPU machine: info +48 MiB, 2.4 s CPU; convert +99 MiB,
    2.3 s; render +94-117 MiB, 1.0-2.3 s above its start-up (3.7-6.2 s in all, the more the busier the machine;
    it was +255 MiB while the torch reference's bin expanded every pair of the frame's first pass). A 2-frame
    video of it costs +110-125 MiB and 6.1-6.6 s of CPU, 2.8-4.1 of them the command's start-up."""
    path = hostile.densest_spz(tmp_path)
    assert 8 * 131_000 <= path.stat().st_size < 1 << 20
    start = default_size_startup
    runs = {  # command: (arguments, its start-up's peak, its start-up's CPU time where the bound is above it)
        "info": (COMMANDS["info"](path, tmp_path), startup_mib["info"], None),
        "convert": (COMMANDS["convert"](path, tmp_path), startup_mib["convert"], None),
        "render": (default_size_render(path, tmp_path), start.peak_mib, start.cpu_s),
    }
    for command, (args, base_mib, base_cpu_s) in runs.items():
        r = run(args, ON_THE_CPU)
        print(f"\ndensest {command}: exit {r.code}, {r.cpu_s:.1f} s CPU, peak {r.peak_mib:.0f} MiB (start-up "
              f"{base_mib:.0f} MiB{'' if base_cpu_s is None else f', {base_cpu_s:.1f} s'})")  # fmt: skip
        assert r.code == 0 and r.err == "", r.err
        assert r.peak_mib - base_mib < SMALL_FILE_EXTRA_MIB
        bound, own = (SMALL_FILE_CPU_S, 0.0) if base_cpu_s is None else (SMALL_FILE_OWN_CPU_S, base_cpu_s)
        extra_s = r.cpu_s - own
        for _ in range(3):
            if extra_s < bound:
                break
            # CPU time stretches too when the suite's other worker shares the core (two hyperthreads of one): the
            # render measured +3.2-3.3 s in the full suite and +1.1-1.7 s alone on the same commits, and CI once
            # measured it at 7.1 and 6.3 s against a start-up timed 3.3 s minutes earlier. Noise only adds time, and
            # it stretches a start-up as much as the command, so measure again in pairs, the start-up just before
            # the command, and keep the least of their differences
            base = run(default_size_render(_tiny(tmp_path), tmp_path), ON_THE_CPU).cpu_s if base_cpu_s else 0.0
            again = run(args, ON_THE_CPU)
            assert again.code == 0 and again.peak_mib - base_mib < SMALL_FILE_EXTRA_MIB, again.err
            print(f"densest {command} again: {again.cpu_s:.1f} s CPU (start-up just before it {base:.1f} s)")
            extra_s = min(extra_s, again.cpu_s - base)
        assert extra_s < bound, (command, extra_s, own)
    pairs = re.search(r"131,000 visible, ([\d,]+) Gaussian-tile pairs", r.out)  # the render's own report
    assert pairs and int(pairs[1].replace(",", "")) > 1_000_000, r.out  # the frame drew them, all visible


def test_gaussians_large_on_screen_are_refused_before_their_pairs_get_memory(tmp_path, default_size_startup):
    """The same file with every Gaussian of unit scale: each reaches 40% of the default view's tiles, 754M pairs,
    about 70 GB. Before the renderer checked a frame's pairs once counted, it grew its buffers to them (a 1 MB file
    of 80,000 such Gaussians was killed at 23.8 GB after 129 s). Now a two-frame video of it ends after the first
    frame's order in one line naming the file, at its read's cost, under the suite's 4G cap on any host."""
    path = hostile.densest_spz(tmp_path, log_scale=0.0, name="wide.spz")
    out = tmp_path / "wide.mp4"
    r = run(["render", path, "--path", "orbit", "--frames", 2, "--out", out, "--backend", "torch", "--quiet"],
            ON_THE_CPU)  # fmt: skip
    start = default_size_startup
    print(f"\nwide render: exit {r.code}, {r.cpu_s:.1f} s CPU, peak {r.peak_mib:.0f} MiB "
          f"(start-up {start.peak_mib:.0f} MiB, {start.cpu_s:.1f} s)")  # fmt: skip
    lines = r.err.splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    m = re.fullmatch(
        rf"warpsplat render: error: {re.escape(str(path))}: a 1280x720 frame needs ([\d,]+) Gaussian-tile pairs "
        r"\([\d,]+ tiles for each of its 131,000 visible Gaussians\): about [\d.]+ GB more on cpu, but only "
        r"[\d.]+ GB is free( under WARPSPLAT_MAX_MEMORY=4G)? \(Gaussians this large on screen need a smaller frame\)",
        lines[0],
    )
    assert m and int(m[1].replace(",", "")) > 500_000_000, lines[0]
    assert r.peak_mib - start.peak_mib < SMALL_FILE_EXTRA_MIB and r.cpu_s - start.cpu_s < SMALL_FILE_OWN_CPU_S
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wide.spz"]  # no video, no part of one
