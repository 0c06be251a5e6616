"""The kernel warm-up (renderer/warmup.py): which launch configurations and settings it runs, on what, and that it
leaves the renderer it warms untouched. That it leaves no compile for later is a GPU question (the interpreter
compiles nothing): tests/gpu/test_no_compile_after_first_frame.py."""

from __future__ import annotations

import random
import threading

import pytest
import torch

import renderer.frame as frame
import renderer.pipeline as pipeline
import renderer.warmup as warmup
from renderer import Renderer, RenderSettings
from renderer.launch import LaunchConfig


@pytest.mark.parametrize(("n", "tiles", "tile"), [(4_680, 32_400, 8), (114_000, 32_400, 8), (6_000_000, 8_160, 16)])
def test_reachable_holds_every_configuration_a_sequence_of_frames_reaches(n, tiles, tile):
    """Random sequences of frames (counts drawn at random, not from the grid reachable explores), each frame's
    configuration chosen from the last as the renderer does: every one of them is in the reachable set."""
    reachable = set(LaunchConfig.reachable(n, tiles, tile))
    rng = random.Random(n)
    seen = {LaunchConfig(), LaunchConfig.first(False, cuda=True)}
    for _ in range(200):
        config = LaunchConfig()  # the second frame's is chosen as from this one (Renderer._fit_pairs)
        for _ in range(30):
            visible = rng.randint(0, n) if rng.random() < 0.5 else int(n * rng.random() ** 4)
            pairs = int(visible * (1 + rng.random() ** 3 * min(tiles, 2_000)))
            # the longest list: unknown (a counted frame's, a frame late), or any length a list can have
            longest = min(visible, pairs, int(pairs * rng.random() ** 3))
            config = LaunchConfig.after(config, n, visible, pairs, tiles, tile,
                                        None if rng.random() < 0.2 else (pairs, longest))  # fmt: skip
            seen.add(config)
    assert seen <= reachable, seen - reachable
    assert len(seen) >= 3  # the draws do move the configuration


def test_reachable_crosses_every_class_a_large_scene_can_take():
    configs = LaunchConfig.reachable(6_000_000, 32_400, 8)
    assert {c.lists for c in configs} == {0, 1, 2}
    # kernels/bin.py `bin_config`: few huge Gaussians, many wide ones, narrow ones under 1M visible and above
    assert {(c.bin_block, c.bin_cols) for c in configs} == {(8, 8), (32, 16), (32, 4), (64, 2)}
    assert LaunchConfig() in configs and LaunchConfig.first(False, cuda=True) in configs
    windowed = LaunchConfig.reachable(6_000_000, 32_400, 8, windows=True)
    assert {c.project_block for c in windowed} == {32, 128} > {c.project_block for c in configs}


def test_switch_settings_cover_every_combination_once_the_start_first(monkeypatch):
    monkeypatch.setattr(warmup, "rasterizers", lambda: ("auto", "batched"))  # a CPU's: the blend precision stays
    start = RenderSettings(adagscale=True, background=(0.2, 0.3, 0.4))
    variants = warmup.switch_settings(start, scene_degree=2)
    assert variants[0] == start
    # degrees None, 0-2; the rasterizers this process runs (renderer/settings.py `rasterizers`); AdaGScale, the
    # orthographic view and the depth view on and off
    assert len(variants) == len({repr(v) for v in variants}) == 4 * 2 * 2 * 2 * 2 * 2
    assert {v.sh_degree for v in variants} == {None, 0, 1, 2} and {v.tile_size for v in variants} == {8, 16}
    assert all(v.background == start.background for v in variants)
    assert {v.blend_precision for v in variants} == {start.blend_precision}
    flips = [sum(getattr(v, k) != getattr(start, k) for k in ("sh_degree", "tile_size", "rasterizer", "adagscale",
                                                                "ortho", "depth")) for v in variants]  # fmt: skip
    assert flips == sorted(flips) and flips[1] == 1


def test_the_blend_precision_varies_where_the_scalar_loop_blends(monkeypatch):
    """Where the scalar loop runs (CUDA), every combination with the rasterizer "auto" comes in both precisions, so
    the float32 loop's kernels are warm before a user flips to them; the "scalar" combinations launch the same
    kernels as "auto" and the batched loop blends float32 whatever the setting, so those keep the start's
    precision (frames that would compile nothing new are not rendered twice)."""
    monkeypatch.setattr(warmup, "rasterizers", lambda: ("auto", "scalar", "batched"))
    start = RenderSettings()
    variants = warmup.switch_settings(start, scene_degree=1)
    assert variants[0] == start and len(variants) == len({repr(v) for v in variants})
    pairs = {(v.rasterizer, v.blend_precision) for v in variants}
    assert pairs == {("auto", "fp16"), ("auto", "fp32"), ("scalar", "fp16"), ("batched", "fp16")}, pairs
    per_pair = 3 * 2 * 2 * 2 * 2  # degrees None, 0, 1; tile sizes; AdaGScale, the orthographic and depth views
    assert len(variants) == 4 * per_pair
    # a flip of the precision alone is among the single flips, which come first: warm a moment after the start
    singles = 2 + 1 + 2 + 1 + 1 + 1 + 1  # SH degree, tile size, rasterizer, precision, AdaGScale, ortho, depth
    assert RenderSettings(blend_precision="fp32") in variants[1 : 1 + singles]
    start32 = RenderSettings(blend_precision="fp32")  # a float32 start keeps float32 on the batched loop
    assert {v.blend_precision for v in warmup.switch_settings(start32, 1) if v.rasterizer == "batched"} == {"fp32"}


def test_the_depth_view_is_warmed_with_the_float_outputs_it_reads():
    """The viewer's colour view takes the 8-bit image alone (`RenderSettings.outputs`); its depth view reads the
    float coverage, so the warm-up's depth combinations take the float outputs (the coverage view's rasterizer as
    well), and every combination is one the renderer accepts."""
    variants = warmup.switch_settings(RenderSettings(outputs="rgba8"), scene_degree=1)
    assert {v.outputs for v in variants if v.depth} == {"float"} and {v.outputs for v in variants if not v.depth} == {
        "rgba8"
    }
    assert all(v.validate() is v for v in variants)
    assert {v.outputs for v in warmup.switch_settings(RenderSettings(), scene_degree=1)} == {"both"}


def tiny_scene(n=300, seed=1):
    return warmup.synthetic_scene(n, 4, seed=seed)


def test_warm_up_renders_every_setting_under_every_configuration(monkeypatch):
    """Forced on the torch backend (where nothing compiles): every (settings, launch configuration) pair is built
    as a frame of its own on the synthetic scene, the frames see Gaussians and pairs (every stage runs), and the
    renderer being warmed is left as it was."""
    built = []
    init = frame.Frame.__init__

    def spy(self, r, src, camera, settings, slot=0):
        init(self, r, src, camera, settings, slot)
        built.append((r, repr(settings), r.launch, camera.width, camera.height))

    monkeypatch.setattr(frame.Frame, "__init__", spy)
    stats = []
    render = pipeline.Renderer.render
    monkeypatch.setattr(pipeline.Renderer, "render", lambda self, *a, **k: stats.append(render(self, *a, **k).stats))
    real = Renderer(tiny_scene(), device="cpu", backend="torch")
    settings = [RenderSettings(), RenderSettings(tile_size=16, adagscale=True, depth=True)]
    report = warmup.warm_up(real, [(40, 24)], settings, force=True)
    assert not built or all(r is not real for r, *_ in built)
    assert real.ws.nbytes() == 0 and real.launch == LaunchConfig.first(real.counted(), cuda=False)
    assert real.pair_capacity.size == real.macro_capacity.size == 0
    # a frame's configuration comes from the frame before, whatever its tile size: each settings' frames run under
    # the configurations of both
    configs = set(LaunchConfig.reachable(real.n, 5 * 3, 8)) | set(LaunchConfig.reachable(real.n, 3 * 2, 16))
    got = {(key, launch) for _, key, launch, w, h in built if (w, h) == (40, 24)}
    for s in settings:
        want = {(repr(s), c) for c in configs}
        assert want <= got, want - got
    assert report.frames == len(settings) * (len(configs) + 1)
    assert stats and all(st.n_visible > 0 and st.n_pairs > 0 for st in stats)
    assert warmup.warm_up(real, [(40, 24)], settings).frames == 0  # unforced: nothing compiles on the CPU


def test_the_warm_up_lets_go_of_its_renderers_buffers(monkeypatch):
    """Its renderers' frames hold them in reference cycles, so they live until a full garbage collection, which a
    frame loop may not run for minutes: when the warm-up returns, none of them holds a buffer or a frame (their
    images at the frame size were counted in every bench row's peak, beside the real renderer's own)."""
    import gc

    made = []

    class Recorded(pipeline.Renderer):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(pipeline, "Renderer", Recorded)
    real = Renderer(tiny_scene(), device="cpu", backend="torch")
    gc.disable()  # as in a frame loop between collections
    try:
        warmup.warm_up(real, [(40, 24)], [RenderSettings(outputs="float")], force=True)
        assert made and all(w is not real for w in made)
        assert all(w.ws.nbytes() == 0 and not w.ws.names() and not w.frames.frames for w in made)
    finally:
        gc.enable()


def test_warm_up_hands_stage_1_the_dtypes_real_frames_do(monkeypatch):
    """A pointer's element type is a specialization of its own: the warm-up's frames must give project tensors
    of the dtypes a real frame gives it (the SH copy in fp16, kernels.SH_DTYPE, among them), or the real frame
    compiles mid-path. Recorded on the torch backend, whose twin takes the launcher's arguments."""
    import kernels
    import kernels.reference as ref

    seen = []
    project = ref.project_gaussians

    def spy(*args, **kwargs):
        seen.append(tuple(str(a.dtype) for a in args if isinstance(a, torch.Tensor)))
        return project(*args, **kwargs)

    monkeypatch.setattr(ref, "project_gaussians", spy)
    real = Renderer(tiny_scene(), device="cpu", backend="torch")
    real.render(warmup._camera(real.scene, 40, 24))
    want = set(seen)
    assert len(want) == 1 and str(kernels.SH_DTYPE) in next(iter(want)), want
    seen.clear()
    warmup.warm_up(real, [(40, 24)], [RenderSettings()], force=True)
    assert seen and set(seen) == want, set(seen) - want


def test_compile_counter_counts_per_thread_and_keeps_a_hook_already_set(monkeypatch):
    import triton

    calls = []
    monkeypatch.setattr(triton.knobs.runtime, "jit_post_compile_hook", lambda **kw: calls.append(kw))
    counter = warmup.compile_counter()
    assert warmup.compile_counter() is counter  # one per process
    hook = triton.knobs.runtime.jit_post_compile_hook
    hook(key="a")
    t = threading.Thread(target=lambda: [hook(key="b"), hook(key="c")])
    t.start()
    t.join()
    assert counter.count() == 1 and counter.count(t.ident) == 2 and counter.count(-1) == 3
    assert [c["key"] for c in calls] == ["a", "b", "c"]


def test_one_thread_at_a_time_compiles_a_specialization(monkeypatch):
    """A threaded warm-up's threads meet each new specialization together: one compiles it, the others wait and then
    load it (Triton's `jit_cache_hook` before a compile, `jit_post_compile_hook` after). Another specialization, of
    the same kernel or another device, does not wait; a compile that never ends holds others COMPILE_WAIT_S at most;
    a cache hook already set is still called, and what it answers is kept (True: Triton skips the compile)."""
    import types

    import triton

    asked = []
    monkeypatch.setattr(triton.knobs.runtime, "jit_post_compile_hook", None)
    monkeypatch.setattr(triton.knobs.runtime, "jit_cache_hook", lambda **kw: asked.append(kw["key"]) or None)
    counter = warmup.CompileCounter()
    before, after = triton.knobs.runtime.jit_cache_hook, triton.knobs.runtime.jit_post_compile_hook
    fn = types.SimpleNamespace(jit_function=object())
    call = lambda key, device=0: dict(key=key, fn=fn, compile={"device": device})  # noqa: E731
    events = []

    def compile_in_thread(key, device=0):
        before(**call(key, device))
        events.append(("compiled", key, device))
        after(**call(key, device))

    assert not before(**call("k1"))  # this thread compiles k1 (the earlier hook answered None)
    others = [threading.Thread(target=compile_in_thread, args=a) for a in (("k2",), ("k1", 1))]
    for t in others:
        t.start()
        t.join(5)
    assert events == [("compiled", "k2", 0), ("compiled", "k1", 1)]  # neither waited
    same = threading.Thread(target=compile_in_thread, args=("k1",))
    same.start()
    same.join(0.3)
    assert same.is_alive() and len(events) == 2  # waits for this thread's compile of k1
    events.append("k1 compiled here")
    after(**call("k1"))
    same.join(5)
    assert events[2:] == ["k1 compiled here", ("compiled", "k1", 0)]
    assert counter.count() == 1 and counter.count(-1) == 4
    # a compile that never reports its end: the others go on after COMPILE_WAIT_S
    monkeypatch.setattr(counter, "COMPILE_WAIT_S", 0.2)
    before(**call("k3"))
    late = threading.Thread(target=compile_in_thread, args=("k3",))
    late.start()
    late.join(5)
    assert not late.is_alive() and events[-1] == ("compiled", "k3", 0)
    assert asked == ["k1", "k2", "k1", "k1", "k3", "k3"]
    counter._previous_before = lambda **kw: True
    assert before(**call("k4")) is True  # the earlier hook's answer stands


def test_synthetic_scene_has_the_renderers_sh_size_and_is_seen():
    scene = warmup.synthetic_scene(warmup.SMALL_SCENE, 16)
    assert scene.sh.shape == (warmup.SMALL_SCENE, 16, 3)
    r = Renderer(scene, device="cpu", backend="torch")
    out = r.render(warmup._camera(scene, 64, 48))
    assert out.stats.n_visible == warmup.SMALL_SCENE and 0 < out.stats.n_pairs <= 4096
    assert torch.isfinite(out.image).all()


def test_float_settings_reach_the_kernels_as_floats():
    """An int would be a specialization of its own (the value 1 even a constant): compiled mid-path."""
    s = RenderSettings(near=1, far=100, eps2d=0).validate()
    assert (type(s.near), type(s.far), type(s.eps2d)) == (float, float, float) and s.near == 1.0


def test_a_scene_viewing_into_a_larger_tensor_is_prepared_at_an_aligned_address():
    """Triton specializes pointers on 16-byte alignment: the warm-up's buffers are aligned, so the scene's are."""
    scene = tiny_scene(40)
    big_means, big_sh = torch.randn(41, 3), torch.randn(41, 4, 3)
    big_means[1:], big_sh[1:] = scene.means, scene.sh
    scene.means, scene.sh = big_means[1:], big_sh[1:]  # the means 12 bytes in: contiguous, not aligned
    assert scene.means.data_ptr() % 16 != 0
    r = Renderer(scene, device="cpu", backend="torch")
    assert r.means.data_ptr() % 16 == 0 and r.sh.data_ptr() % 16 == 0
    assert torch.equal(r.means, scene.means) and torch.equal(r.sh, scene.sh.half())  # the SH copy is fp16


def test_warm_up_runs_a_counted_scenes_order_both_ways_at_the_scenes_size(monkeypatch):
    """CUDA loads torch's kernels on first launch, and which ones sort and cumsum launch depends on the
    input's size: a counted scene's warm-up runs its order stage compacting and not, on arrays of the scene's own
    size with culled and visible Gaussians, so its first frame of either kind does not wait for a module load. A
    scene on capacities (which never runs that stage) does not pay for it."""
    import kernels.reference as ref

    calls, halves_seen = [], []
    order = ref.visible_order

    def spy(depths, pair_counts, *, compact, out, halves=False):
        m = out[2].numel()  # the Gaussians sorted: the scene's, or (compacting) its visible ones
        calls.append((depths.numel(), compact, bool(torch.isinf(depths).any()), bool(torch.isfinite(depths).any())))
        assert m == (int(torch.isfinite(depths).sum()) if compact else depths.numel()), (m, compact)
        halves_seen.append(halves)
        return order(depths, pair_counts, compact=compact, out=out, halves=halves)

    monkeypatch.setattr(ref, "visible_order", spy)
    real = Renderer(tiny_scene(), device="cpu", backend="torch")
    warmup.warm_up(real, [(40, 24)], [RenderSettings()], force=True)
    assert not [c for c in calls if c[0] == real.n]  # capacity frames: no order stage at the scene's size
    real.frame_mode = "counted"
    calls.clear()
    warmup.warm_up(real, [(40, 24)], [RenderSettings()], force=True)
    at_size = {(compact, culled, seen) for n, compact, culled, seen in calls if n == real.n}
    assert at_size == {(True, True, True), (False, True, True)}, calls
    assert not any(halves_seen), "40 x 24 bins no halves"
    # a size whose counted frames bin in two halves (kernels/buffers.py `key_halves`): both ways in that form too
    import kernels.buffers

    monkeypatch.setattr(kernels.buffers, "INT16_TILES", 10)
    calls.clear()
    halves_seen.clear()
    warmup.warm_up(real, [(40, 24)], [RenderSettings()], force=True)
    at_size = {(compact, halves) for (n, compact, _, _), halves in zip(calls, halves_seen, strict=True) if n == real.n}
    assert {(True, True), (False, True)} <= at_size, calls


def test_no_knob_flips_back_and_forth_near_its_threshold():
    """fruit_drops' orbit at 1080p: 4,680 Gaussians reaching 58-106 tiles each, around the bin stage's wide-step
    threshold (64). Each change of configuration is a new kind of frame, run once without its graph; with
    hysteresis the lap changes it at most once, into the configuration it then keeps."""
    n, tiles, tile = 4_680, 32_400, 8
    lap = [105.8, 105.0, 98.3, 83.4, 64.4, 58.4, 72.0, 83.0, 86.5, 81.7, 73.2, 65.4, 58.7, 67.7, 95.9, 102.9]
    config, configs = LaunchConfig(), []
    for footprint in lap + lap:
        config = LaunchConfig.after(config, n, n, int(n * footprint), tiles, tile)
        configs.append(config)
    assert len(set(configs)) == 1 and configs[0].bin_cols == 8, set(configs)
    # falling well under it, the steps narrow
    assert LaunchConfig.after(config, n, n, n * 30, tiles, tile).bin_cols == 4


def test_a_threaded_warm_up_renders_the_same_frames_from_its_threads(monkeypatch):
    """`threads`: the frames of one thread's warm-up, each once, rendered from that many threads on renderers of
    their own (a renderer is never shared between threads), progress reported once per (size, settings) pair as
    its last frame finishes, in order; each thread's compiles summed (counted by a fake compile in every frame)."""
    import triton

    done, started, barrier = [], set(), threading.Barrier(3)
    render_frame = warmup._frame

    def spy(r, camera, settings, config):
        name = threading.current_thread().name
        done.append((name, id(r), repr(settings), repr(config), camera.width))
        if name.startswith("warpsplat-warm-up-") and name not in started:  # every thread holds a frame at once
            started.add(name)
            barrier.wait(timeout=30)
        triton.knobs.runtime.jit_post_compile_hook(key="fake")  # as a compile in this thread would
        return render_frame(r, camera, settings, config)

    monkeypatch.setattr(warmup, "_frame", spy)
    warmup.compile_counter()
    real = Renderer(tiny_scene(), device="cpu", backend="torch")
    settings = [RenderSettings(), RenderSettings(tile_size=16, adagscale=True)]
    sizes = [(40, 24), (24, 16)]
    one = warmup.warm_up(real, sizes, settings, force=True, threads=1)
    want = sorted(job[2:] for job in done)
    done.clear()
    steps = []
    three = warmup.warm_up(real, sizes, settings, force=True, threads=3, progress=lambda d, t: steps.append((d, t)))
    assert sorted(job[2:] for job in done) == want
    assert three.frames == one.frames == len(want) and three.compiles == one.compiles == len(want)
    names = {name for name, *_ in done}
    assert names == {f"warpsplat-warm-up-{t}" for t in range(3)}, names
    owner = {}
    for name, r, *_ in done:
        assert owner.setdefault(r, name) == name  # each renderer in one thread only
    assert steps == [(d, 4) for d in range(1, 5)]


def test_the_warm_up_threads_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("WARPSPLAT_WARMUP_THREADS", raising=False)
    monkeypatch.setattr(warmup, "_first_start", False)
    assert warmup.warm_up_threads() == 1
    monkeypatch.setattr(warmup, "_first_start", True)
    monkeypatch.setattr(warmup.os, "cpu_count", lambda: 16)
    assert warmup.warm_up_threads() == warmup.FIRST_START_THREADS == 4
    monkeypatch.setattr(warmup.os, "cpu_count", lambda: 2)
    assert warmup.warm_up_threads() == 2  # no more threads than cores
    monkeypatch.setenv("WARPSPLAT_WARMUP_THREADS", "1")
    assert warmup.warm_up_threads() == 1  # the environment wins
    monkeypatch.setenv("WARPSPLAT_WARMUP_THREADS", "6")
    assert warmup.warm_up_threads() == 6
    monkeypatch.setenv("WARPSPLAT_WARMUP_THREADS", "many")
    with pytest.raises(ValueError, match="WARPSPLAT_WARMUP_THREADS='many': expected a whole number"):
        warmup.warm_up_threads()


def test_a_first_start_is_told_by_triton_s_cache_holding_none_of_our_kernels(tmp_path, monkeypatch):
    """Threads pay only where every kernel compiles: the first start, or one after the cache was cleared (Triton
    keeps each compiled kernel in a folder of its own, its metadata in NAME.json). Decided once a process, before
    its first compile: the warm-up's own compiles must not turn a first start into a warm one halfway."""
    cache = tmp_path / "cache"
    assert not warmup.triton_cache_holds_ours(str(cache))  # no cache at all
    cache.mkdir()
    (cache / "AB12").mkdir()
    (cache / "AB12" / "_other_kernel.json").write_text("{}")
    (cache / "_project_kernel.json").write_text("{}")  # not in a kernel's folder: not Triton's
    assert not warmup.triton_cache_holds_ours(str(cache))
    (cache / "CD34").mkdir()
    (cache / "CD34" / "_project_kernel.json").write_text("{}")
    assert warmup.triton_cache_holds_ours(str(cache))
    monkeypatch.delenv("WARPSPLAT_WARMUP_THREADS", raising=False)
    monkeypatch.setattr(warmup.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(warmup, "_first_start", None)
    looks = []
    monkeypatch.setattr(warmup, "triton_cache_holds_ours", lambda: looks.append(1) or False)
    assert [warmup.warm_up_threads() for _ in range(3)] == [4, 4, 4] and looks == [1]
