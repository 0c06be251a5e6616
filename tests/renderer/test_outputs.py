"""`RenderSettings.outputs`: the images a frame writes. The colour view and `warpsplat render` take the 8-bit image
alone (4 bytes a pixel in each frame in flight, where all three outputs take 20), the bench and the Python API the
float pair. Whatever a frame writes is what it would be beside the others, on both backends; what it does not write
is not allocated, and the memory model counts what is."""

import pytest
import torch

from renderer import Renderer, RenderSettings
from renderer.memory import PIXEL_BYTES, workspace_bytes
from renderer.paths import orbit_path
from scenes import load_scene

SIZE = (40, 24)


@pytest.fixture
def scene(scene_path):
    scene = load_scene(scene_path("playbot_crop.ply"))
    return scene.subset(torch.arange(0, len(scene), 4))  # 1,024 real Gaussians: the interpreter is slow


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_each_output_is_what_it_is_beside_the_others(scene, device, backend):
    cams = orbit_path(scene, *SIZE, 3)[:2]
    frames = {}
    for outputs in ("both", "float", "rgba8"):
        r = Renderer(scene, device=device, backend=backend)
        s = RenderSettings(outputs=outputs, background=(0.2, 0.3, 0.4))
        frames[outputs] = [r.render(cam, s) for cam in cams]
        frames[outputs] = [(o.image, o.alpha, o.rgba8) for o in frames[outputs]]
        names = set(r.ws.names())
        assert ({"rgb", "alpha"} <= names) == (outputs != "rgba8") and ("rgba8" in names) == (outputs != "float")
    for k in range(len(cams)):
        rgb, alpha, rgba8 = frames["both"][k]
        assert rgb is not None and alpha is not None and rgba8 is not None
        f_rgb, f_alpha, f_rgba8 = frames["float"][k]
        assert f_rgba8 is None and torch.equal(f_rgb, rgb) and torch.equal(f_alpha, alpha)
        b_rgb, b_alpha, b_rgba8 = frames["rgba8"][k]
        assert b_rgb is None and b_alpha is None and torch.equal(b_rgba8, rgba8)
        assert 0 < float(alpha.mean()) < 1, "the frames show the scene: the comparison can fail"


def test_a_stream_of_8_bit_frames_holds_4_bytes_a_pixel_a_slot(scene, device, monkeypatch):
    """Frames in flight (two slots), the 8-bit image alone: the workspace holds what the memory model says, 16 bytes
    a pixel a slot less than with all three outputs, and every frame is the one-by-one frame's image."""
    import renderer.pipeline
    from renderer.launch import LaunchConfig

    monkeypatch.setattr(renderer.pipeline, "frames_in_flight", lambda device: True)
    # every frame bins per tile, as on a CPU: a GPU's first frame bins per macro-tile (`LaunchConfig.first`) and
    # leaves that form's buffers in its slot alone, which the model (`macro` None) counts in both
    monkeypatch.setattr(LaunchConfig, "first", staticmethod(lambda counted, cuda: LaunchConfig(macro=False)))
    cams = orbit_path(scene, *SIZE, 4)
    sizes = {}
    for outputs in ("both", "rgba8"):
        r = Renderer(scene, device=device, backend="torch")
        s = RenderSettings(outputs=outputs)
        want = [r.render(cam, s).rgba8.clone() for cam in cams]
        got = [out.rgba8.clone() for out in r.render_stream(cams, s)]
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
        lists, pairs = r.pair_capacity.size, r.macro_capacity.size
        assert r.ws.nbytes() == workspace_bytes(len(scene), lists, *SIZE, 8, slots=2, counted=False,
                                                pair_capacity=pairs, macro=False, outputs=outputs)  # fmt: skip
        sizes[outputs] = r.ws.nbytes()
    pixels = SIZE[0] * SIZE[1]
    assert PIXEL_BYTES["both"] - PIXEL_BYTES["rgba8"] == 16
    assert sizes["both"] - sizes["rgba8"] == 2 * 16 * pixels


def test_outputs_are_checked_in_one_line():
    with pytest.raises(ValueError, match="outputs 'jpeg': expected both, float, rgba8"):
        RenderSettings(outputs="jpeg").validate()
    with pytest.raises(ValueError, match="depth needs the float coverage"):
        RenderSettings(outputs="rgba8", depth=True).validate()
    RenderSettings(outputs="float", depth=True).validate()
