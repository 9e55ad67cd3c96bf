"""The analysis computes, the report writes: no module of dptune.analysis imports dptune.report
(nor the sweep, which runs before it)."""

from __future__ import annotations

import ast
from pathlib import Path

import dptune.analysis

FORBIDDEN = ("dptune.report", "dptune.sweep", "dptune.cli", "dptune._api")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
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
