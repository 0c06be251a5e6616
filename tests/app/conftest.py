"""Fixtures for the viewer tests: an X display (Xvfb started here when DISPLAY is unset), an EGL context."""

from __future__ import annotations

import ctypes

import pytest

from tests.app import xvfb


@pytest.fixture(scope="session")
def x_display():
    """A usable DISPLAY: the one set, or a private Xvfb for the session (needs the `xvfb` package)."""
    try:
        with xvfb.x_display() as display:
            yield display
    except xvfb.NoDisplay as e:
        pytest.fail(str(e))


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
