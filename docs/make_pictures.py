"""Make the README's pictures from the current code: docs/plant.png and docs/viewer.png, or with --bench the
bench picture docs/bench_fast_core.png from a `warpsplat bench` JSON (the GPU machine's).

    .venv/bin/python docs/make_pictures.py [--out-dir docs] [--bench bench.json [more.json ...]]

docs/plant.png is `warpsplat render --size 640x480` of the bundled scene (the first output of `make demo`).
docs/viewer.png is the viewer window on the bundled scene with its overlay, captured after the frame at full
render scale is on screen. The viewer needs an X display: the one in DISPLAY, else a private Xvfb started here
(the `xvfb` package). Both pictures are written under temporary names and renamed when complete.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

VIEWER_SIZE = (1280, 720)


def make_plant(path: str) -> None:
    from tools.cli import main

    if main(["render", "--size", "640x480", "--out", path, "--overwrite"]) != 0:
        raise SystemExit(f"could not render {path}")


# The bench picture's rows: warpsplat's default (frames in flight) and one by one, each against both anchors timed
# the same way (tools/bench_plot.py).
BENCH_VARIANTS = ["default", "frames=one-by-one"]


def make_bench(json_paths: list[str], path: str) -> None:
    """From one bench JSON, or several calls that split one run (drawn together)."""
    from scenes import atomic
    from tools.bench_plot import merge, plot, read

    doc = merge([read(p) for p in json_paths])
    with atomic.atomic_write(path) as f:
        plot(doc, f, variants=BENCH_VARIANTS)
    print(f"wrote {path} from {', '.join(json_paths)} (commit {doc['commit']})")


def make_viewer(path: str) -> None:
    from tests.app.xvfb import x_display

    with x_display():
        import app  # noqa: F401  (sets pyglet's options: must come before any pyglet.window import)

        # isort: split
        from PIL import Image

        from app.window import ViewerWindow
        from scenes import atomic, bundled_scene_path, load_scene

        window = ViewerWindow(load_scene(bundled_scene_path()), size=VIEWER_SIZE, render_scale=1.0, vsync=False,
                              scene_name="plant.splat (bundled)")  # fmt: skip
        t0 = time.perf_counter()
        while window.state.dirty or window.producer.busy or window._last_frame is None:
            draw(window)  # the worker renders while the window keeps drawing (the rate history fills)
            time.sleep(0.01)
        draw(window, 120)  # imgui's auto-sized panels settle; the window-rate history fills
        image = window.capture()
        rw, rh = window.state.render_size
        print(f"viewer: frame at {rw}x{rh} on {window.state.render_device} in {time.perf_counter() - t0:.1f} s")
        window.close()
        with atomic.atomic_write(path) as f:
            Image.fromarray(image).quantize(colors=256, dither=Image.Dither.NONE).save(f, format="PNG", optimize=True)
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KB)")


def draw(window, n: int = 1) -> None:
    for _ in range(n):
        window.switch_to()
        window.dispatch_events()
        window.on_draw()
        window.flip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=os.path.join(REPO, "docs"), help="folder for the pictures (default docs/)")
    parser.add_argument("--bench", metavar="JSON", nargs="+",
                        help="draw only the bench picture, from these bench JSONs (one run's calls)")  # fmt: skip
    args = parser.parse_args()
    if args.bench:
        make_bench(args.bench, os.path.join(args.out_dir, "bench_fast_core.png"))
        return 0
    make_plant(os.path.join(args.out_dir, "plant.png"))
    make_viewer(os.path.join(args.out_dir, "viewer.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
