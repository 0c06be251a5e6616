#!/usr/bin/env bash
# The tests as a user's clone runs them: from a `git clone` of this checkout in a temporary folder, with no
# shared/ beside it and WARPSPLAT_SCENES unset. Every test is collected (an import that needs a file outside
# the repository fails here), and the tests that read real scene files (marker `data`, set by
# tests/conftest.py) run: those on bundled files must pass, the others are skipped with their reasons.
# `make test` runs this after the suite. A clone holds what is committed, so commit first.
# Usage: tests/clean_clone.sh PYTHON [PYTEST ARGS...]   (PYTHON: an environment with the test dependencies)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PYTHON [PYTEST ARGS...]" >&2; exit 2; }
python=$(command -v "$1") || { echo "$0: $1: not found" >&2; exit 2; }
case $python in /*) ;; *) python=$PWD/$python ;; esac  # the clone runs elsewhere
shift
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/warpsplat-clean-clone.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-hardlinks "$repo" "$tmp/warpsplat"
echo "clean clone of $(git -C "$tmp/warpsplat" rev-parse --short HEAD) in $tmp (nothing beside it)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "note: the checkout has uncommitted changes; the clone has only the last commit"
fi
cd "$tmp/warpsplat"
env -u WARPSPLAT_SCENES "$python" -m pytest -m data -rs "$@"
