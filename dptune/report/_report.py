"""The report document: :class:`Report` (tables, figures, sections) and what it writes.

``Report.build(store, result).write(out)`` writes into one folder (Anelli et al., RecSys 2019):
the analysis' data files (``result.write_data``: dp.csv, curves.csv, ..., verdict.csv),
``table1``, ``table3``, ``table4``, ``table5``, ``one_at_a_time`` (each ``.md``, ``.csv``,
``.tex``), ``figure1`` (+ ``figure1_at{N}`` for every other cutoff, PNG and SVG), ``verdict.md``
(when the analysis has a verdict), ``report.md`` (the verdict first, then data sets, settings,
Tables 3-5, Figure 1, the best configuration per metric, the analysis' sections and the list of
every file) and ``report.html`` (report.md as one self-contained page). Everything written is a
pure function of the inputs: a rerun gives byte-identical files (figures included).
``Report.from_frames(...).write(out)`` is the same from the analysis' frames, without a store.

Conventions: lower DP = more discriminative = better. CSV files are machine-readable (raw
algorithm/metric keys, full-precision numbers, no markup); Markdown and LaTeX use display names,
3 decimals, ``**bold**`` / ``<u>underline</u>`` and ``\\textbf{}`` / ``\\underline{}``. LaTeX
tables need ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dptune._atomic import write_bytes
from dptune.analysis.options import DEFAULT_FAMILIES, MIN_PAIRS
from dptune.errors import input_error
from dptune.report._document import (
    INTRO,
    ReportFigure,
    Section,
    core_sections,
    files_section,
    gap_sentence,
    primary_line,
    sampling_lead,
)
from dptune.report._figures import (
    FIG_DPI,
    MAX_PANEL_COLUMNS,
    PANEL_SIZE,
    dp_figure,
    dp_figure_caption,
    figure1,
    figure_pixel_size,
    palette_png,
    save_figure,
)
from dptune.report._inputs import (
    BEST_INPUT,
    CURVE_INPUT,
    DP_INPUT,
    check_unique,
    require,
    scope_all,
)
from dptune.report._selection import selection_sentences
from dptune.report._settings import PAIRS_SETTING, VALUE_PAIRS_SETTING, settings_rows
from dptune.report._table import Block, Cell, Table
from dptune.report._tables import one_at_a_time_table, table1, table3, table4, table5
from dptune.report._verdict import verdict_document, verdict_section
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
    "Report",
]


@dataclass
class Report:
    """A rendered analysis: the paper's tables, Figure 1 per cutoff and the report's sections.

    ``tables`` maps ``table1``, ``table3``, ``table4``, ``table5``, ``one_at_a_time`` to
    :class:`~dptune.report._table.Table` objects (``to_markdown()``, ``to_csv()``,
    ``to_latex()``, ``to_dataframe()``); ``figures`` maps file stems to
    :class:`~dptune.report._document.ReportFigure`; ``sections`` are report.md's sections in
    order. :meth:`write` writes the analysis' data files, every table, every figure and
    report.md; a rerun writes identical bytes.

    >>> rep = Report.build(store, result)  # doctest: +SKIP
    >>> rep.tables["table3"].to_latex()  # doctest: +SKIP
    >>> rep.write("reports/quickstart")  # doctest: +SKIP
    """

    title: str | None
    primary: tuple[str, int]
    tables: dict[str, Table]
    figures: dict[str, ReportFigure]
    sections: list[Section]
    #: A line under the title (the paper's sampling, :func:`sampling_lead`), or None.
    lead: str | None = None
    result: Any = None
    verdict: pd.DataFrame | None = None
    data_files: list[str] = field(default_factory=list)
    #: ``(file stem, cutoff, caption)`` of the DP figures shown in the verdict section.
    verdict_figures: list[tuple[str, int, str]] = field(default_factory=list)

    @classmethod
    def build(cls, store: Any, result: Any,
              settings: Mapping[str, object] | None = None) -> Report:
        """The report of ``result`` (a :class:`dptune.analysis.AnalysisResult`) of ``store``.

        ``settings`` replaces the settings table built from the store's manifest (a store
        without an experiment, such as a per-user table from outside, gives its own).

        Adds to the tables and figures the analysis' sections: the A/A noise floor and hyperparameter importance
        (when ``result.importance`` is set).
        """
        from dptune.report._importance import importance_section
        from dptune.report._sections import experiment_settings, noise_section, option

        primary = (str(result.primary[0]), int(result.primary[1]))
        sections: list[tuple[str, str]] = []
        sections.append(("Noise floor (A/A pairs)", noise_section(store, result)))
        if result.importance is not None:
            sections.append(
                (
                    "Hyperparameter importance (optuna) beside DP dominance",
                    importance_section(store, result),
                )
            )
        noise = None
        if result.noise_floor is not None and not result.noise_floor.empty:
            noise = result.noise_curves[["algorithm", "cutoff", "metric", "position", "mean"]]
        from dptune.analysis.result import DATA_FILES
        from dptune.analysis.selection import no_dp_reason

        without_dp = dict(result.without_dp)
        with_dp = set(result.dp["algorithm"])
        for alg in store.algorithms():
            if alg not in with_dp and alg not in without_dp:
                without_dp[alg] = no_dp_reason(store, alg)

        rep = cls.from_frames(
            result.dp,
            result.curves,
            result.datasets,
            result.best,
            settings if settings is not None
            else experiment_settings(result.manifest, result.options),
            primary=primary,
            noise_floor=noise,
            extra_sections=sections,
            without_dp=without_dp,
            split=result.manifest.get("split"),
            verdict=result.verdict,
            families=option(result.options, "families", DEFAULT_FAMILIES),
            min_pairs=option(result.options, "min_pairs", MIN_PAIRS),
        )
        rep.result = result
        rep.verdict = result.verdict
        rep.data_files = [DATA_FILES[name] for name in result.tables()]
        rep._add_dp_figures(result.robust, option(result.options, "families", DEFAULT_FAMILIES))
        return rep

    def _add_dp_figures(self, robust: pd.DataFrame | None,
                        families: Sequence[tuple[str, Sequence[str]]]) -> None:
        """One DP figure per cutoff (``figure_dp``, ``figure_dp_at{N}``), shown in the verdict
        section: each metric's robust DP with its interval per algorithm."""
        if robust is None or robust.empty or self.verdict is None or self.verdict.empty:
            return
        cutoffs = sorted(int(c) for c in robust["cutoff"].unique())
        main = self.primary[1]
        for n in [c for c in cutoffs if c == main] + [c for c in cutoffs if c != main]:
            stem = "figure_dp" if n == main else f"figure_dp_at{n}"
            title = "DP figure" + ("" if n == main else f" at N = {n}")
            self.figures[stem] = ReportFigure(stem, n, dp_figure(robust, self.verdict, n,
                                                                 families))
            self.verdict_figures.append((stem, n, dp_figure_caption(robust, n, title)))

    @classmethod
    def from_frames(
        cls,
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
        split: Mapping[str, object] | None = None,
        data_files: Sequence[str] = (),
        verdict: pd.DataFrame | None = None,
        families: Sequence[tuple[str, Sequence[str]]] | None = None,
        min_pairs: int = MIN_PAIRS,
    ) -> Report:
        """A report from the analysis' frames, for callers without a result store
        (``Report.from_frames(...).write(out)``); :meth:`build` is the one for a store's
        analysis.

        Args:
            dp: DP rows from :func:`dptune.analysis.dp.engine.analyze` (scopes ``all``, ``<h>=<v>``,
                ``only:<h>``).
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
            data_files: names of the data files the caller writes beside the report (dp.csv, ...),
                listed in report.md's "Files" section.
            split: the manifest's split description; explains the validation/test gap of the
                best-configuration table.
            verdict: the verdict table; names Table 4's best metrics, per family of ``families``.
            families: the verdict's families of metrics (Table 4 compares within a family).
            min_pairs: Table 5 groups with fewer pairs are shown but not ranked.

        Raises:
            DptuneError: a required column is missing, keys are duplicated, or the primary
                metric@cutoff has no DP in scope ``all``.
        """
        dp = require(dp, DP_INPUT, "dp")
        curves = require(curves, CURVE_INPUT, "curves")
        check_unique(dp, ["algorithm", "scope", "metric", "cutoff"], "dp")
        check_unique(curves, ["algorithm", "scope", "metric", "cutoff", "position"], "curves")
        if best is not None:
            best = require(best, BEST_INPUT, "best")
        metric, cutoff = str(primary[0]), int(primary[1])
        primary = (metric, cutoff)
        all_scope = scope_all(dp)
        if all_scope.empty:
            raise input_error("dp", None, "nothing to compare: no algorithm has two "
                              "configurations, so no pair was tested and there is no DP to report")
        if all_scope[(all_scope["metric"] == metric) & (all_scope["cutoff"] == cutoff)].empty:
            pairs = zip(all_scope["metric"], all_scope["cutoff"], strict=True)
            available = sorted({f"{m}@{c}" for m, c in pairs})
            raise input_error(
                "primary",
                f"{metric}@{cutoff}",
                f"no DP in scope 'all' for it (available: {', '.join(available) or 'none'})",
            )
        tables = {
            t.name: t
            for t in (
                table1(datasets),
                table3(dp),
                table4(dp, verdict, families if verdict is not None else None),
                table5(dp, primary, hyperparameter_order, min_pairs),
                one_at_a_time_table(dp, primary, hyperparameter_order),
            )
        }
        fig_cutoffs = sorted(curves.loc[curves["scope"] == "all", "cutoff"].unique().tolist())
        figures: dict[str, ReportFigure] = {}
        for n in [cutoff] + [c for c in fig_cutoffs if c != cutoff]:
            if n not in fig_cutoffs:
                continue
            stem = "figure1" if n == cutoff else f"figure1_at{int(n)}"
            fig = figure1(curves, dp, int(n), noise_floor)
            figures[stem] = ReportFigure(stem, int(n), fig)
        gap = gap_sentence(split, best, primary)
        sections = core_sections(
            tables, figures, dp, best, settings, primary, noise_floor is not None, without_dp, gap,
            verdict, families if verdict is not None else None,
        )
        sections += [Section(t, str(b)) for t, b in extra_sections or []]
        name = title or (str(settings["name"]) if settings and "name" in settings else None)
        lead = sampling_lead((settings or {}).get(PAIRS_SETTING),
                             (settings or {}).get(VALUE_PAIRS_SETTING))
        return cls(name, primary, tables, figures, sections, lead=lead,
                   data_files=list(data_files))

    def _file_groups(self) -> tuple[list[str], list[str], list[str], list[str]]:
        """The files of the report folder as (data, tables, figures, documents)."""
        tables = [f"{t}.{ext}" for t in self.tables for ext in ("md", "csv", "tex")]
        figures = [f"{stem}.{ext}" for stem in self.figures for ext in ("png", "svg")]
        has_verdict = self.verdict is not None and not self.verdict.empty
        docs = ["verdict.md"] if has_verdict else []
        return list(self.data_files), tables, figures, docs + ["report.md", "report.html"]

    def file_names(self) -> list[str]:
        """Names of the files :meth:`write` writes, in writing order (the "Files" section)."""
        return [name for group in self._file_groups() for name in group]

    def to_markdown(self, verdict: str | None = None) -> str:
        """report.md: title, verdict, introduction, every section, and the list of files.

        ``verdict``: the verdict section's body when already rendered (by :meth:`write`)."""
        verdict = (verdict_section(self.verdict, self.verdict_figures) if verdict is None
                   else verdict)
        parts = [f"# dptune report{': ' + self.title if self.title else ''}"]
        if self.lead:
            parts.append(self.lead)
        if verdict is not None:
            parts.append(Section("Verdict", verdict).to_markdown())
        parts += [INTRO, primary_line(self.primary)]
        parts += [s.to_markdown() for s in self.sections]
        parts.append(Section("Files", files_section(*self._file_groups())).to_markdown())
        text = "\n\n".join(parts)
        while "\n\n\n" in text:
            text = text.replace("\n\n\n", "\n\n")
        return text.rstrip("\n") + "\n"

    def to_html(self, pngs: Mapping[str, bytes] | None = None,
                markdown: str | None = None) -> str:
        """report.html: report.md as one self-contained page (figures inlined, no network).

        ``pngs`` maps PNG file names to their bytes and ``markdown`` is report.md, when already
        rendered (by :meth:`write`); what is missing is rendered here."""
        from dptune.report._html import markdown_to_html

        pngs = dict(pngs or {})
        for f in self.figures.values():
            if f"{f.stem}.png" not in pngs:
                pngs[f"{f.stem}.png"] = palette_png(f.figure)
        md = self.to_markdown() if markdown is None else markdown
        return markdown_to_html(md, pngs, title=self.title)

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write the data files (when built from a result), every table as ``.md``/``.csv``/
        ``.tex``, every figure as PNG and SVG, verdict.md (when there is a verdict), report.md
        and report.html into ``out_dir``; return the paths in :meth:`file_names` order."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if self.result is not None:
            written += self.result.write_data(out)
        for table in self.tables.values():
            written += _write_table(out, table)
        pngs: dict[str, bytes] = {}
        for fig in self.figures.values():
            png = palette_png(fig.figure)
            written += save_figure(fig.figure, out / fig.stem, png=png)
            pngs[f"{fig.stem}.png"] = png
        body = verdict_section(self.verdict, self.verdict_figures)
        verdict = verdict_document(body, self.title)
        if verdict is not None:
            written.append(_write_text(out / "verdict.md", verdict))
        md = self.to_markdown(body)
        written.append(_write_text(out / "report.md", md))
        written.append(_write_text(out / "report.html", self.to_html(pngs, md)))
        return written


def _write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text with ``\\n`` line ends atomically (byte-stable across platforms)."""
    return write_bytes(path, text.encode("utf-8"), fsync=False)


def _write_table(out_dir: Path, table: Table) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` and ``<name>.tex``."""
    return [
        _write_text(out_dir / f"{table.name}.md", table.to_markdown()),
        _write_text(out_dir / f"{table.name}.csv", table.to_csv()),
        _write_text(out_dir / f"{table.name}.tex", table.to_latex()),
    ]

