"""The interop check's verdicts (tests/app/gpu_interop_check.py `present_costs`, `flight_verdict`), on fabricated
timings: they must be able to fail, on a cost over the budget and on a negative cost (the phases not timed alike),
both ways, and on a viewer loop's stall or uneven second pass."""

from __future__ import annotations

from tests.app.gpu_interop_check import BUDGET_MS, RENDER_ONLY, flight_verdict, present_costs

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


def test_a_smooth_viewer_loop_passes():
    second = [1.0] * 99 + [1.4]
    row, failures = flight_verdict([1.1] * 99 + [3.9], second)  # 3.9 <= 3 x 1.0 + 1
    assert failures == [] and row["median"] == 1.0 and row["first_max"] == 3.9
    assert abs(row["stall"] - 3.9 / 1.4) < 1e-9


def test_a_stall_in_the_first_pass_fails():
    """A 423 ms frame (a compile inside a flight) against a 0.78 ms median."""
    ran = ["replay"] * 50 + ["eager"] + ["replay"] * 49
    row, failures = flight_verdict([0.8] * 50 + [423.0] + [0.8] * 49, [0.78] * 100, ran)
    assert len(failures) == 1 and "first pass's worst frame 423.000 ms (frame 50, ran eager)" in failures[0]
    assert row["first_worst"] == 50 and row["first_worst_ran"] == "eager"


def test_an_uneven_second_pass_fails():
    """Growth frames of 3 ms in every pass (within the first pass's bound, 3 x 0.8 + 1 ms): the second pass's p99
    over 1.5x its median."""
    second = [0.8] * 95 + [3.0] * 5
    _, failures = flight_verdict(second, second)
    assert len(failures) == 1 and "second pass's p99 3.000 ms" in failures[0]


def test_an_uneven_second_pass_names_its_slowest_frames_and_how_they_ran():
    """The failure says which frames of the second pass were slow and how each ran (a rebin, a capture, or a
    replay, where the frame's content or the machine is the cause), slowest first."""
    second = [0.8] * 96 + [2.5, 3.0, 2.9, 2.0]
    ran_second = ["replay"] * 96 + ["replay+rebin", "capture", "replay", "eager"]
    row, failures = flight_verdict(second, second, ["replay"] * 100, ran_second)
    assert [i for i, _, _ in row["second_slowest"]] == [97, 98, 96, 99]
    assert len(failures) == 1 and failures[0].endswith(
        "its slowest frames: 97 3.000 ms (capture), 98 2.900 ms (replay), 96 2.500 ms (replay+rebin), "
        "99 2.000 ms (eager)"
    ), failures


def test_the_check_itself_runs_on_the_host_path():
    """The whole script, as the GPU machine runs it, on this machine's host path (a small size, few frames): it
    ran only on the GPU, where a call left behind by a change of `viewer_settings`' signature failed it before
    its viewer loop. Its verdicts are the functions above; here it must run to the end and say what it checked."""
    import subprocess
    import sys

    import pytest
    import torch

    from tests.conftest import REPO

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine runs the check itself (tests/gpu/run_on_gpu.sh)")
    done = subprocess.run([sys.executable, "tests/app/gpu_interop_check.py", "--frames", "2", "--size", "32x24"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "viewer loop, host upload + present" in done.stdout and "bit-exact texture and framebuffer" in done.stdout
    assert "GL floor on this machine: the handoff from cpu to GL" in done.stdout


def test_a_smooth_second_pass_after_a_first_pass_with_a_tail_passes():
    """The second pass's p99 is the second pass's own: a first pass whose slowest frames stay within its bound (3.0
    ms against 3 x 0.8 + 1) says nothing about the second pass's evenness."""
    row, failures = flight_verdict([0.8] * 95 + [3.0] * 5, [0.8] * 100)
    assert failures == [] and row["p99"] == 0.8 and row["first_p99"] == 3.0


def test_a_phase_times_each_frame_to_the_end_of_its_work():
    """`Phase.time_round` on a fake renderer whose work ends only at the sync (20 ms of it, as a GPU's frame ends
    after its launches return): both timings include it, so a phase that stopped its clock before the sync would
    time its launches alone."""
    import time
    from types import SimpleNamespace

    import torch

    from tests.app.gpu_interop_check import Phase

    stats = SimpleNamespace(ran_label=lambda: "eager")
    renderer = SimpleNamespace(device=torch.device("cpu"), render=lambda *a, **k: SimpleNamespace(stats=stats))
    phase = Phase(RENDER_ONLY, SimpleNamespace(finish=lambda: time.sleep(0.02)), renderer, None, None, None)
    phase.time_round([None, None])
    back_to_back, waited = phase.result()
    assert back_to_back >= 10.0 and waited >= 20.0, (back_to_back, waited)
