"""One unit: train the unit's model(s) on its fold, evaluate every configuration, write the part."""

from __future__ import annotations

import time

import numpy as np

from dptune.config import Experiment
from dptune.engine import engine_for, evaluate_on, family_on
from dptune.metrics import METRICS
from dptune.models import get_family
from dptune.store._store import PARTS, ResultStore, UnitResult, part_name
from dptune.sweeper._plan import Task, _algorithm, derive_seed
from dptune.sweeper._prepare import prepare


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
    eng = engine_for(exp.sweep.device)
    out: dict[int, tuple[np.ndarray, float, float]] = {}
    t0 = time.perf_counter()
    for local, model in family_on(get_family(alg.type), eng).fit_unit(fd.train, unit_cfgs, seed):
        t1 = time.perf_counter()
        vals = evaluate_on(eng, model, fd.users, fd.train, fd.relevant, cutoffs, fd.efd, fd.epc,
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
