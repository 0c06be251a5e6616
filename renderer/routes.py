"""Which route a scene's frames take through the stages (renderer/frame.py: `CapacityFrame` or `CountedFrame`;
renderer/pipeline.py's docstring says how the two differ)."""

from __future__ import annotations

# Frames of at least this many Gaussians run counted: a wait for the counts, sorts of exactly the visible Gaussians
# and the pairs binned, launched stage by stage. Smaller ones run on capacities, one sync, replayed as CUDA graphs.
# Measured on composites (BENCHMARKS.md, section 10): graphs won by 1.1-1.6x at 1M and 2M, the two were even
# at 3M, and counted frames won the 6M and 24M fly-overs by 1.4-1.5x (overviews even).
COUNTED_FROM = 4_000_000
FRAME_MODES = ("auto", "graph", "counted")
# Counted frames whose last frame saw at least this fraction of the scene sort every depth, the culled ones last,
# instead of gathering the visible ones first (kernels/order.py `count_visible`). Set at 0.5 when gathering cost
# 0.6 ms at 24M (a scan, a sync, two gathers); it now costs the count's compaction (+22 us at 6M, +82 at 24M), and
# 0.8 measured 2.7% faster than 0.5 on both fly-overs in flight, 0.65 and 0.9 no better, the overviews even
# (BENCHMARKS.md, section 54).
DENSE_ORDER_FROM = 0.8


def runs_counted(n: int, frame_mode: str) -> bool:
    """Whether the frames of a scene of n Gaussians run counted: by its size, or as `frame_mode` forces."""
    assert frame_mode in FRAME_MODES, frame_mode
    return frame_mode == "counted" or (frame_mode == "auto" and n >= COUNTED_FROM)
