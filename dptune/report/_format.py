"""Number formats and orders of the report: one place for how a value, a setting or a
hyperparameter value is printed and in which order algorithms, metrics and values appear.

Orders and display names come from :mod:`dptune.vocab`; this module only adds the report's
text conventions (3 decimals, an en dash for a missing value, a dagger for fewer pairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from dptune.vocab import (
    ALGORITHM_ORDER,
    HYPERPARAMETER_ORDER,
    TABLE_METRIC_ORDER,
    display_params,
    display_value,
    ordered,
    value_norm,
)

__all__ = [
    "MISSING",
    "FEWER_PAIRS",
    "is_missing",
    "fmt",
    "fmt_setting",
    "value_norm",
    "display_value",
    "display_params",
    "ordered_values",
    "ordered_algorithms",
    "ordered_metrics",
    "ordered_hyperparameters",
]

MISSING = "–"  # shown for a missing value in Markdown (LaTeX gets "--")
FEWER_PAIRS = "†"  # marks a DP computed on fewer pairs than the others it is compared with


def ordered_algorithms(keys: Iterable[str]) -> list[str]:
    """Order algorithm keys as the paper does (Item-kNN, User-kNN, BPR-MF, then the rest)."""
    return ordered(keys, ALGORITHM_ORDER)


def ordered_metrics(keys: Iterable[str]) -> list[str]:
    """Order metric keys in the paper's Table 3 order, unknown metrics after them."""
    return ordered(keys, TABLE_METRIC_ORDER)


def ordered_hyperparameters(
    keys: Iterable[str], hyperparameter_order: Mapping[str, Sequence[object]] | None
) -> list[str]:
    """Order hyperparameters: keys of ``hyperparameter_order`` first, then the paper's order."""
    preferred = list(hyperparameter_order or {}) + [
        h for h in HYPERPARAMETER_ORDER if h not in (hyperparameter_order or {})
    ]
    return ordered(keys, preferred)


def ordered_values(values: Iterable[str], order: Sequence[object] | None) -> list[str]:
    """Order the value strings of one hyperparameter.

    Values listed in ``order`` come first in that order (matched numerically when both parse as
    numbers, so ``10`` matches ``"10"`` and ``0.1`` matches ``"0.10"``); the remaining values
    follow sorted numerically, non-numeric values last and sorted as text.
    """
    given = [value_norm(v) for v in (order or [])]

    def key(v: str) -> tuple[int, int, float, str]:
        norm = value_norm(v)
        if norm in given:
            return (0, given.index(norm), 0.0, "")
        if isinstance(norm, float):
            return (1, 0, norm, "")
        return (2, 0, 0.0, str(norm))

    return sorted({str(v) for v in values}, key=key)


def is_missing(x: object) -> bool:
    """True for ``None``/NaN/NA (anything pandas calls missing)."""
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def fmt(x: object, decimals: int = 3) -> str:
    """Format a number with a fixed number of decimals; missing values as an en dash."""
    if is_missing(x):
        return MISSING
    return f"{float(x):.{decimals}f}"


def fmt_setting(value: object) -> str:
    """Format one settings value for the settings table (lists joined, floats to 6 digits)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(fmt_setting(v) for v in items)
    if value is None:
        return MISSING
    return str(value)
