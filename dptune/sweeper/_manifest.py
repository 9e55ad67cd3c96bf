"""The results directory's set-up: manifest (everything needed to interpret and reproduce the
store), the checks made before the first write, and the experiment read back from a manifest.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from dptune._version import __version__
from dptune.config import NOT_FINGERPRINTED, Budget, Experiment
from dptune.data._dataset import check_cutoffs, dataset_stats
from dptune.errors import DptuneError, input_error
from dptune.models import get_family
from dptune.store._integrity import entry_fingerprints
from dptune.store._outside import check_results_target
from dptune.store._schema import PARTS
from dptune.store._store import ResultStore
from dptune.sweeper._plan import plan_units
from dptune.sweeper._prepare import Prepared, prepare
from dptune.sweeper._storage import check_url, open_storage, storage_place
from dptune.sweeper.design import (
    Design,
    experiment_budget,
    recorded_design,
    resolve_design,
    write_design,
)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "dptune": __version__}
    for pkg in ("numpy", "scipy", "pandas", "pyarrow", "cornac", "optuna", "numba", "joblib", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def frames_digest(frames: Sequence[Any], labels: Any = None) -> str:
    """SHA-256 (its first 16 hex digits) of tables of interactions: every column of each of
    ``frames`` in turn (in sorted order of the column names: the name, then the values as
    int64/float64 bytes in the table's row order), then ``labels`` (as int64) when given. The
    one digest of data in dptune: :func:`data_digest` is it over a sweep's split, the split-seed
    study's cache key over the ratings it reads
    (:func:`dptune.studies.seeds.runs.fingerprint`)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for frame in frames:
        for col in sorted(frame.columns):
            values = frame[col].to_numpy()
            kind = np.float64 if values.dtype.kind == "f" else np.int64
            h.update(col.encode())
            h.update(np.ascontiguousarray(values.astype(kind)).tobytes())
    if labels is not None:
        h.update(np.ascontiguousarray(np.asarray(labels, dtype=np.int64)).tobytes())
    return h.hexdigest()[:16]


def data_digest(prep: Prepared) -> str:
    """:func:`frames_digest` of what the per-user results are computed from: every interaction
    of the test split and of the training part (user, item, rating, timestamp, in the split's
    order) and the fold label of each training interaction. A data file changed in place (rows
    added, removed or edited) gives another digest, while the experiment's settings, and so its
    fingerprint, stay the same."""
    return frames_digest((prep.holdout.train, prep.holdout.test), prep.labels)


def build_manifest(exp: Experiment, prep: Prepared, fold_users: dict[str, int]) -> dict[str, Any]:
    """Everything needed to interpret and reproduce the store (data, split, seeds, protocol)."""
    ds = prep.dataset
    return {
        "data_digest": data_digest(prep),
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
             "n_configs": exp.grids[a.name].size,
             # unit u<k> holds units[k]: every part's name and configurations are checked
             # against it (dptune/store/_identity.py)
             "units": plan_units(exp, a.name)}
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
    has a bad grid stops before the first one trains. An experiment in which no algorithm has two
    configurations (only ``cornac:MostPop``, say) has nothing to compare: it is refused here too,
    before the sweep, instead of ending without any DP after it.
    """
    for i, alg in enumerate(exp.algorithms):
        try:
            family = get_family(alg.type)
        except DptuneError as err:
            raise input_error(exp.source, f"algorithms[{i}].type", str(err).split(": ", 2)[-1]) from None
        family.check(exp.grids[alg.name].configs(), source=_grid_source(exp, i))
    sizes = {a.name: exp.grids[a.name].size for a in exp.algorithms}
    if max(sizes.values(), default=0) < 2:
        each = ", ".join(f"{a}: {n} configuration{'s' if n != 1 else ''}" for a, n in sizes.items())
        raise input_error(exp.source, "algorithms",
                          f"nothing to compare: no algorithm has two configurations ({each}); "
                          "discriminative power compares pairs of configurations of one "
                          "algorithm, so give at least one algorithm a grid with two or more values")


def check_worker_models(exp: Experiment, jobs: int) -> None:
    """With ``jobs > 1``, refuse before any work a model type that the sweep's worker processes
    cannot build: a name given to :func:`dptune.models.register` for a class of ``__main__`` (a
    script, a notebook), which another process cannot import. It is the one line that the first
    worker process would otherwise raise mid-sweep (``check_importable`` of
    :mod:`dptune.models._adapters`), exit code 2, before anything is written. ``jobs = 1`` builds every
    model in this process, where such a class works, so nothing is checked then."""
    if jobs <= 1:
        return
    from dptune.models import _adapters

    for alg in exp.algorithms:
        if isinstance(alg.type, str):
            _adapters.check_importable(alg.type.strip())


def _grid_source(exp: Experiment, i: int) -> str:
    """What a message about ``algorithms[i]``'s configurations names: its grid file, else the
    experiment file's entry (an algorithm without a grid)."""
    return exp.algorithms[i].grid or f"{exp.source}: algorithms[{i}]"


def check_memory(exp: Experiment, prep: Prepared, jobs: int) -> None:
    """Refuse, before any work, a grid whose largest configuration's learned state
    (:meth:`dptune.models.Family.memory_bytes` on the data's users and items), times the
    ``jobs`` units trained at once, exceeds this machine's physical memory: one line naming
    the grid file and the hyperparameter it grows with, where a BPR-MF grid with 10^11 factors
    used to fail on memory after the results directory was made. On a device (``[sweep]
    device``) the learned state lives in the device's memory, which is not known here before
    the device is opened: nothing is checked."""
    from dptune._resources import check_fits

    if exp.sweep.device != "cpu":
        return
    n_users, n_items = prep.shape
    for i, alg in enumerate(exp.algorithms):
        family = get_family(alg.type)
        source = _grid_source(exp, i)
        configs = family.validate(exp.grids[alg.name].configs(), source)
        sizes = [family.memory_bytes(c, n_users, n_items) for c in configs]
        largest = max(sizes, default=0.0)
        if largest <= 0:
            continue
        key = family.memory_grows_with
        big = configs[sizes.index(largest)]
        at_once = f" ({jobs} units at once)" if jobs > 1 else ""
        check_fits(largest * jobs, source, key,
                   f"{alg.name} with {key} = {big[key]:,} on {n_users:,} users and "
                   f"{n_items:,} items{at_once}")


# algorithms are compared one by one below (type, grid values)
_IGNORED = (*NOT_FINGERPRINTED, "algorithms")


def _normal(v: Any) -> Any:
    """A setting as JSON would hold it, for comparison: tuples as lists, numbers as floats
    (``10`` and ``10.0`` are the same value), mapping keys as strings in any order."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        return {str(k): _normal(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_normal(x) for x in v]
    if hasattr(v, "item"):  # a numpy scalar
        return _normal(v.item())
    return str(v)


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    """``{"split.folds": 3, ...}`` of a nested dict (lists stay values)."""
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}."))
    return out


def setup_changes(manifest: dict[str, Any], exp: Experiment) -> list[str]:
    """The settings that make ``exp`` a different set-up from the one recorded in ``manifest``
    (what :meth:`Experiment.fingerprint` hashes): ``"split.folds: 3 -> 5"``, an algorithm added
    or removed, its type or its grid's values changed. Empty when the manifest predates the
    recorded configuration."""
    old_cfg, new_cfg = manifest.get("config") or {}, exp.to_dict()
    if not old_cfg:
        return []
    old = _flat({k: v for k, v in old_cfg.items() if k not in _IGNORED})
    new = _flat({k: v for k, v in new_cfg.items() if k not in _IGNORED})
    out = [f"{k}: {old.get(k, '(unset)')!r} -> {new.get(k, '(unset)')!r}"
           for k in sorted(set(old) | set(new)) if _normal(old.get(k)) != _normal(new.get(k))]
    device = (old_cfg.get("sweep") or {}).get("device", "cpu")  # the one [sweep] setting hashed
    if device != exp.sweep.device:
        out.append(f"sweep.device: {device!r} -> {exp.sweep.device!r}")
    before = {a["name"]: a for a in manifest.get("algorithms", [])}
    now = {a.name: a for a in exp.algorithms}
    for name in before.keys() - now.keys():
        out.append(f"algorithm {name!r} removed")
    for name in now.keys() - before.keys():
        out.append(f"algorithm {name!r} added")
    for name in sorted(before.keys() & now.keys()):
        if before[name].get("type") != now[name].type:
            out.append(f"algorithms.{name}.type: {before[name].get('type')!r} -> {now[name].type!r}")
        if before[name].get("grid_fingerprint") != exp.grids[name].fingerprint():
            out.append(f"algorithms.{name}: grid values changed ({now[name].grid})")
    return out


def init_results(exp: Experiment, results: str | Path, storage_url: str | None = None,
                 budget: Budget | None = None, jobs: int | None = None,
                 min_fold_users: int | None = None) -> tuple[ResultStore, Prepared, Design]:
    """Create (or reopen) the results directory; refuse one that holds a different experiment;
    return the store, the prepared data and the design the sweep follows.

    Everything that can be checked is checked before the first write: grids against their
    models, the data and every fold (a fold without users is an error), the cutoffs against the
    data's items (:func:`dptune.data._dataset.check_cutoffs`), the budget (``budget``,
    else the experiment's ``[sweep] budget``, in whole rounds of the design order on ``jobs``
    cores, default ``[sweep] jobs``: :func:`dptune.sweeper.design.resolve_design`), the results
    directory (writable, same experiment set-up) and the optuna storage (reachable), the
    users of every fold against ``min_fold_users`` (default the experiment's). The design
    is written to ``design.json`` beside the manifest; a resumed sweep keeps the order recorded
    there.
    """
    validate_experiment(exp)
    where = storage_place(storage_url, exp)  # what a message about the storage names
    check_url(storage_url, where)
    prep = prepare(exp)
    check_cutoffs(prep.dataset, exp.evaluation.cutoffs, exp.source)
    fold_users = prep.check_folds(exp.analysis.min_fold_users if min_fold_users is None
                                  else min_fold_users)
    check_memory(exp, prep, exp.sweep.jobs if jobs is None else jobs)
    manifest = build_manifest(exp, prep, fold_users)
    design = resolve_design(exp, manifest, budget if budget is not None else experiment_budget(exp),
                            jobs, recorded_design(results))
    check_results_target(results)
    # the sweep treats a damaged part as not done (it is computed again), never as an error
    store = ResultStore(results, skip_damaged=True)
    made = _missing_dirs(store.root / PARTS)
    store.create()
    try:
        _check_data(_check_setup(store, exp), manifest, exp, store.root)
        # creates the schema once, before workers race on it
        open_storage(storage_url, store.root, where=where)
    except DptuneError:
        _remove_empty(made)  # a refused command leaves no empty results directory behind
        raise
    store.write_configs([exp.grids[a.name].frame(a.name) for a in exp.algorithms])
    store.write_users(prep.dataset.user_ids)
    store.write_manifest(manifest)  # last: checksums of both
    write_design(store.root, design)
    _note_set_aside(store, store.heal())
    return store, prep, design


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, deepest first: the directories that
    creating ``path`` makes."""
    return [d for d in (path, *path.parents) if not d.exists()]


def _remove_empty(dirs: list[Path]) -> None:
    """Remove the directories ``dirs`` (deepest first) that this command created, while they
    are empty: a results directory created just before its storage was refused goes again,
    while one in which another worker has meanwhile written anything is left as it is."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return


def _note_set_aside(store: ResultStore, healed: list[tuple[Path, str]]) -> None:
    """One line on stderr when parts not from this experiment were set aside (the sweep then
    computes this experiment's units in their place); damaged parts are recomputed quietly."""
    import sys

    from dptune.store._identity import QUARANTINE, Foreign

    foreign = [(p, why) for p, why in healed if isinstance(why, Foreign)]
    if not foreign:
        return
    (first, why), n = foreign[0], len(foreign)
    more = f" and {n - 1} more" if n > 1 else ""
    print(f"dptune: note: set aside {n} file{'s' if n != 1 else ''} not from this experiment in "
          f"{store.root / QUARANTINE}/ ({first.name}: {why}{more}); the missing units are "
          "computed again", file=sys.stderr)


#: What a refused sweep advises (:func:`_check_data`).
_DATA_FIX = "use another --results directory, or restore the data"


def _check_data(old: dict[str, Any] | None, manifest: dict[str, Any], exp: Experiment,
                root: Path, fix: str = _DATA_FIX) -> None:
    """Refuse a results directory (``root``, whose results recorded the manifest ``old``, as
    :func:`_check_setup` read it; None: nothing to protect, or a damaged manifest written again)
    made from other data under the same settings: a data file changed in place since (its
    digest, :func:`data_digest`, differs; a store from before digests were recorded: the data
    set's counts differ), whose parts would be mixed with the new data's in one analysis.
    ``fix``: what the line advises."""
    if old is None:
        return
    was, now = old.get("data_digest"), manifest["data_digest"]
    counts = ("users", "items", "ratings")
    before = {k: (old.get("dataset") or {}).get(k) for k in counts}
    after = {k: manifest["dataset"].get(k) for k in counts}
    if was is not None and was == now:
        return
    if was is None and (None in before.values() or before == after):
        return
    what = ", ".join(f"{k} {before[k]} now {after[k]}" for k in counts
                     if before[k] != after[k]) or f"data digest {was}, now {now}"
    raise input_error(exp.data_file, None, f"is not the data the results in {root} were "
                      f"made from ({what}): it changed since; {fix}")


def check_results_data(manifest: dict[str, Any], exp: Experiment, prep: Prepared, root: Path,
                       fix: str) -> None:
    """Refuse to read the results in ``root`` (their manifest ``manifest``) beside data that is
    not the data they were made from: ``prep``, the experiment's data as it is now, checked as
    ``dptune run`` and ``dptune worker`` check it (:func:`_check_data`: the digest, or the
    data set's counts for a store from before digests). A command that recomputes anything from
    the data (``dptune slices``: the users' slices) would otherwise mix the new data's numbers
    with the stored per-user values of the old. ``fix``: what the one line advises."""
    _check_data(manifest, {"data_digest": data_digest(prep),
                           "dataset": dataset_stats(prep.dataset)}, exp, root, fix)


def _check_setup(store: ResultStore, exp: Experiment) -> dict[str, Any] | None:
    """Refuse a results directory that holds results of another experiment set-up; return the
    manifest of the results it holds (None: no results, or a missing or damaged manifest), for
    :func:`_check_data`.

    The set-up is the manifest's fingerprint; when the manifest is missing or damaged it is the
    one the parts' index entries recorded (then the manifest is simply written again). A set-up
    that finished no unit (it stopped on a bad value) recorded nothing to protect and is
    replaced, so the corrected rerun is not refused.
    """
    if not store.holds_results():
        return None
    fp = exp.fingerprint()
    try:
        man = store.manifest() if store.exists() else None
    except DptuneError:
        man = None
    if man is not None:
        old = man.get("fingerprint")
        if old == fp:
            return man
        changed = setup_changes(man, exp)
        what = "; ".join(changed) if changed else f"fingerprint {old}, now {fp}"
        raise input_error(store.root, "manifest.json",
                          f"holds results of a different experiment set-up ({what}); "
                          "use another --results directory or restore these settings")
    recorded = entry_fingerprints(store.root)
    if recorded and recorded != {fp}:
        raise input_error(store.root, "manifest.json",
                          "missing or damaged, and the parts belong to a different experiment "
                          f"set-up (fingerprint {', '.join(sorted(recorded))}, now {fp}); use "
                          "another --results directory or restore these settings")
    if not recorded and store.exists():
        store.manifest()  # a store from before index entries: its damaged manifest is one line
    return None
