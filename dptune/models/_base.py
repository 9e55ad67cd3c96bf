"""The model protocol, the family protocol and the input helpers every dptune model shares.

Every model follows the sklearn convention: the constructor takes configuration only, ``fit(X)``
learns, learned state lives in attributes ending in ``_``. ``X`` is always a
``scipy.sparse.csr_matrix`` of shape ``(n_users, n_items)``, ``float32``, 1.0 per training
interaction (binarised). ``score(users)`` returns a dense ``float32`` array
``(len(users), n_items)``; the caller masks training items itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from dptune.errors import input_error

__all__ = ["Family", "Recommender"]


@runtime_checkable
class Recommender(Protocol):
    """What the sweep needs from a model: ``fit`` on a training matrix, ``score`` user rows."""

    def fit(self, X: sp.csr_matrix) -> Recommender:
        """Learn from the binarised ``(n_users, n_items)`` training matrix; return ``self``."""
        ...

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense ``float32`` scores ``(len(users), n_items)``; higher is better."""
        ...



# --------------------------------------------------------------------------------------------
# input helpers


def _binary_csr(X: Any) -> sp.csr_matrix:
    """``X`` as a canonical binary CSR matrix (float32 ones, sorted indices, no duplicates).

    Any stored non-zero value counts as one interaction (ratings are binarised); explicitly
    stored zeros are dropped. Copies only when ``X`` is not already in that form.
    """
    if not sp.issparse(X):
        raise TypeError("X must be a scipy.sparse matrix of shape (n_users, n_items)")
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if X.nnz and (X.data.dtype != np.float32 or not np.all(X.data == 1.0)):
        if not np.all(X.data != 0):  # explicitly stored zeros are not interactions
            X = X.copy()
            X.eliminate_zeros()
        X = sp.csr_matrix(
            (np.ones(X.nnz, dtype=np.float32), X.indices, X.indptr), shape=X.shape
        )
    elif X.data.dtype != np.float32:
        X = X.astype(np.float32)
    return X


def _as_users(users: Any) -> np.ndarray:
    users = np.asarray(users, dtype=np.int64).ravel()
    return users


class Family(ABC):
    """How one algorithm type is swept with reuse.

    ``units(configs)`` groups configuration indices that are trained together;
    ``fit_unit(X, configs, seed)`` trains them and yields ``(index into configs, fitted model)``
    for every configuration. **The yielded model may be mutated or replaced when the next item
    is requested** (BPR-MF continues training the same object): evaluate or copy it before
    advancing the iterator. ``hyperparameters`` are the configuration keys the family expects.
    """

    type: str = ""
    hyperparameters: tuple[str, ...] = ()

    @property
    def stochastic(self) -> bool:
        """Whether training depends on the seed (a noise floor is trained for it); default True."""
        return True

    #: The hyperparameter :meth:`memory_bytes` grows with (named when a grid is refused).
    memory_grows_with: str | None = None

    def memory_bytes(self, config: dict, n_users: int, n_items: int) -> float:
        """Bytes of the learned state a (validated) configuration grows with its
        hyperparameters, on ``n_users x n_items``; the sweep refuses a grid whose largest one,
        times the units trained at once, exceeds the machine's memory before any work. Default
        0: nothing that a hyperparameter makes unbounded (KNN keeps at most ``n - 1``
        neighbours a row), or not known (an adapter's model)."""
        return 0.0

    def validate(self, configs: Sequence[dict], source: str = "algorithm") -> list[dict]:
        """Check every configuration's keys and value types; return normalised copies.

        Unknown or missing hyperparameter names raise ``input_error(source, key, ...)``.
        """
        out = []
        for cfg in configs:
            unknown = [k for k in cfg if k not in self.hyperparameters]
            if unknown:
                seed = ("; the seed is not a hyperparameter: every unit gets its own, derived "
                        "from the experiment's seed" if unknown[0] == "seed" else "")
                raise input_error(
                    source, unknown[0],
                    f"unknown hyperparameter for {self.type!r} "
                    + (f"(expected: {', '.join(self.hyperparameters)})" if self.hyperparameters
                       else "(it takes none: leave out the algorithm's grid)") + seed,
                )
            missing = [k for k in self._required() if k not in cfg]
            if missing:
                raise input_error(source, missing[0], self._missing_hint(missing[0]))
            out.append(self._normalise(dict(cfg), source))
        return out

    def check(self, configs: Sequence[dict], source: str = "algorithm") -> None:
        """Everything that can be checked about ``configs`` before training, in the parent
        process before any unit starts (the built-in families: :meth:`validate`)."""
        self.validate(configs, source)

    def _required(self) -> tuple[str, ...]:
        return self.hyperparameters

    #: ``{hyperparameter: (source, scale)}``: how the family's reference grids derive a
    #: hyperparameter from another one, shown when a grid leaves it out (BPR-MF: the paper's
    #: regularisation tied to the learning rate).
    derived_example: dict[str, tuple[str, float]] = {}

    def _missing_hint(self, name: str) -> str:
        """The message for a hyperparameter a grid leaves out: the two ways to give it."""
        src, scale = self.derived_example.get(name, ("<another hyperparameter>", "<factor>"))
        src_text = f'"{src}"' if name in self.derived_example else src
        return (f"missing hyperparameter for {self.type!r}: give it a values list "
                f"([params.{name}] values = [...]) or derive it from another one "
                f"([derived] {name} = {{ from = {src_text}, scale = {scale} }}); "
                "the grid format: docs/grids.md")

    def _normalise(self, cfg: dict, source: str) -> dict:
        return cfg

    @abstractmethod
    def units(self, configs: list[dict]) -> list[list[int]]:
        """Groups of indices into ``configs`` that are trained together (one run each)."""

    @abstractmethod
    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """Train ``configs`` unit by unit; yield ``(index into configs, fitted model)``."""
