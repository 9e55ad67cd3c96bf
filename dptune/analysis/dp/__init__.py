"""The DP estimator: how discriminative a metric@N is over one algorithm's configurations.

Per validation fold, each of a scope's P configuration pairs gets one paired two-sided p-value
over the fold's users; the fold's p-values sorted decreasingly are its curve; the paper's DP is
the sum of the fold-averaged curve (lower = more discriminative). On one scale it is the mean
p-value, reported as DP per 25 pairs, with a bootstrap interval over users (and pairs, when
sampled) and claims kept only when they hold under every pair seed. Which file holds what:

- ``pairs.py``: the scopes (``all``, ``<h>=<v>``, ``only:<h>``) and seeded pair sampling.
- ``paired_tests.py``: every p-value (paired t, Wilcoxon, bootstrap, permutation) and the
  corrections (Holm, Benjamini-Hochberg), Sakai-style DP.
- ``curves.py``: the fold's p-value curve, the averaged curve, DP and DP +- sd; A/A p-values.
- ``scale.py``: DP on one scale: the mean p-value of scope ``all``'s pairs, DP per 25 pairs.
- ``bootstrap.py``: the one bootstrap (user groups and pairs): the interval and
  P(A more discriminative than B).
- ``estimator.py``: :class:`~dptune.analysis.dp.estimator.RobustPass`, the robust DP with its
  bootstrap, fed one validation fold at a time.
- ``stability.py``: claims that hold under every one of ``stability`` pair seeds.
- ``degenerate.py``: folds with too few users refused, rows with no evidence flagged, capped
  bands.
- ``tables.py``: the columns of the pairs / pvalues / dp / curves tables, the store protocol
  (``ResultStoreLike``) and ``Analysis``, the result of the fold loop.
- ``engine.py``: the fold loop over a store: every algorithm, fold (each read once) and scope
  (``analyze``; :func:`dptune.analysis.route.analyze_with_robust` feeds the estimator from it).
- ``coverage.py``: the Monte Carlo study that measures the interval's coverage.

Import names from these modules; this package re-exports nothing.
"""
