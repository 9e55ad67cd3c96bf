"""The one fold loop over a store: DP, its interval, the stability repeats and the paired
replicates (dptune.analysis.dp.fold_loop)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from dptune.analysis.dp import fold_loop as fl
from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.options import AnalysisOptions
from dptune.errors import input_error


def run(store, **options):
    """The fold loop under ``options`` (seed 1, no stability repeats unless asked for)."""
    return fl.run_fold_loop(store, AnalysisOptions(**{"seed": 1, "stability": 0, **options}))


def scope_run(store, metric_cutoffs, *, pairs=None, n_boot=50, seed=1, repeats=1,
              n_configs=6):
    """A standalone :class:`ScopeRun` of scope all over ``store``'s folds."""
    from dptune.analysis.dp.pairs import sample_pairs, scope_seed

    ids = np.arange(n_configs)
    n = pairs or n_configs * (n_configs - 1) // 2
    p = [sample_pairs(ids, n, scope_seed(seed, "all" if k == 0 else f"all|robust|{k}"))
         for k in range(repeats)]
    return fl.ScopeRun(fl.ScopePlan("knn", "all", p, n_configs * (n_configs - 1) // 2, 3,
                                    metric_cutoffs, test=paired_test("t"), bootstrap=n_boot,
                                    seed=seed))


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
    est = run(store, bootstrap=200, stability=3)
    t = est.table[est.table["scope"] == "all"].set_index("metric")
    assert list(t.index) == ["ndcg", "recall"]  # vocabulary order
    assert (t["repeats"] == 1).all()  # every pair used: another pair seed gives the same pairs
    assert int(t.at["ndcg", "n_pairs"]) == 15 == int(t.at["ndcg", "n_possible_pairs"])
    pa, pb = np.triu_indices(6, k=1)
    want = np.mean([st.ttest_rel(store.v[("ndcg", str(f))][pa], store.v[("ndcg", str(f))][pb],
                                 axis=1).pvalue.mean() for f in range(3)])
    assert t.at["ndcg", "mean_p"] == pytest.approx(want, abs=1e-12)
    assert t.at["ndcg", "dp_per_25"] == pytest.approx(25 * want)
    assert t.at["ndcg", "dp_sum"] / 15 == pytest.approx(t.at["ndcg", "mean_p"])
    assert t.at["ndcg", "ci_low"] <= t.at["ndcg", "dp_per_25"] <= t.at["ndcg", "ci_high"]
    # the replicates the comparisons use lie inside [0, 1]; the interval, read from the same
    # raw replicates on the arcsine scale, is checked number by number against a plain scipy
    # bootstrap in test_interval_and_replicates_equal_a_plain_scipy_bootstrap
    (mean0, reps), = est.draws[("knn", "all", "ndcg", 10)]
    assert mean0 == t.at["ndcg", "mean_p"]
    assert np.all((reps > 0.0) & (reps < 1.0))
    assert 0.0 <= t.at["ndcg", "ci_low"] < t.at["ndcg", "ci_high"] <= 25.0
    c = sb.family_claims({0: {m: est.draws[("knn", "all", m, 10)][0]
                              for m in ("ndcg", "recall")}}, 0.05).set_index(
        ["metric_a", "metric_b"])
    assert bool(c.at[("ndcg", "recall"), "held"])
    assert c.at[("ndcg", "recall"), "repeats"] == 1
    again = run(store, bootstrap=200, stability=3)
    pd.testing.assert_frame_equal(est.table, again.table)
    for key, r in est.draws.items():
        assert np.array_equal(r[0][1], again.draws[key][0][1])


def test_sampled_pairs_no_bootstrap_and_no_evidence():
    est = run(TinyStore(), pairs=10, bootstrap=0, stability=3)
    t = est.table.set_index("metric")
    assert int(t.at["ndcg", "n_pairs"]) == 10 and int(t.at["ndcg", "n_possible_pairs"]) == 15
    assert est.draws == {} and np.isnan(t.at["ndcg", "ci_low"])
    assert (t["repeats"] == 1).all()  # no bootstrap: no claim for the repeats to check
    dead = run(TinyStore(identical=True), bootstrap=50)
    assert dead.table["no_evidence"].all() and (dead.table["dp_per_25"] == 25.0).all()


def test_stability_repeats_of_a_sampled_scope_lowered_to_the_budget(monkeypatch):
    est = run(TinyStore(), pairs=10, bootstrap=100, stability=5)
    assert set(est.table["repeats"]) == {5}  # a sampled scope: claims must survive 4 more seeds
    assert len(est.draws[("knn", "all", "ndcg", 10)]) == 5
    assert set(run(TinyStore(), pairs=10, bootstrap=100, stability=5,
                   stability_seconds=0.0).table["repeats"]) == {1}
    assert set(run(TinyStore(), pairs=15, bootstrap=100, stability=5,
                   stability_seconds=1e6).table["repeats"]) == {1}  # every pair: no other set


def test_every_scope_and_metric_shares_the_user_draws():
    """The replicates of scope all and of the one-at-a-time scopes come from the same user
    draws, so that they compare pair by pair; each scope's interval holds its estimate."""
    store = TinyStore()
    store.configs = lambda algorithm: pd.DataFrame({  # two hyperparameters: only:k, only:w
        "config_id": np.arange(6), "k": [10, 20, 40, 10, 20, 40], "w": [0, 0, 0, 1, 1, 1]})
    store.hyperparameters = lambda algorithm: ["k", "w"]
    est = run(store, bootstrap=100)
    boxed = est.table[est.table["ci_low"].notna()]
    assert set(boxed["scope"]) == {"all", "only:k", "only:w"}  # not the h=v scopes
    assert (boxed["ci_low"] <= boxed["dp_per_25"]).all()
    assert (boxed["dp_per_25"] <= boxed["ci_high"]).all()
    draws = fl.UserDraws(100, 1)
    users = np.arange(200)
    first, again = draws.get(0, users), draws.get(0, users)
    assert all(np.array_equal(a, b) for a, b in zip(first[:4], again[:4], strict=True))
    assert [w.shape for w in first[4]] == [(100, 32), (100, 16)]  # G / 2 and G / 4 groups
    assert all(np.array_equal(a, b) for a, b in zip(first[4], again[4], strict=True))
    assert not np.array_equal(draws.get(0, users)[2], draws.get(1, users)[2])
    assert not np.array_equal(draws.get(0, users)[4][0], draws.get(1, users)[4][0])


class TinyStoreWithTest(TinyStore):
    """TinyStore plus a test split where configuration 5 is clearly the best on nDCG@10."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.v[("ndcg", "test")] = 0.3 + 0.02 * np.arange(6)[:, None] + rng.normal(0, 0.05, (6, 300))

    def folds(self, algorithm):
        return [*super().folds(algorithm), "test"]  # the test split is never used for DP


def test_the_verdict_end_to_end():
    from dptune.analysis.verdict.build import build_verdict

    store = TinyStoreWithTest()
    opts = AnalysisOptions(seed=1, bootstrap=300, stability=3)
    est = fl.run_fold_loop(store, opts)
    best = pd.DataFrame({"algorithm": "knn", "metric": ["ndcg", "recall"], "cutoff": 10,
                         "config_id": [5, 1]})
    parts = build_verdict(store, est, opts, best=best, floor=None)
    r = parts.verdict.iloc[0]
    assert r["recommended"] == "ndcg" and r["less_discriminative"] == ["recall"]
    assert r["stability_repeats"] == 1 and r["selected_configs"] == 2
    assert r["downstream_differ"] == ["recall"]  # config 1 is much worse than 5 on the test split
    ds = parts.downstream.set_index("metric")
    assert ds.at["recall", "n_test_users"] == 300 and bool(ds.at["recall", "significant"])
    assert r["dominant_hyperparameter"] == ""  # one hyperparameter: no dominance analysis
    assert parts.dominance.empty
    no_test = build_verdict(TinyStore(), est, opts, best=best, floor=None)
    assert set(no_test.downstream["status"]) == {"recommended", "no_test"}


def test_fold_array_read_in_place_equals_read_matrix():
    """A FoldSlice's float32 array is read in place, with read_matrix's inner join of users."""
    from dptune.store._store import FoldSlice

    store = TinyStore()
    mcs = (("ndcg", 10), ("recall", 10))
    ids = np.arange(8)  # two configurations more than the algorithm's: rows are looked up
    res = {}
    for mode in ("fast", "slow"):
        srun = scope_run(store, mcs, pairs=10, repeats=2, seed=3)
        for f in range(3):
            vals = np.stack([np.vstack([store.v[(m, str(f))], np.ones((2, 200))])
                             for m, _ in mcs]).astype(np.float32)
            vals[0, 2, 5] = np.nan  # user 5 has no nDCG for configuration 2: left out of nDCG
            block = FoldSlice("knn", str(f), ids, mcs, np.arange(200), vals)
            read = block.matrix if mode == "fast" else \
                (lambda m, c, i, b=block: b.matrix(m, c, i))
            view = fl.FoldView(read)
            assert (view.block is not None) == (mode == "fast")
            srun.add_fold(f, str(f), view)
        res[mode] = srun.finish()
    pd.testing.assert_frame_equal(pd.DataFrame(res["fast"][0]), pd.DataFrame(res["slow"][0]),
                                  rtol=1e-9)
    for key, reps in res["fast"][2].items():
        for (m1, r1), (m2, r2) in zip(reps, res["slow"][2][key], strict=True):
            assert m1 == pytest.approx(m2, rel=1e-9) and np.allclose(r1, r2, rtol=1e-7)


def _oracle_interval(store, metric, n_boot, seed, n_folds=3, n_configs=6):
    """The robust DP's replicates and 95% interval by a plain scipy bootstrap of the users:
    per fold, each user repeated as often as its group's weight (the pass's own draws, the same
    user with the same weight in every fold), every fold's differences moved to one centre per
    pair, the mean over the folds of k_f * mean_f (James-Stein k_f from scipy's t statistics),
    scipy's paired t-test per replicate; then the replicates the comparisons use (reflected on
    the logit scale) and the 95% interval: the basic interval on the arcsine scale, its errors
    widened by Student's t over the normal at ``groups - 1`` degrees of freedom (every user its
    own group here, so no coarser grouping and no extrapolation)."""
    from scipy import special

    from dptune.analysis.dp import bootstrap
    from dptune.analysis.dp.scale import bootstrap_seed

    pa, pb = np.triu_indices(n_configs, k=1)
    point, diffs, shrunk = [], [], []
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

    def world(c):
        """The replicates ``pbar*`` and world sizes ``S_r`` of the world centred at ``c``
        times the centre."""
        reps, sizes = np.zeros(n_boot), np.zeros(n_boot)
        for f, d in enumerate(diffs):
            n = d.shape[1]
            shifted = d - d.mean(axis=1, keepdims=True) + c * centre[:, None]
            ids, _ = store.read_matrix("knn", metric, 10, str(f), np.arange(n_configs))
            perm, starts, w = bootstrap.user_draws(ids, n_boot, bootstrap_seed(seed, 0), groups=n)
            group = np.empty(n, dtype=int)  # the group of each user (column)
            for g in range(len(starts) - 1):
                group[perm[starts[g]:starts[g + 1]]] = g
            for r in range(n_boot):  # each user as many times as its group's weight
                users = np.repeat(np.arange(n), w[r, group].astype(int))
                # the pass's t statistic of the weighted users, on the fold's n - 1 degrees of
                # freedom (the replicate's size sum_g w_g |g| varies when the groups differ)
                t_r = st.ttest_1samp(shifted[:, users], 0.0, axis=1).statistic
                reps[r] += (2.0 * special.stdtr(n - 1, -np.abs(t_r))).mean() / n_folds
                nu = n - 1  # the James-Stein size of the replicate's world
                sizes[r] += max(0.0, np.sum(t_r**2) - len(pa) * nu / (nu - 2)) / n_folds
        return reps, sizes

    raw, sizes = world(1.0)
    est = float(np.mean(point))
    logit = lambda v: special.logit(np.clip(v, 1e-12, 1 - 1e-12))  # noqa: E731
    mapped = special.expit(logit(est) - (logit(raw) - logit(raw.mean())))
    groups = store.v[(metric, "0")].shape[1]
    kappa = st.t.ppf(0.975, groups - 1) / st.norm.ppf(0.975)
    asin = lambda v: np.arcsin(np.sqrt(v))  # noqa: E731
    # each replicate's error in its own world's spread: the slope of log sd on log(size + P)
    # over the sample's world and the centre scaled to the replicates' 2nd and 98th percentile
    # sizes (a world's size grows as the square of the scale), sizes kept within the measured
    scales = np.minimum(np.sqrt(np.quantile(sizes, [0.02, 0.98]) / sizes.mean()), 2.0)
    worlds = [(raw, sizes), world(scales[0]), world(scales[1])]
    mean_sizes = [s.mean() for _, s in worlds]
    x = np.log(np.array(mean_sizes) + len(pa))
    beta = np.polyfit(x, [np.log(np.std(asin(r))) for r, _ in worlds], 1)[0]
    own = np.clip(sizes, min(mean_sizes), max(mean_sizes))
    factors = ((mean_sizes[0] + len(pa)) / (own + len(pa))) ** beta
    if np.ptp(x) < 0.05:  # worlds of (nearly) one size: no slope to read, the basic interval
        factors = np.ones(n_boot)
    err = kappa * factors * (asin(raw) - asin(raw.mean()))
    q_lo, q_hi = np.quantile(err, [0.025, 0.975])
    ci = (np.sin(np.clip(asin(est) - q_hi, 0.0, np.pi / 2)) ** 2,
          np.sin(np.clip(asin(est) - q_lo, 0.0, np.pi / 2)) ** 2)
    return est, mapped, (25 * ci[0], 25 * ci[1]), factors


def test_interval_and_replicates_equal_a_plain_scipy_bootstrap():
    store = TinyStore(n_users=60)
    srun = fl.ScopeRun(fl.ScopePlan("knn", "all", [np.column_stack(np.triu_indices(6, k=1))],
                                    15, 3, [("ndcg", 10), ("recall", 10)],
                                    test=paired_test("t"), bootstrap=40, seed=2,
                                    draws=fl.UserDraws(40, 2, groups=60)))
    for f in range(3):
        srun.add_fold(f, str(f), fl.FoldView(
            lambda m, c, i, f=f: store.read_matrix("knn", m, c, str(f), i)))
    rows, _, draws = srun.finish()
    t = pd.DataFrame(rows).set_index("metric")
    mapped = {}
    for m in ("ndcg", "recall"):
        est, mapped[m], (lo, hi), factors = _oracle_interval(store, m, 40, 2)
        # nDCG's worlds differ in size (a studentised interval); recall's are of one size
        assert np.allclose(factors, 1.0) == (m == "recall")
        assert t.at[m, "mean_p"] == pytest.approx(est, abs=1e-12)
        # the pass reads p from its t tail table (error < 1e-6): equal to that precision
        assert np.allclose(draws[("knn", "all", m, 10)][0][1], mapped[m], atol=2e-5)
        assert (t.at[m, "ci_low"], t.at[m, "ci_high"]) == pytest.approx((lo, hi), abs=5e-4)
        assert 0.0 <= t.at[m, "ci_low"] <= t.at[m, "ci_high"] <= 25.0


def test_pairs_resampled_only_when_sampled():
    """Every pair used: the pairs are fixed (only users are resampled); a sample of the pairs:
    the rescaled pair weights widen the interval."""
    store = TinyStore()
    full = scope_run(store, [("ndcg", 10)])
    assert np.array_equal(full._mult[0], np.ones((50, 15)))
    part = scope_run(store, [("ndcg", 10)], pairs=5)
    assert part._mult[0].shape == (50, 5) and not np.all(part._mult[0] == 1.0)
    for f in range(3):
        for srun in (full, part):
            srun.add_fold(f, str(f), fl.FoldView(
                lambda m, c, i, f=f: store.read_matrix("knn", m, c, str(f), i)))
    for srun in (full, part):
        row = srun.finish()[0][0]
        assert 0.0 <= row["ci_low"] <= row["dp_per_25"] <= row["ci_high"] <= 25.0


def test_an_algorithm_without_a_complete_unit_is_named_with_its_results_folder() -> None:
    """A run stopped before any unit of an algorithm had every validation fold: the analysis
    said "store: bpr-mf: folds: no validation folds", naming no folder and no way out."""
    from pathlib import Path

    from dptune.errors import DptuneError

    class Stopped:
        root = Path("results/tiny")

        def algorithms(self):
            return ["bpr-mf"]

        def folds(self, algorithm):
            return ["test"]

    with pytest.raises(DptuneError) as err:
        fl.run_fold_loop(Stopped(), AnalysisOptions())
    assert str(err.value) == ("results/tiny: bpr-mf: no unit has results in every validation "
                              "fold yet (dptune run computes them)")


def test_a_grid_samples_replicates_weigh_each_pair_by_its_units_draws():
    """On a store holding a sample of its grid's units, the bootstrap resamples the units as
    well as the users and pairs: a replicate's weight of a pair is its pair multiplier times
    its units' multipliers (one unit's for a pair within it), normalised within its stratum,
    so pairs of units drawn less weigh less. With the pairs' own multipliers alone (the units'
    draws left out) the interval would not see what another sample of units changes; the
    quick coverage studies did not catch that switched off alone."""
    from dptune.analysis.dp.pairs import scopes
    from dptune.analysis.dp.units import design_replicate_weights
    from dptune.studies.simulations.grid_sample import QUICK_GRID_CASES, _Sample
    from dptune.sweeper.design import design_order

    case, boot, seed = QUICK_GRID_CASES[0], 60, 3
    configs = case.configs()
    order = design_order((case.n_a, case.n_b), 7)
    positions = np.array([a * case.n_b + b for a, b in order.points])
    s = _Sample(case, configs, positions, case.round_size)  # one round: 10 of 100 units
    scope = scopes(s.configs, ["a", "b", "i"], case.pairs)[0]
    units = s.units(boot, seed)
    run = fl.ScopeRun(fl.ScopePlan(
        "grid", "all", [scope.pairs(0, seed)], scope.n_possible, case.folds, [("m", 1)],
        test=paired_test("t"), bootstrap=boot, seed=seed, draws=fl.UserDraws(boot, seed),
        designer=s.designer("all"), units=units))
    design, replicate = run.designs[0], run._mult[0]  # (B, P): the replicates' pair weights
    assert replicate.shape == (boot, len(design.weights))
    ua, ub = units[:, design.unit_a], units[:, design.unit_b]
    drawn = np.where(design.unit_a == design.unit_b, ua, ua * ub)
    assert len(np.unique(drawn)) > 3  # the units' draws differ
    kept = run._pair_mult > 0
    follows = np.corrcoef(np.log(replicate[kept] / run._pair_mult[kept]), np.log(drawn[kept]))
    assert follows[0, 1] > 0.9, follows
    np.testing.assert_allclose(replicate, design_replicate_weights(design, units,
                                                                   run._pair_mult))
    np.testing.assert_allclose(replicate.mean(axis=1), 1.0)  # each replicate: mean weight 1
