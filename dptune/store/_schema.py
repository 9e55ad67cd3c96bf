"""The result store's vocabulary: directory and part names, the part schema and layout, and
:class:`UnitResult`, what one trained unit hands to the store.

Layout of a results directory (a documented contract; see README and docs/design.md):

- ``per_user.parquet/``: one Parquet part per trained unit (one model run on one fold), named
  ``<algorithm>__<fold>__<unit>.parquet``, written to a hidden temporary file and renamed into
  place, so a part is either complete or absent. Columns ``algorithm, config_id, fold, user,
  metric, cutoff, value`` (value float32, every column required); one row group per (metric,
  cutoff), rows sorted by config_id then user, so a slice read touches one row group per part.
  The part's key-value metadata (``dptune``) records the unit's seed, timings and per-config
  means.
- ``index/<part directory>/<part name>.json``: the size, CRC-32 and experiment fingerprint of
  every part, written with it; a part is trusted only when it matches
  (:mod:`dptune.store._integrity`).
- ``configs.csv``, ``users.csv``, ``manifest.json`` (with a checksum of itself and of the two
  CSV files); ``trials.csv`` is derived from the parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["PARTS", "NOISE_DIR", "LAYOUT", "STALE_TEMPORARY_S", "SCHEMA", "TRIAL_COLUMNS", "UnitResult",
           "part_name", "part_fields", "validation_unit"]

PARTS = "per_user.parquet"
#: Directory of the noise-floor parts (the A/A runs, :mod:`dptune.store._noise_parts`).
NOISE_DIR = "noise_floor.parquet"
LAYOUT = "config-major"  # see write_part; lets read_fold decode only the value column
STALE_TEMPORARY_S = 3600.0  # a temporary file untouched this long belongs to a dead writer
#: Every column is required (``not null``): a value that was never computed is absent, not
#: null, and a required column is stored without definition levels, which readers otherwise
#: decode value by value (reading a fold's values is about 40% faster; parts written before,
#: with nullable columns, read the same).
SCHEMA = pa.schema(
    [
        pa.field("algorithm", pa.string(), nullable=False),
        pa.field("config_id", pa.int32(), nullable=False),
        pa.field("fold", pa.string(), nullable=False),
        pa.field("user", pa.int32(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("cutoff", pa.int16(), nullable=False),
        pa.field("value", pa.float32(), nullable=False),
    ]
)
TRIAL_COLUMNS = ["algorithm", "config_id", "fold", "seed", "unit", "fit_seconds",
                 "eval_seconds", "n_users"]


@dataclass(frozen=True)
class UnitResult:
    """What one trained unit produced: per config, the users evaluated and their metric values.

    ``values[k]`` has shape (len(metrics), len(cutoffs), len(users)) for ``config_ids[k]``.
    """

    algorithm: str
    fold: str
    unit: str
    seed: int
    metrics: tuple[str, ...]
    cutoffs: tuple[int, ...]
    users: np.ndarray
    config_ids: tuple[int, ...]
    values: tuple[np.ndarray, ...]
    fit_seconds: tuple[float, ...]
    eval_seconds: tuple[float, ...]


def validation_unit(k: int) -> str:
    """Name of the ``k``-th validation unit of an algorithm's grid (``u00000``, ``u00001``,
    ...): the manifest lists the units in this order (``algorithms[].units``)."""
    return f"u{int(k):05d}"


def part_name(algorithm: str, fold: str, unit: str) -> str:
    """File name of the part holding one unit's results."""
    return f"{algorithm}__{fold}__{unit}.parquet"


def part_fields(name: str) -> tuple[str, str, str] | None:
    """``(algorithm, fold, unit)`` of a part's file name (:func:`part_name` read back), or
    None when the name is not of that shape."""
    if not name.endswith(".parquet"):
        return None
    pieces = name[: -len(".parquet")].split("__")
    return (pieces[0], pieces[1], pieces[2]) if len(pieces) == 3 else None
