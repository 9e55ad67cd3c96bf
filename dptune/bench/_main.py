"""Command line of the benchmark: ``python -m dptune.bench [analyze] [--small] [--out PATH] ...``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dptune.bench._analyze import analyze_child, bench_analyze, command_child
from dptune.bench._gpu import gpu_main
from dptune.bench._plans import FULL_FOLDS, FULL_USERS, PLANS, REPO, SCALE_PLANS
from dptune.bench._report import (
    merge_scale_section,
    print_lines,
    render_report,
    render_scale_report,
    scale_section,
)
from dptune.bench._run import Results, run_benchmark, run_scale
from dptune.bench._sweep import sweep_main
from dptune.bench._timing import log, machine_info


def build_bench_parser() -> argparse.ArgumentParser:
    """The benchmark's argument parser (``--tiny``, the tests' plan, is hidden)."""
    ap = argparse.ArgumentParser(prog="python -m dptune.bench", description=(
        "Benchmark of dptune's performance engine against a naive loop, and a projection of the "
        "full grid."))
    ap.add_argument("mode", nargs="?", default="all",
                    choices=["all", "analyze", "amazon", "gpu", "sweep", "analyze-child",
                             "command-child"],
                    help="all (default): every measurement; analyze: the analysis stage only; "
                         "amazon: unit costs and the full-grid projection on ML-1M and on a "
                         "synthetic data set of Amazon Movies' shape; gpu: the device engine "
                         "on a CUDA device (gpu --help); sweep: one real sweep timed against "
                         "its projection (sweep --help)")
    ap.add_argument("root", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--small", action="store_true",
                    help="the speed-up comparisons on ML-100K instead of ML-1M, each measured "
                         "once instead of twice, and the analysis on a store 1%% of the full "
                         "one's size instead of 10%% (the unit costs of the projection are still "
                         "measured on ML-1M)")
    ap.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # the tests' plan
    ap.add_argument("--out", default=None,
                    help="markdown report (default reports/benchmarks.md for the full run; "
                         "none for --small unless given)")
    ap.add_argument("--scale", type=float, default=None,
                    help="fraction F of the full ML-1M store for the analysis measurement "
                         "(0 skips it; default 0.1 full, 0.01 --small)")
    ap.add_argument("--compare", action="store_true",
                    help="analyze: also run the per-scope read path and check identical output")
    ap.add_argument("--keep", action="store_true", help="analyze: keep the synthetic store")
    ap.add_argument("--full-users", type=int, default=FULL_USERS, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default=None,
                    help="where temporary stores go (default: TMPDIR; created when missing)")
    return ap


def bench_main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m dptune.bench [analyze] [--small] [--out PATH] ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["gpu"]:  # its own options: dptune/bench/_gpu.py
        return gpu_main(argv[1:])
    if argv[:1] == ["sweep"]:  # its own options: dptune/bench/_sweep.py
        return sweep_main(argv[1:])
    ap = build_bench_parser()
    args = ap.parse_args(argv)
    workdir = Path(args.workdir) if args.workdir else None
    if workdir is not None:
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # checked before any work, as every argument
            ap.error(f"--workdir {workdir}: cannot create it ({err.strerror})")
    if args.mode == "analyze-child":
        analyze_child(args.root, args.compare, args.full_users)
        return 0
    if args.mode == "command-child":
        command_child(args.root, args.out)
        return 0
    if args.mode == "amazon":
        splan = SCALE_PLANS["amazon-tiny" if args.tiny else "amazon"]
        res = run_scale(splan, workdir)
        print_lines(res)
        out = args.out or (None if args.tiny else str(REPO / "reports" / "benchmarks.md"))
        if out:
            path = Path(out)
            old = path.read_text() if path.exists() else ""
            _write(path, merge_scale_section(old, render_scale_report(
                res, "python -m dptune.bench amazon" + (" --tiny" if args.tiny else ""))))
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
    print_lines(res)
    out = args.out
    if out is None and plan.name == "full" and args.mode == "all":
        out = str(REPO / "reports" / "benchmarks.md")
    if out:
        path = Path(out)
        kept = scale_section(path.read_text()) if path.exists() else ""
        _write(path, render_report(res, command) + ("\n" + kept if kept else ""))
    return 0


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    log(f"report: {path}")
