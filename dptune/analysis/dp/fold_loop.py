"""The one fold loop: every number of the DP analysis from one read of each validation fold.

For each algorithm, the scopes of its grid (:func:`dptune.analysis.dp.pairs.scopes`: ``all``,
``<h>=<v>``, ``only:<h>``) each have their pairs (every pair up to the cap, else a seeded
sample). Each validation fold is read once -- every configuration any scope needs, every
metric@N (in groups of metric@N when one fold would not fit :data:`FOLD_BYTES`) -- and handed to
every scope (:class:`ScopeRun`). Per scope, metric@N and fold, one paired test of each pair
gives the fold's p-values (the test is a strategy object,
:class:`dptune.analysis.dp.paired_tests.PairedTest`); from them:

- the fold's p-value curve (sorted decreasingly) and Sakai's DP (the share of pairs with
  ``p < alpha`` after the correction), for the paper's tables: averaged over the folds, the
  curve's sum is the paper's DP, ``dp_sum = P x mean p``, reported as **DP per 25 pairs**
  ``25 x mean p`` (:mod:`dptune.analysis.dp.scale`);
- the fold's mean p-value ``pbar_f``: the estimate is ``mean p = (1/F) sum_f pbar_f``;
- for the scopes that get an interval (``all``, whose pairs rank the metrics, and every
  ``only:<h>``, whose pairs rank the hyperparameters), when the test has moment sums (the
  t-test) and ``bootstrap > 0``: the bootstrap's group sums (:func:`dptune.analysis.dp.bootstrap.
  fold_moments`), from which, after the last fold, the replicates, the 95% interval of DP per
  25 pairs and the paired replicates of the comparisons come
  (:mod:`dptune.analysis.dp.comparisons`). Every scope and metric of an algorithm shares the
  bootstrap's user weights, so their replicates are paired. When a bootstrapped scope's pairs
  are a sample, the stability repeats (``stability``, lowered to what ``stability_seconds``
  affords) test other pair samples of that scope on the same fold
  read. The interval's extrapolation to ungrouped users
  (:func:`dptune.analysis.dp.bootstrap.ungrouped_scale`) is computed on the main pair sample
  and applies to the interval only: the replicates handed to the comparisons, of the main
  sample and of every repeat, are the grouped ones, whose claims hold their error rate in every
  case studied (with the extrapolated ones one null case reached 7.0%; docs/statistics.md,
  section 11).

The noise floor (:mod:`dptune.analysis.noise`) and the slice study
(:mod:`dptune.studies`) compute their folds' p-values and curves with the same
:class:`FoldCurves` accumulator and the same test strategy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from dptune._resources import check_fits
from dptune.analysis.dp import bootstrap, paired_tests
from dptune.analysis.dp import scale as sc
from dptune.analysis.dp import stability as sb
from dptune.analysis.dp import units as un
from dptune.analysis.dp.curves import (
    pvalue_curve,
    resample_curve,
    summarize_curves,
    weighted_curve,
)
from dptune.analysis.dp.pairs import Scope, scope_seed, scopes
from dptune.analysis.dp.tables import (
    CURVES_COLUMNS,
    DP_COLUMNS,
    PAIRS_COLUMNS,
    PVALUES_COLUMNS,
    DPEstimate,
    concat_frames,
    pvalue_frame,
)
from dptune.analysis.source import ResultSource
from dptune.errors import input_error
from dptune.store._fold import slice_of
from dptune.vocab import fold_key, metric_key

__all__ = ["FOLD_BYTES", "INTERVAL_KINDS", "FoldView", "UserDraws",
           "FoldCurves", "ScopePlan", "ScopeRun", "metric_groups", "fold_reader",
           "fold_views", "run_fold_loop"]

#: The most memory one fold read may hold: the float32 values of every configuration any
#: scope needs, for every metric@N. Above it the metric@N are read in groups (each group one
#: pass over the fold's parts): the full BPR-MF grid on ML-1M needs 1.25 GB for all 18
#: metric@N of a fold, about 70 MB each.
FOLD_BYTES = 512 * 2**20

#: Scope kinds that get the bootstrap interval and paired replicates: ``all`` (the verdict's
#: ranking of metrics) and ``only`` (the ranking of hyperparameters).
INTERVAL_KINDS = ("all", "only")

#: ``read(metric, cutoff, config_ids) -> (users, values (len(ids), n))`` of one fold.
Reader = Callable[[str, int, np.ndarray], tuple[np.ndarray, np.ndarray]]


class FoldView:
    """One fold's values as every consumer reads them: ``get(metric, cutoff, ids)`` ->
    ``(values, rows, columns, users)`` with ``values[rows[i]]`` the row of configuration
    ``ids[i]`` and ``columns`` the users present for every one of them (None = every column),
    ``users`` their ids. A fold read by ``read_fold`` (a :class:`dptune.store._fold.FoldSlice`)
    is read in place (its float32 array, no copy); any other ``read_matrix``-like reader is
    asked for the configurations' matrix."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.block = slice_of(read)

    @classmethod
    def of_table(cls, users: np.ndarray,
                 table: np.ndarray | Mapping[str, np.ndarray]) -> FoldView:
        """A fold held in memory: ``users`` its users' ids and ``table`` the ``(configs,
        users)`` values of every configuration (row = configuration id), one array read for
        every metric@N or one per metric name. What the simulation studies feed the loop."""
        users = np.asarray(users)

        def read(metric: str, cutoff: int, config_ids: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
            values = table[metric] if isinstance(table, Mapping) else table
            return users, np.asarray(values)[np.asarray(config_ids)]

        return cls(read)

    def get(self, metric: str, cutoff: int, ids: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        if self.block is not None:
            values, rows, columns = self.block.in_place(metric, cutoff, ids)
            users = self.block.users if columns is None else self.block.users[columns]
            return values, rows, columns, np.asarray(users)
        users, values = self.read(metric, cutoff, ids)
        values = np.ascontiguousarray(values, dtype=np.float64)
        users = np.asarray(users)
        if values.ndim != 2 or values.shape != (len(ids), len(users)):
            raise input_error("store", f"{metric}@{cutoff}", f"read_matrix returned values of "
                              f"shape {values.shape}, expected ({len(ids)}, {len(users)})")
        return values, np.arange(len(ids)), None, users

    def close(self) -> None:
        """Let the fold's values go: the view holds no reader and no block afterwards (an
        array that :meth:`get` returned is the caller's to drop)."""
        self.read, self.block = None, None


class UserDraws:
    """The bootstrap's user draws of one algorithm, shared by every scope and metric so that
    their replicates are paired: ``get(repeat, users)`` -> ``(perm, starts, weights, keys,
    coarse)``: :func:`dptune.analysis.dp.bootstrap.user_draws` for a fold's users (seed
    :func:`dptune.analysis.dp.scale.bootstrap_seed` ``(seed, repeat)``; cached per set of
    users), the users' keys, and the weights of the coarser groupings
    (:func:`dptune.analysis.dp.bootstrap.coarse_weights`, same seed)."""

    def __init__(self, n_boot: int, seed: int, groups: int = bootstrap.GROUPS,
                 user_keys: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.bootstrap, self.seed, self.groups = int(n_boot), int(seed), int(groups)
        self.user_keys = user_keys
        self._cache: dict[tuple[int, int, int], tuple[np.ndarray, ...]] = {}

    def get(self, repeat: int, users: np.ndarray) -> tuple[np.ndarray, ...]:
        key = (int(repeat), len(users), hash(np.asarray(users).tobytes()))
        if key not in self._cache:
            keys = users if self.user_keys is None else self.user_keys(users)
            seed = sc.bootstrap_seed(self.seed, repeat)
            perm, starts, weights = bootstrap.user_draws(keys, self.bootstrap, seed, self.groups)
            self._cache[key] = (perm, starts, weights, np.asarray(keys),
                                bootstrap.coarse_weights(self.bootstrap, seed, weights.shape[1]))
        return self._cache[key]

    def clear(self) -> None:
        """Forget the draws of the previous fold."""
        self._cache.clear()


@dataclass
class FoldCurves:
    """The per-fold accumulation of one set of pairs and one metric@N: each fold's p-value curve
    (sorted decreasingly), its Sakai DP (share of ``correction``-adjusted p-values below
    ``alpha``) and its mean p-value. :meth:`summary` averages the curves (the paper's DP)."""

    n_folds: int
    n_pairs: int
    alpha: float = 0.05
    correction: str | None = None
    curves: np.ndarray = field(init=False)
    sakai: np.ndarray = field(init=False)
    means: np.ndarray = field(init=False)
    all_one: bool = True

    def __post_init__(self) -> None:
        self.curves = np.zeros((self.n_folds, self.n_pairs))
        self.sakai = np.zeros(self.n_folds)
        self.means = np.zeros(self.n_folds)

    def add(self, fold_index: int, p: np.ndarray, weights: np.ndarray | None = None) -> None:
        """One fold's p-values; ``weights`` (mean 1): the pairs' post-stratification weights of
        a store holding a subset of its grid's units (:mod:`dptune.analysis.dp.units`), which
        weigh the curve, Sakai's share and the mean alike. A fold of another number of
        p-values than ``n_pairs`` (the noise floor's A/A pairs) has its curve resampled to
        ``n_pairs`` positions (:func:`dptune.analysis.dp.curves.resample_curve`)."""
        if weights is None:
            curve = pvalue_curve(p)
            self.curves[fold_index] = (curve if len(curve) == self.n_pairs
                                       else resample_curve(curve, self.n_pairs))
            self.sakai[fold_index] = paired_tests.sakai_dp(
                paired_tests.adjust(p, self.correction), self.alpha)
            self.means[fold_index] = float(np.mean(p)) if len(p) else 1.0
        else:
            self.curves[fold_index] = weighted_curve(p, weights)
            below = paired_tests.adjust(p, self.correction) < self.alpha
            self.sakai[fold_index] = float(np.dot(weights, below) / len(p))
            self.means[fold_index] = float(np.dot(weights, p) / len(p))
        self.all_one = self.all_one and bool(np.all(p == 1.0))

    def summary(self) -> dict[str, Any]:
        """``dp_sum, dp_sum_plus_sd, dp_sum_minus_sd, mean_p, mean_p_sd, sakai, sakai_sd,
        curve_mean, curve_sd`` (sd over folds with ``ddof = 1``, 0 for one fold)."""
        s = summarize_curves(self.curves)
        one = self.n_folds == 1
        return {"dp_sum": s.dp, "dp_sum_plus_sd": s.dp_plus_sd, "dp_sum_minus_sd": s.dp_minus_sd,
                "mean_p": float(self.means.mean()),
                "mean_p_sd": 0.0 if one else float(self.means.std(ddof=1)),
                "sakai": float(self.sakai.mean()),
                "sakai_sd": 0.0 if one else float(self.sakai.std(ddof=1)),
                "curve_mean": s.mean_curve, "curve_sd": s.sd_curve}


@dataclass(frozen=True)
class ScopePlan:
    """What one scope of one algorithm is run on, fixed before any fold is read.

    ``pairs``: the scope's pairs under each stability repeat (``pairs[0]``: the tables' pairs,
    in sampling order); ``n_possible``: the grid's pairs of the scope; ``n_folds`` validation
    folds; ``metric_cutoffs`` the metric@N tested; ``test`` the paired test, ``alpha`` and
    ``correction`` Sakai's DP; ``bootstrap``: replicates of the interval (0 = none; only with a
    test that has an interval) drawn from ``seed``; ``draws``: the algorithm's shared
    :class:`UserDraws` (None: the scope's own). A store that holds a subset of its grid's units
    (:mod:`dptune.analysis.dp.units`) also gives ``designer`` (pairs -> their
    :class:`dptune.analysis.dp.units.PairDesign`) and ``units`` (the algorithm's shared ``(B,
    m)`` unit multipliers)."""

    algorithm: str
    scope: str
    pairs: Sequence[np.ndarray]
    n_possible: int
    n_folds: int
    metric_cutoffs: Sequence[tuple[str, int]]
    test: paired_tests.PairedTest
    alpha: float = 0.05
    correction: str | None = None
    bootstrap: int = 0
    seed: int = 0
    draws: UserDraws | None = None
    designer: Callable[[np.ndarray], un.PairDesign] | None = None
    units: np.ndarray | None = None


class ScopeRun:
    """One scope of one algorithm fed fold by fold (module docstring), run on its
    :class:`ScopePlan`.

    With a plan's ``designer`` and ``units`` (a store holding a subset of its grid's units) the
    pairs are weighted to stand for the full grid's, the bootstrap resamples the units too, the
    interval's scale is put together from the users', pairs' and units' parts of the variance,
    each counted once (:func:`dptune.analysis.dp.units.grid_sample_scale`), and read off that
    variance (:func:`dptune.analysis.dp.units.grid_sample_interval`); a scope with an
    unsampled stratum gets no interval.
    """

    def __init__(self, plan: ScopePlan) -> None:
        self.plan = plan
        algorithm, scope, pairs = plan.algorithm, plan.scope, plan.pairs
        n_possible, n_folds, metric_cutoffs = plan.n_possible, plan.n_folds, plan.metric_cutoffs
        test, alpha, correction = plan.test, plan.alpha, plan.correction
        n_boot, seed, draws = plan.bootstrap, plan.seed, plan.draws
        designer, units = plan.designer, plan.units
        self.algorithm, self.scope = algorithm, scope
        self.test, self.seed = test, int(seed)
        self.mcs = [(str(m), int(c)) for m, c in metric_cutoffs]
        self.n_folds, self.n_possible = int(n_folds), int(n_possible)
        self.bootstrap = int(n_boot) if test.interval else 0
        self.table_pairs = np.asarray(pairs[0], dtype=np.int64).reshape(-1, 2)
        # the bootstrap's pairs in canonical order (its pair weights follow the order); the
        # tables keep the sampling order, ``order`` maps one to the other
        self.pairs = [np.asarray(p, dtype=np.int64).reshape(-1, 2) for p in pairs]
        self.pairs = [p[np.lexsort((p[:, 1], p[:, 0]))] for p in self.pairs]
        self.designs = None if designer is None else [designer(p) for p in self.pairs]
        if self.designs is not None and not self.designs[0].gets_interval:
            self.bootstrap = 0  # an unsampled stratum: an estimate over the sampled ones only
        if not self.bootstrap:
            self.pairs = self.pairs[:1]
            self.designs = None if self.designs is None else self.designs[:1]
        self.repeats = len(self.pairs)
        self.ids = np.unique(np.concatenate(self.pairs)) if len(self.table_pairs) else \
            np.zeros(0, np.int64)
        self.rows = [np.searchsorted(self.ids, p) for p in self.pairs]
        canon = self.pairs[0]
        keys = canon[:, 0] * (int(self.ids.max()) + 1 if len(self.ids) else 1) + canon[:, 1]
        tkeys = self.table_pairs[:, 0] * (int(self.ids.max()) + 1 if len(self.ids) else 1) \
            + self.table_pairs[:, 1]
        self.order = np.searchsorted(keys, tkeys)  # canonical position of each table pair
        self.draws = draws if draws is not None else UserDraws(self.bootstrap, seed)
        self.curves = {mc: FoldCurves(self.n_folds, len(self.table_pairs), alpha, correction)
                       for mc in self.mcs}
        self.means = {(k, mc): np.zeros(self.n_folds) for k in range(self.repeats)
                      for mc in self.mcs}
        self.moments: dict[tuple[int, tuple[str, int]], list[bootstrap.FoldMoments]] = {
            (k, mc): [] for k in range(self.repeats) for mc in self.mcs}
        self.pvalues: list[tuple[str, int, str, np.ndarray, int]] = []
        self._mult = [bootstrap.pair_weights(self.bootstrap, len(p), self.n_possible,
                                             scope_seed(self.seed, f"{scope}|robust|{k}|bootstrap"))
                      if self.bootstrap and len(p) else None
                      for k, p in enumerate(self.pairs)]
        # a store holding a subset of its grid's units: the pairs' own multipliers are kept
        # for the interval's components of variance (units.grid_sample_scale)
        self._pair_mult = self._mult[0]
        if self.designs is not None and self.bootstrap and units is not None:
            self._mult = [None if m is None else un.design_replicate_weights(d, units, m)
                          for d, m in zip(self.designs, self._mult, strict=True)]
        else:
            self._pair_mult = None

    def weights(self, repeat: int = 0) -> np.ndarray | None:
        """The post-stratification weights of repeat ``repeat``'s pairs in canonical order
        (None: a store holding every unit, every weight 1)."""
        return None if self.designs is None else self.designs[repeat].weights

    @property
    def table_weights(self) -> np.ndarray:
        """The weight of each of the tables' pairs, in sampling order (pairs.csv)."""
        w = self.weights(0)
        return np.ones(len(self.table_pairs)) if w is None else w[self.order]

    @property
    def unit_clusters(self) -> float:
        """The fewest independent draws of units any repeat's pairs rest on
        (:attr:`dptune.analysis.dp.units.PairDesign.clusters`; NaN when every unit is
        present)."""
        return (np.nan if self.designs is None else
                float(min(d.clusters for d in self.designs)))

    @property
    def unsampled(self) -> float:
        """The full grid's share of the scope's pairs in strata with no pair here (0 when
        every unit is present)."""
        return 0.0 if self.designs is None else float(self.designs[0].unsampled)

    def add_fold(self, fold_index: int, fold: str, view: FoldView,
                 metric_cutoffs: Sequence[tuple[str, int]] | None = None) -> None:
        """Test the pairs of every repeat on one fold, for every metric@N (or those of
        ``metric_cutoffs``: a fold read in groups)."""
        if not len(self.table_pairs):
            return
        wanted = self.mcs if metric_cutoffs is None else \
            [mc for mc in self.mcs if mc in {(str(m), int(c)) for m, c in metric_cutoffs}]
        t_seed = scope_seed(self.seed, f"{self.scope}|fold={fold}")
        for mc in wanted:
            values, base, columns, users = view.get(mc[0], mc[1], self.ids)
            n = len(users)
            for k in range(self.repeats):
                ra, rb = base[self.rows[k][:, 0]], base[self.rows[k][:, 1]]
                if self.bootstrap:
                    perm, starts, w, keys, coarse = self.draws.get(k, users)
                    moments = bootstrap.fold_moments(values, ra, rb, perm, starts, w, keys, columns,
                                                     coarse)
                    self.moments[(k, mc)].append(moments)
                    p = moments.p
                    if np.isnan(p).any():
                        raise input_error("stats", "per-user values",
                                          "contain NaN or infinite values")
                else:
                    p = self.test.pvalues(values, ra, rb, columns, seed=t_seed)
                w = self.weights(k)
                self.means[(k, mc)][fold_index] = (float(p.mean()) if w is None
                                                   else float(np.dot(w, p) / len(p)))
                if k == 0:  # the curve and Sakai's DP ignore the order; the table's is kept
                    self.curves[mc].add(fold_index, p, w)
                    self.pvalues.append((mc[0], mc[1], fold, p[self.order], n))

    def finish(self) -> tuple[list[dict[str, Any]], list[pd.DataFrame],
                              dict[tuple[str, str, str, int], list[tuple[float, np.ndarray]]]]:
        """``(dp rows, curve frames, draws)``: one dp.csv row and curve per metric@N, and per
        metric@N the ``(mean p, replicates)`` of every repeat
        (:func:`dptune.analysis.dp.bootstrap.interval_replicates`; empty without a
        bootstrap)."""
        rows, curves, draws = [], [], {}
        n_p = len(self.table_pairs)
        # one BLAS thread, as in the fold loop: idle BLAS threads spin and slow the compiled
        # replicate loop that runs on every core right after each product (one limit for
        # every metric@N: setting one scans the loaded libraries, about 3 ms each time)
        with threadpool_limits(limits=1, user_api="blas") if self.bootstrap else nullcontext():
            for mc in self.mcs:
                s = self.curves[mc].summary()
                lo = hi = np.nan
                reps: list[tuple[float, np.ndarray]] = []
                if self.bootstrap:
                    for k in range(self.repeats):
                        mean_k = float(self.means[(k, mc)].mean())
                        folds = self.moments[(k, mc)]
                        centres = bootstrap.bootstrap_centres(folds)
                        if k == 0 and self._pair_mult is not None:
                            # a subset of the grid's units: every replicate's p-value of
                            # every pair, for the replicates and their parts of the variance
                            p_reps = un.replicate_pvalues(folds, centres, self.bootstrap)
                            raw = (self._mult[k] * p_reps).sum(axis=1) / p_reps.shape[1]
                        else:
                            sizes = np.zeros(self.bootstrap) if k == 0 else None
                            raw = bootstrap.replicate_sum(folds, self._mult[k], centres=centres,
                                                          sizes=sizes) / self.n_folds
                        # the claims (draws) compare the grouped replicates, unshrunk: with
                        # the extrapolated ones their error rate rose to 7.0% in one null case
                        # (docs/statistics.md section 11); the interval is extrapolated
                        reps.append((mean_k, bootstrap.interval_replicates(mean_k, raw)))
                        if k == 0:
                            shrink = (bootstrap.ungrouped_scale(folds, self._mult[k], raw, centres)
                                      if self._pair_mult is None else
                                      un.grid_sample_scale(folds, self.designs[0],
                                                           self._pair_mult, raw, centres,
                                                           p_reps))
                            ci = (bootstrap.dp_interval(mean_k, raw, scale=shrink,
                                                        groups=bootstrap.interval_groups(folds),
                                                        factors=bootstrap.size_factors(
                                                            folds, self._mult[k], centres,
                                                            raw, sizes))
                                  if self._pair_mult is None else
                                  un.grid_sample_interval(
                                      mean_k, raw, shrink,
                                      few_draws=self.designs[0].few_draws))
                            lo, hi = (sc.REFERENCE_P * x for x in ci)
                    self.moments = {key: v for key, v in self.moments.items() if key[1] != mc}
                    draws[(self.algorithm, self.scope, mc[0], mc[1])] = reps
                rows.append({
                    "algorithm": self.algorithm, "scope": self.scope, "metric": mc[0],
                    "cutoff": mc[1], "n_pairs": n_p, "n_possible_pairs": self.n_possible,
                    "n_folds": self.n_folds, "mean_p": s["mean_p"], "mean_p_sd": s["mean_p_sd"],
                    "dp_per_25": sc.per_reference(s["dp_sum"], n_p),
                    "dp_per_25_plus_sd": sc.per_reference(s["dp_sum_plus_sd"], n_p),
                    "dp_per_25_minus_sd": sc.per_reference(s["dp_sum_minus_sd"], n_p),
                    "ci_low": float(lo), "ci_high": float(hi), "dp_sum": s["dp_sum"],
                    "sakai": s["sakai"], "sakai_sd": s["sakai_sd"],
                    "no_evidence": self.curves[mc].all_one, "repeats": self.repeats,
                    "unsampled_share": self.unsampled, "unit_clusters": self.unit_clusters,
                })
                curves.append(pd.DataFrame({
                    "algorithm": self.algorithm, "scope": self.scope, "metric": mc[0],
                    "cutoff": mc[1], "position": np.arange(n_p), "mean": s["curve_mean"],
                    "sd": s["curve_sd"]}))
        return rows, curves, draws


def _users_hint(store: ResultSource) -> int:
    """Users of the data set from the store's manifest (0 when unknown): the stability budget's
    estimate."""
    try:
        return int(store.manifest()["dataset"]["users"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return 0


def _repeats(bootstrapped: Sequence[Scope], options: Any, n_users: int, n_mcs: int,
             n_folds: int) -> int:
    """Stability repeats of an algorithm: ``options.stability`` (at least 1) when a
    bootstrapped scope's pairs are a sample, lowered to what ``options.stability_seconds``
    affords (:func:`dptune.analysis.dp.stability.affordable_repeats`); else 1."""
    sampled = [s for s in bootstrapped if s.sampled]
    requested = max(1, int(options.stability))
    if not sampled or requested == 1:
        return 1
    per = sum(sb.estimated_seconds(s.n_pairs, n_users, n_mcs, n_folds, int(options.bootstrap),
                                   bootstrap.GROUPS) for s in sampled)
    return sb.affordable_repeats(requested, per, float(options.stability_seconds))


def metric_groups(store: ResultSource, alg: str, n_configs: int,
                  mcs: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """``mcs`` in consecutive groups whose fold slice fits :data:`FOLD_BYTES` (one group when
    the store has no batched ``read_fold`` or no ``trials`` to size it). Every result is the
    same for any grouping: each metric@N is tested on its own values."""
    trials = getattr(store, "trials", None)
    if not callable(getattr(store, "read_fold", None)) or not callable(trials) or not mcs:
        return [list(mcs)]
    t = trials()
    users = t.loc[t["algorithm"] == alg, "n_users"]
    per_mc = 4 * n_configs * (int(users.max()) if len(users) else 0)
    size = max(1, FOLD_BYTES // per_mc) if per_mc else len(mcs)
    return [list(mcs[i:i + size]) for i in range(0, len(mcs), size)]


def fold_reader(store: ResultSource, algorithm: str, fold: str, ids: np.ndarray,
                mcs: list[tuple[str, int]], buffer: Any = None) -> Reader:
    """``read(metric, cutoff, ids)`` of one fold: a store with a batched ``read_fold`` (the
    :class:`dptune.store._store.ResultStore`) is read once per fold, every configuration and
    metric@N of the group, served from memory; any other store is asked ``read_matrix``."""
    batched = getattr(store, "read_fold", None)
    if callable(batched):
        block = batched(algorithm, fold, ids, mcs,
                        **({"buffer": buffer} if buffer is not None else {}))
        return block.matrix

    def read(metric: str, cutoff: int, scope_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store.read_matrix(algorithm, metric, cutoff, fold, scope_ids)

    return read


def fold_views(store: ResultSource, algorithm: str, fold: str, ids: np.ndarray,
               groups: Sequence[list[tuple[str, int]]], buffer: Any = None
               ) -> Iterator[tuple[list[tuple[str, int]], FoldView]]:
    """One fold of ``algorithm`` group by group: for each group of metric@N of ``groups``
    (:func:`metric_groups`) one read of the configurations ``ids`` (:func:`fold_reader`, in
    ``buffer`` when given) seen through a :class:`FoldView`, as ``(group, view)``. The
    previous group's view is closed (:meth:`FoldView.close`) before the next group is read, so
    one group's slice is held at a time, whatever the caller still refers to; a view is valid
    until the next one is asked for (a ``buffer`` is overwritten by the next read)."""
    for group in groups:
        view = FoldView(fold_reader(store, algorithm, fold, ids, group, buffer))
        yield group, view
        view.close()


def plan_runs(store: ResultSource, alg: str, options: Any, folds: Sequence[str],
              mcs: list[tuple[str, int]], sample: un.UnitSample | None = None
              ) -> list[ScopeRun]:
    """The :class:`ScopeRun` of every scope of ``alg`` (module docstring). ``sample``: the
    units of the grid the store holds (:func:`dptune.analysis.dp.units.unit_sample`); when it
    is not the whole grid the scopes are those of the configurations present, their pairs
    weighted to stand for the full grid's, and the bootstrap resamples the units."""
    test = options.paired_test
    configs = store.configs(alg)
    subset = sample is not None and not sample.complete
    if subset:
        configs = configs[configs["config_id"].isin(sample.present_configs)]
    found = scopes(configs, list(store.hyperparameters(alg)), options.pairs,
                   options.scope_value_pairs)
    boot = int(options.bootstrap) if test.interval else 0
    units = (un.unit_multipliers(boot, len(sample.present), len(sample.units),
                                 scope_seed(options.seed, f"{alg}|units"))
             if subset and boot else None)
    boxed = [s for s in found if s.kind in INTERVAL_KINDS] if boot else []
    repeats = _repeats(boxed, options, _users_hint(store), len(mcs), len(folds))
    _check_bootstrap_fits(alg, boot, boxed, repeats, subset)
    draws = UserDraws(boot, options.seed, bootstrap.GROUPS, _user_keys(store))
    runs = []
    for s in found:
        boxed_s = s in boxed
        n_rep = repeats if boxed_s and s.sampled else 1
        runs.append(ScopeRun(ScopePlan(
            alg, s.name, [s.pairs(k, options.seed) for k in range(n_rep)], s.n_possible,
            len(folds), mcs, test=test, alpha=options.alpha,
            correction=options.correction_or_none, bootstrap=boot if boxed_s else 0,
            seed=options.seed, draws=draws,
            designer=(lambda pairs, s=s: un.pair_design(
                sample, pairs, s.kind, s.hyperparameter, s.value)) if subset else None,
            units=units)))
    return runs


def _check_bootstrap_fits(alg: str, boot: int, boxed: Sequence[Scope], repeats: int,
                          subset: bool) -> None:
    """Refuse, before any fold is read, a bootstrap whose arrays cannot fit in this machine's
    memory: the float64 replicate weights ``(B, P)`` of every pair set with an interval (two
    of them for a store holding a subset of its units) and the two float32 ``(B, P)`` products
    of the largest one, per fold and metric, and for a subset two float64 ``(B, P)`` matrices of
    every replicate's p-values (:func:`dptune._resources.check_fits`)."""
    if not boot or not boxed:
        return
    kept = sum(s.n_pairs * (repeats if s.sampled else 1) for s in boxed)
    largest = max(s.n_pairs for s in boxed)
    nbytes = 8.0 * boot * kept * (2 if subset else 1) + 8.0 * boot * largest * (3 if subset
                                                                                  else 1)
    check_fits(nbytes, "analysis", "bootstrap", f"{alg}: the bootstrap of {boot:,} replicates "
               f"over {kept:,} pairs")


def _user_keys(store: ResultSource) -> Callable[[np.ndarray], np.ndarray] | None:
    """The store's map from users as read to the bootstrap's user keys (a per-user table's
    users -> their codes), or None when the users as read are the keys."""
    get = getattr(store, "user_keys", None)
    return get if callable(get) else None


def run_fold_loop(store: ResultSource, options: Any, progress: bool = False,
                  algorithms: Sequence[str] | None = None) -> DPEstimate:
    """The DP estimate of every algorithm, scope and metric@N of ``store`` under ``options``
    (a validated :class:`dptune.AnalysisOptions`; module docstring).

    BLAS is held to one thread meanwhile: the resampling tests and the bootstrap make many tiny
    matrix products, which a multi-threaded BLAS slows down (``docs/performance.md``); the
    Parquet reader threads are not affected. ``progress`` shows a bar ((algorithm, fold) pairs
    done / total, ETA) on stderr; ``algorithms``: a subset of the store's (default: all). Memory: one fold of the configurations any scope needs, in
    groups of metric@N above :data:`FOLD_BYTES`, and the bootstrap's group sums of every fold.
    """
    from dptune.store._store import FoldBuffer

    algs = list(store.algorithms()) if algorithms is None else list(algorithms)
    n_folds = sum(sum(str(f) != "test" for f in store.folds(a)) for a in algs)
    out = _Tables()
    # every algorithm planned (scopes, pairs, weights; the bootstrap's memory checked) before
    # any fold is read
    plans = []
    for alg in algs:
        folds = sorted((str(f) for f in store.folds(alg) if str(f) != "test"), key=fold_key)
        if not folds:  # a store whose every unit of alg lacks some fold (a run stopped early)
            raise input_error(getattr(store, "root", "store"), alg,
                              "no unit has results in every validation fold yet (dptune run "
                              "computes them)")
        mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)},
                     key=lambda mc: metric_key(*mc))
        sample = un.unit_sample(store, alg)
        if sample is not None and not sample.complete:
            out.grid_sample.append(sample.row())
        plans.append((alg, folds, mcs, plan_runs(store, alg, options, folds, mcs, sample)))
    with threadpool_limits(limits=1, user_api="blas"), tqdm(
            total=n_folds, desc="analysis", unit="fold", disable=not progress,
            dynamic_ncols=True) as bar:
        buffer = FoldBuffer()  # one fold's values, reused by every (algorithm, fold) read
        for alg, folds, mcs, runs in plans:
            for r in runs:
                seed = scope_seed(options.seed, r.scope)
                out.pairs.extend((alg, r.scope, i, int(a), int(b), seed, float(w))
                                 for i, ((a, b), w) in enumerate(zip(
                                     r.table_pairs, r.table_weights, strict=True)))
            ids = (np.unique(np.concatenate([r.ids for r in runs])) if runs
                   else np.zeros(0, dtype=np.int64))
            groups = metric_groups(store, alg, len(ids), mcs)
            for f_i, fold in enumerate(folds):
                for group, view in (fold_views(store, alg, fold, ids, groups, buffer)
                                    if runs else ()):
                    for r in runs:
                        r.add_fold(f_i, fold, view, group)
                if runs:
                    runs[0].draws.clear()
                bar.update(1)
            for r in runs:
                out.add(r)
    return out.estimate(options)


@dataclass
class _Tables:
    """The rows of :class:`DPEstimate`'s tables, accumulated scope by scope."""

    pairs: list[tuple] = field(default_factory=list)
    pvalues: list[pd.DataFrame] = field(default_factory=list)
    dp: list[dict[str, Any]] = field(default_factory=list)
    curves: list[pd.DataFrame] = field(default_factory=list)
    draws: dict[tuple[str, str, str, int], list[tuple[float, np.ndarray]]] = field(
        default_factory=dict)
    grid_sample: list[dict[str, Any]] = field(default_factory=list)

    def add(self, run: ScopeRun) -> None:
        rows, curves, draws = run.finish()
        self.pvalues.append(pvalue_frame(run.algorithm, run.scope, run.pvalues,
                                         len(run.table_pairs)))
        self.dp += rows
        self.curves += curves
        self.draws.update(draws)

    def estimate(self, options: Any) -> DPEstimate:
        test = options.paired_test
        dp = pd.DataFrame(self.dp, columns=[c for c in DP_COLUMNS
                                            if c not in ("test", "correction", "alpha")])
        dp = dp.assign(test=test.name, correction=options.correction, alpha=options.alpha)
        return DPEstimate(
            pairs=pd.DataFrame(self.pairs, columns=PAIRS_COLUMNS),
            pvalues=concat_frames(self.pvalues, PVALUES_COLUMNS),
            table=dp[DP_COLUMNS],
            curves=concat_frames(self.curves, CURVES_COLUMNS),
            draws=self.draws,
            grid_sample=(pd.DataFrame(self.grid_sample, columns=un.GRID_SAMPLE_COLUMNS)
                         if self.grid_sample else None),
        )
