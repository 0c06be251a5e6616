"""Rules of renderer/output.py and renderer/params.py that a mutation audit found no test checked: a frame's
statistics as `fill_stats` resolves them, how `ran_label` names a frame, the image sizes `check_image_size` lets
through, and the layout of a slot's parameter buffer (`FrameParams.fill`). Expected values come from the docstrings
and comments, worked out by hand."""

import numpy as np
import pytest
import torch

from renderer import Camera, RenderSettings
from renderer.output import MAX_IMAGE_SIDE, RenderStats, check_image_size, fill_stats
from renderer.params import WIDTH, FrameParams


def _stats(**kw) -> RenderStats:
    return RenderStats(n_gaussians=10, n_visible=7, n_pairs=20, max_tile_pairs=-1, **kw)


def test_ran_label_adds_rebin_only_to_a_frame_binned_again():
    assert _stats(ran="replay").ran_label() == "replay"
    assert _stats(ran="eager", rebinned=True).ran_label() == "eager+rebin"


class _Timer:
    """A GPU timer whose frame has not finished: it answers only when told to wait."""

    def __init__(self):
        self.waited = False

    def elapsed_ms(self, *, wait: bool = False):
        self.waited = wait
        return {"project": 1.5, "total": 2.0} if wait else None


def test_fill_stats_takes_the_longest_tile_list_and_waits_for_the_stage_times():
    """max_tile_pairs is the longest tile list, not the pairs in all; the stage times are read once the frame has
    finished (`fill_stats` synchronises), never left empty because the GPU had not finished yet."""
    timer = _Timer()
    stats = fill_stats(_stats(), torch.tensor([[1, 5, 0], [3, 0, 2]], dtype=torch.int32), timer)
    assert stats.max_tile_pairs == 5 and timer.waited and stats.stage_ms == {"project": 1.5, "total": 2.0}


def test_image_sides_up_to_8192_pass_and_one_more_on_either_side_is_refused():
    assert MAX_IMAGE_SIDE == 8192
    check_image_size(8192, 8192)
    check_image_size(1, 1)
    for w, h in ((8193, 8), (8, 8193)):
        with pytest.raises(ValueError, match="at most 8192"):
            check_image_size(w, h)
    for w, h in ((32.0, 24), (32, 24.0), (0, 24), (32, 0), ("32", 24)):
        with pytest.raises(ValueError, match="positive integers"):
            check_image_size(w, h)


def test_a_slot_holds_its_own_camera_background_and_tau():
    """[24] camera (the viewmat row-major, fx fy cx cy, the centre, a pad), [3] background, [1] tau, in the slot
    filled and no other; the tau min(adagscale_tau, budget x pixels / visible) kept for the slot's frame only with
    AdaGScale on."""
    pose = np.eye(4)
    pose[:3, 3] = (1.0, -2.0, 4.0)  # no rotation: the viewmat's translation is minus the centre
    cam = Camera(32, 24, fx=30.0, fy=31.0, cx=16.0, cy=12.5, T_world_camera=pose)
    params = FrameParams(torch.device("cpu"), slots=2)
    for host in params.host:
        host.fill_(-7.0)
    s = RenderSettings(adagscale=True, adagscale_tau=0.1, adagscale_budget=0.5, background=(0.2, 0.3, 0.4))
    params.fill(cam, s, slot=1, last_visible=32 * 24 * 10)  # 10 per pixel: tau 0.5 / 10
    viewmat = [1, 0, 0, -1, 0, 1, 0, 2, 0, 0, 1, -4, 0, 0, 0, 1]
    want = [*viewmat, 30, 31, 16, 12.5, 1, -2, 4, 0, 0.2, 0.3, 0.4, 0.05]
    assert len(want) == WIDTH
    np.testing.assert_allclose(params.host[1].numpy(), want, rtol=1e-6)
    assert params.tau[1] == pytest.approx(0.05) and params.tau[0] is None
    assert torch.all(params.host[0] == -7.0), "slot 0 was not filled"
    params.to_device(1)
    assert torch.equal(params.on_device[1], params.host[1])
    params.fill(cam, RenderSettings(), slot=0, last_visible=1)
    assert params.tau[0] is None and params.tau[1] == pytest.approx(0.05)
