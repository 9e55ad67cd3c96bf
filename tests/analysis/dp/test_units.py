"""A store holding a subset of its grid's units: the strata of pairs counted without listing
them (against brute force), the post-stratified weights (against the stratum means computed by
hand), the bootstrap over units (finite-population factor, normalisation), and the estimator's
unbiasedness over the design's equal-probability samples of units."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.analysis.dp import units as un


def _grid(factors: int, rates: int, iterations: int) -> tuple[pd.DataFrame, tuple]:
    """A BPR-MF-shaped grid: units are (factors, learning_rate), iterations inside a unit."""
    rows, units = [], []
    cid = 0
    for f in range(factors):
        for r in range(rates):
            unit = []
            for it in range(iterations):
                rows.append({"config_id": cid, "factors": 8 * (f + 1),
                             "learning_rate": 0.1 / (r + 1), "iterations": it + 1})
                unit.append(cid)
                cid += 1
            units.append(tuple(unit))
    return pd.DataFrame(rows), tuple(units)


def _sample(configs: pd.DataFrame, units: tuple, present) -> un.UnitSample:
    hps = ("factors", "learning_rate", "iterations")
    return un.UnitSample("bpr-mf", units, np.asarray(sorted(present), dtype=np.int64), 0,
                         configs, un._unit_hyperparameters(configs, hps, units))


def _brute_strata(sample: un.UnitSample, ids) -> dict[int, int]:
    codes = sample.codes
    out: dict[int, int] = {}
    for a, b in combinations(sorted(ids), 2):
        mask = int(((codes.loc[a].to_numpy() == codes.loc[b].to_numpy())
                    * (1 << np.arange(codes.shape[1]))).sum())
        out[mask] = out.get(mask, 0) + 1
    return out


def test_unit_hyperparameters_are_those_constant_within_every_unit():
    configs, units = _grid(3, 2, 4)
    sample = _sample(configs, units, range(6))
    assert sample.unit_hyperparameters == ("factors", "learning_rate")
    assert sample.complete and len(sample.present_configs) == 24


@settings(max_examples=25, deadline=None)
@given(f=st.integers(1, 4), r=st.integers(1, 4), i=st.integers(1, 3))
def test_stratum_counts_equal_brute_force(f, r, i):
    configs, units = _grid(f, r, i)
    sample = _sample(configs, units, range(len(units)))
    got = un._stratum_counts(sample.codes.to_numpy())
    assert got == _brute_strata(sample, configs["config_id"])


def test_stratum_counts_of_the_papers_grid_by_hand():
    # 15 x 15 units of 14 iterations: within-unit 225 C(14,2); sharing factors only
    # 15 C(15,2) 14^2; the same for the learning rate; the rest share nothing
    configs, units = _grid(15, 15, 14)
    sample = _sample(configs, units, range(225))
    got = un._stratum_counts(sample.codes.to_numpy())
    within, one = 225 * 91, 15 * 105 * 196
    total = 3150 * 3149 // 2
    assert got == {0b111: within, 0b001: one, 0b010: one, 0: total - within - 2 * one}


def test_weights_put_every_stratum_at_its_share_of_the_full_grid():
    configs, units = _grid(4, 4, 3)
    present = [0, 5, 10, 15, 1, 6]  # a diagonal and two more: within, shared and unshared pairs
    sample = _sample(configs, units, present)
    ids = sample.present_configs
    pairs = np.array(list(combinations(ids, 2)))
    design = un.pair_design(sample, pairs, "all")
    p = np.random.default_rng(1).random(len(pairs))
    full = un._stratum_counts(sample.codes.to_numpy())
    total = sum(full.values())
    by_hand = sum(full[s] / total * p[design.strata == s].mean() for s in full)
    assert design.unsampled == 0.0
    assert np.dot(design.weights, p) / len(p) == pytest.approx(by_hand, rel=1e-12)
    assert design.weights.mean() == pytest.approx(1.0)


def test_every_unit_present_gives_weights_one():
    configs, units = _grid(3, 3, 2)
    sample = _sample(configs, units, range(9))
    pairs = np.array(list(combinations(sample.present_configs, 2)))
    np.testing.assert_allclose(un.pair_design(sample, pairs, "all").weights, 1.0)


def test_one_round_of_a_latin_square_leaves_the_shared_strata_unsampled():
    configs, units = _grid(3, 3, 2)
    diagonal = [0, 4, 8]  # (f, r) = (0,0), (1,1), (2,2): no two share a value
    sample = _sample(configs, units, diagonal)
    pairs = np.array(list(combinations(sample.present_configs, 2)))
    design = un.pair_design(sample, pairs, "all")
    full = un._stratum_counts(sample.codes.to_numpy())
    assert design.unsampled == pytest.approx((full[0b001] + full[0b010]) / sum(full.values()))
    assert not design.gets_interval


def test_a_value_scope_counts_its_own_population():
    configs, units = _grid(3, 3, 2)
    sample = _sample(configs, units, [0, 1, 3, 4])
    sub = configs[configs["factors"] == 8]["config_id"]
    ids = [c for c in sub if c in set(sample.present_configs)]
    pairs = np.array(list(combinations(ids, 2)))
    design = un.pair_design(sample, pairs, "value", "factors", "8")
    # factors = 8: 3 units of 2 iterations; within-unit 3 pairs, between 12 (all share factors)
    assert design.share == {0b111: pytest.approx(3 / 15), 0b001: pytest.approx(12 / 15)}


def test_unit_multipliers_have_the_finite_population_factor():
    assert np.all(un.unit_multipliers(50, 9, 9, 3) == 1.0)
    u = un.unit_multipliers(20000, 10, 40, 3)
    assert u.min() >= 0 and u.mean() == pytest.approx(1.0, abs=0.01)
    # Multinomial(m, 1/m) has variance 1 - 1/m per unit; times the factor 1 - m / M
    assert u.var() == pytest.approx((1 - 1 / 10) * (1 - 10 / 40), rel=0.05)


def test_replicate_weights_with_unit_and_pair_weights_one_are_the_design_weights():
    configs, units = _grid(3, 3, 2)
    sample = _sample(configs, units, [0, 1, 3, 4, 8])
    pairs = np.array(list(combinations(sample.present_configs, 2)))
    design = un.pair_design(sample, pairs, "all")
    ones = np.ones((4, len(pairs)))
    got = un.design_replicate_weights(design, np.ones((4, 5)), ones)
    np.testing.assert_allclose(got, np.tile(design.weights, (4, 1)))
    # any multipliers: every stratum keeps its share in every replicate
    u = un.unit_multipliers(30, 5, 9, 7)
    got = un.design_replicate_weights(design, u, np.ones((30, len(pairs))))
    for s, share in design.share.items():
        np.testing.assert_allclose(got[:, design.strata == s].sum(axis=1) / len(pairs), share)


def test_the_estimator_is_unbiased_over_equal_probability_unit_samples():
    """Every pair of configurations has a fixed 'p-value' that depends on how much the two
    differ (within a unit, sharing a value, sharing none); samples of m of M units drawn with
    the design's symmetry (each unit equally likely, pairs of units by what they share) give a
    weighted mean whose average is the full grid's mean."""
    configs, units = _grid(4, 4, 3)
    cfg = configs.set_index("config_id")
    full_sample = _sample(configs, units, range(16))

    def p_of(a: int, b: int) -> float:
        x, y = cfg.loc[a], cfg.loc[b]
        return float(0.9 * (x.factors == y.factors) * (x.learning_rate == y.learning_rate)
                     + 0.3 * (x.factors == y.factors) + 0.2 * (x.learning_rate == y.learning_rate)
                     + 0.05 * abs(x.iterations - y.iterations) / 3 + 0.02)

    all_pairs = list(combinations(configs["config_id"], 2))
    truth = np.mean([p_of(a, b) for a, b in all_pairs])
    rng = np.random.default_rng(0)
    estimates = []
    for _ in range(150):
        # two rows of a random Latin square: a relabelled cyclic square, rows 0 and 1
        pf, pr = rng.permutation(4), rng.permutation(4)
        present = sorted({int(pf[i] * 4 + pr[(i + row) % 4]) for i in range(4) for row in (0, 1)})
        sample = _sample(configs, units, present)
        pairs = np.array(list(combinations(sample.present_configs, 2)))
        design = un.pair_design(sample, pairs, "all")
        assert design.unsampled == 0.0
        p = np.array([p_of(a, b) for a, b in pairs])
        estimates.append(np.dot(design.weights, p) / len(p))
    assert full_sample.complete
    assert np.mean(estimates) == pytest.approx(truth, abs=0.004)


def _naive_unit_variance(design: un.PairDesign, p: np.ndarray) -> float:
    """The estimator written as its definition, pair of pairs by pair of pairs: the products of
    two different pairs that hold one unit (plus, for two of one stratum, that stratum's
    variance over its number of pairs), summed over the units; scaled by the first-order
    weights' total over the same sum for independent unit effects of variance 1."""
    m, n_p = design.units, len(p)
    between = design.unit_a != design.unit_b

    def raw(x: np.ndarray) -> float:
        c, e, v, n = np.zeros(n_p), np.zeros(n_p), {}, {}
        for s, share in design.share.items():
            cols = design.strata == s
            c[cols] = share / cols.sum()
            e[cols] = x[cols] - x[cols].mean()
            n[s] = int(cols.sum())
            v[s] = x[cols].var(ddof=1) if n[s] > 1 else 0.0
        total = 0.0
        for k in range(m):
            held = [j for j in range(n_p) if k in (design.unit_a[j], design.unit_b[j])]
            for j in held:
                for i in held:
                    if i != j:
                        same = design.strata[i] == design.strata[j]
                        total += c[j] * c[i] * (e[j] * e[i]
                                                + (v[design.strata[j]] / n[design.strata[j]]
                                                   if same else 0.0))
        return total

    weights = np.zeros(m)
    for j in range(n_p):
        for k in {int(design.unit_a[j]), int(design.unit_b[j])}:
            weights[k] += design.share[int(design.strata[j])] / (design.strata ==
                                                                 design.strata[j]).sum()
    expected = 0.0
    for k in range(m):
        alone = (design.unit_a == k).astype(float) + ((design.unit_b == k) & between)
        expected += raw(alone)
    return (1 - m / design.units_total) * raw(p) * (weights ** 2).sum() / expected


def test_unit_variance_equals_its_definition_and_a_hand_computed_case():
    configs, units = _grid(3, 4, 2)
    sample = _sample(configs, units, [0, 1, 3, 4, 8, 10, 11])
    pairs = np.array(list(combinations(sample.present_configs, 2)))
    pairs = pairs[np.random.default_rng(2).random(len(pairs)) < 0.6]
    design = un.pair_design(sample, pairs, "all")
    p = np.random.default_rng(3).random((4, len(pairs)))
    got = un.unit_variance(design, p)
    assert got.shape == (4,)
    for r in range(4):
        assert got[r] == pytest.approx(_naive_unit_variance(design, p[r]), rel=1e-10)
    # by hand, 3 of 6 one-configuration units (4 or fewer: the diagonal is kept), one stratum,
    # pairs (0,1) (0,2) (1,2) with p = 0.1, 0.4, 0.7: c = 1/3, e = -0.3, 0, 0.3; I_0 = (-0.3 +
    # 0) / 3, I_1 = (-0.3 + 0.3) / 3, I_2 = (0 + 0.3) / 3; (1 - 3/6) (0.01 + 0 + 0.01)
    one = pd.DataFrame({"config_id": range(6), "factors": range(6)})
    small = un.UnitSample("m", tuple((k,) for k in range(6)), np.arange(3), 0, one,
                          ("factors",))
    d = un.pair_design(small, np.array([[0, 1], [0, 2], [1, 2]]), "all")
    assert un.unit_variance(d, np.array([0.1, 0.4, 0.7]))[0] == pytest.approx(0.01)
    # every unit present: no unit part
    full = _sample(configs, units, range(12))
    all_pairs = np.array(list(combinations(full.present_configs, 2)))
    assert un.unit_variance(un.pair_design(full, all_pairs, "all"), np.ones(len(all_pairs)))[0] \
        == 0.0


def test_unit_variance_counts_the_units_and_not_the_pairs_own_parts():
    """Pairs of one-configuration units whose value is the units' effects plus a large part of
    their own (independent from pair to pair, sd four times the effects'): over simple random
    samples of m of M units and samples of their pairs, the estimator's mean is the variance
    that drawing the units gives the estimate (within the Monte Carlo error), where the units'
    first-order spread with the diagonal kept (what the multinomial bootstrap over
    units measures) also counts the pairs' own parts, several times over."""
    big = 60
    rng = np.random.default_rng(5)
    effect = rng.normal(0.0, 0.05, big)
    configs = pd.DataFrame({"config_id": range(big), "x": range(big)})
    units = tuple((k,) for k in range(big))
    for m, n_pairs in ((20, 190), (20, 60), (40, 200), (10, 45)):
        estimated, with_diagonal = [], []
        for _ in range(400):
            present = np.sort(rng.choice(big, m, replace=False))
            sample = un.UnitSample("m", units, present, 0, configs, ("x",))
            every = np.array(list(combinations(present, 2)))
            pairs = every[np.sort(rng.choice(len(every), n_pairs, replace=False))]
            design = un.pair_design(sample, pairs, "all")
            p = effect[pairs[:, 0]] + effect[pairs[:, 1]] + rng.normal(0.0, 0.2, len(pairs))  # each pair's own part
            estimated.append(un.unit_variance(design, p)[0])
            ce = (p - p.mean()) / len(p)
            effects = np.zeros(m)
            np.add.at(effects, design.unit_a, ce)
            np.add.at(effects, design.unit_b, ce)
            with_diagonal.append((1 - m / big) * np.sum(effects ** 2))
        # the units' part: the variance, over the samples of units, of the mean over every
        # pair of the sample (what a sample of pairs estimates), 2 x the units' mean effect
        actual = 4 * (1 - m / big) * np.var(effect, ddof=1) / m
        assert 0.8 < np.mean(estimated) / actual < 1.3, (m, n_pairs)
        assert np.mean(with_diagonal) > 1.3 * actual, (m, n_pairs)


def test_grid_sample_interval_is_the_assembled_sd_times_z_inside_0_1():
    """``pbar +- 1.96 * scale * sd(replicates)`` by hand, clipped to [0, 1]; bad inputs are one
    error naming the field."""
    reps = np.array([0.30, 0.32, 0.34, 0.36, 0.38])
    sd = float(np.sqrt(np.sum((reps - 0.34) ** 2) / 4))  # 0.031623
    lo, hi = un.grid_sample_interval(0.35, reps, 1.5)
    assert lo == pytest.approx(0.35 - 1.959964 * 1.5 * sd) and lo == pytest.approx(0.25703, abs=1e-5)
    assert hi == pytest.approx(0.35 + 1.959964 * 1.5 * sd)
    assert un.grid_sample_interval(0.35, reps, 1.0, level=0.9)[1] == pytest.approx(
        0.35 + 1.644854 * sd)
    # near the edges the interval stays inside the range of a mean p-value
    assert un.grid_sample_interval(0.01, reps, 3.0)[0] == 0.0
    assert un.grid_sample_interval(0.99, reps, 3.0)[1] == 1.0
    from dptune.errors import DptuneError

    for bad in ((1.2, reps, 1.0), (0.3, reps[:1], 1.0), (0.3, np.array([0.1, np.nan]), 1.0),
                (0.3, reps, 0.0), (0.3, reps, np.inf)):
        with pytest.raises(DptuneError, match="grid sample"):
            un.grid_sample_interval(*bad)


def test_an_interval_on_few_draws_is_the_hull_of_the_raw_and_logit_readings():
    """With ``few_draws`` the interval is the hull of ``pbar +- h`` (clipped) and
    ``expit(logit(pbar) +- h / (pbar (1 - pbar)))``, by hand: near 0 the logit reading gives
    the upper end (a low estimate's interval reaches further up), at 0.6 the raw reading
    keeps the upper end and the logit one gives the lower. A mean p-value of 0 or 1, or no
    spread, has the raw interval only; without ``few_draws`` nothing changes."""
    reps = np.array([0.30, 0.32, 0.34, 0.36, 0.38])
    h = 1.959964 * float(np.sqrt(np.sum((reps - 0.34) ** 2) / 4))  # 0.061980
    assert un.grid_sample_interval(0.05, reps, 1.0) == pytest.approx((0.0, 0.05 + h), abs=1e-6)
    # logit(0.05) = -2.944439, h / (0.05 x 0.95) = 1.304832: expit(-1.639607) = 0.162519
    assert un.grid_sample_interval(0.05, reps, 1.0, few_draws=True) == pytest.approx(
        (0.0, 0.162519), abs=1e-6)
    # logit(0.6) = 0.405465, h / 0.24 = 0.258248: expit(0.147217) = 0.536738 below, and the
    # raw 0.6 + h = 0.661980 above (the logit's 0.660094 falls short of it)
    assert un.grid_sample_interval(0.6, reps, 1.0, few_draws=True) == pytest.approx(
        (0.536738, 0.661980), abs=1e-6)
    for edge in (0.0, 1.0):
        assert (un.grid_sample_interval(edge, reps, 1.0, few_draws=True)
                == un.grid_sample_interval(edge, reps, 1.0))
    flat = np.full(5, 0.3)
    assert un.grid_sample_interval(0.3, flat, 1.0, few_draws=True) == (0.3, 0.3)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(1e-6, 5.0),
       st.lists(st.floats(0.0, 1.0), min_size=2, max_size=8))
def test_the_hull_holds_the_raw_interval_inside_0_1(estimate, scale, values):
    """Whatever the estimate and spread, the interval on few draws contains the raw one and
    stays inside [0, 1] (so its coverage is never below the raw interval's)."""
    reps = np.array(values)
    raw = un.grid_sample_interval(estimate, reps, scale)
    lo, hi = un.grid_sample_interval(estimate, reps, scale, few_draws=True)
    assert 0.0 <= lo <= raw[0] <= raw[1] <= hi <= 1.0


def test_clusters_are_the_units_and_pairs_of_units_a_scopes_pairs_rest_on():
    """Hand-counted on a 2 x 2 grid of 3 iterations with three units present: the pairs of one
    unit rest on that unit, the pairs between two units on that pair of units, however many
    configuration pairs each holds."""
    configs, units = _grid(2, 2, 3)
    sample = _sample(configs, units, [0, 1, 2])  # units (8, .1), (8, .05), (16, .1)
    within = np.array([[0, 1], [0, 2], [1, 2], [3, 4]])  # two pairs' units: unit 0 and unit 1
    assert un.pair_design(sample, within, "only", "iterations").clusters == 2
    # learning rate alone changes: units 0 and 1 at each iteration -- one pair of units
    rates = np.array([[0, 3], [1, 4], [2, 5]])
    assert un.pair_design(sample, rates, "only", "learning_rate").clusters == 1
    # factors alone: units 0 and 2, one pair of units; with the rates' pairs, two
    factors = np.array([[0, 6], [1, 7]])
    assert un.pair_design(sample, factors, "only", "factors").clusters == 1
    assert un.pair_design(sample, np.vstack([rates, factors]), "all").clusters == 2
    assert un.pair_design(sample, np.vstack([within, rates]), "all").clusters == 3
