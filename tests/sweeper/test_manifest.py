"""The results directory's set-up check: differences listed without noise (tuples read back as
lists, numeric types, key order), and a set-up that finished no unit never blocks a rerun."""

from __future__ import annotations

import json

import pytest
from conftest import write_experiment

from dptune.config import load_experiment
from dptune.errors import DptuneError
from dptune.store._store import PARTS, ResultStore
from dptune.sweeper._manifest import init_results, setup_changes


def _manifest_of(exp) -> dict:
    """What a manifest records of ``exp``, read back from JSON (tuples become lists)."""
    return json.loads(json.dumps({
        "fingerprint": exp.fingerprint(), "config": exp.to_dict(),
        "algorithms": [{"name": a.name, "type": a.type,
                        "grid_fingerprint": exp.grids[a.name].fingerprint()}
                       for a in exp.algorithms]}, default=str))


def test_another_seed_lists_only_the_seed(tmp_path):
    old = load_experiment(write_experiment(tmp_path / "a"))
    new = load_experiment(write_experiment(tmp_path / "b", extra=""))
    man = _manifest_of(old)
    assert setup_changes(man, new) == []
    text = (tmp_path / "b" / "tiny.toml").read_text().replace("seed = 7", "seed = 8")
    (tmp_path / "b" / "tiny.toml").write_text(text)
    assert setup_changes(man, load_experiment(tmp_path / "b" / "tiny.toml")) == ["seed: 7 -> 8"]


def test_numbers_and_key_order_are_not_differences(tmp_path):
    exp = load_experiment(write_experiment(tmp_path / "a"))
    man = _manifest_of(exp)
    ev = man["config"]["evaluation"]
    ev["relevance_threshold"] = int(ev["relevance_threshold"])  # 4 for 4.0
    man["config"]["evaluation"] = dict(reversed(list(ev.items())))
    assert setup_changes(man, exp) == []


def test_a_set_up_without_results_does_not_block_the_corrected_rerun(tmp_path):
    exp = load_experiment(write_experiment(tmp_path / "exp"))
    root = tmp_path / "results"
    store = ResultStore(root).create()
    store.write_manifest({"fingerprint": "0123456789abcdef", "experiment": "tiny"})
    init_results(exp, root)  # the earlier set-up stopped before any unit: replaced
    assert ResultStore(root).manifest()["fingerprint"] == exp.fingerprint()
    # once a unit of it finished, another set-up is refused with what differs
    (root / PARTS / "userknn__0__u00000.parquet").write_bytes(b"")
    other = load_experiment(write_experiment(tmp_path / "b", extra=""))
    text = (tmp_path / "b" / "tiny.toml").read_text().replace("seed = 7", "seed = 8")
    (tmp_path / "b" / "tiny.toml").write_text(text)
    with pytest.raises(DptuneError, match=r"different experiment set-up \(seed: 7 -> 8\)"):
        init_results(load_experiment(tmp_path / "b" / "tiny.toml"), root)
    assert other.fingerprint() == exp.fingerprint()
