"""The `warpsplat` command: render/info on the bundled and real scenes, and one-line errors (exit 2)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from renderer import Renderer, default_camera
from scenes import bundled_scene_path, load_scene
from tests.conftest import REPO
from tools.cli import main


def run_cli(*args):
    return main([str(a) for a in args])


def test_render_bundled_scene_matches_renderer(tmp_path):
    out = tmp_path / "plant.png"
    assert run_cli("render", "--size", "40x30", "--out", out, "--backend", "torch") == 0
    img = np.asarray(Image.open(out))
    assert img.shape == (30, 40, 3)
    scene = load_scene(bundled_scene_path())
    expect = Renderer(scene, backend="torch").render(default_camera(scene, 40, 30)).rgba8[..., :3].numpy()
    assert np.array_equal(img, expect)
    assert img.mean() > 5, "the plant is in view"


def test_render_orbit_frames(tmp_path, scene_path):
    out = tmp_path / "frames"
    rc = run_cli("render", scene_path("playbot_crop.ply"), "--size", "24x16", "--path", "orbit", "--frames", 3,
                 "--out", out, "--backend", "torch")  # fmt: skip
    assert rc == 0
    files = sorted(p.name for p in out.iterdir() if p.suffix == ".png")
    assert len(files) == 3
    frames = [np.asarray(Image.open(out / f)) for f in files]
    assert not np.array_equal(frames[0], frames[1]), "the camera moves along the orbit"


def test_info(capsys, scene_path):
    assert run_cli("info", scene_path("playbot_crop.ply")) == 0
    text = capsys.readouterr().out
    assert "4,096" in text and "sh degree:     2" in text and "bounds" in text


@pytest.mark.parametrize(
    "make,args,message",
    [
        (None, ["render", "{tmp}/missing.ply", "--out", "{tmp}/o.png"], "missing.ply: no such file"),
        (
            b"ply\nformat binary_little_endian 1.0\nelement vertex 10\nproperty float x\nend_header\n",
            ["render", "{file}", "--out", "{tmp}/o.png"],
            "truncated",
        ),
        (b"garbage bytes", ["info", "{file}"], "unknown scene format"),
        (b"", ["info", "{file}"], "empty"),
    ],
    ids=["missing", "truncated", "unknown", "empty"],
)
def test_bad_input_is_one_line_exit_2(make, args, message, tmp_path, capsys):
    f = tmp_path / ("scene.ply" if make and make.startswith(b"ply") else "scene.bin")
    if make is not None:
        f.write_bytes(make)
    rc = run_cli(*[a.format(tmp=tmp_path, file=f) for a in args])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert message in err and len(err.splitlines()) == 1, err


def test_absurd_size_and_existing_output(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli("render", "--size", "100000x10", "--out", tmp_path / "x.png")
    assert e.value.code == 2
    assert "each side must be between 1 and 8192" in capsys.readouterr().err
    existing = tmp_path / "exists.png"
    existing.write_bytes(b"keep me")
    assert run_cli("render", "--size", "8x8", "--out", existing, "--backend", "torch") == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert existing.read_bytes() == b"keep me", "an existing output is never overwritten unasked"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--size", "-5x3"], "argument --size: '-5x3' is not WIDTHxHEIGHT"),
        (["--path", "orbit", "--radius", "-inf"], "--radius -inf: must be a finite number"),
    ],
)
def test_a_value_that_starts_with_a_minus_is_checked_as_that_flags_value(tmp_path, capsys, args, message):
    """'-5x3' after --size is --size's (wrong) value, told as such, not 'expected one argument'."""
    try:
        rc = run_cli("render", *args, "--out", tmp_path / "x.mp4", "--backend", "torch")
    except SystemExit as e:  # argparse's usage error
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err and "expected one argument" not in err and err.count("\n") == 1, err


def test_python_dash_m_tools_runs_the_same_command():
    r = subprocess.run([sys.executable, "-m", "tools", "--help"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and "render" in r.stdout and "info" in r.stdout


def test_warnings_print_as_one_line(tmp_path, capsys):
    """The dropped-Gaussian notice (a Python UserWarning) is one line naming the file, not a two-line warning
    with a source line."""
    from tests.reliability.hostile import nan_ply

    path = nan_ply(tmp_path)
    assert run_cli("info", path) == 0
    err = capsys.readouterr().err
    expect = f"warpsplat info: warning: {path}: dropped 1 of 64 Gaussians with invalid values (NaN/inf, or a scale, "
    expect += "position or quaternion whose square overflows float32, or a zero quaternion)\n"
    assert err == expect, err


def test_running_out_of_memory_anyway_is_one_line(monkeypatch, tmp_path, capsys):
    """Memory can still run out past the readers' cap (other processes, ulimit -v): one line naming the scene."""
    import scenes

    def exhausted(path):
        raise MemoryError

    monkeypatch.setattr(scenes, "load_scene", exhausted)  # tools.common imports it when a command runs
    (tmp_path / "big.ply").write_bytes(b"ply\n")
    assert run_cli("info", tmp_path / "big.ply") == 2
    assert capsys.readouterr().err == f"warpsplat info: error: out of memory with {tmp_path / 'big.ply'}\n"


def test_torchs_allocator_running_out_is_one_line_and_other_runtime_errors_are_not_hidden(monkeypatch, tmp_path,
                                                                                         capsys):  # fmt: skip
    """torch's CPU allocator raises a RuntimeError, not a MemoryError (under ulimit -v it was a traceback); the
    process's own limit is named. A RuntimeError that is not about memory stays a traceback (a bug to report)."""
    import resource

    import scenes

    def alloc_fails(path):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 805306368 bytes. Error code 12 (Cannot allocate memory)")  # fmt: skip

    monkeypatch.setattr(scenes, "load_scene", alloc_fails)  # tools.common imports it when a command runs
    monkeypatch.setattr(resource, "getrlimit", lambda r: (3 << 30, -1) if r == resource.RLIMIT_AS else (-1, -1))
    monkeypatch.setattr(resource, "RLIM_INFINITY", -1)
    (tmp_path / "big.ply").write_bytes(b"ply\n")
    assert run_cli("info", tmp_path / "big.ply") == 2
    assert capsys.readouterr().err == (f"warpsplat info: error: out of memory with {tmp_path / 'big.ply'}: this "
                                       "process may use at most 3.22 GB of address space (ulimit -v)\n")  # fmt: skip

    def bug(path):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(scenes, "load_scene", bug)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        run_cli("info", tmp_path / "big.ply")


def test_why_nothing_is_drawn_counts_each_gaussian_under_its_reason():
    import numpy as np
    import torch

    from renderer import Camera
    from tests.reliability.hostile import cloud
    from tools.render import why_not_drawn

    scene = cloud(12)
    scene.opacity_logits[:4] = -9.0  # fainter than 1/255
    scene.means[4:7] = torch.tensor([0.0, 0.0, -10.0])  # behind a camera at z = -5 looking along +z
    scene.means[7:10] = torch.tensor([100.0, 0.0, 0.0])  # far to the side
    scene.means[10:] = torch.tensor([0.0, 0.0, 0.0])
    cam = Camera.look_at(np.array([0.0, 0, -5]), np.zeros(3), up=np.array([0.0, -1, 0]), width=16, height=16)
    assert why_not_drawn(scene, cam) == (
        "4 fainter than the 1/255 opacity the renderer draws; 3 behind the camera or nearer than its near plane "
        "(0.01); 3 centred outside the image; 2 on screen but too small to reach a pixel centre"
    )


def test_render_warns_when_the_scene_draws_nothing(tmp_path, capsys):
    """Every Gaussian fully transparent (opacity logits of -inf, clamped: a valid scene): the image is empty
    because of the scene, since the default view frames it, and the command says so."""
    from scenes.ply import write_ply
    from tests.reliability.hostile import cloud

    scene = cloud(64)
    scene.opacity_logits[:] = float("-inf")
    write_ply(scene, tmp_path / "clear.ply")
    assert run_cli("render", tmp_path / "clear.ply", "--out", tmp_path / "x.png", "--size", "16x16",
                   "--backend", "torch") == 0  # fmt: skip
    err = capsys.readouterr().err
    expect = f"warpsplat render: warning: {tmp_path / 'clear.ply'}: the image is empty: the default view, which "
    expect += "frames the scene, draws none of its 64 Gaussians: 64 fainter than the 1/255 opacity the renderer draws\n"
    assert err == expect, err
    scene.opacity_logits[0] = 5.0
    write_ply(scene, tmp_path / "one.ply")
    assert run_cli("render", tmp_path / "one.ply", "--out", tmp_path / "y.png", "--size", "16x16",
                   "--backend", "torch") == 0  # fmt: skip
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_reader_that_goes_away_ends_the_command_quietly(scene_path, buffered):
    """`warpsplat info scene.ply | head -1`: once the reader has gone, the command stops without a word (a shell
    reports 141, as for a command that SIGPIPE ended); here the pipe is closed before anything is written. Output
    to a pipe is buffered (as a user's is), or not (PYTHONUNBUFFERED, as some shells here set it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    p = subprocess.Popen([sys.executable, "-m", "tools", "info", str(scene_path("playbot_crop.ply"))], cwd=REPO,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 141 and err == ""


def test_another_broken_pipe_is_an_error(monkeypatch, tmp_path, capsys):
    """A pipe that is not standard output broke (an encoder's): that is an error, in one line."""
    import tools.info

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(tools.info, "run", broken)
    with open(tmp_path / "out.txt", "w") as out:  # a real file: poll says nothing of it
        monkeypatch.setattr(sys, "stdout", out)
        assert run_cli("info", tmp_path / "x.ply") == 2
    assert capsys.readouterr().err == "warpsplat info: error: Broken pipe\n"
