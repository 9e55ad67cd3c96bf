"""The DP of one algorithm's ``all`` scope on one scale, fold by fold, with its bootstrap.

:class:`RobustPass` is fed one validation fold at a time (the same fold slice the tables' DP
reads, so the store is read once) and computes, for every metric@N and every stability repeat
``k = 0 .. S-1`` (:mod:`dptune.analysis.dp.stability`; repeat 0 uses the pairs of the ``all``
scope of the tables, and only a sampled scope has further repeats):

- the p-values of the repeat's pairs (:func:`dptune.analysis.dp.scale.robust_pairs`; the paired
  t-test from the same sums as the bootstrap, :func:`dptune.analysis.dp.bootstrap.point_pvalues`:
  scipy's ``ttest_rel`` to rounding), their fold mean ``pbar_f``;
- with ``bootstrap = B > 0``, the fold's group sums (:func:`dptune.analysis.dp.bootstrap.fold_moments`),
  kept until the last fold; then the B replicates, around the pairs' bootstrap-world
  differences, one for every fold when the folds hold the same users
  (:func:`dptune.analysis.dp.bootstrap.bootstrap_centres`,
  :func:`dptune.analysis.dp.bootstrap.fold_replicate_means`; the pairs are resampled only when
  they are a sample of the grid's pairs, :func:`dptune.analysis.dp.bootstrap.pair_weights`).

The replicates are not read as they are: resampling users adds the sampling noise of each pair's
mean difference a second time (the bootstrap world's differences are shrunk for that,
:func:`dptune.analysis.dp.bootstrap.shrink_factor`), and their location is not the estimate's. :func:`dptune.analysis.dp.bootstrap.interval_replicates` turns them into the
bootstrap's error on the logit scale reflected around the estimate (``pbar°``), from which both
the interval (:func:`dptune.analysis.dp.bootstrap.dp_interval`, inside [0, 1] by construction) and
``P(A more discriminative than B)`` are read.

:meth:`RobustPass.result` turns them into the robust table (``mean_p``, ``dp_at_25`` and its 95%
interval on the DP per 25 pairs scale, inside [0, 25]), the ranking ``P(A more discriminative than B)`` of each
repeat and the replicates. Repeats whose pairs are the same (all pairs used) share the
p-values and differences; only their bootstrap draws differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dptune.analysis.dp import bootstrap as rs
from dptune.analysis.dp import scale as rb
from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.scale import bootstrap_seed as rb_seed
from dptune.store._fold import slice_of
from dptune.vocab import fold_key, metric_key

__all__ = ["ROBUST_TABLE_COLUMNS", "RobustResult", "RobustPass", "robust_analysis", "plan_pass",
           "merge_results", "store_user_keys"]

ROBUST_TABLE_COLUMNS = ["algorithm", "metric", "cutoff", "mean_p", "mean_p_sd", "dp_at_25",
                        "ci_low", "ci_high", "n_pairs", "n_possible_pairs", "n_folds",
                        "no_evidence", "repeats"]

#: ``read(metric, cutoff, config_ids) -> (users, values (len(ids), n))`` of one fold.
Reader = Callable[[str, int, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class RobustResult:
    """``table`` (:data:`ROBUST_TABLE_COLUMNS`, DP per 25 pairs interval NaN without bootstrap),
    ``ranking`` (``algorithm, cutoff, metric_a, metric_b, p_a_better, repeat``; None without
    bootstrap) and ``replicates`` ``(algorithm, metric, cutoff) -> (B,)`` the interval's
    replicates ``pbar°`` of repeat 0 (:func:`dptune.analysis.dp.bootstrap.interval_replicates`)."""

    table: pd.DataFrame
    ranking: pd.DataFrame | None
    replicates: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)


class RobustPass:
    """Robust DP of one algorithm, accumulated over its validation folds (module docstring).

    ``config_ids``: the algorithm's configurations; ``pairs``: the cap of the ``all`` scope;
    ``repeats``: the stability repeats ``S`` (already made affordable by the caller; one when
    every pair is used, since other seeds would give the same pairs); ``groups``: the
    bootstrap's user groups.
    """

    def __init__(self, algorithm: str, config_ids: np.ndarray, n_folds: int,
                 metric_cutoffs: Sequence[tuple[str, int]], *, pairs: int = rb.PAIRS,
                 bootstrap: int = 1000, repeats: int = 1, seed: int = 0,
                 groups: int = rs.GROUPS,
                 user_keys: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.algorithm = algorithm
        self.user_keys = user_keys  # users as read -> the bootstrap's user key (None: as read)
        self.mcs = [(str(m), int(c)) for m, c in metric_cutoffs]
        self.n_folds = int(n_folds)
        self.bootstrap = int(bootstrap)
        self.seed = int(seed)
        self.groups = int(groups)
        ids = np.unique(np.asarray(config_ids, dtype=np.int64))
        self.n_possible = rb.n_possible_pairs(len(ids))
        if self.n_possible <= int(pairs):  # every pair: another seed gives the same pairs
            repeats = 1
        self.pairs: list[np.ndarray] = []
        for k in range(max(1, int(repeats))):
            p = rb.robust_pairs(ids, pairs, self.seed, k)
            p = p[np.lexsort((p[:, 1], p[:, 0]))]  # canonical order: the mean ignores it
            self.pairs.append(p)
        self.repeats = len(self.pairs)
        self.ids = np.unique(np.concatenate(self.pairs)) if self.n_possible else ids[:0]
        self._fold_means = {(k, mc): np.zeros(self.n_folds) for k in range(self.repeats)
                            for mc in self.mcs}
        self._all_one = dict.fromkeys(self.mcs, True)
        # every fold's group sums, kept until the last fold: the replicates need each pair's
        # bootstrap-world differences, a mean over the folds (rs.bootstrap_centres)
        self._moments: dict[tuple[int, tuple[str, int]], list[rs.FoldMoments]] = {
            (k, mc): [] for k in range(self.repeats) for mc in self.mcs}
        self._mult = [rs.pair_weights(self.bootstrap, len(p), self.n_possible,
                                      rb.bootstrap_seed(seed, k))
                      if self.bootstrap and len(p) else None for k, p in enumerate(self.pairs)]

    def add_fold(self, fold_index: int, read: Reader,
                 metric_cutoffs: Sequence[tuple[str, int]] | None = None) -> None:
        """Test the pairs of every repeat on one fold and add its bootstrap part, for every
        metric@N or those of ``metric_cutoffs`` (a fold read in groups of metric@N).

        ``read`` is ``read_matrix``-like; when it is the ``matrix`` method of a
        :class:`dptune.store._fold.FoldSlice` the float32 fold array is read in place (no
        copy of the configurations' rows), with the same inner join of users.
        """
        if not self.n_possible:
            return
        draws: dict[tuple[int, int, int], tuple[np.ndarray, ...]] = {}
        block = slice_of(read)
        rows = [np.searchsorted(self.ids, p) for p in self.pairs]
        wanted = self.mcs if metric_cutoffs is None else \
            [mc for mc in self.mcs if mc in {(str(m), int(c)) for m, c in metric_cutoffs}]
        for mc in wanted:
            columns = None
            if block is not None:
                values, base, columns = block.in_place(mc[0], mc[1], self.ids)
                users = block.users if columns is None else block.users[columns]
                n = len(users)
                mapped = [base[r] for r in rows]
            else:
                users, values = read(mc[0], mc[1], self.ids)
                values = np.ascontiguousarray(values, dtype=np.float64)
                n = len(users)
                mapped = rows
            # the repeats beyond the first feed only the bootstrap's claims (result())
            for k in range(self.repeats if self.bootstrap else 1):
                ra, rb = mapped[k][:, 0], mapped[k][:, 1]
                if self.bootstrap:  # the same user, the same weight, in every fold
                    key = (k, n, hash(np.asarray(users).tobytes()))
                    if key not in draws:
                        ids = users if self.user_keys is None else self.user_keys(users)
                        draws[key] = (*rs.user_draws(ids, self.bootstrap, rb_seed(self.seed, k),
                                                     self.groups), np.asarray(ids))
                    perm, starts, w, keys = draws[key]
                    moments = rs.fold_moments(values, ra, rb, perm, starts, w, keys, columns)
                    self._moments[(k, mc)].append(moments)
                    p = moments.p
                else:
                    p = rs.ttest_pvalues(values, ra, rb, n, columns)
                self._fold_means[(k, mc)][fold_index] = p.mean()
                if k == 0 and not np.all(p == 1.0):
                    self._all_one[mc] = False

    def _replicates(self, k: int, mc: tuple[str, int]) -> np.ndarray | None:
        """The raw replicates ``pbar*_r`` of repeat ``k`` and one metric@N: the folds' parts
        around the pairs' bootstrap-world differences
        (:func:`dptune.analysis.dp.bootstrap.replicate_sum`), averaged over the folds; None
        without bootstrap."""
        if not self.bootstrap:
            return None
        # one BLAS thread, as in the fold loop: idle BLAS threads spin and slow the compiled
        # replicate loop that runs on every core right after each product (5x, measured)
        with threadpool_limits(limits=1, user_api="blas"):
            return rs.replicate_sum(self._moments[(k, mc)], self._mult[k]) / self.n_folds

    def result(self) -> RobustResult:
        """The robust table, the ranking of every repeat and repeat 0's replicates."""
        rows, reps0 = [], {}
        ranking = []
        for k in range(self.repeats):
            reps_k = {}
            for mc in self.mcs:
                fm = self._fold_means[(k, mc)]
                key = (self.algorithm, mc[0], mc[1])
                mean = float(fm.mean())
                raw = self._replicates(k, mc)
                if self.bootstrap:  # the bootstrap's error, reflected around the estimate
                    reps_k[key] = rs.interval_replicates(mean, raw)
                if k:
                    continue
                lo = hi = np.nan
                if self.bootstrap:
                    lo, hi = (rb.REFERENCE_P * x for x in rs.dp_interval(mean, raw))
                rows.append({
                    "algorithm": self.algorithm, "metric": mc[0], "cutoff": mc[1],
                    "mean_p": mean,
                    "mean_p_sd": float(fm.std(ddof=1)) if self.n_folds > 1 else 0.0,
                    "dp_at_25": rb.REFERENCE_P * mean, "ci_low": float(lo), "ci_high": float(hi),
                    "n_pairs": len(self.pairs[0]), "n_possible_pairs": self.n_possible,
                    "n_folds": self.n_folds, "no_evidence": bool(self._all_one[mc]),
                    "repeats": self.repeats,
                })
            if self.bootstrap:
                ranking.append(sb.ranking_frame(reps_k, k))
                if k == 0:
                    reps0 = reps_k
        table = pd.DataFrame(rows, columns=ROBUST_TABLE_COLUMNS)
        rank = pd.concat(ranking, ignore_index=True) if ranking else None
        return RobustResult(table, rank, reps0)


def robust_analysis(store: Any, *, algorithms: Sequence[str] | None = None,
                    pairs: int = rb.PAIRS, bootstrap: int = 1000, stability: int = 1,
                    seed: int = 0, groups: int = rs.GROUPS,
                    budget_s: float | None = None) -> tuple[RobustResult, dict[str, int]]:
    """The robust DP of every algorithm of a store, reading each validation fold once on its own
    (the analysis feeds :class:`RobustPass` from its own fold loop instead). Returns the merged
    result and the repeats run per algorithm (``stability`` lowered by
    :func:`dptune.analysis.dp.stability.affordable_repeats` when ``budget_s`` is given).
    """
    # the analysis' reader (batched when possible)
    from dptune.analysis.dp.engine import _fold_reader

    algs = list(store.algorithms()) if algorithms is None else list(algorithms)
    parts, used = [], {}
    with threadpool_limits(limits=1, user_api="blas"):  # many small products (see engine.analyze)
        for alg in algs:
            _one_algorithm(store, alg, parts, used, pairs, bootstrap, stability, seed,
                           groups, budget_s, _fold_reader)
    return merge_results(parts), used


def _one_algorithm(store: Any, alg: str, parts: list, used: dict, pairs: int,
                   bootstrap: int, stability: int, seed: int, groups: int,
                   budget_s: float | None, fold_reader: Any) -> None:
    """:func:`robust_analysis` for one algorithm (appends to ``parts`` and ``used``)."""
    folds = sorted((str(f) for f in store.folds(alg) if str(f) != "test"), key=fold_key)
    mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)},
                 key=lambda mc: metric_key(*mc))
    ids = store.configs(alg)["config_id"].to_numpy()
    rp = plan_pass(alg, ids, len(folds), mcs, n_users=None, pairs=pairs,
                   bootstrap=bootstrap, stability=stability, seed=seed, groups=groups,
                   budget_s=budget_s, store=store, first_fold=folds[0] if folds else None,
                   user_keys=store_user_keys(store))
    for f_i, fold in enumerate(folds):
        rp.add_fold(f_i, fold_reader(store, alg, fold, rp.ids, mcs))
    used[alg] = rp.repeats
    parts.append(rp.result())


def plan_pass(algorithm: str, config_ids: np.ndarray, n_folds: int,
              mcs: Sequence[tuple[str, int]], *, n_users: int | None, pairs: int,
              bootstrap: int, stability: int, seed: int, groups: int = rs.GROUPS,
              budget_s: float | None = None, store: Any = None,
              first_fold: str | None = None,
              user_keys: Callable[[np.ndarray], np.ndarray] | None = None) -> RobustPass:
    """A :class:`RobustPass` with ``stability`` lowered to what ``budget_s`` affords (estimated
    from the pairs, users, metrics, folds and replicates; ``n_users`` None: the users of the
    first fold's first metric, read from ``store``). One repeat when every pair is used: a
    repeat draws other pairs, and there are none."""
    m = len(np.unique(np.asarray(config_ids)))
    repeats = int(stability) if rb.n_possible_pairs(m) > int(pairs) else 1
    if budget_s is not None and repeats > 1:
        n_p = int(pairs)
        if n_users is None and store is not None and first_fold is not None and mcs:
            ids = np.asarray(config_ids)[:2]
            n_users = len(store.read_matrix(algorithm, mcs[0][0], mcs[0][1], first_fold, ids)[0])
        per = sb.estimated_seconds(n_p, int(n_users or 0), len(mcs), n_folds, bootstrap, groups)
        repeats = sb.affordable_repeats(repeats, per, budget_s)
    return RobustPass(algorithm, config_ids, n_folds, mcs, pairs=pairs,
                      bootstrap=bootstrap, repeats=repeats, seed=seed, groups=groups,
                      user_keys=user_keys)


def store_user_keys(store: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The store's map from users as read to the bootstrap's user keys (its ``user_keys``:
    a per-user table's users -> their codes, as in the result store it came from), or None
    when the users as read are the keys (a result store's codes)."""
    get = getattr(store, "user_keys", None)
    return get if callable(get) else None


def merge_results(parts: Sequence[RobustResult]) -> RobustResult:
    """One :class:`RobustResult` from the per-algorithm ones (rows in the given order)."""
    tables = [p.table for p in parts if not p.table.empty]
    table = (pd.concat(tables, ignore_index=True) if tables
             else pd.DataFrame(columns=ROBUST_TABLE_COLUMNS))
    ranks = [p.ranking for p in parts if p.ranking is not None]
    ranking = pd.concat(ranks, ignore_index=True) if ranks else None
    reps: dict[tuple[str, str, int], np.ndarray] = {}
    for p in parts:
        reps.update(p.replicates)
    return RobustResult(table, ranking, reps)
