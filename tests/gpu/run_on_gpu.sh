#!/usr/bin/env bash
# Everything the GPU machine checks in one call: the kernel, renderer and GPU tests compiled for real (no
# interpreter), gsplat parity, CUDA graphs, the interop check, per-stage timings and the benchmark. Logs, the
# bench JSON and the stage table go to $1 (default ./gpu-out).
# Usage on the GPU machine: source .gpu/setup.sh && bash tests/gpu/run_on_gpu.sh "$OUT" [bench args...]
# (.gpu/ is filled by tests/gpu/stage.sh; tests/gpu/README.md says what it holds and what setup.sh does)
# STEPS narrows what runs (default "tests interop stages bench"; also "start": the viewer's start time with a
# cold and a warm Triton cache, "memory": peaks against the estimate, and the largest composite within 24 GB, and
# "profile": every kernel's time on the bench's paths, warpsplat's and then HiGS's on the same frames);
# PYTEST_K narrows the test selection.
set -uo pipefail
out=${1:-gpu-out}; shift || true
steps=${STEPS:-tests interop stages bench}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
# gsplat JIT-builds its CUDA kernels on first use (~70 s): in the background, while the tests compile Triton's
( time python3 -c "import torch, gsplat; from gsplat.cuda._backend import _C; print('gsplat', gsplat.__version__, 'built:', _C is not None)" ) > "$out/gsplat_build.txt" 2>&1 &
build=$!
if [[ $steps == *tests* ]]; then
  python3 -m pytest -q -p no:cacheprovider -p no:randomly tests/kernels tests/renderer -rs ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$out/pytest_gpu.txt"
fi
wait $build; cat "$out/gsplat_build.txt"
if [[ $steps == *tests* ]]; then
  python3 -m pytest -q -p no:cacheprovider -p no:randomly tests/gpu -rs -s ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$out/pytest_parity.txt"
fi
if [[ $steps == *interop* ]]; then
  python3 tests/app/gpu_interop_check.py 2>&1 | tee "$out/interop.txt"
fi
if [[ $steps == *start* ]]; then
  python3 tests/gpu/start_time.py 2>&1 | tee "$out/start_time.txt"
fi
if [[ $steps == *memory* ]]; then
  python3 tests/gpu/memory_check.py --scenes-dir "${WARPSPLAT_SCENES:-.gpu/scenes}" 2>&1 | tee "$out/memory.txt"
  python3 tests/gpu/memory_check.py --scenes-dir "${WARPSPLAT_SCENES:-.gpu/scenes}" --fit 24 2>&1 | tee -a "$out/memory.txt"
fi
if [[ $steps == *profile* ]]; then
  profile=(--scenes plant.splat playbot_lod0.sog --composites 6M,24M --scenes-dir "${WARPSPLAT_SCENES:-.gpu/scenes}")
  python3 tests/gpu/kernel_profile.py "${profile[@]}" --json "$out/kernels_warpsplat.json" 2>&1 | tee "$out/kernels.txt"
  # HiGS is a package named gsplat, as gsplat 1.5.3 is: its folder first on this process's path
  if [[ -n ${WARPSPLAT_HIGS:-} ]]; then
    PYTHONPATH="$WARPSPLAT_HIGS:${PYTHONPATH:-}" python3 tests/gpu/kernel_profile.py --renderer higs --tile 8 \
      "${profile[@]}" --json "$out/kernels_higs.json" 2>&1 | tee -a "$out/kernels.txt"
  else
    echo "profile: WARPSPLAT_HIGS is not set (source .gpu/setup.sh): HiGS not profiled" | tee -a "$out/kernels.txt"
  fi
fi
if [[ $steps == *stages* ]]; then
  python3 tests/gpu/stage_bench.py --scenes-dir "${WARPSPLAT_SCENES:-.gpu/scenes}" --json "$out/stages.json" 2>&1 | tee "$out/stages.txt"
fi
if [[ $steps == *bench* ]]; then
  python3 -m tools bench --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.txt"
fi
