"""Stage "split": test splits (temporal / random hold-out, leave-one-out by time or at random,
k-fold) and CV folds.

:func:`split_holdout` is the one entry point of the sweep: it picks the method by name and
refuses the time-ordered ones (``temporal``, ``leave-one-out``, fold method ``user_temporal``)
when the data has no timestamps, naming the option to change.

All functions take a ratings frame with at least ``user`` and ``timestamp`` columns (the rows of
``Dataset.ratings``) and are vectorised: per-user ranks come from one stable ``np.lexsort`` over
(user, key, row position), never from a Python loop over users.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dptune.errors import check_int, input_error, is_finite, plain

__all__ = [
    "FOLD_METHODS",
    "check_train_ratio",
    "HoldOut",
    "MAX_FOLDS",
    "check_users_kept",
    "cv_fold_labels",
    "kfold_labels",
    "leave_one_out",
    "leave_one_out_random",
    "random_holdout",
    "split_holdout",
    "temporal_holdout",
    "SPLIT_METHODS",
]

FOLD_METHODS = ("user_stratified", "random", "user_temporal")
SPLIT_METHODS = ("temporal", "random", "leave-one-out", "leave-one-out-random")
_TIMED = ("temporal", "leave-one-out")
_SOURCE = "split"
#: Most CV folds: fold labels are int8 (a label per training rating, kept small), so 127.
MAX_FOLDS = int(np.iinfo(np.int8).max)
_EPS = 1e-9  # floor(0.57 * 100) must be 57, not 56


@dataclass(frozen=True, eq=False)
class HoldOut:
    """A train/test split of the ratings; users below the interaction minimum are in neither."""

    train: pd.DataFrame  # rows of Dataset.ratings (same columns), sorted by (user, timestamp)
    test: pd.DataFrame
    dropped_users: np.ndarray  # user codes with < min_user_interactions interactions


# ----------------------------------------------------------------------------------------------
# Validation


def _check_ratings(ratings: pd.DataFrame, need: tuple[str, ...] = ("user", "timestamp")) -> None:
    """Raise unless ``ratings`` is a DataFrame with the needed columns."""
    if not isinstance(ratings, pd.DataFrame):
        raise input_error(_SOURCE, "ratings", f"expected a DataFrame, got {type(ratings).__name__}")
    for col in need:
        if col not in ratings.columns:
            raise input_error(_SOURCE, "ratings", f"missing column {plain(col)}")


def _check_ratio(train_ratio: object) -> float:
    """A train ratio strictly between 0 and 1."""
    if isinstance(train_ratio, bool) or not isinstance(train_ratio, (int, float, np.floating)):
        raise input_error(_SOURCE, "split.train_ratio",
                          f"must be a number, got {plain(train_ratio)}")
    # is_finite first: float() of an integer beyond a float's range raises OverflowError
    if not is_finite(train_ratio) or not 0.0 < float(train_ratio) < 1.0:
        raise input_error(_SOURCE, "split.train_ratio",
                          f"must be in (0, 1), got {plain(train_ratio)}")
    return float(train_ratio)


def _rng(seed: object) -> np.random.Generator:
    """A numpy Generator from a non-negative integer seed."""
    return np.random.default_rng(check_int(seed, _SOURCE, "split.seed", 0))


# ----------------------------------------------------------------------------------------------
# Per-user ranks


def _user_ranks(
    users: np.ndarray, key: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rank of each row within its user by ``key`` (row position breaks ties, stable).

    Returns ``(rank, size, group, order)`` aligned with the input rows: 0-based rank, the user's
    number of rows, the user's group index (users in sorted order), and the sort order itself.
    """
    n = len(users)
    order = np.lexsort((np.arange(n), key, users))
    sorted_users = users[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_users[1:] != sorted_users[:-1]
    starts = np.flatnonzero(new_group)
    group_sorted = np.cumsum(new_group) - 1
    sizes = np.diff(np.append(starts, n))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts[group_sorted]
    group = np.empty(n, dtype=np.int64)
    group[order] = group_sorted
    return rank, sizes[group], group, order


def _time_order(ratings: pd.DataFrame) -> np.ndarray:
    """Row order by (user, timestamp, row position)."""
    users = ratings["user"].to_numpy()
    ts = ratings["timestamp"].to_numpy()
    return np.lexsort((np.arange(len(ratings)), ts, users))


def _holdout(
    ratings: pd.DataFrame,
    rank: np.ndarray,
    size: np.ndarray,
    n_train: np.ndarray,
    min_user_interactions: int,
) -> HoldOut:
    """Rows with ``rank < n_train`` go to train, the rest to test; small users are dropped."""
    users = ratings["user"].to_numpy()
    keep = size >= min_user_interactions
    is_train = rank < n_train
    order = _time_order(ratings)
    train_rows = order[(keep & is_train)[order]]
    test_rows = order[(keep & ~is_train)[order]]
    return HoldOut(
        train=ratings.iloc[train_rows].reset_index(drop=True),
        test=ratings.iloc[test_rows].reset_index(drop=True),
        dropped_users=np.unique(users[~keep]),
    )


def _floor_share(train_ratio: float, size: np.ndarray) -> np.ndarray:
    """floor(train_ratio * n_u) per row, robust to 0.57 * 100 = 56.999..."""
    return np.floor(train_ratio * size + _EPS).astype(np.int64)


def check_users_kept(ratings: pd.DataFrame, holdout: HoldOut, min_user_interactions: int,
                     source: str = _SOURCE) -> None:
    """Raise a one-line error naming ``source`` (the experiment file) and
    ``split.min_user_interactions`` when the hold-out dropped every user (each has fewer than
    ``min_user_interactions`` ratings), with the numbers, instead of failing later on empty
    folds."""
    if len(holdout.train) or len(holdout.test) or not len(ratings):
        return
    sizes = ratings.groupby("user").size()
    raise input_error(
        source, "split.min_user_interactions",
        f"all {len(sizes)} users were dropped: each has fewer than "
        f"{plain(int(min_user_interactions))} "
        f"ratings (the most any user has is {int(sizes.max())}); lower "
        "split.min_user_interactions or use more data")


# ----------------------------------------------------------------------------------------------
# Test splits


def temporal_holdout(
    ratings: pd.DataFrame, train_ratio: float = 0.8, min_user_interactions: int = 5
) -> HoldOut:
    """Per-user temporal hold-out: each user's first floor(train_ratio * n_u) ratings by time train.

    The rest is the test part; timestamp ties keep row order. Users with fewer than
    ``min_user_interactions`` ratings are dropped from both parts and listed in ``dropped_users``.
    """
    _check_ratings(ratings)
    ratio = _check_ratio(train_ratio)
    minimum = check_int(min_user_interactions, _SOURCE, "split.min_user_interactions", 1)
    users = ratings["user"].to_numpy()
    rank, size, _, _ = _user_ranks(users, ratings["timestamp"].to_numpy())
    return _holdout(ratings, rank, size, _floor_share(ratio, size), minimum)


def random_holdout(
    ratings: pd.DataFrame,
    train_ratio: float = 0.8,
    seed: int = 0,
    min_user_interactions: int = 5,
) -> HoldOut:
    """Per-user random hold-out: floor(train_ratio * n_u) of each user's ratings, drawn with ``seed``.

    Same floor rule and user minimum as :func:`temporal_holdout`, on a seeded per-user shuffle;
    used by the split-seed study.
    """
    _check_ratings(ratings)
    ratio = _check_ratio(train_ratio)
    minimum = check_int(min_user_interactions, _SOURCE, "split.min_user_interactions", 1)
    rng = _rng(seed)
    users = ratings["user"].to_numpy()
    rank, size, _, _ = _user_ranks(users, rng.random(len(ratings)))
    return _holdout(ratings, rank, size, _floor_share(ratio, size), minimum)


def leave_one_out(ratings: pd.DataFrame, min_user_interactions: int = 5) -> HoldOut:
    """Leave-one-out: each user's last rating by time (ties: the later row) is the test part."""
    _check_ratings(ratings)
    minimum = check_int(min_user_interactions, _SOURCE, "split.min_user_interactions", 2)
    users = ratings["user"].to_numpy()
    rank, size, _, _ = _user_ranks(users, ratings["timestamp"].to_numpy())
    return _holdout(ratings, rank, size, size - 1, minimum)


def leave_one_out_random(
    ratings: pd.DataFrame, seed: int = 0, min_user_interactions: int = 5
) -> HoldOut:
    """Leave-one-out at random: one rating per user, drawn with ``seed``, is the test part.

    For data without timestamps (or to avoid the recency of the temporal variant); same user
    minimum as :func:`leave_one_out`.
    """
    _check_ratings(ratings, need=("user",))
    minimum = check_int(min_user_interactions, _SOURCE, "split.min_user_interactions", 2)
    rng = _rng(seed)
    users = ratings["user"].to_numpy()
    rank, size, _, _ = _user_ranks(users, rng.random(len(ratings)))
    return _holdout(ratings, rank, size, size - 1, minimum)


def split_holdout(
    ratings: pd.DataFrame,
    method: str,
    train_ratio: float = 0.8,
    seed: int = 0,
    min_user_interactions: int = 5,
    timestamps: bool = True,
    fold_method: str | None = None,
    source: str = _SOURCE,
) -> HoldOut:
    """The test split ``method`` (one of :data:`SPLIT_METHODS`) of ``ratings``.

    ``timestamps=False`` (data without a time column) refuses ``temporal`` and ``leave-one-out``
    and the fold method ``user_temporal`` with an error naming ``split.method`` /
    ``split.fold_method`` in ``source``; a split that drops every user is an error naming
    ``split.min_user_interactions`` in ``source`` (:func:`check_users_kept`).
    """
    if method not in SPLIT_METHODS:
        raise input_error(source, "split.method",
                          f"unknown method {plain(method)} (expected one of "
                          f"{', '.join(SPLIT_METHODS)})")
    if not timestamps and method in _TIMED:
        raise input_error(source, "split.method", f"{plain(method)} orders each user's ratings "
                          "by time but the data has no timestamps ([data] columns maps none); use "
                          "'random' or 'leave-one-out-random'")
    if not timestamps and fold_method == "user_temporal":
        raise input_error(source, "split.fold_method", "'user_temporal' needs timestamps and the "
                          "data has none; use 'user_stratified' or 'random'")
    if method == "temporal":
        holdout = temporal_holdout(ratings, train_ratio, min_user_interactions)
    elif method == "random":
        holdout = random_holdout(ratings, train_ratio, seed, min_user_interactions)
    elif method == "leave-one-out":
        holdout = leave_one_out(ratings, min_user_interactions)
    else:
        holdout = leave_one_out_random(ratings, seed, min_user_interactions)
    check_users_kept(ratings, holdout, min_user_interactions, source)
    if not len(holdout.train) and len(holdout.test):  # train_ratio below 1 / (largest user)
        check_train_ratio(ratings, train_ratio, source)
    return holdout


def check_train_ratio(ratings: pd.DataFrame, train_ratio: float, source: object,
                      field: str = "split.train_ratio") -> None:
    """The one-line error naming ``field`` when ``train_ratio`` leaves no rating for training
    at all: each user trains on ``floor(train_ratio x n_u)`` of its ``n_u`` ratings, so a
    ratio below ``1 / max_u n_u`` trains no one (a model fit on nothing, metrics of zero
    everywhere). A ratio that leaves only some users without training ratings is taken: a
    10/90 split of short histories is a legitimate design."""
    if not len(ratings):
        return
    most = int(ratings.groupby("user").size().max())
    if _floor_share(float(train_ratio), np.array([most]))[0] < 1:
        raise input_error(source, field, f"{plain(train_ratio)} leaves no rating for training: "
                          "each user trains on floor(train_ratio x its ratings), and the most "
                          f"any user has is {most}; give at least 1/{most}")


def _balanced_random(n: int, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """Global random fold labels with balanced sizes: a permutation, then position % k."""
    labels = np.empty(n, dtype=np.int8)
    labels[rng.permutation(n)] = (np.arange(n) % n_folds).astype(np.int8)
    return labels


def _check_nonempty(labels: np.ndarray, n_folds: int, what: str) -> np.ndarray:
    """Raise when a fold got no rows."""
    counts = np.bincount(labels, minlength=n_folds)
    if (counts == 0).any():
        empty = int(np.flatnonzero(counts == 0)[0])
        raise input_error(
            _SOURCE,
            "split.folds",
            f"fold {empty} of {n_folds} is empty ({what} has {len(labels)} rows); use fewer folds",
        )
    return labels


def kfold_labels(ratings: pd.DataFrame, n_folds: int, seed: int) -> np.ndarray:
    """k-fold over the whole data: a seeded global permutation dealt into ``n_folds`` (int8 labels).

    Fold sizes differ by at most one; label ``f`` marks the test rows of fold ``f``.
    """
    _check_ratings(ratings, need=())
    k = check_int(n_folds, _SOURCE, "split.folds", 2, MAX_FOLDS)
    labels = _balanced_random(len(ratings), k, _rng(seed))
    return _check_nonempty(labels, k, "the data")


def cv_fold_labels(
    train: pd.DataFrame, n_folds: int = 10, method: str = "user_stratified", seed: int = 0
) -> np.ndarray:
    """Validation fold label (int8, 0..n_folds-1) for each row of ``train``.

    ``user_stratified``: each user's rows are shuffled and dealt round-robin from a random offset,
    label = (shuffled rank + offset_u) mod k, so users with >= k rows appear in every fold;
    ``random``: balanced global assignment; ``user_temporal``: each user's rows in time order cut
    into k contiguous chunks, label = floor(rank * k / n_u).
    """
    if method not in FOLD_METHODS:
        raise input_error(
            _SOURCE,
            "split.fold_method",
            f"unknown method {plain(method)} (expected one of {', '.join(FOLD_METHODS)})",
        )
    k = check_int(n_folds, _SOURCE, "split.folds", 2, MAX_FOLDS)
    _check_ratings(train, need=("user", "timestamp") if method == "user_temporal" else ("user",))
    rng = _rng(seed)
    n = len(train)
    if method == "random":
        labels = _balanced_random(n, k, rng)
    else:
        users = train["user"].to_numpy()
        if method == "user_stratified":
            rank, _, group, _ = _user_ranks(users, rng.random(n))
            n_groups = int(group.max()) + 1 if n else 0
            offset = rng.integers(0, k, size=n_groups)
            labels = ((rank + offset[group]) % k).astype(np.int8)
        else:  # user_temporal
            rank, size, _, _ = _user_ranks(users, train["timestamp"].to_numpy())
            labels = (rank * k // size).astype(np.int8)
    return _check_nonempty(labels, k, "the training part")
