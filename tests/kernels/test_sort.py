"""Stage 4, sort: the stable narrow-key sort of either form's pairs, tile pairs (int32 ids) and macro-tile pairs
(int64 entries), against the torch twin."""

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import unpack_entries
from tests.kernels.synthetic import random_keys, random_pairs


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_macro_tile_pairs_sort_stably_as_the_twin(dtype, device):
    keys, entries = random_pairs(37, 11, 5000, device, dtype)  # 5 x 3 macro-tiles
    n = keys.numel()
    out = (torch.empty(n + 7, dtype=dtype, device=device), torch.empty(n + 7, dtype=torch.int64, device=device),
           torch.empty(n + 7, dtype=torch.int64, device=device))  # fmt: skip
    sk, se = kernels.sort_pairs(keys, entries, out=out)
    wk, we = ref.sort_pairs(keys, entries)
    assert torch.equal(sk, wk) and torch.equal(se, we)
    assert (sk[1:] >= sk[:-1]).all() and (sk[-3:] == kernels.sentinel_key(dtype)).all(), "the sentinels last"
    # the entries travel whole, masks (the high 32 bits, bit 31 included) with their ids
    assert sorted(se.tolist()) == sorted(entries.tolist()) and bool((entries < 0).any())
    # stability: within a key, entries keep their input order (their ids are positions of a random permutation)
    ids, _ = unpack_entries(se)
    pos = torch.empty(n, dtype=torch.int64, device=device)
    pos[unpack_entries(entries)[0]] = torch.arange(n, device=device)
    same = sk[1:] == sk[:-1]
    assert (pos[ids[1:]][same] > pos[ids[:-1]][same]).all(), "equal keys keep their original order"


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_tile_pairs_sort_stably_as_the_twin(dtype, device):
    keys, ids = random_keys(20, 5000, device, dtype)
    n = keys.numel()
    out = (torch.empty(n + 7, dtype=dtype, device=device), torch.empty(n + 7, dtype=torch.int64, device=device),
           torch.empty(n + 7, dtype=torch.int32, device=device))  # fmt: skip
    sk, si = kernels.sort_pairs(keys, ids, out=out)
    wk, wi = ref.sort_pairs(keys, ids)
    assert torch.equal(sk, wk) and torch.equal(si, wi) and si.dtype == torch.int32
    assert (sk[1:] >= sk[:-1]).all() and (sk[-3:] == kernels.sentinel_key(dtype)).all(), "the sentinels last"
    # stability: within a key, ids keep their input order (here, positions of a random permutation)
    pos = torch.empty_like(ids, dtype=torch.int64)
    pos[ids.long()] = torch.arange(n, device=device)
    same = sk[1:] == sk[:-1]
    assert (pos[si[1:].long()][same] > pos[si[:-1].long()][same]).all(), "equal keys keep their original order"
