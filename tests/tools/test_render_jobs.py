"""tools/render_jobs.py's measures and names, by hand: frame file names, the depth video's grey scale and range, and
the closing summary's numbers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from tools.render_jobs import FrameTimes, depth_grey, frame_name, path_depth_range, summary


def test_frame_names_are_zero_padded_so_they_sort_in_frame_order():
    assert frame_name(7) == "frame_00007.png" and frame_name(12345) == "frame_12345.png"
    order = [3, 10, 99, 100, 2048]
    assert sorted(frame_name(i) for i in reversed(order)) == [frame_name(i) for i in order]


def test_path_depth_range_spans_the_box_from_the_nearest_and_farthest_camera():
    """A robust box (0,0,0)-(2,2,1): centre (1,1,0.5), half-diagonal 1.5. Cameras 4 and 10 from the centre see it
    from 2.5 to 11.5; a camera inside it clamps the near end at 0."""
    box = (torch.tensor([0.0, 0.0, 0.0]), torch.tensor([2.0, 2.0, 1.0]))
    scene = SimpleNamespace(robust_bounds=lambda: box)
    cams = [SimpleNamespace(position=np.array(p)) for p in ([1.0, 1.0, 10.5], [1.0, 1.0, 4.5])]
    assert np.allclose(path_depth_range(scene, cams), (2.5, 11.5))
    cams.append(SimpleNamespace(position=np.array([1.0, 1.0, 1.0])))  # 0.5 from the centre
    assert np.allclose(path_depth_range(scene, cams), (0.0, 11.5))


def test_depth_grey_runs_from_255_at_near_to_1_at_far_and_0_uncovered():
    depth = torch.tensor([[1.0, 3.0, 2.0, 0.5, 9.0, 2.0]])
    alpha = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]])
    assert depth_grey(depth, alpha, (1.0, 3.0)).tolist() == [[255, 1, 128, 255, 1, 0]]  # 2: 1 + 254 / 2, rounded


def test_summary_reports_median_p90_max_and_seconds():
    """Ten frames rendering 100..900 ms and one 5500 ms (its project stage a tenth of that) and writing 10..100 ms,
    in 4 s: per stage the median (550, not the mean 1000), nearest-rank p90 and max, the totals in seconds and the
    end-to-end rate."""
    totals = [5500.0] + [100.0 * k for k in range(9, 0, -1)]
    times = FrameTimes(stage_ms=[{"project": t / 10, "total": t} for t in totals],
                       write_ms=[10.0 * k for k in range(1, 11)], wait_s=0.0)  # fmt: skip
    lines = summary(times, 10, 4.0, 5.0, 0.0, 1).splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows == {"project": ["55.00", "90.00", "550.00"], "render": ["550.00", "900.00", "5500.00"],
                    "encode/write": ["55.00", "90.00", "100.00"]}  # fmt: skip
    assert lines[-1].startswith("10 frames in 4.00 s = 2.50 frames/s end to end (5.00 s with scene load")
    assert "rendering 10.00 s, encoding/writing 0.55 s" in lines[-1]
