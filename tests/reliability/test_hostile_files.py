"""Hostile and unusual scene files through the real command: `warpsplat info` and `warpsplat render` on one file of
every class (tests/reliability/hostile.py), each in a subprocess under a safety cap on its address space
(`prlimit --as`) and a timeout. Every class ends in exit 2 with one stderr line naming the file, or loads with
every valid Gaussian kept (a dropped-Gaussian notice is one line too). Peak memory is the child's ru_maxrss:
a refused file costs no more than the command's start-up (measured on a tiny sound file), and an honest file
declaring 16M Gaussians is read within twice its arrays, as is a sound file of every compressed format.
A write killed with SIGKILL leaves a temporary that the next write to the same output removes.

The commands run with WARPSPLAT_MAX_MEMORY=4G, so that what a file may take does not depend on the test
machine's free memory (the free-memory default is tested in tests/scenes/test_limits.py), and with one torch
thread, so that a busy machine does not stretch them past the timeout.
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

import pytest

from tests.conftest import REPO

from . import hostile

SAFETY_CAP = 8 << 30  # bytes of address space: a runaway read fails here instead of taking the machine
TIMEOUT_S = 120
REFUSED_EXTRA_MIB = 64  # a refused file may cost this much more than the start-up (imports, argument parsing)
ENV = {"WARPSPLAT_MAX_MEMORY": "4G", "OMP_NUM_THREADS": "1"}


@dataclass
class Run:
    code: int
    out: str
    err: str
    peak_mib: float  # the command's ru_maxrss
    seconds: float


# The command is started by this small fresh interpreter, which reports the command's resource usage: a process's
# ru_maxrss keeps the peak of the memory it had before exec, so a command forked from pytest itself (hundreds of
# MB) would report pytest's peak, not its own.
REPORTER = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "open(sys.argv[1], 'w').write(f'{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}')\n"
)


def run(args: list, env: dict[str, str] | None = None) -> Run:
    """`warpsplat ARGS` in a subprocess under `prlimit --as`, with its exit code, output and peak memory."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "usage")
        command = ["prlimit", f"--as={SAFETY_CAP}", sys.executable, "-m", "tools", *map(str, args)]
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
            code, maxrss_kib = map(int, f.read().split())
    return Run(code, out, err, maxrss_kib / 1024, seconds)


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
}

# (class id, builder(folder) -> path, exit code, the one stderr line (regex; None: no stderr), extra environment)
CASES = [
    ("1-infinite-opacity", hostile.opaque_ply, 0, None, {}),
    ("2-spz-v4-bomb-8M", hostile.spz_v4, 2,
     r"bomb\.spz: SPZ header numPoints of 8,000,000 Gaussians needs about 2\.4\d GB of memory to read, more than "
     r"the 1\.07 GB cap \(WARPSPLAT_MAX_MEMORY=1G; set WARPSPLAT_MAX_MEMORY to change it\)$",
     {"WARPSPLAT_MAX_MEMORY": "1G"}),
    ("2-spz-v4-bomb-134M", lambda f: hostile.spz_v4(f, n=1 << 27), 2,
     r"bomb\.spz: SPZ header numPoints of 134,217,728 Gaussians needs about 40\.\d\d GB of memory to read", {}),
    ("2-spz-v4-lying-toc", lambda f: hostile.spz_v4(f, n=1 << 27, cut=100), 2,
     r"bomb\.spz: SPZ v4 stream positions declares 1,207,959,552 bytes from 100 compressed, more than zstd can "
     r"expand to \(lying count\)$", {}),
    ("3-sog-16M-over-the-cap", hostile.sog, 2,
     r"big\.sog: meta\.json count of 16,000,000 Gaussians needs about 1\.\d\d GB of memory to read, more than the "
     r"0\.54 GB cap", {"WARPSPLAT_MAX_MEMORY": "512M"}),
    ("3-sog-lying-member", hostile.sog_lying_member, 2,
     r"lying\.sog: SOG member 'means_l\.webp' is corrupt \(Bad CRC-32 for file 'means_l\.webp'\)$", {}),
    ("4-nested-json", hostile.nested_json_sog, 2, r"nested\.sog: SOG meta\.json nests too deeply", {}),
    ("4-link-to-dev-zero", hostile.dev_zero_link, 2, r"z\.spz: is a character device, not a regular file$", {}),
    ("5-fifo", hostile.fifo, 2, r"f\.ply: is a named pipe \(FIFO\), not a regular file$", {}),
    ("6-overflow", hostile.overflow_ply, 0,
     r"warning: \S+overflow\.ply: dropped 2 of 64 Gaussians with invalid values \(NaN/inf, or a scale, position or "
     r"quaternion that overflows float32 or is zero\)$", {}),
    ("6-overflow-compressed-chunk", hostile.overflow_compressed_ply, 0,
     r"warning: \S+overflow\.compressed\.ply: dropped 255 of 512 Gaussians with invalid values", {}),
    ("6-all-overflow", lambda f: hostile.overflow_ply(f, scale_rows=range(64)), 2,
     r"overflow\.ply: all 64 Gaussians have invalid values", {}),
    ("7-misdeclared-types", hostile.misdeclared_ply, 2,
     r"misdeclared\.ply: PLY body has 192 bytes after its declared elements", {}),
    ("8-no-gaussians", hostile.empty_ply, 2,
     r"empty\.ply: PLY element vertex declares 0 Gaussians \(the file holds no scene\)$", {}),
    ("8-dropped-notice", hostile.nan_ply, 0, r"warning: \S+nan\.ply: dropped 1 of 64 Gaussians", {}),
    ("10-npz", hostile.npz, 2,
     r"test_garden\.npz: unknown scene format \(a zip archive without meta\.json, so not a SOG scene\)$", {}),
]  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_class_through_the_command(case, command, tmp_path, startup_mib):
    _, build, code, line, env = case
    path = build(tmp_path)
    r = run(COMMANDS[command](path, tmp_path), env)
    print(f"\n{case[0]} {command}: exit {r.code}, {r.seconds:.1f} s, peak {r.peak_mib:.0f} MiB "
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
    if code == 2:
        assert r.peak_mib < startup_mib[command] + REFUSED_EXTRA_MIB
        assert not (tmp_path / "out.png").exists()
    elif command == "render":
        assert (tmp_path / "out.png").stat().st_size > 0


def test_honest_16M_sog_is_read_within_twice_its_arrays(tmp_path, startup_mib):
    """A 7 kB SOG honestly declaring 16M Gaussians (all alike) loads, and `info` peaks at less than twice the
    scene's arrays above its start-up (it took 2.4 GB, 2.7x, before the readers decoded into the final arrays)."""
    path = hostile.sog(tmp_path)
    assert path.stat().st_size < 8_000
    r = run(["info", path])
    assert r.code == 0 and r.err == "", r.err
    assert "gaussians:     16,000,000" in r.out
    arrays_mib = 16_000_000 * 4 * (11 + 3) / 2**20
    extra = r.peak_mib - startup_mib["info"]
    print(f"\n16M SOG info: {r.seconds:.1f} s, peak {r.peak_mib:.0f} MiB = start-up + {extra / arrays_mib:.2f} x the "
          f"{arrays_mib:.0f} MiB of arrays")  # fmt: skip
    assert extra < 2 * arrays_mib


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


@pytest.mark.parametrize("fmt", ["compressed.ply", "splat", "spz-v3", "spz-v4", "sog"])
def test_every_reader_peaks_under_twice_its_arrays(fmt, tmp_path):
    """Peak RSS while reading (above the interpreter's own, reset just before the read) stays under twice the
    scene's float32 arrays. Before the readers decoded chunk by chunk into the final arrays, at 1M Gaussians of SH
    degree 3: compressed PLY 5.2x, SPZ 3.5x, .splat 2.9x; the 16M SOG 2.3x."""
    from scenes import save_scene
    from scenes.spz import _HEADER_V3, MAGIC, encode_spz_blocks, write_spz
    from tests.scenes.test_ply_lean import PEAK_SCRIPT

    path = tmp_path / f"a.{fmt.split('-')[0]}"
    if fmt == "sog":
        path = hostile.sog(tmp_path, count=4_000_000)
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
