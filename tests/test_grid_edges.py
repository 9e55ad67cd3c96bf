"""Grid edges: which hyperparameters of a best configuration sit at an end of their grid."""

from __future__ import annotations

from dptune.grids import edge_warning, grid_edges


def test_lowest_and_highest_numeric_values():
    values = {"factors": [8, 16, 32, 64], "learning_rate": [0.1, 0.01, 0.05], "iterations": [10, 20, 30]}
    best = {"factors": 64, "learning_rate": 0.01, "iterations": 20}
    assert grid_edges(values, best) == {"factors": "highest", "learning_rate": "lowest"}


def test_categorical_single_value_and_absent_hyperparameters_have_no_edge():
    values = {"similarity": ["cosine", "jaccard"], "k": [50], "shrink": [0, 10]}
    assert grid_edges(values, {"similarity": "cosine", "k": 50}) == {}


def test_warning_names_every_edge():
    text = edge_warning("bpr-mf", {"factors": 64, "learning_rate": 0.01},
                        {"factors": "highest", "learning_rate": "lowest"})
    assert text is not None and "bpr-mf" in text
    assert "factors=64 is the highest value" in text and "learning_rate=0.01 is the lowest value" in text
    assert edge_warning("bpr-mf", {}, {}) is None
