"""The paper's tables as :class:`~dptune.report._table.Table` objects (Anelli et al., RecSys 2019).

- :func:`table1`: data set statistics (paper Table 1).
- :func:`table3`: DP of every metric, scope ``all``; lowest DP of a row bold, highest underlined.
- :func:`table4`: best and worst metric, best DP, best DP + sd, worst DP (paper Table 4).
- :func:`table5`: DP among configurations sharing one hyperparameter value (paper Table 5).
- :func:`one_at_a_time_table`: DP of pairs that differ in one hyperparameter only.

DP (discriminative power) = sum over pair ranks of the fold-averaged, decreasingly sorted
p-value curve = P x the mean p-value; lower = more discriminative. Every table shows it as
**DP per 25 pairs** (``DP x 25 / P``, :func:`dptune.report._inputs.per_25`), which compares
across rows with different P and is the paper's DP when P = 25, with P in every row; Tables 3
and 4 add the 95% interval (``ci_low``/``ci_high`` of the ``dp`` frame, same scale) when the
analysis computed one. CSV frames keep raw keys and full precision; Markdown/LaTeX use display
names and 3 decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dptune.report._format import (
    MISSING,
    display_value,
    fmt,
    is_missing,
    ordered_algorithms,
    ordered_hyperparameters,
    ordered_metrics,
    ordered_values,
)
from dptune.report._inputs import (
    DATASET_INPUT,
    DP_INPUT,
    interval_text,
    only_scopes,
    pairs_note,
    per_25,
    require,
    scope_all,
    value_scopes,
)
from dptune.report._table import Block, Cell, Table, marked_cells
from dptune.vocab import display_algorithm, display_hyperparameter, display_metric

__all__ = ["table1", "table3", "table4", "table5", "one_at_a_time_table", "best_worst"]

def best_worst(values: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """Best (lowest DP) and worst (highest DP) rows of one (algorithm, cutoff); ties: table
    order. The rows carry ``dp25``/``dp25_plus_sd`` (:func:`per_25`)."""
    v = values.dropna(subset=["dp"])
    if v.empty:
        return None
    v = per_25(v) if "dp25" not in v.columns else v
    order = {m: i for i, m in enumerate(ordered_metrics(v["metric"]))}
    v = v.assign(_o=v["metric"].map(order)).sort_values("_o", kind="stable")
    best = v.loc[v["dp25"].idxmin()]
    worst = v.loc[v["dp25"].idxmax()]
    return best, worst


def _n_pairs_text(values: pd.Series) -> str:
    """P of a group of rows: one number, or ``lo-hi`` when the rows differ."""
    n = pd.to_numeric(values, errors="coerce").dropna()
    if n.empty:
        return MISSING
    lo, hi = int(n.min()), int(n.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _ci_columns(dp: pd.DataFrame) -> bool:
    """Whether ``dp`` carries an interval (``ci_low``/``ci_high`` with a value somewhere)."""
    return {"ci_low", "ci_high"} <= set(dp.columns) and bool(dp["ci_low"].notna().any())


def _left_out_note(dp: pd.DataFrame, shown: set[str]) -> list[str]:
    """Say which algorithms with a DP (scope ``all``) a per-hyperparameter table leaves out, and
    why: its scopes exist only for algorithms with two or more free hyperparameters."""
    missing = [a for a in ordered_algorithms(scope_all(dp)["algorithm"].unique()) if a not in shown]
    if not missing:
        return []
    names = ", ".join(display_algorithm(a) for a in missing)
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
                Cell(
                    MISSING if is_missing(r.sparsity) else f"{100 * float(r.sparsity):.2f}%",
                    numeric=True,
                ),
            ]
        )
    csv = ds[list(DATASET_INPUT)].reset_index(drop=True)
    return Table(
        "table1",
        "Table 1: Data set statistics (sparsity = 1 - ratings / (users x items)).",
        [Block(header, rows)] if rows else [],
        csv,
    )


def table3(dp: pd.DataFrame) -> Table:
    """Table 3: DP per 25 pairs per (algorithm, cutoff) x metric over the whole grid (scope
    ``all``), P of the row beside it, and each value's 95% interval when ``dp`` has one.

    Lowest DP of each row bold (most discriminative), highest underlined. CSV columns:
    ``algorithm, cutoff, n_pairs`` and one column per metric key in the paper's order (DP per
    25 pairs), then ``<metric>_ci_low, <metric>_ci_high`` when there is an interval.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = per_25(scope_all(dp))
    has_ci = _ci_columns(sub)
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("N"), Cell("P")] + [
        Cell(f"{display_metric(m)}@N") for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            rows_c = a[a["cutoff"] == cutoff].set_index("metric")
            values = [rows_c["dp25"].get(m, np.nan) for m in metrics]
            texts = [fmt(v) + (interval_text(rows_c.loc[m]) if m in rows_c.index else "")
                     for m, v in zip(metrics, values, strict=True)]
            n_text = _n_pairs_text(rows_c["n_pairs"])
            rows.append(
                [Cell(display_algorithm(alg)), Cell(str(int(cutoff)), numeric=True),
                 Cell(n_text, numeric=True)]
                + marked_cells(values, texts, underline_max=True)
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
    caption = (
        "Table 3: Discriminative power over the whole grid as DP per 25 pairs (25 x the mean "
        "p-value of the row's P pairs; the paper's DP when P = 25; lower is more "
        f"discriminative); {pairs_note(sub)}"
        + ("; in brackets its 95% bootstrap interval" if has_ci else "")
        + ". Bold: lowest DP of the row; underlined: highest."
    )
    return Table("table3", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv)


def table4(dp: pd.DataFrame) -> Table:
    """Table 4: per (algorithm, cutoff) P, the best and worst metric, best DP, best DP + sd,
    worst DP, all per 25 pairs.

    "Best + Std Dev" is ``dp_plus_sd`` of the best metric: the sum of (mean + sd) of its curve,
    the paper's worst-case check of whether the best metric stays ahead across folds. When ``dp``
    carries ``ci_low``/``ci_high``, the best and worst DP show their intervals (CSV
    ``best_ci_low, best_ci_high, worst_ci_low, worst_ci_high``).
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = per_25(scope_all(dp))
    has_ci = _ci_columns(sub)
    header = [
        Cell("Algorithm"),
        Cell("N"),
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
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            bw = best_worst(a[a["cutoff"] == cutoff])
            if bw is None:
                continue
            best, worst = bw
            row = [
                Cell(display_algorithm(alg)),
                Cell(str(int(cutoff)), numeric=True),
                Cell(_n_pairs_text(a.loc[a["cutoff"] == cutoff, "n_pairs"]), numeric=True),
                Cell(display_metric(best["metric"], cutoff)),
                Cell(display_metric(worst["metric"], cutoff)),
                Cell(fmt(best["dp25"]) + interval_text(best), numeric=True),
                Cell(fmt(best["dp25_plus_sd"]), numeric=True),
                Cell(fmt(worst["dp25"]) + interval_text(worst), numeric=True),
            ]
            rec = {
                "algorithm": alg,
                "cutoff": int(cutoff),
                "n_pairs": int(best["n_pairs"]),
                "best_metric": best["metric"],
                "worst_metric": worst["metric"],
                "best_dp": float(best["dp25"]),
                "best_dp_plus_sd": float(best["dp25_plus_sd"]),
                "worst_dp": float(worst["dp25"]),
            }
            if has_ci:
                rec |= {"best_ci_low": float(best["ci_low"]),
                        "best_ci_high": float(best["ci_high"]),
                        "worst_ci_low": float(worst["ci_low"]),
                        "worst_ci_high": float(worst["ci_high"])}
            rows.append(row)
            records.append(rec)
        if rows:
            rules.add(len(rows) - 1)
    columns = [
        "algorithm",
        "cutoff",
        "n_pairs",
        "best_metric",
        "worst_metric",
        "best_dp",
        "best_dp_plus_sd",
        "worst_dp",
    ] + (["best_ci_low", "best_ci_high", "worst_ci_low", "worst_ci_high"] if has_ci else [])
    csv = pd.DataFrame.from_records(records, columns=columns)
    caption = (
        "Table 4: Most and least discriminative metric per algorithm and cutoff, DP per 25 "
        "pairs over the row's P pairs; Best + Std Dev is the DP of the best metric's mean + sd "
        "curve (worst case across folds)"
        + ("; in brackets the 95% bootstrap interval." if has_ci else ".")
    )
    return Table("table4", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv)


def table5(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
) -> Table:
    """Table 5: DP per 25 pairs among configurations that share one value of a hyperparameter.

    Markdown/LaTeX: for the primary metric@cutoff, one block per algorithm; per hyperparameter a
    row of its values, a row of DP values (the lowest bold, as in the paper) and a row of the
    P behind each. CSV: every metric and cutoff in long form
    ``algorithm, hyperparameter, value, metric, cutoff, dp, n_pairs, dp_per_25``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = per_25(value_scopes(dp))
    order = hyperparameter_order or {}
    metric, cutoff = primary[0], int(primary[1])
    blocks: list[Block] = []
    records = []
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
            for r in long.itertuples(index=False):
                records.append(
                    {
                        "algorithm": alg,
                        "hyperparameter": h,
                        "value": r.value,
                        "metric": r.metric,
                        "cutoff": int(r.cutoff),
                        "dp": float(r.dp),
                        "n_pairs": r.n_pairs,
                        "dp_per_25": float(r.dp25),
                    }
                )
            prim = ah[(ah["metric"] == metric) & (ah["cutoff"] == cutoff)].set_index("value")
            if prim.empty:
                continue
            shown = [v for v in values if v in prim.index]
            dps = [prim.at[v, "dp25"] for v in shown]
            rows.append(
                [Cell(display_hyperparameter(h, alg))]
                + [Cell(display_value(v), numeric=True) for v in shown]
            )
            rows.append([Cell("DP")] + marked_cells(dps))
            rows.append([Cell("P")] + [Cell(_n_pairs_text(pd.Series([prim.at[v, "n_pairs"]])),
                                            numeric=True) for v in shown])
            rules.add(len(rows) - 1)
        if rows:
            width = max(len(r) for r in rows)
            header = [Cell("Hyperparameter")] + [Cell("")] * (width - 1)
            blocks.append(Block(header, rows, title=display_algorithm(alg), rules_after=rules))
    csv = pd.DataFrame.from_records(
        records,
        columns=["algorithm", "hyperparameter", "value", "metric", "cutoff", "dp", "n_pairs",
                 "dp_per_25"],
    )
    caption = (
        f"Table 5: DP per 25 pairs of {display_metric(metric, cutoff)} among configurations "
        "sharing one value of a hyperparameter (pairs differ in the other hyperparameters); "
        "bold: lowest DP of the row; P: the pairs behind each value. The CSV holds every metric "
        "and cutoff."
    )
    notes = _left_out_note(dp, set(sub["algorithm"]))
    return Table("table5", caption, blocks, csv, notes)


def one_at_a_time_table(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
) -> Table:
    """One-hyperparameter-at-a-time DP: pairs that differ in one hyperparameter only.

    Rows (algorithm, hyperparameter) with their P, columns DP per 25 pairs of each
    metric@primary cutoff. Bold marks, per algorithm and metric column, the hyperparameter with
    the lowest DP: the one that by itself moves that metric most (marked only when an algorithm
    has two or more hyperparameters). CSV long form with all cutoffs:
    ``algorithm, hyperparameter, metric, cutoff, dp, n_pairs, dp_per_25``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = per_25(only_scopes(dp))
    cutoff = int(primary[1])
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("Hyperparameter"), Cell("P")] + [
        Cell(display_metric(m, cutoff)) for m in metrics
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
                records.append(
                    {
                        "algorithm": alg,
                        "hyperparameter": h,
                        "metric": r.metric,
                        "cutoff": int(r.cutoff),
                        "dp": float(r.dp),
                        "n_pairs": r.n_pairs,
                        "dp_per_25": float(r.dp25),
                    }
                )
        prim = a[a["cutoff"] == cutoff]
        if prim.empty:
            continue
        grid = {
            (r.hyperparameter, r.metric): (r.dp25, r.n_pairs) for r in prim.itertuples(index=False)
        }
        columns: list[list[Cell]] = []
        for m in metrics:
            dps = [grid.get((h, m), (np.nan, np.nan))[0] for h in hyper]
            cells = marked_cells(dps)
            if len(hyper) < 2:
                cells = [Cell(c.text, numeric=True) for c in cells]
            columns.append(cells)
        for i, h in enumerate(hyper):
            n_text = _n_pairs_text(prim.loc[prim["hyperparameter"] == h, "n_pairs"])
            rows.append(
                [Cell(display_algorithm(alg)), Cell(display_hyperparameter(h, alg)),
                 Cell(n_text, numeric=True)]
                + [col[i] for col in columns]
            )
        rules.add(len(rows) - 1)
    csv = pd.DataFrame.from_records(
        records, columns=["algorithm", "hyperparameter", "metric", "cutoff", "dp", "n_pairs",
                          "dp_per_25"]
    )
    caption = (
        f"One hyperparameter at a time (cutoff {cutoff}): DP per 25 pairs of the P pairs of "
        "configurations that differ in that hyperparameter only, all others fixed. Bold: per "
        "algorithm and metric, the hyperparameter that by itself moves the metric most (lowest "
        "DP)."
    )
    notes = _left_out_note(dp, set(sub["algorithm"]))
    return Table(
        "one_at_a_time",
        caption,
        [Block(header, rows, rules_after=rules)] if rows else [],
        csv,
        notes,
    )
