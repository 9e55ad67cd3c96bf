"""Stability of bootstrap claims across pair seeds (dptune.analysis.dp.stability)."""

import pandas as pd
import pytest

from dptune.analysis.dp import stability as sb
from dptune.errors import DptuneError


def _ranking(p_by_repeat):
    rows = []
    for k, probs in enumerate(p_by_repeat):
        for (a, b), p in probs.items():
            rows.append(("itemknn", 10, a, b, p, k))
    return pd.DataFrame(rows, columns=["algorithm", "cutoff", "metric_a", "metric_b",
                                       "p_a_better", "repeat"])


def test_claim_that_flips_with_the_seed_is_dropped():
    r = _ranking([
        {("ndcg", "recall"): 1.0, ("ndcg", "mrr"): 0.97, ("ndcg", "precision"): 0.6},
        {("ndcg", "recall"): 0.99, ("ndcg", "mrr"): 0.90, ("ndcg", "precision"): 0.7},
        {("ndcg", "recall"): 0.98, ("ndcg", "mrr"): 0.96, ("ndcg", "precision"): 0.96},
    ])
    c = sb.claims(r, 0.95).set_index("metric_b")
    assert list(c.index) == ["recall", "mrr", "precision"]
    assert c.at["recall", "held"] and not c.at["recall", "dropped"]
    assert c.at["recall", "p_min"] == 0.98 and c.at["recall", "repeats"] == 3
    assert not c.at["mrr", "held"] and c.at["mrr", "dropped"]  # significant first, then flips
    assert not c.at["precision", "held"] and not c.at["precision", "dropped"]
    assert c.at["mrr", "p_first"] == 0.97


def test_single_repeat_and_bad_input():
    c = sb.claims(_ranking([{("ndcg", "recall"): 0.95}]), 0.95)
    assert bool(c["held"].iloc[0]) and int(c["repeats"].iloc[0]) == 1
    assert sb.claims(_ranking([]), 0.95).empty
    with pytest.raises(DptuneError, match="level"):
        sb.claims(_ranking([]), 1.0)
    with pytest.raises(DptuneError, match="missing"):
        sb.claims(pd.DataFrame({"x": [1]}), 0.95)
    with pytest.raises(DptuneError, match="repeat 0"):
        sb.claims(_ranking([{}, {("a", "b"): 1.0}]).assign(repeat=1), 0.95)


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
