"""A report checker: reads a report folder as a reader would and lists every place where it
contradicts itself or prints a number on the wrong scale.

Rules (each problem is one line naming the file and what is wrong):

1. one scale: every DP the report prints is DP per 25 pairs; no "DP <number>" without "per 25
   pairs", no "DP_floor", "DP per pair" or "DP at P" anywhere;
2. "P" is only ever a number of pairs: no "P = 93%" or "P >= 95%" (a probability is
   "Pr(more discriminative)");
3. every Markdown table that shows a DP has a P column or a P in its caption;
4. nothing is marked best below ``min_pairs`` pairs: no bold in a Table 3 row, no recommended
   metric in a verdict row, no bold in a Table 5 group or one-at-a-time row and no dominant
   hyperparameter on fewer pairs;
5. one answer: per (algorithm, cutoff, family) the verdict's choices (``choices`` of
   verdict.csv: the recommended metric and every metric not significantly less discriminative;
   a verdict.csv from before that column: the recommended metric and its exact ties) are Table
   3's bold metrics of the family, its recommended metric is Table 4's best metric and, at the
   primary cutoff, the choose-well section's "most discriminative" metric; the DP figure stars
   the verdict's choices (checked on the figure itself by :func:`check_dp_figure` when a report
   object is at hand);
6. ties said as ties: a verdict row with two or more choices is never shown as one metric to
   tune with: the summary and the verdict's sentence name every choice with "no significant
   difference" (or "no difference tested") and the verdict table's "Tune with" cell names
   them all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from dptune.vocab import METRIC_NAMES, display_algorithm, display_metric

_NAMES = {v: k for k, v in METRIC_NAMES.items()}


def _tables(md: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """``(preceding paragraph, header, rows)`` of every Markdown table of ``md``."""
    out, lines = [], md.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("| :"):
            cap = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            header = _cells(lines[i])
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(_cells(lines[i]))
                i += 1
            out.append((cap, header, rows))
        else:
            i += 1
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _metric(text: str) -> str:
    """``Precision@10`` -> ``precision`` (bold marks and ties dropped)."""
    name = re.sub(r"[*<>/u]+", "", text.split(" (")[0]).split("@")[0].strip()
    return _NAMES.get(name, name)


def _choices(r: object) -> list[str]:
    """The choices of one verdict.csv row (a row from before ``choices``: the recommended metric
    and its exact ties)."""
    rec = str(getattr(r, "recommended", "") or "")
    if not rec:
        return []
    got = _keys(getattr(r, "choices", ""))
    return got or [rec, *_keys(getattr(r, "identical", ""))]


def _keys(value: object) -> list[str]:
    """A list of metric keys: a list in a result's verdict, ``;``-joined in verdict.csv."""
    if isinstance(value, (list, tuple)):
        return [str(m) for m in value if m]
    return [m for m in str(value or "").split(";") if m]


def check_report(folder: Path) -> list[str]:
    """Every problem of the report in ``folder`` (empty: the report is consistent)."""
    folder = Path(folder)
    md = (folder / "report.md").read_text(encoding="utf-8")
    problems: list[str] = []
    for name in ("report.md", "verdict.md"):
        text = (folder / name).read_text(encoding="utf-8") if (folder / name).exists() else ""
        for bad, why in ((r"\bDP (?!per 25 pairs)[-+]?\d", "a DP not per 25 pairs"),
                         (r"DP_floor|DP per pair\b|DP at P\b|dp_at_25|dp25",
                          "another DP scale"),
                         (r"\bP (?:=|>=|<=) ?\d+(?:\.\d+)? ?%", "P used for a probability"),
                         (r"Pr\(more discriminative\) = (?:100|0)%",
                          "a bootstrap share written as certain")):
            for m in re.finditer(bad, text):
                problems.append(f"{name}: {why}: {text[max(0, m.start() - 40):m.end() + 20]!r}")
    for cap, header, _rows in _tables(md):
        shows_dp = any("DP" in h for h in header) or ("DP per 25 pairs" in cap
                                                    and "Table" in cap)
        if shows_dp and "P" not in header and "P = " not in cap and "P pairs" not in cap:
            problems.append(f"report.md: a table of DP without P: {header}")
    m = re.search(r"min_pairs = (\d+)", md)
    min_pairs = int(m.group(1)) if m else 10
    verdict = pd.read_csv(folder / "verdict.csv", keep_default_na=False)
    problems += _check_verdict(verdict, min_pairs)
    problems += _check_table3(folder, verdict, min_pairs)
    problems += _check_table4(folder, verdict)
    problems += _check_choose_well(md, verdict)
    problems += _check_ties(md, verdict)
    problems += _check_value_tables(folder, md, min_pairs)
    return problems


def _check_verdict(v: pd.DataFrame, min_pairs: int) -> list[str]:
    out = []
    for r in v.itertuples(index=False):
        if int(r.n_pairs) < min_pairs and (r.recommended or r.less_discriminative
                                           or r.dominant_hyperparameter):
            out.append(f"verdict.csv: {r.algorithm} N={r.cutoff} {r.family}: a claim on "
                       f"{r.n_pairs} < min_pairs pairs")
        if str(r.ci_low) not in ("", "nan") and not 0.0 <= float(r.ci_low) <= float(
                r.ci_high) <= 25.0:
            out.append(f"verdict.csv: {r.algorithm} N={r.cutoff}: an interval outside [0, 25]")
    return out


def _check_table3(folder: Path, v: pd.DataFrame, min_pairs: int) -> list[str]:
    md = (folder / "table3.md").read_text(encoding="utf-8")
    (_cap, header, rows), = [t for t in _tables(md)]
    metrics = [_NAMES.get(h.split("@")[0], h) for h in header[3:]]
    out = []
    for row in rows:
        alg = next((a for a in set(v["algorithm"]) if display_algorithm(a) == row[0]), row[0])
        cutoff, n_pairs = int(row[1]), int(row[2].split("-")[-1])
        bold = {m for m, c in zip(metrics, row[3:], strict=True) if c.startswith("**")}
        if n_pairs < min_pairs and bold:
            out.append(f"table3.md: {row[0]} N={cutoff}: bold on {n_pairs} < min_pairs pairs")
        vr = v[(v["algorithm"] == alg) & (v["cutoff"] == cutoff)]
        want = {m for r in vr.itertuples() for m in _choices(r)}
        if bold != want:
            out.append(f"table3.md: {row[0]} N={cutoff}: bold {sorted(bold)} but the verdict "
                       f"recommends {sorted(want)}")
    return out


def _check_table4(folder: Path, v: pd.DataFrame) -> list[str]:
    t4 = pd.read_csv(folder / "table4.csv", keep_default_na=False)
    merged = t4.merge(v, on=["algorithm", "cutoff", "family"], how="outer", indicator="where")
    out = [f"table4.csv: {r.algorithm} N={r.cutoff} {r.family}: not in both table 4 and the "
           "verdict" for r in merged.itertuples() if r.where != "both"]
    for r in merged[merged["where"] == "both"].itertuples():
        if r.best_metric != r.recommended:
            out.append(f"table4.csv: {r.algorithm} N={r.cutoff} {r.family}: best "
                       f"{r.best_metric!r}, verdict {r.recommended!r}")
    return out


def _check_choose_well(md: str, v: pd.DataFrame) -> list[str]:
    out = []
    for m in re.finditer(r"^- (.+?)(?:, (\w+))?: the (most discriminative metric|metric of "
                         r"lowest DP) at N = (\d+) is (\S+)", md, flags=re.M):
        alg_name, family, cutoff, metric = m.group(1), m.group(2), int(m.group(4)), m.group(5)
        rows = v[(v["algorithm"].map(display_algorithm) == alg_name) & (v["cutoff"] == cutoff)]
        if family:
            rows = rows[rows["family"] == family]
        if len(rows) != 1 or display_metric(rows.iloc[0]["recommended"], cutoff) != metric:
            out.append(f"report.md: choose-well names {metric} for {alg_name} {family} N="
                       f"{cutoff}, the verdict {list(rows['recommended'])}")
        elif m.group(3) == "most discriminative metric" and len(_choices(rows.iloc[0])) > 1:
            out.append(f"report.md: choose-well calls {metric} the most discriminative metric "
                       f"for {alg_name} {family} N={cutoff}, where the verdict offers "
                       f"{_choices(rows.iloc[0])} as equal choices")
    return out


def _check_ties(md: str, v: pd.DataFrame) -> list[str]:
    """Rule 6 on report.md: each verdict row with several choices names them all, as equal
    choices, in its sentence, its table row and (at the summary's cutoff) the summary."""
    out = []
    if "choices" not in v.columns:
        return out
    summary = md.split("## Verdict")[0]
    m = re.search(r"^At N = (\d+)", summary, flags=re.M)
    summary_n = int(m.group(1)) if m else None
    for r in v.itertuples(index=False):
        ch = _choices(r)
        if len(ch) < 2:
            continue
        n = int(r.cutoff)
        names = [display_metric(x, n) for x in ch]
        alg = display_algorithm(r.algorithm)
        head = f"- {alg}, N = {n}, {r.family}: "
        line = next((ln for ln in md.splitlines() if ln.startswith(head)), "")
        said = line[len(head):].split(" (")[0]
        if not line or any(x not in said for x in names) or "difference" not in said:
            out.append(f"report.md: {alg} N={n} {r.family}: the verdict's sentence does not "
                       f"name the choices {names} as equal")
        rows = [c for _cap, header, rows in _tables(md) if "Tune with" in header
                for c in rows if c[0] == alg and c[1] == str(n) and c[2] == r.family]
        cell = rows[0][header_index(md, "Tune with")] if rows else ""
        if rows and any(x not in cell for x in names):
            out.append(f"report.md: {alg} N={n} {r.family}: the verdict table's Tune with "
                       f"names {cell!r}, not every choice {names}")
        if n == summary_n:
            s_line = next((ln for ln in summary.splitlines()
                           if ln.startswith(f"- **{alg}**")), "")
            part = s_line.split(f"{r.family}: ", 1)[-1].split(" (")[0] if s_line else ""
            if not s_line or any(x not in part for x in names) or "difference" not in part:
                out.append(f"report.md: {alg} {r.family}: the summary does not name the "
                           f"choices {names} as equal")
    return out


def header_index(md: str, name: str) -> int:
    """Column index of ``name`` in the first Markdown table of ``md`` that has it."""
    return next(header.index(name) for _cap, header, _rows in _tables(md) if name in header)


def _check_value_tables(folder: Path, md: str, min_pairs: int) -> list[str]:
    """Table 5 and the one-at-a-time table: no bold on fewer than ``min_pairs`` pairs; the
    dominant hyperparameter (dominance.csv) only on enough pairs."""
    out = []
    t5 = folder / "table5.md"
    if t5.exists():
        for _cap, _header, rows in _tables(t5.read_text(encoding="utf-8")):
            for i, row in enumerate(rows):
                if row[0] == "P" and i > 0:
                    for c, p in zip(rows[i - 1][1:], row[1:], strict=False):
                        if p and p != "–" and int(p) < min_pairs and c.startswith("**"):
                            out.append(f"table5.md: bold on {p} < min_pairs pairs")
    oat = folder / "one_at_a_time.md"
    if oat.exists():
        for _cap, _header, rows in _tables(oat.read_text(encoding="utf-8")):
            for row in rows:
                if row[2].isdigit() and int(row[2]) < min_pairs and any(
                        c.startswith("**") for c in row[3:]):
                    out.append(f"one_at_a_time.md: {row[:2]}: bold on {row[2]} pairs")
    dom = folder / "dominance.csv"
    if dom.exists():
        d = pd.read_csv(dom, keep_default_na=False)
        for r in d[d["answer"] == "dominant"].itertuples():
            if int(r.n_pairs) < min_pairs:
                out.append(f"dominance.csv: {r.algorithm} {r.metric}@{r.cutoff}: dominant on "
                           f"{r.n_pairs} pairs")
    return out


def check_dp_figure(report: object) -> list[str]:
    """The DP figures of a :class:`dptune.Report`: the bold (starred) labels of each panel are
    the verdict's choices of that algorithm and cutoff, and every panel of a figure has the
    same x range."""
    out = []
    v = report.verdict  # type: ignore[attr-defined]
    for stem, fig in report.figures.items():  # type: ignore[attr-defined]
        if not stem.startswith("figure_dp"):
            continue
        ranges = {tuple(round(x, 9) for x in ax.get_xlim()) for ax in fig.figure.axes
                  if ax.get_visible()}
        if len(ranges) > 1:
            out.append(f"{stem}: panels on different x ranges {sorted(ranges)}")
        for ax in fig.figure.axes:
            if not ax.get_visible():
                continue
            title = ax.get_title()
            alg_name = title.split(" (N = ")[0]
            bold = {_metric(t.get_text()) for t in ax.get_yticklabels()
                    if t.get_fontweight() == "bold"}
            rows = v[(v["algorithm"].map(display_algorithm) == alg_name)
                     & (v["cutoff"] == fig.cutoff)]
            want = {m for r in rows.itertuples() for m in _choices(r)}
            if bold != want:
                out.append(f"{stem}: {alg_name}: starred {sorted(bold)}, the verdict "
                           f"{sorted(want)}")
    return out
