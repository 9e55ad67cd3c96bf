"""A model registered from ``__main__`` (a script, a notebook) with ``jobs > 1``: the sweep's
worker processes cannot import its class, so the sweep refuses it before any work, with the
line the first worker process raised mid-sweep before; with ``jobs = 1`` it sweeps."""

from __future__ import annotations

import pytest
from conftest import write_synthetic_ratings

import dptune
from dptune.errors import DptuneError
from dptune.models import register
from dptune.models._adapters import _REGISTRY, REGISTRY_ENV

EXPERIMENT = """
name = "mainpop"
seed = 3
[data]
source = "{data}"
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
[analysis]
pairs = 2
noise_seeds = 0
[[algorithms]]
name = "pop"
type = "main-pop"
grid = "{grid}"
"""


class MainPop:
    """Most popular items, shifted by ``bias`` (two configurations to compare)."""

    def __init__(self, bias: float = 0.0):
        self.bias = bias

    def fit(self, X):
        import numpy as np

        self.pop_ = np.asarray(X.sum(axis=0), dtype=float).ravel() + self.bias
        return self

    def score(self, users):
        import numpy as np

        return np.tile(self.pop_, (len(users), 1))


MainPop.__module__ = "__main__"  # as a class defined in the script that runs the sweep


@pytest.fixture
def main_model(tmp_path, monkeypatch):
    """The experiment file of a sweep of ``main-pop``, registered from ``__main__``."""
    monkeypatch.setenv(REGISTRY_ENV, "{}")
    register("main-pop", MainPop)
    data = write_synthetic_ratings(tmp_path / "ratings.csv", 60, 40, 20)
    (tmp_path / "pop.toml").write_text("[params.bias]\nvalues = [0.0, 0.5]\n")
    cfg = tmp_path / "mainpop.toml"
    cfg.write_text(EXPERIMENT.format(data=data, grid=tmp_path / "pop.toml"))
    yield cfg
    _REGISTRY.pop("main-pop", None)


def test_jobs_above_one_refuses_a_main_model_before_any_work(main_model, tmp_path):
    """Before, the first worker process failed with this line after the results directory,
    manifest and storage were made; now it comes before anything is written, exit code 2."""
    results = tmp_path / "results"
    with pytest.raises(DptuneError) as err:
        dptune.sweep(main_model, results=results, jobs=2, progress=False)
    assert err.value.exit_code == 2
    assert str(err.value).startswith("algorithm: type: 'main-pop' was registered with "
                                     "dptune.models.register from __main__.MainPop, which the "
                                     "sweep's worker processes cannot import: sweep with jobs "
                                     "= 1"), err.value
    assert "\n" not in str(err.value)
    assert not results.exists()
    assert "main-pop" in _REGISTRY  # this process still knows the model


def test_jobs_one_sweeps_a_main_model(main_model, tmp_path):
    """In this process the class is at hand: the sweep runs every unit, on the test split too."""
    import pandas as pd

    store = dptune.sweep(main_model, results=tmp_path / "results", jobs=1, progress=False)
    per_user = pd.read_parquet(store.root / "per_user.parquet")
    assert set(per_user["algorithm"]) == {"pop"}
    assert {"0", "1", "test"} <= set(per_user["fold"])
