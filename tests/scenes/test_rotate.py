"""Turning a scene so that a given axis points up (scenes/rotate.py, `convert --up`): colours seen along d before
are seen along R d after (checked with the renderer's own SH evaluation), covariances turn as R S R^T, and the
half turn for +y is SPZ's frame change."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.reference import eval_sh
from scenes import GaussianScene
from scenes.rotate import rotation_to_up, turn_up
from scenes.spz import flip_rub_rdf
from tests.analytic import covariance, quat_matrix
from tests.reliability.hostile import cloud

AXES = {"+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}


def covariances(scene: GaussianScene) -> torch.Tensor:
    """[N, 3, 3] R diag(exp(s))^2 R^T in float64, R from each quaternion's action (tests/analytic.py)."""
    R = quat_matrix(scene.quats.double().numpy())
    return torch.from_numpy(covariance(R, np.exp(scene.log_scales.double().numpy())))


@pytest.mark.parametrize("axis", list(AXES) + ["oblique"])
def test_turned_scene_looks_the_same_from_the_turned_views(axis):
    up = AXES.get(axis, (0.3, 0.5, -0.8))
    scene = cloud(200, degree=3, seed=1)
    R, _ = rotation_to_up(up)
    assert np.allclose(R @ (np.asarray(up) / np.linalg.norm(up)), [0, -1, 0]) and np.allclose(R @ R.T, np.eye(3))
    out = turn_up(scene, up)
    Rt = torch.as_tensor(R, dtype=torch.float64)
    assert torch.allclose(out.means.double(), scene.means.double() @ Rt.T, atol=1e-6)
    assert torch.allclose(covariances(out), Rt @ covariances(scene) @ Rt.T, atol=1e-7)
    dirs = torch.nn.functional.normalize(torch.randn(200, 3, generator=torch.Generator().manual_seed(2)), dim=1)
    before = eval_sh(scene.sh, dirs, 3)
    after = eval_sh(out.sh, (dirs.double() @ Rt.T).float(), 3)  # the same view, turned
    assert torch.allclose(before, after, atol=1e-5), (before - after).abs().max()
    assert out.up_axis == "-y" and torch.equal(out.log_scales, scene.log_scales)


def test_half_turn_for_plus_y_is_the_spz_frame_change():
    scene = cloud(50, degree=3)
    out = turn_up(scene, AXES["+y"])
    m, q, sh = scene.means.numpy().copy(), scene.quats.numpy().copy(), scene.sh.numpy().copy()
    flip_rub_rdf(m, q, sh)
    assert torch.equal(out.means, torch.from_numpy(m)) and torch.equal(out.sh, torch.from_numpy(sh))
    assert torch.equal(turn_up(scene, AXES["-y"]).sh, scene.sh)  # already up: nothing moves
