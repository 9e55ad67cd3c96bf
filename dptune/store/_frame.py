"""An in-memory result store over one long per-user table, so that any per-user results (another
framework's, a notebook's) get DP through the same analysis as a dptune sweep.

The table has one row per (configuration, fold, user, metric@N): columns ``[algorithm],
config_id | system, [fold], user, metric, [cutoff], value``; bracketed columns are optional
(one algorithm ``"runs"``, one fold ``"0"``, and the cutoff read from a metric written
``"ndcg@10"``, else 0). ``system`` names are numbered in sorted order. Further columns named
in ``hyperparameters`` describe each configuration (then DP is also computed per scope
``h=v`` and ``only:h``, as for a sweep).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dptune.errors import input_error
from dptune.vocab import metric_key

__all__ = ["FrameStore"]

_KEY = ["algorithm", "config_id", "fold", "user", "metric", "cutoff"]


class FrameStore:
    """The :class:`dptune.analysis.source.ResultSource` reads over a long per-user DataFrame.

    Values are pivoted once per (algorithm, fold, metric@N) into a configurations x users
    matrix (NaN where a configuration has no value for a user); :meth:`read_matrix` returns the
    users present for every requested configuration (an inner join), as the Parquet store does.
    A missing column, a duplicated row or a non-numeric value is a one-line error naming
    ``source`` and the column.
    """

    def __init__(self, per_user: pd.DataFrame, hyperparameters: Sequence[str] = (),
                 source: str = "per_user"):
        if not isinstance(per_user, pd.DataFrame):
            raise input_error(source, None, f"expected a pandas DataFrame, got {type(per_user).__name__}")
        df = per_user
        hps = list(hyperparameters)
        for col in ("user", "metric", "value", *hps):
            if col not in df.columns:
                raise input_error(source, col, "missing column")
        if ("config_id" in df.columns) == ("system" in df.columns):
            raise input_error(source, "config_id", "give exactly one of the columns config_id, system")
        df = df.copy()
        if "algorithm" not in df.columns:
            df["algorithm"] = "runs"
        df["algorithm"] = df["algorithm"].astype(str)
        df["fold"] = df["fold"].astype(str) if "fold" in df.columns else "0"
        if "cutoff" not in df.columns:
            parts = df["metric"].astype(str).str.split("@", n=1, expand=True)
            has_cut = parts.shape[1] == 2 and parts[1].notna().all()
            df["metric"] = parts[0]
            df["cutoff"] = pd.to_numeric(parts[1], errors="coerce") if has_cut else 0
        df["metric"] = df["metric"].astype(str)
        cut = pd.to_numeric(df["cutoff"], errors="coerce")
        if cut.isna().any() or (cut != cut.round()).any():
            raise input_error(source, "cutoff", "must hold integers")
        df["cutoff"] = cut.astype(np.int64)
        if "system" in df.columns:
            df["system"] = df["system"].astype(str)
            names = sorted(df["system"].unique())
            # each system's position among the sorted names, looked up by hash (a dict's .map
            # called Python per row: seconds for a table of millions)
            df["config_id"] = pd.Index(names).get_indexer(df["system"]).astype(np.int64)
        else:
            ids = pd.to_numeric(df["config_id"], errors="coerce")
            if ids.isna().any() or (ids != ids.round()).any():
                raise input_error(source, "config_id", "must hold integers")
            df["config_id"] = ids.astype(np.int64)
        value = pd.to_numeric(df["value"], errors="coerce")
        if value.isna().any() and not df["value"].isna().equals(value.isna()):
            raise input_error(source, "value", "must hold numbers")
        df["value"] = value.astype(np.float64)
        df = df[df["value"].notna()]
        dup = df.duplicated(_KEY)
        if dup.any():
            row = df[dup].iloc[0]
            raise input_error(source, "user", "duplicated row for " + ", ".join(
                f"{k}={row[k]}" for k in _KEY))
        self.source = source
        self._users = np.sort(df["user"].unique())  # every user, sorted: user_keys
        users = pd.Series(self._users, dtype=object)
        #: every user id written as an integer (``17``, never ``017``): the bootstrap's keys
        self._integer_ids = self._users.dtype.kind in "iu" or bool(
            users.map(lambda u: isinstance(u, str)).all()
            and users.str.fullmatch(r"-?(0|[1-9][0-9]*)").all())
        self._algorithms = df["algorithm"].drop_duplicates().tolist()  # first-appearance order
        self._hps = hps
        cfg_cols = ["config_id"] + (["system"] if "system" in df.columns else []) + hps
        self._configs = {}
        for alg, g in df.groupby("algorithm", sort=False):
            c = g[cfg_cols].drop_duplicates("config_id").sort_values("config_id")
            self._configs[alg] = c.reset_index(drop=True)
        self._matrices: dict[tuple[str, str, str, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for (alg, fold, metric, cutoff), g in df.groupby(["algorithm", "fold", "metric", "cutoff"],
                                                         sort=False):
            wide = g.pivot(index="config_id", columns="user", values="value").sort_index()
            self._matrices[(alg, fold, metric, int(cutoff))] = (
                wide.index.to_numpy(np.int64), wide.columns.to_numpy(), wide.to_numpy(np.float64))
        self._folds = {a: sorted({k[1] for k in self._matrices if k[0] == a}) for a in self._algorithms}
        self._mcs = {a: sorted({(k[2], k[3]) for k in self._matrices if k[0] == a},
                               key=lambda mc: metric_key(*mc)) for a in self._algorithms}

    def algorithms(self) -> list[str]:
        return list(self._algorithms)

    def configs(self, algorithm: str) -> pd.DataFrame:
        return self._configs[algorithm].copy()

    def hyperparameters(self, algorithm: str) -> list[str]:
        return list(self._hps)

    def folds(self, algorithm: str) -> list[str]:
        return list(self._folds[algorithm])

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return list(self._mcs[algorithm])

    def user_keys(self, users: np.ndarray) -> np.ndarray:
        """The users' keys for the bootstrap, as a result store would hold them: integer users
        as they are (a store's ``per_user.parquet`` holds its user codes; the bootstrap
        compares keys as text, so ids written as integers, ``17`` but never ``017``, are the
        same keys whether a Parquet file holds them as numbers or a CSV file as text), other
        ids as their positions among every user of the table, sorted (the codes a sweep gives
        a data set's users). So a table and the store it came from draw the same user groups."""
        users = np.asarray(users)
        if self._integer_ids:
            return users
        return np.searchsorted(self._users, users)

    def fold_users(self) -> dict[str, dict[str, int]]:
        """``algorithm -> validation fold -> users``: the fewest users with a value, over the
        fold's metrics@N. No pair of the fold is tested on more (a pair's users have a value
        for both its configurations), so a fold refused on these counts would be refused after
        the fold loop too, and is refused before it (the test split is never part of DP)."""
        out: dict[str, dict[str, int]] = {}
        for (alg, fold, _metric, _cutoff), (_ids, users, _values) in self._matrices.items():
            if fold != "test":
                folds = out.setdefault(alg, {})
                folds[fold] = min(folds.get(fold, len(users)), len(users))
        return out

    def incomplete(self) -> list[dict[str, object]]:
        """Where the table is not complete: one record per (algorithm, fold, metric@N) in which
        some configuration has no value for a user that another configuration has (validation
        folds only: the test split is never part of DP). A scope's
        pairs are tested on the users for whom every configuration of the scope has a value
        (:meth:`read_matrix`, as for a sweep, whose configurations all score every user), so
        each record says how many users scope ``all`` compares: ``users`` (with any value),
        ``complete`` (with a value for every configuration of the algorithm), and the
        configuration with the fewest values (``fewest``, its ``system`` name when the table
        names systems, and ``fewest_users``). Empty for a complete table."""
        out: list[dict[str, object]] = []
        for (alg, fold, metric, cutoff), (ids, users, values) in self._matrices.items():
            if fold == "test":  # the test split: DP never reads it
                continue
            all_ids = self._configs[alg]["config_id"].to_numpy(np.int64)
            counts = dict.fromkeys(all_ids.tolist(), 0)
            counts.update(zip(ids.tolist(), (~np.isnan(values)).sum(axis=1).tolist(), strict=True))
            complete = int((~np.isnan(values)).all(axis=0).sum()) if len(ids) == len(all_ids) else 0
            if complete == len(users):
                continue
            fewest = min(counts, key=lambda c: (counts[c], c))
            names = self._configs[alg].set_index("config_id").get("system")
            out.append({"algorithm": alg, "fold": fold, "metric": metric, "cutoff": int(cutoff),
                        "users": int(len(users)), "complete": complete, "fewest": int(fewest),
                        **({"system": str(names[fewest])} if names is not None else {}),
                        "fewest_users": int(counts[fewest])})
        return out

    def read_matrix(self, algorithm: str, metric: str, cutoff: int, fold: str,
                    config_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Users with a value for every configuration in ``config_ids`` and their values
        ``(len(config_ids), n_users)``, configurations in the given order."""
        key = (algorithm, str(fold), metric, int(cutoff))
        ids = np.asarray(config_ids, dtype=np.int64)
        if key not in self._matrices:
            return np.zeros(0), np.zeros((len(ids), 0))
        have, users, values = self._matrices[key]
        pos = np.searchsorted(have, ids)
        pos = np.minimum(pos, len(have) - 1)
        found = have[pos] == ids
        rows = np.full((len(ids), values.shape[1]), np.nan)
        rows[found] = values[pos[found]]
        keep = ~np.isnan(rows).any(axis=0)
        return users[keep], rows[:, keep]
