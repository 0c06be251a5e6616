"""The overlay's panels, one class each: what it shows, where it sits, what it changes.

A panel subclasses `Panel`: `title`, `shown()`, `place()` (its position, set before imgui.begin, every frame),
`room()` (the largest size it may take there) and `body()` (its widgets). It reads and edits `ViewerState`
through `self.state` and reaches the scene-dependent parts (the SH degree, the camera controller, opening a
scene) through its `Overlay`. After each frame `rect` holds where it was drawn, so panels can keep clear of
each other (the help panel of the settings).

Panels are anchored to the window's corners and placed every frame, and no panel grows past its room (its
content scrolls instead): they stay inside the window through resizes, a longer label or another scene.
Text that names files is wrapped at spaces only (`wrap_words`), so a file name is never split.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui, implot

from renderer.camera import AXES
from renderer.settings import BLEND_PRECISIONS, blends_in_pairs, rasterizers

from .frames import HEAT_COLORS
from .state import FOV_RANGE, RENDER_MODE_LABELS, RENDER_MODES, FrameTimes, ViewerState

MARGIN = 8  # pixels between panels and from the window's edges
ITEM_WIDTH = 170  # sliders and combos: imgui's default (a share of the window) makes auto-sized panels wide
FPS_LINES = (60, 120, 240)
GRAPH_SECONDS = 20.0  # the performance graph shows this much history
GRAPH_SIZE = (380, 150)
SCENE_MIN_HEIGHT = 120  # on a short window the settings scroll to leave the scene panel this much
SCENE_NAME_WIDTH = 400  # the scene panel's name line wraps (at spaces) beyond this
BLEND_LABELS = {"fp16": "fp16 pairs", "fp32": "float32"}  # RenderSettings.blend_precision in the settings panel
UP_AXES = list(AXES)  # "+x", "-x", "+y", "-y", "+z", "-z"
KEY_ROWS = 6  # keyframe rows the Scene panel shows before its list scrolls
# What each renderer switch does, costs and where it is declined, shown when the pointer rests on its row (the
# measurements are in BENCHMARKS.md; docs/architecture.md has the same table).
SWITCH_TIPS = {
    "rasterizer": "How the rasterizer walks a tile's list: one Gaussian at a time from shared memory (scalar, a\n"
    "Gluon kernel: CUDA only) or a batch at once (batched, the Triton interpreter's form: 2-3.5x slower\n"
    "on the GPU). The same image either way; auto picks scalar on a GPU and batched without one.",
    "blend_precision": "How the scalar loop blends: a thread's two pixels as one fp16 pair (fp16 pairs, the default,\n"
    "as HiGS blends; each 32 Gaussians' colour added into float32 sums) or float32 throughout. fp16 pairs:\n"
    "the rasterizer 0.71-0.89x float32's time, 70.7-82.5 dB against gsplat on the bench's frames; float32:\n"
    "90-102 dB. Both keep the exact mode's 50 dB floor. The depth view's pass blends float32 either way.",
    "adagscale": "AdaGScale (lossy): bins each Gaussian with a shrunken ellipse where its outer tiles carry little\n"
    "colour; blending keeps the whole Gaussian. Fewer pairs to sort and walk: 1.04-1.13x the exact frame\n"
    "on the H200's large scenes, 1.01-1.29x on most other bench paths, 42 dB or more against exact on\n"
    "the bench's paths (its tau shrinks where many Gaussians share a pixel). Off by default, as in render\n"
    "and bench: its 40 dB floor is measured on the bench's views, not proven for denser ones.",
    "adagscale_tau": "The most colour-weighted alpha a Gaussian may drop, in pixels (0 = exact tiles). Larger removes\n"
    "more pairs and costs more quality. A frame never drops more than half a pixel of alpha per pixel of\n"
    "the image in all (the budget), so dense views get a smaller tau than this.",
    "temporal": "Temporal window (near-exact): one cull pass per K frames finds what the predicted cameras can\n"
    "see, and the frames between project only that. Used only while it measures faster than plain frames\n"
    "(the Performance panel says which): objects, whose plain frames replay as CUDA graphs, decline it.\n"
    "Cameras here are predicted from the motion; `warpsplat render --temporal K` knows them (exact).",
    "window_frames": "K: the frames one cull pass serves. Longer windows cull less often but keep more Gaussians.",
}


class Panel:
    """One imgui window of the overlay."""

    title = ""
    bg_alpha = 0.75
    flags = imgui.WindowFlags_.always_auto_resize

    def __init__(self, overlay):
        self.overlay = overlay
        self.rect: tuple[float, float, float, float] | None = None  # x, y, width, height when last drawn
        self.items: dict[str, tuple[float, float, float, float]] = {}  # named widgets' rects when last drawn

    def remember(self, name: str) -> None:
        """Record the last widget's rect as `items[name]` (where to click it, for tests and scripts)."""
        lo, hi = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.items[name] = (lo.x, lo.y, hi.x - lo.x, hi.y - lo.y)

    @property
    def state(self) -> ViewerState:
        return self.overlay.state

    def shown(self) -> bool:
        return self.state.show_overlay

    def place(self) -> None:
        """Set the next window's position (and size) before it begins."""

    def room(self) -> tuple[float, float]:
        """The largest (width, height) the panel may take where place() puts it: by default the window less
        its margins (place() anchors panels at a margin from an edge)."""
        width, height = display_size()
        return width - 2 * MARGIN, height - 2 * MARGIN

    def body(self) -> None:
        raise NotImplementedError

    def draw(self) -> None:
        if not self.shown():
            self.rect = None
            return
        self.place()
        max_w, max_h = self.room()
        imgui.set_next_window_size_constraints((0, 0), (max(max_w, 1), max(max_h, 1)))  # larger content scrolls
        imgui.set_next_window_bg_alpha(self.bg_alpha)
        imgui.begin(self.title, flags=self.flags)
        imgui.push_item_width(ITEM_WIDTH)
        self.body()
        imgui.pop_item_width()
        pos, size = imgui.get_window_pos(), imgui.get_window_size()
        self.rect = (pos.x, pos.y, size.x, size.y)
        imgui.end()


def display_size() -> tuple[float, float]:
    size = imgui.get_io().display_size
    return size.x, size.y


def wrap_words(text: str, width: float, measure: Callable[[str], float]) -> list[str]:
    """`text` as lines no wider than `width` (by `measure`), broken at spaces only: a word wider than that,
    such as a file name (whose own spaces state.keep_whole made no-break spaces), gets a line of its own,
    whole. Line breaks in `text` are kept. (imgui's own wrapping also breaks after '.' and at the width,
    which split file names.)"""
    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):  # " " only: str.split() would split at no-break spaces too
            candidate = f"{line} {word}" if line else word
            if line and measure(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


def text_wrapped_at_spaces(text: str, width: float | None = None) -> list[str]:
    """imgui.text_wrapped, but breaking at spaces only (wrap_words); `width` defaults to the room left.
    Returns the lines drawn."""
    width = imgui.get_content_region_avail().x if width is None else width
    lines = wrap_words(text, max(width, 1.0), lambda t: imgui.calc_text_size(t).x)
    for line in lines:
        imgui.text(line)
    return lines


# ---------------------------------------------------------------------------------------------- performance


def performance_lines(state: ViewerState) -> list[str]:
    """The performance panel's text above its graph: the render rate first (what the renderer achieves), then
    the window loop's, which re-presents the last frame and runs at the display rate however slow renders are."""
    lines = []
    if state.render_ms:
        ms = float(np.median(list(state.render_ms)[-10:]))
        w, h = state.render_size
        per = f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.2f} ms"
        lines.append(f"render  {1000.0 / max(ms, 1e-6):7.1f} frames/s  ({per} a frame at {w}x{h})")
    elif state.kernel_status.startswith("preparing kernels"):  # no frame before its kernels (app/warmup.py)
        lines.append(f"render  ({state.kernel_status})")
    else:
        lines.append("render  (first frame in progress)")
    if state.frame_ms:
        ms = float(np.median(list(state.frame_ms)[-30:]))
        lines.append(f"window  {1000.0 / max(ms, 1e-6):7.1f} FPS       (re-presents the last frame)")
    return lines


RAN_WORDS = {"replay": "a CUDA graph replayed", "capture": "a CUDA graph captured", "eager": "stage by stage",
             "counted": "counted", "reused": "the frame before, reused"}  # fmt: skip


def slowest_line(render_ms: FrameTimes, now: float, seconds: float = GRAPH_SECONDS) -> str | None:
    """The graph's slowest render and what it was made of, so a spike on the graph has a cause beside it ("slowest
    2.71 ms, 4 s ago: a CUDA graph captured"); None before a render, or when the slowest is within 1.5x the median
    (no spike to explain)."""
    worst = render_ms.slowest_since(now - seconds)
    if worst is None:
        return None
    ms, at, tag = worst
    _, recent = render_ms.since(now - seconds)
    if ms <= 1.5 * float(np.median(recent)):
        return None
    ran, _, rebin = tag.partition("+")
    why = ", ".join(w for w in (RAN_WORDS.get(ran, ran), "binned again after a growth" if rebin else "") if w)
    return f"slowest {ms:8.2f} ms, {now - at:.0f} s ago" + (f": {why}" if why else "")


def stage_lines(stage_ms: dict[str, float]) -> list[str]:
    """The previous frame's time per stage, in the order the frame ran them, "total" last (none before a frame)."""
    if not stage_ms:
        return []
    return ["previous frame, per stage (ms):", *(f"  {name:<10s}{ms:9.3f}" for name, ms in stage_ms.items())]


@dataclass
class GraphScale:
    """What the performance graph shows: the last `seconds` (x from -seconds to 0, now), frame times from `low`
    to `high` ms on a log10 axis when `log`, and the FPS lines that fall inside that range."""

    seconds: float
    low: float
    high: float
    log: bool
    fps_lines: tuple[int, ...]


def graph_scale(series: Sequence[np.ndarray], seconds: float = GRAPH_SECONDS) -> GraphScale | None:
    """The graph's scale for the frame times (ms) it plots; None when there are none.

    The axis spans the data. When the data spans more than a decade (a CPU's 0.3-6 s renders beside the
    window's 16 ms) the axis is logarithmic, or the fast series would lie flat on zero.
    """
    values = np.concatenate([np.asarray(v, np.float64).ravel() for v in series] + [np.zeros(0)])
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return None
    lo, hi = float(values.min()), float(values.max())
    log = hi > 10.0 * lo
    low, high = (lo / 1.5, hi * 1.5) if log else (0.0, hi * 1.25)
    return GraphScale(seconds, low, high, log, tuple(f for f in FPS_LINES if low <= 1000.0 / f <= high))


def window_line(temporal: dict) -> str:
    """The performance panel's line on the temporal window: whether it is in use, as measured
    (renderer/window_choice.py), with the times behind that."""
    choice = temporal.get("window_choice", "")
    if choice not in ("on", "off"):
        return "window     measuring: timing window frames against plain ones"
    times = f"{temporal['window_ms']:.2f} ms a frame against {temporal['plain_ms']:.2f} plain"
    if choice == "on":
        hits = f"{100 * temporal['window_hit_rate']:.0f}% hits, {temporal['window_builds']} builds"
        return f"window     in use ({times}); {hits}"
    return f"window     not in use: plain frames are faster ({times})"


class PerformancePanel(Panel):
    """Render and window rates, their history, per-stage times and counts (top left)."""

    title = "Performance"

    def __init__(self, overlay):
        super().__init__(overlay)
        self.graph: GraphScale | None = None  # the graph's scale when last drawn
        self.plotted: dict[str, int] = {}  # samples plotted per series when last drawn
        self.message_lines: list[str] = []  # the status message as last drawn
        self.slowest: str | None = None  # the slowest render's line (`slowest_line`) as last drawn

    def place(self) -> None:
        imgui.set_next_window_pos((MARGIN, MARGIN), imgui.Cond_.always)

    def body(self) -> None:
        s = self.state
        for line in performance_lines(s):
            imgui.text(line)
        self._graph()
        self.slowest = slowest_line(s.render_ms, time.perf_counter())
        if self.slowest:
            imgui.text(self.slowest)
        for line in stage_lines(s.stage_ms):
            imgui.text(line)
        st = s.stats
        if st is not None:
            fmt = lambda v: "n/a" if v is None or v < 0 else f"{v:,}"  # noqa: E731
            imgui.text(f"Gaussians  {st.n_gaussians:,} total, {fmt(st.n_visible)} visible")
            imgui.text(f"pairs      {fmt(st.n_pairs)}   longest tile list {fmt(st.max_tile_pairs)}")
            if st.n_projected >= 0 and st.n_projected != st.n_gaussians:
                imgui.text(f"projected  {st.n_projected:,} (temporal window)")
        t = s.temporal
        if t and s.settings.temporal_window > 1:
            imgui.text(window_line(t))
        imgui.text(f"display    {s.display_path}")
        imgui.text(f"renderer   {s.render_device}")
        if s.kernel_status:
            imgui.text(f"kernels    {s.kernel_status}")
        self.message_lines = text_wrapped_at_spaces(s.message) if s.message else []

    def _graph(self) -> None:
        """Frame times of the last GRAPH_SECONDS against seconds before now: renders as points (on a CPU a
        few a minute), the window loop as a line, and the FPS lines inside the range (graph_scale)."""
        now = time.perf_counter()
        series = {name: times.since(now - GRAPH_SECONDS) for name, times in
                  (("render", self.state.render_ms), ("window", self.state.frame_ms))}  # fmt: skip
        self.graph = scale = graph_scale([ms for _, ms in series.values()])
        self.plotted = {name: len(ms) for name, (_, ms) in series.items()}
        if scale is None or not implot.begin_plot("##frame times", GRAPH_SIZE, flags=implot.Flags_.no_menus):
            return
        implot.setup_axes("seconds before now", "ms, log scale" if scale.log else "ms")
        implot.setup_legend(implot.Location_.east, implot.LegendFlags_.outside)
        if scale.log:  # a tick at each power of ten (implot's own log ticks leave most unlabelled at this height)
            implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
            decades = [10.0**k for k in range(math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high)) + 1)]
            ticks = [v for v in decades if scale.low <= v <= scale.high]
            implot.setup_axis_ticks(implot.ImAxis_.y1, ticks, [f"{v:g}" for v in ticks])
        implot.setup_axis_limits(implot.ImAxis_.x1, -GRAPH_SECONDS, 0, implot.Cond_.always)
        implot.setup_axis_limits(implot.ImAxis_.y1, scale.low, scale.high, implot.Cond_.always)
        for name, (at, ms) in series.items():
            if ms.size:
                spec = implot.Spec(marker=implot.Marker_.circle, marker_size=3) if name == "render" else None
                implot.plot_line(name, at - now, ms, spec)
        for fps in scale.fps_lines:
            implot.plot_inf_lines(f"{fps} FPS", np.array([1000.0 / fps]),
                                  implot.Spec(flags=implot.InfLinesFlags_.horizontal))  # fmt: skip
        implot.end_plot()


# ---------------------------------------------------------------------------------------------- settings


class SettingsPanel(Panel):
    """The renderer's settings and the display options; each applies at the next frame (top right)."""

    title = "Settings"

    def place(self) -> None:
        width, _ = display_size()
        imgui.set_next_window_pos((width - MARGIN, MARGIN), imgui.Cond_.always, (1.0, 0.0))

    def room(self) -> tuple[float, float]:
        width, height = display_size()
        return width - 2 * MARGIN, height - 3 * MARGIN - SCENE_MIN_HEIGHT  # the scene panel goes below

    def body(self) -> None:
        s = self.state
        changed = False
        degree = self.overlay.scene_sh_degree
        cur = degree if s.settings.sh_degree is None else s.settings.sh_degree
        c, v = imgui.slider_int("SH degree", cur, 0, degree)
        if degree == 0:
            imgui.same_line()
            imgui.text_disabled("(the scene has no SH)")
        if c:
            s.settings.sh_degree, changed = v, True
        c, v = imgui.slider_float("scale modifier", s.settings.scale_modifier, 0.01, 2.0, "%.3f",
                                  imgui.SliderFlags_.logarithmic)  # fmt: skip
        if c:
            s.settings.scale_modifier, changed = max(v, 1e-3), True
        c, v = imgui.color_edit3("background", list(s.settings.background))
        if c:
            s.settings.background, changed = (float(v[0]), float(v[1]), float(v[2])), True
        c, v = imgui.slider_float("render scale", s.render_scale, 0.05, 1.0, "%.2f")
        if c:
            s.render_scale, changed = v, True
        c, v = imgui.slider_float("scale while moving", s.moving_scale, 0.05, 1.0, "%.2f")
        if c:
            s.moving_scale = v
        labels = [RENDER_MODE_LABELS[m] for m in RENDER_MODES]
        c, v = imgui.combo("render mode", RENDER_MODES.index(s.render_mode), labels)
        if c:
            s.render_mode, changed = RENDER_MODES[v], True
        forms = list(rasterizers())  # the scalar form is CUDA only
        c, v = imgui.combo("rasterizer loop", forms.index(s.settings.rasterizer), forms)
        imgui.set_item_tooltip(SWITCH_TIPS["rasterizer"])
        if c:
            s.settings.rasterizer, changed = forms[v], True
        if blends_in_pairs(s.settings):
            c, v = imgui.combo("blending", BLEND_PRECISIONS.index(s.settings.blend_precision),
                               [BLEND_LABELS[p] for p in BLEND_PRECISIONS])  # fmt: skip
            self.remember("blending")
            if c:
                s.settings.blend_precision, changed = BLEND_PRECISIONS[v], True
        else:  # the batched loop blends float32 whatever the setting: say so, not offer a switch that does nothing
            imgui.text_disabled("blending: float32 (the batched loop's)")
        imgui.set_item_tooltip(SWITCH_TIPS["blend_precision"])
        changed |= self._switches()
        c, v = imgui.checkbox("vsync", s.vsync)
        if c:
            s.vsync = v
        if changed:
            s.mark_dirty()

    def _switches(self) -> bool:
        """The renderer's switches (RenderSettings); True when one changed."""
        st = self.state.settings
        changed = False
        c, v = imgui.checkbox("AdaGScale (lossy)", st.adagscale)
        imgui.set_item_tooltip(SWITCH_TIPS["adagscale"])
        if c:
            st.adagscale, changed = v, True
        if st.adagscale:
            c, v = imgui.slider_float("AdaGScale tau", st.adagscale_tau, 0.0, 10.0, "%.3f",
                                      imgui.SliderFlags_.logarithmic)  # fmt: skip
            imgui.set_item_tooltip(SWITCH_TIPS["adagscale_tau"])
            if c:
                st.adagscale_tau, changed = max(v, 0.0), True
        c, v = imgui.checkbox("temporal window (near-exact)", st.temporal_window > 1)
        imgui.set_item_tooltip(SWITCH_TIPS["temporal"])
        if c:
            st.temporal_window, changed = (8 if v else 0), True
        if st.temporal_window > 1:
            c, v = imgui.slider_int("window frames", st.temporal_window, 2, 32)
            imgui.set_item_tooltip(SWITCH_TIPS["window_frames"])
            if c:
                st.temporal_window, changed = v, True
        return changed


# ---------------------------------------------------------------------------------------------- scene


def up_axis_index(axis: str) -> int:
    """Index in UP_AXES of an axis name as scenes store it ("-y", "y", "+Z", ...); the last entry ("custom") for a
    direction X,Y,Z (the L key's level)."""
    key = axis.strip().lower()
    key = "+" + key if key in ("x", "y", "z") else key
    return UP_AXES.index(key) if key in UP_AXES else len(UP_AXES)


class ScenePanel(Panel):
    """The scene: open another (a path, or a file dropped on the window), its up axis, the camera and its
    keyframes (right, below the settings)."""

    title = "Scene"

    def __init__(self, overlay):
        super().__init__(overlay)
        self.path = ""

    def _top(self) -> float:
        settings = self.overlay.panel(SettingsPanel).rect
        return settings[1] + settings[3] + MARGIN if settings else MARGIN

    def place(self) -> None:
        width, _ = display_size()
        imgui.set_next_window_pos((width - MARGIN, self._top()), imgui.Cond_.always, (1.0, 0.0))

    def room(self) -> tuple[float, float]:
        width, height = display_size()
        return width - 2 * MARGIN, height - self._top() - MARGIN

    def body(self) -> None:
        ov = self.overlay
        room = self.room()[0] - 2 * imgui.get_style().window_padding.x
        text_wrapped_at_spaces(ov.scene_name, max(imgui.get_content_region_avail().x, min(SCENE_NAME_WIDTH, room)))
        imgui.set_next_item_width(ITEM_WIDTH + 60)
        entered, self.path = imgui.input_text("##path", self.path, imgui.InputTextFlags_.enter_returns_true)
        self.remember("path")
        imgui.same_line()
        if (imgui.button("open") or entered) and self.path.strip() and ov.open_scene is not None:
            ov.open_scene(os.path.expanduser(self.path.strip()))
        imgui.text_disabled("a scene file or folder, a camera path or cameras file; or drop one here")
        index = up_axis_index(ov.up_axis)
        c, v = imgui.combo("up axis", index, UP_AXES + ([f"custom {ov.up_axis}"] if index == len(UP_AXES) else []))
        self.remember("up axis")
        if c and v < len(UP_AXES) and ov.set_up_axis is not None:
            ov.set_up_axis(UP_AXES[v])
        imgui.same_line()
        if imgui.button("level") and ov.level_up is not None:
            ov.level_up()
        self.remember("level")
        imgui.set_item_tooltip("the scene's up loses this view's roll (L): roll the view level first (Z / X)")
        ctl = ov.controller
        if ctl is None:
            return
        imgui.separator()
        imgui.text(f"camera: {ctl.mode} mode, speed {ctl.speed:.3g} units/s")
        if ctl.ortho:
            imgui.text_disabled("orthographic view: O for perspective, scroll zooms")
        else:
            c, v = imgui.slider_float("field of view", ctl.camera.fov_y_deg, *FOV_RANGE, "%.0f deg")
            self.remember("field of view")
            imgui.set_item_tooltip("vertical; keyframes keep the one they were added with. O: orthographic")
            if c:
                ctl.set_fov(v)
        imgui.text(f"training cameras: {len(ctl.training_cameras)}   keyframes: {len(ctl.keyframes)}")
        if imgui.button("add keyframe"):
            ctl.add_keyframe()
        imgui.same_line()
        if imgui.button("stop" if ctl.playing else "play"):
            ctl.toggle_playback()
        imgui.same_line()
        if imgui.button("save path"):
            ctl.save_keyframes()
        self._keyframe_list(ctl)

    def _keyframe_list(self, ctl) -> None:
        """A row a keyframe: go there, set it to the current view, remove it (a scrolling list past KEY_ROWS)."""
        if not ctl.keyframes:
            return
        row = imgui.get_frame_height_with_spacing()
        imgui.begin_child("keyframes", (0, row * min(len(ctl.keyframes), KEY_ROWS) + 4))
        for i in range(len(ctl.keyframes)):
            imgui.text(f"{i + 1:>3}")
            for label, action in (
                ("go", ctl.go_to_keyframe),
                ("set", ctl.set_keyframe),
                ("remove", ctl.remove_keyframe),
            ):
                imgui.same_line()
                if imgui.small_button(f"{label}##{i}"):
                    action(i)
                    break  # a removal shifts the rows after it: draw them next frame
                self.remember(f"{label} {i + 1}")
            else:
                continue
            break
        imgui.end_child()


# ---------------------------------------------------------------------------------------------- legend


def legend_ticks(mode: str, low: float, high: float, n: int = 3) -> list[tuple[float, str]]:
    """(position along the colour bar in [0, 1], label) for the depth and heat-map views.

    Heat map: `frames.heat_map` colours log(1 + count) / log(1 + busiest tile), so position t is the count
    exp(t log(1 + high)) - 1. Depth: `frames.depth_image` colours inverse depth between far (0) and near (1)
    (over the palette from its second colour), so position t is the depth 1 / (1/far + t (1/near - 1/far)),
    with low = near and high = far.
    """
    ticks = []
    for i in range(n):
        t = i / (n - 1)
        if mode == "heatmap":
            ticks.append((t, f"{math.expm1(t * math.log1p(high)):,.0f}"))
        else:
            near, far = low, high
            ticks.append((t, f"{1.0 / (1.0 / far + t * (1.0 / near - 1.0 / far)):.3g}"))
    return ticks


class LegendPanel(Panel):
    """The colour bar of the depth and heat-map views, with values (bottom left)."""

    title = "Legend"
    BAR = (300, 14)

    def shown(self) -> bool:
        s = self.state
        return s.show_overlay and self.range() is not None

    def range(self) -> tuple[str, float, float] | None:
        """(caption, low, high) of the view on screen, or None when it has no legend (yet)."""
        s = self.state
        if s.render_mode == "heatmap" and s.stats is not None and s.stats.max_tile_pairs > 0:
            tile = s.settings.tile_size
            return f"Gaussians per {tile}x{tile} tile (log scale)", 0.0, float(s.stats.max_tile_pairs)
        if s.render_mode == "depth" and s.depth_range is not None:
            return "depth in world units (pixels under half covered: black)", *s.depth_range
        return None

    def place(self) -> None:
        _, height = display_size()
        imgui.set_next_window_pos((MARGIN, height - MARGIN), imgui.Cond_.always, (0.0, 1.0))

    def body(self) -> None:
        caption, low, high = self.range()
        imgui.text(caption)
        x0, y0 = imgui.get_cursor_screen_pos()
        w, h = self.BAR
        draw = imgui.get_window_draw_list()
        mode = self.state.render_mode
        palette = HEAT_COLORS[1:] if mode == "depth" else HEAT_COLORS  # as frames.depth_image and heat_map use it
        colours = [imgui.IM_COL32(r, g, b, 255) for r, g, b in palette]
        step = w / (len(colours) - 1)
        for i in range(len(colours) - 1):  # the palette's segments, each a horizontal gradient
            a, b = (x0 + i * step, y0), (x0 + (i + 1) * step, y0 + h)
            draw.add_rect_filled_multi_color(a, b, colours[i], colours[i + 1], colours[i + 1], colours[i])
        imgui.dummy((w, h))
        _, y = imgui.get_cursor_screen_pos()
        text = imgui.get_color_u32(imgui.Col_.text)
        for t, label in legend_ticks(mode, low, high):  # each label centred under its place, kept on the bar
            width = imgui.calc_text_size(label).x
            draw.add_text((x0 + min(max(t * w - width / 2, 0), w - width), y), text, label)
        imgui.dummy((w, imgui.get_text_line_height()))
        ends = ("far", "near") if mode == "depth" else ("few", "many")
        imgui.text_disabled(f"{ends[0]} (dark) to {ends[1]} (bright)")


# ---------------------------------------------------------------------------------------------- help


class HelpPanel(Panel):
    """The keys (F1 or H). It sits at the bottom, left of the right-hand panels and no wider than the room there,
    so it never covers the settings; with the overlay hidden (Tab) it is centred."""

    title = "Keys"
    bg_alpha = 0.95  # on a narrow window it covers the performance panel: keep that text from showing through
    flags = imgui.WindowFlags_.no_resize  # its width is set in place(); height 0 there fits the rows
    WIDTH = 480  # when there is room; the actions wrap in a narrower one
    KEYS_WIDTH = 110  # the first column

    def __init__(self, overlay, rows):
        super().__init__(overlay)
        self.rows = list(rows)

    def shown(self) -> bool:
        return self.state.show_help

    def place(self) -> None:
        width, height = display_size()
        right = [p.rect for p in self.overlay.panels if p.rect and isinstance(p, (SettingsPanel, ScenePanel))]
        if right:
            edge = min(r[0] for r in right) - MARGIN
            imgui.set_next_window_pos((edge, height - MARGIN), imgui.Cond_.always, (1.0, 1.0))
            room = edge - MARGIN
        else:
            imgui.set_next_window_pos((width * 0.5, height - MARGIN), imgui.Cond_.always, (0.5, 1.0))
            room = width - 2 * MARGIN
        imgui.set_next_window_size((max(min(room, self.WIDTH), 1), 0), imgui.Cond_.always)

    def room(self) -> tuple[float, float]:
        width, height = display_size()
        return width - 2 * MARGIN, height - 2 * MARGIN  # its width is set in place()

    def body(self) -> None:
        if not imgui.begin_table("keys", 2, imgui.TableFlags_.sizing_fixed_fit):
            return
        imgui.table_setup_column("keys", imgui.TableColumnFlags_.width_fixed, self.KEYS_WIDTH)
        imgui.table_setup_column("action", imgui.TableColumnFlags_.width_stretch)
        for keys, action in self.rows:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text(keys)
            imgui.table_next_column()
            text_wrapped_at_spaces(action)
        imgui.end_table()
