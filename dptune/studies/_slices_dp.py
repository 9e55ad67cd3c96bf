"""DP and metrics per user slice (slice study).

DP per slice uses the main analysis's pairs (``pairs.csv`` of the reports directory when given,
else ``dp.sample_pairs(config ids, P, dp.scope_seed(analysis seed, "all"))``, exactly what
:func:`dptune.analysis.dp.engine.analyze` samples for scope ``all``); per fold the store's
``read_matrix`` slice is restricted to the slice's users, each pair tested, the fold's p-values
sorted decreasingly and the folds' curves averaged; DP = the sum of the averaged curve. Metrics
per slice are those of one configuration, pooled over (fold, user) observations, with the
EvalRS miss rate at N (``hits@N = 0``, read as ``precision@N = 0``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.dp import engine as dpmod
from dptune.analysis.dp import paired_tests as stats
from dptune.errors import input_error
from dptune.vocab import fold_key

__all__ = ["main_pairs", "slice_dp", "slice_metrics"]

def main_pairs(store: Any, algorithm: str, n_pairs: int, seed: int,
               reports_dir: str | Path | None = None) -> np.ndarray:
    """The pairs of the main analysis for scope ``all``: from ``<reports_dir>/pairs.csv`` when it
    holds them, else ``dp.sample_pairs(ids, n_pairs, dp.scope_seed(seed, "all"))``."""
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
    return dpmod.sample_pairs(ids, n_pairs, dpmod.scope_seed(seed, "all"))


def slice_dp(store: Any, algorithm: str, pairs: np.ndarray,
             members: Mapping[str, Mapping[str, np.ndarray]],
             metric_cutoffs: Sequence[tuple[str, int]], test: str = "t", alpha: float = 0.05,
             seed: int = 0, n_resamples: int = 1000) -> pd.DataFrame:
    """DP of every metric@N on the users of each slice.

    For fold ``f`` and slice ``s`` with users ``U_{s,f}``: ``(users, V) = store.read_matrix(
    algorithm, metric, N, f, ids)`` (``ids`` = the pairs' configurations), columns restricted to
    ``users in U_{s,f}``; ``p_k = paired test(V[a_k], V[b_k])`` for every pair ``k``; the fold's
    curve is ``sort_desc(p)``; :func:`dptune.analysis.dp.curves.summarize_curves` over the folds gives
    ``DP = sum_i mean_f curve_f[i]`` and ``DP +- sd``. ``sakai`` = mean over folds of the fraction
    of pairs with ``p < alpha``. Folds are the union of the slices' fold keys; a slice with
    fewer than 2 users in a fold gets ``p = 1`` there (no test can reject).

    Columns ``slice, metric, cutoff, dp, dp_plus_sd, dp_minus_sd, n_pairs, n_folds, sakai,
    n_users_mean, n_users_min``.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ids = np.unique(pairs)
    rows_idx = np.searchsorted(ids, pairs)
    folds = sorted({str(f) for m in members.values() for f in m}, key=fold_key)
    labels = list(members)
    out = []
    for metric, cutoff in metric_cutoffs:
        curves = {s: np.zeros((len(folds), len(pairs))) for s in labels}
        sakai = {s: np.zeros(len(folds)) for s in labels}
        sizes = {s: np.zeros(len(folds), dtype=np.int64) for s in labels}
        for fi, fold in enumerate(folds):
            users, values = store.read_matrix(algorithm, metric, int(cutoff), fold, ids)
            values = np.asarray(values, dtype=np.float64)
            a_all, b_all = values[rows_idx[:, 0]], values[rows_idx[:, 1]]
            t_seed = dpmod.scope_seed(seed, f"all|fold={fold}")
            for s in labels:
                mask = np.isin(users, members[s].get(fold, np.empty(0, np.int32)))
                sizes[s][fi] = int(mask.sum())
                p = stats.paired_pvalues(a_all[:, mask], b_all[:, mask], test=test,
                                         n_resamples=n_resamples, seed=t_seed)
                curves[s][fi] = dpmod.pvalue_curve(p)
                sakai[s][fi] = stats.sakai_dp(p, alpha)
        for s in labels:
            res = dpmod.summarize_curves(curves[s])
            out.append({"slice": s, "metric": metric, "cutoff": int(cutoff), "dp": res.dp,
                        "dp_plus_sd": res.dp_plus_sd, "dp_minus_sd": res.dp_minus_sd,
                        "n_pairs": res.n_pairs, "n_folds": res.n_folds,
                        "sakai": float(sakai[s].mean()),
                        "n_users_mean": float(sizes[s].mean()),
                        "n_users_min": int(sizes[s].min())})
    return pd.DataFrame(out)


def slice_metrics(store: Any, algorithm: str, config_id: int,
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
