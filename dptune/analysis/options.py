"""The analysis options: one frozen dataclass, validated once, by one function.

:class:`AnalysisOptions` is what the experiment's ``[analysis]`` table parses into
(:mod:`dptune.config`), what ``dptune analyze`` flags override, and what :func:`dptune.analyze`
takes. Every check lives in :func:`validate_options`; a bad value is one line naming the field
(``<source>: <prefix><field>: <problem>``, exit code 2 on the command line).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.source import ResultSource
from dptune.errors import check_int, check_int64, input_error, is_finite, plain, suggest
from dptune.vocab import CORRECTIONS, METRICS, RENAMED_OPTIONS, SEED_RANGE, TESTS, metric_name

__all__ = ["AnalysisOptions", "TESTS", "CORRECTIONS", "PAIRS", "VALUE_PAIRS",
           "DEFAULT_FAMILIES", "MIN_PAIRS", "MIN_BOOTSTRAP", "MAX_BOOTSTRAP", "MAX_RESAMPLES",
           "STABILITY_SECONDS", "OUTSIDE_SEED", "validate_options", "check_names",
           "value_pairs_of"]

#: Default ``pairs``: every pair of a scope up to this many, else a seeded sample of this many.
PAIRS = 1000
#: Default cap of ``value_pairs`` (the hyperparameter-value and one-at-a-time scopes), when
#: ``pairs`` is larger: a grid of several hyperparameters has dozens of such scopes, each
#: with thousands of possible pairs (the paper's BPR-MF grid: 47 scopes of about 22,000), and
#: their DP per value needs far fewer pairs than the verdict's ranking of metrics.
VALUE_PAIRS = 200
#: Families of metrics the verdict ranks apart (name, metrics): accuracy and novelty metrics
#: answer different questions, so the most discriminative metric is named per family. The first
#: metric of a family judges the family's choices on the test split (the primary metric instead,
#: when it belongs to the family).
DEFAULT_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("accuracy", ("ndcg", "precision", "recall", "mrr")),
    ("novelty", ("epc", "efd")),
)

#: Fewest pairs of configurations on which metrics are ranked, significance claimed or a
#: hyperparameter named dominant; below it the numbers are shown without a claim.
MIN_PAIRS = 10

#: Default ``stability_seconds``: the estimated seconds of extra stability repeats per
#: algorithm. Small, so that the analysis of a large store stays within its time target (the
#: full ML-1M grid's analysis, about 50 s on 2 cores, would take about 35 s more for 4 extra
#: repeats of BPR-MF's 1,000 sampled pairs, so there it runs one seed and says so); a run that
#: must check its claims under every seed sets it higher (``[analysis] stability_seconds``,
#: ``--stability-seconds``).
STABILITY_SECONDS = 5.0

#: The analysis seed of outside data (a per-user table, TREC runs): the seed a sweep uses when
#: its experiment names none.
OUTSIDE_SEED = 42

#: Range of ``bootstrap`` (0 = off): a 95% interval needs at least 40 replicates for each of
#: its tails to hold one (40 x 0.025 = 1; one replicate gives every interval zero width);
#: beyond 100,000 its arrays (replicates x pairs per fold and metric) outgrow a machine's
#: memory for no gain in precision.
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 40, 100_000
#: The most A/A noise-floor seeds: each is a training of every noise configuration on every
#: fold, and the floor's pairs grow as S (S - 1) / 2; 5 (the default) give 10 pairs per
#: configuration and fold. ``noise_seeds = 10**400`` was taken, and the run then trained the
#: floor without end after its sweep.
MAX_NOISE_SEEDS = 1_000
#: Most ``n_resamples`` of the bootstrap and permutation tests: a p-value to 1e-5 is finer than
#: any claim needs, and each resample costs a pass over every pair's users.
MAX_RESAMPLES = 100_000


@dataclass(frozen=True)
class AnalysisOptions:
    """Settings of the discriminative-power analysis.

    - ``pairs``: configuration pairs of the ``all`` scope of each algorithm (every pair when it
      has at most ``pairs`` of them, else a seeded uniform sample of ``pairs``): the pairs of
      the verdict, Tables 3 and 4, Figure 1 and their intervals. ``pairs = 25`` is the
      paper's sampling (P = 25) and, with ``value_pairs`` left out, reproduces its numbers.
    - ``value_pairs``: the same cap for each hyperparameter-value scope (Table 5) and
      one-at-a-time scope; ``None`` (default) = ``min(pairs, VALUE_PAIRS)``. Every table,
      figure and the verdict read one pair set per scope.
    - ``seed``: pair-sampling seed; ``None`` = the experiment's analysis seed
      (:meth:`resolve` fills it from the store's manifest).
    - ``test``: paired test, one of :data:`TESTS`; ``alpha``: significance level of Sakai's DP
      and of the bootstrap ranking; ``correction``: one of :data:`CORRECTIONS`.
    - ``n_resamples``: resamples of the bootstrap / permutation tests.
    - ``bootstrap``: replicates of the DP confidence intervals (0 = off).
    - ``primary_metric``, ``primary_cutoff``: the metric@N that picks the noise-floor
      configurations and drives importance and selection texts.
    - ``noise_seeds`` (0 = off, else >= 2), ``noise_configs`` (>= 1): the A/A noise floor.
    - ``importance``: fANOVA / PED-ANOVA hyperparameter importance.
    - ``stability`` (default 5, lowered when not affordable; 0 = one seed): pair seeds a
      significance claim must survive; only a scope whose pairs are a sample (``all``, or a
      one-at-a-time scope ``only:<h>`` of the dominance claims) has other seeds to try.
    - ``stability_seconds`` (default :data:`STABILITY_SECONDS`): the estimated seconds of extra
      stability repeats an algorithm may take; ``stability`` is lowered to what they afford
      (:func:`dptune.analysis.dp.stability.affordable_repeats`), and the report says so beside
      every claim checked under fewer seeds than asked for.
    - ``min_fold_users`` (default 20; 0 = no minimum): the fold-size guard
      (``docs/statistics.md``).
    - ``families``: the families of metrics the verdict ranks apart, ``{name: [metrics]}`` in
      the experiment file (default :data:`DEFAULT_FAMILIES`: accuracy = nDCG, Precision,
      Recall, MRR; novelty = EPC, EFD); ``min_pairs`` (default :data:`MIN_PAIRS`): below this
      many pairs no metric is ranked, no difference called significant and no hyperparameter
      named dominant.

    Construction validates (:func:`validate_options`)::

        >>> AnalysisOptions(pairs=10, bootstrap=200).pairs
        10
        >>> AnalysisOptions(alpha=2.0)
        Traceback (most recent call last):
        dptune.errors.DptuneError: analysis: alpha: must be between 0 and 1, got 2.0
    """

    pairs: int = PAIRS
    value_pairs: int | None = None
    seed: int | None = None
    test: str = "t"
    alpha: float = 0.05
    correction: str = "none"
    n_resamples: int = 1000
    bootstrap: int = 1000
    primary_metric: str = "ndcg"
    primary_cutoff: int = 10
    noise_seeds: int = 5
    noise_configs: int = 1
    importance: bool = True
    stability: int = 5
    stability_seconds: float = STABILITY_SECONDS
    min_fold_users: int = 20
    families: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_FAMILIES
    min_pairs: int = MIN_PAIRS

    def __new__(cls, *args: Any, **kwargs: Any) -> AnalysisOptions:
        """Check the names before the fields are set: an unknown or renamed keyword, too many
        positional options or one given twice is one error line naming it, as a bad value is
        (a mistyped keyword in a notebook is not a ``TypeError`` from inside)."""
        names = [f.name for f in fields(cls)]
        if len(args) == 1 and isinstance(args[0], Mapping):
            # AnalysisOptions({"pairs": 25}) read the table as the value of ``pairs``
            raise input_error("analysis", None, "takes its options by name, not as one table: "
                              "AnalysisOptions(**options) or "
                              "AnalysisOptions.from_mapping(options)")
        if len(args) > len(names):
            raise input_error("analysis", None, f"takes at most {len(names)} options by "
                              f"position, got {len(args)}; name them ({', '.join(names)})")
        check_names(kwargs)
        twice = [k for k in names[:len(args)] if k in kwargs]
        if twice:
            raise input_error("analysis", twice[0], "given twice (by position and by name)")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for name, value in validate_options(dataclasses.asdict(self)).items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: object = "analysis",
                     prefix: str = "") -> AnalysisOptions:
        """Options from a mapping (a TOML ``[analysis]`` table, a manifest's ``analysis``);
        unknown keys and bad values are errors naming ``source`` and ``prefix + field``."""
        return cls(**validate_options(values, source, prefix))

    @classmethod
    def resolve(cls, manifest: Mapping[str, Any] | None = None,
                **overrides: Any) -> AnalysisOptions:
        """Defaults < the manifest's ``analysis`` table < the non-``None`` ``overrides``.

        Keys of the manifest's table that this version does not know are ignored (a store
        written by another version), except ``n_pairs`` of earlier versions, which is read as
        ``pairs``; an unknown override is an error. ``seed`` left ``None`` becomes the
        manifest's ``seeds.analysis``::

            >>> man = {"analysis": {"n_pairs": 15, "seed": None}, "seeds": {"analysis": 42}}
            >>> o = AnalysisOptions.resolve(man, bootstrap=100, test=None)
            >>> (o.pairs, o.seed, o.bootstrap, o.test)
            (15, 42, 100, 't')
        """
        if manifest is not None and not isinstance(manifest, Mapping):
            raise input_error("analysis", "manifest", "needs a store's manifest (a mapping, "
                              f"store.manifest()) or None, got {type(manifest).__name__}")
        manifest = manifest or {}
        for key in ("analysis", "seeds"):  # a hand-made manifest: named, not a traceback
            part = manifest.get(key)
            if part is not None and not isinstance(part, Mapping):
                raise input_error("analysis", f"manifest: {key}", "needs a table (a mapping) "
                                  f"or None, got {type(part).__name__}")
        known = {f.name for f in fields(cls)}
        stored = dict(manifest.get("analysis") or {})
        if "pairs" not in stored and "n_pairs" in stored:  # a store of an earlier version
            stored["pairs"] = stored["n_pairs"]
        values = {k: v for k, v in stored.items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        if values.get("seed") is None:
            values["seed"] = (manifest.get("seeds") or {}).get("analysis")
        return cls.from_mapping(values)

    @classmethod
    def for_outside(cls, store: ResultSource, **overrides: Any) -> AnalysisOptions:
        """The options of outside data (a per-user table or evaluated runs, as an in-memory
        store): the defaults of ``dptune analyze`` (pair cap, bootstrap, verdict) with the seed
        :data:`OUTSIDE_SEED`, the primary metric nDCG@10 when present (else the first
        metric@N), the noise floor off (it needs retraining, which outside data cannot do) and
        importance on when hyperparameters are known; then ``overrides`` (``None`` = not
        given)."""
        if not all(callable(getattr(store, m, None))
                   for m in ("algorithms", "metric_cutoffs", "hyperparameters")):
            raise input_error("analysis", "store", "needs the in-memory store of outside data "
                              f"(PerUserStore), got {type(store).__name__}")
        given = cls.check_outside(**overrides)
        mcs = [mc for a in store.algorithms() for mc in store.metric_cutoffs(a)]
        metric, cutoff = ("ndcg", 10) if ("ndcg", 10) in mcs else (mcs[0] if mcs else
                                                                    ("ndcg", 10))
        has_hps = any(store.hyperparameters(a) for a in store.algorithms())
        defaults = {"primary_metric": metric, "primary_cutoff": int(cutoff), "noise_seeds": 0,
                    "importance": has_hps}
        return cls.resolve({"seeds": {"analysis": OUTSIDE_SEED}}, **{**defaults, **given})

    @staticmethod
    def check_outside(**overrides: Any) -> dict[str, Any]:
        """The ``overrides`` of :meth:`for_outside` that are given (not ``None``), checked
        without the data: an unknown option, a bad value or a noise floor (which outside data
        cannot have) is its one error line, so that a front function refuses it before it
        reads and checks a per-user table."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if given.get("noise_seeds", 0) or "noise_configs" in given:
            key = "noise_seeds" if "noise_seeds" in given else "noise_configs"
            raise input_error("analysis", key,
                              "no noise floor for outside data (it needs retraining)")
        validate_options(given)
        return given

    @property
    def scope_value_pairs(self) -> int:
        """The cap of the hyperparameter-value and one-at-a-time scopes: ``value_pairs``, or
        ``min(pairs, VALUE_PAIRS)`` when it is left out."""
        return value_pairs_of(self.pairs, self.value_pairs)

    @property
    def paired_test(self) -> Any:
        """The paired test as a strategy object
        (:func:`dptune.analysis.dp.paired_tests.paired_test`): its p-values and whether the DP
        interval and claims are available under it."""
        return paired_test(self.test, self.n_resamples)

    @property
    def correction_or_none(self) -> str | None:
        """``correction`` with ``"none"`` as None (raw p-values)."""
        return None if self.correction == "none" else self.correction

    @property
    def level(self) -> float:
        """The confidence of every claim, ``1 - alpha``."""
        return 1.0 - float(self.alpha)

    def replace(self, **changes: Any) -> AnalysisOptions:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The options as a plain dict (field order)."""
        return dataclasses.asdict(self)


def value_pairs_of(pairs: int, value_pairs: int | None) -> int:
    """The pair cap of a hyperparameter-value or one-at-a-time scope: ``value_pairs`` when
    given, else ``min(pairs, VALUE_PAIRS)``."""
    return int(value_pairs) if value_pairs is not None else min(int(pairs), VALUE_PAIRS)


def validate_options(values: Mapping[str, Any], source: object = "analysis",
                     prefix: str = "") -> dict[str, Any]:
    """Check every analysis option; return them coerced (numpy integers -> ``int``, integral
    ``alpha`` -> ``float``, a numpy ``importance`` -> ``bool``). The one place where analysis
    options are validated.

    Rules: ``pairs, noise_configs, primary_cutoff >= 1``; ``n_resamples`` 1 to
    :data:`MAX_RESAMPLES`; ``value_pairs``
    ``None`` or ``>= 1``; ``bootstrap`` 0 (off) or :data:`MIN_BOOTSTRAP` to
    :data:`MAX_BOOTSTRAP`; ``stability, min_fold_users >= 0``; ``noise_seeds`` 0 or 2 to
    :data:`MAX_NOISE_SEEDS`; ``seed`` ``None`` or >= 0 (in :data:`SEED_RANGE`); every other
    count at most :data:`dptune.errors.INT_MAX` (int64's, what a store and the report's
    numbers hold: a count of thousands of digits could not be written into the report);
    ``0 < alpha < 1``; ``test`` in :data:`TESTS`, ``correction`` in :data:`CORRECTIONS`,
    ``primary_metric`` a metric's name without ``@N``, dptune's in any case (``NDCG`` is
    ``ndcg``: :func:`dptune.vocab.metric_name`) (its presence in the results is
    checked by :func:`dptune.analyze`, before any work; an experiment's by its
    ``evaluation.metrics``); ``importance`` a boolean;
    ``min_pairs >= 1``; ``families`` a non-empty table of non-empty metric lists, every metric
    known and in one family only.
    """
    if not isinstance(values, Mapping):
        raise input_error(source, prefix.rstrip(".") or None, "needs a table of analysis "
                          f"options, got {type(values).__name__}")
    check_names(values, source, prefix)
    out: dict[str, Any] = dict(values)

    def bad(key: str, problem: str) -> Exception:
        return input_error(source, f"{prefix}{key}", problem)

    for key, lo in (("pairs", 1), ("value_pairs", 1), ("n_resamples", 1), ("noise_configs", 1),
                    ("primary_cutoff", 1), ("bootstrap", 0), ("stability", 0),
                    ("min_fold_users", 0), ("noise_seeds", 0), ("seed", 0), ("min_pairs", 1)):
        if key not in out or (key in ("seed", "value_pairs") and out[key] is None):
            continue
        # a seed has an experiment seed's range (numpy seeds beyond it silently differ)
        most = {"seed": SEED_RANGE[1], "noise_seeds": MAX_NOISE_SEEDS}.get(key)
        out[key] = check_int(out[key], source, f"{prefix}{key}", lo, most)
        if key not in ("bootstrap", "n_resamples"):  # (their own bounds below)
            check_int64(out[key], source, f"{prefix}{key}")
    if out.get("noise_seeds") == 1:
        raise bad("noise_seeds", "needs 0 (off) or at least 2 seeds")
    if out.get("n_resamples", 0) > MAX_RESAMPLES:
        raise bad("n_resamples", f"must be an integer from 1 to {MAX_RESAMPLES:,}, got "
                  f"{plain(out['n_resamples'])}")
    if out.get("bootstrap") and not MIN_BOOTSTRAP <= out["bootstrap"] <= MAX_BOOTSTRAP:
        raise bad("bootstrap", f"must be 0 (off) or from {MIN_BOOTSTRAP} to {MAX_BOOTSTRAP:,} "
                  f"replicates, got {plain(out['bootstrap'])}")
    if "alpha" in out:
        a = out["alpha"]
        if isinstance(a, bool) or not isinstance(a, numbers.Real):
            raise bad("alpha", f"must be a number, got {a!r}")
        # an integer beyond a float's range (400 digits) is no float: is_finite, not float()
        if not is_finite(a) or not 0.0 < float(a) < 1.0:
            raise bad("alpha", f"must be between 0 and 1, got {plain(a)}")
        out["alpha"] = float(a)
    if "stability_seconds" in out:
        s = out["stability_seconds"]
        if isinstance(s, bool) or not isinstance(s, numbers.Real) or not is_finite(s) \
                or float(s) < 0:
            raise bad("stability_seconds", f"must be a number of seconds >= 0, got {plain(s)}")
        out["stability_seconds"] = float(s)
    for key, allowed in (("test", TESTS), ("correction", CORRECTIONS)):
        if key in out and out[key] not in allowed:
            raise bad(key, f"{out[key]!r} is not one of {', '.join(allowed)}")
    if "primary_metric" in out:
        m = out["primary_metric"]
        if not isinstance(m, str) or not m or "@" in m or m != m.strip():
            raise bad("primary_metric", f"must be a metric's name without its cutoff (one of "
                      f"{', '.join(METRICS)}, or a metric of a per-user table), got {m!r}")
        # any case of a dptune metric's name is that metric (NDCG is ndcg), as a per-user
        # table's names are read; an outside metric's name is kept as written
        out["primary_metric"] = metric_name(m)
    if "importance" in out:
        flag = out["importance"]
        if not isinstance(flag, (bool, np.bool_)):
            raise bad("importance", f"must be true or false, got {plain(flag)}")
        out["importance"] = bool(flag)  # a numpy bool (a DataFrame cell's) as Python's
    if "families" in out:
        out["families"] = _families(out["families"], bad)
    return out


def check_names(values: Mapping[str, Any], source: object = "analysis",
                prefix: str = "") -> None:
    """Every key of ``values`` is an option: a renamed one names its new name, an unknown one
    the nearest option (or all of them); one error line naming the key."""
    known = [f.name for f in fields(AnalysisOptions)]
    for key in values:
        if key in RENAMED_OPTIONS:
            raise input_error(source, f"{prefix}{key}", f"renamed to '{RENAMED_OPTIONS[key]}'")
        if key not in known:
            raise input_error(source, f"{prefix}{key}", "unknown field" + suggest(str(key), known))


def _families(value: Any, bad: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{name: [metrics]}`` (or its ``[[name, [metrics]], ...]`` form, as a manifest stores
    it) as a tuple of ``(name, metrics)``; every metric in one family only, no family empty.

    A metric is dptune's (``nDCG`` is ``ndcg``: :func:`dptune.vocab.metric_name`) or, for
    outside data, one of its own (``hr``): whether the results hold it is checked against them
    when the analysis starts (:func:`dptune.analysis.pipeline.check_families`), an
    experiment's families against its evaluation's metrics when it is read."""
    items = list(value.items()) if isinstance(value, Mapping) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)) or not items:
        raise bad("families", f"must be a table of families, e.g. {{ accuracy = [\"ndcg\"] }}, "
                  f"got {value!r}")
    out, seen = [], {}
    for item in items:
        if not isinstance(item, (list, tuple)) or len(item) != 2 or not isinstance(item[0], str):
            raise bad("families", f"must map family names to metric lists, got {item!r}")
        name, metrics = item
        if isinstance(metrics, str) or not isinstance(metrics, (list, tuple)) or not metrics:
            raise bad(f"families.{name}", f"needs a non-empty list of metrics, got {metrics!r}")
        names = []
        for m in metrics:
            if not isinstance(m, str) or not m.strip() or "@" in m:
                raise bad(f"families.{name}", f"needs metric names without a cutoff "
                          f"(such as {', '.join(METRICS)}), got {m!r}")
            m = metric_name(m)
            names.append(m)
            if m in seen:
                raise bad(f"families.{name}", f"{m!r} is already in family {seen[m]!r}")
            seen[m] = name
        out.append((name, tuple(names)))
    return tuple(out)
