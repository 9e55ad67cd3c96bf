"""The arguments of :func:`dptune.analysis.pipeline.analyze` (and of the front functions that
share :func:`~dptune.analysis.pipeline.check_arguments`): each is refused, before any work, with
one line naming it, and what the docs call a list of names is any sequence of names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.pipeline import analyze, check_arguments
from dptune.errors import DptuneError


def _per_user(n_sys: int = 3, n_users: int = 20) -> pd.DataFrame:
    """A per-user table of ``n_sys`` systems with a hyperparameter column ``k`` each."""
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"system": f"s{s}", "user": u, "metric": "ndcg@10",
                          "value": 0.7 * rng.random() + s / 10, "k": s}
                         for s in range(n_sys) for u in range(n_users)])


@pytest.mark.parametrize("name", ["pu.csv", "pu.tsv", "pu.parquet"])
def test_analyze_of_a_per_user_file_points_to_discriminative_power(name, tmp_path):
    """``dptune.analyze("pu.csv")`` said ``pu.csv: a file, not a results directory``, not
    which call reads it: one line naming ``analyze: store`` and ``discriminative_power``."""
    path = tmp_path / name
    path.write_text("system,user,metric,value\n")
    with pytest.raises(DptuneError) as err:
        analyze(path)
    assert str(err.value) == (f"analyze: store: {path} is a file, not a results directory; read "
                              "a per-user file (CSV, TSV or Parquet) with "
                              "dptune.discriminative_power(path)")
    toml = tmp_path / "exp.toml"  # an experiment file keeps its own line
    toml.write_text('name = "x"\n')
    with pytest.raises(DptuneError, match=r"exp.toml: an experiment file: give the results"):
        analyze(str(toml))


@pytest.mark.parametrize("names", [
    pd.Index(["k", "h"]), np.array(["k", "h"]), np.array(["k"], dtype=object), ("k",), ["k"], [],
    pd.Index([], dtype=object)], ids=["index", "array", "object-array", "tuple", "list", "empty",
                                      "empty-index"])
def test_any_sequence_of_names_is_a_list_of_hyperparameters(names):
    """``hyperparameters=df.columns[5:]`` (a pandas Index) or a numpy array of str was refused
    with "needs a list of column names"."""
    check_arguments("analyze", None, False, None, names)


@pytest.mark.parametrize("names", [
    "k", b"k", pd.Index([1, 2]), np.array([["k"]]), np.array("k"), {"k"}, [b"k"], None, 3],
    ids=["str", "bytes", "int-index", "2d-array", "0d-array", "set", "bytes-list", "none",
         "int"])
def test_a_lone_string_or_no_sequence_of_names_is_refused(names):
    with pytest.raises(DptuneError, match=r"^analyze: hyperparameters: needs a list of column "
                       "names, got "):
        check_arguments("analyze", None, False, None, names)


def test_a_pandas_index_of_hyperparameters_takes_the_table_route(tmp_path):
    """The Index reaches the store as a list (its truth value, which pandas refuses, is never
    asked): a per-user table's configurations get their ``k``, a results directory refuses it
    by name."""
    per_user = _per_user()
    res = analyze(per_user, hyperparameters=per_user.columns[4:])
    assert res.configurations["k"].tolist() == [0, 1, 2]
    with pytest.raises(DptuneError, match=r"^analyze: hyperparameters: only a per-user table "
                       "takes them"):
        analyze(tmp_path, hyperparameters=pd.Index(["k"]))
