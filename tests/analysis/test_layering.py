"""The analysis computes, the report writes: no module of dptune.analysis imports dptune.report
(nor the sweep, which runs before it). A result shown in a notebook is rendered by the report's
``Report`` (which has the display hooks), never by the analysis.

The report renders an ``AnalysisResult`` and nothing else: no module of dptune.report imports
the store, nor any of the analysis but the result's types (``dptune.analysis.result``) and the
options (``dptune.analysis.options``), nor what trains models or runs the sweep; what it needs
to know the result carries.

Inside the analysis the concepts are layered one way: the DP estimator (``dp/``) reads only the
options, the result's data files and the store interface (``source``) outside itself,
importance (``importance/``) only the store interface, the verdict (``verdict/``) the DP
estimator, importance, the options and the store interface; the top-level modules (pipeline,
noise, selection, ...) glue them. Lazy imports count."""

from __future__ import annotations

import ast
from pathlib import Path

import dptune

FORBIDDEN = ("dptune.report", "dptune.sweeper", "dptune.cli", "dptune._api")

ROOT = Path(dptune.__file__).parent / "analysis"
REPORT = Path(dptune.__file__).parent / "report"

#: What dptune.report may import of dptune.analysis: the result's types and the options.
REPORT_ANALYSIS = ("dptune.analysis.result", "dptune.analysis.options")
#: What dptune.report never imports: the store (a report needs no store), what trains models
#: and runs the sweep, and the front ends above the report.
REPORT_FORBIDDEN = ("dptune.store", "dptune.models", "dptune.engine", "dptune.sweeper",
                    "dptune.studies", "dptune.cli", "dptune._api")

#: Per concept folder: the modules of dptune.analysis it may import outside itself.
ALLOWED = {
    "dp": ("dptune.analysis.options", "dptune.analysis.result", "dptune.analysis.source"),
    "importance": ("dptune.analysis.source",),
    "verdict": ("dptune.analysis.options", "dptune.analysis.dp", "dptune.analysis.importance",
                "dptune.analysis.source"),
}


def _imports(path: Path) -> list[str]:
    names = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module in ("dptune", "dptune.analysis"):
            # ``from dptune.analysis import noise``: the module imported is the name
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def _modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_layout_is_by_concept():
    folders = {p.parent.name for p in _modules() if p.parent != ROOT}
    assert folders == set(ALLOWED)
    assert len(_modules()) > 20


def test_analysis_never_imports_the_report_or_the_sweep():
    bad = {str(p.relative_to(ROOT)): n for p in _modules() for n in _imports(p)
           if n.startswith(FORBIDDEN)}
    assert not bad, bad


def test_the_concepts_are_layered_one_way():
    bad = []
    for folder, allowed in ALLOWED.items():
        own = f"dptune.analysis.{folder}"
        for p in sorted((ROOT / folder).rglob("*.py")):
            for n in _imports(p):
                if _within(n, "dptune.analysis") and not (
                        _within(n, own) or any(_within(n, a) for a in allowed)):
                    bad.append(f"{folder}/{p.name} imports {n}")
    assert not bad, bad


def test_the_report_renders_the_result_and_nothing_else():
    modules = sorted(REPORT.rglob("*.py"))
    assert len(modules) > 10
    bad = []
    for p in modules:
        for n in _imports(p):
            if _within(n, "dptune.analysis") and not any(_within(n, a) for a in REPORT_ANALYSIS):
                bad.append(f"report/{p.name} imports {n}")
            elif any(_within(n, f) for f in REPORT_FORBIDDEN):
                bad.append(f"report/{p.name} imports {n}")
    assert not bad, bad
