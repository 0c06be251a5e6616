"""Decode two videos and compare them frame by frame: count, size, identical frames, worst PSNR.

Usage: python3 tests/gpu/compare_videos.py A.mp4 B.mp4   (used for the multi-GPU render: stitched vs single)
"""

import math
import sys

import av
import numpy as np


def frames(path: str):
    with av.open(path) as c:
        stream = c.streams.video[0]
        for f in c.decode(stream):
            yield f.to_ndarray(format="rgb24")


def main(a: str, b: str) -> int:
    n = same = 0
    worst = math.inf
    shape = None
    for x, y in zip(frames(a), frames(b), strict=True):
        n += 1
        shape = x.shape
        if np.array_equal(x, y):
            same += 1
            continue
        mse = np.mean((x.astype(np.float64) - y.astype(np.float64)) ** 2)
        worst = min(worst, 10 * math.log10(255.0**2 / mse))
    print(f"{a} vs {b}: {n} frames of {shape}, {same} identical, worst PSNR {worst:.1f} dB")
    return 0 if n > 0 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
