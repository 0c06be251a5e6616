"""An X display for window tests and the viewer soak: the one set, or a private Xvfb for the duration."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator


class NoDisplay(RuntimeError):
    """DISPLAY is unset and no Xvfb could be started."""


@contextlib.contextmanager
def x_display() -> Iterator[str]:
    """Yield a usable DISPLAY; start Xvfb (the `xvfb` package) when none is set, and stop it afterwards."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    if shutil.which("Xvfb") is None:
        raise NoDisplay("DISPLAY is unset and Xvfb is not installed (apt-get install -y xvfb)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        raise NoDisplay("Xvfb did not start")
    os.environ["DISPLAY"] = f":{number}"
    try:
        yield os.environ["DISPLAY"]
    finally:
        del os.environ["DISPLAY"]
        proc.terminate()
        proc.wait(timeout=10)
