"""The analysis stage on a synthetic result store with the real layout: build the store, time
the fold loop and the whole ``dptune analyze`` command in fresh processes, project to the full
store."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dptune.bench._plans import CORES, FULL_FOLDS, FULL_USERS, REPO
from dptune.bench._timing import clock, log, timed, wall_timed


def build_synthetic_store(root: Path, scale: float, seed: int = 0,
                          grids: dict[str, Any] | None = None,
                          ragged: bool = False) -> dict[str, Any]:
    """A result store with the real layout and the paper's ML-1M grids, random values.

    ``scale`` F in (0, 1] is the fraction of the full store: ``max(1, round(10 F))`` folds of
    every configuration (3,150 BPR-MF, 15 UserKNN, 15 ItemKNN), each with
    ``round(5500 * min(1, 10 F))`` users. ``grids`` (algorithm type -> :class:`Grid`) replaces
    the paper's grids (tests); ``ragged`` leaves the first user out of the first unit of every
    algorithm on fold 0 (exercises the inner join of users). Returns the layout built.
    """
    from dptune.grids import load_grid
    from dptune.models import get_family
    from dptune.store import ResultStore

    if not 0.0 < scale <= 1.0:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    n_folds = max(1, round(FULL_FOLDS * scale))
    n_users = max(3, round(FULL_USERS * min(1.0, FULL_FOLDS * scale)))
    metrics = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
    cutoffs = (1, 5, 10)
    if grids is None:
        grids = {"userknn": load_grid(REPO / "grids" / "knn.toml"),
                 "itemknn": load_grid(REPO / "grids" / "knn.toml"),
                 "bpr-mf": load_grid(REPO / "grids" / "bpr-mf.toml")}
    store = ResultStore(root).create()
    store.write_manifest({
        "experiment": "synthetic",
        "algorithms": [{"name": a, "type": a, "free": g.free,
                        "derived": {k: list(v) for k, v in g.derived.items()},
                        "n_configs": g.size} for a, g in grids.items()],
        "evaluation": {"metrics": list(metrics), "cutoffs": list(cutoffs),
                       "relevance_rule": "rating >= 4.0", "relevance_threshold": 4.0,
                       "novelty_variant": "relevance-aware", "value_dtype": "float32",
                       "protocol": "synthetic: uniform random per-user values, no model",
                       "users": "synthetic"},
        "dataset": {"name": "ml-1m (synthetic values)", "source": "dptune.bench",
                    "users": 6040, "items": 3706, "ratings": 1000209,
                    "sparsity": 1.0 - 1000209 / (6040 * 3706)},
        "split": {"method": "temporal", "train_ratio": 0.8, "min_user_interactions": 5,
                  "dropped_users": 0, "folds": n_folds, "fold_method": "user_stratified",
                  "split_seed": 42, "users_evaluated": dict.fromkeys(map(str, range(n_folds)),
                                                                     n_users)},
        "seeds": {"analysis": 42},
        "synthetic": {"scale": scale, "folds": n_folds, "users": n_users},
    })
    store.write_configs([g.frame(a) for a, g in grids.items()])
    rng = np.random.default_rng(seed)
    users = np.sort(rng.choice(max(6040, n_users), n_users, replace=False)).astype(np.int32)
    jobs = []
    for alg, g in grids.items():
        for fold in range(n_folds):
            for u, unit in enumerate(get_family(alg).units(g.configs())):
                uu = users[1:] if ragged and fold == 0 and u == 0 else users
                jobs.append((alg, str(fold), f"u{u:05d}", tuple(sorted(unit)), uu))
    from joblib import Parallel, delayed

    n_jobs = max(1, min(CORES, os.cpu_count() or 1, len(jobs) // 50 or 1))
    chunks = [jobs[i::n_jobs] for i in range(n_jobs)]
    Parallel(n_jobs=n_jobs)(delayed(_write_synthetic_parts)(str(root), chunk, seed + 1 + i)
                            for i, chunk in enumerate(chunks))
    n_parts = len(jobs)
    store.write_users(np.arange(int(users.max()) + 1))
    size = sum(p.stat().st_size for p in (root / "per_user.parquet").glob("*.parquet"))
    return {"scale": scale, "folds": n_folds, "users": n_users, "parts": n_parts,
            "values": n_folds * n_users * len(metrics) * len(cutoffs) * sum(
                g.size for g in grids.values()),
            "bytes": size}


def _write_synthetic_parts(root: str, jobs: Sequence[tuple], seed: int) -> None:
    """Write synthetic units (random float32 values) with :meth:`ResultStore.write_unit`."""
    from dptune.store import ResultStore, UnitResult

    metrics = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
    cutoffs = (1, 5, 10)
    store = ResultStore(root)
    rng = np.random.default_rng(seed)
    for alg, fold, unit, ids, users in jobs:
        vals = tuple(rng.random((len(metrics), len(cutoffs), len(users)), dtype=np.float32)
                     for _ in ids)
        store.write_unit(UnitResult(alg, fold, unit, 1, metrics, cutoffs, users, ids, vals,
                                    (0.0,) * len(ids), (0.0,) * len(ids)))


def _peak_kib() -> int:
    """Peak resident memory of this process in KiB: ``VmHWM`` (reset by ``exec``, unlike
    ``getrusage``'s ``ru_maxrss``, which keeps the forking parent's size), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def command_child(root: str, reports: str) -> None:
    """Fresh process: ``dptune analyze ROOT --reports REPORTS --no-progress`` with the default
    options (DP of every scope, bootstrap intervals of scope all and the one-at-a-time scopes,
    stability, the comparisons, dominance and verdict, tables, figures, importance), then its
    peak resident memory (JSON, last line)."""
    from dptune.cli import main as cli_main

    rc = cli_main(["analyze", root, "--reports", reports, "--no-progress"])
    print(json.dumps({"rc": rc, "peak_kib": _peak_kib()}))


def analyze_child(root: str, compare: bool, full_users: int) -> None:
    """Fresh process: time the DP part of the analysis, the fold loop
    (:func:`dptune.analysis.dp.fold_loop.run_fold_loop` with the paper's 25 pairs per scope and
    no bootstrap) on ``root``, report peak memory (JSON).

    Times are CPU seconds with one reader thread (``read_fold(threads=1)``), i.e. the wall time
    on one idle core; by default ``read_fold`` reads with up to 4 threads, so this is an upper
    bound on 2 cores. The store is wrapped so that the time spent in ``read_fold`` (decoding,
    proportional to the values read) is known apart from the rest (tests and tables). When the store has fewer
    users than ``full_users``, the analysis is run a second time on every second user (cut
    after reading) so that the rest can be fitted linearly in the number of users.
    """
    import pandas as pd  # noqa: F401 - imported before the baseline is taken

    from dptune.analysis.dp.fold_loop import run_fold_loop
    from dptune.analysis.dp.pairs import scope_pairs
    from dptune.analysis.options import AnalysisOptions
    from dptune.store import FoldSlice, ResultStore

    opts = AnalysisOptions(pairs=25, seed=42, bootstrap=0)

    def analyze(store: Any) -> Any:
        return run_fold_loop(store, opts)

    class Timed(ResultStore):
        """The store, timing ``read_fold`` and optionally keeping every ``step``-th user."""

        step = 1
        read_seconds = 0.0
        slice_bytes = 0
        slice_users = 0

        def read_fold(self, *args: Any, **kwargs: Any) -> FoldSlice:
            t0 = clock()
            sl = super().read_fold(*args, **{**kwargs, "threads": 1})
            Timed.read_seconds += clock() - t0
            Timed.slice_bytes = max(Timed.slice_bytes, sl.values.nbytes)
            Timed.slice_users = max(Timed.slice_users, len(sl.users))
            if self.step > 1:
                sl = FoldSlice(sl.algorithm, sl.fold, sl.config_ids, sl.metric_cutoffs,
                               sl.users[:: self.step], sl.values[:, :, :: self.step].copy())
            return sl

    base_kib = _peak_kib()
    # The fold array's memory costs its page faults once per analysis (about 1.5 s for ML-1M;
    # the fold loop reuses it for folds 2..10 through a FoldBuffer). Time that apart, so that the
    # projection can count it once and scale only the steady state of the reads.
    store = ResultStore(root)
    size = 0
    for alg in store.algorithms():
        pairs = scope_pairs(store.configs(alg), store.hyperparameters(alg), 25, 42)
        n_ids = len(np.unique(np.concatenate([x.ravel() for x in pairs.values()])))
        users = json.loads((Path(root) / "manifest.json").read_text())["synthetic"]["users"]
        size = max(size, len(store.metric_cutoffs(alg)) * n_ids * users)
    first_touch = timed(lambda: np.full(size, np.nan, dtype=np.float32).size)[0]
    t, res = timed(lambda: analyze(Timed(root)))
    peak_kib = _peak_kib()
    out: dict[str, Any] = {"seconds": t, "first_touch_seconds": first_touch,
                           "read_seconds": Timed.read_seconds,
                           "slice_bytes": Timed.slice_bytes, "slice_users": Timed.slice_users,
                           "baseline_kib": base_kib, "peak_kib": peak_kib,
                           "dp_rows": len(res.table), "pvalue_rows": len(res.pvalues)}
    # speedup of read_fold's default reader threads over one thread (wall, back to back)
    alg = "bpr-mf" if "bpr-mf" in store.algorithms() else store.algorithms()[0]
    pairs = scope_pairs(store.configs(alg), store.hyperparameters(alg), 25, 42)
    ids = np.unique(np.concatenate([x.ravel() for x in pairs.values()]))
    fold0 = store.folds(alg)[0]
    walls = {}
    for threads in (1, None, 1, None):
        t0 = time.perf_counter()
        store.read_fold(alg, fold0, ids, store.metric_cutoffs(alg), threads=threads)
        w = time.perf_counter() - t0
        walls[threads] = min(walls.get(threads, w), w)
    out["read_threads_speedup"] = walls[1] / walls[None]
    # the fold loop as `dptune analyze` calls it (default reader threads), wall clock; the
    # page cache is warm from the runs above, as it is after a sweep that just wrote the store
    t0 = time.perf_counter()
    analyze(ResultStore(root))
    out["wall_seconds_default_threads"] = time.perf_counter() - t0
    out["peak_kib_after_wall"] = _peak_kib()
    if Timed.slice_users < full_users:
        Timed.read_seconds = 0.0
        Timed.step = 2
        t2, _ = timed(lambda: analyze(Timed(root)))
        out["half_users_seconds"] = t2
        out["half_users_read_seconds"] = Timed.read_seconds
    if compare:
        class PerScope:
            """The store without ``read_fold``: analyze falls back to per-scope reads."""

            def __init__(self, s: ResultStore) -> None:
                self._s = s

            def __getattr__(self, name: str) -> Any:
                if name == "read_fold":
                    raise AttributeError(name)
                return getattr(self._s, name)

        t_old, old = timed(lambda: analyze(PerScope(ResultStore(root))))
        out["seconds_per_scope_reads"] = t_old
        out["identical"] = all(getattr(res, k).equals(getattr(old, k))
                               for k in ("pairs", "pvalues", "table", "curves"))
    print(json.dumps(out))


def project_analyze(child: dict[str, Any], folds: int, users: int) -> dict[str, float]:
    """Seconds and peak GiB of the analysis of the full store from one measurement.

    Time: the first touch of the fold array's memory is paid once per analysis (inside the
    first ``read_fold``, so it is taken out of the measured reading and added once); reading
    (``read_fold``, measured with one thread, CPU time) scales with the values read, i.e.
    folds x users, and is divided by the measured speedup of ``read_fold``'s default threads
    (wall times of one fold read back to back with 1 and with the default threads: other
    load on the machine lowers that ratio, so the projection errs high); the rest
    scales with folds and, fitted from the run on half the users, linearly in users (no fit
    is needed when the store already has every user). Memory: the analysis holds one fold at a
    time, so the projected peak is the measured peak plus the growth of that fold's array to
    every user, plus the growth of the per-part read buffers (two threads, about 60 bytes per
    row of a part).
    """
    fold_factor = FULL_FOLDS / folds
    user_factor = FULL_USERS / users
    first_touch = child.get("first_touch_seconds", 0.0)
    read = max(0.0, child["read_seconds"] - first_touch)  # steady-state reading
    rest = child["seconds"] - child["read_seconds"]
    if "half_users_seconds" in child and user_factor > 1:
        rest_half = child["half_users_seconds"] - child["half_users_read_seconds"]
        slope = max(0.0, (rest - rest_half) / (users - users // 2))  # seconds per user
        rest_full = rest + slope * (FULL_USERS - users)
    else:
        rest_full = rest * user_factor
    first = first_touch * user_factor
    seconds_1 = fold_factor * (read * user_factor + rest_full) + first
    speedup = max(1.0, child.get("read_threads_speedup", 1.0))
    seconds = fold_factor * (read * user_factor / speedup + rest_full) + first
    kib = 1024.0
    grow = child["slice_bytes"] * (user_factor - 1.0)
    part_rows = 14 * 18 * users  # rows of one BPR-MF part
    buffers = 2 * 60 * part_rows * (user_factor - 1.0)
    peak = child["peak_kib"] * kib + grow + buffers
    return {"seconds_projected": seconds, "seconds_projected_one_thread": seconds_1,
            "read_threads_speedup": speedup, "peak_gib_projected": peak / 2**30,
            "read_seconds": read, "rest_seconds": rest, "rest_seconds_full_users": rest_full,
            "fold_factor": fold_factor, "user_factor": user_factor}


def bench_analyze(scale: float, workdir: Path | None = None, keep: bool = False,
                  compare: bool = False, grids: dict[str, Any] | None = None,
                  ragged: bool = False) -> dict[str, Any]:
    """Build a synthetic store at ``scale``, time the analysis in a fresh process, project.

    ``compare`` also runs the analysis through per-scope ``read_matrix`` calls (the previous
    read path) and reports whether every output table is identical; ``grids`` and ``ragged``
    go to :func:`build_synthetic_store`.
    """
    tmp = Path(tempfile.mkdtemp(prefix="dptune-bench-analyze-", dir=workdir))
    try:
        root = tmp / "results"
        t_build, layout = wall_timed(lambda: build_synthetic_store(root, scale, grids=grids,
                                                               ragged=ragged))
        log(f"  synthetic store: {layout['parts']} parts, {layout['folds']} fold(s) x "
             f"{layout['users']} users, {layout['bytes'] / 2**30:.2f} GiB, built in {t_build:.0f} s")
        cmd = [sys.executable, "-m", "dptune.bench", "analyze-child", str(root),
               "--full-users", str(FULL_USERS)]
        if compare:
            cmd.append("--compare")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"analysis child failed:\n{proc.stderr[-3000:]}")
        child = json.loads(proc.stdout.strip().splitlines()[-1])
        # the whole command a user runs, default options, wall clock from the process start
        cmd = [sys.executable, "-m", "dptune.bench", "command-child", str(root),
               "--out", str(tmp / "reports")]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        command_seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"dptune analyze failed:\n{proc.stderr[-3000:]}")
        command = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    gib = 2**30 / 1024  # KiB per GiB
    return {
        **layout, **project_analyze(child, layout["folds"], layout["users"]),
        "build_seconds": t_build, "seconds": child["seconds"],
        "first_touch_seconds": child.get("first_touch_seconds", 0.0),
        "peak_gib": child["peak_kib"] / gib, "baseline_gib": child["baseline_kib"] / gib,
        "slice_gib": child["slice_bytes"] / 2**30,
        "wall_seconds": child.get("wall_seconds_default_threads"),
        "peak_gib_after_wall": child.get("peak_kib_after_wall", 0) / gib,
        "half_users_seconds": child.get("half_users_seconds"),
        "seconds_per_scope_reads": child.get("seconds_per_scope_reads"),
        "identical": child.get("identical"),
        "command_seconds": command_seconds, "command_peak_gib": command["peak_kib"] / gib,
        "kept": str(tmp) if keep else None,
    }
