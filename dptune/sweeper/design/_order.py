"""The design order: a seeded permutation of a grid's units whose every prefix of whole rounds is a
balanced sample of the grid and holds pairs of every scope early.

A unit is a point of the grid of its *unit hyperparameters* (those constant within a unit: for
BPR-MF ``factors`` and ``learning_rate``, 15 x 15 = 225 units; for a cornac or Python model every
free hyperparameter). :func:`design_order` orders the points of a grid given by its sizes
``n_1, ..., n_d``; hyperparameters with one value take no part (their index is always 0).

Construction, with k the number of hyperparameters that have two values or more, sorted by size
(the largest, L = n_A values, first) and indexed in a *label* space ``Z_{n_1} x ... x Z_{n_k}``:

- **Rows: orbits of the diagonal.** The diagonal ``D = {(i mod n_1, ..., i mod n_k)}`` is a
  subgroup of the grid (of lcm(n_1..n_k) points); its cosets ``c + D`` partition the grid. The
  order walks one coset after another, each along the diagonal (``c, c + (1,...,1), ...``). On
  such a walk coordinate h runs ``c_h, c_h + 1, ...`` cyclically, so after m points of a coset
  every value of h has appeared ``floor(m / n_h)`` or ``ceil(m / n_h)`` times and a whole coset
  holds each value exactly ``lcm / n_h`` times: a prefix of such walks is **balanced within
  +-1 in every hyperparameter**, and the order is a permutation of the grid (the cosets are
  disjoint and cover it). When every size divides the largest (15 x 15, 5 x 5, 6 x 3 x 2), a
  coset is one *row* of L points holding each value of each hyperparameter L / n_h times: a row
  of a Latin square for two hyperparameters. (The first k cosets are walked differently, below.)
- **Rounds** are ``ceil(k / 2)`` rows of L points (BPR-MF's 15 x 15 grid: 15 units; from the
  third round on each factors value and each learning rate once); 2 points when k = 1 (the smallest set with a
  pair); the last round may be shorter.
- **Pairs early: the staircase, walked as one chain.** A plain Latin row never holds two units
  sharing a value, yet the per-value scopes (configurations with h = v; their pairs differ in
  the other hyperparameters) and the one-at-a-time scopes (pairs differing in h only) are built
  of such units. The first k cosets are a *staircase*: ``c^0 = 0``, ``c^j = c^(j-1) + e_(j+1)``
  (the j+1-th hyperparameter moved by one). Every unit x of coset ``c^(j-1)`` then has its
  partner ``x + e_(j+1)`` in coset ``c^j``: a pair differing in hyperparameter j+1 alone; and
  ``c^(k-1) + (1, ..., 1) = c^0 + e_1``. The staircase cosets are not walked one after another
  but together, as one **chain** ``x_0^0, x_0^1, ..., x_0^(k-1), x_1^0, ...`` with ``x_i^j = c^j
  + i (1, ..., 1)``: consecutive units differ in one hyperparameter, each hyperparameter in
  turn (``x_i^j`` to ``x_i^(j+1)`` in hyperparameter j+1, ``x_i^(k-1)`` to ``x_(i+1)^0`` in the
  first). So the **first round already holds** units that share a value of every
  hyperparameter and pairs of every one-at-a-time scope (from k + 1 units on): for two
  hyperparameters the chain zig-zags through two rows of the cyclic Latin square, ``(i, i),
  (i, i + 1), (i + 1, i + 1), ...``, and a round of 15 units of BPR-MF's grid holds 7 pairs of
  units that share their factors and 7 that share their learning rate. Once the chain is
  walked (k cosets: the first two rounds for two hyperparameters) the units are exactly the
  staircase cosets, as whole cosets, and the walk goes on coset by coset. The price is balance
  within the chain: a prefix of it holds each value of a hyperparameter between ``c - k`` and
  ``c`` times for some ``c`` (for two hyperparameters, after one round of 15: 7 values twice,
  one once and 7 not yet), so a first round covers fewer values (8 of 15 factors values)
  and its cost varies with which values those are (docs/design.md); every prefix of whole
  rounds after the chain is balanced within +-1 again. Two rounds hold each value of every
  hyperparameter at least twice when sizes divide the largest, so every per-value scope has a
  pair there.
- **Seed.** Each hyperparameter's values are mapped to labels by a seeded random permutation,
  and the cosets after the staircase come in a seeded random order. The relabelling makes each
  unit equally likely to sit at any point of the label space, so after m units (at round
  boundaries) every unit of the grid was included with probability m / N: the prefix is an
  equal-probability sample of the units (pairs of units are included with probabilities that
  depend only on which hyperparameters they share, by the same symmetry).

What is guaranteed (and tested, ``tests/sweeper/design/``): the order is a permutation of the
grid; every prefix of whole rounds is balanced within +-k in every hyperparameter, and within
+-1 once it holds the staircase chain; the first round holds a pair of every one-at-a-time scope
when it has more than k units, and the first two rounds a pair of every per-value scope, for one
or two hyperparameters of any sizes and for more hyperparameters when every size divides the
largest. With three or more hyperparameters whose sizes do not all divide the largest (3 x 4 x
5), the cosets are longer than a row (lcm of the sizes) and a one-at-a-time scope may get its
first pair only once the first coset is walked; balance and permutation hold as always.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Order", "design_order", "round_size"]

#: Name and version of the construction, recorded with every design (a future construction gets
#: another name, and a store keeps the order it was started with).
METHOD = "diagonal-cosets-chain-2"


@dataclass(frozen=True)
class Order:
    """A design order over the grid of ``sizes``.

    ``points[p]`` is the p-th point visited: one value index per hyperparameter (in the order of
    ``sizes``). ``round_ends[r]`` is the number of points in rounds ``0..r`` (the last equals
    the number of points).
    """

    sizes: tuple[int, ...]
    points: tuple[tuple[int, ...], ...]
    round_ends: tuple[int, ...]

    @property
    def rounds(self) -> int:
        """Number of rounds."""
        return len(self.round_ends)

    def round_of(self, position: int) -> int:
        """The round (0-based) of the point at ``position``: a binary search of the tuple
        itself (``np.searchsorted`` first copied the whole tuple into an array, so that naming
        the round of every point of a grid of many rounds grew with the square of its size)."""
        return bisect.bisect_right(self.round_ends, position)


def _active(sizes: Sequence[int]) -> list[int]:
    """Indices of the hyperparameters with two values or more, largest first (ties: given order)."""
    return sorted((h for h, n in enumerate(sizes) if n >= 2), key=lambda h: (-sizes[h], h))


def round_size(sizes: Sequence[int]) -> int:
    """Points per round: ``ceil(k / 2)`` rows of L (the largest size) for k >= 2 hyperparameters
    with two values or more, 2 for k = 1, 1 for k = 0."""
    active = _active(sizes)
    k = len(active)
    if k == 0:
        return 1
    if k == 1:
        return 2
    return math.ceil(k / 2) * sizes[active[0]]


def _check(sizes: Sequence[int]) -> tuple[int, ...]:
    out = []
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"grid sizes must be positive integers, got {list(sizes)!r}")
        out.append(int(n))
    return tuple(out)


def design_order(sizes: Sequence[int], seed: int) -> Order:
    """The seeded design order of the grid ``sizes`` (value counts per hyperparameter).

    Pure: the same sizes and seed give the same order on every machine. See the module docstring
    for the construction and what it guarantees.
    """
    sizes = _check(sizes)
    n_points = math.prod(sizes)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, len(sizes), *sizes]))
    active = _active(sizes)
    k = len(active)
    # value of label j of hyperparameter h: relabel[h][j] (a seeded permutation per hyperparameter)
    relabel = [rng.permutation(n) if n >= 2 else np.zeros(1, dtype=np.int64) for n in sizes]
    step = round_size(sizes)
    ends = tuple(list(range(step, n_points, step)) + [n_points])
    if k == 0:
        return Order(sizes, (tuple(0 for _ in sizes),), ends)

    dims = np.asarray([sizes[h] for h in active], dtype=np.int64)  # label space, largest first
    radix = np.cumprod(np.r_[1, dims[::-1][:-1]])[::-1]  # flat index = sum(label_h * radix_h)
    orbit = math.lcm(*dims.tolist())
    walk = np.arange(orbit, dtype=np.int64)
    seen = np.zeros(n_points, dtype=bool)
    staircase = [np.zeros(k, dtype=np.int64)]
    for j in range(1, k):
        nxt = staircase[-1].copy()
        nxt[j] = 1
        staircase.append(nxt)
    rest = rng.permutation(n_points)
    # the staircase cosets, walked together as one chain: x_i^0, x_i^1, ..., x_i^(k-1), x_(i+1)^0
    # with x_i^j = c^j + i (1, ..., 1); consecutive points differ in one hyperparameter, every
    # hyperparameter in turn, so the first round already holds pairs of every one-at-a-time scope
    chain = (np.stack(staircase)[None, :, :] + walk[:, None, None]) % dims  # (orbit, k, k)
    labels: list[np.ndarray] = []
    for point in chain.reshape(-1, k):
        f = int(point @ radix)
        if not seen[f]:
            seen[f] = True
            labels.append(point[None, :])
    for c in (_decode(int(f), dims, radix) for f in rest):
        if seen[int(c @ radix)]:
            continue
        coset = (c[:, None] + walk[None, :]) % dims[:, None]  # (k, orbit): the diagonal from c
        seen[radix @ coset] = True
        labels.append(coset.T)
        if seen.all():
            break
    lab = np.concatenate(labels, axis=0)
    out = np.zeros((n_points, len(sizes)), dtype=np.int64)
    for col, h in enumerate(active):
        out[:, h] = relabel[h][lab[:, col]]
    return Order(sizes, tuple(tuple(int(v) for v in row) for row in out), ends)


def _decode(flat: int, dims: np.ndarray, radix: np.ndarray) -> np.ndarray:
    """Labels of the flat index ``flat`` (mixed radix ``radix``)."""
    return (flat // radix) % dims
