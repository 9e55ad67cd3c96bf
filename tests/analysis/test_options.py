"""AnalysisOptions: defaults, the merge of :meth:`resolve`, and one error line per bad value."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.analysis import options as options_module
from dptune.analysis.options import AnalysisOptions, validate_options
from dptune.config import parse_experiment
from dptune.errors import INT_MAX, DptuneError

GRID = str(Path(__file__).parents[2] / "grids" / "knn.toml")
BASE = {"name": "x", "algorithms": [{"name": "u", "type": "userknn", "grid": GRID}]}

BAD = [
    ("pairs", 0), ("pairs", "many"), ("pairs", 2.5), ("pairs", True),
    ("seed", -1), ("seed", "x"), ("seed", 2**32), ("seed", 10**20),
    ("test", "anova"), ("alpha", 0), ("alpha", 1.0), ("alpha", "0.05"), ("alpha", True),
    ("correction", "bonferroni"), ("n_resamples", 0), ("bootstrap", -1),
    ("primary_metric", ""), ("primary_metric", "ndcg@10"), ("primary_metric", 3),
    ("primary_cutoff", 0),
    ("noise_seeds", 1), ("noise_seeds", -2), ("noise_configs", 0), ("importance", 1),
    ("importance", "yes"), ("stability", -1), ("stability_seconds", -0.5),
    ("stability_seconds", "60"), ("stability_seconds", float("inf")),
    ("stability_seconds", True), ("min_fold_users", -5),
    ("min_fold_users", 1.5), ("value_pairs", 0), ("value_pairs", 2.5), ("value_pairs", "all"),
    # beyond a float's range: float() raised OverflowError; beyond 4,300 digits repr() raised
    pytest.param("alpha", 10**400, id="alpha-10**400"),
    pytest.param("alpha", -10**400, id="alpha--10**400"),
    pytest.param("stability_seconds", 10**400, id="stability_seconds-10**400"),
    pytest.param("alpha", 10**5000, id="alpha-10**5000"),
    pytest.param("seed", 10**5000, id="seed-10**5000"),
    # a noise floor of 10**400 seeds was taken, and trained without end after the sweep
    pytest.param("noise_seeds", 10**400, id="noise_seeds-10**400"),
    pytest.param("noise_seeds", 1001, id="noise_seeds-1001"),
    pytest.param("bootstrap", 10**5000, id="bootstrap-10**5000"),
    # counts beyond int64: one of thousands of digits was taken and stopped the report's
    # writing with a ValueError (Python's integer-to-text limit)
    *(pytest.param(key, value, id=f"{key}-{shown}")
      for key in ("pairs", "value_pairs", "min_pairs", "stability", "min_fold_users",
                  "noise_configs", "primary_cutoff")
      for value, shown in ((2**63, "2**63"), (10**5000, "10**5000"))),
]


def test_defaults():
    o = AnalysisOptions()
    assert (o.pairs, o.seed, o.test, o.alpha, o.correction, o.n_resamples) == (
        1000, None, "t", 0.05, "none", 1000)
    assert (o.primary_metric, o.primary_cutoff, o.noise_seeds, o.noise_configs, o.importance) == (
        "ndcg", 10, 5, 1, True)
    # bootstrap intervals, 5 pair seeds (when sampled) and the fold-size guard by default
    assert (o.bootstrap, o.stability, o.min_fold_users) == (1000, 5, 20)
    # the extra pair seeds may take 5 s per algorithm (the store's analysis stays in its target)
    assert o.stability_seconds == 5.0 and AnalysisOptions(stability_seconds=60).stability_seconds \
        == 60.0


def test_every_count_takes_int64s_largest():
    """The bound of the counts is int64's largest integer, taken as it is."""
    o = AnalysisOptions(pairs=INT_MAX, value_pairs=INT_MAX, min_pairs=INT_MAX, stability=INT_MAX,
                        min_fold_users=INT_MAX, noise_configs=INT_MAX)
    assert o.pairs == o.value_pairs == o.min_pairs == o.stability == o.min_fold_users == INT_MAX
    assert o.noise_configs == INT_MAX == 2**63 - 1
    with pytest.raises(DptuneError, match=r"^analysis: pairs: must be an integer of at most "
                       r"9,223,372,036,854,775,807 \(int64's largest\), got an integer of 5,001 "
                       r"digits$"):
        AnalysisOptions(pairs=10**5000)
    with pytest.raises(DptuneError, match=r"pairs: must be an integer >= 1, got 0$"):
        AnalysisOptions(pairs=0)  # below: the plain rule, without the bound's 19 digits


def test_value_pairs_default_to_the_smaller_of_pairs_and_200():
    assert AnalysisOptions().value_pairs is None
    assert AnalysisOptions().scope_value_pairs == 200
    assert AnalysisOptions(pairs=25).scope_value_pairs == 25  # the paper: 25 in every scope
    assert AnalysisOptions(pairs=25, value_pairs=500).scope_value_pairs == 500
    assert AnalysisOptions(value_pairs=5000).scope_value_pairs == 5000


@pytest.mark.parametrize("field, value", BAD)
def test_every_bad_value_is_one_line_naming_the_field(field, value):
    with pytest.raises(DptuneError) as err:
        AnalysisOptions(**{field: value})
    msg = str(err.value)
    assert msg.startswith(f"analysis: {field}: ") and "\n" not in msg
    # the same check, in the experiment file, names the file and the table
    with pytest.raises(DptuneError) as err:
        parse_experiment({**BASE, "analysis": {field: value}}, "exp.toml")
    assert str(err.value).startswith(f"exp.toml: analysis.{field}: ")


def test_unknown_field_suggests_the_right_one():
    with pytest.raises(DptuneError, match=r"exp.toml: analysis.pair: unknown field \(did you "
                                          "mean 'pairs'"):
        parse_experiment({**BASE, "analysis": {"pair": 3}}, "exp.toml")
    with pytest.raises(DptuneError, match="analysis: n_pair: unknown field"):
        AnalysisOptions.resolve({}, n_pair=3)


@pytest.mark.parametrize("old", ["n_pairs", "max_pairs"])
def test_the_old_pair_options_are_renamed(old):
    with pytest.raises(DptuneError) as err:
        parse_experiment({**BASE, "analysis": {old: 25}}, "exp.toml")
    assert str(err.value) == f"exp.toml: analysis.{old}: renamed to 'pairs'"
    with pytest.raises(DptuneError, match=f"analysis: {old}: renamed to 'pairs'"):
        AnalysisOptions.resolve({}, **{old: 25})


def test_a_manifest_of_the_earlier_version_maps_n_pairs_to_pairs():
    man = {"analysis": {"n_pairs": 25, "max_pairs": 1000, "seed": None}, "seeds": {"analysis": 1}}
    assert AnalysisOptions.resolve(man).pairs == 25
    assert AnalysisOptions.resolve({"analysis": {"n_pairs": 25, "pairs": 40}}).pairs == 40
    assert AnalysisOptions.resolve({"analysis": {"max_pairs": 0}}).pairs == 1000


def test_values_are_coerced():
    o = AnalysisOptions(pairs=np.int64(7), alpha=np.float32(0.25), seed=np.int32(3))
    assert type(o.pairs) is int and type(o.alpha) is float and type(o.seed) is int
    assert type(validate_options({"n_resamples": np.int16(3)})["n_resamples"]) is int


def test_a_numpy_bool_is_a_bool():
    """``importance`` from a DataFrame cell or a numpy comparison (``np.True_``) is a boolean
    like Python's: it was refused as ``must be true or false, got np.True_``."""
    assert AnalysisOptions(importance=np.True_).importance is True
    assert AnalysisOptions(importance=np.False_).importance is False
    with pytest.raises(DptuneError, match=r"^analysis: importance: must be true or false, got 1$"):
        AnalysisOptions(importance=np.int64(1))


def test_resolve_merges_defaults_manifest_and_overrides():
    man = {"analysis": {"pairs": 15, "seed": None, "bootstrap": 40, "from_the_future": 1},
           "seeds": {"analysis": 42}}
    o = AnalysisOptions.resolve(man, bootstrap=None, test="wilcoxon")
    assert (o.pairs, o.seed, o.bootstrap, o.test, o.alpha) == (15, 42, 40, "wilcoxon", 0.05)
    assert AnalysisOptions.resolve(man, seed=5).seed == 5
    assert AnalysisOptions.resolve({}).seed is None
    with pytest.raises(DptuneError, match="analysis: bootstrap: must be an integer >= 0"):
        AnalysisOptions.resolve(man, bootstrap=-3)


def test_replace_validates_and_the_experiment_holds_options():
    o = AnalysisOptions().replace(pairs=1000, stability=5, min_fold_users=20)
    assert (o.pairs, o.stability, o.min_fold_users) == (1000, 5, 20)
    with pytest.raises(DptuneError, match="analysis: stability"):
        o.replace(stability=-1)
    exp = parse_experiment({**BASE, "analysis": {"pairs": 10}}, "exp.toml")
    assert isinstance(exp.analysis, AnalysisOptions) and exp.analysis.pairs == 10
    assert exp.to_dict()["analysis"]["pairs"] == 10


def test_docstring_examples():
    assert doctest.testmod(options_module, raise_on_error=False).failed == 0


def test_families_and_min_pairs():
    o = AnalysisOptions()
    assert o.min_pairs == 10
    assert dict(o.families) == {"accuracy": ("ndcg", "precision", "recall", "mrr"),
                                "novelty": ("epc", "efd")}
    fam = AnalysisOptions(families={"acc": ["ndcg", "mrr"]}).families
    assert fam == (("acc", ("ndcg", "mrr")),)
    # a manifest stores the families as lists; they come back the same
    assert AnalysisOptions.from_mapping({"families": [["acc", ["ndcg", "mrr"]]]}).families == fam
    exp = parse_experiment({**BASE, "analysis": {"families": {"a": ["efd"]}, "min_pairs": 3}},
                           "exp.toml")
    assert exp.analysis.families == (("a", ("efd",)),) and exp.analysis.min_pairs == 3


@pytest.mark.parametrize("value, field, problem", [
    ({}, "families", "must be a table of families"),
    ("ndcg", "families", "must be a table of families"),
    ({"a": []}, "families.a", "needs a non-empty list of metrics"),
    ({"a": "ndcg"}, "families.a", "needs a non-empty list of metrics"),
    ({"a": ["map"]}, "families.a", "'map' is not one of"),  # an experiment's are dptune's
    ({"a": ["ndcg@10"]}, "families.a", "needs metric names without a cutoff"),
    ({"a": ["ndcg", 3]}, "families.a", "needs metric names without a cutoff"),
    ({"a": ["ndcg"], "b": ["ndcg", "efd"]}, "families.b", "'ndcg' is already in family 'a'"),
])
def test_bad_families_are_one_line(value, field, problem):
    with pytest.raises(DptuneError) as err:
        parse_experiment({**BASE, "analysis": {"families": value}}, "exp.toml")
    msg = str(err.value)
    assert msg.startswith(f"exp.toml: analysis.{field}: {problem}") and "\n" not in msg
    with pytest.raises(DptuneError, match="analysis: min_pairs: must be an integer >= 1"):
        AnalysisOptions(min_pairs=0)


def _outside_table(seed: int = 0) -> pd.DataFrame:
    """Six systems, 30 users, two folds, nDCG@10 and an outside metric ``hr@10`` of their own."""
    rng = np.random.default_rng(seed)
    rows = [{"system": f"s{s}", "fold": f, "user": u, "metric": m, "cutoff": 10,
             "value": float(np.clip(rng.random() * 0.5 + s / 12, 0, 1))}
            for s in range(6) for f in ("0", "1") for u in range(30) for m in ("ndcg", "hr")]
    return pd.DataFrame(rows)


def test_an_outside_metric_joins_a_family():
    """Outside data's own metric (``hr``) may be named in a family, and is then ranked with
    that family's metrics; it stood in a family 'other' of its own, since a family could name
    dptune's metrics only. A name dptune does not know and the results do not hold is refused
    before any work, with the names they have (a typo would leave the metric it meant out)."""
    import dptune

    fam = AnalysisOptions(families={"accuracy": ["nDCG", "hr"]}).families
    assert fam == (("accuracy", ("ndcg", "hr")),)
    table = _outside_table()
    res = dptune.discriminative_power(table, pairs=15, families={"accuracy": ["ndcg", "hr"]})
    verdict = res.verdict[res.verdict["cutoff"] == 10]
    assert list(verdict["family"]) == ["accuracy"]  # one family, both metrics in it
    alone = dptune.discriminative_power(table, pairs=15)
    assert sorted(alone.verdict["family"]) == ["accuracy", "other"]  # as it was by default
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(table, pairs=15, families={"accuracy": ["ndcg", "hrr"]})
    msg = str(err.value)
    assert msg.startswith("analysis: families.accuracy: 'hrr' is neither a dptune metric") \
        and "(they have ndcg, hr)" in msg and "did you mean" in msg and "\n" not in msg, msg
    with pytest.raises(DptuneError, match="did you mean 'hr'\\? an outside metric's name is "
                       "matched as written"):
        dptune.discriminative_power(table, pairs=15, families={"accuracy": ["ndcg", "HR"]})


def test_bad_family_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    from conftest import write_experiment

    from dptune.cli import main

    cfg = write_experiment(tmp_path / "exp")
    cfg.write_text(cfg.read_text().replace("[analysis]",
                                           '[analysis]\nfamilies = { accuracy = ["ndcg", "map"] }'))
    assert main(["run", str(cfg), "--results", str(tmp_path / "res"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "analysis.families.accuracy: 'map' is not one of" in err
    assert not (tmp_path / "res").exists()  # refused before any work


@pytest.mark.parametrize(("field", "value", "shown"), [
    ("alpha", 10**400, "an integer of 401 digits"),
    ("alpha", -10**400, "a negative integer of 401 digits"),
    ("stability_seconds", -10**5000, "a negative integer of 5,001 digits"),
    ("seed", 10**5000, "an integer of 5,001 digits"),
    ("alpha", 2.5, "2.5"),
    ("seed", 10**30, str(10**30)),  # a long integer is still spelt out up to 100 digits
], ids=["alpha-10**400", "alpha--10**400", "stability_seconds--10**5000", "seed-10**5000",
        "alpha-2.5", "seed-10**30"])
def test_a_huge_integer_is_named_by_its_size(field, value, shown):
    """An integer of hundreds of digits is named by its size, not spelt out (and one of more
    than 4,300, which Python refuses to spell out, is no traceback)."""
    with pytest.raises(DptuneError) as err:
        AnalysisOptions(**{field: value})
    assert str(err.value).endswith(f", got {shown}"), err.value
