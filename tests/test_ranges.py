"""Values that must never reach the work: every number has its valid range checked before
anything is computed (one line naming the flag or field, exit code 2), a request that cannot
fit in memory is refused from its estimate, messages show numbers as numbers, and a model that
scores items NaN is named with its configuration and fold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import write_synthetic_ratings

from dptune.cli import main

EXPERIMENT = """
name = "ranges"
seed = {seed}
[data]
source = "{data}"
[split]
{split}
[evaluation]
{evaluation}
[analysis]
pairs = 3
noise_seeds = 0
stability = 0
importance = false
{analysis}
[sweep]
jobs = {jobs}
[[algorithms]]
name = "{name}"
type = "{type}"
grid = "{grid}"
"""


def _experiment(d, *, seed=7, split="folds = 2", evaluation="cutoffs = [5, 10]", analysis="",
                jobs=1, name="userknn",
                type="userknn", grid="[params.k]\nvalues = [5, 10]\n"):
    write_synthetic_ratings(d / "ratings.csv", 60, 40, 25)
    (d / "grid.toml").write_text(grid)
    cfg = d / "ranges.toml"
    cfg.write_text(EXPERIMENT.format(seed=seed, data=d / "ratings.csv", split=split,
                                     evaluation=evaluation, analysis=analysis, jobs=jobs,
                                     name=name, type=type, grid=d / "grid.toml"))
    return cfg


def _refused(capsys, argv, *words):
    """``dptune ARGV`` stops with one line holding every word, exit code 2."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    assert "np.float64" not in lines[0] and "np.int64" not in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("setting, words", [
    ({"seed": 4294967296}, ("seed", "from 0 to 4,294,967,295", "4294967296")),
    ({"seed": -1}, ("seed", "-1")),
    ({"split": "folds = 2\nseed = 4294967296"}, ("split.seed", "4294967296")),
    ({"split": "folds = 100000000000"}, ("split.folds", "at most 127")),
    ({"evaluation": "cutoffs = [10, 100000]"}, ("evaluation.cutoffs", "at most 32,767")),
    ({"evaluation": "cutoffs = [5, 10]\nrelevance_threshold = nan"},
     ("evaluation.relevance_threshold", "finite")),
    ({"jobs": 100000000000}, ("sweep.jobs", "from 1 to 1,024")),
    ({"analysis": "bootstrap = 1"}, ("analysis.bootstrap", "0 (off) or from 40")),
    ({"analysis": "bootstrap = 10000000000"}, ("analysis.bootstrap", "100,000")),
    ({"analysis": "n_resamples = 10000000000"}, ("analysis.n_resamples", "100,000")),
])
def test_an_out_of_range_config_value_is_refused_before_any_work(tmp_path, capsys, setting,
                                                                   words):
    cfg = _experiment(tmp_path, **setting)
    results = tmp_path / "results"
    _refused(capsys, ["run", str(cfg), "--results", str(results), "--no-progress"],
             "ranges.toml", *words)
    assert not results.exists()  # nothing was started


BPR_LR = ('[params.factors]\nvalues = [4]\n[params.iterations]\nvalues = [1]\n'
          '[params.learning_rate]\nvalues = [0.05, {lr}]\n[derived]\n'
          'user_reg = {{ from = "learning_rate", scale = 0.05 }}\n'
          'item_reg = {{ from = "learning_rate", scale = 0.005 }}\n')


@pytest.mark.parametrize("grid, words", [
    (BPR_LR.format(lr="0.0"), ("learning_rate", "must be a finite number > 0", "got 0.0")),
    (BPR_LR.format(lr="-0.01"), ("learning_rate", "> 0", "-0.01")),
    (BPR_LR.format(lr="0.1").replace("values = [4]", "values = [0]"),
     ("factors", "must be an integer >= 1", "got 0")),
    (BPR_LR.format(lr="0.1").replace("scale = 0.05", "scale = -1"),
     ("user_reg", "must be a finite number >= 0", "-0.05")),
    # float32 holds neither: training used to end in NaN after a unit had been written
    (BPR_LR.format(lr="1e300"), ("learning_rate", "must be at most 3.4e+38", "float32")),
    (BPR_LR.format(lr="0.1").replace("scale = 0.05", "scale = 1e308"),
     ("user_reg", "must be at most 3.4e+38", "float32")),
    # 0 in float32: the model would train nothing
    (BPR_LR.format(lr="5e-324"), ("learning_rate", "must be at least 1.4e-45", "5e-324 is 0")),
    # a unit that would never end: refused by its projected time, naming the unit
    (BPR_LR.format(lr="0.1").replace("values = [1]", "values = [1, 10000000000000]"),
     ("grid.toml: bpr:", "iterations = 1 to 10000000000000", "years a fold on one core",
      "beyond the 30 days a unit may take")),
])
def test_an_out_of_range_model_hyperparameter_is_refused_before_any_work(tmp_path, capsys,
                                                                        grid, words):
    """The built-in models' ranges (BPR-MF: factors >= 1, iterations >= 0, learning_rate > 0,
    since a rate of 0 trains nothing, nor one that is 0 in float32, user_reg and item_reg >= 0;
    KNN: k >= 1) are checked for every configuration of the grid before any work, and so is the
    projected time of each unit (at most 30 days): one line naming the grid file and the
    hyperparameter, exit 2, nothing written."""
    cfg = _experiment(tmp_path, name="bpr", type="bpr-mf", grid=grid)
    results = tmp_path / "results"
    _refused(capsys, ["run", str(cfg), "--results", str(results), "--no-progress"],
             "grid.toml", *words)
    assert not results.exists()


@pytest.mark.parametrize("argv, words", [
    (["run", "x.toml", "--bootstrap", "1"], ("--bootstrap", "0 (off) or from 40 to 100,000")),
    (["analyze", "results", "--bootstrap", "1"], ("--bootstrap", "0 (off) or from 40")),
    (["run", "x.toml", "--bootstrap", "10000000000"], ("--bootstrap", "10,000,000,000")),
    (["analyze", "results", "--bootstrap", "10000000000"], ("--bootstrap", "10,000,000,000")),
    (["run", "x.toml", "--jobs", "100000000000"], ("--jobs", "from 1 to 1,024")),
    (["analyze", "results", "--n-resamples", "10000000000"], ("--n-resamples", "100,000")),
    # a seed past 32 bits: `run` swept the whole grid, then its analysis refused "analysis:
    # seed"; `slices` took it
    (["run", "x.toml", "--seed", "4294967296"], ("--seed", "from 0 to 4,294,967,295")),
    (["analyze", "results", "--seed", "4294967296"], ("--seed", "4,294,967,295")),
    (["dp", "--per-user", "x.csv", "--seed", "4294967296"], ("--seed", "4,294,967,295")),
    (["slices", "results", "--seed", "4294967296"], ("--seed", "4,294,967,295")),
    (["data", "synth", "--out", "x.csv", "--seed", "4294967296"], ("--seed", "4,294,967,295")),
])
def test_an_out_of_range_flag_is_refused_while_parsing(capsys, argv, words):
    _refused(capsys, argv, *words)


def test_a_synthetic_data_set_too_large_for_memory_is_refused_up_front(tmp_path, capsys):
    out = tmp_path / "big.csv"
    _refused(capsys, ["data", "synth", "--users", "100000000", "--items", "100000000",
                      "--ratings", "10000000000000", "--out", str(out)],
             "data synth", "--ratings", "of memory", "this machine has")
    assert not out.exists()


def test_a_bootstrap_too_large_for_memory_is_refused_before_any_fold_is_read(
        tmp_path, capsys, monkeypatch):
    """The bootstrap's arrays are estimated from replicates x pairs before the fold loop reads
    anything: one line naming the bootstrap and the estimate, exit 2, no report written."""
    import dptune._resources as resources

    rng = np.random.default_rng(0)
    rows = [{"system": f"s{k}", "user": u, "metric": "ndcg@10", "value": float(rng.random())}
            for k in range(6) for u in range(30)]
    table = tmp_path / "per_user.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    monkeypatch.setattr(resources, "physical_memory", lambda: 10_000_000)  # 10 MB
    out = tmp_path / "rep"
    line = _refused(capsys, ["dp", "--per-user", str(table), "--bootstrap", "100000",
                             "--reports", str(out)],
                    "analysis: bootstrap:", "100,000 replicates", "of memory", "this machine has")
    assert "15 pairs" in line, line
    assert not out.exists()


def test_a_number_in_a_message_is_shown_as_a_number(tmp_path, capsys):
    data = tmp_path / "r.csv"
    data.write_text("user,item,rating,timestamp\n1,2,inf,3\n1,3,4,5\n")
    line = _refused(capsys, ["data", "info", str(data)], "rating", "line 2")
    assert ": inf is not a finite number" in line, line


NAN_MODEL = '''
import numpy as np


class HalfNaN:
    """Scores ``nan_items`` items NaN for every user (a model with a bug)."""

    def __init__(self, nan_items=0):
        self.nan_items = nan_items

    def fit(self, X):
        self.n_items = X.shape[1]
        return self

    def score(self, users):
        s = np.ones((len(users), self.n_items), dtype=np.float32)
        s[:, self.n_items - self.nan_items:] = np.nan
        return s
'''


def test_nan_scores_name_the_model_configuration_fold_and_items(tmp_path, capsys, monkeypatch):
    (tmp_path / "nanmodel.py").write_text(NAN_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = _experiment(tmp_path, name="buggy", type="python:nanmodel:HalfNaN",
                      grid="[params.nan_items]\nvalues = [0, 3]\n")
    line = _refused(capsys, ["run", str(cfg), "--results", str(tmp_path / "results"),
                             "--no-progress"],
                    "ranges.toml", "python:nanmodel:HalfNaN", "buggy", "configuration 1",
                    "nan_items=3", "on fold ", "NaN for 3 of 40 items")
    # the fold the design order reached first: either of the two
    assert "on fold 0:" in line or "on fold 1:" in line
    assert "top_n" not in line


RAISING_MODEL = '''
import numpy as np


class Picky:
    """Refuses ``a > 1`` when it is fitted, or when it scores (a value only the model can
    refuse)."""

    def __init__(self, a=1.0, when="fit"):
        self.a, self.when = a, when

    def fit(self, X):
        if self.when == "fit" and self.a > 1:
            raise ValueError("a too large\\nsecond line")
        self.n_items = X.shape[1]
        return self

    def score(self, users):
        if self.a > 1:
            raise RuntimeError("cannot score")
        return np.ones((len(users), self.n_items))
'''


@pytest.mark.parametrize("when, words", [
    ("fit", ("fit() raised ValueError: a too large",)),
    ("score", ("score() raised RuntimeError: cannot score",)),
])
def test_an_outside_model_that_raises_is_one_line_and_the_fix_runs(tmp_path, capsys,
                                                                   monkeypatch, when, words):
    """A model of your own (or cornac's, implicit's) that raises in fit() or score() stops the
    run with one line naming the model, the configuration, the fold and its exception's first
    line (it was the model's traceback); the corrected grid runs in the same directory."""
    (tmp_path / "picky.py").write_text(RAISING_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = _experiment(tmp_path, name="picky", type="python:picky:Picky",
                      grid=f'[params.a]\nvalues = [1.0, 2.0]\n[params.when]\nvalues = ["{when}"]\n')
    results = tmp_path / "results"
    line = _refused(capsys, ["run", str(cfg), "--results", str(results), "--no-progress",
                             "--no-analyze"],
                    "ranges.toml: algorithms[0]: model python:picky:Picky (picky), "
                    f"configuration 1 (a=2.0, when='{when}'), on fold ", *words)
    assert "second line" not in line
    (tmp_path / "grid.toml").write_text(
        f'[params.a]\nvalues = [1.0, 0.5]\n[params.when]\nvalues = ["{when}"]\n')
    assert main(["run", str(cfg), "--results", str(results), "--no-progress",
                 "--no-analyze"]) == 0, capsys.readouterr().err
