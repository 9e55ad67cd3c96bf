"""Degenerate inputs: refused (folds with too few users) or flagged (no evidence), never
reported with confidence.

- **Too few users per fold**: a paired test over a handful of users says little, and DP over
  such folds is mostly ties at p = 1. A validation fold with fewer than ``min_fold_users``
  (default 20) users on which the pairs are tested is refused with one line naming the
  algorithm, the fold and the count (:func:`check_fold_users`): before the fold loop starts,
  from the users the store's manifest records (:func:`recorded_fold_users`: a sweep's
  evaluated users, a per-user table's users with values; :func:`complete_fold_users`: the
  users every configuration of a table's algorithm has values for, where every pair is
  compared), and after it, from the users the pairs were tested on (:func:`fold_user_counts`:
  the configurations of a sampled table's pairs may share fewer).
  A fold of zero users is refused even with the minimum off (``min_fold_users = 0``): pairs
  compared on no user are no comparison.
- **No evidence**: a (algorithm, scope, metric@N) whose p-values are all 1 (every pair has
  identical per-user values, or fewer than two users) carries no information: its DP is P and
  its "rank" among metrics is a tie. :func:`no_evidence` flags it; the verdict never recommends
  it and says so.
- **Capped bands**: the fold-averaged curve's band ``mean(i) +- sd(i)`` is cut to the range of a
  p-value, ``[0, 1]``, so that ``DP + sd <= P`` and ``DP - sd >= 0`` (:func:`capped_band`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from dptune.analysis.dp.pairs import scopes
from dptune.analysis.source import ResultSource
from dptune.errors import check_int, input_error, plain
from dptune.vocab import fold_key

__all__ = ["MIN_FOLD_USERS", "fold_user_counts", "recorded_fold_users", "complete_fold_users",
           "check_fold_users", "no_evidence", "capped_band"]

#: Default minimum number of users of a validation fold.
MIN_FOLD_USERS = 20


def fold_user_counts(pvalues: pd.DataFrame) -> dict[tuple[str, str], int]:
    """``(algorithm, fold) -> users`` tested on that fold: the smallest ``n_users`` of the fold's
    rows in ``pvalues`` (columns ``algorithm, fold, n_users``; every scope, metric@N)."""
    if pvalues.empty:
        return {}
    g = pvalues.groupby(["algorithm", "fold"], sort=False)["n_users"].min()
    return {(str(a), str(f)): int(n) for (a, f), n in g.items()}


def recorded_fold_users(store: ResultSource) -> dict[tuple[str, str], int]:
    """``(algorithm, fold) -> users`` of every validation fold as the store's manifest records
    them, known before any fold is read, in the order :func:`fold_user_counts` gives after the
    fold loop (the store's algorithms, folds in :func:`dptune.vocab.fold_key` order); empty
    when the manifest records none (a store of an earlier version).

    A sweep records the users it evaluated per fold (``split.users_evaluated``); its
    configurations score every one of them, so these are the users its pairs are tested on. A
    per-user table records, per algorithm and fold, the fewest users with a value for any of
    its metrics@N (``fold_users``); its pairs may share fewer, which are counted in the loop.
    Either way no fold can test pairs on more: :func:`check_fold_users` on these refuses,
    before the analysis starts its progress bar, what it would refuse after the fold loop."""
    man = store.manifest()
    evaluated = (man.get("split") or {}).get("users_evaluated")
    per_algorithm = man.get("fold_users")
    out: dict[tuple[str, str], int] = {}
    for alg in store.algorithms():
        counts = evaluated if isinstance(evaluated, Mapping) else (
            per_algorithm.get(str(alg)) if isinstance(per_algorithm, Mapping) else None)
        if not isinstance(counts, Mapping):
            continue
        for fold in sorted((str(f) for f in store.folds(alg) if str(f) != "test"), key=fold_key):
            n = counts.get(fold)
            if isinstance(n, numbers.Integral) and not isinstance(n, bool):
                out[(str(alg), fold)] = int(n)
    return out


def complete_fold_users(store: ResultSource, pairs: int) -> dict[tuple[str, str], int]:
    """``(algorithm, fold) -> users`` the pairs of scope ``all`` will be tested on, where that
    is known before any fold is read: a per-user table records, per validation fold and
    metric@N where it is not complete, the users for whom every configuration of the
    algorithm has a value (the manifest's ``incomplete``, ``complete``); when every pair of the
    algorithm is compared (its scope ``all`` of :func:`dptune.analysis.dp.pairs.scopes` is no
    sample under ``pairs``, as the fold loop plans it), that scope tests its pairs on exactly
    those users, the fewest of any scope. So
    :func:`check_fold_users` on these refuses before the fold loop what it would refuse after
    it: a table whose configurations share no user on a fold, or too few. Empty for a sweep's
    store (its configurations score every user) and for an algorithm whose pairs are a sample
    (the configurations of the sampled pairs may share more users); order as
    :func:`recorded_fold_users`."""
    records = store.manifest().get("incomplete") or []
    fewest: dict[tuple[str, str], int] = {}
    for r in records:
        key = (str(r["algorithm"]), str(r["fold"]))
        fewest[key] = min(fewest.get(key, int(r["complete"])), int(r["complete"]))
    out: dict[tuple[str, str], int] = {}
    for alg in sorted({a for a, _ in fewest}, key=[str(a) for a in store.algorithms()].index):
        whole = scopes(store.configs(alg), (), int(pairs))  # scope "all" alone
        if not whole or whole[0].sampled:  # a sample of the pairs: counted in the fold loop
            continue
        for fold in sorted((f for a, f in fewest if a == alg), key=fold_key):
            out[(alg, fold)] = fewest[(alg, fold)]
    return out


def check_fold_users(counts: Mapping[tuple[str, str], int], minimum: int = MIN_FOLD_USERS,
                     source: str = "analysis",
                     which: Callable[[str, str], str] | None = None) -> None:
    """Raise a one-line error for the first (algorithm, fold) with fewer than ``minimum`` users,
    or with none.

    The message names the algorithm, the fold, the count and the option that lowers the bar,
    in both spellings (``--min-fold-users`` on the command line, ``min_fold_users`` in Python);
    ``which(algorithm, fold)``, when given, says whose users they are (the pair with the
    fewest: a configuration of outside data with values for few users makes its pairs small in
    a fold of many users). ``minimum = 0`` turns the minimum off, but a fold of zero users is
    refused whatever the minimum: configurations of outside data whose users do not overlap
    have no user to be compared on, and each pair would be "tested" on none (p = 1).
    """
    minimum = check_int(minimum, source, "min_fold_users", 0)
    for (alg, fold), n in counts.items():
        if int(n) == 0:
            raise input_error(
                source, f"{alg}/fold {fold}",
                "no user to test pairs on: no user has values for every configuration "
                "compared, and pairs compared on zero users (p = 1) are no comparison, even "
                "with the minimum off (min_fold_users = 0); give the configurations values for "
                "the same users")
        if int(n) < int(minimum):
            said = which(alg, fold) if which is not None else ""
            whose = f" ({said})" if said else ""
            raise input_error(
                source, f"{alg}/fold {fold}",
                f"only {int(n)} users to test pairs on{whose}, fewer than min_fold_users = "
                f"{plain(int(minimum))}; DP over so few users is not evidence (use more data or "
                "fewer folds, or lower the minimum: --min-fold-users, or min_fold_users in "
                "Python)")


def no_evidence(pvalues: pd.DataFrame) -> pd.DataFrame:
    """``algorithm, scope, metric, cutoff, no_evidence``: True where every p-value of the row
    (every fold and pair) is 1. ``pvalues`` has the columns of ``pvalues.parquet``."""
    keys = ["algorithm", "scope", "metric", "cutoff"]
    if pvalues.empty:
        return pd.DataFrame(columns=[*keys, "no_evidence"])
    flag = (pvalues["p"] >= 1.0).groupby([pvalues[k] for k in keys], sort=False).all()
    return flag.rename("no_evidence").reset_index()


def capped_band(mean: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(min(mean + sd, 1), max(mean - sd, 0))`` position by position: the band of a curve of
    p-values kept inside ``[0, 1]``; their sums are ``DP + sd <= P`` and ``DP - sd >= 0``."""
    m = np.asarray(mean, dtype=np.float64)
    s = np.asarray(sd, dtype=np.float64)
    return np.minimum(m + s, 1.0), np.maximum(m - s, 0.0)
