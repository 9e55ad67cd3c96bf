"""report.html: report.md rendered as one self-contained web page.

The Markdown is rendered by ``markdown-it-py`` (CommonMark with GFM tables; raw HTML is shown as
text, so that a name holding ``<script>`` or ``<b>`` reads as written, never run or applied,
but for the one tag the report writes itself, the tables' ``<ins>`` underline:
:func:`render_markdown`); then every figure is inlined as a base64 PNG (the figure
linked from report.md is embedded where report.md embeds it; figures that report.md only links
to are embedded right after the paragraph that links to them, and the link points at them),
every table is wrapped so that it scrolls sideways on a narrow screen, and one stylesheet makes
the page readable on a phone and printable. Nothing is fetched from the network: no external
stylesheet, font, script or image, not even a favicon. The page is a pure function of the
report: a rerun writes the same bytes.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping

from markdown_it import MarkdownIt

__all__ = ["markdown_to_html", "render_markdown", "CSS"]

#: The page's one stylesheet: a readable column on screens of any width, tables that scroll
#: sideways on phones, and a print layout (no scrolling, no split figures or table rows).
CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 80rem; padding: 1rem; font: 16px/1.5 system-ui, -apple-system,
  "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 0.75rem; padding-bottom: 0.25rem;
  border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin: 1.5rem 0 0.5rem; }
p, li { overflow-wrap: anywhere; }
code { font: 0.9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: #f3f3f3; padding: 0.05em 0.3em; border-radius: 3px; }
.table-wrap { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.875rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e2e2e2; padding: 0.3rem 0.6rem; vertical-align: top;
  min-width: 4.5rem; }
th[style*="right"], td[style*="right"] { min-width: 0; }
.num { white-space: nowrap; }
th { background: #f6f6f6; border-bottom: 2px solid #bbb; }
tbody tr:nth-child(even) { background: #fbfbfb; }
figure { margin: 1rem 0; }
img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.875rem; color: #555; }
@media (max-width: 40rem) {
  body { padding: 0.75rem; font-size: 15px; }
  h1 { font-size: 1.35rem; }
  table { font-size: 0.8rem; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  .table-wrap { overflow: visible; }
  table { font-size: 7.5pt; }
  th, td { padding: 0.15rem 0.35rem; }
  tr, img, figure { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
""".strip()

_IMG = re.compile(r'<img src="([^"]+)" alt="([^"]*)" ?/?>')
#: A number of a table cell, or an interval ``[a, b]``: kept on one line each, so that a cell
#: "DP [low, high]" may wrap between the DP and its interval, never inside either.
_NUMBERS = re.compile(r"(\[-?[\d.]+, -?[\d.]+\]|(?<![\w.])-?\d[\d.]*(?:‡|†|§)?(?![\w.]))")
_CELL = re.compile(r'(<td style="text-align: ?right">)(.*?)(</td>)', re.S)
_LINK = re.compile(r'<a href="([^"#:]+\.(?:png|svg))">')
_PARAGRAPH = re.compile(r"<p>(?:(?!</p>).)*</p>", re.S)


#: The one HTML report.md writes itself (the tables' underline): kept a tag in the page.
_ALLOWED_HTML = frozenset({"<ins>", "</ins>"})


def _escaped_html(renderer: object, tokens: list, idx: int, options: object, env: object) -> str:
    """A raw HTML token of the Markdown as text (``<ins>`` and ``</ins>`` kept as tags)."""
    content = tokens[idx].content
    return content if content in _ALLOWED_HTML else html.escape(content, quote=False)


def render_markdown(markdown: str) -> str:
    """Markdown as HTML (CommonMark with GFM tables) whose raw HTML is shown as text, but for
    the tables' ``<ins>`` underline: an algorithm, metric or hyperparameter named
    ``<script>alert(1)</script>`` reads so in report.html and in a notebook, as in report.md's
    text, instead of running."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.add_render_rule("html_inline", _escaped_html)
    md.add_render_rule("html_block", _escaped_html)
    return md.render(markdown)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0]


def _inline_figures(body: str, images: Mapping[str, bytes]) -> str:
    """Embed every figure: ``<img>`` of report.md in place, linked-only figures after the
    paragraph that links to them; links to a figure file (PNG or SVG) become in-page anchors."""
    uris = {name: _data_uri(png) for name, png in images.items()}
    embedded: set[str] = set()

    def img(match: re.Match[str]) -> str:
        src, alt = html.unescape(match.group(1)), match.group(2)
        if src not in uris:
            return match.group(0)
        embedded.add(src)
        return f'<img id="{_stem(src)}" src="{uris[src]}" alt="{alt}">'

    body = _IMG.sub(img, body)

    def paragraph(match: re.Match[str]) -> str:
        text = match.group(0)
        linked = [f"{_stem(h)}.png" for h in _LINK.findall(text)]
        extra = [n for n in dict.fromkeys(linked) if n in uris and n not in embedded]
        for name in extra:
            embedded.add(name)
            cut = re.search(r"_at(\d+)$", _stem(name))
            caption = f"Figure 1 at N = {cut.group(1)}" if cut else _stem(name)
            text += (
                f'\n<figure id="{_stem(name)}"><img src="{uris[name]}" '
                f'alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}'
                "</figcaption></figure>"
            )
        return text

    body = _PARAGRAPH.sub(paragraph, body)
    known = {_stem(n) for n in uris}

    def link(match: re.Match[str]) -> str:
        stem = _stem(match.group(1))
        return f'<a href="#{stem}">' if stem in known else match.group(0)

    return _LINK.sub(link, body)


def markdown_to_html(
    markdown: str, images: Mapping[str, bytes], title: str | None = None
) -> str:
    """One self-contained HTML page from report.md and its figures (``images`` maps the PNG
    file names used in the Markdown to their PNG bytes)."""
    body = render_markdown(markdown)
    body = _inline_figures(body, images)
    body = _CELL.sub(lambda m: m.group(1) + _NUMBERS.sub(r'<span class="num">\1</span>',
                                                          m.group(2)) + m.group(3), body)
    body = body.replace("<table>", '<div class="table-wrap"><table>')
    body = body.replace("</table>", "</table></div>")
    page_title = html.escape(f"dptune report{': ' + title if title else ''}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="dptune.report">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{page_title}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
        f"<main>\n{body}</main>\n</body>\n</html>\n"
    )
