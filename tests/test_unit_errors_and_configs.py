"""A unit that fails is one line naming the model, the configuration and the fold, whatever
failed: your own model's ``score()`` returning the wrong shape included (it named the model type
only). And the configurations a results directory holds keep their grid's types:
``ResultStore.configs`` gives an integer hyperparameter as integers (``k = 20``, not ``20.0``)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from conftest import write_synthetic_ratings

from dptune.cli import main
from dptune.errors import DptuneError
from dptune.models._adapters import ScoreShapeError, ShapeChecked
from dptune.store._store import ResultStore

EXPERIMENT = """
name = "shapes"
seed = 7
[data]
source = "{data}"
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
[analysis]
pairs = 3
noise_seeds = 0
stability = 0
importance = false
[sweep]
jobs = 1
[[algorithms]]
name = "shape"
type = "python:badshape:Shape"
grid = "{grid}"
"""

#: A model of your own whose ``score()`` drops the last item for ``a > 1`` (a model with a bug).
SHAPE_MODEL = '''
import numpy as np


class Shape:
    """Scores every item 1, one item short for ``a > 1``."""

    def __init__(self, a=1.0):
        self.a = a

    def fit(self, X):
        self.n_items = X.shape[1]
        return self

    def score(self, users):
        return np.ones((len(users), self.n_items - (1 if self.a > 1 else 0)))
'''


def test_a_score_of_the_wrong_shape_names_the_configuration_and_the_fold(tmp_path, capsys,
                                                                         monkeypatch):
    """It stopped the run with ``python:badshape:Shape: score: returned shape ...``: the model
    type only, where fit() raising and NaN scores name the configuration and the fold."""
    (tmp_path / "badshape.py").write_text(SHAPE_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = write_synthetic_ratings(tmp_path / "ratings.csv", 60, 40, 25)
    (tmp_path / "grid.toml").write_text("[params.a]\nvalues = [1.0, 2.0]\n")
    cfg = tmp_path / "shapes.toml"
    cfg.write_text(EXPERIMENT.format(data=data, grid=tmp_path / "grid.toml"))
    rc = main(["run", str(cfg), "--results", str(tmp_path / "results"), "--no-progress",
               "--no-analyze"])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert ("shapes.toml: algorithms[0]: model python:badshape:Shape (shape), configuration 1 "
            "(a=2.0), on fold ") in line, line
    assert "on fold 0: " in line or "on fold 1: " in line, line
    assert "score() returned shape (" in line and ", 39), expected (" in line, line
    assert ", 40) (one row per user of the block" in line, line


def test_the_shape_error_alone_still_names_the_model_and_crosses_processes():
    """Outside a sweep (no configuration to name) the error reads as before; a worker process
    hands it back whole (pickle)."""
    model = ShapeChecked(type("M", (), {"score": lambda self, u: np.ones((len(u), 2))})(),
                         "python:m:M", 3)
    with pytest.raises(ScoreShapeError) as err:
        model.score(np.arange(4))
    assert isinstance(err.value, DptuneError) and err.value.exit_code == 2
    assert str(err.value) == ("python:m:M: score: returned shape (4, 2), expected (4, 3) (one "
                              "row per user of the block, one column per item of the training "
                              "matrix)")
    back = pickle.loads(pickle.dumps(err.value))
    assert str(back) == str(err.value) and back.problem == err.value.problem


def test_configs_keep_integer_hyperparameters_integers(tmp_path):
    """configs.csv pads the columns another algorithm uses with empty cells, so pandas read
    every value of such a column as a float: ``k`` came back as 20.0, BPR-MF's ``factors`` and
    ``iterations`` as 8.0 and 2.0. A column every configuration of the algorithm has as an
    integer is ``int64``; a float of the grid that is whole (``lamb = 20.0``), a column that is
    an integer for one algorithm and a float for another, text and booleans keep their type."""
    s = ResultStore(tmp_path / "r").create()
    s.write_manifest({
        "experiment": "t", "evaluation": {"metrics": ["ndcg"], "cutoffs": [10]},
        "algorithms": [{"name": n, "free": f, "type": t} for n, f, t in (
            ("uknn", ["k"], "userknn"), ("bpr", ["factors", "iterations", "learning_rate"],
                                         "bpr-mf"),
            ("ease", ["lamb", "k"], "python:m:Ease"), ("mine", ["sim", "on"], "python:m:Mine"))],
    })
    s.write_configs([
        pd.DataFrame({"algorithm": "uknn", "config_id": [0, 1], "k": [10, 20]}),
        pd.DataFrame({"algorithm": "bpr", "config_id": [0, 1, 2, 3], "factors": [8, 8, 16, 16],
                      "iterations": [1, 2, 1, 2], "learning_rate": [0.05] * 4,
                      "user_reg": [0.05 * 0.05] * 4}),
        pd.DataFrame({"algorithm": "ease", "config_id": [0, 1], "lamb": [20.0, 400.0],
                      "k": [0.5, 2.0]}),
        pd.DataFrame({"algorithm": "mine", "config_id": [0, 1], "sim": ["cos", "jac"],
                      "on": [True, False]}),
    ])
    uknn = s.configs("uknn")
    assert list(uknn.columns) == ["config_id", "k"]
    assert str(uknn["k"].dtype) == "int64" and uknn["k"].tolist() == [10, 20]
    bpr = s.configs("bpr")
    assert {c: str(bpr[c].dtype) for c in bpr.columns} == {
        "config_id": "int64", "factors": "int64", "iterations": "int64",
        "learning_rate": "float64", "user_reg": "float64"}
    assert bpr["factors"].tolist() == [8, 8, 16, 16] and bpr["iterations"].tolist() == [1, 2, 1, 2]
    assert bpr["user_reg"].tolist() == [0.05 * 0.05] * 4  # the value the model was given
    ease = s.configs("ease")
    assert str(ease["lamb"].dtype) == "float64" and ease["lamb"].tolist() == [20.0, 400.0]
    assert str(ease["k"].dtype) == "float64" and ease["k"].tolist() == [0.5, 2.0]
    mine = s.configs("mine")
    assert mine["sim"].tolist() == ["cos", "jac"] and mine["on"].tolist() == [True, False]
    # the integers print as the grid wrote them
    assert [f"k={v}" for v in uknn["k"]] == ["k=10", "k=20"]
