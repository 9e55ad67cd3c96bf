"""The Report object: ``Report.from_result(result)``, the one constructor, renders from an
AnalysisResult alone (no store) the same files, byte for byte, as the analysis command; its
tables render themselves in every format.

The AnalysisResult is computed by ``dptune.analyze`` with the options ``dptune analyze`` resolves,
on a tiny swept store with noise-floor runs, a test split and a bootstrap.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import write_experiment
from report.report_checker import check_dp_figure, check_report

from dptune import vocab
from dptune.analysis.result import AnalysisResult
from dptune.cli import main
from dptune.errors import DptuneError
from dptune.report import Report
from dptune.store._store import ResultStore

BOOTSTRAP = 40  # the fewest replicates a 95% interval takes (analysis.options.MIN_BOOTSTRAP)


def assemble_result(results: Path, **overrides) -> AnalysisResult:
    """The AnalysisResult of a store, computed as ``dptune analyze`` computes its files."""
    from dptune.analysis import AnalysisOptions, analyze

    store = ResultStore(results)
    return analyze(store, AnalysisOptions.resolve(store.manifest(), **overrides))


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A tiny store with noise-floor runs (3 seeds) and a test split."""
    d = tmp_path_factory.mktemp("report_object")
    cfg = write_experiment(d / "exp")
    text = cfg.read_text().replace("noise_seeds = 0", "noise_seeds = 3")
    cfg.write_text(text.replace("test_split = false", "test_split = true"))
    assert main(["run", str(cfg), "--results", str(d / "results"), "--reports",
                 str(d / "cli"), "--no-progress", "--bootstrap", str(BOOTSTRAP)]) == 0
    return d


@pytest.fixture(scope="module")
def analysed(swept) -> AnalysisResult:
    """``assemble_result(bootstrap=BOOTSTRAP)`` of the swept store, computed once for the
    tests that build reports from that same result; each test gets its own deep copy
    (:func:`result`), so none sees what another did to it."""
    return assemble_result(swept / "results", bootstrap=BOOTSTRAP)


@pytest.fixture
def result(analysed) -> AnalysisResult:
    """A deep copy of :func:`analysed`: what the test's own ``assemble_result`` call with the
    same options returned."""
    return copy.deepcopy(analysed)


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_from_result_write_reproduces_the_analysis_files_byte_for_byte(swept, result):
    written = Report.from_result(result).write(swept / "object")
    expected, got = _files(swept / "cli"), _files(swept / "object")
    assert sorted(p.name for p in written) == sorted(got)
    assert {"noise_floor.csv", "comparisons.csv", "dominance.csv", "importance.csv"} <= set(got)
    assert set(expected) <= set(got)
    # every data file, table and figure is the analysis command's; report.md and report.html
    # say more when built from a result (the data files, the validation/test gap)
    for name in set(expected) - {"report.md", "report.html"}:
        assert got[name] == expected[name], name
    # and report.md is the same when the report is built again (no state kept between)
    assert Report.from_result(result).to_markdown().encode() == got["report.md"]


def test_report_lists_every_file_and_explains_the_test_gap(result):
    rep = Report.from_result(result)
    md = rep.to_markdown()  # report.md as written (the files the report writes are
    files = md[md.index("## Files"):]  # file_names(), checked in tests/report/test_report.py)
    for name in rep.file_names():
        assert f"`{name}`" in files, name
    assert "Validation and test values are measured on different data" in md
    assert "temporal hold-out" in md and "nDCG@10 of the configuration nDCG@10 selects" in md
    # one format for hyperparameter values: no float printed with 7+ decimals
    assert not re.search(r"=\d+\.\d{7,}", md), re.findall(r"=\d+\.\d{7,}", md)[:3]
    # one label and one order for the metrics in every table of the report
    assert "Prec@" not in md and "Rec@" not in md
    order = ["EFD", "EPC", "MRR", "nDCG", "Precision", "Recall"]
    noise = md[md.index("## Noise floor"):md.index("## Hyperparameter importance")]
    rows = re.findall(r"^\| BPR-MF \| (\w+)@10 \|", noise, flags=re.M)
    assert rows == order
    imp = md[md.index("## Hyperparameter importance"):]
    rows = list(dict.fromkeys(re.findall(r"^\| (?:\*\*)?(\w+)@10(?:\*\*)? \| (?:fANOVA|PED)", imp,
                                         flags=re.M)))
    assert rows == order
    # KNN is left out of Table 5 and one at a time, with the reason
    assert "User-kNN is not in this table: fewer than two free hyperparameters" in md


def test_summary_and_verdict_come_first_in_report_md_and_alone_in_verdict_md(swept):
    result = assemble_result(swept / "results", bootstrap=BOOTSTRAP, min_pairs=1)
    out = swept / "verdict"
    rep = Report.from_result(result)
    written = rep.write(out)
    # one scale, P beside every DP, one answer in every table and in the DP figure
    assert check_report(out) == [] and check_dp_figure(rep) == []
    names = [p.name for p in written]
    assert "verdict.csv" in names and "verdict.md" in names
    md = (out / "report.md").read_text()
    sections = re.findall(r"^## (.+)$", md, flags=re.M)
    assert sections[:2] == ["Summary", "Verdict"] and sections[-1] == "Files"
    summary = md[md.index("## Summary"):md.index("## Verdict")]
    # one line per algorithm, the report's algorithm order, the primary cutoff
    assert summary.index("**User-kNN**") < summary.index("**BPR-MF**")
    assert "accuracy: tune with" in summary and "novelty: tune with" in summary
    verdict = md[md.index("## Verdict"):md.index("Discriminative power (DP)")]
    assert verdict.index("How to read it") < verdict.index("- User-kNN, N = 1, accuracy: tune")
    v = result.verdict
    for r in v.itertuples(index=False):
        name = vocab.display_metric(r.recommended, r.cutoff)
        names = [vocab.display_metric(m, r.cutoff) for m in r.choices]  # a list of keys
        head = f"N = {r.cutoff}, {r.family}: tune with "
        if len(names) == 1:  # the evidence backs one metric
            assert f"{head}{name} (DP per 25 pairs" in verdict
        else:  # a tie is said as a tie, every choice named, the lowest DP last
            said = ", ".join(names[:-1]) + " or " + names[-1]
            assert (f"{head}{said}, no significant difference (lowest DP: {name}"
                    in verdict), (head, said)
    assert "| Algorithm | N | Family | Tune with | DP per 25 pairs [95% CI] | P |" in verdict
    alone = (out / "verdict.md").read_text()
    assert alone.startswith("# dptune verdict") and "## Summary" in alone
    assert verdict.strip().split("\n", 2)[2] in alone


def test_tables_render_in_every_format(swept, result):
    rep = Report.from_result(result)
    assert {"table1", "table3", "table4", "table5", "one_at_a_time"} <= set(rep.tables)
    t3 = rep.tables["table3"]
    df = t3.to_dataframe()
    assert list(df.columns[:2]) == ["algorithm", "cutoff"] and len(df) == 2 * 3  # 2 algs x 3 N
    assert t3.to_csv().splitlines()[0] == ",".join(df.columns)
    assert t3.to_latex().startswith("% Generated by dptune.report")
    assert "\\begin{tabular}" in t3.to_latex()
    md = rep.to_markdown()
    assert t3.to_markdown() in md
    assert t3._repr_markdown_() == t3.to_markdown()  # a notebook shows the table
    assert md.index("## Noise floor (A/A pairs)") < md.index("## Files")
    assert "figure1" in rep.figures and rep.figures["figure1"].cutoff == result.primary[1]
    # a DataFrame copy: changing it leaves the table alone
    df.loc[0, "algorithm"] = "changed"
    assert t3.to_dataframe().loc[0, "algorithm"] != "changed"


def test_a_report_shows_the_verdict_and_the_dp_figure_in_a_notebook():
    """``Report._repr_html_`` / ``_repr_markdown_``: the summary, the verdict's sentences and
    table, and (HTML) the DP figure of the primary cutoff inlined as a PNG; the result itself
    holds numbers only."""
    import numpy as np
    from conftest import frames_result, one_algorithm_frames, one_algorithm_result

    dp, curves = one_algorithm_frames("knn")
    res = one_algorithm_result("knn")
    assert "AnalysisResult(algorithms=['knn']" in repr(res)
    rep = Report.from_result(res)
    md = rep._repr_markdown_()
    assert "accuracy: tune with nDCG@10" in md and "novelty: tune with EPC@10" in md
    assert "| Algorithm | N | Family | Tune with |" in md
    page = rep._repr_html_()
    assert "<table>" in page and "data:image/png;base64," in page
    assert "P = 15" in page and np.isfinite(dp["dp_per_25"]).all()
    # without a verdict: says why, no figure
    bare = Report.from_result(frames_result(dp, curves))
    assert "No verdict" in bare._repr_markdown_() and "base64" not in bare._repr_html_()


def test_the_report_needs_no_store_and_build_is_gone(result, tmp_path):
    """``Report.from_result`` is the one constructor: the result carries what the report
    reads (the noise floor's runs and band, which algorithms train with a seed, the families
    of its metrics, its test split), so there is no ``Report.build(store, result)``."""
    assert not hasattr(Report, "build")
    assert result.noise is not None and result.noise.configs and result.noise.seeds
    assert list(result.noise.band.columns) == ["algorithm", "cutoff", "position", "low",
                                               "high", "mean"]
    assert result.stochastic == {"userknn": False, "bpr-mf": True}
    assert result.test_split and not result.outside
    assert result.smallest_adjusted_p == 1 / (BOOTSTRAP + 1)
    groups = dict(result.metric_families.groups)
    assert groups["accuracy"][0] == "ndcg" and "epc" in groups["novelty"]
    md = Report.from_result(result).to_markdown()
    seeds = result.noise.seeds["bpr-mf"]
    assert re.search(rf"^Runs: BPR-MF: config \d+ \(.*\), {seeds} seeds\.$", md, re.M)
    assert "User-kNN is deterministic" in md
    # the verdict's lists are lists in the result and ;-joined keys in verdict.csv
    v = result.verdict
    assert all(isinstance(x, list) for x in v["choices"])
    result.write_data(tmp_path)  # the data files Report.write writes first
    csv = pd.read_csv(tmp_path / "verdict.csv", keep_default_na=False)
    assert list(csv["choices"]) == [";".join(x) for x in v["choices"]]


def test_a_floor_row_decided_without_a_test_is_never_said_clearly_below(swept):
    """The report said "clearly below" of every row of noise_floor.csv when any row had an
    interval. A row the analysis decided by the plain comparison (a DP without interval: a
    grid sample's pairs without stand-ins, say) was then given the test's words and its 2.5%.
    The words now follow each row's ``rule``: a sentence about rows of both rules says
    "below", and the section explains both."""
    import dataclasses

    # the tiny grid's 5 pairs, ranked (so that the verdict speaks of the floor)
    result = assemble_result(swept / "results", bootstrap=BOOTSTRAP, min_pairs=5)
    versus = result.noise.versus_dp.copy()
    assert set(versus["rule"]) == {vocab.RULE_MARGIN}
    one = versus.index[0]
    alg, metric, cutoff = versus.loc[one, ["algorithm", "metric", "cutoff"]]
    versus.loc[one, ["ci_low", "ci_high", "margin"]] = float("nan")
    versus.loc[one, "rule"] = vocab.RULE_PLAIN
    # every row below its floor (this tiny store's are not), as the verdict then says
    versus["flagged"] = False
    result = dataclasses.replace(
        result, noise=dataclasses.replace(result.noise, versus_dp=versus),
        verdict=result.verdict.assign(not_below_floor=[[] for _ in range(len(result.verdict))]))
    md = Report.from_result(result).to_markdown()
    name = vocab.display_algorithm(alg)
    assert f"- {name}: every metric@N is below its noise floor" in md, md
    assert "A DP without an interval (see the table) is compared with no test" in md
    fam = next(f for f, ms in result.metric_families.of([metric]))
    head = f"- {name}, N = {cutoff}, {fam}: "
    sentence = [s for s in md.splitlines() if s.startswith(head)]
    assert len(sentence) == 1 and "Every metric of the family is below the A/A noise floor." \
        in sentence[0], sentence
    others = [s for s in md.splitlines() if s.startswith(f"- {name}, N = ")
              and "Every metric of the family is" in s and not s.startswith(head)]
    assert others and all("is clearly below the A/A" in s for s in others), others


def test_the_floor_table_asks_the_question_its_rows_were_decided_by(result):
    """The noise floor table's last column read "Below floor?" and answered "no: flagged" for a
    DP below its floor, only not clearly (DP / floor 0.79 in the same row): a row contradicting
    itself. Rows decided by the test ask "Clearly below floor?"; rows of the plain comparison
    (no interval) "Below floor?"."""
    import dataclasses

    def header(res: AnalysisResult) -> list[str]:
        md = Report.from_result(res).to_markdown()
        line = next(ln for ln in md.splitlines() if ln.startswith("| ") and "DP / floor" in ln)
        return [c.strip() for c in line.strip("|").split("|")]

    assert set(result.noise.versus_dp["rule"]) == {vocab.RULE_MARGIN}
    assert header(result)[-1] == "Clearly below floor?"
    plain = result.noise.versus_dp.assign(rule=vocab.RULE_PLAIN)
    result = dataclasses.replace(result, noise=dataclasses.replace(result.noise,
                                                                     versus_dp=plain))
    assert header(result)[-1] == "Below floor?"

def test_without_a_bootstrap_nothing_is_clearly_below_the_noise_floor(swept):
    """With the bootstrap off, DP has no interval, so its comparison with the A/A floor is no
    test: the report says "below", with no error rate, where it said "clearly below" (and the
    rule column "clearly below if DP < floor")."""
    result = assemble_result(swept / "results", bootstrap=0)
    assert set(result.noise.versus_dp["rule"]) == {"below if DP < floor (no interval: no test, "
                                                   "no error rate)"}
    md = Report.from_result(result).to_markdown()
    assert "is clearly below its noise floor" not in md and "not clearly below the" not in md
    assert "clearly larger" not in md
    assert "With no bootstrap, DP has no interval, so the comparison is no test" in md


@pytest.fixture(scope="module")
def small_report() -> Report:
    """The report of a small per-user table (three systems, no bootstrap): a second to make."""
    import numpy as np

    import dptune

    rng = np.random.default_rng(0)
    per_user = pd.DataFrame([{"system": f"s{s}", "user": u, "metric": "ndcg@10",
                              "value": 0.7 * rng.random() + s / 10}
                             for s in range(3) for u in range(25)])
    return Report.from_result(dptune.discriminative_power(per_user, bootstrap=0, stability=0))


def test_a_report_has_a_short_repr(small_report):
    """``repr(rep)`` in a terminal dumped the whole dataclass (every DataFrame and figure, many
    KB); it is one line, as ``repr`` of an AnalysisResult: the title, tables, figures, the
    number of files, and how to see or write the report."""
    text = repr(small_report)
    assert text == (f"Report(title={small_report.title!r}, tables={list(small_report.tables)}, "
                    f"figures={list(small_report.figures)}, "
                    f"files={len(small_report.file_names())}; write it with "
                    "rep.write(folder), or read rep.to_markdown())")
    assert "\n" not in text and len(text) < 300 and "DataFrame" not in text


@pytest.mark.parametrize("label", [3, None, "", "  ", ["a"]])
def test_a_report_label_that_is_no_name_is_refused_when_written(small_report, label,
                                                                tmp_path):
    """``rep.label = 3`` was taken and wrote ``\\label{tab:3:table1}``: when the report is
    written (the label is used there only), one line naming ``Report.label``; nothing
    written."""
    rep = copy.copy(small_report)
    rep.label = label
    with pytest.raises(DptuneError) as err:
        rep.write(tmp_path / "rep")
    assert str(err.value).startswith("Report.label: needs a non-empty string") and \
        "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("label", [3, "", "  ", ["a"]])
def test_a_table_label_that_is_no_name_is_refused(small_report, label):
    """``table.to_latex(label=3)`` wrote ``\\label{tab:3}``, a key nobody chose: one line
    naming ``Table.to_latex: label``; a name, or None for the table's own, is taken."""
    table = next(iter(small_report.tables.values()))
    with pytest.raises(DptuneError) as err:
        table.to_latex(label=label)
    assert str(err.value).startswith("Table.to_latex: label: needs a non-empty string") and \
        "\n" not in str(err.value)
    assert "\\label{tab:x:y}" in table.to_latex(label="x:y")
    assert f"\\label{{tab:{table.name}}}" in table.to_latex()


def test_writing_a_report_over_the_working_directory_names_the_argument(small_report,
                                                                         tmp_path,
                                                                         monkeypatch):
    """``rep.write(".")`` said ``.: is the working directory...`` without naming the call: one
    line naming ``Report.write: out_dir``, as its other refusals do; nothing written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DptuneError) as err:
        small_report.write(".")
    assert str(err.value) == ("Report.write: out_dir: . is the working directory or holds it; "
                              "it is written as a folder of its own: give one "
                              "(e.g. reports/<name>)")
    assert list(tmp_path.iterdir()) == []
