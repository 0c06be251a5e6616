"""imgui's input backend: pyglet events fed to imgui's IO, and the system clipboard.

`ImguiInput` is a pyglet handler object that never consumes an event: the camera controller and the window
ask imgui's `want_capture_mouse` / `want_capture_keyboard` before acting on one. It also connects imgui's
clipboard to the window's (pyglet's X11 CLIPBOARD selection), so Ctrl+V and Shift+Insert paste into text fields
what another program copied, and Ctrl+C copies out of them. Without it imgui keeps a private clipboard on Linux.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from imgui_bundle import imgui
from pyglet.window import key, mouse


def _imgui_keys() -> dict[int, int]:
    k = imgui.Key
    table = {
        key.TAB: k.tab, key.LEFT: k.left_arrow, key.RIGHT: k.right_arrow, key.UP: k.up_arrow,
        key.DOWN: k.down_arrow, key.PAGEUP: k.page_up, key.PAGEDOWN: k.page_down, key.HOME: k.home,
        key.END: k.end, key.INSERT: k.insert, key.DELETE: k.delete, key.BACKSPACE: k.backspace,
        key.SPACE: k.space, key.RETURN: k.enter, key.ENTER: k.enter, key.ESCAPE: k.escape,
        key.NUM_ENTER: k.keypad_enter, key.LCTRL: k.left_ctrl, key.RCTRL: k.right_ctrl,
        key.LSHIFT: k.left_shift, key.RSHIFT: k.right_shift, key.LALT: k.left_alt, key.RALT: k.right_alt,
        key.PERIOD: k.period, key.MINUS: k.minus, key.COMMA: k.comma,
    }  # fmt: skip
    for c in "abcdefghijklmnopqrstuvwxyz":
        table[getattr(key, c.upper())] = getattr(k, c)
    for d in "0123456789":
        table[getattr(key, "_" + d)] = getattr(k, "_" + d)
    return table


class Clipboard(Protocol):
    """What a pyglet window offers: the system clipboard's text."""

    def get_clipboard_text(self) -> str: ...

    def set_clipboard_text(self, text: str) -> None: ...


class ImguiInput:
    """pyglet handlers feeding imgui's IO. Returns None everywhere so events reach the other handlers.

    `clipboard` (the window) backs imgui's copy and paste; None keeps imgui's private clipboard.
    """

    MODS = {
        key.LCTRL: "mod_ctrl", key.RCTRL: "mod_ctrl", key.LSHIFT: "mod_shift", key.RSHIFT: "mod_shift",
        key.LALT: "mod_alt", key.RALT: "mod_alt",
    }  # fmt: skip

    def __init__(self, window_height: Callable[[], int], clipboard: Clipboard | None = None):
        self.io = imgui.get_io()
        self.window_height = window_height
        self.keys = _imgui_keys()
        if clipboard is not None:
            platform = imgui.get_platform_io()
            platform.platform_get_clipboard_text_fn = lambda ctx: clipboard.get_clipboard_text()
            platform.platform_set_clipboard_text_fn = lambda ctx, text: clipboard.set_clipboard_text(text)

    def on_key_press(self, symbol, modifiers):
        self._key(symbol, True)

    def on_key_release(self, symbol, modifiers):
        self._key(symbol, False)

    def _key(self, symbol: int, down: bool) -> None:
        if symbol in self.keys:
            self.io.add_key_event(self.keys[symbol], down)
        if symbol in self.MODS:
            self.io.add_key_event(getattr(imgui.Key, self.MODS[symbol]), down)

    def on_text(self, text):
        for ch in text:
            self.io.add_input_character(ord(ch))

    def on_mouse_motion(self, x, y, dx, dy):
        self.io.add_mouse_pos_event(x, self.window_height() - y)

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        self.io.add_mouse_pos_event(x, self.window_height() - y)

    def on_mouse_press(self, x, y, button, modifiers):
        self.io.add_mouse_pos_event(x, self.window_height() - y)
        self._button(button, True)

    def on_mouse_release(self, x, y, button, modifiers):
        self._button(button, False)

    def _button(self, button: int, down: bool) -> None:
        index = {mouse.LEFT: 0, mouse.RIGHT: 1, mouse.MIDDLE: 2}.get(button)
        if index is not None:
            self.io.add_mouse_button_event(index, down)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        self.io.add_mouse_wheel_event(scroll_x, scroll_y)

    def on_mouse_leave(self, x, y):
        self.io.add_mouse_pos_event(-imgui.FLT_MAX, -imgui.FLT_MAX)
