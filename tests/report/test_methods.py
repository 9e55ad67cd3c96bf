"""The methods text of a report (dptune/report/_methods.py): methods.md, methods.tex and
references.bib say how the numbers were computed, with the numbers of the analysis itself, only
what it ran, and citations that resolve."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptune
from dptune.report._methods import REFERENCES, methods_of
from dptune.vocab import display_algorithm


@pytest.fixture(scope="module")
def every_stage(tiny_swept_every_stage: Path) -> tuple[Path, dptune.AnalysisResult]:
    """The written report of a run through every stage, and its result analysed again."""
    result = dptune.analyze(tiny_swept_every_stage / "results")
    return tiny_swept_every_stage / "reports", result


def _braces_balanced(tex: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}%_&#$]", "", tex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_run_writes_its_methods_with_its_own_numbers(every_stage):
    out, result = every_stage
    md = (out / "methods.md").read_text()
    tex = (out / "methods.tex").read_text()
    bib = (out / "references.bib").read_text()
    report_md = (out / "report.md").read_text()
    files = report_md[report_md.index("## Files"):]
    assert all(f"`{n}`" in files for n in ("methods.md", "methods.tex", "references.bib"))
    m = result.manifest
    ds, sp = m["dataset"], m["split"]
    # the data, split and grids as the manifest records them
    assert (f"The data set {ds['name']} ({ds['users']:,} users, {ds['items']:,} items, "
            f"{ds['ratings']:,} interactions)") in md
    assert "the first 80% of them form the training part" in md
    assert f"divided into {sp['folds']} folds" in md and "trained on the other fold" in md
    assert f"The split seed is {sp['split_seed']}." in md
    for a in m["algorithms"]:
        assert f"{display_algorithm(a['name'])} ({a['n_configs']} configurations)" in md
    assert "at N = 1, 5 and 10" in md
    # DP, its interval, the claims and the floor as the options ran them
    o = result.options
    assert f"a seeded uniform sample of {o.pairs} (seed {o.seed})" in md
    assert f"{o.bootstrap} bootstrap replicates" in md
    assert f"family-wise error rate of {o.alpha:g}" in md
    assert "accuracy: nDCG, Precision, Recall and MRR; novelty: EFD and EPC" in md
    # the claims are tested against the lowest DP, which is not "the most discriminative
    # metric" where the verdict offers equal choices with it
    assert "significantly less discriminative than the metric of lowest DP in its family" in md
    assert "than the most discriminative metric" not in md
    assert "trained again with 5 seeds on every fold" in md and "one-sided test" in md
    assert "judged on the test split" in md
    assert f"dptune {m['versions']['dptune']}" in md
    # every citation resolves, in both formats, and every entry is cited
    tex_keys = [k for group in re.findall(r"\\cite\{([^}]*)\}", tex) for k in group.split(",")]
    bib_keys = re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M)
    assert set(tex_keys) == set(bib_keys) == set(methods_of(result).cited)
    assert {"anelli2019", "sakai2006", "romano2005", "hutter2014"} <= set(bib_keys)
    assert "[@" not in md  # Markdown says (Author, year), never a raw [@key] and "(Anelli et al., 2019)" in md
    for key in bib_keys:
        assert f"- {REFERENCES[key][1]}" in md
    # LaTeX as it is pasted: braces balanced, specials escaped, no Markdown left
    assert _braces_balanced(tex) and _braces_balanced(bib)
    body = tex.split("\n", 1)[1]
    assert not re.search(r"(?<!\\)[%_#&]", body), body
    assert "80\\%" in tex and "**" not in tex and "`" not in tex


def test_only_what_the_analysis_ran_is_said(every_stage):
    """Without a bootstrap there is no interval, no claim and no max-t citation; without a
    floor no floor; without a test split no test-split check; a seed of None is not printed."""
    _, result = every_stage
    off = dataclasses.replace(result, options=dataclasses.replace(result.options, bootstrap=0),
                              noise=None, downstream=None)
    text = methods_of(off).to_markdown()
    assert "DP has no interval and no difference between metrics is claimed: no bootstrap" in text
    assert "Romano" not in text and "bootstrap replicates" not in text
    assert "noise floor" not in text and "test split, which no fold" not in text
    assert "romano2005" not in methods_of(off).to_bibtex()
    # a floor of no run (every algorithm deterministic) is no floor
    none_run = dataclasses.replace(result, noise=dataclasses.replace(
        result.noise, floor=result.noise.floor[:0]))
    assert "noise floor" not in methods_of(none_run).to_markdown()
    wilcoxon = dataclasses.replace(result, options=dataclasses.replace(result.options,
                                                                        test="wilcoxon"))
    assert ("the bootstrap resamples t-tests and the test here is the"
            in methods_of(wilcoxon).to_markdown())
    # a manifest written by hand: what it does not record (None) is not said
    given = {**result.manifest, "split": {**result.manifest["split"], "method": "given",
                                          "train_ratio": None, "split_seed": None,
                                          "fold_method": "given"},
             "evaluation": {**result.manifest["evaluation"], "protocol": "runs"}}
    text = methods_of(dataclasses.replace(result, manifest=given)).to_markdown()
    assert "by the method 'given'" in text and "None" not in text and "split seed" not in text
    assert "the candidate items are: runs" in text
    bare = dataclasses.replace(result, manifest={}, importance=None,
                               options=dataclasses.replace(result.options, seed=None))
    text = methods_of(bare).to_markdown()
    assert "data set" not in text and "seed None" not in text and "(seed" not in text
    assert text.count("\n\n") >= 3 and "fANOVA" not in text


def test_outside_data_names_its_file_and_no_split(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"system": f"s{s}", "fold": f, "user": u, "metric": "ndcg", "cutoff": 10,
             "value": float(rng.random())}
            for s in range(4) for f in ("0", "1") for u in range(30)]
    path = tmp_path / "my_runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    result = dptune.discriminative_power(path, bootstrap=0)
    m = methods_of(result)
    text = m.to_markdown()
    assert "read from a per-user table (my_runs.csv)" in text and "over 2 folds" in text
    assert "split" not in text.split("## References")[0].replace("test split", "")
    assert "data set" not in text


def test_no_dp_no_methods():
    assert methods_of(None) is None


@pytest.mark.latex
def test_methods_tex_compiles_with_its_references(every_stage, tmp_path):
    """methods.tex input into an article with references.bib as its bibliography compiles
    with pdflatex and BibTeX, every citation resolved."""
    import shutil
    import subprocess

    if shutil.which("pdflatex") is None or shutil.which("bibtex") is None:
        pytest.skip("no pdflatex and bibtex (bash .ci/run installs Debian's "
                    "texlive-latex-recommended)")
    out, _ = every_stage
    for name in ("methods.tex", "references.bib"):
        shutil.copy(out / name, tmp_path / name)
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\begin{document}\n"
        "\\input{methods}\n\\bibliographystyle{plain}\n\\bibliography{references}\n"
        "\\end{document}\n")

    def run(*cmd: str) -> None:
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (cmd, done.stdout[-3000:])

    run("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
    run("bibtex", "doc")
    run("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
    run("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert "undefined" not in log.lower(), log[-3000:]
    assert "Warning--" not in (tmp_path / "doc.blg").read_text(errors="replace")
