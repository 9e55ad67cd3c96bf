"""Edges of the Python API as a researcher meets them: options given as a table, a hand-made
manifest or result, a polars or pyarrow table, options checked before a per-user table is read.
Each is one :class:`dptune.errors.DptuneError` line naming the argument, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dptune
from dptune._per_user import analyze_per_user
from dptune.analysis.dp.tables import PAIRS_COLUMNS, PVALUES_COLUMNS, DPEstimate
from dptune.analysis.result import AnalysisResult
from dptune.errors import DptuneError


def _estimate() -> DPEstimate:
    empty = pd.DataFrame()
    return DPEstimate(pairs=pd.DataFrame(columns=PAIRS_COLUMNS),
                      pvalues=pd.DataFrame(columns=PVALUES_COLUMNS), table=empty, curves=empty)


def _broken_table() -> pd.DataFrame:
    """A per-user table that its own check refuses (one configuration only)."""
    return pd.DataFrame({"system": ["a"], "user": [1], "metric": ["ndcg@10"], "value": [0.1]})


def test_options_given_as_one_table_are_named_so():
    """``AnalysisOptions({"pairs": 25})`` read the table as the value of ``pairs`` and said
    ``pairs: must be an integer >= 1, got {'pairs': 25}``."""
    with pytest.raises(DptuneError, match=r"^analysis: takes its options by name.*"
                       r"AnalysisOptions\(\*\*options\)"):
        dptune.AnalysisOptions({"pairs": 25})
    assert dptune.AnalysisOptions(**{"pairs": 25}).pairs == 25


@pytest.mark.parametrize("manifest, field", [({"analysis": [("pairs", 5)]}, "analysis"),
                                             ({"seeds": [42]}, "seeds")])
def test_resolve_names_a_manifest_part_of_the_wrong_kind(manifest, field):
    """A hand-made manifest whose ``analysis`` or ``seeds`` is not a table raised a
    ``TypeError`` or ``AttributeError`` from inside ``AnalysisOptions.resolve``."""
    with pytest.raises(DptuneError, match=rf"^analysis: manifest: {field}: needs a table"):
        dptune.AnalysisOptions.resolve(manifest, pairs=25)


def test_a_result_built_by_hand_is_checked_when_made():
    """A result built by hand with a part of the wrong kind failed with an AttributeError
    (``'dict' object has no attribute 'primary_metric'``) in ``res.primary`` or inside
    ``Report.from_result``; a manifest of None failed there too."""
    est = _estimate()
    with pytest.raises(DptuneError, match=r"^AnalysisResult: options: needs "
                       r"dptune.AnalysisOptions.*got dict"):
        AnalysisResult(dp=est, options={"pairs": 3})
    with pytest.raises(DptuneError, match=r"^AnalysisResult: dp: .*got DataFrame"):
        AnalysisResult(dp=pd.DataFrame())
    with pytest.raises(DptuneError, match=r"^AnalysisResult: verdict: .*got list"):
        AnalysisResult(dp=est, verdict=[])
    with pytest.raises(DptuneError, match=r"^AnalysisResult: configurations: missing column "
                       r"'algorithm'"):
        AnalysisResult(dp=est, configurations=pd.DataFrame({"config_id": [0]}))
    bare = AnalysisResult(dp=est, manifest=None)
    assert bare.manifest == {}
    assert bare.configuration_counts == {} and bare.test_split


def test_a_polars_or_pyarrow_table_is_named_with_its_conversion():
    """A polars DataFrame was refused as ``needs a pandas DataFrame ..., got DataFrame``."""
    frame = type("DataFrame", (), {"__module__": "polars.dataframe.frame",
                                   "to_pandas": lambda self: pd.DataFrame()})
    with pytest.raises(DptuneError, match=r"got polars\.DataFrame; convert it with "
                       r"\.to_pandas\(\)$"):
        dptune.discriminative_power(frame())
    with pytest.raises(DptuneError, match=r"got numpy\.ndarray$"):
        dptune.discriminative_power(_broken_table().to_numpy())


def _polars_frame() -> object:
    """An object named as a polars DataFrame is (polars itself is no dependency)."""
    frame = type("DataFrame", (), {"__module__": "polars.dataframe.frame",
                                   "to_pandas": lambda self: _broken_table()})
    return frame()


def test_analyze_names_a_polars_table_as_discriminative_power_does():
    """``dptune.analyze(polars_df)`` said ``got DataFrame``: a polars DataFrame is not pandas',
    and the message gave no conversion."""
    with pytest.raises(DptuneError) as err:
        dptune.analyze(_polars_frame())
    assert str(err.value) == ("analyze: store: needs a result store, its directory or a per-user "
                              "pandas DataFrame, got polars.DataFrame; convert it with "
                              ".to_pandas()")
    with pytest.raises(DptuneError, match=r"^analyze: configs: needs a pandas DataFrame of "
                       r"configurations, got polars\.DataFrame; convert it with \.to_pandas\(\)$"):
        dptune.analyze(_broken_table(), configs=_polars_frame())


def test_a_pyarrow_table_is_named_by_every_front_function():
    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pandas(_broken_table())
    for call in (dptune.analyze, dptune.discriminative_power):
        with pytest.raises(DptuneError, match=r"got pyarrow\.Table; convert it with "
                           r"\.to_pandas\(\)$"):
            call(table)


def test_one_helper_names_an_unexpected_type():
    """The front functions and the per-user checks name a type the same way."""
    from dptune.errors import unexpected_type
    from dptune.store._per_user_file import check_per_user
    from dptune.store._per_user_store import PerUserStore

    assert unexpected_type(_polars_frame()) == "polars.DataFrame; convert it with .to_pandas()"
    assert unexpected_type(None) == "NoneType" and unexpected_type("x") == "str"
    assert unexpected_type(_broken_table().to_numpy()) == "numpy.ndarray"
    with pytest.raises(DptuneError, match=r"^per_user: expected a pandas DataFrame, got "
                       r"polars\.DataFrame; convert it"):
        check_per_user(_polars_frame())
    with pytest.raises(DptuneError, match=r"^per_user: expected a pandas DataFrame, got "
                       r"polars\.DataFrame; convert it"):
        PerUserStore.from_frame(_polars_frame())


@pytest.mark.parametrize("given", [dptune.AnalysisOptions(pairs=25), {"pairs": 25}])
def test_options_given_whole_to_discriminative_power(given):
    """``discriminative_power(df, options=...)`` was ``unknown field (allowed: ...)``, without
    the way to give them."""
    with pytest.raises(DptuneError, match=r"^discriminative_power: options: takes the options' "
                       r"fields as keywords.*dptune\.analyze\(per_user, options\)"):
        dptune.discriminative_power(_broken_table(), options=given)


@pytest.mark.parametrize("options, message", [
    ({"pairz": 3}, r"^analysis: pairz: unknown field \(did you mean 'pairs'\?\)"),
    ({"bootstrap": 10}, r"^analysis: bootstrap: must be 0 \(off\) or from 40"),
    ({"noise_seeds": 3}, r"^analysis: noise_seeds: no noise floor for outside data"),
])
def test_options_are_checked_before_the_table_is_read(tmp_path: Path, options, message):
    """A bad option was refused only after the whole per-user table had been read and
    checked (its own problems first), not before any work."""
    with pytest.raises(DptuneError, match=message):
        dptune.discriminative_power(_broken_table(), **options)
    with pytest.raises(DptuneError, match=message):
        dptune.discriminative_power(tmp_path / "absent.csv", **options)
    with pytest.raises(DptuneError, match=message):
        analyze_per_user(tmp_path / "absent.csv", tmp_path / "reports", **options)
