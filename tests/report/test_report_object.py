"""The Report object: ``Report.build(store, result)`` from an AnalysisResult renders the same
files, byte for byte, as the analysis command; its tables render themselves in every format.

The AnalysisResult is assembled here from the analysis stage's own pieces (the DP analysis, the
best-configuration table, the noise floor and importance), the way ``dptune analyze`` computes
them, on a tiny swept store with noise-floor runs, a test split and a bootstrap.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import write_experiment

from dptune.analysis._result import AnalysisResult
from dptune.cli import main
from dptune.report import Report
from dptune.store._store import ResultStore

BOOTSTRAP = 20


def assemble_result(results: Path, **overrides) -> AnalysisResult:
    """The AnalysisResult of a store, computed as ``dptune analyze`` computes its files."""
    from dptune.analysis import _analyze as an
    from dptune.analysis import _dp as dpmod
    from dptune.analysis import _importance as impmod
    from dptune.analysis import _noise as noisemod

    store = ResultStore(results)
    man = store.manifest()
    opts = an._options(man, overrides)
    analysis = dpmod.analyze(
        store,
        n_pairs=int(opts["n_pairs"]),
        seed=int(opts["seed"]),
        test=opts["test"],
        alpha=float(opts["alpha"]),
        correction=None if opts["correction"] == "none" else opts["correction"],
        n_resamples=int(opts["n_resamples"]),
        bootstrap=int(opts["bootstrap"]),
    )
    primary = (opts["primary_metric"], int(opts["primary_cutoff"]))
    d = man["dataset"]
    datasets = pd.DataFrame([{k: d[k] for k in ("users", "items", "ratings", "sparsity")}])
    datasets.insert(0, "dataset", d["name"])
    floor = curves = pvalues = None
    if int(opts["noise_seeds"]) > 0:
        all_dp = analysis.dp[analysis.dp["scope"] == "all"]
        n_pairs = {
            (a, m, int(c)): int(n)
            for a, m, c, n in zip(
                all_dp["algorithm"], all_dp["metric"], all_dp["cutoff"], all_dp["n_pairs"],
                strict=True,
            )
        }
        nf = noisemod.noise_floor_table(
            store.root, n_pairs, test=opts["test"], max_seeds=int(opts["noise_seeds"]),
            max_configs=int(opts["noise_configs"]), primary=primary,
            n_resamples=int(opts["n_resamples"]), seed=int(opts["seed"]),
        )
        if not nf.empty:
            floor = noisemod.compare_with_floor(analysis.dp, nf.floor)
            curves, pvalues = nf.curves, nf.pvalues
    importance = None
    if opts["importance"]:
        importance = impmod.hyperparameter_importance(store, cutoff=primary[1], seed=int(opts["seed"]))
    with_dp = set(analysis.dp["algorithm"])
    return AnalysisResult(
        options=opts,
        manifest=man,
        primary=primary,
        pairs=analysis.pairs,
        pvalues=analysis.pvalues,
        dp=analysis.dp,
        curves=analysis.curves,
        best=an.best_table(store, primary),
        datasets=datasets,
        ranking=analysis.metric_ranking,
        noise_floor=floor,
        noise_curves=curves,
        noise_pvalues=pvalues,
        importance=importance,
        without_dp={a: an._no_dp_reason(store, a) for a in store.algorithms() if a not in with_dp},
    )


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


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_build_write_reproduces_the_analysis_files_byte_for_byte(swept):
    result = assemble_result(swept / "results", bootstrap=BOOTSTRAP)
    store = ResultStore(swept / "results")
    written = Report.build(store, result).write(swept / "object")
    expected, got = _files(swept / "cli"), _files(swept / "object")
    assert sorted(p.name for p in written) == sorted(got)
    assert "noise_floor.csv" in got and "metric_ranking.csv" in got and "importance.csv" in got
    assert set(expected) <= set(got)
    for name in expected:
        assert got[name] == expected[name], name


def test_tables_render_in_every_format(swept):
    result = assemble_result(swept / "results", bootstrap=BOOTSTRAP)
    rep = Report.build(ResultStore(swept / "results"), result)
    assert {"table1", "table3", "table4", "table5", "one_at_a_time"} <= set(rep.tables)
    t3 = rep.tables["table3"]
    df = t3.to_dataframe()
    assert list(df.columns[:2]) == ["algorithm", "cutoff"] and len(df) == 2 * 3  # 2 algs x 3 N
    assert t3.to_csv().splitlines()[0] == ",".join(df.columns)
    assert t3.to_latex().startswith("% Generated by dptune.report")
    assert "\\begin{tabular}" in t3.to_latex()
    md = rep.to_markdown()
    assert t3.to_markdown() in md
    assert md.index("## Noise floor (A/A pairs)") < md.index("## Files")
    assert "figure1" in rep.figures and rep.figures["figure1"].cutoff == result.primary[1]
    # a DataFrame copy: changing it leaves the table alone
    df.loc[0, "algorithm"] = "changed"
    assert t3.to_dataframe().loc[0, "algorithm"] != "changed"
