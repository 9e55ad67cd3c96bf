"""The DP estimator: how discriminative a metric@N is over one algorithm's configurations.

Per validation fold, each of a scope's P configuration pairs gets one paired two-sided p-value
over the fold's users; the fold's p-values sorted decreasingly are its curve; the paper's DP is
the sum of the fold-averaged curve, P x the mean p-value (lower = more discriminative). Every DP
is reported on one scale, DP per 25 pairs (25 x the mean p-value), with P beside it, a bootstrap
interval over users (and pairs, when sampled), and claims with a stated error rate. Which file
holds what:

- ``pairs.py``: the scopes (``all``, ``<h>=<v>``, ``only:<h>``) and seeded pair sampling.
- ``paired_tests.py``: every p-value (paired t, Wilcoxon, bootstrap, permutation), the one
  paired t statistic and its routes to a p-value, the tests as strategy objects, the
  corrections (Holm, Benjamini-Hochberg), Sakai-style DP.
- ``fold_loop.py``: the one fold loop over a store: every algorithm, fold (each read once) and
  scope; curves, Sakai DP, mean p-values and the bootstrap's group sums.
- ``curves.py``: the fold's p-value curve, the averaged curve, the paper's DP and DP +- sd.
- ``scale.py``: DP per 25 pairs.
- ``bootstrap.py``: the one bootstrap (user groups and pairs): the interval and the paired
  replicates.
- ``comparisons.py``: the claims' test, a bootstrap max-t stepped down (family-wise error rate).
- ``stability.py``: claims that hold under every one of ``stability`` pair seeds.
- ``degenerate.py``: folds with too few users refused, rows with no evidence flagged, capped
  bands.
- ``tables.py``: the columns of pairs / pvalues / dp / curves, the store protocol and
  ``DPEstimate``, the fold loop's result.

Import names from these modules; this package re-exports nothing.
"""
