"""The packages depend one way: tools -> app -> renderer -> kernels, with scenes (the file formats) below the
renderer and kernels below everything. An import against that flow (a kernel reaching for the renderer, the
renderer for the viewer) would make a layer impossible to use or test without the ones above it; this test reads
every module's imports, the ones inside functions too, and fails on any such import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# each package and the project packages it may import (itself aside)
ALLOWED = {
    "kernels": set(),
    "scenes": set(),
    "renderer": {"kernels", "scenes"},
    "app": {"renderer", "scenes"},
    "tools": {"app", "renderer", "scenes", "kernels"},
}


def project_imports(path: Path) -> set[tuple[str, int]]:
    """(top-level project package, line) of every absolute import in the module at `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update((name.split(".")[0], node.lineno) for name in names if name.split(".")[0] in ALLOWED)
    return found


def test_imports_follow_the_layers():
    wrong = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for imported, line in sorted(project_imports(path)):
                if imported != package and imported not in allowed:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not wrong, "imports against tools -> app -> renderer -> kernels:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "source, found",
    [("import renderer.frame", {("renderer", 1)}), ("def f():\n    from app import window", {("app", 2)}),
     ("from .frame import Frame\nimport torch", set())],
)  # fmt: skip
def test_the_reader_sees_imports_anywhere_in_a_module(tmp_path, source, found):
    module = tmp_path / "m.py"
    module.write_text(source)
    assert project_imports(module) == found
