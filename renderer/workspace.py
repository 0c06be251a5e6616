"""The renderer's grow-only buffers: one object for the pipeline's stages and temporal reuse."""

from __future__ import annotations

import torch


class Workspace:
    """Grow-only named device buffers, reused across frames, so that a capacity frame allocates nothing large
    (a counted frame allocates its pair tensors itself: renderer/frame.py `CountedFrame`).

    One object serves the renderer's stages and temporal reuse.
    A buffer keeps its storage while later requests fit (with `headroom` extra when it must grow), so the
    tensors handed out stay at the same addresses frame after frame, as a replayed CUDA graph needs.
    """

    def __init__(self, device: torch.device | str):
        self.device = torch.device(device)
        self._buffers: dict[str, torch.Tensor] = {}
        self.generation = 0  # counts buffers moved or let go: work captured earlier holds stale addresses

    def buffer(self, name: str, n: int, dtype: torch.dtype, *, headroom: float = 1.0) -> torch.Tensor:
        """A 1-D view of n elements of buffer `name` (contents unspecified)."""
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < n or buf.dtype != dtype:
            if buf is not None:  # a buffer moved; a new one moves nothing that work captured before points at
                self.generation += 1
            buf = self._buffers[name] = torch.empty(max(int(n * headroom), 1), dtype=dtype, device=self.device)
        return buf[:n]

    def rows(self, name: str, n: int, width: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """An [n, width] view of buffer `name`."""
        return self.buffer(name, n * width, dtype).view(n, width)

    def drop(self, *names: str) -> None:
        """Release buffers, so that their next size is not allocated on top of them (the pair buffers, when the
        capacity changes: renderer/pipeline.py `_release_pairs`)."""
        for name in names:
            if self._buffers.pop(name, None) is not None:
                self.generation += 1

    def names(self) -> list[str]:
        """The buffers held, by name."""
        return list(self._buffers)

    def nbytes(self, *names: str) -> int:
        """Bytes held by the buffers `names` (all of them when none are named)."""
        held = (self._buffers[k] for k in names if k in self._buffers) if names else self._buffers.values()
        return sum(b.numel() * b.element_size() for b in held)
