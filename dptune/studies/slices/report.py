"""Markdown report of the slice study: settings, findings, DP and metrics per slice, rendered
through the report package's table model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.config import Experiment
from dptune.metrics import METRICS
from dptune.report import Cell, display_algorithm, display_metric
from dptune.studies._markdown import markdown_table, shown_path
from dptune.studies.slices.bins import KIND_NAMES, SLICE_KINDS
from dptune.studies.slices.figure import users_text
from dptune.vocab import SLICE_MIN_USERS, tie_value

__all__ = ["slices_report_md"]


def _f(x: Any, d: int = 3) -> str:
    v = float(x)
    return "–" if not np.isfinite(v) else f"{v:.{d}f}"


def _md(header: list[str], rows: list[list[Any]], numeric_from: int = 1,
        numeric_to: int | None = None) -> str:
    """Markdown table with columns ``numeric_from .. numeric_to - 1`` right-aligned."""
    stop = len(header) if numeric_to is None else numeric_to
    return markdown_table(header, rows, [numeric_from <= i < stop for i in range(len(header))])


def _dp_section(dpt: pd.DataFrame, alg: str, cutoff: int, min_users: int) -> str:
    """DP of every metric per slice of one algorithm at ``cutoff``; bold = lowest of the row.
    A slice that is not ranked (fewer than ``min_users`` users in a fold) is listed with its
    size and no DP."""
    d = dpt[(dpt["algorithm"] == alg) & (dpt["cutoff"] == cutoff)]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    header = ["Slice kind", "Slice", "users/fold"] + [display_metric(m, cutoff) for m in metrics] + ["lowest DP (no test)"]
    rows = []
    for kind in ["all", *SLICE_KINDS]:
        dk = d[d["slice_kind"] == kind].sort_values("bin")
        for s in dict.fromkeys(dk["slice"]):
            ds = dk[dk["slice"] == s].set_index("metric")
            size = users_text(float(ds["n_users_mean"].iloc[0]))
            if not bool(ds["ranked"].iloc[0]):
                rows.append([kind, s, size, *["–"] * len(metrics),
                             f"too few users (fewest in a fold: {int(ds['n_users_min'].iloc[0])} "
                             f"< {min_users})"])
                continue
            vals = list(tie_value(np.array([float(ds.loc[m, "dp_per_25"]) for m in metrics]),
                                  scale=25))
            lo = min(vals)
            cells = [Cell(_f(v), bold=v == lo) for v in vals]
            best = [display_metric(m) for m, v in zip(metrics, vals, strict=True) if v == lo]
            if len(best) == len(metrics) > 1:
                cells, best = [_f(v) for v in vals], ["(all tie)"]
            rows.append([kind, s, size, *cells, ", ".join(best)])
    return _md(header, rows, numeric_from=2, numeric_to=len(header) - 1)


def _metrics_section(mt: pd.DataFrame, alg: str, cutoff: int) -> str:
    """Mean of every metric and the miss rate per slice of one algorithm at ``cutoff``."""
    d = mt[(mt["algorithm"] == alg) & (mt["cutoff"] == cutoff)]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    header = ["Slice kind", "Slice", "n (fold × user)"] + [display_metric(m, cutoff) for m in metrics] + [f"miss rate@{cutoff}"]
    rows = []
    for kind in ["all", *SLICE_KINDS]:
        dk = d[d["slice_kind"] == kind].sort_values("bin")
        for s in dict.fromkeys(dk["slice"]):
            ds = dk[dk["slice"] == s].set_index("metric")
            rows.append([kind, s, str(int(ds["n_obs"].iloc[0])),
                         *[_f(ds.loc[m, "mean"]) for m in metrics], _f(ds["miss_rate"].iloc[0])])
    return _md(header, rows, numeric_from=2)


def _mean_rank_table(dpt: pd.DataFrame, cutoff: int) -> str:
    """Markdown: per algorithm, each metric's ``dp_rank`` averaged over the informative slices
    (ranked, and not every metric tied)."""
    d = dpt[(dpt["cutoff"] == cutoff) & dpt["slice_kind"].isin(SLICE_KINDS) & dpt["ranked"]]
    keys = ["algorithm", "slice_kind", "slice"]
    ties = d.groupby(keys)["dp_per_25"].transform(lambda s: tie_value(s, scale=25))
    informative = d.assign(_t=ties).groupby(keys)["_t"].transform("nunique") > 1
    d = d[informative]
    metrics = [m for m in METRICS if m in set(d["metric"])]
    rows = []
    for alg in dict.fromkeys(d["algorithm"]):
        da = d[d["algorithm"] == alg]
        ranks = da.groupby("metric")["dp_rank"].mean()
        lo = ranks.min()
        cells = [Cell(f"{ranks[m]:.2f}", bold=ranks[m] == lo) for m in metrics]
        rows.append([display_algorithm(alg), str(da[keys[1:]].drop_duplicates().shape[0]),
                     *cells])
    if not rows:
        return "(no ranked slice of a history or popularity kind)"
    header = ["Algorithm", "slices"] + [display_metric(m, cutoff) for m in metrics]
    return _md(header, rows, numeric_from=1)


def _findings(dpt: pd.DataFrame, cutoff: int, min_users: int) -> list[str]:
    """One sentence per (algorithm, slice kind): which metric has the lowest DP in most of the
    ranked slices (the others, and those where every metric ties, are counted apart)."""
    out = []
    d = dpt[dpt["cutoff"] == cutoff]
    for alg in dict.fromkeys(d["algorithm"]):
        ref = d[(d["algorithm"] == alg) & (d["slice_kind"] == "all")]
        ref_t = tie_value(ref["dp_per_25"], scale=25)
        ref_best = ref.loc[ref_t == ref_t.min(), "metric"].tolist()
        for kind in SLICE_KINDS:
            dk = d[(d["algorithm"] == alg) & (d["slice_kind"] == kind)]
            if dk.empty:
                continue
            wins: dict[str, int] = {}
            n_slices, n_tied, n_small = 0, 0, 0
            for _, g in dk.groupby("slice"):
                if not bool(g["ranked"].iloc[0]):
                    n_small += 1
                    continue
                t = tie_value(g["dp_per_25"], scale=25)
                if t.nunique() == 1:  # every metric ties
                    n_tied += 1
                    continue
                n_slices += 1
                for m in g.loc[t == t.min(), "metric"]:
                    wins[m] = wins.get(m, 0) + 1
            ranked = sorted(wins.items(), key=lambda kv: (-kv[1], METRICS.index(kv[0]) if kv[0] in METRICS else 99))
            text = ", ".join(f"{display_metric(m, cutoff)} in {k}/{n_slices}" for m, k in ranked)
            apart = ([f"{n_small} slice(s) with fewer than {min_users} users in a fold"]
                     if n_small else []) + ([f"{n_tied} slice(s) where every metric ties"]
                                           if n_tied else [])
            tied = f" ({' and '.join(apart)} left out)" if apart else ""
            out.append(f"- {display_algorithm(alg)}, {kind} slices: lowest DP (ties count for "
                       f"each) — {text or 'none'}{tied}; on all users: "
                       f"{', '.join(display_metric(m, cutoff) for m in ref_best)}.")
    return out


def slices_report_md(exp: Experiment, man: dict[str, Any], dataset: str, dpt: pd.DataFrame,
                     mt: pd.DataFrame, algs: list[str], folds: list[str], cutoff: int,
                     primary: tuple[str, int], base: int, pairs_src: str, test: str,
                     results_dir: str | Path, left_out: Sequence[str] = (),
                     min_users: int = SLICE_MIN_USERS) -> str:
    """``slices_report.md``: settings, findings, mean DP ranks, then per algorithm the DP and
    the metrics of every slice at ``cutoff``; ``left_out``: the store's algorithms of one
    configuration (no pairs, so no DP), named in the settings; ``min_users``: the fewest users
    per fold of a ranked slice (the ``ranked`` column of ``dpt`` says which are)."""
    ev = man.get("evaluation", {})
    L = [f"# Slice analysis: {dataset}", "",
         "Metrics, miss rate and discriminative power per user slice (slicing as in "
         "EvalRS 2022: log-scaled bins, no hand-picked thresholds). Method: "
         "`docs/seeds-and-slices.md`.", "", "## Settings", "",
         markdown_table(["Setting", "Value"], [
             ("Results", f"{shown_path(results_dir)} (experiment {shown_path(exp.source)}, "
                         f"{len(folds)} validation folds)"),
             ("Bins", f"log{base}: [{base}^e, {base}^(e+1)), plus [0, 1); per (fold, user)"),
             ("History slices", f"{KIND_NAMES['history']}, recomputed with sweep.prepare(experiment)"),
             ("Popularity slices", f"{KIND_NAMES['popularity']} (item popularity = training users "
              f"of the item in the fold). The store has per-user values, not ranked lists, so "
              f"metrics restricted to the relevant items of a popularity bin would need every "
              f"model retrained; users are sliced by what they hold out instead"),
             ("Pairs", f"{pairs_src} (scope all, the main analysis's pairs)"),
             ("Test", f"{test}; p-value curves averaged over folds; DP per 25 pairs = 25 × the "
              "mean p-value (the paper's DP when P = 25)"),
             ("Metrics per slice", f"configuration chosen by {display_metric(*primary)} on "
              f"validation; pooled over (fold, user)"),
             ("Slices ranked", f"those with at least {min_users} users in every fold; a "
              f"smaller one is listed without DP and left out of the findings, the ranks and "
              f"the figure (its DP is in slices_dp.csv: mostly the lack of users, 25 for an "
              f"empty slice)"),
             ("Miss rate", "fraction of users with no relevant item in the top N (precision@N = 0)"),
             ("Relevance", f"rating >= {ev.get('relevance_threshold', exp.evaluation.relevance_threshold)}"),
             *([("Left out", ", ".join(display_algorithm(a) for a in left_out)
                 + ": one configuration, so no pair to compare")] if left_out else []),
         ]),
         "", "![DP per slice](slices_figure.png)", "", "## Findings", ""]
    L += _findings(dpt, cutoff, min_users)
    L += ["", f"Mean rank of each metric's DP within a slice at N = {cutoff} (1 = most "
          f"discriminative; ranked history and popularity slices where not every metric ties):", "",
          _mean_rank_table(dpt, cutoff)]
    L += ["", "DP tends to grow for every metric as a slice gets smaller (a paired test on fewer users "
          "has less power), so read the ranking of metrics *within* a slice; `dp_rank` in "
          "`slices_dp.csv` is that ranking (1 = most discriminative). Within a slice no test "
          "compares the metrics: the lowest DP and the ranks describe, they claim nothing, and "
          "DPs a few hundredths apart are as good as equal (the main report's verdict tests "
          "the metrics on all users).", ""]
    for alg in algs:
        L += [f"## {display_algorithm(alg)}", "",
              f"DP per 25 pairs (25 × the mean p-value) per slice at N = {cutoff} (lower = more "
              f"discriminative; bold = lowest of the row; every row on the same "
              f"P = {int(dpt.loc[dpt['algorithm'] == alg, 'n_pairs'].max())} pairs):", "",
              _dp_section(dpt, alg, cutoff, min_users), "",
              f"Metrics and miss rate per slice at N = {cutoff} (config_id "
              f"{int(mt.loc[mt['algorithm'] == alg, 'config_id'].iloc[0])}):", "",
              _metrics_section(mt, alg, cutoff), ""]
    L += ["## Files", "", "`slices_dp.csv` (every metric@N, slice and algorithm; DP per 25 pairs "
          "(`dp_per_25`) with its fold sd band, the paper's sum over P pairs (`dp_sum`), "
          "Sakai fraction, whether ranked, rank), `slices_metrics.csv` (mean and miss rate), `slices_bins.csv` "
          "(users per bin and fold), `slices_figure.png/.svg`.", ""]
    return "\n".join(L)
