"""Grids: the expanded TOML files equal the paper's Table 2 value by value; bad keys are errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import HUGE_BPR
from hypothesis import given
from hypothesis import strategies as st

from dptune.errors import DptuneError
from dptune.grids import exponent_values, load_grid, parse_grid, subgrid_around

ROOT = Path(__file__).resolve().parents[1]

# Table 2 of Anelli et al. (RecSys 2019), as printed.
TABLE2_NEIGHBOURS = [10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 452, 640, 905, 1809]
TABLE2_FACTORS = TABLE2_NEIGHBOURS
TABLE2_ITERATIONS = [1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128]
TABLE2_LR = [0.20000389, 0.10000195, 0.05000097, 0.02500049, 0.01250024, 0.00625012, 0.00312506,
             0.00156253, 0.00078127, 0.00039063, 0.00019532, 0.00009766, 0.00004883, 0.00002441,
             0.00001221]


def test_knn_grid_is_table2():
    g = load_grid(ROOT / "grids" / "knn.toml")
    assert g.values == {"k": TABLE2_NEIGHBOURS}
    assert g.size == 15


def test_bpr_grid_is_table2():
    g = load_grid(ROOT / "grids" / "bpr-mf.toml")
    assert g.free == ["factors", "iterations", "learning_rate"]
    assert g.values["factors"] == TABLE2_FACTORS
    assert g.values["iterations"] == TABLE2_ITERATIONS
    # the table prints 8 decimals
    assert [round(v, 8) for v in g.values["learning_rate"]] == TABLE2_LR
    assert g.size == 3150
    cfg = g.configs()[0]
    assert cfg["user_reg"] == pytest.approx(cfg["learning_rate"] / 20)
    assert cfg["item_reg"] == pytest.approx(cfg["learning_rate"] / 200)
    assert len(g.configs()) == 3150


def test_all_shipped_grids_load():
    for path in (ROOT / "grids").glob("*.toml"):
        assert load_grid(path).size >= 1


def test_config_order_is_cartesian_last_fastest():
    g = parse_grid({"params": {"a": {"values": [1, 2]}, "b": {"values": ["x", "y", "z"]}}})
    assert [(c["a"], c["b"]) for c in g.configs()] == [
        (1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]
    assert list(g.frame("m")["config_id"]) == list(range(6))


def test_digits_round_decimals_and_leave_integers_integers():
    """``digits`` rounds a number to its decimals; an integer value stays an integer (16 was
    written 16.0 in configs.csv and the report)."""
    g = parse_grid({"params": {"factors": {"values": [16, 0, 32], "digits": 2},
                               "lr": {"values": [0.012345, 2.0], "digits": 2}}})
    assert g.values == {"factors": [16, 0, 32], "lr": [0.01, 2.0]}
    assert all(type(v) is int for v in g.values["factors"])


def test_single_value_grid():
    g = parse_grid({"params": {"k": {"values": [50]}}})
    assert g.size == 1 and g.configs() == [{"k": 50}]


@pytest.mark.parametrize(
    "data, field",
    [
        ({"params": {"k": {"valuez": [1]}}}, "params.k.valuez"),
        ({"parms": {}}, "parms"),
        ({"params": {"k": {"base": 2, "exponent": {"start": 0, "stop": 1, "stp": 1}}}}, "params.k.exponent.stp"),
        ({"params": {"k": {"values": [1], "round": "ceil"}}}, "params.k.round"),
        ({"params": {"k": {"values": [1, 2], "exclude": [3]}}}, "params.k.exclude"),
        ({"params": {"k": {"values": []}}}, "params.k.values"),
        ({"params": {"lr": {"values": [0.1]}}, "derived": {"reg": {"from": "lrr"}}}, "derived.reg.from"),
        ({"params": {"lr": {"values": [0.1]}}, "derived": {"reg": {"from": ["lr"]}}}, "derived.reg.from"),
        ({"params": {"k": {"values": [1], "round": ["int"]}}}, "params.k.round"),
        ({"params": {"k": {"values": ["a"], "round": "int"}}}, "params.k.values"),
        ({"params": {"k": {"values": [float("nan")], "round": "int"}}}, "params.k.values"),
        ({"params": {"k": {"values": [0.5], "digits": "two"}}}, "params.k.digits"),
        ({"params": {"k": {"values": ["x"], "digits": 2}}}, "params.k.values"),
        ({"params": {"k": {"base": 10, "exponent": {"start": 0, "stop": 1e6, "step": 1}}}},
         "params.k.exponent"),
        ({"params": {"k": {"base": 10.0, "exponent": {"start": 400, "stop": 401, "step": 1}}}},
         "params.k.exponent"),
        ({"params": {"k": {"base": 2, "exponent": {"start": 0, "stop": float("inf"), "step": 1}}}},
         "params.k.exponent"),
        ({"family": 3, "params": {"k": {"values": [1]}}}, "family"),
        # a range whose size overflows a float (AttributeError / OverflowError before)
        ({"params": {"k": {"base": 1, "exponent": {"start": -1e308, "stop": 1e308, "step": 1}}}},
         "params.k.exponent"),
        ({"params": {"k": {"base": 1, "exponent": {"start": 0, "stop": 1e300, "step": 1e-300}}}},
         "params.k.exponent"),
        ({"params": {"lr": {"values": [0.1]}}, "derived": "x"}, "derived"),
        ({"params": {"lr": {"values": [0.1]}}, "derived": ["user_reg"]}, "derived"),
    ],
)
def test_bad_grid_names_file_and_key(data, field):
    with pytest.raises(DptuneError) as err:
        parse_grid(data, "grids/bad.toml")
    assert str(err.value).startswith(f"grids/bad.toml: {field}")


@pytest.mark.parametrize(("data", "start"), [
    pytest.param({"description": 5, "params": {"k": {"values": [1]}}},
                 "description: must be a string, got 5", id="description-number"),
    pytest.param({"params": {"k": {"values": [1], "description": ["a"]}}},
                 "params.k.description: must be a string, got ['a']", id="param-description-list"),
    pytest.param({"params": {"k": {"values": [1.4, 2.6], "round": "int", "digits": 2}}},
                 'params.k.digits: not with round = "int"', id="digits-and-round-int"),
])
def test_keys_accepted_but_not_used_as_written_are_refused(data, start):
    """A description that is not text (a misplaced key) was kept as it was, and ``digits``
    beside ``round = "int"`` was ignored (values 1, 3, not 1.4, 2.6): one line naming the key."""
    with pytest.raises(DptuneError) as err:
        parse_grid(data, "grids/bad.toml")
    assert str(err.value).startswith(f"grids/bad.toml: {start}"), str(err.value)


def test_an_exponent_count_of_hundreds_of_digits_is_shown_as_a_number():
    """A step typo of 1e-300 gave a line that spelt out a 301-digit count."""
    with pytest.raises(DptuneError) as err:
        parse_grid({"params": {"k": {"base": 2, "exponent": {"start": 1, "stop": 3,
                                                             "step": 1e-300}}}}, "g.toml")
    assert str(err.value) == ("g.toml: params.k.exponent: about 2e+300 values; a grid "
                              "hyperparameter takes at most 10,000")


def test_invalid_toml_is_one_line(tmp_path):
    p = tmp_path / "g.toml"
    p.write_text("[params.k\nvalues = [1]")
    with pytest.raises(DptuneError) as err:
        load_grid(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_subgrid_around_best_clips_at_ends():
    g = load_grid(ROOT / "grids" / "bpr-mf.toml")
    best = {"factors": 1809, "iterations": 8, "learning_rate": g.values["learning_rate"][0]}
    sub = subgrid_around(g, best, radius=2)
    assert sub.values["factors"] == [640, 905, 1809]
    assert sub.values["iterations"] == [4, 6, 8, 11, 16]
    assert sub.values["learning_rate"] == g.values["learning_rate"][:3]
    assert load_grid_roundtrip(sub, ROOT) == sub.values


def load_grid_roundtrip(grid, root):
    import tomllib

    return parse_grid(tomllib.loads(grid.to_toml())).values


@given(start=st.floats(-20, 20), n=st.integers(1, 30), step=st.sampled_from([0.25, 0.5, 1.0, -0.5, -1.0]))
def test_exponent_values_count_and_endpoints(start, n, step):
    stop = start + (n - 1) * step
    vals = exponent_values(2.0, start, stop, step)
    assert len(vals) == n
    assert math.isclose(vals[0], 2.0 ** start)
    assert math.isclose(vals[-1], 2.0 ** stop, rel_tol=1e-9)


@given(st.lists(st.integers(1, 2000), min_size=1, max_size=8, unique=True),
       st.lists(st.integers(1, 50), min_size=1, max_size=5, unique=True))
def test_grid_size_is_product_and_configs_unique(ks, its):
    g = parse_grid({"params": {"k": {"values": ks}, "it": {"values": its}}})
    cfgs = g.configs()
    assert len(cfgs) == g.size == len(ks) * len(its)
    assert len({(c["k"], c["it"]) for c in cfgs}) == len(cfgs)


@pytest.mark.parametrize("base, start, stop, step", [
    (0, 0, -1, -1),  # 0 ** -1
    (-2, 0.5, 1.5, 0.5),  # a negative base to a fractional power: complex
    (10, 300, 400, 100),  # 10.0 ** 400 overflows
])
def test_exponent_grid_that_is_not_a_finite_real_number_is_one_line(tmp_path, base, start, stop,
                                                                     step):
    """A base ** exponent that is not a finite real number stops with one line naming the
    grid file and ``params.<name>.exponent``, not a traceback."""
    from dptune.errors import DptuneError

    path = tmp_path / "g.toml"
    path.write_text(f"[params.k]\nbase = {base}\n"
                    f"exponent = {{ start = {start}, stop = {stop}, step = {step} }}\n")
    with pytest.raises(DptuneError) as err:
        load_grid(path)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert str(path) in msg and "params.k.exponent" in msg and "finite real number" in msg


# --------------------------------------------------------------------------- docs/grids.md
GRIDS_DOC = ROOT / "docs" / "grids.md"


def _doc_blocks(lang: str) -> list[str]:
    """The fenced ``lang`` blocks of docs/grids.md, in order."""
    return re.findall(rf"```{lang}\n(.*?)```", GRIDS_DOC.read_text(), flags=re.S)


def _doc_table(header_start: str) -> list[list[str]]:
    """The rows of the markdown table of docs/grids.md whose header starts with
    ``header_start`` (header included, separator left out)."""
    lines = GRIDS_DOC.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[at:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return [rows[0], *rows[2:]]


def test_the_worked_example_of_docs_grids_gives_the_configurations_it_lists(tmp_path):
    """The BPR-MF grid of docs/grids.md loads, expands into exactly the configurations of the
    table below it (in order), is accepted by the bpr-mf model, and trains as the 4 units of 3
    snapshots the text says."""
    from dptune.models import get_family

    block = next(b for b in _doc_blocks("toml") if b.startswith("# file: my-bpr.toml"))
    path = tmp_path / "my-bpr.toml"
    path.write_text(block)
    g = load_grid(path)
    header, *rows = _doc_table("| config_id |")
    configs = g.frame("bpr-mf")
    assert header == list(configs.columns[1:])
    assert len(rows) == len(configs) == g.size == 12
    for row, (_, cfg) in zip(rows, configs.iterrows(), strict=True):
        assert [float(v) for v in row] == pytest.approx([float(cfg[h]) for h in header]), row
    assert g.free == ["factors", "iterations", "learning_rate"]
    assert all(isinstance(v, int) for v in g.values["iterations"])
    family = get_family("bpr-mf")
    units = family.units(family.validate(g.configs(), str(path)))
    assert [len(u) for u in units] == [3, 3, 3, 3]


def test_the_snippet_and_the_error_line_of_docs_grids_are_real(tmp_path):
    """The experiment snippet names a grid that exists, and the missing-hyperparameter line
    shown in docs/grids.md is the one dptune prints for the example without its [derived]."""
    from dptune.errors import DptuneError
    from dptune.models import get_family

    snippet = _doc_blocks("toml")[0]
    grid = re.search(r'grid = "([^"]+)"', snippet).group(1)
    assert load_grid(ROOT / "experiments" / grid).size >= 1
    block = next(b for b in _doc_blocks("toml") if b.startswith("# file: my-bpr.toml"))
    path = tmp_path / "my-bpr.toml"
    path.write_text(block.split("[derived]")[0].rsplit("\n#", 1)[0] + "\n")
    with pytest.raises(DptuneError) as err:
        get_family("bpr-mf").check(load_grid(path).configs(), source="my-bpr.toml")
    shown = next(b for b in _doc_blocks("text") if "missing hyperparameter" in b).strip()
    assert shown == f"dptune: {err.value}"


# --------------------------------------------------------------------------- refused at load
def test_a_grid_that_excludes_every_value_is_refused_at_load():
    """``exclude`` listing every value left the hyperparameter without values: the grid loaded,
    and the sweep failed only after the other algorithms' units (``no validation folds``)."""
    with pytest.raises(DptuneError) as err:
        parse_grid({"params": {"k": {"values": [5, 10], "exclude": [5, 10]}}}, "g.toml")
    assert str(err.value) == ("g.toml: params.k.exclude: excludes every value of k (5, 10); a "
                              "hyperparameter needs at least one value")
    with pytest.raises(DptuneError, match=r"^g.toml: params.k.exclude: excludes every value"):
        parse_grid({"params": {"k": {"base": 2, "exponent": {"start": 0, "stop": 0.4, "step": 0.2},
                                     "round": "int", "exclude": [1]}}}, "g.toml")


def test_a_value_written_twice_is_refused_and_rounding_merges_values():
    """``values = [10, 10]`` became one configuration without a word (a typo for 10, 100);
    values that rounding or an exponent makes equal are still merged, as documented."""
    with pytest.raises(DptuneError) as err:
        parse_grid({"params": {"k": {"values": [10, 20, 10]}}}, "g.toml")
    assert str(err.value) == "g.toml: params.k.values: lists 10 twice; a grid value is written once"
    with pytest.raises(DptuneError, match="lists 1.0 twice"):  # one number, written twice
        parse_grid({"params": {"k": {"values": [1, 1.0]}}}, "g.toml")
    merged = parse_grid({"params": {"k": {"base": 2, "exponent": {"start": 0, "stop": 0.4,
                                                                  "step": 0.2},
                                          "round": "int"}}}, "g.toml")
    assert merged.values["k"] == [1]


def test_a_grid_larger_than_the_cap_is_refused_before_it_is_expanded(tmp_path, monkeypatch):
    """The size is the product of the value counts: a grid beyond MAX_CONFIGS is one line
    giving the count and the cap, and no configuration is ever built (it hung before)."""
    from dptune.grids import MAX_CONFIGS, Grid

    monkeypatch.setattr(Grid, "configs", lambda self: pytest.fail("the grid was expanded"))
    path = tmp_path / "huge.toml"
    path.write_text(HUGE_BPR)
    with pytest.raises(DptuneError) as err:
        load_grid(path)
    assert str(err.value) == (
        f"{path}: params: 999,700,029,999 configurations (9,999 factors x 9,999 iterations x "
        "9,999 learning_rate); a grid has at most 100,000: use fewer values or a coarser "
        "exponent step")
    assert MAX_CONFIGS == 100_000 < 2**31  # the store's config_id is int32
    at_cap = {"params": {"a": {"values": list(range(100))}, "b": {"values": list(range(1000))}}}
    assert parse_grid(at_cap).size == MAX_CONFIGS
    at_cap["params"]["b"]["values"].append(1000)
    with pytest.raises(DptuneError, match=r"^g.toml: params: 100,100 configurations \(100 a x "
                                          r"1,001 b\); a grid has at most 100,000"):
        parse_grid(at_cap, "g.toml")
    # the caller that checks the values first takes the size check on itself
    assert load_grid(path, max_configs=None).size == 9999 ** 3


def test_axis_configs_hold_every_value_without_the_product():
    g = parse_grid({"params": {"a": {"values": [1, 2, 3]}, "b": {"values": ["x", "y"]}},
                    "derived": {"c": {"from": "a", "scale": 2}}})
    axis = g.axis_configs()
    assert axis == [{"a": 1, "b": "x", "c": 2.0}, {"a": 2, "b": "x", "c": 4.0},
                    {"a": 3, "b": "x", "c": 6.0}, {"a": 1, "b": "y", "c": 2.0}]
    assert all(c in g.configs() for c in axis)
    assert len(load_grid(ROOT / "grids" / "bpr-mf.toml").axis_configs()) == 1 + 14 + 13 + 14


@pytest.mark.parametrize(("spec", "start"), [
    pytest.param({"base": "2", "exponent": {"start": 1, "stop": 3, "step": 1}},
                 "g.toml: params.k.base: must be a finite number, got '2'", id="base-text"),
    pytest.param({"base": True, "exponent": {"start": 1, "stop": 3, "step": 1}},
                 "g.toml: params.k.base: must be a finite number, got True", id="base-bool"),
    pytest.param({"base": 2, "exponent": {"start": "1", "stop": 3, "step": 1}},
                 "g.toml: params.k.exponent.start: must be a finite number, got '1'",
                 id="start-text"),
    pytest.param({"base": 2, "exponent": {"start": 1, "stop": 3, "step": "1"}},
                 "g.toml: params.k.exponent.step: must be a finite number, got '1'",
                 id="step-text"),
    pytest.param({"base": 2, "exponent": {"start": 1, "stop": float("inf"), "step": 1}},
                 "g.toml: params.k.exponent.stop: must be a finite number, got inf", id="stop-inf"),
])
def test_exponent_numbers_are_numbers_not_text(spec, start):
    """``base = "2"`` was read as the number 2: a string is refused, naming the key."""
    with pytest.raises(DptuneError) as err:
        parse_grid({"params": {"k": spec}}, "g.toml")
    assert str(err.value).startswith(start), str(err.value)


@pytest.mark.parametrize(("derived", "start"), [
    pytest.param({"reg": {"from": "lr", "scale": "0.05"}},
                 "g.toml: derived.reg.scale: must be a finite number, got '0.05'", id="scale-text"),
    pytest.param({"reg": {"from": "sim", "scale": 2}},
                 "g.toml: derived.reg.from: 'sim' has a value that is not a number: "
                 "params.sim.values holds 'cosine'; a derived", id="text-source"),
    # a number quoted by mistake: the source's field is named, and the likely fix
    pytest.param({"reg": {"from": "q", "scale": 2}},
                 "g.toml: derived.reg.from: 'q' has a value that is not a number: "
                 "params.q.values holds '0.1', a string (write the number without quotes)",
                 id="quoted-number"),
])
def test_a_derived_hyperparameter_needs_numbers(derived, start):
    """A text scale was read as a number; a text source failed with a TypeError traceback when
    the grid was expanded."""
    with pytest.raises(DptuneError) as err:
        parse_grid({"params": {"lr": {"values": [0.1]}, "sim": {"values": ["cosine"]},
                               "q": {"values": ["0.1", 0.05]}},
                    "derived": derived}, "g.toml")
    assert str(err.value).startswith(start), str(err.value)


_GRID_VALUES = st.one_of(
    st.integers(-3, 3), st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, math.nan]),
    st.booleans(), st.sampled_from(["a", "b", "1"]), st.booleans().map(np.bool_),
    st.integers(-3, 3).map(np.int64), st.sampled_from([0.0, 1.0]).map(np.float64))


@given(st.lists(_GRID_VALUES, max_size=8))
def test_the_hashed_value_key_agrees_with_pairwise_sameness(values):
    """Repeats are found in one pass through a hashed key; it must say "the same value"
    exactly where the pairwise rule does (equal, and both or neither a bool; NaN equals
    nothing), which stays the oracle."""
    from dptune.grids import _first_repeat, _same, value_key

    keys = [value_key(v) for v in values]
    for i, v in enumerate(values):
        for j, w in enumerate(values):
            if i != j:
                assert (keys[i] == keys[j]) == _same(v, w), (v, w)
    oracle = next((i for i, v in enumerate(values) if any(_same(v, w) for w in values[:i])),
                  None)
    assert _first_repeat(values) == oracle


def test_a_long_value_list_is_checked_for_repeats_in_one_pass(monkeypatch):
    """10,000 values are checked without comparing every pair (the pairwise check took 18 s
    for three such lists); a repeat at the end is still found."""
    import dptune.grids as grids

    monkeypatch.setattr(grids, "_same", lambda v, w: pytest.fail("compared pairwise"))
    values = list(range(10_000))
    assert len(parse_grid({"params": {"a": {"values": values, "exclude": [5]}}}).configs()) \
        == 9_999
    with pytest.raises(DptuneError, match=r"params\.a\.values: lists 7 twice"):
        parse_grid({"params": {"a": {"values": [*values, 7]}}}, "g.toml")


@given(st.lists(st.lists(_GRID_VALUES, min_size=0, max_size=4), min_size=0, max_size=3),
       st.booleans())
def test_a_configuration_by_id_is_the_expanded_grids(value_lists, derive):
    """``Grid.config(i)`` decodes the id instead of expanding the grid; the expansion stays the
    oracle: the same values (of the same types: a ``True`` is not a ``1``), keys in the same
    order, negative ids from the end, and ``IndexError`` outside the grid."""
    from dptune.grids import Grid

    values = {f"h{i}": vals for i, vals in enumerate(value_lists)}
    numeric = [n for n, vals in values.items()
               if all(isinstance(v, (int, float, np.integer, np.floating))
                      and not isinstance(v, (bool, np.bool_)) for v in vals)]
    derived = {"d": (numeric[0], 0.5)} if derive and numeric else {}
    grid = Grid(values=values, derived=derived)
    expanded = grid.configs()

    def same(a: dict, b: dict) -> bool:
        return list(a) == list(b) and all(
            type(a[k]) is type(b[k]) and (a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]))
            for k in a)

    for i, cfg in enumerate(expanded):
        assert same(grid.config(i), cfg)
        assert same(grid.config(i - len(expanded)), cfg)
    for bad in (len(expanded), -len(expanded) - 1):
        with pytest.raises(IndexError):
            grid.config(bad)


def test_a_configuration_is_taken_without_expanding_a_large_grid(monkeypatch):
    """A unit of a grid of 100,000 configurations takes its own few by id: the grid is not
    expanded (which took a second, for every unit of the sweep)."""
    from dptune.grids import Grid

    grid = parse_grid({"params": {"a": {"values": list(range(1000))},
                                  "b": {"values": [0.5 * i for i in range(100)]}},
                       "derived": {"c": {"from": "b", "scale": 2.0}}})
    monkeypatch.setattr(Grid, "configs", lambda self: pytest.fail("expanded the grid"))
    assert grid.config(0) == {"a": 0, "b": 0.0, "c": 0.0}
    assert grid.config(12_345) == {"a": 123, "b": 22.5, "c": 45.0}
    assert grid.config(99_999) == {"a": 999, "b": 49.5, "c": 99.0}
