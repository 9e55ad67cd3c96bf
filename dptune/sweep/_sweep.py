"""The sweep: train and evaluate every (algorithm, unit, fold) of an experiment, crash-safely.

A *unit* is what one model run produces (docs/design.md): all k of a KNN on one fold (one
similarity), all iteration counts of one BPR-MF (factors, learning rate) on one fold (snapshots of
one training run). optuna drives the units: one study per (experiment, algorithm) whose
``GridSampler`` search space is the fold plus the hyperparameters that are constant within a unit,
kept in an optuna storage (SQLite in the results directory by default, PostgreSQL or any optuna
RDB URL, or a journal file), so a re-run or any number of workers on any machines share one
sweep. The result store is the ground truth: a unit whose Parquet part exists is never
recomputed. A live worker's grid point is waited for, not duplicated; a dead worker's trial is
found by its stale heartbeat, failed and queued again; a duplicate that still slips through
(two workers deciding at the same instant) has the same values (seeds derive from the unit) and
is discarded by the store, which keeps the first part written. See docs/distributed.md.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from dptune import __version__
from dptune._parallel import run_parallel
from dptune.config import Experiment
from dptune.data._dataset import Dataset, dataset_stats, load_dataset
from dptune.data._split import HoldOut, cv_fold_labels, split_holdout
from dptune.errors import DptuneError, input_error
from dptune.metrics import METRICS, evaluate, novelty_vectors
from dptune.models._families import get_family
from dptune.store._store import PARTS, ResultStore, UnitResult, part_name

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 30
MAX_RETRY = 3  # a dead worker's unit is queued again at most this many times
MAX_PASSES = 3  # grid walks per worker and algorithm before giving up on failed units


# --------------------------------------------------------------------------- data preparation
@dataclass
class FoldData:
    """One evaluation setting: binarised training matrix, relevance matrix, users, novelty."""

    fold: str
    train: sp.csr_matrix
    relevant: sp.csr_matrix
    users: np.ndarray
    efd: np.ndarray
    epc: np.ndarray


def _matrix(user: np.ndarray, item: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    m = sp.csr_matrix((np.ones(len(user), np.float32), (user, item)), shape=shape, dtype=np.float32)
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


class Prepared:
    """Data set, test split and fold labels of an experiment, with lazily built fold matrices."""

    def __init__(self, exp: Experiment):
        self.exp = exp
        d = exp.data
        self.dataset: Dataset = load_dataset(d.source, fmt=d.format, min_rating=d.min_rating,
                                             kcore=d.kcore, **d.reader_options())
        s = exp.split
        self.holdout: HoldOut = split_holdout(
            self.dataset.ratings, s.method, s.train_ratio, exp.split_seed, s.min_user_interactions,
            timestamps=self.dataset.timestamps, fold_method=s.fold_method, source=exp.source)
        self.labels = np.asarray(cv_fold_labels(self.holdout.train, s.folds, s.fold_method, exp.split_seed))
        self.shape = (self.dataset.n_users, self.dataset.n_items)
        self._folds: dict[str, FoldData] = {}
        self._lock = threading.Lock()

    @property
    def fold_names(self) -> list[str]:
        """Validation fold labels as strings ``"0" .. "k-1"``."""
        return [str(f) for f in range(self.exp.split.folds)]

    def fold(self, fold: str) -> FoldData:
        """Training/relevance matrices for validation fold ``fold`` or for ``"test"``."""
        with self._lock:
            if fold not in self._folds:
                self._folds[fold] = self._build(fold)
            return self._folds[fold]

    def _build(self, fold: str) -> FoldData:
        tr = self.holdout.train
        if fold == "test":
            train, held = tr, self.holdout.test
        else:
            mask = self.labels == int(fold)
            train, held = tr[~mask], tr[mask]
        X = _matrix(train["user"].to_numpy(), train["item"].to_numpy(), self.shape)
        rel = held if self.dataset.implicit else (  # implicit feedback: every row is relevant
            held[held["rating"].to_numpy() >= self.exp.evaluation.relevance_threshold])
        R = _matrix(rel["user"].to_numpy(), rel["item"].to_numpy(), self.shape)
        users = np.flatnonzero(np.diff(R.indptr) > 0).astype(np.int32)
        efd, epc = novelty_vectors(X)
        return FoldData(fold, X, R, users, efd, epc)

    def check_folds(self) -> dict[str, int]:
        """Users evaluated per fold; a fold with none is an error naming it (before any training)."""
        counts = {}
        for f in [*self.fold_names, *(["test"] if self.exp.evaluation.test_split else [])]:
            n = len(self.fold(f).users)
            if n == 0:
                field_ = "split" if f == "test" else "split.folds"
                raise input_error(self.exp.source, field_, f"fold {f} has no user with a relevant "
                                  f"held-out item (rating >= {self.exp.evaluation.relevance_threshold})")
            counts[f] = n
        return counts


_PREPARED: dict[str, Prepared] = {}


def prepare(exp: Experiment) -> Prepared:
    """Process-wide cached :class:`Prepared` (workers build it once, not once per unit)."""
    key = exp.fingerprint()
    if key not in _PREPARED:
        _PREPARED[key] = Prepared(exp)
    return _PREPARED[key]


# --------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class Task:
    """One unit of work: an algorithm's unit (configs trained together) on one fold."""

    algorithm: str
    fold: str
    unit: str
    config_ids: tuple[int, ...]
    params: dict[str, Any] = field(hash=False, compare=False)


def derive_seed(base: int, *parts: Any) -> int:
    """A 31-bit seed from the experiment seed and a canonical description of the unit.

    ``SeedSequence([base, crc32(json(parts))])``: independent of grid order and of which worker
    runs the unit, so a rerun or a duplicate reproduces the same numbers.
    """
    blob = json.dumps(parts, sort_keys=True, default=repr).encode()
    ss = np.random.SeedSequence([int(base) & 0xFFFFFFFF, zlib.crc32(blob)])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)


def unit_dimensions(exp: Experiment, algorithm: str) -> list[str]:
    """Free hyperparameters constant within every unit: the optuna grid dimensions besides fold."""
    alg = _algorithm(exp, algorithm)
    grid = exp.grids[algorithm]
    configs = grid.configs()
    units = get_family(alg.type).units(configs)
    return [h for h in grid.free
            if all(len({repr(configs[i][h]) for i in u}) == 1 for u in units)]


def plan_units(exp: Experiment, algorithm: str, config_ids: Sequence[int] | None = None) -> list[list[int]]:
    """Units of an algorithm (lists of global config ids), optionally restricted to some configs."""
    alg = _algorithm(exp, algorithm)
    configs = exp.grids[algorithm].configs()
    ids = list(range(len(configs))) if config_ids is None else sorted(int(c) for c in config_ids)
    local = get_family(alg.type).units([configs[i] for i in ids])
    return [[ids[j] for j in u] for u in local]


def plan(exp: Experiment, algorithm: str, folds: Iterable[str]) -> list[Task]:
    """Validation tasks of one algorithm: every unit on every fold."""
    dims = unit_dimensions(exp, algorithm)
    configs = exp.grids[algorithm].configs()
    tasks = []
    for fold in folds:
        for k, unit in enumerate(plan_units(exp, algorithm)):
            params = {h: configs[unit[0]][h] for h in dims}
            tasks.append(Task(algorithm, fold, f"u{k:05d}", tuple(unit), params))
    return tasks


def _algorithm(exp: Experiment, name: str):
    for a in exp.algorithms:
        if a.name == name:
            return a
    raise input_error(exp.source, "algorithms", f"no algorithm named {name!r}")


# --------------------------------------------------------------------------- one unit
def run_unit(exp: Experiment, task: Task, store: ResultStore) -> UnitResult:
    """Train the unit's model(s) on the task's fold, evaluate every config, write the part."""
    prep = prepare(exp)
    fd = prep.fold(task.fold)
    alg = _algorithm(exp, task.algorithm)
    configs = exp.grids[task.algorithm].configs()
    unit_cfgs = [configs[c] for c in task.config_ids]
    seed = derive_seed(exp.seed, task.algorithm, task.fold, task.params)
    ev = exp.evaluation
    rows = [METRICS.index(m) for m in ev.metrics]
    cutoffs = tuple(int(c) for c in ev.cutoffs)
    out: dict[int, tuple[np.ndarray, float, float]] = {}
    t0 = time.perf_counter()
    for local, model in get_family(alg.type).fit_unit(fd.train, unit_cfgs, seed):
        t1 = time.perf_counter()
        vals = evaluate(model, fd.users, fd.train, fd.relevant, cutoffs, fd.efd, fd.epc,
                        block=ev.user_block, relevance_aware=ev.novelty == "relevance-aware")
        t2 = time.perf_counter()
        out[task.config_ids[local]] = (np.asarray(vals)[rows], t1 - t0, t2 - t1)
        t0 = time.perf_counter()
    ids = tuple(sorted(out))
    res = UnitResult(
        algorithm=task.algorithm, fold=task.fold, unit=task.unit, seed=seed,
        metrics=tuple(ev.metrics), cutoffs=cutoffs, users=fd.users,
        config_ids=ids, values=tuple(out[c][0] for c in ids),
        fit_seconds=tuple(out[c][1] for c in ids), eval_seconds=tuple(out[c][2] for c in ids),
    )
    store.write_unit(res)
    return res


def _primary_mean(exp: Experiment, store: ResultStore, task: Task) -> float:
    """The best mean of the primary metric among the unit's configs (the value optuna records)."""
    path = store.root / PARTS / part_name(task.algorithm, task.fold, task.unit)
    meta = store.part_meta(path)
    key = f"{exp.analysis.primary_metric}@{exp.analysis.primary_cutoff}"
    vals = [m.get(key, float("nan")) for m in meta["means"].values()]
    return float(np.nanmax(vals)) if vals else float("nan")


# --------------------------------------------------------------------------- optuna coordination
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


def _study(exp: Experiment, algorithm: str, storage: BaseStorage,
           folds: list[str]) -> tuple[optuna.Study, dict[str, list[Any]]]:
    """Create or load the algorithm's study and its GridSampler space (fold + unit parameters)."""
    import optuna

    dims = unit_dimensions(exp, algorithm)
    space: dict[str, list[Any]] = {"fold": list(folds)}
    grid = exp.grids[algorithm]
    for h in dims:
        space[h] = list(grid.values[h])
    # The seed fixes the shuffled grid order, which must be the same in every worker (a trial's
    # grid_id indexes it); the random choice among unvisited points is then reseeded per process
    # so that workers resuming a sweep do not all pick the same point.
    sampler = optuna.samplers.GridSampler(space, seed=exp.seed)
    sampler.reseed_rng()
    study = optuna.create_study(study_name=study_name(exp, algorithm), storage=storage,
                                sampler=sampler, direction="maximize", load_if_exists=True)
    return study, space


def _heartbeat_enabled(storage: BaseStorage) -> bool:
    """Whether the storage keeps optuna's own heartbeats (RDB storages opened here)."""
    get = getattr(storage, "get_heartbeat_interval", None)
    return get is not None and get() is not None


class _Pulse:
    """dptune's heartbeat for storages without optuna's (the journal file): while a trial runs,
    a thread stamps its user attribute ``heartbeat`` (epoch seconds) every interval; the first
    stamp is written before the trial's parameters, so any trial that others can see on a grid
    point can be found stale. Liveness then rests on the workers' clocks (keep them in sync)."""

    def __init__(self, study: optuna.Study, trial: optuna.Trial, interval: float) -> None:
        self.study, self.trial, self.interval = study, trial, interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _stamp(self) -> None:
        """Write the current time into the trial's ``heartbeat`` attribute."""
        self.study._storage.set_trial_user_attr(self.trial._trial_id, "heartbeat", time.time())

    def _run(self) -> None:
        """The thread: stamp every interval until stopped."""
        while not self.stop.wait(self.interval):
            try:
                self._stamp()
            except Exception:  # noqa: BLE001 - the trial ended meanwhile; the next one has its own
                return

    def __enter__(self) -> _Pulse:
        """Stamp once now (before the trial's parameters exist), then start the thread."""
        self._stamp()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the thread."""
        self.stop.set()
        self.thread.join()


def _fail_stale(study: optuna.Study) -> None:
    """Fail the RUNNING trials of dead workers and queue their points again (:func:`_requeue_stale`).

    RDB storages: optuna's ``fail_stale_trials`` (heartbeats in the database, its clock).
    Other storages: trials whose dptune ``heartbeat`` stamp is older than the grace period;
    trials that never stamped one are left alone (they carry no parameters, so nobody waits
    for them, and GridSampler still offers their point).
    """
    import optuna
    from optuna.trial import TrialState

    if _heartbeat_enabled(study._storage):
        optuna.storages.fail_stale_trials(study)
        return
    _, grace = heartbeat_settings()
    now = time.time()
    storage = study._storage
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        beat = t.user_attrs.get("heartbeat")
        if beat is None or now - float(beat) <= grace:
            continue
        try:
            failed = storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
        except Exception:  # noqa: BLE001 - another worker failed (or finished) it first
            continue
        if failed:
            _requeue_stale(study, storage.get_trial(t._trial_id))


def _live_running(study: optuna.Study) -> list[FrozenTrial]:
    """RUNNING trials after the dead ones were failed: the live workers' trials."""
    from optuna.trial import TrialState

    _fail_stale(study)
    return study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))


def _must_wait(study: optuna.Study, trial: optuna.Trial, params: dict[str, Any]) -> bool:
    """Whether another *live* trial owns this grid point, so this one should wait for its part.

    A live trial owns the point when it is computing it (user attribute ``state="computing"``) or
    when it is older (lower number) and not computing yet: exactly one of any set of live
    duplicates computes, and no two wait for each other (a waiting trial is never computing).
    Dead workers' trials are failed first (:func:`_fail_stale`). Two trials that pass this check
    at the same instant are sorted out by :func:`_claim`; should a duplicate still be written
    (a storage that is not read-your-writes), the store keeps the first part and discards it.
    """
    for t in _live_running(study):
        if t.number == trial.number or t.params != params:
            continue
        if t.user_attrs.get("state") == "computing" or t.number < trial.number:
            return True
    return False


def worker_id() -> str:
    """``host:pid`` of this process, recorded on every trial it runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim(study: optuna.Study, trial: optuna.Trial, params: dict[str, Any]) -> bool:
    """Mark this trial ``computing``, then check that no other live trial on the point is
    computing too; if one is, step back (state ``waiting``) and return False.

    Flag first, look second: of two trials that passed :func:`_must_wait` at the same instant,
    the one that looks last sees the other's flag, so they never both compute; if both see each
    other, both step back and the older one wins the next round (:func:`_must_wait`).
    """
    trial.set_user_attr("state", "computing")
    for t in _live_running(study):
        if t.number != trial.number and t.params == params and t.user_attrs.get("state") == "computing":
            trial.set_user_attr("state", "waiting")
            return False
    return True


def _owned_by_live(study: optuna.Study, tasks: list[Task]) -> bool:
    """Whether a live trial (fresh heartbeat) is on one of these units."""
    keys = {_key({"fold": t.fold, **t.params}) for t in tasks}
    return any(t.params and _key(t.params) in keys for t in _live_running(study))


def _requeue_missing(study: optuna.Study, tasks: list[Task]) -> int:
    """Queue again the grid points whose part is missing although optuna counts them finished
    (their trials failed: a unit that raised, retries exhausted, parts deleted). Returns how many."""
    import optuna
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    waiting = {t.system_attrs.get("grid_id") for t in trials if t.state == TrialState.WAITING}
    running = {_key(t.params) for t in trials if t.params and t.state == TrialState.RUNNING}
    latest: dict[str, Any] = {}
    for t in trials:
        if t.params and "grid_id" in t.system_attrs:
            latest[_key(t.params)] = t
    n = 0
    for task in tasks:
        key = _key({"fold": task.fold, **task.params})
        t = latest.get(key)
        if t is None or key in running or t.system_attrs["grid_id"] in waiting:
            continue
        study.add_trial(optuna.trial.create_trial(
            state=TrialState.WAITING,
            system_attrs={"grid_id": t.system_attrs["grid_id"],
                          "search_space": t.system_attrs["search_space"],
                          "requeued_from": t.number},
        ))
        n += 1
    return n


def worker(exp: Experiment, results: str | Path, storage_url: str | None = None,
           algorithms: Sequence[str] | None = None, wait_seconds: float | None = None) -> int:
    """Work on the experiment's validation units until none is left; returns units computed here.

    Any number of workers (processes, machines) may run this against one storage and one shared
    results directory: each asks optuna's GridSampler for a grid point (= a unit), skips it when
    its part exists, leaves it to a live worker that owns it (:func:`_must_wait`), and otherwise
    computes and writes it. A first round over the algorithms never waits (an owned point is
    marked PRUNED, "deferred", and the worker moves on, so idle workers start the next algorithm
    instead of watching the last units of this one); a second round waits for the units still
    owned by live workers and redoes those of dead ones. Units whose trials failed are queued
    again, for at most ``MAX_PASSES`` grid walks per algorithm.
    """
    import optuna

    root = Path(results)
    store = ResultStore(root)
    storage = open_storage(storage_url, root)
    interval, _ = heartbeat_settings()
    wait = min(1.0, float(interval)) if wait_seconds is None else wait_seconds
    prep = prepare(exp)
    folds = prep.fold_names
    me = worker_id()
    done_here = 0

    def missing(tasks: list[Task]) -> list[Task]:
        """Tasks whose part is not written yet."""
        return [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]

    def evaluate_point(trial: optuna.Trial, study: optuna.Study, space: dict[str, list[Any]],
                       lookup: dict[str, Task], patient: bool) -> float:
        """One trial: skip a written unit, defer to or wait for its live owner, or compute it."""
        nonlocal done_here
        params = {name: trial.suggest_categorical(name, choices) for name, choices in space.items()}
        task = lookup[_key(params)]
        trial.set_user_attr("unit", task.unit)
        trial.set_user_attr("config_ids", list(task.config_ids))
        trial.set_user_attr("worker", me)
        state = "skipped"
        while not store.has_part(task.algorithm, task.fold, task.unit):
            if _must_wait(study, trial, params) or not _claim(study, trial, params):
                if not patient:
                    trial.set_user_attr("state", "deferred")
                    raise optuna.TrialPruned("a live worker owns this unit")
                state = "waited"
                time.sleep(wait)
                continue
            run_unit(exp, task, store)
            done_here += 1
            state = "computed"
            break
        trial.set_user_attr("state", state)
        return _primary_mean(exp, store, task)

    def make_objective(study: optuna.Study, space: dict[str, list[Any]], lookup: dict[str, Task],
                       patient: bool) -> Callable[[optuna.Trial], float]:
        """The optuna objective: a heartbeat first, then :func:`evaluate_point`."""
        def objective(trial: optuna.Trial) -> float:
            # A heartbeat before the parameters are visible: a trial that others see on their
            # grid point can always be found stale if its worker dies.
            if _heartbeat_enabled(study._storage):
                study._storage.record_heartbeat(trial._trial_id)
                return evaluate_point(trial, study, space, lookup, patient)
            with _Pulse(study, trial, interval):
                return evaluate_point(trial, study, space, lookup, patient)
        return objective

    def make_stop(tasks: list[Task]) -> Callable[[optuna.Study, FrozenTrial], None]:
        """A callback that stops the study once every part of ``tasks`` is written."""
        def stop_when_complete(study: optuna.Study, trial: FrozenTrial) -> None:
            if not missing(tasks):
                study.stop()
        return stop_when_complete

    work = []
    for alg in exp.algorithms:
        if algorithms is not None and alg.name not in algorithms:
            continue
        tasks = plan(exp, alg.name, folds)
        if missing(tasks):
            study, space = _study(exp, alg.name, storage, folds)
            lookup = {_key({"fold": t.fold, **t.params}): t for t in tasks}
            work.append((tasks, study, space, lookup))

    for tasks, study, space, lookup in work:  # round 1: take free units, never wait
        if missing(tasks):
            study.optimize(make_objective(study, space, lookup, patient=False),
                           callbacks=[make_stop(tasks)], gc_after_trial=False)
    for tasks, study, space, lookup in work:  # round 2: wait for owned units, redo dead ones
        passes = 0
        while missing(tasks) and passes < MAX_PASSES:
            study.optimize(make_objective(study, space, lookup, patient=True),
                           callbacks=[make_stop(tasks)], gc_after_trial=False)
            # The grid walk ended with parts missing. Units that live workers are computing:
            # wait for their parts (or their death, which queues them again) without new trials.
            owned = False
            while missing(tasks) and _owned_by_live(study, missing(tasks)):
                owned = True
                time.sleep(wait)
            if owned or not missing(tasks):
                continue  # done, or an owner died and the stale callback queued its point again
            # Units whose trials failed (or that lost their part): queue their points again.
            _requeue_missing(study, missing(tasks))
            passes += 1
    return done_here


def _key(params: dict[str, Any]) -> str:
    """Canonical JSON of a grid point's parameters (fold + unit hyperparameters)."""
    return json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=repr)


# --------------------------------------------------------------------------- the whole run
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "dptune": __version__}
    for pkg in ("numpy", "scipy", "pandas", "pyarrow", "cornac", "optuna", "numba", "joblib", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_manifest(exp: Experiment, prep: Prepared, fold_users: dict[str, int]) -> dict[str, Any]:
    """Everything needed to interpret and reproduce the store (data, split, seeds, protocol)."""
    ds = prep.dataset
    return {
        "experiment": exp.name,
        "experiment_file": str(Path(exp.source).resolve()) if Path(exp.source).is_file() else exp.source,
        "fingerprint": exp.fingerprint(),
        "dataset": {"name": ds.name, "source": ds.source, **dataset_stats(ds), "log": list(ds.log)},
        "split": {
            "method": exp.split.method, "train_ratio": exp.split.train_ratio,
            "min_user_interactions": exp.split.min_user_interactions,
            "folds": exp.split.folds, "fold_method": exp.split.fold_method,
            "split_seed": exp.split_seed,
            "dropped_users": int(len(prep.holdout.dropped_users)),
            "train_interactions": int(len(prep.holdout.train)),
            "test_interactions": int(len(prep.holdout.test)),
            "users_evaluated": fold_users,
        },
        "seeds": {"experiment": exp.seed, "split": exp.split_seed, "analysis": exp.analysis_seed,
                  "units": "derive_seed(experiment seed, algorithm, fold, unit params); per unit in trials.csv"},
        "evaluation": {
            "protocol": "all unrated items (every item of the data set not in the user's training data)",
            "relevance_threshold": exp.evaluation.relevance_threshold,
            "relevance_rule": ("every held-out interaction (implicit feedback: the data has no "
                               "ratings, the threshold does not apply)" if ds.implicit
                               else f"rating >= {exp.evaluation.relevance_threshold}"),
            "implicit_feedback": ds.implicit,
            "metrics": list(exp.evaluation.metrics), "cutoffs": list(exp.evaluation.cutoffs),
            "novelty_variant": exp.evaluation.novelty,
            "users": "users with at least one relevant held-out item",
            "value_dtype": "float32",
        },
        "algorithms": [
            {"name": a.name, "type": a.type, "grid": a.grid, "grid_fingerprint": exp.grids[a.name].fingerprint(),
             "free": exp.grids[a.name].free, "derived": {k: list(v) for k, v in exp.grids[a.name].derived.items()},
             "n_configs": exp.grids[a.name].size}
            for a in exp.algorithms
        ],
        "analysis": dict(exp.to_dict()["analysis"]),
        "config": exp.to_dict(),
        "versions": _versions(),
    }


def validate_experiment(exp: Experiment) -> None:
    """Check every algorithm's grid against its model family before anything is computed.

    A hyperparameter the model does not know (``kk`` for ``k``), a missing one or a value of the
    wrong type is one error naming the grid file and the key, so a sweep whose second algorithm
    has a bad grid stops before the first one trains.
    """
    for i, alg in enumerate(exp.algorithms):
        try:
            family = get_family(alg.type)
        except DptuneError as err:
            raise input_error(exp.source, f"algorithms[{i}].type", str(err).split(": ", 2)[-1]) from None
        family.validate(exp.grids[alg.name].configs(), source=alg.grid_path or alg.grid)


def init_results(exp: Experiment, results: str | Path,
                 storage_url: str | None = None) -> tuple[ResultStore, Prepared]:
    """Create (or reopen) the results directory; refuse one that holds a different experiment.

    Everything that can be checked is checked before the first write: grids against their
    models, the data and every fold (a fold without users is an error), the results directory
    (writable, same experiment set-up) and the optuna storage (reachable).
    """
    validate_experiment(exp)
    prep = prepare(exp)
    fold_users = prep.check_folds()
    store = ResultStore(results).create()
    if store.exists():
        old = store.manifest().get("fingerprint")
        if old != exp.fingerprint():
            raise input_error(store.root, "manifest.json",
                              f"holds results of a different experiment set-up (fingerprint {old}, "
                              f"now {exp.fingerprint()}); use another --results directory")
    open_storage(storage_url, store.root)  # creates the schema once, before workers race on it
    store.write_manifest(build_manifest(exp, prep, fold_users))
    store.write_configs([exp.grids[a.name].frame(a.name) for a in exp.algorithms])
    store.write_users(prep.dataset.user_ids)
    return store, prep


class _Progress:
    """A tqdm bar (done/total and ETA) fed by counting finished parts in the store."""

    def __init__(self, store: ResultStore, tasks: list[Task], desc: str, enabled: bool):
        self.store, self.tasks, self.enabled = store, tasks, enabled
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=len(tasks), desc=desc, unit="unit", dynamic_ncols=True,
                            smoothing=0.1, initial=self.count())

    def count(self) -> int:
        return sum(self.store.has_part(t.algorithm, t.fold, t.unit) for t in self.tasks)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.n = self.count()
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.update()
            self.bar.close()


def _run_in_background(fn, poll, interval: float = 0.5):
    """Run ``fn`` in a thread while the caller polls progress; re-raise its exception."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err

    th = threading.Thread(target=target, daemon=True)
    th.start()
    while th.is_alive():
        th.join(interval)
        poll()
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _parallel_workers(exp: Experiment, results: Path, storage_url: str | None, jobs: int) -> None:
    run_parallel(worker, [(exp, results, storage_url)] * jobs, jobs)


def _run_tasks(exp: Experiment, store: ResultStore, tasks: list[Task], jobs: int) -> None:
    todo = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
    run_parallel(_run_one, [(exp, str(store.root), t) for t in todo], jobs)


def _run_one(exp: Experiment, root: str, task: Task) -> None:
    store = ResultStore(root)
    if not store.has_part(task.algorithm, task.fold, task.unit):
        run_unit(exp, task, store)


def test_tasks(exp: Experiment, store: ResultStore) -> list[Task]:
    """Test-split tasks: the best configuration of every metric@cutoff, trained on the whole
    training part (units group them, so BPR snapshots are shared)."""
    best = store.best_configs()
    tasks = []
    for alg in exp.algorithms:
        chosen = sorted(set(best.loc[best["algorithm"] == alg.name, "config_id"].astype(int)))
        if not chosen:
            continue
        configs = exp.grids[alg.name].configs()
        dims = unit_dimensions(exp, alg.name)
        for unit in plan_units(exp, alg.name, chosen):
            params = {h: configs[unit[0]][h] for h in dims}
            tag = zlib.crc32(json.dumps(unit).encode())
            tasks.append(Task(alg.name, "test", f"t{tag:08x}", tuple(unit), params))
    return tasks


def run_experiment(exp: Experiment, results: str | Path, storage_url: str | None = None,
                   jobs: int | None = None, progress: bool = True) -> ResultStore:
    """Run (or resume) the whole sweep: validation units through optuna workers, then the
    chosen configurations on the test split; returns the store."""
    jobs = jobs or exp.sweep.jobs
    storage_url = storage_url or exp.sweep.storage
    root = Path(results)
    store, prep = init_results(exp, root, storage_url)
    tasks = [t for a in exp.algorithms for t in plan(exp, a.name, prep.fold_names)]
    bar = _Progress(store, tasks, f"{exp.name}: validation", progress)
    try:
        for _attempt in range(3):
            _run_in_background(lambda: _parallel_workers(exp, root, storage_url, jobs), bar.update)
            missing = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
            if not missing:
                break
            # A worker died with trials marked RUNNING: finish them here, deterministically.
            _run_in_background(lambda m=missing: _run_tasks(exp, store, m, jobs), bar.update)
    finally:
        bar.close()
    store.refresh()
    if exp.evaluation.test_split:
        ttasks = test_tasks(exp, store)
        tbar = _Progress(store, ttasks, f"{exp.name}: test split", progress)
        try:
            _run_in_background(lambda: _run_tasks(exp, store, ttasks, jobs), tbar.update)
        finally:
            tbar.close()
    store.refresh()
    store.write_trials()
    store.remove_stale_temporaries()
    return store


def experiment_from_manifest(store: ResultStore) -> Experiment:
    """The experiment a results directory was made with: its experiment file when it still
    describes the same set-up, else the set-up recorded in ``manifest.json`` (grid files must
    still exist). Lets ``dptune status RESULTS_DIR`` work from any directory."""
    from dptune.config import load_experiment, parse_experiment

    man = store.manifest()
    fingerprint = man.get("fingerprint")
    path = Path(str(man.get("experiment_file", "")))
    if path.is_file():
        try:
            exp = load_experiment(path)
        except DptuneError:
            exp = None
        if exp is not None and exp.fingerprint() == fingerprint:
            return exp
    cfg = man.get("config") or {}
    data = {k: cfg[k] for k in ("name", "seed", "description", "data", "split", "evaluation",
                                "analysis", "sweep") if k in cfg}
    data["algorithms"] = [{"name": a["name"], "type": a["type"], "grid": a.get("grid_path") or a["grid"]}
                          for a in cfg.get("algorithms", [])]
    exp = parse_experiment(data, source=str(store.root / "manifest.json"))
    if exp.fingerprint() != fingerprint:
        raise input_error(store.root / "manifest.json", "fingerprint",
                          "the experiment's grid files changed since the sweep; pass --config")
    return exp


def status(exp: Experiment | None, results: str | Path, storage_url: str | None = None) -> dict[str, Any]:
    """Done / running / failed / remaining units of a sweep, per algorithm.

    ``done`` counts the parts in the results directory (the ground truth); when there is no
    results directory here (``dptune status --config X --storage URL`` on a machine that only
    sees the database) it counts grid points with a COMPLETE trial instead. ``running`` and
    ``failed`` are units not done whose latest trials are RUNNING (live: stale trials are
    failed first) or FAILED and not queued again; ``remaining`` = total - done. The optuna
    side is read from ``storage_url``, else from ``RESULTS_DIR/optuna.db`` when it exists.
    """
    import optuna
    from optuna.trial import TrialState

    store = ResultStore(results)
    have_parts = store.exists()
    if exp is None:
        exp = experiment_from_manifest(store)
    folds = [str(f) for f in range(exp.split.folds)]
    default_db = store.root / "optuna.db"
    storage = None
    if storage_url is not None or default_db.is_file():
        storage = open_storage(storage_url, store.root)
    out: dict[str, Any] = {
        "results": str(store.root), "source": "parts" if have_parts else "optuna",
        "storage": _safe_url(storage_url) if storage_url else (str(default_db) if storage else None),
        "algorithms": {},
    }
    for a in exp.algorithms:
        trials: list[Any] = []
        if storage is not None:
            try:
                st = optuna.load_study(study_name=study_name(exp, a.name), storage=storage)
            except KeyError:
                st = None
            if st is not None:
                _fail_stale(st)
                trials = st.get_trials(deepcopy=False)
        # Queued (WAITING) trials carry only a grid_id: name their point through other trials.
        point = {t.system_attrs["grid_id"]: _key(t.params) for t in trials
                 if t.params and "grid_id" in t.system_attrs}
        states: dict[str, set[TrialState]] = {}
        for t in trials:
            key = _key(t.params) if t.params else point.get(t.system_attrs.get("grid_id"))
            if key is not None:
                states.setdefault(key, set()).add(t.state)
        tasks = plan(exp, a.name, folds)
        done = running = failed = queued = 0
        for t in tasks:
            seen = states.get(_key({"fold": t.fold, **t.params}), set())
            if store.has_part(t.algorithm, t.fold, t.unit) if have_parts else TrialState.COMPLETE in seen:
                done += 1
            elif TrialState.RUNNING in seen:
                running += 1
            elif TrialState.WAITING in seen:
                queued += 1
            elif TrialState.FAIL in seen:
                failed += 1
        out["algorithms"][a.name] = {
            "total": len(tasks), "done": done, "remaining": len(tasks) - done,
            "running": running, "failed": failed, "queued": queued,
        }
    return out
