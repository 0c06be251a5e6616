"""H.264 MP4 output for `warpsplat render`, through PyAV (its wheels bundle FFmpeg; no system ffmpeg).

PyAV rather than imageio-ffmpeg: it encodes at the exact frame size (imageio-ffmpeg's default
macro_block_size=16 resizes), it runs in-process (no pipe to a subprocess), and it can remux H.264 packets
from several files into one without re-encoding, which the multi-worker render needs.

yuv420p (what every player decodes) halves the chroma resolution, so width and height must be even:
odd sizes are refused by the caller or padded here (edge pixels repeated on the right / bottom), never
resized. Colour conversion is FFmpeg's default RGB -> YUV (BT.601, limited range), the same matrix its
decoder uses back, so a decode to RGB compares with the rendered frames.

Files are written under a temporary name beside the target and renamed when complete: a killed render
leaves a `.NAME.*.part` file, never a truncated file under the output name.
"""

from __future__ import annotations

import contextlib
import os
from fractions import Fraction

import numpy as np

CODEC = "libx264"
PIX_FMT = "yuv420p"
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
THREADINGS = ("frame", "slice")  # how x264 spreads one encoder over threads

# The encoder settings `warpsplat render` uses unless told otherwise (tests/gpu/video_bench.py; BENCHMARKS.md,
# section 11). On the 16-core GPU machine, 120 frames of a 1080p fly-through at crf 18: PyAV's own choice,
# slice threading (x264 cuts each frame into a slice per thread) at preset medium, encoded 66 frames/s; frame
# threading (several frames in flight) 94 at medium and 119 at faster, 0.4 dB under medium with a smaller
# file. Faster presets were quicker still but wrote 3-9x larger files at crf 18. Thread count 0 lets libx264
# pick from the cores, which was as fast as 16 and faster than 4 or 8.
DEFAULT_PRESET = "faster"
DEFAULT_THREADS = 0
DEFAULT_THREADING = "frame"


def fps_fraction(fps: float) -> Fraction:
    """A frame rate as an exact fraction; 29.97 and friends map to the NTSC rates (30000/1001)."""
    for num in (24000, 30000, 48000, 60000, 120000):
        if abs(fps - num / 1001) < 1e-3:
            return Fraction(num, 1001)
    return Fraction(fps).limit_denominator(1000)


def even_size(width: int, height: int) -> tuple[int, int]:
    return width + width % 2, height + height % 2


def temp_path_for(path: str, suffix: str = ".part") -> str:
    """A new temporary file beside `path`, named so that the next write to `path` removes it if this process
    is killed before renaming it (scenes.atomic)."""
    from scenes.atomic import temp_path

    return temp_path(path, suffix)


class Mp4Writer:
    """Encodes RGB frames to an H.264 MP4.

    Args:
        path: the output .mp4; written as a temporary file and renamed over `path` on `close()`.
        width, height: frame size of the frames passed to `write`.
        fps: frames per second.
        crf: x264 constant rate factor, 0 (lossless in YUV) .. 51; 18 is visually lossless.
        preset: x264 speed preset ("ultrafast" .. "veryslow"; X264_PRESETS).
        threads: encoder threads; 0 lets libx264 choose from the core count.
        threading: "frame" (x264 encodes several frames at once: the faster way to use many cores, with a few
            frames of latency) or "slice" (each frame cut into one slice per thread; PyAV's default).
        pad_odd: pad odd sizes to even (edge repeat, right/bottom); else odd sizes raise ValueError.
        temp_path: write here instead of a fresh temporary name (the chunk files of a multi-worker render).
    """

    def __init__(
        self,
        path: str,
        width: int,
        height: int,
        fps: float,
        *,
        crf: int = 18,
        preset: str = DEFAULT_PRESET,
        threads: int = DEFAULT_THREADS,
        threading: str = DEFAULT_THREADING,
        pad_odd: bool = False,
        temp_path: str | None = None,
    ):
        import av

        if preset not in X264_PRESETS:
            raise ValueError(f"preset {preset!r}: not an x264 preset ({', '.join(X264_PRESETS)})")
        if threading not in THREADINGS or threads < 0:
            raise ValueError(f"threads {threads}, threading {threading!r}: expected >= 0 and one of {THREADINGS}")
        if (width % 2 or height % 2) and not pad_odd:
            raise ValueError(f"{width}x{height}: H.264 in {PIX_FMT} needs an even width and height")
        self.path = path
        self.width, self.height = width, height
        self.enc_width, self.enc_height = even_size(width, height)
        self.tmp = temp_path or temp_path_for(path)
        self.frames = 0
        self._container = av.open(self.tmp, mode="w", format="mp4")
        rate = fps_fraction(fps)
        self._stream = self._container.add_stream(CODEC, rate=rate)
        self._stream.width, self._stream.height = self.enc_width, self.enc_height
        self._stream.pix_fmt = PIX_FMT
        codec = self._stream.codec_context
        codec.time_base = 1 / rate
        # libx264 reads these when the codec opens (the first frame): thread_count becomes x264's i_threads
        # (0 = auto) and thread_type chooses between its frame and slice threading
        codec.thread_count = int(threads)
        codec.thread_type = "FRAME" if threading == "frame" else "SLICE"
        self._stream.options = {"crf": str(int(crf)), "preset": preset}
        self._closed = False

    def write(self, rgb: np.ndarray) -> None:
        """Encode one frame: [H, W, 3] uint8 RGB or [H, W, 4] RGBA, alpha ignored (H, W as given to the
        constructor). RGBA goes to FFmpeg as it is: no copy to drop the alpha channel, and the same YUV."""
        import av

        if rgb.shape[:2] != (self.height, self.width) or rgb.ndim != 3 or rgb.shape[2] not in (3, 4):
            raise ValueError(f"frame {rgb.shape}: expected ({self.height}, {self.width}, 3 or 4) uint8")
        if rgb.dtype != np.uint8:
            raise ValueError(f"frame {rgb.shape} {rgb.dtype}: expected uint8")
        if (self.enc_width, self.enc_height) != (self.width, self.height):
            rgb = np.pad(
                rgb,
                ((0, self.enc_height - self.height), (0, self.enc_width - self.width), (0, 0)),
                mode="edge",
            )
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24" if rgb.shape[2] == 3 else "rgba")
        frame.pts = self.frames
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.frames += 1

    def finish(self) -> str:
        """Flush the encoder and close the container; the file stays at its temporary name (returned)."""
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        self._closed = True
        return self.tmp

    def close(self) -> None:
        """Finish and rename the file to its final name."""
        self.finish()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        """Drop the partial file."""
        if not self._closed:
            with contextlib.suppress(Exception):
                self._container.close()
            self._closed = True
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def concat_mp4(parts: list[str], path: str) -> int:
    """Join H.264 MP4 files made by `Mp4Writer` with the same settings into `path`, remuxing packets
    (no re-encode): each part starts with a keyframe, so the joined stream decodes frame-exactly.
    Written to a temporary name and renamed. Returns the number of frames."""
    import av

    if not parts:
        raise ValueError("concat_mp4: no parts")
    tmp = temp_path_for(path)
    frames = 0
    try:
        with av.open(tmp, mode="w", format="mp4") as out:
            out_stream = None
            extradata = None
            offset = 0  # in the first part's stream time base
            for part in parts:
                with av.open(part) as inp:
                    src = inp.streams.video[0]
                    if out_stream is None:
                        out_stream = out.add_stream_from_template(src)
                        extradata, time_base = src.codec_context.extradata, src.time_base
                    elif src.codec_context.extradata != extradata or src.time_base != time_base:
                        raise ValueError(f"concat_mp4: {part} was encoded with other settings than {parts[0]}")
                    first_pts, end = None, 0
                    for packet in inp.demux(src):
                        if packet.dts is None:  # the demuxer's end-of-stream flush packet
                            continue
                        if first_pts is None:
                            first_pts = packet.pts
                        first_pts = min(first_pts, packet.pts)
                        end = max(end, packet.pts + (packet.duration or 0))
                        packet.pts += offset
                        packet.dts += offset
                        packet.stream = out_stream
                        out.mux(packet)
                        frames += 1
                    offset += end - (first_pts or 0)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return frames


def read_mp4(path: str) -> tuple[np.ndarray, Fraction, tuple[int, int]]:
    """Decode a video: ([F, H, W, 3] uint8 RGB, frame rate, (width, height)). For tests and checks."""
    import av

    with av.open(path) as inp:
        stream = inp.streams.video[0]
        stream.codec_context.thread_type = "AUTO"  # frame threads too: one slice a frame decodes on one core else
        frames = [f.to_ndarray(format="rgb24") for f in inp.decode(stream)]
        rate = stream.average_rate or stream.base_rate
        size = (stream.codec_context.width, stream.codec_context.height)
    return np.stack(frames) if frames else np.zeros((0, size[1], size[0], 3), np.uint8), rate, size
