"""End-to-end through the command line: run, analyze, evaluate, dp, subgrid, data info."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import EVERY_STAGE_BPR as BPR
from conftest import ranx_scores

from dptune.cli import main

ROOT = Path(__file__).resolve().parents[1]

def test_run_writes_the_store_contract(tiny_swept_every_stage):
    res = tiny_swept_every_stage / "results"
    df = pd.read_parquet(res / "per_user.parquet")
    assert list(df.columns) == ["algorithm", "config_id", "fold", "user", "metric", "cutoff", "value"]
    assert set(df["metric"]) == {"ndcg", "precision", "recall", "mrr", "efd", "epc"}
    assert set(df["cutoff"]) == {1, 5, 10}
    assert {"0", "1", "test"} <= set(df["fold"])
    val = df[df["fold"] != "test"]
    # every configuration on every fold: 6 KNN + 8 BPR configs x 2 folds
    assert val.groupby("algorithm")[["config_id", "fold"]].apply(lambda g: len(g.drop_duplicates())).to_dict() == {
        "userknn": 12, "bpr-mf": 16}
    configs = pd.read_csv(res / "configs.csv")
    assert {"algorithm", "config_id", "k", "factors", "iterations", "learning_rate",
            "user_reg", "item_reg"} <= set(configs.columns)
    trials = pd.read_csv(res / "trials.csv")
    assert trials["seed"].notna().all() and len(trials[trials["fold"] != "test"]) == 28
    import json

    man = json.loads((res / "manifest.json").read_text())
    for key in ("dataset", "split", "seeds", "evaluation", "versions"):
        assert key in man
    assert man["evaluation"]["relevance_threshold"] == 4.0
    assert man["dataset"]["ratings"] == 100836


def test_reports_exist_and_rerun_is_byte_identical(tiny_swept_every_stage, tmp_path):
    rep = tiny_swept_every_stage / "reports"
    for name in ["pairs.csv", "pvalues.parquet", "dp.csv", "report.md", "figure1.png", "figure1.svg",
                 "table3.md", "table3.tex", "table4.csv", "table5.md", "one_at_a_time.csv"]:
        assert (rep / name).exists(), name
    assert main(["analyze", str(tiny_swept_every_stage / "results"), "--reports", str(tmp_path / "again")]) == 0
    for f in rep.iterdir():
        assert (tmp_path / "again" / f.name).read_bytes() == f.read_bytes(), f.name


def test_dp_recomputable_with_scipy_alone(tiny_swept_every_stage):
    from scipy.stats import ttest_rel

    per_user = pd.read_parquet(tiny_swept_every_stage / "results" / "per_user.parquet")
    pairs = pd.read_csv(tiny_swept_every_stage / "reports" / "pairs.csv")
    dp = pd.read_csv(tiny_swept_every_stage / "reports" / "dp.csv")
    row = dp[(dp["algorithm"] == "bpr-mf") & (dp["scope"] == "all") & (dp["metric"] == "ndcg")
             & (dp["cutoff"] == 10)].iloc[0]
    pp = pairs[(pairs["algorithm"] == "bpr-mf") & (pairs["scope"] == "all")]
    sl = per_user[(per_user["algorithm"] == "bpr-mf") & (per_user["metric"] == "ndcg")
                  & (per_user["cutoff"] == 10)]
    curves = []
    for fold in ("0", "1"):
        f = sl[sl["fold"] == fold].pivot(index="user", columns="config_id", values="value")
        ps = []
        for a, b in zip(pp["config_a"], pp["config_b"], strict=True):
            x, y = f[a].to_numpy(np.float64), f[b].to_numpy(np.float64)
            ps.append(1.0 if np.all(x == y) else ttest_rel(x, y).pvalue)
        curves.append(np.sort(ps)[::-1])
    assert row["dp_sum"] == pytest.approx(np.mean(curves, axis=0).sum(), abs=1e-8)
    assert row["dp_per_25"] == pytest.approx(25 * np.mean(curves), abs=1e-8)


def test_rerun_skips_finished_units(tiny_swept_every_stage, tmp_path, capsys):
    import shutil

    results = tmp_path / "results"  # a copy: the rerun records its reports folder in it
    shutil.copytree(tiny_swept_every_stage / "results", results)
    parts = sorted((results / "per_user.parquet").glob("*.parquet"))
    before = {p.name: p.stat().st_mtime_ns for p in parts}
    cfg = tiny_swept_every_stage / "tiny.toml"
    assert main(["run", str(cfg), "--results", str(results), "--reports",
                 str(tmp_path / "reports2"), "--no-progress", "--no-analyze"]) == 0
    after = {p.name: p.stat().st_mtime_ns for p in (results / "per_user.parquet").glob("*.parquet")}
    assert after == before


def test_status(tiny_swept_every_stage, capsys):
    assert main(["status", str(tiny_swept_every_stage / "results")]) == 0
    out = capsys.readouterr().out
    assert "userknn" in out and "bpr-mf" in out


def test_subgrid(tiny_swept_every_stage, tmp_path):
    out = tmp_path / "sub.toml"
    assert main(["subgrid", str(tiny_swept_every_stage / "results"), "--algorithm", "bpr-mf", "--metric", "ndcg",
                 "--cutoff", "10", "--radius", "1", "--out", str(out)]) == 0
    from dptune.grids import load_grid

    g = load_grid(out)
    assert set(g.free) == {"factors", "iterations", "learning_rate"}
    assert g.derived["user_reg"] == ("learning_rate", 0.05)
    best = pd.read_csv(tiny_swept_every_stage / "reports" / "best_configs.csv")
    b = best[(best["algorithm"] == "bpr-mf") & (best["metric"] == "ndcg") & (best["cutoff"] == 10)].iloc[0]
    cfg = pd.read_csv(tiny_swept_every_stage / "results" / "configs.csv")
    c = cfg[(cfg["algorithm"] == "bpr-mf") & (cfg["config_id"] == b["config_id"])].iloc[0]
    assert int(c["factors"]) in g.values["factors"] and int(c["iterations"]) in g.values["iterations"]


def _write_runs(tmp_path, n_users=30, n_items=40, systems=3, folds=("0", "1"), seed=0):
    rng = np.random.default_rng(seed)
    runs = tmp_path / "runs"
    qrels_dir = tmp_path / "qrels"
    train_dir = tmp_path / "train"
    qrels_dir.mkdir()
    train_dir.mkdir()
    for fold in folds:
        (runs / fold).mkdir(parents=True)
        q = [f"u{u} 0 i{i} {rng.integers(1, 6)}" for u in range(n_users)
             for i in rng.choice(n_items, 5, replace=False)]
        (qrels_dir / f"{fold}.txt").write_text("\n".join(q) + "\n")
        t = [f"u{u} i{i}" for u in range(n_users) for i in rng.choice(n_items, 4, replace=False)]
        (train_dir / f"{fold}.txt").write_text("\n".join(t) + "\n")
        for s in range(systems):
            lines = []
            for u in range(n_users):
                items = rng.permutation(n_items)[:10]
                for r, i in enumerate(items, 1):
                    lines.append(f"u{u} Q0 i{i} {r} {10 - r + rng.random():.6f} sys{s}")
            (runs / fold / f"sys{s}.run").write_text("\n".join(lines) + "\n")
    return runs, qrels_dir, train_dir


def test_dp_on_external_runs(tmp_path):
    runs, q, t = _write_runs(tmp_path)
    rep = tmp_path / "rep"
    assert main(["dp", "--runs", str(runs), "--qrels", str(q), "--train", str(t),
                 "--reports", str(rep), "--pairs", "3", "--bootstrap", "0", "--stability", "0",
                 "--no-progress"]) == 0
    dp = pd.read_csv(rep / "dp.csv")
    assert set(dp["algorithm"]) == {"runs"} and set(dp["n_folds"]) == {2} and set(dp["n_pairs"]) == {3}
    assert (rep / "table3.md").exists() and (rep / "figure1.png").exists()


def test_evaluate_matches_ranx(tmp_path):
    runs, q, t = _write_runs(tmp_path, systems=1, folds=("0",))
    run_file, qrels_file, train_file = runs / "0" / "sys0.run", q / "0.txt", t / "0.txt"
    out = tmp_path / "per_user.csv"
    assert main(["evaluate", "--run", str(run_file), "--qrels", str(qrels_file), "--train",
                 str(train_file), "--cutoffs", "1,5,10", "--out", str(out)]) == 0
    ours = pd.read_csv(out, dtype={"user": str})
    assert list(ours.columns) == ["user", "metric", "cutoff", "value"]
    qd: dict = {}
    for line in qrels_file.read_text().split("\n"):
        if line:
            u, _, i, r = line.split()
            if float(r) >= 4:
                qd.setdefault(u, {})[i] = 1
    trained = {tuple(line.split()) for line in train_file.read_text().split("\n") if line}
    rd: dict = {}
    for line in run_file.read_text().split("\n"):
        if line:
            u, _, i, _, s, _ = line.split()
            if u in qd and (u, i) not in trained:  # training items leave the ranking
                rd.setdefault(u, {})[i] = float(s)
    names = [("ndcg", "ndcg"), ("precision", "precision"), ("recall", "recall"), ("mrr", "mrr")]
    scores = ranx_scores(qd, rd, [f"{r}@{k}" for _, r in names for k in (1, 5, 10)],
                         make_comparable=True)
    for ours_name, ranx_name in names:
        for k in (1, 5, 10):
            theirs = scores[f"{ranx_name}@{k}"]
            mine = ours[(ours["metric"] == ours_name) & (ours["cutoff"] == k)].set_index("user")["value"]
            for u, v in theirs.items():
                assert mine[u] == pytest.approx(v, abs=1e-9), (ours_name, k, u)


def test_evaluate_removes_training_items_and_orders_as_trec_eval(tmp_path, capsys):
    """The training item a (rank 1) leaves u1's run: b is first, MRR@1 = 1. Tied scores are
    ordered by item id descending (trec_eval), or by the rank field with --order rank. A user
    without hits prints 0.0, never -0.0."""
    run = tmp_path / "run"
    run.write_text("u1 Q0 a 1 2.0 t\nu1 Q0 b 2 1.0 t\nu2 Q0 c 1 1.0 t\nu2 Q0 d 2 1.0 t\n"
                   "u3 Q0 a 1 1.0 t\n")
    qrels, train = tmp_path / "qrels", tmp_path / "train"
    qrels.write_text("u1 0 b 5\nu2 0 c 5\nu3 0 e 5\n")
    train.write_text("u1 a\nu2 a\nu4 a\n")
    out = tmp_path / "out.csv"
    common = ["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
              "--cutoffs", "1,2", "--out", str(out)]

    def mrr(order):
        assert main(common + (["--order", order] if order else [])) == 0
        df = pd.read_csv(out, dtype={"user": str})
        assert "-0.0" not in out.read_text()  # u3 ranks a, seen by every training user
        return df[df["metric"] == "mrr"].set_index(["user", "cutoff"])["value"].to_dict()

    trec = mrr(None)
    assert trec[("u1", 1)] == 1.0  # a removed, b first
    assert (trec[("u2", 1)], trec[("u2", 2)]) == (0.0, 0.5)  # tie: d > c
    assert mrr("trec") == trec
    by_rank = mrr("rank")
    assert (by_rank[("u1", 1)], by_rank[("u2", 1)]) == (1.0, 1.0)  # c has rank 1
    assert main(common + ["--order", "score"]) == 2
    assert "--order" in capsys.readouterr().err


def test_evaluate_says_which_users_it_leaves_out(tmp_path, capsys):
    """Users without a relevant item cannot be scored: evaluate counts them on stdout and
    names them on stderr instead of dropping them without a word."""
    run, qrels, train = tmp_path / "run", tmp_path / "qrels", tmp_path / "train"
    run.write_text("".join(f"{u} Q0 a 1 1.0 t\n" for u in ("u1", "u2", "u3", "0042", "r9")))
    qrels.write_text("u1 0 a 5\nu2 0 b 4\nu3 0 a 2\n0042 0 a 3\n42 0 a 5\n")
    train.write_text("u1 c\n")
    out = tmp_path / "out.csv"
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "3 users x 18 metric@cutoff; 3 users without a relevant item not evaluated" in captured.out
    assert captured.err.strip().splitlines() == [
        f"dptune: note: 3 of 6 users of the run and qrels have no relevant item in {qrels} "
        "(rating >= 4) and are not evaluated: 0042, r9, u3",
        # 42 has a relevant item and no line in the run: scored 0, which is said too
        f"dptune: note: 1 of 3 evaluated users has no line in {run} and scores 0 on every "
        "metric (as trec_eval -c scores them; without -c it leaves them out): 42"]
    assert sorted(set(pd.read_csv(out, dtype={"user": str})["user"])) == ["42", "u1", "u2"]
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                 "--out", str(out), "--threshold", "2"]) == 0
    captured = capsys.readouterr()  # r9 (in the run only) is the one user left out
    assert "; 1 user without" in captured.out and "is not evaluated: r9\n" in captured.err


@pytest.mark.parametrize("argv, line", [
    (["analyze", "r", "--reprots", "x"], "dptune: analyze: unrecognized arguments: --reprots x "
     "(did you mean '--reports'?) (see dptune analyze --help)"),
    (["data", "fetch", "ml-1m", "--force"], "dptune: data fetch: unrecognized arguments: --force "
     "(see dptune data fetch --help)"),
    (["run", "a.toml", "b.toml"], "dptune: run: unrecognized arguments: b.toml "
     "(see dptune run --help)"),
    (["status", "r", "--storage=x", "--jobz=2"], "dptune: status: unrecognized arguments: "
     "--jobz=2 (see dptune status --help)"),
])
def test_an_unknown_argument_is_named_by_its_command(capsys, argv, line):
    """An argument no parser takes is one line from the command it was given to (not the
    top-level "dptune: unrecognized arguments"), with the closest flag of that command."""
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


def test_dp_takes_the_flags_of_analyze_but_the_noise_floor(tmp_path, capsys):
    runs, q, t = _write_runs(tmp_path, n_users=3, folds=("0",))
    for flag in ("--noise-seeds", "--noise-configs"):
        assert main(["dp", "--runs", str(runs), "--qrels", str(q), "--train", str(t), flag,
                     "2"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"dptune: dp: {flag} does not apply here: outside data has no A/A "
                              "noise floor") and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["dp", "--help"])
    text = capsys.readouterr().out
    for flag in ("--pairs", "--seed", "--test", "--bootstrap", "--alpha", "--order", "--novelty"):
        assert flag in text, flag
    assert "seed 42" in text and "trec_eval" in text


def test_data_info_embedded(capsys):
    assert main(["data", "info", "ml-latest-small"]) == 0
    out = capsys.readouterr().out
    assert "| ml-latest-small | 610 | 9724 | 100836 | 98.30% |" in out


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('name = "x"\n[split]\nfodls = 3\n[[algorithms]]\nname = "u"\ntype = "userknn"\n'
                   f'grid = "{ROOT}/grids/knn.toml"\n')
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.toml" in err and "split.fodls" in err


def test_subgrid_placed_in_a_larger_grid(tiny_swept_every_stage, tmp_path):
    full = tmp_path / "full.toml"
    full.write_text(BPR.replace("[8, 16]", "[4, 8, 16, 32]").replace("[1, 3]", "[1, 2, 3, 4]")
                    .replace("[0.05, 0.1]", "[0.025, 0.05, 0.1, 0.2]"))
    out = tmp_path / "sub.toml"
    assert main(["subgrid", str(tiny_swept_every_stage / "results"), "--algorithm", "bpr-mf", "--radius", "1",
                 "--grid", str(full), "--out", str(out)]) == 0
    from dptune.grids import load_grid

    g = load_grid(out)
    best = pd.read_csv(tiny_swept_every_stage / "reports" / "best_configs.csv")
    b = best[(best["algorithm"] == "bpr-mf") & (best["metric"] == "ndcg") & (best["cutoff"] == 10)].iloc[0]
    cfg = pd.read_csv(tiny_swept_every_stage / "results" / "configs.csv")
    c = cfg[(cfg["algorithm"] == "bpr-mf") & (cfg["config_id"] == b["config_id"])].iloc[0]
    ref = load_grid(full).values["factors"]
    i = ref.index(int(c["factors"]))
    assert g.values["factors"] == ref[max(0, i - 1): i + 2]
    bad = tmp_path / "bad.toml"
    bad.write_text(BPR.replace("[8, 16]", "[5, 6]"))
    assert main(["subgrid", str(tiny_swept_every_stage / "results"), "--grid", str(bad), "--out", str(out)]) == 2


def test_study_subcommands_are_wired(capsys):
    for cmd in ("seeds", "slices"):
        with pytest.raises(SystemExit) as ex:
            main([cmd, "-h"])
        assert ex.value.code == 0
        assert f"dptune {cmd}" in capsys.readouterr().out


# --------------------------------------------------------------------------- a consistent command line
def _subparsers(parser, prefix="dptune"):
    """(name, parser) of every command and sub-command of the tree."""
    import argparse

    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((f"{prefix} {name}", sub))
                out += _subparsers(sub, f"{prefix} {name}")
    return out


def test_every_option_of_every_command_has_help():
    from dptune.cli import build_parser

    subs = _subparsers(build_parser())
    assert {n for n, _ in subs} >= {f"dptune {c}" for c in (
        "run", "worker", "status", "analyze", "evaluate", "dp", "subgrid", "seeds", "slices",
        "data", "data fetch", "data info")}
    for name, sub in subs:
        for action in sub._actions:
            assert action.help, (name, action.option_strings or action.dest)
            if action.choices and not hasattr(action.choices, "items"):
                sub.format_help()  # choices are listed in the usage / metavar


def _option_help(parser, action) -> str:
    """An option's help as ``COMMAND --help`` prints it (argparse's own expansion)."""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def test_every_option_says_its_default():
    """Every option that takes a value and may be left out says in its help what it is when
    left out ("every option, its default"), the analysis flags included; a switch (on when
    given) and a required option have none to say."""
    from dptune.cli import build_parser

    missing = []
    for name, sub in _subparsers(build_parser()):
        for action in sub._actions:
            switch = action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction)
            if (not action.option_strings or action.required or switch
                    or isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS):
                continue
            if "default" not in _option_help(sub, action):
                missing.append(f"{name} {action.option_strings[0]}")
    assert not missing, missing


@pytest.mark.parametrize(("command", "flag", "words"), [
    ("run", "--bootstrap", "(default: the experiment's [analysis] value, else 1000)"),
    ("analyze", "--alpha", "(default: the experiment's [analysis] value, else 0.05)"),
    ("analyze", "--stability", "else 5)"),
    ("analyze", "--stability-seconds", "else 5.0)"),
    ("analyze", "--min-fold-users", "else 20)"),
    ("run", "--test", "else t)"),
    ("dp", "--seed", "(default: 42)"),
    ("dp", "--bootstrap", "(default: 1000)"),
    ("dp", "--importance", "(default: on when --configs gives hyperparameters)"),
])
def test_analysis_flags_show_the_default_they_take(command, flag, words):
    """The defaults of the analysis flags are the analysis options' own (an experiment's
    [analysis] table overrides them for run and analyze; dp has no experiment)."""
    from dptune.analysis.options import OUTSIDE_SEED as SEED
    from dptune.cli import build_parser

    sub = dict(_subparsers(build_parser()))[f"dptune {command}"]
    action = next(a for a in sub._actions if flag in a.option_strings)
    assert words in _option_help(sub, action)
    assert SEED == 42


def _help_of(command: str, flag: str) -> str:
    from dptune.cli import build_parser

    sub = dict(_subparsers(build_parser()))[f"dptune {command}"]
    return _option_help(sub, next(a for a in sub._actions if flag in a.option_strings))


@pytest.mark.parametrize("command", ["run", "analyze", "dp"])
def test_alpha_help_says_everything_alpha_sets(command):
    """``--alpha`` is the family-wise error rate of the verdict's claims as well as the level of
    Sakai's DP and of the test-split comparisons; its help says all three."""
    text = _help_of(command, "--alpha")
    for words in ("family-wise error rate of the verdict's claims", "dominant hyperparameter",
                  "Sakai's DP", "test-split comparisons"):
        assert words in text, text


def test_jobs_help_gives_the_default_of_an_experiment_without_one():
    from dptune.config import SweepConfig

    assert SweepConfig().jobs == 1
    assert "(default: [sweep] jobs of the experiment, else 1)" in _help_of("run", "--jobs")
    assert "(default: 1)" in _help_of("seeds", "--jobs")


def test_data_synth_flags_each_give_their_own_default():
    """Each shape flag of ``data synth`` names its own default (the preset's, else the shape's
    default of that field), not one string shared by all."""
    from dptune.data._synth import SynthShape

    expected = {"--users": "1,000", "--items": "2,000", "--ratings": "20,000",
                "--min-user-ratings": "5", "--popularity-exponent": "0.65",
                "--activity-exponent": "0.5", "--rating-probs": "0.07,0.06,0.11,0.21,0.55"}
    shape = SynthShape()
    for flag, value in expected.items():
        field = getattr(shape, flag[2:].replace("-", "_"))
        assert value.replace(",", "") == (",".join(map(str, field)).replace(",", "")
                                          if isinstance(field, tuple) else str(field))
        text = _help_of("data synth", flag)
        assert text.endswith(f"(default: the --preset's, else {value})"), text
        assert text.count("default") == 1, text


def test_same_flags_for_the_same_things():
    from dptune.cli import build_parser

    subs = dict(_subparsers(build_parser()))
    flags = {n: {o for a in p._actions for o in a.option_strings} for n, p in subs.items()}
    for cmd in ("run", "analyze", "status", "slices", "seeds", "worker", "subgrid"):
        assert "--results" in flags[f"dptune {cmd}"], cmd
    for cmd in ("run", "analyze", "dp", "seeds", "slices", "status"):
        assert "--reports" in flags[f"dptune {cmd}"], cmd
    for cmd in ("run", "seeds"):
        assert "--jobs" in flags[f"dptune {cmd}"], cmd
    for cmd in ("run", "analyze", "seeds", "worker"):
        assert "--no-progress" in flags[f"dptune {cmd}"], cmd
    for cmd in ("run", "worker", "status"):
        assert "--storage" in flags[f"dptune {cmd}"], cmd
    run_an = {o for o in flags["dptune run"] if o not in flags["dptune worker"]}
    assert {"--pairs", "--test", "--alpha", "--bootstrap", "--noise-seeds"} <= run_an
    assert {"--pairs", "--test", "--alpha", "--bootstrap", "--noise-seeds"} <= flags["dptune analyze"]


def test_out_is_a_file_to_write_in_every_command():
    """``--out`` means one thing: the file a command writes (``evaluate``, ``subgrid``, ``data
    synth``); a folder is ``--reports`` or ``--results``. No command shows a hidden former name
    in its help."""
    from dptune.cli import build_parser

    shown = {}
    for name, sub in _subparsers(build_parser()):
        for action in sub._actions:
            if "--out" in action.option_strings and action.help != argparse.SUPPRESS:
                shown[name] = action.metavar
        text = sub.format_help()
        assert "--cache" not in text and "former" not in text, name
    assert shown == {"dptune evaluate": "FILE", "dptune subgrid": "FILE",
                     "dptune data synth": "FILE"}


def test_a_deprecated_flag_works_and_warns_once(capsys):
    """``seeds --cache`` (former name of ``--results``) still sets it, with exactly one warning
    line on stderr naming the new flag, however often it is given."""
    from dptune.cli import build_parser

    p = build_parser()
    a = p.parse_args(["seeds", "c.toml", "--cache", "C", "--reports", "O"])
    assert capsys.readouterr().err == "dptune: --cache is deprecated, use --results\n"
    b = p.parse_args(["seeds", "c.toml", "--results", "C", "--reports", "O"])
    assert capsys.readouterr().err == ""
    assert (a.results, a.reports) == (b.results, b.reports) == ("C", "O")
    assert vars(a).keys() == vars(b).keys()  # nothing left over from the former name
    p.parse_args(["seeds", "c.toml", "--cache", "C", "--cache", "C", "--results", "C"])
    assert capsys.readouterr().err == "dptune: --cache is deprecated, use --results\n"


def test_a_deprecated_flag_and_its_new_name_must_agree(capsys):
    assert main(["seeds", "c.toml", "--cache", "C", "--results", "D"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dptune: seeds: --cache and --results"), err


@pytest.mark.parametrize("command", [["seeds", "c.toml"], ["slices", "R"]])
def test_a_removed_flag_names_its_replacement(capsys, command, tmp_path):
    """``seeds --out DIR`` and ``slices --out DIR`` (a folder, while every other ``--out`` is a
    file) are refused before any work, with one line naming ``--reports``."""
    assert main([*command, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"dptune: {command[0]}: --out was removed: use --reports DIR"), err
    assert not (tmp_path / "o").exists()


def test_help_documents_defaults_formats_and_version(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    from dptune import __version__

    assert capsys.readouterr().out.strip() == f"dptune {__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "`" not in top and "COMMAND" in top
    for cmd in ("evaluate", "dp"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = capsys.readouterr().out
        assert "user Q0 item rank score tag" in text and "user 0 item rating" in text, cmd
        assert "user item" in text
    with pytest.raises(SystemExit):
        main(["data", "info", "--help"])
    text = capsys.readouterr().out
    assert "ml-dat" in text and "(default: auto)" in text
    with pytest.raises(SystemExit):
        main(["subgrid", "--help"])
    assert "(default: 2)" in capsys.readouterr().out


def test_readme_documents_the_trec_formats():
    text = (ROOT / "README.md").read_text()
    assert "user Q0 item rank score tag" in text and "user 0 item rating" in text


def test_status_covers_test_split_noise_floor_and_analysis(tiny_swept_every_stage, tmp_path,
                                                           capsys):
    import os
    import shutil

    results, reports = tmp_path / "results", tmp_path / "reports"  # copies: report.md is touched
    shutil.copytree(tiny_swept_every_stage / "results", results)
    shutil.copytree(tiny_swept_every_stage / "reports", reports)
    report = reports / "report.md"
    os.utime(report)
    assert main(["status", str(results), "--reports", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "test split:" in out and "noise floor:" in out and "analysis:" in out
    lines = {line.split(":")[0]: line for line in out.splitlines() if ":" in line}
    assert "units done" in lines["test split"]
    assert "parts (5 seeds) done" in lines["noise floor"]
    assert "up to date" in lines["analysis"]
    os.utime(report, (0, 0))
    assert main(["status", str(results), "--reports", str(reports)]) == 0
    assert "older than the results" in capsys.readouterr().out
    os.utime(report)
    assert main(["status", str(results), "--reports", str(tmp_path / "nowhere")]) == 0
    assert "not written yet" in capsys.readouterr().out


def test_status_while_the_analysis_runs_says_so(tiny_swept, tmp_path, capsys, monkeypatch):
    """While ``dptune analyze`` computes (minutes on a large store; its folder appears whole at
    the end), ``dptune status`` said the report was "not written yet" and advised the very
    command already running, which would start a second analysis of the same results. It
    names the analysis in progress (host:pid, start); once it ends, the report's own state.
    A mark left by a process known gone (``kill -9``) is no analysis in progress; one of
    another host cannot be checked and is shown."""
    import json
    import os
    import shutil
    import socket
    import subprocess

    import dptune._api as api
    from dptune.sweeper._analysing import mark_path
    from dptune.sweeper._claims import pid_space

    results = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", results)
    reports = tmp_path / "rep"
    real = api.analyze
    seen = []

    def analysis_line() -> str:
        assert main(["status", str(results), "--reports", str(reports)]) == 0
        out = capsys.readouterr().out
        return next(line for line in out.splitlines() if line.startswith("analysis:"))

    def analyze(*args, **kwargs):  # status asked while the analysis computes
        seen.append(analysis_line())
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "analyze", analyze)
    assert main(["analyze", str(results), "--reports", str(reports), "--no-progress",
                 "--bootstrap", "0"]) == 0
    me = f"{socket.gethostname()}:{os.getpid()}"
    assert len(seen) == 1 and seen[0].startswith(
        f"analysis:    {reports / 'report.md'} being written by the analysis of {me} "
        "(host:pid), started 20"), seen
    assert not mark_path(reports).exists()
    assert analysis_line().endswith("report.md up to date")

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    mark = {"worker": f"{socket.gethostname()}:{gone.pid}", "pid_space": pid_space(),
            "started": "2026-01-01T00:00:00+00:00"}
    mark_path(reports).write_text(json.dumps(mark))
    assert analysis_line().endswith("report.md up to date")
    mark["worker"] = "elsewhere:12"
    mark_path(reports).write_text(json.dumps(mark))
    assert analysis_line().endswith("being written by the analysis of elsewhere:12 (host:pid), "
                                    "started 2026-01-01T00:00:00+00:00")


def test_status_checks_the_reports_folder_the_run_wrote(tiny_swept, tmp_path, capsys,
                                                        monkeypatch):
    """``dptune run --reports X`` records X in the results directory (reports.txt); ``dptune
    status`` without --reports checks X/report.md, and when it is missing or stale the advice
    names X. --reports still overrides the record; a record that cannot be read is ignored."""
    import os
    import shutil

    from dptune.cli._commands import REPORTS_RECORD

    results = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", results)
    reports = tmp_path / "elsewhere"
    shutil.copytree(tiny_swept / "reports", reports)
    (results / REPORTS_RECORD).unlink()
    monkeypatch.chdir(tmp_path)  # reports/tiny, the default, does not exist here
    # the run records the folder before its analysis writes it
    assert main(["run", str(tiny_swept / "exp" / "tiny.toml"), "--results", str(results), "--reports",
                 "elsewhere", "--no-progress", "--bootstrap", "0"]) == 0
    capsys.readouterr()
    assert (results / REPORTS_RECORD).read_text() == f"{reports.resolve()}\n"
    assert (results / REPORTS_RECORD).stat().st_mtime <= (reports / "report.md").stat().st_mtime

    def analysis_line(*more: str) -> str:
        assert main(["status", str(results), *more]) == 0
        out = capsys.readouterr().out
        return next(line for line in out.splitlines() if line.startswith("analysis:"))

    line = analysis_line()
    assert line.endswith(f"{Path('elsewhere') / 'report.md'} up to date"), line
    os.utime(reports / "report.md", (0, 0))
    line = analysis_line()
    assert "elsewhere/report.md is older than the results" in line, line
    assert line.endswith(f"(dptune analyze {results} --reports elsewhere)"), line
    (reports / "report.md").unlink()
    line = analysis_line()
    assert "elsewhere/report.md not written yet" in line and "--reports elsewhere)" in line, line
    # --reports overrides the record; the default folder needs no flag in the advice
    line = analysis_line("--reports", str(Path("reports") / "tiny"))
    assert line.endswith(f"reports/tiny/report.md not written yet (dptune analyze {results})"), line
    # a file given as --reports (the data, the TOML) is a mistyped flag: it was taken as a
    # folder and the advice named a command that would fail
    assert main(["status", str(results), "--reports", str(results / "trials.csv")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dptune: --reports: {results / 'trials.csv'} is a file, not a report folder")
    # a record that cannot be read is none; the default reports/tiny is of results/tiny, not
    # of these results, so nothing is claimed (an analyze without --reports would overwrite it)
    (results / REPORTS_RECORD).write_bytes(b"\xff\xfe")
    assert analysis_line() == (
        f"analysis:    no report folder recorded for {results} (--reports DIR checks the one of "
        f"these results; dptune analyze {results} --reports DIR writes one)")
    (tmp_path / "moved").mkdir()  # in the default folder results/tiny: its default report
    shutil.move(results, tmp_path / "moved" / "tiny")
    shutil.move(tmp_path / "moved", tmp_path / "results")
    assert main(["status", str(Path("results") / "tiny")]) == 0
    line = next(li for li in capsys.readouterr().out.splitlines() if li.startswith("analysis:"))
    assert line.startswith(f"analysis:    {Path('reports') / 'tiny' / 'report.md'} not written"), line


def test_subgrid_warns_when_the_best_configuration_is_on_the_grid_edge(tiny_swept_every_stage, tmp_path, capsys):
    """The tiny BPR grid has two values per hyperparameter: the best is on an edge of each;
    placed in a wider grid where it is inside, no warning."""
    out = tmp_path / "sub.toml"
    assert main(["subgrid", str(tiny_swept_every_stage / "results"), "--algorithm", "bpr-mf",
                 "--radius", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dptune: warning: bpr-mf: the best configuration sits on the edge of the grid" in err
    assert "factors=" in err
    wide = tmp_path / "wide.toml"
    wide.write_text(BPR.replace("[8, 16]", "[4, 8, 16, 32]").replace("[1, 3]", "[0, 1, 3, 5]")
                    .replace("[0.05, 0.1]", "[0.025, 0.05, 0.1, 0.2]"))
    assert main(["subgrid", str(tiny_swept_every_stage / "results"), "--algorithm", "bpr-mf",
                 "--radius", "1", "--grid", str(wide), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_report_warns_when_the_selected_configuration_is_on_the_grid_edge(tiny_swept_every_stage):
    """The same edge in the run's data (best_configs.csv ``grid_edge``) and in report.md."""
    best = pd.read_csv(tiny_swept_every_stage / "reports" / "best_configs.csv", keep_default_na=False)
    bpr = best[(best["algorithm"] == "bpr-mf") & (best["metric"] == "ndcg")
               & (best["cutoff"] == 10)]
    edges = dict(part.split("=") for part in bpr["grid_edge"].iloc[0].split(";"))
    assert set(edges) == {"factors", "iterations", "learning_rate"}
    assert set(edges.values()) <= {"lowest", "highest"}
    md = (tiny_swept_every_stage / "reports" / "report.md").read_text()
    assert "- BPR-MF: the configuration nDCG@10 selects sits on the edge of the grid (" in md
    assert "Latent factors at its " + edges["factors"] + " value" in md


def test_every_analysis_flag_sets_an_analysis_option():
    """The analysis flags are one table mapped onto the fields of the experiment's analysis
    options; a flag whose field does not exist would be silently ignored by the analysis."""
    import dataclasses

    from dptune.cli._flags import ANALYSIS_FLAGS
    from dptune.config import load_experiment

    options = load_experiment(ROOT / "experiments" / "quickstart.toml").analysis
    names = {f.name for f in dataclasses.fields(options)}
    assert {f.field for f in ANALYSIS_FLAGS} <= names
    assert len({f.flag for f in ANALYSIS_FLAGS}) == len(ANALYSIS_FLAGS)


def test_ctrl_c_while_the_parser_loads_is_one_line(monkeypatch, capsys):
    """The parser's modules take about a second to import (pandas); a Ctrl-C then used to print
    a KeyboardInterrupt traceback. ``dptune.cli`` imports them inside ``main``: one line, exit
    code 130. (The interrupt is raised by the import itself, here, not by a timed signal.)"""
    import importlib.abc

    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "dptune.cli._tree":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "dptune.cli._tree", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    assert main(["status", "--results", "nowhere"]) == 130
    err = capsys.readouterr().err
    assert err == "dptune: interrupted before the command started; nothing was done\n"


@pytest.mark.parametrize("module", ["dptune", "dptune.cli"])
def test_python_dash_m_runs_the_command(module):
    """``python -m dptune`` is the ``dptune`` command, as ``python -m dptune.cli`` is (a
    newcomer's first try failed: no ``__main__``)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("dptune "), out
