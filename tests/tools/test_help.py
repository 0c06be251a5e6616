"""Every subcommand's --help teaches: a description, every option explained, and examples that name the command.
--help comes without importing torch (seconds), and a usage error is one line. Also `python -m tools` with a
Python that lacks torch: one line saying what to do."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tools.cli import SUBCOMMANDS, build_parser, main


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_has_a_description_and_examples(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    before_options = text.split("\n\n")[1]  # usage, then the description paragraph
    assert len(before_options.split()) >= 20 and not before_options.startswith(("positional", "options")), text
    examples = text.split("examples:\n", 1)[1].splitlines()
    assert examples and all(line.strip().startswith(f"warpsplat {name}") for line in examples if line.strip())


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_argument_has_help(name):
    for action in subparsers()[name]._actions:
        assert action.help and action.help.strip(), f"warpsplat {name}: {action.option_strings or action.dest}"


def test_convert_names_its_arguments_as_the_help_text_does(capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    text = capsys.readouterr().out
    assert "usage: warpsplat convert [-h]" in text and "IN OUT" in text
    assert "replace OUT if it exists" in text


def test_without_torch_python_dash_m_tools_says_what_to_do():
    """sys.modules[name] = None makes `import name` raise ImportError, as in a Python without the package."""
    code = "import sys, runpy; sys.modules['torch'] = None; runpy.run_module('tools', run_name='__main__')"
    r = subprocess.run([sys.executable, "-c", code, "info"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("warpsplat: error: torch is not installed for ") and r.stderr.count("\n") == 1
    assert "make demo" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name", ["", *SUBCOMMANDS])
def test_help_does_not_import_torch(name):
    """`warpsplat --help` and `warpsplat NAME --help` print without importing torch (nor renderer/scenes, which
    import it): the parser's modules import them only when a command runs. Checked in a fresh interpreter."""
    argv = [name, "--help"] if name else ["--help"]
    code = (
        "import sys\nfrom tools.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
        "    print(e.code, sorted(m for m in ('torch', 'renderer', 'scenes', 'triton') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and "usage: warpsplat" in r.stdout, r.stderr
    assert r.stdout.splitlines()[-1] == "0 []", r.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["render", "--size", "12", "--out", "x.png"], "argument --size: '12' is not WIDTHxHEIGHT (e.g. 1920x1080)"),
        (["convert", "in.ply"], "the following arguments are required: OUT"),
        (["render", "--out", "x.png", "--no-such-switch"], "unrecognized arguments: --no-such-switch"),
        ([], "the following arguments are required: COMMAND"),
    ],
    ids=["bad-size", "missing-argument", "unknown-switch", "no-command"],
)
def test_a_usage_error_is_one_line(argv, message, capsys):
    """The message and where the usage is, exit 2; argparse's usage block (a dozen lines for render) is left to
    --help."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    captured = capsys.readouterr()
    prog = " ".join(["warpsplat", *argv[:1]])
    assert captured.out == ""
    assert captured.err == f"{prog}: error: {message}; see {prog} --help\n", captured.err
