"""The claims' error rates, measured (dptune.studies.simulations.error_rates): families of equally
discriminative metrics must give a row with a false "significantly less discriminative" claim
in at most alpha = 5% of the runs, and equally dominant hyperparameters a false "dominant" in at
most 5%; the one-at-a-time intervals hold their target about 95% of the time. The quick
versions run by default; the full studies (docs/statistics.md, section 11) are marked slow."""

import numpy as np
import pandas as pd
import pytest
from conftest import assert_claims_hold

from dptune.errors import DptuneError
from dptune.studies.simulations import error_rates as er


def test_family_cases_are_what_they_say():
    rng = np.random.default_rng(0)
    case = er.FamilyCase("c", 4, users=2000, weaker=1)
    assert list(case.lambdas) == [1.0, 1.0, 1.0, 0.5]
    x = case.draw(rng)
    assert x.shape == (4, 15, 2000)
    # metrics share the users' response to a configuration: correlated by rho = 0.7
    d = x[:, 0] - x[:, 1]
    assert 0.6 < np.corrcoef(d[0], d[1])[0, 1] < 0.8
    ind = er.FamilyCase("i", 2, users=2000, rho=0.0).draw(rng)
    assert abs(np.corrcoef(ind[0, 0] - ind[0, 1], ind[1, 0] - ind[1, 1])[0, 1]) < 0.1
    with pytest.raises(DptuneError, match="weaker"):
        er.FamilyCase("bad", 2, weaker=2)
    with pytest.raises(DptuneError, match="rho"):
        er.FamilyCase("bad", 2, rho=1.5)
    # clipped: a metric's [0, 1] with about a quarter of the values 0, the same law for
    # metrics of equal lambda
    c = er.FamilyCase("c", 2, users=2000, clip=True).draw(rng)
    assert c.min() == 0.0 and c.max() <= 1.0
    assert 0.2 < (c[0] == 0).mean() < 0.3 and 0.2 < (c[1] == 0).mean() < 0.3


def test_quick_null_families_hold_the_error_rate():
    """The quick null cases (among them values clipped to a metric's [0, 1]): this version's
    false-claim rate within 5% plus two Monte Carlo standard errors; the former rule (no
    correction for the selection) far above it, so the test can tell them apart."""
    df = er.error_rate_study(er.QUICK_FAMILY_CASES, runs=120, n_boot=400, seed=11)
    bound = 0.05 + 2 * np.sqrt(0.05 * 0.95 / 120)
    assert (df["false_rows"] <= bound).all(), df.to_string()
    assert (df["false_rows_former"] >= 0.1).all(), df.to_string()


def test_quick_partial_family_finds_the_weaker_metric():
    case = er.FamilyCase("4 metrics, 1 weaker", 4, configs=10, users=150, weaker=1, weak=0.2,
                         effect=4.0)
    df = er.error_rate_study([case], runs=40, n_boot=400, seed=3)
    assert df["power"].iloc[0] >= 0.5, df.to_string()
    assert df["false_rows"].iloc[0] <= 0.15, df.to_string()


def test_grid_case_pairs_differ_in_one_hyperparameter_only():
    case = er.DominanceCase("g", (1.0, 2.0))
    grid = case.grid
    assert grid.shape == (9, 2)
    for h in range(2):
        p = case.only_pairs(h)
        assert len(p) == 9  # 3 groups of the other value, 3 pairs each
        assert np.all(grid[p[:, 0], h] != grid[p[:, 1], h])
        assert np.all(grid[p[:, 0], 1 - h] == grid[p[:, 1], 1 - h])
    theta = er.true_only_mean_p(er.DominanceCase("t", (4.0, 0.0)), n_samples=400)
    assert theta[0] < 0.2 < 0.4 < theta[1]  # a larger effect: a lower mean p-value


def test_quick_dominance_holds_the_error_rate_and_covers():
    """The standard null case and a clipped one over folds of the same users with a kept
    taste: neither a false "dominant" nor a false "significantly more than" (the words of a
    "none" answer) in more than 5% of the runs, within two Monte Carlo sds; and the
    one-at-a-time intervals cover about 95%, neither too narrow nor too wide: each case within
    [85%, 100%), the 200 intervals pooled within [88%, 99%] (were they independent, 2.6 sds of a
    95% coverage above, 4.5 below). Intervals 1.6 times too wide cover 99.2% and 100% here (measured 93.3% and
    93.8%), which the former bound of 100% let pass."""
    df = er.dominance_study(er.QUICK_DOMINANCE_CASES, runs=40, n_boot=400, seed=5)
    assert len(df) == 2
    bound = 0.05 + 2 * np.sqrt(0.05 * 0.95 / 40)
    assert (df["false_dominant"] <= bound).all(), df.to_string()
    assert (df["false_over"] <= bound).all(), df.to_string()
    assert ((0.85 <= df["coverage"]) & (df["coverage"] < 1.0)).all(), df.to_string()
    intervals = df["runs"] * df["hyperparameters"]  # one interval per scope and run
    assert list(intervals) == [120, 80], df.to_string()
    pooled = np.average(df["coverage"], weights=intervals)
    assert 0.88 <= pooled <= 0.99, df.to_string()


def test_population_shapes_are_what_they_say():
    rng = np.random.default_rng(0)
    clipped = er.DominanceCase("c", (2.0, 2.0), values=4, users=400, clip=True)
    x = clipped.draw(rng)
    assert x.min() == 0.0 and x.max() <= 1.0 and 0.15 < (x == 0).mean() < 0.35
    kept = er.DominanceCase("k", (1.0, 1.0), values=4, users=400, shared=True, taste=0.8)
    users = kept.users_of(rng)
    a, b = kept.draw(rng, users=users), kept.draw(rng, users=users)
    # the same users in two folds: b_u + sqrt(0.8) t_cu is shared, so the folds correlate
    # at about 1.8 / 2 = 0.9; fresh users do not
    assert np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.85
    assert abs(np.corrcoef(a.ravel(), kept.draw(rng).ravel())[0, 1]) < 0.05
    with pytest.raises(DptuneError, match="taste"):
        er.DominanceCase("t", taste=0.5)  # a kept taste needs shared folds


@pytest.mark.slow
def test_full_error_rate_study():
    cases = er.NULL_CASES + er.PARTIAL_CASES
    df = pd.concat([er.error_rate_study([c], runs=200, seed=100 + i)
                    for i, c in enumerate(cases)], ignore_index=True)
    null = df[df["weaker"] == 0]
    assert (null["false_rows"] - 2 * null["false_rows_se"] <= 0.05).all(), df.to_string()
    assert np.average(null["false_rows"]) <= 0.05, df.to_string()
    partial = df[df["weaker"] > 0]
    assert (partial["power"] > 0).all(), df.to_string()


@pytest.mark.slow
def test_sampled_family_claims_under_one_pair_seed():
    """A large grid's analysis runs one pair seed by default (docs/statistics.md section 13:
    ``stability_seconds`` affords no repeat): the twelve null families of 30 sampled pairs,
    claimed under that seed alone, keep the 5% within two Monte Carlo sds (measured 0.0-2.8%
    over 400 runs per case, seeds 300 and 301 for the two halves)."""
    cases = [c for c in er.NULL_CASES if c.pairs]
    df = pd.concat([er.error_rate_study(cases[h::2], runs=400, seed=300 + h, stability=1)
                    for h in (0, 1)], ignore_index=True)
    print(df.to_string())
    assert len(df) == 12
    assert (df["false_rows"] - 2 * df["false_rows_se"] <= 0.05).all(), df.to_string()


@pytest.mark.slow
def test_family_claims_under_clipped_values():
    """Metric values clipped to [0, 1] with a quarter of them 0 (docs/statistics.md section
    11): a false "significantly less discriminative" in at most 5% of the rows within two Monte
    Carlo sds, and a clearly weaker metric still found."""
    df = er.error_rate_study(er.FAMILY_SHAPE_CASES, runs=600, n_boot=1000, seed=29)
    print(df.to_string())
    assert_claims_hold(df)


@pytest.mark.slow
def test_full_dominance_study():
    df = pd.concat([er.dominance_study([c], runs=200, seed=100 + i)
                    for i, c in enumerate(er.DOMINANCE_CASES)], ignore_index=True)
    assert (df["false_dominant"] - 2 * df["false_dominant_se"] <= 0.05).all(), df.to_string()
    over_se = np.sqrt(df["false_over"] * (1 - df["false_over"]) / df["runs"])
    assert (df["false_over"] - 2 * over_se <= 0.05).all(), df.to_string()
    # the one-at-a-time intervals: 92-98% pooled, and no case below 88% within two Monte Carlo
    # sds (docs/statistics.md, section 12, gives each case's: 95.7-96.5%)
    assert 0.92 <= df["coverage"].mean() <= 0.98, df.to_string()
    assert (df["coverage"] + 2 * df["coverage_se"] >= 0.88).all(), df.to_string()
    assert df.loc[df["betas"] == "4, 1.5, 1.5", "power"].iloc[0] >= 0.9, df.to_string()


@pytest.mark.slow
def test_dominance_on_sampled_one_at_a_time_scopes():
    """One-at-a-time scopes whose pairs are a sample (30 of 96, 48 of 224; docs/statistics.md
    section 12), claimed under 5 pair seeds and under 1 (a large grid's default): a false
    "dominant", and a false "significantly more than", at most 5% within two Monte Carlo sds
    (measured 0.0-3.25% over 400 runs per case, seeds 61 and 62), and the intervals cover."""
    for stability, seed in ((5, 61), (1, 62)):
        df = er.dominance_study(er.DOMINANCE_SAMPLED_CASES, runs=400, seed=seed,
                                stability=stability)
        print(df.to_string())
        assert (df["pairs"] < df["possible_pairs"]).all() and (df["stability"] == stability).all()
        assert (df["false_dominant"] - 2 * df["false_dominant_se"] <= 0.05).all(), df.to_string()
        assert (df["false_over"] - 2 * df["false_over_se"] <= 0.05).all(), df.to_string()
        assert (df["coverage"] + 2 * df["coverage_se"] >= 0.92).all(), df.to_string()


@pytest.mark.slow
def test_dominance_under_other_population_shapes():
    """Equal non-zero effects, clipped values, folds of the same users with a kept taste
    (docs/statistics.md section 12): a false "dominant", and a false "significantly more
    than", at most 5% within two Monte Carlo sds."""
    df = er.dominance_study(er.DOMINANCE_SHAPE_CASES, runs=600, n_boot=1000, seed=23)
    print(df.to_string())
    assert (df["false_dominant"] - 2 * df["false_dominant_se"] <= 0.05).all(), df.to_string()
    over_se = np.sqrt(df["false_over"] * (1 - df["false_over"]) / df["runs"])
    assert (df["false_over"] - 2 * over_se <= 0.05).all(), df.to_string()
    assert (df["coverage"] + 2 * df["coverage_se"] >= 0.9).all(), df.to_string()
