"""Plain Markdown tables of the studies' reports, rendered through the report package's table
model (:class:`dptune.report.Table` of one :class:`~dptune.report.Block` of
:class:`~dptune.report.Cell` s), so escaping and markup follow the DP report's rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from dptune.report import Block, Cell, Table

__all__ = ["markdown_table"]


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
