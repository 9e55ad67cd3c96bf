"""Fuzzing the front door: experiment files, grids, ratings files and per-user tables.

Hypothesis generates inputs from a valid one by changing values to wrong types, out-of-range
numbers, NaN and infinities, empty strings, lists and tables, and by adding and removing keys,
columns and rows. Each input must either pass validation or be refused with one
:class:`DptuneError` line naming the file; any other exception (a traceback) fails the test.
Only validation runs (nothing is trained), so the whole file takes seconds; one property goes
through ``dptune run`` and checks that a refused experiment leaves no results directory.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dptune.cli import main
from dptune.config import parse_experiment
from dptune.data import read_ratings
from dptune.errors import DptuneError, plain
from dptune.grids import parse_grid
from dptune.models import get_family
from dptune.store._per_user_file import read_per_user
from dptune.sweeper._manifest import validate_experiment

ROOT = Path(__file__).resolve().parents[1]
FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# -------------------------------------------------------------------------- value strategies
SCALARS = st.one_of(
    st.integers(-3, 3), st.integers(-(2**70), 2**70),
    # more digits than Python spells out (4,300): any message or JSON of it raised ValueError
    st.sampled_from([10**5000, -(10**5000)]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 1e300]),
    st.booleans(), st.sampled_from(["", " ", "abc", "ndcg", "temporal", "t", "10", "nan", "∞"]),
)
WEIRD = st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                  st.dictionaries(st.sampled_from(["a", "k", "values", "user"]), SCALARS,
                                  max_size=2))

BASE_EXPERIMENT = {
    "name": "fuzz",
    "seed": 3,
    "data": {"source": "ml-latest-small", "kcore": 0},
    "split": {"method": "temporal", "train_ratio": 0.8, "folds": 2, "min_user_interactions": 5,
              "fold_method": "user_stratified"},
    "evaluation": {"cutoffs": [1, 5, 10], "relevance_threshold": 4.0, "test_split": False},
    "analysis": {"n_pairs": 5, "test": "t", "primary_metric": "ndcg", "primary_cutoff": 10,
                 "alpha": 0.05},
    "sweep": {"jobs": 1},
    "algorithms": [
        {"name": "knn", "type": "userknn", "grid": "knn.toml"},
        {"name": "ease", "type": "cornac:EASE", "grid": "ease.toml"},
        {"name": "pop", "type": "cornac:MostPop"},
    ],
}
KEYS = {
    None: ["name", "seed", "description", "nme", "data", "split", "algorithms"],
    "data": ["source", "kcore", "min_rating", "columns", "sep", "header", "format", "sorce"],
    "split": ["method", "train_ratio", "folds", "min_user_interactions", "fold_method", "seed",
              "fold"],
    "evaluation": ["cutoffs", "relevance_threshold", "metrics", "novelty", "user_block",
                   "test_split", "cutoff"],
    "analysis": ["n_pairs", "test", "primary_metric", "primary_cutoff", "alpha", "correction",
                 "seed", "noise_seeds", "bootstrap", "pairs"],
    "sweep": ["jobs", "storage", "job"],
    "algorithms": ["name", "type", "grid", "grd"],
}
GRIDS = {
    "knn.toml": "[params.k]\nvalues = [5, 10]\n",
    "ease.toml": "[params.lamb]\nvalues = [100.0, 500.0]\n",
}


@st.composite
def mutations(draw):
    """A list of (section, key, action, value): set a key to a weird value, or delete it."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from(list(KEYS)))
        key = draw(st.sampled_from(KEYS[section]))
        action = draw(st.sampled_from(["set", "set", "delete"]))
        out.append((section, key, action, draw(WEIRD)))
    return out


def mutate(base: dict, changes: list, draw_index: int = 0) -> dict:
    data = copy.deepcopy(base)
    for section, key, action, value in changes:
        if section is None:
            target = data
        elif section == "algorithms":
            algos = data.get("algorithms")
            if not isinstance(algos, list) or not algos or not isinstance(algos[0], dict):
                continue
            target = algos[hash(plain(value)) % len(algos)]
        else:
            target = data.setdefault(section, {})
            if not isinstance(target, dict):
                continue
        if action == "delete":
            target.pop(key, None)
        else:
            target[key] = value
    return data


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if not -(2**63) <= v < 2**63:
            raise OverflowError
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"


def to_toml(data: dict) -> str | None:
    """The TOML text of an experiment table (tables inline), None when it has no TOML form."""
    try:
        return "\n".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in data.items()) + "\n"
    except OverflowError:
        return None


def one_line(err: DptuneError, *sources: str) -> None:
    text = str(err)
    assert "\n" not in text and text.strip(), text
    assert any(text.startswith(s) for s in sources), text


@pytest.fixture
def grid_dir(tmp_path):
    for name, text in GRIDS.items():
        (tmp_path / name).write_text(text)
    return tmp_path


# -------------------------------------------------------------------------- experiments
@FAST
@given(changes=mutations())
def test_fuzzed_experiment_is_valid_or_one_line(grid_dir, changes):
    data = mutate(BASE_EXPERIMENT, changes)
    cfg = grid_dir / "exp.toml"
    try:
        exp = parse_experiment(data, str(cfg), cfg)
        validate_experiment(exp)
    except DptuneError as err:
        one_line(err, str(cfg), "knn.toml", "ease.toml", "algorithm")


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=mutations())
def test_refused_experiment_through_the_cli_leaves_nothing_behind(grid_dir, capsys, changes):
    """``dptune run`` of a fuzzed experiment whose data file does not exist: exit 2, one
    ``dptune:`` line, no traceback, no results directory (nothing blocks the rerun)."""
    data = mutate(BASE_EXPERIMENT, changes)
    if isinstance(data.get("data"), dict):
        data["data"]["source"] = str(grid_dir / "missing.csv")
    cfg = grid_dir / "exp.toml"
    text = to_toml(data)
    if text is None:  # not representable in TOML (an integer beyond 64 bits)
        return
    cfg.write_text(text)
    results = grid_dir / "results"
    assert main(["run", str(cfg), "--results", str(results), "--reports",
                 str(grid_dir / "reports"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("dptune: ") and "Traceback" not in err, err
    assert not results.exists()


# -------------------------------------------------------------------------- grids
NUMBER = st.one_of(st.integers(-50, 50), st.floats(-50, 50), st.floats(allow_nan=True,
                                                                           allow_infinity=True),
                   SCALARS)


@st.composite
def grids(draw):
    params = {}
    for name in draw(st.lists(st.sampled_from(["k", "lamb", "factors", "posB", "iterations",
                                                 "learning_rate", "bogus"]),
                              min_size=0, max_size=3, unique=True)):
        kind = draw(st.sampled_from(["values", "exponent", "weird"]))
        if kind == "values":
            spec = {"values": draw(st.lists(SCALARS, max_size=4))}
        elif kind == "exponent":
            spec = {"base": draw(NUMBER),
                    "exponent": draw(st.one_of(
                        st.fixed_dictionaries({"start": NUMBER, "stop": NUMBER, "step": NUMBER}),
                        WEIRD))}
        else:
            spec = draw(WEIRD)
        if isinstance(spec, dict):
            for extra in draw(st.lists(st.sampled_from(["round", "digits", "exclude", "value"]),
                                       max_size=2, unique=True)):
                spec[extra] = draw(st.one_of(st.sampled_from(["int", "none"]), WEIRD))
        params[name] = spec
    data = {"params": params}
    if draw(st.booleans()):
        data["derived"] = draw(st.dictionaries(
            st.sampled_from(["user_reg", "k"]),
            st.one_of(st.fixed_dictionaries({"from": st.sampled_from(["k", "lamb", "x"]),
                                             "scale": NUMBER}), WEIRD), max_size=2))
    if draw(st.booleans()):
        data[draw(st.sampled_from(["family", "description", "famly"]))] = draw(WEIRD)
    return data


@FAST
@given(data=grids(), algorithm=st.sampled_from(["userknn", "bpr-mf", "cornac:EASE", "cornac:BPR",
                                                "python:dptune.models.examples:PureSVD"]))
def test_fuzzed_grid_is_valid_or_one_line(data, algorithm):
    try:
        grid = parse_grid(data, "g.toml")
        if grid.size <= 10_000:
            get_family(algorithm).check(grid.configs(), "g.toml")
    except DptuneError as err:
        one_line(err, "g.toml")


# -------------------------------------------------------------------------- ratings files
CELL = st.one_of(st.integers(-5, 10**6).map(str), st.floats(allow_nan=True,
                                                               allow_infinity=True).map(repr),
                 st.sampled_from(["", " ", "x", "2024-03-01", "2024-03-01T12:00:00Z", "1e3",
                                  "-1", "nan", '"a,b"', "NaN"]))


@FAST
@given(header=st.sampled_from(["user,item,rating,timestamp", "user_id,item_id,rating,timestamp",
                               "userId,movieId,rating", "u,i", "user,item,rating,timestamp,x"]),
       rows=st.lists(st.lists(CELL, min_size=2, max_size=5), min_size=0, max_size=6),
       duplicate=st.booleans())
def test_fuzzed_ratings_file_is_read_or_one_line(tmp_path, header, rows, duplicate):
    lines = [",".join(r) for r in rows]
    if duplicate and lines:
        lines.append(lines[0])
    path = tmp_path / "r.csv"
    path.write_text("\n".join([header, *lines]) + "\n")
    try:
        read_ratings(path)
    except DptuneError as err:
        one_line(err, str(path))


# -------------------------------------------------------------------------- per-user tables
PER_USER_COLUMNS = ["algorithm", "config_id", "fold", "user", "metric", "cutoff", "value"]
VALUE = st.one_of(st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=True),
                  st.sampled_from(["", "x", "ndcg", "ndcg@10", "bpr", "0", "nan"]))


@FAST
@given(rows=st.lists(st.fixed_dictionaries({c: VALUE for c in PER_USER_COLUMNS}),
                     min_size=0, max_size=6),
       drop=st.lists(st.sampled_from(PER_USER_COLUMNS), max_size=2, unique=True),
       extra=st.booleans(), duplicate=st.booleans())
def test_fuzzed_per_user_table_is_read_or_one_line(tmp_path, rows, drop, extra, duplicate):
    good = [{"algorithm": "bpr", "config_id": c, "fold": 0, "user": u, "metric": "ndcg",
             "cutoff": 10, "value": (u + c) / 10} for c in (0, 1) for u in (1, 2)]
    df = pd.DataFrame(good + rows, columns=PER_USER_COLUMNS)
    if duplicate:
        df = pd.concat([df, df.iloc[:1]])
    df = df.drop(columns=drop)
    if extra:
        df["score"] = 1
    path = tmp_path / "per_user.csv"
    df.to_csv(path, index=False)
    try:
        out = read_per_user(path)
    except DptuneError as err:
        one_line(err, str(path))
        return
    assert out["value"].map(math.isfinite).all()
