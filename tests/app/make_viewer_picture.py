"""Save a picture of the viewer window with its overlay (docs/viewer.png) and print window frame times.

    python tests/app/make_viewer_picture.py [--out docs/viewer.png] [--size 960x600] [--render-scale 0.5]

Runs under the display in DISPLAY (e.g. `xvfb-run -a -s "-screen 0 1280x800x24" python ...`): opens the viewer
on the bundled scene, waits for the frame at the still render scale, draws a few hundred window frames (the
frame-time history), then captures the window through an offscreen framebuffer. The frame times printed are
re-present frames (no render): what the window costs when the view does not change.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import app  # noqa: E402, F401  (sets pyglet's options: must come before any pyglet.window import)

# isort: split
from PIL import Image  # noqa: E402

from app.window import ViewerWindow  # noqa: E402
from scenes import bundled_scene_path, load_scene  # noqa: E402


def draw(window, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        window.switch_to()
        window.dispatch_events()
        window.on_draw()
        window.flip()
        times.append((time.perf_counter() - t) * 1e3)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="docs/viewer.png")
    parser.add_argument("--size", default="960x600")
    parser.add_argument("--render-scale", type=float, default=1.0)
    args = parser.parse_args()
    w, h = map(int, args.size.lower().split("x"))
    window = ViewerWindow(load_scene(bundled_scene_path()), size=(w, h), render_scale=args.render_scale,
                          vsync=False)  # fmt: skip
    t0 = time.perf_counter()
    while True:  # the still frame (the worker renders while the window keeps drawing)
        draw(window, 1)
        if not window.state.dirty and not window.producer.busy and window._last_frame is not None:
            break
        time.sleep(0.01)
    first = time.perf_counter() - t0
    with_overlay = draw(window, 240)
    window.state.show_overlay = window.state.show_help = False
    bare = draw(window, 120)
    window.state.show_overlay = True
    draw(window, 2)
    image = window.capture()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    Image.fromarray(image).quantize(colors=256, dither=Image.Dither.NONE).save(args.out, optimize=True)
    rw, rh = window.state.render_size
    print(f"first frame at {rw}x{rh} on {window.state.render_device}: {first:.1f} s")
    print(f"window frame (re-present, no render) at {w}x{h}: median {statistics.median(with_overlay):.2f} ms "
          f"with the overlay, {statistics.median(bare):.2f} ms without")  # fmt: skip
    print(f"saved {args.out} ({os.path.getsize(args.out) / 1024:.0f} KB)")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
