"""User-facing errors: one clear line naming the file and field, exit code 2."""

from __future__ import annotations


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
