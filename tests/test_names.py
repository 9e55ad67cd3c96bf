"""One name per thing: no public top-level name (function, class or module constant) is defined
in two modules of dptune. Two definitions under one name are either the same thing written
twice (keep one, import it) or two things that need names saying what each holds. Re-exports
(``from dptune.x import name``) are not definitions and do not count."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import dptune

ROOT = Path(dptune.__file__).parent

#: Names allowed in two modules, each with the reason. Keep it empty unless truly necessary.
ALLOWED: dict[str, str] = {}


def _top_level(body: list[ast.stmt]) -> list[tuple[str, int]]:
    """``(name, line)`` of every name a module body defines at its top level: functions,
    classes and assigned names, those under a top-level ``if`` / ``try`` included."""
    out: list[tuple[str, int]] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.name, node.lineno))
        elif isinstance(node, ast.Assign):
            out += [(t.id, node.lineno) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append((node.target.id, node.lineno))
        elif isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body) + _top_level(node.orelse) + _top_level(node.finalbody)
            for handler in node.handlers:
                out += _top_level(handler.body)
    return out


def public_definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """``{name: ["module:line", ...]}`` of every public (not ``_``-prefixed) top-level name
    defined in a module under ``root``."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        seen = set()
        for name, line in _top_level(tree.body):
            if not name.startswith("_") and name not in seen:  # redefined in one module: once
                seen.add(name)
                found[name].append(f"{module}:{line}")
    return dict(found)


def test_no_public_name_is_defined_in_two_modules():
    defs = public_definitions()
    assert len(defs) > 500  # the walk finds the package
    assert "ResultStore" in defs and "METRICS" in defs
    twice = {name: where for name, where in defs.items() if len(where) > 1 and name not in ALLOWED}
    assert not twice, twice


def test_every_allowed_name_is_still_needed():
    defs = public_definitions()
    stale = [name for name in ALLOWED if len(defs.get(name, ())) < 2]
    assert not stale, f"no longer defined twice, remove from ALLOWED: {stale}"


def test_a_name_defined_twice_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("def f():\n    pass\n\nX = 1\n_private = 2\n")
    (pkg / "sub" / "b.py").write_text("import os\n\nif os.name:\n    class f:\n        pass\n"
                                      "from pkg.a import X\n_private = 3\n")
    defs = public_definitions(pkg)
    assert defs["f"] == ["pkg.a:1", "pkg.sub.b:4"]
    assert defs["X"] == ["pkg.a:4"]  # an import is not a definition
    assert "_private" not in defs
