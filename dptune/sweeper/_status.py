"""Status of a run: validation units per algorithm (done / running / failed / queued /
remaining, and m of M units of the full grid with the budget), the projected time of the full
grid, then the test split, the noise floor and the analysis (report written, up to date)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dptune.config import Experiment
from dptune.errors import DptuneError, input_error
from dptune.store._files import side_file_problems
from dptune.store._integrity import entry_fingerprints, verified
from dptune.store._schema import part_fields
from dptune.store._store import PARTS, ResultStore
from dptune.sweeper._analysing import analysis_in_progress
from dptune.sweeper._claims import _live_running
from dptune.sweeper._cost import shape_from_manifest
from dptune.sweeper._plan import Task, _key, test_tasks
from dptune.sweeper._recorded import experiment_from_manifest
from dptune.sweeper._storage import (
    FLAG,
    _safe_url,
    check_url,
    open_storage,
    storage_errors,
    storage_place,
    study_name,
)
from dptune.sweeper.design import (
    AlgorithmDesign,
    Design,
    DesignUnit,
    experiment_design,
    hours_text,
    projection,
    read_design,
)
from dptune.sweeper.design._record import orders_units_of


def status(exp: Experiment | None, results: str | Path, storage_url: str | None = None,
           reports: str | Path | None = None, *, source: str | None = None) -> dict[str, Any]:
    """Done / running / failed / remaining units of a sweep, per algorithm, and how much of
    each full grid is done.

    The counts are of (unit, fold) tasks of the budget the sweep runs (the rounds of the design
    recorded in ``design.json``: :mod:`dptune.sweeper.design`; every unit without a budget).
    ``done`` counts the verified parts in the results directory (the ground truth; a damaged
    part, listed in ``damaged`` with the reason, counts as not done); when there is no
    results directory here (``dptune status --config X --storage URL`` on a machine that only
    sees the database) it counts grid points with a COMPLETE trial instead. ``running`` and
    ``failed`` are units not done whose latest trials are RUNNING (live: stale trials are
    failed first) or FAILED and not queued again (a trial interrupted by Ctrl-C or a stop signal
    is not a failure, and a RUNNING trial whose worker process on this host is gone runs
    nothing: their units are pending); ``remaining`` = total - done. The optuna
    side is read from ``storage_url``, else from the experiment's ``[sweep] storage`` (``exp``'s,
    else the one recorded in the results), else from ``RESULTS_DIR/optuna.db`` when it exists;
    a damaged storage is not repaired here. One given as ``storage_url`` (``--storage``) that
    cannot be opened (missing, damaged, unreachable) is a one-line error naming ``--storage``,
    raised before anything else is read: the caller named it, and a report from the parts
    alone would hide the mistake. One found by default (the experiment's, the results
    directory's) that cannot be opened is reported in ``storage_problem`` and the counts come
    from the parts alone (without parts, it is the error).

    ``units`` (per algorithm): ``done`` units whose every fold is done, of the full grid's
    ``total`` (``m of M units``), the ``budget`` units and ``rounds`` of ``round_size``, and a
    one-line ``text``; ``budget`` the budget as given (``None``: the full grid);
    ``projection`` the projected wall-clock hours of the full grid and of the budget on the
    experiment's ``[sweep] jobs`` cores, or on its device, from the cost model
    (:mod:`dptune.sweeper._cost`;
    ``None`` without a manifest or for a model type without a cost model).

    The later stages (each a dict with a ``state`` and a one-line ``text``): ``test`` (units of
    the best configurations on the test split), ``noise`` (A/A noise-floor parts) and
    ``analysis`` (``report.md`` in ``reports``, default ``reports/<name>``: being written by an
    analysis in progress, :mod:`dptune.sweeper._analysing`, else whether it is newer than
    every result); see :func:`stages`.

    An ``exp`` whose set-up is not the one of the results is refused, before anything is
    read from the storage (:func:`check_same_setup`; ``source`` names it in the message,
    default: its experiment file).
    """
    import optuna
    from optuna.trial import TrialState

    store = ResultStore(results, skip_damaged=True)
    storage = None
    given = storage_url is not None
    if given:
        # an explicit storage is the caller's input (``--storage``): one that cannot be read is
        # bad input, refused before anything else is read, parts or not
        storage = open_storage(storage_url, store.root, repair=False, where=FLAG)
    have_parts = store.exists()
    if exp is None:
        exp = experiment_from_manifest(store)
    else:
        exp = _on_recorded_device(exp, store)
        check_same_setup(exp, store, source or exp.source)
    folds = [str(f) for f in range(exp.split.folds)]
    design = read_design(store.root) if have_parts else None
    planned = experiment_design(exp)
    if design is None or not orders_units_of(design, planned):  # another set-up, or damaged
        design = planned
    # each validation part is checked once here: read_design checked the recorded design's
    # (its folds_done), and every other answer is kept for the counts of parts and of units
    checked: dict[tuple[str, str, str], bool] = {}
    if have_parts and design is not planned:
        for name, d in design.algorithms.items():
            for u in d.units:
                for f in design.folds:
                    checked[(name, str(f), u.unit)] = f in u.folds_done
    storage_url = storage_url or exp.sweep.storage
    default_db = store.root / "optuna.db"
    storage_problem = None
    where = storage_place(storage_url, exp)
    check_url(storage_url, where)  # a URL no server could answer is bad input, parts or not
    if not given and (storage_url is not None or default_db.is_file()):
        try:
            storage = open_storage(storage_url, store.root, repair=False, where=where)
        except DptuneError as err:
            if not have_parts:
                raise  # the storage is all there is to report on
            storage_problem = str(err)  # the parts still say what is done
    out: dict[str, Any] = {
        "results": str(store.root), "source": "parts" if have_parts else "optuna",
        "storage": _safe_url(storage_url) if storage_url else (str(default_db) if storage else None),
        "storage_problem": storage_problem, "algorithms": {}, "budget": design.budget,
    }
    for a in exp.algorithms:
        trials: list[Any] = []
        if storage is not None:
            with storage_errors(storage_url, store.root):
                try:
                    st = optuna.load_study(study_name=study_name(exp, a.name), storage=storage)
                except KeyError:
                    st = None
                if st is not None:
                    _live_running(st)  # fails the dead workers' trials, queues them again
                    trials = st.get_trials(deepcopy=False)
        # Queued (WAITING) trials carry only a grid_id: name their point through other trials.
        point = {t.system_attrs["grid_id"]: _key(t.params) for t in trials
                 if t.params and "grid_id" in t.system_attrs}
        states: dict[str, set[TrialState]] = {}
        for t in trials:
            key = _key(t.params) if t.params else point.get(t.system_attrs.get("grid_id"))
            # interrupted (Ctrl-C): pending, not failed; a gone worker's trials were failed and
            # queued again by _live_running above, so they count as queued
            interrupted = t.state == TrialState.FAIL and t.user_attrs.get("state") == "interrupted"
            if key is not None and not interrupted:
                states.setdefault(key, set()).add(t.state)

        def done(t: Task, states: dict[str, set[TrialState]] = states) -> bool:
            if have_parts:
                key = (t.algorithm, t.fold, t.unit)
                if key not in checked:
                    checked[key] = store.has_part(t.algorithm, t.fold, t.unit)
                return checked[key]
            return TrialState.COMPLETE in states.get(_key({"fold": t.fold, **t.params}), set())

        d = design.algorithms[a.name]
        tasks = d.tasks(folds)
        n_done = running = failed = queued = 0
        for t in tasks:
            seen = states.get(_key({"fold": t.fold, **t.params}), set())
            if done(t):
                n_done += 1
            elif TrialState.RUNNING in seen:
                running += 1
            elif TrialState.WAITING in seen:
                queued += 1
            elif TrialState.FAIL in seen:
                failed += 1
        units_done = sum(all(done(t) for t in _unit_tasks(a.name, u, folds)) for u in d.units)
        out["algorithms"][a.name] = {
            "total": len(tasks), "done": n_done, "remaining": len(tasks) - n_done,
            "running": running, "failed": failed, "queued": queued,
            "units": _units(d, units_done),
        }
    validation_done = all(a["remaining"] == 0 for a in out["algorithms"].values())
    out["projection"] = (_projection(exp, store, design, validation_done) if have_parts
                         else None)
    out["damaged"] = [(str(p), why) for p, why in store.damaged()] if have_parts else []
    out["side_files"] = side_file_problems(store.root) if have_parts else []
    # a damaged validation part is a validation unit not done: the stages after it wait
    damaged = sum(Path(p).parent.name == PARTS
                  and (part_fields(Path(p).name) or ("", "", ""))[1] != "test"
                  for p, _ in out["damaged"])
    out.update(stages(exp, store, validation_done and have_parts, reports, damaged=damaged))
    return out


def _on_recorded_device(exp: Experiment, store: ResultStore) -> Experiment:
    """``exp`` on the device its results were swept on, as the manifest records it: ``dptune
    run CONFIG --device cuda`` records the device it was given, and status, which has no
    ``--device``, reads such results with the same CONFIG (and projects them on that device)."""
    from dataclasses import replace

    try:
        config = store.manifest().get("config") or {} if store.exists() else {}
    except DptuneError:
        return exp
    device = (config.get("sweep") or {}).get("device")
    if not isinstance(device, str) or device == exp.sweep.device:
        return exp
    return replace(exp, sweep=replace(exp.sweep, device=device))


def check_same_setup(exp: Experiment, store: ResultStore, source: str) -> None:
    """Refuse ``exp`` (named ``source``, e.g. ``--config``) when the results in ``store`` were
    made with another experiment set-up (another fingerprint): its grids, folds and stages
    are not those of the results, so every count would describe another experiment. One line
    naming ``source`` and the settings that differ (:func:`dptune.sweeper._manifest.
    setup_changes`), as ``dptune run`` refuses such a results directory. The set-up of the
    results is the manifest's, else, when the manifest is missing or damaged, the one the
    parts' index entries recorded; a directory with neither (the database alone is read)
    passes."""
    from dptune.sweeper._manifest import setup_changes

    fp = exp.fingerprint()
    man = None
    if store.exists():
        try:
            man = store.manifest()
        except DptuneError:
            man = None
    if man is not None and man.get("fingerprint"):
        if man["fingerprint"] == fp:
            return
        what = "; ".join(setup_changes(man, exp)) or f"fingerprint {man['fingerprint']}, now {fp}"
    else:
        recorded = entry_fingerprints(store.root)
        if not recorded or recorded == {fp}:
            return
        what = f"fingerprint {', '.join(sorted(recorded))}, now {fp}"
    raise input_error(source, None, f"{exp.source} is a different experiment set-up from the "
                      f"results in {store.root} ({what}); give the experiment these results "
                      "were made with, or leave it out (the one the results record)")


def _unit_tasks(algorithm: str, unit: DesignUnit, folds: list[str]) -> list[Task]:
    """The tasks of one unit of a design, one per fold."""
    return [Task(algorithm, f, unit.unit, unit.config_ids, dict(unit.params)) for f in folds]


def _units(d: AlgorithmDesign, done: int) -> dict[str, Any]:
    """``m of M units`` of one algorithm, with its budget in units and rounds."""
    text = f"{done} of {d.total_units} units"
    if d.budget_units < d.total_units:
        rounds = f"{d.budget_rounds} round{'s' if d.budget_rounds != 1 else ''} of {d.round_size}"
        text += f" (budget {d.budget_units} units = {rounds})"
    return {"done": done, "total": d.total_units, "budget": d.budget_units,
            "rounds": d.budget_rounds, "round_size": d.round_size, "text": text}


def _projection(exp: Experiment, store: ResultStore, design: Design,
                validation_done: bool = False) -> dict[str, Any] | None:
    """Projected hours of the full grid and of the budget (cost model, every stage), or
    ``None``. Once the validation is done, the noise floor is priced at the configurations it
    trains (the best of each stochastic algorithm), not at a likely winner."""
    try:
        shape = shape_from_manifest(store.manifest())
    except (DptuneError, KeyError, TypeError, ValueError):
        return None
    winners = noise_winners(exp, store) if validation_done else None
    full = projection(exp, design, shape, {n: d.rounds for n, d in design.algorithms.items()})
    run = projection(exp, design, shape, winners=winners)
    if full is None or run is None:
        return None
    jobs = full.jobs
    budgeted = any(d.budget_units < d.total_units for d in design.algorithms.values())
    text = (f"full grid {hours_text(full.seconds)}"
            + (f", this budget {hours_text(run.seconds)}" if budgeted else "")
            + f" on {run.where} (projected by the cost model, "
            f"every stage counted: {run.stages_text()}; not a measurement)")
    return {"full_hours": full.hours, "budget_hours": run.hours, "jobs": jobs, "text": text,
            "stages": {k: getattr(run, k) for k in ("startup", "compile", "validation", "test",
                                                     "noise", "analysis")}}


def noise_winners(exp: Experiment, store: ResultStore) -> dict[str, list[int]]:
    """Per stochastic algorithm, the configurations its noise floor trains: the best
    ``[analysis] noise_configs`` by the primary metric@N over the validation folds."""
    from dptune.models import is_stochastic
    from dptune.store._noise_parts import rank_configs

    metric, cutoff = exp.analysis.primary_metric, int(exp.analysis.primary_cutoff)
    return {a.name: rank_configs(store, a.name, metric, cutoff)[:exp.analysis.noise_configs]
            for a in exp.algorithms if is_stochastic(a.type)}


def _count(done: int, total: int, what: str) -> dict[str, Any]:
    state = "done" if done == total else "incomplete"
    return {"state": state, "done": done, "total": total, "text": f"{done} of {total} {what} done"}


def _noise_parts(exp: Experiment, store: ResultStore) -> tuple[list[Path], dict[str, str]]:
    """Paths of the planned noise-floor parts and the algorithms without a noise floor."""
    from dptune.store._noise_parts import noise_part_path
    from dptune.sweeper._noise import plan_noise

    tasks, skipped = plan_noise(exp, store, exp.analysis.noise_configs)
    return [noise_part_path(store.root, t.algorithm, t.config_id, t.fold) for t in tasks], skipped


def _newest(store: ResultStore) -> float:
    """Modification time of the newest result file (parts, noise parts, trials; not what was
    set aside in ``quarantine/``)."""
    from dptune.store._identity import QUARANTINE

    files = [p for p in store.root.rglob("*") if p.is_file() and p.suffix in (".parquet", ".csv", ".json")
             and QUARANTINE not in p.relative_to(store.root).parts[:1]]
    return max((p.stat().st_mtime for p in files), default=0.0)


def stages(exp: Experiment, store: ResultStore, validation_done: bool,
           reports: str | Path | None = None, damaged: int = 0) -> dict[str, dict[str, Any]]:
    """State of the test split, the noise floor and the analysis of a results directory.

    ``test``: ``off`` (``evaluation.test_split = false``), ``waiting`` (validation units
    missing: the best configurations are not known yet), else done / incomplete with counts.
    ``noise``: ``off`` (``analysis.noise_seeds = 0``), ``none`` (no stochastic algorithm),
    ``waiting``, else parts done / planned; a stage ``waiting`` says when ``damaged``
    validation parts are among what it waits for (a sweep that had finished reads so after
    one of its parts was damaged). ``analysis``: ``missing`` (no report.md),
    ``stale`` (a result is newer than report.md) or ``done``.

    ``unknown`` where this machine cannot tell: a stage that is not off without a results
    directory here (status read from the database alone, which holds no part); the analysis when ``reports``
    is not given (``None``: no ``--reports`` and none recorded by ``dptune run``) and the
    results are not in their default folder ``results/<name>``, whose report would be
    ``reports/<name>``: that folder may hold another results directory's report, which an
    ``dptune analyze`` without ``--reports`` would overwrite.
    """
    out: dict[str, dict[str, Any]] = {}
    wait = "waiting for the validation units" + (
        f" ({damaged} damaged validation part{'s' if damaged != 1 else ''} above among them: "
        "`dptune run` recomputes them first)" if damaged else "")
    unknown = {"state": "unknown", "text": f"not known here: no results directory {store.root} "
               "on this machine (the counts above are the database's)"}
    if not exp.evaluation.test_split:
        out["test"] = {"state": "off", "text": "off (evaluation.test_split = false)"}
    elif not store.exists():
        out["test"] = unknown
    elif not validation_done:
        out["test"] = {"state": "waiting", "text": wait}
    else:
        tasks = test_tasks(exp, store)
        out["test"] = _count(sum(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks),
                             len(tasks), "units")
    seeds = int(exp.analysis.noise_seeds)
    if seeds == 0:
        out["noise"] = {"state": "off", "text": "off (analysis.noise_seeds = 0)"}
    elif not store.exists():
        out["noise"] = unknown
    elif not validation_done:
        out["noise"] = {"state": "waiting", "text": wait}
    else:
        parts, skipped = _noise_parts(exp, store)
        if not parts:
            out["noise"] = {"state": "none", "text": "none (no stochastic algorithm)"}
        else:
            out["noise"] = _count(sum(verified(p) for p in parts), len(parts),
                                  f"parts ({seeds} seeds)")
    if not store.exists():
        out["analysis"] = unknown
        return out
    default = Path("reports") / exp.name
    if reports is None and store.root.resolve() != (Path("results") / exp.name).resolve():
        out["analysis"] = {"state": "unknown", "text": (
            f"no report folder recorded for {store.root} (--reports DIR checks the one of "
            f"these results; dptune analyze {store.root} --reports DIR writes one)")}
        return out
    report = Path(reports if reports is not None else default) / "report.md"
    # the command that writes it: a folder other than the default is named
    analyze = f"dptune analyze {store.root}" + (
        f" --reports {report.parent}" if report.parent != default else "")
    running = analysis_in_progress(report.parent)
    if running is not None:
        out["analysis"] = {"state": "running", "report": str(report), "text": (
            f"{report} being written by the analysis of {running['worker']} (host:pid), "
            f"started {running.get('started', 'at an unknown time')}")}
    elif not report.is_file():
        out["analysis"] = {"state": "missing", "report": str(report),
                           "text": f"{report} not written yet ({analyze})"}
    elif report.stat().st_mtime < _newest(store):
        out["analysis"] = {"state": "stale", "report": str(report),
                           "text": f"{report} is older than the results ({analyze})"}
    else:
        out["analysis"] = {"state": "done", "report": str(report), "text": f"{report} up to date"}
    return out
