"""Adapter families: cornac (batched scoring, signatures, determinism), implicit, Python models."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.errors import DptuneError
from dptune.metrics import evaluate, novelty_vectors
from dptune.models import (
    CornacModel,
    get_family,
    is_known_type,
    is_stochastic,
    register,
)
from dptune.models._adapters import _REGISTRY, REGISTRY_ENV


def random_matrix(n_users=40, n_items=30, density=0.2, seed=0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    X = (rng.random((n_users, n_items)) < density).astype(np.float32)
    X[0, :] = 0  # a user without interactions
    X[:, -1] = 0  # an item nobody saw
    X[1, 0] = 1
    return sp.csr_matrix(X)


def per_user_reference(model: CornacModel, users: np.ndarray) -> np.ndarray:
    """The pre-batching adapter: cornac's one-user score() in a Python loop."""
    out = np.full((len(users), model.n_items_), -np.inf, dtype=np.float32)
    out[:, model.known_items_] = 0.0
    for row, u in enumerate(users):
        inner = model.user_index_[u]
        if inner >= 0:
            s = np.asarray(model.model_.score(int(inner)), dtype=np.float32).ravel()
            out[row, model.known_items_] = s[model._inner_items]
    return out


@pytest.mark.parametrize(
    "name, params",
    [("MostPop", {}), ("EASE", {"lamb": 10.0}), ("BPR", {"k": 4, "max_iter": 5}),
     ("ItemKNN", {"k": 5})],
)
def test_cornac_batched_scores_equal_the_per_user_loop(name, params):
    X = random_matrix()
    model = CornacModel(name, params, seed=3).fit(X)
    users = np.arange(X.shape[0])
    got = model.score(users)
    ref = per_user_reference(model, users)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert np.isneginf(got[:, -1]).all()  # the item cornac never saw
    if name in ("MostPop", "EASE", "BPR"):
        assert model.batched_
    else:  # no matrix form known for cornac's ItemKNN: per-user fallback, same scores
        assert not model.batched_


def test_cornac_batch_path_is_checked_and_rejected_when_wrong(monkeypatch):
    from dptune.models import _cornac

    monkeypatch.setitem(_cornac._SPECIFIC, "MostPop", lambda m: lambda inner: np.zeros(
        (len(inner), len(m.item_pop))))
    model = CornacModel("MostPop", {}).fit(random_matrix())
    assert not model.batched_  # the wrong candidate disagreed with cornac's score(): not used
    np.testing.assert_array_equal(model.score(np.arange(5)),
                                  per_user_reference(model, np.arange(5)))


def test_cornac_mostpop_runs_with_an_empty_grid_and_rejects_any_key():
    fam = get_family("cornac:MostPop")
    assert fam.hyperparameters == () and not fam.stochastic
    assert fam.validate([{}]) == [{}]
    assert fam.units([{}]) == [[0]]
    [(idx, model)] = list(fam.fit_unit(random_matrix(), [{}], seed=0))
    assert idx == 0 and model.score(np.array([2, 3])).shape == (2, 30)
    with pytest.raises(DptuneError, match="k: unknown hyperparameter for 'cornac:MostPop'.*none"):
        fam.validate([{"k": 3}], source="g.toml")


def test_cornac_hyperparameters_come_from_the_signature():
    fam = get_family("cornac:EASE")
    assert "lamb" in fam.hyperparameters
    assert not {"name", "seed", "verbose", "trainable"} & set(fam.hyperparameters)
    with pytest.raises(DptuneError, match="g.toml: lamda: unknown hyperparameter"):
        fam.validate([{"lamda": 3.0}], source="g.toml")
    with pytest.raises(DptuneError, match="cornac has no model class 'NoSuch'"):
        get_family("cornac:NoSuch")


@pytest.mark.parametrize(
    "algorithm_type, expected",
    [("userknn", False), ("itemknn", False), ("bpr-mf", True), ("cornac:EASE", False),
     ("cornac:MostPop", False), ("cornac:ItemKNN", False), ("cornac:BPR", True),
     ("cornac:WMF", True), ("implicit:als", True), ("implicit:cosine", False),
     ("python:dptune.models.examples:EASE", False), ("python:dptune.models.examples:PureSVD", True),
     ("python:dptune.models.examples:Popularity", False), ("python:no_such_module:X", True)],
)
def test_stochastic_is_declared_by_the_family(algorithm_type, expected):
    from dptune.store._noise_parts import deterministic_algorithms

    assert is_stochastic(algorithm_type) is expected
    man = {"algorithms": [{"name": "a", "type": algorithm_type}]}
    assert deterministic_algorithms(man) == ([] if expected else ["a"])


def test_noise_floor_plans_nothing_for_deterministic_algorithms():
    from dptune.store._noise_parts import deterministic_algorithms

    manifest = {"algorithms": [{"name": "e", "type": "cornac:EASE"},
                               {"name": "b", "type": "cornac:BPR"},
                               {"name": "p", "type": "python:dptune.models.examples:EASE"}]}
    assert deterministic_algorithms(manifest) == ["e", "p"]


# ---------------------------------------------------------------------------------------------
# Python models


def test_python_family_signature_seed_and_errors():
    fam = get_family("python:dptune.models.examples:PureSVD")
    assert fam.hyperparameters == ("factors",) and fam.stochastic and fam.takes_seed
    X = random_matrix()
    (_, a), = fam.fit_unit(X, [{"factors": 3}], seed=5)
    assert a.seed == 5  # the unit's seed reaches the constructor
    with pytest.raises(DptuneError, match="grid.toml: factor: unknown hyperparameter"):
        fam.validate([{"factor": 3}], source="grid.toml")
    with pytest.raises(DptuneError, match="cannot import module 'no_such_mod'"):
        get_family("python:no_such_mod:Model")
    with pytest.raises(DptuneError, match="has no attribute 'Nope'"):
        get_family("python:dptune.models.examples:Nope")
    with pytest.raises(DptuneError, match="python:<package.module>:<Class>"):
        get_family("python:dptune.models.examples")
    with pytest.raises(DptuneError, match="needs methods fit"):
        get_family("python:collections:OrderedDict")
    # a factory that is not a class: what it returns is checked when the grid is checked,
    # before the sweep (python:os:getcwd gave a str, an AttributeError from inside the sweep)
    with pytest.raises(DptuneError, match="python:os:getcwd: returned a str, not a model with "
                                          r"methods fit\(X\) and score\(users\)"):
        get_family("python:os:getcwd").check([{}], source="g.toml")


def test_python_family_required_parameter():
    class NeedsAlpha:
        def __init__(self, alpha):
            self.alpha = alpha

        def fit(self, X):
            return self

        def score(self, users):
            return np.zeros((len(users), 3))

    from dptune.models import PythonFamily

    fam = PythonFamily(NeedsAlpha, type_name="needs-alpha")
    assert not fam.stochastic
    with pytest.raises(DptuneError, match="alpha: missing hyperparameter for 'needs-alpha'"):
        fam.validate([{}])


@pytest.mark.parametrize(
    ("algorithm_type", "cfg", "needles"),
    [
        ("cornac:EASE", {"lamb": ["abc"]}, ["g.toml: lamb: must be a finite number", "['abc']"]),
        ("cornac:EASE", {"lamb": "abc"}, ["lamb", "'abc'"]),
        ("cornac:EASE", {"lamb": float("nan")}, ["lamb", "nan"]),
        ("cornac:EASE", {"posB": 1}, ["posB: must be true or false", "got 1"]),
        ("cornac:BPR", {"k": "ten"}, ["k: must be an integer", "'ten'"]),
        ("cornac:BPR", {"k": 10.5}, ["g.toml: k: must be an integer for cornac:BPR, got 10.5"]),
        ("cornac:BPR", {"max_iter": 2.5}, ["max_iter", "2.5"]),
        ("python:dptune.models.examples:PureSVD", {"factors": "x"},
         ["g.toml: factors: must be an integer for python:", "'x'"]),
        ("python:dptune.models.examples:PureSVD", {"factors": 2.5}, ["factors", "2.5"]),
        ("python:dptune.models.examples:EASE", {"lamb": True}, ["lamb", "True"]),
    ],
)
def test_grid_values_are_type_checked_against_the_constructor(algorithm_type, cfg, needles):
    """A value whose type does not fit the constructor's annotation (else its default) is one
    error naming the grid file, the hyperparameter and the value, before anything trains."""
    fam = get_family(algorithm_type)
    with pytest.raises(DptuneError) as err:
        fam.check([cfg], source="g.toml")
    for n in needles:
        assert n in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("algorithm_type", "cfg"), [
    ("cornac:EASE", {"lamb": 10}), ("cornac:EASE", {"lamb": 0.5, "posB": False}),
    ("cornac:BPR", {"k": 8, "learning_rate": 0.01}), ("cornac:MostPop", {}),
    ("python:dptune.models.examples:PureSVD", {"factors": 8.0}), ("cornac:BPR", {"k": 10.0}),
    ("cornac:WMF", {"a": 0.5, "k": 4}),
])
def test_good_grid_values_pass_the_check(algorithm_type, cfg):
    """An integral float (``10.0``) is an integer; a parameter written with an integer default
    but documented as a float (cornac's ``lamb = 500``, ``a = 1``) takes any number: the
    check passes, and the model it builds holds every value as given."""
    fam = get_family(algorithm_type)
    assert fam.check([cfg], source="g.toml") is None
    assert fam.validate([cfg], source="g.toml") == [cfg]
    built = fam.build(cfg)
    assert {key: getattr(built, key) for key in cfg} == cfg


def test_integer_parameters_are_told_by_annotation_docstring_then_default():
    """An integer default makes an integer parameter, unless the annotation or the class's
    docstring (NumPy style) says it is a float; a fraction for it is refused before any work."""
    from dptune.models import PythonFamily

    class Model:
        """A model.

        Parameters
        ----------
        alpha : float, optional
            Documented as a float although its default is written 1.
        size : int or None
            Documented.
        """

        def __init__(self, n=10, alpha=1, beta: float = 2, size=None, on=True):
            pass

        def fit(self, X):
            return self

        def score(self, users):
            return np.zeros((len(users), 3))

    fam = PythonFamily(Model, type_name="m")
    fam.check([{"alpha": 0.5, "beta": 0.25, "n": 3.0, "size": 4}, {"size": None}], source="g.toml")
    for cfg, needle in [({"n": 10.5}, "g.toml: n: must be an integer for m, got 10.5"),
                        ({"n": True}, "n: must be an integer for m, got True"),
                        ({"size": 2.5}, "size: must be an integer for m, got 2.5"),
                        ({"on": 1}, "on: must be true or false")]:
        with pytest.raises(DptuneError) as err:
            fam.check([cfg], source="g.toml")
        assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_constructor_that_refuses_a_value_is_reported_before_the_sweep():
    class Picky:
        def __init__(self, alpha=0.5, mode=None):
            if not 0 <= alpha <= 1:
                raise ValueError(f"alpha must be in [0, 1], got {alpha}")
            self.alpha = alpha

        def fit(self, X):
            return self

        def score(self, users):
            return np.zeros((len(users), 3))

    from dptune.models import PythonFamily

    fam = PythonFamily(Picky, type_name="picky")
    fam.check([{"alpha": 0.2}, {"alpha": 1, "mode": ["any", "thing"]}], source="g.toml")
    with pytest.raises(DptuneError, match=r"^g.toml: alpha=3: picky refuses this configuration: "
                                          r"alpha must be in \[0, 1\], got 3$"):
        fam.check([{"alpha": 0.2}, {"alpha": 3}], source="g.toml")


@pytest.mark.parametrize(("rows", "cols", "got"), [
    (lambda n: n, lambda m: m - 1, "shape (16, 29)"),
    (lambda n: 1, lambda m: m, "shape (1, 30)"),
    (None, None, "shape (30,)"),
])
def test_python_model_score_of_the_wrong_shape_is_one_line(rows, cols, got):
    class Bad:
        def fit(self, X):
            self.n_items = X.shape[1]
            return self

        def score(self, users):
            if rows is None:
                return np.zeros(self.n_items)
            return np.zeros((rows(len(users)), cols(self.n_items)))

    from dptune.models import PythonFamily

    X = random_matrix()
    (_, model), = PythonFamily(Bad, type_name="bad-model").fit_unit(X, [{}], seed=0)
    efd, epc = novelty_vectors(X)
    with pytest.raises(DptuneError) as err:
        evaluate(model, np.arange(1, 17), X, X, (1, 5), efd, epc, block=16)
    assert str(err.value) == (f"bad-model: score: returned {got}, expected (16, 30) (one row per "
                              "user of the block, one column per item of the training matrix)")
    assert model.n_items == 30  # the model's own attributes are reachable through the check


def test_python_model_is_scored_in_blocks_by_the_engine():
    calls = []

    class Recorder:
        def fit(self, X):
            self.n_items = X.shape[1]
            return self

        def score(self, users):
            calls.append(len(users))
            return np.tile(np.arange(self.n_items, dtype=np.float64), (len(users), 1))

    X = random_matrix(n_users=50)
    fam = get_family("python:dptune.models.examples:Popularity")
    assert fam.hyperparameters == ()
    from dptune.models import PythonFamily

    (_, model), = PythonFamily(Recorder, type_name="rec").fit_unit(X, [{}], seed=0)
    efd, epc = novelty_vectors(X)
    users = np.arange(1, 50)
    out = evaluate(model, users, X, X, (1, 5), efd, epc, block=16)
    assert calls == [16, 16, 16, 1] and out.shape[2] == 49


def test_register_a_model_by_name(monkeypatch):
    from dptune.models.examples import EASE

    monkeypatch.setenv(REGISTRY_ENV, "{}")
    register("my-ease", EASE)
    try:
        assert is_known_type("my-ease")
        fam = get_family("my-ease")
        assert fam.type == "my-ease" and fam.hyperparameters == ("lamb",) and not fam.stochastic
        # importable class: a worker process finds it through the environment
        known = json.loads(os.environ[REGISTRY_ENV])
        assert known["my-ease"] == ["dptune.models.examples:EASE", None]
        del _REGISTRY["my-ease"]
        assert get_family("my-ease").factory is EASE
        register("my-ease-s", EASE, stochastic=True)
        assert get_family("my-ease-s").stochastic
    finally:
        _REGISTRY.pop("my-ease", None)
        _REGISTRY.pop("my-ease-s", None)
    for bad in ("userknn", "cornac:X", "", "has space", 3):
        with pytest.raises(DptuneError, match="register: name"):
            register(bad, EASE)
    with pytest.raises(DptuneError, match="needs methods fit"):
        register("dict-model", dict)
    assert not is_known_type("unregistered-name")


# ---------------------------------------------------------------------------------------------
# implicit


@pytest.mark.parametrize("name, params", [("als", {"factors": 4, "iterations": 3}),
                                          ("bpr", {"factors": 4, "iterations": 3}),
                                          ("cosine", {"K": 5}), ("bm25", {"K": 5})])
def test_implicit_scores_rank_like_implicits_own_recommend(name, params):
    pytest.importorskip("implicit")
    fam = get_family(f"implicit:{name}")
    assert "random_state" not in fam.hyperparameters
    assert fam.stochastic is (name in ("als", "bpr"))
    X = random_matrix(seed=4)
    (_, model), = fam.fit_unit(X, [params], seed=11)
    users = np.arange(2, 12)
    scores = model.score(users)
    assert scores.shape == (len(users), X.shape[1]) and scores.dtype == np.float32
    for row, u in enumerate(users):
        ids, vals = model.model_.recommend(int(u), X[u], N=X.shape[1],
                                           filter_already_liked_items=False)
        np.testing.assert_allclose(scores[row, ids], vals, rtol=1e-4, atol=1e-5)
    if fam.stochastic:  # same seed, same model (single-threaded by default)
        (_, again), = fam.fit_unit(X, [params], seed=11)
        np.testing.assert_array_equal(again.score(users), scores)


def test_implicit_unknown_model_is_an_error():
    with pytest.raises(DptuneError, match="implicit:svd is not one of implicit:als"):
        get_family("implicit:svd")


def test_python_model_sparse_scores_are_read_as_dense():
    """``X[users] @ S`` of scipy sparse matrices is a natural score of your own item-item
    model: evaluated as its dense array (missing entries score 0), not a traceback."""
    import scipy.sparse as sp

    class ItemItem:
        def fit(self, X):
            self.X = sp.csr_matrix(X)
            self.S = (self.X.T @ self.X).tocsr()
            return self

        def score(self, users):
            return self.X[users] @ self.S

    class Dense(ItemItem):
        def score(self, users):
            return super().score(users).toarray()

    from dptune.models import PythonFamily

    X = random_matrix()
    efd, epc = novelty_vectors(X)
    got = []
    for cls in (ItemItem, Dense):
        (_, model), = PythonFamily(cls, type_name="item-item").fit_unit(X, [{}], seed=0)
        got.append(evaluate(model, np.arange(1, 17), X, X, (1, 5), efd, epc, block=16))
    assert np.array_equal(got[0], got[1])
