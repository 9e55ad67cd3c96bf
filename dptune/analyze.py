"""The analysis stage: a results directory (or a set of external runs) -> DP tables and figures.

Glue only: the statistics live in :mod:`dptune.stats` and :mod:`dptune.dp`, the rendering in
:mod:`dptune.report`. Everything here reads the store; nothing reaches back into the sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune import dp as dpmod
from dptune import report
from dptune.errors import input_error
from dptune.grids import Grid, subgrid_around
from dptune.metrics import METRICS
from dptune.store import ResultStore


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


def _settings(man: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    sp, ev = man["split"], man["evaluation"]
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
        "Statistical test": {"t": "paired two-sided Student t-test (scipy ttest_rel)",
                             "wilcoxon": "Wilcoxon signed-rank", "bootstrap": "paired bootstrap",
                             "permutation": "randomisation (sign-flip) test"}[opts["test"]],
        "Sakai DP": f"fraction of pairs with p < {opts['alpha']} (correction: {opts['correction']})",
        "Fold sd": "sample standard deviation across folds (ddof=1)",
        "Versions": ", ".join(f"{k} {v}" for k, v in sorted(man.get("versions", {}).items())),
    }


def _options(man: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    a = dict(man.get("analysis", {}))
    a.update({k: v for k, v in overrides.items() if v is not None})
    if a.get("seed") is None:
        a["seed"] = man["seeds"]["analysis"]
    return a


def analyze_results(results_dir: str | Path, reports_dir: str | Path, **overrides: Any) -> list[Path]:
    """Run the DP analysis on a results directory and write every table, figure and report.

    Overrides (``n_pairs, seed, test, alpha, correction, bootstrap``) replace the experiment's
    ``[analysis]`` settings. Output is a pure function of the store and the options.
    """
    store = ResultStore(results_dir)
    man = store.manifest()
    opts = _options(man, overrides)
    analysis = dpmod.analyze(
        store, n_pairs=int(opts["n_pairs"]), seed=int(opts["seed"]), test=opts["test"],
        alpha=float(opts["alpha"]), correction=None if opts["correction"] == "none" else opts["correction"],
        n_resamples=int(opts.get("n_resamples", 1000)), bootstrap=int(opts.get("bootstrap", 0)),
    )
    out = Path(reports_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = list(analysis.write_csv(out) or [])
    d = man["dataset"]
    datasets = pd.DataFrame([{"dataset": d["name"], "users": d["users"], "items": d["items"],
                              "ratings": d["ratings"], "sparsity": d["sparsity"]}])
    primary = (opts["primary_metric"], int(opts["primary_cutoff"]))
    best = best_table(store, primary)
    files += report.write_report(out, analysis.dp, analysis.curves, datasets, best,
                                 _settings(man, opts), primary=primary)
    best.to_csv(out / "best_configs.csv", index=False, lineterminator="\n", float_format="%.10g")
    files.append(out / "best_configs.csv")
    return files


def grid_from_store(store: ResultStore, algorithm: str) -> Grid:
    """Rebuild an algorithm's grid (value order included) from configs.csv and the manifest."""
    man = {a["name"]: a for a in store.manifest()["algorithms"]}
    if algorithm not in man:
        raise input_error(store.root / "manifest.json", "algorithms", f"no algorithm {algorithm!r}")
    cfg = store.configs(algorithm)
    values = {h: list(pd.unique(cfg[h])) for h in man[algorithm]["free"]}
    values = {h: [v.item() if hasattr(v, "item") else v for v in vals] for h, vals in values.items()}
    derived = {k: (v[0], float(v[1])) for k, v in man[algorithm].get("derived", {}).items()}
    family = man[algorithm]["type"]
    return Grid(values=values, derived=derived, family=family, source=str(store.root))


def write_subgrid(results_dir: str | Path, algorithm: str, metric: str, cutoff: int,
                  radius: int, out: str | Path) -> Path:
    """The paper's sub-grid: best value of each hyperparameter by mean metric@cutoff over the
    validation folds, +- ``radius`` grid neighbours; written as a grid TOML file."""
    store = ResultStore(results_dir)
    best = store.best_configs()
    row = best[(best["algorithm"] == algorithm) & (best["metric"] == metric) & (best["cutoff"] == cutoff)]
    if row.empty:
        raise input_error(store.root, "--metric/--cutoff", f"no results for {algorithm} {metric}@{cutoff}")
    grid = grid_from_store(store, algorithm)
    cfg = store.configs(algorithm)
    crow = cfg.loc[cfg["config_id"] == int(row["config_id"].iloc[0])].iloc[0]
    chosen = {h: (crow[h].item() if hasattr(crow[h], "item") else crow[h]) for h in grid.free}
    sub = subgrid_around(grid, chosen, radius)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Sub-grid of {algorithm} around its best configuration by {metric}@{cutoff} "
              f"(+-{radius} grid neighbours), from {store.root}\n"
              f"# best: {', '.join(f'{k}={v}' for k, v in chosen.items())}\n")
    out.write_text(header + sub.to_toml().replace(f'family = "{grid.family}"\n', ""))
    return out


# --------------------------------------------------------------------------- external runs
class RunSetStore:
    """The store protocol of :func:`dptune.dp.analyze` over external TREC runs.

    ``runs/`` holds one run file per system, or one sub-directory per fold with the same file
    names; qrels and train are one file, or a directory with one file per fold (file stem = fold).
    Each system is a configuration of a single algorithm ``runs`` with hyperparameter ``system``.
    """

    def __init__(self, runs: Path, qrels: Path, train: Path, cutoffs: tuple[int, ...],
                 threshold: float, relevance_aware: bool = True):
        from dptune.trec import evaluate_run, read_qrels, read_run, read_train

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
