"""The README's Python example runs as written (on the bundled scene, at a small size, into a temporary folder),
and does what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from scenes import bundled_scene_path, load_scene

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block() -> str:
    text = README.read_text()
    section = text[text.index("## From Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_python_example_runs(tmp_path):
    code = python_block()
    assert "scene.ply" in code and "640, 480" in code and '"opaque.spz"' in code  # what is swapped below
    code = code.replace('"scene.ply"', repr(str(bundled_scene_path()))).replace("640, 480", "32, 24")
    code = code.replace('"opaque.spz"', repr(str(tmp_path / "opaque.spz")))
    names: dict = {}
    exec(compile(code, str(README), "exec"), names)  # noqa: S102 - the README's own example
    assert names["image"].shape == (24, 32, 3) and names["image"].dtype == torch.float32
    assert len(names["frames"]) == 8 and names["frames"][0].shape == (24, 32, 4)
    assert float(names["image"].min()) < 1.0 and float(names["image"].max()) > 0.9  # the scene on white
    written = load_scene(tmp_path / "opaque.spz")
    assert 0 < len(written) < len(names["scene"])
