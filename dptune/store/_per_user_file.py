"""Per-user tables from outside dptune: reading and validating a long per-user file (CSV or
Parquet) and its optional configurations file, for ``dptune dp --per-user FILE [--configs FILE]``.

The per-user file has one row per (configuration, fold, user, metric@N)::

    algorithm,config_id,fold,user,metric,cutoff,value
    bpr,0,0,17,ndcg,10,0.3562
    bpr,1,0,17,ndcg,10,0.2891
    bpr,0,0,23,ndcg,10,0.0
    bpr,1,0,23,ndcg,10,0.1934

Columns (:data:`PER_USER_COLUMNS`): ``user``, ``metric`` and ``value`` are required; the
configuration is named by exactly one of ``config_id`` (integer >= 0) or ``system`` (any
name); ``algorithm`` (default one algorithm ``"runs"``), ``fold`` (default one fold ``"0"``;
rows of fold ``"test"`` are not used by the DP analysis) and ``cutoff`` are optional. Without a
``cutoff`` column every metric is written ``name@N`` (``ndcg@10``). A dptune store's
``per_user.parquet`` directory is such a file.

The configurations file (optional) has ``config_id`` (or ``system``), ``algorithm`` when the
per-user file has one, and one column per hyperparameter, as a dptune store's ``configs.csv``;
it adds the per-hyperparameter scopes (``h=v``, ``only:h``) to the analysis.

Every problem is one line naming the file and the column (:func:`dptune.errors.input_error`).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.errors import did_you_mean, input_error, message_path, unexpected_type, unnamable
from dptune.vocab import METRIC_RANGES, metric_name, na_values

__all__ = ["PER_USER_COLUMNS", "ID_COLUMNS", "VALUE_MAX", "user_ids", "read_table",
           "integer_column", "read_per_user", "read_per_user_configs", "check_per_user",
           "check_configs", "check_hyperparameter_values"]

#: Every column a per-user table may have (a file of ``dptune dp --per-user``, or the frame of
#: :class:`dptune.store.FrameStore`).
#: ``config_id`` or ``system`` is required, as are ``user``, ``metric`` and ``value``.
PER_USER_COLUMNS = ("algorithm", "system", "config_id", "fold", "user", "metric", "cutoff",
                    "value")
#: The columns that name things: read from a text file as the text written there, so that
#: ``0042`` and ``42`` stay two users (two systems, two folds) and a user called ``NA`` or
#: ``null`` stays a user. Only an empty cell is missing.
ID_COLUMNS = ("algorithm", "system", "fold", "user", "metric")
#: The largest magnitude of a value: the largest 32-bit float. A result store holds its values
#: as 32-bit floats (a sweep's ``per_user.parquet``) and the bootstrap sums them as such, so a
#: larger value could not be a store's and would overflow to infinity in the analysis.
VALUE_MAX = float(np.finfo(np.float32).max)
_PARQUET = {".parquet", ".pq"}
_CSV = {".csv", ".tsv", ".txt"}


def _text_suffix(path: Path) -> str:
    """The suffix that names a file's format: ``.csv`` for ``x.csv`` and for the gzip-compressed
    ``x.csv.gz`` (a text table may be compressed, as a ratings file may; pandas decompresses it
    by its name), else the last suffix."""
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] == ".gz" and suffixes[-2] in _CSV:
        return suffixes[-2]
    return path.suffix.lower()


def read_table(path: str | Path, what: str) -> pd.DataFrame:
    """A CSV (``.csv``, ``.tsv``/``.txt`` tab-separated, each also gzip-compressed as ``.csv.gz``
    ...) or Parquet (``.parquet``, ``.pq``, or a directory of Parquet parts) file as a
    DataFrame; ``what`` names it in errors."""
    path = Path(path)
    why = unnamable(path)
    if why is not None:
        raise input_error(message_path(path), None, f"{what} not found: no file can have this "
                          f"name ({why})")
    if not path.exists():
        raise input_error(path, None, f"{what} not found")
    suffix = _text_suffix(path)
    if path.is_dir():
        return _read_parquet_dir(path, what)
    try:
        if suffix in _PARQUET:
            return pd.read_parquet(path)
        if suffix in _CSV:
            sep = "\t" if suffix != ".csv" else ","
            header = pd.read_csv(path, sep=sep, nrows=0).columns
            if len(header) == 1:  # one column named "a;b;c": another separator than the suffix's
                other = next((s for s in (";", "\t", ",", "|") if s != sep and s in header[0]),
                             None)
                if other is not None:
                    named = {";": "';'", "\t": "tab", ",": "','", "|": "'|'"}
                    raise input_error(path, None, f"one column {str(header[0])[:60]!r}: its "
                                      f"separator looks like {named[other]}, but a {suffix} "
                                      f"{what} is read {named[sep]}-separated (.csv comma, "
                                      ".tsv or .txt tab)")
            missing = na_values(header, ID_COLUMNS)
            return pd.read_csv(path, sep=sep, dtype={c: str for c in ID_COLUMNS if c in header},
                               keep_default_na=False, na_values=missing)
    except UnicodeDecodeError as err:  # its position counts from pandas's block, not the file
        if suffix not in _CSV:
            raise input_error(path, None, f"cannot read {what}: {_first_line(err)}") from None
        line, offset, byte = _first_non_utf8(path)
        of = " of the decompressed text" if path.suffix.lower() == ".gz" else ""
        raise input_error(path, f"line {line}", f"not UTF-8 text (byte 0x{byte:02x} at byte "
                          f"offset {offset:,}{of}); save the {what} as UTF-8") from None
    except (OSError, ValueError, ImportError) as err:
        raise input_error(path, None, f"cannot read {what}: {_first_line(err)}") from None
    raise input_error(path, None, f"{what}: unknown format {suffix or '(no suffix)'!r} "
                      f"(expected .csv, .tsv, each maybe .gz, .parquet or a directory of "
                      "Parquet parts)")


def _first_line(err: BaseException) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _read_parquet_dir(path: Path, what: str) -> pd.DataFrame:
    """A directory read as a table: its Parquet parts (a dptune store's ``per_user.parquet``).
    A directory of none (empty, or the wrong folder) read as a table of no column, refused
    as missing the first column looked for; it is refused here as what it is."""
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError, ImportError) as err:
        raise input_error(path, None, f"is a directory, read as the Parquet parts of a {what}, "
                          f"and cannot be: {_first_line(err)}") from None
    if len(table.columns) == 0:
        raise input_error(path, None, f"is a directory holding no Parquet parts; give the "
                          f"{what} (.csv, .tsv, each maybe .gz, .parquet) or a directory of "
                          "its Parquet parts")
    return table


def _first_non_utf8(path: Path) -> tuple[int, int, int]:
    """(1-based line, 0-based byte offset, the byte) of the first byte of a text file (after
    decompression, for ``.gz``) that is not UTF-8: pandas's error counts from the start of the
    block it was decoding, which names no place in the file. Read in blocks, once, and only
    when pandas refused the file."""
    import codecs
    import gzip

    decoder = codecs.getincrementaldecoder("utf-8")()
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    done, lines = 0, 1
    with opener(path, "rb") as f:
        while block := f.read(1 << 20):
            held = decoder.getstate()[0]  # the start of a character cut by the last block
            try:
                decoder.decode(block)
            except UnicodeDecodeError as err:
                data = held + block
                return (lines + data[:err.start].count(b"\n"), done - len(held) + err.start,
                        data[err.start])
            done, lines = done + len(block), lines + block.count(b"\n")
    held = decoder.getstate()[0]  # a character cut by the end of the file
    return lines, done - len(held), held[0] if held else 0


def user_ids(values: pd.Series) -> pd.Series:
    """User ids as their text (``str``), so that two ids are the same user only when they are
    written the same: ``0042`` and ``42`` are two users, as in ``dptune data info`` and
    ``dptune evaluate``. An integer column (a Parquet file's, a DataFrame's, a dptune store's
    user codes) has no written form to lose and is kept as it is."""
    return values if values.dtype.kind in "iu" else values.astype(str)


def _shown(value: object) -> str:
    """A cell as a user wrote it: ``nan``, ``1.5``, ``'abc'`` (a numpy scalar as its Python
    value, so that a message never shows ``np.float64(nan)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _where(path: str | Path, i: int) -> str:
    """Row ``i`` (0-based, of the table) as a user finds it: the 1-based line of a text file
    as an editor shows it (the header is line 1), the 1-based row of a Parquet file, the
    0-based position of an in-memory table (``path`` is then its name, a ``str``)."""
    if not isinstance(path, Path):
        return f"row {i}"
    text = _text_suffix(path) in _CSV and not path.is_dir()
    return f"line {i + 2}" if text else f"row {i + 1}"


def _numbers(values: pd.Series) -> pd.Series:
    """``values`` as numbers, NaN where a cell is none (:func:`pandas.to_numeric` with
    ``errors="coerce"``); a Python integer too large for a float (a DataFrame's ``10**400``,
    which pandas cannot convert) becomes the largest float of its sign, so that the callers
    refuse it as out of range (not as an infinity, which it is not)."""
    try:
        return pd.to_numeric(values, errors="coerce")
    except OverflowError:
        def number(x: object) -> float:
            try:
                return float(x)  # type: ignore[arg-type]
            except OverflowError:
                top = float(np.finfo(np.float64).max)
                return top if x > 0 else -top  # type: ignore[operator]
            except (TypeError, ValueError):
                return np.nan
        return values.map(number).astype(np.float64)


def integer_column(path: str | Path, df: pd.DataFrame, col: str, low: int) -> pd.Series:
    """Column ``col`` of the table read from ``path`` as int64, every value a finite integer
    >= ``low`` (and below 2^62); a value that is not one (text, a blank, 2.5) is one line
    naming the file, the column, the line or row (:func:`_where`) and the value."""
    v = _numbers(df[col])
    with np.errstate(invalid="ignore"):
        bad = v.isna() | ~np.isfinite(v.astype(float)) | (v != np.floor(v)) | (v < low) \
            | (v.astype(float).abs() >= 2.0**62)
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        raise input_error(path, col, f"must hold integers >= {low}; {_where(path, i)} "
                          f"has {_shown(df[col].iloc[i])}")
    return v.astype(np.int64)


def _distinct(values: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """``(codes, distinct)`` with ``distinct.take(codes)`` the values of ``values`` (a missing
    value is a distinct value of its own). A column of millions of rows names a few metrics:
    a step that runs Python per value (a name looked up, a split at ``@``) runs once per
    distinct value and is spread back by the codes (:func:`_spread`), not once per row."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes, pd.Series(uniques, dtype=values.dtype)


def _spread(distinct: pd.Series, codes: np.ndarray, index: pd.Index) -> pd.Series:
    """The per-row values of a result computed per distinct value (:func:`_distinct`), on the
    rows' ``index``."""
    out = distinct.take(codes)
    out.index = index
    return out


def _split_metric(path: str | Path, metric: pd.Series) -> tuple[pd.Series, pd.Series]:
    """``name@N`` into (name, N) when the file has no ``cutoff`` column: one ``@``, a name
    before it (checked by the caller) and a positive integer N after it. A second ``@``
    (``ndcg@10@5``) is refused here, naming the row: the analysis knows a metric by a name
    without ``@`` and would otherwise blame its own option. Split once per distinct name
    (:func:`_distinct`); a refused value is named by the first row holding it."""
    codes, distinct = _distinct(metric)
    parts = distinct.str.rsplit("@", n=1, expand=True)

    def first(bad: pd.Series) -> int:  # the first row whose distinct value is bad
        return int(np.argmax(bad.to_numpy(dtype=bool)[codes]))

    if parts.shape[1] != 2 or parts[1].isna().any():
        i = 0 if parts.shape[1] != 2 else first(parts[1].isna())
        raise input_error(path, "metric", "without a cutoff column every metric must be written "
                          f"name@N (e.g. ndcg@10); {_where(path, i)} has {_shown(metric.iloc[i])}")
    cut = _numbers(parts[1])
    with np.errstate(invalid="ignore"):
        bad = cut.isna() | (cut != np.floor(cut)) | (cut < 1) | (cut >= 2.0**62)
    if bad.any():
        i = first(bad)
        raise input_error(path, "metric", "the N of name@N must be a positive integer; "
                          f"{_where(path, i)} has {_shown(metric.iloc[i])}")
    twice = parts[0].str.contains("@", regex=False)
    if twice.any():
        i = first(twice)
        raise input_error(path, "metric", f"{_where(path, i)} has {_shown(metric.iloc[i])}, more "
                          "than one @: write each metric name@N (e.g. ndcg@10)")
    return (_spread(parts[0], codes, metric.index),
            _spread(cut.astype(np.int64), codes, metric.index))


def _normal_name(name: str) -> str:
    """A column's name as dptune would spell it: lower case, no blanks around it, a blank or a
    hyphen inside it an underscore (``' User'``, ``'SYSTEM'``, ``'Config ID'``)."""
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def _unknown_hint(col: str, cols: list[str]) -> str:
    """What an unknown column of a per-user table probably is, for its error: an index written
    into a CSV file (``Unnamed: 0``: pandas's name for a column without a header), or a column
    of :data:`PER_USER_COLUMNS` written in other case or with blanks (``SYSTEM``, ``' user'``:
    names are matched as written); else the allowed columns."""
    if re.fullmatch(r"Unnamed: \d+", col):
        return (" (pandas's name for a column without a header: the index a table was "
                "written with; write it with to_csv(..., index=False), or drop the column)")
    near = _normal_name(col)
    if near in PER_USER_COLUMNS and near not in cols:
        return (did_you_mean(near, PER_USER_COLUMNS)[:-1] + " column names are matched as "
                "written: lower case, without blanks)")
    return f" (allowed: {', '.join(PER_USER_COLUMNS)})"


def _index_hint(df: pd.DataFrame, col: str, path: str | Path) -> str:
    """For a required column ``col`` a table lacks: `` (the table has it as its index, and only
    its columns are read: call reset_index() first)`` when the table's index (a level of its
    MultiIndex) is named ``col`` (or spells it otherwise, in another case), as after
    ``set_index`` or ``groupby``; for a file, how to write it so. Empty otherwise."""
    names = [str(n) for n in df.index.names if n is not None]
    named = [n for n in names if _normal_name(n) == col]
    if not named:
        return ""
    level = "a level of its MultiIndex" if df.index.nlevels > 1 else "its index"
    shown = "" if named[0] == col else f" as {named[0]!r}"
    fix = ("call reset_index() first" if not isinstance(path, Path)
           else "write the file from table.reset_index()")
    return (f" (the table has it{shown} as {level}, and only its columns are read: "
            f"{fix})")


def read_per_user(path: str | Path) -> pd.DataFrame:
    """Read and validate a per-user file (:func:`check_per_user`)."""
    return check_per_user(read_table(path, "per-user file"), Path(path))


def check_per_user(table: pd.DataFrame, path: str | Path = "per_user") -> pd.DataFrame:
    """Validate a per-user table (read from a file, or a DataFrame given in Python); returns
    columns ``algorithm, config_id | system, fold, user, metric, cutoff, value`` (defaults
    filled in, types normalised: fold and metric str, cutoff int64, value float64). ``path``
    names the table in errors.

    Checked: known columns only (a name in other case or with blanks, ``SYSTEM``, or a CSV
    file's written index, ``Unnamed: 0``, is named so: :func:`_unknown_hint`); ``user``,
    ``metric``, ``value`` present (as columns: one in the index is named so,
    :func:`_index_hint`); exactly one of
    ``config_id``, ``system``; no empty cell in a key column; integer ``config_id >= 0`` and
    ``cutoff >= 1``; a metric name (not empty, without ``@`` once its cutoff is split off);
    finite real (not complex) numeric ``value`` of magnitude at most :data:`VALUE_MAX`, and within its metric's
    range for dptune's metrics (:func:`_check_ranges`); no duplicated (algorithm,
    configuration, fold, user, metric, cutoff); some algorithm with two configurations (DP
    compares pairs; an algorithm with one is reported without DP, as in a sweep); every
    configuration with values on every validation fold (:func:`_check_complete`).
    """
    if not isinstance(table, pd.DataFrame):
        raise input_error(path, None, f"expected a pandas DataFrame, got {unexpected_type(table)}")
    df = table.copy()
    cols = [str(c) for c in df.columns]
    twice = sorted(c for c, n in Counter(cols).items() if n > 1)  # one pass: a wide table
    if twice:
        raise input_error(path, twice[0], "duplicated column: each column once")
    df.columns = cols
    unknown = [c for c in cols if c not in PER_USER_COLUMNS]
    if unknown:
        raise input_error(path, unknown[0], "unknown column" + _unknown_hint(unknown[0], cols))
    for col in ("user", "metric", "value"):
        if col not in cols:
            raise input_error(path, col, "missing column" + _index_hint(df, col, path))
    if ("config_id" in cols) == ("system" in cols):
        hint = "" if "system" in cols else (_index_hint(df, "system", path)
                                            or _index_hint(df, "config_id", path))
        raise input_error(path, "config_id", "give exactly one of the columns config_id and "
                          f"system{hint}")
    if df.empty:
        raise input_error(path, None, "no rows")
    key = "config_id" if "config_id" in cols else "system"
    for col in [c for c in ("algorithm", key, "fold", "user", "metric", "cutoff") if c in cols]:
        if df[col].isna().any():
            i = int(np.argmax(df[col].isna().to_numpy()))
            raise input_error(path, col, f"empty value in {_where(path, i)}")
    out = pd.DataFrame({"algorithm": df["algorithm"].astype(str) if "algorithm" in cols else "runs"},
                       index=df.index)
    out[key] = integer_column(path, df, key, 0) if key == "config_id" else df[key].astype(str)
    out["fold"] = df["fold"].astype(str) if "fold" in cols else "0"
    like_test = (out["fold"].str.strip().str.lower() == "test") & (out["fold"] != "test")
    if like_test.any():  # "TEST" would be read as a validation fold, its values in every DP
        i = int(np.argmax(like_test.to_numpy()))
        raise input_error(path, "fold", f"{_where(path, i)} has {_shown(out['fold'].iloc[i])}: "
                          "the held-out test split is the fold named test, in lower case; "
                          "name a validation fold otherwise")
    if len(out) and (out["fold"] == "test").all():  # the analysis said "store: runs: folds"
        raise input_error(path, "fold", "every row is of the test split (fold test): DP is "
                          "measured on validation folds; name the folds the configurations "
                          "were chosen on (e.g. 0, 1, ...)")
    out["user"] = user_ids(df["user"])
    metric = df["metric"].astype(str)
    if "cutoff" in cols:
        at = metric.str.contains("@", regex=False)
        if at.any():
            i = int(np.argmax(at.to_numpy()))
            raise input_error(path, "metric", f"{_where(path, i)} has {_shown(metric.iloc[i])}, a "
                              "cutoff written into the name while the cutoff column gives one: "
                              "write the name alone (e.g. ndcg), or leave out the cutoff column")
        out["metric"], out["cutoff"] = metric, integer_column(path, df, "cutoff", 1)
    else:
        out["metric"], out["cutoff"] = _split_metric(path, metric)
    # nDCG, NDCG and ndcg are one metric, the vocabulary's (whose family it is in)
    codes, names = _distinct(out["metric"])  # once per distinct name, not per row
    out["metric"] = _spread(names.map(metric_name), codes, out.index)
    nameless = (out["metric"] == "").to_numpy()
    if nameless.any():  # "@10", " ": the analysis would blame its primary_metric option
        i = int(np.argmax(nameless))
        raise input_error(path, "metric", f"{_where(path, i)} has {_shown(metric.iloc[i])}, "
                          "which has no metric name")
    if df["value"].dtype.kind in "mM":  # a time read as its nanoseconds is no metric value
        raise input_error(path, "value", f"must hold numbers, not {df['value'].dtype} values")
    value = _numbers(df["value"])
    if df["value"].dtype.kind == "c" or value.dtype.kind == "c":  # else cast to real, a warning
        complex_ = df["value"].map(lambda x: isinstance(x, (complex, np.complexfloating)))
        i = int(np.argmax(complex_.to_numpy(dtype=bool)))
        raise input_error(path, "value", f"must hold real numbers, not complex ones; "
                          f"{_where(path, i)} has {_shown(df['value'].iloc[i])}")
    number = value.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(number)
    if bad.any():
        i = int(np.argmax(bad))
        cell = df["value"].iloc[i]
        has = ("has no value (an empty cell, or NA)" if pd.isna(cell) and isinstance(path, Path)
               else f"has {_shown(cell)}")
        raise input_error(path, "value", f"must hold finite numbers; {_where(path, i)} {has}")
    big = np.abs(number) > VALUE_MAX
    if big.any():
        i = int(np.argmax(big))
        raise input_error(path, "value", f"{_where(path, i)} has {_shown(df['value'].iloc[i])}, "
                          f"beyond the 32-bit floats a result store holds values in (magnitude at "
                          f"most {VALUE_MAX:.7g})")
    out["value"] = value.astype(np.float64)
    _check_ranges(path, out, df["value"])
    keys = ["algorithm", key, "fold", "user", "metric", "cutoff"]
    dup = out.duplicated(keys, keep=False).to_numpy()
    if dup.any():  # name both rows and only the columns the table has (no fold: one fold)
        first = int(np.argmax(dup))
        same = np.flatnonzero(dup & (out[keys] == out[keys].iloc[first]).all(axis=1).to_numpy())
        shown = [k for k in keys if k in cols or (k == "cutoff" and "cutoff" not in cols)]
        what = ", ".join(f"{k}={out[k].iloc[first]}" for k in shown)
        whole = "" if "fold" in cols else " (without a fold column the table is one fold)"
        raise input_error(path, None, f"{_where(path, int(same[0]))} and "
                          f"{_where(path, int(same[1]))} are the same row, {what}: one value per "
                          f"configuration, fold, user and metric@N{whole}")
    n_cfg = out.groupby("algorithm", sort=False)[key].nunique()
    if (n_cfg < 2).all():
        raise input_error(path, key, "no algorithm has two configurations; DP compares pairs of "
                          "configurations")
    _check_complete(path, out, key)
    return out.reset_index(drop=True)


#: How far a value may stray beyond its metric's range (:data:`dptune.vocab.METRIC_RANGES`) and
#: still be read as on its edge: the rounding of a value computed in 32-bit floats (an nDCG of
#: 1.0000001).
RANGE_SLACK = 1e-6


def _check_ranges(path: str | Path, out: pd.DataFrame, cells: pd.Series) -> None:
    """Every value of one of dptune's metrics lies in that metric's range
    (:data:`dptune.vocab.METRIC_RANGES`, give or take :data:`RANGE_SLACK`): an nDCG of -0.5
    or a Precision of 3 is another quantity under the metric's name, and its DP would be
    reported as the metric's. A metric dptune does not define (``hr``, ``map``) may take any
    value. One line naming the row, its metric and the range."""
    codes, distinct = _distinct(out["metric"])  # each row's range by its name's code
    names = distinct.tolist()
    unbounded = (-np.inf, np.inf)  # a metric dptune does not define
    low, high = np.array([METRIC_RANGES.get(n, unbounded) for n in names],
                         dtype=np.float64).reshape(len(names), 2).T
    value = out["value"].to_numpy()
    bad = (value < low[codes] - RANGE_SLACK) | (value > high[codes] + RANGE_SLACK)
    if bad.any():
        i = int(np.argmax(bad))
        name = names[codes[i]]
        low, high = METRIC_RANGES[name]
        span = f"lie in [{low:g}, {high:g}]" if np.isfinite(high) else f"are >= {low:g}"
        raise input_error(path, "value", f"{_where(path, i)} has {_shown(cells.iloc[i])} for "
                          f"{name}, whose per-user values {span}: a value outside is "
                          "another quantity under the metric's name (name it otherwise, e.g. "
                          f"{name}_diff, to analyse it as an outside metric)")


def _check_complete(path: str | Path, out: pd.DataFrame, key: str) -> None:
    """Every configuration of an algorithm has values of every metric@N on every validation
    fold of that algorithm (some users may lack values: the report says how many users its
    pairs compare). Otherwise the pairs of a metric@N on a fold would compare no user; the line
    names what is missing, and where, as a fold's or a configuration's.

    The fold ``test`` (the held-out test split) is not checked: DP never reads it, and a sweep
    evaluates only some configurations on it (its store's ``per_user.parquet`` holds just
    those), so requiring every configuration there would refuse a store's own export."""
    cells = ["fold", "metric", "cutoff"]
    have = out[["algorithm", key, *cells]].drop_duplicates()
    for alg, every in have.groupby("algorithm", sort=False):
        a = every[every["fold"] != "test"]
        folds = a["fold"].drop_duplicates()
        mcs = a[["metric", "cutoff"]].drop_duplicates()
        configs = every[key].drop_duplicates()
        if len(a) == len(folds) * len(mcs) * len(configs):
            continue
        where = f"algorithm {alg}: " if alg != "runs" else ""
        full = folds.to_frame().merge(mcs, how="cross")
        on_fold = a[cells].drop_duplicates()
        gap = full.merge(on_fold, how="left", indicator=True)
        gap = gap[gap["_merge"] == "left_only"]
        if len(gap):
            g = gap.iloc[0]
            other = on_fold[(on_fold["metric"] == g["metric"]) & (on_fold["cutoff"] == g["cutoff"])]
            raise input_error(path, "fold", f"{where}fold {g['fold']} has no value of "
                              f"{g['metric']}@{int(g['cutoff'])}, which fold "
                              f"{other['fold'].iloc[0]} has: every fold needs the same "
                              "metric@Ns")
        grid = configs.to_frame().merge(full, how="cross")
        gap = grid.merge(a, how="left", indicator=True)
        g = gap[gap["_merge"] == "left_only"].iloc[0]
        raise input_error(path, key, f"{where}{key} {g[key]} has no value of {g['metric']}@"
                          f"{int(g['cutoff'])} on fold {g['fold']}, which the other "
                          "configurations have: every configuration needs every metric@N on "
                          "every fold")


def check_hyperparameter_values(path: str | Path, configs: pd.DataFrame, key: str,
                                hps: list[str], rows: np.ndarray | None = None) -> None:
    """Each hyperparameter of ``hps`` has a value for every configuration of an algorithm
    or for none of them (then the algorithm does not use it, as a store's ``configs.csv``
    leaves the columns of other algorithms' hyperparameters empty). ``configs`` has columns
    ``algorithm``, ``key`` and ``hps``; ``rows`` (default: the positions) is the row of the
    table, 0-based, each of its rows was read from, for the message (:func:`_where`).

    A configuration without a value of a hyperparameter its algorithm uses would be left out
    of that hyperparameter's scopes (``h=v``) without a word, and the importance (optuna's
    fANOVA) fails on the missing value; refused instead, one line naming ``path``, the row
    and the column. So is a number that is infinite or beyond float32's range (``inf``,
    ``1e39``): no grid holds it, and the importance's forest, which reads values as float32,
    failed on it with a traceback after the whole analysis."""
    rows = np.arange(len(configs)) if rows is None else np.asarray(rows)
    algs = configs["algorithm"].to_numpy()
    for h in hps:
        number = pd.to_numeric(configs[h], errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            huge = np.abs(number) > VALUE_MAX  # an infinity too; NaN (a string, empty) not
        if huge.any():
            i = int(np.argmax(huge))
            raise input_error(path, h, f"{_where(path, int(rows[i]))} has the value "
                              f"{configs[h].iloc[i]} (configuration {algs[i]}/"
                              f"{configs[key].iloc[i]}): a hyperparameter's number must be "
                              f"finite and within +-{VALUE_MAX:.4g}")
        empty = configs[h].isna().to_numpy()
        uses = set(pd.unique(algs[~empty]))
        gap = empty & np.isin(algs, list(uses))
        if gap.any():
            i = int(np.argmax(gap))
            alg, cid = algs[i], configs[key].iloc[i]
            raise input_error(path, h, f"{_where(path, int(rows[i]))} has no value (configuration "
                              f"{alg}/{cid}), while other configurations of {alg} have one: give "
                              "every configuration of an algorithm a value of each "
                              "hyperparameter the algorithm uses")


def _check_distinct(path: str | Path, configs: pd.DataFrame, key: str, hps: list[str],
                    rows: np.ndarray) -> None:
    """No two configurations of an algorithm with the same value of every hyperparameter: the
    analysis reads a configuration as a point of the grid, so such a pair would be counted in
    a hyperparameter-value scope as differing "in the other hyperparameters" while it differs
    in none, and no one-at-a-time scope could hold it. One line naming ``path``, the row
    (``rows``: each row's, as :func:`check_hyperparameter_values` takes them) and both
    configurations."""
    same = configs.duplicated(["algorithm", *hps])
    if not same.any():
        return
    i = int(np.argmax(same.to_numpy()))
    row = configs.iloc[i]
    first = configs[(configs["algorithm"] == row["algorithm"])
                    & (configs[hps].eq(row[hps]) | (configs[hps].isna() & row[hps].isna()))
                    .all(axis=1)].iloc[0]
    values = ", ".join(f"{h}={row[h]}" for h in hps if not pd.isna(row[h]))
    raise input_error(path, key, f"{_where(path, int(rows[i]))}: configuration "
                      f"{row['algorithm']}/{row[key]} has the hyperparameters of configuration "
                      f"{row['algorithm']}/{first[key]} ({values}); two configurations must "
                      "differ in some hyperparameter (a pair of them differs in none)")


def read_per_user_configs(path: str | Path, per_user: pd.DataFrame) -> pd.DataFrame:
    """Read and validate the configurations file given with a per-user table (``dptune dp
    --per-user FILE --configs FILE``) for ``per_user`` (as returned by :func:`read_per_user`):
    ``algorithm, config_id | system`` and one column per hyperparameter. A result store's own
    ``configs.csv`` is read by :func:`dptune.store._files.read_configs`.

    Checked: the configuration column of the per-user file present (and ``algorithm`` when the
    per-user file has more than the default algorithm); at least one hyperparameter column, none
    named as a per-user column (:data:`PER_USER_COLUMNS`: the two tables are joined); no
    duplicated configuration; every configuration of the per-user file described, with a value
    of each hyperparameter its algorithm uses (:func:`check_hyperparameter_values`). Rows of other
    configurations are dropped; the rest keep the file's order (which gives the algorithms'
    order in the reports, as a store's ``configs.csv`` gives the experiment's).
    """
    return check_configs(read_table(path, "configurations file"), per_user, Path(path))


def check_configs(table: pd.DataFrame, per_user: pd.DataFrame,
                  path: str | Path = "configs") -> pd.DataFrame:
    """Validate a configurations table for ``per_user`` (see :func:`read_per_user_configs`);
    ``path`` names it in errors."""
    df = table.copy()
    df.columns = [str(c) for c in df.columns]
    key = "config_id" if "config_id" in per_user.columns else "system"
    if key not in df.columns:
        raise input_error(path, key, "missing column (the per-user file names configurations by it)")
    algs = per_user["algorithm"].drop_duplicates().tolist()  # first-appearance order
    if "algorithm" not in df.columns:
        if algs != ["runs"]:
            raise input_error(path, "algorithm", "missing column (the per-user file has one)")
        df.insert(0, "algorithm", "runs")
    hps = [c for c in df.columns if c not in ("algorithm", "config_id", "system")]
    if not hps:
        raise input_error(path, None, "no hyperparameter column (expected algorithm, "
                          f"{key} and one column per hyperparameter)")
    reserved = [c for c in hps if c in PER_USER_COLUMNS]
    if reserved:
        raise input_error(path, reserved[0], "reserved column name: it is a column of the "
                          "per-user table, which the configurations are joined to; rename the "
                          "hyperparameter")
    for col in ("algorithm", key):
        if df[col].isna().any():
            i = int(np.argmax(df[col].isna().to_numpy()))
            raise input_error(path, col, f"empty value in {_where(path, i)}")
    df["algorithm"] = df["algorithm"].astype(str)
    df[key] = integer_column(path, df, key, 0) if key == "config_id" else df[key].astype(str)
    dup = df.duplicated(["algorithm", key])
    if dup.any():
        row = df[dup].iloc[0]
        raise input_error(path, key, f"duplicated configuration {row['algorithm']}/{row[key]}")
    used = per_user[["algorithm", key]].drop_duplicates()
    have = used.merge(df[["algorithm", key]], how="left", indicator=True)
    missing = have[have["_merge"] == "left_only"]
    if len(missing):
        row = missing.iloc[0]
        raise input_error(path, key, f"no row for configuration {row['algorithm']}/{row[key]} "
                          f"of the per-user file")
    described = pd.MultiIndex.from_frame(df[["algorithm", key]]).isin(
        pd.MultiIndex.from_frame(used))
    mine, rows = df[described], np.flatnonzero(described)
    check_hyperparameter_values(path, mine, key, hps, rows)
    _check_distinct(path, mine, key, hps, rows)
    df = df.merge(used, on=["algorithm", key], how="inner")  # keeps the file's row order
    return df[["algorithm", key, *hps]].reset_index(drop=True)
