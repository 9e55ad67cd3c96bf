"""Display names of hyperparameters: ``k`` is a neighbourhood size for kNN models and a number
of latent factors for the factor models of cornac (BPR, MF, WMF)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dptune.analysis.selection import params_text
from dptune.vocab import display_hyperparameter, display_params, display_value


@pytest.mark.parametrize(("algorithm", "label"), [
    ("userknn", "Nearest neighbors"), ("itemknn", "Nearest neighbors"),
    ("cornac-ItemKNN", "Nearest neighbors"), ("bpr", "Latent factors"),
    ("cornac-wmf", "Latent factors"), (None, "k"),
    # a per-user table's own algorithm: its k may be anything, no name is guessed
    ("ranker", "k"), ("bm25", "k"),
])
def test_k_is_labelled_by_the_algorithm(algorithm, label):
    assert display_hyperparameter("k", algorithm) == label


def test_other_keys_do_not_depend_on_the_algorithm():
    assert display_hyperparameter("factors", "bpr-mf") == "Latent factors"
    assert display_hyperparameter("learning_rate") == "Learning rate"
    assert display_hyperparameter("lamb", "ease") == "lamb"


@pytest.mark.parametrize(("value", "text"), [
    (1.220703125e-05, "0.000012207"),  # the paper's smallest learning rate: no exponent
    (0.0001953125, "0.000195313"),
    (0.025000487, "0.0250005"),
    (0.2, "0.2"),
    (0.1 + 0.2, "0.3"),  # 6 significant digits
    (10.0, "10"),
    (10, "10"),
    ("0.5", "0.5"),
    ("auto", "auto"),
    (1e-07, "1e-07"),  # beyond 10^-6 .. 10^6: scientific
    (12345678.9, "1.23457e+07"),
])
def test_a_hyperparameter_value_has_one_notation(value, text):
    """Learning rates from 1.2e-05 to 0.2 were shown as ``1.22073e-05`` beside
    ``0.000195316`` in one row of Table 5: every value from 10^-6 to 10^6 is now written
    without an exponent, in the table and in the sentences that name a configuration."""
    from dptune.vocab import display_value

    assert display_value(value) == text


def test_the_tie_rule_is_a_distance_not_a_rounding():
    """Two values one ulp apart are one value even when they straddle a boundary of rounding to
    12 decimals (which split them); values 1e-12 apart in a run take the run's smallest; NaN
    stays NaN; a Series keeps its index; the DP-per-25 scale widens the distance 25 times."""
    import numpy as np
    import pandas as pd

    from dptune.vocab import TIE_TOL, same_values, tie_value

    a = 0.2000000000015
    b = np.nextafter(a, 0)
    assert np.round(a, 12) != np.round(b, 12)  # what the rounding rule did
    assert tie_value(np.array([a, b]))[0] == tie_value(np.array([a, b]))[1] == b
    got = tie_value(np.array([0.3, 0.1, 0.1 + 0.5 * TIE_TOL, np.nan, 0.1 + 3 * TIE_TOL]))
    assert got[1] == got[2] == 0.1 and got[4] == 0.1 + 3 * TIE_TOL and np.isnan(got[3])
    assert got[0] == 0.3
    s = pd.Series([0.5, 0.5 + 1e-15], index=[7, 3], name="mean_p")
    t = tie_value(s)
    assert list(t.index) == [7, 3] and t.name == "mean_p" and t.nunique() == 1
    assert tie_value(0.25) == 0.25
    dp = np.array([5.0, 5.0 + 20 * TIE_TOL])
    assert tie_value(dp)[0] != tie_value(dp)[1] and tie_value(dp, scale=25)[1] == 5.0
    assert same_values([0.1, np.nan], [0.1 + 1e-13, np.nan])
    assert not same_values([0.1], [0.1 + 1e-11]) and not same_values([0.1], [0.1, 0.2])


def test_the_verdict_and_the_dominance_apply_the_tie_rule():
    """A tie one ulp apart, straddling a rounding boundary, named nDCG's identical (the verdict)
    and ordered by the grid (the dominance answer ranked raw mean p-values)."""
    import numpy as np
    import pandas as pd

    from dptune.analysis.verdict.dominance import dominance_table
    from dptune.analysis.verdict.rules import recommend

    a = 0.2000000000015
    b = np.nextafter(a, 0)

    def row(metric, mean_p, scope="all"):
        return {"algorithm": "x", "scope": scope, "metric": metric, "cutoff": 10,
                "mean_p": mean_p, "dp_per_25": 25 * mean_p, "ci_low": np.nan,
                "ci_high": np.nan, "n_pairs": 100, "n_possible_pairs": 100, "n_folds": 3,
                "no_evidence": False, "unsampled_share": 0.0}

    none = pd.DataFrame(columns=["kind"])
    r = recommend(pd.DataFrame([row("ndcg", a), row("recall", b)]), none).iloc[0]
    assert (r["recommended"], list(r["identical"])) == ("ndcg", ["recall"])
    d = dominance_table(pd.DataFrame([row("ndcg", a, "only:factors"),
                                      row("ndcg", b, "only:iterations")]), none, 10).iloc[0]
    assert d["hyperparameter"] == "factors"


@pytest.mark.parametrize(("params", "text"), [
    ("learning_rate=0.025000487, k=10", "learning_rate=0.0250005, k=10"),
    # names an outside configurations file may hold: none is dropped
    ("$s$=1, w*x=0.8", "$s$=1, w*x=0.8"),
    ("λ=0.50000001, learning rate=0.1", "λ=0.5, learning rate=0.1"),
    ("system=bm25.run, k=10", "system=bm25.run, k=10"),
    # a text value holding ", " stays with its name
    ("kind=a, b, k=3", "kind=a, b, k=3"),
    # not a configuration's text: kept as it is
    ("configuration 3", "configuration 3"), ("", ""), ("=1, k=2", "=1, k=2"),
])
def test_display_params_keeps_every_name_and_formats_every_value(params, text):
    assert display_params(params) == text


@given(st.lists(st.tuples(
    st.text(st.characters(blacklist_characters="=,", blacklist_categories=("Cs",)),
            min_size=1).filter(str.strip),
    st.one_of(st.integers(-10**6, 10**6), st.text(st.characters(blacklist_characters=",="))),
), min_size=1, max_size=5, unique_by=lambda p: p[0]))
def test_display_params_of_a_params_text_names_each_hyperparameter_once(pairs):
    """Whatever the names (no ``=`` or ``,`` in them), the display of the text
    :func:`dptune.analysis.selection.params_text` writes names each hyperparameter, in order,
    with its value's one display format."""
    names = [n for n, _ in pairs]
    row = pd.Series({n: v for n, v in pairs})
    shown = display_params(params_text(row, names))
    assert shown == ", ".join(f"{n}={display_value(v)}" for n, v in pairs)
