"""How a report shows itself in a notebook: the summary and the verdict (as in report.md) and the
DP figure of the primary cutoff (each metric's DP per 25 pairs with its interval per algorithm,
the recommended metric of each family starred). ``dptune.Report.from_result(result)`` in a
notebook cell displays it (:meth:`dptune.Report._repr_html_`); the analysis result itself holds
numbers only.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from dptune.report._figures import dp_figure, dp_figure_caption, palette_png
from dptune.report._format import shown_metric, unmarked
from dptune.report._table import md_names
from dptune.report._verdict import summary_section, verdict_section

__all__ = ["result_markdown", "result_html"]


def _summary(result: Any) -> str:
    dp = result.dp.table
    algs = len(set(dp["algorithm"])) if dp is not None and len(dp) else 0
    primary = shown_metric(str(result.primary[0]), int(result.primary[1]))
    return (f"dptune analysis: {algs} algorithm{'s' if algs != 1 else ''} with a DP, primary "
            f"metric {primary}.")


def _figure_png(result: Any) -> tuple[bytes, str] | None:
    """The DP figure of the primary cutoff as PNG bytes and its caption, or None."""
    dp, verdict = result.dp.table, result.verdict
    whole = dp[dp["scope"] == "all"]
    if whole.empty or verdict is None or verdict.empty:
        return None
    cutoff = int(result.primary[1])
    if cutoff not in set(whole["cutoff"].astype(int)):
        cutoff = int(whole["cutoff"].min())
    fig = dp_figure(dp, verdict, cutoff, result.metric_families)
    return palette_png(fig), dp_figure_caption(dp, cutoff)


def result_markdown(result: Any) -> str:
    """Markdown: a one-line summary, the summary per algorithm, then the verdict (or why there
    is none)."""
    body = verdict_section(result)
    if body is None:
        body = ("No verdict: no algorithm has two configurations to compare. The DP table is "
                "`result.dp.table`.")
    summary = summary_section(result)
    return md_names(f"**{_summary(result)}**\n\n" + (f"{summary}\n\n" if summary else "")
                    + f"{body}\n")


def result_html(result: Any) -> str:
    """HTML: :func:`result_markdown` rendered, followed by the DP figure inlined as a PNG."""
    from dptune.report._html import render_markdown

    out = render_markdown(result_markdown(result))
    fig = _figure_png(result)
    if fig is not None:
        png, caption = fig
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        out += (f'<figure><img src="{uri}" alt="DP figure" style="max-width:100%">'
                f"<figcaption>{html.escape(unmarked(caption))}</figcaption></figure>")
    return f'<div class="dptune-result">{out}</div>'
