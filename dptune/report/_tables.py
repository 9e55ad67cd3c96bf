"""The paper's tables as :class:`~dptune.report._table.Table` objects (Anelli et al., RecSys 2019).

- :func:`table1`: data set statistics (paper Table 1).
- :func:`table3`: DP of every metric, scope ``all``; lowest DP of a row bold, highest underlined.
- :func:`table4`: best and worst metric, best DP, best DP + sd, worst DP (paper Table 4).
- :func:`table5`: DP among configurations sharing one hyperparameter value (paper Table 5).
- :func:`one_at_a_time_table`: DP of pairs that differ in one hyperparameter only (SPEC 6).

DP (discriminative power) = sum over pair ranks of the fold-averaged, decreasingly sorted
p-value curve; lower = more discriminative. CSV frames keep raw keys and full precision;
Markdown/LaTeX use display names and 3 decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dptune.report._format import (
    FEWER_PAIRS,
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
    only_scopes,
    pairs_note,
    require,
    scope_all,
    value_scopes,
)
from dptune.report._table import Block, Cell, Table, marked_cells
from dptune.vocab import display_algorithm, display_hyperparameter, display_metric

__all__ = ["table1", "table3", "table4", "table5", "one_at_a_time_table", "best_worst"]

def best_worst(values: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """Best (lowest DP) and worst (highest DP) rows of one (algorithm, cutoff); ties: table
    order."""
    v = values.dropna(subset=["dp"])
    if v.empty:
        return None
    order = {m: i for i, m in enumerate(ordered_metrics(v["metric"]))}
    v = v.assign(_o=v["metric"].map(order)).sort_values("_o", kind="stable")
    best = v.loc[v["dp"].idxmin()]
    worst = v.loc[v["dp"].idxmax()]
    return best, worst


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
    """Table 3: DP per (algorithm, cutoff) x metric over the whole grid (scope ``all``).

    Lowest DP of each row bold (most discriminative), highest underlined. CSV columns:
    ``algorithm, cutoff`` and one column per metric key in the paper's order.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = scope_all(dp)
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("N")] + [
        Cell(f"{display_metric(m)}@N") for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            c = a[a["cutoff"] == cutoff].set_index("metric")["dp"]
            values = [c.get(m, np.nan) for m in metrics]
            rows.append(
                [Cell(display_algorithm(alg)), Cell(str(int(cutoff)), numeric=True)]
                + marked_cells(values, underline_max=True)
            )
            records.append(
                {"algorithm": alg, "cutoff": int(cutoff)}
                | {
                    m: float(v) if not is_missing(v) else np.nan
                    for m, v in zip(metrics, values, strict=True)
                }
            )
        rules.add(len(rows) - 1)
    csv = pd.DataFrame.from_records(records, columns=["algorithm", "cutoff", *metrics])
    caption = (
        "Table 3: Discriminative power (DP, sum of the fold-averaged p-value curve; lower is more "
        f"discriminative) over the whole grid; {pairs_note(sub)}. Bold: lowest DP of the row; "
        "underlined: highest."
    )
    return Table("table3", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv)


def table4(dp: pd.DataFrame) -> Table:
    """Table 4: per (algorithm, cutoff) the best and worst metric, best DP, best DP + sd, worst DP.

    "Best + Std Dev" is ``dp_plus_sd`` of the best metric: the sum of (mean + sd) of its curve,
    the paper's worst-case check of whether the best metric stays ahead across folds. When ``dp``
    carries ``dp_ci_low``/``dp_ci_high``, the best metric's interval is added.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = scope_all(dp)
    has_ci = {"dp_ci_low", "dp_ci_high"} <= set(dp.columns)
    header = [
        Cell("Algorithm"),
        Cell("N"),
        Cell("Best metric"),
        Cell("Worst metric"),
        Cell("Best avg"),
        Cell("Best + Std Dev"),
        Cell("Worst avg"),
    ]
    if has_ci:
        header.append(Cell("Best DP interval"))
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
                Cell(display_metric(best["metric"], cutoff)),
                Cell(display_metric(worst["metric"], cutoff)),
                Cell(fmt(best["dp"]), numeric=True),
                Cell(fmt(best["dp_plus_sd"]), numeric=True),
                Cell(fmt(worst["dp"]), numeric=True),
            ]
            rec = {
                "algorithm": alg,
                "cutoff": int(cutoff),
                "best_metric": best["metric"],
                "worst_metric": worst["metric"],
                "best_dp": float(best["dp"]),
                "best_dp_plus_sd": float(best["dp_plus_sd"]),
                "worst_dp": float(worst["dp"]),
            }
            if has_ci:
                lo, hi = best["dp_ci_low"], best["dp_ci_high"]
                row.append(Cell(f"[{fmt(lo)}, {fmt(hi)}]", numeric=True))
                rec |= {"best_dp_ci_low": float(lo), "best_dp_ci_high": float(hi)}
            rows.append(row)
            records.append(rec)
        if rows:
            rules.add(len(rows) - 1)
    columns = [
        "algorithm",
        "cutoff",
        "best_metric",
        "worst_metric",
        "best_dp",
        "best_dp_plus_sd",
        "worst_dp",
    ] + (["best_dp_ci_low", "best_dp_ci_high"] if has_ci else [])
    csv = pd.DataFrame.from_records(records, columns=columns)
    caption = (
        "Table 4: Most and least discriminative metric per algorithm and cutoff; Best + Std Dev "
        "is the DP of the best metric's mean + sd curve (worst case across folds)"
        + ("; interval: the DP confidence interval of the best metric." if has_ci else ".")
    )
    return Table("table4", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv)


def _fewer_pairs_texts(values: Sequence[float], pairs: Sequence[float]) -> list[str]:
    """DP texts, with a dagger on those computed on fewer pairs than the most in the group."""
    p = pd.to_numeric(pd.Series(list(pairs), dtype="float64"), errors="coerce")
    most = p.max()
    return [
        fmt(v) + (FEWER_PAIRS if not is_missing(v) and not pd.isna(n) and n < most else "")
        for v, n in zip(values, p, strict=True)
    ]


def table5(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
) -> Table:
    """Table 5: DP among configurations that share one value of a hyperparameter.

    Markdown/LaTeX: for the primary metric@cutoff, one block per algorithm; per hyperparameter a
    row of its values followed by a row of DP values, the lowest DP of the row bold (as in the
    paper). CSV: every metric and cutoff in long form
    ``algorithm, hyperparameter, value, metric, cutoff, dp, n_pairs``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = value_scopes(dp)
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
                    }
                )
            prim = ah[(ah["metric"] == metric) & (ah["cutoff"] == cutoff)].set_index("value")
            if prim.empty:
                continue
            shown = [v for v in values if v in prim.index]
            dps = [prim.at[v, "dp"] for v in shown]
            texts = _fewer_pairs_texts(dps, [prim.at[v, "n_pairs"] for v in shown])
            rows.append(
                [Cell(display_hyperparameter(h, alg))]
                + [Cell(display_value(v), numeric=True) for v in shown]
            )
            rows.append([Cell("DP")] + marked_cells(dps, texts))
            rules.add(len(rows) - 1)
        if rows:
            width = max(len(r) for r in rows)
            header = [Cell("Hyperparameter")] + [Cell("")] * (width - 1)
            blocks.append(Block(header, rows, title=display_algorithm(alg), rules_after=rules))
    csv = pd.DataFrame.from_records(
        records,
        columns=["algorithm", "hyperparameter", "value", "metric", "cutoff", "dp", "n_pairs"],
    )
    caption = (
        f"Table 5: DP of {display_metric(metric, cutoff)} among configurations sharing one value "
        "of a hyperparameter (pairs differ in the other hyperparameters); bold: lowest DP of the "
        "row. The CSV holds every metric and cutoff."
    )
    notes = []
    if any(FEWER_PAIRS in c.text for b in blocks for r in b.rows for c in r):
        notes.append(
            f"{FEWER_PAIRS} fewer pairs than the other values of the row: DP is a sum over "
            "pairs, so compare these with care."
        )
    notes += _left_out_note(dp, set(sub["algorithm"]))
    return Table("table5", caption, blocks, csv, notes)


def one_at_a_time_table(
    dp: pd.DataFrame,
    primary: tuple[str, int] = ("ndcg", 10),
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
) -> Table:
    """One-hyperparameter-at-a-time DP: pairs that differ in one hyperparameter only.

    Rows (algorithm, hyperparameter), columns metric@primary cutoff. Bold marks, per algorithm
    and metric column, the hyperparameter with the lowest DP: the one that by itself moves that
    metric most (marked only when an algorithm has two or more hyperparameters). CSV long form
    with all cutoffs: ``algorithm, hyperparameter, metric, cutoff, dp, n_pairs``.
    """
    dp = require(dp, DP_INPUT, "dp")
    sub = only_scopes(dp)
    cutoff = int(primary[1])
    metrics = ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("Hyperparameter")] + [
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
                    }
                )
        prim = a[a["cutoff"] == cutoff]
        if prim.empty:
            continue
        grid = {
            (r.hyperparameter, r.metric): (r.dp, r.n_pairs) for r in prim.itertuples(index=False)
        }
        columns: list[list[Cell]] = []
        for m in metrics:
            vals = [grid.get((h, m), (np.nan, np.nan)) for h in hyper]
            dps = [v[0] for v in vals]
            texts = _fewer_pairs_texts(dps, [v[1] for v in vals])
            cells = marked_cells(dps, texts)
            if len(hyper) < 2:
                cells = [Cell(c.text, numeric=True) for c in cells]
            columns.append(cells)
        for i, h in enumerate(hyper):
            rows.append(
                [Cell(display_algorithm(alg)), Cell(display_hyperparameter(h, alg))]
                + [col[i] for col in columns]
            )
        rules.add(len(rows) - 1)
    csv = pd.DataFrame.from_records(
        records, columns=["algorithm", "hyperparameter", "metric", "cutoff", "dp", "n_pairs"]
    )
    caption = (
        f"One hyperparameter at a time (cutoff {cutoff}): DP of pairs of configurations that "
        "differ in that hyperparameter only, all others fixed. Bold: per algorithm and metric, "
        "the hyperparameter that by itself moves the metric most (lowest DP)."
    )
    notes = []
    if any(FEWER_PAIRS in c.text for r in rows for c in r):
        notes.append(
            f"{FEWER_PAIRS} fewer pairs than another hyperparameter of the same algorithm: DP is "
            "a sum over pairs, so compare these with care."
        )
    notes += _left_out_note(dp, set(sub["algorithm"]))
    return Table(
        "one_at_a_time",
        caption,
        [Block(header, rows, rules_after=rules)] if rows else [],
        csv,
        notes,
    )
