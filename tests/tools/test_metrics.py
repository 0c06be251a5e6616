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


def test_path_psnr_is_the_psnr_of_the_mean_squared_error():
    """Frames at 20 and 40 dB have MSEs 0.01 and 0.0001: the path's is their mean, 0.00505, about 22.97 dB (not the
    30 dB mean of the dB values); an exact frame counts as MSE 0."""
    from tools.metrics import path_psnr

    assert path_psnr([20.0, 40.0]) == pytest.approx(-10 * math.log10(0.00505))
    assert path_psnr([math.inf, 30.0]) == pytest.approx(-10 * math.log10(0.0005))
    assert path_psnr([math.inf, math.inf]) == math.inf


def test_ssim_on_images_worked_by_hand():
    """SSIM (Wang et al. 2004: 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03) on images whose terms are known
    without convolving: flat images leave the luminance term alone; an 11x11 image (one window, fully valid) that
    is 0.5 -/+ d left/right of its middle column, against its negative, has both means 0.5, both variances
    v = d^2 (1 - g_c) (g_c: the window's middle column weight) and covariance -v."""
    from tools.metrics import ssim

    c1, c2 = 0.01**2, 0.03**2
    flat_a, flat_b = torch.full((16, 16, 3), 0.2), torch.full((16, 16, 3), 0.6)
    assert ssim(flat_a, flat_a) == pytest.approx(1.0)
    assert ssim(flat_a, flat_b) == pytest.approx((2 * 0.2 * 0.6 + c1) / (0.2**2 + 0.6**2 + c1))
    d = 0.1
    side = torch.sign(torch.arange(11, dtype=torch.float64) - 5)  # -1 .. 0 .. +1 across the columns
    x = (0.5 + d * side)[None, :, None].expand(11, 11, 3)
    g_c = 1 / sum(math.exp(-((k - 5) ** 2) / (2 * 1.5**2)) for k in range(11))
    v = d * d * (1 - g_c)
    assert ssim(x, 1 - x) == pytest.approx((c2 - 2 * v) / (c2 + 2 * v), rel=1e-9)
    assert ssim(x, x) == pytest.approx(1.0)
