"""What torch.sort's cost follows on the GPU (GPU machine only): its length, its key type and whether the keys'
high digits vary, for the two sorts a frame runs (kernels/order.py's depths, kernels/sort.py's pair keys).

CUB's radix sort runs a pass a digit of the key type; a pass whose digit is the same for every key could in
principle be skipped. If it is, keys narrowed to the bits that vary (depth bits less the nearest depth's) sort in
fewer passes; if not, only a narrower dtype helps. Each case is timed with `triton.testing.do_bench`.

    python3 tests/gpu/sort_lab.py --json out/sort_lab.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch


def bench(fn) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=100))


def cases(n: int, device: str) -> dict[str, torch.Tensor]:
    g = torch.Generator(device=device).manual_seed(n)
    depth = torch.rand(n, generator=g, device=device) * 99.8 + 0.2  # depths in [0.2, 100): 9 octaves
    bits = depth.view(torch.int32)
    macro = torch.randint(0, 1020, (n,), generator=g, device=device, dtype=torch.int32)  # a 1080p frame's macro-tiles
    return {
        "f32 depths": depth,
        "i32 depth bits": bits.clone(),
        "i32 depth bits - min (27 bits)": bits - bits.min(),
        "i32 depth bits >> 8 (top 24 bits)": bits >> 8,
        "i32 macro ids (10 bits)": macro,
        "i16 macro ids": macro.to(torch.int16),
        "u8 low byte of macro ids": (macro & 255).to(torch.uint8),
        "i64 macro ids": macro.to(torch.int64),
        "i32 full range": torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, device=device, dtype=torch.int32),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="131072,655360,1600000,6000000,24000000")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("sort_lab: needs CUDA (run on the GPU machine)", file=sys.stderr)
        return 2
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        values = torch.arange(n, device="cuda", dtype=torch.int64)
        for name, keys in cases(n, "cuda").items():
            row = dict(n=n, keys=name)
            row["sort_ms"] = bench(lambda k=keys: torch.sort(k, stable=True))
            row["sort_gather_ms"] = bench(lambda k=keys, v=values: v.index_select(0, torch.sort(k, stable=True)[1]))
            rows.append(row)
            print(f"{n:>10,} {name:36s} sort {row['sort_ms']:.4f} ms, + gather {row['sort_gather_ms']:.4f}",
                  flush=True)  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
