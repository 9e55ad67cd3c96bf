"""The report document: :class:`Report` (tables, figures, sections) and what it writes.

``Report.from_result(result).write(out)`` writes into one folder (Anelli et al., RecSys 2019):
the analysis' data files (``result.write_data``: dp.csv, curves.csv, ..., verdict.csv),
``table1``, ``table3``, ``table4``, ``table5``, ``one_at_a_time`` (each ``.md``, ``.csv``,
``.tex``), ``figure1`` (+ ``figure1_at{N}`` for every other cutoff, PNG and SVG), ``verdict.md``
(when the analysis has a verdict), ``methods.md``, ``methods.tex`` and ``references.bib`` (how
the numbers were computed, as text for a paper), ``report.md`` (the verdict first, then data sets, settings,
Tables 3-5, Figure 1, the best configuration per metric, the analysis' sections and the list of
every file) and ``report.html`` (report.md as one self-contained page). Everything written is a
pure function of the inputs: a rerun gives byte-identical files (figures included).
``Report.from_result`` is the one constructor, and it needs no store: the result carries what
the report reads (its configurations name the noise-floor and importance sections'
configurations; its manifest gives the settings table, a sweep's experiment or outside data's
source and folds; it answers which families its metrics form, whether there is a test split,
which algorithms train with a seed, the noise floor's runs and Figure 1's A/A band), so a
per-user table's result renders as a sweep's does, and the report computes nothing.

Conventions: lower DP = more discriminative = better. CSV files are machine-readable (raw
algorithm/metric keys, full-precision numbers, no markup); Markdown and LaTeX use display names,
3 decimals, ``**bold**`` / ``<ins>underline</ins>`` and ``\\textbf{}`` / ``\\underline{}``. LaTeX
tables need ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dptune._atomic import staged_folder, write_bytes
from dptune.analysis.result import DATA_FILES, AnalysisResult, MetricFamilies, check_output_folder
from dptune.errors import check_not_working_dir, input_error, plain
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
    dp_figure,
    dp_figure_caption,
    figure1,
    palette_png,
    save_figure,
)
from dptune.report._format import grid_sample_text, name_span
from dptune.report._inputs import (
    BEST_INPUT,
    CURVE_INPUT,
    DP_INPUT,
    check_unique,
    require,
    scope_all,
)
from dptune.report._methods import Methods, methods_of
from dptune.report._settings import (
    CLAIMS_SETTING,
    PAIRS_SETTING,
    VALUE_PAIRS_SETTING,
    outside_settings,
)
from dptune.report._table import Table, md_names
from dptune.report._tables import one_at_a_time_table, table1, table3, table4, table5
from dptune.report._verdict import summary_section, verdict_document, verdict_section

__all__ = ["Report"]


@dataclass
class Report:
    """A rendered analysis: the paper's tables, Figure 1 per cutoff and the report's sections.

    ``tables`` maps ``table1``, ``table3``, ``table4``, ``table5``, ``one_at_a_time`` to
    :class:`~dptune.report._table.Table` objects (``to_markdown()``, ``to_csv()``,
    ``to_latex()``, ``to_dataframe()``); ``figures`` maps file stems to
    :class:`~dptune.report._document.ReportFigure`; ``sections`` are report.md's sections in
    order. :meth:`write` writes the analysis' data files, every table, every figure and
    report.md; a rerun writes identical bytes.

    >>> rep = Report.from_result(result)  # doctest: +SKIP
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
    result: AnalysisResult | None = None
    verdict: pd.DataFrame | None = None
    data_files: list[str] = field(default_factory=list)
    #: ``(file stem, cutoff, caption)`` of the DP figures shown in the verdict section.
    verdict_figures: list[tuple[str, int, str]] = field(default_factory=list)
    #: Whether the data has a test split (outside data may not: the result's
    #: :attr:`~dptune.analysis.result.AnalysisResult.test_split`); the text speaks of one only
    #: then.
    test_split: bool = True
    #: What starts every table's LaTeX label, ``tab:<label>:<table>``, so that the tables of
    #: reports of two experiments pasted into one paper have labels of their own: the
    #: experiment's name (``anelli2019-ml1m-knn``), the outside data file's stem, else
    #: ``dptune`` (:func:`report_label`). The same analysis written anywhere has the same
    #: labels; set it to tell apart two analyses of one experiment.
    label: str = "dptune"
    #: The methods text (:class:`~dptune.report._methods.Methods`: methods.md, methods.tex and
    #: references.bib) of a report built from a result, else None.
    methods: Methods | None = None

    def _add_dp_figures(self, dp: pd.DataFrame, families: MetricFamilies) -> None:
        """One DP figure per cutoff (``figure_dp``, ``figure_dp_at{N}``), shown in the verdict
        section: each metric's DP per 25 pairs with its interval per algorithm."""
        whole = dp[dp["scope"] == "all"]
        if whole.empty or self.verdict is None or self.verdict.empty:
            return
        cutoffs = sorted(int(c) for c in whole["cutoff"].unique())
        main = self.primary[1]
        for n in [c for c in cutoffs if c == main] + [c for c in cutoffs if c != main]:
            stem = "figure_dp" if n == main else f"figure_dp_at{n}"
            title = "DP figure" + ("" if n == main else f" at N = {n}")
            self.figures[stem] = ReportFigure(stem, n, dp_figure(dp, self.verdict, n, families))
            self.verdict_figures.append((stem, n, dp_figure_caption(dp, n, title)))

    @classmethod
    def from_result(
        cls,
        result: AnalysisResult,
        *,
        settings: Mapping[str, object] | None = None,
        title: str | None = None,
        hyperparameter_order: Mapping[str, Sequence[object]] | None = None,
        extra_sections: Sequence[tuple[str, str]] = (),
    ) -> Report:
        """The report of an analysis result, from the result alone (no store):
        ``Report.from_result(result).write(out)``, for a sweep's result as for a per-user
        table's: the one constructor of a report.

        Reads from ``result``: ``dp.table`` (Tables 3-5, the one-at-a-time table), ``dp.curves``
        (Figure 1), ``datasets`` (Table 1), ``best`` (the best configuration per metric; its
        optional ``test_<metric>`` columns give the "does it choose well" sentences),
        ``noise.band`` (Figure 1's grey A/A band, when there is a noise floor; ``noise.configs``
        and ``noise.seeds`` name its runs), ``stochastic`` (which algorithms have none),
        ``verdict``, ``comparisons``, ``dominance`` and ``downstream`` (the summary and the
        verdict section, Table 3's and Table 4's best metric per family of
        ``metric_families``, the DP figures' stars), ``dp.without`` (algorithms named under
        Table 3 as having no DP, and why), ``options`` (``primary``: Table 5, the
        one-at-a-time table's cutoff, Figure 1's main cutoff and the selection check;
        ``min_pairs``: nothing with fewer pairs is marked best),
        ``manifest`` (the settings table: a sweep's experiment, or outside data's source and
        folds, as ``outside`` says; ``split`` explains the validation/test gap of the best
        configurations; ``test_split``: whether the text speaks of a test split),
        ``configurations`` (the noise-floor and hyperparameter-importance sections, which name
        configurations by their hyperparameters; left out when it is None) and ``tables()``
        (the data files written beside the report and listed in its "Files" section).

        Args:
            result: the :class:`dptune.analysis.AnalysisResult` to render.
            settings: experiment settings for the settings table (relevance threshold and
                metric variant are always listed, "not recorded" when absent); default: those
                of ``result.manifest`` and ``result.options`` (a sweep's experiment, or outside
                data's source, folds and options), none without a manifest.
            title: report title (default from ``settings["name"]`` when present).
            hyperparameter_order: value order per hyperparameter (its key order also orders
                rows).
            extra_sections: ``(title, markdown)`` pairs appended to ``report.md``.

        Raises:
            DptuneError: an argument has the wrong type, a required column is missing, keys
                are duplicated, nothing was compared, or the primary metric@cutoff has no DP in
                scope ``all``.
        """
        from dptune.report._importance import importance_section
        from dptune.report._sections import (
            GRID_SAMPLE_INTERVAL,
            experiment_settings,
            noise_runs,
            noise_section,
            stability_note,
        )

        _check_result(result, "Report.from_result")
        _check_render_arguments(settings, title, hyperparameter_order, extra_sections)

        dp = require(result.dp.table, DP_INPUT, "dp")
        curves = require(result.dp.curves, CURVE_INPUT, "curves")
        check_unique(dp, ["algorithm", "scope", "metric", "cutoff"], "dp")
        check_unique(curves, ["algorithm", "scope", "metric", "cutoff", "position"], "curves")
        best = None if result.best is None else require(result.best, BEST_INPUT, "best")
        primary = result.primary
        metric, cutoff = primary
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
        if settings is None and result.manifest:
            settings = (outside_settings(result.manifest, result.options, result.configurations)
                        if result.outside
                        else experiment_settings(
                            result.manifest, result.options, result.bootstrap_groups,
                            result.stochastic,
                            None if result.noise is None else noise_runs(result.noise)))
        note = stability_note(dp, result.options)
        if note and settings and CLAIMS_SETTING in settings:
            settings = {**settings, CLAIMS_SETTING: settings[CLAIMS_SETTING] + note}
        sample_text = grid_sample_text(result.dp.grid_sample)
        if sample_text is not None:
            settings = {**(settings or {}), "Grid sample": sample_text}
            if ("Bootstrap" in settings and int(result.options.bootstrap) > 0
                    and result.options.paired_test.interval):  # the row describes intervals
                settings["Bootstrap"] = f"{settings['Bootstrap']}{GRID_SAMPLE_INTERVAL}"
        verdict, families = result.verdict, result.metric_families
        noise = None
        if result.noise is not None and not result.noise.curves.empty:
            noise = result.noise.band
        tables = {
            t.name: t
            for t in (
                table1(result.datasets),
                table3(dp, verdict, families, result.options.min_pairs),
                table4(dp, verdict, families),
                table5(dp, primary, hyperparameter_order, result.options.min_pairs,
                       grid=_grid_values(result)),
                one_at_a_time_table(dp, primary, hyperparameter_order,
                                    result.options.min_pairs, result.dominance),
            )
        }
        if sample_text is not None:
            # a table that marks a DP explains the mark in a note of its own (unsampled_note)
            table_text = grid_sample_text(result.dp.grid_sample, marked=False)
            for t in tables.values():
                if t.name != "table1":
                    t.notes.append(table_text)
        fig_cutoffs = sorted(curves.loc[curves["scope"] == "all", "cutoff"].unique().tolist())
        figures: dict[str, ReportFigure] = {}
        for n in [cutoff] + [c for c in fig_cutoffs if c != cutoff]:
            if n not in fig_cutoffs:
                continue
            stem = "figure1" if n == cutoff else f"figure1_at{int(n)}"
            fig = figure1(curves, dp, int(n), noise)
            figures[stem] = ReportFigure(stem, int(n), fig)
        gap = gap_sentence(result.manifest.get("split"), best, primary)
        test_split = bool(result.test_split)
        sections = core_sections(
            tables, figures, dp, best, settings, primary, noise is not None,
            dict(result.dp.without), gap, verdict, families, test_split=test_split,
            downstream=result.downstream,
        )
        if result.configurations is not None:
            configs = _Configurations(result)
            sections.append(Section("Noise floor (A/A pairs)", noise_section(configs, result)))
            if result.importance is not None:
                sections.append(Section("Hyperparameter importance (optuna) beside DP dominance",
                                        importance_section(configs, result)))
        sections += [Section(t, str(b)) for t, b in extra_sections]
        name = title or (str(settings["name"]) if settings and "name" in settings else None)
        lead = sampling_lead((settings or {}).get(PAIRS_SETTING),
                             (settings or {}).get(VALUE_PAIRS_SETTING))
        if sample_text is not None and (verdict is None or verdict.empty):
            # with a verdict, the summary states the design (once, before any table)
            lead = sample_text if lead is None else f"{lead}\n\n{sample_text}"
        rep = cls(name, primary, tables, figures, sections, lead=lead, result=result,
                  verdict=verdict, data_files=[DATA_FILES[key] for key in result.tables()],
                  test_split=test_split, label=report_label(result.manifest),
                  methods=methods_of(result))
        rep._add_dp_figures(dp, families)
        return rep

    def __repr__(self) -> str:
        return (f"Report(title={self.title!r}, tables={list(self.tables)}, "
                f"figures={list(self.figures)}, files={len(self.file_names())}; write it with "
                "rep.write(folder), or read rep.to_markdown())")

    def _repr_markdown_(self) -> str:
        """In a notebook: the summary and the verdict (:mod:`dptune.report._notebook`)."""
        from dptune.report._notebook import result_markdown

        return result_markdown(self.result) if self.result is not None else self.to_markdown()

    def _repr_html_(self) -> str:
        """In a notebook: the summary, the verdict and the DP figure of the primary cutoff."""
        from dptune.report._notebook import result_html

        return result_html(self.result) if self.result is not None else self.to_html()

    def _file_groups(self) -> tuple[list[str], list[str], list[str], list[str]]:
        """The files of the report folder as (data, tables, figures, documents)."""
        tables = [f"{t}.{ext}" for t in self.tables for ext in ("md", "csv", "tex")]
        figures = [f"{stem}.{ext}" for stem in self.figures for ext in ("png", "svg")]
        has_verdict = self.verdict is not None and not self.verdict.empty
        docs = ["verdict.md"] if has_verdict else []
        if self.methods is not None:
            docs += ["methods.md", "methods.tex", "references.bib"]
        return list(self.data_files), tables, figures, docs + ["report.md", "report.html"]

    def file_names(self) -> list[str]:
        """Names of the files :meth:`write` writes, in writing order (the "Files" section)."""
        return [name for group in self._file_groups() for name in group]

    def to_markdown(self, verdict: str | None = None) -> str:
        """report.md: title, verdict, introduction, every section, and the list of files.

        ``verdict``: the verdict section's body when already rendered (by :meth:`write`)."""
        verdict = (verdict_section(self.result, self.verdict_figures)
                   if verdict is None and self.result is not None else verdict)
        summary = summary_section(self.result) if self.result is not None else None
        parts = [f"# dptune report{': ' + name_span(self.title) if self.title else ''}"]
        if self.lead:
            parts.append(self.lead)
        if summary is not None:
            parts.append(Section("Summary", summary).to_markdown())
        if verdict is not None:
            parts.append(Section("Verdict", verdict).to_markdown())
        res = self.result
        parts += [INTRO, primary_line(
            self.primary, self.test_split,
            floor=res is None or res.noise is not None,
            table5="table5" in self.tables and bool(self.tables["table5"].blocks),
            importance=res is None or res.importance is not None)]
        parts += [s.to_markdown() for s in self.sections]
        parts.append(Section("Files", files_section(*self._file_groups())).to_markdown())
        text = md_names("\n\n".join(parts))
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
        and report.html into ``out_dir``; return the paths in :meth:`file_names` order.

        The folder is written beside ``out_dir`` and published by one rename
        (:func:`dptune._atomic.staged_folder`): never half-written, a full disk is one line.
        A folder that is or lies in a results directory is refused (its files would replace the
        store's or pass for its parts), as ``dptune analyze --reports`` refuses it
        (:func:`dptune.analysis.result.check_output_folder`)."""
        _check_label(self.label)
        check_output_folder(out_dir, "Report.write", "out_dir", "the report folder")
        check_not_working_dir(out_dir, "Report.write: out_dir")  # the rename would replace it
        out = Path(out_dir)
        with staged_folder(out) as stage:
            written = self._write_files(stage)
        return [out / p.relative_to(stage) for p in written]

    def _write_files(self, out: Path) -> list[Path]:
        """Write every file of :meth:`write` into the folder ``out``; return their paths."""
        written: list[Path] = []
        if self.result is not None:
            written += self.result.write_data(out)
        for table in self.tables.values():
            written += _write_table(out, table, self.label)
        pngs: dict[str, bytes] = {}
        for fig in self.figures.values():
            png = palette_png(fig.figure)
            written += save_figure(fig.figure, out / fig.stem, png=png)
            pngs[f"{fig.stem}.png"] = png
        body = (verdict_section(self.result, self.verdict_figures)
                if self.result is not None else None)
        verdict = verdict_document(summary_section(self.result) if self.result is not None
                                   else None, body, self.title)
        if verdict is not None:
            written.append(_write_text(out / "verdict.md", verdict))
        if self.methods is not None:
            written += [_write_text(out / "methods.md", self.methods.to_markdown()),
                        _write_text(out / "methods.tex", self.methods.to_latex()),
                        _write_text(out / "references.bib", self.methods.to_bibtex())]
        md = self.to_markdown(body)
        written.append(_write_text(out / "report.md", md))
        written.append(_write_text(out / "report.html", self.to_html(pngs, md)))
        return written


class _Configurations:
    """What the noise-floor and importance sections read of a store (the algorithms in order,
    each one's configurations and free hyperparameters), from the result alone: its
    ``configurations`` table and its manifest's algorithms."""

    def __init__(self, result: AnalysisResult):
        self._table = result.configurations
        listed = [a for a in result.manifest.get("algorithms", ()) if "name" in a]
        self._free = {a["name"]: list(a.get("free", ())) for a in listed}
        self._order = list(self._free) + [a for a in dict.fromkeys(self._table["algorithm"])
                                          if a not in self._free]

    def algorithms(self) -> list[str]:
        """Algorithm names in the store's order."""
        return list(self._order)

    def configs(self, algorithm: str) -> pd.DataFrame:
        """``config_id`` and the hyperparameter columns the algorithm uses."""
        rows = self._table[self._table["algorithm"] == algorithm].drop(columns="algorithm")
        return rows.dropna(axis=1, how="all").reset_index(drop=True)

    def hyperparameters(self, algorithm: str) -> list[str]:
        """The algorithm's free hyperparameters (derived ones are shown, not swept)."""
        return list(self._free.get(algorithm, []))


def _grid_values(result: AnalysisResult) -> dict[str, dict[str, list[object]]]:
    """Per algorithm, each free hyperparameter's values in the grid (the result's
    configurations are the whole grid's, run or not): Table 5 lists those no configuration of a
    budget's units has."""
    if result.configurations is None:
        return {}
    cf = _Configurations(result)
    out: dict[str, dict[str, list[object]]] = {}
    for alg in cf.algorithms():
        rows = cf.configs(alg)
        out[alg] = {h: list(pd.unique(rows[h].dropna())) for h in cf.hyperparameters(alg)
                    if h in rows.columns}
    return out


def report_label(manifest: Mapping[str, object] | None) -> str:
    """The :attr:`Report.label` of a result's manifest: its experiment's name (``experiment``),
    else the stem of its experiment file (``experiment_file``), else of its outside data's
    source file (``dataset.source``: a per-user table, a folder of runs), else ``dptune``."""
    manifest = manifest or {}
    dataset = manifest.get("dataset")
    name = manifest.get("experiment")
    if isinstance(name, str) and name.strip():
        return name.strip()
    for source in (manifest.get("experiment_file"),
                   dataset.get("source") if isinstance(dataset, Mapping) else None):
        if isinstance(source, str) and source.strip():
            name = Path(source.strip()).name
            for suffix in (".gz", ".parquet", ".csv", ".tsv", ".toml", ".txt"):
                name = name.removesuffix(suffix)
            if name:
                return name
    return "dptune"


def _check_label(label: object) -> None:
    """One error naming :attr:`Report.label` when it is not a non-empty string, checked where it
    is used (the tables' LaTeX labels, ``tab:<label>:<table>``): it is set by assignment."""
    if not isinstance(label, str) or not label.strip():
        raise input_error("Report.label", None, "needs a non-empty string (the tables' LaTeX "
                          f"labels are tab:<label>:<table>), got {plain(label)}")


def _check_result(result: object, where: str) -> None:
    """One error naming ``result`` when it is not an :class:`AnalysisResult`."""
    if not isinstance(result, AnalysisResult):
        raise input_error(where, "result", "needs the dptune.AnalysisResult of dptune.analyze "
                          f"or dptune.discriminative_power, got {type(result).__name__}")


def _check_render_arguments(settings: object, title: object, order: object,
                            extra_sections: object) -> None:
    """One error naming the argument of :meth:`Report.from_result` of the wrong type."""
    where = "Report.from_result"
    if settings is not None and not isinstance(settings, Mapping):
        raise input_error(where, "settings", "needs a mapping of setting -> value, got "
                          f"{type(settings).__name__}")
    for key, value in (settings or {}).items():  # the table shows str(value)
        try:
            str(value)
        except ValueError:  # an integer of more digits than Python spells out
            raise input_error(where, f"settings[{plain(key)}]", "needs a value the table can "
                              f"show as text, got {plain(value)}") from None
    if title is not None and not isinstance(title, str):
        raise input_error(where, "title", f"needs a string, got {type(title).__name__}")
    if order is not None and (not isinstance(order, Mapping) or any(
            isinstance(v, str) or not isinstance(v, Sequence) for v in order.values())):
        raise input_error(where, "hyperparameter_order", "needs a mapping of hyperparameter "
                          f"-> list of values, got {plain(order)}")
    if isinstance(extra_sections, (str, bytes)) or not isinstance(extra_sections, Sequence) or \
            not all(isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], str)
                    and isinstance(x[1], str) for x in extra_sections):
        raise input_error(where, "extra_sections", "needs a list of (title, markdown) pairs, "
                          f"got {plain(extra_sections)}")


def _write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text with ``\\n`` line ends atomically (byte-stable across platforms)."""
    return write_bytes(path, text.encode("utf-8"), fsync=False)


def _write_table(out_dir: Path, table: Table, label_prefix: str) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` and ``<name>.tex`` (labelled
    ``tab:<label_prefix>:<name>``)."""
    return [
        _write_text(out_dir / f"{table.name}.md", table.to_markdown()),
        _write_text(out_dir / f"{table.name}.csv", table.to_csv()),
        _write_text(out_dir / f"{table.name}.tex", table.to_latex(f"{label_prefix}:{table.name}")),
    ]

