"""Discriminative power (DP) of metrics over hyperparameter grids (Anelli et al., RecSys 2019).

Method: for one algorithm, one metric@N and one validation fold, take the scope's P
configuration pairs (every pair up to the ``pairs`` cap, else a seeded uniform sample; the same
pairs for every metric and fold; :mod:`dptune.analysis.dp.pairs`, which also defines the scopes
``all``, ``<h>=<v>`` and ``only:<h>``), compute one paired
two-sided p-value per pair over the fold's users, sort the P p-values in decreasing order (the
fold's p-value curve); average the curves position by position over the folds; DP is the sum of
the averaged curve (lower = more discriminative; :mod:`dptune.analysis.dp.curves`).

Beyond the paper: Sakai-style DP (fraction of pairs with ``p < alpha``, optionally after Holm /
Benjamini-Hochberg). The interval of DP and the ranking of metrics come from the robust pass
(:mod:`dptune.analysis.dp.estimator`), fed from the same fold reads and the same ``all`` pairs.
All p-values come from :mod:`dptune.analysis.dp.paired_tests`.

This module runs all of it over a result store (:func:`analyze`); the names of the modules
above stay importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from dptune.analysis.dp import bootstrap as rs
from dptune.analysis.dp import paired_tests as stats
from dptune.analysis.dp.curves import DPResult, noise_floor, pvalue_curve, summarize_curves
from dptune.analysis.dp.pairs import format_value, sample_pairs, scope_pairs, scope_seed
from dptune.analysis.dp.tables import (
    CURVES_COLUMNS,
    DP_COLUMNS,
    METRIC_ORDER,
    PAIRS_COLUMNS,
    PVALUES_COLUMNS,
    Analysis,
    ResultStoreLike,
    _concat,
    _frame,
    _pvalue_frame,
)
from dptune.analysis.options import PAIRS, validate_options, value_pairs_of
from dptune.errors import input_error
from dptune.store._fold import slice_of
from dptune.store._store import FoldBuffer
from dptune.vocab import fold_key, metric_key

__all__ = [
    "METRIC_ORDER",
    "DPResult",
    "Analysis",
    "ResultStoreLike",
    "sample_pairs",
    "pvalue_curve",
    "summarize_curves",
    "format_value",
    "scope_seed",
    "scope_pairs",
    "analyze",
    "noise_floor",
]


def _metric_key(mc: tuple[str, int]) -> tuple[int, str, int]:
    return metric_key(*mc)


def _read_pair_values(
    read: Any,
    algorithm: str,
    metric: str,
    cutoff: int,
    fold: str,
    ids: np.ndarray,
    pairs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read one fold's slice for the scope's configurations; return ``(users, values, rows)``:
    the ``(configs, users)`` values and each pair's two rows in them.

    ``read(metric, cutoff, ids)`` has the contract of ``store.read_matrix`` on that fold.
    """
    users, values = read(metric, cutoff, ids)
    values = np.ascontiguousarray(values, dtype=np.float64)
    users = np.asarray(users)
    if values.ndim != 2 or values.shape != (len(ids), len(users)):
        raise input_error(
            "store",
            f"{algorithm}/{metric}@{cutoff}/fold {fold}",
            f"read_matrix returned values of shape {values.shape}, expected "
            f"({len(ids)}, {len(users)})",
        )
    return users, values, np.searchsorted(ids, pairs)


def _fold_reader(
    store: ResultStoreLike,
    algorithm: str,
    fold: str,
    ids: np.ndarray,
    mcs: list[tuple[str, int]],
    buffer: Any = None,
) -> Any:
    """``read(metric, cutoff, ids)`` for one fold (``buffer``: a reusable
    :class:`dptune.store._store.FoldBuffer` for stores with ``read_fold``).

    A store with a batched ``read_fold(algorithm, fold, config_ids, metric_cutoffs)`` (the
    :class:`dptune.store._store.ResultStore`) is read once per fold, every configuration any scope
    needs and every metric@N, and the scopes are served from memory; any other store is asked
    ``read_matrix`` once per (scope, metric@N), as the protocol promises.
    """
    batched = getattr(store, "read_fold", None)
    if callable(batched):
        block = batched(algorithm, fold, ids, mcs,
                        **({"buffer": buffer} if buffer is not None else {}))
        return block.matrix

    def read(metric: str, cutoff: int, scope_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store.read_matrix(algorithm, metric, cutoff, fold, scope_ids)

    return read


def analyze(
    store: ResultStoreLike,
    pairs: int = PAIRS,
    seed: int = 0,
    test: str = "t",
    alpha: float = 0.05,
    correction: str | None = None,
    n_resamples: int = 1000,
    *,
    value_pairs: int | None = None,
    algorithms: Iterable[str] | None = None,
    progress: bool = False,
    fold_hooks: Mapping[str, Any] | None = None,
) -> Analysis:
    """DP of every metric@N for every algorithm and scope of a result store.

    For each algorithm, scope (:func:`scope_pairs`: every pair when the scope has at most
    ``pairs``, else a seeded sample of ``pairs``; for the hyperparameter-value and
    one-at-a-time scopes the cap is ``value_pairs``, by default ``min(pairs,``
    :data:`dptune.analysis.options.VALUE_PAIRS` ``)``), metric@N and validation fold, the slice of
    the scope's configurations is read (``store.read_matrix``: users present for all of them,
    an inner join), the P pairs are tested (:func:`dptune.analysis.dp.paired_tests.paired_pvalues`, ``test``; the
    resampling tests use the seed :func:`scope_seed` ``(seed, "<scope>|fold=<fold>")``, the same
    for every metric), the p-values sorted into the fold's curve; :func:`summarize_curves` over
    the folds gives DP, DP+-sd and the averaged curve. Sakai DP: per fold the fraction of pairs
    with (``correction``-adjusted) ``p < alpha``, averaged over folds (``sakai``) with its sd
    (``ddof=1``, 0 for one fold). Fold ``"test"`` is never used.

    Reading: folds are the outer loop. A store with ``read_fold`` (``dptune.store._store.ResultStore``)
    is read once per (algorithm, fold): every configuration that any scope needs, every
    metric@N, one pass over the parts; each scope then takes its rows and inner-joins its users
    in memory (exactly what ``read_matrix`` would return). Memory is bounded by that one fold
    (float32). Other
    stores are asked ``read_matrix`` per (scope, fold, metric@N). Results do not depend on the
    path taken.

    BLAS is held to one thread meanwhile: the resampling tests make many tiny matrix products,
    which a multi-threaded BLAS slows down (7-10x on a loaded 2-core machine, see
    ``docs/performance.md``); the Parquet reader threads are not affected. ``progress`` shows
    a bar ((algorithm, fold) pairs done / total, ETA) on stderr: the full ML-1M store takes
    half a minute. ``fold_hooks``: algorithm -> an object with ``ids`` (configurations it needs,
    added to the fold read) and ``add_fold(fold_index, read, metric_cutoffs)``, called with each validation
    fold's reader (another estimate fed from the same single read of every fold).
    """
    opts = validate_options({"pairs": pairs, "value_pairs": value_pairs, "seed": seed,
                             "test": test, "alpha": alpha,
                             "correction": "none" if correction is None else correction,
                             "n_resamples": n_resamples})
    pairs, seed, alpha, n_resamples = opts["pairs"], opts["seed"], opts["alpha"], opts["n_resamples"]
    correction = None if opts["correction"] == "none" else opts["correction"]

    algs = list(store.algorithms()) if algorithms is None else list(algorithms)
    n_folds = sum(sum(str(f) != "test" for f in store.folds(a)) for a in algs)
    with threadpool_limits(limits=1, user_api="blas"), tqdm(
        total=n_folds, desc="analysis", unit="fold", disable=not progress, dynamic_ncols=True
    ) as bar:
        run = _Run(pairs, value_pairs_of(pairs, opts.get("value_pairs")), seed, test, alpha,
                   correction, n_resamples)
        tables = _Tables()
        buffer = FoldBuffer()  # one fold's values, reused by every (algorithm, fold) read
        for alg in algs:
            _analyze_algorithm(store, alg, run, tables, buffer, bar, (fold_hooks or {}).get(alg))
        return tables.analysis(run)


def _ticking(items: Sequence[Any], bar: Any) -> Any:
    """Yield ``items``, advancing ``bar`` by one after each item's work is done."""
    for item in items:
        yield item
        bar.update(1)


@dataclass(frozen=True)
class _Run:
    """The validated arguments of :func:`analyze`."""

    pairs: int
    value_pairs: int
    seed: int
    test: str
    alpha: float
    correction: str | None
    n_resamples: int

    def settings(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "value_pairs": self.value_pairs, "seed": self.seed,
                "test": self.test,
                "alpha": self.alpha, "correction": self.correction or "none",
                "n_resamples": self.n_resamples}


@dataclass
class _Tables:
    """The rows of :class:`Analysis`' tables, accumulated scope by scope."""

    pairs: list[tuple] = field(default_factory=list)
    pvalues: list[pd.DataFrame] = field(default_factory=list)
    dp: list[dict[str, Any]] = field(default_factory=list)
    curves: list[pd.DataFrame] = field(default_factory=list)

    def analysis(self, run: _Run) -> Analysis:
        return Analysis(
            pairs=_frame(self.pairs, PAIRS_COLUMNS),
            pvalues=_concat(self.pvalues, PVALUES_COLUMNS),
            dp=pd.DataFrame(self.dp, columns=[*DP_COLUMNS, "test", "correction", "alpha"]),
            curves=_concat(self.curves, CURVES_COLUMNS),
            settings=run.settings(),
        )


@dataclass
class _Scope:
    """One scope's pairs and what its folds have produced so far: per metric@N the fold curves
    ``(F, P)`` and the Sakai DP per fold."""

    name: str
    pairs: np.ndarray
    ids: np.ndarray
    curves: dict[tuple[str, int], np.ndarray]
    sakai: dict[tuple[str, int], np.ndarray]
    pvalues: list[tuple[str, int, str, np.ndarray, int]] = field(default_factory=list)

    @classmethod
    def start(cls, name: str, pairs: np.ndarray, n_folds: int, mcs: list[tuple[str, int]],
              run: _Run) -> _Scope:
        return cls(
            name=name, pairs=pairs, ids=np.unique(pairs),
            curves={mc: np.zeros((n_folds, len(pairs))) for mc in mcs},
            sakai={mc: np.zeros(n_folds) for mc in mcs},
        )


def _analyze_algorithm(store: ResultStoreLike, alg: str, run: _Run, tables: _Tables,
                       buffer: FoldBuffer, bar: Any, hook: Any = None) -> None:
    """Every scope of one algorithm. Folds are the outer loop so that each fold is read once
    for every scope (memory: one fold of the configurations any scope needs, in groups of
    metric@N when that is more than :data:`FOLD_BYTES`)."""
    configs = store.configs(alg)
    hps = list(store.hyperparameters(alg))
    folds = sorted((str(f) for f in store.folds(alg) if str(f) != "test"), key=fold_key)
    if not folds:
        raise input_error("store", f"{alg}: folds", "no validation folds")
    mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)}, key=_metric_key)
    scopes = [_Scope.start(name, pairs, len(folds), mcs, run)
              for name, pairs in scope_pairs(configs, hps, run.pairs, run.seed,
                                                  run.value_pairs).items()]
    for sc in scopes:
        s_seed = scope_seed(run.seed, sc.name)
        tables.pairs.extend((alg, sc.name, i, int(sc.pairs[i, 0]), int(sc.pairs[i, 1]), s_seed)
                            for i in range(len(sc.pairs)))
    all_ids = (np.unique(np.concatenate([sc.ids for sc in scopes])) if scopes
               else np.zeros(0, dtype=np.int64))
    if hook is not None:  # e.g. another estimate, fed from the same fold read
        all_ids = np.union1d(all_ids, hook.ids).astype(np.int64)
    groups = _metric_groups(store, alg, len(all_ids), mcs)
    for f_i, fold in enumerate(_ticking(folds, bar)):
        if not scopes:
            break
        for group in groups:
            read = None  # drop the previous slice before reading the next one
            read = _fold_reader(store, alg, fold, all_ids, group, buffer)
            if hook is not None:
                hook.add_fold(f_i, read, group)
            for sc in scopes:
                _add_fold(sc, read, alg, fold, f_i, group, run)
    read = None
    for sc in scopes:
        _finish_scope(tables, alg, sc, mcs, len(folds), run)


#: The most memory one fold read may hold: the float32 values of every configuration any
#: scope needs, for every metric@N. Above it the metric@N are read in groups (each group one
#: pass over the fold's parts): the full BPR-MF grid on ML-1M needs 1.25 GB for all 18
#: metric@N of a fold, about 70 MB each.
FOLD_BYTES = 512 * 2**20


def _metric_groups(store: ResultStoreLike, alg: str, n_configs: int,
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


def _add_fold(sc: _Scope, read: Any, alg: str, fold: str, f_i: int,
              mcs: list[tuple[str, int]], run: _Run) -> None:
    """Test the scope's pairs on one fold for every metric@N: the fold's curve and Sakai DP."""
    t_seed = scope_seed(run.seed, f"{sc.name}|fold={fold}")
    block = slice_of(read)
    for mc in mcs:
        metric, cutoff = mc
        if run.test == "t" and block is not None:  # the fold's own array, no copy
            values, base, columns = block.in_place(metric, cutoff, sc.ids)
            rows = base[np.searchsorted(sc.ids, sc.pairs)]
            n_users = values.shape[1] if columns is None else len(columns)
            p = rs.ttest_pvalues(values, rows[:, 0], rows[:, 1], n_users, columns)
        else:
            users, values, rows = _read_pair_values(read, alg, metric, cutoff, fold, sc.ids,
                                                    sc.pairs)
            n_users = len(users)
            if run.test == "t":  # the compiled t-test: no difference matrix
                p = rs.ttest_pvalues(values, rows[:, 0], rows[:, 1])
            else:
                p = stats.paired_pvalues(values[rows[:, 0]], values[rows[:, 1]], test=run.test,
                                         n_resamples=run.n_resamples, seed=t_seed)
        if run.test == "t" and np.isnan(p).any():  # a NaN or infinite value reached the sums
            raise input_error("stats", "per-user values", "contain NaN or infinite values")
        sc.pvalues.append((metric, cutoff, fold, p, n_users))
        sc.curves[mc][f_i] = pvalue_curve(p)
        sc.sakai[mc][f_i] = stats.sakai_dp(stats.adjust(p, run.correction), run.alpha)


def _finish_scope(tables: _Tables, alg: str, sc: _Scope, mcs: list[tuple[str, int]],
                  n_folds: int, run: _Run) -> None:
    """The scope's DP rows, curves and p-values."""
    n_p = len(sc.pairs)
    tables.pvalues.append(_pvalue_frame(alg, sc.name, sc.pvalues, n_p))
    for mc in mcs:
        metric, cutoff = mc
        res = summarize_curves(sc.curves[mc])
        row: dict[str, Any] = {
            "algorithm": alg, "scope": sc.name, "metric": metric, "cutoff": cutoff,
            "dp": res.dp, "dp_plus_sd": res.dp_plus_sd, "dp_minus_sd": res.dp_minus_sd,
            "n_pairs": res.n_pairs, "n_folds": res.n_folds,
            "sakai": float(sc.sakai[mc].mean()),
            "sakai_sd": float(sc.sakai[mc].std(ddof=1)) if n_folds > 1 else 0.0,
        }
        row.update(test=run.test, correction=run.correction or "none", alpha=run.alpha)
        tables.dp.append(row)
        tables.curves.append(pd.DataFrame({
            "algorithm": alg, "scope": sc.name, "metric": metric, "cutoff": cutoff,
            "position": np.arange(n_p), "mean": res.mean_curve, "sd": res.sd_curve,
        }))
