"""Stability of significance claims under the pair-sampling seed, and its cost.

A claim ("A is significantly more discriminative than B") rests on one draw of the pairs and of
the bootstrap. When a scope's pairs are a sample of the grid's, the stability check repeats the
estimate and its bootstrap with ``S`` pair seeds (repeat ``k`` samples the scope's pairs with
:meth:`dptune.analysis.dp.pairs.Scope.pairs` ``(k, seed)`` and draws the users with
:func:`dptune.analysis.dp.scale.bootstrap_seed` ``(seed, k)``); when every pair is used there is
no other pair set and one repeat is run. A claim is stated only when it holds under **every**
repeat (:func:`family_claims`); one that holds under repeat 0 but not under another is
*dropped* and counted.

Cost: a repeat costs about as much as the estimate with its bootstrap; :func:`affordable_repeats`
lowers ``S`` when the estimated time of the extra repeats exceeds a budget, and the report says
how many repeats were run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from dptune.errors import input_error

__all__ = ["FAMILY_CLAIM_COLUMNS", "family_claims", "affordable_repeats", "estimated_seconds"]

# Seconds per unit of work of one repeat, measured on the 2-core development machine
# (docs/performance.md): per (pair, user) difference and group sums, per (pair, group,
# replicate) multiply-add of the weighted sums, per (pair, replicate) p-value.
_S_PER_PAIR_USER = 3e-9
_S_PER_PAIR_GROUP_REP = 1.2e-10
_S_PER_PAIR_REP = 1.2e-8


def estimated_seconds(n_pairs: int, n_users: int, n_metrics: int, n_folds: int, n_boot: int,
                      groups: int) -> float:
    """Estimated time of one repeat of the robust estimate with its bootstrap for one algorithm:
    ``F M P (a n + b G B + c B)`` with the unit costs above (``G = min(n, groups)``)."""
    g = min(int(n_users), int(groups))
    per = (_S_PER_PAIR_USER * n_users
           + (_S_PER_PAIR_GROUP_REP * g * n_boot + _S_PER_PAIR_REP * n_boot if n_boot else 0.0))
    return float(n_folds * n_metrics * n_pairs * per)


def affordable_repeats(requested: int, seconds_per_repeat: float, budget_s: float) -> int:
    """How many repeats to run: ``requested``, lowered so that the ``S - 1`` extra repeats fit
    ``budget_s`` seconds (at least 1: the main estimate is always computed).

    ``S = min(requested, 1 + floor(budget_s / seconds_per_repeat))``.
    """
    requested = int(requested)
    if requested < 1:
        raise input_error("analysis", "stability", f"must be an integer >= 1, got {requested}")
    if seconds_per_repeat <= 0 or not np.isfinite(seconds_per_repeat):
        return requested
    return max(1, min(requested, 1 + math.floor(budget_s / seconds_per_repeat)))


FAMILY_CLAIM_COLUMNS = ["metric_a", "metric_b", "p_adjusted", "p_adjusted_first", "prob_min",
                        "prob_first", "repeats", "significant_first", "held", "dropped"]


def family_claims(draws: Mapping[int, Mapping[str, tuple[float, np.ndarray]]],
                  alpha: float, se_factor: float = 1.0, paired: bool = True) -> pd.DataFrame:
    """Every ordered claim "``metric_a`` significantly more discriminative than ``metric_b``"
    of one family, and whether it holds under every stability repeat.

    ``draws``: repeat -> metric -> ``(mean p-value, its B paired replicates)`` (repeat 0 is the
    main estimate). Under each repeat the family's metrics are compared at once
    (:func:`dptune.analysis.dp.comparisons.stepdown_maxt`, family-wise level ``alpha``); the
    claim ``a < b`` is *significant* under a repeat when its comparison is rejected with ``a``
    lower. Per ordered pair: ``p_adjusted`` (the largest adjusted p-value over the repeats),
    ``p_adjusted_first`` (repeat 0's), ``prob_min`` / ``prob_first`` (share of replicates with
    ``a`` lower: the smallest over the repeats / repeat 0's), ``held`` (significant under every
    repeat) and ``dropped`` (significant under repeat 0 only, not under every repeat).
    ``se_factor``, ``paired``: :func:`dptune.analysis.dp.comparisons.stepdown_maxt`'s.
    """
    from dptune.analysis.dp.comparisons import compare_estimates

    if not 0.0 < float(alpha) < 1.0:
        raise input_error("stability", "alpha", f"must be in (0, 1), got {alpha}")
    if 0 not in draws:
        raise input_error("stability", "draws", "has no repeat 0 (the main estimate)")
    rows: dict[tuple[str, str], dict] = {}
    for k in sorted(draws):
        d = draws[k]
        labels, comp = compare_estimates({m: v[0] for m, v in d.items()},
                                         {m: v[1] for m, v in d.items()}, se_factor,
                                         paired)
        for i, a in enumerate(labels):
            for j, b in enumerate(labels):
                if i == j:
                    continue
                sig = comp.lower(i, j, alpha)
                p, prob = comp.p_of(i, j), comp.prob_lower(i, j)
                r = rows.setdefault((a, b), {
                    "metric_a": a, "metric_b": b, "p_adjusted": p, "p_adjusted_first": p,
                    "prob_min": prob, "prob_first": prob, "repeats": 0,
                    "significant_first": sig, "held": True, "dropped": False})
                r["p_adjusted"] = max(r["p_adjusted"], p)
                r["prob_min"] = min(r["prob_min"], prob)
                r["repeats"] += 1
                r["held"] = r["held"] and sig
    out = pd.DataFrame(list(rows.values()), columns=FAMILY_CLAIM_COLUMNS)
    out["dropped"] = out["significant_first"] & ~out["held"]
    return out
