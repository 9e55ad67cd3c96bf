"""The verdict (dptune.analysis.verdict.rules, .downstream) on synthetic data with a known answer."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp import bootstrap as rs
from dptune.analysis.dp import scale as rb
from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.paired_tests import paired_pvalues
from dptune.analysis.verdict import downstream as ds
from dptune.analysis.verdict import rules as vd
from dptune.errors import DptuneError

METRICS3 = ("ndcg", "precision", "recall")


def _synthetic(rng, effect, noise, n_configs=10, n_users=250, folds=3):
    """Per fold, (3 metrics, pairs, users) differences: nDCG carries the configurations' real
    differences (``effect``), Precision and Recall are nDCG plus ``noise`` per (config, user)."""
    pa, pb = np.triu_indices(n_configs, k=1)
    out = []
    for _ in range(folds):
        base = rng.uniform(0.2, 0.6, n_users)[None, :] + effect * np.arange(n_configs)[:, None]
        nd = base + rng.normal(0, 0.15, (n_configs, n_users))
        ms = [nd] + [nd + rng.normal(0, noise, nd.shape) for _ in METRICS3[1:]]
        out.append(np.stack([m[pa] - m[pb] for m in ms]))
    return out


def _robust_and_claims(diffs, repeats=1, n_boot=300):
    n_pairs = diffs[0].shape[1]
    rows, ranking = [], []
    pv = np.stack([[paired_pvalues(d[m], np.zeros_like(d[m])) for d in diffs]
                   for m in range(len(METRICS3))])  # (M, F, P)
    for k in range(repeats):
        reps = rs.bootstrap_mean_p(diffs, n_boot=n_boot, seed=rb.bootstrap_seed(1, k))
        ranking.append(sb.ranking_frame({("knn", m, 10): rs.interval_replicates(
            rb.robust_estimate(pv[i]).mean_p, reps[i]) for i, m in enumerate(METRICS3)}, k))
        if k == 0:
            for i, m in enumerate(METRICS3):
                e = rb.robust_estimate(pv[i])
                lo, hi = (25 * x for x in rs.dp_interval(e.mean_p, reps[i]))
                rows.append({"algorithm": "knn", "metric": m, "cutoff": 10, "mean_p": e.mean_p,
                             "dp_at_25": e.dp_at_25, "ci_low": lo, "ci_high": hi,
                             "n_pairs": n_pairs, "n_possible_pairs": n_pairs,
                             "n_folds": e.n_folds, "no_evidence": e.no_evidence})
    return pd.DataFrame(rows), sb.claims(pd.concat(ranking), 0.95)


def test_one_metric_truly_more_discriminative():
    robust, claims = _robust_and_claims(_synthetic(np.random.default_rng(0), 0.01, 0.5),
                                        repeats=2)
    v = vd.verdict_frame(robust, claims, 0.95)
    assert list(v.columns) == vd.VERDICT_COLUMNS
    r = v.iloc[0]
    assert r["recommended"] == "ndcg"
    assert set(r["less_discriminative"].split(";")) == {"precision", "recall"}
    assert r["tied"] == "" and r["stability_repeats"] == 2 and r["claims_dropped"] == 0
    assert "tune with nDCG@10" in r["text"]
    assert "Significantly less discriminative (P >= 95% under all 2 pair seeds)" in r["text"]
    assert "Recall@10 (DP per 25 pairs" in r["text"] and "all 45 pairs" in r["text"]


def test_no_metric_more_discriminative_is_tied():
    rng = np.random.default_rng(1)
    robust, claims = _robust_and_claims(_synthetic(rng, 0.0, 0.0))  # three identical metrics
    r = vd.verdict_frame(robust, claims, 0.95).iloc[0]
    assert r["less_discriminative"] == ""
    assert set(r["tied"].split(";")) == set(METRICS3) - {r["recommended"]}
    assert "Statistically tied with it" in r["text"]
    # three identical metrics: the same p-value on every pair, so "identical", not "P = 0%"
    best = vd.display_metric(r["recommended"], 10)
    assert r["text"].count(f"identical to {best}") == 2 and "P = 0%" not in r["text"]
    # independent metrics without real differences: tied as well
    robust2, claims2 = _robust_and_claims(_synthetic(rng, 0.0, 0.3))
    r2 = vd.verdict_frame(robust2, claims2, 0.95).iloc[0]
    assert r2["less_discriminative"] == ""


def test_without_bootstrap_no_claims_and_no_evidence():
    robust, _ = _robust_and_claims(_synthetic(np.random.default_rng(2), 0.01, 0.5))
    robust = robust.assign(ci_low=np.nan, ci_high=np.nan)
    r = vd.verdict_frame(robust, None, 0.95).iloc[0]
    assert r["less_discriminative"] == "" and r["tied"] == "precision;recall"
    assert "no claim of significance" in r["text"]
    dead = robust.assign(mean_p=1.0, dp_at_25=25.0, no_evidence=True)
    r = vd.verdict_frame(dead, None, 0.95).iloc[0]
    assert r["recommended"] == "" and r["no_evidence"] == "ndcg;precision;recall"
    assert "no evidence" in r["text"]
    part = robust.copy()
    part.loc[part["metric"] == "recall", "no_evidence"] = True
    r = vd.verdict_frame(part, None, 0.95).iloc[0]
    assert r["no_evidence"] == "recall" and "recall" not in r["tied"]
    with pytest.raises(DptuneError, match="level"):
        vd.verdict_frame(robust, None, 1.5)
    with pytest.raises(DptuneError, match="missing"):
        vd.verdict_frame(robust.drop(columns=["no_evidence"]), None, 0.95)


def test_dropped_claim_is_counted_and_noise_floor_flags():
    robust, _ = _robust_and_claims(_synthetic(np.random.default_rng(3), 0.01, 0.5))
    rk = pd.DataFrame([("knn", 10, "ndcg", "recall", 0.99, 0), ("knn", 10, "ndcg", "recall", 0.90, 1),
                       ("knn", 10, "ndcg", "precision", 0.99, 0),
                       ("knn", 10, "ndcg", "precision", 0.97, 1)],
                      columns=["algorithm", "cutoff", "metric_a", "metric_b", "p_a_better",
                               "repeat"])
    floor = pd.DataFrame({"algorithm": "knn", "metric": list(METRICS3), "cutoff": 10,
                          "mean_p": [0.5, 0.6, 0.0001]})
    r = vd.verdict_frame(robust, sb.claims(rk, 0.95), 0.95, floor=floor).iloc[0]
    assert r["less_discriminative"] == "precision" and r["tied"] == "recall"
    assert r["claims_dropped"] == 1 and "1 claim(s) dropped" in r["text"]
    assert r["not_below_floor"] == "recall"
    assert "Not clearly below the A/A noise floor: Recall@10" in r["text"]


def test_downstream_check_and_dominance():
    best = pd.DataFrame({"algorithm": "knn", "metric": ["ndcg", "precision", "recall"],
                         "cutoff": 10, "config_id": [3, 3, 7]})
    rng = np.random.default_rng(0)
    vals = {3: rng.uniform(0.3, 0.5, 400), 7: None}
    vals[7] = vals[3] - 0.05 + rng.normal(0, 0.01, 400)

    def read(alg, metric, cutoff, ids):
        assert (metric, cutoff) == ("ndcg", 10)  # the accuracy family's judge at the same N
        return np.arange(400), np.stack([vals[int(i)] for i in ids])

    key, judges = ("knn", 10, "accuracy"), {"accuracy": "ndcg"}
    out = ds.downstream_check(best, {key: "ndcg"}, read, judges)
    n, differ, text = out[key]
    assert n == 2 and differ == "recall"
    assert "paired t-test over 400 test users" in text and "significant" in text
    assert "judged on the test split by nDCG@10" in text and "3 accuracy metrics" in text
    out = ds.downstream_check(best, {key: "ndcg"}, None, judges)  # data without a test split
    assert "no held-out values" in out[key][2] and "test split" not in out[key][2]
    one = ds.downstream_check(best.assign(config_id=3), {key: "ndcg"}, read, judges)
    assert one[key][:2] == (1, "")
    # a store without test users for these configurations: unknown, never a "nan" score
    empty = ds.downstream_check(best, {key: "ndcg"},
                                lambda alg, m, c, ids: (np.arange(0), np.zeros((len(ids), 0))),
                                judges)
    n, differ, text = empty[key]
    assert (n, differ) == (2, "") and "unknown" in text and "nan" not in text

    dp = pd.DataFrame({"algorithm": "bpr", "metric": "ndcg", "cutoff": 10,
                       "scope": ["all", "lr=0.025000487", "lr=0.01", "k=8", "k=16", "only:lr",
                                 "only:k"],
                       "dp": [10.0, 2.0, 5.0, 8.0, 9.0, 3.0, 12.0],
                       "n_pairs": [25, 25, 25, 25, 25, 25, 25]})
    imp = pd.DataFrame({"algorithm": "bpr", "metric": "ndcg", "cutoff": 10,
                        "evaluator": ["fanova", "fanova", "ped-anova", "ped-anova"],
                        "hyperparameter": ["lr", "k", "lr", "k"],
                        "importance": [0.2, 0.8, 0.6, 0.4]})
    h, agree, text = ds.dominance_evidence(dp, imp, "bpr", "ndcg", 10)
    # fANOVA says k; PED-ANOVA, Table 5 (lowest best DP 2.0 under lr=0.025000487) and one at a time
    # (only:lr 3.0 < only:k 12.0) say lr
    assert (h, agree) == ("lr", "3 of 4")
    assert "fANOVA" in text and "Table 5" in text and "one at a time" in text
    assert "at lr=0.0250005," in text  # the report's one format for hyperparameter values
    assert ds.dominance_evidence(dp[dp["scope"] == "all"], None, "bpr", "ndcg", 10) is None
    # no majority, no name: fANOVA and PED-ANOVA say k, Table 5 and one at a time say lr
    flipped = imp.assign(importance=[0.2, 0.8, 0.4, 0.6])
    h, agree, text = ds.dominance_evidence(dp, flipped, "bpr", "ndcg", 10)
    assert (h, agree) == ("", "2 of 4")
    assert text.startswith("No dominant hyperparameter for nDCG@10: the 4 analyses disagree")
    # Table 5 says lr, one at a time says k: 1 of 2 names nothing
    split = dp.assign(dp=[10.0, 2.0, 5.0, 8.0, 9.0, 12.0, 3.0])
    assert ds.dominance_evidence(split, None, "bpr", "ndcg", 10)[:2] == ("", "1 of 2")


def _robust_rows(values, n_pairs=45, cutoff=10):
    """A robust table of one algorithm from ``{metric: mean_p}`` (no interval)."""
    return pd.DataFrame([{"algorithm": "knn", "metric": m, "cutoff": cutoff, "mean_p": p,
                          "dp_at_25": 25 * p, "ci_low": np.nan, "ci_high": np.nan,
                          "n_pairs": n_pairs, "n_possible_pairs": n_pairs, "n_folds": 3,
                          "no_evidence": p >= 1.0} for m, p in values.items()])


def test_one_verdict_per_family_never_crosses_families():
    # EPC is the most discriminative metric overall, but an accuracy user is told nDCG
    robust = _robust_rows({"ndcg": 0.10, "precision": 0.30, "efd": 0.20, "epc": 0.05})
    v = vd.verdict_frame(robust, None, 0.95)
    assert list(v["family"]) == ["accuracy", "novelty"]
    acc, nov = v.iloc[0], v.iloc[1]
    assert (acc["recommended"], acc["tied"]) == ("ndcg", "precision")
    assert (nov["recommended"], nov["tied"]) == ("epc", "efd")
    assert "N = 10, accuracy: tune with nDCG@10" in acc["text"]
    assert "EPC" not in acc["text"] and "EFD" not in acc["text"]
    assert "nDCG" not in nov["text"] and "Precision" not in nov["text"]
    # configurable families; metrics of no family form "other"
    fam = (("mine", ("precision", "efd")),)
    v = vd.verdict_frame(robust, None, 0.95, families=fam)
    assert list(zip(v["family"], v["recommended"], strict=True)) == [
        ("mine", "efd"), ("other", "epc")]


def test_tie_rule_and_identical_metrics():
    robust = _robust_rows({"mrr": 0.1, "precision": 0.1, "ndcg": 0.1, "recall": 0.3})
    r = vd.verdict_frame(robust, None, 0.95).iloc[0]
    # equal values: the order of dptune.vocab.METRICS; the others with the same value are ties
    assert r["recommended"] == "ndcg" and r["identical"] == "precision;mrr"
    assert list(vd.order_metrics(robust)["metric"]) == ["ndcg", "precision", "mrr", "recall"]


def test_too_few_pairs_no_claim_but_the_numbers():
    robust = _robust_rows({"ndcg": 0.01, "precision": 0.9}, n_pairs=1)
    claims = pd.DataFrame({"algorithm": "knn", "cutoff": 10, "metric_a": "ndcg",
                           "metric_b": "precision", "p_min": 1.0, "held": True,
                           "dropped": False, "repeats": 1}, index=[0])
    r = vd.verdict_frame(robust, claims, 0.95).iloc[0]
    assert r["too_few_pairs"] and r["recommended"] == "" and r["less_discriminative"] == ""
    t = r["text"]
    assert "too few pairs (1) to rank metrics" in t and "min_pairs = 10" in t
    assert "nDCG@10 0.25" in t and "Precision@10 22.50" in t  # the numbers stay
    for claim in ("ignificantly", "P = ", "tune with", "Dominant"):
        assert claim not in t
    r = vd.verdict_frame(robust, claims, 0.95, min_pairs=1).iloc[0]
    assert r["recommended"] == "ndcg" and "P = 100%" in r["text"]


def test_downstream_per_family_is_judged_by_its_own_family():
    best = pd.DataFrame({"algorithm": "knn", "cutoff": 5,
                         "metric": ["ndcg", "precision", "efd", "epc"],
                         "config_id": [1, 2, 3, 4]})
    seen = []

    def read(alg, metric, cutoff, ids):
        seen.append((metric, cutoff, tuple(int(i) for i in ids)))
        rng = np.random.default_rng(len(seen))
        return np.arange(50), rng.uniform(0, 1, (len(ids), 50))

    recs = {("knn", 5, "accuracy"): "ndcg", ("knn", 5, "novelty"): "efd"}
    judges = {f: vd.family_judge(f, ms, "ndcg")
              for f, ms in vd.family_groups(best["metric"])}
    assert judges == {"accuracy": "ndcg", "novelty": "epc"}
    out = ds.downstream_check(best, recs, read, judges)
    assert seen == [("ndcg", 5, (1, 2)), ("epc", 5, (3, 4))]
    assert "judged on the test split by EPC@5" in out[("knn", 5, "novelty")][2]
    assert "nDCG" not in out[("knn", 5, "novelty")][2]


def test_dominance_needs_enough_pairs():
    dp = pd.DataFrame({"algorithm": "bpr", "metric": "ndcg", "cutoff": 10,
                       "scope": ["all", "lr=0.1", "lr=0.2", "k=8", "k=16", "only:lr", "only:k"],
                       "dp": [10.0, 2.0, 5.0, 8.0, 9.0, 3.0, 12.0],
                       "n_pairs": [25, 12, 12, 3, 3, 12, 12]})
    h, agree, text = ds.dominance_evidence(dp, None, "bpr", "ndcg", 10, min_pairs=10)
    assert h == "lr" and "2 Table 5 / one-at-a-time scope(s) with fewer than 10 pairs left out" in text
    # the whole grid has fewer pairs than min_pairs: no hyperparameter is named
    assert ds.dominance_evidence(dp, None, "bpr", "ndcg", 10, min_pairs=30) is None
