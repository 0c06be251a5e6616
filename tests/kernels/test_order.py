"""Stage 2, order: the depth order of the Gaussians and their pair offsets (Triton) against the torch twin."""

import torch

import kernels
import kernels.reference as ref
from tests.kernels.synthetic import projected


def test_depth_order_matches_reference(device):
    """The visible Gaussians sorted by depth (ties by index) ahead of the culled ones, their counts' running sum
    and the totals, against the twin's sort of unique (depth, index) keys."""
    width, height = 64, 48
    _, depths, tt, _ = projected(2000, width, height, device, seed=6)
    depths[torch.nonzero(tt > 0).flatten()[::4]] = 3.0  # ties
    want = ref.depth_order(depths, tt, out=ref.order_outputs(2000, device))
    got = kernels.depth_order(depths, tt, out=kernels.order_outputs(2000 + 9, device))
    for name, w, g in zip(("order", "offsets", "totals"), want, got):
        assert torch.equal(w.long(), g.long()), name
    n_visible = int((tt > 0).sum())
    assert got[2].tolist() == [n_visible, int(tt.sum())] and 500 < n_visible < 2000
    assert (tt[got[0][:n_visible]] > 0).all() and (tt[got[0][n_visible:]] == 0).all(), "visible ones first"
