"""The frame cache (renderer/frame_cache.py): recent frames' stage objects by (slot, kind), the least recently used
dropped first, and every one dropped once the workspace's buffers move."""

from types import SimpleNamespace

from renderer.frame_cache import MAX_FRAMES, FrameCache


def _cache():
    ws = SimpleNamespace(generation=0)
    made = []

    def frame(cache, kind):
        def make():
            f = SimpleNamespace(generation=ws.generation, name=kind)
            made.append(kind)
            return f

        return cache.frame(0, kind, None, None, make)

    return FrameCache(ws), ws, made, frame


def test_a_frame_in_use_outlives_older_unused_ones():
    """A path that keeps returning to one kind (a fly-over's class changes around its common frames) keeps that
    kind's stage objects; dropping the oldest made one instead remade it on every pass."""
    cache, _, made, frame = _cache()
    for kind in range(MAX_FRAMES):
        frame(cache, kind)
    for kind in range(MAX_FRAMES, MAX_FRAMES + 3):
        assert frame(cache, 0).name == 0  # in use between each new kind
        frame(cache, kind)
    assert made.count(0) == 1, "kind 0, used all along, was made again"
    assert len(cache.frames) == MAX_FRAMES and (0, 1) not in cache.frames and (0, 0) in cache.frames


def test_moved_buffers_retire_every_kept_frame():
    cache, ws, made, frame = _cache()
    frame(cache, "a")
    frame(cache, "b")
    ws.generation += 1
    frame(cache, "a")
    assert made == ["a", "b", "a"] and list(cache.frames) == [(0, "a")]
