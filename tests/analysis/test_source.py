"""The one store interface of the analysis (dptune.analysis.source.ResultSource): both kinds
of store satisfy it method by method, and no function of the analysis takes an untyped store."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd
import pytest

import dptune
from dptune.analysis.source import ResultSource
from dptune.store._per_user_store import PerUserStore
from dptune.store._store import ResultStore

METHODS = [name for name, _ in inspect.getmembers(ResultSource, inspect.isfunction)
           if not name.startswith("_")]


def test_the_interface_names_what_the_analysis_reads():
    assert set(METHODS) == {"algorithms", "configs", "hyperparameters", "folds",
                            "metric_cutoffs", "read_matrix", "summary", "best_configs",
                            "manifest"}


@pytest.mark.parametrize("store_class", [ResultStore, PerUserStore])
def test_both_stores_have_every_read_with_its_parameters(store_class):
    for name in METHODS:
        want = list(inspect.signature(getattr(ResultSource, name)).parameters)
        have = list(inspect.signature(getattr(store_class, name)).parameters)
        assert have == want, (store_class.__name__, name, have, want)


def test_a_sweep_store_and_an_outside_table_are_result_sources(tiny_swept):
    assert isinstance(ResultStore(tiny_swept / "results"), ResultSource)
    table = pd.DataFrame({"algorithm": "a", "config_id": [0, 0, 1, 1], "fold": "0",
                          "user": [1, 2, 1, 2], "metric": "ndcg", "cutoff": 10,
                          "value": [0.1, 0.2, 0.3, 0.4]})
    assert isinstance(PerUserStore.from_frame(table), ResultSource)
    assert not isinstance(object(), ResultSource)


def test_no_analysis_function_takes_an_untyped_store():
    """Every parameter named ``store`` in dptune.analysis and dptune.studies is annotated, and
    never with ``Any``."""
    root = Path(dptune.__file__).parent
    bad = []
    for folder in ("analysis", "studies"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.arg == "store" and (arg.annotation is None or
                                               ast.unparse(arg.annotation) == "Any"):
                        bad.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert not bad, bad
