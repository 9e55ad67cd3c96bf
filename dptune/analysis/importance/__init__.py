"""Hyperparameter importance beside the DP-based dominance.

- ``study.py``: the in-memory optuna study of one algorithm and metric@N, fANOVA and PED-ANOVA
  importances (importance.csv), and the DP-based dominance (Table 5's lowest best DP, the
  one-at-a-time lowest DP).
- ``fanova.py``: fANOVA vectorised over the leaves of each tree (optuna's evaluator is the
  test oracle).
"""
