"""User-facing errors: one clear line naming the file and field, exit code 2."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

#: The largest integer that any count or integer setting of dptune takes: int64's. A results
#: store keeps integers as int64 columns and JSON numbers, and every count is compared with
#: and stored beside numpy's int64 values. For a model's integer hyperparameter (``k``,
#: ``factors``, an outside model's ``int`` argument) a larger value (``k = 1e300``,
#: ``k = 10**20``) turned the whole column into floats (``5`` written as ``5.0``); for an
#: analysis count (``pairs``, ``min_fold_users``) one of thousands of digits could not be
#: written into the report at all. Either is a typo far more often than a plan.
INT_MAX = 2**63 - 1


class DptuneError(Exception):
    """Bad input or configuration; the CLI prints ``str(err)`` on one line and exits with 2.

    Build the message with :func:`input_error` so it always names where the problem is.
    """

    exit_code = 2


def input_error(source: object, field: str | None, problem: str) -> DptuneError:
    """Return a :class:`DptuneError` reading ``<source>: <field>: <problem>``.

    ``source`` is a file path (or a label such as ``"--cutoffs"``), ``field`` the column, key or
    line (``"line 17"``) at fault, or ``None`` when the whole source is at fault.
    """
    where = f"{source}: {field}" if field else f"{source}"
    return DptuneError(f"{where}: {problem}")


def did_you_mean(key: str, allowed: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` with the closest of ``allowed`` to ``key`` (difflib's ratio of
    at least 0.6), or ``""`` when none is close."""
    import difflib

    near = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def suggest(key: str, allowed: Sequence[str]) -> str:
    """:func:`did_you_mean`, else `` (allowed: a, b, ...)``: the hint of an unknown key."""
    return did_you_mean(key, allowed) or f" (allowed: {', '.join(allowed)})"


def unexpected_type(value: object) -> str:
    """How an error names the type of an argument it cannot take, after ``got``: a builtin
    type by its name (``str``, ``NoneType``), any other by its top-level module and name
    (``polars.DataFrame``, ``pyarrow.Table``, ``numpy.ndarray``: a polars ``DataFrame`` is not
    pandas'), followed by ``; convert it with .to_pandas()`` when the object has that method
    (a polars DataFrame, a pyarrow Table)."""
    kind = type(value)
    module = str(kind.__module__ or "builtins").split(".")[0]
    name = kind.__name__ if module == "builtins" else f"{module}.{kind.__name__}"
    hint = ("; convert it with .to_pandas()" if callable(getattr(value, "to_pandas", None))
            else "")
    return f"{name}{hint}"


def first_few(names: Sequence[object], most: int) -> str:
    """``a, b, c and 2 more``: the first ``most`` of ``names``, and how many are left out; the
    one way a message lists ids, files or users."""
    shown = ", ".join(str(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


#: Most digits of an integer :func:`plain` spells out; a longer one is named by its size.
SPELT_DIGITS = 100


def plain(value: object) -> str:
    """``value`` as a message shows it: Python's ``repr`` of the value, numpy scalars first
    turned into Python numbers (``inf``, ``3``, ``0.5``, not ``np.float64(inf)``), text
    quoted (``'abc'``), an integer of more than :data:`SPELT_DIGITS` digits by its size
    (``an integer of 401 digits``), and a container whose ``repr`` Python refuses (it holds
    an integer of more than 4,300 digits) by its type (``a list holding an integer of more
    digits than Python spells out``)."""
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = item()
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**SPELT_DIGITS:
        # by its size: hundreds of digits are no message, and Python refuses to spell out an
        # integer of more than 4,300 (repr raises ValueError)
        return f"{'a negative' if value < 0 else 'an'} integer of {_digits(value):,} digits"
    try:
        return repr(value)
    except ValueError:  # Python's limit on integer-to-text conversion, inside a container
        return f"a {type(value).__name__} holding an integer of more digits than Python spells out"


def _digits(value: int) -> int:
    """The number of decimal digits of ``abs(value)``, without spelling it out."""
    import math

    n = abs(value)
    digits = int((n.bit_length() - 1) * math.log10(2)) + 1
    return digits + 1 if n >= 10**digits else digits


def is_finite(value: object) -> bool:
    """Whether the number ``value`` is finite as a float: an integer beyond a float's range
    (``1e400`` written as 401 digits) is not, where :func:`math.isfinite` and ``float()``
    raise ``OverflowError``; a value that is no number is not either."""
    import math

    try:
        return math.isfinite(value)  # type: ignore[arg-type]
    except (OverflowError, TypeError, ValueError):
        return False


def check_int(value: object, source: object, field: str | None, minimum: int,
              maximum: int | None = None) -> int:
    """``value`` as an ``int`` when it is an integer (Python or numpy, not a bool) ``>= minimum``
    (and ``<= maximum`` when given); else the one-line error ``<source>: <field>: must be an
    integer >= <minimum>, got <value>`` (``from <minimum> to <maximum>`` with a maximum)."""
    import numbers

    bad = isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum
    if not bad and maximum is not None and value > maximum:
        bad = True
    if bad:
        want = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum:,}"
        raise input_error(source, field, f"must be an integer {want}, got {plain(value)}")
    return int(value)


def check_int64(value: int, source: object, field: str | None) -> int:
    """``value`` (an integer already checked for its kind and lower bound) when it is at most
    :data:`INT_MAX`; else the one-line error ``<source>: <field>: must be an integer of at most
    9,223,372,036,854,775,807 (int64's largest), got <value>``, the one bound of every count
    that has no bound of its own."""
    if value > INT_MAX:
        raise input_error(source, field, f"must be an integer of at most {INT_MAX:,} (int64's "
                          f"largest), got {plain(value)}")
    return value


def message_path(path: object) -> str:
    """A path as a message shows it: as written (a NUL character as ``\\0``), or by its first
    60 characters and ``...`` when it is longer than 200, as a name of thousands of
    characters that no file system takes would be."""
    import os

    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
    text = text.replace("\0", "\\0")
    return text if len(text) <= 200 else text[:60] + "..."


def existing_parent(path: object) -> Path:
    """The nearest path above ``path`` that exists (the root at worst): where a folder at
    ``path`` would be made, so a file there means that no folder can be."""
    from pathlib import Path

    return next(q for q in Path(str(path)).absolute().parents if q.exists())


def unnamable(path: object) -> str | None:
    """Why no file can have the path ``path``, or None when one can: a NUL character, or a
    name longer than the file system takes (255 bytes on Linux and macOS, also under a folder
    that does not exist yet, where ``stat`` says only that the folder is missing; else what
    ``stat`` says). The one rule of :func:`check_path`, :func:`check_writable_dir`,
    :func:`dptune._atomic.check_folder` and the per-user tables' reader, whose file-system
    calls raised ``OSError`` or ``ValueError`` on such a path."""
    import errno
    import os
    from pathlib import Path

    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
    if "\0" in text:
        return "a NUL character"
    if any(len(os.fsencode(part)) > 255 for part in Path(text).parts):
        return os.strerror(errno.ENAMETOOLONG)
    try:
        os.stat(text)
    except OSError as err:  # a missing file, or one not ours to read, is the caller's business
        if err.errno == errno.ENAMETOOLONG:
            return err.strerror
    return None


def check_path(value: object, source: object, field: str, what: str = "a path") -> None:
    """The one-line error ``<source>: <field>: needs <what> (a str or os.PathLike), got <type>``
    unless ``value`` is a path, so that a wrong argument of a front function (``None``, a
    number) is named instead of failing inside :mod:`pathlib`; and ``<source>: <field>:
    <path> cannot name a file (<why>)`` for a path that no file can have, a name longer than
    the file system takes or a NUL character (the ``OSError`` or ``ValueError`` of the first
    file-system call on it went up as a traceback; :func:`unnamable`)."""
    import os

    if not isinstance(value, (str, os.PathLike)):
        raise input_error(source, field, f"needs {what} (a str or os.PathLike), got "
                          f"{type(value).__name__}")
    why = unnamable(value)
    if why is not None:
        raise input_error(source, field, f"{message_path(value)} cannot name a file ({why})")


def read_toml(path: object, what: str, shown: object = None) -> dict:
    """Parse a TOML file; an unreadable file, one that is not UTF-8 text (TOML files are UTF-8)
    or invalid TOML is a one-line error naming the file (as ``shown`` when given) and, for
    invalid TOML, the line.

    ``what`` names the kind of file in the message (``"grid file"``, ``"experiment file"``).
    A UTF-8 byte-order mark at the start (Windows Notepad writes one) is not content and is
    skipped, as the project's other readers of text do. Invalid TOML found only at the end of
    the document (an unclosed array) names the document's last line; an integer of more digits
    than Python reads (4,300) and nesting deeper than Python's parser recurses are invalid
    TOML too, naming their line, not a traceback.
    """
    import codecs
    import re
    import sys
    from pathlib import Path

    import tomllib

    named = path if shown is None else shown
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise input_error(named, None, f"cannot read {what} ({err.strerror})") from None
    if raw.startswith(codecs.BOM_UTF8):  # not content: positions are those an editor shows
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise input_error(named, f"line {line}", f"not UTF-8 text (byte 0x{raw[err.start]:02x}); "
                          f"save the {what} as UTF-8, as TOML requires") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        message = str(err)
        if message.endswith("(at end of document)"):
            body = text.rstrip()
            line = body.count("\n") + 1
            column = len(body) - body.rfind("\n")
            message = re.sub(r"\(at end of document\)$",
                             f"(at line {line}, column {column}, the end of the document)",
                             message)
        raise input_error(named, None, f"invalid TOML: {message}") from None
    except ValueError as err:  # int() of the parser: more digits than Python reads
        line = _first_failing_line(text, ValueError)
        limit = sys.get_int_max_str_digits()
        problem = (f"an integer of more than {limit:,} digits, beyond what Python reads"
                   if "integer string conversion" in str(err) else str(err))
        raise input_error(named, None, f"invalid TOML: {problem} (at line {line})") from None
    except RecursionError:
        line = _first_failing_line(text, RecursionError)
        raise input_error(named, None, "invalid TOML: arrays or inline tables nested too "
                          f"deeply for Python's parser (at line {line})") from None


def _first_failing_line(text: str, error: type[BaseException]) -> int:
    """The line of ``text`` at which parsing it raises ``error`` (an exception that, unlike
    :class:`tomllib.TOMLDecodeError`, carries no position): the fewest leading lines whose
    parse raises it, by bisection. TOML is parsed from the start, so once a prefix of lines
    raises it every longer one does; a shorter one parses or is merely unfinished."""
    import tomllib

    lines = text.split("\n")

    def fails(n: int) -> bool:
        try:
            tomllib.loads("\n".join(lines[:n]))
        except tomllib.TOMLDecodeError:  # an unfinished prefix (an array cut off); first, as
            return False                  # it is a ValueError too
        except error:
            return True
        except Exception:  # any other failure of a prefix is not the one sought
            return False
        return False

    lo, hi = 1, len(lines)
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def same_file(a: object, b: object) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same resolved path (links followed),
    or, when both exist, the same file on disk (a hard link)."""
    import os
    from pathlib import Path

    if Path(str(a)).resolve() == Path(str(b)).resolve():
        return True
    try:
        return os.path.samefile(str(a), str(b))
    except OSError:
        return False


def check_out_file(out: object, flag: str, inputs: dict[str, object] | None = None) -> None:
    """Check, before anything is read or computed, that the file ``out`` (the value of
    ``flag``) can be written and is none of the files the command reads (``inputs``, ``{flag:
    path}``; :func:`same_file`): writing over an input would destroy what was read
    (``evaluate --run R --out R``), and an existing directory or an unwritable file would fail
    only after the work, naming the path without the flag. Each is one line naming ``flag``."""
    import os
    from pathlib import Path

    path = Path(str(out))
    if path.is_dir():
        raise input_error(flag, None, f"{out} is a directory; give the file to write")
    for source, given in (inputs or {}).items():
        if given is not None and same_file(path, given):
            raise input_error(flag, None, f"{out} is the {source} file this command reads; "
                              "give another file to write")
    if path.exists() and not os.access(path, os.W_OK):
        raise input_error(flag, None, f"{out} is not writable (permission denied)")
    check_writable_dir(path.parent, flag)


def check_not_working_dir(path: object, label: str | None = None) -> None:
    """One error line when folder ``path`` is the working directory or a folder above it: a
    folder written whole and published by one rename (:func:`dptune._atomic.staged_folder`, a
    report) would take the shell's folder away. ``label`` (a flag) names it, else the path."""
    from pathlib import Path

    target, here = Path(str(path)).resolve(), Path.cwd().resolve()
    if target == here or target in here.parents:
        what = ("is the working directory or holds it; it is written as a folder of its own: "
                "give one (e.g. reports/<name>)")
        raise (input_error(label, None, f"{path} {what}") if label
               else input_error(path, None, what))


def check_report_folder(path: object, where: str, report: str) -> None:
    """Before any work, the folder ``path`` a study's report is published into whole (the
    ``out_dir`` of ``where``, ``slices`` or ``seeds``; :func:`dptune._atomic.staged_folder`): not
    a file, writable or possible to create (:func:`check_writable_dir`), and not the working
    directory or above it (:func:`check_not_working_dir`). One line naming ``where: out_dir``;
    ``report`` says what would be written (``slice report``)."""
    from pathlib import Path

    p = Path(str(path))
    if p.exists() and not p.is_dir():
        raise input_error(where, "out_dir", f"{p} is a file, not a folder to write the {report} "
                          "into")
    check_writable_dir(p, f"{where}: out_dir")
    check_not_working_dir(p, f"{where}: out_dir")


def check_writable_dir(path: object, label: str) -> None:
    """Check, leaving nothing behind, that directory ``path`` exists and is writable or can be
    created; else one error naming ``label`` (the flag) and the path.

    A path under a file, or whose nearest existing ancestor is not writable, fails here, before
    any work, instead of after a sweep of hours; so does a path no directory can have (a name
    longer than the file system takes, a NUL character), whose ``OSError`` or ``ValueError``
    went up as a traceback. The permission bits are read first, then a file is created in
    that folder and removed at once: the bits alone say yes where a write still fails (a
    pseudo-file system such as /proc, an NFS share that maps root to nobody).
    """
    import os
    import tempfile
    from pathlib import Path

    p = Path(str(path))
    why = unnamable(path)
    if why is not None:
        raise input_error(label, None, f"{message_path(path)} cannot name a directory ({why})")
    try:
        p.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass
    except PermissionError as err:  # in a folder not ours to read (pathlib raised it)
        raise input_error(label, None, f"{message_path(path)} is not writable "
                          f"({err.strerror})") from None
    if p.exists():
        if not p.is_dir():
            raise input_error(label, None, f"{p} is not writable: it is a file, not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise input_error(label, None, f"{p} is not writable (permission denied)")
        where, what = p, f"{p} is not writable"
    else:
        parent = existing_parent(p)
        if not parent.is_dir():
            raise input_error(label, None, f"{p} is not writable: {parent} is a file, not a "
                              "directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise input_error(label, None, f"{p} is not writable: cannot create it in {parent} "
                              "(permission denied)")
        where, what = parent, f"{p} is not writable: cannot create it in {parent}"
    try:
        fd, probe = tempfile.mkstemp(prefix=".dptune-probe-", dir=where)
    except OSError as err:
        raise input_error(label, None, f"{what} ({err.strerror or err})") from None
    os.close(fd)
    os.unlink(probe)
