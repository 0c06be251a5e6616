"""Draw the frame texture over the whole framebuffer: one attribute-less triangle (no vertex buffer).

The texture holds the frame with row 0 at the top (as the renderer writes it), so the shader flips v. At
scale 1 the texture is sampled NEAREST at texel centres, so the window shows the renderer's pixels exactly;
at a reduced render scale it is magnified LINEAR.
"""

from __future__ import annotations

import moderngl

VERTEX_SHADER = """
#version 330
out vec2 v_uv;
void main() {
    // (0,0) (2,0) (0,2) in uv: one triangle covering the [-1, 1] square
    vec2 uv = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    v_uv = vec2(uv.x, 1.0 - uv.y);  // texture row 0 is the top of the image
    gl_Position = vec4(uv * 2.0 - 1.0, 0.0, 1.0);
}
"""

FRAGMENT_SHADER = """
#version 330
uniform sampler2D frame;
in vec2 v_uv;
out vec4 color;
void main() {
    color = vec4(texture(frame, v_uv).rgb, 1.0);  // alpha is coverage, not window transparency
}
"""


class Presenter:
    """Owns the full-screen-triangle program; `draw(texture)` fills the bound framebuffer's viewport."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        self.program = ctx.program(vertex_shader=VERTEX_SHADER, fragment_shader=FRAGMENT_SHADER)
        self.vao = ctx.vertex_array(self.program, [])
        self.vao.vertices = 3

    def draw(self, texture: moderngl.Texture, viewport: tuple[int, int, int, int]) -> None:
        w, h = viewport[2], viewport[3]
        same_size = texture.size == (w, h)
        texture.filter = (moderngl.NEAREST, moderngl.NEAREST) if same_size else (moderngl.LINEAR, moderngl.LINEAR)
        texture.repeat_x = texture.repeat_y = False
        self.ctx.viewport = viewport
        self.ctx.disable(moderngl.BLEND | moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        texture.use(location=0)
        self.program["frame"] = 0
        self.vao.render(moderngl.TRIANGLES)

    def release(self) -> None:
        self.vao.release()
        self.program.release()
