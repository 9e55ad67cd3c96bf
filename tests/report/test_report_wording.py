"""Words and digits of the generated text that a reader pasting it into a paper would be misled
or embarrassed by: a metric called the most discriminative where the verdict offers an equal
choice, a bootstrap share written as a certainty, a p-value that loses its second digit, a
number printed to fewer digits than the table beside it, and verbs and quantifiers that do not
agree with their count."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from dataclasses import replace  # noqa: E402

import pandas as pd  # noqa: E402
from report.report_checker import _check_choose_well  # noqa: E402
from report.test_verdict_ties import _claim, _comparisons, _result  # noqa: E402

from dptune.analysis.verdict.claims import CLAIM_COLUMNS  # noqa: E402
from dptune.report import selection_sentences  # noqa: E402
from dptune.report._document import gap_sentence  # noqa: E402
from dptune.report._format import adjusted_p_text, p_text, pct_is  # noqa: E402
from dptune.report._importance import _same_top_note  # noqa: E402
from dptune.report._verdict import verdict_section  # noqa: E402


def _best(configs: dict[tuple[str, str], int], test: dict[int, float]) -> pd.DataFrame:
    """best_configs.csv rows at N = 10: the configuration of each (algorithm, metric) and the
    test value of the judges (nDCG and EPC) of each configuration."""
    return pd.DataFrame([
        {"algorithm": a, "metric": m, "cutoff": 10, "config_id": c, "params": f"k={c}",
         "validation_mean": 0.2, "test_value": 0.1, "test_ndcg": test[c], "test_epc": test[c]}
        for (a, m), c in configs.items()])


def _downstream(alg: str, family: str, judge: str, rec: tuple[str, int],
                other: tuple[str, int], p: float, significant: bool) -> pd.DataFrame:
    """downstream.csv: the recommended metric's choice and one other compared with it."""
    base = {"algorithm": alg, "cutoff": 10, "family": family, "judge": judge,
            "recommended_config": rec[1], "n_test_users": 500}
    return pd.DataFrame([
        base | {"metric": rec[0], "config_id": rec[1], "params": f"k={rec[1]}",
                "status": "recommended", "test_mean": 0.12, "p": None, "significant": False},
        base | {"metric": other[0], "config_id": other[1], "params": f"k={other[1]}",
                "status": "compared", "test_mean": 0.10, "p": p, "significant": significant}])


def _choose_well(res, best, downstream=None) -> dict[str, str]:
    out = selection_sentences(res.dp.table, best, ("ndcg", 10), res.verdict,
                              res.metric_families, downstream=downstream)
    return {s.split(": the ")[0]: s for s in out}


def test_choose_well_calls_no_metric_the_most_discriminative_where_it_has_an_equal_choice():
    """ML-1M's Item-kNN: the verdict said "tune with Precision@10 or nDCG@10, no significant
    difference" and MRR@10 significantly less discriminative; the choose-well section called
    Precision@10 "the most discriminative metric", a tie shown as a win. With an equal choice
    the metric is the lowest DP, and the equal choice is named; with none, it is still the most
    discriminative."""
    res = _result()  # User-kNN accuracy: nDCG and Precision equal, Recall and MRR significant
    best = _best({("userknn", "ndcg"): 1, ("userknn", "mrr"): 2, ("bpr-mf", "ndcg"): 3,
                  ("bpr-mf", "mrr"): 3, ("userknn", "epc"): 4, ("userknn", "efd"): 4,
                  ("bpr-mf", "epc"): 5, ("bpr-mf", "efd"): 5}, {1: 0.1, 2: 0.2, 3: 0.3,
                                                                4: 0.4, 5: 0.5})
    said = _choose_well(res, best)
    user = said["User-kNN, accuracy"]
    assert "most discriminative metric" not in user, user
    assert user.startswith("User-kNN, accuracy: the metric of lowest DP at N = 10 is nDCG@10 "
                           "(DP per 25 pairs 2.900), the highest MRR@10"), user
    assert ("The verdict finds MRR@10 significantly less discriminative than nDCG@10, and no "
            "significant difference between nDCG@10 and Precision@10: equal choices.") in user
    bpr = said["BPR-MF, accuracy"]  # one choice, every claim held: the most discriminative
    assert bpr.startswith("BPR-MF, accuracy: the most discriminative metric at N = 10 is "
                          "nDCG@10"), bpr
    assert "equal choices" not in bpr
    # the report checker reads either wording as the verdict's recommendation
    md = "\n".join(f"- {s}" for s in said.values())
    assert _check_choose_well(md, res.verdict.assign(
        recommended=res.verdict["recommended"].fillna(""))) == []


def test_choose_well_names_the_choice_a_significant_test_difference_favours_by_its_metric():
    """ML-1M design, BPR-MF: "The verdict finds no significant difference between the two: they
    are equal choices. ... significant (p = 4.7e-10): higher for the most discriminative
    metric's choice": the metric just said to be an equal choice was called the most
    discriminative. The choice is named by its metric."""
    res = _result()  # User-kNN novelty: EPC and EFD tie
    best = _best({("userknn", "epc"): 4, ("userknn", "efd"): 6}, {4: 0.12, 6: 0.10})
    down = _downstream("userknn", "novelty", "epc", ("epc", 4), ("efd", 6), 1e-6, True)
    nov = _choose_well(res, best, down)["User-kNN, novelty"]
    assert "they are equal choices" in nov, nov
    assert "most discriminative" not in nov, nov
    assert nov.endswith("difference +0.0200, significant (p = 1.0e-06): higher for EPC@10's "
                        "choice."), nov


def test_a_bootstrap_share_of_every_replicate_is_not_written_as_certain():
    """ML-1M design, BPR-MF N = 10: "Not significantly less discriminative: ... Recall@10 (DP
    per 25 pairs 2.131, Pr(more discriminative) = 100%)": a share of 1,000 replicates written
    as a certainty, beside a claim the verdict does not make."""
    assert [pct_is(x) for x in (1.0, 0.0, 0.997, 0.93, 0.5)] == [
        "> 99%", "< 1%", "> 99%", "= 93%", "= 50%"]
    rows = [c | ({"pr_more_discriminative_first": 1.0, "pr_more_discriminative": 1.0}
                 if (c["algorithm"], c["b"]) == ("userknn", "precision") else {})
            for c in _comparisons().to_dict("records")]
    comparisons = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    res = _result(comparisons)
    body = verdict_section(res)
    assert "Precision@10 (DP per 25 pairs 3.050, Pr(more discriminative) > 99%)" in body, body
    assert "100%" not in body


def test_p_values_keep_their_second_significant_digit():
    """ML-100K: "(p = 0.01, significant)" for p = 0.01005 beside "(p = 0.057)"; ML-1M:
    "adjusted p = 0.01" for 0.00999 beside "adjusted p = 0.036" (and "0.010" for 0.0101): one
    quantity printed to one digit here and two there."""
    assert [p_text(x) for x in (0.0100498655, 0.0999, 1.3e-05, 0.11, 0.00051)] == [
        "0.010", "0.10", "1.3e-05", "0.11", "0.00051"]
    assert p_text(0.0498, 0.05) == "0.0498" and p_text(0.0502, 0.05) == "0.0502"
    assert [adjusted_p_text(x) for x in (0.00999000999, 0.0101, 0.001998001998, 0.036)] == [
        "adjusted p = 0.010", "adjusted p = 0.010", "adjusted p = 0.002", "adjusted p = 0.036"]
    held = _claim("userknn", "accuracy", "ndcg", "recall", True) | {
        "p_adjusted": 0.00999000999, "p_adjusted_first": 0.00999000999}
    rows = [held if (c["algorithm"], c["b"]) == ("userknn", "recall") else c
            for c in _comparisons().to_dict("records")]
    res = _result(pd.DataFrame(rows, columns=CLAIM_COLUMNS))
    body = verdict_section(res)
    assert "Recall@10 (DP per 25 pairs 7.500, adjusted p = 0.010)" in body, body
    down = _downstream("userknn", "novelty", "epc", ("epc", 4), ("efd", 6), 0.0100498655, True)
    res = replace(res, downstream=down)
    assert "EFD@10 selects configuration 6 (k=6): 0.1000 (p = 0.010, significant)" in \
        verdict_section(res)


def test_the_validation_test_gap_is_printed_to_the_digits_of_the_table_beside_it():
    """"validation vs test: Item-kNN 0.243 vs 0.168" under a table printing the same two values
    0.2427 and 0.1679."""
    best = pd.DataFrame([{"algorithm": "itemknn", "metric": "ndcg", "cutoff": 10,
                          "config_id": 9, "params": "k=226", "validation_mean": 0.24271,
                          "test_value": 0.16792}])
    text = gap_sentence({"method": "temporal", "train_ratio": 0.8, "folds": 10}, best,
                        ("ndcg", 10))
    assert "validation vs test: Item-kNN 0.2427 vs 0.1679)" in text, text


def test_the_ped_anova_note_agrees_with_its_count():
    """"EFD@10 put the same configurations there as Precision@10, so its PED-ANOVA row equal
    Precision@10's": one row equals, two rows equal."""
    def note(same: dict[str, str]) -> str:
        rows = [{"algorithm": "bpr-mf", "metric": m, "cutoff": 10, "evaluator": "ped-anova",
                 "hyperparameter": "factors", "importance": 0.5, "top_configs": 5,
                 "same_top_as": same.get(m, "")} for m in ("precision", "efd", "mrr")]
        return _same_top_note(pd.DataFrame(rows), 10)

    one = note({"efd": "precision"})
    assert "EFD@10 put the same configurations there as Precision@10, so its PED-ANOVA row " \
           "equals Precision@10's." in one, one
    two = note({"efd": "precision", "mrr": "precision"})
    assert "so their PED-ANOVA rows equal Precision@10's." in two, two


def test_downstream_says_both_of_two_metrics_that_select_one_configuration():
    """"the 2 novelty metrics all select configuration 9 (k=226), so the choice among them":
    two metrics both select, the choice is between them; four all select, among them."""
    res = _result()
    rows = []
    for fam, metrics in (("novelty", ("epc", "efd")),
                         ("accuracy", ("ndcg", "precision", "recall", "mrr"))):
        for m in metrics:
            rows.append({"algorithm": "userknn", "cutoff": 10, "family": fam,
                         "judge": metrics[0], "metric": m, "config_id": 9, "params": "k=226",
                         "recommended_config": 9,
                         "status": "recommended" if m == metrics[0] else "same",
                         "test_mean": 0.1, "p": None, "significant": False,
                         "n_test_users": 500})
    body = verdict_section(replace(res, downstream=pd.DataFrame(rows)))
    assert ("Downstream: both novelty metrics select configuration 9 (k=226), so the choice "
            "between them does not matter here.") in body, body
    assert ("Downstream: the 4 accuracy metrics all select configuration 9 (k=226), so the "
            "choice among them does not matter here.") in body
    assert "2 novelty metrics all" not in body



def test_the_settings_say_how_many_users_the_split_dropped_in_words():
    """"users with < 5 interactions dropped (0)": a bare number that reads as a setting. It is
    "(none here)", "(1 user)", "(1,204 users)"."""
    from dptune.analysis.options import AnalysisOptions
    from dptune.report._sections import experiment_settings

    def said(n: int) -> str:
        manifest = {
            "experiment": "x", "dataset": {"name": "ml-1m", "source": "/d/ml-1m.inter"},
            "split": {"method": "temporal", "train_ratio": 0.8, "min_user_interactions": 5,
                      "dropped_users": n, "folds": 3, "fold_method": "user_stratified",
                      "split_seed": 1},
            "evaluation": {"relevance_rule": "rating >= 4", "relevance_threshold": 4.0,
                           "novelty_variant": "relevance-aware",
                           "protocol": "all unrated items", "cutoffs": [10]}}
        return experiment_settings(manifest, AnalysisOptions())["Test split"]

    assert said(0) == ("temporal hold-out, train ratio 0.8, users with < 5 interactions "
                       "dropped (none here)")
    assert said(1).endswith("dropped (1 user)") and said(1204).endswith("(1,204 users)")
