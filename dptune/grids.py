"""Hyperparameter grids as data: TOML files under ``grids/`` expanded into configurations.

A grid file names one hyperparameter per ``[params.<name>]`` table, either as explicit
``values = [...]`` or as powers of a base over an exponent range (Anelli et al. 2019, Table 2):

    value_j = base ** (start + j * step),  j = 0, 1, ...  while the exponent stays within [start, stop]

optionally rounded to the nearest integer (``round = "int"``; duplicates after rounding are merged,
keeping the first), with ``exclude`` listing values to drop where the paper's table deviates from
the formula. ``[derived]`` names hyperparameters tied to another one by a scale factor
(``user_reg = { from = "learning_rate", scale = 0.05 }``: the paper's lr/20). Configurations are the
cartesian product of the free hyperparameters in file order; ``config_id`` is the index in it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from dptune.errors import input_error, plain, read_toml
from dptune.vocab import value_norm

_TOP_KEYS = {"family", "description", "params", "derived"}
_PARAM_KEYS = {"values", "base", "exponent", "round", "exclude", "digits", "description"}
_EXP_KEYS = {"start", "stop", "step"}
_DERIVED_KEYS = {"from", "scale"}
_ROUND = {"int", "none"}
#: Most values one hyperparameter may have (a typo in an exponent step cannot ask for billions).
MAX_VALUES = 10_000
#: Most configurations a grid may have (the product of its value counts), checked before the
#: grid is expanded: the sweep expands a grid into one dict per configuration (validation,
#: configs.csv, the plan of every unit) and stores per-user results of each configuration on
#: every fold and metric@N, so a larger grid (this is about 30 times the paper's BPR-MF grid of
#: 3,150, far below the store's int32 ``config_id``) would only hang or exhaust the machine
#: before anything is trained.
MAX_CONFIGS = 100_000


@dataclass(frozen=True)
class Grid:
    """An expanded grid: free hyperparameter values in order, plus derived ones.

    ``values`` maps each free hyperparameter to its ordered list of values; ``derived`` maps a
    derived hyperparameter to ``(source, scale)``; ``source`` is the file it came from.
    """

    values: dict[str, list[Any]]
    derived: dict[str, tuple[str, float]] = field(default_factory=dict)
    family: str | None = None
    source: str = "<memory>"

    @property
    def free(self) -> list[str]:
        """Names of the free (swept) hyperparameters, in file order."""
        return list(self.values)

    @property
    def size(self) -> int:
        """Number of configurations: the product of the value counts."""
        return math.prod(len(v) for v in self.values.values())

    def configs(self) -> list[dict[str, Any]]:
        """All configurations in cartesian-product order (last hyperparameter varies fastest)."""
        names = self.free
        return [self._with_derived(dict(zip(names, combo, strict=True)))
                for combo in itertools.product(*(self.values[n] for n in names))]

    def config(self, config_id: int) -> dict[str, Any]:
        """Configuration ``config_id`` alone: ``configs()[config_id]`` (the same values, keys in
        the same order) without expanding the grid, so that a unit of a grid of 100,000
        configurations does not build them all to train its own few. Its value of each free
        hyperparameter is a digit of the id in the mixed radix of the value counts (the last
        hyperparameter varies fastest); an id outside the grid raises ``IndexError`` as the
        list does (a negative one counts from the end)."""
        size = self.size
        i = operator.index(config_id)
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError("list index out of range")
        names = self.free
        picks: list[Any] = []
        for name in reversed(names):
            vals = self.values[name]
            i, j = divmod(i, len(vals))
            picks.append(vals[j])
        return self._with_derived(dict(zip(names, reversed(picks), strict=True)))

    def axis_configs(self) -> list[dict[str, Any]]:
        """Configurations that hold every value of every free hyperparameter at least once, one
        hyperparameter varied at a time from the first configuration (``1 + sum(n_h - 1)`` of
        them, not the product): the values of a hyperparameter can be checked on them without
        expanding the grid, since they do not depend on the others (derived ones depend only on
        their source, which varies with them). Empty when a hyperparameter has no value."""
        if any(not vals for vals in self.values.values()):
            return []
        first = {n: vals[0] for n, vals in self.values.items()}
        out = [self._with_derived(dict(first))]
        for name, vals in self.values.items():
            out += [self._with_derived({**first, name: v}) for v in vals[1:]]
        return out

    def _with_derived(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """``cfg`` with its derived hyperparameters (source value x scale) added."""
        for name, (src, scale) in self.derived.items():
            cfg[name] = cfg[src] * scale
        return cfg

    def frame(self, algorithm: str) -> pd.DataFrame:
        """``configs.csv`` rows: ``algorithm, config_id`` and one column per hyperparameter."""
        df = pd.DataFrame(self.configs())
        df.insert(0, "config_id", range(len(df)))
        df.insert(0, "algorithm", algorithm)
        return df

    def fingerprint(self) -> str:
        """Short hash of the expanded grid, to refuse resuming a sweep over a different grid."""
        blob = json.dumps(
            {"values": self.values, "derived": self.derived}, sort_keys=True, default=repr
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_toml(self) -> str:
        """Serialise as a grid file with explicit values (used by ``dptune subgrid``)."""
        lines = []
        if self.family:
            lines.append(f'family = "{self.family}"')
        for name, vals in self.values.items():
            lines += ["", f"[params.{name}]", f"values = [{', '.join(_toml_scalar(v) for v in vals)}]"]
        if self.derived:
            lines += ["", "[derived]"]
            for name, (src, scale) in self.derived.items():
                lines.append(f'{name} = {{ from = "{src}", scale = {_toml_scalar(scale)} }}')
        return "\n".join(lines) + "\n"


def _toml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return json.dumps(str(v))


def exponent_values(base: float, start: float, stop: float, step: float) -> list[float]:
    """``base ** e`` for e = start, start + step, ... while e stays within [start, stop].

    The count is ``floor((stop - start) / step + 1e-9) + 1`` so that floating-point steps hit
    the end point (e.g. [3.321, 10.821] step 0.5 has 16 exponents).
    """
    if not all(math.isfinite(x) for x in (base, start, stop, step)):
        raise ValueError("base, start, stop and step must be finite numbers")
    if step == 0 or (stop - start) * step < 0:
        raise ValueError("step must be non-zero and point from start to stop")
    span = (stop - start) / step  # inf when the range overflows a float: too many values
    count = math.floor(span + 1e-9) + 1 if math.isfinite(span) else math.inf
    if count > MAX_VALUES:
        # a step typo (1e-300) gives a count of hundreds of digits: shown as a number, not spelt
        many = (f"more than {MAX_VALUES:,}" if not math.isfinite(count)
                else f"{count:,}" if count < 10**15 else f"about {float(count):.3g}")
        raise ValueError(f"{many} values; a grid hyperparameter takes at most {MAX_VALUES:,}")
    count = int(count)
    out = []
    for j in range(count):
        e = start + j * step
        try:
            v = base ** e
        except (ZeroDivisionError, OverflowError):
            v = math.inf
        if isinstance(v, complex) or not math.isfinite(v):
            raise ValueError(f"{plain(base)} ** {plain(e)} is not a finite real number (a zero "
                             "base with a negative exponent, a negative base with a fractional "
                             "one, or too large)")
        out.append(v)
    return out


def _check_keys(source: str, prefix: str, table: dict, allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise input_error(
                source, f"{prefix}{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})"
            )


def _check_text(source: str, where: str, value: Any) -> None:
    """A ``description`` (free text, optional): a string when given; a number or a table there
    is a misplaced key, not text."""
    if value is not None and not isinstance(value, str):
        raise input_error(source, where, f"must be a string, got {plain(value)}")


def _finite(v: Any) -> float:
    """``v`` as a finite float (a bool or text is not a number); else ``ValueError``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(v)
    try:
        f = float(v)
    except OverflowError:  # an integer beyond a float's range
        raise ValueError(v) from None
    if not math.isfinite(f):
        raise ValueError(v)
    return f


def _rounded(v: Any, digits: int) -> int | float:
    """``v`` rounded to ``digits`` decimals, a finite number (:func:`_finite`); an integer
    stays one (``16``, not ``16.0`` in configs.csv and the report)."""
    f = _finite(v)
    return v if isinstance(v, int) else round(f, digits)


def _real(source: str, where: str, v: Any) -> float:
    """A grid number (an exponent's base, start, stop or step, a derived scale) as a float: a
    finite int or float as written, never text (``base = "2"``) or a bool; else the one-line
    error ``<source>: <where>: must be a finite number, got <v>``."""
    try:
        return _finite(v)
    except ValueError:
        raise input_error(source, where, f"must be a finite number, got {plain(v)}") from None


def _same(v: Any, w: Any) -> bool:
    """Whether grid values ``v`` and ``w`` are one value: equal, and both or neither a bool
    (Python's ``True == 1`` and ``False == 0.0``, but a grid's ``true`` is not its ``1``)."""
    return v == w and _is_bool(v) == _is_bool(w)


def value_key(v: Any) -> tuple[Any, ...]:
    """A hashable key with ``value_key(v) == value_key(w)`` exactly when :func:`_same` ``(v, w)``
    (so ``true`` and ``1`` differ), so that a list of values is checked for repeats, and a
    value found in its list, in one pass (a value list of thousands compared pairwise took
    seconds). A NaN equals nothing, and an unhashable value (a list, refused later as a value)
    is taken as distinct: each call gives them a key of their own."""
    if _is_bool(v):
        return ("bool", bool(v))
    try:
        hash(v)
    except TypeError:
        return ("distinct", object())
    if v != v:  # NaN
        return ("distinct", object())
    return ("value", v)


def _first_repeat(values: list[Any]) -> int | None:
    """The position of the first value of ``values`` that is :func:`_same` as an earlier one
    (None: every value is distinct)."""
    seen: set[tuple[Any, ...]] = set()
    for i, v in enumerate(values):
        k = value_key(v)
        if k in seen:
            return i
        seen.add(k)
    return None


def _is_bool(v: Any) -> bool:
    """A bool of Python or numpy (a value read back from a table is numpy's)."""
    import numpy as np

    return isinstance(v, (bool, np.bool_))


def _expand_param(source: str, name: str, spec: Any) -> list[Any]:
    where = f"params.{name}"
    if not isinstance(spec, dict):
        raise input_error(source, where, "must be a table with 'values' or 'base' and 'exponent'")
    _check_keys(source, f"{where}.", spec, _PARAM_KEYS)
    rounding = spec.get("round", "none")
    if not isinstance(rounding, str) or rounding not in _ROUND:
        raise input_error(source, f"{where}.round", f"must be one of {sorted(_ROUND)}")
    if rounding == "int" and "digits" in spec:  # one rounding each: digits would be ignored
        raise input_error(source, f"{where}.digits", 'not with round = "int", which rounds to '
                          "integers: give one of them")
    _check_text(source, f"{where}.description", spec.get("description"))
    if "values" in spec:
        if "base" in spec or "exponent" in spec:
            raise input_error(source, where, "give either 'values' or 'base'+'exponent', not both")
        raw = spec["values"]
        if not isinstance(raw, list) or not raw:
            raise input_error(source, f"{where}.values", "must be a non-empty list")
        # a value written twice is a typo (10, 10 for 10, 100), not a wish for one value;
        # values an exponent or rounding makes equal are merged below, as documented
        twice = _first_repeat(raw)
        if twice is not None:
            raise input_error(source, f"{where}.values", f"lists {plain(raw[twice])} twice; a grid "
                              "value is written once")
    else:
        if "base" not in spec or "exponent" not in spec:
            raise input_error(source, where, "needs 'values', or 'base' and 'exponent'")
        exp = spec["exponent"]
        if not isinstance(exp, dict):
            raise input_error(source, f"{where}.exponent", "must be a table {start, stop, step}")
        _check_keys(source, f"{where}.exponent.", exp, _EXP_KEYS)
        missing = _EXP_KEYS - set(exp)
        if missing:
            raise input_error(source, f"{where}.exponent", f"missing {sorted(missing)}")
        numbers_ = (_real(source, f"{where}.base", spec["base"]),
                    *(_real(source, f"{where}.exponent.{k}", exp[k])
                      for k in ("start", "stop", "step")))
        try:
            raw = exponent_values(*numbers_)
        except ValueError as err:
            raise input_error(source, f"{where}.exponent", str(err).splitlines()[0]) from None
    digits = spec.get("digits")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                               or not 0 <= digits <= 15):
        raise input_error(source, f"{where}.digits",
                          f"must be an integer from 0 to 15, got {plain(digits)}")
    try:
        if rounding == "int":
            vals = [int(math.floor(_finite(v) + 0.5)) for v in raw]
        elif digits is not None:
            vals = [_rounded(v, digits) for v in raw]
        else:
            vals = list(raw)
    except (TypeError, ValueError):
        what = "round = \"int\"" if rounding == "int" else "digits"
        raise input_error(source, f"{where}.values",
                          f"{what} needs finite numbers, got {plain(raw)}") from None
    for v in vals:
        if not isinstance(v, (int, float, str, bool)):
            raise input_error(source, f"{where}.values", f"unsupported value {plain(v)}")
    excl = spec.get("exclude", [])
    if not isinstance(excl, list):
        raise input_error(source, f"{where}.exclude", "must be a list")
    present = {value_key(v) for v in vals}
    for e in excl:
        if value_key(e) not in present:
            raise input_error(source, f"{where}.exclude", f"{plain(e)} is not a value of the grid")
    out: list[Any] = []
    dropped = {value_key(e) for e in excl}
    for v in vals:  # true is not 1 (Python's ==), neither as a value nor as an exclusion
        if value_key(v) not in dropped:
            out.append(v)
            dropped.add(value_key(v))
    if not out:  # no configuration: the sweep would skip the algorithm only after the others
        raise input_error(source, f"{where}.exclude", f"excludes every value of {name} "
                          f"({', '.join(map(plain, excl))}); a hyperparameter needs at least one "
                          "value")
    return out


def check_size(grid: Grid, max_configs: int = MAX_CONFIGS, shown: str | None = None) -> None:
    """The one-line error ``<grid file>: params: N configurations (a x b x ... values of ...);
    a grid has at most <max_configs>`` when the grid is larger than :data:`MAX_CONFIGS`;
    computed from the value counts, without expanding the grid. ``shown``: how the message
    names the file (default: ``grid.source``)."""
    size = grid.size
    if size <= max_configs:
        return
    counts = " x ".join(f"{len(v):,} {n}" for n, v in grid.values.items())
    raise input_error(shown or grid.source, "params", f"{size:,} configurations ({counts}); a grid has "
                      f"at most {max_configs:,}: use fewer values or a coarser exponent step")


def parse_grid(data: dict, source: str = "<memory>", *,
               max_configs: int | None = MAX_CONFIGS) -> Grid:
    """Validate a parsed grid table and expand each hyperparameter's values (not the grid);
    unknown keys raise an error naming the key, and a grid of more than ``max_configs``
    configurations is refused (:func:`check_size`; ``None``: the caller checks the size
    itself, after checking the values)."""
    _check_keys(source, "", data, _TOP_KEYS)
    params = data.get("params")
    if not isinstance(params, dict) or not params:
        raise input_error(source, "params", "a grid needs at least one [params.<name>] table")
    values = {name: _expand_param(source, name, spec) for name, spec in params.items()}
    derived: dict[str, tuple[str, float]] = {}
    derived_table = data.get("derived", {})  # "derived = []" or "= false" is no table either
    if not isinstance(derived_table, dict):
        raise input_error(source, "derived", "must be a table of derived hyperparameters "
                          "([derived] name = { from = ..., scale = ... })")
    for name, spec in derived_table.items():
        where = f"derived.{name}"
        if not isinstance(spec, dict):
            raise input_error(source, where, "must be a table {from, scale}")
        _check_keys(source, f"{where}.", spec, _DERIVED_KEYS)
        src = spec.get("from")
        if not isinstance(src, str) or src not in values:
            raise input_error(source, f"{where}.from", f"{plain(src)} is not a free hyperparameter")
        if name in values:
            raise input_error(source, where, "is also a free hyperparameter")
        text = next((v for v in values[src] if isinstance(v, bool)
                     or not isinstance(v, numbers.Real)), None)
        if text is not None:  # a derived value is source x scale: "cosine" x 0.5 is nothing
            # "0.1": a number quoted by mistake (it reads as one)
            quoted = isinstance(text, str) and isinstance(value_norm(text), float)
            raise input_error(source, f"{where}.from", f"{plain(src)} has a value that is not a "
                              f"number: params.{src}.values holds {plain(text)}"
                              + (", a string (write the number without quotes)" if quoted
                                 else "") + "; a derived hyperparameter is its source times "
                              "the scale")
        derived[name] = (src, _real(source, f"{where}.scale", spec.get("scale", 1.0)))
    family = data.get("family")
    if family is not None and not isinstance(family, str):
        raise input_error(source, "family", f"must be a string, got {plain(family)}")
    _check_text(source, "description", data.get("description"))
    grid = Grid(values=values, derived=derived, family=family, source=source)
    if max_configs is not None:
        check_size(grid, max_configs)
    return grid


def load_grid(path: str | Path, *, max_configs: int | None = MAX_CONFIGS,
              shown: str | None = None) -> Grid:
    """Read and expand a grid TOML file; errors name the file and the key (``max_configs``:
    :func:`parse_grid`). ``shown``: how the errors name the file (an experiment's grid as the
    experiment writes it, as the errors of its values do; default: ``path``); the grid's
    ``source`` is ``path`` either way."""
    path = Path(path)
    name = str(path) if shown is None else shown
    grid = parse_grid(read_toml(path, "grid file", shown=name), name, max_configs=max_configs)
    return replace(grid, source=str(path))


def restrict(grid: Grid, keep: dict[str, list[Any]]) -> Grid:
    """A sub-grid keeping, for each named hyperparameter, only the listed values (in grid order)."""
    kept = {n: {value_key(k) for k in ks} for n, ks in keep.items()}
    values = {n: ([v for v in vals if value_key(v) in kept[n]] if n in keep else list(vals))
              for n, vals in grid.values.items()}
    return Grid(values=values, derived=dict(grid.derived), family=grid.family, source=grid.source)


def subgrid_around(grid: Grid, best: dict[str, Any], radius: int = 2) -> Grid:
    """The paper's sub-grid: for each free hyperparameter the best value and its +-radius grid
    neighbours (clipped at the ends of the value list)."""
    keep = {}
    for name, vals in grid.values.items():
        if name not in best:
            continue
        i = next((j for j, v in enumerate(vals) if _same(v, best[name])), None)
        if i is None:  # as list.index: the best value must be one of the grid's
            raise ValueError(f"{plain(best[name])} is not a value of {name}")
        keep[name] = vals[max(0, i - radius): i + radius + 1]
    return restrict(grid, keep)


# ---------------------------------------------------------------------------------------------
# Grid edges: a best value at an end of its grid means the optimum may lie outside it


def _number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def grid_edges(values: Mapping[str, Sequence[Any]], best: Mapping[str, Any]) -> dict[str, str]:
    """``{hyperparameter: "lowest" | "highest"}`` for every numeric hyperparameter of ``best``
    whose value is the minimum or the maximum of its grid ``values`` (at least 2 distinct values;
    categorical hyperparameters have no edge)::

        >>> grid_edges({"factors": [8, 16, 32], "lr": [0.1, 0.2]}, {"factors": 32, "lr": 0.1})
        {'factors': 'highest', 'lr': 'lowest'}
        >>> grid_edges({"factors": [8, 16, 32], "sim": ["cos", "jac"]}, {"factors": 16, "sim": "cos"})
        {}
    """
    out: dict[str, str] = {}
    for name, vals in values.items():
        if name not in best:
            continue
        nums = {float(v) for v in vals if _number(v)}
        v = best[name]
        if len(nums) < 2 or len(nums) != len(set(map(repr, vals))) or not _number(v):
            continue
        if float(v) == min(nums):
            out[name] = "lowest"
        elif float(v) == max(nums):
            out[name] = "highest"
    return out


def edge_warning(algorithm: str, params: Mapping[str, Any], edges: Mapping[str, str]) -> str | None:
    """One sentence naming the hyperparameters on an edge, or ``None`` when there is none."""
    if not edges:
        return None
    parts = [f"{h}={params[h]} is the {side} value of the grid" for h, side in edges.items()]
    return (f"{algorithm}: the best configuration sits on the edge of the grid ({'; '.join(parts)}); "
            "the optimum may lie outside it, consider widening the grid")
