"""A warm start compiles nothing: every kernel the viewer's first start compiled, the next start loads from Triton's
cache (issue 25's start time). A warm start compiled 12 binning kernels again until their cache keys were settled
at import (kernels/_launch.py `settle_cache_keys`; BENCHMARKS.md section 63). tests/gpu/start_time.py runs both
starts, each in a fresh process over one empty cache, and counts what each compiled (`CompileLog`, Triton's
compilation listener). The listener's counts are checked here on the CPU (Triton compiles for a GPU target
without one); the starts need CUDA: run on the GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

COUNTS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from start_time import CompileLog

@triton.jit
def copy_kernel(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)

log = CompileLog(sys.argv[2])
target = GPUTarget("cuda", 90, 32)
for block in (64, 64, 128):  # the second 64 is the first's, from the cache
    src = ASTSource(fn=copy_kernel, signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": block})
    triton.compile(src, target=target)
print(json.dumps({"compiled": log.compiled, "loaded": log.loaded}))
"""


def test_compile_log_counts_compiles_and_cache_loads(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    path, script = tmp_path / "log.jsonl", tmp_path / "counts.py"
    script.write_text(COUNTS)  # a file: Triton reads a kernel's source from it
    runs = []
    for _ in range(2):  # a second process over the same cache loads both
        done = subprocess.run([sys.executable, str(script), HERE, str(path)], env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs == [{"compiled": 2, "loaded": 1}, {"compiled": 0, "loaded": 3}]
    rows = [json.loads(line) for line in path.read_text().splitlines()]  # the second process's lines
    assert [r["cache_hit"] for r in rows] == [True, True, True]
    assert {r["name"] for r in rows} == {"copy_kernel"}
    assert len({r["src_hash"] for r in rows}) == 2  # two specializations


@pytest.mark.gpu
def test_a_warm_start_compiles_nothing():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (run on the GPU machine)")
    done = subprocess.run([sys.executable, os.path.join(HERE, "start_time.py"), "--no-switches"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {}
    for line in done.stdout.splitlines():
        label, _, rest = line.partition(" ")
        if label in ("cold", "warm"):
            rows[label] = json.loads(rest)
    print(rows)
    assert rows["cold"]["warm_up_compiled"] > 0  # the cache started empty: the check can fail
    assert rows["warm"]["warm_up_compiled"] == 0
    assert rows["warm"]["warm_up_compiles"] > 0  # it loaded its kernels
