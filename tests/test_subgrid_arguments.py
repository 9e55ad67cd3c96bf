"""The arguments of :func:`dptune.analysis.subgrid.write_subgrid` are checked as the flags of
``dptune subgrid`` are, before the store is read: a cutoff of ``True`` was the cutoff 1."""

from __future__ import annotations

import pytest

from dptune.analysis.subgrid import write_subgrid
from dptune.errors import DptuneError
from dptune.store import ResultStore


@pytest.mark.parametrize(("kwargs", "message"), [
    pytest.param({"cutoff": True}, "--cutoff: must be an integer >= 1, got True", id="cutoff-bool"),
    pytest.param({"cutoff": 10.0}, "--cutoff: must be an integer >= 1, got 10.0",
                 id="cutoff-float"),
    pytest.param({"cutoff": "10"}, "--cutoff: must be an integer >= 1, got '10'", id="cutoff-text"),
    pytest.param({"cutoff": 0}, "--cutoff: must be an integer >= 1, got 0", id="cutoff-0"),
    pytest.param({"algorithm": 3}, "--algorithm: needs an algorithm's name, got 3",
                 id="algorithm-number"),
    pytest.param({"grid": 3}, "--grid: needs the grid file to place the sub-grid in (a str or "
                 "os.PathLike), got int", id="grid-number"),
])
def test_a_bad_argument_is_refused_before_the_store_is_read(tmp_path, monkeypatch, kwargs,
                                                            message) -> None:
    monkeypatch.setattr(ResultStore, "manifest", lambda self: pytest.fail("manifest read"))
    args = {"algorithm": "userknn", "metric": "ndcg", "cutoff": 10, "radius": 1,
            "out": tmp_path / "sub.toml", **kwargs}
    with pytest.raises(DptuneError) as ex:
        write_subgrid(tmp_path / "results", **args)
    assert str(ex.value) == message
    assert not (tmp_path / "sub.toml").exists()


def test_an_integer_cutoff_of_numpy_is_taken(knn_swept, tmp_path) -> None:
    import numpy as np

    written = write_subgrid(knn_swept / "results", "userknn", "ndcg", np.int64(10), 1,
                            tmp_path / "sub.toml")
    assert written.path.is_file()


def test_the_best_of_a_sweep_not_finished_is_of_complete_configurations_and_said(
        knn_swept, tmp_path, capsys, monkeypatch) -> None:
    """A configuration with results in one validation fold only (a sweep still running, or
    stopped) was ranked by that fold's mean and could be the centre of the sub-grid, with no
    word that part of the grid was missing. Now the best is taken among the configurations
    measured on every fold, and a warning (on stderr and in the file) says how many."""
    from dptune.cli import _commands

    store = ResultStore(knn_swept / "results")
    full = store.summary()
    folds = sorted(full.loc[full["fold"] != "test", "fold"].unique())
    assert len(folds) == 2
    # configuration 3 (k=80): dropped from the second fold, and best by far on the first
    part = full[~((full["config_id"] == 3) & (full["fold"] == folds[1]))].copy()
    part.loc[part["config_id"] == 3, "mean"] = 1.0
    monkeypatch.setattr(store, "summary", lambda: part.copy())
    monkeypatch.setattr(_commands, "_store", lambda results: store)
    out = tmp_path / "sub.toml"
    written = write_subgrid(store, "userknn", "ndcg", 10, 1, out)
    assert written.best != {"k": 80}
    assert written.sample_warning == (f"userknn: the best of the 3 of 4 configurations with "
                                      f"results in every validation fold (the sweep of "
                                      f"{store.root} is not finished, or ran on a budget); the "
                                      "sub-grid is centred on it")
    assert "# (the best of 3 of 4 configurations: the sweep was not complete)" in out.read_text()
    from dptune.cli import main

    assert main(["subgrid", str(knn_swept / "results"), "--out", str(tmp_path / "b.toml")]) == 0
    assert f"dptune: warning: {written.sample_warning}" in capsys.readouterr().err


def test_the_best_of_a_finished_sweep_carries_no_sample_warning(knn_swept, tmp_path) -> None:
    written = write_subgrid(knn_swept / "results", "userknn", "ndcg", 10, 1,
                            tmp_path / "sub.toml")
    assert written.sample_warning is None
    assert "the sweep was not complete" not in written.path.read_text()
