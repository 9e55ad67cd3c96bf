"""The report's Markdown sections that the analysis used to assemble (legacy).

Temporary: ``dptune.report`` re-creates these sections from an :class:`AnalysisResult`; until
that lands, the glue (:func:`dptune._api.analyze_results`) renders them from here so that the
reports stay byte-identical. Nothing else may use this module; delete it with the glue's switch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis._importance import EVALUATOR_NAMES, EVALUATORS, dp_dominance
from dptune.analysis._noise import deterministic_algorithms, is_stochastic
from dptune.analysis._result import AnalysisResult
from dptune.analysis._selection import params_text
from dptune.vocab import METRICS, display_algorithm, display_metric


def _display_value(text: str) -> str:
    """A scope value for display: numbers to 6 significant digits, anything else as is."""
    try:
        return f"{float(text):.6g}"
    except ValueError:
        return str(text)


_CORRECTION_TEXT = {"none": "none (raw p-values)", "holm": "Holm step-down (family-wise error)",
                    "bh": "Benjamini-Hochberg (false discovery rate)"}


def _test_text(opts: dict[str, Any]) -> str:
    base = {"t": "paired two-sided Student t-test (scipy ttest_rel)",
            "wilcoxon": "Wilcoxon signed-rank (two-sided)",
            "bootstrap": "paired bootstrap test of the mean difference (two-sided)",
            "permutation": "randomisation (sign-flip) test (two-sided)"}[opts["test"]]
    if opts["test"] in ("bootstrap", "permutation"):
        base += f", {int(opts['n_resamples'])} resamples"
    return base


def _bootstrap_text(opts: dict[str, Any]) -> str:
    b = int(opts.get("bootstrap", 0))
    if b <= 0:
        return "off (no confidence intervals)"
    return (f"{b} replicates resampling the users of every fold and the pairs (with replacement); "
            "95% percentile intervals for DP; metric ranking by paired replicates")


def _noise_text(opts: dict[str, Any], primary_text: str) -> str:
    s = int(opts["noise_seeds"])
    if s <= 0:
        return "off"
    n = int(opts["noise_configs"])
    which = "the best configuration" if n == 1 else f"the {n} best configurations"
    return (f"{s} seeds of {which} by validation {primary_text} per stochastic algorithm, on "
            "every validation fold; A/A pairs tested with the DP's test")


def _settings(man: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    sp, ev = man["split"], man["evaluation"]
    primary_text = display_metric(opts["primary_metric"], int(opts["primary_cutoff"]))
    return {
        "Experiment": man["experiment"],
        "Data set": f"{man['dataset']['name']} ({man['dataset']['source']})",
        "Test split": f"{sp['method']} hold-out, train ratio {sp['train_ratio']}, "
                      f"users with < {sp['min_user_interactions']} interactions dropped ({sp['dropped_users']})",
        "Validation": f"{sp['folds']}-fold cross-validation on the training part ({sp['fold_method']})",
        "Split seed": sp["split_seed"],
        "Relevance threshold": f"{ev['relevance_rule']} (threshold {ev['relevance_threshold']})",
        "Metric variant": f"novelty metrics {ev['novelty_variant']}; binary-gain nDCG",
        "Protocol": ev["protocol"],
        "Cutoffs": ", ".join(str(c) for c in ev["cutoffs"]),
        "Pairs per scope (P)": opts["n_pairs"],
        "Pair-sampling seed": opts["seed"],
        "Statistical test": _test_text(opts),
        "Alpha": opts["alpha"],
        "Correction": _CORRECTION_TEXT[opts["correction"]],
        "Sakai DP": f"fraction of pairs with p < {opts['alpha']} (correction: {opts['correction']})",
        "Fold sd": "sample standard deviation across folds (ddof=1)",
        "Bootstrap": _bootstrap_text(opts),
        "Noise floor": _noise_text(opts, primary_text),
        "Hyperparameter importance": (
            f"fANOVA and PED-ANOVA (optuna) of the mean validation metric@{opts['primary_cutoff']}, "
            f"seed {opts['seed']}" if opts["importance"] else "off"),
        "Versions": ", ".join(f"{k} {v}" for k, v in sorted(man.get("versions", {}).items())),
    }


def _metric_ranking_section(result: AnalysisResult, opts: dict[str, Any], cutoff: int) -> str:
    """Markdown of the bootstrap metric ranking at ``cutoff``: per algorithm the metrics by DP
    with their 95% intervals, the matrix of P(row more discriminative than column) and one
    sentence per neighbouring pair of the ranking."""
    rank = result.ranking
    level = 1.0 - float(opts["alpha"])
    dp_all = result.dp[(result.dp["scope"] == "all") & (result.dp["cutoff"] == cutoff)]
    lines = [
        f"{int(opts['bootstrap'])} bootstrap replicates; each resamples the users of every fold and "
        "the sampled pairs with replacement and recomputes DP, the same draws for every metric, so "
        "replicates are paired. P(A more discriminative than B) = share of replicates with "
        f"DP*(A) < DP*(B). A difference is called significant when that share is at least "
        f"1 - alpha = {level:.0%}. Cutoff N = {cutoff}; every cutoff is in `metric_ranking.csv`.",
        "",
    ]
    for alg in dict.fromkeys(dp_all["algorithm"]):
        d = dp_all[dp_all["algorithm"] == alg].sort_values(["dp", "metric"], kind="stable")
        r = rank[(rank["algorithm"] == alg) & (rank["cutoff"] == cutoff)]
        if d.empty or r.empty:
            continue
        prob = {(a, b): float(p) for a, b, p in zip(r["metric_a"], r["metric_b"], r["p_a_better"],
                                                    strict=True)}
        ms = list(d["metric"])
        names = [display_metric(m, cutoff) for m in ms]
        lines += [f"*{display_algorithm(alg)}*", ""]
        header = ["Rank", "Metric", "DP", "95% CI"] + names
        lines.append("| " + " | ".join(header) + " |")
        lines.append("| ---: | :--- | ---: | :--- | " + " | ".join("---:" for _ in ms) + " |")
        for i, row in enumerate(d.itertuples(index=False)):
            cells = []
            for m in ms:
                if m == row.metric:
                    cells.append("–")
                    continue
                p = prob.get((row.metric, m), float("nan"))
                cells.append(f"**{p:.2f}**" if p >= level else f"{p:.2f}")
            lines.append(f"| {i + 1} | {names[i]} | {row.dp:.3f} | "
                         f"[{row.dp_ci_low:.3f}, {row.dp_ci_high:.3f}] | " + " | ".join(cells) + " |")
        lines += ["", "Cells: P(row metric more discriminative than column metric); bold: at least "
                  f"{level:.0%}.", ""]
        for a, b, na, nb in zip(ms[:-1], ms[1:], names[:-1], names[1:], strict=True):
            p = prob.get((a, b), float("nan"))
            verdict = "significant" if p >= level else "not significant"
            lines.append(f"- {na} is more discriminative than {nb} in {p:.0%} of bootstrap "
                         f"replicates ({verdict} at {level:.0%}).")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _fmt_params(store: Any, algorithm: str, config_id: int) -> str:
    cfg = store.configs(algorithm)
    row = cfg.loc[cfg["config_id"] == config_id]
    if row.empty:
        return f"config {config_id}"
    return f"config {config_id} ({params_text(row.iloc[0], store.hyperparameters(algorithm))})"


def _noise_section(store: Any, opts: dict[str, Any], result: AnalysisResult) -> str:
    """Markdown of the noise-floor section (setup, DP beside DP_floor, flagged metrics)."""
    man = store.manifest()
    det = deterministic_algorithms(man)
    det_text = ""
    if det:
        det_text = (", ".join(display_algorithm(a) for a in det)
                    + (" is" if len(det) == 1 else " are")
                    + " deterministic (training uses no seed; re-training gives identical "
                    "results): no noise floor.")
    if int(opts["noise_seeds"]) <= 0:
        return "Off (`noise_seeds = 0`)."
    table, floor = result.noise_floor, result.aa_floor
    if floor is None or floor.empty or table is None or table.empty:
        stoch = [a["name"] for a in man["algorithms"] if is_stochastic(a["type"])]
        if not stoch:
            return det_text or "No algorithm of this experiment depends on a seed."
        return ("No noise-floor runs in this results directory (`dptune run` trains them after "
                "the sweep when `noise_seeds > 0`). " + det_text).strip()
    primary = f"{display_metric(opts['primary_metric'], int(opts['primary_cutoff']))}"
    used = []
    for alg, ids in result.noise_configs.items():
        cfgs = ", ".join(_fmt_params(store, alg, c) for c in ids)
        used.append(f"{display_algorithm(alg)}: {cfgs}, {result.noise_seed_counts.get(alg, 0)} seeds")
    has_ci = "dp_ci_high" in table.columns
    rule = ("the 95% bootstrap interval of DP lies entirely below DP_floor" if has_ci
            else "DP < DP_floor")
    lines = [
        "The best configuration(s) of each stochastic algorithm by validation "
        f"{primary} were re-trained with different seeds on every validation fold; every pair of "
        "seeds is an A/A pair (same configuration, no real difference), tested over the fold's "
        "users with the DP's test. Per fold the A/A p-values are sorted decreasingly and "
        "resampled to the DP's P positions, then averaged over folds (dashed lines in Figure 1). "
        "DP_floor = P x mean A/A p-value (± P x its sd over folds); an exactly true null gives "
        f"P/2. A metric is clearly below its floor when {rule}; otherwise it is flagged: its "
        "configuration differences are not clearly larger than re-training noise.",
        "",
        "Runs: " + "; ".join(used) + ".",
        "",
    ]
    if det_text:
        lines += [det_text, ""]
    header = ["Algorithm", "Metric", "DP"] + (["95% CI"] if has_ci else []) + [
        "DP_floor ± sd", "DP / DP_floor", "Below floor?"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| :--- | :--- | ---: | " + ("---: | " if has_ci else "") + "---: | ---: | :--- |")
    t = table.assign(_m=[METRICS.index(m) if m in METRICS else 99
                         for m in table["metric"]])
    order = {a: i for i, a in enumerate(store.algorithms())}
    t = t.assign(_a=t["algorithm"].map(order)).sort_values(["_a", "cutoff", "_m"], kind="stable")
    for r in t.itertuples(index=False):
        cells = [display_algorithm(r.algorithm), display_metric(r.metric, r.cutoff),
                 f"{r.dp:.3f}"]
        if has_ci:
            cells.append(f"[{r.dp_ci_low:.3f}, {r.dp_ci_high:.3f}]")
        cells += [f"{r.dp_floor:.3f} ± {r.dp_floor_sd:.3f}", f"{r.ratio:.2f}",
                  "**no: flagged**" if r.flagged else "yes"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for alg in dict.fromkeys(t["algorithm"]):
        ta = t[t["algorithm"] == alg]
        bad = ta[ta["flagged"]]
        name = display_algorithm(alg)
        if bad.empty:
            lines.append(f"- {name}: every metric@N is clearly below its noise floor "
                         f"({len(ta)} of {len(ta)}).")
        else:
            listed = ", ".join(display_metric(m, c) for m, c in zip(bad["metric"],
                                                                          bad["cutoff"], strict=True))
            lines.append(f"- {name}: {len(bad)} of {len(ta)} metric@N not clearly below the noise "
                         f"floor: {listed}.")
        same = floor[(floor["algorithm"] == alg) & (floor["mean_p"] >= 1.0)]
        if len(same) == len(floor[floor["algorithm"] == alg]) and len(same):
            lines.append(f"- {name}: every A/A pair had identical per-user values (the model "
                         "ignores its seed in practice), so the floor is P.")
    lines += ["", "Data: `noise_floor.csv` (DP beside its floor), `noise_curves.csv`, "
              "`noise_pvalues.csv` (every A/A p-value)."]
    return "\n".join(lines)


def _ranked(imp: pd.DataFrame, evaluator: str) -> list[tuple[str, float]]:
    e = imp[imp["evaluator"] == evaluator]
    e = e[e["importance"].notna()]
    return sorted(((str(h), float(v)) for h, v in zip(e["hyperparameter"], e["importance"],
                                                      strict=True)), key=lambda t: (-t[1], t[0]))


def comparison_sentences(importance: pd.DataFrame, dp: pd.DataFrame, primary: tuple[str, int],
                         display: Mapping[str, str] | None = None) -> list[str]:
    """One computed sentence per algorithm at the primary metric@N: the top hyperparameter of each
    importance evaluator and of the two DP-based analyses, and where they agree or differ."""
    metric, cutoff = primary[0], int(primary[1])
    names = display or {}
    out = []
    imp = importance[(importance["metric"] == metric) & (importance["cutoff"] == cutoff)]
    for alg in dict.fromkeys(imp["algorithm"]):
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
        dom = dp_dominance(dp, alg, metric, cutoff)
        unit = "DP per pair" if dom["per_pair"] else "DP"
        if dom["table5"]:
            h, v, d, n = dom["table5"][0]
            picks["Table 5 (lowest best DP)"] = h
            parts.append(f"Table 5's lowest best DP is under {h}={_display_value(v)} "
                         f"(DP {d:.3f}, {n} pairs)")
        if dom["only"]:
            h, d, n = dom["only"][0]
            picks["one at a time (lowest DP)"] = h
            parts.append(f"one at a time, pairs differing in {h} only have the lowest DP "
                         f"({d:.3f}, {n} pairs)")
        if not picks:
            continue
        groups: dict[str, list[str]] = {}
        for who, h in picks.items():
            groups.setdefault(h, []).append(who)
        if len(groups) == 1:
            verdict = f"all {len(picks)} analyses put {next(iter(groups))} first"
        else:
            verdict = "they differ: " + "; ".join(
                f"{h} first for {', '.join(who)}" for h, who in groups.items())
        head = f"{names.get(alg, alg)}, {display_metric(metric, cutoff)}: "
        out.append(head + "; ".join(parts) + f" (comparisons by {unit}). Top choice: {verdict}.")
    return out


def importance_section(importance: pd.DataFrame, dp: pd.DataFrame, primary: tuple[str, int],
                       seed: int, display: Mapping[str, str] | None = None,
                       n_trials: Mapping[str, int] | None = None) -> str:
    """Markdown body of the report section: setup, a table per algorithm (importance of each
    hyperparameter for every metric at the primary cutoff, beside the DP dominance of the
    primary metric) and :func:`comparison_sentences`."""
    metric, cutoff = primary[0], int(primary[1])
    names = display or {}
    if importance.empty:
        return ("No algorithm has more than one free hyperparameter with more than one value: "
                "nothing to attribute.")
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
        ms = list(dict.fromkeys(a["metric"]))
        n = (n_trials or {}).get(alg)
        lines += [f"*{names.get(alg, alg)}*" + (f" ({n} configurations)" if n else ""), ""]
        header = ["Metric", "Evaluator"] + hps
        rows = []
        for m in ms:
            for ev in EVALUATORS:
                e = a[(a["metric"] == m) & (a["evaluator"] == ev)].set_index("hyperparameter")
                if e.empty:
                    continue
                vals = [e.at[h, "importance"] if h in e.index else float("nan") for h in hps]
                top = np.nanargmax(vals) if np.isfinite(vals).any() else -1
                cells = [("–" if not math.isfinite(v) else
                          (f"**{v:.3f}**" if i == top else f"{v:.3f}")) for i, v in enumerate(vals)]
                label = display_metric(m, cutoff)
                rows.append([f"**{label}**" if m == metric else label, EVALUATOR_NAMES[ev], *cells])
        dom = dp_dominance(dp, alg, metric, cutoff)
        t5 = {h: (v, d) for h, v, d, _n in dom["table5"]}
        one = {h: d for h, d, _n in dom["only"]}
        if t5:
            rows.append([display_metric(metric, cutoff), "DP, best h=v (Table 5)"]
                        + [(f"{t5[h][1]:.3f} (at {_display_value(t5[h][0])})" if h in t5 else "–")
                           for h in hps])
        if one:
            rows.append([display_metric(metric, cutoff), "DP, only h varies"]
                        + [(f"{one[h]:.3f}" if h in one else "–") for h in hps])
        lines.append("| " + " | ".join(header) + " |")
        lines.append("| :--- | :--- | " + " | ".join("---:" for _ in hps) + " |")
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    sentences = comparison_sentences(importance, dp, primary, names)
    lines += [f"- {s}" for s in sentences] or ["No comparison at the primary metric."]
    return "\n".join(lines)


def legacy_sections(store: Any, result: AnalysisResult) -> tuple[dict[str, Any],
                                                                  list[tuple[str, str]]]:
    """The settings table and the extra ``(title, markdown)`` sections of ``report.md``, exactly
    as the analysis stage assembled them before the report package owned them."""
    opts = result.options.to_dict()
    primary = result.primary
    sections: list[tuple[str, str]] = []
    if result.ranking is not None and not result.ranking.empty:
        sections.append(("Metric ranking (bootstrap)",
                         _metric_ranking_section(result, opts, primary[1])))
    sections.append(("Noise floor (A/A pairs)", _noise_section(store, opts, result)))
    if result.importance is not None:
        imp = result.importance
        n_trials = {a: len(store.configs(a)) for a in dict.fromkeys(imp["algorithm"])}
        body = importance_section(imp, result.dp, primary, int(opts["seed"]),
                                  display={a: display_algorithm(a) for a in store.algorithms()},
                                  n_trials=n_trials)
        sections.append(("Hyperparameter importance (optuna) beside DP dominance",
                         body + "\n\nData: `importance.csv`."))
    return _settings(dict(result.manifest), opts), sections
