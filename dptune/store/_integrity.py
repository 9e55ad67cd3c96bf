"""Integrity of the result store: every part is checked against the size and checksum recorded
when it was written, before any of its bytes is trusted.

Each part (a unit's ``per_user.parquet/*.parquet``, a noise-floor ``noise_floor.parquet/*``)
gets an *index entry* when it is published: ``<results>/index/<part directory>/<part
name>.json`` holding ``{"file", "size", "crc32", "fingerprint"}`` (CRC-32 of the whole file,
the experiment set-up it belongs to). A part is *verified* when its entry is readable and its
size and CRC-32 equal the entry's; verification reads the file once per process (cached by
size and modification time), at about the speed the disk or page cache delivers the bytes
(the standard CRC-32 of the memory-mapped file, computed by ISA-L's carry-less-multiply
implementation through ``isal``; many parts on a few threads, :func:`verify`).

A part that fails (truncated, garbled, emptied, its entry missing or damaged) is *damaged*:
readers refuse it with one line naming the file (:func:`damaged_error`), the sweep counts its
unit as not done and :func:`heal` removes it (with its entry) so that ``dptune run`` computes
exactly that unit again. A store written before entries existed (no ``index`` directory) is
checked structurally instead (the part's footer decodes, its columns are a part's, each page
matches the CRC-32 in its header, every column decodes, row counts agree with its metadata)
and ``dptune run`` records the entries (:func:`heal`); so is a part of a store whose whole
``index`` folder is gone.

Verified bytes are not enough: the part must also be *from this experiment*. Its name, its
entry and its footer metadata each say which experiment set-up, algorithm, fold, unit and
configurations it holds, and :mod:`dptune.store._identity` checks them against the manifest.
A part that disagrees (copied from a run with another seed, renamed, named outside the grid)
is :class:`~dptune.store._identity.Foreign`: readers refuse it with one line, and
:func:`heal` sets it aside in ``<results>/quarantine/`` (moved with its entry, never deleted)
so that the sweep computes this experiment's unit in its place.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from isal.isal_zlib import crc32

from dptune._atomic import write_text
from dptune.errors import DptuneError, input_error
from dptune.store._identity import (
    QUARANTINE,
    Foreign,
    Stamp,
    entry_problem,
    expected,
    identity,
    meta_problem,
    name_problem,
    per_manifest,
)
from dptune.store._schema import NOISE_DIR, PARTS, noise_part_name, part_name, schema_of

__all__ = ["INDEX_DIR", "META_CRC", "footer_text", "entry_path", "checksum", "verify", "record",
           "problem", "verified", "damaged_error", "heal", "lost_parts", "lost_problem", "lost_error", "check_lost",
           "quarantine_dir", "set_aside",
           "set_aside_if_foreign", "footer_meta", "entry_fingerprints", "store_fingerprint",
           "PUBLISH_LOCK", "publishing"]

#: Directory of the index entries inside a results directory.
INDEX_DIR = "index"
#: ``(path, size, mtime_ns, entry mtime_ns, manifest stamp) -> problem or None`` of this process.
_CACHE: dict[tuple[Any, ...], str | None] = {}
#: ``(path, size, mtime_ns) -> the part's footer metadata`` read while verifying it.
_META: dict[tuple[str, int, int], dict[str, Any]] = {}


def entry_path(part: Path) -> Path:
    """Index entry of ``part`` (``<results>/index/<part directory>/<name>.json``)."""
    part = Path(part)
    return part.parent.parent / INDEX_DIR / part.parent.name / f"{part.name}.json"


def checksum(path: Path) -> tuple[int, str]:
    """Size and CRC-32 (8 hex digits) of a file's bytes.

    The CRC is the standard one (``zlib.crc32``'s polynomial and value, so entries written by
    any version agree), computed by ISA-L (``isal.isal_zlib.crc32``) with carry-less
    multiplication: about 10 GB/s per core here against 1.4-1.8 GB/s for ``zlib.crc32``, which
    made verification the largest fixed cost of an analysis (5.4 s -> 1.8 s for the 16 GB
    full-size store on two threads; ``docs/performance.md``). The file is memory-mapped and
    handed over whole: no copy into Python buffers."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:  # an empty file cannot be mapped
            return 0, f"{crc32(b''):08x}"
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            crc = crc32(view)
    return size, f"{crc & 0xFFFFFFFF:08x}"


def verify(parts: Iterable[Path], threads: int | None = None) -> None:
    """Verify many parts at once (:func:`problem` of each, cached for this process), on a few
    threads: the CRC releases the interpreter lock, so the checksums of a large store
    run in parallel. The answers are those of :func:`problem` part by part."""
    parts = list(parts)
    n = max(1, min(threads or min(os.cpu_count() or 1, 4), len(parts)))
    if n == 1:
        for p in parts:
            problem(p)
        return
    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(problem, parts))


#: Key of the footer metadata's own CRC-32 (:func:`footer_text`).
META_CRC = "meta_crc32"


def footer_text(meta: dict[str, Any]) -> str:
    """The ``dptune`` footer metadata of a part as written: ``meta`` as JSON (sorted keys) with
    :data:`META_CRC`, the CRC-32 of the same JSON without it. The index entry's checksum covers
    the whole file; this one is what vouches for the metadata when the entry is gone (the
    metadata says which row group holds which metric and cutoff, which configurations and
    seeds the part holds)."""
    body = {k: v for k, v in meta.items() if k != META_CRC}
    return json.dumps({**body, META_CRC: f"{crc32(_canonical(body)):08x}"}, sort_keys=True)


def _canonical(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, sort_keys=True).encode()


def _footer_problem(meta: dict[str, Any], table: Any, directory: str,
                    group_rows: list[int]) -> str | None:
    """Why a part's decoded ``table`` and its footer metadata ``meta`` disagree, or ``None``:
    the metadata's own CRC-32 (parts written before it carry none), then what the metadata
    says against the data: one algorithm and fold, the configurations (and seeds), users,
    and one (metric, cutoff) per row group in the metadata's order, each of the same rows
    (``group_rows``: the file's rows per row group), since the readers find a metric@N's
    values by the position of its row group."""
    if META_CRC in meta:
        body = {k: v for k, v in meta.items() if k != META_CRC}
        if meta[META_CRC] != f"{crc32(_canonical(body)):08x}":
            return "its metadata differs from the checksum written with it"
    n_cfg = len(meta.get("config_ids", [0]))
    seeds = meta.get("seed_indices", [0])
    n_users = int(meta["n_users"])
    per = n_cfg * len(seeds) * n_users
    groups = [(m, int(c)) for m in meta["metrics"] for c in meta["cutoffs"]]
    if table.num_rows != per * len(groups):
        return f"holds {table.num_rows} rows, its metadata says {per * len(groups)}"
    if per and group_rows != [per] * len(groups):
        return (f"holds {len(group_rows)} row groups, its metadata says {len(groups)} of "
                f"{per} rows")
    if _distinct(table, "algorithm") not in ([], [meta.get("algorithm")]) \
            or _distinct(table, "fold") not in ([], [str(meta.get("fold"))]):
        return "its algorithm or fold differs from its metadata's"
    ids = meta.get("config_ids", [meta.get("config_id")])
    if table.num_rows and _distinct(table, "config_id") != sorted(ids):
        return "its configurations differ from its metadata's"
    if directory == NOISE_DIR and table.num_rows and _distinct(table, "seed_index") != sorted(seeds):
        return "its seeds differ from its metadata's"
    if table.num_rows and len(_distinct(table, "user")) != n_users:
        return "its users differ from its metadata's"
    for k, (metric, cutoff) in enumerate(groups):
        rows = table.slice(k * per, per)
        if per and (_distinct(rows, "metric") != [metric] or _distinct(rows, "cutoff") != [cutoff]):
            return f"its row group {k} is not {metric}@{cutoff}, as its metadata says"
    return None


def _distinct(table: Any, column: str) -> list[Any]:
    """The distinct values of ``table``'s ``column``, sorted."""
    import pyarrow.compute as pc

    return sorted(pc.unique(table.column(column)).to_pylist())


def record(part: Path, fingerprint: str | None = None, source: Path | None = None,
           meta: dict[str, Any] | None = None) -> Path:
    """Write ``part``'s index entry atomically from the bytes of ``source`` (default the part
    itself: pass the temporary file a part is published from to checksum what was written).

    The entry holds the file's name, size and CRC-32, the experiment ``fingerprint`` and the
    identity of what the part holds (algorithm, fold, unit or configuration, configuration
    ids: :func:`dptune.store._identity.identity` of its footer metadata ``meta``, read from
    the file when not given)."""
    size, crc = checksum(source or part)
    if meta is None:
        try:
            meta = _read_meta(source or part)
        except Exception:  # noqa: BLE001 - an unreadable footer: the entry says less
            meta = {}
    entry = {**identity(meta), "file": f"{Path(part).parent.name}/{Path(part).name}",
             "size": size, "crc32": crc, "fingerprint": fingerprint}
    path = entry_path(part)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(entry, sort_keys=True) + "\n")
    return path


def _read_entry(path: Path) -> dict[str, Any] | str:
    """The parsed entry, or the problem with it."""
    try:
        entry = json.loads(path.read_text())
    except FileNotFoundError:
        return "its index entry is missing"
    except (OSError, ValueError):
        return f"its index entry {path} is damaged"
    if not isinstance(entry, dict) or not isinstance(entry.get("size"), int) \
            or not isinstance(entry.get("crc32"), str):
        return f"its index entry {path} is damaged"
    return entry


def _read_meta(part: Path) -> dict[str, Any]:
    """The ``dptune`` footer metadata of a part file."""
    import pyarrow.parquet as pq

    return json.loads((pq.read_schema(part).metadata or {})[b"dptune"])


def footer_meta(part: Path) -> dict[str, Any]:
    """The ``dptune`` footer metadata of ``part``: the copy read while it was verified
    (:func:`problem`) when the file has not changed since, else read now."""
    part = Path(part)
    st = part.stat()
    meta = _META.get((str(part), st.st_size, st.st_mtime_ns))
    return meta if meta is not None else _read_meta(part)


def _structural(part: Path) -> tuple[str | None, dict[str, Any] | None]:
    """Checks of a part without an entry (a store written before entries existed, or whose
    ``index`` folder is gone): the footer, the columns' names and types, every page's own
    CRC-32 (:data:`~dptune.store._schema.PAGE_CHECKSUM`; parts written before page checksums
    carry none), every column decodes, and the ``dptune`` metadata is sound and says what the
    data holds (:func:`_footer_problem`). Returns the problem and the metadata."""
    import pyarrow.parquet as pq

    try:
        footer = pq.ParquetFile(part).metadata
        meta = json.loads((footer.schema.to_arrow_schema().metadata or {})[b"dptune"])
        group_rows = [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
        # the dataset reader: it also checks each column chunk's recorded type
        table = pq.read_table(part, page_checksum_verification=True, use_threads=False)
    except Exception as err:  # noqa: BLE001 - any decoding failure means a damaged part
        return f"unreadable ({type(err).__name__})", None
    want = schema_of(part.parent.name)
    # names and types; nullability aside (parts written before every column was required)
    if [(f.name, f.type) for f in table.schema] != [(f.name, f.type) for f in want]:
        return f"columns {table.schema.names}, a part has {want.names}", None
    try:
        found = _footer_problem(meta, table, part.parent.name, group_rows)
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # metadata of another shape
        return f"unreadable metadata ({type(err).__name__})", None
    return (found, None) if found else (None, meta)


def problem(part: Path) -> str | None:
    """Why ``part`` cannot be trusted (``None``: verified). Missing files are a problem too.

    In order: its name must name a unit of the grid (:func:`~dptune.store._identity.
    name_problem`); its index entry must be readable, written for this file and this
    experiment; its size and CRC-32 must be the entry's; its footer metadata must say what
    its name says. The first three read no byte of the part beyond the checksum; the answer
    is cached for this process until the part, its entry or the manifest changes. A reason
    of identity is a :class:`~dptune.store._identity.Foreign` (set aside, not removed)."""
    part = Path(part)
    entry_file = entry_path(part)
    try:
        st = part.stat()
    except (FileNotFoundError, NotADirectoryError):  # the part folder gone, or a file now
        return "missing"
    if not stat.S_ISREG(st.st_mode):  # a folder (or a device) where a part goes
        # ... or under a name no part has (a Parquet data set written there by hand is a
        # folder ``mine.parquet/``): foreign, set aside with what it holds, never deleted
        exp = expected(part.parent.parent)
        foreign = name_problem(part, exp) if exp is not None else None
        return foreign if foreign is not None else "not a file"
    if not os.access(part, os.R_OK):  # chmod 000: named, not a PermissionError deep inside
        return "unreadable (permission denied)"
    try:
        est = entry_file.stat().st_mtime_ns
    except FileNotFoundError:
        est = -1
    exp = expected(part.parent.parent)
    key = (str(part), st.st_size, st.st_mtime_ns, est, exp.stamp if exp is not None else None)
    if key in _CACHE:
        return _CACHE[key]
    meta = None
    found: str | None = name_problem(part, exp) if exp is not None else None
    if found is not None:
        pass
    elif est < 0 and not (part.parent.parent / INDEX_DIR).is_dir():
        found, meta = _structural(part)  # a store from before index entries
    else:
        entry = _read_entry(entry_file)
        if isinstance(entry, str):
            found = entry
        elif exp is not None and (why := entry_problem(part, entry, exp)) is not None:
            found = why
        elif entry["size"] != st.st_size:
            found = f"{st.st_size} bytes, {entry['size']} were written"
        elif checksum(part)[1] != entry["crc32"]:
            found = "its checksum differs from the one recorded when it was written"
        elif exp is not None:  # the footer says what the part holds: checked against the manifest
            try:
                meta = _read_meta(part)
            except Exception as err:  # noqa: BLE001 - a verified part written damaged
                found = f"unreadable metadata ({type(err).__name__})"
    if found is None and meta is not None:
        if exp is not None:
            found = meta_problem(part, meta, exp)
        if found is None:
            _META[(str(part), st.st_size, st.st_mtime_ns)] = meta
    _CACHE[key] = found
    return found


def verified(part: Path) -> bool:
    """Whether ``part`` exists and is verified (:func:`problem`)."""
    return problem(part) is None


def quarantine_dir(part: Path) -> Path:
    """The folder ``dptune run`` sets ``part`` (or an index entry) aside in:
    ``<results>/quarantine/<part directory>/`` (entries under ``quarantine/index/...``)."""
    part = Path(part)
    if part.parent.parent.name == INDEX_DIR:  # an entry: <results>/index/<dir>/<name>.json
        return part.parents[2] / QUARANTINE / INDEX_DIR / part.parent.name
    return part.parent.parent / QUARANTINE / part.parent.name


def damaged_error(part: Path, why: str) -> DptuneError:
    """The one-line error of a damaged part, or of a part not from this experiment
    (:class:`~dptune.store._identity.Foreign`) with where ``dptune run`` sets it aside."""
    if isinstance(why, Foreign):
        return input_error(part, None, f"not from this experiment ({why}); `dptune run` sets "
                           f"it aside in {quarantine_dir(part)}/ and computes what is missing")
    return input_error(part, None, f"damaged ({why}); `dptune run` will recompute it")


#: ``root -> (manifest stamp, fingerprint)`` of this process.
_FINGERPRINTS: dict[str, tuple[Stamp, str | None]] = {}


def store_fingerprint(root: Path) -> str | None:
    """The experiment fingerprint of the manifest in ``root`` (``None`` when unreadable).

    Every part written asks for it (:meth:`dptune.store.ResultStore.write_unit`), and the
    manifest grows with the grid (it lists every unit): parsed each time, a sweep of ``n``
    units spent time in ``n`` parses of a manifest of size ``n``. The answer is therefore
    kept for this process until the manifest file changes
    (:func:`dptune.store._identity.per_manifest`)."""
    def read(stamp: Stamp) -> str | None:
        try:
            fp = json.loads((Path(root) / "manifest.json").read_text()).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            return None
        return str(fp) if fp else None

    return per_manifest(_FINGERPRINTS, root, read)


def entry_fingerprints(root: Path) -> set[str]:
    """Experiment fingerprints recorded by the index entries of ``root`` (readable ones)."""
    out: set[str] = set()
    index = Path(root) / INDEX_DIR
    if not index.is_dir():
        return out
    for p in index.glob("*/*.json"):
        try:
            fp = json.loads(p.read_text()).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            continue
        if fp:
            out.add(str(fp))
    return out


def lost_parts(root: Path, directory: str) -> list[Path]:
    """Parts of ``root/directory`` that were written but are gone: they have an index entry,
    or the list of runs that the last finished run wrote from the parts there were names them
    (``trials.csv`` for the sweep's parts, ``noise_trials.csv`` for the noise floor's). The
    second catches a part lost with its entry, or with the whole index folder, which otherwise
    read as a unit never computed: the analysis went on with fewer folds, or without the
    noise floor, without a word."""
    index = Path(root) / INDEX_DIR / directory
    names = {e.name[: -len(".json")] for e in index.glob("*.json")} if index.is_dir() else set()
    names |= _trial_parts(Path(root), directory)
    return [Path(root) / directory / n for n in sorted(names)
            if not (Path(root) / directory / n).exists()]


#: The list of runs each part folder's last finished run wrote: its file, the columns that name
#: a part and the part's name from them (``part_name``, ``noise_part_name`` of
#: :mod:`dptune.store._schema`).
_TRIALS = {PARTS: ("trials.csv", ("algorithm", "fold", "unit"), part_name),
           NOISE_DIR: ("noise_trials.csv", ("algorithm", "fold", "config_id"),
                       lambda a, f, c: noise_part_name(a, c, f))}


def _trial_parts(root: Path, directory: str) -> set[str]:
    """The part names of ``directory`` that its list of runs (:data:`_TRIALS`) holds (none when
    it is missing or unreadable: it is derived, and a damaged one is rewritten by the run).

    A name that no part of this experiment can have (a row cut short, a digit changed: fold
    ``9`` of 2 folds) is left out: it says that the list is damaged, not that a part was
    lost, and it was named as "an index entry without its part" that is not from this
    experiment, a file that does not exist, which ``dptune run`` claimed to set aside."""
    import pandas as pd

    if directory not in _TRIALS:
        return set()
    file, columns, name = _TRIALS[directory]
    try:
        t = pd.read_csv(root / file, usecols=list(columns), dtype=str)[list(columns)]
    except (OSError, ValueError):
        return set()
    names = set()
    for row in t.itertuples(index=False):
        try:
            names.add(name(*row))
        except (TypeError, ValueError):  # a configuration id that is no number: damaged
            continue
    exp = expected(root)
    if exp is None:
        return names
    return {n for n in names if name_problem(root / directory / n, exp) is None}


def lost_problem(part: Path) -> str:
    """Why the index entry of a lost part is there: ``"missing"`` (a part of this experiment
    is gone), or a :class:`~dptune.store._identity.Foreign` reason when the entry names a
    unit outside the grid or was written for another experiment set-up."""
    exp = expected(Path(part).parent.parent)
    if exp is None:
        return "missing"
    why = name_problem(part, exp)
    if why is None:
        entry = _read_entry(entry_path(part))
        why = entry_problem(part, entry, exp) if isinstance(entry, dict) else None
    return why if why is not None else "missing"


def lost_error(part: Path, why: str) -> DptuneError:
    """The one-line error of a lost part (:func:`lost_problem`); a foreign entry is named."""
    if isinstance(why, Foreign):
        return damaged_error(entry_path(part), Foreign(f"an index entry without its part: {why}"))
    return damaged_error(part, why)


def check_lost(root: Path, directory: str) -> None:
    """A written part that is gone is a one-line error (readers would otherwise compute on
    fewer folds or configurations without saying so); so is an entry not from this
    experiment."""
    lost = lost_parts(root, directory)
    if lost:
        raise lost_error(lost[0], lost_problem(lost[0]))


def _young(path: Path, seconds: float = 60.0) -> bool:
    """Whether ``path`` was modified in the last ``seconds`` (a writer may still be at work)."""
    try:
        return time.time() - path.stat().st_mtime < seconds
    except FileNotFoundError:
        return False


def _free_name(path: Path) -> Path:
    """``path``, or ``<stem>~N<suffix>`` with the smallest N not taken (set-aside files are
    never overwritten)."""
    if not path.exists():
        return path
    name, n = path.name, 1
    stem, dot, ext = name.partition(".")
    while True:
        candidate = path.with_name(f"{stem}~{n}{dot}{ext}")
        if not candidate.exists():
            return candidate
        n += 1


def set_aside(part: Path) -> Path | None:
    """Move ``part`` and its index entry (or an entry alone) into the quarantine folder of its
    results directory (:func:`quarantine_dir`); return where the file went (``None``: it was
    gone already, set aside by another process)."""
    part = Path(part)
    moved = None
    entry = entry_path(part)
    target = _free_name(quarantine_dir(part) / part.name)
    if part.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(part, target)
            moved = target
        except FileNotFoundError:
            pass
    if entry.exists():
        entry_target = quarantine_dir(entry) / f"{target.name}.json"
        entry_target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(entry, _free_name(entry_target))
            moved = moved or entry_target
        except FileNotFoundError:
            pass
    return moved


#: Lock file of a results directory, held while a part and its index entry are put in place.
PUBLISH_LOCK = ".publish.lock"


@contextmanager
def publishing(root: Path) -> Iterator[None]:
    """Hold ``root``'s publishing lock (``flock`` of :data:`PUBLISH_LOCK`, a hidden file every
    reader ignores) while a writer puts a part and its index entry in place.

    A part and its entry are two files: two writers of the same part (two ``dptune run`` on one
    results directory both train the noise floor, both compute a test-split unit) could
    otherwise interleave, one writer's entry landing beside the other's part (same values,
    other timings, so other bytes), a part read as damaged as soon as the run finished. Where
    no lock can be taken (no ``fcntl``, a file system without locks) the writers go on
    without it, as before."""
    try:
        import fcntl

        fh = open(Path(root) / PUBLISH_LOCK, "a")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        fh.close()  # releases the lock


def set_aside_if_foreign(part: Path) -> None:
    """Before a writer publishes ``part`` over an existing file: set that file aside when it is
    not from this experiment (a finished part of this experiment is never replaced, and a
    foreign one is never overwritten)."""
    if Path(part).exists() and isinstance(problem(part), Foreign):
        set_aside(part)


def heal(root: Path, parts: list[Path], fingerprint: str | None) -> list[tuple[Path, str]]:
    """Before a sweep writes: remove every damaged part of ``parts`` (and its entry) so that its
    unit is computed again, set aside every part (and entry without a part) not from this
    experiment (:func:`set_aside`), and record the entries of verified parts of a store that
    predates them. Returns the parts removed or set aside with the reason (a set-aside one's
    reason is a :class:`~dptune.store._identity.Foreign`)."""
    removed: list[tuple[Path, str]] = []
    legacy = [p for p in parts if not entry_path(p).exists()
              and not (Path(root) / INDEX_DIR).is_dir()]
    for part in parts:
        why = problem(part)
        if why is None or (why == "its index entry is missing" and _young(part)):
            continue  # a writer on another machine publishes a part, then records its entry
        removed.append((part, why))
        if isinstance(why, Foreign):
            set_aside(part)
            continue
        try:
            if part.is_dir() and not part.is_symlink():
                shutil.rmtree(part)  # a folder in a part's place: its unit is computed again
            else:
                os.unlink(part)
        except FileNotFoundError:
            pass
        entry_path(part).unlink(missing_ok=True)
    for part in legacy:
        if part.exists():
            record(part, fingerprint)
    for directory in {p.parent.name for p in parts} | {"per_user.parquet", "noise_floor.parquet"}:
        for part in lost_parts(root, directory):  # its unit is computed again: entry rewritten
            why = lost_problem(part)
            if isinstance(why, Foreign):
                removed.append((entry_path(part), why))
                set_aside(part)
            elif not _young(entry_path(part)):  # (a noise part's entry precedes its part)
                entry_path(part).unlink(missing_ok=True)
    return removed
