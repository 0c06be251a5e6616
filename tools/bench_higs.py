"""HiGS, the speed anchor of `warpsplat bench`: NVIDIA's inference renderer in gsplat's main branch
(`gsplat.experimental`), timed in a child process.

Both it and gsplat 1.5.3 (the exactness anchor, timed in the bench's own process) are packages named `gsplat`, so
one process can import only one of them. The bench finds HiGS in a folder given by --higs or $WARPSPLAT_HIGS (put
first on the child's PYTHONPATH), else wherever a plain `import gsplat` in a child finds a `gsplat.experimental`.

The exchange, through files in a temporary folder:
- the bench writes request.json (the scene file, device, CPU threads, warm-up, tile sizes, and per path its key,
  size and the frames to sample) and cameras.npz (per path k: viewmats_k [F, 4, 4] world-to-camera, Ks_k [F, 3, 3]);
- the child (`python -m tools.bench_higs FOLDER`) loads the scene, builds HiGS's scene object and every path's
  camera tensors before any timer starts, times each tile size as tools/bench_timing.py times an anchor (its JIT
  build falls in the first warm-up), keeps the faster tile size per path (by its one-by-one median), and writes
  result.json (times, peak memory, tile sizes) and images_k.npz (the sampled frames, float32 [H, W, 3]).
Exit status 3: HiGS is not importable there (result.json says why); any other failure: a traceback in child.log.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from .bench_timing import AnchorTimes, Passes
from .cli import CliError

ENV = "WARPSPLAT_HIGS"
TILE_SIZES = (8, 16)
REQUEST, CAMERAS, RESULT, LOG = "request.json", "cameras.npz", "result.json", "child.log"
NOT_IMPORTABLE = 3  # the child's exit status when `gsplat.experimental` cannot be imported
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder that holds tools/


@dataclass
class Higs:
    """Where HiGS is, as the bench found it. status: "found", "not installed", "needs CUDA" or "off"; detail: its
    version, or why it is not measured; failures: per scene, why its child failed."""

    status: str
    detail: str = ""
    location: str | None = None  # the folder put first on the child's PYTHONPATH (None: the child's plain path)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return self.status == "found"

    def missing(self, scene: str) -> str:
        """What the HiGS cells of a scene's rows say where HiGS has no row."""
        if scene in self.failures:
            return "failed"
        return {"found": "-", "not installed": "absent", "needs CUDA": "no CUDA", "off": "off"}[self.status]

    def summary(self) -> str:
        where = f" from {self.location}" if self.location else ""
        text = f"HiGS: {self.status}{where}" + (f" ({self.detail})" if self.detail else "")
        return text + "".join(f"; failed on {s}: {why}" for s, why in self.failures.items())

    def as_dict(self) -> dict:
        return {"status": self.status, "detail": self.detail, "location": self.location, "failures": self.failures}


def find_higs(option: str | None, cuda: bool) -> Higs:
    """HiGS as --higs (a folder, or 'none') or $WARPSPLAT_HIGS names it, else a plain import in a child. A folder
    named there that holds no importable HiGS is an error (exit 2); a plain import that finds none is not."""
    source = "--higs"
    if option is None and os.environ.get(ENV):
        option, source = os.environ[ENV], ENV
    if option == "none":
        return Higs("off", f"{source} none")
    if option is not None:
        if not os.path.isdir(option):
            raise CliError(f"{source} {option}: no such folder (give the folder that holds HiGS's gsplat package)")
        option = os.path.abspath(option)
    elif not cuda:
        return Higs("needs CUDA")
    found = probe(option)
    if found.get("ok"):
        return Higs("found", f"gsplat {found['version']}", option)
    if option is not None:
        raise CliError(f"{source} {option}: no HiGS there ({found['reason']})")
    return Higs("not installed", found["reason"])


def child_env(location: str | None) -> dict:
    """The child's environment: HiGS's folder first on PYTHONPATH, then this checkout (for tools/ and scenes/)."""
    paths = ([location] if location else []) + [REPO] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def probe(location: str | None) -> dict:
    """Whether a child with `location` on its path imports HiGS: {"ok": True, "version"} or {"ok": False,
    "reason"}."""
    r = subprocess.run([sys.executable, "-m", "tools.bench_higs", "--probe"], env=child_env(location), cwd=REPO,
                       capture_output=True, text=True)  # fmt: skip
    lines = r.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "reason": last_line(r.stderr) or f"the probe exited with status {r.returncode}"}


@dataclass
class HigsPath:
    """HiGS on one path, from the child's result: its times at the faster tile size, that size, both sizes'
    one-by-one medians, and the file of its sampled frames."""

    times: AnchorTimes
    tile_size: int
    tile_medians: dict[int, float]
    images_file: str

    def images(self) -> dict:
        """{frame index: [H, W, 3] float32 tensor on the CPU} of the sampled frames."""
        import numpy as np
        import torch

        with np.load(self.images_file) as z:
            return {int(k.split("_")[1]): torch.from_numpy(z[k]) for k in z.files}


@contextlib.contextmanager
def higs_child(higs: Higs, label: str, scene_file: str, plan, device, warmup: int, sample_every: int):
    """Run HiGS on one scene's paths in a child process. plan: [(key, cams)], each path's cameras of one size.
    Yields {key: HigsPath} while its files exist; {} when the child failed (`higs.failures` says why, and a
    line on stderr)."""
    import numpy as np
    import torch

    with tempfile.TemporaryDirectory(prefix="warpsplat-higs-") as folder:
        request = {
            "scene": os.path.abspath(scene_file), "device": str(device), "warmup": warmup,
            "tile_sizes": list(TILE_SIZES), "threads": torch.get_num_threads(),  # the CPU threads the bench uses
            "paths": [{"key": key, "width": cams[0].width, "height": cams[0].height,
                       "sample": list(range(0, len(cams), sample_every))} for key, cams in plan],
        }  # fmt: skip
        with open(os.path.join(folder, REQUEST), "w") as f:
            json.dump(request, f)
        arrays = {}
        for k, (_, cams) in enumerate(plan):
            arrays[f"viewmats_{k}"] = np.stack([c.viewmat for c in cams]).astype(np.float32)
            arrays[f"Ks_{k}"] = np.stack([c.K for c in cams]).astype(np.float32)
        np.savez(os.path.join(folder, CAMERAS), **arrays)
        print(f"  {label}: HiGS on {len(plan)} paths in a child process", file=sys.stderr, flush=True)
        with open(os.path.join(folder, LOG), "w") as log:
            rc = subprocess.run([sys.executable, "-m", "tools.bench_higs", folder], env=child_env(higs.location),
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode  # fmt: skip
        result = read_json(os.path.join(folder, RESULT))
        if rc != 0 or result is None:
            with open(os.path.join(folder, LOG)) as log:
                why = (result or {}).get("reason") or last_line(log.read()) or "no output"
            higs.failures[label] = f"exit status {rc}: {why}"
            print(f"  {label}: HiGS's child process failed ({higs.failures[label]}); its columns say 'failed'",
                  file=sys.stderr, flush=True)  # fmt: skip
            yield {}
            return
        yield {p["key"]: higs_path(p, folder) for p in result["paths"]}


def higs_path(p: dict, folder: str) -> HigsPath:
    passes = Passes(p["first"], p["second"], p["wall_fps"])
    probes = p.get("host_probe_us"), p.get("host_probe_after_us")
    times = AnchorTimes(passes, p["back_to_back"], p["peak_mem_mb"], *probes)
    medians = {int(k): v for k, v in p["tile_medians"].items()}
    return HigsPath(times, p["tile_size"], medians, os.path.join(folder, p["images"]))


def read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}".rstrip(": ")


# ---------------------------------------------------------------------------------------------- the child


def child_probe() -> dict:
    try:
        import gsplat
        from gsplat.experimental import GaussianInferenceScene, rasterize_gaussian_inference_scene  # noqa: F401
    except Exception as e:  # any import failure means: not usable from here
        return {"ok": False, "reason": one_line(e)}
    return {"ok": True, "version": getattr(gsplat, "__version__", "unknown"), "file": gsplat.__file__}


def child_run(folder: str) -> int:
    """Time HiGS on the request in `folder` and write the result there (see the module docstring)."""
    import numpy as np
    import torch

    request = read_json(os.path.join(folder, REQUEST))
    if request is None:
        raise SystemExit(f"{os.path.join(folder, REQUEST)}: missing or not JSON")
    try:
        import gsplat
        from gsplat.experimental import GaussianInferenceScene, rasterize_gaussian_inference_scene
    except Exception as e:
        write_result(folder, {"reason": one_line(e)})
        return NOT_IMPORTABLE
    from scenes import load_scene

    from .bench_timing import time_anchor

    torch.set_num_threads(request["threads"])
    device = torch.device(request["device"])
    cams = np.load(os.path.join(folder, CAMERAS))
    out = []
    with torch.inference_mode():
        higs_scene = make_higs_scene(GaussianInferenceScene, load_scene(request["scene"]), device)
        for k, path in enumerate(request["paths"]):
            viewmats = torch.from_numpy(cams[f"viewmats_{k}"]).to(device)
            Ks = torch.from_numpy(cams[f"Ks_{k}"]).to(device)
            n = viewmats.shape[0]
            draws = {tile: higs_frames(rasterize_gaussian_inference_scene, higs_scene, viewmats, Ks, path, tile)
                     for tile in request["tile_sizes"]}  # fmt: skip
            times = {tile: time_anchor(draw, n, device, request["warmup"]) for tile, draw in draws.items()}
            best = min(times, key=lambda t: times[t].median())
            images = f"images_{k}.npz"
            np.savez(os.path.join(folder, images),
                     **{f"frame_{i}": draws[best](i).float().cpu().numpy() for i in path["sample"]})  # fmt: skip
            t = times[best]
            out.append({
                "key": path["key"], "tile_size": best, "tile_medians": {str(s): v.median() for s, v in times.items()},
                "first": t.one_by_one.first, "second": t.one_by_one.second, "wall_fps": t.one_by_one.wall_fps,
                "back_to_back": t.back_to_back, "peak_mem_mb": t.peak_mem_mb, "images": images,
                "host_probe_us": t.host_probe_us, "host_probe_after_us": t.host_probe_after_us,
            })  # fmt: skip
            print(f"HiGS {path['key']}: tile {best}, median {t.median():.3f} ms", file=sys.stderr, flush=True)
    write_result(folder, {"version": getattr(gsplat, "__version__", "unknown"), "paths": out})
    return 0


def make_higs_scene(scene_class, scene, device):
    """HiGS's scene object (`gsplat.experimental.GaussianInferenceScene`) for a warpsplat scene, on the device. HiGS
    keeps its own packed copy: the activated inputs are let go, and are not part of its memory."""
    act = scene.to(device).activated()
    return scene_class.from_gaussian_tensors(act.means, act.quats, act.scales, act.opacities, act.sh,
                                             sh_degree=scene.sh_degree, sh_compression="none",
                                             id="warpsplat-bench")  # fmt: skip


def higs_frames(rasterize, higs_scene, viewmats, Ks, path: dict, tile: int):
    """draw(i) -> [H, W, 3]: HiGS's frame i of a path at one tile size, on camera tensors made beforehand (only
    views of them are taken here, before any timing)."""
    from .bench_gsplat import CONTRACT

    views = [(viewmats[j : j + 1], Ks[j : j + 1]) for j in range(viewmats.shape[0])]  # [1, 4, 4], [1, 3, 3]
    width, height = path["width"], path["height"]
    return lambda i: rasterize(higs_scene, viewmats=views[i][0], Ks=views[i][1], width=width, height=height,
                               tile_size=tile, **CONTRACT).frame[0]  # fmt: skip


def write_result(folder: str, doc: dict) -> None:
    tmp = os.path.join(folder, RESULT + ".part")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, os.path.join(folder, RESULT))


def main(argv: list[str]) -> int:
    if argv == ["--probe"]:
        print(json.dumps(child_probe()))
        return 0
    if len(argv) != 1:
        print("usage: python -m tools.bench_higs (--probe | FOLDER)", file=sys.stderr)
        return 2
    return child_run(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
