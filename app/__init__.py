"""The desktop viewer: the only package that imports pyglet, moderngl, imgui_bundle and cuda-python."""
