"""Adapter families: cornac models, the ``implicit`` library and any Python model.

All three share one rule (:class:`SignatureFamily`): a configuration is the keyword arguments of
the model's constructor, checked against its signature (an unknown key is an error naming it, a
parameter without a default is required); each configuration is one unit, fitted once; a ``seed``
keyword is passed when the constructor takes one and the grid does not set it.

Any Python model (``type = "python:package.module:Class"`` or a name given to :func:`register`)
is an object with ``fit(X)`` (``X`` the binarised ``scipy.sparse.csr_matrix`` of shape
``(n_users, n_items)``) and ``score(users) -> (len(users), n_items)`` scores, higher is better;
it is evaluated by the same blocked engine as the built-in models
(:func:`dptune.metrics.evaluate`: one block of users per ``score`` call, training items masked
by the engine). It is *stochastic* (gets a noise floor) when it says so with a boolean class
attribute ``stochastic``, else when its constructor takes a ``seed``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import numbers
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import scipy.sparse as sp

from dptune.errors import INT_MAX, DptuneError, input_error, is_finite, plain
from dptune.models._base import Family, Recommender, _binary_csr
from dptune.models._cornac import DETERMINISTIC_CORNAC, CornacModel, cornac_class
from dptune.models._implicit import ImplicitModel, implicit_class

__all__ = [
    "SignatureFamily",
    "CornacFamily",
    "ImplicitFamily",
    "PythonFamily",
    "register",
    "registered_family",
    "is_known_type",
]

# Constructor parameters that are not hyperparameters.
_NOT_HYPER = ("self", "name", "seed", "verbose", "trainable")
#: Columns the store writes beside a configuration's hyperparameters (``configs.csv``): a
#: hyperparameter of the same name would clash with them.
_STORE_COLUMNS = ("algorithm", "config_id")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # used with fullmatch: no trailing newline
_RESERVED = ("userknn", "itemknn", "bpr-mf")  # the built-in types
_PREFIXES = ("cornac:", "implicit:", "python:")
#: Environment variable through which registrations reach the sweep's worker processes (each
#: task carries it, so workers kept from an earlier run know the models registered since:
#: :func:`dptune._parallel.run_parallel`).
REGISTRY_ENV = "DPTUNE_REGISTERED_MODELS"
_REGISTRY: dict[str, tuple[Callable[..., Any], bool | None]] = {}


class SignatureFamily(Family):
    """One unit per configuration; hyperparameters are the constructor's keyword arguments.

    ``factory`` is the class (or any callable) whose signature defines the grid keys;
    ``fit_unit`` builds ``make(cfg, seed)``, fits it on ``X`` and yields it.
    """

    def __init__(self, algorithm_type: str, factory: Callable[..., Any], stochastic: bool,
                 doc: str | None = None) -> None:
        self.type = algorithm_type
        try:
            params = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            params = {}
        self._any_key = any(p.kind is p.VAR_KEYWORD for p in params.values())
        self.takes_seed = "seed" in params
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self.hyperparameters = tuple(
            n for n, p in params.items() if n not in _NOT_HYPER and p.kind in keyword
        )
        self._required_keys = tuple(
            n for n in self.hyperparameters if params[n].default is inspect.Parameter.empty
        )
        documented = _documented_types(doc if doc is not None else inspect.getdoc(factory))
        self._kinds = {n: _kinds(params[n], documented.get(n)) for n in self.hyperparameters}
        self._stochastic = bool(stochastic)

    @property
    def stochastic(self) -> bool:
        """Whether the model's training depends on the seed (a noise floor is trained)."""
        return self._stochastic

    def _required(self) -> tuple[str, ...]:
        return self._required_keys

    def validate(self, configs: Sequence[dict], source: str = "algorithm") -> list[dict]:
        """Unknown constructor keywords raise ``input_error`` naming the key (any key passes
        when the constructor takes ``**kwargs``); a value of the wrong type for its parameter
        (see :func:`_kinds`) raises ``input_error`` naming the key and the value."""
        for cfg in configs:
            for key in cfg:
                if key in _STORE_COLUMNS:
                    raise input_error(source, key, f"cannot be a hyperparameter of {self.type}: "
                                      f"{key!r} is a column dptune writes beside every "
                                      "configuration's hyperparameters (configs.csv); give the "
                                      "constructor's parameter another name, or wrap the model "
                                      "in a class whose parameter is named otherwise")
        out = [dict(c) for c in configs] if self._any_key else super().validate(configs, source)
        for cfg in out:
            for key, value in cfg.items():
                kinds = self._kinds.get(key)
                _check_kind(value, kinds, source, key, self.type)
                if _whole_only(kinds) and isinstance(value, numbers.Real) \
                        and not isinstance(value, bool):
                    # ``10.0`` passes for an integer parameter (a grid's powers are floats): the
                    # model gets the integer it declares, not a float it would refuse at fit time
                    cfg[key] = int(value)
        return out

    def check(self, configs: Sequence[dict], source: str = "algorithm") -> None:
        """:meth:`validate`, then build (not fit) every configuration's model, so that a value
        the constructor refuses stops the sweep before any unit starts; the error names
        ``source`` (the grid file), the configuration and the constructor's message."""
        for cfg in self.validate(configs, source):
            try:
                self.build(cfg)
            except Exception as err:  # noqa: BLE001 - any refusal is the user's value
                shown = ", ".join(f"{k}={plain(v)}" for k, v in cfg.items()) or "no hyperparameter"
                msg = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise input_error(source, shown, f"{self.type} refuses this configuration: "
                                  f"{msg}") from None

    def build(self, cfg: dict) -> Any:
        """The model object of ``cfg`` as the sweep will build it (not fitted)."""
        return self.make(cfg, 0)

    def units(self, configs: list[dict]) -> list[list[int]]:
        """One unit per configuration."""
        self.validate(configs)
        return [[i] for i in range(len(configs))]

    def make(self, cfg: dict, seed: int) -> Any:
        """An unfitted model of configuration ``cfg``."""
        raise NotImplementedError

    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """Fit a fresh model per configuration, in order, and yield it."""
        configs = self.validate(configs)
        X = _binary_csr(X)
        for idx, cfg in enumerate(configs):
            model = self.make(cfg, seed)
            # a private copy: a model that reweights X in place (``X.data /= ...``) must not
            # change the fold's training matrix, which masks the training items of every
            # configuration and trains the next ones
            fitted = model.fit(X.copy())
            yield idx, self.scored(fitted if callable(getattr(fitted, "score", None)) else model,
                                   X.shape[1])

    def scored(self, model: Any, n_items: int) -> Any:
        """The fitted model as the evaluation engine calls it (the adapters: unchanged)."""
        return model


class CornacFamily(SignatureFamily):
    """Any cornac model (``cornac:<ClassName>``), scored by :class:`CornacModel`; deterministic
    classes (:data:`DETERMINISTIC_CORNAC`: EASE, MostPop, ItemKNN, ...) get no noise floor."""

    def __init__(self, class_name: str) -> None:
        self.class_name = class_name
        cls = cornac_class(class_name)
        super().__init__(f"cornac:{class_name}", cls.__init__,
                         class_name not in DETERMINISTIC_CORNAC, doc=inspect.getdoc(cls))

    def make(self, cfg: dict, seed: int) -> CornacModel:
        """A :class:`CornacModel` of ``cfg``."""
        return CornacModel(self.class_name, cfg, seed=seed)

    def build(self, cfg: dict) -> Any:
        """The cornac object itself (the adapter builds it only at fit time)."""
        return self.make(cfg, 0)._build()


class ImplicitFamily(SignatureFamily):
    """A model of the ``implicit`` library (``implicit:als``, ``implicit:bpr``, ``implicit:lmf``,
    ``implicit:cosine``, ``implicit:bm25``, ``implicit:tfidf``), scored by
    :class:`ImplicitModel`; the nearest-neighbour models are deterministic."""

    def __init__(self, model: str) -> None:
        cls, stochastic = implicit_class(model)
        self.model = model
        super().__init__(f"implicit:{model}", cls, stochastic)
        self.hyperparameters = tuple(h for h in self.hyperparameters if h != "random_state")

    def make(self, cfg: dict, seed: int) -> ImplicitModel:
        """An :class:`ImplicitModel` of ``cfg``."""
        return ImplicitModel(self.model, cfg, seed=seed)


class PythonFamily(SignatureFamily):
    """Any Python model: ``python:package.module:Class`` (or a registered factory)."""

    def __init__(self, target: str | Callable[..., Any], stochastic: bool | None = None,
                 type_name: str | None = None) -> None:
        factory = _import_target(target) if isinstance(target, str) else target
        if not callable(factory):
            raise input_error("algorithm", "type", f"{target!r} is not a class or callable")
        if isinstance(factory, type) and not (
            callable(getattr(factory, "fit", None)) and callable(getattr(factory, "score", None))
        ):
            raise input_error("algorithm", "type",
                              f"{factory.__name__} needs methods fit(X) and score(users)")
        self.factory = factory
        declared = getattr(factory, "stochastic", None) if stochastic is None else stochastic
        if not isinstance(declared, bool):
            declared = None
        params = _signature(factory)
        super().__init__(type_name or f"python:{target}", factory,
                         declared if declared is not None else "seed" in params)

    def scored(self, model: Any, n_items: int) -> ShapeChecked:
        """The model with its ``score`` output checked (:class:`ShapeChecked`)."""
        return ShapeChecked(model, self.type, n_items)

    def make(self, cfg: dict, seed: int) -> Any:
        """``factory(**cfg)`` plus ``seed=seed`` when the factory takes a seed."""
        kwargs = dict(cfg)
        if self.takes_seed and "seed" not in kwargs:
            kwargs["seed"] = seed
        try:
            model = self.factory(**kwargs)
        except TypeError as err:
            raise input_error("algorithm", self.type, f"bad parameters: {err}") from None
        if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "score", None))):
            # a factory is any callable: what it returned is known only now (python:os:getcwd
            # gave a str, whose missing fit was an AttributeError from inside the sweep)
            raise input_error("algorithm", self.type, f"returned a {type(model).__name__}, not "
                              "a model with methods fit(X) and score(users)")
        return model


#: Python types a constructor parameter can be checked against, by annotation name.
_KIND_NAMES = {"int": int, "float": float, "str": str, "bool": bool, "None": type(None)}
#: The same types by the words a NumPy-style docstring uses for them (cornac, implicit).
_DOC_NAMES = {**_KIND_NAMES, "integer": int, "double": float, "string": str, "boolean": bool}
_SECTION_RE = re.compile(r"^\s*Parameters\s*\n\s*-{3,}\s*\n(.*?)(?=^\s*\w[\w ]*\n\s*-{3,}|\Z)",
                         re.M | re.S)
_DOC_PARAM_RE = re.compile(r"^\s*(\w+)\s*:\s*([^,\n]+)", re.M)


def _documented_types(doc: str | None) -> dict[str, tuple[type, ...]]:
    """The types the ``Parameters`` section of a NumPy-style docstring gives its parameters
    (``k: int, optional, default: 10`` -> ``(int,)``; ``int or None`` -> ``(int, NoneType)``);
    a parameter whose type is anything else (``data-type``, ``dict``) is left out."""
    section = _SECTION_RE.search(doc or "")
    out: dict[str, tuple[type, ...]] = {}
    for name, text in _DOC_PARAM_RE.findall(section.group(1) if section else ""):
        words = [w.strip() for w in re.split(r"\bor\b|\|", text.strip())]
        if name not in out and words and all(w in _DOC_NAMES for w in words):
            out[name] = tuple(dict.fromkeys(_DOC_NAMES[w] for w in words))
    return out


def _kinds(param: inspect.Parameter,
           documented: tuple[type, ...] | None = None) -> tuple[type, ...] | None:
    """The value types a constructor parameter accepts, from the first of these that says:

    1. its annotation, when made of ``int``, ``float``, ``str``, ``bool`` and ``None``
       (``float | None``, ``Optional[int]``);
    2. the type its class's docstring gives it (``documented``; cornac and implicit document
       ``lamb: float, default: 500`` though the default is written ``500``);
    3. its default: an ``int`` default takes integers only (``k = 10`` is not meant to be
       ``10.5``: a fraction would be silently truncated), a ``float`` default any real number,
       a ``bool`` default a bool, a ``str`` default a string.

    An annotation or documented type is ignored when the default does not fit it (a ``None``
    default adds ``None``). ``None`` (anything goes) when nothing says."""
    default = param.default
    declared = []
    ann = param.annotation
    if ann is not inspect.Parameter.empty:
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
        text = re.sub(r"^(typing\.)?Optional\[(.*)\]$", r"\2 | None", str(text).strip())
        parts = [t.strip() for t in str(text).split("|")]
        if parts and all(t in _KIND_NAMES for t in parts):
            declared.append(tuple(_KIND_NAMES[t] for t in parts))
    if documented:
        declared.append(documented)
    for kinds in declared:
        if default is None and type(None) not in kinds:
            kinds = (*kinds, type(None))
        if default is inspect.Parameter.empty or _fits(default, kinds):
            return kinds
    if isinstance(default, bool):
        return (bool,)
    if isinstance(default, numbers.Integral):
        return (int,)
    if isinstance(default, numbers.Real):
        return (float,)
    if isinstance(default, str):
        return (str,)
    return None


def _fits(value: Any, kinds: tuple[type, ...]) -> bool:
    """Whether ``value`` is of one of ``kinds`` (an ``int`` kind takes an integral number
    within int64's range, :data:`dptune.errors.INT_MAX`; a ``float`` one any finite number; a
    bool is not a number). An integer beyond a float's range (400 digits) fits neither:
    ``float()`` of it raised ``OverflowError``."""
    if value is None:
        return type(None) in kinds
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, numbers.Real):
        if not is_finite(value):
            return False
        whole = int in kinds and float(value).is_integer() and -INT_MAX - 1 <= value <= INT_MAX
        return float in kinds or whole
    return isinstance(value, tuple(k for k in kinds if k not in (int, float, bool, type(None))))


def _whole_only(kinds: tuple[type, ...] | None) -> bool:
    """Whether ``kinds`` takes integers but not fractions (an ``int`` parameter)."""
    return kinds is not None and int in kinds and float not in kinds


def _check_kind(value: Any, kinds: tuple[type, ...] | None, source: str, key: str,
                model: str) -> None:
    """``input_error(source, key, ...)`` unless ``value`` fits ``kinds`` (:func:`_fits`)."""
    if kinds is None or _fits(value, kinds):
        return
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    names = {bool: "true or false", int: "an integer", float: "a finite number",
             str: "a string", type(None): "none"}
    if whole and int in kinds:  # an integer beyond int64's range (a store's integer column)
        names[int] = f"an integer from {-INT_MAX - 1:,} to {INT_MAX:,} (int64)"
    want = " or ".join(names[k] for k in kinds if k is not type(None))
    raise input_error(source, key, f"must be {want} for {model}, got {plain(value)}")


class ScoreShapeError(DptuneError):
    """A Python model's ``score`` returned the wrong shape (:class:`ShapeChecked`): the one line
    ``<model type>: score: <problem>``, exit code 2, wherever the model is scored; ``problem``
    is kept apart so that the sweep can name the configuration and the fold as for any other
    failing unit (:func:`dptune.sweeper._unit.named_model`), which the model type alone does
    not."""

    def __init__(self, model: str, problem: str) -> None:
        super().__init__(str(input_error(model, "score", problem)))
        self.model, self.problem = model, problem

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        """Rebuilt from both fields when a worker process hands it back (pickle)."""
        return type(self), (self.model, self.problem)


class ShapeChecked:
    """A fitted Python model whose ``score`` output is checked: ``(len(users), n_items)`` real
    numbers, else one error naming the model, the expected and the actual shape or type
    (instead of a traceback deep in the evaluation, or scores silently converted). A scipy
    sparse matrix (``X[users] @ S``, the natural score of a linear item-item model) is made
    dense: its missing entries score 0. Integer or boolean scores become float64, exact up to
    2**53 (float32 would merge integers above 2**24 into ties). Complex, text or other
    non-numeric scores are refused: converting them would drop the imaginary part or read a
    string as a number. The model gets its own copy of the block's user codes, and a block
    that is a view of another array (a slice of scores the model keeps) is copied, because the
    evaluation masks training items in the array it is handed: neither the sweep's users nor
    the model's own state can be changed by the other. Every other attribute is the model's
    own."""

    def __init__(self, model: Any, name: str, n_items: int) -> None:
        self.model, self.name, self.n_items = model, name, n_items

    def score(self, users: Any) -> Any:
        """``model.score(users)``, checked."""
        import numpy as np
        import scipy.sparse as sparse

        users = np.array(users, copy=True)  # the model may sort or shift them in place
        out = self.model.score(users)
        if sparse.issparse(out):
            out = out.toarray()
        expected = (len(users), self.n_items)
        shape = getattr(out, "shape", None)
        if shape is None:
            try:
                shape = np.shape(out)
            except Exception:  # noqa: BLE001 - an unshapeable value: reported below
                shape = None
        if tuple(shape or ()) != expected:
            got = f"shape {tuple(shape)}" if shape is not None else f"a {type(out).__name__}"
            raise ScoreShapeError(self.name, f"returned {got}, expected {expected} (one row per "
                                  "user of the block, one column per item of the training "
                                  "matrix)")
        arr = out if isinstance(out, np.ndarray) else None
        if arr is None:
            try:
                arr = np.asarray(out)
            except Exception:  # noqa: BLE001 - a value numpy cannot read: reported below
                arr = np.empty(0, dtype=object)
        if arr.dtype.kind in "biu":
            return arr.astype(np.float64)
        if arr.dtype.kind != "f":
            kind = {"c": "complex numbers", "U": "text", "S": "bytes", "O": "Python objects"}
            got = kind.get(arr.dtype.kind, f"values of dtype {arr.dtype}")
            raise ScoreShapeError(self.name, f"returned {got} (dtype {arr.dtype}), expected real "
                                  "numbers (a float array: higher is better, -inf ranks an item "
                                  "last)")
        if arr is out and arr.base is not None and arr.flags.writeable:
            return arr.copy()  # a view of the model's own array: the evaluation writes into it
        return arr

    def __getattr__(self, attr: str) -> Any:
        if attr == "model":  # not set yet (unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.model, attr)


def _signature(factory: Callable[..., Any]) -> dict:
    try:
        return dict(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return {}


def _import_target(target: str) -> Any:
    """``package.module:Attr`` (``Attr`` may be dotted) imported; errors name ``type``."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise input_error("algorithm", "type",
                          f"python:{target} must be python:<package.module>:<Class>")
    try:
        obj: Any = importlib.import_module(module)
    except ModuleNotFoundError as err:
        # A module next to the experiment (current directory) is importable too, as with
        # ``python -m``; a console script does not put the current directory on sys.path.
        if err.name != module.split(".")[0] or os.getcwd() in sys.path:
            raise input_error("algorithm", "type",
                              f"cannot import module {module!r}: {err}") from None
        sys.path.append(os.getcwd())
        return _import_target(target)
    except ImportError as err:
        raise input_error("algorithm", "type", f"cannot import module {module!r}: {err}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise input_error("algorithm", "type", f"module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def register(name: str, factory: Callable[..., Any], stochastic: bool | None = None) -> None:
    """Make ``factory`` (a model class or any callable returning a model) sweepable as
    ``type = name``.

    Its keyword arguments are the grid keys; ``stochastic`` overrides the model's own
    declaration (class attribute ``stochastic``, else: it takes a ``seed``). A factory defined in
    an importable module also reaches the sweep's worker processes (``jobs > 1``); one defined
    in ``__main__`` or a notebook works with ``jobs = 1``.

    >>> import numpy as np
    >>> class Pop:
    ...     def fit(self, X):
    ...         self.pop_ = np.asarray(X.sum(axis=0)).ravel()
    ...         return self
    ...     def score(self, users):
    ...         return np.tile(self.pop_, (len(users), 1))
    >>> register("my-pop", Pop)
    """
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name in _RESERVED or ":" in name:
        raise input_error("register", "name",
                          "must be ASCII letters (a-z, A-Z), digits, '.', '_' or '-', starting "
                          "with a letter, and not a built-in type, "
                          f"got {name!r}")
    if not callable(factory):
        hint = ""
        if callable(getattr(factory, "fit", None)) and callable(getattr(factory, "score", None)):
            # a model object: the sweep builds one model per configuration itself
            hint = (f": register the class {type(factory).__name__}, not an instance of it (the "
                    "sweep builds a model per configuration, from the grid's hyperparameters)")
        raise input_error("register", name, f"{factory!r} is not a class or callable{hint}")
    PythonFamily(factory, stochastic, type_name=name)  # checks fit/score now, not at sweep time
    _REGISTRY[name] = (factory, stochastic)
    module, qualname = getattr(factory, "__module__", None), getattr(factory, "__qualname__", "")
    known = json.loads(os.environ.get(REGISTRY_ENV, "{}") or "{}")
    if module and module != "__main__" and "<" not in qualname:
        known[name] = [f"{module}:{qualname}", stochastic]
    else:
        # not importable by another process: a worker that meets the name says why, instead of
        # calling it an unknown type
        known[name] = [None, stochastic, f"{module}.{qualname}"]
    os.environ[REGISTRY_ENV] = json.dumps(known, sort_keys=True)


def registered_family(name: str) -> PythonFamily | None:
    """The family of a name given to :func:`register` (in this process, or in the parent of a
    sweep worker when the factory is importable); None for any other name."""
    if name in _REGISTRY:
        factory, stochastic = _REGISTRY[name]
        return PythonFamily(factory, stochastic, type_name=name)
    entry = _inherited(name)
    if entry is None:
        return None
    target, stochastic, *_ = entry
    check_importable(name)
    return PythonFamily(_import_target(target), stochastic, type_name=name)


def _inherited(name: str) -> list | None:
    """What a sweep's worker process knows of a registered ``name``: the record
    :func:`register` leaves in the environment it inherits (``[target, stochastic, where]``;
    ``target`` None for a class it cannot import), or None."""
    try:
        known = json.loads(os.environ.get(REGISTRY_ENV, "{}") or "{}")
    except json.JSONDecodeError:
        return None
    return known.get(name)


def check_importable(name: str) -> None:
    """One error for a ``name`` given to :func:`register` whose class a sweep's worker process
    cannot import (a class of ``__main__``: a script, a notebook); nothing for any other name.
    A worker raises it when it meets the name, and the sweep before it starts workers."""
    entry = _inherited(name)
    if entry is not None and entry[0] is None:
        where = entry[2] if len(entry) > 2 else "__main__"
        raise input_error("algorithm", "type", f"{name!r} was registered with "
                          f"dptune.models.register from {where}, which the sweep's worker "
                          "processes cannot import: sweep with jobs = 1, or define the model in "
                          "a module of its own (a .py file in the current directory or on "
                          "PYTHONPATH) and register it from there")


def is_known_type(algorithm_type: object) -> bool:
    """Whether ``algorithm_type`` has the shape of a model type (nothing is imported).

    A built-in name, ``cornac:<Class>``, ``implicit:<model>``, ``python:<module>:<Class>`` or a
    name given to :func:`dptune.models.register`; whether the class exists is checked later,
    by :func:`get_family`.
    """
    if not isinstance(algorithm_type, str):
        return False
    t = algorithm_type.strip()
    try:
        if t in _RESERVED or registered_family(t) is not None:
            return True
    except DptuneError:  # registered, but not importable here: get_family says why
        return True
    return any(t.startswith(p) and len(t) > len(p) for p in _PREFIXES)
