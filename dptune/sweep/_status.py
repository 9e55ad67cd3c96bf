"""Status of a sweep: done / running / failed / queued / remaining units per algorithm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dptune.config import Experiment
from dptune.store._store import ResultStore
from dptune.sweep._claims import _fail_stale
from dptune.sweep._manifest import experiment_from_manifest
from dptune.sweep._plan import _key, plan
from dptune.sweep._storage import _safe_url, open_storage, study_name


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
