"""Display frames without a window: the no-sync statistics path the viewer uses on the GPU."""

import torch

from app.frames import FrameRequest, render_frame
from renderer import Renderer, RenderSettings, default_camera
from scenes import bundled_scene_path, load_scene


def test_unsynced_frame_reports_visible_and_longest_list_a_frame_later():
    """With sync_stats=False (the GPU frame loop) the longest tile list comes back through a host copy read later,
    and the visible count with the frame's statistics (its own counts); both equal the synchronous statistics of
    the same frame."""
    scene = load_scene(bundled_scene_path())
    scene = scene.subset(torch.arange(0, len(scene), 16))
    r = Renderer(scene, backend="torch")
    cam = default_camera(scene, 48, 32)
    want = r.render(cam).stats
    frame = render_frame(r, FrameRequest(cam, RenderSettings(), "rgb", 0), sync_stats=False, copy=True)
    assert frame.host_counts_ready()
    assert frame.host_counts.shape == (1,) and int(frame.host_counts[0]) == want.max_tile_pairs > 0
    assert frame.stats.n_visible == want.n_visible > 0


def test_a_jump_request_restarts_temporal_reuse(monkeypatch):
    """Snaps and resets reach the renderer as `jump`: the next frame rebuilds the temporal window, whatever the
    motion limits would have allowed; a dropped jump request passes its flag on. The measured choice is taken out
    of the way (every frame that asks for a window gets one): this is about the window, not whether it pays."""
    from app.frames import supersede
    from renderer.window_choice import WindowChoice

    monkeypatch.setattr(WindowChoice, "wants_window", lambda self, *args: True)

    scene = load_scene(bundled_scene_path())
    scene = scene.subset(torch.arange(0, len(scene), 16))
    r = Renderer(scene, backend="torch")
    cam = default_camera(scene, 48, 32)
    s = RenderSettings(temporal_window=4)
    render_frame(r, FrameRequest(cam, s, "rgb", 0), sync_stats=True, copy=True)
    render_frame(r, FrameRequest(cam, s, "rgb", 1), sync_stats=True, copy=True)
    assert r.temporal.stats.window_builds == 1
    render_frame(r, FrameRequest(cam, s, "rgb", 2, jump=True), sync_stats=True, copy=True)
    assert r.temporal.stats.window_builds == 2

    newer = supersede(FrameRequest(cam, s, "rgb", 3, jump=True), FrameRequest(cam, s, "rgb", 4))
    assert newer.jump and newer.serial == 4
    assert not supersede(FrameRequest(cam, s, "rgb", 5), FrameRequest(cam, s, "rgb", 6)).jump


def test_each_display_mode_renders_the_outputs_it_reads(scene_path):
    """The colour view and the heat map take the 8-bit image alone (4 bytes a pixel, where the three outputs take
    20), the coverage and depth views the float coverage: each mode's image is what it is with every output
    written, and the colour view's renderer holds no float image."""
    import pytest

    from app.frames import MODE_OUTPUTS

    scene = load_scene(scene_path("playbot_crop.ply"))
    cam = default_camera(scene, 40, 24)
    assert MODE_OUTPUTS == {"rgb": "rgba8", "heatmap": "rgba8", "alpha": "float", "depth": "float"}
    for mode in MODE_OUTPUTS:
        r = Renderer(scene, backend="torch")
        frame = render_frame(r, FrameRequest(cam, RenderSettings(), mode, 1), sync_stats=True, copy=True)
        assert ("rgb" in r.ws.names()) == (MODE_OUTPUTS[mode] == "float"), (mode, r.ws.names())
        with pytest.MonkeyPatch.context() as mp:  # the same mode with every output written
            mp.setitem(MODE_OUTPUTS, mode, "both")
            full = Renderer(scene, backend="torch")
            want = render_frame(full, FrameRequest(cam, RenderSettings(), mode, 1), sync_stats=True, copy=True)
            assert "rgb" in full.ws.names() and "rgba8" in full.ws.names()
        assert frame.rgba8.shape == (24, 40, 4) and torch.equal(frame.rgba8, want.rgba8), mode


def test_depth_view_masks_faintly_covered_pixels():
    """A floater of alpha 10/255 in front of nothing shows black, not as a solid disc of its depth; black is
    kept for that (the farthest depth is the palette's second colour)."""
    from app.frames import DEPTH_MIN_COVERAGE, HEAT_COLORS, depth_image

    depth = torch.tensor([[1.0, 2.0, 3.0, 2.0]])
    alpha = torch.tensor([[1.0, 10 / 255, DEPTH_MIN_COVERAGE, 0.0]])
    rgb = depth_image(depth, alpha, (1.0, 3.0))[0, :, :3].tolist()
    assert rgb[1] == rgb[3] == [0, 0, 0]
    assert rgb[0] == list(HEAT_COLORS[-1]) and rgb[2] == list(HEAT_COLORS[1])  # near; far, half covered


def test_exiting_with_a_frame_in_flight_waits_for_it():
    """The window closes without waiting for a CPU frame in flight, but the process exits cleanly: Python stops
    a daemon thread that is inside a torch op at exit by unwinding through C++, which aborted the process
    ("terminate called without an active exception", exit code 134) when the viewer quit mid-frame."""
    import subprocess
    import sys

    from tests.conftest import REPO

    # The frame is the real one followed by 3 s of torch ops, so the thread is inside a torch op when the
    # producer closes on any machine: a real frame alone took 1-2 s here but under 0.7 s on a faster one, and the
    # test then raced the close.
    code = (
        "import time, torch\n"
        "import app.frames as frames\n"
        "from app.frames import FrameProducer, FrameRequest\n"
        "from renderer import Renderer, RenderSettings, default_camera\n"
        "from scenes import bundled_scene_path, load_scene\n"
        "real = frames.render_frame\n"
        "def slow_frame(*args, **kwargs):\n"
        "    frame = real(*args, **kwargs)\n"
        "    a, end = torch.rand(256, 256), time.monotonic() + 3.0\n"
        "    while time.monotonic() < end:\n"
        "        a = torch.tanh(a @ a)\n"
        "    return frame\n"
        "frames.render_frame = slow_frame\n"
        "scene = load_scene(bundled_scene_path())\n"
        "producer = FrameProducer(Renderer(scene, backend='torch'), threaded=True)\n"
        "producer.request(FrameRequest(default_camera(scene, 64, 48), RenderSettings(), 'rgb', 1))\n"
        "time.sleep(0.2)\n"
        "assert producer.busy\n"
        "t = time.monotonic()\n"
        "producer.close()  # returns after its 0.5 s join timeout, with the frame still rendering\n"
        "print('closed', producer._thread.is_alive(), time.monotonic() - t < 1.5)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "terminate called" not in r.stderr, (r.returncode, r.stderr[-2000:])
    assert r.stdout == "closed True True\n", "close() should return promptly while the frame is still rendering"
