"""kernels/_launch.py `launch`: the direct launch (the default) once Triton has launched a specialization itself,
Triton's own launch where switched off or interpreting; the direct one keyed by the whole specialization, so a
kernel compiled for one (aligned pointers, a constexpr) is never launched for another. Triton's internals themselves
are exercised on the GPU (tests/gpu/test_direct_launch.py)."""

import pytest
import torch

import kernels._launch as launching


class Compiled:
    """A compiled kernel as Triton 3.6 hands it back: a launcher, its function handle and packed metadata."""

    def __init__(self, spec):
        self.spec, self.function, self.packed_metadata, self.launches = spec, f"function {spec}", "metadata", []

    @property
    def run(self):
        return lambda *a: self.launches.append(a)


class Kernel:
    """A JIT function: a binder (the specialization: the pointer's 16-byte alignment and the constexpr), and
    Triton's own launch through `kernel[grid](...)`, which compiles a specialization once."""

    pre_run_hooks: list = []

    def __init__(self):
        self.compiled, self.own_launches = {}, 0
        self.device_caches = {0: (None, None, None, None, self.binder)}

    def binder(self, ptr, n, *, BLOCK, num_warps=4):
        specialization = [("*fp32", ptr.data_ptr() % 16 == 0), ("i32", None), ("constexpr", BLOCK)]
        return {"ptr": ptr, "n": n, "BLOCK": BLOCK}, specialization, {"num_warps": num_warps}

    def __getitem__(self, grid):
        def run(ptr, n, *, BLOCK, num_warps=4):
            self.own_launches += 1
            _, spec, options = self.binder(ptr, n, BLOCK=BLOCK, num_warps=num_warps)
            return self.compiled.setdefault((tuple(spec), tuple(options.items())), Compiled(spec))

        return run


@pytest.fixture
def direct(monkeypatch):
    """The direct launch on, as on the GPU: no interpreter, no hooks, no launchers yet, device 0 and stream 77."""
    monkeypatch.setattr(launching, "DIRECT", True)
    monkeypatch.setattr(launching, "INTERPRET", False)
    monkeypatch.setattr(launching, "_hooked", lambda kernel: False)
    monkeypatch.setattr(launching, "_launchers", {})
    monkeypatch.setattr(launching, "_current_device", lambda: 0)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 77, raising=False)


def test_direct_launch_goes_through_the_compiled_launcher_of_the_same_specialization(direct):
    k, x = Kernel(), torch.zeros(64)
    launching.launch(k, (3,), x, 5, BLOCK=128)  # first: Triton's own launch, which compiles
    assert k.own_launches == 1
    launching.launch(k, (3, 2), x, 9, BLOCK=128)
    (compiled,) = k.compiled.values()
    assert k.own_launches == 1 and compiled.launches == [(3, 2, 1, 77, compiled.function, "metadata", None, None,
                                                          None, x, 9, 128)]  # fmt: skip
    launching.launch(k, (3,), x, 5, BLOCK=256)  # another constexpr: another kernel, compiled by Triton first
    launching.launch(k, (3,), x[1:], 5, BLOCK=128)  # a pointer off 16 bytes: another specialization
    launching.launch(k, (3,), x, 5, BLOCK=128, num_warps=8)  # another launch option
    assert k.own_launches == 4 and len(compiled.launches) == 1 and len(k.compiled) == 4


def test_without_the_switch_or_in_the_interpreter_triton_launches(monkeypatch):
    k, x = Kernel(), torch.zeros(64)
    monkeypatch.setattr(launching, "DIRECT", False)
    for _ in range(2):
        launching.launch(k, (3,), x, 5, BLOCK=128)
    monkeypatch.setattr(launching, "DIRECT", True)
    monkeypatch.setattr(launching, "INTERPRET", True)
    launching.launch(k, (3,), x, 5, BLOCK=128)
    assert k.own_launches == 3 and all(not c.launches for c in k.compiled.values())


def test_a_compiled_kernel_without_the_launchers_parts_keeps_tritons_launch(direct, monkeypatch):
    """A Triton whose compiled kernels lack `run`, `function` or `packed_metadata` (another version's internals):
    every launch of that specialization goes through Triton's own."""
    k, x = Kernel(), torch.zeros(64)

    class Bare(Compiled):
        def __init__(self, spec):
            super().__init__(spec)
            del self.packed_metadata

    monkeypatch.setitem(globals(), "Compiled", Bare)  # what Kernel's own launch compiles
    for _ in range(3):
        launching.launch(k, (3,), x, 5, BLOCK=128)
    assert k.own_launches == 3 and list(launching._launchers.values()) == [False]


class Launcher:
    """Triton 3.6's launcher object: its C `launch`, the flags it adds, and the scratch sizes it allocates for."""

    def __init__(self, scratch):
        self.global_scratch_size, self.profile_scratch_size = scratch, 0
        self.launch_cooperative_grid, self.launch_pdl = False, True
        self.calls, self.c_calls = [], []
        self.launch = lambda *a: self.c_calls.append(a)

    def __call__(self, *a):
        self.calls.append(a)


@pytest.mark.parametrize("scratch", [0, 128])
def test_a_kernel_without_scratch_is_launched_through_its_c_launch(direct, monkeypatch, scratch):
    """Without scratch the launcher object's C `launch` is called straight, with the flags its `__call__` would add
    and no scratch buffers; a kernel that needs scratch goes through the object, which allocates it."""
    launcher = Launcher(scratch)

    class WithLauncher(Compiled):
        run = launcher

    monkeypatch.setitem(globals(), "Compiled", WithLauncher)
    k, x = Kernel(), torch.zeros(64)
    for n in (5, 6):
        launching.launch(k, (3,), x, n, BLOCK=128)
    (compiled,) = k.compiled.values()
    if scratch:
        assert not launcher.c_calls and launcher.calls == [(3, 1, 1, 77, compiled.function, "metadata", None, None,
                                                            None, x, 6, 128)]  # fmt: skip
    else:
        assert not launcher.calls and launcher.c_calls == [(3, 1, 1, 77, compiled.function, False, True, None, None,
                                                            "metadata", None, None, None, x, 6, 128)]  # fmt: skip


def test_direct_launch_is_the_default_and_switched_off_by_the_environment(monkeypatch):
    import importlib

    monkeypatch.delenv("WARPSPLAT_DIRECT_LAUNCH", raising=False)
    assert importlib.reload(launching).DIRECT
    monkeypatch.setenv("WARPSPLAT_DIRECT_LAUNCH", "0")
    assert not importlib.reload(launching).DIRECT
    monkeypatch.delenv("WARPSPLAT_DIRECT_LAUNCH")
    importlib.reload(launching)


def test_host_arithmetic_matches_tritons():
    """`cdiv` and `next_power_of_2`, the launchers' plain-Python stand-ins for Triton's constexpr functions."""
    import triton

    for a in range(0, 300):
        for b in (1, 2, 3, 7, 32, 1024):
            assert launching.cdiv(a, b) == triton.cdiv(a, b), (a, b)
    for n in [*range(1, 2100), 2**20 - 1, 2**20, 2**20 + 1, 6_000_000]:
        assert launching.next_power_of_2(n) == triton.next_power_of_2(n), n
