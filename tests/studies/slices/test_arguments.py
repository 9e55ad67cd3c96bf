"""The arguments of :func:`run_slices_study` are checked before any file is read, and its
report is published whole: an interrupted write leaves the previous report as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from dptune.errors import DptuneError
from dptune.store import ResultStore
from dptune.studies import run_slices_study

BAD = [
    pytest.param({"base": 1}, "slices: base: must be an integer from 2 to 1,000,000, got 1",
                 id="base-1"),
    pytest.param({"base": 2.5}, "slices: base: must be an integer from 2 to 1,000,000, got 2.5",
                 id="base-float"),
    pytest.param({"n_pairs": 0}, "slices: n_pairs: must be an integer >= 1, got 0",
                 id="pairs-0"),
    pytest.param({"n_pairs": 7.9}, "slices: n_pairs: must be an integer >= 1, got 7.9",
                 id="pairs-float"),
    pytest.param({"seed": -1}, "slices: seed: must be an integer from 0 to 4,294,967,295, "
                 "got -1", id="seed-negative"),
    pytest.param({"seed": 1.5}, "slices: seed: must be an integer from 0 to 4,294,967,295, "
                 "got 1.5", id="seed-float"),
    pytest.param({"cutoff": 0}, "slices: cutoff: must be an integer >= 1, got 0", id="cutoff-0"),
    pytest.param({"cutoff": 10.5}, "slices: cutoff: must be an integer >= 1, got 10.5",
                 id="cutoff-float"),
    pytest.param({"test": "z"}, "slices: test: unknown test 'z'", id="test-unknown"),
    pytest.param({"test": ""}, "slices: test: unknown test ''", id="test-empty"),
    pytest.param({"min_users": 1}, "slices: min_users: must be an integer >= 2", id="min-users"),
    pytest.param({"algorithms": "userknn"}, "slices: algorithms: needs a list of algorithm "
                 "names, got 'userknn'", id="algorithms-str"),
    pytest.param({"algorithms": []}, "slices: algorithms: is empty", id="algorithms-empty"),
    pytest.param({"algorithms": ["userknn", "userknn"]}, "slices: algorithms: names userknn "
                 "twice", id="algorithms-twice"),
    pytest.param({"results_dir": 5}, "slices: results_dir: needs the results directory",
                 id="results-not-a-path"),
    pytest.param({"out_dir": None}, "slices: out_dir: needs the folder", id="out-none"),
    pytest.param({"reports_dir": 3}, "slices: reports_dir: needs a path", id="reports-number"),
    pytest.param({"experiment": 3}, "slices: experiment: needs a path", id="experiment-number"),
    # a TypeError, a ValueError of Python's integer-to-text limit or an OSError before
    pytest.param({"algorithms": 3}, "slices: algorithms: needs a list of algorithm names, got 3",
                 id="algorithms-number"),
    pytest.param({"algorithms": [10**5000]}, "slices: algorithms: needs a list of algorithm "
                 "names, got a list holding an integer of more digits", id="algorithms-huge"),
    pytest.param({"n_pairs": 10**5000}, "slices: n_pairs: must be an integer of at most "
                 "9,223,372,036,854,775,807 (int64's largest), got an integer of 5,001 digits",
                 id="n-pairs-huge"),
    pytest.param({"cutoff": 2**63}, "slices: cutoff: must be an integer of at most "
                 "9,223,372,036,854,775,807 (int64's largest), got 9223372036854775808",
                 id="cutoff-2**63"),
    pytest.param({"min_users": 10**5000}, "slices: min_users: must be an integer of at most "
                 "9,223,372,036,854,775,807 (int64's largest), got an integer of 5,001 digits",
                 id="min-users-huge"),
    pytest.param({"test": 10**5000}, "slices: test: unknown test an integer of 5,001 digits",
                 id="test-huge"),
    pytest.param({"reports_dir": "9" * 5000}, "slices: reports_dir: " + "9" * 60 + "... cannot "
                 "name a file (File name too long)", id="reports-too-long"),
    pytest.param({"results_dir": "9" * 5000}, "slices: results_dir: " + "9" * 60 + "... cannot "
                 "name a file (File name too long)", id="results-too-long"),
]


@pytest.mark.parametrize(("kwargs", "start"), BAD)
def test_a_bad_argument_is_refused_before_any_file_is_read(tmp_path, monkeypatch, kwargs,
                                                           start) -> None:
    """Every argument is checked first: a bad one is one line naming it, whatever the store.
    The base was checked only after the manifest and the experiment file were read, and a
    non-integer ``n_pairs``, ``seed`` or ``cutoff`` was rounded down without a word (``cutoff
    = 10.5`` gave the report of N = 10); an empty ``test`` fell back on the manifest's."""
    def no_read(self):  # the store must not be opened before the arguments are checked
        raise AssertionError("the manifest was read before the arguments were checked")

    monkeypatch.setattr(ResultStore, "manifest", no_read)
    args = {"results_dir": tmp_path / "results", "out_dir": tmp_path / "out", **kwargs}
    with pytest.raises(DptuneError) as ex:
        run_slices_study(args.pop("results_dir"), args.pop("out_dir"), **args)
    assert str(ex.value).startswith(start), str(ex.value)
    assert "\n" not in str(ex.value)
    assert not (tmp_path / "out").exists()


def test_an_out_dir_that_is_a_file_is_refused_before_any_file_is_read(tmp_path,
                                                                       monkeypatch) -> None:
    """It was found only when the report was written, after the slices had been computed."""
    monkeypatch.setattr(ResultStore, "manifest", lambda self: pytest.fail("manifest read"))
    (tmp_path / "out").write_text("a file")
    with pytest.raises(DptuneError, match=r"^slices: out_dir: .*out is a file, not a folder"):
        run_slices_study(tmp_path / "results", tmp_path / "out")
    assert (tmp_path / "out").read_text() == "a file"


def test_an_unknown_algorithm_names_the_argument_and_the_algorithms(knn_swept, tmp_path) -> None:
    """``dptune slices`` has no ``--algorithms`` flag: the message names the argument."""
    with pytest.raises(DptuneError, match=r"^slices: algorithms: no algorithm 'nope' in .* "
                       r"\(userknn\)$"):
        run_slices_study(knn_swept / "results", tmp_path / "out", algorithms=["nope"])
    assert not (tmp_path / "out").exists()


def test_an_interrupted_write_leaves_the_previous_report(knn_swept, tmp_path,
                                                         monkeypatch) -> None:
    """The files were written one by one into the report folder: a Ctrl-C while the figure was
    saved left the new CSV files beside the old report. The folder is now staged and published
    by one rename, so the previous report stays whole."""
    import dptune.studies.slices.study as study

    out = tmp_path / "out"
    out.mkdir()
    (out / "slices_dp.csv").write_text("old\n")
    (out / "slices_report.md").write_text("old\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(study, "save_figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_slices_study(knn_swept / "results", out, base=10)
    assert sorted(p.name for p in out.iterdir()) == ["slices_dp.csv", "slices_report.md"]
    assert (out / "slices_dp.csv").read_text() == "old\n"
    assert not list(tmp_path.glob(".out.*.tmp"))  # no staged folder left behind
    monkeypatch.undo()
    files = run_slices_study(knn_swept / "results", out, base=10)
    assert files[-1] == out / "slices_report.md" and all(Path(f).is_file() for f in files)
    assert (out / "slices_dp.csv").read_text().startswith("dataset,")


def test_progress_must_be_a_bool(tmp_path) -> None:
    with pytest.raises(DptuneError, match=r"^slices: progress: must be True or False, got 'no'$"):
        run_slices_study(tmp_path / "results", tmp_path / "out", progress="no")


def test_the_command_shows_progress_with_the_time_left(knn_swept, tmp_path, capsys) -> None:
    """``dptune slices`` worked for minutes with a resampling test (``--test permutation`` on
    a large store) without a line of output; it now shows a bar of (algorithm, slice kind)
    steps with its elapsed and remaining time, which ``--no-progress`` turns off."""
    from dptune.cli import main

    assert main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "a"),
                 "--base", "10"]) == 0
    err = capsys.readouterr().err
    assert "slices: 100%" in err and "3/3" in err, err  # userknn x (all, history, popularity)
    assert "<00:00" in err, err  # tqdm's [elapsed<remaining]
    assert main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "b"),
                 "--base", "10", "--no-progress"]) == 0
    assert "slices:" not in capsys.readouterr().err


def test_the_command_checks_reports_before_reading_the_store(tmp_path, capsys) -> None:
    """``--reports`` is a flag: a file given there is named, whatever the results directory
    (the store's manifest was read first, so a mistyped RESULTS hid the flag's problem)."""
    from dptune.cli import main

    (tmp_path / "file").write_text("x")
    assert main(["slices", str(tmp_path / "nowhere"), "--reports", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"dptune: --reports: {tmp_path / 'file'} is not writable: it is a file, not a " \
                  "directory", err


def test_algorithms_may_be_any_iterable_of_names(tmp_path) -> None:
    """A generator or a pandas Index of names is a list of names (a generator was consumed by
    the check and became an empty list); a number is not."""
    import pandas as pd

    from dptune.studies.slices.study import _check_arguments

    def check(algorithms):
        return _check_arguments(tmp_path / "results", tmp_path / "out", None, 2, None, None, None,
                                None, algorithms, None, 2, False)

    assert check(a for a in ["userknn", "bpr-mf"]) == ["userknn", "bpr-mf"]
    assert check(pd.Index(["userknn"])) == ["userknn"]
    with pytest.raises(DptuneError, match="needs a list of algorithm names, got 3$"):
        check(3)
