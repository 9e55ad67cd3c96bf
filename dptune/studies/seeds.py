"""Split-seed study (SPEC 7; Wegmeth et al., "The Effect of Random Seeds for Data Splitting on
Recommendation Accuracy", PERSPECTIVES @ RecSys 2023).

How much does the accuracy of a recommender depend on the random seed that splits the data, and
does k-fold cross-validation tame that dependence compared with a single random hold-out?

For S data-split seeds ``s_0 .. s_{S-1}`` (``s_i = derive_seed(split seed, "seed-study", i)``):

- **hold-out**: ``split.random_holdout(ratings, 0.8, s_i)`` (per-user random 80/20); one model per
  algorithm is trained on the training part and evaluated on the held-out part;
- **cross-validation**: ``split.kfold_labels(ratings, 5, s_i)`` (global random 5-fold); one model
  per fold, evaluated on that fold; the seed's value is the mean over the 5 folds.

Every algorithm runs with one *default configuration*: the grid's middle value of each free
hyperparameter (index ``floor((n - 1) / 2)`` of its ``n`` values in grid order; derived ones
follow from it), unless the seeds TOML (``[seeds.configs]``) or the caller names a
configuration (a ``config_id`` of the grid or hyperparameter values). Each model run is seeded
with ``derive_seed(experiment seed, algorithm, split, s_i, fold)``, recorded in
``seeds_trials.csv``. Evaluation is the pipeline's: "all unrated items", relevance = rating >=
threshold, users with at least one relevant held-out item, per-user metrics averaged over users.

Per data set, algorithm, split, metric and cutoff, with ``v_i`` the value of seed ``i`` and
``mean = (1/S) sum_i v_i`` (over the seeds of that split)::

    pct_i = 100 * v_i / mean          (so (1/S) sum_i pct_i = 100 exactly)
    dev_i = pct_i - 100,  extremes min_i pct_i and max_i pct_i,  range = max - min

Hold-out vs CV: a two-sided **Mann-Whitney U test** (the Wilcoxon *rank-sum* test,
``scipy.stats.mannwhitneyu``) of ``|dev_i|`` under hold-out against ``|dev_i|`` under CV. The
signed-rank test (``scipy.stats.wilcoxon``) would need paired observations; hold-out seed ``s``
and CV seed ``s`` share only the integer (``random_holdout`` draws per-row keys, ``kfold_labels``
a permutation), so their deviations are independent draws and any pairing by seed is arbitrary
(relabelling the seeds would change a signed-rank p-value but not the rank-sum one).

Beyond the paper, for a grid (default: the experiment's KNN algorithms, whose whole grid costs
one similarity per fold): on the CV folds of every seed, the whole grid is trained and evaluated
(per-user values kept in one :class:`~dptune.store.ResultStore` per seed), the best
configuration per metric@N is taken with ``ResultStore.best_configs`` (highest mean over folds)
and DP per metric@N with :func:`dptune.analysis._dp.analyze` (same pairs for every seed: they depend on
the configurations and the analysis seed only). The metric rankings of two seeds are compared
with Kendall's tau-b (``scipy.stats.kendalltau``) over the metrics' DP values at each cutoff
(and over every metric@N).

Resumable: each (seed, split) result is a small Parquet file (per-user means, not per-user
values) written atomically; each grid unit is a store part written atomically by the store. A
rerun skips everything that exists. The cache lives in ``<cache>/<fingerprint>/`` where the
fingerprint covers the data, evaluation, grids and the chosen configurations.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats as sps

from dptune._atomic import atomic_path
from dptune._parallel import run_parallel
from dptune.analysis import _dp as dpmod
from dptune.config import Experiment, parse_experiment
from dptune.data._dataset import load_dataset
from dptune.data._split import kfold_labels, random_holdout
from dptune.errors import DptuneError, input_error, read_toml
from dptune.metrics import METRICS, evaluate, novelty_vectors
from dptune.models._models import get_family
from dptune.report import _report as report
from dptune.store._store import ResultStore, UnitResult
from dptune.sweep._sweep import FoldData, derive_seed, plan
from dptune.vocab import CSV_FLOAT

__all__ = [
    "SPLITS",
    "SeedSettings",
    "load_seed_experiment",
    "split_seeds",
    "default_config",
    "resolve_configs",
    "fold_data",
    "pct_of_mean",
    "summarize",
    "pooled_tests",
    "kendall_table",
    "grid_stability",
    "seeds_figure",
    "run_seed_study",
    "main",
]

#: Split kinds of the study, in report order.
SPLITS: tuple[str, ...] = ("holdout", "cv")
SPLIT_NAMES: dict[str, str] = {"holdout": "Hold-out", "cv": "5-fold CV"}
PER_SEED_COLUMNS = ["dataset", "algorithm", "split", "seed", "metric", "cutoff", "value",
                    "pct_of_mean", "seed_index", "config_id"]
_CACHE_COLUMNS = ["algorithm", "config_id", "split", "seed_index", "seed", "fold", "model_seed",
                  "metric", "cutoff", "value", "n_users", "fit_seconds", "eval_seconds"]
_SEED_KEYS = {"n_seeds", "train_ratio", "folds", "configs", "figure_metrics", "grid_algorithms",
              "grid_seeds", "cache"}
_FLOAT = CSV_FLOAT


# --------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class SeedSettings:
    """The ``[seeds]`` table of a seeds experiment TOML (every key optional).

    ``configs`` maps an algorithm name to a ``config_id`` (int) or a table of hyperparameter
    values (missing ones take the grid's middle value); ``grid_algorithms`` ``None`` means the
    experiment's KNN algorithms, ``()`` skips the grid part; ``grid_seeds`` ``None`` means all
    ``n_seeds``; ``cache`` ``None`` means ``results/seeds-<experiment name>``.
    """

    n_seeds: int = 20
    train_ratio: float = 0.8
    folds: int = 5
    configs: Mapping[str, Any] = field(default_factory=dict)
    figure_metrics: tuple[str, ...] = ("ndcg", "precision")
    grid_algorithms: tuple[str, ...] | None = None
    grid_seeds: int | None = None
    cache: str | None = None


def _int(value: Any, source: str, key: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise input_error(source, key, f"must be an integer >= {low}, got {value!r}")
    return int(value)


def _str_list(value: Any, source: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise input_error(source, key, f"must be a list of names, got {value!r}")
    return tuple(value)


def parse_seed_settings(table: Any, source: str) -> SeedSettings:
    """Validate a ``[seeds]`` table; unknown keys and bad types are one-line errors."""
    if table is None:
        return SeedSettings()
    if not isinstance(table, dict):
        raise input_error(source, "seeds", "must be a table")
    for key in table:
        if key not in _SEED_KEYS:
            raise input_error(source, f"seeds.{key}",
                              f"unknown field (allowed: {', '.join(sorted(_SEED_KEYS))})")
    kw: dict[str, Any] = {}
    if "n_seeds" in table:
        kw["n_seeds"] = _int(table["n_seeds"], source, "seeds.n_seeds", 2)
    if "folds" in table:
        kw["folds"] = _int(table["folds"], source, "seeds.folds", 2)
    if "grid_seeds" in table:
        kw["grid_seeds"] = _int(table["grid_seeds"], source, "seeds.grid_seeds", 0)
    if "train_ratio" in table:
        r = table["train_ratio"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < 1:
            raise input_error(source, "seeds.train_ratio", f"must be in (0, 1), got {r!r}")
        kw["train_ratio"] = float(r)
    if "figure_metrics" in table:
        kw["figure_metrics"] = _str_list(table["figure_metrics"], source, "seeds.figure_metrics")
    if "grid_algorithms" in table:
        kw["grid_algorithms"] = _str_list(table["grid_algorithms"], source, "seeds.grid_algorithms")
    if "configs" in table:
        if not isinstance(table["configs"], dict):
            raise input_error(source, "seeds.configs", "must be a table: algorithm = config_id or {...}")
        kw["configs"] = dict(table["configs"])
    if "cache" in table:
        if not isinstance(table["cache"], str):
            raise input_error(source, "seeds.cache", "must be a path string")
        kw["cache"] = table["cache"]
    return SeedSettings(**kw)


def load_seed_experiment(path: str | Path) -> tuple[Experiment, SeedSettings]:
    """Read a seeds experiment: an ordinary experiment TOML plus an optional ``[seeds]`` table.

    The ``[seeds]`` table is taken out before :func:`dptune.config.parse_experiment` validates
    the rest, so the same file format (data, evaluation, analysis, algorithms) applies.
    """
    path = Path(path)
    data = read_toml(path, "experiment file")
    table = data.pop("seeds", None)
    exp = parse_experiment(data, str(path), path)
    return exp, parse_seed_settings(table, str(path))


def _validate_settings(exp: Experiment, st: SeedSettings) -> None:
    src = exp.source
    names = [a.name for a in exp.algorithms]
    for m in st.figure_metrics:
        if m not in exp.evaluation.metrics:
            raise input_error(src, "seeds.figure_metrics", f"{m!r} is not an evaluated metric")
    for a in st.grid_algorithms or ():
        if a not in names:
            raise input_error(src, "seeds.grid_algorithms", f"no algorithm named {a!r}")
    for a in st.configs:
        if a not in names:
            raise input_error(src, f"seeds.configs.{a}", f"no algorithm named {a!r}")


# --------------------------------------------------------------------------------------------
# Seeds and configurations


def split_seeds(exp: Experiment, n_seeds: int) -> list[int]:
    """The data-split seeds: ``s_i = derive_seed(split seed, "seed-study", i)``, ``i < n_seeds``.

    Seed ``i`` does not depend on ``n_seeds``, so a study with more seeds reuses the first ones.
    """
    return [derive_seed(exp.split_seed, "seed-study", i) for i in range(n_seeds)]


def default_config(exp: Experiment, algorithm: str) -> tuple[int, dict[str, Any]]:
    """``(config_id, configuration)`` of the grid's middle value of every free hyperparameter.

    For a hyperparameter with values ``x_0 .. x_{n-1}`` (grid order) the middle is
    ``x_m``, ``m = floor((n - 1) / 2)`` (the lower middle for even ``n``).
    """
    grid = exp.grids[algorithm]
    want = {h: vals[(len(vals) - 1) // 2] for h, vals in grid.values.items()}
    for cid, cfg in enumerate(grid.configs()):
        if all(cfg[h] == v for h, v in want.items()):
            return cid, cfg
    raise input_error(exp.source, f"algorithms.{algorithm}", "grid has no configuration")  # pragma: no cover


def resolve_configs(exp: Experiment, chosen: Mapping[str, Any] | None = None
                    ) -> dict[str, tuple[int, dict[str, Any]]]:
    """The configuration each algorithm runs with: ``{algorithm: (config_id, config)}``.

    ``chosen[algorithm]`` may be a grid ``config_id`` (int), ``{"config_id": id}``, or a table
    of free hyperparameter values (the rest from :func:`default_config`; derived
    hyperparameters recomputed as ``source * scale``). ``config_id`` is -1 for a configuration
    that is not in the grid.
    """
    chosen = dict(chosen or {})
    src = exp.source
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for alg in exp.algorithms:
        grid = exp.grids[alg.name]
        configs = grid.configs()
        where = f"seeds.configs.{alg.name}"
        spec = chosen.pop(alg.name, None)
        if isinstance(spec, dict) and set(spec) == {"config_id"}:
            spec = spec["config_id"]
        if spec is None:
            cid, cfg = default_config(exp, alg.name)
        elif isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            if not 0 <= int(spec) < len(configs):
                raise input_error(src, where, f"config_id {spec} is not in 0..{len(configs) - 1}")
            cid, cfg = int(spec), configs[int(spec)]
        elif isinstance(spec, dict):
            _, cfg = default_config(exp, alg.name)
            cfg = dict(cfg)
            for h, v in spec.items():
                if h not in grid.free:
                    raise input_error(src, f"{where}.{h}",
                                      f"not a free hyperparameter of the grid ({', '.join(grid.free)})")
                cfg[h] = v
            for name, (source, scale) in grid.derived.items():
                cfg[name] = cfg[source] * scale
            cid = next((i for i, c in enumerate(configs) if c == cfg), -1)
        else:
            raise input_error(src, where, f"expected a config_id or a table, got {spec!r}")
        get_family(alg.type).validate([cfg], f"{src}: {where}")
        out[alg.name] = (cid, cfg)
    if chosen:
        raise input_error(src, f"seeds.configs.{next(iter(chosen))}", "no algorithm of that name")
    return out


# --------------------------------------------------------------------------------------------
# Data


def _matrix(user: np.ndarray, item: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """Binary float32 CSR interaction matrix of the whole data set's shape."""
    m = sp.csr_matrix((np.ones(len(user), np.float32), (user, item)), shape=shape, dtype=np.float32)
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def fold_data(train: pd.DataFrame, held: pd.DataFrame, shape: tuple[int, int],
              threshold: float, name: str) -> FoldData:
    """One evaluation setting (as the sweep builds it): binarised training matrix, relevance
    matrix ``rating >= threshold`` of the held-out rows, users with a relevant item, novelty."""
    X = _matrix(train["user"].to_numpy(), train["item"].to_numpy(), shape)
    rel = held[held["rating"].to_numpy() >= threshold]
    R = _matrix(rel["user"].to_numpy(), rel["item"].to_numpy(), shape)
    users = np.flatnonzero(np.diff(R.indptr) > 0).astype(np.int32)
    efd, epc = novelty_vectors(X)
    return FoldData(name, X, R, users, efd, epc)


_DATA: dict[str, tuple[pd.DataFrame, tuple[int, int], str]] = {}


def _ratings(exp: Experiment) -> tuple[pd.DataFrame, tuple[int, int], str]:
    """Ratings of users with at least ``split.min_user_interactions`` ratings (cached per process),
    the matrix shape and the data set name. Both splits see the same users."""
    key = exp.fingerprint()
    if key not in _DATA:
        d = exp.data
        ds = load_dataset(d.source, fmt=d.format, min_rating=d.min_rating, kcore=d.kcore)
        r = ds.ratings
        counts = np.bincount(r["user"].to_numpy(), minlength=ds.n_users)
        keep = counts[r["user"].to_numpy()] >= exp.split.min_user_interactions
        _DATA[key] = (r[keep].reset_index(drop=True), (ds.n_users, ds.n_items), ds.name)
    return _DATA[key]


def _folds(exp: Experiment, st: SeedSettings, split: str, seed: int) -> Iterator[FoldData]:
    """The evaluation settings of one (split, seed): one for hold-out, ``st.folds`` for CV."""
    r, shape, _ = _ratings(exp)
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
    if len(fd.users) == 0:
        raise input_error(exp.source, "seeds", f"{split} fold {fd.fold} of seed {seed} has no user "
                          f"with a relevant held-out item")


# --------------------------------------------------------------------------------------------
# Work units (cached, atomic)


@dataclass(frozen=True)
class _Plan:
    """Everything a worker needs (picklable)."""

    exp: Experiment
    settings: SeedSettings
    configs: dict[str, tuple[int, dict[str, Any]]]
    seeds: tuple[int, ...]
    grid_algorithms: tuple[str, ...]
    grid_seeds: int
    cache: Path


def _fingerprint(exp: Experiment, st: SeedSettings,
                 configs: Mapping[str, tuple[int, dict[str, Any]]]) -> str:
    blob = json.dumps({"exp": exp.fingerprint(), "ratio": st.train_ratio, "folds": st.folds,
                       "configs": {a: c for a, (_, c) in configs.items()}},
                      sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _default_path(p: _Plan, index: int, split: str) -> Path:
    return p.cache / "defaults" / f"seed{index:03d}__{split}.parquet"


def _grid_root(p: _Plan, index: int) -> Path:
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


def _run_defaults(p: _Plan, index: int, split: str) -> Path:
    """Train every algorithm's default configuration on one (seed, split); cache the means."""
    path = _default_path(p, index, split)
    if path.exists():
        return path
    exp, seed = p.exp, p.seeds[index]
    ev = exp.evaluation
    rows: list[tuple] = []
    for fd in _folds(exp, p.settings, split, seed):
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


def _grid_store(p: _Plan, index: int) -> ResultStore:
    """The per-seed result store of the grid part; manifest and configs are (re)written for the
    current grid algorithms (atomically; parts of other algorithms stay untouched)."""
    store = ResultStore(_grid_root(p, index)).create()
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


def _grid_done(p: _Plan, index: int) -> bool:
    store = ResultStore(_grid_root(p, index))
    folds = [str(f) for f in range(p.settings.folds)]
    return all(store.has_part(t.algorithm, t.fold, t.unit)
               for a in p.grid_algorithms for t in plan(p.exp, a, folds))


def _run_grid(p: _Plan, index: int) -> Path:
    """Every configuration of the grid algorithms on the CV folds of one seed, unit by unit."""
    store = _grid_store(p, index)
    exp, seed = p.exp, p.seeds[index]
    ev = exp.evaluation
    folds = [str(f) for f in range(p.settings.folds)]
    tasks = [t for a in p.grid_algorithms for t in plan(exp, a, folds)]
    if all(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
        return store.root
    types = {a.name: a.type for a in exp.algorithms}
    for fd in _folds(exp, p.settings, "cv", seed):
        _check_users(exp, fd, "cv", seed)
        for t in (t for t in tasks if t.fold == fd.fold):
            if store.has_part(t.algorithm, t.fold, t.unit):
                continue
            configs = exp.grids[t.algorithm].configs()
            mseed = derive_seed(exp.seed, t.algorithm, "cv-grid", seed, t.fold, t.params)
            out: dict[int, tuple[np.ndarray, float, float]] = {}
            t0 = time.perf_counter()
            for local, model in get_family(types[t.algorithm]).fit_unit(
                    fd.train, [configs[c] for c in t.config_ids], mseed):
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


def _run_task(p: _Plan, task: tuple[int, str]) -> tuple[int, str]:
    index, kind = task
    if kind == "grid":
        _run_grid(p, index)
    else:
        _run_defaults(p, index, kind)
    return task


def _is_done(p: _Plan, task: tuple[int, str]) -> bool:
    index, kind = task
    return _grid_done(p, index) if kind == "grid" else _default_path(p, index, kind).exists()


def _execute(p: _Plan, tasks: list[tuple[int, str]], jobs: int, progress: bool) -> None:
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
# Statistics (pure functions on tables)


def pct_of_mean(values: np.ndarray) -> np.ndarray:
    """``100 * v_i / mean(v)``: each seed's value as a percentage of the mean over seeds.

    ``mean(pct) = 100`` (so ``sum(pct) = 100 S``); NaN everywhere when the mean is 0.
    """
    v = np.asarray(values, dtype=np.float64)
    m = v.mean() if v.size else np.nan
    if not np.isfinite(m) or m == 0:
        return np.full(v.shape, np.nan)
    return 100.0 * v / m


def per_seed_table(cache: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Seed values (CV: mean over folds) with their ``pct_of_mean`` per (algorithm, split, metric,
    cutoff); columns :data:`PER_SEED_COLUMNS`."""
    keys = ["algorithm", "config_id", "split", "seed_index", "seed", "metric", "cutoff"]
    v = cache.groupby(keys, sort=False)["value"].mean().reset_index()
    v["pct_of_mean"] = v.groupby(["algorithm", "split", "metric", "cutoff"], sort=False)[
        "value"].transform(lambda s: pd.Series(pct_of_mean(s.to_numpy()), index=s.index))
    v.insert(0, "dataset", dataset)
    return _order(v[PER_SEED_COLUMNS], ["dataset", "algorithm", "split", "metric", "cutoff",
                                        "seed_index"])


def _order(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Sort with algorithms in experiment order (as stored), splits and metrics in fixed order."""
    tmp = df.copy()
    sort_cols = []
    for col in by:
        if col == "split":
            tmp["_split"] = tmp["split"].map({s: i for i, s in enumerate(SPLITS)})
            sort_cols.append("_split")
        elif col == "metric":
            tmp["_metric"] = tmp["metric"].map(lambda m: METRICS.index(m) if m in METRICS else 99)
            sort_cols.append("_metric")
        elif col == "algorithm":
            order = list(dict.fromkeys(df["algorithm"]))
            tmp["_alg"] = tmp["algorithm"].map({a: i for i, a in enumerate(order)})
            sort_cols.append("_alg")
        else:
            sort_cols.append(col)
    tmp = tmp.sort_values(sort_cols, kind="stable")
    return tmp.drop(columns=[c for c in tmp.columns if c.startswith("_")]).reset_index(drop=True)


def _abs_dev(pct: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(pct, dtype=np.float64) - 100.0)


def _mwu(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U (Wilcoxon rank-sum) of ``a`` vs ``b``; (U of a, p)."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return float("nan"), float("nan")
    res = sps.mannwhitneyu(a, b, alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def summarize(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, algorithm, metric, cutoff): mean value, extremes and range of % of mean for
    each split, the largest ``|dev|``, and the Mann-Whitney U test of ``|dev|`` hold-out vs CV.

    Columns: ``dataset, algorithm, metric, cutoff, n_seeds, <split>_mean, <split>_min_pct,
    <split>_max_pct, <split>_range, <split>_max_abs_dev, <split>_median_abs_dev`` for split in
    hold-out and cv, then ``mwu_u, mwu_p``.
    """
    rows = []
    keys = ["dataset", "algorithm", "metric", "cutoff"]
    for key, g in per_seed.groupby(keys, sort=False):
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        devs = {}
        row["n_seeds"] = int(g["seed_index"].nunique())
        for s in SPLITS:
            gs = g[g["split"] == s]
            pct = gs["pct_of_mean"].to_numpy(dtype=float)
            devs[s] = _abs_dev(pct)
            ok = pct[np.isfinite(pct)]
            row[f"{s}_mean"] = float(gs["value"].mean()) if len(gs) else np.nan
            row[f"{s}_min_pct"] = float(ok.min()) if ok.size else np.nan
            row[f"{s}_max_pct"] = float(ok.max()) if ok.size else np.nan
            row[f"{s}_range"] = row[f"{s}_max_pct"] - row[f"{s}_min_pct"]
            row[f"{s}_max_abs_dev"] = float(np.nanmax(devs[s])) if ok.size else np.nan
            row[f"{s}_median_abs_dev"] = float(np.nanmedian(devs[s])) if ok.size else np.nan
        row["mwu_u"], row["mwu_p"] = _mwu(devs["holdout"], devs["cv"])
        rows.append(row)
    return pd.DataFrame(rows)


def pooled_tests(per_seed: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per algorithm, as in Wegmeth et al.: ``|dev|`` of every (metric in ``metrics``, cutoff,
    seed) pooled, hold-out vs CV, two-sided Mann-Whitney U. The pooled observations share seeds,
    so they are not independent; the per-cell tests of :func:`summarize` are the clean ones.

    Columns ``dataset, algorithm, metrics, n_holdout, n_cv, holdout_max_abs_dev, cv_max_abs_dev,
    holdout_median_abs_dev, cv_median_abs_dev, mwu_u, mwu_p``.
    """
    rows = []
    sel = per_seed[per_seed["metric"].isin(list(metrics))]
    for (ds, alg), g in sel.groupby(["dataset", "algorithm"], sort=False):
        d = {s: _abs_dev(g.loc[g["split"] == s, "pct_of_mean"].to_numpy(float)) for s in SPLITS}
        u, p = _mwu(d["holdout"], d["cv"])
        rows.append({"dataset": ds, "algorithm": alg, "metrics": "+".join(metrics),
                     "n_holdout": int(np.isfinite(d["holdout"]).sum()),
                     "n_cv": int(np.isfinite(d["cv"]).sum()),
                     "holdout_max_abs_dev": float(np.nanmax(d["holdout"])),
                     "cv_max_abs_dev": float(np.nanmax(d["cv"])),
                     "holdout_median_abs_dev": float(np.nanmedian(d["holdout"])),
                     "cv_median_abs_dev": float(np.nanmedian(d["cv"])),
                     "mwu_u": u, "mwu_p": p})
    return pd.DataFrame(rows)


def kendall_table(grid: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between the DP rankings of every two seeds.

    ``grid`` has one row per (dataset, algorithm, seed_index, metric, cutoff) with ``dp``. For each
    cutoff, the vector of the metrics' DP values of seed a is compared with seed b's
    (``scipy.stats.kendalltau``; ties handled by tau-b); cutoff ``"all"`` compares the vectors
    over every metric@N. Columns ``dataset, algorithm, cutoff, seed_a, seed_b, tau, p_value``.
    """
    rows = []
    for (ds, alg), g in grid.groupby(["dataset", "algorithm"], sort=False):
        piv = g.pivot_table(index=["cutoff", "metric"], columns="seed_index", values="dp")
        seeds_ = list(piv.columns)
        groups = [(str(c), piv.xs(c, level="cutoff")) for c in sorted(g["cutoff"].unique())]
        groups.append(("all", piv))
        for label, sub in groups:
            for a, b in combinations(seeds_, 2):
                x, y = sub[a].to_numpy(float), sub[b].to_numpy(float)
                with np.errstate(all="ignore"):
                    res = sps.kendalltau(x, y)
                rows.append((ds, alg, label, int(a), int(b), float(res.statistic), float(res.pvalue)))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "cutoff", "seed_a", "seed_b", "tau",
                                       "p_value"])


def grid_stability(grid: pd.DataFrame) -> pd.DataFrame:
    """How often the best configuration and the most discriminative metric change with the seed.

    Per (dataset, algorithm, metric, cutoff): the modal best configuration, the share of seeds
    that pick it, the number of distinct best configurations; the mean DP and its sd over seeds;
    the share of seeds in which the metric has the lowest DP at its cutoff (``top_share``).
    """
    rows = []
    for (ds, alg, m, c), g in grid.groupby(["dataset", "algorithm", "metric", "cutoff"], sort=False):
        counts = g["best_config_id"].value_counts()
        top = counts[counts == counts.max()].index.min()
        rows.append({"dataset": ds, "algorithm": alg, "metric": m, "cutoff": int(c),
                     "n_seeds": len(g), "modal_best_config": int(top),
                     "modal_best_params": g.loc[g["best_config_id"] == top, "best_params"].iloc[0],
                     "modal_share": float(counts.max() / len(g)),
                     "n_distinct_best": int(counts.size),
                     "dp_mean": float(g["dp"].mean()),
                     "dp_sd": float(g["dp"].std(ddof=1)) if len(g) > 1 else 0.0,
                     "top_share": float((g["dp_rank"] == 1).mean())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Figure (Wegmeth et al. Figure 1 style)


def _hbox(ax: Any, data: list[np.ndarray], positions: list[float]) -> None:
    kw = dict(positions=positions, widths=0.55, showfliers=False, patch_artist=True,
              medianprops={"color": "black"}, boxprops={"facecolor": "0.9"})
    try:
        ax.boxplot(data, orientation="horizontal", **kw)
    except TypeError:  # matplotlib < 3.10
        ax.boxplot(data, vert=False, **kw)


def seeds_figure(per_seed: pd.DataFrame, metrics: Sequence[str]) -> Any:
    """One panel per algorithm x metric x cutoff: the seeds' % of mean for hold-out (top row) and
    CV (bottom row), box plot (quartiles, whiskers to 1.5 IQR) with every seed as a dot."""
    from matplotlib.figure import Figure

    algs = list(dict.fromkeys(per_seed["algorithm"]))
    cutoffs = sorted(per_seed["cutoff"].unique())
    cols = [(m, c) for m in metrics for c in cutoffs]
    fig = Figure(figsize=(2.5 * len(cols), 1.7 * len(algs) + 0.6), dpi=100, layout="constrained")
    axes = fig.subplots(len(algs), len(cols), squeeze=False, sharex=True)
    rng = np.random.default_rng(0)
    colors = {"holdout": "#d62728", "cv": "#1f77b4"}
    for r, alg in enumerate(algs):
        for k, (m, c) in enumerate(cols):
            ax = axes[r, k]
            g = per_seed[(per_seed["algorithm"] == alg) & (per_seed["metric"] == m)
                         & (per_seed["cutoff"] == c)]
            data, pos = [], []
            for y, s in ((1.0, "holdout"), (0.0, "cv")):
                x = g.loc[g["split"] == s, "pct_of_mean"].to_numpy(float)
                x = x[np.isfinite(x)]
                data.append(x)
                pos.append(y)
                ax.scatter(x, y + rng.uniform(-0.18, 0.18, len(x)), s=7, color=colors[s],
                           alpha=0.75, zorder=3, linewidths=0)
            if all(len(d) for d in data):
                _hbox(ax, data, pos)
            ax.axvline(100.0, color="0.5", linewidth=0.7, linestyle=":")
            ax.set_yticks([1.0, 0.0], ["HO", "CV"])
            ax.set_ylim(-0.6, 1.6)
            ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
            ax.set_title(f"{report.display_algorithm(alg)} · {report.display_metric(m, int(c))}",
                         fontsize=8)
            ax.tick_params(labelsize=7)
            if r == len(algs) - 1:
                ax.set_xlabel("% of mean over seeds", fontsize=7)
    n = int(per_seed["seed_index"].nunique())
    ds = ", ".join(dict.fromkeys(per_seed["dataset"]))
    fig.suptitle(f"{ds}: accuracy of each data-split seed relative to the mean over {n} seeds "
                 f"(HO = random 80/20 hold-out, CV = 5-fold cross-validation)", fontsize=9)
    return fig


# --------------------------------------------------------------------------------------------
# Tables and report


def _f(x: Any, d: int = 2) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "–" if not np.isfinite(v) else f"{v:.{d}f}"


def _p(x: Any) -> str:
    v = float(x)
    if not np.isfinite(v):
        return "–"
    return "< 0.001" if v < 0.001 else f"{v:.3f}"


def summary_table(summary: pd.DataFrame, n_seeds: int) -> report.Table:
    """``seeds_summary`` as a report table: extremes and range per split, the smaller range bold."""
    header = [report.Cell(t) for t in ("Algorithm", "Metric")] + [
        report.Cell(t, numeric=True) for t in (
            "HO min %", "HO max %", "HO range", "CV min %", "CV max %", "CV range", "p (MWU)")]
    rows, rules = [], set()
    prev = None
    for i, r in enumerate(summary.itertuples(index=False)):
        if prev is not None and r.algorithm != prev:
            rules.add(i - 1)
        prev = r.algorithm
        ho, cv = r.holdout_range, r.cv_range
        rows.append([
            report.Cell(report.display_algorithm(r.algorithm)),
            report.Cell(report.display_metric(r.metric, int(r.cutoff))),
            report.Cell(_f(r.holdout_min_pct), numeric=True),
            report.Cell(_f(r.holdout_max_pct), numeric=True),
            report.Cell(_f(ho), bold=bool(ho < cv), numeric=True),
            report.Cell(_f(r.cv_min_pct), numeric=True),
            report.Cell(_f(r.cv_max_pct), numeric=True),
            report.Cell(_f(cv), bold=bool(cv < ho), numeric=True),
            report.Cell(_p(r.mwu_p), bold=bool(r.mwu_p < 0.05), numeric=True),
        ])
    ds = ", ".join(dict.fromkeys(summary["dataset"])) if len(summary) else ""
    caption = (f"Split-seed study on {ds}: accuracy of each of {n_seeds} data-split seeds as % of "
               f"the mean over seeds (extremes and range = max - min, in percentage points), "
               f"random 80/20 hold-out (HO) vs 5-fold CV. Bold range: the smaller of the two; "
               f"p: two-sided Mann-Whitney U (Wilcoxon rank-sum) test of |% - 100| HO vs CV, bold "
               f"when < 0.05.")
    return report.Table("seeds_summary", caption, [report.Block(header, rows, rules_after=rules)],
                        summary)


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _write(path: Path, text: str) -> Path:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return path


def _csv(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False, float_format=_FLOAT, lineterminator="\n")
    return path


def _params(cfg: Mapping[str, Any], free: Sequence[str]) -> str:
    return ", ".join(f"{h}={dpmod.format_value(cfg[h])}" for h in free)


def _pairs_text(grid: pd.DataFrame) -> str:
    per = grid.groupby("algorithm", sort=False)["n_pairs"].max()
    return ", ".join(f"{v} ({report.display_algorithm(a)})" for a, v in per.items())


def _grid_findings(grid: pd.DataFrame, stab: pd.DataFrame, kendall: pd.DataFrame,
                   n_seeds: int) -> list[str]:
    """Key sentences of the grid part: agreement on the best configuration, on the most
    discriminative metric, and the rank correlation of the DP rankings."""
    out = []
    for alg in dict.fromkeys(stab["algorithm"]):
        s = stab[stab["algorithm"] == alg]
        name = report.display_algorithm(alg)
        unanimous = int((s["n_distinct_best"] == 1).sum())
        worst = s.loc[s["modal_share"].idxmin()]
        out.append(f"- {name}, best configuration: the modal choice is made by a median "
                   f"{s['modal_share'].median():.0%} of the seeds; all seeds agree in {unanimous} "
                   f"of {len(s)} metric@N; least stable "
                   f"{report.display_metric(worst['metric'], int(worst['cutoff']))} "
                   f"({round(worst['modal_share'] * n_seeds)}/{n_seeds} seeds pick "
                   f"{worst['modal_best_params']}, {int(worst['n_distinct_best'])} distinct).")
        tops = []
        for c in sorted(s["cutoff"].unique()):
            g = grid[(grid["algorithm"] == alg) & (grid["cutoff"] == c) & (grid["dp_rank"] == 1)]
            counts = g.groupby("metric")["seed_index"].nunique()
            best = counts[counts == counts.max()].index
            label = " = ".join(report.display_metric(m, int(c)) for m in best)
            tops.append(f"N = {c}: {label} in {int(counts.max())}/{n_seeds}")
        k = kendall[(kendall["algorithm"] == alg) & (kendall["cutoff"] == "all")]["tau"]
        out.append(f"- {name}, most discriminative metric (lowest DP; metrics with identical "
                   f"per-user values tie): {'; '.join(tops)}. Kendall tau over every metric@N: "
                   f"mean {k.mean():.3f}, min {k.min():.3f}.")
    return out


def _report_md(p: _Plan, dataset: str, per_seed: pd.DataFrame, summary: pd.DataFrame,
               pooled: pd.DataFrame, grid: pd.DataFrame | None, kendall: pd.DataFrame | None,
               stability: pd.DataFrame | None, trials: pd.DataFrame) -> str:
    exp, st = p.exp, p.settings
    n = len(p.seeds)
    ev = exp.evaluation
    L: list[str] = [f"# Split-seed study: {dataset}", ""]
    L += ["Reproduces the design of Wegmeth et al. (PERSPECTIVES 2023) inside dptune "
          "(see `docs/seeds-and-slices.md`).", ""]
    L += ["## Settings", ""]
    cfg_lines = []
    for a in exp.algorithms:
        cid, cfg = p.configs[a.name]
        tag = f"config_id {cid}" if cid >= 0 else "not in the grid"
        cfg_lines.append(f"{report.display_algorithm(a.name)}: {_params(cfg, exp.grids[a.name].free)} ({tag})")
    fit = trials.groupby(["algorithm", "split"])["fit_seconds"].sum()
    settings = [
        ("Experiment", f"`{exp.source}` ({exp.name})"),
        ("Data set", f"{dataset}; users with < {exp.split.min_user_interactions} ratings removed "
                     f"first (same users for both splits)"),
        ("Data-split seeds", f"S = {n}: s_i = derive_seed({exp.split_seed}, \"seed-study\", i); "
                             f"values in `seeds_per_seed.csv`"),
        ("Hold-out", f"split.random_holdout(ratings, {st.train_ratio}, s_i): per-user random "
                     f"{round(st.train_ratio * 100)}/{round((1 - st.train_ratio) * 100)}"),
        ("Cross-validation", f"split.kfold_labels(ratings, {st.folds}, s_i): global random "
                             f"{st.folds}-fold; a seed's value = mean over its {st.folds} folds"),
        ("Configurations", "; ".join(cfg_lines)),
        ("Model seeds", "derive_seed(experiment seed, algorithm, split, s_i, fold), in "
                        "`seeds_trials.csv`"),
        ("Evaluation", f"all unrated items; relevant = rating >= {ev.relevance_threshold}; users "
                       f"with a relevant held-out item; novelty {ev.novelty}"),
        ("% of mean", "100 * v_i / mean_i(v_i), per split (mean of the column = 100)"),
        ("HO vs CV test", "two-sided Mann-Whitney U (Wilcoxon rank-sum) of abs(% - 100): the "
                          "splits of one seed are unrelated draws, so the samples are unpaired"),
        ("Fit time (sum over seeds and folds)", "; ".join(f"{report.display_algorithm(a.name)} {SPLIT_NAMES[s]} "
                                    f"{fit.get((a.name, s), 0.0):.0f} s"
                                    for a in exp.algorithms for s in SPLITS)),
    ]
    L += ["| Setting | Value |", "| :--- | :--- |"]
    L += [f"| {k} | {v.replace('|', '/')} |" for k, v in settings]
    L += ["", "## Deviation from the mean accuracy", "",
          "![Figure: % of mean per seed, hold-out vs CV](seeds_figure.png)", ""]
    figm = [m for m in st.figure_metrics if m in set(summary["metric"])]
    # key numbers
    worst = {}
    for s in SPLITS:
        col = f"{s}_max_abs_dev"
        sub = summary[summary["metric"].isin(figm)] if figm else summary
        r = sub.loc[sub[col].idxmax()]
        worst[s] = r
        L.append(f"- Largest deviation under {SPLIT_NAMES[s]} ({', '.join(report.display_metric(m) for m in figm)}): "
                 f"{_f(r[col])} % ({report.display_algorithm(r['algorithm'])}, "
                 f"{report.display_metric(r['metric'], int(r['cutoff']))}; "
                 f"range {_f(r[f'{s}_min_pct'])}-{_f(r[f'{s}_max_pct'])} %).")
    smaller = int((summary["cv_range"] < summary["holdout_range"]).sum())
    sig = int((summary["mwu_p"] < 0.05).sum())
    sig_cv = int(((summary["mwu_p"] < 0.05) & (summary["cv_median_abs_dev"]
                                                < summary["holdout_median_abs_dev"])).sum())
    L.append(f"- CV has the smaller range in {smaller} of {len(summary)} (algorithm, metric@N) "
             f"cells; |deviation| differs significantly (p < 0.05) in {sig}, of which {sig_cv} "
             f"in favour of CV.")
    for c in sorted(summary["cutoff"].unique()):
        sub = summary[(summary["cutoff"] == c) & summary["metric"].isin(figm or summary["metric"])]
        L.append(f"- N = {c}: median range {_f(sub['holdout_range'].median())} points (HO) vs "
                 f"{_f(sub['cv_range'].median())} (CV).")
    L += ["", "Pooled per algorithm as in the paper (|dev| over "
          f"{' + '.join(report.display_metric(m) for m in figm)} x every cutoff x seed; the "
          "pooled values share seeds and are not independent):", ""]
    pooled_md = pd.DataFrame({
        "Algorithm": [report.display_algorithm(a) for a in pooled["algorithm"]],
        "n (HO / CV)": [f"{a} / {b}" for a, b in zip(pooled["n_holdout"], pooled["n_cv"], strict=True)],
        "max abs dev HO %": [_f(v) for v in pooled["holdout_max_abs_dev"]],
        "max abs dev CV %": [_f(v) for v in pooled["cv_max_abs_dev"]],
        "median abs dev HO %": [_f(v, 3) for v in pooled["holdout_median_abs_dev"]],
        "median abs dev CV %": [_f(v, 3) for v in pooled["cv_median_abs_dev"]],
        "p (MWU)": [_p(v) for v in pooled["mwu_p"]],
    })
    L += [_md(pooled_md), ""]
    tab = summary_table(summary[summary["metric"].isin(figm)] if figm else summary, n)
    L += [tab.to_markdown(), "All metrics: `seeds_summary.csv` / `seeds_summary.md` / "
          "`seeds_summary.tex`; every seed: `seeds_per_seed.csv`.", ""]
    if grid is not None and len(grid):
        gs = sorted(grid["seed_index"].unique())
        L += ["## Grid: best configuration and metric ranking vs seed", "",
              f"The whole grid of {', '.join(report.display_algorithm(a) for a in p.grid_algorithms)} "
              f"trained on the {st.folds} CV folds of each of the first {len(gs)} seeds; best "
              f"configuration = highest mean over folds (ties: lowest config_id); DP with "
              f"P = {_pairs_text(grid)} pairs (at most {exp.analysis.n_pairs}; analysis seed "
              f"{exp.analysis_seed}, the same pairs for every seed), {exp.analysis.test}-test, "
              f"p-value curves averaged over the folds.", ""]
        stab = stability.copy()
        L += _grid_findings(grid, stab, kendall, len(gs)) + [""]
        out = pd.DataFrame({
            "Algorithm": [report.display_algorithm(a) for a in stab["algorithm"]],
            "Metric": [report.display_metric(m, int(c)) for m, c in zip(stab["metric"], stab["cutoff"], strict=True)],
            "modal best": stab["modal_best_params"],
            "seeds picking it": [f"{round(s * len(gs))}/{len(gs)}" for s in stab["modal_share"]],
            "distinct best": stab["n_distinct_best"],
            "DP mean ± sd": [f"{_f(a, 3)} ± {_f(b, 3)}" for a, b in zip(stab["dp_mean"], stab["dp_sd"], strict=True)],
            "lowest DP in": [f"{round(s * len(gs))}/{len(gs)}" for s in stab["top_share"]],
        })
        L += [_md(out), "", "Kendall's tau-b between the DP rankings of two seeds "
              "(all seed pairs; cutoff `all` ranks every metric@N):", ""]
        kt = kendall.groupby(["algorithm", "cutoff"], sort=False)["tau"]
        kdf = kt.agg(["count", "mean", "median", "min"]).reset_index()
        kdf["share tau = 1"] = kendall.assign(one=np.isclose(kendall["tau"], 1.0)).groupby(
            ["algorithm", "cutoff"], sort=False)["one"].mean().to_numpy()
        L += [_md(pd.DataFrame({
            "Algorithm": [report.display_algorithm(a) for a in kdf["algorithm"]],
            "Cutoff": kdf["cutoff"], "seed pairs": kdf["count"],
            "mean tau": [_f(v, 3) for v in kdf["mean"]],
            "median tau": [_f(v, 3) for v in kdf["median"]],
            "min tau": [_f(v, 3) for v in kdf["min"]],
            "identical ranking": [f"{v:.0%}" for v in kdf["share tau = 1"]]})), ""]
    L += ["## Files", "",
          "`seeds_per_seed.csv` (dataset, algorithm, split, seed, metric, cutoff, value, "
          "pct_of_mean, seed_index, config_id), `seeds_summary.csv/.md/.tex`, "
          "`seeds_pooled.csv`, `seeds_trials.csv` (model seed and timings of every run), "
          "`seeds_grid.csv` (best configuration and DP rank per seed), `seeds_grid_stability.csv`, "
          "`seeds_kendall.csv`, `seeds_figure.png/.svg`.", ""]
    return "\n".join(L)


# --------------------------------------------------------------------------------------------
# The study


def _grid_rows(p: _Plan, index: int, dataset: str) -> pd.DataFrame:
    """Best configuration and DP of every metric@N of one seed's grid store."""
    exp = p.exp
    store = ResultStore(_grid_root(p, index))
    store.refresh()
    an = dpmod.analyze(store, n_pairs=exp.analysis.n_pairs, seed=exp.analysis_seed,
                       test=exp.analysis.test, algorithms=list(p.grid_algorithms))
    dpa = an.dp[an.dp["scope"] == "all"][["algorithm", "metric", "cutoff", "dp", "n_pairs"]]
    best = store.best_configs().rename(columns={"config_id": "best_config_id",
                                                "validation_mean": "best_value"})
    df = dpa.merge(best[["algorithm", "metric", "cutoff", "best_config_id", "best_value"]],
                   on=["algorithm", "metric", "cutoff"], how="left")
    df["dp_rank"] = df.groupby(["algorithm", "cutoff"])["dp"].rank(method="min").astype(int)
    params = []
    for a, cid in zip(df["algorithm"], df["best_config_id"], strict=True):
        cfg = exp.grids[a].configs()[int(cid)]
        params.append(_params(cfg, exp.grids[a].free))
    df["best_params"] = params
    df.insert(0, "seed", p.seeds[index])
    df.insert(0, "seed_index", index)
    df.insert(0, "dataset", dataset)
    cols = ["dataset", "algorithm", "seed_index", "seed", "metric", "cutoff", "best_config_id",
            "best_params", "best_value", "dp", "dp_rank", "n_pairs"]
    return df[cols]


def _study_name(exp: Experiment) -> str:
    """``<name>`` when the experiment is named ``seeds...``, else ``seeds-<name>``."""
    return exp.name if exp.name.startswith("seeds") else f"seeds-{exp.name}"


def run_seed_study(exp: Experiment | str | Path, n_seeds: int | None = None,
                   out_dir: str | Path | None = None,
                   configs: Mapping[str, Any] | None = None, jobs: int = 1,
                   progress: bool = True, *, settings: SeedSettings | None = None,
                   cache_dir: str | Path | None = None,
                   grid_algorithms: Sequence[str] | None = None,
                   grid_seeds: int | None = None) -> list[Path]:
    """Run (or resume) the split-seed study and write its report files; returns their paths.

    ``exp`` is an :class:`Experiment` or the path of a seeds experiment TOML (its ``[seeds]``
    table gives the defaults of every argument). ``n_seeds`` (default: settings, else 20) data
    split seeds; ``configs`` ``{algorithm: config_id | {hyperparameter: value}}`` overrides the
    default configurations; ``grid_algorithms`` / ``grid_seeds`` choose the grid part (``[]`` or
    0 skip it). ``out_dir`` defaults to ``reports/seeds-<name>``, ``cache_dir`` to
    ``results/seeds-<name>`` (per-seed results; safe to delete; ``seeds-`` is not doubled
    when the experiment name already starts with ``seeds``).
    """
    if isinstance(exp, (str, Path)):
        exp, file_settings = load_seed_experiment(exp)
        settings = settings or file_settings
    st = settings or SeedSettings()
    if n_seeds is not None:
        st = replace(st, n_seeds=_int(n_seeds, "--seeds", "", 2))
    if st.n_seeds < 2:
        raise input_error("--seeds", None, "the study needs at least 2 seeds")
    if configs:
        st = replace(st, configs={**dict(st.configs), **dict(configs)})
    if grid_algorithms is not None:
        st = replace(st, grid_algorithms=tuple(grid_algorithms))
    if grid_seeds is not None:
        st = replace(st, grid_seeds=int(grid_seeds))
    _validate_settings(exp, st)
    chosen = resolve_configs(exp, st.configs)
    galgs = st.grid_algorithms
    if galgs is None:
        galgs = tuple(a.name for a in exp.algorithms if a.type in ("userknn", "itemknn"))
    n_grid = st.n_seeds if st.grid_seeds is None else min(st.grid_seeds, st.n_seeds)
    if not galgs:
        n_grid = 0
    if n_grid == 1:
        raise input_error(exp.source, "seeds.grid_seeds", "needs 0 (skip) or at least 2 seeds")
    root = Path(cache_dir or st.cache or Path("results") / _study_name(exp))
    p = _Plan(exp=exp, settings=st, configs=chosen, seeds=tuple(split_seeds(exp, st.n_seeds)),
              grid_algorithms=tuple(galgs), grid_seeds=n_grid,
              cache=root / _fingerprint(exp, st, chosen))
    try:
        p.cache.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise input_error(root, None, f"cache directory is not writable ({err.strerror})") from None
    tasks = [(i, s) for i in range(st.n_seeds) for s in SPLITS]
    tasks += [(i, "grid") for i in range(n_grid)]
    _execute(p, tasks, max(1, int(jobs)), progress)

    _, _, dataset = _ratings(exp)
    out = Path(out_dir or Path("reports") / _study_name(exp))
    out.mkdir(parents=True, exist_ok=True)
    cache = pd.concat([pd.read_parquet(_default_path(p, i, s)) for i in range(st.n_seeds)
                       for s in SPLITS], ignore_index=True)
    trials = cache.drop_duplicates(["algorithm", "split", "seed_index", "fold"])[
        ["algorithm", "config_id", "split", "seed_index", "seed", "fold", "model_seed", "n_users",
         "fit_seconds", "eval_seconds"]]
    trials.insert(0, "dataset", dataset)
    per_seed = per_seed_table(cache, dataset)
    summary = _order(summarize(per_seed), ["dataset", "algorithm", "metric", "cutoff"])
    figm = [m for m in st.figure_metrics if m in exp.evaluation.metrics] or list(exp.evaluation.metrics[:2])
    pooled = pooled_tests(per_seed, figm)
    files = [_csv(per_seed, out / "seeds_per_seed.csv"), _csv(trials, out / "seeds_trials.csv"),
             _csv(pooled, out / "seeds_pooled.csv")]
    tab = summary_table(summary, st.n_seeds)
    files += [_write(out / "seeds_summary.md", tab.to_markdown()),
              _csv(summary, out / "seeds_summary.csv"),
              _write(out / "seeds_summary.tex", tab.to_latex())]
    files += report.save_figure(seeds_figure(per_seed, figm), out / "seeds_figure",
                               creator="dptune")
    grid = kendall = stability = None
    if n_grid:
        grid = pd.concat([_grid_rows(p, i, dataset) for i in range(n_grid)], ignore_index=True)
        grid = _order(grid, ["dataset", "algorithm", "seed_index", "metric", "cutoff"])
        kendall = kendall_table(grid)
        stability = grid_stability(grid)
        files += [_csv(grid, out / "seeds_grid.csv"), _csv(kendall, out / "seeds_kendall.csv"),
                  _csv(stability, out / "seeds_grid_stability.csv")]
    files.append(_write(out / "seeds_report.md", _report_md(
        p, dataset, per_seed, summary, pooled, grid, kendall, stability, trials)))
    return files


# --------------------------------------------------------------------------------------------
# Command line


def _config_arg(text: str) -> tuple[str, int]:
    alg, sep, cid = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return alg, int(cid)
    except ValueError:
        raise input_error("--config-id", None, f"expected ALGORITHM=CONFIG_ID, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """``python -m dptune.seeds CONFIG [--seeds S] [--out DIR] ...``."""
    ap = argparse.ArgumentParser(prog="dptune seeds", description=(
        "Split-seed study: accuracy under S data-split seeds, random hold-out vs k-fold CV, and "
        "the stability of the best configuration and of the DP metric ranking."))
    ap.add_argument("config", help="experiment TOML, optionally with a [seeds] table")
    ap.add_argument("--seeds", type=int, default=None, help="number of data-split seeds (default 20)")
    ap.add_argument("--out", default=None, help="report directory (default reports/seeds-<name>)")
    ap.add_argument("--cache", default=None, help="per-seed results (default results/seeds-<name>)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--config-id", action="append", default=[], metavar="ALG=ID",
                    help="run ALG with grid configuration ID instead of the default")
    ap.add_argument("--grid", default=None,
                    help="comma-separated algorithms for the grid part ('' to skip)")
    ap.add_argument("--grid-seeds", type=int, default=None, help="seeds of the grid part")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m dptune.seeds``; user errors print one line and return 2."""
    args = build_parser().parse_args(argv)
    try:
        configs = dict(_config_arg(t) for t in args.config_id)
        grid = None if args.grid is None else [g for g in args.grid.split(",") if g.strip()]
        files = run_seed_study(args.config, args.seeds, args.out, configs or None,
                               jobs=args.jobs, progress=not args.no_progress,
                               cache_dir=args.cache, grid_algorithms=grid,
                               grid_seeds=args.grid_seeds)
    except DptuneError as err:
        print(f"dptune: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("dptune: interrupted; finished seeds are cached, run the same command to resume",
              file=sys.stderr)
        return 130
    print(f"seeds: {len(files)} files in {files[-1].parent} (see {files[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
