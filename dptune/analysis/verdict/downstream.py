"""Two checks of the verdict beyond DP: does the metric's choice matter on the test split, and
which hyperparameter dominates.

**Downstream** (:func:`downstream_check`): each metric@N selects a configuration on validation
(the best mean over the validation folds, ``best_configs.csv``). Per family of metrics (the
verdict's families), on the test split, the configuration selected by the family's recommended
metric and the one selected by every other metric of the same family are compared with a paired
two-sided t-test over the test users on one yardstick of that family, its **judge** at the same
cutoff N (:func:`dptune.analysis.verdict.rules.family_judge`: the primary metric when it is in the
family, else the family's first metric; by default nDCG@N for accuracy, EPC@N for novelty), so
that like is compared with like (``p < alpha``: the choice of metric changes the outcome
significantly). Same configuration -> no test needed (no difference).

**Dominant hyperparameter** (:func:`dominance_evidence`): the top hyperparameter of each
available analysis -- fANOVA and PED-ANOVA importances of the metric (when computed at this
cutoff), Table 5's lowest best DP and the one-at-a-time lowest DP
(:func:`dptune.analysis.importance.study.dp_dominance`, compared per pair when the scopes have
different numbers of pairs) -- and the hyperparameter most of them put first (ties: the first
analysis in that order), with the agreement ``k of n``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from dptune.analysis.dp.paired_tests import paired_pvalues
from dptune.analysis.importance.study import EVALUATOR_NAMES, EVALUATORS, dp_dominance
from dptune.analysis.options import DEFAULT_FAMILIES, MIN_PAIRS
from dptune.analysis.verdict.rules import Families, family_groups
from dptune.errors import DptuneError
from dptune.vocab import (
    display_hyperparameter,
    display_metric,
    display_params,
    display_value,
)

__all__ = ["downstream_check", "dominance_evidence"]

#: ``read(algorithm, metric, cutoff, config_ids) -> (users, values (len(config_ids), n_users))``
#: on the test split.
TestReader = Callable[[str, str, int, np.ndarray], tuple[np.ndarray, np.ndarray]]


def downstream_check(best: pd.DataFrame, recommended: Mapping[tuple[str, int, str], str],
                     read_test: TestReader | None, judges: Mapping[str, str],
                     alpha: float = 0.05, families: Families = DEFAULT_FAMILIES
                     ) -> dict[tuple[str, int, str], tuple[int, str, str]]:
    """(algorithm, cutoff, family) -> ``(selected configurations, ;-joined metrics of the
    family whose selection differs significantly from the recommended metric's on the test
    split, sentence)``.

    ``best`` has ``algorithm, metric, cutoff, config_id``; ``recommended`` maps (algorithm,
    cutoff, family) to the family's recommended metric; ``judges`` maps a family to its judge
    metric; ``read_test`` reads per-user test values of a metric@N (None: the data has no test
    split, as outside data without a fold named ``test``; the sentence says so).
    """
    out: dict[tuple[str, int, str], tuple[int, str, str]] = {}
    for (alg, cutoff, family), rec in recommended.items():
        b = best[(best["algorithm"] == alg) & (best["cutoff"] == cutoff)]
        if b.empty or not rec or family not in judges:
            continue
        members = dict(family_groups(b["metric"].astype(str), families)).get(family, [])
        b = b[b["metric"].astype(str).isin(members)]
        cfg = dict(zip(b["metric"].astype(str), b["config_id"].astype(int), strict=True))
        if rec not in cfg:
            continue
        judge = judges[family]
        yard = display_metric(judge, cutoff)
        ids = np.array(sorted(set(cfg.values())), dtype=np.int64)
        head = (f"Downstream: the {len(cfg)} {family} metrics select {len(ids)} configuration"
                f"{'' if len(ids) == 1 else 's'}")
        key = (alg, int(cutoff), family)
        if len(ids) == 1:
            out[key] = (1, "", head + ", so the choice among them does not matter here.")
            continue
        if read_test is None:  # outside data without held-out values
            out[key] = (len(ids), "", head + "; the data has no held-out values (no fold named "
                        "test), so whether they differ beyond these folds is unknown.")
            continue
        try:
            users, values = read_test(alg, judge, int(cutoff), ids)
        except DptuneError:  # the store has no test-split values for these configurations
            out[key] = (len(ids), "", head + f"; the test split was not evaluated for them "
                        f"({yard}), so whether they differ on it is unknown.")
            continue
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] == 0:  # no test user has values for them
            out[key] = (len(ids), "", head + "; no test user has values for them, so "
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
        text = (head + f"; judged on the test split by {yard} (same family; paired t-test "
                f"over {len(users)} test users) {display_metric(rec, cutoff)}'s choice, "
                f"{_config(cfg[rec], params)}, scores {a.mean():.4f}; "
                + ("; ".join(parts) if parts else "no other metric selects another") + ".")
        out[key] = (len(ids), ";".join(differ), text)
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
                       metric: str, cutoff: int, min_pairs: int = MIN_PAIRS
                       ) -> tuple[str, str, str] | None:
    """``(dominant hyperparameter, "k of n", sentence)`` for one algorithm and metric@N, or None
    when no analysis applies. A hyperparameter is named only when a strict majority of the
    analyses put it first (``k > n / 2``); otherwise the first element is ``""`` and the
    sentence says that the analyses disagree. None also (fewer than two free hyperparameters, or fewer than ``min_pairs``
    pairs of configurations in the whole grid: no hyperparameter is named from so little).
    Table 5 groups and one-at-a-time scopes with fewer than ``min_pairs`` pairs are left out
    of the comparison."""
    whole = dp[(dp["algorithm"] == algorithm) & (dp["metric"] == metric)
               & (dp["cutoff"] == int(cutoff)) & (dp["scope"] == "all")]
    if not whole.empty and int(whole["n_pairs"].max()) < int(min_pairs):
        return None
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
    dom = dp_dominance(dp, algorithm, metric, cutoff, min_pairs)
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
    few = (f" {dom['few']} Table 5 / one-at-a-time scope(s) with fewer than {int(min_pairs)} "
           "pairs left out." if dom["few"] else "")
    if 2 * count[top] <= len(picks):  # no majority: naming one would be a claim without evidence
        text = (f"No dominant hyperparameter for {display_metric(metric, cutoff)}: the "
                f"{len(picks)} analyses disagree, at most {agree} put the same one first ("
                + "; ".join(parts) + ")." + few)
        return "", agree, text
    text = (f"Dominant hyperparameter for {display_metric(metric, cutoff)}: "
            f"{display_hyperparameter(top, algorithm)} ({agree} analyses agree: " + "; ".join(parts) + ")."
            + few)
    return top, agree, text
