"""Names and numbers at the edges of what a report renders: an algorithm, metric or value named
with HTML, Markdown or mathtext syntax, a zero that floating-point arithmetic left negative, a
sparsity that rounds to a whole matrix. Each is rendered as written, in every format."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from conftest import one_algorithm_frames, one_algorithm_result  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402
from matplotlib import cbook  # noqa: E402

from dptune.report import Report  # noqa: E402
from dptune.report._figures import dp_figure, figure1  # noqa: E402
from dptune.report._inputs import interval_text  # noqa: E402
from dptune.report._table import simple_block  # noqa: E402
from dptune.report._tables import table1, table3  # noqa: E402

SCRIPT = "<script>alert(1)</script>"


def test_an_algorithm_named_with_html_is_text_in_report_html_and_the_notebook():
    """An algorithm named ``<script>alert(1)</script>`` ran as a script in report.html and in
    a notebook's rendering of the report (its Markdown was rendered with raw HTML on), and one
    named ``<b>x</b>`` was set bold: the page shows the name as written; the tables' own
    ``<ins>`` underline is still a tag."""
    rep = Report.from_result(one_algorithm_result(SCRIPT))
    page = rep.to_html()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    notebook = rep._repr_html_()
    assert "<script>" not in notebook
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in notebook
    from dptune.report._html import render_markdown

    assert render_markdown("| a |\n| --- |\n| **<ins>1.000</ins>** |\n").count("<ins>") == 1
    assert "<b>" not in render_markdown("<b>x</b>\n\nA <b>bold</b> name.\n")


def test_a_name_that_is_markdown_or_html_is_a_plain_table_cell():
    """A table cell's text is shown as written by any Markdown renderer (GitHub's, a
    notebook's): ``<b>x</b>`` was set bold, ``R&amp;D`` shown as ``R&D``, and a carriage
    return in a name ended the table row."""
    md = simple_block(["Algorithm"], [["<b>x</b> R&amp;D a\rb"]], [False]).to_markdown()
    assert len(md.splitlines()) == 3, md
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<b>" not in html
    assert "&lt;b&gt;x&lt;/b&gt; R&amp;amp;D a b" in html
    plain = simple_block(["p"], [["< 0.001"], ["hit_rate&x"]], [False]).to_markdown()
    assert "| < 0.001 |" in plain and "| hit_rate&x |" in plain  # nothing to escape


def test_an_algorithm_named_with_dollars_is_drawn_as_written():
    """matplotlib reads text between two ``$`` as mathtext: an algorithm named ``a$^$b``
    stopped the report with a parse error when its figures were drawn, and one named
    ``cost $5 vs $10`` lost its dollars. The figures' titles and labels are plain text."""
    rep = Report.from_result(one_algorithm_result("a$^$b"))
    assert "a$^$b" in rep.to_html()  # every figure drawn
    dp, curves = one_algorithm_frames("cost $5 vs $10")
    dp = dp.assign(metric=dp["metric"].replace({"efd": "gain $x$"}))
    curves = curves.assign(metric=curves["metric"].replace({"efd": "gain $x$"}))
    for fig in (figure1(curves, dp, 10), dp_figure(dp, None, 10)):
        ax = fig.axes[0]
        texts = [ax.get_title(), *(t.get_text() for t in ax.get_yticklabels())]
        legend = ax.get_legend()
        texts += [t.get_text() for t in legend.get_texts()] if legend is not None else []
        named = [t for t in texts if "$" in t]
        assert named and not any(cbook.is_math_text(t) for t in named), named
        fig.canvas.draw()


def test_a_bar_is_a_bar_in_latex():
    """LaTeX's default font encoding (OT1) prints a bare ``|`` as an em dash: the split-seed
    table's caption ``|% - 100|`` read "—% - 100—" in a paper. It is ``\\textbar{}``."""
    from dptune.report._table import Table, tex_escape

    assert tex_escape("|% - 100|") == "\\textbar{}\\% - 100\\textbar{}"
    block = simple_block(["Algorithm"], [["a|b"]], [False])
    tex = Table("bars", "test of |x|", [block], pd.DataFrame({"Algorithm": ["a|b"]})).to_latex()
    assert "a\\textbar{}b" in tex and "test of \\textbar{}x\\textbar{}" in tex


def test_a_name_with_line_breaks_is_one_line_in_latex():
    """A name read from a quoted CSV field can hold line breaks; an empty line inside a tabular
    cell ends its paragraph and stops LaTeX ("Paragraph ended before ..."). A line break is a
    space, as in Markdown."""
    from dptune.report._table import Table, tex_escape

    assert tex_escape("a\n\nb\r\nc") == "a  b  c"
    block = simple_block(["Algorithm"], [["a\n\nb"]], [False])
    tex = Table("breaks", "x", [block], pd.DataFrame({"Algorithm": ["a\n\nb"]})).to_latex()
    assert "a  b" in tex and "\n\n" not in tex.split("\\begin{tabular}")[1]


def test_a_zero_is_never_printed_negative():
    """A DP or interval end of -0.0 (or -1e-12, floating-point arithmetic's zero) was printed
    ``-0.000`` in Markdown and LaTeX, a negative DP no analysis can give."""
    dp, _ = one_algorithm_frames("knn")
    dp.loc[dp["metric"] == "ndcg", ["dp_per_25", "mean_p", "ci_low"]] = [-0.0, -0.0, -1e-12]
    t3 = table3(dp)
    for text in (t3.to_markdown(), t3.to_latex()):
        assert "-0.000" not in text
    assert "0.000 [0.000, 3.750]" in t3.to_markdown()
    assert interval_text(pd.Series({"ci_low": -1e-12, "ci_high": 1.0})) == " [0.000, 1.000]"


def test_a_sparsity_short_of_one_is_not_printed_as_a_whole_matrix():
    """Table 1 printed a large catalogue's sparsity (0.99996) as ``100.00%``, a matrix without
    a rating, in Markdown and LaTeX; the CSV keeps the number."""
    ds = pd.DataFrame([{"dataset": "big", "users": 100000, "items": 250000,
                        "ratings": 1000000, "sparsity": 0.99996},
                       {"dataset": "ml-1m", "users": 6040, "items": 3706, "ratings": 1000209,
                        "sparsity": 0.955316}])
    t1 = table1(ds)
    assert "| big | 100000 | 250000 | 1000000 | >99.99% |" in t1.to_markdown()
    assert "| ml-1m | 6040 | 3706 | 1000209 | 95.53% |" in t1.to_markdown()
    assert "100.00" not in t1.to_latex() and ">99.99\\%" not in t1.to_latex()
    assert "\\textgreater{}99.99\\%" in t1.to_latex()
    assert t1.to_dataframe()["sparsity"].iloc[0] == 0.99996
