"""Stability of "significantly more discriminative" claims under the pair-sampling seed.

A claim "A is more discriminative than B" (``P(A better) >= level`` in the bootstrap of the robust
estimate, see :mod:`dptune.analysis.dp.bootstrap`) rests on one draw of the pairs and of the
bootstrap. The stability check repeats the robust estimate and its bootstrap with ``S`` seeds
(repeat ``k`` samples its pairs with :func:`dptune.analysis.dp.scale.robust_seed` ``(seed, k)``
and bootstraps with :func:`dptune.analysis.dp.scale.bootstrap_seed` ``(seed, k)``; when every pair
is used the pairs are the same and only the bootstrap draws change). The verdict states a claim
only when it holds under **every** repeat; a claim that holds under repeat 0 but not under
another is *dropped* and counted.

Cost: a repeat costs about as much as the robust estimate with its bootstrap;
:func:`affordable_repeats` lowers ``S`` when the estimated time of the extra repeats exceeds a
budget, and the verdict says how many repeats were run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from dptune.analysis.dp.bootstrap import prob_more_discriminative
from dptune.errors import input_error

__all__ = ["CLAIM_COLUMNS", "ranking_frame", "claims", "affordable_repeats", "estimated_seconds"]

CLAIM_COLUMNS = ["algorithm", "cutoff", "metric_a", "metric_b", "p_first", "p_min", "repeats",
                 "significant_first", "held", "dropped"]

# Seconds per unit of work of one repeat, measured on the 2-core development machine
# (docs/performance.md): per (pair, user) difference and group sums, per (pair, group,
# replicate) multiply-add of the weighted sums, per (pair, replicate) p-value.
_S_PER_PAIR_USER = 3e-9
_S_PER_PAIR_GROUP_REP = 1.2e-10
_S_PER_PAIR_REP = 1.2e-8


def ranking_frame(replicates: Mapping[tuple[str, str, int], np.ndarray],
                  repeat: int = 0) -> pd.DataFrame:
    """``algorithm, cutoff, metric_a, metric_b, p_a_better, repeat`` for every ordered pair of
    metrics at the same (algorithm, cutoff): ``P(A better) = (1/B) #{r : pbar°_A,r < pbar°_B,r}``
    (:func:`dptune.analysis.dp.bootstrap.prob_more_discriminative`) from the paired replicates
    ``(algorithm, metric, cutoff) -> (B,)`` of one repeat
    (:func:`dptune.analysis.dp.bootstrap.interval_replicates`)."""
    rows = []
    groups: dict[tuple[str, int], list[str]] = {}
    for alg, metric, cutoff in replicates:
        groups.setdefault((alg, int(cutoff)), []).append(metric)
    for (alg, cutoff), ms in groups.items():
        for a in ms:
            for b in ms:
                if a != b:
                    p = prob_more_discriminative(replicates[(alg, a, cutoff)],
                                                 replicates[(alg, b, cutoff)])
                    rows.append((alg, cutoff, a, b, p, int(repeat)))
    return pd.DataFrame(rows, columns=["algorithm", "cutoff", "metric_a", "metric_b",
                                       "p_a_better", "repeat"])


def claims(ranking: pd.DataFrame, level: float) -> pd.DataFrame:
    """Every ordered claim "metric_a more discriminative than metric_b" and its stability.

    ``ranking`` has columns ``algorithm, cutoff, metric_a, metric_b, p_a_better, repeat``
    (``repeat`` 0 is the main estimate). Per claim: ``p_first`` (repeat 0), ``p_min`` (over the
    repeats), ``repeats`` (how many), ``significant_first = p_first >= level``, ``held = p_min >=
    level`` (the claim holds under every repeat) and ``dropped = significant_first and not
    held``. Rows in the order of repeat 0.
    """
    if not 0.0 < float(level) < 1.0:
        raise input_error("stability", "level", f"must be in (0, 1), got {level}")
    need = {"algorithm", "cutoff", "metric_a", "metric_b", "p_a_better", "repeat"}
    missing = need - set(ranking.columns)
    if missing:
        raise input_error("stability", "ranking", f"missing columns {sorted(missing)}")
    if ranking.empty:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    keys = ["algorithm", "cutoff", "metric_a", "metric_b"]
    first = ranking[ranking["repeat"] == 0]
    if first.empty:
        raise input_error("stability", "ranking", "has no repeat 0 (the main estimate)")
    agg = ranking.groupby(keys, sort=False).agg(p_min=("p_a_better", "min"),
                                                repeats=("repeat", "nunique"))
    out = first[keys + ["p_a_better"]].rename(columns={"p_a_better": "p_first"})
    out = out.merge(agg.reset_index(), on=keys, how="left")
    out["significant_first"] = out["p_first"] >= level
    out["held"] = out["p_min"] >= level
    out["dropped"] = out["significant_first"] & ~out["held"]
    return out[CLAIM_COLUMNS].reset_index(drop=True)


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
