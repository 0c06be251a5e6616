"""Frame texture paths without CUDA: fallback selection, re-creation on resize, exact presentation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import app  # noqa: F401  (pyglet options first)
from app.interop import HOST, INTEROP, CudaGLBuffer, CudaGLTexture, FrameTexture, HostTexture, InteropError, _check
from app.present import Presenter

pytestmark = pytest.mark.gl


def frame(h: int, w: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (h, w, 4), dtype=torch.uint8, generator=g)


class Recorder:
    """Texture factory that records creation and release order (stands in for CudaGLTexture)."""

    path = INTEROP

    def __init__(self, log: list, *, fail_create: bool = False, fail_upload: bool = False):
        self.log, self.fail_create, self.fail_upload = log, fail_create, fail_upload

    def __call__(self, ctx, width, height):
        if self.fail_create:
            raise InteropError("cudaGraphicsGLRegisterImage failed: cudaErrorUnknown")
        rec = self

        class Tex(HostTexture):
            def __init__(self):
                super().__init__(ctx, width, height)
                rec.log.append(("create", width, height, self.texture.glo))

            def upload(self, rgba8):
                if rec.fail_upload:
                    raise InteropError("cudaGraphicsMapResources failed: cudaErrorInvalidGraphicsContext")
                super().upload(rgba8)

            def release(self):
                rec.log.append(("release", self.width, self.height, self.texture.glo))
                super().release()

        return Tex()


def test_cpu_frames_use_the_host_path(egl_ctx):
    ft = FrameTexture(egl_ctx, torch.device("cpu"))
    assert ft.path == HOST and not ft.use_interop
    assert ft.describe() == "host upload (frames are rendered on cpu)"
    ft.upload(frame(5, 7))
    assert isinstance(ft.impl, HostTexture) and ft.size == (7, 5)
    ft.release()


def test_interop_can_be_turned_off(egl_ctx):
    """--no-interop: frames of a CUDA renderer go through the host texture, and no interop texture is made."""
    log: list = []
    ft = FrameTexture(egl_ctx, torch.device("cuda"), allow_interop=False, interop_factory=Recorder(log))
    assert ft.describe() == "host upload (interop turned off)"
    ft.upload(frame(4, 6))
    assert log == [] and isinstance(ft.impl, HostTexture) and ft.size == (6, 4)
    ft.release()


def test_failed_registration_falls_back_to_host(egl_ctx):
    ft = FrameTexture(egl_ctx, torch.device("cuda"), interop_factory=Recorder([], fail_create=True))
    assert ft.use_interop  # chosen until it fails
    ft.upload(frame(4, 4))
    assert ft.path == HOST and "cudaGraphicsGLRegisterImage failed" in ft.describe()
    assert isinstance(ft.impl, HostTexture)
    ft.release()


def test_failed_copy_falls_back_and_still_shows_the_frame(egl_ctx):
    log: list = []
    ft = FrameTexture(egl_ctx, torch.device("cuda"), interop_factory=Recorder(log, fail_upload=True))
    img = frame(6, 9, seed=3)
    ft.upload(img)
    assert ft.path == HOST and "cudaGraphicsMapResources" in ft.describe()
    assert [e[0] for e in log] == ["create", "release"]  # the interop texture is released before the host one
    data = np.frombuffer(ft.texture.read(alignment=1), np.uint8).reshape(6, 9, 4)
    np.testing.assert_array_equal(data, img.numpy())
    ft.release()


def test_resize_releases_the_old_texture_before_creating_the_new(egl_ctx):
    log: list = []
    ft = FrameTexture(egl_ctx, torch.device("cuda"), interop_factory=Recorder(log))
    ft.upload(frame(4, 6))
    ft.upload(frame(4, 6, seed=1))  # same size: kept
    ft.upload(frame(8, 10))  # new size: re-created
    ft.release()
    assert [(e[0], e[1], e[2]) for e in log] == [
        ("create", 6, 4), ("release", 6, 4), ("create", 10, 8), ("release", 10, 8),
    ]  # fmt: skip
    assert ft.impl is None


def test_check_raises_with_the_call_and_error_name():
    class Err(int):
        name = "cudaErrorInvalidValue"

    assert _check((Err(0), "array"), "map") == "array"
    assert _check((Err(0),), "unmap") is None
    with pytest.raises(InteropError, match="cudaMemcpy2DToArrayAsync failed: cudaErrorInvalidValue"):
        _check((Err(1),), "cudaMemcpy2DToArrayAsync")


@pytest.mark.parametrize("route", [CudaGLTexture, CudaGLBuffer], ids=["texture", "pixel-buffer"])
def test_interop_refuses_cpu_frames_before_touching_cuda(route):
    tex = route.__new__(route)
    tex.width, tex.height = 4, 4
    with pytest.raises(InteropError, match="not CUDA"):
        tex.upload(frame(4, 4))


@pytest.mark.parametrize("size", [(37, 23), (64, 48)])
def test_present_is_pixel_exact_at_scale_one(egl_ctx, size):
    w, h = size
    img = frame(h, w, seed=7)
    ft = FrameTexture(egl_ctx, torch.device("cpu"))
    ft.upload(img)
    fbo = egl_ctx.simple_framebuffer((w, h), components=4)
    fbo.use()
    presenter = Presenter(egl_ctx)
    presenter.draw(ft.texture, (0, 0, w, h))
    shown = np.frombuffer(fbo.read(components=3, alignment=1), np.uint8).reshape(h, w, 3)[::-1]
    np.testing.assert_array_equal(shown, img[..., :3].numpy())  # row 0 of the frame is the top of the window
    presenter.release()
    fbo.release()
    ft.release()


ROUTES = [(CudaGLTexture, "cudaGraphicsGLRegisterImage"), (CudaGLBuffer, "cudaGraphicsGLRegisterBuffer")]


@pytest.mark.parametrize(("route", "call"), ROUTES, ids=["texture", "pixel-buffer"])
def test_real_registration_without_a_driver_falls_back(egl_ctx, route, call):
    """cuda-python's real calls on a machine with no CUDA driver: registration fails, the GL objects it made are
    released, and the frame goes through the host path with the CUDA error named."""
    pytest.importorskip("cuda.bindings")
    if torch.cuda.is_available():
        pytest.skip("a CUDA driver is present: gpu_interop_check.py covers this machine")
    ft = FrameTexture(egl_ctx, torch.device("cuda"), interop_factory=route)
    assert ft.use_interop
    img = frame(3, 5, seed=11)
    ft.upload(img)
    assert ft.path == HOST and ft.describe().startswith(f"host upload ({call} failed: cudaError")
    data = np.frombuffer(ft.texture.read(alignment=1), np.uint8).reshape(3, 5, 4)
    np.testing.assert_array_equal(data, img.numpy())
    ft.release()
