"""The result store's small files: ``manifest.json``, ``configs.csv``, ``users.csv`` and
``trials.csv``, each written atomically (:func:`dptune._atomic.write_text`) with ``\\n`` line
ends, and read back with one-line errors naming the file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune._atomic import write_text
from dptune.errors import input_error

__all__ = ["write_manifest", "read_manifest", "write_configs", "read_configs", "write_users",
           "write_trials_csv"]


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` (indented, sorted keys, atomically)."""
    write_text(Path(root) / "manifest.json",
               json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")


def read_manifest(root: Path) -> dict[str, Any]:
    """The parsed ``manifest.json``; missing or invalid is a one-line error."""
    path = Path(root) / "manifest.json"
    try:
        return json.loads(path.read_text())
    except OSError:
        raise input_error(path, None, "not a dptune results directory (manifest.json missing)") from None
    except json.JSONDecodeError as err:
        raise input_error(path, None, f"invalid JSON: {err}") from None


def write_configs(root: Path, frames: Sequence[pd.DataFrame]) -> None:
    """Write ``configs.csv``: one row per (algorithm, config_id), hyperparameters as columns."""
    df = pd.concat(list(frames), ignore_index=True, sort=False)
    write_text(Path(root) / "configs.csv", df.to_csv(index=False, lineterminator="\n"))


def read_configs(root: Path) -> pd.DataFrame:
    """``configs.csv`` as a frame; missing is a one-line error."""
    path = Path(root) / "configs.csv"
    try:
        return pd.read_csv(path)
    except OSError:
        raise input_error(path, None, "missing: not a complete dptune results directory") from None


def write_users(root: Path, user_ids: np.ndarray) -> None:
    """Write ``users.csv``: the user code used in the store and the original user id."""
    df = pd.DataFrame({"user": np.arange(len(user_ids), dtype=np.int32), "user_id": user_ids})
    write_text(Path(root) / "users.csv", df.to_csv(index=False, lineterminator="\n"))


def write_trials_csv(root: Path, trials: pd.DataFrame) -> None:
    """Write ``trials.csv`` (derived from the parts' metadata)."""
    write_text(Path(root) / "trials.csv", trials.to_csv(index=False, lineterminator="\n"))
