"""``python -m dptune.bench sweep CONFIG``: one real sweep, timed whole, against the sweep's own
projection of the same units.

The projections a user plans with (``dptune run``'s first line, ``dptune status``, a time budget
``--budget 2h``) come from the cost model (:mod:`dptune.sweeper._cost`): unit costs measured
once, carried to the run's data shape, every stage of the run counted. This command checks them
end to end: it runs ``dptune run CONFIG`` (with ``--device``, ``--budget`` and ``--jobs`` as
given) in a child process on fresh result and report directories (its messages, and its
progress bars where this command's standard error is a terminal, pass through as they come),
times the whole command on the wall clock, and then prices exactly the units that run swept with the same projection
(:func:`dptune.sweeper.design.projection`: the design and budget recorded in the store, the
shape recorded in its manifest, the noise floor priced at the configurations it trained, the
kernels that were still to compile when it started).

It reports:

- the whole run: measured wall seconds against the projection, and their ratio;
- the validation units' own computation: the sum of the ``fit_seconds`` and ``eval_seconds``
  their parts record, against the cost model's training and evaluation of the same units
  (:meth:`dptune.sweeper._cost.CostModel.compute_seconds`): whether the unit costs hold, apart
  from the run's other work;
- the full grid of the experiment: the projection (its noise floor priced at the
  configurations this run's noise floor trained), and the projection times this run's measured
  / projected ratio (the full grid projected from this measurement, assuming the rest of the
  grid is mispriced as this run's units were).

``--costs FILE`` prices a device run by unit costs just measured (the JSON of ``python -m
dptune.bench gpu``, its ``ml-1m`` data set or else its first) instead of the cost model's
built-in device costs; the device constants the measurement does not give (the evaluation's
size exponent, the overlapped writes, a unit's fixed cost) stay the built-in ones. Every
argument is checked before the run (one line, exit 2). ``--out`` writes the comparison as
Markdown with its figures as JSON beside it.
"""

from __future__ import annotations

import argparse
import codecs
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dptune.bench._timing import log, machine_info

__all__ = ["sweep_main", "check_projection", "render_sweep_report"]


def build_sweep_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m dptune.bench sweep``."""
    from dptune.vocab import DEVICES

    ap = argparse.ArgumentParser(
        prog="python -m dptune.bench sweep",
        description="One real sweep (dptune run), timed whole, against the cost model's "
                    "projection of the same units.")
    ap.add_argument("config", help="experiment TOML file")
    ap.add_argument("--device", choices=DEVICES, default=None,
                    help="dptune run --device (default: the experiment's)")
    ap.add_argument("--budget", default=None, help="dptune run --budget (default: the experiment's)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="dptune run --jobs (default: the experiment's)")
    ap.add_argument("--costs", default=None,
                    help="JSON of python -m dptune.bench gpu: price a device run by its unit costs")
    ap.add_argument("--out", default=None, help="Markdown report (JSON beside it)")
    ap.add_argument("--workdir", default=None,
                    help="where the run's results and reports go (default: a temporary "
                         "directory, removed afterwards)")
    return ap


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    return build_sweep_parser().parse_args(list(argv))


def _measured_costs(path: str) -> dict[str, Any]:
    """The unit costs of the device benchmark's JSON at ``path``: its ``ml-1m`` data set, else
    its first."""
    from dptune.bench._projection import device_cost_model
    from dptune.errors import input_error

    try:
        data = json.loads(Path(path).read_text())["data"]
        costs = dict(data.get("ml-1m") or next(iter(data.values())))["costs"]
        device_cost_model(costs)  # every figure the cost model reads is there
        return costs
    except OSError as err:
        raise input_error("--costs", None, f"cannot read {path} ({err.strerror})") from None
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError) as err:
        raise input_error("--costs", None, f"{path} is not the JSON of python -m dptune.bench "
                          f"gpu ({type(err).__name__}: {err})") from None


def _cost_model(device: str, costs: Mapping[str, Any] | None) -> Any:
    from dptune.bench._projection import device_cost_model
    from dptune.sweeper._cost import CostModel

    return CostModel.for_device(device) if costs is None else device_cost_model(dict(costs), device)


def _run_passing_stderr_on(cmd: Sequence[str], out: Any) -> tuple[int, str]:
    """Run ``cmd`` with its standard output in ``out`` and its standard error passed on to
    ours as it comes (its progress bars, its announced projection, its error); return its exit
    status and the last line it wrote there."""
    decode = codecs.getincrementaldecoder("utf-8")("replace")
    tail = ""
    with subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        for chunk in iter(lambda: proc.stderr.read1(65536), b""):
            text = decode.decode(chunk)
            sys.stderr.write(text)
            sys.stderr.flush()
            tail = (tail + text)[-4096:]
        rc = proc.wait()
    lines = [line.strip() for line in tail.replace("\r", "\n").splitlines() if line.strip()]
    return rc, (lines[-1] if lines else "")


def check_projection(config: str | Path, device: str | None = None, budget: str | None = None,
                     jobs: int | None = None, costs: Mapping[str, Any] | None = None,
                     workdir: str | Path | None = None) -> dict[str, Any]:
    """Run ``dptune run config`` once, timed whole, and price the same units (module
    docstring). Raises :class:`dptune.errors.DptuneError` (one line) for a bad argument before
    the run; returns the figures of :func:`render_sweep_report`."""
    from dptune.cli._commands import _on_device
    from dptune.config import load_experiment, parse_budget
    from dptune.errors import DptuneError, input_error
    from dptune.store._store import ResultStore
    from dptune.sweeper._cost import shape_from_manifest
    from dptune.sweeper._status import noise_winners
    from dptune.sweeper._warmup import cold_kernels
    from dptune.sweeper.design import projection, read_design

    exp = _on_device(load_experiment(config), device)  # the engine is there, or one line
    if budget is not None:
        parse_budget(budget, "--budget", None)
    if jobs is not None and not 1 <= jobs <= 1024:
        raise input_error("--jobs", None, f"must be 1 to 1024, got {jobs}")
    if costs is not None and exp.sweep.device == "cpu":
        raise input_error("--costs", None, "prices a device run; give --device cuda or run an "
                          "experiment whose [sweep] device is one")
    cold = cold_kernels(exp)  # before the run compiles them
    keep = workdir is not None
    base = Path(workdir) if keep else Path(tempfile.mkdtemp(prefix="dptune-bench-sweep-"))
    results, reports = base / "results", base / "reports"
    if results.exists() and any(results.iterdir()):
        raise input_error("--workdir", None, f"{results} is not empty: give a fresh directory "
                          "(the run is timed from nothing)")
    flags = [word for flag, value in (("--device", device), ("--budget", budget), ("--jobs", jobs))
             if value is not None for word in (flag, str(value))]
    quiet = [] if sys.stderr.isatty() else ["--no-progress"]  # bars on a terminal, not in logs
    cmd = [sys.executable, "-m", "dptune.cli", "run", str(config), "--results", str(results),
           "--reports", str(reports), *quiet, *flags]
    try:
        base.mkdir(parents=True, exist_ok=True)
        log("run: " + " ".join(cmd[2:]))
        machine = machine_info()  # its load average is the one at the start
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        with open(base / "run.log", "w") as out:
            rc, last = _run_passing_stderr_on(cmd, out)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc != 0:
            raise DptuneError(f"dptune run exited {rc}: {last or '(no message)'}")
        store = ResultStore(results)
        design = read_design(results)
        shape = shape_from_manifest(store.manifest())
        model = _cost_model(exp.sweep.device, costs)
        n_jobs = jobs or exp.sweep.jobs
        winners = noise_winners(exp, store)  # the full grid's too: the best guess there is
        run = projection(exp, design, shape, None, n_jobs, model, winners=winners, cold=cold)
        full = projection(exp, design, shape, {n: d.rounds for n, d in design.algorithms.items()},
                          n_jobs, model, winners=winners, cold=cold)
        if run is None or full is None:
            raise DptuneError(f"{config}: an algorithm has no cost model; nothing to compare")
        trials = store.trials()
        val = trials[trials["fold"] != "test"]
        measured_compute = float(val["fit_seconds"].sum() + val["eval_seconds"].sum())
        projected_compute = 0.0
        for d in design.algorithms.values():
            configs = exp.grids[d.algorithm].configs()
            for u in d.in_budget():
                projected_compute += shape.folds * model.compute_seconds(
                    d.type, [configs[c] for c in u.config_ids], shape.validation)
        units = {name: d.budget_units for name, d in design.algorithms.items()}
        parts = int(len(val.groupby(["algorithm", "fold", "unit"])))
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    ratio = wall / run.seconds
    return {
        "config": str(config), "experiment": exp.name, "device": exp.sweep.device,
        "where": run.where, "budget": design.budget, "units": units, "parts": parts,
        "command": " ".join(["dptune", "run", str(config), *flags]),
        "wall_seconds": wall, "child_cpu_seconds": (after.ru_utime - before.ru_utime
                                                    + after.ru_stime - before.ru_stime),
        "projected_seconds": run.seconds, "ratio": ratio,
        "projected_stages": {k: getattr(run, k) for k in ("startup", "compile", "validation",
                                                          "test", "noise", "analysis")},
        "measured_compute_seconds": measured_compute,
        "projected_compute_seconds": projected_compute,
        "costs": ("the costs just measured on the device (--costs)" if costs is not None
                  else f"the built-in {exp.sweep.device} costs"),
        "full_grid_projected_seconds": full.seconds,
        "full_grid_from_this_run_seconds": full.seconds * ratio,
        "machine": machine,
    }


#: The projection's stages as the report names them.
STAGES = {"startup": "start-up", "compile": "compilation", "validation": "validation",
          "test": "test split", "noise": "noise floor", "analysis": "analysis and report"}


def _seconds(s: float) -> str:
    """``"108 s"``, or ``"3,312 s (55 min)"`` from 10 minutes on: exact enough that two figures
    and their ratio never read as contradicting each other."""
    from dptune.sweeper.design import hours_text

    return f"{s:,.0f} s" + (f" ({hours_text(s)})" if s >= 600 else "")


def render_sweep_report(r: Mapping[str, Any]) -> str:
    """Markdown of :func:`check_projection`'s figures."""
    units = ", ".join(f"{n} {u}" for n, u in r["units"].items())
    stages = ", ".join(f"{STAGES[k]} {_seconds(v)}" for k, v in r["projected_stages"].items())
    rows = [
        ("the whole run (wall clock)", _seconds(r["projected_seconds"]),
         _seconds(r["wall_seconds"]), f"{r['ratio']:.2f}"),
        ("the validation units' training and evaluation (their parts' own times)",
         _seconds(r["projected_compute_seconds"]), _seconds(r["measured_compute_seconds"]),
         f"{r['measured_compute_seconds'] / max(r['projected_compute_seconds'], 1e-9):.2f}"),
    ]
    lines = [
        f"# The projection checked end to end: {r['experiment']} on {r['where']}", "",
        f"Generated by `python -m dptune.bench sweep {r['config']}`, which ran `{r['command']}` "
        "once from nothing, timed whole, then priced the same units by the sweep's cost model "
        f"with {r['costs']}. What it measures: the docstring of `dptune/bench/_sweep.py`.", "",
        f"Units per algorithm: {units} ({r['parts']} validation parts)"
        + (f"; budget {r['budget']}" if r["budget"] is not None else "") + ".", "",
        "| | projected | measured | measured / projected |",
        "| --- | --- | --- | --- |",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows], "",
        f"Projected stages: {stages}. The run's processes used "
        f"{_seconds(r['child_cpu_seconds'])} of CPU.", "",
        f"**The full grid**: projected {_seconds(r['full_grid_projected_seconds'])} on "
        f"{r['where']}; scaled by this run's measured / projected ratio, "
        f"{_seconds(r['full_grid_from_this_run_seconds'])}.", "",
        "## Machine", "", "| item | value |", "| --- | --- |",
        *[f"| {k} | {v} |" for k, v in r["machine"].items()], "",
    ]
    return "\n".join(lines)


def sweep_main(argv: Sequence[str]) -> int:
    """Command line of ``python -m dptune.bench sweep``; 2 (one line) for a bad argument."""
    from dptune.errors import DptuneError

    args = _parse(argv)
    try:
        costs = _measured_costs(args.costs) if args.costs else None
        if args.out:
            out = Path(args.out)
            if out.parent and not out.parent.is_dir():
                raise DptuneError(f"--out: {out.parent} is not a directory")
        r = check_projection(args.config, args.device, args.budget, args.jobs, costs,
                             args.workdir)
    except DptuneError as err:
        print(f"python -m dptune.bench sweep: {err}", file=sys.stderr)
        return 2
    text = render_sweep_report(r)
    print(f"run_wall_seconds: {r['wall_seconds']:.1f}")
    print(f"run_projected_seconds: {r['projected_seconds']:.1f}")
    print(f"run_measured_over_projected: {r['ratio']:.2f}")
    print(f"full_grid_hours_from_this_run: {r['full_grid_from_this_run_seconds'] / 3600:.2f}")
    if args.out:
        out.write_text(text)
        out.with_suffix(".json").write_text(json.dumps(r, indent=1, default=str) + "\n")
        log(f"report: {out}")
    return 0
