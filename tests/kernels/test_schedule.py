"""Stage 5, schedule: the rasterizer's tile order (longest lists first) against Python's own bit lengths and the
torch twin, and the image unchanged by it."""

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.schedule import CLASSES, schedule_block
from tests.conftest import nan_like


def ranges_of(lengths: list[int], device) -> torch.Tensor:
    """[n, 2] i32 ranges of consecutive lists with these lengths. Empty ones come in both forms tile_lists
    writes: every other one [0, 0) (a tile of a macro-tile with no pair), the others [x, x) where the lists
    stand (an empty tile of a macro-tile with pairs)."""
    length = torch.tensor(lengths, dtype=torch.int64)
    end = torch.cumsum(length, 0)
    ranges = torch.stack([end - length, end], 1)
    empty = torch.nonzero(length == 0).flatten()
    ranges[empty[::2]] = 0
    return ranges.to(torch.int32).to(device)


def expected_schedule(lengths: list[int]) -> list[int]:
    """Written from the rule, with Python ints: by bit length (capped), longest first, then by tile id."""
    cls = [min(n.bit_length(), CLASSES - 1) for n in lengths]
    return sorted(range(len(lengths)), key=lambda t: (-cls[t], t))


def run(ranges, device):
    n = ranges.shape[0]
    out = (
        nan_like(torch.empty(n, dtype=torch.int32, device=device)),
        nan_like(torch.empty(n, dtype=torch.int32, device=device)),
        nan_like(torch.empty(kernels.schedule_scratch_shape(n), dtype=torch.int32, device=device)),
    )
    return kernels.schedule_tiles(ranges, out=out)


def test_class_boundaries_are_exact(device):
    """Lengths on both sides of every power of two, and past the top class (they share it)."""
    lengths = [0, 1]
    for k in range(1, 26):
        lengths += [2**k - 1, 2**k]
    # ascending: the longest tiles last in id order, so the schedule must reverse them (built descending, as it
    # was, tile-id order was already the answer and a schedule that kept it passed)
    schedule, counts = run(ranges_of(lengths, "cpu").to(device), device)
    assert counts.tolist() == lengths
    assert schedule.tolist() == expected_schedule(lengths)


@pytest.mark.parametrize("n", [3 * 128 + 57, 70_000])  # 4 blocks of 128 tiles; 137 of 512 (a 4K image's count)
def test_many_blocks_match_rule_and_twin(n, device):
    """Several blocks of tiles, so each class's tiles come from more than one block, in id order."""
    assert n > 3 * schedule_block(n)
    g = torch.Generator().manual_seed(3)
    lengths = (torch.rand(n, generator=g) ** 4 * 3000).long()
    lengths[torch.rand(n, generator=g) < 0.3] = 0  # empty tiles
    lengths = lengths.tolist()
    ranges = ranges_of(lengths, device)
    schedule, counts = run(ranges, device)
    assert counts.tolist() == lengths
    assert sorted(schedule.tolist()) == list(range(n)), "a permutation of the tiles"
    assert schedule.tolist() == expected_schedule(lengths)
    want, want_counts = ref.schedule_tiles(ranges)
    assert torch.equal(schedule, want) and torch.equal(counts, want_counts)
    assert schedule[-1].item() in {t for t, n in enumerate(lengths) if n == 0}, "empty tiles go last"


@pytest.mark.parametrize("n", [1, 3 * 128 + 57, 70_000])
def test_longest_list_matches_python_and_twin(n, device):
    """The frame's longest list, which the launch configuration reads (kernels/rasterize.py `list_class`), is
    Python's max of the lengths wherever it falls: in the last block, in the first, past the top class (whose
    lengths share one class, so the class histogram alone could not say it); 0 with no tiles. The schedule is
    unchanged by writing it (the blocks' longest lists share their histograms' rows)."""
    g = torch.Generator().manual_seed(n)
    for where, top in ((n - 1, 2**23 + 5), (0, 3001), (n // 2, 2**22 + 1)):
        lengths = (torch.rand(n, generator=g) ** 4 * 3000).long()
        lengths[where] = top
        lengths = lengths.tolist()
        ranges = ranges_of(lengths, device)
        longest = torch.full((1,), -7, dtype=torch.int64, device=device)
        out = tuple(nan_like(t) for t in (torch.empty(n, dtype=torch.int32, device=device),
                    torch.empty(n, dtype=torch.int32, device=device),
                    torch.empty(kernels.schedule_scratch_shape(n), dtype=torch.int32, device=device)))  # fmt: skip
        schedule, counts = kernels.schedule_tiles(ranges, out=out, longest=longest)
        assert longest.item() == max(lengths), (where, longest.item())
        assert schedule.tolist() == expected_schedule(lengths)
        twin = torch.zeros(1, dtype=torch.int64, device=device)
        ref.schedule_tiles(ranges, longest=twin)
        assert twin.item() == max(lengths)
    none = torch.full((1,), -7, dtype=torch.int64, device=device)
    kernels.schedule_tiles(ranges_of([], device).view(0, 2), longest=none)
    assert none.item() == 0


@pytest.mark.parametrize("tile", [8, 16])
def test_rasterize_in_schedule_order_is_the_same_image(tile, device):
    """Programs that take the tiles longest first, or in a random order, write the same pixels bit for bit."""
    from tests.kernels.test_rasterize import binned

    width, height = 37, 29
    args = binned(300, width, height, device, seed=7, scale_shift=0.5, tile=tile)
    ranges = args[1]
    bg = torch.tensor([0.1, 0.2, 0.3], device=device)
    base = kernels.rasterize_tiles(*args, bg, width, height, tile_size=tile)
    schedule, _ = run(ranges, device)
    lengths = (ranges[:, 1] - ranges[:, 0]).tolist()
    assert lengths[schedule[0]].bit_length() == max(lengths).bit_length(), "a list of the longest class first"
    shuffled = torch.randperm(ranges.shape[0], generator=torch.Generator().manual_seed(1)).to(torch.int32)
    for order in (schedule, shuffled.to(device)):
        got = kernels.rasterize_tiles(*args, bg, width, height, tile_size=tile, schedule=order)
        assert torch.equal(got[0], base[0]) and torch.equal(got[1], base[1])


def keyed(tiles: list[int], dtype: torch.dtype) -> list[int]:
    """Tile ids as tile pair keys of `dtype` (kernels/buffers.py `key_offset`: int16 keys hold the id less 32,768)."""
    return [t - kernels.key_offset(dtype) for t in tiles]


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
@pytest.mark.parametrize("layout", ["whole", "unused slots", "halves", "no pairs"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_ranges_found_in_the_sorted_keys(impl, layout, dtype, device):
    """A frame binned per tile gives the schedule its sorted pair keys: each tile's range, found by binary search,
    is where its run of keys starts and ends ([0, 0) for a tile with none, written over whatever the buffer held),
    and the schedule, counts and longest list are those of the ranges. Over 3 blocks of tiles; with the capacity
    route's unused slots after the pairs (sentinel keys); with two halves of rows keyed apart (4K's int16 keys:
    [0, top) the tiles below the split, [top, C) the others, keyed within their half); and with no pairs."""
    n_tiles, split = 3 * 128 + 41, 200
    g = torch.Generator().manual_seed(7)
    tiles = sorted((torch.rand(900, generator=g) ** 2 * n_tiles).long().tolist())  # crowded low ids, many empty
    if layout == "no pairs":
        tiles = []
    keys = keyed(tiles, dtype)
    halves = None
    if layout == "halves":
        low, high = [t for t in tiles if t < split], [t for t in tiles if t >= split]
        keys, halves = keyed(low, dtype) + keyed([t - split for t in high], dtype), (len(low), split)
    if layout == "unused slots":
        keys += [kernels.sentinel_key(dtype)] * 333
    want = [[0, 0] for _ in range(n_tiles)]  # written from the rule, with Python lists
    for i, t in enumerate(tiles):
        want[t] = [want[t][0] if want[t][1] else i, i + 1]
    assert sum(1 for r in want if r[1] == 0) > 30 and (layout == "no pairs" or max(tiles) > 2 * 128)
    ranges = torch.full((n_tiles, 2), -7, dtype=torch.int32, device=device)
    longest = torch.full((1,), -7, dtype=torch.int64, device=device)
    sorted_keys = torch.tensor(keys, dtype=dtype, device=device)
    schedule, counts = impl.schedule_tiles(ranges, longest=longest, sorted_keys=sorted_keys, halves=halves)
    assert ranges.tolist() == want
    lengths = [b - a for a, b in want]
    assert counts.tolist() == lengths and longest.item() == max(lengths)
    assert schedule.tolist() == expected_schedule(lengths)
