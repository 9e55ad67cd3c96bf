"""Display names of hyperparameters: ``k`` is a neighbourhood size for kNN models and a number
of latent factors for the factor models of cornac (BPR, MF, WMF)."""

from __future__ import annotations

import pytest

from dptune.vocab import display_hyperparameter


@pytest.mark.parametrize(("algorithm", "label"), [
    ("userknn", "Nearest neighbors"), ("itemknn", "Nearest neighbors"),
    ("cornac-ItemKNN", "Nearest neighbors"), ("bpr", "Latent factors"),
    ("cornac-wmf", "Latent factors"), (None, "k"),
])
def test_k_is_labelled_by_the_algorithm(algorithm, label):
    assert display_hyperparameter("k", algorithm) == label


def test_other_keys_do_not_depend_on_the_algorithm():
    assert display_hyperparameter("factors", "bpr-mf") == "Latent factors"
    assert display_hyperparameter("learning_rate") == "Learning rate"
    assert display_hyperparameter("lamb", "ease") == "lamb"
