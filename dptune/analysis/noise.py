"""Noise floor of discriminative power: A/A pairs of one configuration trained with several seeds.

Pairs of *identical* configurations trained with different seeds give the
p-value curve of "no real difference"; a metric whose DP curve is not clearly below that floor
does not discriminate configurations better than re-training with another seed would.

The training half runs in the sweep stage (:mod:`dptune.sweeper._noise`, ``dptune run`` after the
sweep): the best configurations of every stochastic algorithm re-trained with ``S`` seeds on
every validation fold, one part per (algorithm, configuration, fold) in
``<results>/noise_floor.parquet/`` (:mod:`dptune.store._noise_parts`). This module is the
analysis half:

- :func:`noise_floor_table` (read by :func:`dptune.analyze`).
  Per part and metric@N, the ``S`` seeds' per-user values ``v[s, u]`` give the ``S (S - 1) / 2``
  A/A p-values of :func:`dptune.analysis.dp.curves.noise_floor`. Per fold the A/A p-values of all selected
  configurations are pooled and sorted decreasingly (``c_f``, length ``K``); the curve is
  resampled to the DP's ``P`` positions by quantile interpolation,
  ``r_f[j] = interp((j + 1/2) / P; (i + 1/2) / K -> c_f[i])``, then averaged over folds
  position by position (mean, sd with ``ddof=1``) exactly like the DP curve. The floor is

  ``DP_floor = P * mean_f(pbar_f)``, ``pbar_f`` = mean A/A p-value of fold ``f``,

  with ``DP_floor_sd = P * sd_f(pbar_f)``. Under an exactly true null the A/A p-values are
  uniform and ``DP_floor = P / 2``; seed-to-seed differences of the trained models push it
  lower. :func:`compare_with_floor` flags a metric whose DP is not clearly below the floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from dptune.analysis.dp import engine as dpmod
from dptune.analysis.dp import paired_tests as stats
from dptune.errors import input_error
from dptune.store._noise_parts import (
    NOISE_DIR,
    NOISE_SCHEMA,
    check_count,
    deterministic_algorithms,
    is_stochastic,
    noise_part_name,
    noise_part_paths,
    noise_trials,
    part_meta,
    rank_configs,
    write_noise_part,
)
from dptune.store._store import ResultStore
from dptune.vocab import fold_key, metric_key

__all__ = [
    "NOISE_DIR",
    "NOISE_SCHEMA",
    "NoiseFloor",
    "is_stochastic",
    "noise_part_name",
    "rank_configs",
    "write_noise_part",
    "noise_part_paths",
    "deterministic_algorithms",
    "noise_trials",
    "aa_pvalues",
    "resample_curve",
    "noise_floor_table",
    "compare_with_floor",
]

PVALUE_COLUMNS = ["algorithm", "config_id", "metric", "cutoff", "fold", "seed_a", "seed_b", "p",
                  "n_users"]
CURVE_COLUMNS = ["algorithm", "cutoff", "metric", "position", "mean", "sd"]
FLOOR_COLUMNS = ["algorithm", "metric", "cutoff", "n_configs", "n_seeds", "n_folds",
                 "n_aa_pairs", "n_positions", "mean_p", "dp_floor", "dp_floor_sd", "test"]


def aa_pvalues(values_by_seed: np.ndarray, test: str = "t", n_resamples: int = 1000,
               seed: int = 0) -> np.ndarray:
    """A/A p-values of all seed pairs ``(s, t)``, ``s < t``, lexicographic order.

    ``t`` and ``wilcoxon`` go through :func:`dptune.analysis.dp.curves.noise_floor`; the resampling tests use
    :func:`dptune.analysis.dp.paired_tests.paired_pvalues` with the same pair order, ``n_resamples`` and ``seed``.
    """
    v = np.asarray(values_by_seed, dtype=np.float64)
    if test in ("t", "wilcoxon"):
        return dpmod.noise_floor(v, test=test)
    s_idx, t_idx = np.triu_indices(v.shape[0], k=1)
    return stats.paired_pvalues(v[s_idx], v[t_idx], test=test, n_resamples=n_resamples, seed=seed)


def resample_curve(curve: np.ndarray, n_positions: int) -> np.ndarray:
    """Resample a decreasing p-value curve of length K to ``n_positions`` positions.

    The curve is read as an empirical quantile function: value ``c[i]`` sits at level
    ``(i + 1/2) / K``; position ``j`` of the result is the linear interpolation at level
    ``(j + 1/2) / n_positions`` (constant beyond the first/last level). ``n_positions == K``
    returns the curve unchanged.
    """
    c = np.asarray(curve, dtype=np.float64).ravel()
    n_positions = check_count(n_positions, "n_positions", 1)
    if c.size == 0:
        raise input_error("noise floor", "curve", "is empty")
    if c.size == n_positions:
        return c.copy()
    x = (np.arange(c.size) + 0.5) / c.size
    u = (np.arange(n_positions) + 0.5) / n_positions
    return np.interp(u, x, c)


@dataclass(frozen=True)
class NoiseFloor:
    """Result of :func:`noise_floor_table`, and the noise part of an analysis result.

    Frozen: :func:`noise_floor_table` computes the floor, and :func:`dptune.analyze` adds the
    comparison with DP by ``dataclasses.replace`` (it needs the DP table, which this module
    does not compute).

    - ``pvalues``: ``algorithm, config_id, metric, cutoff, fold, seed_a, seed_b, p, n_users``:
      every A/A p-value (seed indices ``seed_a < seed_b``; noise_pvalues.parquet).
    - ``curves``: ``algorithm, cutoff, metric, position, mean, sd``: the A/A curve resampled to the
      DP's ``P`` positions and averaged over folds (Figure 1's dashed line; noise_curves.csv).
    - ``floor``: ``algorithm, metric, cutoff, n_configs, n_seeds, n_folds, n_aa_pairs,
      n_positions, mean_p, dp_floor, dp_floor_sd, test``: the floor per metric@N before it is
      joined to DP.
    - ``configs``: ``algorithm -> config ids`` used; ``seeds``: ``algorithm -> seeds used``.
    - ``versus_dp``: DP beside its floor with the flag (:func:`compare_with_floor`;
      noise_floor.csv), or None before it is compared.
    """

    pvalues: pd.DataFrame
    curves: pd.DataFrame
    floor: pd.DataFrame
    configs: dict[str, list[int]] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)
    versus_dp: pd.DataFrame | None = None

    @property
    def empty(self) -> bool:
        """Whether no A/A p-value was computed."""
        return self.floor.empty


def _positions(n_pairs: int | Mapping[tuple[str, str, int], int], key: tuple[str, str, int]) -> int:
    if isinstance(n_pairs, Mapping):
        return int(n_pairs.get(key, 0))
    return int(n_pairs)


def noise_floor_table(
    results: str | Path | ResultStore,
    n_pairs: int | Mapping[tuple[str, str, int], int] = 25,
    test: str = "t",
    *,
    max_seeds: int | None = None,
    max_configs: int | None = None,
    primary: tuple[str, int] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> NoiseFloor:
    """A/A p-values, fold-averaged A/A curves and ``DP_floor`` from the noise-floor parts of
    ``results`` (a results directory, or its :class:`ResultStore` to reuse its part index).

    ``n_pairs`` is ``P``, or a mapping ``(algorithm, metric, cutoff) -> P`` (the ``n_pairs`` of
    the DP row the floor is compared with; keys missing from it are left out). ``max_seeds``
    keeps seed indices ``< max_seeds``; ``max_configs`` keeps, per algorithm, the best
    ``max_configs`` configurations present by ``primary`` (default: the manifest's primary
    metric). The resampling tests are seeded by :func:`dptune.analysis.dp.pairs.scope_seed`
    ``(seed, "noise|<algorithm>|<config>|<fold>")``. See the module docstring for the formulas.
    """
    stats.check_test(test, "noise floor")
    store = results if isinstance(results, ResultStore) else ResultStore(results)
    root = store.root
    parts = noise_part_paths(root)
    empty = NoiseFloor(pd.DataFrame(columns=PVALUE_COLUMNS), pd.DataFrame(columns=CURVE_COLUMNS),
                       pd.DataFrame(columns=FLOOR_COLUMNS))
    if not parts:
        return empty
    man = store.manifest()
    order = {a["name"]: i for i, a in enumerate(man["algorithms"])}
    metas = [(p, part_meta(p)) for p in parts]
    metas = [(p, m) for p, m in metas if m["algorithm"] in order]
    chosen: dict[str, list[int]] = {}
    for alg in sorted({m["algorithm"] for _, m in metas}, key=order.__getitem__):
        present = sorted({int(m["config_id"]) for _, m in metas if m["algorithm"] == alg})
        if max_configs is not None:
            a = man.get("analysis", {})
            pm, pc = primary or (a.get("primary_metric", "ndcg"), int(a.get("primary_cutoff", 10)))
            ranked = [c for c in rank_configs(store, alg, pm, pc) if c in present]
            present = sorted(ranked[: int(max_configs)])
        chosen[alg] = present

    pv_parts: list[pd.DataFrame] = []
    seeds_used: dict[str, int] = {}
    # (alg, metric, cutoff) -> fold -> list of A/A p-value arrays
    pooled: dict[tuple[str, str, int], dict[str, list[np.ndarray]]] = {}
    for path, meta in sorted(metas, key=lambda pm: (order[pm[1]["algorithm"]],
                                                     int(pm[1]["config_id"]),
                                                     fold_key(pm[1]["fold"]))):
        alg, cid, fold = meta["algorithm"], int(meta["config_id"]), str(meta["fold"])
        if cid not in chosen.get(alg, []):
            continue
        keep = [int(s) for s in meta["seed_indices"]
                if max_seeds is None or int(s) < int(max_seeds)]
        if len(keep) < 2:
            continue
        seeds_used[alg] = max(seeds_used.get(alg, 0), len(keep))
        pf = pq.ParquetFile(path)
        t_seed = dpmod.scope_seed(seed, f"noise|{alg}|{cid}|{fold}")
        for i, metric in enumerate(meta["metrics"]):
            for j, cutoff in enumerate(meta["cutoffs"]):
                rg = i * len(meta["cutoffs"]) + j
                t = pf.read_row_group(rg, columns=["user", "value", "seed_index"]).to_pandas()
                t = t[t["seed_index"].isin(keep)]
                wide = t.pivot(index="seed_index", columns="user", values="value").sort_index()
                wide = wide.dropna(axis=1)
                v = wide.to_numpy(dtype=np.float64)
                p = aa_pvalues(v, test=test, n_resamples=n_resamples, seed=t_seed)
                sa, sb = np.triu_indices(v.shape[0], k=1)
                seeds_idx = wide.index.to_numpy()
                pv_parts.append(pd.DataFrame({
                    "algorithm": alg, "config_id": cid, "metric": metric, "cutoff": int(cutoff),
                    "fold": fold, "seed_a": seeds_idx[sa].astype(int),
                    "seed_b": seeds_idx[sb].astype(int), "p": p, "n_users": v.shape[1],
                }))
                key = (alg, str(metric), int(cutoff))
                pooled.setdefault(key, {}).setdefault(fold, []).append(p)

    curve_parts: list[pd.DataFrame] = []
    floor_rows: list[dict[str, Any]] = []
    keys = sorted(pooled, key=lambda k: (order[k[0]], metric_key(k[1], k[2])))
    for key in keys:
        alg, metric, cutoff = key
        n_pos = _positions(n_pairs, key)
        if n_pos < 1:
            continue
        folds = sorted(pooled[key], key=fold_key)
        fold_p = [np.concatenate(pooled[key][f]) for f in folds]
        curves = np.stack([resample_curve(dpmod.pvalue_curve(p), n_pos) for p in fold_p])
        mean = curves.mean(axis=0)
        sd = curves.std(axis=0, ddof=1) if len(folds) > 1 else np.zeros(n_pos)
        pbar = np.array([p.mean() for p in fold_p])
        curve_parts.append(pd.DataFrame({
            "algorithm": alg, "cutoff": cutoff, "metric": metric,
            "position": np.arange(n_pos), "mean": mean, "sd": sd,
        }))
        floor_rows.append({
            "algorithm": alg, "metric": metric, "cutoff": cutoff,
            "n_configs": len(chosen[alg]), "n_seeds": seeds_used[alg], "n_folds": len(folds),
            "n_aa_pairs": int(sum(len(p) for p in fold_p)), "n_positions": n_pos,
            "mean_p": float(pbar.mean()),
            "dp_floor": float(n_pos * pbar.mean()),
            "dp_floor_sd": float(n_pos * pbar.std(ddof=1)) if len(folds) > 1 else 0.0,
            "test": test,
        })
    pvalues = (pd.concat(pv_parts, ignore_index=True)[PVALUE_COLUMNS] if pv_parts
               else empty.pvalues)
    curves_df = (pd.concat(curve_parts, ignore_index=True)[CURVE_COLUMNS] if curve_parts
                 else empty.curves)
    floor = pd.DataFrame(floor_rows, columns=FLOOR_COLUMNS)
    return NoiseFloor(pvalues, curves_df, floor, chosen, seeds_used)


def compare_with_floor(dp: pd.DataFrame, floor: pd.DataFrame) -> pd.DataFrame:
    """DP (scope ``all``) beside its noise floor, with the flag (DP not clearly below the floor).

    A metric is *clearly below* its floor when ``DP < DP_floor``, or, when the DP has a bootstrap
    interval (``dp_ci_high`` column), when the whole interval is below: ``dp_ci_high <
    DP_floor``. ``flagged`` is the negation (DP not clearly below the floor: the metric does not
    separate configurations better than re-training with another seed). ``ratio = DP /
    DP_floor``. Columns ``algorithm, metric, cutoff, dp, [dp_ci_low, dp_ci_high,] dp_floor,
    dp_floor_sd, mean_p, ratio, flagged, rule``.
    """
    all_dp = dp[dp["scope"] == "all"]
    has_ci = "dp_ci_high" in all_dp.columns
    cols = ["algorithm", "metric", "cutoff", "dp"] + (["dp_ci_low", "dp_ci_high"] if has_ci else [])
    merged = floor.merge(all_dp[cols], on=["algorithm", "metric", "cutoff"], how="inner")
    if has_ci:
        below = merged["dp_ci_high"] < merged["dp_floor"]
        rule = "95% CI of DP entirely below DP_floor"
    else:
        below = merged["dp"] < merged["dp_floor"]
        rule = "DP < DP_floor"
    merged["ratio"] = merged["dp"] / merged["dp_floor"]
    merged["flagged"] = ~below
    merged["rule"] = rule
    out_cols = cols + ["dp_floor", "dp_floor_sd", "mean_p", "ratio", "flagged", "rule"]
    return merged[out_cols].reset_index(drop=True)
