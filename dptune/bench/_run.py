"""One whole benchmark run: every measurement of a plan, collected in :class:`Results`."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dptune.bench._analyze import bench_analyze
from dptune.bench._axes import (
    bench_iterations,
    bench_neighbours,
    measure_scale_costs,
    measure_unit_costs,
)
from dptune.bench._fold import bench_experiment, fold0, warm_up
from dptune.bench._minigrid import bench_mini_grid
from dptune.bench._plans import BUDGET_HOURS, PLANS, TINY_SYNTH, Plan, ScalePlan
from dptune.bench._projection import budget_in, project_full_grid
from dptune.bench._timing import (
    grid_values,
    log,
    machine_info,
    peak_memory_gib,
    reset_peak_memory,
    single_thread,
    wall_timed,
)


@dataclass
class Results:
    """Every measurement of one run, and the printed lines."""

    plan: Plan | ScalePlan
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
    grid = grid_values()
    ks = list(plan.ks) if plan.ks is not None else grid["k"]
    iterations = list(plan.iterations) if plan.iterations is not None else grid["iterations"]
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-", dir=workdir))
    t_all = time.perf_counter()
    try:
        exp = bench_experiment(plan.dataset, tmp / "exp", plan)
        log(f"data {plan.dataset}: preparing fold 0")
        fd = fold0(exp)
        res.detail["data"] = {"dataset": plan.dataset, "train_interactions": int(fd.train.nnz),
                              "users_evaluated": int(len(fd.users)),
                              "items": int(fd.train.shape[1])}
        warm_up(fd)
        with single_thread():
            log(f"neighbours: UserKNN, k = {ks}")
            nb = bench_neighbours(fd, ks)
            log(f"  dptune {nb['dptune_seconds']:.1f} s, naive {nb['naive_seconds']:.1f} s")
            log(f"iterations: BPR-MF factors={plan.iteration_factors}, iterations = {iterations}")
            it = bench_iterations(fd, plan.iteration_factors, plan.learning_rate, iterations)
            log(f"  dptune {it['dptune_seconds']:.1f} s, naive {it['naive_seconds']:.1f} s")
        res.detail["neighbours"] = nb
        res.detail["iterations"] = it
        log("mini-grid: dptune (run_unit, 2 workers) vs naive loop")
        mg = bench_mini_grid(exp, fd, tmp)
        log(f"  dptune {mg['dptune_seconds']:.1f} s (serial {mg['dptune_serial_seconds']:.1f} s), "
             f"naive {mg['naive_seconds']:.1f} s")
        res.detail["mini_grid"] = mg
        # unit costs for the projection (ML-1M unless the plan says otherwise)
        if plan.projection_dataset == plan.dataset:
            fd_p = fd
            exp_p = exp
        else:
            exp_p = bench_experiment(plan.projection_dataset, tmp / "exp-proj", plan)
            log(f"data {plan.projection_dataset}: preparing fold 0 for the unit costs")
            fd_p = fold0(exp_p)
        log(f"unit costs on {plan.projection_dataset}")
        with single_thread():
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
            log(f"analysis: synthetic store at scale {scale}")
            an = bench_analyze(scale, workdir)
            log(f"  dp.analyze {an['seconds']:.1f} s, peak {an['peak_gib']:.2f} GiB")
            res.detail["analyze"] = an
            res.lines["analyze_seconds_projected"] = f"{an['seconds_projected']:.1f}"
            res.lines["analyze_peak_gib_projected"] = f"{an['peak_gib_projected']:.2f}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res.detail["wall_seconds"] = time.perf_counter() - t_all
    return res


def _scale_source(name: str, workdir: Path) -> tuple[str, str]:
    """(label, ``[data] source``) of a scale-plan data set; ``synth:*`` is written to ``workdir``."""
    if not name.startswith("synth:"):
        return name, name
    from dptune.data._synth import PRESETS, SynthShape, write_synthetic

    preset = name.split(":", 1)[1]
    shape = SynthShape(**TINY_SYNTH) if preset == "tiny" else PRESETS[preset]
    path = workdir / f"{preset}.csv.gz"
    t, _ = wall_timed(lambda: write_synthetic(path, shape, seed=0))
    log(f"data {name}: synthetic {shape.users:,} users, {shape.items:,} items, "
        f"{shape.ratings:,} ratings written in {t:.1f} s")
    return preset, str(path)


def run_scale(plan: ScalePlan, workdir: Path | None = None) -> Results:
    """Unit costs (evaluation by phase, peak memory) and the full-grid projection on each data
    set of ``plan``; one data set at a time, so that the peaks are those of its fold alone."""
    res = Results(plan=plan, machine=machine_info())
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-scale-", dir=workdir))
    t_all = time.perf_counter()
    res.detail["scale"] = {}
    try:
        for name in plan.datasets:
            label, source = _scale_source(name, tmp)
            exp = bench_experiment(source, tmp / f"exp-{label}", PLANS["tiny"], label)
            reset_peak_memory()
            t_prep, fd = wall_timed(lambda exp=exp: fold0(exp))
            fold_gib = peak_memory_gib()
            log(f"data {label}: fold 0 prepared in {t_prep:.1f} s ({fd.train.nnz:,} training "
                f"interactions, {len(fd.users):,} users evaluated, {fd.train.shape[1]:,} items)")
            warm_up(fd)
            with single_thread():
                costs = measure_scale_costs(fd, plan)
            costs["prepare_peak_gib"] = fold_gib
            proj = project_full_grid(costs)
            budget = budget_in(costs, BUDGET_HOURS)
            peak = max([fold_gib, costs["write_peak_gib"]]
                       + [r["peak_gib"] for r in costs["bpr"]]
                       + [c["peak_gib"] for c in costs["knn"].values()])
            res.detail["scale"][label] = {"costs": costs, "projection": proj, "peak_gib": peak,
                                          "prepare_seconds": t_prep, "budget": budget}
            res.lines[f"projected_full_grid_hours {label}"] = f"{proj['hours']:.1f}"
            res.lines[f"worker_peak_gib {label}"] = f"{peak:.2f}"
            res.lines[f"budget_{BUDGET_HOURS:g}h_units {label}"] = (
                f"{budget['units']} of {budget['total_units']}")
            log(f"  {label}: projected {proj['hours']:.1f} h on 2 cores, peak {peak:.2f} GiB")
            del fd, exp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res.detail["wall_seconds"] = time.perf_counter() - t_all
    return res
