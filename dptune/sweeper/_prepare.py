"""Fold preparation: the data set, test split, CV fold labels and per-fold matrices of an experiment.

Every unit of a sweep (and the noise floor and the seed study) reads its training and relevance
matrices from here; :func:`prepare` caches them per process, keyed by the experiment fingerprint.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dptune.config import Experiment
from dptune.data._dataset import Dataset, load_dataset
from dptune.data._fetch import KNOWN_DATASETS
from dptune.data._split import HoldOut, cv_fold_labels, split_holdout
from dptune.errors import input_error, plain
from dptune.metrics import novelty_vectors


@dataclass
class FoldData:
    """One evaluation setting: binarised training matrix, relevance matrix, users, novelty."""

    fold: str
    train: sp.csr_matrix
    relevant: sp.csr_matrix
    users: np.ndarray
    efd: np.ndarray
    epc: np.ndarray


def _matrix(user: np.ndarray, item: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    m = sp.csr_matrix((np.ones(len(user), np.float32), (user, item)), shape=shape, dtype=np.float32)
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def fold_data(train: pd.DataFrame, held: pd.DataFrame, shape: tuple[int, int],
              threshold: float, name: str) -> FoldData:
    """One evaluation setting from a training and a held-out part (rows ``user, item, rating``):
    binarised training matrix, relevance matrix ``rating >= threshold`` of the held-out rows,
    the users with a relevant held-out item, and the novelty vectors of the training matrix.
    Shared by the sweep's folds and the split-seed study's splits."""
    X = _matrix(train["user"].to_numpy(), train["item"].to_numpy(), shape)
    rel = held[held["rating"].to_numpy() >= threshold]
    R = _matrix(rel["user"].to_numpy(), rel["item"].to_numpy(), shape)
    users = np.flatnonzero(np.diff(R.indptr) > 0).astype(np.int32)
    efd, epc = novelty_vectors(X)
    return FoldData(name, X, R, users, efd, epc)


class Prepared:
    """Data set, test split and fold labels of an experiment, with lazily built fold matrices."""

    def __init__(self, exp: Experiment):
        self.exp = exp
        d = exp.data
        ds = load_dataset(exp.data_file, fmt=d.format, min_rating=d.min_rating, kcore=d.kcore,
                          experiment=exp.source, **d.reader_options())
        # a file is named as the experiment writes it (manifest, reports), not by this machine's
        # absolute path; a named data set keeps its own label
        self.dataset: Dataset = ds if d.source in KNOWN_DATASETS else replace(ds, source=d.source)
        s = exp.split
        self.holdout: HoldOut = split_holdout(
            self.dataset.ratings, s.method, s.train_ratio, exp.split_seed, s.min_user_interactions,
            timestamps=self.dataset.timestamps, fold_method=s.fold_method, source=exp.source)
        self.labels = np.asarray(cv_fold_labels(self.holdout.train, s.folds, s.fold_method, exp.split_seed))
        self.shape = (self.dataset.n_users, self.dataset.n_items)
        self._folds: dict[str, FoldData] = {}
        self._lock = threading.Lock()

    @property
    def fold_names(self) -> list[str]:
        """Validation fold labels as strings ``"0" .. "k-1"``."""
        return [str(f) for f in range(self.exp.split.folds)]

    def fold(self, fold: str) -> FoldData:
        """Training/relevance matrices for validation fold ``fold`` or for ``"test"``."""
        with self._lock:
            if fold not in self._folds:
                self._folds[fold] = self._build(fold)
            return self._folds[fold]

    def _build(self, fold: str) -> FoldData:
        tr = self.holdout.train
        if fold == "test":
            train, held = tr, self.holdout.test
        else:
            mask = self.labels == int(fold)
            train, held = tr[~mask], tr[mask]
        # implicit feedback (no ratings): every held-out interaction is relevant
        threshold = -np.inf if self.dataset.implicit else self.exp.evaluation.relevance_threshold
        return fold_data(train, held, self.shape, threshold, fold)

    def check_folds(self, minimum: int = 0) -> dict[str, int]:
        """Users evaluated per fold; a fold with none is an error naming it, and so is a
        validation fold with fewer than ``minimum`` (the experiment's ``[analysis]
        min_fold_users``, which the analysis would refuse after the whole sweep; given by the
        caller, as this object is shared by experiments that differ in their analysis only),
        before any training."""
        counts = {}
        minimum = int(minimum)
        for f in [*self.fold_names, *(["test"] if self.exp.evaluation.test_split else [])]:
            n = len(self.fold(f).users)
            if n == 0:
                self._check_threshold()
                field_ = "split" if f == "test" else "split.folds"
                raise input_error(self.exp.source, field_, f"fold {f} has no user with a relevant "
                                  f"held-out item (rating >= {self.exp.evaluation.relevance_threshold})")
            if f != "test" and n < minimum:
                raise input_error(self.exp.source, "split.folds", f"fold {f} has {n} users with "
                                  "a relevant held-out item, fewer than analysis.min_fold_users = "
                                  f"{plain(minimum)}, so the analysis would refuse it after the "
                                  "sweep: use more data or fewer folds, or lower min_fold_users "
                                  "(--min-fold-users)")
            counts[f] = n
        return counts

    def _check_threshold(self) -> None:
        """A relevance threshold above every rating of the data leaves every fold without a
        relevant item: that is the threshold's fault, named as such, not the split's."""
        if self.dataset.implicit:
            return
        top = float(self.dataset.ratings["rating"].max())
        threshold = self.exp.evaluation.relevance_threshold
        if top < threshold:
            raise input_error(self.exp.source, "evaluation.relevance_threshold",
                              f"{threshold:g} is above every rating of the data (the highest is "
                              f"{top:g}), so no held-out item is relevant")


_PREPARED: dict[tuple[str, tuple[int, int] | None], Prepared] = {}


def _file_state(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of a data file; None for a named data set."""
    try:
        st = Path(path).stat()
    except (OSError, ValueError):
        return None
    return st.st_size, st.st_mtime_ns


def prepare(exp: Experiment) -> Prepared:
    """Process-wide cached :class:`Prepared` (workers build it once, not once per unit), keyed
    by the experiment's fingerprint and its data file's size and modification time: a data
    file edited in place (in a notebook, between two sweeps) is read again."""
    key = (exp.fingerprint(), _file_state(exp.data_file))
    if key not in _PREPARED:
        _PREPARED[key] = Prepared(exp)
    return _PREPARED[key]
