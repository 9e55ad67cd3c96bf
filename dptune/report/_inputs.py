"""Input checks of the report: the columns each table needs, clean key dtypes, the DP scopes.

The report reads DataFrames only (the analysis' output contract, the columns
:mod:`dptune.analysis.result` names); a missing column or a duplicated key is a one-line input
error (:func:`dptune.errors.input_error`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dptune.analysis.result import CURVES_COLUMNS, DP_COLUMNS
from dptune.errors import input_error
from dptune.report._format import fmt

__all__ = [
    "DP_INPUT",
    "CURVE_INPUT",
    "DATASET_INPUT",
    "BEST_INPUT",
    "NOISE_INPUT",
    "require",
    "check_unique",
    "scope_all",
    "has_intervals",
    "value_scopes",
    "only_scopes",
    "pairs_note",
    "interval_text",
]

# the input columns are the fold loop's output contract
#: dp.csv columns a report needs (``unsampled_share`` and ``unit_clusters`` are optional: the
#: report reads neither from a full grid's dp.csv).
DP_INPUT = tuple(c for c in DP_COLUMNS if c not in ("unsampled_share", "unit_clusters"))
CURVE_INPUT = tuple(CURVES_COLUMNS)
DATASET_INPUT = ("dataset", "users", "items", "ratings", "sparsity")
BEST_INPUT = (
    "algorithm",
    "metric",
    "cutoff",
    "config_id",
    "params",
    "validation_mean",
    "test_value",
)
#: The A/A band of Figure 1 (:attr:`dptune.analysis.noise.NoiseFloor.band`).
NOISE_INPUT = ("algorithm", "cutoff", "position", "low", "high", "mean")


def require(df: pd.DataFrame, columns: Sequence[str], source: str) -> pd.DataFrame:
    """Check that ``df`` has ``columns`` and return a copy with clean key dtypes.

    Keys (``algorithm``, ``scope``, ``metric``) become Python strings and ``cutoff`` / positions
    integers, so lookups do not depend on whether the producer used categoricals or int16.
    """
    if not isinstance(df, pd.DataFrame):
        raise input_error(source, None, f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise input_error(source, ", ".join(missing), "missing column(s)")
    out = df.copy()
    for col in ("algorithm", "scope", "metric", "dataset", "params"):
        if col in out.columns:
            out[col] = out[col].astype(str)
    for col in ("cutoff", "position", "config_id"):
        if col in out.columns and len(out):
            if out[col].isna().any():
                raise input_error(source, col, "has missing values")
            out[col] = out[col].astype("int64")
    return out


def check_unique(df: pd.DataFrame, keys: Sequence[str], source: str) -> None:
    """Raise a one-line error when ``keys`` do not identify the rows of ``df``."""
    dup = df.duplicated(list(keys), keep=False)
    if dup.any():
        first = df.loc[dup, list(keys)].iloc[0].to_dict()
        raise input_error(source, ", ".join(keys), f"duplicated rows, e.g. {first}")


def scope_all(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of the whole-grid scope (Tables 3 and 4)."""
    return dp[dp["scope"] == "all"]


def has_intervals(dp: pd.DataFrame) -> bool:
    """Whether some whole-grid DP of ``dp`` has its 95% interval (none with the bootstrap off,
    or under a paired test without one; the verdict then tests no difference). The one test of
    every part of a report that speaks of intervals or of a tested difference: the verdict's
    legend, table and alt text, the DP figure, the choose-well sentences."""
    rows = scope_all(dp)
    if rows.empty or not {"ci_low", "ci_high"} <= set(rows.columns):
        return False
    lo = pd.to_numeric(rows["ci_low"], errors="coerce").to_numpy(dtype=float)
    hi = pd.to_numeric(rows["ci_high"], errors="coerce").to_numpy(dtype=float)
    return bool((np.isfinite(lo) & np.isfinite(hi)).any())


def value_scopes(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``<hyperparameter>=<value>`` scopes with ``hyperparameter``/``value`` columns."""
    mask = dp["scope"].str.contains("=", regex=False) & ~dp["scope"].str.startswith("only:")
    sub = dp[mask].copy()
    parts = sub["scope"].str.split("=", n=1)
    sub["hyperparameter"] = parts.str[0].astype(str)
    sub["value"] = parts.str[1].astype(str)
    return sub


def only_scopes(dp: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``only:<hyperparameter>`` scopes with a ``hyperparameter`` column."""
    sub = dp[dp["scope"].str.startswith("only:")].copy()
    sub["hyperparameter"] = sub["scope"].str.slice(len("only:")).astype(str)
    return sub


def pairs_note(dp: pd.DataFrame) -> str:
    """Describe the number of pairs and folds behind a set of DP values (``P = 25 pairs``)."""

    def span(col: str) -> str:
        vals = pd.to_numeric(dp[col], errors="coerce").dropna()
        if vals.empty:
            return "?"
        lo, hi = int(vals.min()), int(vals.max())
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    folds = span("n_folds")
    return f"P = {span('n_pairs')} pairs, {folds} fold{'' if folds == '1' else 's'}"


def interval_text(row: pd.Series | None) -> str:
    """`` [lo, hi]`` of a row's ``ci_low``/``ci_high`` (:func:`~dptune.report._format.fmt`, 3
    decimals, as every DP), or ``""`` when absent."""
    if row is None or "ci_low" not in row.index or pd.isna(row["ci_low"]) or \
            pd.isna(row["ci_high"]):
        return ""
    return f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]"
