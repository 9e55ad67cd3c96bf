"""Fault injection over the result store: every kind of file of a small store is truncated,
deleted, garbled or emptied; then ``dptune analyze`` and ``dptune run`` must either stop with one
line (exit 2) naming the file, or recompute exactly what was damaged, with results equal to the
undamaged store's. Never a traceback, never silently different numbers.

One tiny store (a synthetic 120-user data set, UserKNN with 2 configurations and a 2 x 2
BPR-MF grid, 2 folds, the test split and a 2-seed noise floor: conftest's synthetic_swept) is
built once per session; each case damages a copy of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dptune.cli import main
from dptune.errors import DptuneError
from dptune.store._integrity import INDEX_DIR, quarantine_dir
from dptune.store._noise_parts import NOISE_DIR
from dptune.store._schema import PARTS
from dptune.sweeper._run import run_sweep

#: Files of each kind in the tiny store (a glob under the results directory).
KINDS = {
    "knn-part": f"{PARTS}/userknn__0__*.parquet",
    "bpr-part": f"{PARTS}/bpr-mf__1__u00001.parquet",
    "test-part": f"{PARTS}/bpr-mf__test__*.parquet",
    "noise-part": f"{NOISE_DIR}/bpr-mf__0__*.parquet",
    "part-entry": f"{INDEX_DIR}/{PARTS}/bpr-mf__0__u00000.parquet.json",
    "noise-entry": f"{INDEX_DIR}/{NOISE_DIR}/bpr-mf__1__*.json",
    "manifest": "manifest.json",
    "configs": "configs.csv",
    "users": "users.csv",
    "trials": "trials.csv",
    "noise-trials": "noise_trials.csv",
    "optuna": "optuna.db",
}
DAMAGES = ("truncate", "delete", "garble", "empty")
#: Files the analysis never reads: it must give the undamaged results.
NOT_READ_BY_ANALYZE = {"users", "trials", "noise-trials", "optuna"}


def _values(root: Path) -> dict[str, pd.DataFrame]:
    """Every part's per-user values, sorted (timings and other metadata left out)."""
    out = {}
    for p in sorted([*(root / PARTS).glob("*.parquet"), *(root / NOISE_DIR).glob("*.parquet")]):
        df = pq.read_table(p).to_pandas()
        keys = [c for c in ("config_id", "seed_index", "metric", "cutoff", "user") if c in df]
        out[f"{p.parent.name}/{p.name}"] = df.sort_values(keys).reset_index(drop=True)
    return out


def _mtimes(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns
            for p in [*(root / PARTS).glob("*.parquet"), *(root / NOISE_DIR).glob("*.parquet")]}


@pytest.fixture(scope="module")
def pristine(synthetic_swept):
    """conftest's tiny store, read only (each case damages a copy): ``(experiment file,
    results directory, values)``."""
    results = synthetic_swept / "results"
    return synthetic_swept / "synthetic.toml", results, _values(results)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "delete":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    else:  # garble: invert 16 bytes in the middle
        mid = len(data) // 2
        path.write_bytes(data[:mid] + bytes(b ^ 0xFF for b in data[mid:mid + 16]) + data[mid + 16:])


def _copy_damaged(pristine, tmp_path: Path, kind: str, how: str) -> tuple[Path, Path]:
    _, results, _ = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    target = sorted(root.glob(KINDS[kind]))[0]
    _damage(target, how)
    return root, target


def _one_line(err: str, target: Path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dptune: ") and "Traceback" not in err
    assert target.name in lines[0] or target.parent.name in lines[0], lines[0]


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", sorted(set(KINDS) - NOT_READ_BY_ANALYZE))
def test_analyze_on_a_damaged_store_is_one_line(pristine, tmp_path, capsys, kind, how):
    root, target = _copy_damaged(pristine, tmp_path, kind, how)
    rc = main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    _one_line(err, target)
    if kind.endswith(("part", "entry")):
        assert "`dptune run` will recompute it" in err
    assert not (tmp_path / "rep" / "dp.csv").exists()


@pytest.mark.parametrize("how", ("garble", "delete"))  # truncated and emptied: as garbled
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_run_recomputes_exactly_the_damaged_unit(pristine, tmp_path, kind, how):
    cfg, _, before = pristine
    root, target = _copy_damaged(pristine, tmp_path, kind, how)
    times = _mtimes(root)
    try:
        run_sweep(cfg, root, jobs=1, progress=False)
    except DptuneError as err:  # allowed: one line naming the file
        assert "\n" not in str(err) and target.name in str(err)
        return
    after = _values(root)
    assert after.keys() == before.keys()
    for name, df in before.items():
        pd.testing.assert_frame_equal(after[name], df, obj=name)
    # nothing but the damaged unit was computed again
    redone = {n for n, t in _mtimes(root).items() if times.get(n) != t}
    if kind.endswith("part"):
        assert redone == {target.name}
    elif kind == "part-entry":
        assert redone == {target.name[: -len(".json")]}
    elif kind == "noise-entry":
        assert len(redone) == 1 and redone <= {p.name for p in (root / NOISE_DIR).iterdir()}
    else:
        assert redone == set()
    for name in ("manifest.json", "configs.csv", "users.csv", "trials.csv", "noise_trials.csv"):
        assert (root / name).is_file(), name


@pytest.mark.parametrize("how", ("truncate", "empty"))
def test_run_after_truncation_recomputes_the_unit(pristine, tmp_path, how):
    cfg, _, before = pristine
    root, target = _copy_damaged(pristine, tmp_path, "bpr-part", how)
    run_sweep(cfg, root, jobs=1, progress=False)
    pd.testing.assert_frame_equal(_values(root)[f"{PARTS}/{target.name}"],
                                  before[f"{PARTS}/{target.name}"])


def test_a_damaged_optuna_db_is_set_aside(pristine, tmp_path, capsys):
    cfg, _, before = pristine
    root, target = _copy_damaged(pristine, tmp_path, "optuna", "truncate")
    run_sweep(cfg, root, jobs=1, progress=False)
    assert "optuna.db was damaged" in capsys.readouterr().err
    assert (root / "optuna.db.damaged").is_file()
    assert _values(root).keys() == before.keys()


def test_a_store_from_before_index_entries_is_checked_and_adopted(pristine, tmp_path):
    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    shutil.rmtree(root / INDEX_DIR)
    from dptune.store._store import ResultStore

    assert ResultStore(root).damaged() == []  # decoded instead of checksummed
    times = _mtimes(root)
    run_sweep(cfg, root, jobs=1, progress=False)
    assert _mtimes(root) == times  # nothing recomputed
    assert len(list((root / INDEX_DIR).glob("*/*.json"))) == len(times)  # entries recorded


@pytest.mark.parametrize("kind", ["bpr-part", "noise-part"])
def test_a_flipped_bit_is_refused_without_the_index_folder(pristine, tmp_path, kind):
    """With the whole ``index`` folder gone a part is checked structurally, and a flipped bit in
    a page of values decoded to another value: the damaged part was adopted as sound. Each page
    now carries its own CRC-32, so every flip either is refused or leaves what the analysis
    reads (the values, the identity) as it was: a flip in a statistic no reader uses, say, or
    in the copy of the metadata inside the footer's Arrow schema. The footer metadata carries
    its own CRC-32, and what it says is checked against the data."""
    from dptune.store import _integrity

    _, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    shutil.rmtree(root / INDEX_DIR)
    part = sorted(root.glob(KINDS[kind]))[0]
    key = f"{part.parent.name}/{part.name}"
    data = part.read_bytes()
    meta = _integrity._structural(part)[1]
    refused = 0
    places = range(0, len(data), max(1, len(data) // 300))  # every page, header and the footer
    for i in places:
        flipped = bytearray(data)
        flipped[i] ^= 1 << (i % 8)
        part.write_bytes(bytes(flipped))
        _integrity._CACHE.clear()
        if _integrity.problem(part) is not None:
            refused += 1
            continue
        same = pq.read_table(part).to_pandas()
        keys = [c for c in ("config_id", "seed_index", "metric", "cutoff", "user") if c in same]
        pd.testing.assert_frame_equal(same.sort_values(keys).reset_index(drop=True), before[key])
        found = _integrity.footer_meta(part)
        assert {k: found.get(k) for k in ("algorithm", "fold", "config_ids", "metrics", "cutoffs",
                                         "n_users")} == {k: meta.get(k) for k in (
            "algorithm", "fold", "config_ids", "metrics", "cutoffs", "n_users")}, i
    assert refused > 0.6 * len(places)  # about 70%: the rest changed nothing read
    part.write_bytes(data)
    _integrity._CACHE.clear()
    assert _integrity.problem(part) is None


def test_a_part_written_before_page_and_metadata_checksums_is_adopted(pristine, tmp_path):
    """Parts written before pages and footer metadata carried their own CRC-32 are decoded and
    checked against their metadata as before, not refused for lacking them, and read as
    before; the same rows in other row groups are refused (the readers find a metric@N by the
    position of its row group)."""
    from dptune.store import _integrity
    from dptune.store._store import ResultStore

    _, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    shutil.rmtree(root / INDEX_DIR)
    part = sorted(root.glob(KINDS["bpr-part"]))[0]
    table = pq.read_table(part)
    meta = json.loads(table.schema.metadata[b"dptune"])
    del meta[_integrity.META_CRC]
    old = table.replace_schema_metadata({"dptune": json.dumps(meta, sort_keys=True)})
    per = len(old) // (len(meta["metrics"]) * len(meta["cutoffs"]))
    pq.write_table(old, part, row_group_size=per)  # one row group per metric@N, no checksums
    assert _integrity.problem(part) is None
    # read as the analysis reads it (row groups by position): the part's own values
    got = ResultStore(root).read_fold(meta["algorithm"], meta["fold"], meta["config_ids"],
                                      [("recall", 10)])
    want = old.to_pandas().query("metric == 'recall' and cutoff == 10")
    for r, cid in enumerate(got.config_ids):
        rows = want[want["config_id"] == cid].sort_values("user")
        np.testing.assert_array_equal(got.values[0, r, np.searchsorted(got.users, rows["user"])],
                                      rows["value"].to_numpy())
    pd.testing.assert_frame_equal(_values(root)[f"{PARTS}/{part.name}"],
                                  before[f"{PARTS}/{part.name}"])
    pq.write_table(old, part)  # the same rows in one row group
    _integrity._CACHE.clear()
    assert "row groups" in _integrity.problem(part)


@pytest.mark.parametrize("index", ["entry", "folder"])
def test_a_part_lost_with_its_index_entry_is_found_by_trials_csv(pristine, tmp_path, capsys,
                                                                  index):
    """A part deleted with its index entry, or with the whole index folder, read as a unit never
    computed: ``analyze`` went on with fewer folds without a word. ``trials.csv`` (written by
    the last finished run from the parts there were) lists it: analyze refuses it in one line
    and run recomputes exactly that unit."""
    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    part = sorted((root / PARTS).glob("*.parquet"))[0]
    part.unlink()
    if index == "entry":
        (root / INDEX_DIR / PARTS / f"{part.name}.json").unlink()
    else:
        shutil.rmtree(root / INDEX_DIR)
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    _one_line(err, part)
    assert "damaged (missing); `dptune run` will recompute it" in err
    times = _mtimes(root)
    run_sweep(cfg, root, jobs=1, progress=False)
    redone = {n for n, t in _mtimes(root).items() if times.get(n) != t}
    assert redone == {part.name}
    pd.testing.assert_frame_equal(_values(root)[f"{PARTS}/{part.name}"],
                                  before[f"{PARTS}/{part.name}"])


@pytest.mark.parametrize("index", ["entries", "folder"])
def test_a_noise_floor_lost_with_its_index_entries_is_found_by_noise_trials_csv(
        pristine, tmp_path, capsys, index):
    """Every noise-floor part deleted with its index entries (or with the whole index folder)
    read as a store that never trained a floor: ``analyze`` reported "no noise floor" without
    a word. ``noise_trials.csv`` (written by the last finished run from the parts there were)
    lists them: ``analyze`` refuses in one line naming a lost part, ``status`` names every one,
    ``run`` recomputes exactly those parts with the same values and ``analyze`` then goes on."""
    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    gone = sorted((root / NOISE_DIR).glob("*.parquet"))
    assert gone
    for part in gone:
        part.unlink()
        if index == "entries":
            (root / INDEX_DIR / NOISE_DIR / f"{part.name}.json").unlink()
    if index == "folder":
        shutil.rmtree(root / INDEX_DIR)
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    _one_line(err, gone[0])
    assert "damaged (missing); `dptune run` will recompute it" in err
    assert not (tmp_path / "rep").exists()
    assert main(["status", str(root), "--reports", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert all(f"damaged:     {p}" in out for p in gone), out
    times = _mtimes(root)
    run_sweep(cfg, root, jobs=1, progress=False)
    redone = {n for n, t in _mtimes(root).items() if times.get(n) != t}
    assert redone == {p.name for p in gone}
    for p in gone:
        pd.testing.assert_frame_equal(_values(root)[f"{NOISE_DIR}/{p.name}"],
                                      before[f"{NOISE_DIR}/{p.name}"])
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 0


def test_a_noise_trials_csv_damaged_in_a_digit_is_no_lost_part(pristine, tmp_path):
    """``noise_trials.csv`` is derived: a row naming no part of this experiment (fold 9 of 2)
    says the list is damaged, not that a part was lost; the store is analysed as it is."""
    _, results, _ = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    text = (root / "noise_trials.csv").read_text().splitlines()
    header = text[0].split(",")
    row = text[1].split(",")
    row[header.index("fold")] = "9"
    row2 = text[1].split(",")
    row2[header.index("config_id")] = "x"
    (root / "noise_trials.csv").write_text(
        "\n".join([text[0], ",".join(row), ",".join(row2), *text[2:]]) + "\n")
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 0


def test_status_lists_damaged_parts(pristine, tmp_path, capsys):
    root, target = _copy_damaged(pristine, tmp_path, "bpr-part", "garble")
    rc = main(["status", str(root), "--reports", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"damaged:     {target}" in out and "`dptune run` will recompute it" in out
    bpr = next(line for line in out.splitlines() if line.startswith("bpr-mf"))
    assert bpr.split()[1:3] == ["4", "3"]  # total 4, done 3: the damaged unit is not done
    # done, running, failed and to do split the parts (a running part was counted twice)
    parts, *split = (int(x) for x in bpr.split()[1:])
    assert sum(split) == parts and "to do" in out.splitlines()[0]
    # the stages after the validation units say why a finished sweep waits again
    stage = [line for line in out.splitlines() if "waiting for the validation units" in line]
    assert stage and all("(1 damaged validation part above among them: `dptune run` "
                         "recomputes them first)" in line for line in stage), out


@pytest.mark.parametrize(("name", "how"), [("configs.csv", "garble"), ("users.csv", "truncate"),
                                           ("configs.csv", "delete")])
def test_status_lists_a_damaged_side_file_that_analyze_refuses(pristine, tmp_path, capsys,
                                                               name, how):
    """``configs.csv`` or ``users.csv`` damaged or gone: ``analyze`` refused the store and
    ``run`` rewrites the file, but ``status`` said nothing. It now names the file beside the
    damaged parts, in the words the analysis refuses it with."""
    _, results, _ = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    _damage(root / name, how)
    rc = main(["status", str(root), "--reports", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert rc == 0
    line = next(x for x in out.splitlines() if name in x)
    assert line.startswith(f"damaged:     {root / name}: ") and "`dptune run`" in line, out
    assert ("missing" if how == "delete" else "checksum") in line, line
    assert sum(x.startswith("damaged:") for x in out.splitlines()) == 1, out


def _dp(root: Path) -> pd.DataFrame:
    """The rows of ``dp.csv`` of a store (the analysis without writing the report)."""
    from dptune.analysis.options import AnalysisOptions
    from dptune.analysis.pipeline import analyze
    from dptune.store._store import ResultStore

    store = ResultStore(root)
    return analyze(store, AnalysisOptions.resolve(store.manifest())).dp.table


def test_damaged_then_healed_store_gives_the_same_dp(pristine, tmp_path):
    cfg, results, _ = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    for kind, how in (("bpr-part", "truncate"), ("knn-part", "garble"), ("noise-part", "empty"),
                      ("test-part", "delete"), ("manifest", "garble"), ("configs", "delete")):
        _damage(sorted(root.glob(KINDS[kind]))[0], how)
    run_sweep(cfg, root, jobs=1, progress=False)
    pd.testing.assert_frame_equal(_dp(root), _dp(results))


# --------------------------------------------------------------------------- identity
# A part whose bytes are intact but that is not from this experiment: copied from a run of the
# same experiment with another seed, renamed to another fold or configuration, or named outside
# the grid. analyze refuses it in one line saying so; run sets it aside in quarantine/ (moved,
# not deleted), computes this experiment's unit in its place, and the results equal the
# undamaged store's.


@pytest.fixture(scope="module")
def other_seed(pristine, tmp_path_factory):
    """The results directory of the same experiment run with seed 8 (one UserKNN unit on fold
    0 only: the part the foreign cases copy)."""
    from dptune.config import load_experiment
    from dptune.sweeper._manifest import init_results
    from dptune.sweeper._plan import plan
    from dptune.sweeper._unit import run_unit

    cfg, _, _ = pristine
    d = tmp_path_factory.mktemp("seed8")
    other = d / "synthetic.toml"
    other.write_text(cfg.read_text().replace("seed = 7", "seed = 8"))
    exp = load_experiment(other)
    store, _, _ = init_results(exp, d / "results")
    run_unit(exp, plan(exp, "userknn", ["0"])[0], store)
    return d / "results"


def _copy(src: Path, dst: Path, entry: bool = True) -> None:
    """Copy a part (and its index entry, as a user copying files would) to ``dst``."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    if entry:
        e = src.parents[1] / INDEX_DIR / src.parent.name / f"{src.name}.json"
        de = dst.parents[1] / INDEX_DIR / dst.parent.name / f"{dst.name}.json"
        de.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(e, de)


def _foreign_seed(root: Path, other: Path) -> Path:
    name = "userknn__0__u00000.parquet"
    _copy(other / PARTS / name, root / PARTS / name)
    return root / PARTS / name


def _outside_grid(root: Path, other: Path) -> Path:
    target = root / PARTS / "userknn__0__u00007.parquet"  # the grid has one unit, u00000
    _copy(other / PARTS / "userknn__0__u00000.parquet", target, entry=False)
    return target


def _misplaced_fold(root: Path, other: Path) -> Path:
    """Fold 0's part (and entry) copied over fold 1's."""
    src, dst = root / PARTS / "bpr-mf__0__u00000.parquet", root / PARTS / "bpr-mf__1__u00000.parquet"
    _copy(src, dst)
    return dst


def _misplaced_fold_entry_rewritten(root: Path, other: Path) -> Path:
    """The same, with an index entry recorded for the copy itself (its checksum matches)."""
    from dptune.store._integrity import checksum

    dst = _misplaced_fold(root, other)
    e = root / INDEX_DIR / PARTS / f"{dst.name}.json"
    size, crc = checksum(dst)
    e.write_text(json.dumps({"crc32": crc, "file": f"{PARTS}/{dst.name}", "size": size,
                             "fingerprint": json.loads(e.read_text())["fingerprint"]}))
    return dst


def _misplaced_noise(root: Path, other: Path) -> Path:
    """Configuration 0's noise-floor part renamed to configuration 1's."""
    src = sorted((root / NOISE_DIR).glob("bpr-mf__0__c*.parquet"))[0]
    dst = src.with_name("bpr-mf__0__c000003.parquet")
    _copy(src, dst)
    return dst


def _noise_of_deterministic(root: Path, other: Path) -> Path:
    """A noise-floor part for UserKNN, which trains without a seed and has none."""
    src = sorted((root / NOISE_DIR).glob("bpr-mf__0__c*.parquet"))[0]
    dst = src.with_name("userknn__0__c000000.parquet")
    _copy(src, dst)
    return dst


def _entry_outside_grid(root: Path, other: Path) -> Path:
    """An index entry alone, for a unit outside the grid."""
    e = root / INDEX_DIR / PARTS / "userknn__0__u00000.parquet.json"
    dst = root / INDEX_DIR / PARTS / "userknn__1__u00009.parquet.json"
    shutil.copy(e, dst)
    return dst


FOREIGN = {
    "other-seed": _foreign_seed,
    "outside-grid": _outside_grid,
    "misplaced-fold": _misplaced_fold,
    "misplaced-rewritten-entry": _misplaced_fold_entry_rewritten,
    "misplaced-noise": _misplaced_noise,
    "noise-of-deterministic": _noise_of_deterministic,
    "entry-outside-grid": _entry_outside_grid,
}


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_a_part_not_from_this_experiment_is_named_set_aside_and_recomputed(
        pristine, other_seed, tmp_path, capsys, case):
    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    target = FOREIGN[case](root, other_seed)

    rc = main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    _one_line(err, target)
    assert "not from this experiment" in err and f"{root / 'quarantine'}" in err, err
    assert not (tmp_path / "rep" / "dp.csv").exists()

    rc = main(["status", str(root), "--reports", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert rc == 0 and "foreign:" in out and "not from this experiment" in out, out

    run_sweep(cfg, root, jobs=1, progress=False)  # the advice of the line above
    err = capsys.readouterr().err
    assert "set aside 1 file not from this experiment" in err, err
    assert (quarantine_dir(target) / target.name).is_file()
    # a name of this experiment's grid holds its own unit again; any other name is gone
    assert target.exists() == (f"{target.parent.name}/{target.name}" in before)
    after = _values(root)
    assert after.keys() == before.keys()
    for name, df in before.items():
        pd.testing.assert_frame_equal(after[name], df, obj=name)
    from dptune.store._store import ResultStore

    assert ResultStore(root).damaged() == []  # what the analysis checks before it reads
    if case == "other-seed":  # the case that once changed dp.csv without a word
        pd.testing.assert_frame_equal(_dp(root), _dp(results))


# --------------------------------------------------------------------------- optuna storage
def _without(root: Path, part: str) -> None:
    """Remove a part and its entry (a unit not computed yet: the sweep needs its study)."""
    (root / PARTS / part).unlink()
    (root / INDEX_DIR / PARTS / f"{part}.json").unlink()


def test_a_damaged_page_inside_optuna_db_is_set_aside(pristine, tmp_path, capsys):
    import sqlite3

    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    _without(root, "bpr-mf__1__u00001.parquet")
    db = root / "optuna.db"
    con = sqlite3.connect(db)
    size, pages = (con.execute(f"pragma {p}").fetchone()[0] for p in ("page_size", "page_count"))
    con.close()
    data = bytearray(db.read_bytes())
    data[(pages // 2) * size:(pages // 2) * size + 8] = b"\xff" * 8  # a page header, mid-file
    db.write_bytes(bytes(data))
    con = sqlite3.connect(db)  # the file header is intact: it opens; quick_check finds the page
    try:
        assert con.execute("pragma quick_check").fetchone()[0] != "ok"
    except sqlite3.DatabaseError:
        pass
    finally:
        con.close()

    assert main(["status", str(root), "--reports", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "storage:" in out and "damaged" in out and "optuna.db.damaged" in out, out

    run_sweep(cfg, root, jobs=1, progress=False)
    err = capsys.readouterr().err
    assert "optuna.db was damaged" in err and len(err.strip().splitlines()) == 1, err
    assert (root / "optuna.db.damaged").is_file()
    after = _values(root)
    for name, df in before.items():
        pd.testing.assert_frame_equal(after[name], df, obj=name)


def test_a_damaged_journal_is_set_aside(pristine, tmp_path, capsys):
    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    journal = tmp_path / "sweep.journal"
    _without(root, "bpr-mf__1__u00001.parquet")
    run_sweep(cfg, root, jobs=1, progress=False, storage=str(journal))
    lines = journal.read_bytes().split(b"\n")
    mid = len(lines) // 2
    lines[mid] = b"{garbled" + lines[mid][8:]  # one record in the middle is no longer JSON
    journal.write_bytes(b"\n".join(lines))
    _without(root, "bpr-mf__0__u00001.parquet")
    capsys.readouterr()

    run_sweep(cfg, root, jobs=1, progress=False, storage=str(journal))
    err = capsys.readouterr().err
    assert f"{journal} was damaged" in err and len(err.strip().splitlines()) == 1, err
    assert journal.with_name("sweep.journal.damaged").is_file()
    after = _values(root)
    for name, df in before.items():
        pd.testing.assert_frame_equal(after[name], df, obj=name)


# --------------------------------------------------------------------------- a full disk
# Simulated by raising, at the write call, the error a full disk gives there (sqlite's
# "database or disk is full", OSError ENOSPC): the test suite cannot fill a real file system.


def test_a_full_disk_under_the_optuna_storage_is_one_line(pristine, tmp_path, capsys,
                                                           monkeypatch):
    import sqlite3

    import optuna
    import sqlalchemy.exc

    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    _without(root, "bpr-mf__1__u00001.parquet")

    def full(*args, **kwargs):
        try:
            raise sqlalchemy.exc.OperationalError(
                "INSERT INTO trials", {}, sqlite3.OperationalError("database or disk is full"))
        except sqlalchemy.exc.OperationalError as err:
            raise optuna.exceptions.StorageInternalError("An exception is raised during the "
                                                         "commit.") from err

    monkeypatch.setattr(optuna.storages.RDBStorage, "_create_new_trial", full)
    rc = main(["run", str(cfg), "--results", str(root), "--no-analyze", "--no-progress",
               "--jobs", "1"])
    err = capsys.readouterr().err
    assert rc == 2, err
    _one_line(err, root / "optuna.db")
    assert "out of space" in err and "run the same command" in err, err
    after = _values(root)  # every finished unit kept as it was
    assert after.keys() == before.keys() - {f"{PARTS}/bpr-mf__1__u00001.parquet"}
    for name, df in after.items():
        pd.testing.assert_frame_equal(df, before[name], obj=name)


def test_a_full_disk_while_writing_a_part_is_one_line(pristine, tmp_path, capsys, monkeypatch):
    import errno

    import dptune.store._parts as parts

    cfg, results, before = pristine
    root = tmp_path / "results"
    shutil.copytree(results, root)
    _without(root, "bpr-mf__1__u00001.parquet")
    write = parts._write_row_groups

    def full(tmp, res, schema):
        write(tmp, res, schema)
        tmp.write_bytes(tmp.read_bytes()[:100])  # what fit before the disk filled up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(parts, "_write_row_groups", full)
    rc = main(["run", str(cfg), "--results", str(root), "--no-analyze", "--no-progress",
               "--jobs", "1"])
    err = capsys.readouterr().err
    assert rc == 2, err
    _one_line(err, root / PARTS)
    assert "out of space" in err, err
    assert not list((root / PARTS).glob(".*")), "a temporary file was left behind"
    after = _values(root)
    assert after.keys() == before.keys() - {f"{PARTS}/bpr-mf__1__u00001.parquet"}


def test_a_full_disk_while_writing_the_reports_leaves_the_folder_as_it_was(
        pristine, tmp_path, capsys, monkeypatch):
    import errno

    import dptune.report._report as report

    _, results, _ = pristine
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "report.md").write_text("the previous report\n")
    (reports / "notes.txt").write_text("mine\n")
    write = report._write_text

    def full(path, text):
        if path.name == "report.md":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return write(path, text)

    monkeypatch.setattr(report, "_write_text", full)
    rc = main(["analyze", str(results), "--reports", str(reports), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    _one_line(err, reports)
    assert "out of space" in err, err
    assert sorted(p.name for p in reports.iterdir()) == ["notes.txt", "report.md"]
    assert (reports / "report.md").read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # no staging folder left


def test_a_deleted_manifest_is_rewritten_by_run(pristine, tmp_path):
    """``status`` and ``analyze`` say that ``dptune run`` rewrites a deleted manifest.json; it
    refused instead ("holds files ... but no manifest.json"), taking the noise floor's trials
    and the record of report folders for somebody else's files. It rewrites it now, and
    computes nothing again."""
    cfg, _, before = pristine
    root, _ = _copy_damaged(pristine, tmp_path, "manifest", "delete")
    (root / "reports.txt").write_text("reports/synthetic\n")  # as dptune run records them
    times = _mtimes(root)
    run_sweep(cfg, root, jobs=1, progress=False)
    assert (root / "manifest.json").is_file() and _mtimes(root) == times
    assert _values(root).keys() == before.keys()


def test_a_folder_in_a_parts_place_is_named_and_its_unit_computed_again(pristine, tmp_path,
                                                                         capsys):
    """A folder where a part goes: ``analyze`` names it in one line, ``run`` removes it and
    computes the unit again (it crashed with IsADirectoryError)."""
    cfg, _, before = pristine
    root, target = _copy_damaged(pristine, tmp_path, "bpr-part", "delete")
    target.mkdir()
    (target / "x").write_text("")
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    _one_line(err, target)
    assert "not a file" in err
    run_sweep(cfg, root, jobs=1, progress=False)
    pd.testing.assert_frame_equal(_values(root)[f"{PARTS}/{target.name}"],
                                  before[f"{PARTS}/{target.name}"])


def test_an_unreadable_part_is_named_not_a_traceback(pristine, tmp_path, capsys, monkeypatch):
    """A part its user may not read (``chmod 000``; the test runs as any user, so the
    permission is what ``os.access`` answers): ``analyze`` names it in one line (a
    PermissionError from the checksum before), ``run`` computes its unit again."""
    import os

    import dptune.store._integrity as integrity

    cfg, _, before = pristine
    root, target = _copy_damaged(pristine, tmp_path, "bpr-part", "garble")
    shutil.copy2(pristine[1] / PARTS / target.name, target)  # the part intact, but unreadable
    real, stamp = os.access, target.stat().st_mtime_ns

    def access(p, mode, *a, **k):  # this file, as written, is unreadable; its rewrite is not
        if Path(p) == target and mode == os.R_OK and target.stat().st_mtime_ns == stamp:
            return False
        return real(p, mode, *a, **k)

    monkeypatch.setattr(integrity.os, "access", access)
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    _one_line(err, target)
    assert "unreadable (permission denied)" in err
    run_sweep(cfg, root, jobs=1, progress=False)
    assert target.stat().st_mtime_ns != stamp  # removed and computed again
    pd.testing.assert_frame_equal(_values(root)[f"{PARTS}/{target.name}"],
                                  before[f"{PARTS}/{target.name}"])


def test_a_noise_floor_a_stopped_run_left_on_some_folds_is_refused_then_finished(
        pristine, tmp_path, capsys):
    """A run stopped during the noise floor leaves parts on some folds only, no entry for the
    rest and no noise_trials.csv yet: ``analyze`` read it as a floor of fewer folds, while
    the report said every fold. It is one line naming the configuration's folds, before any
    work; ``dptune run`` finishes it, and ``--noise-seeds 0`` analyses without it."""
    cfg, _, before = pristine
    root = tmp_path / "results"
    shutil.copytree(pristine[1], root)
    gone = sorted((root / NOISE_DIR).glob("bpr-mf__1__*.parquet"))[0]
    gone.unlink()
    (root / INDEX_DIR / NOISE_DIR / f"{gone.name}.json").unlink()
    (root / "noise_trials.csv").unlink()
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dptune: {root / NOISE_DIR}: the noise floor of bpr-mf "
                          "configuration ") and "\n" not in err, err
    assert ("has 1 of its 2 validation folds (fold 1 missing: a run stopped during it); dptune "
            "run finishes it, or leave the floor out with --noise-seeds 0") in err
    assert not (tmp_path / "rep").exists()
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"),
                 "--noise-seeds", "0"]) == 0
    run_sweep(cfg, root, jobs=1, progress=False)
    assert _values(root).keys() == before.keys()
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep2")]) == 0


def test_a_data_set_folder_in_the_parts_folder_is_set_aside_not_deleted(pristine, tmp_path,
                                                                       capsys):
    """A folder under a name no part has (a partitioned Parquet data set written into the part
    folder by hand, ``mine.parquet/``) was "not a file" to be recomputed: ``status`` said
    ``dptune run`` would recompute it, and ``run`` deleted it with what it held. It is not from
    this experiment: named so, and set aside in ``quarantine/`` whole, as such a file is."""
    cfg, _, before = pristine
    root = tmp_path / "results"
    shutil.copytree(pristine[1], root)
    mine = root / PARTS / "mine.parquet"
    (mine / "b=x").mkdir(parents=True)
    (mine / "b=x" / "0.parquet").write_bytes(b"the user's own data")
    assert main(["status", str(root), "--reports", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert f"foreign:     {mine} (not from this experiment" in out, out
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    _one_line(err, mine)
    assert "not from this experiment" in err
    times = {name: t for name, t in _mtimes(root).items() if name != mine.name}
    run_sweep(cfg, root, jobs=1, progress=False)
    kept = quarantine_dir(mine) / mine.name / "b=x" / "0.parquet"
    assert kept.read_bytes() == b"the user's own data" and not mine.exists()
    assert _mtimes(root) == times  # nothing computed again
    assert _values(root).keys() == before.keys()


def test_a_trials_csv_damaged_in_a_digit_is_no_lost_part(pristine, tmp_path, capsys):
    """``trials.csv`` is derived, and the analysis reads it only to find parts that were lost
    with their index entries. A digit changed in it (fold ``9`` of 2 folds) named a part no
    unit of this experiment has: ``analyze`` refused the complete store, naming "an index
    entry without its part" that does not exist, and ``run`` said it had set that aside. A name
    outside the grid is no lost part: the analysis runs, and ``run`` rewrites the file."""
    cfg, _, before = pristine
    root = tmp_path / "results"
    shutil.copytree(pristine[1], root)
    text = (root / "trials.csv").read_text().splitlines()
    row = text[1].split(",")
    row[2] = "9"  # the fold of the first row
    (root / "trials.csv").write_text("\n".join([text[0], ",".join(row), *text[2:]]) + "\n")
    assert main(["status", str(root), "--reports", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "foreign:" not in out and "damaged:" not in out, out
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 0
    capsys.readouterr()
    times = _mtimes(root)
    run_sweep(cfg, root, jobs=1, progress=False)
    assert "set aside" not in capsys.readouterr().err
    assert not (root / "quarantine").exists() and _mtimes(root) == times
    assert ",9," not in (root / "trials.csv").read_text()
    assert _values(root).keys() == before.keys()
