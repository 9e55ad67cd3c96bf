"""Split-seed study (Wegmeth et al., "The Effect of Random Seeds for Data Splitting on
Recommendation Accuracy", PERSPECTIVES @ RecSys 2023): :func:`run_seeds_study`.

How much does the accuracy of a recommender depend on the random seed that splits the data, and
does k-fold cross-validation tame that dependence compared with a single random hold-out?

For S data-split seeds ``s_0 .. s_{S-1}`` (``s_i = derive_seed(split seed, "seed-study", i)``):

- **hold-out**: ``split.random_holdout(ratings, 0.8, s_i)`` (per-user random 80/20); one model per
  algorithm is trained on the training part and evaluated on the held-out part;
- **cross-validation**: ``split.kfold_labels(ratings, 5, s_i)`` (global random 5-fold); one model
  per fold, evaluated on that fold; the seed's value is the mean over the 5 folds.

Every algorithm runs with one *default configuration* (:mod:`dptune.studies.seeds.settings`).
Evaluation is the pipeline's: "all unrated items", relevance = rating >= threshold, users with
at least one relevant held-out item, per-user metrics averaged over users. The statistics
(``pct_i = 100 v_i / mean``, Mann-Whitney U of ``|pct_i - 100|`` hold-out vs CV per cell,
Holm-adjusted over the study's cells, and pooled per algorithm over one value per seed; Kendall's
tau-b between seeds' DP rankings) are in :mod:`dptune.studies.seeds.stats`.

Beyond the paper, for a grid (default: the experiment's KNN algorithms, whose whole grid costs
one similarity per fold): on the CV folds of every seed, the whole grid is trained and evaluated
(per-user values kept in one :class:`~dptune.store.ResultStore` per seed), the best
configuration per metric@N is taken with ``ResultStore.best_configs`` and DP per metric@N with
:func:`dptune.analysis.dp.fold_loop.run_fold_loop` (same pairs for every seed).

The modules of this package: ``settings``, computation (``runs``, ``stats``), ``figure``,
``report``; this one ties them together and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from dptune._atomic import staged_folder
from dptune.config import Experiment
from dptune.data._split import check_train_ratio
from dptune.errors import check_int, check_report_folder, input_error
from dptune.report import save_figure
from dptune.studies.seeds.figure import seeds_figure
from dptune.studies.seeds.report import seeds_report_md, summary_table
from dptune.studies.seeds.runs import (
    SeedPlan,
    execute,
    fingerprint,
    grid_rows,
    read_defaults,
    study_ratings,
)
from dptune.studies.seeds.settings import (
    MAX_SEEDS,
    SPLITS,
    SeedSettings,
    check_algorithm,
    check_choices,
    check_grid_seeds,
    load_seed_experiment,
    resolve_configs,
    split_seeds,
    validate_settings,
)
from dptune.studies.seeds.stats import (
    grid_stability,
    kendall_table,
    order_rows,
    per_seed_table,
    pooled_tests,
    summarize,
)
from dptune.vocab import CSV_FLOAT

__all__ = ["run_seeds_study", "seeds_folder_name"]


def seeds_folder_name(exp: Experiment) -> str:
    """The name of the study's results and reports folders (``results/<this>``,
    ``reports/<this>``): ``<name>`` when the experiment is named ``seeds...``, else
    ``seeds-<name>``. (The optuna study of a sweep is named by
    :func:`dptune.sweeper._storage.study_name`.)"""
    return exp.name if exp.name.startswith("seeds") else f"seeds-{exp.name}"


def _write(path: Path, text: str) -> Path:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return path


def _csv(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False, float_format=CSV_FLOAT, lineterminator="\n")
    return path


def _settings(exp: Experiment, st: SeedSettings, n_seeds: int | None,
              configs: Mapping[str, Any] | None, grid_algorithms: Sequence[str] | None,
              grid_seeds: int | None) -> SeedSettings:
    """The file's settings with the caller's overrides applied and checked, before anything
    is computed, by the rules that check the file's ``[seeds]`` table
    (:mod:`dptune.studies.seeds.settings`); a bad override is one line naming its flag
    (``--seeds``, ``--config-id``, ``--grid``, ``--grid-seeds``), not the file's key it
    replaces, with the same problem text as the file's key would get."""
    if n_seeds is not None:
        st = replace(st, n_seeds=check_int(n_seeds, "--seeds", "", 2, MAX_SEEDS))
    if st.n_seeds < 2:
        raise input_error("--seeds", None, "the study needs at least 2 seeds")
    if configs is not None and not isinstance(configs, Mapping):
        raise input_error("--config-id", None, "needs a table algorithm -> configuration id (or "
                          f"hyperparameter values), got {type(configs).__name__}")
    if configs:
        check_choices(exp, configs, "--config-id")
        st = replace(st, configs={**dict(st.configs), **dict(configs)})
    if grid_algorithms is not None:
        for a in grid_algorithms:
            check_algorithm(exp, a, "--grid", None)
        st = replace(st, grid_algorithms=tuple(grid_algorithms))
    if grid_seeds is not None:
        st = replace(st, grid_seeds=check_grid_seeds(grid_seeds, "--grid-seeds", None))
    if st.grid_seeds is not None and st.grid_seeds > st.n_seeds:
        # the grid part runs on the first grid_seeds of the study's seeds: more than there
        # are was cut to n_seeds without a word, a study of other seeds than asked for
        where = (("--grid-seeds", None) if grid_seeds is not None
                 else (exp.source, "seeds.grid_seeds"))
        of = "--seeds" if n_seeds is not None else "seeds.n_seeds"
        raise input_error(*where, f"{st.grid_seeds} seeds for the grid part, more than the "
                          f"study's {st.n_seeds} ({of}): the grid part runs on the first of "
                          f"the study's seeds; give at most {st.n_seeds} (0 skips it)")
    validate_settings(exp, st)
    return st


def _plan(exp: Experiment, st: SeedSettings, cache_dir: str | Path | None) -> SeedPlan:
    """Configurations, seeds, grid part and cache directory (created) of the study."""
    chosen = resolve_configs(exp, st.configs)
    galgs = st.grid_algorithms
    if galgs is None:
        galgs = tuple(a.name for a in exp.algorithms if a.type in ("userknn", "itemknn"))
    n_grid = st.n_seeds if st.grid_seeds is None else min(st.grid_seeds, st.n_seeds)
    if not galgs:
        n_grid = 0
    n_grid = check_grid_seeds(n_grid, exp.source, "seeds.grid_seeds")  # a SeedSettings given whole
    # the data read and checked (its cutoffs, the hold-out's ratio) before the cache is made
    check_train_ratio(study_ratings(exp)[0], st.train_ratio, exp.source, "seeds.train_ratio")
    root = Path(cache_dir or st.cache or Path("results") / seeds_folder_name(exp))
    p = SeedPlan(exp=exp, settings=st, configs=chosen, seeds=tuple(split_seeds(exp, st.n_seeds)),
                 grid_algorithms=tuple(galgs), grid_seeds=n_grid,
                 cache=root / fingerprint(exp, st, chosen))
    try:
        p.cache.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise input_error(root, None, f"cache directory is not writable ({err.strerror})") from None
    return p


def run_seeds_study(exp: Experiment | str | Path, n_seeds: int | None = None,
                    out_dir: str | Path | None = None,
                    configs: Mapping[str, Any] | None = None, jobs: int = 1,
                    progress: bool = True, *, settings: SeedSettings | None = None,
                    cache_dir: str | Path | None = None,
                    grid_algorithms: Sequence[str] | None = None,
                    grid_seeds: int | None = None) -> list[Path]:
    """Run (or resume) the split-seed study and write its report files; returns their paths
    (``seeds_report.md`` last).

    ``exp`` is an :class:`Experiment` or the path of a seeds experiment TOML (its ``[seeds]``
    table gives the defaults of every argument). ``n_seeds`` (default: settings, else 20) data
    split seeds; ``configs`` ``{algorithm: config_id | {hyperparameter: value}}`` overrides the
    default configurations; ``grid_algorithms`` / ``grid_seeds`` choose the grid part (``[]`` or
    0 skip it). ``out_dir`` defaults to ``reports/seeds-<name>``, ``cache_dir`` to
    ``results/seeds-<name>`` (per-seed results; safe to delete; ``seeds-`` is not doubled
    when the experiment name already starts with ``seeds``).

    Example (skipped here: it trains models)::

        files = run_seeds_study("experiments/seeds-quickstart.toml", n_seeds=3, out_dir="/tmp/s")
    """
    jobs = _check_arguments(exp, out_dir, jobs, cache_dir)
    if isinstance(exp, (str, Path)):
        exp, file_settings = load_seed_experiment(exp)
        settings = settings or file_settings
    st = _settings(exp, settings or SeedSettings(), n_seeds, configs, grid_algorithms, grid_seeds)
    out = Path(out_dir or Path("reports") / seeds_folder_name(exp))
    check_report_folder(out, "seeds", "seeds report")  # before the first model trains
    p = _plan(exp, st, cache_dir)
    tasks = [(i, s) for i in range(st.n_seeds) for s in SPLITS]
    tasks += [(i, "grid") for i in range(p.grid_seeds)]
    execute(p, tasks, jobs, progress)

    _, _, dataset = study_ratings(exp)
    # the report is written into a staged folder and published whole (one rename): a Ctrl-C,
    # a kill or a full disk while writing leaves the previous report as it was
    with staged_folder(out) as stage:
        names = [f.name for f in _report(p, st, exp, dataset, stage)]
    return [out / name for name in names]


def _check_arguments(exp: Any, out_dir: Any, jobs: Any, cache_dir: Any) -> int:
    """The arguments of :func:`run_seeds_study` that its settings do not check, checked before
    anything is read or trained: ``exp`` an experiment or a path, ``out_dir`` and
    ``cache_dir`` paths when given, ``jobs`` an integer from 1 to
    :data:`dptune.config.MAX_JOBS` (``jobs=0`` or ``2.5`` was read as 1 or 2 processes
    without a word, ``"2"`` failed with a traceback). One line naming the argument; returns
    ``jobs`` as an ``int``."""
    from dptune.config import MAX_JOBS
    from dptune.errors import check_path

    if not isinstance(exp, Experiment):
        check_path(exp, "seeds", "exp", "an Experiment or the path of an experiment file")
    for name, value in (("out_dir", out_dir), ("cache_dir", cache_dir)):
        if value is not None:
            check_path(value, "seeds", name)
    return check_int(jobs, "seeds", "jobs", 1, MAX_JOBS)


def _report(p: SeedPlan, st: SeedSettings, exp: Experiment, dataset: str, out: Path
            ) -> list[Path]:
    """Write every report file of the finished study into folder ``out``; returns their paths
    (``seeds_report.md`` last)."""
    cache, trials = read_defaults(p, dataset)
    per_seed = per_seed_table(cache, dataset)
    summary = order_rows(summarize(per_seed), ["dataset", "algorithm", "metric", "cutoff"])
    figm = st.figure_metrics_of(exp.evaluation.metrics)
    pooled = pooled_tests(per_seed, figm)
    files = [_csv(per_seed, out / "seeds_per_seed.csv"), _csv(trials, out / "seeds_trials.csv"),
             _csv(pooled, out / "seeds_pooled.csv")]
    tab = summary_table(summary, st.n_seeds, st)
    files += [_write(out / "seeds_summary.md", tab.to_markdown()),
              _csv(summary, out / "seeds_summary.csv"),
              _write(out / "seeds_summary.tex", tab.to_latex(f"{exp.name}:seeds_summary"))]
    files += save_figure(seeds_figure(per_seed, figm, st), out / "seeds_figure", creator="dptune")
    grid = kendall = stability = None
    if p.grid_seeds:
        grid = pd.concat([grid_rows(p, i, dataset) for i in range(p.grid_seeds)], ignore_index=True)
        grid = order_rows(grid, ["dataset", "algorithm", "seed_index", "metric", "cutoff"])
        kendall = kendall_table(grid)
        stability = grid_stability(grid)
        files += [_csv(grid, out / "seeds_grid.csv"), _csv(kendall, out / "seeds_kendall.csv"),
                  _csv(stability, out / "seeds_grid_stability.csv")]
    files.append(_write(out / "seeds_report.md", seeds_report_md(
        p, dataset, summary, pooled, grid, kendall, stability, trials)))
    return files
