"""Command line: ``dptune run | worker | status | analyze | evaluate | dp | subgrid | seeds |
slices | data``, one argparse tree of thin calls into the Python API.

``_flags`` defines every flag once, ``_tree`` builds the parser, ``_commands`` holds one thin
function per command, ``_api`` says where each API function lives. Bad input ends with one line
``dptune: <file or flag>: <field>: <problem>`` and exit code 2.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune._interrupt import handling, signal_number
from dptune._resources import is_out_of_space, space_error
from dptune.errors import DptuneError

if TYPE_CHECKING:
    from dptune.cli._tree import build_parser

__all__ = ["build_parser", "main"]


def __getattr__(name: str) -> Any:
    """``build_parser`` (:func:`dptune.cli._tree.build_parser`), imported on first use: the
    parser's modules load in :func:`main`, where a Ctrl-C is handled."""
    if name == "build_parser":
        from dptune.cli._tree import build_parser

        return build_parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; user errors (bad flags included) print one line and return 2; ``--help``
    and ``--version`` exit with 0 as argparse does.

    The parser's modules (pandas among them, about a second) are imported here, not when this
    module is: a Ctrl-C while they load is one line and exit code 130, not a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        from dptune.cli._tree import parse

        args = parse(argv)
    except SystemExit as ex:
        if not ex.code:
            raise
        return int(ex.code) if isinstance(ex.code, int) else 2
    except KeyboardInterrupt:
        print("dptune: interrupted before the command started; nothing was done",
              file=sys.stderr)
        return 130
    try:
        with handling():
            return int(args.func(args) or 0)
    except DptuneError as err:
        print(f"dptune: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        by = "" if signal_number() == signal.SIGINT else " (SIGTERM)"
        print(f"dptune: interrupted{by}; {_KEPT.get(args.func.__name__, _KEPT_DEFAULT)}",
              file=sys.stderr)
        return 128 + signal_number()
    except MemoryError:
        print("dptune: out of memory: this command needed more memory than was free; finished "
              "results are kept (lower --jobs, or run it where more memory is free)",
              file=sys.stderr)
        return 2
    except OSError as err:
        if not is_out_of_space(err):
            raise
        print(f"dptune: {space_error(err.filename or Path.cwd())}", file=sys.stderr)
        return 2


#: What Ctrl-C keeps, per command (``dptune: interrupted; <this>``).
_KEPT = {
    "cmd_run": "finished units are kept, run the same command to resume",
    "cmd_worker": "finished units are kept, run the same command to resume",
    "cmd_seeds": "finished seeds are cached, run the same command to resume",
}
_KEPT_DEFAULT = ("nothing was written (a reports folder is published only when complete); "
                 "run the same command again")
