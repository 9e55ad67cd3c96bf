"""Names read as written in every Markdown file of a report.

An algorithm, hyperparameter, metric or value is named by the data (a per-user table, an
outside configurations file), so it can hold Markdown's markup characters: ``_lam_`` or
``*st*ar*`` would be set in italics, ``$s$`` as mathematics (GitHub), ``~t~`` struck out,
a backtick as code, ``w*x*y`` would lose its stars. The report holds every name as a span
until it renders a text (:func:`dptune.report._format.name_span`), and Markdown escapes it
there (:func:`dptune.report._table.md_names`, :func:`dptune.report._table.md_escape`).

The main check is differential: the same per-user values are analysed twice, once under such
names and once under plain names of the same sort order, and the two reports, rendered by a
CommonMark parser with GFM tables and strikethrough, must read the same once the plain names
are swapped back: a name that turned into markup, lost a character or kept a backslash would
make them differ, wherever in the report it is printed.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import dptune
from dptune.report import Block, Cell, Table
from dptune.report._format import name_span, shown_algorithm, unmarked
from dptune.report._html import _escaped_html
from dptune.report._table import md_escape, md_names

#: CommonMark with GFM's tables and strikethrough, raw HTML shown as text as report.html does.
_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_MD.add_render_rule("html_inline", _escaped_html)
_MD.add_render_rule("html_block", _escaped_html)

#: Hostile names and, for each, a plain twin; the twins sort as the names do, so that every
#: table and sentence lists them in the same order.
ALGORITHMS = {"*st*ar*": "Alg0q", "_und_": "Alg1q"}
HYPERPARAMETERS = {"*st*ar*": {"$s$": "Hp0a", "w*x*y": "Hp0b"},
                   "_und_": {"_lam_": "Hp1a", "~t~": "Hp1b"}}
VALUES = {"*a*": "Val0q", "_b_": "Val1q", "`d`": "Val2q", "c~": "Val3q"}
METRICS = {"*m*x": "Zmetq"}  # an outside metric, a family of its own


def _per_user(algorithms: dict, hyperparameters: dict, values: dict, outside: str):
    """A per-user table of 2 algorithms x 16 configurations (a numeric hyperparameter of 4
    values times a text one of 4), 2 validation folds and the test split of 80 users each, 3
    metrics, with the names given (the keys of the name maps, or their plain twins: the values
    are the same either way)."""
    rng = np.random.default_rng(5)
    rows, configs = [], []
    for alg in algorithms:
        h_num, h_text = hyperparameters[alg]
        c = 0
        for x in (0.1, 0.2, 0.4, 0.8):
            for j, v in enumerate(values):
                configs.append({"algorithm": alg, "config_id": c, h_num: x, h_text: v})
                for fold in ("0", "1", "test"):
                    user = rng.normal(0.0, 0.1, 80)
                    for metric in ("ndcg", "precision", outside):
                        noise = rng.normal(0.0, 0.05, 80)
                        value = np.clip(0.3 + 0.3 * x + 0.01 * j + user + noise, 0.0, 1.0)
                        rows += [(alg, c, fold, u, metric, 10, float(value[u]))
                                 for u in range(80)]
                c += 1
    per_user = pd.DataFrame(rows, columns=["algorithm", "config_id", "fold", "user", "metric",
                                           "cutoff", "value"])
    return per_user, pd.DataFrame(configs)


def _text(markdown: str) -> str:
    """What a reader sees of a Markdown text: its rendering's text, blanks collapsed."""
    body = re.sub(r"<[^>]+>", " ", _MD.render(markdown))
    return re.sub(r"\s+", " ", html.unescape(body)).strip()


def _reports(folder: Path, plain: bool) -> dict[str, str]:
    """The Markdown files of the report of :func:`_per_user` under its hostile names, or under
    their plain twins (``plain``), written into ``folder``."""
    names = {}
    if plain:
        for mapping in (ALGORITHMS, VALUES, METRICS, *HYPERPARAMETERS.values()):
            names.update(mapping)
    rename = lambda x: names.get(x, x)  # noqa: E731
    algorithms = {rename(a): None for a in ALGORITHMS}
    hyperparameters = {rename(a): [rename(h) for h in HYPERPARAMETERS[a]] for a in ALGORITHMS}
    per_user, configs = _per_user(algorithms, hyperparameters, [rename(v) for v in VALUES],
                                  rename("*m*x"))
    result = dptune.discriminative_power(per_user, configs=configs, bootstrap=100)
    written = dptune.Report.from_result(result).write(folder)
    return {p.name: p.read_text(encoding="utf-8") for p in written
            if p.suffix in (".md", ".csv", ".tex", ".html", ".svg", ".bib")}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, str]]:
    base = tmp_path_factory.mktemp("names")
    return _reports(base / "hostile", False), _reports(base / "plain", True)


def test_every_markdown_file_reads_as_the_one_of_plain_names(reports):
    hostile, plain = reports
    twins = {**ALGORITHMS, **VALUES, **METRICS}
    for mapping in HYPERPARAMETERS.values():
        twins.update(mapping)
    markdown = sorted(n for n in hostile if n.endswith(".md"))
    assert {"report.md", "verdict.md", "methods.md", "table3.md", "table5.md",
            "one_at_a_time.md"} <= set(markdown)
    # the report says what the names are about: each is printed, and the verdict names a
    # dominant hyperparameter, so that its sentences are among those compared
    text = _text(hostile["report.md"])
    assert "Dominant hyperparameter for nDCG@10: _lam_" in text
    assert "Downstream: both accuracy metrics select configuration" in text  # the test split
    for name in markdown:
        expected = _text(plain[name])
        for hostile_name, twin in twins.items():
            expected = expected.replace(twin, hostile_name)
        assert _text(hostile[name]) == expected, name


def test_no_dollar_is_left_for_githubs_mathematics(reports):
    """GitHub sets the text between two ``$`` as mathematics; CommonMark has no such rule, so
    the differential check cannot see it: every ``$`` of a name is escaped."""
    hostile, _ = reports
    for name, text in hostile.items():
        if name.endswith(".md"):
            assert not re.search(r"(?<!\\)\$", text), name


def test_no_span_is_left_in_any_file_or_table(reports):
    """The span characters stay inside the report's building: no file, table cell, caption or
    note holds them."""
    hostile, _ = reports
    for name, text in hostile.items():
        assert "\x0e" not in text and "\x0f" not in text, name
    t = Table("t", f"caption {shown_algorithm('*a*')}",
              [Block([Cell(shown_algorithm("_b_"))], [[Cell("x", detail=name_span("$d$"))]],
                     title=name_span("*t*"))],
              pd.DataFrame(), notes=[f"note {name_span('~n~')}"])
    assert t.caption == "caption *a*" and t.notes == ["note ~n~"]
    assert t.blocks[0].title == "*t*" and t.blocks[0].header[0].text == "_b_"
    assert t.blocks[0].rows[0][0].detail == "$d$"


@pytest.mark.parametrize(("name", "escaped"), [
    ("learning_rate", "learning_rate"), ("nDCG@10", "nDCG@10"), ("0.05", "0.05"),
    ("[1.0, 2.0]", "[1.0, 2.0]"),  # an interval: no link
    ("_lam_", "\\_lam\\_"), ("x_", "x\\_"), ("__x", "\\_\\_x"),
    ("*st*ar*", "\\*st\\*ar\\*"), ("$s$", "\\$s\\$"), ("~t~", "\\~t\\~"), ("`d`", "\\`d\\`"),
    ("[h](x)", "[h\\](x)"), ("[h][x]", "[h\\][x]"),
    ("a\\b", "a\\\\b"), ("a|b", "a\\|b"), ("a\nb", "a b"),
    ("<b>x</b>", "\\<b>x\\</b>"), ("R&amp;D", "R\\&amp;D"), ("R&D", "R&D"),
])
def test_md_escape_by_hand(name, escaped):
    assert md_escape(name) == escaped


@pytest.mark.parametrize(("name", "escaped"), [
    ("# x", "\\# x"), ("> q", "\\> q"), ("- x", "\\- x"), ("+ y", "\\+ y"), ("1. x", "1\\. x"),
    ("12) y", "12\\) y"), ("-1", "-1"), ("2.5", "2.5"), (">99.99%", "\\>99.99%"),
])
def test_a_name_that_would_start_a_block_is_escaped_in_a_sentence(name, escaped):
    """At the start of a list item's text (``- {name}: ...``) ``# x`` would be a heading and
    ``1. x`` a list; in a table cell neither is (``>99.99%`` stays as it is there)."""
    assert md_names(name_span(name)) == escaped
    assert md_names(f"- **{name_span(name)}**: a") == f"- **{escaped}**: a"
    if name == ">99.99%":
        assert md_escape(name) == name


_NAMES = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF,
                               blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


@given(_NAMES)
def test_any_name_reads_as_written_in_a_sentence(name):
    shown = _text(md_names(f"- the metric {name_span(name)} selects {name_span(name)}."))
    assert shown == re.sub(r"\s+", " ", f"the metric {name} selects {name}.").strip()


@given(_NAMES)
def test_any_name_reads_as_written_in_a_table_cell(name):
    table = Table("t", "c", [Block([Cell("a"), Cell("b")], [[Cell(name), Cell("x")]])],
                  pd.DataFrame())
    cells = re.findall(r"<td[^>]*>(.*?)</td>", _MD.render(table.to_markdown()), re.S)
    shown = re.sub(r"\s+", " ", html.unescape(cells[0])).strip()
    assert shown == re.sub(r"\s+", " ", name).strip()
    assert unmarked(name_span(name)) == name


def test_a_judge_metric_whose_name_is_no_identifier_gets_its_test_column():
    """The best-configurations table read a judge's test column (``test_<metric>``) as a field
    of a row tuple, which a metric named ``my metric`` cannot be: the report stopped with an
    AttributeError whenever a per-user table of such a metric held the test split."""
    per_user, configs = _per_user({"a": None}, {"a": ["x", "y"]}, ["u", "v", "w", "z"],
                                  "my metric")
    result = dptune.discriminative_power(per_user, configs=configs, bootstrap=0)
    text = dptune.Report.from_result(result).to_markdown()
    assert "| Test my metric@10 |" in text
