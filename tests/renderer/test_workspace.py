"""The workspace's buffers (renderer/workspace.py): the generation counts every buffer that moved or was let go,
since frames and CUDA graphs hold views of the buffers by address and are retired when it changes
(renderer/frame_cache.py). On the CPU a stale view keeps its old storage alive and renders correctly, so only this
count tells that a frame would have read a freed address on the GPU."""

import torch

from renderer.workspace import Workspace


def test_the_generation_moves_when_a_buffer_moves_or_goes_and_only_then():
    ws = Workspace("cpu")
    a = ws.buffer("a", 10, torch.float32)
    assert ws.generation == 0, "a new buffer moves nothing"
    assert ws.buffer("a", 8, torch.float32).data_ptr() == a.data_ptr() and ws.generation == 0, "fits: same storage"
    grown = ws.buffer("a", 100, torch.float32)
    assert grown.data_ptr() != a.data_ptr() and ws.generation == 1, "grown: moved"
    ws.buffer("a", 50, torch.float32)
    assert ws.generation == 1
    ws.buffer("a", 50, torch.int32)
    assert ws.generation == 2, "another dtype: moved"
    ws.buffer("b", 5, torch.float32, headroom=2.0)
    assert ws.generation == 2 and ws.buffer("b", 10, torch.float32).numel() == 10 and ws.generation == 2, "headroom"
    ws.drop("b", "missing")
    assert ws.generation == 3, "let go: moved (a name never held moves nothing)"
