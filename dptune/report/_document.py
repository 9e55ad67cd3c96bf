"""The sections of ``report.md`` that come from the tables and figures themselves: data sets,
settings, Tables 3-5, one at a time, Sakai's DP, Figure 1 and the best configuration per metric.

:func:`core_sections` returns them in reading order as :class:`Section` objects (a title and a
Markdown body); :class:`~dptune.report._report.Report` adds the analysis' own sections
(metric ranking, noise floor, importance) and the file list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from dptune.report._format import (
    and_list,
    fmt,
    fmt_setting,
    one_fold,
    ordered_algorithms,
    shown_algorithm,
    shown_hyperparameter,
    shown_metric,
)
from dptune.report._inputs import has_intervals
from dptune.report._sections import corrected_words
from dptune.report._selection import best_table_md, sakai_table_md, selection_sentences
from dptune.report._settings import (
    PAIRS_SETTING,
    VALUE_PAIRS_SETTING,
    find_setting,
    flatten,
    settings_rows,
)
from dptune.report._table import Table, md_names, simple_block

__all__ = ["Section", "ReportFigure", "core_sections", "gap_sentence", "files_section", "INTRO",
           "glossary", "pair_sampling_text", "sampling_lead"]

#: The settings-table key that holds the ``pairs`` option.
#: The paper's number of pairs per scope (a seeded sample when a scope has more).
PAPER_PAIRS = 25

#: The report's opening paragraph: what DP is and which way is better.
INTRO = (
    "Discriminative power (DP) of evaluation metrics over hyperparameter grids, after Anelli "
    "et al. (RecSys 2019): for pairs of configurations, paired p-values per fold, sorted "
    "decreasingly and averaged over folds; the paper's DP is the sum of the averaged curve, P × "
    "the mean p-value. Every DP in this report is DP per 25 pairs (25 × the mean p-value: the "
    "paper's DP when P = 25, between 0 and 25), so that rows with different P compare, with P, "
    "the number of pairs of configurations, beside it. Lower DP = more discriminative."
)

#: The glossary's entries, each said only in a report that has what it defines
#: (:func:`glossary`).
GLOSSARY_HEAD = """\
- **P**: the number of pairs of configurations a DP rests on (every pair of the scope, or a
  seeded sample of them); "P = 25 of 990" is a sample of 25 of the 990 pairs.
- **DP per 25 pairs**: 25 × the mean p-value of the P pairs over the folds; 0 = every pair told
  apart with certainty, 25 = none (every p-value 1). The paper's DP is P × the mean p-value
  (`dp_sum` in `dp.csv`).
"""
GLOSSARY_CLAIMS = """\
- **95% interval**: a bootstrap interval over users (and over pairs when they are a sample,
  and over units for an algorithm of a grid sample), inside [0, 25]; its coverage is
  measured by simulation.
- **Significantly less discriminative** / **dominant**: claims with a family-wise error rate of at
  most alpha (bootstrap max-t test of all the family's comparisons, stepped down), holding under
  every pair seed, on at least min_pairs pairs; **adjusted p**: the smallest error rate at which
  the claim holds.
- **Pr(more discriminative)**: the share of bootstrap replicates in which one metric has the
  lower DP than another; a description of the bootstrap, not a test.
- **Equal choices** ("tune with A or B, no significant difference"): metrics of a family that
  are not significantly less discriminative than the lowest DP; any of them is as good a
  choice on this evidence.
"""
GLOSSARY_UNTESTED = """\
- **No difference tested**: without a bootstrap interval (the bootstrap is off, or the
  paired test has none) no two metrics are compared: a family offers every metric with
  evidence, and the lowest DP alone does not make a metric the better one.
"""
GLOSSARY_FLOOR = """\
- **A/A noise floor**: the DP of pairs that are one configuration re-trained with different
  seeds (no difference of configuration: what re-training alone changes), with its own 95%
  interval; a metric is clearly below it when the
  floor exceeds its DP by more than both intervals' half-widths combined, sqrt(h_DP^2 +
  h_floor^2), and is flagged otherwise (with the bootstrap off, DP has no interval: it is
  only compared with the floor, *below* with no error rate).
"""
GLOSSARY_TAIL = """\
- **Scopes**: *all* (pairs of the whole grid), *h=v* (pairs of configurations sharing the value v
  of h: Table 5) and *only h* (pairs that differ in h alone: the one-at-a-time table and the
  dominant hyperparameter).
- **Metrics** (per user, over the top-N list; rel(u, i) = 1 for a relevant held-out item;
  disc(r) = 1 / log2(r + 1)): **nDCG@N** = sum_r rel disc(r) / the ideal sum over min(N, |R_u|)
  ranks, in [0, 1]; **Precision@N** = hits / N, in [0, 1]; **Recall@N** = hits / |R_u|, in
  [0, 1]; **MRR@N** = 1 / rank of the first hit (0 without one), in [0, 1]; **EPC@N**
  (expected popularity complement) = sum_r disc(r) rel(u, i_r) (1 - users(i_r) / U) / sum_r
  disc(r), in [0, 1], where users(i) counts the fold's training users of item i and U the
  training users: higher = relevant items that fewer users know; **EFD@N** (expected free
  discovery) = the same with -log2(users(i_r) / S), S = sum_j users(j), in bits, between 0 and
  log2(S): higher = relevant items from the long tail. An item unseen in training has EPC
  gain 1 (no user knows it) and counts as seen once in EFD. With the relevance-unaware
  variant (settings: Metric variant), rel(u, i_r) is 1 for every ranked item in EPC and EFD:
  they measure the novelty of the whole list, relevant or not.
- **Families**: metrics are ranked against metrics of their own family only (accuracy: nDCG,
  Precision, Recall, MRR; novelty: EPC, EFD, unless configured otherwise)."""
#: The glossary's entry for the test split, when the data has one.
GLOSSARY_TEST_SPLIT = """
- **Test split** / **downstream**: the held-out part of each user's interactions, used by no
  fold and no selection; downstream, the configurations the family's metrics select on the
  validation folds are compared on it (paired t-test over the test users)."""


def glossary(intervals: bool, floor: bool, test_split: bool) -> str:
    """What every term of the report means (its last section before the files), naming only
    what the report has: the intervals and claims (``intervals``, else that no difference is
    tested), the A/A noise floor (``floor``), the test split (``test_split``)."""
    return (GLOSSARY_HEAD + (GLOSSARY_CLAIMS if intervals else GLOSSARY_UNTESTED)
            + (GLOSSARY_FLOOR if floor else "") + GLOSSARY_TAIL
            + (GLOSSARY_TEST_SPLIT if test_split else ""))


@dataclass
class Section:
    """One ``## title`` section of report.md: its Markdown body (tables included)."""

    title: str
    body: str

    def __post_init__(self) -> None:
        # the names of the text it was built from (dptune.report._format.name_span) escaped,
        # so that they read as written: the body is Markdown from here on
        self.title, self.body = md_names(self.title), md_names(self.body)

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
        f"([SVG]({stem}.svg))"
        + ("; grey band and dashed line: the A/A noise floor (the range of the panel's "
           "metrics' A/A curves and their mean; each metric's floor is in the section Noise "
           "floor)." if noise else "."),
    ]
    others = [n for n in by_cutoff if n != cutoff]
    if others:
        links = ", ".join(f"[N = {n}]({by_cutoff[n]}.png)" for n in others)
        lines += ["", f"Other cutoffs: {links}."]
    return "\n".join(lines)


def gap_sentence(
    split: Mapping[str, object] | None, best: pd.DataFrame | None, primary: tuple[str, int]
) -> str | None:
    """Why validation and test values differ: random CV folds of the training part vs a hold-out
    test split (for a temporal split: each user's latest interactions), with the numbers of the
    primary metric's own choice per algorithm. None without a split description or test values.
    """
    if not split or best is None or not len(best):
        return None
    metric, cutoff = primary[0], int(primary[1])
    own = best[(best["metric"] == metric) & (best["cutoff"] == cutoff)]
    own = own[pd.to_numeric(own["test_value"], errors="coerce").notna()]
    if own.empty:
        return None
    name = shown_metric(metric, cutoff)
    rank = {a: i for i, a in enumerate(ordered_algorithms(own["algorithm"].unique()))}
    own = own.assign(_a=own["algorithm"].map(rank)).sort_values("_a", kind="stable")
    examples = "; ".join(
        f"{shown_algorithm(r.algorithm)} {fmt(r.validation_mean, 4)} vs "
        f"{fmt(r.test_value, 4)}"
        for r in own.itertuples(index=False)
    )
    method = str(split.get("method", "hold-out"))
    held = 1.0 - float(split.get("train_ratio", 0.8))
    if method == "temporal":
        test = (
            f"a temporal hold-out: each user's latest {held:.0%} of interactions, after "
            "everything the models were trained on, which is harder to predict than interactions "
            "drawn at random from the same period"
        )
    else:
        test = f"a {method} hold-out of {held:.0%} of each user's interactions"
    folds, how = split.get("folds", "?"), str(split.get("fold_method", "random"))
    assigned = "by time" if "temporal" in how else "at random"
    return md_names(
        f"Validation and test values are measured on different data: validation values are "
        f"means over {folds} cross-validation folds of the training part ({how}, interactions "
        f"assigned to folds {assigned}), test values come from {test}. So test values are not "
        f"expected to match validation values ({name} of the configuration {name} selects, "
        f"validation vs test: {examples}). "
        "Compare configurations within one column, not validation with test."
    )


def _edge_sentences(best: pd.DataFrame, primary: tuple[str, int]) -> list[str]:
    """A warning per algorithm whose configuration selected by the primary metric sits at an
    end of a numeric hyperparameter's grid (``grid_edge`` of ``best_configs.csv``)."""
    if "grid_edge" not in best.columns:
        return []
    at_edge = best["grid_edge"].map(lambda e: isinstance(e, (list, tuple)) and len(e) > 0)
    rows = best[(best["metric"] == primary[0]) & (best["cutoff"] == int(primary[1])) & at_edge]
    out = []
    for r in rows.itertuples(index=False):
        sides = [part.split("=", 1) for part in r.grid_edge]
        where = "; ".join(f"{shown_hyperparameter(h, r.algorithm)} at its {side} value" for h, side in sides)
        out.append(f"{shown_algorithm(r.algorithm)}: the configuration "
                   f"{shown_metric(primary[0], int(primary[1]))} selects sits on the edge of "
                   f"the grid ({where}); the optimum may lie outside it, consider widening the "
                   "grid.")
    return out


def _best_section(
    dp: pd.DataFrame, best: pd.DataFrame | None, primary: tuple[str, int], gap: str | None,
    verdict: pd.DataFrame | None = None, families: object = None, test_split: bool = True,
    downstream: pd.DataFrame | None = None,
) -> str:
    """Best configuration per metric and whether the most discriminative metric chooses well
    (``test_split``: whether the data has a test split to judge the choices on)."""
    lines = []
    if best is not None and len(best):
        lines += [
            "The configuration each metric@N selects by its mean over the validation folds, and "
            "its value of the same metric on the test split." if test_split else
            "The configuration each metric@N selects by its mean over the folds (the data has "
            "no held-out values).",
            "",
            best_table_md(best, primary, test_split),
            "",
        ]
        if gap:
            lines += [gap, ""]
        lines += [f"- {s}" for s in _edge_sentences(best, primary)]
        if lines[-1].startswith("- "):
            lines.append("")
    else:
        lines += ["No best-configuration table was given.", ""]
    lines += ["### Does the most discriminative metric also choose well?", ""]
    sentences = selection_sentences(dp, best, primary, verdict, families,  # type: ignore[arg-type]
                                    test_split=test_split, downstream=downstream)
    lines += [f"- {s}" for s in sentences] or ["No algorithm to compare."]
    return "\n".join(lines)


def no_dp_reason(n_configs: int) -> str:
    """Why an algorithm with ``n_configs`` configurations has no DP."""
    n = int(n_configs)
    if n < 2:
        return (f"it has {n} configuration, so there is no pair of configurations to compare "
                "(its results are in the best-configuration table)")
    return f"none of its {n} configurations has validation results to pair"


def pair_sampling_text(dp: pd.DataFrame, cap: object = None, value_cap: object = None) -> str:
    """Which pairs the numbers rest on, per algorithm (scope ``all``): "all M pairs" or "a seeded
    sample of P of M pairs"; then the rule (``cap``, the ``pairs`` option, and ``value_cap``,
    the cap of the hyperparameter-value and one-at-a-time scopes, when known) and, when both
    are 25, that this is the paper's sampling."""
    sub = dp[dp["scope"] == "all"]
    parts = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        p = int(a["n_pairs"].max())
        m = (a["n_possible_pairs"].max() if "n_possible_pairs" in a.columns else float("nan"))
        if pd.isna(m):
            parts.append(f"{shown_algorithm(alg)}: {p} pairs")
        elif p >= int(m):
            parts.append(f"{shown_algorithm(alg)}: all {p} pairs")
        else:
            parts.append(f"{shown_algorithm(alg)}: a seeded sample of {p} of {int(m)} pairs")
    text = ("Pairs of configurations behind the verdict, Tables 3 and 4 and Figure 1 (scope "
            "all): " + ("; ".join(parts) if parts else "none") + ".")
    n, v = _count(cap), _count(value_cap)
    if n is not None:
        text += (f" Scope all uses all its pairs when it has at most {n}, else a seeded "
                 f"uniform sample of {n}")
        if v is not None:
            text += (f"; each hyperparameter-value scope (Table 5) and one-at-a-time scope the "
                     f"same with {v}")
        text += ". Every number of a scope, in every table, figure and the verdict, comes " \
                "from that scope's one set of pairs."
        if n == PAPER_PAIRS and v in (None, PAPER_PAIRS):
            text += " This is the paper's sampling (P = 25 per scope)."
    return text


def sampling_lead(cap: object, value_cap: object) -> str | None:
    """The line under report.md's title when the pairs are the paper's sampling (``cap`` and
    ``value_cap`` 25, or ``value_cap`` unknown), so that a reader knows before any number that
    every number rests on 25 sampled pairs per scope; None otherwise."""
    n, v = _count(cap), _count(value_cap)
    if n != PAPER_PAIRS or v not in (None, PAPER_PAIRS):
        return None
    return ("Pairs: the paper's sampling. Every number below rests on a seeded sample of "
            f"{PAPER_PAIRS} configuration pairs per scope (every pair where a scope has fewer); "
            "the Pairs section says which.")


def _count(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def core_sections(
    tables: Mapping[str, Table],
    figures: Mapping[str, ReportFigure],
    dp: pd.DataFrame,
    best: pd.DataFrame | None,
    settings: Mapping[str, object] | None,
    primary: tuple[str, int],
    noise: bool,
    without_dp: Mapping[str, int] | None,
    gap: str | None = None,
    verdict: pd.DataFrame | None = None,
    families: object = None,
    test_split: bool = True,
    downstream: pd.DataFrame | None = None,
) -> list[Section]:
    """The table, figure and selection sections of report.md, in reading order
    (``test_split``: whether the data has a test split, which the text then speaks of;
    ``downstream``: the analysis' downstream.csv, whose tests the selection sentences state)."""
    cutoff = int(primary[1])
    t3 = tables["table3"]
    no_dp = [f"- No DP for {shown_algorithm(a)}: {no_dp_reason(n)}."
             for a, n in (without_dp or {}).items()]
    settings_md = simple_block(["Setting", "Value"], settings_rows(settings), [False, False])
    out = [
        Section("Pairs", pair_sampling_text(dp, (settings or {}).get(PAIRS_SETTING),
                                            (settings or {}).get(VALUE_PAIRS_SETTING))
                + (" Of a grid sample, these are the pairs of the configurations its units hold, "
                   "not of the full grid (Grid sample in the settings says how many of the "
                   "grid's there are)." if "Grid sample" in (settings or {}) else "")),
        Section("Data sets", tables["table1"].to_markdown()),
        Section("Experiment settings", settings_md.to_markdown()),
        Section(
            "Discriminative power of the metrics (Table 3)", "\n".join([t3.to_markdown(), *no_dp])
        ),
        Section("Best and worst metric (Table 4)", tables["table4"].to_markdown()),
    ]
    dominance = _dominance_section(tables["one_at_a_time"], tables["table5"])
    if dominance is not None:
        out.append(dominance)
    sakai = sakai_table_md(dp, cutoff)
    if sakai:
        alpha = find_setting(flatten(settings or {}), ("alpha", "significance_level"))
        level = f"alpha = {fmt_setting(alpha[1])}" if alpha else "the configured alpha"
        correction = dp["correction"].iloc[0] if "correction" in dp and len(dp) else "none"
        body = (
            f"Share of the pairs whose p-value{corrected_words(correction)} is below {level} ("
            + ("one fold: no sd" if one_fold(dp) else "mean ± sd over folds")
            + f"), N = {cutoff}, scope all; higher is more discriminative.\n\n{sakai}"
        )
        out.append(Section("Sakai-style DP", body))
    out.append(Section("P-value curves (Figure 1)", _figure_section(figures, cutoff, noise)))
    out.append(Section("Best configuration per metric",
                       _best_section(dp, best, primary, gap, verdict, families, test_split,
                                     downstream)))
    out.append(Section("Glossary", glossary(has_intervals(dp), noise, test_split)))
    return out


#: How the dominance section reads its two tables, said before them.
DOMINANCE_LEAD = (
    "Which hyperparameter dominates is decided on the one-at-a-time scopes: the pairs of "
    "configurations that differ in one hyperparameter only, every other one fixed (the table "
    "just below). A hyperparameter is named dominant in the verdict only when the DP of its "
    "one-at-a-time pairs is significantly lower than every other hyperparameter's. Table 5, "
    "after it, is the paper's per-value view: pairs that share one value of a hyperparameter "
    "and differ in the others; it shows how discriminative the grid is at each value and does "
    "not decide dominance."
)


def _dominance_section(one_at_a_time: Table, table5: Table) -> Section | None:
    """"Dominant hyperparameter (one-at-a-time scopes)": the one-at-a-time table that decides
    dominance, then Table 5, the paper's per-value view; an empty table says why (its notes)
    instead of being left out silently. None when neither has anything to show."""
    parts: list[str] = []
    said: list[str] = []  # a note both tables carry is said once
    for table, head in ((one_at_a_time, None), (table5, "### Per-value view (Table 5)")):
        notes = [n for n in table.notes if n not in said]
        if not table.blocks and not table.notes:
            continue
        if head:
            parts.append(head)
        parts.append(dataclasses.replace(table, notes=notes).to_markdown() if table.blocks
                     else "\n\n".join(["No table.", *notes]))
        said += notes
    if not parts:
        return None
    return Section("Dominant hyperparameter (one-at-a-time scopes)",
                   "\n\n".join([DOMINANCE_LEAD, *parts]))


#: What each file of a report folder holds, by file name (tables and figures are added by name).
FILE_NOTES: dict[str, str] = {
    "pairs.csv": "the pairs of configurations per scope (all, or a seeded sample)",
    "pvalues.parquet": "every p-value by pair, metric@N and fold (Parquet)",
    "dp.csv": "DP per 25 pairs (with P, its interval where computed, and the paper's sum "
    "`dp_sum`) per algorithm, scope and metric@N",
    "curves.csv": "the fold-averaged p-value curves",
    "noise_floor.csv": "DP per 25 pairs beside its A/A noise floor",
    "comparisons.csv": "the test behind every significance claim (metrics within a family, "
    "hyperparameters within a metric@N): adjusted p, Pr(more discriminative), held under every "
    "pair seed",
    "dominance.csv": "the dominant hyperparameter per algorithm and metric@N, with its DP per 25 "
    "pairs and interval",
    "downstream.csv": "the configurations a family's metrics select, compared on the held-out "
    "values when the data has them",
    "noise_curves.csv": "the A/A curves",
    "noise_pvalues.parquet": "every A/A p-value (Parquet)",
    "importance.csv": "fANOVA and PED-ANOVA importances",
    "best_configs.csv": "the best configuration per metric@N with its test value (`test_value`: "
                        "that metric@N; each `test_<metric>`: that metric at the primary cutoff, "
                        "whatever the row's cutoff)",
    "verdict.csv": "the verdict, one row per algorithm, cutoff and family of metrics",
    "verdict.md": "the summary and the verdict on their own",
    "methods.md": "how these numbers were computed, as text for a paper's methods section, "
    "with its references",
    "methods.tex": "the same text for LaTeX, citing the keys of `references.bib`",
    "references.bib": "the BibTeX entries the methods text cites",
    "report.md": "this report",
    "report.html": "this report as one self-contained web page (tables and figures inlined)",
}


def files_section(data: list[str], tables: list[str], figures: list[str],
                  rest: list[str]) -> str:
    """The "Files" section: every file the report folder gets, in the groups the report knows
    them by (data files, tables, figures, the report's own documents), described where
    :data:`FILE_NOTES` has a note."""

    def described(names: list[str]) -> str:
        return "; ".join(f"`{n}`" + (f": {FILE_NOTES[n]}" if n in FILE_NOTES else "")
                         for n in names)

    lines = []
    if data:
        lines.append("- Data (CSV): " + described(data) + ".")
    if tables:
        listed = ", ".join(f"`{n}`" for n in tables)
        lines.append(f"- Tables (Markdown, CSV, LaTeX): {listed}.")
    if figures:
        lines.append("- Figures (PNG, SVG): " + ", ".join(f"`{n}`" for n in figures) + ".")
    if rest:
        lines.append("- Report: " + described(rest) + ".")
    return "\n".join(lines)


def primary_line(primary: tuple[str, int], test_split: bool = True, floor: bool = True,
                 table5: bool = True, importance: bool = True) -> str:
    """What the primary metric is, and what it is used for in this report: the noise floor's
    configurations (``floor``), Table 5 and the importance section when the report has them,
    the test split's judgement (``test_split``), the main cutoff."""
    of = [t for t, has in (("Table 5", table5), ("the importance section", importance)) if has]
    uses = ((["picks the noise-floor configurations"] if floor else [])
            + ([f"is the metric of {' and of '.join(of)}"] if of else [])
            + (["judges its own family's choices on the test split"] if test_split else [])
            + ["sets the main cutoff of the figures and the summary"])
    said = and_list(uses)
    return (f"Primary metric: {shown_metric(primary[0], int(primary[1]))}. It {said}; which "
            "metric to tune with is the verdict's answer, not this one.")
