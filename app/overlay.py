"""The overlay: imgui-bundle + implot panels over the frame.

Three parts, as moderngl-window splits them: the GL backend (app/imgui_gl.py) draws imgui's draw data with
moderngl, the input backend (app/imgui_input.py) feeds pyglet's events to imgui, and `Overlay` here draws the
panels (app/panels.py), one class each. Adding a panel is a class in app/panels.py and a line in
`Overlay.__init__`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from imgui_bundle import imgui

from .panels import HelpPanel, LegendPanel, Panel, PerformancePanel, ScenePanel, SettingsPanel
from .state import ViewerState


def apply_style() -> None:
    """The overlay's changes to imgui's default (dark) style, once per imgui context.

    Popups (dropdown lists, tooltips) opaque: at imgui's 0.94 the panel text under an open dropdown showed
    through its entries.
    """
    style = imgui.get_style()
    bg = style.color_(imgui.Col_.popup_bg)
    style.set_color_(imgui.Col_.popup_bg, imgui.ImVec4(bg.x, bg.y, bg.z, 1.0))


class Overlay:
    """The panels, drawn each frame from `state`; their changes go back into `state` (and mark it dirty), or
    through the window's callbacks.

    Args:
        state: the shared viewer state.
        scene_sh_degree: the scene's SH degree (upper end of the SH slider).
        controller: the camera controller (mode, speed, keyframes, snaps), or None.
        help_rows: (keys, action) rows for the help panel.
        scene_name: what the scene panel calls the scene.
        up_axis: the scene's up axis as the window uses it ("-y", "+z", ...).
        open_scene: called with a path to open another scene.
        set_up_axis: called with an axis name to change the up axis.
        level_up: called to make the current view's up the scene's up axis.

    The window updates the scene-dependent attributes when it opens another scene or changes the up axis.
    """

    def __init__(
        self,
        state: ViewerState,
        *,
        scene_sh_degree: int,
        controller=None,
        help_rows: Sequence[tuple[str, str]] = (),
        scene_name: str = "",
        up_axis: str = "-y",
        open_scene: Callable[[str], None] | None = None,
        set_up_axis: Callable[[str], None] | None = None,
        level_up: Callable[[], None] | None = None,
    ):
        self.state = state
        self.scene_sh_degree = scene_sh_degree
        self.controller = controller
        self.scene_name = scene_name
        self.up_axis = up_axis
        self.open_scene = open_scene
        self.set_up_axis = set_up_axis
        self.level_up = level_up
        # drawn in this order; a panel placed relative to another comes after it
        self.panels: list[Panel] = [
            PerformancePanel(self),
            SettingsPanel(self),
            ScenePanel(self),
            LegendPanel(self),
            HelpPanel(self, help_rows),
        ]

    def panel(self, kind: type[Panel]) -> Panel:
        return next(p for p in self.panels if isinstance(p, kind))

    def build(self) -> None:
        """Emit this frame's panels (between imgui.new_frame() and imgui.render())."""
        for panel in self.panels:
            panel.draw()
