"""tools/metrics.py: PSNR and the nearest-rank percentile, on hand cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tools.metrics import percentile, psnr


def test_psnr_by_hand():
    a = torch.zeros(4, 4, 3)
    assert psnr(a, a + 0.1) == pytest.approx(20.0)  # MSE 0.01 of peak 1
    assert psnr(a, a) == math.inf
    black, grey = np.zeros((2, 2, 3), np.uint8), np.full((2, 2, 3), 51, np.uint8)
    assert psnr(black, grey, peak=255) == pytest.approx(20 * math.log10(255 / 51))  # uint8, no wrap-around


def test_percentile_is_nearest_rank():
    assert percentile(range(1, 11), 90) == 9  # the 9th of 10
    assert percentile([5.0, 1.0, 3.0], 90) == 5.0  # unsorted input; ceil(2.7) = 3rd
    assert percentile([7.0], 90) == 7.0 and percentile([1, 2], 0) == 1
    assert math.isnan(percentile([], 90))
