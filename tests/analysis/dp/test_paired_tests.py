"""dptune.analysis.dp.paired_tests: paired tests, corrections, Sakai DP, KS calibration check."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from dptune.analysis.dp import paired_tests
from dptune.errors import DptuneError


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- paired t-test


@pytest.mark.parametrize("shape", [(1, 2), (3, 5), (25, 100), (7, 1000)])
def test_ttest_equals_scipy(shape: tuple[int, int]) -> None:
    rng = _rng(shape[1])
    a = rng.normal(0.3, 1.0, shape)
    b = a + rng.normal(0.05, 0.5, shape)
    got = paired_tests.paired_pvalues(a, b, test="t")
    want = sps.ttest_rel(a, b, axis=1).pvalue
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)


def test_ttest_equals_scipy_on_metric_like_values() -> None:
    # many zeros and ties, as per-user precision values are
    rng = _rng(3)
    a = rng.binomial(10, 0.2, (20, 300)) / 10.0
    b = rng.binomial(10, 0.25, (20, 300)) / 10.0
    np.testing.assert_allclose(
        paired_tests.paired_pvalues(a, b), sps.ttest_rel(a, b, axis=1).pvalue, rtol=1e-10
    )


def test_ttest_degenerate_rows() -> None:
    a = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.5, 0.7, 0.1]])
    b = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0], [0.4, 0.9, 0.0]])
    p = paired_tests.paired_pvalues(a, b)
    assert p[0] == 1.0  # all differences zero: p = 1, not NaN
    assert p[1] == 0.0  # constant non-zero difference: scipy's limit
    assert p[2] == pytest.approx(sps.ttest_rel(a[2], b[2]).pvalue, rel=1e-12)
    # scipy agrees on the limit of a constant non-zero difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sps.ttest_rel(a[1], b[1]).pvalue == 0.0


@pytest.mark.parametrize("test", paired_tests.TESTS)
def test_fewer_than_two_users_give_one(test: str) -> None:
    for shape in ((3, 1), (2, 0)):
        p = paired_tests.paired_pvalues(np.ones(shape), np.zeros(shape), test=test)
        assert p.tolist() == [1.0] * shape[0]


@pytest.mark.parametrize("test", paired_tests.TESTS)
def test_all_zero_differences_give_one(test: str) -> None:
    a = _rng(1).random((4, 30))
    np.testing.assert_array_equal(paired_tests.paired_pvalues(a, a.copy(), test=test), np.ones(4))


def test_one_dimensional_input_is_one_pair() -> None:
    a, b = _rng(2).random(40), _rng(3).random(40)
    p = paired_tests.paired_pvalues(a, b)
    assert p.shape == (1,)
    assert p[0] == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-12)


def test_no_pairs_and_bad_input() -> None:
    assert paired_tests.paired_pvalues(np.zeros((0, 5)), np.zeros((0, 5))).shape == (0,)
    with pytest.raises(DptuneError, match="test: unknown test 'z'"):
        paired_tests.paired_pvalues(np.zeros((1, 3)), np.zeros((1, 3)), test="z")
    with pytest.raises(DptuneError, match="shapes differ"):
        paired_tests.paired_pvalues(np.zeros((1, 3)), np.zeros((1, 4)))
    with pytest.raises(DptuneError, match="NaN"):
        paired_tests.paired_pvalues(np.array([[1.0, np.nan, 2.0]]), np.zeros((1, 3)))
    with pytest.raises(DptuneError, match="n_resamples"):
        paired_tests.paired_pvalues(np.ones((1, 3)), np.zeros((1, 3)), test="bootstrap",
                                    n_resamples=0)


def test_aa_ttest_pvalues_are_uniform() -> None:
    """Under H0 (A/A, normal data) the t-test p-values are U(0,1): KS does not reject at 1%."""
    rng = _rng(2019)
    a = rng.normal(size=(400, 50))
    b = rng.normal(size=(400, 50))
    p = paired_tests.paired_pvalues(a, b)
    stat, pv = paired_tests.ks_uniform(p)
    assert pv > 0.01, (stat, pv)
    assert (stat, pv) == pytest.approx(tuple(sps.kstest(p, "uniform")))


# ---------------------------------------------------------------- Wilcoxon


def test_wilcoxon_equals_scipy_per_row() -> None:
    rng = _rng(5)
    a = rng.binomial(5, 0.3, (6, 80)) / 5.0
    b = rng.binomial(5, 0.35, (6, 80)) / 5.0
    got = paired_tests.paired_pvalues(a, b, test="wilcoxon")
    want = [sps.wilcoxon(a[i], b[i], zero_method="wilcox").pvalue for i in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ---------------------------------------------------------------- resampling tests


@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
def test_resampling_tests_seeded_and_bounded(test: str) -> None:
    rng = _rng(7)
    a = rng.normal(size=(5, 60))
    b = a + rng.normal(0.0, 1.0, (5, 60)) + np.array([0, 0, 0.2, 1.0, 3.0])[:, None]
    p1 = paired_tests.paired_pvalues(a, b, test=test, n_resamples=499, seed=11)
    p2 = paired_tests.paired_pvalues(a, b, test=test, n_resamples=499, seed=11)
    np.testing.assert_array_equal(p1, p2)
    assert np.all(p1 >= 1 / 500) and np.all(p1 <= 1)
    assert p1[-1] == pytest.approx(1 / 500)  # a huge effect is never matched by a resample
    # p-values are multiples of 1/(B+1)
    np.testing.assert_allclose(p1 * 500, np.round(p1 * 500), atol=1e-9)


@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
def test_resampling_tests_agree_with_ttest(test: str) -> None:
    """For a moderate sample the resampling p-values are close to the t-test ones."""
    rng = _rng(8)
    a = rng.normal(size=(8, 200))
    b = a + rng.normal(0.0, 1.0, (8, 200)) + np.linspace(0, 0.25, 8)[:, None]
    p_t = paired_tests.paired_pvalues(a, b)
    p_r = paired_tests.paired_pvalues(a, b, test=test, n_resamples=4000, seed=1)
    np.testing.assert_allclose(p_r, p_t, atol=0.04)


def test_permutation_matches_exact_enumeration() -> None:
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.0, 0.4, -0.2, 0.1, 0.25, 0.05])
    obs = abs(d.mean())
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=d.size)))
    exact = np.mean(np.abs(flips @ d / d.size) >= obs * (1 - 1e-12))
    p = paired_tests.paired_pvalues(
        d[None], np.zeros((1, d.size)), test="permutation", n_resamples=20000, seed=3
    )
    assert p[0] == pytest.approx(exact, abs=0.01)


def test_resampled_ttest_equals_ttest_on_resampled_users() -> None:
    rng = _rng(9)
    d = rng.normal(0.1, 1.0, (6, 40))
    d[1] = 0.0  # all-zero row
    d[2, :] = 0.5  # constant row
    d[3, :20] = 0.0  # half zeros: some resamples are all-zero
    d[3, 20:] = rng.normal(size=20)
    idx = rng.integers(0, 40, size=(50, 40))
    idx[0] = np.arange(20)[np.arange(40) % 20]  # a resample of only users 0..19
    got = paired_tests.resampled_ttest_pvalues(d, paired_tests.index_counts(idx, 40))
    want = np.column_stack([paired_tests.pvalues_from_differences(d[:, i]) for i in idx])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)


def test_index_counts() -> None:
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    np.testing.assert_array_equal(paired_tests.index_counts(idx, 3), [[2, 0, 1], [0, 1, 2]])


# ---------------------------------------------------------------- corrections


def test_holm_by_hand() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # ascending: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    np.testing.assert_allclose(paired_tests.holm(p), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(paired_tests.holm(np.array([0.5, 0.6])), [1.0, 1.0])  # capped at 1


def test_bh_by_hand() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # ascending: 0.005*4/1=0.02, 0.01*4/2=0.02, 0.03*4/3=0.04, 0.04*4/4=0.04
    np.testing.assert_allclose(paired_tests.benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=40))
def test_corrections_properties(values: list[float]) -> None:
    p = np.array(values)
    bh = paired_tests.benjamini_hochberg(p)
    ho = paired_tests.holm(p)
    np.testing.assert_allclose(bh, sps.false_discovery_control(p, method="bh"), rtol=1e-12)
    for adj in (bh, ho):
        assert np.all(adj >= p - 1e-15) and np.all(adj <= 1.0)
        order = np.argsort(p, kind="stable")
        assert np.all(np.diff(adj[order]) >= -1e-15)  # monotone in p
    assert np.all(ho >= bh - 1e-15)  # Holm (FWER) is never less conservative than BH


def test_adjust_dispatch() -> None:
    p = np.array([0.01, 0.2])
    np.testing.assert_array_equal(paired_tests.adjust(p, None), p)
    np.testing.assert_array_equal(paired_tests.adjust(p, "none"), p)
    np.testing.assert_array_equal(paired_tests.adjust(p, "holm"), paired_tests.holm(p))
    np.testing.assert_array_equal(paired_tests.adjust(p, "bh"), paired_tests.benjamini_hochberg(p))
    with pytest.raises(DptuneError, match="correction"):
        paired_tests.adjust(p, "bonferonni")
    with pytest.raises(DptuneError):
        paired_tests.holm(np.array([0.1, 1.5]))
    assert paired_tests.holm(np.array([])).shape == (0,)


# ---------------------------------------------------------------- Sakai DP, KS


def test_sakai_dp_by_hand() -> None:
    p = np.array([0.01, 0.2, 0.049, 0.05])
    assert paired_tests.sakai_dp(p) == 0.5  # 0.01 and 0.049 are < 0.05; 0.05 is not
    assert paired_tests.sakai_dp(p, alpha=0.25) == 1.0
    assert np.isnan(paired_tests.sakai_dp(np.array([])))
    with pytest.raises(DptuneError, match="alpha"):
        paired_tests.sakai_dp(p, alpha=1.5)


def test_ks_uniform_rejects_skewed_pvalues() -> None:
    p = _rng(4).random(300) ** 3
    assert paired_tests.ks_uniform(p)[1] < 1e-6


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("rest", [1.0, 0.0])
@pytest.mark.parametrize("where", [0, 2, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_nan_beside_equal_differences_is_refused_by_the_tables_t_test(rest, where, dtype):
    """A NaN (or infinite) value among differences that are otherwise all equal: the running
    min and max of the compiled pass skip it, the sums do not. Read as "every difference
    equal", the pair got p = 0 (or 1 for zeros) instead of the error every other NaN gets."""
    a = np.full(5, rest)
    for bad in (np.nan, np.inf):
        a_bad = a.copy()
        a_bad[where] = bad
        values = np.vstack([a_bad, np.zeros(5)]).astype(dtype)
        with pytest.raises(DptuneError, match="NaN or infinite"):
            paired_tests.paired_test("t").pvalues(values, np.array([0]), np.array([1]))
        p = paired_tests.ttest_pvalues(values, np.array([0]), np.array([1]))
        assert np.isnan(p[0])
    # every value infinite: not a constant difference either
    values = np.vstack([np.full(5, np.inf), np.zeros(5)])
    assert np.isnan(paired_tests.ttest_pvalues(values, np.array([0]), np.array([1]))[0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_single_user_with_a_nan_is_refused_not_given_p_1(bad):
    """One user (``n < 2``: p = 1 by convention) whose value is NaN or infinite: the tables'
    t-test refuses it as it does with more users, whether the user is the only column or one
    column chosen of two; a finite single user keeps p = 1, and so does a pair whose bad value
    lies in a column not used."""
    values = np.array([[bad, 0.3], [0.5, 0.1], [0.2, 0.4]])
    test = paired_tests.paired_test("t")
    for columns in (np.array([0]), None):
        v = values if columns is not None else values[:, :1]
        with pytest.raises(DptuneError, match="NaN or infinite"):
            test.pvalues(v, np.array([1, 0]), np.array([2, 1]), columns=columns)
        p = paired_tests.ttest_pvalues(v, np.array([1, 0]), np.array([2, 1]), columns=columns)
        assert p[0] == 1.0 and np.isnan(p[1])
    p = test.pvalues(values, np.array([1, 0]), np.array([2, 1]), columns=np.array([1]))
    assert p.tolist() == [1.0, 1.0]
    with pytest.raises(DptuneError, match="NaN or infinite"):
        paired_tests.paired_pvalues(values[0, :1], values[1, :1])
