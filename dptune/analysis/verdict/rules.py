"""The verdict: which metric to tune with, per algorithm, cutoff N and family of metrics
(verdict.csv). Numbers and metric lists only (lists of metric keys as lists, ``;``-joined in
verdict.csv); ``dptune.report`` writes the sentences.

Rules, per (algorithm, N, family) (families: :mod:`dptune.analysis.verdict.families`), on the
DP of scope ``all`` (dp.csv; every pair of the grid up to the cap, else a seeded sample):

- **too few pairs**: fewer than ``min_pairs`` pairs of configurations (default 10): no metric
  is recommended, nothing is called significant; the numbers are shown.
- **too few units**: a store holding a subset of its grid's units, where some of the full
  grid's pairs have no stand-in among the pairs tested (``unsampled_share > 0``,
  :mod:`dptune.analysis.dp.units`: with one round of a design, pairs of units sharing a
  value): the DP does not estimate the full grid's, so the row is treated as too few pairs.
- **recommended**: the metric with the lowest DP (mean p-value) among the metrics with evidence
  (not every p-value 1); equal values are ordered as :data:`dptune.vocab.METRICS` (the tie rule
  shared with Tables 3 and 4, :func:`dptune.analysis.verdict.families.order_metrics`); the
  metrics whose value equals it (within :data:`dptune.vocab.TIE_TOL`: equal in exact
  arithmetic) are listed as ``identical``. None when no metric has
  evidence.
- **less discriminative**: the metrics whose comparison with the recommended one is a claim
  that holds (comparisons.csv, kind ``metrics``: significant at family-wise level ``alpha``
  after the selection of the recommended metric, under every pair seed).
- **tied**: the other metrics with evidence. Without a bootstrap there is no comparison, and
  every other metric is tied.
- **choices**: the metrics the evidence does not separate, all equally good to tune with: the
  recommended one first, then the tied ones in DP order. A metric leaves the choices only by a
  claim that holds; the lowest DP alone never makes a metric the better choice. ``tested``
  says whether the metrics were compared at all (a bootstrap with replicates): when they were,
  two or more choices mean "no significant difference"; when not, "no difference tested".
- **claims dropped**: comparisons significant under the main pair seed but not under every
  seed.
- **not below the noise floor**: metrics not clearly below the A/A floor, as
  :func:`dptune.analysis.noise.compare_with_floor` decides: with intervals, unless the floor
  exceeds the DP per 25 pairs by more than ``sqrt(h_DP^2 + h_floor^2)`` (the DP's upper and
  the floor's half-widths; a floor of one fold has none, so every metric is flagged);
  without intervals, unless the floor exceeds the DP.
- **dominant hyperparameter**: the answer of dominance.csv for the recommended metric.
- **downstream**: how many configurations the family's metrics select, and which metrics'
  choices differ significantly from the recommended one's on the test split (downstream.csv).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dptune.analysis.options import DEFAULT_FAMILIES, MIN_PAIRS
from dptune.analysis.verdict.families import Families, family_groups, order_metrics
from dptune.errors import input_error
from dptune.vocab import tie_value

__all__ = ["VERDICT_COLUMNS", "recommend", "verdict_table"]

VERDICT_COLUMNS = [
    "algorithm", "cutoff", "family", "recommended", "identical", "mean_p", "dp_per_25",
    "ci_low", "ci_high", "n_pairs", "n_possible_pairs", "n_folds", "too_few_pairs",
    "unsampled_share", "less_discriminative", "tied", "choices", "tested", "no_evidence",
    "not_below_floor", "stability_repeats", "claims_dropped", "judge", "selected_configs", "downstream_differ",
    "dominant_hyperparameter", "dominance",
]

_NEED = ["algorithm", "scope", "metric", "cutoff", "mean_p", "dp_per_25", "ci_low", "ci_high",
         "n_pairs", "n_possible_pairs", "n_folds", "no_evidence"]


def recommend(dp: pd.DataFrame, comparisons: pd.DataFrame, families: Families = DEFAULT_FAMILIES,
              min_pairs: int = MIN_PAIRS) -> pd.DataFrame:
    """Per (algorithm, cutoff, family): ``recommended, identical, too_few_pairs,
    less_discriminative, tied, choices, tested, no_evidence, claims_dropped,
    stability_repeats`` (lists of metric keys as lists; module docstring). ``dp``: dp.csv;
    ``comparisons``: comparisons.csv."""
    missing = set(_NEED) - set(dp.columns)
    if missing:
        raise input_error("verdict", "dp", f"missing columns {sorted(missing)}")
    whole = dp[dp["scope"] == "all"]
    mets = comparisons[comparisons["kind"] == "metrics"] if len(comparisons) else comparisons
    rows = []
    for (alg, cutoff), g_all in whole.groupby(["algorithm", "cutoff"], sort=False):
        for family, members in family_groups(g_all["metric"], families):
            g = order_metrics(g_all[g_all["metric"].isin(members)])
            c = mets[(mets["algorithm"] == alg) & (mets["cutoff"] == int(cutoff))
                     & (mets["group"] == family)] if len(mets) else mets
            rows.append(_recommend_one(str(alg), int(cutoff), family, g, c, int(min_pairs)))
    return pd.DataFrame(rows)


def _recommend_one(alg: str, cutoff: int, family: str, g: pd.DataFrame, c: pd.DataFrame,
                   min_pairs: int) -> dict:
    none = g["no_evidence"].astype(bool)
    ev = g[~none]
    unsampled = float(g["unsampled_share"].max()) if "unsampled_share" in g else 0.0
    row = {"algorithm": alg, "cutoff": cutoff, "family": family, "recommended": "",
           "identical": [], "unsampled_share": unsampled,
           "too_few_pairs": bool(int(g["n_pairs"].max()) < min_pairs or unsampled > 0),
           "less_discriminative": [], "tied": [], "choices": [], "tested": False,
           "no_evidence": [str(m) for m in g.loc[none, "metric"]],
           "claims_dropped": 0, "stability_repeats": 0}
    if ev.empty or row["too_few_pairs"]:
        return row
    best = str(ev["metric"].iloc[0])
    others = [str(m) for m in ev["metric"].iloc[1:]]
    ties = tie_value(ev["mean_p"].to_numpy())
    same = ties == ties[0]
    identical = [str(m) for m, s in zip(ev["metric"], same, strict=True) if s and m != best]
    mine = c[c["a"] == best].set_index("b") if len(c) else pd.DataFrame()
    less = [m for m in others if m in mine.index and bool(mine.at[m, "held"])]
    tied = [m for m in others if m not in less]
    return row | {
        "recommended": best, "identical": identical, "less_discriminative": less,
        "tied": tied, "choices": [best, *tied], "tested": bool(len(mine)),
        "claims_dropped": int(mine["dropped"].sum()) if len(mine) else 0,
        "stability_repeats": int(mine["repeats"].max()) if len(mine) else 0}


def _floor_flags(dp: pd.DataFrame, floor: pd.DataFrame | None) -> dict[tuple, list[str]]:
    """(algorithm, cutoff) -> metrics not clearly below their A/A floor (``flagged`` of the
    noise table); absent when there is no floor."""
    out: dict[tuple, list[str]] = {}
    if floor is None or floor.empty:
        return out
    for r in floor.itertuples(index=False):
        out.setdefault((r.algorithm, int(r.cutoff)), [])
        if bool(r.flagged):
            out[(r.algorithm, int(r.cutoff))].append(str(r.metric))
    return out


def verdict_table(dp: pd.DataFrame, comparisons: pd.DataFrame, *,
                  floor: pd.DataFrame | None = None, downstream: pd.DataFrame | None = None,
                  dominance: pd.DataFrame | None = None, recommended: pd.DataFrame | None = None,
                  families: Families = DEFAULT_FAMILIES, min_pairs: int = MIN_PAIRS,
                  judges: Mapping[str, str] | None = None) -> pd.DataFrame:
    """verdict.csv: one row per (algorithm, cutoff, family), columns :data:`VERDICT_COLUMNS`
    (its lists of metric keys as lists: :func:`dptune.analysis.result.write_table` joins them
    with ``;``).

    ``dp``: dp.csv; ``comparisons``: comparisons.csv; ``recommended``: :func:`recommend` when
    the caller already has it; ``floor``: the noise floor beside DP (``algorithm, metric,
    cutoff, flagged``) or None; ``downstream``: downstream.csv; ``dominance``: dominance.csv;
    ``judges``: family -> the metric that judged it on the test split.
    """
    rec = recommend(dp, comparisons, families, min_pairs) if recommended is None else recommended
    flags = _floor_flags(dp, floor)
    whole = dp[dp["scope"] == "all"]
    rows = []
    for r in rec.to_dict("records"):
        alg, cutoff, family = r["algorithm"], int(r["cutoff"]), str(r["family"])
        g = whole[(whole["algorithm"] == alg) & (whole["cutoff"] == cutoff)]
        members = dict(family_groups(g["metric"], families)).get(family, [])
        g = g[g["metric"].isin(members)]
        num = g[g["metric"] == r["recommended"]]
        num = num.iloc[0] if not num.empty else None
        ds = pd.DataFrame() if downstream is None or downstream.empty else downstream[
            (downstream["algorithm"] == alg) & (downstream["cutoff"] == cutoff)
            & (downstream["family"] == family)]
        dom = pd.DataFrame() if dominance is None or dominance.empty or not r["recommended"] \
            else dominance[(dominance["algorithm"] == alg) & (dominance["cutoff"] == cutoff)
                           & (dominance["metric"] == r["recommended"])]
        rows.append({
            **r,
            **{k: float(num[k]) if num is not None else np.nan
               for k in ("mean_p", "dp_per_25", "ci_low", "ci_high")},
            "n_pairs": int(g["n_pairs"].max()),
            "n_possible_pairs": int(g["n_possible_pairs"].max()),
            "n_folds": int(g["n_folds"].max()),
            "not_below_floor": [m for m in flags.get((alg, cutoff), []) if m in members],
            "judge": (judges or {}).get(family, ""),
            "selected_configs": int(ds["config_id"].nunique()) if len(ds) else 0,
            "downstream_differ": [str(m) for m in ds.loc[ds["significant"].astype(bool),
                                                         "metric"]] if len(ds) else [],
            "dominant_hyperparameter": str(dom["hyperparameter"].iloc[0])
            if len(dom) and dom["answer"].iloc[0] == "dominant" else "",
            "dominance": str(dom["answer"].iloc[0]) if len(dom) else "",
        })
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
