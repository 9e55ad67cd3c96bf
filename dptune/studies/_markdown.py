"""Plain Markdown tables of the studies' reports, rendered through the report package's table
model (:class:`dptune.report.Table` of one :class:`~dptune.report.Block` of
:class:`~dptune.report.Cell` s), so escaping and markup follow the DP report's rules; and the
way a file path is shown in them (:func:`shown_path`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dptune.data._fetch import portable_path
from dptune.report import Block, Cell, Table

__all__ = ["markdown_table", "shown_path"]


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a report shows it: a relative path as given (``experiments/x.toml``); an
    absolute one relative to the working directory when inside it, else under the home
    directory as ``~/...``, else its file name only, so that a committed report never carries
    the absolute layout of one user's machine."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.relative_to(Path.cwd()).as_posix()
    except ValueError:
        pass
    shown = portable_path(p)
    return shown if shown.startswith("~") else p.name


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
                   numeric: Sequence[bool] | None = None, aligned: bool = True) -> str:
    """A GFM pipe table (no trailing newline) of ``rows`` under ``header``.

    A row value is a :class:`Cell` (its markup kept) or anything else (``str(value)``, plain).
    ``numeric[j]`` right-aligns column ``j`` (``---:``; others ``:---``); ``aligned=False``
    writes the separator row as ``| --- | ... |``, the layout of the split-seed study's
    committed report tables.
    """
    flags = list(numeric) if numeric is not None else [False] * len(header)
    block = Block([Cell(str(h), numeric=n) for h, n in zip(header, flags, strict=True)],
                  [[v if isinstance(v, Cell) else Cell(str(v)) for v in r] for r in rows])
    lines = Table("", "", [block], pd.DataFrame()).to_markdown().rstrip("\n").split("\n")[2:]
    if not aligned:
        lines[1] = "| " + " | ".join("---" for _ in header) + " |"
    return "\n".join(lines)
