"""Sweeps of models registered from Python, on implicit-feedback data without timestamps."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from dptune.cli import main
from dptune.data import load_dataset
from dptune.models import register
from dptune.models._adapters import _REGISTRY, REGISTRY_ENV
from dptune.models.examples import EASE, Popularity

EXPERIMENT = """
name = "clicks"
seed = 5
[data]
source = "{csv}"
columns = {{ user = "visitor", item = "page" }}
[split]
method = "{method}"
folds = 2
[analysis]
pairs = 3
[sweep]
jobs = {jobs}
[[algorithms]]
name = "ease"
type = "reg-ease"
grid = "{grid}"
[[algorithms]]
name = "pop"
type = "reg-pop"
"""


@pytest.fixture
def clicks(tmp_path, monkeypatch):
    """A clicks file (visitor, page; no rating, no timestamp) and two registered models."""
    ds = load_dataset("ml-latest-small", kcore=50)
    r = ds.ratings
    pd.DataFrame({"visitor": ds.user_ids[r["user"]], "page": ds.item_ids[r["item"]]}).to_csv(
        tmp_path / "clicks.csv", index=False)
    (tmp_path / "ease.toml").write_text("[params.lamb]\nvalues = [20.0, 400.0]\n")
    monkeypatch.setenv(REGISTRY_ENV, "{}")
    register("reg-ease", EASE)
    register("reg-pop", Popularity)
    yield tmp_path
    _REGISTRY.pop("reg-ease", None)
    _REGISTRY.pop("reg-pop", None)


def write_experiment(d, method: str, jobs: int) -> str:
    cfg = d / f"{method}-{jobs}.toml"
    cfg.write_text(EXPERIMENT.format(csv=d / "clicks.csv", method=method, jobs=jobs,
                                     grid=d / "ease.toml"))
    return str(cfg)


def test_registered_models_on_implicit_untimed_data_in_worker_processes(clicks):
    cfg = write_experiment(clicks, "leave-one-out-random", jobs=2)
    assert main(["run", cfg, "--results", str(clicks / "r"), "--reports", str(clicks / "q"),
                 "--no-progress"]) == 0
    man = json.loads((clicks / "r" / "manifest.json").read_text())
    assert man["evaluation"]["implicit_feedback"] is True
    assert "implicit feedback" in man["evaluation"]["relevance_rule"]
    assert man["split"]["method"] == "leave-one-out-random"
    assert "implicit feedback" in (clicks / "q" / "report.md").read_text()
    per_user = pd.read_parquet(clicks / "r" / "per_user.parquet")
    assert set(per_user["algorithm"]) == {"ease", "pop"}
    # every user with a held-out click is evaluated: the threshold 4.0 does not apply
    assert man["split"]["users_evaluated"]["test"] == man["dataset"]["users"]
    noise = clicks / "r" / "noise_floor.parquet"
    assert not noise.exists() or not any(noise.iterdir())  # both models are deterministic


def test_a_model_registered_after_a_parallel_run_reaches_the_workers_it_kept(clicks,
                                                                             monkeypatch):
    """loky keeps a run's worker processes (joblib: 300 s idle) and the next run of the process
    reuses them: they must know the models registered in between, not only those of their
    start."""
    from joblib.externals.loky import reusable_executor

    _REGISTRY.pop("reg-pop")
    monkeypatch.setenv(REGISTRY_ENV, json.dumps({"reg-ease": json.loads(
        os.environ[REGISTRY_ENV])["reg-ease"]}))
    both = EXPERIMENT.format(csv=clicks / "clicks.csv", method="random", jobs=2,
                             grid=clicks / "ease.toml")
    ease_only = clicks / "ease-only.toml"
    ease_only.write_text(both[:both.index('[[algorithms]]\nname = "pop"')])
    assert main(["run", str(ease_only), "--results", str(clicks / "r1"), "--no-analyze",
                 "--no-progress"]) == 0
    kept = reusable_executor._executor
    assert kept is not None  # the first run's workers, kept for the next run

    register("reg-pop", Popularity)  # unknown to the kept workers' own environment
    cfg = write_experiment(clicks, "random", jobs=2)
    assert main(["run", cfg, "--results", str(clicks / "r2"), "--no-analyze",
                 "--no-progress"]) == 0
    assert reusable_executor._executor is kept  # the second run ran on the same workers
    per_user = pd.read_parquet(clicks / "r2" / "per_user.parquet")
    assert set(per_user["algorithm"]) == {"ease", "pop"}


def test_temporal_split_on_untimed_data_is_one_line_exit_2(clicks, capsys):
    cfg = write_experiment(clicks, "temporal", jobs=1)
    assert main(["run", cfg, "--results", str(clicks / "t"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "temporal-1.toml" in err and "split.method" in err
    assert "'random' or 'leave-one-out-random'" in err


def test_python_model_scores_equal_cornac_ease_on_the_same_data():
    """The numpy example EASE and cornac's EASE (posB off) score alike."""
    import scipy.sparse as sp

    from dptune.models import CornacModel

    rng = np.random.default_rng(1)
    X = sp.csr_matrix((rng.random((30, 20)) < 0.3).astype(np.float32))
    ours = EASE(lamb=5.0).fit(X).score(np.arange(30))
    theirs = CornacModel("EASE", {"lamb": 5.0, "posB": False}).fit(X)
    seen = theirs.known_items_
    np.testing.assert_allclose(ours[:, seen], theirs.score(np.arange(30))[:, seen], rtol=1e-4,
                               atol=1e-5)
