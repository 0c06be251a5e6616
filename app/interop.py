"""Getting the renderer's RGBA8 frame into the window's GL texture.

Three paths behind one object, `FrameTexture`:

- `CudaGLTexture`: CUDA-GL interop through cuda-python's runtime bindings (`cuda.bindings.runtime`). The
  texture is registered once (`cudaGraphicsGLRegisterImage`, write-discard); each frame maps it, copies the
  CUDA tensor into its array with `cudaMemcpy2DToArrayAsync` on the current torch stream and unmaps it. No
  host round trip. Measured on one H200 at 1920x1080 (BENCHMARKS.md, tests/app/gpu_interop_check.py): render,
  interop copy and present cost +0.62 ms a frame over rendering alone, the host path +5.6 ms.
- `CudaGLBuffer`: the other interop route (DESIGN.md): two GL pixel buffers registered with CUDA
  (`cudaGraphicsGLRegisterBuffer`), used in turn. Each frame maps one, copies the tensor into it with a plain
  linear `cudaMemcpyAsync`, unmaps it, and has GL update the texture from it (`glTexSubImage2D` from a bound
  pixel-unpack buffer: a copy on the GPU, ordered by GL, that the CPU does not wait for). The buffer mapped is
  the one GL read two frames before, so the map need not wait for GL's last read of it. Which route is faster
  is the interop check's to say (`DEFAULT_INTEROP`).
- `HostTexture`: download + `texture.write`, used without CUDA (the CPU renderer) or when interop fails
  (for example, GL and CUDA on different GPUs). The overlay shows which path is live and why.

On resize the old texture is unregistered and released before the new one is created.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import moderngl
import torch

GL_TEXTURE_2D = 0x0DE1

INTEROP = "CUDA-GL interop"
HOST = "host upload"
PIXEL_BUFFERS = 2  # CudaGLBuffer's buffers, used in turn


class InteropError(RuntimeError):
    """CUDA-GL interop is unavailable or a call failed."""


def _check(result, what: str):
    """cuda-python calls return (err, *values): raise on an error, return the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise InteropError(f"{what} failed: {name}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _cudart():
    try:
        from cuda.bindings import runtime
    except ImportError:
        try:
            from cuda import cudart as runtime  # cuda-python < 12.6 layout
        except ImportError as e:
            raise InteropError(f"cuda-python is not installed ({e})") from None
    return runtime


def _check_frame(rgba8: torch.Tensor, width: int, height: int) -> None:
    if rgba8.shape != (height, width, 4) or rgba8.dtype != torch.uint8:
        raise ValueError(f"frame {tuple(rgba8.shape)} {rgba8.dtype}: expected ({height}, {width}, 4) uint8")


class HostTexture:
    """An RGBA8 texture filled from host memory (any device: the frame is copied to the CPU first)."""

    path = HOST

    def __init__(self, ctx: moderngl.Context, width: int, height: int):
        self.width, self.height = width, height
        self.texture = ctx.texture((width, height), 4, dtype="f1")

    def upload(self, rgba8: torch.Tensor) -> None:
        """rgba8: [H, W, 4] uint8, row 0 at the top (stored as texture row 0; the present shader flips)."""
        _check_frame(rgba8, self.width, self.height)
        self.texture.write(rgba8.detach().contiguous().cpu().numpy())

    def release(self) -> None:
        self.texture.release()


class CudaGLTexture:
    """An RGBA8 texture registered with CUDA; `upload` copies a CUDA tensor into it on the device."""

    path = INTEROP

    def __init__(self, ctx: moderngl.Context, width: int, height: int):
        self.rt = _cudart()
        self.width, self.height = width, height
        self.texture = ctx.texture((width, height), 4, dtype="f1")
        self._resource = None
        try:
            flags = self.rt.cudaGraphicsRegisterFlags.cudaGraphicsRegisterFlagsWriteDiscard
            self._resource = _check(
                self.rt.cudaGraphicsGLRegisterImage(self.texture.glo, GL_TEXTURE_2D, flags),
                "cudaGraphicsGLRegisterImage",
            )
        except Exception:
            self.texture.release()
            raise

    @contextlib.contextmanager
    def mapped(self, stream: int) -> Iterator[object]:
        """Map the texture for CUDA on `stream`, yield its level-0 cudaArray, unmap (also on error)."""
        with _mapped(self.rt, self._resource, stream):
            yield _check(
                self.rt.cudaGraphicsSubResourceGetMappedArray(self._resource, 0, 0),
                "cudaGraphicsSubResourceGetMappedArray",
            )

    def upload(self, rgba8: torch.Tensor) -> None:
        """rgba8: [H, W, 4] uint8 CUDA tensor, rows contiguous. Ordered after the work already queued on the
        current torch stream; GL commands issued after the unmap see the copy."""
        _check_frame(rgba8, self.width, self.height)
        if rgba8.device.type != "cuda":
            raise InteropError(f"frame is on {rgba8.device}, not CUDA")
        if rgba8.stride(1) != 4 or rgba8.stride(2) != 1:
            rgba8 = rgba8.contiguous()
        stream = torch.cuda.current_stream(rgba8.device).cuda_stream
        row_bytes = self.width * 4
        with self.mapped(stream) as array:
            _check(
                self.rt.cudaMemcpy2DToArrayAsync(
                    array, 0, 0, rgba8.data_ptr(), rgba8.stride(0), row_bytes, self.height,
                    self.rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, stream,
                ),
                "cudaMemcpy2DToArrayAsync",
            )  # fmt: skip

    def release(self) -> None:
        """Unregister first, then release the GL texture (the other order leaves CUDA a dangling image)."""
        if self._resource is not None:
            _check(self.rt.cudaGraphicsUnregisterResource(self._resource), "cudaGraphicsUnregisterResource")
            self._resource = None
        self.texture.release()


class CudaGLBuffer:
    """An RGBA8 texture that GL updates from pixel buffers CUDA writes (the module docstring's second route)."""

    path = INTEROP

    def __init__(self, ctx: moderngl.Context, width: int, height: int):
        self.rt = _cudart()
        self.width, self.height = width, height
        self.texture = ctx.texture((width, height), 4, dtype="f1")
        self.buffers = [ctx.buffer(reserve=width * height * 4, dynamic=True) for _ in range(PIXEL_BUFFERS)]
        self._resources: list = []
        self._next = 0
        try:
            flags = self.rt.cudaGraphicsRegisterFlags.cudaGraphicsRegisterFlagsWriteDiscard
            for buf in self.buffers:
                self._resources.append(
                    _check(self.rt.cudaGraphicsGLRegisterBuffer(buf.glo, flags), "cudaGraphicsGLRegisterBuffer")
                )
        except Exception:
            self.release()
            raise

    def upload(self, rgba8: torch.Tensor) -> None:
        """rgba8: [H, W, 4] uint8 CUDA tensor. The copy is ordered after the work queued on the current torch
        stream; GL's update of the texture, after the unmap."""
        _check_frame(rgba8, self.width, self.height)
        if rgba8.device.type != "cuda":
            raise InteropError(f"frame is on {rgba8.device}, not CUDA")
        rgba8 = rgba8.contiguous()  # one linear copy of W x H x 4 bytes
        k, self._next = self._next, (self._next + 1) % PIXEL_BUFFERS
        stream = torch.cuda.current_stream(rgba8.device).cuda_stream
        with _mapped(self.rt, self._resources[k], stream):
            ptr, size = _check(
                self.rt.cudaGraphicsResourceGetMappedPointer(self._resources[k]), "cudaGraphicsResourceGetMappedPointer"
            )
            if size < rgba8.numel():
                raise InteropError(f"pixel buffer of {size} bytes for a {rgba8.numel()}-byte frame")
            _check(
                self.rt.cudaMemcpyAsync(ptr, rgba8.data_ptr(), rgba8.numel(),
                                        self.rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync",
            )  # fmt: skip
        self.texture.write(self.buffers[k])  # GL: texture <- pixel buffer, on the GPU

    def release(self) -> None:
        """Unregister first, then release the GL objects."""
        for resource in self._resources:
            _check(self.rt.cudaGraphicsUnregisterResource(resource), "cudaGraphicsUnregisterResource")
        self._resources = []
        for buf in self.buffers:
            buf.release()
        self.texture.release()


@contextlib.contextmanager
def _mapped(rt, resource, stream: int) -> Iterator[None]:
    """Map a registered resource for CUDA on `stream` while the block runs; unmap it (also on error)."""
    _check(rt.cudaGraphicsMapResources(1, resource, stream), "cudaGraphicsMapResources")
    try:
        yield
    finally:
        _check(rt.cudaGraphicsUnmapResources(1, resource, stream), "cudaGraphicsUnmapResources")


# The interop route the viewer uses: tests/app/gpu_interop_check.py measures both on the GPU machine.
DEFAULT_INTEROP = CudaGLTexture


def interop_unavailable_reason(device: torch.device) -> str | None:
    """Why interop cannot be tried for frames rendered on `device`; None when it can."""
    if device.type != "cuda":
        return f"frames are rendered on {device.type}"
    try:
        _cudart()
    except InteropError as e:
        return str(e)
    return None


TextureFactory = Callable[[moderngl.Context, int, int], "HostTexture | CudaGLTexture | CudaGLBuffer"]


class FrameTexture:
    """The window's frame texture: interop when it can, host upload otherwise.

    Args:
        ctx: the GL context the texture lives in.
        device: where frames are rendered (interop needs CUDA).
        allow_interop: False forces the host path (`--no-interop`).
        interop_factory / host_factory: texture classes (tests substitute fakes).
    """

    def __init__(
        self,
        ctx: moderngl.Context,
        device: torch.device,
        *,
        allow_interop: bool = True,
        interop_factory: TextureFactory | None = None,
        host_factory: TextureFactory = HostTexture,
    ):
        self.ctx = ctx
        interop_factory = interop_factory or DEFAULT_INTEROP
        self.interop_factory = interop_factory
        self.host_factory = host_factory
        self.impl: HostTexture | CudaGLTexture | None = None
        self.reason: str | None = None if allow_interop else "interop turned off"
        if self.reason is None and interop_factory in (CudaGLTexture, CudaGLBuffer):
            self.reason = interop_unavailable_reason(device)
        self.use_interop = self.reason is None

    @property
    def path(self) -> str:
        return INTEROP if self.use_interop else HOST

    def describe(self) -> str:
        return self.path if self.reason is None else f"{self.path} ({self.reason})"

    @property
    def texture(self) -> moderngl.Texture | None:
        return None if self.impl is None else self.impl.texture

    @property
    def size(self) -> tuple[int, int]:
        return (0, 0) if self.impl is None else (self.impl.width, self.impl.height)

    def ensure_size(self, width: int, height: int) -> None:
        """(Re-)create the texture for a frame size; the old one is unregistered and released first."""
        if self.impl is not None and self.size == (width, height):
            return
        self.release()
        if self.use_interop:
            try:
                self.impl = self.interop_factory(self.ctx, width, height)
                return
            except InteropError as e:
                self._fall_back(str(e))
        self.impl = self.host_factory(self.ctx, width, height)

    def _fall_back(self, reason: str) -> None:
        self.use_interop = False
        self.reason = reason

    def upload(self, rgba8: torch.Tensor) -> None:
        """Copy one [H, W, 4] uint8 frame into the texture, re-creating it when the size changed."""
        height, width = int(rgba8.shape[0]), int(rgba8.shape[1])
        self.ensure_size(width, height)
        assert self.impl is not None
        try:
            self.impl.upload(rgba8)
        except InteropError as e:
            self.release()
            self._fall_back(str(e))
            self.ensure_size(width, height)
            self.impl.upload(rgba8)

    def release(self) -> None:
        if self.impl is not None:
            impl, self.impl = self.impl, None
            impl.release()
