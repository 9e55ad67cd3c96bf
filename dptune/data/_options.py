"""How to read an own file: the ``columns`` mapping, the separator and the header switch.

``columns`` maps dptune's names (user, item, rating, timestamp) to the file's column names, or to
0-based positions when the file has no header line (``header = false``); ``sep`` is one ASCII
character (or a name: tab, comma, semicolon, space, pipe). Every bad value is one error naming
the file and the field (``columns.<key>``, ``sep``, ``header``; prefixed ``data.`` in an
experiment file).
"""

from __future__ import annotations

from collections.abc import Mapping

from dptune.errors import INT_MAX, input_error, plain

__all__ = ["COLUMNS", "parse_columns"]

COLUMNS = ("user", "item", "rating", "timestamp")
_SEP_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " ", "pipe": "|"}


def _check_sep(source: str, sep: object, prefix: str = "") -> str | None:
    """A single ASCII separator character (names: tab, comma, semicolon, space, pipe)."""
    if sep is None:
        return None
    if isinstance(sep, str):
        sep = _SEP_NAMES.get(sep.lower(), sep)
    if not isinstance(sep, str) or len(sep) != 1 or ord(sep) > 127 or sep in "\"\r\n":
        raise input_error(source, f"{prefix}sep", f"must be a single ASCII character or one of "
                          f"{', '.join(_SEP_NAMES)}, got {plain(sep)}")
    return sep


def _check_columns(
    source: str, columns: Mapping[str, str | int] | None, header: bool | None = None,
    prefix: str = "",
) -> dict[str, str | int]:
    """Validate a ``columns`` mapping (our name -> the file's column name or 0-based position).

    ``prefix`` goes before the field names in errors (``data.`` in an experiment file).
    """
    if columns is None:
        return {}
    field = f"{prefix}columns"
    if not isinstance(columns, Mapping):
        raise input_error(source, field, "must map user/item/rating/timestamp to the file's "
                          f"column names, got {plain(columns)}")
    out: dict[str, str | int] = {}
    for key, value in columns.items():
        if key not in COLUMNS:
            raise input_error(source, f"{field}.{key}",
                              f"unknown key (expected {', '.join(COLUMNS)})")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_MAX:
            pass
        elif header is False:
            raise input_error(source, f"{field}.{key}", "the file has no header (header = "
                              f"false): give a 0-based column position, got {plain(value)}")
        elif not isinstance(value, str) or not value.strip():
            raise input_error(source, f"{field}.{key}",
                              f"must be a column name or a 0-based position, got {plain(value)}")
        if value in out.values():
            other = next(k for k, v in out.items() if v == value)
            raise input_error(source, f"{field}.{key}", f"{plain(value)} is already "
                              f"{field}.{other}")
        out[key] = value
    return out


def parse_columns(text: str, source: str = "--columns") -> dict[str, str | int]:
    """``"user=u,item=i,rating=r"`` (command line) as a mapping; digits give a position."""
    if not isinstance(text, str):
        raise input_error(source, None, "needs the columns as text, such as "
                          f"'user=u,item=i,rating=r', got {type(text).__name__}")
    out: dict[str, str | int] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise input_error(source, part.strip() or None,
                              "expected comma-separated key=column pairs, e.g. user=u,item=i")
        if key in out:
            raise input_error(source, key, "given twice")
        out[key] = int(value) if value.isdigit() else value
    return out


def _positions(source: str, columns: dict[str, str | int], n_fields: int) -> list[str]:
    """Names of the fields of a header-less CSV (``_`` + position for unused ones).

    Without ``columns`` the fields are user, item[, rating[, timestamp]] in that order.
    """
    if not columns:
        if not 2 <= n_fields <= len(COLUMNS):
            raise input_error(source, "columns", f"the file has {n_fields} fields per line and no "
                              "header: give their positions, e.g. columns = {user = 0, item = 1}")
        return list(COLUMNS[:n_fields])
    for key in ("user", "item"):
        if key not in columns:
            raise input_error(source, f"columns.{key}", "required (the 0-based position of the "
                              "field) when the file has no header")
    names = [f"_{i}" for i in range(n_fields)]
    for key, pos in columns.items():
        if int(pos) >= n_fields:
            raise input_error(source, f"columns.{key}",
                              f"position {pos} but the lines have {n_fields} fields")
        names[int(pos)] = key
    return names
