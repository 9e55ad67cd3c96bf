"""The DP interval and ranking read from the one bootstrap (dptune.analysis.dp.bootstrap):
hand-computed cases, its range by construction (property test) and the pair weights."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from dptune.analysis.dp import bootstrap
from dptune.errors import DptuneError


def test_interval_replicates_by_hand():
    # estimate 0.5, replicates 0.2, 0.5, 0.8: mean 0.5, logit errors -log 4, 0, log 4, reflected
    got = bootstrap.interval_replicates(0.5, np.array([0.2, 0.5, 0.8]))
    assert got == pytest.approx([0.8, 0.5, 0.2], abs=1e-12)
    # estimate 0.1 (logit log 1/9), replicates 0.1, 0.3 (mean 0.2, logit log 1/4):
    # errors log(4/9) and log(12/7) -> logit log(1/4) and log(7/108) -> 1/5 and 7/115
    got = bootstrap.interval_replicates(0.1, np.array([0.1, 0.3]))
    assert got == pytest.approx([1 / 5, 7 / 115], abs=1e-12)


def test_dp_interval_by_hand_on_the_arcsine_scale():
    # estimate 0.1, replicates 0.1 and 0.3 (mean 0.2); A(x) = arcsin(sqrt(x)):
    # errors A(0.1) - A(0.2) = -0.14190 and A(0.3) - A(0.2) = 0.11599; their 25% and 75%
    # quantiles (linear interpolation between two values) are reflected around A(0.1)
    a = lambda x: np.arcsin(np.sqrt(x))  # noqa: E731
    e = np.array([a(0.1) - a(0.2), a(0.3) - a(0.2)])
    q25, q75 = e[0] + 0.25 * (e[1] - e[0]), e[0] + 0.75 * (e[1] - e[0])
    lo_hand, hi_hand = np.sin(a(0.1) - q75) ** 2, np.sin(a(0.1) - q25) ** 2
    # with (almost) no small-sample factor: 10**9 groups, t = z
    lo, hi = bootstrap.dp_interval(0.1, np.array([0.1, 0.3]), level=0.5, groups=10**9)
    assert (lo, hi) == pytest.approx((lo_hand, hi_hand), abs=1e-9)
    # A(0.1) = 0.32175, q25 = -0.07743, q75 = 0.05152: sin^2(0.27023), sin^2(0.39918)
    assert (lo, hi) == pytest.approx((0.07126, 0.15106), abs=5e-5)


def test_dp_interval_reads_the_spread_with_students_t_over_its_user_groups():
    # kappa = t_(G-1) / z at 97.5%: 64 groups -> 1.998 / 1.960, applied on the arcsine scale
    reps = np.random.default_rng(4).uniform(0.2, 0.4, 500)
    a = lambda x: np.arcsin(np.sqrt(x))  # noqa: E731
    wide = bootstrap.dp_interval(0.3, reps, groups=64)
    plain = bootstrap.dp_interval(0.3, reps, groups=10**9)
    ratio = (a(wide[1]) - a(wide[0])) / (a(plain[1]) - a(plain[0]))
    assert ratio == pytest.approx(1.99834 / 1.95996, rel=1e-4)
    # fewer groups, wider: 8 groups -> t_7 = 2.365
    few = bootstrap.dp_interval(0.3, reps, groups=8)
    assert few[0] < wide[0] < 0.3 < wide[1] < few[1]


def test_interval_at_the_ends_of_the_range():
    # no evidence: every p-value 1 in the estimate and the replicates -> the interval is {1}
    lo, hi = bootstrap.dp_interval(1.0, np.ones(50))
    assert lo == pytest.approx(1.0) and hi == pytest.approx(1.0) and hi <= 1.0
    lo, hi = bootstrap.dp_interval(0.0, np.zeros(50))
    assert 0.0 <= lo <= hi <= 1e-11
    # replicates spread although the estimate is at an end: still inside [0, 1]
    lo, hi = bootstrap.dp_interval(0.0, np.linspace(0.0, 0.3, 40))
    assert 0.0 <= lo <= hi <= 1.0


def test_interval_bad_input():
    with pytest.raises(DptuneError, match="replicates"):
        bootstrap.dp_interval(0.5, np.array([]))
    with pytest.raises(DptuneError, match="replicates"):
        bootstrap.dp_interval(0.5, np.array([0.5, np.nan]))
    with pytest.raises(DptuneError, match="estimate"):
        bootstrap.dp_interval(1.5, np.array([0.5]))
    with pytest.raises(DptuneError, match="level"):
        bootstrap.dp_interval(0.5, np.array([0.5]), level=1.0)
    with pytest.raises(DptuneError, match="groups"):
        bootstrap.dp_interval(0.5, np.array([0.5]), groups=1)
    with pytest.raises(DptuneError, match="paired"):
        bootstrap.prob_more_discriminative(np.ones(3), np.ones(4))


unit = hs.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(unit, hs.lists(unit, min_size=1, max_size=40), hs.floats(0.5, 0.99))
def test_interval_always_inside_the_range(estimate, reps, level):
    lo, hi = bootstrap.dp_interval(estimate, np.array(reps), level)
    assert 0.0 <= lo <= hi <= 1.0
    assert 0.0 <= 25 * lo <= 25 * hi <= 25.0
    mapped = bootstrap.interval_replicates(estimate, np.array(reps))
    assert np.all((mapped >= 0.0) & (mapped <= 1.0))


def test_prob_more_discriminative_by_hand():
    assert bootstrap.prob_more_discriminative(np.array([1.0, 2, 3]), np.array([2.0, 2, 2])) == 1 / 3
    same = np.array([0.1, 0.2])
    assert bootstrap.prob_more_discriminative(same, same) == 0.0  # ties are not "better"


def test_pair_weights_fixed_when_every_pair_is_used():
    assert np.array_equal(bootstrap.pair_weights(7, 10, 10, seed=3), np.ones((7, 10)))
    assert np.array_equal(bootstrap.pair_weights(7, 10, None, seed=3), np.ones((7, 10)))


def test_pair_weights_rescaled_for_a_sample():
    n_boot, p, n = 4000, 30, 120
    w = bootstrap.pair_weights(n_boot, p, n, seed=5)
    c = bootstrap.pair_multiplicities(n_boot, p, seed=5)
    f = np.sqrt(1.0 - p / n)
    assert np.allclose(w, 1.0 + f * (c - 1.0))  # by hand from the multiplicities
    assert np.all(w >= 0.0) and np.allclose(w.sum(axis=1), p)
    # variance of a weighted mean: (1 - P/N) times the with-replacement one
    x = np.random.default_rng(0).random(p)
    assert (w @ x / p).var() == pytest.approx((1 - p / n) * (c @ x / p).var(), rel=1e-9)


def test_small_sample_factor_is_students_t_over_the_normal_at_satterthwaites_df():
    # one estimated part that is the whole variance: nu = its df; t_14 = 2.14479, z = 1.95996
    assert bootstrap.small_sample_factor(2.0, [(2.0, 14)]) == pytest.approx(2.144787 / 1.959964,
                                                                            rel=1e-5)
    # two parts of 1 with 4 and 9 df, and 2 known: nu = 16 / (1/4 + 1/9) = 44.31
    from scipy import stats

    nu = 16.0 / (1.0 / 4 + 1.0 / 9)
    assert bootstrap.small_sample_factor(4.0, [(1.0, 4), (1.0, 9)]) == pytest.approx(
        stats.t.ppf(0.975, nu) / stats.norm.ppf(0.975), rel=1e-12)
    # nothing estimated (every unit present, no pair sampled): no widening
    assert bootstrap.small_sample_factor(3.0, [(0.0, 14), (0.0, 999)]) == 1.0
    assert bootstrap.small_sample_factor(0.0, [(0.0, 14)]) == 1.0
    # more degrees of freedom, less widening, never narrower than the normal
    f = [bootstrap.small_sample_factor(1.0, [(1.0, df)]) for df in (2, 5, 14, 100, 10**6)]
    assert all(a > b for a, b in itertools.pairwise(f)) and f[-1] == pytest.approx(1.0, abs=1e-5)
