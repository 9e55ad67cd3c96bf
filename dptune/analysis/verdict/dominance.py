"""Which hyperparameter dominates: one estimator on the DP scale, with an interval and the same
error control as every other claim (dominance.csv).

**The estimator.** For an algorithm, a metric@N and a hyperparameter ``h``, the one-at-a-time
scope ``only:<h>`` holds the pairs of configurations that differ in ``h`` only, every other
hyperparameter equal. Its DP per 25 pairs, ``25 x`` the mean p-value of those pairs, says how
reliably the metric separates two configurations when ``h`` alone changes: lower = varying
``h`` alone moves the metric more often. The hyperparameter with the lowest such DP is the one
that *separates configurations most often by itself*, and it **dominates** when its DP is
significantly lower than every other hyperparameter's (the comparisons of
:mod:`dptune.analysis.verdict.claims`, kind ``hyperparameters``: bootstrap max-t, stepped
down, family-wise error rate ``alpha`` over the hyperparameters, holding under every pair
seed). Each DP has its 95% bootstrap interval, on the same users and replicates as the
verdict's.

Why this one: the question "which hyperparameter matters" is a question about changing one
hyperparameter, which is exactly what the one-at-a-time pairs do, and their DP is on the same
scale as every other DP of the report. Table 5's per-value scopes (pairs with ``h`` *fixed*,
differing in the others) answer a different question -- how discriminative the grid is at one
value of ``h`` -- and optuna's fANOVA / PED-ANOVA explain the variance of the *mean* metric
over the grid, not how reliably configurations are told apart; they stay in the report as
supporting evidence, each on its own scale, and never vote.

Answers (column ``answer``): ``dominant`` (the lowest is significantly below every other);
``none`` (it is not: ``over`` lists those it is significantly below, ``tied`` the others);
``no_bootstrap`` (no interval, hence no claim); ``single`` (only one hyperparameter could be
compared: each other one has too few pairs or no evidence); ``no_evidence`` (none could be
compared, and some because its pairs never differ); ``too_few_pairs`` (none could be
compared, each for having fewer than ``min_pairs`` pairs). A hyperparameter has *too few
pairs* when its one-at-a-time scope holds fewer than ``min_pairs`` pairs (column
``too_few_pairs``) and *no evidence* when every p-value of its scope is 1: changing it alone
never changed the metric on any pair (column ``no_evidence``); neither is compared.
Algorithms with fewer than two free hyperparameters have no row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dptune.vocab import HYPERPARAMETER_ORDER, tie_value

__all__ = ["DOMINANCE_COLUMNS", "dominance_table"]

DOMINANCE_COLUMNS = ["algorithm", "metric", "cutoff", "answer", "hyperparameter", "dp_per_25",
                     "ci_low", "ci_high", "n_pairs", "over", "tied", "too_few_pairs",
                     "no_evidence", "p_adjusted", "repeats", "compared"]


def _h_rank(h: str) -> tuple[int, str]:
    return (HYPERPARAMETER_ORDER.index(h) if h in HYPERPARAMETER_ORDER
            else len(HYPERPARAMETER_ORDER), h)


def dominance_table(dp: pd.DataFrame, comparisons: pd.DataFrame, min_pairs: int,
                    expected: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """One row per (algorithm, metric, cutoff) with one-at-a-time scopes (module docstring).

    ``expected``: algorithm -> the hyperparameters its full grid varies (a store holding a
    subset of its grid's units may have no one-at-a-time pair of some of them: they count as
    too few pairs, never as absent).

    ``dp``: dp.csv; ``comparisons``: comparisons.csv. ``hyperparameter``/``dp_per_25``/
    ``ci_*``/``n_pairs``: the lowest one-at-a-time DP with enough pairs; ``over``/``tied``/
    ``too_few_pairs``/``no_evidence``: lists of hyperparameters (``;``-joined in dominance.csv);
    ``p_adjusted``: the largest adjusted
    p-value of its comparisons with the others; ``compared``: how many hyperparameters were
    compared."""
    only = dp[dp["scope"].str.startswith("only:")]
    hyp = comparisons[comparisons["kind"] == "hyperparameters"] if len(comparisons) else \
        comparisons
    rows = []
    for (alg, metric, cutoff), g in only.groupby(["algorithm", "metric", "cutoff"], sort=False):
        g = g.assign(h=g["scope"].str.slice(len("only:")))
        absent = [h for h in (expected or {}).get(str(alg), []) if h not in set(g["h"])]
        few = sorted([*g.loc[g["n_pairs"].astype(int) < int(min_pairs), "h"], *absent],
                     key=_h_rank)
        enough = g["n_pairs"].astype(int) >= int(min_pairs)
        silent = enough & g["no_evidence"].astype(bool)
        ok = g[enough & ~silent]
        row = {"algorithm": alg, "metric": metric, "cutoff": int(cutoff), "answer": "",
               "hyperparameter": "", "dp_per_25": np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "n_pairs": 0, "over": [], "tied": [], "too_few_pairs": few,
               "no_evidence": sorted(g.loc[silent, "h"], key=_h_rank),
               "p_adjusted": np.nan, "repeats": 0, "compared": len(ok)}
        if ok.empty:
            rows.append(row | {"answer": "no_evidence" if silent.any() else "too_few_pairs"})
            continue
        # the tie rule of the metrics: equal DPs in the grid's order of hyperparameters
        ok = ok.assign(_v=tie_value(ok["mean_p"]), _r=ok["h"].map(_h_rank)).sort_values(
            ["_v", "_r"], kind="stable")
        best = ok.iloc[0]
        row |= {"hyperparameter": best["h"], "dp_per_25": float(best["dp_per_25"]),
                "ci_low": float(best["ci_low"]), "ci_high": float(best["ci_high"]),
                "n_pairs": int(best["n_pairs"])}
        others = [str(h) for h in ok["h"].iloc[1:]]
        if not others:
            rows.append(row | {"answer": "single"})
            continue
        c = hyp[(hyp["algorithm"] == alg) & (hyp["cutoff"] == int(cutoff))
                & (hyp["group"] == metric) & (hyp["a"] == best["h"])].set_index("b") \
            if len(hyp) else pd.DataFrame()
        if c.empty:
            rows.append(row | {"answer": "no_bootstrap", "tied": others})
            continue
        over = [h for h in others if h in c.index and bool(c.at[h, "held"])]
        tied = [h for h in others if h not in over]
        rows.append(row | {
            "answer": "dominant" if not tied else "none", "over": over,
            "tied": tied, "p_adjusted": float(c.loc[others, "p_adjusted"].max()),
            "repeats": int(c["repeats"].max())})
    return pd.DataFrame(rows, columns=DOMINANCE_COLUMNS)
