"""Two checks of the verdict beyond DP: does the metric's choice matter on the test split, and
which hyperparameter dominates.

**Downstream** (:func:`downstream_check`): each metric@N selects a configuration on validation
(the best mean over the validation folds, ``best_configs.csv``). On the test split, the
configuration selected by the recommended metric and the one selected by every other metric are
compared with a paired two-sided t-test over the test users on one yardstick, the primary
metric@N (``p < alpha``: the choice of metric changes the outcome significantly). Same
configuration -> no test needed (no difference).

**Dominant hyperparameter** (:func:`dominance_evidence`): the top hyperparameter of each
available analysis -- fANOVA and PED-ANOVA importances of the metric (when computed at this
cutoff), Table 5's lowest best DP and the one-at-a-time lowest DP
(:func:`dptune.analysis._importance.dp_dominance`, compared per pair when the scopes have
different numbers of pairs) -- and the hyperparameter most of them put first (ties: the first
analysis in that order), with the agreement ``k of n``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from dptune.analysis._importance import EVALUATOR_NAMES, EVALUATORS, dp_dominance
from dptune.analysis._stats import paired_pvalues
from dptune.errors import DptuneError
from dptune.vocab import (
    display_hyperparameter,
    display_metric,
    display_params,
    display_value,
    metric_rank,
)

__all__ = ["downstream_check", "dominance_evidence"]

#: ``read(algorithm, config_ids) -> (users, values (len(config_ids), n_users))`` on the test split.
TestReader = Callable[[str, np.ndarray], tuple[np.ndarray, np.ndarray]]


def downstream_check(best: pd.DataFrame, recommended: Mapping[tuple[str, int], str],
                     read_test: TestReader | None, primary: tuple[str, int],
                     alpha: float = 0.05) -> dict[tuple[str, int], tuple[int, str, str]]:
    """(algorithm, cutoff) -> ``(selected configurations, ;-joined metrics whose selection differs
    significantly from the recommended metric's on the test split, sentence)``.

    ``best`` has ``algorithm, metric, cutoff, config_id``; ``read_test`` reads the per-user test
    values of the primary metric@N (None: no test split, the sentence says so).
    """
    out: dict[tuple[str, int], tuple[int, str, str]] = {}
    yard = display_metric(*primary)
    for (alg, cutoff), rec in recommended.items():
        b = best[(best["algorithm"] == alg) & (best["cutoff"] == cutoff)]
        if b.empty or not rec:
            continue
        cfg = dict(zip(b["metric"].astype(str), b["config_id"].astype(int), strict=True))
        cfg = {m: cfg[m] for m in sorted(cfg, key=metric_rank)}
        if rec not in cfg:
            continue
        ids = np.array(sorted(set(cfg.values())), dtype=np.int64)
        head = (f"Downstream: the {len(cfg)} metrics select {len(ids)} configuration"
                f"{'' if len(ids) == 1 else 's'}")
        if len(ids) == 1:
            out[(alg, cutoff)] = (1, "", head + ", so the choice of metric does not matter here.")
            continue
        if read_test is None:
            out[(alg, cutoff)] = (len(ids), "", head + "; the test split was not evaluated, so "
                                  "whether they differ on it is unknown.")
            continue
        try:
            users, values = read_test(alg, ids)
        except DptuneError:  # the store has no test-split values for these configurations
            out[(alg, cutoff)] = (len(ids), "", head + "; the test split was not evaluated for "
                                  "them, so whether they differ on it is unknown.")
            continue
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] == 0:  # no test user has values for them
            out[(alg, cutoff)] = (len(ids), "", head + "; no test user has values for them, so "
                                  "whether they differ on the test split is unknown.")
            continue
        row = {int(c): i for i, c in enumerate(ids)}
        params = dict(zip(b["config_id"].astype(int), b["params"].astype(str), strict=False)) \
            if "params" in b.columns else {}
        a = values[row[cfg[rec]]]
        by_config: dict[int, list[str]] = {}
        for m, c in cfg.items():
            if m != rec and c != cfg[rec]:
                by_config.setdefault(c, []).append(m)
        differ, parts = [], []
        for c, ms in by_config.items():
            p = float(paired_pvalues(a, values[row[c]])[0])
            sig = p < alpha
            if sig:
                differ += ms
            who = ", ".join(display_metric(m, cutoff) for m in ms)
            parts.append(f"{who} select{'s' if len(ms) == 1 else ''} {_config(c, params)}: "
                         f"{values[row[c]].mean():.4f} (p = {p:.2g}"
                         f"{', significant' if sig else ''})")
        text = (head + f"; on the test split ({yard}, paired t-test over {len(users)} test users) "
                f"{display_metric(rec, cutoff)}'s choice, {_config(cfg[rec], params)}, scores "
                f"{a.mean():.4f}; " + "; ".join(parts) + ".")
        out[(alg, cutoff)] = (len(ids), ";".join(differ), text)
    return out


def _config(config_id: int, params: Mapping[int, str]) -> str:
    text = params.get(int(config_id), "")
    return f"configuration {int(config_id)}" + (f" ({display_params(text)})" if text else "")


def _top(imp: pd.DataFrame, evaluator: str) -> tuple[str, float] | None:
    e = imp[(imp["evaluator"] == evaluator) & imp["importance"].notna()]
    if e.empty:
        return None
    e = e.sort_values(["importance", "hyperparameter"], ascending=[False, True], kind="stable")
    return str(e["hyperparameter"].iloc[0]), float(e["importance"].iloc[0])


def dominance_evidence(dp: pd.DataFrame, importance: pd.DataFrame | None, algorithm: str,
                       metric: str, cutoff: int) -> tuple[str, str, str] | None:
    """``(dominant hyperparameter, "k of n", sentence)`` for one algorithm and metric@N, or None
    when no analysis applies (fewer than two free hyperparameters)."""
    picks: list[tuple[str, str]] = []  # (analysis, hyperparameter)
    parts: list[str] = []
    if importance is not None and not importance.empty:
        imp = importance[(importance["algorithm"] == algorithm)
                         & (importance["metric"] == metric) & (importance["cutoff"] == cutoff)]
        for ev in EVALUATORS:
            t = _top(imp, ev)
            if t:
                picks.append((EVALUATOR_NAMES[ev], t[0]))
                parts.append(f"{EVALUATOR_NAMES[ev]} {display_hyperparameter(t[0], algorithm)} ({t[1]:.2f})")
    dom = dp_dominance(dp, algorithm, metric, cutoff)
    unit = "DP per pair" if dom["per_pair"] else "DP"
    if dom["table5"]:
        h, v, d, n = dom["table5"][0]
        picks.append(("Table 5", h))
        val = d / n if dom["per_pair"] else d
        parts.append(f"Table 5 {display_hyperparameter(h, algorithm)} (best {unit} {val:.3f} at {h}={display_value(v)}, "
                     f"{n} pairs)")
    if dom["only"]:
        h, d, n = dom["only"][0]
        picks.append(("one at a time", h))
        val = d / n if dom["per_pair"] else d
        parts.append(f"one at a time {display_hyperparameter(h, algorithm)} ({unit} {val:.3f}, {n} pairs)")
    if not picks:
        return None
    count: dict[str, int] = {}
    for _, h in picks:
        count[h] = count.get(h, 0) + 1
    top = max(count, key=lambda h: (count[h], -[p[1] for p in picks].index(h)))
    agree = f"{count[top]} of {len(picks)}"
    text = (f"Dominant hyperparameter for {display_metric(metric, cutoff)}: "
            f"{display_hyperparameter(top, algorithm)} ({agree} analyses agree: " + "; ".join(parts) + ").")
    return top, agree, text
