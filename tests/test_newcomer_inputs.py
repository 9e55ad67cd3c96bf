"""What a newcomer's first commands hit: ``subgrid`` without ``--algorithm`` on a store without
BPR-MF, ``subgrid --radius 0``, a cutoff beyond the data's items, a metric name in another
case, and ``analyze --min-fold-users`` above the folds' users. Each is refused (or accepted) in
one line before any work, as README's "What can go wrong" table says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import EXPERIMENT, bpr_grid, one_error_line, tree_digest, write_synthetic_ratings

import dptune
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.subgrid import write_subgrid
from dptune.cli import main
from dptune.config import load_experiment
from dptune.data._dataset import load_dataset
from dptune.errors import DptuneError
from dptune.grids import load_grid


def _experiment(d: Path, name: str, bpr: str, cutoffs: str = "[5, 10]",
                analysis: str = "") -> Path:
    """The synthetic data (120 users, 80 items), a UserKNN grid of two values, the BPR-MF
    grid ``bpr`` and conftest's :data:`EXPERIMENT` (2 folds, no test split, no noise floor: a
    sweep of seconds) with ``cutoffs`` and the ``[analysis]`` lines ``analysis`` in ``d``;
    returns the experiment file."""
    d.mkdir(parents=True, exist_ok=True)
    data = d / "ratings.csv"
    if not data.exists():
        write_synthetic_ratings(data, 120, 80, 30)
    (d / "knn.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    (d / f"{name}-bpr.toml").write_text(bpr)
    cfg = d / f"{name}.toml"
    text = EXPERIMENT.format(name=name, source=data.as_posix(), knn=(d / "knn.toml").as_posix(),
                             bpr=(d / f"{name}-bpr.toml").as_posix())
    cfg.write_text(text.replace("[evaluation]\n", f"[evaluation]\ncutoffs = {cutoffs}\n")
                   .replace("[analysis]\n", f"[analysis]\n{analysis}\n"))
    return cfg


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """Two swept stores (validation units only): ``one``, where only UserKNN varies (BPR-MF
    has one configuration), and ``two``, where both do."""
    d = tmp_path_factory.mktemp("newcomer")
    out = {}
    for name, bpr in (("one", bpr_grid([4], [1], [0.05])), ("two", bpr_grid([4, 8], [1], [0.05]))):
        cfg = _experiment(d / "exp", name, bpr)
        out[name] = d / f"results-{name}"
        assert main(["run", str(cfg), "--results", str(out[name]), "--no-analyze",
                     "--no-progress"]) == 0
    return out


# ------------------------------------------------------------------------------ 1. --algorithm
def test_subgrid_without_algorithm_takes_the_only_one_with_hyperparameters_to_vary(
        stores, tmp_path, capsys):
    """The default was ``bpr-mf``: a store whose only varying algorithm is UserKNN (here
    BPR-MF has one configuration; on a store without BPR-MF, the same) was refused."""
    out = tmp_path / "sub.toml"
    capsys.readouterr()
    assert main(["subgrid", str(stores["one"]), "--radius", "1", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    assert "Sub-grid of userknn" in out.read_text()
    assert set(load_grid(out).values) == {"k"}


def test_subgrid_without_algorithm_on_several_names_the_flag_and_lists_them(
        stores, tmp_path, capsys):
    """Two algorithms to vary: which one is meant is asked, never guessed."""
    out = tmp_path / "sub.toml"
    capsys.readouterr()
    assert main(["subgrid", str(stores["two"]), "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("dptune: --algorithm: missing: "), line
    assert "userknn, bpr-mf" in line
    assert not out.exists()
    # naming one works, and an unknown name is still refused naming the flag
    assert main(["subgrid", str(stores["two"]), "--algorithm", "bpr-mf", "--radius", "1",
                 "--out", str(out)]) == 0
    capsys.readouterr()  # the edge warning
    assert main(["subgrid", str(stores["two"]), "--algorithm", "itemknn", "--out",
                 str(tmp_path / "other.toml")]) == 2
    assert "'itemknn' is not an algorithm of" in one_error_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------ 2. --radius 0
def test_subgrid_radius_0_is_refused_when_the_flag_is_parsed(tmp_path, capsys):
    """``--radius 0`` wrote ``values = [80]`` per hyperparameter, a grid dptune run refuses."""
    out = tmp_path / "sub.toml"
    assert main(["subgrid", str(tmp_path / "no-such-results"), "--radius", "0", "--out",
                 str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "--radius" in line and ">= 1, got 0" in line, line
    assert not out.exists()


def test_write_subgrid_refuses_a_single_configuration(stores, tmp_path):
    """The front function refuses radius 0, and a grid of one configuration at any radius,
    before anything is written."""
    out = tmp_path / "sub.toml"
    before = tree_digest(stores["one"])
    with pytest.raises(DptuneError, match=r"^--radius: 0 keeps only the best value"):
        write_subgrid(stores["one"], "userknn", "ndcg", 10, 0, out)
    with pytest.raises(DptuneError, match=r"^--algorithm: bpr-mf: its grid in .* has one "
                                          r"configuration"):
        write_subgrid(stores["one"], "bpr-mf", "ndcg", 10, 2, out)
    assert not out.exists() and tree_digest(stores["one"]) == before


# ------------------------------------------------------------------------------ 3. cutoffs
def test_a_cutoff_beyond_the_items_of_the_data_is_refused_before_the_sweep(tmp_path, capsys):
    """``cutoffs = [5, 10, 5000]`` on 80 items ran, giving Recall@5000 = 1 for every
    configuration; now one line naming the file, the field and the number of items, and
    nothing is written (neither by ``run`` nor by ``worker``)."""
    cfg = _experiment(tmp_path / "exp", "big", bpr_grid([4], [1], [0.05]), cutoffs="[5, 10, 5000]")
    n_items = load_dataset(str(tmp_path / "exp" / "ratings.csv")).n_items
    results = tmp_path / "results"
    assert main(["run", str(cfg), "--results", str(results), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"dptune: {cfg}: evaluation.cutoffs: 5,000 is not below the "
                           f"{n_items:,} items of the data"), line
    assert not results.exists() and not (tmp_path / "reports").exists()
    assert main(["worker", str(cfg), "--storage", f"sqlite:///{tmp_path / 'o.db'}",
                 "--results", str(results)]) == 2
    assert "evaluation.cutoffs" in one_error_line(capsys.readouterr().err)
    assert not results.exists() and not (tmp_path / "o.db").exists()


def test_a_cutoff_equal_to_the_items_is_refused_one_below_is_not(tmp_path):
    """The bound is the number of items: N = items lists every item; N = items - 1 passes."""
    from dptune.data._dataset import check_cutoffs

    _experiment(tmp_path, "edge", bpr_grid([4], [1], [0.05]))
    ds = load_dataset(str(tmp_path / "ratings.csv"))
    with pytest.raises(DptuneError, match=rf"edge.toml: evaluation.cutoffs: {ds.n_items} is "
                                          rf"not below the {ds.n_items} items"):
        check_cutoffs(ds, [10, ds.n_items], "edge.toml")
    check_cutoffs(ds, [10, ds.n_items - 1], "edge.toml")


# ------------------------------------------------------------------------------ 4. metric case
def test_primary_metric_in_an_experiment_file_is_matched_whatever_its_case(tmp_path):
    cfg = _experiment(tmp_path, "case", bpr_grid([4], [1], [0.05]),
                      analysis='primary_metric = "NDCG"')
    assert load_experiment(cfg).analysis.primary_metric == "ndcg"
    # an outside metric's name is kept as written (and an experiment has only dptune's)
    assert AnalysisOptions(primary_metric="HR").primary_metric == "HR"
    cfg.write_text(cfg.read_text().replace('"NDCG"', '"HR"'))
    with pytest.raises(DptuneError, match="analysis.primary_metric: 'HR' is not one of"):
        load_experiment(cfg)
    # evaluation.metrics too: the same experiment as with the vocabulary's keys
    cfg.write_text(cfg.read_text().replace('"HR"', '"nDCG"').replace(
        "test_split = false", 'test_split = false\nmetrics = ["NDCG", "Recall"]'))
    exp = load_experiment(cfg)
    assert exp.evaluation.metrics == ("ndcg", "recall")
    lower = tmp_path / "lower.toml"
    lower.write_text(cfg.read_text().replace('["NDCG", "Recall"]', '["ndcg", "recall"]'))
    assert load_experiment(lower).fingerprint() == exp.fingerprint()


def _per_user_table() -> pd.DataFrame:
    """Three configurations scoring 40 users on nDCG@10 in one fold, seeded."""
    rng = np.random.default_rng(1)
    rows = [("runs", c, "0", f"u{u}", "ndcg", 10, float(rng.uniform(0, 1)))
            for c in range(3) for u in range(40)]
    return pd.DataFrame(rows, columns=["algorithm", "config_id", "fold", "user", "metric",
                                       "cutoff", "value"])


def test_discriminative_power_takes_the_primary_metric_whatever_its_case():
    res = dptune.discriminative_power(_per_user_table(), primary_metric="NDCG", bootstrap=0,
                                      stability=0, progress=False)
    assert res.options.primary_metric == "ndcg"


def test_subgrid_metric_whatever_its_case(stores, tmp_path, capsys):
    out = tmp_path / "sub.toml"
    assert main(["subgrid", str(stores["one"]), "--metric", "NDCG", "--radius", "1", "--out",
                 str(out)]) == 0, capsys.readouterr().err
    assert "by ndcg@10" in out.read_text()
    capsys.readouterr()  # the edge warning
    assert main(["subgrid", str(stores["one"]), "--metric", "hit", "--out", str(out)]) == 2
    assert "--metric" in one_error_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------ 5. fold users
def test_min_fold_users_above_the_folds_is_refused_before_the_progress_bar(stores, tmp_path,
                                                                           capsys):
    """The analysis bar over the folds was drawn before the one-line error: a sweep's fold
    sizes are recorded, so the refusal comes first, with the same line."""
    reports = tmp_path / "reports"
    capsys.readouterr()
    assert main(["analyze", str(stores["one"]), "--reports", str(reports),
                 "--min-fold-users", "1000"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "userknn/fold 0: only" in line and "fewer than min_fold_users = 1000" in line, line
    assert not reports.exists()
