"""Make the README's pictures from the current code: docs/plant.png and docs/viewer.png, or with --bench the
bench picture docs/bench_fast_core.png from a `warpsplat bench` JSON (the GPU machine's).

    .venv/bin/python docs/make_pictures.py [--out-dir docs] [plant] [viewer] [--bench bench.json [more.json ...]]

docs/plant.png is `warpsplat render --size 640x480` of the bundled scene (the first output of `make demo`).
docs/viewer.png is the window `warpsplat view --size 1280x720` opens on the bundled scene, with that command's
defaults for this machine (on a CPU: a render at a quarter of the window's size, vsync on), drawn at the rate
the command draws it and captured VIEWER_SECONDS after its first frame is on screen. The viewer needs an X
display: the one in DISPLAY, else a private Xvfb started here (the `xvfb` package). Both pictures are written
under temporary names and renamed when complete.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

VIEWER_ARGS = ["view", "--size", "1280x720"]
VIEWER_SECONDS = 3.0  # after the first frame: the window-rate history fills, imgui's panels settle


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
        from PIL import Image

        from scenes import atomic
        from tools.cli import build_parser
        from tools.common import open_scene
        from tools.threads import apply_thread_policy
        from tools.view import open_window

        apply_thread_policy()  # as `warpsplat` does before any command
        args = build_parser().parse_args(VIEWER_ARGS)
        window = open_window(open_scene(args.scene, args.up), args, "bundled scene")  # as `warpsplat view` does
        t0 = time.perf_counter()
        while window.state.dirty or window.producer.busy or window._last_frame is None:
            draw(window)  # at the command's rate: the worker renders while the window keeps drawing
        t_first = time.perf_counter()
        while time.perf_counter() - t_first < VIEWER_SECONDS:
            draw(window)
        image = window.capture()
        s = window.state
        rw, rh = s.render_size
        print(f"viewer: first frame {rw}x{rh} (render scale {s.render_scale:g}, vsync {'on' if s.vsync else 'off'}) "
              f"on {s.render_device} after {t_first - t0:.1f} s")  # fmt: skip
        window.close()
        with atomic.atomic_write(path) as f:
            Image.fromarray(image).quantize(colors=256, dither=Image.Dither.NONE).save(f, format="PNG", optimize=True)
    print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KB)")


def draw(window) -> None:
    """One window frame, then the wait until the next, as `pyglet.app.run(interval=window.redraw_interval)`."""
    t0 = time.perf_counter()
    window.switch_to()
    window.dispatch_events()
    window.on_draw()
    window.flip()
    time.sleep(max(window.redraw_interval - (time.perf_counter() - t0), 0.0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=os.path.join(REPO, "docs"), help="folder for the pictures (default docs/)")
    parser.add_argument("pictures", nargs="*", metavar="{plant,viewer}", help="which to make (default both)")
    parser.add_argument("--bench", metavar="JSON", nargs="+",
                        help="draw only the bench picture, from these bench JSONs (one run's calls)")  # fmt: skip
    args = parser.parse_args()
    unknown = sorted(set(args.pictures) - {"plant", "viewer"})  # argparse's choices reject an empty `*` on 3.11
    if unknown:
        parser.error(f"unknown picture {unknown[0]!r}: plant or viewer")
    if args.bench:
        make_bench(args.bench, os.path.join(args.out_dir, "bench_fast_core.png"))
        return 0
    if "plant" in args.pictures or not args.pictures:
        make_plant(os.path.join(args.out_dir, "plant.png"))
    if "viewer" in args.pictures or not args.pictures:
        make_viewer(os.path.join(args.out_dir, "viewer.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
