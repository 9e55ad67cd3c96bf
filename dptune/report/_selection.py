"""Does the metric's choice matter? The best configuration per metric, the computed check of
whether the most discriminative metric also selects well on the test split, and Sakai's DP.
"""

from __future__ import annotations

import math

import pandas as pd

from dptune.analysis.result import MetricFamilies
from dptune.report._format import (
    MISSING,
    NO_INTERVAL,
    NO_INTERVAL_WHY,
    UNSAMPLED,
    and_list,
    flag,
    fmt,
    is_missing,
    one_fold,
    ordered_algorithms,
    ordered_metrics,
    p_clause,
    pair_count_text,
    shown_algorithm,
    shown_metric,
    shown_params,
    unsampled_note,
    unsampled_share,
    verdict_choices,
)
from dptune.report._inputs import BEST_INPUT, DP_INPUT, has_intervals, require, scope_all
from dptune.report._table import md_names, simple_block
from dptune.report._verdict import _config, _tested

__all__ = ["best_table_md", "selection_sentences", "sakai_table_md"]


def _params(params: object) -> str:
    """A configuration's parameters as the report prints them; ``""`` when it has none (a
    per-user table without ``--configs`` names no hyperparameters)."""
    return "" if is_missing(params) else shown_params(params)


def best_table_md(best: pd.DataFrame, primary: tuple[str, int], test_split: bool = True) -> str:
    """Markdown table of the configuration each metric@N selects on validation, with test values
    (without a test split, as outside data may have none: the mean over the folds alone). The
    Parameters column is left out when no configuration has any (nothing to show in it)."""
    extra = [c for c in best.columns if c.startswith("test_") and c != "test_value"]
    if not test_split:
        best, extra = best.drop(columns=extra), []
    with_params = any(_params(p) for p in best["params"])
    header = ["Algorithm", "Metric", "Config"] + (["Parameters"] if with_params else []) + [
              "Validation mean" if test_split else "Mean over the folds"]
    header += ["Test value"] if test_split else []
    header += [f"Test {shown_metric(c[len('test_') :], primary[1])}" for c in extra]
    rank_m = {m: i for i, m in enumerate(ordered_metrics(best["metric"].unique()))}
    rank_a = {a: i for i, a in enumerate(ordered_algorithms(best["algorithm"].unique()))}
    b = best.assign(_a=best["algorithm"].map(rank_a), _m=best["metric"].map(rank_m)).sort_values(
        ["_a", "cutoff", "_m"], kind="stable"
    )
    rows = []
    # records, not itertuples: a judge's column is named after its metric (test_<metric>), and
    # a metric of a per-user table can be named anything (my metric, *m*x), which no tuple
    # field can be
    for r in b.to_dict("records"):
        row = [
            shown_algorithm(r["algorithm"]),
            shown_metric(r["metric"], r["cutoff"]),
            str(int(r["config_id"])),
            *([_params(r["params"]) or MISSING] if with_params else []),
            fmt(r["validation_mean"], 4),
        ]
        row += [fmt(r["test_value"], 4)] if test_split else []
        row += [fmt(r[c], 4) for c in extra]
        rows.append(row)
    numeric = [False, False, True] + ([False] if with_params else [])
    numeric += [True] * (len(header) - len(numeric))
    return simple_block(header, rows, numeric).to_markdown()


def _primary_test_value(
    best: pd.DataFrame, algorithm: str, config_id: int, primary: tuple[str, int]
) -> float:
    """Test value of the primary metric@cutoff for one configuration, if ``best`` knows it.

    Looked up in a ``test_<metric>`` column of any row of that configuration, else in
    ``test_value`` of the row where the primary metric@cutoff itself chose that configuration.
    """
    metric, cutoff = primary[0], int(primary[1])
    rows = best[(best["algorithm"] == algorithm) & (best["config_id"] == config_id)]
    col = f"test_{metric}"
    if col in best.columns:
        vals = pd.to_numeric(rows[col], errors="coerce").dropna()
        if len(vals):
            return float(vals.iloc[0])
    own = rows[(rows["metric"] == metric) & (rows["cutoff"] == cutoff)]["test_value"]
    own = pd.to_numeric(own, errors="coerce").dropna()
    return float(own.iloc[0]) if len(own) else float("nan")


def selection_sentences(
    dp: pd.DataFrame,
    best: pd.DataFrame | None,
    primary: tuple[str, int] = ("ndcg", 10),
    verdict: pd.DataFrame | None = None,
    families: MetricFamilies | None = None,
    test_split: bool = True,
    downstream: pd.DataFrame | None = None,
) -> list[str]:
    """Computed sentences, as Markdown: does the most discriminative metric also choose well?

    At the primary cutoff, per algorithm (and per family of metrics when ``families``, the
    result's :attr:`~dptune.analysis.result.AnalysisResult.metric_families`, is given: metrics
    are compared within their family only), compares the configuration chosen (on
    validation) by the most discriminative metric -- the verdict's recommendation when
    ``verdict`` has the row, else the lowest DP by the verdict's tie rule -- with the one chosen
    by the least discriminative metric of the same family, by their test value of the family's
    judge (:meth:`~dptune.analysis.result.MetricFamilies.judge`; the primary metric without
    families)
    when known, else each one's own test value (without a test split, as outside data may
    have none, only which configuration each selects). States numbers only; a difference of
    the two choices is called higher or lower only when the analysis' downstream test
    (``downstream``, downstream.csv: the paired t-test of the two configurations over the test
    users on the judge) finds it significant, and a tie within noise otherwise.
    """
    from dptune.report._tables import _verdict_row, _worst_versus_best, pick
    from dptune.report._verdict import recommendation_text

    dp = require(dp, DP_INPUT, "dp")
    metric, cutoff = primary[0], int(primary[1])
    sub = scope_all(dp)
    sub = sub[sub["cutoff"] == cutoff]
    if best is not None and len(best):
        best = require(best, BEST_INPUT, "best")
    out = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg]
        groups = families.of(a["metric"]) if families is not None \
            else [("", list(a["metric"]))]
        for family, members in groups:
            name = shown_algorithm(alg) + (f", {family}" if family else "")
            vrow = _verdict_row(verdict, alg, cutoff, family)
            text, hi, _tied, lo, _ = pick(a[a["metric"].isin(members)], vrow, cutoff)
            if hi is None:
                why = recommendation_text(vrow, cutoff) if vrow is not None else text
                out.append(f"{name}: {why} at N = {cutoff}; no metric is the most "
                           "discriminative, nothing to compare.")
                continue
            if lo is None:
                out.append(f"{name}: only one metric has a DP at N = {cutoff} "
                           f"({shown_metric(hi['metric'], cutoff)}); nothing to compare.")
                continue
            judge = families.judge(family, members) if family and families is not None \
                else metric
            # without intervals (no bootstrap, or a paired test without one) the verdict offers
            # every metric as a choice: that is no finding of equality. With intervals a row
            # can be untested too (one metric of the family with evidence): no test is said
            # then, and no bootstrap blamed
            untested = vrow is not None and not _tested(vrow) and not has_intervals(a)
            test = _downstream_test(downstream, alg, cutoff, family, str(lo["metric"]))
            # the verdict's finding about the two, as Table 4 reads it for its best and worst
            # the recommended metric's equal choices: with any, it is not "the most
            # discriminative metric" of its family, only the lowest DP of equals
            equals = [m for m in (verdict_choices(vrow) if vrow is not None else [])
                      if m != str(hi["metric"])]
            out.append(_compare(name, hi, lo, best, alg, (judge, cutoff), test_split,
                                _worst_versus_best(vrow, lo), test, untested, equals))
    return [md_names(s) for s in out]


def _downstream_test(downstream: pd.DataFrame | None, alg: str, cutoff: int, family: str,
                     metric: str) -> pd.Series | None:
    """The downstream row of ``metric``'s choice compared with the recommended metric's (its
    ``config_id``, ``recommended_config``, ``p``, ``significant``), or None."""
    if downstream is None or downstream.empty:
        return None
    d = downstream[(downstream["algorithm"] == alg) & (downstream["cutoff"] == cutoff)
                   & (downstream["family"].fillna("") == family)
                   & (downstream["metric"] == metric) & (downstream["status"] == "compared")]
    return d.iloc[0] if len(d) else None


def _compare(name: str, hi: pd.Series, lo: pd.Series, best: pd.DataFrame | None, alg: str,
             judge: tuple[str, int], test_split: bool = True, versus: str = "",
             test: pd.Series | None = None, untested: bool = False,
             equals: list[str] | None = None) -> str:
    """One sentence: the choices of the most and the least discriminative metric on test;
    ``versus``: the verdict's finding about the two (Table 4's ``worst_vs_best``): ``tie``, no
    significant difference (equal choices); ``significant``, the second is significantly less
    discriminative (only then, and only when the first has no equal choice, are the two called
    the most and the least discriminative metric; otherwise the metric of lowest and highest
    DP); empty, nothing compared; ``equals``: the other metrics of the family the verdict
    offers as equal choices with the first (not significantly less discriminative than it);
    ``untested``: the verdict tested no difference (verdict.csv ``tested`` false: no bootstrap,
    or a paired test without an interval), said as such, not as equal choices;
    ``test``: the downstream test of the two choices (:func:`_downstream_test`), which alone
    may call the difference higher or lower (its p printed on the side of the analysis' alpha,
    dp.csv's ``alpha``, that it is on)."""
    cutoff = judge[1]
    alpha = float(hi["alpha"]) if "alpha" in hi.index and not is_missing(hi["alpha"]) else None
    pname = shown_metric(*judge)
    hname, lname = shown_metric(hi["metric"], cutoff), shown_metric(lo["metric"], cutoff)
    # "most discriminative" only where the verdict found the difference and the first has no
    # equal choice (a metric tied with it is as discriminative); else the DPs' order
    equal_names = [shown_metric(m, cutoff) for m in (equals or [])]
    most, least = (("most discriminative metric", "least discriminative")
                   if versus == "significant" and not equal_names
                   else ("metric of lowest DP", "highest"))
    head = (
        f"{name}: the {most} at N = {cutoff} is {hname} "
        f"(DP per 25 pairs {fmt(hi['dp_per_25'])}), the {least} {lname} "
        f"(DP per 25 pairs {fmt(lo['dp_per_25'])}"
        + ("; no evidence: every p-value 1" if flag(lo, "no_evidence") else "")
        + f"; {pair_count_text(hi['n_pairs'], hi.get('n_possible_pairs'))})."
        + (" The verdict finds no significant difference between the two: they are equal "
           "choices." if versus == "tie" else "")
        + (f" The verdict finds {lname} significantly less discriminative than {hname}, and "
           f"no significant difference {'between' if len(equal_names) == 1 else 'among'} "
           f"{and_list([hname, *equal_names])}: equal choices."
           if versus == "significant" and equal_names else "")
        + (f" No difference between the two is tested ({NO_INTERVAL}: {NO_INTERVAL_WHY}): the "
           "lower DP alone does not make either the better one." if untested else "")
    )
    if best is None or not len(best):
        return head + " No best-configuration table was given."
    pick = {}
    for key, row in (("hi", hi), ("lo", lo)):
        r = best[
            (best["algorithm"] == alg)
            & (best["metric"] == row["metric"])
            & (best["cutoff"] == cutoff)
        ]
        pick[key] = r.iloc[0] if len(r) else None
    if pick["hi"] is None or pick["lo"] is None:
        return head + " The best-configuration table lacks one of them."
    ch, cl = int(pick["hi"]["config_id"]), int(pick["lo"]["config_id"])
    # "configuration 5 (k=10)", or "configuration 5" when it has no parameters
    ph, pl = _config(ch, pick["hi"]["params"]), _config(cl, pick["lo"]["params"])
    th = _primary_test_value(best, alg, ch, judge)
    tl = _primary_test_value(best, alg, cl, judge)
    if not test_split:
        if ch == cl:
            return head + f" Both select {ph}."
        return head + (f" {hname} selects {ph}; {lname} selects "
                       f"{pl}; the data has no held-out values to compare "
                       "them on.")
    if ch == cl:
        tail = f" Both select {ph}"
        tail += f", test {pname} {fmt(th, 4)}." if not math.isnan(th) else "."
    elif not math.isnan(th) and not math.isnan(tl):
        diff = th - tl
        # the difference of the two values as printed, so that it reads as their difference
        # (0.1127 and 0.1135 are -0.0008 apart, though the raw values are -0.000877 apart)
        printed = float(fmt(th, 4)) - float(fmt(tl, 4))
        tail = (
            f" {hname} selects {ph}, test {pname} "
            f"{fmt(th, 4)}; {lname} selects {pl}, "
            f"test {pname} {fmt(tl, 4)}; difference {printed:+.4f}"
        )
        tested = (test is not None and int(test["config_id"]) == cl
                  and int(test["recommended_config"]) == ch and not is_missing(test["p"]))
        if not tested:
            tail += " (not tested)."
        elif bool(test["significant"]):
            # the choice named by its metric: "the most discriminative metric's" would call
            # the lowest DP the better metric where the verdict finds the two equal
            tail += (f", significant ({p_clause(test['p'], alpha)}): "
                     f"{'higher' if diff > 0 else 'lower'} for {hname}'s choice.")
        else:
            tail += (f", not significant ({p_clause(test['p'], alpha)}): a tie within noise; "
                     "the test split shows no difference between the two choices.")
    else:
        tail = (
            f" {hname} selects {ph}, own test value "
            f"{fmt(pick['hi']['test_value'], 4)}; {lname} selects {pl}, "
            f"own test value {fmt(pick['lo']['test_value'], 4)}; "
            f"no common test {pname} to compare them on."
        )
    return head + tail


def sakai_table_md(dp: pd.DataFrame, cutoff: int) -> str | None:
    """Markdown table of Sakai-style DP (share of significant pairs ± sd), scope ``all``."""
    sub = scope_all(dp)
    sub = sub[(sub["cutoff"] == cutoff) & sub["sakai"].notna()]
    if sub.empty:
        return None
    metrics = ordered_metrics(sub["metric"].unique())
    rows = []
    shares = []
    for alg in ordered_algorithms(sub["algorithm"].unique()):
        a = sub[sub["algorithm"] == alg].set_index("metric")
        share = float(unsampled_share(a).max())  # a grid sample that does not cover scope all
        shares.append(share)
        mark = UNSAMPLED if share > 0 else ""
        row = [shown_algorithm(alg)]
        for m in metrics:
            if m in a.index:
                sd = a.at[m, "sakai_sd"]
                one = one_fold(a.loc[m])  # its sd of 0 is no number to show
                row.append(fmt(a.at[m, "sakai"])
                           + ("" if is_missing(sd) or one else f" ± {fmt(sd)}") + mark)
            else:
                row.append(MISSING)
        rows.append(row)
    header = ["Algorithm"] + [shown_metric(m, cutoff) for m in metrics]
    table = simple_block(header, rows, [False] + [True] * len(metrics)).to_markdown()
    return "\n\n".join([table, *unsampled_note(shares)])
