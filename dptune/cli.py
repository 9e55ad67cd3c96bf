"""Command line: ``dptune run | worker | status | analyze | evaluate | dp | subgrid | seeds | slices | data``.

Bad input ends with one line ``dptune: <file>: <field>: <problem>`` and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dptune.errors import DptuneError, input_error


def _cutoffs(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise input_error("--cutoffs", None, f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise input_error("--cutoffs", None, "cutoffs must be positive integers")
    return vals


def _default_results(name: str) -> Path:
    return Path("results") / name


def _default_reports(name: str) -> Path:
    return Path("reports") / name


def _analysis_overrides(args: argparse.Namespace) -> dict[str, object]:
    """Analysis options given on the command line (absent flags are left to the config)."""
    keys = {"pairs": "n_pairs", "seed": "seed", "test": "test", "alpha": "alpha",
            "correction": "correction", "n_resamples": "n_resamples", "bootstrap": "bootstrap",
            "noise_seeds": "noise_seeds", "noise_configs": "noise_configs",
            "importance": "importance", "max_pairs": "max_pairs", "stability": "stability",
            "min_fold_users": "min_fold_users"}
    out = {}
    for flag, key in keys.items():
        v = getattr(args, flag, None)
        if v is not None:
            out[key] = v
    if out.get("noise_seeds") == 1 or (out.get("noise_seeds") or 0) < 0:
        raise input_error("--noise-seeds", None, "must be 0 (off) or at least 2")
    if "noise_configs" in out and out["noise_configs"] < 1:
        raise input_error("--noise-configs", None, "must be at least 1")
    if "bootstrap" in out and out["bootstrap"] < 0:
        raise input_error("--bootstrap", None, "must be 0 (off) or positive")
    for flag in ("max_pairs", "stability", "min_fold_users"):
        if flag in out and out[flag] < 0:
            raise input_error("--" + flag.replace("_", "-"), None, "must be 0 (off) or positive")
    if "n_resamples" in out and out["n_resamples"] < 1:
        raise input_error("--n-resamples", None, "must be at least 1")
    if "alpha" in out and not 0.0 < out["alpha"] < 1.0:
        raise input_error("--alpha", None, "must be between 0 and 1")
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from dptune.analysis._analyze import analyze_results
    from dptune.analysis._noise import run_noise_floor
    from dptune.config import load_experiment
    from dptune.sweep._local import run_experiment

    exp = load_experiment(args.config)
    overrides = _analysis_overrides(args)
    results = Path(args.results) if args.results else _default_results(exp.name)
    store = run_experiment(exp, results, storage_url=args.storage, jobs=args.jobs,
                           progress=not args.no_progress)
    print(f"results: {store.root}")
    seeds = int(overrides.get("noise_seeds", exp.analysis.noise_seeds))
    if seeds > 0:
        nr = run_noise_floor(exp, store.root, seeds=seeds,
                             n_configs=int(overrides.get("noise_configs", exp.analysis.noise_configs)),
                             jobs=args.jobs or exp.sweep.jobs, progress=not args.no_progress)
        print(f"noise floor: {len(nr.parts)} parts ({nr.computed} computed now), {seeds} seeds"
              + (f"; none for {', '.join(nr.skipped)} (deterministic)" if nr.skipped else ""))
    if not args.no_analyze:
        reports = Path(args.reports) if args.reports else _default_reports(exp.name)
        files = analyze_results(store.root, reports, progress=not args.no_progress, **overrides)
        print(f"reports: {reports} ({len(files)} files; see {reports / 'report.md'})")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from dptune.config import load_experiment
    from dptune.sweep._manifest import init_results
    from dptune.sweep._worker import worker

    exp = load_experiment(args.config)
    results = Path(args.results) if args.results else _default_results(exp.name)
    init_results(exp, results, args.storage)
    n = worker(exp, results, args.storage)
    print(f"worker finished: {n} units computed here")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from dptune.config import load_experiment
    from dptune.sweep._status import status

    exp = load_experiment(args.config) if args.config else None
    if args.results is None and exp is None:
        raise input_error("status", "RESULTS_DIR", "give a results directory or --config")
    results = Path(args.results) if args.results else _default_results(exp.name)
    st = status(exp, results, args.storage)
    print(f"{'algorithm':<16}{'total':>8}{'done':>8}{'running':>9}{'failed':>8}{'remaining':>11}")
    for name, s in st["algorithms"].items():
        print(f"{name:<16}{s['total']:>8}{s['done']:>8}{s['running']:>9}{s['failed']:>8}{s['remaining']:>11}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from dptune.analysis._analyze import analyze_results
    from dptune.store._store import ResultStore

    store = ResultStore(args.results_dir)
    name = store.manifest()["experiment"]
    reports = Path(args.reports) if args.reports else _default_reports(name)
    overrides = _analysis_overrides(args)
    files = analyze_results(store.root, reports, progress=not args.no_progress, **overrides)
    print(f"reports: {reports} ({len(files)} files; see {reports / 'report.md'})")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from dptune.store._trec import evaluate_run, read_qrels, read_run, read_train, write_per_user

    df = evaluate_run(read_run(args.run), read_qrels(args.qrels), read_train(args.train),
                      cutoffs=_cutoffs(args.cutoffs), threshold=args.threshold,
                      relevance_aware=args.novelty == "relevance-aware")
    write_per_user(df, args.out)
    print(f"{args.out}: {df['user'].nunique()} users x {df.groupby(['metric', 'cutoff']).ngroups} metric@cutoff")
    return 0


def cmd_dp(args: argparse.Namespace) -> int:
    from dptune.analysis._analyze import analyze_runs

    files = analyze_runs(args.runs, args.qrels, args.train, Path(args.reports),
                         cutoffs=_cutoffs(args.cutoffs), threshold=args.threshold,
                         n_pairs=args.pairs, seed=args.seed, test=args.test)
    print(f"reports: {args.reports} ({len(files)} files)")
    return 0


def cmd_subgrid(args: argparse.Namespace) -> int:
    from dptune.analysis._analyze import write_subgrid

    out = write_subgrid(args.results_dir, args.algorithm, args.metric, args.cutoff, args.radius,
                        args.out, grid=args.grid)
    print(f"sub-grid written to {out}")
    return 0


def _config_arg(text: str) -> tuple[str, int]:
    alg, sep, cid = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return alg, int(cid)
    except ValueError:
        raise input_error("--config-id", None, f"expected ALGORITHM=CONFIG_ID, got {text!r}") from None


def cmd_seeds(args: argparse.Namespace) -> int:
    from dptune.studies import run_seeds_study

    configs = dict(_config_arg(t) for t in args.config_id)
    grid = None if args.grid is None else [g for g in args.grid.split(",") if g.strip()]
    try:
        files = run_seeds_study(args.config, args.seeds, args.out, configs or None,
                                jobs=args.jobs, progress=not args.no_progress,
                                cache_dir=args.cache, grid_algorithms=grid,
                                grid_seeds=args.grid_seeds)
    except KeyboardInterrupt:
        print("dptune: interrupted; finished seeds are cached, run the same command to resume",
              file=sys.stderr)
        return 130
    print(f"seeds: {len(files)} files in {files[-1].parent} (see {files[-1]})")
    return 0


def cmd_slices(args: argparse.Namespace) -> int:
    from dptune.studies import run_slices_study

    files = run_slices_study(args.results_dir, args.out, args.reports, base=args.base,
                             n_pairs=args.pairs, seed=args.seed, test=args.test,
                             experiment=args.experiment, cutoff=args.cutoff)
    print(f"slices: {len(files)} files in {args.out} (see {files[-1]})")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    from dptune.data._dataset import dataset_stats, fetch, load_dataset

    if args.data_cmd == "fetch":
        path = fetch(args.name)
        ds = load_dataset(args.name)
        st = dataset_stats(ds)
        print(f"{args.name}: {path} ({st['ratings']:,} ratings, {st['users']:,} users, {st['items']:,} items)")
        return 0
    ds = load_dataset(args.source, fmt=args.format)
    st = dataset_stats(ds)
    print("| Dataset | Users | Items | Ratings | Sparsity |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| {ds.name} | {st['users']} | {st['items']} | {st['ratings']} | {100 * st['sparsity']:.2f}% |")
    for line in ds.log:
        print(f"note: {line}")
    return 0


def _noise_and_stats_flags(p: argparse.ArgumentParser, analyze: bool = False) -> None:
    """Flags of the analyses beyond the paper shared by ``run`` and ``analyze`` ([analysis])."""
    if analyze:
        seeds_help = "use at most N seeds of the stored noise floor (0 = no noise floor)"
        configs_help = "use the N best configurations of the stored noise floor"
    else:
        seeds_help = "seeds per configuration for the A/A noise floor (default 5; 0 = off)"
        configs_help = "configurations per stochastic algorithm in the noise floor (default 1 = best)"
    p.add_argument("--noise-seeds", type=int, metavar="N", help=seeds_help)
    p.add_argument("--noise-configs", type=int, metavar="N", help=configs_help)
    p.add_argument("--importance", action=argparse.BooleanOptionalAction, default=None,
                   help="fANOVA / PED-ANOVA hyperparameter importance (default on)")
    if not analyze:
        p.add_argument("--bootstrap", type=int,
                       help="bootstrap replicates for DP confidence intervals (default from config)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    p = argparse.ArgumentParser(prog="dptune", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="sweep an experiment (resumable), then analyze it")
    r.add_argument("config")
    r.add_argument("--results", help="results directory (default results/<name>)")
    r.add_argument("--reports", help="reports directory (default reports/<name>)")
    r.add_argument("--storage", help="optuna storage URL (default sqlite in the results directory)")
    r.add_argument("--jobs", type=int, help="parallel worker processes (default from config)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-analyze", action="store_true", help="skip the analysis stage")
    _noise_and_stats_flags(r)
    r.set_defaults(func=cmd_run)

    w = sub.add_parser("worker", help="join a sweep as one more worker (any machine)")
    w.add_argument("config")
    w.add_argument("--storage", required=True, help="shared optuna storage URL (e.g. postgresql://...)")
    w.add_argument("--results", help="shared results directory")
    w.set_defaults(func=cmd_worker)

    s = sub.add_parser("status", help="done / running / failed / remaining units")
    s.add_argument("results", nargs="?")
    s.add_argument("--config")
    s.add_argument("--storage")
    s.set_defaults(func=cmd_status)

    a = sub.add_parser("analyze", help="discriminative power tables and figures from a results directory")
    a.add_argument("results_dir")
    a.add_argument("--reports")
    a.add_argument("--pairs", type=int)
    a.add_argument("--seed", type=int)
    a.add_argument("--test", choices=["t", "wilcoxon", "bootstrap", "permutation"])
    a.add_argument("--alpha", type=float)
    a.add_argument("--correction", choices=["none", "holm", "bh"])
    a.add_argument("--bootstrap", type=int, help="bootstrap replicates for DP confidence intervals")
    a.add_argument("--max-pairs", type=int, metavar="N",
                   help="pairs of the robust DP: all pairs when there are at most N, else a seeded "
                        "sample of N (default 1000; 0 = off)")
    a.add_argument("--stability", type=int, metavar="S",
                   help="pair seeds a significance claim must survive (default 5, lowered when "
                        "not affordable; 0 = one seed)")
    a.add_argument("--min-fold-users", type=int, metavar="N",
                   help="refuse validation folds with fewer users (default 20; 0 = no minimum)")
    a.add_argument("--n-resamples", type=int,
                   help="resamples of the bootstrap/permutation significance tests (default 1000)")
    _noise_and_stats_flags(a, analyze=True)
    a.add_argument("--no-progress", action="store_true", help="no progress bar")
    a.set_defaults(func=cmd_analyze)

    e = sub.add_parser("evaluate", help="per-user metrics of an external TREC run")
    e.add_argument("--run", required=True)
    e.add_argument("--qrels", required=True)
    e.add_argument("--train", required=True)
    e.add_argument("--cutoffs", default="1,5,10")
    e.add_argument("--threshold", type=float, default=4.0)
    e.add_argument("--novelty", choices=["relevance-aware", "relevance-unaware"], default="relevance-aware")
    e.add_argument("--out", required=True)
    e.set_defaults(func=cmd_evaluate)

    d = sub.add_parser("dp", help="discriminative power of a set of external TREC runs")
    d.add_argument("--runs", required=True, help="directory of run files (one per system; sub-directories = folds)")
    d.add_argument("--qrels", required=True, help="qrels file, or directory with one per fold")
    d.add_argument("--train", required=True, help="train file, or directory with one per fold")
    d.add_argument("--reports", default="reports/runs")
    d.add_argument("--cutoffs", default="1,5,10")
    d.add_argument("--threshold", type=float, default=4.0)
    d.add_argument("--pairs", type=int, default=25)
    d.add_argument("--seed", type=int, default=42)
    d.add_argument("--test", choices=["t", "wilcoxon", "bootstrap", "permutation"], default="t")
    d.set_defaults(func=cmd_dp)

    g = sub.add_parser("subgrid", help="the paper's sub-grid around the best value of each hyperparameter")
    g.add_argument("results_dir")
    g.add_argument("--algorithm", default="bpr-mf")
    g.add_argument("--metric", default="ndcg")
    g.add_argument("--cutoff", type=int, default=10)
    g.add_argument("--radius", type=int, default=2)
    g.add_argument("--out", required=True)
    g.add_argument("--grid", help="grid to place the sub-grid in (default: the swept grid), e.g. grids/bpr-mf.toml")
    g.set_defaults(func=cmd_subgrid)

    sd = sub.add_parser("seeds", help="split-seed study: hold-out vs CV over data-split seeds (dptune seeds -h)",
                        description="Split-seed study: accuracy under S data-split seeds, random hold-out vs k-fold CV, "
                        "and the stability of the best configuration and of the DP metric ranking.")
    sd.add_argument("config", help="experiment TOML, optionally with a [seeds] table")
    sd.add_argument("--seeds", type=int, default=None, help="number of data-split seeds (default 20)")
    sd.add_argument("--out", default=None, help="report directory (default reports/seeds-<name>)")
    sd.add_argument("--cache", default=None, help="per-seed results (default results/seeds-<name>)")
    sd.add_argument("--jobs", type=int, default=1, help="parallel processes")
    sd.add_argument("--config-id", action="append", default=[], metavar="ALG=ID",
                    help="run ALG with grid configuration ID instead of the default")
    sd.add_argument("--grid", default=None, help="comma-separated algorithms for the grid part ('' to skip)")
    sd.add_argument("--grid-seeds", type=int, default=None, help="seeds of the grid part")
    sd.add_argument("--no-progress", action="store_true")
    sd.set_defaults(func=cmd_seeds)

    sl = sub.add_parser("slices", help="metrics, miss rate and DP per user slice (dptune slices -h)",
                        description="Metrics, miss rate and DP per user slice (history length, popularity of held-out "
                        "items; log-scaled bins) of a results directory.")
    sl.add_argument("results_dir")
    sl.add_argument("--out", required=True, help="directory for the slice report")
    sl.add_argument("--reports", default=None, help="main reports directory (its pairs.csv)")
    sl.add_argument("--experiment", default=None, help="experiment TOML (default: the manifest's)")
    sl.add_argument("--base", type=int, default=2, help="base of the log-scaled bins (default 2)")
    sl.add_argument("--pairs", type=int, default=None, help="pairs P (default: the manifest's)")
    sl.add_argument("--seed", type=int, default=None, help="pair-sampling seed")
    sl.add_argument("--test", default=None, help="t | wilcoxon | bootstrap | permutation")
    sl.add_argument("--cutoff", type=int, default=None, help="cutoff of the figure and tables")
    sl.set_defaults(func=cmd_slices)

    dt = sub.add_parser("data", help="fetch data sets or print their statistics (Table 1)")
    dsub = dt.add_subparsers(dest="data_cmd", required=True)
    f = dsub.add_parser("fetch", help="download ml-100k or ml-1m into the cache ($DPTUNE_DATA)")
    f.add_argument("name", choices=["ml-100k", "ml-1m"])
    i = dsub.add_parser("info", help="Table 1 statistics of a data set name or file")
    i.add_argument("source")
    i.add_argument("--format", default="auto")
    dt.set_defaults(func=cmd_data)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; user errors print one line and return 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DptuneError as err:
        print(f"dptune: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("dptune: interrupted; finished units are kept, run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
