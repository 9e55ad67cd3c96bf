"""The result store: every per-user metric value of a sweep, written crash-safely, read by slice.

:class:`ResultStore` is the one object callers hold; its methods delegate to one-idea modules:
``_schema`` (layout, schema, :class:`UnitResult`), ``_parts`` (writing parts), ``_files``
(manifest, configs, users, trials files), ``_integrity`` (size and checksum of every part,
verified before it is read), ``_index`` (reading part metadata: trials, means, best
configurations) and ``_fold`` (reading values: :func:`read_matrix`, :func:`read_fold`,
:class:`FoldSlice`, :class:`FoldBuffer`).

The layout of a results directory (a documented contract: README, docs/design.md) is described
in :mod:`dptune.store._schema`: one Parquet part per trained unit under ``per_user.parquet/``,
plus ``configs.csv``, ``users.csv``, ``manifest.json`` and the derived ``trials.csv``.

The directory reads as one data set with ``pandas.read_parquet`` or ``pyarrow.dataset``
(hidden files are ignored by both).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.errors import DptuneError, check_path, input_error, plain
from dptune.store._files import (
    read_configs,
    read_manifest,
    write_configs,
    write_manifest,
    write_trials_csv,
    write_users,
)
from dptune.store._fold import FoldBuffer, FoldSlice, read_fold, read_matrix
from dptune.store._index import (
    Index,
    best_configs_frame,
    build_index,
    part_meta,
    part_paths,
    summary_frame,
    trials_frame,
)
from dptune.store._integrity import (
    damaged_error,
    heal,
    lost_parts,
    lost_problem,
    problem,
    store_fingerprint,
    verified,
)
from dptune.store._noise_parts import noise_part_paths
from dptune.store._parts import remove_stale_temporaries, write_part
from dptune.store._schema import (
    LAYOUT,
    NOISE_DIR,
    PARTS,
    SCHEMA,
    STALE_TEMPORARY_S,
    TRIAL_COLUMNS,
    UnitResult,
    part_name,
)

__all__ = ["ResultStore", "UnitResult", "FoldBuffer", "FoldSlice", "part_name", "PARTS",
           "LAYOUT", "SCHEMA", "STALE_TEMPORARY_S", "TRIAL_COLUMNS"]


class ResultStore:
    """Reader and writer of one results directory.

    The reading side implements the protocol :func:`dptune.analysis.dp.fold_loop.run_fold_loop` uses:
    ``algorithms``, ``configs``, ``hyperparameters``, ``folds``, ``metric_cutoffs`` and
    ``read_matrix`` (plus ``read_fold`` for the batched path).
    """

    def __init__(self, root: str | Path, skip_damaged: bool = False):
        """``skip_damaged``: leave damaged parts out of the index (listed by :meth:`damaged`)
        instead of refusing them with a one-line error (readers: the analysis)."""
        check_path(root, "ResultStore", "root", "the results directory")
        self.root = Path(root)
        self._damaged: list[tuple[Path, str]] | None = [] if skip_damaged else None

    # ----------------------------------------------------------------- writing
    def create(self) -> ResultStore:
        """Create the directory tree; an unwritable location is a one-line error."""
        try:
            (self.root / PARTS).mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-probe-{uuid.uuid4().hex}"
            probe.write_text("")
            probe.unlink()
        except OSError as err:
            raise input_error(self.root, None, f"results directory is not writable ({err.strerror})") from None
        return self

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write ``manifest.json`` (sorted keys, atomically)."""
        write_manifest(self.root, manifest)

    def write_configs(self, frames: Sequence[pd.DataFrame]) -> None:
        """Write ``configs.csv``: one row per (algorithm, config_id), hyperparameters as columns."""
        write_configs(self.root, frames)

    def write_users(self, user_ids: np.ndarray) -> None:
        """Write ``users.csv``: the user code used in the store and the original user id."""
        write_users(self.root, user_ids)

    def has_part(self, algorithm: str, fold: str, unit: str) -> bool:
        """Whether the unit's part is written and verified (finished units are never
        recomputed; a damaged or missing part counts as not done)."""
        return verified(self.root / PARTS / part_name(algorithm, fold, unit))

    def fingerprint(self) -> str | None:
        """The experiment fingerprint of the manifest (``None`` when unreadable)."""
        return store_fingerprint(self.root)

    def holds_results(self) -> bool:
        """Whether any part (unit or noise floor) was written here."""
        return any(self.root.glob(f"{PARTS}/[!.]*.parquet")) or any(
            self.root.glob("noise_floor.parquet/[!.]*.parquet"))

    def all_parts(self) -> list[Path]:
        """Every part file of the store (units, then noise floor), damaged ones included."""
        return self.part_paths() + noise_part_paths(self.root, check_lost=False)

    def damaged(self) -> list[tuple[Path, str]]:
        """``(part, reason)`` of every part that fails verification (size or checksum differ
        from its index entry, the entry is missing or damaged, the part does not decode) or is
        not from this experiment (the reason is then a
        :class:`~dptune.store._identity.Foreign`; for an index entry without its part, the
        path is the part's)."""
        lost = [(p, lost_problem(p)) for d in (PARTS, NOISE_DIR) for p in lost_parts(self.root, d)]
        return lost + [(p, why) for p in self.all_parts() if (why := problem(p)) is not None]

    def heal(self) -> list[tuple[Path, str]]:
        """Remove the damaged parts (their units are then computed again by the sweep), set
        aside the parts not from this experiment in ``quarantine/``, and record the index
        entries of a store written before they existed; return what was removed or set aside
        (:func:`dptune.store._integrity.heal`)."""
        removed = heal(self.root, self.all_parts(), self.fingerprint())
        self.refresh()
        return removed

    def write_unit(self, res: UnitResult) -> Path:
        """Write one unit's part atomically (temporary file, fsync, rename).

        Two workers that computed the same unit produce the same values (results are seeded
        deterministically); the first part written is kept and a duplicate is discarded
        (:func:`dptune._atomic.publish_once`), so a finished part never changes and is never
        counted twice.
        """
        final = write_part(self.root, res, self.fingerprint())
        self.refresh()
        return final

    def remove_stale_temporaries(self, older_than_s: float = STALE_TEMPORARY_S) -> list[Path]:
        """Delete the hidden ``.*.tmp`` files of writers that died mid-write (untouched for
        ``older_than_s``, default one hour); return them."""
        return remove_stale_temporaries(self.root, older_than_s)

    def write_trials(self) -> pd.DataFrame:
        """Regenerate ``trials.csv`` from the parts' metadata and return it."""
        df = self.trials()
        write_trials_csv(self.root, df)
        return df

    # ----------------------------------------------------------------- reading metadata
    def exists(self) -> bool:
        """Whether this looks like a results directory (has a manifest)."""
        return (self.root / "manifest.json").exists()

    def manifest(self) -> dict[str, Any]:
        """The parsed ``manifest.json``."""
        return read_manifest(self.root)

    def part_paths(self, algorithm: str | None = None, fold: str | None = None) -> list[Path]:
        """Finished parts, optionally of one algorithm and fold, in name order."""
        return part_paths(self.root, algorithm, fold)

    @staticmethod
    def part_meta(path: Path) -> dict[str, Any]:
        """The ``dptune`` metadata of one part (seed, configs, timings, means)."""
        return part_meta(path)

    @cached_property
    def _index(self) -> Index:
        index = build_index(self.root, self._damaged)
        if self._damaged is None:  # the noise floor's parts too, before any work on them
            for p in noise_part_paths(self.root):
                if (why := problem(p)) is not None:
                    raise damaged_error(p, why)
        return index

    @cached_property
    def _summary(self) -> pd.DataFrame:
        return summary_frame(self._index)

    def refresh(self) -> None:
        """Forget cached part metadata (after parts were added by another process)."""
        self.__dict__.pop("_index", None)
        self.__dict__.pop("_summary", None)
        if self._damaged is not None:
            self._damaged.clear()

    def _read(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame``, unless it is empty because ``root`` is no results directory (a misspelt
        path reads as a store without results otherwise): then one line."""
        if frame.empty and not self.exists():
            raise input_error(self.root, None, "not a results directory (no manifest.json): "
                              "give the folder dptune run or dptune.sweep wrote")
        return frame

    def trials(self) -> pd.DataFrame:
        """One row per (algorithm, config_id, fold) evaluated: seed, unit, timings, users."""
        return self._read(trials_frame(self._index))

    def summary(self) -> pd.DataFrame:
        """Per (algorithm, config_id, fold, metric, cutoff) the mean over users, from metadata
        only (built once per :meth:`refresh`; each call returns a copy); a folder that is no
        results directory is a one-line error."""
        return self._read(self._summary).copy()

    def best_configs(self) -> pd.DataFrame:
        """The configuration each metric@cutoff would pick: highest mean over validation folds of
        the per-fold mean over users (ties: lowest config_id).

        Columns ``algorithm, metric, cutoff, config_id, validation_mean, n_folds``.
        """
        return best_configs_frame(self.summary())

    def algorithms(self) -> list[str]:
        """Algorithm names in experiment order."""
        return [a["name"] for a in self.manifest()["algorithms"]]

    def _unknown_algorithm(self, algorithm: object, names: Sequence[str] | None = None) -> DptuneError:
        """The one-line error of an ``algorithm`` argument the store does not have, naming the
        ones it has (``names``, default :meth:`algorithms`)."""
        names = self.algorithms() if names is None else names
        return input_error(self.root, "algorithm", f"{plain(algorithm)} is not an algorithm of "
                           f"this store ({', '.join(names)})")

    def _check_algorithm(self, algorithm: object) -> None:
        """:meth:`_unknown_algorithm` unless ``algorithm`` is one of the manifest's. Readers call
        it only when they found nothing (no configuration, fold or part), so that a misspelt
        name is one line instead of an empty answer, at no cost to the usual call."""
        names = self.algorithms()
        if algorithm not in names:
            raise self._unknown_algorithm(algorithm, names)

    @cached_property
    def _configs(self) -> pd.DataFrame:
        return read_configs(self.root)

    @cached_property
    def _configs_text(self) -> pd.DataFrame | None:
        """``configs.csv`` as text, cell by cell (an empty cell is ``""``), with the rows and
        columns of :attr:`_configs`; ``None`` when the text does not line up with them (the
        file changed between the two reads) or cannot be read again.

        The file is written with each value as its grid gave it
        (:func:`dptune.store._files.write_configs`), so the text keeps the grid's type where
        the parsed frame cannot: a column shared by two algorithms, or one that another
        algorithm lacks (an empty cell), is parsed as float for every row."""
        parsed = self._configs
        try:
            text = pd.read_csv(self.root / "configs.csv", dtype=str, keep_default_na=False)
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if list(text.columns) != list(parsed.columns) or len(text) != len(parsed):
            return None
        return text

    def configs(self, algorithm: str) -> pd.DataFrame:
        """``config_id`` and hyperparameter columns of one algorithm (columns it does not use
        dropped); an algorithm the store does not have is a one-line error.

        A hyperparameter every configuration of the algorithm has as an integer in
        ``configs.csv`` (its grid's values are integers: ``k = 20``) is an ``int64`` column,
        its values read from the file's text: the file pads the columns other algorithms use
        with empty cells, which makes pandas parse every value of such a column as a float
        (``k = 20.0``), or parse it as text when another algorithm's values in it are text. A
        grid's float that happens to be whole (``lamb = 20.0``, written so) stays a float; a
        column of ``True``/``False`` is ``bool``."""
        rows = (self._configs["algorithm"] == algorithm).to_numpy()
        df = self._configs[rows].drop(columns="algorithm")
        if df.empty:
            self._check_algorithm(algorithm)
        df = df.dropna(axis=1, how="all")
        text = self._configs_text
        for col in df.columns if text is not None else ():
            if col == "config_id" or df[col].dtype.kind in "iub":
                continue
            cells = text.loc[rows, col]
            if cells.str.fullmatch(r"[+-]?[0-9]+").all():
                try:
                    df[col] = np.array([int(v) for v in cells], dtype=np.int64)
                except OverflowError:
                    pass  # beyond int64: the parsed values stay
            elif df[col].dtype.kind != "f" and cells.isin(["True", "False"]).all():
                df[col] = (cells == "True").to_numpy()
            elif df[col].dtype.kind != "f":  # beside another algorithm's text: floats as text
                numbers = pd.to_numeric(cells, errors="coerce")
                if numbers.notna().all():
                    df[col] = numbers.to_numpy(np.float64)
        return df.reset_index(drop=True)

    def hyperparameters(self, algorithm: str) -> list[str]:
        """The free (swept) hyperparameters of an algorithm; derived ones are excluded."""
        listed = self.manifest()["algorithms"]
        for a in listed:
            if a["name"] == algorithm:
                return list(a["free"])
        raise self._unknown_algorithm(algorithm, [a["name"] for a in listed])

    def folds(self, algorithm: str) -> list[str]:
        """Validation folds with results for this algorithm (never ``test``), in numeric order;
        an algorithm the store does not have is a one-line error (one without results yet has
        none)."""
        folds = {f for (a, f) in self._index if a == algorithm and f != "test"}
        if not folds:
            self._check_algorithm(algorithm)
        return sorted(folds, key=lambda f: (len(f), f))

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        """(metric, cutoff) pairs stored, in metric-then-cutoff order; an algorithm the store
        does not have is a one-line error."""
        man = self.manifest()
        names = [a["name"] for a in man["algorithms"]]
        if algorithm not in names:
            raise self._unknown_algorithm(algorithm, names)
        ev = man["evaluation"]
        return [(m, int(c)) for m in ev["metrics"] for c in ev["cutoffs"]]

    # ----------------------------------------------------------------- reading values
    def read_matrix(self, algorithm: str, metric: str, cutoff: int, fold: str,
                    config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """One slice as a (len(config_ids), n_users) float64 matrix over the users present for
        every requested configuration (inner join), users sorted (:func:`read_matrix`).

        An argument the store has nothing for is one line naming it and what the store has:
        ``algorithm``, ``fold`` (no results of the algorithm on it), ``metric``, ``cutoff``,
        ``config_ids`` (no results for the configuration)."""
        return read_matrix(self.root, self._slot(algorithm, fold), algorithm, metric, cutoff,
                           fold, config_ids)

    def _slot(self, algorithm: str, fold: str) -> dict[int, tuple[Path, dict[str, Any]]]:
        """The index of (``algorithm``, ``fold``); when it is empty, a one-line error naming the
        algorithm the store does not have, or the fold without results of it."""
        slot = self._index.get((algorithm, str(fold)))
        if slot:
            return slot
        self._check_algorithm(algorithm)
        has = sorted({f for (a, f) in self._index if a == algorithm}, key=lambda f: (len(f), f))
        raise input_error(self.root, "fold", f"{plain(fold)} has no results of {algorithm} "
                          f"(folds with results: {', '.join(has) or 'none yet'})")

    def read_fold(self, algorithm: str, fold: str, config_ids: Sequence[int],
                  metric_cutoffs: Sequence[tuple[str, int]], threads: int | None = None,
                  *, scan_all_users: bool = False,
                  buffer: FoldBuffer | None = None) -> FoldSlice:
        """Every requested (metric, cutoff) of ``config_ids`` on one fold, read in one pass
        (:func:`dptune.store._fold.read_fold`): the batched counterpart of :meth:`read_matrix`
        that :func:`dptune.analysis.dp.fold_loop.run_fold_loop` uses."""
        slot = self._slot(algorithm, fold) if len(config_ids) else {}
        return read_fold(self.root, slot, algorithm, str(fold), config_ids, metric_cutoffs,
                         threads, scan_all_users=scan_all_users, buffer=buffer)

    def read_slice(self, algorithm: str, metric: str, cutoff: int) -> pd.DataFrame:
        """Long-format rows of one (algorithm, metric, cutoff) across folds, via pyarrow filters."""
        import pyarrow.dataset as ds

        paths = sorted({str(p) for (a, _), slot in self._index.items() if a == algorithm
                        for p, _ in slot.values()})
        if not paths:
            self._check_algorithm(algorithm)
            return pd.DataFrame(columns=SCHEMA.names)
        d = ds.dataset(paths, schema=SCHEMA, format="parquet")
        flt = (ds.field("metric") == metric) & (ds.field("cutoff") == cutoff)
        return d.to_table(filter=flt).to_pandas()
