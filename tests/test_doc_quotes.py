"""The documentation quotes the committed reports as they are: every DP with its interval written
``x [a, b]`` in README.md or docs/*.md is a row of a committed report's CSV (the value and both
bounds, at the quoted number of decimals), and the README's verdict quote is the text of the
verdict it names. A report regenerated with other numbers fails here until the docs follow."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``1.072 [0.528, 1.617]``: a value and its interval, the same number of decimals throughout.
QUOTE = re.compile(r"(?<![\w.])(\d+\.(\d+)) \[(\d+\.\d+), (\d+\.\d+)\]")


def _words(text: str) -> str:
    return " ".join(text.split())


def report_intervals() -> list[tuple[str, float, float, list[float]]]:
    """``(csv, low, high, the row's numbers)`` of every interval (``*ci_low``/``*ci_high``
    columns) of every committed report's CSV."""
    out = []
    for path in sorted((ROOT / "reports").glob("*/*.csv")):
        table = pd.read_csv(path)
        for low in (c for c in table.columns if c.endswith("ci_low")):
            high = low.removesuffix("low") + "high"
            numbers = table.select_dtypes("number")
            for (_, row), values in zip(table.iterrows(), numbers.itertuples(index=False), strict=True):
                if pd.notna(row[low]) and pd.notna(row[high]):
                    out.append((path.relative_to(ROOT).as_posix(), float(row[low]), float(row[high]),
                                [float(v) for v in values if pd.notna(v)]))
    return out


def doc_quotes() -> list[tuple[str, str, int, str, str]]:
    """``(doc, value, decimals, low, high)`` of every quoted interval (lines joined, so that a
    quote broken over two lines is read whole)."""
    out = []
    for doc in DOCS:
        for m in QUOTE.finditer(_words(doc.read_text(encoding="utf-8"))):
            out.append((doc.name, m.group(1), len(m.group(2)), m.group(3), m.group(4)))
    return out


def _in_reports(value: str, decimals: int, low: str, high: str,
                intervals: list[tuple[str, float, float, list[float]]]) -> bool:
    def shown(x: float) -> str:
        return f"{x:.{decimals}f}"

    return any(shown(lo) == low and shown(hi) == high and any(shown(v) == value for v in numbers)
               for _, lo, hi, numbers in intervals)


def test_the_quotes_and_the_reports_are_read():
    quotes = doc_quotes()
    assert {doc for doc, *_ in quotes} >= {"README.md", "paper.md"} and len(quotes) >= 10
    assert any(path.endswith("anelli2019-ml1m-design/table4.csv") for path, *_ in report_intervals())


def test_every_quoted_interval_is_in_a_committed_report():
    intervals = report_intervals()
    missing = [f"{doc}: {value} [{low}, {high}]" for doc, value, decimals, low, high in doc_quotes()
               if not _in_reports(value, decimals, low, high, intervals)]
    assert not missing, "quoted, but in no committed report:\n" + "\n".join(missing)


@pytest.mark.parametrize("value, low, high, found", [
    ("1.072", "0.528", "1.617", True),
    ("1.072", "0.667", "1.848", False),  # an interval of an older run
    ("1.073", "0.528", "1.617", False),
])
def test_a_stale_quote_is_found(value, low, high, found):
    rows = [("x.csv", 0.52812, 1.61749, [1.07211, 0.52812, 1.61749, 10.0])]
    assert _in_reports(value, 3, low, high, rows) is found


def test_the_readme_verdict_quote_is_the_verdict():
    """The README's quoted verdict (the ``>`` lines after the sentence naming
    ``reports/<name>/verdict.md``) is word for word a sentence of that file."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = re.search(r"`(reports/[\w.-]+/verdict\.md)`[^>]*?:\s*\n\s*\n((?:> .*\n)+)", readme)
    assert named is not None
    quote = _words(" ".join(line[2:] for line in named.group(2).splitlines()))
    verdict = _words((ROOT / named.group(1)).read_text(encoding="utf-8"))
    assert len(quote) > 200 and quote in verdict
