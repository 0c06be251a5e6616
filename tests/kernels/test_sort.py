"""Stage 4, sort: the stable narrow-key sort of the (tile, Gaussian) pairs against the torch twin."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.kernels.synthetic import random_keys


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_sort_is_stable_and_matches_reference(dtype, device):
    keys, ids = random_keys(20, 5000, device, dtype)
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
