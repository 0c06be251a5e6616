"""Host-side helpers shared by the launchers."""

from __future__ import annotations

import os


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1): launchers then pick
    wide blocks, since the interpreter's cost is per executed op, not per element."""
    return os.environ.get("TRITON_INTERPRET") == "1"
