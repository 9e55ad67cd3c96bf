"""A committed report never carries one user's absolute home path: the data file of a fetched
data set (in the user's cache) is shown as ``~/...``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dptune.analysis.options import AnalysisOptions
from dptune.data._fetch import portable_path
from dptune.report._sections import experiment_settings


def test_portable_path_shows_the_home_directory_as_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert portable_path(tmp_path / ".cache" / "dptune" / "ml-1m" / "ml-1m.inter") == \
        "~/.cache/dptune/ml-1m/ml-1m.inter"
    assert portable_path(str(tmp_path)) == "~"
    assert portable_path(f"{tmp_path}-other/x.csv") == f"{tmp_path}-other/x.csv"  # not under it
    assert portable_path("/srv/data/r.csv") == "/srv/data/r.csv"
    assert portable_path("embedded:ml-latest-small") == "embedded:ml-latest-small"


@pytest.fixture
def manifest(tmp_path):
    return {
        "experiment": "x",
        "dataset": {"name": "ml-1m", "source": str(Path.home() / ".cache/dptune/ml-1m/ml-1m.inter")},
        "split": {"method": "temporal", "train_ratio": 0.8, "min_user_interactions": 5,
                  "dropped_users": 0, "folds": 3, "fold_method": "user_stratified",
                  "split_seed": 1},
        "evaluation": {"relevance_rule": "rating >= 4", "relevance_threshold": 4.0,
                       "novelty_variant": "relevance-aware", "protocol": "all unrated items",
                       "cutoffs": [10]},
    }


def test_settings_table_data_set_line_is_portable(manifest):
    rows = experiment_settings(manifest, AnalysisOptions())
    assert rows["Data set"] == "ml-1m (~/.cache/dptune/ml-1m/ml-1m.inter)"
