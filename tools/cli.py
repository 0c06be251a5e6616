"""The `warpsplat` command: thin subcommands that parse arguments, call the library and report.

Each subcommand lives in its own module `tools/<name>.py` exposing `add_parser(subparsers)` (which sets
`func` on its parser) and is listed in SUBCOMMANDS. Expected user errors (missing or corrupt files, bad
arguments, existing outputs, memory running out) end with a one-line message on stderr and exit code 2, never
a traceback; warnings print as one line too.

Building the parser imports every subcommand module, so those modules import torch, numpy-heavy libraries,
`renderer` and `scenes` inside the functions that run a command, never at the top: `warpsplat --help` then
takes a fraction of a second instead of torch's seconds (tests/tools/test_help.py checks it).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import re
import sys
import textwrap
import warnings

SUBCOMMANDS = [
    "view",
    "render",
    "info",
    "bench",
    "convert",
    "compose",
]  # modules under tools/, in the order `--help` lists them

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # as a process that SIGPIPE ended: what a shell reports for `ls | head -1`'s ls


_command: str | None = None  # the subcommand `main` runs, for `note`'s prefix


def note(message: str) -> None:
    """One line on stderr about something the command did for the user that they did not ask for (a band dropped, a
    flag the format cannot keep), prefixed as errors and warnings are: `warpsplat convert: note: ...`."""
    prefix = f"warpsplat {_command}" if _command else "warpsplat"
    print(f"{prefix}: note: {message}", file=sys.stderr)


class CliError(Exception):
    """An expected failure with a one-line message for the user (exit code 2)."""


def gaussian_count(text: str) -> int:
    """'6M' -> 6_000_000, '30k' -> 30_000, '1500' -> 1500 (an argparse type: bad text is a usage error)."""
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    try:
        value = float(text[:-1] if mult > 1 else text) * mult
    except ValueError:
        value = 0
    if not 1 <= value < math.inf:  # NaN fails too; int() of an infinity ("inf", "1e400") raised a traceback
        raise argparse.ArgumentTypeError(f"{text!r}: expected a Gaussian count such as 6M, 24M, 30k or 1500")
    return int(value)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line usage errors: the message and where the usage is, not a dozen lines of usage
    before it (`--help` prints that). The exit code stays argparse's 2."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A value after a flag that starts with '-' and a digit (--size -5x3, --radius -1e30) or is -inf is that
        # flag's value: argparse took only plain negative numbers so, and said "--size: expected one argument"
        # rather than what was wrong with -5x3. No warpsplat switch starts with '-' and a digit.
        self._negative_number_matcher = re.compile(r"^-(\.?\d|inf$)", re.IGNORECASE)

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())}; see {self.prog} --help\n")

    def parse_args(self, args=None, namespace=None):
        # argparse reports an unknown switch from the top-level parser; the command's parser names the command
        # (and its --help, which lists the switches there are)
        namespace, extra = self.parse_known_args(args, namespace)
        if extra:
            subcommands = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
            command = getattr(namespace, subcommands.dest, None) if subcommands else None
            owner = subcommands.choices[command] if command else self
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return namespace


def add_command(sub, name: str, *, summary: str, description: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand parser whose --help shows what the command does and how it is called.

    summary: one line for `warpsplat --help`; description: a paragraph for `warpsplat NAME --help`;
    examples: command lines (with a `# what it does` comment each), shown under "examples:".
    """
    return sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(" ".join(description.split()), width=79),
        epilog="examples:\n" + textwrap.indent(textwrap.dedent(examples).strip(), "  "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="warpsplat",
        description="Real-time 3D Gaussian Splatting: view, render, convert and benchmark trained scenes.",
        epilog="`warpsplat COMMAND --help` describes a command and shows examples.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")  # subcommand parsers: ArgumentParser too
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"tools.{name}").add_parser(sub)
    return parser


def missing_requirement() -> str | None:
    """The name of a package the commands need that this Python cannot import, or None.

    Checked before anything else: a newcomer running `python -m tools` with a Python outside the project's
    virtual environment should read what to do, not an import traceback. The packages are looked up, not
    imported (importing torch takes seconds, which `--help` should not wait for).
    """
    for module in ("numpy", "torch"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (`head`, once it has read its lines): poll reports an
    error on such a pipe's writing end, and nothing on a terminal, a file or a pipe still read."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), no real file descriptor
        return False


def _message(e: BaseException) -> str:
    """One line for an expected error. An OSError from the system names its file once, without "[Errno N]"."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return " ".join(str(e).split())


def main(argv: list[str] | None = None) -> int:
    missing = missing_requirement()
    if missing is not None:
        print(
            f"warpsplat: error: {missing} is not installed for {sys.executable}; run `make demo` once to set up "
            f".venv, then use .venv/bin/warpsplat",
            file=sys.stderr,
        )
        return EXIT_USAGE
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv  # the exact command, for reports (bench JSON)
    global _command
    _command = args.command
    from renderer.device import CudaUnusableError
    from renderer.memory import OutOfDeviceMemoryError
    from scenes import SceneFormatError
    from scenes.atomic import OutputExistsError

    from .threads import apply_thread_policy

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        # Python prints a warning as two lines (with the source line); the user needs only what happened.
        print(f"warpsplat {args.command}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line_warning
            # before any work: on a CPU torch's one thread per core collapses beside other work. Inside the
            # one-line warnings: with a CUDA build of torch the policy asks for CUDA first, and an old driver
            # warns there.
            apply_thread_policy()
            code = int(args.func(args) or 0)
            # a pipe's output is buffered: flushed here, not at exit, where a reader that has gone would make
            # Python print "Exception ignored ... BrokenPipeError" and exit 120
            sys.stdout.flush()
            return code
    except OutOfDeviceMemoryError as e:  # the renderer's refusal knows the sizes, not the file they came from
        from .out_of_memory import working_on

        target = working_on(args)
        print(f"warpsplat {args.command}: error: {f'{target}: ' if target else ''}{_message(e)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError as e:
        if not _stdout_closed():  # another pipe (an encoder's) broke: that is an error
            print(f"warpsplat {args.command}: error: {_message(e)}", file=sys.stderr)
            return EXIT_USAGE
        # the reader of our output went away (`warpsplat info scene.ply | head -1`): nothing more to say, to anyone;
        # stdout goes to /dev/null so that Python's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CliError, SceneFormatError, OutputExistsError, CudaUnusableError, OSError) as e:
        print(f"warpsplat {args.command}: error: {_message(e)}", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, RuntimeError) as e:
        # memory running out anyway (tools/out_of_memory.py): a MemoryError, or torch's allocators' RuntimeError
        from .out_of_memory import is_out_of_memory, out_of_memory_message

        if not is_out_of_memory(e):
            raise
        print(f"warpsplat {args.command}: error: {out_of_memory_message(args)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"warpsplat {args.command}: interrupted", file=sys.stderr)
        return 130
