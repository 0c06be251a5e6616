"""gsplat checkpoints (scenes/gsplat_ckpt.py). Each is written as gsplat's simple_trainer writes one: the
trainer's `torch.nn.ParameterDict` of splats, its `state_dict()` saved with the step by `torch.save`, from a real
scene (the bundled playbot crop, SH degree 2). Reading it back must give that scene exactly; a run's rank files
together the whole scene; bad and hostile archives one-line errors naming the file, no code run.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from scenes import SceneFormatError, load_scene
from scenes.gaussians import SH_C0
from tests.conftest import bundled


@pytest.fixture(scope="module")
def crop():
    return load_scene(bundled("playbot_crop.ply"))


def trainer_splats(scene, rows=slice(None)) -> torch.nn.ParameterDict:
    """The splats as gsplat's trainer holds them (its `create_splats_with_optimizers` names and shapes)."""
    p = lambda t: torch.nn.Parameter(t[rows].clone())  # noqa: E731
    return torch.nn.ParameterDict({
        "means": p(scene.means), "scales": p(scene.log_scales), "quats": p(scene.quats),
        "opacities": p(scene.opacity_logits), "sh0": p(scene.sh[:, :1]), "shN": p(scene.sh[:, 1:]),
    })  # fmt: skip


def save(path, splats, **extra) -> str:
    torch.save({"step": 29999, "splats": splats.state_dict(), **extra}, path)
    return str(path)


def test_a_checkpoint_reads_as_the_scene_it_holds(tmp_path, crop):
    path = save(tmp_path / "ckpt_29999_rank0.pt", trainer_splats(crop),
                pose_adjust={"embeds.weight": torch.zeros(3, 9)})  # fmt: skip
    scene = load_scene(path)  # by its extension, though a zip like SOG
    assert scene.source_format == "gsplat checkpoint" and scene.extras == {"ranks": 1, "step": 29999}
    for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
        assert torch.equal(getattr(scene, name), getattr(crop, name)), name


def test_a_multi_gpu_runs_ranks_are_read_together_in_rank_order(tmp_path, crop):
    n = len(crop)
    for rank, rows in enumerate((slice(0, 1000), slice(1000, 3000), slice(3000, n))):
        save(tmp_path / f"ckpt_6999_rank{rank}.pt", trainer_splats(crop, rows))
    save(tmp_path / "ckpt_4999_rank0.pt", trainer_splats(crop, slice(0, 10)))  # another step: not read
    for named in ("ckpt_6999_rank2.pt", "ckpt_6999_rank0.pt"):
        scene = load_scene(tmp_path / named)
        assert scene.extras["ranks"] == 3 and torch.equal(scene.means, crop.means)
    os.remove(tmp_path / "ckpt_6999_rank1.pt")
    with pytest.raises(SceneFormatError, match="rank 1 file is missing beside it"):
        load_scene(tmp_path / "ckpt_6999_rank0.pt")


def test_sh_degree_0_and_3(tmp_path, crop):
    splats = trainer_splats(crop)
    del splats["shN"]
    assert load_scene(save(tmp_path / "a.pt", splats)).sh_degree == 0
    splats = trainer_splats(crop)
    splats["shN"] = torch.nn.Parameter(torch.randn(len(crop), 15, 3))
    scene = load_scene(save(tmp_path / "b.pt", splats))
    assert scene.sh_degree == 3 and torch.equal(scene.sh[:, 1:], splats["shN"].detach())


class Payload:
    """Not a tensor nor a plain container: what a malicious pickle would carry."""

    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def _zip_member_deflated(path) -> bytes:
    """The archive at `path` with its members deflated (torch.save stores them)."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return out.getvalue()


def test_bad_checkpoints_fail_in_one_line_naming_the_file(tmp_path, crop):
    good = save(tmp_path / "good.pt", trainer_splats(crop, slice(0, 50)))
    app = trainer_splats(crop, slice(0, 50))
    del app["sh0"], app["shN"]
    app["features"] = torch.nn.Parameter(torch.zeros(50, 32))
    app["colors"] = torch.nn.Parameter(torch.zeros(50, 3))
    short = trainer_splats(crop, slice(0, 50))
    short["quats"] = torch.nn.Parameter(torch.zeros(49, 4))
    odd = trainer_splats(crop, slice(0, 50))
    odd["shN"] = torch.nn.Parameter(torch.zeros(50, 5, 3))
    cases = {
        "app.pt": (save(tmp_path / "app.pt", app), "trained with appearance optimisation"),
        "short.pt": (save(tmp_path / "short.pt", short), "splats['quats'] has shape (49, 4), expected (50, 4)"),
        "odd.pt": (save(tmp_path / "odd.pt", odd), "6 SH coefficients a channel is not a degree of 0-3"),
        "model.pt": (None, "holds no 'splats' dict, so it is not a gsplat checkpoint"),
        "code.pt": (None, "not a readable torch checkpoint"),
        "deflated.pt": (None, "is compressed, which torch.save never does"),
        "legacy.pt": (None, "not a zip archive; torch < 1.6 format?"),
        "other.pt": (None, "a zip archive but not a torch checkpoint (no data.pkl in it)"),
    }
    torch.save({"state_dict": {"w": torch.zeros(2)}}, tmp_path / "model.pt")
    torch.save({"step": 1, "splats": {"means": Payload()}}, tmp_path / "code.pt")
    (tmp_path / "deflated.pt").write_bytes(_zip_member_deflated(good))
    (tmp_path / "legacy.pt").write_bytes(pickle.dumps({"splats": {}}))
    with zipfile.ZipFile(tmp_path / "other.pt", "w") as z:
        z.writestr("meta.json", "{}")
    for name, (_, message) in cases.items():
        path = tmp_path / name
        with pytest.raises(SceneFormatError) as e:
            load_scene(path)
        assert str(path) in str(e.value) and message in str(e.value) and "\n" not in str(e.value), name


def test_mutated_checkpoints_fail_cleanly(tmp_path, crop):
    """The seeded mutations of tests/scenes/test_fuzz.py on a checkpoint (truncation and byte flips; a .pt has no
    count field, so its "count" case cuts the file's end): each a SceneFormatError naming the file or a valid
    scene, never another exception (the first run found a UnicodeDecodeError from a flipped member name)."""
    import numpy as np

    from tests.scenes.test_fuzz import fuzz

    save(tmp_path / "ckpt.pt", trainer_splats(crop, slice(0, 500)))
    data = (tmp_path / "ckpt.pt").read_bytes()
    rng = np.random.default_rng(7)  # 40 cases; seeds 0-9 also passed 400 more (checked when written)
    outcomes = fuzz("ckpt.pt", data, rng, tmp_path, 40)
    assert outcomes.get("truncate->error", 0) > 0, outcomes


# ----------------------------------------------------------------------------------------------- nerfstudio
class Splatfacto(torch.nn.Module):
    """The part of nerfstudio's splatfacto model a checkpoint holds the Gaussians of: `gauss_params`, a
    ParameterDict of means, log scales, quaternions, features_dc [N, 3], features_rest [N, K-1, 3] and opacity
    logits [N, 1], under the pipeline's `_model`."""

    def __init__(self, scene):
        super().__init__()
        p = torch.nn.Parameter
        self.gauss_params = torch.nn.ParameterDict({
            "means": p(scene.means.clone()), "scales": p(scene.log_scales.clone()), "quats": p(scene.quats.clone()),
            "features_dc": p(scene.sh[:, 0].clone()), "features_rest": p(scene.sh[:, 1:].clone()),
            "opacities": p(scene.opacity_logits[:, None].clone()),
        })  # fmt: skip


class Pipeline(torch.nn.Module):
    def __init__(self, scene):
        super().__init__()
        self._model = Splatfacto(scene)


def nerfstudio_checkpoint(path, scene) -> str:
    """A checkpoint as nerfstudio's trainer saves one: the step, the pipeline's state, the optimisers' (Adam, one
    step taken, so each holds its moments) and the grad scaler's."""
    pipeline = Pipeline(scene)
    optimisers = {}
    for name, param in pipeline._model.gauss_params.items():
        opt = torch.optim.Adam([param], lr=1e-3)
        param.grad = torch.ones_like(param)
        opt.step()
        optimisers[name] = opt.state_dict()
    torch.save({"step": 29999, "pipeline": pipeline.state_dict(), "optimizers": optimisers, "schedulers": {},
                "scalers": {"scale": 65536.0, "growth_factor": 2.0, "_growth_tracker": 0}}, path)  # fmt: skip
    return str(path)


def test_a_nerfstudio_checkpoint_reads_as_its_pipelines_gaussians(tmp_path, crop):
    path = nerfstudio_checkpoint(tmp_path / "step-000029999.ckpt", crop)
    scene = load_scene(path)  # by its extension
    assert scene.source_format == "nerfstudio checkpoint" and scene.extras == {"step": 29999}
    # the pipeline's Gaussians as saved: Adam's one step moved them, so compare with the state, not the crop
    state = torch.load(path, weights_only=True)["pipeline"]
    g = {k.split(".")[-1]: v for k, v in state.items()}
    assert torch.equal(scene.means, g["means"]) and torch.equal(scene.log_scales, g["scales"])
    assert torch.equal(scene.quats, g["quats"]) and torch.equal(scene.opacity_logits, g["opacities"][:, 0])
    assert torch.equal(scene.sh[:, 0], g["features_dc"]) and torch.equal(scene.sh[:, 1:], g["features_rest"])
    assert not torch.equal(scene.means, crop.means)  # it did read the state written, after the step


def test_a_nerfstudio_model_at_sh_degree_0_keeps_colour_logits(tmp_path, crop):
    """splatfacto at SH degree 0 renders sigmoid(features_dc): read as the DC coefficient of that colour."""
    colour_logits = torch.logit(torch.rand(len(crop), 3) * 0.9 + 0.05)
    flat = crop.with_sh_degree(0)
    flat.sh = colour_logits[:, None, :].clone()
    scene = load_scene(nerfstudio_checkpoint(tmp_path / "step-1.ckpt", flat))
    state = torch.load(tmp_path / "step-1.ckpt", weights_only=True)["pipeline"]
    dc = state["_model.gauss_params.features_dc"]
    assert scene.sh_degree == 0
    assert torch.allclose(0.5 + SH_C0 * scene.sh[:, 0], torch.sigmoid(dc), atol=1e-6)


def test_other_ckpt_files_are_refused_in_one_line(tmp_path):
    torch.save({"state_dict": {"layer.weight": torch.zeros(2, 2)}}, tmp_path / "lightning.ckpt")
    torch.save({"pipeline": {"_model.field.weight": torch.zeros(2)}}, tmp_path / "nerfacto.ckpt")
    for name, message in (("lightning.ckpt", "holds no 'pipeline' state, so it is not a nerfstudio checkpoint"),
                          ("nerfacto.ckpt", "its pipeline holds no splatfacto Gaussians")):  # fmt: skip
        with pytest.raises(SceneFormatError) as e:
            load_scene(tmp_path / name)
        assert message in str(e.value) and str(tmp_path / name) in str(e.value) and "\n" not in str(e.value)


def test_a_splatfacto_run_folder_reads_its_latest_checkpoint_and_keeps_its_dataparser_file(tmp_path, crop):
    """nerfstudio's run folder: config.yml and dataparser_transforms.json beside nerfstudio_models/, which holds a
    checkpoint a save. The folder (or nerfstudio_models/) opens at the latest step, and a checkpoint read alone
    finds the run's dataparser_transforms.json for the camera-path code."""
    run = tmp_path / "outputs" / "garden" / "splatfacto" / "2026-12-05_024500"
    models = run / "nerfstudio_models"
    models.mkdir(parents=True)
    early = crop.subset(torch.arange(0, len(crop), 2))
    nerfstudio_checkpoint(models / "step-000002000.ckpt", early)
    latest = nerfstudio_checkpoint(models / "step-000029999.ckpt", crop)
    (models / "step-notes.txt").write_text("not a checkpoint")
    (run / "config.yml").write_text("method_name: splatfacto\n")
    for path in (run, models):
        scene = load_scene(path)
        assert len(scene) == len(crop) and scene.source_format == "nerfstudio checkpoint"
        assert torch.equal(scene.means, load_scene(latest).means)
        assert "dataparser_transforms" not in scene.extras  # the run has none yet
    transforms = run / "dataparser_transforms.json"
    transforms.write_text('{"transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], "scale": 0.5}')
    for path in (run, models, latest):
        assert load_scene(path).extras["dataparser_transforms"] == str(transforms)
    # one beside the checkpoint itself (a user's copy of both) is found too
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "dataparser_transforms.json").write_text(transforms.read_text())
    copy = alone / "step-000029999.ckpt"
    copy.write_bytes(Path(latest).read_bytes())
    assert load_scene(copy).extras["dataparser_transforms"] == str(alone / "dataparser_transforms.json")


def test_a_run_folder_without_checkpoints_says_so(tmp_path):
    (tmp_path / "nerfstudio_models").mkdir()
    with pytest.raises(SceneFormatError, match=r"nerfstudio_models holds no step-<n>\.ckpt checkpoint") as e:
        load_scene(tmp_path)
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)
