"""The report section on hyperparameter importance: optuna's fANOVA and PED-ANOVA beside the
DP of the one-at-a-time scopes, each on its own scale, and the verdict's one answer.

Which hyperparameter *dominates* is answered once, on the DP scale, by the analysis
(dominance.csv: the one-at-a-time DP per 25 pairs with its interval and a family-wise test);
fANOVA and PED-ANOVA explain the variance of the mean metric over the grid (shares that sum to 1)
and Table 5's per-value DP describes the grid at one value of a hyperparameter: they are shown
as supporting evidence, labelled with their scale, and never vote. PED-ANOVA sees a metric only
through which configurations are in its top quantile, so metrics that put the same
configurations there have identical PED-ANOVA rows; the section says so, from importance.csv's
``same_top_as``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dptune.report._format import (
    and_list,
    dp_text,
    ordered_metrics,
    shown_algorithm,
    shown_hyperparameter,
    shown_metric,
)
from dptune.report._sections import option
from dptune.report._table import Block, Cell, md_names

__all__ = ["comparison_sentences", "importance_section"]


#: Display name of each importance evaluator of importance.csv, in the order shown.
_EVALUATORS = {"fanova": "fANOVA", "ped-anova": "PED-ANOVA"}
#: What each evaluator's importance is a share of.
_SCALE = {"fanova": "share of the variance of the mean metric",
          "ped-anova": "share of the divergence between the top-quantile configurations and "
                       "all"}


def _evaluators(importance: pd.DataFrame) -> list[str]:
    """The evaluators of importance.csv: those the report names in its order, then any other
    in the order of the table."""
    present = list(dict.fromkeys(str(e) for e in importance["evaluator"]))
    return [e for e in _EVALUATORS if e in present] + [e for e in present
                                                       if e not in _EVALUATORS]


def _same_top_note(a: pd.DataFrame, cutoff: int) -> str | None:
    """Why some PED-ANOVA rows of one algorithm are identical (importance.csv ``same_top_as``),
    as Markdown, or None when none repeats another."""
    if "same_top_as" not in a.columns:
        return None
    ped = a[(a["evaluator"] == "ped-anova") & a["same_top_as"].fillna("").astype(str).ne("")]
    if ped.empty:
        return None
    groups: dict[str, list[str]] = {}
    for m, first in dict(zip(ped["metric"], ped["same_top_as"], strict=True)).items():
        groups.setdefault(str(first), []).append(str(m))
    k = a.loc[a["evaluator"] == "ped-anova", "top_configs"].dropna()
    size = f"its best {int(k.iloc[0])} configurations" if len(k) else "its best configurations"
    said = []
    for first, ms in groups.items():
        names = [shown_metric(m, cutoff) for m in ordered_metrics(ms)]
        who = and_list(names)
        said.append(f"{who} put the same configurations there as {shown_metric(first, cutoff)}"
                    + (", so its PED-ANOVA row equals " if len(names) == 1
                       else ", so their PED-ANOVA rows equal ")
                    + f"{shown_metric(first, cutoff)}'s")
    return md_names("Identical PED-ANOVA rows are not an error: PED-ANOVA sees a metric only "
                    f"through which configurations are in its top quantile ({size}), not "
                    "through their values; " + "; ".join(said)
                    + ". fANOVA uses the values and tells them apart.")


def _ranked(imp: pd.DataFrame, evaluator: str) -> list[tuple[str, float]]:
    """(hyperparameter, importance) of one evaluator, most important first."""
    e = imp[(imp["evaluator"] == evaluator) & imp["importance"].notna()]
    pairs = zip(e["hyperparameter"], e["importance"], strict=True)
    return sorted(((str(h), float(v)) for h, v in pairs), key=lambda t: (-t[1], t[0]))


def comparison_sentences(
    importance: pd.DataFrame,
    result: Any,
    display: Mapping[str, str] | None = None,
) -> list[str]:
    """One sentence per algorithm at the primary metric@N: the answer of the verdict's
    dominance analysis (:func:`dptune.report._verdict.dominance_sentence`), then what each
    importance evaluator puts first, each on its own scale; as Markdown."""
    from dptune.report._verdict import _Reader, dominance_sentence

    metric, cutoff = result.primary[0], int(result.primary[1])
    names = display or {}
    rd = _Reader(result)
    out = []
    imp = importance[(importance["metric"] == metric) & (importance["cutoff"] == cutoff)]
    for alg in dict.fromkeys(imp["algorithm"]):
        a = imp[imp["algorithm"] == alg]
        parts = []
        for ev in _evaluators(a):
            r = _ranked(a, ev)
            if r:
                # the names and the 3 decimals of the table beside it (learning_rate (0.90)
                # read as another quantity than its row's Learning rate 0.904)
                order = " > ".join(f"{shown_hyperparameter(h, alg)} ({v:.3f})" for h, v in r)
                scale = f" ({_SCALE[ev]})" if ev in _SCALE else ""
                parts.append(f"{_EVALUATORS.get(ev, ev)}{scale} ranks {order}")
        head = f"{names.get(alg, shown_algorithm(alg))}, {shown_metric(metric, cutoff)}: "
        dom = dominance_sentence(rd, alg, cutoff, metric) or \
            "no one-at-a-time DP to compare."
        out.append(head + dom + (" Supporting evidence, not a vote: " + "; ".join(parts) + "."
                                 if parts else ""))
    return [md_names(s) for s in out]


def _importance_rows(a: pd.DataFrame, hps: list[str], metric: str, cutoff: int) -> list[list[Cell]]:
    """Rows (metric, evaluator, importance per hyperparameter) of one algorithm; the top
    importance of a row bold, the primary metric's label bold."""
    rows = []
    for m in ordered_metrics(a["metric"].unique()):
        for ev in _evaluators(a):
            e = a[(a["metric"] == m) & (a["evaluator"] == ev)].set_index("hyperparameter")
            if e.empty:
                continue
            vals = [e.at[h, "importance"] if h in e.index else float("nan") for h in hps]
            top = np.nanargmax(vals) if np.isfinite(vals).any() else -1
            cells = [
                Cell("–" if not math.isfinite(v) else f"{v:.3f}", bold=i == top, numeric=True)
                for i, v in enumerate(vals)
            ]
            label = shown_metric(m, cutoff)
            rows.append([Cell(label, bold=m == metric), Cell(_EVALUATORS.get(ev, ev)), *cells])
    return rows


def importance_section(configs: Any, result: Any) -> str:
    """Markdown body of the importance section: set-up, a table per algorithm (importance of
    each hyperparameter for every metric at the primary cutoff, its number of configurations
    from the result's :attr:`~dptune.analysis.result.AnalysisResult.configuration_counts`, and
    the one-at-a-time DP per 25 pairs of the primary metric) and :func:`comparison_sentences`.
    ``configs``: the result's configurations by algorithm (``algorithms()``)."""
    importance, dp = result.importance, result.dp.table
    gs = result.dp.grid_sample
    metric, cutoff = result.primary[0], int(result.primary[1])
    seed = option(result.options, "seed")
    names = {a: shown_algorithm(a) for a in configs.algorithms()}
    counts = result.configuration_counts
    if importance.empty:
        return (
            "No algorithm has more than one free hyperparameter with more than one value: "
            "nothing to attribute.\n\nData: `importance.csv`."
        )
    lines = [
        "One in-memory optuna study per algorithm, one completed trial per configuration; "
        "objective = mean over the validation folds of the per-fold mean metric@"
        f"{cutoff} (maximised). fANOVA: `FanovaImportanceEvaluator(seed={seed})`; PED-ANOVA: "
        "`PedAnovaImportanceEvaluator(target_quantile=min(0.5, max(0.1, 5/n)))` for n "
        "configurations. fANOVA's importances are shares of the variance of the mean metric; "
        "PED-ANOVA's are shares of how differently each hyperparameter's values are spread "
        "among the top-quantile configurations than among all (both normalised to sum to 1 "
        "per evaluator; higher = explains more). The last row is on "
        f"the DP scale: the DP per 25 pairs of {shown_metric(metric, cutoff)} over the pairs "
        "that differ in that hyperparameter only (lower = varying it alone separates "
        "configurations more often), with P; the verdict names a hyperparameter dominant only "
        "when its DP is significantly lower than every other's.",
        "",
    ]
    only = dp[dp["scope"].str.startswith("only:") & (dp["metric"] == metric)
              & (dp["cutoff"] == cutoff)]
    for alg in dict.fromkeys(importance["algorithm"]):
        a = importance[importance["algorithm"] == alg]
        hps = list(dict.fromkeys(a["hyperparameter"]))
        n = counts.get(str(alg), 0)
        count = f" ({n} configurations)" if n else ""
        if gs is not None and alg in set(gs["algorithm"]):  # fitted on the configurations run
            g = gs[gs["algorithm"] == alg].iloc[0]
            count = (f" ({int(g['configs']):,} of {int(g['configs_total']):,} configurations: "
                     "the grid sample's units; the importances are those of this sample)")
        lines += [f"*{names.get(alg, alg)}*" + count, ""]
        rows = _importance_rows(a, hps, metric, cutoff)
        o = only[only["algorithm"] == alg].set_index("scope")
        if len(o):
            texts = [f"{dp_text(o.at['only:' + h, 'dp_per_25'], o.at['only:' + h, 'ci_low'], o.at['only:' + h, 'ci_high'])} "
                     f"(P = {int(o.at['only:' + h, 'n_pairs'])})" if f"only:{h}" in o.index
                     else "–" for h in hps]
            rows.append([Cell(shown_metric(metric, cutoff)),
                         Cell("DP per 25 pairs, only h varies")]
                        + [Cell(t, numeric=True) for t in texts])
        header = [Cell(h) for h in ["Metric", "Evaluator",
                                    *(shown_hyperparameter(h, alg) for h in hps)]]
        lines += [Block(header, rows).to_markdown(), ""]
        note = _same_top_note(a, cutoff)
        if note:
            lines += [note, ""]
    sentences = comparison_sentences(importance, result, names)
    lines += [f"- {s}" for s in sentences] or ["No comparison at the primary metric."]
    return "\n".join(lines) + "\n\nData: `importance.csv`, `dominance.csv`."
