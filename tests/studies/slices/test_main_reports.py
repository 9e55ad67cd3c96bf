"""The slice study against the main analysis it stands beside: a store that holds a subset of
its grid's units (a budgeted sweep), whose pairs the main analysis weighs, and main reports
whose files are damaged."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.cli import main as _main
from dptune.studies import run_slices_study

#: A 3 x 2 x 3 BPR-MF grid (9 units of 2 iterations).
BPR = """family = "bpr-mf"
[params.factors]
values = [4, 8, 16]
[params.iterations]
values = [1, 2]
[params.learning_rate]
values = [0.05, 0.1, 0.2]
[derived]
user_reg = { from = "learning_rate", scale = 0.05 }
item_reg = { from = "learning_rate", scale = 0.005 }
"""

#: The experiment (``{grid}``: the BPR-MF grid): 2 folds, no test split, no noise floor, a
#: budget of 3 of the 9 units.
EXPERIMENT = """
name = "tiny-budget"
seed = 7
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
test_split = false
[analysis]
pairs = 10
bootstrap = 0
noise_seeds = 0
[sweep]
budget = 3
jobs = 1
[[algorithms]]
name = "bpr"
type = "bpr-mf"
grid = "{grid}"
"""


@pytest.fixture(scope="module")
def budget_swept(tmp_path_factory) -> Path:
    """:data:`EXPERIMENT` swept to its budget (3 of 9 units) and analysed: ``tiny.toml``,
    ``results/`` and ``reports/`` in the returned directory."""
    d = tmp_path_factory.mktemp("budget")
    (d / "bpr.toml").write_text(BPR)
    (d / "tiny.toml").write_text(EXPERIMENT.format(grid=d / "bpr.toml"))
    assert _main(["run", str(d / "tiny.toml"), "--results", str(d / "results"), "--reports",
                  str(d / "reports"), "--no-progress"]) == 0
    return d


def _all_users(path: Path) -> pd.DataFrame:
    d = pd.read_csv(path / "slices_dp.csv")
    return d[d["slice_kind"] == "all"].set_index(["metric", "cutoff"]).sort_index()


@pytest.mark.parametrize("main_reports", [False, True])
def test_the_slice_of_every_user_is_the_main_dp_of_a_budgeted_sweep(budget_swept, tmp_path,
                                                                     main_reports) -> None:
    """The store holds 3 of its grid's 9 units: the main analysis tests pairs of those units'
    configurations, weighted to stand for the full grid's. The slices sampled among every
    configuration of the grid (refused: "no results for config_id") and, given the main
    reports' pairs, left their weights out (another DP than the main report's)."""
    d = budget_swept
    weights = pd.read_csv(d / "reports" / "pairs.csv")
    assert not np.allclose(weights.loc[weights["scope"] == "all", "weight"], 1.0)
    run_slices_study(d / "results", tmp_path / "out",
                     d / "reports" if main_reports else None)
    got = _all_users(tmp_path / "out")
    main = pd.read_csv(d / "reports" / "dp.csv")
    main = main[main["scope"] == "all"].set_index(["metric", "cutoff"]).sort_index()
    for col in ("dp_per_25", "dp_sum", "sakai", "n_pairs"):
        assert np.allclose(got[col].to_numpy(float), main.loc[got.index, col].to_numpy(float),
                           rtol=1e-12, atol=0), col


def test_main_reports_weighing_the_pairs_otherwise_are_refused(budget_swept, tmp_path,
                                                              capsys) -> None:
    """Pairs weighed otherwise than the units the store holds now (reports of the store
    before it had units more) would give the slice of every user another DP than theirs."""
    d = budget_swept
    reports = tmp_path / "reports"
    shutil.copytree(d / "reports", reports)
    pairs = pd.read_csv(reports / "pairs.csv")
    pairs.loc[pairs["scope"] == "all", "weight"] = 1.0
    pairs.to_csv(reports / "pairs.csv", index=False)
    code = _main(["slices", str(d / "results"), "--reports", str(tmp_path / "out"),
                  "--main-reports", str(reports), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--main-reports" in err and "weighs bpr's pairs otherwise" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, text, says", [
    ("pairs.csv", "", "pairs.csv: cannot read a pairs.csv of the main analysis"),
    ("pairs.csv", "algorithm,scope,pair_index,config_a,config_b\nbpr,all,0,x,1\n",
     "pairs.csv: config_a: must hold integers >= 0; line 2 has 'x'"),
    ("pairs.csv", "algorithm,scope,pair_index,config_a,config_b\nbpr,all,0,,1\n",
     "pairs.csv: config_a: must hold integers >= 0; line 2 has nan"),
    ("best_configs.csv", "", "best_configs.csv: cannot read a best_configs.csv"),
    ("best_configs.csv", "algorithm,metric,cutoff\nbpr,ndcg,10\n",
     "best_configs.csv: missing columns ['config_id', 'params', 'validation_mean']"),
    ("best_configs.csv", "algorithm,metric,cutoff,config_id,params,validation_mean\n"
                         "bpr,ndcg,10,one,k=1,0.5\n",
     "best_configs.csv: config_id: must hold integers >= 0; line 2 has 'one'"),
])
def test_damaged_main_reports_are_one_line(budget_swept, tmp_path, capsys, name, text,
                                           says) -> None:
    """A main reports' file that is empty, lacks columns or holds an id that is not an integer
    was a pandas traceback (EmptyDataError, ValueError, AttributeError); it is one line naming
    the file (and the column), exit 2, nothing written."""
    d = budget_swept
    reports = tmp_path / "reports"
    shutil.copytree(d / "reports", reports)
    (reports / name).write_text(text)
    code = _main(["slices", str(d / "results"), "--reports", str(tmp_path / "out"),
                  "--main-reports", str(reports), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert says in err, err
    assert not (tmp_path / "out").exists()
