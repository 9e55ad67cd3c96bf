"""The design order as a pure function of the grid: a permutation of the units, every prefix of
whole rounds balanced (within +-k while the staircase chain is walked, +-1 after it), pairs of
every one-at-a-time scope in the first round and of every per-value scope within two."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.sweeper.design import design_order, round_size

# up to 4 unit hyperparameters of 1-6 values (at most 1,296 units)
SIZES = st.lists(st.integers(1, 6), min_size=0, max_size=4)
SEEDS = st.integers(0, 2**31 - 1)


def _clean(sizes: list[int]) -> bool:
    """One or two hyperparameters of two values or more, or every size dividing the largest:
    the grids whose one-at-a-time scopes the design serves within two rounds."""
    act = [n for n in sizes if n >= 2]
    return len(act) <= 2 or all(max(act) % n == 0 for n in act)


def _first_two_rounds(order) -> list[tuple[int, ...]]:
    return list(order.points[: order.round_ends[min(1, order.rounds - 1)]])


@settings(max_examples=150, deadline=None)
@given(SIZES, SEEDS)
def test_the_order_is_a_permutation_of_the_grid(sizes, seed):
    o = design_order(sizes, seed)
    assert sorted(o.points) == sorted(itertools.product(*(range(n) for n in sizes)))
    assert o.round_ends[-1] == math.prod(sizes)
    assert list(o.round_ends) == sorted(set(o.round_ends))


def _chain_length(sizes) -> int:
    """Units of the staircase chain: the first k cosets of the diagonal (fewer when two of them
    coincide), k the hyperparameters with two values or more."""
    act = sorted((n for n in sizes if n >= 2), reverse=True)
    if not act:
        return 1
    orbit = math.lcm(*act)
    cosets = set()
    for j in range(len(act)):
        c = [0] + [1 if 1 <= h <= j else 0 for h in range(1, len(act))]
        cosets.add(min(tuple((c[h] + i) % act[h] for h in range(len(act))) for i in range(orbit)))
    return len(cosets) * orbit


@settings(max_examples=150, deadline=None)
@given(SIZES, SEEDS)
def test_every_prefix_of_whole_rounds_is_balanced(sizes, seed):
    """Within +-k (k hyperparameters of two values or more) while the chain is walked, within
    +-1 at every round boundary once it is."""
    o = design_order(sizes, seed)
    k = max(1, sum(n >= 2 for n in sizes))
    chain = _chain_length(sizes)
    pts = np.asarray(o.points, dtype=np.int64).reshape(len(o.points), len(sizes))
    for end in o.round_ends:
        for h, n in enumerate(sizes):
            counts = np.bincount(pts[:end, h], minlength=n)
            bound = 1 if end >= chain else k
            assert counts.max() - counts.min() <= bound, (sizes, end, h, counts, chain)


@settings(max_examples=150, deadline=None)
@given(SIZES.filter(_clean), SEEDS)
def test_the_first_round_holds_a_pair_of_every_one_at_a_time_scope(sizes, seed):
    """The chain: consecutive units differ in one hyperparameter, each in turn, so a first round
    of more than k units holds a pair differing in h alone for every h."""
    o = design_order(sizes, seed)
    k = sum(n >= 2 for n in sizes)
    first = list(o.points[: o.round_ends[0]])
    if len(first) <= k:
        return
    for h, n in enumerate(sizes):
        if n < 2:
            continue
        assert any(a[h] != b[h] and all(a[g] == b[g] for g in range(len(sizes)) if g != h)
                   for a, b in itertools.combinations(first, 2)), (sizes, h, first)


@settings(max_examples=150, deadline=None)
@given(SIZES, SEEDS)
def test_every_per_value_scope_has_a_pair_within_two_rounds(sizes, seed):
    """Per-value scope h = v: two units sharing that value (they differ elsewhere), whenever the
    grid has two such units."""
    o = design_order(sizes, seed)
    first = _first_two_rounds(o)
    for h, n in enumerate(sizes):
        if n < 2 or math.prod(sizes) // n < 2:
            continue
        for v in range(n):
            assert sum(p[h] == v for p in first) >= 2, (sizes, h, v)


@settings(max_examples=150, deadline=None)
@given(SIZES.filter(_clean), SEEDS)
def test_every_one_at_a_time_scope_has_a_pair_within_two_rounds(sizes, seed):
    """One-at-a-time scope h: two units differing in h alone, for every hyperparameter with two
    values or more (grids of one or two hyperparameters of any sizes, or sizes dividing the
    largest: the module docstring of ``_order`` gives the exception)."""
    o = design_order(sizes, seed)
    first = _first_two_rounds(o)
    for h, n in enumerate(sizes):
        if n < 2:
            continue
        assert any(a[h] != b[h] and all(a[g] == b[g] for g in range(len(sizes)) if g != h)
                   for a, b in itertools.combinations(first, 2)), (sizes, h)


def test_the_papers_grid_first_two_rounds_zig_zag_through_two_latin_rows():
    """BPR-MF's 15 x 15 grid: round 0 holds 7 pairs of units sharing their factors and 7 sharing
    their learning rate (a zig-zag through two rows of the cyclic Latin square), rounds 0 and 1
    together are those two rows (each value exactly twice), and every later round is a Latin
    row (each value once)."""
    o = design_order([15, 15], seed=11)
    assert round_size([15, 15]) == 15 and o.rounds == 15
    r0 = o.points[:15]
    same_f = [(a, b) for a, b in itertools.combinations(r0, 2) if a[0] == b[0]]
    same_lr = [(a, b) for a, b in itertools.combinations(r0, 2) if a[1] == b[1]]
    assert len(same_f) == 7 and len(same_lr) == 7
    # consecutive units of the chain differ in exactly one hyperparameter, alternately
    for p, (a, b) in enumerate(itertools.pairwise(r0)):
        assert (a[0] == b[0]) != (a[1] == b[1]) and (a[0] == b[0]) == (p % 2 == 0)
    two = o.points[:30]
    for h in (0, 1):
        assert sorted(p[h] for p in two) == sorted(list(range(15)) * 2)
    for r in range(2, o.rounds):
        rows = o.points[r * 15:(r + 1) * 15]
        assert sorted(p[0] for p in rows) == list(range(15))
        assert sorted(p[1] for p in rows) == list(range(15))


def test_round_sizes():
    assert round_size([]) == 1 and round_size([1, 1]) == 1
    assert round_size([7]) == 2 and round_size([7, 1]) == 2
    assert round_size([15, 14]) == 15 and round_size([5, 15]) == 15
    assert round_size([4, 2, 2]) == 8 and round_size([3, 3, 3, 3]) == 6


def test_pure_and_seeded():
    assert design_order([15, 15], 3) == design_order([15, 15], 3)
    assert design_order([15, 15], 3).points != design_order([15, 15], 4).points


def test_every_unit_is_equally_likely_in_the_first_round():
    """The seeded relabelling makes the first round an equal-probability sample of the units:
    over 400 seeds each of the 16 units of a 4 x 4 grid is in the first round (4 units) about
    100 times (binomial sd 8.7; the seeds are fixed, so this is deterministic)."""
    counts = np.zeros((4, 4), dtype=int)
    for seed in range(400):
        for a, b in design_order([4, 4], seed).points[:4]:
            counts[a, b] += 1
    assert counts.sum() == 1600
    assert counts.min() > 60 and counts.max() < 140, counts
