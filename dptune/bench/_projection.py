"""Projection of the paper's full grid from measured unit costs (on ML-1M, or on any data set
whose fold the costs were measured on: the grid and the 10 folds are the same): single-core
costs on the CPU (:func:`project_full_grid`, :func:`budget_in`), a device's costs as the sweep
prices them (:func:`device_cost_model`, :func:`device_full_grid`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dptune.bench._plans import CORES, FULL_FOLDS, REPO, TEST_UNITS_BPR
from dptune.bench._timing import grid_values

#: The paper's experiment (Table 2 grids, 10 folds, cutoffs 1/5/10, every metric, the test split
#: and the default noise floor), whose design and budgets the projection uses.
PAPER_EXPERIMENT = REPO / "experiments" / "anelli2019-ml1m.toml"


def project_full_grid(costs: dict[str, Any], scale_train: float = 1.0,
                      scale_eval: float = 1.0) -> dict[str, Any]:
    """Hours of the paper's grid on :data:`CORES` cores from single-core unit costs.

    The costs are those of one fold of the data set projected (ML-1M for the default plans);
    ``scale_*`` convert costs measured on another data set to it (1.0 on the data set itself).
    When the costs split the evaluation into phases (``eval_parts``: score, top-N, metrics, as
    :func:`dptune.bench._axes.measure_scale_costs` measures them), ``breakdown`` gives the
    core-hours of training (BPR-MF epochs and KNN similarities), scoring, top-N, metrics and
    writing the parts; the test-split units are listed apart.
    """
    g = grid_values()
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
    knn_evals = {}
    for name, c in costs["knn"].items():
        if "eval_all_k" in c and set(c["eval_all_k"]) >= set(ks):
            evals = sum(c["eval_all_k"][k] for k in ks)
        else:
            kx = np.array(sorted(c["eval_seconds"]), dtype=np.float64)
            ky = np.array([c["eval_seconds"][k] for k in sorted(c["eval_seconds"])])
            evals = float(np.interp(np.asarray(ks, dtype=np.float64), kx, ky).sum())
        knn_evals[name] = evals
        per_fold = (c["fit_seconds"] + evals) * scale_eval
        knn_detail[name] = per_fold
        knn_s += per_fold * FULL_FOLDS
    parts = ("score", "topn", "metrics")
    breakdown = None
    if all("eval_parts" in r for r in costs["bpr"]) and all(
            "eval_parts" in c for c in costs["knn"].values()):
        breakdown = {"training": train_s + sum(c["fit_seconds"] for c in costs["knn"].values())
                     * scale_eval * FULL_FOLDS}
        for p in parts:
            py = np.array([r["eval_parts"][p] for r in costs["bpr"]]) * scale_eval
            # KNN: the measured phase shares of the evaluation of the grid's k values
            knn_p = sum(knn_evals[n] * c["eval_parts"][p] / max(sum(c["eval_parts"].values()),
                                                               1e-300)
                        for n, c in costs["knn"].items())
            breakdown[p] = (float(np.interp(factors, fx, py).sum()) * n_it * n_lr * FULL_FOLDS
                            + knn_p * scale_eval * FULL_FOLDS)
        breakdown["writing"] = write_s
        breakdown = {k: v / 3600.0 for k, v in breakdown.items()}
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
        "breakdown_core_hours": breakdown,
    }


def _paper_grid(costs: dict[str, Any], device: str = "cpu") -> tuple[Any, Any, Any]:
    """(experiment, design, shape) of the paper's grid (:data:`PAPER_EXPERIMENT`, swept on
    ``device``) on the data set whose fold ``costs`` were measured on: its validation folds of
    that shape (``nnz``, ``users``, ``items``), the test split training on all
    :data:`FULL_FOLDS` folds' interactions."""
    from dataclasses import replace

    from dptune.config import load_experiment
    from dptune.sweeper._cost import FoldShape, SweepShape
    from dptune.sweeper.design import experiment_design

    exp = load_experiment(PAPER_EXPERIMENT)
    if device != exp.sweep.device:
        exp = replace(exp, sweep=replace(exp.sweep, device=device))
    k = FULL_FOLDS
    val = FoldShape(float(costs["nnz"]), float(costs["users"]), float(costs["items"]))
    shape = SweepShape(val, FoldShape(val.nnz * k / (k - 1), val.users, val.items), k)
    return exp, experiment_design(exp), shape


def budget_in(costs: dict[str, Any], hours: float, jobs: int = CORES) -> dict[str, Any]:
    """The largest budget of the paper's grid that fits in ``hours`` on ``jobs`` cores, from
    single-core unit costs measured on one fold of a data set (its shape: ``nnz``, ``users``,
    ``items`` of ``costs``).

    The sweep's own conversion of a time budget (``[sweep] budget = "3h"``:
    :func:`dptune.sweeper.design.budget_rounds` with :class:`dptune.sweeper._cost.CostModel`
    built on these costs): whole rounds of the design order of the BPR-MF grid (15 units per
    round; the first two walk the staircase chain and their costs depend on which factors values
    they hold, every later one holds each factors value once), the full KNN grids, the test
    split and the noise floor. Returns ``rounds`` and ``units`` (0 when not even one round
    fits), ``total_units`` (225), ``round_hours`` (a round's validation units, the mean over the
    grid's rounds), ``run_hours`` (the whole run of that budget, or of one round when none fits)
    and ``fixed_hours`` (the run less its BPR-MF validation units: KNN, test split, noise
    floor).
    """
    from dptune.config import Budget
    from dptune.errors import DptuneError
    from dptune.sweeper._cost import CostModel
    from dptune.sweeper.design import budget_rounds, projection

    exp, design, shape = _paper_grid(costs)
    model = CostModel(costs)
    bpr = design.algorithms["bpr-mf"]
    one = {n: 1 for n in design.algorithms}
    p0 = projection(exp, design, shape, {**one, "bpr-mf": 0}, jobs, model)
    p_all = projection(exp, design, shape, {**one, "bpr-mf": bpr.rounds}, jobs, model)
    round_s = (p_all.validation - p0.validation) / bpr.rounds
    try:
        rounds = budget_rounds(Budget("time", hours * 3600.0, f"{hours:g}h"), exp, design, shape,
                               jobs, model)["bpr-mf"]
    except DptuneError:
        rounds = 0
    run = projection(exp, design, shape, {**one, "bpr-mf": max(rounds, 1)}, jobs, model)
    return {"hours": hours, "jobs": jobs, "rounds": rounds, "units": bpr.units_for(rounds),
            "total_units": bpr.total_units, "round_units": bpr.round_size,
            "round_hours": round_s / 3600.0, "run_hours": run.hours,
            "fixed_hours": (run.seconds - (run.validation - p0.validation)) / 3600.0}


def device_cost_model(costs: dict[str, Any], device: str = "cuda") -> Any:
    """The sweep's cost model (:class:`dptune.sweeper._cost.CostModel`) of a device whose unit
    costs were measured on one fold (what :func:`dptune.bench._gpu.measure_device` returns, or
    its JSON: ``k`` keys as text are read as integers); the constants the measurement does not
    give (the evaluation's size exponent, the overlapped writes, a unit's fixed cost) are the
    built-in device ones (:data:`dptune.sweeper._cost.DEVICE_COSTS`)."""
    from dptune.sweeper._cost import DEVICE_COSTS, CostModel

    measured = {
        "bpr": [{"factors": int(r["factors"]), "epoch_seconds": float(r["epoch_seconds"]),
                 "eval_seconds": float(r["eval_seconds"])} for r in costs["bpr"]],
        "knn": {n: {"fit_seconds": float(c["fit_seconds"]),
                    "eval_seconds": {int(k): float(v) for k, v in c["eval_seconds"].items()}}
                for n, c in costs["knn"].items()},
        "write_part_seconds": float(costs["write_part_seconds"]),
        "nnz": int(costs["nnz"]), "users": int(costs["users"]), "items": int(costs["items"]),
    }
    return CostModel({**DEVICE_COSTS[device], **measured}, device=device)


def device_full_grid(costs: dict[str, Any], device: str = "cuda") -> dict[str, Any]:
    """The paper's full grid (:data:`PAPER_EXPERIMENT`, every round) on one device, projected
    as ``dptune run --device`` projects it (:func:`dptune.sweeper.design.projection` with
    :func:`device_cost_model`, every stage counted, a warm kernel cache) on the fold shape the
    costs were measured on. Returns ``hours``, the ``stages`` in seconds and their ``text``,
    and ``serial_writes_hours``: the same with each part written before the next unit starts
    (what the overlapped writes save)."""
    from dptune.sweeper._cost import CostModel
    from dptune.sweeper.design import projection

    exp, design, shape = _paper_grid(costs, device)
    model = device_cost_model(costs, device)
    serial = CostModel({**model.costs, "writes_overlap": False}, device=device)
    every = {n: d.rounds for n, d in design.algorithms.items()}
    full = projection(exp, design, shape, every, 1, model, cold=[])
    slow = projection(exp, design, shape, every, 1, serial, cold=[])
    return {"hours": full.hours, "text": full.stages_text(), "serial_writes_hours": slow.hours,
            "stages": {s: getattr(full, s) for s in ("startup", "compile", "validation", "test",
                                                     "noise", "analysis")}}
