"""The report's one table model and its renderers: every table dptune writes is a :class:`Table`.

A :class:`Table` holds a caption, one or more :class:`Block` s of :class:`Cell` s (text plus
markup: bold, underline, numeric alignment) and the machine-readable frame behind it, and renders
itself to Markdown (GFM pipe tables), LaTeX (booktabs), CSV and a DataFrame. Markup is stored as
flags and rendered per format, never pre-marked in the text, so the formats cannot disagree.
:func:`simple_block` builds a block from plain strings for the report-only tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dptune.errors import input_error, plain
from dptune.report._format import NAME_SPAN, fmt, is_missing, unmarked
from dptune.vocab import tie_value

__all__ = ["Cell", "Block", "Table", "simple_block", "marked_cells", "md_escape", "md_names",
           "tex_escape", "latex_label"]


@dataclass(frozen=True)
class Cell:
    """One table cell: its text and markup (rendered per format, never stored pre-marked).

    ``detail`` is a second part of the cell, a DP's interval ``[lo, hi]`` or the metrics tied
    with the one named: after the text on one line in Markdown (``5.382 [4.618, 6.253]``), on a
    second, smaller line under it in LaTeX, so that a table of intervals is about half as wide
    on a page. Markup marks the text."""

    text: str
    bold: bool = False
    underline: bool = False
    numeric: bool = False
    detail: str = ""

    def __post_init__(self) -> None:
        # a cell is plain text, escaped whole per format: a name in it needs no span
        object.__setattr__(self, "text", unmarked(self.text))
        object.__setattr__(self, "detail", unmarked(self.detail))


@dataclass
class Block:
    """One tabular block: a header row, body rows and where horizontal rules go.

    ``rules_after`` holds body row indices followed by a rule (``\\midrule`` in LaTeX; ignored
    in Markdown, whose tables have no inner rules). ``title`` is printed above the block.
    """

    header: list[Cell]
    rows: list[list[Cell]]
    title: str | None = None
    rules_after: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.title is not None:  # plain text, escaped whole per format
            self.title = unmarked(self.title)

    def to_markdown(self) -> str:
        """Render as one GFM pipe table (no title, no trailing newline)."""
        return _md_block(self)


@dataclass
class Table:
    """A report table: caption, one or more blocks (md/tex) and the machine-readable CSV frame.

    ``number`` is the paper's table number ("Table 3"), said before the caption in Markdown;
    LaTeX numbers its floats itself, so its caption is the caption alone."""

    name: str
    caption: str
    blocks: list[Block]
    csv: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    number: str = ""

    def __post_init__(self) -> None:
        # the caption and the notes are plain text, escaped whole per format
        self.caption = unmarked(self.caption)
        self.notes = [unmarked(n) for n in self.notes]

    def cells(self) -> Iterator[Cell]:
        """Every body cell of every block, in order (what a note or a LaTeX command is needed
        for is read off them)."""
        return (c for b in self.blocks for r in b.rows for c in r)

    def to_markdown(self) -> str:
        """Render as Markdown: a caption line ("Table N: caption"), then each block (GFM pipe
        tables)."""
        caption = md_escape(self.caption)
        parts = [f"{self.number}: {caption}" if self.number else caption, ""]
        for block in self.blocks:
            if block.title:
                parts += [f"*{md_escape(block.title)}*", ""]
            parts += [_md_block(block), ""]
        if not self.blocks:
            parts += ["(no data)", ""]
        for note in self.notes:
            parts += [md_escape(note), ""]
        return "\n".join(parts).rstrip("\n") + "\n"

    def to_latex(self, label: str | None = None) -> str:
        """Render as a LaTeX ``table`` float with booktabs rules (needs ``booktabs`` and
        ``graphicx``) that fits the line it is set in.

        ``label`` is the float's ``\\label`` (``tab:<label>``, its characters kept to letters,
        digits, ``-``, ``.`` and ``:``), by default the table's name. A written report passes
        its label (the experiment's name) before the table's (``tab:anelli2019-ml1m-knn:table3``),
        so that the reports of two experiments pasted into one paper do not define the same
        label.

        Two commands, defined in the float only (``\\providecommand``: a document's own
        definition wins): ``\\dptunefit`` sets a tabular at its natural size, or scales it down
        to ``\\linewidth`` when it is wider (a whole-grid table of a dozen metrics would
        otherwise run off the page; in a two-column paper, ``table*`` gives it the page's
        width); ``\\dptunestack`` sets a cell's detail (its interval) under its value in
        ``\\scriptsize``. pdflatex compiles every table of a report in the test suite, with no
        overfull line. A ``label`` that is not a non-empty string (``3``) is one line naming
        it: a number or a list would become a key nobody chose."""
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise input_error("Table.to_latex", "label", "needs a non-empty string (the float "
                              f"is labelled tab:<label>) or None for the table's name, got "
                              f"{plain(label)}")
        lines = [
            "% Generated by dptune.report; needs \\usepackage{booktabs} and \\usepackage{graphicx}.",
            "\\begin{table}[htbp]",
            "\\centering",
            _TEX_FIT,
        ]
        if any(c.detail for c in self.cells()):
            lines.append(_TEX_STACK)
        lines += [
            f"\\caption{{{tex_escape(self.caption)}}}",
            f"\\label{{tab:{latex_label(self.name if label is None else label)}}}",
            # a caption above a table gets no space under it in the standard classes
            "\\medskip",
        ]
        for i, block in enumerate(self.blocks):
            if i:
                lines.append("\\medskip")
            if block.title:
                lines.append(f"{{\\small\\textit{{{tex_escape(block.title)}}}}}\\par\\smallskip")
            lines += _tex_block(block)
        if not self.blocks:
            lines.append("(no data)")
        for note in self.notes:
            lines.append(f"\\par\\smallskip{{\\footnotesize {tex_escape(note)}}}")
        lines.append("\\end{table}")
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """Render the CSV frame: header, plain full-precision numbers, ``\\n`` line ends."""
        return self.csv.to_csv(index=False, lineterminator="\n")

    def to_dataframe(self) -> pd.DataFrame:
        """The machine-readable frame (raw keys, full-precision numbers): a copy of the CSV's."""
        return self.csv.copy()

    def _repr_markdown_(self) -> str:
        """Shown by Jupyter: the Markdown rendering."""
        return self.to_markdown()


#: The fit-to-line command of :meth:`Table.to_latex`: the tabular in box 0, scaled down to the
#: line when wider than it.
_TEX_FIT = ("\\providecommand{\\dptunefit}[1]{\\sbox0{#1}\\ifdim\\wd0>\\linewidth"
            "\\resizebox{\\linewidth}{!}{\\usebox0}\\else\\usebox0\\fi}")
#: The stacked cell of :meth:`Table.to_latex`: the value, and its detail under it, smaller;
#: aligned as its column (optional argument: ``r``, or ``l`` in a column of text).
_TEX_STACK = ("\\providecommand{\\dptunestack}[3][r]{\\begin{tabular}[t]{@{}#1@{}}#2\\\\"
              "{\\scriptsize #3}\\end{tabular}}")


def latex_label(text: str) -> str:
    """``text`` as the key of a LaTeX ``\\label``: letters, digits, ``-``, ``.`` and ``:``
    kept, every other character (``_``, spaces, braces, non-ASCII letters) as ``-``."""
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-.:" else "-"
                   for ch in str(text))


def md_names(markdown: str) -> str:
    """A Markdown text (a sentence, a section) with each name of
    :func:`dptune.report._format.name_span` escaped (:func:`md_escape`, and a start that
    would make a heading, a quote or a list item of it), so that it reads as written, and its
    own markup kept."""
    return NAME_SPAN.sub(lambda m: _MD_LEAD.sub(r"\1\\\2", md_escape(m.group(1))), str(markdown))


#: A ``<`` that starts raw HTML or an autolink in Markdown (a tag, a closing tag, a comment, a
#: declaration): a ``<`` before a blank or a digit (``< 0.001``) starts nothing and is kept.
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")
#: An ``&`` that starts a character reference (``&amp;``, ``&#60;``), which Markdown decodes.
_MD_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: Characters that start or end markup wherever they stand: emphasis (``*``), code (a
#: backtick), strikethrough (``~``, GitHub) and mathematics (``$``, GitHub).
_MD_MARK = re.compile(r"([*`~$])")
#: An ``_`` that can open or close emphasis: one not between two letters or digits
#: (``learning_rate`` is kept as it is, ``_lam_`` is escaped).
_MD_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: A ``]`` that closes a link's text (``[x](y)``, ``[x][y]``).
_MD_LINK = re.compile(r"\](?=[(\[])")
#: A start that would make a heading, a quote or a list item of a name at the start of a line
#: (or of a list item's text); harmless in a table cell, so escaped in sentences only.
_MD_LEAD = re.compile(r"^(\d*)([#>]|[-+](?= )|(?<=\d)[.)](?= ))")


def md_escape(text: str) -> str:
    """``text`` as Markdown that reads as written, in a table cell or a sentence: a backslash,
    ``|``, emphasis (``*``, an ``_`` at a word's edge), code, strikethrough and mathematics
    (a backtick, ``~``, ``$``) and a link's ``](`` escaped with a backslash; a line break (``\\n``, ``\\r``) as a space; a ``<`` that would
    open an HTML tag (a name ``<b>x</b>`` is shown as written, not bold) and an ``&`` that
    would start a character reference (``R&amp;D`` is not shown as ``R&D``) escaped too.
    ``learning_rate``, ``nDCG@10`` or ``0.05`` are left as they are."""
    text = unmarked(text).replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    text = _MD_UNDERSCORE.sub(r"\\_", _MD_MARK.sub(r"\\\1", text))
    text = _MD_LINK.sub(r"\\]", text)
    return _MD_ENTITY.sub(r"\\&", _MD_TAG.sub(r"\\<", text))


def _md_cell(cell: Cell) -> str:
    """Render one cell as Markdown with its markup (its detail after its text)."""
    text = md_escape(f"{cell.text} {cell.detail}" if cell.detail else cell.text)
    if not text:
        return ""
    if cell.underline:
        # <ins>, not <u>: the HTML sanitisers of GitHub and its kin keep <ins> and strip <u>,
        # and browsers draw <ins> underlined
        text = f"<ins>{text}</ins>"
    if cell.bold:
        text = f"**{text}**"
    return text


def _md_block(block: Block) -> str:
    """Render one block as a GFM pipe table (numeric columns right-aligned)."""
    width = max([len(block.header)] + [len(r) for r in block.rows])
    header = block.header + [Cell("")] * (width - len(block.header))
    numeric = [
        any(len(r) > j and r[j].numeric for r in block.rows)
        or (j < len(header) and header[j].numeric)
        for j in range(width)
    ]
    lines = ["| " + " | ".join(_md_cell(c) for c in header) + " |"]
    lines.append("| " + " | ".join("---:" if n else ":---" for n in numeric) + " |")
    for row in block.rows:
        cells = row + [Cell("")] * (width - len(row))
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return "\n".join(lines)


_TEX_ESCAPES = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "–": "--",
    "±": "$\\pm$",
    "×": "$\\times$",
    "†": "$^\\dagger$",
    "§": "$^\\S$",
    "<": "\\textless{}",
    "|": "\\textbar{}",  # LaTeX's default font encoding (OT1) prints a bare | as an em dash
    ">": "\\textgreater{}",
    # a line break of a name is a space: two would end the paragraph inside a tabular cell
    "\n": " ",
    "\r": " ",
}


#: Greek letters, which LaTeX's default UTF-8 input does not set in text ("Unicode character α
#: not set up for use with LaTeX"), as the math letters every engine has: a hyperparameter
#: named ``λ`` or ``α`` is a common name. The capitals that look as Latin ones are those.
_GREEK = dict(zip(
    "αβγδεζηθικλμνξοπρςστυφχψωϑϕϵϱϖΓΔΘΛΞΠΣΥΦΨΩµ",
    [*(f"\\ensuremath{{\\{n}}}" for n in (
        "alpha beta gamma delta varepsilon zeta eta theta iota kappa lambda mu nu xi").split()),
     "o", *(f"\\ensuremath{{\\{n}}}" for n in (
        "pi rho varsigma sigma tau upsilon varphi chi psi omega vartheta phi epsilon varrho "
        "varpi Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega mu").split())],
    strict=True)) | dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΧ", "ABEZHIKMNOPTX", strict=True))


def tex_escape(text: str) -> str:
    """Escape LaTeX special characters, map the few non-ASCII marks the tables use, and set
    Greek letters as math letters (``λ`` as ``\\ensuremath{\\lambda}``).

    Latin letters with accents (``é``, ``ü``, ``ø``, ``ß``) and typographic punctuation are
    kept: LaTeX's UTF-8 input sets them with its default fonts. Other scripts are kept too,
    for XeLaTeX or LuaLaTeX, which set any character their font has; pdflatex stops on them
    unless the document declares them (``\\DeclareUnicodeCharacter``)."""
    return "".join(_TEX_ESCAPES.get(ch) or _GREEK.get(ch, ch) for ch in unmarked(text))


def _tex_cell(cell: Cell, left: bool = False) -> str:
    """Render one cell as LaTeX with its markup (its detail stacked under its text, aligned
    left in a column of text, ``left``)."""
    text = tex_escape(cell.text)
    if not text:
        return ""
    if cell.underline:
        text = f"\\underline{{{text}}}"
    if cell.bold:
        text = f"\\textbf{{{text}}}"
    if cell.detail:
        text = f"\\dptunestack{'[l]' if left else ''}{{{text}}}{{{tex_escape(cell.detail)}}}"
    return text


def _tex_block(block: Block) -> list[str]:
    """Render one block as a booktabs ``tabular``."""
    width = max([len(block.header)] + [len(r) for r in block.rows])
    header = block.header + [Cell("")] * (width - len(block.header))
    numeric = [any(len(r) > j and r[j].numeric for r in block.rows) for j in range(width)]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [f"\\dptunefit{{\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    lines.append(" & ".join(_tex_cell(c) for c in header) + " \\\\")
    lines.append("\\midrule")
    for i, row in enumerate(block.rows):
        cells = row + [Cell("")] * (width - len(row))
        lines.append(" & ".join(_tex_cell(c, not n) for c, n in zip(cells, numeric, strict=True))
                     + " \\\\")
        if i in block.rules_after and i != len(block.rows) - 1:
            lines.append("\\midrule")
    lines += ["\\bottomrule", "\\end{tabular}}"]
    return lines


def marked_cells(
    values: Sequence[float],
    texts: Sequence[str] | None = None,
    underline_max: bool = False,
) -> list[Cell]:
    """Numeric cells for one comparison group of DPs per 25 pairs: the lowest bold, optionally
    the highest underlined.

    Marks are set only when at least two values are present (one value is not "the best" of
    anything); ties (the tie rule's on the DP-per-25 scale, :func:`dptune.vocab.tie_value`
    with ``scale=25``) are all marked; the highest is not underlined when it equals the lowest.
    """
    arr = tie_value(np.array([np.nan if is_missing(v) else float(v) for v in values],
                             dtype=float), scale=25)
    texts = list(texts) if texts is not None else [fmt(v) for v in arr]
    present = ~np.isnan(arr)
    lo = hi = np.nan
    if present.sum() >= 2:
        lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    cells = []
    for v, t in zip(arr, texts, strict=True):
        bold = bool(not np.isnan(v) and v == lo)
        under = bool(underline_max and not np.isnan(v) and v == hi and hi != lo)
        cells.append(Cell(t, bold=bold, underline=under, numeric=True))
    return cells


def simple_block(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]
) -> Block:
    """A block of unmarked cells from plain strings; ``numeric`` right-aligns a column."""
    return Block(
        [Cell(h) for h in header],
        [[Cell(t, numeric=n) for t, n in zip(r, numeric, strict=True)] for r in rows],
    )
