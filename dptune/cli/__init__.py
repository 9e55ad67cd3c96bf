"""Command line: ``dptune run | worker | status | analyze | evaluate | dp | subgrid | seeds |
slices | data``, one argparse tree of thin calls into the Python API.

``_flags`` defines every flag once, ``_tree`` builds the parser, ``_commands`` holds one thin
function per command, ``_api`` says where each API function lives. Bad input ends with one line
``dptune: <file or flag>: <field>: <problem>`` and exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from dptune.cli._tree import build_parser
from dptune.errors import DptuneError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; user errors (bad flags included) print one line and return 2; ``--help``
    and ``--version`` exit with 0 as argparse does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as ex:
        if not ex.code:
            raise
        return int(ex.code) if isinstance(ex.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except DptuneError as err:
        print(f"dptune: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("dptune: interrupted; finished units are kept, run the same command to resume", file=sys.stderr)
        return 130
