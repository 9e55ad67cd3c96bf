"""Issue 13 inside :func:`dptune.analyze`: plan the robust passes before the fold loop, finish
them after it (robust table, ranking of every stability repeat, degenerate checks, verdict).

The paper's DP (:func:`dptune.analysis._dp.analyze`) reads each validation fold once; the
:class:`dptune.analysis._robust_pass.RobustPass` of each algorithm is fed from that same fold
read (its configurations are added to the read), so the store is not read twice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis import _degenerate as dg
from dptune.analysis import _robust as rb
from dptune.analysis._dp import scope_pairs
from dptune.analysis._resample import GROUPS
from dptune.analysis._robust_pass import RobustPass, RobustResult, merge_results, plan_pass
from dptune.errors import input_error
from dptune.vocab import fold_key, metric_key

__all__ = ["STABILITY_BUDGET_S", "plan_robust", "finish_robust", "check_bootstrap_cost",
           "annotate_dp", "analyze_with_robust", "add_verdict"]

#: Seconds of extra stability repeats allowed per algorithm (``_stability.affordable_repeats``).
STABILITY_BUDGET_S = 5.0

# Unit costs (seconds) of the paper-DP bootstrap per (pair row, user, replicate), measured on the
# 2-core development machine: the vectorised t-test (two matrix products), a scipy Wilcoxon call
# per row and replicate (per call, plus per user), and the resampling tests (per inner resample).
_T_PER_CELL = 2e-9
_WILCOXON_PER_CALL = 1e-4
_WILCOXON_PER_USER = 5e-8
_RESAMPLE_PER_CELL = 2e-9


def _users_hint(manifest: Any) -> int:
    try:
        return int(manifest["dataset"]["users"])
    except (KeyError, TypeError, ValueError):
        return 0


def plan_robust(store: Any, options: Any, manifest: Any) -> dict[str, RobustPass]:
    """One :class:`RobustPass` per algorithm with at least one pair of configurations, or none
    when the robust estimate is off (``max_pairs = 0``). Stability repeats are lowered to what
    :data:`STABILITY_BUDGET_S` affords (users estimated from the manifest)."""
    if int(options.max_pairs) <= 0:
        return {}
    out = {}
    for alg in store.algorithms():
        ids = store.configs(alg)["config_id"].to_numpy()
        if rb.n_possible_pairs(len(np.unique(ids))) == 0:
            continue
        folds = [str(f) for f in store.folds(alg) if str(f) != "test"]
        mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)},
                     key=lambda mc: metric_key(*mc))
        out[alg] = plan_pass(alg, ids, len(folds), mcs, n_users=_users_hint(manifest),
                             max_pairs=int(options.max_pairs), bootstrap=int(options.bootstrap),
                             stability=max(1, int(options.stability)), seed=int(options.seed),
                             groups=GROUPS, budget_s=STABILITY_BUDGET_S)
    return out


def check_bootstrap_cost(store: Any, options: Any, manifest: Any) -> None:
    """Refuse, up front, the paper-DP bootstrap with a test other than the t-test when its
    estimated time is more than three times the t-test's (one line with both estimates).

    The paper-DP bootstrap runs only with the robust estimate off (``max_pairs = 0``). Estimate:
    ``R`` = p-value rows (sum over algorithms of pairs x scopes x metric@N x folds), ``n`` users,
    ``B`` replicates: t-test ``R n B c_t``; Wilcoxon ``R B (c_call + n c_user)``; bootstrap /
    permutation tests ``R n B n_resamples c_r``.
    """
    b = int(options.bootstrap)
    if b <= 0 or int(options.max_pairs) > 0 or options.test == "t":
        return
    n = max(_users_hint(manifest), 2)
    rows = 0
    for alg in store.algorithms():
        scopes = scope_pairs(store.configs(alg), list(store.hyperparameters(alg)),
                             int(options.n_pairs), int(options.seed))
        folds = sum(str(f) != "test" for f in store.folds(alg))
        rows += sum(len(p) for p in scopes.values()) * len(store.metric_cutoffs(alg)) * folds
    t_s = rows * n * b * _T_PER_CELL
    if options.test == "wilcoxon":
        other = rows * b * (_WILCOXON_PER_CALL + n * _WILCOXON_PER_USER)
    else:
        other = rows * n * b * int(options.n_resamples) * _RESAMPLE_PER_CELL
    if other > 3.0 * t_s:
        raise input_error(
            "analysis", "test",
            f"the {options.test} test with a bootstrap of {b} replicates would take about "
            f"{_duration(other)} (the t-test: {_duration(t_s)}); use --test t, --bootstrap 0, "
            "or the robust estimate (--max-pairs > 0), whose bootstrap uses the t-test")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def annotate_dp(dp: pd.DataFrame, pvalues: pd.DataFrame) -> pd.DataFrame:
    """``dp`` with two columns appended (the others unchanged): ``dp_per_pair = dp / n_pairs``
    (the normalised scale on which rows with different P compare) and ``no_evidence`` (every
    p-value of the row is 1)."""
    if dp.empty:
        return dp.assign(dp_per_pair=pd.Series(dtype=float), no_evidence=pd.Series(dtype=bool))
    keys = ["algorithm", "scope", "metric", "cutoff"]
    flags = dg.no_evidence(pvalues)
    out = dp.merge(flags, on=keys, how="left", sort=False)
    out["no_evidence"] = out["no_evidence"].fillna(False).astype(bool)
    out.insert(len(dp.columns), "dp_per_pair", out["dp"] / out["n_pairs"])
    return out


def finish_robust(passes: dict[str, RobustPass], pvalues: pd.DataFrame,
                  options: Any) -> RobustResult | None:
    """Check the fold sizes (``min_fold_users``), then the merged :class:`RobustResult`, or
    None when off. Its claims (:func:`dptune.analysis._stability.claims`) are drawn by the
    verdict (:func:`dptune.analysis._verdict_build.verdict_for_store`)."""
    counts = dg.fold_user_counts(pvalues)
    counts = dict(sorted(counts.items(), key=lambda kv: fold_key(kv[0][1])))
    dg.check_fold_users(counts, int(options.min_fold_users))
    if not passes:
        return None
    return merge_results([p.result() for p in passes.values()])


def analyze_with_robust(store: Any, options: Any, manifest: Any,
                        progress: bool = False) -> tuple[Any, RobustResult | None]:
    """The paper's DP (:func:`dptune.analysis._dp.analyze`) with the robust passes fed from its
    fold reads; ``(analysis, robust)`` with ``analysis.dp`` annotated (:func:`annotate_dp`).

    The paper-DP bootstrap runs only with the robust estimate off (``max_pairs = 0``); slow test
    + bootstrap combinations are refused first (:func:`check_bootstrap_cost`), folds with too
    few users after the pass (:func:`finish_robust`).
    """
    from dptune.analysis import _dp as dpmod

    check_bootstrap_cost(store, options, manifest)
    passes = plan_robust(store, options, manifest)
    legacy = int(options.bootstrap) if int(options.max_pairs) <= 0 else 0
    analysis = dpmod.analyze(
        store, n_pairs=options.n_pairs, seed=options.seed, test=options.test,
        alpha=options.alpha, correction=options.correction, n_resamples=options.n_resamples,
        bootstrap=legacy, progress=progress, fold_hooks=passes)
    robust = finish_robust(passes, analysis.pvalues, options)
    analysis.dp = annotate_dp(analysis.dp, analysis.pvalues)
    return analysis, robust


def add_verdict(store: Any, result: Any, robust: RobustResult | None) -> None:
    """Fill ``result.robust``, ``result.robust_ranking`` and ``result.verdict`` (after the noise
    floor and importance, which the verdict cites)."""
    from dptune.analysis._verdict_build import verdict_for_store

    if robust is None:
        return
    result.robust = robust.table
    result.robust_ranking = robust.ranking
    result.verdict = verdict_for_store(
        store, result.dp, robust, alpha=float(result.options.alpha), best=result.best,
        primary=result.primary, noise_table=result.noise_floor, importance=result.importance,
        families=result.options.families, min_pairs=result.options.min_pairs)
