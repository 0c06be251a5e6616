"""Stage 5, tile ranges: each tile's [start, end) in the sorted pairs against the torch twin."""

import torch

import kernels
import kernels.reference as ref
from tests.conftest import nan_like
from tests.kernels.synthetic import random_keys


def test_tile_ranges_match_reference_with_empty_tiles_and_sentinels(device):
    n_tiles = 37
    keys, ids = random_keys(n_tiles - 5, 3000, device, seed=2)  # the last 5 tiles stay empty
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
