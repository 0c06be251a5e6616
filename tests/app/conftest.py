"""Fixtures for the viewer tests: an X display (Xvfb started here when DISPLAY is unset), an EGL context."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import pytest


@pytest.fixture(scope="session")
def x_display():
    """A usable DISPLAY: the one set, or a private Xvfb for the session (needs the `xvfb` package)."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    if shutil.which("Xvfb") is None:
        pytest.fail("DISPLAY is unset and Xvfb is not installed (apt-get install -y xvfb)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        pytest.fail("Xvfb did not start")
    display = f":{number}"
    os.environ["DISPLAY"] = display
    try:
        yield display
    finally:
        del os.environ["DISPLAY"]
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def egl_ctx():
    """A standalone EGL context (Mesa llvmpipe here; no display needed), error-checked before and after."""
    moderngl = pytest.importorskip("moderngl")
    ctx = moderngl.create_context(standalone=True, backend="egl", require=330)
    assert ctx.error == "GL_NO_ERROR"
    yield ctx
    assert ctx.error == "GL_NO_ERROR"
    ctx.release()
    _egl_unbind()


def _egl_unbind() -> None:
    """Leave no EGL context current on this thread. moderngl's release() does not unbind it, and with glvnd
    a thread still holding an EGL context later fails to show GLX contexts to moderngl ("glXGetCurrentContext:
    cannot detect OpenGL context" once pyglet re-creates a window after an event loop ran)."""
    egl = ctypes.CDLL("libEGL.so.1")
    egl.eglGetCurrentDisplay.restype = ctypes.c_void_p
    egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
    display = egl.eglGetCurrentDisplay()
    if display:
        egl.eglMakeCurrent(display, None, None, None)
