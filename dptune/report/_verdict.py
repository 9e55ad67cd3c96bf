"""The summary and the verdict, first in report.md and alone in verdict.md: which metric to tune
with, and which hyperparameter dominates.

Renders the analysis' numeric tables (verdict.csv, comparisons.csv, dominance.csv,
downstream.csv, dp.csv, the noise floor) as sentences a researcher can paste, a table of the
verdict's key columns and the DP figure of each cutoff. Every DP is DP per 25 pairs with P
beside it; "P" is only ever a number of pairs; the probability from the bootstrap is written
``Pr(more discriminative)``. Nothing here computes a number: each one is read from the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from dptune.report._format import (
    MISSING,
    NO_INTERVAL,
    NO_INTERVAL_WHY,
    adjusted_p_text,
    and_list,
    dp_text,
    flag,
    floor_below,
    fmt,
    grid_sample_text,
    is_missing,
    name_span,
    ordered_algorithms,
    p_clause,
    pair_count_text,
    pair_seeds_text,
    pct,
    pct_is,
    shown_algorithm,
    shown_hyperparameter,
    shown_metric,
    shown_params,
    verdict_choices,
    verdict_keys,
)
from dptune.report._inputs import has_intervals
from dptune.report._table import Block, Cell, md_names

__all__ = ["summary_section", "verdict_sentences", "verdict_section", "verdict_document",
           "recommendation_text", "choices_text", "claims_legend"]


def claims_legend(alpha: float, test_split: bool = True, intervals: bool = True,
                  floor: bool = True, dominance: bool = True) -> str:
    """What the verdict's words mean, said before the first of them is printed, with the error
    rate ``alpha`` as a number; ``test_split``: whether the data has held-out values (outside
    data may not: then no test split is spoken of); ``intervals``: whether the DPs have their
    bootstrap intervals and the claims built on them (not with the bootstrap off, nor under a
    paired test without an interval): without them the legend speaks of neither; ``floor``:
    whether there is an A/A noise floor, ``dominance``: whether configurations differ in
    hyperparameters (not so for outside runs): the legend speaks of what the report has."""
    a = pct(alpha)
    downstream = (
        "*Downstream* asks whether the choice of metric matters: which configuration each "
        "metric of the family selects on the validation folds, and whether these "
        "configurations differ on the *test split*, the held-out part of each user's "
        "interactions that no fold and no selection used (paired t-test over the test users, "
        f"significant at p < {a})." if test_split else
        "*Downstream* asks whether the choice of metric matters: which configuration each "
        "metric of the family selects; the data has no held-out values, so whether these "
        "differ beyond the data at hand is not judged.")
    scale = ("How to read it: lower DP = more discriminative; every DP is DP per 25 pairs (25 × "
             "the mean p-value of its P pairs of configurations; the paper's DP when P = 25)")
    if not intervals:
        return (
            f"{scale}, without an interval: the bootstrap is off, or the paired test has no "
            "interval (see Bootstrap in the settings). So no metric is called significantly "
            "less discriminative, the metrics of a family are offered as choices with *no "
            "difference tested*, no hyperparameter is named dominant, and the lowest DP alone "
            "does not make a metric the better one."
            + (" The *A/A noise floor* is the DP of pairs that are one configuration re-trained "
               "with different seeds (no difference of configuration; report.md, section Noise "
               "floor)." if floor else "") + f" {downstream}")
    return (
        f"{scale}, with its "
        "95% bootstrap interval in brackets. *Significantly less discriminative* is a claim with "
        f"a family-wise error rate of at most alpha = {a}: all the metrics of a family are "
        "compared at once (a bootstrap max-t test, stepped down), so the chance that a row "
        "names any metric that is in truth at least as discriminative as the recommended one "
        f"is at most {a}, although the recommended one was chosen as the lowest; its *adjusted "
        "p* is the smallest such rate at which the claim holds. *Tune with A or B, no "
        "significant difference*: B is not significantly less discriminative than A, the "
        "lowest DP, so either is an equal choice (no difference was shown, which is not a "
        "difference shown to be absent); the lowest DP alone does not make A the better one. *Pr(more discriminative)* is the share of bootstrap replicates in which "
        "the recommended metric has the lower DP (under the pair seed whose DPs are printed): a "
        "description, not a test."
        + (" The *A/A noise floor* is the DP of pairs that are one configuration re-trained "
           "with different seeds (no difference of configuration; report.md, section Noise "
           "floor), itself an estimate with an interval: a metric is *clearly below* it when "
           "the floor exceeds its DP by more than both intervals' half-widths combined, "
           "sqrt(h_DP^2 + h_floor^2) (a one-sided test at about 2.5% for each metric@N on its "
           "own, not corrected over a family); otherwise it is not clearly better than "
           "re-training noise." if floor else "")
        + f" {downstream}"
        + (" A hyperparameter *dominates* when the DP of the pairs of configurations that "
           "differ in it alone (its one-at-a-time scope) is significantly lower than that of "
           "every other hyperparameter, with the same error control; on this grid's values: a "
           "hyperparameter given values further apart changes the metric more when it alone "
           "changes." if dominance else "")
    )


def _split(names: object) -> list[str]:
    """One of the dominance table's lists of hyperparameters (``over``, ``tied``,
    ``too_few_pairs``, ``no_evidence``: lists in the result) as a list of names."""
    return [] if names is None or not isinstance(names, (list, tuple)) else [str(h) for h in names]


def _metrics(keys: object, cutoff: int) -> str:
    """One of the verdict's lists of metric keys -> display names at ``cutoff`` (an en dash
    when empty)."""
    names = [shown_metric(m, cutoff) for m in verdict_keys(keys)]
    return ", ".join(names) if names else MISSING


def _hps(items: Sequence[str], algorithm: str) -> str:
    return and_list([shown_hyperparameter(h, algorithm) for h in items])


def _unsampled(row: dict) -> float:
    """verdict.csv's ``unsampled_share`` of a row (0 when absent)."""
    v = row.get("unsampled_share")
    try:
        return 0.0 if v is None or is_missing(v) else float(v)
    except (TypeError, ValueError):  # a hand-made verdict row: no share
        return 0.0


def recommendation_text(row: dict, n: int) -> str:
    """What the verdict recommends for one row: the metric (with its exact ties), "too few
    pairs, P = k" (``P = k of m`` for a sample) or "no evidence"; the one wording of the
    verdict table and Table 4."""
    if _unsampled(row) > 0:
        return f"too few units ({pct(_unsampled(row))} of the grid's pairs unsampled)"
    if bool(row.get("too_few_pairs")) and not is_missing(row.get("too_few_pairs")):
        return f"too few pairs, {pair_count_text(row['n_pairs'], row.get('n_possible_pairs'))}"
    rec = row.get("recommended")
    if not rec or is_missing(rec):
        return "no evidence"
    text = shown_metric(str(rec), n)
    if verdict_keys(row.get("identical")):
        text += f" (identical: {_metrics(row['identical'], n)})"
    return text


def _names(metrics: Sequence[str], n: int, joiner: str = "or") -> str:
    names = [shown_metric(m, n) for m in metrics]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {joiner} " + names[-1]


def choices_text(row: dict, n: int) -> str:
    """What the verdict recommends for one row, as equal choices: "nDCG@10" when the evidence
    backs one metric; "Precision@10 or nDCG@10, no significant difference (lowest DP:
    Precision@10)" when others are not significantly less discriminative (verdict.csv
    ``choices``); "too few pairs, P = k" or "no evidence" when it recommends none. The one
    wording of the summary, the verdict's sentences and the verdict table."""
    choices = verdict_choices(row)
    if len(choices) < 2 or _unsampled(row) > 0 or (
            bool(row.get("too_few_pairs")) and not is_missing(row.get("too_few_pairs"))):
        return recommendation_text(row, n)
    same = verdict_keys(row.get("identical"))
    lowest = shown_metric(choices[0], n) + (
        f", identical: {_metrics(same, n)}" if same else "")
    return f"{_names(choices, n)}, {_why(row)} (lowest DP: {lowest})"


def _why(row: dict) -> str:
    """Why a row offers several choices: no significant difference, or no test at all."""
    return ("no significant difference" if _tested(row)
            else f"no difference tested: {NO_INTERVAL}")


def _tested(row: dict) -> bool:
    """verdict.csv ``tested``: the family's metrics were compared (a bootstrap, and two
    metrics of the family with evidence)."""
    return flag(row, "tested")


def _ordered(verdict: pd.DataFrame) -> pd.DataFrame:
    """Rows in the report's algorithm order, cutoffs ascending, families as the verdict lists
    them."""
    rank = {a: i for i, a in enumerate(ordered_algorithms(verdict["algorithm"].astype(str)))}
    v = verdict.assign(_a=verdict["algorithm"].astype(str).map(rank))
    return v.sort_values(["_a", "cutoff"], kind="stable").drop(columns="_a")


class _Reader:
    """The result's tables, looked up by key, and what the result says of itself (its test
    split, the smallest adjusted p-value of its bootstrap)."""

    def __init__(self, result: Any) -> None:
        self.result = result
        dp = result.dp.table
        whole = dp[dp["scope"] == "all"]
        self._metrics = {key: list(g["metric"]) for key, g in whole.groupby(
            ["algorithm", "cutoff"], sort=False)}
        self.all = whole.set_index(["algorithm", "cutoff", "metric"]).sort_index()
        #: the one-at-a-time scopes' rows, which :meth:`oat_possible` and :meth:`oat_sampled`
        #: read (a table without ``n_possible_pairs`` knows no sample)
        self._oat = dp[dp["scope"].astype(str).str.startswith("only:")]
        self.comparisons = result.comparisons if result.comparisons is not None else \
            pd.DataFrame(columns=["algorithm", "cutoff", "kind", "group", "a", "b"])
        self.dominance = result.dominance if result.dominance is not None else pd.DataFrame()
        self.downstream = result.downstream if result.downstream is not None else \
            pd.DataFrame()
        self.options = result.options
        floor = None if result.noise is None else result.noise.versus_dp
        self.floor_algs = set() if floor is None or floor.empty else set(floor["algorithm"])
        self._floor = floor
        self.smallest_p = result.smallest_adjusted_p
        self.test_split = bool(result.test_split)

    def below(self, alg: str, cutoff: int, metrics: Iterable[str], negated: bool = False) -> str:
        """How "below the A/A noise floor" is said of these metrics of (algorithm, cutoff)
        (``negated``: in "not ... below"): :func:`~dptune.report._format.floor_below` of their
        rows of noise_floor.csv."""
        f = self._floor
        if f is None or f.empty:
            return floor_below(None)
        keys = {str(m) for m in metrics}
        return floor_below(f[(f["algorithm"].astype(str) == alg) & (f["cutoff"] == cutoff)
                             & f["metric"].astype(str).isin(keys)], negated)

    def metrics_all(self) -> list[str]:
        """Every metric of scope ``all``."""
        return sorted({m for ms in self._metrics.values() for m in ms})

    def metrics(self, alg: str, cutoff: int) -> list[str]:
        """The metrics of scope ``all`` at (algorithm, cutoff)."""
        return self._metrics.get((alg, cutoff), [])

    def row(self, alg: str, cutoff: int, metric: str) -> pd.Series:
        return self.all.loc[(alg, cutoff, metric)]

    def _oat_rows(self, alg: str, cutoff: int, metric: str) -> pd.DataFrame:
        """The one-at-a-time rows of ``metric``@``cutoff``; none without ``n_possible_pairs``."""
        o = self._oat
        if "n_possible_pairs" not in o.columns:
            return o.iloc[:0]
        return o[(o["algorithm"].astype(str) == alg) & (o["cutoff"] == cutoff)
                 & (o["metric"].astype(str) == metric)]

    def oat_possible(self, alg: str, cutoff: int, metric: str, hyperparameter: str) -> object:
        """The pairs the one-at-a-time scope of ``hyperparameter`` could have (its P is a
        sample of them when smaller), or None."""
        rows = self._oat_rows(alg, cutoff, metric)
        rows = rows[rows["scope"].astype(str) == f"only:{hyperparameter}"]
        return rows["n_possible_pairs"].iloc[0] if len(rows) else None

    def oat_sampled(self, alg: str, cutoff: int, metric: str) -> bool:
        """Whether some one-at-a-time scope of ``metric``@``cutoff`` has a sample of its
        pairs (the dominance claims' pairs: checked under the stability repeats)."""
        rows = self._oat_rows(alg, cutoff, metric)
        return bool((rows["n_pairs"] < rows["n_possible_pairs"]).any())

    def claims(self, alg: str, cutoff: int, family: str, best: str) -> pd.DataFrame:
        c = self.comparisons
        if c.empty:
            return c
        return c[(c["kind"] == "metrics") & (c["algorithm"] == alg) & (c["cutoff"] == cutoff)
                 & (c["group"] == family) & (c["a"] == best)].set_index("b")

    def hyperparameter_claims(self, alg: str, cutoff: int, metric: str,
                              hyperparameter: str) -> pd.DataFrame:
        """comparisons.csv's rows of ``hyperparameter`` against each other one (index: the
        other) for ``metric``@``cutoff``: the dominance claims."""
        c = self.comparisons
        if c.empty:
            return c
        return c[(c["kind"] == "hyperparameters") & (c["algorithm"] == alg)
                 & (c["cutoff"] == cutoff) & (c["group"] == metric)
                 & (c["a"] == hyperparameter)].set_index("b")

    def dom(self, alg: str, cutoff: int, metric: str) -> dict | None:
        d = self.dominance
        if d.empty:
            return None
        hit = d[(d["algorithm"] == alg) & (d["cutoff"] == cutoff) & (d["metric"] == metric)]
        return hit.iloc[0].to_dict() if len(hit) else None


def _numbers(rd: _Reader, alg: str, cutoff: int, metrics: Sequence[str]) -> str:
    return ", ".join(f"{shown_metric(m, cutoff)} {dp_text(r['dp_per_25'], r['ci_low'], r['ci_high'])}"
                     for m in metrics for r in [rd.row(alg, cutoff, m)])


def _claim_sentences(rd: _Reader, r: dict, members: list[str]) -> list[str]:
    alg, cutoff, family, best = r["algorithm"], int(r["cutoff"]), r["family"], r["recommended"]
    c = rd.claims(alg, cutoff, family, best)
    others = [m for m in members if m != best and m not in verdict_keys(r["no_evidence"])]
    if not others:
        return []
    if c.empty:
        return [f"No difference is claimed ({NO_INTERVAL}: {NO_INTERVAL_WHY}); the others: "
                + _numbers(rd, alg, cutoff, others) + "."]
    out = []
    top = rd.row(alg, cutoff, best)
    sampled = not is_missing(top.get("n_possible_pairs")) and \
        int(top["n_pairs"]) < int(top["n_possible_pairs"])
    seeds = pair_seeds_text(int(r["stability_repeats"]), int(rd.options.stability), sampled)
    less = verdict_keys(r["less_discriminative"])
    alpha = float(rd.options.alpha)
    if less:
        items = ", ".join(
            f"{shown_metric(m, cutoff)} (DP per 25 pairs "
            f"{fmt(rd.row(alg, cutoff, m)['dp_per_25'])}, "
            f"{adjusted_p_text(c.at[m, 'p_adjusted'], rd.smallest_p, alpha)})" for m in less)
        out.append(f"Significantly less discriminative (family-wise error rate "
                   f"{pct(alpha)}{seeds}): {items}.")
    tied = verdict_keys(r["tied"])
    if tied:
        same = set(verdict_keys(r["identical"]))
        items = []
        for m in tied:
            v = rd.row(alg, cutoff, m)["dp_per_25"]
            if m in same:
                items.append(f"{shown_metric(m, cutoff)} (identical to "
                             f"{shown_metric(best, cutoff)})")
            else:
                # the share under the pairs the DPs printed rest on (the first pair seed), not
                # the smallest over the stability repeats: a sentence reads its numbers together
                pr = c.at[m, "pr_more_discriminative_first"] if m in c.index else float("nan")
                items.append(f"{shown_metric(m, cutoff)} (DP per 25 pairs {fmt(v)}, "
                             f"Pr(more discriminative) {pct_is(pr)})")
        out.append("Not significantly less discriminative: " + ", ".join(items) + ".")
    dropped = _dropped_sentence(rd, c, lambda m: shown_metric(m, cutoff),
                                int(r["stability_repeats"]))
    if dropped:
        out.append(dropped)
    return out


def _dropped_sentence(rd: _Reader, claims: pd.DataFrame, name: Callable[[str], str],
                      repeats: int) -> str:
    """The claims of ``claims`` (comparisons.csv's rows of one ``a``, indexed by ``b``)
    significant under the first pair seed but not under all ``repeats``, each named by
    ``name(b)`` with both adjusted p-values; ``""`` when none. The one wording of a dropped
    claim, a metric's or a dominance claim's."""
    if claims.empty or "dropped" not in claims.columns:
        return ""
    dropped = [b for b in claims.index if bool(claims.at[b, "dropped"])]
    if not dropped:
        return ""
    alpha = float(rd.options.alpha)
    items = ", ".join(
        f"{name(b)} (first seed: "
        f"{adjusted_p_text(claims.at[b, 'p_adjusted_first'], rd.smallest_p, alpha)}; the "
        f"largest over the seeds: "
        f"{adjusted_p_text(claims.at[b, 'p_adjusted'], rd.smallest_p, alpha)})"
        for b in dropped)
    return (f"Claim{'s' if len(dropped) > 1 else ''} dropped, significant under the first "
            f"pair seed but not under all {int(repeats)}: {items}.")


def _config(config_id: int, params: object) -> str:
    text = "" if is_missing(params) else str(params)
    return f"configuration {int(config_id)}" + (f" ({shown_params(text)})" if text else "")


def downstream_sentence(rd: _Reader, r: dict) -> str:
    """How the family's choices compare on the test split (downstream.csv), or ``""``."""
    d = rd.downstream
    if d.empty:
        return ""
    alg, cutoff, family = r["algorithm"], int(r["cutoff"]), r["family"]
    g = d[(d["algorithm"] == alg) & (d["cutoff"] == cutoff) & (d["family"] == family)]
    if g.empty:
        return ""
    n_cfg = int(g["config_id"].nunique())
    first = _config(g["config_id"].iloc[0], g["params"].iloc[0])
    head = (f"Downstream: the {len(g)} {family} metrics select {n_cfg} configuration"
            f"{'' if n_cfg == 1 else 's'}" if len(g) > 1 else
            f"Downstream: the one {family} metric selects {first}")
    if n_cfg == 1:
        every, among = ((f"both {family} metrics select", "between") if len(g) == 2 else
                        (f"the {len(g)} {family} metrics all select", "among"))
        return (f"Downstream: {every} {first}, so the choice {among} them does not matter "
                "here." if len(g) > 1
                else head + "; there is no other to compare it with.")
    if not rd.test_split:
        return head + "; the data has no held-out values (no fold named test), so whether " \
            "they differ beyond these folds is unknown."
    if (g["status"] == "no_test").any() or g["test_mean"].isna().all():
        return head + "; the test split was not evaluated for them, so whether they differ on " \
            "it is unknown."
    rec = g[g["status"] == "recommended"].iloc[0]
    judge = shown_metric(str(rec["judge"]), cutoff)
    parts = []
    for cid, cg in g[g["status"] == "compared"].groupby("config_id", sort=False):
        x = cg.iloc[0]
        who = ", ".join(shown_metric(m, cutoff) for m in cg["metric"])
        sig = ", significant" if bool(x["significant"]) else ""
        parts.append(f"{who} select{'s' if len(cg) == 1 else ''} {_config(cid, x['params'])}: "
                     f"{fmt(x['test_mean'], 4)} ({p_clause(x['p'], rd.options.alpha)}{sig})")
    return (head + f"; judged on the test split by {judge} (same family; paired t-test over "
            f"{int(rec['n_test_users'])} test users) {shown_metric(rec['metric'], cutoff)}'s "
            f"choice, {_config(rec['config_id'], rec['params'])}, scores "
            f"{fmt(rec['test_mean'], 4)}; "
            + ("; ".join(parts) if parts else "no other metric selects another") + ".")


def dominance_sentence(rd: _Reader, alg: str, cutoff: int, metric: str) -> str:
    """The dominant hyperparameter of one metric@N (dominance.csv), or ``""``."""
    d = rd.dom(alg, cutoff, metric)
    if d is None:
        return ""
    name = shown_metric(metric, cutoff)
    answer = d["answer"]
    few = _split(d.get("too_few_pairs"))
    silent = _split(d.get("no_evidence"))
    # the hyperparameters not compared, after the sentence's own parentheses, not inside them
    why = ([f"{_hps(few, alg)} (fewer than min_pairs = {int(rd.options.min_pairs)} "
            "one-at-a-time pairs)"] if few else []) + (
        [f"{_hps(silent, alg)} (no evidence: changing "
         f"{'it' if len(silent) == 1 else 'each'} alone never changed {name}, every p-value 1)"]
        if silent else [])
    few_text = f"; not compared: {' and '.join(why)}" if why else ""
    if answer == "too_few_pairs":
        return (f"No hyperparameter is named for {name}: no one-at-a-time scope has "
                f"min_pairs = {int(rd.options.min_pairs)} pairs{few_text}.")
    if answer == "no_evidence":
        return f"No hyperparameter is named for {name}{few_text}."
    h = shown_hyperparameter(str(d["hyperparameter"]), alg)
    num = (f"DP per 25 pairs {dp_text(d['dp_per_25'], d['ci_low'], d['ci_high'])}, "
           f"{pair_count_text(d['n_pairs'], rd.oat_possible(alg, cutoff, metric, str(d['hyperparameter'])))}"
           " pairs differing in it alone")
    if answer == "single":
        return (f"Only one hyperparameter could be compared for {name}: {h} ({num})"
                f"{few_text}.")
    if answer == "no_bootstrap":
        return (f"No hyperparameter is named dominant for {name} ({NO_INTERVAL}, so no "
                f"difference is claimed); {h} has the lowest one-at-a-time DP ({num}){few_text}.")
    over = _split(d["over"])
    reps = d.get("repeats")
    seeds = pair_seeds_text(1 if is_missing(reps) else int(reps), int(rd.options.stability),
                            rd.oat_sampled(alg, cutoff, metric))
    if answer == "dominant":
        return (f"Dominant hyperparameter for {name}: {h} ({num}), significantly lower than "
                f"{_hps(over, alg)} (family-wise error rate {pct(rd.options.alpha)}{seeds}, "
                f"{adjusted_p_text(d['p_adjusted'], rd.smallest_p, float(rd.options.alpha))})"
                f"{few_text}.")
    tied = _split(d["tied"])
    c = rd.hyperparameter_claims(alg, cutoff, metric, str(d["hyperparameter"]))
    text = (f"No hyperparameter dominates significantly for {name}: {h} separates "
            f"configurations most often by itself ({num})")
    if over:
        held = [b for b in over if b in c.index]  # the claims' largest adjusted p, as a
        p_text = ("" if not held else ", " + adjusted_p_text(  # dominant one's is said
            float(c.loc[held, "p_adjusted"].max()), rd.smallest_p, float(rd.options.alpha)))
        text += (f", significantly more than {_hps(over, alg)} (family-wise error rate "
                 f"{pct(rd.options.alpha)}{seeds}{p_text})")
    text += f", but not significantly more than {_hps(tied, alg)}{few_text}."
    # a dominance claim the pair seeds dropped is said as a metric's is (without it the verdict
    # said "not significantly more than Iterations" of a first-seed adjusted p of 0.048)
    dropped = _dropped_sentence(
        rd, c, lambda b: f"{h} over {shown_hyperparameter(str(b), alg)}",
        int(c["repeats"].iloc[0]) if len(c) else 1)  # one stability check per metric@N
    return text + (f" {dropped}" if dropped else "")


def verdict_sentences(result: Any) -> list[str]:
    """One paragraph per verdict row."""
    v = result.verdict
    if v is None or v.empty:
        return []
    rd = _Reader(result)
    out = []
    for r in _ordered(v).to_dict("records"):
        alg, cutoff, family = str(r["algorithm"]), int(r["cutoff"]), str(r["family"])
        head = f"{shown_algorithm(alg)}, N = {cutoff}, {family}: "
        members = dict(result.metric_families.of(rd.metrics(alg, cutoff))).get(family, [])
        pairs = pair_count_text(r["n_pairs"], r["n_possible_pairs"])
        if _unsampled(r) > 0:
            out.append(head + f"too few units to rank metrics: {pct(_unsampled(r))} of the full "
                       "grid's pairs (pairs of units that share a value of a unit "
                       "hyperparameter) have no stand-in among the units run, so no DP here "
                       "estimates the full grid's; no metric is recommended and no difference "
                       "is claimed (a design order holds such pairs from its second round on); "
                       "DP per 25 pairs over the pairs there are: "
                       + _numbers(rd, alg, cutoff, members) + ".")
            continue
        if bool(r["too_few_pairs"]):
            out.append(head + f"too few pairs ({pairs}, fewer than min_pairs = "
                       f"{int(result.options.min_pairs)}) to rank metrics: no metric is "
                       "recommended and no difference is claimed; DP per 25 pairs: "
                       + _numbers(rd, alg, cutoff, members) + ".")
            continue
        if not r["recommended"]:
            out.append(head + "no evidence: every p-value is 1 for every metric (identical "
                       "configurations or too few users), so no metric can be recommended.")
            continue
        best = str(r["recommended"])
        folds = int(r["n_folds"])
        choices = verdict_choices(r)
        numbers = (f"DP per 25 pairs {dp_text(r['dp_per_25'], r['ci_low'], r['ci_high'])}; "
                   f"{pairs}, {folds} fold{'' if folds == 1 else 's'}")
        s = ([f"tune with {shown_metric(best, cutoff)} ({numbers})."] if len(choices) < 2
             else [f"tune with {_names(choices, cutoff)}, {_why(r)} (lowest DP: "
                   f"{shown_metric(best, cutoff)}, {numbers})."])
        s += _claim_sentences(rd, r, members)
        if verdict_keys(r["no_evidence"]):
            s.append(f"No evidence (every p-value 1): {_metrics(r['no_evidence'], cutoff)}.")
        if alg in rd.floor_algs:
            nb = verdict_keys(r["not_below_floor"])
            s.append(f"Not {rd.below(alg, cutoff, nb, negated=True)} the A/A noise floor: "
                     + _metrics(r["not_below_floor"], cutoff) + "."
                     if nb else "Every metric of the family is "
                     f"{rd.below(alg, cutoff, members)} the A/A noise floor.")
        ds = downstream_sentence(rd, r)
        if ds:
            s.append(ds)
        dom = dominance_sentence(rd, alg, cutoff, best)
        if dom:
            s.append(dom)
        out.append(head + " ".join(s))
    return out


def _dominant_cell(r: dict, rd: _Reader) -> str:
    d = rd.dom(str(r["algorithm"]), int(r["cutoff"]), str(r["recommended"])) \
        if r["recommended"] else None
    if d is None:
        return MISSING
    alg = str(r["algorithm"])
    if d["answer"] == "dominant":
        return shown_hyperparameter(str(d["hyperparameter"]), alg)
    if d["answer"] in ("too_few_pairs", "single", "no_evidence"):
        return {"too_few_pairs": "too few pairs", "no_evidence": "no evidence"}.get(
            str(d["answer"]), MISSING)
    if d["answer"] == "no_bootstrap":
        return f"no claim ({NO_INTERVAL})"
    return "none significantly"


def _table(result: Any) -> Block:
    """The verdict's key columns as one table (every column is in verdict.csv)."""
    rd = _Reader(result)
    tested = _intervals(result)  # without intervals no difference is tested: the other
    header = ["Algorithm", "N", "Family", "Tune with",  # metrics are "not tested", no finding
              "DP per 25 pairs [95% CI]" if tested else "DP per 25 pairs", "P",
              "Significantly less discriminative",
              "Not significantly less" if tested else "Not tested", "Dominant hyperparameter"]
    rows = []
    for r in _ordered(result.verdict).to_dict("records"):
        n = int(r["cutoff"])
        rec = r.get("recommended")
        rows.append([
            Cell(shown_algorithm(str(r["algorithm"]))), Cell(str(n), numeric=True),
            Cell(str(r["family"])),
            Cell(choices_text(r, n), bold=bool(rec) and not is_missing(rec)),
            Cell(dp_text(r["dp_per_25"], r["ci_low"], r["ci_high"]), numeric=True),
            Cell(pair_count_text(r["n_pairs"], r["n_possible_pairs"])[len("P = "):], numeric=True),
            Cell(_metrics(r["less_discriminative"], n)), Cell(_metrics(r["tied"], n)),
            Cell(_dominant_cell(r, rd)),
        ])
    return Block([Cell(h) for h in header], rows)


def summary_section(result: Any) -> str | None:
    """The report's opening: per algorithm, at the primary cutoff, the metric to tune with in
    each family (with the choices not clearly below the A/A noise floor) and the dominant
    hyperparameter."""
    v = result.verdict
    if v is None or v.empty:
        return None
    cutoff = int(result.primary[1])
    at = v[v["cutoff"] == cutoff]
    if at.empty:
        cutoff = int(v["cutoff"].max())
        at = v[v["cutoff"] == cutoff]
    rd = _Reader(result)
    lines = [f"At N = {cutoff} (every cutoff in the verdict below). "
             + _families_text(rd.metrics_all(), result.metric_families,
                              ((result.manifest or {}).get("evaluation") or {}).get(
                                  "novelty_variant"))
             + " Lower DP = more discriminative; DP per 25 pairs, P, *significantly* and the "
             "other terms are explained where the verdict starts, just below.", ""]
    sample = grid_sample_text(result.dp.grid_sample, marked=False)  # no DP marked here
    if sample:
        lines = [sample, "", *lines]
    for alg in ordered_algorithms(at["algorithm"].astype(str).unique()):
        rows = at[at["algorithm"] == alg].to_dict("records")
        picks = []
        for r in rows:
            less = verdict_keys(r["less_discriminative"])
            choices = verdict_choices(r)
            # a choice whose DP is not clearly below re-training noise is said with it
            noisy = [m for m in verdict_keys(r.get("not_below_floor")) if m in choices]
            numbers = (f"DP per 25 pairs {fmt(r['dp_per_25'])}, "
                       f"{pair_count_text(r['n_pairs'], r.get('n_possible_pairs'))}"
                       + (f"; significantly less discriminative: "
                          f"{_metrics(r['less_discriminative'], cutoff)}" if less else "")
                       + (f"; not {rd.below(alg, cutoff, noisy, negated=True)} the A/A noise "
                          "floor: "
                          f"{_metrics(noisy, cutoff)}"
                          if noisy else ""))
            if not choices:
                picks.append(f"{r['family']}: no recommendation "
                             f"({recommendation_text(r, cutoff)})")
            elif len(choices) < 2:
                picks.append(f"{r['family']}: tune with {recommendation_text(r, cutoff)} "
                             f"({numbers})")
            else:
                picks.append(f"{r['family']}: tune with {_names(choices, cutoff)}, {_why(r)} "
                             f"(lowest DP: {shown_metric(choices[0], cutoff)}, {numbers})")
        dom = ""
        primary = [r for r in rows if r["recommended"]]
        if primary:
            cell = _dominant_cell(primary[0], rd)
            if cell != MISSING:
                dom = (f"; dominant hyperparameter for "
                       f"{shown_metric(primary[0]['recommended'], cutoff)}: {cell}")
        lines.append(f"- **{shown_algorithm(alg)}**: " + "; ".join(picks) + dom + ".")
    return md_names("\n".join(lines))


#: What the novelty metrics measure, said where their names are first printed.
_METRIC_GLOSS = {"epc": ("expected popularity complement", "on [0, 1]"),
                 "efd": ("expected free discovery", "in bits")}


def _families_text(metrics: Sequence[str], families: Any, variant: str | None = None) -> str:
    """The families of the metrics present (``families``: the result's
    :class:`~dptune.analysis.result.MetricFamilies`), with what each novelty metric measures
    under the sweep's ``variant`` (``relevance-aware``: relevant items only; ``relevance-
    unaware``: every ranked item; None, per-user results from outside: not said): the summary
    is the report's first text, so the metrics' names are explained there."""
    groups = families.of(metrics)
    parts = []
    for family, ms in groups:
        names = [shown_metric(m) + (f" ({_METRIC_GLOSS[m][0]})" if m in _METRIC_GLOSS
                                      else "") for m in ms]
        parts.append(f"{family}: {', '.join(names)}")
    text = "Metrics are ranked within their family only (" + "; ".join(parts) + ")."
    novel = [m for m in _METRIC_GLOSS if m in set(metrics)]
    if novel:
        who = " and ".join(shown_metric(m) for m in novel)
        scale = ", ".join(f"{shown_metric(m)} {_METRIC_GLOSS[m][1]}" for m in novel)
        verb = ("are novelty metrics: they reward" if len(novel) > 1
                else "is a novelty metric: it rewards")
        what = {"relevance-aware": "relevant items", "relevance-unaware":
                "items, relevant or not,"}.get(str(variant), "items")
        text += (f" {who} {verb} {what} that few training users know ({scale}; "
                 "formulas in the Glossary of report.md).")
    return text


def verdict_section(result: Any, figures: Sequence[tuple[str, int, str]] = ()) -> str | None:
    """Markdown body of the verdict section, or None when there is no verdict. ``figures``:
    ``(file stem, cutoff, caption)`` of the DP figure of each cutoff, embedded after the
    table."""
    v = result.verdict
    if v is None or v.empty:
        return None
    opts = result.options
    scopes = result.dp.table["scope"].astype(str)
    lines = [claims_legend(float(opts.alpha), bool(result.test_split),
                           intervals=_intervals(result),
                           floor=result.noise is not None,
                           dominance=bool(scopes.str.startswith("only:").any())), ""]
    lines += [f"- {t}" for t in verdict_sentences(result)]
    lines += ["", _table(result).to_markdown(), ""]
    judged = ("each family's choice is judged on the test split by a metric of the same family"
              if result.test_split else
              "the data has no held-out values, so no choice is judged beyond these folds")
    lines.append(
        "Metrics are ranked within their family only (accuracy and novelty metrics measure "
        f"different things); {judged}. {MISSING} in the table: none (an empty list of "
        "metrics), or, under Dominant hyperparameter, no answer: the algorithm varies fewer "
        "than two hyperparameters (every pair of configurations then differs in its one "
        "hyperparameter; that is Table 3), only one of them can be compared (each other one "
        "has too few one-at-a-time pairs or no evidence), or no metric is recommended. "
        + (f"*Too few pairs*: no one-at-a-time scope has min_pairs = "
           f"{int(result.options.min_pairs)} pairs. " if _any_answer(result, "too_few_pairs")
           else "")
        + ("*No evidence* under Dominant hyperparameter: none can be compared, and changing "
           "some hyperparameter alone never changed the metric (every p-value of its "
           "one-at-a-time pairs is 1). "
           if _any_answer(result, "no_evidence") else "")
        + "All columns are in `verdict.csv`; every "
        "claim's test is in `comparisons.csv`, the dominant hyperparameter in "
        "`dominance.csv`.")
    drawn = ("with its 95% interval" if _intervals(result)
             else "without an interval (no difference tested)")
    for stem, n, caption in figures:
        lines += ["", f"![DP of each metric {drawn}, N = {n}]({stem}.png)", "",
                  f"{caption} ([SVG]({stem}.svg))"]
    return md_names("\n".join(lines))


def _intervals(result: Any) -> bool:
    """Whether the result's DPs have 95% intervals (:func:`dptune.report._inputs.
    has_intervals`): without, no difference is tested, and no part of the verdict may speak of
    an interval."""
    return has_intervals(result.dp.table)


def _any_answer(result: Any, answer: str) -> bool:
    """Whether some dominance answer is ``answer`` (the verdict table then shows it)."""
    d = result.dominance
    return d is not None and not d.empty and bool((d["answer"] == answer).any())


def verdict_document(summary: str | None, body: str | None, title: str | None = None
                     ) -> str | None:
    """verdict.md: the summary and the verdict section as a document of their own, or None
    without a verdict."""
    if body is None:
        return None
    head = f"# dptune verdict{': ' + name_span(title) if title else ''}"
    parts = [head]
    if summary:
        parts += ["## Summary", summary.rstrip("\n")]
    parts += ["## Verdict", body.rstrip("\n")]
    return md_names("\n\n".join(parts)) + "\n"
