"""The bench picture (tools/bench_plot.py): one bar per variant, lossy variants hatched."""

from __future__ import annotations

import numpy as np
from PIL import Image

from tools.bench_plot import COLOURS, plot


def row(variant: str, ms: float, ssim: list[float] | None = None) -> dict:
    return {"scene": "s.ply", "path": "orbit", "variant": variant, "median_ms": ms, "ssim_vs_default": ssim or []}


def test_lossy_variants_are_hatched(tmp_path):
    """The exact variant's bar is its solid colour; the lossy one (an SSIM reported) never shows its solid
    colour, only the lightened one crossed by white stripes."""
    doc = {"gpu": "test", "size": [64, 48], "commit": "abc",
           "paths": [row("gsplat", 2.0), row("default", 1.0), row("adagscale", 1.0, [0.99])]}  # fmt: skip
    plot(doc, str(tmp_path / "p.png"))
    img = np.asarray(Image.open(tmp_path / "p.png").convert("RGB"))

    def where(colour) -> np.ndarray:
        return np.all(img == np.array(colour, np.uint8), axis=-1)

    exact, lossy = COLOURS[0], COLOURS[1]
    light = tuple(c + (255 - c) // 2 for c in lossy)
    assert where(exact).sum() > 100 and where(tuple(c + (255 - c) // 2 for c in exact)).sum() == 0
    assert where(lossy).sum() == 0 and where(light).sum() > 50
    ys, xs = np.nonzero(where(light))
    box = img[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    assert np.all(box == 255, axis=-1).sum() > 20  # the stripes
