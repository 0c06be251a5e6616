"""Training checkpoints of gsplat (`ckpts/ckpt_<step>_rank<r>.pt`, written by gsplat's `simple_trainer.py`) and of
nerfstudio's splatfacto (`nerfstudio_models/step-<n>.ckpt`, `read_nerfstudio_checkpoint`): read only, so that a
scene opens without exporting a PLY first.

A checkpoint is a `torch.save` zip archive of a dict {"step": int, "splats": {name: tensor}, ...}; the splats are
the trainer's parameters before activation, as warpsplat keeps them:

| name      | shape      | what                                                       |
|-----------|------------|------------------------------------------------------------|
| means     | [N, 3]     | centres                                                    |
| quats     | [N, 4]     | rotations (w, x, y, z), not normalised                     |
| scales    | [N, 3]     | natural-log scales                                         |
| opacities | [N]        | opacity logits                                             |
| sh0       | [N, 1, 3]  | the DC SH coefficient                                      |
| shN       | [N, K-1, 3]| the higher bands, K = (degree + 1)^2, coefficient-major    |

Other entries (the optimisers' `pose_adjust`, ...) are not read. A multi-GPU run writes one file a rank, each
holding its share of the Gaussians: the files `..._rank0.pt`, `..._rank1.pt`, ... of the named one's step are
read together, in rank order. A checkpoint trained with appearance optimisation holds `features` and `colors` in
place of the SH, which only its trainer's network turns into colours: it is refused, with what to do instead.

gsplat's trainer normalises the world by default: its scenes' up is +Z or -Z (a principal-axes fit), not the
COLMAP frame's -Y; nerfstudio's dataparser turns its world's up to +Z. `--up` sets it (the default stays -Y, as for
every format: the files do not say). nerfstudio records its change of world, the run's `dataparser_transforms.json`
(beside `nerfstudio_models/`): its path is kept as `scene.extras["dataparser_transforms"]`, and the camera-path code
takes a dataset's cameras (its transforms.json, its COLMAP model) into the checkpoint's world by it.

Loading is safe and bounded: the archive is checked first (a zip whose members are stored, as torch.save writes
them, so it holds no more than its size), then read by torch's `weights_only` unpickler (tensors and plain
containers only: no code runs), its tensors mapped from the file rather than read into memory.
"""

from __future__ import annotations

import os
import re
import struct
import zipfile

import torch

from .gaussians import SH_C0, GaussianScene, SceneFormatError
from .limits import check_count, check_scene_memory

REQUIRED = ("means", "quats", "scales", "opacities", "sh0")
MAX_SH_DEGREE = 3
_RANK = re.compile(r"^(?P<stem>.*_rank)(?P<rank>\d+)\.pt$")


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def rank_files(path: str) -> list[str]:
    """The files of `path`'s checkpoint: itself, or every rank's file of a multi-GPU run, rank 0 first."""
    folder, name = os.path.split(path)
    match = _RANK.match(name)
    if match is None:
        return [path]
    ranks = {}
    for other in os.listdir(folder or "."):
        m = _RANK.match(other)
        sibling = os.path.join(folder, other)
        if m is not None and m["stem"] == match["stem"] and (other == name or os.path.isfile(sibling)):
            ranks[int(m["rank"])] = sibling  # regular files only: a FIFO named like one would block the read
    missing = sorted(set(range(max(ranks) + 1)) - set(ranks))
    if missing:
        raise SceneFormatError(f"{path}: the run's rank {missing[0]} file is missing beside it (each holds a share)")
    return [ranks[r] for r in sorted(ranks)]


def _check_archive(path: str) -> None:
    """A zip archive whose members are stored uncompressed, as torch.save writes them."""
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
    except zipfile.BadZipFile:
        raise SceneFormatError(f"{path}: not a torch checkpoint (not a zip archive; torch < 1.6 format?)") from None
    except (ValueError, NotImplementedError, EOFError, struct.error) as e:  # a damaged directory (names, sizes)
        raise SceneFormatError(f"{path}: a damaged zip archive ({type(e).__name__})") from None
    if not any(m.filename.endswith("/data.pkl") for m in members):
        raise SceneFormatError(f"{path}: a zip archive but not a torch checkpoint (no data.pkl in it)")
    packed = [m.filename for m in members if m.compress_type != zipfile.ZIP_STORED]
    if packed:
        raise SceneFormatError(f"{path}: member {packed[0]} is compressed, which torch.save never does")


def _load(path: str) -> dict:
    """A gsplat checkpoint's dict (one with a 'splats' dict)."""
    data = _load_archive(path)
    if not isinstance(data, dict) or not isinstance(data.get("splats"), dict):
        keys = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise SceneFormatError(f"{path}: holds no 'splats' dict, so it is not a gsplat checkpoint (it holds {keys})")
    return data


def _load_archive(path: str):
    """What a torch checkpoint holds, loaded safely (module docstring)."""
    _check_archive(path)
    try:
        try:
            data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # an archive whose records torch cannot map (older writers): read it whole
            data = torch.load(path, map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as e:  # torch's reader of a damaged archive raises many kinds; each is this file's fault
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SceneFormatError(f"{path}: not a readable torch checkpoint ({reason[:200]})") from None
    return data


def _splats(path: str, splats: dict) -> dict[str, torch.Tensor]:
    """The splats' tensors, their names, shapes and dtypes checked."""
    if "features" in splats and "sh0" not in splats:
        raise SceneFormatError(
            f"{path}: trained with appearance optimisation (features and colors, no SH): only gsplat's trainer can "
            "colour it; export a PLY from it without --app-opt, or train without it"
        )
    missing = [k for k in REQUIRED if k not in splats]
    if missing:
        has = ", ".join(map(str, splats)) or "nothing"
        raise SceneFormatError(f"{path}: its splats lack {', '.join(missing)} (it has {has})")
    out = {k: splats[k] for k in (*REQUIRED, "shN") if k in splats}
    for k, t in out.items():
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            raise SceneFormatError(f"{path}: splats[{k!r}] is not a floating-point tensor")
    n = out["means"].shape[0]
    want = {"means": (n, 3), "quats": (n, 4), "scales": (n, 3), "opacities": (n,), "sh0": (n, 1, 3)}
    if "shN" in out:
        want["shN"] = (n, out["shN"].shape[1] if out["shN"].dim() == 3 else -1, 3)
    for k, shape in want.items():
        if tuple(out[k].shape) != shape:
            raise SceneFormatError(f"{path}: splats[{k!r}] has shape {tuple(out[k].shape)}, expected {shape}")
    k = 1 + (out["shN"].shape[1] if "shN" in out else 0)
    degree = round(k**0.5) - 1
    if (degree + 1) ** 2 != k or degree > MAX_SH_DEGREE:
        raise SceneFormatError(f"{path}: {k} SH coefficients a channel is not a degree of 0-{MAX_SH_DEGREE}")
    return out


def read_gsplat_checkpoint(path: str | os.PathLike) -> GaussianScene:
    """Read a gsplat checkpoint (every rank's file of its step, see `rank_files`)."""
    path = os.fspath(path)
    parts, step = [], None
    for file in rank_files(path):
        data = _load(file)
        parts.append(_splats(file, data["splats"]))
        step = data.get("step", step)
    extras = {"ranks": len(parts)} | ({"step": step} if isinstance(step, int) else {})
    return _scene(path, parts, "gsplat checkpoint", extras)


def _scene(path: str, parts: list[dict[str, torch.Tensor]], source_format: str, extras: dict) -> GaussianScene:
    """One scene of the checked splats of `parts` (`_splats`), in order."""
    ks = {1 + (p["shN"].shape[1] if "shN" in p else 0) for p in parts}
    if len(ks) > 1:
        raise SceneFormatError(f"{path}: its ranks' files hold different SH degrees")
    k = ks.pop()
    n = check_count(sum(p["means"].shape[0] for p in parts), path, "the checkpoint's splats")
    check_scene_memory(n, k, path, "the checkpoint's splats")
    scene = GaussianScene.allocate(n, k, source_format=source_format)
    at = 0
    for p in parts:
        rows = slice(at, at + p["means"].shape[0])
        scene.means[rows] = p["means"]
        scene.quats[rows] = p["quats"]
        scene.log_scales[rows] = p["scales"]
        scene.opacity_logits[rows] = p["opacities"]
        scene.sh[rows, :1] = p["sh0"]
        if k > 1:
            scene.sh[rows, 1:] = p["shN"]
        at = rows.stop
    scene.extras = extras
    return scene.validate().drop_invalid(name=path, in_place=True)


NERFSTUDIO_PARAMS = ("means", "scales", "quats", "opacities", "features_dc", "features_rest")


def read_nerfstudio_checkpoint(path: str | os.PathLike) -> GaussianScene:
    """Read a nerfstudio splatfacto checkpoint (`nerfstudio_models/step-<n>.ckpt`): its pipeline's Gaussians,
    `_model.gauss_params.<name>` (or `_model.<name>` before nerfstudio 1.0): means, log scales, quaternions,
    opacity logits [N, 1], features_dc [N, 3] (the DC coefficient) and features_rest [N, K-1, 3]. A model trained
    at SH degree 0 keeps logits of its colours in features_dc instead (splatfacto's sigmoid colours): they are
    turned into the DC coefficient. The optimisers' states beside them are not read."""
    path = os.fspath(path)
    data = _load_archive(path)
    pipeline = data.get("pipeline") if isinstance(data, dict) else None
    if not isinstance(pipeline, dict):
        keys = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise SceneFormatError(f"{path}: holds no 'pipeline' state, so it is not a nerfstudio checkpoint ({keys})")
    means_key = next((key for key in pipeline if str(key).endswith("gauss_params.means")), None)
    prefix = means_key[: -len("means")] if means_key else "_model."
    params = {name: pipeline.get(prefix + name) for name in NERFSTUDIO_PARAMS}
    missing = [name for name, t in params.items() if not isinstance(t, torch.Tensor)]
    if missing:
        raise SceneFormatError(
            f"{path}: its pipeline holds no splatfacto Gaussians ({', '.join(missing)} missing under {prefix!r})"
        )
    dc, rest = params["features_dc"], params["features_rest"]
    if dc.dim() != 2 or rest.dim() != 3:
        raise SceneFormatError(f"{path}: features_dc {tuple(dc.shape)} / features_rest {tuple(rest.shape)}: not SH")
    sh0 = dc[:, None, :].float()
    if rest.shape[1] == 0:  # SH degree 0: splatfacto renders sigmoid(features_dc) as the colour
        sh0 = (torch.sigmoid(sh0) - 0.5) / SH_C0
    opacities = params["opacities"]
    splats = {"means": params["means"], "scales": params["scales"], "quats": params["quats"],
              "opacities": opacities.reshape(-1) if opacities.dim() == 2 and opacities.shape[1] == 1 else opacities,
              "sh0": sh0} | ({"shN": rest} if rest.shape[1] else {})  # fmt: skip
    step = data.get("step")
    extras = {"step": step} if isinstance(step, int) else {}
    transforms = dataparser_transforms(path)
    if transforms is not None:  # for the camera-path code (renderer/paths/formats.py): not parsed here
        extras["dataparser_transforms"] = transforms
    return _scene(path, [_splats(path, splats)], "nerfstudio checkpoint", extras)


def dataparser_transforms(checkpoint: str) -> str | None:
    """The `dataparser_transforms.json` of a splatfacto run, if it is there: nerfstudio writes it in the run's
    folder, beside `nerfstudio_models/` that holds the checkpoints (or a user keeps it beside the checkpoint)."""
    folder = os.path.dirname(os.path.abspath(checkpoint))
    for where in (folder, os.path.dirname(folder)):
        candidate = os.path.join(where, "dataparser_transforms.json")
        if os.path.isfile(candidate):
            return candidate
    return None
