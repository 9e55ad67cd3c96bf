"""Training the noise floor: A/A runs of the best configurations with several seeds.

The sweep stage of the noise floor (``dptune run`` calls :func:`run_noise_floor` after the
sweep). For every *stochastic* algorithm (:func:`dptune.models.is_stochastic`), the
``n_configs`` best configurations by the primary metric (:func:`dptune.store.rank_configs`)
are trained with ``S`` seeds on every validation fold, seed ``s`` being
``derive_seed(experiment seed, algorithm, fold, free params, "noise", s)``, and evaluated exactly
like the sweep; each (algorithm, configuration, fold) becomes one part
(:func:`dptune.store.write_noise_part`). Resumable: existing parts are skipped, a part with
fewer seeds than asked for is completed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from dptune._atomic import write_text
from dptune._parallel import run_parallel
from dptune.errors import input_error
from dptune.models import is_stochastic
from dptune.store._noise_parts import (
    check_count,
    noise_part_path,
    noise_trials,
    part_seed_indices,
    rank_configs,
    write_noise_part,
)
from dptune.store._store import ResultStore

if TYPE_CHECKING:
    from dptune.config import Experiment

__all__ = ["NoiseTask", "NoiseRun", "plan_noise", "run_noise_task", "run_noise_floor"]


@dataclass(frozen=True)
class NoiseTask:
    """One part to compute: a configuration of an algorithm on one validation fold."""

    algorithm: str
    algorithm_type: str
    config_id: int
    fold: str
    params: dict[str, Any] = field(hash=False, compare=False)  # free hyperparameters (seeds)
    config: dict[str, Any] = field(hash=False, compare=False)  # every hyperparameter (fit)


@dataclass
class NoiseRun:
    """What :func:`run_noise_floor` did: the parts of the selected tasks, how many were computed
    now, and the algorithms left out with the reason."""

    parts: list[Path]
    computed: int
    skipped: dict[str, str]
    seeds: int
    n_configs: int


def plan_noise(exp: Experiment, store: ResultStore, n_configs: int = 1) -> tuple[list[NoiseTask], dict[str, str]]:
    """Tasks of the noise floor (every selected configuration x validation fold) and the
    algorithms without one, ``{name: reason}``."""
    n_configs = check_count(n_configs, "noise_configs", 1)
    metric, cutoff = exp.analysis.primary_metric, int(exp.analysis.primary_cutoff)
    folds = [str(f) for f in range(exp.split.folds)]
    tasks: list[NoiseTask] = []
    skipped: dict[str, str] = {}
    for alg in exp.algorithms:
        if not is_stochastic(alg.type):
            skipped[alg.name] = "deterministic (training uses no seed)"
            continue
        ranked = rank_configs(store, alg.name, metric, cutoff)
        if not ranked:
            raise input_error(store.root, alg.name,
                              f"no validation results for {metric}@{cutoff}: run the sweep first")
        grid = exp.grids[alg.name]
        configs = grid.configs()
        for cid in ranked[:n_configs]:
            cfg = configs[cid]
            params = {h: cfg[h] for h in grid.free}
            for fold in folds:
                tasks.append(NoiseTask(alg.name, alg.type, cid, fold, params, dict(cfg)))
    return tasks, skipped


def run_noise_task(exp: Experiment, task: NoiseTask, root: str | Path, seeds: int) -> Path:
    """Train ``task``'s configuration with seeds ``0 .. seeds-1`` on its fold, evaluate, write the
    part atomically; seeds already in an existing part are read back, not retrained."""
    from dptune.engine import engine_for, evaluate_on, family_on
    from dptune.metrics import METRICS
    from dptune.models import get_family
    from dptune.sweeper._plan import derive_seed
    from dptune.sweeper._prepare import prepare
    from dptune.sweeper._unit import named_model

    seeds = check_count(seeds, "noise_seeds", 2)
    final = noise_part_path(root, task.algorithm, task.config_id, task.fold)
    have = part_seed_indices(final)
    if all(s in have for s in range(seeds)):
        return final
    ev = exp.evaluation
    metrics = tuple(ev.metrics)
    cutoffs = tuple(int(c) for c in ev.cutoffs)
    rows = [METRICS.index(m) for m in metrics]
    fd = prepare(exp).fold(task.fold)
    users = np.asarray(fd.users, dtype=np.int32)
    eng = engine_for(exp.sweep.device)
    family = family_on(get_family(task.algorithm_type), eng)

    old: dict[int, np.ndarray] = {}
    old_meta: dict[int, tuple[int, float, float]] = {}
    if have:
        meta = json.loads((pq.read_schema(final).metadata or {})[b"dptune"])
        t = pq.read_table(final).to_pandas()
        for k, s in enumerate(meta["seed_indices"]):
            arr = np.zeros((len(metrics), len(cutoffs), len(users)), dtype=np.float32)
            ts = t[t["seed_index"] == s]
            for i, m in enumerate(metrics):
                for j, c in enumerate(cutoffs):
                    sl = ts[(ts["metric"] == m) & (ts["cutoff"] == c)].sort_values("user")
                    arr[i, j] = sl["value"].to_numpy(np.float32)
            old[int(s)] = arr
            old_meta[int(s)] = (int(meta["seeds"][k]), float(meta["fit_seconds"][k]),
                                float(meta["eval_seconds"][k]))

    values: dict[int, np.ndarray] = dict(old)  # seeds already stored are kept as they are
    info: dict[int, tuple[int, float, float]] = dict(old_meta)
    for s in range(seeds):
        if s in values:
            continue
        seed = derive_seed(exp.seed, task.algorithm, task.fold, task.params, "noise", s)
        t0 = time.perf_counter()
        with named_model(exp, task.algorithm, task.config_id, task.fold, "fit"):
            item = next(family.fit_unit(fd.train, [dict(task.config)], seed), None)
        if item is None:  # pragma: no cover - every family yields one model per configuration
            raise input_error("noise floor", task.algorithm, "the model family yielded no model")
        t1 = time.perf_counter()
        with named_model(exp, task.algorithm, task.config_id, task.fold, "score"):
            vals = evaluate_on(eng, item[1], fd.users, fd.train, fd.relevant, cutoffs, fd.efd,
                               fd.epc, block=ev.user_block,
                               relevance_aware=ev.novelty == "relevance-aware")
        fit_s, ev_s = t1 - t0, time.perf_counter() - t1
        values[s] = np.asarray(vals, dtype=np.float32)[rows]
        info[s] = (seed, fit_s, ev_s)

    return write_noise_part(
        root, task.algorithm, task.config_id, task.fold, task.params, users, metrics, cutoffs,
        values, {s: info[s][0] for s in values}, {s: (info[s][1], info[s][2]) for s in values})


def _run_one(exp: Experiment, root: str, task: NoiseTask, seeds: int) -> Path:
    return run_noise_task(exp, task, root, seeds)


def run_noise_floor(exp: Experiment, results_dir: str | Path, seeds: int = 5, n_configs: int = 1,
                    jobs: int = 1, progress: bool = False) -> NoiseRun:
    """Train the noise floor of every stochastic algorithm of a finished sweep (resumable).

    ``exp`` must be the experiment whose sweep is in ``results_dir`` (same fingerprint). For each
    stochastic algorithm, the ``n_configs`` best configurations by the primary metric
    (:func:`rank_configs`) are trained with ``seeds`` seeds on every validation fold
    (:func:`run_noise_task`, ``jobs`` parallel processes). Writes the parts and
    ``noise_trials.csv``; ``seeds = 0`` does nothing.
    """
    seeds = check_count(seeds, "noise_seeds", 0)
    if seeds == 1:
        raise input_error("noise floor", "noise_seeds", "needs 0 (off) or at least 2 seeds")
    jobs = check_count(jobs, "jobs", 1)
    store = ResultStore(results_dir, skip_damaged=True)  # damaged parts are recomputed
    if seeds == 0:
        return NoiseRun([], 0, {}, 0, int(n_configs))
    man = store.manifest()
    if man.get("fingerprint") != exp.fingerprint():
        raise input_error(store.root / "manifest.json", "fingerprint",
                          "the results directory holds a different experiment set-up")
    tasks, skipped = plan_noise(exp, store, n_configs)
    root = store.root
    todo = [t for t in tasks if not all(
        s in part_seed_indices(noise_part_path(root, t.algorithm, t.config_id, t.fold))
        for s in range(seeds))]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"{exp.name}: noise floor", unit="part", dynamic_ncols=True)
    try:
        run_parallel(_run_one, [(exp, str(root), t, seeds) for t in todo], jobs,
                     on_done=None if bar is None else (lambda _: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()
    trials = noise_trials(root)
    text = trials.to_csv(index=False, lineterminator="\n")
    write_text(root / "noise_trials.csv", text)
    parts = [noise_part_path(root, t.algorithm, t.config_id, t.fold) for t in tasks]
    return NoiseRun(parts, len(todo), skipped, seeds, int(n_configs))
