"""The sweep: train and evaluate every (algorithm, unit, fold) of an experiment, crash-safely.

A *unit* is what one model run produces (docs/design.md): all k of a KNN on one fold (one
similarity), all iteration counts of one BPR-MF (factors, learning rate) on one fold (snapshots of
one training run). optuna drives the units, in the experiment's design order: one study per
(experiment, algorithm) whose grid space is the fold plus the hyperparameters that are constant
within a unit, kept in an optuna storage (SQLite in the results directory by default, PostgreSQL or any optuna
RDB URL, or a journal file), so a re-run or any number of workers on any machines share one
sweep. The result store is the ground truth: a unit whose Parquet part exists and matches its
recorded size and checksum is never recomputed (a damaged one is). See docs/distributed.md.

Modules, one idea each: ``_prepare`` (fold data), ``_plan`` (units, tasks, seeds), ``_unit`` (one
unit), ``_storage`` (optuna storage and heartbeats), ``_claims`` (who computes a grid point),
``_worker`` (a worker's loop), ``_manifest`` (set-up checks and manifest), ``_local`` (the local
runner), ``_progress`` (the progress bar of the runner and of ``dptune worker``), ``_status``
(done / running / failed / remaining), ``_noise`` (the A/A noise-floor runs), ``_run`` (the stage's front function :func:`sweep`, which
``dptune run`` calls too), ``design/`` (the design order of the units, the budget in whole
rounds, ``design.json`` and :func:`read_design`), ``_sampler`` (workers take grid points in
design order) and ``_cost`` (the cost model behind time budgets and projections).
"""

from dptune.sweeper._claims import worker_id
from dptune.sweeper._local import run_experiment
from dptune.sweeper._manifest import (
    build_manifest,
    init_results,
    setup_changes,
    validate_experiment,
)
from dptune.sweeper._noise import (
    NoiseRun,
    NoiseTask,
    plan_noise,
    run_noise_floor,
    run_noise_task,
)
from dptune.sweeper._plan import Task, derive_seed, plan, plan_units, test_tasks, unit_dimensions
from dptune.sweeper._prepare import FoldData, Prepared, fold_data, prepare
from dptune.sweeper._recorded import experiment_from_manifest
from dptune.sweeper._run import run_sweep, sweep
from dptune.sweeper._status import stages, status
from dptune.sweeper._storage import heartbeat_settings, open_storage, study_name
from dptune.sweeper._unit import run_unit
from dptune.sweeper._worker import worker
from dptune.sweeper.design import Design, experiment_design, read_design

__all__ = [
    "NoiseTask",
    "NoiseRun",
    "plan_noise",
    "run_noise_task",
    "run_noise_floor",
    "FoldData",
    "fold_data",
    "Prepared",
    "prepare",
    "Task",
    "derive_seed",
    "unit_dimensions",
    "plan_units",
    "plan",
    "run_unit",
    "heartbeat_settings",
    "open_storage",
    "study_name",
    "worker_id",
    "worker",
    "Design",
    "experiment_design",
    "read_design",
    "build_manifest",
    "validate_experiment",
    "init_results",
    "test_tasks",
    "run_experiment",
    "experiment_from_manifest",
    "status",
    "stages",
    "setup_changes",
    "sweep",
    "run_sweep",
]

