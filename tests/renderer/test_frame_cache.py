"""The frame cache (renderer/frame_cache.py): recent frames' stage objects by (slot, kind), the least recently used
of a route's dropped first (capacity frames beyond MAX_FRAMES, counted ones beyond MAX_COUNTED_FRAMES), and every
one dropped once the workspace's buffers move."""

from types import SimpleNamespace

from renderer.frame_cache import MAX_COUNTED_FRAMES, MAX_FRAMES, FrameCache


def _cache():
    ws = SimpleNamespace(generation=0)
    made = []

    def frame(cache, kind, counted=False):
        def make():
            f = SimpleNamespace(generation=ws.generation, name=kind, counted=counted)
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


def test_counted_frames_keep_more_kinds_without_crowding_out_capacity_frames():
    """Counted frames hold no tensors: up to MAX_COUNTED_FRAMES kinds of them are kept, beside the capacity frames,
    whose graphs stay bounded by MAX_FRAMES; each route drops its own least recently used."""
    cache, _, made, frame = _cache()
    for kind in range(MAX_FRAMES):
        frame(cache, ("graph", kind))
    for kind in range(MAX_COUNTED_FRAMES + 2):
        frame(cache, ("counted", kind), counted=True)
    kept = [k for _, k in cache.frames]
    assert [k for k in kept if k[0] == "graph"] == [("graph", i) for i in range(MAX_FRAMES)]
    assert [k for k in kept if k[0] == "counted"] == [("counted", i) for i in range(2, MAX_COUNTED_FRAMES + 2)]
    frame(cache, ("graph", MAX_FRAMES))  # a capacity frame's room is taken from capacity frames alone
    kept = [k for _, k in cache.frames]
    assert ("graph", 0) not in kept and sum(k[0] == "counted" for k in kept) == MAX_COUNTED_FRAMES
    for kind in range(2, MAX_COUNTED_FRAMES + 2):  # a second pass over the counted kinds makes none again
        frame(cache, ("counted", kind), counted=True)
    assert len(made) == MAX_FRAMES + MAX_COUNTED_FRAMES + 3
