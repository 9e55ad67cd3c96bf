"""Rating file readers: MovieLens (.dat, u.data, ratings.csv), RecBole .inter, Amazon, any
CSV/TSV with a header and a column mapping, and Parquet.

:func:`read_ratings` returns the raw rows (ids as in the file, duplicates included, file order);
the typing and validation of the columns is in :mod:`dptune.data._parse`.

Own files: ``columns`` maps our names to the file's (a header name, or a 0-based position when
the file has no header line, ``header=False``); ``sep`` is the field separator. When ``columns``
is given, ``rating`` and ``timestamp`` are optional: a file without ratings is *implicit
feedback* (every row is an interaction, all relevant), a file without timestamps keeps its row
order in their place (temporal splits are then refused, see :mod:`dptune.data._split`).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.data._options import COLUMNS, _check_columns, _check_sep, _positions, parse_columns
from dptune.data._parse import _finish
from dptune.errors import check_path, input_error, plain
from dptune.vocab import FORMATS, na_values

__all__ = ["COLUMNS", "FORMATS", "parse_columns", "read_ratings"]

_ML_CSV_HEADER = ("userId", "movieId", "rating", "timestamp")

_RECBOLE_NAMES = {
    "user": "user_id",
    "item": "item_id",
    "rating": "rating",
    "timestamp": "timestamp",
}
#: Header names recognised without a ``columns`` mapping (case-insensitive, first match wins):
#: dptune's own, LensKit's and RecBole's ``user_id, item_id`` and MovieLens' ``userId, movieId``.
HEADER_NAMES = {
    "user": ("user", "user_id", "userid"),
    "item": ("item", "item_id", "itemid", "movieid"),
    "rating": ("rating",),
    "timestamp": ("timestamp",),
}
_NUMERIC_ID = r"0|[1-9][0-9]{0,17}"  # no sign, no leading zeros, fits int64
_NEGATIVE_ID = r"-[0-9]+"
_UNIT_SEP = "\x1f"  # stands in for "::" so the C parser can read ml-dat files
_OPTIONAL = ("rating", "timestamp")


def read_ratings(
    path: str | os.PathLike[str],
    fmt: str = "auto",
    columns: Mapping[str, str | int] | None = None,
    sep: str | None = None,
    header: bool | None = None,
) -> pd.DataFrame:
    """Read one ratings file into columns user, item, rating (float32), timestamp (int64).

    Ids stay the file's own (int64 when every id is a plain non-negative integer, else strings);
    rows stay in file order, duplicates included. ``fmt="auto"`` decides from the name and the
    first line; ``.gz`` files are decompressed. Bad input raises a :class:`DptuneError`.
    ``columns``, ``sep`` and ``header`` describe an own CSV (module docstring); the result's
    ``attrs`` say ``implicit`` (no rating column: every rating is 1.0) and ``timestamps``
    (False: the row order stands in for time).
    """
    check_path(path, "read_ratings", "path", "the path of a ratings file")
    p = Path(path)
    if p.is_dir():
        raise input_error(p, None, "is a directory, expected a ratings file")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise input_error(p, None, "no such file") from None
    except OSError as err:
        raise input_error(p, None, f"cannot read: {err.strerror or err}") from None
    return _read_bytes(data, p.name, str(p), fmt, columns, sep, header)


def decompressed(data: bytes, source: object) -> bytes:
    """``data`` itself, or decompressed when it is gzip's (known by its first two bytes, not
    by a file name: a ``.gz`` file may be named otherwise); a cut-short or damaged gzip file is
    one line naming ``source``. The ratings files' reader and the TREC files'
    (:mod:`dptune.store._trec`) both read through it."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        raise input_error(source, None, f"broken gzip file: {err}") from None


def _read_bytes(
    data: bytes,
    filename: str,
    source: str,
    fmt: str,
    columns: Mapping[str, str | int] | None,
    sep: str | None,
    header: bool | None = None,
) -> pd.DataFrame:
    """Parse the bytes of a ratings file named ``filename`` (``source`` labels errors)."""
    if fmt not in FORMATS:
        raise input_error(
            source, "fmt", f"unknown format {plain(fmt)} (expected one of {', '.join(FORMATS)})"
        )
    if header is not None and not isinstance(header, bool):
        raise input_error(source, "header", f"must be true or false, got {plain(header)}")
    if header is False and fmt not in ("auto", "csv"):
        raise input_error(source, "header", f"header = false applies to csv files, not {fmt}")
    sep = _check_sep(source, sep)
    columns = _check_columns(source, columns, header)
    name = filename.lower()
    data = decompressed(data, source)
    if name.endswith(".gz"):
        name = name[:-3]
    if not data.strip():
        raise input_error(source, None, "file is empty")
    if fmt == "auto":
        fmt, sep = _detect_format(data, name, source, columns, sep, header is False)
    if sep is not None and fmt not in ("csv", "ml-csv", "amazon"):
        raise input_error(
            source,
            "sep",
            f"format {fmt} has a fixed separator; sep applies to csv, ml-csv and amazon",
        )
    if fmt == "parquet":
        if header is not None:
            raise input_error(source, "header", "applies to csv files, not parquet")
        return _read_parquet(data, source, columns)
    return _read_text(data, source, fmt, columns, sep, header)


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
    data: bytes, name: str, source: str, columns: dict[str, str | int], sep: str | None,
    no_header: bool = False,
) -> tuple[str, str | None]:
    """Pick a format from the file name and its first line; ambiguous cases are errors."""
    first = _first_line(data)
    if no_header or (columns and sep is not None):  # told how to read it: an own CSV
        if sep is None:
            sep = "\t" if name.endswith(".tsv") or ("\t" in first and "," not in first) else ","
        return "csv", sep
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
                "format",
                "the file has no header, so its column order is ambiguous: give the format "
                "'amazon' (item,user,rating,timestamp), or 'csv' with columns and a header line "
                f"({_FORMAT_WHERE})",
            )
        return "csv", sep
    raise input_error(
        source,
        "format",
        f"cannot tell the format from the file name and its first line {plain(first[:60])}; give "
        f"one of {', '.join(FORMATS[1:])} ({_FORMAT_WHERE})",
    )


#: Where a reader of ratings gives their format, named in the errors that ask for it.
_FORMAT_WHERE = "data.format of an experiment, --format of dptune data, fmt= in Python"


#: Bytes of a line that pandas skips as blank when none of them is the separator.
_BLANK = b" \t\r"


def _scan_lines(data: bytes, sep: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (1-based numbers of the non-blank lines, number of ``sep``-fields on each).

    A line of only blanks (spaces, tabs, a carriage return; the separator not among them) is
    blank, as pandas reads it: a trailing line of spaces is no record. Vectorised over the
    bytes so that million-line files are checked in milliseconds.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(buf == 10) + 1))
    inside = starts[starts < len(buf)]  # a final newline opens no line of its own
    filled = np.ones(256, dtype=bool)
    filled[[b for b in _BLANK if b != ord(sep)] + [10]] = False
    # each line's bytes with its newline: never an empty segment, so reduceat sums it
    keep = np.zeros(len(starts), dtype=bool)
    fields = np.ones(len(starts), dtype=np.int64)
    if len(inside):
        keep[: len(inside)] = np.add.reduceat(filled[buf], inside, dtype=np.int64) > 0
        fields[: len(inside)] += np.add.reduceat(buf == ord(sep), inside, dtype=np.int64)
    return np.flatnonzero(keep) + 1, fields[keep]


def _scan_quoted(text: str, sep: str, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_scan_lines` for a file with quoted fields: a separator or a line break inside
    quotes (``"a,b"``) is part of the field, so the records are read by :mod:`csv` (the quoting
    rules of pandas' reader). Returns the 1-based line each non-blank record starts on, its
    number of fields, and the line it ends on (a quote left open runs to the end)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"',
                        doublequote=True, strict=False)
    blanks = "".join(chr(b) for b in _BLANK if b != ord(sep))
    starts: list[int] = []
    counts: list[int] = []
    ends: list[int] = []
    start = 1
    try:
        for row in reader:
            if row and not (len(row) == 1 and not row[0].strip(blanks)):
                starts.append(start)
                counts.append(len(row))
                ends.append(reader.line_num)
            start = reader.line_num + 1
    except csv.Error as err:  # a field beyond csv's size limit: a quote left open, mostly
        raise input_error(source, f"line {start}", f"malformed record ({err}); a quote left "
                          "open?") from None
    return (np.asarray(starts, dtype=np.int64), np.asarray(counts, dtype=np.int64),
            np.asarray(ends, dtype=np.int64))


def _check_header_names(head: list[str], resolved: dict[str, object], source: str,
                        line: int) -> None:
    """Refuse a header that names a column dptune reads twice (``user,item,user``): pandas
    would read the first and rename the second, so which one holds the users is the file's
    ambiguity, not a choice to make silently."""
    names = [h.strip() for h in head]
    for key, column in resolved.items():
        name = str(column).strip()
        where = [i + 1 for i, h in enumerate(names) if h == name]
        if len(where) > 1:
            raise input_error(source, f"line {line}", f"the header names {plain(name)} (read as "
                              f"{key}) {len(where)} times, as fields "
                              f"{' and '.join(map(str, where))}; rename all but one")


def _read_text(
    data: bytes, source: str, fmt: str, columns: dict[str, str | int], sep: str | None,
    has_header: bool | None = None,
) -> pd.DataFrame:
    """Read a delimited text format and hand the four raw columns to :func:`_finish`."""
    quoting = csv.QUOTE_NONE
    header = positional = False
    shown_sep = sep
    if fmt == "ml-dat":
        if _UNIT_SEP.encode() in data:
            raise input_error(
                source, None, "contains control character 0x1f; not a MovieLens .dat file"
            )
        # "1:::10": user "1:" and item "10", or "1" and ":10"? the file cannot say ("1::::10",
        # an even run, is two separators around an empty field, refused as a missing id)
        odd = next((m.start() for m in re.finditer(rb":{3,}", data) if len(m.group()) % 2), -1)
        if odd >= 0:
            line = data.count(b"\n", 0, odd) + 1
            raise input_error(source, f"line {line}", "':::' "
                              "cannot be split into fields separated by '::' one way only: an "
                              "id next to the separator begins or ends with ':'")
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
        positional = fmt == "csv" and has_header is False
    if len(sep) != 1 or ord(sep) > 127:
        raise input_error(source, "sep", f"must be a single ASCII character, got {plain(sep)}")
    shown_sep = {"\t": "tab", ",": "','", ";": "';'"}.get(shown_sep, repr(shown_sep))

    encoding = "utf-8"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        encoding = "latin-1"
        text = data.decode("latin-1")
    quoted = quoting != csv.QUOTE_NONE and b'"' in data
    if quoted:
        line_numbers, fields, last_lines = _scan_quoted(text, sep, source)
    else:
        line_numbers, fields = _scan_lines(data, sep)
        last_lines = line_numbers
    if len(line_numbers) == 0:
        raise input_error(source, None, "file is empty")
    expected = len(layout) if layout else int(fields[0])
    if fmt == "csv" and positional:
        header = False
        layout = _positions(source, columns, expected)
    if header and expected < 2:
        raise input_error(
            source,
            f"line {line_numbers[0]}",
            f"header has one field; expected fields separated by {shown_sep}",
        )
    bad = np.flatnonzero(fields != expected)
    if len(bad):
        i = bad[0]
        like = " like the header" if header else ""
        spans = (f"; its quoted field runs on to line {last_lines[i]}: a quote left open?"
                 if last_lines[i] > line_numbers[i] else "")
        raise input_error(
            source,
            f"line {line_numbers[i]}",
            f"expected {expected} fields separated by {shown_sep}{like}, found {fields[i]}; "
            f"wrong separator or format? (fmt={fmt}){spans}",
        )
    del text
    read = {"sep": sep, "quoting": quoting, "encoding": encoding, "engine": "c"}
    try:
        if header:
            head = pd.read_csv(io.BytesIO(data), nrows=0, **read).columns
            resolved = _resolve_columns(list(head), source, fmt, columns)
            first = int(line_numbers[0])
            _check_header_names(_header_fields(data, first, sep, quoting, encoding), resolved,
                                source, first)
            ids = {resolved["user"]: str, resolved["item"]: str}
            frame = pd.read_csv(
                io.BytesIO(data), header=0, usecols=list(set(resolved.values())), dtype=ids,
                keep_default_na=False, na_values=na_values(head, ids), **read
            )
            frame = pd.DataFrame({k: frame[c] for k, c in resolved.items()})
        else:
            ids = {"user": str, "item": str}
            frame = pd.read_csv(io.BytesIO(data), header=None, names=layout, dtype=ids,
                                keep_default_na=False, na_values=na_values(layout, ids), **read)
            frame = frame[[c for c in COLUMNS if c in frame.columns]]
    except pd.errors.ParserError as err:
        match = re.search(r"line (\d+)", str(err))
        field = f"line {match.group(1)}" if match else None
        raise input_error(
            source, field, f"malformed line (fields separated by {shown_sep}): {err}"
        ) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise input_error(source, None, f"cannot parse as {fmt}: {err}") from None

    rows_to_lines = line_numbers[1:] if header else line_numbers
    if len(rows_to_lines) != len(frame):  # a record pandas reads otherwise: count from the top
        rows_to_lines = np.arange(len(frame)) + (2 if header else 1)
    if len(frame) == 0:
        raise input_error(source, None, "has a header but no ratings")
    return _finish(frame, source, lambda i: f"line {rows_to_lines[i]}")


def _header_fields(data: bytes, line: int, sep: str, quoting: int, encoding: str) -> list[str]:
    """The fields of the header, 1-based line ``line``, as written (pandas renames a repeated
    name)."""
    first = data.split(b"\n", line)[line - 1]
    reader = csv.reader([first.decode(encoding).rstrip("\r")], delimiter=sep, quotechar='"',
                        quoting=quoting)
    row = next(reader, [])
    return [f.lstrip("\ufeff") for f in row]


def _resolve_columns(
    file_columns: list, source: str, fmt: str, columns: dict[str, str | int]
) -> dict[str, object]:
    """Map each of our four names to the file's column (recbole: the name before ':').

    With a ``columns`` mapping, rating and timestamp may be absent (left out of the result).
    """
    names: dict[str, object] = {str(c): c for c in file_columns}
    positions = {k: v for k, v in columns.items() if isinstance(v, int)}
    for key, pos in positions.items():
        if pos >= len(file_columns):
            raise input_error(source, f"columns.{key}",
                              f"position {pos} but the file has {len(file_columns)} columns")
    columns = {k: (str(file_columns[v]) if isinstance(v, int) else v) for k, v in columns.items()}
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
            if key not in columns and key not in names:
                alias = next((a for a in HEADER_NAMES[key] if a in lower), None)
                if alias is not None:
                    names[key] = lower[alias]
    resolved = {}
    for key in COLUMNS:
        col = wanted[key]
        if col not in names:
            if columns and key in _OPTIONAL and key not in columns:
                continue  # own mapping without this column: implicit feedback / no timestamps
            found = ", ".join(str(c) for c in file_columns)
            where = f"columns.{key}" if key in columns else key
            raise input_error(source, where, f"missing column {plain(col)} in the header (found: "
                              f"{found}){_columns_hint(key, fmt, columns, wanted, names)}")
        resolved[key] = names[col]
    return resolved


def _columns_hint(key: str, fmt: str, columns: dict, wanted: dict, names: dict) -> str:
    """How to say, in the experiment's TOML, which column holds ``key`` (or, for the optional
    rating and timestamp, how to read the file without it); the columns found are filled in."""
    if fmt == "recbole" or key in columns:
        return ""
    found = {k: str(names[wanted[k]]) for k in COLUMNS if k != key and wanted[k] in names}

    def toml(mapping: dict[str, str]) -> str:
        return "columns = { " + ", ".join(f'{k} = "{v}"' for k, v in mapping.items()) + " }"

    named = {k: found.get(k, "<column>") for k in COLUMNS
             if k in found or k == key or k not in _OPTIONAL}
    if key in _OPTIONAL and not columns:
        return (f"; name its column in the experiment's [data] table ({toml(named)}), or leave "
                f"it out to read the file without it ({toml(found)})")
    return f"; name it in the experiment's [data] table: {toml(named)}"


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
