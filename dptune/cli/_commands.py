"""The commands: each checks its inputs, then makes one or two calls into the Python API.

Every check that can fail runs before any work: flags (while parsing), the experiment and its
grids, the writability of the results and reports directories, then, inside the API, the data,
every fold and the optuna storage. A problem is one line naming the flag or file and field,
exit code 2 (:mod:`dptune.errors`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dptune.cli._flags import RUN_OPTIONS, analysis_overrides, results_of
from dptune.errors import (
    check_not_working_dir,
    check_out_file,
    check_writable_dir,
    input_error,
)

if TYPE_CHECKING:
    from dptune.config import Experiment


def _default(kind: str, name: str) -> Path:
    return Path(kind) / name


def _check_reports(reports: str | Path, results: str | Path | None = None,
                   inputs: dict[str, str | Path | None] | None = None) -> None:
    """The reports folder can be written (or made) and lies outside every results directory,
    ``results`` (the command's own, which may not exist yet) included: a report's files in a
    store would replace its files or pass for its parts. It is not the working directory or a
    folder above it (the report folder is published by one rename, which would pull the shell's
    folder away), nor the folder of an input or a folder inside it (``inputs``: flag -> path,
    e.g. ``--runs``, whose reader would then take the report's files for its own), nor the
    folder an input file lies in (a per-user table named ``dp.csv``, qrels named ``pairs.csv``:
    the report's file of that name would replace it; which names the report writes is known
    only after the analysis, so any input file there is refused). One line naming --reports."""
    from dptune.store._outside import check_outside_store

    check_writable_dir(Path(reports), "--reports")
    check_outside_store(reports, "--reports", results)
    check_not_working_dir(reports, "--reports")  # before any work (the writer checks again)
    target = Path(reports).resolve()
    for flag, path in (inputs or {}).items():
        if path is None or not str(path).strip():
            continue
        source = Path(path).resolve()
        if target == source or source in target.parents:
            raise input_error("--reports", None, f"{reports} is inside {flag} {path}, whose "
                              "files the command reads: give a folder outside it")
        if source.parent == target and source.is_file():
            raise input_error("--reports", None, f"{reports} holds {flag} {path}, which the "
                              "report could replace (it writes its files there): give another "
                              "folder, or move the file")


def cmd_run(args: argparse.Namespace) -> int:
    """``dptune run``: the sweep of the Python API (resumable, noise floor included), then the
    analysis."""
    from dptune._api import analyze_results
    from dptune.config import load_experiment
    from dptune.sweeper._run import run_sweep

    overrides = analysis_overrides(args)
    if args.no_analyze:  # only the noise floor's and the folds' flags act on the sweep
        from dptune.cli._flags import ANALYSIS_FLAGS, SWEEP_ANALYSIS_FIELDS

        idle = [f.flag for f in ANALYSIS_FLAGS
                if f.field in overrides and f.field not in SWEEP_ANALYSIS_FIELDS]
        if idle:
            raise input_error(idle[0], None, "not with --no-analyze, which skips the analysis "
                              "it sets: give it to dptune analyze, or leave out --no-analyze")
    exp = load_experiment(args.config)
    exp = _on_device(exp, args.device)
    results = Path(args.results) if args.results else _default("results", exp.name)
    reports = Path(args.reports) if args.reports else _default("reports", exp.name)
    check_writable_dir(results, "--results")
    if not args.no_analyze:
        _check_reports(reports, results, {
            "the experiment file": exp.source, "data.source": exp.data_path,
            **{f"the grid of {a.name}": a.grid_path for a in exp.algorithms if a.grid}})
    progress = not args.no_progress
    store, nr = run_sweep(exp, results, jobs=args.jobs or exp.sweep.jobs, progress=progress,
                          storage=args.storage, noise_seeds=overrides.get("noise_seeds"),
                          noise_configs=overrides.get("noise_configs"), budget=args.budget,
                          min_fold_users=overrides.get("min_fold_users"))
    print(f"results: {store.root}")
    if nr is not None:
        print(f"noise floor: {len(nr.parts)} parts ({nr.computed} computed now), {nr.seeds} seeds"
              + (f"; none for {', '.join(nr.skipped)} (deterministic)" if nr.skipped else ""))
    if not args.no_analyze:
        record_reports(store.root, reports)
        files = analyze_results(store.root, reports, progress=progress, **overrides)
        print(f"reports: {reports} ({len(files)} files; see {reports / 'report.md'})")
    return 0


#: The file of a results directory in which ``dptune run`` records the reports folder its
#: analysis writes (one line, the folder's absolute path), so that ``dptune status`` checks
#: that folder's report.md. Plain text, not ``.json``: it is not a result, and ``status``
#: takes any newer ``.parquet``, ``.csv`` or ``.json`` file for one (a stale report).
REPORTS_RECORD = "reports.txt"


def record_reports(results: Path, reports: Path) -> None:
    """Record ``reports`` in ``results`` (:data:`REPORTS_RECORD`), before the analysis writes
    it; the file is left untouched when it already says so. Only ``dptune run`` records: it
    owns its results directory, while ``dptune analyze`` only reads one (and may write its
    reports anywhere, any number of times)."""
    from dptune._atomic import write_text

    path = Path(results) / REPORTS_RECORD
    text = f"{Path(reports).resolve()}\n"
    if recorded_text(path) != text:
        write_text(path, text)


def recorded_text(path: Path) -> str | None:
    """The text of a record file, or ``None`` when it cannot be read as text."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def recorded_reports(results: Path) -> Path | None:
    """The reports folder that ``dptune run`` recorded in ``results`` (relative to the working
    directory when it lies inside it), or ``None`` when none is recorded."""
    text = (recorded_text(Path(results) / REPORTS_RECORD) or "").strip()
    if not text or "\n" in text:
        return None
    path = Path(text)
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _on_device(exp: Experiment, device: str | None) -> Experiment:
    """The experiment with ``--device`` applied; checks, before any work, that the device's
    engine is installed and sees a device (one line, exit 2 otherwise)."""
    from dataclasses import replace

    from dptune.engine import engine_for

    if device is not None:
        exp = replace(exp, sweep=replace(exp.sweep, device=device))
    if device is not None:
        engine_for(device, "--device", None)
    else:
        engine_for(exp.sweep.device, exp.source)
    return exp


def cmd_worker(args: argparse.Namespace) -> int:
    """``dptune worker``: one more worker on a shared sweep, with the sweep's progress bar and
    ETA (every worker's parts) unless ``--no-progress``."""
    from dptune.config import load_experiment
    from dptune.sweeper._manifest import init_results
    from dptune.sweeper._worker import worker

    exp = _on_device(load_experiment(args.config), None)
    results = Path(args.results) if args.results else _default("results", exp.name)
    check_writable_dir(results, "--results")
    _, _, design = init_results(exp, results, args.storage, budget=args.budget)
    n = worker(exp, results, args.storage, design=design, progress=not args.no_progress)
    print(f"worker finished: {n} units computed here")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """``dptune status``: validation units per algorithm (of the budget, and m of M units of the
    full grid), the projected time, then test split, noise floor, analysis."""
    from dptune.config import load_experiment
    from dptune.store._identity import Foreign
    from dptune.store._integrity import quarantine_dir
    from dptune.sweeper._status import status

    if args.reports and Path(args.reports).exists() and not Path(args.reports).is_dir():
        # a report folder to read: a file there is a mistyped flag (the data, the TOML)
        raise input_error("--reports", None, f"{args.reports} is a file, not a report folder")
    exp = load_experiment(args.config) if args.config else None
    results = results_of(args, _default("results", exp.name) if exp else None)
    reports = args.reports or recorded_reports(results)
    # without --storage: the experiment's [sweep] storage (--config's, else the recorded one)
    st = status(exp, results, args.storage, reports=reports, source="--config")
    # the rows count parts (a unit on one fold); the units: line below counts whole units. Done,
    # running, failed and to do split the parts: each part in one of them
    print(f"{'algorithm':<16}{'parts':>8}{'done':>8}{'running':>9}{'failed':>8}{'to do':>8}")
    for name, s in st["algorithms"].items():
        to_do = s["remaining"] - s["running"] - s["failed"]
        print(f"{name:<16}{s['total']:>8}{s['done']:>8}{s['running']:>9}{s['failed']:>8}"
              f"{to_do:>8}")
    print(f"{'units:':<13}" + "; ".join(f"{name} {s['units']['text']}"
                                        for name, s in st["algorithms"].items()))
    if st["budget"] is not None:
        print(f"{'budget:':<13}{st['budget']} (whole rounds of the design order)")
    if st["projection"] is not None:
        print(f"{'projection:':<13}{st['projection']['text']}")
    for key, label in (("test", "test split"), ("noise", "noise floor"), ("analysis", "analysis")):
        print(f"{label + ':':<13}{st[key]['text']}")
    if st.get("storage_problem"):
        print(f"{'storage:':<13}{st['storage_problem']}")
    for path, why in st["damaged"]:
        if isinstance(why, Foreign):
            print(f"foreign:     {path} (not from this experiment: {why}); `dptune run` sets it "
                  f"aside in {quarantine_dir(Path(path))}/")
        else:
            print(f"damaged:     {path} ({why}); `dptune run` will recompute it")
    for line in st["side_files"]:  # configs.csv, users.csv: analyze refuses, run rewrites
        print(f"damaged:     {line}")
    return 0


def _store(results: Path):
    """The result store at ``results``; not a results directory is one line naming it."""
    from dptune.store._store import ResultStore

    store = ResultStore(results)
    store.manifest()  # one line when it is not a results directory
    return store


def cmd_analyze(args: argparse.Namespace) -> int:
    """``dptune analyze``: tables, figures and report.md of a results directory."""
    from dptune._api import analyze_results

    store = _store(results_of(args))
    reports = Path(args.reports) if args.reports else _default("reports", store.manifest()["experiment"])
    _check_reports(reports, store.root)
    files = analyze_results(store.root, reports, progress=not args.no_progress,
                            **analysis_overrides(args))
    print(f"reports: {reports} ({len(files)} files; see {reports / 'report.md'})")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``dptune evaluate``: per-user metrics of one external TREC run; the users left out for
    having no relevant item are counted on stdout and named on stderr."""
    from dptune.store._trec import (
        coverage_lines,
        evaluate_run,
        not_evaluated_line,
        read_qrels,
        read_run,
        read_train,
        write_per_user,
    )

    check_out_file(args.out, "--out", {"--run": args.run, "--qrels": args.qrels,
                                       "--train": args.train})
    if Path(args.out).suffix.lower() in {".parquet", ".pq", ".tsv", ".txt"}:
        # dp --per-user reads a file by its suffix: CSV text named .parquet could not be read
        raise input_error("--out", None, f"{args.out} is named as another format than the CSV "
                          "this writes: give the file a .csv name")
    from dptune.store._outside import check_outside_store

    check_outside_store(args.out, "--out")
    df = evaluate_run(read_run(args.run), read_qrels(args.qrels), read_train(args.train),
                      cutoffs=args.cutoffs, threshold=args.threshold,
                      relevance_aware=args.novelty == "relevance-aware", order=args.order)
    write_per_user(df, args.out)
    left = len(df.attrs.get("not_evaluated", []))
    print(f"{args.out}: {df['user'].nunique()} users x {df.groupby(['metric', 'cutoff']).ngroups} "
          f"metric@cutoff" + (f"; {left} user{'' if left == 1 else 's'} without a relevant item "
                              "not evaluated" if left else ""))
    line = not_evaluated_line(df, args.qrels, args.threshold)
    for note in ([line] if line else []) + coverage_lines(
            df.attrs["missing_from_run"], df.attrs["relevant_in_train"], args.run, args.qrels,
            args.train, int(df["user"].nunique())):
        print(f"dptune: note: {note}", file=sys.stderr)
    return 0



def cmd_dp(args: argparse.Namespace) -> int:
    """``dptune dp``: the analysis and report of a sweep on external runs or a per-user table,
    with the analysis flags and defaults of ``dptune analyze``."""
    from dptune._per_user import analyze_per_user, analyze_runs

    overrides = analysis_overrides(args)
    given = [f for f in ("runs", "qrels", "train") if getattr(args, f) is not None]
    scoring = [f for f in RUN_OPTIONS if getattr(args, f) is not None]
    if args.per_user is not None:
        if given:
            raise input_error(f"--{given[0]}", None, "not with --per-user (give one or the other)")
        if scoring:  # they say how runs are scored; a per-user table is scored already
            raise input_error(f"--{scoring[0]}", None, "only with --runs, not with --per-user "
                              "(the per-user table holds its metric values already)")
        _check_reports(args.reports, inputs={"--per-user": args.per_user,
                                             "--configs": args.configs})
        files = analyze_per_user(args.per_user, args.reports, args.configs,
                                 progress=not args.no_progress, label=args.label, **overrides)
        print(f"reports: {args.reports} ({len(files)} files)")
        return 0
    for flag in ("runs", "qrels", "train"):
        if getattr(args, flag) is None:
            raise input_error(f"--{flag}", None, "required (or give --per-user FILE)")
    if args.configs is not None:
        raise input_error("--configs", None, "only with --per-user")
    for name, default in RUN_OPTIONS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    for flag, path in (("--qrels", args.qrels), ("--train", args.train)):
        if not Path(path).exists():
            raise input_error(flag, None, f"{path} does not exist")
    if not Path(args.runs).is_dir():
        raise input_error("--runs", None, f"{args.runs} is not a directory of run files")
    _check_reports(args.reports, inputs={"--runs": args.runs, "--qrels": args.qrels,
                                         "--train": args.train})
    files = analyze_runs(args.runs, args.qrels, args.train, args.reports, cutoffs=args.cutoffs,
                         threshold=args.threshold,
                         relevance_aware=args.novelty == "relevance-aware", order=args.order,
                         progress=not args.no_progress,
                         on_note=lambda line: print(f"dptune: note: {line}", file=sys.stderr),
                         label=args.label, **overrides)
    print(f"reports: {args.reports} ({len(files)} files)")
    return 0


def cmd_subgrid(args: argparse.Namespace) -> int:
    """``dptune subgrid``: the paper's sub-grid around the best configuration; warns when that
    configuration sits on the edge of the grid. ``--algorithm`` left out means the store's only
    algorithm with hyperparameters to vary; with several, it is asked for in one line listing
    them (:func:`dptune.analysis.subgrid.subgrid_algorithm`), never guessed."""
    from dptune.analysis.subgrid import write_subgrid

    store = _store(results_of(args))
    if not store.part_paths():
        raise input_error(store.root, None, "holds no results yet (no unit finished); "
                          "run the sweep first (dptune run)")
    written = write_subgrid(store, args.algorithm, args.metric, args.cutoff, args.radius,
                            args.out, grid=args.grid)
    for warning in (written.sample_warning, written.edge_warning):
        if warning:
            print(f"dptune: warning: {warning}", file=sys.stderr)
    print(f"sub-grid written to {written.path}")
    return 0


def _config_id(text: str) -> tuple[str, int]:
    alg, sep, cid = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return alg, int(cid)
    except ValueError:
        raise input_error("--config-id", None, f"expected ALGORITHM=CONFIG_ID, got {text!r}") from None


def _config_ids(texts: list[str]) -> dict[str, int]:
    """``{algorithm: config_id}`` of the ``--config-id ALG=ID`` flags; an algorithm given twice
    is one line naming the flag (the later one would silently win)."""
    out: dict[str, int] = {}
    for text in texts:
        alg, cid = _config_id(text)
        if alg in out:
            raise input_error("--config-id", alg, f"given twice ({alg}={out[alg]} and {text}); "
                              "give one configuration per algorithm")
        out[alg] = cid
    return out


def cmd_seeds(args: argparse.Namespace) -> int:
    """``dptune seeds``: the split-seed study. Everything is checked before the first model
    trains: the flags, the experiment and its ``[seeds]`` table (read here, once), each
    ``--config-id`` against the experiment's grids, and the results and reports directories
    (given or default)."""
    from dptune.studies import run_seeds_study
    from dptune.studies.seeds.settings import check_once, load_seed_experiment
    from dptune.studies.seeds.study import seeds_folder_name

    configs = _config_ids(args.config_id)
    grid = None if args.grid is None else [g.strip() for g in args.grid.split(",") if g.strip()]
    check_once(grid or (), "--grid", None, "algorithm")
    exp, settings = load_seed_experiment(args.config)
    folder = seeds_folder_name(exp)
    results, label = ((args.results, "--results") if args.results else
                      (settings.cache, f"{exp.source}: seeds.cache") if settings.cache else
                      (str(_default("results", folder)), "--results"))
    check_writable_dir(Path(results), label)
    from dptune.store._outside import check_outside_store

    check_outside_store(results, label)  # its stores would be written into a sweep's store
    reports = args.reports or str(_default("reports", folder))
    _check_reports(reports)  # the study's --results is a cache of its own stores, not one
    files = run_seeds_study(exp, args.seeds, reports, configs or None, jobs=args.jobs,
                            progress=not args.no_progress, settings=settings,
                            cache_dir=results, grid_algorithms=grid, grid_seeds=args.grid_seeds)
    print(f"seeds: {len(files)} files in {files[-1].parent} (see {files[-1]})")
    return 0


def cmd_slices(args: argparse.Namespace) -> int:
    """``dptune slices``: metrics, miss rate and DP per user slice.

    The slice report goes to ``--reports``; the main report whose pairs it reuses is
    ``--main-reports``."""
    from dptune.studies import run_slices_study

    results = results_of(args)
    _check_reports(args.reports, results)  # a flag, checked before the store is read
    store = _store(results)
    files = run_slices_study(store.root, args.reports, args.main_reports, base=args.base,
                             n_pairs=args.pairs, seed=args.seed, test=args.test,
                             experiment=args.experiment, cutoff=args.cutoff,
                             min_users=args.min_users, progress=not args.no_progress)
    print(f"slices: {len(files)} files in {args.reports} (see {files[-1]})")
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    """``dptune data fetch``: download a MovieLens data set into the cache."""
    from dptune.data._dataset import dataset_stats, fetch, load_dataset

    path = fetch(args.name)
    st = dataset_stats(load_dataset(args.name))
    print(f"{args.name}: {path} ({st['ratings']:,} ratings, {st['users']:,} users, {st['items']:,} items)")
    return 0


def cmd_data_info(args: argparse.Namespace) -> int:
    """``dptune data info``: Table 1 statistics of a data set."""
    from dptune.data._dataset import dataset_stats, load_dataset
    from dptune.data._options import parse_columns

    columns = parse_columns(args.columns) if args.columns is not None else None
    ds = load_dataset(args.source, fmt=args.format, columns=columns, sep=args.sep,
                      header=args.header)
    st = dataset_stats(ds)
    print("| Dataset | Users | Items | Ratings | Sparsity |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| {ds.name} | {st['users']} | {st['items']} | {st['ratings']} | {100 * st['sparsity']:.2f}% |")
    for line in ds.log:
        print(f"note: {line}")
    return 0


def cmd_data_synth(args: argparse.Namespace) -> int:
    """``dptune data synth``: write a seeded synthetic data set of a given shape."""
    from dptune.data._synth import shape_of, write_synthetic

    probs = None
    if args.rating_probs is not None:
        try:
            probs = tuple(float(x) for x in args.rating_probs.split(","))
        except ValueError:
            raise input_error("--rating-probs", None, "expected 5 comma-separated numbers, got "
                              f"{args.rating_probs!r}") from None
    shape = shape_of(args.preset, "data synth", users=args.users, items=args.items,
                     ratings=args.ratings, min_user_ratings=args.min_user_ratings,
                     popularity_exponent=args.popularity_exponent,
                     activity_exponent=args.activity_exponent, rating_probs=probs)
    from dptune.store._outside import check_outside_store

    check_outside_store(args.out, "--out")  # as every --out: never into a results directory
    df = write_synthetic(args.out, shape, args.seed, "data synth")
    print(f"{args.out}: {len(df):,} ratings, {df['user'].nunique():,} users, "
          f"{df['item'].nunique():,} items (synthetic, seed {args.seed})")
    return 0
