"""The integer hyperparameters of the built-in models (``k``, ``factors``, ``iterations``):
whole numbers up to int64's largest, the type a results store keeps them in; a larger one
(``k = 1e300``, ``k = 10**20``) is one error naming the grid file and the hyperparameter
(docs/grids.md, "What each model takes"). A grid file's value, from the command line:
``test_bad_grid_fails_before_anything_is_computed`` of tests/test_bad_input.py."""

from __future__ import annotations

import numpy as np
import pytest

from dptune.errors import INT_MAX, DptuneError
from dptune.models import get_family

BPR = {"factors": 4, "iterations": 2, "learning_rate": 0.1, "user_reg": 0.0, "item_reg": 0.0}


def test_the_bound_is_int64s_largest():
    assert INT_MAX == 2**63 - 1 == np.iinfo(np.int64).max


@pytest.mark.parametrize("value, shown", [
    (10**20, "100000000000000000000"),
    (1e300, "1e+300"),
    (2**63, "9223372036854775808"),
    (2.0**63, "9.223372036854776e+18"),  # the first float beyond int64
    (np.uint64(2**64 - 1), "18446744073709551615"),
    (10**400, "an integer of 401 digits"),
], ids=["10**20", "1e300", "2**63", "2.0**63", "uint64-max", "10**400"])
@pytest.mark.parametrize("algorithm_type, key", [
    ("userknn", "k"), ("itemknn", "k"), ("bpr-mf", "factors"), ("bpr-mf", "iterations"),
])
def test_an_integer_beyond_int64_is_refused_naming_the_hyperparameter(algorithm_type, key,
                                                                       value, shown):
    """``k = 1e300`` and ``k = 10**20`` were taken as whole numbers (a results store then
    wrote every ``k`` of the grid as a float)."""
    config = {**(BPR if algorithm_type == "bpr-mf" else {"k": 5}), key: value}
    with pytest.raises(DptuneError) as err:
        get_family(algorithm_type).validate([config], "grid.toml")
    assert str(err.value) == (f"grid.toml: {key}: must be an integer from "
                              f"{0 if key == 'iterations' else 1} to 9,223,372,036,854,775,807 "
                              f"(int64's largest), got {shown}")


@pytest.mark.parametrize("value, expected", [
    (10, 10), (10.0, 10), (np.int64(7), 7), (np.float32(8.0), 8), (2**63 - 1, 2**63 - 1),
    (9.2e18, 9_200_000_000_000_000_000),  # an integral float within range, as before
])
def test_whole_numbers_within_int64_are_taken_as_before(value, expected):
    (config,) = get_family("userknn").validate([{"k": value}], "grid.toml")
    assert config["k"] == expected and type(config["k"]) is int


@pytest.mark.parametrize("value, problem", [
    (0, "must be an integer >= 1, got 0"), (10.5, "must be an integer >= 1, got 10.5"),
    (float("inf"), "must be an integer >= 1, got inf"), (True, "must be an integer >= 1"),
])
def test_other_bad_integers_as_before(value, problem):
    with pytest.raises(DptuneError, match=f"^grid.toml: k: {problem}"):
        get_family("userknn").validate([{"k": value}], "grid.toml")


@pytest.mark.parametrize("algorithm_type, key", [
    ("cornac:BPR", "k"), ("cornac:BPR", "max_iter"),
    ("python:dptune.models.examples:PureSVD", "factors"),
])
@pytest.mark.parametrize("value, shown", [
    (10**400, "an integer of 401 digits"), (2**63, "9223372036854775808"),
], ids=["10**400", "2**63"])
def test_an_outside_models_integer_has_the_same_bound(algorithm_type, key, value, shown):
    """An outside model's ``int`` argument (cornac's, your own) took any whole number, and one
    of 400 digits stopped the check with an OverflowError (``float()`` of it): the same bound
    as the built-in models', one line naming the grid file and the argument."""
    with pytest.raises(DptuneError) as err:
        get_family(algorithm_type).check([{key: value}], source="g.toml")
    assert str(err.value).startswith(
        f"g.toml: {key}: must be an integer from -9,223,372,036,854,775,808 to "
        f"9,223,372,036,854,775,807 (int64) for {algorithm_type}, got {shown}"), str(err.value)
    get_family(algorithm_type).check([{key: INT_MAX}], source="g.toml")  # the bound is taken
