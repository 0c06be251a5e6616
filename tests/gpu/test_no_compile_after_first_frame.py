"""No kernel compiles after the first frame (issue 25): after the renderer's warm-up, a path from far outside a
dense cube of Gaussians to inside it (every list class and every bin configuration) compiles and loads
no Triton kernel, replayed as CUDA graphs or counted, one by one or streamed, nor with a switch of the viewer
flipped mid-path once the flips are warmed. Each case runs in a fresh process
(tests/gpu/compile_check.py): one that compiled the kernels before would count nothing. And the check can fail:
without the warm-up, the same path compiles. Needs CUDA: run on the GPU machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.gpu

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_check.py")


def check(*args: str) -> dict:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (run on the GPU machine)")
    done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(result)
    return result


@pytest.mark.parametrize(
    "args",
    [("--case", "graph"), ("--case", "graph", "--stream"), ("--case", "graph", "--settings", "viewer"),
     ("--case", "dense"), ("--case", "counted"), ("--case", "counted", "--size", "3840x2160"), ("--case", "huge"),
     ("--case", "graph", "--flips")],
    ids=["graph", "graph-stream", "graph-viewer-settings", "dense", "counted", "counted-4k", "huge", "graph-flips"],
)  # fmt: skip
def test_no_compile_after_the_first_frame(args):
    r = check(*args)
    assert r["warm_up_compiles"] > 0, "the counter saw no compile in a fresh process: it is not counting"
    assert r["compiles_after_first_frame"] == 0 and r["loads_after_first_frame"] == 0, r
    assert r["first_frame_compiles"] == 0, r  # the warm-up covered the first frame as well
    # between them the cases cross every launch class, so they prove what they should: the graph case the spread
    # and chain-bound list classes and the bin stage's two classes under 1M visible Gaussians (narrow and wide
    # footprints); the dense one every list class, the split one among them (longest lists of 8k entries and more,
    # several times the rest's share: kernels/rasterize.py `list_class`), and 64 a bin program (from 1M visible);
    # the huge one the bin stage's few-huge class (kernels/bin.py `bin_config`). Measured on the H200 (BENCHMARKS.md,
    # section 33: the list classes follow the GPU's multiprocessors, so another GPU may cross them elsewhere).
    if r["case"] == "graph":
        assert r["lists"] == [0, 1] and r["bins"] == [[32, 4], [32, 16]], r
    if r["case"] in ("graph", "counted") and r["size"] == "1920x1080":  # the pre-cull both ways (kernels/project.py)
        assert r["culls"] == [False, True], r
    if r["case"] == "counted" and r["size"] == "3840x2160":  # per tile in two halves (kernels/buffers.py key_halves)
        assert r["halves"] == [135], r
    if r["case"] == "dense":
        assert r["lists"] == [0, 1, 2] and r["bins"] == [[64, 2]], r
    if r["case"] == "huge":
        assert r["bins"] == [[8, 8]], r
    if r["flips"]:  # each switch of the viewer flipped mid-path, after a warm-up of the flips (the viewer warms
        # them in the background): the degrees 0 and 1, tile 16, the scalar and batched loops, float32 blending,
        # AdaGScale, ortho and depth
        assert len(r["flips"]) == 9 and "blend_precision=fp32" in r["flips"] and "tile_size=16" in r["flips"], r


def test_without_the_warm_up_the_same_path_compiles():
    """The check's own check: the path compiles kernels after its first frame when nothing was warmed."""
    r = check("--case", "graph", "--no-warm-up")
    assert r["compiles_after_first_frame"] > 0, r
