"""imgui's GL backend: draws `imgui.get_draw_data()` with moderngl.

`ImguiRenderer` owns the GL state imgui needs (program, buffers, the font atlas textures) and honours imgui's
texture requests, so the app needs no PyOpenGL and one context object does all GL (as moderngl-window does).
"""

from __future__ import annotations

import ctypes

import moderngl
import numpy as np
from imgui_bundle import imgui

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
