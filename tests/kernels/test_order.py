"""Stage 2, order: the depth order of the Gaussians and their pair offsets (torch's sort) against the torch twin
and against Python's own sort of (depth, index)."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.kernels.synthetic import projected


def tied_projection(device):
    """(depths, tiles_touched, macros_touched) of 2000 Gaussians, a quarter of the visible ones at one depth."""
    _, depths, tt, macros, _ = projected(2000, 128, 96, device, seed=6, grow=1.0)
    depths[torch.nonzero(tt > 0).flatten()[::4]] = 3.0  # ties
    return depths, tt, macros


def expected(depths, tiles_touched, macros_touched):
    """Written from the rule, with Python values: the visible Gaussians by (depth, index), the running sum of
    their macro-tile counts, and the three totals."""
    d, tt, mt = depths.tolist(), tiles_touched.tolist(), macros_touched.tolist()
    order = sorted((g for g in range(len(d)) if tt[g] > 0), key=lambda g: (d[g], g))
    offsets, total = [], 0
    for g in order:
        total += mt[g]
        offsets.append(total)
    return order, offsets, [len(order), sum(tt), total]


def test_depth_order_matches_reference(device):
    """The visible Gaussians sorted by depth (ties by index) ahead of the culled ones, their macro-tile counts'
    running sum and the totals (visible, tile pairs, macro-tile pairs), against the twin's sort of unique
    (depth, index) keys and against Python's sort."""
    depths, tt, macros = tied_projection(device)
    want = ref.depth_order(depths, tt, macros, out=ref.order_outputs(2000, device))
    got = kernels.depth_order(depths, tt, macros, out=kernels.order_outputs(2000 + 9, device))
    for name, w, g in zip(("order", "offsets", "totals"), want, got):
        assert torch.equal(w.long(), g.long()), name
    order, offsets, totals = expected(depths, tt, macros)
    n_visible = totals[0]
    assert got[2].tolist() == totals and 500 < n_visible < 2000 and totals[2] < totals[1]
    assert got[0][:n_visible].tolist() == order and got[1][:n_visible].tolist() == offsets
    assert (tt[got[0][n_visible:]] == 0).all(), "the culled ones after the visible ones"


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_depth_order_counted(impl, compact, device):
    """The counted route: the visible Gaussians alone, with the three counts as host ints."""
    depths, tt, macros = tied_projection(device)
    host = torch.empty(3, dtype=torch.int64).pin_memory() if depths.is_cuda else None
    order, offsets, n_visible, n_tile_pairs, n_macro_pairs = impl.depth_order_counted(
        depths, tt, macros, compact=compact, host=host
    )
    want_order, want_offsets, totals = expected(depths, tt, macros)
    assert [n_visible, n_tile_pairs, n_macro_pairs] == totals
    assert order.tolist() == want_order and offsets.tolist() == want_offsets
    empty = impl.depth_order_counted(depths[:0], tt[:0], macros[:0], compact=compact, host=host)
    assert empty[0].numel() == 0 and empty[1].numel() == 0 and list(empty[2:]) == [0, 0, 0]
