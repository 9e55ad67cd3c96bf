"""Monte Carlo studies that measure the analysis on populations whose truth is known; the tests
run them (quick cases by default, full studies behind ``slow``) and ``docs/statistics.md``
quotes their tables. Which file holds what:

- ``coverage.py``: the DP interval's coverage, on normal, skewed ranking-like and shared-user
  populations.
- ``error_rates.py``: the claims' false-claim rate and power, and the dominance answer's error
  rates, on clipped values, per-user effects and equal non-zero effects.
- ``grid_sample.py``: the bias and coverage of the DP of a subset of a grid's units against the
  full grid's, synthetic and on real data.

Import names from these modules; this package re-exports nothing.
"""
