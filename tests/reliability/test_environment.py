"""Environment: no GPU, no display, a CUDA driver too old, interop refused. Each condition is simulated and
must give a clear message and the fallback that exists (CPU rendering, host upload), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch

from renderer import Renderer, default_camera
from scenes import load_scene
from tests.conftest import REPO
from tools.cli import main

TINY_SCENE = "test-splat.3-points-from-train.ply"
OLD_DRIVER = (
    "CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your "
    "GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx"
)


def run_cli(args: list[str], env_changes: dict[str, str | None], timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "-m", "tools", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def one_line_error(stderr: str, command: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"warpsplat {command}: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# ------------------------------------------------------------------------------------- no GPU


def test_no_gpu_renderer_defaults_to_cpu_and_torch(monkeypatch, scene_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a no-op here; simulates it on the GPU machine
    scene = load_scene(scene_path(TINY_SCENE))
    r = Renderer(scene)
    assert r.device.type == "cpu" and r.backend == "torch"
    out = r.render(default_camera(scene, 16, 16))
    assert torch.isfinite(out.image).all()


def test_no_gpu_render_command_says_where_it_renders(monkeypatch, tmp_path, capsys, scene_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "a.png"
    assert main(["render", str(scene_path(TINY_SCENE)), "--size", "16x16", "--out", str(out), "--quiet"]) == 0
    assert out.exists() and "rendering on cpu, torch reference pipeline" in capsys.readouterr().out


def test_no_gpu_triton_backend_runs_in_the_interpreter(tmp_path, scene_path):
    """`--backend triton` without CUDA and without TRITON_INTERPRET set by the caller: the interpreter, said so."""
    out = tmp_path / "t.png"
    res = run_cli(["render", str(scene_path(TINY_SCENE)), "--size", "16x16", "--out", str(out), "--backend",
                   "triton", "--quiet"], {"TRITON_INTERPRET": None, "CUDA_VISIBLE_DEVICES": ""})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert out.exists() and "in the Triton interpreter" in res.stdout


# ------------------------------------------------------------------------------------- CUDA driver too old


def too_old_is_available():
    warnings.warn(OLD_DRIVER, UserWarning, stacklevel=2)  # what torch.cuda.is_available() does with an old driver
    return False


def test_old_driver_falls_back_to_cpu_with_torch_warning(monkeypatch, tmp_path, capsys, scene_path):
    monkeypatch.setattr(torch.cuda, "is_available", too_old_is_available)
    out = tmp_path / "a.png"
    code = main(["render", str(scene_path(TINY_SCENE)), "--size", "16x16", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0 and out.exists()
    assert "rendering on cpu" in captured.out
    assert captured.err.splitlines() == [f"warpsplat render: warning: {OLD_DRIVER}"]  # torch's warning, one line


def refuse_cuda(*args, **kwargs):
    raise RuntimeError("CUDA driver version is insufficient for CUDA runtime version")


def test_cuda_failing_at_first_use_falls_back_to_cpu_with_a_warning(monkeypatch, tmp_path, capsys, scene_path):
    """CUDA reported available but failing its first call: the render goes to the CPU, with a warning naming
    the CUDA error (no device was asked for, so there is a fallback)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "mem_get_info", refuse_cuda)  # the Renderer's first CUDA call
    out = tmp_path / "a.png"
    code = main(["render", str(scene_path(TINY_SCENE)), "--size", "16x16", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert code == 0 and out.exists()
    assert "rendering on cpu" in captured.out
    [line] = captured.err.splitlines()  # the warning, on one line
    assert line.startswith("warpsplat render: warning: CUDA is unusable") and "driver version is insufficient" in line


def test_a_cuda_device_asked_for_but_failing_is_refused_by_name(monkeypatch):
    """The same failure on a device asked for by name (a render worker's): no silent fallback, an error that
    the command prints as one line, naming the device and the CPU way out."""
    from renderer.device import CudaUnusableError, choose_device

    monkeypatch.setattr(torch.cuda, "mem_get_info", refuse_cuda)
    with pytest.raises(CudaUnusableError, match=r"^cuda:0 is not usable \(CUDA driver version .*CUDA_VISIBLE"):
        choose_device("cuda:0")


# ------------------------------------------------------------------------------------- no display


def test_view_without_display_is_one_line_exit_2(monkeypatch, capsys, scene_path):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view", str(scene_path(TINY_SCENE))]) == 2
    line = one_line_error(capsys.readouterr().err, "view")
    assert "DISPLAY is not set" in line and "warpsplat render" in line


def test_view_with_unreachable_display_is_one_line_exit_2(scene_path):
    res = run_cli(["view", str(scene_path(TINY_SCENE))], {"DISPLAY": ":97"})
    assert res.returncode == 2
    assert "cannot open the display" in one_line_error(res.stderr, "view")


# ------------------------------------------------------------------------------------- interop refused


class FakeTexture:
    """Stands in for a GL texture class (no GL context needed): records what was created and uploaded."""

    log: list = []

    def __init__(self, ctx, width, height):
        self.width, self.height, self.texture = width, height, object()
        FakeTexture.log.append(("host", width, height))

    def upload(self, rgba8):
        FakeTexture.log.append(("upload", tuple(rgba8.shape)))

    def release(self):
        FakeTexture.log.append(("release",))


def refused_interop(ctx, width, height):
    from app.interop import InteropError

    raise InteropError("cudaGraphicsGLRegisterImage failed: cudaErrorOperatingSystem")


def test_interop_reasons_without_cuda(monkeypatch):
    import app.interop as interop

    assert interop.interop_unavailable_reason(torch.device("cpu")) == "frames are rendered on cpu"

    def no_cuda_python():
        raise interop.InteropError("cuda-python is not installed (No module named 'cuda')")

    monkeypatch.setattr(interop, "_cudart", no_cuda_python)
    ft = interop.FrameTexture(None, torch.device("cuda"), host_factory=FakeTexture)
    assert ft.path == interop.HOST and "cuda-python is not installed" in ft.describe()


def test_refused_interop_falls_back_to_host_upload():
    import app.interop as interop

    FakeTexture.log = []
    ft = interop.FrameTexture(None, torch.device("cuda"), interop_factory=refused_interop, host_factory=FakeTexture)
    assert ft.path == interop.INTEROP  # chosen until it is refused
    ft.upload(torch.zeros(4, 6, 4, dtype=torch.uint8))
    assert ft.path == interop.HOST and "cudaGraphicsGLRegisterImage failed" in ft.describe()
    assert FakeTexture.log == [("host", 6, 4), ("upload", (4, 6, 4))]
