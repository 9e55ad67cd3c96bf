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
CHECKED = ("configs.csv", "users.csv")

__all__ = ["check_file", "write_manifest", "read_manifest", "write_configs", "read_configs", "write_users",
           "write_trials_csv"]


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
    return manifest


def check_file(root: Path, name: str) -> None:
    """``name`` (``configs.csv``, ``users.csv``) against the checksum in the manifest; a
    difference is a one-line error."""
    path = Path(root) / name
    expected = read_manifest(root).get("files", {}).get(name)
    if expected is None or not path.is_file():
        return
    if _digest(path.read_bytes()) != expected:
        raise input_error(path, None, "damaged (its checksum differs from the manifest's); "
                          "`dptune run` with the experiment's file rewrites it")


def write_configs(root: Path, frames: Sequence[pd.DataFrame]) -> None:
    """Write ``configs.csv``: one row per (algorithm, config_id), hyperparameters as columns."""
    df = pd.concat(list(frames), ignore_index=True, sort=False)
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
