"""Slice analysis (SPEC 7; Tagliabue et al., "EvalRS: a rounded evaluation of recommender
systems", CIKM 2022 data challenge): metrics, miss rate and discriminative power per user slice.

Slices are log-scaled bins, so no threshold is chosen by hand. For a quantity ``x >= 0`` and a
base ``b`` (default 2) the bin index is::

    e(x) = floor(log_b x)  for x >= 1   (bin [b^e, b^(e+1)))
    e(x) = -1              for x < 1    (bin [0, 1))

computed exactly (integer powers, no floating-point ``log`` at bin edges). Every user of a fold
falls in exactly one bin of each slice kind:

- ``history``: the user's training-history length in that validation fold, i.e. the number of
  distinct training items (row of the fold's binarised training matrix), recomputed with
  ``sweep.prepare(experiment).fold(f)`` from the experiment named in the results manifest;
- ``popularity``: the mean popularity of the user's *relevant held-out items* in that fold,
  ``pop(u) = (1 / |R_u|) sum_{i in R_u} users_f(i)`` with ``users_f(i)`` the number of training
  users of item ``i`` in fold ``f``. The store keeps per-user metric values, not the ranked
  lists, so metrics restricted to the relevant items of one popularity bin cannot be
  recomputed without retraining every model; slicing *users* by the popularity of what they
  hold out is the faithful alternative (a user in a low bin is one whose relevant items are
  niche). This choice is written in every report.

A user's slice may differ between folds (her history in fold f excludes fold f's items), so
membership is per (fold, user).

DP per slice uses the main analysis's pairs (``pairs.csv`` of the reports directory when given,
else ``dp.sample_pairs(config ids, P, dp.scope_seed(analysis seed, "all"))``, which is exactly
what :func:`dptune.analysis._dp.analyze` samples for scope ``all``): per fold, the store's
``read_matrix`` slice is restricted to the columns of the slice's users, each pair is tested
(:func:`dptune.analysis._stats.paired_pvalues`), the fold's p-values sorted decreasingly, and the folds'
curves averaged by :func:`dptune.analysis._dp.summarize_curves`; DP = the sum of the averaged curve.
A reference row ``all`` (every user) reproduces the main analysis's DP.

Metrics per slice are those of the configuration the primary metric selects on validation
(``ResultStore.best_configs``), pooled over (fold, user) observations. Miss rate at N (EvalRS):
the fraction of users with no hit in the top N, ``hits@N = 0`` (read as ``precision@N = 0``).

Caveat: a paired test on fewer users has less power, so DP rises (worse) in small slices for
every metric; compare metrics *within* a slice (the ``dp_rank`` column), and slices with care.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis import _dp as dpmod
from dptune.analysis import _stats as stats
from dptune.config import Experiment, load_experiment
from dptune.errors import DptuneError, input_error
from dptune.metrics import METRICS
from dptune.report import _report as report
from dptune.store._store import ResultStore
from dptune.vocab import CSV_FLOAT, METRIC_COLORS, fold_key

__all__ = [
    "SLICE_KINDS",
    "log_bin",
    "bin_bounds",
    "bin_label",
    "user_features",
    "assign_slices",
    "members_by_slice",
    "main_pairs",
    "slice_dp",
    "slice_metrics",
    "slices_figure",
    "slice_analysis",
    "main",
]

SLICE_KINDS: tuple[str, ...] = ("history", "popularity")
KIND_NAMES: dict[str, str] = {
    "history": "User history length (training items in the fold)",
    "popularity": "Mean training popularity of the user's relevant held-out items",
    "all": "All users",
}
_FLOAT = CSV_FLOAT


# --------------------------------------------------------------------------------------------
# Log-scaled bins


def _check_base(base: Any) -> int:
    if isinstance(base, bool) or not isinstance(base, (int, np.integer)) or base < 2:
        raise input_error("slices", "base", f"must be an integer >= 2, got {base!r}")
    return int(base)


def log_bin(values: np.ndarray, base: int = 2) -> np.ndarray:
    """Bin index ``e`` with ``base**e <= x < base**(e+1)`` for ``x >= 1``, ``-1`` for ``x < 1``.

    Exact at the edges: a float estimate ``floor(log(x) / log(base))`` is corrected by one step
    either way against integer powers, so ``x = 8`` is in ``[8, 16)`` for base 2 however the
    logarithm rounds. Negative or non-finite values are an input error.
    """
    b = _check_base(base)
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise input_error("slices", "values", "must be finite and non-negative")
    e = np.full(x.shape, -1, dtype=np.int64)
    pos = x >= 1
    if pos.any():
        est = np.floor(np.log(x[pos]) / np.log(b)).astype(np.int64)
        pw = np.power(float(b), est)
        est = np.where(pw > x[pos], est - 1, est)
        est = np.where(np.power(float(b), est + 1) <= x[pos], est + 1, est)
        e[pos] = est
    return e


def bin_bounds(e: int, base: int = 2) -> tuple[float, float]:
    """``[lo, hi)`` of bin ``e``: ``[base**e, base**(e+1))``, or ``[0, 1)`` for ``e = -1``."""
    if e < 0:
        return 0.0, 1.0
    return float(base**e), float(base ** (e + 1))


def bin_label(e: int, base: int = 2) -> str:
    """Text of bin ``e``: ``"[0, 1)"``, ``"[1, 2)"``, ``"[16, 32)"``, ..."""
    lo, hi = bin_bounds(e, base)
    return f"[{lo:g}, {hi:g})"


# --------------------------------------------------------------------------------------------
# Features and membership


def user_features(prep: Any, folds: Sequence[str]) -> pd.DataFrame:
    """Per (fold, evaluated user): training-history length and mean relevant-item popularity.

    ``prep`` is a :class:`dptune.sweep._sweep.Prepared` (anything with ``fold(f)`` returning a
    ``FoldData``). ``history = nnz(train[u])``; ``popularity = mean_{i in R_u} users_f(i)`` with
    ``users_f(i) = nnz(train[:, i])`` and ``R_u`` the user's relevant held-out items.
    """
    parts = []
    for f in folds:
        fd = prep.fold(str(f))
        X, R, users = fd.train, fd.relevant, np.asarray(fd.users)
        history = np.diff(X.indptr)[users].astype(np.int64)
        item_users = np.bincount(X.indices, minlength=X.shape[1]).astype(np.float64)
        Ru = R[users]
        n_rel = np.diff(Ru.indptr).astype(np.float64)
        pop_sum = np.asarray((Ru != 0).astype(np.float64) @ item_users).ravel()
        parts.append(pd.DataFrame({"fold": str(f), "user": users.astype(np.int32),
                                   "history": history,
                                   "popularity": pop_sum / np.maximum(n_rel, 1.0)}))
    return pd.concat(parts, ignore_index=True)


def assign_slices(features: pd.DataFrame, kind: str, base: int = 2) -> pd.DataFrame:
    """``fold, user, slice_kind, bin, slice, lo, hi``: one row per (fold, user), the bin of the
    feature ``kind`` (a column of ``features``)."""
    if kind not in features.columns:
        raise input_error("slices", "kind", f"unknown slice kind {kind!r}")
    e = log_bin(features[kind].to_numpy(), base)
    bounds = {int(b): bin_bounds(int(b), base) for b in np.unique(e)}
    return pd.DataFrame({
        "fold": features["fold"].to_numpy(), "user": features["user"].to_numpy(),
        "slice_kind": kind, "bin": e, "slice": [bin_label(int(b), base) for b in e],
        "lo": [bounds[int(b)][0] for b in e], "hi": [bounds[int(b)][1] for b in e],
    })


def members_by_slice(assigned: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """``{slice label: {fold: sorted user codes}}`` in bin order."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for (_, label), g in assigned.groupby(["bin", "slice"], sort=True):
        out[str(label)] = {str(f): np.sort(gf["user"].to_numpy()) for f, gf in g.groupby("fold")}
    return out


# --------------------------------------------------------------------------------------------
# DP and metrics per slice


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
    curve is ``sort_desc(p)``; :func:`dptune.analysis._dp.summarize_curves` over the folds gives
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


# --------------------------------------------------------------------------------------------
# Figure and report


def slices_figure(dp_table: pd.DataFrame, cutoff: int) -> Any:
    """DP per slice per metric at ``cutoff``: rows = slice kinds, one panel per algorithm; x = the
    log-scaled bins (with mean users per fold), y = DP (lower = more discriminative)."""
    from matplotlib.figure import Figure

    d = dp_table[(dp_table["cutoff"] == cutoff) & dp_table["slice_kind"].isin(SLICE_KINDS)]
    algs = list(dict.fromkeys(d["algorithm"]))
    kinds = [k for k in SLICE_KINDS if k in set(d["slice_kind"])]
    fig = Figure(figsize=(4.6 * max(1, len(algs)), 3.4 * max(1, len(kinds))), dpi=100,
                 layout="constrained")
    axes = fig.subplots(max(1, len(kinds)), max(1, len(algs)), squeeze=False)
    for r, kind in enumerate(kinds):
        for c, alg in enumerate(algs):
            ax = axes[r, c]
            g = d[(d["algorithm"] == alg) & (d["slice_kind"] == kind)].sort_values("bin")
            bins = list(dict.fromkeys(g["slice"]))
            x = np.arange(len(bins))
            for m in [m for m in METRICS if m in set(g["metric"])]:
                gm = g[g["metric"] == m].set_index("slice").reindex(bins)
                ax.plot(x, gm["dp"].to_numpy(float), marker="o", markersize=3, linewidth=1.4,
                        color=METRIC_COLORS.get(m, "0.3"), label=report.display_metric(m, cutoff))
            n_users = g.drop_duplicates("slice").set_index("slice").reindex(bins)["n_users_mean"]
            ax.set_xticks(x, [f"{b} n={_n(v)}" for b, v in zip(bins, n_users, strict=True)],
                          fontsize=6.5, rotation=40, ha="right", rotation_mode="anchor")
            n_pairs = int(g["n_pairs"].max()) if len(g) else 0
            ax.set_ylim(0, max(1, n_pairs) * 1.02)
            ax.set_ylabel(f"DP (sum of {n_pairs} p-values)", fontsize=8)
            ax.set_title(f"{report.display_algorithm(alg)}: {kind}", fontsize=9)
            ax.grid(True, alpha=0.3, linewidth=0.5)
            if r == 0 and c == 0:
                ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"DP per slice at N = {cutoff} (log-scaled bins; lower = more discriminative; "
                 f"n = mean users per fold)", fontsize=10)
    return fig


def _n(v: float) -> str:
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


def _f(x: Any, d: int = 3) -> str:
    v = float(x)
    return "–" if not np.isfinite(v) else f"{v:.{d}f}"


def _md_table(header: list[str], rows: list[list[str]], numeric_from: int = 1,
              numeric_to: int | None = None) -> str:
    stop = len(header) if numeric_to is None else numeric_to
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if numeric_from <= i < stop else ":---"
                               for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _dp_section(dpt: pd.DataFrame, alg: str, cutoff: int) -> str:
    d = dpt[(dpt["algorithm"] == alg) & (dpt["cutoff"] == cutoff)]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    header = ["Slice kind", "Slice", "users/fold"] + [report.display_metric(m, cutoff) for m in metrics] + ["most discriminative"]
    rows = []
    for kind in ["all", *SLICE_KINDS]:
        dk = d[d["slice_kind"] == kind].sort_values("bin")
        for s in dict.fromkeys(dk["slice"]):
            ds = dk[dk["slice"] == s].set_index("metric")
            vals = [float(ds.loc[m, "dp"]) for m in metrics]
            lo = min(vals)
            cells = [f"**{_f(v)}**" if v == lo else _f(v) for v in vals]
            best = [report.display_metric(m) for m, v in zip(metrics, vals, strict=True) if v == lo]
            if len(best) == len(metrics) > 1:
                cells, best = [_f(v) for v in vals], ["(all tie)"]
            rows.append([kind, s, _n(float(ds["n_users_mean"].iloc[0])), *cells, ", ".join(best)])
    return _md_table(header, rows, numeric_from=2, numeric_to=len(header) - 1)


def _metrics_section(mt: pd.DataFrame, alg: str, cutoff: int) -> str:
    d = mt[(mt["algorithm"] == alg) & (mt["cutoff"] == cutoff)]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    header = ["Slice kind", "Slice", "n (fold x user)"] + [report.display_metric(m, cutoff) for m in metrics] + [f"miss rate@{cutoff}"]
    rows = []
    for kind in ["all", *SLICE_KINDS]:
        dk = d[d["slice_kind"] == kind].sort_values("bin")
        for s in dict.fromkeys(dk["slice"]):
            ds = dk[dk["slice"] == s].set_index("metric")
            rows.append([kind, s, str(int(ds["n_obs"].iloc[0])),
                         *[_f(ds.loc[m, "mean"]) for m in metrics], _f(ds["miss_rate"].iloc[0])])
    return _md_table(header, rows, numeric_from=2)


def _mean_rank_table(dpt: pd.DataFrame, cutoff: int) -> str:
    """Markdown: per algorithm, each metric's ``dp_rank`` averaged over the informative slices."""
    d = dpt[(dpt["cutoff"] == cutoff) & dpt["slice_kind"].isin(SLICE_KINDS)]
    keys = ["algorithm", "slice_kind", "slice"]
    informative = d.groupby(keys)["dp"].transform("nunique") > 1
    d = d[informative]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    rows = []
    for alg in dict.fromkeys(d["algorithm"]):
        da = d[d["algorithm"] == alg]
        ranks = da.groupby("metric")["dp_rank"].mean()
        lo = ranks.min()
        cells = [f"**{ranks[m]:.2f}**" if ranks[m] == lo else f"{ranks[m]:.2f}" for m in metrics]
        rows.append([report.display_algorithm(alg), str(da[keys[1:]].drop_duplicates().shape[0]),
                     *cells])
    header = ["Algorithm", "slices"] + [report.display_metric(m, cutoff) for m in metrics]
    return _md_table(header, rows, numeric_from=1)


def _findings(dpt: pd.DataFrame, cutoff: int) -> list[str]:
    """One sentence per (algorithm, slice kind): which metric has the lowest DP in most slices."""
    out = []
    d = dpt[dpt["cutoff"] == cutoff]
    for alg in dict.fromkeys(d["algorithm"]):
        ref = d[(d["algorithm"] == alg) & (d["slice_kind"] == "all")]
        ref_best = ref.loc[ref["dp"] == ref["dp"].min(), "metric"].tolist()
        for kind in SLICE_KINDS:
            dk = d[(d["algorithm"] == alg) & (d["slice_kind"] == kind)]
            if dk.empty:
                continue
            wins: dict[str, int] = {}
            n_slices, n_tied = 0, 0
            for _, g in dk.groupby("slice"):
                if g["dp"].nunique() == 1:  # every metric ties (e.g. too few users to test)
                    n_tied += 1
                    continue
                n_slices += 1
                for m in g.loc[g["dp"] == g["dp"].min(), "metric"]:
                    wins[m] = wins.get(m, 0) + 1
            ranked = sorted(wins.items(), key=lambda kv: (-kv[1], METRICS.index(kv[0]) if kv[0] in METRICS else 99))
            text = ", ".join(f"{report.display_metric(m, cutoff)} in {k}/{n_slices}" for m, k in ranked)
            tied = f" ({n_tied} slice(s) where every metric ties left out)" if n_tied else ""
            out.append(f"- {report.display_algorithm(alg)}, {kind} slices: lowest DP (ties count for "
                       f"each) — {text or 'none'}{tied}; on all users: "
                       f"{', '.join(report.display_metric(m, cutoff) for m in ref_best)}.")
    return out


# --------------------------------------------------------------------------------------------
# Whole analysis


def _find_experiment(store: ResultStore, man: dict[str, Any], experiment: str | Path | None) -> Experiment:
    if experiment is not None:
        path = Path(experiment)
    else:
        name = man.get("experiment_file")
        if not name:
            raise input_error(store.root / "manifest.json", "experiment_file", "missing")
        cands = [Path(name)] + [parent / name for parent in [store.root, *store.root.resolve().parents]]
        path = next((c for c in cands if c.exists()), Path(name))
        if not path.exists():
            raise input_error(store.root / "manifest.json", "experiment_file",
                              f"{name!r} not found (run from the repository root or pass "
                              f"--experiment)")
    exp = load_experiment(path)
    if man.get("fingerprint") and exp.fingerprint() != man["fingerprint"]:
        raise input_error(path, None, f"does not match the results in {store.root} (fingerprint "
                          f"{exp.fingerprint()} vs {man['fingerprint']}): the training folds "
                          f"cannot be recomputed from it")
    return exp


def slice_analysis(results_dir: str | Path, out_dir: str | Path,
                   reports_dir: str | Path | None = None, *, base: int = 2,
                   n_pairs: int | None = None, seed: int | None = None,
                   test: str | None = None, experiment: str | Path | None = None,
                   algorithms: Sequence[str] | None = None, cutoff: int | None = None,
                   ) -> list[Path]:
    """Metrics, miss rate and DP per user slice of a results directory; returns the files written.

    ``reports_dir``: the main analysis's reports (its ``pairs.csv`` gives the pairs); ``n_pairs``,
    ``seed`` and ``test`` default to the manifest's ``[analysis]`` settings; ``experiment``
    overrides the manifest's ``experiment_file`` (needed to recompute the folds' training
    data); ``cutoff`` (default: the primary cutoff) is the one in the figure and the Markdown
    tables (the CSV files hold every cutoff).
    """
    store = ResultStore(results_dir)
    man = store.manifest()
    exp = _find_experiment(store, man, experiment)
    ana = man.get("analysis", {})
    n_pairs = int(n_pairs if n_pairs is not None else ana.get("n_pairs", 25))
    seed = int(seed if seed is not None else man.get("seeds", {}).get("analysis", exp.analysis_seed))
    test = stats.check_test(test or ana.get("test", "t"), "slices")
    alpha = float(ana.get("alpha", 0.05))
    primary = (ana.get("primary_metric", "ndcg"), int(ana.get("primary_cutoff", 10)))
    cutoff = int(cutoff if cutoff is not None else primary[1])
    base = _check_base(base)
    algs = list(algorithms) if algorithms is not None else store.algorithms()
    for a in algs:
        if a not in store.algorithms():
            raise input_error("--algorithms", None, f"no algorithm {a!r} in {store.root}")

    from dptune.sweep._sweep import prepare

    prep = prepare(exp)
    dataset = man.get("dataset", {}).get("name", exp.data.source)
    folds = sorted({f for a in algs for f in store.folds(a)}, key=fold_key)
    feats = user_features(prep, folds)
    assigned = {k: assign_slices(feats, k, base) for k in SLICE_KINDS}
    everyone = feats[["fold", "user"]].assign(slice_kind="all", bin=-2, slice="all",
                                              lo=np.nan, hi=np.nan)
    kinds = {"all": everyone, **assigned}
    members = {k: members_by_slice(v) for k, v in kinds.items()}
    info = {k: v.drop_duplicates("slice").set_index("slice")[["bin", "lo", "hi"]]
            for k, v in kinds.items()}

    best = store.best_configs()
    dp_parts, metric_parts = [], []
    for alg in algs:
        mcs = store.metric_cutoffs(alg)
        pairs = main_pairs(store, alg, n_pairs, seed, reports_dir)
        pick = best[(best["algorithm"] == alg) & (best["metric"] == primary[0])
                    & (best["cutoff"] == primary[1])]
        cid = int(pick["config_id"].iloc[0]) if len(pick) else int(store.configs(alg)["config_id"].iloc[0])
        for kind in kinds:
            d = slice_dp(store, alg, pairs, members[kind], mcs, test=test, alpha=alpha, seed=seed)
            m = slice_metrics(store, alg, cid, members[kind], mcs)
            for df in (d, m):
                df.insert(0, "slice_kind", kind)
                df.insert(0, "algorithm", alg)
                df.insert(0, "dataset", dataset)
                for col in ("bin", "lo", "hi"):
                    df[col] = df["slice"].map(info[kind][col])
            m.insert(2, "config_id", cid)
            dp_parts.append(d)
            metric_parts.append(m)
    dpt = pd.concat(dp_parts, ignore_index=True)
    dpt["dp_rank"] = dpt.groupby(["algorithm", "slice_kind", "slice", "cutoff"])["dp"].rank(
        method="min").astype(int)
    dpt = dpt[["dataset", "algorithm", "slice_kind", "slice", "bin", "lo", "hi", "n_users_mean",
               "n_users_min", "metric", "cutoff", "dp", "dp_plus_sd", "dp_minus_sd", "n_pairs",
               "n_folds", "sakai", "dp_rank"]]
    mt = pd.concat(metric_parts, ignore_index=True)[
        ["dataset", "algorithm", "config_id", "slice_kind", "slice", "bin", "lo", "hi", "n_obs",
         "metric", "cutoff", "mean", "miss_rate"]]
    counts = pd.concat(kinds.values(), ignore_index=True).groupby(
        ["slice_kind", "bin", "slice", "lo", "hi", "fold"], dropna=False, sort=True).size().rename(
        "n_users").reset_index()
    counts.insert(0, "dataset", dataset)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, df in (("slices_dp.csv", dpt), ("slices_metrics.csv", mt), ("slices_bins.csv", counts)):
        df.to_csv(out / name, index=False, float_format=_FLOAT, lineterminator="\n")
        files.append(out / name)
    files += report.save_figure(slices_figure(dpt, cutoff), out / "slices_figure",
                               creator="dptune")
    pairs_src = (f"`{Path(reports_dir) / 'pairs.csv'}`" if reports_dir is not None
                 and (Path(reports_dir) / "pairs.csv").exists()
                 else f"dp.sample_pairs(config ids, {n_pairs}, dp.scope_seed({seed}, \"all\"))")
    md = _report(exp, man, dataset, dpt, mt, counts, algs, folds, cutoff, primary, base,
                 pairs_src, test, results_dir)
    with open(out / "slices_report.md", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(md)
    files.append(out / "slices_report.md")
    return files


def _report(exp: Experiment, man: dict[str, Any], dataset: str, dpt: pd.DataFrame,
            mt: pd.DataFrame, counts: pd.DataFrame, algs: list[str], folds: list[str],
            cutoff: int, primary: tuple[str, int], base: int, pairs_src: str, test: str,
            results_dir: str | Path) -> str:
    ev = man.get("evaluation", {})
    L = [f"# Slice analysis: {dataset}", "",
         "Metrics, miss rate and discriminative power per user slice (SPEC 7; slicing as in "
         "EvalRS 2022: log-scaled bins, no hand-picked thresholds). Method: "
         "`docs/seeds-and-slices.md`.", "", "## Settings", "",
         "| Setting | Value |", "| :--- | :--- |",
         f"| Results | `{results_dir}` (experiment `{exp.source}`, {len(folds)} validation folds) |",
         f"| Bins | log{base}: [{base}^e, {base}^(e+1)), plus [0, 1); per (fold, user) |",
         f"| History slices | {KIND_NAMES['history']}, recomputed with sweep.prepare(experiment) |",
         f"| Popularity slices | {KIND_NAMES['popularity']} (item popularity = training users of "
         f"the item in the fold). The store has per-user values, not ranked lists, so metrics "
         f"restricted to the relevant items of a popularity bin would need every model "
         f"retrained; users are sliced by what they hold out instead |",
         f"| Pairs | {pairs_src} (scope all, the main analysis's pairs) |",
         f"| Test | {test} (paired, two-sided), p-value curves averaged over folds, DP = sum |",
         f"| Metrics per slice | configuration chosen by {report.display_metric(*primary)} on "
         f"validation; pooled over (fold, user) |",
         "| Miss rate | fraction of users with no relevant item in the top N (precision@N = 0) |",
         f"| Relevance | rating >= {ev.get('relevance_threshold', exp.evaluation.relevance_threshold)} |",
         "", "![DP per slice](slices_figure.png)", "", "## Findings", ""]
    L += _findings(dpt, cutoff)
    L += ["", f"Mean rank of each metric's DP within a slice at N = {cutoff} (1 = most "
          f"discriminative; history and popularity slices where not every metric ties):", "",
          _mean_rank_table(dpt, cutoff)]
    L += ["", "DP grows for every metric as a slice gets smaller (a paired test on fewer users "
          "has less power), so read the ranking of metrics *within* a slice; `dp_rank` in "
          "`slices_dp.csv` is that ranking (1 = most discriminative).", ""]
    for alg in algs:
        L += [f"## {report.display_algorithm(alg)}", "",
              f"DP per slice at N = {cutoff} (lower = more discriminative; bold = lowest of the "
              f"row; P = {int(dpt.loc[dpt['algorithm'] == alg, 'n_pairs'].max())} pairs):", "",
              _dp_section(dpt, alg, cutoff), "",
              f"Metrics and miss rate per slice at N = {cutoff} (config_id "
              f"{int(mt.loc[mt['algorithm'] == alg, 'config_id'].iloc[0])}):", "",
              _metrics_section(mt, alg, cutoff), ""]
    L += ["## Files", "", "`slices_dp.csv` (every metric@N, slice and algorithm; DP, DP +- sd, "
          "Sakai fraction, rank), `slices_metrics.csv` (mean and miss rate), `slices_bins.csv` "
          "(users per bin and fold), `slices_figure.png/.svg`.", ""]
    return "\n".join(L)


# --------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    """``python -m dptune.slices RESULTS_DIR --out DIR [--reports DIR] ...``."""
    ap = argparse.ArgumentParser(prog="dptune slices", description=(
        "Metrics, miss rate and DP per user slice (history length, popularity of held-out "
        "items; log-scaled bins) of a results directory."))
    ap.add_argument("results_dir")
    ap.add_argument("--out", required=True, help="directory for the slice report")
    ap.add_argument("--reports", default=None, help="main reports directory (its pairs.csv)")
    ap.add_argument("--experiment", default=None, help="experiment TOML (default: the manifest's)")
    ap.add_argument("--base", type=int, default=2, help="base of the log-scaled bins (default 2)")
    ap.add_argument("--pairs", type=int, default=None, help="pairs P (default: the manifest's)")
    ap.add_argument("--seed", type=int, default=None, help="pair-sampling seed")
    ap.add_argument("--test", default=None, help="t | wilcoxon | bootstrap | permutation")
    ap.add_argument("--cutoff", type=int, default=None, help="cutoff of the figure and tables")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m dptune.slices``; user errors print one line and return 2."""
    args = build_parser().parse_args(argv)
    try:
        files = slice_analysis(args.results_dir, args.out, args.reports, base=args.base,
                               n_pairs=args.pairs, seed=args.seed, test=args.test,
                               experiment=args.experiment, cutoff=args.cutoff)
    except DptuneError as err:
        print(f"dptune: {err}", file=sys.stderr)
        return err.exit_code
    print(f"slices: {len(files)} files in {args.out} (see {files[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
