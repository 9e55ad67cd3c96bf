"""DP and metrics per user slice (slice study).

DP per slice uses the main analysis's pairs (``pairs.csv`` of the reports directory when given,
else the pairs of scope ``all`` exactly as the analysis' fold loop samples them); per fold the
store's ``read_matrix`` slice is restricted to the slice's users, each pair tested with the
analysis' paired test, and the folds accumulated as the fold loop accumulates them
(:class:`dptune.analysis.dp.fold_loop.FoldCurves`): DP per 25 pairs = 25 x the mean p-value. Metrics
per slice are those of one configuration, pooled over (fold, user) observations, with the
EvalRS miss rate at N (``hits@N = 0``, read as ``precision@N = 0``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.analysis.dp.fold_loop import FoldCurves
from dptune.analysis.dp.paired_tests import PairedTest
from dptune.analysis.dp.pairs import sample_pairs, scope_seed
from dptune.analysis.dp.scale import per_reference
from dptune.analysis.source import ResultSource
from dptune.errors import input_error
from dptune.vocab import fold_key

__all__ = ["main_pairs", "slice_dp", "slice_metrics"]

def main_pairs(store: ResultSource, algorithm: str, n_pairs: int, seed: int,
               reports_dir: str | Path | None = None) -> np.ndarray:
    """The pairs of the main analysis for scope ``all``: from ``<reports_dir>/pairs.csv`` when it
    holds them, else ``sample_pairs(ids, n_pairs, scope_seed(seed, "all"))`` (the fold loop's
    pairs of scope ``all``)."""
    if reports_dir is not None:
        path = Path(reports_dir) / "pairs.csv"
        if path.exists():
            df = pd.read_csv(path)
            need = {"algorithm", "scope", "pair_index", "config_a", "config_b"}
            if not need <= set(df.columns):
                raise input_error(path, None, f"missing columns {sorted(need - set(df.columns))}")
            sel = df[(df["algorithm"] == algorithm) & (df["scope"] == "all")].sort_values("pair_index")
            if len(sel):
                return sel[["config_a", "config_b"]].to_numpy(dtype=np.int64)
    ids = store.configs(algorithm)["config_id"].to_numpy()
    return sample_pairs(ids, n_pairs, scope_seed(seed, "all"))


def slice_dp(store: ResultSource, algorithm: str, pairs: np.ndarray,
             members: Mapping[str, Mapping[str, np.ndarray]],
             metric_cutoffs: Sequence[tuple[str, int]], test: PairedTest, alpha: float = 0.05,
             seed: int = 0) -> pd.DataFrame:
    """DP of every metric@N on the users of each slice.

    For fold ``f`` and slice ``s`` with users ``U_{s,f}``: ``(users, V) = store.read_matrix(
    algorithm, metric, N, f, ids)`` (``ids`` = the pairs' configurations), the columns of the
    users in ``U_{s,f}``; ``p_k = test(V[a_k], V[b_k])`` for every pair ``k`` (the resampling
    tests seeded as the analysis seeds scope ``all``); the folds accumulate in a
    :class:`dptune.analysis.dp.fold_loop.FoldCurves`: ``dp_per_25 = 25 x mean p`` with its fold
    sd band, ``sakai`` = mean over folds of the share of pairs with ``p < alpha``. Folds are the
    union of the slices' fold keys; a slice with fewer than 2 users in a fold gets ``p = 1``
    there (no test can reject).

    Columns ``slice, metric, cutoff, dp_per_25, dp_per_25_plus_sd, dp_per_25_minus_sd, dp_sum,
    n_pairs, n_folds, sakai, n_users_mean, n_users_min``.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ids = np.unique(pairs)
    rows_idx = np.searchsorted(ids, pairs)
    folds = sorted({str(f) for m in members.values() for f in m}, key=fold_key)
    labels = list(members)
    n_p = len(pairs)
    out = []
    for metric, cutoff in metric_cutoffs:
        acc = {s: FoldCurves(len(folds), n_p, alpha) for s in labels}
        sizes = {s: np.zeros(len(folds), dtype=np.int64) for s in labels}
        for fi, fold in enumerate(folds):
            users, values = store.read_matrix(algorithm, metric, int(cutoff), fold, ids)
            values = np.asarray(values, dtype=np.float64)
            t_seed = scope_seed(seed, f"all|fold={fold}")
            for s in labels:
                cols = np.flatnonzero(np.isin(users, members[s].get(fold, np.empty(0, np.int32))))
                sizes[s][fi] = len(cols)
                acc[s].add(fi, test.pvalues(values, rows_idx[:, 0], rows_idx[:, 1], cols,
                                            seed=t_seed))
        for s in labels:
            r = acc[s].summary()
            out.append({"slice": s, "metric": metric, "cutoff": int(cutoff),
                        "dp_per_25": per_reference(r["dp_sum"], n_p),
                        "dp_per_25_plus_sd": per_reference(r["dp_sum_plus_sd"], n_p),
                        "dp_per_25_minus_sd": per_reference(r["dp_sum_minus_sd"], n_p),
                        "dp_sum": r["dp_sum"], "n_pairs": n_p, "n_folds": len(folds),
                        "sakai": r["sakai"], "n_users_mean": float(sizes[s].mean()),
                        "n_users_min": int(sizes[s].min())})
    return pd.DataFrame(out)


def slice_metrics(store: ResultSource, algorithm: str, config_id: int,
                  members: Mapping[str, Mapping[str, np.ndarray]],
                  metric_cutoffs: Sequence[tuple[str, int]]) -> pd.DataFrame:
    """Mean of every metric@N and the miss rate at N of one configuration per slice.

    Pooled over (fold, user) observations: ``mean = sum v / n_obs``; miss rate at N = fraction
    of observations with ``precision@N = 0`` (no relevant item in the top N; ``recall@N = 0``
    when precision is not stored). Columns ``slice, metric, cutoff, mean, miss_rate, n_obs``.
    """
    folds = sorted({str(f) for m in members.values() for f in m}, key=fold_key)
    stored = {(m, int(c)) for m, c in metric_cutoffs}
    hit_metric = "precision" if any(m == "precision" for m, _ in stored) else "recall"
    cache: dict[tuple[str, int, str], tuple[np.ndarray, np.ndarray]] = {}

    def read(metric: str, cutoff: int, fold: str) -> tuple[np.ndarray, np.ndarray]:
        key = (metric, cutoff, fold)
        if key not in cache:
            users, v = store.read_matrix(algorithm, metric, cutoff, fold, [int(config_id)])
            cache[key] = (np.asarray(users), np.asarray(v, dtype=np.float64)[0])
        return cache[key]

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
