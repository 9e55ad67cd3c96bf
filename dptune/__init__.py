"""dptune: which metric to tune with, and which hyperparameters matter.

Pipeline (data flows one way): data -> split -> sweep(models, metrics) -> store -> analysis ->
report. The Python API, one front function per task (``docs/api.md``)::

    import dptune
    exp = dptune.load_experiment("experiments/quickstart.toml")
    store = dptune.sweep(exp, results="results/quickstart", jobs=2)   # resumable
    res = dptune.analyze(store)                                       # an AnalysisResult
    res.dp.table                                                      # dp.csv as a DataFrame
    dptune.Report.from_result(res).write("reports/quickstart")       # tables, figures, report.md
    dptune.discriminative_power(per_user_df, pairs=25, test="t")      # any per-user table

The names below are loaded on first use, so that ``import dptune`` (and the command line) stay
fast; each comes from the module named in :data:`_EXPORTS`. So are the subpackages
(``dptune.store``, ``dptune.errors``, ...), which a bare ``import dptune`` reaches by their
dotted paths.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from dptune._version import __version__

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "load_experiment": "dptune.config",
    "Experiment": "dptune.config",
    "sweep": "dptune.sweeper._run",
    "ResultStore": "dptune.store._store",
    "AnalysisOptions": "dptune.analysis.options",
    "analyze": "dptune.analysis.pipeline",
    "AnalysisResult": "dptune.analysis.result",
    "discriminative_power": "dptune._api",
    "Report": "dptune.report._report",
}

__all__ = [
    "__version__",
    "load_experiment",
    "Experiment",
    "sweep",
    "ResultStore",
    "AnalysisOptions",
    "analyze",
    "AnalysisResult",
    "discriminative_power",
    "Report",
]

if TYPE_CHECKING:  # the names of _EXPORTS, from the same modules, for type checkers
    from dptune._api import discriminative_power
    from dptune.analysis.options import AnalysisOptions
    from dptune.analysis.pipeline import analyze
    from dptune.analysis.result import AnalysisResult
    from dptune.config import Experiment, load_experiment
    from dptune.report._report import Report
    from dptune.store._store import ResultStore
    from dptune.sweeper._run import sweep


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    # a subpackage the docs name by its dotted path (``dptune.store.ResultStore``,
    # ``dptune.errors.DptuneError``, ``dptune.sweeper.design.read_design``) after a bare
    # ``import dptune``: imported on first use, as the names above are
    if not name.startswith("_"):
        from importlib.util import find_spec

        if find_spec(f"{__name__}.{name}") is not None:
            return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'dptune' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
