"""Sort (stable, by (tile, depth)) and tile ranges against the torch twins."""

import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like


def make_keys(n_tiles, n, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    tiles = torch.randint(0, n_tiles, (n,), generator=g)
    depth = torch.rand(n, generator=g) * 10 + 0.1
    depth[: n // 4] = 1.0  # ties in depth must keep emission order
    keys = (tiles.long() << 32) | depth.view(torch.int32).long()
    keys[-3:] = kernels.SENTINEL_KEY  # unreached slots sort last
    return keys.to(device), torch.arange(n, dtype=torch.int32, device=device)


def test_sort_is_stable_and_matches_reference(device):
    keys, ids = make_keys(20, 5000, device)
    n = keys.numel()
    out = (torch.empty(n + 7, dtype=torch.int64, device=device), torch.empty(n + 7, dtype=torch.int64, device=device),
           torch.empty(n + 7, dtype=torch.int32, device=device))  # fmt: skip
    sk, si = kernels.sort_pairs(keys, ids, out=out)
    wk, wi = ref.sort_pairs(keys, ids)
    assert torch.equal(sk, wk) and torch.equal(si, wi)
    assert (sk[1:] >= sk[:-1]).all()
    same = sk[1:] == sk[:-1]
    assert (si[1:][same] > si[:-1][same]).all(), "equal keys keep their original order"


def test_tile_ranges_match_reference_with_empty_tiles_and_sentinels(device):
    n_tiles = 37
    keys, ids = make_keys(n_tiles - 5, 3000, device, seed=2)  # the last 5 tiles stay empty
    sk, _ = ref.sort_pairs(keys, ids)
    want = ref.tile_ranges(sk, n_tiles)
    got = kernels.tile_ranges(sk, n_tiles, out=nan_like(torch.empty(n_tiles, 2, dtype=torch.int32, device=device)))
    assert torch.equal(got, want)
    assert (got[-5:] == 0).all()
    assert int((got[:, 1] - got[:, 0]).sum()) == 3000 - 3, "sentinel keys belong to no tile"


def test_tile_ranges_empty_input(device):
    got = kernels.tile_ranges(torch.empty(0, dtype=torch.int64, device=device), 6)
    assert got.shape == (6, 2) and (got == 0).all()
