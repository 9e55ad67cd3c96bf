"""A budgeted sweep end to end: it stops after whole rounds of the design order, its later
stages (test split, noise floor) run on the units it has, ``dptune status`` and the recorded
design say how much of the grid it holds, a rerun without the budget completes the same order,
and the full grid's store holds exactly the values of a sweep in plain grid order."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import EXPERIMENT, KNN_GRID, bpr_grid

from dptune.cli import main
from dptune.config import load_experiment
from dptune.store._store import ResultStore
from dptune.sweeper import plan, run_unit
from dptune.sweeper.design import DESIGN_FILE, read_design

BPR_2x2 = bpr_grid([8, 16], [1, 2], [0.05, 0.1])


def _experiment(d: Path, name: str = "budget", sweep: str = "", stages: bool = False) -> Path:
    """The conftest experiment with a 2 x 2 BPR-MF grid (4 units in rounds of 2); ``sweep``
    lines go into its [sweep] table; ``stages`` turns on the test split and a noise floor."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "knn.toml").write_text(KNN_GRID)
    (d / "bpr.toml").write_text(BPR_2x2)
    text = EXPERIMENT.format(name=name, source="ml-latest-small", knn=d / "knn.toml",
                             bpr=d / "bpr.toml").replace("jobs = 1", "jobs = 1\n" + sweep)
    if stages:
        text = text.replace("test_split = false", "test_split = true").replace(
            "noise_seeds = 0", "noise_seeds = 2")
    cfg = d / f"{name}.toml"
    cfg.write_text(text)
    return cfg


def _run(cfg: Path, results: Path, *flags: str) -> int:
    return main(["run", str(cfg), "--results", str(results), "--no-analyze", "--no-progress",
                 *flags])


def _validation_values(root: Path) -> pd.DataFrame:
    df = pd.read_parquet(root / "per_user.parquet")
    df = df[df["fold"] != "test"]
    cols = ["algorithm", "config_id", "fold", "user", "metric", "cutoff"]
    return df.sort_values(cols).reset_index(drop=True)[[*cols, "value"]]


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory) -> tuple[Path, Path]:
    """The experiment (test split and noise floor on) run with ``--budget 2``: one round."""
    d = tmp_path_factory.mktemp("budget")
    cfg = _experiment(d / "exp", stages=True)
    assert _run(cfg, d / "results", "--budget", "2") == 0
    return cfg, d / "results"


def test_the_sweep_stops_after_whole_rounds_of_the_design_order(budgeted):
    _, results = budgeted
    design = read_design(results)
    bpr = design.algorithms["bpr-mf"]
    assert design.budget == "2" and bpr.total_units == 4 and bpr.budget_units == 2
    assert [u.complete for u in bpr.units] == [True, True, False, False]
    assert [u.folds_done for u in bpr.units] == [("0", "1"), ("0", "1"), (), ()]
    assert design.algorithms["userknn"].complete_units() == design.algorithms["userknn"].units
    parts = sorted(p.name for p in (results / "per_user.parquet").glob("bpr-mf__[01]__*.parquet"))
    assert parts == sorted(f"bpr-mf__{f}__{u.unit}.parquet" for u in bpr.units[:2]
                           for f in ("0", "1"))
    frame = bpr.frame()
    assert list(frame.columns) == ["position", "round", "unit", "config_ids", "factors",
                                   "learning_rate", "in_budget", "folds_done", "complete"]
    assert frame["in_budget"].tolist() == [True, True, False, False]
    assert frame["round"].tolist() == [0, 0, 1, 1]


def test_the_test_split_and_noise_floor_run_on_the_units_there_are(budgeted):
    _, results = budgeted
    store = ResultStore(results)
    chosen = set(store.best_configs().query("algorithm == 'bpr-mf'")["config_id"])
    done = {c for u in read_design(results).algorithms["bpr-mf"].complete_units()
            for c in u.config_ids}
    assert chosen and chosen <= done
    assert any((results / "per_user.parquet").glob("bpr-mf__test__*.parquet"))
    assert len(list((results / "noise_floor.parquet").glob("bpr-mf__*.parquet"))) == 2  # 2 folds


def test_status_shows_m_of_m_units_the_budget_and_the_projection(budgeted, capsys):
    _, results = budgeted
    assert main(["status", str(results)]) == 0
    out = capsys.readouterr().out
    lines = {line.split(":")[0]: line for line in out.splitlines() if ":" in line}
    assert "bpr-mf 2 of 4 units (budget 2 units = 1 round of 2)" in lines["units"]
    assert "userknn 1 of 1 units" in lines["units"]
    assert lines["budget"].split(None, 1)[1].startswith("2 ")
    assert "full grid" in lines["projection"] and "cost model" in lines["projection"]
    rows = {r.split()[0]: r.split() for r in out.splitlines()[1:3]}
    assert rows["bpr-mf"][1:] == ["4", "4", "0", "0", "0"]  # the budget's tasks, all done
    assert "units done" in lines["test split"] and "parts (2 seeds) done" in lines["noise floor"]


def test_a_rerun_without_the_budget_completes_the_same_order(budgeted, tmp_path):
    cfg, results = budgeted
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    before = read_design(copy).algorithms["bpr-mf"]
    assert _run(cfg, copy) == 0
    after = read_design(copy)
    bpr = after.algorithms["bpr-mf"]
    assert after.budget is None and bpr.budget_units == 4
    assert [u.unit for u in bpr.units] == [u.unit for u in before.units]  # the same order
    assert all(u.complete for u in bpr.units)


def test_the_full_grid_in_design_order_is_the_full_grid_in_plain_order(tmp_path):
    """Same units, same seeds, same values: the store of a sweep in design order (optuna
    workers) holds exactly the per-user values of the same units computed in plain grid order,
    compared as contents, not as the order of writing."""
    cfg = _experiment(tmp_path / "exp", name="full")
    assert _run(cfg, tmp_path / "design") == 0
    exp = load_experiment(cfg)
    plain = ResultStore(tmp_path / "plain").create()
    for a in exp.algorithms:
        for task in plan(exp, a.name, ["0", "1"]):  # folds outer, units inner: the grid order
            run_unit(exp, task, plain)
    got, want = _validation_values(tmp_path / "design"), _validation_values(tmp_path / "plain")
    pd.testing.assert_frame_equal(got, want)
    names = lambda root: sorted(p.name for p in (root / "per_user.parquet").glob("*.parquet"))  # noqa: E731
    assert names(tmp_path / "design") == names(tmp_path / "plain")


def test_a_store_without_a_recorded_design_gets_its_experiments(budgeted, tmp_path):
    _, results = budgeted
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / DESIGN_FILE).unlink()
    d = read_design(copy)
    assert d.budget is None and d.algorithms["bpr-mf"].total_units == 4
    assert sum(u.complete for u in d.algorithms["bpr-mf"].units) == 2
    (tmp_path / "empty").mkdir()  # a folder with no sweep's results: no design (a path that
    assert read_design(tmp_path / "empty") is None  # does not exist: tests/sweeper/design)


@pytest.mark.parametrize("damage", ["rounds", "unit"])
def test_a_damaged_design_that_still_parses_is_not_trusted(budgeted, tmp_path, capsys, damage):
    """``design.json`` has no checksum: a digit changed by a bad disk still parses. A budget of
    more rounds than the design has stopped ``dptune status`` with an ``IndexError``; a unit's
    name changed made it count a finished unit of the store as never computed. Such a design
    is read as none (status shows the experiment's, the store's units all counted), and the
    run writes it again."""
    import json
    import shutil

    cfg, results = budgeted
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    data = json.loads((copy / DESIGN_FILE).read_text())
    bpr = next(a for a in data["algorithms"] if a["name"] == "bpr-mf")
    if damage == "rounds":
        bpr["budget_rounds"] = len(bpr["round_ends"]) + 3
    else:
        bpr["units"][0]["unit"] = "u00009"
    (copy / DESIGN_FILE).write_text(json.dumps(data))
    assert main(["status", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "bpr-mf 2 of 4 units" in out, out
    assert _run(cfg, copy, "--budget", "2") == 0
    assert read_design(copy).algorithms["bpr-mf"].budget_units == 2  # written again


@pytest.mark.parametrize("value", ["0", "-3", "150%", "0%", "abc", "2x", "0h", "1.5"])
def test_a_bad_budget_flag_is_one_line_exit_2(tmp_path, capsys, value):
    cfg = _experiment(tmp_path / "exp")
    for command in (["run", str(cfg)], ["worker", str(cfg), "--storage", "sqlite:///x.db"]):
        assert main([*command, "--budget", value]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "argument --budget:" in err[0], err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ['"abc"', "0", "0.2", "true", '"101%"', '"-2h"', "[15]"])
def test_a_bad_budget_in_the_experiment_file_is_one_line_exit_2(tmp_path, capsys, value):
    cfg = _experiment(tmp_path / "exp", sweep=f"budget = {value}")
    assert _run(cfg, tmp_path / "results") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"dptune: {cfg}: sweep.budget: "), err
    assert not (tmp_path / "results").exists()


def test_a_time_budget_too_short_for_one_round_stops_before_any_work(tmp_path, capsys):
    # one round of this tiny grid projects to 0.4 s
    cfg = _experiment(tmp_path / "exp", sweep='budget = "0.1s"')
    assert _run(cfg, tmp_path / "results") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sweep.budget: 0.1s holds no whole round" in err[0], err
    assert not (tmp_path / "results").exists()
    assert _run(cfg, tmp_path / "results", "--budget", "0.05s") == 2
    assert capsys.readouterr().err.startswith("dptune: --budget: 0.05s holds no whole round")


def test_progress_shows_m_of_m_units_and_the_projection(budgeted, capsys):
    from dptune.sweeper._local import _announce
    from dptune.sweeper._progress import Progress

    cfg, results = budgeted
    design = read_design(results)
    store = ResultStore(results)
    bar = Progress(store, design.tasks(), "x", False, design)
    assert bar.units() == "userknn 1 of 1 units, bpr-mf 2 of 4 units (budget 2)"
    _announce(load_experiment(cfg), store, design, 2)
    line = capsys.readouterr().err.strip()
    assert line.startswith("budget: userknn 1 of 1 units (1 round of 1), bpr-mf 2 of 4 units "
                           "(1 round of 2); budget 2; projected (cost model, 2 cores): full "
                           "grid "), line
    assert ", this run " in line
