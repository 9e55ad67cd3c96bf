"""DP and metrics per user slice (slice study).

DP per slice uses the main analysis's pairs (``pairs.csv`` of the reports directory when given,
else the pairs of scope ``all`` exactly as the analysis' fold loop samples them); each fold is
read as the fold loop reads it (once for every metric@N, in groups above
:data:`dptune.analysis.dp.fold_loop.FOLD_BYTES`, from a store with a batched ``read_fold``;
``read_matrix`` otherwise) and seen through a :class:`dptune.analysis.dp.fold_loop.FoldView`;
per slice the fold's users are restricted to the slice's, each pair tested with the analysis'
paired test, and the folds accumulated as the fold loop accumulates them
(:class:`dptune.analysis.dp.fold_loop.FoldCurves`): DP per 25 pairs = 25 x the mean p-value. Metrics
per slice are those of one configuration, pooled over (fold, user) observations, with the
EvalRS miss rate at N (``hits@N = 0``, read as ``precision@N = 0``), read the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.analysis.dp.fold_loop import FoldCurves, fold_views, metric_groups
from dptune.analysis.dp.paired_tests import PairedTest
from dptune.analysis.dp.pairs import sample_pairs, scope_seed
from dptune.analysis.dp.scale import per_reference
from dptune.analysis.dp.units import pair_design, unit_sample
from dptune.analysis.source import ResultSource
from dptune.errors import input_error
from dptune.store import FoldBuffer
from dptune.store._per_user_file import integer_column, read_table
from dptune.vocab import fold_key

__all__ = ["main_pair_design", "all_scope_weights", "read_pairs", "slice_dp",
           "slice_metrics"]

#: The columns of a main analysis's pairs.csv that the slices read.
PAIRS_NEEDED = {"algorithm", "scope", "pair_index", "config_a", "config_b"}


def read_main_csv(path: str | Path, needed: set[str], what: str) -> pd.DataFrame:
    """A CSV file of the main reports (``pairs.csv``, ``best_configs.csv``), read as every
    table of dptune is (:func:`dptune.store._per_user_file.read_table`: names kept as written);
    one that cannot be read (missing, empty, not CSV, not UTF-8) or lacks a column of
    ``needed`` is one line naming the file, instead of a pandas traceback after the flags were
    accepted. Its integer columns are read by
    :func:`dptune.store._per_user_file.integer_column`."""
    df = read_table(path, what)
    if not needed <= set(df.columns):
        raise input_error(path, None, f"missing columns {sorted(needed - set(df.columns))}")
    return df


def read_pairs(path: str | Path) -> pd.DataFrame:
    """A main analysis's ``pairs.csv``; one that cannot be read, lacks a column of
    :data:`PAIRS_NEEDED` or holds a configuration id or pair index that is not an integer is
    one line naming the file (and the column)."""
    df = read_main_csv(path, PAIRS_NEEDED, "a pairs.csv of the main analysis")
    for col in ("pair_index", "config_a", "config_b"):
        df[col] = integer_column(Path(path), df, col, 0)
    return df


def main_pair_design(store: ResultSource, algorithm: str, n_pairs: int, seed: int,
                     reports_dir: str | Path | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(pairs, weights)`` of the main analysis for scope ``all``: the pairs from
    ``<reports_dir>/pairs.csv`` when it holds them, else as the analysis' fold loop plans
    them (:func:`dptune.analysis.dp.fold_loop.plan_runs`): ``sample_pairs(ids, n_pairs,
    scope_seed(seed, "all"))`` over the configurations of the units with results in every
    validation fold; the weights by :func:`all_scope_weights`. Without them, a store of a budgeted
    or stopped sweep was refused for the configurations it lacks, and the reference slice
    ``all`` of the main reports' pairs was not the main analysis's DP (it was unweighted)."""
    if reports_dir is not None:
        path = Path(reports_dir) / "pairs.csv"
        if path.exists():
            df = read_pairs(path)
            sel = df[(df["algorithm"].astype(str) == algorithm)
                     & (df["scope"] == "all")].sort_values("pair_index")
            if len(sel):
                pairs = sel[["config_a", "config_b"]].to_numpy(dtype=np.int64)
                return pairs, all_scope_weights(store, algorithm, pairs)
    configs = store.configs(algorithm)
    sample = unit_sample(store, algorithm)
    if sample is not None and not sample.complete:
        configs = configs[configs["config_id"].isin(sample.present_configs)]
    pairs = sample_pairs(configs["config_id"].to_numpy(), n_pairs, scope_seed(seed, "all"))
    return pairs, all_scope_weights(store, algorithm, pairs)


def all_scope_weights(store: ResultSource, algorithm: str, pairs: np.ndarray) -> np.ndarray | None:
    """The post-stratification weights of scope ``all``'s ``pairs`` (mean 1,
    :func:`dptune.analysis.dp.units.pair_design`: the weights of the main analysis, which its
    ``pairs.csv`` writes rounded) when the store holds a subset of its grid's units; None when
    it holds every unit (every weight 1)."""
    sample = unit_sample(store, algorithm)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if sample is None or sample.complete or not len(pairs):
        return None
    return pair_design(sample, pairs, "all").weights


def slice_dp(store: ResultSource, algorithm: str, pairs: np.ndarray,
             members: Mapping[str, Mapping[str, np.ndarray]],
             metric_cutoffs: Sequence[tuple[str, int]], test: PairedTest, alpha: float = 0.05,
             seed: int = 0, weights: np.ndarray | None = None) -> pd.DataFrame:
    """DP of every metric@N on the users of each slice.

    For fold ``f`` and slice ``s`` with users ``U_{s,f}``: ``V`` = the values of metric@N on
    ``f`` of ``ids`` (the pairs' configurations) over the users with a value for every one of
    them (each fold read once for every metric@N, as the fold loop reads it: :func:`_fold_blocks`;
    the same matrix as ``store.read_matrix(algorithm, metric, N, f, ids)``), the columns of the
    users in ``U_{s,f}``; ``p_k = test(V[a_k], V[b_k])`` for every pair ``k`` (the resampling
    tests seeded as the analysis seeds scope ``all``); the folds accumulate in a
    :class:`dptune.analysis.dp.fold_loop.FoldCurves`: ``dp_per_25 = 25 x mean p`` with its fold
    sd band, ``sakai`` = mean over folds of the share of pairs with ``p < alpha``. Folds are the
    union of the slices' fold keys; a slice with fewer than 2 users in a fold gets ``p = 1``
    there (no test can reject). ``weights`` (``(P,)``, mean 1; None: every weight 1): the
    pairs' post-stratification weights of a store that holds a subset of its grid's units
    (:func:`main_pair_design`), applied as the fold loop applies them, so that the slice of
    every user is the main analysis's DP.

    Columns ``slice, metric, cutoff, dp_per_25, dp_per_25_plus_sd, dp_per_25_minus_sd, dp_sum,
    n_pairs, n_folds, sakai, n_users_mean, n_users_min``.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if len(weights) != len(pairs):
            raise input_error("slices", "weights", f"{len(weights)} weights for "
                              f"{len(pairs)} pairs")
    ids = np.unique(pairs)
    rows_idx = np.searchsorted(ids, pairs)
    folds = sorted({str(f) for m in members.values() for f in m}, key=fold_key)
    labels = list(members)
    n_p = len(pairs)
    mcs = list(dict.fromkeys((str(m), int(c)) for m, c in metric_cutoffs))
    acc = {(mc, s): FoldCurves(len(folds), n_p, alpha) for mc in mcs for s in labels}
    sizes = {s: np.zeros(len(folds), dtype=np.int64) for s in labels}
    buffer = FoldBuffer()  # one fold's values, reused by every fold's read
    groups = metric_groups(store, algorithm, len(ids), mcs)
    for fi, fold in enumerate(folds):
        t_seed = scope_seed(seed, f"all|fold={fold}")
        for mc, (values, rows, columns, users) in _fold_blocks(store, algorithm, fold, ids,
                                                               groups, buffer):
            ra, rb = rows[rows_idx[:, 0]], rows[rows_idx[:, 1]]
            for s in labels:
                cols = _columns(users, columns, members[s].get(fold))
                sizes[s][fi] = len(cols)
                acc[(mc, s)].add(fi, test.pvalues(values, ra, rb, cols, seed=t_seed), weights)
    out = []
    for metric, cutoff in metric_cutoffs:
        for s in labels:
            r = acc[((str(metric), int(cutoff)), s)].summary()
            out.append({"slice": s, "metric": metric, "cutoff": int(cutoff),
                        "dp_per_25": per_reference(r["dp_sum"], n_p),
                        "dp_per_25_plus_sd": per_reference(r["dp_sum_plus_sd"], n_p),
                        "dp_per_25_minus_sd": per_reference(r["dp_sum_minus_sd"], n_p),
                        "dp_sum": r["dp_sum"], "n_pairs": n_p, "n_folds": len(folds),
                        "sakai": r["sakai"], "n_users_mean": float(sizes[s].mean()),
                        "n_users_min": int(sizes[s].min())})
    return pd.DataFrame(out)


def _fold_blocks(store: ResultSource, algorithm: str, fold: str, ids: np.ndarray,
                 groups: Sequence[list[tuple[str, int]]], buffer: FoldBuffer | None = None
                 ) -> Iterator[tuple[tuple[str, int], tuple[np.ndarray, np.ndarray,
                                                            np.ndarray | None, np.ndarray]]]:
    """``(metric@N, FoldView.get(metric, cutoff, ids))`` of every metric@N of ``groups``
    (:func:`dptune.analysis.dp.fold_loop.metric_groups`) on one fold, read as the fold loop
    reads it (:func:`dptune.analysis.dp.fold_loop.fold_views`: one read per group, in
    ``buffer`` when given). A block may be the fold's own array (:meth:`FoldView.get`): valid
    until the next one is asked for."""
    for group, view in fold_views(store, algorithm, fold, ids, groups, buffer):
        for mc in group:
            yield mc, view.get(mc[0], mc[1], ids)


def _columns(users: np.ndarray, columns: np.ndarray | None,
             members: np.ndarray | None) -> np.ndarray:
    """The columns of a :meth:`FoldView.get` block (``users``: the users it holds, ``columns``
    their columns, None = every column) that hold users of ``members`` (None: no user), in
    column order (the users' sorted order, as in ``read_matrix``)."""
    inside = np.flatnonzero(np.isin(users, members if members is not None
                                    else np.empty(0, np.int32)))
    return inside if columns is None else np.asarray(columns)[inside]


def slice_metrics(store: ResultSource, algorithm: str, config_id: int,
                  members: Mapping[str, Mapping[str, np.ndarray]],
                  metric_cutoffs: Sequence[tuple[str, int]]) -> pd.DataFrame:
    """Mean of every metric@N and the miss rate at N of one configuration per slice.

    Pooled over (fold, user) observations: ``mean = sum v / n_obs``; miss rate at N = fraction
    of observations with ``precision@N = 0`` (no relevant item in the top N; ``recall@N = 0``
    when precision is not stored). Each fold is read once for every metric@N
    (:func:`_fold_blocks`). Columns ``slice, metric, cutoff, mean, miss_rate, n_obs``.
    """
    folds = sorted({str(f) for m in members.values() for f in m}, key=fold_key)
    stored = {(m, int(c)) for m, c in metric_cutoffs}
    hit_metric = "precision" if any(m == "precision" for m, _ in stored) else "recall"
    mcs = list(dict.fromkeys((str(m), int(c)) for m, c in metric_cutoffs))
    ids = np.array([int(config_id)], dtype=np.int64)
    buffer = FoldBuffer()
    # per (metric, cutoff, fold): the configuration's users and values (a float64 copy: the
    # block is the buffer's, overwritten by the next fold's read)
    cache: dict[tuple[str, int, str], tuple[np.ndarray, np.ndarray]] = {}
    groups = metric_groups(store, algorithm, len(ids), mcs)
    for fold in folds:
        for (metric, cutoff), (values, rows, columns, users) in _fold_blocks(
                store, algorithm, fold, ids, groups, buffer):
            row = values[rows[0]] if columns is None else values[rows[0], columns]
            cache[(metric, cutoff, fold)] = (users, np.array(row, dtype=np.float64))

    def read(metric: str, cutoff: int, fold: str) -> tuple[np.ndarray, np.ndarray]:
        return cache[(str(metric), int(cutoff), fold)]

    out = []
    for s, by_fold in members.items():
        for metric, cutoff in metric_cutoffs:
            total, n, misses = 0.0, 0, 0
            for fold in folds:
                users, v = read(metric, int(cutoff), fold)
                mask = np.isin(users, by_fold.get(fold, np.empty(0, np.int32)))
                total += float(v[mask].sum())
                n += int(mask.sum())
                if (hit_metric, int(cutoff)) in stored:
                    hu, hv = read(hit_metric, int(cutoff), fold)
                    misses += int((hv[np.isin(hu, by_fold.get(fold, np.empty(0)))] == 0).sum())
            miss = misses / n if n and (hit_metric, int(cutoff)) in stored else float("nan")
            out.append({"slice": s, "metric": metric, "cutoff": int(cutoff),
                        "mean": total / n if n else float("nan"), "miss_rate": miss, "n_obs": n})
    return pd.DataFrame(out)
