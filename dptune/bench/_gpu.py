"""``python -m dptune.bench gpu``: the device engine (:mod:`dptune.engine`) measured on a CUDA
device, and the full grids projected from it.

Per data set (validation fold 0 of the paper's split, built as the sweep builds it): for every
factor size of the BPR-MF grid, the wall time of one epoch (the mean of ``repeats`` epochs after
one that compiles the kernel, the device synchronised before the clock stops) and the kernel
launches per epoch (:data:`dptune.engine.LAUNCHES`, dptune's dispatch counter); the wall time of
evaluating one configuration (every user of the fold: device scores, top-N and metrics,
:func:`dptune.engine.evaluate_on`); for UserKNN and ItemKNN, the host similarity at the largest
``k`` and the device evaluation of every ``k`` of the grid as the sweep runs it (scores grown
along ``k``), and whether the device values equal the host engine's on a block of users; the
quality of the device's BPR-MF against the host kernel over 5 seeds (:func:`quality_check`). The
full-grid projection (:func:`dptune.bench.project_full_grid`) adds them up for the paper's
grid on *one* device working through the units one after the other (its ``core_hours``: the
host work of a unit, the KNN similarities and writing the parts, is part of the sum).

Data: ML-1M from the data cache (``dptune data fetch ml-1m``); where it is not there (a lent
machine reaches no network) a synthetic data set of ML-1M's shape (6,040 users, 3,706 items,
1,000,209 ratings; :mod:`dptune.data._synth`) stands in, and the report says so; the Amazon
Movies shape is synthetic anyway (preset ``amazon-movies``).

Without a CUDA device the command stops with one line (exit 2). ``--simulate`` runs the same
code on numba's CUDA simulator with a tiny synthetic data set: it counts the launches per epoch
and checks the device values against the host engine, and reports no time (the simulator runs
device threads as Python threads: its times say nothing about a device). Only a run on a
device writes ``reports/benchmarks-gpu.md``, with the measured figures as JSON beside it
(``benchmarks-gpu.json``); both are rewritten after each data set, so a run cut short keeps
what it measured and says which data sets are missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from dptune.bench._plans import PLANS, REPO
from dptune.bench._timing import grid_values, log, machine_info

__all__ = ["GPU_PLANS", "GpuPlan", "gpu_main", "measure_device", "quality_check",
           "render_gpu_report"]

#: What the command measures, in the one line it prints where there is no device.
MEASURES = ("the BPR-MF epoch time per factor size, the evaluation time per configuration, the "
            "kernel launches per epoch and the projected full ML-1M and Amazon-shape grids")
#: Users per evaluated block (the sweep's default ``[evaluation] user_block``).
BLOCK = 1024
#: Libraries of the device route whose versions the report lists beside the host's.
DEVICE_PACKAGES = ("torch", "cupy-cuda12x", "cupy-cuda13x", "numba-cuda", "array-api-compat")
#: Targets of the projected grids on one device, hours.
TARGET_HOURS = {"ml-1m": 1.0, "ml-1m-shape": 1.0, "amazon-movies": 4.0}


@dataclass(frozen=True)
class GpuPlan:
    """What a ``gpu`` run measures: data sets (``ml-1m`` or ``synth:<preset>``), factor sizes
    and ``k`` values (``None``: every value of the paper's grids), epochs timed per size."""

    name: str
    datasets: tuple[str, ...]
    factors: tuple[int, ...] | None
    ks: tuple[int, ...] | None
    repeats: int
    learning_rate: float = 2.0 ** -5.3219  # the grid's fourth learning rate (0.025)
    #: Seeds of the quality check (0: none): the device's BPR-MF against the host kernel.
    quality_seeds: int = 0
    #: (factors, learning rate, epochs) of the quality check.
    quality_model: tuple[int, float, int] = (64, 0.05, 16)


GPU_PLANS: dict[str, GpuPlan] = {
    "device": GpuPlan("device", ("ml-1m", "synth:amazon-movies"), None, None, repeats=3,
                      quality_seeds=5),
    "simulate": GpuPlan("simulate", ("synth:gpu-simulate",), (4, 12), (5, 20), repeats=1),
}


def _shapes() -> dict[str, Any]:
    from dptune.data._synth import PRESETS, SynthShape

    return {
        "ml-1m-shape": SynthShape(users=6040, items=3706, ratings=1_000_209),
        "amazon-movies": PRESETS["amazon-movies"],
        "gpu-simulate": SynthShape(users=40, items=80, ratings=400),
    }


def _source(name: str, tmp: Path) -> tuple[str, str, str]:
    """(label, ``[data] source``, what the data is) of a data set of the plan."""
    from dptune.data._synth import write_synthetic

    if name == "ml-1m":
        try:
            from dptune.data import fetch

            fetch("ml-1m")
            return "ml-1m", "ml-1m", "MovieLens 1M"
        except Exception as err:  # noqa: BLE001 - any failure: the stand-in, said in the report
            why = str(err).splitlines()[0] if str(err) else type(err).__name__
            log(f"ml-1m is not available ({why}); a synthetic data set of its shape stands in")
            name = "synth:ml-1m-shape"
            note = f"synthetic data of ML-1M's shape (ML-1M itself was not available: {why})"
    else:
        note = "synthetic data of Amazon Movies' shape" if name.endswith("amazon-movies") else (
            "a tiny synthetic data set (simulator run)")
    preset = name.split(":", 1)[1]
    shape = _shapes()[preset]
    path = tmp / f"{preset}.csv.gz"
    write_synthetic(path, shape, seed=0)
    return preset, str(path), (f"{note}: {shape.users:,} users, {shape.items:,} items, "
                               f"{shape.ratings:,} ratings")


def _sync(eng: Any) -> None:
    """Wait for every launched kernel and array operation of ``eng`` to finish."""
    from dptune.engine import _cuda

    if _cuda.simulated():
        return
    _cuda.cuda().synchronize()
    if eng.kind == "torch":
        import torch

        torch.cuda.synchronize()
    elif eng.kind == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()


def _wall(fn: Any, eng: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    _sync(eng)
    return time.perf_counter() - t0, out


def measure_device(eng: Any, fd: Any, plan: GpuPlan) -> dict[str, Any]:
    """Device costs on fold ``fd`` (see the module docstring), in the form
    :func:`dptune.bench.project_full_grid` reads, plus launches and checks. On the simulator
    the progress lines show no time."""
    from dptune.bench._axes import write_part_cost
    from dptune.engine import LAUNCHES, EngineBPRMF, Layout, evaluate_on
    from dptune.engine._cuda import simulated
    from dptune.engine._knn import device_knn
    from dptune.metrics import evaluate
    from dptune.models import ItemKNN, UserKNN
    from dptune.models._knn import _GrowingK, _KView

    show = not simulated()
    X = fd.train
    g = grid_values()
    factors = plan.factors or tuple(g["factors"])
    ks = sorted(plan.ks or g["k"])
    lr = plan.learning_rate
    ev = (fd.users, X, fd.relevant, (1, 5, 10), fd.efd, fd.epc)
    bpr = []
    for f in factors:
        model = EngineBPRMF(eng, f, lr, lr * 0.05, lr * 0.005, 0, seed=3).fit(X)
        _wall(lambda m=model: m.partial_fit(X, 1), eng)  # the first launch compiles the kernel
        LAUNCHES.clear()
        t_epochs, _ = _wall(lambda m=model: m.partial_fit(X, plan.repeats), eng)
        launches = sum(LAUNCHES.values()) / plan.repeats
        evaluate_on(eng, model, fd.users[:64], *ev[1:], block=BLOCK)  # warm
        t_eval, _ = _wall(lambda m=model: evaluate_on(eng, m, *ev, block=BLOCK), eng)
        bpr.append({"factors": f, "epoch_seconds": t_epochs / plan.repeats,
                    "launches_per_epoch": launches, "eval_seconds": t_eval,
                    "layout": asdict(model.layout or Layout.for_model(f, X.nnz))})
        log(f"  BPR factors={f}: {launches:g} launches per epoch" + (
            f", epoch {t_epochs / plan.repeats:.4f} s, eval {t_eval:.3f} s" if show else ""))
        del model
    knn = {}
    check = fd.users[: min(len(fd.users), 256)]
    for name, cls in (("userknn", UserKNN), ("itemknn", ItemKNN)):
        t0 = time.perf_counter()
        model = cls(max(ks)).fit(X)  # on the host
        t_fit = time.perf_counter() - t0
        growing = _GrowingK(model)
        per_k = {}
        LAUNCHES.clear()
        for k in ks:
            per_k[k], _ = _wall(lambda k=k, gr=growing: evaluate_on(
                eng, _KView(gr, k), *ev, block=BLOCK), eng)
        launches = sum(LAUNCHES.values())
        host = evaluate(model, check, *ev[1:], block=BLOCK)
        dev = evaluate_on(eng, model, check, *ev[1:], block=BLOCK)
        knn[name] = {"fit_seconds": t_fit, "eval_seconds": per_k, "eval_all_k": per_k,
                     "launches": launches, "equal_to_host": bool(np.array_equal(
                         host, dev, equal_nan=True)),
                     "exact": bool(device_knn(eng, model).exact)}
        log(f"  {name}: equal to the host: {knn[name]['equal_to_host']}" + (
            f", fit(k={max(ks)}) on the host {t_fit:.2f} s, every k on the device "
            f"{sum(per_k.values()):.2f} s" if show else ""))
        del model, growing
    return {"bpr": bpr, "knn": knn, "write_part_seconds": write_part_cost(fd, plan.repeats),
            "nnz": int(X.nnz), "users": int(len(fd.users)), "items": int(X.shape[1]),
            "quality": quality_check(eng, fd, plan) if plan.quality_seeds else None}


def quality_check(eng: Any, fd: Any, plan: GpuPlan) -> dict[str, Any]:
    """The device's BPR-MF (default layout: thousands of concurrent workers) against the host
    kernel on fold ``fd``: P@10 and nDCG@10 (means over the fold's users) per seed, each route
    evaluated by its own engine. ``within``: the gap between the two routes' means over the
    seeds is at most the host's seed noise floor (its largest minus its smallest value), the
    rule of the engine's quality test."""
    from dptune.engine import EngineBPRMF, evaluate_on
    from dptune.models import BPRMF

    f, lr, epochs = plan.quality_model
    regs = (lr * 0.05, lr * 0.005)
    per_seed: dict[str, list[list[float]]] = {"host": [], "device": []}
    for seed in range(plan.quality_seeds):
        for route in ("host", "device"):
            model = (BPRMF(f, lr, *regs, epochs, seed=seed) if route == "host" else
                     EngineBPRMF(eng, f, lr, *regs, epochs, seed=seed)).fit(fd.train)
            v = evaluate_on(eng if route == "device" else None, model, fd.users, fd.train,
                            fd.relevant, (10,), fd.efd, fd.epc)
            per_seed[route].append([float(np.nanmean(v[1, 0])), float(np.nanmean(v[0, 0]))])
    host, dev = np.array(per_seed["host"]), np.array(per_seed["device"])
    floor = host.max(axis=0) - host.min(axis=0)
    gap = np.abs(dev.mean(axis=0) - host.mean(axis=0))
    log(f"  quality (P@10, nDCG@10): host {host.mean(axis=0).round(4)}, device "
        f"{dev.mean(axis=0).round(4)}, floor {floor.round(4)}")
    return {"factors": f, "learning_rate": lr, "epochs": epochs, "seeds": plan.quality_seeds,
            "per_seed": per_seed, "floor": floor.tolist(), "gap": gap.tolist(),
            "within": bool((gap <= floor).all())}


def build_gpu_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m dptune.bench gpu``."""
    ap = argparse.ArgumentParser(prog="python -m dptune.bench gpu", description=(
        "The device engine on a CUDA device: BPR-MF epoch time per factor size, evaluation per "
        "configuration, kernel launches per epoch, projected full grids."))
    ap.add_argument("--simulate", action="store_true",
                    help="a dry run on numba's CUDA simulator (tiny data): launches and checks, "
                         "no times (not a speed measurement)")
    ap.add_argument("--dataset", action="append", choices=["ml-1m", "synth:amazon-movies"],
                    help="measure only this data set (repeatable; default: both)")
    ap.add_argument("--factors", default=None,
                    help="comma-separated factor sizes (default: every value of the grid)")
    ap.add_argument("--out", default=None,
                    help="markdown report (default reports/benchmarks-gpu.md; never written "
                         "by --simulate)")
    return ap


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = build_gpu_parser()
    args = ap.parse_args(list(argv))
    if args.factors is not None:
        try:
            args.factors = tuple(int(v) for v in args.factors.split(","))
        except ValueError:
            ap.error(f"--factors: comma-separated integers >= 1, got {args.factors!r}")
        if not args.factors or min(args.factors) < 1:
            ap.error(f"--factors: comma-separated integers >= 1, got {args.factors!r}")
    if args.simulate and (args.dataset or args.out):
        ap.error("--simulate runs its own tiny data and writes no report (drop --dataset/--out)")
    return args


def gpu_main(argv: Sequence[str]) -> int:
    """Command line of ``python -m dptune.bench gpu``; 2 (one line) without a CUDA device."""
    from dptune.engine import _cuda

    args = _parse(argv)
    if args.simulate:
        _cuda.use_simulator()
        from dptune.engine import _knn, numpy_engine

        _knn.THREADS = 8  # the simulator runs one Python thread per device thread,
        sys.setswitchinterval(5e-5)  # and a barrier waits until each of them is scheduled
        eng = numpy_engine()
        plan = GPU_PLANS["simulate"]
    else:
        from dptune.engine import engine_for
        from dptune.errors import DptuneError

        try:
            eng = engine_for("cuda", "gpu", None)
        except DptuneError as err:
            why = str(err).split(": ", 1)[-1]
            print(f"python -m dptune.bench gpu: no CUDA device found ({why}); on a machine with "
                  f"one it measures {MEASURES} (--simulate: a dry run on numba's CUDA "
                  "simulator, not a speed measurement)", file=sys.stderr)
            return 2
        plan = GPU_PLANS["device"]
    datasets = tuple(args.dataset) if args.dataset else plan.datasets
    plan = replace(plan, datasets=datasets, factors=args.factors or plan.factors)
    write = None
    if not args.simulate:
        out = Path(args.out) if args.out else REPO / "reports" / "benchmarks-gpu.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        command = "python -m dptune.bench gpu" + "".join(
            f" --dataset {d}" for d in (args.dataset or ())) + (
            f" --factors {','.join(map(str, args.factors))}" if args.factors else "")

        def write(result: dict[str, Any]) -> None:
            # after every data set: a run cut short (a lease's time limit) keeps what it measured
            out.write_text(render_gpu_report(result, command))
            out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str) + "\n")
            log(f"report: {out} and its data {out.with_suffix('.json').name} "
                f"({len(result['data'])} of {len(datasets)} data sets)")

    result = run_gpu(eng, plan, write)
    _print(result, args.simulate)
    return 0


def run_gpu(eng: Any, plan: GpuPlan,
            done: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every data set of ``plan``: fold 0, :func:`measure_device`, the projection; ``done``
    is called with the result so far after each data set (and its ``wall_seconds``)."""
    from dptune.bench._fold import bench_experiment, fold0
    from dptune.bench._projection import device_full_grid, project_full_grid
    from dptune.engine import _cuda

    result: dict[str, Any] = {"plan": asdict(plan), "device": _cuda.device_name(),
                              "engine": eng.name, "machine": machine_info(), "data": {}}
    for pkg in DEVICE_PACKAGES:  # the device route's own libraries, where installed
        try:
            result["machine"][pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-gpu-"))
    t_all = time.perf_counter()
    try:
        for name in plan.datasets:
            label, source, note = _source(name, tmp)
            exp = bench_experiment(source, tmp / f"exp-{label}", PLANS["tiny"], label)
            fd = fold0(exp)
            log(f"data {label}: {fd.train.nnz:,} training interactions, {len(fd.users):,} "
                f"users evaluated, {fd.train.shape[1]:,} items")
            costs = measure_device(eng, fd, plan)
            # the units' costs added up (core_hours and its parts); not its "hours", which
            # divides them among the CPU cores of a host run and means nothing for one device
            # (the device's hours are sweep_projection's)
            summed = {k: v for k, v in project_full_grid(costs).items() if k != "hours"}
            result["data"][label] = {"note": note, "costs": costs, "projection": summed,
                                     "sweep_projection": device_full_grid(costs)}
            del fd, exp
            result["wall_seconds"] = time.perf_counter() - t_all
            if done is not None:
                done(result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["wall_seconds"] = time.perf_counter() - t_all
    return result


def _print(result: dict[str, Any], simulate: bool) -> None:
    if simulate:
        print("simulated: numba's CUDA simulator on the CPU, not a speed measurement "
              "(no times reported)")
    print(f"device: {result['device']}")
    for label, d in result["data"].items():
        launches = sorted({r["launches_per_epoch"] for r in d["costs"]["bpr"]})
        print(f"launches_per_epoch {label}: {', '.join(f'{x:g}' for x in launches)}")
        for name, c in d["costs"]["knn"].items():
            print(f"knn_equal_to_host {label} {name}: {'yes' if c['equal_to_host'] else 'no'}")
        if not simulate:
            print(f"projected_full_grid_hours {label}: {d['sweep_projection']['hours']:.2f}")


def render_gpu_report(result: dict[str, Any], command: str) -> str:
    """Markdown of a device run (``reports/benchmarks-gpu.md``)."""
    def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
        return (["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
                + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])

    lines = [
        "# dptune device engine benchmark",
        "",
        f"Generated by `{command}` ({result.get('wall_seconds', 0):.0f} s) on **"
        f"{result['device']}** (engine `{result['engine']}`). What every figure measures: the "
        "docstring of `dptune/bench/_gpu.py` and `docs/performance.md`. Times are wall seconds "
        "with the device synchronised; the projection is the paper's grid (10 folds) worked "
        "through unit by unit on this one device, as `dptune run --device cuda` projects it "
        "from these costs (every stage of the run counted; the host's parts of a unit, KNN "
        "similarities and writing the parts, included).",
        "",
    ]
    missing = len(result["plan"]["datasets"]) - len(result["data"])
    if missing:
        lines += [f"**Incomplete:** the run stopped after {len(result['data'])} of "
                  f"{len(result['plan']['datasets'])} data sets; {missing} not measured.", ""]
    for label, d in result["data"].items():
        c, p, run = d["costs"], d["projection"], d["sweep_projection"]
        target = TARGET_HOURS.get(label)
        verdict = "" if target is None else (
            f" (target < {target:g} h: {'met' if run['hours'] < target else 'NOT met'})")
        lines += [
            f"## {label}", "",
            f"{d['note']}; fold 0: {c['nnz']:,} training interactions, {c['users']:,} users "
            f"evaluated, {c['items']:,} items.", "",
            f"**Projected full grid: {run['hours']:.2f} h on one device**{verdict}: "
            f"{run['text']}. The host writes each unit's part while the device computes the "
            f"next unit; with the writes in series it would be {run['serial_writes_hours']:.2f} "
            f"h. The units' work, added up: BPR-MF training {p['train_core_hours']:.2f} h, BPR-MF "
            f"evaluation {p['eval_core_hours']:.2f} h, KNN (host similarity + device "
            f"evaluation) {p['knn_core_hours']:.2f} h, writing the parts "
            f"{p['write_core_hours']:.2f} h, test-split units {p['test_split_core_hours']:.2f} "
            "h.", "",
            *table(["factors", "layout (lanes x workers, per block)", "epoch (s)",
                    "launches / epoch", "evaluation / config (s)"],
                   [(r["factors"], f"{r['layout']['lanes']} x {r['layout']['workers']}, "
                     f"{r['layout']['per_block']}", f"{r['epoch_seconds']:.4f}",
                     f"{r['launches_per_epoch']:g}", f"{r['eval_seconds']:.3f}")
                    for r in c["bpr"]]), "",
            *table(["model", "similarity on the host (s)", "every k on the device (s)",
                    "launches", "equal to the host engine", "exact sums"],
                   [(n, f"{k['fit_seconds']:.2f}", f"{sum(k['eval_all_k'].values()):.2f}",
                     k["launches"], "yes" if k["equal_to_host"] else "NO",
                     "yes" if k["exact"] else "no") for n, k in c["knn"].items()]), "",
        ]
        q = c.get("quality")
        if q:
            host, dev = np.array(q["per_seed"]["host"]), np.array(q["per_seed"]["device"])
            lines += [
                f"Quality of the device's BPR-MF ({q['factors']} factors, learning rate "
                f"{q['learning_rate']:g}, {q['epochs']} epochs, default layout; {q['seeds']} "
                "seeds; means over the fold's users): "
                f"{'within' if q['within'] else 'NOT within'} the host kernel's seed noise "
                "floor (largest minus smallest host value).", "",
                *table(["metric", "host kernel, mean (min-max)", "device, mean (min-max)",
                        "gap", "host noise floor"],
                       [(name, f"{host[:, m].mean():.4f} ({host[:, m].min():.4f}-"
                               f"{host[:, m].max():.4f})",
                         f"{dev[:, m].mean():.4f} ({dev[:, m].min():.4f}-{dev[:, m].max():.4f})",
                         f"{q['gap'][m]:.4f}", f"{q['floor'][m]:.4f}")
                        for m, name in enumerate(("P@10", "nDCG@10"))]), "",
            ]
    lines += ["## Machine", "", *table(["item", "value"], list(result["machine"].items())), ""]
    return "\n".join(lines)
