"""What the command says when memory runs out anyway: the readers and the renderer refuse what will not fit
before they allocate, so this is a limit they could not see (other processes took the memory, or the process is
limited below the free memory, as by `ulimit -v`)."""

from __future__ import annotations

import argparse
import resource


def is_out_of_memory(e: BaseException) -> bool:
    """Python's MemoryError, or torch's allocators' RuntimeErrors: "DefaultCPUAllocator: can't allocate memory"
    (CPU) and "CUDA out of memory" (torch.OutOfMemoryError)."""
    if isinstance(e, MemoryError):
        return True
    text = str(e)
    return isinstance(e, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text.lower())


def working_on(args: argparse.Namespace) -> str | None:
    """The scene file the command was working on, when it names one."""
    return getattr(args, "scene", None) or getattr(args, "input", None)


def out_of_memory_message(args: argparse.Namespace) -> str:
    """One line: what the command was working on, and the process's own memory limit when it has one."""
    target = working_on(args)
    text = "out of memory" + (f" with {target}" if target else "")
    size = getattr(args, "size", None)
    if isinstance(size, tuple):
        text += f" at {size[0]}x{size[1]}"
    for limit, name, what in ((resource.RLIMIT_AS, "ulimit -v", "address space"),
                              (resource.RLIMIT_DATA, "ulimit -d", "data")):  # fmt: skip
        soft, _ = resource.getrlimit(limit)
        if soft != resource.RLIM_INFINITY:
            text += f": this process may use at most {soft / 1e9:.2f} GB of {what} ({name})"
            break
    return text
