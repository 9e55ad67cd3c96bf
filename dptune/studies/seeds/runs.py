"""Computation of the split-seed study: the splits of every seed, the cached work units and
their collection into tables.

Per seed ``s_i`` and split kind: **hold-out** ``random_holdout(ratings, train_ratio, s_i)`` (one
evaluation setting) or **CV** ``kfold_labels(ratings, folds, s_i)`` (one per fold), built with
the sweep's :func:`dptune.sweeper.fold_data`. Each default-configuration run is seeded with
``derive_seed(experiment seed, algorithm, split, s_i, fold)``; the grid part trains every
configuration of the grid algorithms on the CV folds, one :class:`~dptune.store.ResultStore`
per seed (model seed ``derive_seed(experiment seed, algorithm, "cv-grid", s_i, fold, params)``).

Resumable: each (seed, split) result is a small Parquet file of per-user *means* written
atomically, each grid unit a store part written atomically by the store; a rerun skips what
exists. The cache lives in ``<cache>/<fingerprint>/``, the fingerprint covering the data
(its settings and its content: :func:`fingerprint`), evaluation, grids and the chosen
configurations.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune._atomic import atomic_path
from dptune._parallel import run_parallel
from dptune.analysis.dp.fold_loop import run_fold_loop
from dptune.analysis.dp.pairs import format_value
from dptune.config import Experiment
from dptune.data._dataset import check_cutoffs, load_dataset
from dptune.data._split import kfold_labels, random_holdout
from dptune.errors import input_error
from dptune.metrics import METRICS, evaluate
from dptune.models import get_family
from dptune.store._store import ResultStore, UnitResult
from dptune.studies.seeds.settings import SPLITS, SeedSettings
from dptune.studies.seeds.stats import dp_ranks
from dptune.sweeper._manifest import frames_digest
from dptune.sweeper._plan import derive_seed, plan
from dptune.sweeper._prepare import FoldData, _file_state, fold_data

__all__ = ["SeedPlan", "study_ratings", "seed_folds", "fingerprint", "execute",
           "read_defaults", "grid_rows", "config_text"]

_CACHE_COLUMNS = ["algorithm", "config_id", "split", "seed_index", "seed", "fold", "model_seed",
                  "metric", "cutoff", "value", "n_users", "fit_seconds", "eval_seconds"]
_TRIAL_COLUMNS = ["algorithm", "config_id", "split", "seed_index", "seed", "fold", "model_seed",
                  "n_users", "fit_seconds", "eval_seconds"]
_GRID_COLUMNS = ["dataset", "algorithm", "seed_index", "seed", "metric", "cutoff",
                 "best_config_id", "best_params", "best_value", "dp_per_25", "dp_rank",
                 "n_pairs"]


# --------------------------------------------------------------------------------------------
# Data


_DATA: dict[tuple[str, tuple[int, int] | None], tuple[pd.DataFrame, tuple[int, int], str]] = {}


def study_ratings(exp: Experiment) -> tuple[pd.DataFrame, tuple[int, int], str]:
    """Ratings of users with at least ``split.min_user_interactions`` ratings (cached per process),
    the matrix shape and the data set name. Both splits see the same users. A cutoff not below
    the data's number of items is refused here, as ``dptune run`` refuses it
    (:func:`dptune.data._dataset.check_cutoffs`). Cached by the experiment's fingerprint and
    the data file's size and modification time, as the sweep's :func:`prepare` is: a file
    edited in place is read again."""
    key = (exp.fingerprint(), _file_state(exp.data_file))
    if key not in _DATA:
        d = exp.data
        ds = load_dataset(exp.data_file, fmt=d.format, min_rating=d.min_rating, kcore=d.kcore,
                          experiment=exp.source, **d.reader_options())
        check_cutoffs(ds, exp.evaluation.cutoffs, exp.source)
        r = ds.ratings
        counts = np.bincount(r["user"].to_numpy(), minlength=ds.n_users)
        keep = counts[r["user"].to_numpy()] >= exp.split.min_user_interactions
        _DATA[key] = (r[keep].reset_index(drop=True), (ds.n_users, ds.n_items), ds.name)
    return _DATA[key]


def seed_folds(exp: Experiment, st: SeedSettings, split: str, seed: int) -> Iterator[FoldData]:
    """The evaluation settings of one (split, seed): one for hold-out, ``st.folds`` for CV."""
    r, shape, _ = study_ratings(exp)
    thr = exp.evaluation.relevance_threshold
    if split == "holdout":
        ho = random_holdout(r, st.train_ratio, seed, exp.split.min_user_interactions)
        yield fold_data(ho.train, ho.test, shape, thr, "0")
        return
    labels = kfold_labels(r, st.folds, seed)
    for f in range(st.folds):
        mask = labels == f
        yield fold_data(r[~mask], r[mask], shape, thr, str(f))


def _check_users(exp: Experiment, fd: FoldData, split: str, seed: int) -> None:
    """A split with no evaluable user is an input error naming the seed and fold."""
    if len(fd.users) == 0:
        raise input_error(exp.source, "seeds", f"{split} fold {fd.fold} of seed {seed} has no user "
                          f"with a relevant held-out item")


# --------------------------------------------------------------------------------------------
# Work units (cached, atomic)


@dataclass(frozen=True)
class SeedPlan:
    """Everything a worker needs (picklable)."""

    exp: Experiment
    settings: SeedSettings
    configs: dict[str, tuple[int, dict[str, Any]]]
    seeds: tuple[int, ...]
    grid_algorithms: tuple[str, ...]
    grid_seeds: int
    cache: Path


def fingerprint(exp: Experiment, st: SeedSettings,
                configs: Mapping[str, tuple[int, dict[str, Any]]]) -> str:
    """First 12 hex digits of the SHA-256 of the experiment's fingerprint, the data's content,
    the split settings and the chosen configurations: the cache directory of one study.

    The experiment's fingerprint covers the ``[data]`` settings (the file's path), not what the
    file holds, so the content is added: the digest of the ratings the study splits
    (:func:`study_ratings`; :func:`dptune.sweeper._manifest.frames_digest`, the digest of a
    sweep's manifest) and the matrix shape. A data file edited in place (rows added, removed or
    changed) gives another fingerprint, so the study computes afresh in a new cache directory
    instead of reporting the cached results of the old data; the old directory is left as it
    is. One pass over the ratings, once per study."""
    ratings, shape, _ = study_ratings(exp)
    blob = json.dumps({"exp": exp.fingerprint(), "data": frames_digest((ratings,)),
                       "shape": [int(n) for n in shape], "ratio": st.train_ratio,
                       "folds": st.folds, "configs": {a: c for a, (_, c) in configs.items()}},
                      sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def default_path(p: SeedPlan, index: int, split: str) -> Path:
    """Cache file of the default runs of seed ``index`` under ``split``."""
    return p.cache / "defaults" / f"seed{index:03d}__{split}.parquet"


def grid_root(p: SeedPlan, index: int) -> Path:
    """Result store of the grid part of seed ``index``."""
    return p.cache / "grid" / f"seed{index:03d}"


def _atomic_parquet(df: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def _eval(exp: Experiment, model: Any, fd: FoldData) -> np.ndarray:
    """Per-user values ``(len(metrics), len(cutoffs), n_users)`` in the experiment's metric order."""
    ev = exp.evaluation
    vals = evaluate(model, fd.users, fd.train, fd.relevant, tuple(int(c) for c in ev.cutoffs),
                    fd.efd, fd.epc, block=ev.user_block,
                    relevance_aware=ev.novelty == "relevance-aware")
    return np.asarray(vals)[[METRICS.index(m) for m in ev.metrics]]


def _run_defaults(p: SeedPlan, index: int, split: str) -> Path:
    """Train every algorithm's default configuration on one (seed, split); cache the means."""
    path = default_path(p, index, split)
    if path.exists():
        return path
    exp, seed = p.exp, p.seeds[index]
    ev = exp.evaluation
    rows: list[tuple] = []
    for fd in seed_folds(exp, p.settings, split, seed):
        _check_users(exp, fd, split, seed)
        for alg in exp.algorithms:
            cid, cfg = p.configs[alg.name]
            mseed = derive_seed(exp.seed, alg.name, split, seed, fd.fold)
            t0 = time.perf_counter()
            _, model = next(iter(get_family(alg.type).fit_unit(fd.train, [cfg], mseed)))
            t1 = time.perf_counter()
            means = _eval(exp, model, fd).mean(axis=2)
            t2 = time.perf_counter()
            for i, m in enumerate(ev.metrics):
                for j, c in enumerate(ev.cutoffs):
                    rows.append((alg.name, cid, split, index, seed, fd.fold, mseed, m, int(c),
                                 float(means[i, j]), len(fd.users), t1 - t0, t2 - t1))
    _atomic_parquet(pd.DataFrame(rows, columns=_CACHE_COLUMNS), path)
    return path


def _grid_store(p: SeedPlan, index: int) -> ResultStore:
    """The per-seed result store of the grid part; manifest and configs are (re)written for the
    current grid algorithms (atomically; parts of other algorithms stay untouched)."""
    store = ResultStore(grid_root(p, index)).create()
    exp = p.exp
    algs = [a for a in exp.algorithms if a.name in p.grid_algorithms]
    store.write_configs([exp.grids[a.name].frame(a.name) for a in algs])
    store.write_manifest({
        "experiment": exp.name, "experiment_file": exp.source,
        "study": "seed-study grid part: CV folds of one data-split seed",
        "split": {"method": "kfold_labels", "folds": p.settings.folds,
                  "split_seed": p.seeds[index], "seed_index": index},
        "seeds": {"experiment": exp.seed, "split": p.seeds[index], "analysis": exp.analysis_seed},
        "evaluation": {"metrics": list(exp.evaluation.metrics),
                       "cutoffs": list(exp.evaluation.cutoffs),
                       "relevance_threshold": exp.evaluation.relevance_threshold},
        "algorithms": [{"name": a.name, "type": a.type, "free": exp.grids[a.name].free}
                       for a in algs],
    })
    return store


def _grid_done(p: SeedPlan, index: int) -> bool:
    store = ResultStore(grid_root(p, index))
    folds = [str(f) for f in range(p.settings.folds)]
    return all(store.has_part(t.algorithm, t.fold, t.unit)
               for a in p.grid_algorithms for t in plan(p.exp, a, folds))


def _run_grid(p: SeedPlan, index: int) -> Path:
    """Every configuration of the grid algorithms on the CV folds of one seed, unit by unit."""
    store = _grid_store(p, index)
    exp, seed = p.exp, p.seeds[index]
    ev = exp.evaluation
    folds = [str(f) for f in range(p.settings.folds)]
    tasks = [t for a in p.grid_algorithms for t in plan(exp, a, folds)]
    if all(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
        return store.root
    types = {a.name: a.type for a in exp.algorithms}
    for fd in seed_folds(exp, p.settings, "cv", seed):
        _check_users(exp, fd, "cv", seed)
        for t in (t for t in tasks if t.fold == fd.fold):
            if store.has_part(t.algorithm, t.fold, t.unit):
                continue
            grid = exp.grids[t.algorithm]
            mseed = derive_seed(exp.seed, t.algorithm, "cv-grid", seed, t.fold, t.params)
            out: dict[int, tuple[np.ndarray, float, float]] = {}
            t0 = time.perf_counter()
            for local, model in get_family(types[t.algorithm]).fit_unit(
                    fd.train, [grid.config(c) for c in t.config_ids], mseed):
                t1 = time.perf_counter()
                vals = _eval(exp, model, fd)
                t2 = time.perf_counter()
                out[t.config_ids[local]] = (vals, t1 - t0, t2 - t1)
                t0 = time.perf_counter()
            ids = tuple(sorted(out))
            store.write_unit(UnitResult(
                algorithm=t.algorithm, fold=t.fold, unit=t.unit, seed=mseed,
                metrics=tuple(ev.metrics), cutoffs=tuple(int(c) for c in ev.cutoffs),
                users=fd.users, config_ids=ids, values=tuple(out[c][0] for c in ids),
                fit_seconds=tuple(out[c][1] for c in ids),
                eval_seconds=tuple(out[c][2] for c in ids)))
    return store.root


def _run_task(p: SeedPlan, task: tuple[int, str]) -> tuple[int, str]:
    index, kind = task
    if kind == "grid":
        _run_grid(p, index)
    else:
        _run_defaults(p, index, kind)
    return task


def _is_done(p: SeedPlan, task: tuple[int, str]) -> bool:
    index, kind = task
    return _grid_done(p, index) if kind == "grid" else default_path(p, index, kind).exists()


def execute(p: SeedPlan, tasks: list[tuple[int, str]], jobs: int, progress: bool) -> None:
    """Run the unfinished tasks (``jobs`` processes), with a tqdm bar over all tasks."""
    todo = [t for t in tasks if not _is_done(p, t)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), unit="task",
                   desc=f"{p.exp.name}: seeds", dynamic_ncols=True, smoothing=0.1)
    try:
        run_parallel(_run_task, [(p, t) for t in todo], jobs,
                     on_done=None if bar is None else (lambda _: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()


# --------------------------------------------------------------------------------------------
# Collection


def read_defaults(p: SeedPlan, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(cache, trials)``: the cached per-(seed, split, fold) means of every default run, and
    one row per model run (its model seed, users and timings) tagged with ``dataset``."""
    cache = pd.concat([pd.read_parquet(default_path(p, i, s)) for i in range(p.settings.n_seeds)
                       for s in SPLITS], ignore_index=True)
    trials = cache.drop_duplicates(["algorithm", "split", "seed_index", "fold"])[_TRIAL_COLUMNS]
    trials.insert(0, "dataset", dataset)
    return cache, trials


def config_text(cfg: Mapping[str, Any], free: Sequence[str]) -> str:
    """``h1=v1, h2=v2`` over the free hyperparameters, values as in the DP tables."""
    return ", ".join(f"{h}={format_value(cfg[h])}" for h in free)


def grid_rows(p: SeedPlan, index: int, dataset: str) -> pd.DataFrame:
    """Best configuration and DP of every metric@N of one seed's grid store.

    Best = highest mean over the CV folds (``ResultStore.best_configs``); DP per 25 pairs from
    the analysis' fold loop (:func:`dptune.analysis.dp.fold_loop.run_fold_loop`) with the
    experiment's analysis options and seed, without the bootstrap (scope ``all``); ``dp_rank``
    = rank of the metric's DP among the metrics of its cutoff (1 = lowest DP = most
    discriminative, ties share the lower rank; :func:`dptune.studies.seeds.stats.dp_ranks`).
    """
    exp = p.exp
    store = ResultStore(grid_root(p, index))
    store.refresh()
    est = run_fold_loop(store, exp.analysis.replace(seed=exp.analysis_seed, bootstrap=0),
                        algorithms=list(p.grid_algorithms))
    dpa = est.table[est.table["scope"] == "all"][["algorithm", "metric", "cutoff", "dp_per_25",
                                                  "n_pairs"]]
    best = store.best_configs().rename(columns={"config_id": "best_config_id",
                                                "validation_mean": "best_value"})
    df = dpa.merge(best[["algorithm", "metric", "cutoff", "best_config_id", "best_value"]],
                   on=["algorithm", "metric", "cutoff"], how="left")
    df["dp_rank"] = dp_ranks(df)
    df["best_params"] = [config_text(exp.grids[a].config(int(cid)), exp.grids[a].free)
                         for a, cid in zip(df["algorithm"], df["best_config_id"], strict=True)]
    df.insert(0, "seed", p.seeds[index])
    df.insert(0, "seed_index", index)
    df.insert(0, "dataset", dataset)
    return df[_GRID_COLUMNS]
