"""What the analysis reads of a result store: one typed interface for every kind of store.

A sweep's store (:class:`dptune.store._store.ResultStore`) and a table of outside per-user
values or runs (:class:`dptune.store._per_user_store.PerUserStore`) both give the analysis the
same reads, and nothing else: which algorithms, configurations and free hyperparameters there
are, which validation folds and metric@N hold values, one fold's per-user values of some
configurations (``read_matrix``: users x configurations), the per-fold means over users
(``summary``), the configuration each metric@N picks on the validation folds
(``best_configs``) and the manifest (data set, algorithms, source, folds). The analysis
(``dptune.analysis``) types every store parameter with :class:`ResultSource`;
``tests/analysis/test_source.py`` checks that both stores satisfy it, method by method, and
that no analysis function takes an untyped store.

A store may offer more (the sweep store's batched ``read_fold``, the outside table's
``user_keys``); the analysis asks for those with ``getattr`` and falls back on these reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

__all__ = ["ResultSource"]


@runtime_checkable
class ResultSource(Protocol):
    """The reads the analysis makes of a store (module docstring)."""

    def algorithms(self) -> list[str]:
        """The algorithms, in the experiment's (or the table's) order."""
        ...

    def configs(self, algorithm: str) -> pd.DataFrame:
        """``config_id`` and the hyperparameter columns the algorithm uses."""
        ...

    def hyperparameters(self, algorithm: str) -> list[str]:
        """The algorithm's free hyperparameters (the DP scopes ``h=v`` and ``only:h``)."""
        ...

    def folds(self, algorithm: str) -> list[str]:
        """The validation folds holding values of the algorithm (never ``test``)."""
        ...

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        """The ``(metric, cutoff)`` pairs holding values."""
        ...

    def read_matrix(self, algorithm: str, metric: str, cutoff: int, fold: str,
                    config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(users, values)``: the users with a value for every configuration of
        ``config_ids`` on ``fold`` and their values ``(len(config_ids), len(users))``."""
        ...

    def summary(self) -> pd.DataFrame:
        """Per ``(algorithm, config_id, fold, metric, cutoff)`` the mean over users."""
        ...

    def best_configs(self) -> pd.DataFrame:
        """The configuration each metric@N picks on the validation folds."""
        ...

    def manifest(self) -> dict[str, Any]:
        """The store's manifest: data set, algorithms, evaluation, source and folds."""
        ...
