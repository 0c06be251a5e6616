"""A picture of a `warpsplat bench` JSON: speed against gsplat per path and variant (Pillow only).

    python -m tools.bench_plot bench.json out.png

Each path gets one bar per variant: gsplat's median frame time over the variant's (right of the 1x line is
faster than gsplat). Lossy variants (those the bench reports an SSIM for) are drawn hatched: their colour
lightened, with white diagonal stripes. Same-run ratios only, as in BENCHMARKS.md.
"""

from __future__ import annotations

import json
import math
import sys

from PIL import Image, ImageDraw, ImageFont

HATCH_STEP = 4  # pixels between the stripes of a hatched bar
COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
           (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]  # fmt: skip


def plot(doc: dict, out: str, *, max_ratio: float | None = None) -> None:
    """max_ratio: where the axis ends (None: the largest ratio, rounded up to a half, at least 2x)."""
    paths = doc["paths"]
    gsplat = {(p["scene"], p["path"]): p["median_ms"] for p in paths if p["variant"] == "gsplat"}
    variants = [v for v in dict.fromkeys(p["variant"] for p in paths) if v != "gsplat"]
    rows = [k for k in dict.fromkeys((p["scene"], p["path"]) for p in paths) if k in gsplat]
    by = {(p["scene"], p["path"], p["variant"]): p for p in paths}
    if max_ratio is None:
        ratios = [gsplat[(p["scene"], p["path"])] / p["median_ms"] for p in paths if (p["scene"], p["path"]) in gsplat]
        max_ratio = max(2.0, math.ceil(2 * max(ratios, default=2.0)) / 2)
    lossy = {p["variant"] for p in paths if p.get("ssim_vs_default")}
    font = ImageFont.load_default()
    bar_h, gap, left, right, top = 7, 10, 230, 40, 40
    width = 1000
    height = top + len(rows) * (len(variants) * bar_h + gap) + 30 + 14 * len(variants)
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    scale = (width - left - right) / max_ratio
    d.text((10, 10), f"speed vs gsplat 1.5.3 ({doc['gpu']}, {doc['size'][0]}x{doc['size'][1]}, commit {doc['commit']})",
           fill="black", font=font)  # fmt: skip
    y = top
    for scene, path in rows:
        d.text((10, y + 2), f"{scene} / {path}", fill="black", font=font)
        for i, v in enumerate(variants):
            p = by.get((scene, path, v))
            if p is None:
                continue
            ratio = gsplat[(scene, path)] / p["median_ms"]
            x1 = left + min(ratio, max_ratio) * scale
            bar(d, [left, y + i * bar_h, x1, y + i * bar_h + bar_h - 2], COLOURS[i % len(COLOURS)], v in lossy)
            if len(variants) == 1:  # room for the number at the bar's end
                d.text((x1 + 4, y + i * bar_h - 2), f"{ratio:.2f}x", fill="black", font=font)
        y += len(variants) * bar_h + gap
    for r in (0.5 * k for k in range(1, int(2 * max_ratio) + 1)):
        x = left + r * scale
        d.line([x, top - 5, x, y], fill=(0, 0, 0) if r == 1.0 else (200, 200, 200), width=1)
        d.text((x - 8, y + 2), f"{r:g}x", fill="black", font=font)
    y += 18
    for i, v in enumerate(variants):
        bar(d, [left, y + i * 14 + 3, left + 10, y + i * 14 + 11], COLOURS[i % len(COLOURS)], v in lossy)
        d.text((left + 16, y + i * 14), v, fill="black", font=font)
    img.save(out)


def bar(d: ImageDraw.ImageDraw, box: list[float], colour: tuple[int, int, int], hatched: bool) -> None:
    """A solid bar, or for a lossy variant a lighter one crossed by white diagonal stripes."""
    if not hatched:
        d.rectangle(box, fill=colour)
        return
    light = tuple(c + (255 - c) // 2 for c in colour)
    d.rectangle(box, fill=light)
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    for x in range(x0 - (y1 - y0), x1 + 1, HATCH_STEP):  # lines of slope -1, clipped to the box
        for dy in range(y1 - y0 + 1):
            if x0 <= x + dy <= x1:
                d.point((x + dy, y1 - dy), fill="white")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        plot(json.load(f), sys.argv[2])
