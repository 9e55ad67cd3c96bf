"""Result store: parts round-trip, read as one data set, slice reads join users, atomic writes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.dataset as pads
import pytest

from dptune.errors import DptuneError
from dptune.store._integrity import record
from dptune.store._store import PARTS, ResultStore, UnitResult

METRICS = ("ndcg", "precision")
CUTOFFS = (1, 5)


def _unit(alg, fold, unit, ids, users, seed=7, shift=0.0):
    rng = np.random.default_rng(seed)
    vals = tuple(rng.random((len(METRICS), len(CUTOFFS), len(users))) + shift for _ in ids)
    return UnitResult(alg, fold, unit, seed, METRICS, CUTOFFS, np.asarray(users, np.int32),
                      tuple(ids), vals, tuple(0.1 for _ in ids), tuple(0.01 for _ in ids))


@pytest.fixture
def store(tmp_path):
    s = ResultStore(tmp_path / "res").create()
    s.write_manifest({
        "experiment": "t", "algorithms": [{"name": "a", "free": ["k"], "type": "userknn"}],
        "evaluation": {"metrics": list(METRICS), "cutoffs": list(CUTOFFS)},
    })
    s.write_configs([pd.DataFrame({"algorithm": "a", "config_id": [0, 1, 2], "k": [10, 20, 30]})])
    return s


def test_configs_csv_writes_each_value_as_its_grid_gave_it(tmp_path):
    """An integer hyperparameter stays an integer in configs.csv when another algorithm lacks
    its column or shares it with floats (it was written ``10.0``); floats keep their digits."""
    s = ResultStore(tmp_path / "r")
    s.create()
    s.write_configs([
        pd.DataFrame({"algorithm": "userknn", "config_id": [0, 1], "k": [10, 20]}),
        pd.DataFrame({"algorithm": "bpr-mf", "config_id": [0, 1], "factors": [8, 16],
                      "learning_rate": [0.1, 1.0]}),
        pd.DataFrame({"algorithm": "mine", "config_id": [0], "k": [0.5]}),
    ])
    assert (tmp_path / "r" / "configs.csv").read_text().splitlines() == [
        "algorithm,config_id,k,factors,learning_rate",
        "userknn,0,10,,", "userknn,1,20,,",
        "bpr-mf,0,,8,0.1", "bpr-mf,1,,16,1.0",
        "mine,0,0.5,,",
    ]


def test_configs_reads_each_algorithms_values_with_their_own_type(tmp_path):
    """``configs(alg)`` gives an integer hyperparameter as int64 and a boolean one as bool even
    when the column is shared with another algorithm's text values (``k = "auto"``), which made
    pandas read the whole column as text: ``k`` came back as the strings ``'10'``, ``'20'``
    and ``norm`` as object; floats beside text come back as floats."""
    s = ResultStore(tmp_path / "r").create()
    s.write_manifest({"experiment": "t", "algorithms": [
        {"name": n, "free": ["k", "lr"], "type": "userknn"} for n in ("a", "b")],
        "evaluation": {"metrics": list(METRICS), "cutoffs": list(CUTOFFS)}})
    s.write_configs([
        pd.DataFrame({"algorithm": "a", "config_id": [0, 1], "k": [10, 20], "norm": [True, False],
                      "lr": [0.5, 2.5]}),
        pd.DataFrame({"algorithm": "b", "config_id": [0, 1], "k": ["auto", "x"],
                      "lr": ["fast", "slow"]}),
    ])
    a, b = s.configs("a"), s.configs("b")
    assert a.dtypes.astype(str).to_dict() == {"config_id": "int64", "k": "int64", "norm": "bool",
                                              "lr": "float64"}
    assert a.to_dict("list") == {"config_id": [0, 1], "k": [10, 20], "norm": [True, False],
                                 "lr": [0.5, 2.5]}
    assert b["k"].tolist() == ["auto", "x"] and b["lr"].tolist() == ["fast", "slow"]


def test_roundtrip_and_one_dataset(store):
    u1 = _unit("a", "0", "u00000", [0, 1], [3, 5, 9])
    u2 = _unit("a", "0", "u00001", [2], [3, 5, 9], seed=8)
    store.write_unit(u1)
    store.write_unit(u2)
    df = pd.read_parquet(store.root / PARTS)
    assert list(df.columns) == ["algorithm", "config_id", "fold", "user", "metric", "cutoff", "value"]
    assert len(df) == 3 * 3 * len(METRICS) * len(CUTOFFS)
    assert str(df["value"].dtype) == "float32"
    d = pads.dataset(store.root / PARTS, format="parquet")
    assert d.count_rows() == len(df)
    users, mat = store.read_matrix("a", "precision", 5, "0", [2, 0])
    assert users.tolist() == [3, 5, 9]
    np.testing.assert_allclose(mat[0], u2.values[0][1, 1].astype(np.float32))
    np.testing.assert_allclose(mat[1], u1.values[0][1, 1].astype(np.float32))


def test_inner_join_when_a_config_misses_a_user(store):
    store.write_unit(_unit("a", "1", "u00000", [0, 1], [1, 2, 3]))
    store.write_unit(_unit("a", "1", "u00001", [2], [2, 3, 4]))
    users, mat = store.read_matrix("a", "ndcg", 1, "1", [0, 2])
    assert users.tolist() == [2, 3] and mat.shape == (2, 2)


def test_trials_summary_best(store):
    store.write_unit(_unit("a", "0", "u00000", [0, 1], [1, 2], seed=1))
    store.write_unit(_unit("a", "0", "u00001", [2], [1, 2], seed=2, shift=5.0))
    t = store.write_trials()
    assert list(t.columns) == ["algorithm", "config_id", "fold", "seed", "unit", "fit_seconds",
                               "eval_seconds", "n_users"]
    assert set(t["seed"]) == {1, 2} and len(t) == 3
    assert (store.root / "trials.csv").exists()
    best = store.best_configs()
    assert set(best["config_id"]) == {2}  # shifted by +5 on every metric
    assert store.folds("a") == ["0"]
    assert store.metric_cutoffs("a") == [("ndcg", 1), ("ndcg", 5), ("precision", 1), ("precision", 5)]


def test_duplicate_write_is_idempotent_and_leaves_no_temp(store):
    u = _unit("a", "0", "u00000", [0], [1, 2])
    p1 = store.write_unit(u)
    b1 = p1.read_bytes()
    store.write_unit(u)
    assert p1.read_bytes() == b1
    assert [p.name for p in (store.root / PARTS).iterdir()] == [p1.name]
    assert store.has_part("a", "0", "u00000") and not store.has_part("a", "1", "u00000")


def test_two_writers_of_one_part_never_leave_one_entry_beside_the_others_part(tmp_path,
                                                                             monkeypatch):
    """Two ``dptune run`` on one results directory both train the noise floor: one writer had
    recorded its part's index entry when the other recorded its own and put its part in place,
    and the first then put its part over that one. The entry of one beside the part of the
    other (same values, other timings, so other bytes): a part read as damaged right after the
    runs. A writer puts its part and its entry in place under the directory's publishing
    lock; the test holds the first writer between the two steps until the second one either
    finished (no lock) or waits for the lock."""
    import fcntl
    import threading

    import dptune.store._noise_parts as noise_parts
    from dptune.store._integrity import problem

    guard = 60  # only ends a test whose awaited state never comes
    real_record, real_flock = noise_parts.record, fcntl.flock
    recorded, second_on = threading.Event(), threading.Event()

    def record(*args, **kwargs):
        out = real_record(*args, **kwargs)
        if threading.current_thread().name == "first":  # its entry recorded, its part not in place
            recorded.set()
            second_on.wait(guard)
        return out

    def flock(fd, operation):
        if threading.current_thread().name == "second" and operation == fcntl.LOCK_EX:
            second_on.set()  # the second writer waits for the lock the first one holds
        return real_flock(fd, operation)

    monkeypatch.setattr(noise_parts, "record", record)
    monkeypatch.setattr(fcntl, "flock", flock)
    users = np.arange(5, dtype=np.int32)
    values = {s: np.full((1, 1, 5), 0.5, np.float32) for s in (0, 1)}

    def write(seconds: float) -> None:
        noise_parts.write_noise_part(tmp_path, "bpr", 0, "0", {"factors": 8}, users, ["ndcg"],
                                     [10], values, {0: 11, 1: 12}, {0: (seconds, 0.0),
                                                                    1: (seconds, 0.0)})

    first = threading.Thread(target=write, args=(1.0,), name="first")
    first.start()
    assert recorded.wait(guard)
    second = threading.Thread(target=write, args=(2.0,), name="second")
    second.start()
    second.join(guard)
    second_on.set()
    first.join(guard)
    assert not first.is_alive() and not second.is_alive()
    assert problem(noise_parts.noise_part_path(tmp_path, "bpr", 0, "0")) is None


def test_hidden_temp_file_is_not_read(store):
    store.write_unit(_unit("a", "0", "u00000", [0], [1, 2]))
    (store.root / PARTS / ".a__0__u00001.parquet.deadbeef.tmp").write_bytes(b"half written")
    assert len(pd.read_parquet(store.root / PARTS)) == 2 * len(METRICS) * len(CUTOFFS)
    assert len(store.part_paths()) == 1


def test_stale_temporaries_are_removed_fresh_ones_kept(store):
    import os
    import time

    part = store.write_unit(_unit("a", "0", "u00000", [0], [1, 2]))
    old = store.root / PARTS / ".a__0__u00001.parquet.dead.tmp"
    old_meta = store.root / ".trials.csv.dead.tmp"
    young = store.root / PARTS / ".a__0__u00002.parquet.live.tmp"
    for f in (old, old_meta, young):
        f.write_bytes(b"half written")
    hours_ago = time.time() - 2 * 3600
    for f in (old, old_meta):
        os.utime(f, (hours_ago, hours_ago))
    assert store.remove_stale_temporaries() == sorted([old, old_meta])
    assert young.exists() and part.exists() and not old.exists() and not old_meta.exists()
    assert store.remove_stale_temporaries(older_than_s=-1) == [young]
    assert [p.name for p in (store.root / PARTS).iterdir()] == [part.name]


def test_missing_config_and_unwritable_dir(store, tmp_path):
    store.write_unit(_unit("a", "0", "u00000", [0], [1, 2]))
    with pytest.raises(DptuneError, match="no results for config_id"):
        store.read_matrix("a", "ndcg", 1, "0", [0, 1])
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DptuneError, match="not writable"):
        ResultStore(blocker / "res").create()


def test_part_metadata_records_seed_and_means(store):
    u = _unit("a", "0", "u00000", [0], [1, 2], seed=99)
    p = store.write_unit(u)
    meta = ResultStore.part_meta(p)
    assert meta["seed"] == 99
    assert meta["means"]["0"]["ndcg@1"] == pytest.approx(float(u.values[0][0, 0].mean()))
    json.dumps(meta)


def _strip_layout(path):
    """Rewrite a part without the ``layout`` key (as an older writer left it)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"dptune"])
    del meta["layout"]
    n_groups = pq.ParquetFile(path).num_row_groups
    per = table.num_rows // n_groups
    schema = table.schema.with_metadata({"dptune": json.dumps(meta, sort_keys=True)})
    with pq.ParquetWriter(path, schema, compression="zstd") as w:
        for g in range(n_groups):
            w.write_table(table.slice(g * per, per).cast(schema), row_group_size=per)
    record(path)  # a deliberate rewrite: its new size and checksum are the verified ones


def test_read_fold_value_only_path_equals_generic_path_and_read_matrix(store):
    from dptune.store._store import FoldBuffer

    p1 = store.write_unit(_unit("a", "0", "u00000", [2, 0], [1, 4, 9, 12], seed=3))
    p2 = store.write_unit(_unit("a", "0", "u00001", [1], [4, 9, 12, 15], seed=4))
    assert ResultStore.part_meta(p1)["layout"] == "config-major"
    mcs = store.metric_cutoffs("a")
    fast = store.read_fold("a", "0", [0, 1, 2], mcs, threads=1)
    assert fast.users.tolist() == [1, 4, 9, 12, 15]
    for ids in ([0, 1, 2], [2, 0], [1]):
        for m, c in mcs:
            ref_users, ref = store.read_matrix("a", m, c, "0", ids)
            users, mat = fast.matrix(m, c, ids)
            assert users.tolist() == ref_users.tolist()
            np.testing.assert_array_equal(mat, ref)
    # in place: the fold's own array, the rows asked for and the users present for all of them
    for ids in ([0, 1, 2], [2, 0], [1]):
        values, rows, columns = fast.in_place("ndcg", 5, ids)
        assert np.shares_memory(values, fast.values)
        users, mat = fast.matrix("ndcg", 5, ids)
        sub = values[rows] if columns is None else values[rows][:, columns]
        np.testing.assert_array_equal(sub.astype(np.float64), mat)
        assert (columns is None) == (len(users) == len(fast.users))
    assert fast.in_place("ndcg", 5, [1])[2].tolist() == [1, 2, 3, 4]  # user 1 missing
    assert fast.in_place("ndcg", 5, [0, 1])[2].tolist() == [1, 2, 3]  # and user 15
    with pytest.raises(DptuneError, match="not read"):
        fast.in_place("ndcg", 5, [7])
    # the same parts without the layout key take the generic path: identical values
    for p in (p1, p2):
        _strip_layout(p)
    slow = ResultStore(store.root).read_fold("a", "0", [0, 1, 2], mcs, threads=2)
    np.testing.assert_array_equal(slow.values, fast.values)
    assert slow.users.tolist() == fast.users.tolist()
    # a buffer serves successive folds of any size from one block of memory
    store.write_unit(_unit("a", "1", "u00000", [0, 1, 2], [3, 5], seed=5))
    buf = FoldBuffer()
    first = ResultStore(store.root).read_fold("a", "0", [0, 1, 2], mcs, buffer=buf)
    np.testing.assert_array_equal(first.values, fast.values)
    second = ResultStore(store.root).read_fold("a", "1", [0, 1, 2], mcs, buffer=buf)
    assert np.shares_memory(first.values, second.values)
    _, ref = store.read_matrix("a", "ndcg", 5, "1", [0, 1, 2])
    np.testing.assert_array_equal(second.matrix("ndcg", 5, [0, 1, 2])[1], ref)


def test_parts_compress_the_values_with_lz4_and_the_rest_with_zstd_all_columns_required(store):
    """The values (what an analysis decodes) are LZ4, faster to decode; the other columns zstd;
    every column is required (no definition levels to decode). A part written with nullable
    columns, as before, reads the same."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dptune.store._parts import COMPRESSION

    part = store.write_unit(_unit("a", "0", "u00000", [0, 1], [1, 4, 9], seed=3))
    assert not any(f.nullable for f in pq.read_schema(part))
    md = pq.read_metadata(part)
    assert all(md.schema.column(c).max_definition_level == 0 for c in range(md.num_columns))
    mcs = store.metric_cutoffs("a")
    required = store.read_fold("a", "0", [0, 1], mcs)
    table = pq.read_table(part)
    loose = pa.schema([pa.field(f.name, f.type, nullable=True) for f in table.schema],
                      metadata=table.schema.metadata)
    with pq.ParquetWriter(part, loose, compression="zstd") as w:
        per = table.num_rows // md.num_row_groups
        for g in range(md.num_row_groups):
            w.write_table(table.slice(g * per, per).cast(loose), row_group_size=per)
    record(part)
    assert all(f.nullable for f in pq.read_schema(part))
    nullable = ResultStore(store.root).read_fold("a", "0", [0, 1], mcs)
    np.testing.assert_array_equal(nullable.values, required.values)
    assert nullable.users.tolist() == required.users.tolist()
    names = md.schema.to_arrow_schema().names
    for g in range(md.num_row_groups):
        codecs = {names[c]: md.row_group(g).column(c).compression for c in range(len(names))}
        assert codecs.pop("value") in ("LZ4", "LZ4_RAW")
        assert set(codecs.values()) == {"ZSTD"}
    assert COMPRESSION["value"] == "lz4" and set(COMPRESSION) == set(names)


def test_constant_columns_built_by_arrow_write_the_same_bytes_as_from_python_lists(
        tmp_path, monkeypatch):
    """The algorithm, fold and metric columns are built by Arrow (``pa.repeat``) instead of
    from Python lists of ``n`` strings: the part's bytes, and so its checksum and index entry,
    are those the list-built columns gave (no user, one user, many users and configurations)."""
    import pyarrow as pa

    from dptune.store import _parts

    def written(name: str, res: UnitResult) -> tuple[bytes, str]:
        root = tmp_path / name
        (root / PARTS).mkdir(parents=True)
        part = _parts.write_part(root, res, "f" * 16)
        entry = json.loads((root / "index" / PARTS / f"{part.name}.json").read_text())
        return part.read_bytes(), entry["crc32"]

    units = [_unit("bpr-mf", "0", "u00000", [0, 1, 2], list(range(0, 500, 3))),
             _unit("a", "test", "u00001", [4], [7]),
             _unit("a", "1", "u00002", [0, 1], [])]
    arrow = [written(f"arrow{k}", res) for k, res in enumerate(units)]
    monkeypatch.setattr(_parts, "_repeated", lambda text, n: pa.array([text] * n, pa.string()))
    lists = [written(f"lists{k}", res) for k, res in enumerate(units)]
    assert arrow == lists


def test_read_fold_in_a_reused_buffer_marks_missing_cells_and_leaves_no_stale_value(store):
    """A fold whose config-major parts hold every user is written cell by cell without a NaN
    fill first; a fold where a part lacks a user gets NaN there, whatever the buffer held."""
    from dptune.store._store import FoldBuffer

    store.write_unit(_unit("a", "0", "u00000", [0, 1], [1, 4, 9], seed=3))
    store.write_unit(_unit("a", "0", "u00001", [2], [1, 4, 9], seed=4))
    store.write_unit(_unit("a", "1", "u00000", [0, 1], [1, 4, 9], seed=5))
    store.write_unit(_unit("a", "1", "u00001", [2], [4, 9], seed=6))  # user 1 missing
    mcs = store.metric_cutoffs("a")
    buf = FoldBuffer()
    for fold, missing in (("0", False), ("1", True), ("0", False), ("1", True)):
        got = store.read_fold("a", fold, [0, 1, 2], mcs, buffer=buf)
        assert got.users.tolist() == [1, 4, 9]
        for k, (m, c) in enumerate(mcs):
            for row, cid in enumerate([0, 1, 2]):
                users, ref = store.read_matrix("a", m, c, fold, [cid])
                expect = np.full(3, np.nan, dtype=np.float32)
                expect[np.searchsorted([1, 4, 9], users)] = ref[0]
                np.testing.assert_array_equal(got.values[k, row], expect)
        assert np.isnan(got.values).any() == missing


def test_read_fold_in_groups_reuses_each_parts_footer_and_users_and_rereads_a_rewritten_part(
        store, monkeypatch):
    """A fold read in groups of metric@N through one buffer (what the analysis does when a
    fold is too large) gives, group by group, exactly the slices of fresh reads; each part's
    footer and run of users are read once for every group of the fold, and again when the
    part was rewritten in between or another fold is read."""
    import os
    from pathlib import Path

    import pyarrow.parquet as pq

    from dptune.store import _fold
    from dptune.store._store import FoldBuffer

    store.write_unit(_unit("a", "0", "u00000", [0, 1], [1, 4, 9], seed=3))
    store.write_unit(_unit("a", "0", "u00001", [2], [4, 9, 12], seed=4))  # other users
    store.write_unit(_unit("a", "1", "u00000", [0, 1, 2], [2, 5], seed=5))
    mcs = store.metric_cutoffs("a")
    groups = [mcs[i:i + 1] for i in range(len(mcs))]
    footers, user_reads = [], []
    read_metadata, part_users = pq.read_metadata, _fold._part_users

    def counted_metadata(path, *a, **k):
        footers.append(Path(path).name)
        return read_metadata(path, *a, **k)

    def counted_users(job, scan_all_users):
        if job.run_users is None or scan_all_users:
            user_reads.append(job.path.name)
        return part_users(job, scan_all_users)

    monkeypatch.setattr(_fold.pq, "read_metadata", counted_metadata)
    monkeypatch.setattr(_fold, "_part_users", counted_users)
    buf = FoldBuffer()
    for fold in ("0", "1", "0"):
        footers.clear()
        user_reads.clear()
        for group in groups:
            got = store.read_fold("a", fold, [0, 1, 2], group, buffer=buf)
            fresh = ResultStore(store.root).read_fold("a", fold, [0, 1, 2], group)
            assert got.users.tolist() == fresh.users.tolist()
            np.testing.assert_array_equal(got.values, fresh.values)
        parts = 2 if fold == "0" else 1
        assert len(footers) == parts * (1 + len(groups))  # the buffer's once, fresh reads each
        assert len(user_reads) == parts * (1 + len(groups))
    # a part rewritten between two groups of the same fold: its footer and users read again
    got = store.read_fold("a", "0", [0, 1, 2], groups[0], buffer=buf)
    part = store.write_unit(_unit("a", "0", "u00001", [2], [1, 4, 9, 12], seed=7))
    os.utime(part, ns=(1, 1))  # a distinct modification time whatever the clock's resolution
    footers.clear()
    got = store.read_fold("a", "0", [0, 1, 2], groups[1], buffer=buf)
    assert footers == [part.name]
    assert got.users.tolist() == [1, 4, 9, 12]
    np.testing.assert_array_equal(
        got.values, ResultStore(store.root).read_fold("a", "0", [0, 1, 2], groups[1]).values)


def test_read_fold_finds_users_only_a_later_row_group_holds(store):
    """A part without the config-major layout whose later row groups hold users its first one
    does not (a larger user code, and a smaller one): pass 1 reads one row group per part, so
    pass 2 meets users it did not see and the fold is read again with every row group's users;
    the result equals read_matrix for every metric@N."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = store.write_unit(_unit("a", "0", "u00000", [0, 1], [2, 4], seed=3))
    store.write_unit(_unit("a", "0", "u00001", [2], [2, 4], seed=4))
    table = pq.read_table(part)
    meta = json.loads(table.schema.metadata[b"dptune"])
    del meta["layout"]
    schema = table.schema.with_metadata({"dptune": json.dumps(meta, sort_keys=True)})
    n_groups = pq.ParquetFile(part).num_row_groups
    per = table.num_rows // n_groups
    with pq.ParquetWriter(part, schema, compression="zstd") as w:
        for g in range(n_groups):
            rows = table.slice(g * per, per).to_pandas()
            if g >= 1:  # later row groups: users 0 and 30 as well, for both configurations
                extra = rows.groupby("config_id", as_index=False).first()
                more = [extra.assign(user=u, value=np.float32(0.5 + u / 100)) for u in (0, 30)]
                rows = pd.concat([rows, *more], ignore_index=True)
            batch = pa.Table.from_pandas(rows, schema=schema, preserve_index=False)
            w.write_table(batch, row_group_size=len(rows))
    record(part)
    mcs = store.metric_cutoffs("a")
    got = ResultStore(store.root).read_fold("a", "0", [0, 1, 2], mcs)
    assert got.users.tolist() == [0, 2, 4, 30]
    for m, c in mcs:
        for ids in ([0, 1], [0, 1, 2]):
            users, ref = store.read_matrix("a", m, c, "0", ids)
            got_users, mat = got.matrix(m, c, ids)
            assert got_users.tolist() == users.tolist()
            np.testing.assert_array_equal(mat, ref)
    assert ResultStore(store.root).read_matrix("a", *mcs[1], "0", [0, 1])[0].tolist() == [0, 2, 4, 30]


def test_checksum_is_the_crc32_of_the_bytes_and_verify_equals_problem(tmp_path):
    """The memory-mapped checksum equals zlib's CRC-32 of the file's bytes (the oracle: entries
    stay comparable whichever implementation wrote them) for any length, and an empty file has
    the CRC of no bytes; verifying many parts on threads gives each part's own answer."""
    import zlib

    from dptune.store import _integrity as integ

    data = np.random.default_rng(1).bytes(3_000_001)
    (tmp_path / "a.bin").write_bytes(data)
    (tmp_path / "empty.bin").write_bytes(b"")
    assert integ.checksum(tmp_path / "a.bin") == (len(data), f"{zlib.crc32(data):08x}")
    assert integ.checksum(tmp_path / "empty.bin") == (0, "00000000")
    # lengths around the fast CRC's folding blocks (16, 64, 256 bytes) and a page
    for n in (1, 15, 16, 17, 63, 64, 65, 255, 257, 4095, 4097):
        (tmp_path / "n.bin").write_bytes(data[:n])
        assert integ.checksum(tmp_path / "n.bin") == (n, f"{zlib.crc32(data[:n]):08x}"), n

    root = tmp_path / "results"
    parts = []
    for k in range(5):
        part = root / "per_user.parquet" / f"p{k}.parquet"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(data[k:] if k else data)
        record(part)
        parts.append(part)
    parts[1].write_bytes(b"x" + data[2:])  # same size, one byte garbled at the front
    parts[3].write_bytes(data[:100])  # truncated
    (root / "index" / "per_user.parquet" / "p4.parquet.json").unlink()  # entry lost
    integ._CACHE.clear()
    integ.verify(parts, threads=3)
    threaded = [integ.problem(p) for p in parts]
    integ._CACHE.clear()
    sequential = [integ.problem(p) for p in parts]
    assert threaded == sequential
    assert [w is None for w in threaded] == [True, False, True, False, False]


def test_an_argument_the_store_has_nothing_for_is_one_line_naming_it(store):
    """``read_matrix`` with a metric, cutoff, fold or algorithm the store does not hold used to
    raise a bare ``ValueError: 'bogus' is not in list`` (or name only the configurations), and
    ``configs``/``folds``/``metric_cutoffs`` of an unknown algorithm answered as if it had
    nothing; each is now one line naming the argument and what the store has."""
    store.write_unit(_unit("a", "0", "u00000", [0, 1], [3, 5, 9]))
    root = store.root
    cases = [
        (lambda: store.read_matrix("a", "bogus", 5, "0", [0, 1]),
         f"{root}: metric: 'bogus' is not stored (the store has ndcg, precision)"),
        (lambda: store.read_matrix("a", "ndcg", 10, "0", [0, 1]),
         f"{root}: cutoff: 10 is not stored (the store has 1, 5)"),
        (lambda: store.read_matrix("a", "ndcg", 5, "7", [0, 1]),
         f"{root}: fold: '7' has no results of a (folds with results: 0)"),
        (lambda: store.read_matrix("nope", "ndcg", 5, "0", [0, 1]),
         f"{root}: algorithm: 'nope' is not an algorithm of this store (a)"),
        (lambda: store.read_matrix("a", "ndcg", 5, "0", ["x"]),
         f"{root}: config_ids: must be a list of integer configuration ids"),
        (lambda: store.read_fold("a", "7", [0], [("ndcg", 5)]),
         f"{root}: fold: '7' has no results of a"),
        (lambda: store.configs("nope"), f"{root}: algorithm: 'nope' is not an algorithm"),
        (lambda: store.folds("nope"), f"{root}: algorithm: 'nope' is not an algorithm"),
        (lambda: store.metric_cutoffs("nope"), f"{root}: algorithm: 'nope' is not an algorithm"),
        (lambda: store.hyperparameters("nope"), f"{root}: algorithm: 'nope' is not an algorithm"),
        (lambda: store.read_slice("nope", "ndcg", 5), f"{root}: algorithm: 'nope' is not an algorithm"),
    ]
    for call, start in cases:
        with pytest.raises(DptuneError) as err:
            call()
        assert str(err.value).startswith(start) and "\n" not in str(err.value), str(err.value)
    # what the store has still reads as before
    assert store.configs("a")["k"].tolist() == [10, 20, 30]
    assert store.folds("a") == ["0"]
    assert store.read_matrix("a", "ndcg", 5, "0", [0, 1])[1].shape == (2, 3)


def test_read_matrix_and_read_fold_take_any_list_of_ids_and_name_a_bad_argument(store):
    """``read_matrix`` of an id given twice answered no user at all (every user seemed to lack
    a value for the second copy) and of no id raised numpy's ``need at least one array to
    concatenate``; ``read_fold`` named a metric@N the store lacks by its part file (``... .parquet:
    NDCG@5: not stored in this part``) and let a single ``(metric, cutoff)`` pair or text ids
    raise a bare ``ValueError``. Now: the row twice, nothing, or one line naming the argument."""
    store.write_unit(_unit("a", "0", "u00000", [0, 1], [3, 5, 9]))
    root = store.root
    users, mat = store.read_matrix("a", "ndcg", 5, "0", [1, 0, 1])
    one, ref = store.read_matrix("a", "ndcg", 5, "0", [1, 0])
    assert users.tolist() == one.tolist() == [3, 5, 9]
    np.testing.assert_array_equal(mat, ref[[0, 1, 0]])
    np.testing.assert_array_equal(
        mat, store.read_fold("a", "0", [0, 1], [("ndcg", 5)]).matrix("ndcg", 5, [1, 0, 1])[1])
    users, mat = store.read_matrix("a", "ndcg", 5, "0", [])
    assert users.shape == (0,) and mat.shape == (0, 0)
    cases = [
        (lambda: store.read_fold("a", "0", [0, 1], [("NDCG", 5)]),
         f"{root}: metric: 'NDCG' is not stored (the store has ndcg, precision)"),
        (lambda: store.read_fold("a", "0", [0, 1], [("ndcg", 10)]),
         f"{root}: cutoff: 10 is not stored (the store has 1, 5)"),
        (lambda: store.read_fold("a", "0", [0, 1], ("ndcg", 5)),
         f"{root}: metric_cutoffs: must be a list of (metric, cutoff) pairs, got ('ndcg', 5)"),
        (lambda: store.read_fold("a", "0", ["x"], [("ndcg", 5)]),
         f"{root}: config_ids: must be a list of integer configuration ids"),
    ]
    for call, start in cases:
        with pytest.raises(DptuneError) as err:
            call()
        assert str(err.value).startswith(start) and "\n" not in str(err.value), str(err.value)


def test_a_configuration_measured_on_some_folds_only_is_never_the_best():
    """On a sweep still running (or stopped), a configuration with results in one of the
    algorithm's validation folds was ranked by that fold's mean alone: here configuration 1,
    measured on fold 0 only with the highest mean, was the best, the one the noise floor and
    the test split then trained. The configurations measured on every fold the store has take
    part, and only they; the test split's rows are never a fold."""
    from dptune.store._index import best_configs_frame, validation_means

    rows = [("a", 0, "0", 0.30), ("a", 0, "1", 0.20), ("a", 2, "0", 0.25), ("a", 2, "1", 0.24),
            ("a", 1, "0", 0.90), ("a", 1, "test", 0.99),
            ("b", 0, "0", 0.10), ("b", 1, "0", 0.40)]  # b: one fold so far, both on it
    summary = pd.DataFrame([(a, c, f, "ndcg", 10, m) for a, c, f, m in rows],
                           columns=["algorithm", "config_id", "fold", "metric", "cutoff", "mean"])
    vm = validation_means(summary)
    assert vm[vm["algorithm"] == "a"]["config_id"].tolist() == [0, 2]  # means 0.25, 0.245
    assert vm[vm["algorithm"] == "a"]["n_folds"].tolist() == [2, 2]
    best = best_configs_frame(summary).set_index("algorithm")["config_id"]
    assert best.to_dict() == {"a": 0, "b": 1}
