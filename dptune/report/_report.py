"""Report stage: the paper's tables (Markdown, CSV, LaTeX), Figure 1 (PNG, SVG) and ``report.md``.

This is the last stage of the pipeline (``data -> split -> sweep -> store -> dp -> report``). It
reads only DataFrames produced by :mod:`dptune.dp` and the sweep, never the result store, so it is
cheap to rerun. Everything it writes is a pure function of its inputs: rerunning with the same
inputs gives byte-identical files (figures included), which keeps reports diff-able under version
control.

Outputs of :func:`write_report` (Anelli et al., RecSys 2019):

- ``table1``: data set statistics (paper Table 1).
- ``table3``: DP of every metric, scope ``all``; lowest DP of a row bold, highest underlined.
- ``table4``: best and worst metric, best DP, best DP + sd, worst DP (paper Table 4).
- ``table5``: DP among configurations sharing one hyperparameter value (paper Table 5).
- ``one_at_a_time``: DP of pairs that differ in one hyperparameter only (SPEC 6).
- ``figure1`` (+ ``figure1_at{N}`` for every other cutoff): averaged p-value curves, sd bands.
- ``report.md``: all of the above, experiment settings, best configuration per metric and a
  computed check of whether the most discriminative metric also selects well on test.

Conventions: lower DP = more discriminative = better. CSV files are machine-readable (raw
algorithm/metric keys, full-precision numbers, no markup); Markdown and LaTeX use display names,
3 decimals, ``**bold**`` / ``<u>underline</u>`` and ``\\textbf{}`` / ``\\underline{}``. LaTeX
tables need ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dptune.analysis._dp import CURVES_COLUMNS, DP_COLUMNS
from dptune.errors import input_error
from dptune.vocab import (
    ALGORITHM_NAMES,
    ALGORITHM_ORDER,
    HYPERPARAMETER_ORDER,
    METRIC_NAMES,
    TABLE_METRIC_ORDER,
    display_algorithm,
    display_hyperparameter,
    display_metric,
    metric_color,
    ordered,
)

__all__ = [
    "ALGORITHM_NAMES",
    "METRIC_NAMES",
    "TABLE_METRIC_ORDER",
    "PANEL_SIZE",
    "FIG_DPI",
    "MAX_PANEL_COLUMNS",
    "Cell",
    "Block",
    "Table",
    "display_algorithm",
    "display_metric",
    "table1",
    "table3",
    "table4",
    "table5",
    "one_at_a_time_table",
    "figure1",
    "figure_pixel_size",
    "save_figure",
    "settings_rows",
    "selection_sentences",
    "write_report",
]

# --------------------------------------------------------------------------------------------
# Names and orders
# --------------------------------------------------------------------------------------------

#: Short column headers of Table 3, as printed in the paper.
_TABLE3_HEADERS: dict[str, str] = {
    "efd": "EFD",
    "epc": "EPC",
    "mrr": "MRR",
    "ndcg": "nDCG",
    "precision": "Prec",
    "recall": "Rec",
}

#: Size of one Figure 1 panel in inches, the figure dpi and panels per row: a figure with ``n``
#: panels is ``min(n, 3)`` panels wide, so its pixel size is fixed by the number of algorithms.
PANEL_SIZE: tuple[float, float] = (4.6, 3.6)
FIG_DPI: int = 100
MAX_PANEL_COLUMNS: int = 3
_SVG_HASH_SALT = "dptune-report"

# the input columns are dp.analyze's output contract
_DP_COLUMNS = tuple(DP_COLUMNS)
_CURVE_COLUMNS = tuple(CURVES_COLUMNS)
_DATASET_COLUMNS = ("dataset", "users", "items", "ratings", "sparsity")
_BEST_COLUMNS = (
    "algorithm",
    "metric",
    "cutoff",
    "config_id",
    "params",
    "validation_mean",
    "test_value",
)
_NOISE_COLUMNS = ("algorithm", "cutoff", "metric", "position", "mean")

_MISSING = "–"  # shown for a missing value in Markdown (LaTeX gets "--")
_FEWER_PAIRS = "†"  # marks a DP computed on fewer pairs than the others it is compared with


def _ordered_algorithms(keys: Iterable[str]) -> list[str]:
    """Order algorithm keys as the paper does (Item-kNN, User-kNN, BPR-MF, then the rest)."""
    return ordered(keys, ALGORITHM_ORDER)


def _ordered_metrics(keys: Iterable[str]) -> list[str]:
    """Order metric keys in the paper's Table 3 order, unknown metrics after them."""
    return ordered(keys, TABLE_METRIC_ORDER)


def _ordered_hyperparameters(
    keys: Iterable[str], hyperparameter_order: Mapping[str, Sequence[object]] | None
) -> list[str]:
    """Order hyperparameters: keys of ``hyperparameter_order`` first, then the paper's order."""
    preferred = list(hyperparameter_order or {}) + [
        h for h in HYPERPARAMETER_ORDER if h not in (hyperparameter_order or {})
    ]
    return ordered(keys, preferred)


def _value_norm(value: object) -> object:
    """Normalise a hyperparameter value for matching and sorting: a float when it parses."""
    try:
        return float(str(value))
    except ValueError:
        return str(value)


def _ordered_values(values: Iterable[str], order: Sequence[object] | None) -> list[str]:
    """Order the value strings of one hyperparameter.

    Values listed in ``order`` come first in that order (matched numerically when both parse as
    numbers, so ``10`` matches ``"10"`` and ``0.1`` matches ``"0.10"``); the remaining values
    follow sorted numerically, non-numeric values last and sorted as text.
    """
    given = [_value_norm(v) for v in (order or [])]

    def key(v: str) -> tuple[int, int, float, str]:
        norm = _value_norm(v)
        if norm in given:
            return (0, given.index(norm), 0.0, "")
        if isinstance(norm, float):
            return (1, 0, norm, "")
        return (2, 0, 0.0, str(norm))

    return sorted({str(v) for v in values}, key=key)


def _display_value(value: str) -> str:
    """Format a hyperparameter value for a table header (integers as is, floats to 6 digits)."""
    norm = _value_norm(value)
    if isinstance(norm, float) and math.isfinite(norm) and not norm.is_integer():
        return f"{norm:.6g}"
    return str(value)


# --------------------------------------------------------------------------------------------
# Number formatting
# --------------------------------------------------------------------------------------------


def _is_missing(x: object) -> bool:
    """True for ``None``/NaN/NA (anything pandas calls missing)."""
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _fmt(x: object, decimals: int = 3) -> str:
    """Format a number with a fixed number of decimals; missing values as an en dash."""
    if _is_missing(x):
        return _MISSING
    return f"{float(x):.{decimals}f}"


def _fmt_setting(value: object) -> str:
    """Format one settings value for the settings table (lists joined, floats to 6 digits)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(_fmt_setting(v) for v in items)
    if value is None:
        return _MISSING
    return str(value)


# --------------------------------------------------------------------------------------------
# Table model and renderers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One table cell: its text and markup (rendered per format, never stored pre-marked)."""

    text: str
    bold: bool = False
    underline: bool = False
    numeric: bool = False


@dataclass
class Block:
    """One tabular block: a header row, body rows and where horizontal rules go.

    ``rules_after`` holds body row indices followed by a rule (``\\midrule`` in LaTeX; ignored
    in Markdown, whose tables have no inner rules). ``title`` is printed above the block.
    """

    header: list[Cell]
    rows: list[list[Cell]]
    title: str | None = None
    rules_after: set[int] = field(default_factory=set)


@dataclass
class Table:
    """A report table: caption, one or more blocks (md/tex) and the machine-readable CSV frame."""

    name: str
    caption: str
    blocks: list[Block]
    csv: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        """Render as Markdown: a caption line, then each block (GFM pipe tables)."""
        parts = [f"{self.caption}", ""]
        for block in self.blocks:
            if block.title:
                parts += [f"*{_md_escape(block.title)}*", ""]
            parts += [_md_block(block), ""]
        if not self.blocks:
            parts += ["(no data)", ""]
        parts += [f"{_md_escape(n)}" for n in self.notes]
        return "\n".join(parts).rstrip("\n") + "\n"

    def to_latex(self) -> str:
        """Render as a LaTeX ``table`` float with booktabs rules (needs ``booktabs``)."""
        lines = [
            "% Generated by dptune.report; needs \\usepackage{booktabs}.",
            "\\begin{table}[htbp]",
            "\\centering",
            f"\\caption{{{_tex_escape(self.caption)}}}",
            f"\\label{{tab:{self.name.replace('_', '-')}}}",
        ]
        for i, block in enumerate(self.blocks):
            if i:
                lines.append("\\medskip")
            if block.title:
                lines.append(f"{{\\small\\textit{{{_tex_escape(block.title)}}}}}\\par\\smallskip")
            lines += _tex_block(block)
        if not self.blocks:
            lines.append("(no data)")
        for note in self.notes:
            lines.append(f"\\par\\smallskip{{\\footnotesize {_tex_escape(note)}}}")
        lines.append("\\end{table}")
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """Render the CSV frame: header, plain full-precision numbers, ``\\n`` line ends."""
        return self.csv.to_csv(index=False, lineterminator="\n")


def _md_escape(text: str) -> str:
    """Escape characters that would break a Markdown table cell or start markup."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_cell(cell: Cell) -> str:
    """Render one cell as Markdown with its markup."""
    text = _md_escape(cell.text)
    if not text:
        return ""
    if cell.underline:
        text = f"<u>{text}</u>"
    if cell.bold:
        text = f"**{text}**"
    return text


def _md_block(block: Block) -> str:
    """Render one block as a GFM pipe table (numeric columns right-aligned)."""
    width = max([len(block.header)] + [len(r) for r in block.rows])
    header = block.header + [Cell("")] * (width - len(block.header))
    numeric = [
        any(len(r) > j and r[j].numeric for r in block.rows)
        or (j < len(header) and header[j].numeric)
        for j in range(width)
    ]
    lines = ["| " + " | ".join(_md_cell(c) for c in header) + " |"]
    lines.append("| " + " | ".join("---:" if n else ":---" for n in numeric) + " |")
    for row in block.rows:
        cells = row + [Cell("")] * (width - len(row))
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return "\n".join(lines)


_TEX_ESCAPES = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "–": "--",
    "±": "$\\pm$",
    "†": "$^\\dagger$",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
}


def _tex_escape(text: str) -> str:
    """Escape LaTeX special characters (and map the few non-ASCII marks the tables use)."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def _tex_cell(cell: Cell) -> str:
    """Render one cell as LaTeX with its markup."""
    text = _tex_escape(cell.text)
    if not text:
        return ""
    if cell.underline:
        text = f"\\underline{{{text}}}"
    if cell.bold:
        text = f"\\textbf{{{text}}}"
    return text


def _tex_block(block: Block) -> list[str]:
    """Render one block as a booktabs ``tabular``."""
    width = max([len(block.header)] + [len(r) for r in block.rows])
    header = block.header + [Cell("")] * (width - len(block.header))
    numeric = [any(len(r) > j and r[j].numeric for r in block.rows) for j in range(width)]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    lines.append(" & ".join(_tex_cell(c) for c in header) + " \\\\")
    lines.append("\\midrule")
    for i, row in enumerate(block.rows):
        cells = row + [Cell("")] * (width - len(row))
        lines.append(" & ".join(_tex_cell(c) for c in cells) + " \\\\")
        if i in block.rules_after and i != len(block.rows) - 1:
            lines.append("\\midrule")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return lines


def _marked_cells(
    values: Sequence[float],
    texts: Sequence[str] | None = None,
    underline_max: bool = False,
) -> list[Cell]:
    """Numeric cells for one comparison group: the lowest bold, optionally the highest underlined.

    Marks are set only when at least two values are present (one value is not "the best" of
    anything); exact ties are all marked; the highest is not underlined when it equals the lowest.
    """
    arr = np.array([np.nan if _is_missing(v) else float(v) for v in values], dtype=float)
    texts = list(texts) if texts is not None else [_fmt(v) for v in arr]
    present = ~np.isnan(arr)
    lo = hi = np.nan
    if present.sum() >= 2:
        lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    cells = []
    for v, t in zip(arr, texts, strict=True):
        bold = bool(not np.isnan(v) and v == lo)
        under = bool(underline_max and not np.isnan(v) and v == hi and hi != lo)
        cells.append(Cell(t, bold=bold, underline=under, numeric=True))
    return cells


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _require(df: pd.DataFrame, columns: Sequence[str], source: str) -> pd.DataFrame:
    """Check that ``df`` has ``columns`` and return a copy with clean key dtypes.

    Keys (``algorithm``, ``scope``, ``metric``) become Python strings and ``cutoff`` / positions
    integers, so lookups do not depend on whether the producer used categoricals or int16.
    """
    if not isinstance(df, pd.DataFrame):
        raise input_error(source, None, f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise input_error(source, ", ".join(missing), "missing column(s)")
    out = df.copy()
    for col in ("algorithm", "scope", "metric", "dataset", "params"):
        if col in out.columns:
            out[col] = out[col].astype(str)
    for col in ("cutoff", "position", "config_id"):
        if col in out.columns and len(out):
            if out[col].isna().any():
                raise input_error(source, col, "has missing values")
            out[col] = out[col].astype("int64")
    return out


def _check_unique(df: pd.DataFrame, keys: Sequence[str], source: str) -> None:
    """Raise a one-line error when ``keys`` do not identify the rows of ``df``."""
    dup = df.duplicated(list(keys), keep=False)
    if dup.any():
        first = df.loc[dup, list(keys)].iloc[0].to_dict()
        raise input_error(source, ", ".join(keys), f"duplicated rows, e.g. {first}")


def _scope_all(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of the whole-grid scope (Tables 3 and 4)."""
    return dp[dp["scope"] == "all"]


def _value_scopes(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``<hyperparameter>=<value>`` scopes with ``hyperparameter``/``value`` columns."""
    mask = dp["scope"].str.contains("=", regex=False) & ~dp["scope"].str.startswith("only:")
    sub = dp[mask].copy()
    parts = sub["scope"].str.split("=", n=1)
    sub["hyperparameter"] = parts.str[0].astype(str)
    sub["value"] = parts.str[1].astype(str)
    return sub


def _only_scopes(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``only:<hyperparameter>`` scopes with a ``hyperparameter`` column."""
    sub = dp[dp["scope"].str.startswith("only:")].copy()
    sub["hyperparameter"] = sub["scope"].str.slice(len("only:")).astype(str)
    return sub


def _pairs_note(dp: pd.DataFrame) -> str:
    """Describe the number of pairs and folds behind a set of DP values (``P = 25 pairs``)."""

    def span(col: str) -> str:
        vals = pd.to_numeric(dp[col], errors="coerce").dropna()
        if vals.empty:
            return "?"
        lo, hi = int(vals.min()), int(vals.max())
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    return f"P = {span('n_pairs')} pairs, {span('n_folds')} folds"


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def table1(datasets: pd.DataFrame | None) -> Table:
    """Table 1: data set statistics (users, items, ratings, sparsity as a percent, 2 decimals)."""
    if datasets is None:
        datasets = pd.DataFrame(columns=list(_DATASET_COLUMNS))
    ds = _require(datasets, _DATASET_COLUMNS, "datasets")
    header = [Cell("Dataset"), Cell("Users"), Cell("Items"), Cell("Ratings"), Cell("Sparsity")]
    rows = []
    for r in ds.itertuples(index=False):
        rows.append(
            [
                Cell(str(r.dataset)),
                Cell(_fmt(r.users, 0), numeric=True),
                Cell(_fmt(r.items, 0), numeric=True),
                Cell(_fmt(r.ratings, 0), numeric=True),
                Cell(
                    _MISSING if _is_missing(r.sparsity) else f"{100 * float(r.sparsity):.2f}%",
                    numeric=True,
                ),
            ]
        )
    csv = ds[list(_DATASET_COLUMNS)].reset_index(drop=True)
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
    dp = _require(dp, _DP_COLUMNS, "dp")
    sub = _scope_all(dp)
    metrics = _ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("N")] + [
        Cell(f"{_TABLE3_HEADERS.get(m, display_metric(m))}@N") for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            c = a[a["cutoff"] == cutoff].set_index("metric")["dp"]
            values = [c.get(m, np.nan) for m in metrics]
            rows.append(
                [Cell(display_algorithm(alg)), Cell(str(int(cutoff)), numeric=True)]
                + _marked_cells(values, underline_max=True)
            )
            records.append(
                {"algorithm": alg, "cutoff": int(cutoff)}
                | {
                    m: float(v) if not _is_missing(v) else np.nan
                    for m, v in zip(metrics, values, strict=True)
                }
            )
        rules.add(len(rows) - 1)
    csv = pd.DataFrame.from_records(records, columns=["algorithm", "cutoff", *metrics])
    caption = (
        "Table 3: Discriminative power (DP, sum of the fold-averaged p-value curve; lower is more "
        f"discriminative) over the whole grid; {_pairs_note(sub)}. Bold: lowest DP of the row; "
        "underlined: highest."
    )
    return Table("table3", caption, [Block(header, rows, rules_after=rules)] if rows else [], csv)


def _best_worst(values: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """Best (lowest DP) and worst (highest DP) rows of one (algorithm, cutoff); ties -> table order."""
    v = values.dropna(subset=["dp"])
    if v.empty:
        return None
    order = {m: i for i, m in enumerate(_ordered_metrics(v["metric"]))}
    v = v.assign(_o=v["metric"].map(order)).sort_values("_o", kind="stable")
    best = v.loc[v["dp"].idxmin()]
    worst = v.loc[v["dp"].idxmax()]
    return best, worst


def table4(dp: pd.DataFrame) -> Table:
    """Table 4: per (algorithm, cutoff) the best and worst metric, best DP, best DP + sd, worst DP.

    "Best + Std Dev" is ``dp_plus_sd`` of the best metric: the sum of (mean + sd) of its curve,
    the paper's worst-case check of whether the best metric stays ahead across folds. When ``dp``
    carries ``dp_ci_low``/``dp_ci_high``, the best metric's interval is added.
    """
    dp = _require(dp, _DP_COLUMNS, "dp")
    sub = _scope_all(dp)
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
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        for cutoff in sorted(a["cutoff"].unique()):
            bw = _best_worst(a[a["cutoff"] == cutoff])
            if bw is None:
                continue
            best, worst = bw
            row = [
                Cell(display_algorithm(alg)),
                Cell(str(int(cutoff)), numeric=True),
                Cell(display_metric(best["metric"], cutoff)),
                Cell(display_metric(worst["metric"], cutoff)),
                Cell(_fmt(best["dp"]), numeric=True),
                Cell(_fmt(best["dp_plus_sd"]), numeric=True),
                Cell(_fmt(worst["dp"]), numeric=True),
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
                row.append(Cell(f"[{_fmt(lo)}, {_fmt(hi)}]", numeric=True))
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
        _fmt(v) + (_FEWER_PAIRS if not _is_missing(v) and not pd.isna(n) and n < most else "")
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
    dp = _require(dp, _DP_COLUMNS, "dp")
    sub = _value_scopes(dp)
    order = hyperparameter_order or {}
    metric, cutoff = primary[0], int(primary[1])
    blocks: list[Block] = []
    records = []
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        rows: list[list[Cell]] = []
        rules: set[int] = set()
        for h in _ordered_hyperparameters(a["hyperparameter"].unique(), order):
            ah = a[a["hyperparameter"] == h]
            values = _ordered_values(ah["value"].unique(), order.get(h))
            rank = {v: i for i, v in enumerate(values)}
            metric_rank = {m: i for i, m in enumerate(_ordered_metrics(ah["metric"].unique()))}
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
                [Cell(display_hyperparameter(h))]
                + [Cell(_display_value(v), numeric=True) for v in shown]
            )
            rows.append([Cell("DP")] + _marked_cells(dps, texts))
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
    if any(_FEWER_PAIRS in c.text for b in blocks for r in b.rows for c in r):
        notes.append(
            f"{_FEWER_PAIRS} fewer pairs than the other values of the row: DP is a sum over "
            "pairs, so compare these with care."
        )
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
    dp = _require(dp, _DP_COLUMNS, "dp")
    sub = _only_scopes(dp)
    cutoff = int(primary[1])
    metrics = _ordered_metrics(sub["metric"].unique())
    header = [Cell("Algorithm"), Cell("Hyperparameter")] + [
        Cell(display_metric(m, cutoff)) for m in metrics
    ]
    rows: list[list[Cell]] = []
    rules: set[int] = set()
    records = []
    metric_rank = {m: i for i, m in enumerate(metrics)}
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        hyper = _ordered_hyperparameters(a["hyperparameter"].unique(), hyperparameter_order)
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
            cells = _marked_cells(dps, texts)
            if len(hyper) < 2:
                cells = [Cell(c.text, numeric=True) for c in cells]
            columns.append(cells)
        for i, h in enumerate(hyper):
            rows.append(
                [Cell(display_algorithm(alg)), Cell(display_hyperparameter(h))]
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
    if any(_FEWER_PAIRS in c.text for r in rows for c in r):
        notes.append(
            f"{_FEWER_PAIRS} fewer pairs than another hyperparameter of the same algorithm: DP is "
            "a sum over pairs, so compare these with care."
        )
    return Table(
        "one_at_a_time",
        caption,
        [Block(header, rows, rules_after=rules)] if rows else [],
        csv,
        notes,
    )


# --------------------------------------------------------------------------------------------
# Figure 1
# --------------------------------------------------------------------------------------------


def _panel_grid(n_panels: int) -> tuple[int, int]:
    """(rows, columns) of the panel grid for ``n_panels`` algorithms."""
    ncols = max(1, min(n_panels, MAX_PANEL_COLUMNS))
    return max(1, math.ceil(n_panels / ncols)), ncols


def figure_pixel_size(n_panels: int) -> tuple[int, int]:
    """Pixel (height, width) of a Figure 1 PNG with ``n_panels`` panels (for callers and tests)."""
    nrows, ncols = _panel_grid(n_panels)
    return (
        round(PANEL_SIZE[1] * nrows * FIG_DPI),
        round(PANEL_SIZE[0] * ncols * FIG_DPI),
    )


def figure1(
    curves: pd.DataFrame,
    dp: pd.DataFrame,
    cutoff: int,
    noise_floor: pd.DataFrame | None = None,
) -> Figure:
    """Figure 1 for one cutoff: per algorithm, each metric's averaged p-value curve.

    x = pair rank 1..P (p-values sorted decreasing), y = mean p-value over folds with a shaded
    band of +-1 fold-to-fold sd clipped to [0, 1]; the legend gives each metric's DP (from ``dp``,
    scope ``all``; the curve's sum when missing). A given ``noise_floor`` (A/A curves, columns
    ``algorithm, cutoff, metric, position, mean``) is drawn dashed in the metric's colour.
    Built on :class:`matplotlib.figure.Figure` directly (no pyplot state, Agg rendering).
    """
    curves = _require(curves, _CURVE_COLUMNS, "curves")
    dp = _require(dp, _DP_COLUMNS, "dp")
    noise = (
        _require(noise_floor, _NOISE_COLUMNS, "noise_floor") if noise_floor is not None else None
    )
    cutoff = int(cutoff)
    c = curves[(curves["scope"] == "all") & (curves["cutoff"] == cutoff)]
    algorithms = _ordered_algorithms(c["algorithm"].unique())
    nrows, ncols = _panel_grid(len(algorithms))
    fig = Figure(
        figsize=(PANEL_SIZE[0] * ncols, PANEL_SIZE[1] * nrows), dpi=FIG_DPI, layout="constrained"
    )
    axes = fig.subplots(nrows, ncols, squeeze=False)
    dp_all = _scope_all(dp)
    extra_colors: list[str] = []
    for ax, alg in zip(axes.flat, algorithms, strict=False):
        ca = c[c["algorithm"] == alg]
        # positions are 0-based (dp.analyze, noise); the plot shows 1-based pair ranks
        max_pos = int(ca["position"].max()) + 1
        drew_noise = False
        for m in _ordered_metrics(ca["metric"].unique()):
            s = ca[ca["metric"] == m].sort_values("position")
            x = s["position"].to_numpy(dtype=float) + 1.0
            y = s["mean"].to_numpy(dtype=float)
            sd = np.nan_to_num(s["sd"].to_numpy(dtype=float), nan=0.0)
            hit = dp_all[
                (dp_all["algorithm"] == alg)
                & (dp_all["metric"] == m)
                & (dp_all["cutoff"] == cutoff)
            ]["dp"]
            dp_value = float(hit.iloc[0]) if len(hit) else float(np.nansum(y))
            color = metric_color(m, extra_colors)
            ax.fill_between(
                x,
                np.clip(y - sd, 0.0, 1.0),
                np.clip(y + sd, 0.0, 1.0),
                color=color,
                alpha=0.15,
                linewidth=0,
            )
            ax.plot(
                x,
                y,
                color=color,
                linewidth=1.6,
                marker="o",
                markersize=2.5,
                label=f"{display_metric(m, cutoff)} (DP {dp_value:.3f})",
            )
            if noise is not None:
                n = noise[
                    (noise["algorithm"] == alg)
                    & (noise["metric"] == m)
                    & (noise["cutoff"] == cutoff)
                ].sort_values("position")
                if len(n):
                    ax.plot(
                        n["position"].to_numpy(dtype=float) + 1.0,
                        n["mean"].to_numpy(dtype=float),
                        color=color,
                        linestyle="--",
                        linewidth=1.0,
                    )
                    drew_noise = True
        if drew_noise:
            ax.plot([], [], color="0.3", linestyle="--", linewidth=1.0, label="A/A noise floor")
        if max_pos > 1:
            ax.set_xlim(1, max_pos)
        else:
            ax.set_xlim(0.5, 1.5)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("Pair rank (p-values sorted in decreasing order)")
        ax.set_ylabel("p-value (mean over folds)")
        ax.set_title(f"{display_algorithm(alg)} (N = {cutoff})")
        ax.grid(True, alpha=0.3, linewidth=0.5)
        ax.legend(fontsize=7, loc="upper right", framealpha=0.85)
    for ax in list(axes.flat)[len(algorithms) :]:
        ax.set_visible(False)
    fig.suptitle(f"Averaged p-value curves with ±1 sd across folds (cutoff {cutoff})")
    return fig


def save_figure(fig: Figure, stem: Path, creator: str = "dptune.report") -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.svg`` reproducibly (no dates, fixed SVG ids;
    ``creator`` is the SVG's Creator field), for every figure dptune writes."""
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    with matplotlib.rc_context({"svg.hashsalt": _SVG_HASH_SALT, "svg.fonttype": "path"}):
        fig.savefig(png, format="png", dpi=FIG_DPI, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": creator})
    return [png, svg]


# --------------------------------------------------------------------------------------------
# report.md pieces
# --------------------------------------------------------------------------------------------

_THRESHOLD_KEYS = ("relevance_threshold", "threshold", "relevance", "min_relevant_rating")
_VARIANT_KEYS = ("metric_variant", "variant", "relevance_aware", "novelty_variant")


def _flatten(settings: Mapping[str, object], prefix: str = "") -> list[tuple[str, object]]:
    """Flatten nested mappings to ``(dotted.key, value)`` pairs in insertion order."""
    out: list[tuple[str, object]] = []
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += _flatten(value, f"{name}.")
        else:
            out.append((name, value))
    return out


def _find_setting(flat: list[tuple[str, object]], keys: Sequence[str]) -> tuple[str, object] | None:
    """First flattened setting whose last key component is one of ``keys`` (in ``keys`` order)."""
    for want in keys:
        for name, value in flat:
            if name.rsplit(".", 1)[-1].lower().replace("-", "_").replace(" ", "_") == want:
                return name, value
    return None


def settings_rows(settings: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """(setting, value) rows for the report's settings table.

    The relevance threshold and the metric variant come first and are always present ("not
    recorded" when ``settings`` lacks them): SPEC 5 requires every report to name both. Nested
    mappings (e.g. package versions) are flattened to dotted keys; the rest keeps dict order.
    """
    flat = _flatten(settings or {})
    rows: list[tuple[str, str]] = []
    used: set[str] = set()
    thr = _find_setting(flat, _THRESHOLD_KEYS)
    if thr is None:
        rows.append(("Relevance threshold", "not recorded"))
    else:
        used.add(thr[0])
        value = thr[1]
        text = (
            f"rating >= {_fmt_setting(value)} is relevant"
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else _fmt_setting(value)
        )
        rows.append(("Relevance threshold", text))
    var = _find_setting(flat, _VARIANT_KEYS)
    if var is None:
        rows.append(("Metric variant", "not recorded"))
    else:
        used.add(var[0])
        value = var[1]
        if isinstance(value, bool):
            text = (
                "relevance-aware (EPC/EFD count relevant recommended items only)"
                if value
                else "relevance-unaware (EPC/EFD with rel = 1)"
            )
        else:
            text = _fmt_setting(value)
        rows.append(("Metric variant", text))
    for name, value in flat:
        if name not in used:
            rows.append((name.replace("_", " "), _fmt_setting(value)))
    return rows


def _md_simple_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]
) -> str:
    """A plain GFM table from strings (used for report-only tables)."""
    block = Block(
        [Cell(h) for h in header],
        [[Cell(t, numeric=n) for t, n in zip(r, numeric, strict=True)] for r in rows],
    )
    return _md_block(block)


def _best_table_md(best: pd.DataFrame, primary: tuple[str, int]) -> str:
    """Markdown table of the configuration each metric@N selects on validation, with test values."""
    extra = [c for c in best.columns if c.startswith("test_") and c != "test_value"]
    header = ["Algorithm", "Metric", "Config", "Parameters", "Validation mean", "Test value"]
    header += [f"Test {display_metric(c[len('test_') :], primary[1])}" for c in extra]
    rank_m = {m: i for i, m in enumerate(_ordered_metrics(best["metric"].unique()))}
    rank_a = {a: i for i, a in enumerate(_ordered_algorithms(best["algorithm"].unique()))}
    b = best.assign(_a=best["algorithm"].map(rank_a), _m=best["metric"].map(rank_m)).sort_values(
        ["_a", "cutoff", "_m"], kind="stable"
    )
    rows = []
    for r in b.itertuples(index=False):
        row = [
            display_algorithm(r.algorithm),
            display_metric(r.metric, r.cutoff),
            str(int(r.config_id)),
            str(r.params),
            _fmt(r.validation_mean, 4),
            _fmt(r.test_value, 4),
        ]
        row += [_fmt(getattr(r, c), 4) for c in extra]
        rows.append(row)
    numeric = [False, False, True, False, True, True] + [True] * len(extra)
    return _md_simple_table(header, rows, numeric)


def _primary_test_value(
    best: pd.DataFrame, algorithm: str, config_id: int, primary: tuple[str, int]
) -> float:
    """Test value of the primary metric@cutoff for one configuration, if ``best`` knows it.

    Looked up in a ``test_<metric>`` column of any row of that configuration, else in
    ``test_value`` of the row where the primary metric@cutoff itself chose that configuration.
    """
    metric, cutoff = primary[0], int(primary[1])
    rows = best[(best["algorithm"] == algorithm) & (best["config_id"] == config_id)]
    col = f"test_{metric}"
    if col in best.columns:
        vals = pd.to_numeric(rows[col], errors="coerce").dropna()
        if len(vals):
            return float(vals.iloc[0])
    own = rows[(rows["metric"] == metric) & (rows["cutoff"] == cutoff)]["test_value"]
    own = pd.to_numeric(own, errors="coerce").dropna()
    return float(own.iloc[0]) if len(own) else float("nan")


def selection_sentences(
    dp: pd.DataFrame, best: pd.DataFrame | None, primary: tuple[str, int] = ("ndcg", 10)
) -> list[str]:
    """One computed sentence per algorithm: does the most discriminative metric also choose well?

    At the primary cutoff, compares the configuration chosen (on validation) by the metric with
    the lowest DP with the one chosen by the metric with the highest DP, by their test value of the
    primary metric when known (else each one's own test value). States numbers only.
    """
    dp = _require(dp, _DP_COLUMNS, "dp")
    metric, cutoff = primary[0], int(primary[1])
    pname = display_metric(metric, cutoff)
    sub = _scope_all(dp)
    sub = sub[sub["cutoff"] == cutoff]
    if best is not None and len(best):
        best = _require(best, _BEST_COLUMNS, "best")
    out = []
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        name = display_algorithm(alg)
        bw = _best_worst(sub[sub["algorithm"] == alg])
        if bw is None:
            continue
        hi, lo = bw
        hname, lname = display_metric(hi["metric"], cutoff), display_metric(lo["metric"], cutoff)
        if hi["metric"] == lo["metric"]:
            out.append(f"{name}: only one metric has a DP at N = {cutoff}; nothing to compare.")
            continue
        head = (
            f"{name}: the most discriminative metric at N = {cutoff} is {hname} "
            f"(DP {_fmt(hi['dp'])}), the least discriminative {lname} (DP {_fmt(lo['dp'])})."
        )
        if best is None or not len(best):
            out.append(head + " No best-configuration table was given.")
            continue
        pick = {}
        for key, row in (("hi", hi), ("lo", lo)):
            r = best[
                (best["algorithm"] == alg)
                & (best["metric"] == row["metric"])
                & (best["cutoff"] == cutoff)
            ]
            pick[key] = r.iloc[0] if len(r) else None
        if pick["hi"] is None or pick["lo"] is None:
            out.append(head + " The best-configuration table lacks one of them.")
            continue
        ch, cl = int(pick["hi"]["config_id"]), int(pick["lo"]["config_id"])
        th = _primary_test_value(best, alg, ch, primary)
        tl = _primary_test_value(best, alg, cl, primary)
        if ch == cl:
            tail = f" Both select configuration {ch} ({pick['hi']['params']})"
            tail += f", test {pname} {_fmt(th, 4)}." if not math.isnan(th) else "."
        elif not math.isnan(th) and not math.isnan(tl):
            diff = th - tl
            tail = (
                f" {hname} selects configuration {ch} ({pick['hi']['params']}), test {pname} "
                f"{_fmt(th, 4)}; {lname} selects configuration {cl} ({pick['lo']['params']}), "
                f"test {pname} {_fmt(tl, 4)}; difference {diff:+.4f}"
            )
            if diff != 0:
                tail += (
                    f" ({'higher' if diff > 0 else 'lower'} for the most discriminative metric's "
                    "choice)."
                )
            else:
                tail += "."
        else:
            tail = (
                f" {hname} selects configuration {ch} ({pick['hi']['params']}), own test value "
                f"{_fmt(pick['hi']['test_value'], 4)}; {lname} selects configuration {cl} "
                f"({pick['lo']['params']}), own test value {_fmt(pick['lo']['test_value'], 4)}; "
                f"no common test {pname} to compare them on."
            )
        out.append(head + tail)
    return out


def _sakai_table_md(dp: pd.DataFrame, cutoff: int) -> str | None:
    """Markdown table of Sakai-style DP (share of significant pairs +- sd), scope ``all``."""
    sub = _scope_all(dp)
    sub = sub[(sub["cutoff"] == cutoff) & sub["sakai"].notna()]
    if sub.empty:
        return None
    metrics = _ordered_metrics(sub["metric"].unique())
    rows = []
    for alg in _ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg].set_index("metric")
        row = [display_algorithm(alg)]
        for m in metrics:
            if m in a.index:
                sd = a.at[m, "sakai_sd"]
                row.append(_fmt(a.at[m, "sakai"]) + ("" if _is_missing(sd) else f" ± {_fmt(sd)}"))
            else:
                row.append(_MISSING)
        rows.append(row)
    header = ["Algorithm"] + [display_metric(m, cutoff) for m in metrics]
    return _md_simple_table(header, rows, [False] + [True] * len(metrics))


# --------------------------------------------------------------------------------------------
# write_report
# --------------------------------------------------------------------------------------------


def _write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text with ``\\n`` line ends (byte-stable across platforms)."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return path


def _write_table(out_dir: Path, table: Table) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` and ``<name>.tex``."""
    return [
        _write_text(out_dir / f"{table.name}.md", table.to_markdown()),
        _write_text(out_dir / f"{table.name}.csv", table.to_csv()),
        _write_text(out_dir / f"{table.name}.tex", table.to_latex()),
    ]


def write_report(
    out_dir: str | Path,
    dp: pd.DataFrame,
    curves: pd.DataFrame,
    datasets: pd.DataFrame | None,
    best: pd.DataFrame | None,
    settings: Mapping[str, object] | None,
    primary: tuple[str, int] = ("ndcg", 10),
    noise_floor: pd.DataFrame | None = None,
    extra_sections: Sequence[tuple[str, str]] | None = None,
    hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
    title: str | None = None,
    without_dp: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write every table, Figure 1 and ``report.md`` into ``out_dir``; return the paths written.

    Args:
        out_dir: output folder (created if needed; existing files of the same names overwritten).
        dp: DP rows from :func:`dptune.analysis._dp.analyze` (scopes ``all``, ``<h>=<v>``, ``only:<h>``).
        curves: averaged p-value curves (``algorithm, scope, metric, cutoff, position, mean, sd``).
        datasets: Table 1 statistics (``dataset, users, items, ratings, sparsity`` as a fraction).
        best: best configuration per metric@cutoff on validation and its test value (may be
            ``None``); optional ``test_<metric>`` columns hold that configuration's test value of
            another metric at the primary cutoff (used for the "does it choose well" sentences).
        settings: experiment settings for the settings table (relevance threshold and metric
            variant are always listed, "not recorded" when absent).
        primary: metric and cutoff of Table 5, the one-at-a-time table's cutoff, Figure 1's main
            cutoff and the selection check.
        noise_floor: optional A/A curves (``algorithm, cutoff, metric, position, mean``), dashed.
        extra_sections: ``(title, markdown)`` pairs appended to ``report.md``.
        hyperparameter_order: value order per hyperparameter (its key order also orders rows).
        title: report title (default from ``settings["name"]`` when present).
        without_dp: algorithms of the study that have no DP row, with the reason (e.g. a
            single configuration: no pair to compare); named under Table 3 so that the
            report is not silent about them.

    Raises:
        DptuneError: a required column is missing, keys are duplicated, or the primary
            metric@cutoff has no DP in scope ``all``.
    """
    out = Path(out_dir)
    dp = _require(dp, _DP_COLUMNS, "dp")
    curves = _require(curves, _CURVE_COLUMNS, "curves")
    _check_unique(dp, ["algorithm", "scope", "metric", "cutoff"], "dp")
    _check_unique(curves, ["algorithm", "scope", "metric", "cutoff", "position"], "curves")
    if best is not None:
        best = _require(best, _BEST_COLUMNS, "best")
    metric, cutoff = str(primary[0]), int(primary[1])
    primary = (metric, cutoff)
    all_scope = _scope_all(dp)
    if all_scope[(all_scope["metric"] == metric) & (all_scope["cutoff"] == cutoff)].empty:
        available = sorted(
            {f"{m}@{c}" for m, c in zip(all_scope["metric"], all_scope["cutoff"], strict=True)}
        )
        raise input_error(
            "primary",
            f"{metric}@{cutoff}",
            f"no DP in scope 'all' for it (available: {', '.join(available) or 'none'})",
        )
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    t1 = table1(datasets)
    t3 = table3(dp)
    t4 = table4(dp)
    t5 = table5(dp, primary, hyperparameter_order)
    t_one = one_at_a_time_table(dp, primary, hyperparameter_order)
    for t in (t1, t3, t4, t5, t_one):
        written += _write_table(out, t)

    fig_cutoffs = sorted(curves.loc[curves["scope"] == "all", "cutoff"].unique().tolist())
    figures: dict[int, str] = {}
    for n in [cutoff] + [c for c in fig_cutoffs if c != cutoff]:
        if n not in fig_cutoffs:
            continue
        stem = "figure1" if n == cutoff else f"figure1_at{int(n)}"
        fig = figure1(curves, dp, int(n), noise_floor)
        written += save_figure(fig, out / stem)
        figures[int(n)] = stem

    # report.md
    name = title or (str(settings["name"]) if settings and "name" in settings else None)
    lines = [f"# dptune report{': ' + name if name else ''}", ""]
    lines += [
        "Discriminative power (DP) of evaluation metrics over hyperparameter grids, after Anelli "
        "et al. (RecSys 2019): for sampled pairs of configurations, paired t-test p-values per "
        "fold, sorted decreasingly and averaged over folds; DP is the sum of the averaged curve. "
        "Lower DP = more discriminative.",
        "",
        f"Primary metric: {display_metric(metric, cutoff)}.",
        "",
        "## Data sets",
        "",
        t1.to_markdown(),
        "## Experiment settings",
        "",
        _md_simple_table(["Setting", "Value"], settings_rows(settings), [False, False]),
        "",
        "## Discriminative power of the metrics (Table 3)",
        "",
        t3.to_markdown(),
        *[f"- No DP for {display_algorithm(a)}: {why}." for a, why in (without_dp or {}).items()],
        "",
        "## Best and worst metric (Table 4)",
        "",
        t4.to_markdown(),
    ]
    if t5.blocks:
        lines += ["## Dominant hyperparameter (Table 5)", "", t5.to_markdown()]
    if t_one.blocks:
        lines += ["## One hyperparameter at a time", "", t_one.to_markdown()]
    sakai = _sakai_table_md(dp, cutoff)
    if sakai:
        alpha = _find_setting(_flatten(settings or {}), ("alpha", "significance_level"))
        level = f"alpha = {_fmt_setting(alpha[1])}" if alpha else "the configured alpha"
        lines += [
            "## Sakai-style DP",
            "",
            f"Share of the sampled pairs whose p-value is below {level} (mean ± sd over "
            f"folds), N = {cutoff}, scope all; higher is more discriminative.",
            "",
            sakai,
            "",
        ]
    lines += ["## P-value curves (Figure 1)", ""]
    if cutoff in figures:
        lines += [
            f"![Averaged p-value curves per metric with ±1 sd bands, N = {cutoff}]"
            f"({figures[cutoff]}.png)",
            "",
            f"Figure 1: averaged p-value curves at N = {cutoff}, one panel per algorithm "
            f"([SVG]({figures[cutoff]}.svg))"
            + ("; dashed: A/A noise floor." if noise_floor is not None else "."),
            "",
        ]
        others = [n for n in figures if n != cutoff]
        if others:
            lines += [
                "Other cutoffs: " + ", ".join(f"[N = {n}]({figures[n]}.png)" for n in others) + ".",
                "",
            ]
    else:
        lines += [f"No p-value curves at N = {cutoff}.", ""]
    lines += ["## Best configuration per metric", ""]
    if best is not None and len(best):
        lines += [
            "The configuration each metric@N selects by its mean over the validation folds, and "
            "its value of the same metric on the test split.",
            "",
            _best_table_md(best, primary),
            "",
        ]
    else:
        lines += ["No best-configuration table was given.", ""]
    lines += ["### Does the most discriminative metric also choose well?", ""]
    sentences = selection_sentences(dp, best, primary)
    lines += [f"- {s}" for s in sentences] or ["No algorithm to compare."]
    lines.append("")
    for sec_title, body in extra_sections or []:
        lines += [f"## {sec_title}", "", str(body).rstrip("\n"), ""]
    files = [p.name for p in written] + ["report.md"]
    lines += ["## Files", "", ", ".join(f"`{f}`" for f in files), ""]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    written.append(_write_text(out / "report.md", text.rstrip("\n") + "\n"))
    return written
