"""The analysis result: every number the analysis computes for one result store, as data.

:func:`dptune.analyze` returns an :class:`AnalysisResult`: typed, numeric tables only (no prose,
no Markdown, no figures), so that computing stays separate from writing. Its parts: the DP
estimate (:class:`dptune.analysis.dp.tables.DPEstimate`: pairs, p-values, dp.csv with every DP
on the one scale and its interval, curves), the comparisons behind every claim, the dominant
hyperparameter, the downstream check, the verdict, the A/A noise floor
(:class:`dptune.analysis.noise.NoiseFloor`), the best configurations, Table 1's data set row
and importance, with the options, the manifest and the configurations they were computed from.
It also answers what its report needs to know and would otherwise recompute or ask a store:
the families of its metrics (:class:`MetricFamilies`), whether the data has a test split, which
algorithms train with a seed, each algorithm's number of configurations and the smallest
adjusted p-value its bootstrap can give. ``dptune.Report.from_result`` renders it (tables,
figures, report.md / report.html) from the result alone; :meth:`AnalysisResult.write_data` writes
the data files a report lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dptune._atomic import atomic_path, check_folder
from dptune.analysis.dp.tables import CURVES_COLUMNS, DP_COLUMNS, DPEstimate
from dptune.analysis.options import AnalysisOptions
from dptune.errors import check_path, input_error
from dptune.vocab import CSV_FLOAT

if TYPE_CHECKING:
    from dptune.analysis.noise import NoiseFloor

__all__ = ["AnalysisResult", "MetricFamilies", "DATA_FILES", "DP_COLUMNS", "CURVES_COLUMNS",
           "write_table", "check_output_folder"]

#: Data file written for each table of the result, keyed by its attribute path (``dp.table`` is
#: ``result.dp.table``), in writing order; a table that is None is not written. The tables of
#: every single p-value (one row per pair, metric@N and fold: millions of rows on a large grid)
#: are Parquet, the others CSV.
DATA_FILES: dict[str, str] = {
    "dp.pairs": "pairs.csv",
    "dp.pvalues": "pvalues.parquet",
    "dp.table": "dp.csv",
    "dp.curves": "curves.csv",
    "dp.grid_sample": "grid_sample.csv",
    "comparisons": "comparisons.csv",
    "dominance": "dominance.csv",
    "downstream": "downstream.csv",
    "noise.versus_dp": "noise_floor.csv",
    "noise.curves": "noise_curves.csv",
    "noise.pvalues": "noise_pvalues.parquet",
    "importance": "importance.csv",
    "best": "best_configs.csv",
    "verdict": "verdict.csv",
}


@dataclass(frozen=True)
class MetricFamilies:
    """The families of a result's metrics, as the analysis groups them: the verdict ranks
    metrics within a family only, and the report shows them so (Tables 3 and 4, the DP figure,
    the summary, the choose-well sentences) by looking them up here instead of grouping again.

    - ``groups``: ``(family, metrics)`` holding every metric of the result once, families in
      the order of the options' ``families`` then the families of the metrics of none,
      metrics in :data:`dptune.vocab.METRICS` order
      (:func:`dptune.analysis.verdict.families.family_groups`).
    - ``judges``: family -> its metrics in the order in which they judge the family's choices
      on the test split: the primary metric, then the family's metrics as configured, then the
      others (:func:`dptune.analysis.verdict.families.judge_order`); the judge of some of the
      family's metrics is the first of them in this order.
    """

    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    judges: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of_metrics(cls, metrics: Iterable[str], families: Sequence[tuple[str, Sequence[str]]],
                   primary_metric: str) -> MetricFamilies:
        """The families of ``metrics`` under the ``families`` option, with the judges of
        ``primary_metric``."""
        from dptune.analysis.verdict.families import family_groups, judge_order

        groups = family_groups([str(m) for m in metrics], families)
        judges = {name: tuple(judge_order(name, ms, primary_metric, families)) for name, ms in groups}
        return cls(tuple((name, tuple(ms)) for name, ms in groups), judges)

    def of(self, metrics: Iterable[str]) -> list[tuple[str, list[str]]]:
        """``(family, its metrics among metrics)`` in :attr:`groups` order, families without
        any of them left out (a metric the result does not have is in no family)."""
        present = {str(m) for m in metrics}
        out = []
        for name, ms in self.groups:
            kept = [m for m in ms if m in present]
            if kept:
                out.append((name, kept))
        return out

    def judge(self, family: str, metrics: Sequence[str]) -> str:
        """The metric that judges the choices of ``metrics`` (some of ``family``'s) on the
        test split: the first of them in the family's :attr:`judges` order."""
        members = {str(m) for m in metrics}
        for m in self.judges.get(family, ()):
            if m in members:
                return m
        return str(metrics[0])


@dataclass(frozen=True)
class AnalysisResult:
    """Everything computed by the analysis of one store (long DataFrames, sorted, reproducible).

    Frozen: :func:`dptune.analyze` builds it once, from parts computed in order (the fold loop,
    selection, noise floor, importance, then the comparisons, dominance, downstream check and
    verdict that cite them); ``dataclasses.replace(result, ...)`` gives a changed copy.

    - ``dp``: the DP estimate (:class:`~dptune.analysis.dp.tables.DPEstimate`): pairs,
      p-values, dp.csv (every DP per 25 pairs with P beside it and, for scopes ``all`` and
      ``only:<h>``, its 95% interval), curves, the bootstrap's paired replicates and the
      algorithms without DP.
    - ``comparisons``: comparisons.csv, the test behind every "significantly" (metrics within
      a family, hyperparameters within a metric@N; family-wise error rate ``alpha``).
    - ``dominance``: dominance.csv, the dominant hyperparameter per algorithm and metric@N.
    - ``downstream``: downstream.csv, the choices of a family's metrics compared on the test
      split.
    - ``verdict``: verdict.csv, one row per (algorithm, cutoff, family of metrics).
    - ``best``: the best configuration per metric@cutoff (validation mean, test value), or None.
    - ``datasets``: Table 1 rows (dataset, users, items, ratings, sparsity), or None.
    - ``noise``: the A/A noise floor (:class:`dptune.analysis.noise.NoiseFloor`), or None.
    - ``importance``: fANOVA / PED-ANOVA importances, or None when off.
    - ``options``: the validated :class:`dptune.AnalysisOptions` used (``seed`` resolved).
    - ``manifest``: the store's manifest (data set, split, evaluation, seeds, versions).
    - ``configurations``: every configuration of the store (``algorithm, config_id`` and the
      hyperparameter columns; a per-user table's ``system`` names), or None (a result built by
      hand). The report names configurations by it, so that it renders a result without the
      store; it is not a data file.

    What its report needs besides, the result answers from these fields (the report computes
    nothing and reads no store): :attr:`metric_families`, :attr:`test_split`,
    :attr:`outside`, :attr:`stochastic`, :attr:`configuration_counts`,
    :attr:`smallest_adjusted_p` and :attr:`bootstrap_groups`. The verdict's lists of metrics
    (``identical``, ``less_discriminative``, ``tied``, ``choices``, ``no_evidence``,
    ``not_below_floor``, ``downstream_differ``) are lists; verdict.csv joins them with ``;``.
    """

    dp: DPEstimate
    comparisons: pd.DataFrame | None = None
    dominance: pd.DataFrame | None = None
    downstream: pd.DataFrame | None = None
    verdict: pd.DataFrame | None = None
    best: pd.DataFrame | None = None
    datasets: pd.DataFrame | None = None
    noise: NoiseFloor | None = None
    importance: pd.DataFrame | None = None
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    manifest: Mapping[str, Any] = field(default_factory=dict)
    configurations: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        """A result built by hand (or changed by ``dataclasses.replace``) is checked when it is
        made: a part of the wrong kind is one line naming the field, not a traceback from
        inside the report that reads it. A ``manifest`` of None is an empty one."""
        def bad(name: str, want: str, value: object) -> Exception:
            return input_error("AnalysisResult", name, f"needs {want}, got "
                               f"{type(value).__name__}")

        if not isinstance(self.dp, DPEstimate):
            raise bad("dp", "the DP estimate of an analysis (result.dp, a DPEstimate)", self.dp)
        for name in ("comparisons", "dominance", "downstream", "verdict", "best", "datasets",
                     "importance"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, pd.DataFrame):
                raise bad(name, "a pandas DataFrame or None", value)
        if self.noise is not None:
            from dptune.analysis.noise import NoiseFloor

            if not isinstance(self.noise, NoiseFloor):
                raise bad("noise", "the A/A noise floor of an analysis (result.noise) or None",
                          self.noise)
        if not isinstance(self.options, AnalysisOptions):
            raise bad("options", "dptune.AnalysisOptions (a table of options: "
                      "AnalysisOptions(**options))", self.options)
        if self.manifest is None:
            object.__setattr__(self, "manifest", {})
        elif not isinstance(self.manifest, Mapping):
            raise bad("manifest", "a store's manifest (a mapping) or None", self.manifest)
        conf = self.configurations
        if conf is not None:
            if not isinstance(conf, pd.DataFrame):
                raise bad("configurations", "a pandas DataFrame or None", conf)
            missing = [c for c in ("algorithm", "config_id") if c not in conf.columns]
            if missing:
                raise input_error("AnalysisResult", "configurations", f"missing column "
                                  f"{missing[0]!r} (columns algorithm, config_id and the "
                                  "hyperparameters)")

    @property
    def primary(self) -> tuple[str, int]:
        """The primary metric and cutoff of the options: it picks the noise-floor
        configurations, orders Table 5 and the one-at-a-time table, and is Figure 1's main
        cutoff."""
        return (str(self.options.primary_metric), int(self.options.primary_cutoff))

    @cached_property
    def metric_families(self) -> MetricFamilies:
        """The families of every metric of the result (its DP table's and best
        configurations'), under the options' ``families`` and primary metric."""
        metrics: list[str] = []
        for df in (self.dp.table, self.best):
            if df is not None and "metric" in df.columns:
                metrics += list(dict.fromkeys(df["metric"].astype(str)))
        return MetricFamilies.of_metrics(metrics, self.options.families, self.primary[0])

    @property
    def test_split(self) -> bool:
        """Whether the data has a held-out test split: a sweep's always, outside data only with
        a fold named ``test`` (:func:`dptune.store._per_user_store.has_test_split`); the
        report speaks of a test split only then."""
        from dptune.store._per_user_store import has_test_split

        return has_test_split(self.manifest or {})

    @property
    def outside(self) -> bool:
        """Whether the result is of outside data (a per-user table, evaluated TREC runs: its
        manifest's ``source``) rather than of a sweep, whose experiment it then has not."""
        from dptune.store._per_user_store import SOURCES

        return (self.manifest or {}).get("source") in SOURCES

    @cached_property
    def stochastic(self) -> dict[str, bool]:
        """Algorithm of the manifest -> whether its training depends on its seed, in the
        manifest's order (:func:`dptune.models.is_stochastic`): only those get a noise floor,
        and the report says which do not."""
        from dptune.models._families import is_stochastic

        return {str(a["name"]): bool(is_stochastic(a["type"]))
                for a in (self.manifest or {}).get("algorithms", ()) if "name" in a
                and "type" in a}

    @property
    def configuration_counts(self) -> dict[str, int]:
        """Algorithm -> its number of configurations in :attr:`configurations` (empty
        without them)."""
        if self.configurations is None:
            return {}
        counts = self.configurations["algorithm"].value_counts(sort=False)
        return {str(a): int(n) for a, n in counts.items()}

    @property
    def smallest_adjusted_p(self) -> float | None:
        """The smallest adjusted p-value a claim can have, ``1 / (B + 1)`` for a bootstrap of
        ``B`` replicates (the max-t test counts the observed statistic among its replicates:
        :mod:`dptune.analysis.dp.comparisons`); None without a bootstrap."""
        b = int(self.options.bootstrap)
        return 1.0 / (b + 1) if b > 0 else None

    @property
    def bootstrap_groups(self) -> int:
        """How many random groups the bootstrap resamples each fold's users in
        (:data:`dptune.analysis.dp.bootstrap.GROUPS`)."""
        from dptune.analysis.dp.bootstrap import GROUPS

        return int(GROUPS)

    def __repr__(self) -> str:
        algs = list(dict.fromkeys(self.dp.table["algorithm"])) if len(self.dp.table) else []
        n = 0 if self.verdict is None else len(self.verdict)
        return (f"AnalysisResult(algorithms={algs}, dp rows={len(self.dp.table)}, "
                f"verdict rows={n}; render with dptune.Report.from_result(result))")

    def tables(self) -> dict[str, pd.DataFrame]:
        """The data tables that are not None, by attribute path (``dp.table``), in
        :data:`DATA_FILES` order."""
        out = {}
        for path in DATA_FILES:
            df: Any = self
            for name in path.split("."):
                df = getattr(df, name)
                if df is None:
                    break
            if df is not None:
                out[path] = df
        return out

    def write_data(self, out: str | Path) -> list[Path]:
        """Write every data table into ``out`` (atomically, :func:`write_table`); return the
        paths. A folder that is or lies in a results directory is refused
        (:func:`check_output_folder`)."""
        check_output_folder(out, "write_data", "out", "the folder to write into")
        out = Path(out)
        check_folder(out)
        return [write_table(df, out / DATA_FILES[key]) for key, df in self.tables().items()]


def check_output_folder(out: object, function: str, argument: str, what: str) -> None:
    """The folder a result's files are about to be written into (``write_data``'s, the
    report's), checked before any is: a path (one line naming ``function: argument`` and
    ``what`` it needs otherwise) that is no results directory and lies in none, since a data
    file or report there would replace a store's file or pass for a part (as ``dptune analyze
    --reports`` refuses it)."""
    from dptune.store._outside import check_outside_store

    check_path(out, function, argument, what)
    check_outside_store(out, f"{function}: {argument}")


def write_table(df: pd.DataFrame, path: Path) -> Path:
    """Write one data table atomically, by the file's suffix: ``.csv`` with floats as
    ``%.10g``, ``\\n`` line ends, no index and lists ``;``-joined; ``.parquet`` (zstd, every
    float64 exact, no index). The same table writes the same bytes again."""
    with atomic_path(path, fsync=False) as tmp:
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp,
                           compression="zstd")
        else:
            _joined(df).to_csv(tmp, index=False, float_format=CSV_FLOAT, lineterminator="\n")
    return path


def _joined(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every list cell written as its items joined by ``;`` (verdict.csv's lists
    of metrics: a list in the result, ``;``-joined keys in the file)."""
    lists = []
    for col in df.columns:
        if df[col].dtype == object:
            first = df[col].dropna()
            if len(first) and isinstance(first.iloc[0], (list, tuple)):
                lists.append(col)
    if not lists:
        return df
    out = df.copy()
    for col in lists:
        out[col] = out[col].map(
            lambda v: ";".join(str(x) for x in v) if isinstance(v, (list, tuple)) else v)
    return out
