"""Stages 4-5, sort and tile ranges: the stable narrow-key sort and the ranges against the torch twins."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like


def make_keys(n_tiles, n, device, dtype=torch.int16, seed=0):
    g = torch.Generator().manual_seed(seed)
    keys = torch.randint(0, n_tiles, (n,), generator=g).to(dtype)
    keys[-3:] = kernels.sentinel_key(dtype)  # unused slots sort last
    return keys.to(device), torch.randperm(n, generator=g).to(torch.int32).to(device)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_sort_is_stable_and_matches_reference(dtype, device):
    keys, ids = make_keys(20, 5000, device, dtype)
    n = keys.numel()
    out = (torch.empty(n + 7, dtype=dtype, device=device), torch.empty(n + 7, dtype=torch.int64, device=device),
           torch.empty(n + 7, dtype=torch.int32, device=device))  # fmt: skip
    sk, si = kernels.sort_pairs(keys, ids, out=out)
    wk, wi = ref.sort_pairs(keys, ids)
    assert torch.equal(sk, wk) and torch.equal(si, wi)
    assert (sk[1:] >= sk[:-1]).all()
    # stability: within a key, ids keep their input order (here, positions of a random permutation)
    pos = torch.empty_like(ids, dtype=torch.int64)
    pos[ids.long()] = torch.arange(n, device=device)
    same = sk[1:] == sk[:-1]
    assert (pos[si[1:].long()][same] > pos[si[:-1].long()][same]).all(), "equal keys keep their original order"


def test_tile_ranges_match_reference_with_empty_tiles_and_sentinels(device):
    n_tiles = 37
    keys, ids = make_keys(n_tiles - 5, 3000, device, seed=2)  # the last 5 tiles stay empty
    sk, _ = ref.sort_pairs(keys, ids)
    want = ref.tile_ranges(sk, n_tiles)
    got = kernels.tile_ranges(sk, n_tiles, out=nan_like(torch.empty(n_tiles, 2, dtype=torch.int32, device=device)))
    assert torch.equal(got, want)
    assert (got[-5:] == 0).all()
    assert int((got[:, 1] - got[:, 0]).sum()) == 3000 - 3, "sentinel keys belong to no tile"
    for t in range(n_tiles):  # every range holds exactly that tile's keys
        assert (sk[got[t, 0] : got[t, 1]] == t).all()


def test_tile_ranges_empty_input(device):
    got = kernels.tile_ranges(torch.empty(0, dtype=torch.int16, device=device), 6)
    assert got.shape == (6, 2) and (got == 0).all()
