"""Display names of hyperparameters: ``k`` is a neighbourhood size for kNN models and a number
of latent factors for the factor models of cornac (BPR, MF, WMF)."""

from __future__ import annotations

import pytest

from dptune.vocab import display_hyperparameter


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
