"""Stage "data": the :class:`Dataset`, the embedded data set, filters, id encoding, Table 1.

Everything downstream works on a :class:`Dataset`: contiguous ``int32`` user and item codes
(ordered by sorted original id), ``float32`` ratings and ``int64`` timestamps, sorted by
(user, timestamp) with file order breaking ties. Reading is in :mod:`dptune.data._readers`,
fetching in :mod:`dptune.data._fetch`.
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.data._fetch import (
    _GROUPLENS,
    KNOWN_DATASETS,
    _cache_root,
    _cached_file,
    _check_counts,
    fetch,
    portable_path,
)
from dptune.data._readers import COLUMNS, FORMATS, _read_bytes, read_ratings
from dptune.errors import check_int64, check_path, input_error, is_finite, plain

__all__ = [
    "COLUMNS",
    "FORMATS",
    "KNOWN_DATASETS",
    "Dataset",
    "dataset_stats",
    "fetch",
    "kcore_filter",
    "load_dataset",
    "read_ratings",
]


EMBEDDED = "ml-latest-small"
_EMBEDDED_FILE = "datasets/ml-latest-small/ratings.csv.gz"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A rating data set with contiguous int32 codes; the unit every later stage works on."""

    name: str
    ratings: pd.DataFrame  # user:int32, item:int32, rating:float32, timestamp:int64
    user_ids: np.ndarray  # original id of each user code
    item_ids: np.ndarray  # original id of each item code
    source: str  # path or "embedded:ml-latest-small"
    log: tuple[str, ...] = ()
    implicit: bool = False  # no ratings in the file: every rating is 1.0, every row relevant
    timestamps: bool = True  # False: the file order stands in for time (no temporal split)

    @property
    def n_users(self) -> int:
        """Number of user codes (``len(user_ids)``)."""
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        """Number of item codes (``len(item_ids)``)."""
        return len(self.item_ids)



# ----------------------------------------------------------------------------------------------
# Filters and encoding


def _sorted_codes(ids: np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..n-1 ordered by sorted original id (numeric or string order), and the ids."""
    codes, uniques = pd.factorize(ids, sort=False)
    uniq = np.asarray(uniques)
    if uniq.dtype == object:
        order = np.argsort(uniq.astype(str), kind="stable")
    else:
        order = np.argsort(uniq, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes].astype(np.int32), uniq[order]


def _kcore_mask(users: np.ndarray, items: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """Rows kept by the k-core (users and items with >= k rows, iterated); and the rounds run."""
    keep = np.ones(len(users), dtype=bool)
    rounds = 0
    if k <= 1:
        return keep, rounds
    n_u = int(users.max()) + 1 if len(users) else 0
    n_i = int(items.max()) + 1 if len(items) else 0
    while True:
        rounds += 1
        u_count = np.bincount(users[keep], minlength=n_u)
        i_count = np.bincount(items[keep], minlength=n_i)
        new_keep = keep & (u_count[users] >= k) & (i_count[items] >= k)
        if new_keep.sum() == keep.sum():
            return keep, rounds
        keep = new_keep


def kcore_filter(ratings: pd.DataFrame, k: int) -> pd.DataFrame:
    """Keep the k-core: rows whose user and item both have >= k rows, repeated to a fixed point.

    Removing a sparse item can push a user below k, so the filter iterates until nothing changes.
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise input_error("data", "kcore", f"must be a non-negative integer, got {plain(k)}")
    if not isinstance(ratings, pd.DataFrame):
        raise input_error("kcore_filter", "ratings", "expected a DataFrame with columns user "
                          f"and item, got {type(ratings).__name__}")
    for column in ("user", "item"):
        if column not in ratings.columns:
            raise input_error("kcore_filter", "ratings", f"missing column {plain(column)} (found: "
                              f"{', '.join(map(str, ratings.columns))})")
    u, _ = _sorted_codes(ratings["user"].to_numpy())
    i, _ = _sorted_codes(ratings["item"].to_numpy())
    keep, _ = _kcore_mask(u, i, int(k))
    return ratings.loc[keep].reset_index(drop=True)


def _dedupe_latest(users: np.ndarray, items: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Row positions kept when each (user, item) keeps its latest row (ties: the later row)."""
    pos = np.arange(len(users))
    order = np.lexsort((pos, ts, items, users))
    u, i = users[order], items[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = (u[:-1] != u[1:]) | (i[:-1] != i[1:])
    return np.sort(order[last])


def _filter_error(source: str, experiment: str | None, key: str, problem: str) -> Exception:
    """The error about the filter ``key`` (``min_rating``, ``kcore``): naming the experiment
    file and ``data.<key>`` when the filters come from one (the data file ``source`` in the
    text), else the data file and the argument."""
    if experiment:
        return input_error(experiment, f"data.{key}", problem.format(of=f" of {source}"))
    return input_error(source, key, problem.format(of=""))


def _build(
    raw: pd.DataFrame,
    name: str,
    source: str,
    min_rating: float | None,
    kcore: int,
    log: list[str],
    experiment: str | None = None,
) -> Dataset:
    """Dedupe, filter and encode raw ratings into a :class:`Dataset`; a filter that leaves no
    rating is an error naming it (:func:`_filter_error`)."""
    users, user_ids = _sorted_codes(raw["user"].to_numpy())
    items, item_ids = _sorted_codes(raw["item"].to_numpy())
    rating = raw["rating"].to_numpy(dtype=np.float32)
    ts = raw["timestamp"].to_numpy(dtype=np.int64)
    log.append(
        f"read {len(raw):,} ratings ({len(user_ids):,} users, {len(item_ids):,} items) from {source}"
    )
    implicit = bool(raw.attrs.get("implicit", False))
    timed = bool(raw.attrs.get("timestamps", True))
    if implicit:
        log.append("no rating column: implicit feedback, every interaction is relevant "
                   "(the relevance threshold does not apply)")
    if not timed:
        log.append("no timestamp column: the file order stands in for time "
                   "(temporal splits are unavailable)")
    if raw.attrs.get("time_ranks", False):
        log.append("timestamps with fractions that whole numbers would tie for a user (such as 10.2 "
                   "and 10.7): each is replaced by its rank in the column, which keeps their "
                   "order")

    keep = _dedupe_latest(users, items, ts)
    n_dup = len(raw) - len(keep)
    latest = "the latest by timestamp" if timed else "the last in file order"
    log.append(
        f"dropped {n_dup:,} duplicated (user, item) ratings, keeping {latest}"
        if n_dup
        else "no duplicated (user, item) pairs"
    )
    if min_rating is not None and implicit:
        raise _filter_error(source, experiment, "min_rating", "the data{of} has no ratings "
                            "(implicit feedback); remove min_rating")
    if min_rating is not None:
        sel = rating[keep] >= np.float32(min_rating)
        log.append(f"min_rating {min_rating:g}: removed {int((~sel).sum()):,} ratings below it")
        if len(keep) and not sel.any():
            raise _filter_error(source, experiment, "min_rating", f"every rating{{of}} is below "
                                f"{min_rating:g} (the highest is {float(rating[keep].max()):g}), "
                                "so no data is left; lower it")
        keep = keep[sel]
    if kcore:
        mask, rounds = _kcore_mask(users[keep], items[keep], kcore)
        if len(keep) and not mask.any():
            most_u = int(np.bincount(users[keep]).max())
            most_i = int(np.bincount(items[keep]).max())
            after = " after min_rating" if min_rating is not None else ""
            raise _filter_error(source, experiment, "kcore", f"the {kcore}-core{{of}} is empty: "
                                f"no users and items with at least {kcore} ratings each remain "
                                f"(the most any user has{after} is {most_u}, any item {most_i}); "
                                "lower it")
        before_u, before_i = len(np.unique(users[keep])), len(np.unique(items[keep]))
        removed = int((~mask).sum())
        keep = keep[mask]
        log.append(
            f"{kcore}-core: removed {removed:,} ratings, {before_u - len(np.unique(users[keep])):,} users, "
            f"{before_i - len(np.unique(items[keep])):,} items ({rounds} rounds)"
        )
    if len(keep) == 0:  # pragma: no cover - the readers refuse a file without ratings
        raise input_error(source, None, "no ratings left after filtering")

    # Re-encode so the codes of the remaining users and items stay contiguous (order preserved).
    u_used, u_new = np.unique(users[keep], return_inverse=True)
    i_used, i_new = np.unique(items[keep], return_inverse=True)
    ts_k = ts[keep]
    order = np.lexsort((keep, ts_k, u_new))  # (user, timestamp), file order breaks ties
    ratings = pd.DataFrame(
        {
            "user": u_new[order].astype(np.int32),
            "item": i_new[order].astype(np.int32),
            "rating": rating[keep][order],
            "timestamp": ts_k[order],
        }
    )
    return Dataset(
        name=name,
        ratings=ratings,
        user_ids=user_ids[u_used],
        item_ids=item_ids[i_used],
        source=source,
        log=tuple(log),
        implicit=implicit,
        timestamps=timed,
    )



def load_dataset(
    source: str | os.PathLike[str],
    fmt: str = "auto",
    min_rating: float | None = None,
    kcore: int = 0,
    columns: Mapping[str, str | int] | None = None,
    sep: str | None = None,
    header: bool | None = None,
    experiment: str | None = None,
) -> Dataset:
    """Load a data set by name ("ml-latest-small" embedded, "ml-100k"/"ml-1m" fetched) or path.

    Duplicated (user, item) pairs keep the latest rating; then ratings < ``min_rating`` go, then
    the ``kcore`` filter runs; codes are contiguous int32 in sorted original-id order; a filter
    that leaves no rating is an error naming it. ``columns``, ``sep`` and ``header`` read an own
    file (:func:`read_ratings`); they do not apply to the named data sets. ``experiment`` is the
    experiment file whose ``[data]`` table set the filters (``DataConfig.reader_options``): an
    error about a filter names it and ``data.min_rating`` / ``data.kcore``, the data in the text.
    """
    check_path(source, "load_dataset", "source", "a data set name or the path of a ratings file")
    if min_rating is not None and (
        isinstance(min_rating, bool)
        or not isinstance(min_rating, (int, float))
        or not is_finite(min_rating)  # np.isfinite refuses an integer beyond int64 (TypeError)
    ):
        raise input_error(source, "min_rating", f"must be a number, got {plain(min_rating)}")
    if isinstance(kcore, bool) or not isinstance(kcore, (int, np.integer)) or kcore < 0:
        raise input_error(source, "kcore", f"must be a non-negative integer, got {plain(kcore)}")
    check_int64(kcore, source, "kcore")
    log: list[str] = []
    key = str(source)
    if key == EMBEDDED or key in _GROUPLENS:
        for field, value in (("columns", columns), ("sep", sep), ("header", header)):
            if value is not None:
                raise input_error(key, field, "applies to your own files, not to the named "
                                  "data set (its layout is known)")
    if key == EMBEDDED:
        label = f"embedded:{EMBEDDED}"
        resource = importlib.resources.files("dptune").joinpath(_EMBEDDED_FILE)
        raw = _read_bytes(resource.read_bytes(), "ratings.csv.gz", label, "ml-csv", None, None)
        _check_counts(EMBEDDED, raw, label)
        return _build(raw, EMBEDDED, label, min_rating, int(kcore), log, experiment)
    if key in _GROUPLENS:
        path = _cached_file(key, _cache_root(None)) or fetch(key)
        raw = read_ratings(path)
        _check_counts(key, raw, portable_path(path))
        return _build(raw, key, portable_path(path), min_rating, int(kcore), log, experiment)
    path = Path(source)
    if not path.exists():
        raise input_error(
            path, None, f"no such file, and not a known data set name ({', '.join(KNOWN_DATASETS)})"
        )
    raw = read_ratings(path, fmt=fmt, columns=columns, sep=sep, header=header)
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    name = name.rsplit(".", 1)[0] if "." in name else name
    return _build(raw, name, str(path), min_rating, int(kcore), log, experiment)


def check_cutoffs(ds: Dataset, cutoffs: Sequence[int], source: str) -> None:
    """One line naming ``source`` (the experiment file) and ``evaluation.cutoffs`` when a cutoff
    is not below the number of items of the loaded data ``ds``, before any unit starts.

    A user's top-N list is drawn from the items outside their training data, fewer than the
    data's items: a cutoff at or above that number lists every item the user can be
    recommended, so every configuration scores the same (Recall@N = 1 for every user) and the
    metric@N tells nothing apart, while looking like a result (its DP the number of pairs).
    The experiment file alone cannot tell this (:data:`dptune.config.MAX_CUTOFF` bounds a
    cutoff before the data is read)."""
    n_items = ds.n_items
    over = sorted(int(c) for c in cutoffs if int(c) >= n_items)
    if over:
        shown = (f"{over[0]:,} is" if len(over) == 1 else
                 " and ".join(f"{c:,}" for c in over) + " are")
        raise input_error(source, "evaluation.cutoffs",
                          f"{shown} not below the {n_items:,} items of the data ({ds.name}): a "
                          "top-N list that long holds every item a user can be recommended, so "
                          "every configuration scores the same at that cutoff (Recall = 1); "
                          f"give cutoffs below {n_items:,}")


def dataset_stats(ds: Dataset) -> dict:
    """Table 1 statistics: users, items, ratings and sparsity = 1 - ratings / (users * items).

    Sparsity is a fraction (the paper prints it as a percentage: ML-1M 0.9553 -> 95.53%).
    """
    if not isinstance(ds, Dataset):
        raise input_error("dataset_stats", "ds", "expected a Dataset (from load_dataset), got "
                          f"{type(ds).__name__}")
    n = len(ds.ratings)
    cells = ds.n_users * ds.n_items
    return {
        "name": ds.name,
        "users": ds.n_users,
        "items": ds.n_items,
        "ratings": n,
        "sparsity": 1.0 - n / cells if cells else float("nan"),
    }
