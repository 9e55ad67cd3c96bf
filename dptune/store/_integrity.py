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
checked structurally instead (the part's footer and every column decode, row counts agree with
its metadata) and ``dptune run`` records the entries (:func:`heal`).
"""

from __future__ import annotations

import json
import mmap
import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from isal.isal_zlib import crc32

from dptune._atomic import write_text
from dptune.errors import DptuneError, input_error

__all__ = ["INDEX_DIR", "entry_path", "checksum", "verify", "record", "problem", "verified",
           "damaged_error", "heal", "lost_parts", "check_lost", "entry_fingerprints", "store_fingerprint"]

#: Directory of the index entries inside a results directory.
INDEX_DIR = "index"
#: ``(path, size, mtime_ns, entry mtime_ns) -> problem or None`` of this process.
_CACHE: dict[tuple[str, int, int, int], str | None] = {}


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


def record(part: Path, fingerprint: str | None = None, source: Path | None = None) -> Path:
    """Write ``part``'s index entry atomically from the bytes of ``source`` (default the part
    itself: pass the temporary file a part is published from to checksum what was written)."""
    size, crc = checksum(source or part)
    entry = {"file": f"{Path(part).parent.name}/{Path(part).name}", "size": size, "crc32": crc,
             "fingerprint": fingerprint}
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


def _structural(part: Path) -> str | None:
    """Checks of a part without an entry (a store written before entries existed): the footer,
    every column decodes, and the row count agrees with the ``dptune`` metadata."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(part)
        meta = json.loads((pf.schema_arrow.metadata or {})[b"dptune"])
        table = pf.read(use_threads=False)
    except Exception as err:  # noqa: BLE001 - any decoding failure means a damaged part
        return f"unreadable ({type(err).__name__})"
    n_cfg = len(meta.get("config_ids", [0]))
    n_seed = len(meta.get("seed_indices", [0]))
    expected = n_cfg * n_seed * int(meta["n_users"]) * len(meta["metrics"]) * len(meta["cutoffs"])
    if table.num_rows != expected:
        return f"holds {table.num_rows} rows, its metadata says {expected}"
    return None


def problem(part: Path) -> str | None:
    """Why ``part`` cannot be trusted (``None``: verified). Missing files are a problem too."""
    part = Path(part)
    entry_file = entry_path(part)
    try:
        st = part.stat()
    except FileNotFoundError:
        return "missing"
    try:
        est = entry_file.stat().st_mtime_ns
    except FileNotFoundError:
        est = -1
    key = (str(part), st.st_size, st.st_mtime_ns, est)
    if key in _CACHE:
        return _CACHE[key]
    if est < 0 and not (part.parent.parent / INDEX_DIR).is_dir():
        found = _structural(part)  # a store from before index entries
    else:
        entry = _read_entry(entry_file)
        if isinstance(entry, str):
            found = entry
        elif entry["size"] != st.st_size:
            found = f"{st.st_size} bytes, {entry['size']} were written"
        elif checksum(part)[1] != entry["crc32"]:
            found = "its checksum differs from the one recorded when it was written"
        else:
            found = None
    _CACHE[key] = found
    return found


def verified(part: Path) -> bool:
    """Whether ``part`` exists and is verified (:func:`problem`)."""
    return problem(part) is None


def damaged_error(part: Path, why: str) -> DptuneError:
    """The one-line error of a damaged part."""
    return input_error(part, None, f"damaged ({why}); `dptune run` will recompute it")


def store_fingerprint(root: Path) -> str | None:
    """The experiment fingerprint of the manifest in ``root`` (``None`` when unreadable)."""
    try:
        fp = json.loads((Path(root) / "manifest.json").read_text()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None
    return str(fp) if fp else None


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
    """Parts of ``root/directory`` that were written (they have an index entry) but are gone."""
    index = Path(root) / INDEX_DIR / directory
    if not index.is_dir():
        return []
    return [Path(root) / directory / e.name[: -len(".json")] for e in sorted(index.glob("*.json"))
            if not (Path(root) / directory / e.name[: -len(".json")]).exists()]


def check_lost(root: Path, directory: str) -> None:
    """A written part that is gone is a one-line error (readers would otherwise compute on
    fewer folds or configurations without saying so)."""
    lost = lost_parts(root, directory)
    if lost:
        raise damaged_error(lost[0], "missing")


def _young(path: Path, seconds: float = 60.0) -> bool:
    """Whether ``path`` was modified in the last ``seconds`` (a writer may still be at work)."""
    try:
        return time.time() - path.stat().st_mtime < seconds
    except FileNotFoundError:
        return False


def heal(root: Path, parts: list[Path], fingerprint: str | None) -> list[tuple[Path, str]]:
    """Before a sweep writes: remove every damaged part of ``parts`` (and its entry) so that its
    unit is computed again, and record the entries of verified parts of a store that predates
    them. Returns the removed parts with the reason."""
    removed = []
    legacy = [p for p in parts if not entry_path(p).exists()
              and not (Path(root) / INDEX_DIR).is_dir()]
    for part in parts:
        why = problem(part)
        if why is None or (why == "its index entry is missing" and _young(part)):
            continue  # a writer on another machine publishes a part, then records its entry
        removed.append((part, why))
        try:
            os.unlink(part)
        except FileNotFoundError:
            pass
        entry_path(part).unlink(missing_ok=True)
    for part in legacy:
        if part.exists():
            record(part, fingerprint)
    for directory in {p.parent.name for p in parts} | {"per_user.parquet", "noise_floor.parquet"}:
        for part in lost_parts(root, directory):  # its unit is computed again: entry rewritten
            if not _young(entry_path(part)):  # (a noise part's entry precedes its part)
                entry_path(part).unlink(missing_ok=True)
    return removed
