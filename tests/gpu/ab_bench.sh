#!/usr/bin/env bash
# `warpsplat bench` on two trees in alternated processes, on one GPU machine: the checkout against an earlier commit.
# One process per run, the trees taking turns, so drift between the runs (the machine's clocks, the host's other
# load) falls on both; the bench's own rows within one process are timed minutes apart.
#
# Here, before the call:   bash tests/gpu/ab_bench.sh export REF      (git archive of REF into .gpu/ab/base)
# There:                   source .gpu/setup.sh && bash tests/gpu/ab_bench.sh run "$OUT" ROUNDS [bench args...]
#   e.g. ... run "$OUT" 2 --scenes none --composites 6M,24M --no-gsplat --higs none --large-size none --frames 20
# Each run's table, log and JSON go to $OUT/ab_{base,checkout}_{round}.*; the medians are printed as they come.
# The JSON's commit field is the checkout's in both (git looks upward from .gpu/ab/base): .gpu/ab/base/COMMIT names
# the base's.
set -uo pipefail
case "${1:-}" in
export)
  ref=${2:?usage: ab_bench.sh export REF}
  rm -rf .gpu/ab/base && mkdir -p .gpu/ab/base
  git archive "$ref" | tar -x -C .gpu/ab/base --exclude tests/data  # the bundled scene stays: --quick reads it
  git rev-parse "$ref" > .gpu/ab/base/COMMIT
  du -sh .gpu/ab/base .gpu
  ;;
run)
  out=${2:?usage: ab_bench.sh run OUT ROUNDS [bench args...]}; rounds=${3:-2}; shift 3 || shift $#
  root=$PWD
  [ -d .gpu/ab/base ] || { echo "no .gpu/ab/base: run 'bash tests/gpu/ab_bench.sh export REF' before the call"; exit 2; }
  mkdir -p "$out"
  for round in $(seq 1 "$rounds"); do
    for tree in base checkout; do
      dir=$root; [ $tree = base ] && dir=$root/.gpu/ab/base
      (cd "$dir" && PYTHONPATH=/tmp/warpsplat-wheels:$dir ${PYTHON:-python3} -m tools bench --scenes-dir "$root/.gpu/scenes" \
        --json "$out/ab_${tree}_$round.json" "$@" > "$out/ab_${tree}_$round.txt" 2> "$out/ab_${tree}_$round.log")
      echo "$tree round $round: rc $?"
      grep -E 'median' "$out/ab_${tree}_$round.log"
    done
  done
  ;;
*)
  echo "usage: ab_bench.sh export REF | run OUT ROUNDS [bench args...]"; exit 2
  ;;
esac
