"""`warpsplat view` without a display, without GL or without the viewer's packages: one line, exit code 2.

An unreachable display is tested in a fresh process (tests/reliability/test_environment.py): within one
process pyglet opens every window on the display it already has, so once any test has opened a window, an
in-process `view` with a bad DISPLAY would open a window there and run its event loop forever."""

from __future__ import annotations

import sys

import pytest

from tools.cli import main

pytestmark = pytest.mark.gl


def run_view(capsys, *argv: str) -> tuple[int, str]:
    code = main(["view", *argv])
    err = capsys.readouterr().err
    return code, err


def test_no_display(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    code, err = run_view(capsys)
    assert code == 2
    assert err.startswith("warpsplat view: error: no display (DISPLAY is not set)") and err.count("\n") == 1


@pytest.mark.parametrize("module, package", [("imgui_bundle", "imgui-bundle"), ("pyglet", "pyglet")])
def test_missing_packages(monkeypatch, capsys, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    code, err = run_view(capsys)
    assert code == 2
    assert err == f"warpsplat view: error: the viewer needs {package}: pip install 'warpsplat[viewer]'\n"


def test_no_gl_context(monkeypatch, capsys, x_display):
    import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

    # isort: split
    import pyglet

    import app.window

    def no_config(*args, **kwargs):
        raise pyglet.window.NoSuchConfigException("no matching GL configuration")

    monkeypatch.setattr(app.window, "ViewerWindow", no_config)
    code, err = run_view(capsys)
    assert code == 2
    assert err == "warpsplat view: error: no usable OpenGL 3.3 context: no matching GL configuration\n"


def test_bad_arguments_before_anything_opens(capsys, tmp_path):
    code, err = run_view(capsys, "--render-scale", "2")
    assert code == 2 and "--render-scale 2.0: must be in (0, 1]" in err
    code, err = run_view(capsys, "--out-dir", str(tmp_path / "missing"))
    assert code == 2 and "no such folder" in err
    code, err = run_view(capsys, str(tmp_path / "missing.ply"))
    assert code == 2 and "no such file" in err
    for flag in ("--cameras", "--keyframes", "--dataparser-transforms"):  # before the display is looked for
        code, err = run_view(capsys, flag, str(tmp_path / "gone.json"))
        assert code == 2 and err == f"warpsplat view: error: {flag} {tmp_path / 'gone.json'}: no such file\n", err


def test_cameras_are_checked_before_a_window_opens_and_reach_it(monkeypatch, capsys, tmp_path, x_display):
    """--cameras: a bad file is a one-line error with no window made; a COLMAP model reaches the window as the
    scene's training cameras, which the controller loads (tests/app/test_camera_controller.py)."""
    import zipfile

    import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

    # isort: split
    import app.window
    from tests.conftest import bundled

    made = []

    class Refused(Exception):
        pass

    def window(scene, **kwargs):
        made.append(scene)
        raise Refused

    monkeypatch.setattr(app.window, "ViewerWindow", window)
    code, err = run_view(capsys, "--cameras", str(tmp_path))
    assert code == 2 and not made and err.count("\n") == 1
    assert err.startswith(f"warpsplat view: error: --cameras {tmp_path}: no COLMAP model")
    code, err = run_view(capsys, "--keyframes", str(tmp_path / "none.json"))
    assert code == 2 and not made and err.startswith("warpsplat view: error: --keyframes ") and "no such" in err
    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    with pytest.raises(Refused):
        run_view(capsys, "--cameras", str(tmp_path / "model" / "txt"))
    assert made[0].extras["cameras"] == str(tmp_path / "model" / "txt")


def test_dataparser_transforms_are_checked_and_move_the_training_cameras(monkeypatch, capsys, tmp_path, x_display):
    """--dataparser-transforms: a bad file is a one-line error with no window made; a good one reaches the window
    with the scene, and the training cameras the window loads are taken into its world (scaled by its scale)."""
    import json
    import zipfile

    import numpy as np

    import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

    # isort: split
    import app.window
    from tests.conftest import bundled

    made = []

    class Refused(Exception):
        pass

    def window(scene, **kwargs):
        made.append(scene)
        raise Refused

    monkeypatch.setattr(app.window, "ViewerWindow", window)
    (tmp_path / "bad.json").write_text('{"transform": [[1, 0, 0, 0]], "scale": 1}')
    code, err = run_view(capsys, "--dataparser-transforms", str(tmp_path / "bad.json"))
    assert code == 2 and not made and err.count("\n") == 1
    assert err.startswith(f"warpsplat view: error: --dataparser-transforms {tmp_path / 'bad.json'}: transform")
    good = tmp_path / "dataparser_transforms.json"
    good.write_text(json.dumps({"transform": [[1, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, 0]], "scale": 0.25}))
    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    with pytest.raises(Refused):
        run_view(capsys, "--cameras", str(tmp_path / "model" / "txt"), "--dataparser-transforms", str(good))
    scene = made[0]
    assert scene.extras["dataparser_transforms"] == str(good)
    moved = app.window.load_training_cameras(scene, 64, 48)
    scene.extras = {"cameras": scene.extras["cameras"]}
    plain = app.window.load_training_cameras(scene, 64, 48)
    turn = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])  # ns-process-data's turn of COLMAP's world
    for a, b in zip(plain, moved, strict=True):
        np.testing.assert_allclose(b.position, 0.25 * (turn @ a.position + [0.5, 0, 0]), atol=1e-9)


def test_view_runs_the_event_loop_and_esc_quits(capsys, x_display):
    """The real command: window, event loop, a rendered frame, Esc, clean shutdown, exit code 0."""
    import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

    # isort: split
    import pyglet
    from pyglet.window import key

    from app.window import ViewerWindow

    before = set(pyglet.app.windows)
    seen = {}

    def press_esc(dt):
        window = next(w for w in pyglet.app.windows if w not in before and isinstance(w, ViewerWindow))
        if window._last_frame is None and dt < 60:  # wait for the first frame
            pyglet.clock.schedule_once(lambda dt2: press_esc(dt + dt2), 0.2)
            return
        seen["frame"] = window._last_frame is not None
        window.dispatch_event("on_key_press", key.ESCAPE, 0)
        seen["closed"] = window._closed
        pyglet.clock.schedule_once(lambda dt: pyglet.app.exit(), 0.5)  # other tests' windows may be open

    pyglet.clock.schedule_once(press_esc, 0.5)
    code, err = run_view(capsys, "--size", "48x32", "--render-scale", "0.5")
    assert code == 0, err
    assert seen == {"frame": True, "closed": True}
