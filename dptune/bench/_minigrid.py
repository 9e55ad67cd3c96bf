"""The mini-grid: a few units run as a sweep runs them (run_unit, 2 worker processes) against a
plain serial loop that fits and evaluates every configuration from scratch."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dptune.bench._fold import evaluate_model
from dptune.bench._plans import CORES
from dptune.bench._timing import single_thread, timed, wall_timed


def _worker_threads(exp: Any) -> dict[str, Any]:
    """Inside a sweep worker: prepare the data (as a worker does once) and report its pools."""
    import numba
    import pyarrow
    from threadpoolctl import threadpool_info

    from dptune.sweeper import prepare

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
    from dptune.models import BPRMF, ItemKNN, UserKNN

    if alg_type == "userknn":
        return UserKNN(int(cfg["k"]))
    if alg_type == "itemknn":
        return ItemKNN(int(cfg["k"]))
    return BPRMF(int(cfg["factors"]), cfg["learning_rate"], cfg["user_reg"], cfg["item_reg"],
                 epochs=int(cfg["iterations"]), seed=seed)


def _run_unit_cpu(exp: Any, task: Any, root: str) -> tuple[int, float]:
    """:func:`dptune.sweeper._unit.run_unit` in a worker; returns (worker pid, CPU seconds)."""
    from dptune.store import ResultStore
    from dptune.sweeper import run_unit

    t, _ = timed(lambda: run_unit(exp, task, ResultStore(root)))
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

    from dptune.store import ResultStore
    from dptune.sweeper import derive_seed, plan, run_unit

    tasks = [t for a in exp.algorithms for t in plan(exp, a.name, ["0"])]
    n_configs = sum(len(t.config_ids) for t in tasks)
    threads = max(1, (os.cpu_count() or 1) // CORES)
    root = ResultStore(workdir / "mini-store").create().root
    with parallel_config(backend="loky", inner_max_num_threads=threads):
        # start the workers and let each prepare the data once (paid once per sweep)
        workers = Parallel(n_jobs=CORES)(delayed(_worker_threads)(exp) for _ in range(CORES))
        t_wall, got = wall_timed(lambda: Parallel(n_jobs=CORES)(
            delayed(_run_unit_cpu)(exp, t, str(root)) for t in tasks))
    unit_cpu = [c for _, c in got]
    t_par = _makespan(unit_cpu, CORES)
    store_serial = ResultStore(workdir / "mini-store-serial").create()
    types = {a.name: a.type for a in exp.algorithms}

    def naive() -> None:
        for t in tasks:
            grid = exp.grids[t.algorithm]
            seed = derive_seed(exp.seed, t.algorithm, t.fold, t.params)
            for cid in t.config_ids:
                model = _naive_config(types[t.algorithm], grid.config(cid), seed).fit(fd.train)
                evaluate_model(model, fd)

    with single_thread():
        t_ser, _ = timed(lambda: [run_unit(exp, t, store_serial) for t in tasks])
        t_naive, _ = timed(naive)
    return {
        "units": len(tasks), "configs": n_configs, "dptune_seconds": t_par,
        "dptune_wall_seconds": t_wall, "unit_cpu_seconds": unit_cpu,
        "dptune_serial_seconds": t_ser, "naive_seconds": t_naive,
        "speedup": t_naive / t_par, "speedup_serial": t_naive / t_ser,
        "workers": workers,
        "tasks": [f"{t.algorithm} {t.params} ({len(t.config_ids)} configs)" for t in tasks],
    }
