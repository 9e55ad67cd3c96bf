"""Benchmark of dptune's performance engine against a naive loop, and a projection of the full grid.

Run ``python -m dptune.bench`` (ML-1M, about 8-10 minutes on 2 cores), ``python -m dptune.bench
--small`` (ML-100K comparisons, about 2 minutes) or ``python -m dptune.bench analyze --scale F``
(the analysis stage alone on a synthetic result store). One run prints::

    speedup iterations: <ratio>x
    speedup neighbours: <ratio>x
    speedup mini_grid: <ratio>x
    eval_vs_bound: <ratio>x
    projected_full_grid_hours: <h>
    analyze_seconds_projected: <s>
    analyze_peak_gib_projected: <g>

and writes the same figures, the detail behind them and the machine (CPU, cores, versions, load,
date) to ``reports/benchmarks.md`` (``--out``). What each figure measures (all on validation
fold 0 of the paper's split, the same fold data :func:`dptune.sweep._sweep.prepare` builds):

- ``speedup iterations``: one ``(factors, learning_rate)`` (452 factors: the median of the
  grid's training time) along every iteration value of the paper's grid (1 ... 128). dptune:
  one BPR-MF run with a snapshot evaluated at each value (:class:`dptune.models._models.BPRFamily`);
  naive: ``BPRMF(epochs=i).fit`` from scratch and evaluate, for each ``i``. The snapshots are
  checked bit-identical to the fresh fits.
- ``speedup neighbours``: UserKNN along every ``k`` of the paper's grid. dptune: the models
  :class:`dptune.models._models.KNNFamily` yields (one similarity for the largest ``k``), evaluate
  each; naive: ``UserKNN(k).fit`` and evaluate for each ``k``. Results are checked identical.
  Both comparisons are interleaved configuration by configuration, so that both sides see
  the same conditions on a machine whose speed drifts.
- ``speedup mini_grid``: a few units (UserKNN, BPR-MF with two factor sizes and two learning
  rates) run by dptune as a sweep runs them (:func:`dptune.sweep._sweep.run_unit`, parts written to a
  store, two loky worker processes with one BLAS thread each) against a plain serial loop that
  fits and evaluates every configuration from scratch on one core. dptune's time is the
  makespan of the units' CPU times on the 2 workers (the wall time on an idle 2-core machine);
  the measured wall time is reported beside it.
- ``eval_vs_bound``: per-configuration evaluation time (:func:`dptune.metrics.evaluate`: score,
  mask, top-N, all metrics) over the time of the dense score product plus one
  ``np.argpartition`` to the largest cutoff for the same users and blocks, BPR-MF, summed over
  the factor sizes measured for the projection.
- ``projected_full_grid_hours``: the paper's ML-1M grid (3,150 BPR-MF + 15 UserKNN + 15 ItemKNN
  configurations x 10 folds, plus the test-split units) from measured single-core unit costs:
  BPR epoch time at a few factor sizes, interpolated over the 15 factor values, times 128
  epochs per ``(factors, learning_rate, fold)`` (reuse along the iterations axis); evaluation
  per configuration (interpolated the same way) x 3,150 x 10; KNN similarity and evaluation per
  fold; writing the parts; all divided by 2 cores.
- ``analyze_*``: :func:`dptune.analysis._dp.analyze` on a synthetic store with the real layout
  (:meth:`dptune.store.ResultStore.write_unit`, random values, the real grids) holding a
  fraction ``F`` of the full ML-1M store (``round(10 F)`` folds of the full grid; below 0.1 also
  fewer users), timed in a fresh process (peak resident memory: ``VmHWM``) and projected to the
  full store by :func:`project_analyze` (linear in folds; see there for users and threads).
  On the full-size store (``--scale 1.0``) also ``analyze_command_*_full_store``: the whole
  ``dptune analyze`` command with its default options (DP analysis, tables, figures, report,
  hyperparameter importance) in a fresh process, wall clock from its start, and its peak memory.

Timings are CPU seconds of single-threaded work (BLAS limited to one thread, ``process_time``):
a sweep on 2 cores runs 2 worker processes with one thread each, and CPU time is what the same
work takes on an idle core, even when other processes compete for the machine (wall times under
such load are reported where they differ; the load average at the start is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Plan", "PLANS", "run_benchmark", "bench_analyze", "build_synthetic_store",
           "project_full_grid", "project_analyze", "render_report", "main"]

#: Repository root (the grids of Table 2 live in ``grids/``).
REPO = Path(__file__).resolve().parents[2]
#: Users evaluated per validation fold of ML-1M in the full store (SPEC 8: "about 5,500").
FULL_USERS = 5500
#: Folds of the paper's cross-validation.
FULL_FOLDS = 10
#: Cores of the target machine.
CORES = 2
#: Best configurations retrained on the test split (one per metric@cutoff: 6 x 3), upper bound.
TEST_UNITS_BPR = 18

LINE_KEYS = (
    "speedup iterations",
    "speedup neighbours",
    "speedup mini_grid",
    "eval_vs_bound",
    "projected_full_grid_hours",
    "analyze_seconds_projected",
    "analyze_peak_gib_projected",
    "analyze_seconds_full_store_wall",  # only when the store measured is the full one
    "analyze_peak_gib_full_store",
    "analyze_command_seconds_full_store",  # `dptune analyze` itself, default options
    "analyze_command_peak_gib_full_store",
)


# --------------------------------------------------------------------------------------------
# plans


@dataclass(frozen=True)
class Plan:
    """What one benchmark run measures (data sets, slices, repeats)."""

    name: str
    dataset: str  # the comparisons (speedups, eval_vs_bound)
    projection_dataset: str  # unit costs for the full-grid projection
    ks: tuple[int, ...] | None  # None = every k of grids/knn.toml
    iteration_factors: int
    iterations: tuple[int, ...] | None  # None = every iterations value of grids/bpr-mf.toml
    learning_rate: float
    cost_factors: tuple[int, ...]
    cost_ks: tuple[int, ...]
    mini_knn: tuple[int, ...]
    mini_factors: tuple[int, ...]
    mini_lrs: tuple[float, ...]
    mini_iterations: tuple[int, ...]
    analyze_scale: float
    repeats: int = 2


# learning rates of Table 2 (2 ** -3.3219 = 0.1, 2 ** -4.3219 = 0.05, 2 ** -6.3219 = 0.0125)
_LR = {k: 2.0 ** (-2.3219 - k) for k in range(15)}

PLANS: dict[str, Plan] = {
    "full": Plan(
        name="full", dataset="ml-1m", projection_dataset="ml-1m", ks=None,
        iteration_factors=452, iterations=None, learning_rate=_LR[3],
        cost_factors=(10, 113, 905, 1809), cost_ks=(10, 113, 1809),
        mini_knn=(10, 80, 640), mini_factors=(10, 113), mini_lrs=(_LR[1], _LR[3]),
        mini_iterations=(1, 4, 16, 64), analyze_scale=0.1,
    ),
    "small": Plan(
        name="small", dataset="ml-100k", projection_dataset="ml-1m", ks=None,
        iteration_factors=452, iterations=None, learning_rate=_LR[3],
        cost_factors=(10, 113, 905, 1809), cost_ks=(10, 113, 1809),
        mini_knn=(10, 80, 640), mini_factors=(10, 113), mini_lrs=(_LR[1], _LR[3]),
        mini_iterations=(1, 4, 16, 64), analyze_scale=0.01, repeats=1,
    ),
    "tiny": Plan(
        name="tiny", dataset="ml-latest-small", projection_dataset="ml-latest-small",
        ks=(10, 40, 160), iteration_factors=10, iterations=(1, 2, 4), learning_rate=_LR[1],
        cost_factors=(10, 40), cost_ks=(10, 160), mini_knn=(10, 40), mini_factors=(10,),
        mini_lrs=(_LR[1],), mini_iterations=(1, 2), analyze_scale=0.001, repeats=1,
    ),
}


# --------------------------------------------------------------------------------------------
# small helpers


def _log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


#: The clock of every single-threaded measurement: CPU time of this process, which other
#: processes competing for the cores do not inflate (unlike wall time); with one thread it is
#: the wall time the same work takes on an idle core.
_clock = time.process_time


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(CPU seconds of this process, result) of ``fn()``."""
    t0 = _clock()
    out = fn()
    return _clock() - t0, out


def _wall_timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(wall seconds, result) of ``fn()``: for parallel work and the synthetic store build."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _best_of(fn: Callable[[], Any], repeats: int) -> float:
    """Smallest CPU time of ``repeats`` calls."""
    return min(_timed(fn)[0] for _ in range(max(1, repeats)))


def _single_thread() -> Any:
    """Context manager limiting BLAS/OpenMP pools to one thread (a sweep worker's setting)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _grid_values() -> dict[str, list]:
    """Factors, iterations, learning rates and k of the paper's grids (``grids/*.toml``)."""
    from dptune.grids import load_grid

    bpr = load_grid(REPO / "grids" / "bpr-mf.toml")
    knn = load_grid(REPO / "grids" / "knn.toml")
    return {
        "factors": [int(v) for v in bpr.values["factors"]],
        "iterations": [int(v) for v in bpr.values["iterations"]],
        "learning_rate": [float(v) for v in bpr.values["learning_rate"]],
        "k": [int(v) for v in knn.values["k"]],
    }


def machine_info() -> dict[str, str]:
    """CPU model, cores, memory, load, library versions and the date of the run."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except OSError:
        pass
    info = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": mem,
        "load average (1/5/15 min) at start": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    for pkg in ("numpy", "scipy", "numba", "pyarrow", "pandas", "joblib", "threadpoolctl"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = "not installed"
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
                for p in threadpool_info()]
        info["BLAS/OpenMP pools"] = "; ".join(blas) or "none"
    except Exception:  # noqa: BLE001 - informative only
        pass
    return info


# --------------------------------------------------------------------------------------------
# data


def _experiment(dataset: str, workdir: Path, plan: Plan) -> Any:
    """An experiment on ``dataset`` with the paper's split and the plan's mini-grid (grid files
    written to ``workdir``); its fold 0 is the data of every comparison."""
    from dptune.config import load_experiment

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "mini-knn.toml").write_text(
        f"[params.k]\nvalues = {list(plan.mini_knn)}\n")
    (workdir / "mini-bpr.toml").write_text(
        'family = "bpr-mf"\n'
        f"[params.factors]\nvalues = {list(plan.mini_factors)}\n"
        f"[params.iterations]\nvalues = {list(plan.mini_iterations)}\n"
        f"[params.learning_rate]\nvalues = {[float(x) for x in plan.mini_lrs]}\n"
        "[derived]\n"
        'user_reg = { from = "learning_rate", scale = 0.05 }\n'
        'item_reg = { from = "learning_rate", scale = 0.005 }\n')
    name = f"bench-{dataset}"
    (workdir / f"{name}.toml").write_text(
        f'name = "{name}"\nseed = 42\n'
        f'[data]\nsource = "{dataset}"\n'
        '[split]\nmethod = "temporal"\ntrain_ratio = 0.8\nmin_user_interactions = 5\n'
        'folds = 10\nfold_method = "user_stratified"\n'
        '[evaluation]\ncutoffs = [1, 5, 10]\nrelevance_threshold = 4.0\n'
        '[sweep]\njobs = 2\n'
        '[[algorithms]]\nname = "userknn"\ntype = "userknn"\n'
        f'grid = "{workdir / "mini-knn.toml"}"\n'
        '[[algorithms]]\nname = "bpr-mf"\ntype = "bpr-mf"\n'
        f'grid = "{workdir / "mini-bpr.toml"}"\n')
    return load_experiment(workdir / f"{name}.toml")


def _fold0(exp: Any) -> Any:
    from dptune.data._dataset import fetch
    from dptune.sweep._sweep import prepare

    if exp.data.source in ("ml-100k", "ml-1m"):
        fetch(exp.data.source)
    return prepare(exp).fold("0")


def _evaluate(model: Any, fd: Any) -> np.ndarray:
    from dptune.metrics import evaluate

    return evaluate(model, fd.users, fd.train, fd.relevant, (1, 5, 10), fd.efd, fd.epc)


def _warm_up(fd: Any) -> None:
    """Load the compiled kernels and touch the code paths once, outside every timing."""
    from dptune.metrics import evaluate
    from dptune.models._models import BPRMF, ItemKNN, UserKNN

    small = fd.train[: min(300, fd.train.shape[0])]
    users = fd.users[fd.users < small.shape[0]][:64]
    for model in (UserKNN(5).fit(small), ItemKNN(5).fit(small),
                  BPRMF(4, 0.05, 0.0025, 0.00025, epochs=1).fit(small)):
        evaluate(model, users, small, fd.relevant[: small.shape[0]], (1, 5, 10), fd.efd, fd.epc)


# --------------------------------------------------------------------------------------------
# comparisons


def _steps(it: Any) -> Any:
    """Iterate ``it`` yielding ``(CPU seconds spent producing the item, item)``."""
    it = iter(it)
    while True:
        t0 = _clock()
        try:
            item = next(it)
        except StopIteration:
            return
        yield _clock() - t0, item


def bench_neighbours(fd: Any, ks: Sequence[int]) -> dict[str, Any]:
    """UserKNN along ``ks``: dptune (the family: one similarity) vs a fresh fit per k.

    The two are interleaved configuration by configuration (dptune's step, then the naive fit
    of the same ``k``), so that both see the same conditions on a machine whose speed drifts.
    """
    from dptune.models._models import KNNFamily, UserKNN

    configs = [{"k": int(k)} for k in ks]
    rows = []
    fit_total = eval_total = naive_fit = naive_eval = 0.0
    identical = True
    for t_fit, (idx, model) in _steps(KNNFamily("userknn").fit_unit(fd.train, configs, 0)):
        te, vals = _timed(lambda model=model: _evaluate(model, fd))
        fit_total += t_fit
        eval_total += te
        nf, naive = _timed(lambda idx=idx: UserKNN(configs[idx]["k"]).fit(fd.train))
        ne, nvals = _timed(lambda naive=naive: _evaluate(naive, fd))
        naive_fit += nf
        naive_eval += ne
        identical &= bool(np.array_equal(vals, nvals, equal_nan=True))
        rows.append({"k": configs[idx]["k"], "dptune_fit": t_fit, "dptune_eval": te,
                     "naive_fit": nf, "naive_eval": ne})
    dptune_total = fit_total + eval_total
    naive_total = naive_fit + naive_eval
    return {
        "ks": list(ks), "dptune_seconds": dptune_total, "naive_seconds": naive_total,
        "dptune_fit_seconds": fit_total, "naive_fit_seconds": naive_fit,
        "speedup": naive_total / dptune_total, "fit_speedup": naive_fit / fit_total,
        "identical": identical, "rows": rows,
    }


def bench_iterations(fd: Any, factors: int, lr: float, iterations: Sequence[int],
                     seed: int = 7) -> dict[str, Any]:
    """BPR-MF along ``iterations``: one run with snapshots vs a fresh fit per value.

    Interleaved like :func:`bench_neighbours`: dptune trains on to the next iteration value
    and evaluates, then the naive loop fits that value from scratch and evaluates.
    """
    from dptune.models._models import BPRMF, BPRFamily

    configs = [{"factors": factors, "iterations": int(i), "learning_rate": lr,
                "user_reg": lr / 20, "item_reg": lr / 200} for i in iterations]
    train_t = eval_t = naive_train = naive_eval = 0.0
    identical = True
    for t_fit, (idx, model) in _steps(BPRFamily().fit_unit(fd.train, configs, seed)):
        te, vals = _timed(lambda model=model: _evaluate(model, fd))
        train_t += t_fit
        eval_t += te
        n_it = configs[idx]["iterations"]
        nf, naive = _timed(lambda n_it=n_it: BPRMF(factors, lr, lr / 20, lr / 200, epochs=n_it,
                                                   seed=seed).fit(fd.train))
        ne, nvals = _timed(lambda naive=naive: _evaluate(naive, fd))
        naive_train += nf
        naive_eval += ne
        identical &= bool(np.array_equal(vals, nvals, equal_nan=True))
    dptune_total = train_t + eval_t
    naive_total = naive_train + naive_eval
    return {
        "factors": factors, "learning_rate": lr, "iterations": list(iterations),
        "epochs_dptune": max(iterations), "epochs_naive": int(sum(iterations)),
        "dptune_seconds": dptune_total, "dptune_train": train_t, "dptune_eval": eval_t,
        "naive_seconds": naive_total, "naive_train": naive_train, "naive_eval": naive_eval,
        "speedup": naive_total / dptune_total, "train_speedup": naive_train / train_t,
        "identical": identical,
    }


def eval_and_bound(model: Any, fd: Any, repeats: int, block: int = 1024) -> tuple[float, float]:
    """(evaluation time, score + argpartition time) for ``fd.users`` in blocks of ``block``."""
    users = fd.users
    n_items = fd.train.shape[1]
    k = 10

    def bound() -> None:
        for s in range(0, len(users), block):
            scores = model.score(users[s:s + block])
            np.argpartition(scores, n_items - k, axis=1)

    t_eval = _best_of(lambda: _evaluate(model, fd), repeats)
    t_bound = _best_of(bound, repeats)
    return t_eval, t_bound


def measure_unit_costs(fd: Any, plan: Plan, knn_neighbours: dict[str, Any] | None) -> dict[str, Any]:
    """Single-core unit costs on ``fd``: BPR epoch and evaluation per factor size, KNN fit and
    evaluation per k, and writing one BPR part."""
    from dptune.models._models import BPRMF, ItemKNN, UserKNN
    from dptune.store._store import ResultStore, UnitResult

    X = fd.train
    lr = plan.learning_rate
    bpr = []
    for f in plan.cost_factors:
        model = BPRMF(f, lr, lr / 20, lr / 200, epochs=0, seed=3).fit(X)
        model.partial_fit(X, 1)  # warm (compiled kernel loaded, pages touched)
        n_ep = 3 if f < 200 else 2
        per_epoch = _best_of(lambda model=model, n_ep=n_ep: model.partial_fit(X, n_ep),
                             plan.repeats) / n_ep
        t_eval, t_bound = eval_and_bound(model, fd, plan.repeats)
        bpr.append({"factors": f, "epoch_seconds": per_epoch,
                    "updates_per_second": X.nnz / per_epoch, "eval_seconds": t_eval,
                    "bound_seconds": t_bound})
        _log(f"  BPR factors={f}: epoch {per_epoch:.3f} s ({X.nnz / per_epoch / 1e6:.2f} M "
             f"updates/s), eval {t_eval:.3f} s, bound {t_bound:.3f} s")
    knn = {}
    for name, cls in (("userknn", UserKNN), ("itemknn", ItemKNN)):
        kmax = max(plan.cost_ks)
        t_fit, model = _timed(lambda cls=cls, kmax=kmax: cls(kmax).fit(X))
        evals = {}
        bounds = {}
        for k in plan.cost_ks:
            if k == min(plan.cost_ks):  # the bound only where it is informative (ties)
                evals[k], bounds[k] = eval_and_bound(model.with_k(k), fd, 1)
            else:
                mk = model.with_k(k)
                evals[k] = _timed(lambda mk=mk: _evaluate(mk, fd))[0]
        knn[name] = {"fit_seconds": t_fit, "eval_seconds": evals, "bound_seconds": bounds}
        _log(f"  {name}: fit(k={kmax}) {t_fit:.2f} s, eval {', '.join(f'k={k} {v:.2f} s' for k, v in evals.items())}")
    if knn_neighbours is not None:  # measured on every k of the grid: use them
        knn["userknn"]["eval_all_k"] = {r["k"]: r["dptune_eval"] for r in knn_neighbours["rows"]}
    # writing one BPR part (14 configurations, every user)
    n_it = len(_grid_values()["iterations"])
    rng = np.random.default_rng(0)
    vals = tuple(rng.random((6, 3, len(fd.users)), dtype=np.float32) for _ in range(n_it))
    res = UnitResult("bpr-mf", "0", "u00000", 1, ("ndcg", "precision", "recall", "mrr", "efd", "epc"),
                     (1, 5, 10), fd.users, tuple(range(n_it)), vals, (0.0,) * n_it, (0.0,) * n_it)
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp).create()
        t_write = _best_of(lambda: store.write_unit(res), plan.repeats)
    return {"bpr": bpr, "knn": knn, "write_part_seconds": t_write, "nnz": int(X.nnz),
            "users": int(len(fd.users)), "items": int(X.shape[1])}


def project_full_grid(costs: dict[str, Any], scale_train: float = 1.0,
                      scale_eval: float = 1.0) -> dict[str, Any]:
    """Hours of the paper's ML-1M grid on :data:`CORES` cores from single-core unit costs.

    ``scale_*`` convert costs measured on another data set to ML-1M (1.0 on ML-1M itself).
    """
    g = _grid_values()
    factors = np.asarray(g["factors"], dtype=np.float64)
    n_lr, n_it, ks = len(g["learning_rate"]), len(g["iterations"]), g["k"]
    max_it = max(g["iterations"])
    fx = np.array([r["factors"] for r in costs["bpr"]], dtype=np.float64)
    epoch = np.array([r["epoch_seconds"] for r in costs["bpr"]]) * scale_train
    ev = np.array([r["eval_seconds"] for r in costs["bpr"]]) * scale_eval
    epoch_f = np.interp(factors, fx, epoch)
    eval_f = np.interp(factors, fx, ev)
    units = len(factors) * n_lr * FULL_FOLDS
    train_s = float(epoch_f.sum()) * max_it * n_lr * FULL_FOLDS
    train_naive_s = float(epoch_f.sum()) * sum(g["iterations"]) * n_lr * FULL_FOLDS
    eval_s = float(eval_f.sum()) * n_it * n_lr * FULL_FOLDS
    write_s = costs["write_part_seconds"] * scale_eval * (units + 2 * FULL_FOLDS)
    knn_s = 0.0
    knn_detail = {}
    for name, c in costs["knn"].items():
        if "eval_all_k" in c and set(c["eval_all_k"]) >= set(ks):
            evals = sum(c["eval_all_k"][k] for k in ks)
        else:
            kx = np.array(sorted(c["eval_seconds"]), dtype=np.float64)
            ky = np.array([c["eval_seconds"][k] for k in sorted(c["eval_seconds"])])
            evals = float(np.interp(np.asarray(ks, dtype=np.float64), kx, ky).sum())
        per_fold = (c["fit_seconds"] + evals) * scale_eval
        knn_detail[name] = per_fold
        knn_s += per_fold * FULL_FOLDS
    unit_mean = (train_s + eval_s) / units
    test_s = TEST_UNITS_BPR * unit_mean / 0.9 + sum(knn_detail.values()) / 0.9
    total = train_s + eval_s + write_s + knn_s + test_s
    return {
        "hours": total / CORES / 3600.0,
        "core_hours": total / 3600.0,
        "train_core_hours": train_s / 3600.0,
        "train_core_hours_without_reuse": train_naive_s / 3600.0,
        "eval_core_hours": eval_s / 3600.0,
        "write_core_hours": write_s / 3600.0,
        "knn_core_hours": knn_s / 3600.0,
        "test_split_core_hours": test_s / 3600.0,
        "epoch_seconds_by_factors": dict(zip(g["factors"], epoch_f.tolist(), strict=True)),
        "eval_seconds_by_factors": dict(zip(g["factors"], eval_f.tolist(), strict=True)),
        "iterations_speedup_full_grid": (train_naive_s + eval_s) / (train_s + eval_s),
        "knn_per_fold_seconds": knn_detail,
    }


def _worker_threads(exp: Any) -> dict[str, Any]:
    """Inside a sweep worker: prepare the data (as a worker does once) and report its pools."""
    import numba
    import pyarrow
    from threadpoolctl import threadpool_info

    from dptune.sweep._sweep import prepare

    prepare(exp).fold("0")
    time.sleep(0.5)  # keep this worker busy so that the other one takes the second call
    return {
        "pid": os.getpid(),
        "blas_openmp_threads": {p.get("internal_api"): p.get("num_threads")
                                for p in threadpool_info()},
        "numba_threads": int(numba.get_num_threads()),
        "numba_parallel_kernels": "none (the kernels are compiled without parallel=True)",
        "pyarrow_cpu_count": int(pyarrow.cpu_count()),
        "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                               "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")},
    }


def _naive_config(alg_type: str, cfg: dict[str, Any], seed: int) -> Any:
    from dptune.models._models import BPRMF, ItemKNN, UserKNN

    if alg_type == "userknn":
        return UserKNN(int(cfg["k"]))
    if alg_type == "itemknn":
        return ItemKNN(int(cfg["k"]))
    return BPRMF(int(cfg["factors"]), cfg["learning_rate"], cfg["user_reg"], cfg["item_reg"],
                 epochs=int(cfg["iterations"]), seed=seed)


def _run_unit_cpu(exp: Any, task: Any, root: str) -> tuple[int, float]:
    """:func:`dptune.sweep._sweep.run_unit` in a worker; returns (worker pid, CPU seconds)."""
    from dptune.store._store import ResultStore
    from dptune.sweep._sweep import run_unit

    t, _ = _timed(lambda: run_unit(exp, task, ResultStore(root)))
    return os.getpid(), t


def _makespan(costs: Sequence[float], workers: int) -> float:
    """Finish time of ``costs`` taken in order by the first free of ``workers`` (what the
    sweep's process pool does), i.e. the wall time on ``workers`` otherwise idle cores."""
    free = [0.0] * workers
    for c in costs:
        i = free.index(min(free))
        free[i] += c
    return max(free)


def bench_mini_grid(exp: Any, fd: Any, workdir: Path) -> dict[str, Any]:
    """A few units: dptune as a sweep runs them (2 workers x 1 thread) vs a plain serial loop.

    Every unit is timed in CPU seconds inside its worker; the dptune figure is the makespan of
    those costs on 2 workers in plan order (the wall time on an idle 2-core machine; the
    measured wall time is reported beside it). The naive loop is timed in CPU seconds on one
    thread.
    """
    from joblib import Parallel, delayed, parallel_config

    from dptune.store._store import ResultStore
    from dptune.sweep._sweep import derive_seed, plan, run_unit

    tasks = [t for a in exp.algorithms for t in plan(exp, a.name, ["0"])]
    n_configs = sum(len(t.config_ids) for t in tasks)
    threads = max(1, (os.cpu_count() or 1) // CORES)
    root = ResultStore(workdir / "mini-store").create().root
    with parallel_config(backend="loky", inner_max_num_threads=threads):
        # start the workers and let each prepare the data once (paid once per sweep)
        workers = Parallel(n_jobs=CORES)(delayed(_worker_threads)(exp) for _ in range(CORES))
        t_wall, got = _wall_timed(lambda: Parallel(n_jobs=CORES)(
            delayed(_run_unit_cpu)(exp, t, str(root)) for t in tasks))
    unit_cpu = [c for _, c in got]
    t_par = _makespan(unit_cpu, CORES)
    store_serial = ResultStore(workdir / "mini-store-serial").create()
    types = {a.name: a.type for a in exp.algorithms}

    def naive() -> None:
        for t in tasks:
            configs = exp.grids[t.algorithm].configs()
            seed = derive_seed(exp.seed, t.algorithm, t.fold, t.params)
            for cid in t.config_ids:
                model = _naive_config(types[t.algorithm], configs[cid], seed).fit(fd.train)
                _evaluate(model, fd)

    with _single_thread():
        t_ser, _ = _timed(lambda: [run_unit(exp, t, store_serial) for t in tasks])
        t_naive, _ = _timed(naive)
    return {
        "units": len(tasks), "configs": n_configs, "dptune_seconds": t_par,
        "dptune_wall_seconds": t_wall, "unit_cpu_seconds": unit_cpu,
        "dptune_serial_seconds": t_ser, "naive_seconds": t_naive,
        "speedup": t_naive / t_par, "speedup_serial": t_naive / t_ser,
        "workers": workers,
        "tasks": [f"{t.algorithm} {t.params} ({len(t.config_ids)} configs)" for t in tasks],
    }


# --------------------------------------------------------------------------------------------
# analysis on a synthetic store


def build_synthetic_store(root: Path, scale: float, seed: int = 0,
                          grids: dict[str, Any] | None = None,
                          ragged: bool = False) -> dict[str, Any]:
    """A result store with the real layout and the paper's ML-1M grids, random values.

    ``scale`` F in (0, 1] is the fraction of the full store: ``max(1, round(10 F))`` folds of
    every configuration (3,150 BPR-MF, 15 UserKNN, 15 ItemKNN), each with
    ``round(5500 * min(1, 10 F))`` users. ``grids`` (algorithm type -> :class:`Grid`) replaces
    the paper's grids (tests); ``ragged`` leaves the first user out of the first unit of every
    algorithm on fold 0 (exercises the inner join of users). Returns the layout built.
    """
    from dptune.grids import load_grid
    from dptune.models._models import get_family
    from dptune.store._store import ResultStore

    if not 0.0 < scale <= 1.0:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    n_folds = max(1, round(FULL_FOLDS * scale))
    n_users = max(3, round(FULL_USERS * min(1.0, FULL_FOLDS * scale)))
    metrics = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
    cutoffs = (1, 5, 10)
    if grids is None:
        grids = {"userknn": load_grid(REPO / "grids" / "knn.toml"),
                 "itemknn": load_grid(REPO / "grids" / "knn.toml"),
                 "bpr-mf": load_grid(REPO / "grids" / "bpr-mf.toml")}
    store = ResultStore(root).create()
    store.write_manifest({
        "experiment": "synthetic",
        "algorithms": [{"name": a, "type": a, "free": g.free,
                        "derived": {k: list(v) for k, v in g.derived.items()},
                        "n_configs": g.size} for a, g in grids.items()],
        "evaluation": {"metrics": list(metrics), "cutoffs": list(cutoffs),
                       "relevance_rule": "rating >= 4.0", "relevance_threshold": 4.0,
                       "novelty_variant": "relevance-aware", "value_dtype": "float32",
                       "protocol": "synthetic: uniform random per-user values, no model",
                       "users": "synthetic"},
        "dataset": {"name": "ml-1m (synthetic values)", "source": "dptune.bench",
                    "users": 6040, "items": 3706, "ratings": 1000209,
                    "sparsity": 1.0 - 1000209 / (6040 * 3706)},
        "split": {"method": "temporal", "train_ratio": 0.8, "min_user_interactions": 5,
                  "dropped_users": 0, "folds": n_folds, "fold_method": "user_stratified",
                  "split_seed": 42, "users_evaluated": dict.fromkeys(map(str, range(n_folds)),
                                                                     n_users)},
        "seeds": {"analysis": 42},
        "synthetic": {"scale": scale, "folds": n_folds, "users": n_users},
    })
    store.write_configs([g.frame(a) for a, g in grids.items()])
    rng = np.random.default_rng(seed)
    users = np.sort(rng.choice(max(6040, n_users), n_users, replace=False)).astype(np.int32)
    jobs = []
    for alg, g in grids.items():
        for fold in range(n_folds):
            for u, unit in enumerate(get_family(alg).units(g.configs())):
                uu = users[1:] if ragged and fold == 0 and u == 0 else users
                jobs.append((alg, str(fold), f"u{u:05d}", tuple(sorted(unit)), uu))
    from joblib import Parallel, delayed

    n_jobs = max(1, min(CORES, os.cpu_count() or 1, len(jobs) // 50 or 1))
    chunks = [jobs[i::n_jobs] for i in range(n_jobs)]
    Parallel(n_jobs=n_jobs)(delayed(_write_synthetic_parts)(str(root), chunk, seed + 1 + i)
                            for i, chunk in enumerate(chunks))
    n_parts = len(jobs)
    store.write_users(np.arange(int(users.max()) + 1))
    size = sum(p.stat().st_size for p in (root / "per_user.parquet").glob("*.parquet"))
    return {"scale": scale, "folds": n_folds, "users": n_users, "parts": n_parts,
            "values": n_folds * n_users * len(metrics) * len(cutoffs) * sum(
                g.size for g in grids.values()),
            "bytes": size}


def _write_synthetic_parts(root: str, jobs: Sequence[tuple], seed: int) -> None:
    """Write synthetic units (random float32 values) with :meth:`ResultStore.write_unit`."""
    from dptune.store._store import ResultStore, UnitResult

    metrics = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
    cutoffs = (1, 5, 10)
    store = ResultStore(root)
    rng = np.random.default_rng(seed)
    for alg, fold, unit, ids, users in jobs:
        vals = tuple(rng.random((len(metrics), len(cutoffs), len(users)), dtype=np.float32)
                     for _ in ids)
        store.write_unit(UnitResult(alg, fold, unit, 1, metrics, cutoffs, users, ids, vals,
                                    (0.0,) * len(ids), (0.0,) * len(ids)))


def _peak_kib() -> int:
    """Peak resident memory of this process in KiB: ``VmHWM`` (reset by ``exec``, unlike
    ``getrusage``'s ``ru_maxrss``, which keeps the forking parent's size), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _command_child(root: str, reports: str) -> None:
    """Fresh process: ``dptune analyze ROOT --reports REPORTS --no-progress`` with the default
    options (DP, tables, figures, importance), then its peak resident memory (JSON, last line)."""
    from dptune.cli import main as cli_main

    rc = cli_main(["analyze", root, "--reports", reports, "--no-progress"])
    print(json.dumps({"rc": rc, "peak_kib": _peak_kib()}))


def _analyze_child(root: str, compare: bool, full_users: int) -> None:
    """Fresh process: time :func:`dptune.analysis._dp.analyze` on ``root``, report peak memory (JSON).

    Times are CPU seconds with one reader thread (``read_fold(threads=1)``), i.e. the wall time
    on one idle core; by default ``read_fold`` reads with up to 4 threads, so this is an upper
    bound on 2 cores. The store is wrapped so that the time spent in ``read_fold`` (decoding,
    proportional to the values read) is known apart from the rest (tests and tables). When the store has fewer
    users than ``full_users``, the analysis is run a second time on every second user (cut
    after reading) so that the rest can be fitted linearly in the number of users.
    """
    import pandas as pd  # noqa: F401 - imported before the baseline is taken

    from dptune.analysis import _dp as dp
    from dptune.store._store import FoldSlice, ResultStore

    class Timed(ResultStore):
        """The store, timing ``read_fold`` and optionally keeping every ``step``-th user."""

        step = 1
        read_seconds = 0.0
        slice_bytes = 0
        slice_users = 0

        def read_fold(self, *args: Any, **kwargs: Any) -> FoldSlice:
            t0 = _clock()
            sl = super().read_fold(*args, **{**kwargs, "threads": 1})
            Timed.read_seconds += _clock() - t0
            Timed.slice_bytes = max(Timed.slice_bytes, sl.values.nbytes)
            Timed.slice_users = max(Timed.slice_users, len(sl.users))
            if self.step > 1:
                sl = FoldSlice(sl.algorithm, sl.fold, sl.config_ids, sl.metric_cutoffs,
                               sl.users[:: self.step], sl.values[:, :, :: self.step].copy())
            return sl

    base_kib = _peak_kib()
    # The fold array's memory costs its page faults once per analysis (about 1.5 s for ML-1M;
    # dp.analyze reuses it for folds 2..10 through a FoldBuffer). Time that apart, so that the
    # projection can count it once and scale only the steady state of the reads.
    store = ResultStore(root)
    size = 0
    for alg in store.algorithms():
        pairs = dp.scope_pairs(store.configs(alg), store.hyperparameters(alg), 25, 42)
        n_ids = len(np.unique(np.concatenate([x.ravel() for x in pairs.values()])))
        users = json.loads((Path(root) / "manifest.json").read_text())["synthetic"]["users"]
        size = max(size, len(store.metric_cutoffs(alg)) * n_ids * users)
    first_touch = _timed(lambda: np.full(size, np.nan, dtype=np.float32).size)[0]
    t, res = _timed(lambda: dp.analyze(Timed(root), n_pairs=25, seed=42))
    peak_kib = _peak_kib()
    out: dict[str, Any] = {"seconds": t, "first_touch_seconds": first_touch,
                           "read_seconds": Timed.read_seconds,
                           "slice_bytes": Timed.slice_bytes, "slice_users": Timed.slice_users,
                           "baseline_kib": base_kib, "peak_kib": peak_kib,
                           "dp_rows": len(res.dp), "pvalue_rows": len(res.pvalues)}
    # speedup of read_fold's default reader threads over one thread (wall, back to back)
    alg = "bpr-mf" if "bpr-mf" in store.algorithms() else store.algorithms()[0]
    pairs = dp.scope_pairs(store.configs(alg), store.hyperparameters(alg), 25, 42)
    ids = np.unique(np.concatenate([x.ravel() for x in pairs.values()]))
    fold0 = store.folds(alg)[0]
    walls = {}
    for threads in (1, None, 1, None):
        t0 = time.perf_counter()
        store.read_fold(alg, fold0, ids, store.metric_cutoffs(alg), threads=threads)
        w = time.perf_counter() - t0
        walls[threads] = min(walls.get(threads, w), w)
    out["read_threads_speedup"] = walls[1] / walls[None]
    # dp.analyze as `dptune analyze` calls it (default reader threads), wall clock; the
    # page cache is warm from the runs above, as it is after a sweep that just wrote the store
    t0 = time.perf_counter()
    dp.analyze(ResultStore(root), n_pairs=25, seed=42)
    out["wall_seconds_default_threads"] = time.perf_counter() - t0
    out["peak_kib_after_wall"] = _peak_kib()
    if Timed.slice_users < full_users:
        Timed.read_seconds = 0.0
        Timed.step = 2
        t2, _ = _timed(lambda: dp.analyze(Timed(root), n_pairs=25, seed=42))
        out["half_users_seconds"] = t2
        out["half_users_read_seconds"] = Timed.read_seconds
    if compare:
        class PerScope:
            """The store without ``read_fold``: analyze falls back to per-scope reads."""

            def __init__(self, s: ResultStore) -> None:
                self._s = s

            def __getattr__(self, name: str) -> Any:
                if name == "read_fold":
                    raise AttributeError(name)
                return getattr(self._s, name)

        t_old, old = _timed(lambda: dp.analyze(PerScope(ResultStore(root)), n_pairs=25, seed=42))
        out["seconds_per_scope_reads"] = t_old
        out["identical"] = all(res.tables()[k].equals(old.tables()[k]) for k in res.tables())
    print(json.dumps(out))


def project_analyze(child: dict[str, Any], folds: int, users: int) -> dict[str, float]:
    """Seconds and peak GiB of the analysis of the full store from one measurement.

    Time: the first touch of the fold array's memory is paid once per analysis (inside the
    first ``read_fold``, so it is taken out of the measured reading and added once); reading
    (``read_fold``, measured with one thread, CPU time) scales with the values read, i.e.
    folds x users, and is divided by the measured speedup of ``read_fold``'s default threads
    (wall times of one fold read back to back with 1 and with the default threads: other
    load on the machine lowers that ratio, so the projection errs high); the rest
    scales with folds and, fitted from the run on half the users, linearly in users (no fit
    is needed when the store already has every user). Memory: the analysis holds one fold at a
    time, so the projected peak is the measured peak plus the growth of that fold's array to
    every user, plus the growth of the per-part read buffers (two threads, about 60 bytes per
    row of a part).
    """
    fold_factor = FULL_FOLDS / folds
    user_factor = FULL_USERS / users
    first_touch = child.get("first_touch_seconds", 0.0)
    read = max(0.0, child["read_seconds"] - first_touch)  # steady-state reading
    rest = child["seconds"] - child["read_seconds"]
    if "half_users_seconds" in child and user_factor > 1:
        rest_half = child["half_users_seconds"] - child["half_users_read_seconds"]
        slope = max(0.0, (rest - rest_half) / (users - users // 2))  # seconds per user
        rest_full = rest + slope * (FULL_USERS - users)
    else:
        rest_full = rest * user_factor
    first = first_touch * user_factor
    seconds_1 = fold_factor * (read * user_factor + rest_full) + first
    speedup = max(1.0, child.get("read_threads_speedup", 1.0))
    seconds = fold_factor * (read * user_factor / speedup + rest_full) + first
    kib = 1024.0
    grow = child["slice_bytes"] * (user_factor - 1.0)
    part_rows = 14 * 18 * users  # rows of one BPR-MF part
    buffers = 2 * 60 * part_rows * (user_factor - 1.0)
    peak = child["peak_kib"] * kib + grow + buffers
    return {"seconds_projected": seconds, "seconds_projected_one_thread": seconds_1,
            "read_threads_speedup": speedup, "peak_gib_projected": peak / 2**30,
            "read_seconds": read, "rest_seconds": rest, "rest_seconds_full_users": rest_full,
            "fold_factor": fold_factor, "user_factor": user_factor}


def bench_analyze(scale: float, workdir: Path | None = None, keep: bool = False,
                  compare: bool = False, grids: dict[str, Any] | None = None,
                  ragged: bool = False) -> dict[str, Any]:
    """Build a synthetic store at ``scale``, time the analysis in a fresh process, project.

    ``compare`` also runs the analysis through per-scope ``read_matrix`` calls (the previous
    read path) and reports whether every output table is identical; ``grids`` and ``ragged``
    go to :func:`build_synthetic_store`.
    """
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-analyze-", dir=workdir))
    try:
        root = tmp / "results"
        t_build, layout = _wall_timed(lambda: build_synthetic_store(root, scale, grids=grids,
                                                               ragged=ragged))
        _log(f"  synthetic store: {layout['parts']} parts, {layout['folds']} fold(s) x "
             f"{layout['users']} users, {layout['bytes'] / 2**30:.2f} GiB, built in {t_build:.0f} s")
        cmd = [sys.executable, "-m", "dptune.bench", "analyze-child", str(root),
               "--full-users", str(FULL_USERS)]
        if compare:
            cmd.append("--compare")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"analysis child failed:\n{proc.stderr[-3000:]}")
        child = json.loads(proc.stdout.strip().splitlines()[-1])
        # the whole command a user runs, default options, wall clock from the process start
        cmd = [sys.executable, "-m", "dptune.bench", "command-child", str(root),
               "--out", str(tmp / "reports")]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        command_seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"dptune analyze failed:\n{proc.stderr[-3000:]}")
        command = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    gib = 2**30 / 1024  # KiB per GiB
    return {
        **layout, **project_analyze(child, layout["folds"], layout["users"]),
        "build_seconds": t_build, "seconds": child["seconds"],
        "first_touch_seconds": child.get("first_touch_seconds", 0.0),
        "peak_gib": child["peak_kib"] / gib, "baseline_gib": child["baseline_kib"] / gib,
        "slice_gib": child["slice_bytes"] / 2**30,
        "wall_seconds": child.get("wall_seconds_default_threads"),
        "peak_gib_after_wall": child.get("peak_kib_after_wall", 0) / gib,
        "half_users_seconds": child.get("half_users_seconds"),
        "seconds_per_scope_reads": child.get("seconds_per_scope_reads"),
        "identical": child.get("identical"),
        "command_seconds": command_seconds, "command_peak_gib": command["peak_kib"] / gib,
        "kept": str(tmp) if keep else None,
    }


# --------------------------------------------------------------------------------------------
# the whole benchmark


@dataclass
class Results:
    """Every measurement of one run, and the printed lines."""

    plan: Plan
    machine: dict[str, str]
    lines: dict[str, str] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}x"


def run_benchmark(plan: Plan, analyze_scale: float | None = None,
                  workdir: Path | None = None) -> Results:
    """Run every measurement of ``plan``; ``analyze_scale`` 0 skips the analysis stage."""
    machine = machine_info()
    res = Results(plan=plan, machine=machine)
    grid = _grid_values()
    ks = list(plan.ks) if plan.ks is not None else grid["k"]
    iterations = list(plan.iterations) if plan.iterations is not None else grid["iterations"]
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-", dir=workdir))
    t_all = time.perf_counter()
    try:
        exp = _experiment(plan.dataset, tmp / "exp", plan)
        _log(f"data {plan.dataset}: preparing fold 0")
        fd = _fold0(exp)
        res.detail["data"] = {"dataset": plan.dataset, "train_interactions": int(fd.train.nnz),
                              "users_evaluated": int(len(fd.users)),
                              "items": int(fd.train.shape[1])}
        _warm_up(fd)
        with _single_thread():
            _log(f"neighbours: UserKNN, k = {ks}")
            nb = bench_neighbours(fd, ks)
            _log(f"  dptune {nb['dptune_seconds']:.1f} s, naive {nb['naive_seconds']:.1f} s")
            _log(f"iterations: BPR-MF factors={plan.iteration_factors}, iterations = {iterations}")
            it = bench_iterations(fd, plan.iteration_factors, plan.learning_rate, iterations)
            _log(f"  dptune {it['dptune_seconds']:.1f} s, naive {it['naive_seconds']:.1f} s")
        res.detail["neighbours"] = nb
        res.detail["iterations"] = it
        _log("mini-grid: dptune (run_unit, 2 workers) vs naive loop")
        mg = bench_mini_grid(exp, fd, tmp)
        _log(f"  dptune {mg['dptune_seconds']:.1f} s (serial {mg['dptune_serial_seconds']:.1f} s), "
             f"naive {mg['naive_seconds']:.1f} s")
        res.detail["mini_grid"] = mg
        # unit costs for the projection (ML-1M unless the plan says otherwise)
        if plan.projection_dataset == plan.dataset:
            fd_p = fd
            exp_p = exp
        else:
            exp_p = _experiment(plan.projection_dataset, tmp / "exp-proj", plan)
            _log(f"data {plan.projection_dataset}: preparing fold 0 for the unit costs")
            fd_p = _fold0(exp_p)
        _log(f"unit costs on {plan.projection_dataset}")
        with _single_thread():
            costs = measure_unit_costs(fd_p, plan, nb if fd_p is fd else None)
        scale_train = scale_eval = 1.0
        if plan.projection_dataset != "ml-1m":  # convert to ML-1M sizes (tiny plan only)
            scale_train = 717_995 / costs["nnz"]
            scale_eval = (5815 * 3706) / (costs["users"] * costs["items"])
        proj = project_full_grid(costs, scale_train, scale_eval)
        res.detail["unit_costs"] = costs
        res.detail["projection"] = proj
        t_eval = sum(r["eval_seconds"] for r in costs["bpr"])
        t_bound = sum(r["bound_seconds"] for r in costs["bpr"])
        res.detail["eval_vs_bound"] = {"bpr": t_eval / t_bound, "per_factors": {
            r["factors"]: r["eval_seconds"] / r["bound_seconds"] for r in costs["bpr"]},
            "knn": {name: {k: c["eval_seconds"][k] / c["bound_seconds"][k]
                           for k in c["bound_seconds"]} for name, c in costs["knn"].items()}}
        res.lines["speedup iterations"] = _fmt_ratio(it["speedup"])
        res.lines["speedup neighbours"] = _fmt_ratio(nb["speedup"])
        res.lines["speedup mini_grid"] = _fmt_ratio(mg["speedup"])
        res.lines["eval_vs_bound"] = _fmt_ratio(t_eval / t_bound)
        res.lines["projected_full_grid_hours"] = f"{proj['hours']:.1f}"
        del fd, fd_p, exp, exp_p
        scale = plan.analyze_scale if analyze_scale is None else analyze_scale
        if scale > 0:
            _log(f"analysis: synthetic store at scale {scale}")
            an = bench_analyze(scale, workdir)
            _log(f"  dp.analyze {an['seconds']:.1f} s, peak {an['peak_gib']:.2f} GiB")
            res.detail["analyze"] = an
            res.lines["analyze_seconds_projected"] = f"{an['seconds_projected']:.1f}"
            res.lines["analyze_peak_gib_projected"] = f"{an['peak_gib_projected']:.2f}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res.detail["wall_seconds"] = time.perf_counter() - t_all
    return res


# --------------------------------------------------------------------------------------------
# report


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def render_report(res: Results, command: str) -> str:
    """Markdown of a run: the lines, the detail behind them and the machine."""
    d = res.detail
    lines = [
        "# dptune performance benchmark",
        "",
        f"Generated by `{command}` (plan `{res.plan.name}`, {d.get('wall_seconds', 0):.0f} s). "
        "What every figure measures: `docs/performance.md` and the docstring of `dptune/bench.py`.",
        "",
        "```",
        *[f"{k}: {v}" for k, v in res.lines.items()],
        "```",
        "",
        "## Machine",
        "",
        *_table(["item", "value"], list(res.machine.items())),
        "",
    ]
    if "data" in d:
        dd = d["data"]
        lines += ["## Data (validation fold 0 of the paper's split)", "",
                  f"{dd['dataset']}: {dd['train_interactions']:,} training interactions, "
                  f"{dd['users_evaluated']:,} users evaluated, {dd['items']:,} items.", ""]
    if "neighbours" in d:
        nb = d["neighbours"]
        lines += ["## Neighbours axis (UserKNN, one thread)", "",
                  f"dptune {nb['dptune_seconds']:.1f} s (similarity {nb['dptune_fit_seconds']:.1f} s), "
                  f"naive {nb['naive_seconds']:.1f} s (fits {nb['naive_fit_seconds']:.1f} s): "
                  f"**{nb['speedup']:.2f}x** overall, {nb['fit_speedup']:.1f}x on training alone; "
                  f"results identical: {'yes' if nb['identical'] else 'NO'}.", "",
                  *_table(["k", "dptune fit / with_k (s)", "dptune evaluate (s)", "naive fit (s)",
                           "naive evaluate (s)"],
                          [(r["k"], f"{r['dptune_fit']:.2f}", f"{r['dptune_eval']:.2f}",
                            f"{r['naive_fit']:.2f}", f"{r['naive_eval']:.2f}")
                           for r in nb["rows"]]), ""]
    if "iterations" in d:
        it = d["iterations"]
        lines += ["## Iterations axis (BPR-MF, one thread)", "",
                  f"factors {it['factors']}, learning rate {it['learning_rate']:.8g}, iterations "
                  f"{it['iterations']}: dptune trains {it['epochs_dptune']} epochs, naive "
                  f"{it['epochs_naive']}.", "",
                  *_table(["", "train (s)", "evaluate (s)", "total (s)"], [
                      ("dptune", f"{it['dptune_train']:.1f}", f"{it['dptune_eval']:.1f}",
                       f"{it['dptune_seconds']:.1f}"),
                      ("naive", f"{it['naive_train']:.1f}", f"{it['naive_eval']:.1f}",
                       f"{it['naive_seconds']:.1f}")]), "",
                  f"Speedup **{it['speedup']:.2f}x** overall, {it['train_speedup']:.2f}x on "
                  f"training alone; snapshots bit-identical to fresh fits: "
                  f"{'yes' if it['identical'] else 'NO'}.", ""]
    if "mini_grid" in d:
        mg = d["mini_grid"]
        w = mg["workers"]
        lines += ["## Mini-grid (sweep units vs naive loop)", "",
                  f"{mg['units']} units, {mg['configs']} configurations: " + "; ".join(mg["tasks"]) + ".",
                  "",
                  *_table(["", "seconds", "speedup"], [
                      ("dptune, 2 worker processes x 1 thread (as `dptune run --jobs 2`): "
                       "makespan of the units' CPU times", f"{mg['dptune_seconds']:.1f}",
                       f"{mg['speedup']:.2f}x"),
                      ("(the same, measured wall time on the shared machine)",
                       f"{mg['dptune_wall_seconds']:.1f}", ""),
                      ("dptune, serial, 1 thread (CPU)", f"{mg['dptune_serial_seconds']:.1f}",
                       f"{mg['speedup_serial']:.2f}x"),
                      ("naive loop, 1 thread (CPU)", f"{mg['naive_seconds']:.1f}", "1x")]),
                  "",
                  "Unit CPU seconds in the workers: "
                  + ", ".join(f"{c:.1f}" for c in mg["unit_cpu_seconds"]) + ".",
                  "",
                  "Thread pools seen inside the sweep's worker processes "
                  "(`parallel_config(backend='loky', inner_max_num_threads=cores // jobs)`):", "",
                  *_table(["worker", "BLAS/OpenMP threads", "numba threads", "pyarrow cpu_count",
                           "env"],
                          [(x["pid"], x["blas_openmp_threads"], x["numba_threads"],
                            x["pyarrow_cpu_count"], x["env"]) for x in w]), ""]
    if "unit_costs" in d:
        c = d["unit_costs"]
        p = d["projection"]
        lines += ["## Unit costs (one thread) and the full-grid projection", "",
                  f"Measured on {res.plan.projection_dataset} fold 0 ({c['nnz']:,} training "
                  f"interactions, {c['users']:,} users evaluated, {c['items']:,} items).", "",
                  *_table(["factors", "epoch (s)", "M updates/s", "evaluate (s)",
                           "score + argpartition (s)", "eval / bound"],
                          [(r["factors"], f"{r['epoch_seconds']:.3f}",
                            f"{r['updates_per_second'] / 1e6:.2f}", f"{r['eval_seconds']:.3f}",
                            f"{r['bound_seconds']:.3f}",
                            f"{r['eval_seconds'] / r['bound_seconds']:.2f}") for r in c["bpr"]]),
                  ""]
        for name, k in c["knn"].items():
            lines.append(f"- {name}: similarity (k = {max(k['eval_seconds'])}) "
                         f"{k['fit_seconds']:.2f} s; evaluate " + ", ".join(
                             f"k={kk}: {v:.2f} s" + (f" (score + argpartition "
                                                     f"{k['bound_seconds'][kk]:.2f} s)"
                                                     if kk in k["bound_seconds"] else "")
                             for kk, v in k["eval_seconds"].items()))
        lines += [f"- writing one BPR-MF part (14 configurations): {c['write_part_seconds']:.2f} s",
                  "",
                  *_table(["component", "core-hours"], [
                      ("BPR-MF training, 128 epochs per (factors, lr, fold)",
                       f"{p['train_core_hours']:.1f}"),
                      ("BPR-MF evaluation, 3,150 x 10 configurations", f"{p['eval_core_hours']:.1f}"),
                      ("writing the parts", f"{p['write_core_hours']:.2f}"),
                      ("UserKNN + ItemKNN, 10 folds", f"{p['knn_core_hours']:.2f}"),
                      ("test split (18 best BPR-MF units + KNN, upper bound)",
                       f"{p['test_split_core_hours']:.2f}"),
                      ("**total**", f"**{p['core_hours']:.1f}**"),
                      (f"**on {CORES} cores (hours)**", f"**{p['hours']:.1f}**"),
                      ("(BPR-MF training without the iterations reuse)",
                       f"({p['train_core_hours_without_reuse']:.1f})")]),
                  "",
                  f"Iterations-axis speedup over the whole grid (training + evaluation, from these "
                  f"unit costs): {p['iterations_speedup_full_grid']:.2f}x.", ""]
        ev = d["eval_vs_bound"]
        lines += [f"eval_vs_bound (BPR-MF, summed over the factor sizes): {ev['bpr']:.2f}x; "
                  "per factor size " + ", ".join(f"{f}: {v:.2f}" for f, v in ev["per_factors"].items())
                  + "; KNN " + "; ".join(f"{n}: " + ", ".join(f"k={k} {v:.2f}" for k, v in x.items())
                                         for n, x in ev["knn"].items()) + ".", ""]
    if "analyze" in d:
        a = d["analyze"]
        lines += ["## Analysis (dp.analyze and `dptune analyze`) on a synthetic store", "",
                  f"Scale {a['scale']}: {a['folds']} fold(s) x {a['users']} users x the full grids "
                  f"(3,180 configurations), {a['parts']} parts, {a['values']:,} values, "
                  f"{a['bytes'] / 2**30:.2f} GiB on disk (built in {a['build_seconds']:.0f} s).", "",
                  *_table(["", "measured", "projected to the full ML-1M store"], [
                      ("seconds, reading with 1 thread (CPU)", f"{a['seconds']:.1f}",
                       f"{a['seconds_projected_one_thread']:.1f}"),
                      (f"seconds, default reader threads (read speedup "
                       f"{a['read_threads_speedup']:.2f}x)", "",
                       f"{a['seconds_projected']:.1f}"),
                      ("seconds, dp.analyze with default reader threads, wall clock (the DP part of `dptune analyze`)",
                       f"{a['wall_seconds']:.1f}" if a.get("wall_seconds") is not None else "",
                       ""),
                      ("seconds, the whole `dptune analyze` command (default options: DP, "
                       "tables, figures, hyperparameter importance), wall clock",
                       f"{a['command_seconds']:.1f}" if a.get("command_seconds") is not None
                       else "", ""),
                      ("peak resident memory (GiB)", f"{a['peak_gib']:.2f}",
                       f"{a['peak_gib_projected']:.2f}"),
                      ("peak resident memory of `dptune analyze` (GiB)",
                       f"{a['command_peak_gib']:.2f}" if a.get("command_peak_gib") is not None
                       else "", ""),
                      ("process baseline after imports (GiB)", f"{a['baseline_gib']:.2f}", "")]),
                  "",
                  f"Allocating the fold array (page faults, paid once per analysis): "
                  f"{a['first_touch_seconds']:.2f} s, timed apart. "
                  f"Of the measured time, {a['read_seconds']:.1f} s were spent reading besides it "
                  f"(`ResultStore.read_fold`, one pass per fold; fold array {a['slice_gib']:.2f} GiB) "
                  f"and {a['rest_seconds']:.1f} s testing and building the tables. Projection "
                  f"(`project_analyze`): x {a['fold_factor']:.0f} folds; reading x "
                  f"{a['user_factor']:.2f} users, the rest fitted linearly in users from a second "
                  "run on half of them (when the store has fewer users than the full one) -> "
                  f"{a['rest_seconds_full_users']:.1f} s per fold; memory: measured peak plus the "
                  "growth of the fold array and of the read buffers to every user (one fold is held "
                  "at a time).", ""]
        if a.get("seconds_per_scope_reads") is not None:
            lines += [f"Per-scope reads (the previous read path) on the same store: "
                      f"{a['seconds_per_scope_reads']:.1f} s; outputs identical: "
                      f"{'yes' if a['identical'] else 'NO'}.", ""]
    return "\n".join(lines) + "\n"


def _print_lines(res: Results) -> None:
    for key in LINE_KEYS:
        if key in res.lines:
            print(f"{key}: {res.lines[key]}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m dptune.bench [analyze] [--small] [--out PATH] ...``."""
    ap = argparse.ArgumentParser(prog="python -m dptune.bench", description=__doc__.split("\n")[0])
    ap.add_argument("mode", nargs="?", default="all",
                    choices=["all", "analyze", "analyze-child", "command-child"],
                    help="all (default): every measurement; analyze: the analysis stage only")
    ap.add_argument("root", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--small", action="store_true", help="ML-100K comparisons (about 2 minutes)")
    ap.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # tests: seconds
    ap.add_argument("--out", default=None,
                    help="markdown report (default reports/benchmarks.md for the full run; "
                         "none for --small/--tiny unless given)")
    ap.add_argument("--analyze-scale", "--scale", dest="scale", type=float, default=None,
                    help="fraction F of the full ML-1M store for the analysis measurement "
                         "(0 skips it; default 0.1 full, 0.01 --small)")
    ap.add_argument("--compare", action="store_true",
                    help="analyze: also run the per-scope read path and check identical output")
    ap.add_argument("--keep", action="store_true", help="analyze: keep the synthetic store")
    ap.add_argument("--full-users", type=int, default=FULL_USERS, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default=None, help="where temporary stores go (default: TMPDIR)")
    args = ap.parse_args(argv)
    workdir = Path(args.workdir) if args.workdir else None
    if args.mode == "analyze-child":
        _analyze_child(args.root, args.compare, args.full_users)
        return 0
    if args.mode == "command-child":
        _command_child(args.root, args.out)
        return 0
    plan = PLANS["tiny" if args.tiny else "small" if args.small else "full"]
    command = "python -m dptune.bench" + (" --small" if args.small else "") + (
        " --tiny" if args.tiny else "")
    if args.mode == "analyze":
        scale = args.scale if args.scale is not None else plan.analyze_scale
        res = Results(plan=plan, machine=machine_info())
        t0 = time.perf_counter()
        an = bench_analyze(scale, workdir, keep=args.keep, compare=args.compare)
        res.detail["wall_seconds"] = time.perf_counter() - t0
        res.detail["analyze"] = an
        res.lines["analyze_seconds_projected"] = f"{an['seconds_projected']:.1f}"
        res.lines["analyze_peak_gib_projected"] = f"{an['peak_gib_projected']:.2f}"
        if an["folds"] == FULL_FOLDS and an["users"] >= FULL_USERS:  # the full store itself
            res.lines["analyze_seconds_full_store_wall"] = f"{an['wall_seconds']:.1f}"
            res.lines["analyze_peak_gib_full_store"] = f"{an['peak_gib_after_wall']:.2f}"
            res.lines["analyze_command_seconds_full_store"] = f"{an['command_seconds']:.1f}"
            res.lines["analyze_command_peak_gib_full_store"] = f"{an['command_peak_gib']:.2f}"
        if an.get("identical") is not None:
            print(f"analyze_identical: {'yes' if an['identical'] else 'no'}")
        command += f" analyze --scale {scale}"
    else:
        res = run_benchmark(plan, args.scale, workdir)
    _print_lines(res)
    out = args.out
    if out is None and plan.name == "full" and args.mode == "all":
        out = str(REPO / "reports" / "benchmarks.md")
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_report(res, command))
        _log(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
