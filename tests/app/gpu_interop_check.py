"""GPU check of the viewer's display path, offscreen in a standalone EGL context (run on the CUDA machine).

    source .gpu/setup.sh && python tests/app/gpu_interop_check.py [--scene PATH] [--size 1920x1080]

(.gpu/ and its setup.sh, which the GL loaders come from: tests/gpu/README.md.)

1. Exactness: the renderer's RGBA8 tensor copied through `CudaGLTexture` (register, map,
   cudaMemcpy2DToArrayAsync on the current torch stream, unmap) reads back bit-exact from the texture, at
   several sizes with re-creation in between (unregister before re-create), and the presenter's
   full-screen triangle puts the same pixels in a framebuffer.
2. Cost: a sustained fly-through (forward motion with a slow turn) rendered alone, then rendered and presented
   into a 1920x1080 framebuffer each frame through interop, then through the host path. The issue's budget:
   render + present <= render + 0.5 ms per frame.

A headless pyglet window cannot host moderngl on the GPU machine (it has no X server), hence EGL. Without
CUDA the script runs the host path only, at a small size (a check of the script itself). Prints a short table
last; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import moderngl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import app  # noqa: E402, F401  (sets pyglet's options; nothing here opens a window)
from app.interop import CudaGLTexture, FrameTexture, HostTexture  # noqa: E402
from app.present import Presenter  # noqa: E402
from renderer import Camera, Renderer, RenderSettings, default_camera, look_at_pose, up_vector  # noqa: E402
from renderer.paths import axis_angle  # noqa: E402
from scenes import bundled_scene_path, load_scene  # noqa: E402

BUDGET_MS = 0.5


def fly_through(scene, width: int, height: int, n: int) -> list[Camera]:
    """Forward through the scene from the default view, turning 30 degrees over the path."""
    home = default_camera(scene, width, height)
    up = up_vector(scene.up_axis)
    T = home.T_world_camera
    eye, forward = T[:3, 3].copy(), T[:3, 2].copy()
    target = scene.center().double().cpu().numpy()
    dist = float(np.linalg.norm(target - eye))
    cams = []
    for i in range(n):
        t = i / max(n - 1, 1)
        angle = math.radians(30) * t
        f = axis_angle(up, angle) @ forward  # turned about up; the camera moves 0.9 of the way to the target
        pos = eye + forward * dist * 0.9 * t
        cams.append(home.with_pose(look_at_pose(pos, pos + f, up)))
    return cams


def check_exact(ctx, renderer, scene, sizes, texture_cls, fbo) -> list[str]:
    failures = []
    ft = FrameTexture(ctx, renderer.device, interop_factory=texture_cls)
    presenter = Presenter(ctx)
    for w, h in sizes:
        out = renderer.render(default_camera(scene, w, h), RenderSettings())
        ft.upload(out.rgba8)
        if type(ft.impl) is not texture_cls:
            failures.append(f"{w}x{h}: fell back to {ft.describe()}")
        if renderer.device.type == "cuda":
            torch.cuda.synchronize()
        expect = out.rgba8.cpu().numpy()
        got = np.frombuffer(ft.texture.read(alignment=1), np.uint8).reshape(h, w, 4)
        if not np.array_equal(got, expect):
            failures.append(f"{w}x{h}: texture differs from the tensor in {int((got != expect).any(-1).sum())} px")
        fbo.use()
        presenter.draw(ft.texture, (0, 0, w, h))
        data = fbo.read(viewport=(0, 0, w, h), components=3, alignment=1)
        shown = np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1]
        if not np.array_equal(shown, expect[..., :3]):
            failures.append(f"{w}x{h}: presented framebuffer differs from the tensor")
    ft.release()
    presenter.release()
    return failures


def run_path(ctx, renderer, cams, texture, presenter, fbo) -> tuple[float, float]:
    """(throughput ms/frame without per-frame sync, median ms/frame with a full sync after each frame)."""
    settings = RenderSettings()
    cuda = renderer.device.type == "cuda"

    def frame(cam):
        out = renderer.render(cam, settings, sync_stats=False)
        if texture is not None:
            texture.upload(out.rgba8)
            fbo.use()
            presenter.draw(texture.texture, (0, 0, cam.width, cam.height))

    def sync():
        if cuda:
            torch.cuda.synchronize()
        if texture is not None:
            ctx.finish()

    for cam in cams[:10]:  # warm-up: autotune, allocations
        frame(cam)
    sync()
    t0 = time.perf_counter()
    for cam in cams:
        frame(cam)
    sync()
    throughput = (time.perf_counter() - t0) * 1e3 / len(cams)
    times = []
    for cam in cams:
        t = time.perf_counter()
        frame(cam)
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return throughput, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scene", default=None, help="scene file (default: the bundled scene)")
    parser.add_argument("--size", default=None, help="WxH (default 1920x1080 on CUDA, 64x48 without)")
    parser.add_argument("--frames", type=int, default=None, help="fly-through frames (default 240 / 3)")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    w, h = map(int, (args.size or ("1920x1080" if cuda else "64x48")).lower().split("x"))
    n = args.frames or (240 if cuda else 3)
    scene = load_scene(args.scene or bundled_scene_path())
    ctx = moderngl.create_context(standalone=True, backend="egl")
    print(f"GL: {ctx.info['GL_RENDERER']} / {ctx.info['GL_VERSION']}")
    print(f"scene: {args.scene or 'bundled'} ({len(scene):,} Gaussians), {w}x{h}, {n} frames")
    renderer = Renderer(scene)
    gpu = f" ({torch.cuda.get_device_name()})" if cuda else ""
    print(f"renderer: {renderer.device}{gpu}, {renderer.backend}, torch {torch.__version__}")
    interop_cls = CudaGLTexture if cuda else HostTexture
    if not cuda:
        print("no CUDA: host path only (this checks the script, not interop)")

    # one framebuffer for everything: a standalone context has no default framebuffer to fall back on,
    # and moderngl re-binds the previous one when it creates another (an error if that one was released)
    fbo = ctx.simple_framebuffer((w, h), components=4)
    failures = check_exact(ctx, renderer, scene, [(w, h), (w - 3, h - 1), (w, h)], interop_cls, fbo)
    exact = not failures
    gl_error = ctx.error
    if gl_error != "GL_NO_ERROR":
        failures.append(f"GL error after the exactness check: {gl_error}")
    cams = fly_through(scene, w, h, n)
    presenter = Presenter(ctx)
    rows = [("render only", *run_path(ctx, renderer, cams, None, presenter, fbo))]
    for name, cls in (
        ("render + interop + present", interop_cls if cuda else None),
        ("render + host + present", HostTexture),
    ):
        if cls is None:
            continue
        tex = cls(ctx, w, h)
        rows.append((name, *run_path(ctx, renderer, cams, tex, presenter, fbo)))
        tex.release()
    fbo.release()
    presenter.release()
    gl_error = ctx.error
    if gl_error != "GL_NO_ERROR":
        failures.append(f"GL error: {gl_error}")

    base_tp, base_med = rows[0][1], rows[0][2]
    print()
    print(f"{'path':<28}{'ms/frame':>10}{'+ vs render':>13}{'median synced':>15}{'+ vs render':>13}")
    for name, tp, med in rows:
        print(f"{name:<28}{tp:>10.3f}{tp - base_tp:>+13.3f}{med:>15.3f}{med - base_med:>+13.3f}")
    if cuda:
        extra = rows[1][1] - base_tp
        verdict = "within" if extra <= BUDGET_MS else "OVER"
        print(f"interop present costs {extra:+.3f} ms/frame at {w}x{h}: {verdict} the {BUDGET_MS} ms budget")
        if extra > BUDGET_MS:
            failures.append(f"present overhead {extra:.3f} ms > {BUDGET_MS} ms")
    print(f"bit-exact texture and framebuffer at {w}x{h}, {w - 3}x{h - 1}: {'yes' if exact else 'NO'}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
