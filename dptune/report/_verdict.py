"""The verdict section, first in report.md and alone in verdict.md: which metric to tune with.

Renders the verdict frame of the analysis (one row per algorithm, cutoff and family of metrics,
computed by :mod:`dptune.analysis.verdict.rules`) generically: its ``text`` column as sentences a
researcher can paste, then a table of the columns it knows (family, recommended metric, robust
DP per 25 pairs with its interval, the metrics less discriminative, tied or not below the noise floor, the
dominant hyperparameter), then the DP figure of each cutoff when the report has one. Metric lists are ``;``-joined keys in the frame and display names here; columns
the table does not know stay in verdict.csv.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dptune.report._format import fmt, is_missing, ordered_algorithms
from dptune.report._table import Block, Cell
from dptune.vocab import display_algorithm, display_hyperparameter, display_metric

__all__ = ["verdict_section", "verdict_document", "recommendation_text"]

#: Metric-list columns of the verdict frame and their table headers, in table order.
_LISTS = (
    ("less_discriminative", "Significantly less discriminative"),
    ("tied", "Tied with it"),
    ("not_below_floor", "Not below the A/A floor"),
    ("no_evidence", "No evidence"),
    ("downstream_differ", "Its choice differs significantly on test"),
)


def _metrics(text: object, cutoff: int) -> str:
    """``;``-joined metric keys -> display names at ``cutoff`` (an en dash when empty)."""
    if is_missing(text) or not str(text):
        return "–"
    return ", ".join(display_metric(m, cutoff) for m in str(text).split(";") if m)


def _ordered(verdict: pd.DataFrame) -> pd.DataFrame:
    """Rows in the report's algorithm order, cutoffs ascending, families as the verdict lists
    them."""
    rank = {a: i for i, a in enumerate(ordered_algorithms(verdict["algorithm"].astype(str)))}
    v = verdict.assign(_a=verdict["algorithm"].astype(str).map(rank))
    return v.sort_values(["_a", "cutoff"], kind="stable").drop(columns="_a")


def recommendation_text(row: dict, n: int) -> str:
    """What the verdict recommends for one row: the metric (with its exact ties), "too few
    pairs (k)" or "no evidence"; the one wording of the verdict table and Table 4."""
    rec = row.get("recommended")
    if bool(row.get("too_few_pairs")) and not is_missing(row.get("too_few_pairs")):
        return f"too few pairs ({int(row['n_pairs'])})"
    if not rec or is_missing(rec):
        return "no evidence"
    text = display_metric(str(rec), n)
    same = row.get("identical")
    if same and not is_missing(same):
        text += f" (tied: {_metrics(same, n)})"
    return text


def _table(verdict: pd.DataFrame, test_split: bool = True) -> Block:
    """The verdict's known columns as one table block (without a test split, no column of
    choices judged on it)."""
    cols = set(verdict.columns) - (set() if test_split else {"downstream_differ"})
    family = "family" in cols
    header = ["Algorithm", "N"] + (["Family"] if family else []) + ["Tune with"]
    if "dp_at_25" in cols:
        with_ci = "ci_low" in cols and pd.to_numeric(verdict["ci_low"], errors="coerce").notna().any()
        header.append("DP per 25 pairs [95% CI]" if with_ci else "DP per 25 pairs")
    lists = [(c, h) for c, h in _LISTS if c in cols]
    header += [h for _, h in lists]
    if "dominant_hyperparameter" in cols:
        header.append("Dominant hyperparameter")
    rows = []
    for r in verdict.to_dict("records"):
        n = int(r["cutoff"])
        rec = r.get("recommended")
        row = [Cell(display_algorithm(str(r["algorithm"]))), Cell(str(n), numeric=True)]
        if family:
            row.append(Cell(str(r["family"])))
        row.append(Cell(recommendation_text(r, n), bold=bool(rec) and not is_missing(rec)))
        if "dp_at_25" in cols:
            text = fmt(r["dp_at_25"], 2)
            if not is_missing(r.get("ci_low")) and not is_missing(r.get("ci_high")):
                text += f" [{fmt(r['ci_low'], 2)}, {fmt(r['ci_high'], 2)}]"
            row.append(Cell(text, numeric=True))
        row += [Cell(_metrics(r[c], n)) for c, _ in lists]
        if "dominant_hyperparameter" in cols:
            h = r["dominant_hyperparameter"]
            text = (display_hyperparameter(str(h), str(r["algorithm"]))
                    if h and not is_missing(h) else "–")
            agree = r.get("dominance_agreement")
            if agree and not is_missing(agree):
                text = f"{text} ({agree})" if text != "–" else f"none, analyses disagree ({agree})"
            row.append(Cell(text))
        rows.append(row)
    return Block([Cell(h) for h in header], rows)


def verdict_section(verdict: pd.DataFrame | None,
                    figures: Sequence[tuple[str, int, str]] = (),
                    test_split: bool = True) -> str | None:
    """Markdown body of the verdict section, or None when there is no verdict. ``figures``:
    ``(file stem, cutoff, caption)`` of the DP figure of each cutoff, embedded after the
    table. ``test_split``: whether the data has a test split on which each family's choice
    is judged (outside data may have none)."""
    if verdict is None or verdict.empty:
        return None
    v = _ordered(verdict)
    lines = []
    if "text" in v.columns:
        lines += [f"- {t}" for t in v["text"].astype(str) if t]
        lines.append("")
    lines += [_table(v, test_split).to_markdown(), ""]
    lines.append(
        "Lower DP = more discriminative. The robust DP uses every pair of configurations (or a "
        "seeded sample of them) and is reported as DP at P = 25 pairs, so rows compare; all "
        "columns are in `verdict.csv`. Metrics are ranked within their family only (accuracy "
        "and novelty metrics measure different things)"
        + ("; each family's choice is judged on the test split by a metric of the same family."
           if test_split else "; the data has no held-out values, so no choice is judged "
           "beyond these folds.")
    )
    for stem, n, caption in figures:
        lines += ["", f"![DP of each metric with its 95% interval, N = {n}]({stem}.png)", "",
                  f"{caption} ([SVG]({stem}.svg))"]
    return "\n".join(lines)


def verdict_document(body: str | None, title: str | None = None) -> str | None:
    """verdict.md: the verdict section's body (:func:`verdict_section`) as a document of its
    own, or None without a verdict."""
    if body is None:
        return None
    head = f"# dptune verdict{': ' + title if title else ''}"
    return f"{head}\n\n{body.rstrip(chr(10))}\n"
