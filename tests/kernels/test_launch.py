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
    monkeypatch.setattr(launching, "_steady", {})
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


def counting_binder(k: Kernel) -> list:
    """The kernel's binder, counting its calls (the work `launch_steady` skips)."""
    calls, binder = [], k.binder
    k.device_caches = {0: (None, None, None, None, lambda *a, **kw: calls.append(1) or binder(*a, **kw))}
    return calls


def test_a_steady_launch_binds_once_for_the_same_arguments(direct):
    """Once a launch through the compiled kernel has bound them, the same tensor objects and equal numbers launch it
    straight away with the values given (two slots' sets alternating, as a frame's head in flight); a new tensor
    object, even an equal view of the same memory, binds again."""
    k, x, y = Kernel(), torch.zeros(64), torch.zeros(64)
    calls = counting_binder(k)
    launching.launch_steady(k, (3,), x, 5, BLOCK=128)  # Triton's own launch: compiles; nothing remembered
    launching.launch_steady(k, (3,), x, 5, BLOCK=128)  # bound, launched directly, remembered
    assert len(calls) == 2
    for _ in range(3):
        launching.launch_steady(k, (3,), x, 5, BLOCK=128)
    assert len(calls) == 2, "the same arguments again: no binder"
    launching.launch_steady(k, (3,), y, 5, BLOCK=128)  # the other slot's buffer: bound once
    for _ in range(2):
        launching.launch_steady(k, (4,), x, 5, BLOCK=128)
        launching.launch_steady(k, (4,), y, 5, BLOCK=128)
    assert len(calls) == 3
    (compiled,) = k.compiled.values()
    head = (4, 1, 1, 77, compiled.function, "metadata", None, None, None)
    assert compiled.launches[-2:] == [(*head, x, 5, 128), (*head, y, 5, 128)]
    launching.launch_steady(k, (3,), x[:], 5, BLOCK=128)  # an equal view, another object
    assert len(calls) == 4


@pytest.mark.parametrize(
    "change",
    ["int", "int as float", "constexpr", "constexpr as bool", "option", "misaligned"],
)
def test_a_steady_launch_binds_again_for_whatever_could_specialise_otherwise(direct, change):
    """Another number, a number of another type (equal or not), another constexpr or launch option, another tensor
    (a pointer off 16 bytes here): the binder runs again and the launch takes that specialization's kernel."""
    k, x = Kernel(), torch.zeros(64)
    calls = counting_binder(k)
    for _ in range(3):
        launching.launch_steady(k, (3,), x, 5, BLOCK=1)
    assert len(calls) == 2
    args, kwargs = {
        "int": ((x, 6), {"BLOCK": 1}),
        "int as float": ((x, 5.0), {"BLOCK": 1}),
        "constexpr": ((x, 5), {"BLOCK": 2}),
        "constexpr as bool": ((x, 5), {"BLOCK": True}),
        "option": ((x, 5), {"BLOCK": 1, "num_warps": 8}),
        "misaligned": ((x[1:], 5), {"BLOCK": 1}),
    }[change]
    launching.launch_steady(k, (3,), *args, **kwargs)
    assert len(calls) == 3


def test_a_steady_launch_holds_no_tensor_and_forgets_a_dead_one(direct):
    """The arguments are remembered weakly: a tensor let go is freed, and a new one (at the same id, as CPython
    reuses it) binds again; a kernel keeps its last STEADY_SETS sets."""
    import gc
    import weakref

    k = Kernel()
    calls = counting_binder(k)
    x = torch.zeros(64)
    for _ in range(2):
        launching.launch_steady(k, (3,), x, 5, BLOCK=128)
    gone, old_id = weakref.ref(x), id(x)
    for compiled in k.compiled.values():
        compiled.launches.clear()  # the fake launcher's own record of its arguments
    del x
    gc.collect()
    assert gone() is None, "nothing holds the tensor"
    for _ in range(100):  # a new tensor at the dead one's id, where CPython gives one
        y = torch.zeros(64)
        if id(y) == old_id:
            break
    before = len(calls)
    launching.launch_steady(k, (3,), y, 5, BLOCK=128)
    assert len(calls) == before + 1
    for n in range(10):
        launching.launch_steady(k, (3,), y, n + 100, BLOCK=128)
    assert len(launching._steady[id(k)]) == launching.STEADY_SETS


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
