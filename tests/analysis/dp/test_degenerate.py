"""Degenerate inputs are refused or flagged (dptune.analysis.dp.degenerate)."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp import degenerate as dg
from dptune.errors import DptuneError


def _pv(rows):
    return pd.DataFrame(rows, columns=["algorithm", "scope", "metric", "cutoff", "fold",
                                       "pair_index", "p", "n_users"])


def test_too_few_users_on_a_fold_is_a_one_line_error():
    pv = _pv([("itemknn", "all", "ndcg", 10, "1", 0, 0.2, 150),
              ("itemknn", "all", "ndcg", 10, "2", 0, 1.0, 7),
              ("itemknn", "all", "recall", 10, "2", 0, 1.0, 7)])
    counts = dg.fold_user_counts(pv)
    assert counts == {("itemknn", "1"): 150, ("itemknn", "2"): 7}
    with pytest.raises(DptuneError) as err:
        dg.check_fold_users(counts, 20)
    msg = str(err.value)
    assert "itemknn/fold 2" in msg and "only 7 users" in msg and "min_fold_users = 20" in msg
    assert "\n" not in msg
    dg.check_fold_users(counts, 7)  # at the minimum: accepted
    dg.check_fold_users(counts, 0)  # off
    with pytest.raises(DptuneError, match="min_fold_users"):
        dg.check_fold_users(counts, -1)
    assert dg.fold_user_counts(_pv([])) == {}


def test_all_pvalues_one_is_no_evidence():
    pv = _pv([("knn", "all", "ndcg", 10, "1", 0, 1.0, 5), ("knn", "all", "ndcg", 10, "2", 0, 1.0, 5),
              ("knn", "all", "recall", 10, "1", 0, 1.0, 5),
              ("knn", "all", "recall", 10, "2", 0, 0.3, 5)])
    f = dg.no_evidence(pv).set_index("metric")["no_evidence"]
    assert bool(f["ndcg"]) and not bool(f["recall"])
    assert dg.no_evidence(_pv([])).empty


def test_band_capped_to_unit_interval():
    mean = np.array([0.99, 0.6, 0.05])
    sd = np.array([0.2, 0.1, 0.3])
    hi, lo = dg.capped_band(mean, sd)
    assert np.allclose(hi, [1.0, 0.7, 0.35]) and np.allclose(lo, [0.79, 0.5, 0.0])
    assert hi.sum() <= len(mean)
