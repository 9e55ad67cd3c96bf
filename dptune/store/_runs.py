"""External TREC runs as a result store: the store protocol of the DP analysis
(:class:`dptune.analysis.ResultStoreLike`) over a directory of run files, so that users of other
frameworks get DP too (``dptune dp``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dptune.errors import input_error
from dptune.store._trec import evaluate_run, read_qrels, read_run, read_train
from dptune.vocab import METRICS

__all__ = ["RunSetStore"]


class RunSetStore:
    """The store protocol of :func:`dptune.analysis.analyze_dp` over external TREC runs.

    ``runs/`` holds one run file per system, or one sub-directory per fold with the same file
    names; qrels and train are one file, or a directory with one file per fold (file stem = fold).
    Each system is a configuration of a single algorithm ``runs`` with hyperparameter ``system``.
    Every run is evaluated once, at construction (:func:`dptune.store.evaluate_run`).
    """

    def __init__(self, runs: Path, qrels: Path, train: Path, cutoffs: tuple[int, ...],
                 threshold: float, relevance_aware: bool = True):
        runs, qrels, train = Path(runs), Path(qrels), Path(train)
        if not runs.is_dir():
            raise input_error(runs, None, "--runs must be a directory of run files")
        subdirs = sorted(p for p in runs.iterdir() if p.is_dir())
        fold_dirs = {p.name: p for p in subdirs} if subdirs else {"0": runs}
        systems = sorted(p.name for p in next(iter(fold_dirs.values())).iterdir() if p.is_file()
                         and not p.name.startswith("."))
        if len(systems) < 2:
            raise input_error(runs, None, "needs at least two run files (systems) to compare")
        self.cutoffs = cutoffs
        self.system_names = systems
        self._per_user: dict[str, pd.DataFrame] = {}
        self.n_users = self.n_items = self.n_train = 0
        for fold, d in fold_dirs.items():
            q = read_qrels(_per_fold(qrels, fold))
            t = read_train(_per_fold(train, fold))
            self.n_users = max(self.n_users, q["user"].nunique())
            self.n_items = max(self.n_items, len(set(q["item"]) | set(t["item"])))
            self.n_train = max(self.n_train, len(t))
            frames = []
            for cid, name in enumerate(systems):
                path = d / name
                if not path.exists():
                    raise input_error(path, None, f"run file missing in fold {fold}")
                df = evaluate_run(read_run(path), q, t, cutoffs=cutoffs, threshold=threshold,
                                  relevance_aware=relevance_aware)
                df["config_id"] = cid
                frames.append(df)
            self._per_user[fold] = pd.concat(frames, ignore_index=True)

    def algorithms(self) -> list[str]:
        return ["runs"]

    def configs(self, algorithm: str) -> pd.DataFrame:
        return pd.DataFrame({"config_id": range(len(self.system_names)), "system": self.system_names})

    def hyperparameters(self, algorithm: str) -> list[str]:
        return []

    def folds(self, algorithm: str) -> list[str]:
        return list(self._per_user)

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return [(m, c) for m in METRICS for c in self.cutoffs]

    def read_matrix(self, algorithm: str, metric: str, cutoff: int, fold: str,
                    config_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        df = self._per_user[fold]
        df = df[(df["metric"] == metric) & (df["cutoff"] == cutoff) & df["config_id"].isin(config_ids)]
        wide = df.pivot(index="config_id", columns="user", values="value").reindex(list(config_ids))
        wide = wide.dropna(axis=1)
        return np.arange(wide.shape[1]), wide.to_numpy(dtype=np.float64)


def _per_fold(path: Path, fold: str) -> Path:
    if path.is_dir():
        hits = sorted(p for p in path.iterdir() if p.stem == fold or p.name == fold)
        if not hits:
            raise input_error(path, fold, "no file for this fold (expected a file whose stem is the fold name)")
        return hits[0]
    return path
