"""Stage 2, order: the depth order of the Gaussians and their pair offsets (torch's sort) against the torch twin
and against Python's own sort of (depth, index), with either form's pair counts (kernels/bin.py)."""

import pytest
import torch

import kernels
import kernels.reference as ref
from tests.kernels.synthetic import FORMS, projected


def tied_projection(device, form):
    """(depths, tiles_touched, pair counts) of 2000 Gaussians, a quarter of the visible ones at one depth; the
    pair counts are `form`'s: tiles_touched or macros_touched."""
    _, depths, tt, macros, _ = projected(2000, 128, 96, device, seed=6, grow=1.0)
    depths[torch.nonzero(tt > 0).flatten()[::4]] = 3.0  # ties
    return depths, tt, tt if form == "tiles" else macros


@pytest.fixture
def small_scan(monkeypatch):
    """The offsets summed in blocks of 32 Gaussians (kernels/buffers.py `BlockOffsets`): 2000 Gaussians make 63
    blocks, not two, and each offset past the first block is its block's sum plus the blocks' before it."""
    import kernels.buffers as buffers_module

    monkeypatch.setattr(buffers_module, "SCAN_BLOCK", 32)


def expected(depths, tiles_touched, pair_counts):
    """Written from the rule, with Python values: the visible Gaussians by (depth, index), the running sum of
    their pair counts, and the three totals."""
    d, tt, pc = depths.tolist(), tiles_touched.tolist(), pair_counts.tolist()
    order = sorted((g for g in range(len(d)) if tt[g] > 0), key=lambda g: (d[g], g))
    offsets, total = [], 0
    for g in order:
        total += pc[g]
        offsets.append(total)
    return order, offsets, [len(order), sum(tt), total]


@pytest.mark.parametrize("form", FORMS)
def test_depth_order_matches_reference(form, device, small_scan):
    """The visible Gaussians sorted by depth (ties by index) ahead of the culled ones, their pair counts' running
    sum and the totals (visible, tile pairs, pairs: the tile pairs again, or the macro-tile pairs, fewer),
    against the twin's sort of unique (depth, index) keys and against Python's sort."""
    depths, tt, counts = tied_projection(device, form)
    want = ref.depth_order(depths, tt, counts, out=ref.order_outputs(2000, device))
    got = kernels.depth_order(depths, tt, counts, out=kernels.order_outputs(2000 + 9, device))
    assert torch.equal(want[0], got[0]) and torch.equal(want[2], got[2])
    assert torch.equal(want[1].local, got[1].local) and torch.equal(want[1].ends, got[1].ends), "the blocks"
    assert got[1].block == 32 and got[1].ends.shape == (63,)
    order, offsets, totals = expected(depths, tt, counts)
    n_visible = totals[0]
    assert got[2].tolist() == totals and 500 < n_visible < 2000
    assert totals[2] == totals[1] if form == "tiles" else totals[2] < totals[1]
    assert got[0][:n_visible].tolist() == order and got[1].whole()[:n_visible].tolist() == offsets
    assert (tt[got[0][n_visible:]] == 0).all(), "the culled ones after the visible ones"


def counted_order(impl, depths, tt, counts, compact: bool):
    """A counted frame's order the way the frame runs it: the counts (and the visible Gaussians gathered), then
    the order of the V visible (compacting) or of all N. Returns (totals, order, offsets) as lists."""
    n, device = depths.shape[0], depths.device
    i64 = dict(dtype=torch.int64, device=device)
    head = (torch.full((3,), -1, **i64), torch.full((impl.count_blocks(n),), -1, **i64),
            torch.full((n,), -7.0, device=device), torch.full((n,), -7, dtype=torch.int32, device=device))  # fmt: skip
    totals = impl.count_visible(depths, tt, counts, compact=compact, out=head).tolist()
    m = totals[0] if compact else n
    tail = (
        torch.full((m,), -7.0, device=device),
        torch.full((m,), -7, **i64),
        torch.full((m if compact else 0,), -7, **i64),
        torch.full((impl.scan_blocks(m),), -7, **i64),
        torch.full((m,), -7, dtype=torch.int32, device=device),
    )
    order, offsets = impl.visible_order(depths, counts, compact=compact, out=head[2:] + tail)
    assert order.shape == offsets.local.shape == (m,) and offsets.ends.shape == (-(-m // offsets.block),)
    return totals, order.tolist(), offsets.whole().tolist()


@pytest.mark.parametrize("scan", [4, 1024], ids=["scan-4", "scan-1024"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("compact", [True, False], ids=["compact", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_counted_order_over_several_programs(impl, compact, form, scan, device, monkeypatch, small_scan):
    """The counted route's order: the three counts, then the visible Gaussians nearest first (ties by index) and
    their pair counts' running sum; when every depth is sorted, the culled Gaussians after them in index order,
    owning no pairs. Counted over programs of 256 Gaussians (2000
    make eight, the first one wholly culled, the last one part full), so each program's visible ones must land
    after the programs' before it; the programs' counts read 4 at a time as well, so that the programs after the
    fourth sum those before them over two reads, and the totals too."""
    import kernels.order as order_module

    monkeypatch.setattr(order_module, "COUNT_BLOCK", 256)
    monkeypatch.setattr(order_module, "COUNT_SCAN", scan)
    depths, tt, counts = tied_projection(device, form)
    for cut in (slice(0, 256), slice(700, 900), slice(1900, 1950)):  # the first program sees nothing
        depths[cut], tt[cut], counts[cut] = float("inf"), 0, 0
    want_order, want_offsets, want_totals = expected(depths, tt, counts)
    n, v = depths.shape[0], want_totals[0]
    totals, order, offsets = counted_order(impl, depths, tt, counts, compact)
    assert totals == want_totals and 400 < v < n - 400
    assert order[:v] == want_order and offsets[:v] == want_offsets
    assert len(order) == (v if compact else n)
    assert offsets[v:] == [want_totals[2]] * len(offsets[v:]), "the culled ones own no pairs"
    if not compact:
        assert order[v:] == [g for g in range(n) if tt[g] == 0], "the culled ones last, in index order"


@pytest.mark.parametrize("halves", [False, True], ids=["whole", "halves"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_the_counts_read_a_culled_gaussian_by_its_tile_count_alone(impl, form, halves, device, monkeypatch):
    """A counted frame that pre-culls writes a rejected Gaussian's tile count (0) and leaves its depth and pair
    count as an earlier frame left them (kernels/project.py `only_tile_counts`): finite depths and pair counts of
    up to 9 here, on every culled row. The counts and the gathered Gaussians are those of the clean arrays, over
    programs of 256 Gaussians."""
    import kernels.order as order_module

    monkeypatch.setattr(order_module, "COUNT_BLOCK", 256)
    depths, tt, counts = tied_projection(device, form)
    g = torch.Generator().manual_seed(9)
    rejected = (torch.rand(2000, generator=g) < 0.6).to(device)  # and a few culled by the projection itself
    depths, tt, counts = (torch.where(rejected, float("inf"), depths), torch.where(rejected, 0, tt),
                          torch.where(rejected, 0, counts))  # fmt: skip
    if halves:  # each half's tiles, top | bottom << 16, as a frame binned in halves counts them
        counts = torch.where(tt > 0, (tt // 3) | ((tt - tt // 3) << 16), 0).to(torch.int32)
    culled = tt == 0
    assert 1000 < int(culled.sum()) < 1500
    stale_depths = torch.where(culled, torch.rand(2000, generator=g).to(device) * 5.0, depths)
    stale_counts = torch.where(culled, torch.randint(1, 10, (2000,), generator=g, dtype=torch.int32).to(device),
                               counts)  # fmt: skip
    if form == "tiles" and not halves:
        stale_counts = tt  # the pair counts are the tile counts themselves
    n = 2000
    i64 = dict(dtype=torch.int64, device=device)

    def head(d, c):
        out = (torch.full((3,), -1, **i64), torch.full((impl.count_blocks(n),), -1, **i64),
               torch.full((n,), -7.0, device=device),
               torch.full((n,), -7, dtype=torch.int32, device=device))  # fmt: skip
        totals = impl.count_visible(d, tt, c, compact=True, out=out, halves=halves).tolist()
        return totals, out[2][: totals[0]].tolist(), out[3][: totals[0]].tolist()

    want, got = head(depths, counts), head(stale_depths, stale_counts)
    assert got == want and want[0][0] == n - int(culled.sum())
    assert want[2] == torch.nonzero(~culled).flatten().tolist(), "the visible ones gathered, in index order"


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_counted_order_of_an_empty_view(impl, compact, device):
    """Nothing visible, and no Gaussians at all: zero counts, and no pairs."""
    depths = torch.full((50,), float("inf"), device=device)
    tt = torch.zeros(50, dtype=torch.int32, device=device)
    totals, order, offsets = counted_order(impl, depths, tt, tt, compact)
    assert totals == [0, 0, 0] and offsets == [0] * len(order) and len(order) == (0 if compact else 50)
    assert counted_order(impl, depths[:0], tt[:0], tt[:0], compact) == ([0, 0, 0], [], [])


def test_tile_pairs_over_several_programs_into_a_used_buffer(device):
    """A macro-tile frame's tile-pair total is summed by SUM_BLOCK Gaussians a program, one atomic each: 3 programs
    here (10,000 Gaussians, up to 40 tiles each) add into a totals buffer a frame before left holding garbage."""
    n = 10_000
    assert n > 2 * kernels.order.SUM_BLOCK
    g = torch.Generator().manual_seed(3)
    depths = torch.rand(n, generator=g) * 10.0
    tt = torch.randint(0, 41, (n,), generator=g, dtype=torch.int32)
    depths[tt == 0] = float("inf")
    macros = torch.minimum(tt, torch.randint(1, 5, (n,), generator=g, dtype=torch.int32)) * (tt > 0)
    out = kernels.order_outputs(n, device)
    out[4].fill_(123_456_789)
    _, _, totals = kernels.depth_order(depths.to(device), tt.to(device), macros.to(device), out=out)
    assert totals.tolist() == [int((tt > 0).sum()), int(tt.long().sum()), int(macros.long().sum())]


@pytest.mark.parametrize("gathered", [True, False], ids=["gathered", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_index_offsets_of_a_frame_binned_per_macro_tile(impl, gathered, device):
    """A frame binned per macro-tile visits its Gaussians in index order: the offsets are the running sum of the
    macro-tile counts of the visible ones gathered (`count_visible`'s indices), or of all N, in that order, into a
    longer buffer; no pairs, no offsets."""
    depths, tt, counts = tied_projection(device, "macro-tiles")
    visible = [g for g in range(2000) if tt[g] > 0]
    order = torch.tensor(visible, dtype=torch.int32, device=device) if gathered else None
    out = torch.full((2000 + 9,), -7, dtype=torch.int64, device=device)
    got = impl.index_offsets(counts, order, out=out)
    c = counts.tolist()
    want, total = [], 0
    for g in visible if gathered else range(2000):
        total += c[g]
        want.append(total)
    assert got.tolist() == want and got.dtype == torch.int64 and 400 < len(visible) < 2000
    assert impl.index_offsets(counts, order[:0] if gathered else None,
                              out=out)[: 0 if gathered else 2000].numel() == (0 if gathered else 2000)  # fmt: skip


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "all"])
@pytest.mark.parametrize("impl", [kernels, ref], ids=["launcher", "twin"])
def test_counted_order_of_two_halves(impl, compact, device, small_scan):
    """Binned in two halves (kernels/bin.py `halves`), a Gaussian's count holds each half's tiles (top | bottom
    << 16) and its offset both halves' running sums in one int64 (top | bottom << 32), summed in blocks of 32 as
    the packed fields: neither field may carry into the other."""
    depths, tt, _ = tied_projection(device, "tiles")
    g = torch.Generator().manual_seed(5)
    top = (torch.randint(0, 60_000, tt.shape, generator=g, dtype=torch.int32) * (tt > 0).cpu()).to(device)
    packed = top | (tt << 16)  # each half's count under 65,536
    n, i64 = depths.shape[0], dict(dtype=torch.int64, device=device)
    head = (torch.zeros(3, **i64), torch.zeros(impl.count_blocks(n), **i64), torch.empty(n, device=device),
            torch.empty(n, dtype=torch.int32, device=device))  # fmt: skip
    totals = impl.count_visible(depths, tt + top, packed, compact=compact, out=head, halves=True).tolist()
    m = totals[0] if compact else n
    tail = (torch.empty(m, device=device), torch.empty(m, **i64), torch.empty(m if compact else 0, **i64),
            torch.empty(impl.scan_blocks(m), **i64), torch.empty(m, **i64))  # fmt: skip
    order, offsets = impl.visible_order(depths, packed, compact=compact, out=head[2:] + tail, halves=True)
    want, _, _ = expected(depths, tt, tt)
    v = len(want)
    assert order[:v].tolist() == want and totals[2] == int(top.long().sum()) > 2**31 // 10_000
    whole = offsets.whole()[:v]
    assert (whole % 2**32).tolist() == torch.cumsum(top[order[:v]].long(), 0).tolist()
    assert (whole // 2**32).tolist() == torch.cumsum(tt[order[:v]].long(), 0).tolist()
