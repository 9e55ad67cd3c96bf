"""The first fold of the tiny experiment (ml-latest-small, 2 folds), shared by the engine tests."""

from __future__ import annotations

import pytest
from conftest import write_experiment


@pytest.fixture(scope="session")
def tiny_fold(tmp_path_factory):
    """Training / relevance matrices, users and novelty vectors of the tiny experiment's fold 1."""
    from dptune.config import load_experiment
    from dptune.sweep._prepare import prepare

    exp = load_experiment(write_experiment(tmp_path_factory.mktemp("engine") / "exp"))
    prep = prepare(exp)
    return prep.fold(prep.fold_names[0])
