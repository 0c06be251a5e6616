"""`warpsplat render` with camera paths: videos decoded back and compared with the renderer's own images,
PNG frame folders, resume, path files, chunked multi-worker renders, and one-line errors for bad input.

The scene is every 40th Gaussian of the bundled plant (2.8k Gaussians) so a 64x48 frame takes tens of ms on
the torch backend.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from renderer import Renderer, RenderSettings
from renderer.paths import Keyframe, flythrough_path, load_camera_path, opencv_to_opengl, orbit_path, save_camera_path
from scenes import load_scene
from tests.conftest import bundled
from tools.cli import main
from tools.metrics import psnr
from tools.render_jobs import frame_name
from tools.video import read_mp4

W, H = 64, 48
REPO = Path(__file__).parents[2]
BASE = ["--backend", "torch", "--quiet"]


@pytest.fixture(scope="module")
def renderer(small_scene):
    scene = load_scene(small_scene)
    return scene, Renderer(scene, backend="torch")


def reference_frames(renderer, cams) -> np.ndarray:
    r = renderer[1]
    return np.stack([r.render(c, RenderSettings()).rgba8[..., :3].numpy().copy() for c in cams])


def render(*args) -> int:
    return main(["render", *map(str, args), *BASE])


def test_orbit_video_decodes_to_the_rendered_frames(small_scene, renderer, tmp_path, capsys):
    out = tmp_path / "orbit.mp4"
    assert render(small_scene, "--path", "orbit", "--frames", 8, "--fps", 24, "--size", f"{W}x{H}", "--out", out) == 0
    frames, rate, size = read_mp4(str(out))
    assert frames.shape == (8, H, W, 3) and rate == 24 and size == (W, H)
    ref = reference_frames(renderer, orbit_path(renderer[0], W, H, 8))
    # crf 18 on tiny sparse frames: measured 32.0-35.5 dB per frame (YUV 4:2:0 chroma loss included)
    scores = [psnr(a, b, peak=255) for a, b in zip(frames, ref, strict=True)]
    assert min(scores) > 30 and np.mean(scores) > 32, scores
    text = capsys.readouterr().out
    assert "rasterize" in text and "frames/s end to end" in text  # the per-stage summary


def test_lossless_video_and_png_folder(small_scene, renderer, tmp_path):
    cams = flythrough_path(renderer[0], W, H, 6)
    ref = reference_frames(renderer, cams)
    out = tmp_path / "fly.mp4"
    assert render(small_scene, "--path", "flythrough", "--frames", 6, "--size", f"{W}x{H}", "--quality", "lossless",
                  "--out", out, "--alpha-video", tmp_path / "alpha.mp4") == 0  # fmt: skip
    frames, rate, _ = read_mp4(str(out))
    assert frames.shape[0] == 6 and rate == 30
    # crf 0 is lossless in YUV: only the RGB -> YUV 4:2:0 conversion remains (measured >= 37.5 dB)
    assert min(psnr(a, b, peak=255) for a, b in zip(frames, ref, strict=True)) > 35
    alpha, _, _ = read_mp4(str(tmp_path / "alpha.mp4"))
    assert alpha.shape == (6, H, W, 3) and alpha.max() > 200 and alpha.min() < 20  # coverage, grey

    folder = tmp_path / "frames"
    assert render(small_scene, "--path", "flythrough", "--frames", 6, "--size", f"{W}x{H}", "--out", folder) == 0
    pngs = sorted(folder.glob("frame_*.png"))
    assert [p.name for p in pngs] == [f"frame_{i:05d}.png" for i in range(6)]
    for p, r in zip(pngs, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(Image.open(p)), r)  # PNG is lossless


def test_resume_renders_only_missing_frames(small_scene, tmp_path, capsys):
    folder = tmp_path / "frames"
    args = [small_scene, "--path", "spiral", "--frames", 5, "--size", f"{W}x{H}", "--out", folder]
    assert render(*args) == 0
    before = {p.name: p.read_bytes() for p in folder.glob("frame_*.png")}
    (folder / "frame_00001.png").unlink()
    (folder / "frame_00004.png").unlink()
    capsys.readouterr()
    assert render(*args, "--resume") == 0
    assert "resuming: 3 of 5 frames present, 2 to render" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.glob("frame_*.png")} == before
    # a different path in the same folder is not resumed into it
    assert render(small_scene, "--path", "orbit", "--frames", 5, "--size", f"{W}x{H}", "--out", folder, "--resume") == 2
    assert "holds a different render" in capsys.readouterr().err


def test_keyframes_file_round_trip_renders(small_scene, renderer, tmp_path):
    scene = renderer[0]
    cams = orbit_path(scene, W, H, 4)
    path = tmp_path / "viewer_path.json"
    save_camera_path(path, [Keyframe.from_camera(c) for c in cams[:3]], width=W, height=H, fps=5, seconds=1.0)
    out = tmp_path / "kf.mp4"
    assert render(small_scene, "--path", path, "--out", out, "--crf", 0) == 0
    frames, rate, size = read_mp4(str(out))
    assert frames.shape[0] == 5 and rate == 5 and size == (W, H)  # fps * seconds frames, the file's size
    ref = reference_frames(renderer, load_camera_path(path).cameras)
    assert min(psnr(a, b, peak=255) for a, b in zip(frames, ref, strict=True)) > 35
    # the path starts and ends on its first and last keys
    assert psnr(ref[0], reference_frames(renderer, cams[:1])[0], peak=255) == float("inf")
    assert psnr(ref[-1], reference_frames(renderer, cams[2:3])[0], peak=255) == float("inf")


def test_frames_on_a_timed_path_file_says_what_it_does(small_scene, renderer, tmp_path, capsys):
    """--frames re-samples a path file over its own duration; the command says so, and the frame rate it gets."""
    path = tmp_path / "viewer_path.json"
    cams = orbit_path(renderer[0], W, H, 3)
    save_camera_path(path, [Keyframe.from_camera(c) for c in cams], width=W, height=H, fps=5, seconds=4.0)
    capsys.readouterr()
    assert render(small_scene, "--path", path, "--frames", 2, "--out", tmp_path / "f") == 0
    out = capsys.readouterr().out
    assert "2 frames re-sampled from the file's 20 over its 4 s (--fps sets another rate) at 0.5 fps" in out
    assert render(small_scene, "--path", path, "--frames", 2, "--fps", 30, "--out", tmp_path / "g") == 0
    assert "2 frames re-sampled from the file's 20 over its 4 s at 30 fps" in capsys.readouterr().out
    assert render(small_scene, "--path", path, "--frames", 20, "--out", tmp_path / "h") == 0  # the file's count
    assert "20 frames at 5 fps" in capsys.readouterr().out


def test_inria_and_nerfstudio_files_render(small_scene, renderer, tmp_path):
    from tests.renderer.paths.test_formats import garden_cameras_json

    cameras, *_ = garden_cameras_json(tmp_path)
    folder = tmp_path / "garden"
    assert render(small_scene, "--path", cameras, "--size", "48x32", "--out", folder) == 0
    assert len(list(folder.glob("frame_*.png"))) == 3  # one frame per training camera
    assert Image.open(folder / "frame_00000.png").size == (48, 32)
    # a nerfstudio camera_path.json made by hand from two orbit cameras (OpenGL axes, row-major, fov 60)
    cams = orbit_path(renderer[0], W, H, 2)
    frames = [{"camera_to_world": opencv_to_opengl(c.T_world_camera).reshape(-1).tolist(), "fov": 60.0, "aspect": W / H}
              for c in cams]  # fmt: skip
    path = tmp_path / "camera_path.json"
    path.write_text(json.dumps({"render_width": W, "render_height": H, "seconds": 0.5, "camera_path": frames}))
    folder = tmp_path / "ns"
    assert render(small_scene, "--path", path, "--out", folder) == 0
    got = np.stack([np.asarray(Image.open(folder / f"frame_{i:05d}.png")) for i in range(2)])
    np.testing.assert_array_equal(got, reference_frames(renderer, cams))  # same pose after two conversions
    out = tmp_path / "ns.mp4"
    assert render(small_scene, "--path", path, "--out", out) == 0
    video, rate, size = read_mp4(str(out))
    assert video.shape[0] == 2 and rate == 4 and size == (W, H)  # fps = frames / seconds


def test_a_colmap_model_renders_a_frame_per_image_and_says_what_it_leaves_out(small_scene, tmp_path, capsys):
    import zipfile

    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    folder = tmp_path / "views"
    assert render(small_scene, "--path", tmp_path / "model" / "bin", "--size", "48x32", "--out", folder) == 0
    assert len(list(folder.glob("frame_*.png"))) == 3  # one frame per registered image
    out = capsys.readouterr().out
    assert "colmap model from" in out and "3 frames (SIMPLE_RADIAL distortion not drawn: pinhole views)" in out


def test_two_workers_equal_one(small_scene, tmp_path, capsys):
    """Chunks rendered by 2 spawned CPU workers and remuxed (no re-encode) decode to exactly the frames of a
    single-worker render (crf 0: lossless, so any difference would be a rendering or stitching one)."""
    common = [
        small_scene,
        "--path",
        "flythrough",
        "--frames",
        7,
        "--size",
        f"{W}x{H}",
        "--crf",
        0,
        "--fps",
        12,
    ]
    assert render(*common, "--out", tmp_path / "one.mp4") == 0
    assert render(*common, "--out", tmp_path / "two.mp4", "--workers", 2) == 0
    text = capsys.readouterr().out
    assert "2 workers" in text and "stitched in" in text
    one, r1, _ = read_mp4(str(tmp_path / "one.mp4"))
    two, r2, _ = read_mp4(str(tmp_path / "two.mp4"))
    assert one.shape == two.shape == (7, H, W, 3) and r1 == r2 == 12
    np.testing.assert_array_equal(one, two)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]  # chunk files cleaned up


def test_killed_render_leaves_no_complete_looking_file(small_scene, tmp_path):
    out = tmp_path / "killed.mp4"
    cmd = [sys.executable, "-m", "tools", "render", small_scene, "--path", "orbit", "--frames", 2000,
           "--size", f"{W}x{H}", "--out", out, *BASE]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(list(map(str, cmd)), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not any(p.name.endswith(".part") for p in tmp_path.iterdir()):
            time.sleep(0.1)
        time.sleep(0.5)  # some frames into the encoder
        os.kill(proc.pid, signal.SIGKILL)  # the process this test started
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    parts = [p for p in tmp_path.iterdir() if p.name.endswith(".part")]
    assert parts and all(p.name.startswith(".killed.mp4.") for p in parts)  # hidden, named as unfinished


def test_ctrl_c_while_workers_start_waits_until_they_can_be_stopped():
    """Workers start with SIGINT blocked (so Ctrl-C during their torch import prints no tracebacks), and a Ctrl-C
    in the parent during the start raises only once it is over, when every worker has a handle to stop it by."""
    from tools.render_jobs import _interrupts_deferred

    before = signal.getsignal(signal.SIGINT)
    probe = "import signal; print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))"
    reached_end = False
    done = threading.Event()  # a thread that does not block SIGINT may take it (torch's and numpy's pools do)
    other = threading.Thread(target=done.wait, daemon=True)
    other.start()
    with pytest.raises(KeyboardInterrupt), _interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)  # this test's own process
        time.sleep(0.05)  # delivered, to whichever thread, while still inside
        child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        reached_end = True
    done.set()
    assert reached_end and child.stdout.strip() == "True"  # the start ran through; the child inherited the block
    assert signal.getsignal(signal.SIGINT) is before
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_sigterm_while_workers_start_waits_until_they_can_be_stopped():
    """A SIGTERM during the workers' start is noted, not raised there (raised in the middle of the start, it left the
    workers started so far running), and raised again for the handler in place once the start is over; the workers
    do not inherit it blocked (the parent stops them with it)."""
    from tools.render_jobs import _interrupts_deferred

    def interrupt(signum, frame):  # what `warpsplat render` puts in place
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    probe = "import signal; print(signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, []))"
    reached_end = False
    try:
        with pytest.raises(KeyboardInterrupt), _interrupts_deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # this test's own process
            time.sleep(0.05)
            child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
            reached_end = True
        assert reached_end and child.stdout.strip() == "False"
        assert signal.getsignal(signal.SIGTERM) is interrupt
        with _interrupts_deferred():  # nothing noted: nothing raised
            pass
    finally:
        signal.signal(signal.SIGTERM, before)


def test_single_image_mode_without_app(small_scene, tmp_path):
    out = tmp_path / "one.png"
    code = (
        "import sys; from tools.cli import main; "
        f"rc = main(['render', {small_scene!r}, '--size', '32x24', '--out', {str(out)!r}, '--backend', 'torch']); "
        "assert rc == 0; assert not [m for m in sys.modules if m == 'app' or m.startswith('app.')], 'app imported'"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True)
    assert Image.open(out).size == (32, 24)


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--path", "{tmp}/missing.json", "--out", "{tmp}/a.mp4"], "missing.json: no such file"),
        (["--path", "{tmp}/bad.json", "--out", "{tmp}/a.mp4"], "bad.json: not valid JSON"),
        (["--path", "wobble", "--out", "{tmp}/a.mp4"], "no such file (generated: orbit, spiral, flythrough)"),
        (["--path", "orbit", "--size", "63x47", "--out", "{tmp}/a.mp4"], "needs an even width and height"),
        (["--path", "orbit", "--out", "{tmp}/exists.mp4"], "output exists; pass --overwrite"),
        (
            ["--path", "orbit", "--out", "{tmp}/a.mp4", "--resume"],
            "only a frame-folder render can be resumed",
        ),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--crf", "60"], "--crf 60: must be in 0..51"),
        (["--path", "orbit", "--out", "{tmp}/framesdir"], "holds 1 frames; pass --resume"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--preset", "fastest"], "--preset fastest: not an x264 preset"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--encoder-threads", "-1"], "--encoder-threads -1: must be 0"),
        (
            ["--path", "orbit", "--out", "{tmp}/a.mp4", "--encoder-threading", "both"],
            "--encoder-threading both: must be one of frame, slice",
        ),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--alpha-video", "{tmp}/./a.mp4"], "the same file as --out"),
        (
            ["--path", "orbit", "--out", "{tmp}/a.mp4", "--alpha-video", "{tmp}/b.mp4", "--depth-video", "{tmp}/b.mp4"],
            "--depth-video {tmp}/b.mp4: the same file as --alpha-video",
        ),
        (["--path", "orbit", "--out", "{tmp}/clip.m4v"], "for a new folder named with a '.m4v' suffix, end it with /"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--radius", "nan"], "--radius nan: must be a finite number"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--turns", "inf"], "--turns inf: must be a finite number"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--rise=-inf"], "--rise -inf: must be a finite number"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--temporal", "4000"], "--temporal 4000: must be 0 (off) to 1024"),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--adagscale-tau", "nan"], "--adagscale-tau nan: must be 0"),
        (
            ["--path", "{tmp}/bad.json", "--out", "{tmp}/a.mp4", "--dataparser-transforms", "{tmp}/none.json"],
            "--dataparser-transforms {tmp}/none.json: no such file",
        ),
        (["--path", "orbit", "--out", "{tmp}/theirs"], "holds a render.json that no render wrote"),
        (["--path", "flythrough", "--out", "{tmp}/a.mp4", "--turns", "2"], "--turns: applies to --path orbit and"),
        (["--path", "spiral", "--out", "{tmp}/a.mp4", "--radius", "2", "--rise", "1"], "--radius, --rise: apply to"),
        (["--path", "{tmp}/bad.json", "--out", "{tmp}/a.mp4", "--fov", "90"], "--fov: applies to the default view"),
        (
            ["--path", "orbit", "--out", "{tmp}/f", "--crf", "20", "--preset", "slow"],
            "--crf, --preset: apply to a video",
        ),
        (["--path", "orbit", "--out", "{tmp}/a.mp4", "--dataparser-transforms", "{tmp}/bad.json"], "path file's"),
    ],
    ids=[
        "missing-file",
        "malformed-json",
        "unknown-path",
        "odd-size",
        "exists",
        "resume-video",
        "crf",
        "folder-exists",
        "preset",
        "encoder-threads",
        "encoder-threading",
        "alpha-is-out",
        "depth-is-alpha",
        "suffix-folder",
        "radius-nan",
        "turns-inf",
        "rise-inf",
        "temporal-names-flag",
        "tau-names-flag",
        "dataparser-missing",
        "foreign-manifest",
        "turns-unused",
        "radius-rise-unused",
        "fov-unused",
        "encoder-unused",
        "dataparser-unused",
    ],
)
def test_bad_input_exit_2_one_line(small_scene, tmp_path, capsys, extra, match):
    (tmp_path / "bad.json").write_text('{"camera_path": [')
    (tmp_path / "exists.mp4").write_bytes(b"x")
    (tmp_path / "framesdir").mkdir()
    (tmp_path / "framesdir" / "frame_00000.png").write_bytes(b"x")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "render.json").write_text('{"mine": 1}')  # the user's, in a folder of no frames
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert render(small_scene, "--frames", 2, "--size", f"{W}x{H}", *args) == 2
    err = capsys.readouterr().err
    match = match.replace("{tmp}", str(tmp_path))
    assert err.count("\n") == 1 and err.startswith("warpsplat render: error:") and match in err, err
    assert (tmp_path / "exists.mp4").read_bytes() == b"x"
    assert (tmp_path / "theirs" / "render.json").read_text() == '{"mine": 1}'
    assert not (tmp_path / "a.mp4").exists() and not (tmp_path / "clip.m4v").exists()


@pytest.mark.parametrize(
    "flags, unused",
    [
        (["--fps", "30"], "--fps"),
        (["--frames", "4", "--turns", "2"], "--frames"),
        (["--workers", "2", "--temporal", "4"], "--workers, --temporal"),
        (["--crf", "10"], "--crf"),
        (["--dataparser-transforms", "{tmp}/dp.json"], "--dataparser-transforms"),
    ],
)
def test_a_single_image_refuses_the_flags_it_would_ignore(small_scene, tmp_path, capsys, flags, unused):
    """A flag for a path or a video, given to a single-image render (no --path: perhaps it was forgotten), is
    refused up front rather than silently dropped; the flags a path's still (--path P --frame K) uses are not."""
    (tmp_path / "dp.json").write_text("{}")
    args = [a.replace("{tmp}", str(tmp_path)) for a in flags]
    assert render(small_scene, "--size", f"{W}x{H}", "--out", tmp_path / "x.png", *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {unused}: appl" in err and "would ignore" in err, err
    assert not (tmp_path / "x.png").exists()
    still = ["--path", "orbit", "--frame", "1", "--frames", "4", "--turns", "0.5", "--radius", "2", "--rise", "1"]
    assert render(small_scene, "--size", f"{W}x{H}", "--out", tmp_path / "x.png", *still) == 0


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--out", "{tmp}/.png"], "--out {tmp}/.png"),
        (["--path", "orbit", "--frames", "2", "--out", "{tmp}/.MP4"], "--out {tmp}/.MP4"),
        (["--path", "orbit", "--frames", "2", "--out", "{tmp}/v.mp4", "--alpha-video", "{tmp}/.mp4"],
         "--alpha-video {tmp}/.mp4"),
    ],
)  # fmt: skip
def test_an_output_named_only_by_its_format_is_refused(small_scene, tmp_path, capsys, flags, named):
    """`--out .mp4` wrote a hidden file that ls does not show: refused in one line before any work."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in flags]
    assert render(small_scene, "--size", f"{W}x{H}", *args) == 2
    err = capsys.readouterr().err
    want = f"error: {named.replace('{tmp}', str(tmp_path))}: names only the format: give the file a name (e.g. orbit"
    assert err.count("\n") == 1 and want in err, err
    assert os.listdir(tmp_path) == []


def test_a_folder_named_with_a_suffix_takes_a_slash(small_scene, tmp_path):
    """A frame folder whose name has a dot in it renders when written with a trailing / (or when it exists); the
    manifest of an earlier render in it is no obstacle (replacing it loses nothing), a user's file of that name is."""
    common = ["--path", "orbit", "--frames", 2, "--size", f"{W}x{H}"]
    assert render(small_scene, *common, "--out", f"{tmp_path}/run.1/") == 0
    assert sorted(p.name for p in (tmp_path / "run.1").iterdir()) == ["frame_00000.png", "frame_00001.png",
                                                                       "render.json"]  # fmt: skip
    for p in (tmp_path / "run.1").glob("*.png"):
        p.unlink()
    assert render(small_scene, *common, "--out", tmp_path / "run.1") == 0  # exists: no slash needed
    assert len(list((tmp_path / "run.1").glob("*.png"))) == 2


def test_odd_size_padded_on_request(small_scene, tmp_path, capsys):
    out = tmp_path / "odd.mp4"
    assert (
        render(small_scene, "--path", "orbit", "--frames", 2, "--size", "63x47", "--odd-size", "pad", "--out", out) == 0
    )
    assert "63x47 is odd; the video is 64x48" in capsys.readouterr().out
    assert read_mp4(str(out))[2] == (64, 48)


@pytest.fixture
def rendered(monkeypatch):
    """Record (camera, settings, future cameras) of every frame the renderer renders in this process."""
    log = []
    real = Renderer.render

    def spy(self, camera, settings=None, **kwargs):
        log.append((camera, settings, kwargs.get("future")))
        return real(self, camera, settings, **kwargs)

    monkeypatch.setattr(Renderer, "render", spy)
    return log


@pytest.mark.parametrize(
    "flags, want",
    [
        (["--adagscale-tau", "0.5"], {"adagscale": True, "adagscale_tau": 0.5}),
        (["--temporal", "3"], {"temporal_window": 3}),
        (["--background", "0,0.5,1"], {"background": (0.0, 0.5, 1.0)}),
        ([], {"blend_precision": "fp16"}),
        (["--blend-precision", "fp32"], {"blend_precision": "fp32"}),
    ],
    ids=["adagscale", "temporal", "background", "fp16 blending by default", "fp32 blending"],
)
def test_render_switches_reach_the_renderer(tmp_path, small_scene, rendered, flags, want):
    out = tmp_path / "x"  # a path's frames: the one render that takes all of them
    assert render(small_scene, "--size", "24x16", "--path", "orbit", "--frames", 2, "--out", out, *flags) == 0
    (_, settings, _), *_ = rendered
    assert {k: getattr(settings, k) for k in want} == want


def test_bad_switch_values_are_one_line_errors(small_scene, tmp_path, capsys):
    for flags in (["--adagscale-tau", "-1"], ["--temporal", "-2"], ["--background", "2,0,0"]):
        assert render(small_scene, "--size", "24x16", "--out", tmp_path / "x.png", *flags) == 2, flags
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("warpsplat render: error:"), err


def test_temporal_reuse_renders_the_same_frames(small_scene, tmp_path, monkeypatch):
    """--temporal K gives the renderer the path's next K - 1 cameras with each frame (whether a window or a plain
    frame serves it, as measured), and the frames are those of the exact render, bit for bit (PNG frames,
    lossless)."""
    from renderer.temporal import TemporalCache

    common = [small_scene, "--path", "flythrough", "--frames", 6, "--size", f"{W}x{H}"]
    assert render(*common, "--out", tmp_path / "exact") == 0
    given = []  # (camera, future) of every frame, as the temporal cache sees them
    real = TemporalCache.source

    def spy(self, scene, kernels, radius, camera, settings, future, **kwargs):
        given.append((camera, future))
        return real(self, scene, kernels, radius, camera, settings, future, **kwargs)

    monkeypatch.setattr(TemporalCache, "source", spy)
    assert render(*common, "--out", tmp_path / "window", "--temporal", 3) == 0
    poses = [camera.T_world_camera.tolist() for camera, _ in given]
    assert len(poses) == 6
    for i, (_, future) in enumerate(given):
        assert [c.T_world_camera.tolist() for c in future or []] == poses[i + 1 : i + 3]
    names = sorted(n for n in os.listdir(tmp_path / "exact") if n.endswith(".png"))
    assert len(names) == 6
    for name in names:
        a = np.asarray(Image.open(tmp_path / "exact" / name))
        b = np.asarray(Image.open(tmp_path / "window" / name))
        np.testing.assert_array_equal(a, b)


def test_depth_video_decodes_to_the_renderers_depth(small_scene, renderer, tmp_path):
    """--depth-video: one grey scale for the whole path (from the cameras' distances to the scene), each frame
    the renderer's expected depth through it; with two workers the chunks share that scale."""
    from tools.render_jobs import depth_grey, path_depth_range

    scene, r = renderer
    cams = flythrough_path(scene, W, H, 5)
    near_far = path_depth_range(scene, cams)
    want = []
    for cam in cams:
        out = r.render(cam, RenderSettings(depth=True))
        want.append(depth_grey(out.depth, out.alpha, near_far).numpy())
    common = [small_scene, "--path", "flythrough", "--frames", 5, "--size", f"{W}x{H}", "--quality", "lossless"]
    for workers in (1, 2):
        depth_mp4 = tmp_path / f"depth{workers}.mp4"
        assert render(*common, "--out", tmp_path / f"rgb{workers}.mp4", "--depth-video", depth_mp4,
                      "--workers", workers) == 0  # fmt: skip
        frames, rate, size = read_mp4(str(depth_mp4))
        assert frames.shape == (5, H, W, 3) and size == (W, H)
        for got, exp in zip(frames, want, strict=True):
            assert np.abs(got[..., 0].astype(int) - exp.astype(int)).max() <= 3  # grey through YUV, lossless
        assert frames.max() > 100 and (frames == 0).any()
    assert render(*common, "--out", tmp_path / "x.mp4", "--depth-video", tmp_path / "d.avi") == 2


def _over(png: Path, background) -> np.ndarray:
    """A straight-alpha RGBA PNG composited over a colour, in [0, 1]."""
    rgba = np.asarray(Image.open(png)).astype(np.float64) / 255
    assert rgba.shape[-1] == 4
    return rgba[..., :3] * rgba[..., 3:] + np.asarray(background) * (1 - rgba[..., 3:])


@pytest.mark.parametrize("path", [None, "orbit"])
def test_transparent_pngs_composite_to_the_render_over_that_background(small_scene, tmp_path, path):
    """--transparent: RGBA PNGs whose straight colour, composited over a background, is the frame rendered over it
    (a second render, not the same pixels): to within the 8-bit rounding of colour and alpha."""
    grey = (0.2, 0.5, 0.9)
    size = ["--size", f"{W}x{H}"]
    if path is None:  # the single image
        outs = [tmp_path / "t.png", tmp_path / "b.png"]
        assert render(small_scene, *size, "--out", outs[0], "--transparent") == 0
        assert render(small_scene, *size, "--out", outs[1], "--background", ",".join(map(str, grey))) == 0
        pairs = [outs]
    else:
        common = [small_scene, *size, "--path", path, "--frames", 3]
        assert render(*common, "--out", tmp_path / "t", "--transparent") == 0
        assert render(*common, "--out", tmp_path / "b", "--background", ",".join(map(str, grey))) == 0
        pairs = [(tmp_path / "t" / frame_name(i), tmp_path / "b" / frame_name(i)) for i in range(3)]
    for transparent, over in pairs:
        rgba = np.asarray(Image.open(transparent))
        assert (rgba[..., 3] == 0).any() and (rgba[..., 3] == 255).any()  # the scene on nothing
        assert (rgba[rgba[..., 3] == 0][:, :3] == 0).all()
        want = np.asarray(Image.open(over)).astype(np.float64) / 255
        assert np.abs(_over(transparent, grey) - want).max() <= 2.5 / 255


def test_transparent_refuses_what_it_cannot_be(small_scene, tmp_path, capsys):
    assert render(small_scene, "--path", "orbit", "--out", tmp_path / "v.mp4", "--transparent") == 2
    assert "H.264 has no alpha channel" in capsys.readouterr().err
    assert render(small_scene, "--out", tmp_path / "a.png", "--transparent", "--background", "1,1,1") == 2
    assert "--transparent renders over nothing: drop --background" in capsys.readouterr().err


def test_ortho_renders_orthographic_views_of_the_path(small_scene, renderer, tmp_path, capsys):
    """--ortho: each camera of the path made orthographic at the depth of the scene's centre (tools/render.py
    `ortho_views`); the frames are those of the renderer given those cameras with `ortho` set."""
    from renderer import orthographic
    from renderer.camera import framing_sphere

    folder = tmp_path / "o"
    assert render(small_scene, "--path", "orbit", "--frames", 2, "--size", f"{W}x{H}", "--ortho", "--out", folder) == 0
    assert "orbit, 2 frames, orthographic" in capsys.readouterr().out
    scene, r = renderer
    centre, _ = framing_sphere(scene)
    for i, cam in enumerate(orbit_path(scene, W, H, 2)):
        view = orthographic(cam, float((centre - cam.position) @ cam.T_world_camera[:3, 2]))
        want = r.render(view, RenderSettings(ortho=True)).rgba8[..., :3].numpy()
        np.testing.assert_array_equal(np.asarray(Image.open(folder / frame_name(i))), want)


def test_name_frames_names_the_training_views_after_their_images(small_scene, tmp_path, capsys):
    """--name-frames: one PNG per image of a COLMAP model (or INRIA cameras.json), named after it, the frames those
    of the same render without it, in the images' name order; --resume finds them; a path without images refuses."""
    import zipfile

    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    model, size = tmp_path / "model" / "bin", ["--size", "48x32"]
    assert render(small_scene, "--path", model, *size, "--out", tmp_path / "named", "--name-frames") == 0
    assert render(small_scene, "--path", model, *size, "--out", tmp_path / "numbered") == 0
    names = ["DSC08000.png", "DSC08001.png", "DSC08002.png"]
    assert sorted(p.name for p in (tmp_path / "named").glob("*.png")) == names
    for i, name in enumerate(names):
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "named" / name)),
                                      np.asarray(Image.open(tmp_path / "numbered" / frame_name(i))))  # fmt: skip
    (tmp_path / "named" / "DSC08001.png").unlink()
    capsys.readouterr()
    assert render(small_scene, "--path", model, *size, "--out", tmp_path / "named", "--name-frames", "--resume") == 0
    assert "resuming: 2 of 3 frames present, 1 to render" in capsys.readouterr().out
    assert (tmp_path / "named" / "DSC08001.png").exists()
    assert render(small_scene, "--path", "orbit", *size, "--out", tmp_path / "o", "--name-frames") == 2
    assert "--name-frames: the path names no image for each frame" in capsys.readouterr().err


def test_compare_to_measures_the_frames_against_the_photos(small_scene, tmp_path, capsys):
    """--compare-to: the frames against the photos their images name. Photos made from the frames with every
    channel moved by exactly 10 levels give PSNR 10 log10(255^2 / 100) = 28.13 dB whatever the picture; the
    frames themselves as photos are identical; a photo in another format, or at another size, is still found."""
    import math
    import zipfile

    with zipfile.ZipFile(bundled("garden_sparse.zip")) as z:
        z.extractall(tmp_path / "model")
    model, size = tmp_path / "model" / "bin", ["--size", "48x32"]
    assert render(small_scene, "--path", model, *size, "--out", tmp_path / "f", "--name-frames") == 0
    photos = tmp_path / "images"
    photos.mkdir()
    for i, name in enumerate(["DSC08000", "DSC08001", "DSC08002"]):
        frame = np.asarray(Image.open(tmp_path / "f" / f"{name}.png")).astype(np.int16)
        moved = np.where(frame <= 245, frame + 10, frame - 10).astype(np.uint8)
        img = Image.fromarray(moved)
        if i == 2:  # a PNG where the model names a JPEG, at twice the size
            img.resize((96, 64), Image.Resampling.NEAREST).save(photos / f"{name}.png")
        else:
            img.save(photos / f"{name}.JPG", format="PNG")  # lossless, whatever the extension says
    capsys.readouterr()
    args = ["--path", model, *size, "--out", tmp_path / "f", "--name-frames", "--resume", "--compare-to", photos]
    assert render(small_scene, *args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    want = 10 * math.log10(255**2 / 100)
    assert line.startswith(f"compared with the photos in {photos}: PSNR ") and "over 3 images" in line
    assert "1 resized to the frames' size" in line
    got = float(line.split("PSNR ")[1].split(" dB")[0])
    assert abs(got - want) < 0.6, (got, want)  # the resized one is near, not exact
    assert render(small_scene, "--path", "orbit", *size, "--out", tmp_path / "o", "--compare-to", photos) == 2
    err = capsys.readouterr().err
    assert f"--compare-to {photos}: needs --name-frames" in err and err.count("\n") == 1
    (tmp_path / "elsewhere").mkdir()  # a folder of none of the images: refused before a frame is rendered
    args = ["--path", model, *size, "--out", tmp_path / "g", "--name-frames", "--compare-to", tmp_path / "elsewhere"]
    assert render(small_scene, *args) == 2
    err = capsys.readouterr().err
    assert "holds none of the path's 3 images (such as DSC08000.JPG)" in err and err.count("\n") == 1
    assert not (tmp_path / "g").exists()


def test_frame_renders_one_frame_of_a_path_as_a_still(small_scene, renderer, tmp_path, capsys):
    """--frame K with --path and a .png: that frame of the path alone, at --size (a saved view's still at any size),
    the same pixels as the renderer gives that camera; out of range, or without --path, a one-line error."""
    keys = [Keyframe(c.T_world_camera, 50.0) for c in orbit_path(renderer[0], W, H, 3)]
    path = tmp_path / "camera_path.json"
    save_camera_path(path, keys, width=W, height=H, fps=10, seconds=1.0)
    out = tmp_path / "still.png"
    assert render(small_scene, "--path", path, "--frame", 4, "--size", "80x60", "--out", out) == 0
    cam = load_camera_path(path, width=80, height=60).cameras[4]
    want = renderer[1].render(cam, RenderSettings()).rgba8[..., :3].numpy()
    np.testing.assert_array_equal(np.asarray(Image.open(out)), want)
    assert render(small_scene, "--path", path, "--frame", 10, "--out", tmp_path / "a.png") == 2
    assert "--frame 10: the path has 10 frames (0 to 9)" in capsys.readouterr().err
    assert render(small_scene, "--frame", 0, "--out", tmp_path / "b.png") == 2
    assert "--frame 0: needs --path" in capsys.readouterr().err
    assert render(small_scene, "--path", path, "--out", tmp_path / "c.png") == 2
    assert "(--frame K renders one of its frames as c.png)" in capsys.readouterr().err


def test_a_datasets_cameras_render_in_nerfstudios_world_with_its_dataparser_file(small_scene, renderer, tmp_path,
                                                                                  capsys):  # fmt: skip
    """--dataparser-transforms: a transforms.json camera in the dataset's world, whose image under nerfstudio's
    transform (p' = s (R p + t)) is the default view of the scene, renders that view; without the file it renders
    something else. The dataset's camera is made here by inverting the transform on the view's pose."""
    from renderer.camera import default_camera
    from renderer.paths.rotations import axis_angle

    R, t, s = axis_angle(np.array([1.0, 2.0, -0.5]), 0.7), np.array([0.3, -0.2, 1.1]), 0.25
    (tmp_path / "dataparser_transforms.json").write_text(
        json.dumps({"transform": np.hstack([R, t[:, None]]).tolist(), "scale": s})
    )
    view = default_camera(renderer[0], W, H)
    dataset = np.eye(4)
    dataset[:3, :3] = R.T @ view.T_world_camera[:3, :3]
    dataset[:3, 3] = R.T @ (view.T_world_camera[:3, 3] / s - t)
    frame = {"file_path": "images/a.png", "transform_matrix": opencv_to_opengl(dataset).tolist()}
    intrinsics = {"w": W, "h": H, "fl_x": view.fx, "fl_y": view.fy, "cx": view.cx, "cy": view.cy}
    (tmp_path / "transforms.json").write_text(json.dumps(intrinsics | {"frames": [frame]}))
    args = ("--path", tmp_path / "transforms.json", "--frame", 0)
    out = tmp_path / "moved.png"
    assert render(small_scene, *args, "--dataparser-transforms", tmp_path / "dataparser_transforms.json",
                  "--out", out) == 0  # fmt: skip
    assert "taken into nerfstudio's dataparser world by dataparser_transforms.json" in capsys.readouterr().out
    want = reference_frames(renderer, [view])[0]
    got = np.array(Image.open(out).convert("RGB"))
    assert psnr(got, want) > 50 and want.std() > 10  # the view sees the plant
    assert render(small_scene, *args, "--out", tmp_path / "plain.png") == 0
    assert psnr(np.array(Image.open(tmp_path / "plain.png").convert("RGB")), want) < 20
    (tmp_path / "bad.json").write_text('{"transform": [[1, 0, 0, 0]], "scale": 1}')
    assert (
        render(small_scene, *args, "--dataparser-transforms", tmp_path / "bad.json", "--out", tmp_path / "c.png") == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dataparser-transforms" in err and "bad.json: transform: expected" in err
