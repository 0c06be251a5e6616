"""The desktop viewer: the only package that imports pyglet, moderngl, imgui_bundle and cuda-python.

pyglet options are set here, before any pyglet.window import: no shadow window (importing pyglet.window would
otherwise open a display connection, so a missing display could only fail at import), and no glGetError after
every pyglet GL call (moderngl does its own checks; pyglet's would also trip over errors moderngl leaves).
"""

import pyglet

pyglet.options["shadow_window"] = False
pyglet.options["debug_gl"] = False
