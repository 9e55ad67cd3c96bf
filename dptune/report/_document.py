"""The sections of ``report.md`` that come from the tables and figures themselves: data sets,
settings, Tables 3-5, one at a time, Sakai's DP, Figure 1 and the best configuration per metric.

:func:`core_sections` returns them in reading order as :class:`Section` objects (a title and a
Markdown body); :class:`~dptune.report._report.Report` adds the analysis' own sections
(metric ranking, noise floor, importance) and the file list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from dptune.report._format import fmt_setting
from dptune.report._selection import best_table_md, sakai_table_md, selection_sentences
from dptune.report._settings import find_setting, flatten, settings_rows
from dptune.report._table import Table, simple_block
from dptune.vocab import display_algorithm, display_metric

__all__ = ["Section", "ReportFigure", "core_sections", "INTRO"]

#: The report's opening paragraph: what DP is and which way is better.
INTRO = (
    "Discriminative power (DP) of evaluation metrics over hyperparameter grids, after Anelli "
    "et al. (RecSys 2019): for sampled pairs of configurations, paired t-test p-values per "
    "fold, sorted decreasingly and averaged over folds; DP is the sum of the averaged curve. "
    "Lower DP = more discriminative."
)


@dataclass
class Section:
    """One ``## title`` section of report.md: its Markdown body (tables included)."""

    title: str
    body: str

    def to_markdown(self) -> str:
        """``## title``, a blank line, the body."""
        return f"## {self.title}\n\n{self.body.rstrip(chr(10))}\n"


@dataclass
class ReportFigure:
    """One figure of the report: file stem (``figure1``, ``figure1_at5``), cutoff, the figure."""

    stem: str
    cutoff: int
    figure: object  # matplotlib.figure.Figure


def _figure_section(
    figures: Mapping[str, ReportFigure], cutoff: int, noise: bool
) -> str:
    """Figure 1 embedded at the primary cutoff, links to the other cutoffs."""
    by_cutoff = {f.cutoff: f.stem for f in figures.values()}
    if cutoff not in by_cutoff:
        return f"No p-value curves at N = {cutoff}."
    stem = by_cutoff[cutoff]
    lines = [
        f"![Averaged p-value curves per metric with ±1 sd bands, N = {cutoff}]({stem}.png)",
        "",
        f"Figure 1: averaged p-value curves at N = {cutoff}, one panel per algorithm "
        f"([SVG]({stem}.svg))" + ("; dashed: A/A noise floor." if noise else "."),
    ]
    others = [n for n in by_cutoff if n != cutoff]
    if others:
        links = ", ".join(f"[N = {n}]({by_cutoff[n]}.png)" for n in others)
        lines += ["", f"Other cutoffs: {links}."]
    return "\n".join(lines)


def _best_section(dp: pd.DataFrame, best: pd.DataFrame | None, primary: tuple[str, int]) -> str:
    """Best configuration per metric and whether the most discriminative metric chooses well."""
    lines = []
    if best is not None and len(best):
        lines += [
            "The configuration each metric@N selects by its mean over the validation folds, and "
            "its value of the same metric on the test split.",
            "",
            best_table_md(best, primary),
            "",
        ]
    else:
        lines += ["No best-configuration table was given.", ""]
    lines += ["### Does the most discriminative metric also choose well?", ""]
    sentences = selection_sentences(dp, best, primary)
    lines += [f"- {s}" for s in sentences] or ["No algorithm to compare."]
    return "\n".join(lines)


def core_sections(
    tables: Mapping[str, Table],
    figures: Mapping[str, ReportFigure],
    dp: pd.DataFrame,
    best: pd.DataFrame | None,
    settings: Mapping[str, object] | None,
    primary: tuple[str, int],
    noise: bool,
    without_dp: Mapping[str, str] | None,
) -> list[Section]:
    """The table, figure and selection sections of report.md, in reading order."""
    cutoff = int(primary[1])
    t3 = tables["table3"]
    no_dp = [f"- No DP for {display_algorithm(a)}: {why}." for a, why in (without_dp or {}).items()]
    settings_md = simple_block(["Setting", "Value"], settings_rows(settings), [False, False])
    out = [
        Section("Data sets", tables["table1"].to_markdown()),
        Section("Experiment settings", settings_md.to_markdown()),
        Section(
            "Discriminative power of the metrics (Table 3)", "\n".join([t3.to_markdown(), *no_dp])
        ),
        Section("Best and worst metric (Table 4)", tables["table4"].to_markdown()),
    ]
    if tables["table5"].blocks:
        out.append(Section("Dominant hyperparameter (Table 5)", tables["table5"].to_markdown()))
    if tables["one_at_a_time"].blocks:
        out.append(Section("One hyperparameter at a time", tables["one_at_a_time"].to_markdown()))
    sakai = sakai_table_md(dp, cutoff)
    if sakai:
        alpha = find_setting(flatten(settings or {}), ("alpha", "significance_level"))
        level = f"alpha = {fmt_setting(alpha[1])}" if alpha else "the configured alpha"
        body = (
            f"Share of the sampled pairs whose p-value is below {level} (mean ± sd over "
            f"folds), N = {cutoff}, scope all; higher is more discriminative.\n\n{sakai}"
        )
        out.append(Section("Sakai-style DP", body))
    out.append(Section("P-value curves (Figure 1)", _figure_section(figures, cutoff, noise)))
    out.append(Section("Best configuration per metric", _best_section(dp, best, primary)))
    return out


def primary_line(primary: tuple[str, int]) -> str:
    """``Primary metric: nDCG@10.``"""
    return f"Primary metric: {display_metric(primary[0], int(primary[1]))}."
