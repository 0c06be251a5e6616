"""Staging: a frame's parameters up through `copy_to_device`, and kernels writing their host-read outputs straight
into pinned memory (kernels/staging.py). On a CPU the interpreter's "device" is the host; on the GPU machine the
host side is pinned memory, which the kernels reach through unified addressing."""

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.staging import MAX_STAGED
from tests.conftest import nan_like


def host(t: torch.Tensor) -> torch.Tensor:
    """t in host memory a kernel can reach: pinned beside a GPU, plain on a CPU (the interpreter's own memory)."""
    return t.cpu().pin_memory() if torch.cuda.is_available() else t.cpu()


@pytest.mark.parametrize("n", [1, 28, MAX_STAGED])
def test_copy_to_device_copies_every_element_both_ways(n, device):
    """Up (host to device) and down (device to host), into NaN-poisoned buffers: each element, and no other, as the
    twin copies them."""
    src = host(torch.arange(n, dtype=torch.float32) * 1.5 - 7.0)
    up = torch.full((n + 4,), float("nan"), device=device)
    kernels.copy_to_device(src, up[:n])
    if up.is_cuda:
        torch.cuda.synchronize()
    assert torch.equal(up[:n].cpu(), src.cpu()), "every element up"
    assert torch.isnan(up[n:]).all(), "nothing past the copy"
    down = host(torch.full((n,), float("nan")))
    kernels.copy_to_device(up[:n], down)
    if up.is_cuda:
        torch.cuda.synchronize()
    assert torch.equal(down, src.cpu())
    twin = nan_like(up[:n])
    ref.copy_to_device(src, twin)
    assert torch.equal(twin.cpu(), up[:n].cpu())


def test_copy_to_device_refuses_what_it_cannot_copy(device):
    """More than one program's lanes, or buffers that disagree, fail at once rather than copy part of them."""
    with pytest.raises(AssertionError):
        kernels.copy_to_device(torch.zeros(MAX_STAGED + 1, device=device), torch.zeros(MAX_STAGED + 1, device=device))
    with pytest.raises(AssertionError):
        kernels.copy_to_device(torch.zeros(8, device=device), torch.zeros(8, dtype=torch.int32, device=device))
    with pytest.raises(AssertionError):
        kernels.copy_to_device(torch.zeros(8, device=device), torch.zeros(9, device=device))


def test_counts_and_longest_list_written_into_host_memory(device):
    """The counted frame's host reads: `count_visible`'s totals and `schedule_tiles`'s longest list, each written by
    its kernel into host memory, equal what they write into device memory."""
    g = torch.Generator().manual_seed(3)
    n = 5000
    depths = torch.where(torch.rand(n, generator=g) < 0.6, torch.rand(n, generator=g) * 10, float("inf"))
    tiles = torch.where(torch.isfinite(depths), torch.randint(1, 9, (n,), generator=g), 0).int()
    depths, tiles = depths.to(device), tiles.to(device)
    partials = torch.empty(kernels.count_blocks(n), dtype=torch.int64, device=device)
    on_device = torch.full((3,), -7, dtype=torch.int64, device=device)
    on_host = host(torch.full((3,), -7, dtype=torch.int64))
    for totals in (on_device, on_host):
        kernels.count_visible(depths, tiles, tiles, compact=False, out=(totals, partials, None, None))
    if on_device.is_cuda:
        torch.cuda.synchronize()
    visible = int(torch.isfinite(depths).sum())
    assert on_host.tolist() == on_device.tolist() == [visible, int(tiles.sum()), int(tiles.sum())]

    lengths = torch.randint(0, 3000, (700,), generator=g)
    end = torch.cumsum(lengths, 0)
    ranges = torch.stack([end - lengths, end], 1).int().to(device)
    shapes = (700, 700, kernels.schedule_scratch_shape(700))
    out = tuple(torch.empty(s, dtype=torch.int32, device=device) for s in shapes)
    longest = host(torch.full((1,), -7, dtype=torch.int64))
    kernels.schedule_tiles(ranges, out=out, longest=longest)
    if ranges.is_cuda:
        torch.cuda.synchronize()
    assert longest.item() == int(lengths.max())
