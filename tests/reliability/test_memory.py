"""Resource limits: the memory estimate, and a clear one-line error before work starts when it does not fit."""

from __future__ import annotations

import pytest
import torch

import renderer.memory as memory
from renderer import Renderer
from renderer.memory import OutOfDeviceMemoryError, check_fits, check_frame_pairs, estimate_bytes
from scenes import make_scene
from tools.cli import main


def small_scene(n=32):
    g = torch.Generator().manual_seed(0)
    return make_scene(torch.rand(n, 3, generator=g), torch.randn(n, 4, generator=g),
                      torch.full((n, 3), -3.0), torch.zeros(n), torch.zeros(n, 4, 3))  # fmt: skip


def test_estimate_terms():
    """The terms as the module docstring's table gives them, by hand for one case each."""
    n, k, w, h = 1_000_000, 9, 1920, 1080
    cuda = estimate_bytes(n, k, w, h, "cuda")
    cpu = estimate_bytes(n, k, w, h, "cpu")
    assert cuda.scene == 12 * n and cpu.scene == 0  # the CPU renderer shares the scene's means
    # opacities, covariances, the SH in fp16, and (from FRUSTUM_FROM Gaussians) the extents the pre-cull reads and
    # its blocks' bounds (32 bytes a block of 1,024)
    assert n >= memory.FRUSTUM_FROM
    assert cuda.prepared == cpu.prepared == (28 + 6 * 9 + 4) * n + 32 * 977
    tiles = 240 * 135  # 32,400: int16 keys
    pairs = max(2 * n, min(16 * n, 400 * tiles))  # 12.96M
    assert pairs == 12_960_000
    capacity = int(1.5 * pairs)  # the tiles' lists: 4 bytes an entry
    slots = int(0.75 * capacity)  # the macro-tile pairs' slots: int32 keys (the id above the rounded depth)
    pair_buffers = (4 + 8 + 4 + 8 + 8) * slots + 4 * 32 * -(-slots // 32)  # and 32 pairs' chunk counts
    tile_pairs = (2 + 4 + 2 + 8 + 4) * capacity  # binned per tile: keys, ids, sorted keys, permutation, sorted ids
    hist = memory.schedule_scratch_shape(tiles)[0] * 32 * 4
    # a slot's own: tiles_touched 4 a Gaussian, the images, tile counts; totals: three counts and the longest list
    per_slot = 4 * n + 20 * w * h + 4 * tiles + 32
    # the slots' shared set (renderer/frame.py): records 32, depths 4, macros_touched 4, bin_t 4, order 8, offsets 8
    staged = 60 * n
    # a path of both forms: the larger (the macro-tile form's, 525 MB), and the per-tile form's (389 MB) only were
    # it at most KEPT_FORM_BYTES (the form a path leaves is kept while that small)
    assert pair_buffers + 4 * capacity > tile_pairs > memory.KEPT_FORM_BYTES
    forms = pair_buffers + 4 * capacity
    # where CUDA runs the rasterizer's compiled loop, the longest lists' parts: 16 MB at 8 px (the tests run on the
    # GPU machine too)
    split = 16 << 20 if torch.cuda.is_available() else 0
    # shared per Gaussian: the sorted depths 4 and the pre-cull's survivors 4 (and their count); the offsets' blocks'
    # ends, 8 bytes a block of 1,024 (kernels/buffers.py `BlockOffsets`)
    blocks = 24 * -(-n // 4096)  # where frames bin per macro-tile, each counting program's three counts
    ends = 8 * -(-n // 1024)
    assert cuda.workspace == 2 * per_slot + staged + 8 * n + 4 + ends + 12 * tiles + hist + forms + split + blocks
    assert cpu.workspace == cuda.workspace - per_slot - split  # a CPU renderer keeps no frame in flight: one slot
    # the larger pair sort: of the macro-tile pair slots (20 bytes a slot), or of the per-tile pairs (18)
    assert cuda.transient == max(20 * n, 18 * capacity) and cuda.graphs == 2 * cuda.transient and cpu.graphs == 0
    assert cpu.transient == max(20 * n, 56 * capacity)  # the torch reference's pair sort: 56 bytes a slot
    assert cpu.reference == 250 * n and cuda.reference == 0
    counted = estimate_bytes(24_000_000, 16, w, h, "cuda", counted=True)
    streamed = estimate_bytes(24_000_000, 16, w, h, "cuda", counted=True, in_flight=True)
    # a slot's counts and longest list, and each counting program's three counts
    counts = 32 + 24 * -(-24_000_000 // 4096)
    # a second slot: tiles_touched, tile counts, outputs; the records, macro-tile counts and bin_t are shared
    per_frame = 4 * 24_000_000 + 20 * w * h + 4 * tiles + counts
    assert streamed.workspace == counted.workspace + per_frame, "counted frames in flight: a second slot"
    v, p = 24_000_000, 48_000_000  # every Gaussian visible, 2 pairs each
    m = int(0.75 * p)  # macro-tile pairs: binned and sorted (keys 4, entries 8 each) and the sort's scratch 20
    at_sort, at_lists = 2 * 12 * m + 20 * m, 12 * m + 4 * p + 4 * 32 * -(-m // 64)
    per_tile = 6 * p + 10 * p + 18 * p  # binned per tile: pairs (keys 2, ids 4), the sort's outputs and scratch
    # at the depth sort: the visible gathered 8 n (n = v), the sort's outputs 12 v, the order 8 v, the offsets 8 v
    # (4 within their blocks, 8 binned in halves), its scratch 20 v
    # the order and offsets 16 v let go of after the binning: at the sort, only the pairs
    at_bin = (16 * v + 12 * m, 16 * v + 6 * p)
    assert counted.transient == max(56 * v, *at_bin, at_sort, at_lists, per_tile) and counted.graphs == 0
    # a frame of no pairs: the depth sort alone is the peak (above, the pair terms hide it)
    assert memory.transient_bytes(1000, 0, 0, tiles, counted=True) == 56 * 1000
    survivors = 4 * v + 4  # the pre-cull's list and count, shared
    # records 32, depths 4, tiles_touched 4, macros_touched 4, bin_t 4 a Gaussian, all but tiles_touched shared
    assert counted.workspace == 48 * v + 20 * w * h + 4 * tiles + counts + 12 * tiles + hist + split + survivors
    assert estimate_bytes(10, 1, None, None, "cpu").workspace == estimate_bytes(10, 1, 1920, 1080, "cpu").workspace
    assert estimate_bytes(10, 1, 3840, 2160, "cpu").workspace > estimate_bytes(10, 1, 1920, 1080, "cpu").workspace


def test_scene_and_prepared_terms_are_what_the_renderer_keeps():
    """The scene and prepared terms equal the bytes of the renderer's prepared copy on the CPU: opacities,
    covariances and the fp16 SH are its own (the means are the scene's)."""
    scene = small_scene(40)
    r = Renderer(scene, device="cpu", backend="torch")
    est = estimate_bytes(len(scene), scene.sh.shape[1], device="cpu")
    own = [r.opacities, r.covars, r.sh]
    assert r.means.data_ptr() == scene.means.data_ptr() and est.scene == 0
    assert est.prepared == sum(t.numel() * t.element_size() for t in own)


@pytest.mark.parametrize("route", ["capacity", "capacity per macro-tile", "counted"])
def test_workspace_term_is_what_the_renderer_allocates(scene_path, route, monkeypatch):
    """The workspace term, from the sizes the frames had, equals the bytes the renderer's workspace holds: after
    one frame (one slot) and after a stream of frames (two slots on the capacity route, with a frame in flight)."""
    import renderer.launch
    from renderer.paths import orbit_path
    from scenes import load_scene

    macro = route == "capacity per macro-tile"  # the path's footprints bin per tile: force the other form
    monkeypatch.setattr(renderer.launch, "bins_macro_tiles", lambda footprint, previous=False: macro)
    scene = load_scene(scene_path("lastchance.splat"))
    r = Renderer(scene, device="cpu", backend="torch")
    r.frame_mode = "counted" if route == "counted" else "graph"
    cams = orbit_path(scene, 40, 24, 4)
    r.render(cams[0])
    counted = route == "counted"

    def expected(slots):
        lists, pairs = r.pair_capacity.size, r.macro_capacity.size
        assert counted or (0 < pairs < lists if macro else lists > 0 == pairs), (lists, pairs)
        return memory.workspace_bytes(len(scene), lists, 40, 24, 8, slots=slots, counted=counted,
                                      pair_capacity=pairs, macro=None if macro else False)  # fmt: skip

    # per macro-tile, the first frame bins per tile (the first configuration's form on a CPU), whose small buffers
    # the renderer keeps (KEPT_FORM_BYTES): the workspace holds both forms' (`macro` None); the second sizes the pairs
    if macro:
        r.render(cams[0])
    assert r.ws.nbytes() == expected(1) > 0
    for _ in r.render_stream(cams):  # on a CPU one by one, in one slot (renderer/device.py `frames_in_flight`)
        pass
    assert r.ws.nbytes() == expected(1)
    r.in_flight = True  # as on a GPU: a frame in flight, in a second slot (counted frames too, where it fits)
    assert r.counted_frames_fit_in_flight  # a CPU's free memory is not known: the estimate is not refused
    for _ in r.render_stream(cams):
        pass
    # the second slot holds only what a frame hands over (its images, tile counts, tiles touched) and its totals:
    # stage 1's outputs, the order and the offsets are the slots' shared set (renderer/frame.py)
    assert r.ws.nbytes() == expected(2)


def test_the_split_lists_parts_are_counted_where_the_scalar_loop_runs(monkeypatch):
    """The long-list class's parts buffer (kernels/rasterize.py `split_scratch_shape`, allocated by
    renderer/frame.py where the scalar loop runs): in the workspace term exactly, on CUDA only."""
    from kernels import split_scratch_shape

    tiles = memory.n_tiles(1920, 1080, 8)
    assert split_scratch_shape(8, 0, tiles) is None and split_scratch_shape(8, 1, tiles) is None
    rows, cols = split_scratch_shape(8, 2, tiles)
    extra = memory.workspace_bytes(1000, 0, 1920, 1080, 8, slots=1, counted=True, split=True) - memory.workspace_bytes(
        1000, 0, 1920, 1080, 8, slots=1, counted=True
    )
    assert extra == 4 * rows * cols == 16 << 20  # 2,048 tiles x 8 parts x 64 pixels x (C, T)
    cuda = memory.estimate_bytes(1000, 1, 1920, 1080, "cuda", counted=True).workspace
    monkeypatch.setattr(memory, "rasterizer_variants", lambda: ("batched", "scalar"))  # as where Gluon runs
    assert memory.estimate_bytes(1000, 1, 1920, 1080, "cuda", counted=True).workspace - cuda == (
        0 if torch.cuda.is_available() else extra
    )
    # made before the settings are known: with AdaGScale's bin_t
    estimated = memory.workspace_bytes(1000, 0, 1920, 1080, 8, slots=1, counted=True, adagscale=True)
    assert memory.estimate_bytes(1000, 1, 1920, 1080, "cpu", counted=True).workspace == estimated


def test_check_fits_on_cpu_against_mem_available(monkeypatch):
    monkeypatch.setattr(memory, "mem_available", lambda: 200 << 20)
    assert check_fits(1000, 1, 64, 48, "cpu").total < 200 << 20
    monkeypatch.setattr(memory, "mem_available", lambda: 10 << 20)  # less than the fixed part of any estimate
    with pytest.raises(OutOfDeviceMemoryError, match="1,000 Gaussians"):
        check_fits(1000, 1, 64, 48, "cpu")


def test_error_is_one_line_with_estimate_and_free(monkeypatch):
    monkeypatch.setattr(memory, "mem_available", lambda: 500 << 20)
    check_fits(100_000, 16, 640, 480, "cpu")  # ~0.3 GB: fits in 0.5 GB
    with pytest.raises(OutOfDeviceMemoryError) as e:
        check_fits(3_000_000, 16, 1920, 1080, "cpu")
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, MemoryError)
    assert "3,000,000 Gaussians" in msg and "1920x1080" in msg and "0.52 GB is free" in msg
    assert f"about {memory.gb(estimate_bytes(3_000_000, 16, 1920, 1080, 'cpu').total)}" in msg


def test_cuda_free_memory_from_mem_get_info(monkeypatch):
    asked = []

    def fake_mem_get_info(device=None):
        asked.append(device)
        return 2 << 30, 80 << 30

    monkeypatch.setattr(torch.cuda, "mem_get_info", fake_mem_get_info)
    check_fits(300_000, 16, 1920, 1080, "cuda")  # ~0.9 GB
    with pytest.raises(OutOfDeviceMemoryError, match=r"on cuda .* but only 2\.15 GB is free"):
        check_fits(10_000_000, 16, 1920, 1080, "cuda")
    assert asked and all(torch.device(d).type == "cuda" for d in asked)


def test_unknown_free_memory_does_not_refuse(monkeypatch):
    monkeypatch.setattr(memory, "mem_available", lambda: None)
    assert check_fits(10**9, 16, 8192, 8192, "cpu").total > 0


def test_mem_available_parses_meminfo(tmp_path):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   19000000 kB\n")
    assert memory.mem_available(str(f)) == 19000000 * 1024
    assert memory.mem_available(str(tmp_path / "missing")) is None
    assert memory.mem_available("/proc/meminfo") > 0


def test_renderer_refuses_before_work(monkeypatch):
    monkeypatch.setattr(memory, "mem_available", lambda: 1 << 20)  # 1 MB: less than the fixed part
    calls = []
    monkeypatch.setattr(
        memory, "estimate_bytes", lambda *a, **k: calls.append((a, k)) or memory.MemoryEstimate(0, 0, 0, 0)
    )
    with pytest.raises(OutOfDeviceMemoryError, match="32 Gaussians"):
        Renderer(small_scene(), device="cpu", backend="torch")
    assert calls == [((32, 4, None, None, torch.device("cpu")), {"counted": False, "in_flight": None})]
    with pytest.raises(OutOfDeviceMemoryError, match="32 Gaussians .* at 640x480"):
        Renderer(small_scene(), device="cpu", backend="torch", frame_size=(640, 480))
    assert calls[-1] == ((32, 4, 640, 480, torch.device("cpu")), {"counted": False, "in_flight": None})


def test_cli_maps_the_error_to_one_line_exit_2(monkeypatch, tmp_path, capsys, scene_path):
    monkeypatch.setattr(memory, "mem_available", lambda: 1 << 20)
    out = tmp_path / "image.png"
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1 << 20)  # the GPU machine's tests render on CUDA
    code = main(["render", str(scene_path("plant.splat")), "--size", "32x24", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("warpsplat render: error:") and "is free" in lines[0], err


def wide_scene(n=40, log_scale=0.0):
    """n Gaussians of standard deviation e^log_scale in the unit cube: at that size each reaches most tiles of the
    default view (which frames them by their own extent)."""
    g = torch.Generator().manual_seed(1)
    return make_scene(torch.rand(n, 3, generator=g), torch.randn(n, 4, generator=g),
                      torch.full((n, 3), log_scale), torch.zeros(n), torch.zeros(n, 1, 3))  # fmt: skip


def test_frame_pairs_terms_and_message(monkeypatch):
    """What check_frame_pairs counts, by hand: a capacity frame's new buffers, the tiles' lists (4 bytes an entry)
    and the macro-tile pair buffers (32 bytes a slot with int32 keys, and 128 bytes of chunk counts a 32 slots),
    less those it lets go, and the pair sort at the new pair capacity (CUB's 20 bytes a slot, the reference's 56);
    a counted frame's pair tensors, sort and lists, whichever peak is higher. The refusal is one line with the
    sizes; past MAX_PAIRS, whatever is free."""
    free = 100 << 20
    monkeypatch.setattr(memory, "mem_available", lambda: free)
    tiles = 160 * 90  # 1280x720 at 8 px: 450 macro-tiles, int32 keys (the id above the rounded depth)

    def pair_buffers(slots):
        return 32 * slots + 128 * -(-slots // 32)

    def check(entries, slots, reference):
        check_frame_pairs(entries, 10, 1280, 720, 8, "cpu", counted=False, reference=reference, capacity=entries,
                          held=1000, pair_capacity=slots, pairs_held=800)  # fmt: skip

    for reference, sort in ((True, 56), (False, 20)):
        # exactly what fits: (4 (C - 1000) + buffers(D) - buffers(800) + sort D) x MARGIN == free, at the lists'
        # edge (D fixed, C the most that fits) and at the pair slots' (C fixed, D the most)
        slots = 600_000
        rest = pair_buffers(slots) - pair_buffers(800) + sort * slots
        c = int((free / memory.MARGIN - rest) / 4) + 1000
        check(c, slots, reference)
        with pytest.raises(OutOfDeviceMemoryError):
            check(c + 1, slots, reference)
        budget = free / memory.MARGIN - 4 * (c // 2 - 1000) + pair_buffers(800)
        d = int(budget / (32 + sort))  # about; then the exact edge
        while pair_buffers(d) + sort * d > budget:
            d -= 1
        check(c // 2, d, reference)
        with pytest.raises(OutOfDeviceMemoryError) as e:
            check(c // 2, d + 1, reference)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, MemoryError)
    assert msg.startswith(f"a 1280x720 frame needs {c // 2:,} Gaussian-tile pairs ({c // 2 / 10:,.0f} tiles for "
                          "each of its 10 visible Gaussians): about ") and msg.endswith("but only 0.10 GB is free "
                          "(Gaussians this large on screen need a smaller frame)")  # fmt: skip
    # counted: at the binning the order and offsets 16 V and the binned pairs; at the sort the binned and sorted
    # pairs (4 + 8 bytes each) and the reference's sort 56 M; at the lists the sorted pairs, the lists 4 P and the
    # chunk counts
    v, p = 1000, 2_000_000
    for m, edge in ((1_500_000, "sort"), (100_000, "lists")):  # 1.5M: the default, 0.75 P
        at_sort, at_lists = 2 * 12 * m + 56 * m, 12 * m + 4 * p + 128 * -(-m // 32)
        assert (at_sort > at_lists) == (edge == "sort")
        need = max(16 * v + 12 * m, at_sort, at_lists)
        assert memory.counted_pair_bytes(v, p, tiles, reference=True, macro_pairs=m) == need
        monkeypatch.setattr(memory, "mem_available", lambda need=need: int(need * memory.MARGIN) + 1)
        check_frame_pairs(p, v, 1280, 720, 8, "cpu", counted=True, reference=True, macro_pairs=m)
        more = (p, m + 1) if edge == "sort" else (p + 1, m)
        with pytest.raises(OutOfDeviceMemoryError, match=f"{more[0]:,} Gaussian-tile pairs"):
            check_frame_pairs(more[0], v, 1280, 720, 8, "cpu", counted=True, reference=True, macro_pairs=more[1])
    # the form not known (macro_pairs None): the larger of a frame binned per macro-tile (0.75 P pairs) and one
    # binned per tile (pairs 2 + 4 bytes each, the sort's outputs 2 + 8 and the reference's sort 56)
    assert memory.counted_pair_bytes(v, p, tiles, reference=True) == max(80 * 1_500_000, (6 + 10 + 56) * p)
    assert memory.counted_pair_bytes(v, p, tiles, reference=True, macro_pairs=0) == (6 + 10 + 56) * p
    big = 10**9  # visible Gaussians that outweigh the pairs: the binning is the peak
    assert memory.counted_pair_bytes(big, p, tiles, reference=True, macro_pairs=0) == 16 * big + 6 * p
    monkeypatch.setattr(memory, "mem_available", lambda: None)  # unknown free memory: only the index limit
    check_frame_pairs(memory.MAX_PAIRS, v, 1280, 720, 8, "cpu", counted=True, reference=True)
    with pytest.raises(OutOfDeviceMemoryError, match="more than the 2,147,483,647 a frame can index$"):
        check_frame_pairs(memory.MAX_PAIRS + 1, v, 1280, 720, 8, "cpu", counted=True, reference=True)


@pytest.mark.parametrize("route", ["capacity", "counted"])
def test_a_frame_whose_pairs_do_not_fit_is_refused_before_they_get_memory(route, monkeypatch):
    """Gaussians large on screen: the frame learns its pair count at order, and with too little memory free for
    them it raises the one-line error there, on either route, before the capacity grows or the pair tensors are
    allocated; with enough it renders them all."""
    from renderer import default_camera

    scene = wide_scene()
    r = Renderer(scene, device="cpu", backend="torch")
    r.frame_mode = "counted" if route == "counted" else "graph"
    cam = default_camera(scene, 160, 96)
    tiles = 20 * 12
    allocated = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: allocated.append(a) or real_empty(*a, **k))
    monkeypatch.setattr(memory, "mem_available", lambda: 10_000)  # 10 kB: less than these pairs need
    with pytest.raises(OutOfDeviceMemoryError, match=r"a 160x96 frame needs \d[\d,]* Gaussian-tile pairs") as e:
        r.render(cam)
    pairs = int(str(e.value).split(" needs ")[1].split(" ")[0].replace(",", ""))
    assert pairs > 40 * tiles // 3, pairs  # each Gaussian reaches over a third of the tiles
    assert r.pair_capacity.size == r.macro_capacity.size == 0  # neither capacity grew
    assert not [a for a in allocated if a and a[0] == pairs]  # no counted pair tensor either
    monkeypatch.setattr(memory, "mem_available", lambda: 1 << 30)
    assert r.render(cam).stats.n_pairs == pairs


def test_on_the_cpu_a_lower_memory_cap_is_what_is_free(monkeypatch):
    """WARPSPLAT_MAX_MEMORY (the readers' cap, scenes/limits.py) bounds the renderer on the CPU too, where it is
    below the free memory: so a cap set for a run holds for its frames, whatever the machine has free. `none`
    and a cap above the free memory leave the free memory; CUDA's free memory is the device's own."""
    monkeypatch.setattr(memory, "mem_available", lambda: 1 << 30)
    monkeypatch.setenv("WARPSPLAT_MAX_MEMORY", "64M")
    assert memory.free_memory("cpu") == (64 << 20, "is free under WARPSPLAT_MAX_MEMORY=64M")
    with pytest.raises(OutOfDeviceMemoryError, match=r"but only 0\.07 GB is free under WARPSPLAT_MAX_MEMORY=64M$"):
        check_fits(100_000, 16, 640, 480, "cpu")  # ~0.3 GB
    with pytest.raises(OutOfDeviceMemoryError, match=r"0\.07 GB is free under WARPSPLAT_MAX_MEMORY=64M \(Gaussians"):
        check_frame_pairs(2_000_000, 1000, 1280, 720, 8, "cpu", counted=True, reference=True)  # ~0.18 GB
    for setting in ("none", "4G"):
        monkeypatch.setenv("WARPSPLAT_MAX_MEMORY", setting)
        assert memory.free_memory("cpu") == (1 << 30, "is free")
        check_fits(100_000, 16, 640, 480, "cpu")
    monkeypatch.setenv("WARPSPLAT_MAX_MEMORY", "64M")
    monkeypatch.setattr(memory, "free_bytes", lambda device: 5 << 30)
    assert memory.free_memory("cuda") == (5 << 30, "is free")


def test_a_cuda_frame_asks_what_is_free_only_when_it_may_matter(monkeypatch):
    """Counted frames check their pairs every frame, and asking CUDA and torch's allocator costs host time the GPU
    waits for: the answer is kept FREE_KEPT_SECONDS for frames that need at most half of it. A larger need, or an
    older answer, asks again, and a frame that does not fit is still refused."""
    asked, now = [], [100.0]
    monkeypatch.setattr(memory, "free_memory", lambda device: (asked.append(1) or (1 << 30), "is free"))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 0)
    monkeypatch.setattr(memory.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(memory, "_FREE_KEPT", {})
    small, half = 200_000, 20_000_000  # pairs of a 1280x720 frame: 7 MB, and 0.68 GB of the 1 GB free

    def check(pairs):
        check_frame_pairs(pairs, 1000, 1280, 720, 8, "cuda", counted=True, reference=False)

    check(small)
    check(small)
    assert len(asked) == 1  # the second frame trusted the first answer
    check(half)
    assert len(asked) == 2  # more than half of what was free: asked again
    now[0] += memory.FREE_KEPT_SECONDS
    check(small)
    assert len(asked) == 3  # the answer was too old
    with pytest.raises(OutOfDeviceMemoryError, match="but only 1.07 GB is free"):
        check(40_000_000)
