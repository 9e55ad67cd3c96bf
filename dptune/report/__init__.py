"""Report: one table model rendered to Markdown, CSV and LaTeX, figures and report.md.

Modules: ``_table`` (Cell/Block/Table and their renderers), ``_format`` (number formats and
orders), ``_inputs`` (input checks), ``_tables`` (the paper's tables), ``_figures`` (Figure 1,
the figure saver), ``_settings`` and ``_selection`` (report sections), ``_report`` (the document).
"""

# _report first: it reaches dptune.analysis, whose package (until it stops importing this one)
# imports dptune.report._report back; importing it first keeps that cycle harmless.
from dptune.report._report import Report

# isort: split
from dptune.report._figures import (
    FIG_DPI,
    MAX_PANEL_COLUMNS,
    PANEL_SIZE,
    figure1,
    figure_pixel_size,
    save_figure,
)
from dptune.report._selection import selection_sentences
from dptune.report._settings import settings_rows
from dptune.report._table import Block, Cell, Table, simple_block
from dptune.report._tables import one_at_a_time_table, table1, table3, table4, table5
from dptune.vocab import (
    ALGORITHM_NAMES,
    METRIC_NAMES,
    TABLE_METRIC_ORDER,
    display_algorithm,
    display_metric,
)

__all__ = [
    "Report",
    "ALGORITHM_NAMES",
    "METRIC_NAMES",
    "TABLE_METRIC_ORDER",
    "PANEL_SIZE",
    "FIG_DPI",
    "MAX_PANEL_COLUMNS",
    "Cell",
    "Block",
    "Table",
    "simple_block",
    "display_algorithm",
    "display_metric",
    "table1",
    "table3",
    "table4",
    "table5",
    "one_at_a_time_table",
    "figure1",
    "figure_pixel_size",
    "save_figure",
    "settings_rows",
    "selection_sentences",
]
