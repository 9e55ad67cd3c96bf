"""The analysis stage end to end: byte-identical reruns, dp.csv recomputed with scipy alone,
the noise floor and importance sections, the metric ranking, and the new [analysis] options.

One tiny experiment (a 120-user subset of the embedded data, 2 folds, 6 KNN + 8 BPR-MF
configurations, 3 noise-floor seeds) is swept once per session through ``dptune run``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import bpr_grid
from scipy import stats as sps

from dptune._api import analyze_results
from dptune.analysis.options import AnalysisOptions
from dptune.cli import main
from dptune.config import parse_experiment
from dptune.errors import DptuneError

EXPERIMENT = """
name = "tiny-analyze"
seed = 11
[data]
source = "{data}"
format = "ml-csv"
[split]
folds = 2
[evaluation]
cutoffs = [1, 10]
[analysis]
pairs = 6
noise_seeds = 3
[sweep]
jobs = 1
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{knn}"
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
"""

KNN = """
family = "userknn"
[params.k]
values = [5, 10, 20, 40]
"""

BPR = bpr_grid([4, 16], [1, 4], [0.02, 0.1])


def write_tiny_experiment(d: Path, n_users: int = 120) -> Path:
    """A small ml-csv subset of the embedded data and an experiment file using it."""
    from dptune.data._dataset import load_dataset

    ds = load_dataset("ml-latest-small")
    r = ds.ratings
    keep = r[r["user"] < n_users]
    raw = pd.DataFrame({"userId": ds.user_ids[keep["user"].to_numpy()],
                        "movieId": ds.item_ids[keep["item"].to_numpy()],
                        "rating": keep["rating"].to_numpy(),
                        "timestamp": keep["timestamp"].to_numpy()})
    raw.to_csv(d / "ratings.csv", index=False)
    (d / "knn.toml").write_text(KNN)
    (d / "bpr.toml").write_text(BPR)
    cfg = d / "tiny.toml"
    cfg.write_text(EXPERIMENT.replace("{data}", str(d / "ratings.csv"))
                   .replace("{knn}", str(d / "knn.toml")).replace("{bpr}", str(d / "bpr.toml")))
    return cfg


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny_analyze")
    cfg = write_tiny_experiment(d)
    rc = main(["run", str(cfg), "--results", str(d / "results"), "--reports", str(d / "reports"),
               "--no-progress"])
    assert rc == 0
    return d


def test_run_writes_noise_floor_and_importance(tiny):
    res, rep = tiny / "results", tiny / "reports"
    nf = pd.read_parquet(res / "noise_floor.parquet")
    assert list(nf.columns) == ["algorithm", "config_id", "fold", "user", "metric", "cutoff",
                                "value", "seed_index"]
    assert set(nf["algorithm"]) == {"bpr-mf"}  # userknn is deterministic
    assert set(nf["seed_index"]) == {0, 1, 2} and set(nf["fold"]) == {"0", "1"}
    assert nf["config_id"].nunique() == 1
    trials = pd.read_csv(res / "noise_trials.csv")
    assert len(trials) == 2 * 3 and trials["seed"].nunique() == 6
    for f in ("noise_floor.csv", "noise_curves.csv", "noise_pvalues.parquet", "importance.csv"):
        assert (rep / f).exists(), f
    text = (rep / "report.md").read_text()
    assert "## Noise floor (A/A pairs)" in text
    assert "User-kNN is deterministic" in text
    assert "## Hyperparameter importance (optuna) beside DP dominance" in text
    assert "| Correction (Sakai DP) | none (raw p-values) |" in text
    assert "| Bootstrap | 1000 replicates" in text  # on by default


def _all_files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def reruns(tiny, tmp_path_factory):
    """The same analysis (a bootstrap of 40, Holm) written twice into two folders."""
    d = tmp_path_factory.mktemp("reruns")
    for name in ("a", "b"):
        assert main(["analyze", str(tiny / "results"), "--reports", str(d / name),
                     "--bootstrap", "40", "--correction", "holm"]) == 0
    return d / "a", d / "b"


def test_analyze_is_byte_identical_on_rerun(reruns):
    a, b = _all_files(reruns[0]), _all_files(reruns[1])
    assert sorted(a) == sorted(b)
    assert {"report.md", "dp.csv", "noise_floor.csv", "importance.csv", "comparisons.csv",
            "dominance.csv", "downstream.csv", "figure1.png", "figure1.svg"} <= set(a)
    for name in a:
        assert a[name] == b[name], name


def _ttest_p(a: np.ndarray, b: np.ndarray) -> float:
    """scipy.stats.ttest_rel with the documented conventions where scipy returns NaN."""
    d = a - b
    if np.all(d == 0):
        return 1.0
    p = float(sps.ttest_rel(a, b).pvalue)
    if np.isnan(p):  # constant non-zero difference: |t| -> inf
        return 0.0
    return p


def test_every_dp_number_recomputes_from_the_store_with_scipy(tiny):
    res, rep = tiny / "results", tiny / "reports"
    dp = pd.read_csv(rep / "dp.csv")
    pairs = pd.read_csv(rep / "pairs.csv")
    per_user = pd.read_parquet(res / "per_user.parquet")
    per_user = per_user[per_user["fold"] != "test"]
    rows = dp[dp["scope"] == "all"]
    assert len(rows) == 2 * 6 * 2 and set(rows["test"]) == {"t"}
    for r in rows.itertuples(index=False):
        pr = pairs[(pairs["algorithm"] == r.algorithm) & (pairs["scope"] == "all")]
        sl = per_user[(per_user["algorithm"] == r.algorithm) & (per_user["metric"] == r.metric)
                      & (per_user["cutoff"] == r.cutoff)]
        curves, sakai = [], []
        for fold in sorted(sl["fold"].unique(), key=int):
            wide = sl[sl["fold"] == fold].pivot(index="config_id", columns="user", values="value")
            wide = wide.loc[np.unique(pr[["config_a", "config_b"]])].dropna(axis=1)
            p = np.array([_ttest_p(wide.loc[a].to_numpy(np.float64), wide.loc[b].to_numpy(np.float64))
                          for a, b in zip(pr["config_a"], pr["config_b"], strict=True)])
            curves.append(np.sort(p)[::-1])
            sakai.append(np.mean(p < r.alpha))
        c = np.array(curves)
        mean, sd = c.mean(axis=0), c.std(axis=0, ddof=1)
        assert r.n_pairs == len(pr) and r.n_folds == len(curves)
        k = 25.0 / len(pr)
        np.testing.assert_allclose(
            [r.dp_sum, r.dp_per_25, r.dp_per_25_plus_sd, r.dp_per_25_minus_sd, r.sakai,
             r.sakai_sd],
            [mean.sum(), k * mean.sum(), k * np.minimum(mean + sd, 1).sum(),
             k * np.maximum(mean - sd, 0).sum(), np.mean(sakai),
             np.std(sakai, ddof=1)], rtol=1e-8, atol=1e-9)


def test_noise_floor_numbers_recompute_with_scipy(tiny):
    res, rep = tiny / "results", tiny / "reports"
    floor = pd.read_csv(rep / "noise_floor.csv")
    dp = pd.read_csv(rep / "dp.csv")
    nf = pd.read_parquet(res / "noise_floor.parquet")
    assert len(floor) == 6 * 2
    for r in floor.itertuples(index=False):
        sl = nf[(nf["metric"] == r.metric) & (nf["cutoff"] == r.cutoff)]
        fold_means = []
        for fold in ("0", "1"):
            w = sl[sl["fold"] == fold].pivot(index="seed_index", columns="user", values="value")
            v = w.to_numpy(np.float64)
            fold_means.append(np.mean([_ttest_p(v[s], v[t]) for s in range(3)
                                       for t in range(s + 1, 3)]))
        row = dp[(dp["algorithm"] == r.algorithm) & (dp["scope"] == "all")
                 & (dp["metric"] == r.metric) & (dp["cutoff"] == r.cutoff)].iloc[0]
        np.testing.assert_allclose(r.floor_per_25, 25 * np.mean(fold_means), rtol=1e-8)
        np.testing.assert_allclose(r.floor_per_25_sd, 25 * np.std(fold_means, ddof=1),
                                   rtol=1e-8)
        assert r.dp_per_25 == row["dp_per_25"] and r.ci_high == row["ci_high"]
        assert bool(r.flagged) == (not r.ci_high < r.floor_per_25)


def test_bootstrap_report_states_choices_and_intervals(reruns):
    out = reruns[0]
    text = (out / "report.md").read_text()
    assert "| Bootstrap | 40 replicates" in text
    assert "| Correction (Sakai DP) | Holm step-down (family-wise error) |" in text
    dp = pd.read_csv(out / "dp.csv")
    assert set(dp["correction"]) == {"holm"}
    # the interval of DP per 25 pairs sits on the rows of scope all and of the one-at-a-time
    # scopes (the pairs the verdict and the dominance compare)
    boxed = (dp["scope"] == "all") | dp["scope"].str.startswith("only:")
    assert dp.loc[boxed, ["ci_low", "ci_high"]].notna().all().all()
    assert dp.loc[~boxed, ["ci_low", "ci_high"]].isna().all().all()
    assert np.allclose(dp["dp_per_25"], 25 * dp["dp_sum"] / dp["n_pairs"])


def test_noise_floor_and_importance_can_be_switched_off(tiny, tmp_path):
    out = tmp_path / "off"
    # a bootstrap of 40 (the fewest for an interval): what is switched off does not depend on it
    analyze_results(tiny / "results", out, noise_seeds=0, importance=False, bootstrap=40)
    text = (out / "report.md").read_text()
    assert "Off (`noise_seeds = 0`)." in text and "| Noise floor | off |" in text
    assert "## Hyperparameter importance" not in text
    assert "| Hyperparameter importance | off |" in text
    assert not (out / "importance.csv").exists() and not (out / "noise_floor.csv").exists()
    assert "## Metric ranking" not in text


def test_analysis_options_defaults_and_validation(tiny):
    man = json.loads((tiny / "results" / "manifest.json").read_text())
    assert man["analysis"]["noise_seeds"] == 3
    old = dict(man)
    old["analysis"] = {k: v for k, v in man["analysis"].items()
                       if k not in ("noise_seeds", "noise_configs", "importance")}
    opts = AnalysisOptions.resolve(old)
    assert (opts.noise_seeds, opts.noise_configs, opts.importance) == (5, 1, True)
    assert AnalysisOptions.resolve(man, noise_seeds=0, importance=False).noise_seeds == 0
    for bad in ({"noise_seeds": 1}, {"noise_configs": 0}, {"importance": "yes"}):
        with pytest.raises(DptuneError):
            AnalysisOptions.resolve(man, **bad)


def test_config_fields_and_errors(tmp_path):
    base = {"name": "x", "algorithms": [{"name": "u", "type": "userknn",
                                          "grid": str(Path(__file__).parents[2] / "grids" / "knn.toml")}]}
    exp = parse_experiment(base, "x.toml")
    assert (exp.analysis.noise_seeds, exp.analysis.noise_configs, exp.analysis.importance) == (5, 1, True)
    assert AnalysisOptions().noise_seeds == 5
    ok = parse_experiment({**base, "analysis": {"noise_seeds": 0, "noise_configs": 3,
                                                "importance": False}}, "x.toml")
    assert (ok.analysis.noise_seeds, ok.analysis.noise_configs, ok.analysis.importance) == (0, 3, False)
    for bad, field in (({"noise_seeds": 1}, "noise_seeds"), ({"noise_seeds": -2}, "noise_seeds"),
                       ({"noise_configs": 0}, "noise_configs"), ({"importance": 1}, "importance"),
                       ({"noise_seed": 3}, "noise_seed")):
        with pytest.raises(DptuneError, match=f"analysis.{field}"):
            parse_experiment({**base, "analysis": bad}, "x.toml")


def test_cli_rejects_bad_noise_flags(tiny, capsys):
    assert main(["analyze", str(tiny / "results"), "--noise-seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--noise-seeds" in err


def test_report_names_an_algorithm_with_a_single_configuration(tmp_path):
    # one configuration has no pair to test: the report says so instead of leaving it out
    cfg = write_tiny_experiment(tmp_path, n_users=60)
    (tmp_path / "one.toml").write_text('family = "itemknn"\n[params.k]\nvalues = [10]\n')
    text = cfg.read_text().replace("noise_seeds = 3", "noise_seeds = 0")
    text += f'[[algorithms]]\nname = "itemknn"\ntype = "itemknn"\ngrid = "{tmp_path / "one.toml"}"\n'
    cfg.write_text(text)
    reports = tmp_path / "reports"
    assert main(["run", str(cfg), "--results", str(tmp_path / "results"), "--reports",
                 str(reports), "--no-progress", "--bootstrap", "40"]) == 0
    md = (reports / "report.md").read_text()
    assert "No DP for Item-kNN: it has 1 configuration, so there is no pair" in md
    assert "itemknn" not in set(pd.read_csv(reports / "dp.csv")["algorithm"])
    assert "itemknn" in set(pd.read_csv(reports / "best_configs.csv")["algorithm"])


# Table 3 (scope all) of this store with the paper's sampling (25 pairs per scope, analysis
# seed 11), computed by the version before the one pair setting (`n_pairs = 25`): User-kNN has
# 6 pairs (all used), BPR-MF 28 of which 25 are drawn.
PAPER_TABLE3 = {
    ("userknn", "ndcg", 1): 2.4098039269534284, ("userknn", "ndcg", 10): 0.3303180997985627,
    ("userknn", "precision", 1): 2.4098039269534284,
    ("userknn", "precision", 10): 0.5075966642858425,
    ("userknn", "recall", 1): 1.5545642572542688, ("userknn", "recall", 10): 0.3799471425641212,
    ("userknn", "mrr", 1): 2.4098039269534284, ("userknn", "mrr", 10): 1.4691515119550194,
    ("userknn", "efd", 1): 2.588559734829345, ("userknn", "efd", 10): 0.6903929876908342,
    ("userknn", "epc", 1): 2.685013241048014, ("userknn", "epc", 10): 0.6663076438083156,
    ("bpr-mf", "ndcg", 1): 9.863478162372619, ("bpr-mf", "ndcg", 10): 7.729159033993727,
    ("bpr-mf", "precision", 1): 9.863478162372619,
    ("bpr-mf", "precision", 10): 8.035373048653156,
    ("bpr-mf", "recall", 1): 11.57897248374996, ("bpr-mf", "recall", 10): 10.279135583090804,
    ("bpr-mf", "mrr", 1): 9.863478162372619, ("bpr-mf", "mrr", 10): 9.858553531378568,
    ("bpr-mf", "efd", 1): 9.729903789902307, ("bpr-mf", "efd", 10): 8.018976477535642,
    ("bpr-mf", "epc", 1): 9.566927888486136, ("bpr-mf", "epc", 10): 8.213562538865403,
}


def test_pairs_25_reproduces_the_paper_sampling_table3(tiny):
    from dptune.analysis import analyze
    from dptune.report._tables import table3
    from dptune.store._store import ResultStore

    store = ResultStore(tiny / "results")
    opts = AnalysisOptions.resolve(store.manifest(), pairs=25, bootstrap=0, noise_seeds=0,
                                   importance=False)
    res = analyze(store, opts)
    d = res.dp.table[res.dp.table["scope"] == "all"]
    got = {(r.algorithm, r.metric, int(r.cutoff)): r.dp_sum for r in d.itertuples(index=False)}
    assert set(got) == set(PAPER_TABLE3)
    for key, want in PAPER_TABLE3.items():
        assert got[key] == pytest.approx(want, rel=1e-12, abs=1e-12), key
    # on P = 25 the table's DP per 25 pairs is the paper's DP itself, bit for bit
    bpr = d[d["algorithm"] == "bpr-mf"]
    assert set(bpr["n_pairs"]) == {25} and (bpr["dp_per_25"] == bpr["dp_sum"]).all()
    # Table 3 prints those very values (P = 25: DP per 25 pairs = DP)
    t3 = table3(res.dp.table, res.verdict, res.metric_families).to_dataframe().set_index(
        ["algorithm", "cutoff"])
    assert t3.at[("bpr-mf", 10), "ndcg"] == pytest.approx(PAPER_TABLE3[("bpr-mf", "ndcg", 10)], rel=1e-12)
    assert t3.at[("bpr-mf", 10), "n_pairs"] == 25 and t3.at[("userknn", 10), "n_pairs"] == 6
    # the verdict's point estimates read the same 25 pairs
    v = res.verdict.merge(d, left_on=["algorithm", "cutoff", "recommended"],
                          right_on=["algorithm", "cutoff", "metric"], suffixes=("", "_dp"))
    assert len(v) and (v["dp_per_25"] == v["dp_per_25_dp"]).all()


@pytest.mark.parametrize("test", ["wilcoxon", "permutation"])
def test_a_test_other_than_t_gives_one_answer_and_no_claim(tiny, test):
    """The bootstrap is of t-tests: under another test the verdict reads the tables' own DP
    (the same p-values), with no interval and no significance claim."""
    from dptune.analysis import analyze
    from dptune.report._sections import _bootstrap_text
    from dptune.store._store import ResultStore

    store = ResultStore(tiny / "results")
    # min_pairs = 1: this tiny grid has 6 pairs per algorithm, and the verdict must recommend
    opts = AnalysisOptions.resolve(store.manifest(), test=test, n_resamples=200,
                                   noise_seeds=0, importance=False, min_pairs=1)
    assert opts.bootstrap > 0  # asked for, and still not run
    res = analyze(store, opts)
    d = res.dp.table[res.dp.table["scope"] == "all"]
    assert np.allclose(d["mean_p"] * d["n_pairs"], d["dp_sum"], rtol=0, atol=1e-12)
    assert d["ci_low"].isna().all() and d["ci_high"].isna().all()
    assert res.dp.draws == {} and res.comparisons.empty
    assert res.verdict["less_discriminative"].map(len).eq(0).all()
    # the verdict's metric is the smallest DP of its family, as Table 4's best
    assert res.verdict["recommended"].astype(bool).all()
    for r in res.verdict.itertuples(index=False):
        fam = dict(opts.families)[r.family]
        rows = d[(d["algorithm"] == r.algorithm) & (d["cutoff"] == r.cutoff)
                 & d["metric"].isin(fam)]
        assert rows["dp_per_25"].min() == pytest.approx(
            rows.loc[rows["metric"] == r.recommended, "dp_per_25"].iloc[0], abs=1e-12)
    assert _bootstrap_text(opts).startswith("not run: its replicates are t-tests")
    # the legend speaks of no interval and no claim it does not show
    from dptune.report._verdict import verdict_section

    legend = verdict_section(res).split("\n")[0]
    assert legend.startswith("How to read it:") and "without an interval" in legend, legend
    for absent in ("bootstrap interval in brackets", "*Significantly less discriminative* is",
                   "Pr(more discriminative)", "*dominates* when"):
        assert absent not in legend, absent
    with_intervals = verdict_section(analyze(store, opts.replace(test="t", bootstrap=200)))
    assert "95% bootstrap interval in brackets" in with_intervals.split("\n")[0]


def test_a_store_of_deterministic_algorithms_has_no_noise_floor_in_its_settings(knn_swept):
    """UserKNN alone trains without a seed: the settings' noise-floor row says there is no
    floor, as the noise-floor section does, instead of the seeds the option asks for."""
    md = (knn_swept / "reports" / "report.md").read_text()
    assert ("| Noise floor | none: every algorithm is deterministic (training uses no seed; "
            "re-training gives identical results) |") in md
    assert "User-kNN is deterministic" in md
