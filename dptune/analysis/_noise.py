"""Noise floor of discriminative power: A/A pairs of one configuration trained with several seeds.

``SPEC.md`` section 7: pairs of *identical* configurations trained with different seeds give the
p-value curve of "no real difference"; a metric whose DP curve is not clearly below that floor
does not discriminate configurations better than re-training with another seed would.

Two halves, one per pipeline stage:

- **Training** (:func:`run_noise_floor`, sweep stage; called by ``dptune run`` after the sweep).
  For every *stochastic* algorithm (``bpr-mf`` and cornac models; the KNN models never use a
  seed), the ``n_configs`` best configurations by the primary metric's mean over the validation
  folds (ties: lower ``config_id``, as :meth:`dptune.store.ResultStore.best_configs`) are
  trained with ``S`` seeds on every validation fold, seed ``s`` being
  ``derive_seed(experiment seed, algorithm, fold, free params, "noise", s)``, and evaluated
  exactly like the sweep. Each ``(algorithm, config, fold)`` is one Parquet part of
  ``<results>/noise_floor.parquet/`` (columns of ``per_user.parquet`` plus ``seed_index``
  int16), written atomically (temporary file, fsync, rename); existing parts are skipped on a
  rerun (a part with fewer seeds than asked for is completed). ``noise_trials.csv`` records the
  seed of every run.
- **Analysis** (:func:`noise_floor_table`, dp stage; read by :mod:`dptune.analyze`).
  Per part and metric@N, the ``S`` seeds' per-user values ``v[s, u]`` give the ``S (S - 1) / 2``
  A/A p-values of :func:`dptune.analysis._dp.noise_floor`. Per fold the A/A p-values of all selected
  configurations are pooled and sorted decreasingly (``c_f``, length ``K``); the curve is
  resampled to the DP's ``P`` positions by quantile interpolation,
  ``r_f[j] = interp((j + 1/2) / P; (i + 1/2) / K -> c_f[i])``, then averaged over folds
  position by position (mean, sd with ``ddof=1``) exactly like the DP curve. The floor is

  ``DP_floor = P * mean_f(pbar_f)``, ``pbar_f`` = mean A/A p-value of fold ``f``,

  with ``DP_floor_sd = P * sd_f(pbar_f)``. Under an exactly true null the A/A p-values are
  uniform and ``DP_floor = P / 2``; seed-to-seed differences of the trained models push it
  lower. :func:`compare_with_floor` flags a metric whose DP is not clearly below the floor.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dptune._atomic import temporary_path, write_text
from dptune._parallel import run_parallel
from dptune.analysis import _dp as dpmod
from dptune.analysis import _stats as stats
from dptune.errors import input_error
from dptune.store._store import SCHEMA as STORE_SCHEMA
from dptune.store._store import ResultStore
from dptune.vocab import fold_key, metric_key

if TYPE_CHECKING:
    from dptune.config import Experiment

__all__ = [
    "NOISE_DIR",
    "NOISE_SCHEMA",
    "NoiseTask",
    "NoiseRun",
    "NoiseFloor",
    "is_stochastic",
    "noise_part_name",
    "rank_configs",
    "plan_noise",
    "run_noise_task",
    "write_noise_part",
    "noise_part_paths",
    "deterministic_algorithms",
    "run_noise_floor",
    "noise_trials",
    "aa_pvalues",
    "resample_curve",
    "noise_floor_table",
    "compare_with_floor",
]

#: Directory of the noise-floor parts inside a results directory.
NOISE_DIR = "noise_floor.parquet"
#: Columns of a noise-floor part: those of ``per_user.parquet`` plus the seed's index.
NOISE_SCHEMA = pa.schema([*STORE_SCHEMA, pa.field("seed_index", pa.int16())])
#: Columns of ``noise_trials.csv``.
NOISE_TRIAL_COLUMNS = ["algorithm", "config_id", "fold", "seed_index", "seed", "fit_seconds",
                       "eval_seconds", "n_users"]
PVALUE_COLUMNS = ["algorithm", "config_id", "metric", "cutoff", "fold", "seed_a", "seed_b", "p",
                  "n_users"]
CURVE_COLUMNS = ["algorithm", "cutoff", "metric", "position", "mean", "sd"]
FLOOR_COLUMNS = ["algorithm", "metric", "cutoff", "n_configs", "n_seeds", "n_folds",
                 "n_aa_pairs", "n_positions", "mean_p", "dp_floor", "dp_floor_sd", "test"]


def is_stochastic(algorithm_type: str) -> bool:
    """Whether training depends on a seed, as the model family declares it
    (:func:`dptune.models.is_stochastic`): ``bpr-mf``, cornac models except the deterministic
    ones (EASE, MostPop, ItemKNN, ...), stochastic implicit and Python models. UserKNN / ItemKNN
    and the other deterministic models get no noise floor."""
    from dptune.models._families import is_stochastic as family_is_stochastic

    return family_is_stochastic(algorithm_type)


def noise_part_name(algorithm: str, config_id: int, fold: str) -> str:
    """File name of the part of one (algorithm, configuration, fold)."""
    return f"{algorithm}__{fold}__c{int(config_id):06d}.parquet"


# --------------------------------------------------------------------------------------------
# Choosing the configurations


def rank_configs(store: ResultStore, algorithm: str, metric: str, cutoff: int) -> list[int]:
    """Configuration ids of ``algorithm`` from best to worst by ``metric@cutoff``.

    Score = mean over the validation folds of the per-fold mean over users
    (:meth:`ResultStore.summary`); ties broken by the lower ``config_id``. The first element is
    the configuration :meth:`ResultStore.best_configs` picks.
    """
    s = store.summary()
    s = s[(s["algorithm"] == algorithm) & (s["fold"] != "test") & (s["metric"] == metric)
          & (s["cutoff"] == int(cutoff))]
    if s.empty:
        return []
    m = s.groupby("config_id", sort=True)["mean"].mean().reset_index()
    m = m.sort_values(["mean", "config_id"], ascending=[False, True], kind="stable")
    return [int(c) for c in m["config_id"]]


# --------------------------------------------------------------------------------------------
# Training


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


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise input_error("noise floor", name, f"must be an integer >= {minimum}, got {value!r}")
    return int(value)


def plan_noise(exp: Experiment, store: ResultStore, n_configs: int = 1) -> tuple[list[NoiseTask], dict[str, str]]:
    """Tasks of the noise floor (every selected configuration x validation fold) and the
    algorithms without one, ``{name: reason}``."""
    n_configs = _check_int(n_configs, "noise_configs", 1)
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


def _part_seed_indices(path: Path) -> list[int]:
    if not path.exists():
        return []
    meta = json.loads((pq.read_schema(path).metadata or {})[b"dptune"])
    return [int(s) for s in meta["seed_indices"]]


def run_noise_task(exp: Experiment, task: NoiseTask, root: str | Path, seeds: int) -> Path:
    """Train ``task``'s configuration with seeds ``0 .. seeds-1`` on its fold, evaluate, write the
    part atomically; seeds already in an existing part are read back, not retrained."""
    from dptune.metrics import METRICS, evaluate
    from dptune.models._families import get_family
    from dptune.sweep._sweep import derive_seed, prepare

    seeds = _check_int(seeds, "noise_seeds", 2)
    out_dir = Path(root) / NOISE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / noise_part_name(task.algorithm, task.config_id, task.fold)
    have = _part_seed_indices(final)
    if all(s in have for s in range(seeds)):
        return final
    ev = exp.evaluation
    metrics = tuple(ev.metrics)
    cutoffs = tuple(int(c) for c in ev.cutoffs)
    rows = [METRICS.index(m) for m in metrics]
    fd = prepare(exp).fold(task.fold)
    users = np.asarray(fd.users, dtype=np.int32)
    family = get_family(task.algorithm_type)

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
        vals = None
        fit_s = ev_s = 0.0
        for _, model in family.fit_unit(fd.train, [dict(task.config)], seed):
            t1 = time.perf_counter()
            vals = evaluate(model, fd.users, fd.train, fd.relevant, cutoffs, fd.efd, fd.epc,
                            block=ev.user_block, relevance_aware=ev.novelty == "relevance-aware")
            fit_s, ev_s = t1 - t0, time.perf_counter() - t1
        if vals is None:  # pragma: no cover - every family yields one model per configuration
            raise input_error("noise floor", task.algorithm, "the model family yielded no model")
        values[s] = np.asarray(vals, dtype=np.float32)[rows]
        info[s] = (seed, fit_s, ev_s)

    return write_noise_part(
        root, task.algorithm, task.config_id, task.fold, task.params, users, metrics, cutoffs,
        values, {s: info[s][0] for s in values}, {s: (info[s][1], info[s][2]) for s in values})


def write_noise_part(root: str | Path, algorithm: str, config_id: int, fold: str,
                     params: Mapping[str, Any], users: np.ndarray, metrics: Sequence[str],
                     cutoffs: Sequence[int], values: Mapping[int, np.ndarray],
                     seeds: Mapping[int, int],
                     seconds: Mapping[int, tuple[float, float]] | None = None) -> Path:
    """Write one noise-floor part atomically (temporary file, fsync, rename) and return its path.

    ``values[s]`` is seed index ``s``'s ``(len(metrics), len(cutoffs), len(users))`` array,
    ``seeds[s]`` the seed it was trained with, ``seconds[s]`` its (fit, eval) time. Rows: one row
    group per (metric, cutoff), sorted by seed index then user; the ``dptune`` key-value
    metadata records the seeds, timings and per-seed means.
    """
    out_dir = Path(root) / NOISE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / noise_part_name(algorithm, config_id, fold)
    users = np.asarray(users, dtype=np.int32)
    order = sorted(int(s) for s in values)
    seconds = seconds or {s: (0.0, 0.0) for s in order}
    n_users = len(users)
    arrays = {s: np.asarray(values[s], dtype=np.float32) for s in order}
    for s, arr in arrays.items():
        if arr.shape != (len(metrics), len(cutoffs), n_users):
            raise input_error("noise floor", f"seed {s}",
                              f"values of shape {arr.shape}, expected "
                              f"{(len(metrics), len(cutoffs), n_users)}")
    means = {str(s): {f"{m}@{c}": float(np.mean(arrays[s][i, j], dtype=np.float64)) if n_users
                      else float("nan")
                      for i, m in enumerate(metrics) for j, c in enumerate(cutoffs)}
             for s in order}
    meta = {
        "algorithm": algorithm, "config_id": int(config_id), "fold": str(fold),
        "params": {k: (v.item() if hasattr(v, "item") else v) for k, v in params.items()},
        "seed_indices": order, "seeds": [int(seeds[s]) for s in order],
        "seed_rule": "derive_seed(experiment seed, algorithm, fold, free params, 'noise', seed_index)",
        "metrics": list(metrics), "cutoffs": [int(c) for c in cutoffs], "n_users": int(n_users),
        "fit_seconds": [round(float(seconds[s][0]), 6) for s in order],
        "eval_seconds": [round(float(seconds[s][1]), 6) for s in order],
        "means": means,
    }
    schema = NOISE_SCHEMA.with_metadata({"dptune": json.dumps(meta, sort_keys=True)})
    n = n_users * len(order)
    seed_col = np.repeat(np.asarray(order, dtype=np.int16), n_users)
    user_col = np.tile(users, len(order))
    tmp = temporary_path(final)
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for i, metric in enumerate(metrics):
            for j, cutoff in enumerate(cutoffs):
                vals = (np.concatenate([arrays[s][i, j] for s in order]) if order
                        else np.empty(0, np.float32))
                table = pa.table(
                    {
                        "algorithm": pa.array([algorithm] * n, pa.string()),
                        "config_id": np.full(n, config_id, dtype=np.int32),
                        "fold": pa.array([str(fold)] * n, pa.string()),
                        "user": user_col,
                        "metric": pa.array([metric] * n, pa.string()),
                        "cutoff": np.full(n, cutoff, dtype=np.int16),
                        "value": vals.astype(np.float32),
                        "seed_index": seed_col,
                    },
                    schema=schema,
                )
                writer.write_table(table, row_group_size=max(n, 1))
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def _run_one(exp: Experiment, root: str, task: NoiseTask, seeds: int) -> Path:
    return run_noise_task(exp, task, root, seeds)


def noise_part_paths(results_dir: str | Path) -> list[Path]:
    """Finished noise-floor parts, in name order (hidden temporary files excluded)."""
    d = Path(results_dir) / NOISE_DIR
    if not d.is_dir():
        return []
    return [p for p in sorted(d.glob("*.parquet")) if not p.name.startswith(".")]


def _part_meta(path: Path) -> dict[str, Any]:
    return json.loads((pq.read_schema(path).metadata or {})[b"dptune"])


def noise_trials(results_dir: str | Path) -> pd.DataFrame:
    """One row per noise-floor model run, from the parts' metadata (``noise_trials.csv``)."""
    rows = []
    for p in noise_part_paths(results_dir):
        m = _part_meta(p)
        for k, s in enumerate(m["seed_indices"]):
            rows.append((m["algorithm"], int(m["config_id"]), m["fold"], int(s), int(m["seeds"][k]),
                         m["fit_seconds"][k], m["eval_seconds"][k], int(m["n_users"])))
    df = pd.DataFrame(rows, columns=NOISE_TRIAL_COLUMNS)
    return df.sort_values(["algorithm", "config_id", "fold", "seed_index"],
                          kind="stable").reset_index(drop=True)


def run_noise_floor(exp: Experiment, results_dir: str | Path, seeds: int = 5, n_configs: int = 1,
                    jobs: int = 1, progress: bool = False) -> NoiseRun:
    """Train the noise floor of every stochastic algorithm of a finished sweep (resumable).

    ``exp`` must be the experiment whose sweep is in ``results_dir`` (same fingerprint). For each
    stochastic algorithm, the ``n_configs`` best configurations by the primary metric
    (:func:`rank_configs`) are trained with ``seeds`` seeds on every validation fold
    (:func:`run_noise_task`, ``jobs`` parallel processes). Writes the parts and
    ``noise_trials.csv``; ``seeds = 0`` does nothing.
    """
    seeds = _check_int(seeds, "noise_seeds", 0)
    if seeds == 1:
        raise input_error("noise floor", "noise_seeds", "needs 0 (off) or at least 2 seeds")
    jobs = _check_int(jobs, "jobs", 1)
    store = ResultStore(results_dir)
    if seeds == 0:
        return NoiseRun([], 0, {}, 0, int(n_configs))
    man = store.manifest()
    if man.get("fingerprint") != exp.fingerprint():
        raise input_error(store.root / "manifest.json", "fingerprint",
                          "the results directory holds a different experiment set-up")
    tasks, skipped = plan_noise(exp, store, n_configs)
    root = store.root
    todo = [t for t in tasks if not all(
        s in _part_seed_indices(root / NOISE_DIR / noise_part_name(t.algorithm, t.config_id, t.fold))
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
    parts = [root / NOISE_DIR / noise_part_name(t.algorithm, t.config_id, t.fold) for t in tasks]
    return NoiseRun(parts, len(todo), skipped, seeds, int(n_configs))


# --------------------------------------------------------------------------------------------
# Analysis


def aa_pvalues(values_by_seed: np.ndarray, test: str = "t", n_resamples: int = 1000,
               seed: int = 0) -> np.ndarray:
    """A/A p-values of all seed pairs ``(s, t)``, ``s < t``, lexicographic order.

    ``t`` and ``wilcoxon`` go through :func:`dptune.analysis._dp.noise_floor`; the resampling tests use
    :func:`dptune.analysis._stats.paired_pvalues` with the same pair order, ``n_resamples`` and ``seed``.
    """
    v = np.asarray(values_by_seed, dtype=np.float64)
    if test in ("t", "wilcoxon"):
        return dpmod.noise_floor(v, test=test)
    s_idx, t_idx = np.triu_indices(v.shape[0], k=1)
    return stats.paired_pvalues(v[s_idx], v[t_idx], test=test, n_resamples=n_resamples, seed=seed)


def resample_curve(curve: np.ndarray, n_positions: int) -> np.ndarray:
    """Resample a decreasing p-value curve of length K to ``n_positions`` positions.

    The curve is read as an empirical quantile function: value ``c[i]`` sits at level
    ``(i + 1/2) / K``; position ``j`` of the result is the linear interpolation at level
    ``(j + 1/2) / n_positions`` (constant beyond the first/last level). ``n_positions == K``
    returns the curve unchanged.
    """
    c = np.asarray(curve, dtype=np.float64).ravel()
    n_positions = _check_int(n_positions, "n_positions", 1)
    if c.size == 0:
        raise input_error("noise floor", "curve", "is empty")
    if c.size == n_positions:
        return c.copy()
    x = (np.arange(c.size) + 0.5) / c.size
    u = (np.arange(n_positions) + 0.5) / n_positions
    return np.interp(u, x, c)


@dataclass
class NoiseFloor:
    """Result of :func:`noise_floor_table`.

    - ``pvalues``: ``algorithm, config_id, metric, cutoff, fold, seed_a, seed_b, p, n_users``:
      every A/A p-value (seed indices ``seed_a < seed_b``).
    - ``curves``: ``algorithm, cutoff, metric, position, mean, sd``: the A/A curve resampled to the
      DP's ``P`` positions and averaged over folds (Figure 1's dashed line).
    - ``floor``: ``algorithm, metric, cutoff, n_configs, n_seeds, n_folds, n_aa_pairs,
      n_positions, mean_p, dp_floor, dp_floor_sd, test``.
    - ``configs``: ``algorithm -> config ids`` used; ``seeds``: ``algorithm -> seeds used``.
    """

    pvalues: pd.DataFrame
    curves: pd.DataFrame
    floor: pd.DataFrame
    configs: dict[str, list[int]] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether no A/A p-value was computed."""
        return self.floor.empty


def _positions(n_pairs: int | Mapping[tuple[str, str, int], int], key: tuple[str, str, int]) -> int:
    if isinstance(n_pairs, Mapping):
        return int(n_pairs.get(key, 0))
    return int(n_pairs)


def noise_floor_table(
    results_dir: str | Path,
    n_pairs: int | Mapping[tuple[str, str, int], int] = 25,
    test: str = "t",
    *,
    max_seeds: int | None = None,
    max_configs: int | None = None,
    primary: tuple[str, int] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> NoiseFloor:
    """A/A p-values, fold-averaged A/A curves and ``DP_floor`` from the noise-floor parts.

    ``n_pairs`` is ``P``, or a mapping ``(algorithm, metric, cutoff) -> P`` (the ``n_pairs`` of
    the DP row the floor is compared with; keys missing from it are left out). ``max_seeds``
    keeps seed indices ``< max_seeds``; ``max_configs`` keeps, per algorithm, the best
    ``max_configs`` configurations present by ``primary`` (default: the manifest's primary
    metric). The resampling tests are seeded by :func:`dptune.analysis._dp.scope_seed`
    ``(seed, "noise|<algorithm>|<config>|<fold>")``. See the module docstring for the formulas.
    """
    stats.check_test(test, "noise floor")
    root = Path(results_dir)
    parts = noise_part_paths(root)
    empty = NoiseFloor(pd.DataFrame(columns=PVALUE_COLUMNS), pd.DataFrame(columns=CURVE_COLUMNS),
                       pd.DataFrame(columns=FLOOR_COLUMNS))
    if not parts:
        return empty
    store = ResultStore(root)
    man = store.manifest()
    order = {a["name"]: i for i, a in enumerate(man["algorithms"])}
    metas = [(p, _part_meta(p)) for p in parts]
    metas = [(p, m) for p, m in metas if m["algorithm"] in order]
    chosen: dict[str, list[int]] = {}
    for alg in sorted({m["algorithm"] for _, m in metas}, key=order.__getitem__):
        present = sorted({int(m["config_id"]) for _, m in metas if m["algorithm"] == alg})
        if max_configs is not None:
            a = man.get("analysis", {})
            pm, pc = primary or (a.get("primary_metric", "ndcg"), int(a.get("primary_cutoff", 10)))
            ranked = [c for c in rank_configs(store, alg, pm, pc) if c in present]
            present = sorted(ranked[: int(max_configs)])
        chosen[alg] = present

    pv_parts: list[pd.DataFrame] = []
    seeds_used: dict[str, int] = {}
    # (alg, metric, cutoff) -> fold -> list of A/A p-value arrays
    pooled: dict[tuple[str, str, int], dict[str, list[np.ndarray]]] = {}
    for path, meta in sorted(metas, key=lambda pm: (order[pm[1]["algorithm"]],
                                                     int(pm[1]["config_id"]),
                                                     fold_key(pm[1]["fold"]))):
        alg, cid, fold = meta["algorithm"], int(meta["config_id"]), str(meta["fold"])
        if cid not in chosen.get(alg, []):
            continue
        keep = [int(s) for s in meta["seed_indices"]
                if max_seeds is None or int(s) < int(max_seeds)]
        if len(keep) < 2:
            continue
        seeds_used[alg] = max(seeds_used.get(alg, 0), len(keep))
        pf = pq.ParquetFile(path)
        t_seed = dpmod.scope_seed(seed, f"noise|{alg}|{cid}|{fold}")
        for i, metric in enumerate(meta["metrics"]):
            for j, cutoff in enumerate(meta["cutoffs"]):
                rg = i * len(meta["cutoffs"]) + j
                t = pf.read_row_group(rg, columns=["user", "value", "seed_index"]).to_pandas()
                t = t[t["seed_index"].isin(keep)]
                wide = t.pivot(index="seed_index", columns="user", values="value").sort_index()
                wide = wide.dropna(axis=1)
                v = wide.to_numpy(dtype=np.float64)
                p = aa_pvalues(v, test=test, n_resamples=n_resamples, seed=t_seed)
                sa, sb = np.triu_indices(v.shape[0], k=1)
                seeds_idx = wide.index.to_numpy()
                pv_parts.append(pd.DataFrame({
                    "algorithm": alg, "config_id": cid, "metric": metric, "cutoff": int(cutoff),
                    "fold": fold, "seed_a": seeds_idx[sa].astype(int),
                    "seed_b": seeds_idx[sb].astype(int), "p": p, "n_users": v.shape[1],
                }))
                key = (alg, str(metric), int(cutoff))
                pooled.setdefault(key, {}).setdefault(fold, []).append(p)

    curve_parts: list[pd.DataFrame] = []
    floor_rows: list[dict[str, Any]] = []
    keys = sorted(pooled, key=lambda k: (order[k[0]], metric_key(k[1], k[2])))
    for key in keys:
        alg, metric, cutoff = key
        n_pos = _positions(n_pairs, key)
        if n_pos < 1:
            continue
        folds = sorted(pooled[key], key=fold_key)
        fold_p = [np.concatenate(pooled[key][f]) for f in folds]
        curves = np.stack([resample_curve(dpmod.pvalue_curve(p), n_pos) for p in fold_p])
        mean = curves.mean(axis=0)
        sd = curves.std(axis=0, ddof=1) if len(folds) > 1 else np.zeros(n_pos)
        pbar = np.array([p.mean() for p in fold_p])
        curve_parts.append(pd.DataFrame({
            "algorithm": alg, "cutoff": cutoff, "metric": metric,
            "position": np.arange(n_pos), "mean": mean, "sd": sd,
        }))
        floor_rows.append({
            "algorithm": alg, "metric": metric, "cutoff": cutoff,
            "n_configs": len(chosen[alg]), "n_seeds": seeds_used[alg], "n_folds": len(folds),
            "n_aa_pairs": int(sum(len(p) for p in fold_p)), "n_positions": n_pos,
            "mean_p": float(pbar.mean()),
            "dp_floor": float(n_pos * pbar.mean()),
            "dp_floor_sd": float(n_pos * pbar.std(ddof=1)) if len(folds) > 1 else 0.0,
            "test": test,
        })
    pvalues = (pd.concat(pv_parts, ignore_index=True)[PVALUE_COLUMNS] if pv_parts
               else empty.pvalues)
    curves_df = (pd.concat(curve_parts, ignore_index=True)[CURVE_COLUMNS] if curve_parts
                 else empty.curves)
    floor = pd.DataFrame(floor_rows, columns=FLOOR_COLUMNS)
    return NoiseFloor(pvalues, curves_df, floor, chosen, seeds_used)


def compare_with_floor(dp: pd.DataFrame, floor: pd.DataFrame) -> pd.DataFrame:
    """DP (scope ``all``) beside its noise floor, with the flag of SPEC 7.

    A metric is *clearly below* its floor when ``DP < DP_floor``, or, when the DP has a bootstrap
    interval (``dp_ci_high`` column), when the whole interval is below: ``dp_ci_high <
    DP_floor``. ``flagged`` is the negation (DP not clearly below the floor: the metric does not
    separate configurations better than re-training with another seed). ``ratio = DP /
    DP_floor``. Columns ``algorithm, metric, cutoff, dp, [dp_ci_low, dp_ci_high,] dp_floor,
    dp_floor_sd, mean_p, ratio, flagged, rule``.
    """
    all_dp = dp[dp["scope"] == "all"]
    has_ci = "dp_ci_high" in all_dp.columns
    cols = ["algorithm", "metric", "cutoff", "dp"] + (["dp_ci_low", "dp_ci_high"] if has_ci else [])
    merged = floor.merge(all_dp[cols], on=["algorithm", "metric", "cutoff"], how="inner")
    if has_ci:
        below = merged["dp_ci_high"] < merged["dp_floor"]
        rule = "95% CI of DP entirely below DP_floor"
    else:
        below = merged["dp"] < merged["dp_floor"]
        rule = "DP < DP_floor"
    merged["ratio"] = merged["dp"] / merged["dp_floor"]
    merged["flagged"] = ~below
    merged["rule"] = rule
    out_cols = cols + ["dp_floor", "dp_floor_sd", "mean_p", "ratio", "flagged", "rule"]
    return merged[out_cols].reset_index(drop=True)


def deterministic_algorithms(manifest: Mapping[str, Any]) -> list[str]:
    """Names of the manifest's algorithms whose training uses no seed (no noise floor)."""
    return [a["name"] for a in manifest.get("algorithms", []) if not is_stochastic(a["type"])]
