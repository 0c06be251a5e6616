"""Stage 4, sort: tile pairs (int32 ids) by a stable narrow-key sort, and macro-tile pairs (int64 entries, keyed by
macro-tile and rounded depth) into exact (macro-tile, depth, index) order with their ties settled, against the torch
twin (which sorts macro-tile pairs the other way round: by the exact order first, then stably by key) and against
that order checked from the depths."""

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import pack_entries
from tests.kernels.synthetic import exact_order_holds, random_keys, random_pairs


@pytest.mark.parametrize("spread", [64, 2])
def test_macro_tile_pairs_sort_into_exact_depth_order(spread, device):
    """Keys of macro-tile above rounded depth, sorted, their runs of equal keys settled: (macro-tile, depth, index)
    order, as the twin's other route gives it and as checked from the depths themselves. spread 64: runs of a few
    equal keys; 2: every pair of a macro-tile in one run (about 330)."""
    keys, entries, depths = random_pairs(37, 11, 5000, device, spread=spread)  # 5 x 3 macro-tiles
    n = keys.numel()
    out = (torch.empty(n + 7, dtype=torch.int32, device=device), torch.empty(n + 7, dtype=torch.int64, device=device),
           torch.empty(n + 7, dtype=torch.int64, device=device))  # fmt: skip
    sk, se = kernels.sort_pairs(keys, entries, depths=depths, out=out)
    wk, we = ref.sort_pairs(keys, entries, depths=depths)
    assert torch.equal(sk, wk) and torch.equal(se, we)
    assert exact_order_holds(sk, se, depths, kernels.depth_bits(15))
    assert (sk[-3:] == kernels.sentinel_key(torch.int32)).all(), "the sentinels last"
    # the entries travel whole, masks (the high 32 bits, bit 31 included) with their ids
    assert sorted(se.tolist()) == sorted(entries.tolist()) and bool((entries < 0).any())
    assert int((sk[1:] == sk[:-1]).sum()) > 100, "the case must hold runs of equal keys to settle"


def test_the_order_within_a_run_does_not_come_from_the_sort(device):
    """Pairs whose depths all round alike (one run per macro-tile), binned farthest first: the settled order is the
    exact one whatever order the pairs arrive in, so a sort that kept the binned order (no settling) fails."""
    n = 600
    g = torch.Generator().manual_seed(3)
    depths = torch.linspace(2.0, 2.0 + 2e-6, n)  # 8 float steps from 2.0, where a rounded step is 8,192 of them
    ids = torch.arange(n - 1, -1, -1)  # farthest first
    units = torch.randint(0, 3, (n,), generator=g, dtype=torch.int32)
    bits = kernels.depth_bits(40000)  # 15 bits of depth, 13 shifted away
    keys = (units << bits) | kernels.depth_keys(depths, bits)[ids]
    assert keys.unique().numel() == 3
    entries = pack_entries(ids, torch.ones(n, dtype=torch.int64))
    sk, se = kernels.sort_pairs(keys.to(device), entries.to(device), depths=depths.to(device))
    assert exact_order_holds(sk, se, depths.to(device), bits)
    unsettled = entries[torch.sort(keys, stable=True).indices]
    assert not exact_order_holds(sk, unsettled.to(device), depths.to(device), bits)


def test_rounded_depths_are_monotone_and_fill_their_bits():
    d = torch.tensor([1e-4, 2.0**-8, 0.01, 0.01 + 1e-9, 1.0, 1.0 + 1e-7, 1e3, 2.0**24, 1e30, float("inf")])
    for bits in (14, 19, 21, 26):
        q = kernels.depth_keys(d, bits)
        assert q.dtype == torch.int32 and (q[1:] >= q[:-1]).all(), bits
        assert int(q[0]) == 0 and int(q[-1]) == (1 << bits) - 1 and int(q[-3]) == (1 << bits) - 1, bits
        assert int(q[4]) < int(q[6]) < int(q[7]), "1, 1e3 and 2^24 apart"
    # every macro-tile id and the sentinel's fit: the largest real key is below the sentinel
    for n_macros in (1, 3, 1020, 1024, 4080, 65536):
        bits = kernels.depth_bits(n_macros)
        assert ((n_macros - 1) << bits) | ((1 << bits) - 1) < kernels.sentinel_key(torch.int32)
        assert kernels.sentinel_key(torch.int32) >> bits >= n_macros


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


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_tile_pairs_sorted_without_the_gather_give_the_permutation(dtype, device):
    """gather=False (the ids left to `tile_ranges`): the stable sort's permutation, the twin's, into `out`'s
    permutation buffer; the sorted-entries buffer untouched."""
    keys, ids = random_keys(20, 5000, device, dtype)
    n = keys.numel()
    out = (torch.empty(n, dtype=dtype, device=device), torch.empty(n, dtype=torch.int64, device=device),
           torch.full((n,), -7, dtype=torch.int32, device=device))  # fmt: skip
    sk, perm = kernels.sort_pairs(keys, ids, out=out, gather=False)
    wk, wperm = ref.sort_pairs(keys, ids, gather=False)
    assert perm.data_ptr() == out[1].data_ptr() and torch.equal(sk, wk) and torch.equal(perm, wperm)
    assert torch.equal(ids[perm], ref.sort_pairs(keys, ids)[1]) and (out[2] == -7).all()
    sk2, perm2 = kernels.sort_pairs(keys, ids, gather=False)  # without `out`: torch.sort's own tensors
    assert torch.equal(sk2, wk) and torch.equal(perm2, wperm)
