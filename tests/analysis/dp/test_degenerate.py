"""Degenerate inputs are refused or flagged (dptune.analysis.dp.degenerate)."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp import degenerate as dg
from dptune.errors import DptuneError
from dptune.store._per_user_store import PerUserStore


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
    # a minimum of thousands of digits is named by its size (spelt out, Python's limit on
    # integer-to-text conversion raised a ValueError in the message)
    with pytest.raises(DptuneError, match="min_fold_users = an integer of 5,001 digits;"):
        dg.check_fold_users(counts, 10**5000)


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


def test_the_fold_size_error_names_the_flag_and_the_python_argument():
    """The refusal said only "lower --min-fold-users", a flag, when raised from a Python call
    (``dptune.discriminative_power(df)``), whose argument is ``min_fold_users``."""
    with pytest.raises(DptuneError) as err:
        dg.check_fold_users({("knn", "0"): 7}, 20, "per_user")
    assert str(err.value).endswith("(use more data or fewer folds, or lower the minimum: "
                                   "--min-fold-users, or min_fold_users in Python)")


@pytest.mark.parametrize("minimum", [0, 20])
def test_a_fold_of_zero_users_is_refused_even_with_the_minimum_off(minimum):
    with pytest.raises(DptuneError) as err:
        dg.check_fold_users({("knn", "0"): 40, ("knn", "1"): 0}, minimum, "per_user")
    msg = str(err.value)
    assert msg.startswith("per_user: knn/fold 1: no user to test pairs on: no user has values "
                          "for every configuration compared") and "\n" not in msg
    dg.check_fold_users({("knn", "0"): 1}, 0)  # one user is the minimum's business


def test_configurations_sharing_no_user_are_refused_not_given_a_dp():
    """With ``min_fold_users=0`` and configurations whose users do not overlap on a fold, every
    pair was compared on zero users (p = 1) and a DP of 25 per 25 pairs was reported without a
    word."""
    import dptune

    rng = np.random.default_rng(3)
    rows = [{"system": f"s{s}", "fold": f, "user": f"{f}-{u if f == '0' else f'{s}-{u}'}",
             "metric": "ndcg@10", "value": rng.random()}
            for s in range(3) for f in ("0", "1") for u in range(30)]
    table = pd.DataFrame(rows)  # fold 0: every system has the same users; fold 1: none shared
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(table, bootstrap=0, min_fold_users=0)
    assert str(err.value).startswith("per_user: runs/fold 1: no user to test pairs on")
    same = table[table["fold"] == "0"]
    assert len(dptune.discriminative_power(same, bootstrap=0, min_fold_users=0).dp.table)


def _disjoint_table(systems: int) -> pd.DataFrame:
    """Fold 0: every system has the same 30 users; fold 1: each its own 30 (none shared)."""
    rng = np.random.default_rng(3)
    return pd.DataFrame([{"system": f"s{s}", "fold": f,
                          "user": f"{f}-{u if f == '0' else f'{s}-{u}'}", "metric": "ndcg@10",
                          "value": rng.random()}
                         for s in range(systems) for f in ("0", "1") for u in range(30)])


@pytest.mark.parametrize("minimum", [0, 20])
def test_configurations_sharing_no_user_are_refused_before_the_fold_loop(monkeypatch, minimum):
    """When every pair of a table's algorithm is compared, the users its configurations share
    are known from the table itself: too few (none here) is refused before the fold loop
    starts, as a fold too small is, with the same line the loop would give, naming whose
    users are few. The manifest of such a table says so (``complete_fold_users``)."""
    import dptune
    from dptune.analysis import pipeline

    def no_loop(*args, **kwargs):
        raise AssertionError("the fold loop ran")

    monkeypatch.setattr(pipeline, "run_fold_loop", no_loop)
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(_disjoint_table(3), bootstrap=0, min_fold_users=minimum)
    assert str(err.value).startswith("per_user: runs/fold 1: no user to test pairs on: no user "
                                     "has values for every configuration compared")
    store = PerUserStore.from_frame(_disjoint_table(3))
    assert dg.complete_fold_users(store, 3) == {("runs", "1"): 0}  # 3 pairs: all compared
    assert dg.complete_fold_users(store, 2) == {}  # a sample of pairs: known after the loop


def test_a_sample_of_pairs_that_share_no_user_is_still_refused_after_the_loop():
    """A table of more pairs than ``pairs`` compares a sample, whose configurations may share
    more users than all of them do: nothing is refused before the loop, and the loop's count
    refuses pairs compared on no user, as before."""
    import dptune

    with pytest.raises(DptuneError, match=r"^per_user: runs/fold 1: no user to test pairs on"):
        dptune.discriminative_power(_disjoint_table(5), bootstrap=0, min_fold_users=0, pairs=4)
