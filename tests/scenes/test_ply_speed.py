"""Loading a 1M-Gaussian SH-degree-3 INRIA PLY (248 MB) takes well under a second on an idle machine.

The figure is printed (run with -s to see it). The assertion uses CPU time, best of three, so that other
processes on a shared machine do not fail it; the wall time is printed beside it.
"""

from __future__ import annotations

import time

import torch

from scenes import load_scene, make_scene
from scenes.ply import write_ply

N = 1_000_000


def test_load_1m_sh3_ply_is_fast(tmp_path):
    g = torch.Generator().manual_seed(0)
    scene = make_scene(
        torch.randn(N, 3, generator=g),
        torch.randn(N, 4, generator=g),
        torch.randn(N, 3, generator=g) - 4,
        torch.randn(N, generator=g),
        torch.randn(N, 16, 3, generator=g) * 0.3,
    )
    path = tmp_path / "1m_sh3.ply"
    write_ply(scene, path)
    del scene
    assert path.stat().st_size > 248_000_000
    walls, cpus = [], []
    for _ in range(3):
        w, c = time.perf_counter(), time.process_time()
        loaded = load_scene(path)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        assert len(loaded) == N and loaded.sh_degree == 3
        del loaded
    print(f"\n1M SH3 PLY load: best wall {min(walls):.3f} s, best CPU {min(cpus):.3f} s (of 3)")
    # The figure itself (0.36 s wall on a quiet 2-core machine) is recorded, not asserted: CPU time still
    # inflates 2-3x when other processes share the cores. The bound catches a fall back to a slow path
    # (per-column stacking costs about 1 s per million rows, per-row Python about 70 s).
    assert min(cpus) < 3.0
