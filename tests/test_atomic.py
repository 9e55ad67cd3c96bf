"""A folder written as a whole (the reports) is published by one rename: a reader never sees
it half-written, files beside it that it does not write are kept, and a failure leaves the
folder exactly as it was."""

from __future__ import annotations

import errno

import pytest

from dptune._atomic import staged_folder
from dptune.errors import DptuneError


def test_a_new_folder_appears_whole(tmp_path):
    out = tmp_path / "reports"
    with staged_folder(out) as stage:
        assert stage.parent == tmp_path and stage.name.startswith(".reports.")
        (stage / "report.md").write_text("new")
        assert not out.exists()  # not before it is complete
    assert (out / "report.md").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_an_existing_folder_is_replaced_and_keeps_what_it_alone_holds(tmp_path):
    out = tmp_path / "reports"
    (out / "sub").mkdir(parents=True)
    (out / "report.md").write_text("old")
    (out / "notes.txt").write_text("mine")
    (out / "sub" / "x.txt").write_text("mine too")
    with staged_folder(out) as stage:
        (stage / "report.md").write_text("new")
    assert (out / "report.md").read_text() == "new"
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "sub" / "x.txt").read_text() == "mine too"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_a_failure_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    (out / "report.md").write_text("old")
    with pytest.raises(RuntimeError), staged_folder(out) as stage:
        (stage / "report.md").write_text("half")
        raise RuntimeError("interrupted")
    assert (out / "report.md").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path):
    out = tmp_path / "reports"
    with pytest.raises(DptuneError) as caught, staged_folder(out) as stage:
        (stage / "a.csv").write_text("x")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value).startswith(f"{out}: out of space")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_file_in_the_folders_place_is_left_alone(tmp_path):
    out = tmp_path / "reports"
    out.write_text("not a folder")
    with pytest.raises(DptuneError, match=r"reports: is a file, not a folder"), \
            staged_folder(out) as stage:
        (stage / "a.csv").write_text("x")
    assert out.read_text() == "not a folder" and list(tmp_path.iterdir()) == [out]


def test_the_working_directory_or_a_folder_above_it_is_not_replaced(tmp_path, monkeypatch):
    """Publishing by one rename over the shell's working directory (Report.write(".") in the
    API, as dptune analyze --reports . did) would take the folder away: one line, nothing
    written, the folder as it was."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "mine.txt").write_text("kept")
    monkeypatch.chdir(here)
    for out in (".", here, tmp_path):
        with pytest.raises(DptuneError, match=r"is the working directory or holds it"), \
                staged_folder(out) as stage:
            (stage / "a.csv").write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]
    assert [p.name for p in here.iterdir()] == ["mine.txt"]


def test_a_stage_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    """``kill -9`` while a report is written leaves its staged folder beside it; the next
    write of that folder removes a stage untouched for an hour (its writer is dead) and keeps
    a recent one (a writer may still be at work), and no other folder's."""
    import os
    import time

    from dptune._atomic import STALE_STAGE_S

    out = tmp_path / "reports"
    dead, live = tmp_path / ".reports.aaaa.tmp", tmp_path / ".reports.bbbb.tmp"
    other = tmp_path / ".other.cccc.tmp"
    for d in (dead, live, other):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "report.md").write_text("half")
    old = time.time() - STALE_STAGE_S - 60
    for d in (dead, other):
        os.utime(d, (old, old))
    with staged_folder(out) as stage:
        (stage / "report.md").write_text("new")
    assert not dead.exists() and live.is_dir() and other.is_dir()
    assert (out / "report.md").read_text() == "new"


#: A name longer than any file system takes (255 bytes a name on Linux and macOS).
LONG = "9" * 5000


@pytest.mark.parametrize(("under", "message"), [
    (lambda t: t / "a.csv" / "reports", "lies under the file {t}/a.csv: no folder can be made "
     "there; give a folder to write into"),
    (lambda t: t / LONG, "no folder can have this name (File name too long)"),
    (lambda t: t / "a.csv" / LONG, "no folder can have this name (File name too long)"),
    (lambda t: t / "a\0b", "no folder can have this name (a NUL character)"),
], ids=["under-a-file", "too-long", "too-long-under-a-file", "nul"])
def test_a_folder_no_folder_can_be_is_one_line_and_nothing_written(tmp_path, under, message):
    """The folder a report or the data files go to: under a file, or a name no file system
    takes, is one line naming it (shortened to 60 characters), and nothing is written (a
    FileExistsError, an OSError or a ValueError from the file system before)."""
    from dptune._atomic import check_folder

    (tmp_path / "a.csv").write_text("kept")
    out = under(tmp_path)
    with pytest.raises(DptuneError) as err:
        with staged_folder(out) as stage:
            (stage / "x.txt").write_text("x")
    text = str(err.value)
    assert text.endswith(": " + message.format(t=tmp_path)), text
    assert "\n" not in text and len(text) < 300
    # a long name by its first 60 characters; a NUL character shown, not written
    assert text.startswith(f"{tmp_path}/"[:60] + "...: " if out.name == LONG else str(tmp_path))
    assert "\0" not in text
    with pytest.raises(DptuneError):
        check_folder(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]
    assert (tmp_path / "a.csv").read_text() == "kept"


def test_a_directory_flag_no_directory_can_have_is_one_line(tmp_path):
    """``--reports`` of a name longer than the file system takes: one line naming the flag
    (an OSError traceback before, from ``dptune seeds`` and ``dptune slices``)."""
    from dptune.errors import check_writable_dir

    with pytest.raises(DptuneError, match=r"^--reports: 9{60}\.\.\. cannot name a directory "
                       r"\(File name too long\)$"):
        check_writable_dir(LONG, "--reports")
    with pytest.raises(DptuneError, match=r"^--reports: .*a\\0b cannot name a directory "
                       r"\(a NUL character\)$"):
        check_writable_dir(tmp_path / "a\0b", "--reports")
    assert list(tmp_path.iterdir()) == []


def test_an_input_table_no_file_can_have_is_one_line(tmp_path):
    """``dptune dp --configs`` (or ``--per-user``) of a name longer than the file system
    takes: one line, not an OSError traceback."""
    from dptune.store._per_user_file import read_table

    with pytest.raises(DptuneError, match=r"^9{60}\.\.\.: configurations file not found: no "
                       r"file can have this name \(File name too long\)$"):
        read_table(LONG, "configurations file")
