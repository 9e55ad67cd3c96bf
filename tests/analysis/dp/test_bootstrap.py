"""Bootstrap of the robust DP (dptune.analysis.dp.bootstrap): exactness against the user bootstrap,
the fast t tail, and a known answer (a metric that is a noisy copy of another)."""

import dataclasses

import numpy as np
import pytest
from scipy import stats as st

from dptune.analysis.dp import bootstrap
from dptune.analysis.dp import paired_tests as pt
from dptune.analysis.dp.paired_tests import (
    index_counts,
    resampled_ttest_pvalues,
    ttest_pvalues,
    two_sided_t_pvalue,
)
from dptune.errors import DptuneError


@pytest.mark.parametrize("df", [1, 3, 29, 5499])
def test_two_sided_t_pvalue_matches_scipy(df):
    t = np.concatenate([np.linspace(-70, 70, 20001), [0.0, 1e-9, 63.99, 64.0, 500.0]])
    exact = 2.0 * st.t.sf(np.abs(t), df)
    assert np.max(np.abs(two_sided_t_pvalue(t, df) - exact)) < 1e-6
    assert np.isnan(two_sided_t_pvalue(np.array([np.nan]), df)[0])
    assert two_sided_t_pvalue(np.array([np.inf, -np.inf]), df).tolist() == [0.0, 0.0]
    with pytest.raises(DptuneError, match="df"):
        two_sided_t_pvalue(t, 0)


def test_user_draws_balanced_and_seeded():
    users = np.arange(1000)
    perm, starts, w = bootstrap.user_draws(users, 30, seed=4, groups=128)
    assert sorted(perm) == list(range(1000)) and starts[0] == 0 and starts[-1] == 1000
    sizes = np.diff(starts)
    assert len(sizes) == 128 and sizes.max() - sizes.min() <= 1
    assert w.shape == (30, 128) and np.all(w.sum(axis=1) == 128)
    again = bootstrap.user_draws(users, 30, seed=4, groups=128)
    assert all(np.array_equal(x, y) for x, y in zip((perm, starts, w), again, strict=True))
    assert not np.array_equal(perm, bootstrap.user_draws(users, 30, seed=5)[0])
    assert len(bootstrap.user_draws(np.arange(50), 3, 0, groups=128)[1]) == 51  # G = min(n, groups)


def test_one_user_per_group_is_the_exact_user_bootstrap():
    rng = np.random.default_rng(3)
    n, P, B = 40, 7, 50
    d = rng.normal(0.05, 0.3, size=(P, n))
    d[0] = 0.0  # all-zero pair: p = 1 in every replicate
    d[1] = 0.2  # constant non-zero pair: p = 0
    values = np.vstack([d, np.zeros((1, n))])
    ra, rb = np.arange(P), np.full(P, P)
    perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=9, groups=n)
    counts = np.zeros((B, n))
    counts[:, perm] = w  # group g is the user perm[g]
    mult = bootstrap.pair_multiplicities(B, P, seed=9)
    moments = bootstrap.fold_moments(values, ra, rb, perm, starts, w, np.arange(n))
    p = moments.p
    reps = bootstrap.fold_replicate_means(moments, mult, bootstrap.bootstrap_centres([moments])[0])
    # the bootstrap world: every varying pair's differences moved to k * mean, with the
    # James-Stein factor k^2 = 1 - P' / (sum t^2 (nu - 2) / nu) computed here with scipy
    t = st.ttest_1samp(d[2:], 0.0, axis=1).statistic
    nu = n - 1
    k = np.sqrt(max(0.0, 1.0 - (P - 2) / (np.sum(t**2) * (nu - 2) / nu)))
    assert 0.0 < k < 1.0
    shifted = d.copy()
    shifted[2:] += (k - 1.0) * d[2:].mean(axis=1, keepdims=True)
    want = resampled_ttest_pvalues(shifted, counts)  # (P, B): the exact user bootstrap
    assert np.allclose(reps, (mult * want.T).sum(axis=1) / P, atol=2e-6)
    # the per-pair p-values of the first replicates: the exact bootstrap's, and the terms
    # that the replicates weigh and sum
    each = bootstrap.fold_replicate_pvalues(moments, bootstrap.bootstrap_centres([moments])[0], 20)
    assert each.shape == (20, P)
    assert np.allclose(each, want.T[:20], atol=2e-6)
    np.testing.assert_allclose((mult[:20] * each).sum(axis=1) / P, reps[:20], rtol=1e-12)
    centre = bootstrap.bootstrap_centres([moments])[0]
    assert bootstrap.fold_replicate_pvalues(moments, centre, 10**6).shape == (B, P)
    assert np.allclose(p[2:], st.ttest_rel(d[2:], np.zeros_like(d[2:]), axis=1).pvalue,
                       atol=1e-12)
    assert p[0] == 1.0 and p[1] == 0.0
    idx = np.repeat(np.arange(n), counts[0].astype(int))
    assert np.array_equal(index_counts(idx[None, :], n)[0], counts[0])


def test_folds_of_the_same_users_share_each_pairs_bootstrap_world_difference():
    """Two folds of the same users: each replicate is the exact user bootstrap of every fold's
    differences moved to one common centre per pair, the mean over the folds of the shrunk
    fold means (k_f dbar_f), with the same user weights in both folds. Folds of other users
    keep their own centres; partly shared users blend the two by the share in common."""
    rng = np.random.default_rng(4)
    n, P, B = 30, 5, 40
    taste = rng.normal(0.0, 0.3, size=(P, n))  # goes with the user from fold to fold
    folds = [taste + rng.normal(0.04, 0.3, size=(P, n)) for _ in range(2)]
    ra, rb = np.arange(P), np.full(P, P)
    perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=2, groups=n)
    counts = np.zeros((B, n))
    counts[:, perm] = w
    moments = [bootstrap.fold_moments(np.vstack([d, np.zeros((1, n))]), ra, rb, perm, starts, w,
                                      np.arange(n)) for d in folds]
    centres = bootstrap.bootstrap_centres(moments)
    assert bootstrap.shared_share(moments) == 1.0 and np.array_equal(centres[0], centres[1])
    centre = centres[0]
    nu = n - 1
    shrunk = []
    for d in folds:
        t = st.ttest_1samp(d, 0.0, axis=1).statistic
        k = np.sqrt(max(0.0, 1.0 - P / (np.sum(t**2) * (nu - 2) / nu)))
        shrunk.append(k * d.mean(axis=1))
    np.testing.assert_allclose(centre, np.mean(shrunk, axis=0), rtol=1e-12, atol=1e-15)
    assert not np.allclose(shrunk[0], shrunk[1])  # the folds' own centres differ
    mult = np.ones((B, P))
    got = np.mean([bootstrap.fold_replicate_means(m, mult, centre) for m in moments], axis=0)
    want = np.mean([resampled_ttest_pvalues(d - d.mean(axis=1, keepdims=True) + centre[:, None],
                                            counts).mean(axis=0) for d in folds], axis=0)
    np.testing.assert_allclose(got, want, atol=2e-6)
    # other users in the second fold: each fold its own centre; half of them in common: halfway
    other = dataclasses.replace(moments[1], users=np.arange(n) + n)
    assert bootstrap.shared_share([moments[0], other]) == 0.0
    for got_c, own in zip(bootstrap.bootstrap_centres([moments[0], other]), shrunk, strict=True):
        np.testing.assert_allclose(got_c, own, rtol=1e-12, atol=1e-15)
    half = dataclasses.replace(moments[1], users=np.arange(n) + n // 2)
    assert bootstrap.shared_share([moments[0], half]) == 0.5
    np.testing.assert_allclose(bootstrap.bootstrap_centres([moments[0], half])[1],
                               0.5 * centre + 0.5 * shrunk[1], rtol=1e-12, atol=1e-15)
    # the public bootstrap of per-user differences is the same computation
    np.testing.assert_allclose(bootstrap.bootstrap_mean_p(folds, n_boot=B, seed=2, groups=n), got,
                               atol=1e-12)


def _configs(rng, n_configs, n_users, effect):
    """Per-user values of configurations that really differ (config c adds c * effect)."""
    base = rng.uniform(0.2, 0.6, size=n_users)
    return base[None, :] + effect * np.arange(n_configs)[:, None] + \
        rng.normal(0, 0.15, size=(n_configs, n_users))


def test_known_answer_noisy_copy_is_less_discriminative():
    rng = np.random.default_rng(11)
    n_configs, n_users, folds = 8, 300, 3
    pa, pb = np.triu_indices(n_configs, k=1)
    diffs = []
    for _ in range(folds):
        a = _configs(rng, n_configs, n_users, 0.01)
        b = a + rng.normal(0, 0.4, size=a.shape)  # metric B: a copy of A plus noise
        diffs.append(np.stack([a[pa] - a[pb], b[pa] - b[pb]]))
    reps = bootstrap.bootstrap_mean_p(diffs, n_boot=400, seed=5)
    assert reps.shape == (2, 400)
    est = [np.mean([st.ttest_1samp(d[m], 0.0, axis=1).pvalue.mean() for d in diffs])
           for m in (0, 1)]
    a, b = (bootstrap.interval_replicates(est[m], reps[m]) for m in (0, 1))
    assert bootstrap.prob_more_discriminative(a, b) >= 0.95
    assert bootstrap.prob_more_discriminative(b, a) <= 0.05
    # a metric compared with an exact copy of itself: identical replicates, never "better"
    same = bootstrap.bootstrap_mean_p([np.stack([d[0], d[0]]) for d in diffs], n_boot=200, seed=5)
    assert np.array_equal(same[0], same[1])
    assert bootstrap.prob_more_discriminative(same[0], same[1]) == 0.0
    # reproducible, and the point estimate inside its interval
    assert np.array_equal(reps, bootstrap.bootstrap_mean_p(diffs, n_boot=400, seed=5))
    point = np.mean([st.ttest_rel(d[0], np.zeros_like(d[0]), axis=1).pvalue.mean()
                     for d in diffs])
    lo, hi = bootstrap.dp_interval(point, reps[0])
    assert 0.0 <= lo <= point <= hi <= 1.0


@pytest.mark.filterwarnings("error")
def test_the_replicates_do_not_depend_on_the_scale_of_the_values():
    # every statistic of a replicate is unchanged by a common scale of the differences; the
    # float32 group sums are kept in a power of two per pair, so values near the float32 limit
    # (whose squares were infinity in float32) give the replicates of ordinary ones
    rng = np.random.default_rng(4)
    diffs = [rng.normal(0.05, 1.0, size=(2, 12, 200)) * rng.random((1, 12, 1))
             for _ in range(2)]
    diffs[0][:, 3] = 0.0  # a pair with no difference, and a constant non-zero one
    diffs[1][:, 5] = 0.25
    base = bootstrap.bootstrap_mean_p(diffs, n_boot=64, seed=3)
    exact = bootstrap.bootstrap_mean_p([d * 2.0**100 for d in diffs], n_boot=64, seed=3)
    assert np.array_equal(exact, base)  # a power of two scales every float exactly
    for scale in (1e-30, 1e20, 1e36):
        assert np.allclose(bootstrap.bootstrap_mean_p([d * scale for d in diffs], n_boot=64,
                                                      seed=3), base, rtol=0, atol=1e-5)


@pytest.mark.parametrize("differing", [1, 2, 3])
def test_a_replicate_that_draws_none_of_the_differing_users_has_no_difference(differing):
    """A pair that differs on a few of 640 users (a binary metric at N = 1 on two near-equal
    configurations): a replicate that draws none of them holds users whose differences are all
    0, and the test of such a sample gives p = 1. Shifted to the bootstrap world's difference
    like the other replicates, they were a constant non-zero difference, p = 0, in a third of
    the replicates for one differing user (the float32 sums' rounding kept their variance just
    above the zero rule)."""
    n = 640
    d = np.zeros((1, n))
    d[0, :differing] = 1.0
    perm, starts, w = bootstrap.user_draws(np.arange(n), 1000, 7, 64)
    fm = bootstrap.fold_moments(np.vstack([d, np.zeros((1, n))]), np.array([0]), np.array([1]),
                                perm, starts, w, np.arange(n))
    p = bootstrap.fold_replicate_pvalues(fm, fm.shrunk, 1000)[:, 0]
    group = [np.searchsorted(starts, np.flatnonzero(perm == u)[0], side="right") - 1
             for u in range(differing)]
    none_drawn = (w[:, group] == 0).all(axis=1)
    assert none_drawn.sum() > 50  # about exp(-differing) of the replicates
    assert (p[none_drawn] == 1.0).all()
    assert (p > 0).all()


def test_groups_keep_the_spread_of_the_user_bootstrap():
    rng = np.random.default_rng(2)
    n = 2000
    d = [rng.normal(0.01, 0.3, size=(30, n))]
    exact = bootstrap.bootstrap_mean_p(d, n_boot=600, seed=1, groups=n)
    grouped = bootstrap.bootstrap_mean_p(d, n_boot=600, seed=1, groups=128)
    assert 0.7 < grouped.std() / exact.std() < 1.4
    assert abs(grouped.mean() - exact.mean()) < 0.3 * exact.std()


def test_few_users_and_bad_input():
    one_user = [np.ones((4, 1))]
    assert np.all(bootstrap.bootstrap_mean_p(one_user, n_boot=10, seed=0) == 1.0)
    with pytest.raises(DptuneError, match="n_boot"):
        bootstrap.bootstrap_mean_p(one_user, n_boot=0)
    with pytest.raises(DptuneError, match="groups"):
        bootstrap.bootstrap_mean_p(one_user, n_boot=3, groups=0)
    with pytest.raises(DptuneError, match="folds?"):
        bootstrap.bootstrap_mean_p([], n_boot=3)
    with pytest.raises(DptuneError, match="same"):
        bootstrap.bootstrap_mean_p([np.ones((4, 5)), np.ones((3, 5))], n_boot=3)


def test_ttest_pvalues_is_the_one_group_pair_moments_bit_for_bit():
    """The register-kept sums of ``paired_tests.ttest_pvalues`` equal :func:`pair_moments` with
    one group exactly (same users, same order), with and without a subset of columns, and the
    p-values equal scipy's paired t-test to rounding."""
    rng = np.random.default_rng(5)
    v = rng.random((7, 90)).astype(np.float32)
    v[3] = v[2]  # identical rows: constant difference 0, p = 1
    ra, rb = np.array([0, 2, 4, 6, 1]), np.array([1, 3, 5, 0, 6])
    for columns in (None, np.array([80, 3, 17, 5, 60, 41, 9, 88])):
        n = v.shape[1] if columns is None else len(columns)
        dbar, _c1, c2, _constant, size = bootstrap.pair_moments(
            v, ra, rb, np.arange(n, dtype=np.int64), np.array([0, n]), columns)
        want = bootstrap.point_pvalues(dbar, c2, size, n)
        got = ttest_pvalues(v, ra, rb, columns=columns)
        assert np.array_equal(got, want)
        cols = np.arange(v.shape[1]) if columns is None else np.sort(columns)
        x = v[:, cols].astype(np.float64)
        ref = st.ttest_rel(x[ra], x[rb], axis=1).pvalue
        ref[1] = 1.0  # scipy gives nan for identical rows
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    # the all-users kernel (four pairs at a time) and the indexed one (one pair at a time) give
    # the same four sums to the bit for any number of pairs, a last incomplete four included
    cols = np.arange(v.shape[1], dtype=np.int64)
    for n_pairs in range(1, 10):
        pa, pb = rng.integers(0, 7, n_pairs), rng.integers(0, 7, n_pairs)
        dense, one = ([np.full(n_pairs, np.nan) for _ in range(4)] for _ in range(2))
        pt._pair_sums_dense(v, pa, pb, *dense)
        pt._pair_sums_one(v, pa, pb, cols, *one)
        for got_sum, want_sum in zip(dense, one, strict=True):
            assert np.array_equal(got_sum, want_sum), n_pairs


def test_user_draws_follow_the_user_across_folds():
    """The same users in two folds (in any column order) get the same group and the same
    weights; a fold missing one user moves only users at group boundaries; weights do not
    depend on the fold; integer and text ids of the same user are one user."""
    users = np.arange(1000, 3000)
    perm, starts, w = bootstrap.user_draws(users, 40, seed=5, groups=64)
    assert len(starts) == 65 and np.all(np.diff(starts) >= 31) and np.all(np.diff(starts) <= 32)
    assert np.all(w.sum(axis=1) == 64)

    def groups_of(ids, perm, starts):
        g = np.empty(len(ids), dtype=int)
        for k in range(len(starts) - 1):
            g[perm[starts[k]:starts[k + 1]]] = k
        return dict(zip(ids.tolist(), g.tolist(), strict=True))

    mine = groups_of(users, perm, starts)
    shuffled = np.random.default_rng(0).permutation(users)
    p2, s2, w2 = bootstrap.user_draws(shuffled, 40, seed=5, groups=64)
    assert groups_of(shuffled, p2, s2) == mine and np.array_equal(w2, w)
    assert np.array_equal(bootstrap.user_draws(users.astype(str), 40, seed=5, groups=64)[0], perm)
    fewer = np.delete(users, 700)
    p3, s3, w3 = bootstrap.user_draws(fewer, 40, seed=5, groups=64)
    moved = sum(groups_of(fewer, p3, s3)[u] != mine[u] for u in fewer.tolist())
    assert moved <= 64 and np.array_equal(w3, w)
    assert not np.array_equal(bootstrap.user_draws(users, 40, seed=6, groups=64)[0], perm)


def test_a_coarse_grouping_is_the_bootstrap_of_the_united_groups():
    """Replicates at a coarse grouping (the fine group sums added, coarse weights) equal the
    bootstrap with that many groups computed from scratch: same users in each coarse group
    (``G`` divisible by the coarsening), same weights, same replicates."""
    rng = np.random.default_rng(11)
    n, P, B = 256, 6, 60
    d = rng.normal(0.03, 0.4, size=(P, n))
    values = np.vstack([d, np.zeros((1, n))])
    ra, rb = np.arange(P), np.full(P, P)
    perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=3, groups=64)
    coarse = bootstrap.coarse_weights(B, 3, 64)
    assert [c.shape for c in coarse] == [(B, 32), (B, 16)]
    fine = bootstrap.fold_moments(values, ra, rb, perm, starts, w, np.arange(n), coarse=coarse)
    mult = bootstrap.pair_multiplicities(B, P, seed=1)
    for level, gc in enumerate((32, 16)):
        perm_c, starts_c, _ = bootstrap.user_draws(np.arange(n), B, seed=3, groups=gc)
        assert np.array_equal(perm_c, perm) and np.array_equal(starts_c, starts[::64 // gc])
        direct = bootstrap.fold_moments(values, ra, rb, perm_c, starts_c, coarse[level],
                                        np.arange(n))
        centre = bootstrap.bootstrap_centres([fine])[0]
        np.testing.assert_allclose(bootstrap.fold_replicate_means(fine, mult, centre, level),
                                   bootstrap.fold_replicate_means(direct, mult, centre), atol=2e-6)
    # half the replicates, at least 200 (all of them below that)
    assert ([bootstrap.coarse_replicates(b) for b in (40, 200, 300, 400, 1000)]
            == [40, 200, 200, 200, 500])
    assert [c.shape[0] for c in bootstrap.coarse_weights(1000, 3, 64)] == [500, 500]
    # fewer than 2 x 8 users' groups: no coarse grouping, no extrapolation
    assert bootstrap.coarse_weights(B, 3, 15) == ()
    assert [c.shape[1] for c in bootstrap.coarse_weights(B, 3, 20)] == [10]


def test_extrapolated_variance_recovers_the_ungrouped_variance():
    groups = [64, 32, 16]
    assert bootstrap.extrapolated_variance(groups, [0.3 + 2.0 / g for g in groups]) == \
        pytest.approx(0.3, rel=1e-12)
    assert bootstrap.extrapolated_variance([64, 32], [0.5, 0.5]) == pytest.approx(0.5, rel=1e-12)
    # exact points are fitted exactly whatever their weights (replicate counts)
    assert bootstrap.extrapolated_variance(groups, [0.3 + 2.0 / g for g in groups],
                                           [1000, 500, 500]) == pytest.approx(0.3, rel=1e-12)
    # a noisy point with few replicates weighs less: the fit moves less towards it
    noisy = [0.3 + 2.0 / 64, 0.3 + 2.0 / 32 + 0.02, 0.3 + 2.0 / 16]
    assert abs(bootstrap.extrapolated_variance(groups, noisy, [1000, 50, 1000]) - 0.3) < \
        abs(bootstrap.extrapolated_variance(groups, noisy, [1000, 1000, 1000]) - 0.3)
    with pytest.raises(DptuneError, match="variances"):
        bootstrap.extrapolated_variance(groups, [0.1] * 3, [1000, 0, 500])
    for bad in ([64, 64], [64]):
        with pytest.raises(DptuneError, match="variances"):
            bootstrap.extrapolated_variance(bad, [0.1] * len(bad))
    with pytest.raises(DptuneError, match="variances"):
        bootstrap.extrapolated_variance([64, 32], [0.1, 0.0])


def test_ungrouped_scale_shrinks_the_interval_of_many_independent_pairs_only():
    """Many pairs of distinct configurations: the grouped replicates' spread holds the
    spurious ``1 / G`` term and the scale is well below 1; one pair: nothing to remove (the
    scale stays near 1, never above). Folds without coarse groupings are left alone."""
    rng = np.random.default_rng(5)
    n, B = 400, 400

    def scale(n_configs):
        ra, rb = np.triu_indices(n_configs, k=1)
        perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=8)
        coarse = bootstrap.coarse_weights(B, 8, w.shape[1])
        folds = []
        for _ in range(2):
            x = rng.normal(size=(n_configs, n)) \
                + np.linspace(-1.0, 1.0, n_configs)[:, None] / np.sqrt(n)  # moderate
            folds.append(bootstrap.fold_moments(x, ra, rb, perm, starts, w, np.arange(n),
                                                coarse=coarse))
        mult = np.ones((B, len(ra)))
        raw = bootstrap.replicate_sum(folds, mult) / 2
        return bootstrap.ungrouped_scale(folds, mult, raw)

    many, few = scale(60), scale(2)
    assert 0.3 < many < 0.9, many  # 0.75-0.80 over seeds
    assert 0.9 < few <= 1.0, few
    perm, starts, w = bootstrap.user_draws(np.arange(12), B, seed=8)
    x = rng.normal(size=(4, 12))
    ra, rb = np.triu_indices(4, k=1)
    lone = [bootstrap.fold_moments(x, ra, rb, perm, starts, w, np.arange(12),
                                   coarse=bootstrap.coarse_weights(B, 8, w.shape[1]))]
    raw = bootstrap.replicate_sum(lone, np.ones((B, 6)))
    assert bootstrap.ungrouped_scale(lone, np.ones((B, 6)), raw) == 1.0
    # a fold without a test (one user: no coarse grouping) beside one with them counts p = 1
    # at every grouping, as it does at the fine one
    big = bootstrap.user_draws(np.arange(n), B, seed=8)
    one = bootstrap.user_draws(np.arange(1), B, seed=8)
    mixed = [bootstrap.fold_moments(rng.normal(size=(4, k)), ra, rb, *draws, np.arange(k),
                                    coarse=bootstrap.coarse_weights(B, 8, draws[2].shape[1]))
             for k, draws in ((n, big), (1, one))]
    assert mixed[1].coarse == ()
    mult = np.ones((B, 6))
    for level in (0, 1):
        part = bootstrap.fold_replicate_means(mixed[1], mult, mixed[1].shrunk, level)
        assert part.shape == (bootstrap.coarse_replicates(B),) and np.all(part == 1.0)
        assert (bootstrap.replicate_sum(mixed, mult, level).shape
                == (bootstrap.coarse_replicates(B),))
    raw = bootstrap.replicate_sum(mixed, mult) / 2
    assert 0.0 < bootstrap.ungrouped_scale(mixed, mult, raw) <= 1.0


def test_interval_scale_is_checked_and_one_is_the_plain_interval():
    reps = np.random.default_rng(2).uniform(0.3, 0.5, 200)
    assert np.array_equal(bootstrap.interval_replicates(0.4, reps, 1.0),
                          bootstrap.interval_replicates(0.4, reps))
    lo, hi = bootstrap.dp_interval(0.4, reps)
    lo_s, hi_s = bootstrap.dp_interval(0.4, reps, scale=0.5)
    assert lo < lo_s < 0.4 < hi_s < hi
    # a scale above 1 widens (a grid sample's small-sample factor); it stays inside [0, 1]
    lo_w, hi_w = bootstrap.dp_interval(0.4, reps, scale=1.5)
    assert 0.0 < lo_w < lo < 0.4 < hi < hi_w < 1.0
    for bad in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(DptuneError, match="scale"):
            bootstrap.interval_replicates(0.4, reps, bad)


def _weighted_t(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(B, P)`` paired t statistics of the rows of ``d`` (``(P, n)``) on the users weighted by
    ``counts`` (``(B, n)``): the resampled sample written out, an oracle independent of the
    group sums."""
    ns = counts.sum(axis=1)[:, None]
    mean = counts @ d.T / ns
    var = (counts @ (d.T ** 2) - ns * mean ** 2) / (ns - 1.0)
    return mean / np.sqrt(var / ns)


def test_replicate_world_sizes_are_each_replicates_shrunk_squared_t():
    """``sizes`` collects, per replicate, ``max(0, sum_j c_rj t_rj^2 - P'_r nu / (nu - 2))``
    (the James-Stein size of the world the replicate stands for) from the same compiled pass
    as the p-values; checked against the resampled users written out, with a constant pair
    (left out of P') and pair weights; the replicates themselves are unchanged by asking."""
    rng = np.random.default_rng(11)
    n, P, B = 30, 6, 40
    d = rng.normal(0.15, 1.0, size=(P, n))
    d[0] = 0.3  # constant non-zero: t = +-inf, no size, not among P'
    values = np.vstack([d, np.zeros((1, n))])
    ra, rb = np.arange(P), np.full(P, P)
    perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=4, groups=n)
    counts = np.zeros((B, n))
    counts[:, perm] = w
    mult = bootstrap.pair_weights(B, P, 3 * P, seed=4)  # sampled pairs: weights other than 1
    moments = bootstrap.fold_moments(values, ra, rb, perm, starts, w, np.arange(n))
    centre = bootstrap.bootstrap_centres([moments])[0]
    sizes = np.zeros(B)
    reps = bootstrap.fold_replicate_means(moments, mult, centre, sizes=sizes)
    assert np.array_equal(reps, bootstrap.fold_replicate_means(moments, mult, centre))
    shifted = d[1:] + (centre[1:] - d[1:].mean(axis=1))[:, None]  # the bootstrap world
    t = _weighted_t(shifted, counts)
    t2 = (mult[:, 1:] * t ** 2).sum(axis=1)
    nu = n - 1
    want = np.maximum(0.0, t2 - mult[:, 1:].sum(axis=1) * nu / (nu - 2))
    np.testing.assert_allclose(sizes, want, rtol=1e-5)
    assert np.any(want == 0.0) or want.min() > 0.0
    assert np.array_equal(bootstrap.world_size(np.array([5.0, 1.0]), 2.0, 3), [5.0, 1.0])  # nu = 2
    assert bootstrap.world_size(10.0, 4.0, 11) == pytest.approx(10.0 - 4.0 * 10 / 8)


def _moderate_folds(rng, n_configs, n, B, shared, folds=3):
    ra, rb = np.triu_indices(n_configs, k=1)
    perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=3)
    means = 2.0 * np.linspace(-1.0, 1.0, n_configs)[:, None] / np.sqrt(n)
    taste = rng.normal(size=(n_configs, n)) if shared else 0.0
    return [bootstrap.fold_moments(means + taste + rng.normal(size=(n_configs, n)), ra, rb, perm,
                                   starts, w, np.arange(n)) for _ in range(folds)], len(ra)


def test_size_factors_enlarge_the_errors_of_replicates_whose_world_is_larger():
    """Moderate differences: the bootstrap's spread falls as its world's differences grow
    (a negative slope), so replicates whose differences came out larger get factors above 1
    and the smaller ones below, equal to 1 at the mean size; no fold with a test, or worlds
    that do not vary: all 1."""
    rng = np.random.default_rng(21)
    B = 400
    folds, P = _moderate_folds(rng, 6, 300, B, shared=True)
    mult = np.ones((B, P))
    centres = bootstrap.bootstrap_centres(folds)
    sizes = np.zeros(B)
    raw = bootstrap.replicate_sum(folds, mult, centres=centres, sizes=sizes) / len(folds)
    f = bootstrap.size_factors(folds, mult, centres, raw, sizes)
    assert f.shape == (B,) and np.all(np.isfinite(f)) and np.all(f > 0)
    order = np.argsort(sizes)
    assert np.all(np.diff(f[order]) >= 0.0)  # larger world, larger factor (beta < 0)
    assert f.min() < 1.0 < f.max()
    # one slope: log f is linear in log(S_r + P') between the clipped ends, which are flat
    # (sizes beyond the three worlds' are not extrapolated)
    free = np.mean([np.count_nonzero(~m.constant) for m in folds])
    x = np.log(sizes / len(folds) + free)
    inner = (f > f.min()) & (f < f.max())
    assert inner.sum() > B // 4 and np.sum(f == f.min()) > 1 and np.sum(f == f.max()) > 1
    beta = np.polyfit(x[inner], -np.log(f[inner]), 1)[0]
    np.testing.assert_allclose(-np.log(f[inner]), beta * x[inner] - beta * x[inner].mean()
                               - np.mean(np.log(f[inner])), atol=1e-9)
    assert -bootstrap.MAX_SIZE_SLOPE <= beta < 0.0
    # the interval: factors of 1 are the basic interval; the studentised one reaches higher
    est = float(np.mean([m.p.mean() for m in folds]))
    basic = bootstrap.dp_interval(est, raw)
    assert bootstrap.dp_interval(est, raw, factors=np.ones(B)) == basic
    stud = bootstrap.dp_interval(est, raw, factors=f)
    assert 0.0 <= stud[0] < est < stud[1] <= 1.0
    for bad in (np.ones(B - 1), np.r_[np.ones(B - 1), 0.0], np.r_[np.ones(B - 1), np.nan]):
        with pytest.raises(DptuneError, match="factors"):
            bootstrap.dp_interval(est, raw, factors=bad)
    # nothing to measure: no fold with a test, or identical worlds
    perm, starts, w = bootstrap.user_draws(np.arange(1), B, seed=3)
    lone = [bootstrap.fold_moments(rng.normal(size=(3, 1)), *np.triu_indices(3, k=1), perm, starts,
                                   w, np.arange(1))]
    assert np.array_equal(bootstrap.size_factors(lone, np.ones((B, 3)), [lone[0].shrunk],
                                                 np.ones(B), np.zeros(B)), np.ones(B))
    flat = np.full(B, 0.4)
    assert np.array_equal(bootstrap.size_factors(folds, mult, centres, flat, sizes), np.ones(B))


_THREADS_SCRIPT = """
import sys
import numba
import numpy as np
from dptune.analysis.dp import bootstrap
from dptune.analysis.dp.paired_tests import ttest_pvalues

assert numba.get_num_threads() == 2, numba.get_num_threads()
rng = np.random.default_rng(11)
n, B = 300, 200
x = rng.normal(size=(9, n)) + np.linspace(0.0, 0.3, 9)[:, None]
x[3] = x[2]  # a constant zero difference
ra, rb = np.triu_indices(9, k=1)
cols = np.sort(rng.choice(n, 250, replace=False))
perm, starts, w = bootstrap.user_draws(np.arange(n), B, seed=2)
mult = bootstrap.pair_multiplicities(B, len(ra), seed=2)
out = {}
for threads in (1, 2):
    numba.set_num_threads(threads)
    moments = bootstrap.fold_moments(x, ra, rb, perm, starts, w, np.arange(n),
                                     coarse=bootstrap.coarse_weights(B, 8, w.shape[1]))
    centre = bootstrap.bootstrap_centres([moments])[0]
    sizes = np.zeros(B)
    out[threads] = [ttest_pvalues(x, ra, rb), ttest_pvalues(x, ra, rb, columns=cols),
                    moments.p, bootstrap.replicate_sum([moments], mult, sizes=sizes), sizes,
                    bootstrap.replicate_sum([moments], mult, level=0),
                    bootstrap.fold_replicate_pvalues(moments, centre, 50)]
for a, b in zip(out[1], out[2], strict=True):
    assert a.tobytes() == b.tobytes()
print(len(out[2]))
"""


def test_the_compiled_kernels_give_the_same_bits_on_one_and_two_threads(tmp_path):
    """The parallel loops of the t-tests and the bootstrap (each thread owns its outputs) give
    the same bits on 1 and 2 numba threads. A process of its own, started with 2 numba threads:
    the test run holds each worker to its share of the cores (tests/conftest.py)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "7"


@pytest.mark.parametrize("rest", [0.25, 0.0])
def test_a_nan_beside_equal_differences_is_not_a_constant_pair(rest):
    """The bootstrap's pass reads a pair's min and max difference beside its sums: a NaN among
    differences that are otherwise equal was skipped by the first and read as a constant pair
    (p = 0, or 1 for zeros), so the fold loop's NaN check never saw it."""
    n = 6
    d = np.full(n, rest)
    d[3] = np.nan
    values = np.vstack([d, np.zeros(n), np.linspace(0.0, 1.0, n)])
    perm, starts, w = bootstrap.user_draws(np.arange(n), 10, 0)
    fm = bootstrap.fold_moments(values, np.array([0, 2]), np.array([1, 1]), perm, starts, w,
                                np.arange(n))
    assert not fm.constant[0] and np.isnan(fm.p[0])
    assert fm.p[1] == pytest.approx(st.ttest_rel(values[2], values[1]).pvalue, abs=1e-12)
    dbar, _, _, constant, _ = bootstrap.pair_moments(values, np.array([0]), np.array([1]),
                                                     perm, starts)
    assert not constant[0] and np.isnan(dbar[0])
