"""The report section on hyperparameter importance (optuna's fANOVA and PED-ANOVA) beside the
DP-based dominance of Table 5 and the one-at-a-time scopes, with one computed sentence per
algorithm saying where the four analyses agree.

The numbers come from :func:`dptune.analysis.importance.study.hyperparameter_importance` (importances
normalised to sum to 1 per evaluator) and :func:`dptune.analysis.importance.study.dp_dominance`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.importance.study import EVALUATOR_NAMES, EVALUATORS, dp_dominance
from dptune.analysis.options import MIN_PAIRS
from dptune.report._format import display_value, ordered_metrics
from dptune.report._sections import option
from dptune.report._table import Block, Cell
from dptune.vocab import display_algorithm, display_metric

__all__ = ["comparison_sentences", "importance_section"]


def _ranked(imp: pd.DataFrame, evaluator: str) -> list[tuple[str, float]]:
    """(hyperparameter, importance) of one evaluator, most important first."""
    e = imp[(imp["evaluator"] == evaluator) & imp["importance"].notna()]
    pairs = zip(e["hyperparameter"], e["importance"], strict=True)
    return sorted(((str(h), float(v)) for h, v in pairs), key=lambda t: (-t[1], t[0]))


def _pairs_of_grid(dp: pd.DataFrame, algorithm: str, metric: str, cutoff: int) -> int | None:
    """Pairs of configurations of the whole grid (scope ``all``), or None when unknown."""
    whole = dp[(dp["algorithm"] == algorithm) & (dp["metric"] == metric)
               & (dp["cutoff"] == cutoff) & (dp["scope"] == "all")]
    return int(whole["n_pairs"].max()) if len(whole) else None


def comparison_sentences(
    importance: pd.DataFrame,
    dp: pd.DataFrame,
    primary: tuple[str, int],
    display: Mapping[str, str] | None = None,
    min_pairs: int = MIN_PAIRS,
) -> list[str]:
    """One computed sentence per algorithm at the primary metric@N: the top hyperparameter of each
    importance evaluator and of the two DP-based analyses, and where they agree or differ.

    With fewer than ``min_pairs`` pairs of configurations in the grid no hyperparameter is named
    first ("too few pairs (k) to name a dominant hyperparameter"); DP scopes with fewer pairs
    are left out of the comparison."""
    metric, cutoff = primary[0], int(primary[1])
    names = display or {}
    out = []
    imp = importance[(importance["metric"] == metric) & (importance["cutoff"] == cutoff)]
    for alg in dict.fromkeys(imp["algorithm"]):
        k = _pairs_of_grid(dp, alg, metric, cutoff)
        if k is not None and k < int(min_pairs):
            out.append(f"{names.get(alg, alg)}, {display_metric(metric, cutoff)}: too few pairs "
                       f"({k}) to name a dominant hyperparameter (the minimum is min_pairs = "
                       f"{int(min_pairs)}); the importances above are shown without a claim.")
            continue
        a = imp[imp["algorithm"] == alg]
        picks: dict[str, str] = {}
        parts = []
        for ev in EVALUATORS:
            r = _ranked(a, ev)
            if not r:
                continue
            picks[EVALUATOR_NAMES[ev]] = r[0][0]
            order = " > ".join(f"{h} ({v:.2f})" for h, v in r)
            parts.append(f"{EVALUATOR_NAMES[ev]} ranks {order}")
        dom = dp_dominance(dp, alg, metric, cutoff, min_pairs)
        unit = "DP per pair" if dom["per_pair"] else "DP"
        if dom["table5"]:
            h, v, d, n = dom["table5"][0]
            picks["Table 5 (lowest best DP)"] = h
            parts.append(
                f"Table 5's lowest best DP is under {h}={display_value(v)} (DP {d:.3f}, {n} pairs)"
            )
        if dom["only"]:
            h, d, n = dom["only"][0]
            picks["one at a time (lowest DP)"] = h
            parts.append(
                f"one at a time, pairs differing in {h} only have the lowest DP "
                f"({d:.3f}, {n} pairs)"
            )
        if not picks:
            continue
        groups: dict[str, list[str]] = {}
        for who, h in picks.items():
            groups.setdefault(h, []).append(who)
        if len(groups) == 1:
            verdict = f"all {len(picks)} analyses put {next(iter(groups))} first"
        else:
            verdict = "they differ: " + "; ".join(
                f"{h} first for {', '.join(who)}" for h, who in groups.items()
            )
        head = f"{names.get(alg, alg)}, {display_metric(metric, cutoff)}: "
        few = (f" {dom['few']} DP scope(s) with fewer than {int(min_pairs)} pairs left out."
               if dom["few"] else "")
        out.append(head + "; ".join(parts) + f" (comparisons by {unit}). Top choice: {verdict}."
                   + few)
    return out


def _importance_rows(a: pd.DataFrame, hps: list[str], metric: str, cutoff: int) -> list[list[Cell]]:
    """Rows (metric, evaluator, importance per hyperparameter) of one algorithm; the top
    importance of a row bold, the primary metric's label bold."""
    rows = []
    for m in ordered_metrics(a["metric"].unique()):
        for ev in EVALUATORS:
            e = a[(a["metric"] == m) & (a["evaluator"] == ev)].set_index("hyperparameter")
            if e.empty:
                continue
            vals = [e.at[h, "importance"] if h in e.index else float("nan") for h in hps]
            top = np.nanargmax(vals) if np.isfinite(vals).any() else -1
            cells = [
                Cell("–" if not math.isfinite(v) else f"{v:.3f}", bold=i == top, numeric=True)
                for i, v in enumerate(vals)
            ]
            label = display_metric(m, cutoff)
            rows.append([Cell(label, bold=m == metric), Cell(EVALUATOR_NAMES[ev]), *cells])
    return rows


def importance_section(store: Any, result: Any) -> str:
    """Markdown body of the importance section: set-up, a table per algorithm (importance of each
    hyperparameter for every metric at the primary cutoff, beside the DP dominance of the
    primary metric) and :func:`comparison_sentences`."""
    importance, dp = result.importance, result.dp.table
    metric, cutoff = result.primary[0], int(result.primary[1])
    seed = option(result.options, "seed")
    min_pairs = int(option(result.options, "min_pairs", MIN_PAIRS))
    names = {a: display_algorithm(a) for a in store.algorithms()}
    if importance.empty:
        return (
            "No algorithm has more than one free hyperparameter with more than one value: "
            "nothing to attribute.\n\nData: `importance.csv`."
        )
    lines = [
        "One in-memory optuna study per algorithm and metric, one completed trial per "
        "configuration; objective = mean over the validation folds of the per-fold mean "
        f"metric@{cutoff} (maximised). fANOVA: `FanovaImportanceEvaluator(seed={seed})`; "
        "PED-ANOVA: `PedAnovaImportanceEvaluator(target_quantile=min(0.5, max(0.1, 5/n)))` for n "
        "configurations. Importances normalised to sum to 1 per evaluator; higher = the "
        "hyperparameter explains more of the variation of the mean metric. DP columns: "
        f"{display_metric(metric, cutoff)}, lower = more discriminative (Table 5's best value "
        "and the one-at-a-time scope).",
        "",
    ]
    for alg in dict.fromkeys(importance["algorithm"]):
        a = importance[importance["algorithm"] == alg]
        hps = list(dict.fromkeys(a["hyperparameter"]))
        n = len(store.configs(alg))
        lines += [f"*{names.get(alg, alg)}*" + (f" ({n} configurations)" if n else ""), ""]
        rows = _importance_rows(a, hps, metric, cutoff)
        dom = dp_dominance(dp, alg, metric, cutoff, min_pairs)
        t5 = {h: (v, d) for h, v, d, _n in dom["table5"]}
        one = {h: d for h, d, _n in dom["only"]}
        label = display_metric(metric, cutoff)
        if t5:
            texts = [f"{t5[h][1]:.3f} (at {display_value(t5[h][0])})" if h in t5 else "–"
                     for h in hps]
            rows.append([Cell(label), Cell("DP, best h=v (Table 5)")]
                        + [Cell(t, numeric=True) for t in texts])
        if one:
            texts = [f"{one[h]:.3f}" if h in one else "–" for h in hps]
            rows.append([Cell(label), Cell("DP, only h varies")]
                        + [Cell(t, numeric=True) for t in texts])
        header = [Cell(h) for h in ["Metric", "Evaluator", *hps]]
        lines += [Block(header, rows).to_markdown(), ""]
    sentences = comparison_sentences(importance, dp, result.primary, names, min_pairs)
    lines += [f"- {s}" for s in sentences] or ["No comparison at the primary metric."]
    return "\n".join(lines) + "\n\nData: `importance.csv`."
