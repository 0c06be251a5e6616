#!/usr/bin/env bash
# Fills the git-ignored .gpu/ folder of this checkout with what a run on the GPU machine needs and its image
# lacks (tests/gpu/README.md): Python 3.12 wheels, the GL loader .debs, real scenes, the HiGS anchor, and the
# setup.sh that a run there sources first. Runs on a machine with the package index and apt, beside ../shared.
#
#   bash tests/gpu/stage.sh [SCENE ...]        # default scenes: STAGED_SCENES below
#   EXTRA="imgui-bundle==1.93.0 av==18.1.0" bash tests/gpu/stage.sh      # more wheels (mind the size)
#
# Again is cheap: wheels, .debs and scenes already there are kept. SHARED (default ../shared beside the
# checkout) is where the scenes and anchors are taken from.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
shared=${SHARED:-$root/../shared}
[ -d "$shared/scenes" ] || { echo "stage.sh: no scenes in $shared/scenes (set SHARED)" >&2; exit 2; }
mkdir -p .gpu/whl .gpu/deb .gpu/scenes .gpu/anchors

# 1. Wheels for the GPU machine's Python 3.12 (manylinux x86-64), without their dependencies: the image has
# torch, triton, numpy, Pillow, pytest and cuda-python. gsplat 1.5.3 is the exactness reference (parity test,
# bench); plyfile is its dependency; the rest are the project's own (pyproject.toml).
WHEELS="gsplat==1.5.3 plyfile==1.1.5 zstandard==0.25.0 tqdm==4.67.1 moderngl==5.13.0 glcontext==3.1.0
        pyglet==2.1.19 PyOpenGL==3.1.10"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
for spec in $WHEELS ${EXTRA:-}; do
  name=${spec%%==*} version=${spec##*==}
  if ls .gpu/whl | grep -qi "^${name//-/_}-${version}-"; then continue; fi
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --dest .gpu/whl "$spec"
done

# 2. The GL loaders (libEGL, libGL and their glvnd dispatch) as amd64 .debs: the image has the NVIDIA driver's
# EGL vendor library but not the loaders that moderngl's EGL context opens. A private list folder, so that no
# root is needed here.
if ! ls .gpu/deb/*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d)
  apt_opts=(-o APT::Architecture=amd64 -o Dir::State::Lists="$lists" -o Debug::NoLocking=1)
  mkdir -p "$lists/partial"
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd .gpu/deb && apt-get "${apt_opts[@]}" download libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 >/dev/null)
  rm -rf "$lists"
fi

# 3. Real scenes, from $SHARED/scenes: by default those the GPU tests and `warpsplat bench` read
# (tools/bench_paths.py SCENES and COMPOSITE_INPUTS, tests/gpu/test_gsplat_parity.py, the renderer tests:
# lod1_tile_0_0.5x.ply's needle-flat splats in tests/renderer/test_pipeline.py, 3.5 MB; guitar.compressed.ply and
# angel.sog, whose default view tests/renderer/test_camera.py checks) and st-peter.sog, which the composites of
# BENCHMARKS.md sections 2-7 included.
STAGED_SCENES="playbot_lod0.sog plant.splat winter_fountain.splat narcissus.sog fruit_drops_minimal.ply
               lastchance.splat st-peter.sog lod1_tile_0_0.5x.ply guitar.compressed.ply angel.sog"
for s in ${*:-$STAGED_SCENES}; do
  [ -f "$shared/scenes/$s" ] || { echo "stage.sh: $shared/scenes/$s not found" >&2; exit 2; }
  cp -u "$shared/scenes/$s" .gpu/scenes/
done

# 4. The HiGS anchor: gsplat's main branch at 90d7b4b ($SHARED/anchors/README.md), which setup.sh unpacks.
cp -u "$shared/anchors/gsplat-main-90d7b4b.tar.xz" .gpu/anchors/

# 5. setup.sh, sourced from the checkout's root on the GPU machine at the start of every run.
cat > .gpu/setup.sh <<'SETUP'
# Written by tests/gpu/stage.sh. Source from the checkout's root: `source .gpu/setup.sh && <command>`.
# Unpacks the GL loaders into / (the GPU machine runs as root), installs the wheels and this checkout into
# folders under /tmp (the image's own packages stay as they are), unpacks the HiGS anchor, and exports:
#   PYTHONPATH         the wheels, then the checkout (so its packages are importable as they are here)
#   PATH               with the `warpsplat` command
#   WARPSPLAT_SCENES   .gpu/scenes (the tests' and the bench's real scenes)
#   WARPSPLAT_HIGS     the unpacked gsplat main, for a child process's PYTHONPATH (it is also named gsplat, so
#                      one process imports either it or gsplat 1.5.3)
for deb in .gpu/deb/*.deb; do dpkg -x "$deb" /; done
ldconfig
python3 -m pip install --quiet --no-index --no-deps --no-compile --target /tmp/warpsplat-wheels .gpu/whl/*.whl \
  || return 1
export PYTHONPATH=/tmp/warpsplat-wheels:$PWD${PYTHONPATH:+:$PYTHONPATH}
if python3 -m pip install --quiet --no-index --no-deps --no-build-isolation --target /tmp/warpsplat-project . \
    >/dev/null 2>&1; then
  export PATH=/tmp/warpsplat-project/bin:$PATH
else
  echo "setup.sh: the warpsplat command is not installed; use python3 -m tools" >&2
fi
export WARPSPLAT_SCENES=$PWD/.gpu/scenes
mkdir -p /tmp/higs && tar -xJf .gpu/anchors/gsplat-main-90d7b4b.tar.xz -C /tmp/higs
export WARPSPLAT_HIGS=/tmp/higs/gsplat-main
# the NVIDIA EGL vendor file, where the image keeps it (glvnd finds no vendor otherwise)
nvidia_egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$nvidia_egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nvidia_egl
# gsplat 1.5.3 compiles its CUDA core on first use (about 70 s): for the H200 only, on the machine's cores
export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=$(nproc) PYTHONUNBUFFERED=1
SETUP

du -sh .gpu | sed 's/\t.*/ in .gpu/'
echo "carry .gpu with the checkout (both together under 64 MiB); a run there starts: source .gpu/setup.sh &&"
