"""Statistics of the split-seed study: pure functions on tables.

Per data set, algorithm, split, metric and cutoff, with ``v_i`` the value of seed ``i`` and
``mean = (1/S) sum_i v_i`` (over the seeds of that split)::

    pct_i = 100 * v_i / mean          (so (1/S) sum_i pct_i = 100 exactly)
    dev_i = pct_i - 100,  extremes min_i pct_i and max_i pct_i,  range = max - min

Hold-out vs CV: a two-sided **Mann-Whitney U test** (the Wilcoxon *rank-sum* test,
``scipy.stats.mannwhitneyu``) of ``|dev_i|`` under hold-out against ``|dev_i|`` under CV; the
samples are unpaired (hold-out seed ``s`` and CV seed ``s`` share only the integer). The per-cell
p-values of one study are one family: they are Holm-adjusted over its cells
(:func:`dptune.analysis.dp.paired_tests.holm`, family-wise error rate at the level of the
claims). The pooled comparison per algorithm tests one value per seed and split (the mean
``|dev_i|`` over the pooled cells of that seed), as the seeds are the independent units. The
metric rankings of two seeds are compared with Kendall's tau-b (``scipy.stats.kendalltau``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from dptune.analysis.dp.paired_tests import holm
from dptune.metrics import METRICS
from dptune.studies.seeds.settings import SPLITS
from dptune.vocab import tie_value

__all__ = ["PER_SEED_COLUMNS", "pct_of_mean", "per_seed_table", "order_rows", "summarize",
           "holm_over_cells", "seed_mean_abs_dev", "pooled_tests", "dp_ranks", "kendall_table",
           "grid_stability"]

PER_SEED_COLUMNS = ["dataset", "algorithm", "split", "seed", "metric", "cutoff", "value",
                    "pct_of_mean", "seed_index", "config_id"]


def pct_of_mean(values: np.ndarray) -> np.ndarray:
    """``100 * v_i / mean(v)``: each seed's value as a percentage of the mean over seeds.

    ``mean(pct) = 100`` (so ``sum(pct) = 100 S``); NaN everywhere when the mean is 0.
    """
    v = np.asarray(values, dtype=np.float64)
    m = v.mean() if v.size else np.nan
    if not np.isfinite(m) or m == 0:
        return np.full(v.shape, np.nan)
    return 100.0 * v / m


def per_seed_table(cache: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Seed values (CV: mean over folds) with their ``pct_of_mean`` per (algorithm, split, metric,
    cutoff); columns :data:`PER_SEED_COLUMNS`."""
    keys = ["algorithm", "config_id", "split", "seed_index", "seed", "metric", "cutoff"]
    v = cache.groupby(keys, sort=False)["value"].mean().reset_index()
    v["pct_of_mean"] = v.groupby(["algorithm", "split", "metric", "cutoff"], sort=False)[
        "value"].transform(lambda s: pd.Series(pct_of_mean(s.to_numpy()), index=s.index))
    v.insert(0, "dataset", dataset)
    return order_rows(v[PER_SEED_COLUMNS], ["dataset", "algorithm", "split", "metric", "cutoff",
                                        "seed_index"])


def order_rows(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Sort with algorithms in experiment order (as stored), splits and metrics in fixed order."""
    tmp = df.copy()
    sort_cols = []
    for col in by:
        if col == "split":
            tmp["_split"] = tmp["split"].map({s: i for i, s in enumerate(SPLITS)})
            sort_cols.append("_split")
        elif col == "metric":
            tmp["_metric"] = tmp["metric"].map(lambda m: METRICS.index(m) if m in METRICS else 99)
            sort_cols.append("_metric")
        elif col == "algorithm":
            order = list(dict.fromkeys(df["algorithm"]))
            tmp["_alg"] = tmp["algorithm"].map({a: i for i, a in enumerate(order)})
            sort_cols.append("_alg")
        else:
            sort_cols.append(col)
    tmp = tmp.sort_values(sort_cols, kind="stable")
    return tmp.drop(columns=[c for c in tmp.columns if c.startswith("_")]).reset_index(drop=True)


def _abs_dev(pct: np.ndarray) -> np.ndarray:
    """``|pct - 100|``: a seed's absolute deviation from the mean, in percentage points."""
    return np.abs(np.asarray(pct, dtype=np.float64) - 100.0)


def _mwu(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U (Wilcoxon rank-sum) of ``a`` vs ``b``; (U of a, p)."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return float("nan"), float("nan")
    res = sps.mannwhitneyu(a, b, alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def summarize(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, algorithm, metric, cutoff): mean value, extremes and range of % of mean for
    each split, the largest ``|dev|``, and the Mann-Whitney U test of ``|dev|`` hold-out vs CV.

    Columns: ``dataset, algorithm, metric, cutoff, n_seeds, <split>_mean, <split>_min_pct,
    <split>_max_pct, <split>_range, <split>_max_abs_dev, <split>_median_abs_dev`` for split in
    hold-out and cv, then ``mwu_u, mwu_p`` (the cell's own, unadjusted p) and ``p_holm,
    holm_family`` (:func:`holm_over_cells`: every row of the result is one family).
    """
    rows = []
    keys = ["dataset", "algorithm", "metric", "cutoff"]
    for key, g in per_seed.groupby(keys, sort=False):
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        devs = {}
        row["n_seeds"] = int(g["seed_index"].nunique())
        for s in SPLITS:
            gs = g[g["split"] == s]
            pct = gs["pct_of_mean"].to_numpy(dtype=float)
            devs[s] = _abs_dev(pct)
            ok = pct[np.isfinite(pct)]
            row[f"{s}_mean"] = float(gs["value"].mean()) if len(gs) else np.nan
            row[f"{s}_min_pct"] = float(ok.min()) if ok.size else np.nan
            row[f"{s}_max_pct"] = float(ok.max()) if ok.size else np.nan
            row[f"{s}_range"] = row[f"{s}_max_pct"] - row[f"{s}_min_pct"]
            row[f"{s}_max_abs_dev"] = float(np.nanmax(devs[s])) if ok.size else np.nan
            row[f"{s}_median_abs_dev"] = float(np.nanmedian(devs[s])) if ok.size else np.nan
        row["mwu_u"], row["mwu_p"] = _mwu(devs["holdout"], devs["cv"])
        rows.append(row)
    return holm_over_cells(pd.DataFrame(rows))


def holm_over_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with ``p_holm``: its ``mwu_p`` Holm-adjusted over all its rows (the study's
    family of (algorithm, metric@N) cells; :func:`dptune.analysis.dp.paired_tests.holm`), so
    that ``p_holm < alpha`` claims a difference with a family-wise error rate of at most
    ``alpha``; and ``holm_family``, the number m of tests adjusted over (the cells with a
    p-value). A cell without a p-value (NaN) stays NaN and is not counted."""
    out = summary.copy()
    p = out["mwu_p"].to_numpy(dtype=float) if len(out) else np.empty(0)
    ok = np.isfinite(p)
    adj = np.full(p.shape, np.nan)
    adj[ok] = holm(p[ok])
    out["p_holm"] = adj
    out["holm_family"] = int(ok.sum())
    return out


def seed_mean_abs_dev(per_seed: pd.DataFrame) -> pd.DataFrame:
    """One value per (dataset, algorithm, split, seed): the mean ``|dev_i|`` over the rows of
    that seed in ``per_seed`` (every metric@N given; NaN deviations skipped). Columns
    ``dataset, algorithm, split, seed_index, mean_abs_dev``; a seed whose deviations are all
    NaN has NaN."""
    d = per_seed.assign(abs_dev=_abs_dev(per_seed["pct_of_mean"].to_numpy(float)))
    g = d.groupby(["dataset", "algorithm", "split", "seed_index"], sort=False)["abs_dev"]
    return g.mean().rename("mean_abs_dev").reset_index()


def pooled_tests(per_seed: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per algorithm, as in Wegmeth et al., over every (metric in ``metrics``, cutoff, seed):
    the largest and the median ``|dev|`` of the pooled values per split (descriptions: the
    pooled values share seeds, so they are not independent observations), and a test that
    is valid: the seeds are the independent units, so each seed of a split is reduced to one
    value first, its mean ``|dev|`` over the pooled cells (:func:`seed_mean_abs_dev`), and
    the two-sided Mann-Whitney U compares the hold-out seeds' values with the CV seeds'
    (``n_seeds_holdout`` vs ``n_seeds_cv`` observations, not the pooled counts).

    Columns ``dataset, algorithm, metrics, n_holdout, n_cv`` (pooled values),
    ``holdout_max_abs_dev, cv_max_abs_dev, holdout_median_abs_dev, cv_median_abs_dev`` (over
    the pooled values), ``n_seeds_holdout, n_seeds_cv, holdout_median_seed_mean_abs_dev,
    cv_median_seed_mean_abs_dev`` (over the per-seed means), ``mwu_u, mwu_p`` (on the
    per-seed means).
    """
    rows = []
    sel = per_seed[per_seed["metric"].isin(list(metrics))]
    per = seed_mean_abs_dev(sel)
    for (ds, alg), g in sel.groupby(["dataset", "algorithm"], sort=False):
        d = {s: _abs_dev(g.loc[g["split"] == s, "pct_of_mean"].to_numpy(float)) for s in SPLITS}
        pa = per[(per["dataset"] == ds) & (per["algorithm"] == alg)]
        m = {s: pa.loc[pa["split"] == s, "mean_abs_dev"].to_numpy(float) for s in SPLITS}
        u, p = _mwu(m["holdout"], m["cv"])
        rows.append({"dataset": ds, "algorithm": alg, "metrics": "+".join(metrics),
                     "n_holdout": int(np.isfinite(d["holdout"]).sum()),
                     "n_cv": int(np.isfinite(d["cv"]).sum()),
                     "holdout_max_abs_dev": _nan_stat(np.nanmax, d["holdout"]),
                     "cv_max_abs_dev": _nan_stat(np.nanmax, d["cv"]),
                     "holdout_median_abs_dev": _nan_stat(np.nanmedian, d["holdout"]),
                     "cv_median_abs_dev": _nan_stat(np.nanmedian, d["cv"]),
                     "n_seeds_holdout": int(np.isfinite(m["holdout"]).sum()),
                     "n_seeds_cv": int(np.isfinite(m["cv"]).sum()),
                     "holdout_median_seed_mean_abs_dev": _nan_stat(np.nanmedian, m["holdout"]),
                     "cv_median_seed_mean_abs_dev": _nan_stat(np.nanmedian, m["cv"]),
                     "mwu_u": u, "mwu_p": p})
    return pd.DataFrame(rows)


def _nan_stat(f: Any, x: np.ndarray) -> float:
    """``f(x)`` over the finite values of ``x`` (``np.nanmax``, ``np.nanmedian``); NaN when
    there are none."""
    return float(f(x)) if np.isfinite(x).any() else float("nan")


def _tied(grid: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """``dp_per_25`` of ``grid`` under the tie rule of every dptune table
    (:func:`dptune.vocab.tie_value`, scale 25), the values of each group of ``by`` together:
    DPs equal in exact arithmetic (one ulp apart) are one value."""
    return grid.groupby(list(by), sort=False)["dp_per_25"].transform(
        lambda s: tie_value(s, scale=25))


def dp_ranks(grid: pd.DataFrame) -> pd.Series:
    """``dp_rank`` of every row of the grid part: the rank of the metric's DP among the metrics
    of its (dataset, algorithm, seed, cutoff), 1 = lowest DP = most discriminative, ties share
    the lower rank; DPs within :func:`dptune.vocab.tie_value` of each other tie (ranked raw,
    two DPs one ulp apart made one metric the most discriminative of a seed where it ties)."""
    keys = [k for k in ("dataset", "algorithm", "seed_index", "cutoff") if k in grid.columns]
    tied = grid.assign(_t=_tied(grid, keys))
    return tied.groupby(keys, sort=False)["_t"].rank(method="min").astype(int)


def kendall_table(grid: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between the DP rankings of every two seeds.

    ``grid`` has one row per (dataset, algorithm, seed_index, metric, cutoff) with
    ``dp_per_25``. For each
    cutoff, the vector of the metrics' DP values of seed a is compared with seed b's
    (``scipy.stats.kendalltau``; ties handled by tau-b); cutoff ``"all"`` compares the vectors
    over every metric@N. A seed's DPs are compared under the tie rule
    (:func:`dptune.vocab.tie_value`): two one ulp apart tie. Columns ``dataset, algorithm,
    cutoff, seed_a, seed_b, tau, p_value``.
    """
    rows = []
    for (ds, alg), g in grid.groupby(["dataset", "algorithm"], sort=False):
        piv = g.pivot_table(index=["cutoff", "metric"], columns="seed_index", values="dp_per_25")
        seeds_ = list(piv.columns)
        groups = [(str(c), piv.xs(c, level="cutoff")) for c in sorted(g["cutoff"].unique())]
        groups.append(("all", piv))
        for label, sub in groups:
            # each seed's DPs under the tie rule (one ulp apart: a tie, not an order)
            sub = sub.apply(lambda col: tie_value(col, scale=25))
            for a, b in combinations(seeds_, 2):
                x, y = sub[a].to_numpy(float), sub[b].to_numpy(float)
                with np.errstate(all="ignore"):
                    res = sps.kendalltau(x, y)
                rows.append((ds, alg, label, int(a), int(b), float(res.statistic), float(res.pvalue)))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "cutoff", "seed_a", "seed_b", "tau",
                                       "p_value"])


def grid_stability(grid: pd.DataFrame) -> pd.DataFrame:
    """How often the best configuration and the most discriminative metric change with the seed.

    Per (dataset, algorithm, metric, cutoff): the modal best configuration, the share of seeds
    that pick it, the number of distinct best configurations; the mean DP per 25 pairs and its sd
    over seeds (with P);
    the share of seeds in which the metric has the lowest DP at its cutoff (``top_share``).
    """
    rows = []
    for (ds, alg, m, c), g in grid.groupby(["dataset", "algorithm", "metric", "cutoff"], sort=False):
        counts = g["best_config_id"].value_counts()
        top = counts[counts == counts.max()].index.min()
        rows.append({"dataset": ds, "algorithm": alg, "metric": m, "cutoff": int(c),
                     "n_seeds": len(g), "modal_best_config": int(top),
                     "modal_best_params": g.loc[g["best_config_id"] == top, "best_params"].iloc[0],
                     "modal_share": float(counts.max() / len(g)),
                     "n_distinct_best": int(counts.size),
                     "dp_per_25_mean": float(g["dp_per_25"].mean()),
                     "dp_per_25_sd": float(g["dp_per_25"].std(ddof=1)) if len(g) > 1 else 0.0,
                     "n_pairs": int(g["n_pairs"].max()),
                     "top_share": float((g["dp_rank"] == 1).mean())})
    return pd.DataFrame(rows)
