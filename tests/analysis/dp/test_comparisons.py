"""Simultaneous comparisons of DP estimates (dptune.analysis.dp.comparisons): the step-down
bootstrap max-t by hand, against a naive implementation, and its edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.analysis.dp.comparisons import compare_estimates, stepdown_maxt
from dptune.errors import DptuneError


def naive_stepdown(est, reps):
    """Romano-Wolf step-down max-t written out loop by loop (the oracle)."""
    k, b = reps.shape
    hyps = [(i, j) for i in range(k) for j in range(i + 1, k)]
    t, null = {}, {}
    for i, j in hyps:
        d = reps[i] - reps[j]
        se = np.std(d, ddof=1)
        if se <= 0:
            continue
        t[(i, j)] = (est[i] - est[j]) / se
        null[(i, j)] = np.abs(d - d.mean()) / se
    order = sorted(t, key=lambda h: -abs(t[h]))
    out, running = dict.fromkeys(hyps, 1.0), 0.0
    for s, h in enumerate(order):
        rest = order[s:]
        exceed = sum(1 for r in range(b) if max(null[g][r] for g in rest) >= abs(t[h]))
        running = max(running, (1 + exceed) / (b + 1))
        out[h] = running
    return out


def test_two_estimates_by_hand():
    """One comparison: the two-sided studentized bootstrap test."""
    reps = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    c = stepdown_maxt(np.array([3.5, 1.0]), reps)
    d = reps[0] - reps[1]  # 0, 1, 2, 3, 4: mean 2, sd sqrt(2.5)
    se = np.sqrt(2.5)
    assert c.se[0] == pytest.approx(se) and c.t[0] == pytest.approx(2.5 / se)
    exceed = np.sum(np.abs(d - 2.0) / se >= 2.5 / se)  # |d - 2| >= 2.5: none
    assert c.p_adjusted[0] == pytest.approx((1 + exceed) / 6)
    assert c.prob_a_lower[0] == 0.0 and c.prob_b_lower[0] == pytest.approx(0.8)
    assert c.prob_lower(1, 0) == pytest.approx(0.8)
    assert c.lower(1, 0, 0.2) and not c.lower(0, 1, 0.2) and not c.lower(1, 0, 0.1)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 5), b=st.integers(5, 60), seed=st.integers(0, 2**31 - 1),
       spread=st.floats(0.0, 3.0))
def test_equals_the_naive_step_down(k, b, seed, spread):
    rng = np.random.default_rng(seed)
    est = rng.normal(0.3, 0.02, k) + spread * 0.01 * np.arange(k)
    reps = est[:, None] + rng.normal(0, 0.01, (k, b)) + rng.normal(0, 0.01, (1, b))
    c = stepdown_maxt(est, reps)
    want = naive_stepdown(est, reps)
    got = {(int(a), int(bb)): p for a, bb, p in zip(c.a, c.b, c.p_adjusted, strict=True)}
    assert got.keys() == want.keys()
    for h in want:
        assert got[h] == pytest.approx(want[h], abs=1e-12)
    # adjusted p-values are never below the single comparison's own bootstrap p-value
    for h, (i, j) in enumerate(zip(c.a, c.b, strict=True)):
        d = reps[i] - reps[j]
        if c.se[h] > 0:
            own = (1 + np.sum(np.abs(d - d.mean()) / c.se[h] >= abs(c.t[h]) * (1 - 1e-12))) \
                / (b + 1)
            assert c.p_adjusted[h] >= own - 1e-12


def test_identical_metrics_are_never_a_claim():
    rng = np.random.default_rng(0)
    r = rng.normal(0.3, 0.01, 500)
    c = stepdown_maxt(np.array([0.3, 0.3, 0.5]), np.vstack([r, r, r + 0.2]))
    assert c.p_adjusted[0] == 1.0 and c.t[0] == 0.0  # the twins: untestable
    assert not c.lower(0, 1, 0.05) and not c.lower(1, 0, 0.05)


def test_twins_that_differ_by_float32_rounding_are_identical_and_cost_no_claim():
    """Precision@10 and Recall@10 with one relevant item per user give the same p-value on
    every pair; their replicates, from float32 sums, differed by about 1e-8 and were tested: a
    50% share 'more discriminative' and a hypothesis in the maximum that cost the real claim."""
    rng = np.random.default_rng(3)
    r = rng.normal(0.3, 0.01, 999)
    twin = r * (1 + rng.normal(0, 3e-8, r.size))  # the float32 rounding of the same replicate
    strong = r - 0.004 + rng.normal(0, 0.002, r.size)
    est = np.array([0.296, 0.3, 0.3 * (1 + 1e-9)])
    three = stepdown_maxt(est, np.vstack([strong, r, twin]))
    two = stepdown_maxt(est[:2], np.vstack([strong, r]))
    assert three.p_adjusted[2] == 1.0 and three.t[2] == 0.0  # (1, 2): the twins
    assert three.prob_a_lower[2] == 0.0 and three.prob_b_lower[2] == 0.0
    assert three.p_adjusted[0] == two.p_adjusted[0]  # the claim as without the twin
    assert three.p_adjusted[1] == two.p_adjusted[0]
    # a difference of a thousandth of the replicates' spread is still tested
    near = stepdown_maxt(est[1:], np.vstack([r, r + rng.normal(0, 1e-5, r.size)]))
    assert near.t[0] != 0.0 and 0.0 < near.prob_a_lower[0] < 1.0


def test_proportional_metrics_are_identical_in_the_comparisons():
    """End to end: leave-one-out values, Recall@10 = 10 x Precision@10 for every user."""
    import pandas as pd

    from dptune import discriminative_power

    rng = np.random.default_rng(13)
    frames = []
    for f in range(3):
        for s in range(6):
            hit = (rng.random(60) < 0.2 + 0.05 * s).astype(float)
            for metric, v in (("precision@10", hit / 10), ("recall@10", hit)):
                frames.append(pd.DataFrame({"system": f"s{s}", "fold": f"f{f}",
                                            "user": np.arange(60), "metric": metric, "value": v}))
    res = discriminative_power(pd.concat(frames), bootstrap=200)
    rows = res.comparisons
    assert len(rows) == 2 and (rows["p_adjusted"] == 1.0).all()
    assert (rows["pr_more_discriminative"] == 0.0).all()
    assert list(res.verdict["identical"].iloc[0]) == ["recall"]


def test_named_comparisons_and_bad_input():
    rng = np.random.default_rng(1)
    labels, c = compare_estimates({"ndcg": 0.1, "recall": 0.3},
                                  {"ndcg": 0.1 + 0.01 * rng.standard_normal(200),
                                   "recall": 0.3 + 0.01 * rng.standard_normal(200)})
    assert labels == ["ndcg", "recall"] and c.lower(0, 1, 0.05)
    assert list(c.frame(labels)["a"]) == ["ndcg"]
    with pytest.raises(DptuneError, match="missing"):
        compare_estimates({"a": 0.1}, {})
    with pytest.raises(DptuneError, match="replicates"):
        stepdown_maxt(np.array([0.1, 0.2]), np.zeros((3, 10)))
    with pytest.raises(DptuneError, match="finite"):
        stepdown_maxt(np.array([0.1, np.nan]), np.zeros((2, 10)))
    with pytest.raises(DptuneError, match="no comparison"):
        c.lower(0, 0, 0.05)


def test_cluster_factor_is_the_small_sample_convention_of_g_groups():
    from scipy import stats

    from dptune.analysis.dp.comparisons import cluster_factor

    # 64 groups at 5%: sqrt(64/63) x t_63(0.975) / z(0.975) = 1.00791 x 1.99834 / 1.95996
    assert cluster_factor(64, 0.05) == pytest.approx(1.0276, abs=1e-4)
    assert cluster_factor(64, 0.05) == pytest.approx(
        np.sqrt(64 / 63) * stats.t.ppf(0.975, 63) / stats.norm.ppf(0.975), rel=1e-12)
    assert cluster_factor(10, 0.05) > cluster_factor(64, 0.05) > cluster_factor(10_000, 0.05) > 1
    with pytest.raises(DptuneError, match="groups"):
        cluster_factor(1, 0.05)


def test_a_wider_standard_error_scales_t_and_never_adds_a_claim():
    rng = np.random.default_rng(3)
    reps = rng.normal(size=(3, 999)) * 0.01 + np.array([[0.30], [0.31], [0.33]])
    est = reps.mean(axis=1)
    plain = stepdown_maxt(est, reps)
    wide = stepdown_maxt(est, reps, se_factor=1.2)
    np.testing.assert_allclose(wide.t * 1.2, plain.t)
    np.testing.assert_allclose(wide.se, plain.se)  # se reported as read off the replicates
    assert (wide.p_adjusted >= plain.p_adjusted).all()
    with pytest.raises(DptuneError, match="se_factor"):
        stepdown_maxt(est, reps, se_factor=0.9)


def test_unpaired_replicates_give_the_standard_error_of_independent_estimates():
    """``paired=False`` (the dominance claims) shifts estimate ``k``'s replicates by ``k
    floor(B / K)``: each difference of replicates is one of two independent draws, so ``se^2``
    is the sum of the two variances whatever the replicates' correlation. Two estimates whose
    replicates move together (correlation 0.9) have a paired standard error of about
    ``sqrt(2 * 0.1)`` times theirs and an unpaired one of about ``sqrt(2)`` times: the unpaired
    test is the one that claims less."""
    rng = np.random.default_rng(3)
    b = 4000
    common, own = rng.standard_normal(b), rng.standard_normal((3, b))
    reps = np.sqrt(0.9) * common + np.sqrt(0.1) * own  # (3, B), unit variance, corr 0.9
    est = np.array([0.0, 0.5, 1.5])
    paired = stepdown_maxt(est, reps)
    unpaired = stepdown_maxt(est, reps, paired=False)
    assert np.allclose(paired.se, np.sqrt(0.2), rtol=0.06)
    assert np.allclose(unpaired.se, np.sqrt(2.0), rtol=0.06)
    # by hand: the shifts are 0, B // 3 and 2 (B // 3) positions
    shifted = np.stack([np.roll(reps[i], i * (b // 3)) for i in range(3)])
    assert np.allclose(unpaired.se, [np.std(shifted[i] - shifted[j], ddof=1)
                                     for i, j in ((0, 1), (0, 2), (1, 2))], rtol=0, atol=1e-12)
    assert (unpaired.p_adjusted >= paired.p_adjusted).all() and paired.lower(0, 2, 0.05)
    assert not unpaired.lower(0, 1, 0.05)
    again = stepdown_maxt(est, reps, paired=False)  # no randomness: the same every time
    assert np.array_equal(again.p_adjusted, unpaired.p_adjusted)
    with pytest.raises(DptuneError, match="unpaired comparisons of 3 estimates need at least 3"):
        stepdown_maxt(est, reps[:, :2], paired=False)
