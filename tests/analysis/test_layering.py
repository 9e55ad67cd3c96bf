"""The analysis computes, the report writes: no module of dptune.analysis imports dptune.report
(nor the sweep, which runs before it). The one exception: the notebook display hooks
(``_repr_html_``, ``_repr_markdown_``) of the result, which hand it to the report to render."""

from __future__ import annotations

import ast
from pathlib import Path

import dptune.analysis

FORBIDDEN = ("dptune.report", "dptune.sweeper", "dptune.cli", "dptune._api")


#: Methods that may import the report lazily: a result shown in a notebook is rendered by it.
DISPLAY_HOOKS = ("_repr_html_", "_repr_markdown_")


def _imports(path: Path) -> list[str]:
    names = []
    tree = ast.parse(path.read_text())
    hooks = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             and f.name in DISPLAY_HOOKS for n in ast.walk(f)}
    for node in ast.walk(tree):
        if id(node) in hooks:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_analysis_never_imports_the_report_or_the_sweep():
    root = Path(dptune.analysis.__file__).parent
    bad = {p.name: n for p in root.glob("*.py") for n in _imports(p)
           if n.startswith(FORBIDDEN)}
    assert not bad, bad
