"""No import cycle anywhere in dptune: the graph of which module imports which (lazy imports
inside functions included, since they are dependencies all the same) has no cycle, so that data
flows one way (data -> split -> sweep -> store -> analysis -> report) and every module can be
read without the ones that use it.

Names imported under ``if TYPE_CHECKING:`` are never imported when the program runs, but a type
named in a signature is a dependency of the reader all the same: they count too (a second
graph), so that no two modules name each other even for a type (a :class:`typing.Protocol` in
the lower module says what it needs instead). The one exception is the root package's block,
which only declares its lazy exports (``dptune._EXPORTS``) for type checkers: the root sits
above every module (``import dptune`` loads only ``dptune._version``)."""

from __future__ import annotations

import ast
from pathlib import Path

import dptune

ROOT = Path(dptune.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _typing_only(tree: ast.Module) -> set[int]:
    """``id`` of every node under an ``if TYPE_CHECKING:`` block."""
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
            for stmt in node.body for n in ast.walk(stmt)}


def _imports(name: str, path: Path, modules: dict[str, Path], typing: bool = False) -> set[str]:
    """The dptune modules ``name`` imports: ``from pkg import mod`` counts as importing ``mod``
    (the package's ``__init__`` only when a name of the package itself is imported); with
    ``typing``, the imports under ``if TYPE_CHECKING:`` too."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set() if typing else _typing_only(tree)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(base)
    out = set()
    for imported in found:
        parts = imported.split(".")
        for k in range(len(parts), 0, -1):  # the longest dptune module it names
            if ".".join(parts[:k]) in modules:
                out.add(".".join(parts[:k]))
                break
    out.discard(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_cycle():
    modules = _modules()
    graph = {n: _imports(n, p, modules) for n, p in modules.items()}
    assert len(graph) > 100
    assert graph["dptune.report._report"] >= {"dptune.analysis.result"}  # edges are found
    assert _cycles(graph) == []


def test_no_cycle_even_counting_type_checking_imports():
    modules = _modules()
    graph = {n: _imports(n, p, modules, typing=n != "dptune") for n, p in modules.items()}
    runtime = _imports("dptune.sweeper._plan", modules["dptune.sweeper._plan"], modules)
    assert "dptune.store._store" in graph["dptune.sweeper._plan"] - runtime  # typing edges count
    assert _cycles(graph) == []


def test_the_root_packages_type_checking_block_only_declares_its_lazy_exports():
    """The exception above holds only while the root's ``if TYPE_CHECKING:`` block imports
    exactly the names of ``dptune._EXPORTS``, each from the module it maps the name to."""
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    inside = _typing_only(tree)
    declared = {}
    for node in ast.walk(tree):
        if id(node) in inside and isinstance(node, ast.Import):
            declared.update({a.asname or a.name: None for a in node.names})
        elif id(node) in inside and isinstance(node, ast.ImportFrom):
            declared.update({a.asname or a.name: node.module for a in node.names})
    assert declared == dptune._EXPORTS


def test_a_cycle_is_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
