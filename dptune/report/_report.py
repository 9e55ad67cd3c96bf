"""The report document: every table, Figure 1 and ``report.md`` written into one folder.

Outputs of :func:`write_report` (Anelli et al., RecSys 2019): ``table1``, ``table3``, ``table4``,
``table5``, ``one_at_a_time`` (each ``.md``, ``.csv``, ``.tex``), ``figure1`` (+
``figure1_at{N}`` for every other cutoff, PNG and SVG) and ``report.md``: all of the above,
experiment settings, best configuration per metric and a computed check of whether the most
discriminative metric also selects well on test. Everything written is a pure function of the
inputs: a rerun gives byte-identical files (figures included).

Conventions: lower DP = more discriminative = better. CSV files are machine-readable (raw
algorithm/metric keys, full-precision numbers, no markup); Markdown and LaTeX use display names,
3 decimals, ``**bold**`` / ``<u>underline</u>`` and ``\\textbf{}`` / ``\\underline{}``. LaTeX
tables need ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from dptune.errors import input_error
from dptune.report._figures import (
    FIG_DPI,
    MAX_PANEL_COLUMNS,
    PANEL_SIZE,
    figure1,
    figure_pixel_size,
    save_figure,
)
from dptune.report._format import fmt_setting
from dptune.report._inputs import (
    BEST_INPUT,
    CURVE_INPUT,
    DP_INPUT,
    check_unique,
    require,
    scope_all,
)
from dptune.report._selection import best_table_md, sakai_table_md, selection_sentences
from dptune.report._settings import find_setting, flatten, settings_rows
from dptune.report._table import Block, Cell, Table, simple_block
from dptune.report._tables import one_at_a_time_table, table1, table3, table4, table5
from dptune.vocab import (
    ALGORITHM_NAMES,
    METRIC_NAMES,
    TABLE_METRIC_ORDER,
    display_algorithm,
    display_metric,
)

# The names below stay importable from this module (``from dptune.report import _report``) for
# callers written before the split; new code imports them from ``dptune.report``.
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
    dp = require(dp, DP_INPUT, "dp")
    curves = require(curves, CURVE_INPUT, "curves")
    check_unique(dp, ["algorithm", "scope", "metric", "cutoff"], "dp")
    check_unique(curves, ["algorithm", "scope", "metric", "cutoff", "position"], "curves")
    if best is not None:
        best = require(best, BEST_INPUT, "best")
    metric, cutoff = str(primary[0]), int(primary[1])
    primary = (metric, cutoff)
    all_scope = scope_all(dp)
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
        simple_block(["Setting", "Value"], settings_rows(settings), [False, False]).to_markdown(),
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
    sakai = sakai_table_md(dp, cutoff)
    if sakai:
        alpha = find_setting(flatten(settings or {}), ("alpha", "significance_level"))
        level = f"alpha = {fmt_setting(alpha[1])}" if alpha else "the configured alpha"
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
            best_table_md(best, primary),
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
