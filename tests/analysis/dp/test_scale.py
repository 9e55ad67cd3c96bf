"""Robust DP (dptune.analysis.dp.scale): hand-made p-value sets, the normalised scale, pairs."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp import scale as rb
from dptune.analysis.dp.engine import sample_pairs, scope_pairs, scope_seed
from dptune.errors import DptuneError


def test_hand_made_pvalues():
    p = np.array([[0.0, 0.5, 1.0, 0.5],   # fold mean 0.5
                  [0.1, 0.1, 0.1, 0.1]])  # fold mean 0.1
    e = rb.robust_estimate(p)
    assert e.mean_p == pytest.approx(0.3)
    assert e.mean_p_sd == pytest.approx(np.std([0.5, 0.1], ddof=1))
    assert e.dp_at_25 == pytest.approx(7.5)
    assert (e.n_pairs, e.n_folds, e.no_evidence) == (4, 2, False)
    one = rb.robust_estimate(np.array([0.2, 0.4]))
    assert one.mean_p == pytest.approx(0.3) and one.mean_p_sd == 0.0 and one.n_folds == 1
    assert rb.robust_estimate(np.ones((3, 5))).no_evidence
    assert rb.robust_estimate(np.ones((3, 5))).dp_at_25 == 25.0


def test_robust_equals_paper_dp_over_p_on_the_same_pairs():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(10, 25))
    paper_dp = np.sort(p, axis=1)[:, ::-1].mean(axis=0).sum()
    assert rb.per_pair(paper_dp, 25) == pytest.approx(rb.robust_estimate(p).mean_p)
    assert rb.dp_at_reference(rb.per_pair(paper_dp, 25)) == pytest.approx(paper_dp)
    # rows with different P compared on the normalised scale: 15 of 15 vs 25 of 25
    assert rb.per_pair(15.0, 15) == rb.per_pair(25.0, 25) == 1.0
    assert np.allclose(rb.per_pair(np.array([3.0, 5.0]), np.array([15, 25])), [0.2, 0.2])
    with pytest.raises(DptuneError, match="n_pairs"):
        rb.per_pair(1.0, 0)


def test_bad_pvalues():
    for bad in (np.array([[0.5, np.nan]]), np.array([[1.5]]), np.zeros((0, 3))):
        with pytest.raises(DptuneError, match="pvalues"):
            rb.robust_estimate(bad)


def test_pairs_all_when_few_else_a_seeded_sample():
    ids = np.arange(15) * 3
    pairs = rb.robust_pairs(ids, 1000, seed=4)
    assert len(pairs) == rb.n_possible_pairs(15) == 105
    assert len({tuple(r) for r in pairs}) == 105
    # repeats of the stability check: the same set of pairs when all are used
    again = rb.robust_pairs(ids, 1000, seed=4, repeat=3)
    assert {tuple(r) for r in again} == {tuple(r) for r in pairs}
    big = np.arange(200)
    s0 = rb.robust_pairs(big, 1000, seed=4)
    assert len(s0) == 1000 and np.all(s0[:, 0] < s0[:, 1])
    # repeat 0 is the analysis' `all` scope, pair for pair (one pair set for every number)
    assert np.array_equal(s0, sample_pairs(big, 1000, scope_seed(4, "all")))
    configs = pd.DataFrame({"config_id": big, "k": big})
    assert np.array_equal(s0, scope_pairs(configs, ["k"], 1000, 4)["all"])
    s1 = rb.robust_pairs(big, 1000, seed=4, repeat=1)
    assert not np.array_equal(np.sort(s0, axis=0), np.sort(s1, axis=0))
    assert rb.robust_seed(4, 1) == scope_seed(4, "all|robust|1")
    assert rb.bootstrap_seed(4, 0) != rb.bootstrap_seed(4, 1)
    for bad in (0, True, 2.5):
        with pytest.raises(DptuneError, match="analysis: pairs"):
            rb.robust_pairs(big, bad)


def test_dp_per_25_pairs_is_the_paper_dp_bit_for_bit_at_p_25():
    rng = np.random.default_rng(3)
    dp = rng.uniform(0, 25, 50)
    assert np.array_equal(rb.per_reference(dp, np.full(50, 25)), dp)
    assert rb.per_reference(3.0, 15) == pytest.approx(5.0)  # 3 / 15 = 0.2 per pair -> 5 per 25
    assert rb.per_reference(10.0, 1000) == pytest.approx(0.25)
    with pytest.raises(DptuneError, match="n_pairs"):
        rb.per_reference(1.0, 0)
