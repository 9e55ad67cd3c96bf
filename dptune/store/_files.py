"""The result store's small files: ``manifest.json``, ``configs.csv``, ``users.csv`` and
``trials.csv``, each written atomically (:func:`dptune._atomic.write_text`) with ``\\n`` line
ends, and read back with one-line errors naming the file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune._atomic import write_text
from dptune.errors import DptuneError, input_error

#: Small files whose checksum the manifest records.
#: The files a sweep derives beside its parts, whose checksums the manifest records and which
#: ``dptune run`` rewrites when damaged; ``analyze`` reads them.
CHECKED = ("configs.csv", "users.csv")

__all__ = ["check_file", "write_manifest", "read_manifest", "manifest_problem", "check_not_study",
           "side_file_problems", "write_configs", "read_configs", "write_users",
           "write_trials_csv"]

#: Sections of a manifest that are JSON objects when present (readers index into them).
_OBJECTS = ("config", "dataset", "split", "seeds", "analysis", "files", "versions")
#: Fields of a manifest that are text when present.
_TEXTS = ("fingerprint", "experiment_file")
#: Fields every writer of a manifest records (the sweep, the seed study, the benchmarks).
_REQUIRED = ("experiment", "algorithms", "evaluation")


def _manifest_text(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"


def _digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` (indented, sorted keys, atomically) with the checksums of
    ``configs.csv`` and ``users.csv`` when they are written (``files``) and its own
    (``checksum``: of the text without that key), so that damage is found when read."""
    root = Path(root)
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    files = {name: _digest((root / name).read_bytes()) for name in CHECKED
             if (root / name).is_file()}
    if files:
        body["files"] = files
    body = json.loads(_manifest_text(body))
    write_text(root / "manifest.json", _manifest_text({**body, "checksum": _digest(_manifest_text(body))}))


def read_manifest(root: Path) -> dict[str, Any]:
    """The parsed ``manifest.json``; missing, invalid or damaged is a one-line error."""
    path = Path(root) / "manifest.json"
    heal = "; `dptune run` with the experiment's file rewrites it"
    try:
        raw = path.read_bytes()
    except OSError:
        if (Path(root) / "per_user.parquet").is_dir():
            raise input_error(path, None, f"missing{heal}") from None
        if Path(root).is_file():  # an experiment file, a per-user table: not a store
            what = ("an experiment file: give the results directory its run wrote (or `dptune "
                    "status --config` with the file)" if Path(root).suffix == ".toml" else
                    "a file, not a results directory")
            raise input_error(root, None, what) from None
        raise input_error(path, None, "not a dptune results directory (manifest.json missing)") from None
    try:
        manifest = json.loads(raw.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise input_error(path, None, f"damaged (invalid JSON: {err}){heal}") from None
    if not isinstance(manifest, dict):
        raise input_error(path, None, f"damaged (not a JSON object){heal}")
    expected = manifest.pop("checksum", None)
    if expected is not None and expected != _digest(_manifest_text(manifest)):
        raise input_error(path, None, f"damaged (its checksum differs){heal}")
    found = manifest_problem(manifest)
    if found is not None:
        raise input_error(path, found[0], f"damaged ({found[1]}){heal}")
    return manifest


def _got(value: Any) -> str:
    """``value`` as a message names it: a JSON scalar as written (``5``, ``null``, ``"x"``,
    shortened), a container by its kind."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _is_int(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _algorithm_problem(i: int, a: Any) -> tuple[str, str] | None:
    """``(field, problem)`` of the ``i``-th entry of ``algorithms``, or ``None``."""
    where = f"algorithms[{i}]"
    if not isinstance(a, dict):
        return where, f"must be an object (name, type, free), got {_got(a)}"
    for key in ("name", "type"):
        if not isinstance(a.get(key), str) or not a[key]:
            return f"{where}.{key}", ("missing" if key not in a else
                                      f"must be a non-empty string, got {_got(a[key])}")
    free = a.get("free")
    if not isinstance(free, list) or not all(isinstance(h, str) for h in free):
        return f"{where}.free", ("missing" if "free" not in a else
                                 f"must be a list of hyperparameter names, got {_got(free)}")
    derived = a.get("derived", {})
    if not isinstance(derived, dict) or not all(
            isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
            and isinstance(v[1], (int, float)) and not isinstance(v[1], bool)
            for v in derived.values()):
        return f"{where}.derived", "must be an object of [source, scale] pairs"
    if "n_configs" in a and not _is_int(a["n_configs"]):
        return f"{where}.n_configs", f"must be an integer >= 0, got {_got(a['n_configs'])}"
    units = a.get("units", [])
    if not isinstance(units, list) or not all(
            isinstance(u, list) and all(_is_int(c) for c in u) for u in units):
        return f"{where}.units", "must be a list of lists of configuration ids"
    if "grid" in a and not isinstance(a["grid"], str):
        return f"{where}.grid", f"must be a string, got {_got(a['grid'])}"
    return None


def manifest_problem(manifest: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, problem)`` of the first field of a parsed manifest that readers could not use,
    or ``None``: ``experiment`` (text), ``algorithms`` (a non-empty list of ``{name, type,
    free, ...}``) and ``evaluation`` (``metrics`` and ``cutoffs`` lists) are required; the other
    sections, when present, must have their kind (objects, text). A field of the wrong kind is
    named before a missing one. Readers index into these fields directly, so a manifest that
    is valid JSON but not a dptune manifest (``{}``, ``{"config": 5}``) is one line here
    instead of a ``KeyError`` or ``TypeError`` in whichever reader meets it first."""
    for key in (*_REQUIRED, *_TEXTS, *_OBJECTS):
        if key not in manifest:
            continue
        value = manifest[key]
        if key in _OBJECTS and not isinstance(value, dict):
            return key, f"must be an object, got {_got(value)}"
        if key in (*_TEXTS, "experiment") and not isinstance(value, str):
            return key, f"must be a string, got {_got(value)}"
        if key == "algorithms":
            if not isinstance(value, list) or not value:
                return key, f"must be a non-empty list of algorithms, got {_got(value)}"
            for i, a in enumerate(value):
                if (found := _algorithm_problem(i, a)) is not None:
                    return found
            names = [a["name"] for a in value]
            if len(set(names)) < len(names):
                dup = next(n for n in names if names.count(n) > 1)
                return key, f"algorithm {dup!r} is listed twice"
        if key == "evaluation":
            if not isinstance(value, dict):
                return key, f"must be an object, got {_got(value)}"
            metrics, cutoffs = value.get("metrics"), value.get("cutoffs")
            if not isinstance(metrics, list) or not metrics or not all(
                    isinstance(m, str) and m for m in metrics):
                return "evaluation.metrics", ("missing" if metrics is None else
                                              f"must be a non-empty list of metric names, "
                                              f"got {_got(metrics)}")
            if not isinstance(cutoffs, list) or not cutoffs or not all(
                    _is_int(c, 1) for c in cutoffs):
                return "evaluation.cutoffs", ("missing" if cutoffs is None else
                                              "must be a non-empty list of integers >= 1, "
                                              f"got {_got(cutoffs)}")
        if key == "config" and "algorithms" in value:
            listed = value["algorithms"]
            if not isinstance(listed, list):
                return "config.algorithms", f"must be a list, got {_got(listed)}"
            for i, a in enumerate(listed):
                where = f"config.algorithms[{i}]"
                if not isinstance(a, dict) or not all(isinstance(a.get(k), str)
                                                      for k in ("name", "type")):
                    return where, "must be an object with a name and a type"
                if not isinstance(a.get("grid_path") or a.get("grid"), str):
                    return f"{where}.grid", "missing"
        if key == "split" and "folds" in value and not _is_int(value["folds"]):
            return "split.folds", f"must be an integer >= 0, got {_got(value['folds'])}"
    for key in _REQUIRED:
        if key not in manifest:
            return key, "missing"
    return None


def check_not_study(root: Path, manifest: dict[str, Any]) -> None:
    """One line when the store at ``root`` holds a part of a study (its manifest's ``study``:
    the split-seed study's per-seed grid stores), which that study's own command reads and
    reports, not a sweep's results that ``dptune analyze``, ``status`` or ``slices`` read."""
    if "study" in manifest:
        raise input_error(root, None, f"holds a part of a study ({manifest['study']}), which "
                          "its own command analyses and reports (dptune seeds); this command "
                          "reads the results of dptune run")


def check_file(root: Path, name: str, manifest: dict[str, Any] | None = None) -> None:
    """``name`` (``configs.csv``, ``users.csv``) against the checksum in the manifest (read
    from ``root`` unless given); a difference is a one-line error."""
    path = Path(root) / name
    if manifest is None:
        manifest = read_manifest(root)
    expected = manifest.get("files", {}).get(name)
    if expected is None or not path.is_file():
        return
    if _digest(path.read_bytes()) != expected:
        raise input_error(path, None, "damaged (its checksum differs from the manifest's); "
                          "`dptune run` with the experiment's file rewrites it")


def side_file_problems(root: Path) -> list[str]:
    """One line per file of :data:`CHECKED` that is missing or not the one the manifest's
    checksum records (:func:`check_file`), each naming the file and saying that ``dptune run``
    rewrites it: what ``dptune status`` lists beside the damaged parts (it was silent, while
    ``analyze`` refused the store). Nothing when the manifest itself cannot be read (status
    says so first)."""
    try:
        manifest = read_manifest(root)
    except DptuneError:
        return []
    out = []
    for name in CHECKED:
        path = Path(root) / name
        try:
            check_file(root, name, manifest)
        except DptuneError as err:
            out.append(str(err))
            continue
        if not path.is_file():
            out.append(str(input_error(path, None, "missing; `dptune run` with the "
                                       "experiment's file rewrites it")))
    return out


def write_configs(root: Path, frames: Sequence[pd.DataFrame]) -> None:
    """Write ``configs.csv``: one row per (algorithm, config_id), hyperparameters as columns.

    Each value is written as its own grid gave it: a column that two algorithms share, or that
    one of them lacks (an empty cell), would make pandas write every integer in it as a float
    (``k = 10.0``), so the frames are joined as Python objects."""
    df = pd.concat([f.astype(object) for f in frames], ignore_index=True, sort=False)
    write_text(Path(root) / "configs.csv", df.to_csv(index=False, lineterminator="\n"))
    _update_checksums(root)


def read_configs(root: Path) -> pd.DataFrame:
    """``configs.csv`` as a frame; missing is a one-line error."""
    path = Path(root) / "configs.csv"
    heal = "`dptune run` with the experiment's file rewrites it"
    try:
        check_file(root, "configs.csv")
        return pd.read_csv(path)
    except OSError:
        raise input_error(path, None, f"missing; {heal}") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise input_error(path, None, f"damaged ({type(err).__name__}); {heal}") from None


def write_users(root: Path, user_ids: np.ndarray) -> None:
    """Write ``users.csv``: the user code used in the store and the original user id."""
    df = pd.DataFrame({"user": np.arange(len(user_ids), dtype=np.int32), "user_id": user_ids})
    write_text(Path(root) / "users.csv", df.to_csv(index=False, lineterminator="\n"))
    _update_checksums(root)


def _update_checksums(root: Path) -> None:
    """Record the checksums of a rewritten ``configs.csv`` / ``users.csv`` in an existing,
    readable manifest (whatever order a writer writes the files in)."""
    if not (Path(root) / "manifest.json").is_file():
        return
    try:
        manifest = read_manifest(root)
    except DptuneError:
        return  # damaged: the next write_manifest replaces it
    write_manifest(root, manifest)


def write_trials_csv(root: Path, trials: pd.DataFrame) -> None:
    """Write ``trials.csv`` (derived from the parts' metadata)."""
    write_text(Path(root) / "trials.csv", trials.to_csv(index=False, lineterminator="\n"))
