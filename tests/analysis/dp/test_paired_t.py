"""The one paired t statistic (dptune.analysis.dp.paired_tests.paired_t): hand-computed values,
its rule for differences that are all equal, and every caller against scipy.stats.ttest_rel (an
independent implementation) on random data."""

from __future__ import annotations

import hashlib
import inspect
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from dptune.analysis.dp import bootstrap
from dptune.analysis.dp import paired_tests as pt

# ---------------------------------------------------------------- by hand


def _moments(d: list[float]) -> tuple[float, float, int, float, float]:
    """``(mean, var, n, ss, size)`` of the differences ``d``, by the textbook formulas."""
    x = np.asarray(d, dtype=np.float64)
    n = len(x)
    ss = float(np.sum((x - x.mean()) ** 2))
    return float(x.mean()), ss / (n - 1), n, ss, float(np.max(np.abs(x)))


def test_differences_1_2_3_by_hand():
    # mean 2, var ((1-2)^2 + 0 + (3-2)^2) / 2 = 1, t = 2 / sqrt(1 / 3) = 2 sqrt(3)
    m = _moments([1.0, 2.0, 3.0])
    assert m == (2.0, 1.0, 3, 2.0, 3.0)
    assert pt.paired_t(*m) == pytest.approx(2.0 * np.sqrt(3.0), rel=1e-15)
    assert pt.paired_t(*m) == pytest.approx(3.4641016151377544, rel=1e-15)
    assert pt.paired_t(*m, squared=True) == pytest.approx(12.0, rel=1e-15)
    assert pt.paired_t(*_moments([-1.0, -2.0, -3.0])) == pytest.approx(-2.0 * np.sqrt(3.0))
    # p = 2 T_2.sf(2 sqrt 3) = 1 - 2 sqrt(3) / sqrt(2 + 12) (closed form of Student t, 2 df)
    p = pt.t_pvalues(np.array([pt.paired_t(*m)]), 2)[0]
    assert p == pytest.approx(1.0 - 2.0 * np.sqrt(3.0) / np.sqrt(14.0), rel=1e-12)
    assert p == pytest.approx(sps.ttest_1samp([1.0, 2.0, 3.0], 0.0).pvalue, rel=1e-12)
    # differences of mean 0 that vary: t = 0, p = 1 (not the rule: the variance is 1)
    assert pt.paired_t(*_moments([1.0, -1.0, 1.0, -1.0])) == 0.0


def test_the_rule_for_differences_that_are_all_equal():
    # constant non-zero differences: var = ss = 0, t = +-inf, p = 0 (scipy's limit)
    assert pt.paired_t(*_moments([0.5] * 4)) == np.inf
    assert pt.paired_t(*_moments([-0.5] * 4)) == -np.inf
    assert pt.paired_t(*_moments([0.5] * 4), squared=True) == np.inf
    # all differences zero: t = 0, p = 1 (scipy gives NaN)
    assert pt.paired_t(*_moments([0.0] * 4)) == 0.0
    assert pt.paired_t(*_moments([0.0] * 4), squared=True) == 0.0
    # a variance that is rounding noise of the sample's sum of squares (ss = 1e-5): the rule,
    # with the mean compared to the largest difference (0.3)
    assert pt.paired_t(0.3, 1e-20, 40, 1e-5, 0.3) == np.inf
    assert pt.paired_t(1e-12, 1e-20, 40, 1e-5, 0.3) == 0.0  # below 1e-9 x 0.3: zero
    assert pt.paired_t(1e-9, 1e-20, 40, 1e-5, 0.3) == np.inf
    # just above the bound: an ordinary t
    assert pt.paired_t(0.3, 2e-19, 40, 1e-5, 0.3) == pytest.approx(0.3 / np.sqrt(2e-19 / 40))
    assert np.isnan(pt.paired_t(np.nan, np.nan, 4, np.nan, 1.0))
    # both routes from t to p: 0 -> 1, +-inf -> 0
    for df in (1, 3, 500):
        t = np.array([0.0, np.inf, -np.inf])
        assert pt.t_pvalues(t, df).tolist() == [1.0, 0.0, 0.0]
        assert pt.two_sided_t_pvalue(t, df).tolist() == [1.0, 0.0, 0.0]
        table = pt.t_tail_table(df)
        assert [pt.table_pvalue(x, table) for x in t] == [1.0, 0.0, 0.0]


def test_the_vectorised_form_is_the_compiled_function():
    rng = np.random.default_rng(0)
    mean, var = rng.normal(size=50), rng.gamma(1.0, size=50)
    var[:5] = 0.0
    mean[:2] = 0.0
    ss, size = var * 9.0, np.abs(mean) + 1.0
    for squared in (False, True):
        got = pt.paired_t_statistics(mean, var, 10, ss, size, squared)
        want = [pt.paired_t(*x, squared) for x in zip(mean, var, [10.0] * 50, ss, size,
                                                       strict=True)]
        assert np.array_equal(got, want)
    # broadcast: one pair's scale for every column of its row
    got = pt.paired_t_statistics(mean.reshape(5, 10), var.reshape(5, 10), 10,
                                 ss[::10, None], size[::10, None])
    assert got.shape == (5, 10)
    assert got[3, 4] == pt.paired_t(mean[34], var[34], 10.0, ss[30], size[30])


# ---------------------------------------------------------------- every caller vs scipy


def _data(n_users: int = 37, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, rows_a, rows_b)``: 9 configurations, 12 pairs, among them a pair of identical
    rows (differences all 0) and a pair that differs by a constant."""
    rng = np.random.default_rng(seed)
    v = rng.normal(0.3, 0.2, size=(9, n_users)) + rng.normal(0.0, 0.1, size=(1, n_users))
    v = np.round(v * 1024.0) / 1024.0  # multiples of 2^-10: v[2] - v[3] is exactly -0.25
    v[1] = v[0]
    v[3] = v[2] + 0.25
    ra = np.array([0, 2, 0, 4, 5, 6, 7, 8, 1, 2, 6, 3])
    rb = np.array([1, 3, 2, 5, 6, 7, 8, 0, 4, 7, 4, 5])
    return v, ra, rb


def _scipy(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ttest_rel``'s ``(t, p)`` per row, with the documented values where scipy gives NaN."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy on constant differences
        res = sps.ttest_rel(a, b, axis=-1)
    t, p = np.array(res.statistic, dtype=np.float64), np.array(res.pvalue, dtype=np.float64)
    d = a - b
    same = np.all(d == d[..., :1], axis=-1)
    zero = same & (d[..., 0] == 0.0)
    t[same] = np.where(zero[same], 0.0, np.where(d[..., 0][same] > 0, np.inf, -np.inf))
    p[same] = np.where(zero[same], 1.0, 0.0)
    return t, p


def test_the_tables_t_test_agrees_with_scipy():
    v, ra, rb = _data()
    t_ref, p_ref = _scipy(v[ra], v[rb])
    assert p_ref[0] == 1.0 and p_ref[1] == 0.0  # the two degenerate pairs
    np.testing.assert_allclose(pt.paired_pvalues(v[ra], v[rb]), p_ref, rtol=1e-10)
    np.testing.assert_allclose(pt.pvalues_from_differences(v[ra] - v[rb]), p_ref, rtol=1e-10)
    np.testing.assert_allclose(pt.ttest_pvalues(v, ra, rb), p_ref, rtol=1e-10)
    np.testing.assert_allclose(pt.paired_test("t").pvalues(v, ra, rb), p_ref, rtol=1e-10)
    np.testing.assert_allclose(pt.paired_test("t").pvalues(v.astype(np.float32), ra, rb),
                               _scipy(*(v.astype(np.float32).astype(np.float64)[r]
                                        for r in (ra, rb)))[1], rtol=1e-9)
    cols = np.array([30, 2, 11, 5, 17, 23, 8, 0])
    np.testing.assert_allclose(pt.paired_test("t").pvalues(v, ra, rb, cols),
                               _scipy(v[ra][:, np.sort(cols)], v[rb][:, np.sort(cols)])[1],
                               rtol=1e-10)


def test_the_bootstraps_point_values_and_shrink_factor_agree_with_scipy():
    v, ra, rb = _data()
    n = v.shape[1]
    t_ref, p_ref = _scipy(v[ra], v[rb])
    perm, starts, w = bootstrap.user_draws(np.arange(n), 5, seed=3, groups=6)
    dbar, _c1, c2, constant, size = bootstrap.pair_moments(v, ra, rb, perm, starts)
    np.testing.assert_allclose(bootstrap.point_t(dbar, c2, size, n), t_ref, rtol=1e-10)
    np.testing.assert_allclose(bootstrap.point_t(dbar, c2, size, n, squared=True), t_ref ** 2,
                               rtol=1e-10)
    np.testing.assert_allclose(bootstrap.point_pvalues(dbar, c2, size, n), p_ref, rtol=1e-10)
    moments = bootstrap.fold_moments(v, ra, rb, perm, starts, w, np.arange(n))
    np.testing.assert_allclose(moments.p, p_ref, rtol=1e-10)
    # the shrink factor from scipy's t of the pairs that vary
    nu = n - 1
    free = ~constant
    k = np.sqrt(max(0.0, 1.0 - free.sum() / (np.sum(t_ref[free] ** 2) * (nu - 2) / nu)))
    assert 0.0 < k < 1.0
    got = bootstrap.shrink_factor(bootstrap.point_t(dbar, c2, size, n, squared=True), constant, n)
    assert got == pytest.approx(k, rel=1e-12)
    np.testing.assert_allclose(moments.shrunk[free], k * dbar[free], rtol=1e-12)


def test_the_replicates_agree_with_scipy_on_resampled_users():
    """The bootstrap's compiled replicates (one user per group) and their NumPy twin
    (``resampled_ttest_pvalues``) against scipy's t-test of the resampled users, moved to the
    replicate's centre: the same numbers, up to the table's 1e-6 and float32 sums."""
    v, ra, rb = _data(n_users=30, seed=2)
    n, n_boot = v.shape[1], 8
    d = v[ra] - v[rb]
    perm, starts, w = bootstrap.user_draws(np.arange(n), n_boot, seed=4, groups=n)
    w[0] = 1.0  # the first replicate: every user once, the sample itself
    moments = bootstrap.fold_moments(v, ra, rb, perm, starts, w, np.arange(n))
    reps = bootstrap.fold_replicate_pvalues(moments, moments.dbar, n_boot)  # centred at dbar
    counts = np.zeros((n_boot, n))
    counts[:, perm] = w  # group g is user perm[g]
    twin = pt.resampled_ttest_pvalues(d, counts).T
    for r in range(n_boot):
        idx = np.repeat(np.arange(n), counts[r].astype(int))
        want = _scipy(d[:, idx], np.zeros((len(d), len(idx))))[1]
        np.testing.assert_allclose(twin[r], want, rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(reps[r], want, atol=2e-6)
    np.testing.assert_allclose(reps[0], _scipy(v[ra], v[rb])[1], atol=2e-6)


def test_the_simulations_t_test_agrees_with_scipy():
    from dptune.studies.simulations.coverage import fold_pvalues

    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 6, 25))
    x[1, 2] = x[1, 0]  # one table with a pair of identical rows
    ra, rb = np.triu_indices(6, k=1)
    got = fold_pvalues(x, ra, rb)
    assert got.shape == (3, len(ra))
    np.testing.assert_allclose(got, _scipy(x[:, ra], x[:, rb])[1], rtol=1e-10)


# ---------------------------------------------------------------- numba's cache


def test_the_bootstraps_kernels_name_what_they_compile_in():
    """numba's on-disk cache keys a kernel on its own file; the bootstrap's kernels compile in
    ``paired_t`` and ``table_pvalue`` of paired_tests.py. Their source (and the rule's
    constants) must match the digest written in bootstrap.py, so that a change of them changes
    bootstrap.py too and its cached kernels are compiled again: on a failure, update
    ``bootstrap._COMPILED_IN`` to the value printed."""
    src = "".join(inspect.getsource(f.py_func) for f in (pt.paired_t, pt.table_pvalue))
    src += repr((pt.ZERO_VARIANCE_RTOL, pt.ZERO_MEAN_RTOL))
    digest = hashlib.sha256(src.encode()).hexdigest()[:16]
    assert bootstrap._COMPILED_IN == digest, digest
