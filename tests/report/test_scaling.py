"""The report's per-value work stays linear in a hyperparameter's values: the order of Table 5's
values is a hashed look-up of the grid's order, equal to the positional search it replaces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import dptune.report._format as fmt
from dptune.vocab import value_norm

_VALUES = st.one_of(st.integers(-5, 50).map(str), st.floats(-3, 3, allow_nan=False).map(str),
                    st.sampled_from(["nan", "inf", "-0.0", "0", "abc", "10.0", "1e1", "x"]))
_ORDER = st.one_of(st.integers(-5, 50), st.floats(-3, 3, allow_nan=False),
                   st.sampled_from([float("nan"), "abc", "10", 10.0, -0.0, "y", True]))


def _ordered_values_by_search(values, order):
    """The positional search: first index in the normalised order, via ``list.index``."""
    given = [value_norm(v) for v in (order or [])]

    def key(v):
        norm = value_norm(v)
        if norm in given:
            return (0, given.index(norm), 0.0, "")
        if isinstance(norm, float):
            return (1, 0, norm, "")
        return (2, 0, 0.0, str(norm))

    return sorted({str(v) for v in values}, key=key)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_VALUES, max_size=25),
       order=st.one_of(st.none(), st.lists(_ORDER, max_size=25)))
def test_ordered_values_matches_the_search(values, order):
    assert fmt.ordered_values(values, order) == _ordered_values_by_search(values, order)


def test_ordered_values_compares_each_value_with_few_of_the_order(monkeypatch):
    """10,000 grid values: each value is looked up among the order's by hash, a handful of
    equality tests in all per value (the search compared it with every value before it)."""
    compared = 0

    class Key:
        def __init__(self, value):
            self.value = value

        def __hash__(self):
            return hash(self.value)

        def __eq__(self, other):
            nonlocal compared
            compared += 1
            return isinstance(other, Key) and self.value == other.value

        def __str__(self):
            return str(self.value)

    norm = fmt.value_norm
    monkeypatch.setattr(fmt, "value_norm", lambda v: Key(norm(v)))
    order = [i * 0.5 for i in range(10_000)]
    out = fmt.ordered_values([str(v) for v in reversed(order)], order)
    assert out == [str(v) for v in order]
    assert compared <= 3 * len(order)
