"""Synthetic rating data with a chosen shape: a seeded, offline stand-in for a real catalogue.

:func:`synthesize` builds a rating table with exactly ``users`` users, ``items`` items and
``ratings`` distinct (user, item) pairs, so that the sizes survive the de-duplication of
:func:`dptune.data.load_dataset` unchanged. What is modelled is the *shape* of a data set, not
real preferences:

- **Per-user activity and item popularity** follow Zipf laws over a random ranking of the ids:
  the ``r``-th most active user has weight ``r ** -activity_exponent`` and the ``r``-th most
  popular item ``r ** -popularity_exponent``. Degrees are ``minimum + `` the rest of the
  ratings shared in proportion to the weights (largest remainders, so they sum exactly; a user
  rates at most every item, an item is rated at most by every user). Every user has at least
  ``min_user_ratings`` ratings and every item at least one, so no id is missing.
- **Who rates what** is the bipartite configuration model: one slot per rating on each side,
  the item slots shuffled and paired with the user slots. Repeated (user, item) pairs are
  removed by degree-preserving swaps (the item ends of a repeated pair and of a random other
  pair are exchanged) until none is left, so both degree sequences hold exactly.
- **Ratings** are drawn independently of everything else from ``rating_probs`` (the
  probabilities of 1 .. 5 stars).
- **Timestamps**: each user is active in a window that starts uniformly in ``[start, end]``
  and lasts an exponential time (mean ``mean_span_days``, cut at ``end``); the user's ratings
  fall uniformly in it (integer seconds).

Nothing is downloaded and the same arguments give the same table, byte for byte. The preset
``amazon-movies`` has the size of the Amazon Movies data set of the discriminative-power study
(16,141 users, 111,537 items, 858,314 ratings); its rating distribution and exponents are
plausible choices (ratings skewed to 5 stars, a long popularity tail), not fitted values.
:func:`write_synthetic` writes the MovieLens ``ratings.csv`` layout (header
``userId,movieId,rating,timestamp``, optionally gzipped), which ``dptune data info`` and an
experiment's ``[data] source`` read as is.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from dptune._resources import check_fits
from dptune.errors import check_writable_dir, input_error, plain

__all__ = ["PRESETS", "SynthShape", "synthesize", "write_synthetic"]

_DAY = 86_400


@dataclass(frozen=True)
class SynthShape:
    """The shape of a synthetic data set (see the module docstring for each field's role)."""

    users: int = 1000
    items: int = 2000
    ratings: int = 20_000
    min_user_ratings: int = 5
    popularity_exponent: float = 0.65
    activity_exponent: float = 0.5
    rating_probs: tuple[float, ...] = (0.07, 0.06, 0.11, 0.21, 0.55)
    start: int = 870_393_600  # 1997-08-01 UTC
    end: int = 1_406_073_600  # 2014-07-23 UTC
    mean_span_days: float = 730.0


#: Named shapes: ``amazon-movies`` has the sizes of Amazon Movies in the study's Table 1.
PRESETS: dict[str, SynthShape] = {
    "amazon-movies": SynthShape(users=16_141, items=111_537, ratings=858_314),
}


#: What errors name the fields by when the command line asked (its flags).
CLI_SOURCE = "data synth"
#: Peak memory of :func:`write_synthetic` per rating and per user or item id (measured: about
#: 95-105 bytes per rating for the pairs, their de-duplication, the table and its CSV text,
#: plus the degree arrays per id), used to refuse a shape that cannot fit before any work.
BYTES_PER_RATING, BYTES_PER_ID = 120, 80


def _err(source: str, field: str, problem: str) -> Exception:
    """One-line error naming ``field`` (as its ``--flag`` for :data:`CLI_SOURCE`)."""
    if source == CLI_SOURCE:
        field = "/".join("--" + f.replace("_", "-") for f in field.split("/"))
    return input_error(source, field, problem)


#: The largest Zipf exponent of a synthetic data set: ``r ** -20`` stays a positive float for
#: every rank below 10^15, while at 400 every rank past the first few weighs 0.
MAX_EXPONENT = 20.0


def _check(shape: SynthShape, source: str) -> SynthShape:
    """Every field of ``shape`` and their combination, as one-line errors naming the field."""
    for field, lo in (("users", 1), ("items", 1), ("ratings", 1), ("min_user_ratings", 1)):
        v = getattr(shape, field)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise _err(source, field, f"must be an integer >= {lo}, got {plain(v)}")
    for field in ("popularity_exponent", "activity_exponent", "mean_span_days"):
        v = getattr(shape, field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise _err(source, field, f"must be a finite number >= 0, got {plain(v)}")
    for field in ("popularity_exponent", "activity_exponent"):
        v = getattr(shape, field)
        if v > MAX_EXPONENT:  # r ** -v underflows to 0 for the later ranks: no weights left
            raise _err(source, field, f"must be at most {MAX_EXPONENT:g} (real data's Zipf "
                       f"exponents are below 3), got {plain(v)}")
    if shape.mean_span_days <= 0:
        raise _err(source, "mean_span_days", "must be > 0")
    p = np.asarray(shape.rating_probs, dtype=np.float64)
    if p.shape != (5,) or not np.all(np.isfinite(p)) or (p < 0).any() or abs(p.sum() - 1) > 1e-6:
        raise _err(source, "rating_probs", "must be 5 probabilities (1 .. 5 stars), each "
                          f">= 0, summing to 1, got {plain(shape.rating_probs)}")
    if not (isinstance(shape.start, (int, np.integer)) and isinstance(shape.end, (int, np.integer))
            and 0 <= shape.start < shape.end):
        raise _err(source, "start/end", "must be integer Unix times with 0 <= start < end, "
                          f"got {plain(shape.start)}..{plain(shape.end)}")
    u, i, r, m = shape.users, shape.items, shape.ratings, shape.min_user_ratings
    if m > i:
        raise _err(source, "min_user_ratings", f"{m} exceeds the {i} items")
    if r < max(u * m, i):
        raise _err(source, "ratings", f"{r:,} is too few: every user needs "
                          f"{m} (min_user_ratings) and every item 1, at least {max(u * m, i):,}")
    if r > u * i:
        raise _err(source, "ratings", f"{r:,} exceeds users x items = {u * i:,} "
                          "(each pair is rated at most once)")
    check_fits(BYTES_PER_RATING * r + BYTES_PER_ID * (u + i), source,
               "--ratings" if source == CLI_SOURCE else "ratings",
               f"a data set of {r:,} ratings, {u:,} users and {i:,} items")
    return shape


def _degrees(n: int, total: int, exponent: float, minimum: int, cap: int,
             rng: np.random.Generator) -> np.ndarray:
    """``n`` integer degrees in ``[minimum, cap]`` summing to ``total``, Zipf-shaped.

    Rank ``r`` (1-based, assigned to the ids by a random permutation) gets
    ``minimum + share_r`` where the shares split ``total - n * minimum`` in proportion to
    ``r ** -exponent``, rounded by largest remainders; a degree over ``cap`` is set to ``cap``
    and its excess shared among the others the same way (repeated until none is over).
    """
    w = np.arange(1, n + 1, dtype=np.float64) ** -float(exponent)
    deg = np.full(n, minimum, dtype=np.int64)
    free = np.ones(n, dtype=bool)
    rest = total - n * minimum
    while rest > 0:
        ww = np.where(free, w, 0.0)
        exact = ww / ww.sum() * rest
        add = np.floor(exact).astype(np.int64)
        left = rest - int(add.sum())
        if left:
            frac = np.where(free, exact - add, -1.0)
            add[np.argsort(-frac, kind="stable")[:left]] += 1
        deg += add
        over = deg > cap
        rest = int((deg[over] - cap).sum())
        deg[over] = cap
        free &= deg < cap
    return deg[rng.permutation(n)]


def _pairs(user_deg: np.ndarray, item_deg: np.ndarray, n_items: int,
           rng: np.random.Generator, rounds: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (user, item) pairs with the given user degrees and every item rated.

    Configuration model, then up to ``rounds`` rounds of degree-preserving swaps; the few
    repeated pairs a dense shape may leave after them get an item the user has not rated,
    drawn uniformly (the item they leave keeps its other copy, so no item goes missing; the
    item degrees then differ from the Zipf shares by those few moves).
    """
    users = np.repeat(np.arange(len(user_deg), dtype=np.int64), user_deg)
    items = rng.permutation(np.repeat(np.arange(len(item_deg), dtype=np.int64), item_deg))
    n = len(users)

    def repeated() -> np.ndarray:
        key = users * n_items + items
        order = np.argsort(key, kind="stable")
        ks = key[order]
        return order[1:][ks[1:] == ks[:-1]]  # every later copy of a repeated pair

    for _ in range(rounds):
        dup = repeated()
        if dup.size == 0:
            return users, items
        partners = np.unique(rng.integers(0, n, size=2 * dup.size + 16))
        partners = rng.permutation(partners[~np.isin(partners, dup)])[: dup.size]
        d = dup[: partners.size]
        items[d], items[partners] = items[partners], items[d].copy()
    starts = np.concatenate(([0], np.cumsum(user_deg)))  # users are in blocks of their degree
    for e in repeated():
        u = users[e]
        rated = items[starts[u]:starts[u + 1]]
        free = np.setdiff1d(np.arange(n_items), rated, assume_unique=False)
        items[e] = free[rng.integers(0, free.size)]
    return users, items


def synthesize(shape: SynthShape, seed: int = 0, source: str = "synth") -> pd.DataFrame:
    """A rating table of ``shape`` (module docstring), seeded by ``seed``.

    Columns user, item (ids 1 .. n, int64), rating (float32, 1 .. 5), timestamp (int64 Unix
    seconds), sorted by (user, timestamp); every (user, item) pair occurs once.
    """
    _check(shape, source)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise _err(source, "seed", f"must be an integer >= 0, got {plain(seed)}")
    rng = np.random.default_rng(int(seed))
    u_deg = _degrees(shape.users, shape.ratings, shape.activity_exponent,
                     shape.min_user_ratings, shape.items, rng)
    i_deg = _degrees(shape.items, shape.ratings, shape.popularity_exponent, 1, shape.users, rng)
    users, items = _pairs(u_deg, i_deg, shape.items, rng)
    stars = rng.choice(np.arange(1, 6, dtype=np.float32), size=len(users),
                       p=np.asarray(shape.rating_probs, dtype=np.float64))
    begin = rng.integers(shape.start, shape.end, size=shape.users, endpoint=False)
    length = np.minimum(rng.exponential(shape.mean_span_days * _DAY, size=shape.users),
                        shape.end - begin)
    ts = begin[users] + np.floor(rng.random(len(users)) * length[users]).astype(np.int64)
    order = np.lexsort((items, ts, users))
    return pd.DataFrame({
        "user": users[order] + 1,
        "item": items[order] + 1,
        "rating": stars[order].astype(np.float32),
        "timestamp": ts[order].astype(np.int64),
    })


def write_synthetic(path: str | os.PathLike[str], shape: SynthShape, seed: int = 0,
                    source: str = "synth") -> pd.DataFrame:
    """Check ``shape``, ``seed`` and the output path, then write :func:`synthesize`'s table to
    ``path`` (``.csv`` or ``.csv.gz``, MovieLens ``ratings.csv`` layout) and return it."""
    p = Path(path)
    _check(shape, source)
    if not p.name.lower().endswith((".csv", ".csv.gz")):
        raise _err(source, "out", f"{p} must end with .csv or .csv.gz (the layout "
                          "`dptune data info` and [data] source read)")
    if p.is_dir():
        raise _err(source, "out", f"{p} is a directory")
    check_writable_dir(p.parent, "--out" if source == CLI_SOURCE else f"{source}: out")
    df = synthesize(shape, seed, source)
    out = pd.DataFrame({"userId": df["user"], "movieId": df["item"],
                        "rating": df["rating"].astype(np.int64), "timestamp": df["timestamp"]})
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    out.to_csv(tmp, index=False, compression="gzip" if p.name.lower().endswith(".gz") else None)
    os.replace(tmp, p)
    return df


def shape_of(preset: str | None, source: str = "synth", **overrides: object) -> SynthShape:
    """The preset's shape (or the defaults) with the given fields replaced (``None``: kept)."""
    if preset is None:
        base = SynthShape()
    elif preset in PRESETS:
        base = PRESETS[preset]
    else:
        raise _err(source, "preset", f"{plain(preset)} is not one of {', '.join(PRESETS)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    return _check(replace(base, **given), source)
