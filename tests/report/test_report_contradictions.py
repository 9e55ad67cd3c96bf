"""A report never contradicts itself when nothing was tested: with the bootstrap off
(``bootstrap = 0``) or under a paired test without an interval (``test = "wilcoxon"``) the
verdict offers every metric of a family with *no difference tested*, so no other part of the
report may call two metrics equal choices, speak of a 95% interval the DP figure does not draw,
name parts of the report it does not have (the primary metric's uses) or print a configuration
as ``configuration 5 ()`` when it has no parameters.

The results are built with the public API, ``dptune.discriminative_power`` on a per-user table
(columns ``config_id, fold, user, metric, value``: no system names, no hyperparameters), as
``dptune dp --per-user pu.csv --bootstrap 0`` reads it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import dptune  # noqa: E402
from dptune.report import Report  # noqa: E402

#: What the verdict is not allowed to be contradicted with when it tested nothing.
EQUAL = "no significant difference between the two: they are equal choices"


def _per_user() -> pd.DataFrame:
    """Six configurations (ids 0-5, no system names, no hyperparameters), two validation folds
    and a test split, 60 users, three accuracy metrics@10 whose DPs differ."""
    rng = np.random.default_rng(0)
    rows = []
    for c in range(6):
        for fold in ("0", "1", "test"):
            for u in range(60):
                base = rng.random()
                for metric, step in (("ndcg@10", 0.05), ("precision@10", 0.03),
                                     ("recall@10", 0.0)):
                    rows.append({"config_id": c, "fold": fold, "user": u, "metric": metric,
                                 "value": min(1.0, 0.6 * base + step * c + 0.1 * rng.random())})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def untested() -> dict[str, tuple[object, str]]:
    """The result and report.md of the same table with the bootstrap off and under the
    Wilcoxon test (no interval), keyed by what switched the test off."""
    df = _per_user()
    out = {}
    for key, opts in (("bootstrap 0", {"bootstrap": 0}),
                      ("wilcoxon", {"test": "wilcoxon", "bootstrap": 50})):
        res = dptune.discriminative_power(df, stability=0, **opts)
        out[key] = (res, Report.from_result(res).to_markdown())
    return out


def _selection(md: str) -> str:
    start = md.index("### Does the most discriminative metric also choose well?")
    return md[start:md.index("\n## ", start)]


@pytest.mark.parametrize("key", ["bootstrap 0", "wilcoxon"])
def test_an_untested_verdict_is_not_called_equal_choices(untested, key) -> None:
    """Nothing tested: the selection section says so, as the verdict does, instead of "no
    significant difference: they are equal choices" (the verdict lists every metric as a
    choice only because nothing was compared)."""
    res, md = untested[key]
    assert not bool(res.verdict["tested"].astype(bool).any())
    assert "no difference tested" in md  # the verdict's own words
    section = _selection(md)
    assert EQUAL not in section
    assert "No difference between the two is tested (no bootstrap interval: the bootstrap is " \
           "off, or the paired test has no interval; see Bootstrap in the settings)" in section
    # the verdict table shows no interval column it cannot fill
    assert "| Tune with | DP per 25 pairs | P |" in md and "[95% CI]" not in md
    assert "| Not tested |" in md and "Not significantly less" not in md
    assert "no difference tested: no bootstrap interval (lowest DP" in md


@pytest.mark.parametrize("key", ["bootstrap 0", "wilcoxon"])
def test_the_dp_figure_without_interval_says_what_it_draws(untested, key) -> None:
    """No interval drawn: neither the figure's title and axis, nor its caption, nor the alt
    text of report.md speak of a 95% interval or of metrics not significantly less
    discriminative."""
    res, md = untested[key]
    rep = Report.from_result(res)
    fig = rep.figures["figure_dp"].figure
    title = fig._suptitle.get_text().replace("\n", " ")
    assert "95%" not in title and "no significant difference" not in title
    assert "no interval" in title and "no difference tested" in title
    assert all("95%" not in ax.get_xlabel() for ax in fig.axes)
    alt = next(ln for ln in md.splitlines() if ln.startswith("![DP of each metric"))
    assert "95%" not in alt and "without an interval" in alt
    caption = md.splitlines()[md.splitlines().index(alt) + 2]
    assert caption.startswith("DP figure:")
    assert "95%" not in caption and "not significantly less discriminative" not in caption
    assert "without an interval" in caption and "no difference tested" in caption


def test_a_configuration_without_parameters_has_no_empty_parentheses(untested) -> None:
    """A per-user table without ``--configs`` names no parameters: "configuration 5", never
    "configuration 5 ()", and the best-configuration table has no empty Parameters column."""
    _, md = untested["bootstrap 0"]
    assert "()" not in md
    best = md[md.index("## Best configuration per metric"):]
    header = next(ln for ln in best.splitlines() if ln.startswith("| Algorithm | Metric"))
    assert "Parameters" not in header
    assert "selects configuration 5, test nDCG@10" in _selection(md)


def test_a_family_with_one_metric_of_evidence_blames_no_bootstrap() -> None:
    """With the bootstrap on, a family whose other metric has no evidence (the same values for
    every configuration) is untested too (nothing to compare it with). The choose-well
    sentence said "no bootstrap: it is off" beside a settings table saying it was on; it now
    says no test, and names the other metric's missing evidence."""
    df = _per_user()
    same = df["metric"] == "precision@10"
    first = df[same & (df["config_id"] == 0)].set_index(["fold", "user"])["value"]
    df.loc[same, "value"] = [first[(f, u)] for f, u in zip(df.loc[same, "fold"],
                                                           df.loc[same, "user"], strict=True)]
    df = df[df["metric"] != "recall@10"]
    res = dptune.discriminative_power(df, stability=0, bootstrap=200)
    assert not bool(res.verdict["tested"].astype(bool).any())
    md = Report.from_result(res).to_markdown()
    section = _selection(md)
    assert "no bootstrap" not in section and EQUAL not in section
    assert "the highest Precision@10 (DP per 25 pairs 25.000; no evidence: every " \
           "p-value 1;" in section
    assert "[95% CI]" in md  # the intervals are there


def test_the_settings_say_the_noise_floor_that_was_used(synthetic_swept, tmp_path) -> None:
    """The settings row said "5 seeds of the 2 best configurations" (the options) beside a noise
    section of 2 seeds of one configuration (what the store held). It now says what was used,
    and what was asked for when the store held less; the Sakai row says its p-values' correction
    in words (it said "correction of that fraction: holm")."""
    from dptune._api import analyze_results

    out = tmp_path / "rep"
    analyze_results(synthetic_swept / "results", out, noise_seeds=5, noise_configs=2,
                    bootstrap=0, stability=0, correction="holm")
    md = (out / "report.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| Noise floor |"))
    assert row.startswith("| Noise floor | 2 seeds of the best configuration by validation "), row
    assert "(5 seeds of the 2 best configurations asked for; the store holds fewer)" in row
    assert "Runs: BPR-MF: config" in md and "2 seeds" in md
    sakai = next(ln for ln in md.splitlines() if ln.startswith("| Sakai DP |"))
    assert "whose p-value, adjusted over a fold's pairs by Holm step-down (family-wise " \
           "error), is below 0.05" in sakai, sakai
    assert "Share of the pairs whose p-value, adjusted over a fold's pairs by Holm" in md
    # the primary metric's row said it "picks the noise-floor configurations, is the metric of
    # Table 5" in reports with neither: it names the metric and points to the one line that
    # says its uses, which names only what the report has
    row = next(ln for ln in md.splitlines() if ln.startswith("| Primary metric |"))
    assert "noise-floor" not in row and "Table 5" not in row
    assert 'the line "Primary metric" before the sections' in row
    line = next(ln for ln in md.splitlines() if ln.startswith("Primary metric: "))
    assert md.index(line) < md.index(row) and "picks the noise-floor configurations" in line


@pytest.mark.parametrize("key", ["bootstrap 0", "wilcoxon"])
def test_the_glossary_and_table_3_define_only_what_the_report_has(untested, key) -> None:
    """The glossary defined "95% interval", "significantly less discriminative", "Pr(more
    discriminative)" and "equal choices" in reports that have none of them, and "A/A noise
    floor" in reports without a floor; Table 3's caption described underlined "significantly
    less discriminative" metrics. Each is said only where the report has it."""
    _, md = untested[key]
    gloss = md[md.index("## Glossary"):]
    gloss = gloss[:gloss.index("\n## ")]
    assert "**No difference tested**" in gloss
    for absent in ("**95% interval**", "**Equal choices**", "**Pr(more discriminative)**",
                   "**A/A noise floor**"):
        assert absent not in gloss, absent
    caption = next(ln for ln in md.splitlines() if ln.startswith("Table 3: Discriminative"))
    assert "significantly less discriminative" not in caption
    assert "no difference is tested and none is underlined" in caption


def test_a_sample_of_pairs_is_said_as_one_everywhere() -> None:
    """With --pairs 10 of 15 the verdict said "P = 10 of 15" and the summary, the choose-well
    sentences and the DP figure's panels "P = 10"."""
    res = dptune.discriminative_power(_per_user(), pairs=10, stability=0, bootstrap=200)
    md = Report.from_result(res).to_markdown()
    summary = md[md.index("## Summary"):md.index("## Verdict")]
    assert "P = 10 of 15" in summary and "P = 10)" not in summary and "P = 10;" not in summary
    assert "; P = 10 of 15)." in _selection(md)
    fig = Report.from_result(res).figures["figure_dp"].figure
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles and all("P = 10 of 15 pairs" in t for t in titles), titles
