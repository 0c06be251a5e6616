"""Physical key positions, so W/A/S/D fly on AZERTY, Dvorak and other layouts too.

pyglet 2.1 hands key handlers a layout-dependent symbol (an X11 keysym on Linux) and no scancode. On X11 we
recover the physical position ourselves: for every key the viewer binds we ask the X server which keysym its
physical key (an evdev keycode, the same on every layout) produces in the active layout, and map that keysym
back to the US-QWERTY symbol at that position. Bindings are then written once, in QWERTY terms
(`key.W` means "the key left of the top-row third key", whatever it prints). On AZERTY the key printing Z
moves forward; on Dvorak the key printing comma does.

Elsewhere (Windows, macOS, headless) the map is the identity and keys act by symbol; a layout switch while the
viewer runs is picked up at the next start. `PhysicalKeys.from_x11` is the only X11-specific code.
"""

from __future__ import annotations

from collections.abc import Callable

from pyglet.window import key

# X11 keycode (= evdev scancode + 8) of each bindable key on a US-QWERTY keyboard.
QWERTY_KEYCODES: dict[int, int] = {
    **{sym: 10 + i for i, sym in enumerate(
        (key._1, key._2, key._3, key._4, key._5, key._6, key._7, key._8, key._9, key._0))},
    **{sym: 24 + i for i, sym in enumerate(
        (key.Q, key.W, key.E, key.R, key.T, key.Y, key.U, key.I, key.O, key.P))},
    key.BRACKETLEFT: 34, key.BRACKETRIGHT: 35,
    **{sym: 38 + i for i, sym in enumerate((key.A, key.S, key.D, key.F, key.G, key.H, key.J, key.K, key.L))},
    key.SEMICOLON: 47, key.APOSTROPHE: 48, key.GRAVE: 49, key.BACKSLASH: 51,
    **{sym: 52 + i for i, sym in enumerate((key.Z, key.X, key.C, key.V, key.B, key.N, key.M))},
    key.COMMA: 59, key.PERIOD: 60, key.SLASH: 61,
}  # fmt: skip


class PhysicalKeys:
    """Translates a layout symbol from a key event into the QWERTY symbol at the same physical position."""

    def __init__(self, layout_to_qwerty: dict[int, int] | None = None, *, source: str = "symbols"):
        self._map = dict(layout_to_qwerty or {})
        self.source = source  # "x11 keycodes" or "symbols" (identity), shown in the help panel

    def __call__(self, symbol: int) -> int:
        return self._map.get(symbol, symbol)

    def describe(self) -> str:
        if self.source == "symbols":
            return "keys act by the symbol they print (no keycodes on this platform)"
        return f"keys act by physical position ({self.source})"

    @classmethod
    def from_keysym_lookup(cls, keysym_of_keycode: Callable[[int], int], *, source: str) -> PhysicalKeys:
        """Build the map from a keycode -> keysym lookup of the active layout (level 0, unshifted)."""
        mapping: dict[int, int] = {}
        for qwerty_symbol, keycode in QWERTY_KEYCODES.items():
            sym = keysym_of_keycode(keycode)
            if not sym:
                continue
            if 0x41 <= sym <= 0x5A:  # pyglet reports letters lower case
                sym += 0x20
            if sym != qwerty_symbol:
                mapping[sym] = qwerty_symbol
        return cls(mapping, source=source)

    @classmethod
    def from_window(cls, window) -> PhysicalKeys:
        """The X11 map for a pyglet Xlib window; the identity on other platforms."""
        display = getattr(window, "_x_display", None)
        if display is None:
            return cls(source="symbols")
        from pyglet.libs.x11 import xlib

        return cls.from_keysym_lookup(
            lambda keycode: int(xlib.XKeycodeToKeysym(display, keycode, 0)), source="x11 keycodes"
        )
