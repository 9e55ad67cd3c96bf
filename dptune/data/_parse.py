"""Typing and validation of the raw rating columns: ids, ratings and timestamps.

Every bad value is one error naming the file, the field and the line (or row) it is on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dptune.errors import input_error, plain

_NUMERIC_ID = r"0|[1-9][0-9]{0,17}"  # no sign, no leading zeros, fits int64
_NEGATIVE_ID = r"-[0-9]+"


def _finish(frame: pd.DataFrame, source: str, where) -> pd.DataFrame:
    """Validate and type the raw columns; ``where(i)`` names row ``i`` in messages.

    A frame without ``rating`` is implicit feedback (every rating 1.0, ``attrs["implicit"]``);
    one without ``timestamp`` gets the row position (``attrs["timestamps"] = False``), so that
    "latest" means "last in file order" and every later stage keeps working unchanged; one whose
    fractional timestamps truncation would tie within a user gets their ranks
    (``attrs["time_ranks"] = True``, :func:`_time_ranks`).
    """
    n = len(frame)
    implicit = "rating" not in frame.columns
    timed = "timestamp" in frame.columns
    users = _parse_ids(frame["user"], source, "user", where)
    stamps = (_parse_timestamp(frame["timestamp"], source, where) if timed else
              np.arange(n, dtype=np.int64))
    exact = _exact_times(frame["timestamp"]) if timed else None
    ranked = exact is not None and _fraction_ties(users, stamps, exact)
    if ranked:
        stamps = _time_ranks(exact)
    out = pd.DataFrame(
        {
            "user": users,
            "item": _parse_ids(frame["item"], source, "item", where),
            "rating": (np.ones(n, dtype=np.float32) if implicit else
                       _parse_rating(frame["rating"], source, where)),
            "timestamp": stamps,
        }
    )
    out.attrs["implicit"] = implicit
    out.attrs["timestamps"] = timed
    if ranked:  # said in the data's log (dptune.data._dataset._build)
        out.attrs["time_ranks"] = True
    return out


def _exact_times(values: pd.Series) -> np.ndarray | None:
    """The timestamps as float64 when some has a fractional part (already validated by
    :func:`_parse_timestamp`), else ``None``: only such a column can lose order by truncation."""
    if pd.api.types.is_integer_dtype(values.dtype) or pd.api.types.is_datetime64_any_dtype(
            values.dtype):
        return None
    if pd.api.types.is_numeric_dtype(values.dtype):
        nums = values.to_numpy(dtype=np.float64)
    else:
        nums = pd.to_numeric(values.astype("str").str.strip(), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
        if np.isnan(nums).any():  # dates
            return None
    return nums if (nums != np.trunc(nums)).any() else None


def _fraction_ties(users, stamps: np.ndarray, exact: np.ndarray) -> bool:
    """Whether truncating fractional timestamps (``exact``, :func:`_exact_times`) gave one user
    two different times the same whole number (``10.2`` and ``10.7``): the truncated values
    would let the file order, not the time, decide which came first, in the temporal splits and
    in the duplicates kept."""
    frame = pd.DataFrame({"user": users, "second": stamps, "exact": exact})
    return bool((frame.groupby(["user", "second"], sort=False)["exact"].nunique() > 1).any())


def _time_ranks(exact: np.ndarray) -> np.ndarray:
    """Fractional timestamps (``exact``, :func:`_exact_times`) as their rank in the column (0
    the earliest, equal times equal ranks): every order and every tie of the file's times, as
    int64."""
    return np.unique(exact, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _parse_ids(values: pd.Series, source: str, field: str, where) -> np.ndarray | pd.Series:
    """Ids: int64 when all are plain non-negative integers, else strings; missing/negative -> error."""
    missing = values.isna().to_numpy()
    if missing.any():
        i = int(np.argmax(missing))
        raise input_error(source, field, f"{where(i)}: missing id (empty, None or NaN)")
    if pd.api.types.is_bool_dtype(values.dtype):
        raise input_error(source, field, "ids must be integers or strings, not booleans")
    if _beyond_int64(values):
        # an unsigned id above int64's range would wrap to a negative number: kept as text,
        # as a text file's id of that size is
        values = values.astype("str")
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
                source, field, f"{where(i)}: id {plain(floats[i])} is not a non-negative integer"
            )
        return floats.astype(np.int64)
    raw = values.astype("str")
    text = raw.str.strip()
    empty = (text == "").to_numpy()
    if empty.any():
        i = int(np.argmax(empty))
        raise input_error(source, field, f"{where(i)}: missing id (empty)")
    _check_blanks(raw, text, source, field, where)
    if text.str.fullmatch(_NUMERIC_ID).all():
        return text.astype(np.int64).to_numpy()
    negative = text.str.fullmatch(_NEGATIVE_ID).to_numpy(dtype=bool)
    if negative.any() and text.str.fullmatch(f"{_NUMERIC_ID}|{_NEGATIVE_ID}").all():
        i = int(np.argmax(negative))
        raise input_error(source, field, f"{where(i)}: negative id {text.iloc[i]}")
    return text.reset_index(drop=True)


def _beyond_int64(values: pd.Series) -> bool:
    """Whether an unsigned integer column holds a value above int64's largest (a CSV column of
    such numbers reads as uint64), which ``to_numpy(dtype=np.int64)`` would silently wrap to a
    negative number."""
    return (pd.api.types.is_unsigned_integer_dtype(values.dtype) and len(values) > 0
            and int(values.max()) > np.iinfo(np.int64).max)


def _check_blanks(raw: pd.Series, text: pd.Series, source: str, field: str, where) -> None:
    """Refuse two different ids that differ only by blanks around them (``"a"`` and ``" a"``).

    Ids are read without the blanks around them, so that ``1, 2, 4`` reads as with ``1,2,4``;
    but where the same column holds an id both with and without such blanks, stripping them
    would merge what the file writes as two ids, silently. The error names both lines.
    """
    changed = (raw != text).to_numpy()
    if not changed.any():
        return
    pairs = pd.DataFrame({"raw": raw.to_numpy(), "text": text.to_numpy()})
    distinct = pairs.drop_duplicates()
    merged = distinct["text"][distinct["text"].duplicated()]
    if merged.empty:
        return
    target = merged.iloc[0]
    rows = np.flatnonzero((pairs["text"] == target).to_numpy())
    i = int(rows[0])
    j = int(next(r for r in rows if pairs["raw"].iat[r] != pairs["raw"].iat[i]))
    raise input_error(source, field, f"{where(j)}: id {plain(pairs['raw'].iat[j])} and the id "
                      f"{plain(pairs['raw'].iat[i])} of {where(i)} differ only by blanks around "
                      "them, which are not read as part of an id; write the id one way")


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
        raise input_error(source, field, f"{where(i)}: {plain(value)} is not a finite number")
    return nums


def _parse_rating(values: pd.Series, source: str, where) -> np.ndarray:
    """The ``rating`` column as float32, the ratings' stored type: a finite number beyond
    float32's range (``1e39``) would become infinite there, so the first one is an error
    naming its line, as a non-numeric one is (:func:`_parse_number`)."""
    nums = _parse_number(values, source, "rating", where)
    big = np.abs(nums) > np.finfo(np.float32).max
    if big.any():
        i = int(np.argmax(big))
        raise input_error(source, "rating", f"{where(i)}: {plain(values.iloc[i])} is beyond the "
                          f"range of a rating (at most {np.finfo(np.float32).max:.4g} in size)")
    return nums.astype(np.float32)


def _parse_timestamp(values: pd.Series, source: str, where) -> np.ndarray:
    """Timestamps as int64, used only to order each user's ratings.

    * numbers (integers, or floats truncated toward zero) are kept as they are: any unit works
      (seconds, milliseconds, a sequence number) as long as the whole column uses one; where
      truncating would tie two different times of one user (``10.7`` and ``10.2``), which the
      file order would then decide, :func:`_finish` orders by the exact values instead;
    * dates and times (a datetime column of Parquet, or ISO-8601 text such as
      ``2024-03-01T12:00:00Z``, ``2024-03-01T12:00:00+02:00`` or ``2024-03-01``; without an
      offset the time is taken as UTC) become microseconds since 1970-01-01 UTC.

    A column mixing numbers and dates, a missing value or text that is neither is an error
    naming its line.
    """
    if _beyond_int64(values):
        i = int(np.argmax(values.to_numpy() > np.iinfo(np.int64).max))
        raise input_error(source, "timestamp", f"{where(i)}: {plain(values.iloc[i])} is out of "
                          "range (timestamps are 64-bit integers, or dates)")
    if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
        return values.to_numpy(dtype=np.int64)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        missing = values.isna().to_numpy()
        if missing.any():
            i = int(np.argmax(missing))
            raise input_error(source, "timestamp", f"{where(i)}: missing value")
        return _microseconds(values)
    if not pd.api.types.is_numeric_dtype(values.dtype) and not values.isna().any():
        text = values.astype("str").str.strip()
        if text.str.fullmatch(r"-?[0-9]{1,18}").all():  # exact, no float round trip
            return text.astype(np.int64).to_numpy()
        numbers = pd.to_numeric(text, errors="coerce").notna().to_numpy()
        if not numbers.all() and (text != "").all():
            dates = _dates(values, text, numbers, source, where)
            if dates is not None:
                return dates
    nums = _parse_number(values, source, "timestamp", where)
    out_of_range = np.abs(nums) >= 2.0**63
    if out_of_range.any():
        i = int(np.argmax(out_of_range))
        raise input_error(source, "timestamp", f"{where(i)}: {plain(nums[i])} is out of range "
                          "(timestamps are 64-bit integers, or dates)")
    return np.trunc(nums).astype(np.int64)


def _microseconds(values: pd.Series) -> np.ndarray:
    """A datetime column as int64 microseconds since 1970-01-01 UTC (naive values are UTC)."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return values.to_numpy(dtype="datetime64[us]").astype(np.int64)


def _dates(values: pd.Series, text: pd.Series, numbers: np.ndarray, source: str,
           where) -> np.ndarray | None:
    """ISO-8601 text as microseconds since 1970-01-01 UTC; the first value that is not an
    ISO-8601 date, or a number among dates, is an error naming its line. ``None`` when no value
    is a date (a numeric column with bad text: the caller names the first non-number)."""
    dates = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    # a number is no date even where ISO-8601 reads it as one ("1234" the year 1234)
    bad = dates.isna().to_numpy() | numbers
    if bad.all() and numbers.any():
        return None
    if bad.any():
        i = int(np.argmax(bad))
        if numbers[i]:
            j = int(np.argmax(~bad))
            raise input_error(source, "timestamp",
                              f"{where(i)}: {plain(values.iloc[i])} is a number but {where(j)} "
                              f"holds the date {plain(values.iloc[j])}; use one kind for the "
                              "whole column")
        raise input_error(source, "timestamp",
                          f"{where(i)}: {plain(values.iloc[i])} is neither a number nor an ISO-8601 "
                          "date or date-time (2024-03-01, 2024-03-01T12:00:00Z)")
    return _microseconds(dates)
