"""The analysis stage: a results directory (or a set of external runs) -> DP tables and figures.

Glue only: the statistics live in :mod:`dptune.stats` and :mod:`dptune.dp`, the rendering in
:mod:`dptune.report`. Everything here reads the store; nothing reaches back into the sweep.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis import _dp as dpmod
from dptune.analysis import _importance as impmod
from dptune.analysis import _noise as noisemod
from dptune.config import AnalysisConfig
from dptune.errors import input_error
from dptune.grids import Grid, load_grid, subgrid_around
from dptune.metrics import METRICS
from dptune.report import _report as report
from dptune.store._store import ResultStore


def _params_text(row: pd.Series, names: list[str]) -> str:
    parts = []
    for n in names:
        v = row[n]
        if isinstance(v, float) and v.is_integer() and abs(v) >= 1:
            v = int(v)
        parts.append(f"{n}={v:.8g}" if isinstance(v, float) else f"{n}={v}")
    return ", ".join(parts)


def best_table(store: ResultStore, primary: tuple[str, int]) -> pd.DataFrame:
    """The configuration each metric@cutoff picks on validation, with its test-split values.

    Columns ``algorithm, metric, cutoff, config_id, params, validation_mean, test_value,
    test_<primary metric>`` (test values NaN when the test split was not evaluated).
    """
    best = store.best_configs()
    summ = store.summary()
    test = summ[summ["fold"] == "test"].set_index(["algorithm", "config_id", "metric", "cutoff"])["mean"]
    rows = []
    for r in best.itertuples(index=False):
        cfg = store.configs(r.algorithm)
        names = store.hyperparameters(r.algorithm)
        crow = cfg.loc[cfg["config_id"] == r.config_id].iloc[0]
        rows.append({
            "algorithm": r.algorithm, "metric": r.metric, "cutoff": int(r.cutoff),
            "config_id": int(r.config_id), "params": _params_text(crow, names),
            "validation_mean": float(r.validation_mean),
            "test_value": float(test.get((r.algorithm, r.config_id, r.metric, r.cutoff), np.nan)),
            f"test_{primary[0]}": float(test.get((r.algorithm, r.config_id, primary[0], primary[1]), np.nan)),
        })
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_m"] = df["metric"].map({m: i for i, m in enumerate(METRICS)})
    order = {a: i for i, a in enumerate(store.algorithms())}
    df["_a"] = df["algorithm"].map(order)
    return df.sort_values(["_a", "cutoff", "_m"], kind="stable").drop(columns=["_a", "_m"]).reset_index(drop=True)


_CORRECTION_TEXT = {"none": "none (raw p-values)", "holm": "Holm step-down (family-wise error)",
                    "bh": "Benjamini-Hochberg (false discovery rate)"}


def _test_text(opts: dict[str, Any]) -> str:
    base = {"t": "paired two-sided Student t-test (scipy ttest_rel)",
            "wilcoxon": "Wilcoxon signed-rank (two-sided)",
            "bootstrap": "paired bootstrap test of the mean difference (two-sided)",
            "permutation": "randomisation (sign-flip) test (two-sided)"}[opts["test"]]
    if opts["test"] in ("bootstrap", "permutation"):
        base += f", {int(opts['n_resamples'])} resamples"
    return base


def _bootstrap_text(opts: dict[str, Any]) -> str:
    b = int(opts.get("bootstrap", 0))
    if b <= 0:
        return "off (no confidence intervals)"
    return (f"{b} replicates resampling the users of every fold and the pairs (with replacement); "
            "95% percentile intervals for DP; metric ranking by paired replicates")


def _noise_text(opts: dict[str, Any], primary_text: str) -> str:
    s = int(opts["noise_seeds"])
    if s <= 0:
        return "off"
    n = int(opts["noise_configs"])
    which = "the best configuration" if n == 1 else f"the {n} best configurations"
    return (f"{s} seeds of {which} by validation {primary_text} per stochastic algorithm, on "
            "every validation fold; A/A pairs tested with the DP's test")


def _settings(man: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    sp, ev = man["split"], man["evaluation"]
    primary_text = report.display_metric(opts["primary_metric"], int(opts["primary_cutoff"]))
    return {
        "Experiment": man["experiment"],
        "Data set": f"{man['dataset']['name']} ({man['dataset']['source']})",
        "Test split": f"{sp['method']} hold-out, train ratio {sp['train_ratio']}, "
                      f"users with < {sp['min_user_interactions']} interactions dropped ({sp['dropped_users']})",
        "Validation": f"{sp['folds']}-fold cross-validation on the training part ({sp['fold_method']})",
        "Split seed": sp["split_seed"],
        "Relevance threshold": f"{ev['relevance_rule']} (threshold {ev['relevance_threshold']})",
        "Metric variant": f"novelty metrics {ev['novelty_variant']}; binary-gain nDCG",
        "Protocol": ev["protocol"],
        "Cutoffs": ", ".join(str(c) for c in ev["cutoffs"]),
        "Pairs per scope (P)": opts["n_pairs"],
        "Pair-sampling seed": opts["seed"],
        "Statistical test": _test_text(opts),
        "Alpha": opts["alpha"],
        "Correction": _CORRECTION_TEXT[opts["correction"]],
        "Sakai DP": f"fraction of pairs with p < {opts['alpha']} (correction: {opts['correction']})",
        "Fold sd": "sample standard deviation across folds (ddof=1)",
        "Bootstrap": _bootstrap_text(opts),
        "Noise floor": _noise_text(opts, primary_text),
        "Hyperparameter importance": (
            f"fANOVA and PED-ANOVA (optuna) of the mean validation metric@{opts['primary_cutoff']}, "
            f"seed {opts['seed']}" if opts["importance"] else "off"),
        "Versions": ", ".join(f"{k} {v}" for k, v in sorted(man.get("versions", {}).items())),
    }


def _options(man: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Analysis options: :class:`AnalysisConfig` defaults < the manifest's ``analysis`` <
    non-None overrides; ``seed`` None -> the manifest's analysis seed. Validated."""
    a = {f.name: getattr(AnalysisConfig(), f.name) for f in fields(AnalysisConfig)}
    a.update(man.get("analysis", {}))
    a.update({k: v for k, v in overrides.items() if v is not None})
    if a.get("seed") is None:
        a["seed"] = man["seeds"]["analysis"]
    for key, lo in (("noise_seeds", 0), ("noise_configs", 1), ("bootstrap", 0),
                    ("n_resamples", 1), ("n_pairs", 1)):
        v = a[key]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise input_error("analysis", key, f"must be an integer >= {lo}, got {v!r}")
    if a["noise_seeds"] == 1:
        raise input_error("analysis", "noise_seeds", "needs 0 (off) or at least 2 seeds")
    if not isinstance(a["importance"], bool):
        raise input_error("analysis", "importance", f"must be true or false, got {a['importance']!r}")
    return a


def _metric_ranking_section(analysis: dpmod.Analysis, opts: dict[str, Any],
                            cutoff: int) -> str:
    """Markdown of the bootstrap metric ranking at ``cutoff``: per algorithm the metrics by DP
    with their 95% intervals, the matrix of P(row more discriminative than column) and one
    sentence per neighbouring pair of the ranking."""
    rank = analysis.metric_ranking
    level = 1.0 - float(opts["alpha"])
    dp_all = analysis.dp[(analysis.dp["scope"] == "all") & (analysis.dp["cutoff"] == cutoff)]
    lines = [
        f"{int(opts['bootstrap'])} bootstrap replicates; each resamples the users of every fold and "
        "the sampled pairs with replacement and recomputes DP, the same draws for every metric, so "
        "replicates are paired. P(A more discriminative than B) = share of replicates with "
        f"DP*(A) < DP*(B). A difference is called significant when that share is at least "
        f"1 - alpha = {level:.0%}. Cutoff N = {cutoff}; every cutoff is in `metric_ranking.csv`.",
        "",
    ]
    for alg in dict.fromkeys(dp_all["algorithm"]):
        d = dp_all[dp_all["algorithm"] == alg].sort_values(["dp", "metric"], kind="stable")
        r = rank[(rank["algorithm"] == alg) & (rank["cutoff"] == cutoff)]
        if d.empty or r.empty:
            continue
        prob = {(a, b): float(p) for a, b, p in zip(r["metric_a"], r["metric_b"], r["p_a_better"],
                                                    strict=True)}
        ms = list(d["metric"])
        names = [report.display_metric(m, cutoff) for m in ms]
        lines += [f"*{report.display_algorithm(alg)}*", ""]
        header = ["Rank", "Metric", "DP", "95% CI"] + names
        lines.append("| " + " | ".join(header) + " |")
        lines.append("| ---: | :--- | ---: | :--- | " + " | ".join("---:" for _ in ms) + " |")
        for i, row in enumerate(d.itertuples(index=False)):
            cells = []
            for m in ms:
                if m == row.metric:
                    cells.append("–")
                    continue
                p = prob.get((row.metric, m), float("nan"))
                cells.append(f"**{p:.2f}**" if p >= level else f"{p:.2f}")
            lines.append(f"| {i + 1} | {names[i]} | {row.dp:.3f} | "
                         f"[{row.dp_ci_low:.3f}, {row.dp_ci_high:.3f}] | " + " | ".join(cells) + " |")
        lines += ["", "Cells: P(row metric more discriminative than column metric); bold: at least "
                  f"{level:.0%}.", ""]
        for a, b, na, nb in zip(ms[:-1], ms[1:], names[:-1], names[1:], strict=True):
            p = prob.get((a, b), float("nan"))
            verdict = "significant" if p >= level else "not significant"
            lines.append(f"- {na} is more discriminative than {nb} in {p:.0%} of bootstrap "
                         f"replicates ({verdict} at {level:.0%}).")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _fmt_params(store: ResultStore, algorithm: str, config_id: int) -> str:
    cfg = store.configs(algorithm)
    row = cfg.loc[cfg["config_id"] == config_id]
    if row.empty:
        return f"config {config_id}"
    return f"config {config_id} ({_params_text(row.iloc[0], store.hyperparameters(algorithm))})"


def _noise_section(store: ResultStore, opts: dict[str, Any], nf: noisemod.NoiseFloor | None,
                   table: pd.DataFrame | None) -> str:
    """Markdown of the noise-floor section (setup, DP beside DP_floor, flagged metrics)."""
    man = store.manifest()
    det = noisemod.deterministic_algorithms(man)
    det_text = ""
    if det:
        det_text = (", ".join(report.display_algorithm(a) for a in det)
                    + (" is" if len(det) == 1 else " are")
                    + " deterministic (training uses no seed; re-training gives identical "
                    "results): no noise floor.")
    if int(opts["noise_seeds"]) <= 0:
        return "Off (`noise_seeds = 0`)."
    if nf is None or nf.empty or table is None or table.empty:
        stoch = [a["name"] for a in man["algorithms"] if noisemod.is_stochastic(a["type"])]
        if not stoch:
            return det_text or "No algorithm of this experiment depends on a seed."
        return ("No noise-floor runs in this results directory (`dptune run` trains them after "
                "the sweep when `noise_seeds > 0`). " + det_text).strip()
    primary = f"{report.display_metric(opts['primary_metric'], int(opts['primary_cutoff']))}"
    used = []
    for alg, ids in nf.configs.items():
        cfgs = ", ".join(_fmt_params(store, alg, c) for c in ids)
        used.append(f"{report.display_algorithm(alg)}: {cfgs}, {nf.seeds.get(alg, 0)} seeds")
    has_ci = "dp_ci_high" in table.columns
    rule = ("the 95% bootstrap interval of DP lies entirely below DP_floor" if has_ci
            else "DP < DP_floor")
    lines = [
        "The best configuration(s) of each stochastic algorithm by validation "
        f"{primary} were re-trained with different seeds on every validation fold; every pair of "
        "seeds is an A/A pair (same configuration, no real difference), tested over the fold's "
        "users with the DP's test. Per fold the A/A p-values are sorted decreasingly and "
        "resampled to the DP's P positions, then averaged over folds (dashed lines in Figure 1). "
        "DP_floor = P x mean A/A p-value (± P x its sd over folds); an exactly true null gives "
        f"P/2. A metric is clearly below its floor when {rule}; otherwise it is flagged: its "
        "configuration differences are not clearly larger than re-training noise.",
        "",
        "Runs: " + "; ".join(used) + ".",
        "",
    ]
    if det_text:
        lines += [det_text, ""]
    header = ["Algorithm", "Metric", "DP"] + (["95% CI"] if has_ci else []) + [
        "DP_floor ± sd", "DP / DP_floor", "Below floor?"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| :--- | :--- | ---: | " + ("---: | " if has_ci else "") + "---: | ---: | :--- |")
    t = table.assign(_m=[dpmod.METRIC_ORDER.index(m) if m in dpmod.METRIC_ORDER else 99
                         for m in table["metric"]])
    order = {a: i for i, a in enumerate(store.algorithms())}
    t = t.assign(_a=t["algorithm"].map(order)).sort_values(["_a", "cutoff", "_m"], kind="stable")
    for r in t.itertuples(index=False):
        cells = [report.display_algorithm(r.algorithm), report.display_metric(r.metric, r.cutoff),
                 f"{r.dp:.3f}"]
        if has_ci:
            cells.append(f"[{r.dp_ci_low:.3f}, {r.dp_ci_high:.3f}]")
        cells += [f"{r.dp_floor:.3f} ± {r.dp_floor_sd:.3f}", f"{r.ratio:.2f}",
                  "**no: flagged**" if r.flagged else "yes"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for alg in dict.fromkeys(t["algorithm"]):
        ta = t[t["algorithm"] == alg]
        bad = ta[ta["flagged"]]
        name = report.display_algorithm(alg)
        if bad.empty:
            lines.append(f"- {name}: every metric@N is clearly below its noise floor "
                         f"({len(ta)} of {len(ta)}).")
        else:
            listed = ", ".join(report.display_metric(m, c) for m, c in zip(bad["metric"],
                                                                          bad["cutoff"], strict=True))
            lines.append(f"- {name}: {len(bad)} of {len(ta)} metric@N not clearly below the noise "
                         f"floor: {listed}.")
        same = nf.floor[(nf.floor["algorithm"] == alg) & (nf.floor["mean_p"] >= 1.0)]
        if len(same) == len(nf.floor[nf.floor["algorithm"] == alg]) and len(same):
            lines.append(f"- {name}: every A/A pair had identical per-user values (the model "
                         "ignores its seed in practice), so the floor is P.")
    lines += ["", "Data: `noise_floor.csv` (DP beside its floor), `noise_curves.csv`, "
              "`noise_pvalues.csv` (every A/A p-value)."]
    return "\n".join(lines)


def _no_dp_reason(store: ResultStore, algorithm: str) -> str:
    """Why an algorithm of the store has no DP row (for the report's Table 3 section)."""
    n = len(store.configs(algorithm))
    if n < 2:
        return (f"it has {n} configuration, so there is no pair of configurations to compare "
                "(its results are in the best-configuration table)")
    return f"none of its {n} configurations has validation results to pair"


def analyze_results(results_dir: str | Path, reports_dir: str | Path, progress: bool = False,
                    **overrides: Any) -> list[Path]:
    """Run the DP analysis on a results directory and write every table, figure and report.

    Overrides (``n_pairs, seed, test, alpha, correction, n_resamples, bootstrap, noise_seeds,
    noise_configs, importance``) replace the experiment's ``[analysis]`` settings. Besides
    :func:`dptune.analysis._dp.analyze`'s tables: with a bootstrap, a metric-ranking section; when the
    store has noise-floor runs and ``noise_seeds > 0``, ``noise_floor.csv``, ``noise_curves.csv``,
    ``noise_pvalues.csv``, the dashed A/A curves of Figure 1 and the flag of every metric not
    clearly below its floor (:mod:`dptune.noise`); with ``importance``, ``importance.csv`` and
    its section (:mod:`dptune.importance`). Output is a pure function of the store and the
    options: a rerun writes identical bytes. ``progress`` shows the analysis' progress bar.
    """
    store = ResultStore(results_dir)
    man = store.manifest()
    opts = _options(man, overrides)
    analysis = dpmod.analyze(
        store, n_pairs=int(opts["n_pairs"]), seed=int(opts["seed"]), test=opts["test"],
        alpha=float(opts["alpha"]), correction=None if opts["correction"] == "none" else opts["correction"],
        n_resamples=int(opts["n_resamples"]), bootstrap=int(opts["bootstrap"]),
        progress=progress,
    )
    out = Path(reports_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = list(analysis.write_csv(out) or [])
    d = man["dataset"]
    datasets = pd.DataFrame([{"dataset": d["name"], "users": d["users"], "items": d["items"],
                              "ratings": d["ratings"], "sparsity": d["sparsity"]}])
    primary = (opts["primary_metric"], int(opts["primary_cutoff"]))
    best = best_table(store, primary)
    sections: list[tuple[str, str]] = []

    if analysis.metric_ranking is not None and not analysis.metric_ranking.empty:
        sections.append(("Metric ranking (bootstrap)",
                         _metric_ranking_section(analysis, opts, primary[1])))

    nf = table = None
    curves_nf = None
    if int(opts["noise_seeds"]) > 0:
        all_dp = analysis.dp[analysis.dp["scope"] == "all"]
        n_pairs = {(a, m, int(c)): int(n) for a, m, c, n in zip(
            all_dp["algorithm"], all_dp["metric"], all_dp["cutoff"], all_dp["n_pairs"], strict=True)}
        nf = noisemod.noise_floor_table(
            store.root, n_pairs, test=opts["test"], max_seeds=int(opts["noise_seeds"]),
            max_configs=int(opts["noise_configs"]), primary=primary,
            n_resamples=int(opts["n_resamples"]), seed=int(opts["seed"]))
        if not nf.empty:
            table = noisemod.compare_with_floor(analysis.dp, nf.floor)
            for name, frame in (("noise_floor.csv", table), ("noise_curves.csv", nf.curves),
                                ("noise_pvalues.csv", nf.pvalues)):
                frame.to_csv(out / name, index=False, float_format="%.10g", lineterminator="\n")
                files.append(out / name)
            curves_nf = nf.curves[["algorithm", "cutoff", "metric", "position", "mean"]]
    sections.append(("Noise floor (A/A pairs)", _noise_section(store, opts, nf, table)))

    if opts["importance"]:
        imp = impmod.hyperparameter_importance(store, cutoff=primary[1], seed=int(opts["seed"]))
        imp.to_csv(out / "importance.csv", index=False, float_format="%.10g", lineterminator="\n")
        files.append(out / "importance.csv")
        n_trials = {a: len(store.configs(a)) for a in dict.fromkeys(imp["algorithm"])}
        body = impmod.importance_section(imp, analysis.dp, primary, int(opts["seed"]),
                                         display={a: report.display_algorithm(a)
                                                  for a in store.algorithms()},
                                         n_trials=n_trials)
        sections.append(("Hyperparameter importance (optuna) beside DP dominance",
                         body + "\n\nData: `importance.csv`."))

    with_dp = set(analysis.dp["algorithm"])
    without_dp = {a: _no_dp_reason(store, a) for a in store.algorithms() if a not in with_dp}
    files += report.write_report(out, analysis.dp, analysis.curves, datasets, best,
                                 _settings(man, opts), primary=primary, noise_floor=curves_nf,
                                 extra_sections=sections, without_dp=without_dp)
    best.to_csv(out / "best_configs.csv", index=False, lineterminator="\n", float_format="%.10g")
    files.append(out / "best_configs.csv")
    return files


def _plain(value: Any) -> Any:
    """A configs.csv value as a plain Python scalar: numpy scalars unwrapped, integral floats
    (pandas reads an integer column with gaps as float) turned back into ``int``."""
    v = value.item() if hasattr(value, "item") else value
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def grid_from_store(store: ResultStore, algorithm: str) -> Grid:
    """Rebuild an algorithm's grid (value order included) from configs.csv and the manifest."""
    man = {a["name"]: a for a in store.manifest()["algorithms"]}
    if algorithm not in man:
        raise input_error(store.root / "manifest.json", "algorithms", f"no algorithm {algorithm!r}")
    cfg = store.configs(algorithm)
    values = {h: list(pd.unique(cfg[h])) for h in man[algorithm]["free"]}
    values = {h: [_plain(v) for v in vals] for h, vals in values.items()}
    derived = {k: (v[0], float(v[1])) for k, v in man[algorithm].get("derived", {}).items()}
    family = man[algorithm]["type"]
    return Grid(values=values, derived=derived, family=family, source=str(store.root))


def write_subgrid(results_dir: str | Path, algorithm: str, metric: str, cutoff: int,
                  radius: int, out: str | Path, grid: str | Path | None = None) -> Path:
    """The paper's sub-grid: best value of each hyperparameter by mean metric@cutoff over the
    validation folds, +- ``radius`` neighbours in ``grid`` (default: the swept grid itself; give
    the full Table 2 grid when the sweep was a coarse pilot); written as a grid TOML file."""
    store = ResultStore(results_dir)
    best = store.best_configs()
    row = best[(best["algorithm"] == algorithm) & (best["metric"] == metric) & (best["cutoff"] == cutoff)]
    if row.empty:
        raise input_error(store.root, "--metric/--cutoff", f"no results for {algorithm} {metric}@{cutoff}")
    swept = grid_from_store(store, algorithm)
    ref = load_grid(grid) if grid is not None else swept
    cfg = store.configs(algorithm)
    mask = cfg["config_id"] == int(row["config_id"].iloc[0])
    chosen = {h: _plain(cfg.loc[mask, h].iloc[0]) for h in swept.free}
    for h, v in chosen.items():
        if h not in ref.values or v not in ref.values[h]:
            raise input_error(grid or store.root, f"params.{h}", f"best value {v!r} is not a value of this grid")
    sub = subgrid_around(ref, chosen, radius)
    grid = ref
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Sub-grid of {algorithm} around its best configuration by {metric}@{cutoff} "
              f"(+-{radius} grid neighbours), from {store.root}\n"
              f"# best: {', '.join(f'{k}={v}' for k, v in chosen.items())}\n")
    out.write_text(header + sub.to_toml().replace(f'family = "{grid.family}"\n', ""))
    return out


# --------------------------------------------------------------------------- external runs
class RunSetStore:
    """The store protocol of :func:`dptune.analysis._dp.analyze` over external TREC runs.

    ``runs/`` holds one run file per system, or one sub-directory per fold with the same file
    names; qrels and train are one file, or a directory with one file per fold (file stem = fold).
    Each system is a configuration of a single algorithm ``runs`` with hyperparameter ``system``.
    """

    def __init__(self, runs: Path, qrels: Path, train: Path, cutoffs: tuple[int, ...],
                 threshold: float, relevance_aware: bool = True):
        from dptune.store._trec import evaluate_run, read_qrels, read_run, read_train

        runs, qrels, train = Path(runs), Path(qrels), Path(train)
        if not runs.is_dir():
            raise input_error(runs, None, "--runs must be a directory of run files")
        subdirs = sorted(p for p in runs.iterdir() if p.is_dir())
        fold_dirs = {p.name: p for p in subdirs} if subdirs else {"0": runs}
        systems = sorted(p.name for p in next(iter(fold_dirs.values())).iterdir() if p.is_file()
                         and not p.name.startswith("."))
        if len(systems) < 2:
            raise input_error(runs, None, "needs at least two run files (systems) to compare")
        self.cutoffs = cutoffs
        self.system_names = systems
        self._per_user: dict[str, pd.DataFrame] = {}
        self.n_users = self.n_items = self.n_train = 0
        for fold, d in fold_dirs.items():
            q = read_qrels(_per_fold(qrels, fold))
            t = read_train(_per_fold(train, fold))
            self.n_users = max(self.n_users, q["user"].nunique())
            self.n_items = max(self.n_items, len(set(q["item"]) | set(t["item"])))
            self.n_train = max(self.n_train, len(t))
            frames = []
            for cid, name in enumerate(systems):
                path = d / name
                if not path.exists():
                    raise input_error(path, None, f"run file missing in fold {fold}")
                df = evaluate_run(read_run(path), q, t, cutoffs=cutoffs, threshold=threshold,
                                  relevance_aware=relevance_aware)
                df["config_id"] = cid
                frames.append(df)
            self._per_user[fold] = pd.concat(frames, ignore_index=True)

    def algorithms(self) -> list[str]:
        return ["runs"]

    def configs(self, algorithm: str) -> pd.DataFrame:
        return pd.DataFrame({"config_id": range(len(self.system_names)), "system": self.system_names})

    def hyperparameters(self, algorithm: str) -> list[str]:
        return []

    def folds(self, algorithm: str) -> list[str]:
        return list(self._per_user)

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return [(m, c) for m in METRICS for c in self.cutoffs]

    def read_matrix(self, algorithm, metric, cutoff, fold, config_ids):
        df = self._per_user[fold]
        df = df[(df["metric"] == metric) & (df["cutoff"] == cutoff) & df["config_id"].isin(config_ids)]
        wide = df.pivot(index="config_id", columns="user", values="value").reindex(list(config_ids))
        wide = wide.dropna(axis=1)
        return np.arange(wide.shape[1]), wide.to_numpy(dtype=np.float64)


def _per_fold(path: Path, fold: str) -> Path:
    if path.is_dir():
        hits = sorted(p for p in path.iterdir() if p.stem == fold or p.name == fold)
        if not hits:
            raise input_error(path, fold, "no file for this fold (expected a file whose stem is the fold name)")
        return hits[0]
    return path


def analyze_runs(runs: str | Path, qrels: str | Path, train: str | Path, reports_dir: Path,
                 cutoffs: tuple[int, ...] = (1, 5, 10), threshold: float = 4.0, n_pairs: int = 25,
                 seed: int = 42, test: str = "t") -> list[Path]:
    """DP tables for a set of external runs (users of other frameworks get DP too)."""
    store = RunSetStore(Path(runs), Path(qrels), Path(train), cutoffs, threshold)
    analysis = dpmod.analyze(store, n_pairs=n_pairs, seed=seed, test=test)
    reports_dir.mkdir(parents=True, exist_ok=True)
    files = list(analysis.write_csv(reports_dir) or [])
    datasets = pd.DataFrame([{"dataset": str(runs), "users": store.n_users, "items": store.n_items,
                              "ratings": store.n_train,
                              "sparsity": 1 - store.n_train / max(1, store.n_users * store.n_items)}])
    settings = {"Runs": f"{len(store.system_names)} systems: {', '.join(store.system_names)}",
                "Folds": len(store.folds("runs")), "Relevance threshold": f"rating >= {threshold}",
                "Metric variant": "novelty metrics relevance-aware; binary-gain nDCG",
                "Pairs per scope (P)": n_pairs, "Pair-sampling seed": seed, "Statistical test": test}
    primary_cut = 10 if 10 in cutoffs else cutoffs[-1]
    files += report.write_report(reports_dir, analysis.dp, analysis.curves, datasets,
                                 None, settings, primary=("ndcg", primary_cut))
    return files
