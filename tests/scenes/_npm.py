"""npm packages that the oracle tests run (splat-transform, the Khronos glTF validator, GaussianSplats3D), each
installed on first use into its own git-ignored folder under `.cache/`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def npm_env() -> dict[str, str]:
    """The environment for npm. Node ignores the system CA store; where a TLS-inspecting proxy signs the
    registry's certificates (as on the development and CI machines), npm then retries each request until it
    falls back to a stale cache, about 70 s a package. Point Node at the system bundle unless told otherwise."""
    env = dict(os.environ)
    if "NODE_EXTRA_CA_CERTS" not in env and os.path.exists(SYSTEM_CA_BUNDLE):
        env["NODE_EXTRA_CA_CERTS"] = SYSTEM_CA_BUNDLE
    return env


def npm_install(name: str, packages: list[str], installed: str) -> Path:
    """`.cache/<name>/node_modules`, where `packages` (npm specs) are installed unless `installed` (a path in it)
    already exists. A lock keeps parallel test workers from installing together."""
    prefix = REPO / ".cache" / name
    prefix.mkdir(parents=True, exist_ok=True)
    modules = prefix / "node_modules"
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (modules / installed).exists():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError(f"npm not found: Node 20 + npm are needed for {', '.join(packages)}")
            subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                            *packages], check=True, timeout=600, env=npm_env())  # fmt: skip
    return modules
