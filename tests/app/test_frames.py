"""Display frames without a window: the no-sync statistics path the viewer uses on the GPU."""

import torch

from app.frames import FrameRequest, render_frame
from renderer import Renderer, RenderSettings, default_camera
from scenes import bundled_scene_path, load_scene


def test_unsynced_frame_reports_visible_and_longest_list_a_frame_later():
    """With sync_stats=False (the GPU frame loop) the visible count and the longest tile list come back through
    a host copy read later; they equal the synchronous statistics of the same frame."""
    scene = load_scene(bundled_scene_path())
    scene = scene.subset(torch.arange(0, len(scene), 16))
    r = Renderer(scene, backend="torch")
    cam = default_camera(scene, 48, 32)
    want = r.render(cam).stats
    frame = render_frame(r, FrameRequest(cam, RenderSettings(), "rgb", 0), sync_stats=False, copy=True)
    assert frame.max_tile_pairs_ready()
    assert int(frame.max_tile_pairs[0]) == want.max_tile_pairs
    assert int(frame.max_tile_pairs[1]) == want.n_visible > 0
