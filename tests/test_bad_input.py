"""Bad input through the command line: exit code 2, one line on stderr naming the file and the
field, no traceback, and nothing already computed is lost.

Data cases write a small ratings file (60 users x 25 ratings, header ``user,item,rating,timestamp``)
into ``tmp_path`` and point an experiment's ``data.source`` at it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.cli import main
from dptune.errors import input_error
from dptune.grids import load_grid
from dptune.models import get_family

HEADER = "user,item,rating,timestamp"

EXPERIMENT = """
name = "{name}"
seed = 3
[data]
source = "{source}"
[split]
folds = 2
[evaluation]
test_split = {test_split}
[analysis]
noise_seeds = 0
[[algorithms]]
name = "uknn"
type = "userknn"
grid = "{grid1}"
[[algorithms]]
name = "iknn"
type = "itemknn"
grid = "{grid2}"
"""


def _rows(n_users: int = 60, per_user: int = 25, n_items: int = 80, seed: int = 0) -> list[str]:
    """Ratings lines: every user rates ``per_user`` distinct items, ratings 1..5, rising times."""
    rng = np.random.default_rng(seed)
    out = []
    for u in range(n_users):
        for j, i in enumerate(rng.choice(n_items, per_user, replace=False)):
            out.append(f"{u + 1},{i + 1},{rng.integers(1, 6)},{1000 + 100 * u + j}")
    return out


def _setup(tmp_path: Path, data: str | None = None, *, name: str = "bad",
           grid1: str = "[params.k]\nvalues = [5, 10]\n",
           grid2: str = "[params.k]\nvalues = [5, 10, 20]\n",
           test_split: bool = False, extra: str = "") -> Path:
    """Write ratings (default: valid), two grids and an experiment; return the experiment."""
    src = tmp_path / "ratings.csv"
    src.write_text(data if data is not None else "\n".join([HEADER, *_rows()]) + "\n")
    (tmp_path / "g1.toml").write_text(grid1)
    (tmp_path / "g2.toml").write_text(grid2)
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(EXPERIMENT.format(name=name, source=src, grid1=tmp_path / "g1.toml",
                                     grid2=tmp_path / "g2.toml",
                                     test_split=str(test_split).lower()) + extra)
    return cfg


def _run(cfg: Path, tmp_path: Path, *more: str) -> int:
    return main(["run", str(cfg), "--results", str(tmp_path / "results"), "--reports",
                 str(tmp_path / "reports"), "--no-progress", *more])


def _one_line(capsys, *needles: str) -> str:
    """stderr is exactly one ``dptune: ...`` line containing every needle; returns it."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("dptune: ") and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _lines(*insert: str, at: int = 5) -> str:
    rows = [HEADER, *_rows()]
    return "\n".join(rows[:at] + list(insert) + rows[at:]) + "\n"


# --------------------------------------------------------------------------- the data file
@pytest.mark.parametrize(
    ("data", "needles"),
    [
        pytest.param(_lines("7,8,3"), ["line 6", "expected 4 fields"], id="malformed-line"),
        pytest.param(_lines().replace(",", ";"), ["line 1", "separated by ','"], id="wrong-separator"),
        pytest.param("\n".join(",".join(r.split(",")[:3]) for r in [HEADER, *_rows()]) + "\n",
                     ["timestamp", "missing column"], id="missing-column"),
        pytest.param(_lines("7,8,NaN,1234"), ["rating", "line 6"], id="nan-rating"),
        pytest.param(_lines("7,8,good,1234"), ["rating", "line 6", "'good'"], id="text-rating"),
        pytest.param(_lines("7,8,1e39,1234"), ["rating", "line 6", "beyond the range of a rating"],
                     id="rating-beyond-float32"),  # it became inf in the float32 ratings
        pytest.param(_lines("7,8,4,yesterday"), ["timestamp", "line 6", "'yesterday'"],
                     id="text-timestamp"),
        pytest.param(_lines("7,8,4,"), ["timestamp", "line 6", "missing"], id="empty-timestamp"),
        pytest.param("", ["file is empty"], id="empty-file"),
        pytest.param(HEADER + "\n", ["no ratings"], id="header-only"),
    ],
)
def test_bad_data_file(tmp_path, capsys, data, needles):
    cfg = _setup(tmp_path, data)
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, str(tmp_path / "ratings.csv"), *needles)
    assert not (tmp_path / "results").exists()  # checked before anything is written


def test_empty_validation_fold(tmp_path, capsys):
    """One rating reaches the relevance threshold: a fold has no user to evaluate, named
    under split.folds. When no rating reaches it, the threshold is named instead (the line
    used to blame the folds for it)."""
    rows = [",".join([*r.split(",")[:2], "2", r.split(",")[3]]) for r in _rows()]
    rows[0] = ",".join([*rows[0].split(",")[:2], "5", rows[0].split(",")[3]])
    cfg = _setup(tmp_path, "\n".join([HEADER, *rows]) + "\n")
    assert _run(cfg, tmp_path, "--min-fold-users", "1") == 2
    _one_line(capsys, str(cfg), "split.folds", "has no user with a relevant held-out item")
    rows[0] = ",".join([*rows[0].split(",")[:2], "2", rows[0].split(",")[3]])
    cfg = _setup(tmp_path, "\n".join([HEADER, *rows]) + "\n")
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, f"{cfg}: evaluation.relevance_threshold: 4 is above every rating of the "
              "data (the highest is 2), so no held-out item is relevant")
    assert not (tmp_path / "results").exists()


# --------------------------------------------------------------------------- grids and config
@pytest.mark.parametrize(
    ("which", "grid", "needles"),
    [
        pytest.param("grid2", "[params.kk]\nvalues = [5, 10]\n", ["g2.toml", "kk", "unknown hyperparameter"],
                     id="unknown-hyperparameter"),
        pytest.param("grid2", 'famly = "knn"\n[params.k]\nvalues = [5]\n', ["g2.toml", "famly"],
                     id="unknown-grid-key"),
        pytest.param("grid2", "[params.k]\nvalues = [5, 0]\n", ["g2.toml", "k", ">= 1"], id="bad-value"),
        pytest.param("grid2", "[params.k]\nvalues = []\n", ["g2.toml", "params.k.values"], id="empty-values"),
        pytest.param("grid1", "[params.k]\nvalues = [5, 10\n", ["g1.toml", "invalid TOML",
                     "Unclosed array (at line 2, column "], id="broken-toml"),
        # taken as whole numbers, and the store then wrote every k of the grid as a float
        pytest.param("grid2", "[params.k]\nvalues = [5, 1e300]\n",
                     ["g2.toml: k: must be an integer from 1 to 9,223,372,036,854,775,807 "
                      "(int64's largest), got 1e+300"], id="k-1e300"),
        pytest.param("grid2", "[params.k]\nvalues = [5, 100000000000000000000]\n",
                     ["g2.toml: k: must be an integer from 1 to 9,223,372,036,854,775,807 "
                      "(int64's largest), got 100000000000000000000"], id="k-10**20"),
    ],
)
def test_bad_grid_fails_before_anything_is_computed(tmp_path, capsys, which, grid, needles):
    """The second algorithm's grid is bad: the run stops before the first algorithm trains."""
    cfg = _setup(tmp_path, **{which: grid})
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, *needles)
    assert not list((tmp_path / "results").glob("per_user.parquet/*.parquet"))


@pytest.mark.parametrize(
    ("algorithm_type", "grid", "needles"),
    [
        pytest.param("cornac:EASE", '[params.lamb]\nvalues = [["abc"]]\n',
                     ["g2.toml", "lamb", "['abc']"], id="cornac-list"),
        pytest.param("cornac:EASE", '[params.lamb]\nvalues = [100.0, "abc"]\n',
                     ["g2.toml: lamb:", "'abc'"], id="cornac-string"),
        pytest.param("python:dptune.models.examples:PureSVD", '[params.factors]\nvalues = [4, "x"]\n',
                     ["g2.toml: factors:", "'x'"], id="python-string"),
    ],
)
def test_bad_model_value_fails_before_anything_is_written(tmp_path, capsys, algorithm_type,
                                                         grid, needles):
    """A wrong value for a cornac or Python model stops the run before anything is written, so
    nothing (no manifest, no fingerprint) stands in the way of the corrected rerun."""
    cfg = _setup(tmp_path, grid2=grid)
    cfg.write_text(cfg.read_text().replace('type = "itemknn"', f'type = "{algorithm_type}"'))
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, *needles)
    assert not (tmp_path / "results").exists()


MISSING_REG = ('[params.factors]\nvalues = [4, 8]\n[params.iterations]\nvalues = [1]\n'
               '[params.learning_rate]\nvalues = [0.05, 0.1]\n')


@pytest.mark.parametrize(("grid", "missing"), [
    pytest.param(MISSING_REG, "user_reg", id="both-regularisations"),
    pytest.param(MISSING_REG + '[derived]\nuser_reg = { from = "learning_rate", scale = 0.05 }\n',
                 "item_reg", id="item-regularisation"),
])
def test_a_missing_hyperparameter_says_how_to_give_it(tmp_path, capsys, grid, missing):
    """A BPR-MF grid without its regularisation: one line naming the grid file and the
    hyperparameter that says both ways to give it (a values list, or [derived] from the learning
    rate with the paper's scale), before anything is written; the suggested line runs."""
    cfg = _setup(tmp_path, grid2=grid)
    cfg.write_text(cfg.read_text().replace('type = "itemknn"', 'type = "bpr-mf"'))
    assert _run(cfg, tmp_path) == 2
    scale = {"user_reg": "0.05", "item_reg": "0.005"}[missing]
    suggestion = f'{missing} = {{ from = "learning_rate", scale = {scale} }}'
    line = _one_line(capsys, "g2.toml", f"{missing}: missing hyperparameter for 'bpr-mf'",
                     f"[params.{missing}] values = [...]", f"[derived] {suggestion}",
                     "docs/grids.md")
    assert not (tmp_path / "results").exists(), line
    # the suggested [derived] line, pasted into the grid, is a grid the model accepts
    fixed = grid + ("" if "[derived]" in grid else "[derived]\n") + suggestion + "\n"
    if missing == "user_reg":
        fixed += 'item_reg = { from = "learning_rate", scale = 0.005 }\n'
    (tmp_path / "fixed.toml").write_text(fixed)
    configs = load_grid(tmp_path / "fixed.toml").configs()
    assert get_family("bpr-mf").validate(configs)[0][missing] == pytest.approx(
        configs[0]["learning_rate"] * float(scale))


def test_a_fraction_for_an_integer_hyperparameter_is_refused_and_the_fix_runs(tmp_path, capsys):
    """``k = 10.5`` for cornac's BPR (an integer parameter: its default is ``10``) is refused
    before any work, with one line naming the grid file, the key and the value; nothing is
    written, so the corrected grid then runs into the same results folder."""
    cfg = _setup(tmp_path, grid2="[params.k]\nvalues = [4, 10.5]\n[params.max_iter]\nvalues = [2]\n")
    cfg.write_text(cfg.read_text().replace('type = "itemknn"', 'type = "cornac:BPR"'))
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, "g2.toml: k: must be an integer for cornac:BPR, got 10.5")
    assert not (tmp_path / "results").exists()
    (tmp_path / "g2.toml").write_text("[params.k]\nvalues = [4, 10]\n[params.max_iter]\nvalues = [2]\n")
    assert _run(cfg, tmp_path, "--no-analyze") == 0


def test_nothing_to_compare_is_refused_before_the_sweep(tmp_path, capsys):
    """Only one-configuration algorithms (cornac:MostPop without a grid, a kNN with one k): no
    pair of configurations exists, so there is no DP to measure; the run says so up front."""
    cfg = tmp_path / "pop.toml"
    (tmp_path / "one.toml").write_text("[params.k]\nvalues = [10]\n")
    cfg.write_text('name = "pop"\n[data]\nsource = "ml-latest-small"\n'
                   '[[algorithms]]\nname = "mostpop"\ntype = "cornac:MostPop"\n'
                   f'[[algorithms]]\nname = "knn"\ntype = "itemknn"\ngrid = "{tmp_path / "one.toml"}"\n')
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, str(cfg), "algorithms: nothing to compare", "mostpop: 1 configuration",
              "knn: 1 configuration")
    assert not (tmp_path / "results").exists()


def test_report_of_an_empty_dp_says_nothing_to_compare():
    from conftest import frames_result

    from dptune.errors import DptuneError
    from dptune.report import Report
    from dptune.report._inputs import CURVE_INPUT, DP_INPUT

    dp, curves = pd.DataFrame(columns=list(DP_INPUT)), pd.DataFrame(columns=list(CURVE_INPUT))
    with pytest.raises(DptuneError, match="nothing to compare"):
        Report.from_result(frames_result(dp, curves))


@pytest.mark.parametrize(
    ("extra", "replace", "field"),
    [
        pytest.param("", ("[split]\nfolds = 2", "[split]\nfodls = 2"), "split.fodls", id="section-key"),
        pytest.param("", ('type = "itemknn"', 'tpye = "itemknn"'), "algorithms[1].tpye", id="algorithm-key"),
        pytest.param("", ('type = "itemknn"', 'type = "itemkn"'), "algorithms[1].type", id="algorithm-type"),
        pytest.param("", ("[evaluation]", "[evalaution]"), "evalaution", id="section-name"),
        pytest.param("", ("folds = 2", 'folds = "two"'), "split.folds", id="wrong-type"),
        pytest.param("", ("noise_seeds = 0", "noise_seeds = 0\nprimary_cutoff = 7"),
                     "analysis.primary_cutoff", id="inconsistent"),
        pytest.param("[sweep]\njobs = 0\n", ("", ""), "sweep.jobs", id="jobs"),
    ],
)
def test_config_typos(tmp_path, capsys, extra, replace, field):
    cfg = _setup(tmp_path, extra=extra)
    cfg.write_text(cfg.read_text().replace(*replace, 1))
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, str(cfg), field)


def test_missing_experiment_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    _one_line(capsys, "nope.toml")


def test_legal_oddities_run_and_are_reported(tmp_path, capsys):
    """Input that is odd but legal runs through and is reported:

    - a duplicated (user, item): the latest rating is kept, the count is logged in the manifest;
    - a user with a single interaction: dropped by split.min_user_interactions, counted in the
      manifest, absent from the results;
    - a grid with one value: that algorithm has no pair to test (no DP rows, analyze does not
      crash), the other one has fewer pairs than asked for (3 configurations: 3 pairs, not 25).
    """
    rows = _rows()
    first = rows[0].split(",")
    later = f"{first[0]},{first[1]},5,999999"  # same (user, item) as the first row, later
    lonely = "500,1,5,1000"
    cfg = _setup(tmp_path, "\n".join([HEADER, *rows, later, lonely]) + "\n",
                 grid1="[params.k]\nvalues = [10]\n", test_split=True)
    assert _run(cfg, tmp_path) == 0
    res = tmp_path / "results"
    man = json.loads((res / "manifest.json").read_text())
    assert any("dropped 1 duplicated" in line for line in man["dataset"]["log"])
    assert man["dataset"]["ratings"] == len(rows) + 1  # the older copy of the duplicate is gone
    assert man["split"]["dropped_users"] == 1
    users = pd.read_csv(res / "users.csv")
    lonely_code = int(users.loc[users["user_id"] == 500, "user"].iloc[0])
    df = pd.read_parquet(res / "per_user.parquet", columns=["user"])
    assert lonely_code not in set(df["user"])

    dp = pd.read_csv(tmp_path / "reports" / "dp.csv")
    assert "uknn" not in set(dp["algorithm"])
    assert set(dp.loc[(dp["algorithm"] == "iknn") & (dp["scope"] == "all"), "n_pairs"]) == {3}
    assert (tmp_path / "reports" / "report.md").is_file()
    assert main(["analyze", str(res), "--reports", str(tmp_path / "again")]) == 0


# --------------------------------------------------------------------------- where results go
def test_unwritable_results_directory(tmp_path, capsys):
    cfg = _setup(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert main(["run", str(cfg), "--results", str(blocker / "results"), "--no-progress"]) == 2
    _one_line(capsys, str(blocker / "results"), "not writable")


def test_a_folder_whose_permissions_say_writable_but_is_not_is_refused_before_the_sweep(
        tmp_path, capsys, monkeypatch):
    """The permission bits say yes where a write still fails (/proc; an NFS share mapping root
    to nobody): the sweep ran, then the report's write failed with a traceback. The check now
    creates a file there (and removes it) before any work."""
    import tempfile

    from dptune.errors import DptuneError, check_writable_dir

    cfg = _setup(tmp_path)
    blocked = tmp_path / "share"
    blocked.mkdir()
    real = tempfile.mkstemp

    def refuse(*args, **kwargs):  # what the share does to a write, whatever its bits say
        if str(kwargs.get("dir", "")).startswith(str(blocked)):
            raise PermissionError(13, "Permission denied")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    results = tmp_path / "results"
    assert main(["run", str(cfg), "--results", str(results), "--reports",
                 str(blocked / "reports"), "--no-progress"]) == 2
    _one_line(capsys, str(blocked / "reports"), "not writable", "Permission denied")
    assert not results.exists() and list(blocked.iterdir()) == []
    before = sorted(tmp_path.iterdir())
    check_writable_dir(tmp_path / "fine", "--reports")  # a real folder passes, leaving nothing
    assert sorted(tmp_path.iterdir()) == before
    with pytest.raises(DptuneError, match="not writable"):
        check_writable_dir(blocked, "--reports")


@pytest.mark.parametrize("command", ["run", "worker"])
def test_unreachable_storage_is_one_line_before_any_work(tmp_path, capsys, command):
    """PostgreSQL on a closed port: one line (password masked), exit 2, and nothing written
    (no manifest, part, index entry or trial): the storage is opened before any work."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    cfg = _setup(tmp_path)
    url = f"postgresql+psycopg2://dptune:secret@127.0.0.1:{port}/nope"
    rc = main([command, str(cfg), "--results", str(tmp_path / "results"), "--storage", url,
               *(["--no-progress"] if command == "run" else [])])
    assert rc == 2
    line = _one_line(capsys, "--storage", f"127.0.0.1:{port}")
    assert "secret" not in line
    assert not [p for p in (tmp_path / "results").rglob("*") if not p.is_dir()]


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        pytest.param("not a url", ["--storage", "not a url"], id="garbage"),
        pytest.param("sqlite:////nonexistent-dir/x/optuna.db", ["--storage", "unable to open"], id="sqlite-dir"),
        pytest.param("/nonexistent-dir/x/sweep.journal", ["--storage", "does not exist"], id="journal-dir"),
    ],
)
def test_bad_storage_url(tmp_path, capsys, url, needles):
    cfg = _setup(tmp_path)
    assert main(["worker", str(cfg), "--results", str(tmp_path / "results"), "--storage", url]) == 2
    _one_line(capsys, *needles)


def test_bad_heartbeat_setting(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DPTUNE_HEARTBEAT_GRACE", "soon")
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, "DPTUNE_HEARTBEAT_GRACE")


def test_status_of_a_directory_that_is_not_a_store(tmp_path, capsys):
    assert main(["status", str(tmp_path)]) == 2
    _one_line(capsys, "manifest.json")


# --------------------------------------------------------------------------- nothing is lost
def test_failure_mid_sweep_keeps_finished_units(tmp_path, capsys, monkeypatch):
    """A unit that fails mid-sweep stops the run with one line; the parts already written stay,
    and the same command afterwards finishes the sweep without recomputing them."""
    import dptune.sweeper._local as local
    import dptune.sweeper._worker as worker

    cfg = _setup(tmp_path)
    real_compute, real_run = worker.compute_unit, local.run_unit
    calls = []

    def fail_third(task):
        calls.append(task)
        if len(calls) == 3:
            raise input_error("model", task.algorithm, "simulated failure while training")

    def failing_compute(exp, task):  # the sweep workers compute, their part writer writes
        fail_third(task)
        return real_compute(exp, task)

    def failing_run(exp, task, store):
        fail_third(task)
        return real_run(exp, task, store)

    monkeypatch.setattr(worker, "compute_unit", failing_compute)
    monkeypatch.setattr(local, "run_unit", failing_run)
    assert _run(cfg, tmp_path, "--no-analyze") == 2
    _one_line(capsys, "simulated failure")
    parts = tmp_path / "results" / "per_user.parquet"
    before = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}
    assert len(before) == 2

    monkeypatch.setattr(worker, "compute_unit", real_compute)
    monkeypatch.setattr(local, "run_unit", real_run)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    after = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}
    assert len(after) == 4  # 2 algorithms x 1 unit x 2 folds
    assert {n: after[n] for n in before} == before
    trials = pd.read_csv(tmp_path / "results" / "trials.csv")
    assert len(trials) == (2 + 3) * 2 and not trials.duplicated(["algorithm", "config_id", "fold"]).any()


# --------------------------------------------------------------------------- checked before any work


def _nothing_computed(tmp_path: Path) -> None:
    """No results directory was created (nothing read, trained or written)."""
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("flag", "value", "needles"),
    [
        pytest.param("--jobs", "0", ["--jobs", ">= 1"], id="jobs-0"),
        pytest.param("--jobs", "-3", ["--jobs", ">= 1"], id="jobs-negative"),
        pytest.param("--jobs", "two", ["--jobs", "'two'"], id="jobs-text"),
        pytest.param("--pairs", "0", ["--pairs", ">= 1"], id="pairs-0"),
        pytest.param("--value-pairs", "0", ["--value-pairs", ">= 1"], id="value-pairs-0"),
        pytest.param("--alpha", "1.5", ["--alpha", "between 0 and 1"], id="alpha"),
        pytest.param("--noise-seeds", "1", ["--noise-seeds", "at least 2"], id="noise-seeds-1"),
        pytest.param("--noise-configs", "0", ["--noise-configs", ">= 1"], id="noise-configs-0"),
        pytest.param("--bootstrap", "-1", ["--bootstrap", ">= 0"], id="bootstrap-negative"),
        pytest.param("--n-resamples", "0", ["--n-resamples", ">= 1"], id="n-resamples-0"),
        pytest.param("--test", "z", ["--test", "invalid choice"], id="test-choice"),
        pytest.param("--correction", "bonf", ["--correction", "invalid choice"], id="correction-choice"),
        pytest.param("--seed", "-1", ["--seed", ">= 0"], id="seed-negative"),
        # float() of the 401-digit number overflowed: a traceback
        pytest.param("--budget", "1" + "0" * 400, ["--budget", "more than any grid holds"],
                     id="budget-beyond-a-float"),
    ],
)
def test_bad_run_flag_is_one_line_before_any_work(tmp_path, capsys, flag, value, needles):
    cfg = _setup(tmp_path)
    assert main(["run", str(cfg), "--results", str(tmp_path / "results"), "--no-progress",
                     flag, value]) == 2
    _one_line(capsys, *needles)
    _nothing_computed(tmp_path)


@pytest.mark.parametrize(("argv", "needles"), [
    pytest.param(["run", "{cfg}", "--results", "{tmp}/a", "--results", "{tmp}/results"],
                 ["--results: given twice", "--results {tmp}/a and --results {tmp}/results"],
                 id="run-results"),
    pytest.param(["run", "{cfg}", "--results", "{tmp}/results", "--jobs", "1", "--jobs", "2"],
                 ["--jobs: given twice (--jobs 1 and --jobs 2)"], id="run-jobs"),
    pytest.param(["run", "{cfg}", "--results", "{tmp}/results", "--importance",
                  "--no-importance"], ["given twice (--importance and --no-importance)"],
                 id="run-importance-both-ways"),
    pytest.param(["run", "{cfg}", "--results", "{tmp}/results", "--budget", "2h", "--budget",
                  "3"], ["--budget: given twice (--budget 2h and --budget 3)"], id="run-budget"),
    pytest.param(["evaluate", "--run", "{tmp}/r", "--qrels", "{tmp}/q", "--train", "{tmp}/t",
                  "--out", "{tmp}/results/o.csv", "--cutoffs", "5", "--cutoffs", "1,10"],
                 ["evaluate: argument --cutoffs: given twice (--cutoffs 5 and --cutoffs 1,10)"],
                 id="evaluate-cutoffs"),
    pytest.param(["data", "info", "{tmp}/ratings.csv", "--header", "--no-header"],
                 ["data info: argument --no-header: given twice"], id="data-info-header"),
])
def test_a_flag_given_twice_with_two_values_is_refused(tmp_path, capsys, argv, needles):
    """argparse kept the last value silently: ``run --results a --results b`` swept into b,
    ``--importance --no-importance`` turned it off, ``evaluate --cutoffs 5 --cutoffs 1,10``
    scored at 1 and 10 only. One line naming the flag and both values, nothing written."""
    cfg = _setup(tmp_path)
    fill = {"{cfg}": str(cfg), "{tmp}": str(tmp_path)}

    def filled(text: str) -> str:
        for key, value in fill.items():
            text = text.replace(key, value)
        return text

    assert main([filled(a) for a in argv]) == 2
    _one_line(capsys, *map(filled, needles))
    _nothing_computed(tmp_path)
    assert not (tmp_path / "a").exists()


def test_the_same_value_twice_is_kept(tmp_path, capsys):
    """A flag repeated with its value (a script adding ``--no-progress`` again) is harmless: the
    run goes on to the experiment, here a missing one."""
    assert main(["run", str(tmp_path / "nope.toml"), "--no-progress", "--no-progress",
                 "--jobs", "2", "--jobs", "2"]) == 2
    _one_line(capsys, "nope.toml: cannot read experiment file")


@pytest.mark.parametrize(("flag", "value"), [("--pairs", "5"), ("--bootstrap", "0"),
                                             ("--no-importance", None)])
def test_an_analysis_flag_with_no_analyze_is_refused(tmp_path, capsys, flag, value):
    """``run --no-analyze --pairs 5`` skipped the analysis that --pairs sets, silently; the
    flags the sweep itself reads (the noise floor's, --min-fold-users) still go with it."""
    cfg = _setup(tmp_path)
    argv = ["run", str(cfg), "--results", str(tmp_path / "results"), "--no-analyze", flag]
    assert main(argv + ([value] if value else [])) == 2
    shown = flag.replace("--no-", "--")
    _one_line(capsys, f"dptune: {shown}: not with --no-analyze")
    _nothing_computed(tmp_path)


def test_jobs_0_is_refused_by_the_api_too(tmp_path):
    from dptune.config import load_experiment
    from dptune.errors import DptuneError
    from dptune.sweeper import run_experiment

    with pytest.raises(DptuneError, match="jobs"):
        run_experiment(load_experiment(_setup(tmp_path)), tmp_path / "results", jobs=0)
    _nothing_computed(tmp_path)


@pytest.mark.parametrize("flag", ["--reports", "--results"])
def test_output_directory_under_a_file_fails_before_the_sweep(tmp_path, capsys, flag):
    """``--reports`` under a file used to fail with a traceback after the whole sweep."""
    cfg = _setup(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    where = {"--results": str(tmp_path / "results"), "--reports": str(tmp_path / "reports")}
    where[flag] = str(blocker / "sub")
    assert main(["run", str(cfg), "--results", where["--results"], "--reports", where["--reports"],
                 "--no-progress"]) == 2
    _one_line(capsys, flag, str(blocker / "sub"), "a file, not a directory")
    _nothing_computed(tmp_path)


def test_reports_that_is_a_file(tmp_path, capsys):
    cfg = _setup(tmp_path)
    (tmp_path / "reports").write_text("a file")
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, "--reports", "not writable")
    _nothing_computed(tmp_path)


def test_bad_storage_url_on_run_fails_before_any_unit(tmp_path, capsys):
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--storage", "not a url") == 2
    _one_line(capsys, "--storage", "not a url")
    assert not list((tmp_path / "results").glob("per_user.parquet/*.parquet"))


def test_missing_data_file_fails_before_any_work(tmp_path, capsys):
    cfg = _setup(tmp_path)
    (tmp_path / "ratings.csv").unlink()
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, "ratings.csv")
    _nothing_computed(tmp_path)


def test_a_relative_data_file_is_read_next_to_the_experiment(tmp_path, capsys, monkeypatch):
    """``source = "ratings.csv"`` is the file beside the experiment, from any working directory;
    the manifest (and so the report) names it as written, not by its absolute path."""
    cfg = _setup(tmp_path)
    cfg.write_text(cfg.read_text().replace(f'source = "{tmp_path / "ratings.csv"}"',
                                           'source = "ratings.csv"'))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    man = json.loads((tmp_path / "results" / "manifest.json").read_text())
    assert man["dataset"]["source"] == man["config"]["data"]["source"] == "ratings.csv"


def test_a_data_file_relative_to_the_working_directory_gets_a_hint(tmp_path, capsys, monkeypatch):
    """An experiment written when data paths started at the working directory: one line naming
    the experiment file, ``data.source``, the path tried and the path to write; nothing written."""
    cfg = _setup(tmp_path)
    (tmp_path / "exp").mkdir()
    moved = tmp_path / "exp" / cfg.name
    moved.write_text(cfg.read_text().replace(f'source = "{tmp_path / "ratings.csv"}"',
                                             'source = "ratings.csv"'))
    monkeypatch.chdir(tmp_path)
    assert _run(moved, tmp_path) == 2
    _one_line(capsys, f"{moved}: data.source: 'ratings.csv' is neither a known data set",
              str(tmp_path / "exp" / "ratings.csv"), 'write source = "../ratings.csv"')
    assert not (tmp_path / "results").exists()


def test_analyze_reports_under_a_file(tmp_path, capsys):
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    capsys.readouterr()
    (tmp_path / "a-file").write_text("x")
    assert main(["analyze", str(tmp_path / "results"), "--reports", str(tmp_path / "a-file" / "r")]) == 2
    _one_line(capsys, "--reports", "a file, not a directory")


def test_analyze_of_a_directory_that_is_not_a_store(tmp_path, capsys):
    assert main(["analyze", str(tmp_path), "--reports", str(tmp_path / "r")]) == 2
    _one_line(capsys, "manifest.json", "not a dptune results directory")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["analyze", "status"])
def test_a_file_given_as_the_results_directory_is_named_as_what_it_is(tmp_path, capsys, command):
    """The experiment's file given where its results directory goes (a newcomer's first
    guess) says so, instead of naming a manifest.json beneath a file."""
    cfg = tmp_path / "exp.toml"
    cfg.write_text('name = "x"\n')
    assert main([command, str(cfg)]) == 2
    line = _one_line(capsys, "exp.toml: an experiment file: give the results directory")
    assert "manifest.json" not in line
    (tmp_path / "table.csv").write_text("a\n")
    assert main([command, str(tmp_path / "table.csv")]) == 2
    _one_line(capsys, "table.csv: a file, not a results directory")


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        pytest.param([], ["COMMAND", "required"], id="no-command"),
        pytest.param(["fly"], ["COMMAND", "invalid choice"], id="unknown-command"),
        pytest.param(["data"], ["ACTION", "required"], id="data-no-action"),
        pytest.param(["data", "info", "x", "--format", "xls"], ["--format", "invalid choice", "ml-dat"],
                     id="data-format"),
        pytest.param(["analyze"], ["RESULTS", "missing"], id="analyze-no-results"),
        pytest.param(["status"], ["RESULTS", "missing"], id="status-no-results"),
        pytest.param(["run"], ["CONFIG", "required"], id="run-no-config"),
        pytest.param(["evaluate", "--run", "r", "--qrels", "q", "--train", "t", "--out", "o",
                      "--cutoffs", "1,x"], ["--cutoffs", "comma-separated"], id="evaluate-cutoffs"),
        pytest.param(["evaluate", "--run", "r", "--qrels", "q", "--train", "t", "--out", "o",
                      "--cutoffs", "1,,5"], ["--cutoffs", "comma-separated"],
                     id="evaluate-cutoffs-empty-item"),
        pytest.param(["subgrid", "r", "--out", "o", "--radius", "-1"], ["--radius", ">= 1"], id="subgrid-radius"),
        pytest.param(["dp", "--runs", "r", "--qrels", "q", "--train", "t", "--pairs", "0"],
                     ["--pairs", ">= 1"], id="dp-pairs"),
        pytest.param(["seeds", "c.toml", "--jobs", "0"], ["--jobs", ">= 1"], id="seeds-jobs"),
        pytest.param(["slices", "r", "--base", "1"], ["--base", ">= 2"], id="slices-base"),
        # a base beyond int64 reached numpy's log after the store was read: a traceback
        pytest.param(["slices", "r", "--reports", "x", "--base", str(10**30)],
                     ["--base", "from 2 to 1,000,000"], id="slices-base-beyond-int64"),
        # an empty path fell back to the default folder and wrote there (exit 0)
        pytest.param(["run", "c.toml", "--results", ""], ["--results", "must not be empty"],
                     id="run-empty-results"),
        pytest.param(["analyze", "r", "--reports", " "], ["--reports", "must not be empty"],
                     id="analyze-blank-reports"),
        pytest.param(["analyze", ""], ["RESULTS", "must not be empty"], id="analyze-empty-results"),
        pytest.param(["seeds", "c.toml", "--results", ""], ["--results", "must not be empty"],
                     id="seeds-empty-results"),
        # seeds --grid '' means "skip the grid part": the empty value passes the parser, and
        # the missing c.toml is what is refused
        pytest.param(["seeds", "c.toml", "--grid", ""], ["c.toml"], id="seeds-empty-grid-skips"),
    ],
)
def test_command_line_errors_name_the_argument_not_an_internal_name(capsys, argv, needles):
    assert main(argv) == 2
    line = _one_line(capsys, *needles)
    for internal in ("cmd", "data_cmd", "results_pos", "an_"):
        assert f" {internal}" not in line and f"{internal}:" not in line, line


def test_evaluate_out_under_a_file(tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    assert main(["evaluate", "--run", str(tmp_path / "r"), "--qrels", str(tmp_path / "q"),
                 "--train", str(tmp_path / "t"), "--out", str(tmp_path / "a-file" / "o.csv")]) == 2
    _one_line(capsys, "--out", "a file, not a directory")


def test_evaluate_out_named_as_another_format_than_csv(tmp_path, capsys):
    """evaluate writes CSV; a .parquet name would give a file dp --per-user cannot read."""
    assert main(["evaluate", "--run", str(tmp_path / "r"), "--qrels", str(tmp_path / "q"),
                 "--train", str(tmp_path / "t"), "--out", str(tmp_path / "o.parquet")]) == 2
    _one_line(capsys, "--out", "give the file a .csv name")
    assert not (tmp_path / "o.parquet").exists()


def test_dp_missing_inputs(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    assert main(["dp", "--runs", str(tmp_path / "runs"), "--qrels", str(tmp_path / "q"),
                 "--train", str(tmp_path / "t"), "--reports", str(tmp_path / "rep")]) == 2
    _one_line(capsys, "--qrels", "does not exist")
    assert not (tmp_path / "rep").exists()


def test_subgrid_on_an_empty_results_directory(tmp_path, capsys):
    """An empty store says it has no results (it used to blame --metric/--cutoff)."""
    cfg = _setup(tmp_path)
    from dptune.config import load_experiment
    from dptune.sweeper import init_results

    init_results(load_experiment(cfg), tmp_path / "results")
    assert main(["subgrid", str(tmp_path / "results"), "--out", str(tmp_path / "s.toml")]) == 2
    line = _one_line(capsys, "holds no results yet")
    assert "--metric" not in line and "--cutoff" not in line
    assert not (tmp_path / "s.toml").exists()


def test_fingerprint_mismatch_names_the_settings_that_differ(tmp_path, capsys):
    cfg = _setup(tmp_path)
    from dptune.config import load_experiment
    from dptune.sweeper import init_results

    init_results(load_experiment(cfg), tmp_path / "results")
    # a finished unit (a set-up without any is simply replaced)
    (tmp_path / "results" / "per_user.parquet" / "iknn__0__u00000.parquet").write_bytes(b"")
    cfg.write_text(cfg.read_text().replace("folds = 2", "folds = 3"))
    (tmp_path / "g2.toml").write_text("[params.k]\nvalues = [5, 10, 40]\n")
    assert _run(cfg, tmp_path) == 2
    _one_line(capsys, "different experiment set-up", "split.folds: 2 -> 3",
              "algorithms.iknn: grid values changed")


# --------------------------------------------------------------------------------------------- flags
# that mean nothing here, storages and files that would be wrong: refused before any work
def _per_user_table(tmp_path: Path) -> Path:
    """A valid per-user table of three systems (the input of ``dptune dp --per-user``)."""
    rng = np.random.default_rng(0)
    rows = [(s, u, "ndcg", 10, rng.random()) for s in ("a", "b", "c") for u in range(20)]
    path = tmp_path / "per_user.csv"
    pd.DataFrame(rows, columns=["system", "user", "metric", "cutoff", "value"]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("flag", "value"), [("--cutoffs", "5"), ("--threshold", "2"),
                                             ("--order", "rank"),
                                             ("--novelty", "relevance-unaware")])
def test_dp_per_user_refuses_the_options_of_runs(tmp_path, capsys, flag, value):
    """``--cutoffs``, ``--threshold``, ``--order`` and ``--novelty`` say how runs are scored;
    with ``--per-user`` (already scored) they were silently ignored, while ``--qrels`` there is
    refused: they are refused the same way, one line naming the flag, nothing written."""
    table = _per_user_table(tmp_path)
    assert main(["dp", "--per-user", str(table), "--reports", str(tmp_path / "rep"),
                     "--no-progress", flag, value]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: {flag}: only with --runs, not with --per-user (the "
                           "per-user table holds its metric values already)"), line
    assert not (tmp_path / "rep").exists()


def test_dp_per_user_refuses_a_value_outside_its_metrics_range(tmp_path, capsys):
    """An nDCG of -0.4 (a difference of two systems, a z-score written under the metric's
    name) was analysed and reported as nDCG's DP: refused before any work, one line naming the
    file's line, the metric and its range, nothing written."""
    table = _per_user_table(tmp_path)
    df = pd.read_csv(table)
    df.loc[7, "value"] = -0.4
    df.to_csv(table, index=False)
    assert main(["dp", "--per-user", str(table), "--reports", str(tmp_path / "rep"),
                 "--no-progress"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: {table}: value: line 9 has -0.4 for ndcg, whose per-user "
                           "values lie in [0, 1]"), line
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("command", ["run", "worker", "status"])
def test_an_empty_storage_is_refused(tmp_path, capsys, command):
    """``--storage ''`` fell back to the default SQLite file of the results directory (a worker
    meant for a shared sweep swept alone): refused while parsing, nothing written."""
    cfg = _setup(tmp_path)
    argv = {"run": ["run", str(cfg), "--no-progress", "--results", str(tmp_path / "results")],
            "worker": ["worker", str(cfg), "--results", str(tmp_path / "results")],
            "status": ["status", str(tmp_path / "results"), "--config", str(cfg)]}[command]
    assert main([*argv, "--storage", ""]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: {command}: argument --storage: must not be empty: give an "
                           "optuna storage URL or a *.journal file"), line
    _nothing_computed(tmp_path)


@pytest.mark.parametrize(("command", "url", "start"), [
    pytest.param("run", "nonsense", "dptune: --storage: 'nonsense' is neither an optuna "
                 "storage URL", id="run-garbage"),
    pytest.param("worker", "sqlite:////nonexistent-dir/x/optuna.db",
                 "dptune: --storage: cannot open optuna storage 'sqlite:////nonexistent-dir/x/"
                 "optuna.db'", id="worker-sqlite-dir"),
])
def test_a_refused_storage_leaves_no_results_directory(tmp_path, capsys, command, url, start):
    """A storage that cannot be opened is refused after the results directory was created:
    the empty ``per_user.parquet/`` it made was left behind; what the command created is
    removed again, down to the folders above it that it made."""
    cfg = _setup(tmp_path)
    results = tmp_path / "new" / "results"
    assert main([command, str(cfg), "--results", str(results), "--storage", url,
                 *(["--no-progress"] if command == "run" else [])]) == 2
    assert _one_line(capsys).startswith(start)
    assert not (tmp_path / "new").exists()


#: A storage URL of the right form that cannot be opened (its folder does not exist).
UNREACHABLE = "sqlite:////nonexistent-dir/x/optuna.db"


def test_a_refused_storage_keeps_an_existing_results_directory(tmp_path, capsys):
    """Only what the refused command created goes: a results directory that was there stays
    (a folder holding files of its own is refused before the storage is even opened, with
    everything in it)."""
    cfg = _setup(tmp_path)
    (tmp_path / "results").mkdir()
    assert main(["worker", str(cfg), "--results", str(tmp_path / "results"), "--storage",
                 UNREACHABLE]) == 2
    _one_line(capsys, "--storage")
    assert (tmp_path / "results").is_dir() and list((tmp_path / "results").iterdir()) == []
    (tmp_path / "results" / "notes.txt").write_text("mine")
    assert main(["worker", str(cfg), "--results", str(tmp_path / "results"), "--storage",
                 UNREACHABLE]) == 2
    _one_line(capsys, "results: holds files (notes.txt) but no manifest.json")
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["notes.txt"]


def test_status_refuses_a_config_of_another_setup(tmp_path, capsys):
    """``status RESULTS --config OTHER`` with another set-up (here split.method) reported on
    the wrong experiment's grid and folds; it is one line naming ``--config`` and the settings
    that differ, as ``dptune run`` refuses such a results directory. The same set-up passes."""
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    capsys.readouterr()
    other = tmp_path / "other.toml"
    other.write_text(cfg.read_text().replace("[split]\n", '[split]\nmethod = "random"\n'))
    assert main(["status", str(tmp_path / "results"), "--config", str(other)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: --config: {other} is a different experiment set-up from the "
                           f"results in {tmp_path / 'results'} (split.method: 'temporal' -> "
                           "'random'); give the experiment these results were made with"), line
    assert main(["status", str(tmp_path / "results"), "--config", str(cfg)]) == 0
    assert "uknn" in capsys.readouterr().out


def test_status_reads_results_swept_with_a_device_override_with_their_config(tmp_path, capsys):
    """``dptune run CONFIG --device D`` records D; status has no ``--device`` and reads the
    results with the same CONFIG on the recorded device (it refused them as another set-up)."""
    cfg = _setup(tmp_path)
    on_cuda = tmp_path / "cuda.toml"
    on_cuda.write_text(cfg.read_text().replace("[split]\n", '[sweep]\ndevice = "cuda"\n\n[split]\n'))
    assert _run(on_cuda, tmp_path, "--no-analyze", "--device", "cpu") == 0
    capsys.readouterr()
    assert main(["status", str(tmp_path / "results"), "--config", str(on_cuda)]) == 0
    out = capsys.readouterr().out
    assert "uknn" in out and "one cuda device" not in out, out


def test_subgrid_out_that_is_a_directory_or_the_grid_is_refused(tmp_path, capsys):
    """``subgrid --out DIR`` ended in a traceback after the work, and ``--out`` equal to the
    ``--grid`` it reads overwrote that grid: both are one line naming ``--out``."""
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    capsys.readouterr()
    (tmp_path / "adir").mkdir()
    assert main(["subgrid", str(tmp_path / "results"), "--algorithm", "uknn", "--out",
                 str(tmp_path / "adir")]) == 2
    assert _one_line(capsys).startswith(f"dptune: --out: {tmp_path / 'adir'} is a directory; "
                                        "give the file to write")
    grid = (tmp_path / "g1.toml").read_text()
    assert main(["subgrid", str(tmp_path / "results"), "--algorithm", "uknn", "--grid",
                 str(tmp_path / "g1.toml"), "--out", str(tmp_path / "g1.toml")]) == 2
    assert _one_line(capsys).startswith(f"dptune: --out: {tmp_path / 'g1.toml'} is the --grid "
                                        "file this command reads; give another file to write")
    assert (tmp_path / "g1.toml").read_text() == grid and not any((tmp_path / "adir").iterdir())


def test_subgrid_out_that_is_the_data_file_is_refused(tmp_path, capsys):
    """``subgrid --out`` the experiment's ratings file wrote a grid over the data (the grid and
    experiment files were protected, the data file not)."""
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    capsys.readouterr()
    data = (tmp_path / "ratings.csv").read_bytes()
    assert main(["subgrid", str(tmp_path / "results"), "--algorithm", "uknn", "--out",
                 str(tmp_path / "ratings.csv")]) == 2
    _one_line(capsys, "--out", "is the data file the sweep in")
    assert (tmp_path / "ratings.csv").read_bytes() == data
    # any other file not named .toml: a grid file is TOML (a .csv got TOML, exit 0)
    assert main(["subgrid", str(tmp_path / "results"), "--algorithm", "uknn", "--out",
                 str(tmp_path / "sub.csv")]) == 2
    _one_line(capsys, "--out", "sub.csv is not named .toml")
    assert not (tmp_path / "sub.csv").exists()


def test_an_input_file_in_the_reports_folder_is_refused_before_it_is_replaced(tmp_path,
                                                                              capsys):
    """A per-user table named dp.csv in the --reports folder was replaced by the report's
    dp.csv (exit 0, the data lost); qrels named pairs.csv and a ratings file named dp.csv the
    same. Any input file in the report folder is refused before any work: which names the
    report writes is known only after the analysis."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "dp.csv").write_text("algorithm,config_id,fold,user,metric,value\n")
    assert main(["dp", "--per-user", str(out / "dp.csv"), "--reports", str(out)]) == 2
    _one_line(capsys, f"--reports: {out} holds --per-user {out / 'dp.csv'}, which the report "
                      "could replace")
    cfg = _setup(tmp_path)
    (out / "ratings.csv").write_bytes((tmp_path / "ratings.csv").read_bytes())
    cfg.write_text(cfg.read_text().replace(str(tmp_path / "ratings.csv"), str(out / "ratings.csv")))
    assert main(["run", str(cfg), "--results", str(tmp_path / "results"), "--reports", str(out),
                 "--no-progress"]) == 2
    _one_line(capsys, "holds data.source")
    assert not (tmp_path / "results").exists()
    assert sorted(p.name for p in out.iterdir()) == ["dp.csv", "ratings.csv"]


@pytest.mark.parametrize("where", ["per_user.parquet", ".", "sub/reports"])
def test_reports_inside_a_results_directory_are_refused_and_the_store_is_untouched(
        tiny_swept, tmp_path, capsys, where):
    """A report written into a store would replace its files or pass for its parts (a
    pvalues.parquet among the parts): ``--reports`` anywhere inside a results directory is one
    line naming the flag, for analyze, slices and run, and the store is byte for byte as it
    was."""
    import shutil

    from conftest import tree_digest

    root = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", root)
    before = tree_digest(root)
    target = root / where
    for argv in (["analyze", str(root), "--reports", str(target), "--no-progress"],
                 ["slices", str(root), "--reports", str(target)],
                 ["run", str(tiny_swept / "exp" / "tiny.toml"), "--results", str(root),
                  "--reports", str(target), "--no-progress"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        where_text = ("is a results directory" if where == "." else
                      f"lies inside the results directory {root.resolve()}")
        assert err.startswith(f"dptune: --reports: {target} {where_text}"), err
        assert "\n" not in err
        assert tree_digest(root) == before, argv


def test_reports_that_would_replace_the_working_directory_or_an_input_are_refused(
        tmp_path, capsys, monkeypatch):
    """--reports . published the report by renaming a new folder over the shell's
    working directory; dp --runs D --reports D wrote the report among the runs, which the next
    dp --runs D then read as runs; data synth --out wrote into a results directory. Each is
    one line before any work, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "q").write_text("1 0 a 5\n")
    assert main(["dp", "--per-user", "q", "--reports", "."]) == 2
    _one_line(capsys, "--reports", "is the working directory or holds it")
    assert main(["dp", "--runs", "runs", "--qrels", "q", "--train", "q",
                 "--reports", "runs/report"]) == 2
    _one_line(capsys, "--reports", "is inside --runs runs")
    store = tmp_path / "results"
    store.mkdir()
    (store / "manifest.json").write_text('{"experiment": "x", "algorithms": []}')
    assert main(["data", "synth", "--out", str(store / "x.csv"), "--users", "50", "--items",
                 "50", "--ratings", "500"]) == 2
    _one_line(capsys, "--out", "lies inside the results directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q", "results", "runs"]
    assert list((tmp_path / "runs").iterdir()) == [] and list(store.iterdir()) == [
        store / "manifest.json"]


@pytest.mark.parametrize(("url", "words"), [
    ("foo://x", "'foo://x': unknown database 'foo' (sqlite, postgresql, mysql, ...; or a "
     "*.journal file)"),
    ("postgres://u@h/db", "'postgres://u@h/db': unknown database 'postgres' (did you mean "
     "'postgresql'?)"),
    ("postgresql+nodriver://u@h/db", "'postgresql+nodriver://u@h/db': SQLAlchemy has no driver "
     "'nodriver' for postgresql"),
    ("not a url", "'not a url' is neither an optuna storage URL"),
])
def test_status_refuses_a_storage_url_no_server_could_answer(tmp_path, capsys, url, words):
    """``status RESULTS --storage foo://x`` on results with parts printed the storage problem
    as a status line and exited 0 (a reader reports from the parts when the storage is down).
    A URL SQLAlchemy cannot read, or whose database it does not know, is told apart from an
    unreachable server without connecting: one line, exit code 2."""
    cfg = _setup(tmp_path)
    assert _run(cfg, tmp_path, "--no-analyze") == 0
    capsys.readouterr()
    assert main(["status", str(tmp_path / "results"), "--storage", url]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: --storage: {words}"), line


@pytest.mark.parametrize(("url", "words"), [
    ("foo://x", "'foo://x': unknown database 'foo'"),
    ("sqlite:////nonexistent-dir/x/optuna.db", "cannot open optuna storage"),
])
def test_a_bad_storage_of_the_experiment_file_names_its_field(tmp_path, capsys, url, words):
    """A ``[sweep] storage`` of the experiment file that cannot be used was reported as
    ``--storage``, a flag the command was not given; the line names the file and
    ``sweep.storage``, and nothing is written."""
    cfg = _setup(tmp_path)
    cfg.write_text(cfg.read_text().replace("[split]\n", f'[sweep]\nstorage = "{url}"\n\n[split]\n'))
    assert main(["run", str(cfg), "--no-progress", "--results", str(tmp_path / "results")]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dptune: {cfg}: sweep.storage: "), line
    assert words in line, line
    assert not (tmp_path / "results").exists()
