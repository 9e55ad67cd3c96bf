"""Log-scaled user slices of the slice study: bins, per-user features and slice membership.

For a quantity ``x >= 0`` and a base ``b`` (default 2) the bin index is::

    e(x) = floor(log_b x)  for x >= 1   (bin [b^e, b^(e+1)))
    e(x) = -1              for x < 1    (bin [0, 1))

computed exactly (integer powers, no floating-point ``log`` at bin edges). Every user of a fold
falls in exactly one bin of each slice kind (``history``: training items of the user in the
fold; ``popularity``: mean training popularity of the user's relevant held-out items), and a
user's slice may differ between folds, so membership is per (fold, user).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dptune.errors import check_int, input_error
from dptune.vocab import SLICE_BASE_RANGE

__all__ = ["SLICE_KINDS", "KIND_NAMES", "check_base", "log_bin", "bin_bounds", "bin_label",
           "user_features", "assign_slices", "members_by_slice"]

SLICE_KINDS: tuple[str, ...] = ("history", "popularity")
KIND_NAMES: dict[str, str] = {
    "history": "User history length (training items in the fold)",
    "popularity": "Mean training popularity of the user's relevant held-out items",
    "all": "All users",
}


def check_base(base: Any) -> int:
    """The bin base as an int in :data:`dptune.vocab.SLICE_BASE_RANGE` (2 to 1,000,000, the
    range of ``dptune slices --base``); anything else is one error line naming ``base``."""
    return check_int(base, "slices", "base", *SLICE_BASE_RANGE)


def log_bin(values: np.ndarray, base: int = 2) -> np.ndarray:
    """Bin index ``e`` with ``base**e <= x < base**(e+1)`` for ``x >= 1``, ``-1`` for ``x < 1``.

    Exact at the edges: a float estimate ``floor(log(x) / log(base))`` is corrected by one step
    either way against integer powers, so ``x = 8`` is in ``[8, 16)`` for base 2 however the
    logarithm rounds. Negative or non-finite values are an input error.
    """
    b = check_base(base)
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise input_error("slices", "values", "must be finite and non-negative")
    e = np.full(x.shape, -1, dtype=np.int64)
    pos = x >= 1
    if pos.any():
        est = np.floor(np.log(x[pos]) / np.log(b)).astype(np.int64)
        pw = np.power(float(b), est)
        est = np.where(pw > x[pos], est - 1, est)
        est = np.where(np.power(float(b), est + 1) <= x[pos], est + 1, est)
        e[pos] = est
    return e


def bin_bounds(e: int, base: int = 2) -> tuple[float, float]:
    """``[lo, hi)`` of bin ``e``: ``[base**e, base**(e+1))``, or ``[0, 1)`` for ``e = -1``."""
    if e < 0:
        return 0.0, 1.0
    return float(base**e), float(base ** (e + 1))


def bin_label(e: int, base: int = 2) -> str:
    """Text of bin ``e``: ``"[0, 1)"``, ``"[1, 2)"``, ``"[16, 32)"``, ..."""
    lo, hi = bin_bounds(e, base)
    return f"[{lo:g}, {hi:g})"


def user_features(prep: Any, folds: Sequence[str]) -> pd.DataFrame:
    """Per (fold, evaluated user): training-history length and mean relevant-item popularity.

    ``prep`` is a :class:`dptune.sweeper.Prepared` (anything with ``fold(f)`` returning a
    ``FoldData``). ``history = nnz(train[u])``; ``popularity = mean_{i in R_u} users_f(i)`` with
    ``users_f(i) = nnz(train[:, i])`` and ``R_u`` the user's relevant held-out items.
    """
    parts = []
    for f in folds:
        fd = prep.fold(str(f))
        X, R, users = fd.train, fd.relevant, np.asarray(fd.users)
        history = np.diff(X.indptr)[users].astype(np.int64)
        item_users = np.bincount(X.indices, minlength=X.shape[1]).astype(np.float64)
        Ru = R[users]
        n_rel = np.diff(Ru.indptr).astype(np.float64)
        pop_sum = np.asarray((Ru != 0).astype(np.float64) @ item_users).ravel()
        parts.append(pd.DataFrame({"fold": str(f), "user": users.astype(np.int32),
                                   "history": history,
                                   "popularity": pop_sum / np.maximum(n_rel, 1.0)}))
    return pd.concat(parts, ignore_index=True)


def assign_slices(features: pd.DataFrame, kind: str, base: int = 2) -> pd.DataFrame:
    """``fold, user, slice_kind, bin, slice, lo, hi``: one row per (fold, user), the bin of the
    feature ``kind`` (a column of ``features``)."""
    if kind not in features.columns:
        raise input_error("slices", "kind", f"unknown slice kind {kind!r}")
    e = log_bin(features[kind].to_numpy(), base)
    bounds = {int(b): bin_bounds(int(b), base) for b in np.unique(e)}
    return pd.DataFrame({
        "fold": features["fold"].to_numpy(), "user": features["user"].to_numpy(),
        "slice_kind": kind, "bin": e, "slice": [bin_label(int(b), base) for b in e],
        "lo": [bounds[int(b)][0] for b in e], "hi": [bounds[int(b)][1] for b in e],
    })


def members_by_slice(assigned: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """``{slice label: {fold: sorted user codes}}`` in bin order."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for (_, label), g in assigned.groupby(["bin", "slice"], sort=True):
        out[str(label)] = {str(f): np.sort(gf["user"].to_numpy()) for f, gf in g.groupby("fold")}
    return out
