"""A trainer's output folder (INRIA 3DGS layout), and the dispatch for scene folders in general.

INRIA `train.py` writes:

    <model>/
        cameras.json                          training cameras (parsed by renderer/, not here)
        cfg_args                              the training arguments (Python Namespace repr)
        point_cloud/iteration_7000/point_cloud.ply
        point_cloud/iteration_30000/point_cloud.ply

The latest iteration is read unless `iteration=` names one. The model folder, its `point_cloud` folder or
one `iteration_N` folder may be given. The path of `cameras.json`, when present, is recorded in
`scene.extras["cameras"]` for the camera-path code; it is not parsed here.

nerfstudio's splatfacto writes a run folder (`outputs/<data>/splatfacto/<timestamp>/`):

    config.yml, dataparser_transforms.json
    nerfstudio_models/step-000029999.ckpt     the checkpoints (scenes/gsplat_ckpt.py reads one)

The run folder or its `nerfstudio_models` folder may be given: the latest step is read.

`read_folder` is the single folder reader registered in `scenes.io`: a folder with `meta.json` is an
unbundled PlayCanvas SOG, a splatfacto run's is read as above, anything else is tried as a trainer output folder.
"""

from __future__ import annotations

import os
import re

from .gaussians import GaussianScene, SceneFormatError

_ITERATION = re.compile(r"iteration_(\d+)$")
_STEP = re.compile(r"step-(\d+)\.ckpt$")


def _iterations(point_cloud_dir: str) -> dict[int, str]:
    """{iteration: folder} for every `iteration_N` folder that holds a point_cloud.ply."""
    found = {}
    for name in os.listdir(point_cloud_dir):
        m = _ITERATION.match(name)
        folder = os.path.join(point_cloud_dir, name)
        if m and os.path.isfile(os.path.join(folder, "point_cloud.ply")):
            found[int(m.group(1))] = folder
    return found


def read_trainer_folder(path: str | os.PathLike, *, iteration: int | None = None) -> GaussianScene:
    """Read `point_cloud/iteration_N/point_cloud.ply` of an INRIA-style output folder (latest N by default)."""
    from .compressed_ply import read_compressed_ply  # reads INRIA and compressed PLY alike

    path = os.fspath(path)
    root = os.path.abspath(path)
    m = _ITERATION.match(os.path.basename(root))
    if m and os.path.isfile(os.path.join(root, "point_cloud.ply")):  # given one iteration folder
        if iteration is not None and iteration != int(m.group(1)):
            raise SceneFormatError(f"{path}: is the folder of iteration {m.group(1)}, not {iteration}")
        iterations = {int(m.group(1)): root}
        model = os.path.dirname(os.path.dirname(root))
    else:
        if os.path.basename(root) == "point_cloud":
            model, pc = os.path.dirname(root), root
        else:
            model, pc = root, os.path.join(root, "point_cloud")
        if not os.path.isdir(pc):
            raise SceneFormatError(
                f"{path}: not a scene folder (no meta.json for SOG, no point_cloud/iteration_N/point_cloud.ply)"
            )
        iterations = _iterations(pc)
        if not iterations:
            raise SceneFormatError(f"{path}: {pc} holds no iteration_N/point_cloud.ply")
    if iteration is None:
        iteration = max(iterations)
    elif iteration not in iterations:
        raise SceneFormatError(
            f"{path}: no iteration {iteration}; available: {', '.join(map(str, sorted(iterations)))}"
        )
    ply = os.path.join(iterations[iteration], "point_cloud.ply")
    scene = read_compressed_ply(ply)
    scene.source_format = f"trainer folder ({scene.source_format})"
    scene.extras = dict(scene.extras)
    scene.extras["iteration"] = iteration
    scene.extras["iterations available"] = sorted(iterations)
    scene.extras["point_cloud"] = ply
    cameras = os.path.join(model, "cameras.json")
    if os.path.isfile(cameras):
        scene.extras["cameras"] = cameras
    return scene


def nerfstudio_checkpoint(path: str) -> str | None:
    """The latest `step-<n>.ckpt` of a splatfacto run folder or of its `nerfstudio_models` folder; None where the
    folder is neither."""
    root = os.path.abspath(path)
    models = root if os.path.basename(root) == "nerfstudio_models" else os.path.join(root, "nerfstudio_models")
    if not os.path.isdir(models):
        return None
    steps = {int(m.group(1)): name for name in os.listdir(models) if (m := _STEP.match(name))}
    if not steps:
        raise SceneFormatError(f"{path}: {models} holds no step-<n>.ckpt checkpoint")
    return os.path.join(models, steps[max(steps)])


def read_folder(path: str | os.PathLike, **options) -> GaussianScene:
    """Any scene folder: unbundled SOG (meta.json), a splatfacto run or a trainer output folder."""
    path = os.fspath(path)
    if os.path.isfile(os.path.join(path, "meta.json")):
        from .sog import read_sog

        if options:
            raise SceneFormatError(f"{path}: SOG folders take no options (got {', '.join(options)})")
        return read_sog(path)
    checkpoint = nerfstudio_checkpoint(path)
    if checkpoint is not None:
        from .gsplat_ckpt import read_nerfstudio_checkpoint

        if options:
            raise SceneFormatError(f"{path}: splatfacto run folders take no options (got {', '.join(options)})")
        return read_nerfstudio_checkpoint(checkpoint)
    return read_trainer_folder(path, **options)
