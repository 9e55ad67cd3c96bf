"""The tables of the DP analysis: their columns, the store protocol the fold loop reads, and
:class:`DPEstimate`, the result of :func:`dptune.analysis.dp.fold_loop.run_fold_loop`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dptune.vocab import METRICS

__all__ = ["METRIC_ORDER", "PAIRS_COLUMNS", "PVALUES_COLUMNS", "DP_COLUMNS", "CURVES_COLUMNS",
           "Draws", "DPEstimate", "pvalue_frame", "concat_frames"]

#: Order of metrics in every output table (:data:`dptune.vocab.METRICS`).
METRIC_ORDER: tuple[str, ...] = METRICS

#: pairs.csv: ``weight`` is the pair's post-stratification weight (1 unless the store holds a
#: subset of its grid's units; :mod:`dptune.analysis.dp.units`): ``mean p = (1/P) sum weight p``.
PAIRS_COLUMNS = ["algorithm", "scope", "pair_index", "config_a", "config_b", "seed", "weight"]
PVALUES_COLUMNS = [
    "algorithm",
    "scope",
    "metric",
    "cutoff",
    "fold",
    "pair_index",
    "p",
    "n_users",
]
#: dp.csv: one row per (algorithm, scope, metric@N). Every DP is on one scale, DP per 25 pairs
#: (``dp_per_25 = 25 x mean p``, the paper's DP when P = 25; its fold sd band and, for the
#: scopes that get one, its 95% bootstrap interval ``ci_low, ci_high``); ``dp_sum`` is the
#: paper's sum of the fold-averaged curve, ``P x mean p``, kept for the record;
#: ``unsampled_share``: for a store holding a subset of its grid's units, the full grid's share
#: of the scope's pairs that no pair here stands for (such a scope has no interval).
DP_COLUMNS = [
    "algorithm", "scope", "metric", "cutoff", "n_pairs", "n_possible_pairs", "n_folds",
    "mean_p", "mean_p_sd", "dp_per_25", "dp_per_25_plus_sd", "dp_per_25_minus_sd", "ci_low",
    "ci_high", "dp_sum", "sakai", "sakai_sd", "no_evidence", "repeats", "unsampled_share",
    "unit_clusters", "test", "correction", "alpha",
]
CURVES_COLUMNS = ["algorithm", "scope", "metric", "cutoff", "position", "mean", "sd"]



#: ``(algorithm, scope, metric, cutoff) -> [(mean p, replicates (B,)) per stability repeat]``.
Draws = dict[tuple[str, str, str, int], list[tuple[float, np.ndarray]]]


@dataclass(frozen=True)
class DPEstimate:
    """The DP part of an analysis (:func:`dptune.analysis.dp.fold_loop.run_fold_loop`): long
    tables sorted by (algorithm, scope, metric, cutoff, ...) -- algorithms in the store's
    order, scopes in the generation order of :func:`dptune.analysis.dp.pairs.scopes`, metrics
    in :data:`dptune.vocab.METRICS` order, cutoffs ascending, folds numerically.

    - ``pairs`` (pairs.csv): ``algorithm, scope, pair_index, config_a, config_b, seed`` (the
      scope's seed).
    - ``pvalues`` (pvalues.parquet): ``algorithm, scope, metric, cutoff, fold, pair_index, p,
      n_users``: every raw p-value and the users it was computed on.
    - ``table`` (dp.csv): :data:`DP_COLUMNS`.
    - ``curves`` (curves.csv): ``algorithm, scope, metric, cutoff, position, mean, sd``, the
      fold-averaged p-value curve (position 0 the largest p-value).
    - ``draws``: the bootstrap's paired replicates of every scope with an interval
      (:data:`Draws`), from which the comparisons are made; not written.
    - ``without``: algorithm -> its number of configurations, for the algorithms of the store
      without DP (fewer than two configurations, or none with validation results to pair).
    - ``grid_sample`` (grid_sample.csv): one row per algorithm whose store holds a subset of
      its grid's units (:data:`dptune.analysis.dp.units.GRID_SAMPLE_COLUMNS`); None when
      every algorithm's grid is complete.
    """

    pairs: pd.DataFrame
    pvalues: pd.DataFrame
    table: pd.DataFrame
    curves: pd.DataFrame
    draws: Draws = field(default_factory=dict)
    without: dict[str, int] = field(default_factory=dict)
    grid_sample: pd.DataFrame | None = None


def pvalue_frame(
    alg: str, scope: str, recs: list[tuple[str, int, str, np.ndarray, int]], n_p: int
) -> pd.DataFrame:
    """The ``pvalues`` rows of one scope, ``recs`` = (metric, cutoff, fold, p, n_users) in
    (fold, metric@N) order, as one frame."""
    n = len(recs)
    return pd.DataFrame(
        {
            "algorithm": alg,
            "scope": scope,
            "metric": np.repeat(np.array([r[0] for r in recs], dtype=object), n_p),
            "cutoff": np.repeat(np.array([r[1] for r in recs], dtype=np.int64), n_p),
            "fold": np.repeat(np.array([r[2] for r in recs], dtype=object), n_p),
            "pair_index": np.tile(np.arange(n_p), n),
            "p": np.concatenate([np.asarray(r[3], dtype=np.float64) for r in recs])
            if recs else np.zeros(0),
            "n_users": np.repeat(np.array([r[4] for r in recs], dtype=np.int64), n_p),
        }
    )


def concat_frames(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The frames one under the other with ``columns`` (an empty frame of them when none)."""
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]
