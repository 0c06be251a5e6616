"""The video writer of `warpsplat render`: frames handed to a writer thread through a few host buffers encode to
the same video as frames written one by one, the x264 knobs reach the encoder, and a failing encoder or an
interrupt ends with a one-line message and no temporary file.

Same small scene as test_render_video.py: every 40th Gaussian of the bundled plant at 64x48, torch backend.
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
from types import SimpleNamespace

import av
import numpy as np
import pytest
import torch

from renderer import Renderer, RenderSettings
from renderer.paths import orbit_path
from scenes import load_scene
from tests.tools.test_render_video import H, W, render  # the same CLI call and image size
from tools.cli import main
from tools.metrics import psnr
from tools.render_jobs import FrameSink, FrameTimes, Job, summary
from tools.threads import apply_thread_policy
from tools.video import (
    DEFAULT_PRESET,
    DEFAULT_THREADING,
    DEFAULT_THREADS,
    X264_PRESETS,
    Mp4Writer,
    concat_mp4,
    read_mp4,
)

N = 10  # more frames than FrameSink.SLOTS, so host buffers are reused


def orbit(small_scene: str, out, *extra, size=(W, H)) -> int:
    return render(small_scene, "--path", "orbit", "--frames", N, "--size", f"{size[0]}x{size[1]}", "--out", out, *extra)


def leftovers(folder) -> list[str]:
    return [p for p in os.listdir(folder) if p.endswith(".part")]


def test_threaded_writer_equals_sequential_writes(small_scene, tmp_path, monkeypatch, capsys):
    """The render loop copies each frame into a host buffer and a writer thread encodes it. With a writer that
    starts only once the loop has run out of host buffers, so that the loop certainly waits for one and buffers
    are reused, the video decodes to exactly the frames of the same encoder fed one frame at a time, and the
    summary reports the wait. crf 0: x264 here does not repeat its lossy output bit for bit (two encodes of the
    same frames at crf 18 differed from the 7th frame on, with one thread too), while lossless output depends
    only on its input.

    Which of the two bounds the render is not asserted here: it depends on how fast this machine renders (a
    fixed sleep in the writer made the encoder the bound only while rendering was fast; under load it was not).
    test_summary_names_the_bound checks the wording from given waits."""
    apply_thread_policy()  # render as the command does: torch's thread count changes the float sums' order
    scene = load_scene(small_scene)
    r = Renderer(scene, backend="torch")
    cams = orbit_path(scene, W, H, N)
    ref = np.stack([r.render(c, RenderSettings()).rgba8.numpy().copy() for c in cams])
    sequential = tmp_path / "sequential.mp4"
    with Mp4Writer(str(sequential), W, H, 30, crf=0) as writer:
        for frame in ref:
            writer.write(frame)

    loop_blocked = threading.Event()  # set when the render loop asks for a buffer and none is free or new
    real_free_slot, real_write = FrameSink._free_slot, Mp4Writer.write

    def free_slot(self):
        if self._slots_made >= FrameSink.SLOTS and self._free.empty():
            loop_blocked.set()  # the writer has freed none yet (it waits for this): the loop waits from here
        return real_free_slot(self)

    def gated_write(self, rgb):
        assert loop_blocked.wait(timeout=120), "the render loop never ran out of host buffers"
        time.sleep(0.2)  # the loop, blocked, waits at least this long for the first buffer
        real_write(self, rgb)

    monkeypatch.setattr(FrameSink, "_free_slot", free_slot)
    monkeypatch.setattr(Mp4Writer, "write", gated_write)
    threaded = tmp_path / "threaded.mp4"
    assert orbit(small_scene, threaded, "--crf", 0) == 0
    text = capsys.readouterr().out
    waited = re.search(r"the render loop waited ([0-9.]+) s for the writer", text)
    assert waited and float(waited.group(1)) >= 0.1, text
    a, _, _ = read_mp4(str(sequential))
    b, _, _ = read_mp4(str(threaded))
    assert a.shape == (N, H, W, 3)
    np.testing.assert_array_equal(a, b)
    # and they are the renderer's frames, through YUV 4:2:0 (measured >= 37.5 dB in test_render_video)
    assert min(psnr(x, y[..., :3], peak=255) for x, y in zip(b, ref, strict=True)) > 35


def test_summary_names_the_bound():
    """The summary calls the encoder the bound when the render loop waited for the writer a tenth of the wall time
    or more (per worker), rendering otherwise."""
    times = FrameTimes(stage_ms=[{"total": 5.0}] * 4, write_ms=[20.0] * 4, wait_s=0.5)
    assert "so encoding/writing bounds this render" in summary(times, 4, 2.0, 3.0, 0.0, 1)
    assert "so rendering bounds this render" in summary(times, 4, 2.0, 3.0, 0.0, 3)  # 0.5 s < 0.1 x 2 s x 3
    times.wait_s = 0.0
    assert "so rendering bounds this render" in summary(times, 4, 2.0, 3.0, 0.0, 1)


def test_sink_bounds_its_buffers_and_copies_frames(tmp_path):
    """FrameSink keeps at most SLOTS host buffers, and copies each frame: changing the source tensor after put()
    (as the renderer does with its workspace next frame) does not change what is written."""
    from PIL import Image

    size = SimpleNamespace(width=W, height=H)  # the sink reads only the frame size from the cameras
    job = Job(scene=None, up=None, backend="torch", settings=None, cameras=[size] * 12, indices=list(range(12)),
              folder=str(tmp_path))  # fmt: skip
    sink = FrameSink(job)
    frame = torch.zeros(H, W, 4, dtype=torch.uint8)
    try:
        for i in range(12):
            frame.fill_(i * 20)
            sink.put(i, frame)
            frame.fill_(255)  # the "next frame" overwrites the renderer's buffer at once
        sink.finish()
    except BaseException:
        sink.abort()
        raise
    assert sink._slots_made <= FrameSink.SLOTS
    for i in range(12):
        assert (np.asarray(Image.open(tmp_path / f"frame_{i:05d}.png")) == i * 20).all(), i


def test_encoder_options_reach_x264(small_scene, tmp_path):
    """x264 writes its settings into the stream (an SEI message): the options given are the ones it ran with.
    64x160: x264 gives a frame no more slices than it has rows of macroblocks, nor one of 48 rows any."""
    common = ("--encoder-threads", 2, "--quality", "draft")
    sliced = tmp_path / "sliced.mp4"
    medium = ("--encoder-threading", "slice", "--preset", "medium")
    assert orbit(small_scene, sliced, *medium, *common, size=(64, 160)) == 0
    sei = sliced.read_bytes()
    assert b" threads=2 " in sei and b"sliced_threads=1" in sei and b"subme=7" in sei  # subme 7: medium
    framed = tmp_path / "framed.mp4"
    ultrafast = ("--encoder-threading", "frame", "--preset", "ultrafast")
    assert orbit(small_scene, framed, *ultrafast, *common, size=(64, 160)) == 0
    sei = framed.read_bytes()
    assert b" threads=2 " in sei and b"sliced_threads=0" in sei
    assert b"cabac=0" in sei and b"subme=0" in sei  # what preset ultrafast turns off
    assert read_mp4(str(framed))[0].shape == (N, 160, 64, 3)


@pytest.mark.parametrize(
    "error, message",
    [
        (OSError(errno.ENOSPC, "No space left on device"), "warpsplat render: error: No space left on device"),
        (
            av.error.InvalidDataError(errno.EINVAL, "Invalid data found when processing input"),
            "warpsplat render: error: H.264 encoding failed: Invalid data found when processing input",
        ),
    ],
    ids=["disk-full", "ffmpeg-error"],
)
def test_encoder_failure_mid_run_is_one_line_and_leaves_nothing(small_scene, tmp_path, monkeypatch, capsys,
                                                                error, message):  # fmt: skip
    real_write = Mp4Writer.write

    def failing_write(self, rgb):
        if self.frames == 3:
            raise error
        real_write(self, rgb)

    monkeypatch.setattr(Mp4Writer, "write", failing_write)
    out = tmp_path / "fail.mp4"
    assert orbit(small_scene, out, "--alpha-video", tmp_path / "alpha.mp4") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.strip() == message, err
    assert os.listdir(tmp_path) == []  # no output, no side video, no .part file


def test_interrupt_mid_run_leaves_nothing(small_scene, tmp_path, monkeypatch, capsys):
    calls = []

    def interrupting(real_start):
        def interrupted(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 6:  # frames already queued to the writer, some encoded
                raise KeyboardInterrupt
            return real_start(self, *args, **kwargs)

        return interrupted

    # each frame's start: one by one or in flight (render_stream), or a frame like the last one run straight away
    for start in ("_start", "_start_again"):
        monkeypatch.setattr(Renderer, start, interrupting(getattr(Renderer, start)))
    assert orbit(small_scene, tmp_path / "stop.mp4") == 130
    assert "interrupted" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def grey_frames(levels) -> np.ndarray:
    """Flat 16x16 frames, one grey level each: which frame a decoded one is shows through the YUV round trip."""
    return np.stack([np.full((16, 16, 3), v, np.uint8) for v in levels])


def test_writer_shows_the_video_only_when_complete(tmp_path):
    """Mp4Writer encodes into a hidden temporary beside the output and renames it on close: while frames are
    being written (a render that may yet be killed), nothing is under the output name, so a truncated video
    never passes for a finished one; after close the output holds every frame and no temporary is left."""
    out = tmp_path / "v.mp4"
    writer = Mp4Writer(str(out), 16, 16, 30, crf=0)
    try:
        for frame in grey_frames([40, 200]):
            writer.write(frame)
        assert not out.exists()
        assert leftovers(tmp_path) == [os.path.basename(writer.tmp)] and writer.tmp.startswith(
            str(tmp_path / ".v.mp4.")
        )
        writer.close()
    except BaseException:
        writer.abort()
        raise
    assert os.listdir(tmp_path) == ["v.mp4"]
    frames, _, _ = read_mp4(str(out))
    np.testing.assert_allclose(frames.mean(axis=(1, 2, 3)), [40, 200], atol=2)


def test_joined_video_appears_only_when_complete(tmp_path, monkeypatch):
    """A multi-worker render's parts are joined by concat_mp4 into a hidden temporary beside the output, renamed
    once every part is in: the output name never holds a partly joined video (the join may fail on a later part
    or a full disk). The joined video decodes to every part's frames, in order."""
    parts = []
    for k, levels in enumerate([[20, 60, 100], [140, 180, 220]]):
        part = str(tmp_path / f"part{k}.mp4")
        writer = Mp4Writer(str(tmp_path / "unused.mp4"), 16, 16, 30, crf=0, temp_path=part)
        for frame in grey_frames(levels):
            writer.write(frame)
        parts.append(writer.finish())
    out = tmp_path / "joined.mp4"
    renames = []
    real = os.replace

    def recording(src, dst, *args, **kwargs):
        renames.append((os.fspath(src), os.fspath(dst), os.path.exists(dst)))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", recording)
    assert concat_mp4(parts, str(out)) == 6
    assert len(renames) == 1, renames
    src, dst, existed = renames[0]
    assert dst == str(out) and not existed  # the output name appears only complete
    assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(".joined.mp4."), src
    assert sorted(os.listdir(tmp_path)) == ["joined.mp4", "part0.mp4", "part1.mp4"]  # no temporary left
    frames, _, _ = read_mp4(str(out))
    np.testing.assert_allclose(frames.mean(axis=(1, 2, 3)), [20, 60, 100, 140, 180, 220], atol=2)


def test_encoder_options_have_help(capsys):
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--preset PRESET", "--encoder-threads N", "--encoder-threading HOW"):
        assert flag in text, flag
    assert ", ".join(X264_PRESETS) in text and f"(default {DEFAULT_PRESET})" in text


def test_video_bench_script_runs(small_scene, tmp_path, capsys):
    """tests/gpu/video_bench.py (run by hand on the GPU machine) works end to end on a tiny render."""
    import importlib.util
    import json
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("video_bench", Path(__file__).parents[1] / "gpu" / "video_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    argv = ["--scene", small_scene, "--size", f"{W}x{H}", "--frames", "6", "--encode-frames", "4",
            "--presets", "ultrafast,medium", "--threads", "0,2", "--out", str(tmp_path)]  # fmt: skip
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    default = f"| {DEFAULT_THREADING} / {DEFAULT_PRESET} / {DEFAULT_THREADS or 'auto'} (default)"
    assert text.rstrip().endswith("|") and default in text, text
    result = json.loads((tmp_path / "video_bench.json").read_text())
    # frame x 2 presets x 2 thread counts, slice x 2 presets x auto, and the default if it is none of those
    assert len(result["encoding"]) in (6, 7)
    assert all(r["psnr_min"] > 30 and r["frames"] == 4 for r in result["encoding"])
    assert [r["frames_in_file"] for r in result["end_to_end"]] in ([6], [6, 6])
    assert sorted(os.listdir(tmp_path)) == ["video_bench.json", "video_bench.md"]  # the videos are deleted


def test_writer_defaults_are_frame_threads_at_preset_faster(tmp_path):
    """Unless told otherwise the writer runs x264 as BENCHMARKS.md, section 11 chose: frame threading at preset
    faster (x264's preset table: subme 4, 2 reference frames; medium has 7 and 3), crf 18."""
    out = tmp_path / "d.mp4"
    with Mp4Writer(str(out), 64, 160, 30, threads=2) as writer:
        for level in (40, 200, 120):
            writer.write(np.full((160, 64, 3), level, np.uint8))
    sei = out.read_bytes()
    assert b"sliced_threads=0" in sei and b" threads=2 " in sei
    assert b"subme=4" in sei and b" ref=2 " in sei and b"crf=18.0" in sei


def test_frame_rates_are_exact_fractions():
    """29.97 and its kin are the NTSC rates n/1001; other rates their own fraction."""
    from fractions import Fraction

    from tools.video import fps_fraction

    assert [fps_fraction(f) for f in (23.976, 29.97, 59.94)] == [Fraction(24000, 1001), Fraction(30000, 1001),
                                                                 Fraction(60000, 1001)]  # fmt: skip
    assert [fps_fraction(f) for f in (24, 30, 12.5)] == [24, 30, Fraction(25, 2)]


def test_read_back_gives_rgb_frames_rate_and_width_by_height(tmp_path):
    """A 32x16 video of one red, one green and one blue frame at 25 frames/s reads back as [3, 16, 32, 3] RGB in
    that order (crf 0: lossless in YUV, so each colour comes back within the conversion's rounding), 25, (32, 16)."""
    out = tmp_path / "rgb.mp4"
    colours = np.array([[200, 30, 30], [30, 200, 30], [30, 30, 200]], np.uint8)
    with Mp4Writer(str(out), 32, 16, 25, crf=0) as writer:
        for c in colours:
            writer.write(np.ascontiguousarray(np.broadcast_to(c, (16, 32, 3))))
    frames, rate, size = read_mp4(str(out))
    assert frames.shape == (3, 16, 32, 3) and rate == 25 and size == (32, 16)
    np.testing.assert_allclose(frames.mean(axis=(1, 2)), colours, atol=4)


def test_three_parts_join_in_order(tmp_path):
    """Each part's timestamps go on after all the parts before it (not only the one before): three parts of two
    frames decode to their six frames in order."""
    parts = []
    for k, levels in enumerate([[20, 50], [80, 110], [140, 170]]):
        writer = Mp4Writer(str(tmp_path / "unused.mp4"), 16, 16, 30, crf=0, temp_path=str(tmp_path / f"p{k}.mp4"))
        for frame in grey_frames(levels):
            writer.write(frame)
        parts.append(writer.finish())
    assert concat_mp4(parts, str(tmp_path / "joined.mp4")) == 6
    frames, rate, _ = read_mp4(str(tmp_path / "joined.mp4"))
    np.testing.assert_allclose(frames.mean(axis=(1, 2, 3)), [20, 50, 80, 110, 140, 170], atol=2)
    assert rate == 30


def test_odd_frames_are_padded_with_their_edge_pixels(tmp_path):
    """pad_odd: a 15x15 frame goes out 16x16, its last column and row repeated (not black): a frame dark but for
    a bright right column and bottom row reads back bright in the added column and row."""
    frame = np.full((15, 15, 3), 40, np.uint8)
    frame[:, -1] = frame[-1, :] = 200
    with Mp4Writer(str(tmp_path / "odd.mp4"), 15, 15, 30, crf=0, pad_odd=True) as writer:
        writer.write(frame)
    (got,), _, size = read_mp4(str(tmp_path / "odd.mp4"))
    assert size == (16, 16)
    assert np.abs(got[:, 15].astype(int) - 200).max() <= 3 and np.abs(got[15].astype(int) - 200).max() <= 3
    assert np.abs(got[:14, :14].astype(int) - 40).max() <= 3
