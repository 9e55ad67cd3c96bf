"""The results directory's set-up check: differences listed without noise (tuples read back as
lists, numeric types, key order), and a set-up that finished no unit never blocks a rerun."""

from __future__ import annotations

import json

import pytest
from conftest import write_experiment

from dptune.config import load_experiment
from dptune.errors import DptuneError
from dptune.store._outside import check_results_target
from dptune.store._store import PARTS, ResultStore
from dptune.sweeper._manifest import init_results, setup_changes


def _manifest_of(exp) -> dict:
    """What a manifest records of ``exp``, read back from JSON (tuples become lists)."""
    return json.loads(json.dumps({
        "fingerprint": exp.fingerprint(), "config": exp.to_dict(),
        "algorithms": [{"name": a.name, "type": a.type,
                        "grid_fingerprint": exp.grids[a.name].fingerprint()}
                       for a in exp.algorithms]}, default=str))


def test_another_seed_lists_only_the_seed(tmp_path):
    old = load_experiment(write_experiment(tmp_path / "a"))
    new = load_experiment(write_experiment(tmp_path / "b", extra=""))
    man = _manifest_of(old)
    assert setup_changes(man, new) == []
    text = (tmp_path / "b" / "tiny.toml").read_text().replace("seed = 7", "seed = 8")
    (tmp_path / "b" / "tiny.toml").write_text(text)
    assert setup_changes(man, load_experiment(tmp_path / "b" / "tiny.toml")) == ["seed: 7 -> 8"]


def test_numbers_and_key_order_are_not_differences(tmp_path):
    exp = load_experiment(write_experiment(tmp_path / "a"))
    man = _manifest_of(exp)
    ev = man["config"]["evaluation"]
    ev["relevance_threshold"] = int(ev["relevance_threshold"])  # 4 for 4.0
    man["config"]["evaluation"] = dict(reversed(list(ev.items())))
    assert setup_changes(man, exp) == []


def test_a_set_up_without_results_does_not_block_the_corrected_rerun(tmp_path):
    exp = load_experiment(write_experiment(tmp_path / "exp"))
    root = tmp_path / "results"
    store = ResultStore(root).create()
    store.write_manifest({"fingerprint": "0123456789abcdef", "experiment": "tiny"})
    init_results(exp, root)  # the earlier set-up stopped before any unit: replaced
    assert ResultStore(root).manifest()["fingerprint"] == exp.fingerprint()
    # once a unit of it finished, another set-up is refused with what differs
    (root / PARTS / "userknn__0__u00000.parquet").write_bytes(b"")
    other = load_experiment(write_experiment(tmp_path / "b", extra=""))
    text = (tmp_path / "b" / "tiny.toml").read_text().replace("seed = 7", "seed = 8")
    (tmp_path / "b" / "tiny.toml").write_text(text)
    with pytest.raises(DptuneError, match=r"different experiment set-up \(seed: 7 -> 8\)"):
        init_results(load_experiment(tmp_path / "b" / "tiny.toml"), root)
    assert other.fingerprint() == exp.fingerprint()


def _own_data_experiment(d, knn_values="[5, 10]"):
    """A UserKNN experiment on a synthetic ratings file of its own (no test split, no floor)."""
    from conftest import write_synthetic_ratings

    d.mkdir(parents=True, exist_ok=True)
    write_synthetic_ratings(d / "ratings.csv", n_users=60, n_items=50, max_ratings=30)
    (d / "knn.toml").write_text(f"[params.k]\nvalues = {knn_values}\n")
    (d / "exp.toml").write_text(
        'name = "own"\nseed = 3\n[data]\nsource = "ratings.csv"\n[split]\nfolds = 2\n'
        "[evaluation]\ncutoffs = [5]\ntest_split = false\n[analysis]\nnoise_seeds = 0\nprimary_cutoff = 5\n"
        '[[algorithms]]\nname = "userknn"\ntype = "userknn"\ngrid = "knn.toml"\n')
    return d / "exp.toml"


@pytest.mark.parametrize("change", ["rows removed", "a rating edited"])
def test_a_data_file_changed_in_place_is_refused_before_its_results_are_mixed(tmp_path, change):
    """The same experiment file on a data file changed since its results were made has the
    same fingerprint; its manifest records the data's digest, so the rerun is one line naming
    the data file (with the counts that changed, when some did) before anything is written,
    where it used to add the new data's parts to the old ones."""
    import pandas as pd

    from dptune.sweeper._local import run_experiment

    cfg = _own_data_experiment(tmp_path / "exp")
    results = tmp_path / "results"
    run_experiment(load_experiment(cfg), results, progress=False)
    before = sorted(p.name for p in (results / PARTS).iterdir())
    data = pd.read_csv(tmp_path / "exp" / "ratings.csv")
    if change == "rows removed":
        data = data.iloc[: len(data) - 40]
        words = "ratings"
    else:
        data.loc[data.index[5], "rating"] = 6 - data.loc[data.index[5], "rating"]
        words = "data digest"
    data.to_csv(tmp_path / "exp" / "ratings.csv", index=False)
    with pytest.raises(DptuneError) as err:
        init_results(load_experiment(cfg), results)
    msg = str(err.value)
    assert msg.startswith(str(tmp_path / "exp" / "ratings.csv")) and "is not the data" in msg
    assert words in msg and "\n" not in msg
    assert sorted(p.name for p in (results / PARTS).iterdir()) == before


def test_a_folder_that_is_not_a_store_is_not_swept_into(tmp_path):
    """--results names a folder of the user's own (its users.csv and trials.csv were replaced),
    a folder inside a results directory, or the folder holding a results directory: one line
    before anything is written. A new folder, an empty one and a store's own pass."""
    from dptune.sweeper._local import run_experiment

    cfg = _own_data_experiment(tmp_path / "exp")
    exp = load_experiment(cfg)
    own = tmp_path / "own"
    own.mkdir()
    (own / "users.csv").write_text("mine\n")
    (own / "trials.csv").write_text("mine\n")
    with pytest.raises(DptuneError, match=r"own: holds files \(trials.csv, users.csv\) but no "
                       r"manifest.json"):
        init_results(exp, own)
    assert sorted(p.name for p in own.iterdir()) == ["trials.csv", "users.csv"]
    assert (own / "users.csv").read_text() == "mine\n"
    results = tmp_path / "runs" / "own"
    (tmp_path / "runs").mkdir()
    run_experiment(exp, results, progress=False)  # a new folder
    init_results(exp, results)  # its own store again
    with pytest.raises(DptuneError, match=r"lies inside the results directory"):
        init_results(exp, results / "sub")
    with pytest.raises(DptuneError, match=r"runs: holds files \(own\) but no manifest.json"):
        init_results(exp, tmp_path / "runs")
    assert not (results / "sub").exists()
    # what a sweep writes before its manifest (another worker creating the storage) passes
    started = tmp_path / "started"
    (started / "per_user.parquet").mkdir(parents=True)
    for name in ("optuna.db", "optuna.db-journal", "sweep.journal"):
        (started / name).write_text("")
    check_results_target(started)


def test_folds_the_analysis_would_refuse_are_refused_before_the_sweep(tmp_path):
    """A validation fold with fewer users than [analysis] min_fold_users used to be found by
    the analysis, after the whole sweep; it is one line naming split.folds before training."""
    cfg = _own_data_experiment(tmp_path / "exp")
    cfg.write_text(cfg.read_text().replace("noise_seeds = 0\n", "noise_seeds = 0\n"
                                           "min_fold_users = 1000\n"))
    with pytest.raises(DptuneError, match=r"split.folds: fold 0 has \d+ users with a relevant "
                       r"held-out item, fewer than analysis.min_fold_users = 1000"):
        init_results(load_experiment(cfg), tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_a_grid_that_cannot_fit_in_memory_is_refused_before_the_results_directory(tmp_path):
    """BPR-MF with 10^11 factors used to fail on memory after the results directory was
    made; its factor matrices (4 * factors * (users + items) bytes) are now compared with the
    machine's memory first: one line naming the grid file and ``factors``."""
    from dptune._resources import physical_memory
    from dptune.models import get_family

    cfg = _own_data_experiment(tmp_path / "exp")
    (tmp_path / "exp" / "bpr.toml").write_text(
        "[params.factors]\nvalues = [10, 100000000000]\n[params.iterations]\nvalues = [1]\n"
        "[params.learning_rate]\nvalues = [0.01]\n[params.user_reg]\nvalues = [0.0]\n"
        "[params.item_reg]\nvalues = [0.0]\n")
    cfg.write_text(cfg.read_text() + '[[algorithms]]\nname = "bpr"\ntype = "bpr-mf"\n'
                   'grid = "bpr.toml"\n')
    exp = load_experiment(cfg)
    with pytest.raises(DptuneError) as err:
        init_results(exp, tmp_path / "results", jobs=2)
    msg = str(err.value)
    assert msg.startswith("bpr.toml: factors: bpr with factors = 100,000,000,000 on 60 users "
                          "and 50 items") and "(2 units at once) needs about" in msg
    assert "this machine has" in msg and "\n" not in msg
    assert not (tmp_path / "results").exists()
    # the estimate is the float32 factor matrices, hand-computed
    family = get_family("bpr-mf")
    cfg_ = family.validate([{"factors": 8, "iterations": 1, "learning_rate": 0.1,
                             "user_reg": 0.0, "item_reg": 0.0}])[0]
    assert family.memory_bytes(cfg_, 10, 5) == 4 * 8 * 15
    assert get_family("userknn").memory_bytes({"k": 10**9}, 10, 5) == 0.0
    assert physical_memory() > 0


def test_a_relevance_threshold_above_every_rating_is_named(tmp_path):
    """relevance_threshold = 100 on 1-5 ratings leaves every fold without a relevant item; the
    line used to blame split.folds, it now names evaluation.relevance_threshold and the highest
    rating."""
    cfg = _own_data_experiment(tmp_path / "exp")
    cfg.write_text(cfg.read_text().replace("test_split = false\n",
                                           "test_split = false\nrelevance_threshold = 100\n"))
    with pytest.raises(DptuneError, match=r"exp.toml: evaluation.relevance_threshold: 100 is "
                       r"above every rating of the data \(the highest is 5\)"):
        init_results(load_experiment(cfg), tmp_path / "results")
    assert not (tmp_path / "results").exists()
