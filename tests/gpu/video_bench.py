"""Render-to-video speed: what bounds `warpsplat render --out x.mp4`, and which x264 setting to make the default.

Four measurements of one scene along the path `warpsplat render --path PATH` makes:
  1. rendering alone: N frames at the video size, once through the renderer and once through the render loop's
     frame hand-off (tools.render_jobs.FrameSink: pinned host buffers, a CUDA event, the writer thread) with no
     encoder behind it;
  2. encoding alone: the first K of those frames, held in memory, through tools.video.Mp4Writer for each x264
     threading x preset x thread count, at the default crf: frames/s, the cores it kept busy (process CPU time
     over wall time), file size, and the PSNR (mean, min over frames) of the decoded video against the frames;
  3. the fastest setting with no visible loss: the fastest whose mean PSNR is within --max-db-loss of today's
     default's, whose worst frame is within --max-min-db-loss of its worst, and whose file is at most
     --max-size-ratio times as large;
  4. `warpsplat render` end to end (in this process, after the renderer has compiled its kernels) with today's
     default and with that setting: frames/s, and what its summary says bounded it.
It prints progress, then a markdown table last, and writes video_bench.json and video_bench.md to --out.

    python3 tests/gpu/video_bench.py --scenes-dir .gpu/scenes --out gpu-out/video          # GPU machine
    .venv/bin/python tests/gpu/video_bench.py --scene plant.splat --size 160x90 --frames 12 \\
        --encode-frames 6 --presets ultrafast,medium --threads 0,2 --out /tmp/video_bench  # a CPU check

On CUDA it renders with the Triton kernels, elsewhere with the torch pipeline (the command's "auto").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import re
import sys
import time

import numpy as np
import torch

from renderer import Renderer, RenderSettings
from scenes import load_scene
from tools.bench_paths import find_scene
from tools.cli import build_parser
from tools.cli import main as cli_main
from tools.render import build_cameras
from tools.render_jobs import FrameSink, Job
from tools.threads import apply_thread_policy
from tools.video import DEFAULT_PRESET, DEFAULT_THREADING, DEFAULT_THREADS, THREADINGS, Mp4Writer, read_mp4

T0 = time.perf_counter()


def log(text: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f} s] {text}", flush=True)


def parse_list(text: str, kind=str) -> list:
    return [kind(v) for v in text.split(",") if v.strip()]


def render_args(scene: str, args, out: str, *extra) -> list[str]:
    """`warpsplat render` arguments for this benchmark's path."""
    w, h = args.size
    return ["render", scene, "--path", args.path, "--frames", str(args.frames), "--size", f"{w}x{h}",
            "--out", out, *map(str, extra)]  # fmt: skip


# ------------------------------------------------------------------------------------------------ 1. rendering


def time_rendering(r: Renderer, cams, fps: float) -> dict:
    """Seconds for the path's frames through the renderer alone, then through the render loop's hand-off to a
    writer thread with nothing to write (the copies to pinned host memory, their events, the buffer recycling)."""
    settings = RenderSettings()
    for cam in cams[:5]:  # compile, size the buffers, capture the CUDA graph (after 3 frames of one kind)
        r.render(cam, settings)
    t = time.perf_counter()
    for cam in cams:
        r.render(cam, settings)
    render_s = time.perf_counter() - t
    job = Job(scene=None, up=None, backend=r.backend, settings=settings, cameras=cams, indices=list(range(len(cams))),
              fps=fps)  # fmt: skip
    sink = FrameSink(job)  # no folder and no video: the writer thread only hands the buffers back
    t = time.perf_counter()
    try:
        for i, cam in enumerate(cams):
            sink.put(i, r.render(cam, settings).rgba8)
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    loop_s = time.perf_counter() - t
    return {
        "frames": len(cams),
        "render_s": render_s,
        "render_fps": len(cams) / render_s,
        "handoff_s": loop_s,
        "handoff_fps": len(cams) / loop_s,
    }


def frames_to_encode(r: Renderer, cams) -> list[np.ndarray]:
    """[H, W, 4] uint8 host copies of the given cameras' frames: the encoder's input, as the writer gets it."""
    return [r.render(cam, RenderSettings()).rgba8.cpu().numpy().copy() for cam in cams]


# ------------------------------------------------------------------------------------------------ 2. encoding


def frame_psnrs(decoded: np.ndarray, source, device: torch.device, chunk: int = 8) -> list[float]:
    """PSNR (dB, peak 255) of each decoded [H, W, 3] frame against its source ([K, H, W, 4] uint8 tensor on
    `device`), a few frames at a time to bound the float copies."""
    out = []
    for i in range(0, len(decoded), chunk):
        d = torch.from_numpy(decoded[i : i + chunk]).to(device).float()
        s = source[i : i + chunk, ..., :3].float()
        for mse in ((d - s) ** 2).mean(dim=(1, 2, 3)).tolist():
            out.append(math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse))
    return out


def x264_version(path: str) -> str:
    """The x264 build that wrote a file, from the settings message it puts in the stream."""
    with open(path, "rb") as f:
        m = re.search(rb"x264 - core [^-]+", f.read(1 << 16))
    return m.group(0).decode().strip() if m else "unknown"


def time_encoding(frames: list[np.ndarray], source, fps: float, config: dict, crf: int, path: str) -> dict:
    """Encode the frames with one x264 setting, decode them back and compare."""
    h, w = frames[0].shape[:2]
    cpu0, t = time.process_time(), time.perf_counter()
    writer = Mp4Writer(path, w, h, fps, crf=crf, temp_path=path + ".part", **config)
    try:
        for f in frames:
            writer.write(f)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    wall = time.perf_counter() - t
    cores = (time.process_time() - cpu0) / wall
    decoded, _, _ = read_mp4(path)
    assert decoded.shape == (len(frames), h, w, 3), decoded.shape
    psnrs = frame_psnrs(decoded, source, source.device)
    row = dict(config, crf=crf, frames=len(frames), encode_s=wall, encode_fps=len(frames) / wall, cores_busy=cores,
               mbytes=os.path.getsize(path) / 1e6, psnr_mean=sum(psnrs) / len(psnrs), psnr_min=min(psnrs))  # fmt: skip
    return row


def sweep_configs(args) -> list[dict]:
    """threading x preset x threads (slice threading with --slice-threads only), today's default included."""
    configs = []
    for threading in args.threadings:
        for preset in args.presets:
            for threads in args.threads if threading == "frame" else args.slice_threads:
                configs.append(dict(threading=threading, preset=preset, threads=threads))
    default = dict(threading=DEFAULT_THREADING, preset=DEFAULT_PRESET, threads=DEFAULT_THREADS)
    if default not in configs:
        configs.append(default)
    return configs


def pick_best(rows: list[dict], args) -> tuple[dict, dict]:
    """(today's default row, the fastest row that loses nothing visible against it)."""
    key = lambda r: (r["threading"], r["preset"], r["threads"])  # noqa: E731
    default = next(r for r in rows if key(r) == (DEFAULT_THREADING, DEFAULT_PRESET, DEFAULT_THREADS))
    for r in rows:
        r["no_visible_loss"] = (
            r["psnr_mean"] >= default["psnr_mean"] - args.max_db_loss
            and r["psnr_min"] >= default["psnr_min"] - args.max_min_db_loss
            and r["mbytes"] <= default["mbytes"] * args.max_size_ratio
        )
    best = max((r for r in rows if r["no_visible_loss"]), key=lambda r: r["encode_fps"])
    return default, best


# ------------------------------------------------------------------------------------------------ 4. end to end

SUMMARY = re.compile(
    r"(?P<frames>\d+) frames in (?P<wall>[\d.]+) s = (?P<fps>[\d.]+) frames/s end to end \((?P<all>[\d.]+) s with "
    r"scene load.*?rendering (?P<render>[\d.]+) s, encoding/writing (?P<encode>[\d.]+) s.*?waited (?P<wait>[\d.]+) s "
    r"for the writer, so (?P<bound>\S+) bounds"
)


def end_to_end(scene: str, args, config: dict, out: str) -> dict:
    """`warpsplat render` with one encoder setting, in this process; its summary line, parsed."""
    text = io.StringIO()
    flags = ["--preset", config["preset"], "--encoder-threads", config["threads"],
             "--encoder-threading", config["threading"], "--crf", args.crf, "--quiet", "--overwrite"]  # fmt: skip
    t = time.perf_counter()
    with contextlib.redirect_stdout(text):
        rc = cli_main(render_args(scene, args, out, *flags))
    wall = time.perf_counter() - t
    if rc != 0:
        raise SystemExit(f"warpsplat render failed ({rc}): {text.getvalue()}")
    m = SUMMARY.search(" ".join(text.getvalue().split()))
    if m is None:
        raise SystemExit(f"no summary line in: {text.getvalue()}")
    import av

    with av.open(out) as c:
        frames_in_file = c.streams.video[0].frames  # from the MP4 index: no decoding
    row = dict(config, fps=float(m["fps"]), wall_s=float(m["wall"]), with_load_s=float(m["all"]),
               call_s=wall, render_s=float(m["render"]), encode_s=float(m["encode"]), wait_s=float(m["wait"]),
               bound=m["bound"], mbytes=os.path.getsize(out) / 1e6, frames_in_file=frames_in_file)  # fmt: skip
    if not args.keep_videos:
        os.unlink(out)
    return row


# ------------------------------------------------------------------------------------------------ report


def table(result: dict) -> str:
    def name(r):
        return f"{r['threading']} / {r['preset']} / {r['threads'] or 'auto'}"

    rd = result["rendering"]
    best, default = result["best"], result["default"]
    lines = [
        f"Video bench: {result['scene']}, {result['path']} path, {result['size']}, crf {result['crf']}, "
        f"{result['device']}, {result['cores']} cores, {result['x264']}",
        "",
        f"Rendering {rd['frames']} frames: {rd['render_s']:.2f} s = {rd['render_fps']:.1f} frames/s; with the hand-off "
        f"to host buffers and the writer thread {rd['handoff_s']:.2f} s = {rd['handoff_fps']:.1f} frames/s.",
        "",
        f"Encoding {result['encode_frames']} frames alone (threading / preset / threads):",
        "",
        "| x264 setting | frames/s | cores busy | MB | PSNR mean / min (dB) | no visible loss |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for r in sorted(result["encoding"], key=lambda r: -r["encode_fps"]):
        mark = (" (default)" if r is default else "") + (" **best**" if r is best else "")
        lines.append(
            f"| {name(r)}{mark} | {r['encode_fps']:.1f} | {r['cores_busy']:.1f} | {r['mbytes']:.2f} | "
            f"{r['psnr_mean']:.2f} / {r['psnr_min']:.2f} | {'yes' if r['no_visible_loss'] else 'no'} |"
        )
    c = result["criteria"]
    lines += [
        "",
        f"No visible loss: mean PSNR within {c['max_db_loss']} dB of the default's, worst frame within "
        f"{c['max_min_db_loss']} dB of its worst, file at most {c['max_size_ratio']}x its size.",
        "",
        f"`warpsplat render` end to end, {rd['frames']} frames:",
        "",
        "| x264 setting | frames/s end to end | s (with load) | render s | encode s | render loop waited s | bound by "
        "| MB |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in result["end_to_end"]:
        lines.append(
            f"| {name(r)} | {r['fps']:.2f} | {r['wall_s']:.2f} ({r['with_load_s']:.2f}) | {r['render_s']:.2f} | "
            f"{r['encode_s']:.2f} | {r['wait_s']:.2f} | {r['bound']} | {r['mbytes']:.2f} |"
        )
    return "\n".join(lines)


def save(result: dict, out: str) -> None:
    """video_bench.json with what is measured so far (a run cut short keeps its finished parts)."""
    with open(os.path.join(out, "video_bench.json"), "w") as f:
        json.dump(result, f, indent=1)


# ------------------------------------------------------------------------------------------------ main


@torch.inference_mode()
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default="playbot_lod0.sog", help="scene file, or a name in --scenes-dir")
    p.add_argument("--scenes-dir", default=os.environ.get("WARPSPLAT_SCENES"))
    p.add_argument("--out", required=True, help="folder for video_bench.json / .md (videos are deleted)")
    p.add_argument("--size", type=lambda v: tuple(int(x) for x in v.split("x")), default=(1920, 1080))
    p.add_argument("--path", default="orbit", help="orbit, spiral or flythrough (as `warpsplat render --path`)")
    p.add_argument("--frames", type=int, default=600, help="frames rendered, and rendered end to end")
    p.add_argument("--encode-frames", type=int, default=120, help="frames held in memory for the encoder sweep")
    p.add_argument("--crf", type=int, default=18)
    p.add_argument("--presets", type=parse_list, default=parse_list("ultrafast,superfast,veryfast,faster,fast,medium"))
    p.add_argument("--threads", type=lambda v: parse_list(v, int), default=[0, 4, 8, 16],
                   help="thread counts swept with frame threading (0 = libx264 chooses)")  # fmt: skip
    p.add_argument("--slice-threads", type=lambda v: parse_list(v, int), default=[0],
                   help="thread counts swept with slice threading (few: the run stays short)")  # fmt: skip
    p.add_argument("--threadings", type=parse_list, default=list(THREADINGS))
    p.add_argument("--max-db-loss", type=float, default=0.5)
    p.add_argument("--max-min-db-loss", type=float, default=1.0)
    p.add_argument("--max-size-ratio", type=float, default=2.0)
    p.add_argument("--keep-videos", action="store_true", help="keep the end-to-end videos in --out")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    apply_thread_policy()  # as the command does (on a CPU only)

    scene_path = find_scene(args.scene, args.scenes_dir)
    scene = load_scene(scene_path)
    r = Renderer(scene)
    device = r.device
    cams, fps, what = build_cameras(build_parser().parse_args(render_args(scene_path, args, "x.mp4")), scene)
    w, h = args.size
    log(f"{scene_path}: {len(scene):,} Gaussians; {what} at {w}x{h}, {fps:g} fps; {device} ({r.backend})")
    result = {
        "scene": os.path.basename(scene_path),
        "path": args.path,
        "size": f"{w}x{h}",
        "crf": args.crf,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "cores": os.cpu_count(),
        "encode_frames": min(args.encode_frames, len(cams)),
        "criteria": {k: getattr(args, k) for k in ("max_db_loss", "max_min_db_loss", "max_size_ratio")},
        "defaults": {"preset": DEFAULT_PRESET, "threads": DEFAULT_THREADS, "threading": DEFAULT_THREADING},
    }

    result["rendering"] = time_rendering(r, cams, fps)
    rd = result["rendering"]
    log(f"rendering: {rd['render_fps']:.1f} frames/s alone, {rd['handoff_fps']:.1f} frames/s with the hand-off")

    frames = frames_to_encode(r, cams[: result["encode_frames"]])
    source = torch.from_numpy(np.stack(frames)).to(device)  # [K, H, W, 4] uint8, for the PSNRs
    del r
    rows = []
    video = os.path.join(args.out, "sweep.mp4")
    time_encoding(frames[:2], source[:2], fps, sweep_configs(args)[0], args.crf, video)  # load x264 before any timing
    for config in sweep_configs(args):
        row = time_encoding(frames, source, fps, config, args.crf, video)
        result.setdefault("x264", x264_version(video))
        os.unlink(video)
        rows.append(row)
        log(f"encode {config}: {row['encode_fps']:.1f} frames/s, {row['cores_busy']:.1f} cores, "
            f"{row['mbytes']:.2f} MB, PSNR {row['psnr_mean']:.2f} / {row['psnr_min']:.2f} dB")  # fmt: skip
    del frames, source
    save(result | {"encoding": rows}, args.out)
    default, best = pick_best(rows, args)
    result.update(encoding=rows, default=default, best=best)
    log(f"fastest with no visible loss: {best['threading']} / {best['preset']} / {best['threads']}")

    save(result, args.out)

    result["end_to_end"] = []
    runs = [default] + ([best] if best is not default else [])
    for n, row in enumerate(runs):
        config = {k: row[k] for k in ("threading", "preset", "threads")}
        e2e = end_to_end(scene_path, args, config, os.path.join(args.out, f"end_to_end_{n}.mp4"))
        result["end_to_end"].append(e2e)
        log(
            f"end to end {config}: {e2e['fps']:.2f} frames/s, waited {e2e['wait_s']:.2f} s, {e2e['bound']} bounds it; "
            f"the file holds {e2e['frames_in_file']} of {args.frames} frames"
        )
        save(result, args.out)

    text = table(result)
    with open(os.path.join(args.out, "video_bench.md"), "w") as f:
        f.write(text + "\n")
    log(f"wrote {args.out}/video_bench.json and video_bench.md")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
