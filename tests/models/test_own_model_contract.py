"""What a researcher's own model can get wrong, and what dptune does about it.

A model written outside dptune may change the arrays it is handed, return scores of the wrong
kind, declare its hyperparameters under names dptune uses itself, or be registered where the
sweep's worker processes cannot import it. Each case is either kept from harming the sweep
(the fold's training matrix, the user codes, the model's own state) or refused with one line
naming the model and what was wrong, never read as if it were right.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.errors import DptuneError
from dptune.metrics import evaluate, novelty_vectors
from dptune.models import PythonFamily, get_family, is_known_type, register
from dptune.models._adapters import _REGISTRY, REGISTRY_ENV, ScoreShapeError


def matrix(n_users: int = 12, n_items: int = 8, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    X = (rng.random((n_users, n_items)) < 0.4).astype(np.float32)
    X[:, 0] = 1.0  # every user has a training item
    return sp.csr_matrix(X)


def fitted(cls, cfg: dict | None = None, X: sp.csr_matrix | None = None):
    """The one model that ``PythonFamily(cls)`` fits for ``cfg``, as the sweep sees it."""
    fam = PythonFamily(cls, type_name="own")
    X = matrix() if X is None else X
    (_, model), = list(fam.fit_unit(X, [cfg or {}], 0))
    return model


class Pop:
    """Most popular first; the base of the models below."""

    stochastic = False

    def fit(self, X):
        self.pop_ = np.asarray(X.sum(axis=0), dtype=np.float32).ravel()
        return self

    def score(self, users):
        return np.tile(self.pop_, (len(users), 1))


# ---------------------------------------------------------------------------------------------
# the arrays a model is handed are its own


class Reweighting(Pop):
    """Reweights the training matrix in place, as a tf-idf or BM25 step often does."""

    def __init__(self, a: float = 1.0) -> None:
        self.a = a

    def fit(self, X):
        self.seen_ = float(X.data.sum())
        X.data *= 0.0
        return super().fit(X)


def test_a_model_that_changes_the_training_matrix_in_place_leaves_the_folds_alone():
    """The fold's matrix masks every configuration's training items and trains the next
    configuration: a model zeroing it in place made the next one train on nothing."""
    X = matrix()
    before = X.copy()
    fam = PythonFamily(Reweighting, type_name="own")
    seen = [m.seen_ for _, m in fam.fit_unit(X, [{"a": 1.0}, {"a": 2.0}], 0)]
    assert (X != before).nnz == 0
    assert seen == [float(before.nnz)] * 2  # the second configuration trained on the same data


class SortsUsers(Pop):
    def score(self, users):
        users.sort()  # in place
        return super().score(users)


def test_a_model_that_sorts_the_user_codes_in_place_does_not_reorder_the_sweeps_users():
    """Column j of the metrics belongs to users[j]: a model sorting the block it is handed in
    place would otherwise give one user's values to another."""
    model = fitted(SortsUsers)
    users = np.array([5, 1, 3], dtype=np.int64)
    model.score(users)
    assert users.tolist() == [5, 1, 3]


class KeepsScores(Pop):
    """Computes every user's scores at fit time and hands back a slice (a view) of them."""

    def fit(self, X):
        super().fit(X)
        self.S_ = np.tile(self.pop_, (X.shape[0], 1)).copy()
        return self

    def score(self, users):
        return self.S_[users[0]: users[-1] + 1]


def test_scores_that_are_a_view_of_the_models_state_are_not_masked_in_place():
    """The evaluation sets training items to -inf in the array it gets: that array must not be
    the model's own state."""
    X = matrix()
    model = fitted(KeepsScores, X=X)
    efd, epc = novelty_vectors(X)
    evaluate(model, np.arange(X.shape[0]), X, X, (1, 5), efd, epc, block=4)
    assert np.isfinite(model.S_).all()


# ---------------------------------------------------------------------------------------------
# scores of the wrong kind


class IntegerScores(Pop):
    """Integer scores above 2**24: item 1 is one more than item 0."""

    def fit(self, X):
        self.n_items_ = X.shape[1]
        return self

    def score(self, users):
        s = np.zeros((len(users), self.n_items_), dtype=np.int64)
        s[:, 0] = 2**24
        s[:, 1] = 2**24 + 1
        return s


def test_integer_scores_keep_their_order_where_float32_would_tie_them():
    X = sp.csr_matrix((6, 4), dtype=np.float32)  # no training item: nothing is masked
    relevant = sp.csr_matrix(np.tile([0, 1, 0, 0], (6, 1)).astype(np.float32))
    model = fitted(IntegerScores, X=X)
    efd, epc = novelty_vectors(X)
    out = evaluate(model, np.arange(6), X, relevant, (1,), efd, epc)
    assert np.all(out[1, 0] == 1.0)  # precision@1: item 1 ranks first for every user


@pytest.mark.parametrize(("dtype", "named"), [
    (np.complex64, "complex numbers"), (str, "text"), (object, "Python objects"),
])
def test_scores_that_are_not_real_numbers_are_refused(dtype, named):
    """Converting them read complex scores by their real part and numeric strings as numbers,
    with at most a warning."""

    class Odd(Pop):
        def score(self, users):
            return super().score(users).astype(dtype)

    model = fitted(Odd)
    with pytest.raises(ScoreShapeError, match=f"returned {named}") as err:
        model.score(np.arange(3))
    assert "own" in str(err.value) and "expected real numbers" in str(err.value)


def test_a_list_of_lists_and_float_arrays_still_score():
    class Listed(Pop):
        def score(self, users):
            return super().score(users).tolist()

    X = matrix()
    out = fitted(Listed, X=X).score(np.arange(3))
    assert isinstance(out, np.ndarray) and out.shape == (3, X.shape[1])
    np.testing.assert_array_equal(out, fitted(Pop, X=X).score(np.arange(3)))


# ---------------------------------------------------------------------------------------------
# hyperparameters


class IntK(Pop):
    def __init__(self, k: int = 10) -> None:
        self.k = k

    def fit(self, X):
        super().fit(X)
        self.top_ = list(range(self.k))  # a float k is a TypeError here
        return self


def test_an_integer_hyperparameter_written_as_a_whole_float_reaches_the_model_as_an_int():
    """``10.0`` is accepted for an integer parameter (a grid's powers are floats): the model
    must get 10, not a float it refuses at fit time (implicit's ALS did)."""
    fam = PythonFamily(IntK, type_name="own")
    (cfg,) = fam.validate([{"k": 4.0}])
    assert cfg == {"k": 4} and type(cfg["k"]) is int
    (_, model), = list(fam.fit_unit(matrix(), [{"k": 4.0}], 0))
    assert model.k == 4 and type(model.k) is int
    (cfg,) = get_family("implicit:als").validate([{"factors": 8.0}])
    assert type(cfg["factors"]) is int


def test_a_float_hyperparameter_keeps_its_value():
    class Lamb(Pop):
        def __init__(self, lamb: float = 1.0) -> None:
            self.lamb = lamb

    (cfg,) = PythonFamily(Lamb, type_name="own").validate([{"lamb": 2.5}])
    assert cfg == {"lamb": 2.5}


@pytest.mark.parametrize("name", ["config_id", "algorithm"])
def test_a_hyperparameter_named_like_a_store_column_is_refused(name):
    """``configs.csv`` holds ``algorithm`` and ``config_id`` beside the hyperparameters: a
    hyperparameter of that name was a traceback when the results were created."""

    class Clash(Pop):
        def __init__(self, **kw) -> None:
            self.kw = kw

    class Named(Pop):
        def __init__(self, config_id: int = 1, algorithm: int = 1) -> None:
            self.config_id, self.algorithm = config_id, algorithm

    for cls in (Clash, Named):
        with pytest.raises(DptuneError, match=f"grid.toml: {name}: cannot be a hyperparameter"):
            PythonFamily(cls, type_name="own").validate([{name: 1}], "grid.toml")


def test_a_grid_setting_the_seed_is_told_why():
    class Seeded(Pop):
        def __init__(self, a: float = 1.0, seed: int = 0) -> None:
            self.a, self.seed = a, seed

    with pytest.raises(DptuneError, match="seed: unknown hyperparameter .*every unit gets its own"):
        PythonFamily(Seeded, type_name="own").validate([{"a": 1.0, "seed": 3}], "grid.toml")


def test_a_hyperparameter_named_like_an_analysis_column_runs(tmp_path):
    """Names the store does not write beside the hyperparameters (``fold``, ``metric``,
    ``value``) are ordinary hyperparameters."""

    class Named(Pop):
        def __init__(self, fold: int = 1, metric: str = "a", value: float = 1.0) -> None:
            self.fold, self.metric, self.value = fold, metric, value

    cfgs = PythonFamily(Named, type_name="own").validate(
        [{"fold": 2, "metric": "b", "value": 0.5}])
    assert cfgs == [{"fold": 2, "metric": "b", "value": 0.5}]


# ---------------------------------------------------------------------------------------------
# registration


def test_registering_an_instance_says_to_register_the_class():
    with pytest.raises(DptuneError, match="register the class Pop, not an instance"):
        register("my-pop-instance", Pop())
    assert "my-pop-instance" not in _REGISTRY


def test_a_model_registered_from_main_is_named_in_a_worker_process(monkeypatch):
    """A worker process cannot import a class of ``__main__`` (a script or a notebook): with
    ``jobs > 1`` it said ``unknown algorithm type``, as if the name had never been
    registered."""

    class MainPop(Pop):
        pass

    MainPop.__module__ = "__main__"
    monkeypatch.setenv(REGISTRY_ENV, "{}")
    register("main-pop", MainPop)
    try:
        assert get_family("main-pop").factory is MainPop  # the registering process
        known = json.loads(os.environ[REGISTRY_ENV])
        assert known["main-pop"][0] is None
        del _REGISTRY["main-pop"]  # what a worker process knows: the environment only
        assert is_known_type("main-pop")
        with pytest.raises(DptuneError, match="registered with dptune.models.register from "
                           "__main__.*MainPop.*jobs = 1"):
            get_family("main-pop")
    finally:
        _REGISTRY.pop("main-pop", None)
