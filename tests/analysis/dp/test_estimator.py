"""The robust DP over a store, fold by fold (dptune.analysis.dp.estimator)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from dptune.analysis.dp import engine as dp
from dptune.analysis.dp import estimator as rp
from dptune.analysis.dp import stability as sb
from dptune.errors import input_error


class TinyStore:
    """6 configurations with real differences; nDCG@10 clean, Recall@10 = nDCG + heavy noise."""

    def __init__(self, n_users=200, folds=3, seed=0, identical=False):
        rng = np.random.default_rng(seed)
        self.v = {}
        for f in range(folds):
            base = rng.uniform(0.2, 0.6, n_users)[None, :] + 0.015 * np.arange(6)[:, None]
            nd = base + rng.normal(0, 0.1, (6, n_users))
            if identical:
                nd = np.repeat(nd[:1], 6, axis=0)
            self.v[("ndcg", str(f))] = nd
            self.v[("recall", str(f))] = nd + (0 if identical else rng.normal(0, 0.5, nd.shape))
        self.n_folds = folds

    def algorithms(self):
        return ["knn"]

    def configs(self, algorithm):
        return pd.DataFrame({"config_id": np.arange(6), "k": [10, 20, 40, 80, 160, 320]})

    def hyperparameters(self, algorithm):
        return ["k"]

    def folds(self, algorithm):
        return [str(f) for f in range(self.n_folds)]

    def metric_cutoffs(self, algorithm):
        return [("recall", 10), ("ndcg", 10)]

    def read_matrix(self, algorithm, metric, cutoff, fold, config_ids):
        if (metric, fold) not in self.v:  # as the real store: no results -> a one-line error
            raise input_error("store", f"{algorithm}/fold {fold}", "no results")
        x = self.v[(metric, fold)]
        return np.arange(x.shape[1]), x[np.asarray(config_ids)]


def test_all_pairs_mean_p_equals_paper_dp_per_pair_and_scipy():
    store = TinyStore()
    res, used = rp.robust_analysis(store, bootstrap=200, stability=3, seed=1)
    assert used == {"knn": 1}  # every pair used: another pair seed would give the same pairs
    t = res.table.set_index("metric")
    assert list(t.index) == ["ndcg", "recall"]  # vocabulary order
    assert int(t.at["ndcg", "n_pairs"]) == 15 == int(t.at["ndcg", "n_possible_pairs"])
    pa, pb = np.triu_indices(6, k=1)
    want = np.mean([st.ttest_rel(store.v[("ndcg", str(f))][pa], store.v[("ndcg", str(f))][pb],
                                 axis=1).pvalue.mean() for f in range(3)])
    assert t.at["ndcg", "mean_p"] == pytest.approx(want, abs=1e-12)
    assert t.at["ndcg", "dp_at_25"] == pytest.approx(25 * want)
    paper = dp.analyze(store, pairs=15, seed=1).dp.set_index(["scope", "metric"])
    assert paper.at[("all", "ndcg"), "dp"] / 15 == pytest.approx(t.at["ndcg", "mean_p"])
    assert t.at["ndcg", "ci_low"] <= t.at["ndcg", "dp_at_25"] <= t.at["ndcg", "ci_high"]
    # the interval is read from the replicates the ranking compares, all inside [0, 1]
    reps = res.replicates[("knn", "ndcg", 10)]
    assert np.all((reps > 0.0) & (reps < 1.0))
    assert (t.at["ndcg", "ci_low"], t.at["ndcg", "ci_high"]) == pytest.approx(
        tuple(25 * np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    assert set(res.ranking["repeat"]) == {0}
    c = sb.claims(res.ranking, 0.95).set_index(["metric_a", "metric_b"])
    assert bool(c.at[("ndcg", "recall"), "held"])
    assert c.at[("ndcg", "recall"), "repeats"] == 1
    again, _ = rp.robust_analysis(store, bootstrap=200, stability=3, seed=1)
    pd.testing.assert_frame_equal(res.table, again.table)
    pd.testing.assert_frame_equal(res.ranking, again.ranking)


def test_sampled_pairs_no_bootstrap_and_no_evidence():
    res, used = rp.robust_analysis(TinyStore(), pairs=10, bootstrap=0, stability=3, seed=1)
    assert used == {"knn": 3}  # a sampled scope: the claims must survive two more pair seeds
    t = res.table.set_index("metric")
    assert int(t.at["ndcg", "n_pairs"]) == 10 and int(t.at["ndcg", "n_possible_pairs"]) == 15
    assert res.ranking is None and np.isnan(t.at["ndcg", "ci_low"])
    dead, _ = rp.robust_analysis(TinyStore(identical=True), bootstrap=50, seed=1)
    assert dead.table["no_evidence"].all() and (dead.table["dp_at_25"] == 25.0).all()
    assert (dead.ranking["p_a_better"] == 0.0).all()


def test_stability_lowered_to_the_budget():
    run = dict(pairs=10, bootstrap=100, stability=5, seed=1)
    _, used = rp.robust_analysis(TinyStore(), **run, budget_s=0.0)
    assert used == {"knn": 1}
    _, used = rp.robust_analysis(TinyStore(), **run, budget_s=1e6)
    assert used == {"knn": 5}
    _, used = rp.robust_analysis(TinyStore(), **{**run, "pairs": 15}, budget_s=1e6)
    assert used == {"knn": 1}  # every pair: nothing else to draw


class TinyStoreWithTest(TinyStore):
    """TinyStore plus a test split where configuration 5 is clearly the best on nDCG@10."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.v[("ndcg", "test")] = 0.3 + 0.02 * np.arange(6)[:, None] + rng.normal(0, 0.05, (6, 300))

    def folds(self, algorithm):
        return [*super().folds(algorithm), "test"]  # the test split is never used for DP


def test_verdict_for_store_end_to_end():
    from dptune.analysis.verdict.build import verdict_for_store

    store = TinyStoreWithTest()
    res, _ = rp.robust_analysis(store, bootstrap=300, stability=3, seed=1)
    paper = dp.analyze(store, pairs=15, seed=1).dp
    best = pd.DataFrame({"algorithm": "knn", "metric": ["ndcg", "recall"], "cutoff": 10,
                         "config_id": [5, 1]})
    v = verdict_for_store(store, paper, res, alpha=0.05, best=best, primary=("ndcg", 10))
    r = v.iloc[0]
    assert r["recommended"] == "ndcg" and r["less_discriminative"] == "recall"
    assert r["stability_repeats"] == 1 and r["selected_configs"] == 2
    assert r["downstream_differ"] == "recall"  # config 1 is much worse than 5 on the test split
    assert "paired t-test over 300 test users" in r["text"]
    assert r["dominant_hyperparameter"] == ""  # one hyperparameter: no dominance analysis
    no_test = verdict_for_store(TinyStore(), paper, res, alpha=0.05, best=best,
                                primary=("ndcg", 10)).iloc[0]
    assert "not evaluated" in no_test["text"]


def _opts(**kw):
    from types import SimpleNamespace

    base = dict(bootstrap=100, stability=3, seed=1, alpha=0.05, test="t",
                pairs=1000, n_resamples=1000, min_fold_users=20)
    base.update(kw)
    return SimpleNamespace(**base)


def test_plan_finish_and_refusals():
    from dptune.analysis import route as rr
    from dptune.errors import DptuneError

    store = TinyStore()
    man = {"dataset": {"users": 200}}
    assert rr.plan_robust(store, _opts(pairs=10), man)["knn"].repeats == 3  # sampled
    passes = rr.plan_robust(store, _opts(), man)
    assert list(passes) == ["knn"] and passes["knn"].repeats == 1  # every pair
    paper = dp.analyze(store, pairs=15, seed=1)
    for f_i, fold in enumerate(store.folds("knn")):
        passes["knn"].add_fold(f_i, lambda m, c, ids, fold=fold: store.read_matrix("knn", m, c,
                                                                                    fold, ids))
    res = rr.finish_robust(passes, paper.pvalues, _opts())
    claims = sb.claims(res.ranking, 1.0 - _opts().alpha)
    assert len(res.table) == 2 and bool(claims.set_index("metric_b").at["recall", "held"])
    with pytest.raises(DptuneError, match="knn/fold 0: only 200 users"):
        rr.finish_robust(passes, paper.pvalues, _opts(min_fold_users=201))
    ann = rr.annotate_dp(paper.dp, paper.pvalues)
    assert list(ann.columns[: len(paper.dp.columns)]) == list(paper.dp.columns)
    pd.testing.assert_frame_equal(ann[paper.dp.columns], paper.dp)  # paper's columns unchanged
    assert np.allclose(ann["dp_per_pair"], paper.dp["dp"] / paper.dp["n_pairs"])
    assert np.allclose(ann["dp_per_25"], 25 * paper.dp["dp"] / paper.dp["n_pairs"])
    assert not ann["no_evidence"].any()
    dead = dp.analyze(TinyStore(identical=True), pairs=15, seed=1)
    assert rr.annotate_dp(dead.dp, dead.pvalues)["no_evidence"].all()


def test_fold_array_read_in_place_equals_read_matrix():
    """A FoldSlice's float32 array is read in place, with read_matrix's inner join of users."""
    from dptune.store._store import FoldSlice

    store = TinyStore()
    mcs = (("ndcg", 10), ("recall", 10))
    ids = np.arange(8)  # two configurations more than the algorithm's: rows are looked up
    res = {}
    for mode in ("fast", "slow"):
        rpass = rp.RobustPass("knn", np.arange(6), 3, mcs, bootstrap=50, repeats=2, seed=3)
        for f in range(3):
            vals = np.stack([np.vstack([store.v[(m, str(f))], np.ones((2, 200))])
                             for m, _ in mcs]).astype(np.float32)
            vals[0, 2, 5] = np.nan  # user 5 has no nDCG for configuration 2: left out of nDCG
            block = FoldSlice("knn", str(f), ids, mcs, np.arange(200), vals)
            if mode == "fast":
                rpass.add_fold(f, block.matrix)
            else:
                rpass.add_fold(f, lambda m, c, i, b=block: b.matrix(m, c, i))
        res[mode] = rpass.result()
    pd.testing.assert_frame_equal(res["fast"].table, res["slow"].table, rtol=1e-9)
    pd.testing.assert_frame_equal(res["fast"].ranking, res["slow"].ranking)


def _oracle_interval(store, metric, n_boot, seed, n_folds=3, n_configs=6):
    """The robust DP's replicates and 95% interval by a plain scipy bootstrap of the users:
    per fold, each user repeated as often as its group's weight (the pass's own draws, the same
    user with the same weight in every fold), every fold's differences moved to one centre per
    pair, the mean over the folds of k_f * mean_f (James-Stein k_f from scipy's t statistics),
    scipy's paired t-test per replicate; then the logit-scale basic interval."""
    from scipy import special

    from dptune.analysis.dp import bootstrap as rs
    from dptune.analysis.dp import scale as rb

    pa, pb = np.triu_indices(n_configs, k=1)
    point, raw, diffs, shrunk = [], np.zeros(n_boot), [], []
    for f in range(n_folds):
        x = store.v[(metric, str(f))]
        d = x[pa] - x[pb]
        n = d.shape[1]
        point.append(st.ttest_rel(x[pa], x[pb], axis=1).pvalue.mean())
        t = st.ttest_1samp(d, 0.0, axis=1).statistic
        k = np.sqrt(max(0.0, 1.0 - len(pa) / (np.sum(t**2) * (n - 3) / (n - 1))))
        diffs.append(d)
        shrunk.append(k * d.mean(axis=1))
    centre = np.mean(shrunk, axis=0)
    for f, d in enumerate(diffs):
        n = d.shape[1]
        shifted = d - d.mean(axis=1, keepdims=True) + centre[:, None]
        ids, _ = store.read_matrix("knn", metric, 10, str(f), np.arange(n_configs))
        perm, starts, w = rs.user_draws(ids, n_boot, rb.bootstrap_seed(seed, 0), groups=n)
        group = np.empty(n, dtype=int)  # the group of each user (column)
        for g in range(len(starts) - 1):
            group[perm[starts[g]:starts[g + 1]]] = g
        for r in range(n_boot):  # each user as many times as its group's weight
            users = np.repeat(np.arange(n), w[r, group].astype(int))
            # the pass's t statistic of the weighted users, on the fold's n - 1 degrees of
            # freedom (the replicate's size sum_g w_g |g| varies when the groups differ in size)
            t_r = st.ttest_1samp(shifted[:, users], 0.0, axis=1).statistic
            raw[r] += (2.0 * special.stdtr(n - 1, -np.abs(t_r))).mean() / n_folds
    est = float(np.mean(point))
    logit = lambda v: special.logit(np.clip(v, 1e-12, 1 - 1e-12))  # noqa: E731
    mapped = special.expit(logit(est) - (logit(raw) - logit(raw.mean())))
    return est, mapped, tuple(25 * np.quantile(mapped, [0.025, 0.975]))


def test_interval_and_ranking_equal_a_plain_scipy_bootstrap():
    store = TinyStore(n_users=60)
    res, _ = rp.robust_analysis(store, bootstrap=40, stability=1, seed=2, groups=60)
    t = res.table.set_index("metric")
    mapped = {}
    for m in ("ndcg", "recall"):
        est, mapped[m], (lo, hi) = _oracle_interval(store, m, 40, 2)
        assert t.at[m, "mean_p"] == pytest.approx(est, abs=1e-12)
        # the pass reads p from its t tail table (error < 1e-6): equal to that precision
        assert np.allclose(res.replicates[("knn", m, 10)], mapped[m], atol=2e-5)
        assert (t.at[m, "ci_low"], t.at[m, "ci_high"]) == pytest.approx((lo, hi), abs=5e-4)
        assert 0.0 <= t.at[m, "ci_low"] <= t.at[m, "ci_high"] <= 25.0
    r = res.ranking.set_index(["metric_a", "metric_b"])
    assert r.at[("ndcg", "recall"), "p_a_better"] == np.mean(mapped["ndcg"] < mapped["recall"])


def test_pairs_resampled_only_when_sampled():
    """Every pair used: the pairs are fixed (only users are resampled); a sample of the pairs:
    the rescaled pair weights widen the interval."""
    store = TinyStore()
    full = rp.RobustPass("knn", np.arange(6), 3, [("ndcg", 10)], bootstrap=50, seed=1)
    assert np.array_equal(full._mult[0], np.ones((50, 15)))
    part = rp.RobustPass("knn", np.arange(6), 3, [("ndcg", 10)], pairs=5, bootstrap=50,
                         seed=1)
    assert part._mult[0].shape == (50, 5) and not np.all(part._mult[0] == 1.0)
    for f in range(3):
        for rpass in (full, part):
            rpass.add_fold(f, lambda m, c, i, f=f: store.read_matrix("knn", m, c, str(f), i))
    for rpass in (full, part):
        row = rpass.result().table.iloc[0]
        assert 0.0 <= row["ci_low"] <= row["dp_at_25"] <= row["ci_high"] <= 25.0
