"""Outputs of every writing command (convert, compose, render image / video / frames): written under a temporary
name in the output's folder and renamed when complete; an existing output is refused without --overwrite; a
failure at the rename leaves neither the output nor a temporary file behind."""

from __future__ import annotations

import os
import stat

import pytest

from scenes import load_scene
from tools.cli import main

SCENE = "test-splat.3-points-from-train.ply"
RENDER = ["--size", "16x16", "--backend", "torch", "--quiet"]
PATH = ["--path", "orbit", "--frames", "2"]

# (id, argv builder(scene, out), output name)
COMMANDS = [
    ("convert-ply", lambda s, o: ["convert", s, o], "out.ply"),
    ("convert-compressed-ply", lambda s, o: ["convert", s, o], "out.compressed.ply"),
    ("convert-spz", lambda s, o: ["convert", s, o], "out.spz"),
    ("convert-splat", lambda s, o: ["convert", s, o], "out.splat"),
    ("compose-ply", lambda s, o: ["compose", o, s, "--grid", "2x1"], "out.ply"),  # streamed
    ("compose-spz", lambda s, o: ["compose", o, s, "--grid", "2x1"], "out.spz"),  # built in memory
    ("render-image", lambda s, o: ["render", s, "--out", o, *RENDER], "out.png"),
    ("render-video", lambda s, o: ["render", s, "--out", o, *PATH, *RENDER], "out.mp4"),
]
IDS = [c[0] for c in COMMANDS]


@pytest.fixture
def renames(monkeypatch):
    """Record every os.replace(src, dst) the command makes (and still make it)."""
    log: list[tuple[str, str, bool]] = []
    real = os.replace

    def recording(src, dst, *args, **kwargs):
        log.append((os.fspath(src), os.fspath(dst), os.path.exists(dst)))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", recording)
    return log


def leftovers(folder) -> list[str]:
    return sorted(p for p in os.listdir(folder) if p.endswith(".part") or p.startswith("."))


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_written_under_a_temporary_name_then_renamed(cmd, renames, tmp_path, scene_path, capsys):
    _, argv, name = cmd
    out = tmp_path / name
    assert main(argv(str(scene_path(SCENE)), str(out))) == 0, capsys.readouterr().err
    final = [(src, exists) for src, dst, exists in renames if dst == str(out)]
    assert len(final) == 1, renames
    src, existed = final[0]
    assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(f".{name}.")
    assert not existed  # the output name appears only complete
    assert out.stat().st_size > 0 and not leftovers(tmp_path)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_existing_output_refused_without_overwrite(cmd, tmp_path, scene_path, capsys):
    _, argv, name = cmd
    out = tmp_path / name
    out.write_bytes(b"keep me")
    args = argv(str(scene_path(SCENE)), str(out))
    assert main(args) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "--overwrite" in err[0], err
    assert out.read_bytes() == b"keep me" and not leftovers(tmp_path)
    assert main([*args, "--overwrite"]) == 0
    assert out.read_bytes() != b"keep me"
    if name.endswith((".ply", ".spz", ".splat")):
        assert len(load_scene(out)) > 0


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_an_output_that_is_no_file_is_refused_even_with_overwrite(cmd, tmp_path, scene_path, capsys):
    """An output that is a folder or a named pipe is one line naming it, exit 2, and is left as it was, with
    --overwrite too: the rename failed on a folder only after all the work ("Is a directory", after "pass
    --overwrite to replace it" had said it would be replaced), and put a file in place of a pipe or a device (as
    root, of /dev/null). A link that leads nowhere is an existing output: it was replaced without --overwrite."""
    _, argv, name = cmd
    folder, pipe, link = tmp_path / "folder" / name, tmp_path / "pipe" / name, tmp_path / "link" / name
    for out in (folder, pipe, link):
        out.parent.mkdir()
    folder.mkdir()
    os.mkfifo(pipe)
    link.symlink_to(tmp_path / "nowhere")
    cases = [(folder, "output is a folder", ["--overwrite"]), (pipe, "output is not a regular file", ["--overwrite"]),
             (link, "output exists; pass --overwrite", [])]  # fmt: skip
    for out, what, extra in cases:
        assert main([*argv(str(scene_path(SCENE)), str(out)), *extra]) == 2, out
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and f"{out}: {what}" in err[0], err
        assert os.listdir(out.parent) == [name] and not out.is_file(), os.listdir(out.parent)
    assert folder.is_dir() and stat.S_ISFIFO(os.stat(pipe).st_mode) and link.is_symlink()


@pytest.mark.parametrize("flag", ["--alpha-video", "--depth-video"])
def test_existing_side_video_refused_without_overwrite(flag, tmp_path, scene_path, capsys):
    """A path render's side videos are outputs like --out: an existing one is refused without --overwrite (one
    line naming it, exit 2) before anything renders, even when --out itself is new, so a second render into
    another --out cannot silently replace the alpha or depth video of the first."""
    out, side = tmp_path / "v.mp4", tmp_path / "side.mp4"
    side.write_bytes(b"keep me")
    args = ["render", str(scene_path(SCENE)), "--out", str(out), flag, str(side), *PATH, *RENDER]
    assert main(args) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and str(side) in err[0] and "--overwrite" in err[0], err
    assert side.read_bytes() == b"keep me" and not out.exists() and not leftovers(tmp_path)
    assert main([*args, "--overwrite"]) == 0
    assert side.read_bytes() != b"keep me" and out.stat().st_size > 0


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_failed_rename_leaves_nothing(cmd, monkeypatch, tmp_path, scene_path, capsys):
    """A failure at the very end (here: the rename, as on a full or vanished disk) is one line, exit 2, and
    leaves neither a file under the output name nor a temporary file."""
    _, argv, name = cmd
    out = tmp_path / name

    def failing(src, dst, *args, **kwargs):
        raise OSError(28, "No space left on device (simulated)")

    monkeypatch.setattr(os, "replace", failing)
    assert main(argv(str(scene_path(SCENE)), str(out))) == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("warpsplat ") and ": note: " not in ln]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].endswith(f"error: {out}: No space left on device (simulated)"), errors[0]  # the output named
    assert not out.exists() and not leftovers(tmp_path)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_an_unwritable_folder_is_named_by_the_output(cmd, monkeypatch, tmp_path, scene_path, capsys):
    """Creating the temporary file fails (a read-only folder; simulated, since root may write anywhere): the one
    line names the output the user gave, not the hidden temporary."""
    import tempfile

    _, argv, name = cmd
    out = tmp_path / name

    def refused(*args, dir=None, prefix="", suffix="", **kwargs):
        raise PermissionError(13, "Permission denied", os.path.join(dir or "", prefix + "abcdefgh" + suffix))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    assert main(argv(str(scene_path(SCENE)), str(out))) == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("warpsplat ") and ": note: " not in ln]
    assert len(errors) == 1 and errors[0].endswith(f"error: {out}: Permission denied") and ".part" not in err, err
    assert not out.exists() and not leftovers(tmp_path)


def test_stale_temporaries_are_removed_and_live_ones_kept(tmp_path):
    """A temporary whose writing process is gone is removed by the next write to the same output (renders' chunk
    temporaries included); one whose process still runs, or that belongs to another output, is left alone."""
    import subprocess
    import sys

    from scenes.atomic import atomic_write

    out = tmp_path / "v.mp4"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = [f".v.mp4.{gone.pid}.abcdefgh.part", f".v.mp4.{gone.pid}.abcdefgh.chunk1.part"]
        kept = [f".v.mp4.{live.pid}.abcdefgh.part", f".v.mp4.x.{gone.pid}.abcdefgh.part", ".v.mp4.abcdefgh.part"]
        names = stale + kept
        for n in names:
            (tmp_path / n).write_bytes(b"partial")
        with atomic_write(out) as f:
            f.write(b"whole")
        assert sorted(os.listdir(tmp_path)) == sorted(["v.mp4", *kept])
    finally:
        live.kill()
        live.wait()


def test_frames_folder(tmp_path, scene_path, renames, capsys):
    """PNG frames are renamed one by one; a folder holding frames is refused without --overwrite/--resume."""
    out = tmp_path / "frames"
    args = ["render", str(scene_path(SCENE)), "--out", str(out), *PATH, *RENDER]
    assert main(args) == 0, capsys.readouterr().err
    frames = sorted(p for p in os.listdir(out) if p.endswith(".png"))
    assert len(frames) == 2 and not leftovers(out)
    renamed = {os.path.basename(dst) for src, dst, _ in renames if os.path.dirname(src) == str(out)}
    assert set(frames) <= renamed
    before = {f: (out / f).read_bytes() for f in frames}
    assert main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert {f: (out / f).read_bytes() for f in frames} == before
    assert main([*args, "--overwrite"]) == 0


# every way a command names an output: COMMANDS, plus a frame folder and a side video of a path render
OUTPUT_ARGS = [
    *COMMANDS,
    ("render-frames", lambda s, o: ["render", s, "--out", o, *PATH, *RENDER], "frames"),
    ("render-frames-slash", lambda s, o: ["render", s, "--out", o + "/", *PATH, *RENDER], "frames"),
    ("render-alpha-video",
     lambda s, o: ["render", s, "--out", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(o))), "v.mp4"),
                   "--alpha-video", o, *PATH, *RENDER], "alpha.mp4"),
]  # fmt: skip


@pytest.mark.parametrize("cmd", OUTPUT_ARGS, ids=[c[0] for c in OUTPUT_ARGS])
def test_a_missing_folder_is_refused_unless_mkdir(cmd, tmp_path, scene_path, capsys):
    """An output in a folder that does not exist (a typo in its name, say) is one line naming that folder, exit
    2, and creates nothing; --mkdir creates the folders and writes the output. A frame folder's own folder is
    created either way (test_frames_folder), its missing parents only with --mkdir."""
    _, argv, name = cmd
    out = tmp_path / "typo" / "deeper" / name
    args = argv(str(scene_path(SCENE)), str(out))
    assert main(args) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and f"the folder {out.parent} does not exist; pass --mkdir" in err[0], err
    assert os.listdir(tmp_path) == [], "nothing is created"
    assert main([*args, "--mkdir"]) == 0, capsys.readouterr().err
    assert out.stat().st_size > 0 if out.suffix else len(os.listdir(out)) > 2  # frames and the manifest


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_finished_output_has_the_permissions_a_plain_new_file_gets(umask, tmp_path):
    """The temporary is created 0600 (mkstemp); the renamed output must get what open() gives a new file under
    the same umask, 0666 & ~umask, as a plain write would, not stay private or become wider."""
    from scenes.atomic import atomic_write

    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "out.bin") as f:
            f.write(b"x")
        with open(tmp_path / "plain.bin", "wb") as f:
            f.write(b"x")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(tmp_path / "out.bin").st_mode)
    assert mode == 0o666 & ~umask == stat.S_IMODE(os.stat(tmp_path / "plain.bin").st_mode)
