#!/usr/bin/env bash
# Everything the GPU machine checks in one call: the whole test suite compiled for real (no interpreter),
# the gsplat parity tests, and the benchmark. Logs and the bench JSON go to $1 (default ./gpu-out).
# Usage on the GPU machine: source .gpu/setup.sh && bash tests/gpu/run_on_gpu.sh "$OUT" [bench args...]
set -uo pipefail
out=${1:-gpu-out}; shift || true
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
# gsplat JIT-builds its CUDA kernels on first use (~70 s); do it once, up front, and time it
( time python3 -c "import torch, gsplat; from gsplat.cuda._backend import _C; print('gsplat', gsplat.__version__, 'built:', _C is not None)" ) 2>&1 | tee "$out/gsplat_build.txt"
# PYTEST_K narrows the selection when fewer scenes are staged (e.g. PYTEST_K="not donut and not lod1")
python3 -m pytest -q -p no:cacheprovider tests/kernels tests/gpu -rs ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$out/pytest_gpu.txt"
python3 -m tools bench --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.txt"
