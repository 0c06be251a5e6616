"""Shared test set-up.

TRITON_INTERPRET=1 is set here, before any kernel module is imported, and only when no CUDA device is
present: the same tests compile the kernels for real on the GPU machine.

Real scene files: the bundled ones (tests/data, and the package's plant.splat) are always there; the others
come from $WARPSPLAT_SCENES alone (set it to a folder of them to run those tests), and the tests that need them are
skipped where it is not set. Nothing outside the repository is looked for: a user's clone has nothing beside it.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    # One torch thread per test process. `make test` runs a process per core (pytest -n 2 on 2 cores), and torch's
    # default of a thread per core then puts two threads on each core: they spin at every op's barrier while the
    # descheduled one waits its turn (tools/threads.py). The AdaGScale sweep's test took 250 s that way on a busy
    # 2-core machine, and 12 s with one thread.
    torch.set_num_threads(1)

import pytest  # noqa: E402

from tools.metrics import psnr  # noqa: E402, F401  (tests/kernels import it from here)

REPO = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DATA = REPO / "tests" / "data"  # the test files whose licences let them be bundled (tests/data/CREDITS.md)
PACKAGE_DATA = REPO / "scenes" / "data"  # the package's own scene, plant.splat


def _in_bundle(name: str) -> Path | None:
    return next((folder / name for folder in (DATA, PACKAGE_DATA) if (folder / name).is_file()), None)


def bundled(name: str) -> Path:
    """A bundled test file by name: in tests/data, or the package's scene (fails if missing: it is committed)."""
    path = _in_bundle(name)
    if path is None:
        raise FileNotFoundError(f"bundled test file {name} not found in {DATA} or {PACKAGE_DATA}")
    return path


def unbundled_scenes() -> Path | None:
    """The folder of the real scenes that may not be bundled (biker.* and the files of unstated licence, per its
    SOURCES.md): $WARPSPLAT_SCENES where it names a folder (the GPU machine's staged scenes, or a developer's
    choice), else None, as on a user's clone and in CI: the tests never look outside the repository on their own."""
    env = os.environ.get("WARPSPLAT_SCENES")
    return Path(env) if env and Path(env).is_dir() else None


def scenes_dir(what: str = "the unbundled real scenes") -> Path:
    """unbundled_scenes(), or the calling test is skipped, saying that it needs `what`."""
    found = unbundled_scenes()
    if found is None:
        pytest.skip(f"needs {what}: set WARPSPLAT_SCENES to a folder of the real scenes")
    return found


def real_scene(name: str) -> Path:
    """The path of a real scene file by name: the bundled copy where there is one, else the file in scenes_dir()
    (the test is skipped where that folder is missing, and fails where the folder lacks the file)."""
    path = _in_bundle(name) or scenes_dir(f"{name}, which may not be bundled") / name
    if not path.is_file():
        raise FileNotFoundError(f"real scene {name} not found in {path.parent}")
    return path


@pytest.fixture
def scene_path():
    """scene_path("plant.splat") -> Path of a real scene file (see real_scene)."""
    return real_scene


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that read real scene files `data`: the clean-clone check (tests/clean_clone.sh) runs
    them from a clone with nothing beside it, where the bundled files must do and the others skip."""
    readers = (bundled, real_scene, scenes_dir)
    for item in items:
        module = getattr(item, "module", None)
        helpers = vars(module).values() if module is not None else ()
        if "scene_path" in getattr(item, "fixturenames", ()) or any(v in readers for v in helpers):
            item.add_marker("data")


@pytest.fixture
def device() -> str:
    return DEVICE


def nan_like(t: torch.Tensor) -> torch.Tensor:
    """A buffer of t's shape/dtype poisoned so unwritten elements fail comparisons (NaN; 0xFF.. for ints)."""
    out = torch.empty_like(t)
    if out.dtype.is_floating_point:
        out.fill_(float("nan"))
    else:
        out.fill_(-1 if out.dtype != torch.uint8 else 255)
    return out
