"""A directory of TREC runs as a per-user table (``dptune dp --runs``): its layout is checked
before any run is read, every system keeps its name and every user id its text."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RUN_USERS, write_runs

from dptune.cli import main
from dptune.errors import DptuneError
from dptune.store._runs import read_runs, run_files


def test_mixed_layout_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    """Fold sub-folders and a run file side by side: refused, naming the folder and both kinds
    of entries, before any run is read (it once used the folds and dropped the file's system
    without a word)."""
    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"), folds=("0", "1"))
    write_runs(tmp_path, ("top.run",))  # a run file beside the fold folders
    rep = tmp_path / "rep"
    rc = main(["dp", "--runs", str(runs), "--qrels", str(qrels), "--train", str(train),
               "--reports", str(rep), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert err.startswith(f"dptune: {runs}: mixes fold sub-folders (0, 1) and run files (top.run)")
    assert not rep.exists()


def test_a_fold_with_another_set_of_systems_is_refused(tmp_path: Path) -> None:
    """Every fold holds the same systems: a system only in a later fold is named, not
    dropped."""
    runs, _, _ = write_runs(tmp_path, ("a.run", "b.run"), folds=("0", "1"))
    (runs / "1" / "c.run").write_text((runs / "1" / "a.run").read_text())
    with pytest.raises(DptuneError, match="run file missing in fold 0") as ex:
        run_files(runs)
    assert str(ex.value).startswith(str(runs / "0" / "c.run"))
    (runs / "1" / "c.run").unlink()
    (runs / "1" / "nested").mkdir()
    with pytest.raises(DptuneError, match="a folder inside fold 1"):
        run_files(runs)


def test_systems_and_users_keep_their_names(tmp_path: Path) -> None:
    """Every system is named by its file, every user by its text (``0042`` and ``42`` are
    two users, ``NA`` is one); hidden files are no systems."""
    runs, qrels, train = write_runs(tmp_path, ("bm25.run", "als.run", "001"))
    (runs / ".DS_Store").write_text("")
    folds, systems = run_files(runs)
    assert list(folds) == ["0"] and systems == ["001", "als.run", "bm25.run"]
    table = read_runs(runs, qrels, train, cutoffs=(5,))
    assert set(table["system"]) == {"001", "als.run", "bm25.run"}
    assert sorted(set(table["user"])) == sorted(RUN_USERS)


def test_users_without_a_relevant_item_are_counted(tmp_path: Path) -> None:
    """A user of the qrels with no rating above the threshold has no values; the table says
    which users of each fold were left out (the report lists them in its settings)."""
    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"))
    with qrels.open("a") as f:
        f.write("low 0 i1 1\nlow 0 i2 2\n")
    table = read_runs(runs, qrels, train, cutoffs=(5,))
    assert "low" not in set(table["user"])
    assert table.attrs["not_evaluated"] == {"0": ["low"]}
    assert table.attrs["users_seen"] == {"0": len(RUN_USERS) + 1}
