"""Experiment configuration: a TOML file validated into an :class:`Experiment`.

Every field has a default except ``name`` and ``[[algorithms]]``; a misspelt or unknown field is
an error naming the file and the field (with a suggestion), never silently ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune.data._fetch import KNOWN_DATASETS
from dptune.data._options import _check_columns, _check_sep
from dptune.data._split import MAX_FOLDS, SPLIT_METHODS
from dptune.errors import (
    SPELT_DIGITS,
    DptuneError,
    check_int,
    check_int64,
    check_path,
    did_you_mean,
    input_error,
    is_finite,
    plain,
    read_toml,
    suggest,
)
from dptune.grids import MAX_CONFIGS, Grid, check_size, load_grid
from dptune.models._adapters import is_known_type
from dptune.vocab import DEVICES, FORMATS, METRICS, SEED_RANGE, metric_name

if TYPE_CHECKING:
    from dptune.analysis.options import AnalysisOptions

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # used with fullmatch: no trailing newline
#: Metadata of the dataclass fields that :func:`parse_experiment` fills in itself (a resolved
#: path, the experiment file's name): not settings, so an experiment file may not write them.
_INTERNAL = {"internal": True}

#: Valid ranges of the experiment's numbers, checked when it is read (before any work): seeds
#: are :data:`dptune.vocab.SEED_RANGE`;
#: a top-N list longer than the store's int16 ``cutoff`` column can hold is refused;
MAX_CUTOFF = 2**15 - 1
#: no more folds than the split's int8 fold labels hold (``MAX_FOLDS``, 127, of
#: :mod:`dptune.data._split`), so that a number the split would refuse at run time is refused
#: here, naming the file;
#: worker processes (``[sweep] jobs``, ``--jobs``): more than this only exhausts the machine.
MAX_JOBS = 1024


@dataclass(frozen=True)
class DataConfig:
    """Where the ratings come from and which optional pre-filters apply.

    ``source`` is a named data set (``ml-latest-small``, ``ml-100k``, ``ml-1m``) or a file path
    as written in the experiment file (kept so for the manifest, the fingerprint and the
    reports; :attr:`Experiment.data_file` is where it is read). An own file is described by ``columns`` (our name -> the file's column name, or 0-based
    position when ``header = false``; without ``rating`` the data is implicit feedback, without
    ``timestamp`` the temporal splits are refused), ``sep`` and ``header``.
    """

    source: str = "ml-latest-small"
    format: str = "auto"
    min_rating: float | None = None
    kcore: int = 0
    columns: dict[str, str | int] | None = None
    sep: str | None = None
    header: bool | None = None

    def reader_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`dptune.data.load_dataset` for an own file."""
        return {"columns": self.columns, "sep": self.sep, "header": self.header}


#: [data] fields of own files: left out of the manifest and fingerprint while unset, so that
#: experiments written before they existed keep their fingerprint (their results stay resumable).
_OWN_FILE_FIELDS = ("columns", "sep", "header")


@dataclass(frozen=True)
class SplitConfig:
    """Test split and cross-validation on its training part."""

    method: str = "temporal"  # temporal | random | leave-one-out
    train_ratio: float = 0.8
    min_user_interactions: int = 5
    folds: int = 10
    fold_method: str = "user_stratified"  # user_stratified | random | user_temporal
    seed: int | None = None


@dataclass(frozen=True)
class EvaluationConfig:
    """Protocol "all unrated items", relevance threshold and cutoffs."""

    cutoffs: tuple[int, ...] = (1, 5, 10)
    relevance_threshold: float = 4.0
    metrics: tuple[str, ...] = METRICS
    novelty: str = "relevance-aware"  # relevance-aware | relevance-unaware
    user_block: int = 1024
    test_split: bool = True


@dataclass(frozen=True)
class SweepConfig:
    """How the sweep runs: parallel jobs, the optuna storage (default: SQLite in results), the
    device that trains BPR-MF and evaluates every model (``cpu`` or ``cuda``) and the
    ``budget`` (:func:`parse_budget`; ``None``: every unit of every grid)."""

    jobs: int = 1
    storage: str | None = None
    device: str = "cpu"
    budget: int | str | None = None


#: The forms a budget takes, for messages.
BUDGET_FORMS = ('a number of units per algorithm (45), a fraction of each grid ("20%") or a '
                'wall-clock time ("2h", "90m", "1h30m")')
_TIME_RE = re.compile(r"^(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m(?:in)?)?(?:(\d+(?:\.\d*)?)s)?$")


@dataclass(frozen=True)
class Budget:
    """How much of each grid a sweep runs: ``kind`` ``"units"`` (``amount`` units per algorithm),
    ``"fraction"`` (``amount`` in (0, 1] of each grid's units) or ``"time"`` (``amount``
    seconds of projected wall-clock time for the whole run, from the sweep's cost model,
    :mod:`dptune.sweeper._cost`); ``text`` is the budget as written, ``source`` and ``key``
    where (the experiment file and ``sweep.budget``, or ``--budget``), for messages. The sweep
    stops after whole rounds of the design order (:mod:`dptune.sweeper.design`)."""

    kind: str
    amount: float
    text: str
    source: str = field(default="", compare=False)
    key: str | None = field(default=None, compare=False)


def parse_budget(value: Any, source: str | Path, field_: str | None) -> Budget:
    """A budget from the experiment file (``[sweep] budget``) or the ``--budget`` flag: an
    integer >= 1 (units per algorithm, also written as a string of digits), ``"P%"`` with
    0 < P <= 100 (a fraction of each grid) or a time ``"<h>h<m>m<s>s"`` (any of the three parts,
    at least one, more than 0 seconds in all: ``"2h"``, ``"90m"``, ``"1h30m"``, ``"45s"``). Any
    other value is one error naming ``source`` and ``field_``."""
    def bad(why: str) -> Exception:
        return input_error(source, field_, f"{why}; a budget is {BUDGET_FORMS}")

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise bad(f"{plain(value)} is not a budget")
    too_many = (f"more than any grid holds (at most {MAX_CONFIGS:,} configurations); leave "
                "the budget out to run every unit")
    if isinstance(value, int):
        if value < 1:
            raise bad(f"{_count(value, 'units')}: needs at least 1")
        if value > MAX_CONFIGS:  # no grid holds more units (and float() of 10**400 overflows)
            raise bad(f"{_count(value, 'units')}: {too_many}")
        return Budget("units", float(value), str(value), str(source), field_)
    text = value.strip().lower().replace(" ", "")
    # decimal digits only: '²' is a digit to str.isdigit but no number to int(), and int()
    # refuses to read more than 4,300 digits
    if text.isdecimal():
        if len(text.lstrip("0")) > len(str(MAX_CONFIGS)):
            raise bad(f"{value.strip()[:24]}{'...' if len(value.strip()) > 24 else ''} units: "
                      f"{too_many}")
        return parse_budget(int(text), source, field_)
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            raise bad(f"{plain(value)} is not a percentage") from None
        if not 0.0 < pct <= 100.0:
            raise bad(f"{plain(value)}: a fraction must be more than 0% and at most 100%")
        return Budget("fraction", pct / 100.0, value.strip(), str(source), field_)
    m = _TIME_RE.match(text)
    if not text or m is None or not any(m.groups()):
        raise bad(f"{plain(value)} is not a budget")
    seconds = sum(float(g) * unit for g, unit in zip(m.groups(), (3600.0, 60.0, 1.0),
                                                      strict=True) if g)
    if not seconds > 0:
        raise bad(f"{plain(value)}: a time budget must be more than 0 seconds")
    if not math.isfinite(seconds):  # hundreds of digits: a float's infinity, not a time
        raise bad(f"{value.strip()[:24]}...: a time budget must be a finite time")
    return Budget("time", seconds, value.strip(), str(source), field_)


@dataclass(frozen=True)
class AlgorithmConfig:
    """One algorithm to sweep: a display ``name``, a model ``type`` and its grid file."""

    name: str
    type: str
    grid: str = ""  # empty: the model takes no hyperparameter (one configuration)
    grid_path: str = field(default="", metadata=_INTERNAL)  # ``grid`` resolved


#: Top-level settings that do not change the per-user results, left out of
#: :meth:`Experiment.fingerprint` (and of the set-up differences a fingerprint mismatch names).
NOT_FINGERPRINTED: tuple[str, ...] = ("analysis", "sweep", "description", "source", "name")


@dataclass(frozen=True)
class Experiment:
    """A validated experiment; ``grids`` holds each algorithm's expanded grid."""

    name: str
    source: str
    seed: int = 42
    description: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    split: SplitConfig = field(default_factory=SplitConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    analysis: AnalysisOptions = field(default_factory=lambda: _options_class()())
    sweep: SweepConfig = field(default_factory=SweepConfig)
    algorithms: tuple[AlgorithmConfig, ...] = ()
    grids: dict[str, Grid] = field(default_factory=dict, compare=False)
    #: ``data.source`` resolved by :func:`parse_experiment` (empty: ``data.source`` itself).
    data_path: str = field(default="", compare=False, metadata=_INTERNAL)

    @property
    def data_file(self) -> str:
        """Where the data is read from: a named data set's name, or the ``data.source`` file
        resolved from the experiment file's folder (for a table not read from a file: as
        written, so relative to the working directory)."""
        return self.data_path or self.data.source

    @property
    def split_seed(self) -> int:
        """Seed of the fold assignment (defaults to the experiment seed)."""
        return self.seed if self.split.seed is None else self.split.seed

    @property
    def analysis_seed(self) -> int:
        """Seed of the pair sampling (defaults to the experiment seed)."""
        return self.seed if self.analysis.seed is None else self.analysis.seed

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every setting (for the manifest)."""
        d = asdict(self)
        d.pop("grids", None)
        d.pop("data_path", None)  # machine-specific; ``data.source`` is the setting
        for key in _OWN_FILE_FIELDS:
            if d["data"].get(key) is None:
                d["data"].pop(key, None)
        return d

    def fingerprint(self) -> str:
        """Hash of everything that changes the per-user results (not analysis or sweep settings)."""
        d = self.to_dict()
        for k in NOT_FINGERPRINTED:
            d.pop(k, None)
        d["grids"] = {a: g.fingerprint() for a, g in self.grids.items()}
        if self.sweep.device != "cpu":  # BPR-MF trained on a device is another set of models
            d["device"] = self.sweep.device
        for a in d["algorithms"]:
            a.pop("grid_path", None)
            a.pop("grid", None)
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _settings(cls: type) -> dict[str, Any]:
    """The fields of config dataclass ``cls`` that an experiment file may write (not the
    internal ones :func:`parse_experiment` fills in), by name."""
    return {f.name: f for f in fields(cls) if not f.metadata.get("internal")}


def _build(cls: type, table: Any, source: str, prefix: str) -> Any:
    """Instantiate a config dataclass from a TOML table, rejecting unknown keys and bad types."""
    if not isinstance(table, dict):
        raise input_error(source, prefix.rstrip("."), "must be a table")
    known = _settings(cls)
    kwargs = {}
    for key, val in table.items():
        if key not in known:
            raise input_error(source, f"{prefix}{key}", "unknown field" + suggest(key, list(known)))
        default = known[key].default
        if isinstance(default, tuple):
            if not isinstance(val, list):
                raise input_error(source, f"{prefix}{key}", "must be a list")
            val = tuple(val)
        elif isinstance(default, bool):
            if not isinstance(val, bool):
                raise input_error(source, f"{prefix}{key}", "must be true or false")
        elif isinstance(default, int) and not isinstance(default, bool):
            if not isinstance(val, int) or isinstance(val, bool):
                raise input_error(source, f"{prefix}{key}", f"must be an integer, got "
                                  f"{plain(val)}")
        elif isinstance(default, float):
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                raise input_error(source, f"{prefix}{key}", f"must be a number, got "
                                  f"{plain(val)}")
            if not is_finite(val):  # an integer beyond a float's range (float() overflows)
                raise input_error(source, f"{prefix}{key}", f"must be a finite number, got "
                                  f"{plain(val)}")
            val = float(val)
        elif (isinstance(default, str) or known[key].type == "str") and not isinstance(val, str):
            raise input_error(source, f"{prefix}{key}", f"must be a string, got {plain(val)}")
        kwargs[key] = val
    try:
        return cls(**kwargs)
    except TypeError as err:  # a required field is missing
        missing = re.findall(r"'(\w+)'", str(err))
        raise input_error(source, f"{prefix}{missing[0] if missing else '?'}",
                          "required field is missing") from None


def _options_class() -> type[AnalysisOptions]:
    """:class:`dptune.AnalysisOptions`, imported on first use (``import dptune.config`` stays
    light: the analysis package loads scipy)."""
    from dptune.analysis.options import AnalysisOptions

    return AnalysisOptions


def _analysis(table: Any, source: str) -> AnalysisOptions:
    """The ``[analysis]`` table as :class:`AnalysisOptions` (errors name ``analysis.<field>``)."""
    if not isinstance(table, dict):
        raise input_error(source, "analysis", "must be a table")
    return _options_class().from_mapping(table, source, "analysis.")


def _choice(source: str, where: str, value: Any, allowed: tuple[str, ...]) -> None:
    """The one-line error ``'<value>' is not one of <allowed>`` (with a close match to suggest,
    ``did you mean``) unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise input_error(source, where, f"{plain(value)} is not one of {', '.join(allowed)}"
                          + did_you_mean(str(value), list(allowed)))


#: Errors of the operating system or of :mod:`pathlib` on a path that cannot name a file:
#: too long (``OSError``), holding a NUL character (``ValueError``), ``~user`` of no such user
#: (``RuntimeError``).
_PATH_ERRORS = (OSError, ValueError, RuntimeError)


def _bad_path(source: str, field: str, what: str, path: str, err: Exception) -> Exception:
    """The one-line error of a path that no file can have (:data:`_PATH_ERRORS`): ``path``
    shortened to its first 60 characters, and the reason."""
    shown = repr(path if len(path) <= 60 else path[:60] + "...")
    why = getattr(err, "strerror", None) or str(err).rstrip(".") or type(err).__name__
    return input_error(source, field, f"{what} {shown} cannot name a file ({why})")


def _resolve(path: str, config_path: Path, source: str, field: str) -> Path:
    """A grid path of the experiment file ``config_path``: absolute, or relative to the folder
    of that file (whatever the working directory); a missing file is one error naming ``field``
    (with the path to write when the file exists relative to the working directory instead),
    and so is a path no file can have (too long, a NUL character, ``~user`` of no user)."""
    try:
        return _find_grid(path, config_path, source, field)
    except _PATH_ERRORS as err:
        raise _bad_path(source, field, "grid file", path, err) from None


def _find_grid(path: str, config_path: Path, source: str, field: str) -> Path:
    """:func:`_resolve`, whose path errors it lets through."""
    p = Path(path).expanduser()
    found = p if p.is_absolute() else config_path.parent / p
    if found.is_file():
        return found.resolve()
    if found.is_dir():
        raise input_error(source, field, f"grid file {plain(path)} is a directory "
                          f"({found.resolve()}), not a grid file")
    if found.exists():  # a device or a pipe (/dev/null): there, but no file to read
        raise input_error(source, field, f"grid file {plain(path)} ({found.resolve()}) is not a "
                          "regular file")
    hint = ""
    if not p.is_absolute() and (Path.cwd() / p).is_file():
        rel = os.path.relpath(Path.cwd() / p, config_path.parent.resolve())
        rel = rel if not rel.startswith(f"..{os.sep}..{os.sep}..") else str((Path.cwd() / p).resolve())
        hint = f"; it exists relative to the working directory: write grid = {json.dumps(rel)}"
    where = "" if p.is_absolute() else f" (relative paths start at the experiment file's folder, {config_path.parent.resolve()})"
    raise input_error(source, field, f"grid file {plain(path)} not found{where}{hint}")


def _load_grid(path: Path, a: AlgorithmConfig) -> Grid:
    """The grid file ``path`` of algorithm ``a``, its values checked before its size: each
    hyperparameter's values against the model on :meth:`Grid.axis_configs` (every value once,
    not the product, so a bad value of a huge grid is named at once), then the number of
    configurations (:func:`dptune.grids.check_size`), before the grid is ever expanded. The
    model's check of whole configurations (values that only clash together, constructors that
    refuse a configuration) follows before the sweep
    (:func:`dptune.sweeper.validate_experiment`); so does the error of a type without a model."""
    from dptune.models._families import get_family  # loads the models' compiled kernels

    grid = load_grid(path, max_configs=None, shown=a.grid)
    try:
        family = get_family(a.type)
    except DptuneError:
        family = None
    if family is not None:
        family.validate(grid.axis_configs(), a.grid)
    check_size(grid, shown=a.grid)
    return grid


def _data_path(d: DataConfig, config_path: Path | None, source: str, check: bool) -> str:
    """Where ``data.source`` is read: a named data set as is; a file path absolute, or relative
    to the folder of the experiment file ``config_path`` (like a grid path), as written when
    there is none (a table not read from a file: the working directory). With ``check``, a file
    missing there is one error naming ``data.source`` and the path tried (with the path to write
    when the file exists relative to the working directory instead, as it was once read). A
    path no file can have (too long, a NUL character, ``~user`` of no user) is one error."""
    if d.source in KNOWN_DATASETS or config_path is None:
        return d.source
    try:
        return _find_data(d, config_path, source, check)
    except _PATH_ERRORS as err:
        raise _bad_path(source, "data.source", "data file", d.source, err) from None


def _find_data(d: DataConfig, config_path: Path, source: str, check: bool) -> str:
    """:func:`_data_path` of a file path, whose path errors it lets through."""
    p = Path(d.source).expanduser()
    found = p if p.is_absolute() else config_path.parent / p
    if check and found.is_dir():  # "" and "." name the experiment's own folder
        raise input_error(source, "data.source", f"{plain(d.source)} is a folder "
                          f"({found.resolve()}), not a data file nor a known data set "
                          f"({', '.join(KNOWN_DATASETS)})")
    if found.exists() or not check:
        return str(found.resolve())
    hint = ""
    if not p.is_absolute() and (Path.cwd() / p).exists():
        rel = os.path.relpath(Path.cwd() / p, config_path.parent.resolve())
        hint = (f"; it exists relative to the working directory: write source = "
                f"{json.dumps(Path(rel).as_posix())}")
    where = "" if p.is_absolute() else (f" (a relative path starts at the experiment file's "
                                         f"folder: tried {found.resolve()})")
    raise input_error(source, "data.source",
                      f"{plain(d.source)} is neither a known data set "
                      f"({', '.join(KNOWN_DATASETS)}) nor a file{where}{hint}")


def _check_int64(exp: Experiment, src: str) -> None:
    """Every integer setting at most :data:`dptune.errors.INT_MAX` (int64's largest; after the
    settings' own bounds, which are lower where a setting has one): the store records them in
    its manifest and fingerprint, JSON that could not write one of thousands of digits, and no
    count of a sweep comes near."""
    for attr, cls in _TABLES:
        for name, f in _settings(cls).items():
            val = getattr(getattr(exp, attr), name)
            if isinstance(f.default, int) and not isinstance(f.default, bool) \
                    and isinstance(val, numbers.Integral):
                check_int64(val, src, f"{attr}.{name}")


def _validate(exp: Experiment, src: str) -> None:
    s, e, a = exp.split, exp.evaluation, exp.analysis
    if not isinstance(exp.description, str):  # free text: a number or a table is a misplaced key
        raise input_error(src, "description", f"must be a string, got {plain(exp.description)}")
    _choice(src, "split.method", s.method, SPLIT_METHODS)
    _choice(src, "split.fold_method", s.fold_method, ("user_stratified", "random", "user_temporal"))
    if s.folds < 2:
        raise input_error(src, "split.folds", "needs at least 2 folds")
    if s.folds > MAX_FOLDS:
        raise input_error(src, "split.folds", f"at most {MAX_FOLDS:,} folds (the split's fold "
                          f"labels are 8-bit integers), got {_count(s.folds)}")
    if s.seed is not None:
        check_int(s.seed, src, "split.seed", SEED_RANGE[0], SEED_RANGE[1])
    if not 0.0 < s.train_ratio < 1.0:
        raise input_error(src, "split.train_ratio", "must be between 0 and 1")
    if s.min_user_interactions < 1:
        raise input_error(src, "split.min_user_interactions", "must be at least 1")
    if not e.cutoffs or any(isinstance(c, bool) or not isinstance(c, int) or c < 1
                            for c in e.cutoffs):  # true is an int to Python, not a cutoff
        raise input_error(src, "evaluation.cutoffs", "must be a non-empty list of positive integers")
    if max(e.cutoffs) > MAX_CUTOFF:
        raise input_error(src, "evaluation.cutoffs", f"at most {MAX_CUTOFF:,} (the longest "
                          f"top-N list the store holds), got {_count(max(e.cutoffs))}")
    if not is_finite(e.relevance_threshold):
        raise input_error(src, "evaluation.relevance_threshold",
                          f"must be a finite number, got {plain(e.relevance_threshold)}")
    if len(set(e.cutoffs)) != len(e.cutoffs):
        raise input_error(src, "evaluation.cutoffs", "has duplicates")
    if not e.metrics:
        raise input_error(src, "evaluation.metrics", "must not be empty: name at least one of "
                          f"{', '.join(METRICS)} (or leave it out for all of them)")
    for m in e.metrics:
        _choice(src, "evaluation.metrics", m, METRICS)
    if twice := sorted({m for m in e.metrics if e.metrics.count(m) > 1}, key=METRICS.index):
        raise input_error(src, "evaluation.metrics", f"has duplicates ({', '.join(twice)})")
    _choice(src, "evaluation.novelty", e.novelty, ("relevance-aware", "relevance-unaware"))
    if e.user_block < 1:
        raise input_error(src, "evaluation.user_block", "must be positive")
    # the [analysis] options are validated by AnalysisOptions (parse time); only their
    # agreement with the evaluation is checked here
    _choice(src, "analysis.primary_metric", a.primary_metric, tuple(e.metrics))
    for name, members in a.families:  # an experiment's metrics are dptune's
        for m in members:
            _choice(src, f"analysis.families.{name}", m, METRICS)
    if a.primary_cutoff not in e.cutoffs:
        raise input_error(src, "analysis.primary_cutoff", f"{a.primary_cutoff} is not in evaluation.cutoffs")
    check_int(exp.sweep.jobs, src, "sweep.jobs", 1, MAX_JOBS)
    storage = exp.sweep.storage
    if storage is not None and (not isinstance(storage, str) or not storage.strip()):
        raise input_error(src, "sweep.storage", "must be an optuna storage URL or a *.journal "
                          "file path (a non-empty string; leave it out for the default SQLite "
                          f"file of the results directory), got {plain(storage)}")
    if exp.sweep.budget is not None:
        parse_budget(exp.sweep.budget, src, "sweep.budget")
    _choice(src, "sweep.device", exp.sweep.device, DEVICES)
    _validate_data(exp.data, src)
    _check_int64(exp, src)


def _count(n: int, unit: str = "") -> str:
    """An integer as a message shows a count: with thousands separators and its ``unit``
    (``5,000 units``), or by its size when it has hundreds of digits
    (:func:`dptune.errors.plain`: ``an integer of 401 digits``)."""
    return plain(n) if abs(n) >= 10**SPELT_DIGITS else f"{n:,}" + (f" {unit}" if unit else "")


def _validate_data(d: DataConfig, src: str) -> None:
    """[data]: the format, the pre-filters and the description of an own file (columns, sep,
    header)."""
    _choice(src, "data.format", d.format, FORMATS)
    if d.kcore < 0:
        raise input_error(src, "data.kcore", "must be >= 0")
    if d.min_rating is not None and (isinstance(d.min_rating, bool)
                                     or not isinstance(d.min_rating, (int, float))
                                     or not is_finite(d.min_rating)):
        raise input_error(src, "data.min_rating", f"must be a finite number, got "
                          f"{plain(d.min_rating)}")
    if d.header is not None and not isinstance(d.header, bool):
        raise input_error(src, "data.header", f"must be true or false, got {plain(d.header)}")
    _check_sep(src, d.sep, prefix="data.")
    _check_columns(src, d.columns, d.header, prefix="data.")
    if d.columns is not None and not d.columns:
        raise input_error(src, "data.columns", "is empty; map at least user and item")


def parse_experiment(data: dict, source: str = "<memory>", config_path: Path | None = None,
                     *, check_data: bool = True) -> Experiment:
    """Validate a parsed experiment table; a relative grid path is read from the folder of
    ``config_path`` (default ``source``; for a table not read from a file, ``"<memory>"``, that
    is the working directory). A relative ``data.source`` file is read from the folder of
    ``config_path`` when one is given (and must exist there, unless ``check_data`` is false),
    else from the working directory (:attr:`Experiment.data_file`)."""
    data_base = config_path
    config_path = config_path or Path(source)
    top = set(_settings(Experiment)) - {"grids", "source"}
    for key in data:
        if key == "data_path":  # the resolved data.source, set here: never read from the file
            raise input_error(source, key, "unknown field: the data is named by source in the "
                              '[data] table ([data] source = "<data set or file>")')
        if key not in top:
            raise input_error(source, key, "unknown field" + suggest(key, sorted(top)))
    if "name" not in data:
        raise input_error(source, "name", "required field is missing")
    name = _check_name(data["name"], source, "name")
    seed = check_int(data.get("seed", 42), source, "seed", SEED_RANGE[0], SEED_RANGE[1])
    algos_raw = data.get("algorithms")
    if not isinstance(algos_raw, list) or not algos_raw:
        raise input_error(source, "algorithms", "needs at least one [[algorithms]] entry")
    algos, grids = [], {}
    for i, raw in enumerate(algos_raw):
        a = _build(AlgorithmConfig, raw, source, f"algorithms[{i}].")
        _check_algorithm(a, i, source, grids)
        grids[a.name], a = _read_grid(a, i, config_path, source)
        algos.append(a)
    exp = Experiment(
        name=name,
        source=source,
        seed=seed,
        description=data.get("description", ""),
        data=_build(DataConfig, data.get("data", {}), source, "data."),
        split=_build(SplitConfig, data.get("split", {}), source, "split."),
        evaluation=_build(EvaluationConfig, _metric_names(data.get("evaluation", {})), source,
                          "evaluation."),
        analysis=_analysis(data.get("analysis", {}), source),
        sweep=_build(SweepConfig, data.get("sweep", {}), source, "sweep."),
        algorithms=tuple(algos),
        grids=grids,
    )
    _validate(exp, source)
    return replace(exp, data_path=_data_path(exp.data, data_base, source, check_data))


def _metric_names(evaluation: Any) -> Any:
    """``[evaluation]`` with its ``metrics`` as the vocabulary's keys (``NDCG`` is ``ndcg``:
    :func:`dptune.vocab.metric_name`), as every other place that reads a metric's name; any
    other value is left for the checks to name."""
    if isinstance(evaluation, dict) and isinstance(evaluation.get("metrics"), list):
        return {**evaluation, "metrics": [metric_name(m) if isinstance(m, str) else m
                                          for m in evaluation["metrics"]]}
    return evaluation


#: Longest experiment or algorithm name: a name is part of file names (``results/<name>``,
#: ``<algorithm>__<fold>__<unit>.parquet`` and its set-aside ``~N`` copies), which most file
#: systems cap at 255 bytes; a longer one failed with "File name too long" mid-sweep.
MAX_NAME = 100


def _check_name(name: object, source: str, where: str) -> str:
    """An experiment's or an algorithm's name (``where``), usable in file names: ASCII letters,
    digits, '.', '_' or '-', all of it (no final newline), at most :data:`MAX_NAME` of them."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise input_error(source, where, "must be ASCII letters (a-z, A-Z), digits, '.', '_' or "
                          f"'-', starting with a letter or digit; got {plain(name)}")
    if len(name) > MAX_NAME:
        raise input_error(source, where, f"has {len(name)} characters, at most {MAX_NAME}: it "
                          "is part of the names of the files the sweep writes")
    return name


def _check_algorithm(a: AlgorithmConfig, i: int, source: str, seen: Mapping[str, Any]) -> None:
    """``algorithms[i]``: its name (unique among ``seen``, usable in part names) and its type."""
    _check_name(a.name, source, f"algorithms[{i}].name")
    if "__" in a.name:  # a part is named <algorithm>__<fold>__<unit>.parquet
        raise input_error(source, f"algorithms[{i}].name", f"{plain(a.name)} holds '__', which "
                          "separates the algorithm, fold and unit in the names of its results")
    if a.name in seen:
        raise input_error(source, f"algorithms[{i}].name",
                          f"duplicate algorithm name {plain(a.name)}")
    if not isinstance(a.type, str) or not is_known_type(a.type):
        raise input_error(source, f"algorithms[{i}].type",
                          f"{plain(a.type)} is not userknn, itemknn, bpr-mf, cornac:<ModelClass>, "
                          "implicit:<model>, python:<package.module>:<Class> or a registered "
                          "model name")
    if not isinstance(a.grid, str):  # as a file's; a number failed inside pathlib (TypeError)
        raise input_error(source, f"algorithms[{i}].grid", "must be the grid file's path as a "
                          f"string (empty for no hyperparameter), got {type(a.grid).__name__}")


def _read_grid(a: AlgorithmConfig, i: int, config_path: Path,
               source: str) -> tuple[Grid, AlgorithmConfig]:
    """``algorithms[i]``'s grid, read from its file (relative to ``config_path``'s folder), and
    the algorithm with the file's resolved path; no grid file: one configuration."""
    if not a.grid:  # no hyperparameter: one configuration
        return Grid(values={}, source="<no grid>"), a
    gpath = _resolve(a.grid, config_path, source, f"algorithms[{i}].grid")
    return _load_grid(gpath, a), replace(a, grid_path=str(gpath))


#: The settings tables of an experiment and their classes, as :func:`check_experiment` checks
#: the types of an experiment built in Python.
_TABLES = (("data", DataConfig), ("split", SplitConfig), ("evaluation", EvaluationConfig),
           ("sweep", SweepConfig))


def _check_settings(exp: Experiment, source: str) -> None:
    """The types of an experiment's settings built in Python, as :func:`_build` checks those of
    a file (a Python or numpy number of either kind where a file's is one; a list or a tuple
    where a file's is a list), so that ``SplitConfig(folds="3")`` is one line naming
    ``split.folds``, not a ``TypeError`` of the range checks. Fields without a typed default
    (``split.seed``, ``data.min_rating``, ...) are checked by :func:`_validate`."""
    for attr, cls in _TABLES:
        table = getattr(exp, attr)
        if not isinstance(table, cls):
            raise input_error(source, attr, f"must be a dptune.{cls.__name__}, got "
                              f"{type(table).__name__}")
        for name, f in _settings(cls).items():
            default, val, where = f.default, getattr(table, name), f"{attr}.{name}"
            if isinstance(default, tuple):
                ok = isinstance(val, (list, tuple))
                want = "a list"
            elif isinstance(default, bool):
                ok, want = isinstance(val, bool), "true or false"
            elif isinstance(default, int):
                ok = isinstance(val, numbers.Integral) and not isinstance(val, bool)
                want = "an integer"
            elif isinstance(default, float):
                ok = isinstance(val, numbers.Real) and not isinstance(val, bool)
                want = "a number"
            elif isinstance(default, str):
                ok, want = isinstance(val, str), "a string"
            else:
                continue
            if not ok:
                raise input_error(source, where, f"must be {want}, got {plain(val)}")


def check_experiment(exp: Experiment) -> Experiment:
    """An :class:`Experiment` built in Python (``dptune.Experiment(...)``, or changed with
    ``dataclasses.replace``) checked as :func:`parse_experiment` checks a file, before any work:
    its name and seed, every algorithm's name and type, every setting; an algorithm whose grid
    ``exp.grids`` lacks has it read from its grid file (a relative path from the folder of
    ``exp.source`` when that is a file, else from the working directory). Returns the
    experiment with every grid; a bad field is one line naming it."""
    if not isinstance(exp, Experiment):
        raise input_error("experiment", None, f"expected a dptune.Experiment, got "
                          f"{type(exp).__name__}")
    if not isinstance(exp.source, (str, os.PathLike)):
        raise input_error("experiment", "source", "must be the experiment file's path or a "
                          f"label (a str), got {type(exp.source).__name__}")
    source = str(exp.source) if exp.source else "<memory>"
    _check_name(exp.name, source, "name")
    check_int(exp.seed, source, "seed", SEED_RANGE[0], SEED_RANGE[1])
    _check_settings(exp, source)
    if not isinstance(exp.algorithms, (list, tuple)):
        raise input_error(source, "algorithms", "must be a list of dptune.AlgorithmConfig, got "
                          f"{type(exp.algorithms).__name__}")
    if not exp.algorithms:
        raise input_error(source, "algorithms", "needs at least one algorithm")
    grids: dict[str, Grid] = {}
    algos = []
    for i, a in enumerate(exp.algorithms):
        if not isinstance(a, AlgorithmConfig):
            raise input_error(source, f"algorithms[{i}]", "must be a dptune.AlgorithmConfig, "
                              f"got {type(a).__name__}")
        _check_algorithm(a, i, source, grids)
        if a.name in exp.grids:
            grids[a.name] = exp.grids[a.name]
        else:
            grids[a.name], a = _read_grid(a, i, Path(source), source)
        algos.append(a)
    exp = replace(exp, algorithms=tuple(algos), grids=grids)
    _validate(exp, source)
    return exp


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment TOML file; a relative grid path and a relative data file
    (``data.source``) are read from the experiment file's folder (not the working directory); a
    bad field is one error line naming the file and the field.

    Example (from the repository's root)::

        >>> exp = load_experiment("experiments/quickstart.toml")
        >>> exp.name, exp.split.folds, exp.analysis.pairs, [a.name for a in exp.algorithms]
        ('quickstart', 3, 1000, ['userknn', 'itemknn', 'bpr-mf'])
    """
    check_path(path, "load_experiment", "path", "the experiment file's path")
    path = Path(path)
    data = read_toml(path, "experiment file")
    return parse_experiment(data, str(path), path)
