"""The overlay: imgui-bundle + implot panels drawn through moderngl.

Three parts, as moderngl-window splits them:
- `ImguiRenderer` owns the GL state imgui needs (program, buffers, the font atlas textures) and draws
  `imgui.get_draw_data()` with moderngl, so the app needs no PyOpenGL and one context object does all GL.
- `ImguiInput` is a pyglet handler object feeding mouse, keys and text to imgui; it never consumes events:
  the camera controller asks `wants_mouse()` / `wants_keyboard()` before acting.
- `Overlay` builds the panels from `ViewerState`: frame time/FPS history, per-stage times of the previous
  frame, counts, the settings that apply at once, the camera and path tools, and the help panel.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import moderngl
import numpy as np
from imgui_bundle import imgui, implot
from pyglet.window import key, mouse

from .state import RENDER_MODE_LABELS, RENDER_MODES, ViewerState

VERTEX_SHADER = """
#version 330
uniform mat4 projection;
in vec2 position;
in vec2 uv;
in vec4 color;
out vec2 v_uv;
out vec4 v_color;
void main() {
    v_uv = uv;
    v_color = color;
    gl_Position = projection * vec4(position, 0.0, 1.0);
}
"""

FRAGMENT_SHADER = """
#version 330
uniform sampler2D atlas;
in vec2 v_uv;
in vec4 v_color;
out vec4 out_color;
void main() {
    out_color = v_color * texture(atlas, v_uv);
}
"""


class ImguiRenderer:
    """Draws imgui draw data with moderngl; honours imgui's texture requests (RendererHasTextures)."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        self.io = imgui.get_io()
        self.program = ctx.program(vertex_shader=VERTEX_SHADER, fragment_shader=FRAGMENT_SHADER)
        self.vbo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self.ibo = ctx.buffer(reserve=1 << 14, dynamic=True)
        # imgui's vertex: pos 2 f32, uv 2 f32, colour 4 u8 (normalised)
        assert imgui.VERTEX_SIZE == 20, imgui.VERTEX_SIZE
        self.vao = ctx.vertex_array(
            self.program, [(self.vbo, "2f 2f 4f1", "position", "uv", "color")],
            index_buffer=self.ibo, index_element_size=imgui.INDEX_SIZE,
        )  # fmt: skip
        self.textures: dict[int, moderngl.Texture] = {}  # glo -> texture
        self.io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        max_size = ctx.info["GL_MAX_TEXTURE_SIZE"]
        imgui.get_platform_io().renderer_texture_max_width = max_size
        imgui.get_platform_io().renderer_texture_max_height = max_size

    # ------------------------------------------------------------------ textures

    def _update_texture(self, tex) -> None:
        status = tex.status
        if status == imgui.ImTextureStatus.want_create:
            pixels = np.asarray(tex.get_pixels_array()).reshape(tex.height, tex.width, 4)
            texture = self.ctx.texture((tex.width, tex.height), 4, pixels.tobytes())
            texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
            self.textures[texture.glo] = texture
            tex.set_tex_id(texture.glo)
            tex.status = imgui.ImTextureStatus.ok
        elif status == imgui.ImTextureStatus.want_updates:
            texture = self.textures[tex.tex_id]
            pixels = np.asarray(tex.get_pixels_array()).reshape(tex.height, tex.width, 4)
            for r in tex.updates:
                block = np.ascontiguousarray(pixels[r.y : r.y + r.h, r.x : r.x + r.w])
                texture.write(block.tobytes(), viewport=(r.x, r.y, r.w, r.h))
            tex.status = imgui.ImTextureStatus.ok
        elif status == imgui.ImTextureStatus.want_destroy:
            texture = self.textures.pop(tex.tex_id, None)
            if texture is not None:
                texture.release()
            tex.set_tex_id(0)
            tex.status = imgui.ImTextureStatus.destroyed

    def _update_textures(self) -> None:
        for tex in imgui.get_platform_io().textures:
            if tex.status != imgui.ImTextureStatus.ok:
                self._update_texture(tex)

    # ------------------------------------------------------------------ drawing

    def render(self, draw_data, framebuffer: moderngl.Framebuffer) -> None:
        self._update_textures()
        width, height = self.io.display_size
        sx, sy = self.io.display_framebuffer_scale
        fb_w, fb_h = int(width * sx), int(height * sy)
        if fb_w <= 0 or fb_h <= 0:
            return
        draw_data.scale_clip_rects(self.io.display_framebuffer_scale)
        framebuffer.use()
        ctx = self.ctx
        ctx.viewport = (0, 0, fb_w, fb_h)
        ctx.enable_only(moderngl.BLEND)
        ctx.blend_equation = moderngl.FUNC_ADD
        ctx.blend_func = (
            moderngl.SRC_ALPHA,
            moderngl.ONE_MINUS_SRC_ALPHA,
            moderngl.ONE,
            moderngl.ONE_MINUS_SRC_ALPHA,
        )
        self.program["projection"].write(
            np.array(
                [[2.0 / width, 0, 0, 0], [0, -2.0 / height, 0, 0], [0, 0, -1, 0], [-1, 1, 0, 1]], dtype="f4"
            ).tobytes()
        )
        self.program["atlas"] = 0
        for commands in draw_data.cmd_lists:
            vtx_bytes = commands.vtx_buffer.size() * imgui.VERTEX_SIZE
            idx_bytes = commands.idx_buffer.size() * imgui.INDEX_SIZE
            self._write(self.vbo, commands.vtx_buffer.data_address(), vtx_bytes)
            self._write(self.ibo, commands.idx_buffer.data_address(), idx_bytes)
            for command in commands.cmd_buffer:
                texture = self.textures.get(command.tex_ref.get_tex_id())
                if texture is None:
                    continue
                texture.use(location=0)
                x0, y0, x1, y1 = command.clip_rect
                ctx.scissor = (int(x0), int(fb_h - y1), int(x1 - x0), int(y1 - y0))
                self.vao.render(moderngl.TRIANGLES, vertices=command.elem_count, first=command.idx_offset)
        ctx.scissor = None
        ctx.disable(moderngl.BLEND)

    @staticmethod
    def _write(buffer: moderngl.Buffer, address: int, nbytes: int) -> None:
        if nbytes > buffer.size:
            buffer.orphan(max(nbytes, 2 * buffer.size))
        buffer.write(ctypes.string_at(address, nbytes))

    def release(self) -> None:
        for tex in imgui.get_platform_io().textures:
            if tex.ref_count == 1 and tex.status == imgui.ImTextureStatus.ok:
                tex.status = imgui.ImTextureStatus.want_destroy
                self._update_texture(tex)
        for texture in self.textures.values():
            texture.release()
        self.textures.clear()
        self.vao.release()
        self.vbo.release()
        self.ibo.release()
        self.program.release()


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


class ImguiInput:
    """pyglet handlers feeding imgui's IO. Returns None everywhere so events reach the other handlers."""

    MODS = {
        key.LCTRL: "mod_ctrl", key.RCTRL: "mod_ctrl", key.LSHIFT: "mod_shift", key.RSHIFT: "mod_shift",
        key.LALT: "mod_alt", key.RALT: "mod_alt",
    }  # fmt: skip

    def __init__(self, window_height: Callable[[], int]):
        self.io = imgui.get_io()
        self.window_height = window_height
        self.keys = _imgui_keys()

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


FPS_LINES = (60, 120, 240)


class Overlay:
    """Builds the panels each frame from `state`; changes go back into `state` (and mark it dirty).

    Args:
        state: the shared viewer state.
        scene_sh_degree: the scene's SH degree (upper end of the SH slider).
        controller: the camera controller (mode, speed, keyframes, snaps), or None.
        help_rows: (keys, action) rows for the help panel.
    """

    def __init__(self, state: ViewerState, *, scene_sh_degree: int, controller=None,
                 help_rows: Sequence[tuple[str, str]] = ()):  # fmt: skip
        self.state = state
        self.scene_sh_degree = scene_sh_degree
        self.controller = controller
        self.help_rows = list(help_rows)

    def build(self) -> None:
        """Emit this frame's panels (between imgui.new_frame() and imgui.render())."""
        if self.state.show_overlay:
            self._stats_panel()
            self._settings_panel()
        if self.state.show_help:
            self._help_panel()

    # ------------------------------------------------------------------ panels

    def _stats_panel(self) -> None:
        s = self.state
        imgui.set_next_window_pos((8, 8), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size((330, 0), imgui.Cond_.first_use_ever)
        imgui.set_next_window_bg_alpha(0.75)
        imgui.begin("Performance", flags=imgui.WindowFlags_.always_auto_resize)
        frame = np.asarray(s.frame_ms, dtype=np.float64)
        if frame.size:
            ms = float(np.median(frame[-30:]))
            imgui.text(f"{1000.0 / max(ms, 1e-6):7.1f} FPS   {ms:7.2f} ms / window frame")
        if s.render_ms:
            imgui.text(f"render {s.render_ms[-1]:8.2f} ms   at {s.render_size[0]}x{s.render_size[1]}")
        if frame.size and implot.begin_plot("##frame times", (380, 130), flags=implot.Flags_.no_menus):
            implot.setup_axes("", "ms")
            implot.setup_legend(implot.Location_.east, implot.LegendFlags_.outside)
            top = max(20.0, float(np.percentile(frame, 95)) * 1.3)
            implot.setup_axis_limits(implot.ImAxis_.x1, 0, s.frame_ms.maxlen or frame.size, implot.Cond_.always)
            implot.setup_axis_limits(implot.ImAxis_.y1, 0, top, implot.Cond_.always)
            implot.plot_line("frame", np.ascontiguousarray(frame))
            if s.render_ms and s.render_ms[-1] < top:  # renders of seconds (CPU) would flatten the graph
                implot.plot_line("render", np.asarray(s.render_ms, dtype=np.float64))
            for fps in FPS_LINES:
                implot.plot_inf_lines(f"{fps} FPS", np.array([1000.0 / fps]),
                                      implot.Spec(flags=implot.InfLinesFlags_.horizontal))  # fmt: skip
            implot.end_plot()
        if s.stage_ms:
            imgui.text("previous frame, per stage (ms):")
            for name, ms in s.stage_ms.items():
                imgui.text(f"  {name:<10s}{ms:9.3f}")
        st = s.stats
        if st is not None:
            fmt = lambda v: "n/a" if v is None or v < 0 else f"{v:,}"  # noqa: E731
            imgui.text(f"Gaussians  {st.n_gaussians:,} total, {fmt(st.n_visible)} visible")
            imgui.text(f"pairs      {fmt(st.n_pairs)}   longest tile list {fmt(st.max_tile_pairs)}")
            if st.n_projected >= 0 and st.n_projected != st.n_gaussians:
                imgui.text(f"projected  {st.n_projected:,} (temporal window)")
        t = s.temporal
        if t and (s.settings.temporal_window > 1 or s.settings.occlusion_cull):
            imgui.text(f"temporal   window hits {100 * t['window_hit_rate']:.0f}%, {t['window_builds']} builds")
            if s.settings.occlusion_cull:
                imgui.text(f"occlusion  {t['occlusion_refreshes']} refreshes, {t['gaussians_skipped']:,} skipped")
        imgui.text(f"display    {s.display_path}")
        imgui.text(f"renderer   {s.render_device}")
        if s.message:
            imgui.text_wrapped(s.message)
        imgui.end()

    def _settings_panel(self) -> None:
        s = self.state
        right = imgui.get_io().display_size.x - 8
        imgui.set_next_window_pos((right, 8), imgui.Cond_.first_use_ever, (1.0, 0.0))
        imgui.set_next_window_bg_alpha(0.75)
        imgui.begin("Settings", flags=imgui.WindowFlags_.always_auto_resize)
        changed = False
        cur = self.scene_sh_degree if s.settings.sh_degree is None else s.settings.sh_degree
        c, v = imgui.slider_int("SH degree", cur, 0, self.scene_sh_degree)
        if self.scene_sh_degree == 0:
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
        rasterizers = ["auto", "scalar", "batched"]
        c, v = imgui.combo("rasterizer loop", rasterizers.index(s.settings.rasterizer), rasterizers)
        if c:
            s.settings.rasterizer, changed = rasterizers[v], True
        # the renderer's switches (RenderSettings): each applies at the next frame
        c, v = imgui.checkbox("AdaGScale (lossy)", s.settings.adagscale)
        if c:
            s.settings.adagscale, changed = v, True
        if s.settings.adagscale:
            c, v = imgui.slider_float("AdaGScale tau", s.settings.adagscale_tau, 0.0, 10.0, "%.3f",
                                      imgui.SliderFlags_.logarithmic)  # fmt: skip
            if c:
                s.settings.adagscale_tau, changed = max(v, 0.0), True
        c, v = imgui.checkbox("temporal window (near-exact)", s.settings.temporal_window > 1)
        if c:
            s.settings.temporal_window, changed = (8 if v else 0), True
        if s.settings.temporal_window > 1:
            c, v = imgui.slider_int("window frames", s.settings.temporal_window, 2, 32)
            if c:
                s.settings.temporal_window, changed = v, True
        c, v = imgui.checkbox("occlusion culling (lossy)", s.settings.occlusion_cull)
        if c:
            s.settings.occlusion_cull, changed = v, True
        if s.settings.occlusion_cull:
            c, v = imgui.slider_int("refresh every", s.settings.occlusion_refresh, 1, 64)
            if c:
                s.settings.occlusion_refresh, changed = v, True
        c, v = imgui.checkbox("vsync", s.vsync)
        if c:
            s.vsync = v
        if changed:
            s.mark_dirty()
        ctl = self.controller
        if ctl is not None:
            imgui.separator()
            imgui.text(f"camera: {ctl.mode} mode, speed {ctl.speed:.3g} units/s")
            imgui.text(f"training cameras: {len(ctl.training_cameras)}   keyframes: {len(ctl.keyframes)}")
            if imgui.button("add keyframe"):
                ctl.add_keyframe()
            imgui.same_line()
            if imgui.button("stop" if ctl.playing else "play"):
                ctl.toggle_playback()
            imgui.same_line()
            if imgui.button("save path"):
                ctl.save_keyframes()
        imgui.end()

    def _help_panel(self) -> None:
        size = imgui.get_io().display_size
        imgui.set_next_window_pos((size.x * 0.5, size.y - 8), imgui.Cond_.first_use_ever, (0.5, 1.0))
        imgui.set_next_window_bg_alpha(0.85)
        imgui.begin("Keys", flags=imgui.WindowFlags_.always_auto_resize)
        for keys, action in self.help_rows:
            imgui.text(f"{keys:<16s} {action}")
        imgui.end()
