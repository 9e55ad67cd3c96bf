"""A result store over a per-user table from outside dptune (``dptune dp --per-user``): the
in-memory :class:`~dptune.store._frame.FrameStore` plus what the full analysis and report of a
sweep also read from a store (per-algorithm configurations and hyperparameters, per-fold means,
the best configurations), so that a per-user table exported from a dptune store gives the same
``dp.csv`` as the sweep that produced it.

- Algorithms are in the order of the configurations file when one is given (a store's
  ``configs.csv`` is in experiment order), else in order of first appearance.
- An algorithm's hyperparameters are the configurations file's columns with a value for it;
  a column that is a one-to-one function of an earlier one (a *derived* hyperparameter such as
  ``user_reg = 0.05 * learning_rate``; :func:`free_hyperparameters`) is shown in the
  configuration but gets no DP scope of its own, as in a sweep.
- ``summary`` holds ``mean_u v`` per (algorithm, configuration, fold, metric, cutoff) and
  ``best_configs`` picks, per metric@N, the highest mean over the validation folds (ties: the
  lowest configuration), with the store's own rule (:func:`dptune.store._index.best_configs_frame`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dptune.store._frame import FrameStore
from dptune.store._index import best_configs_frame

__all__ = ["PerUserStore", "free_hyperparameters", "SOURCES", "has_test_split"]

#: Where a store's values come from, as its manifest's ``source`` records it: ``"runs"`` (TREC
#: runs evaluated by ``dptune dp --runs``) or ``"per-user"`` (a per-user file or DataFrame). A
#: sweep's manifest has no ``source``: its values come from its own split and models.
SOURCES = ("runs", "per-user")


def has_test_split(manifest: Mapping[str, Any]) -> bool:
    """Whether a store's values include a held-out test split, from its manifest: a sweep's
    always does (its split holds one out); outside data only when it has a fold named
    ``test`` (its manifest's ``folds``). Reports and the verdict speak of a test split only
    when there is one."""
    if manifest.get("source") not in SOURCES:
        return True
    return "test" in manifest.get("folds", ())


def free_hyperparameters(configs: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` that are not a one-to-one function of an earlier column.

    Two columns ``a`` (earlier) and ``b`` are one-to-one when every value of ``a`` goes with one
    value of ``b`` and back: ``|unique(a, b)| = |unique(a)| = |unique(b)|`` over the
    configurations. In a grid two free hyperparameters with more than one value each never are
    (their values are crossed), so ``b`` is then a derived hyperparameter of ``a`` (a grid lists
    free hyperparameters before derived ones). A hyperparameter with one value after another
    one-valued column counts as derived too: its scopes would repeat scope ``all``.
    """
    out: list[str] = []
    for col in columns:
        b = configs[col].astype(str)
        pairs = (len(pd.DataFrame({"a": configs[p].astype(str), "b": b}).drop_duplicates())
                 for p in out)
        if not any(n == configs[p].astype(str).nunique() == b.nunique()
                   for p, n in zip(out, pairs, strict=True)):
            out.append(col)
    return out


class PerUserStore(FrameStore):
    """The store protocol of :func:`dptune.analysis.analyze` over a validated per-user table.

    ``per_user`` comes from :func:`dptune.store._per_user_file.read_per_user`, ``configs`` (or
    ``None``) from :func:`~dptune.store._per_user_file.read_per_user_configs`; ``source`` names
    the file in errors and in the report; ``kind`` (one of :data:`SOURCES`) is what the values are,
    recorded in the manifest.
    """

    def __init__(self, per_user: pd.DataFrame, configs: pd.DataFrame | None = None,
                 source: str | Path = "per_user", kind: str = "per-user"):
        if kind not in SOURCES:
            raise ValueError(f"kind must be one of {SOURCES}, got {kind!r}")
        self.kind = kind
        key = "config_id" if "config_id" in per_user.columns else "system"
        hps: list[str] = []
        frame = per_user
        if configs is not None:
            hps = [c for c in configs.columns if c not in ("algorithm", "config_id", "system")]
            frame = per_user.merge(configs, on=["algorithm", key], how="left", validate="m:1")
        super().__init__(frame, hyperparameters=hps, source=str(source))
        self.root = Path(source)
        order = list(dict.fromkeys(configs["algorithm"])) if configs is not None else []
        self._order = [a for a in order if a in self._algorithms] + [
            a for a in self._algorithms if a not in order]
        self._free = {}
        for alg in self._order:
            c = super().configs(alg)
            used = [h for h in hps if c[h].notna().any()]
            self._free[alg] = free_hyperparameters(c, used)
        cfg = self._config_frame(per_user, key)
        self._summary = self._means(per_user.merge(cfg, on=["algorithm", key], how="left"))
        self._n_users = int(per_user["user"].nunique())
        self._incomplete = self.incomplete()
        self._all_folds = sorted(per_user["fold"].astype(str).unique(), key=lambda f: (len(f), f))

    @classmethod
    def from_frame(cls, per_user: pd.DataFrame, configs: pd.DataFrame | None = None,
                   hyperparameters: Sequence[str] = (), source: str | Path = "per_user",
                   kind: str = "per-user") -> PerUserStore:
        """The in-memory store of a per-user DataFrame (checked as a per-user file is:
        :func:`dptune.store._per_user_file.check_per_user`).

        The configurations' hyperparameters come either as a separate ``configs`` table
        (``algorithm, config_id | system`` and one column per hyperparameter) or as the columns
        ``hyperparameters`` of ``per_user`` itself (one value per configuration). ``kind``:
        what the values are (``"per-user"``, or ``"runs"`` for evaluated TREC runs), recorded
        in the store's manifest so that the report speaks of the data as it is.
        """
        from dptune.errors import input_error, plain, unexpected_type
        from dptune.store._per_user_file import (
            PER_USER_COLUMNS,
            check_configs,
            check_hyperparameter_values,
            check_per_user,
        )

        if not isinstance(per_user, pd.DataFrame):
            raise input_error(source, None,
                              f"expected a pandas DataFrame, got {unexpected_type(per_user)}")
        hps = list(hyperparameters)
        missing = [h for h in hps if h not in per_user.columns]
        if missing:
            raise input_error(source, missing[0], "missing column (named in hyperparameters)")
        reserved = [h for h in hps if h in PER_USER_COLUMNS]
        if reserved:
            raise input_error(source, "hyperparameters", f"{reserved[0]!r} is a column of the "
                              "per-user table itself, not a hyperparameter")
        if hps and configs is not None:
            raise input_error(source, "hyperparameters",
                              "give configs or hyperparameters, not both")
        table = check_per_user(per_user.drop(columns=hps), source)
        if hps:
            key = "config_id" if "config_id" in table.columns else "system"
            values = pd.concat([table[["algorithm", key]], per_user[hps].reset_index(drop=True)],
                               axis=1)
            # rows are the table's (check_per_user keeps them in order): errors name the row
            check_hyperparameter_values(source, values, key, hps)
            for h in hps:  # the column at fault, not the first hyperparameter
                pairs = values[["algorithm", key, h]].drop_duplicates()
                twice = pairs.duplicated(["algorithm", key], keep=False)
                if twice.any():
                    row = pairs[twice].iloc[0]
                    both = pairs.loc[twice & (pairs["algorithm"] == row["algorithm"])
                                     & (pairs[key] == row[key]), h]
                    raise input_error(source, h, f"configuration {row['algorithm']}/{row[key]} "
                                      "has more than one value (" + ", ".join(
                                          plain(v) for v in both.iloc[:2]) + "): a "
                                      "hyperparameter has one value per configuration")
            configs = values.drop_duplicates()
        if configs is not None:
            configs = check_configs(configs, table, f"{source} (configurations)")
        return cls(table, configs, source=source, kind=kind)

    def _config_frame(self, per_user: pd.DataFrame, key: str) -> pd.DataFrame:
        """``algorithm, <key>, config_id``: the store's configuration ids of each key."""
        rows = [c.assign(algorithm=a) for a, c in self._configs.items()]
        cols = ["algorithm", key] + (["config_id"] if key != "config_id" else [])
        return pd.concat(rows, ignore_index=True)[cols].drop_duplicates()

    @staticmethod
    def _means(df: pd.DataFrame) -> pd.DataFrame:
        """``summary``: ``mean = (1/|U|) sum_u v_u`` per (algorithm, config, fold, metric@N)."""
        cols = ["algorithm", "config_id", "fold", "metric", "cutoff"]
        m = df.groupby(cols, sort=True)["value"].mean().rename("mean").reset_index()
        m["cutoff"] = m["cutoff"].astype(int)
        m["config_id"] = m["config_id"].astype(int)
        return m

    def algorithms(self) -> list[str]:
        """Algorithms in the configurations file's order (else first appearance)."""
        return list(self._order)

    def configs(self, algorithm: str) -> pd.DataFrame:
        """``config_id`` and the hyperparameter columns the algorithm uses."""
        return super().configs(algorithm).dropna(axis=1, how="all").reset_index(drop=True)

    def hyperparameters(self, algorithm: str) -> list[str]:
        """The algorithm's free hyperparameters (DP scopes ``h=v`` and ``only:h``)."""
        return list(self._free.get(algorithm, []))

    def summary(self) -> pd.DataFrame:
        """Per (algorithm, config_id, fold, metric, cutoff) the mean over users."""
        return self._summary.copy()

    def best_configs(self) -> pd.DataFrame:
        """The configuration each metric@N picks on the validation folds (store rule)."""
        return best_configs_frame(self._summary)

    def manifest(self) -> dict[str, Any]:
        """What the analysis and report read from a store's manifest: Table 1's row (the
        table's users; items and ratings unknown), the algorithms (type ``external``: no noise
        floor), where the values come from (``source``, one of :data:`SOURCES`) and the folds
        they hold (``folds``, ``test`` among them only when the data has a test split), and
        where the table is not complete (``incomplete``, :meth:`FrameStore.incomplete`: how many
        users the pairs of a configuration that lacks values are compared on), and the most
        users any pair of a validation fold can be tested on (``fold_users``,
        :meth:`FrameStore.fold_users`), which the analysis checks before its fold loop."""
        what = "runs" if self.kind == "runs" else "per-user table"
        return {
            "experiment": f"{what} {self.root.name}",
            "source": self.kind,
            "folds": list(self._all_folds),
            "dataset": {"name": self.root.name, "source": str(self.root), "users": self._n_users,
                        "items": float("nan"), "ratings": float("nan"),
                        "sparsity": float("nan")},
            "algorithms": [{"name": a, "type": "external", "free": self._free.get(a, [])}
                           for a in self._order],
            "incomplete": self._incomplete,
            "fold_users": self.fold_users(),
        }
