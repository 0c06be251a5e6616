"""Sanity limits that readers check *before* allocating or decompressing, so a hostile or corrupt file
(a lying count, a zip bomb, an absurd texture size) fails with a `SceneFormatError` instead of
exhausting memory.

The limits are far above any real scene: the largest public trained scenes hold tens of millions of
Gaussians, and `warpsplat compose` builds benchmark scenes of about 30M.
"""

from __future__ import annotations

MAX_GAUSSIANS = 1 << 27  # 134M Gaussians: ~33 GB as float32 at SH degree 3, beyond any one GPU we target

# DEFLATE cannot expand data by more than ~1032:1 (RFC 1951: a 258-byte match costs at least two bits).
# A gzip/zip header that declares more output than that from its compressed size is lying.
MAX_DEFLATE_RATIO = 1032


def check_count(count: int, path: str, field: str) -> int:
    """A declared Gaussian count must be positive and below MAX_GAUSSIANS (checked before allocating)."""
    from .gaussians import SceneFormatError

    if count <= 0:
        raise SceneFormatError(f"{path}: {field} declares {count} Gaussians (the file holds no scene)")
    if count > MAX_GAUSSIANS:
        raise SceneFormatError(f"{path}: {field} declares {count:,} Gaussians, above the {MAX_GAUSSIANS:,} limit")
    return count
