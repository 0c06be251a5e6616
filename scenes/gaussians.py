"""The canonical in-memory scene: row-aligned tensors of N Gaussians in the trainer's raw form.

Values are stored *pre-activation*, exactly as the INRIA PLY stores them, so PLY round trips are
bit-exact. Activation (quaternion normalisation, exp of log-scales, sigmoid of opacity logits) happens
in one place only: `GaussianScene.activated()`.

Frames: positions are in the scene file's own world frame (for INRIA/COLMAP-trained scenes: +Y down,
so "up" is -Y). `up_axis` records the hint a reader had; the renderer's default camera uses it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor

SH_C0 = 0.28209479177387814  # Y_0^0 = 1 / (2 sqrt(pi)); base colour = 0.5 + SH_C0 * f_dc

# A logit for an opacity of exactly 1 (or 0) would be infinite; readers of activated formats clamp to this.
MAX_OPACITY_LOGIT = 16.0  # sigmoid(16) = 1 - 1.1e-7, indistinguishable from 1 in float32 blending

# What `invalid_mask` rejects, for the one warning (or error) that counts the rejected Gaussians.
INVALID_WHAT = "NaN/inf, or a scale, position or quaternion whose square overflows float32, or a zero quaternion"

# The largest log-scale whose covariance is finite in float32. The renderer builds the 3D covariance once at load,
# in float32 (renderer/prepare.py, prepare_covariances): s = exp(log_scale), M = R diag(s), Sigma = M M^T, so each
# entry Sigma_ik = sum_j R_ij R_kj s_j^2. The rows of R are unit vectors, so |Sigma_ik| <= max_j s_j^2, with
# equality on the diagonal when R has a 1 in that column (an axis-aligned Gaussian), and every partial sum is
# bounded by the same (|R_ij R_kj| <= (R_ij^2 + R_kj^2) / 2 sums to at most 1 over j). Hence Sigma is finite for
# every rotation exactly when max s^2 <= FLT_MAX, i.e. log_scale <= ln(FLT_MAX) / 2 = 88.7228 / 2 = 44.3614.
# Above it an axis-aligned Gaussian's Sigma holds inf: its projection is inf - inf = NaN and it is never drawn
# (exp alone stays finite up to 88.72, which is why the old bound, exp(log_scale) = inf, let 44.4-88.7 through).
# The constant keeps 1e-3 below the boundary (0.2% of s^2) for the rounding of exp, of the products and of R's
# row norms (a few float32 ulps), and is a float32 value itself (44.36042), as the log-scales it is compared with.
# The projected 2D covariance J Sigma J^T and its determinant square again through the Jacobian J (f / z pixels
# per unit): whether they stay finite depends on the camera, not the file.
MAX_LOG_SCALE = float(np.float32(0.5 * math.log(torch.finfo(torch.float32).max) - 1e-3))

MASK_CHUNK_ROWS = 1 << 16  # rows per step of invalid_mask / drop_invalid: bounds their temporaries


class SceneFormatError(ValueError):
    """A scene file (or in-memory scene) is structurally unusable. The message names the file and field."""


def sh_degree_from_coeffs(k: int) -> int:
    """Number of SH coefficients per channel K = (degree+1)^2 -> degree."""
    degree = int(round(math.sqrt(k))) - 1
    if degree < 0 or (degree + 1) ** 2 != k:
        raise ValueError(f"{k} SH coefficients per channel is not (degree+1)^2")
    return degree


def logit(p: Tensor) -> Tensor:
    """Inverse sigmoid, clamped so opacities of exactly 0 or 1 give finite logits."""
    return torch.logit(p.clamp(0.0, 1.0)).clamp(-MAX_OPACITY_LOGIT, MAX_OPACITY_LOGIT)


# `logit(byte / 255)` for every byte: formats that store alpha in 8 bits look their logits up (the same values,
# without computing a logarithm per Gaussian).
_ALPHA8_LOGITS = logit(torch.arange(256, dtype=torch.float32) / 255.0).numpy()


def logit_alpha8(alpha: np.ndarray) -> Tensor:
    """[N] opacity logits of 8-bit alphas (uint8, opacity = byte / 255), as `logit` gives them."""
    return torch.from_numpy(_ALPHA8_LOGITS[alpha])


@dataclass
class ActivatedGaussians:
    """Post-activation parameters, the form gsplat's `rasterization()` takes."""

    means: Tensor  # [N, 3] world positions
    quats: Tensor  # [N, 4] unit quaternions (w, x, y, z)
    scales: Tensor  # [N, 3] linear standard deviations along the local axes
    opacities: Tensor  # [N] in (0, 1)
    sh: Tensor  # [N, K, 3] SH coefficients, coefficient-major


@dataclass
class GaussianScene:
    """N Gaussians as row-aligned tensors, raw (pre-activation) values.

    Attributes:
        means: [N, 3] float32 centres in the world frame.
        quats: [N, 4] float32 rotations (w, x, y, z), as stored (not necessarily unit length).
        log_scales: [N, 3] float32 natural-log standard deviations.
        opacity_logits: [N] float32 pre-sigmoid opacities.
        sh: [N, K, 3] float32 SH coefficients, coefficient-major (sh[:, 0] is f_dc), K = (degree+1)^2.
        source_format: short name of the format the scene was read from ("ply", "splat", ...).
        up_axis: the world "up" direction hint, "-y" for INRIA/COLMAP scenes.
        antialiased: trained with the Mip-Splatting 2D filter (opacity compensation); carried through.
        extras: format details worth showing in `warpsplat info` (never needed for rendering).
    """

    means: Tensor
    quats: Tensor
    log_scales: Tensor
    opacity_logits: Tensor
    sh: Tensor
    source_format: str = "memory"
    up_axis: str = "-y"
    antialiased: bool = False
    extras: dict = field(default_factory=dict)

    @classmethod
    def allocate(cls, n: int, sh_coeffs: int, **meta) -> GaussianScene:
        """N Gaussians with uninitialised float32 tensors (CPU), for readers that decode into the final arrays
        chunk by chunk rather than building each field whole and copying it; they `validate()` when done."""
        f32 = torch.float32
        empty = lambda *shape: torch.empty(shape, dtype=f32)  # noqa: E731
        return cls(empty(n, 3), empty(n, 4), empty(n, 3), empty(n), empty(n, sh_coeffs, 3), **meta)

    # ---------------------------------------------------------------- basic properties

    def __len__(self) -> int:
        return int(self.means.shape[0])

    @property
    def sh_degree(self) -> int:
        return sh_degree_from_coeffs(int(self.sh.shape[1]))

    @property
    def device(self) -> torch.device:
        return self.means.device

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors())

    def _tensors(self) -> tuple[Tensor, ...]:
        return (self.means, self.quats, self.log_scales, self.opacity_logits, self.sh)

    # ---------------------------------------------------------------- checks

    def validate(self) -> GaussianScene:
        """Check shapes, dtypes and row alignment; raise SceneFormatError naming the offending field.

        Only structure is checked here (cheap, no device sync). Bad *values* are handled by
        `drop_invalid()`, which readers call once at load.
        """
        n = self.means.shape[0] if self.means.dim() == 2 else -1
        expect = {
            "means": (n, 3),
            "quats": (n, 4),
            "log_scales": (n, 3),
            "opacity_logits": (n,),
        }
        for name, shape in expect.items():
            t = getattr(self, name)
            if not isinstance(t, Tensor):
                raise SceneFormatError(f"{self.source_format} scene: field {name} is not a tensor")
            if tuple(t.shape) != shape:
                raise SceneFormatError(
                    f"{self.source_format} scene: field {name} has shape {tuple(t.shape)}, expected {shape}"
                )
        if self.sh.dim() != 3 or self.sh.shape[0] != n or self.sh.shape[2] != 3:
            raise SceneFormatError(
                f"{self.source_format} scene: field sh has shape {tuple(self.sh.shape)}, expected ({n}, K, 3)"
            )
        try:
            degree = self.sh_degree
        except ValueError as e:
            raise SceneFormatError(f"{self.source_format} scene: field sh: {e}") from None
        if degree > 3:
            raise SceneFormatError(f"{self.source_format} scene: SH degree {degree} > 3 is not supported")
        for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
            t = getattr(self, name)
            if t.dtype != torch.float32:
                raise SceneFormatError(
                    f"{self.source_format} scene: field {name} has dtype {t.dtype}, expected float32"
                )
            if t.device != self.means.device:
                raise SceneFormatError(
                    f"{self.source_format} scene: field {name} is on {t.device}, means on {self.means.device}"
                )
        if n == 0:
            raise SceneFormatError(f"{self.source_format} scene: holds no Gaussians")
        return self

    def invalid_mask(self) -> Tensor:
        """[N] bool: rows that cannot be rendered, because a value is NaN/inf or its activation is not finite.

        That is: any NaN or infinite value; a log-scale above MAX_LOG_SCALE (44.36: the square of its exp, the
        covariance, overflows float32) or a linear scale <= 0 (log-scale -inf / NaN); a position whose squared
        distance from the origin overflows float32 (about 1.8e19 and beyond); a quaternion that cannot be
        normalised in float32 (its squared norm is below the smallest normal float32 or overflows).

        An infinite opacity logit is not invalid (see `drop_invalid`): it must be clamped before this check.
        """
        # NOTE row sums first: NaN/inf propagate through a sum, so one reduction per field finds every
        # candidate row without a full-size bool tensor (a 1M-row SH3 mask took 0.7 s of a 1.5 s PLY load
        # on the 2-core CPU machine; the sums take 0.07 s). Candidates are then checked exactly, since a sum of
        # huge finite values can overflow. A linear scale <= 0 reads as a log-scale of -inf / NaN.
        # Rows are processed MASK_CHUNK_ROWS at a time, so the temporaries are a few MB whatever N is.
        n = len(self)
        bad = torch.empty(n, dtype=torch.bool, device=self.means.device)
        f32 = torch.finfo(torch.float32)
        for a in range(0, n, MASK_CHUNK_ROWS):
            b = min(n, a + MASK_CHUNK_ROWS)
            fields = [t[a:b].reshape(b - a, -1) for t in self._tensors()]
            chunk = ~torch.isfinite(sum(t.sum(1, dtype=torch.float32) for t in fields))
            if bool(chunk.any()):  # init-only sync, once per chunk
                rows = chunk.nonzero()[:, 0]
                exact = torch.zeros(len(rows), dtype=torch.bool, device=bad.device)
                for t in fields:
                    exact |= ~torch.isfinite(t[rows]).all(1)
                chunk[rows] = exact
            quat_norm2 = self.quats[a:b].square().sum(1)
            chunk |= (quat_norm2 < f32.tiny) | torch.isinf(quat_norm2)
            chunk |= self.log_scales[a:b].amax(1) > MAX_LOG_SCALE
            chunk |= torch.isinf(self.means[a:b].square().sum(1))
            bad[a:b] = chunk
        return bad

    def drop_invalid(self, *, name: str = "scene", in_place: bool = False) -> GaussianScene:
        """Clamp infinite opacity logits and drop individually bad Gaussians (`invalid_mask`), with one warning
        giving their count.

        An opacity logit of +inf or -inf is an opacity of exactly 1 or 0 (splat-transform writes them so): it
        is clamped to +-MAX_OPACITY_LOGIT, never dropped.

        With `in_place`, kept rows are compacted inside this scene's own tensors (no second copy of the scene;
        readers use it on the scene they just built) and the result's tensors are views of their first rows;
        otherwise this scene is left untouched and the result is a new copy.

        Raises SceneFormatError if every Gaussian is bad (an empty scene is not a scene).
        """
        scene = self
        if bool(torch.isinf(self.opacity_logits).any()):  # init-only sync
            clamped = self.opacity_logits.nan_to_num(nan=math.nan, posinf=MAX_OPACITY_LOGIT, neginf=-MAX_OPACITY_LOGIT)
            scene = replace(self, opacity_logits=clamped, extras=dict(self.extras))
        bad = scene.invalid_mask()
        n_bad = int(bad.sum())  # init-only sync: never call per frame
        if n_bad == 0:
            return scene
        if n_bad == len(scene):
            raise SceneFormatError(f"{name}: all {n_bad:,} Gaussians have invalid values ({INVALID_WHAT})")
        warnings.warn(
            f"{name}: dropped {n_bad:,} of {len(scene):,} Gaussians with invalid values ({INVALID_WHAT})",
            stacklevel=2,
        )
        keep = (~bad).nonzero()[:, 0]
        return scene._compact(keep) if in_place else scene.subset(keep)

    def _compact(self, keep: Tensor) -> GaussianScene:
        """Move rows `keep` (increasing indices) to the front of each tensor, chunk by chunk, in place.

        Safe in place: keep[i] >= i, so the rows a chunk reads are at or after the rows already written.
        """
        m = len(keep)
        out = {}
        for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
            t = getattr(self, name)
            for a in range(0, m, MASK_CHUNK_ROWS):
                b = min(m, a + MASK_CHUNK_ROWS)
                t[a:b] = t[keep[a:b]]
            out[name] = t[:m]
        return replace(self, **out, extras=dict(self.extras))

    # ---------------------------------------------------------------- transforms

    def subset(self, index: Tensor) -> GaussianScene:
        """Rows selected by a bool mask or an index tensor; metadata is kept."""
        return replace(
            self,
            means=self.means[index],
            quats=self.quats[index],
            log_scales=self.log_scales[index],
            opacity_logits=self.opacity_logits[index],
            sh=self.sh[index],
            extras=dict(self.extras),
        )

    def to(self, device: torch.device | str) -> GaussianScene:
        return replace(
            self,
            means=self.means.to(device),
            quats=self.quats.to(device),
            log_scales=self.log_scales.to(device),
            opacity_logits=self.opacity_logits.to(device),
            sh=self.sh.to(device),
        )

    def with_sh_degree(self, degree: int) -> GaussianScene:
        """Keep SH bands up to `degree` (dropping bands; never invents them)."""
        if not 0 <= degree <= self.sh_degree:
            raise ValueError(f"sh degree {degree} not in [0, {self.sh_degree}]")
        return replace(self, sh=self.sh[:, : (degree + 1) ** 2].contiguous())

    # ---------------------------------------------------------------- the one activation

    def activated(self) -> ActivatedGaussians:
        """The one place where raw values are activated: normalise, exp, sigmoid."""
        return ActivatedGaussians(
            means=self.means,
            quats=torch.nn.functional.normalize(self.quats, dim=1),
            scales=torch.exp(self.log_scales),
            opacities=torch.sigmoid(self.opacity_logits),
            sh=self.sh,
        )

    # ---------------------------------------------------------------- summaries

    def bounds(self) -> tuple[Tensor, Tensor]:
        """(min [3], max [3]) of the means."""
        return self.means.min(0).values, self.means.max(0).values

    def robust_bounds(self, lo: float = 0.01, hi: float = 0.99) -> tuple[Tensor, Tensor]:
        """Per-axis quantiles of the means (1st-99th percentile box by default); ignores stray floaters."""
        m = self.means
        if m.shape[0] > 1_000_000:  # torch.quantile has an input-size limit; a strided sample is plenty
            m = m[:: m.shape[0] // 1_000_000 + 1]
        q = torch.quantile(m.double(), torch.tensor([lo, hi], dtype=torch.float64, device=m.device), dim=0)
        return q[0].float(), q[1].float()

    def robust_radius(self) -> float:
        """Half the diagonal of the robust box (`robust_bounds`): the scene's size for framing and for
        distance-based settings (at least 1e-6; 1 for an empty scene)."""
        if len(self) == 0:
            return 1.0
        lo, hi = self.robust_bounds()
        return max(0.5 * float((hi.double() - lo.double()).norm()), 1e-6)

    def center(self) -> Tensor:
        """[3] per-axis median of the means (the default look-at point)."""
        m = self.means
        if m.shape[0] > 1_000_000:
            m = m[:: m.shape[0] // 1_000_000 + 1]
        return m.median(dim=0).values


def make_scene(
    means: Tensor,
    quats: Tensor,
    log_scales: Tensor,
    opacity_logits: Tensor,
    sh: Tensor,
    **meta,
) -> GaussianScene:
    """Build a scene from arrays of any float dtype; converts to contiguous float32 and validates."""

    def f32(t: Tensor) -> Tensor:
        return torch.as_tensor(t).to(torch.float32).contiguous()

    return GaussianScene(f32(means), f32(quats), f32(log_scales), f32(opacity_logits), f32(sh), **meta).validate()
