"""The optuna storage of a sweep: opening it (SQLite, any RDB URL, a journal file), heartbeats,
re-queueing a dead worker's trial, and quieting optuna's expected log records. See docs/distributed.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune.config import Experiment
from dptune.errors import DptuneError, did_you_mean, input_error

if TYPE_CHECKING:
    import logging

    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 30
MAX_RETRY = 3  # a dead worker's unit is queued again at most this many times


def heartbeat_settings() -> tuple[int, int]:
    """``(interval, grace)`` of the trial heartbeats in seconds (a worker's open trials are
    stamped by :class:`dptune.sweeper._claims._Heartbeats`: in optuna's heartbeat table on RDB
    storages, as a trial attribute on journal storages).

    A worker records a heartbeat every ``interval`` seconds while it holds a trial; a RUNNING
    trial whose last heartbeat is older than ``grace`` is taken for dead (``kill -9``, a lost
    machine), failed and queued again; a worker of this machine whose process is gone is dead
    at once, whatever its heartbeat (:func:`dptune.sweeper._claims.worker_gone`). Defaults 10
    and 30; ``DPTUNE_HEARTBEAT_INTERVAL`` and ``DPTUNE_HEARTBEAT_GRACE`` override them (every
    worker of a sweep should use the same values).
    """
    out = []
    for name, default in (("DPTUNE_HEARTBEAT_INTERVAL", HEARTBEAT_SECONDS),
                          ("DPTUNE_HEARTBEAT_GRACE", GRACE_SECONDS)):
        raw = os.environ.get(name, "").strip()
        if not raw:
            out.append(default)
            continue
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise input_error(name, None, f"must be a positive number of seconds, got {raw!r}")
        out.append(value)
    interval, grace = out
    if grace <= interval:
        raise input_error("DPTUNE_HEARTBEAT_GRACE", None,
                          f"must be larger than DPTUNE_HEARTBEAT_INTERVAL ({grace} <= {interval})")
    return interval, grace


def _requeue_stale(study: optuna.Study, trial: FrozenTrial) -> None:
    """Heartbeat-stale callback: queue the dead trial's grid point again (at most MAX_RETRY times).

    Like optuna's ``RetryHeartbeatStaleTrialCallback`` but the new WAITING trial carries only the
    grid point (``grid_id``, ``search_space``) and the retry history: no parameters and no user
    attributes of the dead trial, so no one mistakes it for a live trial computing the unit before
    its own heartbeat exists (see :func:`_must_wait`).
    """
    import optuna

    attrs = trial.system_attrs
    if "grid_id" not in attrs:
        return
    history = [*attrs.get("retry_history", []), trial.number]
    if len(history) > MAX_RETRY:
        return
    study.add_trial(optuna.trial.create_trial(
        state=optuna.trial.TrialState.WAITING,
        system_attrs={"grid_id": attrs["grid_id"], "search_space": attrs["search_space"],
                      "failed_trial": history[0], "retry_history": history},
    ))


def _driver_url(url: str) -> str:
    """``postgresql://`` means psycopg (3) to SQLAlchemy 2.1; use psycopg2 when only it is there
    (the ``postgres`` extra installs psycopg2-binary)."""
    if not url.startswith("postgresql://"):
        return url
    import importlib.util

    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
        return "postgresql+psycopg2://" + url[len("postgresql://"):]
    return url


def _safe_url(url: str) -> str:
    """The URL with its password masked, for messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not an SQLAlchemy URL: show it as given
        return url


def _first_line(err: BaseException) -> str:
    """The first line of an exception's message (driver errors span several lines)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _is_race(err: BaseException) -> bool:
    """Errors of several processes creating the optuna schema at once (worth a retry)."""
    text = str(err).lower()
    return any(s in text for s in ("already exists", "duplicate key", "database is locked",
                                   "unique constraint", "deadlock"))


#: Words of SQLite's errors that mean a damaged file (not a busy or missing one).
_DAMAGE = ("malformed", "not a database", "corrupt", "disk image")


def sqlite_problem(path: Path) -> str | None:
    """Why the SQLite file ``path`` is damaged (``None``: intact, or not there yet).

    ``PRAGMA quick_check`` reads every page of the file once (milliseconds for an optuna.db
    of thousands of trials) and finds what opening it does not: a damaged page in the middle
    of a file whose header is intact, which optuna would otherwise meet at some later commit
    (``StorageInternalError`` with a traceback). Read-only; a file locked by a writer is
    waited for, and one that stays locked counts as intact (the writer is alive)."""
    import sqlite3

    if not Path(path).is_file():
        return None
    try:
        con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=120)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as err:
        text = str(err)
        return text if any(w in text.lower() for w in _DAMAGE) else None
    if rows and rows[0][0] != "ok":
        first = " ".join(str(rows[0][0]).split())  # one line, whatever SQLite reports
        return f"quick_check: {first}" + (f" and {len(rows) - 1} more" if len(rows) > 1 else "")
    return None


def journal_problem(path: Path) -> str | None:
    """Why the optuna journal file ``path`` is damaged (``None``: intact, or not there yet):
    every record but the last must be one line of JSON (the last may be a record still being
    written by a live worker, which optuna itself skips)."""
    import json

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"unreadable ({err.strerror})"
    lines = data.split(b"\n")[:-1]  # complete records; the unfinished last one is left out
    for n, line in enumerate(lines, 1):
        try:
            json.loads(line)
        except ValueError:
            return f"record {n} of {len(lines)} is not valid JSON"
    return None


def _set_aside(path: Path, why: str, what: str) -> None:
    """Keep a damaged storage file as ``<name>.damaged`` (replacing an older one) and say so."""
    import sys

    aside = path.with_name(f"{path.name}.damaged")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # another process of this sweep set it aside first
        return
    print(f"dptune: note: {path} was damaged ({why}); kept as {aside.name}, a new {what} "
          "started (finished units are in the parts and are not computed again)",
          file=sys.stderr)


#: SQLAlchemy's own databases, for the hint of a misspelt one (``postgres://``).
_DATABASES = ("sqlite", "postgresql", "mysql", "mariadb", "oracle", "mssql")

#: Where a storage URL was given, for messages: ``(source, field)`` of :func:`input_error`.
Where = tuple[object, str | None]
#: A URL of ``--storage`` (or of the Python API's ``storage`` argument).
FLAG: Where = ("--storage", None)


def storage_place(url: str | None, exp: Experiment | None) -> Where:
    """Where ``url`` came from: the experiment file's ``[sweep] storage`` when it is that URL
    (a command without ``--storage`` uses it), else ``--storage``; a message names it."""
    if exp is not None and url is not None and url == exp.sweep.storage:
        return (exp.source or "<memory>", "sweep.storage")
    return FLAG


def check_url(url: str | None, where: Where = FLAG) -> None:
    """A server URL SQLAlchemy cannot read (``not a url``) or whose database it does not know
    (``foo://x``, a misspelt driver) is bad input, told apart from an unreachable server
    without connecting: one line naming ``where``. ``None`` (the default SQLite file) and a
    journal file pass."""
    if url is None or _journal_path(url) is not None:
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(_driver_url(url))
    except ArgumentError:
        raise input_error(*where, f"{url!r} is neither an optuna storage URL "
                          "(dialect://user:password@host/database) nor a *.journal file") from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        database, _, driver = parsed.drivername.partition("+")
        if database in _DATABASES:
            raise input_error(*where, f"{_safe_url(url)!r}: SQLAlchemy has no driver {driver!r} "
                              f"for {database}") from None
        hint = did_you_mean(database, _DATABASES) or (
            " (sqlite, postgresql, mysql, ...; or a *.journal file)")
        raise input_error(*where, f"{_safe_url(url)!r}: unknown database {database!r}{hint}"
                          ) from None


def check_storage(url: str | None, root: Path, repair: bool = True,
                  where: Where = FLAG) -> None:
    """Check the optuna storage before it is used (``dptune run``, ``worker``, ``status``).

    The default SQLite file of a results directory (``optuna.db``) and a journal file only
    coordinate the workers: the parts hold every result. So, damaged (:func:`sqlite_problem`,
    :func:`journal_problem`), it is kept aside as ``<name>.damaged`` and a new one is
    started, with one line on stderr (``repair``; ``dptune status`` reads only, so there it
    is a one-line error saying that ``dptune run`` sets it aside). A SQLite file named by
    ``--storage`` is yours: damaged, it is a one-line error naming it. A server's storage
    (PostgreSQL) is checked by opening it (:func:`open_storage`). A ``url`` that is not text
    (an experiment built in code around its file's check of ``[sweep] storage``) is a one-line
    error, not a traceback."""
    if url is not None and not isinstance(url, str):
        raise input_error("storage", None, "needs an optuna storage URL (a str), got "
                          f"{type(url).__name__}")
    if url is None or _journal_path(url) is not None:
        if url is None:
            path, what, check = Path(root) / "optuna.db", "optuna.db", sqlite_problem
        else:
            path, what, check = _journal_path(url), "journal", journal_problem
        why = check(path)
        if why is None:
            return
        if repair:
            _set_aside(path, why, what)
            return
        raise input_error(path, None, f"damaged ({why}); `dptune run` keeps it aside as "
                          f"{path.name}.damaged and starts a new one (finished units are in "
                          "the parts)")
    check_url(url, where)
    if (path := _sqlite_path(url)) is not None:
        why = sqlite_problem(path)
        if why is not None:
            raise input_error(*where, f"optuna storage {url!r} is damaged ({why}); "
                              "move the file aside and run again (finished units are in the "
                              "parts and are not computed again)")


def open_storage(url: str | None, root: Path, repair: bool = True,
                 where: Where = FLAG) -> BaseStorage:
    """:func:`check_storage`, then :func:`_open_storage`. ``repair`` false is a reader's open
    (``dptune status``): nothing is repaired, and a journal or SQLite file that does not exist
    is one line instead of a new, empty file. ``where`` (:func:`storage_place`) is named by
    every message about ``url``."""
    check_storage(url, root, repair, where)
    if not repair and url is not None and (missing := _missing_file(url)) is not None:
        raise input_error(*where, f"{missing} does not exist (a reader does not create a "
                          "storage)")
    try:
        return _open_storage(url, root, where)
    except DptuneError as err:
        why = str(err).rsplit(") ", 1)[-1]
        if url is not None or not repair or not any(w in why.lower() for w in _DAMAGE):
            raise
    _set_aside(Path(root) / "optuna.db", why, "optuna.db")  # damage that shows at open
    return _open_storage(url, root, where)


def _journal_path(url: str) -> Path | None:
    """The journal file a storage URL names (a ``*.journal`` path or ``journal:PATH``), or
    None for any other URL."""
    if url.startswith("journal:"):
        return Path(url[len("journal:"):])
    return Path(url) if url.endswith(".journal") else None


def _sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL as written, or None for any other URL."""
    return Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None


def _missing_file(url: str) -> str | None:
    """The file a journal path or a ``sqlite:///`` URL names, when it does not exist (None for
    a file that exists, an in-memory SQLite database and a server URL)."""
    if (path := _journal_path(url)) is not None:
        return None if path.exists() else f"journal file {str(path)!r}"
    if (path := _sqlite_path(url)) is not None and url != "sqlite:///:memory:":
        path = Path(str(path).split("?", 1)[0])
        return None if path.exists() else f"SQLite file {str(path)!r}"
    return None


def _open_storage(url: str | None, root: Path, where: Where = FLAG) -> BaseStorage:
    """An optuna storage: ``url`` (any RDB URL, or a ``*.journal`` path / ``journal:PATH``), or
    ``sqlite:///<root>/optuna.db`` by default.

    RDB storages get heartbeats (:func:`heartbeat_settings`) so that a killed worker's RUNNING
    trials are failed and queued again. Schema creation races between workers starting together
    are retried; anything else (unreachable server, missing driver, bad URL) is one
    :class:`DptuneError` line naming the URL without its password, raised at once.
    """
    import warnings

    import optuna
    from optuna.storages import JournalStorage, RDBStorage
    from optuna.storages.journal import JournalFileBackend

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    _quiet_optuna()

    url = url or f"sqlite:///{(root / 'optuna.db').resolve()}"
    if (path := _journal_path(url)) is not None:
        if not path.parent.is_dir():
            raise input_error(*where, f"journal file {str(path)!r}: directory "
                              f"{str(path.parent)!r} does not exist")
        try:
            return JournalStorage(JournalFileBackend(str(path)))
        except OSError as err:
            raise input_error(*where, f"cannot open journal file {str(path)!r}: "
                              f"{err.strerror or err}") from None
    url = _driver_url(url)
    interval, grace = heartbeat_settings()
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120}}
    else:
        kwargs["engine_kwargs"] = {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    for attempt in range(5):
        try:
            return RDBStorage(url, heartbeat_interval=interval, grace_period=grace,
                              heartbeat_stale_trial_callback=_requeue_stale, **kwargs)
        except DptuneError:
            raise
        except Exception as err:  # connection refused, bad URL, missing driver ...
            if _is_race(err) and attempt < 4:
                time.sleep(0.2 * (attempt + 1))
                continue
            msg = _first_line(err)
            if isinstance(err, ImportError) and "postgres" in url:
                msg += " (pip install 'dptune[postgres]' for psycopg2-binary)"
            raise input_error(*where, f"cannot open optuna storage {_safe_url(url)!r}: "
                              f"{msg}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from (optuna wraps SQLAlchemy, which wraps the
    driver's error)."""
    out: list[BaseException] = []
    while err is not None and err not in out and len(out) < 8:
        out.append(err)
        err = err.__cause__ or err.__context__
    return out


def _is_storage_error(err: BaseException) -> bool:
    """Whether ``err`` comes from the optuna storage (optuna's wrapper, SQLAlchemy, a DB-API
    driver such as sqlite3 or psycopg2, a damaged journal record)."""
    import json
    import sqlite3

    import optuna

    for e in _chain(err):
        if isinstance(e, (optuna.exceptions.StorageInternalError, sqlite3.Error,
                          json.JSONDecodeError)):
            return True
        if type(e).__module__.split(".")[0] in ("sqlalchemy", "psycopg2", "psycopg"):
            return True
        if isinstance(e, ValueError) and str(e) == "Invalid log format.":  # a journal's
            return True
    return False


def storage_name(url: str | None, root: Path) -> str:
    """The optuna storage as messages name it: its URL without the password, or the path of
    the default ``optuna.db``."""
    return _safe_url(url) if url else str(Path(root) / "optuna.db")


@contextmanager
def storage_errors(url: str | None, root: Path) -> Iterator[None]:
    """Errors of the optuna storage while a sweep uses it become one line naming the storage
    (exit code 2) instead of a traceback: a full disk ("database or disk is full") says to
    free space and run the same command; a lost server or a damaged file names the driver's
    first line. Finished units are in the parts either way, so the same command resumes."""
    try:
        yield
    except DptuneError:
        raise
    except Exception as err:
        if not _is_storage_error(err):
            raise
        texts = [_first_line(e) for e in _chain(err)]
        joined = " ".join(texts).lower()
        name = storage_name(url, root)
        if "disk is full" in joined or "no space left" in joined:
            raise input_error(name, None, "out of space (database or disk is full): free space "
                              "on its device and run the same command (finished units are "
                              "kept)") from None
        detail = next((t for t in reversed(texts) if t), texts[0])
        raise input_error(name, None, f"the optuna storage failed ({detail}); finished units "
                          "are kept: run the same command once it works again") from None


class _OptunaNoise:
    """Drop two optuna log records that are expected here:

    - GridSampler's "re-evaluating a configuration": near the end of a sweep idle workers are
      handed points that others are computing, by design (they wait or skip);
    - "Trial N failed ... because of the following error" with its traceback: the error itself
      reaches the caller (the CLI prints bad input as one line), so the log would only repeat
      it with a traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """False for the two records above (the logging.Filter protocol)."""
        msg = record.getMessage()
        if "re-evaluating a configuration" in msg:
            return False
        return not (msg.startswith("Trial ") and " failed with " in msg)


def _quiet_optuna() -> None:
    """Install :class:`_OptunaNoise` on the two optuna loggers (once per process)."""
    import logging

    for name in ("optuna.samplers._grid", "optuna.study._optimize"):
        log = logging.getLogger(name)
        if not any(isinstance(f, _OptunaNoise) for f in log.filters):
            log.addFilter(_OptunaNoise())


def study_name(exp: Experiment, algorithm: str) -> str:
    """optuna study of one algorithm of one experiment set-up: ``<name>/<algorithm>/<fingerprint>``.

    The fingerprint keeps a changed set-up (data, split, grid) from inheriting the trials of an
    older one that shared its name in the same database.
    """
    return f"{exp.name}/{algorithm}/{exp.fingerprint()}"
