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
fold 0 of the paper's split, the same fold data :func:`dptune.sweeper.prepare` builds):

- ``speedup iterations``: one ``(factors, learning_rate)`` (452 factors: the median of the
  grid's training time) along every iteration value of the paper's grid (1 ... 128). dptune:
  one BPR-MF run with a snapshot evaluated at each value (:class:`dptune.models.BPRFamily`);
  naive: ``BPRMF(epochs=i).fit`` from scratch and evaluate, for each ``i``. The snapshots are
  checked bit-identical to the fresh fits.
- ``speedup neighbours``: UserKNN along every ``k`` of the paper's grid. dptune: the models
  :class:`dptune.models.KNNFamily` yields (one similarity for the largest ``k``), evaluate
  each; naive: ``UserKNN(k).fit`` and evaluate for each ``k``. Results are checked identical.
  Both comparisons are interleaved configuration by configuration, so that both sides see
  the same conditions on a machine whose speed drifts.
- ``speedup mini_grid``: a few units (UserKNN, BPR-MF with two factor sizes and two learning
  rates) run by dptune as a sweep runs them (:func:`dptune.sweeper.run_unit`, parts written to a
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
- ``analyze_*``: :func:`dptune.analysis.dp.fold_loop.run_fold_loop` on a synthetic store with the real layout
  (:meth:`dptune.store.ResultStore.write_unit`, random values, the real grids) holding a
  fraction ``F`` of the full ML-1M store (``round(10 F)`` folds of the full grid; below 0.1 also
  fewer users), timed in a fresh process (peak resident memory: ``VmHWM``) and projected to the
  full store by :func:`project_analyze` (linear in folds; see there for users and threads).
  On the full-size store (``--scale 1.0``) also ``analyze_command_*_full_store``: the whole
  ``dptune analyze`` command with its default options (DP analysis, tables, figures, report,
  hyperparameter importance) in a fresh process, wall clock from its start, and its peak memory.

``python -m dptune.bench amazon`` (about 15-20 minutes; ``--tiny``: seconds) is the scale plan:
single-core unit costs on validation fold 0 of ML-1M and of a synthetic data set with the shape
of Amazon Movies (:mod:`dptune.data._synth`, preset ``amazon-movies``: 16,141 users, 111,537
items, 858,314 ratings), each evaluation split into scoring, top-N and metrics and measured on
1,024 random users scaled to the fold, the KNN evaluation of every ``k`` as the sweep runs it,
and the peak resident memory of each part (what one worker holds); then the full-grid projection
of both data sets with its breakdown (training, scoring, top-N, metrics, writing). It prints::

    projected_full_grid_hours ml-1m: <h>
    worker_peak_gib ml-1m: <g>
    projected_full_grid_hours amazon-movies: <h>
    worker_peak_gib amazon-movies: <g>

and replaces its own section of ``reports/benchmarks.md`` (the full plan keeps that section when
it rewrites the file).

``python -m dptune.bench gpu`` measures the device engine on a CUDA device (epoch time per
factor size, evaluation per configuration, kernel launches per epoch, projected grids; writes
``reports/benchmarks-gpu.md``); without a device it stops with one line, and ``--simulate`` is a
dry run on numba's CUDA simulator that reports no time (see ``_gpu``).

``python -m dptune.bench sweep CONFIG [--device D] [--budget B] [--jobs N]`` checks the sweep's
projection end to end: it runs ``dptune run CONFIG`` once from nothing, timed whole, and prices
the same units by the cost model (see ``_sweep``). It prints::

    run_wall_seconds: <s>
    run_projected_seconds: <s>
    run_measured_over_projected: <ratio>
    full_grid_hours_from_this_run: <h>

Timings are CPU seconds of single-threaded work (BLAS limited to one thread, ``process_time``):
a sweep on 2 cores runs 2 worker processes with one thread each, and CPU time is what the same
work takes on an idle core, even when other processes compete for the machine (wall times under
such load are reported where they differ; the load average at the start is recorded).

The benchmark is its own subpackage, off the import path of the rest of dptune (no dptune module
imports it), in one-idea modules: ``_plans`` (what a run measures), ``_timing`` (clocks, machine),
``_fold`` (data), ``_axes`` (neighbours and iterations axes, unit costs), ``_projection`` (full
grid), ``_minigrid``, ``_analyze`` (synthetic store, analysis stage), ``_run`` (a whole run),
``_report`` (Markdown), ``_gpu`` (the device engine), ``_sweep`` (a real sweep against its
projection) and ``_main`` (command line).
"""

from dptune.bench._analyze import bench_analyze, build_synthetic_store, project_analyze
from dptune.bench._axes import (
    bench_iterations,
    bench_neighbours,
    eval_and_bound,
    eval_phases,
    measure_scale_costs,
    measure_unit_costs,
)
from dptune.bench._main import bench_main
from dptune.bench._minigrid import bench_mini_grid
from dptune.bench._plans import (
    CORES,
    FULL_FOLDS,
    FULL_USERS,
    LINE_KEYS,
    PLANS,
    REPO,
    SCALE_PLANS,
    Plan,
    ScalePlan,
)
from dptune.bench._projection import project_full_grid
from dptune.bench._report import render_report, render_scale_report
from dptune.bench._run import Results, run_benchmark, run_scale
from dptune.bench._timing import machine_info

__all__ = [
    "Plan",
    "PLANS",
    "ScalePlan",
    "SCALE_PLANS",
    "REPO",
    "CORES",
    "FULL_FOLDS",
    "FULL_USERS",
    "LINE_KEYS",
    "Results",
    "run_benchmark",
    "run_scale",
    "bench_neighbours",
    "bench_iterations",
    "eval_and_bound",
    "measure_unit_costs",
    "measure_scale_costs",
    "eval_phases",
    "bench_mini_grid",
    "bench_analyze",
    "build_synthetic_store",
    "project_full_grid",
    "project_analyze",
    "render_report",
    "render_scale_report",
    "machine_info",
    "bench_main",
]
