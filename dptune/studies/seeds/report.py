"""Tables and Markdown report of the split-seed study, rendered through the report package's
table model (:class:`dptune.report.Table` / ``Block`` / ``Cell``).

The report's plain tables (pooled tests, grid stability, Kendall's tau) keep the unaligned
``| --- |`` separator row of the committed reports (byte identity); the settings table and
``seeds_summary`` use the model's alignment (``:---`` text, ``---:`` numbers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dptune.report import Block, Cell, Table, display_algorithm, display_metric
from dptune.report._format import on_its_side
from dptune.studies._markdown import markdown_table, shown_path
from dptune.studies.seeds.runs import SeedPlan, config_text
from dptune.studies.seeds.settings import SPLITS, SeedSettings
from dptune.vocab import display_params

__all__ = ["summary_table", "seeds_report_md"]


def _f(x: Any, d: int = 2) -> str:
    """``x`` with ``d`` decimals, ``–`` when not finite, ``str(x)`` when not a number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "–" if not np.isfinite(v) else f"{v:.{d}f}"


#: The family-wise level of the claims: the tables bold a Holm-adjusted p-value below it, and
#: the text calls such a difference significant.
ALPHA = 0.05

#: The kinds of the metrics, named in the summary table's caption (the table holds every
#: metric@N of the study, not only accuracy).
_METRIC_KINDS = (("accuracy", ("ndcg", "precision", "recall", "mrr")), ("novelty", ("efd", "epc")))


def _p(x: Any) -> str:
    """A p-value: 3 decimals, ``< 0.001`` below that, ``–`` when not finite; never rounded onto
    or across :data:`ALPHA` (0.04986 is printed 0.0499, bold, not 0.050;
    :func:`dptune.report._format.on_its_side`)."""
    v = float(x)
    if not np.isfinite(v):
        return "–"
    return "< 0.001" if v < 0.001 else on_its_side(v, f"{v:.3f}", ALPHA)


def _frame_table(df: pd.DataFrame) -> str:
    """An unaligned Markdown table of a frame of display strings (columns = header)."""
    return markdown_table(list(df.columns), list(df.itertuples(index=False)), aligned=False)


def _measured(metrics: Any) -> str:
    """What the table's values are, by kind: ``accuracy (nDCG, Precision) and novelty (EFD)``;
    a metric of no known kind is named as it is."""
    present = list(dict.fromkeys(metrics))
    parts = []
    for kind, keys in _METRIC_KINDS:
        names = [display_metric(m) for m in keys if m in present]
        if names:
            parts.append(f"{kind} ({', '.join(names)})")
    known = {m for _, keys in _METRIC_KINDS for m in keys}
    other = [display_metric(m) for m in present if m not in known]
    if other:
        parts.append(f"other metrics ({', '.join(other)})")
    return " and ".join(parts) if parts else "metric"


def _family(summary: pd.DataFrame) -> int:
    """The number of cells the summary's ``p_holm`` is adjusted over (``holm_family``)."""
    return int(summary["holm_family"].iloc[0]) if len(summary) else 0


def summary_table(summary: pd.DataFrame, n_seeds: int,
                  settings: SeedSettings | None = None) -> Table:
    """``seeds_summary`` as a report table: extremes and range per split, the smaller range bold,
    the Holm-adjusted p of :func:`dptune.studies.seeds.stats.holm_over_cells` (bold below
    :data:`ALPHA`); the caption names the study's splits (``settings``, the defaults when
    none)."""
    settings = settings if settings is not None else SeedSettings()
    header = [Cell(t) for t in ("Algorithm", "Metric")] + [
        Cell(t, numeric=True) for t in (
            "HO min %", "HO max %", "HO range", "CV min %", "CV max %", "CV range",
            "p (MWU, Holm)")]
    rows, rules = [], set()
    prev = None
    for i, r in enumerate(summary.itertuples(index=False)):
        if prev is not None and r.algorithm != prev:
            rules.add(i - 1)
        prev = r.algorithm
        ho, cv = r.holdout_range, r.cv_range
        # a range as the difference of its extremes as printed (102.84 - 97.08 reads 5.76, not
        # the raw 5.75); the bold compares the raw ranges
        ho_shown = float(_f(r.holdout_max_pct)) - float(_f(r.holdout_min_pct)) \
            if np.isfinite(ho) else ho
        cv_shown = float(_f(r.cv_max_pct)) - float(_f(r.cv_min_pct)) if np.isfinite(cv) else cv
        rows.append([
            Cell(display_algorithm(r.algorithm)),
            Cell(display_metric(r.metric, int(r.cutoff))),
            Cell(_f(r.holdout_min_pct), numeric=True),
            Cell(_f(r.holdout_max_pct), numeric=True),
            Cell(_f(ho_shown), bold=bool(ho < cv), numeric=True),
            Cell(_f(r.cv_min_pct), numeric=True),
            Cell(_f(r.cv_max_pct), numeric=True),
            Cell(_f(cv_shown), bold=bool(cv < ho), numeric=True),
            Cell(_p(r.p_holm), bold=bool(r.p_holm < ALPHA), numeric=True),
        ])
    ds = ", ".join(dict.fromkeys(summary["dataset"])) if len(summary) else ""
    caption = (f"Split-seed study on {ds}: {_measured(summary['metric'])} of each of {n_seeds} "
               f"data-split seeds as % of the mean over seeds (extremes and range = max - min, in "
               f"percentage points), {settings.design_text()}. Bold range: the "
               f"smaller of the two; p: two-sided Mann-Whitney U (Wilcoxon rank-sum) test of "
               f"|% - 100| HO vs CV, Holm-adjusted over the {_family(summary)} (algorithm, "
               f"metric@N) cells of the study (family-wise error rate {ALPHA:.0%}), bold when "
               f"< {ALPHA:g}; the unadjusted p is mwu_p in seeds_summary.csv.")
    return Table("seeds_summary", caption, [Block(header, rows, rules_after=rules)], summary)


def _pairs_text(grid: pd.DataFrame) -> str:
    """Pairs per algorithm, e.g. ``25 (User-kNN), 15 (Item-kNN)``."""
    per = grid.groupby("algorithm", sort=False)["n_pairs"].max()
    return ", ".join(f"{v} ({display_algorithm(a)})" for a, v in per.items())


def _grid_findings(grid: pd.DataFrame, stab: pd.DataFrame, kendall: pd.DataFrame,
                   n_seeds: int) -> list[str]:
    """Key sentences of the grid part: agreement on the best configuration, on the most
    discriminative metric, and the rank correlation of the DP rankings."""
    out = []
    for alg in dict.fromkeys(stab["algorithm"]):
        s = stab[stab["algorithm"] == alg]
        name = display_algorithm(alg)
        unanimous = int((s["n_distinct_best"] == 1).sum())
        worst = s.loc[s["modal_share"].idxmin()]
        out.append(f"- {name}, best configuration: the modal choice is made by a median "
                   f"{s['modal_share'].median():.0%} of the seeds; all seeds agree in {unanimous} "
                   f"of {len(s)} metric@N; least stable "
                   f"{display_metric(worst['metric'], int(worst['cutoff']))} "
                   f"({round(worst['modal_share'] * n_seeds)}/{n_seeds} seeds pick "
                   f"{display_params(worst['modal_best_params'])}, "
                   f"{int(worst['n_distinct_best'])} distinct).")
        tops = []
        for c in sorted(s["cutoff"].unique()):
            g = grid[(grid["algorithm"] == alg) & (grid["cutoff"] == c) & (grid["dp_rank"] == 1)]
            counts = g.groupby("metric")["seed_index"].nunique()
            best = counts[counts == counts.max()].index
            label = " = ".join(display_metric(m, int(c)) for m in best)
            tops.append(f"N = {c}: {label} in {int(counts.max())}/{n_seeds}")
        k = kendall[(kendall["algorithm"] == alg) & (kendall["cutoff"] == "all")]["tau"]
        out.append(f"- {name}, most discriminative metric (lowest DP; metrics with identical "
                   f"per-user values tie): {'; '.join(tops)}. Kendall tau over every metric@N: "
                   f"mean {k.mean():.3f}, min {k.min():.3f}.")
    return out


def _settings_section(p: SeedPlan, dataset: str, trials: pd.DataFrame) -> list[str]:
    """``## Settings``: one row per choice of the study (data, seeds, splits, configurations)."""
    exp, st = p.exp, p.settings
    ev = exp.evaluation
    cfg_lines = []
    for a in exp.algorithms:
        cid, cfg = p.configs[a.name]
        tag = f"config_id {cid}" if cid >= 0 else "not in the grid"
        text = display_params(config_text(cfg, exp.grids[a.name].free))
        cfg_lines.append(f"{display_algorithm(a.name)}: {text} ({tag})")
    fit = trials.groupby(["algorithm", "split"])["fit_seconds"].sum()
    settings = [
        ("Experiment", f"{shown_path(exp.source)} ({exp.name})"),
        ("Data set", f"{dataset}; users with < {exp.split.min_user_interactions} ratings removed "
                     f"first (same users for both splits)"),
        ("Data-split seeds", f"S = {len(p.seeds)}: s_i = derive_seed({exp.split_seed}, \"seed-study\", i); "
                             f"values in seeds_per_seed.csv"),
        ("Hold-out", f"split.random_holdout(ratings, {st.train_ratio}, s_i): per-user random "
                     f"{st.holdout_shares()}"),
        ("Cross-validation", f"split.kfold_labels(ratings, {st.folds}, s_i): global random "
                             f"{st.folds}-fold; a seed's value = mean over its {st.folds} folds"),
        ("Configurations", "; ".join(cfg_lines)),
        ("Model seeds", "derive_seed(experiment seed, algorithm, split, s_i, fold), in "
                        "seeds_trials.csv"),
        ("Evaluation", f"all unrated items; relevant = rating >= {ev.relevance_threshold}; users "
                       f"with a relevant held-out item; novelty {ev.novelty}"),
        ("% of mean", "100 * v_i / mean_i(v_i), per split (mean of the column = 100)"),
        ("HO vs CV test", "two-sided Mann-Whitney U (Wilcoxon rank-sum) of abs(% - 100): the "
                          "splits of one seed are unrelated draws, so the samples are unpaired; "
                          "per cell, p Holm-adjusted over every (algorithm, metric@N) cell of the "
                          f"study (family-wise error rate {ALPHA:.0%}); pooled per algorithm, one "
                          "value per seed (its mean abs(% - 100) over the pooled cells)"),
        ("Fit time (sum over seeds and folds)", "; ".join(f"{display_algorithm(a.name)} {st.split_name(s)} "
                                    f"{fit.get((a.name, s), 0.0):.0f} s"
                                    for a in exp.algorithms for s in SPLITS)),
    ]
    return ["## Settings", "",
            markdown_table(["Setting", "Value"], [(k, v.replace("|", "/")) for k, v in settings])]


def _deviation_section(summary: pd.DataFrame, pooled: pd.DataFrame, figm: list[str],
                       settings: SeedSettings,
                       n_seeds: int) -> list[str]:
    """``## Deviation from the mean accuracy``: key numbers, pooled tests, the summary table."""
    L = ["", "## Deviation from the mean accuracy", "",
         "![Figure: % of mean per seed, hold-out vs CV](seeds_figure.png)", ""]
    for s in SPLITS:
        col = f"{s}_max_abs_dev"
        sub = summary[summary["metric"].isin(figm)] if figm else summary
        r = sub.loc[sub[col].idxmax()]
        L.append(f"- Largest deviation under {settings.split_name(s)} ({', '.join(display_metric(m) for m in figm)}): "
                 f"{_f(r[col])} % ({display_algorithm(r['algorithm'])}, "
                 f"{display_metric(r['metric'], int(r['cutoff']))}; "
                 f"range {_f(r[f'{s}_min_pct'])}-{_f(r[f'{s}_max_pct'])} %).")
    smaller = int((summary["cv_range"] < summary["holdout_range"]).sum())
    sig = summary["p_holm"] < ALPHA
    sig_cv = int((sig & (summary["cv_median_abs_dev"] < summary["holdout_median_abs_dev"])).sum())
    L.append(f"- CV has the smaller range in {smaller} of {len(summary)} (algorithm, metric@N) "
             f"cells; |deviation| differs significantly in {int(sig.sum())} (Holm-adjusted "
             f"p < {ALPHA:g} over the {_family(summary)} cells, family-wise error rate "
             f"{ALPHA:.0%}), of which {sig_cv} in favour of CV.")
    over = (f"{', '.join(display_metric(m) for m in figm)} of every algorithm" if figm
            else "every metric and algorithm")
    for c in sorted(summary["cutoff"].unique()):
        sub = summary[(summary["cutoff"] == c) & summary["metric"].isin(figm or summary["metric"])]
        L.append(f"- N = {c}: median range {_f(sub['holdout_range'].median())} points (HO) vs "
                 f"{_f(sub['cv_range'].median())} (CV), over {over}.")
    pooled_cells = f"{' + '.join(display_metric(m) for m in figm)} x every cutoff"
    L += ["", f"Pooled per algorithm as in the paper: the largest and the median |dev| over "
          f"{pooled_cells} x seed, as descriptions (the pooled values share seeds and are not "
          f"independent). The test is over the seeds, the independent units: each seed of a "
          f"split is reduced to one value, its mean |dev| over {pooled_cells}, and p is the "
          f"two-sided Mann-Whitney U test of these per-seed means, HO vs CV (n = seeds per "
          f"split; one test per algorithm, not adjusted for multiplicity).", ""]
    L += [_frame_table(pd.DataFrame({
        "Algorithm": [display_algorithm(a) for a in pooled["algorithm"]],
        "pooled values (HO / CV)": [f"{a} / {b}" for a, b in zip(
            pooled["n_holdout"], pooled["n_cv"], strict=True)],
        "max abs dev HO %": [_f(v) for v in pooled["holdout_max_abs_dev"]],
        "max abs dev CV %": [_f(v) for v in pooled["cv_max_abs_dev"]],
        "median abs dev HO %": [_f(v, 3) for v in pooled["holdout_median_abs_dev"]],
        "median abs dev CV %": [_f(v, 3) for v in pooled["cv_median_abs_dev"]],
        "seeds (HO / CV)": [f"{a} / {b}" for a, b in zip(
            pooled["n_seeds_holdout"], pooled["n_seeds_cv"], strict=True)],
        "median seed-mean abs dev HO %": [
            _f(v, 3) for v in pooled["holdout_median_seed_mean_abs_dev"]],
        "median seed-mean abs dev CV %": [_f(v, 3) for v in pooled["cv_median_seed_mean_abs_dev"]],
        "p (MWU over seeds)": [_p(v) for v in pooled["mwu_p"]],
    })), ""]
    tab = summary_table(summary[summary["metric"].isin(figm)] if figm else summary, n_seeds,
                        settings)
    return L + [tab.to_markdown(), "All metrics: `seeds_summary.csv` / `seeds_summary.md` / "
                "`seeds_summary.tex`; every seed: `seeds_per_seed.csv`.", ""]


def _grid_section(p: SeedPlan, grid: pd.DataFrame, kendall: pd.DataFrame,
                  stab: pd.DataFrame) -> list[str]:
    """``## Grid``: stability of the best configuration and of the DP ranking over seeds."""
    exp, st = p.exp, p.settings
    gs = sorted(grid["seed_index"].unique())
    n = len(gs)
    L = ["## Grid: best configuration and metric ranking vs seed", "",
         f"The whole grid of {', '.join(display_algorithm(a) for a in p.grid_algorithms)} "
         f"trained on the {st.folds} CV folds of each of the first {n} seeds; best "
         f"configuration = highest mean over folds (ties: lowest config_id); DP per 25 pairs (25 x the "
         f"mean p-value) with "
         f"P = {_pairs_text(grid)} pairs (at most {exp.analysis.pairs}; analysis seed "
         f"{exp.analysis_seed}, the same pairs for every seed), {exp.analysis.test}-test, "
         f"p-value curves averaged over the folds.", ""]
    L += _grid_findings(grid, stab, kendall, n) + [""]
    L += [_frame_table(pd.DataFrame({
        "Algorithm": [display_algorithm(a) for a in stab["algorithm"]],
        "Metric": [display_metric(m, int(c)) for m, c in zip(stab["metric"], stab["cutoff"], strict=True)],
        "modal best": [display_params(v) for v in stab["modal_best_params"]],
        "seeds picking it": [f"{round(s * n)}/{n}" for s in stab["modal_share"]],
        "distinct best": stab["n_distinct_best"],
        "DP per 25 pairs, mean ± sd": [f"{_f(a, 3)} ± {_f(b, 3)}" for a, b in zip(
            stab["dp_per_25_mean"], stab["dp_per_25_sd"], strict=True)],
        "P": stab["n_pairs"],
        "lowest DP in": [f"{round(s * n)}/{n}" for s in stab["top_share"]],
    })), "", "Kendall's tau-b between the DP rankings of two seeds "
        "(all seed pairs; cutoff `all` ranks every metric@N):", ""]
    kt = kendall.groupby(["algorithm", "cutoff"], sort=False)["tau"]
    kdf = kt.agg(["count", "mean", "median", "min"]).reset_index()
    kdf["share tau = 1"] = kendall.assign(one=np.isclose(kendall["tau"], 1.0)).groupby(
        ["algorithm", "cutoff"], sort=False)["one"].mean().to_numpy()
    return L + [_frame_table(pd.DataFrame({
        "Algorithm": [display_algorithm(a) for a in kdf["algorithm"]],
        "Cutoff": kdf["cutoff"], "seed pairs": kdf["count"],
        "mean tau": [_f(v, 3) for v in kdf["mean"]],
        "median tau": [_f(v, 3) for v in kdf["median"]],
        "min tau": [_f(v, 3) for v in kdf["min"]],
        "identical ranking": [f"{v:.0%}" for v in kdf["share tau = 1"]]})), ""]


def seeds_report_md(p: SeedPlan, dataset: str, summary: pd.DataFrame, pooled: pd.DataFrame,
                    grid: pd.DataFrame | None, kendall: pd.DataFrame | None,
                    stability: pd.DataFrame | None, trials: pd.DataFrame) -> str:
    """``seeds_report.md``: settings, deviation from the mean, the grid part, the files."""
    figm = p.settings.figure_metrics_of(
        [m for m in p.exp.evaluation.metrics if m in set(summary["metric"])])
    L: list[str] = [f"# Split-seed study: {dataset}", "",
                    "Reproduces the design of Wegmeth et al. (PERSPECTIVES 2023) inside dptune "
                    "(see `docs/seeds-and-slices.md`).", ""]
    L += _settings_section(p, dataset, trials)
    L += _deviation_section(summary, pooled, figm, p.settings, len(p.seeds))
    if grid is not None and len(grid):
        L += _grid_section(p, grid, kendall, stability.copy())
    L += ["## Files", "",
          "`seeds_per_seed.csv` (dataset, algorithm, split, seed, metric, cutoff, value, "
          "pct_of_mean, seed_index, config_id), `seeds_summary.csv/.md/.tex`, "
          "`seeds_pooled.csv`, `seeds_trials.csv` (model seed and timings of every run), "
          "`seeds_grid.csv` (best configuration and DP rank per seed), `seeds_grid_stability.csv`, "
          "`seeds_kendall.csv`, `seeds_figure.png/.svg`.", ""]
    return "\n".join(L)
