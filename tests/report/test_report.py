"""Tests for dptune.report: table markup, file formats, figures and byte-identical reruns.

The inputs are small synthetic frames with the exact columns the dp stage and the sweep produce;
the Table 3 values at N = 10 are the paper's MovieLens values, so the expected bold/underlined
cells are known in advance.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import frames_result  # noqa: E402

import dptune.report as report
from dptune.analysis.noise import aa_band  # noqa: E402
from dptune.analysis.result import MetricFamilies  # noqa: E402
from dptune.errors import DptuneError  # noqa: E402
from dptune.report._figures import palette_png  # noqa: E402
from dptune.report._table import Cell, _md_cell, latex_label

METRICS = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
# Paper Table 3 (MovieLens), in the paper's column order EFD, EPC, MRR, nDCG, Prec, Rec.
PAPER_T3 = {
    "itemknn": (1.884, 1.840, 1.766, 1.710, 1.855, 2.385),
    "userknn": (1.688, 1.576, 2.196, 1.665, 1.869, 1.993),
    "bpr-mf": (0.875, 0.776, 0.803, 0.594, 0.585, 1.314),
}
PAPER_ORDER = ("efd", "epc", "mrr", "ndcg", "precision", "recall")
P = 25


def _dp_row(alg: str, scope: str, metric: str, cutoff: int, dp: float, n_pairs: int = P) -> dict:
    """A dp.csv row whose paper DP (the sum over P pairs) is ``dp``."""
    per_25 = dp * 25 / n_pairs
    return {
        "algorithm": alg, "scope": scope, "metric": metric, "cutoff": cutoff,
        "n_pairs": n_pairs, "n_possible_pairs": n_pairs, "n_folds": 10, "mean_p": dp / n_pairs,
        "mean_p_sd": 0.01, "dp_per_25": per_25, "dp_per_25_plus_sd": per_25 * 1.7,
        "dp_per_25_minus_sd": per_25 * 0.3, "ci_low": np.nan, "ci_high": np.nan,
        "dp_sum": dp, "sakai": 0.5, "sakai_sd": 0.1, "no_evidence": False, "repeats": 1,
        "test": "t", "correction": "none", "alpha": 0.05,
    }


# Table 5 (bpr-mf, ndcg@10): lowest per row known in advance.
T5_NDCG10 = {
    "factors": {"9": 0.7, "10": 0.6, "20": 0.29, "160": 0.5},
    "iterations": {"1": 1.633, "2": 0.796, "4": 0.707},
    "learning_rate": {"0.2": 0.765, "0.1": 0.702, "0.05": 1.918},
}
# One at a time (bpr-mf, @10): ndcg -> factors lowest, precision -> learning_rate lowest.
ONLY_10 = {
    "factors": {"ndcg": 0.2, "precision": 0.9},
    "iterations": {"ndcg": 0.9, "precision": 0.8},
    "learning_rate": {"ndcg": 0.5, "precision": 0.1},
}


def make_dp() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for alg, values in PAPER_T3.items():
        for m, v in zip(PAPER_ORDER, values, strict=True):
            rows.append(_dp_row(alg, "all", m, 10, v))
            rows.append(_dp_row(alg, "all", m, 5, v + 0.1 * PAPER_ORDER.index(m)))
    for h, vals in T5_NDCG10.items():
        for v, x in vals.items():
            for m in METRICS:
                for c in (5, 10):
                    value = x if (m, c) == ("ndcg", 10) else float(rng.uniform(0.3, 3.0))
                    n_pairs = 10 if (h, v) == ("factors", "160") else P
                    rows.append(_dp_row("bpr-mf", f"{h}={v}", m, c, value, n_pairs))
    for h, vals in ONLY_10.items():
        for m in METRICS:
            for c in (5, 10):
                value = vals.get(m, 1.0 + METRICS.index(m) * 0.01) if c == 10 else 2.0
                rows.append(_dp_row("bpr-mf", f"only:{h}", m, c, value))
    for m in METRICS:
        for c in (5, 10):
            rows.append(_dp_row("userknn", "only:k", m, c, 1.5))
    return pd.DataFrame(rows)


def make_curves() -> pd.DataFrame:
    rows = []
    for alg in PAPER_T3:
        for i, m in enumerate(METRICS):
            for c in (5, 10):
                mean = np.linspace(0.9 - 0.05 * i, 0.0, P)
                for pos in range(P):  # 0-based, as dp.analyze writes them
                    rows.append(
                        {
                            "algorithm": alg,
                            "scope": "all",
                            "metric": m,
                            "cutoff": c,
                            "position": pos,
                            "mean": float(mean[pos]),
                            "sd": 0.15,
                        }
                    )
    return pd.DataFrame(rows)


def make_noise() -> pd.DataFrame:
    rows = []
    for alg in PAPER_T3:
        for m in METRICS:
            for pos in range(P):
                rows.append(
                    {
                        "algorithm": alg,
                        "cutoff": 10,
                        "metric": m,
                        "position": pos,
                        "mean": 1 - (pos + 1) / (P + 1),
                    }
                )
    return pd.DataFrame(rows)


def make_datasets() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": ["MovieLens-1M", "Amazon_Movies & 100%"],
            "users": [6040, 16141],
            "items": [3706, 111537],
            "ratings": [1000209, 858314],
            "sparsity": [1 - 1000209 / (6040 * 3706), 0.99952],
        }
    )


def make_best() -> pd.DataFrame:
    rows = []
    for alg in PAPER_T3:
        for i, m in enumerate(METRICS):
            for c in (5, 10):
                rows.append(
                    {
                        "algorithm": alg,
                        "metric": m,
                        "cutoff": c,
                        "config_id": 100 + i,
                        "params": f"k={10 * (i + 1)}",
                        "validation_mean": 0.1 + 0.01 * i,
                        "test_value": 0.2 + 0.01 * i,
                        "test_ndcg": 0.05 + 0.001 * i,
                    }
                )
    best = pd.DataFrame(rows)

    def set_row(alg: str, metric: str, **kw: object) -> None:
        mask = (best["algorithm"] == alg) & (best["metric"] == metric) & (best["cutoff"] == 10)
        for k, v in kw.items():
            best.loc[mask, k] = v

    # BPR-MF @10: precision (most discriminative) vs recall (least).
    set_row("bpr-mf", "precision", config_id=7, params="factors=20|lr=0.1", test_ndcg=0.1234)
    set_row("bpr-mf", "recall", config_id=3, params="factors=10, lr=0.2", test_ndcg=0.1000)
    # User-kNN @10: EPC (most) and MRR (least) select the same configuration.
    set_row("userknn", "epc", config_id=55, params="k=55", test_ndcg=0.0777)
    set_row("userknn", "mrr", config_id=55, params="k=55", test_ndcg=0.0777)
    # Item-kNN @10: no test nDCG column values: nDCG's own test value known, recall's not.
    best.loc[best["algorithm"] == "itemknn", "test_ndcg"] = np.nan
    set_row("itemknn", "ndcg", config_id=11, params="k=11", test_value=0.3)
    set_row("itemknn", "recall", config_id=12, params="k=12", test_value=0.4)
    return best


SETTINGS = {
    "name": "unit",
    "split": "temporal hold-out 80/20",
    "folds": 10,
    "seeds": [1, 2, 3],
    "relevance_threshold": 4,
    "metric_variant": "relevance-aware",
    "n_pairs": 25,
    "test": "t",
    "package_versions": {"numpy": "2.4", "pandas": "3.1"},
}


def _report(*, settings: dict | None = SETTINGS,
            extra_sections: tuple = (("Extra analysis", "Some *markdown* here."),),
            **frames: object) -> report.Report:
    """The report of a result built from the frames above (``frames`` replace them, as
    :func:`conftest.frames_result` takes them)."""
    args = {"dp": make_dp(), "curves": make_curves(), "datasets": make_datasets(),
            "best": make_best()}
    args.update(frames)
    result = frames_result(**args)
    return report.Report.from_result(result, settings=settings, extra_sections=extra_sections)


def _write(out: Path, **kwargs: object) -> list[Path]:
    """:func:`_report` written into ``out``."""
    return _report(**kwargs).write(out)


def _markdown(**kwargs: object) -> str:
    """:func:`_report`'s report.md, rendered without writing the report (no figure drawn)."""
    return _report(**kwargs).to_markdown()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("report")
    return out, _write(out)


def _md_rows(md: str) -> list[list[str]]:
    """Body cells of every Markdown table row (header and separator rows included)."""
    out = []
    for line in md.splitlines():
        if line.startswith("| "):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            out.append([c.strip() for c in cells])
    return out


def _find_row(rows: list[list[str]], *prefix: str) -> list[str]:
    for r in rows:
        if r[: len(prefix)] == list(prefix):
            return r
    raise AssertionError(f"no row starting with {prefix}")


# ------------------------------------------------------------------------------- tables


def test_table3_bold_lowest_underline_highest() -> None:
    t = report.table3(make_dp())
    rows = _md_rows(t.to_markdown())
    assert rows[0] == ["Algorithm", "N", "P", "EFD@N", "EPC@N", "MRR@N", "nDCG@N", "Precision@N",
                       "Recall@N"]
    bpr = _find_row(rows, "BPR-MF", "10")
    # P = 25: DP per 25 pairs is the paper's DP itself
    assert bpr[2:] == ["25", "0.875", "0.776", "0.803", "0.594", "**0.585**", "<ins>1.314</ins>"]
    user = _find_row(rows, "User-kNN", "10")
    assert user[3:] == ["1.688", "**1.576**", "<ins>2.196</ins>", "1.665", "1.869", "1.993"]
    item = _find_row(rows, "Item-kNN", "10")
    assert item[3:] == ["1.884", "1.840", "1.766", "**1.710**", "1.855", "<ins>2.385</ins>"]
    # the underline is <ins>, which GitHub's HTML sanitiser keeps (it strips <u>); the
    # committed example reports carry the same mark
    committed = Path(__file__).resolve().parents[2] / "reports"
    for path in sorted(committed.glob("*/*.md")) + sorted(committed.glob("*/report.html")):
        assert "<u>" not in path.read_text(encoding="utf-8"), path
    # Paper row order: Item-kNN, User-kNN, BPR-MF; cutoffs ascending.
    body = [r[:2] for r in rows[2:]]
    assert body == [
        ["Item-kNN", "5"],
        ["Item-kNN", "10"],
        ["User-kNN", "5"],
        ["User-kNN", "10"],
        ["BPR-MF", "5"],
        ["BPR-MF", "10"],
    ]
    tex = t.to_latex()
    bpr_tex = next(line for line in tex.splitlines() if line.startswith("BPR-MF & 10"))
    assert bpr_tex == (
        "BPR-MF & 10 & 25 & 0.875 & 0.776 & 0.803 & 0.594 & \\textbf{0.585} & "
        "\\underline{1.314} \\\\"
    )
    assert list(t.csv.columns) == ["algorithm", "cutoff", "n_pairs", *PAPER_ORDER]
    row = t.csv[(t.csv["algorithm"] == "bpr-mf") & (t.csv["cutoff"] == 10)].iloc[0]
    assert row["precision"] == pytest.approx(0.585)


def test_table3_ties_single_and_missing() -> None:
    dp = pd.DataFrame(
        [
            _dp_row("a", "all", "ndcg", 10, 1.0),
            _dp_row("a", "all", "mrr", 10, 1.0),
            _dp_row("b", "all", "ndcg", 10, 2.0),
            _dp_row("c", "all", "ndcg", 10, 0.5),
            _dp_row("c", "all", "mrr", 10, np.nan),
            _dp_row("c", "all", "recall", 10, 0.7),
        ]
    )
    rows = _md_rows(report.table3(dp).to_markdown())
    assert rows[0][3:] == ["MRR@N", "nDCG@N", "Recall@N"]
    assert _find_row(rows, "a")[3:5] == [
        "**1.000**",
        "**1.000**",
    ]  # tie: both bold, none underlined
    assert _find_row(rows, "b")[3:] == ["–", "2.000", "–"]  # a single value is not marked
    assert _find_row(rows, "c")[3:] == ["–", "**0.500**", "<ins>0.700</ins>"]


def test_table3_compares_rows_with_different_p_per_25_pairs_with_intervals() -> None:
    dp = pd.DataFrame([_dp_row("a", "all", "ndcg", 10, 3.0, 15),
                       _dp_row("a", "all", "mrr", 10, 1.5, 15),
                       _dp_row("b", "all", "ndcg", 10, 40.0, 1000),
                       _dp_row("b", "all", "mrr", 10, 80.0, 1000)])
    per25 = dp["dp_per_25"]
    dp["ci_low"], dp["ci_high"] = per25 - 0.5, per25 + 0.5
    t = report.table3(dp)
    rows = _md_rows(t.to_markdown())
    # 3.0 over 15 pairs = 0.2 per pair = 5.0 per 25 pairs; 40 over 1000 pairs = 1.0 per 25
    assert _find_row(rows, "a")[2:] == ["15", "**2.500 [2.000, 3.000]**",
                                        "<ins>5.000 [4.500, 5.500]</ins>"]
    assert _find_row(rows, "b")[2:] == ["1000", "<ins>2.000 [1.500, 2.500]</ins>",
                                        "**1.000 [0.500, 1.500]**"]
    assert "DP per 25 pairs" in t.caption and "interval" in t.caption
    assert list(t.csv.columns) == ["algorithm", "cutoff", "n_pairs", "mrr", "ndcg", "mrr_ci_low",
                                   "mrr_ci_high", "ndcg_ci_low", "ndcg_ci_high"]
    assert t.csv.set_index("algorithm").at["a", "ndcg"] == pytest.approx(5.0)


def test_table4_best_worst() -> None:
    t = report.table4(make_dp())
    assert list(t.csv.columns) == [
        "algorithm",
        "cutoff",
        "n_pairs",
        "best_metric",
        "identical",
        "worst_metric",
        "worst_identical",
        "worst_vs_best",
        "best_dp_per_25",
        "best_dp_per_25_plus_sd",
        "worst_dp_per_25",
    ]
    assert set(t.csv["worst_vs_best"]) == {""}  # no verdict: nothing was compared
    r = t.csv[(t.csv["algorithm"] == "bpr-mf") & (t.csv["cutoff"] == 10)].iloc[0]
    assert (r["best_metric"], r["worst_metric"]) == ("precision", "recall")
    assert r["best_dp_per_25"] == pytest.approx(0.585)
    assert r["best_dp_per_25_plus_sd"] == pytest.approx(0.585 * 1.7)
    assert r["worst_dp_per_25"] == pytest.approx(1.314)
    rows = _md_rows(t.to_markdown())
    assert rows[0] == [
        "Algorithm",
        "N",
        "P",
        "Best metric",
        "Worst metric",
        "Best avg",
        "Best + Std Dev",
        "Worst avg",
    ]
    assert _find_row(rows, "BPR-MF", "10")[2:] == [
        "25",
        "Precision@10",
        "Recall@10",
        "0.585",
        f"{0.585 * 1.7:.3f}",
        "1.314",
    ]
    assert _find_row(rows, "User-kNN", "10")[3:5] == ["EPC@10", "MRR@10"]


def test_table4_names_the_first_of_metrics_tied_for_worst() -> None:
    """Metrics with exactly the highest DP (nDCG@1, Precision@1 and MRR@1 with binary
    relevance): the worst named is the first in the metric order and the others are said to be
    identical to it, as for the best; before, the last of them was named alone."""
    rows = [_dp_row("bpr-mf", "all", m, 1, v)
            for m, v in (("ndcg", 8.3), ("precision", 8.3), ("recall", 7.7), ("mrr", 8.3))]
    t = report.table4(pd.DataFrame(rows))
    r = t.csv.iloc[0]
    assert (r["best_metric"], r["worst_metric"], r["worst_identical"]) == (
        "recall", "ndcg", "precision;mrr")
    assert _find_row(_md_rows(t.to_markdown()), "BPR-MF", "1")[3:5] == [
        "Recall@1", "nDCG@1 (identical: Precision@1, MRR@1)"]
    assert any("the first in the order nDCG, Precision, Recall, MRR, EFD, EPC is named" in n
               for n in t.notes)


def _verdict_rows(rows):
    cols = ["algorithm", "cutoff", "family", "recommended", "identical", "too_few_pairs",
            "n_pairs"]
    return pd.DataFrame(rows, columns=cols)


def test_table4_best_is_the_verdicts_recommendation_per_family() -> None:
    dp = make_dp()
    fam = (("accuracy", ("ndcg", "precision", "recall", "mrr")), ("novelty", ("epc", "efd")))
    verdict = _verdict_rows([
        ("bpr-mf", 10, "accuracy", "ndcg", "", False, 25),  # not the lowest DP here
        ("bpr-mf", 10, "novelty", "", "", True, 3),
    ])
    t = report.table4(dp, verdict, MetricFamilies.of_metrics(dp["metric"], fam, "ndcg"))
    csv = t.csv[(t.csv["algorithm"] == "bpr-mf") & (t.csv["cutoff"] == 10)]
    assert list(csv["family"]) == ["accuracy", "novelty"]
    assert list(csv["best_metric"]) == ["ndcg", ""]
    assert csv["worst_metric"].iloc[0] == "recall"  # the highest DP among the other metrics
    rows = _md_rows(t.to_markdown())
    assert rows[0][:5] == ["Algorithm", "N", "Family", "P", "Best metric"]
    row = _find_row(rows, "BPR-MF", "10")
    assert [row[2], row[4]] == ["accuracy", "nDCG@10"]
    nov = [r for r in rows if r[:3] == ["BPR-MF", "10", "novelty"]][0]
    assert nov[4:6] == ["too few pairs, P = 3", "–"]
    # without a verdict row, the same tie rule on DP inside each family
    acc = t.csv[(t.csv["algorithm"] == "userknn") & (t.csv["cutoff"] == 10)]
    assert set(acc["best_metric"]) <= {"ndcg", "precision", "recall", "mrr", "epc", "efd"}
    for r in acc.itertuples():
        members = dict(fam)[r.family]
        assert r.best_metric in members and (not r.worst_metric or r.worst_metric in members)


@pytest.mark.parametrize("tested, less, choices, said, cell", [
    (True, [], ["precision", "recall"], "tie", "Recall@10 (tie)"),
    (True, ["recall"], ["precision"], "significant", "Recall@10"),
    (False, [], ["precision", "recall", "ndcg", "mrr"], "", "Recall@10"),
])
def test_table4_says_a_worst_metric_within_noise_of_the_best_is_a_tie(
        tested, less, choices, said, cell) -> None:
    """Table 4 named a best and a worst metric where the verdict found no difference between
    them (Pr(more discriminative) 54%): pasted alone, it showed a tie as a win. The worst is
    now marked "(tie)" where the verdict compared the two and found none, with a note, and
    the CSV says which (``worst_vs_best``)."""
    dp = make_dp()
    dp = dp[dp["metric"].isin(["ndcg", "precision", "recall", "mrr"])]
    fam = (("accuracy", ("ndcg", "precision", "recall", "mrr")),)
    verdict = pd.DataFrame([{"algorithm": "bpr-mf", "cutoff": 10, "family": "accuracy",
                             "recommended": "precision", "identical": "",
                             "too_few_pairs": False, "n_pairs": 25, "tested": tested,
                             "less_discriminative": less, "choices": choices}])
    t = report.table4(dp, verdict, MetricFamilies.of_metrics(dp["metric"], fam, "ndcg"))
    r = t.csv[(t.csv["algorithm"] == "bpr-mf") & (t.csv["cutoff"] == 10)].iloc[0]
    assert (r["best_metric"], r["worst_metric"], r["worst_vs_best"]) == (
        "precision", "recall", said)
    assert _find_row(_md_rows(t.to_markdown()), "BPR-MF", "10")[5] == cell
    assert any(n.startswith("(tie): the worst metric is not significantly less") for n in
               t.notes) == (said == "tie")


def test_one_at_a_time_table_says_the_verdicts_dominance_under_it() -> None:
    """The one-at-a-time table bolds the lowest DP per metric; pasted alone it showed a
    hyperparameter bold at every metric where the verdict found none dominant. A note under
    it now gives the verdict's answer per metric, in the table's column order."""
    dp = pd.DataFrame([_dp_row("bpr-mf", f"only:{h}", m, 10, v) | {"hyperparameter": h}
                       for h, base in (("factors", 3.0), ("learning_rate", 1.0))
                       for m, v in (("ndcg", base), ("epc", base + 0.5))])
    dom = pd.DataFrame([{"algorithm": "bpr-mf", "metric": "ndcg", "cutoff": 10,
                         "answer": "dominant", "hyperparameter": "learning_rate"},
                        {"algorithm": "bpr-mf", "metric": "epc", "cutoff": 10,
                         "answer": "none", "hyperparameter": "learning_rate"}])
    t = report.one_at_a_time_table(dp, ("ndcg", 10), None, 1, dom)
    assert ("Dominant hyperparameter (a DP significantly lower than every other's; the "
            "verdict's answer, dominance.csv): BPR-MF: none at EPC@10; Learning rate at "
            "nDCG@10.") in t.notes, t.notes
    none = report.one_at_a_time_table(dp, ("ndcg", 10), None, 1, dom.assign(answer="none"))
    assert any(n.endswith("BPR-MF: none at any metric.") for n in none.notes), none.notes
    assert not any(n.startswith("Dominant") for n in report.one_at_a_time_table(
        dp, ("ndcg", 10), None, 1).notes)


def test_table3_and_table4_with_no_evidence_and_ties() -> None:
    # every p-value 1: DP = P for every metric; Table 4 names neither best nor worst
    dead = pd.DataFrame([_dp_row("a", "all", m, 10, float(P)) for m in ("ndcg", "recall")]
                        ).assign(no_evidence=True)
    t4 = report.table4(dead)
    r = _find_row(_md_rows(t4.to_markdown()), "a", "10")
    assert r[3:5] == ["no evidence", "–"]
    assert "no evidence: every p-value is 1" in t4.to_markdown()
    t3 = report.table3(dead).to_markdown()
    assert _find_row(_md_rows(t3), "a", "10")[3:] == [f"{P:.3f}", f"{P:.3f}"]  # no marks
    assert "No evidence (a at N = 10)" in t3
    # exact ties: named by the verdict's metric order, stated as ties
    tie = pd.DataFrame([_dp_row("a", "all", m, 1, v)
                        for m, v in (("mrr", 1.0), ("precision", 1.0), ("ndcg", 1.0),
                                     ("recall", 2.0))])
    r = _find_row(_md_rows(report.table4(tie).to_markdown()), "a", "1")
    assert r[3:5] == ["nDCG@1 (identical: Precision@1, MRR@1)", "Recall@1"]
    # in LaTeX the tied metrics go under the name, smaller and aligned left: the column is as
    # narrow as one metric's name (Table 4 of the ML-1M design was 631 pt wide, scaled to 5.5 pt)
    # equal but for the last bit of the float sums: a tie all the same, in Table 4 as in the
    # verdict (Precision@5 was named the worst and Recall@5 left out)
    bits = pd.DataFrame([_dp_row("a", "all", m, 1, v * P) for m, v in (
        ("ndcg", 0.01), ("precision", 0.5), ("recall", 0.5))])
    bits["mean_p"] = [0.01, 0.04163948417797548, 0.041639484177975465]
    assert bits["mean_p"].iloc[1] != bits["mean_p"].iloc[2]
    r = _find_row(_md_rows(report.table4(bits).to_markdown()), "a", "1")
    assert r[3:5] == ["nDCG@1", "Precision@1 (identical: Recall@1)"]
    tex = report.table4(tie).to_latex()
    assert "\\dptunestack[l]{nDCG@1}{(identical: Precision@1, MRR@1)} & Recall@1" in tex
    assert "\\providecommand{\\dptunestack}[3][r]" in tex


def test_table4_with_confidence_interval() -> None:
    dp = make_dp().assign(ci_low=lambda d: d["dp_per_25"] - 0.1,
                          ci_high=lambda d: d["dp_per_25"] + 0.1)
    t = report.table4(dp)
    assert list(t.csv.columns)[-4:] == ["best_ci_low", "best_ci_high", "worst_ci_low",
                                        "worst_ci_high"]
    row = _find_row(_md_rows(t.to_markdown()), "BPR-MF", "10")
    assert row[5] == "0.585 [0.485, 0.685]" and row[7] == "1.314 [1.214, 1.414]"
    # in LaTeX the interval is set under its value, smaller, so the column is half as wide
    tex = t.to_latex()
    assert "\\providecommand{\\dptunestack}" in tex
    line = next(li for li in tex.splitlines() if li.startswith("BPR-MF & 10"))
    assert "\\dptunestack{0.585}{[0.485, 0.685]}" in line
    assert "\\dptunestack{1.314}{[1.214, 1.414]}" in line
    t3 = report.table3(dp).to_latex()
    bpr = next(li for li in t3.splitlines() if li.startswith("BPR-MF & 10"))
    assert "\\textbf{0.585}}{[0.485, 0.685]}" in bpr  # the markup marks the value
    # without intervals, nothing is stacked and the command is not defined
    assert "dptunestack" not in report.table4(make_dp()).to_latex()


def test_table5_lists_the_grid_values_no_configuration_has() -> None:
    """A budget's units may hold no configuration with some value of the grid: Table 5 listed
    the values run only, so that a reader took the grid for one of fewer values. They are now
    in the row, in value order, marked 'not run' with no DP and P = 0, and never bold."""
    grid = {"bpr-mf": {"factors": [9, 10, 15, 20, 160], "iterations": [1, 2, 4]}}
    t = report.table5(make_dp(), grid=grid)
    rows = _md_rows(t.to_markdown())
    values = next(r for r in rows if r[0] == "Latent factors")
    at = values.index("15")
    assert values[1:] == ["9", "10", "15", "20", "160"]
    dps = rows[rows.index(values) + 1]
    assert dps[at] == "not run" and rows[rows.index(values) + 2][at] == "0"
    assert "**" not in dps[at]
    assert any("not run: a value of the grid that no configuration" in n for n in t.notes)
    # every value run: the table as before, no note
    assert not any("not run" in n for n in report.table5(make_dp(), grid={
        "bpr-mf": {"factors": [9, 10, 20, 160]}}).notes)


def test_table5_continues_a_long_row_on_the_next_rows() -> None:
    """A hyperparameter with more than 8 values (the paper's 14 iteration counts) continues on
    the next rows, so that the table fits a page; the lowest DP of the whole row is bold, once,
    in whichever part it falls."""
    from dptune.report._format import fmt
    from dptune.report._tables import VALUES_PER_ROW

    values = [1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64]
    dps = [2.0 + 0.1 * i for i in range(len(values))]
    dps[9] = 0.4  # the lowest, in the continuation
    dp = pd.DataFrame([_dp_row("bpr-mf", f"iterations={v}", "ndcg", 10, d)
                       for v, d in zip(values, dps, strict=True)]
                      + [_dp_row("bpr-mf", f"factors={v}", "ndcg", 10, 1.0) for v in (8, 16)])
    t = report.table5(dp)
    rows = _md_rows(t.to_markdown())
    assert len(rows[0]) == 1 + VALUES_PER_ROW == 9  # the widest row: 8 values
    first = _find_row(rows, "Iterations")
    assert first[1:] == [str(v) for v in values[:8]]
    dp_first = rows[rows.index(first) + 1]
    assert dp_first[0] == "DP per 25 pairs" and not any("**" in c for c in dp_first)
    cont = _find_row(rows, "Iterations (continued)")
    assert cont[1:5] == [str(v) for v in values[8:]] and cont[5:] == [""] * 4
    dp_cont = rows[rows.index(cont) + 1]
    assert [c for c in dp_cont if c.startswith("**")] == [f"**{fmt(0.4 * 25 / P)}**"]
    assert rows[rows.index(cont) + 2][0] == "P"
    assert "Latent factors (continued)" not in t.to_markdown()


def test_table5_layout_bold_and_order() -> None:
    t = report.table5(make_dp(), ("ndcg", 10))
    md = t.to_markdown()
    assert md.startswith("Table 5: DP per 25 pairs of nDCG@10")
    rows = _md_rows(md)
    assert _find_row(rows, "Latent factors") == ["Latent factors", "9", "10", "20", "160"]
    fac = rows[rows.index(_find_row(rows, "Latent factors")) + 1]
    # 160 used 10 pairs: 0.5 over 10 pairs is 1.25 per 25 pairs, and P says so
    assert fac == ["DP per 25 pairs", "0.700", "0.600", "**0.290**", "1.250"]
    assert rows[rows.index(fac) + 1] == ["P", "25", "25", "25", "10"]
    it = rows[rows.index(_find_row(rows, "Iterations")) + 1]
    assert it == ["DP per 25 pairs", "1.633", "0.796", "**0.707**", ""]
    lr_vals = _find_row(rows, "Learning rate")
    assert lr_vals[1:4] == ["0.05", "0.1", "0.2"]  # numeric order
    assert rows[rows.index(lr_vals) + 1][1:4] == ["1.918", "**0.702**", "0.765"]
    # Paper row order: latent factors, iterations, learning rate.
    names = [r[0] for r in rows if r[0] not in ("DP per 25 pairs", "P", "Hyperparameter",
                                                 ":---")]
    assert names == ["Latent factors", "Iterations", "Learning rate"]
    # the algorithms without per-hyperparameter scopes are named, with the reason
    assert "Item-kNN, User-kNN are not in this table: fewer than two free hyperparameters" in md
    tex = t.to_latex()
    assert "DP per 25 pairs & 0.700 & 0.600 & \\textbf{0.290} & 1.250 \\\\" in tex
    # CSV: long form, every metric and cutoff.
    assert list(t.csv.columns) == [
        "algorithm",
        "hyperparameter",
        "value",
        "metric",
        "cutoff",
        "n_pairs",
        "dp_per_25",
    ]
    assert len(t.csv) == 10 * len(METRICS) * 2
    assert set(t.csv["metric"]) == set(METRICS) and set(t.csv["cutoff"]) == {5, 10}


def test_table5_hyperparameter_order() -> None:
    order = {"learning_rate": [0.2, 0.1, 0.05], "factors": ["160", 20, 10, 9]}
    rows = _md_rows(report.table5(make_dp(), ("ndcg", 10), order).to_markdown())
    names = [r[0] for r in rows if r[0] not in ("DP per 25 pairs", "P", "Hyperparameter",
                                                 ":---")]
    assert names == ["Learning rate", "Latent factors", "Iterations"]
    assert _find_row(rows, "Learning rate")[1:] == ["0.2", "0.1", "0.05", ""]
    assert _find_row(rows, "Latent factors")[1:] == ["160", "20", "10", "9"]


def test_a_scope_without_evidence_is_shown_and_never_bold() -> None:
    """Two hyperparameters whose one-at-a-time p-values are all 1 (DP 25 each) were both bold
    as "separates configurations most often" beside a dominance answer of no evidence; a value
    of Table 5 without evidence could be the bold lowest of its row in the same way. Both are
    shown, not ranked, and a note says why."""
    dp = make_dp()
    only = (dp["scope"].isin(["only:factors", "only:iterations", "only:learning_rate"])
            & (dp["metric"] == "ndcg"))
    dp.loc[only, ["no_evidence", "dp_per_25", "mean_p"]] = [True, 25.0, 1.0]
    rows = _md_rows(report.one_at_a_time_table(dp, ("ndcg", 10)).to_markdown())
    ndcg = rows[0].index("nDCG@10")
    cells = [_find_row(rows, "BPR-MF", h)[ndcg]
             for h in ("Latent factors", "Iterations", "Learning rate")]
    assert cells == ["25.000"] * 3
    assert any("no evidence" in n for n in report.one_at_a_time_table(dp, ("ndcg", 10)).notes)
    value = (dp["scope"] == "factors=20") & (dp["metric"] == "ndcg") & (dp["cutoff"] == 10)
    dp.loc[value, ["no_evidence", "dp_per_25", "mean_p"]] = [True, 0.0, 0.0]  # lowest, silent
    t5 = report.table5(dp, ("ndcg", 10))
    assert "**0.000**" not in t5.to_markdown() and "**0.00**" not in t5.to_markdown()
    assert any("no evidence" in n for n in t5.notes)


def test_one_at_a_time_bold_per_metric_column() -> None:
    t = report.one_at_a_time_table(make_dp(), ("ndcg", 10))
    rows = _md_rows(t.to_markdown())
    assert rows[0] == [
        "Algorithm",
        "Hyperparameter",
        "P",
        "EFD@10",
        "EPC@10",
        "MRR@10",
        "nDCG@10",
        "Precision@10",
        "Recall@10",
    ]
    fac = _find_row(rows, "BPR-MF", "Latent factors")
    lr = _find_row(rows, "BPR-MF", "Learning rate")
    it = _find_row(rows, "BPR-MF", "Iterations")
    ndcg, prec = rows[0].index("nDCG@10"), rows[0].index("Precision@10")
    assert (fac[ndcg], it[ndcg], lr[ndcg]) == ("**0.200**", "0.900", "0.500")
    assert (fac[prec], it[prec], lr[prec]) == ("0.900", "0.800", "**0.100**")
    # A single hyperparameter (k) is not marked: there is nothing to compare it with.
    assert _find_row(rows, "User-kNN", "Nearest neighbors")[2:] == ["25"] + ["1.500"] * 6
    assert list(t.csv.columns) == [
        "algorithm",
        "hyperparameter",
        "metric",
        "cutoff",
        "n_pairs",
        "dp_per_25",
        "ci_low",
        "ci_high",
    ]
    assert set(t.csv["cutoff"]) == {5, 10}
    assert len(t.csv) == 4 * len(METRICS) * 2


def test_table1_format_and_escaping() -> None:
    t = report.table1(make_datasets())
    rows = _md_rows(t.to_markdown())
    assert rows[0] == ["Dataset", "Users", "Items", "Ratings", "Sparsity"]
    assert _find_row(rows, "MovieLens-1M") == ["MovieLens-1M", "6040", "3706", "1000209", "95.53%"]
    tex = t.to_latex()
    assert "Amazon\\_Movies \\& 100\\% & 16141 & 111537 & 858314 & 99.95\\% \\\\" in tex
    assert list(t.csv.columns) == ["dataset", "users", "items", "ratings", "sparsity"]


def test_markdown_escapes_pipes() -> None:
    assert _md_cell(Cell("a|b", bold=True)) == "**a\\|b**"


# ------------------------------------------------------------------------------- files


#: The data files of a result built from the frames above, written first.
DATA_FILES = ("pairs.csv", "pvalues.parquet", "dp.csv", "curves.csv", "best_configs.csv")
EXPECTED_FILES = {
    *DATA_FILES,
    *(
        f"{t}.{ext}"
        for t in ("table1", "table3", "table4", "table5", "one_at_a_time")
        for ext in ("md", "csv", "tex")
    ),
    "figure1.png",
    "figure1.svg",
    "figure1_at5.png",
    "figure1_at5.svg",
    "methods.md",
    "methods.tex",
    "references.bib",
    "report.md",
    "report.html",
}


def test_all_files_exist(written: tuple[Path, list[Path]]) -> None:
    out, paths = written
    assert {p.name for p in paths} == EXPECTED_FILES
    assert all(p.parent == out and p.stat().st_size > 0 for p in paths)
    assert {p.name for p in out.iterdir()} == EXPECTED_FILES


def test_csv_columns_exact(written: tuple[Path, list[Path]]) -> None:
    out, _ = written
    expected = {
        "table1.csv": ["dataset", "users", "items", "ratings", "sparsity"],
        "table3.csv": ["algorithm", "cutoff", "n_pairs", *PAPER_ORDER],
        "table4.csv": [
            "algorithm",
            "cutoff",
            "family",
            "n_pairs",
            "best_metric",
            "identical",
            "worst_metric",
            "worst_identical",
            "worst_vs_best",
            "best_dp_per_25",
            "best_dp_per_25_plus_sd",
            "worst_dp_per_25",
        ],
        "table5.csv": ["algorithm", "hyperparameter", "value", "metric", "cutoff", "n_pairs",
                       "dp_per_25"],
        "one_at_a_time.csv": ["algorithm", "hyperparameter", "metric", "cutoff", "n_pairs",
                              "dp_per_25", "ci_low", "ci_high"],
    }
    for name, cols in expected.items():
        df = pd.read_csv(out / name)
        assert list(df.columns) == cols, name
        text = (out / name).read_text()
        assert "**" not in text and "<ins>" not in text and "\\textbf" not in text
    t3 = pd.read_csv(out / "table3.csv")
    assert t3.loc[(t3["algorithm"] == "bpr-mf") & (t3["cutoff"] == 10), "recall"].item() == 1.314


def _strip_escaped(tex: str) -> str:
    return re.sub(r"\\[{}&%_$#]", "", tex)


def test_latex_well_formed(written: tuple[Path, list[Path]]) -> None:
    out, _ = written
    for path in sorted(p for p in out.glob("*.tex") if p.stem != "methods"):  # the tables
        tex = path.read_text()
        body = _strip_escaped(tex)
        depth = 0
        for ch in body:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, path.name
        assert depth == 0, path.name
        assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") >= 1
        assert tex.count("\\toprule") == tex.count("\\bottomrule") == tex.count("\\begin{tabular}")
        assert "\\begin{table}" in tex and tex.rstrip().endswith("\\end{table}")
        # LaTeX numbers the float: the caption does not say "Table 3: " again
        assert not re.search(r"\\caption\{Table \d", tex), path.name
        md = path.with_suffix(".md").read_text()
        if path.stem.startswith("table"):
            assert md.startswith(f"Table {path.stem[5:]}: "), path.name
        assert "%" not in body.replace("% Generated", "", 1), path.name
        assert "_" not in body.replace("label{tab:", ""), path.name
        # Every tabular row has as many unescaped & as its column spec allows.
        for spec, rows in re.findall(
            r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", tex, re.S
        ):
            for line in rows.splitlines():
                if line.endswith("\\\\"):
                    assert _strip_escaped(line).count("&") == len(spec) - 1, (path.name, line)
        assert "<ins>" not in tex and "**" not in tex


def _need_pdflatex() -> None:
    """Skip unless pdflatex with booktabs is installed."""
    import shutil
    import subprocess

    if shutil.which("pdflatex") is None or shutil.which("kpsewhich") is None or not subprocess.run(
            ["kpsewhich", "booktabs.sty"], capture_output=True, text=True).stdout.strip():
        pytest.skip("no pdflatex with booktabs (bash .ci/run installs Debian's "
                    "texlive-latex-recommended)")


def _compile(tex_dir: Path, names: list[str], options: str) -> str:
    """pdflatex's log of an article (class ``options``) with ``names`` (files in ``tex_dir``)
    input one after another; fails on a LaTeX error."""
    import subprocess

    doc = tex_dir / f"doc-{options or 'onecolumn'}.tex"
    body = "\n\\clearpage\n".join(f"\\input{{{n}}}" for n in names)
    doc.write_text(f"\\documentclass[{options}]{{article}}\n\\usepackage[T1]{{fontenc}}\n"
                   "\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"
                   f"{body}\n\\end{{document}}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                           doc.name], cwd=tex_dir, capture_output=True, text=True, timeout=300)
    log = doc.with_suffix(".log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert doc.with_suffix(".pdf").stat().st_size > 0
    return log


@pytest.mark.latex
def test_every_latex_table_compiles_and_fits_the_line(tmp_path: Path) -> None:
    """Every .tex table of a report with intervals, pasted into an article as it is written
    (booktabs and graphicx loaded), compiles with pdflatex and fits the line: of a one-column
    page, and of one column of a two-column page. Table 3 with intervals is wider than a column
    at its natural size, so it is scaled down to the line; before, it ran 400 pt off the page."""
    _need_pdflatex()
    dp = make_dp().assign(ci_low=lambda d: d["dp_per_25"] - 0.1,
                          ci_high=lambda d: d["dp_per_25"] + 0.1)
    out = tmp_path / "report"
    out.mkdir()
    for table in _report(dp=dp).tables.values():  # each .tex as Report.write writes it
        (out / f"{table.name}.tex").write_text(table.to_latex(), encoding="utf-8")
    names = sorted(p.name for p in out.glob("*.tex"))
    assert {"table1.tex", "table3.tex", "table4.tex", "table5.tex"} <= set(names)
    assert "dptunestack" in (out / "table3.tex").read_text()
    for options in ("", "twocolumn"):
        log = _compile(out, names, options)
        assert "Overfull \\hbox" not in log, (options, log[log.index("Overfull"):][:400])
        assert "LaTeX Warning: Command" not in log  # no command redefined by the tables


#: Names a researcher gives: Greek hyperparameters, accented data set and model names.
_NON_ASCII = ("λ_reg", "α", "Ω-net", "Müller–Søren", "µ", "ς")


def test_greek_letters_are_set_as_math_letters_and_latin_ones_kept() -> None:
    """LaTeX's UTF-8 input sets accented Latin letters but stops on Greek ones ("Unicode
    character α not set up for use with LaTeX"): those become the math letters every engine
    has; other characters are kept as written (XeLaTeX and LuaLaTeX set them)."""
    from dptune.report._table import tex_escape

    assert tex_escape("λ_reg") == "\\ensuremath{\\lambda}\\_reg"
    assert tex_escape("ΑΩας") == "A\\ensuremath{\\Omega}\\ensuremath{\\alpha}" \
        "\\ensuremath{\\varsigma}"
    assert tex_escape("Müller–Søren ß") == "Müller--Søren ß"
    assert tex_escape("中") == "中"


@pytest.mark.latex
def test_a_table_of_greek_and_accented_names_compiles(tmp_path: Path) -> None:
    """A table whose caption, block title, header and cells hold Greek and accented names
    compiles with pdflatex as it is written (it stopped on the first Greek letter)."""
    from dptune.report._table import Block, Table

    _need_pdflatex()
    names = list(_NON_ASCII)
    rows = [[Cell(n), Cell("0.5", detail="[0.4, 0.6]", numeric=True)] for n in names]
    table = Table("greek", f"DP of {', '.join(names)}",
                  [Block([Cell("hyperparameter λ"), Cell("DP", numeric=True)], rows,
                         title="α and β")], pd.DataFrame({"name": names}))
    (tmp_path / "greek.tex").write_text(table.to_latex(), encoding="utf-8")
    log = _compile(tmp_path, ["greek.tex"], "")
    assert "not set up for use with LaTeX" not in log


def test_latex_labels_name_the_report(written: tuple[Path, list[Path]], tmp_path: Path) -> None:
    """Each written table's label is ``tab:<report label>:<table>``, the label being the
    experiment file's stem: two reports pasted into one paper define no label twice (every
    report's Table 3 was ``tab:table3``), and one analysis written twice has the same labels."""
    from dptune.report._report import report_label

    out, _ = written
    rep = _report()
    assert rep.label == report_label(rep.result.manifest)
    labels = {p.stem: re.findall(r"\\label\{([^}]*)\}", p.read_text())
              for p in out.glob("*.tex") if p.stem != "methods"}  # the tables' labels
    assert {"table1", "table3", "table4", "table5"} <= set(labels)
    for stem, found in labels.items():
        assert found == [f"tab:{latex_label(rep.label)}:{latex_label(stem)}"], stem
    rep.label = "ml1m_design"
    rep.write(tmp_path / "other")
    assert "\\label{tab:ml1m-design:table3}" in (tmp_path / "other" / "table3.tex").read_text()
    assert report_label({"experiment_file": "/x/experiments/anelli2019-ml1m-knn.toml"}) == \
        "anelli2019-ml1m-knn"
    assert report_label({"experiment": "audit", "experiment_file": "/x/exp.toml"}) == "audit"
    assert report_label({"dataset": {"source": "runs/per_user.csv.gz"}}) == "per_user"
    assert report_label({"dataset": {"source": ""}}) == report_label(None) == "dptune"
    assert latex_label("ml 1m_knn{é}") == "ml-1m-knn---"
    assert "\\label{tab:x:table3}" in report.table3(make_dp()).to_latex("x:table3")


def test_rerun_is_byte_identical(written: tuple[Path, list[Path]], tmp_path: Path) -> None:
    """The same report written again, over a copy of the first (one write checks both a rerun
    and writing over an existing report): the same files, byte for byte."""
    import shutil

    out, paths = written
    shutil.copytree(out, tmp_path / "b")
    old = {p.name: p.stat().st_ino for p in (tmp_path / "b").iterdir()}
    again = _write(tmp_path / "b")
    assert [p.name for p in again] == [p.name for p in paths]
    assert all(p.stat().st_ino != old[p.name] for p in again)  # each written anew, none kept
    for a, b in zip(paths, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_png_opens_with_expected_size(written: tuple[Path, list[Path]]) -> None:
    out, _ = written
    h, w = report.figure_pixel_size(3)
    assert (h, w) == (1560, 1400)  # 7 in wide, two rows of 3.9 in panels, at 200 dpi
    for name in ("figure1.png", "figure1_at5.png"):
        img = mpimg.imread(out / name)
        assert img.shape[:2] == (h, w), name
    svg = (out / "figure1.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<dc:date>" not in svg


def test_figure_titles_say_a_sample_of_pairs_as_the_text_does_and_fit_their_panel() -> None:
    """Figure 1 titled a sample of pairs "P = 25 pairs" where the DP figure and the text say
    "P = 25 of 990"; and the DP figure's panel title ran past its panel's right edge."""
    dp = make_dp()
    dp.loc[dp["algorithm"] == "bpr-mf", "n_possible_pairs"] = 21945
    titles = [ax.get_title() for ax in report.figure1(make_curves(), dp, 10).axes
              if ax.get_visible() and ax.get_title()]
    assert f"BPR-MF (N = 10, P = {P} of 21945 pairs)" in titles, titles
    from dptune.report._figures import dp_figure

    fig = dp_figure(dp, None, 10)
    panels = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert "BPR-MF (N = 10, P = 25 of 21945 pairs)" in panels, panels
    from dptune.report._figures import FONT_SIZES, MAX_PANEL_COLUMNS

    for t in panels:
        longest = max(len(line) for line in t.splitlines())
        # a line at the title's size fits one panel's width (two to a row) less its metric
        # labels (0.55 em a character)
        width = fig.get_figwidth() / MAX_PANEL_COLUMNS - 0.9
        assert longest * 0.55 * FONT_SIZES["title"] / 72 <= width + 1e-9


def test_a_figure_has_one_layout_for_its_png_and_svg() -> None:
    """The PNG's draw fixes the layout: drawing again gives the same pixels (constrained layout
    run a second time moved Figure 1's panels), so the SVG saved after it shows that layout."""
    fig = report.figure1(make_curves(), make_dp(), 10, aa_band(make_noise()))
    assert fig.get_layout_engine().__class__.__name__ == "ConstrainedLayoutEngine"
    first = palette_png(fig)
    boxes = [ax.get_position().bounds for ax in fig.axes]
    assert palette_png(fig) == first
    fig.savefig(io.BytesIO(), format="svg")
    assert [ax.get_position().bounds for ax in fig.axes] == boxes
    img = mpimg.imread(io.BytesIO(first))
    assert img.shape[:2] == report.figure_pixel_size(3)
    # its resolution is the figure's: a document that includes it without a width sizes it
    # as drawn (it had none, so LaTeX read 72 dpi and placed it at 38 inches)
    from PIL import Image

    dpi = Image.open(io.BytesIO(first)).info["dpi"]
    assert [round(d) for d in dpi] == [round(fig.dpi)] * 2


@pytest.mark.parametrize("rc", [{}, {"figure.constrained_layout.use": True},
                                {"figure.autolayout": True}])
def test_a_drawn_figure_is_saved_with_one_draw(rc, tmp_path, monkeypatch) -> None:
    """Once the PNG's draw fixed the layout, saving the SVG draws the figure once: matplotlib
    draws a figure that still has a layout engine (its "none" placeholder too) a second time
    before saving it, for nothing. A layout asked for in the user's rc settings does not come
    back either."""
    from matplotlib.figure import Figure

    fig = report.figure1(make_curves(), make_dp(), 10, aa_band(make_noise()))
    draws = []
    real = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, r: (draws.append(r), real(self, r))[1])
    with matplotlib.rc_context(rc):
        png = palette_png(fig)
        assert len(draws) == 1 and fig.get_layout_engine() is None
        report.save_figure(fig, tmp_path / "f", png=png)
    assert len(draws) == 2
    assert (tmp_path / "f.png").read_bytes() == png


def test_the_palette_png_keeps_every_colour_close() -> None:
    """The 256-colour PNG of a figure differs from its full-colour draw by at most 20 of 255 in
    any channel of any pixel, and by under 1.5 on average (median cut, used before, moved some
    pixels of this figure by 60 and more)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    fig = report.figure1(make_curves(), make_dp(), 10, aa_band(make_noise()))
    png = palette_png(fig)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # the same pixels again: the layout is fixed
    rgb = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
    with Image.open(io.BytesIO(png)) as img:
        assert img.mode == "P"
        got = np.asarray(img.convert("RGB")).astype(int)
    err = np.abs(got - rgb)
    colours = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]  # one int per RGB colour
    assert len(np.unique(colours)) > 256  # a palette had to be chosen
    assert err.max() <= 20 and err.mean() < 1.5, (err.max(), err.mean())


def test_figure_panels_and_noise_floor() -> None:
    fig = report.figure1(make_curves(), make_dp(), 10, aa_band(make_noise()))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == [
        "Item-kNN (N = 10, P = 25 pairs)",
        "User-kNN (N = 10, P = 25 pairs)",
        "BPR-MF (N = 10, P = 25 pairs)",
    ]
    ax = axes[2]
    assert ax.get_ylim() == (0.0, 1.0) and ax.get_xlim() == (1.0, float(P))
    assert ax.get_xlabel() and ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Precision@10, DP per 25 pairs 0.585" in labels
    assert "A/A noise floor (range over metrics, mean dashed)" in labels
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and len(ln.get_xdata())]
    assert len(dashed) == 1  # one noise-floor line per panel, not one per metric
    assert len(ax.collections) == len(METRICS) + 1  # one sd band per metric + the floor band
    markers = {ln.get_marker() for ln in ax.get_lines() if ln.get_label().startswith(("E", "M", "n", "P", "R"))}
    assert len(markers) == len(METRICS)  # every metric its own marker
    bands = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert bands.min() >= 0.0 and bands.max() <= 1.0  # clipped to [0, 1]
    no_noise = report.figure1(make_curves(), make_dp(), 10)
    assert not any(ln.get_linestyle() == "--" for ln in no_noise.axes[0].get_lines())


def test_identical_curves_are_named_by_the_tie_rule() -> None:
    """At N = 1 MRR, nDCG and Precision have one curve: the legend names the first of them in
    the vocabulary's order (nDCG), as the verdict and Table 4 do, although MRR is drawn first
    (the paper's table order), and the others are dashed over it."""
    curves = make_curves()
    same = curves["metric"].isin(["mrr", "ndcg", "precision"])
    keys = ["algorithm", "cutoff", "position"]
    ref = curves[curves["metric"] == "ndcg"].set_index(keys)["mean"]
    curves.loc[same, "mean"] = ref.reindex(pd.MultiIndex.from_frame(curves.loc[same, keys])
                                           ).to_numpy()
    ax = report.figure1(curves, make_dp(), 10).axes[0]
    lines = {ln.get_label().split(",")[0]: ln for ln in ax.get_lines()}
    # an entry too long for a panel two to a row of 7 in is broken before "(identical"
    labels = [t.get_text().replace("\n", " ") for t in ax.get_legend().get_texts()]
    assert [lb for lb in labels if "identical" in lb] == [
        "MRR@10, DP per 25 pairs 1.766 (identical to nDCG@10)",
        "Precision@10, DP per 25 pairs 1.855 (identical to nDCG@10)"]
    assert lines["nDCG@10"].get_linestyle() == "-"
    for m in ("MRR@10", "Precision@10"):
        assert lines[m].get_linestyle() == "--"
        assert lines[m].get_zorder() > lines["nDCG@10"].get_zorder()  # drawn over it


def test_figure_grid_wraps_and_hides_unused_panels() -> None:
    curves = make_curves()
    extra = curves[curves["algorithm"] == "bpr-mf"].assign(algorithm="cornac:VAECF")
    fig = report.figure1(pd.concat([curves, extra]), make_dp(), 10)
    assert [ax.get_visible() for ax in fig.axes] == [True, True, True, True]  # 2 x 2
    three = report.figure1(curves, make_dp(), 10)
    assert [ax.get_visible() for ax in three.axes] == [True, True, True, False]
    assert report.figure_pixel_size(4) == (1560, 1400)
    assert tuple(round(x) for x in fig.get_size_inches() * fig.dpi) == (1400, 1560)
    assert fig.dpi == report.FIG_DPI == 200


def test_report_from_result_with_noise_floor() -> None:
    rep = _report(noise_curves=make_noise())
    assert "grey band and dashed line: the A/A noise floor" in rep.to_markdown()
    assert set(rep.file_names()) == EXPECTED_FILES | {"noise_curves.csv",
                                                      "noise_pvalues.parquet"}


# ------------------------------------------------------------------------------- report.md


def test_report_md_content(written: tuple[Path, list[Path]]) -> None:
    out, _ = written
    md = (out / "report.md").read_text()
    assert md.startswith("# dptune report: unit\n")
    assert "| Relevance threshold | rating >= 4 is relevant |" in md
    assert "| Metric variant | relevance-aware |" in md
    assert "| package versions.numpy | 2.4 |" in md
    assert "| seeds | 1, 2, 3 |" in md
    assert "![Averaged p-value curves" in md and "](figure1.png)" in md
    assert "[N = 5](figure1_at5.png)" in md
    for heading in (
        "## Data sets",
        "## Experiment settings",
        "## Discriminative power of the metrics (Table 3)",
        "## Best and worst metric (Table 4)",
        "## Dominant hyperparameter (one-at-a-time scopes)",
        "### Per-value view (Table 5)",
        "## P-value curves (Figure 1)",
        "## Best configuration per metric",
    ):
        assert heading in md, heading
    # dominance is decided on the one-at-a-time scopes: their table first, Table 5 after it
    # as the paper's per-value view, both under the one section titled for what decides it
    dom = md[md.index("## Dominant hyperparameter"):md.index("## P-value curves")]
    assert "decided on the one-at-a-time scopes" in dom and "paper's per-value view" in dom
    assert dom.index("One hyperparameter at a time (cutoff") < dom.index(
        "### Per-value view (Table 5)") < dom.index("Table 5: DP per 25 pairs")
    # Table 3 marks per family: Precision and EPC are the most discriminative of their family
    assert "**0.585**" in md and "<ins>1.314</ins>" in md and "**0.776**" in md
    # Best-configuration table: params with a pipe are escaped, values to 4 decimals.
    assert "| BPR-MF | Precision@10 | 7 | factors=20\\|lr=0.1 | 0.1100 | 0.2100 | 0.1234 |" in md
    # Extra sections come after the generated ones, before the file list.
    assert md.index("## Extra analysis\n\nSome *markdown* here.") > md.index(
        "## Best configuration"
    )
    assert "\n\n\n" not in md


def test_selection_sentences_state_numbers() -> None:
    s = report.selection_sentences(make_dp(), make_best(), ("ndcg", 10))
    assert len(s) == 3
    item, user, bpr = s
    assert bpr.startswith(
        "BPR-MF: the metric of lowest DP at N = 10 is Precision@10 (DP per 25 pairs "
        "0.585)")  # no verdict was given: no difference found, none called "most discriminative"
    assert "Recall@10 (DP per 25 pairs 1.314; P = 25)" in bpr
    assert "configuration 7" in bpr and "0.1234" in bpr and "configuration 3" in bpr
    # without the analysis' downstream test the difference is stated, never called higher
    assert "0.1000" in bpr and "difference +0.0234 (not tested)." in bpr
    assert "higher" not in bpr
    assert "Both select configuration 55" in user and "0.0777" in user
    # Item-kNN: nDCG's own test value is known (0.3000), Recall's nDCG is not.
    assert "nDCG@10" in item and "no common test nDCG@10" in item
    assert "0.3000" in item and "0.4000" in item


@pytest.mark.parametrize("p, significant, words", [
    (0.0004, True, "difference +0.0234, significant (p = 0.00040): higher for Precision@10's "
     "choice."),
    (0.58, False, "difference +0.0234, not significant (p = 0.58): a tie within noise; the test "
     "split shows no difference between the two choices."),
])
def test_selection_sentences_call_a_difference_higher_only_when_it_is_significant(
        p, significant, words) -> None:
    """The choose-well sentence reads the analysis' downstream test of the two choices (its
    row for the least discriminative metric against the recommended metric's choice): higher
    or lower only when significant, else a tie; a row about other configurations is not
    read."""
    row = {"algorithm": "bpr-mf", "cutoff": 10, "family": "", "judge": "ndcg",
           "metric": "recall", "config_id": 3, "params": "", "recommended_config": 7,
           "status": "compared", "test_mean": 0.1, "p": p, "significant": significant,
           "n_test_users": 500}
    bpr = report.selection_sentences(make_dp(), make_best(), ("ndcg", 10),
                                     downstream=pd.DataFrame([row]))[2]
    assert words in bpr
    other = pd.DataFrame([row | {"config_id": 4}])  # another choice: not this comparison
    bpr = report.selection_sentences(make_dp(), make_best(), ("ndcg", 10), downstream=other)[2]
    assert "(not tested)." in bpr


def test_a_difference_of_two_printed_values_is_their_difference_as_printed() -> None:
    """0.1127 and 0.1135 were said to differ by -0.0009 (the raw -0.000877): a reader who
    subtracts the printed values gets -0.0008, and the sentence read as contradicting itself."""
    best = make_best()
    mask = (best["algorithm"] == "bpr-mf") & (best["cutoff"] == 10)
    best.loc[mask & (best["metric"] == "precision"), "test_ndcg"] = 0.11274
    best.loc[mask & (best["metric"] == "recall"), "test_ndcg"] = 0.11352
    bpr = report.selection_sentences(make_dp(), best, ("ndcg", 10))[2]
    assert "test nDCG@10 0.1127" in bpr and "test nDCG@10 0.1135" in bpr, bpr
    assert "difference -0.0008 (not tested)." in bpr, bpr


def test_settings_rows_always_name_threshold_and_variant() -> None:
    rows = report.settings_rows({})
    assert rows[:2] == [("Relevance threshold", "not recorded"), ("Metric variant", "not recorded")]
    rows = report.settings_rows({"evaluation": {"threshold": 3.5, "relevance_aware": False}})
    assert rows[0] == ("Relevance threshold", "rating >= 3.5 is relevant")
    assert rows[1][1].startswith("relevance-unaware")
    assert len(rows) == 2


def test_report_without_best_or_settings() -> None:
    md = _markdown(best=None, settings=None, extra_sections=())
    assert "| Relevance threshold | not recorded |" in md
    assert "No best-configuration table was given." in md


def test_accepts_categorical_and_small_int_dtypes(tmp_path: Path) -> None:
    dp = make_dp().astype({"algorithm": "category", "cutoff": "int16"})
    curves = make_curves().astype({"metric": "category", "cutoff": "int16", "position": "int32"})
    paths = _write(tmp_path, dp=dp, curves=curves)
    assert {p.name for p in paths} == EXPECTED_FILES


# ------------------------------------------------------------------------------- errors


def test_missing_column_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(DptuneError, match=r"^dp: dp_per_25_plus_sd: missing column"):
        _write(tmp_path, dp=make_dp().drop(columns="dp_per_25_plus_sd"))


def test_primary_not_available_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DptuneError, match="ndcg@20"):
        _write(tmp_path, primary=("ndcg", 20))


def test_duplicated_dp_rows_are_an_error(tmp_path: Path) -> None:
    dp = make_dp()
    with pytest.raises(DptuneError, match="duplicated"):
        _write(tmp_path, dp=pd.concat([dp, dp.iloc[:1]]))


def test_files_section_lists_the_results_data_files(written: tuple[Path, list[Path]]) -> None:
    out, paths = written  # _write's defaults, written once per module
    md = (out / "report.md").read_text()
    files = md[md.index("## Files") :]
    assert "`dp.csv`: DP per 25 pairs (with P, its interval where computed, and the paper's " \
        "sum `dp_sum`) per algorithm, scope and metric@N" in files
    assert "`curves.csv`: the fold-averaged p-value curves" in files
    for p in paths:  # and every file the report itself wrote
        assert f"`{p.name}`" in files, p.name
    assert [p.name for p in paths] == _report().file_names()  # what it says it writes
    # the result's data files are written first, in their order
    assert [p.name for p in paths[: len(DATA_FILES)]] == list(DATA_FILES)
    pd.testing.assert_frame_equal(pd.read_csv(out / "dp.csv"), make_dp())


def test_report_from_result_explains_the_validation_test_gap_given_the_split(
        written: tuple[Path, list[Path]]) -> None:
    """A result without a store explains the gap from its manifest's split."""
    split = {"method": "temporal", "train_ratio": 0.8, "folds": 10}
    without, _ = written  # _write's defaults: no split
    gap = "Validation and test values are measured on different data"
    assert gap in _markdown(split=split)
    assert gap not in (without / "report.md").read_text()


def test_table5_groups_with_too_few_pairs_are_not_ranked() -> None:
    dp = pd.DataFrame([_dp_row("bpr-mf", "all", "ndcg", 10, 5.0)]
                      + [_dp_row("bpr-mf", f"factors={v}", "ndcg", 10, d, n)
                         for v, d, n in (("10", 0.2, 3), ("20", 0.6, 12), ("40", 0.9, 12))]
                      + [_dp_row("bpr-mf", f"lr={v}", "ndcg", 10, 1.0, 12) for v in ("1", "2")])
    t = report.table5(dp, ("ndcg", 10), min_pairs=10)
    md = t.to_markdown()
    dp_row = [r for r in _md_rows(md) if r[0] == "DP per 25 pairs"][0]
    assert dp_row[1:4] == ["1.667‡", "**1.250**", "1.875"]  # 3 pairs: shown, never bold
    assert "too few pairs (fewer than min_pairs = 10)" in md
    ranked = report.table5(dp, ("ndcg", 10), min_pairs=1).to_markdown()
    assert "‡" not in ranked and "| 1.667 |" in ranked  # min_pairs = 1: ranked like the others


def test_figure1_pair_rank_ticks_are_whole_numbers() -> None:
    fig = report.figure1(make_curves(), make_dp(), 10)
    for ax in fig.axes:
        if ax.get_visible():
            ticks = ax.get_xticks()
            assert len(ticks) and np.allclose(ticks, np.round(ticks))


def test_selection_sentences_per_family_judge_like_with_like() -> None:
    dp = pd.DataFrame([_dp_row("a", "all", m, 10, v)
                       for m, v in (("ndcg", 1.0), ("recall", 2.0), ("epc", 0.5),
                                    ("efd", 3.0))])
    best = pd.DataFrame({"algorithm": "a", "cutoff": 10, "metric": ["ndcg", "recall", "epc",
                                                                    "efd"],
                         "config_id": [1, 2, 3, 4], "params": "k=1", "validation_mean": 0.1,
                         "test_value": 0.2, "test_ndcg": [0.30, 0.20, 0.10, 0.05],
                         "test_epc": [0.01, 0.02, 0.40, 0.35]})
    fam = (("accuracy", ("ndcg", "precision", "recall", "mrr")), ("novelty", ("epc", "efd")))
    families = MetricFamilies.of_metrics(dp["metric"], fam, "ndcg")
    acc, nov = report.selection_sentences(dp, best, ("ndcg", 10), None, families)
    assert acc.startswith("a, accuracy: the metric of lowest DP at N = 10 is nDCG@10")
    assert "test nDCG@10 0.3000" in acc and "EPC" not in acc
    assert nov.startswith("a, novelty: the metric of lowest DP at N = 10 is EPC@10")
    assert "test EPC@10 0.4000" in nov and "test EPC@10 0.3500" in nov and "nDCG" not in nov


def test_pairs_section_names_both_caps_and_the_papers_sampling() -> None:
    """The report's "Pairs" text: the pairs of scope all per algorithm, then both caps; the
    paper's sampling is named only when every scope uses 25."""
    from dptune.report._document import pair_sampling_text

    dp = pd.DataFrame({"algorithm": ["itemknn", "bprmf"], "scope": ["all", "all"],
                       "n_pairs": [105, 1000], "n_possible_pairs": [105, 4_959_675]})
    text = pair_sampling_text(dp, 1000, 200)
    assert "all 105 pairs" in text and "a seeded sample of 1000 of 4959675 pairs" in text
    assert "at most 1000" in text and "the same with 200" in text
    assert "paper's sampling" not in text
    assert "This is the paper's sampling" in pair_sampling_text(dp, 25, 25)
    assert "paper's sampling" not in pair_sampling_text(dp, 25, 200)


def test_the_papers_sampling_is_said_under_the_title() -> None:
    """With 25 pairs per scope every number of the report rests on the paper's sampling: the
    first line under the title says so (and nothing is said at other caps)."""
    from dptune.report._document import sampling_lead
    from dptune.report._settings import PAIRS_SETTING, VALUE_PAIRS_SETTING

    assert sampling_lead(25, 25) and sampling_lead("25", None)
    assert sampling_lead(25, 200) is None and sampling_lead(1000, 200) is None
    assert sampling_lead(None, None) is None
    for caps, said in (((25, 25), True), ((1000, 200), False)):
        settings = {**SETTINGS, PAIRS_SETTING: caps[0], VALUE_PAIRS_SETTING: caps[1]}
        lines = _markdown(settings=settings).splitlines()
        assert lines[0].startswith("# dptune report")
        assert (lines[2].startswith("Pairs: the paper's sampling.")) is said, lines[:4]


def test_verdict_table_names_a_hyperparameter_only_when_it_dominates() -> None:
    """The verdict table's last column: the dominant hyperparameter when the analysis found one
    significantly below every other, else that none dominates significantly."""
    from dptune.analysis.dp.tables import DPEstimate
    from dptune.analysis.result import AnalysisResult
    from dptune.analysis.verdict.dominance import DOMINANCE_COLUMNS
    from dptune.analysis.verdict.rules import VERDICT_COLUMNS
    from dptune.report._verdict import verdict_section

    dp = make_dp()
    base = {c: "" for c in VERDICT_COLUMNS} | {
        "algorithm": "bpr-mf", "cutoff": 10, "family": "accuracy", "recommended": "ndcg",
        "dp_per_25": 4.5, "ci_low": 3.2, "ci_high": 6.0, "mean_p": 0.18, "n_pairs": 25,
        "n_possible_pairs": 990, "n_folds": 10, "too_few_pairs": False,
        "stability_repeats": 1, "claims_dropped": 0, "selected_configs": 1}
    v = pd.DataFrame([base, {**base, "cutoff": 5}])
    dom = {c: "" for c in DOMINANCE_COLUMNS} | {
        "algorithm": "bpr-mf", "metric": "ndcg", "hyperparameter": "factors",
        "dp_per_25": 1.2, "ci_low": 0.9, "ci_high": 1.6, "n_pairs": 200, "p_adjusted": 0.01,
        "repeats": 1, "compared": 3, "over": [], "tied": [], "too_few_pairs": []}
    dominance = pd.DataFrame([{**dom, "cutoff": 10, "answer": "dominant",
                               "over": ["learning_rate", "iterations"]},
                              {**dom, "cutoff": 5, "answer": "none", "over": ["iterations"],
                               "tied": ["learning_rate"]}])
    empty = pd.DataFrame()
    result = AnalysisResult(dp=DPEstimate(empty, empty, dp, empty), verdict=v,
                            dominance=dominance)
    md = verdict_section(result, [])
    assert "| Latent factors |" in md and "| none significantly |" in md
    assert ("Dominant hyperparameter for nDCG@10: Latent factors (DP per 25 pairs 1.200 "
            "[0.900, 1.600], P = 200 pairs differing in it alone), significantly lower than "
            "Learning rate and Iterations (family-wise error rate 5%, adjusted p = 0.010)") in md
    assert "No hyperparameter dominates significantly for nDCG@5" in md
    # one-at-a-time pairs that are a sample, checked under 1 of the 5 pair seeds asked for:
    # said beside the dominance claim and beside "significantly more than"
    oat = dp["scope"].str.startswith("only:")
    sampled = dp.assign(n_possible_pairs=dp["n_possible_pairs"].where(~oat, 500))
    md = verdict_section(AnalysisResult(dp=DPEstimate(empty, empty, sampled, empty), verdict=v,
                                        dominance=dominance), [])
    seeds = ("family-wise error rate 5%, under 1 of the 5 pair seeds asked for: more would "
             "have exceeded the time budget of the stability check")
    assert f"significantly lower than Learning rate and Iterations ({seeds}, adjusted p" in md
    assert f"significantly more than Iterations ({seeds})" in md
    # a hyperparameter whose one-at-a-time pairs never differ is named with the reason
    silent = pd.DataFrame([{**dom, "cutoff": 10, "answer": "single", "no_evidence": ["iterations"]},
                           {**dom, "cutoff": 5, "answer": "no_evidence", "hyperparameter": "",
                            "no_evidence": ["iterations"], "too_few_pairs": ["factors"]}])
    md = verdict_section(AnalysisResult(dp=DPEstimate(empty, empty, dp, empty), verdict=v,
                                        dominance=silent), [])
    assert ("Only one hyperparameter could be compared for nDCG@10: Latent factors (DP per 25 "
            "pairs 1.200 [0.900, 1.600], P = 200 pairs differing in it alone); not compared: "
            "Iterations (no evidence: changing it alone never changed nDCG@10, every p-value "
            "1).") in md
    assert ("No hyperparameter is named for nDCG@5; not compared: Latent factors (fewer than min_pairs = 10 one-at-a-time pairs) and Iterations (no "
            "evidence: changing it alone never changed nDCG@5, every p-value 1).") in md
    assert "| no evidence |" in md and "*No evidence* under Dominant hyperparameter: none can be compared" in md
