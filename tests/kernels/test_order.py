"""Stage 2, order: the depth order of the Gaussians and their pair offsets (torch's sort) against the torch twin
and against Python's own sort of (depth, index), with either form's pair counts (kernels/bin.py)."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.kernels.synthetic import FORMS, projected


def tied_projection(device, form):
    """(depths, tiles_touched, pair counts) of 2000 Gaussians, a quarter of the visible ones at one depth; the
    pair counts are `form`'s: tiles_touched or macros_touched."""
    _, depths, tt, macros, _ = projected(2000, 128, 96, device, seed=6, grow=1.0)
    depths[torch.nonzero(tt > 0).flatten()[::4]] = 3.0  # ties
    return depths, tt, tt if form == "tiles" else macros


def expected(depths, tiles_touched, pair_counts):
    """Written from the rule, with Python values: the visible Gaussians by (depth, index), the running sum of
    their pair counts, and the three totals."""
    d, tt, pc = depths.tolist(), tiles_touched.tolist(), pair_counts.tolist()
    order = sorted((g for g in range(len(d)) if tt[g] > 0), key=lambda g: (d[g], g))
    offsets, total = [], 0
    for g in order:
        total += pc[g]
        offsets.append(total)
    return order, offsets, [len(order), sum(tt), total]


@pytest.mark.parametrize("form", FORMS)
def test_depth_order_matches_reference(form, device):
    """The visible Gaussians sorted by depth (ties by index) ahead of the culled ones, their pair counts' running
    sum and the totals (visible, tile pairs, pairs: the tile pairs again, or the macro-tile pairs, fewer),
    against the twin's sort of unique (depth, index) keys and against Python's sort."""
    depths, tt, counts = tied_projection(device, form)
    want = ref.depth_order(depths, tt, counts, out=ref.order_outputs(2000, device))
    got = kernels.depth_order(depths, tt, counts, out=kernels.order_outputs(2000 + 9, device))
    for name, w, g in zip(("order", "offsets", "totals"), want, got):
        assert torch.equal(w.long(), g.long()), name
    order, offsets, totals = expected(depths, tt, counts)
    n_visible = totals[0]
    assert got[2].tolist() == totals and 500 < n_visible < 2000
    assert totals[2] == totals[1] if form == "tiles" else totals[2] < totals[1]
    assert got[0][:n_visible].tolist() == order and got[1][:n_visible].tolist() == offsets
    assert (tt[got[0][n_visible:]] == 0).all(), "the culled ones after the visible ones"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("compact", [True, False], ids=["compact", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_depth_order_counted(impl, compact, form, device):
    """The counted route: the visible Gaussians alone, with the three counts as host ints."""
    depths, tt, counts = tied_projection(device, form)
    host = torch.empty(3, dtype=torch.int64).pin_memory() if depths.is_cuda else None
    order, offsets, n_visible, n_tile_pairs, n_pairs = impl.depth_order_counted(
        depths, tt, counts, compact=compact, host=host
    )
    want_order, want_offsets, totals = expected(depths, tt, counts)
    assert [n_visible, n_tile_pairs, n_pairs] == totals
    assert order.tolist() == want_order and offsets.tolist() == want_offsets
    empty = impl.depth_order_counted(depths[:0], tt[:0], counts[:0], compact=compact, host=host)
    assert empty[0].numel() == 0 and empty[1].numel() == 0 and list(empty[2:]) == [0, 0, 0]


@pytest.mark.parametrize("form", FORMS)
def test_count_totals_over_several_programs(form, device, monkeypatch):
    """The counted route's counts, one kernel of atomics: over programs of 256 Gaussians (2000 make eight, the
    last one part full), the same three totals as Python's count."""
    import kernels.order as order

    monkeypatch.setattr(order, "COUNT_BLOCK", 256)
    depths, tt, counts = tied_projection(device, form)
    assert order.count_totals(depths, tt, counts).tolist() == expected(depths, tt, counts)[2]
    assert order.count_totals(depths[:0], tt[:0], counts[:0]).tolist() == [0, 0, 0]
