"""The optuna storage of a sweep: opening it (SQLite, any RDB URL, a journal file), heartbeats,
re-queueing a dead worker's trial, and quieting optuna's expected log records. See docs/distributed.md.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune.config import Experiment
from dptune.errors import DptuneError, input_error

if TYPE_CHECKING:
    import logging

    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 30
MAX_RETRY = 3  # a dead worker's unit is queued again at most this many times


def heartbeat_settings() -> tuple[int, int]:
    """``(interval, grace)`` of the trial heartbeats in seconds (optuna's on RDB storages,
    dptune's :class:`_Pulse` on journal storages).

    A worker records a heartbeat every ``interval`` seconds while it holds a trial; a RUNNING
    trial whose last heartbeat is older than ``grace`` is taken for dead (``kill -9``, a lost
    machine), failed and queued again. Defaults 10 and 30; ``DPTUNE_HEARTBEAT_INTERVAL`` and
    ``DPTUNE_HEARTBEAT_GRACE`` override them (every worker of a sweep should use the same values;
    the tests use 1 and 3 so that a killed worker is detected in seconds).
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


def open_storage(url: str | None, root: Path) -> BaseStorage:
    """:func:`_open_storage`; the default SQLite file of a results directory, when damaged, is
    kept aside as ``optuna.db.damaged`` and started afresh: it only coordinates the workers,
    the parts hold every result, so the sweep resumes from them (a note says so on stderr)."""
    import sys

    try:
        return _open_storage(url, root)
    except DptuneError as err:
        why = str(err).rsplit(") ", 1)[-1]
        if url is not None or not ("malformed" in why or "not a database" in why):
            raise
    db = Path(root) / "optuna.db"
    os.replace(db, db.with_name("optuna.db.damaged"))
    print(f"dptune: note: {db} was damaged ({why}); kept as "
          f"{db.name}.damaged, a new one started (finished units are in the parts)",
          file=sys.stderr)
    return _open_storage(url, root)


def _open_storage(url: str | None, root: Path) -> BaseStorage:
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
    if url.startswith("journal:") or url.endswith(".journal"):
        path = Path(url[len("journal:"):] if url.startswith("journal:") else url)
        if not path.parent.is_dir():
            raise input_error("--storage", None, f"journal file {str(path)!r}: directory "
                              f"{str(path.parent)!r} does not exist")
        try:
            return JournalStorage(JournalFileBackend(str(path)))
        except OSError as err:
            raise input_error("--storage", None, f"cannot open journal file {str(path)!r}: "
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
            raise input_error("--storage", None,
                              f"cannot open optuna storage {_safe_url(url)!r}: {msg}") from None
    raise AssertionError("unreachable")  # pragma: no cover


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
