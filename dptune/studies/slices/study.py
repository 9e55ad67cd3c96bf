"""Slice study (Tagliabue et al., "EvalRS: a rounded evaluation of recommender
systems", CIKM 2022 data challenge): :func:`run_slices_study`, metrics, miss rate and
discriminative power per user slice of a result store.

Slices are log-scaled bins (:mod:`dptune.studies.slices.bins`), so no threshold is chosen by
hand:

- ``history``: the user's training-history length in that validation fold, i.e. the number of
  distinct training items (row of the fold's binarised training matrix), recomputed with
  ``sweep.prepare(experiment).fold(f)`` from the experiment named in the results manifest,
  whose data must be the data the results were made from (the manifest's data digest, checked
  as ``dptune run`` checks it: a data file changed since the sweep is one line, nothing
  written);
- ``popularity``: the mean popularity of the user's *relevant held-out items* in that fold,
  ``pop(u) = (1 / |R_u|) sum_{i in R_u} users_f(i)`` with ``users_f(i)`` the number of training
  users of item ``i`` in fold ``f``. The store keeps per-user metric values, not the ranked
  lists, so metrics restricted to the relevant items of one popularity bin cannot be
  recomputed without retraining every model; slicing *users* by the popularity of what they
  hold out is the faithful alternative (a user in a low bin is one whose relevant items are
  niche). This choice is written in every report.

DP per slice (:mod:`dptune.studies.slices.dp`) uses the main analysis's pairs and test; a
reference row ``all`` (every user) reproduces the main analysis's DP. Metrics per slice are
those of the configuration the primary metric selects on validation
(``ResultStore.best_configs``), with the EvalRS miss rate at N.

Caveat: a paired test on fewer users has less power, so DP rises (worse) in small slices for
every metric; compare metrics *within* a slice (the ``dp_rank`` column), and slices with care.
A slice with fewer than ``min_users`` users (default
:data:`dptune.vocab.SLICE_MIN_USERS`) in some fold is not
ranked, counted in the findings or drawn: its DP, kept in ``slices_dp.csv``, is mostly the
lack of users (a slice with under 2 users in a fold has p = 1 there, so an empty slice has the
largest DP, 25 per 25 pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune._atomic import staged_folder
from dptune.analysis.dp.paired_tests import PairedTest, check_test, paired_test
from dptune.config import Experiment, load_experiment
from dptune.errors import check_int, check_int64, input_error, plain
from dptune.report import save_figure
from dptune.store._files import check_not_study
from dptune.store._per_user_file import integer_column
from dptune.store._store import ResultStore
from dptune.studies._markdown import shown_path
from dptune.studies.slices.bins import (
    SLICE_KINDS,
    assign_slices,
    check_base,
    members_by_slice,
    user_features,
)
from dptune.studies.slices.dp import (
    all_scope_weights,
    main_pair_design,
    read_main_csv,
    read_pairs,
    slice_dp,
    slice_metrics,
)
from dptune.studies.slices.figure import slices_figure
from dptune.studies.slices.report import slices_report_md
from dptune.vocab import CSV_FLOAT, SLICE_MIN_USERS, fold_key, tie_value

__all__ = ["run_slices_study"]

_DP_COLUMNS = ["dataset", "algorithm", "slice_kind", "slice", "bin", "lo", "hi", "n_users_mean",
               "n_users_min", "metric", "cutoff", "dp_per_25", "dp_per_25_plus_sd",
               "dp_per_25_minus_sd", "n_pairs", "dp_sum", "n_folds", "sakai", "ranked", "dp_rank"]
_METRIC_COLUMNS = ["dataset", "algorithm", "config_id", "slice_kind", "slice", "bin", "lo", "hi",
                   "n_obs", "metric", "cutoff", "mean", "miss_rate"]


def _find_experiment(store: ResultStore, man: dict[str, Any], experiment: str | Path | None) -> Experiment:
    """The experiment of the store (``experiment`` or the manifest's ``experiment_file``, looked
    up from the working directory and the store's parents); its fingerprint must match. The
    fingerprint covers the settings, not the data file's content: that is :func:`_same_data`'s
    check."""
    if experiment is not None:
        path = Path(experiment)
    else:
        name = man.get("experiment_file")
        if not name:
            raise input_error(store.root / "manifest.json", "experiment_file", "missing")
        cands = [Path(name)] + [parent / name for parent in [store.root, *store.root.resolve().parents]]
        path = next((c for c in cands if c.exists()), Path(name))
        if not path.exists():
            raise input_error(store.root / "manifest.json", "experiment_file",
                              f"{name!r} not found (run from the repository root or pass "
                              f"--experiment)")
    exp = load_experiment(path)
    if man.get("fingerprint") and exp.fingerprint() != man["fingerprint"]:
        from dptune.sweeper._manifest import setup_changes

        # the settings that differ, as `dptune run` names them; the fingerprints when unknown
        changed = setup_changes(man, exp)
        what = ("; ".join(changed) if changed else
                f"fingerprint {exp.fingerprint()} vs {man['fingerprint']}")
        raise input_error(path, None, f"does not match the results in {store.root} ({what}): "
                          "the training folds cannot be recomputed from it")
    return exp


def _same_data(store: ResultStore, man: dict[str, Any], exp: Experiment) -> Any:
    """The experiment's data as it is now, prepared (``sweep.prepare``), once it is the data
    the results were made from: the slices are rebuilt from it while the metrics are the
    store's per-user values, so a data file changed since the sweep would mix the two. Checked
    by the sweep's own check (:func:`dptune.sweeper._manifest.check_results_data`, the one
    ``dptune run`` and ``dptune worker`` make: the manifest's data digest), one line naming
    the data file."""
    from dptune.sweeper._manifest import check_results_data
    from dptune.sweeper._prepare import prepare

    prep = prepare(exp)
    check_results_data(man, exp, prep, store.root,
                       "restore the data, or sweep this data into another results directory "
                       "and slice that")
    return prep


def check_main_reports(reports_dir: str | Path, store: ResultStore | None = None,
                       algorithms: Sequence[str] = ()) -> Path:
    """The main analysis's pairs file ``<reports_dir>/pairs.csv``; a ``--main-reports`` that
    is missing, a file, or a directory without it is one line naming the flag. Given, the
    main reports are meant to supply the pairs: sampling them instead, silently, would give a
    slice DP of other pairs than the main analysis's while the report says they are its. So,
    with ``store``, the reports must also be of these results: pairs of scope ``all`` for
    every one of ``algorithms``, between configurations the store holds (the reports of
    another analysis were accepted, and an algorithm they lack was sampled here)."""
    d = Path(reports_dir)
    fix = ("give the reports directory of the main analysis of these results (dptune analyze "
           "writes its pairs.csv), or leave --main-reports out to sample the pairs here")
    if not d.exists():
        raise input_error("--main-reports", None, f"{d} does not exist; {fix}")
    if not d.is_dir():
        raise input_error("--main-reports", None, f"{d} is a file, not a reports directory; {fix}")
    pairs = d / "pairs.csv"
    if not pairs.is_file():
        raise input_error("--main-reports", None, f"{d} holds no pairs.csv (the main analysis's "
                          f"pairs); {fix}")
    if store is None:
        return pairs
    df = read_pairs(pairs)
    for alg in algorithms:
        sel = df[(df["algorithm"].astype(str) == alg) & (df["scope"] == "all")]
        held = set(store.configs(alg)["config_id"].astype(int))
        if not len(sel):
            raise input_error("--main-reports", None, f"{pairs} has no pairs of {alg}, an "
                              f"algorithm of {store.root}: these reports are of another "
                              f"analysis; {fix}")
        unknown = sorted((set(sel["config_a"].astype(int)) | set(sel["config_b"].astype(int)))
                         - held)
        if unknown:
            raise input_error("--main-reports", None, f"{pairs} pairs {alg}'s configuration "
                              f"{unknown[0]}, which {store.root} does not hold: these reports "
                              f"are of another analysis; {fix}")
        _check_weights(pairs, sel, store, alg, fix)
    _check_same_results(d, store, algorithms, fix)
    return pairs


def _check_weights(path: Path, sel: pd.DataFrame, store: ResultStore, alg: str, fix: str) -> None:
    """The main reports' pairs of ``alg`` against the units the store holds now: each pair of
    configurations with results in every validation fold, and the ``weight`` column (when
    there) the post-stratification weight the store gives the pair
    (:func:`dptune.studies.slices.dp.all_scope_weights`; 1 when it holds every unit). Reports made
    while a sweep was stopped part way, of a store that has units more since, weigh their
    pairs otherwise: the slice of every user would not be the main report's DP."""
    from dptune.analysis.dp.units import unit_sample

    pairs = sel[["config_a", "config_b"]].to_numpy(dtype=np.int64)
    sample = unit_sample(store, alg)
    if sample is not None and not sample.complete:
        absent = sorted(set(pairs.ravel().tolist()) - set(sample.present_configs.tolist()))
        if absent:
            raise input_error("--main-reports", None, f"{path} pairs {alg}'s configuration "
                              f"{absent[0]}, which has no results in every validation fold of "
                              f"{store.root}: these reports are of another analysis; {fix}")
    if "weight" not in sel.columns:
        return
    given = pd.to_numeric(sel["weight"], errors="coerce").to_numpy(dtype=np.float64)
    w = all_scope_weights(store, alg, pairs)
    want = np.ones(len(pairs)) if w is None else w
    if not np.allclose(given, want, rtol=1e-6, atol=1e-9):
        raise input_error("--main-reports", None, f"{path} weighs {alg}'s pairs otherwise than "
                          f"the units {store.root} holds now do (the results changed since "
                          f"that analysis: analyze them again); {fix}")


def _check_same_results(d: Path, store: ResultStore, algorithms: Sequence[str], fix: str) -> None:
    """The main reports' ``best_configs.csv`` against the store: each configuration it names
    must have the same hyperparameters here (:func:`dptune.analysis.selection.params_text`) and
    the same validation mean. Configuration ids alone fit the reports of any grid of as many
    configurations, whose pairs would then be read as these results' (another experiment's
    k = 80 for this one's k = 10)."""
    from dptune.analysis.selection import params_text

    path = d / "best_configs.csv"
    if not path.is_file():
        raise input_error("--main-reports", None, f"{d} holds no best_configs.csv, which "
                          f"tells the reports of these results from others; {fix}")
    best = read_main_csv(path, {"algorithm", "metric", "cutoff", "config_id", "params",
                             "validation_mean"}, "a best_configs.csv of the main analysis")
    best["config_id"] = integer_column(path, best, "config_id", 0)
    best["cutoff"] = integer_column(path, best, "cutoff", 1)
    best["validation_mean"] = pd.to_numeric(best["validation_mean"], errors="coerce")
    mine = store.best_configs().set_index(["algorithm", "metric", "cutoff"])
    for r in best[best["algorithm"].astype(str).isin(list(algorithms))].itertuples(index=False):
        cfg = store.configs(str(r.algorithm))
        row = cfg[cfg["config_id"] == int(r.config_id)]
        here = params_text(row.iloc[0], store.hyperparameters(str(r.algorithm))) if len(row) \
            else None
        key = (str(r.algorithm), str(r.metric), int(r.cutoff))
        mean = float(mine.at[key, "validation_mean"]) if key in mine.index else None
        if here != str(r.params if isinstance(r.params, str) else "") or mean is None or \
                not np.isclose(mean, float(r.validation_mean), rtol=1e-9, atol=1e-12):
            raise input_error("--main-reports", None, f"{path} is of other results: its "
                              f"{r.algorithm} configuration {int(r.config_id)} ({r.params}, "
                              f"validation {r.metric}@{int(r.cutoff)} "
                              f"{float(r.validation_mean):.6g}) is not {store.root}'s "
                              f"({here}, {'none' if mean is None else f'{mean:.6g}'}); {fix}")


def _slicings(prep: Any, folds: list[str], base: int) -> dict[str, pd.DataFrame]:
    """Per slice kind (``all`` first) the slice of every (fold, user): columns ``fold, user,
    slice_kind, bin, slice, lo, hi``; ``all`` is one slice of every user (bin -2)."""
    feats = user_features(prep, folds)
    everyone = feats[["fold", "user"]].assign(slice_kind="all", bin=-2, slice="all",
                                              lo=np.nan, hi=np.nan)
    return {"all": everyone, **{k: assign_slices(feats, k, base) for k in SLICE_KINDS}}


def _primary_config(store: ResultStore, best: pd.DataFrame, alg: str,
                    primary: tuple[str, int]) -> int:
    """The configuration the primary metric selects on validation (else the first one)."""
    pick = best[(best["algorithm"] == alg) & (best["metric"] == primary[0])
                & (best["cutoff"] == primary[1])]
    return int(pick["config_id"].iloc[0]) if len(pick) else int(store.configs(alg)["config_id"].iloc[0])


def _slice_tables(store: ResultStore, algs: Sequence[str], kinds: dict[str, pd.DataFrame],
                  dataset: str, pairs_of: Any, primary: tuple[str, int], test: PairedTest,
                  alpha: float, seed: int, min_users: int = SLICE_MIN_USERS,
                  progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(slices_dp, slices_metrics)`` of every algorithm and slice; ``pairs_of(alg)`` gives the
    algorithm's pairs and their weights (:func:`dptune.studies.slices.dp.main_pair_design`). ``ranked``: the slice has at least ``min_users`` users in every fold, or
    is the reference slice ``all``;
    ``dp_rank`` ranks the metrics' DP within (algorithm, slice, cutoff) of the ranked slices
    (empty for the others). With ``progress``, a tqdm bar (with its time left) counts the
    (algorithm, slice kind) steps: with a resampling test a step can take minutes."""
    from tqdm import tqdm

    members = {k: members_by_slice(v) for k, v in kinds.items()}
    info = {k: v.drop_duplicates("slice").set_index("slice")[["bin", "lo", "hi"]]
            for k, v in kinds.items()}
    best = store.best_configs()
    dp_parts, metric_parts = [], []
    bar = tqdm(total=len(algs) * len(kinds), desc="slices", unit="step", disable=not progress,
               dynamic_ncols=True)
    for alg in algs:
        mcs = store.metric_cutoffs(alg)
        pairs, weights = pairs_of(alg)
        cid = _primary_config(store, best, alg, primary)
        for kind in kinds:
            bar.set_postfix_str(f"{alg}, {kind}")
            d = slice_dp(store, alg, pairs, members[kind], mcs, test=test, alpha=alpha, seed=seed,
                         weights=weights)
            m = slice_metrics(store, alg, cid, members[kind], mcs)
            for df in (d, m):
                df.insert(0, "slice_kind", kind)
                df.insert(0, "algorithm", alg)
                df.insert(0, "dataset", dataset)
                for col in ("bin", "lo", "hi"):
                    df[col] = df["slice"].map(info[kind][col])
            m.insert(2, "config_id", cid)
            dp_parts.append(d)
            metric_parts.append(m)
            bar.update(1)
    bar.close()
    dpt = pd.concat(dp_parts, ignore_index=True)
    # the reference slice (every user: the main analysis's own DP) is ranked whatever its size
    dpt["ranked"] = (dpt["n_users_min"] >= min_users) | (dpt["slice_kind"] == "all")
    keys = ["algorithm", "slice_kind", "slice", "cutoff"]
    ranked = dpt[dpt["ranked"]]
    ties = ranked.groupby(keys)["dp_per_25"].transform(lambda s: tie_value(s, scale=25))
    ranks = ranked.assign(_t=ties).groupby(keys)["_t"].rank(method="min")
    dpt["dp_rank"] = ranks.reindex(dpt.index).astype("Int64")
    return dpt[_DP_COLUMNS], pd.concat(metric_parts, ignore_index=True)[_METRIC_COLUMNS]


def _bin_counts(kinds: dict[str, pd.DataFrame], dataset: str) -> pd.DataFrame:
    """``slices_bins.csv``: users per (slice kind, bin, fold)."""
    counts = pd.concat(kinds.values(), ignore_index=True).groupby(
        ["slice_kind", "bin", "slice", "lo", "hi", "fold"], dropna=False, sort=True).size().rename(
        "n_users").reset_index()
    counts.insert(0, "dataset", dataset)
    return counts


def _check_arguments(results_dir: Any, out_dir: Any, reports_dir: Any, base: Any,
                     n_pairs: Any, seed: Any, test: Any, experiment: Any, algorithms: Any,
                     cutoff: Any, min_users: Any, progress: Any) -> list[str] | None:
    """Every argument of :func:`run_slices_study` checked before any file is read or written:
    a wrong one (a base of 1, a cutoff of 2.5, a seed of -1, a path that is a number, an
    ``out_dir`` that is a file) is one line naming it (``slices: <argument>: <problem>``),
    instead of being rounded silently, read from the manifest in its place, or refused only
    after the store and the experiment's data were read. Returns ``algorithms`` as a list
    (``None`` when not given); a single name given as a string is refused, since it would be
    read letter by letter."""
    from dptune.errors import check_path, check_report_folder
    from dptune.vocab import SEED_RANGE

    check_path(results_dir, "slices", "results_dir", "the results directory")
    check_path(out_dir, "slices", "out_dir", "the folder to write the slice report into")
    for name, value in (("reports_dir", reports_dir), ("experiment", experiment)):
        if value is not None:
            check_path(value, "slices", name)
    check_base(base)
    if n_pairs is not None:
        check_int64(check_int(n_pairs, "slices", "n_pairs", 1), "slices", "n_pairs")
    if seed is not None:
        check_int(seed, "slices", "seed", *SEED_RANGE)
    if test is not None:
        check_test(test, "slices")
    if cutoff is not None:
        check_int64(check_int(cutoff, "slices", "cutoff", 1), "slices", "cutoff")
    if isinstance(min_users, bool) or not isinstance(min_users, (int, np.integer)) \
            or min_users < 2:
        raise input_error("slices", "min_users", f"must be an integer >= 2 (a paired test needs "
                          f"two users), got {plain(min_users)}")
    check_int64(min_users, "slices", "min_users")
    if not isinstance(progress, bool):
        raise input_error("slices", "progress", f"must be True or False, got {plain(progress)}")
    if algorithms is not None:
        names = None if isinstance(algorithms, (str, bytes)) \
            or not hasattr(algorithms, "__iter__") else list(algorithms)  # any iterable of names
        if names is None or not all(isinstance(a, str) for a in names):
            raise input_error("slices", "algorithms", f"needs a list of algorithm names, got "
                              f"{plain(algorithms if names is None else names)}")
        algorithms = names
        if not algorithms:
            raise input_error("slices", "algorithms", "is empty: name at least one algorithm, "
                              "or leave it out for every algorithm of the results")
        twice = sorted({a for a in algorithms if algorithms.count(a) > 1})
        if twice:
            raise input_error("slices", "algorithms", f"names {twice[0]} twice; give each "
                              "algorithm once")
    check_report_folder(out_dir, "slices", "slice report")
    return algorithms


def run_slices_study(results_dir: str | Path, out_dir: str | Path,
                     reports_dir: str | Path | None = None, *, base: int = 2,
                     n_pairs: int | None = None, seed: int | None = None,
                     test: str | None = None, experiment: str | Path | None = None,
                     algorithms: Sequence[str] | None = None, cutoff: int | None = None,
                     min_users: int = SLICE_MIN_USERS, progress: bool = False) -> list[Path]:
    """Metrics, miss rate and DP per user slice of a results directory; returns the files written
    (``slices_report.md`` last).

    ``reports_dir``: the main analysis's reports (its ``pairs.csv`` gives the pairs; it must be
    there: :func:`check_main_reports`; default: the pairs are sampled here); ``n_pairs``,
    ``seed`` and ``test`` default to the manifest's ``[analysis]`` settings; ``experiment``
    overrides the manifest's ``experiment_file`` (needed to recompute the folds' training
    data); ``cutoff`` (default: the primary cutoff) is the one in the figure and the Markdown
    tables (the CSV files hold every cutoff); ``min_users`` (at least 2): the fewest users a
    slice must have in every fold to be ranked, counted and drawn (:data:`SLICE_MIN_USERS`);
    ``progress``: a progress bar with the time left on stderr (``dptune slices`` shows it).

    Example (skipped here: it needs a result store)::

        files = run_slices_study("results/quickstart", "reports/slices-quickstart")
    """
    algorithms = _check_arguments(results_dir, out_dir, reports_dir, base, n_pairs, seed, test,
                                  experiment, algorithms, cutoff, min_users, progress)
    base = int(base)
    store = ResultStore(results_dir)
    man = store.manifest()
    check_not_study(store.root, man)
    exp = _find_experiment(store, man, experiment)
    ana = man.get("analysis", {})
    given_pairs = n_pairs
    n_pairs = int(n_pairs if n_pairs is not None else ana.get("pairs", ana.get("n_pairs", 25)))
    seed = int(seed if seed is not None else man.get("seeds", {}).get("analysis", exp.analysis_seed))
    test = paired_test(check_test(test if test is not None else ana.get("test", "t"), "slices"),
                       int(ana.get("n_resamples", 1000)))
    alpha = float(ana.get("alpha", 0.05))
    primary = (ana.get("primary_metric", "ndcg"), int(ana.get("primary_cutoff", 10)))
    cutoff = int(cutoff if cutoff is not None else primary[1])
    algs = list(algorithms) if algorithms is not None else store.algorithms()
    for a in algs:
        if a not in store.algorithms():
            raise input_error("slices", "algorithms", f"no algorithm {a!r} in {store.root} "
                              f"({', '.join(store.algorithms())})")
    # DP compares pairs of configurations: an algorithm of one configuration (a popularity
    # baseline) has none, so it is left out by default and refused when named
    single = [a for a in algs if len(store.configs(a)) < 2]
    if algorithms is not None and single:
        raise input_error("slices", "algorithms", f"{single[0]} has one configuration in "
                          f"{store.root}: a slice's DP compares pairs of configurations")
    algs = [a for a in algs if a not in single]
    if not algs:
        raise input_error(results_dir, None, "no algorithm has two configurations: a slice's "
                          "DP compares pairs of configurations")
    if reports_dir is not None:
        check_main_reports(reports_dir, store, algs)
        if given_pairs is not None:  # the main reports' pairs.csv says which pairs, how many
            raise input_error("--pairs", None, "the pairs come from --main-reports' pairs.csv; "
                              "give --pairs only without --main-reports (the pairs are then "
                              "sampled here)")
    cuts = sorted({int(c) for a in algs for _, c in store.metric_cutoffs(a)})
    if cutoff not in cuts:
        raise input_error("--cutoff", None, f"{cutoff} is not a cutoff of {store.root} (it has "
                          f"N = {', '.join(map(str, cuts))})")

    prep = _same_data(store, man, exp)
    dataset = man.get("dataset", {}).get("name", exp.data.source)
    folds = sorted({f for a in algs for f in store.folds(a)}, key=fold_key)
    kinds = _slicings(prep, folds, base)
    dpt, mt = _slice_tables(store, algs, kinds, dataset,
                            lambda alg: main_pair_design(store, alg, n_pairs, seed, reports_dir),
                            primary, test, alpha, seed, int(min_users),
                            progress=progress)
    pairs_src = (shown_path(Path(reports_dir) / 'pairs.csv') if reports_dir is not None
                 and (Path(reports_dir) / "pairs.csv").exists()
                 else f"sampled as the main analysis samples them ({n_pairs} at most, "
                 f"analysis seed {seed})")
    md = slices_report_md(exp, man, dataset, dpt, mt, algs, folds, cutoff, primary, base,
                          pairs_src, test.label, results_dir, left_out=single,
                          min_users=int(min_users))
    out = Path(out_dir)
    names: list[str] = []
    # written into a staged folder and published whole (one rename): a Ctrl-C, a kill or a
    # full disk while writing leaves the previous report as it was, not half of a new one
    with staged_folder(out) as stage:
        for name, df in (("slices_dp.csv", dpt), ("slices_metrics.csv", mt),
                         ("slices_bins.csv", _bin_counts(kinds, dataset))):
            df.to_csv(stage / name, index=False, float_format=CSV_FLOAT, lineterminator="\n")
            names.append(name)
        names += [f.name for f in save_figure(slices_figure(dpt, cutoff),
                                              stage / "slices_figure", creator="dptune")]
        with open(stage / "slices_report.md", "w", encoding="utf-8", newline="\n") as fh:
            fh.write(md)
        names.append("slices_report.md")
    return [out / name for name in names]
