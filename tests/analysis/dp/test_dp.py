"""Tests of dptune.analysis.dp: pair sampling, scopes, curves, DP, bootstrap, noise floor, analyze()."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dptune.analysis.dp import curves, paired_tests
from dptune.analysis.dp import fold_loop as fl
from dptune.analysis.dp import pairs as dp
from dptune.analysis.dp import pairs as pairs_mod
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.result import AnalysisResult
from dptune.errors import DptuneError


def analyze(store, progress: bool = False, **options):
    """The fold loop of ``store`` under ``options`` (no bootstrap unless asked for)."""
    return fl.run_fold_loop(store, AnalysisOptions(**{"bootstrap": 0, "seed": 0, **options}),
                            progress=progress)


def write(estimate, out):
    """pairs.csv, pvalues.parquet, dp.csv and curves.csv of an estimate."""
    return AnalysisResult(dp=estimate).write_data(out)

# ------------------------------------------------------------------ an in-memory result store


class FakeStore:
    """In-memory stand-in for dptune.store.ResultStore (same read methods).

    ``values[(algorithm, metric, cutoff, fold)]`` is a ``(n_configs, n_users)`` float array in
    config-id order; NaN marks a user missing for that configuration (inner join on read).
    """

    def __init__(
        self, seed: int = 0, n_users: int = 40, drop: tuple | None = None, twins: bool = False
    ) -> None:
        rng = np.random.default_rng(seed)
        grid = list(itertools.product([10, 20, 40], [0.1, 0.05], [1, 2, 4]))
        self._configs = {
            "bpr": pd.DataFrame(
                [(i, f, lr, it, lr / 20) for i, (f, lr, it) in enumerate(grid)],
                columns=["config_id", "factors", "learning_rate", "iterations", "user_reg"],
            ),
            "knn": pd.DataFrame({"config_id": [0, 1, 2, 3], "k": [10, 20, 40, 80]}),
        }
        self._hps = {"bpr": ["factors", "learning_rate", "iterations"], "knn": ["k"]}
        self._folds = {"bpr": ["0", "1", "2"], "knn": ["0", "1"]}
        self._mc = {
            "bpr": [("precision", 5), ("ndcg", 5), ("recall", 5), ("ndcg", 10)],
            "knn": [("ndcg", 10), ("mrr", 10)],
        }
        self.values: dict[tuple[str, str, int, str], np.ndarray] = {}
        self.reads: list[tuple[str, str, int, str, tuple[int, ...]]] = []
        for alg, cfg in self._configs.items():
            n_c = len(cfg)
            effect = rng.normal(0.0, 0.05, n_c)
            for fold in self._folds[alg]:
                user = rng.random(n_users)
                for metric, cutoff in self._mc[alg]:
                    noise = {"ndcg": 0.1, "precision": 0.2, "recall": 0.4, "mrr": 0.3}[metric]
                    v = user[None, :] + effect[:, None] + rng.normal(0, noise, (n_c, n_users))
                    if twins:
                        v[1] = v[0]  # configs 0 and 1 identical: zero-variance pairs
                    self.values[(alg, metric, cutoff, fold)] = v
        if drop is not None:  # (algorithm, fold, config_id, user): one missing value
            alg, fold, cid, user = drop
            for (a, _m, _c, f), v in self.values.items():
                if a == alg and f == fold:
                    v[cid, user] = np.nan

    def algorithms(self) -> list[str]:
        return ["knn", "bpr"]

    def configs(self, algorithm: str) -> pd.DataFrame:
        return self._configs[algorithm].copy()

    def hyperparameters(self, algorithm: str) -> list[str]:
        return list(self._hps[algorithm])

    def folds(self, algorithm: str) -> list[str]:
        return list(self._folds[algorithm])

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return list(self._mc[algorithm])

    def read_matrix(self, algorithm, metric, cutoff, fold, config_ids):
        ids = np.asarray(config_ids)
        self.reads.append((algorithm, metric, cutoff, fold, tuple(int(i) for i in ids)))
        v = self.values[(algorithm, metric, cutoff, fold)][ids]
        keep = ~np.isnan(v).any(axis=0)
        users = np.flatnonzero(keep)
        return users, v[:, keep]


# ------------------------------------------------------------------ sampling


def test_sample_pairs_reproducible_valid_and_order_invariant() -> None:
    ids = np.arange(100, 400, 3)
    p1 = dp.sample_pairs(ids, 25, seed=4)
    p2 = dp.sample_pairs(ids[::-1].copy(), 25, seed=4)
    np.testing.assert_array_equal(p1, p2)
    assert p1.shape == (25, 2) and p1.dtype == np.int64
    assert np.all(p1[:, 0] < p1[:, 1])  # (smaller, larger), never a self pair
    assert np.isin(p1, ids).all()
    assert len({tuple(r) for r in p1.tolist()}) == 25  # no duplicates
    assert not np.array_equal(p1, dp.sample_pairs(ids, 25, seed=5))


def test_sample_pairs_all_when_few() -> None:
    p = dp.sample_pairs(np.array([7, 3, 5]), 25, seed=0)
    assert sorted(map(tuple, p.tolist())) == [(3, 5), (3, 7), (5, 7)]
    assert dp.sample_pairs(np.array([1]), 5).shape == (0, 2)
    with pytest.raises(DptuneError, match="duplicated"):
        dp.sample_pairs(np.array([1, 1, 2]), 5)
    with pytest.raises(DptuneError, match="n_pairs"):
        dp.sample_pairs(np.arange(5), 0)


def test_unrank_colex_matches_enumeration() -> None:
    m = 80
    want = [(i, j) for j in range(m) for i in range(j)]  # colex order
    i, j = pairs_mod._unrank_colex(np.arange(m * (m - 1) // 2))
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == want


def test_sample_pairs_large_grid_without_materialising() -> None:
    ids = np.arange(3150)
    p = dp.sample_pairs(ids, 25, seed=1)
    assert p.shape == (25, 2) and p.max() < 3150 and np.all(p[:, 0] < p[:, 1])
    # ranks near the end of the range unrank exactly
    n = 3150 * 3149 // 2
    i, j = pairs_mod._unrank_colex(np.array([n - 1, n - 2, 0]))
    assert (i.tolist(), j.tolist()) == ([3148, 3147, 0], [3149, 3149, 1])


def test_sample_pairs_uniform() -> None:
    """Each of the 15 pairs of 6 configs is drawn equally often (chi-square, seeded)."""
    counts: dict[tuple[int, int], int] = {}
    for s in range(2000):
        for a, b in dp.sample_pairs(np.arange(6), 4, seed=s).tolist():
            counts[(a, b)] = counts.get((a, b), 0) + 1
    assert len(counts) == 15
    assert sps.chisquare(list(counts.values())).pvalue > 0.001


# ------------------------------------------------------------------ curves and DP


def test_pvalue_curve_and_summary_by_hand() -> None:
    np.testing.assert_array_equal(curves.pvalue_curve([0.1, 0.5, 0.2]), [0.5, 0.2, 0.1])
    res = curves.summarize_curves(np.array([[0.5, 0.1, 0.2], [0.3, 0.3, 0.0]]))
    # sorted: [0.5, 0.2, 0.1] and [0.3, 0.3, 0.0]; mean [0.4, 0.25, 0.05] -> DP 0.7
    np.testing.assert_allclose(res.mean_curve, [0.4, 0.25, 0.05])
    s = np.sqrt(0.02)  # sd of (0.5, 0.3) with ddof=1 = sqrt(2 * 0.1**2 / 1)
    np.testing.assert_allclose(res.sd_curve, [s, s / 2, s / 2])
    assert res.dp == pytest.approx(0.7)
    assert res.dp_plus_sd == pytest.approx(0.7 + 2 * s)
    # the band is kept in [0, 1]: position 3's mean - sd = 0.05 - 0.0707 counts as 0
    assert res.dp_minus_sd == pytest.approx(0.4 - s + 0.25 - s / 2)
    top = curves.summarize_curves(np.array([[1.0, 0.5], [0.8, 0.1]]))  # mean 0.9 + sd 0.14 > 1
    assert top.dp_plus_sd == pytest.approx(1.0 + 0.3 + np.sqrt(0.08)) and top.dp_plus_sd <= 2
    assert (res.n_pairs, res.n_folds) == (3, 2)
    one = curves.summarize_curves(np.array([0.2, 0.9]))
    assert one.dp == pytest.approx(1.1) and one.dp_plus_sd == one.dp == one.dp_minus_sd
    np.testing.assert_array_equal(one.sd_curve, [0.0, 0.0])


# ------------------------------------------------------------------ scopes


def test_format_value() -> None:
    assert dp.format_value(10) == "10"
    assert dp.format_value(np.int32(10)) == "10"
    assert dp.format_value(10.0) == "10"
    assert dp.format_value(0.20000389) == "0.20000389"
    assert dp.format_value(0.00001221) == "0.00001221"
    assert dp.format_value(np.float32(0.2)) == "0.2"
    assert dp.format_value(True) == "true"
    assert dp.format_value("cosine") == "cosine"
    assert dp.format_value(float("nan")) == "nan"


def _bpr_configs() -> pd.DataFrame:
    return FakeStore().configs("bpr")


def test_scope_names_and_order() -> None:
    scopes = dp.scope_pairs(_bpr_configs(), ["factors", "learning_rate", "iterations"], 25, 0)
    assert list(scopes) == [
        "all",
        "factors=10",
        "factors=20",
        "factors=40",
        "learning_rate=0.05",
        "learning_rate=0.1",
        "iterations=1",
        "iterations=2",
        "iterations=4",
        "only:factors",
        "only:learning_rate",
        "only:iterations",
    ]
    knn = dp.scope_pairs(FakeStore().configs("knn"), ["k"], 25, 0)
    assert list(knn) == ["all"] and len(knn["all"]) == 6


def test_scope_value_pairs_contain_only_that_value() -> None:
    cfg = _bpr_configs().set_index("config_id")
    scopes = dp.scope_pairs(cfg.reset_index(), ["factors", "learning_rate", "iterations"], 5, 3)
    for name, pairs in scopes.items():
        if "=" not in name:
            continue
        h, v = name.split("=")
        vals = cfg.loc[pairs.ravel(), h].map(dp.format_value)
        assert (vals == v).all(), name
        assert len(pairs) == 5 and np.all(pairs[:, 0] < pairs[:, 1])


def test_value_pairs_cap_every_scope_but_all() -> None:
    """``value_pairs`` caps the hyperparameter-value and one-at-a-time scopes; ``all`` keeps
    ``pairs``; the ``all`` pairs do not depend on ``value_pairs``."""
    cfg = _bpr_configs()
    hps = ["factors", "learning_rate", "iterations"]
    wide = dp.scope_pairs(cfg, hps, 1000, 3)
    capped = dp.scope_pairs(cfg, hps, 1000, 3, value_pairs=2)
    assert np.array_equal(wide["all"], capped["all"]) and len(capped["all"]) > 2
    assert set(wide) == set(capped)
    for name in capped:
        if name != "all":
            assert len(capped[name]) == min(2, len(wide[name])), name
            assert {tuple(p) for p in capped[name].tolist()} <= \
                {tuple(p) for p in wide[name].tolist()}, name
    same = dp.scope_pairs(cfg, hps, 4, 3, value_pairs=4)  # value_pairs = pairs: no change
    for name, pairs in dp.scope_pairs(cfg, hps, 4, 3).items():
        assert np.array_equal(same[name], pairs), name
    with pytest.raises(DptuneError, match="value_pairs"):
        dp.scope_pairs(cfg, hps, 4, 3, value_pairs=0)


def test_analyze_value_pairs_and_its_default() -> None:
    store = FakeStore(seed=3)
    res = analyze(store, pairs=30, seed=0, value_pairs=2)
    n = res.table.groupby(["algorithm", "scope"])["n_pairs"].first()
    assert n[("bpr", "all")] == 30
    assert (n.drop(("bpr", "all")).drop(("knn", "all")) <= 2).all()
    default = analyze(store, pairs=30, seed=0).table.groupby(["algorithm", "scope"])["n_pairs"]
    assert (default.first() <= 30).all()  # min(30, 200)
    assert default.first().max() == 30


def test_only_scope_pairs_differ_in_that_hyperparameter_only() -> None:
    cfg = _bpr_configs()
    hps = ["factors", "learning_rate", "iterations"]
    scopes = dp.scope_pairs(cfg, hps, 1000, 0)  # more than exist: every valid pair
    by_id = cfg.set_index("config_id")
    for h in hps:
        got = {tuple(p) for p in scopes[f"only:{h}"].tolist()}
        want = set()
        for a, b in itertools.combinations(cfg["config_id"].tolist(), 2):
            ra, rb = by_id.loc[a], by_id.loc[b]
            if ra[h] != rb[h] and all(ra[o] == rb[o] for o in hps if o != h):
                want.add((a, b))
        assert got == want, h
        assert len(scopes[f"only:{h}"]) == len(got)  # no duplicates


def test_scope_seeds_are_distinct_and_reproducible() -> None:
    cfg = _bpr_configs()
    hps = ["factors", "learning_rate", "iterations"]
    s1 = dp.scope_pairs(cfg, hps, 4, 7)
    s2 = dp.scope_pairs(cfg, hps, 4, 7)
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k])
    assert dp.scope_seed(7, "all") != dp.scope_seed(7, "factors=10")
    assert dp.scope_seed(7, "all") == dp.scope_seed(7, "all")
    with pytest.raises(DptuneError, match="missing column"):
        dp.scope_pairs(cfg, ["momentum"], 4, 0)


# ------------------------------------------------------------------ analyze


@pytest.fixture(scope="module")
def analysis_and_store() -> tuple[fl.DPEstimate, FakeStore]:
    store = FakeStore(seed=1)
    return analyze(store, pairs=6, seed=3), store


def test_analysis_columns_and_order(analysis_and_store) -> None:
    res, _ = analysis_and_store
    assert list(res.pairs.columns[:5]) == [
        "algorithm",
        "scope",
        "pair_index",
        "config_a",
        "config_b",
    ]
    assert list(res.pvalues.columns[:7]) == [
        "algorithm",
        "scope",
        "metric",
        "cutoff",
        "fold",
        "pair_index",
        "p",
    ]
    assert list(res.table.columns) == [
        "algorithm", "scope", "metric", "cutoff", "n_pairs", "n_possible_pairs", "n_folds",
        "mean_p", "mean_p_sd", "dp_per_25", "dp_per_25_plus_sd", "dp_per_25_minus_sd",
        "ci_low", "ci_high", "dp_sum", "sakai", "sakai_sd", "no_evidence", "repeats",
        "unsampled_share", "unit_clusters", "test", "correction", "alpha",
    ]
    assert list(res.curves.columns[:7]) == [
        "algorithm",
        "scope",
        "metric",
        "cutoff",
        "position",
        "mean",
        "sd",
    ]
    assert res.draws == {}  # no bootstrap asked for: no replicates, no interval
    assert res.table["ci_low"].isna().all()
    bpr = res.table[(res.table.algorithm == "bpr") & (res.table.scope == "all")]
    assert list(zip(bpr.metric, bpr.cutoff, strict=True)) == [
        ("ndcg", 5),
        ("ndcg", 10),
        ("precision", 5),
        ("recall", 5),
    ]
    assert res.table.algorithm.iloc[0] == "knn"
    assert set(res.table[res.table.algorithm == "knn"].scope) == {"all"}
    assert set(res.pvalues.fold) == {"0", "1", "2"}


def test_analysis_reads_only_scope_configs(analysis_and_store) -> None:
    res, store = analysis_and_store
    used = {
        (alg, tuple(np.unique(g[["config_a", "config_b"]].to_numpy()).tolist()))
        for (alg, _scope), g in res.pairs.groupby(["algorithm", "scope"])
    }
    assert len(store.reads) > 0
    for alg, _metric, _cutoff, _fold, ids in store.reads:
        assert (alg, ids) in used


def _recompute_dp_from_csv(out: Path, store: FakeStore) -> pd.DataFrame:
    """DP from per-user values and pairs.csv with scipy alone (ttest_rel, sort, mean, sum)."""
    pairs = pd.read_csv(out / "pairs.csv")
    rows = []
    for (alg, scope), g in pairs.groupby(["algorithm", "scope"], sort=False):
        g = g.sort_values("pair_index")
        ids = np.unique(g[["config_a", "config_b"]].to_numpy())
        for metric, cutoff in store.metric_cutoffs(alg):
            curves = []
            for fold in store.folds(alg):
                v = store.values[(alg, metric, cutoff, fold)]
                users = ~np.isnan(v[ids]).any(axis=0)  # inner join over the scope's configs
                p = []
                for a, b in zip(g.config_a, g.config_b, strict=True):
                    x, y = v[a, users], v[b, users]
                    p.append(1.0 if np.all(x == y) else sps.ttest_rel(x, y).pvalue)
                curves.append(sorted(p, reverse=True))
            c = np.array(curves)
            mean, sd = c.mean(axis=0), c.std(axis=0, ddof=1)
            rows.append(
                (
                    alg,
                    scope,
                    metric,
                    cutoff,
                    mean.sum(),
                    np.minimum(mean + sd, 1.0).sum(),  # the band stays in [0, 1]
                    np.maximum(mean - sd, 0.0).sum(),
                    len(g),
                    len(c),
                )
            )
    return pd.DataFrame(
        rows,
        columns=[
            "algorithm",
            "scope",
            "metric",
            "cutoff",
            "dp_sum",
            "dp_sum_plus_sd",
            "dp_sum_minus_sd",
            "n_pairs",
            "n_folds",
        ],
    )


def test_dp_csv_recomputable_with_scipy(tmp_path: Path) -> None:
    store = FakeStore(seed=2, drop=("bpr", "1", 4, 7))
    write(analyze(store, pairs=5, seed=0), tmp_path)
    got = pd.read_csv(tmp_path / "dp.csv")
    want = _recompute_dp_from_csv(tmp_path, store)
    key = ["algorithm", "scope", "metric", "cutoff"]
    merged = got.merge(want, on=key, suffixes=("", "_ref"), validate="one_to_one")
    assert len(merged) == len(got) == len(want)
    np.testing.assert_allclose(merged["dp_sum"], merged["dp_sum_ref"], rtol=1e-8)
    # one scale: DP per 25 pairs = DP x 25 / P, the mean p-value x 25, the band likewise
    ratio = 25.0 / merged["n_pairs"]
    np.testing.assert_allclose(merged["dp_per_25"], merged["dp_sum_ref"] * ratio, rtol=1e-8)
    np.testing.assert_allclose(merged["dp_per_25"], 25.0 * merged["mean_p"], rtol=1e-8)
    np.testing.assert_allclose(merged["dp_per_25_plus_sd"], merged["dp_sum_plus_sd"] * ratio,
                               rtol=1e-8)
    np.testing.assert_allclose(merged["dp_per_25_minus_sd"],
                               merged["dp_sum_minus_sd"] * ratio, rtol=1e-8)
    for col in ["n_pairs", "n_folds"]:
        np.testing.assert_array_equal(merged[col], merged[f"{col}_ref"])
    # curves.csv sums to dp.csv
    curves = pd.read_csv(tmp_path / "curves.csv")
    sums = curves.groupby(key, sort=False)["mean"].sum().reset_index()
    m2 = sums.merge(got, on=key)
    np.testing.assert_allclose(m2["mean"], m2["dp_sum"], rtol=1e-8)


def test_missing_user_is_inner_joined() -> None:
    store = FakeStore(seed=4, drop=("bpr", "1", 4, 7))
    res = analyze(store, pairs=200, seed=0)  # every pair of every scope
    pv = res.pvalues[(res.pvalues.algorithm == "bpr") & (res.pvalues.scope == "all")]
    pairs = res.pairs[(res.pairs.algorithm == "bpr") & (res.pairs.scope == "all")]
    assert set(pv[pv.fold == "1"].n_users) == {39}
    assert set(pv[pv.fold != "1"].n_users) == {40}
    one = pv[(pv.fold == "1") & (pv.metric == "ndcg") & (pv.cutoff == 5)]
    v = store.values[("bpr", "ndcg", 5, "1")]
    keep = np.arange(40) != 7
    for row in one.merge(pairs, on=["algorithm", "scope", "pair_index"]).itertuples():
        want = sps.ttest_rel(v[row.config_a, keep], v[row.config_b, keep]).pvalue
        assert row.p == pytest.approx(want, rel=1e-10)
    # a scope without config 4 keeps every user
    fac = res.pvalues[(res.pvalues.algorithm == "bpr") & (res.pvalues.scope == "factors=40")]
    assert set(fac.n_users) == {40}


class SlicedStore(FakeStore):
    """:class:`FakeStore` with float32 values and a batched ``read_fold``, as the result store
    has: the analysis then tests the pairs on the fold's own array (no float64 copy)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for key, v in self.values.items():
            self.values[key] = v.astype(np.float32).astype(np.float64)

    def read_fold(self, algorithm, fold, config_ids, metric_cutoffs, buffer=None):
        from dptune.store._fold import FoldSlice

        ids = np.asarray(config_ids, dtype=np.int64)
        mcs = tuple((str(m), int(c)) for m, c in metric_cutoffs)
        vals = np.stack([self.values[(algorithm, m, c, fold)][ids] for m, c in mcs])
        return FoldSlice(algorithm, fold, ids, mcs, np.arange(vals.shape[2]),
                         vals.astype(np.float32))

    def trials(self) -> pd.DataFrame:  # what sizes a fold read: users per algorithm
        return pd.DataFrame({"algorithm": list(self._configs),
                             "n_users": [next(iter(self.values.values())).shape[1]] * 2})


@pytest.mark.parametrize("drop", [None, ("bpr", "1", 4, 7)])
def test_in_place_fold_reads_equal_the_copying_reads_bit_for_bit(drop) -> None:
    """Pairs tested on the fold's float32 array in place (with the inner join of a missing
    user) give exactly the p-values and DP of the per-scope float64 copies."""
    sliced = SlicedStore(seed=4, drop=drop)
    plain = SlicedStore(seed=4, drop=drop)
    plain.read_fold = None  # not callable: the per-scope read_matrix route
    got = analyze(sliced, pairs=200, seed=0)
    want = analyze(plain, pairs=200, seed=0)
    assert not sliced.reads and plain.reads  # each took its own route
    pd.testing.assert_frame_equal(got.pvalues, want.pvalues, check_exact=True)
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True)
    if drop is not None:
        pv = got.pvalues[(got.pvalues.scope == "all") & (got.pvalues.algorithm == "bpr")]
        assert set(pv[pv.fold == "1"].n_users) == {39}


def test_a_fold_read_in_groups_of_metrics_gives_the_same_analysis(monkeypatch) -> None:
    """With a tiny memory cap each metric@N is read on its own (more reads, less memory): the
    tables equal those of one read per fold, bit for bit, the intervals and the bootstrap's
    replicates included."""
    store = SlicedStore(seed=5, drop=("bpr", "1", 4, 7))
    opts = dict(pairs=30, seed=0, bootstrap=50, stability=0)
    whole = analyze(store, **opts)
    assert len(fl.metric_groups(store, "bpr", 18, store.metric_cutoffs("bpr"))) == 1
    monkeypatch.setattr(fl, "FOLD_BYTES", 1)
    assert fl.metric_groups(store, "bpr", 18, store.metric_cutoffs("bpr")) == \
        [[mc] for mc in store.metric_cutoffs("bpr")]
    grouped = analyze(store, **opts)
    pd.testing.assert_frame_equal(grouped.pvalues, whole.pvalues, check_exact=True)
    pd.testing.assert_frame_equal(grouped.table, whole.table, check_exact=True)
    assert whole.table["ci_low"].notna().any()
    assert whole.draws.keys() == grouped.draws.keys()
    for key, reps in whole.draws.items():
        for (m1, r1), (m2, r2) in zip(reps, grouped.draws[key], strict=True):
            assert m1 == m2 and np.array_equal(r1, r2)


def test_fold_views_read_each_group_once_and_close_the_last_view_first() -> None:
    """One read per group of metric@N, seen as read_matrix sees it; when the next group is
    asked for, the previous view holds nothing any more (one group's slice at a time, whatever
    the caller still refers to)."""
    store = SlicedStore(seed=5)
    mcs = store.metric_cutoffs("bpr")
    ids = np.arange(6, dtype=np.int64)
    groups = [mcs[:1], mcs[1:]]
    reads, read_fold = [], store.read_fold

    def counted(alg, fold, ids, group, **kw):
        reads.append(list(group))
        return read_fold(alg, fold, ids, group, **kw)

    store.read_fold = counted
    seen = []
    for group, view in fl.fold_views(store, "bpr", "0", ids, groups):
        if seen:
            assert seen[-1][1].block is None and seen[-1][1].read is None
        for metric, cutoff in group:
            values, rows, columns, users = view.get(metric, cutoff, ids)
            want_users, want = store.read_matrix("bpr", metric, cutoff, "0", ids)
            got = values[rows] if columns is None else values[np.ix_(rows, columns)]
            assert np.array_equal(users, want_users) and np.array_equal(got, want)
        seen.append((group, view))
    assert [g for g, _ in seen] == groups and reads == groups
    assert seen[-1][1].block is None and seen[-1][1].read is None


def test_zero_variance_pair_gets_p_one() -> None:
    res = analyze(FakeStore(seed=5, twins=True), pairs=200, seed=0)
    pairs = res.pairs[(res.pairs.config_a == 0) & (res.pairs.config_b == 1)]
    assert len(pairs) > 0
    pv = res.pvalues.merge(pairs, on=["algorithm", "scope", "pair_index"])
    pv = pv[pv.algorithm == "bpr"]
    assert len(pv) > 0 and (pv.p == 1.0).all()
    assert res.pvalues.p.notna().all()


def test_write_byte_identical_and_pvalues_exact(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    res = analyze(FakeStore(seed=6), pairs=4, seed=9)
    write(res, a)
    write(analyze(FakeStore(seed=6), pairs=4, seed=9), b)
    names = sorted(p.name for p in a.iterdir())
    assert names == ["curves.csv", "dp.csv", "pairs.csv", "pvalues.parquet"]
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
        if n.endswith(".csv"):
            assert b"\r\n" not in (a / n).read_bytes()
    # every p-value comes back exactly (no rounding to 10 digits, as CSV would)
    pd.testing.assert_frame_equal(pd.read_parquet(a / "pvalues.parquet"), res.pvalues,
                                  check_exact=True)


def test_sakai_and_corrections(analysis_and_store) -> None:
    store = analysis_and_store[1]
    for corr in [None, "holm", "bh"]:
        res = analyze(store, pairs=6, seed=3, correction=corr or "none", alpha=0.1)
        groups = dict(list(res.pvalues.groupby(["algorithm", "scope", "metric", "cutoff"])))
        for row in res.table.itertuples():
            g = groups[(row.algorithm, row.scope, row.metric, row.cutoff)]
            per_fold = [
                paired_tests.sakai_dp(
                    paired_tests.adjust(f.sort_values("pair_index").p.to_numpy(), corr), 0.1)
                for _, f in g.groupby("fold")
            ]
            assert row.sakai == pytest.approx(np.mean(per_fold))
            assert row.sakai_sd == pytest.approx(np.std(per_fold, ddof=1))
    raw = analyze(store, pairs=6, seed=3, alpha=0.1).table.sakai.to_numpy()
    holm = analyze(store, pairs=6, seed=3, alpha=0.1, correction="holm").table.sakai.to_numpy()
    assert np.all(holm <= raw) and raw.max() > 0


@pytest.mark.parametrize("test", ["wilcoxon", "permutation", "bootstrap"])
def test_analyze_other_tests(test: str) -> None:
    res = analyze(FakeStore(seed=7), pairs=3, seed=0, test=test, n_resamples=99)
    assert res.pvalues.p.between(0, 1).all()
    assert (res.table.test == test).all()
    assert res.table["ci_low"].isna().all() and res.draws == {}  # no interval under this test


def test_analyze_progress_bar_counts_algorithm_folds_and_changes_nothing(capsys) -> None:
    from threadpoolctl import threadpool_info

    store = FakeStore(seed=7)
    blas_before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    quiet = analyze(store, pairs=3, seed=0)
    assert capsys.readouterr().err == ""
    shown = analyze(store, pairs=3, seed=0, progress=True)
    err = capsys.readouterr().err
    n = sum(len([f for f in store.folds(a) if f != "test"]) for a in store.algorithms())
    assert "analysis" in err and f"{n}/{n}" in err
    pd.testing.assert_frame_equal(quiet.table, shown.table)
    # the BLAS limit is lifted again afterwards
    assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == blas_before


def test_analyze_bad_input() -> None:
    store = FakeStore()
    with pytest.raises(DptuneError, match="analysis: test"):
        analyze(store, test="anova")
    with pytest.raises(DptuneError, match="correction"):
        analyze(store, correction="bonf")
    with pytest.raises(DptuneError, match="alpha"):
        analyze(store, alpha=0)
    with pytest.raises(DptuneError, match="analysis: pairs"):
        analyze(store, pairs=-1)


# ------------------------------------------------------------------ bootstrap


def _fold_arrays(store: FakeStore, alg: str, metric: str, cutoff: int, pairs: np.ndarray):
    a, b = [], []
    for fold in store.folds(alg):
        v = store.values[(alg, metric, cutoff, fold)]
        a.append(v[pairs[:, 0]])
        b.append(v[pairs[:, 1]])
    return a, b


def test_prob_more_discriminative_counts_paired_replicates() -> None:
    from dptune.analysis.dp.bootstrap import prob_more_discriminative

    assert prob_more_discriminative(np.array([1.0, 2, 3]), np.array([2.0, 2, 2])) == 1 / 3


# ------------------------------------------------------------------ noise floor


def test_noise_floor_pairs_and_calibration() -> None:
    rng = np.random.default_rng(11)
    v = rng.normal(0.3, 0.1, (21, 80))  # 21 seeds -> 210 A/A pairs
    from dptune.analysis.noise import aa_pvalues

    p = aa_pvalues(v, paired_tests.paired_test("t"))
    assert p.shape == (210,)
    s, t = np.triu_indices(21, k=1)
    assert p[0] == pytest.approx(sps.ttest_rel(v[0], v[1]).pvalue)
    assert p[-1] == pytest.approx(sps.ttest_rel(v[s[-1]], v[t[-1]]).pvalue)
    assert paired_tests.ks_uniform(p)[1] > 0.01


def test_resample_curve():
    """A curve of K p-values read at other positions (the noise floor's A/A curves at the DP's
    P; the fold loop's accumulator resamples a fold of another length)."""
    c = np.array([0.8, 0.2])
    np.testing.assert_allclose(curves.resample_curve(c, 4), [0.8, 0.65, 0.35, 0.2])
    np.testing.assert_array_equal(curves.resample_curve(c, 2), c)
    rng = np.random.default_rng(0)
    curve = curves.pvalue_curve(rng.random(10))
    r = curves.resample_curve(curve, 25)
    assert r.shape == (25,) and np.all(np.diff(r) <= 0)
    assert r[0] == curve[0] and r[-1] == curve[-1]
    assert abs(r.mean() - curve.mean()) < 0.05
    with pytest.raises(DptuneError):
        curves.resample_curve(np.array([]), 3)


def test_fold_curves_resample_a_fold_of_another_length():
    acc = fl.FoldCurves(2, 4)
    acc.add(0, np.array([0.2, 0.8]))
    acc.add(1, np.array([0.9, 0.1, 0.5, 0.3]))
    np.testing.assert_allclose(acc.curves[0], [0.8, 0.65, 0.35, 0.2])
    np.testing.assert_allclose(acc.curves[1], [0.9, 0.5, 0.3, 0.1])
    s = acc.summary()
    assert s["mean_p"] == pytest.approx((0.5 + 0.45) / 2)
    np.testing.assert_allclose(s["curve_mean"], [0.85, 0.575, 0.325, 0.15])
