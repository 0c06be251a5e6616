"""A picture of a `warpsplat bench` JSON: warpsplat's speed against both anchors per path and variant (Pillow only).

    python -m tools.bench_plot bench.json [more.json ...] out.png [--variants default,adagscale]

One panel per anchor that was measured (gsplat 1.5.3, HiGS), side by side; in each, every path gets one bar per
variant: the anchor's median frame time over the variant's, the anchor timed as the variant was (the JSON's
"ratio"; right of the 1x line, warpsplat is faster). Lossy variants (those the bench reports an SSIM for) are
drawn hatched: their colour lightened, with white diagonal stripes. Same-run ratios only, as in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import math

from PIL import Image, ImageDraw, ImageFont

HATCH_STEP = 4  # pixels between the stripes of a hatched bar
COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
           (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]  # fmt: skip
ANCHOR_NAMES = {"gsplat": "gsplat 1.5.3", "HiGS": "HiGS"}
LEFT, PANEL, RIGHT = 250, 380, 20  # pixels: the path labels, each panel, the margin


def ratios(doc: dict) -> dict:
    """{anchor: {(scene, path, size, variant): anchor time / variant time}} for the anchors with any ratio. A JSON
    written before the bench had HiGS has no "vs_anchors": there gsplat's median over the variant's."""
    paths = doc["paths"]
    out: dict = {a: {} for a in ANCHOR_NAMES}
    old = {(p["scene"], p["path"]): p["median_ms"] for p in paths if p["variant"] == "gsplat"}
    for p in paths:
        if p["variant"] in ANCHOR_NAMES:
            continue
        key = (p["scene"], p["path"], tuple(p.get("size") or doc["size"]), p["variant"])
        if "vs_anchors" in p:
            for a, x in p["vs_anchors"].items():
                if x is not None:
                    out[a][key] = x
        elif (p["scene"], p["path"]) in old:
            out["gsplat"][key] = old[(p["scene"], p["path"])] / p["median_ms"]
    return {a: r for a, r in out.items() if r}


def merge(docs: list[dict]) -> dict:
    """The rows of several bench JSONs (calls that split one run, e.g. the object scenes and the composites) in
    one: the first JSON's device, commit and sizes, every JSON's paths."""
    return {**docs[0], "paths": [p for d in docs for p in d["paths"]]}


def plot(doc: dict, out: str, *, max_ratio: float | None = None, variants: list[str] | None = None) -> None:
    """max_ratio: where the axes end (None: the largest ratio, rounded up to a half, at least 2x); variants: the
    variants drawn (None: all)."""
    by_anchor = ratios(doc)
    if variants is not None:
        by_anchor = {a: {k: x for k, x in r.items() if k[3] in variants} for a, r in by_anchor.items()}
        by_anchor = {a: r for a, r in by_anchor.items() if r}
    keys = [k for r in by_anchor.values() for k in r]
    names = list(dict.fromkeys(k[3] for k in keys))
    rows = list(dict.fromkeys(k[:3] for k in keys))
    if max_ratio is None:
        values = [x for r in by_anchor.values() for x in r.values()]
        max_ratio = max(2.0, math.ceil(2 * max(values, default=2.0)) / 2)
    lossy = {p["variant"] for p in doc["paths"] if p.get("ssim_vs_default")}
    main = tuple(doc["size"])
    font = ImageFont.load_default()
    numbers = len(names) <= 2  # few bars a path: tall enough for each bar's number at its end
    bar_h, gap, top = 12 if numbers else 7, 10, 54
    panels = list(by_anchor) or ["gsplat"]
    width = LEFT + len(panels) * PANEL + RIGHT
    height = top + len(rows) * (len(names) * bar_h + gap) + 30 + 14 * len(names)
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    scale = (PANEL - 30) / max_ratio
    d.text((10, 8), f"anchor's frame time / warpsplat's, timed alike: right of 1x, warpsplat is faster ({doc['gpu']}, "
                    f"commit {doc['commit']})", fill="black", font=font)  # fmt: skip
    if "higs" in doc and "HiGS" not in by_anchor:
        d.text((10, 22), f"HiGS: {doc['higs']['status']}", fill="black", font=font)
    y_end = top + len(rows) * (len(names) * bar_h + gap)
    for j, anchor in enumerate(panels):
        x0 = LEFT + j * PANEL
        measured = "" if anchor in by_anchor else ": not measured"
        d.text((x0, top - 16), f"against {ANCHOR_NAMES[anchor]}{measured}", fill="black", font=font)
        for r in (0.5 * k for k in range(1, int(2 * max_ratio) + 1)):
            x = x0 + r * scale
            d.line([x, top - 5, x, y_end], fill=(0, 0, 0) if r == 1.0 else (200, 200, 200), width=1)
            d.text((x - 8, y_end + 2), f"{r:g}x", fill="black", font=font)
        y = top
        for row in rows:
            for i, v in enumerate(names):
                x = by_anchor.get(anchor, {}).get((*row, v))
                if x is None:
                    continue
                x1 = x0 + min(x, max_ratio) * scale
                bar(d, [x0, y + i * bar_h, x1, y + i * bar_h + bar_h - 2], COLOURS[i % len(COLOURS)], v in lossy)
                if numbers:
                    d.text((x1 + 4, y + i * bar_h), f"{x:.2f}x", fill="black", font=font)
            y += len(names) * bar_h + gap
    y = top
    for scene, path, size in rows:
        at = "" if size == main else f" @{size[0]}x{size[1]}"
        d.text((10, y + 2), f"{scene} / {path}{at}", fill="black", font=font)
        y += len(names) * bar_h + gap
    y = y_end + 18
    for i, v in enumerate(names):
        bar(d, [LEFT, y + i * 14 + 3, LEFT + 10, y + i * 14 + 11], COLOURS[i % len(COLOURS)], v in lossy)
        d.text((LEFT + 16, y + i * 14), v, fill="black", font=font)
    img.save(out, format="PNG")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json", nargs="+", help="`warpsplat bench` JSON files (their rows are drawn together)")
    parser.add_argument("out", help="the picture to write (PNG)")
    parser.add_argument("--variants", default=None, help="comma-separated variants to draw (default: all)")
    args = parser.parse_args()
    plot(merge([read(p) for p in args.json]), args.out, variants=args.variants.split(",") if args.variants else None)


def read(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


if __name__ == "__main__":
    main()
