"""The documentation names only code that exists: every dotted path ``dptune.x.y`` written in
README.md or docs/*.md resolves to a module of dptune or to an attribute of one (a function, a
class, a method, a constant), and every file path ``dptune/x/y.py`` (or folder ``dptune/x/``)
exists. A module renamed or removed fails here instead of leaving the docs pointing at nothing."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: ``dptune.x.y`` not inside another name (``mydptune.x``, ``dptune/x``, ``a.dptune.x``).
DOTTED = re.compile(r"(?<![\w./-])dptune(?:\.[A-Za-z_]\w*)+")
#: ``dptune/x/y.py`` or ``dptune/x/`` (no wildcard, no placeholder).
SLASHED = re.compile(r"(?<![\w./-])dptune/[\w./-]*")


def _found(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """``(path, "file:line")`` of every match, in file order."""
    out = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            out += [(m.group(0), f"{doc.relative_to(ROOT)}:{n}") for m in pattern.finditer(line)]
    return out


def resolve(dotted: str) -> object:
    """The module or attribute that ``dotted`` names: the longest prefix that is a module,
    then attributes of it. Raises ``LookupError`` when it names nothing."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent is not a package
            spec = None
        if spec is None:
            continue
        obj: object = importlib.import_module(name)
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                raise LookupError(f"{dotted}: {name} has no {'.'.join(parts[k:])}")
            obj = getattr(obj, attr)
        return obj
    raise LookupError(f"{dotted}: no such module")


def test_the_docs_are_scanned():
    dotted = {p for p, _ in _found(DOTTED)}
    assert {"dptune.analyze", "dptune.bench", "dptune.sweeper.design.read_design"} <= dotted
    assert len(DOCS) > 5


def test_every_dotted_path_in_the_docs_resolves():
    bad = []
    for path, where in _found(DOTTED):
        try:
            resolve(path)
        except LookupError as err:
            bad.append(f"{where}: {err}")
    assert not bad, "\n".join(bad)


def test_every_file_path_in_the_docs_exists():
    bad = [f"{where}: {path}" for path, where in _found(SLASHED)
           if not (ROOT / path.rstrip(".")).exists()]
    assert not bad, "\n".join(bad)


def test_resolve_tells_modules_attributes_and_nothing_apart():
    import dptune.analysis.pipeline as pipeline

    assert resolve("dptune.analysis.pipeline") is pipeline
    assert resolve("dptune.analysis.pipeline.analyze") is pipeline.analyze
    assert resolve("dptune.Report.from_result") is not None  # a lazy export, then a method
    for missing in ("dptune.analysis.dp.engine", "dptune.analysis.pipeline.no_such_name",
                    "dptune.vocab.METRICS.nothing"):
        with pytest.raises(LookupError):
            resolve(missing)
