"""Identity of the result store's parts: which experiment, algorithm, fold, unit and
configurations a part holds, checked against the manifest before the part is trusted.

A checksum proves that a part's bytes are the ones written; it does not prove that they were
written for *this* results directory. A part copied from a run of the same experiment with
another seed, a part renamed to another fold or unit, or a part under a name no unit of the
grid has would otherwise be read as one of ours and change the numbers without a word. So
every part carries its identity three times, and each is checked:

- its **name**, ``<algorithm>__<fold>__<unit>.parquet`` (a noise-floor part
  ``<algorithm>__<fold>__c<config id>.parquet``): the algorithm must be one of the manifest's,
  the fold a validation fold of the split (or ``test``), the unit one of the grid's units
  (the manifest lists them, ``algorithms[].units``: unit ``uK`` holds ``units[K]``), a
  noise-floor configuration a configuration of a stochastic algorithm;
- its **index entry** (:mod:`dptune.store._integrity`): the file it was written for and the
  experiment fingerprint of the set-up that wrote it;
- its own **metadata** (the ``dptune`` key-value metadata of the Parquet footer): algorithm,
  fold, unit (or configuration) and configuration ids, and the fingerprint.

A part whose identity disagrees is :class:`Foreign`, "not from this experiment": readers refuse
it with one line naming it, and ``dptune run`` sets it aside (moves it, with its entry, into
``<results>/quarantine/``, nothing is deleted) and computes this experiment's unit again.
The expectations come from the manifest only (:func:`expected`), so the analysis and
``dptune status`` check parts without the experiment file. A manifest written before the
units were recorded is checked on everything else (configuration ids within the grid).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dptune.store._schema import NOISE_DIR, part_fields, validation_unit

__all__ = ["QUARANTINE", "IDENTITY_KEYS", "Foreign", "Expected", "AlgorithmGrid", "expected",
           "identity", "name_problem", "entry_problem", "meta_problem"]

#: Folder of a results directory where ``dptune run`` sets aside what is not from this
#: experiment (same layout inside: ``per_user.parquet/``, ``noise_floor.parquet/``, ``index/``).
QUARANTINE = "quarantine"

_UNIT = re.compile(r"u(\d{5,})")
_TEST_UNIT = re.compile(r"t[0-9a-f]{8}")
_NOISE_CONFIG = re.compile(r"c(\d{6,})")


class Foreign(str):
    """Why a part (or an index entry) is not from this experiment: a reason, as a ``str``, that
    readers and :func:`dptune.store._integrity.heal` tell apart from damage (a damaged part is
    removed and recomputed; a foreign one is set aside, never deleted)."""

    __slots__ = ()


@dataclass(frozen=True)
class AlgorithmGrid:
    """What the manifest says about one algorithm: its number of configurations, its
    validation units (``units[k]``: the configuration ids of unit ``uk``) and its model type
    (whether its training takes a seed, :attr:`stochastic`); ``None`` where the manifest does
    not say (one written before the field existed: not checked)."""

    type: str
    n_configs: int | None
    units: tuple[frozenset[int], ...] | None

    @property
    def stochastic(self) -> bool:
        """Whether the algorithm gets a noise floor (:func:`dptune.models.is_stochastic`)."""
        from dptune.models._families import is_stochastic

        return is_stochastic(self.type)


@dataclass(frozen=True)
class Expected:
    """The identity every part of a results directory must have, from its manifest."""

    fingerprint: str | None
    folds: int
    algorithms: dict[str, AlgorithmGrid]
    #: the manifest file's (size, mtime_ns, inode) these expectations were read from
    stamp: tuple[int, ...] = ()

    @classmethod
    def of(cls, manifest: dict[str, Any], stamp: tuple[int, ...] = ()) -> Expected:
        """The expectations of a parsed manifest (fields it lacks are not checked)."""
        algs = {}
        for a in manifest.get("algorithms") or []:
            units = a.get("units")
            algs[str(a["name"])] = AlgorithmGrid(
                type=str(a.get("type", "")),
                n_configs=None if a.get("n_configs") is None else int(a["n_configs"]),
                units=None if units is None else tuple(frozenset(int(c) for c in u) for u in units))
        fp = manifest.get("fingerprint")
        return cls(fingerprint=str(fp) if fp else None,
                   folds=int((manifest.get("split") or {}).get("folds", 0)), algorithms=algs,
                   stamp=stamp)


#: A manifest file's ``(size, mtime_ns, inode)``: a rewrite changes it (manifests are replaced
#: atomically, so a rewrite is a new inode).
Stamp = tuple[int, int, int]

_T = TypeVar("_T")


def per_manifest(cache: dict[str, tuple[Stamp, _T | None]], root: Path,
                 compute: Callable[[Stamp], _T | None]) -> _T | None:
    """``compute(stamp)`` of the manifest in ``root``, kept in ``cache`` (``root -> (stamp,
    answer)``, one per question, for this process) until the manifest file changes; ``None``
    when there is no manifest. What is read off the manifest for every part read or written
    is read once: the manifest lists every unit of the grid, so parsing it for each part grew
    with the square of the grid."""
    try:
        st = os.stat(Path(root) / "manifest.json")
    except OSError:
        return None
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    hit = cache.get(str(root))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    answer = compute(stamp)
    cache[str(root)] = (stamp, answer)
    return answer


#: ``root -> (manifest stamp, Expected | None)`` of this process.
_CACHE: dict[str, tuple[Stamp, Expected | None]] = {}


def expected(root: Path) -> Expected | None:
    """The expectations of the results directory ``root`` from its manifest (cached until the
    manifest changes, :func:`per_manifest`); ``None`` when it has no readable, undamaged
    manifest (then nothing can be checked here, and the readers that need the manifest stop
    with their own line)."""
    from dptune.errors import DptuneError
    from dptune.store._files import read_manifest

    def of(stamp: Stamp) -> Expected | None:
        try:
            return Expected.of(read_manifest(Path(root)), stamp)
        except (DptuneError, KeyError, TypeError, ValueError):
            return None

    return per_manifest(_CACHE, root, of)


def name_problem(part: Path, exp: Expected) -> Foreign | None:
    """Why the name of ``part`` (a unit's or a noise-floor part) names nothing of this
    experiment's grid, or ``None``."""
    part = Path(part)
    pieces = part_fields(part.name)
    noise = part.parent.name == NOISE_DIR
    shape = "<algorithm>__<fold>__c<config id>" if noise else "<algorithm>__<fold>__<unit>"
    if pieces is None:
        return Foreign(f"its name is not {shape}.parquet")
    alg, fold, unit = pieces
    grid = exp.algorithms.get(alg)
    if grid is None:
        return Foreign(f"algorithm {alg!r} is not in the experiment "
                       f"({', '.join(exp.algorithms) or 'none'})")
    validation = fold.isdigit() and str(int(fold)) == fold and (exp.folds == 0 or int(fold) < exp.folds)
    if not validation and not (fold == "test" and not noise):
        folds = f"0 to {exp.folds - 1}" if exp.folds else "the validation folds"
        return Foreign(f"fold {fold!r} is not a fold of the split ({folds}"
                       f"{'' if noise else ' or test'})")
    if noise:
        m = _NOISE_CONFIG.fullmatch(unit)
        if m is None:
            return Foreign(f"{unit!r} is not a configuration name (c and 6 digits)")
        if grid.n_configs is not None and int(m.group(1)) >= grid.n_configs:
            return Foreign(f"{unit!r} is not a configuration of {alg} (c000000 to "
                           f"c{max(grid.n_configs - 1, 0):06d})")
        if grid.type and not grid.stochastic:
            return Foreign(f"{alg} trains without a seed and has no noise floor")
        return None
    if grid.units is None:  # a manifest that does not list the units: names are not checked
        return None
    if fold == "test":
        return None if _TEST_UNIT.fullmatch(unit) else Foreign(
            f"{unit!r} is not a test-split unit name (t and 8 hex digits)")
    m = _UNIT.fullmatch(unit)
    if m is None:
        return Foreign(f"{unit!r} is not a unit name (u and 5 digits)")
    if int(m.group(1)) >= len(grid.units):
        n = len(grid.units)
        return Foreign(f"unit {unit} is not in the grid of {alg} ({n} unit{'s' if n != 1 else ''}, "
                       f"u00000 to {validation_unit(max(n - 1, 0))})")
    return None


def entry_problem(part: Path, entry: dict[str, Any], exp: Expected) -> Foreign | None:
    """Why the index entry of ``part`` belongs to another file or experiment, or ``None``."""
    part = Path(part)
    here = f"{part.parent.name}/{part.name}"
    written = entry.get("file")
    if written is not None and written != here:
        return Foreign(f"its index entry was written for {written}")
    fp = entry.get("fingerprint")
    if fp and exp.fingerprint and str(fp) != exp.fingerprint:
        return Foreign(f"written by experiment set-up {fp}, the manifest's is {exp.fingerprint}")
    if "algorithm" in entry:  # entries record the identity of their part (older ones do not)
        return meta_problem(part, entry, exp)
    return None


#: The keys of a part's metadata that say what it holds; its index entry records them too.
IDENTITY_KEYS = ("algorithm", "fold", "unit", "config_ids", "config_id", "fingerprint")


def identity(meta: dict[str, Any]) -> dict[str, Any]:
    """The identity fields of a part's metadata (:data:`IDENTITY_KEYS` it has)."""
    return {k: meta[k] for k in IDENTITY_KEYS if k in meta}


def meta_problem(part: Path, meta: dict[str, Any], exp: Expected) -> Foreign | None:
    """Why the footer metadata of ``part`` describes something else than its name, another
    experiment or configurations outside the grid, or ``None``."""
    part = Path(part)
    pieces = part_fields(part.name)
    if pieces is None:  # pragma: no cover - name_problem refuses it first
        return Foreign("its name is not a part name")
    alg, fold, unit = pieces
    fp = meta.get("fingerprint")
    if fp and exp.fingerprint and str(fp) != exp.fingerprint:
        return Foreign(f"written by experiment set-up {fp}, the manifest's is {exp.fingerprint}")
    if meta.get("algorithm") != alg or str(meta.get("fold")) != fold:
        return Foreign(f"it holds {meta.get('algorithm')!s} on fold {meta.get('fold')!s}, its "
                       f"name says {alg} on fold {fold}")
    grid = exp.algorithms.get(alg)
    n = grid.n_configs if grid is not None else None
    if part.parent.name == NOISE_DIR:
        cid = meta.get("config_id")
        if not isinstance(cid, int) or f"c{cid:06d}" != unit:
            return Foreign(f"it holds configuration {cid}, its name says {unit}")
        return None
    if meta.get("unit") != unit:
        return Foreign(f"it holds unit {meta.get('unit')}, its name says {unit}")
    ids = meta.get("config_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(c, int) for c in ids):
        return Foreign("its metadata names no configuration")
    outside = [c for c in ids if c < 0 or (n is not None and c >= n)]
    if outside:
        return Foreign(f"configuration {outside[0]} is not in the grid of {alg} "
                       f"({n} configurations)")
    m = _UNIT.fullmatch(unit)
    if grid is not None and grid.units is not None and m is not None:
        want = grid.units[int(m.group(1))]
        if set(ids) != want:
            return Foreign(f"it holds configurations {sorted(ids)}, unit {unit} of the grid is "
                           f"{sorted(want)}")
    return None
