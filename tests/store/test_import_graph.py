"""The store's modules import one another without a cycle: each ``dptune/store`` module's
imports of other store modules (at module level and inside functions; those under ``if
TYPE_CHECKING:`` name a type only and are left out) form a graph without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORE = Path(__file__).resolve().parents[2] / "dptune" / "store"
MODULES = sorted(p.stem for p in STORE.glob("*.py"))


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> set[str]:
    """Store modules imported by ``path`` (``dptune.store._x`` -> ``_x``), typing-only ones left out."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom) and child.module:
                names = [child.module] + [f"{child.module}.{a.name}" for a in child.names]
            elif isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            else:
                visit(child)
                continue
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["dptune", "store"] and len(parts) > 2 and parts[2] in MODULES:
                    out.add(parts[2])
    visit(ast.parse(path.read_text()))
    out.discard(path.stem)
    return out


def test_no_import_cycle_in_the_store():
    graph = {m: _imports(STORE / f"{m}.py") for m in MODULES}
    assert graph["_noise_parts"] and "_store" not in graph["_noise_parts"], graph["_noise_parts"]
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                pytest.fail("import cycle in dptune/store: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for m in MODULES:
        if m not in state:
            walk(m, [m])

