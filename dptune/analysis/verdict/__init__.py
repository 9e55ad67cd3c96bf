"""The verdict: which metric@N to tune with, per algorithm, cutoff and family of metrics.

- ``rules.py``: the rules (recommended, significantly less discriminative, tied, dropped claims,
  not below the noise floor, too few pairs), the families of metrics and their judges, and the
  verdict's sentences.
- ``downstream.py``: does the metric's choice matter on the test split; the dominant
  hyperparameter.
- ``build.py``: the glue that feeds the rules from the analysis' tables and the store's test
  split (:func:`~dptune.analysis.verdict.build.verdict_for_store`).
"""
