"""Tests for dptune.split: hand-computed examples and hypothesis properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dptune.data._split import (
    HoldOut,
    cv_fold_labels,
    kfold_labels,
    leave_one_out,
    leave_one_out_random,
    random_holdout,
    split_holdout,
    temporal_holdout,
)
from dptune.errors import DptuneError


def table(rows) -> pd.DataFrame:
    """A ratings frame with Dataset dtypes from (user, item, timestamp) rows."""
    frame = pd.DataFrame(rows, columns=["user", "item", "timestamp"])
    return pd.DataFrame(
        {
            "user": frame["user"].astype(np.int32),
            "item": frame["item"].astype(np.int32),
            "rating": np.ones(len(frame), dtype=np.float32),
            "timestamp": frame["timestamp"].astype(np.int64),
        }
    )


@st.composite
def ratings_tables(draw, max_users=8, max_items=15, max_time=6):
    """Small rating tables with unique (user, item) pairs and many timestamp ties."""
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, max_users - 1), st.integers(0, max_items - 1)),
            min_size=1,
            max_size=60,
            unique=True,
        )
    )
    times = draw(st.lists(st.integers(0, max_time), min_size=len(pairs), max_size=len(pairs)))
    return table([(u, i, t) for (u, i), t in zip(pairs, times, strict=True)])


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pairs(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(frame["user"].tolist(), frame["item"].tolist(), strict=True))


# ---------------------------------------------------------------------------------------------
# Hand-computed examples


def test_temporal_holdout_seven_interactions():
    rows = [(0, i, t) for i, t in enumerate([50, 10, 40, 20, 70, 30, 60])]  # 7 ratings
    rows += [(1, i, i) for i in range(4)]  # 4 ratings < 5: dropped
    rows += [(2, i, 5) for i in range(5)]  # 5 ratings, all tied: file order decides
    split = temporal_holdout(table(rows))
    assert isinstance(split, HoldOut)
    train_0 = split.train[split.train.user == 0]
    assert train_0["timestamp"].tolist() == [10, 20, 30, 40, 50]  # floor(0.8 * 7) = 5
    assert split.test[split.test.user == 0]["timestamp"].tolist() == [60, 70]
    assert split.dropped_users.tolist() == [1]
    assert split.train[split.train.user == 2]["item"].tolist() == [0, 1, 2, 3]
    assert split.test[split.test.user == 2]["item"].tolist() == [4]
    assert list(split.train.columns) == ["user", "item", "rating", "timestamp"]
    assert split.train["user"].dtype == np.int32
    assert isinstance(split.train.index, pd.RangeIndex)


def test_temporal_holdout_floor_is_exact():
    rows = [(0, i, i) for i in range(100)]
    split = temporal_holdout(table(rows), train_ratio=0.57, min_user_interactions=1)
    assert len(split.train) == 57  # 0.57 * 100 = 56.999... in floating point


def test_leave_one_out_last_by_time_ties_to_later_row():
    rows = [(0, 0, 1), (0, 1, 9), (0, 2, 9), (0, 3, 2), (0, 4, 3), (1, 0, 1)]
    split = leave_one_out(table(rows))
    assert split.test["item"].tolist() == [2]
    assert split.train["item"].tolist() == [0, 3, 4, 1]
    assert split.dropped_users.tolist() == [1]


def test_random_holdout_sizes_and_seed():
    rows = [(u, i, i) for u in range(3) for i in range(7 + u)]
    a = random_holdout(table(rows), seed=1)
    b = random_holdout(table(rows), seed=1)
    assert a.train.equals(b.train) and a.test.equals(b.test)
    assert a.train.groupby("user").size().tolist() == [5, 6, 7]  # floor(0.8 * [7, 8, 9])
    different = [pairs(random_holdout(table(rows), seed=s).test) for s in range(6)]
    assert len({frozenset(p) for p in different}) > 1


def test_kfold_labels_balanced():
    labels = kfold_labels(table([(0, i, 0) for i in range(23)]), 5, seed=3)
    assert labels.dtype == np.int8
    assert sorted(np.bincount(labels).tolist()) == [4, 4, 5, 5, 5]


def test_user_temporal_folds_are_contiguous_chunks():
    rows = [(0, i, 100 - i) for i in range(10)]  # reverse time
    labels = cv_fold_labels(table(rows), n_folds=3, method="user_temporal")
    # time order is item 9, 8, ..., 0 -> chunks floor(r * 3 / 10)
    assert labels[::-1].tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_user_stratified_round_robin():
    rows = [(0, i, 0) for i in range(23)] + [(1, i, 0) for i in range(3)]
    labels = cv_fold_labels(table(rows), n_folds=10, seed=4)
    user0 = np.bincount(labels[:23], minlength=10)
    assert sorted(user0.tolist()) == [2] * 7 + [3] * 3  # 23 = 2 * 10 + 3, dealt round robin
    user1 = labels[23:]
    # three consecutive folds (mod 10) from a random offset
    assert any(set(user1.tolist()) == {(o + r) % 10 for r in range(3)} for o in range(10))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_folds": 1}, "split.folds"),
        ({"n_folds": 200}, "split.folds"),
        ({"n_folds": 2.5}, "split.folds"),
        ({"method": "stratified"}, "split.fold_method"),
        ({"n_folds": 10, "method": "random"}, "split.folds"),  # 4 rows, 10 folds: empty
        ({"n_folds": 3, "method": "user_temporal"}, "split.folds"),
        ({"seed": -1}, "split.seed"),
    ],
)
def test_fold_errors_name_the_field(kwargs, field):
    frame = table([(0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1)])
    with pytest.raises(DptuneError, match=field):
        cv_fold_labels(frame, **kwargs)


def test_holdout_errors():
    frame = table([(0, 0, 0)])
    with pytest.raises(DptuneError, match="split.train_ratio"):
        temporal_holdout(frame, train_ratio=1.0)
    with pytest.raises(DptuneError, match="split.min_user_interactions"):
        temporal_holdout(frame, min_user_interactions=0)
    with pytest.raises(DptuneError, match="missing column 'timestamp'"):
        temporal_holdout(frame.drop(columns="timestamp"))
    with pytest.raises(DptuneError, match="split.folds"):
        kfold_labels(frame, 2, seed=0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda f: temporal_holdout(f, train_ratio=10**5000),
     "split.train_ratio: must be in (0, 1), got an integer of 5,001 digits"),
    (lambda f: temporal_holdout(f, train_ratio=10**400),
     "split.train_ratio: must be in (0, 1), got an integer of 401 digits"),
    (lambda f: temporal_holdout(f, min_user_interactions=-10**5000),
     "split.min_user_interactions: must be an integer >= 1, got a negative integer of 5,001 "
     "digits"),
    (lambda f: cv_fold_labels(f, 10**5000),
     "split.folds: must be an integer from 2 to 127, got an integer of 5,001 digits"),
], ids=["ratio-5001-digits", "ratio-401-digits", "minimum-5001-digits", "folds-5001-digits"])
def test_a_huge_integer_argument_is_named_by_its_size(call, message):
    """A split argument beyond a float's range, or of more digits than Python spells out, is
    the one-line error naming it (an OverflowError or a ValueError before)."""
    with pytest.raises(DptuneError) as err:
        call(table([(0, 0, 0), (0, 1, 1)]))
    assert str(err.value) == f"split: {message}"


def test_real_data_default_pipeline():
    from dptune.data._dataset import load_dataset

    ratings = load_dataset("ml-latest-small").ratings
    split = temporal_holdout(ratings)
    assert len(split.train) + len(split.test) == len(ratings)  # every user has >= 20 ratings
    labels = cv_fold_labels(split.train)
    counts = np.bincount(labels)
    assert counts.max() - counts.min() < 0.01 * counts.mean()
    big = split.train.groupby("user").size()
    big = big[big >= 10].index
    per_user = pd.crosstab(split.train["user"], labels)
    assert (per_user.loc[big] > 0).all().all()


# ---------------------------------------------------------------------------------------------
# Properties


@SETTINGS
@given(ratings_tables(), st.sampled_from([0.5, 0.8]), st.integers(1, 6))
def test_temporal_holdout_properties(frame, ratio, minimum):
    split = temporal_holdout(frame, train_ratio=ratio, min_user_interactions=minimum)
    assert not pairs(split.train) & pairs(split.test)
    sizes = frame.groupby("user").size()
    assert split.dropped_users.tolist() == sorted(sizes[sizes < minimum].index.tolist())
    kept = sizes[sizes >= minimum]
    assert len(split.train) + len(split.test) == kept.sum()
    assert pairs(split.train) | pairs(split.test) == pairs(frame[frame.user.isin(kept.index)])
    train_max = split.train.groupby("user")["timestamp"].max()
    test_min = split.test.groupby("user")["timestamp"].min()
    both = train_max.index.intersection(test_min.index)
    assert (train_max[both] <= test_min[both]).all()
    train_sizes = split.train.groupby("user").size().reindex(kept.index, fill_value=0)
    assert (train_sizes == np.floor(ratio * kept + 1e-9).astype(int)).all()


@SETTINGS
@given(ratings_tables(), st.integers(0, 3), st.integers(1, 6))
def test_random_holdout_and_loo_properties(frame, seed, minimum):
    split = random_holdout(frame, seed=seed, min_user_interactions=minimum)
    assert not pairs(split.train) & pairs(split.test)
    sizes = frame.groupby("user").size()
    assert split.dropped_users.tolist() == sorted(sizes[sizes < minimum].index.tolist())
    assert (
        split.train.groupby("user").size().sum() + len(split.test) == sizes[sizes >= minimum].sum()
    )
    loo = leave_one_out(frame, min_user_interactions=max(minimum, 2))
    assert (loo.test.groupby("user").size() == 1).all()
    assert not pairs(loo.train) & pairs(loo.test)
    last = loo.train.groupby("user")["timestamp"].max()
    test_t = loo.test.set_index("user")["timestamp"]
    assert (last.reindex(test_t.index) <= test_t).all()


@SETTINGS
@given(
    ratings_tables(),
    st.integers(2, 4),
    st.sampled_from(["user_stratified", "random", "user_temporal"]),
    st.integers(0, 5),
)
def test_fold_label_properties(frame, k, method, seed):
    try:
        labels = cv_fold_labels(frame, n_folds=k, method=method, seed=seed)
    except DptuneError as err:
        assert "split.folds" in str(err) and "empty" in str(err)
        return
    assert labels.dtype == np.int8 and len(labels) == len(frame)
    assert labels.min() >= 0 and labels.max() < k
    assert set(np.unique(labels).tolist()) == set(range(k))  # partition, no empty fold
    assert np.array_equal(labels, cv_fold_labels(frame, n_folds=k, method=method, seed=seed))
    users = frame["user"].to_numpy()
    if method == "user_stratified":
        for u in np.unique(users):
            mine = labels[users == u]
            counts = np.bincount(mine, minlength=k)
            assert counts.max() - counts.min() <= 1  # round robin
            if len(mine) >= k:
                assert (counts > 0).all()
    if method == "user_temporal":
        for u in np.unique(users):
            rows = frame[users == u]
            order = np.lexsort((np.arange(len(rows)), rows["timestamp"].to_numpy()))
            assert (np.diff(labels[users == u][order]) >= 0).all()  # contiguous in time


@SETTINGS
@given(ratings_tables(), st.integers(2, 5), st.integers(0, 100))
def test_kfold_labels_properties(frame, k, seed):
    if len(frame) < k:
        with pytest.raises(DptuneError, match="split.folds"):
            kfold_labels(frame, k, seed)
        return
    labels = kfold_labels(frame, k, seed)
    counts = np.bincount(labels, minlength=k)
    assert counts.sum() == len(frame) and counts.max() - counts.min() <= 1
    assert np.array_equal(labels, kfold_labels(frame, k, seed))


def test_different_seeds_usually_differ():
    frame = table([(u, i, i) for u in range(5) for i in range(12)])
    for method in ("user_stratified", "random"):
        draws = {cv_fold_labels(frame, 4, method, seed=s).tobytes() for s in range(5)}
        assert len(draws) == 5
    assert len({kfold_labels(frame, 4, s).tobytes() for s in range(5)}) == 5


# ---------------------------------------------------------------------------------------------
# Splits that need no timestamps (data without a time column)


@SETTINGS
@given(ratings_tables(), st.integers(0, 3), st.integers(2, 6), st.sampled_from([0.5, 0.8]))
def test_untimed_splits_ignore_timestamps_and_partition_each_user(frame, seed, minimum, ratio):
    """random and leave-one-out-random: a partition of each kept user's rows, sizes by the floor
    rule (one test row for LOO), the same rows whatever the timestamps say, seeded."""
    shuffled_time = frame.assign(timestamp=np.arange(len(frame))[::-1].astype(np.int64))
    sizes = frame.groupby("user").size()
    kept = sizes[sizes >= minimum]
    if kept.empty:  # every user dropped: the one line of check_users_kept, not an empty split
        with pytest.raises(DptuneError, match="split.min_user_interactions: all"):
            split_holdout(frame, "random", ratio, seed, minimum, timestamps=False)
        return
    for method in ("random", "leave-one-out-random"):
        split = split_holdout(frame, method, ratio, seed, minimum, timestamps=False)
        again = split_holdout(shuffled_time, method, ratio, seed, minimum, timestamps=False)
        assert pairs(split.train) == pairs(again.train) and pairs(split.test) == pairs(again.test)
        assert not pairs(split.train) & pairs(split.test)
        assert pairs(split.train) | pairs(split.test) == pairs(frame[frame["user"].isin(kept.index)])
        test_sizes = split.test.groupby("user").size().reindex(kept.index, fill_value=0)
        if method == "random":
            expected = kept - np.floor(ratio * kept + 1e-9).astype(int)
        else:
            expected = pd.Series(1, index=kept.index)
        assert (test_sizes == expected).all()
        assert split.dropped_users.tolist() == sorted(sizes[sizes < minimum].index.tolist())
    loo = leave_one_out_random(frame, seed=seed, min_user_interactions=minimum)
    assert pairs(loo.test) == pairs(
        split_holdout(frame, "leave-one-out-random", seed=seed, min_user_interactions=minimum,
                      timestamps=True).test)


def test_leave_one_out_random_depends_on_the_seed():
    frame = table([(u, i, i) for u in range(20) for i in range(10)])
    tests = {tuple(leave_one_out_random(frame, seed=s).test["item"]) for s in range(4)}
    assert len(tests) == 4
    assert leave_one_out_random(frame, seed=1).test.equals(leave_one_out_random(frame, seed=1).test)
    with pytest.raises(DptuneError, match="split.min_user_interactions"):
        leave_one_out_random(frame, min_user_interactions=1)



def test_every_user_dropped_is_an_error_with_the_numbers():
    from dptune.data._split import check_users_kept

    frame = table([(u, i, i) for u in range(3) for i in range(2)])  # 3 users, 2 ratings each
    split = temporal_holdout(frame, min_user_interactions=5)
    with pytest.raises(DptuneError) as err:
        check_users_kept(frame, split, 5)
    msg = str(err.value)
    assert "split.min_user_interactions" in msg and "all 3 users were dropped" in msg
    assert "fewer than 5 ratings" in msg and "the most any user has is 2" in msg
    check_users_kept(frame, temporal_holdout(frame, min_user_interactions=2), 2)


def test_a_split_that_drops_every_user_names_the_experiment_file():
    """``split_holdout`` (given the experiment file as ``source``) refuses a split that drops
    every user, naming the file: the sweep's later check named ``split``, not a file."""
    frame = table([(u, i, i) for u in range(4) for i in range(3)])
    for method in ("temporal", "random", "leave-one-out", "leave-one-out-random"):
        with pytest.raises(DptuneError) as err:
            split_holdout(frame, method, min_user_interactions=10, source="exp.toml")
        assert str(err.value).startswith(
            "exp.toml: split.min_user_interactions: all 4 users were dropped: each has fewer "
            "than 10 ratings (the most any user has is 3)")
    assert len(split_holdout(frame, "random", min_user_interactions=3).train) == 8


def test_a_train_ratio_that_leaves_no_training_rating_names_the_ratio():
    """A train ratio below 1 / (the most ratings a user has) trains every user on floor(0) = 0
    ratings: the error names ``split.train_ratio`` and the smallest ratio that trains someone,
    not the folds that are empty in consequence. That ratio itself splits."""
    frame = table([(u, i, i) for u in range(4) for i in range(3 + u)])  # at most 6 ratings
    for method in ("temporal", "random"):
        with pytest.raises(DptuneError) as err:
            split_holdout(frame, method, train_ratio=1e-9, min_user_interactions=1,
                          source="exp.toml")
        assert str(err.value) == (
            "exp.toml: split.train_ratio: 1e-09 leaves no rating for training: each user trains "
            "on floor(train_ratio x its ratings), and the most any user has is 6; give at least "
            "1/6")
        assert len(split_holdout(frame, method, train_ratio=1 / 6, min_user_interactions=1).train) == 1
