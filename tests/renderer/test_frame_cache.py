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


def test_a_kept_frame_reads_this_frames_source_and_settings():
    """The source arrays and the settings are not part of the key: a kept frame is handed the ones of the frame it
    now runs (its stages read `f.src` when they run), not left with those it was made for."""
    cache, _, made, _ = _cache()
    make = lambda: SimpleNamespace(generation=0, counted=False)  # noqa: E731
    first = cache.frame(0, "k", "scene before", "settings before", make)
    again = cache.frame(0, "k", "scene now", "settings now", make)
    assert again is first and (again.src, again.settings) == ("scene now", "settings now")


def test_frames_are_kept_per_slot_and_made_with_their_kind():
    """Keyed by (slot, kind): a stream's frames alternate slots, and each slot's frame holds views of its own
    buffers, so the same kind in the other slot is another frame, which is given the same kind."""
    cache, _, _, _ = _cache()
    make = lambda: SimpleNamespace(generation=0, counted=False)  # noqa: E731
    a, b = cache.frame(0, "k", None, None, make), cache.frame(1, "k", None, None, make)
    assert a is not b and a.kind == b.kind == "k"
    assert cache.frame(0, "k", None, None, make) is a and cache.frame(1, "k", None, None, make) is b


def test_clear_lets_every_kept_frame_go():
    cache, _, made, frame = _cache()
    frame(cache, "a")
    cache.clear()
    assert not cache.frames
    frame(cache, "a")
    assert made == ["a", "a"]
