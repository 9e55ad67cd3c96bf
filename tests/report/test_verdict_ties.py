"""Ties said as ties, and a report that reads top-down, on a result built by hand.

The verdict's ``choices`` (the recommended metric and every metric not significantly less
discriminative than it) are rendered as equal choices in the summary, the verdict's sentences,
the verdict table, Table 3's bold and the DP figure's stars; the report checker
(tests/report/report_checker.py) passes on what is written and catches a report that shows a
tie as a loser.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from conftest import frames_result  # noqa: E402
from report.report_checker import check_dp_figure, check_report  # noqa: E402

from dptune.analysis.verdict.claims import CLAIM_COLUMNS  # noqa: E402
from dptune.analysis.verdict.rules import verdict_table  # noqa: E402
from dptune.report import Report  # noqa: E402
from dptune.report._figures import dp_figure  # noqa: E402
from dptune.report._tables import table3  # noqa: E402
from dptune.report._verdict import summary_section, verdict_section  # noqa: E402

#: mean p-value per metric: User-kNN's accuracy metrics are close, BPR-MF's DPs are far larger
MEAN_P = {
    "userknn": {"ndcg": 0.116, "precision": 0.122, "recall": 0.30, "mrr": 0.35, "epc": 0.20,
            "efd": 0.21},
    "bpr-mf": {"ndcg": 0.40, "precision": 0.41, "recall": 0.60, "mrr": 0.62, "epc": 0.45,
               "efd": 0.70},
}


def _dp() -> pd.DataFrame:
    return pd.DataFrame([
        {"algorithm": alg, "scope": "all", "metric": m, "cutoff": 10, "n_pairs": 45,
         "n_possible_pairs": 45, "n_folds": 3, "mean_p": p, "mean_p_sd": 0.01,
         "dp_per_25": 25 * p, "dp_per_25_plus_sd": 30 * p, "dp_per_25_minus_sd": 20 * p,
         "ci_low": 25 * p * 0.8, "ci_high": 25 * p * 1.2, "dp_sum": 45 * p, "sakai": 0.5,
         "sakai_sd": 0.1, "no_evidence": False, "repeats": 1, "test": "t",
         "correction": "none", "alpha": 0.05}
        for alg, ps in MEAN_P.items() for m, p in ps.items()])


def _curves() -> pd.DataFrame:
    return pd.DataFrame([{"algorithm": alg, "scope": "all", "metric": m, "cutoff": 10,
                          "position": i, "mean": 0.5, "sd": 0.1}
                         for alg, ps in MEAN_P.items() for m in ps for i in range(45)])


def _claim(alg: str, group: str, a: str, b: str, held: bool) -> dict:
    p = 0.001 if held else 0.4
    return {"algorithm": alg, "cutoff": 10, "kind": "metrics", "group": group, "a": a, "b": b,
            "p_adjusted": p, "p_adjusted_first": p,
            "pr_more_discriminative": 0.999 if held else 0.58,
            "pr_more_discriminative_first": 0.999 if held else 0.58, "repeats": 1,
            "significant_first": held, "held": held, "dropped": False}


def _comparisons() -> pd.DataFrame:
    """User-kNN: nDCG is not significantly below Precision (a tie), Recall and MRR are; EPC and EFD
    tie. BPR-MF: every claim holds (one choice per family)."""
    rows = [_claim("userknn", "accuracy", "ndcg", "precision", False),
            _claim("userknn", "accuracy", "ndcg", "recall", True),
            _claim("userknn", "accuracy", "ndcg", "mrr", True),
            _claim("userknn", "novelty", "epc", "efd", False)]
    rows += [_claim("bpr-mf", "accuracy", "ndcg", m, True) for m in ("precision", "recall", "mrr")]
    rows += [_claim("bpr-mf", "novelty", "epc", "efd", True)]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def _result(comparisons: pd.DataFrame | None = None):
    dp = _dp()
    comparisons = _comparisons() if comparisons is None else comparisons
    return frames_result(dp, _curves(), verdict=verdict_table(dp, comparisons),
                         comparisons=comparisons)


def test_the_summary_and_the_verdict_say_a_tie_is_a_tie():
    res = _result()
    v = res.verdict.set_index(["algorithm", "family"])
    assert v.at[("userknn", "accuracy"), "choices"] == ["ndcg", "precision"]
    summary = summary_section(res)
    assert ("**User-kNN**: accuracy: tune with nDCG@10 or Precision@10, no significant difference "
            "(lowest DP: nDCG@10, DP per 25 pairs 2.900, P = 45; significantly less "
            "discriminative: Recall@10, MRR@10); novelty: tune with EPC@10 or EFD@10, no "
            "significant difference (lowest DP: EPC@10") in summary
    # one choice where every claim holds: "tune with X", nothing more
    assert re.search(r"BPR-MF\*\*: accuracy: tune with nDCG@10 \(DP per 25 pairs 10\.00",
                     summary)
    # the summary explains the novelty metrics' names, the first place they are printed
    assert "EPC (expected popularity complement)" in summary
    assert "EFD (expected free discovery)" in summary
    body = verdict_section(res)
    line = next(ln for ln in body.splitlines() if ln.startswith("- ") and ", accuracy: " in ln
                and "N = 10" in ln and "BPR" not in ln)
    assert ": tune with nDCG@10 or Precision@10, no significant difference (lowest DP: " \
           "nDCG@10, DP per 25 pairs 2.900 [2.320, 3.480]; P = 45, 3 folds)." in line
    assert "Not significantly less discriminative: Precision@10 (DP per 25 pairs 3.050, " \
           "Pr(more discriminative) = 58%)" in line
    row = next(ln for ln in body.splitlines() if ln.startswith("| ") and "| accuracy |" in ln
               and "BPR" not in ln)
    assert "**nDCG@10 or Precision@10, no significant difference (lowest DP: nDCG@10)**" in row
    bpr = next(ln for ln in body.splitlines() if ln.startswith("| BPR-MF") and "accuracy" in ln)
    assert "| **nDCG@10** |" in bpr


def test_the_summary_says_which_choices_are_not_clearly_below_the_noise_floor():
    """A choice the verdict flags as not clearly below its A/A noise floor carries the flag
    into the summary's one line, which a reader may read alone; a flagged metric that is not a
    choice is left to the verdict."""
    res = _result()
    v = res.verdict
    at = (v["algorithm"] == "userknn") & (v["family"] == "accuracy")
    flags = [["precision", "recall"] if hit else [] for hit in at]
    res = replace(res, verdict=v.assign(not_below_floor=flags))
    summary = summary_section(res)
    line = next(ln for ln in summary.splitlines() if ln.startswith("- **User-kNN**"))
    assert ("significantly less discriminative: Recall@10, MRR@10; not clearly below the A/A "
            "noise floor: Precision@10); novelty:") in line
    assert "noise floor" not in next(ln for ln in summary.splitlines()
                                     if ln.startswith("- **BPR-MF**"))


def test_without_a_bootstrap_the_choices_say_no_difference_was_tested():
    res = _result(pd.DataFrame(columns=CLAIM_COLUMNS))
    assert not res.verdict["tested"].any()
    summary = summary_section(res)
    assert ("accuracy: tune with nDCG@10, Precision@10, Recall@10 or MRR@10, no difference "
            "tested: no bootstrap interval (lowest DP: nDCG@10") in summary


def test_table3_bolds_every_choice_and_underlines_only_a_significant_loser():
    res = _result()
    md = table3(res.dp.table, res.verdict, res.metric_families, 10).to_markdown()
    knn = next(ln for ln in md.splitlines() if ln.startswith("| User-kNN"))
    cells = [c.strip() for c in knn.split("|")[1:-1]]
    # EFD@N | EPC@N | MRR@N | nDCG@N | Precision@N | Recall@N
    assert cells[3:] == ["**5.250 [4.200, 6.300]**", "**5.000 [4.000, 6.000]**",
                         "<ins>8.750 [7.000, 10.500]</ins>", "**2.900 [2.320, 3.480]**",
                         "**3.050 [2.440, 3.660]**", "7.500 [6.000, 9.000]"]
    assert "not significantly less discriminative" in md


def test_the_dp_figure_stars_every_choice_on_one_x_scale():
    res = _result()
    fig = dp_figure(res.dp.table, res.verdict, 10, res.metric_families)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2
    assert len({ax.get_xlim() for ax in axes}) == 1  # one x scale for every panel
    assert axes[0].get_xlim()[1] >= 25 * 0.70 * 1.2  # BPR-MF's widest interval fits
    for ax in axes:
        bold = {t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"}
        if ax.get_title().startswith("BPR-MF"):
            assert bold == {"nDCG@10", "EPC@10"}
        else:
            assert bold == {"nDCG@10", "Precision@10", "EPC@10", "EFD@10"}


def test_the_written_report_reads_top_down_and_passes_the_checker(tmp_path: Path):
    res = _result()
    rep = Report.from_result(res)
    out = tmp_path / "r"
    rep.write(out)
    assert check_report(out) == [] and check_dp_figure(rep) == []
    md = (out / "report.md").read_text()
    verdict = md[md.index("## Verdict"):md.index("## Pairs")] if "## Pairs" in md else md
    # alpha's value where the error rate is stated; downstream, the test split and the A/A
    # noise floor defined before the verdict's sentences use them
    legend = verdict.split("\n- ")[0]
    for term in ("alpha = 5%", "*Downstream*", "*test split*", "no significant difference"):
        assert term in legend, term
    # the A/A noise floor is defined where there is one (this result has none)
    assert ("*A/A noise floor*" in legend) == (res.noise is not None)
    # the dash of the verdict table explained right under it
    after = verdict[verdict.index("| Algorithm | N | Family | Tune with"):]
    assert "– in the table: none" in after.split("\n\n")[1]
    # the dominance section is titled for what decides it
    assert "## Dominant hyperparameter (Table 5)" not in md


def test_the_checker_catches_a_tie_shown_as_a_loser(tmp_path: Path):
    out = tmp_path / "r"
    Report.from_result(_result()).write(out)
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    md = (bad / "report.md").read_text()
    md = md.replace("tune with nDCG@10 or Precision@10, no significant difference",
                    "tune with nDCG@10")
    (bad / "report.md").write_text(md)
    t3 = (bad / "table3.md").read_text().replace("**3.050 [2.440, 3.660]**",
                                                  "3.050 [2.440, 3.660]")
    (bad / "table3.md").write_text(t3)
    problems = "\n".join(check_report(bad))
    assert "the summary does not name the choices" in problems
    assert "the verdict's sentence does not name the choices" in problems
    assert "table3.md" in problems


def test_table4_says_its_best_metric_may_have_equal_choices():
    from dptune.report._tables import table4

    res = _result()
    caption = table4(res.dp.table, res.verdict, res.metric_families).caption
    assert "the lowest DP" in caption and "equal choices" in caption


def test_the_choose_well_sentence_says_when_its_two_metrics_are_equal_choices():
    from dptune.report._selection import selection_sentences

    res = _result()
    tie = _result(pd.DataFrame([_claim("userknn", "novelty", "epc", "efd", False)],
                               columns=CLAIM_COLUMNS))
    def said(r):
        return {s.split(":")[0]: s for s in selection_sentences(
            r.dp.table, None, ("ndcg", 10), r.verdict, r.metric_families)}
    equal = "no significant difference between the two: they are equal choices"
    # User-kNN novelty: EPC and EFD are equal choices; accuracy's MRR is significantly worse
    assert equal in said(res)["User-kNN, novelty"]
    assert equal not in said(res)["User-kNN, accuracy"]
    assert equal not in said(res)["BPR-MF, novelty"]
    assert equal in said(tie)["User-kNN, novelty"]


def test_the_summary_explains_only_the_novelty_metrics_it_prints():
    from dptune.report._format import unmarked
    from dptune.report._verdict import _families_text

    families = _result().metric_families
    one = unmarked(_families_text(["ndcg", "efd"], families))
    assert "EFD (expected free discovery)" in one and "EFD is a novelty metric" in one
    assert "EPC" not in one
    assert "novelty" not in _families_text(["ndcg", "recall"], families)


def test_the_summary_says_what_the_novelty_metrics_reward_under_the_sweeps_variant():
    """EPC and EFD reward relevant items only in the relevance-aware variant; the summary said
    so whatever the sweep's variant. It now follows the manifest's ``novelty_variant``, and
    says neither for per-user results from outside (no manifest)."""
    from dataclasses import replace

    res = _result()
    words = {}
    for variant in ("relevance-aware", "relevance-unaware", None):
        manifest = {} if variant is None else {"evaluation": {"novelty_variant": variant}}
        words[variant] = summary_section(replace(res, manifest=manifest))
    assert "novelty metrics: they reward relevant items that few" in words["relevance-aware"]
    assert ("novelty metrics: they reward items, relevant or not, that few"
            in words["relevance-unaware"])
    assert "novelty metrics: they reward items that few" in words[None]


def _sampled(dp: pd.DataFrame) -> pd.DataFrame:
    """``dp`` with its pairs a sample of the grid's (45 of 190): the claims rest on one sample."""
    return dp.assign(n_possible_pairs=190)


def _bpr_line(res, family: str = "accuracy") -> str:
    return next(ln for ln in verdict_section(res).splitlines()
                if ln.startswith("- BPR-MF") and f", {family}: " in ln)


def test_each_sentence_reads_its_numbers_under_one_pair_seed_and_names_a_dropped_claim():
    """The DPs of a verdict sentence are the first pair seed's, so its Pr(more discriminative)
    is too (not the smallest over the stability repeats, which printed 3% beside a lower DP); a
    claim significant under the first seed only is named with both adjusted p-values."""
    c = _comparisons()
    at = (c["algorithm"] == "bpr-mf") & (c["a"] == "ndcg")
    c.loc[at, "repeats"] = 5
    prec = at & (c["b"] == "precision")  # held under the first seed, tied under another
    c.loc[prec, ["held", "dropped", "p_adjusted", "p_adjusted_first"]] = [False, True, 0.081,
                                                                           0.036]
    c.loc[prec, ["pr_more_discriminative", "pr_more_discriminative_first"]] = [0.03, 0.97]
    dp = _sampled(_dp())
    res = frames_result(dp, _curves(), verdict=verdict_table(dp, c), comparisons=c)
    line = _bpr_line(res)
    assert "Precision@10 (DP per 25 pairs 10.250, Pr(more discriminative) = 97%)" in line
    assert ("Claim dropped, significant under the first pair seed but not under all 5: "
            "Precision@10 (first seed: adjusted p = 0.036; the largest over the seeds: "
            "adjusted p = 0.081).") in line
    assert "(family-wise error rate 5%, under all 5 pair seeds): Recall@10" in line


def test_a_dropped_dominance_claim_is_named_as_a_dropped_metric_claim_is():
    """The ML-100K sub-grid's verdict said "Learning rate ... not significantly more than
    Iterations" of a comparison whose first-seed adjusted p was 0.048, and named no dropped
    claim, while a dropped metric claim is named. A hyperparameter comparison significant under
    the first pair seed only is now named with both adjusted p-values."""
    from types import SimpleNamespace

    from dptune.report._format import unmarked
    from dptune.report._verdict import dominance_sentence

    dom = {"algorithm": "bpr-mf", "cutoff": 1, "metric": "recall", "answer": "tied",
           "hyperparameter": "learning_rate", "dp_per_25": 6.1, "ci_low": 4.32, "ci_high": 8.17,
           "n_pairs": 25, "over": ["factors"], "tied": ["iterations"], "repeats": 5,
           "too_few_pairs": [], "p_adjusted": 0.01}
    claims = pd.DataFrame({
        "b": ["factors", "iterations"], "p_adjusted": [0.01, 0.308],
        "p_adjusted_first": [0.004, 0.048], "repeats": [5, 5], "dropped": [False, True]},
    ).set_index("b")
    rd = SimpleNamespace(
        dom=lambda *a: dom, hyperparameter_claims=lambda *a: claims,
        options=SimpleNamespace(alpha=0.05, stability=5, min_pairs=10), smallest_p=0.001,
        oat_sampled=lambda *a: True, oat_possible=lambda *a: 500)
    text = unmarked(dominance_sentence(rd, "bpr-mf", 1, "recall"))
    assert "P = 25 of 500 pairs differing in it alone" in text  # a sample, said as one
    assert text.endswith(
        "but not significantly more than Iterations. Claim dropped, significant under the "
        "first pair seed but not under all 5: Learning rate over Iterations (first seed: "
        "adjusted p = 0.048; the largest over the seeds: adjusted p = 0.308)."), text
    # the claim that holds carries its adjusted p, as every claim of the verdict does
    assert ("significantly more than Latent factors (family-wise error rate 5%, under all 5 "
            "pair seeds, adjusted p = 0.010), but not") in text, text
    claims["dropped"] = False  # nothing dropped: nothing said
    assert "dropped" not in dominance_sentence(rd, "bpr-mf", 1, "recall")


def test_a_share_strictly_between_0_and_1_is_never_written_as_all_or_none():
    """Pr(more discriminative) = 0.997 was written "100%" beside a difference that is not
    significant, as if certain."""
    from dptune.report._format import pct, pct_is

    assert [pct(x) for x in (0.997, 0.999, 1.0, 0.003, 0.0, 0.93, 0.994, 0.006)] == [
        ">99%", ">99%", "100%", "<1%", "0%", "93%", "99%", "1%"]
    assert [pct_is(x) for x in (0.997, 0.003, 0.93)] == ["> 99%", "< 1%", "= 93%"]


def test_a_claim_checked_under_fewer_pair_seeds_than_asked_for_says_so():
    """The stability check lowered by its time budget (dp.csv's ``repeats`` below the
    ``stability`` option) is said beside every claim it concerns and in the settings; with
    every pair of the grid (no other pair set) or the check off, nothing is claimed of seeds
    that were not run."""
    c = _comparisons()
    dp = _sampled(_dp())
    res = frames_result(dp, _curves(), verdict=verdict_table(dp, c), comparisons=c)
    assert int(res.options.stability) == 5
    assert ("(family-wise error rate 5%, under 1 of the 5 pair seeds asked for: more would "
            "have exceeded the time budget of the stability check): Precision@10") in _bpr_line(res)
    full = _result()  # every pair: one seed is the whole check
    assert "family-wise error rate 5%): Precision@10" in _bpr_line(full)
    off = replace(res, options=replace(res.options, stability=0))
    assert ", under 1 pair seed: the stability check is off): " in _bpr_line(off)


def test_the_settings_say_which_algorithms_ran_fewer_pair_seeds(tmp_path):
    from dptune.report._format import unmarked
    from dptune.report._sections import _claims_text, stability_note

    dp = _sampled(_dp())
    res = frames_result(dp, _curves(), verdict=verdict_table(dp, _comparisons()),
                        comparisons=_comparisons())
    text = unmarked(_claims_text(res.options) + stability_note(dp, res.options))
    assert "it must hold under each of 5 pair seeds (fewer when the extra seeds would take " \
           "over stability_seconds = 5 s per algorithm; the verdict says how many ran)" in text
    assert text.endswith("; fewer were run for User-kNN (1 pair seed), BPR-MF (1 pair seed)")
    assert stability_note(_dp(), res.options) == ""  # every pair: nothing lowered
    assert stability_note(dp.assign(repeats=5), res.options) == ""


def test_a_test_splits_p_value_is_printed_on_its_side_of_alpha():
    """A downstream p-value of 0.0498 (significant at 5%) was printed "p = 0.05, significant";
    it is printed with the digits that keep it below alpha."""
    from dptune.analysis.verdict.downstream import DOWNSTREAM_COLUMNS

    def row(metric, config, p, sig, status):
        return {"algorithm": "userknn", "cutoff": 10, "family": "accuracy", "judge": "ndcg",
                "metric": metric, "config_id": config, "params": f"k={config}",
                "recommended_config": 1, "status": status, "test_mean": 0.1 + config / 100,
                "p": p, "significant": sig, "n_test_users": 900}

    down = pd.DataFrame([row("ndcg", 1, float("nan"), False, "recommended"),
                         row("recall", 2, 0.0498, True, "compared"),
                         row("mrr", 3, 0.0502, False, "compared")], columns=DOWNSTREAM_COLUMNS)
    res = replace(_result(), downstream=down, manifest={"split": {"method": "temporal"}})
    line = next(ln for ln in verdict_section(res).splitlines()
                if ln.startswith("- User-kNN") and ", accuracy: " in ln)
    assert "(p = 0.0498, significant)" in line and "(p = 0.0502)" in line


def test_the_legend_explains_too_few_pairs_only_where_the_table_shows_it():
    """The ML-1M KNN verdict, none of whose algorithms varies two hyperparameters, explained
    a "Too few pairs" answer its table never shows."""
    res = _result()
    assert "*Too few pairs*" not in verdict_section(res)
    dom = pd.DataFrame([{"algorithm": "bpr-mf", "cutoff": 10, "metric": "ndcg",
                         "answer": "too_few_pairs", "too_few_pairs": []}])
    text = verdict_section(replace(res, dominance=dom))
    assert "*Too few pairs*: no one-at-a-time scope has min_pairs = " in text
    assert "| too few pairs |" in text
