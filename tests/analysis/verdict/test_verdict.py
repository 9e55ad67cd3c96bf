"""The verdict (dptune.analysis.verdict: claims, rules, downstream, dominance) on synthetic data
with a known answer, through the analysis' own fold loop and bootstrap."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp.fold_loop import FoldView, ScopePlan, ScopeRun, UserDraws
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.options import DEFAULT_FAMILIES
from dptune.analysis.verdict import claims as cl
from dptune.analysis.verdict import downstream as ds
from dptune.analysis.verdict import rules
from dptune.analysis.verdict.dominance import dominance_table
from dptune.analysis.verdict.families import (
    family_groups,
    family_judge,
    family_judges,
    order_metrics,
)
from dptune.errors import DptuneError

METRICS3 = ("ndcg", "precision", "recall")


def _estimate(rng, effect, noise, n_configs=10, n_users=250, folds=3, n_boot=300, identical=False):
    """dp.csv rows of scope ``all`` and the bootstrap's draws for three metrics of one
    algorithm: nDCG carries the configurations' real differences (``effect``), Precision and
    Recall are nDCG plus ``noise`` per (configuration, user) (or nDCG itself)."""
    values = []
    for _ in range(folds):
        base = rng.uniform(0.2, 0.6, n_users)[None, :] + effect * np.arange(n_configs)[:, None]
        nd = base + rng.normal(0, 0.15, (n_configs, n_users))
        values.append({"ndcg": nd, **{m: nd if identical else nd + rng.normal(0, noise, nd.shape)
                                       for m in METRICS3[1:]}})
    pairs = np.column_stack(np.triu_indices(n_configs, k=1))
    run = ScopeRun(ScopePlan("knn", "all", [pairs], len(pairs), folds,
                             [(m, 10) for m in METRICS3], test=paired_test("t"),
                             bootstrap=n_boot, seed=1, draws=UserDraws(n_boot, 1)))
    for f, v in enumerate(values):
        run.add_fold(f, str(f), FoldView.of_table(np.arange(n_users), v))
    rows, _, draws = run.finish()
    return pd.DataFrame(rows), draws


def _verdict(dp, draws, **kw):
    comparisons = cl.comparisons_table(dp, draws, rules.DEFAULT_FAMILIES, 0.05, 10)
    return rules.verdict_table(dp, comparisons, **kw), comparisons


def test_one_metric_truly_more_discriminative():
    dp, draws = _estimate(np.random.default_rng(0), 0.01, 0.5)
    v, comparisons = _verdict(dp, draws)
    assert list(v.columns) == rules.VERDICT_COLUMNS
    r = v.iloc[0]
    assert r["recommended"] == "ndcg"
    assert set(r["less_discriminative"]) == {"precision", "recall"}
    assert r["tied"] == [] and r["stability_repeats"] == 1 and r["claims_dropped"] == 0
    assert r["dp_per_25"] == pytest.approx(25 * dp.set_index("metric").at["ndcg", "mean_p"])
    c = comparisons.set_index(["a", "b"])
    assert (c["kind"] == "metrics").all() and (c["group"] == "accuracy").all()
    assert c.at[("ndcg", "recall"), "p_adjusted"] <= 0.05
    assert c.at[("ndcg", "recall"), "pr_more_discriminative"] > 0.95


def test_no_metric_more_discriminative_is_tied():
    rng = np.random.default_rng(1)
    dp, draws = _estimate(rng, 0.0, 0.0, identical=True)  # three identical metrics
    r = _verdict(dp, draws)[0].iloc[0]
    assert r["less_discriminative"] == []
    assert set(r["tied"]) == set(METRICS3) - {r["recommended"]}
    assert set(r["identical"]) == set(METRICS3) - {r["recommended"]}
    # independent metrics without real differences: tied as well
    dp2, draws2 = _estimate(rng, 0.0, 0.3)
    assert _verdict(dp2, draws2)[0].iloc[0]["less_discriminative"] == []


def test_without_bootstrap_no_claims_and_no_evidence():
    dp, _ = _estimate(np.random.default_rng(2), 0.01, 0.5)
    dp = dp.assign(ci_low=np.nan, ci_high=np.nan)
    v, comparisons = _verdict(dp, {})
    assert comparisons.empty
    r = v.iloc[0]
    assert r["less_discriminative"] == [] and r["tied"] == ["precision", "recall"]
    dead = dp.assign(mean_p=1.0, dp_per_25=25.0, no_evidence=True)
    r = _verdict(dead, {})[0].iloc[0]
    assert r["recommended"] == "" and r["no_evidence"] == ["ndcg", "precision", "recall"]
    part = dp.copy()
    part.loc[part["metric"] == "recall", "no_evidence"] = True
    r = _verdict(part, {})[0].iloc[0]
    assert r["no_evidence"] == ["recall"] and "recall" not in r["tied"]
    with pytest.raises(DptuneError, match="missing"):
        rules.recommend(dp.drop(columns=["no_evidence"]), comparisons)


def _claim(a, b, held, dropped=False, p=0.01):
    return {"algorithm": "knn", "cutoff": 10, "kind": "metrics", "group": "accuracy", "a": a,
            "b": b, "p_adjusted": p, "p_adjusted_first": p, "pr_more_discriminative": 0.99,
            "pr_more_discriminative_first": 0.99, "repeats": 2, "significant_first": True,
            "held": held, "dropped": dropped}


def test_dropped_claim_is_counted_and_noise_floor_flags():
    dp, _ = _estimate(np.random.default_rng(3), 0.01, 0.5)
    comparisons = pd.DataFrame([_claim("ndcg", "recall", False, True),
                                _claim("ndcg", "precision", True)])
    floor = pd.DataFrame({"algorithm": "knn", "metric": list(METRICS3), "cutoff": 10,
                          "flagged": [False, False, True]})
    r = rules.verdict_table(dp, comparisons, floor=floor).iloc[0]
    assert r["less_discriminative"] == ["precision"] and r["tied"] == ["recall"]
    assert r["claims_dropped"] == 1 and r["stability_repeats"] == 2
    assert r["not_below_floor"] == ["recall"]


def test_downstream_table():
    best = pd.DataFrame({"algorithm": "knn", "metric": ["ndcg", "precision", "recall"],
                         "cutoff": 10, "config_id": [3, 3, 7], "params": ["k=3", "k=3", "k=7"]})
    rng = np.random.default_rng(0)
    vals = {3: rng.uniform(0.3, 0.5, 400)}
    vals[7] = vals[3] - 0.05 + rng.normal(0, 0.01, 400)

    def read(alg, metric, cutoff, ids):
        assert (metric, cutoff) == ("ndcg", 10)  # the accuracy family's judge at the same N
        return np.arange(400), np.stack([vals[int(i)] for i in ids])

    key, judges = ("knn", 10, "accuracy"), {"accuracy": "ndcg"}
    t = ds.downstream_table(best, {key: "ndcg"}, read, judges).set_index("metric")
    assert list(t["status"]) == ["recommended", "same", "compared"]
    assert t.at["recall", "n_test_users"] == 400 and bool(t.at["recall", "significant"])
    assert t.at["recall", "p"] < 1e-10
    assert t.at["recall", "test_mean"] == pytest.approx(vals[7].mean())
    assert t.at["recall", "recommended_config"] == 3 and t.at["recall", "params"] == "k=7"
    none = ds.downstream_table(best, {key: "ndcg"}, None, judges)
    assert set(none["status"]) == {"recommended", "same", "no_test"}
    one = ds.downstream_table(best.assign(config_id=3), {key: "ndcg"}, read, judges)
    assert one["config_id"].nunique() == 1 and not one["significant"].any()
    # a store without test users for these configurations: no number, never a "nan" score
    empty = ds.downstream_table(best, {key: "ndcg"},
                                lambda alg, m, c, ids: (np.arange(0), np.zeros((len(ids), 0))),
                                judges)
    assert set(empty["status"]) == {"recommended", "same", "no_test"}
    assert empty["test_mean"].isna().all()


def _dp_rows(values, n_pairs=45, cutoff=10):
    """dp.csv rows of scope all of one algorithm from ``{metric: mean_p}`` (no interval)."""
    return pd.DataFrame([{"algorithm": "knn", "scope": "all", "metric": m, "cutoff": cutoff,
                          "mean_p": p, "dp_per_25": 25 * p, "ci_low": np.nan,
                          "ci_high": np.nan, "n_pairs": n_pairs, "n_possible_pairs": n_pairs,
                          "n_folds": 3, "no_evidence": p >= 1.0} for m, p in values.items()])


_NO_CLAIMS = pd.DataFrame(columns=cl.CLAIM_COLUMNS)


def test_one_verdict_per_family_never_crosses_families():
    # EPC is the most discriminative metric overall, but an accuracy user is told nDCG
    dp = _dp_rows({"ndcg": 0.10, "precision": 0.30, "efd": 0.20, "epc": 0.05})
    v = rules.verdict_table(dp, _NO_CLAIMS)
    assert list(v["family"]) == ["accuracy", "novelty"]
    acc, nov = v.iloc[0], v.iloc[1]
    assert (acc["recommended"], acc["tied"]) == ("ndcg", ["precision"])
    assert (nov["recommended"], nov["tied"]) == ("epc", ["efd"])
    # configurable families; metrics of no family stay with their default family: leaving a
    # metric out never ranks a novelty metric against an accuracy one (EPC is lowest overall)
    fam = (("mine", ("precision", "efd")),)
    v = rules.verdict_table(dp, _NO_CLAIMS, families=fam)
    assert list(zip(v["family"], v["recommended"], strict=True)) == [
        ("mine", "efd"), ("accuracy", "ndcg"), ("novelty", "epc")]
    # a default family's name the option already uses: the left-out ones are "other <name>"
    fam = (("accuracy", ("ndcg",)), ("novelty", ("efd",)))
    v = rules.verdict_table(dp, _NO_CLAIMS, families=fam)
    assert list(zip(v["family"], v["recommended"], strict=True)) == [
        ("accuracy", "ndcg"), ("novelty", "efd"), ("other accuracy", "precision"),
        ("other novelty", "epc")]


def test_left_out_metrics_keep_their_default_family_and_its_judge():
    fam = (("accuracy", ("ndcg", "recall")), ("novelty", ("epc",)))
    metrics = ["ndcg", "precision", "recall", "mrr", "efd", "epc"]
    assert family_groups(metrics, fam) == [
        ("accuracy", ["ndcg", "recall"]), ("novelty", ["epc"]),
        ("other accuracy", ["precision", "mrr"]), ("other novelty", ["efd"])]
    # the judge of a left-out family: its default family's order (Precision before MRR)
    assert family_judge("other accuracy", ["mrr", "precision"], "ndcg", fam) == "precision"
    assert family_judges(fam, "ndcg", metrics) == ["ndcg", "epc", "precision", "efd"]
    assert family_judges(fam, "ndcg") == ["ndcg", "epc"]  # no metrics: the configured ones
    # every family keeps to one kind of metric, whatever is left out
    kinds = {m: name for name, ms in DEFAULT_FAMILIES for m in ms}
    for name, ms in family_groups(metrics, (("accuracy", ("mrr",)),)):
        assert len({kinds[m] for m in ms}) == 1, (name, ms)


def test_a_family_named_other_keeps_the_metrics_of_no_family_apart():
    """A configured family named ``other`` beside a metric of no family (a per-user table's
    ``hr``): both were called ``other``, two rows of one name in the verdict and one key of
    the result's judges. The metrics of no family are ``other other``."""
    from dptune.analysis.result import MetricFamilies

    fam = (("accuracy", ("ndcg",)), ("other", ("epc",)))
    metrics = ["ndcg", "epc", "hr"]
    groups = family_groups(metrics, fam)
    assert groups == [("accuracy", ["ndcg"]), ("other", ["epc"]), ("other other", ["hr"])]
    result = MetricFamilies.of_metrics(metrics, fam, "ndcg")
    assert list(result.judges) == ["accuracy", "other", "other other"]
    v = rules.verdict_table(_dp_rows({"ndcg": 0.1, "epc": 0.2, "hr": 0.3}), _NO_CLAIMS,
                            families=fam)
    assert list(zip(v["family"], v["recommended"], strict=True)) == [
        ("accuracy", "ndcg"), ("other", "epc"), ("other other", "hr")]


@pytest.mark.parametrize("families", [
    DEFAULT_FAMILIES, (("accuracy", ("recall", "ndcg")), ("novelty", ("epc",))),
    (("accuracy", ("mrr",)),), (("mine", ("efd", "precision")),)])
@pytest.mark.parametrize("primary", ["ndcg", "recall", "efd"])
def test_the_result_and_the_verdict_judge_with_one_order(families, primary):
    """The report's judge order (``MetricFamilies.judges``) and the verdict's judge
    (``family_judge``) are one order: for every subset of a family's metrics the judge is the
    first of them in the report's order."""
    from itertools import combinations

    from dptune.analysis.result import MetricFamilies

    metrics = ["ndcg", "precision", "recall", "mrr", "efd", "epc"]
    result = MetricFamilies.of_metrics(metrics, families, primary)
    for name, ms in result.groups:
        order = result.judges[name]
        assert order[0] == family_judge(name, list(ms), primary, families)
        for k in range(1, len(ms) + 1):
            for some in combinations(ms, k):
                assert family_judge(name, list(some), primary, families) == next(
                    m for m in order if m in some)


def test_tie_rule_and_identical_metrics():
    dp = _dp_rows({"mrr": 0.1, "precision": 0.1, "ndcg": 0.1, "recall": 0.3})
    r = rules.verdict_table(dp, _NO_CLAIMS).iloc[0]
    # equal values: the order of dptune.vocab.METRICS; the others with the same value are ties
    assert r["recommended"] == "ndcg" and r["identical"] == ["precision", "mrr"]
    assert list(order_metrics(dp)["metric"]) == ["ndcg", "precision", "mrr", "recall"]
    # equal in exact arithmetic, apart in the last bit of the float sums (Precision and Recall
    # when every user holds as many relevant items): still one value, in METRICS order
    dp = _dp_rows({"precision": 0.04163948417797548, "recall": 0.041639484177975465,
                   "ndcg": 0.5})
    r = rules.verdict_table(dp, _NO_CLAIMS).iloc[0]
    assert r["recommended"] == "precision" and r["identical"] == ["recall"]
    assert list(order_metrics(dp)["metric"]) == ["precision", "recall", "ndcg"]
    # a real difference, however small a DP shows it, is no tie
    dp = _dp_rows({"precision": 0.0416394842, "recall": 0.0416394841})
    assert rules.verdict_table(dp, _NO_CLAIMS).iloc[0]["identical"] == []


def test_too_few_pairs_no_claim_but_the_numbers():
    dp = _dp_rows({"ndcg": 0.01, "precision": 0.9}, n_pairs=1)
    claims = pd.DataFrame([_claim("ndcg", "precision", True)])
    r = rules.verdict_table(dp, claims).iloc[0]
    assert r["too_few_pairs"] and r["recommended"] == "" and r["less_discriminative"] == []
    assert r["dominance"] == "" and r["dominant_hyperparameter"] == ""
    r = rules.verdict_table(dp, claims, min_pairs=1).iloc[0]
    assert r["recommended"] == "ndcg" and r["less_discriminative"] == ["precision"]
    # comparisons are not even made below min_pairs
    assert cl.metric_comparisons(dp, {}, rules.DEFAULT_FAMILIES, 0.05, 10).empty


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
    judges = {f: family_judge(f, ms, "ndcg") for f, ms in family_groups(best["metric"])}
    assert judges == {"accuracy": "ndcg", "novelty": "epc"}
    out = ds.downstream_table(best, recs, read, judges)
    assert seen == [("ndcg", 5, (1, 2)), ("epc", 5, (3, 4))]
    assert set(out.loc[out["family"] == "novelty", "judge"]) == {"epc"}


def _only_rows(values, n_pairs, metric="ndcg"):
    return pd.DataFrame([{"algorithm": "bpr", "scope": f"only:{h}", "metric": metric,
                          "cutoff": 10, "mean_p": p, "dp_per_25": 25 * p, "ci_low": 20 * p,
                          "ci_high": 30 * p, "n_pairs": n_pairs[h], "n_possible_pairs": 99,
                          "n_folds": 3, "no_evidence": False} for h, p in values.items()])


def _hyp_claim(a, b, held, p=0.01):
    return {**_claim(a, b, held, p=p), "algorithm": "bpr", "kind": "hyperparameters",
            "group": "ndcg", "repeats": 1}


def test_dominance_names_a_hyperparameter_only_when_it_beats_every_other():
    dp = _only_rows({"factors": 0.05, "learning_rate": 0.2, "iterations": 0.3},
                    {"factors": 50, "learning_rate": 50, "iterations": 50})
    both = pd.DataFrame([_hyp_claim("factors", "learning_rate", True, 0.002),
                         _hyp_claim("factors", "iterations", True, 0.001)])
    r = dominance_table(dp, both, 10).iloc[0]
    assert (r["answer"], r["hyperparameter"]) == ("dominant", "factors")
    assert r["over"] == ["learning_rate", "iterations"] and r["tied"] == []
    assert r["p_adjusted"] == 0.002 and r["dp_per_25"] == pytest.approx(1.25)
    one = pd.DataFrame([_hyp_claim("factors", "learning_rate", False, 0.2),
                        _hyp_claim("factors", "iterations", True, 0.001)])
    r = dominance_table(dp, one, 10).iloc[0]
    assert (r["answer"], r["over"], r["tied"]) == ("none", ["iterations"], ["learning_rate"])
    r = dominance_table(dp, _NO_CLAIMS, 10).iloc[0]
    assert r["answer"] == "no_bootstrap"
    # the verdict carries the answer for its recommended metric
    whole = _dp_rows({"ndcg": 0.1, "recall": 0.2}).assign(algorithm="bpr")
    v = rules.verdict_table(pd.concat([whole, dp]), _NO_CLAIMS,
                            dominance=dominance_table(dp, both, 10)).iloc[0]
    assert (v["dominant_hyperparameter"], v["dominance"]) == ("factors", "dominant")


def test_dominance_needs_enough_pairs():
    dp = _only_rows({"factors": 0.05, "learning_rate": 0.2}, {"factors": 4, "learning_rate": 50})
    r = dominance_table(dp, _NO_CLAIMS, 10).iloc[0]
    # the lowest DP rests on 4 pairs: it is not compared, and one hyperparameter is left
    assert (r["answer"], r["hyperparameter"], r["too_few_pairs"]) == (
        "single", "learning_rate", ["factors"])
    r = dominance_table(dp, _NO_CLAIMS, 100).iloc[0]
    assert r["answer"] == "too_few_pairs" and r["hyperparameter"] == ""
    # only scopes with enough pairs are compared at all
    assert cl.hyperparameter_comparisons(dp, {}, 0.05, 10).empty


def test_a_hyperparameter_without_evidence_is_named_as_such_not_as_too_few_pairs():
    """A one-at-a-time scope with enough pairs whose p-values are all 1 (changing the
    hyperparameter alone never changed the metric) is not compared; the answer said "too few
    pairs" with an empty list, or "single" as if the other had too few pairs."""
    both = _only_rows({"factors": 1.0, "iterations": 1.0}, {"factors": 50, "iterations": 50})
    both["no_evidence"] = True
    r = dominance_table(both, _NO_CLAIMS, 10).iloc[0]
    assert (r["answer"], r["no_evidence"], r["too_few_pairs"], r["compared"]) == (
        "no_evidence", ["factors", "iterations"], [], 0)
    one = _only_rows({"factors": 0.2, "iterations": 1.0}, {"factors": 50, "iterations": 50})
    one["no_evidence"] = one["scope"] == "only:iterations"
    r = dominance_table(one, _NO_CLAIMS, 10).iloc[0]
    assert (r["answer"], r["hyperparameter"], r["no_evidence"], r["too_few_pairs"]) == (
        "single", "factors", ["iterations"], [])
    # too few pairs of one, no evidence of the other: neither compared, both named
    mixed = _only_rows({"factors": 0.2, "iterations": 1.0}, {"factors": 4, "iterations": 50})
    mixed["no_evidence"] = mixed["scope"] == "only:iterations"
    r = dominance_table(mixed, _NO_CLAIMS, 10).iloc[0]
    assert (r["answer"], r["no_evidence"], r["too_few_pairs"]) == (
        "no_evidence", ["iterations"], ["factors"])


def _dp_rows_ci(mean_p, n_pairs=45, no_evidence=()):
    """dp.csv rows of scope ``all`` for one algorithm at N = 10 with the given mean p-values and
    an interval of +-1 around each DP (named apart from :func:`_dp_rows`, which this definition
    used to shadow, so the tests above ran on these rows rather than on rows without an
    interval)."""
    return pd.DataFrame([{"algorithm": "knn", "scope": "all", "metric": m, "cutoff": 10,
                          "mean_p": p, "dp_per_25": 25 * p, "ci_low": 25 * p - 1,
                          "ci_high": 25 * p + 1, "n_pairs": n_pairs, "n_possible_pairs": 45,
                          "n_folds": 3, "no_evidence": m in no_evidence}
                         for m, p in mean_p.items()])


def test_choices_are_the_metrics_the_evidence_does_not_separate():
    """Ties said as ties: the recommended (lowest) metric and every metric whose claim of being
    less discriminative does not hold are equal choices, in DP order; a dropped claim (held
    under one pair seed only) does not separate; a held claim does."""
    dp = _dp_rows_ci({"ndcg": 0.20, "precision": 0.18, "recall": 0.40, "mrr": 0.22})
    comparisons = pd.DataFrame([_claim("precision", "ndcg", False, p=0.3),
                                _claim("precision", "recall", True),
                                _claim("precision", "mrr", False, True)])
    r = rules.verdict_table(dp, comparisons).iloc[0]
    assert r["recommended"] == "precision" and r["less_discriminative"] == ["recall"]
    assert r["choices"] == ["precision", "ndcg", "mrr"] and bool(r["tested"])
    assert r["tied"] == ["ndcg", "mrr"]  # the choices are the recommended metric and the tied ones
    # every claim holds: a single choice, the evidence backs it
    held = pd.DataFrame([_claim("precision", m, True) for m in ("ndcg", "recall", "mrr")])
    r = rules.verdict_table(dp, held).iloc[0]
    assert r["choices"] == ["precision"] and bool(r["tested"])


def test_choices_without_a_test_without_evidence_and_on_too_few_pairs():
    dp = _dp_rows_ci({"ndcg": 0.20, "precision": 0.18, "recall": 0.40},
                  no_evidence=("recall",))
    empty = pd.DataFrame(columns=cl.CLAIM_COLUMNS)
    r = rules.verdict_table(dp, empty).iloc[0]  # no bootstrap: nothing separates, nothing tested
    assert r["choices"] == ["precision", "ndcg"] and not bool(r["tested"])
    few = rules.verdict_table(_dp_rows_ci({"ndcg": 0.2, "precision": 0.18}, n_pairs=5), empty)
    assert few.iloc[0]["choices"] == [] and few.iloc[0]["recommended"] == ""


def test_choices_of_a_real_bootstrap():
    """Through the fold loop and the max-t test: identical metrics are all choices; a metric
    with real extra noise is not one."""
    rng = np.random.default_rng(0)
    dp, draws = _estimate(rng, 0.01, 0.5)
    r = _verdict(dp, draws)[0].iloc[0]
    assert r["choices"] == ["ndcg"] and bool(r["tested"])
    dp, draws = _estimate(rng, 0.0, 0.0, identical=True)
    r = _verdict(dp, draws)[0].iloc[0]
    assert set(r["choices"]) == set(METRICS3) and bool(r["tested"])
    assert r["choices"][0] == r["recommended"]


def test_the_hyperparameters_small_sample_factor_reads_the_fewest_user_groups():
    """Folds of fewer than 64 users give fewer bootstrap groups, so the dominance comparisons'
    standard errors widen by that many groups' factor (1.096 at 20), as the interval's do; the
    groups are the fewest users of a one-at-a-time scope's pair tests, at most 64."""
    pv = pd.DataFrame({"algorithm": "bpr", "scope": ["all", "only:a", "only:a", "only:b"],
                       "metric": "ndcg", "cutoff": 10, "fold": ["0", "0", "1", "1"],
                       "pair_index": 0, "p": 0.5, "n_users": [10, 300, 20, 500]})
    assert cl.user_groups(pv) == {("bpr", "ndcg", 10): 20}
    assert cl.user_groups(pv.assign(n_users=[10, 300, 90, 500])) == {("bpr", "ndcg", 10): 64}
    assert cl.user_groups(pv[pv["scope"] == "all"]) == {}
    rng = np.random.default_rng(3)
    n_users, n_boot = 250, 300
    draws_by, rows = {}, []
    shared = UserDraws(n_boot, 1)
    for scope, effect in (("only:a", 0.004), ("only:b", 0.002)):
        nd = rng.uniform(0.2, 0.6, n_users)[None, :] + effect * np.arange(6)[:, None]
        nd = nd + rng.normal(0, 0.15, nd.shape)
        pairs = np.column_stack(np.triu_indices(6, k=1))
        run = ScopeRun(ScopePlan("bpr", scope, [pairs], len(pairs), 1, [("ndcg", 10)],
                                 test=paired_test("t"), bootstrap=n_boot, seed=1, draws=shared))
        run.add_fold(0, "0", FoldView.of_table(np.arange(n_users), {"ndcg": nd}))
        r, _, d = run.finish()
        rows += r
        draws_by.update(d)
    dp = pd.DataFrame(rows)
    wide = cl.hyperparameter_comparisons(dp, draws_by, 0.05, 10, {("bpr", "ndcg", 10): 20})
    usual = cl.hyperparameter_comparisons(dp, draws_by, 0.05, 10)
    assert len(usual) == 2 and (wide["p_adjusted"].to_numpy() >= usual["p_adjusted"].to_numpy()).all()
    assert (wide["p_adjusted"] > usual["p_adjusted"]).any()
    # a grid sample's scopes resting on 20 independent draws of units (and 64 user groups):
    # the same factor as 20 user groups; every unit present (NaN) changes nothing
    few_units = cl.hyperparameter_comparisons(dp.assign(unit_clusters=[20.0, 40.0]), draws_by,
                                              0.05, 10)
    np.testing.assert_allclose(few_units["p_adjusted"], wide["p_adjusted"])
    full = cl.hyperparameter_comparisons(dp.assign(unit_clusters=np.nan), draws_by, 0.05, 10)
    np.testing.assert_allclose(full["p_adjusted"], usual["p_adjusted"])


def test_the_fewest_draws_of_units_of_the_scopes_compared_count():
    """``unit_clusters``: the smallest of the scopes' (at least 2), 64 groups when every unit
    is present (NaN, or a dp.csv without the column)."""
    rows = pd.DataFrame({"unit_clusters": [14.0, 6.0, np.nan]})
    assert cl.unit_clusters(rows) == 6
    assert cl.unit_clusters(rows.assign(unit_clusters=1.0)) == 2
    assert cl.unit_clusters(rows.assign(unit_clusters=np.nan)) == 64
    assert cl.unit_clusters(pd.DataFrame({"scope": ["only:a"]})) == 64


def test_a_scope_of_every_pair_stands_for_every_pair_seed_of_a_sampled_one():
    """``only:a`` holds every pair of its stratum (one repeat: any pair seed gives the same
    pairs), ``only:b`` a sample checked under 3 pair seeds: the comparison runs under all 3,
    ``only:a``'s one estimate beside each (it ran under the first only, ``repeats = 1``), and
    a claim that fails under a later seed of ``only:b`` is dropped."""
    rng = np.random.default_rng(0)
    reps = {s: rng.normal(0.0, 0.01, 400) for s in range(4)}
    a = [(0.10, 0.10 + reps[0])]
    b = [(0.30, 0.30 + reps[1]), (0.31, 0.31 + reps[2]), (0.11, 0.11 + reps[3])]
    draws = {("bpr", "only:a", "ndcg", 10): a, ("bpr", "only:b", "ndcg", 10): b}
    dp = pd.DataFrame({"algorithm": "bpr", "scope": ["only:a", "only:b"], "metric": "ndcg",
                       "cutoff": 10, "n_pairs": [12, 20], "n_possible_pairs": [12, 90],
                       "no_evidence": False})
    out = cl.hyperparameter_comparisons(dp, draws, 0.05, 10).set_index(["a", "b"])
    row = out.loc[("a", "b")]
    assert row["repeats"] == 3 and bool(row["significant_first"]) and not bool(row["held"])
    assert bool(row["dropped"]) and row["p_adjusted"] > 0.05 >= row["p_adjusted_first"]
    # both sampled: the repeats every label has, as before
    sampled = dp.assign(n_possible_pairs=[90, 90])
    assert cl.hyperparameter_comparisons(sampled, draws, 0.05, 10)["repeats"].eq(1).all()
