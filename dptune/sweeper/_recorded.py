"""The experiment a results directory was made with, read back from the directory itself (its
manifest and, when it still describes the same set-up, its experiment file)."""

from __future__ import annotations

from pathlib import Path

from dptune.config import Experiment
from dptune.errors import DptuneError, input_error
from dptune.store._files import check_not_study
from dptune.store._store import ResultStore

__all__ = ["experiment_from_manifest"]


def experiment_from_manifest(store: ResultStore) -> Experiment:
    """The experiment a results directory was made with: its experiment file when it still
    describes the same set-up, else the set-up recorded in ``manifest.json`` (grid files must
    still exist). Lets ``dptune status RESULTS_DIR`` work from any directory."""
    from dptune.config import load_experiment, parse_experiment

    man = store.manifest()
    check_not_study(store.root, man)
    fingerprint = man.get("fingerprint")
    path = Path(str(man.get("experiment_file", "")))
    if path.is_file():
        try:
            exp = load_experiment(path)
        except DptuneError:
            exp = None
        if exp is not None and exp.fingerprint() == fingerprint:
            return exp
    cfg = man.get("config") or {}
    data = {k: cfg[k] for k in ("name", "seed", "description", "data", "split", "evaluation",
                                "analysis", "sweep") if k in cfg}
    data["algorithms"] = [{"name": a["name"], "type": a["type"], "grid": a.get("grid_path") or a["grid"]}
                          for a in cfg.get("algorithms", [])]
    # a relative data file is read from the recorded experiment file's folder, as in the sweep;
    # the data is not needed to read the store, so it need not exist any more
    exp = parse_experiment(data, source=str(store.root / "manifest.json"),
                           config_path=path if path.is_absolute() else None,
                           check_data=False)
    if exp.fingerprint() != fingerprint:
        raise input_error(store.root / "manifest.json", "fingerprint",
                          "the experiment's grid files changed since the sweep; pass --config")
    return exp
