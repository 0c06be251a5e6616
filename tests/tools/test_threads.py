"""The CPU thread policy (tools/threads.py): half the cores, at least one; OMP_NUM_THREADS wins; applied by
every `warpsplat` command before it renders."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tools.threads import available_cores, cpu_threads

# a command that exits at once (a missing scene) after the policy is applied, then reports torch's threads
PROBE = (
    "import json, torch; from tools.cli import main; code = main(['info', 'no-such-scene.ply']); "
    "print(json.dumps([code, torch.get_num_threads()]))"
)


def probe(env_threads: str | None) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if env_threads is not None:
        env["OMP_NUM_THREADS"] = env_threads
    env["CUDA_VISIBLE_DEVICES"] = ""  # the policy is for CPU rendering
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    code, threads = json.loads(r.stdout.strip().splitlines()[-1])
    return code, threads


@pytest.mark.parametrize("cores, threads", [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8), (64, 32)])
def test_half_the_cores_at_least_one(cores, threads):
    assert cpu_threads(cores) == threads


def test_commands_apply_the_policy():
    code, threads = probe(None)
    assert code == 2  # the missing scene, after the policy
    assert threads == cpu_threads(available_cores())


def test_omp_num_threads_wins():
    if available_cores() < 2:
        pytest.skip("torch caps OMP_NUM_THREADS at the core count: one core cannot tell the two apart")
    other = 2 if cpu_threads(available_cores()) == 1 else 1  # a count the policy would not pick
    assert probe(str(other)) == (2, other)
