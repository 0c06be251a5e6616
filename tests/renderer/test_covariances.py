"""prepare_covariances (quaternion and log-scales -> world covariance) against covariances worked out by hand
or built from rotations made another way (tests/analytic.py), never from the function's own formula."""

import math

import numpy as np
import pytest
import torch

from renderer import prepare_covariances
from tests.analytic import axis_angle_quat, covariance, elementary, hamilton, rodrigues, upper

SCALES = (0.5, 2.0, 3.0)  # distinct, so that every turn of the local axes shows in the covariance


def covars_of(quats, scales, scale_modifier: float = 1.0) -> np.ndarray:
    q = torch.tensor(np.asarray(quats, dtype=np.float64), dtype=torch.float32).reshape(-1, 4)
    log_s = torch.log(torch.tensor(scales, dtype=torch.float32)).expand(q.shape[0], 3)
    return prepare_covariances(q, log_s, scale_modifier).double().numpy()


def assert_cov(got: np.ndarray, want_3x3: np.ndarray) -> None:
    np.testing.assert_allclose(got, upper(want_3x3), rtol=2e-6, atol=2e-5)


H = math.sqrt(0.5)  # cos 45 deg = sin 45 deg: the half angle of a quarter turn


@pytest.mark.parametrize(
    "name,quat,diagonal",
    [
        # no rotation: the local axes are the world's, variances s^2 in order
        ("identity", (1, 0, 0, 0), (0.25, 4.0, 9.0)),
        # +90 deg about x takes local y to world +z and local z to world -y: y and z variances swap
        ("x quarter turn", (H, H, 0, 0), (0.25, 9.0, 4.0)),
        # +90 deg about y takes local z to world +x and local x to world -z
        ("y quarter turn", (H, 0, H, 0), (9.0, 4.0, 0.25)),
        # +90 deg about z takes local x to world +y and local y to world -x
        ("z quarter turn", (H, 0, 0, H), (4.0, 0.25, 9.0)),
        # a half turn about x flips y and z: variances unchanged
        ("x half turn", (0, 1, 0, 0), (0.25, 4.0, 9.0)),
    ],
)
def test_axis_scales_and_quarter_turns(name, quat, diagonal):
    assert_cov(covars_of(quat, SCALES)[0], np.diag(diagonal))


@pytest.mark.parametrize(
    "axis,angle",
    [((0, 0, 1), math.radians(30)), ((1, 2, 3), 0.7), ((-0.3, 0.5, 0.8), 2.5), ((1, -1, 0.2), -1.1)],
    ids=["z30deg", "axis123", "obtuse", "negative-angle"],
)
def test_axis_angle_rotations_by_rodrigues(axis, angle):
    """The quaternion (cos a/2, sin a/2 n) must give R diag(s^2) R^T with R from Rodrigues' formula. Unlike
    quarter turns, these are not their own transposes up to axis swaps: R^T S in place of R S fails here."""
    want = covariance(rodrigues(axis, angle), SCALES)
    q = axis_angle_quat(axis, angle)
    got = covars_of(np.stack([q, -q, 3.7 * q]), SCALES)  # -q is the same rotation; scale is normalised away
    for row in got:
        assert_cov(row, want)


def test_long_axis_turns_the_way_the_rotation_does():
    """A needle along local x, turned +30 deg about z, points at +30 deg in the world xy plane (towards +y):
    the rotation acts on the Gaussian (local -> world), it does not move the frame."""
    cov = covars_of(axis_angle_quat((0, 0, 1), math.radians(30)), (1.0, 0.01, 0.01))[0]
    S = np.array([[cov[0], cov[1], cov[2]], [cov[1], cov[3], cov[4]], [cov[2], cov[4], cov[5]]])
    w, v = np.linalg.eigh(S)
    long_axis = v[:, np.argmax(w)] * np.sign(v[0, np.argmax(w)])
    np.testing.assert_allclose(long_axis, [math.cos(math.radians(30)), math.sin(math.radians(30)), 0], atol=1e-4)
    assert cov[1] > 0, "xy covariance of a needle at +30 deg is positive"


def test_composed_elementary_rotations():
    """Z-Y-X Euler angles two ways: the product of the written-out axis matrices, and the Hamilton product
    of the three axis quaternions. Both must give the same covariance."""
    yaw, pitch, roll = 0.9, -0.4, 1.3
    R = elementary("z", yaw) @ elementary("y", pitch) @ elementary("x", roll)
    q = hamilton(hamilton(axis_angle_quat((0, 0, 1), yaw), axis_angle_quat((0, 1, 0), pitch)),
                 axis_angle_quat((1, 0, 0), roll))  # fmt: skip
    assert_cov(covars_of(q, SCALES)[0], covariance(R, SCALES))


def test_scale_modifier_scales_every_standard_deviation():
    """The modifier multiplies the standard deviations, so the covariance by its square."""
    q = axis_angle_quat((1, 2, 3), 0.7)
    want = covariance(rodrigues((1, 2, 3), 0.7), [0.4 * s for s in SCALES])
    assert_cov(covars_of(q, SCALES, scale_modifier=0.4)[0], want)
    assert_cov(covars_of((1, 0, 0, 0), SCALES, scale_modifier=2.0)[0], np.diag([1.0, 16.0, 36.0]))


def random_scene(n: int, seed: int = 0):
    from scenes import GaussianScene

    g = torch.Generator().manual_seed(seed)
    return GaussianScene(
        means=torch.randn(n, 3, generator=g), quats=torch.randn(n, 4, generator=g),
        log_scales=torch.randn(n, 3, generator=g) - 2.0, opacity_logits=torch.randn(n, generator=g),
        sh=torch.randn(n, 4, 3, generator=g),
    )  # fmt: skip


def test_renderer_prepares_its_copy_in_chunks_as_it_would_whole(monkeypatch):
    """Chunks of 7 of a 100-Gaussian scene (the load's temporaries bounded by the chunk): the same opacities,
    covariances and fp16 SH as activating and preparing the whole scene at once."""
    import renderer.prepare as prepare

    scene = random_scene(100)
    monkeypatch.setattr(prepare, "PREPARE_CHUNK", 7)
    means, opacities, sh, covars = prepare.prepare_scene(scene, torch.device("cpu"))
    act = scene.activated()
    assert torch.equal(means, scene.means) and sh.dtype == torch.float16 and torch.equal(sh, scene.sh.half())
    # within an ulp: torch's CPU kernels take a scalar path for a vector's worth of leftover elements, at the end
    # of every 7-row chunk here (on the GPU, elementwise results do not depend on the split)
    torch.testing.assert_close(opacities, act.opacities, rtol=2e-7, atol=0)
    torch.testing.assert_close(covars, prepare_covariances(scene.quats, scene.log_scales), rtol=2e-7, atol=1e-9)


def test_renderer_scales_its_covariances_by_the_modifier_and_back():
    """The renderer keeps no quaternions or log-scales to recompute covariances for a scale modifier: it scales
    the base ones by m^2, which equals recomputing them to float rounding, and returns to the very base ones."""
    from renderer import Renderer, RenderSettings

    scene = random_scene(50, seed=3)
    r = Renderer(scene, device="cpu", backend="torch")
    base = r.covars
    r._update_scale_modifier(1.6)
    want = prepare_covariances(scene.quats, scene.log_scales, 1.6)
    torch.testing.assert_close(r.covars, want, rtol=1e-6, atol=1e-7)
    r._update_scale_modifier(RenderSettings().scale_modifier)
    assert r.covars is base
    assert not hasattr(r, "_quats") and not hasattr(r, "_log_scales")


def test_a_new_scale_modifier_is_a_new_kind_of_frame():
    """A captured CUDA graph holds the covariances' address: a frame after the scale modifier changed must not be
    the kept frame of before (whose graph would replay the old covariances), so the covariances' version is part of
    the frame's kind, and each change makes a new one."""
    from renderer import Renderer, RenderSettings
    from renderer.paths import orbit_path

    scene = random_scene(50, seed=3)
    r = Renderer(scene, device="cpu", backend="torch")
    cam = orbit_path(scene, 32, 24, 2)[0]
    for m in (1.0, 1.6, 1.0):
        r.render(cam, RenderSettings(scale_modifier=m))
    versions = [kind.covars_version for _, kind in r.frames.frames]
    assert len(versions) == len(set(versions)) == 3
