"""The sweep: train and evaluate every (algorithm, unit, fold) of an experiment, crash-safely.

A *unit* is what one model run produces (docs/design.md): all k of a KNN on one fold (one
similarity), all iteration counts of one BPR-MF (factors, learning rate) on one fold (snapshots of
one training run). optuna drives the units: one study per (experiment, algorithm) whose
``GridSampler`` search space is the fold plus the hyperparameters that are constant within a unit,
kept in an optuna storage (SQLite in the results directory by default, any optuna storage URL
otherwise), so a re-run or any number of workers skip finished units. The result store is the
ground truth: a unit whose Parquet part exists is never recomputed, and a duplicate computed by a
racing worker is bit-identical (seeds derive from the unit) and replaces the file atomically.
"""

from __future__ import annotations

import json
import os
import platform
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptune import __version__
from dptune.config import Experiment
from dptune.data import Dataset, dataset_stats, load_dataset
from dptune.errors import DptuneError, input_error
from dptune.metrics import METRICS, evaluate, novelty_vectors
from dptune.models import get_family
from dptune.split import (
    HoldOut,
    cv_fold_labels,
    leave_one_out,
    random_holdout,
    temporal_holdout,
)
from dptune.store import ResultStore, UnitResult

HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 30


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
        self.dataset: Dataset = load_dataset(d.source, fmt=d.format, min_rating=d.min_rating, kcore=d.kcore)
        s = exp.split
        r = self.dataset.ratings
        if s.method == "temporal":
            self.holdout: HoldOut = temporal_holdout(r, s.train_ratio, s.min_user_interactions)
        elif s.method == "random":
            self.holdout = random_holdout(r, s.train_ratio, exp.split_seed, s.min_user_interactions)
        else:
            self.holdout = leave_one_out(r, s.min_user_interactions)
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
        rel = held[held["rating"].to_numpy() >= self.exp.evaluation.relevance_threshold]
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
    path = store.root / "per_user.parquet" / f"{task.algorithm}__{task.fold}__{task.unit}.parquet"
    meta = store.part_meta(path)
    key = f"{exp.analysis.primary_metric}@{exp.analysis.primary_cutoff}"
    vals = [m.get(key, float("nan")) for m in meta["means"].values()]
    return float(np.nanmax(vals)) if vals else float("nan")


# --------------------------------------------------------------------------- optuna coordination
def open_storage(url: str | None, root: Path):
    """An optuna storage: ``url`` (any RDB URL, or a ``*.journal`` path / ``journal:PATH``), or
    ``sqlite:///<root>/optuna.db`` by default. RDB storages get heartbeats so that a killed
    worker's RUNNING trials are failed and retried."""
    import warnings

    import optuna
    from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
    from optuna.storages.journal import JournalFileBackend

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

    url = url or f"sqlite:///{(root / 'optuna.db').resolve()}"
    try:
        if url.startswith("journal:") or url.endswith(".journal"):
            path = url[len("journal:"):] if url.startswith("journal:") else url
            return JournalStorage(JournalFileBackend(path))
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["engine_kwargs"] = {"connect_args": {"timeout": 120}}
        else:
            kwargs["engine_kwargs"] = {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        return RDBStorage(url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=GRACE_SECONDS,
                          heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=3),
                          **kwargs)
    except DptuneError:
        raise
    except Exception as err:  # connection refused, bad URL, missing driver ...
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise input_error("--storage", None, f"cannot open optuna storage {url!r}: {msg}") from None


def _study(exp: Experiment, algorithm: str, storage, tasks: list[Task], folds: list[str]):
    import optuna

    dims = unit_dimensions(exp, algorithm)
    space: dict[str, list[Any]] = {"fold": list(folds)}
    grid = exp.grids[algorithm]
    for h in dims:
        space[h] = list(grid.values[h])
    sampler = optuna.samplers.GridSampler(space, seed=exp.seed)
    study = optuna.create_study(study_name=f"{exp.name}/{algorithm}", storage=storage,
                                sampler=sampler, direction="maximize", load_if_exists=True)
    return study, space


def _live_duplicate(study, trial, params: dict[str, Any]) -> bool:
    """Another RUNNING trial with the same grid point and a fresh heartbeat exists."""
    import optuna
    from optuna.trial import TrialState

    storage = study._storage
    if isinstance(storage, optuna.storages.RDBStorage):
        optuna.storages.fail_stale_trials(study)
    elif not getattr(storage, "is_heartbeat_enabled", lambda: False)():
        return False  # no liveness information: compute; the duplicate is discarded deterministically
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.number != trial.number and t.params == params:
            return True
    return False


def worker(exp: Experiment, results: str | Path, storage_url: str | None = None,
           algorithms: Sequence[str] | None = None, wait_seconds: float = 1.0) -> int:
    """Work on the experiment's validation units until none is left; returns units computed here.

    Any number of workers (processes, machines) may run this against one storage and one shared
    results directory: each asks optuna's GridSampler for a grid point, skips it when its part
    exists, waits when a live worker is on it, and otherwise computes and writes it.
    """
    import optuna

    root = Path(results)
    store = ResultStore(root)
    storage = open_storage(storage_url, root)
    prep = prepare(exp)
    folds = prep.fold_names
    done_here = 0
    for alg in exp.algorithms:
        if algorithms is not None and alg.name not in algorithms:
            continue
        tasks = plan(exp, alg.name, folds)
        if all(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
            continue
        study, space = _study(exp, alg.name, storage, tasks, folds)
        lookup = {_key({"fold": t.fold, **t.params}): t for t in tasks}

        def objective(trial, lookup=lookup, space=space, study=study):
            nonlocal done_here
            params = {name: trial.suggest_categorical(name, choices) for name, choices in space.items()}
            task = lookup[_key(params)]
            trial.set_user_attr("unit", task.unit)
            trial.set_user_attr("config_ids", list(task.config_ids))
            while not store.has_part(task.algorithm, task.fold, task.unit):
                if _live_duplicate(study, trial, params):
                    time.sleep(wait_seconds)
                    continue
                run_unit(exp, task, store)
                done_here += 1
                break
            return _primary_mean(exp, store, task)

        def stop_when_complete(study, trial, tasks=tasks):
            if all(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
                study.stop()

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study.optimize(objective, callbacks=[stop_when_complete], gc_after_trial=False)
    return done_here


def _key(params: dict[str, Any]) -> str:
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
        "experiment_file": exp.source,
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
            "relevance_rule": f"rating >= {exp.evaluation.relevance_threshold}",
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


def init_results(exp: Experiment, results: str | Path,
                 storage_url: str | None = None) -> tuple[ResultStore, Prepared]:
    """Create (or reopen) the results directory; refuse one that holds a different experiment."""
    store = ResultStore(results).create()
    if store.exists():
        old = store.manifest().get("fingerprint")
        if old != exp.fingerprint():
            raise input_error(store.root, "manifest.json",
                              f"holds results of a different experiment set-up (fingerprint {old}, "
                              f"now {exp.fingerprint()}); use another --results directory")
    prep = prepare(exp)
    fold_users = prep.check_folds()
    store.write_manifest(build_manifest(exp, prep, fold_users))
    open_storage(storage_url, store.root)  # creates the schema once, before workers race on it
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
    from joblib import Parallel, delayed, parallel_config

    if jobs == 1:
        worker(exp, results, storage_url)
        return
    threads = max(1, (os.cpu_count() or 1) // jobs)
    with parallel_config(backend="loky", inner_max_num_threads=threads):
        Parallel(n_jobs=jobs)(delayed(worker)(exp, results, storage_url) for _ in range(jobs))


def _run_tasks(exp: Experiment, store: ResultStore, tasks: list[Task], jobs: int) -> None:
    from joblib import Parallel, delayed, parallel_config

    todo = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
    if jobs == 1 or len(todo) <= 1:
        for t in todo:
            run_unit(exp, t, store)
        return
    threads = max(1, (os.cpu_count() or 1) // jobs)
    with parallel_config(backend="loky", inner_max_num_threads=threads):
        Parallel(n_jobs=jobs)(delayed(_run_one)(exp, str(store.root), t) for t in todo)


def _run_one(exp: Experiment, root: str, task: Task) -> None:
    store = ResultStore(root)
    if not store.has_part(task.algorithm, task.fold, task.unit):
        run_unit(exp, task, store)


def test_tasks(exp: Experiment, store: ResultStore) -> list[Task]:
    """Test-split tasks: the best configuration of every metric@cutoff, trained on the whole
    training part (units group them, so BPR snapshots are shared)."""
    best = store.best_configs()
    tasks = []
    configs = None
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
    return store


def status(exp: Experiment | None, results: str | Path, storage_url: str | None = None) -> dict[str, Any]:
    """Done / running / failed / remaining units of a sweep (store first, optuna for running)."""
    store = ResultStore(results)
    out: dict[str, Any] = {"results": str(store.root), "algorithms": {}}
    if exp is None:
        exp_file = store.manifest()["experiment_file"]
        from dptune.config import load_experiment

        exp = load_experiment(exp_file)
    folds = [str(f) for f in range(exp.split.folds)]
    running = failed = {}
    try:
        import optuna
        from optuna.trial import TrialState

        storage = open_storage(storage_url, store.root)
        for a in exp.algorithms:
            try:
                st = optuna.load_study(study_name=f"{exp.name}/{a.name}", storage=storage)
            except KeyError:
                continue
            trials = st.get_trials(deepcopy=False)
            running = {**running, a.name: sum(t.state == TrialState.RUNNING for t in trials)}
            failed = {**failed, a.name: sum(t.state == TrialState.FAIL for t in trials)}
    except DptuneError:
        pass
    for a in exp.algorithms:
        tasks = plan(exp, a.name, folds)
        done = sum(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks)
        out["algorithms"][a.name] = {
            "total": len(tasks), "done": done, "remaining": len(tasks) - done,
            "running": running.get(a.name, 0), "failed": failed.get(a.name, 0),
        }
    return out
