"""The store's bookkeeping scales with the store: what is asked once per part written or per
part reported costs the same whatever the size of the store.

Each fast path is checked against the simple one it replaced (kept here as the oracle), and
each cliff by counting the calls of the slow primitive, never by timing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import bpr_grid, write_synthetic_ratings

from dptune.store import ResultStore, UnitResult
from dptune.store._integrity import store_fingerprint

METRICS = ("ndcg", "precision")
CUTOFFS = (1, 5)


def _old_fingerprint(root: Path) -> str | None:
    """The manifest's fingerprint as it was read first: the whole manifest parsed each time."""
    try:
        fp = json.loads((Path(root) / "manifest.json").read_text()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None
    return str(fp) if fp else None


def _manifest(n_units: int, fingerprint: str | None) -> dict:
    man = {"experiment": "t", "evaluation": {"metrics": list(METRICS), "cutoffs": list(CUTOFFS)},
           "algorithms": [{"name": "a", "free": ["k"], "type": "userknn", "n_configs": n_units,
                           "units": [[k] for k in range(n_units)]}],
           "split": {"folds": 1}}
    if fingerprint is not None:
        man["fingerprint"] = fingerprint
    return man


def _unit(k: int) -> UnitResult:
    users = np.arange(3, dtype=np.int32)
    vals = (np.random.default_rng(k).random((len(METRICS), len(CUTOFFS), 3)),)
    return UnitResult("a", "0", f"u{k:05d}", 7, METRICS, CUTOFFS, users, (k,), vals, (0.1,),
                      (0.01,))


def test_the_fingerprint_kept_is_the_manifests_until_the_manifest_changes(tmp_path):
    store = ResultStore(tmp_path / "res").create()
    root = store.root
    assert store_fingerprint(root) is None is _old_fingerprint(root)  # no manifest
    for fp in ("f1", "f2", None, "f3"):  # each rewrite is seen: a new file each time
        store.write_manifest(_manifest(4, fp))
        for _ in range(3):
            assert store_fingerprint(root) == _old_fingerprint(root) == fp
    (root / "manifest.json").write_text("{not json")
    assert store_fingerprint(root) is None is _old_fingerprint(root)
    (root / "manifest.json").write_text('["a list"]')
    assert store_fingerprint(root) is None is _old_fingerprint(root)
    (root / "manifest.json").unlink()
    assert store_fingerprint(root) is None is _old_fingerprint(root)


def test_writing_parts_parses_the_manifest_once_not_once_per_part(tmp_path, monkeypatch):
    """The manifest lists every unit of the grid: parsed for every part written, a sweep of n
    units spent n parses of a manifest of size n (25 minutes for 10,000 units on 10 folds)."""
    n = 30
    store = ResultStore(tmp_path / "res").create()
    store.write_manifest(_manifest(n, "abc"))
    reads: list[str] = []
    real = Path.read_text

    def counted(self, *args, **kwargs):
        if self.name == "manifest.json":
            reads.append(str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    for k in range(n):
        store.write_unit(_unit(k))
    assert len(reads) <= 1
    monkeypatch.undo()
    fresh = ResultStore(store.root)
    assert len(fresh.part_paths()) == n and fresh.damaged() == []
    assert all(fresh.part_meta(p)["fingerprint"] == "abc" for p in fresh.part_paths())


# ---------------------------------------------------------------------------------------------
# dptune status: each validation part checked once for the counts of parts and of units

N_UNITS, N_FOLDS = 5, 2


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A results directory of a BPR-MF grid of N_UNITS units on N_FOLDS folds (``init_results``
    of a synthetic experiment), every part written (tiny synthetic values); its experiment."""
    from dptune.config import load_experiment
    from dptune.sweeper._manifest import init_results

    d = tmp_path_factory.mktemp("status")
    data = write_synthetic_ratings(d / "ratings.csv", 120, 80, 30)
    (d / "bpr.toml").write_text(bpr_grid(list(range(1, N_UNITS + 1)), [1, 2], [0.05]))
    cfg = d / "s.toml"
    cfg.write_text(f'name = "s"\nseed = 7\n[data]\nsource = "{data}"\n[split]\nfolds = {N_FOLDS}\n'
                   "[evaluation]\ncutoffs = [5, 10]\ntest_split = false\n[analysis]\npairs = 3\n"
                   "noise_seeds = 0\nbootstrap = 0\nstability = 0\nimportance = false\n"
                   "min_fold_users = 1\n[sweep]\njobs = 1\n"
                   f'[[algorithms]]\nname = "bpr-mf"\ntype = "bpr-mf"\ngrid = "{d / "bpr.toml"}"\n')
    exp = load_experiment(cfg)
    store, _, design = init_results(exp, d / "results")
    ev = store.manifest()["evaluation"]
    metrics, cutoffs = tuple(ev["metrics"]), tuple(int(c) for c in ev["cutoffs"])
    rng = np.random.default_rng(0)
    for t in design.algorithms["bpr-mf"].tasks([str(f) for f in range(N_FOLDS)]):
        ids = tuple(t.config_ids)
        vals = tuple(rng.random((len(metrics), len(cutoffs), 3)) for _ in ids)
        store.write_unit(UnitResult("bpr-mf", t.fold, t.unit, 1, metrics, cutoffs,
                                    np.arange(3, dtype=np.int32), ids, vals, (0.0,) * len(ids),
                                    (0.0,) * len(ids)))
    return exp, d / "results"


def _oracle(exp, results):
    """Done parts and done units of every algorithm, each part asked of ``has_part``."""
    from dptune.sweeper.design import experiment_design

    store = ResultStore(results, skip_damaged=True)
    folds = [str(f) for f in range(exp.split.folds)]
    out = {}
    for name, d in experiment_design(exp).algorithms.items():
        tasks = d.tasks(folds)
        out[name] = (sum(store.has_part(t.algorithm, t.fold, t.unit) for t in tasks),
                     sum(all(store.has_part(name, f, u.unit) for f in folds) for u in d.units))
    return out


@pytest.mark.parametrize("damage", [None, "design", "part"])
def test_status_checks_each_validation_part_once_and_counts_as_each_part_says(
        written, tmp_path, monkeypatch, damage):
    """``read_design`` checks every validation part for its ``folds_done``; ``status`` counted
    the parts, then the whole units, asking each part again both times (three checks of
    every part, each a few system calls). The answers are the oracle's: every part, a part
    damaged (counted not done), a ``design.json`` that no longer orders the grid (the
    experiment's design then, every part asked by ``status`` itself)."""
    import shutil

    from dptune.store._index import part_paths
    from dptune.sweeper._status import status

    exp, src = written
    results = tmp_path / "results"
    shutil.copytree(src, results)
    if damage == "part":
        victim = part_paths(results)[3]
        victim.write_bytes(victim.read_bytes()[:100])
    elif damage == "design":
        (results / "design.json").write_text("{}")
    want = _oracle(exp, results)
    calls = [0]
    real = ResultStore.has_part

    def counted(self, *args):
        calls[0] += 1
        return real(self, *args)

    monkeypatch.setattr(ResultStore, "has_part", counted)
    st = status(exp, results)
    n_tasks = N_UNITS * N_FOLDS
    assert calls[0] <= n_tasks  # once per part (read_design's or status's), not three times
    for name, (parts, units) in want.items():
        s = st["algorithms"][name]
        assert (s["total"], s["done"], s["units"]["done"]) == (n_tasks, parts, units)
    assert want["bpr-mf"][0] == n_tasks - (damage == "part")
    assert want["bpr-mf"][1] == N_UNITS - (damage == "part")
    assert len(st["damaged"]) == (damage == "part")
