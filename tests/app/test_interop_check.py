"""The interop check's verdict (tests/app/gpu_interop_check.py `present_costs`), on fabricated timings: it must be
able to fail, on a cost over the budget and on a negative cost (the phases not timed alike), both ways."""

from __future__ import annotations

from tests.app.gpu_interop_check import BUDGET_MS, RENDER_ONLY, present_costs

VIEWER = "interop texture + present (the viewer's)"
BUDGET = {VIEWER: BUDGET_MS}


def test_a_cost_within_the_budget_passes_and_is_the_difference():
    costs, failures = present_costs({RENDER_ONLY: (0.89, 1.10), VIEWER: (1.21, 1.45)}, BUDGET)
    assert failures == []
    assert abs(costs[VIEWER][0] - 0.32) < 1e-9 and abs(costs[VIEWER][1] - 0.35) < 1e-9


def test_the_cold_render_only_phase_that_passed_before_now_fails():
    """The old check's numbers: render only timed cold (4.48 ms a frame) made the present cost -2.84 ms."""
    costs, failures = present_costs({RENDER_ONLY: (4.48, 0.89), VIEWER: (1.64, 1.647)}, BUDGET)
    assert abs(costs[VIEWER][0] + 2.84) < 1e-9
    assert len(failures) == 2  # negative back to back, +0.757 waited for
    assert "negative cost -2.840 ms" in failures[0] and "back to back" in failures[0]
    assert "+0.757 ms" in failures[1] and "over the 0.5 ms budget" in failures[1]


def test_over_budget_fails_only_the_route_with_a_budget():
    rows = {RENDER_ONLY: (1.0, 1.0), VIEWER: (1.6, 1.2), "host upload + present": (6.0, 7.0)}
    _, failures = present_costs(rows, BUDGET)
    assert failures == [f"{VIEWER}: +0.600 ms a frame (back to back), over the 0.5 ms budget"]


def test_a_negative_cost_fails_whatever_the_route():
    _, failures = present_costs({RENDER_ONLY: (1.0, 1.0), "host upload + present": (5.0, 0.99)}, BUDGET)
    assert len(failures) == 1 and "negative cost -0.010 ms" in failures[0] and "waited for" in failures[0]
