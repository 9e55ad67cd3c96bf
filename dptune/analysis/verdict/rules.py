"""The verdict: which metric to tune with, per algorithm, cutoff and family of metrics, and
what the evidence says.

Inputs are the robust DP (:mod:`dptune.analysis.dp.scale`) of every metric@N, the stability of
the bootstrap claims (:func:`dptune.analysis.dp.stability.claims`), optionally the A/A noise floor,
the downstream check (:mod:`dptune.analysis.verdict.downstream`) and the dominant hyperparameter.

Metrics are ranked within a **family** only (``families`` option; by default accuracy = nDCG,
Precision, Recall, MRR and novelty = EPC, EFD; metrics of no family form the family "other"):
an accuracy metric and a novelty metric measure different things, so a user tuning for
accuracy is never told to tune with a novelty metric. Rules, per (algorithm, cutoff N, family),
with ``level = 1 - alpha`` (95% by default):

- **too few pairs**: fewer than ``min_pairs`` pairs of configurations (default 10): no metric
  is recommended, nothing is called significant, no hyperparameter dominant; the numbers are
  shown ("too few pairs (k) to rank metrics").
- **recommended**: the metric with the lowest robust DP (``mean p``), among metrics that have
  evidence (not every p-value 1). **Tie rule** (:func:`order_metrics`, shared with Table 4):
  equal values are ordered as :data:`dptune.vocab.METRICS`, and the metrics whose value equals
  the recommended one exactly are listed as ``identical`` (a tie, stated as such). None when no
  metric has evidence ("no evidence").
- **less discriminative**: metrics M with ``P(recommended more discriminative than M) >= level``
  under every stability repeat (the bootstrap of the robust estimate).
- **tied**: the other metrics with evidence (the recommendation is not significantly better than
  them). Without a bootstrap nothing is significant and every other metric is listed as tied.
- **dropped claims**: metrics that would be "less discriminative" under repeat 0 but not under
  every repeat.
- **not below the noise floor**: metrics whose DP per 25 pairs (the upper end of its 95% interval
  when there is one) is not below ``25 x`` the mean A/A p-value of the noise floor.

Columns of the frame (:data:`VERDICT_COLUMNS`) are documented in ``docs/statistics.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dptune.analysis.options import DEFAULT_FAMILIES, MIN_PAIRS
from dptune.errors import input_error
from dptune.vocab import display_algorithm, display_metric, metric_rank

__all__ = ["VERDICT_COLUMNS", "ROBUST_COLUMNS", "Families", "family_groups", "family_judge",
           "family_judges", "order_metrics", "recommend", "verdict_frame", "verdict_text"]

#: ``(name, metrics)`` per family of metrics, as :class:`dptune.AnalysisOptions` holds them.
Families = Sequence[tuple[str, Sequence[str]]]

#: Columns of the robust DP table the verdict reads.
ROBUST_COLUMNS = ["algorithm", "metric", "cutoff", "mean_p", "dp_at_25", "ci_low", "ci_high",
                  "n_pairs", "n_possible_pairs", "n_folds", "no_evidence"]

VERDICT_COLUMNS = [
    "algorithm", "cutoff", "family", "recommended", "identical", "dp_at_25", "ci_low",
    "ci_high", "n_pairs", "n_possible_pairs", "n_folds", "too_few_pairs", "less_discriminative",
    "tied", "no_evidence", "not_below_floor", "stability_repeats", "claims_dropped", "judge",
    "selected_configs", "downstream_differ", "dominant_hyperparameter", "dominance_agreement",
    "text",
]

#: Name of the family of the metrics that no configured family holds.
OTHER_FAMILY = "other"


def _join(items: list[str]) -> str:
    return ";".join(items)


def family_groups(metrics: Iterable[str], families: Families = DEFAULT_FAMILIES
                  ) -> list[tuple[str, list[str]]]:
    """``(family, its metrics among metrics)`` in the configured order, metrics in
    :data:`dptune.vocab.METRICS` order; families without any of them left out; metrics of no
    family in a last family :data:`OTHER_FAMILY`."""
    present = sorted(dict.fromkeys(str(m) for m in metrics), key=metric_rank)
    out, used = [], set()
    for name, members in families:
        ms = [m for m in present if m in set(members)]
        used.update(ms)
        if ms:
            out.append((str(name), ms))
    rest = [m for m in present if m not in used]
    if rest:
        out.append((OTHER_FAMILY, rest))
    return out


def family_judge(family: str, metrics: Sequence[str], primary_metric: str,
                 families: Families = DEFAULT_FAMILIES) -> str:
    """The metric that judges a family's choices on the test split: the primary metric when it
    is in the family, else the family's first metric as configured (accuracy: nDCG, novelty:
    EPC by default), else (family "other") its first metric present."""
    if primary_metric in metrics:
        return primary_metric
    for name, members in families:
        if name == family:
            for m in members:
                if m in metrics:
                    return str(m)
    return str(metrics[0])


def family_judges(families: Families, primary_metric: str) -> list[str]:
    """The judge of every configured family (:func:`family_judge`), in family order."""
    return [family_judge(name, list(ms), primary_metric, families) for name, ms in families]


def order_metrics(frame: pd.DataFrame, value: str = "mean_p") -> pd.DataFrame:
    """Rows of one (algorithm, cutoff) sorted by ``value`` ascending (lower = more
    discriminative), equal values in :data:`dptune.vocab.METRICS` order: the one tie rule of the
    verdict and Table 4."""
    return (frame.assign(_o=frame["metric"].map(metric_rank))
            .sort_values([value, "_o"], kind="stable").drop(columns="_o"))


def recommend(robust: pd.DataFrame, claims: pd.DataFrame | None,
              families: Families = DEFAULT_FAMILIES, min_pairs: int = MIN_PAIRS
              ) -> pd.DataFrame:
    """Per (algorithm, cutoff, family): ``recommended, identical, too_few_pairs,
    less_discriminative, tied, no_evidence, claims_dropped, stability_repeats`` (lists as
    ``;``-joined metric names, see the module docstring). ``claims`` as returned by
    :func:`dptune.analysis.dp.stability.claims`, or None (no bootstrap)."""
    missing = set(ROBUST_COLUMNS) - set(robust.columns)
    if missing:
        raise input_error("verdict", "robust", f"missing columns {sorted(missing)}")
    rows = []
    for (alg, cutoff), whole in robust.groupby(["algorithm", "cutoff"], sort=False):
        for family, members in family_groups(whole["metric"], families):
            g = order_metrics(whole[whole["metric"].isin(members)])
            rows.append(_recommend_one(str(alg), int(cutoff), family, g, claims,
                                       int(min_pairs)))
    return pd.DataFrame(rows)


def _recommend_one(alg: str, cutoff: int, family: str, g: pd.DataFrame,
                   claims: pd.DataFrame | None, min_pairs: int) -> dict:
    ev = g[~g["no_evidence"].astype(bool)]
    none = [str(m) for m in g.loc[g["no_evidence"].astype(bool), "metric"]]
    row = {"algorithm": alg, "cutoff": cutoff, "family": family, "recommended": "",
           "identical": "", "too_few_pairs": bool(int(g["n_pairs"].max()) < min_pairs),
           "less_discriminative": "", "tied": "", "no_evidence": _join(none),
           "claims_dropped": 0, "stability_repeats": 0}
    if ev.empty or row["too_few_pairs"]:
        return row
    best = str(ev["metric"].iloc[0])
    others = [str(m) for m in ev["metric"].iloc[1:]]
    same = ev["mean_p"].to_numpy() == ev["mean_p"].iloc[0]
    identical = [str(m) for m, s in zip(ev["metric"], same, strict=True) if s and m != best]
    less: list[str] = []
    dropped = 0
    repeats = 0
    if claims is not None and not claims.empty:
        c = claims[(claims["algorithm"] == alg) & (claims["cutoff"] == cutoff)
                   & (claims["metric_a"] == best)].set_index("metric_b")
        if not c.empty:
            repeats = int(c["repeats"].max())
        for m in others:
            if m in c.index and bool(c.at[m, "held"]):
                less.append(m)
            elif m in c.index and bool(c.at[m, "dropped"]):
                dropped += 1
    tied = [m for m in others if m not in less]
    return row | {"recommended": best, "identical": _join(identical),
                  "less_discriminative": _join(less), "tied": _join(tied),
                  "claims_dropped": dropped, "stability_repeats": repeats}


def _floor_flags(robust: pd.DataFrame, floor: pd.DataFrame | None) -> dict[tuple, list[str]]:
    """(algorithm, cutoff) -> metrics not clearly below ``25 x`` their A/A mean p-value."""
    out: dict[tuple, list[str]] = {}
    if floor is None or floor.empty:
        return out
    f = floor.set_index(["algorithm", "metric", "cutoff"])["mean_p"]
    for r in robust.itertuples(index=False):
        key = (r.algorithm, r.metric, int(r.cutoff))
        if key not in f.index:
            continue
        high = r.ci_high if np.isfinite(r.ci_high) else r.dp_at_25
        out.setdefault((r.algorithm, int(r.cutoff)), [])
        if not high < 25.0 * float(f.loc[key]):
            out[(r.algorithm, int(r.cutoff))].append(str(r.metric))
    return out


def _names(metrics: str, cutoff: int) -> list[str]:
    return [display_metric(m, cutoff) for m in metrics.split(";") if m]


def _pct(p: float) -> str:
    return f"{100.0 * p:.0f}%"


def _tie_evidence(metric: str, best: str, g: pd.DataFrame, prob: Mapping[str, float],
                  cutoff: int) -> str:
    """``, P = 62%`` for a tied metric; ``, identical to nDCG@1`` when its mean p-value equals
    the recommended metric's exactly and it is never ahead in the bootstrap (P = 0): the two
    metrics gave the same p-value on every pair (e.g. Precision@1 = nDCG@1 = MRR@1 with binary
    relevance), so "P = 0%" would read as evidence where there is identity."""
    if metric not in prob:
        return ""
    if prob[metric] == 0.0 and g.loc[metric, "mean_p"] == g.loc[best, "mean_p"]:
        return f", identical to {display_metric(best, cutoff)}"
    return f", P = {_pct(prob[metric])}"


def _ci_label(g: pd.DataFrame) -> str:
    """`` [95% CI]`` when the numbers carry their interval, else nothing."""
    return " [95% CI]" if np.isfinite(g["ci_low"].to_numpy(dtype=float)).any() else ""


def _numbers(g: pd.DataFrame, cutoff: int) -> str:
    """``nDCG@10 2.31 [1.20, 3.40], ...``: each metric's DP per 25 pairs with its interval."""
    out = []
    for m, r in g.iterrows():
        ci = f" [{r.ci_low:.2f}, {r.ci_high:.2f}]" if np.isfinite(r.ci_low) else ""
        out.append(f"{display_metric(str(m), cutoff)} {r.dp_at_25:.2f}{ci}")
    return ", ".join(out)


def verdict_text(row: Mapping, robust: pd.DataFrame, claims: pd.DataFrame | None,
                 level: float, floor_known: bool, downstream: str = "",
                 dominance: str = "", min_pairs: int = MIN_PAIRS) -> str:
    """The plain sentences of one verdict row (each claim with its numbers)."""
    alg, cutoff = row["algorithm"], int(row["cutoff"])
    family = str(row.get("family") or "")
    head = f"{display_algorithm(alg)}, N = {cutoff}" + (f", {family}" if family else "") + ": "
    g = robust[(robust["algorithm"] == alg) & (robust["cutoff"] == cutoff)].set_index("metric")
    members = [m for m in g.index if family == "" or m in _row_metrics(row)]
    g = order_metrics(g.loc[members].reset_index()).set_index("metric")
    if bool(row.get("too_few_pairs")):
        return (head + f"too few pairs ({int(g['n_pairs'].max())}) to rank metrics (the "
                f"minimum is min_pairs = {int(min_pairs)}), so no metric is recommended and no "
                f"difference is claimed; DP per 25 pairs{_ci_label(g)}: {_numbers(g, cutoff)}.")
    if not row["recommended"]:
        return (head + "no evidence: every p-value is 1 for every metric (identical "
                "configurations or too few users), so no metric can be recommended.")
    best = row["recommended"]
    r = g.loc[best]
    pairs = (f"all {int(r.n_pairs)} pairs" if int(r.n_pairs) >= int(r.n_possible_pairs)
             else f"{int(r.n_pairs)} of {int(r.n_possible_pairs)} pairs")
    ci = (f", 95% CI [{r.ci_low:.2f}, {r.ci_high:.2f}]" if np.isfinite(r.ci_low) else "")
    s = [f"tune with {display_metric(best, cutoff)} (DP per 25 pairs {r.dp_at_25:.2f}{ci}; "
         f"mean p {r.mean_p:.3f} over {pairs}, {int(r.n_folds)} "
         f"fold{'' if int(r.n_folds) == 1 else 's'})."]
    prob = {}
    if claims is not None and not claims.empty:
        c = claims[(claims["algorithm"] == alg) & (claims["cutoff"] == cutoff)
                   & (claims["metric_a"] == best)]
        prob = dict(zip(c["metric_b"], c["p_min"], strict=True))
    reps = int(row["stability_repeats"])
    seeds = f"under all {reps} pair seeds" if reps > 1 else "under one pair seed"
    others = [m for m in g.index if m != best]
    if claims is None:
        if others:
            s.append("No bootstrap (off, or a test other than the t-test: see Bootstrap in the "
                     "settings), so no claim of significance; the other metrics are not ranked.")
    else:
        less = [m for m in row["less_discriminative"].split(";") if m]
        if less:
            items = ", ".join(f"{display_metric(m, cutoff)} (DP per 25 pairs {g.loc[m, 'dp_at_25']:.2f}, "
                              f"P = {_pct(prob[m])})" for m in less)
            s.append(f"Significantly less discriminative (P >= {_pct(level)} {seeds}): {items}.")
        tied = [m for m in row["tied"].split(";") if m]
        if tied:
            items = ", ".join(f"{display_metric(m, cutoff)} (DP per 25 pairs {g.loc[m, 'dp_at_25']:.2f}"
                              + _tie_evidence(m, best, g, prob, cutoff) + ")" for m in tied)
            s.append(f"Statistically tied with it: {items}.")
        if int(row["claims_dropped"]):
            s.append(f"{int(row['claims_dropped'])} claim(s) dropped: significant under the first "
                     "pair seed but not under every seed.")
    if row["no_evidence"]:
        s.append("No evidence (every p-value 1): "
                 + ", ".join(_names(row["no_evidence"], cutoff)) + ".")
    if floor_known:
        nb = _names(row["not_below_floor"], cutoff)
        s.append("Not clearly below the A/A noise floor: " + ", ".join(nb) + "." if nb
                 else "Every metric is clearly below the A/A noise floor.")
    if downstream:
        s.append(downstream)
    if dominance:
        s.append(dominance)
    return head + " ".join(s)


def _row_metrics(row: Mapping) -> set[str]:
    """Every metric a verdict row speaks of (its family's metrics present in the robust DP)."""
    cols = ("recommended", "identical", "less_discriminative", "tied", "no_evidence",
            "_members")
    return {m for c in cols for m in str(row.get(c) or "").split(";") if m}


def verdict_frame(robust: pd.DataFrame, claims: pd.DataFrame | None, level: float, *,
                  floor: pd.DataFrame | None = None,
                  downstream: Mapping[tuple[str, int, str], tuple[int, str, str]] | None = None,
                  dominance: Mapping[tuple[str, int, str], tuple[str, str, str]] | None = None,
                  recommended: pd.DataFrame | None = None,
                  families: Families = DEFAULT_FAMILIES, min_pairs: int = MIN_PAIRS,
                  judges: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The verdict, one row per (algorithm, cutoff, family), columns :data:`VERDICT_COLUMNS`.

    ``recommended``: :func:`recommend` ``(robust, claims, families, min_pairs)`` when the
    caller already has it. ``floor``: ``algorithm, metric, cutoff, mean_p`` (A/A mean p-value)
    or None; ``downstream``: (algorithm, cutoff, family) -> ``(selected configurations,
    ;-joined metrics whose selection differs significantly on the test split, sentence)``;
    ``dominance``: (algorithm, cutoff, family) -> ``(hyperparameter, agreement, sentence)``;
    ``judges``: family -> the metric that judged it on the test split.
    """
    if not 0.0 < float(level) < 1.0:
        raise input_error("verdict", "level", f"must be in (0, 1), got {level}")
    rec = recommend(robust, claims, families, min_pairs) if recommended is None else recommended
    flags = _floor_flags(robust, floor)
    rows = []
    for r in rec.to_dict("records"):
        key = (r["algorithm"], int(r["cutoff"]), str(r["family"]))
        g = robust[(robust["algorithm"] == key[0]) & (robust["cutoff"] == key[1])]
        members = dict(family_groups(g["metric"], families)).get(key[2], [])
        g = g[g["metric"].isin(members)]
        best = g[g["metric"] == r["recommended"]]
        num = best.iloc[0] if not best.empty else None
        ds = (downstream or {}).get(key)
        dom = (dominance or {}).get(key)
        row = {
            **r,
            "dp_at_25": float(num["dp_at_25"]) if num is not None else np.nan,
            "ci_low": float(num["ci_low"]) if num is not None else np.nan,
            "ci_high": float(num["ci_high"]) if num is not None else np.nan,
            "n_pairs": int(g["n_pairs"].max()),
            "n_possible_pairs": int(g["n_possible_pairs"].max()),
            "n_folds": int(g["n_folds"].max()),
            "not_below_floor": _join([m for m in flags.get(key[:2], []) if m in members]),
            "judge": (judges or {}).get(key[2], ""),
            "selected_configs": int(ds[0]) if ds else 0,
            "downstream_differ": ds[1] if ds else "",
            "dominant_hyperparameter": dom[0] if dom else "",
            "dominance_agreement": dom[1] if dom else "",
        }
        row["text"] = verdict_text({**row, "_members": _join(members)}, robust, claims, level,
                                   key[:2] in flags, ds[2] if ds else "", dom[2] if dom else "",
                                   min_pairs)
        rows.append(row)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
