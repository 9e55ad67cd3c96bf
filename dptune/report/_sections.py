"""Report sections built from an :class:`~dptune.analysis.AnalysisResult` alone: the
experiment settings and the A/A noise floor.

Each function returns the Markdown body of one section (no heading); every table in it is a
:class:`~dptune.report._table.Block`, so it renders like the paper's tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dptune.data._fetch import portable_path
from dptune.report._format import (
    dp_text,
    floor_below,
    name_span,
    ordered_metrics,
    shown_algorithm,
    shown_metric,
    shown_value,
)
from dptune.report._settings import CLAIMS_SETTING, PAIRS_SETTING, VALUE_PAIRS_SETTING
from dptune.report._table import Block, Cell

__all__ = [
    "option",
    "corrected_words",
    "experiment_settings",
    "noise_section",
]

_CORRECTION_TEXT = {
    "none": "none (raw p-values)",
    "holm": "Holm step-down (family-wise error)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
}

def corrected_words(correction: object) -> str:
    """How the Sakai DP's p-values were corrected, said after "p-value" (``""`` for none):
    the fraction is of a fold's pairs whose adjusted p-value is below alpha."""
    key = str(correction)
    if key in ("none", "", "nan"):
        return ""
    return f", adjusted over a fold's pairs by {_CORRECTION_TEXT.get(key, key)},"


def option(options: Any, name: str, default: Any = None) -> Any:
    """One analysis option by name, from an ``AnalysisOptions`` object or a plain mapping."""
    if isinstance(options, Mapping):
        return options.get(name, default)
    return getattr(options, name, default)


def _test_text(options: Any) -> str:
    test = options.paired_test
    if test.name in ("bootstrap", "permutation"):
        return f"{test.label}, {int(option(options, 'n_resamples'))} resamples"
    return test.label


def _bootstrap_text(options: Any, groups: int | None = None) -> str:
    """The settings row of the DP bootstrap, as :mod:`dptune.analysis.dp.bootstrap` runs it
    (``groups``: the random groups it resamples each fold's users in, when known)."""
    b = int(option(options, "bootstrap", 0))
    if b <= 0:
        return "off (no confidence intervals, no claim that one DP is lower than another)"
    test = options.paired_test
    if not test.interval:
        return (f"not run: its replicates are t-tests, and the test here is the {test.label}; "
                "DP has no interval and no difference is claimed")
    return (
        f"{b} replicates of scope all and of every one-at-a-time scope: the users of every "
        f"fold resampled in {'' if groups is None else f'{groups} '}random groups (the same "
        "draws for every scope and metric, "
        "so their replicates are paired), the pairs too when they are a sample of the grid's; "
        "95% studentised interval of the mean p-value on the arcsine scale (each replicate's "
        "error in the spread of its own bootstrap world), its spread read with Student's t "
        "over the user groups (inside [0, 1]; [0, 25] per 25 pairs)"
    )


#: The Bootstrap row's addition when a store holds a sample of some grid's units
#: (:func:`dptune.analysis.dp.units.grid_sample_interval`): those algorithms' intervals are not
#: the studentised arcsine interval the row describes.
GRID_SAMPLE_INTERVAL = (
    "; for the algorithms of the grid sample the units are resampled too, and the interval is "
    "the estimate ± t × its standard error put together from the variances of users, pairs "
    "and units (t at m - 1 degrees of freedom, m = the units run, or at one less than the "
    "pairs of units a one-at-a-time scope rests on when they are fewer), symmetric on the "
    "p-value scale and clipped to [0, 1]; on fewer pairs of units than m, widened to its hull "
    "with the same half-width read on the logit scale (a low estimate's interval reaches "
    "further up)"
)


def _claims_text(options: Any) -> str:
    """The settings row of the claims: their test and error rate, and the stability check under
    the pair seed as the options ask for it (:func:`stability_note` adds what was run)."""
    if int(option(options, "bootstrap", 0)) <= 0 or not options.paired_test.interval:
        return "none (no bootstrap)"
    s = int(option(options, "stability", 1))
    from dptune.analysis.options import STABILITY_SECONDS

    budget = float(option(options, "stability_seconds", STABILITY_SECONDS))
    seeds = ("when the pairs are a sample, it is checked under one pair seed (stability "
             f"check off: stability = {s})" if s <= 1 else
             f"when the pairs are a sample, it must hold under each of {s} pair seeds (fewer "
             f"when the extra seeds would take over stability_seconds = {budget:g} s per "
             "algorithm; the verdict says how many ran)")
    return (f"family-wise error rate {option(options, 'alpha')} per family of metrics (and per "
            "metric@N for the hyperparameters): every pair compared at once by a bootstrap "
            f"max-t test, stepped down (Romano-Wolf); a claim must rest on at least min_pairs = "
            f"{int(option(options, 'min_pairs'))} pairs; {seeds}")


def pair_seeds_run(dp: Any) -> dict[str, int]:
    """Per algorithm with sampled scopes (fewer pairs than possible), the pair seeds its claims
    were checked under (dp.csv's ``repeats``, the most over those scopes), in dp.csv's order;
    empty when dp.csv lacks the columns. The one reading of what the stability check ran, for
    the settings row and the methods text."""
    need = {"algorithm", "n_pairs", "n_possible_pairs", "repeats"}
    if dp is None or not need <= set(dp.columns):
        return {}
    sampled = dp[dp["n_pairs"] < dp["n_possible_pairs"]]
    return {str(a): int(r)
            for a, r in sampled.groupby("algorithm", sort=False)["repeats"].max().items()}


def noise_runs(noise: Any) -> dict[str, tuple[int, int]]:
    """Per algorithm of a noise floor (:class:`dptune.analysis.noise.NoiseFloor`), the
    configurations it re-trained and the most seeds of one of its runs; empty without one. The
    one reading of the floor's runs, for the settings row and the methods text."""
    if noise is None:
        return {}
    return {a: (len(c), int(noise.seeds.get(a, 0))) for a, c in noise.configs.items()}


def stability_note(dp: Any, options: Any) -> str:
    """What the claims settings row adds about the stability check as run: the algorithms whose
    sampled scopes were checked under fewer pair seeds than ``options.stability`` asks for
    (:func:`pair_seeds_run`), or ``""``."""
    s = int(option(options, "stability", 1))
    if s <= 1:
        return ""
    fewer = {a: r for a, r in pair_seeds_run(dp).items() if r < s}
    if not fewer:
        return ""
    runs = ", ".join(f"{shown_algorithm(a)} ({int(r)} pair seed{'' if r == 1 else 's'})"
                     for a, r in fewer.items())
    return f"; fewer were run for {runs}"


def _noise_text(options: Any, primary_text: str,
                stochastic: Mapping[str, bool] | None = None,
                used: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The settings row of the A/A noise floor; ``stochastic``: which algorithms train with a
    seed (the result's :attr:`~dptune.analysis.result.AnalysisResult.stochastic`), when known:
    with none, there are no seeds to re-train with, whatever the option asks for. ``used``:
    per algorithm, the configurations and the most seeds the floor was computed from (the
    result's noise floor): the row says what was used, and what was asked when the store held
    less (``--noise-seeds 10`` of a store of 5 seeds)."""
    s = int(option(options, "noise_seeds"))
    if s <= 0:
        return "off"
    if stochastic and not any(stochastic.values()):
        return ("none: every algorithm is deterministic (training uses no seed; re-training "
                "gives identical results)")
    n = int(option(options, "noise_configs"))

    def runs(seeds: int, configs: int) -> str:
        which = "the best configuration" if configs == 1 else f"the {configs} best configurations"
        return f"{seeds} seeds of {which}"

    asked = runs(s, n)
    kinds = set((used or {}).values())  # (configurations, seeds) of each algorithm's floor
    if not kinds:
        said = asked
    elif len(kinds) == 1:
        ((c, k),) = kinds
        said = runs(k, c)
    else:  # algorithms with different runs: each named
        said = "; ".join(f"{shown_algorithm(a)}: {runs(k, c)}" for a, (c, k) in used.items())
    less = bool(kinds) and said != asked
    return (
        f"{said} by validation {primary_text} per stochastic algorithm, on every validation "
        "fold; A/A pairs tested with the DP's test"
        + (f" ({asked} asked for; the store holds fewer)" if less else "")
    )


def _dropped(n: object) -> str:
    """How many users the split dropped, in words: "none here", "1 user", "12 users" (a bare
    "(0)" after "dropped" read as a count of nothing or a setting)."""
    try:
        k = int(n)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return str(n)
    return "none here" if k == 0 else f"{k:,} user{'' if k == 1 else 's'}"


def experiment_settings(manifest: Mapping[str, Any], options: Any,
                        bootstrap_groups: int | None = None,
                        stochastic: Mapping[str, bool] | None = None,
                        noise_used: Mapping[str, tuple[int, int]] | None = None
                        ) -> dict[str, Any]:
    """The settings table of a sweep's report: data, split, evaluation and analysis options
    (``options``: :class:`dptune.AnalysisOptions`; ``bootstrap_groups`` and ``stochastic``:
    the result's :attr:`~dptune.analysis.result.AnalysisResult.bootstrap_groups` and
    :attr:`~dptune.analysis.result.AnalysisResult.stochastic`; ``noise_used``: per algorithm,
    the configurations and seeds its noise floor was computed from, :func:`_noise_text`). The
    primary metric's row names the metric; what it is used for is said once, in the line
    before the report's sections (:func:`dptune.report._document.primary_line`), which knows
    what the report holds (a Table 5, a noise floor): the row named them all in a report that
    had neither."""
    sp, ev = manifest["split"], manifest["evaluation"]
    cutoff = int(option(options, "primary_cutoff"))
    primary_text = shown_metric(option(options, "primary_metric"), cutoff)
    alpha, correction = option(options, "alpha"), option(options, "correction")
    seed = option(options, "seed")
    return {
        "Experiment": manifest["experiment"],
        "Data set": f"{manifest['dataset']['name']} ({portable_path(manifest['dataset']['source'])})",
        "Test split": f"{sp['method']} hold-out, train ratio {sp['train_ratio']}, "
        f"users with < {sp['min_user_interactions']} interactions dropped "
        f"({_dropped(sp['dropped_users'])})",
        "Validation": f"{sp['folds']}-fold cross-validation on the training part "
        f"({sp['fold_method']})",
        "Split seed": sp["split_seed"],
        "Relevance threshold": f"{ev['relevance_rule']} (threshold {ev['relevance_threshold']})",
        "Metric variant": f"novelty metrics {ev['novelty_variant']}; binary-gain nDCG",
        "Protocol": ev["protocol"],
        "Cutoffs": ", ".join(str(c) for c in ev["cutoffs"]),
        "Primary metric": f"{primary_text} (what it is used for: the line \"Primary metric\" "
        "before the sections); it is not a recommendation (the verdict is)",
        PAIRS_SETTING: option(options, "pairs"),
        VALUE_PAIRS_SETTING: options.scope_value_pairs,
        "Pair-sampling seed": seed,
        "Statistical test": _test_text(options),
        "Alpha": alpha,
        "Correction (Sakai DP)": _CORRECTION_TEXT[correction],
        "Sakai DP": f"fraction of a fold's pairs whose p-value{corrected_words(correction)} is "
        f"below {alpha}",
        "Fold sd": "sample standard deviation across folds (ddof=1)",
        "Bootstrap": _bootstrap_text(options, bootstrap_groups),
        CLAIMS_SETTING: _claims_text(options),
        "Noise floor": _noise_text(options, primary_text, stochastic, noise_used),
        "Hyperparameter importance": (
            f"fANOVA and PED-ANOVA (optuna) of the mean validation metric@{cutoff}, seed {seed}"
            if option(options, "importance")
            else "off"
        ),
        "Versions": ", ".join(
            f"{k} {v}" for k, v in sorted(manifest.get("versions", {}).items())
        ),
    }


def _config_text(configs: Any, algorithm: str, config_id: int) -> str:
    """``config 3 (k=10, shrink=0.5)``: values in the report's one hyperparameter format
    (:func:`dptune.report._format.display_value`)."""
    cfg = configs.configs(algorithm)
    row = cfg.loc[cfg["config_id"] == config_id]
    if row.empty:
        return f"config {config_id}"
    params = ", ".join(f"{name_span(n)}={shown_value(row.iloc[0][n])}"
                       for n in configs.hyperparameters(algorithm))
    return f"config {config_id} ({params})"


def noise_section(configs: Any, result: Any) -> str:
    """The A/A noise-floor section: set-up, DP per 25 pairs beside the floor per metric@N,
    flagged metrics (:func:`dptune.analysis.noise.compare_with_floor` computes them), the runs
    (the noise floor's configurations and seeds) and which algorithms train without a seed (the
    result's :attr:`~dptune.analysis.result.AnalysisResult.stochastic`). ``configs``: the
    result's configurations by algorithm (``algorithms()``, ``configs(a)``,
    ``hyperparameters(a)``)."""
    opts = result.options
    det = [a for a, seeded in result.stochastic.items() if not seeded]
    det_text = ""
    if det:
        det_text = (
            ", ".join(shown_algorithm(a) for a in det)
            + (" is" if len(det) == 1 else " are")
            + " deterministic (training uses no seed; re-training gives identical "
            "results): no noise floor."
        )
    if result.outside:
        return ("None: outside data cannot be re-trained with other seeds, which an A/A noise "
                "floor needs.")
    if int(option(opts, "noise_seeds")) <= 0:
        return "Off (`noise_seeds = 0`)."
    table = None if result.noise is None else result.noise.versus_dp
    if table is None or table.empty:
        if not any(result.stochastic.values()):
            return det_text or "No algorithm of this experiment depends on a seed."
        return (
            "No noise-floor runs in this results directory (`dptune run` trains them after "
            "the sweep when `noise_seeds > 0`). " + det_text
        ).strip()
    primary = shown_metric(option(opts, "primary_metric"), int(option(opts, "primary_cutoff")))
    used = []
    for alg, seeds in result.noise.seeds.items():
        cfgs = ", ".join(_config_text(configs, alg, c) for c in result.noise.configs.get(alg, ()))
        used.append(f"{shown_algorithm(alg)}: {cfgs}, {seeds} seeds")
    has_ci = bool(table["ci_high"].notna().any())
    # the rule the analysis applied to each row (noise_floor.csv's ``rule``): the test where DP
    # has an interval; without one the comparison is a description, "below", never "clearly"
    tested = floor_below(table) == "clearly below"
    rule = ("the floor exceeds its DP by more than both estimates' errors together (floor - DP > "
            "sqrt(h_DP^2 + h_floor^2), the upper half-width of DP's 95% bootstrap interval and "
            "the half-width of the floor's 95% interval, t over folds; a one-sided test at "
            "about 2.5% for each metric@N, measured when a metric's DP is in truth its floor)")
    test_words = (f"A metric is clearly below its floor when {rule}; otherwise it is flagged: "
                  "its configuration differences are not clearly larger than re-training noise.")
    plain_words = ("a metric is below its floor when its DP is below the floor (the floor's own "
                   "interval is shown, not used); otherwise it is flagged: its configuration "
                   "differences are not larger than re-training noise.")
    if tested:  # every row by the test
        verdict_words = test_words
    elif not has_ci:  # no row has an interval: no bootstrap
        verdict_words = ("With no bootstrap, DP has no interval, so the comparison is no test "
                         "and has no error rate: " + plain_words)
    else:  # rows of both rules
        verdict_words = (test_words + " A DP without an interval (see the table) is compared "
                         "with no test and no error rate: " + plain_words)
    lines = [
        "The best configuration(s) of each stochastic algorithm by validation "
        f"{primary} were re-trained with different seeds on every validation fold; every pair of "
        "seeds is an A/A pair (same configuration: what re-training alone changes), tested over "
        "the fold's "
        "users with the DP's test. Per fold the A/A p-values are sorted decreasingly and "
        "resampled to the DP's P positions, then averaged over folds: each metric's A/A curve "
        "(Figure 1's grey band spans its panel's metrics' A/A curves, from the lowest to the "
        "highest at each pair rank, their mean dashed). The floor is on the scale of every DP here: 25 × the mean A/A p-value, with its "
        "95% interval over folds. Pairs of models whose per-user values differed by chance "
        "alone (no difference in truth) would give 12.5, uniform p-values; re-trained models "
        "do differ, so a floor below 12.5 is the difference re-training alone makes. A floor "
        "near or above 12.5 says re-training moves that metric no more than chance would: "
        "users whose values re-training leaves unchanged (a top-N list that keeps its relevant "
        "items) push it up, and models with equal values for every user would give 25. "
        + verdict_words,
        "",
        "Runs: " + "; ".join(used) + ".",
        "",
    ]
    if det_text:
        lines += [det_text, ""]
    header = ["Algorithm", "Metric", "DP per 25 pairs" + (" [95% CI]" if has_ci else ""), "P",
              "Floor per 25 pairs [95% CI]", "DP / floor",
              # "clearly" where the rows were tested: a DP below its floor, only not clearly
              # (DP / floor 0.79), is not "no" to "Below floor?"
              f"{floor_below(table).capitalize()} floor?"]
    rank = {m: i for i, m in enumerate(ordered_metrics(table["metric"].unique()))}
    t = table.assign(_m=table["metric"].map(rank))
    order = {a: i for i, a in enumerate(configs.algorithms())}
    t = t.assign(_a=t["algorithm"].map(order)).sort_values(["_a", "cutoff", "_m"], kind="stable")
    n_pairs = result.dp.table.set_index(["algorithm", "scope", "metric", "cutoff"])["n_pairs"]
    rows = []
    for r in t.itertuples(index=False):
        cells = [
            Cell(shown_algorithm(r.algorithm)),
            Cell(shown_metric(r.metric, r.cutoff)),
            Cell(dp_text(r.dp_per_25, r.ci_low, r.ci_high), numeric=True),
            Cell(str(int(n_pairs.get((r.algorithm, "all", r.metric, r.cutoff), 0))),
                 numeric=True),
            Cell(dp_text(r.floor_per_25, r.floor_ci_low, r.floor_ci_high), numeric=True),
            Cell(f"{r.ratio:.2f}", numeric=True),
            Cell("no: flagged", bold=True) if r.flagged else Cell("yes"),
        ]
        rows.append(cells)
    lines += [Block([Cell(h) for h in header], rows).to_markdown(), ""]
    for alg in dict.fromkeys(t["algorithm"]):
        ta = t[t["algorithm"] == alg]
        bad = ta[ta["flagged"]]
        name = shown_algorithm(alg)
        if bad.empty:
            lines.append(
                f"- {name}: every metric@N is {floor_below(ta)} its noise floor "
                f"({len(ta)} of {len(ta)})."
            )
        else:
            listed = ", ".join(
                shown_metric(m, c) for m, c in zip(bad["metric"], bad["cutoff"], strict=True)
            )
            lines.append(
                f"- {name}: {len(bad)} of {len(ta)} metric@N not "
                f"{floor_below(bad, negated=True)} the noise "
                f"floor: {listed}."
            )
        if len(ta) and bool((ta["floor_mean_p"] >= 1.0).all()):
            lines.append(
                f"- {name}: every A/A pair had identical per-user values (the model "
                "ignores its seed in practice), so the floor is 25 (every p-value 1)."
            )
    lines += [
        "",
        "Data: `noise_floor.csv` (DP beside its floor), `noise_curves.csv`, "
        "`noise_pvalues.parquet` (every A/A p-value).",
    ]
    return "\n".join(lines)

