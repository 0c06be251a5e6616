"""The bench picture (tools/bench_plot.py): one bar per variant, lossy variants hatched."""

from __future__ import annotations

import numpy as np
from PIL import Image

from tools.bench_plot import COLOURS, LEFT, PANEL, RIGHT, plot


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


def test_one_panel_per_anchor_with_its_own_ratio(tmp_path):
    """Each anchor gets a panel on the same scale: the default's bar against gsplat (2x, its "vs_anchors" ratio,
    not a median recomputed here) is four times as long as against HiGS (0.5x). A JSON without HiGS draws one."""
    default = {**row("default", 1.0), "size": [64, 48], "vs_anchors": {"gsplat": 2.0, "HiGS": 0.5}}
    doc = {"gpu": "test", "size": [64, 48], "commit": "abc", "higs": {"status": "found"},
           "paths": [row("gsplat", 9.0), row("HiGS", 9.0), default]}  # fmt: skip
    plot(doc, str(tmp_path / "p.png"), max_ratio=3.0)
    img = np.asarray(Image.open(tmp_path / "p.png").convert("RGB"))
    assert img.shape[1] == LEFT + 2 * PANEL + RIGHT
    cols = np.nonzero(np.all(img == np.array(COLOURS[0], np.uint8), axis=-1).any(axis=0))[0]
    runs = np.split(cols, np.nonzero(np.diff(cols) > 1)[0] + 1)
    widths = [len(r) for r in runs if r[0] >= LEFT]  # the two bars (the legend's swatch sits under the first)
    assert len(widths) == 2 and abs(widths[0] / widths[1] - 4.0) < 0.2, widths
    doc["paths"][2]["vs_anchors"]["HiGS"] = None
    plot(doc, str(tmp_path / "q.png"))
    assert Image.open(tmp_path / "q.png").size[0] == LEFT + PANEL + RIGHT


def test_make_pictures_draws_the_bench_picture(tmp_path):
    """`docs/make_pictures.py --bench JSON` writes docs/bench_fast_core.png (here into --out-dir): the default and
    one-by-one rows against both anchors, nothing else."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    rows = [{**row(v, 1.0), "size": [64, 48], "vs_anchors": {"gsplat": 2.0, "HiGS": 0.8}}
            for v in ("default", "frames=one-by-one", "tile_size=16")]  # fmt: skip
    doc = {"gpu": "test", "size": [64, 48], "commit": "abc", "paths": rows}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    rows = [{**r, "scene": "t.ply"} for r in rows]  # a second call of the same run: its rows are drawn too
    (tmp_path / "b.json").write_text(json.dumps({**doc, "paths": rows}))
    cmd = [sys.executable, str(REPO / "docs" / "make_pictures.py"), "--bench", str(tmp_path / "a.json"),
           str(tmp_path / "b.json"), "--out-dir", str(tmp_path)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    img = np.asarray(Image.open(tmp_path / "bench_fast_core.png").convert("RGB"))
    assert img.shape[1] == LEFT + 2 * PANEL + RIGHT
    colours = [np.all(img == np.array(c, np.uint8), axis=-1).sum() for c in COLOURS[:3]]
    assert colours[0] > 100 and colours[1] > 100 and colours[2] == 0, colours  # tile_size=16 is not drawn
    one = np.all(img == np.array(COLOURS[0], np.uint8), axis=-1)
    bars = np.nonzero(one[:, LEFT + 5])[0]  # the default's bars in the first panel, one run of rows per path
    assert len(np.split(bars, np.nonzero(np.diff(bars) > 1)[0] + 1)) == 2 + 1  # both files' paths, the legend
