"""The one DP route of :func:`dptune.analyze`: the tables' DP and, fed from the same fold reads
and the same ``all`` pairs, the pass with the bootstrap behind the interval, the ranking of
metrics and the verdict.

The tables' DP (:func:`dptune.analysis.dp.engine.analyze`) reads each validation fold once; the
:class:`dptune.analysis.dp.estimator.RobustPass` of each algorithm is fed from that same fold
read and tests the pairs of that algorithm's ``all`` scope, so the store is read once and every
number comes from one set of pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.dp import degenerate as dg
from dptune.analysis.dp import scale as rb
from dptune.analysis.dp.bootstrap import GROUPS
from dptune.analysis.dp.estimator import (
    ROBUST_TABLE_COLUMNS,
    RobustPass,
    RobustResult,
    merge_results,
    plan_pass,
    store_user_keys,
)
from dptune.vocab import fold_key, metric_key

__all__ = ["STABILITY_BUDGET_S", "plan_robust", "finish_robust", "estimate_from_tables",
           "annotate_dp", "add_intervals",
           "analyze_with_robust", "verdict_of"]

#: Seconds of extra stability repeats allowed per algorithm (``dp.stability.affordable_repeats``).
STABILITY_BUDGET_S = 5.0


def _users_hint(manifest: Any) -> int:
    try:
        return int(manifest["dataset"]["users"])
    except (KeyError, TypeError, ValueError):
        return 0


def plan_robust(store: Any, options: Any, manifest: Any) -> dict[str, RobustPass]:
    """One :class:`RobustPass` per algorithm with at least one pair of configurations, on the
    pairs of its ``all`` scope (``options.pairs``). Stability repeats: one when every pair is
    used, else ``options.stability`` lowered to what :data:`STABILITY_BUDGET_S` affords (users
    estimated from the manifest)."""
    out = {}
    user_keys = store_user_keys(store)
    for alg in store.algorithms():
        ids = store.configs(alg)["config_id"].to_numpy()
        if rb.n_possible_pairs(len(np.unique(ids))) == 0:
            continue
        folds = [str(f) for f in store.folds(alg) if str(f) != "test"]
        mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)},
                     key=lambda mc: metric_key(*mc))
        out[alg] = plan_pass(alg, ids, len(folds), mcs, n_users=_users_hint(manifest),
                             pairs=int(options.pairs), bootstrap=int(options.bootstrap),
                             stability=max(1, int(options.stability)), seed=int(options.seed),
                             groups=GROUPS, budget_s=STABILITY_BUDGET_S, user_keys=user_keys)
    return out


def annotate_dp(dp: pd.DataFrame, pvalues: pd.DataFrame) -> pd.DataFrame:
    """``dp`` with three columns appended (the others unchanged): ``dp_per_pair = dp / n_pairs``
    (the mean p-value, on which rows with different P compare), ``dp_per_25`` (DP per 25 pairs,
    :func:`dptune.analysis.dp.scale.per_reference`: the paper's DP when P = 25) and
    ``no_evidence`` (every p-value of the row is 1)."""
    if dp.empty:
        return dp.assign(dp_per_pair=pd.Series(dtype=float), dp_per_25=pd.Series(dtype=float),
                         no_evidence=pd.Series(dtype=bool))
    keys = ["algorithm", "scope", "metric", "cutoff"]
    flags = dg.no_evidence(pvalues)
    out = dp.merge(flags, on=keys, how="left", sort=False)
    out["no_evidence"] = out["no_evidence"].fillna(False).astype(bool)
    out.insert(len(dp.columns), "dp_per_pair", out["dp"] / out["n_pairs"])
    out.insert(len(dp.columns) + 1, "dp_per_25", rb.per_reference(out["dp"].to_numpy(),
                                                                 out["n_pairs"].to_numpy()))
    return out


def add_intervals(dp: pd.DataFrame, robust: pd.DataFrame | None) -> pd.DataFrame:
    """``dp`` with ``ci_low, ci_high, n_possible_pairs`` appended: on the rows of scope ``all``
    the robust table's 95% interval of DP per 25 pairs (the same pairs; NaN without a
    bootstrap) and the number of pairs the grid has (P of M); NaN on the other scopes."""
    keys = ["algorithm", "metric", "cutoff"]
    if robust is None or robust.empty:
        return dp.assign(ci_low=np.nan, ci_high=np.nan, n_possible_pairs=np.nan)
    ci = robust[[*keys, "ci_low", "ci_high", "n_possible_pairs"]].assign(scope="all")
    ci["cutoff"] = ci["cutoff"].astype(dp["cutoff"].dtype) if len(dp) else ci["cutoff"]
    out = dp.merge(ci, on=["algorithm", "scope", "metric", "cutoff"], how="left", sort=False)
    out.index = dp.index
    return out


def finish_robust(passes: dict[str, RobustPass], pvalues: pd.DataFrame,
                  options: Any) -> RobustResult | None:
    """Check the fold sizes (``min_fold_users``), then the merged :class:`RobustResult`, or
    None when off. Its claims (:func:`dptune.analysis.dp.stability.claims`) are drawn by the
    verdict (:func:`dptune.analysis.verdict.build.verdict_for_store`)."""
    counts = dg.fold_user_counts(pvalues)
    counts = dict(sorted(counts.items(), key=lambda kv: fold_key(kv[0][1])))
    dg.check_fold_users(counts, int(options.min_fold_users))
    if not passes:
        return None
    if options.test != "t":
        return merge_results([estimate_from_tables(p, pvalues) for p in passes.values()])
    return merge_results([p.result() for p in passes.values()])


def estimate_from_tables(plan: RobustPass, pvalues: pd.DataFrame) -> RobustResult:
    """The estimate of one algorithm from the tables' own p-values of scope ``all`` (the same
    pairs: the pass' repeat 0), for a test other than the t-test; no interval and no ranking.

    The bootstrap's replicates are t-tests computed from per-pair sums
    (:mod:`dptune.analysis.dp.bootstrap`); a Wilcoxon, bootstrap or permutation p-value has no
    such sums, so under those tests the verdict, Table 4 and the tables all read the one set of
    p-values the chosen test gave, and nothing is called significantly more discriminative.
    ``mean_p = (1/F) sum_f (1/P) sum_i p_{f,i}`` (= DP / P of the tables), ``mean_p_sd`` the
    sd of the fold means (ddof = 1), ``no_evidence`` when every p-value is 1.
    """
    pv = pvalues[(pvalues["algorithm"] == plan.algorithm) & (pvalues["scope"] == "all")]
    by = {key: g for key, g in pv.groupby(["metric", "cutoff"], sort=False)}
    rows = []
    for metric, cutoff in plan.mcs:
        g = by.get((metric, cutoff))
        if g is None:
            continue
        by_fold = g.groupby(g["fold"].astype(str))["p"].mean()
        folds = sorted(by_fold.index, key=fold_key)
        fold_means = by_fold.loc[folds].to_numpy()
        mean = float(fold_means.mean())
        rows.append({
            "algorithm": plan.algorithm, "metric": metric, "cutoff": cutoff, "mean_p": mean,
            "mean_p_sd": float(fold_means.std(ddof=1)) if len(folds) > 1 else 0.0,
            "dp_at_25": rb.REFERENCE_P * mean, "ci_low": np.nan, "ci_high": np.nan,
            "n_pairs": len(plan.pairs[0]), "n_possible_pairs": plan.n_possible,
            "n_folds": len(folds), "no_evidence": bool((g["p"] == 1.0).all()), "repeats": 1,
        })
    return RobustResult(pd.DataFrame(rows, columns=ROBUST_TABLE_COLUMNS), None, {})


def analyze_with_robust(store: Any, options: Any, manifest: Any,
                        progress: bool = False) -> tuple[Any, RobustResult | None]:
    """The tables' DP (:func:`dptune.analysis.dp.engine.analyze`) with the robust passes fed from its
    fold reads, on the same ``all`` pairs; ``(analysis, robust)`` with ``analysis.dp``
    annotated (:func:`annotate_dp`) and carrying the intervals (:func:`add_intervals`). Folds
    with too few users are refused after the pass (:func:`finish_robust`).
    """
    from dptune.analysis.dp import engine as dpmod

    t_test = options.test == "t"  # the bootstrap is of t-tests: other tests get no pass
    passes = plan_robust(store, options if t_test else options.replace(bootstrap=0, stability=1),
                         manifest)
    analysis = dpmod.analyze(
        store, pairs=options.pairs, seed=options.seed, test=options.test,
        alpha=options.alpha, correction=options.correction, n_resamples=options.n_resamples,
        value_pairs=options.value_pairs, progress=progress,
        fold_hooks=passes if t_test else None)
    robust = finish_robust(passes, analysis.pvalues, options)
    analysis.dp = add_intervals(annotate_dp(analysis.dp, analysis.pvalues),
                                None if robust is None else robust.table)
    return analysis, robust


def verdict_of(store: Any, robust: RobustResult | None, *, dp: pd.DataFrame,
               best: pd.DataFrame | None, primary: tuple[str, int],
               noise_table: pd.DataFrame | None, importance: pd.DataFrame | None,
               options: Any) -> pd.DataFrame | None:
    """The verdict (:func:`dptune.analysis.verdict.build.verdict_for_store`) on the robust
    result, or None without one; it cites the noise floor and importance, so it comes last."""
    from dptune.analysis.verdict.build import verdict_for_store

    if robust is None:
        return None
    return verdict_for_store(
        store, dp, robust, alpha=float(options.alpha), best=best, primary=primary,
        noise_table=noise_table, importance=importance, families=options.families,
        min_pairs=options.min_pairs)
