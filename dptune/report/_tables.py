"""The paper's tables as :class:`~dptune.report._table.Table` objects (Anelli et al., RecSys 2019).

- :func:`table1`: data set statistics (paper Table 1).
- :func:`table3`: DP of every metric, scope ``all``; the verdict's recommended metric of each
  family bold, the family's highest DP underlined.
- :func:`table4`: per family, the verdict's recommended and the least discriminative metric,
  best DP, best DP + sd, worst DP (paper Table 4).
- :func:`table5`: DP among configurations sharing one hyperparameter value (paper Table 5).
- :func:`one_at_a_time_table`: DP of pairs that differ in one hyperparameter only.

Every DP is **DP per 25 pairs** (``dp_per_25`` of dp.csv: 25 × the mean p-value of the row's P
pairs, the paper's DP when P = 25), with P in every row and the 95% interval where the analysis
computed one. A mark (bold, underline) needs at least ``min_pairs`` pairs: fewer are shown, never
ranked. On a grid sample (a store holding some of its grid's units), a DP whose scope has pairs
of a kind the units do not hold (``unsampled_share`` > 0) is marked ``§``, never ranked, and its
table's CSV gains ``unsampled_share`` (Tables 3 and 5; a one-at-a-time scope holds one kind of
pair only, so it is either covered or has no pair at all). CSV frames keep raw keys and full
precision; Markdown/LaTeX use display names and 3 decimals.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dptune.analysis.options import MIN_PAIRS
from dptune.analysis.result import MetricFamilies
from dptune.report._format import (
    MISSING,
    UNSAMPLED,
    flag,
    fmt,
    is_missing,
    one_fold,
    ordered_algorithms,
    ordered_hyperparameters,
    ordered_metrics,
    ordered_values,
    pct,
    shown_algorithm,
    shown_hyperparameter,
    shown_metric,
    shown_value,
    unsampled_note,
    unsampled_share,
    verdict_choices,
    verdict_keys,
)
from dptune.report._inputs import (
    DATASET_INPUT,
    DP_INPUT,
    interval_text,
    only_scopes,
    pairs_note,
    require,
    scope_all,
    value_scopes,
)
from dptune.report._table import Block, Cell, Table, marked_cells
from dptune.vocab import (
    METRICS,
    metric_rank,
    tie_value,
    value_norm,
)

__all__ = ["table1", "table3", "table4", "table5", "one_at_a_time_table", "best_worst"]

#: Marks a Table 5 group with fewer pairs than ``min_pairs``: shown, not ranked.
TOO_FEW = "‡"
#: Table 5's DP cell of a grid value that no configuration of the results has.
NOT_RUN = "not run"


def _no_evidence(values: pd.DataFrame) -> pd.Series:
    """True where every p-value of the row is 1 (dp.csv's ``no_evidence``)."""
    return values["no_evidence"].fillna(False).astype(bool)

def _by_dp(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows by ``mean_p`` ascending (lower = more discriminative), equal values (the tie rule's,
    :func:`dptune.vocab.tie_value`) in :data:`dptune.vocab.METRICS` order: the order in which
    the verdict states metrics (:func:`dptune.analysis.verdict.families.order_metrics`), for a
    table shown without one."""
    return (frame.assign(_o=frame["metric"].map(metric_rank), _v=_tie(frame))
            .sort_values(["_v", "_o"], kind="stable").drop(columns=["_o", "_v"]))


def _tie(frame: pd.DataFrame) -> pd.Series:
    """``mean_p`` as the tie rule compares it (:func:`dptune.vocab.tie_value`)."""
    return tie_value(frame["mean_p"])


def _tied_with(frame: pd.DataFrame, metric: str) -> pd.Series:
    """True for the rows of ``frame`` whose ``mean_p`` is ``metric``'s under the tie rule
    (its own row included)."""
    ties = _tie(frame)
    return ties == ties[frame["metric"] == metric].iloc[0]


def best_worst(values: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """Best (lowest DP) and worst (highest DP) rows of one group, by the verdict's tie rule
    (equal values in :data:`dptune.vocab.METRICS` order, :func:`_by_dp`). The best is a metric
    with evidence (not every p-value 1); None when no metric has evidence."""
    v = values.dropna(subset=["dp_per_25"])
    if v.empty:
        return None
    v = _by_dp(v.assign(_ne=_no_evidence(v)))
    ev = v[~v["_ne"]]
    if ev.empty:
        return None
    best = ev.iloc[0]
    ties = _tie(v)
    rest = v[ties > ties[v["metric"] == best["metric"]].iloc[0]]
    worst = rest.iloc[-1] if len(rest) else best
    return best.drop("_ne"), worst.drop("_ne")


def _n_pairs_text(values: pd.Series) -> str:
    """P of a group of rows: one number, or ``lo-hi`` when the rows differ."""
    n = pd.to_numeric(values, errors="coerce").dropna()
    if n.empty:
        return MISSING
    lo, hi = int(n.min()), int(n.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _dp_cell(value: str, row: pd.Series | None, mark: str = "", bold: bool = False,
             underline: bool = False) -> Cell:
    """A DP cell: ``value`` (a formatted DP) with the interval of ``row``'s ``ci_low`` and
    ``ci_high``, when it has them, as the cell's detail; ``mark`` follows the interval, or the
    value when there is none."""
    interval = interval_text(row).strip()
    if not interval:
        return Cell(value + mark, bold=bold, underline=underline, numeric=True)
    return Cell(value, bold=bold, underline=underline, numeric=True, detail=interval + mark)


def _ci_columns(dp: pd.DataFrame) -> bool:
    """Whether ``dp`` carries an interval (``ci_low``/``ci_high`` with a value somewhere)."""
    return {"ci_low", "ci_high"} <= set(dp.columns) and bool(dp["ci_low"].notna().any())


def _left_out_note(dp: pd.DataFrame, shown: set[str]) -> list[str]:
    """Say which algorithms with a DP (scope ``all``) a per-hyperparameter table leaves out, and
    why: its scopes exist only for algorithms with two or more free hyperparameters."""
    missing = [a for a in ordered_algorithms(scope_all(dp)["algorithm"].unique()) if a not in shown]
    if not missing:
        return []
    names = ", ".join(shown_algorithm(a) for a in missing)
    verb = "is" if len(missing) == 1 else "are"
    return [
        f"{names} {verb} not in this table: fewer than two free hyperparameters, so no pair "
        "of configurations shares the value of one hyperparameter while differing in another "
        "(with a single hyperparameter every pair differs in it alone: that is Table 3)."
    ]


def table1(datasets: pd.DataFrame | None) -> Table:
    """Table 1: data set statistics (users, items, ratings, sparsity as a percent, 2 decimals)."""
    if datasets is None:
        datasets = pd.DataFrame(columns=list(DATASET_INPUT))
    ds = require(datasets, DATASET_INPUT, "datasets")
    header = [Cell("Dataset"), Cell("Users"), Cell("Items"), Cell("Ratings"), Cell("Sparsity")]
    rows = []
    for r in ds.itertuples(index=False):
        rows.append(
            [
                Cell(str(r.dataset)),
                Cell(fmt(r.users, 0), numeric=True),
                Cell(fmt(r.items, 0), numeric=True),
                Cell(fmt(r.ratings, 0), numeric=True),
                Cell(pct(r.sparsity, 2), numeric=True),
            ]
        )
    csv = ds[list(DATASET_INPUT)].reset_index(drop=True)
    return Table(
        "table1",
        "Data set statistics (sparsity = 1 - ratings / (users × items)).",
        [Block(header, rows)] if rows else [],
        csv,
        number="Table 1",
    )


def _marks(c: pd.DataFrame, vrows: list[dict], families: MetricFamilies | None,
           min_pairs: int) -> tuple[set[str], set[str]]:
    """``(bold, underlined)`` metrics of one (algorithm, cutoff) of Table 3: per family, the
    verdict's choices (bold: the recommended metric and every metric not significantly less
    discriminative than it, :func:`~dptune.report._format.verdict_choices`) and the highest DP
    among the family's other metrics with evidence (underlined: those are significantly less
    discriminative); nothing below ``min_pairs`` pairs or without evidence."""
    bold, under = set(), set()
    groups = families.of(c["metric"]) if families is not None else [("", list(c["metric"]))]
    by_family = {str(r.get("family", "")): r for r in vrows}
    for family, members in groups:
        g = c[c["metric"].isin(members) & ~_no_evidence(c)].dropna(subset=["dp_per_25"])
        r = by_family.get(family)
        if g.empty or int(g["n_pairs"].max()) < int(min_pairs) or (r is None and len(g) < 2):
            continue  # without a verdict, one value is not "the best" of anything
        if r is not None:
            best = set(verdict_choices(r))
            if not best:
                continue
        else:
            bw = best_worst(g)
            if bw is None:
                continue
            best = {str(m) for m in g.loc[_tied_with(g, bw[0]["metric"]), "metric"]}
        bold |= best
        rest = g[~g["metric"].isin(best)]
        if len(rest):
            under |= {str(m) for m in rest.loc[_tie(rest) == _tie(rest).max(), "metric"]}
    return bold, under


def table3(dp: pd.DataFrame, verdict: pd.DataFrame | None = None,
           families: MetricFamilies | None = None, min_pairs: int = MIN_PAIRS) -> Table:
    """Table 3: DP per 25 pairs per (algorithm, cutoff) x metric over the whole grid (scope
    ``all``), P of the row beside it, and each value's 95% interval when ``dp`` has one.

    Bold: the most discriminative metrics of each family of ``families`` (the result's
    :attr:`~dptune.analysis.result.AnalysisResult.metric_families`): when ``verdict`` is
    given, the verdict's choices (its recommended metric and every metric not significantly
    less discriminative than it: equal choices, not losers); else the lowest DP by the same tie
    rule. Underlined: the highest DP among the family's other metrics. Nothing is marked in a row with fewer
    than ``min_pairs`` pairs or without evidence. CSV columns: ``algorithm, cutoff, n_pairs``
    and one column per metric key in the paper's order (DP per 25 pairs), then
    ``<metric>_ci_low, <metric>_ci_high`` when there is an interval.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = scope_all(dp)
    has_ci = _ci_columns(sub)
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("N"), Cell("P")] + [
        Cell(f"{shown_metric(m)}@N") for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    dead: list[str] = []
    few: list[str] = []
    shares: list[float] = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            c = a[a["cutoff"] == cutoff]
            rows_c = c.set_index("metric")
            values = [rows_c["dp_per_25"].get(m, np.nan) for m in metrics]
            vrows = [] if verdict is None or verdict.empty else verdict[
                (verdict["algorithm"] == alg) & (verdict["cutoff"] == cutoff)].to_dict("records")
            share = float(unsampled_share(c).max())
            bold, under = _marks(c, vrows, families, min_pairs) if share == 0 else (set(), set())
            mark = UNSAMPLED if share > 0 else ""
            cells = [_dp_cell(fmt(v), rows_c.loc[m] if m in rows_c.index else None,
                              mark if m in rows_c.index else "", bold=m in bold,
                              underline=m in under)
                     for m, v in zip(metrics, values, strict=True)]
            shares.append(share)
            if _no_evidence(c).all():
                dead.append(f"{shown_algorithm(alg)} at N = {int(cutoff)}")
            elif int(c["n_pairs"].max()) < int(min_pairs):
                few.append(f"{shown_algorithm(alg)} at N = {int(cutoff)}")
            rows.append(
                [Cell(shown_algorithm(alg)), Cell(str(int(cutoff)), numeric=True),
                 Cell(_n_pairs_text(rows_c["n_pairs"]), numeric=True)] + cells
            )
            rec = {"algorithm": alg, "cutoff": int(cutoff),
                   "n_pairs": int(rows_c["n_pairs"].max())} | {
                m: float(v) if not is_missing(v) else np.nan
                for m, v in zip(metrics, values, strict=True)
            }
            if has_ci:
                for m in metrics:
                    for end in ("ci_low", "ci_high"):
                        rec[f"{m}_{end}"] = (float(rows_c.at[m, end]) if m in rows_c.index
                                             else np.nan)
            records.append(rec)
        rules.add(len(rows) - 1)
    ci_cols = [f"{m}_{e}" for m in metrics for e in ("ci_low", "ci_high")] if has_ci else []
    csv = pd.DataFrame.from_records(records,
                                    columns=["algorithm", "cutoff", "n_pairs", *metrics, *ci_cols])
    if any(shares):  # a grid sample that does not cover the scope: the share it misses
        csv["unsampled_share"] = shares
    by_family = families is not None
    caption = (
        "Discriminative power over the whole grid as DP per 25 pairs (25 × the mean "
        "p-value of the row's P pairs; the paper's DP when P = 25; lower is more "
        f"discriminative); {pairs_note(sub)}"
        + ("; in brackets its 95% bootstrap interval" if has_ci else "")
        + ((". Bold: the metrics of each family the verdict recommends: the lowest DP and every "
            "metric not significantly less discriminative than it (equal choices); underlined: "
            "the highest DP among the family's significantly less discriminative metrics."
            if has_ci else
            ". Bold: the metrics of each family the verdict offers, every metric with evidence "
            "(no interval, so no difference is tested and none is underlined).")
           if by_family else ". Bold: lowest DP of the row; underlined: highest.")
    )
    notes = ([f"No evidence ({'; '.join(dead)}): every p-value is 1, so no metric is the most "
              "or least discriminative and none is marked."] if dead else [])
    if few:
        notes.append(f"Too few pairs ({'; '.join(few)}): fewer than min_pairs = "
                     f"{int(min_pairs)} pairs of configurations, so no metric is marked.")
    notes += unsampled_note(shares)
    return Table("table3", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv,
                 notes, number="Table 3")


def _verdict_row(verdict: pd.DataFrame | None, alg: str, cutoff: int,
                 family: str) -> dict | None:
    if verdict is None or verdict.empty or not family or "family" not in verdict.columns:
        return None
    hit = verdict[(verdict["algorithm"] == alg) & (verdict["cutoff"] == cutoff)
                  & (verdict["family"] == family)]
    return hit.iloc[0].to_dict() if len(hit) else None


def pick(values: pd.DataFrame, vrow: dict | None, cutoff: int
         ) -> tuple[str, pd.Series | None, list[str], pd.Series | None, list[str]]:
    """``(best text, best row, metrics tied with it, worst row, metrics tied with it)`` of one
    family: the verdict's recommendation when there is a verdict row (Table 4, the choose-well
    section), else the same tie rule on DP. The worst is the highest DP among the others; of
    metrics with exactly that DP the first in the metric order is named, as for the best."""
    from dptune.report._verdict import recommendation_text

    v = _by_dp(values.dropna(subset=["dp_per_25"])).set_index("metric", drop=False)
    if vrow is not None:
        rec = str(vrow.get("recommended") or "")
        if not rec or rec not in v.index:
            return recommendation_text(vrow, cutoff), None, [], None, []
        tied = verdict_keys(vrow.get("identical"))
        best = v.loc[rec]
    else:
        bw = best_worst(values)
        if bw is None:
            return "no evidence", None, [], None, []
        best = bw[0]
        rec = str(best["metric"])
        tied = [str(m) for m in v.loc[_tied_with(v, rec) & ~_no_evidence(v), "metric"]
                if m != rec]
    rest = v[~v["metric"].isin([rec, *tied])]
    # the highest DP among the others (none when every other metric is tied with the best)
    worst, worst_tied = None, []
    if len(rest):  # v, and so rest, is in _by_dp's order: the first of the highest is named
        top = rest[_tie(rest) == _tie(rest).max()]
        worst, worst_tied = top.iloc[0], [str(m) for m in top["metric"].iloc[1:]]
    return identical_text(rec, tied, cutoff), best, tied, worst, worst_tied


def identical_cell(metric: str, tied: Sequence[str], cutoff: int) -> Cell:
    """``nDCG@1`` with the detail ``(identical: Precision@1, MRR@1)``: a metric named for those
    with exactly its DP (one line in Markdown; in LaTeX the detail under the name, so that
    Table 4 stays narrow)."""
    detail = ("(identical: " + ", ".join(shown_metric(m, cutoff) for m in tied) + ")"
              if tied else "")
    return Cell(shown_metric(metric, cutoff), detail=detail)


def identical_text(metric: str, tied: Sequence[str], cutoff: int) -> str:
    """``nDCG@1 (identical: Precision@1, MRR@1)``: :func:`identical_cell` on one line."""
    cell = identical_cell(metric, tied, cutoff)
    return f"{cell.text} {cell.detail}" if cell.detail else cell.text


def _worst_versus_best(vrow: dict | None, worst: pd.Series | None) -> str:
    """Table 4's ``worst_vs_best``: ``significant`` when the verdict finds the worst metric
    significantly less discriminative than its recommendation, ``tie`` when it compared them
    and found no difference, empty when it compared nothing (no verdict, no interval, a metric
    without evidence)."""
    if vrow is None or worst is None or not flag(vrow, "tested"):
        return ""
    metric = str(worst["metric"])
    if metric in verdict_keys(vrow.get("less_discriminative")):
        return "significant"
    return "tie" if metric in verdict_choices(vrow) else ""


def table4(dp: pd.DataFrame, verdict: pd.DataFrame | None = None,
           families: MetricFamilies | None = None) -> Table:
    """Table 4: per (algorithm, cutoff[, family]) P, the best and worst metric, best DP, best
    DP + sd, worst DP, all per 25 pairs.

    The best metric is the verdict's recommended metric of the row when ``verdict`` is given
    ("too few pairs, P = k" or "no evidence" when it recommends none), else the lowest DP by
    the verdict's tie rule; metrics with exactly the same value are stated as ties. With
    ``families`` (the result's :attr:`~dptune.analysis.result.AnalysisResult.metric_families`),
    one row per family: metrics are compared
    within their family only. "Best + Std Dev" is the DP per 25 pairs of the best metric's
    mean + sd curve, the paper's worst-case check of whether the best metric stays ahead across
    folds. When ``dp`` carries an interval, the best and worst DP show it (CSV ``best_ci_low,
    best_ci_high, worst_ci_low, worst_ci_high``).

    Where the verdict compared the family's metrics, the worst metric is marked "(tie)" when it
    is not significantly less discriminative than the best (one of the verdict's equal
    choices): the two names then order two DPs within noise, no difference found (CSV
    ``worst_vs_best``: ``significant``, ``tie``, empty where nothing was tested).
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = scope_all(dp)
    has_ci = _ci_columns(sub)
    by_family = families is not None
    header = [Cell("Algorithm"), Cell("N")] + ([Cell("Family")] if by_family else []) + [
        Cell("P"),
        Cell("Best metric"),
        Cell("Worst metric"),
        Cell("Best avg"),
        Cell("Best + Std Dev"),
        Cell("Worst avg"),
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    nan = float("nan")

    def dp_cell(r: pd.Series | None) -> Cell:
        return _dp_cell(fmt(r["dp_per_25"]), r) if r is not None else Cell(MISSING, numeric=True)

    def num(r: pd.Series | None, col: str) -> float:
        return float(r[col]) if r is not None and col in r.index else nan

    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            c = a[a["cutoff"] == cutoff]
            groups = families.of(c["metric"]) if families is not None \
                else [("", list(c["metric"]))]
            for family, members in groups:
                g = c[c["metric"].isin(members)]
                vrow = _verdict_row(verdict, alg, int(cutoff), family)
                text, best, tied, worst, worst_tied = pick(g, vrow, int(cutoff))
                versus = _worst_versus_best(vrow, worst)
                worst_cell = (identical_cell(worst["metric"], worst_tied, cutoff)
                              if worst is not None else Cell(MISSING))
                if versus == "tie":
                    worst_cell = dataclasses.replace(worst_cell, text=worst_cell.text + " (tie)")
                row = [Cell(shown_algorithm(alg)), Cell(str(int(cutoff)), numeric=True)]
                row += [Cell(family)] if by_family else []
                row += [
                    Cell(_n_pairs_text(g["n_pairs"]), numeric=True),
                    identical_cell(best["metric"], tied, cutoff) if best is not None
                    else Cell(text),
                    worst_cell,
                    dp_cell(best),
                    # one fold has no spread: its "+ sd" would repeat the DP
                    Cell(fmt(best["dp_per_25_plus_sd"]) if best is not None
                         and not one_fold(best) else MISSING,
                         numeric=True),
                    dp_cell(worst),
                ]
                rec = {"algorithm": alg, "cutoff": int(cutoff)}
                rec |= {"family": family} if by_family else {}
                rec |= {
                    "n_pairs": int(g["n_pairs"].max()) if len(g) else 0,
                    "best_metric": best["metric"] if best is not None else "",
                    "identical": ";".join(tied),
                    "worst_metric": worst["metric"] if worst is not None else "",
                    "worst_identical": ";".join(worst_tied),
                    "worst_vs_best": versus,
                    "best_dp_per_25": num(best, "dp_per_25"),
                    "best_dp_per_25_plus_sd": num(best, "dp_per_25_plus_sd"),
                    "worst_dp_per_25": num(worst, "dp_per_25"),
                }
                if has_ci:
                    rec |= {"best_ci_low": num(best, "ci_low"), "best_ci_high": num(best, "ci_high"),
                            "worst_ci_low": num(worst, "ci_low"),
                            "worst_ci_high": num(worst, "ci_high")}
                rows.append(row)
                records.append(rec)
        if rows:
            rules.add(len(rows) - 1)
    columns = (["algorithm", "cutoff"] + (["family"] if by_family else []) + [
        "n_pairs", "best_metric", "identical", "worst_metric", "worst_identical", "worst_vs_best",
        "best_dp_per_25",
        "best_dp_per_25_plus_sd", "worst_dp_per_25",
    ] + (["best_ci_low", "best_ci_high", "worst_ci_low", "worst_ci_high"] if has_ci else []))
    csv = pd.DataFrame.from_records(records, columns=columns)
    caption = (
        "Most and least discriminative metric per algorithm and cutoff"
        + (", within each family of metrics" if by_family else "")
        + ("; the best metric is the verdict's recommendation, the lowest DP (the paper's "
           "best; the metrics not significantly less discriminative than it are equal "
           "choices: the verdict and Table 3's bold name them)" if verdict is not None else "")
        + "; DP per 25 pairs over the row's P pairs; Best + Std Dev is the DP per 25 pairs of "
        "the best metric's mean + sd curve (worst case across folds)"
        + ("; in brackets the 95% bootstrap interval." if has_ci else ".")
    )
    notes = []
    if any(r["identical"] or r["worst_identical"] for r in records):
        notes.append("identical: the same DP exactly (e.g. the same p-value on every pair); the first "
                     f"in the order {', '.join(shown_metric(m) for m in METRICS)} is named.")
    if any(r["worst_vs_best"] == "tie" for r in records):
        notes.append("(tie): the worst metric is not significantly less discriminative than the "
                     "best; the two DPs differ within noise, and either is an equal choice.")
    if any(c.text == "no evidence" for r in rows for c in r):
        notes.append("no evidence: every p-value is 1, so no metric is best or worst.")
    if any("too few pairs" in c.text for r in rows for c in r):
        notes.append("too few pairs, P = k: fewer pairs of configurations than min_pairs, too "
                     "few to rank metrics (their DP is in Table 3).")
    return Table("table4", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv,
                 notes, number="Table 4")


#: Values of a hyperparameter per row of Table 5; more continue on the next rows.
VALUES_PER_ROW = 8


def table5(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
    min_pairs: int = MIN_PAIRS,
    grid: Mapping[str, Mapping[str, Sequence[object]]] | None = None,
) -> Table:
    """Table 5: DP per 25 pairs among configurations that share one value of a hyperparameter.

    ``grid`` (per algorithm, each hyperparameter's values in the grid) adds the values no
    configuration of the results has (a budget's units that do not hold them), marked
    :data:`NOT_RUN` with no DP: the row shows the grid's values, not only those run.

    Markdown/LaTeX: for the primary metric@cutoff, one block per algorithm; per hyperparameter a
    row of its values, a row of DP values (the lowest bold, as in the paper) and a row of the
    P behind each; at most :data:`VALUES_PER_ROW` values a row, so that the table fits a page
    (the paper's 14 iteration counts continue on a second group of three rows, named
    "(continued)"). A group with fewer than ``min_pairs`` pairs is shown, marked ``‡``, and not
    ranked: too few pairs to call it the lowest DP of its row; nor is one without evidence
    (every p-value 1), whose DP 25 is no finding. CSV: every metric and cutoff in
    long form ``algorithm, hyperparameter, value, metric, cutoff, n_pairs, dp_per_25``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = value_scopes(dp)
    order = hyperparameter_order or {}
    metric, cutoff = primary[0], int(primary[1])
    blocks: list[Block] = []
    records = []
    shares: list[float] = []
    any_silent = False  # a value without evidence, shown and not ranked
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        rows: list[list[Cell]] = []
        rules: set[int] = set()
        for h in ordered_hyperparameters(a["hyperparameter"].unique(), order):
            ah = a[a["hyperparameter"] == h]
            values = ordered_values(ah["value"].unique(), order.get(h))
            rank = {v: i for i, v in enumerate(values)}
            metric_rank = {m: i for i, m in enumerate(ordered_metrics(ah["metric"].unique()))}
            long = ah.assign(
                _v=ah["value"].map(rank), _m=ah["metric"].map(metric_rank)
            ).sort_values(["_v", "_m", "cutoff"], kind="stable")
            long_share = unsampled_share(long)
            for r, share in zip(long.itertuples(index=False), long_share, strict=True):
                records.append(
                    {
                        "algorithm": alg,
                        "hyperparameter": h,
                        "value": r.value,
                        "metric": r.metric,
                        "cutoff": int(r.cutoff),
                        "n_pairs": r.n_pairs,
                        "dp_per_25": float(r.dp_per_25),
                        "unsampled_share": float(share),
                    }
                )
            prim = ah[(ah["metric"] == metric) & (ah["cutoff"] == cutoff)].set_index("value")
            if prim.empty:
                continue
            shown = [v for v in values if v in prim.index]
            run = {value_norm(v) for v in shown}  # "10" of a scope is the grid's 10
            missing = [v for v in (grid or {}).get(alg, {}).get(h, ())
                       if value_norm(v) not in run]
            dps = [prim.at[v, "dp_per_25"] for v in shown]
            npairs = [prim.at[v, "n_pairs"] for v in shown]
            # a group with too few pairs is shown but not ranked (never bold)
            few = [not is_missing(n) and int(n) < int(min_pairs) for n in npairs]
            # a scope the units run do not cover: shown, marked, never ranked
            cover = unsampled_share(prim).reindex(shown).tolist()
            shares += cover
            texts = [fmt(d) + (TOO_FEW if f else "") + (UNSAMPLED if u > 0 else "")
                     for d, f, u in zip(dps, few, cover, strict=True)]
            # no evidence (every p-value 1 at that value): shown, not ranked, as in the verdict
            silent = _no_evidence(prim).reindex(shown).fillna(False).tolist()
            any_silent |= any(silent)
            ranked = [np.nan if f or u > 0 or s else d
                      for d, f, u, s in zip(dps, few, cover, silent, strict=True)]
            value_cells = [Cell(shown_value(v), numeric=True) for v in shown]
            dp_cells = marked_cells(ranked, texts)  # the lowest of the whole row bold
            p_cells = [Cell(_n_pairs_text(pd.Series([prim.at[v, "n_pairs"]])), numeric=True)
                       for v in shown]
            if missing:  # in value order among those run: no DP, never ranked
                cells = {v: (vc, dc, pc) for v, vc, dc, pc
                         in zip(shown, value_cells, dp_cells, p_cells, strict=True)}
                cells |= {str(v): (Cell(shown_value(v), numeric=True),
                                   Cell(NOT_RUN, numeric=True), Cell("0", numeric=True))
                          for v in missing}
                shown = ordered_values(list(cells), order.get(h))
                value_cells, dp_cells, p_cells = (
                    [cells[v][k] for v in shown] for k in range(3))
            name = shown_hyperparameter(h, alg)
            for start in range(0, len(shown), VALUES_PER_ROW):
                end = start + VALUES_PER_ROW
                rows.append([Cell(name if start == 0 else f"{name} (continued)")]
                            + value_cells[start:end])
                rows.append([Cell("DP per 25 pairs")] + dp_cells[start:end])
                rows.append([Cell("P")] + p_cells[start:end])
            rules.add(len(rows) - 1)
        if rows:
            width = max(len(r) for r in rows)
            header = [Cell("Hyperparameter")] + [Cell("")] * (width - 1)
            blocks.append(Block(header, rows, title=shown_algorithm(alg), rules_after=rules))
    csv = pd.DataFrame.from_records(
        records,
        columns=["algorithm", "hyperparameter", "value", "metric", "cutoff", "n_pairs",
                 "dp_per_25", "unsampled_share"],
    )
    if not (csv["unsampled_share"] > 0).any():  # every scope covered: the columns as ever
        csv = csv.drop(columns="unsampled_share")
    caption = (
        f"DP per 25 pairs of {shown_metric(metric, cutoff)} among configurations "
        "sharing one value of a hyperparameter (pairs differ in the other hyperparameters); "
        "bold: lowest DP of the row among the values ranked (the notes say which are not); P: "
        "the pairs behind each value. The CSV holds every metric and cutoff."
    )
    notes = _left_out_note(dp, set(sub["algorithm"]))
    if any(TOO_FEW in c.text for b in blocks for r in b.rows for c in r):
        notes.append(
            f"{TOO_FEW} too few pairs (fewer than min_pairs = {int(min_pairs)}) to rank this "
            "group: its DP is shown but not compared.")
    if any_silent:
        notes.append("A value whose p-values are all 1 (no evidence: no pair of configurations "
                     "sharing it differs) shows DP per 25 pairs 25 and is not ranked.")
    notes += unsampled_note(shares)
    if any(c.text == NOT_RUN for b in blocks for r in b.rows for c in r):
        notes.append(f"{NOT_RUN}: a value of the grid that no configuration of these results "
                     "has (the units a budget ran do not hold it), so it has no DP.")
    return Table("table5", caption, blocks, csv, notes, number="Table 5")


def _dominance_note(dominance: pd.DataFrame | None, cutoff: int,
                    algorithms: Sequence[str], metrics: Sequence[str]) -> str:
    """The verdict's dominance answers at ``cutoff`` in one sentence per algorithm, metrics in
    the table's column order: the hyperparameter that dominates significantly at each metric,
    or "none" (dominance.csv ``answer``; a metric it could not compare is said with its
    reason)."""
    if dominance is None or dominance.empty:
        return ""
    words = {"none": "none", "no_bootstrap": "not tested (no interval)",
             "single": "one hyperparameter compared", "no_evidence": "no evidence",
             "too_few_pairs": "too few pairs"}
    parts = []
    for alg in algorithms:
        d = dominance[(dominance["algorithm"] == alg) & (dominance["cutoff"] == cutoff)]
        if d.empty:
            continue
        said: dict[str, list[str]] = {}
        for m in metrics:
            for r in d[d["metric"] == m].itertuples():
                text = (shown_hyperparameter(str(r.hyperparameter), alg)
                        if r.answer == "dominant" else words.get(str(r.answer), str(r.answer)))
                said.setdefault(text, []).append(shown_metric(m, cutoff))
        parts.append(f"{shown_algorithm(alg)}: " + "; ".join(
            f"{text} at {', '.join(ms)}" if len(said) > 1
            else f"{text} at any metric" if text == "none" else f"{text} at every metric"
            for text, ms in said.items()))
    if not parts:
        return ""
    return ("Dominant hyperparameter (a DP significantly lower than every other's; the "
            "verdict's answer, dominance.csv): " + ". ".join(parts) + ".")


def one_at_a_time_table(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
    min_pairs: int = MIN_PAIRS,
    dominance: pd.DataFrame | None = None,
) -> Table:
    """One-hyperparameter-at-a-time DP: pairs that differ in one hyperparameter only.

    Rows (algorithm, hyperparameter) with their P, columns DP per 25 pairs of each
    metric@primary cutoff. Bold marks, per algorithm and metric column, the hyperparameter with
    the lowest DP among those with at least ``min_pairs`` pairs (when two or more have): the
    one that by itself separates configurations most often. Whether it *dominates* (is
    significantly lower than every other) is the verdict's answer (dominance.csv): with
    ``dominance`` a note under the table gives it per algorithm and metric, so that a table
    pasted alone does not show a bold lowest DP as a dominance the verdict did not find. A
    scope with fewer pairs is marked ``‡`` and not ranked. CSV long form with all cutoffs:
    ``algorithm, hyperparameter, metric, cutoff, n_pairs, dp_per_25, ci_low, ci_high``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = only_scopes(dp)
    cutoff = int(primary[1])
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("Hyperparameter"), Cell("P")] + [
        Cell(shown_metric(m, cutoff)) for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    metric_rank = {m: i for i, m in enumerate(metrics)}
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        hyper = ordered_hyperparameters(a["hyperparameter"].unique(), hyperparameter_order)
        for h in hyper:
            ah = a[a["hyperparameter"] == h]
            ah = ah.assign(_m=ah["metric"].map(metric_rank)).sort_values(
                ["_m", "cutoff"], kind="stable"
            )
            for r in ah.itertuples(index=False):
                records.append({"algorithm": alg, "hyperparameter": h, "metric": r.metric,
                                "cutoff": int(r.cutoff), "n_pairs": r.n_pairs,
                                "dp_per_25": float(r.dp_per_25), "ci_low": float(r.ci_low),
                                "ci_high": float(r.ci_high)})
        prim = a[a["cutoff"] == cutoff]
        if prim.empty:
            continue
        grid = {(r.hyperparameter, r.metric): (r.dp_per_25, r.n_pairs)
                for r in prim.itertuples(index=False)}
        none = prim[_no_evidence(prim)]
        silent = set(zip(none["hyperparameter"], none["metric"], strict=True))
        columns: list[list[Cell]] = []
        for m in metrics:
            dps = [grid.get((h, m), (np.nan, np.nan))[0] for h in hyper]
            few = [not is_missing(grid.get((h, m), (np.nan, np.nan))[1])
                   and int(grid[(h, m)][1]) < int(min_pairs) for h in hyper]
            texts = [fmt(d) + (TOO_FEW if f else "") for d, f in zip(dps, few, strict=True)]
            # too few pairs, or no evidence (changing it alone never changed the metric): shown,
            # not ranked, as the dominance answer does not compare them
            ranked = [np.nan if f or (h, m) in silent else d
                      for h, d, f in zip(hyper, dps, few, strict=True)]
            cells = marked_cells(ranked, texts)
            if len(hyper) < 2:
                cells = [Cell(c.text, numeric=True) for c in cells]
            columns.append(cells)
        for i, h in enumerate(hyper):
            n_text = _n_pairs_text(prim.loc[prim["hyperparameter"] == h, "n_pairs"])
            rows.append(
                [Cell(shown_algorithm(alg)), Cell(shown_hyperparameter(h, alg)),
                 Cell(n_text, numeric=True)]
                + [col[i] for col in columns]
            )
        rules.add(len(rows) - 1)
    csv = pd.DataFrame.from_records(
        records, columns=["algorithm", "hyperparameter", "metric", "cutoff", "n_pairs",
                          "dp_per_25", "ci_low", "ci_high"]
    )
    caption = (
        f"One hyperparameter at a time (cutoff {cutoff}): DP per 25 pairs of the P pairs of "
        "configurations that differ in that hyperparameter only, all others fixed. Bold: per "
        "algorithm and metric, the hyperparameter that by itself separates configurations most "
        "often (lowest DP among those ranked: the notes say which are not); whether it "
        "dominates significantly is in the verdict."
    )
    notes = _left_out_note(dp, set(sub["algorithm"]))
    if any(TOO_FEW in c.text for r in rows for c in r):
        notes.append(f"{TOO_FEW} too few pairs (fewer than min_pairs = {int(min_pairs)}) to "
                     "rank this hyperparameter: its DP is shown but not compared.")
    said = _dominance_note(dominance, cutoff, ordered_algorithms(sub["algorithm"].unique()),
                           metrics)
    if said:
        notes.append(said)
    if _no_evidence(sub[sub["cutoff"] == cutoff]).any():
        notes.append("A hyperparameter whose one-at-a-time p-values are all 1 at a metric "
                     "(no evidence: changing it alone never changed the metric) shows DP per 25 "
                     "pairs 25 there and is not ranked.")
    return Table(
        "one_at_a_time",
        caption,
        [Block(header, rows, rules_after=rules)] if rows else [],
        csv,
        notes,
    )
