"""Stability of claims across pair seeds (dptune.analysis.dp.stability)."""

import numpy as np
import pytest

from dptune.analysis.dp import stability as sb
from dptune.errors import DptuneError


def _draws(shift_by_repeat, n_boot=1000, seed=0):
    """repeat -> {ndcg, mrr, recall} -> (estimate, replicates): recall always far above ndcg,
    mrr above ndcg by ``shift`` of each repeat (sd 0.01 each, independent replicates)."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, shift in enumerate(shift_by_repeat):
        est = {"ndcg": 0.10, "mrr": 0.10 + shift, "recall": 0.20}
        out[k] = {m: (v, v + 0.01 * rng.standard_normal(n_boot)) for m, v in est.items()}
    return out


def test_claim_that_flips_with_the_seed_is_dropped():
    c = sb.family_claims(_draws([0.06, 0.0, 0.06]), 0.05).set_index(["metric_a", "metric_b"])
    assert bool(c.at[("ndcg", "recall"), "held"]) and not c.at[("ndcg", "recall"), "dropped"]
    assert c.at[("ndcg", "recall"), "repeats"] == 3
    # significant under repeat 0, not under repeat 1: dropped
    assert bool(c.at[("ndcg", "mrr"), "significant_first"])
    assert not c.at[("ndcg", "mrr"), "held"] and c.at[("ndcg", "mrr"), "dropped"]
    assert c.at[("ndcg", "mrr"), "p_adjusted"] >= c.at[("ndcg", "mrr"), "p_adjusted_first"]
    # the other direction is never significant
    assert not c.at[("recall", "ndcg"), "held"]
    assert c.at[("recall", "ndcg"), "prob_first"] < 0.01 < c.at[("ndcg", "recall"), "prob_first"]


def test_single_repeat_and_bad_input():
    c = sb.family_claims(_draws([0.06]), 0.05)
    assert set(c["repeats"]) == {1} and len(c) == 6  # every ordered pair of 3 metrics
    with pytest.raises(DptuneError, match="alpha"):
        sb.family_claims(_draws([0.0]), 1.0)
    with pytest.raises(DptuneError, match="repeat 0"):
        sb.family_claims({1: _draws([0.0])[0]}, 0.05)


def test_affordable_repeats():
    assert sb.affordable_repeats(5, 1.0, 100.0) == 5
    assert sb.affordable_repeats(5, 10.0, 25.0) == 3
    assert sb.affordable_repeats(5, 100.0, 25.0) == 1
    assert sb.affordable_repeats(1, 100.0, 0.0) == 1
    assert sb.affordable_repeats(4, 0.0, 0.0) == 4
    with pytest.raises(DptuneError, match="stability"):
        sb.affordable_repeats(0, 1.0, 1.0)
    small = sb.estimated_seconds(105, 6000, 18, 10, 1000, 128)
    large = sb.estimated_seconds(1000, 5500, 18, 10, 1000, 128)
    assert 0 < small < large
    assert sb.estimated_seconds(105, 6000, 18, 10, 0, 128) < small
