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


def _fold_dir(tmp_path: Path, source: Path, *names: str) -> Path:
    """A folder holding a copy of ``source`` under each of ``names``."""
    d = tmp_path / f"{source.stem}-by-fold"
    d.mkdir()
    for name in names:
        (d / name).write_text(source.read_text())
    return d


def test_compressed_fold_files_belong_to_their_fold(tmp_path: Path) -> None:
    """A qrels folder of ``0.qrels.gz`` and ``1.qrels.gz`` (gzip-compressed, as TREC hands
    out its files): each was taken for a fold named ``0.qrels``, of no fold of the runs. They
    are folds 0 and 1's, and give the values of the plain files."""
    import gzip

    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"), folds=("0", "1"))
    packed = tmp_path / "qrels-gz"
    packed.mkdir()
    for fold in ("0", "1"):
        (packed / f"{fold}.qrels.gz").write_bytes(gzip.compress(qrels.read_bytes()))
    plain = _fold_dir(tmp_path, qrels, "0.qrels", "1.qrels")
    got = read_runs(runs, packed, train, cutoffs=(5,))
    expected = read_runs(runs, plain, train, cutoffs=(5,))
    assert got.equals(expected) and set(got["fold"]) == {"0", "1"}


def test_two_files_of_one_fold_are_refused(tmp_path: Path, capsys) -> None:
    """A qrels folder holding 0.txt and 0.qrels used the first by name without a word; now one
    line naming the folder and both files, nothing written."""
    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"), folds=("0", "1"))
    by_fold = _fold_dir(tmp_path, qrels, "0.txt", "0.qrels", "1.txt")
    rep = tmp_path / "rep"
    assert main(["dp", "--runs", str(runs), "--qrels", str(by_fold), "--train", str(train),
                 "--reports", str(rep), "--no-progress"]) == 2
    assert capsys.readouterr().err == (f"dptune: {by_fold}: fold 0: two qrels files for this "
                                       "fold, 0.qrels and 0.txt; keep one file per fold (file "
                                       "stem = fold name)\n")
    assert not rep.exists()


def test_a_file_of_no_fold_is_refused_before_any_run(tmp_path: Path, monkeypatch) -> None:
    """The README: a directory of one file per fold. A train file of fold 1 beside a runs
    folder of fold 0 alone was ignored (fold 1 of the runs missing, or misnamed); now refused
    naming it, and, like a fold without a file, before any run is evaluated."""
    import dptune.store._runs as runs_mod

    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"))
    by_fold = _fold_dir(tmp_path, train, "0.txt", "1.txt")
    monkeypatch.setattr(runs_mod, "evaluate_run", _no_evaluation)
    with pytest.raises(DptuneError) as ex:
        read_runs(runs, qrels, by_fold)
    assert str(ex.value) == (f"{by_fold}: 1.txt: a train file of no fold of {runs} (its folds: "
                             "0); the folder holds one file per fold, file stem = fold name")
    (by_fold / "1.txt").unlink()
    (by_fold / ".hidden").write_text("")  # hidden files are no folds' files
    (by_fold / "0.txt").unlink()
    with pytest.raises(DptuneError, match=r"train-by-fold: fold 0: no train file for this fold"):
        read_runs(runs, qrels, by_fold)


def _no_evaluation(*args, **kwargs):
    raise AssertionError("a run was evaluated before the inputs were checked")


def test_too_few_users_per_fold_are_refused_before_the_runs_are_evaluated(
        tmp_path: Path, capsys, monkeypatch) -> None:
    """``--min-fold-users`` was checked by the analysis, after every run was evaluated and its
    notes printed: stderr held the notes, then the refusal. A fold's users are its qrels users
    with a relevant item (each run scores all of them), known before any run: one line."""
    import dptune.store._runs as runs_mod

    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"), folds=("0", "1"))
    rep = tmp_path / "rep"
    argv = ["dp", "--runs", str(runs), "--qrels", str(qrels), "--train", str(train),
            "--reports", str(rep), "--no-progress"]
    with monkeypatch.context() as m:
        m.setattr(runs_mod, "evaluate_run", _no_evaluation)
        assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"dptune: {runs}: runs/fold 0: only {len(RUN_USERS)} users to test pairs on, fewer "
        "than min_fold_users = 20; DP over so few users is not evidence (use more data or "
        "fewer folds, or lower the minimum: --min-fold-users, or min_fold_users in Python)\n")
    assert not rep.exists()
    # the counts are the users the analysis tests pairs on: a user without a relevant item
    # is none of them
    with qrels.open("a") as f:
        f.write("low 0 i1 1\n")
    counts: dict[str, int] = {}
    table = read_runs(runs, qrels, train, cutoffs=(5,), check_folds=counts.update)
    assert counts == {f: table.loc[table["fold"] == f, "user"].nunique() for f in ("0", "1")}
    assert counts == {"0": len(RUN_USERS), "1": len(RUN_USERS)}
