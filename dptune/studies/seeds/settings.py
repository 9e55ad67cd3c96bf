"""Settings of the split-seed study: the ``[seeds]`` table, the data-split seeds and the
configuration each algorithm runs with.

The seeds are ``s_i = derive_seed(split seed, "seed-study", i)``; the default configuration of
an algorithm is the grid's middle value of each free hyperparameter (index
``floor((n - 1) / 2)`` of its ``n`` values in grid order), unless ``[seeds.configs]`` or the
caller names another one. Every bad value is a one-line input error naming the file and key,
or the flag (``--grid``, ``--config-id``, ``--grid-seeds``) of an override. Each rule is one
function (:func:`check_algorithm`, :func:`check_config`, :func:`check_grid_seeds`,
:func:`check_once`) that both routes call with where the value came from, so that a problem
reads the same on both. A list names each entry once (``grid_algorithms = ["userknn",
"userknn"]`` doubled every row of the grid part); ``figure_metrics`` names at least one metric,
whose names are case-insensitive as everywhere in dptune (``NDCG`` is ``ndcg``:
:func:`dptune.vocab.metric_name`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dptune.config import Experiment, parse_experiment
from dptune.data._split import MAX_FOLDS
from dptune.errors import check_int, input_error, read_toml
from dptune.models import get_family
from dptune.sweeper._plan import derive_seed
from dptune.vocab import metric_name

__all__ = [
    "SPLITS",
    "SeedSettings",
    "parse_seed_settings",
    "load_seed_experiment",
    "check_algorithm",
    "check_config",
    "check_grid_seeds",
    "check_once",
    "validate_settings",
    "check_choices",
    "split_seeds",
    "default_config",
    "resolve_configs",
]

#: Split kinds of the study, in report order.
SPLITS: tuple[str, ...] = ("holdout", "cv")
#: The most data-split seeds a study takes: each seed splits the data and trains every chosen
#: configuration again (the default is 20, as in the paper), and the study lists its seeds
#: before it starts, so a typo such as 99999999999 would fill the memory before any progress.
MAX_SEEDS = 10_000

_SEED_KEYS = {"n_seeds", "train_ratio", "folds", "configs", "figure_metrics", "grid_algorithms",
              "grid_seeds", "cache"}


@dataclass(frozen=True)
class SeedSettings:
    """The ``[seeds]`` table of a seeds experiment TOML (every key optional).

    ``configs`` maps an algorithm name to a ``config_id`` (int) or a table of hyperparameter
    values (missing ones take the grid's middle value); ``grid_algorithms`` ``None`` means the
    experiment's KNN algorithms, ``()`` skips the grid part; ``grid_seeds`` ``None`` means all
    ``n_seeds``; ``cache`` ``None`` means ``results/seeds-<experiment name>``;
    ``figure_metrics`` ``None`` means nDCG and Precision where the experiment evaluates them,
    else its first two metrics (:meth:`figure_metrics_of`). The names of ``figure_metrics`` are
    kept as the vocabulary's keys (:func:`dptune.vocab.metric_name`: ``NDCG`` is ``ndcg``),
    however the file or the caller writes them.
    """

    n_seeds: int = 20
    train_ratio: float = 0.8
    folds: int = 5
    configs: Mapping[str, Any] = field(default_factory=dict)
    figure_metrics: tuple[str, ...] | None = None
    grid_algorithms: tuple[str, ...] | None = None
    grid_seeds: int | None = None
    cache: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.figure_metrics, (list, tuple)):
            object.__setattr__(self, "figure_metrics", tuple(
                metric_name(m) if isinstance(m, str) else m for m in self.figure_metrics))

    def figure_metrics_of(self, evaluated: Sequence[str]) -> list[str]:
        """The metrics of the figure, the pooled test and the report's table among the
        ``evaluated`` ones: those given, else nDCG and Precision where evaluated, else the
        first two (an experiment without Precision was refused for a key it never set)."""
        if self.figure_metrics is not None:
            return [m for m in self.figure_metrics if m in evaluated]
        return [m for m in ("ndcg", "precision") if m in evaluated] or list(evaluated[:2])

    def split_name(self, split: str) -> str:
        """How a split kind of :data:`SPLITS` is named: ``Hold-out``, ``5-fold CV``."""
        return "Hold-out" if split == "holdout" else f"{self.folds}-fold CV"

    def holdout_shares(self) -> str:
        """The hold-out's training / test percentages, ``80/20`` (``75.5/24.5``, ``0.1/99.9``):
        one text for every place that names them (the settings table rounded 0.755 to 76/24
        and 0.001 to 0/100 while the caption and the figure said 75.5/24.5 and 0.1/99.9)."""
        train = round(100.0 * self.train_ratio, 9)  # 100 x 0.07 is 7.000000000000001
        return f"{train:g}/{round(100.0 - train, 9):g}"

    def design_text(self) -> str:
        """The two splits in words: ``random 80/20 hold-out (HO) vs 5-fold CV``."""
        return f"random {self.holdout_shares()} hold-out (HO) vs {self.folds}-fold CV"


def check_algorithm(exp: Experiment, name: str, source: object, field: str | None) -> None:
    """The one-line error ``<source>: <field>: no algorithm named 'x' in <experiment file>
    (a, b, ...)`` unless ``exp`` has an algorithm ``name``. ``source``/``field`` say where the
    name came from: the experiment file and its key (``seeds.grid_algorithms``,
    ``seeds.configs.<alg>``), or a flag (``--grid``, ``--config-id`` and the algorithm)."""
    names = [a.name for a in exp.algorithms]
    if name not in names:
        raise input_error(source, field, f"no algorithm named {name!r} in {exp.source} "
                          f"({', '.join(names)})")


def check_config(exp: Experiment, alg: str, spec: Any, source: object, field: str | None
                 ) -> int | dict[str, Any]:
    """One configuration choice ``alg = spec``, as a ``config_id`` (``int``) of the grid of
    ``alg`` or a table of hyperparameter values (``dict``; its keys are checked by
    :func:`resolve_configs`). ``spec`` may be a ``config_id``, ``{"config_id": id}`` or a
    table; ``alg`` must name an algorithm of ``exp`` (:func:`check_algorithm`). Else one line
    ``<source>: <field>: <problem>``, e.g. ``config_id 99 is not in 0..14 (the configurations
    of the grid of userknn)``."""
    check_algorithm(exp, alg, source, field)
    if isinstance(spec, dict) and set(spec) == {"config_id"}:
        spec = spec["config_id"]
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        n = exp.grids[alg].size
        if not 0 <= int(spec) < n:
            raise input_error(source, field, f"config_id {spec} is not in 0..{n - 1} (the "
                              f"configurations of the grid of {alg})")
        return int(spec)
    if not isinstance(spec, dict):
        raise input_error(source, field, f"expected a config_id or a table, got {spec!r}")
    return spec


def check_grid_seeds(value: Any, source: object, field: str | None) -> int:
    """``value`` as the number of seeds of the grid part: 0 (skip it) or at least 2 (a
    stability across seeds needs two); else one line ``<source>: <field>: <problem>``."""
    n = check_int(value, source, field, 0, MAX_SEEDS)
    if n == 1:
        raise input_error(source, field, "needs 0 (skip) or at least 2 seeds")
    return n


def check_once(names: Any, source: object, field: str | None, what: str) -> None:
    """The one-line error ``<source>: <field>: names x twice; give each <what> once`` when a
    list of names (algorithms, metrics) holds one twice: the study would silently do its work
    twice (a grid algorithm named twice doubled its rows of ``seeds_grid.csv`` and the seeds
    counted in ``seeds_grid_stability.csv``). ``--grid`` gives this refusal too."""
    names = list(names)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise input_error(source, field, f"names {', '.join(twice)} twice; give each {what} "
                          "once")


def _check_lists(st: SeedSettings, source: object) -> None:
    """The list settings whatever the route: each name once, and a figure metric at least
    (an empty ``figure_metrics`` fell back on other metrics, silently)."""
    if st.figure_metrics is not None and not st.figure_metrics:
        raise input_error(source, "seeds.figure_metrics", "names no metric; the figure and the "
                          "pooled test need at least one")
    check_once(st.figure_metrics or (), source, "seeds.figure_metrics", "metric")
    check_once(st.grid_algorithms or (), source, "seeds.grid_algorithms", "algorithm")


def _str_list(value: Any, source: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise input_error(source, key, f"must be a list of names, got {value!r}")
    return tuple(value)


def parse_seed_settings(table: Any, source: str) -> SeedSettings:
    """Validate a ``[seeds]`` table; unknown keys and bad types are one-line errors."""
    if table is None:
        return SeedSettings()
    if not isinstance(table, dict):
        raise input_error(source, "seeds", "must be a table")
    for key in table:
        if key not in _SEED_KEYS:
            raise input_error(source, f"seeds.{key}",
                              f"unknown field (allowed: {', '.join(sorted(_SEED_KEYS))})")
    kw: dict[str, Any] = {}
    if "n_seeds" in table:
        kw["n_seeds"] = check_int(table["n_seeds"], source, "seeds.n_seeds", 2, MAX_SEEDS)
    if "folds" in table:
        kw["folds"] = check_int(table["folds"], source, "seeds.folds", 2, MAX_FOLDS)
    if "grid_seeds" in table:
        kw["grid_seeds"] = check_grid_seeds(table["grid_seeds"], source, "seeds.grid_seeds")
    if "train_ratio" in table:
        r = table["train_ratio"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < 1:
            raise input_error(source, "seeds.train_ratio", f"must be in (0, 1), got {r!r}")
        kw["train_ratio"] = float(r)
    if "figure_metrics" in table:
        kw["figure_metrics"] = _str_list(table["figure_metrics"], source, "seeds.figure_metrics")
    if "grid_algorithms" in table:
        kw["grid_algorithms"] = _str_list(table["grid_algorithms"], source, "seeds.grid_algorithms")
    if "configs" in table:
        if not isinstance(table["configs"], dict):
            raise input_error(source, "seeds.configs", "must be a table: algorithm = config_id or {...}")
        kw["configs"] = dict(table["configs"])
    if "cache" in table:
        if not isinstance(table["cache"], str):
            raise input_error(source, "seeds.cache", "must be a path string")
        kw["cache"] = table["cache"]
    st = SeedSettings(**kw)
    _check_lists(st, source)
    return st


def load_seed_experiment(path: str | Path) -> tuple[Experiment, SeedSettings]:
    """Read a seeds experiment: an ordinary experiment TOML plus an optional ``[seeds]`` table.

    The ``[seeds]`` table is taken out before :func:`dptune.config.parse_experiment` validates
    the rest, so the same file format (data, evaluation, analysis, algorithms) applies. The
    table is then checked whole against the experiment (:func:`validate_settings`, and the
    configuration of every ``[seeds.configs]`` entry), so that a bad setting is one line
    naming the file and key before the study computes anything.
    """
    path = Path(path)
    data = read_toml(path, "experiment file")
    table = data.pop("seeds", None)
    exp = parse_experiment(data, str(path), path)
    st = parse_seed_settings(table, str(path))
    validate_settings(exp, st)
    resolve_configs(exp, st.configs)
    return exp, st


def validate_settings(exp: Experiment, st: SeedSettings) -> None:
    """Check the settings against the experiment: figure metrics evaluated, algorithms named,
    each list naming each entry once (and one figure metric at least)."""
    src = exp.source
    _check_lists(st, src)
    for m in st.figure_metrics or ():
        if m not in exp.evaluation.metrics:
            raise input_error(src, "seeds.figure_metrics", f"{m!r} is not an evaluated metric")
    for a in st.grid_algorithms or ():
        check_algorithm(exp, a, src, "seeds.grid_algorithms")
    for a in st.configs:
        check_algorithm(exp, a, src, f"seeds.configs.{a}")


def check_choices(exp: Experiment, configs: Mapping[str, Any], source: str) -> None:
    """Check configurations chosen outside the experiment file (``--config-id ALG=ID``, the
    ``configs`` argument) with :func:`check_config`, as the file's ``[seeds.configs]`` are;
    a problem is one line naming ``source`` and the algorithm, not the file's
    ``seeds.configs`` key that the choice replaces. A table of hyperparameter values is
    checked by :func:`resolve_configs`."""
    for alg, spec in configs.items():
        check_config(exp, alg, spec, source, alg)


def split_seeds(exp: Experiment, n_seeds: int) -> list[int]:
    """The data-split seeds: ``s_i = derive_seed(split seed, "seed-study", i)``, ``i < n_seeds``.

    Seed ``i`` does not depend on ``n_seeds``, so a study with more seeds reuses the first ones.
    """
    return [derive_seed(exp.split_seed, "seed-study", i) for i in range(n_seeds)]


def default_config(exp: Experiment, algorithm: str) -> tuple[int, dict[str, Any]]:
    """``(config_id, configuration)`` of the grid's middle value of every free hyperparameter.

    For a hyperparameter with values ``x_0 .. x_{n-1}`` (grid order) the middle is
    ``x_m``, ``m = floor((n - 1) / 2)`` (the lower middle for even ``n``).
    """
    grid = exp.grids[algorithm]
    want = {h: vals[(len(vals) - 1) // 2] for h, vals in grid.values.items()}
    for cid, cfg in enumerate(grid.configs()):
        if all(cfg[h] == v for h, v in want.items()):
            return cid, cfg
    raise input_error(exp.source, f"algorithms.{algorithm}", "grid has no configuration")  # pragma: no cover


def resolve_configs(exp: Experiment, chosen: Mapping[str, Any] | None = None
                    ) -> dict[str, tuple[int, dict[str, Any]]]:
    """The configuration each algorithm runs with: ``{algorithm: (config_id, config)}``.

    ``chosen[algorithm]`` may be a grid ``config_id`` (int), ``{"config_id": id}``, or a table
    of free hyperparameter values (the rest from :func:`default_config`; derived
    hyperparameters recomputed as ``source * scale``). ``config_id`` is -1 for a configuration
    that is not in the grid.
    """
    chosen = dict(chosen or {})
    src = exp.source
    for a in chosen:
        check_algorithm(exp, a, src, f"seeds.configs.{a}")
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for alg in exp.algorithms:
        grid = exp.grids[alg.name]
        configs = grid.configs()
        where = f"seeds.configs.{alg.name}"
        spec = chosen.get(alg.name)
        if spec is not None:
            spec = check_config(exp, alg.name, spec, src, where)
        if spec is None:
            cid, cfg = default_config(exp, alg.name)
        elif isinstance(spec, int):
            cid, cfg = spec, configs[spec]
        else:
            _, cfg = default_config(exp, alg.name)
            cfg = dict(cfg)
            for h, v in spec.items():
                if h not in grid.free:
                    raise input_error(src, f"{where}.{h}",
                                      f"not a free hyperparameter of the grid ({', '.join(grid.free)})")
                cfg[h] = v
            for name, (source, scale) in grid.derived.items():
                cfg[name] = cfg[source] * scale
            cid = next((i for i, c in enumerate(configs) if c == cfg), -1)
        get_family(alg.type).validate([cfg], f"{src}: {where}")
        out[alg.name] = (cid, cfg)
    return out
