"""Tests of dptune.seeds: % of mean, hold-out vs CV test, Kendall tau, configurations, and a tiny
end-to-end split-seed study on the embedded data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from studies.seeds.seeds_experiment import tiny_seeds_experiment as _exp

from dptune.analysis.dp.paired_tests import holm
from dptune.cli import main as _main
from dptune.config import parse_experiment
from dptune.errors import DptuneError
from dptune.studies import run_seeds_study
from dptune.studies.seeds.runs import _CACHE_COLUMNS
from dptune.studies.seeds.settings import (
    SeedSettings,
    default_config,
    load_seed_experiment,
    resolve_configs,
    split_seeds,
)
from dptune.studies.seeds.stats import (
    PER_SEED_COLUMNS,
    grid_stability,
    holm_over_cells,
    kendall_table,
    pct_of_mean,
    per_seed_table,
    pooled_tests,
    summarize,
)

ROOT = Path(__file__).resolve().parents[3]




# ------------------------------------------------------------------ % of mean


def test_pct_of_mean_sums_to_100_n() -> None:
    rng = np.random.default_rng(1)
    for n in (2, 5, 20):
        v = rng.uniform(0.1, 0.5, n)
        pct = pct_of_mean(v)
        assert pct.sum() == pytest.approx(100.0 * n)
        assert pct.mean() == pytest.approx(100.0)
        assert pct == pytest.approx(100 * v / v.mean())
    assert np.isnan(pct_of_mean(np.zeros(3))).all()


def _cache_frame(rng: np.random.Generator, n_seeds: int = 6) -> pd.DataFrame:
    """A fake cache: hold-out one fold, CV three folds, two metrics, two cutoffs."""
    rows = []
    for i in range(n_seeds):
        for split, folds in (("holdout", ["0"]), ("cv", ["0", "1", "2"])):
            for f in folds:
                for m in ("ndcg", "precision"):
                    for c in (1, 10):
                        rows.append(("alg", 0, split, i, 1000 + i, f, 7, m, c,
                                     rng.uniform(0.2, 0.3), 50, 0.1, 0.1))
    return pd.DataFrame(rows, columns=_CACHE_COLUMNS)


def test_per_seed_table_cv_is_fold_mean_and_pct_mean_is_100() -> None:
    cache = _cache_frame(np.random.default_rng(2))
    ps = per_seed_table(cache, "toy")
    assert list(ps.columns) == PER_SEED_COLUMNS
    g = ps.groupby(["algorithm", "split", "metric", "cutoff"])["pct_of_mean"]
    assert np.allclose(g.mean(), 100.0)
    assert np.allclose(g.sum(), 100.0 * 6)
    want = cache[(cache.split == "cv") & (cache.seed_index == 2) & (cache.metric == "ndcg")
                 & (cache.cutoff == 10)]["value"].mean()
    got = ps[(ps.split == "cv") & (ps.seed_index == 2) & (ps.metric == "ndcg") & (ps.cutoff == 10)]
    assert got["value"].iloc[0] == pytest.approx(want)


def test_summary_uses_mann_whitney_on_absolute_deviations() -> None:
    ps = per_seed_table(_cache_frame(np.random.default_rng(3), n_seeds=8), "toy")
    summ = summarize(ps)
    assert len(summ) == 4
    for r in summ.itertuples(index=False):
        sel = ps[(ps.metric == r.metric) & (ps.cutoff == r.cutoff)]
        ho = sel.loc[sel.split == "holdout", "pct_of_mean"].to_numpy()
        cv = sel.loc[sel.split == "cv", "pct_of_mean"].to_numpy()
        res = sps.mannwhitneyu(np.abs(ho - 100), np.abs(cv - 100), alternative="two-sided")
        assert r.mwu_p == pytest.approx(res.pvalue)
        assert r.mwu_u == pytest.approx(res.statistic)
        # not the signed values, not a paired test
        assert r.holdout_min_pct == pytest.approx(ho.min())
        assert r.holdout_max_pct == pytest.approx(ho.max())
        assert r.holdout_range == pytest.approx(ho.max() - ho.min())
        assert r.cv_max_abs_dev == pytest.approx(np.abs(cv - 100).max())
    # one family: every cell of the study, Holm-adjusted by the one implementation
    assert summ["p_holm"].to_numpy() == pytest.approx(holm(summ["mwu_p"].to_numpy()))
    assert (summ["holm_family"] == 4).all()


def test_a_p_value_next_to_alpha_is_printed_on_its_side() -> None:
    """The summary table bolds a Holm-adjusted p < 0.05: 0.04986 is printed 0.0499 (bold), not
    0.050; 0.0502 is printed 0.0502 (not bold)."""
    from dptune.studies.seeds.report import summary_table

    summ = summarize(per_seed_table(_cache_frame(np.random.default_rng(3), n_seeds=8), "toy"))
    summ = summ.iloc[:2].assign(p_holm=[0.04986, 0.0502])
    md = summary_table(summ, 8).to_markdown()
    assert "**0.0499**" in md and "| 0.0502 |" in md and "0.050 " not in md


def test_significance_is_claimed_by_the_holm_adjusted_p() -> None:
    """Raw p-values 0.01, 0.03, 0.04 and 0.5 over a study of 4 cells: three are below 0.05, but
    Holm-adjusted (0.04, 0.09, 0.09, 0.5) only the first is, so the table bolds one p and the
    text counts one significant cell (it bolded and counted three, unadjusted)."""
    from dptune.studies.seeds.report import _deviation_section, summary_table

    ps = per_seed_table(_cache_frame(np.random.default_rng(3), n_seeds=8), "toy")
    summ = holm_over_cells(summarize(ps).assign(mwu_p=[0.01, 0.03, 0.04, 0.5]))
    assert summ["p_holm"].to_numpy() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert summ["mwu_p"].tolist() == [0.01, 0.03, 0.04, 0.5]  # the raw p is kept
    assert (summ["holm_family"] == 4).all()
    # a cell without a p-value is left out of the family
    nan = holm_over_cells(summ.assign(mwu_p=[0.01, np.nan, 0.04, 0.5]))
    assert nan["p_holm"].iloc[1] != nan["p_holm"].iloc[1] and (nan["holm_family"] == 3).all()
    assert nan["p_holm"].iloc[[0, 2, 3]].to_numpy() == pytest.approx([0.03, 0.08, 0.5])

    tab = summary_table(summ, 8)
    md = tab.to_markdown()
    assert md.count("**0.040**") == 1 and "| 0.090 |" in md and "**0.090**" not in md
    assert "p (MWU, Holm)" in md
    assert ("Holm-adjusted over the 4 (algorithm, metric@N) cells of the study (family-wise "
            "error rate 5%), bold when < 0.05; the unadjusted p is mwu_p in "
            "seeds_summary.csv") in tab.caption
    pooled = pooled_tests(ps, ["ndcg"])
    text = "\n".join(_deviation_section(summ, pooled, ["ndcg", "precision"], SeedSettings(), 8))
    assert ("|deviation| differs significantly in 1 (Holm-adjusted p < 0.05 over the 4 cells, "
            "family-wise error rate 5%)") in text


def test_the_caption_names_what_the_table_holds() -> None:
    """The summary table holds every metric@N, novelty (EFD, EPC) too: its caption names the
    metrics by kind instead of calling every row accuracy."""
    from dptune.studies.seeds.report import summary_table

    summ = summarize(per_seed_table(_cache_frame(np.random.default_rng(3), n_seeds=8), "toy"))
    assert "on toy: accuracy (nDCG, Precision) of each of 8 data-split seeds" in \
        summary_table(summ, 8).caption
    summ = pd.concat([summ, summ.assign(metric="efd"), summ.assign(metric="epc")])
    assert ("on toy: accuracy (nDCG, Precision) and novelty (EFD, EPC) of each of 8 data-split "
            "seeds") in summary_table(summ, 8).caption
    # the splits are the study's: a 3-fold study with a 75/25 hold-out said "80/20 ... 5-fold"
    assert "random 80/20 hold-out (HO) vs 5-fold CV." in summary_table(summ, 8).caption
    other = SeedSettings(train_ratio=0.75, folds=3)
    assert "random 75/25 hold-out (HO) vs 3-fold CV." in summary_table(summ, 8, other).caption
    assert other.split_name("cv") == "3-fold CV" and other.split_name("holdout") == "Hold-out"


def test_mann_whitney_detects_a_clear_difference() -> None:
    rows = []
    for i in range(10):
        for split, dev in (("holdout", 10.0), ("cv", 1.0)):
            sign = 1 if i % 2 else -1
            rows.append(("d", "a", split, i, "ndcg", 1, 1.0, 100 + sign * dev * (1 + i / 10), i, 0))
    ps = pd.DataFrame(rows, columns=PER_SEED_COLUMNS)
    summ = summarize(ps)
    assert summ["mwu_p"].iloc[0] < 1e-3
    pooled = pooled_tests(ps, ["ndcg"])
    assert pooled["mwu_p"].iloc[0] == pytest.approx(summ["mwu_p"].iloc[0])


def test_the_pooled_test_is_over_seeds_not_pooled_values() -> None:
    """The pooled values of one seed share that seed's split, so the test takes one value per
    seed and split (the mean |dev| over the pooled metric@N) and compares the 10 hold-out seeds
    with the 10 CV seeds; it used to test the 40 + 40 pooled values as if independent."""
    ps = per_seed_table(_cache_frame(np.random.default_rng(4), n_seeds=10), "toy")
    pooled = pooled_tests(ps, ["ndcg", "precision"])
    r = pooled.iloc[0]
    assert (r.n_holdout, r.n_cv) == (40, 40)  # 2 metrics x 2 cutoffs x 10 seeds: descriptions
    assert (r.n_seeds_holdout, r.n_seeds_cv) == (10, 10)  # the test's n
    dev = ps.assign(d=(ps["pct_of_mean"] - 100).abs())
    means = {s: dev[dev.split == s].groupby("seed_index")["d"].mean().to_numpy()
             for s in ("holdout", "cv")}
    res = sps.mannwhitneyu(means["holdout"], means["cv"], alternative="two-sided")
    assert r.mwu_p == pytest.approx(res.pvalue) and r.mwu_u == pytest.approx(res.statistic)
    assert 0 <= r.mwu_u <= 10 * 10
    assert r.holdout_median_seed_mean_abs_dev == pytest.approx(np.median(means["holdout"]))
    # the paper's descriptions stay over the pooled values
    assert r.holdout_max_abs_dev == pytest.approx(dev[dev.split == "holdout"]["d"].max())
    assert r.cv_median_abs_dev == pytest.approx(dev[dev.split == "cv"]["d"].median())


# ------------------------------------------------------------------ Kendall tau and stability


def test_kendall_tau_on_a_hand_made_case() -> None:
    metrics = ["ndcg", "precision", "recall", "mrr"]
    dps = {0: [1.0, 2.0, 3.0, 4.0], 1: [1.0, 2.0, 4.0, 3.0], 2: [4.0, 3.0, 2.0, 1.0]}
    rows = [("d", "a", s, m, 10, v) for s, vals in dps.items() for m, v in zip(metrics, vals, strict=True)]
    grid = pd.DataFrame(rows, columns=["dataset", "algorithm", "seed_index", "metric", "cutoff", "dp_per_25"])
    kt = kendall_table(grid)
    at10 = kt[kt.cutoff == "10"].set_index(["seed_a", "seed_b"])["tau"]
    assert at10[(0, 1)] == pytest.approx(4 / 6)  # one discordant pair of six
    assert at10[(0, 2)] == pytest.approx(-1.0)
    assert at10[(1, 2)] == pytest.approx(-4 / 6)
    assert set(kt.cutoff) == {"10", "all"}
    assert len(kt) == 6


def test_grid_stability_counts_best_configs() -> None:
    grid = pd.DataFrame({
        "dataset": "d", "algorithm": "a", "seed_index": [0, 1, 2, 0, 1, 2],
        "metric": ["ndcg"] * 3 + ["recall"] * 3, "cutoff": 10,
        "best_config_id": [3, 3, 5, 1, 2, 3], "best_params": ["k=3", "k=3", "k=5", "k=1", "k=2", "k=3"],
        "dp_per_25": [1.0, 2.0, 1.0, 2.0, 1.0, 3.0], "dp_rank": [1, 2, 1, 2, 1, 2], "n_pairs": 6})
    st = grid_stability(grid).set_index("metric")
    assert st.loc["ndcg", "modal_best_config"] == 3
    assert st.loc["ndcg", "modal_share"] == pytest.approx(2 / 3)
    assert st.loc["recall", "n_distinct_best"] == 3
    assert st.loc["recall", "modal_best_config"] == 1  # all tie: the lowest id
    assert st.loc["ndcg", "top_share"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------ settings and configurations


def test_default_config_is_the_grid_middle(tmp_path: Path) -> None:
    exp, st = load_seed_experiment(_exp(tmp_path))
    chosen = resolve_configs(exp, {})
    assert chosen["userknn"][1] == {"k": 20}  # [10, 20, 40]: the middle
    cid, cfg = chosen["bpr-mf"]
    assert (cfg["factors"], cfg["iterations"], cfg["learning_rate"]) == (8, 1, 0.05)
    assert cfg["user_reg"] == pytest.approx(0.05 * 0.05)
    assert exp.grids["bpr-mf"].configs()[cid] == cfg
    chosen = resolve_configs(exp, {"userknn": 2, "bpr-mf": {"factors": 16, "learning_rate": 0.2}})
    assert chosen["userknn"] == (2, {"k": 40})
    assert chosen["bpr-mf"][0] == -1 and chosen["bpr-mf"][1]["item_reg"] == pytest.approx(0.001)
    with pytest.raises(DptuneError) as err:
        resolve_configs(exp, {"userknn": 99})
    assert str(err.value) == (f"{exp.source}: seeds.configs.userknn: config_id 99 is not in 0..2 "
                              "(the configurations of the grid of userknn)")
    with pytest.raises(DptuneError, match="seeds.configs.bpr-mf.alpha"):
        resolve_configs(exp, {"bpr-mf": {"alpha": 1}})
    with pytest.raises(DptuneError) as err:
        resolve_configs(exp, {"als": 1})
    assert str(err.value) == (f"{exp.source}: seeds.configs.als: no algorithm named 'als' in "
                              f"{exp.source} (userknn, bpr-mf)")


def test_settings_show_hyperparameters_to_six_digits(tmp_path: Path) -> None:
    """The settings row shows a configuration's values as every dptune table does
    (``display_value``: 0.05000097370407906 is 0.050001), not the full float."""
    from dptune.studies.seeds.report import _settings_section
    from dptune.studies.seeds.runs import SeedPlan

    exp, st = load_seed_experiment(_exp(tmp_path))
    chosen = resolve_configs(exp, {"bpr-mf": {"learning_rate": 0.05000097370407906}})
    plan = SeedPlan(exp=exp, settings=st, configs=chosen, seeds=(1, 2), grid_algorithms=(),
                    grid_seeds=0, cache=tmp_path)
    trials = pd.DataFrame({"algorithm": ["userknn"], "split": ["holdout"], "fit_seconds": [1.0]})
    text = "\n".join(_settings_section(plan, "toy", trials))
    assert "BPR-MF: factors=8, iterations=1, learning_rate=0.050001 (not in the grid)" in text
    assert "0.05000097" not in text


def test_seed_table_is_validated(tmp_path: Path) -> None:
    exp, st = load_seed_experiment(_exp(tmp_path, "[seeds]\nn_seeds = 4\n[seeds.configs]\nuserknn = 1\n"))
    assert st.n_seeds == 4 and st.configs == {"userknn": 1}
    with pytest.raises(DptuneError, match="seeds.n_sedes"):
        load_seed_experiment(_exp(tmp_path, "[seeds]\nn_sedes = 4\n"))
    with pytest.raises(DptuneError, match="seeds.train_ratio"):
        load_seed_experiment(_exp(tmp_path, "[seeds]\ntrain_ratio = 1.5\n"))


def test_split_seeds_are_stable_prefixes(tmp_path: Path) -> None:
    exp, _ = load_seed_experiment(_exp(tmp_path))
    a, b = split_seeds(exp, 3), split_seeds(exp, 6)
    assert a == b[:3] and len(set(b)) == 6
    other = parse_experiment({**{"name": "x", "seed": 4}, "algorithms": [
        {"name": "userknn", "type": "userknn", "grid": f"{ROOT}/grids/quickstart-knn.toml"}]})
    assert split_seeds(other, 3) != a


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    d = tmp_path_factory.mktemp("seeds")
    cfg = _exp(d, "[seeds]\nn_seeds = 2\nfolds = 3\ngrid_algorithms = [\"userknn\"]\n")
    files = run_seeds_study(cfg, out_dir=d / "out", cache_dir=d / "cache", jobs=1,
                                  progress=False)
    return d, files


def test_end_to_end_writes_every_file(tiny_study) -> None:
    d, files = tiny_study
    names = {p.name for p in files}
    assert {"seeds_per_seed.csv", "seeds_summary.csv", "seeds_summary.md", "seeds_summary.tex",
            "seeds_grid.csv", "seeds_kendall.csv", "seeds_figure.png", "seeds_figure.svg",
            "seeds_report.md", "seeds_trials.csv", "seeds_pooled.csv",
            "seeds_grid_stability.csv"} <= names
    assert all(p.exists() and p.stat().st_size > 0 for p in files)
    ps = pd.read_csv(d / "out" / "seeds_per_seed.csv")
    assert list(ps.columns) == PER_SEED_COLUMNS
    assert set(ps.split) == {"holdout", "cv"} and set(ps.algorithm) == {"userknn", "bpr-mf"}
    assert ps.seed.nunique() == 2
    g = ps.groupby(["algorithm", "split", "metric", "cutoff"])["pct_of_mean"]
    assert np.allclose(g.sum(), 200.0)
    trials = pd.read_csv(d / "out" / "seeds_trials.csv")
    assert len(trials) == 2 * 2 * (1 + 3)  # seeds x algorithms x (hold-out + 3 folds)
    assert trials.model_seed.nunique() == len(trials)
    grid = pd.read_csv(d / "out" / "seeds_grid.csv")
    assert set(grid.algorithm) == {"userknn"} and grid.seed_index.nunique() == 2
    assert (grid.n_pairs == 3).all()  # every pair of the 3 configurations
    kt = pd.read_csv(d / "out" / "seeds_kendall.csv")
    assert len(kt) == 4  # one seed pair x (3 cutoffs + all)
    report = (d / "out" / "seeds_report.md").read_text()
    assert "Mann-Whitney" in report and "seeds_figure.png" in report
    summ = pd.read_csv(d / "out" / "seeds_summary.csv")
    assert {"mwu_p", "p_holm", "holm_family"} <= set(summ.columns)
    assert (summ["holm_family"] == len(summ)).all()
    pooled = pd.read_csv(d / "out" / "seeds_pooled.csv")
    assert (pooled["n_seeds_holdout"] == 2).all() and (pooled["n_seeds_cv"] == 2).all()
    assert "Holm-adjusted p < 0.05 over the" in report and "p (MWU over seeds)" in report
    assert "not independent): p" not in report
    # the LaTeX table's label names the experiment, as a report's tables do
    tex = (d / "out" / "seeds_summary.tex").read_text()
    assert "\\label{tab:tiny-seeds:seeds-summary}" in tex  # the experiment's name
    assert str(d) not in report  # the experiment is named without this machine's absolute path


def test_rerun_resumes_from_the_cache(tiny_study, monkeypatch) -> None:
    """Run again, the study reads every default run and grid part from its cache: no fold is
    split or trained again (a fold read now fails the test), no cached file is rewritten, and
    the report is the same."""
    import dptune.studies.seeds.runs as runs_module

    d, _ = tiny_study
    parts = sorted((d / "cache").rglob("*.parquet"))
    # the cache holds both kinds of work: 2 seeds x (hold-out, cv) default runs, and parts
    # of the grid part (else the checks below would compare nothing)
    assert sum(p.parent.name == "defaults" for p in parts) == 4, parts
    assert any("grid" in p.parts for p in parts), parts
    stamps = {p: p.stat().st_mtime_ns for p in parts}

    def no_fold(*args, **kwargs):
        raise AssertionError("a cached seed's folds were split (and trained) again")

    monkeypatch.setattr(runs_module, "seed_folds", no_fold)
    before = (d / "out" / "seeds_per_seed.csv").read_bytes()
    run_seeds_study(_exp(d, "[seeds]\nn_seeds = 2\nfolds = 3\ngrid_algorithms = [\"userknn\"]\n"),
                          out_dir=d / "out", cache_dir=d / "cache", progress=False)
    assert {p: p.stat().st_mtime_ns for p in parts} == stamps
    assert (d / "out" / "seeds_per_seed.csv").read_bytes() == before


def test_cli_main(tiny_study, capsys) -> None:
    d, _ = tiny_study
    cfg = _exp(d, "[seeds]\nn_seeds = 2\nfolds = 3\ngrid_algorithms = [\"userknn\"]\n")
    rc = _main(["seeds", str(cfg), "--reports", str(d / "cli"), "--results", str(d / "cache"),
                   "--no-progress"])
    assert rc == 0 and (d / "cli" / "seeds_report.md").exists()
    # the study's --results is a cache of its own stores, not a results directory: its
    # report may go inside it
    rc = _main(["seeds", str(cfg), "--reports", str(d / "cache" / "reports"), "--results",
                   str(d / "cache"), "--no-progress"])
    assert rc == 0 and (d / "cache" / "reports" / "seeds_report.md").exists()
    assert _main(["seeds", str(cfg), "--seeds", "1", "--reports", str(d / "cli")]) == 2
    assert _main(["seeds", str(d / "missing.toml")]) == 2
    assert "dptune:" in capsys.readouterr().err
    assert not os.path.exists(d / "cli" / "missing")


def test_even_grid_takes_the_lower_middle() -> None:
    exp = parse_experiment({"name": "x", "algorithms": [
        {"name": "userknn", "type": "userknn", "grid": f"{ROOT}/grids/quickstart-knn.toml"}]})
    assert default_config(exp, "userknn") == (2, {"k": 40})  # 10 20 [40] 80 160 320


# ------------------------------------------------------------------ checked before any work


@pytest.mark.parametrize(("extra", "flags", "start"), [
    pytest.param("[seeds]\nn_seeds = 2\nfolds = 200\n", [],
                 "{cfg}: seeds.folds: must be an integer from 2 to 127, got 200", id="folds-200"),
    pytest.param("[seeds]\nn_seeds = 2\ngrid_seeds = 1\n", [],
                 "{cfg}: seeds.grid_seeds: needs 0 (skip) or at least 2 seeds", id="file-grid-seeds"),
    pytest.param("[seeds]\nn_seeds = 2\n[seeds.configs]\nuserknn = 7\n", [],
                 "{cfg}: seeds.configs.userknn: config_id 7 is not in 0..2 (the configurations "
                 "of the grid of userknn)", id="file-config-id"),
    pytest.param("[seeds]\nn_seeds = 2\ngrid_algorithms = [\"userknn\", \"nope\"]\n", [],
                 "{cfg}: seeds.grid_algorithms: no algorithm named 'nope' in {cfg} (userknn)",
                 id="file-grid-unknown"),
    pytest.param("[seeds]\nn_seeds = 2\n[seeds.configs]\nnope = 1\n", [],
                 "{cfg}: seeds.configs.nope: no algorithm named 'nope' in {cfg} (userknn)",
                 id="file-config-unknown-algorithm"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--config-id", "userknn=0", "--config-id", "userknn=1"],
                 "--config-id: userknn: given twice (userknn=0 and userknn=1); give one "
                 "configuration per algorithm", id="config-id-twice"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--config-id", "userknn=99"],
                 "--config-id: userknn: config_id 99 is not in 0..2 (the configurations of the "
                 "grid of userknn)", id="config-id-not-in-grid"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--config-id", "nope=1"],
                 "--config-id: nope: no algorithm named 'nope' in {cfg} (userknn)",
                 id="config-id-unknown-algorithm"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--grid", "userknn,nope"],
                 "--grid: no algorithm named 'nope' in {cfg} (userknn)", id="grid-unknown"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--grid", "userknn,userknn"],
                 "--grid: names userknn twice; give each algorithm once", id="grid-twice"),
    pytest.param("[seeds]\nn_seeds = 2\n", ["--grid-seeds", "1"],
                 "seeds: argument --grid-seeds: needs 0 (skip) or at least 2 seeds",
                 id="grid-seeds-1"),
    pytest.param("[seeds]\nn_seeds = 2\ngrid_algorithms = [\"userknn\", \"userknn\"]\n", [],
                 "{cfg}: seeds.grid_algorithms: names userknn twice; give each algorithm once",
                 id="file-grid-twice"),
    pytest.param("[seeds]\nn_seeds = 2\nfigure_metrics = [\"ndcg\", \"ndcg\"]\n", [],
                 "{cfg}: seeds.figure_metrics: names ndcg twice; give each metric once",
                 id="file-figure-metrics-twice"),
    pytest.param("[seeds]\nn_seeds = 2\nfigure_metrics = [\"ndcg\", \"NDCG\"]\n", [],
                 "{cfg}: seeds.figure_metrics: names ndcg twice; give each metric once",
                 id="file-figure-metrics-twice-in-two-cases"),
    pytest.param("[seeds]\nn_seeds = 2\nfigure_metrics = []\n", [],
                 "{cfg}: seeds.figure_metrics: names no metric; the figure and the pooled test "
                 "need at least one", id="file-figure-metrics-empty"),
])
def test_seeds_checks_everything_before_any_work(tmp_path, capsys, monkeypatch, extra, flags,
                                                  start) -> None:
    """A bad ``[seeds]`` setting or flag is one line naming the file and key, or the flag
    (``--config-id uknn=99`` named ``seeds.configs.uknn`` of the file; the same algorithm given
    twice silently kept the last), exit 2, before anything is trained or written
    (``folds = 200`` wrote the first seed's hold-out results before failing)."""
    cfg = _exp(tmp_path, extra, bpr=False)
    monkeypatch.chdir(tmp_path)  # the default results and reports folders would land here
    assert _main(["seeds", str(cfg), "--results", str(tmp_path / "R"), "--reports",
                     str(tmp_path / "P"), "--no-progress", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptune: " + start.format(cfg=cfg)) and "\n" not in err, err
    assert not any((tmp_path / d).exists() for d in ("R", "P", "results", "reports"))


def test_a_cutoff_beyond_the_datas_items_is_refused_before_any_work(tmp_path, capsys,
                                                                      monkeypatch) -> None:
    """As ``dptune run`` refuses it: a top-N list of every item scores every configuration
    the same; one line naming the file and ``evaluation.cutoffs``, nothing written."""
    cfg = _exp(tmp_path, "[seeds]\nn_seeds = 2\n", bpr=False)
    cfg.write_text(cfg.read_text().replace("cutoffs = [1, 5, 10]", "cutoffs = [10, 20000]"))
    monkeypatch.chdir(tmp_path)
    assert _main(["seeds", str(cfg), "--results", str(tmp_path / "R"), "--reports",
                  str(tmp_path / "P"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dptune: {cfg}: evaluation.cutoffs: 20,000 is not below the ") \
        and "\n" not in err, err
    assert not any((tmp_path / d).exists() for d in ("R", "P", "results", "reports"))


@pytest.mark.parametrize(("extra", "flags", "file_key", "flag_at", "problem"), [
    pytest.param('grid_algorithms = ["nope"]\n', ["--grid", "nope"], "seeds.grid_algorithms",
                 "--grid", "no algorithm named 'nope' in {cfg} (userknn)",
                 id="unknown-algorithm-grid"),
    pytest.param("[seeds.configs]\nnope = 1\n", ["--config-id", "nope=1"], "seeds.configs.nope",
                 "--config-id: nope", "no algorithm named 'nope' in {cfg} (userknn)",
                 id="unknown-algorithm-config"),
    pytest.param("[seeds.configs]\nuserknn = 99\n", ["--config-id", "userknn=99"],
                 "seeds.configs.userknn", "--config-id: userknn",
                 "config_id 99 is not in 0..2 (the configurations of the grid of userknn)",
                 id="config-id-out-of-range"),
    pytest.param('grid_algorithms = ["userknn", "userknn"]\n', ["--grid", "userknn,userknn"],
                 "seeds.grid_algorithms", "--grid", "names userknn twice; give each algorithm once",
                 id="algorithm-twice-grid"),
    pytest.param("grid_seeds = 1\n", ["--grid-seeds", "1"], "seeds.grid_seeds",
                 "seeds: argument --grid-seeds", "needs 0 (skip) or at least 2 seeds",
                 id="grid-seeds-1"),
    pytest.param("grid_seeds = 20000\n", ["--grid-seeds", "20000"], "seeds.grid_seeds",
                 "seeds: argument --grid-seeds",
                 "must be an integer from 0 to 10,000, got 20000", id="grid-seeds-too-many"),
])
def test_file_and_flag_share_one_rule(tmp_path, capsys, monkeypatch, extra, flags, file_key,
                                      flag_at, problem) -> None:
    """One rule checks a value from the ``[seeds]`` table and the flag that overrides it: the
    message names the file key or the flag, and the problem after it is the same text (also
    where argparse refuses the flag, ``--grid-seeds``)."""
    monkeypatch.chdir(tmp_path)
    base = ["--results", str(tmp_path / "R"), "--reports", str(tmp_path / "P"), "--no-progress"]
    errs = {}
    for route, table, more in (("file", extra, []), ("flag", "", flags)):
        cfg = _exp(tmp_path, "[seeds]\nn_seeds = 2\n" + table, bpr=False)
        assert _main(["seeds", str(cfg), *base, *more]) == 2, route
        errs[route] = capsys.readouterr().err.strip()
        assert "\n" not in errs[route], errs[route]
    assert not any((tmp_path / d).exists() for d in ("R", "P", "results", "reports"))
    cfg = tmp_path / "tiny.toml"
    problem = problem.format(cfg=cfg)
    assert errs["file"] == f"dptune: {cfg}: {file_key}: {problem}"
    # a flag argparse refuses ends with where its help is
    flag = errs["flag"].removesuffix(" (see dptune seeds --help)")
    assert flag == f"dptune: {flag_at}: {problem}"


def test_a_number_of_seeds_beyond_the_cap_is_refused_before_any_work(tmp_path, capsys,
                                                                    monkeypatch) -> None:
    """``--seeds 99999999999`` listed its seeds first and filled the memory, with no line
    printed; the file's ``n_seeds`` and the flag are refused above 10,000, one line each."""
    monkeypatch.chdir(tmp_path)
    base = ["--results", str(tmp_path / "R"), "--reports", str(tmp_path / "P"), "--no-progress"]
    cfg = _exp(tmp_path, "[seeds]\nn_seeds = 20000\n", bpr=False)
    assert _main(["seeds", str(cfg), *base]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dptune: {cfg}: seeds.n_seeds: must be an integer from 2 to 10,000, got 20000")
    cfg = _exp(tmp_path, "[seeds]\nn_seeds = 2\n", bpr=False)
    assert _main(["seeds", str(cfg), *base, "--seeds", "99999999999"]) == 2
    assert capsys.readouterr().err.strip() == (
        "dptune: --seeds: must be an integer from 2 to 10,000, got 99999999999")
    assert not any((tmp_path / d).exists() for d in ("R", "P", "results", "reports"))


@pytest.mark.parametrize("where", [".", "per_user.parquet"])
def test_results_in_a_sweeps_store_are_refused(tiny_swept, tmp_path, capsys, where) -> None:
    """``--results`` a sweep's results directory (or a folder in it) wrote the study's stores
    into that store; one line naming the flag, the store unchanged."""
    import shutil

    from conftest import tree_digest

    root = tmp_path / "store"
    shutil.copytree(tiny_swept / "results", root)
    before = tree_digest(root)
    cfg = _exp(tmp_path, "[seeds]\nn_seeds = 2\n", bpr=False)
    assert _main(["seeds", str(cfg), "--results", str(root / where), "--reports",
                  str(tmp_path / "P"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dptune: --results: {root / where} ") and "\n" not in err, err
    assert "results directory" in err and "give a path outside it" in err
    assert tree_digest(root) == before
    assert not (tmp_path / "P").exists()


def test_the_default_folders_are_checked_before_any_work(tmp_path, capsys, monkeypatch) -> None:
    """Without ``--results`` / ``--reports`` the default folders are checked as the given ones
    are, before the study computes anything: a file where ``reports/`` goes is one line."""
    cfg = _exp(tmp_path, "[seeds]\nn_seeds = 2\n", bpr=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("a file")
    assert _main(["seeds", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptune: --reports: reports/seeds-tiny-seeds is not writable: "), err
    assert not (tmp_path / "results").exists()


def test_analyze_of_a_seed_stores_grid_part_is_one_line(tiny_study, capsys) -> None:
    """A store of the study's grid part is a result store whose manifest describes one seed's
    CV folds, not a sweep: ``dptune analyze``, ``status`` and ``slices`` on it are one line
    pointing at ``dptune seeds`` (a KeyError of the missing data set; a missing ``name``), and
    write nothing."""
    d, _ = tiny_study
    store = next((d / "cache").rglob("manifest.json")).parent
    for argv in (["analyze", str(store), "--reports", str(d / "rep"), "--no-progress"],
                 ["status", str(store)], ["slices", str(store), "--reports", str(d / "rep")]):
        assert _main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"dptune: {store}: holds a part of a study (seed-study grid part")
        assert "dptune seeds" in err and "\n" not in err
        assert not (d / "rep").exists()


def test_figure_metrics_are_case_insensitive_and_each_list_names_once(tmp_path) -> None:
    """``figure_metrics = ["NDCG"]`` was refused as "not an evaluated metric" while metric
    names are case-insensitive everywhere else in dptune; a duplicate or an empty list was
    taken silently, and ``grid_algorithms`` named twice doubled the grid part's rows. The
    settings keep the vocabulary's names whatever the route (file, ``SeedSettings``), and each
    route refuses the duplicates and the empty list in one line naming the key."""
    from dptune.studies.seeds.settings import parse_seed_settings, validate_settings

    exp, st = load_seed_experiment(_exp(tmp_path, '[seeds]\nfigure_metrics = ["NDCG", '
                                               '" Precision"]\n'))
    assert st.figure_metrics == ("ndcg", "precision")
    given = SeedSettings(figure_metrics=["nDCG"])
    assert given.figure_metrics == ("ndcg",)
    validate_settings(exp, given)
    for bad, key, why in (
            (SeedSettings(figure_metrics=("ndcg", "NDCG")), "figure_metrics",
             "names ndcg twice; give each metric once"),
            (SeedSettings(figure_metrics=()), "figure_metrics",
             "names no metric; the figure and the pooled test need at least one"),
            (SeedSettings(grid_algorithms=("userknn", "bpr-mf", "userknn")), "grid_algorithms",
             "names userknn twice; give each algorithm once")):
        with pytest.raises(DptuneError) as err:
            validate_settings(exp, bad)
        assert str(err.value) == f"{exp.source}: seeds.{key}: {why}"
    with pytest.raises(DptuneError) as err:
        parse_seed_settings({"grid_algorithms": ["bpr-mf", "bpr-mf"]}, "x.toml")
    assert str(err.value) == ("x.toml: seeds.grid_algorithms: names bpr-mf twice; give each "
                              "algorithm once")
    # an empty grid list still skips the grid part
    assert parse_seed_settings({"grid_algorithms": []}, "x.toml").grid_algorithms == ()


def test_a_range_is_the_difference_of_its_extremes_as_printed() -> None:
    """HO 97.08 to 102.84 was printed with the range 5.75 (the raw 5.7536): 27 of 108 ranges
    of the committed table read as wrong subtractions. The bold still compares raw ranges."""
    from dptune.studies.seeds.report import summary_table

    row = {"dataset": "toy", "algorithm": "userknn", "metric": "ndcg", "cutoff": 1,
           "holdout_min_pct": 97.0838, "holdout_max_pct": 102.8374, "holdout_range": 5.7536,
           "cv_min_pct": 99.0, "cv_max_pct": 101.0, "cv_range": 2.0, "p_holm": 0.5,
           "holm_family": 1}
    cells = summary_table(pd.DataFrame([row]), 8).blocks[0].rows[0]
    assert [c.text for c in cells[2:8]] == ["97.08", "102.84", "5.76", "99.00", "101.00",
                                            "2.00"]
    assert cells[7].bold and not cells[4].bold


def test_the_default_figure_metrics_are_those_the_experiment_evaluates(tmp_path) -> None:
    """The default figure metrics were nDCG and Precision, checked as if the file named them:
    an experiment without Precision was refused for a key it never set. Unset, they are nDCG
    and Precision where evaluated, else the first two metrics; named, they are checked."""
    from dataclasses import replace

    from dptune.studies.seeds.settings import validate_settings

    exp, st = load_seed_experiment(_exp(tmp_path, ""))
    assert st.figure_metrics is None
    assert st.figure_metrics_of(["ndcg", "precision", "recall"]) == ["ndcg", "precision"]
    assert st.figure_metrics_of(["recall", "ndcg", "mrr"]) == ["ndcg"]
    assert st.figure_metrics_of(["recall", "mrr", "epc"]) == ["recall", "mrr"]
    no_precision = replace(exp, evaluation=replace(exp.evaluation, metrics=("ndcg", "recall")))
    validate_settings(no_precision, st)  # nothing was set, nothing is refused
    with pytest.raises(DptuneError, match="'precision' is not an evaluated metric"):
        validate_settings(no_precision, SeedSettings(figure_metrics=("precision",)))


def test_a_data_file_changed_in_place_gets_a_fresh_cache(tmp_path) -> None:
    """The cache key covered the ``[data]`` settings (the file's path), not the file's content:
    a rating added to the file gave the old data's numbers from the cache. The key now holds
    the digest of the ratings the study reads, so the changed file is computed afresh in a new
    cache directory: its numbers are those of a study of the new data in an empty cache."""
    from conftest import write_synthetic_ratings

    data = write_synthetic_ratings(tmp_path / "syn.csv", 60, 40, 25)
    (tmp_path / "knn.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    cfg = tmp_path / "syn.toml"
    cfg.write_text(f'name = "syn"\nseed = 3\n[data]\nsource = "{data}"\n[split]\n'
                   "min_user_interactions = 5\n[evaluation]\ncutoffs = [5, 10]\n"
                   f'[[algorithms]]\nname = "userknn"\ntype = "userknn"\n'
                   f'grid = "{tmp_path / "knn.toml"}"\n[seeds]\nn_seeds = 2\nfolds = 2\n'
                   "grid_seeds = 0\n")

    def study(cache: str) -> pd.DataFrame:
        run_seeds_study(cfg, out_dir=tmp_path / cache / "out", cache_dir=tmp_path / cache,
                        progress=False)
        return pd.read_csv(tmp_path / cache / "out" / "seeds_per_seed.csv")

    old = study("cache")
    ratings = pd.read_csv(data)
    seen = set(ratings.loc[ratings["user"] == 0, "item"])
    item = next(i for i in range(40) if i not in seen)
    with open(data, "a") as fh:  # one rating more for the first user
        fh.write(f"0,{item},5.0,{int(ratings['timestamp'].max()) + 1}\n")
    new = study("cache")
    assert len([d for d in (tmp_path / "cache").iterdir() if d.name != "out"]) == 2
    pd.testing.assert_frame_equal(new, study("fresh"))
    assert not new.equals(old)
