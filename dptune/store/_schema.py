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
  (:mod:`dptune.store._integrity`). Each data page of a part also carries the CRC-32 of its
  own bytes (Parquet's page checksum, :data:`PAGE_CHECKSUM`), so a part whose entry is gone is
  still checked byte for byte when it is decoded.
- ``configs.csv``, ``users.csv``, ``manifest.json`` (with a checksum of itself and of the two
  CSV files); ``trials.csv`` is derived from the parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["PARTS", "NOISE_DIR", "LAYOUT", "STALE_TEMPORARY_S", "SCHEMA", "NOISE_SCHEMA",
           "PAGE_CHECKSUM", "schema_of", "TRIAL_COLUMNS", "UnitResult", "part_name",
           "part_fields", "validation_unit"]

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
#: Columns of a noise-floor part (:mod:`dptune.store._noise_parts`): those of
#: ``per_user.parquet`` plus the seed's index.
NOISE_SCHEMA = pa.schema([*SCHEMA, pa.field("seed_index", pa.int16(), nullable=False)])
#: Parts are written with Parquet's page checksums (``write_page_checksum``): the CRC-32 of each
#: page's bytes in its header. The index entry's CRC-32 of the whole file is what a part is
#: verified against; the page checksums are what is left when the entry is gone (the whole
#: ``index`` folder deleted, or a store copied without it). Without them, a flipped bit in a
#: page of values decodes to another value and the part reads as sound; with them, the reader
#: (``page_checksum_verification``) refuses it. Parts written before carry none and are
#: decoded as before.
PAGE_CHECKSUM = True


def schema_of(directory: str) -> pa.Schema:
    """The schema of the parts in ``directory`` (:data:`PARTS` or :data:`NOISE_DIR`)."""
    return NOISE_SCHEMA if directory == NOISE_DIR else SCHEMA


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


def noise_part_name(algorithm: str, config_id: int, fold: str) -> str:
    """File name of the noise-floor part of one (algorithm, configuration, fold): the shape of
    :func:`part_name` with ``c`` and the configuration id in 6 digits as its unit."""
    return part_name(algorithm, fold, f"c{int(config_id):06d}")


def part_fields(name: str) -> tuple[str, str, str] | None:
    """``(algorithm, fold, unit)`` of a part's file name (:func:`part_name` read back), or
    None when the name is not of that shape."""
    if not name.endswith(".parquet"):
        return None
    pieces = name[: -len(".parquet")].split("__")
    return (pieces[0], pieces[1], pieces[2]) if len(pieces) == 3 else None
